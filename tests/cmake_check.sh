#!/bin/sh
# tests/cmake_check.sh BUILD - the CMake package as a user takes it: the README's example app
# built with the README's three CMake lines (add_subdirectory), and again with FetchContent
# (from a tarball of this folder), with find_package(ncf) after cmake --install, with the
# implementation as a library (NCF_BUILD_LIBRARY, ncf::impl), and with pkg-config; each app
# trains on BUILD/books.csv and prints its 10 lines. Needs cmake and pkg-config.
set -eu
B=$(cd "$1" && pwd)
SRC=$(cd "$(dirname "$0")/.." && pwd)
W=$B/cmake
rm -rf "$W" && mkdir -p "$W"
awk '/^```c$/ { on = 1; next } on && /^```$/ { exit } on' "$SRC/README.md" > "$W/app.c"
awk '/^```cmake$/ { on = 1; next } on && /^```$/ { exit } on' "$SRC/README.md" > "$W/readme.cmake"
grep -q '^add_subdirectory(ncf.h)' "$W/readme.cmake"
tar -C "$SRC" -czf "$W/ncf.tar.gz" --exclude=./build --exclude=./.git .

# consumer NAME FIRST_LINE [APP_SED]: a project of the README's lines, the first replaced
consumer() {
    d=$W/$1
    mkdir -p "$d"
    sed "${3:-}" "$W/app.c" > "$d/app.c"
    { echo 'cmake_minimum_required(VERSION 3.14)'; echo 'project(app C)'; printf '%s\n' "$2"
      sed 1d "$W/readme.cmake"; } > "$d/CMakeLists.txt"
}
run() { # NAME [cmake args]: configure, build, run where books.csv is
    name=$1 d=$W/$1
    shift
    cmake -S "$d" -B "$d/build" -DCMAKE_BUILD_TYPE=Release "$@" > "$d/cmake.log" 2>&1 || { cat "$d/cmake.log"; exit 1; }
    cmake --build "$d/build" > "$d/build.log" 2>&1 || { cat "$d/build.log"; exit 1; }
    cp "$B/books.csv" "$d/build/"
    (cd "$d/build" && ./app > out.txt)
    [ "$(grep -c '^[0-9X]*  -*[0-9.]*$' "$d/build/out.txt")" = 10 ] || { echo "$name: not 10 lines"; cat "$d/build/out.txt"; exit 1; }
    echo "$name: built and ran"
}

consumer subdir 'add_subdirectory(ncf.h)'
ln -s "$SRC" "$W/subdir/ncf.h"
run subdir

consumer fetch "include(FetchContent)
FetchContent_Declare(ncf URL file://$W/ncf.tar.gz)
FetchContent_MakeAvailable(ncf)"
run fetch

cmake -S "$SRC" -B "$W/ncf-build" -DNCF_BUILD_LIBRARY=ON > "$W/install.log" 2>&1 &&
    cmake --build "$W/ncf-build" >> "$W/install.log" 2>&1 &&
    cmake --install "$W/ncf-build" --prefix "$W/prefix" >> "$W/install.log" 2>&1 || { cat "$W/install.log"; exit 1; }
consumer installed 'find_package(ncf 0.8 CONFIG REQUIRED)'
run installed -DCMAKE_PREFIX_PATH="$W/prefix"

consumer library 'find_package(ncf CONFIG REQUIRED)' '/^#define NCF_IMPLEMENTATION$/d'
sed -i 's/ncf::ncf)/ncf::impl)/' "$W/library/CMakeLists.txt"
run library -DCMAKE_PREFIX_PATH="$W/prefix"

mkdir -p "$W/pc"
PKG_CONFIG_PATH=$(dirname "$(find "$W/prefix" -name ncf.pc)") \
    cc -O2 "$W/app.c" -o "$W/pc/app" $(PKG_CONFIG_PATH=$(dirname "$(find "$W/prefix" -name ncf.pc)") pkg-config --cflags --libs ncf)
cp "$B/books.csv" "$W/pc/" && (cd "$W/pc" && ./app > out.txt)
[ "$(grep -c '^[0-9X]*  -*[0-9.]*$' "$W/pc/out.txt")" = 10 ]
echo "pkg-config: built and ran"
