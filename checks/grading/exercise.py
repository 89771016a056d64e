"""Stage 1, loading: an exercise (the instructor's solution notebook, cut into answer cells) and
what a learner's submission holds for each of its answer cells.
"""

from __future__ import annotations

import ast
import collections
import json
import re
from dataclasses import dataclass, field
from pathlib import Path

import nbformat

from checks.authoring.student import answer_names, stub_source
from checks.grading.facts import CMP
from checks.grading.hintlog import hint_records
from checks.hints import DRILL
from checks.parsing import parse


@dataclass
class AnswerCell:
    """One solution cell that holds answers: where it is, what it asks for, how to read
    the values."""

    index: int
    cell_id: str | None
    exercise: str
    names: list[str]
    probe: str | None
    solution: str
    template: str  # the student copy of the cell
    # one id per name: "ex1/dlogits", "ex1/dlogits#2" when repeated
    checks: list[str] = field(default_factory=list)
    # an expression giving {name: checks.grading.facts} in the reference run
    facts: str | None = None


@dataclass
class Exercise:
    """A solution notebook, cut into the instructor's cells and the answer cells."""

    path: Path
    cells: list[nbformat.NotebookNode]
    answers: list[AnswerCell] = field(default_factory=list)

    @property
    def name(self) -> str:
        return self.path.name

    @property
    def checks(self) -> list[str]:
        return [c for a in self.answers for c in a.checks]


def load_exercise(path: Path) -> Exercise:
    nb = nbformat.read(path, as_version=4)
    ex = Exercise(path, nb.cells)
    section = "ex0"
    seen: collections.Counter = collections.Counter()
    for i, cell in enumerate(nb.cells):
        if cell.cell_type == "markdown":
            section = section_of(cell.source) or section
            continue
        # a probe: how to read answers that live inside a function or class
        hints = cell.metadata.get("workbook", {})
        names = list(hints.get("checks", [])) or (
            answer_names(cell.source) if cell.cell_type == "code" else []
        )
        if names:
            ids = []
            for n in names:
                seen[f"{section}/{n}"] += 1
                k = seen[f"{section}/{n}"]
                ids.append(f"{section}/{n}" + (f"#{k}" if k > 1 else ""))
            ex.answers.append(
                AnswerCell(
                    i,
                    cell.get("id"),
                    section,
                    names,
                    hints.get("probe"),
                    cell.source,
                    stub_source(cell.source),
                    ids,
                    hints.get("facts"),
                )
            )
    return ex


def section_of(markdown: str) -> str | None:
    """The section a markdown cell starts: "# Exercise 2: ..." or "## 2. ..." starts ``ex2`` (the
    checks that follow are ex2/...); None for any other cell."""
    m = re.match(r"#+\s*(?:Exercise\s*)?(\d+)[.:]", markdown.lstrip())
    return f"ex{m.group(1)}" if m else None


class Unreadable(Exception):
    pass


def learner_cells(ex: Exercise, path: Path) -> dict[int, str | None]:
    """For each answer cell of the exercise, the learner's cell source (None when it is gone)."""
    try:
        nb = nbformat.read(path, as_version=4)
    except Exception as exc:  # invalid JSON, not a notebook, unreadable file
        raise Unreadable(
            f"not a readable notebook ({type(exc).__name__}: {str(exc)[:200]})"
        ) from None
    code = [c for c in nb.cells if c.get("cell_type") == "code"]
    by_id = {c.get("id"): c for c in code if c.get("id")}
    found: dict[int, str | None] = {}
    for ans in ex.answers:
        cell = by_id.get(ans.cell_id) if ans.cell_id else None
        if cell is None:
            cell = _match_by_content(ans, code)
        found[ans.index] = cell.source if cell is not None else None
    for index, extra in _added_cells(ex, _graded(ex, nb.cells), found).items():
        found[index] = "\n\n".join(extra)
    matched = sum(v is not None for v in found.values())
    if ex.answers and matched < max(1, len(ex.answers) // 3):
        raise Unreadable(
            f"does not look like {ex.name}: only {matched} of its {len(ex.answers)} answer cells "
            "are there"
        )
    return found


def hints_shown(ex: Exercise, path: Path) -> dict[str, str]:
    """Check id -> the hints the submitted notebook shows were used for it
    (``checks.grading.hintlog``: self-reported, a floor), for the rows' ``hints`` column: "2/3"
    (rungs shown of the ladder's) or "revealed" (the solution lines shown). The hints of a drill
    run in the notebook (``checks.drill``: its own tensors, named like the notebook's) are not."""
    try:
        records = hint_records(nbformat.read(path, as_version=4))
    except Exception:  # unreadable: the rows say so already
        return {}
    said = {}
    for a in ex.answers:
        cmp_name = {m.group(3): m.group(2) for m in CMP.finditer(a.template)}
        for check, var in zip(a.checks, a.names, strict=False):
            mine = [
                r
                for r in records
                if r.answer == var
                and r.check in ("", cmp_name.get(var, r.check))
                and r.notebook != DRILL  # a drill's dW1 is not the notebook's
            ]
            if any(r.reveal for r in mine):
                said[check] = "revealed"
            elif rungs := [r for r in mine if r.rung]:
                top = max(rungs, key=lambda r: r.rung)
                said[check] = f"{top.rung}/{top.of}"
    return said


def _graded(ex: Exercise, cells: list) -> list:
    """The learner's code cells, less those in a section of the notebook that holds no answer (an
    optional exercise, never graded): a cell of their own there joins no answer."""
    answered = {a.exercise for a in ex.answers}
    section, code = "ex0", []
    for cell in cells:
        if cell.get("cell_type") == "markdown":
            section = section_of(cell.get("source", "")) or section
        elif cell.get("cell_type") == "code" and (section in answered or not answered):
            code.append(cell)
    return code


def _added_cells(ex: Exercise, code: list, found: dict[int, str | None]) -> dict[int, list[str]]:
    """The answer cells with the code cells the learner added around them (an answer split over
    several cells, a scratch cell), in notebook order: each added cell joins the answer whose names
    it assigns, else the answer before it (else the one after). A cell of the instructor's, edited
    or not (known by its id or its text), joins none."""
    ids = {c.get("id") for c in ex.cells if c.get("id")}
    texts = {c.source.strip() for c in ex.cells if c.cell_type == "code"}
    texts |= {a.template.strip() for a in ex.answers}
    by_source = {src: i for i, src in found.items() if src is not None}
    owners: dict[int, list[int]] = {}  # answer cell -> the learner's code cells that make it up
    before, pending = None, []  # the answer cell last seen; added cells before any
    for k, cell in enumerate(code):
        if cell.source in by_source:
            before = by_source[cell.source]
            owners.setdefault(before, []).extend([*pending, k])
            pending = []
        elif cell.get("id") not in ids and cell.source.strip() not in texts | {""}:
            owner = _owner(cell.source, ex, found)
            owner = before if owner is None else owner
            if owner is None:
                pending.append(k)
            else:
                owners.setdefault(owner, []).append(k)
    return {i: [code[k].source for k in sorted(ks)] for i, ks in owners.items() if len(ks) > 1}


def _owner(source: str, ex: Exercise, found: dict[int, str | None]) -> int | None:
    """The answer cell (found in the learner's notebook) whose names ``source`` assigns."""
    try:
        tree = parse(source)
    except SyntaxError:
        return None
    stored = {
        n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)
    }
    hits = [a.index for a in ex.answers if found.get(a.index) is not None and stored & set(a.names)]
    return hits[0] if len(hits) == 1 else None


def _match_by_content(ans: AnswerCell, code: list) -> nbformat.NotebookNode | None:
    """The learner cell that keeps the template's fixed lines (its checks), best overlap first."""
    fixed = {
        ln.strip() for ln in ans.template.split("\n") if ln.strip() and "= ...  # TODO" not in ln
    }
    if not fixed:
        return None
    best, score = None, 0.0
    for cell in code:
        lines = {ln.strip() for ln in cell.source.split("\n") if ln.strip()}
        s = len(fixed & lines) / len(fixed)
        if s > score:
            best, score = cell, s
    return best if score >= 0.5 else None


def find_notebooks(submission: Path) -> list[Path]:
    if submission.is_dir():
        return sorted(p for p in submission.rglob("*.ipynb") if ".ipynb_checkpoints" not in p.parts)
    return [submission]


def link_problem(nb: Path, root: Path) -> str | None:
    """Why a submission's notebook is refused unread, if it is: it is a symbolic link, lies below
    one inside the submission folder ``root``, or resolves outside ``root`` (the grader would read
    what the link points at: a solution, another learner's work)."""
    top = root.parent if root == nb else root
    here = nb
    while here != top and here.parent != here:  # the folder given is the instructor's: trusted
        if here.is_symlink():
            what = "is" if here == nb else f"lies in {here.name}, which is"
            return f"not graded: the notebook {what} a symbolic link; hand in the file itself"
        here = here.parent
    try:
        nb.resolve().relative_to(top.resolve())
    except (ValueError, OSError):
        return "not graded: the notebook resolves outside its submission folder"
    return None


def course(solutions: Path) -> tuple[dict[str, Exercise], dict[str, Exercise]]:
    """The solution notebooks in ``solutions`` by name: the exercises (answers to grade), and
    the practice (none: 06's drills), whose copy in a submission is passed over."""
    loaded = {p.name: load_exercise(p) for p in sorted(solutions.glob("*.ipynb"))}
    exercises = {name: ex for name, ex in loaded.items() if ex.answers}
    return exercises, {name: ex for name, ex in loaded.items() if not ex.answers}


def exercise_for(path: Path, exercises: dict[str, Exercise]) -> Exercise | None:
    """The exercise a notebook is a copy of: by its name, by its number ("03-..."), or else by the
    ids of its cells (a renamed or duplicated copy keeps them)."""
    if path.name in exercises:
        return exercises[path.name]
    stem = path.stem.split("-")[0]
    hits = [e for n, e in exercises.items() if n.split("-")[0] == stem]
    if len(hits) == 1:
        return hits[0]
    try:
        ids = {c.get("id") for c in json.loads(path.read_text()).get("cells", [])} - {None}
    except (OSError, ValueError, AttributeError):
        return None
    shared = {n: len(ids & {a.cell_id for a in e.answers}) for n, e in exercises.items()}
    best = max(shared, key=shared.get, default=None)
    if best is None or shared[best] < max(1, len(exercises[best].answers) // 3):
        return None
    return exercises[best]
