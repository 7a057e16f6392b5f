"""Writes candidate seeds for the fuzzers under OUT (argument; `make
fuzz-seeds` then merges into tests/fuzz/corpus_* only those that add
coverage, and the results are committed, so a fuzz run needs neither
Python nor this script).

OUT/kernel/       every @tack.kernel in tests/python and examples, as the
                  source text the extension hands tack_kernel_create
OUT/cache_entry/  real disk cache entries (IR-template and variant) that a
                  few kernels write with TACK_CACHE_DIR pointed at a
                  temporary directory"""
import ast
import glob
import hashlib
import os
import subprocess
import sys
import tempfile
import textwrap

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def put(directory, data):
    os.makedirs(directory, exist_ok=True)
    name = hashlib.sha256(data).hexdigest()[:16]
    path = os.path.join(directory, name)
    if not os.path.exists(path):
        with open(path, "wb") as f:
            f.write(data)
        return 1
    return 0


def is_kernel(node):
    for d in node.decorator_list:
        if isinstance(d, ast.Call):
            d = d.func
        if isinstance(d, ast.Attribute) and d.attr == "kernel":
            return True
    return False


def kernel_sources():
    files = sorted(glob.glob(os.path.join(ROOT, "tests", "python", "*.py")) +
                   glob.glob(os.path.join(ROOT, "examples", "*.py")))
    for path in files:
        with open(path, encoding="utf-8") as f:
            text = f.read()
        lines = text.splitlines(keepends=True)
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.FunctionDef) and is_kernel(node):
                first = min(d.lineno for d in node.decorator_list)
                yield textwrap.dedent("".join(lines[first - 1:node.end_lineno]))


# Kernels whose entries seed the cache fuzzer: plain, with a device
# function, with vectors, with a template class, in debug mode.
ENTRY_SCRIPT = r'''
import numpy as np, tack

@tack.func
def twice(v):
    return v * 2.0

@tack.kernel
def scale(x, out, a):
    for i in range(x.shape[0]):
        out[i] = twice(x[i]) * a + min(i, 3)

@tack.kernel
def rows(m, out):
    for i, j in tack.ndindex(m.shape[0], m.shape[1]):
        out[i, j] = m[i, j] if m[i, j] > 0 else -m[i, j]

@tack.kernel
def norms(v, out):
    for i in range(v.shape[0]):
        out[i] = v[i].length() + v[i].dot(v[i])

@tack.device_class
class Field:
    factor = 2.0
    def __init__(self, data, offset):
        self.data = data
        self.offset = offset
    @tack.func
    def at(self, i):
        return self.data[i] * self.factor + self.offset

@tack.kernel
def sample(f, out):
    for i in range(out.shape[0]):
        out[i] = f.at(i)

@tack.kernel
def hist(x, bins):
    for i in range(x.shape[0]):
        tack.atomic_add(bins, int(x[i]) % bins.shape[0], 1)

x = np.arange(8, dtype=np.float32)
scale(x, np.zeros(8, np.float32), 1.5)
rows(np.ones((3, 4), np.float64), np.zeros((3, 4), np.float64))
v = tack.empty((4,), dtype=tack.vec3f)
norms(v, tack.zeros((4,)))
sample(Field(x, 1.0), np.zeros(8, np.float32))
hist(x, np.zeros(4, np.int32))
tack.set_debug(True)
scale(x, np.zeros(8, np.float32), 2.0)
'''


def cache_entries():
    with tempfile.TemporaryDirectory() as tmp:
        cache = os.path.join(tmp, "cache")
        script = os.path.join(tmp, "entries.py")
        with open(script, "w") as f:
            f.write(ENTRY_SCRIPT)
        env = dict(os.environ, TACK_CACHE="write", TACK_CACHE_DIR=cache)
        subprocess.run([sys.executable, script], env=env, check=True)
        for path in sorted(glob.glob(os.path.join(cache, "*", "*"))):
            if len(os.path.basename(path)) == 64:  # entries are named by a hex hash
                with open(path, "rb") as f:
                    yield f.read()


def main():
    out = sys.argv[1]
    kernels = sum(put(os.path.join(out, "kernel"), s.encode()) for s in kernel_sources())
    entries = sum(put(os.path.join(out, "cache_entry"), e) for e in cache_entries())
    print(f"candidate seeds: {kernels} kernels, {entries} cache entries")


if __name__ == "__main__":
    main()
