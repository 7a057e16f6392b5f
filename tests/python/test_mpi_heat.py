"""examples/mpi_heat.py under a real mpirun: 4 ranks load the kernels from
one disk-cache bundle (no rank compiles), exchange halos, and the
assembled plate equals the single-process run bit for bit."""
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

EXAMPLES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "examples")
PY = sys.executable
# Variables a child must not inherit from whoever runs pytest.
_STRIP = ("TACK_", "OMPI_", "PMI_", "PMIX_", "MV2_", "SLURM_")


def _have_mpi():
    if not shutil.which("mpirun"):
        return False
    return subprocess.run([PY, "-c", "import mpi4py"], capture_output=True).returncode == 0


def _env(cache, **extra):
    env = {k: v for k, v in os.environ.items() if not k.startswith(_STRIP)}
    env.update(TACK_CACHE_DIR=str(cache), PYTHONDONTWRITEBYTECODE="1", **extra)
    return env


@pytest.mark.skipif(not _have_mpi(), reason="needs mpirun and mpi4py")
def test_mpi_heat_on_four_ranks_equals_one_process(tmp_path):
    cache = tmp_path / "cache"
    cache.mkdir(mode=0o700)
    script = os.path.join(EXAMPLES, "mpi_heat.py")
    size = ["--size", "66", "48", "--steps", "60"]
    p = subprocess.run([PY, script, "--prepare", "--ranks", "4"] + size, cwd=EXAMPLES,
                       env=_env(cache, TACK_CACHE="write"), capture_output=True, text=True,
                       timeout=120)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "bundle" in p.stdout, p.stdout
    many, one = tmp_path / "four.npy", tmp_path / "one.npy"
    png = str(tmp_path / "heat.png")
    # Under mpirun the disk cache's default mode is `bundle`: read only.
    p = subprocess.run(["mpirun", "-np", "4", "--oversubscribe", "--allow-run-as-root",
                        PY, script, "--save", str(many), "--png", png] + size, cwd=EXAMPLES,
                       env=_env(cache), capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "compiles per rank: [0, 0, 0, 0]" in p.stdout, p.stdout
    assert "mpi_heat: ok" in p.stdout, p.stdout
    p = subprocess.run([PY, script, "--save", str(one), "--png", png] + size, cwd=EXAMPLES,
                       env=_env(cache, TACK_CACHE="off"), capture_output=True, text=True,
                       timeout=120)
    assert p.returncode == 0, p.stdout + p.stderr
    a, b = np.load(many), np.load(one)
    assert a.shape == (66, 48)
    assert np.array_equal(a.view(np.uint32), b.view(np.uint32))
    # Heat spread from the hot edge and square: the run did something.
    assert 0 < a[1:-1, 1:-1].min() < a.max() == 100.0
