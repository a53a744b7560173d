"""pip install --no-build-isolation ./python (offline: setuptools and NumPy from the system).
The package's C side is ncf.h itself, one directory up, built as a shared library that the
package loads with ctypes (no Python C API: any Python 3 with this ABI's C compiler)."""
import os
import sys

from setuptools import Extension, setup

here = os.path.dirname(os.path.abspath(__file__))
header = os.path.join(here, "..", "ncf.h")
if not os.path.exists(header):
    sys.exit("ncf: setup.py builds from the ncf.h repository: %s is missing" % header)
omp = [] if os.environ.get("NO_OMP") else ["-fopenmp"]

setup(
    name="ncf",
    version="0.8.0",
    description="Neural Collaborative Filtering (NeuMF) over the ncf.h C library",
    packages=["ncf"],
    install_requires=["numpy"],
    ext_modules=[Extension("ncf._ncf", sources=["ncf/_shim.c"], include_dirs=[os.path.join(here, "..")],
                           extra_compile_args=["-std=c99", "-O3", "-ffp-contract=fast", "-fno-math-errno"] + omp,
                           extra_link_args=omp)],
    python_requires=">=3.7",
)
