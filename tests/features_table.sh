#!/bin/sh
# tests/features_table.sh ML100K LIGHTFM_SRC [OUT] - the tables of docs/features.md: side
# features on MovieLens 100K (u.data, u.item's genres), three seeds, each run on one thread.
#   cold start: --holdout items:0.2 (a fifth of the items held out whole, as much of the rest
#     for validation), Recall@20 and NDCG@20 of the test items ranked among the items training
#     never saw; the demo with features only and with id + features, popularity by feature,
#     random, and LightFM (WARP, its id features on and off) built from LIGHTFM_SRC, a checkout
#     of github.com/lyst/lightfm, by this script (Debian's cython3, python3-dev, numpy, scipy).
#   warm start: the leave-one-out split (each user's latest rating, 99 sampled negatives), HR@10
#     and NDCG@10 without features and with the genres beside the ids.
# Settings and epochs are chosen on validation (docs/features.md says how); nothing here reads
# test to choose. Lines go to OUT (default build/features_table.txt) and the terminal.
set -eu
D=$1 SRC=$2 OUT=${3:-build/features_table.txt}
B=$(dirname "$OUT")
mkdir -p "$B/lightfm" "$B/splits"
command -v cython3 > /dev/null && /usr/bin/python3 -c 'import numpy, scipy' 2> /dev/null ||
    { apt-get update > /dev/null && apt-get install -y cython3 python3-dev python3-numpy python3-scipy > /dev/null; }
if [ ! -f "$B/lightfm/built" ]; then # LightFM's own build: its template made .pyx, cythonized, compiled
    rm -rf "$B/lightfm/src" && cp -r "$SRC" "$B/lightfm/src"
    (cd "$B/lightfm/src" && /usr/bin/python3 setup.py cythonize > ../cythonize.log 2>&1 &&
        /usr/bin/python3 setup.py build_ext --inplace > ../build.log 2>&1) && touch "$B/lightfm/built"
fi
[ -x ./demo ] || make demo > /dev/null
CPU="$(grep -m1 'model name' /proc/cpuinfo | sed 's/^model name[[:space:]]*: //')"
grep -q avx512f /proc/cpuinfo && CPU="$CPU (AVX-512)" || CPU="$CPU (no AVX-512)"
: > "$OUT"
say() { echo "$*" | tee -a "$OUT"; }
say "features table: $CPU, $(nproc) cores, ncf.h $(sed -n 's/^#define NCF_VERSION_STRING "\(.*\)"$/\1/p' ncf.h)"
FEAT="--item_features $D/u.item --item_feature_cols 1,6-24"
COLD="--data $D/u.data --holdout items:0.2 --top_k 20 --threads 1 --train_epochs 30 --learning_rate 0.001 --batch_size 128"
cold_row() { # NAME SEED LOG: the chosen epoch's test figures among the unseen items
    awk -v n="$1" -v s="$2" '/^Chosen/ { e = $0; sub(/.*epoch /, "", e); sub(/ .*/, "", e) }
        /ranked among the unseen/ { u = 1; next } u && $1 == "model" { print n, "seed", s, "Recall@20", $4, "NDCG@20", $8, "epoch", e }
        u && $1 == "random" { r = $4 " " $8 } u && $1 == "pop." { p = $6 " " $10 }
        END { split(r, a, " "); split(p, b, " "); print "random seed", s, "Recall@20", a[1], "NDCG@20", a[2];
              print "popularity-by-feature seed", s, "Recall@20", b[1], "NDCG@20", b[2] }' "$3"
}
for s in 1 2 3; do
    t0=$(date +%s)
    # shellcheck disable=SC2086
    ./demo $COLD $FEAT --features_only items --seed "$s" --save_split "$B/splits/cold$s" > "$B/cold_only$s.log" &
    # shellcheck disable=SC2086
    ./demo $COLD $FEAT --seed "$s" > "$B/cold_id$s.log" &
    wait
    t1=$(date +%s)
    cold_row "ncf-features-only" "$s" "$B/cold_only$s.log" | tee -a "$OUT"
    cold_row "ncf-id+features" "$s" "$B/cold_id$s.log" | grep -v '^random\|^popularity' | tee -a "$OUT"
    say "seconds seed $s: both runs side by side $((t1 - t0))"
    t0=$(date +%s)
    PYTHONPATH="$B/lightfm/src" /usr/bin/python3 tests/lightfm_cold.py "$B/splits/cold$s" "$D/u.item" --seed "$s" |
        sed "s/^/seed $s /" | tee -a "$OUT"
    say "seconds seed $s: LightFM search and test $(($(date +%s) - t0))"
done
WARM="--data $D/u.data --threads 1 --train_epochs 20"
for s in 1 2 3; do
    # shellcheck disable=SC2086
    ./demo $WARM --seed "$s" > "$B/warm_plain$s.log" &
    # shellcheck disable=SC2086
    ./demo $WARM $FEAT --seed "$s" > "$B/warm_feat$s.log" &
    wait
    for v in plain feat; do
        awk -v n="warm-$v" -v s="$s" '/^Chosen/ { c = 1; e = $0; sub(/.*epoch /, "", e); sub(/ .*/, "", e); next }
            c && $1 == "test" { print n, "seed", s, $2, $3, $4, $5, "epoch", e; c = 0 }' "$B/warm_$v$s.log" | tee -a "$OUT"
    done
done
