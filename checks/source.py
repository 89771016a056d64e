"""What a learner's cell source says about one answer, read with :mod:`ast` (never by running it).

:func:`facts` looks for the source-level causes of a wrong (or falsely right) answer that the
values alone cannot show: reading autograd's ``.grad``, aliasing another gradient and changing it
in place, ``dC[Xb] += demb`` with repeated indices, and the batch size written as a literal.
Every function here takes any text and never raises: a cell that does not parse (even with its
IPython ``%magic`` and ``!shell`` lines blanked out) gives "no facts".
"""

from __future__ import annotations

import ast
import functools
import inspect
import linecache
import re
from collections.abc import Iterator
from dataclasses import dataclass
from types import CodeType

from checks.parsing import parse

__all__ = [
    "SourceFacts",
    "parse_cell",
    "answer_assigned",
    "autograd_call",
    "code_text",
    "facts",
    "placeholders_used",
]

_LOOPS = (ast.For, ast.AsyncFor, ast.While)
_RANGES = {"range", "arange"}  # an index that counts 0..n-1 makes every position unique


@dataclass(frozen=True)
class SourceFacts:
    """What the cell does to the answer; the defaults mean "nothing suspicious"."""

    reads_grad: str | None = None  # "hpreact.grad": the answer's value comes from a `.grad`
    runs_autograd: bool = False  # that `.grad` comes from autograd run in the cell itself
    alias_of: str | None = None  # "dbndiff": `answer = dbndiff`, then answer changed in place
    changed_through: str | None = None  # "dhprebn": `dhprebn = answer`, then changed in place
    indexed_add: str | None = None  # "dC[Xb] += demb": `+=` into the answer at a tensor index
    batch_literals: tuple[int, ...] = ()  # the batch size written as a literal in the answer's code


class _Cell:
    """A parsed cell: its text, its tree, its statements in source order and their loop depth."""

    def __init__(self, text: str, tree: ast.Module) -> None:
        self.text = text
        self.tree = tree
        self.stmts: list[ast.stmt] = []
        self.in_loop: set[int] = set()  # ids of statements inside a for/while body
        self.loops_of: dict[int, list[ast.stmt]] = {}  # statement id -> enclosing loops
        self._collect(tree.body, [])

    def _collect(self, body: list[ast.stmt], loops: list[ast.stmt]) -> None:
        for stmt in body:
            self.stmts.append(stmt)
            self.loops_of[id(stmt)] = loops
            if loops:
                self.in_loop.add(id(stmt))
            inner = [*loops, stmt] if isinstance(stmt, _LOOPS) else loops
            for _, value in ast.iter_fields(stmt):
                if isinstance(value, list) and value and isinstance(value[0], ast.stmt):
                    self._collect(value, inner)
                elif isinstance(value, list) and value and isinstance(value[0], ast.excepthandler):
                    for handler in value:
                        self._collect(handler.body, inner)


_TIMING = re.compile(r"%%?(?:time|timeit|prun)\b(?:\s+-\w+(?:\s+\d+)?)*\s*")


def _blank_magics(source: str) -> str:
    """``source`` with each ``%magic`` / ``!shell`` line made ``pass`` (line numbers kept).

    Timing magics keep the code they time: ``%time x = f()`` becomes ``x = f()``.
    """
    lines = []
    for line in source.splitlines():
        stripped = line.lstrip()
        if stripped.startswith(("%", "!")):
            timed = _TIMING.match(stripped)
            code = stripped[timed.end() :] if timed else ""
            line = line[: len(line) - len(stripped)] + (code or "pass")
        lines.append(line)
    return "\n".join(lines)


def parse_cell(source: str) -> _Cell | None:
    """The cell parsed as Python, retrying without IPython magics; None when it cannot be."""
    if not isinstance(source, str):
        return None
    for text in (source, _blank_magics(source)):
        try:
            return _Cell(text, parse(text))
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            continue
    return None


def _names(node: ast.AST) -> Iterator[str]:
    """The plain names a target binds (``a``, ``a, b``, ``[a, *b]``)."""
    if isinstance(node, ast.Name):
        yield node.id
    elif isinstance(node, (ast.Tuple, ast.List)):
        for elt in node.elts:
            yield from _names(elt)
    elif isinstance(node, ast.Starred):
        yield from _names(node.value)


def _targets(stmt: ast.stmt) -> list[ast.expr]:
    """The assignment targets of ``stmt`` (empty for statements that assign nothing)."""
    if isinstance(stmt, ast.Assign):
        return list(stmt.targets)
    if isinstance(stmt, (ast.AugAssign, ast.AnnAssign)):
        return [stmt.target]
    return []


def _binds(stmt: ast.stmt, name: str) -> bool:
    """True when ``stmt`` (re)binds ``name`` as a whole: ``name = ...``, ``for name in ...``."""
    if isinstance(stmt, (ast.Assign, ast.AnnAssign)):
        return any(name in _names(t) for t in _targets(stmt))
    if isinstance(stmt, (ast.For, ast.AsyncFor)):
        return name in _names(stmt.target)
    if isinstance(stmt, (ast.With, ast.AsyncWith)):
        return any(
            i.optional_vars is not None and name in _names(i.optional_vars) for i in stmt.items
        )
    if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return stmt.name == name
    if isinstance(stmt, (ast.Import, ast.ImportFrom)):
        return any((a.asname or a.name.split(".")[0]) == name for a in stmt.names)
    return False


def _own_exprs(stmt: ast.stmt) -> Iterator[ast.AST]:
    """Every expression node of ``stmt`` itself, not of the statements nested in its body."""
    for _, value in ast.iter_fields(stmt):
        items = value if isinstance(value, list) else [value]
        for item in items:
            if isinstance(item, ast.expr):
                yield from ast.walk(item)
            elif isinstance(item, ast.withitem):
                yield from ast.walk(item)


def _root(node: ast.expr) -> ast.expr:
    """The base of ``a[i][j]`` / ``a.data[i]``: ``a``."""
    while isinstance(node, ast.Subscript) or (
        isinstance(node, ast.Attribute) and node.attr == "data"
    ):
        node = node.value
    return node


def _is_name(node: ast.AST | None, name: str) -> bool:
    return isinstance(node, ast.Name) and node.id == name


def _is_inplace_method(attr: str) -> bool:
    return attr.endswith("_") and not attr.startswith("__")


def _changes_in_place(stmt: ast.stmt, name: str) -> bool:
    """True when ``stmt`` changes the tensor bound to ``name`` without rebinding the name.

    ``name += x`` (any augmented operator), ``name[...] = x``, ``name[...] += x``,
    ``name.data ... = x``, ``name.add_(x)`` (any method ending in ``_``, not a dunder, called on
    ``name`` or ``name.data``), and ``torch.add(a, b, out=name)``.
    """
    if isinstance(stmt, ast.AugAssign) and _is_name(_root(stmt.target), name):
        return True
    for target in _targets(stmt):
        if isinstance(target, (ast.Subscript, ast.Attribute)) and _is_name(_root(target), name):
            return True
    for node in _own_exprs(stmt):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        if isinstance(func, ast.Attribute) and _is_inplace_method(func.attr):
            base = func.value
            if isinstance(base, ast.Attribute) and base.attr == "data":
                base = base.value
            if _is_name(base, name):
                return True
        if any(k.arg == "out" and _is_name(k.value, name) for k in node.keywords):
            return True
    return False


def _assigns_answer(stmt: ast.stmt, answer: str) -> bool:
    """True when ``stmt`` binds ``answer`` or writes into it (``answer[...] = ...``, ``+=``)."""
    if _binds(stmt, answer) and not isinstance(stmt, _LOOPS):
        return True
    return any(_is_name(_root(t), answer) for t in _targets(stmt))


def _value(stmt: ast.stmt) -> ast.expr | None:
    return (
        getattr(stmt, "value", None)
        if isinstance(stmt, (ast.Assign, ast.AugAssign, ast.AnnAssign))
        else None
    )


_SHAPE_ONLY = {"zeros_like", "ones_like", "empty_like", "full_like", "rand_like", "randn_like"}
_META = {"shape", "size", "dtype", "device", "ndim", "dim", "numel"}
_NEW = {"new_zeros", "new_ones", "new_empty", "new_full"}  # X.grad.new_zeros(...): a fresh tensor


def _grad_read(expr: ast.expr) -> str | None:
    """The dotted text of the first ``X.grad`` (or ``getattr(X, "grad")``) read in ``expr``.

    Uses of ``.grad`` for its shape alone (``torch.zeros_like(X.grad)``, ``X.grad.shape``) do
    not count: they take no value from autograd.
    """
    stack = [expr]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.Call) and _call_name(node) in _SHAPE_ONLY:
            stack.extend(kw.value for kw in node.keywords if kw.arg == "fill_value")
            stack.extend(node.args[1:])
            continue
        if isinstance(node, ast.Attribute) and node.attr in _META | _NEW:
            continue
        if (
            isinstance(node, ast.BinOp)
            and isinstance(node.op, ast.Mult)
            and (_is_zero(node.left) or _is_zero(node.right))
        ):
            continue  # X.grad * 0: its shape alone
        if isinstance(node, ast.Attribute) and node.attr == "grad":
            return ast.unparse(node)
        if (
            isinstance(node, ast.Call)
            and _is_name(node.func, "getattr")
            and len(node.args) >= 2
            and isinstance(node.args[1], ast.Constant)
            and node.args[1].value == "grad"
        ):
            return f"{ast.unparse(node.args[0])}.grad"
        stack.extend(reversed(list(ast.iter_child_nodes(node))))
    return None


def _call_name(call: ast.Call) -> str | None:
    """``zeros_like`` for ``torch.zeros_like(...)`` or ``zeros_like(...)``."""
    f = call.func
    return f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else None


def _grad_through_names(cell: _Cell, index: int, expr: ast.expr, seen: set[int]) -> str | None:
    """A ``.grad`` read in ``expr`` or, following ``g = ...`` backwards, in what its names hold."""
    found = _grad_read(expr)
    if found:
        return found
    for node in ast.walk(expr):
        if not (isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load)):
            continue
        for j in range(index - 1, -1, -1):
            stmt = cell.stmts[j]
            if not _binds(stmt, node.id):
                continue
            value = _value(stmt)
            if value is not None and j not in seen:
                seen.add(j)
                found = _grad_through_names(cell, j, value, seen)
                if found:
                    return found
            break
    return None


def _reads_grad(cell: _Cell, answer: str) -> str | None:
    """``answer`` assigned from an expression reading ``.grad``, directly or via cell names.

    Any ``.grad`` in the right-hand side counts (``X.grad``, ``X.grad.clone()``, ``1.0 * X.grad``,
    ``torch.clone(X.grad)``, ``f(h) * X.grad``), and so does ``g = X.grad`` earlier in the cell
    followed by ``answer = g.clone()``. Returns the dotted text, e.g. ``"hpreact.grad"``.
    """
    start = _last_binding(cell, answer)  # an earlier binding that is replaced does not count
    if _zeroed_after(cell, answer, start):
        return None
    for i, stmt in enumerate(cell.stmts):
        value = _value(stmt)
        if i >= start and value is not None and _assigns_answer(stmt, answer):
            found = _grad_through_names(cell, i, value, {i})
            if found:
                return found
    return None


def _last_binding(cell: _Cell, answer: str) -> int:
    """The index of the statement that last gives ``answer`` a new value (0 when none): a binding
    as :func:`_binds` sees it (``a, answer = ...`` too), or ``(answer := ...)`` in an expression."""

    def rebinds(stmt: ast.stmt) -> bool:
        if isinstance(stmt, ast.AnnAssign) and stmt.value is None:
            return False  # an annotation alone gives no value
        return _binds(stmt, answer) or any(
            isinstance(n, ast.NamedExpr) and n.target.id == answer for n in ast.walk(stmt)
        )

    plain = [i for i, stmt in enumerate(cell.stmts) if rebinds(stmt)]
    return plain[-1] if plain else 0


def _zeroed_after(cell: _Cell, answer: str, start: int) -> bool:
    """``answer.zero_()``, ``answer.fill_(0)`` or ``answer *= 0`` after ``start``: whatever the
    answer was copied from, its values are gone."""
    for stmt in cell.stmts[start + 1 :]:
        for node in ast.walk(stmt):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and _is_name(node.func.value, answer)
                and (
                    node.func.attr == "zero_"
                    or (node.func.attr == "fill_" and node.args and _is_zero(node.args[0]))
                )
            ):
                return True
        if (
            isinstance(stmt, ast.AugAssign)
            and _is_name(stmt.target, answer)
            and isinstance(stmt.op, ast.Mult)
            and _is_zero(stmt.value)
        ):
            return True
    return False


def _is_zero(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and node.value == 0 and not isinstance(node.value, bool)


def _runs_autograd(cell: _Cell, read: str | None) -> bool:
    """The ``.grad`` read comes from autograd run in this very cell: ``torch.autograd.grad(...)``,
    or the ``.grad`` of a tensor the cell made a leaf (``requires_grad_()``) and ran
    ``.backward()`` for, as in
    ``l = logits.detach().requires_grad_(); ...backward(); dX = l.grad``."""
    if read is None:
        return False
    if read.endswith("autograd.grad"):
        return True
    if not any(autograd_call(n) == "backward" for n in ast.walk(cell.tree)):
        return False
    root = read.split(".")[0]
    for stmt in cell.stmts:
        if isinstance(stmt, ast.Assign) and any(root in _names(t) for t in stmt.targets):
            made = ast.unparse(stmt.value)
            if "requires_grad_(" in made or "requires_grad=True" in made:
                return True
    return False


def autograd_call(node: ast.AST) -> str | None:
    """ "backward" for a ``.backward(...)`` call, "grad" for ``torch.autograd.grad(...)``,
    else None."""
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
        return None
    if node.func.attr == "backward":
        return "backward"
    return "grad" if ast.unparse(node.func).endswith("autograd.grad") else None


def _bare_aliases(cell: _Cell, name: str) -> Iterator[tuple[int, str]]:
    """(index, other) for each ``name = other`` with ``other`` a bare name."""
    for i, stmt in enumerate(cell.stmts):
        if (
            isinstance(stmt, ast.Assign)
            and isinstance(stmt.value, ast.Name)
            and stmt.value.id != name
            and any(_is_name(t, name) for t in stmt.targets)
        ):
            yield i, stmt.value.id


def _changed_later(cell: _Cell, start: int, name: str, stop_on: tuple[str, ...]) -> bool:
    """``name`` changed in place after statement ``start``, before any of ``stop_on`` is rebound."""
    for stmt in cell.stmts[start + 1 :]:
        if _changes_in_place(stmt, name):
            return True
        if any(_binds(stmt, n) for n in stop_on):
            return False
    return False


def _alias_of(cell: _Cell, answer: str) -> str | None:
    """``answer = other`` (a bare name, no copy), then ``answer`` changed in place: ``other``.

    In place means ``+=``/``-=``/``*=``/``/=``, ``answer[...] = x``, ``answer[...] += x`` or a
    method ending in ``_`` (``add_``, ``index_add_``, ``copy_``, ``zero_``); the change must come
    before ``answer`` is rebound. ``answer = other.clone()`` or ``other + 0`` is a copy: no alias.
    """
    for i, other in _bare_aliases(cell, answer):
        if _changed_later(cell, i, answer, (answer,)):
            return other
    return None


def _changed_through(cell: _Cell, answer: str) -> str | None:
    """The mirror of :func:`_alias_of`: ``other = answer``, then ``other`` changed in place.

    Returns ``other``; the change must come before either name is rebound.
    """
    for i, stmt in enumerate(cell.stmts):
        if not (isinstance(stmt, ast.Assign) and _is_name(stmt.value, answer)):
            continue
        for target in stmt.targets:
            if (
                isinstance(target, ast.Name)
                and target.id != answer
                and _changed_later(cell, i, target.id, (target.id, answer))
            ):
                return target.id
    return None


def _literal_index(node: ast.expr) -> bool:
    """An index made of int literals and literal slices only (``0``, ``:``, ``1:3``, ``0, -1``)."""
    if isinstance(node, ast.Tuple):
        return all(_literal_index(e) for e in node.elts)
    if isinstance(node, ast.Slice):
        parts = (node.lower, node.upper, node.step)
        return all(p is None or _literal_index(p) for p in parts)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        return _literal_index(node.operand)
    return isinstance(node, ast.Constant) and (node.value is None or type(node.value) is int)


def _counts_up(node: ast.expr) -> bool:
    """``range(n)`` / ``torch.arange(n)``: an index whose entries are all different."""
    if not isinstance(node, ast.Call):
        return False
    func = node.func
    name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", "")
    return name in _RANGES


def _scatter_index(target: ast.expr, answer: str) -> bool:
    """``answer[idx]`` with a tensor index ``idx`` that may repeat a position."""
    if not (isinstance(target, ast.Subscript) and _is_name(target.value, answer)):
        return False
    index = target.slice
    if _literal_index(index):
        return False
    parts = index.elts if isinstance(index, ast.Tuple) else [index]
    return not any(_counts_up(p) for p in parts)


def _indexed_add(cell: _Cell, answer: str) -> str | None:
    """``answer[idx] += x`` (or ``answer[idx] = answer[idx] + x``) with a tensor index.

    With a repeated index, ``+=`` adds once per position instead of once per occurrence. Not
    flagged: literal indices (``dC[0] += x``), an index counting up (``d[range(n), Yb] -= 1``:
    every position once), and any such statement inside a for/while loop (element by element, the
    loop accumulates correctly). Returns the statement's text.
    """
    start = _last_binding(cell, answer)  # an abandoned first try before a rebinding does not count
    for stmt in cell.stmts[start:]:
        if id(stmt) in cell.in_loop:
            continue
        if isinstance(stmt, ast.AugAssign) and _scatter_index(stmt.target, answer):
            return ast.get_source_segment(cell.text, stmt) or ast.unparse(stmt)
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
            target = stmt.targets[0]
            text = ast.unparse(target)
            if _scatter_index(target, answer) and any(
                isinstance(n, ast.Subscript) and ast.unparse(n) == text
                for n in ast.walk(stmt.value)
            ):
                return ast.get_source_segment(cell.text, stmt) or ast.unparse(stmt)
    return None


def _equals_batch(node: ast.AST, batch: int) -> bool:
    if not isinstance(node, ast.Constant) or isinstance(node.value, bool):
        return False
    return isinstance(node.value, (int, float)) and node.value == batch


def _batch_literals(cell: _Cell, answer: str, batch: int | None) -> tuple[int, ...]:
    """``(batch,)`` when a literal equal to ``batch`` appears in the answer's code, else ``()``.

    A negated literal (the ``-1`` of ``view(-1, 10)``) does not count.

    The answer's code is every statement that assigns it or writes into it
    (``torch.zeros((32, 27))``, ``x.view(32, -1)``, ``1/32 * ...``, ``d[range(32), Yb] -= 1``)
    and the headers of the loops around them (``for i in range(32):``).
    """
    if batch is None or isinstance(batch, bool):
        return ()
    negated = {
        id(n.operand)
        for n in ast.walk(cell.tree)
        if isinstance(n, ast.UnaryOp) and isinstance(n.op, ast.USub)
    }
    for stmt in cell.stmts:
        if not _assigns_answer(stmt, answer):
            continue
        headers = [n for loop in cell.loops_of[id(stmt)] for n in _own_exprs(loop)]
        nodes = [*_own_exprs(stmt), *headers]
        if any(_equals_batch(n, batch) and id(n) not in negated for n in nodes):
            return (int(batch),)
    return ()


def facts(source: str, answer: str, batch: int | None = None) -> SourceFacts:
    """What ``source`` (one cell) says about the answer named ``answer``; never raises.

    See :class:`SourceFacts` for the fields and the ``_reads_grad``, ``_alias_of``,
    ``_changed_through``, ``_indexed_add`` and ``_batch_literals`` helpers for the rules.
    ``batch_literals`` is only looked for when ``batch`` is given. A cell's ``cmp`` calls ask
    about the same source once per answer, and a cell run again asks again: the facts are kept.
    """
    try:
        return _facts(source, answer, batch)
    except TypeError:  # an argument that cannot be a key is no cell's text
        return SourceFacts()


@functools.lru_cache(maxsize=256)
def _facts(source: str, answer: str, batch: int | None) -> SourceFacts:
    try:
        cell = parse_cell(source)
        if cell is None or not answer:
            return SourceFacts()
        reads_grad = _reads_grad(cell, answer)
        return SourceFacts(
            reads_grad=reads_grad,
            runs_autograd=_runs_autograd(cell, reads_grad),
            alias_of=_alias_of(cell, answer),
            changed_through=_changed_through(cell, answer),
            indexed_add=_indexed_add(cell, answer),
            batch_literals=_batch_literals(cell, answer, batch),
        )
    except Exception:  # a checker must never fail because of the learner's text
        return SourceFacts()


def answer_assigned(source: str, answer: str) -> bool:
    """True when the cell binds ``answer`` (``answer = ...``, ``answer += ...``, ``for answer``)."""
    try:
        cell = parse_cell(source)
        return cell is not None and any(
            _binds(s, answer) or (isinstance(s, ast.AugAssign) and _is_name(s.target, answer))
            for s in cell.stmts
        )
    except Exception:
        return False


def _stores(cell: _Cell) -> dict[str, tuple[int, int]]:
    """For each name the cell binds, where its first binding takes effect (line, column).

    An assignment takes effect at the end of its statement (``x = x + 1`` reads ``x`` first);
    a loop variable, import, ``def`` or ``with ... as`` at its own position.
    """
    first: dict[str, tuple[int, int]] = {}

    def note(name: str, where: tuple[int, int]) -> None:
        if name not in first or where < first[name]:
            first[name] = where

    for stmt in cell.stmts:
        end = (stmt.end_lineno or stmt.lineno, stmt.end_col_offset or 0)
        start = (stmt.lineno, stmt.col_offset)
        if isinstance(stmt, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            for target in _targets(stmt):
                for name in _names(target):
                    note(name, end)
        elif isinstance(stmt, (ast.For, ast.AsyncFor)):
            for name in _names(stmt.target):
                note(name, (stmt.target.lineno, stmt.target.col_offset))
        elif isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            note(stmt.name, start)
        elif isinstance(stmt, (ast.Import, ast.ImportFrom)):
            for alias in stmt.names:
                note(alias.asname or alias.name.split(".")[0], start)
        for node in _own_exprs(stmt):
            if isinstance(node, ast.NamedExpr):
                note(node.target.id, (node.end_lineno or 0, node.end_col_offset or 0))
            elif isinstance(node, ast.withitem) and node.optional_vars is not None:
                for name in _names(node.optional_vars):
                    note(name, (node.optional_vars.lineno, node.optional_vars.col_offset))
    return first


def _scoped_names(tree: ast.AST) -> set[str]:
    """Names local to a comprehension, lambda or function (their arguments and loop variables)."""
    local: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.comprehension):
            local.update(_names(node.target))
        elif isinstance(node, (ast.Lambda, ast.FunctionDef, ast.AsyncFunctionDef)):
            args = node.args
            every = [*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg]
            local.update(a.arg for a in every if a is not None)
    return local


def _reads(cell: _Cell) -> list[tuple[tuple[int, int], str]]:
    """Every name the cell reads, with its position, in source order (``x += 1`` reads ``x``)."""
    reads = []
    for node in ast.walk(cell.tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
            reads.append(((node.lineno, node.col_offset), node.id))
        elif isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name):
            reads.append(((node.lineno, node.col_offset), node.target.id))
    return sorted(reads)


def placeholders_used(source: str, namespace: dict) -> list[str]:
    """The names ``source`` reads whose value in ``namespace`` is ``...`` or None.

    In order of first use; a name the cell binds before reading it does not count (its value then
    is the cell's own), nor do comprehension variables and function or lambda arguments.
    Never raises: unparseable source gives ``[]``.
    """
    try:
        cell = parse_cell(source)
        if cell is None:
            return []
        stores, local = _stores(cell), _scoped_names(cell.tree)
        found: list[str] = []
        for where, name in _reads(cell):
            if name in found or name in local or (name in stores and stores[name] <= where):
                continue
            if name in namespace and (namespace[name] is Ellipsis or namespace[name] is None):
                found.append(name)
        return found
    except Exception:
        return []


def code_text(code: CodeType) -> str | None:
    """The source of a code object: all of a notebook cell (or file) for its top level, the
    function itself otherwise; None when it has no source (code compiled from a string)."""
    whole = "".join(linecache.getlines(code.co_filename)) or None
    if code.co_name == "<module>":
        return whole
    try:
        return inspect.getsource(code)
    except (OSError, TypeError):
        return whole
