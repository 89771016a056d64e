"""One check's outcome as data, and its three renderings: plain text, HTML and the grader's row.

A :class:`Result` is built once, by the comparison, from parts: the state (pass, pass with a
note, upstream, fail, not written yet), the mistake word, the hint sentence, the worst element
and the notes. Nothing edits a message after it is built: every rendering reads the same parts
(``torch.testing``'s ``ErrorMeta`` is the model). In hints and notes, text between backticks is
code: HTML shows it as ``<code>``, plain text keeps the backticks.

The colours, the escaping and the numbers come from :mod:`checks.render.html` (re-exported here
for the code that reads them from this module); :func:`show` prints or publishes one result.
This module sits just above the render helpers and :mod:`checks.kernel`, below every check: it
imports none of them (the heatmap under a failing answer is imported when drawn, so that no torch
is needed to import a Result).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from checks import kernel
from checks.paths import METADATA
from checks.render.html import COLOURS, FAIL, NOTE, PASS, TINT, TODO, UPSTREAM, bold, code_html, esc
from checks.render.html import num as _num

# the colours and ``code_html`` are read from here too (``from checks.verdict import PASS``)
__all__ = [
    "COLOURS",
    "FAIL",
    "NOTE",
    "PASS",
    "TINT",
    "TODO",
    "UPSTREAM",
    "Note",
    "Result",
    "Worst",
    "CHECKED",
    "checked",
    "code_html",
    "show",
]

# the key of a shown result's output metadata under METADATA: the name it checks, so that an
# executed notebook says which checks it ran (checks.session.shown_checks) without reading text
CHECKED = "checked"


@dataclass(frozen=True)
class Note:
    """Something worth knowing about an answer that is not its mistake: ``word`` names it."""

    word: str
    text: str


@dataclass(frozen=True)
class Worst:
    """The element that differs most, and how many differ."""

    index: tuple[int, ...]
    yours: float
    expected: float
    absdiff: float
    mismatched: int
    total: int
    source: str  # where the expected value comes from: "autograd", "central difference", ...
    # central differences: which input of the function (minitorch's style)
    argument: int | None = None

    def sentence(self) -> str:
        y, e = _num(self.yours), _num(self.expected)
        if self.argument is not None:  # minitorch's words
            got = f"received derivative {y} for argument {self.argument}"
            if self.total == 1:
                return f"{got}, but expected {e} from {self.source}."
            return (
                f"{got} at index {self.index}, but expected {e} from {self.source} "
                f"({self.mismatched} / {self.total} elements differ)."
            )
        if self.total == 1:
            return f"yours {y}, expected {e} from {self.source}."
        pct = 100.0 * self.mismatched / self.total
        return (
            f"Mismatched elements: {self.mismatched} / {self.total} ({pct:.1f}%), greatest "
            f"absolute difference {_num(self.absdiff)} at index {self.index}: yours {y}, "
            f"expected {e} from {self.source}."
        )

    def located(self) -> str | None:
        """How many elements differ and where the worst one is, with no number of either tensor:
        what a graded learner may read of it. None for a single number (nothing to locate)."""
        if self.total == 1:
            return None
        if self.argument is not None:
            return (
                f"for argument {self.argument}, {self.mismatched} / {self.total} elements differ, "
                f"the greatest difference at index {self.index}."
            )
        pct = 100.0 * self.mismatched / self.total
        return (
            f"Mismatched elements: {self.mismatched} / {self.total} ({pct:.1f}%), the greatest "
            f"difference at index {self.index}."
        )


@dataclass(kw_only=True)
class Result:
    """The outcome of one check. ``bool(result)`` is ``result.ok``.

    ``mistake`` is one word of ``checks.MISTAKES`` (None for a pass), ``hint`` one sentence that
    says what is wrong and what to do, ``notes`` what else the learner should know (a dropped
    size-1 axis that still broadcasts, a conversion, an alias), ``worst`` the worst element.
    """

    name: str
    ok: bool
    exact: bool
    maxdiff: float | None
    mistake: str | None = None
    hint: str | None = None
    notes: tuple[Note, ...] = ()
    worst: Worst | None = None
    missing_uses: tuple[str, ...] = ()  # a missing-path: the uses whose contributions are left out
    # (yours, expected)
    compared: tuple[Any, Any] | None = field(default=None, repr=False, compare=False)
    _shown_in: int | None = field(default=None, repr=False, compare=False)
    blamed: tuple[str, ...] = ()  # an upstream: the first wrong answers it was built on

    def __bool__(self) -> bool:
        return self.ok

    @property
    def state(self) -> str:
        """ "pass", "note" (a pass with something to fix), "upstream" (right given a wrong earlier
        answer), "missing" (not written yet) or "fail"."""
        if self.ok:
            return "note" if self.notes else "pass"
        return self.mistake if self.mistake in ("upstream", "missing") else "fail"

    @property
    def status(self) -> str:
        return "pass" if self.ok else (self.mistake or "fail")

    # -- the parts, for code that reads them
    @property
    def where(self) -> str | None:
        """The worst element in a sentence: yours, the expected value and where it comes from."""
        return self.worst.sentence() if self.worst is not None else None

    @property
    def feedback(self) -> str:
        """What a graded learner may read of a fail: the hint and where the worst element is
        (``Worst.located``), never an expected value (hints state none); "" for a pass."""
        if self.ok:
            return ""
        return " ".join(p for p in (self.hint, self.worst.located() if self.worst else None) if p)

    @property
    def note(self) -> str | None:
        return "; ".join(n.text for n in self.notes) or None

    # the worst element's parts, None without one: res.index, res.yours, res.expected, ...
    index = property(lambda self: _of_worst(self, "index"))
    yours = property(lambda self: _of_worst(self, "yours"))
    expected = property(lambda self: _of_worst(self, "expected"))
    mismatched = property(lambda self: _of_worst(self, "mismatched"))
    total = property(lambda self: _of_worst(self, "total"))

    # -- renderings
    def line(self) -> str:
        """The lecture's one-line report."""
        return (
            f"{self.name:15s} | exact: {str(self.exact):5s} | approximate: {str(self.ok):5s} "
            f"| maxdiff: {self.maxdiff}"
        )

    def report(self) -> str:
        """Plain text: the lecture's line, then the mistake and the worst element, or the notes."""
        return "\n".join([self.line(), *(mark + body for mark, body, _ in self._details())])

    __str__ = report

    def html(self) -> str:
        """The same lines for Jupyter, with a coloured bar and symbol, and code shown as code."""
        colour = COLOURS[self.state]
        symbol = "✓" if self.ok else "✗"
        lines = [f"<div>{bold(colour, symbol)} {_esc(self.line())}</div>"]
        for mark, body, indent in self._details():
            head = bold(colour, _esc(mark)) if mark.strip() else _esc(mark)
            lines.append(
                f"<div style='padding-left:{len(indent)}ch;text-indent:-{len(indent)}ch'>"
                f"{head}{code_html(body)}</div>"
            )
        style = (
            f"margin:0;padding:1px 6px;border-left:4px solid {colour};"
            f"background:{TINT[colour]};font-family:monospace;white-space:pre-wrap;"
            "word-break:normal;overflow-wrap:anywhere"
        )
        kind = "pass" if self.ok else "fail"
        return (
            f"<div class='workbook-check workbook-{kind} workbook-{self.state}' "
            f"style='{style}'>" + "".join(lines) + "</div>" + self._picture()
        )

    def _picture(self) -> str:
        """A failing 1-D or 2-D answer: a heatmap of yours minus expected
        (``checks.render.heatmap``)."""
        if self.ok or self.compared is None:
            return ""
        try:
            from checks.render.heatmap import diff_html

            return diff_html(*self.compared, name=self.name) or ""
        except Exception:  # a picture is a help, never a reason to fail
            return ""

    def row(self) -> dict[str, Any]:
        """The grader's columns (``checks.grading.rows.Row``'s): passed (a bool), mistake, reason
        (hint and worst element), note, and feedback (the reason as the learner may read it)."""
        reason = "" if self.ok else " ".join(p for p in (self.hint, self.where) if p)
        return {
            "passed": self.ok,
            "mistake": self.mistake or "",
            "reason": reason,
            "note": "; ".join(f"{n.word}: {n.text}" for n in self.notes),
            "feedback": self.feedback,
        }

    def _details(self) -> list[tuple[str, str, str]]:
        """(mark, text, indent of its wrapped lines) for each line after the lecture's."""
        out = []
        if not self.ok:
            out.append((f"  ✗ {self.mistake or 'fail'}: ", self.hint or "", "    "))
            if self.where:
                out.append(("    ", self.where, "    "))
        for n in self.notes:
            out.append((f"  ! {n.word}: " if self.ok else f"    {n.word}: ", n.text, "    "))
        return out

    def _ipython_display_(self) -> None:
        # cmp() already showed this result in the current cell: do not echo it a second time.
        if self._shown_in is not None and self._shown_in == kernel.execution_count():
            return
        show(self)


def _of_worst(res: Result, part: str) -> Any:
    return getattr(res.worst, part) if res.worst is not None else None


def show(res: Result) -> None:
    """Print the report in a terminal; in Jupyter show it coloured, with the same plain text, and
    the check's name in the output's metadata (:func:`checked` reads it back)."""
    if kernel.in_notebook():
        from IPython.display import publish_display_data

        bundle = {"text/plain": res.report(), "text/html": res.html()}
        publish_display_data(bundle, metadata={METADATA: {CHECKED: res.name}})
    else:
        print(res.report())


def checked(output: dict) -> str | None:
    """The name of the check a saved notebook output shows (:func:`show` put it in its metadata),
    or None for any other output."""
    mark = (output.get("metadata") or {}).get(METADATA)
    name = mark.get(CHECKED) if isinstance(mark, dict) else None
    return name if isinstance(name, str) else None


def _esc(text: str) -> str:
    return esc(text, quote=False)
