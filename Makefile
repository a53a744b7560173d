# ncf.h - build the demo, the tests and the benchmarks.
#   make demo && ./demo     train NeuMF on built-in synthetic data
#   make test               the test suite, again under ASan+UBSan, and the header build matrix
#   make bench              benchmarks (NATIVE=1 build)
# Options: NO_OMP=1 (no OpenMP), NATIVE=1 (-march=native), CC=clang.

CC      ?= cc
CXX     ?= g++
OPT     ?= -O3 -ffp-contract=fast -fno-math-errno
WARN    := -Wall -Wextra
BUILD   := build

# stb_ds.h: pkg-config knows where Debian's libstb-dev puts it; -isystem keeps its
# own warnings out of our -Werror builds.
STB_DIR := $(patsubst -I%,%,$(filter -I%,$(shell pkg-config --cflags stb 2>/dev/null)))
STB_DIR := $(if $(STB_DIR),$(STB_DIR),/usr/include/stb)
STB     := -isystem $(STB_DIR)

ifeq ($(NO_OMP),1)
OMP :=
else
OMP := $(shell echo 'int main(void){return 0;}' | $(CC) -fopenmp -x c - -o /dev/null 2>/dev/null && echo -fopenmp)
endif
ifeq ($(NATIVE),1)
OPT += -march=native
endif

CFLAGS_ALL = $(OPT) -std=c99 $(WARN) $(STB) $(OMP) $(CFLAGS)
TESTFLAGS  = -O2 -g -std=c99 $(WARN) -Werror $(STB) $(CFLAGS)

.PHONY: all demo test bench clean stb header-checks

all: demo

# Installs libstb-dev when stb_ds.h is missing and we may (root with apt-get);
# otherwise stops with the command to run.
stb:
	@if [ ! -f "$(STB_DIR)/stb_ds.h" ]; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    echo "stb_ds.h not found: installing libstb-dev"; \
	    apt-get install -y libstb-dev >/dev/null 2>&1 || \
	      { apt-get update -qq && apt-get install -y libstb-dev; } || exit 1; \
	  else \
	    echo "stb_ds.h not found. Install it with:  sudo apt-get install libstb-dev"; exit 1; \
	  fi; \
	fi

demo: stb demo.c ncf.h
	$(CC) $(CFLAGS_ALL) demo.c -o demo -lm

$(BUILD):
	mkdir -p $(BUILD)

$(BUILD)/tests: tests.c ncf.h | stb $(BUILD)
	$(CC) $(TESTFLAGS) $(OMP) tests.c -o $@ -lm

$(BUILD)/tests_noomp: tests.c ncf.h | stb $(BUILD)
	$(CC) $(TESTFLAGS) tests.c -o $@ -lm

# built as the demo and bench are, so the widest vector paths are tested too
$(BUILD)/tests_native: tests.c ncf.h | stb $(BUILD)
	$(CC) $(TESTFLAGS) $(OMP) -O3 -ffp-contract=fast -fno-math-errno -march=native tests.c -o $@ -lm

$(BUILD)/tests_asan: tests.c ncf.h | stb $(BUILD)
	$(CC) $(TESTFLAGS) $(OMP) -O1 -fsanitize=address,undefined -fno-sanitize-recover=all \
	  -fno-omit-frame-pointer tests.c -o $@ -lm

# The header must build: split across two translation units, static, as C++,
# as strict C99, with clang, without stdio and with a custom allocator.
IMPL = '\#define NCF_IMPLEMENTATION\n\#define STB_DS_IMPLEMENTATION\n\#include "ncf.h"\n'
USER = '\#include "ncf.h"\n\#include <string.h>\nint main(void){ ncf_config c = ncf_config_default(); return strcmp(ncf_version(), NCF_VERSION_STRING) || c.mf_dim != 8; }\n'
define build_check
	@printf '%s ... ' "$(1)"; if ! command -v $(firstword $(2)) >/dev/null 2>&1 && [ "$(firstword $(2))" != "!" ]; then \
	  echo "skipped ($(firstword $(2)) not installed)"; elif $(2) >$(BUILD)/check.log 2>&1; then echo ok; echo pass >> $(BUILD)/checks; \
	  else echo FAILED; cat $(BUILD)/check.log; echo fail >> $(BUILD)/checks; fi
endef

header-checks: | stb $(BUILD)
	@rm -f $(BUILD)/checks
	@printf $(IMPL) > $(BUILD)/impl.c; printf $(USER) > $(BUILD)/user.c
	@printf $(IMPL) > $(BUILD)/impl.cpp
	$(call build_check,two translation units,$(CC) $(TESTFLAGS) -I. $(BUILD)/impl.c $(BUILD)/user.c -o $(BUILD)/two_tu -lm && $(BUILD)/two_tu)
	$(call build_check,NCF_STATIC,$(CC) $(TESTFLAGS) -I. -DNCF_STATIC -c $(BUILD)/impl.c -o $(BUILD)/static.o)
	$(call build_check,C++ ($(CXX)),$(CXX) -O2 $(WARN) -Werror $(STB) $(OMP) -I. -c $(BUILD)/impl.cpp -o $(BUILD)/cpp.o)
	$(call build_check,-std=c99 -pedantic,$(CC) $(TESTFLAGS) -pedantic -I. -c $(BUILD)/impl.c -o $(BUILD)/pedantic.o)
	$(call build_check,clang,clang -O2 -std=c99 -pedantic $(WARN) -Werror $(STB) -I. -c $(BUILD)/impl.c -o $(BUILD)/clang.o)
	$(call build_check,NCF_NO_STDIO,$(CC) $(TESTFLAGS) -I. -DNCF_NO_STDIO -c $(BUILD)/impl.c -o $(BUILD)/nostdio.o)
	$(call build_check,custom allocator,$(CC) $(TESTFLAGS) -I. '-DNCF_MALLOC(n)=malloc(n)' '-DNCF_REALLOC(p,n)=realloc(p,n)' '-DNCF_FREE(p)=free(p)' -c $(BUILD)/impl.c -o $(BUILD)/alloc.o)
	$(call build_check,allocator hooks all or none,! $(CC) $(TESTFLAGS) -I. '-DNCF_MALLOC(n)=malloc(n)' -c $(BUILD)/impl.c -o $(BUILD)/alloc1.o)

# Runs every suite; the last line sums them up.
test: $(BUILD)/tests $(BUILD)/tests_noomp $(BUILD)/tests_native $(BUILD)/tests_asan header-checks
	@$(BUILD)/tests_noomp --print-hash > $(BUILD)/noomp.hash
	@set -u; p=0; f=0; \
	for t in "tests --expect-hash $(BUILD)/noomp.hash" tests_noomp tests_native tests_asan; do \
	  echo "== $(BUILD)/$$t"; \
	  ASAN_OPTIONS=detect_leaks=1 $(BUILD)/$$t > $(BUILD)/out.log 2>&1; rc=$$?; cat $(BUILD)/out.log; \
	  line=$$(tail -n 1 $(BUILD)/out.log); \
	  case "$$line" in *" passed, "*" failed") ;; *) line="0 passed, 1 failed"; echo "(crashed: exit $$rc)";; esac; \
	  p=$$((p + $${line%% passed*})); n=$${line#*passed, }; f=$$((f + $${n%% failed*})); \
	  [ $$rc -eq 0 ] || [ $${n%% failed*} -gt 0 ] || f=$$((f + 1)); \
	done; \
	p=$$((p + $$(grep -c pass $(BUILD)/checks))); f=$$((f + $$(grep -c fail $(BUILD)/checks || true))); \
	echo "$$p passed, $$f failed"; [ $$f -eq 0 ]

# One JSON line per case: ours (NATIVE=1 build), then the load times, the machine's
# peak (../shared/peers/peak.c) and, when torch imports, the PyTorch peer on the
# same configurations, all in this one run.
PEERS ?= ../shared/peers
PY    ?= /usr/bin/python3
CASES := "paper 1 lazy" "paper 2 lazy" "paper 2 dense" "mlperf 1 lazy" "mlperf 2 lazy" "mlperf 1 dense" "mlperf 2 dense"
TORCH_PAPER  := --users 6040 --items 3706 --positives 994169 --mf_dim 8 --layers 64,32,16,8 --batch 256 --lr 0.001 --eval_negs 100 --epochs 1 --max_steps 2000 --threads 2
TORCH_MLPERF := --users 138493 --items 26744 --positives 2000000 --mf_dim 64 --layers 256,256,128,64 --batch 2048 --lr 0.0005 --eval_negs 999 --eval_users 2000 --threads 2

bench: stb | $(BUILD)
	$(CC) -O3 -ffp-contract=fast -fno-math-errno -march=native -std=c99 $(WARN) $(STB) $(OMP) $(CFLAGS) tests.c -o $(BUILD)/bench -lm
	@rm -f $(BUILD)/bench.jsonl
	@for c in $(CASES); do $(BUILD)/bench --bench $$c | tee -a $(BUILD)/bench.jsonl || exit 1; done
	@$(BUILD)/bench --bench load | tee -a $(BUILD)/bench.jsonl
	@if [ -f $(PEERS)/peak.c ]; then $(CC) -O3 -march=native -fopenmp $(PEERS)/peak.c -o $(BUILD)/peak && $(BUILD)/peak; fi
	@if [ -f $(PEERS)/torch_neumf.py ] && $(PY) -c 'import torch' 2>/dev/null; then \
	  echo "PyTorch peer (OPENBLAS_CORETYPE=Cooperlake, 2 threads):"; \
	  for a in "paper:$(TORCH_PAPER)" "mlperf_dense:$(TORCH_MLPERF) --max_steps 40" \
	           "mlperf_lazy:$(TORCH_MLPERF) --max_steps 120 --lazy_adam"; do \
	    printf '%s ' "$${a%%:*}"; OPENBLAS_CORETYPE=Cooperlake $(PY) $(PEERS)/torch_neumf.py $${a#*:} 2>/dev/null | tail -n 1; \
	  done | tee $(BUILD)/peer.jsonl; \
	else echo "(PyTorch peer skipped: needs $(PEERS)/torch_neumf.py and python3-torch)"; fi

clean:
	rm -rf $(BUILD) demo tests *.o
