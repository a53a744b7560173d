#!/bin/sh
# tests/needs.sh TARGET - installs the Debian packages a make target needs and the machine
# lacks (when root, with apt-get), or says which to install. The one place that knows them:
# every target that needs more than a C compiler calls it, and .ci/run calls it for the rest.
set -eu
need=""
want() { command -v "$1" > /dev/null 2>&1 || need="$need $2"; } # a command, its package(s)
want_dir() { [ -d "$1" ] || need="$need $2"; }
want_py() { # a Python module, its Debian package (for Debian's python3, which the Makefile prefers)
    py=python3; [ -x /usr/bin/python3 ] && py=/usr/bin/python3
    $py -c "import $1" > /dev/null 2>&1 || need="$need $2"
}
want_wasm() { # clang's wasm32-wasi toolchain
    want clang clang; want wasm-ld lld; want_dir /usr/lib/wasm32-wasi wasi-libc
    ls /usr/lib/llvm-*/lib/clang/*/lib/wasi/libclang_rt.builtins-wasm32.a > /dev/null 2>&1 ||
        need="$need libclang-rt-14-dev-wasm32"
}
case $1 in
test) # make test: the header built by clang, tcc and C++; the demo's plot rendered; the CMake package;
      # the Python package (Debian's python3 with NumPy, pandas, SciPy, Hypothesis, setuptools and pip); ncf.wasm run by
      # Node's WASI (make wasm's toolchain)
    want make make; want cc "gcc libc6-dev"; want clang clang; want g++ g++; want tcc tcc
    want rsvg-convert librsvg2-bin; want cmake cmake; want pkg-config pkg-config
    want python3 python3; want_py numpy python3-numpy; want_py pandas python3-pandas
    want_py setuptools python3-setuptools; want_py pip python3-pip; want_py scipy python3-scipy
    want_py hypothesis python3-hypothesis
    want node nodejs; want_wasm ;;
cross)
    for t in aarch64-linux-gnu arm-linux-gnueabihf s390x-linux-gnu; do want $t-gcc gcc-$t; done
    want qemu-aarch64 qemu-user ;;
windows)
    want x86_64-w64-mingw32-gcc gcc-mingw-w64-x86-64; want wine wine ;;
mpi)
    want mpicc libopenmpi-dev; want mpirun openmpi-bin ;;
device)
    want arm-none-eabi-gcc gcc-arm-none-eabi; want_dir /usr/lib/arm-none-eabi/newlib libnewlib-arm-none-eabi
    want qemu-system-arm qemu-system-arm
    want riscv64-unknown-elf-gcc gcc-riscv64-unknown-elf
    want_dir /usr/lib/picolibc/riscv64-unknown-elf picolibc-riscv64-unknown-elf
    want qemu-system-riscv32 qemu-system-misc ;;
wasm)
    want_wasm ;;
web) # make web-test: Chromium, and node and npm for playwright-core
    want chromium chromium; want node nodejs; want npm npm ;;
format) # make format, make format-check: clang-format (14, as Debian 12 has it)
    want clang-format clang-format ;;
analyze) # make analyze: cppcheck, clang's analyzer and clang-tidy
    want cppcheck cppcheck; want clang clang; want clang-tidy clang-tidy ;;
fuzz) # libFuzzer's runtime is only a Recommends of clang's packages
    want clang clang
    if command -v clang > /dev/null 2>&1 &&
        ! echo 'int LLVMFuzzerTestOneInput(const char *d, unsigned long n) { return !d + (int)n * 0; }' |
        clang -fsanitize=fuzzer -x c - -o /dev/null > /dev/null 2>&1; then need="$need libclang-rt-dev"; fi ;;
peers) # tests/peers.sh: QMF's build (CMake, g++, glog, gflags, LAPACK), LIBMF's (g++), NumPy
    want cmake cmake; want g++ g++; want_dir /usr/include/glog libgoogle-glog-dev
    want_dir /usr/include/gflags libgflags-dev; want_py numpy python3-numpy
    ls /usr/lib/*/liblapack.so > /dev/null 2>&1 || ls /usr/lib/liblapack.so > /dev/null 2>&1 || need="$need liblapack-dev" ;;
*)
    echo "tests/needs.sh: unknown target '$1'" >&2
    exit 2 ;;
esac
[ -z "$need" ] && exit 0
if [ "$(id -u)" = 0 ] && command -v apt-get > /dev/null; then
    echo "installing:$need"
    apt-get update -qq && apt-get install -y -qq $need > /dev/null
else
    echo "make $1 needs:  sudo apt-get install$need"
    exit 1
fi
