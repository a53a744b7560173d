# ncf.h - build the demo, the tests and the benchmarks.
#   make demo && ./demo     train NeuMF on built-in synthetic data
#   make test               the test suite, again under ASan+UBSan (gcc's, and clang's where clang is),
#                           and the header build matrix
#   make bench [BASE=REV]   benchmarks (native build), also on a busy machine; REV: a baseline
#   make cross              the suite on aarch64, armhf and big-endian s390x under qemu
#   make windows            the suite and a demo run, cross-built with MinGW-w64, under wine
#   make fuzz               libFuzzer on the model reader and each ratings parser
#   make wasm               ncf.wasm (the serving half for WebAssembly) and the page in build/web
#   make web-test           the page driven in headless Chromium, its answers against the host's
#   make device             the device example on Cortex-M4F, Cortex-M0, RV32IMAC and RV32IMAFC under qemu
#   make demo-mpi           the demo over MPI ranks: mpirun -np P ./demo-mpi --data ...
#   make test-mpi           the MPI tests on 1-4 ranks, and demo-mpi against the demo
#   make bench-mpi          training on 2 ranks against 1, one thread each
#   make paper-f8 NCF_DATA=DIR   the paper's pre-training recipe (also f16, f32, f64)
# Options: NO_OMP=1 (no OpenMP), NATIVE=1 (-march=native), CC=clang.

CC      ?= cc
CXX     ?= g++
OPT     ?= -O3 -ffp-contract=fast -fno-math-errno
WARN    := -Wall -Wextra
BUILD   := build


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

.PHONY: all demo test bench bench-load clean header-checks isa-matrix cross windows fuzz device wasm web-test paper-f8 paper-f16 paper-f32 paper-f64 \
        demo-mpi test-mpi bench-mpi

all: demo

demo: demo.c ncf.h
	$(CC) $(CFLAGS_ALL) demo.c -o demo -lm

$(BUILD):
	mkdir -p $(BUILD)

$(BUILD)/tests: tests.c ncf.h | $(BUILD)
	$(CC) $(TESTFLAGS) $(OMP) tests.c -o $@ -lm

$(BUILD)/tests_noomp: tests.c ncf.h | $(BUILD)
	$(CC) $(TESTFLAGS) tests.c -o $@ -lm

# built as the demo and bench are, so the widest vector paths are tested too
$(BUILD)/tests_native: tests.c ncf.h | $(BUILD)
	$(CC) $(TESTFLAGS) $(OMP) -O3 -ffp-contract=fast -fno-math-errno -march=native tests.c -o $@ -lm

# ThreadSanitizer on the tests where threads share a model (without OpenMP, whose runtime
# TSan does not see into)
$(BUILD)/tests_tsan: tests.c ncf.h | $(BUILD)
	$(CC) $(TESTFLAGS) -O1 -fsanitize=thread tests.c -o $@ -lm

# models, predict, recommend and load only: what a device ships
$(BUILD)/tests_infer: tests.c ncf.h | $(BUILD)
	$(CC) $(TESTFLAGS) -Os -DNCF_INFERENCE_ONLY tests.c -o $@ -lm

$(BUILD)/tests_asan: tests.c ncf.h | $(BUILD)
	$(CC) $(TESTFLAGS) $(OMP) -O1 -fsanitize=address,undefined -fno-sanitize-recover=all \
	  -fno-omit-frame-pointer tests.c -o $@ -lm

# The ISA matrix: the suite built as the demo and bench are (-O3, contraction on) for each
# instruction-set level the compiler knows, for every level this CPU can run; the others
# are named with the reason. FMA (x86-64-v3 up) changes rounding between levels; within a
# level scores and training are identical for any thread count, batch and chunking.
ARCH := $(shell uname -m)
# level:CPU flags it adds to the level before (as /proc/cpuinfo names them)
ISA_x86_64  := x86-64: x86-64-v2:cx16,lahf_lm,popcnt,sse4_1,sse4_2,ssse3 \
               x86-64-v3:avx,avx2,bmi1,bmi2,f16c,fma,abm,movbe,xsave \
               x86-64-v4:avx512f,avx512bw,avx512cd,avx512dq,avx512vl
ISA_aarch64 := armv8-a:asimd
CPU_FLAGS ?= $(shell grep -m1 -E '^(flags|Features)' /proc/cpuinfo 2>/dev/null | cut -d: -f2)
isa-matrix: | $(BUILD)
	@rm -f $(BUILD)/isa.list $(BUILD)/isa.txt; touch $(BUILD)/isa.list; need=""; \
	have=" $(CPU_FLAGS) "; \
	[ -n "$(ISA_$(ARCH))" ] || echo "ISA matrix: none for $(ARCH) (only the native build runs)"; \
	for spec in $(ISA_$(ARCH)); do lvl=$${spec%%:*}; need="$$need $$(echo $${spec#*:} | tr , ' ')"; miss=""; \
	  for f in $$need; do case "$$have" in *" $$f "*) ;; *) miss="$$miss $$f";; esac; done; \
	  if ! $(CC) -march=$$lvl -E -x c /dev/null >/dev/null 2>&1; then echo "ISA $$lvl: skipped ($(CC) does not know -march=$$lvl)"; \
	  elif [ -n "$$miss" ]; then echo "ISA $$lvl: skipped (this CPU lacks$$miss)"; \
	  else echo "ISA $$lvl: run"; \
	    $(CC) $(TESTFLAGS) $(OMP) -O3 -ffp-contract=fast -fno-math-errno -march=$$lvl tests.c -o $(BUILD)/tests_$$lvl -lm || exit 1; \
	    echo "tests_$$lvl" >> $(BUILD)/isa.list; fi; \
	done | tee $(BUILD)/isa.txt; [ -s $(BUILD)/isa.list ] || [ -z "$(ISA_$(ARCH))" ]

# The header must build: split across two translation units, static, as C++,
# as strict C99, with clang, without stdio and with a custom allocator.
IMPL = '\#define NCF_IMPLEMENTATION\n\#include "ncf.h"\n'
USER = '\#include "ncf.h"\n\#include <string.h>\nint main(void){ ncf_config c = ncf_config_default(); return strcmp(ncf_version(), NCF_VERSION_STRING) || c.mf_dim != 8; }\n'
# what the README's compile lines build: the library used end to end (train, save, serve)
APP = '\#include <stdio.h>\nint main(void){ ncf_dataset d; ncf_model *m = NULL; ncf_sampler s; int64_t top[3]; float sc[3];\n\
  ncf_config c = ncf_config_default(); int ok = ncf_synthetic(&d, 60, 40, 900, 4, 1) == NCF_OK;\n\
  c.num_users = d.num_users, c.num_items = d.num_items;\n\
  ok = ok && ncf_model_create(&m, &c) == NCF_OK && ncf_model_set_ids(m, &d) == NCF_OK && ncf_sampler_init(&s, &d, 4, 1) == NCF_OK;\n\
  ok = ok && ncf_train_epoch(m, &s, 1, NULL, NULL, NULL) == NCF_OK && ncf_recommend(m, d.raw_user[0], 3, NCF_EXCLUDE_RATED, top, sc) == 3;\n\
  if (!ok) printf("%%s\\n", ncf_error_text());\n  ncf_model_free(m); ncf_dataset_free(&d); return !ok; }\n'
# demo --save_best over 4 epochs, then --load of its file: that must print the best epoch's
# HR and NDCG, which a last-epoch file would not. $(1) runs the demo (Windows' CRLF is
# dropped).
comma := ,
SYN := --synthetic_users 300 --synthetic_items 200 --synthetic_ratings 9000
save_best_check = $(1) $(SYN) --train_epochs 4 --save_best $(BUILD)/best.ncf > $(BUILD)/best.log && \
  $(1) $(SYN) --load $(BUILD)/best.ncf --train_epochs 0 > $(BUILD)/best_load.log && \
  b=$$(tr -d '\r' < $(BUILD)/best.log | \
       sed -n 's/^Best: iteration \([0-9]*\)$(comma) \(HR = [0-9.]*$(comma) NDCG = [0-9.]*\)$$/Iteration \1: \2$(comma)/p') && \
  [ -n "$$b" ] && grep -q "^$$b" $(BUILD)/best_load.log

# The best epoch by validation HR (the CSV's first maximum of column 9) is the one whose test
# line the demo reports under "Best by validation".
val_best_check = n=$$(awk -F, 'NR > 1 && $$9 != "" && (b == "" || $$9 > b) { b = $$9; n = $$1 } END { print n }' $(BUILD)/val.csv) && \
  grep -q "^Best by validation HR@10: iteration $$n " $(BUILD)/val.log && \
  [ "$$(grep -A1 "^Iteration $$n:" $(BUILD)/val.log | sed -n 2p)" = "$$(grep -A1 '^Best by validation' $(BUILD)/val.log | sed -n 2p)" ]

define build_check
	@printf '%s ... ' "$(1)"; if ! command -v $(firstword $(2)) >/dev/null 2>&1 && [ "$(firstword $(2))" != "!" ]; then \
	  echo "skipped ($(firstword $(2)) not installed)"; elif $(2) >$(BUILD)/check.log 2>&1; then echo ok; echo pass >> $(BUILD)/checks; \
	  else echo FAILED; cat $(BUILD)/check.log; echo fail >> $(BUILD)/checks; fi
endef

header-checks: $(BUILD)/tests | $(BUILD)
	@rm -f $(BUILD)/checks
	@printf $(IMPL) > $(BUILD)/impl.c; printf $(USER) > $(BUILD)/user.c
	@printf $(IMPL) > $(BUILD)/impl.cpp
	$(call build_check,two translation units,$(CC) $(TESTFLAGS) -I. $(BUILD)/impl.c $(BUILD)/user.c -o $(BUILD)/two_tu -lm && $(BUILD)/two_tu)
	$(call build_check,NCF_STATIC,$(CC) $(TESTFLAGS) -I. -DNCF_STATIC -c $(BUILD)/impl.c -o $(BUILD)/static.o)
	$(call build_check,C++11 strict ($(CXX)),$(CXX) -std=c++11 -O2 $(WARN) -pedantic -Werror $(OMP) -I. -c $(BUILD)/impl.cpp -o $(BUILD)/cpp.o)
	$(call build_check,C++11 strict (clang++),clang++ -std=c++11 -O2 $(WARN) -pedantic -Werror -I. -c $(BUILD)/impl.cpp -o $(BUILD)/clangpp.o)
	$(call build_check,tcc,tcc -I. $(BUILD)/impl.c $(BUILD)/user.c -o $(BUILD)/tcc_two_tu -lm && $(BUILD)/tcc_two_tu)
	$(call build_check,-std=c99 -pedantic,$(CC) $(TESTFLAGS) -pedantic -I. -c $(BUILD)/impl.c -o $(BUILD)/pedantic.o)
	$(call build_check,clang,clang -O2 -std=c99 -pedantic $(WARN) -Werror -I. -c $(BUILD)/impl.c -o $(BUILD)/clang.o)
	$(call build_check,NCF_NO_STDIO,$(CC) $(TESTFLAGS) -I. -DNCF_NO_STDIO -c $(BUILD)/impl.c -o $(BUILD)/nostdio.o)
	$(call build_check,custom allocator,$(CC) $(TESTFLAGS) -I. '-DNCF_MALLOC(n)=malloc(n)' '-DNCF_REALLOC(p,n)=realloc(p,n)' '-DNCF_FREE(p)=free(p)' -c $(BUILD)/impl.c -o $(BUILD)/alloc.o)
	$(call build_check,allocator hooks all or none,! $(CC) $(TESTFLAGS) -I. '-DNCF_MALLOC(n)=malloc(n)' -c $(BUILD)/impl.c -o $(BUILD)/alloc1.o)
	@{ printf $(IMPL); printf '#include <stdio.h>\nint main(void)\n{\n'; sed -n '/^   EXAMPLE/,/^   THREAD SAFETY/p' ncf.h | sed '1d;$$d;s/^     //'; echo '}'; } > $(BUILD)/example.c
	$(call build_check,the banner's example compiles,$(CC) $(TESTFLAGS) -I. -c $(BUILD)/example.c -o $(BUILD)/example.o)
	@printf $(IMPL)$(APP) > $(BUILD)/app.c
	$(call build_check,README: cc -O2 -fopenmp app.c -lm,$(CC) -O2 $(OMP) $(WARN) -Werror -I. $(BUILD)/app.c -o $(BUILD)/app -lm && $(BUILD)/app)
	$(call build_check,NCF_NO_TLS leaves no thread-local storage (Cortex-M links),$(CC) $(TESTFLAGS) -Os -I. -DNCF_INFERENCE_ONLY -DNCF_NO_STDIO -c $(BUILD)/impl.c -o $(BUILD)/tls.o && readelf -S $(BUILD)/tls.o | grep -q tbss && $(CC) $(TESTFLAGS) -Os -I. -DNCF_NO_TLS -DNCF_INFERENCE_ONLY -DNCF_NO_STDIO -c $(BUILD)/impl.c -o $(BUILD)/notls.o && ! readelf -S $(BUILD)/notls.o | grep -q tbss)
	$(call build_check,NCF_INFERENCE_ONLY has no training code,$(CC) $(TESTFLAGS) -Os -I. -DNCF_INFERENCE_ONLY -c $(BUILD)/impl.c -o $(BUILD)/infer.o && ! nm $(BUILD)/infer.o | grep -q 'ncf_train_epoch\|ncf_load_dataset\|ncf_update')
	$(call build_check,demo --save_best keeps the best epoch,$(CC) $(TESTFLAGS) $(OMP) demo.c -o $(BUILD)/demo_check -lm && $(call save_best_check,$(BUILD)/demo_check))
	$(call build_check,demo stops before training when --save cannot be written,! $(BUILD)/demo_check $(SYN) --save $(BUILD)/no_such_dir/m.ncf > $(BUILD)/nodir.log 2>&1 && grep -q 'cannot create' $(BUILD)/nodir.log && ! grep -q Iteration $(BUILD)/nodir.log)
	$(call build_check,demo --load evaluates with the model's own seed,$(BUILD)/demo_check $(SYN) --seed 3 --train_epochs 2 --save $(BUILD)/s3.ncf > $(BUILD)/s3.log && $(BUILD)/demo_check $(SYN) --load $(BUILD)/s3.ncf --train_epochs 0 > $(BUILD)/s3_load.log && grep -q "^$$(grep -o '^Iteration 2: HR = [0-9.]*$(comma) NDCG = [0-9.]*' $(BUILD)/s3.log)$(comma)" $(BUILD)/s3_load.log)
	$(call build_check,demo --load refuses data that lacks ids of the model,printf '1::10::5::1\n1::20::5::2\n2::10::5::1\n2::30::5::2\n' > $(BUILD)/ids_a.dat && printf '1::10::5::1\n1::20::5::2\n3::10::5::1\n3::30::5::2\n' > $(BUILD)/ids_b.dat && $(BUILD)/demo_check --data $(BUILD)/ids_a.dat --min_ratings 1 --eval_negatives 1 --train_epochs 1 --save $(BUILD)/ids.ncf > /dev/null && ! $(BUILD)/demo_check --data $(BUILD)/ids_b.dat --min_ratings 1 --eval_negatives 1 --load $(BUILD)/ids.ncf --train_epochs 0 > $(BUILD)/ids.log 2>&1 && grep -q 'the data lacks 1 of the model.s users' $(BUILD)/ids.log)
	$(call build_check,demo flags: --flag=value; a misspelt flag is unknown; --beta2 that rounds to 1 refused,$(BUILD)/demo_check $(SYN) --train_epochs=1 --seed=2 > $(BUILD)/flags.log && grep -q '^Iteration 1:' $(BUILD)/flags.log && ! $(BUILD)/demo_check --trian_epochs 3 2> $(BUILD)/flags.log && grep -q "unknown flag '--trian_epochs'" $(BUILD)/flags.log && ! $(BUILD)/demo_check --beta2 0.99999999 2> $(BUILD)/flags.log && grep -q 'rounds to 1' $(BUILD)/flags.log)
	$(call build_check,demo saves before --recommend of an unknown user,rm -f $(BUILD)/rec.ncf && ! $(BUILD)/demo_check $(SYN) --train_epochs 1 --save $(BUILD)/rec.ncf --recommend 999999 > $(BUILD)/rec.log 2>&1 && test -f $(BUILD)/rec.ncf)
	$(call build_check,demo --validation reports the test figures of the validation-best epoch,$(BUILD)/demo_check $(SYN) --validation --train_epochs 4 --log $(BUILD)/val.csv > $(BUILD)/val.log && $(call val_best_check))
	$(call build_check,demo --log has the popularity baseline and every epoch; the untrained model has no loss,$(BUILD)/demo_check $(SYN) --train_epochs 3 --epochs_between_evals 2 --log $(BUILD)/every.csv > /dev/null && [ "$$(cut -d$(comma) -f1$(comma)2$(comma)3 $(BUILD)/every.csv | tail -n +2 | tr '\n' ' ' | sed 's/[0-9]\.[0-9]*/x/g')" = "popularity$(comma)$(comma)x 0$(comma)$(comma)x 1$(comma)x$(comma) 2$(comma)x$(comma)x 3$(comma)x$(comma)x " ])
	$(call build_check,demo --plot draws an image ($(if $(shell command -v rsvg-convert),rendered by rsvg-convert,rsvg-convert not installed: checked as text)),$(BUILD)/demo_check $(SYN) --validation --train_epochs 3 --plot $(BUILD)/curves.svg > /dev/null && grep -q '</svg>' $(BUILD)/curves.svg && grep -q 'best: epoch' $(BUILD)/curves.svg && { ! command -v rsvg-convert > /dev/null || { rsvg-convert $(BUILD)/curves.svg -o $(BUILD)/curves.png && [ "$$(head -c 4 $(BUILD)/curves.png | tail -c 3)" = PNG ]; }; })
	@$(BUILD)/tests --write-logs $(BUILD) > /dev/null
	$(call build_check,demo on a TAB play-count log with a header: read as written; recommends by its ids,$(BUILD)/demo_check --data $(BUILD)/plays.tsv --train_epochs 2 --recommend 7 > $(BUILD)/plays.log && grep -q '^read as: TAB-separated$(comma) header$(comma) user=userID item=artistID rating=weight$(comma) no timestamps$$' $(BUILD)/plays.log && grep -q '^held out: one interaction per user$(comma) drawn by the seed' $(BUILD)/plays.log && grep -q '^    popularity  HR@10' $(BUILD)/plays.log && grep -q '^ 10  *[0-9][0-9]*  ' $(BUILD)/plays.log)
	$(call build_check,demo on a quoted ';' export with ISBN ids: --min_rating; the ids come back as written,$(BUILD)/demo_check --data $(BUILD)/books.csv --min_rating 1 --train_epochs 2 --save $(BUILD)/books.ncf --recommend 276730 > $(BUILD)/books.log && grep -q "^read as: ';'-separated$(comma) header$(comma) user=User-ID item=ISBN rating=Book-Rating$(comma) no timestamps$(comma) item ids as text$$" $(BUILD)/books.log && grep -q '^kept .*--min_rating 1 dropped [1-9][0-9]* interactions' $(BUILD)/books.log && grep -q '^  [1-9]  *0[0-9]*X*  ' $(BUILD)/books.log)
	$(call build_check,demo --holdout none trains on everything and saves; nothing to evaluate,$(BUILD)/demo_check --data $(BUILD)/books.csv --holdout none --train_epochs 1 --save $(BUILD)/none.ncf > $(BUILD)/none.log && grep -q '^No evaluation' $(BUILD)/none.log && ! grep -q '^Iteration' $(BUILD)/none.log && test -s $(BUILD)/none.ncf)
	$(call build_check,demo checks --save before training and writes nothing through a planted name,echo precious > $(BUILD)/victim && ln -sf victim $(BUILD)/pl.ncf.demo-write-check && $(BUILD)/demo_check $(SYN) --train_epochs 1 --save $(BUILD)/pl.ncf > /dev/null && [ "$$(cat $(BUILD)/victim)" = precious ] && ! $(BUILD)/demo_check $(SYN) --save $(BUILD) > $(BUILD)/sv.log 2>&1 && grep -q 'not a regular file' $(BUILD)/sv.log && ! $(BUILD)/demo_check $(SYN) --save '' > $(BUILD)/sv.log 2>&1 && grep -q 'an empty path' $(BUILD)/sv.log && ! grep -q '^Iteration' $(BUILD)/sv.log)
	$(call build_check,demo refuses --int8 checkpoints (they cannot resume exactly),! $(BUILD)/demo_check $(SYN) --int8 --checkpoint_every 1 --save $(BUILD)/i8.ncf > $(BUILD)/i8.log 2>&1 && grep -q 'cannot resume a run exactly' $(BUILD)/i8.log && ! test -f $(BUILD)/i8.ncf)
	$(call build_check,demo saves the last finite model when training diverges,rm -f $(BUILD)/div.ncf && ! $(BUILD)/demo_check $(SYN) --optimizer sgd --learning_rate 100 --train_epochs 6 --save $(BUILD)/div.ncf > $(BUILD)/div.log 2>&1 && grep -q 'saved the last finite model' $(BUILD)/div.log && $(BUILD)/demo_check $(SYN) --load $(BUILD)/div.ncf --train_epochs 0 > /dev/null)
	$(call build_check,demo serves from a model file alone: users; a new user's items; similar items; an allow-list,$(BUILD)/demo_check --load $(BUILD)/books.ncf --recommend 276730$(comma)276731 --recommend_for 034545104X$(comma)0440213321 --similar 034545104X --recommend_k 3 > $(BUILD)/serve.log && [ "$$(grep -c '^Top 3 for user 2767' $(BUILD)/serve.log)" = 2 ] && grep -q '^Top 3 for a new user with 2 items .folded in' $(BUILD)/serve.log && grep -q '^The 3 items most like 034545104X' $(BUILD)/serve.log && ! grep -q '^Iteration' $(BUILD)/serve.log && printf '0440213324\n034545107X\n' > $(BUILD)/allow.txt && $(BUILD)/demo_check --load $(BUILD)/books.ncf --recommend 276730 --allow $(BUILD)/allow.txt > $(BUILD)/allow.log && [ "$$(grep -c '^  [12]  ' $(BUILD)/allow.log)" -le 2 ] && ! grep -v '^  [12]  \(0440213324\|034545107X\)  \|^Top\|^serving' $(BUILD)/allow.log)
	$(call build_check,demo --recommend_all writes every user's top K as user$(comma)rank$(comma)item$(comma)score,$(BUILD)/demo_check --load $(BUILD)/books.ncf --recommend_all $(BUILD)/all.csv --recommend_k 2 --probabilities > /dev/null 2>&1 && [ "$$(head -n 1 $(BUILD)/all.csv)" = "user$(comma)rank$(comma)item$(comma)probability" ] && [ "$$(wc -l < $(BUILD)/all.csv)" = 801 ])
	$(call build_check,demo --load FILE --data NEWDATA grows the model and trains on,head -n 8000 $(BUILD)/books.csv > $(BUILD)/older.csv && $(BUILD)/demo_check --data $(BUILD)/older.csv --holdout none --train_epochs 1 --save $(BUILD)/older.ncf > /dev/null && $(BUILD)/demo_check --data $(BUILD)/books.csv --load $(BUILD)/older.ncf --train_epochs 2 > $(BUILD)/grow.log && grep -q '^grew .*older.ncf to the data: 400 users' $(BUILD)/grow.log && grep -q '^Iteration 2:' $(BUILD)/grow.log)
	@if ! command -v node >/dev/null; then echo "ncf.wasm under Node (WASI) ... skipped (node not installed)"; \
	elif ! $(WASM_TOOLCHAIN); then echo "ncf.wasm under Node (WASI) ... skipped (no wasm32-wasi toolchain: make wasm installs it)"; \
	else $(MAKE) --no-print-directory $(BUILD)/web/ncf.wasm $(BUILD)/web/host > /dev/null && \
	  web/check.sh $(BUILD) $(BUILD)/books.ncf $(BUILD)/s3.ncf; fi
	@$(CC) -Os -std=c99 -I. -c $(BUILD)/impl.c -o $(BUILD)/full.o && \
	  echo "object code at -Os: NCF_INFERENCE_ONLY $$(size $(BUILD)/infer.o | awk 'NR==2{print $$1}') bytes, full library $$(size $(BUILD)/full.o | awk 'NR==2{print $$1}') bytes"

# Runs every suite; the last line sums them up.
test: $(BUILD)/tests $(BUILD)/tests_noomp $(BUILD)/tests_native $(BUILD)/tests_asan $(BUILD)/tests_tsan $(BUILD)/tests_infer \
      isa-matrix header-checks
	@rm -f $(BUILD)/tests_clang_ubsan; if command -v clang >/dev/null 2>&1; then \
	  clang -O1 -g -std=c99 $(WARN) -Werror -fsanitize=address,undefined -fno-sanitize-recover=all \
	    -fno-omit-frame-pointer tests.c -o $(BUILD)/tests_clang_ubsan -lm; fi
	@$(BUILD)/tests_noomp --print-hash > $(BUILD)/noomp.hash
	@rm -rf $(BUILD)/fixture && mkdir -p $(BUILD)/fixture && $(BUILD)/tests --write-fixture $(BUILD)/fixture
	@set -u; p=0; f=0; \
	for t in "tests --expect-hash $(BUILD)/noomp.hash" tests_noomp tests_native $$(cat $(BUILD)/isa.list) tests_asan \
	         $$([ -x $(BUILD)/tests_clang_ubsan ] && echo tests_clang_ubsan) \
	         "tests_tsan serving_threads" \
	         "tests_infer --check-fixture $(BUILD)/fixture"; do \
	  echo "== $(BUILD)/$$t"; \
	  ASAN_OPTIONS=detect_leaks=1 $(BUILD)/$$t > $(BUILD)/out.log 2>&1; rc=$$?; cat $(BUILD)/out.log; \
	  line=$$(tail -n 1 $(BUILD)/out.log); \
	  case "$$line" in *" passed, "*" failed") ;; *) line="0 passed, 1 failed"; echo "(crashed: exit $$rc)";; esac; \
	  p=$$((p + $${line%% passed*})); n=$${line#*passed, }; f=$$((f + $${n%% failed*})); \
	  [ $$rc -eq 0 ] || [ $${n%% failed*} -gt 0 ] || f=$$((f + 1)); \
	done; \
	p=$$((p + $$(grep -c pass $(BUILD)/checks))); f=$$((f + $$(grep -c fail $(BUILD)/checks || true))); \
	cat $(BUILD)/isa.txt; echo "$$p passed, $$f failed"; [ $$f -eq 0 ]

# One JSON line per case: ours (NATIVE=1 build), then the load times, the machine's
# peak (../shared/peers/peak.c) and, when torch imports, the PyTorch peer on the
# same configurations, all in this one run.
PEERS ?= ../shared/peers
PY    ?= /usr/bin/python3
CASES := "paper 1 lazy" "paper 2 lazy" "paper 2 dense" "mlperf 1 lazy" "mlperf 2 lazy" "mlperf 1 dense" "mlperf 2 dense"
TORCH_PAPER  := --users 6040 --items 3706 --positives 994169 --mf_dim 8 --layers 64,32,16,8 --batch 256 --lr 0.001 --eval_negs 100 --epochs 1 --max_steps 2000 --threads 2
TORCH_MLPERF := --users 138493 --items 26744 --positives 2000000 --mf_dim 64 --layers 256,256,128,64 --batch 2048 --lr 0.0005 --eval_negs 999 --eval_users 500 --threads 2

# make bench BASE=REV benches commit REV too (its own ncf.h and tests.c, built the same way),
# each case right after ours, as the baseline measured in the same run. The contended cases
# run beside a busy loop that the bench starts on one core and stops.
BASE ?=
CONTENDED := "paper 1 lazy" "paper 2 lazy" "mlperf 1 lazy" "mlperf 2 lazy"
BENCHFLAGS = -O3 -ffp-contract=fast -fno-math-errno -march=native -std=c99 $(WARN) $(OMP) $(CFLAGS)
BENCHCC = $(CC) $(BENCHFLAGS)
bench: | $(BUILD)
	$(BENCHCC) tests.c -o $(BUILD)/bench -lm
	@rm -rf $(BUILD)/base; if [ -n "$(BASE)" ]; then mkdir -p $(BUILD)/base && \
	  git archive $(BASE) ncf.h tests.c | tar -x -C $(BUILD)/base && \
	  $(BENCHCC) $(BUILD)/base/tests.c -o $(BUILD)/base/bench -lm || exit 1; fi
	@grep -m1 'model name' /proc/cpuinfo
	@rm -f $(BUILD)/bench.jsonl
	@run() { for b in $(BUILD)/bench $(BUILD)/base/bench; do [ -x $$b ] || continue; \
	    who=ours; [ $$b = $(BUILD)/bench ] || who=base; \
	    $$b --bench $$2 > $(BUILD)/case.json || return 1; \
	    sed "s/^{/{\"build\":\"$$who\",\"contended\":$$1,/" $(BUILD)/case.json | tee -a $(BUILD)/bench.jsonl; done; }; \
	  for c in $(CASES); do run 0 "$$c" || exit 1; done; \
	  timeout 1800 sh -c 'while :; do :; done' & busy=$$!; \
	  for c in $(CONTENDED); do run 1 "$$c" || { kill $$busy; exit 1; }; done; \
	  for c in paper mlperf; do $(BUILD)/bench --bench-busy $$c > $(BUILD)/case.json || { kill $$busy; exit 1; }; \
	    tee -a $(BUILD)/bench.jsonl < $(BUILD)/case.json; done; \
	  kill $$busy
	@$(BUILD)/bench --bench load | tee -a $(BUILD)/bench.jsonl
	@$(MAKE) --no-print-directory bench-load BASE=$(BASE)
	@$(BUILD)/bench --bench serve-ids | tee -a $(BUILD)/bench.jsonl
	@$(BUILD)/bench --bench serving | tee -a $(BUILD)/bench.jsonl
	@rm -f $(BUILD)/peak.txt; if [ -f $(PEERS)/peak.c ]; then $(CC) -O3 -march=native -fopenmp $(PEERS)/peak.c -o $(BUILD)/peak && $(BUILD)/peak | tee $(BUILD)/peak.txt; fi
	@$(BUILD)/bench --bench-summary $(BUILD)/bench.jsonl $(BUILD)/peak.txt
	@if [ -f $(PEERS)/torch_neumf.py ] && $(PY) -c 'import torch' 2>/dev/null; then \
	  echo "PyTorch peer (OPENBLAS_CORETYPE=Cooperlake, 2 threads):"; \
	  for a in "paper:$(TORCH_PAPER)" "mlperf_dense:$(TORCH_MLPERF) --max_steps 40" \
	           "mlperf_lazy:$(TORCH_MLPERF) --max_steps 120 --lazy_adam"; do \
	    printf '%s ' "$${a%%:*}"; OPENBLAS_CORETYPE=Cooperlake $(PY) $(PEERS)/torch_neumf.py $${a#*:} 2>/dev/null | tail -n 1; \
	  done | tee $(BUILD)/peer.jsonl; \
	else echo "(PyTorch peer skipped: needs $(PEERS)/torch_neumf.py and python3-torch)"; fi

# Loading a 20M-line ml-20m-sized ratings.csv (min_ratings 20), each load in a fresh process
# for its time and peak memory: integer ids, the same with every id a 16-character string,
# and (BASE=REV) REV's loader on the integer file; 3 rounds in turn, medians.
LOADPROG = '\#define _POSIX_C_SOURCE 200809L\n\#define NCF_IMPLEMENTATION\n\#include "ncf.h"\n\#include <stdio.h>\n\#include <stdlib.h>\n\#include <string.h>\n\#include <time.h>\n\
int main(int argc, char **argv) {\n  ncf_dataset d; ncf_load_opts o = ncf_load_opts_default(); struct timespec a, b; char line[256]; double kb = 0; FILE *f; int rc;\n\
  if (argc < 2) return 2;\n  o.min_ratings = 20;\n  clock_gettime(CLOCK_MONOTONIC, &a); rc = ncf_load_dataset(&d, argv[1], &o); clock_gettime(CLOCK_MONOTONIC, &b);\n\
  if (rc) { fprintf(stderr, "%%s\\n", ncf_error_text()); return 1; }\n  f = fopen("/proc/self/status", "r");\n\
  while (f && fgets(line, sizeof line, f)) if (!strncmp(line, "VmHWM:", 6)) kb = atof(line + 6);\n\
  printf("\\"load_s\\":%%.2f,\\"peak_rss_mb\\":%%.0f,\\"users\\":%%d,\\"items\\":%%d}\\n", (double)(b.tv_sec - a.tv_sec) + 1e-9 * (double)(b.tv_nsec - a.tv_nsec), kb / 1024, d.num_users, d.num_items);\n\
  ncf_dataset_free(&d); return 0; }\n'
bench-load: | $(BUILD)
	@printf $(LOADPROG) > $(BUILD)/loadprog.c
	$(BENCHCC) -I. $(BUILD)/loadprog.c -o $(BUILD)/load_ours -lm
	@if [ -n "$(BASE)" ]; then rm -rf $(BUILD)/base_load && mkdir -p $(BUILD)/base_load && git archive $(BASE) ncf.h | tar -x -C $(BUILD)/base_load && \
	  $(BENCHCC) -I$(BUILD)/base_load $(BUILD)/loadprog.c -o $(BUILD)/load_base -lm; fi
	@$(BENCHCC) tests.c -o $(BUILD)/bench -lm
	@$(BUILD)/bench --bench write-ratings $(BUILD)/r_int.csv int && $(BUILD)/bench --bench write-ratings $(BUILD)/r_text.csv text
	@for r in 1 2 3; do \
	  for run in "ours int r_int" "ours text r_text" "base int r_int"; do set -- $$run; \
	    [ -x $(BUILD)/load_$$1 ] || continue; \
	    printf '{"case":"load_file","build":"%s","ids":"%s",' $$1 $$2; $(BUILD)/load_$$1 $(BUILD)/$$3.csv || exit 1; \
	  done; done | tee -a $(BUILD)/bench.jsonl
	@rm -f $(BUILD)/r_int.csv $(BUILD)/r_text.csv

# The tail of a recipe line that set $$need to the Debian packages missing: installs them when
# root with apt-get, else says what to install and fails. $(1): the target's name.
install_needed = if [ -n "$$need" ]; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then apt-get update -qq && apt-get install -y -qq $$need >/dev/null || exit 1; \
	  else echo "make $(1) needs:  sudo apt-get install$$need"; exit 1; fi; fi

# Cross-builds run under qemu-user: the model files this machine's build writes are
# read back there (s390x is big-endian), then the whole suite runs. Installs the
# toolchains when root with apt-get.
CROSS := aarch64-linux-gnu:aarch64 arm-linux-gnueabihf:arm s390x-linux-gnu:s390x
cross: | $(BUILD)
	@need=""; for t in $(CROSS); do command -v $${t%%:*}-gcc >/dev/null || need="$$need gcc-$${t%%:*}"; done; \
	command -v qemu-aarch64 >/dev/null || need="$$need qemu-user"; \
	$(call install_needed,cross)
	$(CC) $(TESTFLAGS) $(OMP) tests.c -o $(BUILD)/tests -lm
	@rm -rf $(BUILD)/fixture && mkdir -p $(BUILD)/fixture && $(BUILD)/tests --write-fixture $(BUILD)/fixture
	@set -e; for t in $(CROSS); do tr=$${t%%:*}; q=qemu-$${t#*:}; \
	  echo "== $$tr"; $$tr-gcc $(TESTFLAGS) -fopenmp tests.c -o $(BUILD)/tests_$$tr -lm; \
	  $$q -L /usr/$$tr $(BUILD)/tests_$$tr --check-fixture $(BUILD)/fixture | tail -n 2; \
	  $$q -L /usr/$$tr $(BUILD)/tests_$$tr > $(BUILD)/cross_$$tr.log 2>&1 || { cat $(BUILD)/cross_$$tr.log; exit 1; }; \
	  tail -n 1 $(BUILD)/cross_$$tr.log; done

# Windows: the suite and a demo --save_best run, cross-built with MinGW-w64 (OpenMP linked
# in) and run under wine; the model files this machine's build writes are checked there
# too. Installs both when root with apt-get, as make cross does.
MINGW := x86_64-w64-mingw32-gcc
WINE  := WINEDEBUG=-all wine
windows: | $(BUILD)
	@need=""; command -v $(MINGW) >/dev/null || need="$$need gcc-mingw-w64-x86-64"; \
	command -v wine >/dev/null || need="$$need wine"; \
	$(call install_needed,windows)
	$(MINGW) $(TESTFLAGS) -fopenmp tests.c -o $(BUILD)/tests.exe -static -lm
	$(MINGW) $(OPT) -std=c99 $(WARN) -Werror -fopenmp demo.c -o $(BUILD)/demo.exe -static -lm
	$(CC) $(TESTFLAGS) $(OMP) tests.c -o $(BUILD)/tests -lm
	@rm -rf $(BUILD)/fixture && mkdir -p $(BUILD)/fixture && $(BUILD)/tests --write-fixture $(BUILD)/fixture
	@$(WINE) $(BUILD)/tests.exe --check-fixture $(BUILD)/fixture 2>/dev/null | tail -n 2
	@printf $(IMPL)$(APP) > $(BUILD)/app.c
	$(MINGW) -O2 -fopenmp -I. $(BUILD)/app.c -o $(BUILD)/app.exe -static -lm
	@$(WINE) $(BUILD)/app.exe 2>/dev/null && echo "README's MinGW compile line ... ok"
	@printf 'demo.exe --save_best keeps the best epoch ... '; \
	if $(call save_best_check,$(WINE) $(BUILD)/demo.exe 2>/dev/null); then echo ok; else echo FAILED; exit 1; fi
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
	@need=""; command -v clang >/dev/null || need="$$need clang"; command -v wasm-ld >/dev/null || need="$$need lld"; \
	[ -d /usr/lib/wasm32-wasi ] || need="$$need wasi-libc"; \
	ls /usr/lib/llvm-*/lib/clang/*/lib/wasi/libclang_rt.builtins-wasm32.a >/dev/null 2>&1 || need="$$need libclang-rt-14-dev-wasm32"; \
	$(call install_needed,wasm)
	@$(MAKE) --no-print-directory $(BUILD)/web/ncf.wasm $(BUILD)/web/host
	cp web/index.html web/ncf.js $(BUILD)/web/
	@[ -f $(BUILD)/web/model.ncf ] || ./demo --train_epochs 2 --save $(BUILD)/web/model.ncf > /dev/null
	@echo "ncf.wasm: $$(wc -c < $(BUILD)/web/ncf.wasm) bytes. The page: python3 -m http.server -d $(BUILD)/web, then open http://localhost:8000"
web-test: wasm
	@need=""; command -v chromium >/dev/null || need="$$need chromium"; command -v node >/dev/null || need="$$need nodejs"; \
	command -v npm >/dev/null || need="$$need npm"; $(call install_needed,web-test)
	@[ -d $(BUILD)/web/npm/node_modules/playwright-core ] || \
	  npm install --no-save --no-audit --no-fund --prefix $(BUILD)/web/npm playwright-core > /dev/null
	@BUILD=$(BUILD) web/check.sh $(BUILD) $(BUILD)/web/model.ncf; ! grep -q fail $(BUILD)/checks
	node web/browser_test.mjs $(BUILD)/web $(BUILD)/web/host $(BUILD)/web/npm

# The device example (device/): a NeuMF factors 8 over 1,000 users x 2,000 items, trained
# here by device/gen.c, turned into C arrays (float32 and int8) by demo --export_c, read in
# place and served from a static workspace on a Cortex-M4F (hard float, qemu's mps2-an386), as
# Cortex-M0 code (soft float; qemu's mps2-an385 runs it on its Cortex-M3), and on RV32IMAC and
# RV32IMAFC (qemu's riscv32 virt), output over semihosting. device/run.sh builds and runs
# each, checks its top-10 lists against this machine's and prints heap, workspace, stack,
# instructions per recommendation and per open (qemu -icount), and ncf.h's code size (from
# the link map). Installs the toolchains when root with apt-get.
DEVICE_CORES := m4 m0 rv32imac rv32imafc
# MPI: Open MPI's mpicc and mpirun, installed when root with apt-get, as make cross does.
# test-mpi runs the MPI tests on 1 rank (it writes the reference models), then 2, 3 (an
# uneven split) and 4, each checking its model against 1 rank's bit for bit and resuming a
# 2-rank checkpoint; 2 ranks of 2 threads; 3 ranks under ASan+UBSan (leaks are counted by the
# tests' allocator: Open MPI's own unloaded plugins leave blocks LeakSanitizer cannot name).
# Then demo-mpi: an epoch on 2 ranks resumed for a second on 3 gives the file 1 rank writes;
# demo and demo-mpi print the same figures for it; and a rank killed mid-run stops the job
# with the checkpoint intact.
MPIRUN = mpirun --oversubscribe $(if $(filter 0,$(shell id -u)),--allow-run-as-root)
mpi_tools = need=""; command -v mpicc >/dev/null && command -v mpirun >/dev/null || need=" openmpi-bin libopenmpi-dev"; \
	$(call install_needed,$(1))
MPIDIR = $(BUILD)/mpi
MPI_SYN = --synthetic_users 600 --synthetic_items 400 --synthetic_ratings 24000 --threads 1
demo-mpi: demo.c ncf.h
	@$(call mpi_tools,demo-mpi)
	mpicc -DNCF_MPI $(CFLAGS_ALL) demo.c -o demo-mpi -lm

MPI_CXX = '\#define NCF_IMPLEMENTATION\n\#include "ncf.h"\nint main(int c, char **v) { ncf_dataset d; int ok; MPI_Init(&c, &v);\n\
  ok = ncf_synthetic(&d, 60, 40, 900, 4, 1) == NCF_OK && ncf_mpi_shard(&d, MPI_COMM_WORLD) == NCF_OK;\n\
  ncf_dataset_free(&d); MPI_Finalize(); return !ok; }\n'
figures = sed -n 's/, eval [0-9.]* s$$//; /^Iteration\|^    test\|^    validation/p' $(1)
test-mpi: demo | $(BUILD)
	@$(call mpi_tools,test-mpi)
	mpicc -DNCF_MPI $(TESTFLAGS) $(OMP) tests.c -o $(BUILD)/tests-mpi -lm
	mpicc -DNCF_MPI $(TESTFLAGS) -O1 -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer \
	  tests.c -o $(BUILD)/tests-mpi-asan -lm
	mpicc -DNCF_MPI $(CFLAGS_ALL) -Werror demo.c -o demo-mpi -lm
	@rm -rf $(MPIDIR) && mkdir -p $(MPIDIR) && rm -f $(BUILD)/checks && touch $(BUILD)/checks
	@for run in "1 1 tests-mpi" "2 1 tests-mpi" "3 1 tests-mpi" "4 1 tests-mpi" "2 2 tests-mpi" "3 1 tests-mpi-asan"; do \
	  set -- $$run; echo "== $$1 ranks, $$2 threads each: $(BUILD)/$$3"; \
	  OMP_NUM_THREADS=$$2 ASAN_OPTIONS=detect_leaks=0 $(MPIRUN) -np $$1 $(BUILD)/$$3 --mpi $(MPIDIR) > $(MPIDIR)/out.log 2>&1; \
	  rc=$$?; grep -v '^  ok$$' $(MPIDIR)/out.log | grep -v '^mpi_' ; \
	  if [ $$rc -eq 0 ] && tail -n 1 $(MPIDIR)/out.log | grep -q ' passed, 0 failed$$'; then echo pass >> $(BUILD)/checks; \
	  else echo "(exit $$rc)"; echo fail >> $(BUILD)/checks; fi; done
	$(call build_check,demo-mpi: 1 epoch on 2 ranks then 1 on 3 = 2 epochs on 1 rank,\
	  true && { $(MPIRUN) -np 2 ./demo-mpi $(MPI_SYN) --train_epochs 1 --save $(MPIDIR)/e1.ncf && \
	      $(MPIRUN) -np 3 ./demo-mpi $(MPI_SYN) --load $(MPIDIR)/e1.ncf --train_epochs 2 --save $(MPIDIR)/e2_3.ncf && \
	      $(MPIRUN) -np 1 ./demo-mpi $(MPI_SYN) --train_epochs 2 --save $(MPIDIR)/e2_1.ncf && \
	      cmp $(MPIDIR)/e2_3.ncf $(MPIDIR)/e2_1.ncf; })
	$(call build_check,demo and demo-mpi on 3 ranks: the same figures for that model,\
	  true && { ./demo $(MPI_SYN) --validation --load $(MPIDIR)/e2_1.ncf --train_epochs 0 > $(MPIDIR)/one.log && \
	      $(MPIRUN) -np 3 ./demo-mpi $(MPI_SYN) --validation --load $(MPIDIR)/e2_1.ncf --train_epochs 0 > $(MPIDIR)/three.log && \
	      [ -n "$$($(call figures,$(MPIDIR)/one.log))" ] && \
	      [ "$$($(call figures,$(MPIDIR)/one.log))" = "$$($(call figures,$(MPIDIR)/three.log))" ]; })
	$(call build_check,a rank killed mid-run: the job stops and the checkpoint loads,\
	  true && { ( $(MPIRUN) -np 2 ./demo-mpi --threads 1 --train_epochs 500 --save $(MPIDIR)/k.ncf --checkpoint_every 1 \
	          > $(MPIDIR)/kill.log 2>&1; echo $$? > $(MPIDIR)/kill.rc ) & \
	      for i in $$(seq 1200); do [ -f $(MPIDIR)/k.ncf ] && break; sleep 0.1; done; sleep 1; \
	      pkill -9 -n -x demo-mpi; wait; \
	      [ "$$(cat $(MPIDIR)/kill.rc)" != 0 ] && grep -q 'signal 9' $(MPIDIR)/kill.log && \
	      ./demo --load $(MPIDIR)/k.ncf --train_epochs 0 > $(MPIDIR)/kill_load.log; })
	$(call build_check,the MPI layer as C++11 (mpicxx; Open MPI's own C++ bindings left out),\
	  true && printf $(MPI_CXX) > $(MPIDIR)/cxx.cpp && mpicxx -DOMPI_SKIP_MPICXX -DNCF_MPI -std=c++11 -pedantic \
	  $(WARN) -Werror -I. $(MPIDIR)/cxx.cpp -o $(MPIDIR)/cxx && $(MPIRUN) -np 2 $(MPIDIR)/cxx)
	@p=$$(grep -c pass $(BUILD)/checks); f=$$(grep -c fail $(BUILD)/checks || true); echo "$$p passed, $$f failed"; [ $$f -eq 0 ]

# Training over 2 ranks of one thread each against rank 0 alone and against one process
# without MPI (the MLPerf config, lazy Adam, ml-20m-sized synthetic data): 7 rounds in turn
# in one job, medians, the median of the rounds' ratios, and the bytes a rank sends per step.
bench-mpi: | $(BUILD)
	@$(call mpi_tools,bench-mpi)
	mpicc -DNCF_MPI $(BENCHFLAGS) tests.c -o $(BUILD)/tests-mpi-bench -lm
	@grep -m1 'model name' /proc/cpuinfo
	OMP_NUM_THREADS=1 $(MPIRUN) -np 2 $(BUILD)/tests-mpi-bench --mpi-bench | tee $(BUILD)/bench-mpi.jsonl

device: demo | $(BUILD)
	@need=""; command -v arm-none-eabi-gcc >/dev/null || need="$$need gcc-arm-none-eabi"; \
	[ -d /usr/lib/arm-none-eabi/newlib ] || need="$$need libnewlib-arm-none-eabi"; \
	command -v qemu-system-arm >/dev/null || need="$$need qemu-system-arm"; \
	command -v riscv64-unknown-elf-gcc >/dev/null || need="$$need gcc-riscv64-unknown-elf"; \
	[ -d /usr/lib/picolibc/riscv64-unknown-elf ] || need="$$need picolibc-riscv64-unknown-elf"; \
	command -v qemu-system-riscv32 >/dev/null || need="$$need qemu-system-misc"; \
	$(call install_needed,device)
	@mkdir -p $(BUILD)/device
	$(CC) -O2 -std=c99 $(WARN) -Werror -I. device/gen.c -o $(BUILD)/device/gen -lm
	@$(BUILD)/device/gen $(BUILD)/device/model.ncf $(BUILD)/device/expect.h
	./demo --load $(BUILD)/device/model.ncf --export_c $(BUILD)/device/model_f32.h
	./demo --load $(BUILD)/device/model.ncf --int8 --export_c $(BUILD)/device/model_int8.h
	@set -e; for c in $(DEVICE_CORES); do BUILD=$(BUILD) device/run.sh $$c; done

# libFuzzer (clang): one binary per reader, each run FUZZ_SECONDS on a scratch
# corpus seeded from fuzz/corpus/NAME. Crashing inputs land in $(BUILD)/fuzz/.
FUZZ_SECONDS ?= 60
FUZZ_TARGETS := 1:model 2:dat 3:csv 4:tab 5:ncf 6:log
fuzz: | $(BUILD)
	@mkdir -p $(BUILD)/fuzz
	@set -e; for t in $(FUZZ_TARGETS); do n=$${t%%:*}; name=$${t#*:}; \
	  clang -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all -std=c99 $(WARN) -Werror -I. \
	    -DFUZZ_TARGET=$$n fuzz/fuzz.c -o $(BUILD)/fuzz/$$name -lm; \
	  mkdir -p $(BUILD)/fuzz/corpus_$$name; printf '%-6s ' $$name; \
	  if $(BUILD)/fuzz/$$name -max_total_time=$(FUZZ_SECONDS) -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
	       -artifact_prefix=$(BUILD)/fuzz/$$name- $(BUILD)/fuzz/corpus_$$name fuzz/corpus/$$name > $(BUILD)/fuzz/$$name.log 2>&1; \
	  then awk '/number_of_executed_units/{printf "%s inputs, ", $$2}' $(BUILD)/fuzz/$$name.log; echo "no failure"; \
	  else grep -h -m 5 'ERROR\|SUMMARY\|runtime error' $(BUILD)/fuzz/$$name.log; exit 1; fi; done

# The paper's recipe on its ml-1m split (NCF_DATA holds ml-1m.train.rating,
# ml-1m.test.rating and ml-1m.test.negative): GMF and MLP trained alone, each saved
# at its best epoch as the paper's code does, then NeuMF started from both (alpha 0.5)
# and fine-tuned with SGD; best of the start and 20 epochs, as the paper's code counts
# it. Built with -march=native: the factors-64 MLP alone takes over half an hour.
# SGD at 1 helps at factors 8; from 16 up every rate tried (1, 0.1, 0.01, 0.001)
# only lowers the start, 0.001 (the paper's code's rate) the least.
NCF_DATA ?= ../shared/data/ml-1m-ncf
GMF_EPOCHS ?= 20
MLP_EPOCHS ?= 20
FINETUNE ?= --optimizer sgd --learning_rate 0.001
FINETUNE_EPOCHS ?= 20
# every stage's extra flags: PAPER_FLAGS="--validation --seed 2" picks each stage's best epoch
# on the validation set (the same held-out items in all three, drawn by the seed)
PAPER_FLAGS ?=
FINETUNE_8 ?= --optimizer sgd --learning_rate 1
PAPER_LAYERS_8  := 64,32,16,8
PAPER_LAYERS_16 := 128,64,32,16
PAPER_LAYERS_32 := 256,128,64,32
PAPER_LAYERS_64 := 512,256,128,64
paper-f8 paper-f16 paper-f32 paper-f64: OPT += -march=native
paper-f8 paper-f16 paper-f32 paper-f64: paper-f%: demo | $(BUILD)
	./demo --data $(NCF_DATA)/ml-1m --model gmf --num_factors $* --train_epochs $(GMF_EPOCHS) --save_best $(BUILD)/gmf-f$*.ncf $(PAPER_FLAGS)
	./demo --data $(NCF_DATA)/ml-1m --model mlp --layers $(PAPER_LAYERS_$*) --train_epochs $(MLP_EPOCHS) --save_best $(BUILD)/mlp-f$*.ncf $(PAPER_FLAGS)
	./demo --data $(NCF_DATA)/ml-1m --pretrain_gmf $(BUILD)/gmf-f$*.ncf --pretrain_mlp $(BUILD)/mlp-f$*.ncf --alpha 0.5 $(or $(FINETUNE_$*),$(FINETUNE)) --train_epochs $(FINETUNE_EPOCHS) $(PAPER_FLAGS)

clean:
	rm -rf $(BUILD) demo demo-mpi tests *.o

