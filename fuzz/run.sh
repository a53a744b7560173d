#!/bin/sh
# fuzz/run.sh BUILD SECONDS [ONLY] - make fuzz: one libFuzzer binary a reader (fuzz/fuzz.c with
# FUZZ_TARGET=N), each run SECONDS on a scratch corpus seeded from fuzz/corpus/NAME (the round
# trip from the logs' seeds) and, for the model readers, from small model files of every kind
# that the suite writes (BUILD/tests --write-seeds). Prints each target's inputs and rate;
# crashing inputs land in BUILD/fuzz/ (kept in fuzz/corpus/NAME, every run replays it first). ONLY=NAME
# runs one target. Takes WARN from make.
set -e
B=$1
SECONDS_EACH=$2
ONLY=${3:-}
rm -rf "$B/fuzz/seeds_model" && mkdir -p "$B/fuzz/seeds_model" && "$B/tests" --write-seeds "$B/fuzz/seeds_model"
for t in 1:model 2:dat 3:csv 4:tab 5:ncf 6:log 7:verified 8:roundtrip 9:holdout 10:saved 11:byid; do
    n=${t%%:*} name=${t#*:}
    [ -z "$ONLY" ] || [ "$ONLY" = "$name" ] || continue
    # shellcheck disable=SC2086 # (the warnings are words)
    clang -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all -std=c99 ${WARN:-} -Werror -I. \
        -DFUZZ_TARGET="$n" fuzz/fuzz.c -o "$B/fuzz/$name" -lm
    mkdir -p "$B/fuzz/corpus_$name"
    printf '%-9s ' "$name"
    seeds=fuzz/corpus/$name
    case $name in model | verified) seeds=$B/fuzz/seeds_model ;; roundtrip | holdout) seeds=fuzz/corpus/log ;; esac
    if "$B/fuzz/$name" -max_total_time="$SECONDS_EACH" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
        -artifact_prefix="$B/fuzz/$name-" "$B/fuzz/corpus_$name" "$seeds" > "$B/fuzz/$name.log" 2>&1; then
        awk '/number_of_executed_units/{printf "%s inputs, ", $2} /average_exec_per_sec/{printf "%s a second, ", $2}' \
            "$B/fuzz/$name.log"
        echo "no failure"
    else
        grep -h -m 5 'ERROR\|SUMMARY\|runtime error' "$B/fuzz/$name.log"
        exit 1
    fi
done
