"""The installed package as a user gets it from the wheel (`make wheel`;
.ci/run installs it into a fresh virtual environment outside the source
tree and runs this suite against it).

The wheel's checks (what the extension links) are skipped, saying so, on a
dev install (`make install`: auditwheel has not repaired it) or a sanitizer
build; the package's contents are checked on every install.
"""
import importlib.metadata
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import textwrap

import pytest

import tack

PACKAGE_DIR = os.path.dirname(os.path.abspath(tack.__file__))
EXTENSION = os.path.abspath(tack._tack.__file__)

# What a manylinux wheel may leave to the system: glibc, the kernel's vDSO,
# and GCC's unwinder libgcc_s (manylinux's policy lists it: the extension
# uses the system's, whose static copy would need glibc 2.35).
GLIBC_LEVEL = {"linux-vdso.so.1", "libc.so.6", "libm.so.6", "libdl.so.2", "librt.so.1",
               "libpthread.so.0", "ld-linux-x86-64.so.2", "ld-linux-aarch64.so.1",
               "libgcc_s.so.1"}
# The oldest glibc the wheel's extension may need (manylinux_2_17;
# python/glibc_compat.c keeps the newer symbol versions out).
GLIBC_FLOOR = (2, 17)
# The distribution's name on PyPI (the import name is tack; pyproject.toml).
DIST_NAME = "tack-kernels"


def _wheel_tags():
    """The installed distribution's wheel tags (its WHEEL file's Tag lines)."""
    try:
        text = importlib.metadata.distribution(DIST_NAME).read_text("WHEEL") or ""
    except importlib.metadata.PackageNotFoundError:
        return []
    return [line.split(":", 1)[1].strip() for line in text.splitlines()
            if line.startswith("Tag:")]


def _from_checkout():
    """True when `import tack` found python/tack in a source tree."""
    return os.path.exists(os.path.join(PACKAGE_DIR, "..", "..", "CMakeLists.txt"))


REPAIRED = any("manylinux" in tag for tag in _wheel_tags())
# Set by .ci/run when it tests the wheel: the checks below must then run,
# not skip.
WHEEL_EXPECTED = os.environ.get("TACK_TEST_WHEEL") == "1"

needs_installed = pytest.mark.skipif(
    _from_checkout(), reason="tack is imported from a source checkout, not an install")
needs_wheel = pytest.mark.skipif(
    not REPAIRED, reason="a dev install (tags %s): the wheel's link checks run on the "
    "repaired wheel that `make wheel` writes (CI installs it)" % (_wheel_tags() or "none"))


@pytest.mark.skipif(not WHEEL_EXPECTED, reason="TACK_TEST_WHEEL=1 is not set (CI sets it)")
def test_the_wheel_is_what_is_tested():
    assert REPAIRED, f"tack's wheel tags are {_wheel_tags()}, not a repaired wheel's"
    assert not _from_checkout(), f"tack was imported from a checkout: {PACKAGE_DIR}"


def _ldd(path):
    """(name, resolved path or None) for each library ldd lists for `path`."""
    out = subprocess.run(["ldd", path], capture_output=True, text=True, check=True).stdout
    libs = []
    for line in out.splitlines():
        line = line.strip()
        if "=>" in line:
            name, where = (part.strip() for part in line.split("=>", 1))
            where = where.split(" (")[0].strip()
            libs.append((name, None if where == "not found" else where))
        elif line:
            first = line.split(" (")[0].strip()
            libs.append((os.path.basename(first), first))
    return libs


@needs_installed
def test_package_has_no_sources():
    """Only Python modules, stubs and the compiled extension are installed:
    the C sources are compiled in, and nothing else from the checkout comes
    along."""
    files = [str(f) for f in importlib.metadata.distribution(DIST_NAME).files or []]
    in_package = [f for f in files if f.startswith("tack/") or f.startswith("tack_kernels.libs/")]
    assert "tack/__init__.py" in in_package, files
    assert any(f.startswith("tack/_tack.") and f.endswith(".so") for f in in_package), files
    # Modules, type stubs (.pyi, py.typed), the extension, bundled libraries.
    strays = [f for f in in_package
              if not f.endswith((".py", ".pyc", ".pyi", "/py.typed", ".so")) and ".so." not in f]
    assert strays == [], strays
    assert not any("/_ext/" in f or f.endswith((".c", ".h")) for f in files), files
    for root, _dirs, names in os.walk(PACKAGE_DIR):
        assert not [n for n in names if n.endswith((".c", ".h"))], root
    assert not os.path.exists(os.path.join(PACKAGE_DIR, "_ext"))


@needs_installed
def test_metadata_pypi_shows():
    """The distribution carries what PyPI shows: the license (an SPDX
    expression and the LICENSE file itself), a classifier for the running
    Python, and the README as its Markdown long description."""
    dist = importlib.metadata.distribution(DIST_NAME)
    meta = dist.metadata
    assert meta["License-Expression"] == "MIT", meta.get_all("License-Expression")
    assert "LICENSE" in (meta.get_all("License-File") or []), meta.get_all("License-File")
    license_text = [f for f in dist.files or [] if f.name == "LICENSE"]
    assert license_text and "MIT License" in license_text[0].read_text(), dist.files
    classifiers = meta.get_all("Classifier") or []
    here = "Programming Language :: Python :: %d.%d" % sys.version_info[:2]
    assert here in classifiers, classifiers
    assert meta["Description-Content-Type"] == "text/markdown"
    assert "## A kernel" in (meta.get_payload() or meta["Description"] or "")


@needs_installed
@needs_wheel
@pytest.mark.skipif(shutil.which("ldd") is None, reason="needs ldd")
def test_extension_links_only_glibc_or_bundled_libraries():
    """The extension needs no libLLVM, libcrypto or libstdc++ from the
    system: only glibc's libraries, or those auditwheel bundled."""
    bundled_dir = os.path.realpath(os.path.join(PACKAGE_DIR, "..", "tack_kernels.libs"))
    libs = _ldd(EXTENSION)
    assert libs, "ldd listed nothing"
    for name, where in libs:
        assert where is not None, f"{name} not found"
        assert "libLLVM" not in name and "libLLVM" not in where, (name, where)
        bundled = os.path.dirname(os.path.realpath(where)) == bundled_dir
        assert name in GLIBC_LEVEL or bundled, f"{name} => {where} is neither glibc nor bundled"


@needs_installed
@needs_wheel
def test_compiling_a_kernel_maps_only_the_wheels_libraries(tmp_path):
    """At run time too: importing tack and compiling and running a kernel on
    the CPU maps no library from the system beyond what NumPy and Python
    already had (no libLLVM, libstdc++, libcrypto): only the extension, what
    the wheel bundles and what manylinux leaves to the system."""
    script = tmp_path / "run_kernel.py"
    script.write_text(textwrap.dedent("""
        import json, sys
        import numpy as np

        def mapped():
            with open("/proc/self/maps") as f:
                return {line.split()[-1] for line in f
                        if len(line.split()) >= 6 and ".so" in line.split()[-1]}

        before = mapped()
        import tack

        @tack.kernel
        def twice(x, out):
            for i in range(x.shape[0]):
                out[i] = x[i] * 2.0

        x = np.arange(100, dtype=np.float32); out = np.zeros_like(x)
        twice(x, out)
        assert np.array_equal(out, x * 2), out
        print(json.dumps(sorted(mapped() - before)))
    """))
    env = dict(os.environ, TACK_CACHE="off")
    p = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                       env=env, cwd=str(tmp_path), timeout=300)
    assert p.returncode == 0, p.stderr
    added = json.loads(p.stdout)
    assert os.path.realpath(EXTENSION) in {os.path.realpath(a) for a in added}, added
    bundled_dir = os.path.realpath(os.path.join(PACKAGE_DIR, "..", "tack_kernels.libs"))
    python_dirs = tuple(os.path.realpath(d) + os.sep for d in {sys.prefix, sys.base_prefix})
    # What manylinux leaves to the system may come new: libdl and libpthread
    # (the extension names them for glibc < 2.34, where its dl and pthread
    # calls live), libgcc_s (the unwinder).
    foreign = [a for a in added
               if os.path.realpath(a) != os.path.realpath(EXTENSION)
               and os.path.dirname(os.path.realpath(a)) != bundled_dir
               and not os.path.realpath(a).startswith(python_dirs)  # stdlib modules
               and os.path.basename(a) not in GLIBC_LEVEL]
    assert foreign == [], foreign


def _needed(path):
    out = subprocess.run(["readelf", "-d", path], capture_output=True, text=True,
                         check=True).stdout
    return re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]", out)


@pytest.mark.skipif(shutil.which("objdump") is None or shutil.which("readelf") is None,
                    reason="needs objdump and readelf (binutils)")
@pytest.mark.skipif(platform.machine() != "x86_64", reason="glibc_compat.c is x86-64's")
def test_extension_needs_glibc_2_17_at_most():
    """Every glibc symbol version the extension names is 2.17 or older, it
    leaves no --wrap'd call unresolved, and it needs no libtinfo: the wheel
    installs on any manylinux2014 system (RHEL 7+, Ubuntu 14.04+), though
    it is built on Debian 12 (glibc 2.36).  A build linked with the shared
    libLLVM (the sanitizer run's) is not what the wheel ships: skipped."""
    needed = _needed(EXTENSION)
    if any("libLLVM" in n for n in needed):
        pytest.skip("the extension links the shared libLLVM (TACK_STATIC_LLVM=OFF): "
                    "not a wheel's build")
    assert not [n for n in needed if "libtinfo" in n or "libstdc++" in n], needed
    out = subprocess.run(["objdump", "-T", EXTENSION], capture_output=True, text=True,
                         check=True).stdout
    versions = {}
    for m in re.finditer(r"\bGLIBC_(\d+)\.(\d+)(?:\.\d+)?\)?\s+(\S+)$", out, re.M):
        versions.setdefault((int(m.group(1)), int(m.group(2))), []).append(m.group(3))
    assert versions, out[:2000]
    too_new = {v: names for v, names in versions.items() if v > GLIBC_FLOOR}
    assert not too_new, f"needs glibc {max(too_new)}: {too_new}"
    undefined = subprocess.run(["nm", "-D", "--undefined-only", EXTENSION],
                               capture_output=True, text=True, check=True).stdout
    assert "__wrap_" not in undefined, [ln for ln in undefined.splitlines() if "__wrap_" in ln]
    if REPAIRED:
        assert "manylinux_2_17_x86_64" in " ".join(_wheel_tags()), _wheel_tags()


@needs_installed
@pytest.mark.skipif(shutil.which("nm") is None, reason="needs nm (binutils)")
def test_extension_exports_only_its_init():
    """LLVM's, OpenSSL's and libtack's symbols stay inside the extension, so
    another copy in the process (PoCL's LLVM) never binds to them."""
    out = subprocess.run(["nm", "-D", "--defined-only", EXTENSION],
                         capture_output=True, text=True, check=True).stdout
    linker_defined = {"_edata", "_end", "__bss_start", "_init", "_fini"}
    names = {line.split()[-1] for line in out.splitlines() if line.strip()} - linker_defined
    assert names == {"PyInit__tack"}, sorted(names)[:20]


def test_every_installed_opencl_driver_at_once(tmp_path):
    """With every OpenCL driver the machine has loaded into one process (the
    suite itself runs on PoCL alone, conftest.py), `python -m tack info`
    lists each device and a kernel gives NumPy's numbers on each one.  The
    loader's variables are the ones the run was started with: under the
    sanitizers those the Makefile chose (the drivers ASan can load)."""
    from conftest import MACHINE_ICD_ENV
    script = tmp_path / "every_device.py"
    script.write_text(textwrap.dedent("""
        import numpy as np
        import tack

        @tack.kernel
        def axpy(x, y, out, a):
            for i in range(x.shape[0]):
                out[i] = a * x[i] + y[i]

        x = np.arange(1000, dtype=np.float32)
        y = np.full(1000, 0.5, dtype=np.float32)
        want = np.float32(3.0) * x + y
        n = 0
        while True:
            try:
                dev = tack.device("opencl:%d" % n)
            except (RuntimeError, ValueError) as e:
                print("stop:", e)
                break
            out = tack.zeros((1000,), device=dev)
            axpy(tack.array(x, device=dev), tack.array(y, device=dev), out, 3.0)
            np.testing.assert_allclose(out.numpy(), want, rtol=1e-6)
            print("ok:", dev.name, dev.description)
            n += 1
        print("devices:", n)
    """))
    env = dict(os.environ, TACK_CACHE="off")
    for k, v in MACHINE_ICD_ENV.items():
        env.pop(k, None)
        if v:
            env[k] = v
    p = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                       env=env, cwd=str(tmp_path), timeout=600)
    assert p.returncode == 0, f"exit {p.returncode}\n{p.stdout}\n{p.stderr}"
    n = int(p.stdout.split("devices:")[1])
    ok = [line[4:] for line in p.stdout.splitlines() if line.startswith("ok: ")]
    assert len(ok) == n, p.stdout
    info = subprocess.run([sys.executable, "-m", "tack", "info"], capture_output=True, text=True,
                          env=env, cwd=str(tmp_path), timeout=300)
    assert info.returncode == 0, info.stderr
    for line in ok:
        name = line.split()[0]
        assert name + ":" in info.stdout, (name, info.stdout)
    if n == 0:
        pytest.skip("no OpenCL device with the machine's drivers: " + p.stdout.strip())
