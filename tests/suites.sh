#!/bin/sh
# tests/suites.sh BUILD "SUITE [ARGS]"... - runs each suite (a program in BUILD, or a path
# from here as ./tests/header_checks.sh, and its arguments), shows its output, and adds up the
# closing lines, "N passed, N failed[, N skipped]", with the ISA levels BUILD/isa.txt says
# were skipped. A suite given as "& SUITE" runs in the background
# beside the others (its output is shown after theirs): for a long single-threaded suite on a
# machine with a core to spare. A suite that exits non-zero or prints no closing line counts as
# a failure. Prints the sum last, as make test's and make check's last line; exits 1 on any
# failure.
B=$1
shift
p=0 f=0 s=0

run() { # SPEC LOG: the suite's output to LOG, its exit code to LOG.rc
    case "$1" in ./*) prog= ;; *) prog="$B/" ;; esac
    # shellcheck disable=SC2086 # (the suite's arguments split as given)
    ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1} $prog$1 > "$2" 2>&1
    echo $? > "$2.rc"
}

tally() { # SPEC LOG: shows LOG and adds its closing line to the sums
    case "$1" in ./*) echo "== $1" ;; *) echo "== $B/$1" ;; esac
    cat "$2"
    rc=$(cat "$2.rc")
    line=$(tail -n 1 "$2")
    case "$line" in
    *" passed, "*" failed" | *" passed, "*" failed, "*" skipped") ;;
    *) line="0 passed, 1 failed" && echo "(crashed: exit $rc)" ;;
    esac
    case "$line" in
    *" skipped") sk=${line##*failed, } && s=$((s + ${sk%% skipped})) && line=${line%, *skipped} ;;
    esac
    n=${line#*passed, }
    p=$((p + ${line%% passed*})) f=$((f + ${n%% failed*}))
    [ "$rc" -eq 0 ] || [ "${n%% failed*}" -gt 0 ] || f=$((f + 1))
}

k=0
for t in "$@"; do
    k=$((k + 1))
    case "$t" in "& "*) run "${t#& }" "$B/suite.$k.log" & ;; esac
done
k=0
for t in "$@"; do
    k=$((k + 1))
    case "$t" in "& "*) ;; *) run "$t" "$B/suite.$k.log" && tally "$t" "$B/suite.$k.log" ;; esac
done
wait
k=0
for t in "$@"; do
    k=$((k + 1))
    case "$t" in "& "*) tally "${t#& }" "$B/suite.$k.log" ;; esac
done
if [ -f "$B/isa.txt" ]; then
    cat "$B/isa.txt"
    s=$((s + $(grep -c ': skipped' "$B/isa.txt")))
fi
if [ $s -gt 0 ]; then echo "$p passed, $f failed, $s skipped"; else echo "$p passed, $f failed"; fi
[ $f -eq 0 ]
