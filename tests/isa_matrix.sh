#!/bin/sh
# tests/isa_matrix.sh BUILD - the suite built as the demo and bench are (-O3, contraction on)
# for each instruction-set level the compiler knows, for every level this CPU can run; the
# others are named with the reason. FMA (x86-64-v3 up) changes rounding between levels; within
# a level scores and training are identical for any thread count, batch and chunking. Writes
# the programs it built to BUILD/isa.list (tests/suites.sh runs them) and what it did to
# BUILD/isa.txt. Takes CC, OMP and TESTFLAGS from make.
B=$1
CC=${CC:-cc}
OMP=${OMP:-}
TESTFLAGS=${TESTFLAGS:--O2 -g -std=c99 -Wall -Wextra -Wshadow -Werror}
# level:CPU flags it adds to the level before (as /proc/cpuinfo names them)
case $(uname -m) in
x86_64)
    LEVELS="x86-64: x86-64-v2:cx16,lahf_lm,popcnt,sse4_1,sse4_2,ssse3
        x86-64-v3:avx,avx2,bmi1,bmi2,f16c,fma,abm,movbe,xsave x86-64-v4:avx512f,avx512bw,avx512cd,avx512dq,avx512vl" ;;
aarch64) LEVELS="armv8-a:asimd" ;;
*) LEVELS= ;;
esac
have=" $(grep -m1 -E '^(flags|Features)' /proc/cpuinfo 2> /dev/null | cut -d: -f2) "
: > "$B/isa.list"
: > "$B/isa.txt"
[ -n "$LEVELS" ] || echo "ISA matrix: none for $(uname -m) (only the native build runs)" | tee -a "$B/isa.txt"
need=
for spec in $LEVELS; do
    lvl=${spec%%:*}
    need="$need $(echo "${spec#*:}" | tr , ' ')"
    miss=
    for f in $need; do
        case "$have" in *" $f "*) ;; *) miss="$miss $f" ;; esac
    done
    if ! $CC -march="$lvl" -E -x c /dev/null > /dev/null 2>&1; then
        echo "ISA $lvl: skipped ($CC does not know -march=$lvl)"
    elif [ -n "$miss" ]; then
        echo "ISA $lvl: skipped (this CPU lacks$miss)"
    else
        echo "ISA $lvl: run"
        # shellcheck disable=SC2086 # (flags split as make gives them)
        $CC $TESTFLAGS $OMP -O3 -ffp-contract=fast -fno-math-errno -march="$lvl" tests.c -o "$B/tests_$lvl" -lm ||
            exit 1
        echo "tests_$lvl" >> "$B/isa.list"
    fi
done > "$B/isa.run" 2>&1
rc=$?
cat "$B/isa.run" | tee -a "$B/isa.txt"
[ $rc -eq 0 ] && { [ -s "$B/isa.list" ] || [ -z "$LEVELS" ]; }
