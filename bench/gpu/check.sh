#!/usr/bin/env bash
# check.sh - the CUDA backend on a machine with an NVIDIA GPU (H100/H200):
# builds Tack, runs the conformance suite on the "cuda" device and the CUDA
# tests, then the CUDA benchmarks, and prints one summary.  Meant for a
# fresh machine, run once from the repository root:
#
#     bash bench/gpu/check.sh
#
# Everything is bounded by `timeout` so the whole run fits in 8 minutes;
# what cannot be installed (no network: apt, pip) is skipped and said so.
set -u
cd "$(dirname "$0")/../.." || exit 1
ROOT=$(pwd)
START=$(date +%s)
LOG=$(mktemp -d /tmp/tack_check.XXXXXX)
SUMMARY=()
note() { SUMMARY+=("$*"); echo "== $*"; }
elapsed() { echo $(( $(date +%s) - START )); }
left() { echo $(( 460 - $(elapsed) )); } # seconds left of the budget, with a margin

echo "== tack CUDA check: $(date -u +%FT%TZ) in $ROOT (logs in $LOG)"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null \
    | sed 's/^/== GPU: /' || echo "== nvidia-smi: not available"

# ---- tools ------------------------------------------------------------------
need=()
for t in cmake ninja gcc make python3; do command -v "$t" >/dev/null || need+=("$t"); done
command -v llvm-config >/dev/null || command -v llvm-config-14 >/dev/null || need+=(llvm)
if [ ${#need[@]} -gt 0 ]; then
    echo "== missing: ${need[*]}; trying apt-get"
    SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo -n"
    timeout 60 $SUDO apt-get update -qq >"$LOG/apt.log" 2>&1
    timeout 150 $SUDO apt-get install -y -qq cmake ninja-build llvm-14-dev gcc make python3-venv \
        python3-dev libssl-dev >>"$LOG/apt.log" 2>&1 || note "apt-get install failed (see $LOG/apt.log)"
    [ -x /usr/lib/llvm-14/bin/llvm-config ] && export PATH="/usr/lib/llvm-14/bin:$PATH"
fi

# ---- NVRTC no newer than the driver ---------------------------------------------
# PTX from a newer NVRTC than the driver's CUDA version does not load
# (CUDA_ERROR_UNSUPPORTED_PTX_VERSION): pair them.
CUDA_ROOT=${CUDA_PATH:-${CUDA_HOME:-/usr/local/cuda}}
drv=$(nvidia-smi 2>/dev/null | sed -n 's/.*CUDA Version: *\([0-9]*\)\.\([0-9]*\).*/\1\2/p' | head -1)
nv=$(ls "$CUDA_ROOT"/lib64/libnvrtc.so.* 2>/dev/null | sed -n 's/.*libnvrtc\.so\.\([0-9]*\)$/\1/p' | sort -n | tail -1)
echo "== driver CUDA ${drv:-?} (major.minor digits), toolkit NVRTC major ${nv:-none} at $CUDA_ROOT"
if [ -n "$drv" ] && [ -n "$nv" ] && [ "${drv:0:2}" -lt "$nv" ] 2>/dev/null; then
    want="nvidia-cuda-nvrtc-cu${drv:0:2}"
    echo "== the driver is older than NVRTC $nv: looking for $want"
    lib=$(python3 - <<PY 2>/dev/null
import glob, os, site
for d in site.getsitepackages() + [site.getusersitepackages()]:
    for p in glob.glob(os.path.join(d, "nvidia", "cuda_nvrtc", "lib", "libnvrtc.so.*")):
        if "builtins" not in p and "alt" not in p:
            print(p); raise SystemExit
PY
)
    if [ -z "$lib" ]; then
        timeout 90 python3 -m pip install -q --user "$want" >"$LOG/nvrtc.log" 2>&1 || true
        lib=$(python3 -c "import glob,site; print((glob.glob(site.getusersitepackages()+'/nvidia/cuda_nvrtc/lib/libnvrtc.so.*[0-9]')+[''])[0])" 2>/dev/null)
    fi
    if [ -n "$lib" ]; then export TACK_NVRTC="$lib"; note "NVRTC paired with the driver: TACK_NVRTC=$lib"
    else note "no NVRTC matching driver CUDA ${drv:0:2}: PTX may be refused (see the tests)"; fi
fi

# ---- build and install ----------------------------------------------------------
PY=""
if timeout 240 make install >"$LOG/build.log" 2>&1; then
    PY="$ROOT/.venv/bin/python"
    note "build: make install ok ($(elapsed)s)"
else
    # No network for the venv's pip: a venv over the system's packages.
    echo "== make install failed (tail of $LOG/build.log):"; tail -5 "$LOG/build.log"
    if timeout 120 make build >>"$LOG/build.log" 2>&1 &&
       python3 -m venv --system-site-packages .venv-sys >>"$LOG/build.log" 2>&1 &&
       timeout 120 .venv-sys/bin/python -m pip install -q --no-build-isolation --no-deps . \
           >>"$LOG/build.log" 2>&1; then
        PY="$ROOT/.venv-sys/bin/python"
        note "build: installed into .venv-sys over the system's numpy/pytest ($(elapsed)s)"
    else
        note "build: FAILED (see $LOG/build.log)"
    fi
fi

# ---- C tests ------------------------------------------------------------------------
if [ -x build/test_cuda ]; then
    if (cd build && timeout 60 ./test_cuda >"$LOG/test_cuda_c.log" 2>&1); then
        note "C test_cuda: $(tail -1 "$LOG/test_cuda_c.log")"
    else
        note "C test_cuda: FAILED: $(grep -m3 'CHECK failed' "$LOG/test_cuda_c.log" | tr '\n' ' ')"
    fi
fi

if [ -z "$PY" ]; then
    printf '\n==== SUMMARY (%ss)\n' "$(elapsed)"; printf '  %s\n' "${SUMMARY[@]}"; exit 1
fi
if out=$("$PY" -c "import tack; print(tack.device('cuda').description)" 2>&1); then
    note "device: $out"; DEV_OK=1
else
    DEV_OK=0
    note "device: tack.device('cuda') FAILED: $(echo "$out" | tail -1)"
fi

# ---- optional peers (skipped quietly without network) ------------------------------
for pkg in warp-lang "cupy-cuda${drv:0:2}x"; do
    [ -n "${drv:-}" ] || break
    timeout 60 "$PY" -m pip install -q "$pkg" >"$LOG/pip_$pkg.log" 2>&1 \
        && echo "== installed $pkg" || echo "== $pkg not installed (see $LOG/pip_$pkg.log)"
done

# ---- the conformance suite on the cuda device -------------------------------------
# every_device modules run each test once per device in TACK_TEST_DEVICES
# (conftest.py); -k cuda keeps those runs ("[cuda]") and test_cuda.py.
# One pytest per module, all at once (NVRTC compiles dominate; the GPU is
# shared), so the suite fits its share of the budget.
t=$(left); [ "$t" -gt 240 ] && t=240
if [ "$t" -gt 30 ]; then
    mods=$(grep -l "every_device" tests/python/test_*.py; echo tests/python/test_cuda.py)
    pids=()
    for m in $mods; do
        b=$(basename "$m" .py)
        TACK_TEST_DEVICES=cuda timeout "$t" "$PY" -m pytest -q -p no:cacheprovider "$m" -k cuda \
            -o addopts="" >"$LOG/pytest_$b.log" 2>&1 &
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
        f_=$(echo "$line" | grep -oE "[0-9]+ (failed|error)" | awk '{s += $1} END {print s + 0}')
        s_=$(echo "$line" | grep -oE "[0-9]+ skipped" | cut -d' ' -f1)
        passed=$((passed + ${p_:-0})); failed=$((failed + ${f_:-0})); skipped=$((skipped + ${s_:-0}))
        echo "$line" | grep -q "no result" && SUMMARY+=("  $b: $line")
    done
    note "pytest on cuda (every_device modules + test_cuda.py): $passed passed, $failed failed, $skipped skipped"
    # Textures: f32 samples come from the texture unit there (8-bit weights,
    # the tolerance docs/devices.md gives); f64 ones stay exact.
    tl=$(grep -E "[0-9]+ (passed|failed|error)" "$LOG/pytest_test_textures.log" 2>/dev/null | tail -1)
    hw=$(timeout 30 "$PY" -c "import tack; print(tack.device('cuda').hardware_texture_filtering)" 2>/dev/null)
    note "textures on cuda (hardware_texture_filtering=${hw:-?}): ${tl:-no result}"
    while read -r l; do SUMMARY+=("  $l"); done < <(cat "$LOG"/pytest_*.log | grep -E "^(FAILED|ERROR)" | head -20)
else
    note "pytest: skipped, no time left"
fi

# ---- benchmarks -----------------------------------------------------------------------
FLOOR=""
if [ -f "$CUDA_ROOT/include/cuda.h" ]; then
    if gcc -O2 bench/gpu/cuda_floor.c -I"$CUDA_ROOT/include" -L"$CUDA_ROOT/lib64/stubs" \
           -L"$CUDA_ROOT/lib64" -lcuda -o "$LOG/cuda_floor" >"$LOG/floor.log" 2>&1; then
        FLOOR="$LOG/cuda_floor"
    else
        note "cuda_floor: build failed ($(head -c 200 "$LOG/floor.log"))"
    fi
else
    note "cuda_floor: no cuda.h under $CUDA_ROOT/include: no driver-API floor"
fi
t=$(left); [ "$t" -gt 150 ] && t=150
if [ "$DEV_OK" = 0 ]; then
    note "benchmarks: skipped, no CUDA device"
elif [ "$t" -gt 20 ]; then
    timeout "$t" "$PY" bench/gpu/bench_cuda.py $FLOOR 2>&1 | tee "$LOG/bench.log" | grep -v "^RESULT"
    while read -r _ name value unit rest; do
        SUMMARY+=("$(printf '%-28s %10s %-5s %s' "$name" "$value" "$unit" "$rest")")
    done < <(grep "^RESULT" "$LOG/bench.log")
    while read -r l; do SUMMARY+=("$l"); done < <(grep -E "^(SKIP|FAIL)" "$LOG/bench.log")
else
    note "benchmarks: skipped, no time left"
fi

printf '\n==== SUMMARY (%ss)\n' "$(elapsed)"
printf '  %s\n' "${SUMMARY[@]}"
