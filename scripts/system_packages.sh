#!/usr/bin/env bash
# Installs the system packages a step needs, when they are missing.
#   scripts/system_packages.sh demo   what `make demo` needs: a C compiler, CMake,
#                                     Ninja, Python's headers and venv, LLVM 14-19
#   scripts/system_packages.sh test   that, plus what `make test` runs: OpenCL
#                                     (PoCL, Intel's driver), spirv-val, hipRTC, MPI
#   scripts/system_packages.sh ci     that, plus clang and libFuzzer for `make fuzz`
# Debian and Ubuntu (apt-get).  As root it installs; otherwise through sudo;
# where neither is possible it prints the one command to run and fails.
# `scripts/system_packages.sh llvm-config` prints the llvm-config it finds;
# `scripts/system_packages.sh STEP --dry-run` prints what it would run (and
# exits 1 when something is missing) without installing anything.
set -euo pipefail
step=${1:-demo}
dry=${2:-}
case "$step" in demo|test|ci|llvm-config) ;; *)
  echo "usage: $0 demo|test|ci|llvm-config [--dry-run]" >&2; exit 2;; esac
case "$dry" in ''|--dry-run) ;; *) echo "usage: $0 $step [--dry-run]" >&2; exit 2;; esac

# LLVM 14 to 19 under the names distributions give it: llvm-config (Debian's
# default), llvm-config-N (Ubuntu, Debian's versioned packages), or only
# /usr/lib/llvm-N/bin (a versioned -dev package without the alternatives).
find_llvm_config() {
  local c v
  for c in ${LLVM_CONFIG:-} llvm-config llvm-config-{19,18,17,16,15,14} \
           /usr/lib/llvm-{19,18,17,16,15,14}/bin/llvm-config; do
    [ -n "$c" ] || continue
    command -v "$c" >/dev/null 2>&1 || continue
    v=$("$c" --version 2>/dev/null) || continue
    v=${v%%.*}
    if [ "$v" -ge 14 ] 2>/dev/null && [ "$v" -le 19 ] &&
       [ -d "$("$c" --libdir)" ] && [ -e "$("$c" --includedir)/llvm-c/Core.h" ]; then
      command -v "$c"
      return 0
    fi
  done
  return 1
}
if [ "$step" = llvm-config ]; then find_llvm_config; exit; fi

need=()      # installed with their recommended packages
lean=()      # without them (drivers and MPI: as CI always installed them)
want() { need+=("$@"); }
want_lean() { lean+=("$@"); }

# demo: building libtack and the extension in a virtual environment.
command -v gcc >/dev/null || want gcc
command -v make >/dev/null || want make
command -v cmake >/dev/null || want cmake
command -v ninja >/dev/null || want ninja-build
find_llvm_config >/dev/null || want llvm-dev
python3 -c 'import venv, ensurepip, sysconfig, os; assert os.path.exists(os.path.join(sysconfig.get_paths()["include"], "Python.h"))' \
  2>/dev/null || want python3-dev python3-venv
[ -f /usr/include/openssl/evp.h ] || want libssl-dev
# LLVM's static libraries link against libstdc++, zlib and libtinfo.
[ -f "$(gcc -print-file-name=libstdc++.so 2>/dev/null || echo none)" ] &&
  [ "$(gcc -print-file-name=libstdc++.so 2>/dev/null)" != libstdc++.so ] || want g++
[ -f /usr/include/zlib.h ] || want zlib1g-dev
[ -f /usr/include/curses.h ] || want libncurses-dev

if [ "$step" = test ] || [ "$step" = ci ]; then
  # The wheel's extension links libstdc++, zlib and libcrypto from their archives.
  [ -f "$(gcc -print-file-name=libstdc++.a 2>/dev/null || echo none)" ] &&
    [ "$(gcc -print-file-name=libstdc++.a 2>/dev/null)" != libstdc++.a ] || want g++
  [ -f /usr/lib/x86_64-linux-gnu/libz.a ] || want zlib1g-dev
  [ -f /usr/lib/x86_64-linux-gnu/libcrypto.a ] || want libssl-dev
  # OpenCL runs for real on PoCL; Intel's driver (with ocloc, Level Zero's
  # offline compiler) is what many users have beside it.
  [ -e /etc/OpenCL/vendors/pocl.icd ] || want_lean pocl-opencl-icd
  [ -e /etc/OpenCL/vendors/intel.icd ] || want_lean intel-opencl-icd
  [ -e /usr/include/CL/cl.h ] || want_lean ocl-icd-opencl-dev opencl-headers
  command -v spirv-val >/dev/null || want spirv-tools
  # HIP's offline check: hipRTC inside libamdhip64 and the device libraries.
  [ -e /usr/lib/x86_64-linux-gnu/libamdhip64.so.5 ] || want hipcc
  # The disk cache's MPI test and the MPI example run under a real mpirun.
  command -v mpirun >/dev/null || want_lean openmpi-bin libopenmpi-dev
  # The sanitizer builds use gcc's runtimes (libasan, libubsan).
  [ "$(gcc -print-file-name=libasan.so 2>/dev/null || echo libasan.so)" != libasan.so ] || want libasan8
fi
if [ "$step" = ci ]; then
  { command -v clang-14 >/dev/null &&
    [ -f "$(clang-14 -print-resource-dir)/lib/linux/libclang_rt.fuzzer-x86_64.a" ]; } ||
    want clang-14 libclang-rt-14-dev
fi

[ ${#need[@]} -gt 0 ] || [ ${#lean[@]} -gt 0 ] || exit 0
# Each package once, in the order first asked for.
dedup() { printf '%s\n' "$@" | awk 'NF && !seen[$0]++' | tr '\n' ' ' | sed 's/ $//'; }
need_s=$(dedup "${need[@]}")
lean_s=$(dedup "${lean[@]}")
cmd="apt-get update -q"
[ -z "$need_s" ] || cmd="$cmd && DEBIAN_FRONTEND=noninteractive apt-get install -y -q $need_s"
[ -z "$lean_s" ] || cmd="$cmd && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $lean_s"
echo "system_packages.sh ($step): missing ${need_s}${need_s:+${lean_s:+ }}${lean_s}" >&2
if [ "$dry" = --dry-run ]; then
  echo "$cmd"
  exit 1
fi
if ! command -v apt-get >/dev/null; then
  echo "system_packages.sh: no apt-get here; install the equivalents of: $need_s $lean_s" >&2
  exit 1
fi
if [ "$(id -u)" = 0 ]; then
  sh -c "$cmd"
elif command -v sudo >/dev/null && sudo -v 2>/dev/null; then
  sudo sh -c "$cmd"
else
  echo "system_packages.sh: these packages are missing and this user cannot install them." >&2
  echo "Run this once as root, then run make again:" >&2
  echo "  su -c '$cmd'" >&2
  exit 1
fi
