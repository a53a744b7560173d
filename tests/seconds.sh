#!/bin/sh
# Seconds to a good model (docs/performance.md): runs DEMO with the arguments after THRESHOLD
# and prints one JSON line: the wall time from its start to the end of the first epoch that
# is validation's choice so far (validation HR@10 above every earlier epoch's) and whose test
# HR@10 is at least THRESHOLD, or "reached_s":null; and validation's final choice.
#   tests/seconds.sh NAME THRESHOLD DEMO ARGS...
name=$1 threshold=$2
shift 2
start=$(date +%s.%N)
"$@" 2>&1 | while IFS= read -r line; do
    printf '%s %s\n' "$(date +%s.%N)" "$line"
done | awk -v start="$start" -v name="$name" -v thr="$threshold" '
    { t = $1 - start; $1 = "" }
    / Iteration [0-9]+:/ { epoch = $3; sub(":", "", epoch); at = t }
    $1 == "" && $2 == "test" && $3 == "HR@10" && epoch != "" { test = $4 }
    $2 == "validation" && $3 == "HR@10" && epoch != "" {
        if (best == "" || $4 > best) {
            best = $4; chosen = epoch; chosen_test = test
            if (reached == "" && test >= thr) { reached = at; reached_epoch = epoch; reached_test = test }
        }
    }
    / Chosen on validation/ { epoch = "" }
    END {
        if (chosen == "") { print "{\"case\":\"seconds\",\"model\":\"" name "\",\"error\":\"no epochs in the output\"}"; exit 1 }
        printf "{\"case\":\"seconds\",\"model\":\"%s\",\"threshold\":%s,", name, thr
        if (reached == "") printf "\"reached_s\":null,"
        else printf "\"reached_s\":%.1f,\"reached_epoch\":%d,\"reached_test_hr\":%s,", reached, reached_epoch, reached_test
        printf "\"chosen_epoch\":%d,\"chosen_test_hr\":%s,\"total_s\":%.1f}\n", chosen, chosen_test, t
    }'
