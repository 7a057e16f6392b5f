"""``python -m tack info``: versions, the CPU target, devices, the cache and
the settings in force (like ``numba -s``); ``python -m tack cache
info|list|clear|prune|verify|bundle``: the disk cache from the command line.
The work is done in C (tack._tack); this only parses arguments and prints."""
import argparse
import os
import platform
import sys

from . import _tack


def _size(n):
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return ("%d %s" % (n, unit)) if unit == "B" else ("%.1f %s" % (n, unit))
        n /= 1024.0


def _age(s):
    s = max(int(s), 0)
    for unit, span in (("d", 86400), ("h", 3600), ("m", 60)):
        if s >= span:
            return "%d%s" % (s // span, unit)
    return "%ds" % s


def _info(args):
    i = _tack._cache_info()
    print("directory:   %s" % i["dir"])
    print("fingerprint: %s" % i["fingerprint"])
    print("mode:        %s" % i["mode"])
    print("entries:     %d (%s) for this build" % (i["entries"], _size(i["bytes"])))
    print("all builds:  %d entries (%s) in %d version(s), limit %s"
          % (i["all_entries"], _size(i["all_bytes"]), i["versions"], _size(i["size_limit"])))
    b = i["bundle_bytes"]
    print("bundle:      %s" % ("none" if b is None else _size(b)))


def _list(args):
    entries = _tack._cache_list()
    if not entries:
        print("no entries")
        return
    print("%-16s  %-24s %10s %6s" % ("entry", "kernel", "size", "age"))
    for e in entries:
        print("%-16s  %-24s %10s %6s%s" % (e["name"][:16], e["kernel"] or "?", _size(e["size"]),
                                          _age(e["age"]), "  (unreadable)" if e["bad"] else ""))


def _clear(args):
    print("removed %d file(s)" % _tack._cache_clear())


def _prune(args):
    r = _tack._cache_prune()
    print("removed %d entr%s, freed %s" % (r["removed"], "y" if r["removed"] == 1 else "ies",
                                          _size(r["freed"])))


def _verify(args):
    r = _tack._cache_verify(remove=args.remove)
    for e in r["bad"]:
        print("bad: %s%s" % (e["name"], " (removed)" if r["removed"] else ""))
    print("checked %d, %d bad" % (r["checked"], len(r["bad"])))
    return 1 if r["bad"] and not r["removed"] else 0


def _bundle(args):
    r = _tack._cache_bundle()
    print("packed %d entr%s (%s) into %s/bundle.tack"
          % (r["entries"], "y" if r["entries"] == 1 else "ies", _size(r["bytes"]), r["dir"]))


# The environment variables Tack reads, with what applies when unset.
SETTINGS = [
    ("TACK_DEBUG", "0: plain kernels; 1: bounds-checked (tack.set_debug)"),
    ("TACK_CACHE", "write: the disk cache is read and written"),
    ("TACK_CACHE_DIR", "$XDG_CACHE_HOME/tack or ~/.cache/tack"),
    ("TACK_CACHE_SIZE", "1G"),
    ("TACK_NUM_THREADS", "one thread per core (tack.set_num_threads)"),
    ("TACK_JIT", "tiered: fast code at once, optimized code swapped in (o2: optimized only; o0: fast only)"),
    ("TACK_LOG", "compile messages go to the 'tack' logger only; compile: also stderr"),
    ("TACK_NVRTC", "libnvrtc from $CUDA_PATH, $CUDA_HOME, /usr/local/cuda or the loader path"),
    ("TACK_HIPRTC", "hipRTC from libhiprtc.so or libamdhip64.so on the loader path"),
    ("TACK_OCLOC", "Intel's ocloc on PATH (Level Zero's compiler, run as a child process)"),
]

def _devices():
    """(name, description or None, why not) for the CPU and each OpenCL,
    CUDA, HIP, Level Zero and Metal device (Metal's driver loads only on
    macOS; elsewhere its line says which library is missing)."""
    found = []
    for backend in ("cpu", "opencl", "cuda", "hip", "level_zero", "metal"):
        for index in range(64):
            spec = backend if backend == "cpu" else "%s:%d" % (backend, index)
            try:
                dev = _tack.device(spec)
            except (RuntimeError, ValueError) as e:
                if index == 0:
                    found.append((backend, None, str(e)))
                break
            found.append((dev.name, dev.description, None))
            if backend == "cpu":
                break
    return found


def _ocloc():
    """Where Level Zero's compiler is, as libtack looks for it."""
    import shutil
    path = os.environ.get("TACK_OCLOC") or shutil.which("ocloc")
    return path or "not found (install Intel's ocloc or set TACK_OCLOC)"


def _system_info(args):
    build = _tack._build_info()
    print("tack:            %s" % build["version"])
    print("llvm:            %s" % build["llvm_version"])
    print("python:          %s (%s)" % (platform.python_version(), sys.executable))
    try:
        import numpy
        print("numpy:           %s" % numpy.__version__)
    except ImportError as e:  # pragma: no cover - numpy is a requirement
        print("numpy:           not importable (%s)" % e)
    devices = _devices()
    target = None
    try:
        target = _tack.device("cpu").target
    except (RuntimeError, ValueError):
        pass
    if target:
        triple, cpu, features = target.split(":", 2)
        enabled = [f[1:] for f in features.split(",") if f.startswith("+")]
        print("cpu target:      %s" % triple)
        print("cpu name:        %s" % cpu)
        print("cpu features:    %s" % " ".join(enabled))
    print("devices:")
    for name, description, why in devices:
        if description is not None:
            print("  %s: %s" % (name, description))
        else:
            print("  %s: not available (%s)" % (name, why))
    print("ocloc:           %s" % _ocloc())
    try:
        c = _tack._cache_info()
        print("cache directory: %s" % c["dir"])
        print("cache size:      %d entries (%s) for this build; %d (%s) in all, limit %s"
              % (c["entries"], _size(c["bytes"]), c["all_entries"], _size(c["all_bytes"]),
                 _size(c["size_limit"])))
        print("cache mode:      %s" % c["mode"])
    except (OSError, RuntimeError) as e:
        print("cache directory: unavailable (%s)" % e)
    print("settings:")
    for name, default in SETTINGS:
        value = os.environ.get(name)
        if value is None:
            print("  %s (unset: %s)" % (name, default))
        else:
            print("  %s=%s" % (name, value))
    print("debug mode:      %s" % ("on" if _tack.get_debug() else "off"))
    print("num threads:     %d" % _tack.get_num_threads())


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m tack")
    p.add_argument("--version", action="version",
                   version="tack %s (LLVM %s)" % (_tack._build_info()["version"],
                                                  _tack._build_info()["llvm_version"]))
    sub = p.add_subparsers(dest="command")
    sub.add_parser("info", help="versions, CPU target, devices, cache and settings"
                   ).set_defaults(fn=_system_info)
    cache = sub.add_parser("cache", help="the disk cache of compiled kernels")
    act = cache.add_subparsers(dest="action")
    act.add_parser("info", help="directory, fingerprint, sizes and counts").set_defaults(fn=_info)
    act.add_parser("list", help="entries with kernel names and ages").set_defaults(fn=_list)
    act.add_parser("clear", help="delete every entry of every version").set_defaults(fn=_clear)
    act.add_parser("prune", help="apply TACK_CACHE_SIZE now").set_defaults(fn=_prune)
    v = act.add_parser("verify", help="re-check every entry's hash")
    v.add_argument("--remove", action="store_true", help="delete the bad entries")
    v.set_defaults(fn=_verify)
    act.add_parser("bundle", help="pack this build's entries into one file").set_defaults(fn=_bundle)
    args = p.parse_args(argv)
    if args.command is None:
        # No command: what a newcomer wants to see first, then what else there is.
        _system_info(args)
        print()
        p.print_help()
        return 0
    if args.command == "cache" and args.action is None:
        cache.print_help()
        return 0
    try:
        return args.fn(args) or 0
    except (OSError, RuntimeError) as e:
        print("python -m tack: %s" % e, file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
