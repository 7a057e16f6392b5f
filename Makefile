# The front door.  `make demo` runs the quickstart; `make test` runs every test.
PYTHON ?= python3
VENV := .venv
VPY := $(VENV)/bin/python
BUILD := build

.PHONY: all build venv install demo test test-c test-python test-sanitize bench clean

all: install

build:
	cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
	cmake --build $(BUILD)

$(VENV)/.ready:
	$(PYTHON) -m venv $(VENV)
	$(VPY) -m pip install -q --upgrade pip
	$(VPY) -m pip install -q numpy pytest setuptools wheel
	touch $@

venv: $(VENV)/.ready

install: build venv
	$(VPY) -m pip install -q --no-build-isolation --force-reinstall --no-deps .

demo: install
	$(VPY) examples/quickstart.py

test-c: build
	cd $(BUILD) && ctest --output-on-failure

test-python: install
	$(VPY) -m pytest -q tests/python

# The C tests again under AddressSanitizer (leak detection on: every
# compiled variant must give its LLVM objects back) and UBSan.
test-sanitize:
	cmake -S . -B $(BUILD)-asan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DTACK_SANITIZE=ON >/dev/null
	cmake --build $(BUILD)-asan
	cd $(BUILD)-asan && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
		ctest --output-on-failure

test: test-c test-sanitize test-python

# Benchmarks beside Numba and C (run by hand; figures go in the notes).
bench: install
	$(VPY) -m pip install -q numba || true
	$(VPY) bench/suite.py
	$(VPY) bench/bench_disk_cache.py
	$(VPY) bench/bench_compile.py
	$(VPY) bench/bench_debug.py

clean:
	rm -rf $(BUILD) $(BUILD)-asan $(VENV) *.egg-info
