"""The disk cache from Python: ``load_bundle(comm)`` for MPI jobs.  The rest
(``python -m tack cache ...``) lives in ``tack.__main__``; the work in C."""
from . import _tack


def load_bundle(comm=None):
    """Installs this build's cache bundle as the process's bundle, so that
    bundle mode (the default under MPI) reads no file itself.

    With an mpi4py communicator, rank 0 reads the bundle file and broadcasts
    its bytes; every rank (collectively: call it on all of them) installs
    them, so one process touches the file system.  Without one, this process
    reads its own.  Call it before the first kernel runs.  Returns the number
    of entries installed, or -1 (no bundle, no cache, or already loaded)."""
    if comm is None:
        data = _tack._cache_bundle_bytes()
    else:
        data = _tack._cache_bundle_bytes() if comm.Get_rank() == 0 else None
        data = comm.bcast(data, root=0)
    if data is None:
        return -1
    return _tack._cache_bundle_install(data)
