#!/bin/sh
# tests/cmake_check.sh BUILD [every] - the CMake package as a user takes it: the README's example app
# built with the README's three CMake lines (add_subdirectory), and again with FetchContent
# (from a tarball of this folder), with find_package(ncf) after cmake --install, with the
# implementation as a library (NCF_BUILD_LIBRARY, ncf::impl, static and shared), and with
# pkg-config; each app trains on BUILD/books.csv and prints its 10 lines. Each way is built in a
# C project and again in a C++-only one (the app compiled as C++), where a second program says
# that the library runs on 2 threads under OMP_NUM_THREADS=2 (OpenMP reached the C++ compile)
# and the project sees ncf_VERSION. make test builds the C++ project by find_package alone (each
# C++ build compiles the implementation: a minute for all five); make check, with every, all.
# Needs cmake, pkg-config and a C++ compiler.
set -eu
B=$(cd "$1" && pwd)
EVERY=${2:-}
SRC=$(cd "$(dirname "$0")/.." && pwd)
W=$B/cmake
rm -rf "$W" && mkdir -p "$W"
awk '/^```c$/ { on = 1; next } on && /^```$/ { exit } on' "$SRC/README.md" > "$W/app.c"
awk '/^```cmake$/ { on = 1; next } on && /^```$/ { exit } on' "$SRC/README.md" > "$W/readme.cmake"
grep -q '^add_subdirectory(ncf.h)' "$W/readme.cmake"
tar -C "$SRC" -czf "$W/ncf.tar.gz" --exclude=./build --exclude=./.git .

# consumer NAME LANG FIRST_LINE [APP_SED]: a project of the README's lines, the first replaced;
# LANG CXX: a C++-only project, the app compiled as C++, with the threads program beside it
consumer() {
    d=$W/$1
    mkdir -p "$d"
    if [ "$2" = CXX ]; then
        sed "${4:-}" "$W/app.c" > "$d/app.cpp"
        { [ -z "${4:-}" ] && echo '#define NCF_IMPLEMENTATION'
          printf '#include "ncf.h"\n#include <cstdio>\nint main() { std::printf("threads %%d\\n", ncf_set_threads(0)); }\n'
        } > "$d/threads.cpp"
        { echo 'cmake_minimum_required(VERSION 3.14)'; echo 'project(app CXX)'; printf '%s\n' "$3"
          sed 1d "$W/readme.cmake" | sed 's/app\.c\b/app.cpp/'
          sed -n 's/^target_link_libraries(app \(.*\))$/add_executable(threads threads.cpp)\ntarget_link_libraries(threads \1)/p' "$W/readme.cmake"
          echo 'message(STATUS "ncf_VERSION ${ncf_VERSION}")'; } > "$d/CMakeLists.txt"
    else
        sed "${4:-}" "$W/app.c" > "$d/app.c"
        { echo 'cmake_minimum_required(VERSION 3.14)'; echo 'project(app C)'; printf '%s\n' "$3"
          sed 1d "$W/readme.cmake"; } > "$d/CMakeLists.txt"
    fi
}
run() { # NAME [cmake args]: configure, build, run where books.csv is
    name=$1 d=$W/$1
    shift
    cmake -S "$d" -B "$d/build" -DCMAKE_BUILD_TYPE=Release "$@" > "$d/cmake.log" 2>&1 || { cat "$d/cmake.log"; exit 1; }
    cmake --build "$d/build" > "$d/build.log" 2>&1 || { cat "$d/build.log"; exit 1; }
    cp "$B/books.csv" "$d/build/"
    (cd "$d/build" && ./app > out.txt)
    [ "$(grep -c '^[0-9X]*  -*[0-9.]*$' "$d/build/out.txt")" = 10 ] || { echo "$name: not 10 lines"; cat "$d/build/out.txt"; exit 1; }
    if [ -f "$d/threads.cpp" ]; then
        t=$(cd "$d/build" && OMP_NUM_THREADS=2 ./threads)
        [ "$t" = "threads 2" ] || { echo "$name: the C++ program runs on one thread ($t): OpenMP did not reach it"; exit 1; }
        grep -q "ncf_VERSION $ncf_version\$" "$d/cmake.log" || { echo "$name: ncf_VERSION is not $ncf_version"; cat "$d/cmake.log"; exit 1; }
        echo "$name: built and ran, 2 threads, ncf_VERSION $ncf_version"
    else
        echo "$name: built and ran"
    fi
}
ncf_version=$(sed -n 's/^#define NCF_VERSION_STRING "\(.*\)"$/\1/p' "$SRC/ncf.h")

cmake -S "$SRC" -B "$W/ncf-build" -DNCF_BUILD_LIBRARY=ON > "$W/install.log" 2>&1 &&
    cmake --build "$W/ncf-build" >> "$W/install.log" 2>&1 &&
    cmake --install "$W/ncf-build" --prefix "$W/prefix" >> "$W/install.log" 2>&1 || { cat "$W/install.log"; exit 1; }
cmake -S "$SRC" -B "$W/ncf-shared" -DNCF_BUILD_LIBRARY=ON -DBUILD_SHARED_LIBS=ON > "$W/install.log" 2>&1 &&
    cmake --build "$W/ncf-shared" >> "$W/install.log" 2>&1 &&
    cmake --install "$W/ncf-shared" --prefix "$W/shared" >> "$W/install.log" 2>&1 || { cat "$W/install.log"; exit 1; }
# way NAME LANG: whether this run builds it
way() { [ "$2" = C ] || [ -n "$EVERY" ] || [ "$1" = installed ]; }
for lang in C CXX; do
    l=$(echo $lang | tr A-Z a-z)
    if way subdir $lang; then
        consumer subdir-$l $lang 'add_subdirectory(ncf.h)'
        ln -s "$SRC" "$W/subdir-$l/ncf.h"
        run subdir-$l
    fi
    if way fetch $lang; then
        consumer fetch-$l $lang "include(FetchContent)
FetchContent_Declare(ncf URL file://$W/ncf.tar.gz)
FetchContent_MakeAvailable(ncf)"
        run fetch-$l
    fi
    if way installed $lang; then
        consumer installed-$l $lang 'find_package(ncf 0.8 CONFIG REQUIRED)'
        run installed-$l -DCMAKE_PREFIX_PATH="$W/prefix"
    fi
    if way library $lang; then
        consumer library-$l $lang 'find_package(ncf CONFIG REQUIRED)' '/^#define NCF_IMPLEMENTATION$/d'
        sed -i 's/ncf::ncf)/ncf::impl)/' "$W/library-$l/CMakeLists.txt"
        run library-$l -DCMAKE_PREFIX_PATH="$W/prefix"
    fi
    if way shared $lang; then
        consumer shared-$l $lang 'find_package(ncf CONFIG REQUIRED)' '/^#define NCF_IMPLEMENTATION$/d'
        sed -i 's/ncf::ncf)/ncf::impl)/' "$W/shared-$l/CMakeLists.txt"
        [ -n "$(find "$W/shared" -name 'libncf_impl.so*')" ] || { echo "no shared libncf_impl installed"; exit 1; }
        run shared-$l -DCMAKE_PREFIX_PATH="$W/shared" -DCMAKE_BUILD_RPATH="$W/shared/lib"
    fi
done

mkdir -p "$W/pc"
PKG_CONFIG_PATH=$(dirname "$(find "$W/prefix" -name ncf.pc)") \
    cc -O2 "$W/app.c" -o "$W/pc/app" $(PKG_CONFIG_PATH=$(dirname "$(find "$W/prefix" -name ncf.pc)") pkg-config --cflags --libs ncf)
cp "$B/books.csv" "$W/pc/" && (cd "$W/pc" && ./app > out.txt)
[ "$(grep -c '^[0-9X]*  -*[0-9.]*$' "$W/pc/out.txt")" = 10 ]
PKG_CONFIG_PATH=$(dirname "$(find "$W/prefix" -name ncf.pc)") pkg-config --cflags ncf | grep -q -e '-fopenmp'
echo "pkg-config: built and ran, with OpenMP's flag"
