#!/bin/sh
# tests/analyze.sh - clang's static analyzer (clang --analyze) over the library as demo.c and the
# Python package build it, and clang-tidy's checks over the same. Any finding fails, except the
# analyzer's known false positives in tests/analyze.known: each names its checker, its file and
# the text of the line it flags, and says why it cannot happen. A listed finding that no longer
# occurs fails too, so the list only ever holds what the analyzer still reports.
set -eu
cd "$(dirname "$0")/.."
CC_FLAGS="-std=c99 -I."
# bugprone, cert, misc, portability and performance, less: parameters of one type side by side
# (a C API has many), int-to-float narrowing (deliberate throughout the kernels), unchecked
# printf results, C++ naming rules, and integer-to-pointer casts (a model read in place points
# into the caller's const buffer through uintptr_t, so that -Wcast-qual stays quiet)
TIDY_CHECKS="-*,bugprone-*,cert-*,misc-*,portability-*,performance-*,-bugprone-easily-swappable-parameters,\
-bugprone-narrowing-conversions,-cert-err33-c,-cert-dcl37-c,-cert-dcl51-cpp,-performance-no-int-to-ptr"
found=$(mktemp) && trap 'rm -f "$found"' EXIT
for src in demo.c python/ncf/_shim.c; do
    # each warning as: checker <TAB> file <TAB> the flagged line's text, blanks squeezed
    clang --analyze $CC_FLAGS "$src" -o /dev/null 2>&1 | grep ': warning: .*\[[a-zA-Z.]*\]$' |
        while IFS= read -r w; do
            file=${w%%:*}; rest=${w#*:}; line=${rest%%:*}; checker=${w##*[}; checker=${checker%]}
            text=$(sed -n "${line}p" "$file" | tr -s ' \t' ' ' | sed 's/^ //; s/ $//')
            file=${file#./}
            [ "$file" = python/ncf/ncf.h ] && file=ncf.h # (the shim's copy of ncf.h, beside it)
            printf '%s\t%s\t%s\n' "$checker" "$file" "$text"
        done >> "$found"
done
sort -u "$found" -o "$found"
known=$(grep -v '^#' tests/analyze.known | grep . | cut -f1-3 | sort -u)
new=$(echo "$known" | comm -13 - "$found")
gone=$(echo "$known" | comm -23 - "$found")
status=0
if [ -n "$new" ]; then echo "analyze: clang --analyze found:"; echo "$new"; status=1; fi
if [ -n "$gone" ]; then echo "analyze: no longer found (take it out of tests/analyze.known):"; echo "$gone"; status=1; fi
[ $status = 0 ] && echo "analyze: clang --analyze found nothing new ($(echo "$known" | grep -c .) known false positives, each explained in tests/analyze.known)"
for src in demo.c python/ncf/_shim.c; do
    if ! out=$(clang-tidy "$src" --quiet --header-filter='.*' --checks="$TIDY_CHECKS" --warnings-as-errors='*' \
        -- $CC_FLAGS 2>&1); then
        echo "$out" | grep -A3 'warning:\|error:'; status=1
    fi
done
[ $status = 0 ] && echo "analyze: clang-tidy found nothing"
exit $status
