"""The two processes of grading a notebook: the student's sandbox and the grader's reference.

``python -m eqlib.assignments.runner student WORK`` runs inside the sandbox: it executes
the student's cells (``WORK/plan.json``) in a plain IPython shell, one after another, and
at each check cell *records* the answer arguments as plain data
(``eqlib.assignments.codec``) into ``WORK/out/rec/``; a function answer is called on
the inputs the checker gave the instructor's solution and its outputs are recorded. Each
record is written as soon as its cell runs, so a later crash, ``os._exit`` or time-out
costs only what had not run. Nothing it writes is trusted: the grader reads it as data.

``python -m eqlib.assignments.runner reference WORK`` runs the instructor's notebook in
the grader's own process (no student code ever runs there). At each check cell it keeps
the chapter's context arguments and records the inputs each checker passes to a function
answer; then it serves requests, one JSON line each on stdin: ``probe`` records the inputs
the checkers give a function answer under one student's variant (``eqlib.exercises.
variants``: the inputs are drawn from the teacher's input key, which only this process
and the grader hold) into that student's scratch folder, and ``records`` scores one
student's recorded answers under their variant: the checker, loaded fresh from the
installed file, runs on the context and on the decoded answers.

Chapter: every chapter's *Exercises* section (grading; book/teaching).
"""
from __future__ import annotations

import builtins
import copy
import importlib.util
import json
import os
import random
import signal
import sys
import time
import traceback
from pathlib import Path

from ..exercises import variants
from ..seeds import seed_everything
from . import codec

EXERCISES = Path(__file__).resolve().parents[1] / "exercises"
TEXT_LIMIT = 20_000


def _shell():
    from IPython.core.interactiveshell import InteractiveShell

    class Shell(InteractiveShell):
        def enable_gui(self, gui=None):  # `%matplotlib inline` works as in Jupyter; no GUI here
            return None

    return Shell.instance(colors="NoColor")


class _CellTimeout(BaseException):
    pass


def _alarm(seconds: float):
    def handler(signum, frame):
        raise TimeoutError(f"the cell ran longer than {seconds:g} s")

    signal.signal(signal.SIGALRM, handler)
    signal.setitimer(signal.ITIMER_REAL, max(0.01, float(seconds)))


def _no_alarm():
    signal.setitimer(signal.ITIMER_REAL, 0)


def _run_cell(shell, source: str, timeout: float) -> dict:
    from IPython.utils.capture import capture_output

    with capture_output(display=True) as cap:
        _alarm(timeout)
        try:
            result = shell.run_cell(source, store_history=True)
        finally:
            _no_alarm()
    error = result.error_in_exec or result.error_before_exec
    out = {"stdout": cap.stdout[-TEXT_LIMIT:], "stderr": cap.stderr[-TEXT_LIMIT:]}
    if error is not None:
        out["error"] = [type(error).__name__, str(error)[:2000]]
    return out


# ---------------------------------------------------------------------------------------- student

def student(work: Path) -> int:
    plan = json.loads((work / "plan.json").read_text())
    variants.use_student()  # EQLIB_STUDENT and EQLIB_COURSE: the student's numbers, cell or no cell
    out = work / "out"
    rec = out / "rec"
    rec.mkdir(parents=True, exist_ok=True)
    progress = open(out / "progress.jsonl", "a", buffering=1)
    shell = _shell()
    timeout = float(plan["cell_timeout"])
    skip = {int(k): v for k, v in plan.get("skip", {}).items()}
    for n, step in enumerate(plan["steps"]):
        progress.write(json.dumps({"start": n}) + "\n")
        if "code" in step:
            source = step["code"] if n not in skip else f"raise RuntimeError({skip[n]!r})"
            result = _run_cell(shell, source, timeout)
        else:
            result = _record(shell, step["record"], plan["records"].get(step["record"], []), work, rec, timeout)
        progress.write(json.dumps({"end": n, **result}) + "\n")
    progress.write(json.dumps({"done": True}) + "\n")
    progress.close()
    return 0


def _record(shell, gid: str, items: list[dict], work: Path, rec: Path, timeout: float) -> dict:
    from IPython.utils.capture import capture_output

    notes = []
    for item in items:
        name = item["name"]
        with capture_output():
            _alarm(timeout)
            try:
                try:
                    value = eval(compile(item["expr"], "<check>", "eval"), shell.user_ns)
                except Exception as exc:
                    codec.write_doc({"ok": False, "error": f"{type(exc).__name__}: {exc}"[:2000]}, {}, rec, name)
                    notes.append(f"{item['expr']}: {type(exc).__name__}")
                    continue
                if item["mode"] == "call":
                    _record_calls(value, work / item["inputs"], rec, name)
                else:
                    codec.dump(value, rec, name)
            except TimeoutError as exc:
                codec.write_doc({"ok": False, "error": str(exc)}, {}, rec, name)
            finally:
                _no_alarm()
    return {"stdout": "", "stderr": "", "notes": notes}


def _record_calls(fn, inputs_dir: Path, rec: Path, name: str) -> None:
    doc, arrays = codec.read_doc(inputs_dir.parent, inputs_dir.name)
    if not callable(fn):
        codec.write_doc({"ok": False, "error": f"the answer must be a function, got {type(fn).__name__}"}, {},
                        rec, name)
        return
    writer = codec._Writer()
    calls = []
    for key, args_tree in doc["calls"]:
        args = codec.decode(args_tree, arrays, structure=True)
        try:
            result = fn(*args["args"], **args["kwargs"])
            try:
                tree = codec._enc(result, writer, 0)
                calls.append([key, {"value": tree}])
            except codec.Refused as exc:
                calls.append([key, {"refused": str(exc)}])
        except TimeoutError:
            raise
        except Exception as exc:
            calls.append([key, {"raised": type(exc).__name__, "message": str(exc)[:500]}])
    codec.write_doc({"ok": True, "calls": calls}, writer.arrays, rec, name)


# ---------------------------------------------------------------------------------------- reference

def load_checkers(chapter: str):
    """A chapter's checkers executed anew from the installed file (like ``fresh``): strict and silent."""
    path = EXERCISES / f"{chapter}.py"
    spec = importlib.util.spec_from_file_location(f"eqlib.exercises.{chapter}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    error = getattr(module, "ExerciseError", AssertionError)

    def strict_require(condition, message):
        if not condition:
            raise error(message)

    module.require, module.passed = strict_require, lambda message: None
    return module


def _inputs(args, kwargs, prefix: str = "a"):
    """The inputs of one call as plain data (modules with their structure, see ``codec``)."""
    return codec.encode({"args": list(args), "kwargs": dict(kwargs)},
                        codec._Writer(prefix=prefix, structure=True))


class _Recorder:
    """The instructor's function, noting each input the checker gives it: its key (the
    digest ``_Replay`` looks up) and its data, with array names of its own."""

    def __init__(self, fn):
        self.fn, self.calls, self.refused = fn, [], None

    def __call__(self, *args, **kwargs):
        try:
            key = codec.digest(*_inputs(args, kwargs))
            self.calls.append((key, *_inputs(args, kwargs, f"c{len(self.calls)}_")))
        except codec.Refused as exc:
            self.refused = str(exc)
        return self.fn(*args, **kwargs)


class _Replay:
    """A student's function as its recorded outputs: called on a recorded input, it answers."""

    def __init__(self, doc: dict, arrays: dict, groups):
        self.answers = {}
        for key, res in doc.get("calls", []):
            self.answers[str(key)] = res
        self.arrays, self.groups = arrays, groups

    def __call__(self, *args, **kwargs):
        res = self.answers.get(codec.digest(*_inputs(args, kwargs)))
        if res is None:
            raise RuntimeError("your function was not run on this input (it stopped before, or the check "
                               "asked for an input the grader had not prepared)")
        if "raised" in res:
            exc_type = getattr(builtins, str(res["raised"]), None)
            if not (isinstance(exc_type, type) and issubclass(exc_type, Exception)) or \
                    issubclass(exc_type, AssertionError):
                exc_type = RuntimeError
            raise exc_type(str(res.get("message", "")))
        if "refused" in res:
            raise TypeError(f"your function returned {res['refused']}")
        return codec.decode(res["value"], self.arrays, groups=self.groups)


def reference(work: Path) -> int:
    proto = os.fdopen(os.dup(1), "w", buffering=1)
    log = os.open(work / "reference.log", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    os.dup2(log, 1)
    os.dup2(log, 2)
    plan = json.loads((work / "plan.json").read_text())
    shell = _shell()
    state, report = {}, {}
    for step in plan["steps"]:
        if "code" in step:
            r = _run_cell(shell, step["code"], float(plan["cell_timeout"]))
            if "error" in r:
                print(f"instructor cell {step['cell']}: {r['error']}\n{r['stdout'][-3000:]}", flush=True)
        else:
            gid = step["record"]
            state[gid], report[gid] = _probe(shell, plan["checks"][gid], work)
    (work / "reference.json").write_text(json.dumps(report, indent=1))
    proto.write(json.dumps({"ready": True}) + "\n")
    for line in sys.stdin:
        try:
            request = json.loads(line)
            v = variants.Variant(**request["variant"]) if request.get("variant") else None
            if "probe" in request:
                answer = _probe_variant(state, Path(request["probe"]), v)
            else:
                answer = _score(state, plan["checks"], Path(request["records"]), shell, v)
        except Exception as exc:  # never leave the grader waiting
            answer = {"error": f"{type(exc).__name__}: {exc}"}
        proto.write(json.dumps(answer) + "\n")
    return 0


def _groups(shell):
    from ..groups import FiniteGroup

    return [v for v in list(shell.user_ns.values()) if type(v) is FiniteGroup]


def _probe(shell, calls: list[dict], work: Path):
    """At a check cell of the instructor's run: the context, the instructor's answers, and
    the inputs the checkers give a function answer in the book (no variant)."""
    entries = []
    for call in calls:
        module = load_checkers(call["chapter"])
        values, modes, templates, answers = {}, {}, {}, {}
        for key in call["keys"]:
            values[key] = eval(compile(call["exprs"][key], "<check>", "eval"), shell.user_ns)
        context = {k: v for k, v in values.items() if k not in call["answer_args"]}
        try:
            context = copy.deepcopy(context)
        except Exception:
            pass
        for key in call["answer_args"]:
            value = answers[key] = values[key]
            try:
                codec.encode(value)
                modes[key] = "value"
            except codec.Refused:
                modes[key] = "call" if callable(value) else "value"
            try:
                templates[key] = copy.deepcopy(value)
            except Exception:
                templates[key] = None
        entries.append({"fn": getattr(module, call["function"]), "context": context, "templates": templates,
                        "modes": modes, "call": call, "answers": answers})
    report = _record_inputs(entries, work / "inputs", None, strict=True)
    return entries, report


def _record_inputs(entries: list[dict], folder: Path, v, strict: bool) -> dict:
    """Run each checker on the instructor's answers under variant ``v``, noting the inputs
    it gives a function answer (written to ``folder``); the report of what failed.

    ``strict=False`` (a student's variant) runs the checker with a ``require`` that never
    raises, so it reaches every input even where the instructor's *value* answers, computed
    from the book's numbers, do not fit the student's numbers.
    """
    saved = _save_rng()
    report = {"ok": True, "message": "", "items": []}
    for ci, entry in enumerate(entries):
        call = entry["call"]
        values = {k: copy.deepcopy(x) for k, x in entry["context"].items()}
        recorders = {}
        for key in call["answer_args"]:
            if entry["modes"][key] == "call":
                recorders[key] = values[key] = _Recorder(entry["answers"][key])
            else:  # a copy: a checker that changes its argument changes no later probe
                values[key] = entry["answers"][key] if entry["templates"][key] is None else \
                    copy.deepcopy(entry["templates"][key])
        if not strict and not recorders:
            continue
        fn = entry["fn"]
        args, kwargs = _arrange(call, values)
        seed_everything(0)
        glob = fn.__globals__
        saved_require = glob.get("require")
        if not strict:
            glob["require"] = lambda condition, message: None
        try:
            with variants.variant(v):
                fn(*args, **kwargs)
        except Exception as exc:
            if strict:
                report["ok"] = False
                report["message"] += f"the instructor's answer fails {call['function']}: {type(exc).__name__}: " \
                                     f"{exc}\n"
        finally:
            if not strict:
                glob["require"] = saved_require
        for key in call["answer_args"]:
            name = f"{call['gid']}.{ci}.{key}"
            item = {"name": name, "expr": call["exprs"][key], "mode": entry["modes"][key]}
            if key in recorders:
                rec = recorders[key]
                if rec.refused:
                    report["ok"] = False
                    report["message"] += f"{call['function']} gives the answer inputs that are not plain data: " \
                                         f"{rec.refused}\n"
                arrays = {a: x for _, _, arr in rec.calls for a, x in arr.items()}
                codec.write_doc({"calls": [[key_, tree] for key_, tree, _ in rec.calls]}, arrays, folder, name)
                item["inputs"] = f"inputs/{name}"
            report["items"].append(item)
    _restore_rng(saved)
    return report


def _probe_variant(state: dict, folder: Path, v) -> dict:
    """The inputs of every function answer under a student's variant, into ``folder``."""
    problems = []
    for gid, entries in state.items():
        report = _record_inputs(entries, folder, v, strict=False)
        if not report["ok"]:
            problems.append(f"{gid}: {report['message'].strip()}")
    return {"problems": problems}


def _arrange(call: dict, values: dict):
    n = sum(1 for k in call["keys"] if k.isdigit())
    return [values[str(i)] for i in range(n)], {k: values[k] for k in call["keys"] if not k.isdigit()}


def _save_rng():
    import numpy as np
    import torch

    return torch.get_rng_state(), np.random.get_state(), random.getstate()


def _restore_rng(saved):
    import numpy as np
    import torch

    torch.set_rng_state(saved[0])
    np.random.set_state(saved[1])
    random.setstate(saved[2])


def _score(state: dict, checks: dict, records: Path, shell, v=None) -> dict:
    with variants.variant(v):
        return _score_all(state, records, shell)


def _score_all(state: dict, records: Path, shell) -> dict:
    groups = _groups(shell)
    results = {}
    saved = _save_rng()
    for gid, entries in state.items():
        ok, messages = True, []
        for ci, entry in enumerate(entries):
            call = entry["call"]
            values = {}
            try:
                for key in call["keys"]:
                    if key in entry["modes"]:
                        name = f"{gid}.{ci}.{key}"
                        doc, arrays = codec.read_doc(records, name)
                        if doc is None:
                            raise _NoAnswer(f"no answer was recorded for {call['exprs'][key]} (the notebook "
                                            "stopped before this check)")
                        if not doc.get("ok"):
                            raise _NoAnswer(f"{call['exprs'][key]}: {doc.get('error', 'refused')}")
                        if entry["modes"][key] == "call":
                            values[key] = _Replay(doc, arrays, groups)
                        else:
                            values[key] = codec.decode(doc["value"], arrays, entry["templates"].get(key), groups)
                    else:
                        values[key] = copy.deepcopy(entry["context"][key])
            except (_NoAnswer, codec.Refused) as exc:
                ok = False
                messages.append(str(exc))
                continue
            except Exception as exc:
                ok = False
                messages.append(f"{call['exprs'].get(key, key)}: refused ({type(exc).__name__}: {exc})")
                continue
            args, kwargs = _arrange(call, values)
            seed_everything(0)
            try:
                entry["fn"](*args, **kwargs)
            except AssertionError as exc:
                ok = False
                messages.append(f"{type(exc).__name__}: {exc}")
            except Exception as exc:
                ok = False
                messages.append(f"{type(exc).__name__}: {exc}")
        results[gid] = {"ok": ok, "message": "\n".join(messages)[:4000]}
    _restore_rng(saved)
    return {"scores": results}


class _NoAnswer(Exception):
    pass


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    mode, work = argv[0], Path(argv[1])
    if mode == "student":
        return student(work)
    if mode == "reference":
        return reference(work)
    raise SystemExit(f"unknown mode {mode!r}")


if __name__ == "__main__":
    sys.exit(main())
