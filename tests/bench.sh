#!/bin/sh
# tests/bench.sh BUILD - make bench: one JSON line a case (tests/bench.c, -march=native) into
# BUILD/bench.jsonl, each case alone and, with BASE=REV, REV's right after ours; the contended
# cases beside a busy loop on one core; then the load times, the scoring of a small model, the
# in-turn ratios against REV (make bench-ab), the serving, ALS and Python cases, seconds to a
# good model (NCF_DATA), the machine's FMA peak (and PEERS/peak.c's), the summary and, where
# torch imports, the PyTorch peer on the same configurations. make passes BENCH (our bench
# program), BENCHCC, BASE, CASES, CONTENDED, PEERS, PY, PYTHON, CC, TORCH_PAPER and TORCH_MLPERF.
set -u
B=$1
rm -rf "$B/base"
if [ -n "$BASE" ]; then # REV's own benchmarks (before tests/bench.c existed: tests.c's --bench modes)
    mkdir -p "$B/base" && git archive "$BASE" | tar -x -C "$B/base" || exit 1
    if [ -f "$B/base/tests/bench.c" ]; then $BENCHCC "$B/base/tests/bench.c" -o "$B/base/bench" -lm || exit 1
    else $BENCHCC "$B/base/tests.c" -o "$B/base/bench" -lm && touch "$B/base/old_flags" || exit 1; fi
fi
{
    echo "make bench${BASE:+ BASE=$BASE} ($(git log -1 --format='%h %cs' 2> /dev/null); ncf.h $(sed -n 's/^#define NCF_VERSION_STRING "\(.*\)"$/\1/p' ncf.h))"
    printf '%s' "$(grep -m1 'model name' /proc/cpuinfo | sed 's/^model name[[:space:]]*: //')"
    if grep -q avx512f /proc/cpuinfo; then echo " (AVX-512), $(nproc) cores"; else echo " (no AVX-512), $(nproc) cores"; fi
} | tee "$B/bench-head.txt"
rm -f "$B/bench.jsonl"

run() { # CONTENDED CASE: ours, then the base's, each a JSON line tagged with who and the contention
    for b in "$BENCH" "$B/base/bench"; do
        [ -x "$b" ] || continue
        who=ours
        [ "$b" = "$BENCH" ] || who=base
        # shellcheck disable=SC2086 # (a case is words)
        if [ $who = base ] && [ -f "$B/base/old_flags" ]; then "$b" --bench $2; else "$b" $2; fi > "$B/case.json" ||
            return 1
        sed "s/^{/{\"build\":\"$who\",\"contended\":$1,/" "$B/case.json" | tee -a "$B/bench.jsonl"
    done
}
eval "set -- $CASES"
for c in "$@"; do run 0 "$c" || exit 1; done
timeout 1800 sh -c 'while :; do :; done' &
busy=$!
eval "set -- $CONTENDED"
for c in "$@"; do run 1 "$c" || { kill $busy; exit 1; }; done
for c in paper mlperf; do
    "$BENCH" --busy $c > "$B/case.json" || { kill $busy; exit 1; }
    tee -a "$B/bench.jsonl" < "$B/case.json"
done
kill $busy
for c in load load-adversarial; do "$BENCH" $c | tee -a "$B/bench.jsonl"; done
make --no-print-directory bench-load BASE="$BASE"
make --no-print-directory bench-small BASE="$BASE"
[ -z "$BASE" ] || make --no-print-directory bench-ab BASE="$BASE"
for c in serve-ids serving evalcost sgd1 als; do "$BENCH" $c | tee -a "$B/bench.jsonl"; done
make --no-print-directory python > /dev/null
if $PYTHON -c 'import numpy' 2> /dev/null; then $PYTHON python/tests/bench_ncf.py | tee -a "$B/bench.jsonl"
else echo "(the Python case skipped: no NumPy)"; fi
make --no-print-directory bench-seconds
"$BENCH" peak | tee "$B/peak.txt"
if [ -n "$PEERS" ] && [ -f "$PEERS/peak.c" ]; then
    $CC -O3 -march=native -fopenmp "$PEERS/peak.c" -o "$B/peak" && "$B/peak" | sed 's/^/peak.c, for comparison: /'
fi
"$BENCH" --summary "$B/bench.jsonl" "$B/peak.txt" > "$B/summary.txt"
cat "$B/summary.txt"
cat "$B/bench-head.txt" "$B/peak.txt" "$B/summary.txt" > "$B/bench-summary.txt" # (make bench-doc)
if [ -n "$PEERS" ] && [ -f "$PEERS/torch_neumf.py" ] && $PY -c 'import torch' 2> /dev/null; then
    echo "PyTorch peer (OPENBLAS_CORETYPE=Cooperlake, 2 threads):"
    for a in "paper:$TORCH_PAPER" "mlperf_dense:$TORCH_MLPERF --max_steps 40" \
        "mlperf_lazy:$TORCH_MLPERF --max_steps 120 --lazy_adam"; do
        printf '%s ' "${a%%:*}"
        # shellcheck disable=SC2086 # (the peer's flags are words)
        OPENBLAS_CORETYPE=Cooperlake $PY "$PEERS/torch_neumf.py" ${a#*:} 2> /dev/null | tail -n 1
    done | tee "$B/peer.jsonl"
else
    echo "(the PyTorch peer skipped: PEERS=DIR with torch_neumf.py, and python3-torch)"
fi
