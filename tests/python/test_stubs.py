"""The type stubs and annotations match what the package really has, so editors complete
the real API: _strata.pyi names exactly the extension's public members, and the public
classes' methods carry annotations."""

import ast
import inspect
import pathlib

import strata
from strata import _strata

STUB = pathlib.Path(_strata.__file__).with_name("_strata.pyi")


def stub_members():
    tree = ast.parse(STUB.read_text())
    functions = {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}
    classes = {
        n.name: {m.name for m in n.body if isinstance(m, ast.FunctionDef)}
        for n in tree.body
        if isinstance(n, ast.ClassDef)
    }
    return functions, classes


def test_the_extension_stub_names_every_public_member():
    functions, classes = stub_members()
    runtime = {name for name in dir(_strata) if not name.startswith("__")}
    assert runtime == functions | set(classes)
    for name, methods in classes.items():
        cls = getattr(_strata, name)
        public = {m for m in methods if not m.startswith("_")}
        assert public == {m for m in vars(cls) if not m.startswith("_")}, name


def test_public_methods_are_annotated():
    for cls in (strata.RolloutStore, strata.GenericStore, strata.Context, strata.ContextNamespace):
        for name, member in vars(cls).items():
            if name.startswith("_") or not callable(getattr(member, "__func__", member)):
                continue
            function = getattr(member, "__func__", member)
            signature = inspect.signature(function)
            assert signature.return_annotation is not inspect.Signature.empty, (cls, name)
            for parameter in signature.parameters.values():
                if parameter.name in ("self", "cls"):
                    continue
                assert parameter.annotation is not inspect.Parameter.empty, (cls, name, parameter)
    assert (pathlib.Path(strata.__file__).parent / "py.typed").exists()
