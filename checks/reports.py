"""The grader's reports of a class: ``grades.csv`` (a row per check), ``totals.csv`` (the points
per notebook, overrides applied) and ``report.md`` (the class at a glance)."""

from __future__ import annotations

import collections
import csv
from pathlib import Path
from typing import TYPE_CHECKING

from checks.scores import ScoresError, ensure_overrides, load_overrides, with_overrides
from checks.scores import totals as points_of

if TYPE_CHECKING:
    from checks.grade import Settings

FIELDS = ["submission", "notebook", "check", "passed", "mistake", "reason", "note", "feedback"]


def write_reports(
    rows: list[dict], out: Path, ignored: list[str] | None = None, settings: Settings | None = None
) -> None:
    rows = sorted(
        rows, key=lambda r: (r["submission"], r["notebook"])
    )  # stable: checks stay in notebook order
    _write_csv(out / "grades.csv", FIELDS, rows)
    try:  # the instructor's overrides: never written here but for an empty file with its header
        overrides, unread = load_overrides(ensure_overrides(out)), []
    except ScoresError as why:
        overrides, unread = [], [f"{why} (no override applied)"]
    scores, warnings = with_overrides(rows, overrides)
    warnings = unread + warnings
    passed = collections.Counter(
        (r["submission"], r["notebook"]) for r in rows if r["passed"] == "true"
    )
    _write_csv(
        out / "totals.csv",
        ["submission", "notebook", "passed", "checks", "points", "score"],
        [
            {
                "submission": s,
                "notebook": n,
                "passed": passed[(s, n)],
                "checks": f"{c:g}",
                "points": f"{p:g}",
                "score": f"{p / c:.3f}",
            }
            for (s, n), (p, c) in points_of(scores).items()
        ],
    )
    per_check: dict[tuple[str, str], list[dict]] = collections.OrderedDict()
    for r in sorted(rows, key=lambda r: r["notebook"]):
        per_check.setdefault((r["notebook"], r["check"]), []).append(r)
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
        words = collections.Counter(r["mistake"] or "error" for r in rs if r["passed"] != "true")
        common = ", ".join(f"{w} ({k})" for w, k in words.most_common(3))
        lines.append(
            f"| {nb} | {check} | {sum(r['passed'] == 'true' for r in rs)} / {len(rs)} | {common} |"
        )
    if warnings:
        lines += ["", "## Overrides not applied", ""] + [f"- {w}" for w in warnings]
    if ignored:
        lines += [
            "",
            "## Copies not graded",
            "",
            "A submission held several copies of one exercise; the one named like the exercise "
            "(else the first by name) was graded:",
            "",
        ] + [f"- {x}" for x in ignored]
    (out / "report.md").write_text("\n".join(lines) + "\n")


def _write_csv(path: Path, fields: list[str], rows: list[dict]) -> None:
    tmp = path.with_suffix(".tmp")
    with open(tmp, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=fields)
        w.writeheader()
        w.writerows(rows)
    tmp.replace(path)
