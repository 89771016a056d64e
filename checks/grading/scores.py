"""A class's scores: the grader's rows, the roster and the instructor's overrides, as points.

Files in the grader's out folder (``python -m checks.grade ... --out OUT``):

- ``grades.csv``, written by the grader: one row per submission, notebook and check.
- ``overrides.csv``, written only by the instructor (the grader creates it with its header when
  missing and never writes it again, so it survives every re-grade): ``learner, notebook, check,
  score, comment``. ``learner`` is a submission's folder name, as in grades.csv (the grader
  applies the file without a roster);
  ``notebook`` may be left empty when the check's name is unique; ``score`` is the points for
  that check, 0 to 1 (every check is worth one point).
- a roster, anywhere (``--roster FILE``): ``submission, student, id, sis_user_id, section`` and,
  where Canvas needs it, ``sis_login_id``, mapping each submission folder name to the learner in
  the LMS.

Every CSV the grader writes goes through :func:`write_csv`, which applies OWASP's rule against
formula injection (:func:`safe_cell`) to every text cell; :func:`read_grades` undoes it.
"""

from __future__ import annotations

import csv
import dataclasses
import io
from collections.abc import Collection, Iterable
from dataclasses import dataclass
from pathlib import Path

from checks.grading.rows import Row

OVERRIDES = "overrides.csv"
OVERRIDE_FIELDS = ["learner", "notebook", "check", "score", "comment"]
ROSTER_FIELDS = ["submission", "student", "id", "sis_user_id", "section"]
ROSTER_OPTIONAL = ["sis_login_id"]  # Canvas's SIS Login ID, where the gradebook shows one

# OWASP's CSV injection rule: a cell that starts with one of these is read as a formula by Excel,
# LibreOffice and Google Sheets; a leading single quote makes it text. A cell that starts with a
# quote gets one more, so that reading a file back (plain_cell) gives every value exactly.
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
_QUOTE = "'"


def safe_cell(value: object, numeric: bool = False) -> object:
    """``value`` as a CSV cell no spreadsheet runs: text starting with ``=``, ``+``, ``-``, ``@``,
    a tab or a carriage return (or a quote) gets a leading single quote. Numbers stay numbers, and
    so does text that is a number in a ``numeric`` column (a score of ``-0.5``)."""
    if not isinstance(value, str) or not value.startswith((*FORMULA_STARTS, _QUOTE)):
        return value
    if numeric and _is_number(value):
        return value
    return _QUOTE + value


def plain_cell(value: str) -> str:
    """A cell of a file :func:`write_csv` wrote, as the value it was given."""
    return value[1:] if value.startswith(_QUOTE) else value


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return text.strip() == text and text.lower().lstrip("+-") not in ("inf", "infinity", "nan")


def csv_text(fields: list[str], rows: Iterable[dict | list], numeric: Collection[str] = ()) -> str:
    """A CSV file's text: the header ``fields``, then ``rows`` (dicts by field, or lists in field
    order), every cell through :func:`safe_cell` (``numeric`` names the number columns)."""
    buf = io.StringIO()
    w = csv.writer(buf)  # RFC 4180's CRLF: a cell holding a carriage return is quoted too
    w.writerow([safe_cell(f) for f in fields])
    for row in rows:
        values = [row.get(f, "") for f in fields] if isinstance(row, dict) else list(row)
        w.writerow([safe_cell(v, f in numeric) for f, v in zip(fields, values, strict=True)])
    return buf.getvalue()


def write_csv(
    path: Path, fields: list[str], rows: Iterable[dict | list], numeric: Collection[str] = ()
) -> None:
    """Write :func:`csv_text` to ``path`` at once (a temporary file, then renamed)."""
    tmp = path.with_suffix(".tmp")
    tmp.write_text(csv_text(fields, rows, numeric), encoding="utf-8", newline="")
    tmp.replace(path)


class ScoresError(ValueError):
    """A roster or overrides file that cannot be read as documented; the message says where."""


@dataclass(frozen=True)
class Student:
    submission: str
    student: str
    id: str
    sis_user_id: str
    section: str
    sis_login_id: str = ""


@dataclass(frozen=True)
class Override:
    learner: str
    notebook: str
    check: str
    score: float
    comment: str
    line: int


@dataclass
class Score:
    """One check of one submission, with the instructor's override applied."""

    submission: str
    notebook: str
    check: str
    points: float
    passed: bool
    mistake: str
    reason: str
    note: str
    feedback: str = ""  # the reason as the learner may read it (no expected value)
    comment: str = ""
    overridden: bool = False
    max_points: float = 1.0
    hints: str = ""  # the hints the notebook shows were used ("2/3" rungs, "revealed"), if any


def _rows(
    path: Path, fields: list[str], what: str, strip: bool = True
) -> list[tuple[int, dict[str, str]]]:
    """The rows of a CSV file with ``fields`` among its columns, with their line numbers; values
    stripped of white space where ``strip`` (files written by hand), blank rows left out."""
    try:
        with open(path, newline="", encoding="utf-8-sig") as f:  # -sig: a file saved by Excel
            reader = csv.DictReader(f)
            missing = [c for c in fields if c not in (reader.fieldnames or [])]
            if missing:
                raise ScoresError(
                    f"{path}: the {what} needs the columns {', '.join(fields)}; "
                    f"{', '.join(missing)} missing (the first line is {reader.fieldnames})"
                )
            rows = []
            for row in reader:
                if row.get(None):  # more values than columns: an unquoted comma, say
                    raise ScoresError(
                        f"{path}, line {reader.line_num}: more values than columns "
                        f"({', '.join(reader.fieldnames or [])}); put a value that holds a "
                        f"comma in double quotes"
                    )
                values = {k: (v or "").strip() if strip else (v or "") for k, v in row.items() if k}
                if any(v.strip() for v in values.values()):
                    rows.append((reader.line_num, values))
            return rows
    except OSError as why:
        raise ScoresError(f"cannot read the {what} {path}: {why.strerror or why}") from None


def read_grades(out: Path) -> list[Row]:
    """The rows of ``out/grades.csv`` (the one place the grader reads them back)."""
    # the grader's own file, read as written: a submission "ann " is not "ann"; a cell that
    # write_csv quoted against formulas reads as the value it was given
    return [
        Row.from_csv({k: plain_cell(v) for k, v in row.items()})
        for _, row in _rows(
            out / "grades.csv",
            ["submission", "notebook", "check", "passed"],
            "grades file",
            strip=False,
        )
    ]


def load_roster(path: Path) -> dict[str, Student]:
    """Submission folder name -> the learner in the LMS."""
    roster: dict[str, Student] = {}
    for line, row in _rows(path, ROSTER_FIELDS, "roster"):
        if row["submission"] in roster:
            raise ScoresError(
                f"{path}, line {line}: the submission {row['submission']!r} is listed twice"
            )
        roster[row["submission"]] = Student(
            *(row[c] for c in ROSTER_FIELDS), *(row.get(c, "") for c in ROSTER_OPTIONAL)
        )
    return roster


def ensure_overrides(out: Path) -> Path:
    """``out/overrides.csv``, created with its header when missing (never rewritten)."""
    path = out / OVERRIDES
    if not path.exists():
        path.write_text(",".join(OVERRIDE_FIELDS) + "\n")
    return path


def load_overrides(path: Path) -> list[Override]:
    if not path.exists():
        return []
    found = []
    for line, row in _rows(path, OVERRIDE_FIELDS, "overrides file"):
        try:
            score = float(row["score"])
        except ValueError:
            raise ScoresError(
                f"{path}, line {line}: score {row['score']!r} is not a number"
            ) from None
        if not 0 <= score <= 1:
            raise ScoresError(
                f"{path}, line {line}: score {score} is outside 0..1 (a check is one point)"
            )
        found.append(
            Override(row["learner"], row["notebook"], row["check"], score, row["comment"], line)
        )
    return found


def with_overrides(rows: Iterable[Row], overrides: list[Override]) -> tuple[list[Score], list[str]]:
    """Every row as a Score with its override, and one warning per override that matched no row."""
    scores = [
        Score(
            r.submission,
            r.notebook,
            r.check,
            1.0 if r.passed else 0.0,
            r.passed,
            r.mistake,
            r.reason,
            r.note,
            r.feedback,
            hints=r.hints,
        )
        for r in rows
    ]
    warnings = []
    for o in overrides:
        hit = [
            s
            for s in scores
            if o.learner in (s.submission, _QUOTE + s.submission)  # as in a spreadsheet or not
            and s.check == o.check
            and (not o.notebook or s.notebook in (o.notebook, f"{o.notebook}.ipynb"))
        ]
        if len({s.notebook for s in hit}) > 1:
            warnings.append(
                f"{OVERRIDES}, line {o.line}: {o.check} is in several notebooks: name one"
            )
            continue
        if not hit:
            warnings.append(
                f"{OVERRIDES}, line {o.line}: no check {o.check!r} of learner {o.learner!r}"
                + (f" in {o.notebook}" if o.notebook else "")
            )
        for s in hit:  # a later line wins
            s.points, s.comment, s.overridden = o.score, o.comment, True
    return scores, warnings


def overrides_for(
    overrides: Iterable[Override], names: Collection[str], submission: str
) -> list[Override]:
    """The overrides whose ``learner`` is one of ``names`` (an e-mail, a student ID: who the LMS
    says handed in ``submission``), as overrides of ``submission``."""
    return [dataclasses.replace(o, learner=submission) for o in overrides if o.learner in names]


def fmt_points(x: float) -> str:
    """Points as a person writes them: 2, 1.5, 0.33."""
    return f"{x:.2f}".rstrip("0").rstrip(".")


def totals(scores: Iterable[Score]) -> dict[tuple[str, str], tuple[float, float]]:
    """(submission, notebook) -> (points, max points)."""
    out: dict[tuple[str, str], tuple[float, float]] = {}
    for s in scores:
        p, m = out.get((s.submission, s.notebook), (0.0, 0.0))
        out[(s.submission, s.notebook)] = (p + s.points, m + s.max_points)
    return out


def class_scores(
    out: Path, roster: Path | None = None
) -> tuple[list[Score], list[str], dict[str, Student]]:
    """The out folder's scores with its overrides applied, the warnings, and the roster."""
    people = load_roster(roster) if roster else {}
    scores, warnings = with_overrides(read_grades(out), load_overrides(out / OVERRIDES))
    return scores, warnings, people
