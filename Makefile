# ncf.h - build the demo, the tests and the benchmarks (make help lists the targets).
#   make demo && ./demo     train NeuMF on built-in synthetic data
#   make test               every claim once, in minutes: the suite under ASan+UBSan, the header built every way, the demo, Python
#   make check              the rest of the matrix (.ci/run: make test, then make check): ISA levels, TSan, analyzers, MPI, wine, devices, web, fuzz
#   make header             ncf.h from src/ (make test fails when it is stale)
#   make bench [BASE=REV]   benchmarks (native build), also on a busy machine; REV: a baseline
#   make bench-doc          docs/performance.md's figures from the last make bench's summary
#   make bench-seconds NCF_DATA=DIR   seconds to a good model on the paper's ml-1m split (in make bench)
#   make bench-ab BASE=REV  this ncf.h against REV's in one process, in turns: training, scoring (in make bench)
#   make cross              the suite on aarch64, armhf and big-endian s390x under qemu
#   make windows            the suite and a demo run, cross-built with MinGW-w64, under wine
#   make fuzz               libFuzzer on the model reader and each ratings parser
#   make wasm               ncf.wasm (the serving half for WebAssembly) and the page in build/web
#   make web-test           the page driven in headless Chromium, its answers against the host's
#   make device             the device example on Cortex-M4F, Cortex-M0, RV32IMAC and RV32IMAFC under qemu
#   make demo-mpi           the demo over MPI ranks: mpirun -np P ./demo-mpi --data ...
#   make test-mpi           the MPI tests on 1-16 ranks, and demo-mpi against the demo
#   make bench-mpi          training on 2 ranks against 1; 1, 2, 4 ranks: model replicated or in shards, log read in shares or whole
#   make paper-f8 NCF_DATA=DIR   the paper's pre-training recipe (also f16, f32, f64)
#   make coverage           the suite built with gcov: the share of ncf.h's lines it runs
#   make analyze            cppcheck, clang's analyzer and clang-tidy on the library: no new finding
#   make format-check       the C sources laid out as .clang-format says (make format applies it)
#   make clean              removes what any target built
# Options: NO_OMP=1 (no OpenMP), NATIVE=1 (-march=native), CC=clang.
# NCF_DATA=DIR: downloaded data (DIR/ml-1m-ncf/ml-1m.*, DIR/ml-100k/u.data) for the tests that
# use it and the paper's recipe; PEERS=DIR: torch_neumf.py (and peak.c, beside the peak) for make bench.
# Targets that need more than a C compiler install it with tests/needs.sh (root, apt-get).

CC      ?= cc
CXX     ?= g++
OPT     ?= -O3 -ffp-contract=fast -fno-math-errno
WARN    := -Wall -Wextra -Wshadow
BUILD   := build
# Everything any target builds is under $(BUILD), but the programs the README runs from here:
# make clean removes both, and make test checks that .gitignore names each.
PROGRAMS := demo demo-mpi
TEST_SRC := tests.c $(wildcard tests/test_*.c) tests/harness.h tests/fixture.h ncf.h
NCF_DATA ?=
export NCF_DATA


ifeq ($(NO_OMP),1)
OMP :=
else
OMP := $(shell echo 'int main(void){return 0;}' | $(CC) -fopenmp -x c - -o /dev/null 2>/dev/null && echo -fopenmp)
endif
ifeq ($(NATIVE),1)
OPT += -march=native
endif

CFLAGS_ALL = $(OPT) -std=c99 $(WARN) $(OMP) $(CFLAGS)
TESTFLAGS  = -O2 -g -std=c99 $(WARN) -Werror $(CFLAGS)

.PHONY: all help header demo test python format format-check bench bench-doc bench-load bench-small bench-ab bench-seconds clean check isa-matrix cross windows fuzz device wasm web-test coverage \
        analyze \
        paper-f8 paper-f16 paper-f32 paper-f64 demo-mpi test-mpi bench-mpi

help:
	@sed -n 's/^#   make /make /p' Makefile

# ncf.h is generated from src/ (src/generate.sh); make test fails when it is stale.
header:
	src/generate.sh

all: demo

demo: demo.c ncf.h
	$(CC) $(CFLAGS_ALL) demo.c -o demo -lm

$(BUILD):
	mkdir -p $(BUILD)

$(BUILD)/tests: $(TEST_SRC) | $(BUILD)
	$(CC) $(TESTFLAGS) $(OMP) tests.c -o $@ -lm

$(BUILD)/tests_noomp: $(TEST_SRC) | $(BUILD)
	$(CC) $(TESTFLAGS) tests.c -o $@ -lm

# built as the demo and bench are, so the widest vector paths are tested too
$(BUILD)/tests_native: $(TEST_SRC) | $(BUILD)
	$(CC) $(TESTFLAGS) $(OMP) -O3 -ffp-contract=fast -fno-math-errno -march=native tests.c -o $@ -lm

# ThreadSanitizer on the tests where threads share a model (without OpenMP, whose runtime
# TSan does not see into)
$(BUILD)/tests_tsan: $(TEST_SRC) | $(BUILD)
	$(CC) $(TESTFLAGS) -O1 -fsanitize=thread tests.c -o $@ -lm

# the fixture: written by a full build, checked by the inference-only build (what a device
# ships: models, predict, recommend and load only) and by other CPUs and Windows
$(BUILD)/tests_fixture: tests/fixture.c tests/harness.h tests/fixture.h ncf.h | $(BUILD)
	$(CC) $(TESTFLAGS) $(OMP) tests/fixture.c -o $@ -lm
$(BUILD)/tests_infer: tests/fixture.c tests/harness.h tests/fixture.h ncf.h | $(BUILD)
	$(CC) $(TESTFLAGS) -Os -DNCF_INFERENCE_ONLY tests/fixture.c -o $@ -lm

$(BUILD)/tests_asan: $(TEST_SRC) | $(BUILD)
	$(CC) $(TESTFLAGS) $(OMP) -O1 -fsanitize=address,undefined -fno-sanitize-recover=all \
	  -fno-omit-frame-pointer tests.c -o $@ -lm

# The ISA matrix (tests/isa_matrix.sh): the suite built -O3 with contraction for each
# instruction-set level this CPU runs, the others named with the reason.
isa-matrix: | $(BUILD)
	@CC="$(CC)" OMP="$(OMP)" TESTFLAGS="$(TESTFLAGS)" tests/isa_matrix.sh $(BUILD)

# Static analysis of the library as the demo and the Python package build it (all of ncf.h's
# implementation but the MPI layer): cppcheck, then clang --analyze and clang-tidy
# (tests/analyze.sh); any finding fails, but the analyzer's false positives that
# tests/analyze.known lists and explains.
CPPCHECK = cppcheck --std=c99 --enable=warning,portability --inline-suppr -q --error-exitcode=1 -D__GNUC__ -U_WIN32 \
           --max-configs=1 -I.
analyze:
	@tests/needs.sh analyze
	$(CPPCHECK) demo.c
	$(CPPCHECK) python/ncf/_shim.c
	@echo "analyze: cppcheck found nothing"
	@tests/analyze.sh

# The C sources' layout (.clang-format, clang-format 14): format-check fails on any line it would
# change, format applies it.
FORMATTED = ncf.h demo.c tests.c $(wildcard src/*.c src/*.h tests/*.c tests/*.h python/ncf/*.c device/*.c fuzz/*.c web/*.c)
format-check:
	@tests/needs.sh format
	@clang-format --dry-run -Werror $(FORMATTED) && echo "format-check: $(words $(FORMATTED)) files laid out as .clang-format says"
format:
	@tests/needs.sh format
	clang-format -i $(FORMATTED)

# Line coverage of ncf.h by the main suite (gcov, -O0 so every line maps to code); the per-line
# counts are left in $(BUILD)/coverage/ncf.h.gcov.
coverage: | $(BUILD)
	@rm -rf $(BUILD)/coverage && mkdir -p $(BUILD)/coverage
	$(CC) -O0 -g --coverage -std=c99 $(WARN) -Werror $(OMP) tests.c -o $(BUILD)/coverage/tests -lm
	@$(BUILD)/coverage/tests > $(BUILD)/coverage/tests.log 2>&1; tail -n 1 $(BUILD)/coverage/tests.log
	@gcov -o $(BUILD)/coverage $(BUILD)/coverage/tests.gcda > $(BUILD)/coverage/gcov.txt 2>&1 && \
	  for f in ncf.h tests.c harness.h fixture.h; do mv -f $$f.gcov $(BUILD)/coverage/ 2>/dev/null; done; \
	  grep -A1 "^File 'ncf.h'" $(BUILD)/coverage/gcov.txt | sed -n 2p | sed 's/^/ncf.h: /'

# The Python package (python/): its library built in place by the system compiler, and its
# tests, a suite of make test (skipped, and said, without python3 and NumPy).
# (the first python3 that imports NumPy: Debian's, when another python3 comes first on PATH)
PYTHON ?= $(shell for p in python3 /usr/bin/python3; do $$p -c 'import numpy' 2>/dev/null && { echo $$p; exit 0; }; done; echo python3)
python: python/ncf/_ncf.so
# (the header beside the shim, as an sdist carries it: python/setup.py copies it too)
python/ncf/ncf.h: ncf.h
	cp ncf.h $@
python/ncf/_ncf.so: python/ncf/_shim.c python/ncf/ncf.h
	$(CC) $(OPT) -std=c99 $(WARN) -Werror -fPIC -shared $(OMP) -Ipython/ncf python/ncf/_shim.c -o $@ -lm
# (make check's: the package's library under AddressSanitizer and UBSan)
$(BUILD)/python_asan/_ncf.so: python/ncf/_shim.c python/ncf/ncf.h | $(BUILD)
	@mkdir -p $(BUILD)/python_asan
	$(CC) -O1 -g -std=c99 $(WARN) -Werror -fPIC -shared $(OMP) -fsanitize=address,undefined \
	  -fno-sanitize-recover=undefined -fno-omit-frame-pointer -Ipython/ncf python/ncf/_shim.c -o $@ -lm


# make test: every claim once, in minutes. ncf.h against src/, the header built every way a
# user builds it and the demo run as a user runs it (tests/header_checks.sh), the suite under
# ASan+UBSan (its allocation-failure sweep, single-threaded, beside the rest) with its
# determinism hash equal to the build without OpenMP, the inference-only build on the full
# build's models, and the Python package; the last line sums them up (tests/suites.sh).
TEST_BUILDS := $(BUILD)/tests $(BUILD)/tests_asan $(BUILD)/tests_noomp $(BUILD)/tests_infer $(BUILD)/tests_fixture \
               python/ncf/_ncf.so
# (the tests whose claims are about threads and timing, where ASan finds nothing and runs 5-8x
# slower: make test runs them in the plain build, make check in every build)
TIMING_TESTS := preempted_thread thread_0_alone memory_bounded_by_the_model_and_threads
test:
	@$(MAKE) --no-print-directory -j2 $(TEST_BUILDS)
	@rm -f $(BUILD)/isa.txt
	@$(BUILD)/tests_noomp --print-hash > $(BUILD)/noomp.hash
	@rm -rf $(BUILD)/fixture && mkdir -p $(BUILD)/fixture && $(BUILD)/tests_fixture --write $(BUILD)/fixture
	@CC="$(CC)" CXX="$(CXX)" OMP="$(OMP)" TESTFLAGS="$(TESTFLAGS)" tests/suites.sh $(BUILD) \
	  "& tests_asan every_failed_allocation" "./tests/header_checks.sh $(BUILD)" \
	  "tests_asan --expect-hash $(BUILD)/noomp.hash --except every_failed_allocation $(TIMING_TESTS:%=--except %)" \
	  "tests $(TIMING_TESTS)" "tests_infer --check $(BUILD)/fixture" "./python/tests/run.sh $(PYTHON) $(BUILD)"

# make check: the rest of the matrix, after make test (.ci/run runs both). The suite without
# sanitizers and with the hash, built as the demo is (-O3 -march=native) and at each ISA level,
# under clang's UBSan and under TSan where threads share a model, the Python package's contract
# and thousands of random calls on its library built with ASan and UBSan; then the layout, the
# analyzers, the MPI suite, Windows under wine, the devices under qemu, the page in Chromium and
# the fuzzers for a few seconds each. Each step installs what it needs (tests/needs.sh).
CHECK_BUILDS := $(BUILD)/tests $(BUILD)/tests_noomp $(BUILD)/tests_native $(BUILD)/tests_tsan $(BUILD)/tests_clang_ubsan \
                $(BUILD)/python_asan/_ncf.so
check:
	@$(MAKE) --no-print-directory -j2 $(CHECK_BUILDS)
	@$(MAKE) --no-print-directory isa-matrix
	@$(BUILD)/tests_noomp --print-hash > $(BUILD)/noomp.hash
	@CC="$(CC)" tests/suites.sh $(BUILD) "tests --expect-hash $(BUILD)/noomp.hash" tests_native $$(cat $(BUILD)/isa.list) \
	  tests_clang_ubsan "tests_tsan serving_threads_answer_as_one_thread" \
	  "./python/tests/run.sh $(PYTHON) $(BUILD) $(BUILD)/python_asan/_ncf.so"
	$(MAKE) --no-print-directory format-check
	tests/cmake_check.sh $(BUILD) every
	$(MAKE) --no-print-directory analyze
	$(MAKE) --no-print-directory test-mpi
	$(MAKE) --no-print-directory windows
	$(MAKE) --no-print-directory device
	$(MAKE) --no-print-directory web-test
	$(MAKE) --no-print-directory fuzz FUZZ_SECONDS=$(CHECK_FUZZ_SECONDS)
CHECK_FUZZ_SECONDS ?= 10

$(BUILD)/tests_clang_ubsan: $(TEST_SRC) | $(BUILD)
	@tests/needs.sh test
	clang -O1 -g -std=c99 $(WARN) -Werror -fsanitize=address,undefined -fno-sanitize-recover=all \
	  -fno-omit-frame-pointer tests.c -o $@ -lm

# One JSON line per case (tests/bench.c, -march=native), then the load times, the machine's
# FMA peak (bench peak; PEERS/peak.c's beside it, which with AVX2 alone keeps chains on the
# stack and reads low) and, when torch imports, the PyTorch peer (PEERS/torch_neumf.py) on
# the same configurations, all in this one run.
PEERS ?=
PY    ?= /usr/bin/python3
CASES := "paper 1 lazy" "paper 2 lazy" "paper 2 dense" "mlperf 1 lazy" "mlperf 2 lazy" "mlperf 1 dense" "mlperf 2 dense"
TORCH_PAPER  := --users 6040 --items 3706 --positives 994169 --mf_dim 8 --layers 64,32,16,8 --batch 256 --lr 0.001 --eval_negs 100 --epochs 1 --max_steps 2000 --threads 2
TORCH_MLPERF := --users 138493 --items 26744 --positives 2000000 --mf_dim 64 --layers 256,256,128,64 --batch 2048 --lr 0.0005 --eval_negs 999 --eval_users 500 --threads 2

# make bench NCF_DATA=DIR adds seconds to a good model on the paper's ml-1m split
# (docs/performance.md): wall time to the first validation-chosen epoch past the threshold,
# with a -march=native demo, and with PEERS=DIR EASE^R's fit on the same split.
SECONDS_NEUMF := --num_neg 16
SECONDS_MF := --model mf --num_factors 128 --optimizer sgd --batch_size 1 --learning_rate 0.0314 --lr_decay \
	--train_epochs 18 --mf_regularization 0.0018 --num_neg 8 --init_sd 0.1 --seeds 4

# make bench BASE=REV benches commit REV too (its own ncf.h and benchmarks, built the same
# way; before tests/bench.c existed they were tests.c's --bench modes), each case right after
# ours, as the baseline measured in the same run. The contended cases run beside a busy loop
# that the bench starts on one core and stops.
BASE ?=
CONTENDED := "paper 1 lazy" "paper 2 lazy" "mlperf 1 lazy" "mlperf 2 lazy"
BENCHFLAGS = -O3 -ffp-contract=fast -fno-math-errno -march=native -std=c99 $(WARN) $(OMP) $(CFLAGS)
BENCHCC = $(CC) $(BENCHFLAGS)
# (its own name: only this rule builds it, always with BENCHFLAGS, once for bench and bench-load)
BENCH := $(BUILD)/bench_native
$(BENCH): tests/bench.c tests/harness.h ncf.h | $(BUILD)
	$(BENCHCC) tests/bench.c -o $@ -lm
bench: $(BENCH)
	@BENCH=$(BENCH) BENCHCC="$(BENCHCC)" BASE="$(BASE)" CASES='$(CASES)' CONTENDED='$(CONTENDED)' PEERS="$(PEERS)" \
	  PY="$(PY)" PYTHON="$(PYTHON)" CC="$(CC)" TORCH_PAPER="$(TORCH_PAPER)" TORCH_MLPERF="$(TORCH_MLPERF)" \
	  tests/bench.sh $(BUILD)

# docs/performance.md's current figures: the last make bench's summary, as printed
bench-doc:
	@tests/bench_doc.sh $(BUILD) docs/performance.md

# Seconds to a good model (NCF_DATA=DIR; in make bench): see SECONDS_NEUMF above.
bench-seconds: | $(BUILD)
	@if [ -n "$(NCF_DATA)" ] && [ -f $(NCF_DATA)/ml-1m-ncf/ml-1m.train.rating ]; then \
	  $(BENCHCC) demo.c -o $(BUILD)/demo_native -lm || exit 1; \
	  tests/seconds.sh neumf_f8 0.69 $(BUILD)/demo_native --data $(NCF_DATA)/ml-1m-ncf/ml-1m $(SECONDS_NEUMF) | tee -a $(BUILD)/bench.jsonl; \
	  tests/seconds.sh mf_128_4_seeds 0.73 $(BUILD)/demo_native --data $(NCF_DATA)/ml-1m-ncf/ml-1m $(SECONDS_MF) | tee -a $(BUILD)/bench.jsonl; \
	  if [ -n "$(PEERS)" ] && [ -f $(PEERS)/ease.py ] && $(PY) -c 'import numpy' 2>/dev/null; then \
	    $(PY) $(PEERS)/ease.py $(NCF_DATA)/ml-1m-ncf/ml-1m --lambdas 800 | sed -n 's/.*lambda \([0-9.]*\): HR@10 \([0-9.]*\) NDCG@10 \([0-9.]*\) (fit \([0-9.]*\) s).*/{"case":"seconds","model":"ease","lambda":\1,"test_hr":\2,"fit_s":\4}/p' | tee -a $(BUILD)/bench.jsonl; \
	  else echo "(EASE^R's fit skipped: PEERS=DIR with ease.py, and NumPy)"; fi; \
	else echo "(seconds to a good model skipped: NCF_DATA=DIR with ml-1m-ncf/, docs/data.md)"; fi

# Loading a 20M-line ml-20m-sized ratings.csv (min_ratings 20), each load in a fresh process
# (tests/load.c) for its time and peak memory: integer ids, the same with every id a
# 16-character string, and (BASE=REV) REV's loader on the integer file; 3 rounds in turn,
# medians.
bench-load: $(BENCH)
	$(BENCHCC) -I. tests/load.c -o $(BUILD)/load_ours -lm
	@if [ -n "$(BASE)" ]; then rm -rf $(BUILD)/base_load && mkdir -p $(BUILD)/base_load && git archive $(BASE) ncf.h | tar -x -C $(BUILD)/base_load && \
	  $(BENCHCC) -I$(BUILD)/base_load tests/load.c -o $(BUILD)/load_base -lm; fi
	@$(BENCH) write-ratings $(BUILD)/r_int.csv int && $(BENCH) write-ratings $(BUILD)/r_text.csv text
	@for r in 1 2 3; do \
	  for run in "ours int r_int" "ours text r_text" "base int r_int"; do set -- $$run; \
	    [ -x $(BUILD)/load_$$1 ] || continue; \
	    printf '{"case":"load_file","build":"%s","ids":"%s",' $$1 $$2; $(BUILD)/load_$$1 $(BUILD)/$$3.csv || exit 1; \
	  done; done | tee -a $(BUILD)/bench.jsonl
	@rm -f $(BUILD)/r_int.csv $(BUILD)/r_text.csv

# Scoring a small model (tests/small.c), built against this ncf.h and BASE's, in turns.
bench-small: $(BENCH)
	$(BENCHCC) -I. tests/small.c -o $(BUILD)/small_ours -lm
	@if [ -n "$(BASE)" ]; then rm -rf $(BUILD)/base_small && mkdir -p $(BUILD)/base_small && git archive $(BASE) ncf.h | tar -x -C $(BUILD)/base_small && \
	  $(BENCHCC) -I$(BUILD)/base_small tests/small.c -o $(BUILD)/small_base -lm; fi
	@for r in 1 2; do for b in ours base; do [ -x $(BUILD)/small_$$b ] || continue; \
	  printf '{"case":"small","build":"%s",' $$b; $(BUILD)/small_$$b || exit 1; done; done | tee -a $(BUILD)/bench.jsonl

# make bench-ab BASE=REV (in make bench with BASE): this ncf.h against REV's in one process,
# in turns of a fifth of a second, 41 rounds a case (tests/ab.c): on a VM whose speed moves
# within seconds, the median of the rounds' ratios is the figure that repeats. paper-positive:
# ours on an epoch shuffled by positive (ncf_sampler.by_positive), the base in its default order.
AB_CASES := "paper-train 1" "paper-train 2" "paper-positive 1" "paper-positive 2" "top10 1" "full 1" "mlperf-train 2"
AB_ROUNDS ?= 41
bench-ab: | $(BUILD)
	@[ -n "$(BASE)" ] || { echo "make bench-ab needs BASE=REV"; exit 2; }
	@rm -rf $(BUILD)/ab_base && mkdir -p $(BUILD)/ab_base && git show $(BASE):ncf.h > $(BUILD)/ab_base/ncf.h
	$(BENCHCC) -DAB_LIB -DAB_OURS -fPIC -shared -fvisibility=hidden -I. tests/ab.c -o $(BUILD)/ab_ours.so -lm
	$(BENCHCC) -DAB_LIB -fPIC -shared -fvisibility=hidden -I$(BUILD)/ab_base tests/ab.c -o $(BUILD)/ab_base.so -lm
	$(BENCHCC) tests/ab.c -o $(BUILD)/ab -ldl
	@for c in $(AB_CASES); do $(BUILD)/ab $(BUILD)/ab_ours.so $(BUILD)/ab_base.so $$c $(AB_ROUNDS) || exit 1; done | \
	  tee -a $(BUILD)/bench.jsonl

# Cross-builds run under qemu-user: the model files this machine's build writes are
# read back there (s390x is big-endian), then the whole suite runs.
CROSS := aarch64-linux-gnu:aarch64 arm-linux-gnueabihf:arm s390x-linux-gnu:s390x
cross: $(BUILD)/tests_fixture | $(BUILD)
	@tests/needs.sh cross
	@rm -rf $(BUILD)/fixture && mkdir -p $(BUILD)/fixture && $(BUILD)/tests_fixture --write $(BUILD)/fixture
	@set -e; for t in $(CROSS); do tr=$${t%%:*}; q=qemu-$${t#*:}; \
	  echo "== $$tr"; $$tr-gcc $(TESTFLAGS) -fopenmp tests.c -o $(BUILD)/tests_$$tr -lm; \
	  $$tr-gcc $(TESTFLAGS) -fopenmp tests/fixture.c -o $(BUILD)/fixture_$$tr -lm; \
	  $$q -L /usr/$$tr $(BUILD)/fixture_$$tr --check $(BUILD)/fixture | tail -n 2; \
	  $$q -L /usr/$$tr $(BUILD)/tests_$$tr > $(BUILD)/cross_$$tr.log 2>&1 || { cat $(BUILD)/cross_$$tr.log; exit 1; }; \
	  tail -n 1 $(BUILD)/cross_$$tr.log; done

# Windows: the suite, the fixture and a demo --save_best run, cross-built with MinGW-w64
# (OpenMP linked in) and run under wine, and the README's example with its MinGW line.
MINGW := x86_64-w64-mingw32-gcc
WINE  := WINEDEBUG=-all wine
# the README's example (its first C block), as a user copies it
$(BUILD)/readme_example.c: README.md | $(BUILD)
	@awk '/^```c$$/ { on = 1; next } on && /^```$$/ { exit } on' README.md > $@
windows: $(BUILD)/tests_fixture $(BUILD)/readme_example.c $(BUILD)/tests | $(BUILD)
	@tests/needs.sh windows
	$(MINGW) $(TESTFLAGS) -fopenmp tests.c -o $(BUILD)/tests.exe -static -lm
	$(MINGW) $(TESTFLAGS) -fopenmp tests/fixture.c -o $(BUILD)/fixture.exe -static -lm
	$(MINGW) $(OPT) -std=c99 $(WARN) -Werror -fopenmp demo.c -o $(BUILD)/demo.exe -static -lm
	@rm -rf $(BUILD)/fixture && mkdir -p $(BUILD)/fixture && $(BUILD)/tests_fixture --write $(BUILD)/fixture
	@$(WINE) $(BUILD)/fixture.exe --check $(BUILD)/fixture 2>/dev/null | tail -n 2
	@# (the prefix made: one wine server kept for every run below, since a run that starts while
	@# the last one's server shuts down can fail before main, printing nothing)
	@WINEDEBUG=-all wineserver -p 60 2>/dev/null || true
	@mkdir -p $(BUILD)/readme
	$(MINGW) -O2 -fopenmp -I. $(BUILD)/readme_example.c -o $(BUILD)/readme/app.exe -static -lm
	@$(BUILD)/tests --write-logs $(BUILD)/readme > /dev/null && cd $(BUILD)/readme && \
	  [ "$$($(WINE) ./app.exe 2>/dev/null | tr -d '\r' | grep -c '^[0-9X]*  -*[0-9.]*$$')" = 10 ] && \
	  echo "README: its example built with x86_64-w64-mingw32-gcc -O2 -fopenmp app.c -static -lm trains and serves ... ok"
	@rm -f $(BUILD)/checks; WINEDEBUG=-all ONLY=save_best tests/demo_checks.sh $(BUILD) wine $(BUILD)/demo.exe; \
	! grep -q fail $(BUILD)/checks
	@$(WINE) $(BUILD)/tests.exe > $(BUILD)/windows.log 2>/dev/null || { cat $(BUILD)/windows.log; exit 1; }; \
	tail -n 1 $(BUILD)/windows.log

# WebAssembly (web/): ncf.wasm is ncf.h's serving half (web/ncf_web.c: the inference-only
# build, the model read in place, fold-in) for wasm32-wasi, built with Debian's clang, lld,
# wasi-libc and clang's wasm32 runtime (installed when root with apt-get); $(BUILD)/web holds
# it with the page (index.html) and a model the demo trains. make test runs the module under
# Node's WASI when node is there; make web-test drives the page in headless Chromium
# (Debian's chromium, playwright-core from npm), checks its answers against the host's and
# takes a screenshot.
WASM_CC := clang --target=wasm32-wasi
WASM_TOOLCHAIN = printf 'int main(void){return 0;}' | $(WASM_CC) -x c - -o /dev/null 2>/dev/null
$(BUILD)/web/ncf.wasm: web/ncf_web.c ncf.h
	@mkdir -p $(BUILD)/web
	$(WASM_CC) -O2 -msimd128 -std=c99 $(WARN) -Werror -mexec-model=reactor -Wl,--strip-all web/ncf_web.c -o $@
$(BUILD)/web/host: web/ncf_web.c ncf.h
	@mkdir -p $(BUILD)/web
	$(CC) -O2 -std=c99 $(WARN) -Werror -DWEB_HOST_MAIN web/ncf_web.c -o $@ -lm
wasm: demo | $(BUILD)
	@tests/needs.sh wasm
	@$(MAKE) --no-print-directory $(BUILD)/web/ncf.wasm $(BUILD)/web/host
	cp web/index.html web/ncf.js $(BUILD)/web/
	@[ -f $(BUILD)/web/model.ncf ] || ./demo --train_epochs 2 --save $(BUILD)/web/model.ncf > /dev/null
	@echo "ncf.wasm: $$(wc -c < $(BUILD)/web/ncf.wasm) bytes. The page: python3 -m http.server -d $(BUILD)/web, then open http://localhost:8000"
	@doc=$$(grep '^| `ncf.wasm`' docs/devices.md | tr -d ',' | grep -o '[0-9]* bytes' | grep -o '[0-9]*'); \
	  [ "$$doc" = "$$(wc -c < $(BUILD)/web/ncf.wasm)" ] || { echo "docs/devices.md says ncf.wasm is $$doc bytes"; exit 1; }
web-test: wasm
	@tests/needs.sh web
	@[ -d $(BUILD)/web/npm/node_modules/playwright-core ] || \
	  npm install --no-save --no-audit --no-fund --prefix $(BUILD)/web/npm playwright-core > /dev/null
	@rm -f $(BUILD)/checks; web/check.sh $(BUILD) $(BUILD)/web/model.ncf; ! grep -q fail $(BUILD)/checks
	node web/browser_test.mjs $(BUILD)/web $(BUILD)/web/host $(BUILD)/web/npm

# The device example (device/): a NeuMF factors 8 over 1,000 users x 2,000 items, trained
# here by device/gen.c, turned into C arrays (float32 and int8) by demo --export_c, read in
# place and served from a static workspace on a Cortex-M4F (hard float, qemu's mps2-an386), as
# Cortex-M0 code (soft float; qemu's mps2-an385 runs it on its Cortex-M3), and on RV32IMAC and
# RV32IMAFC (qemu's riscv32 virt), output over semihosting. device/run.sh builds and runs
# each, checks its top-10 lists against this machine's and prints heap, workspace, stack,
# instructions per recommendation and per open (qemu -icount), and ncf.h's code size (from
# the link map). Installs the toolchains when root with apt-get.
ALL_DEVICE_CORES := m4 m0 rv32imac rv32imafc
DEVICE_CORES := $(ALL_DEVICE_CORES)
# MPI (tests/mpi.c, built with Open MPI's mpicc). test-mpi runs the MPI tests on 1 rank (it
# writes the reference models), then 2, 3 (an uneven split), 4, 5 and 16 (every group its own
# rank), each checking its model against 1 rank's bit for bit and resuming a 2-rank
# checkpoint, whole on every rank and in shards (each rank its users' rows, saved to the same
# file byte for byte); 2 ranks of 2 threads; 3 and 5 ranks under ASan+UBSan (leaks are counted by the
# tests' allocator: Open MPI's own unloaded plugins leave blocks LeakSanitizer cannot name);
# and a build of 12 groups (a fold tree that is not a power of two) on 1, 2, 5 and 12 ranks.
# Then tests/mpi_checks.sh runs demo-mpi against the demo.
MPIRUN = mpirun --oversubscribe $(if $(filter 0,$(shell id -u)),--allow-run-as-root)
MPIDIR = $(BUILD)/mpi
MPI_SRC = tests/mpi.c tests/harness.h ncf.h
demo-mpi: demo.c ncf.h
	@tests/needs.sh mpi
	mpicc -DNCF_MPI $(CFLAGS_ALL) demo.c -o demo-mpi -lm

test-mpi: demo | $(BUILD)
	@tests/needs.sh mpi
	mpicc -DNCF_MPI $(TESTFLAGS) $(OMP) tests/mpi.c -o $(BUILD)/tests_mpi -lm
	mpicc -DNCF_MPI $(TESTFLAGS) -O1 -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer \
	  tests/mpi.c -o $(BUILD)/tests_mpi_asan -lm
	mpicc -DNCF_MPI -DNCF_MPI_GROUPS=12 $(TESTFLAGS) $(OMP) tests/mpi.c -o $(BUILD)/tests_mpi_g12 -lm
	mpicc -DNCF_MPI $(CFLAGS_ALL) -Werror demo.c -o demo-mpi -lm
	@tests/mpi_suite.sh $(BUILD) $(MPIRUN)

# Training over 2 ranks of one thread each against rank 0 alone and against one process
# without MPI (the MLPerf config, lazy Adam, ml-20m-sized synthetic data): 7 rounds in turn
# in one job, medians, the median of the rounds' ratios, and the bytes a rank sends per step.
# Then the same training on 1, 2 and 4 ranks (4 share the 2 cores of the project's VM) on
# ml-20m's shape with 4x its users and 8x its items (554k users, 214k items, 79M positives),
# the model replicated on every rank and in shards: the time of a step, the bytes a rank sends
# and each rank's memory, now and at its peak; last, those positives written as a 1 GB log and
# read by each rank's share (ncf_mpi_load_dataset) or whole, model in shards (about 25 minutes).
bench-mpi: | $(BUILD)
	@tests/needs.sh mpi
	mpicc -DNCF_MPI $(BENCHFLAGS) tests/mpi.c -o $(BUILD)/tests_mpi_bench -lm
	@grep -m1 'model name' /proc/cpuinfo
	OMP_NUM_THREADS=1 $(MPIRUN) -np 2 $(BUILD)/tests_mpi_bench --bench | tee $(BUILD)/bench-mpi.jsonl
	@for p in 1 2 4; do for model in replicated shards; do \
	  OMP_NUM_THREADS=1 $(MPIRUN) -np $$p $(BUILD)/tests_mpi_bench --scale $$model 4 8; done; done \
	  | tee -a $(BUILD)/bench-mpi.jsonl
	$(BUILD)/tests_mpi_bench --write-log 4 8 $(BUILD)/scale.tsv
	@for p in 1 2 4; do for how in "" whole; do \
	  OMP_NUM_THREADS=1 $(MPIRUN) -np $$p $(BUILD)/tests_mpi_bench --scale shards 4 8 $(BUILD)/scale.tsv $$how; \
	  done; done | tee -a $(BUILD)/bench-mpi.jsonl
	rm -f $(BUILD)/scale.tsv

device: demo | $(BUILD)
	@tests/needs.sh device
	@mkdir -p $(BUILD)/device
	$(CC) -O2 -std=c99 $(WARN) -Werror -I. device/gen.c -o $(BUILD)/device/gen -lm
	@$(BUILD)/device/gen $(BUILD)/device/model.ncf $(BUILD)/device/expect.h
	./demo --load $(BUILD)/device/model.ncf --export_c $(BUILD)/device/model_f32.h
	./demo --load $(BUILD)/device/model.ncf --int8 --export_c $(BUILD)/device/model_int8.h
	@set -e; for c in $(DEVICE_CORES); do BUILD=$(BUILD) device/run.sh $$c; done
	@if [ "$(DEVICE_CORES)" = "$(ALL_DEVICE_CORES)" ]; then BUILD=$(BUILD) device/check_docs.sh; fi

# libFuzzer (clang): one binary per reader, each run FUZZ_SECONDS on a scratch corpus seeded
# from fuzz/corpus/NAME (the round trip from the logs' seeds) and, for the model readers, from
# small model files of every kind that the tests write (tests --write-seeds). Every target
# runs in memory. Each prints its inputs and their rate; crashing inputs land in $(BUILD)/fuzz/.
# FUZZ_ONLY=NAME runs one target.
FUZZ_SECONDS ?= 60
FUZZ_ONLY ?=
fuzz: $(BUILD)/tests | $(BUILD)
	@tests/needs.sh fuzz
	@WARN="$(WARN)" fuzz/run.sh $(BUILD) $(FUZZ_SECONDS) $(FUZZ_ONLY)

# The paper's recipe on its ml-1m split (NCF_DATA/ml-1m-ncf holds ml-1m.train.rating,
# ml-1m.test.rating and ml-1m.test.negative): GMF and MLP trained alone, each saved
# at the epoch chosen on validation (the paper's code chose on test), then NeuMF started
# from both (alpha 0.5) and fine-tuned with SGD; the start and 20 epochs, as the paper's
# code counts them. Built with -march=native: the factors-64 MLP alone takes over half an hour.
# SGD at 1 helps at factors 8; from 16 up every rate tried (1, 0.1, 0.01, 0.001)
# only lowers the start, 0.001 (the paper's code's rate) the least.
PAPER_SPLIT = $(NCF_DATA)/ml-1m-ncf/ml-1m
GMF_EPOCHS ?= 20
MLP_EPOCHS ?= 20
FINETUNE ?= --optimizer sgd --learning_rate 0.001
FINETUNE_EPOCHS ?= 20
# every stage's extra flags: PAPER_FLAGS="--seed 2" (the same validation items in all three
# stages are drawn by the seed)
PAPER_FLAGS ?=
FINETUNE_8 ?= --optimizer sgd --learning_rate 1
PAPER_LAYERS_8  := 64,32,16,8
PAPER_LAYERS_16 := 128,64,32,16
PAPER_LAYERS_32 := 256,128,64,32
PAPER_LAYERS_64 := 512,256,128,64
paper-f8 paper-f16 paper-f32 paper-f64: OPT += -march=native
paper-f8 paper-f16 paper-f32 paper-f64: paper-f%: demo | $(BUILD)
	@[ -n "$(NCF_DATA)" ] || { echo "make paper-f$*: set NCF_DATA to the folder holding ml-1m-ncf/ (docs/data.md)"; exit 1; }
	./demo --data $(PAPER_SPLIT) --model gmf --num_factors $* --train_epochs $(GMF_EPOCHS) --save_best $(BUILD)/gmf-f$*.ncf $(PAPER_FLAGS)
	./demo --data $(PAPER_SPLIT) --model mlp --layers $(PAPER_LAYERS_$*) --train_epochs $(MLP_EPOCHS) --save_best $(BUILD)/mlp-f$*.ncf $(PAPER_FLAGS)
	./demo --data $(PAPER_SPLIT) --pretrain_gmf $(BUILD)/gmf-f$*.ncf --pretrain_mlp $(BUILD)/mlp-f$*.ncf --alpha 0.5 $(or $(FINETUNE_$*),$(FINETUNE)) --train_epochs $(FINETUNE_EPOCHS) $(PAPER_FLAGS)

clean:
	rm -rf $(BUILD) $(PROGRAMS) python/ncf/_ncf*.so python/ncf/ncf.h python/build python/dist python/*.egg-info

