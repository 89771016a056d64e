"""The learner's progress across kernels and days: each check's and each drill's attempts, and a
Leitner schedule of the misconceptions (mistake words) the learner has earned.

One plain JSON file per learner (docs/progress.md gives its fields): ``workbook-progress.json``
in the folder ``backprop-workbook start`` made (the one holding ``.backprop-workbook.json``),
when the kernel works there, else ``progress.json`` in the user's cache folder;
``$WORKBOOK_PROGRESS`` names another file, or ``off`` (the grader's kernels and the test suite).

A misconception answered wrong goes to box 1 (due again tomorrow); a drill for it answered right
on the first try, without hints, moves it one box on (due in 3, 7, then 21 days). A file that
cannot be read is set aside (never deleted) and a fresh one started, said in one line; a folder
that cannot be written keeps the progress in this kernel only, said once. Nothing here raises
into a notebook. Standard library only: every check runs through :func:`note`.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from checks import kernel
from checks.paths import MANIFEST, cache_dir

ENV = "WORKBOOK_PROGRESS"
FILE = "workbook-progress.json"  # beside a started folder's notebooks
VERSION = 1
INTERVALS = (1, 3, 7, 21)  # days until a misconception in box 1, 2, 3, 4 is due again
KEPT = 1000  # attempts kept in the file, the latest
# not misconceptions: an answer not written yet, a right step on a wrong earlier one, no word
NOT_MISCONCEPTIONS = {None, "", "missing", "upstream", "fail"}


@dataclass
class _Drill:
    """The drill this kernel works on: its seed, its word, its answers, when it was drawn (the
    monotonic clock), the rungs each answer's ladder had shown before, and its checks so far."""

    seed: int
    focus: str | None
    answers: list[str]
    started: float
    hints_at: dict[str, int]
    tried: dict[str, int] = field(default_factory=dict)
    # per answer: right on its first try in this drill, without a rung shown
    results: dict[str, bool] = field(default_factory=dict)
    done: bool = False


_STATE: dict[str, Any] = {}  # the file's path (or None), the drill, the time of the last attempt
_SAID: set[str] = set()  # the one-line messages already said in this kernel


def path() -> Path | None:
    """The progress file this kernel writes (None: off)."""
    named = os.environ.get(ENV, "").strip()
    if named.lower() == "off":
        return None
    if named:
        return Path(named).expanduser()
    for folder in _folders():
        if (folder / MANIFEST).is_file():
            return folder / FILE
    return cache_dir() / "progress.json"


def _folders() -> list[Path]:
    """Where the learner's notebook lies: the folder of the one open in the kernel (JupyterLab's
    ``__session__``, VS Code's ``__vsc_ipynb_file__``), then the working folder."""
    found = []
    opened = kernel.open_notebook()
    if opened and Path(opened).is_absolute():
        found.append(Path(opened).parent)
    found.append(Path.cwd())
    return found


def fresh() -> dict:
    """An empty progress: no misconception, no attempt."""
    return {"version": VERSION, "misconceptions": {}, "attempts": []}


def load(where: Path) -> dict:
    """The progress in ``where``: a fresh one when there is no file; one that cannot be read (not
    JSON, not ours) is renamed ``NAME.unreadable-TIME`` and a fresh one begins, said once."""
    try:
        data = json.loads(where.read_text(encoding="utf-8"))
        if not _valid(data):
            raise ValueError("not a progress file of this workbook")
        return data
    except FileNotFoundError:
        return fresh()
    except (OSError, ValueError, UnicodeDecodeError) as exc:
        kept = where.with_name(f"{where.name}.unreadable-{time.strftime('%Y%m%d-%H%M%S')}")
        try:
            where.replace(kept)
            where_now = f"it is kept as {kept.name}"
        except OSError:
            where_now = "it is left as it is"
        _say(
            f"your progress file {where} could not be read ({exc}); {where_now}, and a fresh"
            " one starts now."
        )
        return fresh()


def _valid(data: Any) -> bool:
    return (
        isinstance(data, dict)
        and data.get("version") == VERSION
        and isinstance(data.get("misconceptions"), dict)
        and isinstance(data.get("attempts"), list)
        and all(
            isinstance(v, dict) and isinstance(v.get("box"), int)
            for v in data["misconceptions"].values()
        )
    )


def save(where: Path, data: dict) -> bool:
    """Write ``data`` to ``where`` whole (a temporary file renamed over it); False, said once, when
    the folder cannot be written."""
    data["attempts"] = data["attempts"][-KEPT:]
    try:
        where.parent.mkdir(parents=True, exist_ok=True)
        tmp = where.with_name(f".{where.name}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps(data) + "\n", encoding="utf-8")
        tmp.replace(where)
        return True
    except OSError as exc:
        _say(f"your progress is not saved: {where} cannot be written ({exc.strerror or exc}).")
        return False


def _say(line: str) -> None:
    if line not in _SAID:
        _SAID.add(line)
        print(line)


def now() -> datetime:
    """The time an attempt is kept at (UTC)."""
    return datetime.now(timezone.utc)


def began(seed: int, focus: str | None, answers: list[str]) -> None:
    """A drill was drawn: its checks are the drill's attempts from now on."""
    hints = _STATE.get("hints", {})
    at = {n: hints.get(n, 0) for n in answers}
    _STATE["drill"] = _Drill(seed, focus, list(answers), time.monotonic(), at)
    _STATE.pop("last_drill_check", None)


def hinted(check: str) -> None:
    """A rung of the ladder of ``check`` was shown (``hint()``)."""
    counts = _STATE.setdefault("hints", {})
    counts[check] = counts.get(check, 0) + 1


def note(res: Any, tries: int) -> None:
    """Keep one check's attempt (``res``, a Result; ``tries``: this kernel's count for its
    name) and move the misconception it names, or the drill it finishes, between boxes."""
    if res.mistake == "missing":
        return  # not written yet: no attempt
    where = path()
    if where is None:
        return
    try:
        _keep(_current(where), res, tries)
    except Exception as exc:  # progress is a record: it never stops a learner's check
        _say(f"your progress is not saved ({type(exc).__name__}: {exc}).")
        return
    if not _after_the_cell():
        flush()


def flush() -> None:
    """Write what this kernel has kept since its last write (nothing when it has not)."""
    where, data = _STATE.get("where"), _STATE.get("data")
    if not _STATE.pop("dirty", False) or where is None or data is None:
        return
    if save(where, data):
        _STATE["stamp"] = _stamp(where)


def _after_the_cell() -> bool:
    """In IPython, write once when the cell ends (a cell of thirty checks, one write) rather than
    at each check; False (write now) anywhere else."""
    shell = kernel.ipython()
    events = getattr(shell, "events", None)
    if events is None:
        return False
    if not _STATE.get("hooked"):
        events.register("post_run_cell", lambda *_: flush())
        _STATE["hooked"] = True
    return True


def _current(where: Path) -> dict:
    """The progress in ``where``: as this kernel last wrote it, read again only when the file has
    changed since (another kernel's check), so that a check costs one write, not a read too."""
    if _STATE.get("where") != where or _STATE.get("stamp") != _stamp(where):
        if _STATE.get("where") != where:
            flush()  # what was kept for the file named before
        _STATE["where"], _STATE["data"] = where, load(where)
        _STATE["stamp"] = _stamp(where)
    return _STATE["data"]


def _stamp(where: Path) -> tuple[int, int] | None:
    try:
        st = where.stat()
    except OSError:
        return None
    return st.st_mtime_ns, st.st_size


def _keep(data: dict, res: Any, tries: int) -> None:
    _STATE["dirty"] = True
    at, clock = now(), time.monotonic()
    drill = _STATE.get("drill")
    in_drill = drill is not None and res.name in drill.answers and not drill.done
    hints = _STATE.get("hints", {}).get(res.name, 0)
    if in_drill:
        hints -= drill.hints_at.get(res.name, 0)
        drill.tried[res.name] = drill.tried.get(res.name, 0) + 1
        first, where = drill.tried[res.name] == 1, f"drill {drill.seed}"
        since = _STATE.get("last_drill_check", drill.started)
        _STATE["last_drill_check"] = clock
    else:
        first, where, since = tries == 1, _notebook(), _STATE.get("last_check")
    _STATE["last_check"] = clock
    data["attempts"].append(
        {
            "at": at.isoformat(timespec="seconds"),
            "kind": "drill" if in_drill else "check",
            "where": where,
            "check": res.name,
            "ok": bool(res.ok),
            "mistake": None if res.ok else (res.mistake or None),
            "first_try": first,
            "hints": hints,
            "seconds": None if since is None else round(clock - since, 1),
        }
    )
    word = misconception(res)
    if word is not None:
        _move(data, word, at, right=False)
    if in_drill:
        drill.results[res.name] = bool(res.ok) and word is None and first and hints == 0
        if set(drill.results) >= set(drill.answers):
            drill.done = True
            if drill.focus and all(drill.results.values()):
                _move(data, drill.focus, at, right=True)


def misconception(res: Any) -> str | None:
    """The misconception a check's Result shows: a failed check's mistake word, or ``keepdim`` for
    a right answer noted for a dropped size-1 axis (right in value, a habit worth practising)."""
    if not res.ok:
        return None if res.mistake in NOT_MISCONCEPTIONS else res.mistake
    noted = {getattr(n, "word", None) for n in getattr(res, "notes", ())}
    return "keepdim" if "keepdim" in noted else None


def _move(data: dict, word: str, at: datetime, right: bool) -> None:
    """``word`` answered wrong (to box 1) or, in a drill for it, right (one box on)."""
    entry = data["misconceptions"].setdefault(word, {"box": 1, "due": "", "history": []})
    entry["box"] = min(entry["box"] + 1, len(INTERVALS)) if right else 1
    entry["due"] = (at + timedelta(days=INTERVALS[entry["box"] - 1])).isoformat(timespec="seconds")
    entry["history"] = [*entry["history"], [at.isoformat(timespec="seconds"), right, entry["box"]]]
    entry["history"] = entry["history"][-100:]


def _notebook() -> str:
    """The stem of the notebook open in the kernel, "" where none is known."""
    opened = kernel.open_notebook()
    return Path(opened).stem if opened else ""


def due(data: dict, at: datetime | None = None) -> list[str]:
    """The misconceptions due at ``at`` (now), the lowest box and the longest overdue first."""
    at = at or now()
    found = [
        (entry["box"], entry["due"], word)
        for word, entry in data["misconceptions"].items()
        if _when(entry["due"]) <= at
    ]
    return [word for _, _, word in sorted(found)]


def _when(stamp: str) -> datetime:
    try:
        found = datetime.fromisoformat(stamp)
    except (TypeError, ValueError):
        return datetime.min.replace(tzinfo=timezone.utc)  # unreadable: due
    return found if found.tzinfo else found.replace(tzinfo=timezone.utc)


def due_now() -> list[str]:
    """The misconceptions due now in this kernel's progress file (none when it is off)."""
    where = path()
    return due(load(where)) if where is not None else []


@dataclass
class Report:
    """What ``progress()`` shows: the file, what is due, each misconception's box, its picture."""

    where: Path | None
    due: list[str]
    rows: list[tuple[str, int, str, int, int]]  # word, box, when due, right, wrong
    attempts: int
    drills: int
    figure: Any = None

    def __str__(self) -> str:
        if self.where is None:
            return f"progress is off here (${ENV}=off): no attempt is kept."
        lines = [f"progress: {self.where}: {self.attempts} attempts, {self.drills} in drills"]
        if not self.rows:
            lines.append("no misconception yet: a check that fails with a mistake word starts one.")
            return "\n".join(lines)
        lines.append(f"{'misconception':15s} {'box':>3s}  {'due':12s} {'right':>5s} {'wrong':>5s}")
        lines += [f"{w:15s} {b:3d}  {d:12s} {r:5d} {x:5d}" for w, b, d, r, x in self.rows]
        if self.due:
            lines.append(f"due now: {', '.join(self.due)}; drill() draws one for {self.due[0]}.")
        else:
            lines.append("nothing is due now.")
        return "\n".join(lines)

    __repr__ = __str__


def progress(picture: bool = True) -> Report:
    """What is due, each misconception's box and counts, and (``picture``) a matplotlib figure of
    each misconception over time."""
    from checks.render.timeline import timeline

    where = path()
    if where is None:
        return Report(None, [], [], 0, 0)
    data, at = load(where), now()
    rows = []
    for word, entry in sorted(data["misconceptions"].items(), key=lambda kv: kv[1]["due"]):
        moves = entry["history"]
        right = sum(1 for m in moves if m[1])
        rows.append((word, entry["box"], _in(_when(entry["due"]) - at), right, len(moves) - right))
    attempts = data["attempts"]
    drills = sum(1 for a in attempts if a.get("kind") == "drill")
    figure = timeline(data["misconceptions"]) if picture else None
    return Report(where, due(data, at), rows, len(attempts), drills, figure)


def _in(left: timedelta) -> str:
    days = left.total_seconds() / 86400
    if days <= 0:
        return "now"
    n = max(1, round(days))
    return f"in {n} day{'s' if n != 1 else ''}"
