# Convenience entry points. `make test` is what CI runs.
BUILD ?= build
JOBS ?= $(shell nproc)
SHARED ?= $(abspath ../shared)

FUZZ_BUILD ?= build-fuzz
ASAN_BUILD ?= build-asan
# `make fuzz`: seconds per fuzz target; `make test` runs the short form.
FUZZ_SECONDS ?= 60
FUZZ_SMOKE_SECONDS ?= 20

.PHONY: deps configure build test demo bench clean fuzz fuzz-smoke test-asan

deps:
	@bash scripts/install-deps.sh

$(BUILD)/build.ninja:
	cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Release

configure: deps $(BUILD)/build.ninja

build: configure
	cmake --build $(BUILD) -j $(JOBS)

test: build
	rm -f $(BUILD)/test/e2e/isa-variants.txt
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS) --timeout 600
	@grep -h 'stories260K bf16' $(BUILD)/test/e2e/isa-variants.txt 2>/dev/null || \
	  echo "ISA variants: not run (../shared with the golden models is absent)"
	@$(MAKE) --no-print-directory fuzz-smoke

# Every file reader under libFuzzer + ASan + UBSan (test/fuzz/README.md).
fuzz: deps
	FUZZ_BUILD=$(FUZZ_BUILD) JOBS=$(JOBS) bash scripts/fuzz.sh $(FUZZ_SECONDS)

# The short form CI runs (from `make test`): each target on its seeds and
# regression inputs, long enough to catch a reader that crashes again.
fuzz-smoke:
	@if command -v clang++-22 >/dev/null 2>&1; then \
	  FUZZ_SEED=1 FUZZ_BUILD=$(FUZZ_BUILD) JOBS=$(JOBS) bash scripts/fuzz.sh $(FUZZ_SMOKE_SECONDS); \
	else \
	  echo "fuzz: SKIPPED (clang++-22 not installed; scripts/install-deps.sh installs clang-22 and libclang-rt-22-dev)"; \
	fi

# The runtime's and readers' unit tests under ASan + UBSan (no MLIR; not in
# CI: scripts/test-asan.sh has the measured times).
test-asan: deps
	ASAN_BUILD=$(ASAN_BUILD) JOBS=$(JOBS) bash scripts/test-asan.sh

demo: build
	@bash scripts/demo.sh $(BUILD) $(SHARED)

bench: build
	@bash bench/run.sh $(BUILD)

clean:
	rm -rf $(BUILD) $(FUZZ_BUILD) $(ASAN_BUILD)
