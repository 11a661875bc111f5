"""Follow one object through eqlib's calls: which modules it visits, how often the flow
comes back to a module it had left, and how often it moves up the layering.

Definition (the measure of issue 24, "Done when"):

- A call *carries* the object when the callee is a function defined in a module of
  ``eqlib`` and one of its arguments (positional, keyword, ``self``, or an element of
  ``*args`` / a value of ``**kwargs``) *is* the object (identity; attributes or elements
  of the object do not count). Calls are observed with :func:`sys.setprofile`, in the
  order they start, over the whole run of the entry point (the entry call included).
- The *sequence of visits* is the module (``eqlib.latent.core``, ``eqlib.models.mlp``…)
  of each carrying call, with consecutive repeats merged: an *entry* is one element of
  that sequence. Two counts: over *every* carrying call (the headline numbers), and over
  *call sites* (a site = caller's code and line + callee's code; counted the first time
  it carries the object), so that a loop over the group's elements or over the layers
  counts once, as the code reads.
- *Returns*: entries into a module that already appears earlier in the sequence
  (= entries − distinct modules).
- With ``--parts`` a call also carries the object when an argument is one of its
  non-scalar attributes or an element of one (a model's layers and parameters, a
  config's tuples ``mean``/``std``): closer to following the data by reading the code.
- *Upward moves*: consecutive entries A → B where B's layer is strictly above A's, the
  layers being the ``LAYERS`` table of ``tests/unit/test_layering.py`` (read from the
  checkout being measured, ranked by a module's first component under ``eqlib``).

Cases: (a) ``model`` from ``eqlib.latent.latent_actions`` on a planted D4-equivariant
tanh MLP (``method="weights"``), and the weak case (the same network with dead, constant
and cloned units, ``plant_degenerate``); (b) ``config`` from ``eqlib.train.train`` on a
tiny CIFAR-shaped classification run (one epoch of 64 images, with evaluation data and
a checkpoint file).

Usage::

    PYTHONPATH=. python benchmarks/trace_flow.py [--verbose] [--baseline PATH]

``--baseline PATH`` runs the same measure on the checkout at PATH (its ``eqlib`` and its
layering table) in a subprocess and prints both side by side.
"""
from __future__ import annotations

import argparse
import ast
import json
import os
import pathlib
import subprocess
import sys

HERE = pathlib.Path(__file__).resolve()


def _layers(root: pathlib.Path) -> dict[str, int]:
    """{top-level eqlib module: rank} from the LAYERS table of tests/unit/test_layering.py."""
    tree = ast.parse((root / "tests" / "unit" / "test_layering.py").read_text())
    for node in tree.body:
        target = getattr(node, "target", None) or (node.targets[0] if isinstance(node, ast.Assign) else None)
        if isinstance(target, ast.Name) and target.id == "LAYERS":
            table = ast.literal_eval(node.value)
            return {name: r for r, names in enumerate(table) for name in names}
    raise RuntimeError("no LAYERS table in tests/unit/test_layering.py")


def _module_of(filename: str, pkg: str) -> str | None:
    if not filename.startswith(pkg):
        return None
    rel = pathlib.Path(filename).relative_to(pathlib.Path(pkg).parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def _parts(obj) -> set[int]:
    """ids of obj's non-scalar attributes and of their elements (one level: a model's
    layers and parameters, a config's tuples), for ``--parts``."""
    import torch

    scalar = (int, float, complex, str, bytes, bool, type(None))
    vals = list(vars(obj).values()) if hasattr(obj, "__dict__") else []
    if isinstance(obj, torch.nn.Module):
        vals += list(obj.modules())[1:] + list(obj.parameters())
    out = set()
    for v in vals:
        if isinstance(v, scalar):
            continue
        out.add(id(v))
        if isinstance(v, (list, tuple, torch.nn.ModuleList)):
            out |= {id(e) for e in v if not isinstance(e, scalar)}
    return out


def trace(obj, fn, *args, parts: bool = False, **kwargs) -> list[tuple[str, bool]]:
    """Run fn(*args, **kwargs) and return the eqlib modules of the calls carrying obj
    (or, with ``parts``, one of its attributes or their elements: see :func:`_parts`)."""
    import eqlib

    ids = {id(obj)} | (_parts(obj) if parts else set())

    pkg = str(pathlib.Path(eqlib.__file__).resolve().parent) + os.sep
    visits: list[str] = []
    seen: set = set()
    cache: dict[str, str | None] = {}

    def carries(frame) -> bool:
        code = frame.f_code
        n = code.co_argcount + code.co_kwonlyargcount
        names = list(code.co_varnames[:n])
        if code.co_flags & 0x04:  # *args
            names.append(code.co_varnames[n])
            n += 1
        if code.co_flags & 0x08:  # **kwargs
            names.append(code.co_varnames[n])
        loc = frame.f_locals
        for name in names:
            v = loc.get(name)
            if id(v) in ids:
                return True
            if isinstance(v, tuple) and any(id(e) in ids for e in v):
                return True
            if isinstance(v, dict) and any(id(e) in ids for e in v.values()):
                return True
        return False

    def hook(frame, event, arg):
        if event != "call":
            return
        fname = frame.f_code.co_filename
        if fname not in cache:
            cache[fname] = _module_of(os.path.realpath(fname), pkg)
        mod = cache[fname]
        if mod is None:
            return
        back = frame.f_back
        site = (frame.f_code, back.f_code if back else None, back.f_lineno if back else None)
        if carries(frame):
            visits.append((mod, site not in seen))
            seen.add(site)

    sys.setprofile(hook)
    try:
        fn(*args, **kwargs)
    finally:
        sys.setprofile(None)
    return visits


def measure(calls: list[tuple[str, bool]], ranks: dict[str, int]) -> dict:
    return {"calls": _measure([m for m, _ in calls], ranks), "sites": _measure([m for m, new in calls if new], ranks)}


def _measure(visits: list[str], ranks: dict[str, int]) -> dict:
    seq = [m for i, m in enumerate(visits) if i == 0 or visits[i - 1] != m]
    rank = lambda m: ranks[m.split(".")[1]]
    returns = sum(1 for i, m in enumerate(seq) if m in seq[:i])
    up = [f"{a} -> {b}" for a, b in zip(seq, seq[1:]) if rank(b) > rank(a)]
    return {"sequence": seq, "entries": len(seq), "modules": len(set(seq)), "returns": returns,
            "upward": len(up), "upward_moves": up}


def _cases(parts: bool):
    import torch

    import eqlib.latent as latent
    from eqlib.actions import trivial
    from eqlib.groups import dihedral
    try:
        from eqlib.images import image_dihedral
    except ImportError:  # a --baseline checkout from before eqlib.images
        from eqlib.actions import image_dihedral
    from eqlib.submodels import plant_degenerate

    D4 = dihedral(4)
    rin, rout = image_dihedral((1, 4, 4)), trivial(D4, 3)
    net, _ = latent.plant_equivariant(D4, rin, rout, [16, 24, 16, 3], activation="tanh", seed=0)
    deg = plant_degenerate(net, n_dead=2, n_constant=1, n_clones=2, n_negated=1, seed=0)
    deg = deg[0] if isinstance(deg, tuple) else deg

    def recover(model):
        res = latent.latent_actions(model, rin, rout, method="weights")
        assert res.ok, res.summary()

    yield "a: model, latent_actions (weights)", lambda: trace(net, recover, net, parts=parts)
    yield "a: model, latent_actions (weak case)", lambda: trace(deg, recover, deg, parts=parts)

    import inspect

    from eqlib import train as T
    from eqlib.models import MLP

    gen = torch.Generator().manual_seed(0)
    images = torch.randint(0, 256, (64, 3, 32, 32), dtype=torch.uint8, generator=gen)
    labels = torch.randint(0, 10, (64,), generator=gen)
    config = T.TrainConfig(task="classify", epochs=1, batch_size=32)
    model = MLP([3072, 8, 10], activations="tanh", seed=0)

    import tempfile

    ckpt = pathlib.Path(tempfile.mkdtemp(prefix="trace_flow_")) / "run.pt"

    def run(config):
        params = inspect.signature(T.train).parameters
        if "labels" in params:  # a checkout before issue 24: train(model, images, labels, config, ...)
            T.train(model, images, labels, config, device="cpu", progress=False, eval_data=(images, labels),
                    checkpoints=ckpt)
        else:  # the one training loop: train(model, (samples, labels), config, **image_preset())
            T.train(model, (images, labels), config, device="cpu", progress=False, eval_data=(images, labels),
                    checkpoints=ckpt, **T.image_preset())

    yield "b: config, train (tiny run)", lambda: trace(config, run, config, parts=parts)


def collect(root: pathlib.Path, parts: bool) -> dict:
    ranks = _layers(root)
    return {name: measure(case(), ranks) for name, case in _cases(parts)}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--baseline", help="another checkout: measure it too and print both")
    p.add_argument("--verbose", action="store_true", help="print the sequences and upward moves")
    p.add_argument("--parts", action="store_true",
                   help="also count calls passing the object's attributes (layers, parameters, tuples)")
    p.add_argument("--json", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--root", default=None, help=argparse.SUPPRESS)
    a = p.parse_args(argv)
    import eqlib

    root = pathlib.Path(a.root or pathlib.Path(eqlib.__file__).resolve().parents[1])
    here = collect(root, a.parts)
    if a.json:
        print(json.dumps(here))
        return 0
    base = None
    if a.baseline:
        broot = pathlib.Path(a.baseline).resolve()
        env = {**os.environ, "PYTHONPATH": str(broot)}
        out = subprocess.run([sys.executable, str(HERE), "--json", "--root", str(broot)]
                             + (["--parts"] if a.parts else []), cwd=broot, env=env,
                             capture_output=True, text=True)
        if out.returncode:
            sys.stderr.write(out.stderr)
            return out.returncode
        base = json.loads(out.stdout.strip().splitlines()[-1])
    for name, m in here.items():
        print(name)
        cols = [("this checkout", m)] + ([(f"baseline {a.baseline}", base[name])] if base else [])
        for label, r in cols:
            c, t = r["calls"], r["sites"]
            print(f"  {label:>40}: every call: {c['entries']:3d} entries into {c['modules']:2d} modules, "
                  f"{c['returns']:3d} returns, {c['upward']:3d} upward | call sites: {t['entries']:3d} entries, "
                  f"{t['returns']:3d} returns, {t['upward']:3d} upward")
        if a.verbose:
            for label, r in cols:
                r = r["calls"]
                print(f"  [{label}] sequence: " + " > ".join(s.removeprefix("eqlib.") for s in r["sequence"]))
                print(f"  [{label}] upward: " + "; ".join(s.replace("eqlib.", "") for s in r["upward_moves"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
