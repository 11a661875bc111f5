"""What the grader asks of a submission: its check calls, and which arguments are answers.

A check cell (``grade: true``, ``locked: true``) calls checkers of ``eqlib.exercises``.
``checks`` reads every call from the instructor's notebook (the hidden
``fresh("chNN").check_x(...)`` calls, or the visible ones) and splits its arguments:

- an **answer** argument reads a name the student's work defines: bound inside a
  ``### BEGIN SOLUTION`` region, or computed (in any later statement) from such a name,
  or changed in place by such a statement. It is evaluated in the student's sandbox and
  crosses as plain data (or, for a function, as its outputs on the checker's inputs).
- any other argument (the chapter's own set-up: a group, a model it defines, a seeded
  tensor) is **context**: the grader takes it from the instructor's notebook run in a
  process of its own, so a student who redefines it changes nothing.

``student_program`` turns a submission into the cells the sandbox runs: the
student's code cells, the instructor's locked cells as they are in the source, and at
each check cell a *record* step instead of the check.

Chapter: every chapter's *Exercises* section (grading; book/teaching).
"""
from __future__ import annotations

import ast
import re
import threading
import warnings
from dataclasses import dataclass, field

import nbformat

HIDDEN = re.compile(r"^[ \t]*### BEGIN HIDDEN TESTS.*?^[ \t]*### END HIDDEN TESTS[^\n]*$", re.M | re.S)
SOLUTION = re.compile(r"^[ \t]*### (BEGIN|END) SOLUTION", re.M)


#: CPython 3.11's AST conversion keeps its recursion depth in interpreter-wide state, so two
#: threads parsing at once (the grader prepares chapters in a thread pool) can fail with
#: "SystemError: AST constructor recursion depth mismatch"; and catch_warnings is not
#: thread-safe either. Parsing is quick: one at a time.
_PARSE_LOCK = threading.Lock()


def _parse(source: str, mode: str = "exec"):
    with _PARSE_LOCK, warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a chapter's invalid escapes are not the grader's to report
        return ast.parse(source, mode=mode)


def nbg(cell) -> dict:
    return cell.get("metadata", {}).get("nbgrader", {}) or {}


def python_source(source: str) -> str:
    """IPython syntax (magics, ``!cmd``) turned into Python."""
    from IPython.core.inputtransformer2 import TransformerManager

    return TransformerManager().transform_cell(source)


@dataclass
class Call:
    chapter: str  # "ch02"
    function: str  # "check_corner_representation"
    args: list[str]  # source of each positional argument
    kwargs: dict[str, str]
    answer_args: list[str] = field(default_factory=list)  # keys ("0", "1", "slope") read from the student

    def keys(self) -> list[str]:
        return [str(i) for i in range(len(self.args))] + list(self.kwargs)

    def expr(self, key: str) -> str:
        return self.args[int(key)] if key.isdigit() else self.kwargs[key]


@dataclass
class Check:
    grade_id: str
    points: float
    calls: list[Call]


def _checker_calls(source: str, imports: dict[str, str]) -> list[Call]:
    """``fresh("chNN").f(...)``, ``chNN.f(...)`` or an imported ``f(...)`` calls in ``source``."""
    try:
        tree = _parse(source)
    except SyntaxError:
        return []
    calls = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            _note_imports(node, imports)
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func, chapter, name = node.func, None, None
        if isinstance(func, ast.Attribute):
            base = func.value
            if isinstance(base, ast.Call) and isinstance(base.func, ast.Name) and base.func.id == "fresh" \
                    and base.args and isinstance(base.args[0], ast.Constant):
                chapter, name = str(base.args[0].value), func.attr
            elif isinstance(base, ast.Name) and imports.get(base.id, "").startswith("module:"):
                chapter, name = imports[base.id][7:], func.attr
        elif isinstance(func, ast.Name) and imports.get(func.id, "").startswith("func:"):
            chapter, name = imports[func.id][5:].split(".")
        if chapter and name and re.fullmatch(r"ch\d\d", chapter):
            if any(isinstance(a, ast.Starred) for a in node.args) or any(k.arg is None for k in node.keywords):
                continue
            calls.append(Call(chapter, name, [ast.unparse(a) for a in node.args],
                              {k.arg: ast.unparse(k.value) for k in node.keywords}))
    return calls


def _note_imports(node, imports: dict[str, str]) -> None:
    if isinstance(node, ast.ImportFrom) and node.module == "eqlib.exercises":
        for a in node.names:
            if re.fullmatch(r"ch\d\d", a.name):
                imports[a.asname or a.name] = f"module:{a.name}"
    elif isinstance(node, ast.ImportFrom) and re.fullmatch(r"eqlib\.exercises\.ch\d\d", node.module or ""):
        for a in node.names:
            imports[a.asname or a.name] = f"func:{node.module.split('.')[-1]}.{a.name}"
    elif isinstance(node, ast.Import):
        for a in node.names:
            if re.fullmatch(r"eqlib\.exercises\.ch\d\d", a.name) and a.asname:
                imports[a.asname] = f"module:{a.name.split('.')[-1]}"


def is_check(cell) -> bool:
    m = nbg(cell)
    return cell.cell_type == "code" and bool(m.get("grade")) and not m.get("solution")


def checks(source_nb) -> list[Check]:
    """Every check cell of the instructor's notebook, with its calls and answer arguments."""
    out, imports, tainted = [], {}, set()
    for cell in source_nb.cells:
        if cell.cell_type != "code":
            continue
        if is_check(cell):
            hidden = "\n".join(m.group(0) for m in HIDDEN.finditer(cell.source))
            calls = _checker_calls(hidden, dict(imports)) if hidden else []
            visible = _checker_calls(HIDDEN.sub("", cell.source), imports)
            calls = calls or visible
            for call in calls:
                call.answer_args = [k for k in call.keys() if _names(call.expr(k)) & tainted]
            out.append(Check(nbg(cell)["grade_id"], float(nbg(cell).get("points", 0)), calls))
            continue
        tainted = _taint(cell.source, bool(nbg(cell).get("solution")), tainted)
    return out


def _names(expr: str) -> set[str]:
    try:
        tree = _parse(expr, "eval")
    except SyntaxError:
        return set()
    return {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}


def _solution_lines(source: str) -> set[int]:
    lines, inside = set(), False
    for i, line in enumerate(source.splitlines(), 1):
        m = SOLUTION.match(line)
        if m:
            inside = m.group(1) == "BEGIN"
        elif inside:
            lines.add(i)
    return lines


def _taint(source: str, answer_cell: bool, tainted: set[str]) -> set[str]:
    """Names that hold the student's work after ``source`` ran (see the module docstring)."""
    try:
        tree = _parse(python_source(source) if "%" in source or "!" in source else source)
    except SyntaxError:
        return tainted
    region = _solution_lines(source) if answer_cell else set()
    tainted = set(tainted)
    for stmt in tree.body:
        lines = set(range(stmt.lineno, (stmt.end_lineno or stmt.lineno) + 1))
        loads = {n.id for n in ast.walk(stmt) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
        stores = _bound(stmt)
        if lines & region or loads & tainted:
            tainted |= stores | _mutated(stmt)
        else:
            tainted -= stores
    return tainted


def _bound(stmt) -> set[str]:
    names = set()
    if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return {stmt.name}
    if isinstance(stmt, (ast.Import, ast.ImportFrom)):
        return {(a.asname or a.name).split(".")[0] for a in stmt.names}
    for node in ast.walk(stmt):
        if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            names.add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
    return names


def _root(node):
    while isinstance(node, (ast.Attribute, ast.Subscript, ast.Call)):
        node = node.func if isinstance(node, ast.Call) else node.value
    return node.id if isinstance(node, ast.Name) else None


MUTATORS = {"append", "extend", "insert", "update", "pop", "popitem", "clear", "remove", "setdefault", "add",
            "discard", "sort", "reverse", "load_state_dict", "register_buffer", "register_parameter"}


def _mutated(stmt) -> set[str]:
    """Names changed in place: ``x.a = …``, ``x[i] += …``, ``x.copy_(…)``, ``x.append(…)``."""
    names = set()
    for node in ast.walk(stmt):
        if isinstance(node, (ast.Attribute, ast.Subscript)) and isinstance(node.ctx, (ast.Store, ast.Del)):
            names.add(_root(node))
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and (
                node.func.attr in MUTATORS or re.fullmatch(r"[a-z][a-z0-9_]*[a-z0-9]_", node.func.attr)):
            names.add(_root(node.func.value))
    return names - {None}


def student_program(student_nb, source_nb, check_list: list[Check]) -> list[dict]:
    """The steps the sandbox runs: ``{"code": src, "cell": i}`` or ``{"record": grade_id, "cell": i}``.

    Cells are the student's, except that a cell whose ``grade_id`` is a locked cell of the
    source runs as the source has it, and a check cell becomes a record step. A check the
    student deleted is recorded at the end.
    """
    locked = {nbg(c).get("grade_id"): c.source for c in source_nb.cells
              if nbg(c).get("locked") and not nbg(c).get("solution") and c.cell_type == "code"}
    ids = {c.grade_id for c in check_list}
    steps, seen = [], set()
    for i, cell in enumerate(student_nb.cells):
        if cell.get("cell_type") != "code":
            continue
        gid = nbg(cell).get("grade_id")
        if gid in ids:
            if gid not in seen:
                steps.append({"record": gid, "cell": i})
                seen.add(gid)
        elif gid in locked:
            steps.append({"code": locked[gid], "cell": i})
        else:
            steps.append({"code": cell.get("source", ""), "cell": i})
    steps += [{"record": c.grade_id, "cell": None} for c in check_list if c.grade_id not in seen]
    return steps


def read(path) -> nbformat.NotebookNode:
    return nbformat.read(str(path), as_version=4)
