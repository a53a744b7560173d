"""pip install --no-build-isolation ./python (offline: setuptools and NumPy from the system).
The package's C side is ncf.h itself, built as a shared library that the package loads with
ctypes (no Python C API: any Python 3 with this ABI's C compiler). In the repository the
header is ../ncf.h, copied beside the shim at each build; an sdist carries that copy."""
import os
import re
import shutil
import sys

from setuptools import Extension, setup

here = os.path.dirname(os.path.abspath(__file__))
top, bundled = os.path.join(here, "..", "ncf.h"), os.path.join(here, "ncf", "ncf.h")
if os.path.exists(top):
    shutil.copyfile(top, bundled)
elif not os.path.exists(bundled):
    sys.exit("ncf: setup.py builds from the ncf.h repository or from an sdist: %s is missing" % top)
with open(bundled, encoding="utf-8") as f:
    version = re.search(r'#define NCF_VERSION_STRING "([^"]+)"', f.read()).group(1)
omp = [] if os.environ.get("NO_OMP") else ["-fopenmp"]

setup(
    version=version,
    packages=["ncf"],
    package_data={"ncf": ["py.typed", "ncf.h", "_shim.c"]},
    ext_modules=[Extension("ncf._ncf", sources=["ncf/_shim.c"], include_dirs=[os.path.join(here, "ncf")],
                           depends=["ncf/ncf.h"],
                           extra_compile_args=["-std=c99", "-O3", "-ffp-contract=fast", "-fno-math-errno"] + omp,
                           extra_link_args=omp)],
)
