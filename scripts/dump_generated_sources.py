"""Dumps what every GPU dialect generates for every kernel of the dialect
conformance suite (tests/python/test_gpu_dialects.py's CASES): CUDA, HIP,
OpenCL (also what Level Zero compiles) and Metal source; with --binaries also
NVRTC's PTX, ocloc's SPIR-V and dg2 binary, and hipRTC's code objects (gfx90a) where those
compilers are installed.  A refusal is dumped as its message, so refusals
(an absent compiler among them) are compared too.  Used to show a refactor
of the drivers leaves output byte-identical:

    python scripts/dump_generated_sources.py [--binaries] DIR   # a file per output
    diff -r BEFORE AFTER                                        # nothing: identical

hipRTC runs in a child process: it and PoCL cannot share one
(test_gpu_dialects.py says why)."""
import hashlib
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "python"))

import tack  # noqa: E402
from test_gpu_dialects import CASES, _generate  # noqa: E402

SOURCES = ("cuda-source", "hip-source", "opencl-source", "metal-source")
BINARIES = ("cuda:sm_90", "level_zero:spirv", "level_zero:dg2")
HIP_ARCH = "gfx90a"


def _dump(out, targets, binary, lines):
    for label, kernel, args, debug in CASES:
        for target in targets:
            try:
                data = _generate(lambda k, *a: tack._tack._generate(k, target, a, binary), kernel,
                                 args, debug)
                if isinstance(data, str):
                    data = data.encode()
            except Exception as e:  # the refusal's words are output too
                data = f"refused: {type(e).__name__}: {e}".encode()
            name = f"{label}.{target.replace(':', '_')}"
            with open(os.path.join(out, name), "wb") as f:
                f.write(data)
            lines.append(f"{hashlib.sha256(data).hexdigest()}  {name}")


def _hip_child(out):
    """hipRTC's code objects, in a process of their own."""
    code = (f"import sys; sys.path.insert(0, {HERE!r}); import dump_generated_sources as d; "
            f"lines = []; d._dump({out!r}, ('hip:{HIP_ARCH}',), True, lines); "
            f"print('\\n'.join(lines))")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    if r.returncode:
        sys.exit(f"the hipRTC child failed:\n{r.stdout}\n{r.stderr}")
    return [ln for ln in r.stdout.splitlines() if ln.strip()]


def main(argv):
    binaries = "--binaries" in argv
    rest = [a for a in argv if a != "--binaries"]
    out = rest[0] if rest else "gpu_dump"
    os.makedirs(out, exist_ok=True)
    lines = []
    _dump(out, SOURCES, False, lines)
    if binaries:
        _dump(out, BINARIES, True, lines)
        lines += _hip_child(out)
    with open(os.path.join(out, "SHA256SUMS"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print(f"{len(lines)} outputs ({len(CASES)} kernels) in {out}")


if __name__ == "__main__":
    main(sys.argv[1:])
