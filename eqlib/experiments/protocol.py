"""One protocol for every experiment: budgets, settings, command line, JSON, recorded runs.

An experiment module declares

- a frozen dataclass of its knobs (one field per setting, the first field ``name``),
- ``BUDGETS``: ``{"laptop": <settings>, "full": <settings>}`` (see :mod:`eqlib.budget`),
- ``PARTS``: the names of the parts its ``run`` can do,

and gets from here

- :func:`settings`: the settings of a budget with typed overrides,
- :func:`parse_setting`: ``"KEY=VALUE"`` typed like the field (``--set``),
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
import contextlib
import dataclasses
import errno
import math
import os
import re
import tempfile
import textwrap
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

from ..budget import budget as select_budget
from ..budget import BUDGETS as BUDGET_NAMES
from ..budget import budget_choices
from . import writable_folder
from .records import NONFINITE_KEY, RECORDS, load_json, load_recorded, strict_json, write_json

__all__ = ["settings", "settings_dict", "parse_setting", "parse_settings", "parse_seeds",
           "build_parser", "parse_args", "write_json", "strict_json", "load_json", "check_recorded",
           "numbers_differ", "output_name", "check_targets", "staged_outputs", "write_outputs",
           "OutputsKept", "text_table", "NONFINITE_KEY", "RECORDS", "load_recorded"]

S = TypeVar("S")


def _check_budgets(budgets: Mapping[str, Any]) -> None:
    if not isinstance(budgets, Mapping) or not budgets:
        raise TypeError(f"budgets must be a non-empty mapping name → settings dataclass, "
                        f"got {type(budgets).__name__}")
    for key, value in budgets.items():
        if not dataclasses.is_dataclass(value) or isinstance(value, type):
            raise TypeError(f"budgets[{key!r}] must be a settings dataclass instance, "
                            f"got {type(value).__name__}")


def _fields(s: Any) -> tuple[str, ...]:
    return tuple(f.name for f in dataclasses.fields(s))


def settings(budgets: Mapping[str, S], budget: str | None = None, **overrides: Any) -> S:
    """The settings of ``budget`` (default ``$EQLIB_BUDGET``, else ``"laptop"``) in
    ``budgets``, with ``overrides`` of its fields.

    Raises:
        ValueError: for an unknown budget or an override that is not a field (or is ``name``).

    Chapters: Part III, *Experiments*.
    """
    _check_budgets(budgets)
    name = select_budget(budget)
    if name not in budgets:
        raise ValueError(f"budget {name!r} is not declared; choose one of {list(budgets)}")
    s = budgets[name]
    names = _fields(s)
    unknown = set(overrides) - set(names)
    if unknown or "name" in overrides:
        bad = sorted(unknown | ({"name"} & set(overrides)))
        raise ValueError(f"unknown settings {bad}; fields are {[n for n in names if n != 'name']}")
    return dataclasses.replace(s, **overrides) if overrides else s


def settings_dict(s: Any) -> dict[str, Any]:
    """A settings dataclass as a JSON-ready dict (tuples become lists), as recorded in runs.

    Chapters: Part III, *Experiments*.
    """
    if not dataclasses.is_dataclass(s) or isinstance(s, type):
        raise TypeError(f"expected a settings dataclass instance, got {type(s).__name__}")
    return {k: (list(v) if isinstance(v, tuple) else v)
            for k, v in dataclasses.asdict(s).items()}


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
    if isinstance(current, tuple) or current is None:
        if current is None and text.lower() == "none":
            return None
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
    names = _fields(base)
    key, sep, text = assignment.partition("=")
    key, text = key.strip(), text.strip()
    if not sep or key not in names or key == "name":
        raise ValueError(f"expected KEY=VALUE with KEY a setting, got {assignment!r}; "
                         f"settings are {[n for n in names if n != 'name']}")
    current = getattr(base, key)
    field_type = next(f.type for f in dataclasses.fields(base) if f.name == key)
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
                 default_out: str = "results", progress: bool = True,
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
                   help="override a setting of the budget, e.g. --set epochs=40 (repeatable)")
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


# --------------------------------------------------------------------------- outputs

def text_table(header: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """A plain-text table (columns padded, a rule under the header), as a command line
    prints at the end of a run; ``None`` cells are shown as ``–``.

    Chapters: Part III, *Experiments*.
    """
    cells = [[str(h) for h in header]] + [["–" if c is None else str(c) for c in r] for r in rows]
    width = max(len(r) for r in cells)
    cells = [r + [""] * (width - len(r)) for r in cells]
    sizes = [max(len(r[i]) for r in cells) for i in range(width)]
    lines = ["  ".join(c.ljust(n) for c, n in zip(r, sizes)).rstrip() for r in cells]
    lines.insert(1, "  ".join("-" * n for n in sizes))
    return "\n".join(lines)


class OutputsKept(OSError, ValueError):
    """The outputs of a run could not all be moved into ``--out``; they are kept in
    ``kept`` (a folder), which the message names. An ``OSError`` (and a ``ValueError``,
    for a target name in the way).

    Chapters: Part III, *Experiments*.
    """

    def __init__(self, errno_: int | None, message: str, kept: Path | None = None):
        super().__init__(errno_ or errno.EIO, message)
        self.kept = kept

    def __str__(self) -> str:
        return str(self.strerror)

def output_name(stem: str, budget: str, seed: int | None = None, suffix: str = ".json") -> str:
    """The file name of an experiment's output: ``<stem>_<budget>_seed<seed><suffix>`` for a
    single-seed run (so runs with different seeds never overwrite each other), and
    ``<stem>_<budget><suffix>`` for outputs that are not one seed's (``seed=None``, e.g. a
    record over several seeds).

    Chapters: Part III, *Experiments*.
    """
    for name, value in (("stem", stem), ("budget", budget), ("suffix", suffix)):
        if not isinstance(value, str):
            raise TypeError(f"{name} must be a str, got {value!r}")
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int) or seed < 0):
        raise ValueError(f"seed must be an integer >= 0 or None, got {seed!r}")
    name = f"{stem}_{budget}" + ("" if seed is None else f"_seed{seed}") + suffix
    if "/" in name or "\\" in name or name.startswith("."):
        raise ValueError(f"output name {name!r} must be a plain file name")
    return name


def check_targets(out: str | os.PathLike, names: Iterable[str], argument: str = "--out") -> list[Path]:
    """Check, before any work, that each of ``names`` can be written in folder ``out``: a
    plain file name whose target is absent or a regular file (a folder, or a link to one,
    there would fail only after all the work).

    Raises:
        ValueError: naming ``argument``, the target and what to do.

    Chapters: Part III, *Experiments*.
    """
    out = Path(out)
    targets = []
    for name in names:
        if not isinstance(name, str) or not name or "/" in name or name in (".", ".."):
            raise ValueError(f"{argument}: output name {name!r} must be a plain file name")
        target = out / name
        if target.is_dir() or (target.exists() and not target.is_file()):
            raise ValueError(f"{argument}: the output {str(target)!r} exists and is not a regular file "
                             "(a folder?); remove or rename it, or choose another --out")
        targets.append(target)
    return targets


@contextlib.contextmanager
def staged_outputs(out: str | os.PathLike, names: Iterable[str] = ()) -> Iterator[Path]:
    """Write an experiment's outputs (figures, JSON) into a fresh temporary folder beside
    ``out`` and move them into ``out`` at once when the block ends without an error.

    ``names`` (the outputs known in advance) are checked first (:func:`check_targets`);
    every file in the staging folder is checked again before any is moved, so a bad
    target fails before anything lands in ``out``. If the block raises, the staged files
    stay in the staging folder and a note on the error names it; if a late check or a
    move fails (``out`` turned read-only, the disk filled), :class:`OutputsKept` names
    it: nothing computed is lost. On success the staging folder is removed.

    Usage::

        with protocol.staged_outputs(args.out, [json_name]) as stage:
            fig.savefig(stage / "figure.png")
            protocol.write_json(stage / json_name, results)

    Chapters: Part III, *Experiments*.
    """
    out = writable_folder(out)
    names = list(names)
    check_targets(out, names)
    stage = None
    for parent in (out.parent, out):  # beside out; inside it if its parent is not writable
        try:
            stage = Path(tempfile.mkdtemp(prefix=f".{out.name}.staging-", dir=parent))
            break
        except OSError:
            continue
    if stage is None:
        raise ValueError(f"--out {str(out)!r}: no temporary folder can be made beside or inside it")
    try:
        yield stage
    except BaseException as exc:
        if any(stage.iterdir()):
            exc.add_note(f"the outputs written so far are kept in {str(stage)!r}")
        else:
            stage.rmdir()
        raise
    staged = sorted(p.name for p in stage.iterdir())
    try:
        check_targets(out, staged)
    except ValueError as exc:
        raise OutputsKept(errno.EEXIST, f"{exc}; the outputs are kept in {str(stage)!r}", stage) from None
    moved = []
    try:
        for name in staged:
            os.replace(stage / name, out / name)
            moved.append(name)
    except OSError as exc:
        raise OutputsKept(exc.errno, f"could not move the outputs into {str(out)!r} ({exc.strerror or exc}); "
                          f"moved {moved}, the rest are kept in {str(stage)!r}", stage) from exc
    stage.rmdir()


def write_outputs(out: str | os.PathLike, record_name: str, record: Any,
                  figures: Mapping[str, Any] = (), dpi: int = 110) -> list[Path]:
    """Write a run's JSON ``record_name`` (:func:`write_json`) and its ``figures``
    (``{file name: matplotlib figure}``, saved as PNG and closed) into ``out`` through
    :func:`staged_outputs`: all are written into a temporary folder beside ``out`` (the
    JSON first), their names checked, then moved in at once.

    Returns:
        The paths in ``out``, the JSON first.

    Raises:
        OutputsKept: when anything fails on the way (a target name in the way, ``out``
            read-only, the disk full): the message names the folder where every output
            written so far is kept (and a rescue copy of the JSON, if one was needed).

    Chapters: Part III, *Experiments*.
    """
    import matplotlib.pyplot as plt

    figures = dict(figures)
    names = [record_name] + list(figures)

    def write_all(folder: Path) -> None:
        write_json(folder / record_name, record)  # the numbers first
        for name, fig in figures.items():
            fig.savefig(folder / name, dpi=dpi, bbox_inches="tight")

    stage: Path | None = None
    try:
        # the names were checked before the work; staged_outputs checks them again before moving
        with staged_outputs(out) as stage:
            write_all(stage)
    except OutputsKept:
        raise
    except (OSError, ValueError) as exc:
        kept = stage if stage is not None and stage.is_dir() and any(stage.iterdir()) else None
        if kept is None:  # nothing staged (no staging folder, or the write failed at once): try again elsewhere
            for parent in (Path(out).parent, None):
                try:
                    folder = Path(tempfile.mkdtemp(prefix="eqlib-rescue-", dir=parent))
                    write_all(folder)
                    kept = folder
                    break
                except (OSError, ValueError):
                    continue
        where = f"the outputs are kept in {str(kept)!r}" if kept else "they could not be kept anywhere"
        raise OutputsKept(getattr(exc, "errno", None),
                          f"could not write the outputs into {str(out)!r} ({exc}); {where}", kept) from exc
    finally:
        for fig in figures.values():
            plt.close(fig)
    return [Path(out) / n for n in names]


def numbers_differ(a: Any, b: Any, rtol: float = 0.0, atol: float = 0.0,
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
                out += numbers_differ(a[k], b[k], rtol, atol, f"{path}.{k}")
        return out
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        if len(a) != len(b):
            return [f"{path or '.'}: lengths {len(a)} != {len(b)}"]
        return [d for i, (x, y) in enumerate(zip(a, b))
                for d in numbers_differ(x, y, rtol, atol, f"{path}[{i}]")]
    return [] if a == b else [f"{path or '.'}: {a!r} != {b!r}"]


def check_recorded(record: Mapping[str, Any], budget_settings: Any,
                   allowed_changes: Iterable[str] = (), required: Sequence[str] = ()) -> None:
    """Assert that a recorded run was made with ``budget_settings`` (a settings dataclass)
    up to the fields in ``allowed_changes``, and holds the keys ``required``.

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
    allowed = set(allowed_changes)
    diffs = [d for k in set(expected) | set(got) if k not in allowed
             for d in numbers_differ(got.get(k, "<missing>"), expected.get(k, "<missing>"),
                                     path=f"settings.{k}")]
    missing = [k for k in required if k not in record]
    if diffs or missing:
        raise AssertionError(
            "the recorded run does not match the current budget "
            f"(record it again): differences {sorted(diffs)}; missing keys {missing}")
