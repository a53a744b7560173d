#!/bin/sh
# device/check_docs.sh - checks the figures table of docs/devices.md against what make device
# measured on each core (BUILD/device/CORE: run.log, linked.txt): code and constant bytes, heap,
# allocations, workspace, instruction counts (in millions, to the 3 figures the table shows),
# stacks and the lists and scores equal to the host's. A figure that differs fails, named.
set -eu
build=${BUILD:-build}
status=0
col=3
for core in m4 m0 rv32imac rv32imafc; do
    log=$build/device/$core/run.log linked=$build/device/$core/linked.txt
    # measured: one "label<TAB>numbers" line per row of the table, numbers as the table writes them
    awk -v linked="$linked" '
        function m(x) { x /= 1e6; return x >= 100 ? sprintf("%.0f", x) : x >= 10 ? sprintf("%.1f", x) : sprintf("%.2f", x) }
        BEGIN { getline l < linked; split(l, w, " "); code = w[3]; consts = w[7] }
        # the number just before (or, with after set, just after) the words w in line l
        function num(l, w, after,   k, n, nw, a, t) {
            n = split(l, a, " "); nw = split(w, t, " ")
            for (k = 1; k <= n; k++) if (index(a[k] " " a[k + 1], w) == 1) return after ? a[k + nw] + 0 : a[k - 1] + 0
            return ""
        }
        /^float32: opening took/ { open = num($0, "took", 1); verified = num($0, "where the") }
        /^float32: model file/ { heap = num($0, "bytes of"); nalloc = num($0, "allocations,"); ws = num($0, "workspace", 1) }
        /^(float32|int8): [0-9]+ of [0-9]+ top-10/ {
            f = $1; serving = num($0, "allocations while"); ins[f] = num($0, "instructions per")
            if (f == "float32:") { lists = $2 " " $4; bits = substr($11, 2) " " $13 } }
        /^float32: stack at most/ { so = $5; sr = $8 }
        END {
            printf "code\t%s\nits constants\t%s\nheap to open\t%s %s\nallocations per recommendation\t%s\n", code, consts, heap, nalloc, serving
            printf "workspace\t%s\ninstructions per top-10\t%s %s\n", ws, m(ins["float32:"]), m(ins["int8:"])
            printf "instructions to open\t%s %s\nstack, opening\t%s %s\ntop-10 lists equal\t%s\nscores bit-identical\t%s\n", m(open), m(verified), so, sr, lists, bits
        }' "$log" > "$build/device/$core/figures.txt"
    while IFS='	' read -r label want; do
        row=$(grep -F "| $label" docs/devices.md | grep -v '^| 0' | head -n 1 || true)
        [ -n "$row" ] || row=$(grep "^| [^|]*$label" docs/devices.md | head -n 1 || true)
        cell=$(echo "$row" | awk -F'|' -v c=$col '{ while (c > 3 && $c ~ /^ *the same *$/) c--; print $c }')
        got=$(echo "$cell" | tr -d ',' | grep -oE '[0-9]+(\.[0-9]+)?' | tr '\n' ' ' | sed 's/ $//')
        case $label in heap*) got=$(echo "$got" | awk '{ print $1, $2 }') ;; esac
        if [ "$got" != "$want" ]; then
            echo "docs/devices.md, '$label' on $core: the table says '$got', make device measured '$want'"
            status=1
        fi
    done < "$build/device/$core/figures.txt"
    col=$((col + 1))
done
[ $status = 0 ] && echo "docs/devices.md: every figure in its table is what make device measured"
exit $status
