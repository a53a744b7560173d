#!/bin/sh
# tests/peers.sh QMF_SRC LIBMF_SRC DATA [USER_COL ITEM_COL RATING_COL MIN_RATINGS HOLDOUT [SEED]]
# Builds QMF's WALS and LIBMF from their sources (git clones of github.com/quora/qmf and
# github.com/cjlin1/libmf) with the machine's compilers into build/peers/, writes the split
# `./demo --data DATA --tune` searches on (tests/peer_split.c, the same arguments), and tunes each
# peer on its validation items and scores it on its test items (tests/peer_grid.py), a log
# each in build/peers/splits/NAME.PEER.log. THREADS (1) threads a peer, MAX_FACTORS (128) caps
# its factors. Nothing of the peers' code is kept outside build/.
set -eu
if [ $# -lt 3 ]; then
    sed -n '2,8s/^# \{0,1\}//p' "$0" >&2
    exit 2
fi
qmf=$1 libmf=$2 data=$3
shift 3
B=build/peers
py=python3; [ -x /usr/bin/python3 ] && py=/usr/bin/python3
tests/needs.sh peers
mkdir -p $B/splits
${CC:-cc} -O2 -I. tests/peer_split.c -o $B/peer_split -lm
if [ ! -x $B/qmf/bin/wals ]; then
    cmake -S "$qmf" -B $B/qmf -DCMAKE_BUILD_TYPE=Release > $B/qmf.build.log 2>&1 &&
        make -C $B/qmf wals >> $B/qmf.build.log 2>&1 || { tail -20 $B/qmf.build.log >&2; exit 1; }
fi
if [ ! -x $B/libmf/mf-train ]; then
    mkdir -p $B/libmf
    cp "$libmf"/mf.cpp "$libmf"/mf.h "$libmf"/mf-train.cpp "$libmf"/Makefile $B/libmf/
    make -C $B/libmf mf-train > $B/libmf.build.log 2>&1 || { tail -20 $B/libmf.build.log >&2; exit 1; }
fi
name=$(basename "$data")
name=${name%.*}
$B/peer_split "$data" $B/splits/"$name" "$@"
for peer in qmf libmf; do
    src=$qmf bin=$B/qmf/bin/wals
    [ $peer = libmf ] && src=$libmf bin=$B/libmf/mf-train
    echo "$peer: $(git -C "$src" log -1 --format='%h %cs' 2> /dev/null || echo "$src")" | tee $B/splits/"$name".$peer.log
    $py tests/peer_grid.py $peer $bin $B/splits/"$name" --threads "${THREADS:-1}" \
        --max_factors "${MAX_FACTORS:-128}" | tee -a $B/splits/"$name".$peer.log
done
