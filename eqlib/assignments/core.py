"""Grading one notebook: the reference process, the sandboxed run, the scores.

Used alike by the nbgrader preprocessor (``eqlib.assignments.preprocessor``) and the
teacher's front end (``eqlib.assignments``), so both give the same scores.

Chapter: every chapter's *Exercises* section (grading; book/teaching).
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import secrets
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from ..exercises.variants import Variant
from . import plan as plans
from . import sandbox, standin

MAX_DEATHS = 3
KEYS = Path(".eqlib") / "keys.json"
_HEX32 = re.compile(r"[0-9a-f]{32}")


def course_keys(course: Path, create: bool = False) -> dict | None:
    """The course's two keys, ``{"course": …, "inputs": …}`` (``<course>/.eqlib/keys.json``).

    ``create=True`` (``setup``) draws them once (``secrets.token_hex(16)`` each; the file
    0600, its folder 0700) and reuses them ever after. Without the file: None (a course set
    up before variants: everyone gets the book's numbers).

    Raises:
        ValueError: if the file exists but is not two 32-digit hex keys.

    Chapter: book/teaching (variants).
    """
    path = Path(course) / KEYS
    if create and not path.exists():
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        os.chmod(path.parent, 0o700)
        doc = {"course": secrets.token_hex(16), "inputs": secrets.token_hex(16)}
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as f:
            json.dump(doc, f)
    if not path.exists():
        return None
    try:
        doc = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise ValueError(f"{path} is not a keys file ({type(exc).__name__}: {exc}); restore it from a "
                         "backup (new keys would give every student new numbers)") from None
    if type(doc) is not dict or set(doc) != {"course", "inputs"} or \
            not all(type(v) is str and _HEX32.fullmatch(v) for v in doc.values()):
        raise ValueError(f"{path} must hold {{\"course\": <32 hex digits>, \"inputs\": <32 hex digits>}}; "
                         "restore it from a backup (new keys would give every student new numbers)")
    return doc


def student_variant(student: str, keys: dict | None) -> Variant | None:
    """The variant student ``student`` is graded under (None: no keys, the book's numbers).

    Raises:
        ValueError: if ``student`` (a submission folder's name) is not a valid student id.

    Chapter: book/teaching (variants).
    """
    if keys is None:
        return None
    try:
        return Variant(student, keys["course"], keys["inputs"])
    except ValueError as exc:
        raise ValueError(f"the student id {student!r} (its folder's name) is not valid: {exc}") from None


def _call_dict(gid: str, call: plans.Call) -> dict:
    return {"gid": gid, "chapter": call.chapter, "function": call.function, "keys": call.keys(),
            "exprs": {k: call.expr(k) for k in call.keys()}, "answer_args": call.answer_args}


class Reference:
    """The instructor's notebook run once in a process of the grader's own; it scores records.

    It imports nothing from ``__pycache__`` folders (``-X pycache_prefix`` points Python at a
    fresh folder), so a planted ``.pyc`` cannot change a checker.
    """

    def __init__(self, source: Path, cell_timeout: float = 600, workdir: Path | None = None):
        self.source = Path(source).resolve()
        self.nb = plans.read(self.source)
        self.checks = plans.checks(self.nb)
        self.points = {c.grade_id: c.points for c in self.checks}
        self.work = Path(workdir or tempfile.mkdtemp(prefix="eqlib-reference-"))
        self.work.mkdir(parents=True, exist_ok=True)
        for item in self.source.parent.iterdir():  # the notebook's folder: files it reads
            if item.suffix != ".ipynb" and not item.name.startswith("."):
                dest = self.work / item.name
                if item.is_dir() and not dest.exists():
                    shutil.copytree(item, dest)
                elif item.is_file():
                    shutil.copy2(item, dest)
        steps = []
        for i, cell in enumerate(self.nb.cells):
            if cell.cell_type == "code":
                if plans.is_check(cell) and plans.nbg(cell).get("grade_id") in self.points:
                    steps.append({"record": plans.nbg(cell)["grade_id"], "cell": i})
                else:
                    steps.append({"code": cell.source, "cell": i})
        doc = {"steps": steps, "cell_timeout": cell_timeout,
               "checks": {c.grade_id: [_call_dict(c.grade_id, k) for k in c.calls] for c in self.checks}}
        (self.work / "plan.json").write_text(json.dumps(doc))
        env = {k: v for k, v in os.environ.items() if k not in ("EQLIB_STUDENT", "EQLIB_COURSE", "JUPYTERHUB_USER")}
        env.update({"MPLBACKEND": "Agg", "PYTHONPATH": str(sandbox.PACKAGE_ROOT)})
        self.proc = subprocess.Popen([sys.executable, "-X", f"pycache_prefix={self.work / 'pycache'}", "-m",
                                      "eqlib.assignments.runner", "reference", str(self.work)],
                                     cwd=self.work, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env)
        self.lock = threading.Lock()
        line = self.proc.stdout.readline()
        if not line:
            log = (self.work / "reference.log").read_text()[-5000:] if (self.work / "reference.log").exists() else ""
            raise RuntimeError(f"the reference run of {self.source.name} failed:\n{log}")
        self.report = json.loads((self.work / "reference.json").read_text())
        self.id = hashlib.sha256(self.source.read_bytes()).hexdigest()[:16]

    def problems(self) -> list[str]:
        return [f"{gid}: {r['message'].strip()}" for gid, r in self.report.items() if not r["ok"]]

    def records_spec(self) -> dict:
        return {gid: r["items"] for gid, r in self.report.items()}

    def _ask(self, request: dict, what: str) -> dict:
        with self.lock:
            self.proc.stdin.write(json.dumps(request) + "\n")
            self.proc.stdin.flush()
            line = self.proc.stdout.readline()
        answer = json.loads(line) if line else {"error": "the reference process died"}
        if "error" in answer:
            raise RuntimeError(f"{what} failed: {answer['error']}")
        return answer

    def has_function_answers(self) -> bool:
        return any(item.get("mode") == "call" for items in self.records_spec().values() for item in items)

    def probe(self, folder: Path, variant: Variant | None) -> list[str]:
        """Write the inputs of every function answer under ``variant`` into ``folder``."""
        request = {"probe": str(folder), "variant": asdict(variant) if variant else None}
        return self._ask(request, "recording the inputs")["problems"]

    def score(self, records: Path, variant: Variant | None = None) -> dict:
        request = {"records": str(records), "variant": asdict(variant) if variant else None}
        return self._ask(request, "scoring")["scores"]

    def close(self):
        if self.proc.poll() is None:
            self.proc.stdin.close()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
        shutil.rmtree(self.work, ignore_errors=True)


_REFERENCES: dict[tuple, Reference] = {}
_REF_LOCK = threading.Lock()
_REF_LOCKS: dict[tuple, threading.Lock] = {}


def reference_for(source: Path, cell_timeout: float = 600) -> Reference:
    """The (cached, per process) reference of an instructor notebook, by content: the same
    chapter in two assignments of a course runs once."""
    source = Path(source).resolve()
    files = sorted(p for p in source.parent.iterdir() if p.is_file() and p.suffix != ".ipynb")
    key = (source.name, hashlib.sha256(source.read_bytes()).hexdigest(),
           tuple((p.name, hashlib.sha256(p.read_bytes()).hexdigest()) for p in files))
    with _REF_LOCK:  # one lock per notebook: two chapters' references start at once
        lock = _REF_LOCKS.setdefault(key, threading.Lock())
    with lock:
        if key not in _REFERENCES:
            _REFERENCES[key] = Reference(source, cell_timeout)
        return _REFERENCES[key]


def close_references() -> None:
    with _REF_LOCK:
        for ref in _REFERENCES.values():
            ref.close()
        _REFERENCES.clear()


@dataclass
class NotebookResult:
    scores: dict  # grade_id -> {"ok", "message"}
    outputs: list  # per step: {"stdout", "stderr", "error"?} or None (not run)
    steps: list
    notes: list = field(default_factory=list)  # what the teacher should know (deaths, time limits)
    stderr: str = ""
    seconds: float = 0.0


def program_key(steps: list, reference: Reference, variant: Variant | None = None) -> str:
    """The result cache's key: the program, the instructor's notebook and the variant."""
    body = json.dumps([[s.get("code"), s.get("record")] for s in steps] + [asdict(variant) if variant else None])
    return hashlib.sha256((reference.id + body).encode()).hexdigest()


_CACHE: dict[str, NotebookResult] = {}


def grade_notebook(student_nb, reference: Reference, limits: sandbox.Limits, hide: list[Path],
                   cell_timeout: float, how: str | None = None, use_cache: bool = True,
                   variant: Variant | None = None) -> NotebookResult:
    """Run a submission in the sandbox and score its records in the reference.

    Under ``variant`` the sandbox gets ``EQLIB_STUDENT`` and ``EQLIB_COURSE`` (never the
    input key), its function answers are called on the inputs the reference draws for
    that student, and the checks run under that variant.
    """
    steps = plans.student_program(student_nb, reference.nb, reference.checks)
    key = program_key(steps, reference, variant)
    if use_cache and key in _CACHE:
        return _CACHE[key]
    start = time.monotonic()
    spec = reference.records_spec()
    scratch = Path(tempfile.mkdtemp(prefix="eqlib-student-"))
    os.chmod(scratch, 0o700)
    notes, skip, stderr = [], {}, ""
    try:
        env = {}
        if variant is not None:
            env = {"EQLIB_STUDENT": variant.student, "EQLIB_COURSE": variant.course}
            if reference.has_function_answers():
                reference.probe(scratch / "inputs", variant)
        elif (reference.work / "inputs").is_dir():
            shutil.copytree(reference.work / "inputs", scratch / "inputs")
        # the sandbox sees the checkers' stand-in: this copy's given(), no reference helpers
        overlays = {standin.EXERCISES: standin.write(scratch / "exercises", variant)}
        deadline = time.monotonic() + limits.wall_s
        while True:
            shutil.rmtree(scratch / "out", ignore_errors=True)
            doc = {"steps": [{k: v for k, v in s.items() if k != "cell"} for s in steps], "records": spec,
                   "cell_timeout": cell_timeout, "skip": skip}
            (scratch / "plan.json").write_text(json.dumps(doc))
            left = deadline - time.monotonic()
            run_limits = sandbox.Limits(**{**limits.__dict__, "wall_s": max(1.0, left)})
            result = sandbox.run(scratch, [sys.executable, "-m", "eqlib.assignments.runner", "student", str(scratch)],
                                 hide + [scratch.parent], run_limits, how, env, overlays)
            stderr = result.stderr
            outputs, started, done = _progress(scratch / "out" / "progress.jsonl", len(steps))
            if done:
                break
            if result.timed_out or time.monotonic() >= deadline:
                notes.append(f"the notebook's time limit ({limits.wall_s:g} s) was reached in cell "
                             f"{_cell(steps, started)}; the cells after it did not run")
                break
            if started is None or started in skip or len(skip) >= MAX_DEATHS:
                notes.append(f"the notebook stopped (exit status {result.returncode}) in cell "
                             f"{_cell(steps, started)}; the cells after it did not run")
                break
            why = f"this cell stopped the Python process (exit status {result.returncode}); it was skipped"
            notes.append(f"cell {_cell(steps, started)}: {why}")
            skip[str(started)] = why
        scores = reference.score(scratch / "out" / "rec", variant)
        for n, why in skip.items():
            outputs[int(n)] = {"stdout": "", "stderr": "", "error": ["ProcessExit", why]}
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    res = NotebookResult(scores, outputs, steps, notes, stderr, time.monotonic() - start)
    if use_cache:
        _CACHE[key] = res
    return res


def _cell(steps, n):
    if n is None or n >= len(steps):
        return "?"
    return steps[n].get("cell", "?")


def _progress(path: Path, n: int):
    outputs, started, done = [None] * n, None, False
    try:
        raw = path.read_bytes()[:64 * 2 ** 20].decode("utf-8", "replace")
    except OSError:
        return outputs, started, done
    for line in raw.splitlines():
        try:
            item = json.loads(line)
        except ValueError:
            continue
        if not isinstance(item, dict):
            continue
        if item.get("done") is True:
            done = True
        elif type(item.get("start")) is int and 0 <= item["start"] < n:
            started = item["start"]
        elif type(item.get("end")) is int and 0 <= item["end"] < n:
            outputs[item["end"]] = {k: item.get(k) for k in ("stdout", "stderr", "error") if k in item}
            if started == item["end"]:
                started = None
    return outputs, started, done
