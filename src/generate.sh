#!/bin/sh
# Writes ncf.h, the one file users copy, from the sources in src/: the public API, then the
# implementation behind NCF_IMPLEMENTATION, stage by stage in the order data flows, then the
# licence. Plain concatenation with a line naming each part's source, so the shipped file reads
# as the sources do.
#   src/generate.sh           write ncf.h
#   src/generate.sh --check   fail, saying so, when ncf.h differs from what src/ makes
set -eu
cd "$(dirname "$0")"
STAGES="base ids logs dataset sampler kernels model score train als eval tune serve fold features file mpi"

rule() { # the line before a part: its tag, its source, padded to 100 columns
    printf '/* ---- >>%s (src/%s) %s */\n' "$1" "$2" \
        "$(printf '%100s' '' | tr ' ' '-' | cut -c$((${#1} + ${#2} + 22))-)"
}

emit() {
    cat api.h
    cat <<'END'

/* ==================================================================================================
   >>impl: IMPLEMENTATION, in the order data flows (CONTENTS at the top lists its parts)
   ================================================================================================ */
#ifdef NCF_IMPLEMENTATION
#ifndef NCF_IMPLEMENTATION_DONE
#define NCF_IMPLEMENTATION_DONE

END
    rule internal internal.h
    cat internal.h
    for s in $STAGES; do
        echo
        rule "$s" "$s.c"
        cat "$s.c"
    done
    cat <<'END'

#endif /* NCF_IMPLEMENTATION_DONE */
#endif /* NCF_IMPLEMENTATION */

END
    cat licence.h
}

if [ "${1:-}" = --check ]; then
    if ! emit | cmp -s - ../ncf.h; then
        echo "ncf.h is stale: it differs from what src/ generates (run src/generate.sh)" >&2
        exit 1
    fi
    exit 0
fi
emit > ../ncf.h.tmp
mv ../ncf.h.tmp ../ncf.h
