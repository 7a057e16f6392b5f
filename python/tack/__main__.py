"""``python -m tack cache info|list|clear|prune|verify|bundle``: the disk
cache from the command line.  The work is done in C (tack._tack._cache_*);
this only parses arguments and prints."""
import argparse
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


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m tack")
    sub = p.add_subparsers(dest="command", required=True)
    cache = sub.add_parser("cache", help="the disk cache of compiled kernels")
    act = cache.add_subparsers(dest="action", required=True)
    act.add_parser("info", help="directory, fingerprint, sizes and counts").set_defaults(fn=_info)
    act.add_parser("list", help="entries with kernel names and ages").set_defaults(fn=_list)
    act.add_parser("clear", help="delete every entry of every version").set_defaults(fn=_clear)
    act.add_parser("prune", help="apply TACK_CACHE_SIZE now").set_defaults(fn=_prune)
    v = act.add_parser("verify", help="re-check every entry's hash")
    v.add_argument("--remove", action="store_true", help="delete the bad entries")
    v.set_defaults(fn=_verify)
    act.add_parser("bundle", help="pack this build's entries into one file").set_defaults(fn=_bundle)
    args = p.parse_args(argv)
    try:
        return args.fn(args) or 0
    except (OSError, RuntimeError) as e:
        print("python -m tack: %s" % e, file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
