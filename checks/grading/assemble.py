"""Stage 2, assembling: the grading notebook of one run, the instructor's cells with the learner's
answer cells in place of the solutions and the grader's cells around them.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

import nbformat
import torch

from checks.grading import recorder
from checks.grading.exercise import AnswerCell, Exercise
from checks.grading.facts import targets
from checks.parsing import parse

PRELUDE = """
import checks.grading.recorder as __gr
__grade_try, __grade_op, __grade_draw, __grade_seed = __gr.attempt, __gr.op, __gr.draw, __gr.seed()
__grade_values_of, __grade_fresh, __grade_normed = __gr.values_of, __gr.fresh, __gr.normed
__grade_rms_normed = __gr.rms_normed
__gr.settle()
import checks.grading.outputs as __go
__go.cap()
del __go
"""
# in a learner's run only: the reference run's calls are the instructor's
WATCH = "__gr.watch_autograd()"


@dataclass
class Plan:
    """A grading notebook and what its code cells are for (by position among the code cells)."""

    nb: nbformat.NotebookNode
    # per cell: the checks of a learner's cell, "grader", or "" (the instructor's)
    concerns: list[str]
    # a grader cell -> the checks it records
    records: dict[int, list[str]] = field(default_factory=dict)
    # reference run: a cell -> the answer cell it precedes
    states: dict[int, int] = field(default_factory=dict)
    # a cell running learner code -> its checks
    learner: dict[int, list[str]] = field(default_factory=dict)


def record_cell(cell: AnswerCell, facts: bool = False) -> str:
    """The grader cell after an answer cell: send the learner's values out of the kernel.

    With ``facts`` (the reference run) it also sends what the graph says about each checked tensor
    (``checks.grading.facts``), so that the grader's diagnosis reads what the notebook's ``cmp``
    reads."""
    if cell.probe:
        grab = (
            f"try:\n    __vals = {cell.probe}\nexcept BaseException as __e:\n"
            f"    __vals = dict.fromkeys({cell.names!r}, __gr.raised(__e))"
        )
    else:
        grab = f"__vals = __grade_values_of({cell.names!r}, globals())"
    values = f"{{c: __vals.get(n, __gr.DELETED) for c, n in zip({cell.checks!r}, {cell.names!r})}}"
    by_check = _facts_expression(cell) if facts else None  # {check id: facts}, in the kernel
    # a function's answers, once recorded: its call counted again (informational, never a grade)
    cost = (
        f"\nimport checks.grading.probecost as __pc\n__pc.send({cell.probe!r}, globals())"
        if cell.probe
        else ""
    )
    if by_check:
        return (
            f"{grab}\nimport checks.grading.facts as __cf\n"
            f"__gr.record({values}, facts={by_check}){cost}"
        )
    return f"{grab}\n__gr.record({values})\n__gr.check_grads(globals()){cost}"


def _facts_expression(cell: AnswerCell) -> str | None:
    """Kernel code for the graph facts of the cell's checks, by check id: the instructor's own
    expression (``{name: facts}``, for answers inside a class), or else one
    ``checks.grading.facts.collect`` of the tensors the cell's ``cmp`` calls name."""
    if cell.facts:
        ids = dict(zip(cell.names, cell.checks, strict=True))
        return f"{{{ids!r}[n]: f for n, f in ({cell.facts}).items()}}"
    found = targets(cell.solution)
    wanted = {c: found[n] for c, n in zip(cell.checks, cell.names, strict=True) if n in found}
    return f"__cf.collect({wanted!r}, globals())" if wanted and not cell.probe else None


def _wipes_after(cell: nbformat.NotebookNode) -> bool:
    return cell.cell_type == "code" and ".backward(" in cell.source


# the reference values' keys for the state before an answer cell
STATE, NAMES = "state::", "names::"


def hand_ins(ex: Exercise, ref: dict) -> list[str]:
    """For each answer cell of a learner's run, the grader cell before it: the instructor's state
    at that point, less the names the answer cell must assign, and of the earlier answers only
    those the instructor's cell reads (exercise 1's answers are not handed in before exercise 2's
    fused ones). Each cell carries only what the kernel has not been given before (the kernel
    keeps the rest, ``checks.grading.recorder``)."""
    answers = sorted({n for a in ex.answers for n in a.names})
    given: dict[str, object] = {}
    cells = []
    for k, ans in enumerate(ex.answers):
        now = ref.get(STATE + str(k), {})
        solution, template = names_read(ans.solution), names_read(ans.template)
        reads = None if solution is None or template is None else solution | template
        names = [
            n
            for n in ref.get(NAMES + str(k), [])
            if n not in ans.names and (n not in answers or reads is None or n in reads)
        ]
        delta = {n: now[n] for n in names if not same_value(given.get(n, UNSET), now[n])}
        given.update(delta)
        # an answer left over from an earlier cell earns nothing here
        drop = [] if ans.probe else ans.names
        cells.append(
            f"__gr.restore(globals(), {recorder.pack(delta)!r},\n"
            f"            {names!r}, {answers!r}, {drop!r})"
        )
    return cells


UNSET = object()


def names_read(source: str) -> set[str] | None:
    """The names a cell reads (loaded anywhere in it); None where it cannot be parsed."""
    code = "\n".join("" if ln.lstrip().startswith(("%", "!")) else ln for ln in source.split("\n"))
    try:
        tree = parse(code)
    except SyntaxError:
        return None
    return {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}


def same_value(a: object, b: object) -> bool:
    if isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor):
        return (
            a.shape == b.shape
            and a.dtype == b.dtype
            and a.requires_grad == b.requires_grad
            and torch.equal(a, b)
        )
    return type(a) is type(b) and a == b


def assemble(ex: Exercise, learner: dict[int, str | None] | None, ref: dict | None = None) -> Plan:
    """The grading notebook: with ``learner`` None the reference run of the instructor's notebook
    (which also sends its state before each answer cell); else a learner's run, whose answer cells
    come from ``learner`` and get the reference's state (``ref``) handed in before them. A learner's
    run holds no solution code, and no expected value before its answer has been recorded."""
    by_index = {a.index: k for k, a in enumerate(ex.answers)}
    given = hand_ins(ex, ref or {}) if learner is not None else []
    plan = Plan(nbformat.v4.new_notebook(), [])

    def add(source: str, concern: str = "grader") -> int:
        plan.nb.cells.append(nbformat.v4.new_code_cell(source))
        plan.concerns.append(concern)
        return len(plan.nb.cells) - 1

    add(PRELUDE.strip() + ("\n" + WATCH if learner is not None else ""))
    for i, cell in enumerate(ex.cells):
        if cell.cell_type != "code":
            continue
        k = by_index.get(i)
        if k is None:
            add(cell.source, "")
            if _wipes_after(cell) and learner is not None:  # the reference run keeps its graph
                add("__gr.wipe()")
            continue
        ans = ex.answers[k]
        checks = ans.checks
        if learner is None:
            plan.states[add("__gr.emit_state(globals())")] = k
            add(cell.source, ",".join(checks))
            plan.records[add(record_cell(ans, facts=True))] = checks
            continue
        source = learner.get(i)
        add(given[k])
        if source is None:
            plan.records[add(f"__gr.record(dict.fromkeys({checks!r}, __gr.DELETED))")] = checks
            continue
        plan.learner[add(source, ",".join(checks))] = checks
        at = add(record_cell(ans))
        plan.records[at] = checks
        plan.learner[at] = checks  # a probe runs the learner's functions here
    # the cells after the last record (the training sections, the summary, a wipe after them)
    # check nothing: not run, so that they cost no grading time and a learner's loop in them none
    end = max(plan.records, default=0) + 1
    del plan.nb.cells[end:], plan.concerns[end:]
    plan.nb.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    return plan
