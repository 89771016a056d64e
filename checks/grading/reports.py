"""The grader's reports of a class: ``grades.csv`` (a row per check), ``totals.csv`` (the points
per notebook, overrides applied) and ``report.md`` (the class at a glance, and who waits for
review).

The CSV files go through :func:`checks.grading.scores.write_csv` (no cell a spreadsheet would run as
a formula); every name and message in ``report.md`` through :func:`md_text` (no HTML or Markdown of
a learner's making: a folder named ``<img src=x onerror=...>`` is text, a ``|`` stays in its
cell)."""

from __future__ import annotations

import collections
import html
import re
from pathlib import Path
from typing import TYPE_CHECKING

from checks.grading.rows import FIELDS, Row
from checks.grading.scores import (
    Score,
    ScoresError,
    ensure_overrides,
    fmt_points,
    load_overrides,
    with_overrides,
    write_csv,
)
from checks.grading.scores import totals as points_of
from checks.words import ERROR, REVIEW

if TYPE_CHECKING:
    from checks.grading.settings import Settings
    from checks.grading.similarity import Similar

TOTALS = ["submission", "notebook", "passed", "checks", "points", "score"]
TOTALS_NUMERIC = ("passed", "checks", "points", "score")

# Markdown's inline punctuation that could make a name into emphasis, code, a link or a table
# border; & < > become entities (html.escape), so no tag of a learner's making is ever HTML
_MARKDOWN = re.compile(r"([\\`*_\[\]|~!#])")


def md_text(text: object, most: int | None = None) -> str:
    """``text`` as Markdown that renders as exactly that text, on one line (cut to ``most``
    characters), in a paragraph, a list or a table cell."""
    flat = " ".join(str(text).split())
    if most is not None and len(flat) > most:
        flat = flat[: most - 1] + "…"
    return html.escape(_MARKDOWN.sub(r"\\\1", flat), quote=False)


def write_reports(
    rows: list[Row],
    out: Path,
    ignored: list[str] | None = None,
    settings: Settings | None = None,
    similar: list[Similar] | None = None,
) -> None:
    """Write ``grades.csv``, ``totals.csv`` and ``report.md`` of ``rows`` into ``out`` (with the
    pairs of submissions of ``similar`` listed for review)."""
    # stable: checks stay in notebook order
    rows = sorted(rows, key=lambda r: (r.submission, r.notebook))
    write_csv(out / "grades.csv", FIELDS, [r.cells() for r in rows])
    try:  # the instructor's overrides: never written here but for an empty file with its header
        overrides, unread = load_overrides(ensure_overrides(out)), []
    except ScoresError as why:
        overrides, unread = [], [f"{why} (no override applied)"]
    scores, warnings = with_overrides(rows, overrides)
    write_csv(out / "totals.csv", TOTALS, _totals(rows, scores), TOTALS_NUMERIC)
    lines = _class_table(rows, settings) + _for_review(scores)
    warnings = unread + warnings
    if warnings:
        lines += ["", "## Overrides not applied", ""] + [f"- {md_text(w)}" for w in warnings]
    if ignored:
        lines += [
            "",
            "## Copies not graded",
            "",
            "A submission held several copies of one exercise; the one named like the exercise "
            "(else the first by name) was graded:",
            "",
        ] + [f"- {md_text(x)}" for x in ignored]
    lines += _similar(similar or [])
    (out / "report.md").write_text("\n".join(lines) + "\n", encoding="utf-8")


def _totals(rows: list[Row], scores: list[Score]) -> list[dict]:
    passed = collections.Counter((r.submission, r.notebook) for r in rows if r.passed)
    return [
        {
            "submission": s,
            "notebook": n,
            "passed": passed[(s, n)],
            "checks": f"{c:g}",
            "points": f"{p:g}",
            "score": f"{p / c:.3f}",
        }
        for (s, n), (p, c) in points_of(scores).items()
    ]


def _class_table(rows: list[Row], settings: Settings | None) -> list[str]:
    """The report's head: the settings, and per check how many passed and the common mistakes."""
    per_check: dict[tuple[str, str], list[Row]] = collections.OrderedDict()
    for r in sorted(rows, key=lambda r: r.notebook):
        per_check.setdefault((r.notebook, r.check), []).append(r)
    lines = ["# Class report", ""]
    if settings is not None:
        lines += [
            f"Graded with seed {settings.seed}, batch {settings.batch}, {settings.steps} training "
            f"steps (`--seed {settings.seed} --batch {settings.batch} --steps {settings.steps}` "
            "reproduces it).",
            "",
        ]
    lines += ["| notebook | check | passed | most common mistakes |", "|---|---|---|---|"]
    for (nb, check), rs in per_check.items():
        words = collections.Counter(r.mistake or ERROR for r in rs if not r.passed)
        common = ", ".join(f"{md_text(w)} ({k})" for w, k in words.most_common(3))
        passed = sum(r.passed for r in rs)
        lines.append(f"| {md_text(nb)} | {md_text(check)} | {passed} / {len(rs)} | {common} |")
    return lines


def _for_review(scores: list[Score]) -> list[str]:
    """The section that lists, learner by learner, every row waiting for review, with why and
    whether an override already settles it."""
    waiting = [s for s in scores if s.mistake == REVIEW]
    if not waiting:
        return []
    people = sorted({s.submission for s in waiting})
    lines = [
        "",
        "## For review",
        "",
        f"{len(waiting)} row{'s' if len(waiting) != 1 else ''} of {len(people)} "
        f"learner{'s' if len(people) != 1 else ''} not credited until you have looked at "
        "them (mistake `review`); a line in `overrides.csv` gives the points.",
    ]
    for who in people:
        mine = [s for s in waiting if s.submission == who]
        lines += ["", f"### {md_text(who)}", "", "| notebook | check | why | override |"]
        lines.append("|---|---|---|---|")
        for s in mine:
            given = fmt_points(s.points) if s.overridden else ""
            why = md_text(s.reason.split(": not credited until")[0], 300)
            nb = md_text(s.notebook.removesuffix(".ipynb"))
            lines.append(f"| {nb} | {md_text(s.check)} | {why} | {given} |")
    return lines


def _similar(pairs: list[Similar]) -> list[str]:
    """The section that lists the pairs of submissions with uncommon answers in common
    (:mod:`checks.grading.similarity`): for a look side by side, no grade changed."""
    if not pairs:
        return []
    lines = [
        "",
        "## Similar answers",
        "",
        "These pairs of submissions wrote the same uncommon code (names and layout set aside) in "
        "several answer cells. Look at them side by side: similar is not copied, and no grade "
        "was changed.",
        "",
        "| notebook | submissions | cells in common | checks of those cells |",
        "|---|---|---|---|",
    ]
    for p in pairs:
        nb = md_text(p.notebook.removesuffix(".ipynb"))
        who = f"{md_text(p.first)} and {md_text(p.second)}"
        cells = f"{p.shared} of {p.both_wrote}"
        lines.append(f"| {nb} | {who} | {cells} | {md_text(', '.join(p.checks), 300)} |")
    return lines
