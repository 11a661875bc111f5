"""The outputs of an experiment's command line: file names, checks before any work, staged
writes that lose nothing, and the plain-text table printed at the end. Re-exported by
:mod:`eqlib.experiments.protocol`.

Chapters: Part III, *Experiments* (book/part3).
"""
from __future__ import annotations

import contextlib
import errno
import os
import tempfile
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from . import writable_folder
from .records import write_json

__all__ = ["text_table", "OutputsKept", "output_name", "check_targets", "staged_outputs", "write_outputs"]

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
                  figures: Mapping[str, Any] = (), *, dpi: int = 110) -> list[Path]:
    """Write a run's JSON ``record_name`` (``write_json`` of eqlib.experiments.records) and its ``figures``
    (``{file name: matplotlib figure}``, saved as PNG and closed) into ``out`` through
    :func:`staged_outputs`: all are written into a temporary folder beside ``out`` (the
    JSON first), their names checked, then moved in at once.

    Returns:
        The paths in ``out``, the JSON first.

    Raises:
        OutputsKept: when anything fails on the way (a target name in the way, ``out``
            read-only, the disk full): the message names the folder where every output
            written so far is kept (and a rescue copy of the JSON, if one was needed); its
            ``record`` is ``record``, so a command line can still print its summary.

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
    except OutputsKept as exc:
        exc.record = record
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
        kept_error = OutputsKept(getattr(exc, "errno", None),
                                 f"could not write the outputs into {str(out)!r} ({exc}); {where}", kept)
        kept_error.record = record
        raise kept_error from exc
    finally:
        for fig in figures.values():
            plt.close(fig)
    return [Path(out) / n for n in names]


