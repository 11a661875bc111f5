"""One protocol for every experiment: budgets, settings, command line, JSON, recorded runs.

An experiment module declares

- a frozen dataclass of its knobs (one field per setting), nesting the
  :class:`eqlib.train.TrainConfig` its networks train with (field ``train``),
- ``BUDGETS``: ``{"laptop": <settings>, "full": <settings>}`` (see :mod:`eqlib.budget`),
- ``PARTS``: the names of the parts its ``run`` can do,
- ``EXPERIMENT``: an :class:`Experiment` (``settings(budget, **overrides)``,
  ``run(settings, out, options) -> dict`` and what the command line needs), its ``main``
  one call of :func:`main`,

and gets from here

- :func:`settings`: the settings of a budget with typed overrides (dotted keys reach nested
  settings: ``train.lr``; :func:`replace_settings`, :func:`setting_keys`),
- :func:`parse_setting`: ``"KEY=VALUE"`` typed like the field (``--set train.epochs=2``),
- :func:`build_parser` / :func:`parse_args`: one command line with the same flags for
  every experiment (``--budget``, ``--device``, ``--seed``/``--seeds``, ``--set``,
  ``--parts``, ``--out`` (checked writable before any work), ``--progress/--no-progress``,
  ``--no-download``, ``--data``),
- :func:`write_json`: the JSON of numbers, written atomically (with :func:`strict_json` and
  :func:`load_json` it lives in :mod:`eqlib.experiments.records`),
- :func:`write_outputs`: the JSON and the figures of a run, staged beside ``--out`` and
  moved in at once (:func:`staged_outputs`; nothing is lost when the move fails),
- :func:`text_table`: the plain-text summary table a command line prints at the end,
- :func:`load_json` and :func:`check_recorded`: the recorded-run check any experiment's
  test calls (the recorded run was made with the current budget, up to named changes);
  :func:`load_recorded` reads a recorded run shipped in the package (``eqlib/recorded/``).

Chapters: Part III, *Experiments* (book/part3).
"""
from __future__ import annotations

import argparse
import dataclasses
import re
import textwrap
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol, TypeVar, runtime_checkable

from ..budget import budget as select_budget
from ..budget import BUDGETS as BUDGET_NAMES
from ..budget import budget_choices
from . import writable_folder
from .outputs import OutputsKept, check_targets, output_name, staged_outputs, text_table, write_outputs
from .records import (NONFINITE_KEY, RECORDED_FIGURES, RECORDS, _fields, _is_settings, check_recorded,
                      legacy_settings, load_json, load_recorded, numbers_differ, recorded_figure,
                      recorded_figure_png, settings_dict, strict_json, write_json)

__all__ = ["Experiment", "ExperimentCLI", "RunOptions", "main", "setting_keys", "replace_settings", "check_nested",
           "legacy_settings", "settings", "settings_dict", "parse_setting", "parse_settings", "parse_seeds",
           "build_parser", "parse_args", "write_json", "strict_json", "load_json", "check_recorded",
           "numbers_differ", "output_name", "check_targets", "staged_outputs", "write_outputs",
           "OutputsKept", "text_table", "NONFINITE_KEY", "RECORDS", "load_recorded",
           "RECORDED_FIGURES", "recorded_figure", "recorded_figure_png"]

S = TypeVar("S")


def _check_budgets(budgets: Mapping[str, Any]) -> None:
    if not isinstance(budgets, Mapping) or not budgets:
        raise TypeError(f"budgets must be a non-empty mapping name → settings dataclass, "
                        f"got {type(budgets).__name__}")
    for key, value in budgets.items():
        if not _is_settings(value):
            raise TypeError(f"budgets[{key!r}] must be a settings dataclass instance, "
                            f"got {type(value).__name__}")


def check_nested(s: Any, field: str, kind: type) -> None:
    """Raise a TypeError, naming the settings type and ``field``, unless ``s.<field>`` is a
    ``kind`` (a settings dataclass's check of the settings it nests, e.g. its ``TrainConfig``).

    Chapters: Part III, *Experiments*.
    """
    value = getattr(s, field)
    if not isinstance(value, kind):
        raise TypeError(f"{type(s).__name__}.{field} must be a {kind.__name__}, got {type(value).__name__}")


def setting_keys(s: Any) -> list[str]:
    """The keys ``--set`` and :func:`settings` accept for the settings ``s``: its fields
    (but ``name``), and ``FIELD.SUB`` for every field of a nested settings dataclass
    (``train.lr`` for the nested :class:`eqlib.train.TrainConfig`).

    Chapters: Part III, *Experiments*.
    """
    keys = []
    for name in _fields(s):
        value = getattr(s, name)
        if _is_settings(value):
            keys += [f"{name}.{k}" for k in setting_keys(value)]
        elif name != "name":
            keys.append(name)
    return keys


def _owner(s: Any, key: str) -> tuple[Any, str]:
    """The (nested) settings dataclass that holds the dotted ``key``, and the field's name there."""
    head, dot, rest = key.partition(".")
    if not _is_settings(s) or head not in _fields(s) or (head == "name" and not dot):
        raise KeyError(key)
    if not dot:
        if _is_settings(getattr(s, head)):
            raise KeyError(key)  # a nested block is changed field by field
        return s, head
    return _owner(getattr(s, head), rest)


def replace_settings(s: S, changes: Mapping[str, Any]) -> S:
    """``s`` with ``changes`` (``{key: value}``, keys of :func:`setting_keys`: ``"epochs"``,
    or dotted into a nested settings dataclass, ``"train.lr"``) applied; each level is
    rebuilt with ``dataclasses.replace``, so every dataclass checks its new values.

    Raises:
        ValueError: for a key that is not a setting, naming the valid ones.

    Chapters: Part III, *Experiments*.
    """
    if not _is_settings(s):
        raise TypeError(f"expected a settings dataclass instance, got {type(s).__name__}")
    unknown = []
    for key in changes:
        try:
            _owner(s, str(key))
        except KeyError:
            unknown.append(key)
    if unknown:
        raise ValueError(f"unknown settings {sorted(map(str, unknown))}; settings are {setting_keys(s)}")
    direct = {k: v for k, v in changes.items() if "." not in k}
    nested: dict[str, dict[str, Any]] = {}
    for key, value in changes.items():
        if "." in key:
            head, _, rest = key.partition(".")
            nested.setdefault(head, {})[rest] = value
    direct.update({head: replace_settings(getattr(s, head), sub) for head, sub in nested.items()})
    return dataclasses.replace(s, **direct) if direct else s


def settings(budgets: Mapping[str, S], budget: str | None = None, **overrides: Any) -> S:
    """The settings of ``budget`` (default ``$EQLIB_BUDGET``, else ``"laptop"``) in
    ``budgets``, with ``overrides`` of its fields; a nested field by its dotted key
    (``settings(BUDGETS, "laptop", **{"train.epochs": 2})``, :func:`replace_settings`).

    Raises:
        ValueError: for an unknown budget or an override that is not a setting (or is ``name``).

    Chapters: Part III, *Experiments*.
    """
    _check_budgets(budgets)
    name = select_budget(budget)
    if name not in budgets:
        raise ValueError(f"budget {name!r} is not declared; choose one of {list(budgets)}")
    return replace_settings(budgets[name], overrides)


_KINDS = {"bool": bool, "int": int, "float": float, "str": str}


def _element_kinds(current: Any, field_type: Any) -> tuple[type, ...]:
    """The types a tuple setting's elements may take: those of the default's elements,
    else those its annotation names (``tuple[int, ...]``), else int or str."""
    if current:
        kinds = {type(v) for v in current}
    else:
        kinds = {_KINDS[w] for w in re.findall(r"\b(bool|int|float|str)\b", str(field_type))}
    return tuple(k for k in (bool, int, float, str) if k in kinds) or (int, str)


def _element(text: str, kinds: tuple[type, ...], tokens: frozenset[str]) -> Any:
    """One element of a tuple setting: the first of ``kinds`` (bool, int, float, str in
    that order) that reads ``text``; a string in a tuple that also holds numbers must be
    one of the default's ``tokens`` (e.g. VGG's ``"M"``)."""
    low = text.lower()
    if bool in kinds and low in ("true", "false"):
        return low == "true"
    if int in kinds and re.fullmatch(r"[+-]?\d+", text):
        return int(text)
    if float in kinds:
        try:
            return float(text)
        except ValueError:
            pass
    if str in kinds and (not tokens or text in tokens):
        return text
    names = "/".join(k.__name__ for k in kinds)
    hint = f" or one of {sorted(tokens)}" if str in kinds and tokens else ""
    raise ValueError(f"element {text!r} is not a {names}{hint}")


def _typed(text: str, current: Any, key: str, field_type: Any) -> Any:
    if isinstance(current, bool):
        low = text.lower()
        if low not in ("true", "false", "1", "0"):
            raise ValueError("expected true/false or 1/0")
        return low in ("true", "1")
    if current is None and text.lower() == "none":
        return None
    if current is None and "tuple" not in str(field_type):  # an optional number: ``float | None``
        kinds = _element_kinds((), field_type)
        return _element(text, tuple(k for k in kinds if k is not str) or kinds, frozenset())
    if isinstance(current, tuple) or current is None:
        kinds = _element_kinds(current, field_type)
        # strings beside numbers are tokens: only those the default uses
        mixed = str in kinds and len(kinds) > 1 and bool(current)
        tokens = frozenset(v for v in current if isinstance(v, str)) if mixed else frozenset()
        if not text:
            return ()
        parts = [v.strip() for v in text.split(",")]
        if "" in parts:
            raise ValueError("empty element between commas")
        return tuple(_element(v, kinds, tokens) for v in parts)
    if isinstance(current, int) and not re.fullmatch(r"\s*[+-]?\d+\s*", text):
        raise ValueError("expected an integer")
    return type(current)(text)


def parse_setting(assignment: str, base: Any) -> tuple[str, Any]:
    """``"key=value"`` → ``(key, value)`` typed like the field of the settings ``base``:
    int, float, str, ``true``/``false`` (or 1/0) for booleans, comma-separated tuples
    (``hidden=1024,512,512``), ``none`` for an optional tuple. Each tuple element is typed
    from the default's elements (else the field's annotation, else int-or-str): an int
    where the default holds ints and the text is an integer, a float where it holds
    floats, a string only where it holds strings; in a tuple mixing numbers and strings
    (``config=64,M,128,M``) the strings must be ones the default uses.

    Raises:
        ValueError: naming the assignment when it is not ``KEY=VALUE`` with ``KEY`` a
            field (other than ``name``), or when the value cannot be read as the field's type.

    Chapters: Part III, *Experiments*.
    """
    if not isinstance(assignment, str):
        raise TypeError(f"a setting must be a 'KEY=VALUE' string, got {assignment!r}")
    key, sep, text = assignment.partition("=")
    key, text = key.strip(), text.strip()
    try:
        if not sep:
            raise KeyError(key)
        owner, field = _owner(base, key)
    except KeyError:
        raise ValueError(f"expected KEY=VALUE with KEY a setting, got {assignment!r}; "
                         f"settings are {setting_keys(base)}") from None
    current = getattr(owner, field)
    field_type = next(f.type for f in dataclasses.fields(owner) if f.name == field)
    try:
        return key, _typed(text, current, key, field_type)
    except ValueError as e:
        raise ValueError(f"cannot read {text!r} as the {type(current).__name__} "
                         f"setting {key!r} (default {current!r}): {e}") from None


def parse_settings(assignments: Iterable[str], base: Any) -> dict[str, Any]:
    """Several ``--set`` assignments → overrides (later ones win).

    Chapters: Part III, *Experiments*.
    """
    return dict(parse_setting(a, base) for a in assignments)


#: the largest seed the command line takes (seeds feed 64-bit generators, with small offsets)
MAX_SEED = 2**63 - 1
#: the most seeds one command line runs
MAX_SEEDS = 1000


def _seed_int(text: str) -> int:
    text = text.strip()
    if not re.fullmatch(r"[+-]?\d{1,20}", text):  # no 10**100-digit numbers, no "1e3", no "٣"
        raise ValueError
    return int(text)


def parse_seeds(text: str) -> tuple[int, ...]:
    """``"0,1,2"`` or ``"0-4"`` (inclusive) or a mix → distinct seeds in order.

    Raises:
        ValueError: for an empty list, a non-integer, a negative seed, a seed above
            ``MAX_SEED``, more than ``MAX_SEEDS`` seeds (checked before a range is
            expanded) or a repeated seed.

    Chapters: Part III, *Experiments*.
    """
    seeds: list[int] = []
    if len(str(text)) > 10_000:
        raise ValueError(f"--seeds: the list is {len(str(text))} characters long; give at most "
                         f"{MAX_SEEDS} seeds")
    for part in str(text).split(","):
        part = part.strip()
        if not part:
            continue
        try:
            if "-" in part[1:]:
                lo, hi = part.split("-", 1)
                lo_i, hi_i = _seed_int(lo), _seed_int(hi)
                if hi_i < lo_i:
                    raise ValueError
                if hi_i - lo_i + 1 + len(seeds) > MAX_SEEDS:  # checked before the list is built
                    raise OverflowError
                seeds.extend(range(lo_i, hi_i + 1))
            else:
                seeds.append(_seed_int(part))
        except OverflowError:
            raise ValueError(f"--seeds: {part!r} gives more than {MAX_SEEDS} seeds (in {text!r:.80})") from None
        except ValueError:
            raise ValueError(f"--seeds: cannot read {part!r} as a seed or a range a-b "
                             f"(in {text!r:.80})") from None
        if len(seeds) > MAX_SEEDS:
            raise ValueError(f"--seeds: more than {MAX_SEEDS} seeds in {text!r:.80}")
    if any(seed > MAX_SEED for seed in seeds):
        raise ValueError(f"--seeds: seeds must be <= {MAX_SEED} (2**63 - 1), got {max(seeds)}")
    if not seeds:
        raise ValueError(f"--seeds: no seed in {text!r}; give e.g. 0,1,2 or 0-2")
    if min(seeds) < 0:
        raise ValueError(f"--seeds: seeds must be ≥ 0, got {seeds}")
    if len(set(seeds)) != len(seeds):
        raise ValueError(f"--seeds: repeated seed in {seeds}")
    return tuple(seeds)


#: what the command line's help says of each budget (an experiment adds its measured times)
_BUDGET_WORDS = {"laptop": "laptop (the default: minutes on 2 CPU cores)",
                 "medium": "medium (a CPU record over hours, resumable)",
                 "full": "full (the published scale, meant for a GPU)"}


def _budget_help(names: Sequence[str]) -> str:
    """The ``--budget`` help for the budgets ``names``."""
    words = [_BUDGET_WORDS[n] for n in names]
    listed = words[0] if len(words) == 1 else ", ".join(words[:-1]) + " or " + words[-1]
    return (f"compute budget: {listed}; default $EQLIB_BUDGET, else laptop. The old "
            "name ci (used by older scripts and CI) is still accepted and means laptop.")


#: the ``--budget`` help of an experiment with the budgets laptop and full
BUDGET_HELP = _budget_help(("laptop", "full"))


def _budget_type(names: Sequence[str]) -> Callable[[str], str]:
    """``--budget``'s type: one of ``names`` (or an old alias, still accepted but not listed)."""
    accepted = set(names) | (set(budget_choices()) - set(BUDGET_NAMES))

    def budget_name(text: str) -> str:
        value = str(text).strip().lower()
        if value not in accepted:
            raise argparse.ArgumentTypeError(f"unknown budget {text!r}; choose one of {', '.join(names)}")
        return value
    return budget_name


def build_parser(prog: str, description: str, parts: Sequence[str] = (),
                 *, default_out: str = "results", progress: bool = True,
                 default_parts: Sequence[str] | None = None,
                 epilog: str | None = None,
                 budgets: Sequence[str] = ("laptop", "full")) -> argparse.ArgumentParser:
    """The command line every experiment shares.

    Flags: ``--budget``, ``--device``, ``--seed N`` or ``--seeds 0,1,2``, ``--set KEY=VALUE``
    (repeatable), ``--parts a,b`` (when ``parts`` is non-empty), ``--out``, ``--data``,
    ``--progress/--no-progress`` (default ``progress``), ``--no-download``. Read the
    arguments with :func:`parse_args`, which checks ``--out`` before anything else.
    ``default_parts`` (default: all ``parts``) are run when ``--parts`` is not given.
    ``--budget`` lists and accepts ``budgets`` (the names the experiment declares, of
    ``eqlib.budget.BUDGETS``; default ``laptop`` and ``full``); the old name ``ci`` is
    accepted (it means ``laptop``) and said so in the help, not listed. ``epilog`` (the experiment's budgets
    and measured run times, its outputs) is printed after the flags as written.

    Chapters: Part III, *Experiments*.
    """
    description = "\n\n".join(textwrap.fill(par, 79) for par in str(description).split("\n\n"))
    p = argparse.ArgumentParser(prog=prog, description=description, epilog=epilog,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    budgets = tuple(budgets)
    unknown = [b for b in budgets if b not in BUDGET_NAMES]
    if not budgets or unknown:
        raise ValueError(f"budgets must be names of eqlib.budget.BUDGETS {list(BUDGET_NAMES)}, got {budgets}")
    budgets = tuple(b for b in BUDGET_NAMES if b in budgets)  # cheapest first, as eqlib.budget lists them
    p.add_argument("--budget", type=_budget_type(budgets), default=None, metavar="{" + ",".join(budgets) + "}",
                   help=_budget_help(budgets))
    p.add_argument("--device", default=None,
                   help="cpu or cuda (default $EQLIB_DEVICE, else cuda when available)")
    p.add_argument("--out", default=default_out,
                   help="folder for the JSON of numbers and the figures (checked first)")
    seeds = p.add_mutually_exclusive_group()
    seeds.add_argument("--seed", type=int, default=None, help="one seed (default 0)")
    seeds.add_argument("--seeds", default=None, metavar="LIST",
                       help="several seeds, e.g. 0,1,2 or 0-2 (each trains its own networks)")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                   help="override a setting of the budget, e.g. --set train.epochs=40 (dotted keys reach the "
                        "nested training settings; repeatable)")
    if parts:
        p.add_argument("--parts", default=",".join(parts if default_parts is None
                                                   else default_parts),
                       help=f"comma-separated subset of {','.join(parts)}")
    p.add_argument("--data", default=None, help="CIFAR-10 folder or archive (default $EQLIB_DATA)")
    p.add_argument("--progress", action=argparse.BooleanOptionalAction, default=progress,
                   help="show training progress")
    p.add_argument("--no-download", action="store_true",
                   help="never download CIFAR-10 (default: download it into the cache when it "
                        "is not found and $EQLIB_DATA is unset)")
    p.set_defaults(_protocol_parts=tuple(parts))
    return p


def parse_args(parser: argparse.ArgumentParser, argv: Sequence[str] | None,
               budgets: Mapping[str, Any],
               outputs: Callable[[argparse.Namespace], Iterable[str]] | None = None) -> argparse.Namespace:
    """Parse and check the shared flags, ``--out`` first (a bad folder fails before any work).

    The namespace gains ``out`` (a :class:`~pathlib.Path`), ``budget`` (the resolved name),
    ``settings`` (the budget's settings with the ``--set`` overrides), ``overrides``,
    ``seeds`` (a tuple; ``seed`` is its first), ``parts`` (a tuple) and ``download``
    (False with ``--no-download``, else None). The outputs' names (``outputs(args)``,
    default: the protocol's JSON names of ``python -m eqlib.experiments.<stem>``, see
    :func:`output_name`) are checked with :func:`check_targets`, so a folder where a file
    goes fails before any work. Errors exit through ``parser.error``.

    Chapters: Part III, *Experiments*.
    """
    args = parser.parse_args(argv)
    try:  # before any work: a bad --out must not fail after the training
        args.out = writable_folder(args.out)
    except ValueError as exc:
        parser.error(str(exc))
    try:
        args.budget = select_budget(args.budget)
        base = settings(budgets, args.budget)
        args.overrides = parse_settings(args.set, base)
        args.settings = settings(budgets, args.budget, **args.overrides)
        args.seeds = parse_seeds(args.seeds) if args.seeds is not None else (
            (args.seed if args.seed is not None else 0),)
    except ValueError as exc:
        parser.error(str(exc))
    if not 0 <= args.seeds[0] <= MAX_SEED:
        parser.error(f"--seed must be in 0..{MAX_SEED}, got {args.seeds[0]}")
    args.seed = args.seeds[0]
    known = args._protocol_parts
    if known:
        args.parts = tuple(x.strip() for x in args.parts.split(",") if x.strip())
        unknown = set(args.parts) - set(known)
        if unknown or not args.parts:
            parser.error(f"--parts: unknown or empty {sorted(unknown)}; choose from {','.join(known)}")
    else:
        args.parts = ()
    args.download = False if args.no_download else None
    try:  # the outputs' names, before any work: a folder in the way fails now, not at the end
        names = outputs(args) if outputs is not None else _default_outputs(parser.prog, args)
        check_targets(args.out, names)
    except ValueError as exc:
        parser.error(str(exc))
    return args


def _default_outputs(prog: str, args: argparse.Namespace) -> list[str]:
    """The JSON names an experiment ``python -m eqlib.experiments.<stem>`` writes by the
    protocol's naming: ``<stem>_<budget>.json``, with one seed also
    ``<stem>_<budget>_seed<seed>.json``, with several ``<stem>_<budget>_seeds.json``."""
    stem = prog.split()[-1].rsplit(".", 1)[-1]
    if not re.fullmatch(r"[A-Za-z0-9_]+", stem):
        return []
    names = [output_name(stem, args.budget)]
    if len(args.seeds) > 1:
        names.append(output_name(stem, args.budget, suffix="_seeds.json"))
    else:
        names.append(output_name(stem, args.budget, args.seed))
    return names


# --------------------------------------------------------------------------- one command line


@dataclasses.dataclass(frozen=True)
class RunOptions:
    """What the command line hands an experiment's ``run`` besides its settings: ``budget``
    (the name, for output names), ``device``,
    ``seeds`` (``seeds_given``: whether ``--seed``/``--seeds`` was given), ``parts``,
    ``data`` (the CIFAR-10 folder), ``download``, ``progress``, ``overrides`` (the ``--set``
    assignments as given), ``command`` (the command line, to record) and ``flags`` (the
    experiment's own flags, by destination).

    Chapters: Part III, *Experiments*.
    """

    budget: str = "laptop"
    device: str | None = None
    seeds: tuple[int, ...] = (0,)
    seeds_given: bool = False
    parts: tuple[str, ...] = ()
    data: str | None = None
    download: bool | None = None
    progress: bool = False
    overrides: tuple[str, ...] = ()
    command: str = ""
    flags: Mapping[str, Any] = dataclasses.field(default_factory=dict)


@runtime_checkable
class Experiment(Protocol):
    """What :func:`main` needs of an experiment: its command line's ``prog``,
    ``description``, ``epilog``, ``parts`` (``default_parts``: those run without
    ``--parts``; None: all), ``budgets`` (name → settings), ``progress`` (the default of
    ``--progress``) and ``flags`` (its own flags: ``{"--flag": argparse keywords}``);
    ``settings(budget, **overrides)``; ``outputs(settings, options)``, the file names a run
    writes (checked before any work; a ValueError there is a usage error);
    ``run(settings, out, options) -> dict``, which does the work and writes the outputs
    into ``out`` (:func:`write_outputs`); and ``summary(record)``, the lines printed at the end.

    Chapters: Part III, *Experiments*.
    """

    prog: str
    description: str
    epilog: str | None
    parts: tuple[str, ...]
    default_parts: tuple[str, ...] | None
    budgets: Mapping[str, Any]
    progress: bool
    flags: Mapping[str, Mapping[str, Any]]

    def settings(self, budget: str | None = None, **overrides: Any) -> Any: ...

    def outputs(self, settings: Any, options: RunOptions) -> list[str]: ...

    def run(self, settings: Any, out: Path, options: RunOptions) -> dict[str, Any]: ...

    def summary(self, record: Mapping[str, Any]) -> str: ...


@dataclasses.dataclass(frozen=True)
class ExperimentCLI:
    """An :class:`Experiment` assembled from an experiment module's functions (see there
    for the fields).

    Chapters: Part III, *Experiments*.
    """

    prog: str
    description: str
    budgets: Mapping[str, Any]
    settings: Callable[..., Any]
    outputs: Callable[[Any, RunOptions], list[str]]
    run: Callable[[Any, Path, RunOptions], dict[str, Any]]
    summary: Callable[[Mapping[str, Any]], str]
    epilog: str | None = None
    parts: tuple[str, ...] = ()
    default_parts: tuple[str, ...] | None = None
    progress: bool = True
    flags: Mapping[str, Mapping[str, Any]] = dataclasses.field(default_factory=dict)


def main(experiment: Experiment, argv: Sequence[str] | None = None) -> dict[str, Any]:
    """The one command line of every experiment: build the parser (:func:`build_parser`
    with the experiment's flags), read ``--budget``, ``--set`` (dotted keys reach nested
    settings: ``--set train.lr=0.01``), ``--seed``/``--seeds``, ``--parts``, ``--out`` and
    the rest (:func:`parse_args`: a bad ``--out``, setting or output name fails before any
    work), run ``experiment.run(settings, out, options)``, print ``experiment.summary`` of
    the record and the outputs written. When the outputs cannot be moved into ``--out``
    (:class:`OutputsKept`), prints the summary (when the error carries the ``record``) and
    where they are kept, and exits with status 1.

    Chapters: Part III, *Experiments*.
    """
    import shlex
    import sys

    if not isinstance(experiment, Experiment):
        raise TypeError(f"experiment must provide the Experiment protocol, got {type(experiment).__name__}")
    argv_list = [str(a) for a in (sys.argv[1:] if argv is None else argv)]
    parser = build_parser(experiment.prog, experiment.description, experiment.parts,
                          progress=experiment.progress, default_parts=experiment.default_parts,
                          epilog=experiment.epilog, budgets=tuple(experiment.budgets))
    flag_names = [parser.add_argument(flag, **keywords).dest for flag, keywords in dict(experiment.flags).items()]
    seeds_given = any(a.split("=")[0] in ("--seed", "--seeds") for a in argv_list)
    chosen: dict[str, Any] = {}

    def outputs(args: argparse.Namespace) -> list[str]:  # checked before any work
        chosen["options"] = RunOptions(
            budget=args.budget, device=args.device, seeds=tuple(args.seeds), seeds_given=seeds_given,
            parts=tuple(args.parts),
            data=args.data, download=args.download, progress=args.progress, overrides=tuple(args.set),
            command=f"{experiment.prog} {shlex.join(argv_list)}".strip(),
            flags={name: getattr(args, name) for name in flag_names})
        chosen["settings"] = experiment.settings(args.budget, **args.overrides)
        chosen["names"] = list(experiment.outputs(chosen["settings"], chosen["options"]))
        return chosen["names"]

    args = parse_args(parser, argv_list, experiment.budgets, outputs=outputs)
    import matplotlib  # a command line draws into files only; a library call never switches backends

    matplotlib.use("Agg")
    try:
        record = experiment.run(chosen["settings"], args.out, chosen["options"])
    except OutputsKept as exc:
        if getattr(exc, "record", None) is not None:
            print(experiment.summary(exc.record))
        raise SystemExit(f"error: {exc}") from None
    print(experiment.summary(record))
    print(f"wrote {', '.join(chosen['names'])} (and the figures) into {args.out}")
    return record
