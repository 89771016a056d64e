"""What an instructor should look at: the grader's security reading of a learner's cell source
(read with :mod:`ast`, never by running it), and the review rows it gives.
"""

from __future__ import annotations

import ast
import re

from checks.grading.allow import disallowed
from checks.grading.exercise import Exercise
from checks.source import autograd_call, parse_cell


def autograd_uses(source: str) -> list[str]:
    """The places where ``source`` runs or reads autograd: ``.backward(...)`` and
    ``torch.autograd.grad(...)`` calls and ``.grad`` reads, as text, in order; ``[]`` when
    nothing does (or the source does not parse). Inside a class or function, only calls count:
    a micrograd-style ``Value`` has a ``.grad`` of its own."""
    try:
        cell = parse_cell(source)
        if cell is None:
            return []
        found = []
        inside = {
            id(n)
            for d in ast.walk(cell.tree)
            if isinstance(d, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
            for n in ast.walk(d)
        }
        for node in ast.walk(cell.tree):
            if autograd_call(node):
                found.append(ast.unparse(node.func) + "()")
            elif (
                isinstance(node, ast.Attribute)
                and node.attr == "grad"
                and isinstance(node.ctx, ast.Load)
                and id(node) not in inside
            ):
                found.append(ast.unparse(node))
        return list(
            dict.fromkeys(
                f for f in found if not f.endswith("autograd.grad") or f + "()" not in found
            )
        )
    except Exception:
        return []


# Ways around what the grader can read in a cell: code run from strings, the kernel's own objects,
# the grader's cells and module, autograd reached without its usual names, gradients by numbers.
_AROUND_NAMES = {
    "exec",
    "eval",
    "compile",
    "__import__",
    "getattr",
    "setattr",
    "delattr",
    "globals",
    "vars",
    "get_ipython",
    "importlib",
    "ctypes",
    "gc",
    "numgrad",
    "check_numeric",
    "functorch",
    "__builtins__",
    "builtins",
    "subprocess",
    "multiprocessing",
    "threading",
    "pickle",
    "marshal",
    "runpy",
    "inspect",
}
_AROUND_PARTS = (
    "__gr",
    "__grade",
    "recorder",
    "nbrecord",
    "autograd",
    "_execution_engine",
    "torch.func",
    "torch._C",
    "sys.modules",
    "os.system",
    "os.popen",
    "os.exec",
    "os.spawn",
    "os.fork",
    "__dict__",
    "__class__",
    "__subclasses__",
    "__globals__",
    "__code__",
    "__closure__",
)


# magics that run code the grader cannot read (others, %matplotlib or %time, are harmless)
_RUNS_CODE = re.compile(
    r"%%?(?:run|load|sx|system|bash|sh|script|writefile|capture|python\d?|perl|ruby|js|"
    r"javascript|html|file|macro|store|edit|pip|conda)\b"
)
# of those, what can change the kernel for later cells too (the grader's module, the builtins,
# threads...)
LASTING = (
    "__gr",
    "__grade",
    "recorder",
    "nbrecord",
    "sys.modules",
    "builtins",
    "__builtins__",
    "gc",
    "ctypes",
    "get_ipython",
    "globals",
    "setattr",
    "delattr",
    "exec",
    "eval",
    "compile",
    "__import__",
    "importlib",
    "threading",
    "multiprocessing",
    "subprocess",
    "os.system",
    "os.popen",
    "os.exec",
    "os.spawn",
    "os.fork",
    "runpy",
    "pickle",
    "marshal",
    "__dict__",
    "__class__",
    "__subclasses__",
    "__globals__",
    "__code__",
    "__closure__",
    "!",
    "%",
)


def lasting(found: list[str]) -> list[str]:
    """Of what ``reaches_around`` found, what can change the kernel beyond its own cell."""
    return [f for f in found if any(f.startswith(p) or p in f.split(".") for p in LASTING)]


def reaches_around(source: str) -> list[str]:
    """What in ``source`` runs code the grader cannot read, or reaches into the kernel, the grader
    or autograd by other means than its usual calls (``exec``, ``getattr``,
    ``checks.grading.recorder``, ``torch.autograd``, ``numgrad``, a ``!shell`` line), as text, in
    order; ``[]`` when nothing does. Source that does not parse counts as its first line."""
    found = [
        line.strip()[:40]
        for line in source.splitlines()
        if line.lstrip().startswith("!") or _RUNS_CODE.match(line.lstrip())
    ]
    cell = parse_cell(source)
    if cell is None:
        return found or [source.strip().split("\n")[0][:40]]
    for node in ast.walk(cell.tree):
        text = None
        if isinstance(node, ast.Name) and node.id in _AROUND_NAMES:
            text = node.id
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            mods = [a.name for a in node.names] + (
                [node.module] if isinstance(node, ast.ImportFrom) and node.module else []
            )
            text = next(
                (
                    m
                    for m in mods
                    if m.split(".")[0] in _AROUND_NAMES or any(p in m for p in _AROUND_PARTS)
                ),
                None,
            )
        elif isinstance(node, (ast.Attribute, ast.Name)):
            whole = ast.unparse(node)
            text = next(
                (whole for p in _AROUND_PARTS if p in whole and whole.count(".") <= 3), None
            )
        if text and not any(f.startswith(text) for f in found):  # `__gr.emit`, not `__gr` again
            found.append(text)
    return list(dict.fromkeys(found))


def numbers_written(source: str) -> int:
    """How many numbers ``source`` writes out as literals (an answer pasted as numbers has many)."""
    cell = parse_cell(source)
    if cell is None:
        return 0
    return sum(
        isinstance(n, ast.Constant) and type(n.value) in (int, float) for n in ast.walk(cell.tree)
    )


# numbers written out in a cell beyond those of the instructor's own answer cell (its constants,
# `0.5` and `2**0.5` in GELU's slope, are the answer's own): an answer pasted as numbers
PASTED = 16


def source_reviews(ex: Exercise, learner: dict[int, str | None]) -> dict[str, str]:
    """Why the checks of learner cells need a look, by check, read from the cells' source: a cell
    that uses what an answer may not (``checks.grading.allow``: autograd under any name, ``.grad``,
    dynamic access by strings, imports...; a learner's function from an earlier cell read where it
    is called), or that writes out an answer as numbers; where what it can change lasts (the
    grader's module, the builtins, a thread, code run from a string), every later check is looked at
    too."""
    reviews: dict[str, str] = {}
    earlier, before = None, []
    for a in ex.answers:
        code = learner.get(a.index) or ""
        found = disallowed(code, a.template, before)
        before.append((code, a.template))
        pasted = numbers_written(code) - numbers_written(a.solution)
        why = earlier
        if found:
            why = f"the cell uses what an answer may not ({listed(found)}): look at it by hand"
        elif pasted >= PASTED:
            why = f"the cell writes out {pasted} numbers (an answer pasted as numbers?)"
        if why:
            reviews.update({c: why for c in a.checks})
        if lasting(found) and earlier is None:  # what it changed in the kernel lasts
            earlier = (
                "an earlier cell reaches around what the grader can read "
                f"({listed(lasting(found))})"
            )
    return reviews


def listed(items: list[str]) -> str:
    return ", ".join(f"`{u}`" for u in items[:3])
