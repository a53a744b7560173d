"""python/tests/run.py [MODULE...] - the package's tests (python/tests/test_*.py, or the modules
named), one suite of make test: ends with its line `N passed, N failed, N skipped`."""
import glob
import importlib
import os
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
names = sys.argv[1:] or sorted(os.path.basename(p)[:-3] for p in glob.glob(os.path.join(HERE, "test_*.py")))
suite = unittest.TestSuite(unittest.defaultTestLoader.loadTestsFromModule(importlib.import_module(n)) for n in names)
result = unittest.TextTestRunner(verbosity=2, stream=sys.stdout).run(suite)
failed = len(result.failures) + len(result.errors)
skipped = len(result.skipped)
print("%d passed, %d failed, %d skipped" % (result.testsRun - failed - skipped, failed, skipped))
sys.exit(1 if failed else 0)
