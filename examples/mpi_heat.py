"""2-D heat diffusion over MPI ranks: the plate of examples/heat.py cut into
bands of rows, one band per rank, each advanced by the same Tack kernel and
exchanging one halo row with each neighbour every step (mpi4py, NumPy
buffers).  Every rank loads the compiled kernels from one disk-cache
bundle, so no rank compiles; rank 0 assembles the plate, checks it against
one process running the whole plate, and writes the picture.

    python examples/mpi_heat.py --prepare --ranks 4   # once: compile, pack the bundle
    mpirun -np 4 python examples/mpi_heat.py          # the run

Without mpirun (or without mpi4py) it is the single-process run.
Tack's floats are strict IEEE, so a band's update is the whole plate's
update bit for bit: the assembled plate must equal the single-process
plate exactly.  See docs/scale_out.md.
"""
import argparse
import os
import subprocess
import sys
import time

import numpy as np

import tack
from _image import THERMAL, canvas, colorbar, colorize, default_path, paste, save_png


@tack.kernel
def heat_step(u, out, alpha):
    # (i, j) runs over the interior; the first and last rows and columns
    # (the plate's boundary, or a band's halo rows) are not written
    for i, j in tack.ndindex(u.shape[0] - 2, u.shape[1] - 2):
        c = u[i + 1, j + 1]
        lap = u[i, j + 1] + u[i + 2, j + 1] + u[i + 1, j] + u[i + 1, j + 2] - 4 * c
        out[i + 1, j + 1] = c + alpha * lap


def initial(ny, nx):
    """A cold plate with a hot left edge and a hot square."""
    u = np.zeros((ny, nx), dtype=np.float32)
    u[:, 0] = 100.0
    r = max(min(ny, nx) // 8, 1)
    cy, cx = ny // 2, nx // 2
    u[cy - r:cy + r, cx - r:cx + r] = 100.0
    return u


def bands(ny, ranks):
    """Each rank's interior rows [lo, hi) of the plate: rows 1..ny-2 split
    as evenly as possible."""
    n = ny - 2
    edges = [1 + n * r // ranks for r in range(ranks + 1)]
    return list(zip(edges[:-1], edges[1:]))


def solve(u, steps, alpha, exchange=None):
    """`steps` updates of u (a band with its halo rows, or the whole plate);
    exchange(b) refreshes b's halo rows after each step."""
    a, b = u.copy(), u.copy()       # both hold the boundary, which stays fixed
    for _ in range(steps):
        heat_step(a, b, alpha)
        if exchange is not None:
            exchange(b)
        a, b = b, a
    return a


def prepare(ny, nx, ranks, alpha):
    """Compile every variant the run needs (each band's shape and the
    whole plate's) into the disk cache, then pack it into the bundle that
    every rank loads."""
    shapes = {(hi - lo + 2, nx) for lo, hi in bands(ny, ranks)} | {(ny, nx)}
    calls = [(heat_step, (np.zeros(s, np.float32), np.zeros(s, np.float32), alpha))
             for s in sorted(shapes)]
    tack.precompile(calls, device="cpu")
    p = subprocess.run([sys.executable, "-m", "tack", "cache", "bundle"],
                       capture_output=True, text=True)
    print(p.stdout.strip() or p.stderr.strip())
    return p.returncode


def picture(u, path):
    ny, nx = u.shape
    gap, bar_w = 12, 16
    rgb = canvas(ny + 2 * gap + 20, nx + 3 * gap + bar_w + 44)
    paste(rgb, colorize(u, 0.0, 100.0, THERMAL), gap + 20, gap)
    bx = nx + 2 * gap
    paste(rgb, colorbar(ny, bar_w, THERMAL), gap + 20, bx)
    labels = [(gap, 6, "heat over MPI ranks"), (bx + bar_w + 4, gap + 18, "100"),
              (bx + bar_w + 4, gap + ny + 6, "0")]
    return save_png(path, rgb, labels)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--size", nargs=2, type=int, default=(128, 160), metavar=("NY", "NX"))
    ap.add_argument("--steps", type=int, default=400)
    ap.add_argument("--png", default=default_path("mpi_heat"))
    ap.add_argument("--save", help="also write the assembled plate to this .npy file")
    ap.add_argument("--prepare", action="store_true",
                    help="compile the kernels for --ranks ranks and pack the cache bundle")
    ap.add_argument("--ranks", type=int, default=4, help="with --prepare: the ranks to run")
    args = ap.parse_args()
    (ny, nx), steps = args.size, args.steps
    alpha = 0.2                                  # stable for alpha <= 0.25
    if args.prepare:
        return prepare(ny, nx, args.ranks, alpha)

    try:
        from mpi4py import MPI
        comm = MPI.COMM_WORLD
    except ImportError:
        comm = None
    rank, size = (comm.Get_rank(), comm.Get_size()) if comm else (0, 1)
    if size > ny - 2:
        print("mpi_heat: %d ranks for %d interior rows" % (size, ny - 2), file=sys.stderr)
        return 2
    if size > 1:
        # Rank 0 reads the bundle and broadcasts it: one process touches
        # the file system, and every rank finds its kernels compiled.
        tack.cache.load_bundle(comm)

    plate = initial(ny, nx)
    lo, hi = bands(ny, size)[rank]
    up, down = rank - 1, rank + 1               # neighbours owning the rows above / below

    def exchange(b):
        # Send my first and last rows; receive the neighbours' into my halo
        # rows.  The plate's boundary rows (rank 0's top halo, the last
        # rank's bottom halo) are fixed and never exchanged.
        if up >= 0:
            comm.Sendrecv(b[1], dest=up, sendtag=0, recvbuf=b[0], source=up, recvtag=1)
        if down < size:
            comm.Sendrecv(b[-2], dest=down, sendtag=1, recvbuf=b[-1], source=down, recvtag=0)

    t0 = time.perf_counter()
    mine = solve(plate[lo - 1:hi + 1], steps, alpha, exchange if size > 1 else None)
    t1 = time.perf_counter()
    compiles = tack.stats()["compiles"]

    if size > 1:
        rows = comm.gather(mine[1:-1], root=0)
        all_compiles = comm.gather(compiles, root=0)
    else:
        rows, all_compiles = [mine[1:-1]], [compiles]
    if rank != 0:
        return 0
    u = plate.copy()
    u[1:-1] = np.concatenate(rows)
    print(f"{ny}x{nx}, {steps} steps on {size} rank{'s' if size > 1 else ''}: "
          f"{(t1 - t0) / steps * 1e3:.2f} ms/step; compiles per rank: {all_compiles}")

    # The single-process run, here on rank 0: the whole plate at once.
    single = solve(plate, steps, alpha)
    exact = np.array_equal(u.view(np.uint32), single.view(np.uint32))
    print(f"equal to the single-process run bit for bit: {exact}")
    if args.save:
        np.save(args.save, u)
    picture(u, args.png)
    if not exact:
        print("MISMATCH against the single-process run")
        return 1
    print("mpi_heat: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
