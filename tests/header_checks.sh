#!/bin/sh
# tests/header_checks.sh BUILD - ncf.h as users build it, the demo run as a user runs it
# (tests/demo_checks.sh) and the files that must agree with them (make test). Each check prints
# "name ... ok" (or FAILED and its log, or skipped and why) and records pass, fail or skip in
# BUILD/checks; the last line adds them up, as a suite's does. Needs BUILD/tests (for the
# example logs) and takes CC, CXX, OMP and TESTFLAGS from make.
B=$1
rm -f "$B/checks"
CC=${CC:-cc}
CXX=${CXX:-g++}
OMP=${OMP:-}
TESTFLAGS=${TESTFLAGS:--O2 -g -std=c99 -Wall -Wextra -Wshadow -Werror}
WARN="-Wall -Wextra -Wshadow"

# check NAME COMMAND...: runs the command (a shell function or a program), quietly
check() {
    name=$1
    shift
    printf '%s ... ' "$name"
    if "$@" > "$B/check.log" 2>&1; then echo ok; echo pass >> "$B/checks"
    else echo FAILED; cat "$B/check.log"; echo fail >> "$B/checks"; fi
}
# needs TOOL NAME COMMAND...: the check, or skipped (and said) where TOOL is not installed
needs() {
    tool=$1
    shift
    if command -v "$tool" > /dev/null 2>&1; then check "$@"
    else echo "$1 ... skipped ($tool not installed)"; echo skip >> "$B/checks"; fi
}

mkdir -p "$B/readme"
"$B/tests" --write-logs "$B" > /dev/null
printf '#define NCF_IMPLEMENTATION\n#include "ncf.h"\n' > "$B/impl.c"
cp "$B/impl.c" "$B/impl.cpp"
printf '#include "ncf.h"\n#include <string.h>\nint main(void){ ncf_config c = ncf_config_default(); return strcmp(ncf_version(), NCF_VERSION_STRING) || c.mf_dim != 8; }\n' > "$B/user.c"
# the README's example (its first C block), and the banner's, as a user copies them
awk '/^```c$/ { on = 1; next } on && /^```$/ { exit } on' README.md > "$B/readme_example.c"
{
    printf '#define NCF_IMPLEMENTATION\n#include "ncf.h"\n#include <stdio.h>\nint main(void)\n{\n'
    sed -n '/^   EXAMPLE/,/^   THREAD SAFETY/p' ncf.h | sed '1d;$d;s/^     //'
    echo '}'
} > "$B/example.c"

stale() { src/generate.sh --check; }
two_tu() { $CC $TESTFLAGS -I. "$B/impl.c" "$B/user.c" -o "$B/two_tu" -lm && "$B/two_tu"; }
# (what only compiles is checked by the compiler's front end alone, -fsyntax-only: every error and
# the warnings that need no optimizer; the suite's own build at -O2 has the rest)
SYNTAX="-fsyntax-only -std=c99 $WARN -Werror"
static() { $CC $SYNTAX -I. -DNCF_STATIC "$B/impl.c"; }
cxx() { $CXX -fsyntax-only -std=c++11 $WARN -pedantic -Werror $OMP -I. "$B/impl.cpp"; }
clangxx() { clang++ -fsyntax-only -std=c++11 $WARN -pedantic -Werror -I. "$B/impl.cpp"; }
tcc_two_tu() { tcc -I. "$B/impl.c" "$B/user.c" -o "$B/tcc_two_tu" -lm && "$B/tcc_two_tu"; }
pedantic() { $CC $SYNTAX -pedantic -I. "$B/impl.c"; }
with_clang() { clang -O2 -std=c99 -pedantic $WARN -Werror -I. -c "$B/impl.c" -o "$B/clang.o"; }
no_stdio() { $CC $SYNTAX -I. -DNCF_NO_STDIO "$B/impl.c"; }
allocator() { $CC $SYNTAX -I. '-DNCF_MALLOC(n)=malloc(n)' '-DNCF_REALLOC(p,n)=realloc(p,n)' '-DNCF_FREE(p)=free(p)' "$B/impl.c"; }
all_or_none() { ! $CC $SYNTAX -I. '-DNCF_MALLOC(n)=malloc(n)' "$B/impl.c"; }
banner() { $CC $SYNTAX -I. "$B/example.c"; }
readme() {
    $CC -O2 $OMP $WARN -Werror -I. "$B/readme_example.c" -o "$B/readme/app" -lm && cp "$B/books.csv" "$B/readme/" &&
        [ "$(cd "$B/readme" && ./app | grep -c '^[0-9X]*  -*[0-9.]*$')" = 10 ]
}
no_tls() {
    $CC $TESTFLAGS -Os -I. -DNCF_INFERENCE_ONLY -DNCF_NO_STDIO -c "$B/impl.c" -o "$B/tls.o" &&
        readelf -S "$B/tls.o" | grep -q tbss &&
        $CC $TESTFLAGS -Os -I. -DNCF_NO_TLS -DNCF_INFERENCE_ONLY -DNCF_NO_STDIO -c "$B/impl.c" -o "$B/notls.o" &&
        ! readelf -S "$B/notls.o" | grep -q tbss
}
gitignore() {
    for p in demo demo-mpi; do grep -qx "/$p" .gitignore || { echo "/$p missing"; return 1; }; done
}
# every >>tag banner of ncf.h named in its CONTENTS, in file order
contents() {
    grep -o '^/\* -* >>[a-z-]*' ncf.h | sed 's/.*>>//' > "$B/banners.txt" &&
        sed -n '/^   CONTENTS/,/^   COMPILE-TIME/p' ncf.h | sed 1d | grep -o '>>[a-z-]*' | sed 's/>>//' |
        grep -vx impl > "$B/contents.txt" && cmp "$B/banners.txt" "$B/contents.txt"
}
# no source file of the library past 2,000 lines (a stage that grows past it splits by stage)
sizes() {
    big=$(wc -l src/*.c src/*.h | awk '$2 != "total" && $1 > 2000')
    [ -z "$big" ] || { echo "$big"; return 1; }
}
# the runner's table names every test once, in the order the test files define them
table() {
    for f in $(sed -n 's/^#include "\(tests\/test_[a-z_]*\.c\)"$/\1/p' tests.c); do
        grep -o '^static void test_[a-z0-9_]*(void)' "$f"
    done | sed 's/static void test_//; s/(void)//' > "$B/test_defs.txt" &&
        grep -o '^    {"[a-z0-9_]*", test_[a-z0-9_]*}' tests.c | sed 's/.*, test_//; s/}//' > "$B/test_rows.txt" &&
        cmp "$B/test_defs.txt" "$B/test_rows.txt" &&
        grep -o '^    {"[a-z0-9_]*", test_[a-z0-9_]*}' tests.c | sed 's/    {"//; s/", test_/ /; s/}//' |
        awk '$1 != $2 { exit 1 }'
}
# every public call swept by the allocation-failure test or checked to allocate nothing
swept() {
    awk '/^NCFDEF/ { l = $0; if (l !~ /[(]/) { getline n; l = l " " n }; if (match(l, /ncf_[a-z0-9_]*[ ]*[(]/)) print substr(l, RSTART, RLENGTH) }' ncf.h |
        tr -d ' (' | sort -u > "$B/api.txt" &&
        cat tests/test_*.c | sed -n '/ SWEPT\[\] = {/,/};/p; /^static const char ALLOCATE_NOTHING/,/;$/p; /^static const char MPI_CALLS/,/;$/p' |
        grep -o '"[^"]*"' | grep -o 'ncf_[a-z0-9_]*' | sort -u > "$B/swept.txt" && diff "$B/api.txt" "$B/swept.txt"
}
no_training() {
    $CC $TESTFLAGS -Os -I. -DNCF_INFERENCE_ONLY -c "$B/impl.c" -o "$B/infer.o" &&
        ! nm "$B/infer.o" | grep -q 'ncf_train_epoch\|ncf_load_dataset\|ncf_update'
}
# the Python package's ctypes signatures against the C prototypes they call
python_signatures() { python3 python/tests/signatures.py ncf.h python/ncf/_shim.c python/ncf/__init__.py; }
snprintf_checked() {
    tests/snprintf_check.sh demo.c src/*.c src/*.h tests/*.h python/ncf/_shim.c device/*.c web/*.c fuzz/*.c
}

check "ncf.h is what src/ generates (src/generate.sh)" stale
check "two translation units" two_tu
check "NCF_STATIC" static
check "C++11 strict ($CXX)" cxx
needs clang++ "C++11 strict (clang++)" clangxx
needs tcc "tcc" tcc_two_tu
check "-std=c99 -pedantic" pedantic
needs clang "clang" with_clang
check "NCF_NO_STDIO" no_stdio
check "custom allocator" allocator
check "allocator hooks all or none" all_or_none
check "the banner's example compiles" banner
check "README: its example built with cc -O2 -fopenmp app.c -lm trains and serves" readme
check "NCF_NO_TLS leaves no thread-local storage (what bare metal gets by default)" no_tls
check ".gitignore names every program the Makefile builds outside $B" gitignore
check "ncf.h's CONTENTS lists every section banner in file order" contents
check "no file of src/ is over 2,000 lines" sizes
check "tests.c's table lists every test once in the order the test files define them" table
check "every public call is in the allocation-failure sweep or checked to allocate nothing" swept
check "NCF_INFERENCE_ONLY has no training code" no_training
check "every snprintf of a string checks its result or says why it fits" snprintf_checked
needs python3 "the Python package's C signatures match the C prototypes" python_signatures

$CC $TESTFLAGS $OMP demo.c -o "$B/demo_check" -lm && tests/demo_checks.sh "$B" "$B/demo_check"

mkdir -p "$B/serve"
awk '/^<!-- serve.c: built and run by make test -->$/ { on = 1; next } on && /^```c$/ { c = 1; next } c && /^```$/ { exit } c' \
    docs/serving.md > "$B/serve/serve.c"
printf 'user 276730\nitems 034545104X,0440213321\nsimilar 034545104X\nuser nobody\nuser 276731\n' > "$B/serve/requests.txt"
cmake_package() { tests/cmake_check.sh "$B"; }
serve_loop() {
    $CC -O2 $OMP -pthread $WARN -Werror -I. "$B/serve/serve.c" -o "$B/serve/serve" -lm &&
        "$B/serve/serve" "$B/books.ncf" 1 < "$B/serve/requests.txt" > "$B/serve/1.txt" &&
        "$B/serve/serve" "$B/books.ncf" 4 < "$B/serve/requests.txt" > "$B/serve/4.txt" &&
        cmp "$B/serve/1.txt" "$B/serve/4.txt" && [ "$(grep -c '^[a-z]* [0-9X,]*: [0-9X]* [(]' "$B/serve/1.txt")" = 4 ] &&
        grep -q "^user nobody: error: unknown user 'nobody'" "$B/serve/1.txt"
}
needs cmake "CMake: the README's app by add_subdirectory, FetchContent, find_package, ncf::impl (static, shared) and pkg-config; a C++ project's by find_package" \
    cmake_package
check "docs/serving.md: its threaded request loop built as its comment says answers the same on 1 and 4 threads" \
    serve_loop

why=
command -v node > /dev/null || why="node not installed"
[ -n "$why" ] || printf 'int main(void){return 0;}' | clang --target=wasm32-wasi -x c - -o /dev/null 2> /dev/null ||
    why="no wasm32-wasi toolchain: tests/needs.sh test installs it"
if [ -n "$why" ]; then
    for m in books s3; do
        echo "ncf.wasm under Node (WASI) answers as the host for every user of $m.ncf ... skipped ($why)"
        echo skip >> "$B/checks"
    done
else
    make --no-print-directory "$B/web/ncf.wasm" "$B/web/host" > /dev/null && web/check.sh "$B" "$B/books.ncf" "$B/s3.ncf"
fi
$CC -Os -std=c99 -I. -c "$B/impl.c" -o "$B/full.o" &&
    echo "object code at -Os: NCF_INFERENCE_ONLY $(size "$B/infer.o" | awk 'NR==2{print $1}') bytes," \
        "full library $(size "$B/full.o" | awk 'NR==2{print $1}') bytes"
p=$(grep -c pass "$B/checks") f=$(grep -c fail "$B/checks") s=$(grep -c skip "$B/checks")
if [ "$s" -gt 0 ]; then echo "$p passed, $f failed, $s skipped"; else echo "$p passed, $f failed"; fi
[ "$f" -eq 0 ]
