"""Conventions of eqlib kept by tests (CONTRIBUTING.md, "Conventions"; issue #24, item 5).

* Derived generators come from ``eqlib.seeds`` (``torch_generator``, ``spawn``): no
  ``torch.Generator()`` / ``.manual_seed(`` and no ``seed + 1`` offsets outside ``seeds``.
* A public function or method with more than four parameters takes the rest as keywords
  only (``*``), so call sites name what they set and the order can change.
* A value of the wrong type raises ``TypeError``, a wrong value of the right type
  ``ValueError``.

The PENDING sets list the exceptions, each with its reason; they may only shrink (a test fails
when an entry no longer needs to be there).
"""
from __future__ import annotations

import ast
import dataclasses
import importlib
import inspect
import pathlib
import pkgutil

import pytest
import torch

import eqlib

ROOT = pathlib.Path(__file__).resolve().parents[2]
PKG = ROOT / "eqlib"

# -- derived generators ---------------------------------------------------------------
#: files that still offset seeds, with the reason (each offset fixes data behind a record)
GENERATOR_PENDING: dict[str, str] = {
    "eqlib/experiments/cifar_setup.py":
        "the 2,000 test images of the recorded laptop runs (eqlib/recorded/cifar_mlp_laptop_seeds.json, "
        "seeds 0-2, which chapter 11 compares live runs to) are the subset drawn with seed + 1; spawn "
        "would change the records' data",
    "eqlib/experiments/filter_search.py":
        "the noise probes behind the recorded search's f1_*_noise columns (eqlib/recorded/"
        "cifar_mlp_search.json, quoted by chapter 11) were drawn with seed + 1; spawn would change them",
}


def _is_seed(node: ast.AST) -> bool:
    return ((isinstance(node, ast.Name) and "seed" in node.id)
            or (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "int"
                and len(node.args) == 1 and _is_seed(node.args[0])))


_SEEDERS = ("manual_seed", "torch_generator", "numpy_rng", "default_rng", "spawn", "derive_seed")


def _offset(node: ast.AST) -> bool:
    return isinstance(node, ast.BinOp) and (_is_seed(node.left) or _is_seed(node.right))


def _hand_built(path: pathlib.Path) -> list[str]:
    """Lines that build a generator by hand or pass a seed derived by arithmetic."""
    out = []
    for node in ast.walk(ast.parse(path.read_text())):
        if not isinstance(node, ast.Call):
            continue
        f = node.func
        name = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""
        if name == "manual_seed" or (name == "Generator" and isinstance(f, ast.Attribute)
                                     and isinstance(f.value, ast.Name) and f.value.id == "torch"):
            out.append(f"{node.lineno}: {ast.unparse(node)[:80]}")
        seeds = [k.value for k in node.keywords if k.arg in ("seed", "generator")]
        seeds += node.args[:1] if name in _SEEDERS else []
        out += [f"{node.lineno}: seed offset {ast.unparse(s)[:80]}" for s in seeds if _offset(s)]
    return out


def _library_files():
    for path in sorted(PKG.rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        if rel != "eqlib/seeds.py":
            yield rel, path


def test_derived_generators_come_from_seeds():
    bad = {rel: lines for rel, path in _library_files()
           if rel not in GENERATOR_PENDING and (lines := _hand_built(path))}
    assert not bad, ("build generators with eqlib.seeds.torch_generator(seed) and derive streams with "
                     f"eqlib.seeds.spawn(seed, 'name'), not by hand or by seed offsets: {bad}")


def test_generator_pending_only_shrinks():
    stale = [rel for rel in GENERATOR_PENDING if not (ROOT / rel).exists() or not _hand_built(ROOT / rel)]
    assert not stale, f"remove from GENERATOR_PENDING (converted or gone): {stale}"


def test_the_scan_finds_hand_built_generators(tmp_path):
    path = tmp_path / "m.py"
    path.write_text("import torch\ng = torch.Generator().manual_seed(seed + 1)\nh = f(seed=int(seed) * 31)\n")
    assert len(_hand_built(path)) == 4


# -- keyword-only arguments -------------------------------------------------------------
MAX_POSITIONAL = 4
_CHECKER = ("exercise checker: the check cells of released student notebooks call it positionally, "
            "and those notebooks must keep working")

#: public callables that still take more than MAX_POSITIONAL positional parameters
KEYWORD_PENDING: dict[str, str] = {
    "eqlib.exercises.ch06.check_clone_lift": _CHECKER,
    "eqlib.exercises.ch06.check_latent_action": _CHECKER,
}


def eqlib_modules():
    """Every module of eqlib (``__main__`` modules, which run a CLI, left out)."""
    mods = [eqlib]
    for info in pkgutil.walk_packages(eqlib.__path__, "eqlib."):
        if not info.name.endswith("__main__"):
            mods.append(importlib.import_module(info.name))
    return mods


def _public_callables():
    """(qualified name, function) for every name in a module's ``__all__`` and every public
    method (and ``__init__``) of a public class, dataclass-generated ``__init__`` left out."""
    seen = {}
    for mod in eqlib_modules():
        for name in getattr(mod, "__all__", ()):
            obj = getattr(mod, name, None)
            if inspect.isfunction(obj) and obj.__module__.startswith("eqlib"):
                seen[f"{obj.__module__}.{obj.__qualname__}"] = obj
            elif inspect.isclass(obj) and obj.__module__.startswith("eqlib"):
                for attr, member in vars(obj).items():
                    if attr.startswith("_") and attr != "__init__":
                        continue
                    if isinstance(member, (staticmethod, classmethod)):
                        member = member.__func__
                    if not inspect.isfunction(member):
                        continue
                    if attr == "__init__" and dataclasses.is_dataclass(obj) and member.__code__.co_filename in (
                            "<string>", dataclasses.__file__) or "__create_fn__" in member.__qualname__:
                        continue
                    seen[f"{obj.__module__}.{obj.__qualname__}.{attr}"] = member
    return seen


def _positional(fn) -> int:
    kinds = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    return sum(p.kind in kinds and p.name not in ("self", "cls") for p in inspect.signature(fn).parameters.values())


def test_long_signatures_take_keywords_only():
    callables = _public_callables()
    assert len(callables) > 200  # the walk finds the library
    bad = sorted(f"{name} ({_positional(fn)} positional)" for name, fn in callables.items()
                 if name not in KEYWORD_PENDING and _positional(fn) > MAX_POSITIONAL)
    assert not bad, (f"after at most {MAX_POSITIONAL} essential parameters, make the rest keyword-only "
                     f"with `*` (and name them at every call site): {bad}")


def test_keyword_pending_only_shrinks():
    callables = _public_callables()
    stale = [name for name in KEYWORD_PENDING
             if name not in callables or _positional(callables[name]) <= MAX_POSITIONAL]
    assert not stale, f"remove from KEYWORD_PENDING (fixed or gone): {stale}"


# -- TypeError for wrong types ----------------------------------------------------------
def _type_cases():
    from eqlib import actions, assignments, exercises, groups, images
    from eqlib.latent.attention.recover import recover_attention_action
    rho = actions.regular(groups.cyclic(4))
    x = torch.zeros(2, 3, 4, 4)
    u8 = torch.zeros(2, 3, 4, 4, dtype=torch.uint8)
    return [
        ("g", lambda: rho.act(1, torch.zeros(4))),
        ("matrices", lambda: actions.from_matrices(groups.cyclic(2), {0: torch.eye(1), 1: torch.eye(1)})),
        ("mean", lambda: images.normalize(u8, 0.5, (1.0, 1.0, 1.0))),
        ("uint8", lambda: images.normalize(x)),
        ("chapter", lambda: exercises.fresh(2)),
        ("assignment", lambda: assignments.setup("/nonexistent", ["2"], assignment=3)),
        ("timeout", lambda: assignments.grade("/nonexistent", "/nonexistent", timeout="60")),
        ("jobs", lambda: assignments.grade("/nonexistent", "/nonexistent", jobs=2.0)),
        ("model", lambda: recover_attention_action("layer", None, x)),
    ]


@pytest.mark.parametrize("index", range(9))
def test_wrong_types_raise_type_error(index):
    name, call = _type_cases()[index]
    with pytest.raises(TypeError, match=name):
        call()
