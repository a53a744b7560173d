#!/bin/sh
# python/tests/run.sh PYTHON BUILD - the Python package's tests (a suite of make test), with the
# README's example logs in BUILD; skipped, and said, where PYTHON cannot import NumPy.
if "$1" -c "import numpy" 2> /dev/null; then NCF_README_DIR=$2 exec "$1" python/tests/test_ncf.py; fi
echo "python: skipped (it needs python3 and NumPy: tests/needs.sh test installs them)"
echo "0 passed, 0 failed, 1 skipped"
