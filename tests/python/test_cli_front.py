"""`python -m tack` without a command: the info summary and then the
commands (not a usage error); `--version`; `cache` without an action."""
import subprocess
import sys

import tack


def _run(*args):
    return subprocess.run([sys.executable, "-m", "tack", *args], capture_output=True,
                          text=True, timeout=120)


def test_no_command_prints_info_then_the_commands():
    p = _run()
    assert p.returncode == 0, p.stderr
    assert p.stdout.startswith("tack:"), p.stdout
    info_end = p.stdout.index("usage: python -m tack")
    assert "llvm:" in p.stdout[:info_end]
    assert "info" in p.stdout[info_end:] and "cache" in p.stdout[info_end:]


def test_version_and_cache_without_an_action():
    p = _run("--version")
    assert p.returncode == 0, p.stderr
    build = tack._tack._build_info()
    assert p.stdout.strip() == "tack %s (LLVM %s)" % (build["version"], build["llvm_version"])
    assert build["version"] == tack.__version__
    p = _run("cache")
    assert p.returncode == 0 and "bundle" in p.stdout, p.stdout + p.stderr
