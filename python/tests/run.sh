#!/bin/sh
# python/tests/run.sh PYTHON BUILD [LIBRARY] - the Python package's tests (a suite of make test),
# with the README's example logs in BUILD; skipped, and said, where PYTHON cannot import NumPy.
# With LIBRARY (make check: the package's library built with AddressSanitizer and UBSan), the
# contract and thousands of random calls run on it instead, the sanitizer's runtime preloaded.
if ! "$1" -c "import numpy" 2> /dev/null; then
    echo "python: skipped (it needs python3 and NumPy: tests/needs.sh test installs them)"
    echo "0 passed, 0 failed, 1 skipped"
    exit 0
fi
if [ -z "${3:-}" ]; then NCF_README_DIR=$2 exec "$1" python/tests/run.py; fi
LD_PRELOAD="$(${CC:-cc} -print-file-name=libasan.so)" ASAN_OPTIONS=detect_leaks=0:abort_on_error=1 \
    UBSAN_OPTIONS=print_stacktrace=1 NCF_LIBRARY=$3 NCF_PROPS_CALLS=${NCF_PROPS_CALLS:-5000} \
    exec "$1" python/tests/run.py test_contract test_props
