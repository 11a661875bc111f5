"""The JSON of an experiment's numbers: strict, written atomically, checked when read.

:func:`~eqlib.experiments.records.strict_json` writes NaN and ±inf as ``null`` and notes
where (under
:data:`~eqlib.experiments.records.NONFINITE_KEY`),
:func:`~eqlib.experiments.records.write_json` writes the file atomically (the old file stays
whole when the write fails) and :func:`~eqlib.experiments.records.load_json` reads it back,
restoring the noted
non-finite numbers and checking the keys a chapter reads.
:func:`~eqlib.experiments.records.load_recorded` reads the recorded runs the chapters show,
which ship inside the package (``eqlib/recorded/``, read through
``importlib.resources``), so a chapter runs wherever its notebook is opened;
:func:`~eqlib.experiments.records.recorded_figure` shows the figures recorded with them
(``eqlib/recorded/figures/``) the same way.
:func:`~eqlib.experiments.records.check_recorded` checks that a recorded run was made with
a budget's settings (:func:`~eqlib.experiments.records.legacy_settings` reads settings that
older code recorded flat). :mod:`eqlib.experiments.protocol` re-exports every name.

Chapters: Part III, *Experiments* (book/part3).
"""
from __future__ import annotations

import dataclasses
import errno
import importlib.resources
import json
import math
import os
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from ..io import atomic_write, json_object
from ..validation import check_bool, check_choice, show

__all__ = ["NONFINITE_KEY", "RECORDS", "RECORDED_FIGURES", "strict_json", "write_json", "load_json",
           "load_recorded", "recorded_figure_png", "recorded_figure", "settings_dict", "legacy_settings",
           "numbers_differ", "check_recorded"]


#: the key under which :func:`~eqlib.experiments.records.write_json` notes the non-finite
#: numbers it wrote as ``null``
NONFINITE_KEY = "nonfinite"
_NONFINITE_TEXT = {"NaN": float("nan"), "Infinity": float("inf"), "-Infinity": float("-inf")}


def _pointer(parts: Sequence[Any]) -> str:
    """The JSON pointer (RFC 6901) of a path: ``/networks/tanh/loss/3``."""
    return "".join("/" + str(p).replace("~", "~0").replace("/", "~1") for p in parts)


def _strict(obj: Any, parts: tuple, notes: dict[str, str]) -> Any:
    """``obj`` with NaN/±inf replaced by None (noted in ``notes`` by JSON pointer), tuples as
    lists and numpy/torch scalars as Python numbers."""
    if isinstance(obj, bool) or obj is None or isinstance(obj, (str, int)):
        return obj
    if isinstance(obj, float):
        if math.isfinite(obj):
            return obj
        notes[_pointer(parts)] = "NaN" if math.isnan(obj) else ("Infinity" if obj > 0 else "-Infinity")
        return None
    if isinstance(obj, Mapping):
        return json_object(obj, lambda k, v: _strict(v, parts + (k,), notes),
                           f"write_json: at {_pointer(parts) or '/'}")
    if isinstance(obj, (list, tuple)):
        return [_strict(v, parts + (i,), notes) for i, v in enumerate(obj)]
    item = getattr(obj, "item", None)  # numpy / torch scalars
    if callable(item) and (getattr(obj, "ndim", None) == 0 or type(obj).__module__ == "numpy"):
        try:
            return _strict(item(), parts, notes)
        except (TypeError, ValueError):
            pass
    raise TypeError(f"write_json: {type(obj).__name__} at {_pointer(parts) or '/'} is not a JSON value")


def strict_json(obj: Any, indent: int | None = 1) -> str:
    """``obj`` as strict JSON text (RFC 8259: no ``NaN``/``Infinity`` tokens). Each non-finite
    number is written as ``null`` and noted under the top-level key ``"nonfinite"``:
    ``{"/networks/tanh/loss/3": "NaN", ...}`` (JSON pointers), which
    :func:`~eqlib.experiments.records.load_json`
    reads back, so a record round-trips exactly and strict parsers accept it.

    Raises:
        TypeError: for a value that is not JSON (naming where it is).
        ValueError: for non-finite numbers in a top level that is not a dict, or a dict
            that already has the key ``"nonfinite"``.

    Chapters: Part III, *Experiments*.
    """
    notes: dict[str, str] = {}
    plain = _strict(obj, (), notes)
    if notes:
        if not isinstance(plain, dict):
            raise ValueError(f"write_json: non-finite numbers at {sorted(notes)} need a dict at the top "
                             "level to note them")
        if NONFINITE_KEY in plain:
            raise ValueError(f"write_json: the record already has a key {NONFINITE_KEY!r}, where the "
                             "non-finite numbers are noted")
        plain[NONFINITE_KEY] = notes
    return json.dumps(plain, indent=indent, allow_nan=False)


def _restore_nonfinite(record: dict[str, Any], where: str) -> dict[str, Any]:
    notes = record.pop(NONFINITE_KEY, None)
    if notes is None:
        return record
    if not isinstance(notes, dict):
        raise ValueError(f"{where}: {NONFINITE_KEY!r} must map JSON pointers to NaN/Infinity/-Infinity")
    for pointer, text in notes.items():
        if text not in _NONFINITE_TEXT or not isinstance(pointer, str) or not pointer.startswith("/"):
            raise ValueError(f"{where}: bad {NONFINITE_KEY!r} entry {pointer!r}: {text!r}")
        parts = [p.replace("~1", "/").replace("~0", "~") for p in pointer[1:].split("/")]
        node: Any = record
        try:
            for p in parts[:-1]:
                node = node[int(p)] if isinstance(node, list) else node[p]
            last = int(parts[-1]) if isinstance(node, list) else parts[-1]
            if node[last] is not None:
                raise KeyError(pointer)
            node[last] = _NONFINITE_TEXT[text]
        except (KeyError, IndexError, ValueError, TypeError):
            raise ValueError(f"{where}: {NONFINITE_KEY!r} names {pointer!r}, which is not a null of the "
                             "record") from None
    return record


def write_json(path: str | os.PathLike, obj: Any) -> Path:
    """Write ``obj`` as indented strict JSON
    (:func:`~eqlib.experiments.records.strict_json`: NaN and ±inf become
    ``null`` plus a note) to ``path`` atomically (:func:`eqlib.io.atomic_write`): a crash
    leaves the old file or none, never half a file. Numpy/torch scalars are written as
    numbers.

    Nothing is lost when the target cannot take it (it is a folder, the folder turned
    read-only, the disk is full): the JSON is then written to a new folder
    ``eqlib-rescue-*`` beside the target's folder (else in the system's temporary folder),
    and an ``OSError`` names both places.

    Chapters: Part III, *Experiments*.
    """
    path = Path(path)
    text = strict_json(obj)
    try:
        if path.is_dir():
            raise IsADirectoryError(errno.EISDIR, "the target is a folder", str(path))
        return atomic_write(path, lambda f: f.write(text.encode()))
    except OSError as exc:
        rescued = _rescue(path, text.encode())
        where = (f"the JSON is saved instead at {str(rescued)!r}" if rescued
                 else "the JSON could not be saved elsewhere either")
        raise OSError(exc.errno, f"could not write {str(path)!r} ({exc.strerror or exc}); {where}") from exc


def _rescue(path: Path, data: bytes) -> Path | None:
    """Write ``data`` to ``eqlib-rescue-*/<name>`` beside ``path``'s folder, else in the
    system's temporary folder; the written path, or None."""
    for parent in (path.parent.parent, None):
        try:
            folder = Path(tempfile.mkdtemp(prefix="eqlib-rescue-", dir=parent))
            return atomic_write(folder / path.name, lambda f: f.write(data))
        except OSError:
            continue
    return None


def load_json(path: str | os.PathLike, required: Sequence[str] = ("settings",)) -> dict[str, Any]:
    """Read a results JSON written by an experiment (the non-finite numbers that
    :func:`~eqlib.experiments.records.write_json` noted are put back; older records with
    ``NaN`` tokens still load).

    Raises:
        FileNotFoundError: naming the path and how to make the file.
        ValueError: when the file is not JSON or lacks one of ``required`` keys.

    Chapters: Part III, *Experiments*.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"no results file {str(path)!r}; run the experiment's command "
                                "line with --out pointing at its folder")
    try:
        record = json.loads(path.read_text())
    except json.JSONDecodeError as exc:
        raise ValueError(f"{str(path)!r} is not a results JSON ({exc})") from None
    if not isinstance(record, dict):
        raise ValueError(f"{str(path)!r} is not a results JSON (top level is "
                         f"{type(record).__name__})")
    record = _restore_nonfinite(record, repr(str(path)))
    missing = [k for k in required if k not in record]
    if missing:
        raise ValueError(f"{str(path)!r} lacks {missing}; was it written by this experiment?")
    return record


def _shipped(*parts: str):
    """A file the package ships (``eqlib/<parts>``), through ``importlib.resources``: found
    wherever eqlib is installed, whatever the working folder."""
    return importlib.resources.files("eqlib").joinpath(*parts)


#: the recorded runs the package ships in ``eqlib/recorded/``: file name -> the keys
#: :func:`~eqlib.experiments.records.load_recorded` checks. ``gcnn_barrier_full.json`` is
#: written there by ``benchmarks/gpu_check.sh`` and absent until a GPU session records it;
#: ``gcnn_barrier_medium.json`` by ``benchmarks/record_medium.sh`` (hours on a CPU);
#: ``gcnn_barrier_medium_15.json`` is the medium record made before its invariance networks
#: trained 25 epochs (every network 15; today's command for it adds
#: ``--set invariance_epochs=0``);
#: ``pairing_hypotheses_full.json`` by ``benchmarks/record_hypotheses.sh`` (about 60–80
#: CPU-minutes).
RECORDS: dict[str, tuple[str, ...]] = {
    "cifar_mlp_full.json": ("settings", "networks"),
    "cifar_mlp_full_explore.json": ("settings", "networks"),
    "cifar_mlp_laptop_seeds.json": ("settings", "networks"),
    "cifar_mlp_search.json": ("base", "variants", "rows", "summary"),
    "gcnn_barrier_laptop.json": ("budget", "cells"),
    "gcnn_barrier_medium.json": ("budget", "cells"),
    "gcnn_barrier_medium_15.json": ("budget", "cells"),
    "gcnn_barrier_full.json": ("budget", "cells"),
    "pairing_hypotheses_full.json": ("settings", "hypotheses", "picture"),
    "negated_copies_laptop.json": ("settings", "thresholds", "runs", "command"),
    "attention_heads_full.json": ("settings", "runs", "command"),
}


def load_recorded(name: str, missing_ok: bool = False) -> dict[str, Any] | None:
    """The recorded run ``name`` (a plain file name, one of
    :data:`~eqlib.experiments.records.RECORDS`), read from the package's own
    ``eqlib/recorded/`` through ``importlib.resources.files`` and checked by
    :func:`~eqlib.experiments.records.load_json` (strict JSON, non-finite numbers restored,
    the record's keys present). It does not depend on the working folder, so a chapter
    opened anywhere (a single downloaded notebook, Colab, an installed ``eqlib``) reads
    the same records.

    With ``missing_ok=True`` a known record that has not been recorded yet (the GCNN
    barrier's ``gcnn_barrier_medium.json`` and ``gcnn_barrier_full.json``, chapter 11's
    ``pairing_hypotheses_full.json``) gives ``None``
    instead of an error.

    Raises:
        TypeError: ``name`` is not a str.
        ValueError: ``name`` is not one of the known file names (a path, ``..`` or an
            unknown record); the file is not JSON or lacks the record's keys.
        FileNotFoundError: the record is known but not in the package (and not
            ``missing_ok``).

    Chapters: *Parameter symmetries* (book/part1/04_parameter_symmetries), *MLPs: tanh,
    ReLU, GELU* (book/part2/07_mlps), *ReLU CNNs and GCNNs* (book/part3/10_relu_cnns_gcnns),
    *Reproducing the CIFAR-10 experiment* (book/part3/11_cifar_mlp).
    """
    if not isinstance(name, str):
        raise TypeError(f"name must be a record's file name (a str), got {show(name)}")
    check_choice("name", name, tuple(RECORDS))
    missing_ok = check_bool("missing_ok", missing_ok)
    resource = _shipped("recorded", name)
    if not resource.is_file():
        if missing_ok:
            return None
        raise FileNotFoundError(f"the recorded run {name!r} is not in this eqlib "
                                f"({resource}); it is written there by its experiment's "
                                "recording (benchmarks/gpu_check.sh for the full budgets)")
    with importlib.resources.as_file(resource) as path:
        return load_json(path, required=RECORDS[name])


#: the figures recorded with the runs (chapter 11's filter grids, PNG), shipped in
#: ``eqlib/recorded/figures/`` and read by :func:`~eqlib.experiments.records.recorded_figure`
RECORDED_FIGURES: tuple[str, ...] = (
    "filters_gelu-classifier.png", "filters_tanh-autoencoder.png",
    "cifar_mlp_search_filters_0.png", "cifar_mlp_search_filters_1.png",
    "cifar_mlp_search_filters_2.png", "cifar_mlp_search_filters_3.png")

_PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def recorded_figure_png(name: str) -> bytes:
    """The PNG bytes of the recorded figure ``name`` (one of
    :data:`~eqlib.experiments.records.RECORDED_FIGURES`), read from the package's
    ``eqlib/recorded/figures/`` through ``importlib.resources``, wherever the chapter is
    opened.

    Raises:
        TypeError: ``name`` is not a str.
        ValueError: ``name`` is not one of the known figures, or the file is not a PNG.
        FileNotFoundError: the figure is known but not in this eqlib.

    Chapter: *Reproducing the CIFAR-10 experiment* (book/part3/11_cifar_mlp).
    """
    if not isinstance(name, str):
        raise TypeError(f"name must be a recorded figure's file name (a str), got {show(name)}")
    check_choice("name", name, RECORDED_FIGURES)
    resource = _shipped("recorded", "figures", name)
    if not resource.is_file():
        raise FileNotFoundError(f"the recorded figure {name!r} is not in this eqlib ({resource})")
    data = resource.read_bytes()
    if not data.startswith(_PNG_SIGNATURE):
        raise ValueError(f"the recorded figure {name!r} is not a PNG file")
    return data


def recorded_figure(name: str, alt: str):
    """The recorded figure ``name`` as an image with the description ``alt``, for a
    notebook cell to show: an ``IPython.display.HTML`` holding one ``<img>`` (the PNG
    inline, at most the column's width, ``alt`` escaped), so the figure shows in the book,
    in JupyterLab and in a notebook downloaded alone, with no file beside it.

    Raises:
        TypeError: ``alt`` is not a str (and as
            :func:`~eqlib.experiments.records.recorded_figure_png`).
        ValueError: ``alt`` is empty (and as
            :func:`~eqlib.experiments.records.recorded_figure_png`).

    Chapter: *Reproducing the CIFAR-10 experiment*.
    """
    import base64
    import html

    from IPython.display import HTML

    if not isinstance(alt, str):
        raise TypeError(f"alt must be the figure's description (a str), got {show(alt)}")
    if not alt.strip():
        raise ValueError("alt must describe the figure, got an empty string")
    data = base64.b64encode(recorded_figure_png(name)).decode("ascii")
    return HTML(f'<img src="data:image/png;base64,{data}" alt="{html.escape(alt, quote=True)}" '
                f'style="max-width: 100%; height: auto">')


# --------------------------------------------------------------------------- settings in records

def _is_settings(s: Any) -> bool:
    return dataclasses.is_dataclass(s) and not isinstance(s, type)


def _fields(s: Any) -> tuple[str, ...]:
    return tuple(f.name for f in dataclasses.fields(s))


def _listed(value: Any) -> Any:
    if isinstance(value, (tuple, list)):
        return [_listed(v) for v in value]
    if isinstance(value, dict):
        return {k: _listed(v) for k, v in value.items()}
    return value


def settings_dict(s: Any) -> dict[str, Any]:
    """A settings dataclass as a JSON-ready dict (nested settings as nested dicts, tuples
    as lists), as recorded in runs.

    Chapters: Part III, *Experiments*.
    """
    if not _is_settings(s):
        raise TypeError(f"expected a settings dataclass instance, got {type(s).__name__}")
    return _listed(dataclasses.asdict(s))


def legacy_settings(flat: Mapping[str, Any], base: Any) -> dict[str, Any]:
    """Settings recorded flat by older code, as the nested dict of ``base``'s type
    (:func:`settings_dict`), for :func:`check_recorded`.

    Older runs recorded the training knobs (``epochs``, ``lr``, …) beside the others; now
    they live in a nested settings dataclass (``train``, an :class:`eqlib.train.TrainConfig`).
    A flat key goes where ``base`` has it: a field of ``base``, else of one of its nested
    settings (``"lr"`` → ``train.lr``), else under the new name that the settings class's
    ``LEGACY_NAMES`` (``{old key: dotted key}``) gives; a key found nowhere stays at the
    top, so the comparison reports it. Nested fields the flat record does not hold were
    fixed in code when it was made: they are taken from ``base``.

    Chapters: Part III, *Experiments*.
    """
    out = settings_dict(base)
    renamed = dict(getattr(type(base), "LEGACY_NAMES", {}))
    blocks = [n for n in _fields(base) if _is_settings(getattr(base, n))]
    for key, value in flat.items():
        key = renamed.get(key, key)
        block = next((b for b in blocks if key not in out and key in _fields(getattr(base, b))), None)
        if block is not None:
            key = f"{block}.{key}"
        head, dot, rest = key.partition(".")
        if dot and isinstance(out.get(head), dict):
            out[head][rest] = value
        else:
            out[key] = value
    return out


def numbers_differ(a: Any, b: Any, *, rtol: float = 0.0, atol: float = 0.0,
                   path: str = "") -> list[str]:
    """The places where two JSON-like trees differ (numbers within ``rtol``/``atol`` agree;
    NaN equals NaN). An empty list means they agree.

    Chapters: Part III, *Experiments*.
    """
    if isinstance(a, bool) or isinstance(b, bool):
        same = isinstance(a, bool) and isinstance(b, bool) and a == b
        return [] if same else [f"{path or '.'}: {a!r} != {b!r}"]
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        if math.isnan(a) and math.isnan(b):
            return []
        return [] if math.isclose(a, b, rel_tol=rtol, abs_tol=atol) else [
            f"{path or '.'}: {a!r} != {b!r}"]
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        out = [f"{path}.{k}: only in the first" for k in a if k not in b]
        out += [f"{path}.{k}: only in the second" for k in b if k not in a]
        for k in a:
            if k in b:
                out += numbers_differ(a[k], b[k], rtol=rtol, atol=atol, path=f"{path}.{k}")
        return out
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        if len(a) != len(b):
            return [f"{path or '.'}: lengths {len(a)} != {len(b)}"]
        return [d for i, (x, y) in enumerate(zip(a, b))
                for d in numbers_differ(x, y, rtol=rtol, atol=atol, path=f"{path}[{i}]")]
    return [] if a == b else [f"{path or '.'}: {a!r} != {b!r}"]


def _dotted(d: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """A nested settings dict flattened to dotted keys (``{"train.lr": 0.001, ...}``)."""
    out: dict[str, Any] = {}
    for k, v in d.items():
        if isinstance(v, Mapping):
            out.update(_dotted(v, f"{prefix}{k}."))
        else:
            out[f"{prefix}{k}"] = v
    return out


def check_recorded(record: Mapping[str, Any], budget_settings: Any,
                   allowed_changes: Iterable[str] = (), required: Sequence[str] = ()) -> None:
    """Assert that a recorded run was made with ``budget_settings`` (a settings dataclass)
    up to the fields in ``allowed_changes`` (dotted keys for nested settings,
    ``"train.epochs"``), and holds the keys ``required``. Settings recorded flat by older
    code are read with :func:`legacy_settings`; a field the settings class lists in its
    ``ADDED_FIELDS`` (``{field: value}``, added after older records were made) and the
    record lacks is read as that value.

    Every experiment's test calls this on its recorded JSONs, so that changing a budget
    without recording again fails the tests.

    Raises:
        AssertionError: listing the settings that differ (and the missing keys).

    Chapters: Part III, *Experiments*.
    """
    expected = settings_dict(budget_settings)
    got = record.get("settings")
    if not isinstance(got, Mapping):
        raise AssertionError("the record has no 'settings' dict")
    added = getattr(type(budget_settings), "ADDED_FIELDS", {})
    got = {**{k: v for k, v in added.items() if k not in got}, **got}  # made before the field existed
    if any(isinstance(v, dict) and not isinstance(got.get(k), Mapping) for k, v in expected.items()):
        got = legacy_settings(got, budget_settings)  # recorded flat, by older code
    expected, got = _dotted(expected), _dotted(got)
    allowed = set(allowed_changes)
    diffs = [d for k in set(expected) | set(got) if k not in allowed
             for d in numbers_differ(got.get(k, "<missing>"), expected.get(k, "<missing>"),
                                     path=f"settings.{k}")]
    missing = [k for k in required if k not in record]
    if diffs or missing:
        raise AssertionError(
            "the recorded run does not match the current budget "
            f"(record it again): differences {sorted(diffs)}; missing keys {missing}")
