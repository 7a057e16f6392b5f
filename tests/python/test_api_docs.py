"""The API reference and the type stub cannot drift from the module:
docs/api.md is what docs/gen_api.py writes from the installed package, every
public function, class, method and property has a docstring, and the stub
python/tack/_tack.pyi declares exactly the extension's public names and
members."""
import ast
import importlib.util
import os

import pytest

import tack
from tack import _tack

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
STUB = os.path.join(ROOT, "python", "tack", "_tack.pyi")


def load_generator():
    spec = importlib.util.spec_from_file_location("gen_api", os.path.join(ROOT, "docs", "gen_api.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_api_page_is_current():
    gen = load_generator()
    with open(gen.PAGE) as f:
        committed = f.read()
    assert committed == gen.generate(), "docs/api.md is out of date: run python docs/gen_api.py"


def public_classes():
    return [getattr(tack, n) for n in tack.__all__ if isinstance(getattr(tack, n), type)]


def test_every_public_name_has_a_docstring():
    gen = load_generator()
    missing = []
    for n in tack.__all__:
        if not (getattr(getattr(tack, n), "__doc__", None) or "").strip():
            missing.append("tack." + n)
    for cls in public_classes():
        for name, value in gen.public_members(cls):
            if not (getattr(value, "__doc__", None) or "").strip():
                missing.append("tack.%s.%s" % (cls.__name__, name))
    for m in gen.SUBMODULES:
        mod = getattr(tack, m)
        for name, f in vars(mod).items():
            if not name.startswith("_") and callable(f) and not (f.__doc__ or "").strip():
                missing.append("tack.%s.%s" % (m, name))
    assert not missing, "no docstring: %s" % ", ".join(missing)


def stub_declarations():
    """{name: set of member names (None for a non-class)} from the stub."""
    tree = ast.parse(open(STUB).read())
    out = {}
    for node in tree.body:
        if isinstance(node, ast.ClassDef):
            members = set()
            for item in node.body:
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    members.add(item.name)
                elif isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
                    members.add(item.target.id)
            out[node.name] = members
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            out[node.name] = None
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            out[node.target.id] = None
    return out


def test_stub_matches_the_extension():
    stub = stub_declarations()
    public = {n for n in dir(_tack) if not n.startswith("_")} | {"__version__"}
    assert not public - set(stub), "missing from _tack.pyi: %s" % sorted(public - set(stub))
    extra = {n for n in stub if not n.startswith("_")} - public
    assert not extra, "_tack.pyi declares names the extension lacks: %s" % sorted(extra)
    gen = load_generator()
    for name, members in stub.items():
        cls = getattr(_tack, name, None)
        if members is None or not isinstance(cls, type):
            continue
        live = {m for m, _ in gen.public_members(cls)}
        assert live <= members, "%s: stub lacks %s" % (name, sorted(live - members))
        unknown = {m for m in members if m != "__init__" and not hasattr(cls, m)}
        assert not unknown, "%s: stub declares %s, which the class lacks" % (name, sorted(unknown))


def test_package_is_typed():
    pkg = os.path.dirname(tack.__file__)
    assert os.path.exists(os.path.join(pkg, "py.typed"))
    assert os.path.exists(os.path.join(pkg, "_tack.pyi"))
