#!/bin/sh
# tests/mpi_checks.sh BUILD MPIRUN... - make test-mpi's checks of demo-mpi against the demo:
# an epoch on 2 ranks resumed for a second on 3 writes the file 1 rank writes; the demo and
# demo-mpi print the same figures for it; --shards on 3 ranks prints and writes what 1 rank
# does, and resumes a file; a rank killed mid-run stops the job with the
# checkpoint intact; the MPI layer builds as strict C++11. Records pass or fail in
# BUILD/checks. MPIRUN: the mpirun command and its flags.
B=$1
shift
MPIRUN="$*"
D=$B/mpi
SYN="--synthetic_users 600 --synthetic_items 400 --synthetic_ratings 24000 --threads 1"

check() { # NAME FUNCTION
    printf '%s ... ' "$1"
    if $2 > "$B/check.log" 2>&1; then echo ok; echo pass >> "$B/checks"
    else echo FAILED; cat "$B/check.log"; echo fail >> "$B/checks"; fi
}
figures() { sed -n 's/, eval [0-9.]* s$//; /^Iteration\|^    test\|^    validation/p' "$1"; }

resumed() {
    $MPIRUN -np 2 ./demo-mpi $SYN --train_epochs 1 --save_state --save "$D/e1.ncf" &&
        $MPIRUN -np 3 ./demo-mpi $SYN --load "$D/e1.ncf" --train_epochs 2 --save_state --save "$D/e2_3.ncf" &&
        $MPIRUN -np 1 ./demo-mpi $SYN --train_epochs 2 --save_state --save "$D/e2_1.ncf" &&
        cmp "$D/e2_3.ncf" "$D/e2_1.ncf"
}
check "demo-mpi: 1 epoch on 2 ranks then 1 on 3 = 2 epochs on 1 rank" resumed

same_figures() { # (--eval full: every figure at every epoch, as demo-mpi evaluates)
    ./demo $SYN --validation --eval full --load "$D/e2_1.ncf" --train_epochs 0 > "$D/one.log" &&
        $MPIRUN -np 3 ./demo-mpi $SYN --validation --eval full --load "$D/e2_1.ncf" --train_epochs 0 > "$D/three.log" &&
        [ -n "$(figures "$D/one.log")" ] && [ "$(figures "$D/one.log")" = "$(figures "$D/three.log")" ]
}
check "demo and demo-mpi on 3 ranks: the same figures for that model" same_figures

shards() { # 12 epochs: validation chooses epoch 11, which each rank kept of its shard
    $MPIRUN -np 1 ./demo-mpi $SYN --train_epochs 12 --save_state --save "$D/s12_1.ncf" > "$D/s1.log" &&
        $MPIRUN -np 3 ./demo-mpi $SYN --train_epochs 12 --shards --save_state --save "$D/s12_3.ncf" > "$D/s3.log" &&
        grep -q 'epoch 11, the one chosen' "$D/s3.log" && cmp "$D/s12_1.ncf" "$D/s12_3.ncf" &&
        [ "$(figures "$D/s1.log" | sed 's/, train .*//')" = "$(figures "$D/s3.log" | sed 's/, train .*//')" ] &&
        $MPIRUN -np 3 ./demo-mpi $SYN --load "$D/e1.ncf" --train_epochs 2 --shards --save_state --save "$D/e2_3s.ncf" &&
        cmp "$D/e2_3s.ncf" "$D/e2_1.ncf" &&
        ! ./demo $SYN --shards 2> "$D/s.err" && grep -q "demo-mpi's" "$D/s.err"
}
check "demo-mpi --shards on 3 ranks: 1 rank's figures and file (the chosen epoch), and resumes" shards

killed() {
    ( $MPIRUN -np 2 ./demo-mpi --threads 1 --train_epochs 500 --save "$D/k.ncf" --checkpoint_every 1 > "$D/kill.log" 2>&1
      echo $? > "$D/kill.rc" ) &
    for i in $(seq 1200); do [ -f "$D/k.ncf" ] && break; sleep 0.1; done
    sleep 1
    pkill -9 -n -x demo-mpi
    wait
    [ "$(cat "$D/kill.rc")" != 0 ] && grep -q 'signal 9' "$D/kill.log" &&
        ./demo --load "$D/k.ncf" --train_epochs 0 > "$D/kill_load.log"
}
check "a rank killed mid-run: the job stops and the checkpoint loads" killed

cxx() {
    printf '%s\n' '#define NCF_IMPLEMENTATION' '#include "ncf.h"' \
        'int main(int c, char **v) { ncf_dataset d; int ok; MPI_Init(&c, &v);' \
        '  ok = ncf_synthetic(&d, 60, 40, 900, 4, 1) == NCF_OK && ncf_mpi_shard(&d, MPI_COMM_WORLD) == NCF_OK;' \
        '  ncf_dataset_free(&d); MPI_Finalize(); return !ok; }' > "$D/cxx.cpp" &&
        mpicxx -DOMPI_SKIP_MPICXX -DNCF_MPI -std=c++11 -pedantic -Wall -Wextra -Werror -I. "$D/cxx.cpp" -o "$D/cxx" &&
        $MPIRUN -np 2 "$D/cxx"
}
check "the MPI layer as C++11 (mpicxx; Open MPI's own C++ bindings left out)" cxx
