#!/usr/bin/env bash
# check.sh - the CUDA backend on a machine with an NVIDIA GPU (H100/H200)
# that has no network and no LLVM: installs the bundle's wheel (CPython 3.12,
# made by `make gpu-check-bundle` where the repository builds), runs the
# conformance suite on the "cuda" device and the CUDA benchmarks, and prints
# one summary.  Nothing is built or downloaded here.  bench/gpu/README.md
# gives the two commands:
#
#     make gpu-check-bundle                 # where Tack builds: build/gpu-check/
#     bash build/gpu-check/check.sh         # on the GPU machine
#
# (bench/gpu/check.sh run from a checkout finds build/gpu-check/ too.)
# Everything is bounded by `timeout`, so the whole run fits in 8 minutes.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
if [ -d "$HERE/wheels" ]; then
    B=$HERE
elif [ -d "$HERE/../../build/gpu-check/wheels" ]; then
    B=$(cd "$HERE/../../build/gpu-check" && pwd)
else
    echo "check.sh: no bundle (wheels/ beside this script, or build/gpu-check/): run" \
         "'make gpu-check-bundle' where the repository builds, and bring build/gpu-check/"
    exit 1
fi
START=$(date +%s)
LOG=$(mktemp -d /tmp/tack_check.XXXXXX)
SUMMARY=()
FAILED=0
note() { SUMMARY+=("$*"); echo "== $*"; }
elapsed() { echo $(( $(date +%s) - START )); }
left() { echo $(( 450 - $(elapsed) )); } # seconds left of the 8 minutes, with a margin
finish() {
    printf '\n==== SUMMARY (%ss)\n' "$(elapsed)"
    printf '  %s\n' "${SUMMARY[@]}"
    exit "$FAILED"
}

echo "== tack CUDA check: $(date -u +%FT%TZ), bundle $B (logs in $LOG)"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null \
    | sed 's/^/== GPU: /' || echo "== nvidia-smi: not available"

# ---- Python 3.12 and the wheel --------------------------------------------------
PY=""
for c in ${PYTHON:-} python3.12 python3; do
    p=$(command -v "$c" 2>/dev/null) || continue
    if "$p" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 12))' 2>/dev/null; then
        PY=$p
        break
    fi
done
if [ -z "$PY" ]; then
    note "python: no Python 3.12 found (the wheel is for CPython 3.12; PYTHON=... chooses one)"
    FAILED=1
    finish
fi
SITE="$LOG/site"
if "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target "$SITE" \
        "$B"/wheels/*.whl >"$LOG/install.log" 2>&1; then
    how="pip install --no-index --no-deps"
else
    # No pip for this Python: a wheel is a zip of what goes in site-packages.
    rm -rf "$SITE"
    for w in "$B"/wheels/*.whl; do "$PY" -m zipfile -e "$w" "$SITE" >>"$LOG/install.log" 2>&1; done
    how="unzipped (pip failed: see $LOG/install.log)"
fi
export PYTHONPATH="$SITE${PYTHONPATH:+:$PYTHONPATH}"
if ! where=$("$PY" -c "import numpy, pytest, tack; print(tack.__file__, tack.__version__)" 2>&1); then
    note "install: FAILED: $(echo "$where" | tail -1)"
    FAILED=1
    finish
fi
note "install: $(ls "$B"/wheels | tr '\n' ' ')$how, with $PY; tack at ${where}"

# ---- NVRTC no newer than the driver -----------------------------------------------
# PTX from a newer NVRTC than the driver's CUDA version does not load
# (CUDA_ERROR_UNSUPPORTED_PTX_VERSION): pair them, from what is installed.
drv=$(nvidia-smi 2>/dev/null | sed -n 's/.*CUDA Version: *\([0-9]*\)\.\([0-9]*\).*/\1/p' | head -1)
if [ -z "${TACK_NVRTC:-}" ] && [ -n "$drv" ]; then
    probe=$("$PY" - <<'PY' 2>&1
import numpy as np, tack
x = np.zeros(4, np.float32)
@tack.kernel
def probe(x, out):
    for i in range(x.shape[0]):
        out[i] = x[i]
print("ok" if ".target" in tack.cuda.compile(probe, x, x) else "no")
PY
)
    nvrtc_ok=0
    echo "$probe" | tail -1 | grep -q '^ok$' && nvrtc_ok=1
    sys_nv=$(ls "${CUDA_PATH:-${CUDA_HOME:-/usr/local/cuda}}"/lib64/libnvrtc.so.* 2>/dev/null \
             | sed -n 's/.*libnvrtc\.so\.\([0-9]*\)$/\1/p' | sort -n | tail -1)
    if [ "$nvrtc_ok" = 0 ] || { [ -n "$sys_nv" ] && [ "$drv" -lt "$sys_nv" ]; }; then
        # NVIDIA's wheels (nvidia-cuda-nvrtc) beside this Python's packages.
        lib=$("$PY" - "$drv" <<'PY' 2>/dev/null
import glob, os, site, sys
roots = site.getsitepackages() + [site.getusersitepackages()]
for d in roots:
    for p in sorted(glob.glob(os.path.join(d, "nvidia", "*", "lib", "libnvrtc.so." + sys.argv[1]))):
        print(p); raise SystemExit
PY
)
        if [ -n "$lib" ]; then export TACK_NVRTC="$lib"; note "NVRTC paired with driver CUDA $drv: TACK_NVRTC=$lib"
        else note "NVRTC: none for driver CUDA $drv found (system: ${sys_nv:-none}); PTX may be refused"; fi
    fi
fi

if out=$("$PY" -c "import tack; print(tack.device('cuda').description)" 2>&1); then
    note "device: $out"
    DEV_OK=1
else
    DEV_OK=0
    FAILED=1
    note "device: tack.device('cuda') FAILED: $(echo "$out" | tail -1)"
fi

# ---- the conformance suite on the cuda device ---------------------------------------
# every_device modules run each test once per device in TACK_TEST_DEVICES
# (conftest.py); -k cuda keeps those runs ("[cuda]") and test_cuda.py's.
# One pytest per module, all at once (NVRTC compiles dominate), so the
# suite fits its share of the budget.
TESTS="$B/tests/python"
t=$(left); [ "$t" -gt 240 ] && t=240
if [ "$DEV_OK" = 1 ] && [ "$t" -gt 30 ]; then
    mods=$( (grep -l "every_device" "$TESTS"/test_*.py; echo "$TESTS/test_cuda.py"; echo "$TESTS/test_workgroups.py") | sort -u)
    pids=()
    for m in $mods; do
        b=$(basename "$m" .py)
        (cd "$TESTS" && TACK_TEST_DEVICES=cuda TACK_CACHE=off timeout "$t" "$PY" -m pytest -q \
            -p no:cacheprovider "$m" -k cuda -o addopts="" >"$LOG/pytest_$b.log" 2>&1) &
        pids+=($!)
    done
    for p in "${pids[@]}"; do wait "$p"; done
    passed=0; failed=0; skipped=0
    for m in $mods; do
        b=$(basename "$m" .py); f="$LOG/pytest_$b.log"
        line=$(grep -E "[0-9]+ (passed|failed|error|skipped|deselected)" "$f" | tail -1)
        [ -z "$line" ] && line="no result (timed out or crashed: see $f)"
        echo "   $b: $line"
        p_=$(echo "$line" | grep -oE "[0-9]+ passed" | cut -d' ' -f1)
        f_=$(echo "$line" | grep -oE "[0-9]+ (failed|errors?)" | awk '{s += $1} END {print s + 0}')
        s_=$(echo "$line" | grep -oE "[0-9]+ skipped" | cut -d' ' -f1)
        passed=$((passed + ${p_:-0})); failed=$((failed + ${f_:-0})); skipped=$((skipped + ${s_:-0}))
        if echo "$line" | grep -q "no result"; then SUMMARY+=("  $b: $line"); failed=$((failed + 1)); fi
    done
    note "pytest on cuda (every_device modules, test_cuda.py, test_workgroups.py): $passed passed, $failed failed, $skipped skipped"
    [ "$failed" -gt 0 ] && FAILED=1
    tl=$(grep -E "[0-9]+ (passed|failed|error)" "$LOG/pytest_test_textures.log" 2>/dev/null | tail -1)
    hw=$(timeout 30 "$PY" -c "import tack; print(tack.device('cuda').hardware_texture_filtering)" 2>/dev/null)
    note "textures on cuda (hardware_texture_filtering=${hw:-?}): ${tl:-no result}"
    while read -r l; do SUMMARY+=("  $l"); done < <(cat "$LOG"/pytest_*.log | grep -E "^(FAILED|ERROR)" | head -20)
else
    note "pytest: skipped ($([ "$DEV_OK" = 1 ] && echo "no time left" || echo "no CUDA device"))"
fi

# ---- benchmarks ------------------------------------------------------------------------
FLOOR=""
CUDA_ROOT=${CUDA_PATH:-${CUDA_HOME:-/usr/local/cuda}}
if [ -x "$B/bench/gpu/cuda_floor" ]; then  # built with the bundle
    FLOOR="$B/bench/gpu/cuda_floor"
elif [ -f "$CUDA_ROOT/include/cuda.h" ] && command -v gcc >/dev/null &&
     gcc -O2 "$B/bench/gpu/cuda_floor.c" -I"$CUDA_ROOT/include" -L"$CUDA_ROOT/lib64/stubs" \
         -L"$CUDA_ROOT/lib64" -lcuda -o "$LOG/cuda_floor" >"$LOG/floor.log" 2>&1; then
    FLOOR="$LOG/cuda_floor"
else
    note "cuda_floor: not in the bundle and not buildable here: no driver-API floor"
fi
t=$(left); [ "$t" -gt 150 ] && t=150
if [ "$DEV_OK" = 0 ]; then
    note "benchmarks: skipped, no CUDA device"
elif [ "$t" -gt 20 ]; then
    timeout "$t" "$PY" "$B/bench/gpu/bench_cuda.py" $FLOOR 2>&1 | tee "$LOG/bench.log" | grep -v "^RESULT"
    while read -r _ name value unit rest; do
        SUMMARY+=("$(printf '%-28s %10s %-5s %s' "$name" "$value" "$unit" "$rest")")
    done < <(grep "^RESULT" "$LOG/bench.log")
    while read -r l; do SUMMARY+=("$l"); done < <(grep -E "^(SKIP|FAIL)" "$LOG/bench.log")
    grep -q "^FAIL" "$LOG/bench.log" && FAILED=1
else
    note "benchmarks: skipped, no time left"
fi
finish
