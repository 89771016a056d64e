"""Similar answers across a class: pairs of submissions whose answer cells hold the same
uncommon code once names and layout are set aside, listed in ``report.md`` for the instructor to
look at. A flag for review, never a grade change.

A cell's *own code* is its statements that the student copy's cell does not hold, each parsed and
written back by :mod:`ast` (spacing, brackets and comments gone) with the names it binds, other than
the answers it is asked for, renamed in order of first use (``tmp`` and ``t`` alike). Own code
equal to the solution's, or written by many learners (more than :func:`_common`), says nothing: a
short right answer is written the same way by many. Nor does code that fewer than :data:`OTHERS`
learners wrote another way: two learners alone on a notebook may both write the usual answer. Two
submissions that share at least :data:`MIN_SHARED` cells of uncommon own code in one notebook are
listed, with how many cells of own code both wrote there.
"""

from __future__ import annotations

import ast
import collections
import itertools
from dataclasses import dataclass
from pathlib import Path

from checks.grading.exercise import Exercise, Unreadable, exercise_for, learner_cells
from checks.parsing import parse

MIN_SHARED = 3  # cells of uncommon own code two submissions share before they are listed
OTHERS = 2  # submissions that wrote a cell another way, before its shared code is uncommon

Key = tuple[str, int, tuple[str, ...]]  # (notebook, answer cell index, own code)


@dataclass(frozen=True)
class Similar:
    """Two submissions with uncommon answers in common in one notebook: the checks of the cells
    they share, how many cells those are, and how many cells both wrote."""

    first: str
    second: str
    notebook: str
    checks: tuple[str, ...]
    shared: int
    both_wrote: int


def own_code(source: str, template: str, asked: list[str]) -> tuple[str, ...]:
    """The statements of ``source`` that ``template`` does not hold, normalised; () for none."""
    given = set(_statements(template))
    try:
        body = parse(source).body
    except (SyntaxError, ValueError, RecursionError, MemoryError):  # its lines as they are
        return tuple(line for line in _lines(source) if line not in given)
    tree = ast.Module(body=[st for st in body if ast.unparse(st) not in given], type_ignores=[])
    bound = [
        n.id
        for n in ast.walk(tree)
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store) and n.id not in asked
    ]
    names = {old: f"_v{i}" for i, old in enumerate(dict.fromkeys(bound))}
    return tuple(ast.unparse(_Renamed(names).visit(stmt)) for stmt in tree.body)


class _Renamed(ast.NodeTransformer):
    def __init__(self, names: dict[str, str]) -> None:
        self.names = names

    def visit_Name(self, node: ast.Name) -> ast.Name:
        return ast.copy_location(ast.Name(self.names.get(node.id, node.id), node.ctx), node)


def _statements(source: str) -> list[str]:
    """Each top-level statement of ``source`` written back by ``ast``; for a cell that does not
    parse (an IPython magic, a syntax error), its lines (:func:`_lines`)."""
    try:
        return [ast.unparse(stmt) for stmt in parse(source).body]
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return _lines(source)


def _lines(source: str) -> list[str]:
    """The lines of ``source`` that hold anything, their spacing collapsed."""
    return [" ".join(line.split()) for line in source.splitlines() if line.strip()]


def similar_pairs(
    subs: list[tuple[str, list[Path]]], exercises: dict[str, Exercise]
) -> list[Similar]:
    """The pairs of submissions to look at, by notebook (see the module's text)."""
    written = _own_code_of(subs, exercises)
    uses = collections.Counter(k for keys in written.values() for k in keys)
    writers = collections.Counter(k[:2] for keys in written.values() for k in keys)
    common = _common(len(subs))

    def uncommon(k: Key) -> bool:  # few wrote it, and others show it is not the usual way
        return uses[k] <= common and writers[k[:2]] - uses[k] >= OTHERS

    cells = {sub: {k[:2] for k in keys} for sub, keys in written.items()}
    found = []
    for (a, mine), (b, theirs) in itertools.combinations(sorted(written.items()), 2):
        shared = collections.defaultdict(set)  # notebook -> its answer cells shared, uncommon
        for k in mine & theirs:
            if uncommon(k):
                shared[k[0]].add(k[1])
        for nb, indices in sorted(shared.items()):
            if len(indices) >= MIN_SHARED:
                both = sum(cell[0] == nb for cell in cells[a] & cells[b])
                ex = exercises[nb]
                checks = tuple(c for ans in ex.answers if ans.index in indices for c in ans.checks)
                found.append(Similar(a, b, nb, checks, len(indices), both))
    return found


def _common(learners: int) -> int:
    """The most submissions that may share a cell's own code for it to count as uncommon: two in
    a class of up to 40, a twentieth of a larger one."""
    return max(2, learners // 20)


def _own_code_of(
    subs: list[tuple[str, list[Path]]], exercises: dict[str, Exercise]
) -> dict[str, set[Key]]:
    """Each submission's answer cells of own code, the solution's own answers left out."""
    solution = {
        (ex.name, a.index): own_code(a.solution, a.template, a.names)
        for ex in exercises.values()
        for a in ex.answers
    }
    written: dict[str, set[Key]] = {}
    for sub, nbs in subs:
        keys: set[Key] = set()
        for path in nbs:
            ex = exercise_for(path, exercises)
            try:
                cells = learner_cells(ex, path) if ex is not None else {}
            except Unreadable:
                continue
            for a in ex.answers if ex is not None else []:
                code = own_code(cells.get(a.index) or "", a.template, a.names)
                if code and code != solution[(ex.name, a.index)]:
                    keys.add((ex.name, a.index, code))
        written[sub] = keys
    return written
