# attnbench: build, test, benchmark, profile, plot.
#   make            build build/attnbench
#   make peers      fetch the peers' pinned packages (FlashInfer, cuDNN frontend), then make
#   make test       CPU tests (and GPU verification where a GPU is present)
#   make lint       no function over 200 lines (lizard), no include pointing up a layer
#   make quick      the default quick sweep on this GPU
#   make sanitize   quick verification under compute-sanitizer (memcheck, racecheck, synccheck)
#   make fuzz       the CSV reader and the option parser under libFuzzer, ASan, UBSan
#   make plots      render plots/*.png from results CSVs
#   make ncu ARGS="run ..." / make nsys ARGS="run ..."   profile one configuration
#   make ci-gpu     CI suite on this GPU, compared with results/baseline/<gpu>.csv
#   make results [PART=STEP|N]   this GPU's official results into results/<gpu>/, one
#                   revision, resumable, each call within a 10-minute window (bench/results.sh)

NVCC      ?= nvcc
CC        ?= gcc
CUDA_HOME ?= $(patsubst %/bin/nvcc,%,$(shell which $(NVCC) 2>/dev/null))
BUILD     ?= build
VERSION   := $(shell git describe --always --dirty --abbrev=12 2>/dev/null || echo unknown)

GENCODE   ?= -gencode=arch=compute_90a,code=sm_90a -gencode=arch=compute_90,code=compute_90
CFLAGS    += -std=c11 -O2 -g -fopenmp -Wall -Wextra -Werror=implicit-function-declaration \
             -D_POSIX_C_SOURCE=200809L -I$(CUDA_HOME)/include \
             -DATTNBENCH_SUITE_DIR=\"$(CURDIR)/bench/suites\"
NVFLAGS   += -std=c++17 -O3 -g -lineinfo $(GENCODE) -Xcompiler -Wall \
             --expt-relaxed-constexpr
LDLIBS    += -lcublas -lcuda -lgomp -lm -ldl -lcjson

# Peers (kernels/peers/): built from the headers `make peers` unpacks into $(PEERS);
# without them each peer is a stub whose rows are unsupported ("not built").
PEERS     ?= .peers
# FlashInfer's headers build against the CCCL its wheel carries, ahead of the toolkit's
# (-I, as its JIT does), and are system headers there (-isystem: their warnings are its own).
FI_CCCL         := $(PEERS)/flashinfer/cccl
HAVE_FLASHINFER := $(and $(wildcard $(PEERS)/flashinfer/include/flashinfer/attention/decode.cuh),$(wildcard $(FI_CCCL)/libcudacxx/include/cuda/cmath))
HAVE_CUDNN_FE   := $(wildcard $(PEERS)/cudnn_frontend/include/cudnn_frontend.h)
PEER_FLAGS := $(if $(HAVE_FLASHINFER),-DATTN_HAVE_FLASHINFER -I$(FI_CCCL)/cub -I$(FI_CCCL)/libcudacxx/include \
                -I$(FI_CCCL)/thrust -isystem $(PEERS)/flashinfer/include) \
              $(if $(HAVE_CUDNN_FE),-DATTN_HAVE_CUDNN_FE -I$(PEERS)/cudnn_frontend/include)
# XQA (kernels/peers/xqa.cu) is compiled per configuration from FlashInfer's copy of its
# sources: one translation unit each under kernels/peers/xqa/, built only when they are there.
HAVE_XQA   := $(wildcard $(PEERS)/flashinfer/csrc/xqa/mha.cu)
PEER_FLAGS += $(if $(HAVE_XQA),-DATTN_HAVE_XQA)
XQA_SRC    := $(if $(HAVE_XQA),$(wildcard kernels/peers/xqa/*.cu))
# As FlashInfer's JIT builds them: SASS for the target alone (no PTX). Without -lineinfo,
# which makes each configuration's cubin four times larger (0.12 -> 0.53 MB); add it to
# XQA_FLAGS to profile XQA by source line. The sources' own warnings are not ours to fix.
XQA_GENCODE := $(or $(foreach g,$(GENCODE),$(if $(findstring code=compute_,$(g)),,$(g))),$(GENCODE))
XQA_FLAGS  := $(filter-out $(GENCODE) -lineinfo,$(NVFLAGS)) $(XQA_GENCODE) -w -I$(PEERS)/flashinfer/csrc/xqa

HOST_SRC  := $(wildcard problem/*.c report/*.c harness/*.c reference/*.c kernels/*.c bench/cmd_*.c) bench/usage.c bench/options.c bench/suite.c bench/out_csv.c bench/errors.c bench/pool.c bench/timeline.c
CU_SRC    := $(wildcard harness/*.cu kernels/*.cu kernels/peers/*.cu) $(XQA_SRC)
OBJ       := $(HOST_SRC:%.c=$(BUILD)/%.o) $(CU_SRC:%.cu=$(BUILD)/%.o)
LIB       := $(BUILD)/libattnbench.a
TEST_SRC  := $(wildcard tests/test_*.c)
TEST_BIN  := $(TEST_SRC:tests/%.c=$(BUILD)/tests/%)

.PHONY: FORCE all peers test cpu-test lint gpu-verify quick sanitize fuzz plots ncu nsys ci-gpu results clean
all: $(BUILD)/attnbench

# The CPU reference at -O3, where GCC vectorises its fills and loops (same results: no
# reassociation without -ffast-math); it is most of a large row's verification time.
$(BUILD)/reference/%.o: CFLAGS += -O3
$(BUILD)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -MMD -MP -c $< -o $@
$(BUILD)/%.o: %.cu
	@mkdir -p $(dir $@)
	$(NVCC) $(NVFLAGS) -MMD -MP -c $< -o $@
# The peers' flags and package versions, rewritten only when they change: a peer object
# rebuilds when make peers brings (or changes) its package, and when a build switches
# between the real peers and the stubs (PEERS=...).
$(BUILD)/peers.stamp: FORCE
	@mkdir -p $(BUILD)
	@{ echo '$(PEER_FLAGS) $(HAVE_XQA)'; cat $(PEERS)/VERSIONS 2>/dev/null || true; } > $@.new
	@cmp -s $@.new $@ && rm $@.new || mv $@.new $@
$(BUILD)/kernels/peers/%.o: kernels/peers/%.cu $(BUILD)/peers.stamp
	@mkdir -p $(dir $@)
	$(NVCC) $(NVFLAGS) $(PEER_FLAGS) -MMD -MP -c $< -o $@
# FlashInfer's JIT compiles its attention modules with fast math
$(BUILD)/kernels/peers/flashinfer.o: PEER_FLAGS += -use_fast_math
$(BUILD)/kernels/peers/xqa/%.o: kernels/peers/xqa/%.cu $(BUILD)/peers.stamp
	@mkdir -p $(dir $@)
	$(NVCC) $(XQA_FLAGS) -MMD -MP -c $< -o $@
# flashinfer-cascade runs FlashInfer's Hopper (FA3) prefill, built as FlashInfer's JIT
# builds it: with the CUTLASS and libcu++ headers its wheel ships (ahead of the
# toolkit's libcu++), -DNDEBUG, for sm_90a alone (the kernel is sm_90a-only code); the
# warnings silenced are those of FlashInfer's and CUTLASS's headers.
FI_CUTLASS := $(wildcard $(PEERS)/flashinfer/cutlass/include/cutlass/cutlass.h)
FI_SM90_FLAGS := -DATTN_HAVE_FLASHINFER_SM90 -DNDEBUG -DCUTE_SM90_EXTENDED_MMA_SHAPES_ENABLED \
    -DFLASHINFER_ENABLE_F16 -DFLASHINFER_ENABLE_BF16 -I$(PEERS)/flashinfer/cccl/libcudacxx/include \
    -I$(PEERS)/flashinfer/cutlass/include -I$(PEERS)/flashinfer/cutlass/tools/util/include \
    -diag-suppress=1444,3357,20012 -Xcompiler=-Wno-unused-but-set-variable,-Wno-sign-compare
$(BUILD)/kernels/peers/flashinfer_cascade.o: GENCODE := -gencode=arch=compute_90a,code=sm_90a
$(BUILD)/kernels/peers/flashinfer_cascade.o: PEER_FLAGS += $(if $(and $(HAVE_FLASHINFER),$(FI_CUTLASS)),$(FI_SM90_FLAGS))
# The cuDNN frontend's headers are all host code: without debug information, which
# would be some 50 MB of the object and 13 MB of the binary.
$(BUILD)/kernels/peers/cudnn.o: NVFLAGS := $(filter-out -g,$(NVFLAGS))
$(LIB): $(OBJ)
	@rm -f $@
	ar rcs $@ $^
# The revision the binary is built from; rewritten only when it changes, so that a
# commit relinks the binary without rebuilding anything else.
$(BUILD)/version.c: FORCE
	@mkdir -p $(BUILD)
	@echo 'const char attnbench_version[] = "$(VERSION)";' > $@.new
	@cmp -s $@.new $@ && rm $@.new || mv $@.new $@
$(BUILD)/version.o: $(BUILD)/version.c
	$(CC) -c $< -o $@
FORCE:
$(BUILD)/attnbench: $(BUILD)/bench/main.o $(BUILD)/version.o $(LIB)
	$(NVCC) $(GENCODE) -o $@ $^ $(LDLIBS)
	@test -n "$(HAVE_FLASHINFER)$(HAVE_CUDNN_FE)" || echo "attnbench: the peers (FlashInfer, XQA, cuDNN) are stubs: make peers, then make, builds them"

# The peers' pinned packages (kernels/peers/peers.txt) from PyPI into $(PEERS).
peers:
	PEERS=$(PEERS) kernels/peers/fetch.sh
$(BUILD)/tests/%: tests/%.c $(LIB) $(BUILD)/version.o
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -Itests -o $@.o -c $<
	$(NVCC) $(GENCODE) -o $@ $@.o $(BUILD)/version.o $(LIB) $(LDLIBS) -lcmocka

# The CPU tests (cmocka binaries, then the shell tests of the command line), then,
# where a GPU is usable, the quick GPU verification.
test: cpu-test
	@if $(BUILD)/attnbench peak >/dev/null 2>&1; then $(MAKE) --no-print-directory gpu-verify; \
	 else echo "make test: no usable GPU here, GPU verification skipped"; fi
cpu-test: $(BUILD)/attnbench $(TEST_BIN)
	@tests/run_tests.sh $(BUILD)
gpu-verify: $(BUILD)/attnbench
	$(BUILD)/attnbench verify --suite quick

# House rules a tool checks: no function over 200 lines in the sources (lizard, from
# requirements-dev.txt; .cu and .cuh files are named, lizard's directory scan skips
# them), and no include pointing up a layer (tests/check_layers.sh).
LIZARD    ?= python3 -m lizard
LINT_SRC  := $(foreach d,problem report harness kernels kernels/peers reference bench,$(wildcard $d/*.c $d/*.h $d/*.cu $d/*.cuh))
lint:
	@ok=1; \
	 $(LIZARD) --warnings_only --length 200 --CCN 1000000 --arguments 1000 $(LINT_SRC) || ok=0; \
	 tests/check_layers.sh || ok=0; \
	 if [ $$ok = 1 ]; then echo "lint: passed"; else echo "make lint: failed (lines above)" >&2; exit 1; fi

# The main job: the default quick sweep, a readable table and a CSV.
QUICK_CSV ?= $(BUILD)/quick.csv
quick: $(BUILD)/attnbench
	$(BUILD)/attnbench sweep --suite quick --out $(QUICK_CSV) --force

sanitize: $(BUILD)/attnbench
	compute-sanitizer --target-processes all --tool memcheck --error-exitcode 1 $(BUILD)/attnbench verify --suite quick
	compute-sanitizer --target-processes all --tool racecheck --error-exitcode 1 $(BUILD)/attnbench verify --suite quick
	compute-sanitizer --target-processes all --tool synccheck --error-exitcode 1 $(BUILD)/attnbench verify --suite quick

# Bounded fuzzing of the host code that reads what users give it: FUZZ_TIME seconds
# each for the CSV reader (with compare, table and the --out check behind it) and the
# option parser (command lines and suite files), built with libFuzzer, AddressSanitizer
# and UndefinedBehaviorSanitizer (every report fatal). Any sanitizer report, crash,
# input running over FUZZ_INPUT_TIMEOUT seconds or leak fails the target. Seeds:
# tests/fuzz/*/; what the fuzzer finds stays under $(BUILD)/fuzz/.
FUZZ_CC   ?= $(shell command -v clang-14 || command -v clang)
FUZZ_TIME ?= 60
FUZZ_INPUT_TIMEOUT ?= 10
FUZZ_FLAGS := -std=c11 -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
              -D_POSIX_C_SOURCE=200809L -I$(CUDA_HOME)/include -DATTNBENCH_SUITE_DIR=\"$(CURDIR)/bench/suites\"
FUZZ_CSV_SRC := tests/fuzz/fuzz_csv.c report/csv.c report/compare.c report/table.c report/select_total.c report/merge.c \
                problem/presets.c problem/problem.c problem/ctx_dist.c problem/share_map.c bench/out_csv.c
FUZZ_OPT_SRC := tests/fuzz/fuzz_options.c bench/options.c bench/suite.c bench/usage.c harness/grid.c \
                problem/problem.c problem/ctx_dist.c problem/presets.c problem/share_map.c report/table.c \
                report/select_total.c report/csv.c \
                kernels/registry.c tests/fuzz/kernels_stub.c
$(BUILD)/fuzz/fuzz_csv: $(FUZZ_CSV_SRC) $(wildcard problem/*.h report/*.h harness/*.h bench/*.h)
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_FLAGS) -o $@ $(FUZZ_CSV_SRC) -lm -lcjson
$(BUILD)/fuzz/fuzz_options: $(FUZZ_OPT_SRC) $(wildcard problem/*.h report/*.h harness/*.h bench/*.h kernels/*.h)
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_FLAGS) -o $@ $(FUZZ_OPT_SRC) -lm -lcjson
# Each target's progress goes to $(BUILD)/fuzz/NAME.log; its last lines are printed, and
# the whole log where the fuzzer failed.
FUZZ_RUN = cd $(BUILD)/fuzz && if ./$(1) -max_total_time=$(FUZZ_TIME) -timeout=$(FUZZ_INPUT_TIMEOUT) \
	    -rss_limit_mb=2048 -max_len=$(2) -print_final_stats=1 found_$(3) $(CURDIR)/tests/fuzz/$(3) \
	    > $(1).log 2>&1; then echo "== $(1)"; tail -n 6 $(1).log; else cat $(1).log; echo "make fuzz: $(1) failed"; exit 1; fi
fuzz: $(BUILD)/fuzz/fuzz_csv $(BUILD)/fuzz/fuzz_options
	@mkdir -p $(BUILD)/fuzz/found_csv $(BUILD)/fuzz/found_options
	@$(call FUZZ_RUN,fuzz_csv,8192,csv)
	@$(call FUZZ_RUN,fuzz_options,4096,options)

# Profile one configuration: make ncu ARGS="run --kernel fused --beam 16 --ctx 8k"
# Only the timed launches are captured (--profile brackets them); clocks are left
# as the GPU runs them (--clock-control none), so the numbers match the sweeps.
PROFILE_DIR ?= results/profiles
PROFILE_NAME ?= $(shell echo "$(ARGS)" | tr -c 'a-zA-Z0-9\n' '_' | tr -s _ | cut -c1-80)
NCU_FLAGS ?= --set full --clock-control none --profile-from-start off --target-processes all
NCU_METRICS ?= gpu__time_duration.sum,dram__bytes_read.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,sm__warps_active.avg.pct_of_peak_sustained_active,launch__grid_size,launch__registers_per_thread
ncu: $(BUILD)/attnbench
	@test -n "$(ARGS)" || { echo 'make ncu: set ARGS, e.g. ARGS="run --kernel fused --beam 16"' >&2; exit 2; }
	@mkdir -p $(PROFILE_DIR)
	ncu $(NCU_FLAGS) -f -o $(PROFILE_DIR)/$(PROFILE_NAME) $(BUILD)/attnbench $(ARGS) --profile --iters 3 --warmup 1
	ncu --import $(PROFILE_DIR)/$(PROFILE_NAME).ncu-rep --csv --page raw --metrics $(NCU_METRICS) \
	    > $(PROFILE_DIR)/$(PROFILE_NAME).csv
	@echo "report: $(PROFILE_DIR)/$(PROFILE_NAME).ncu-rep  metrics: $(PROFILE_DIR)/$(PROFILE_NAME).csv"
NSYS_FLAGS ?= --capture-range=cudaProfilerApi --trace=cuda,nvtx
nsys: $(BUILD)/attnbench
	@test -n "$(ARGS)" || { echo 'make nsys: set ARGS, e.g. ARGS="run --kernel fused --beam 16"' >&2; exit 2; }
	@mkdir -p $(PROFILE_DIR)
	nsys profile $(NSYS_FLAGS) -f true -o $(PROFILE_DIR)/$(PROFILE_NAME) $(BUILD)/attnbench $(ARGS) --profile

# The CI suite on this GPU, compared with the committed baseline of its kind.
GPU ?= $(shell $(BUILD)/attnbench peak 2>/dev/null | awk '/^gpu/ {gsub(/[()]/, "", $$NF); print $$NF}')
ci-gpu: $(BUILD)/attnbench
	@test -f results/baseline/$(GPU).csv || { echo "make ci-gpu: no results/baseline/$(GPU).csv: copy results/$(GPU)/ci.csv from make results there" >&2; exit 2; }
	$(BUILD)/attnbench sweep --suite ci --out $(BUILD)/ci.csv --force
	$(BUILD)/attnbench compare results/baseline/$(GPU).csv $(BUILD)/ci.csv

# Every official CSV, log and table of this GPU, from the revision built (run again
# until it says complete; PART runs one step: a name or its number).
results: $(BUILD)/attnbench
	ATTNBENCH=$(BUILD)/attnbench REVISION=$(VERSION) bench/results.sh $(PART)

include plots/plots.mk

clean:
	rm -rf $(BUILD)

-include $(OBJ:.o=.d) $(BUILD)/bench/main.d
