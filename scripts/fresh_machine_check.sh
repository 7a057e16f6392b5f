#!/usr/bin/env bash
# The README's two commands on a fresh machine: a Debian bookworm root made
# with debootstrap (what a minimal install has, plus make, git and
# ca-certificates: no compiler, no LLVM, no OpenCL), a clone of this
# repository's HEAD in it, then `make demo` and `make test` run as root
# inside it with nothing typed in between.  Needs root (debootstrap,
# chroot, mount) and Debian's and PyPI's registries.
#
#   scripts/fresh_machine_check.sh LOG [ROOT]
#
# LOG gets both commands' output; ROOT (default build/bookworm-root) is
# made afresh each run.
set -euo pipefail
log=$(realpath -m "$1")
root=$(realpath -m "${2:-build/bookworm-root}")
repo=$(git rev-parse --show-toplevel)

if [ "$(id -u)" != 0 ]; then
  echo "fresh_machine_check.sh: needs root (debootstrap, chroot, mount)" >&2; exit 1
fi
command -v debootstrap >/dev/null ||
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends debootstrap
# Never delete through a mount an interrupted run left behind (/dev).
if grep -q " $root/" /proc/mounts; then
  echo "fresh_machine_check.sh: something is still mounted under $root" >&2; exit 1
fi
rm -rf "$root"
debootstrap --variant=minbase --include=make,git,ca-certificates,python3 \
  bookworm "$root" http://deb.debian.org/debian >"$root.log" 2>&1 ||
  { tail -20 "$root.log" >&2; exit 1; }
cp /etc/resolv.conf "$root/etc/resolv.conf"
# apt and pip there trust what they trust here (a registry behind a TLS proxy).
cp /etc/ssl/certs/ca-certificates.crt "$root/usr/local/share/ca-certificates/host.crt"
chroot "$root" update-ca-certificates >/dev/null
git clone -q "$repo" "$root/work/tack"

cleanup() {
  umount "$root/dev/shm" "$root/dev" "$root/sys" "$root/proc" 2>/dev/null || true
}
trap cleanup EXIT
mount -t proc proc "$root/proc"
mount -t sysfs sysfs "$root/sys"
mount --bind /dev "$root/dev"
mkdir -p "$root/dev/shm" && mount -t tmpfs tmpfs "$root/dev/shm"

env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/root \
  LANG=C.UTF-8 PIP_CERT=/etc/ssl/certs/ca-certificates.crt chroot "$root" \
  sh -c 'cd /work/tack && git log --oneline -1 &&
         echo "llvm-config: $(command -v llvm-config || echo none), cc: $(command -v cc || echo none)" &&
         make demo && make test' >"$log" 2>&1
