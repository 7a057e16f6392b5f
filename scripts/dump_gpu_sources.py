"""Dumps what every GPU dialect generates for every kernel of the dialect
conformance suite (tests/python/test_gpu_dialects.py's CASES): CUDA, HIP,
OpenCL and Metal source, and PTX and SPIR-V where NVRTC and ocloc are
installed.  A refusal is dumped as its message, so refusals are compared
too.  Used to show a refactor of the drivers leaves output byte-identical:

    python scripts/dump_gpu_sources.py DIR          # one file per output
    diff -r BEFORE AFTER                            # nothing: identical

(HIP code objects are left out: hipRTC and PoCL cannot share a process,
and the code object is hipRTC's function of the HIP source dumped here.)"""
import hashlib
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "python"))

import tack  # noqa: E402
from test_gpu_dialects import CASES, _generate  # noqa: E402

TARGETS = ("cuda-source", "hip-source", "opencl-source", "metal-source", "cuda:sm_90",
           "level_zero:spirv")
BINARY = ("level_zero:spirv",)


def main(out):
    os.makedirs(out, exist_ok=True)
    lines = []
    for label, kernel, args, debug in CASES:
        for target in TARGETS:
            try:
                data = _generate(lambda k, *a: tack._tack._generate(k, target, a, target in BINARY), kernel,
                                 args, debug)
                if isinstance(data, str):
                    data = data.encode()
            except Exception as e:  # the refusal's words are output too
                data = f"refused: {type(e).__name__}: {e}".encode()
            name = f"{label}.{target.replace(':', '_')}"
            with open(os.path.join(out, name), "wb") as f:
                f.write(data)
            lines.append(f"{hashlib.sha256(data).hexdigest()}  {name}")
    with open(os.path.join(out, "SHA256SUMS"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print(f"{len(lines)} outputs ({len(CASES)} kernels x {len(TARGETS)} targets) in {out}")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "gpu_dump")
