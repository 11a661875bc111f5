"""Answers as plain data: what crosses from a student's sandbox to the grader.

``encode`` turns a value into a JSON tree plus numeric arrays; ``decode`` builds
it back from the grader's own classes. Nothing is pickled and no object of the student's
crosses: a JSON file is read with ``json.loads``, arrays with ``numpy.load(...,
allow_pickle=False)`` and only of a numeric dtype. Accepted values, matched by *exact*
type (a subclass of ``int`` or of ``torch.Tensor`` is refused, so an ``int`` whose ``==``
always holds or a tensor whose ``allclose`` always holds never reaches a checker):

- ``None``, ``bool``, ``int``, ``float``, ``str``, lists, tuples and dicts of them;
- ``torch.Tensor`` / ``nn.Parameter`` and ``numpy.ndarray`` of a numeric dtype, numpy scalars;
- the course's own objects, rebuilt by the grader from their data: finite groups and
  their elements (``eqlib.groups``), actions (``eqlib.actions``: permutation actions by
  their index maps, any other by its matrices), ``eqlib.models.MLP`` (widths,
  activations, weights) and any other ``torch.nn.Module`` whose *structure* the
  instructor's answer gives (a template): only its parameters and buffers are read.

Chapter: every chapter's *Exercises* section (grading; book/teaching).
"""
from __future__ import annotations

import copy
import hashlib
import io
import json
import math
import os
from pathlib import Path

import numpy as np
import torch
from torch import nn

from ..actions import Action, MatrixAction, PermutationAction
from ..groups import FiniteGroup, GroupElement
from ..models import MLP

MAX_BYTES = 64 * 2 ** 20  # one answer's arrays, at most
MAX_NODES = 200_000
NUMERIC = "biufc"  # numpy dtype kinds: bool, int, uint, float, complex


class Refused(ValueError):
    """A value that is not plain data (the check that needs it scores 0)."""


class _Writer:
    """Collects an answer's arrays. ``prefix`` names them (several values in one file);
    ``structure`` also writes a module's structure (its class and plain attributes), for
    the inputs the grader hands a student's function (see ``encode``)."""

    def __init__(self, prefix: str = "a", structure: bool = False):
        self.arrays: dict[str, np.ndarray] = {}
        self.nodes = 0
        self.prefix, self.structure = prefix, structure

    def array(self, a: np.ndarray) -> str:
        if a.dtype.kind not in NUMERIC:
            raise Refused(f"an array of dtype {a.dtype} is not numeric")
        key = f"{self.prefix}{len(self.arrays)}"
        self.arrays[key] = np.ascontiguousarray(a)
        if sum(x.nbytes for x in self.arrays.values()) > MAX_BYTES:
            raise Refused(f"the answer's arrays exceed {MAX_BYTES // 2 ** 20} MiB")
        return key


def _tensor_array(t) -> np.ndarray:
    t = t.detach().cpu()
    if t.dtype == torch.bfloat16:
        t = t.float()
    return t.resolve_conj().resolve_neg().numpy().copy()


def encode(value, writer=None, templates=None, structure: bool = False):
    """``(tree, arrays)`` for ``value``; raises ``Refused`` for anything else.

    ``structure=True`` (the grader's inputs to a student's function, never a student's
    answer) also writes each ``torch.nn`` or ``eqlib`` module's structure: its class, its
    plain attributes and its submodules, so the sandbox can rebuild it without a template
    (``decode(..., structure=True)``).
    """
    w = writer or _Writer(structure=structure)
    tree = _enc(value, w, 0)
    return tree, w.arrays


def _enc(x, w: _Writer, depth: int):
    w.nodes += 1
    if w.nodes > MAX_NODES or depth > 50:
        raise Refused("the answer is too large or too deeply nested")
    t = type(x)
    if x is None or t is bool or t is str:
        return x
    if t is int:
        if abs(x) > 2 ** 62:
            return {"t": "bigint", "v": str(x)}
        return x
    if t is float:
        return x if math.isfinite(x) else {"t": "float", "v": repr(x)}
    if t is complex:
        return {"t": "complex", "v": [_enc(x.real, w, depth + 1), _enc(x.imag, w, depth + 1)]}
    if t is list:
        return [_enc(v, w, depth + 1) for v in x]
    if t is tuple:
        return {"t": "tuple", "v": [_enc(v, w, depth + 1) for v in x]}
    if t is torch.Size:
        return {"t": "tuple", "v": [int(v) for v in x]}
    if t is dict:
        return {"t": "dict", "v": [[_enc(k, w, depth + 1), _enc(v, w, depth + 1)] for k, v in x.items()]}
    if t is torch.Tensor or t is nn.Parameter:
        return {"t": "tensor", "a": w.array(_tensor_array(x))}
    if t is np.ndarray:
        return {"t": "ndarray", "a": w.array(np.array(x, copy=True))}
    if isinstance(x, np.generic) and t.__module__ == "numpy":
        if x.dtype.kind not in NUMERIC:
            raise Refused(f"a numpy scalar of dtype {x.dtype} is not numeric")
        return {"t": "npscalar", "a": w.array(np.asarray(x))}
    if t is FiniteGroup:
        return {"t": "group", "name": x.name, "table": w.array(np.asarray(x.table)),
                "names": list(map(str, x.names)), "generators": [int(g.index) for g in x.generators],
                "perms": w.array(np.asarray(x.permutations)) if getattr(x, "permutations", None) is not None
                else None}
    if t is GroupElement:
        return {"t": "element", "group": _enc(x.group, w, depth + 1), "index": int(x.index)}
    if isinstance(x, Action) and type(x).__module__.startswith("eqlib."):
        group = _enc(x.group, w, depth + 1)
        shape = [int(s) for s in x.shape]
        if t is PermutationAction:
            return {"t": "permaction", "group": group, "shape": shape, "index": w.array(_tensor_array(x.index)),
                    "signs": None if x.signs is None else w.array(_tensor_array(x.signs))}
        mats = np.stack([_tensor_array(x.matrix(g)) for g in x.group])
        return {"t": "matrixaction", "group": group, "shape": shape, "matrices": w.array(mats)}
    if t is MLP:
        return {"t": "mlp", "widths": [int(v) for v in x.widths], "activations": [str(a) for a in x.activations],
                "bias": all(layer.bias is not None for layer in x.layers),
                "state": _enc_state(x, w)}
    if isinstance(x, nn.Module) and (type(x).__module__.startswith(("eqlib.", "torch.nn."))):
        node = {"t": "module", "class": f"{t.__module__}.{t.__qualname__}", "state": _enc_state(x, w)}
        if w.structure:
            node["structure"] = _enc_structure(x, w, depth)
        return node
    raise Refused(f"a value of type {t.__module__}.{t.__qualname__} is not plain data "
                  "(numbers, strings, lists, tuples, dicts, tensors or the course's objects)")


def _enc_state(module: nn.Module, w: _Writer) -> list:
    state = module.state_dict()
    return [[str(k), w.array(_tensor_array(v))] for k, v in state.items() if type(v) in (torch.Tensor, nn.Parameter)]


_MODULE_INTERNALS = frozenset(nn.Module().__dict__)  # hooks, _parameters, ...: made by nn.Module


def _enc_structure(module: nn.Module, w: _Writer, depth: int) -> dict:
    """A module's class, plain attributes, parameters, buffers and submodules (in order)."""
    attrs = []
    for name, value in vars(module).items():
        if name in _MODULE_INTERNALS:
            continue
        try:
            attrs.append([name, _enc(value, w, depth + 1)])
        except Refused:
            raise Refused(f"the module {type(module).__qualname__}'s attribute {name} is not plain data") from None
    params = [[name, None if p is None else w.array(_tensor_array(p)), None if p is None else bool(p.requires_grad)]
              for name, p in module._parameters.items()]
    buffers = [[name, None if b is None else w.array(_tensor_array(b)), name in module._non_persistent_buffers_set]
               for name, b in module._buffers.items()]
    subs = [[name, None if m is None else _enc(m, w, depth + 1)] for name, m in module._modules.items()]
    return {"attrs": attrs, "params": params, "buffers": buffers, "modules": subs, "training": bool(module.training)}


def _module_class(name: str) -> type:
    import importlib

    module_name, _, qualname = name.rpartition(".")
    if not module_name.startswith(("eqlib.", "torch.nn.")) or "." in qualname:
        raise Refused(f"a module of class {name} cannot be rebuilt")
    cls = getattr(importlib.import_module(module_name), qualname, None)
    if not (isinstance(cls, type) and issubclass(cls, nn.Module)):
        raise Refused(f"{name} is not a torch module")
    return cls


def _dec_structure(node: dict, r: "_Reader") -> nn.Module:
    """The module ``node`` describes, built from its structure (inputs in the sandbox only)."""
    s = node["structure"]
    module = _module_class(str(node["class"])).__new__(_module_class(str(node["class"])))
    nn.Module.__init__(module)
    for name, value in s["attrs"]:
        setattr(module, str(name), _dec(value, r, None))
    for name, key, grad in s["params"]:
        module._parameters[str(name)] = None if key is None else nn.Parameter(
            torch.from_numpy(np.array(r.array(key), copy=True)), requires_grad=bool(grad))
    for name, key, transient in s["buffers"]:
        module._buffers[str(name)] = None if key is None else torch.from_numpy(np.array(r.array(key), copy=True))
        if transient:
            module._non_persistent_buffers_set.add(str(name))
    for name, sub in s["modules"]:
        module._modules[str(name)] = None if sub is None else _dec(sub, r, None)
    module.train(bool(s["training"]))
    return module


# ---------------------------------------------------------------------------------------- decode

class _Reader:
    def __init__(self, arrays, groups=(), structure: bool = False):
        self.arrays, self.groups, self.used = arrays, list(groups), set()
        self.structure = structure

    def array(self, key) -> np.ndarray:
        if not isinstance(key, str) or key not in self.arrays:
            raise Refused(f"missing array {key!r}")
        a = self.arrays[key]
        if a.dtype.kind not in NUMERIC:
            raise Refused(f"an array of dtype {a.dtype} is not numeric")
        return a

    def group(self, node) -> FiniteGroup:
        g = _dec(node, self, None)
        if not isinstance(g, FiniteGroup):
            raise Refused("expected a group")
        return g


def decode(tree, arrays: dict, template=None, groups=(), structure: bool = False):
    """The value ``tree`` describes, built from the grader's classes.

    ``template``: the instructor's value for the same answer; a module that is neither an
    MLP nor a known class is a deep copy of it with the student's parameters loaded.
    ``groups``: the grader's groups; an equal group decodes to that very object.
    ``structure``: rebuild a module from the structure ``encode(..., structure=True)``
    wrote (the sandbox reading the grader's inputs; the grader never decodes a student's
    module this way).
    """
    return _dec(tree, _Reader(arrays, groups, structure), template)


def _dec(node, r: _Reader, template):
    if node is None or type(node) in (bool, int, float, str):
        return node
    if type(node) is list:
        sub = template if type(template) is list and len(template) == len(node) else [None] * len(node)
        return [_dec(v, r, s) for v, s in zip(node, sub)]
    if type(node) is not dict or not isinstance(node.get("t"), str):
        raise Refused("malformed answer file")
    t = node["t"]
    if t == "bigint":
        return int(node["v"])
    if t == "float":
        if node["v"] not in ("nan", "inf", "-inf"):
            raise Refused("malformed float")
        return float(node["v"])
    if t == "complex":
        return complex(float(node["v"][0]), float(node["v"][1]))
    if t == "tuple":
        vals = node["v"]
        sub = template if type(template) is tuple and len(template) == len(vals) else [None] * len(vals)
        return tuple(_dec(v, r, s) for v, s in zip(vals, sub))
    if t == "dict":
        tmpl = template if type(template) is dict else {}
        out = {}
        for k, v in node["v"]:
            key = _dec(k, r, None)
            try:
                hash(key)
            except TypeError:
                raise Refused("a dict key is not hashable") from None
            out[key] = _dec(v, r, tmpl.get(key) if _hashable(key) else None)
        return out
    if t == "tensor":
        return torch.from_numpy(np.array(r.array(node["a"]), copy=True))
    if t == "ndarray":
        return np.array(r.array(node["a"]), copy=True)
    if t == "npscalar":
        return r.array(node["a"])[()]
    if t == "group":
        table = np.asarray(r.array(node["table"]))
        if table.ndim != 2 or table.shape[0] > 5040 or table.dtype.kind not in "iu":
            raise Refused("a group table must be a square integer array of order <= 5040")
        for g in r.groups:
            if g.name == node["name"] and np.array_equal(np.asarray(g.table), table):
                return g
        group = FiniteGroup(table, names=[str(n) for n in node["names"]],
                            generators=[int(i) for i in node["generators"]], name=str(node["name"]))
        if node.get("perms") is not None:
            group.permutations = np.asarray(r.array(node["perms"]))
        r.groups.append(group)
        return group
    if t == "element":
        group = r.group(node["group"])
        i = node["index"]
        if type(i) is not int or not 0 <= i < group.order:
            raise Refused("a group element's index is out of range")
        return group[i]
    if t == "permaction":
        group = r.group(node["group"])
        signs = None if node["signs"] is None else r.array(node["signs"])
        return PermutationAction(group, np.asarray(r.array(node["index"])), signs, tuple(node["shape"]))
    if t == "matrixaction":
        group = r.group(node["group"])
        return MatrixAction(group, torch.from_numpy(np.array(r.array(node["matrices"]), dtype=np.float32)),
                            tuple(node["shape"]))
    if t == "mlp":
        widths, acts = node["widths"], node["activations"]
        if not all(type(v) is int and 0 < v <= 100_000 for v in widths) or len(widths) > 100:
            raise Refused("MLP widths out of range")
        net = MLP(widths, [str(a) for a in acts], bias=bool(node["bias"]), seed=0)
        _load_state(net, node["state"], r)
        return net
    if t == "module":
        if r.structure and isinstance(node.get("structure"), dict):
            return _dec_structure(node, r)
        if not isinstance(template, nn.Module) or node["class"] != \
                f"{type(template).__module__}.{type(template).__qualname__}":
            raise Refused(f"a {node['class']} cannot be rebuilt here (expected "
                          f"{type(template).__qualname__ if template is not None else 'plain data'})")
        module = copy.deepcopy(template)
        _load_state(module, node["state"], r)
        return module
    raise Refused(f"unknown kind {t!r}")


def _hashable(key) -> bool:
    try:
        hash(key)
        return True
    except TypeError:
        return False


def _load_state(module: nn.Module, items, r: _Reader) -> None:
    state = module.state_dict()
    given = {str(k): torch.from_numpy(np.array(r.array(a), copy=True)) for k, a in items}
    if set(given) != set(state):
        raise Refused(f"the module's parameters are {sorted(given)}, expected {sorted(state)}")
    for k, v in given.items():
        if tuple(v.shape) != tuple(state[k].shape):
            raise Refused(f"parameter {k} has shape {tuple(v.shape)}, expected {tuple(state[k].shape)}")
        given[k] = v.to(state[k].dtype)
    module.load_state_dict(given)


# ---------------------------------------------------------------------------------------- files

def dump(value, folder: Path, name: str) -> None:
    """Write ``name.json`` (and ``name.npz``) in ``folder``; atomically, the JSON last."""
    try:
        tree, arrays = encode(value)
        doc = {"ok": True, "value": tree}
    except Refused as exc:
        arrays, doc = {}, {"ok": False, "error": f"refused: {exc}"}
    except Exception as exc:  # the student's object raised while being read
        arrays, doc = {}, {"ok": False, "error": f"refused: reading the answer raised {type(exc).__name__}: {exc}"}
    write_doc(doc, arrays, folder, name)


def write_doc(doc: dict, arrays: dict, folder: Path, name: str) -> None:
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    if arrays:
        buf = io.BytesIO()
        np.savez(buf, **arrays)
        tmp = folder / f".{name}.npz.tmp"
        tmp.write_bytes(buf.getvalue())
        os.replace(tmp, folder / f"{name}.npz")
    tmp = folder / f".{name}.json.tmp"
    tmp.write_text(json.dumps(doc, allow_nan=False))
    os.replace(tmp, folder / f"{name}.json")


def _read_regular(path: Path, limit: int) -> bytes | None:
    """The bytes of a regular file (never through a link), or None."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        import stat
        if not stat.S_ISREG(st.st_mode) or st.st_size > limit:
            return None
        with os.fdopen(fd, "rb", closefd=False) as f:
            return f.read(limit + 1)
    finally:
        os.close(fd)


def read_doc(folder: Path, name: str) -> tuple[dict | None, dict]:
    """``(doc, arrays)`` written by ``write_doc``, read strictly (None if absent or bad)."""
    raw = _read_regular(Path(folder) / f"{name}.json", 32 * 2 ** 20)
    if raw is None:
        return None, {}
    try:
        doc = json.loads(raw.decode("utf-8"))
    except (ValueError, UnicodeDecodeError):
        return {"ok": False, "error": "refused: the answer file is not JSON"}, {}
    if type(doc) is not dict:
        return {"ok": False, "error": "refused: malformed answer file"}, {}
    arrays = {}
    blob = _read_regular(Path(folder) / f"{name}.npz", MAX_BYTES * 2)
    if blob is not None:
        try:
            with np.load(io.BytesIO(blob), allow_pickle=False) as z:
                arrays = {k: z[k] for k in z.files}
        except Exception as exc:
            return {"ok": False, "error": f"refused: unreadable arrays ({type(exc).__name__})"}, {}
    return doc, arrays


def digest(tree, arrays: dict) -> str:
    """A content key of an encoded value (the same value gives the same key in any process)."""
    h = hashlib.sha256(json.dumps(tree, sort_keys=True).encode())
    for k in sorted(arrays):
        a = arrays[k]
        h.update(f"{k}:{a.dtype.str}:{a.shape}".encode())
        h.update(np.ascontiguousarray(a).tobytes())
    return h.hexdigest()
