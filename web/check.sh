#!/bin/sh
# web/check.sh BUILD MODEL... - make test's check of ncf.wasm under Node's WASI: for each model
# file, every user's top 10 (score bits included) and a new user's equal what the host build
# of ncf_web.c answers. Records pass or fail in BUILD/checks, as make test's other checks do.
build=$1
shift
for model in "$@"; do
    printf 'ncf.wasm under Node (WASI) answers as the host for every user of %s ... ' "$(basename "$model")"
    if "$build/web/host" "$model" 1000000 > "$build/web/host.txt" &&
        node --no-warnings web/node_check.mjs "$build/web/ncf.wasm" "$model" 1000000 > "$build/web/node.txt" &&
        cmp -s "$build/web/host.txt" "$build/web/node.txt"; then
        echo "ok ($(($(wc -l < "$build/web/host.txt") - 2)) users)"
        echo pass >> "$build/checks"
    else
        echo FAILED
        diff "$build/web/host.txt" "$build/web/node.txt" | head -n 6
        echo fail >> "$build/checks"
    fi
done
