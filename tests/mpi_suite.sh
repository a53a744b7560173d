#!/bin/sh
# tests/mpi_suite.sh BUILD MPIRUN... - make test-mpi's runs of the MPI suite (BUILD/tests_mpi,
# _asan and _g12, built by make): 1 rank (it writes the reference models), then 2, 3 (an
# uneven split), 4, 5 and 16 (every group its own rank), each checking its model against 1
# rank's bit for bit; 2 ranks of 2 threads; 3 and 5 ranks under ASan+UBSan; the build of 12
# groups on 1, 2, 5 and 12 ranks; then tests/mpi_checks.sh, demo-mpi against the demo. Each
# run counts as a check; the last line adds them up.
B=$1
shift
MPIRUN="$*"
D=$B/mpi
rm -rf "$D" && mkdir -p "$D/g12" && rm -f "$B/checks" && touch "$B/checks"
for run in "1 1 tests_mpi" "2 1 tests_mpi" "3 1 tests_mpi" "4 1 tests_mpi" "5 1 tests_mpi" "16 1 tests_mpi" \
    "2 2 tests_mpi" "3 1 tests_mpi_asan" "5 1 tests_mpi_asan" "1 1 tests_mpi_g12 g12" "2 1 tests_mpi_g12 g12" \
    "5 1 tests_mpi_g12 g12" "12 1 tests_mpi_g12 g12"; do
    # shellcheck disable=SC2086 # (a run is words)
    set -- $run
    echo "== $1 ranks, $2 threads each: $B/$3"
    # shellcheck disable=SC2086 # (mpirun and its flags are words)
    OMP_NUM_THREADS=$2 ASAN_OPTIONS=detect_leaks=0 $MPIRUN -np "$1" "$B/$3" --tests "$D/${4:-}" > "$D/out.log" 2>&1
    rc=$?
    grep -v '^  ok' "$D/out.log" | grep -v '^mpi_'
    if [ $rc -eq 0 ] && tail -n 1 "$D/out.log" | grep -q ' passed, 0 failed$'; then echo pass >> "$B/checks"
    else echo "(exit $rc)"; echo fail >> "$B/checks"; fi
done
# shellcheck disable=SC2086
tests/mpi_checks.sh "$B" $MPIRUN
p=$(grep -c pass "$B/checks") f=$(grep -c fail "$B/checks")
echo "$p passed, $f failed"
[ "$f" -eq 0 ]
