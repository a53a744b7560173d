#!/bin/sh
# tests/bench_doc.sh BUILD DOC - make bench-doc: puts the last make bench's summary
# (BUILD/bench-summary.txt: the command, the CPU, the FMA peak and the summary, as printed)
# into DOC between its "make bench-doc" markers, so the page's figures are a run's own output.
set -eu
B=$1
DOC=$2
[ -s "$B/bench-summary.txt" ] || { echo "bench-doc: no $B/bench-summary.txt: run make bench first" >&2; exit 1; }
grep -q '^<!-- make bench-doc: from here -->$' "$DOC" && grep -q '^<!-- make bench-doc: to here -->$' "$DOC"
awk -v sum="$B/bench-summary.txt" '
    /^<!-- make bench-doc: from here -->$/ { print; print "```text"; while ((getline l < sum) > 0) print l; print "```"; skip = 1; next }
    /^<!-- make bench-doc: to here -->$/ { skip = 0 }
    !skip' "$DOC" > "$DOC.tmp"
mv "$DOC.tmp" "$DOC"
echo "bench-doc: $DOC holds $B/bench-summary.txt"
