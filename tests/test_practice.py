"""The learner's progress file and its Leitner schedule (checks/practice.py): what each check and
drill keeps, the boxes a misconception moves through, what is due, the picture, and a file that
cannot be read or written."""

from __future__ import annotations

import contextlib
import io
import json
from datetime import datetime, timedelta, timezone

import matplotlib
import pytest

import checks
from checks import hints, practice
from checks.drills.build import draw
from checks.drills.ladder import ladders
from checks.grading.run import _kernel_env
from checks.grading.settings import Settings
from checks.paths import MANIFEST
from tests.drills import checked, slipped

matplotlib.use("Agg")
DAY = timedelta(days=1)
START = datetime(2026, 3, 2, 9, 0, tzinfo=timezone.utc)


@pytest.fixture
def kept(tmp_path, monkeypatch):
    """A fresh kernel whose progress goes to a file of its own, its clock at ``START`` (``set``
    moves it); yields the file's path and the clock's setter."""
    where = tmp_path / "progress.json"
    monkeypatch.setenv("WORKBOOK_PROGRESS", str(where))
    clock = {"now": START}
    monkeypatch.setattr(practice, "now", lambda: clock["now"])
    checks.reset()
    practice._STATE.clear()
    practice._SAID.clear()
    hints.reset()

    def set_clock(at: datetime) -> None:
        clock["now"] = at

    yield where, set_clock
    checks.reset()
    practice._STATE.clear()


def a_drill(seed: int, focus: str, slip: bool = False, hint: str | None = None) -> dict:
    """Drill ``seed`` for ``focus`` drawn as ``drill()`` draws it, every answer right and checked
    (or, with ``slip``, answered and checked up to the first step that teaches ``focus``, written
    with that slip); ``hint`` asks one rung first. The checks' Results by name."""
    d = draw(seed, focus)
    practice.began(d.seed, d.focus, d.answers)
    hints.offer(ladders(d))
    if hint:
        hints.hint(hint)
    if slip:
        found = slipped(d, focus)
        assert found is not None, (seed, focus)
        return found[1]
    results, _ = checked(d.forward_code(), d.solution(), d.answers)
    return results


def stored(where) -> dict:
    return json.loads(where.read_text())


def test_each_check_of_a_drill_is_an_attempt_with_the_documented_fields(kept):
    where, _ = kept
    results = a_drill(3, "transpose")
    data = stored(where)
    assert data["version"] == 1 and len(data["attempts"]) == len(results)
    first = data["attempts"][0]
    assert set(first) == {
        "at",
        "kind",
        "where",
        "check",
        "ok",
        "mistake",
        "first_try",
        "hints",
        "seconds",
    }
    assert first["kind"] == "drill" and first["where"] == "drill 3" and first["ok"] is True
    assert [a["check"] for a in data["attempts"]] == list(results)
    assert data["misconceptions"]["transpose"]["box"] == 2  # right at once: one box on


def test_a_misconception_climbs_the_boxes_and_falls_back_to_the_first(kept):
    """Wrong: box 1, due a day later; each drill for it answered right moves it on (3, 7, 21
    days), the last box keeps it; a wrong answer sends it back to box 1."""
    where, set_clock = kept
    results = a_drill(3, "transpose", slip=True)
    assert any(r.mistake == "transpose" for r in results.values())
    boxes = []
    at = START
    for seed, days in ((4, 1), (5, 3), (6, 7), (7, 21), (8, 21)):
        at += days * DAY
        set_clock(at)
        a_drill(seed, "transpose")
        entry = stored(where)["misconceptions"]["transpose"]
        boxes.append((entry["box"], datetime.fromisoformat(entry["due"]) - at))
    assert boxes == [(2, 3 * DAY), (3, 7 * DAY), (4, 21 * DAY), (4, 21 * DAY), (4, 21 * DAY)]
    a_drill(9, "transpose", slip=True)
    assert stored(where)["misconceptions"]["transpose"]["box"] == 1


def test_a_drill_answered_with_a_hint_or_a_second_try_moves_nothing_on(kept):
    where, _ = kept
    a_drill(3, "transpose", slip=True)
    d = draw(4, "transpose")
    a_drill(4, "transpose", hint=d.answers[0])
    entry = stored(where)["misconceptions"]["transpose"]
    assert entry["box"] == 1 and [h[1] for h in entry["history"]] == [False]
    assert stored(where)["attempts"][-len(d.answers)]["hints"] == 1


def test_what_is_due_comes_lowest_box_first_and_drill_draws_it(kept):
    """Two misconceptions earned on day 0, one drilled right on day 1: on day 2 only the other is
    due, and ``drill()`` with no word (no failing check in this kernel) is for it."""
    where, set_clock = kept
    a_drill(3, "transpose", slip=True)
    a_drill(2, "sign", slip=True)
    set_clock(START + DAY)
    assert practice.due(stored(where), START + DAY) == ["sign", "transpose"]
    a_drill(5, "transpose")
    set_clock(START + 2 * DAY)
    checks.reset()  # a new kernel: nothing failing in it
    assert practice.due_now() == ["sign"]
    with contextlib.redirect_stdout(io.StringIO()):
        assert checks.drill().focus == "sign"


def test_progress_shows_the_table_what_is_due_and_a_line_per_misconception(kept):
    where, set_clock = kept
    a_drill(3, "transpose", slip=True)
    a_drill(2, "sign", slip=True)
    set_clock(START + DAY)
    a_drill(5, "transpose")
    report = checks.progress()
    text = str(report)
    assert text.startswith(f"progress: {where}: ")
    assert "sign" in text and "due now: sign; drill() draws one for sign." in text
    assert [r[:2] for r in report.rows] == [("sign", 1), ("transpose", 2)]
    labels = sorted(line.get_label() for line in report.figure.axes[0].get_lines())
    assert [x for x in labels if not x.startswith("_")] == ["sign", "transpose"]


@pytest.mark.parametrize(
    "content",
    ["{not json", '{"version": 99, "misconceptions": {}, "attempts": []}', "[1, 2]", "\xff\xfe"],
)
def test_a_file_that_cannot_be_read_is_kept_aside_and_a_fresh_one_starts(kept, content, capsys):
    where, _ = kept
    where.write_bytes(content.encode("latin-1"))
    a_drill(3, "transpose")
    said = capsys.readouterr().out.strip().splitlines()
    assert len([s for s in said if "could not be read" in s]) == 1, said
    aside = list(where.parent.glob("progress.json.unreadable-*"))
    assert len(aside) == 1 and aside[0].read_bytes() == content.encode("latin-1")
    assert stored(where)["misconceptions"]["transpose"]["box"] == 2


def test_a_folder_that_cannot_be_written_is_said_once_and_the_checks_go_on(kept, monkeypatch):
    where, _ = kept
    blocked = where.parent / "a-file"
    blocked.write_text("")
    monkeypatch.setenv("WORKBOOK_PROGRESS", str(blocked / "progress.json"))
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        results = a_drill(3, "transpose")
    assert all(r.ok for r in results.values())
    said = [s for s in out.getvalue().splitlines() if "not saved" in s]
    assert len(said) == 1 and str(blocked) in said[0]


def test_off_keeps_nothing_and_says_so(kept, monkeypatch):
    where, _ = kept
    monkeypatch.setenv("WORKBOOK_PROGRESS", "off")
    a_drill(3, "transpose")
    assert not where.exists() and str(checks.progress()).startswith("progress is off here")


def test_the_file_lies_beside_a_started_folders_notebooks_else_in_the_cache(tmp_path, monkeypatch):
    monkeypatch.delenv("WORKBOOK_PROGRESS")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.chdir(tmp_path)
    assert practice.path() == tmp_path / "cache" / "backprop-workbook" / "progress.json"
    (tmp_path / MANIFEST).write_text("{}")
    assert practice.path() == tmp_path / "workbook-progress.json"


def test_a_graded_kernel_keeps_no_progress():
    env = _kernel_env(__import__("pathlib").Path("/tmp/x"), Settings(1, 32, 50))
    assert env["WORKBOOK_PROGRESS"] == "off"


def test_a_second_kernel_writing_the_same_file_loses_no_attempt(kept):
    """Two notebooks open at once: this kernel reads the file again when the other one wrote it
    since, rather than write back its own older copy."""
    where, _ = kept
    a_drill(3, "transpose")
    other = stored(where)
    other["attempts"].append({**other["attempts"][-1], "where": "other kernel"})
    other["misconceptions"]["sign"] = {"box": 1, "due": START.isoformat(), "history": []}
    where.write_text(json.dumps(other))
    a_drill(4, "transpose")
    now = stored(where)
    assert "sign" in now["misconceptions"]
    assert [a["where"] for a in now["attempts"]].count("other kernel") == 1


def test_a_dropped_keepdim_is_a_misconception_though_the_answer_passes(kept):
    """A right answer whose size-1 axis was dropped passes, with its keepdim note; the schedule
    keeps ``keepdim`` as a misconception all the same, and a drill for it answered with the keepdim
    moves it on."""
    where, set_clock = kept
    results = a_drill(4, "keepdim", slip=True)
    noted = [r for r in results.values() if [n.word for n in r.notes] == ["keepdim"]]
    assert noted and all(r.ok for r in results.values())
    assert stored(where)["misconceptions"]["keepdim"]["box"] == 1
    set_clock(START + DAY)
    a_drill(6, "keepdim")
    assert stored(where)["misconceptions"]["keepdim"]["box"] == 2
