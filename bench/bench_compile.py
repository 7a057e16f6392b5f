"""Cold compile split: all of a variant's compile beside LLVM's optimizer and
code generator (tack.stats()'s compile_ms and llvm_ms); the rest is Tack's
own (passes, IR building, linking).  Run in a fresh process, cache off."""
import os

os.environ.setdefault("TACK_CACHE", "off")

import numpy as np  # noqa: E402

import tack  # noqa: E402


@tack.kernel
def first(x, out, a):
    for i in range(x.shape[0]):
        out[i] = x[i] * a + 1


@tack.kernel
def second(x, out, a):
    for i in range(x.shape[0]):
        s = 0.0
        for j in range(4):
            s += x[(i + j) % x.shape[0]]
        out[i] = s * a


def main():
    x = np.ones(1000, np.float32)
    out = np.zeros_like(x)
    first(x, out, 2.0)
    s0 = tack.stats()
    second(x, out, 2.0)
    s1 = tack.stats()
    for name, c, l in (("first kernel ", s0["compile_ms"], s0["llvm_ms"]),
                       ("second kernel", s1["compile_ms"] - s0["compile_ms"],
                        s1["llvm_ms"] - s0["llvm_ms"])):
        ours = c - l
        print("compile %s  all %.2f ms  llvm %.2f ms  tack %.2f ms  target tack <= 2 ms: %s"
              % (name, c, l, ours, "ok" if ours <= 2 else "MISSED"))


if __name__ == "__main__":
    main()
