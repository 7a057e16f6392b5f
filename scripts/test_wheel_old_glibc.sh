#!/usr/bin/env bash
# Proves the manylinux_2_17 tag of the cp39 wheel on an older glibc than the
# one it was built on: a Debian bullseye root (glibc 2.31, CPython 3.9) made
# with debootstrap, the wheel installed into a virtual environment there with
# pip, and the Python tests run inside it with chroot.  Needs root (chroot,
# mount) and Debian's and PyPI's registries.
#
#   scripts/test_wheel_old_glibc.sh WHEEL RUN_DIR [pytest arguments...]
#
# WHEEL is the repaired cp39 wheel; RUN_DIR holds tests/ examples/ docs/
# README.md as .ci/run lays them out for the wheels.  The root is kept in
# build/bullseye-root between runs (debootstrap takes about a minute).
set -euo pipefail
wheel=$(realpath "$1"); run_dir=$(realpath "$2"); shift 2
root=$(realpath -m "${BULLSEYE_ROOT:-build/bullseye-root}")

if [ "$(id -u)" != 0 ]; then
  echo "test_wheel_old_glibc.sh: needs root (debootstrap, chroot, mount)" >&2; exit 1
fi
command -v debootstrap >/dev/null ||
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends debootstrap
if [ ! -x "$root/usr/bin/python3" ]; then
  rm -rf "$root"
  debootstrap --variant=minbase --include=python3,python3-venv,ca-certificates \
    bullseye "$root" http://deb.debian.org/debian >"$root.log" 2>&1 ||
    { tail -20 "$root.log" >&2; exit 1; }
fi
cp /etc/resolv.conf "$root/etc/resolv.conf"
# pip there trusts what pip here trusts (a registry behind a TLS proxy).
ca=${PIP_CERT:-/etc/ssl/certs/ca-certificates.crt}

# /proc (CPU counts, /proc/self), /dev (urandom, shm) and a clean /work.
cleanup() {
  umount "$root/dev/shm" "$root/dev" "$root/proc" 2>/dev/null || true
}
trap cleanup EXIT
mount -t proc proc "$root/proc"
mount --bind /dev "$root/dev"
mkdir -p "$root/dev/shm" && mount -t tmpfs tmpfs "$root/dev/shm"
rm -rf "$root/work" && mkdir -p "$root/work"
cp -r "$run_dir" "$root/work/run"
cp "$wheel" "$root/work/"
cp "$ca" "$root/work/ca.crt"

in_root() {
  env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 \
    PIP_CERT=/work/ca.crt PIP_DISABLE_PIP_VERSION_CHECK=1 TACK_TEST_WHEEL=1 chroot "$root" "$@"
}
in_root ldd --version | sed -n 1p   # reads it all: no SIGPIPE under pipefail
in_root python3 -m venv /work/venv
in_root /work/venv/bin/python -m pip install -q --upgrade pip
in_root /work/venv/bin/python -m pip install -q "/work/$(basename "$wheel")" pytest pillow
in_root sh -c 'cd /work/run && /work/venv/bin/python -c "import sys, tack; print(\"testing\", tack.__file__, \"on\", sys.version.split()[0])" &&
  /work/venv/bin/python -m pytest -q -p no:cacheprovider "$@"' sh "$@"
