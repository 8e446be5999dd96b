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
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS) --timeout 600

demo: build
	@bash scripts/demo.sh $(BUILD) $(SHARED)

bench: build
	@bash bench/run.sh $(BUILD)

clean:
	rm -rf $(BUILD)
