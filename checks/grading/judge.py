"""Stage 4, judging: each recorded answer compared with the reference run's expected value, by
``checks``' own comparison, into the grader's rows; a passed answer of a learner's function with
what its call cost beside the solution's (informational, never a grade).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field, replace

import torch

from checks.compare import answer, guarded, judge, with_source
from checks.cost import size_said
from checks.diagnose import Context
from checks.grading.assemble import STATE
from checks.grading.exercise import AnswerCell, Exercise
from checks.grading.facts import apply
from checks.grading.novalue import DELETED, ERROR_KIND, MISSING, NoValue
from checks.grading.rows import Row
from checks.grading.run import Run
from checks.grading.settings import COST, FACTS, Settings
from checks.verdict import Note, Result
from checks.words import REVIEW


def _stopped_in(run: Run, concerns: list[str]) -> str:
    """Where a run that ended early stopped: the first cell it did not see finish."""
    left = [k for k in range(len(concerns)) if k not in run.reached]
    if not left or not run.reached:
        return ""
    k = left[0]
    if concerns[k] == "grader":
        return f", in a grader cell (cell {k})"
    if concerns[k]:
        return f", in your cell of {', '.join(concerns[k].split(','))}"
    return f", in the notebook's cell {k}"


def judge_values(
    ex: Exercise,
    ref: dict,
    run: Run,
    concerns: list[str],
    settings: Settings,
    sources: dict[str, str] | None = None,
    reviews: dict[str, str] | None = None,
) -> list[Row]:
    """One row per check of ``ex``: the learner's recorded value judged against the reference,
    with the learner's cell source (``sources``, by check) for what only the code can tell."""
    j = _Judging(ex, ref, run, concerns, settings, sources or {}, reviews or {})
    rows = [_costed(_row_of(j, check), run.values, ref) for check in ex.checks]
    return [_held(r, j.reviews.get(r.check)) for r in rows]


def _costed(row: Row, mine: dict, ref: dict) -> Row:
    """``row`` with what the call that gave its answer cost, where it passed and a probe counted
    it: "56 ops, 563.6 kB (the solution's: 48 ops, 296.7 kB)"."""
    cost, theirs = mine.get(COST + row.check), ref.get(COST + row.check)
    if not row.passed or not isinstance(cost, dict) or not cost.get("ops"):
        return row
    said = _cost_said(cost)
    if isinstance(theirs, dict) and theirs.get("ops"):
        said += f" (the solution's: {_cost_said(theirs)})"
    return replace(row, cost=said)


def _cost_said(cost: dict) -> str:
    return f"{cost['ops']} ops, {size_said(cost['nbytes'])}"


@dataclass
class _Judging:
    """What every check of one run is judged with: the run, the reference, and where each check's
    answer is."""

    ex: Exercise
    ref: dict
    run: Run
    concerns: list[str]
    settings: Settings
    sources: dict[str, str]
    reviews: dict[str, str]
    cell_of: dict[str, int] = field(init=False)  # a check -> the grading notebook's cell of it
    fatal: int | None = field(init=False)  # the first cell whose kernel died
    answers: set[str] = field(init=False)  # the names the answer cells assign
    point: dict[str, int] = field(init=False)  # a check -> its answer cell (index in ex.answers)

    def __post_init__(self) -> None:
        self.cell_of = {}
        for i, c in enumerate(self.concerns):
            for check in filter(None, c.split(",")):
                self.cell_of.setdefault(check, i)
        self.fatal = min(
            (i for i, err in self.run.cell_errors.items() if err.startswith("the kernel")),
            default=None,
        )
        self.answers = {n for a in self.ex.answers for n in a.names}
        self.point = {c: k for k, a in enumerate(self.ex.answers) for c in a.checks}


def _row_of(j: _Judging, check: str) -> Row:
    """One check's row: the grader's own reason where no value can be compared, else the
    comparison's."""
    var = check.split("/", 1)[1].split("#")[0]
    e, y = j.ref.get(check), j.run.values.get(check)
    at = j.cell_of.get(check, -1)
    cell_error = j.run.cell_errors.get(at)
    kind = y.kind if isinstance(y, NoValue) else None  # an answer recorded without a value
    usable = isinstance(y, torch.Tensor) or kind == MISSING.kind
    if not isinstance(e, torch.Tensor):
        return check_row(
            check,
            False,
            "",
            "the reference run recorded no value (an instructor-side problem)",
        )
    if not usable and cell_error:
        return check_row(check, False, "", cell_error)
    if kind == DELETED.kind:
        return check_row(
            check,
            False,
            "missing",
            f"{var} is not defined: its answer cell is missing or no longer assigns it",
        )
    if y is None:
        return check_row(check, False, "", _not_recorded(j, at))
    if kind == ERROR_KIND:
        return _raised_row(check, var, y.type)
    if kind not in (None, MISSING.kind):  # a value that is no tensor
        return check_row(check, False, "wrong", f"{var} is not a tensor ({y.type})")
    return _compared_row(j, check, var, y, e, cell_error)


def _not_recorded(j: _Judging, at: int) -> str:
    """Why the answer of the grading notebook's cell ``at`` was not recorded."""
    if j.fatal is not None and at > j.fatal:
        return (
            "not reached: the kernel stopped in an earlier cell "
            f"({j.concerns[j.fatal] or 'cell ' + str(j.fatal)})"
        )
    if j.run.fault:
        return j.run.fault + _stopped_in(j.run, j.concerns)
    return "the answer was not recorded (the notebook stopped, or interfered with the grader)"


def _raised_row(check: str, var: str, what: str) -> Row:
    """The row of an answer whose computation raised ``what`` (an exception's type): missing
    where it is not written yet, else wrong."""
    word = "missing" if what == "NotWritten" else "wrong"
    return check_row(
        check,
        False,
        word,
        f"computing {var} raised {what}" + (" (not written yet)" if word == "missing" else ""),
    )


def _compared_row(
    j: _Judging, check: str, var: str, y: object, e: torch.Tensor, cell_error: str | None
) -> Row:
    """The row of a recorded answer (or of a missing one, ``y`` ``MISSING``),
    compared with the expected value as the notebook's ``cmp`` compares it."""
    k = j.point[check]
    why = j.reviews.get(check) or handed_back(y, e, j.ref, k, j.answers)
    state = j.ref.get(STATE + str(k), {})
    res = judge_one(
        check,
        var,
        ... if isinstance(y, NoValue) else y,
        e,
        j.settings,
        j.sources.get(check),
        cell_error,
        j.ref.get(FACTS + check),
        j.answers,
        why,
        *_sizes(j.ex.answers[k], state),
        tensors=_forward(state, j.answers),
    )
    return _review_row(check, why, res) if why and res.ok else Row(check=check, **res.row())


def _held(row: Row, why: str | None) -> Row:
    """A row whose cell needs a look (``source_reviews``) is ``review`` whatever its value did: a
    copy of ``.grad`` refused, a cell error; the note says what the value did, never the expected
    value."""
    if not why or row.mistake == REVIEW:
        return row
    said = f"the value does not match ({row.mistake})" if row.mistake else row.feedback
    held = check_row(
        row.check, False, REVIEW, f"{why}: not credited until an instructor has looked"
    )
    return replace(held, note=said)


def _forward(state: dict, answers: set[str]) -> dict[str, torch.Tensor]:
    """The instructor's forward tensors before an answer cell (no answers), as ``cmp`` sees the
    notebook's: for a factor of the formula missing or one too many."""
    return {
        k: v
        for k, v in state.items()
        if isinstance(v, torch.Tensor) and k not in answers and v.is_floating_point()
    }


def _sizes(ans: AnswerCell, state: dict) -> tuple[list[int], list[int]]:
    """What the notebook's ``cmp`` reads besides the tensors, from the instructor's state before
    an answer cell: the attention head sizes (``head_size``, ``hs``) and the sizes the cell's
    ``cmp`` calls pass as ``n=NAME`` (notebook 05's ``n=C``, the numbers a layer norm's mean is
    over)."""
    names = re.findall(r"\bcmp\(.*?\bn\s*=\s*([A-Za-z_]\w*)", ans.template)

    def sizes(values: Iterable[object]) -> list[int]:
        return sorted({v for v in values if type(v) is int and v > 1})

    return sizes(state.get(k) for k in ("head_size", "hs")), sizes(state.get(n) for n in names)


def handed_back(y: object, e: torch.Tensor, ref: dict, k: int, answers: set[str]) -> str | None:
    """Why an answer is the very tensor the grader handed the notebook before answer cell ``k`` as
    an earlier answer (kept from an earlier cell, where the expected value differs from it bit for
    bit); else None. The notebook's own forward tensors do not count: an answer that recomputes
    one (notebook 05's probabilities, inside ``attention_backward``) may match it bit for bit."""
    if not isinstance(y, torch.Tensor) or y.numel() < 16:
        return None
    for j in range(k + 1):
        for name, t in ref.get(STATE + str(j), {}).items():
            if (
                name in answers
                and isinstance(t, torch.Tensor)
                and t.shape == y.shape
                and t.dtype == y.dtype
                and torch.equal(t.detach(), y)
                and not (t.shape == e.shape and torch.equal(t.detach(), e))
            ):
                return (
                    f"the answer is, bit for bit, the `{name}` the grader handed the notebook "
                    "before this cell: compute it in this cell"
                )
    return None


def _review_row(check: str, why: str, res: Result) -> Row:
    """A row not credited until an instructor has looked: why, and what the comparison said."""
    said = "the value matches" if res.ok else f"the value does not match ({res.mistake or 'wrong'})"
    reason = f"{why}: not credited until an instructor has looked at it"
    return replace(check_row(check, False, REVIEW, reason), note=said)


def judge_one(
    check: str,
    var: str,
    y: object,
    e: torch.Tensor,
    settings: Settings,
    code: str | None = None,
    cell_error: str | None = None,
    facts: dict | None = None,
    answers: set[str] | None = None,
    review: str | None = None,
    head_sizes: list[int] | None = None,
    sizes: list[int] | None = None,
    *,
    tensors: dict[str, torch.Tensor] | None = None,
) -> Result:
    """The learner's value judged as the notebook's ``cmp`` judges it: the same comparison, words
    and hints, with the graph's facts from the reference run (``facts``) in place of the graph,
    and the notebook's attention head sizes (``head_sizes``) where ``cmp`` reads its globals, and
    the sizes its ``cmp`` calls pass as ``n=`` (``sizes``: layer norm's C, for a Bessel slip)."""
    name = var[1:] if var.startswith("d") and len(var) > 1 else var  # dC is the gradient of C
    value = name == var  # not a dX: a value (AdamW's p_new, a Value's grad), judged as such
    source = "the instructor's solution" if value else "autograd"
    ctx = Context(
        name,
        batch_sizes=[settings.batch, *(s for s in sizes or [] if s != settings.batch)],
        head_sizes=list(head_sizes or []),
        tensors=(lambda: tensors) if tensors else None,
        value=value,
        source=source,
        strict_shapes=settings.strict_shapes,
        answer_label=var,
    )

    def check() -> Result:
        nonlocal ctx
        expected = torch.as_tensor(e)
        try:
            ctx = apply(ctx, facts if isinstance(facts, dict) else None)
        except Exception:  # facts of another version of the grader: judge without them
            ctx.paths = ctx.terms = ctx.index_uses = ctx.scale = ctx.swaps = None
            ctx.local = ctx.transposed = ctx.slips = ctx.broadcast = ctx.elementwise = None
            ctx.instead = ctx.misplaced = None
        ctx = with_source(ctx, code, var, answers) if not value else ctx
        yt, notes = answer(name, y, expected, label=var)
        ctx.notes = notes + ctx.notes
        if review:  # a pass becomes a row for review (``_review_row``); a fail says it in the note
            ctx.fail_notes.append(Note("review", review))
        if cell_error:
            ctx.fail_notes.append(Note("cell-error", f"the cell also raised: {cell_error}"))
        return judge(name, yt, expected, ctx)

    return guarded(name, var, check)


def check_row(check: str, passed: bool, mistake: str, reason: str) -> Row:
    """A row that no comparison made: the grader's own reason, which states no expected value, is
    the learner's feedback too."""
    return Row(check=check, passed=passed, mistake=mistake, reason=reason, feedback=reason)
