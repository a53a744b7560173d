#!/bin/sh
# tests/snprintf_check.sh FILE... - an unchecked snprintf of a string cuts it without a word (a
# path cut short names another file). Every snprintf whose format holds a string (%s, %.*s,
# %.Ns) must use its result (assigned, compared, returned) or say on its line why it fits
# ("fits:" in a comment). Numbers alone are gcc's to check (-Wformat-truncation, in -Wall).
# Prints each call that does neither; exits 1 if any.
awk '
    /snprintf\(/ && !/vsnprintf/ && !/^[ \t]*(\/\*|\*|#)/ {
        line = $0
        if (line !~ /%[-0-9.*]*s/) next
        if (line ~ /fits:/) next
        if (line ~ /(=|return|\(|&&|\|\||,)[ \t]*snprintf\(/ && line !~ /^[ \t]*snprintf\(/ &&
            line !~ /[;{][ \t]*snprintf\(/) next
        printf "%s:%d: %s\n", FILENAME, FNR, line; bad++
    }
    END { exit bad > 0 }
' "$@"
