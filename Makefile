# Convenience entry points. `make test` is what CI runs.
BUILD ?= build
JOBS ?= $(shell nproc)
SHARED ?= $(abspath ../shared)

.PHONY: deps configure build test demo bench clean

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

demo: build
	@bash scripts/demo.sh $(BUILD) $(SHARED)

bench: build
	@bash bench/run.sh $(BUILD)

clean:
	rm -rf $(BUILD)
