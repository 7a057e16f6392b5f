"""The OpenCL drivers (ICDs) a sanitizer run can load, as a directory for
the ICD loader's OCL_ICD_VENDORS.

    python3 tests/sanitizer_icds.py OUTDIR SANITIZER_RUNTIME.so...

Some drivers cannot be loaded under AddressSanitizer at all: Intel's
(intel-opencl-icd) dlopens a library with RTLD_DEEPBIND, which ASan refuses
by ending the process, before any test runs.  So each installed .icd is
tried alone, in a Python with the sanitizer runtimes preloaded (the dlopen
checks are the runtime's, the same in an instrumented test program), listing
its platforms and devices.  Those that load are copied into OUTDIR; each one
left out is named on stderr with the sanitizer's reason (the plain runs
still test it).  The directory's path goes to stdout.

Where the caller chose the drivers already (OCL_ICD_VENDORS or
OCL_ICD_FILENAMES set), that choice is kept and printed back unchanged.
"""
import glob
import os
import shutil
import subprocess
import sys
import tempfile

# Lists the platforms and their devices through the loader: this is where a
# driver is opened and initialised.
PROBE = r"""
import ctypes, sys
try:
    cl = ctypes.CDLL("libOpenCL.so.1")
except OSError as e:
    print("no ICD loader: %s" % e); sys.exit(0)
n = ctypes.c_uint(0)
if cl.clGetPlatformIDs(0, None, ctypes.byref(n)) != 0 or n.value == 0:
    print("no platform"); sys.exit(0)
plats = (ctypes.c_void_p * n.value)()
cl.clGetPlatformIDs(n.value, plats, None)
for p in plats:
    name = ctypes.create_string_buffer(256)
    cl.clGetPlatformInfo(ctypes.c_void_p(p), 0x0902, 256, name, None)  # CL_PLATFORM_NAME
    nd = ctypes.c_uint(0)
    cl.clGetDeviceIDs(ctypes.c_void_p(p), 0xFFFFFFFF, 0, None, ctypes.byref(nd))
    print("%s, %d device%s" % (name.value.decode(errors="replace"), nd.value,
                               "" if nd.value == 1 else "s"))
"""


def say(msg):
    print("sanitizer_icds: " + msg, file=sys.stderr)


def reason(out):
    """The sanitizer's message (its first line that says something), else
    the last line of output."""
    lines = [line.strip() for line in out.splitlines() if line.strip()]
    for line in lines:
        if line.startswith("==") and "==" in line[2:]:
            return line.split("==", 2)[2].strip()
    return lines[-1] if lines else "no output"


def main(argv):
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    out_dir, preload = argv[0], " ".join(argv[1:])
    chosen = {k: os.environ[k] for k in ("OCL_ICD_VENDORS", "OCL_ICD_FILENAMES")
              if os.environ.get(k)}
    if chosen:
        say("the caller chose the OpenCL drivers (%s): kept" %
            ", ".join("%s=%s" % kv for kv in chosen.items()))
        print(os.environ.get("OCL_ICD_VENDORS", ""))
        return 0
    vendors = os.environ.get("OPENCL_VENDOR_PATH") or "/etc/OpenCL/vendors"
    shutil.rmtree(out_dir, ignore_errors=True)
    os.makedirs(out_dir)
    icds = sorted(glob.glob(os.path.join(vendors, "*.icd")))
    if not icds:
        say("no OpenCL driver in %s: the OpenCL tests skip" % vendors)
    kept = 0
    for icd in icds:
        name = os.path.basename(icd)
        try:
            with open(icd, encoding="utf-8", errors="replace") as f:
                lib = f.read().strip()
        except OSError as e:
            say("%s left out: %s" % (name, e))
            continue
        with tempfile.TemporaryDirectory() as alone:
            shutil.copy(icd, alone)
            env = dict(os.environ, OCL_ICD_VENDORS=alone, LD_PRELOAD=preload,
                       ASAN_OPTIONS="detect_leaks=0", UBSAN_OPTIONS="halt_on_error=1")
            try:
                p = subprocess.run([sys.executable, "-c", PROBE], env=env, timeout=120,
                                   stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
                ok, out = p.returncode == 0, p.stdout
                why = "exit %d: %s" % (p.returncode, reason(out))
            except subprocess.TimeoutExpired:
                ok, out, why = False, "", "no answer in 120 s"
        if ok:
            shutil.copy(icd, out_dir)
            kept += 1
            say("%s (%s) loads under the sanitizers: %s" %
                (name, lib, "; ".join(out.split("\n")).strip("; ")))
        else:
            say("%s (%s) left out of the sanitizer run, it cannot be loaded there (%s); "
                "the plain runs test it" % (name, lib, why))
    if icds and not kept:
        say("no OpenCL driver loads under the sanitizers: their OpenCL tests skip")
    print(os.path.abspath(out_dir))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
