"""Exports to an LMS (checks/export.py) and the instructor's overrides (checks/scores.py), against
the formats they are read in: Canvas's gradebook import, Gradescope's results.json."""

from __future__ import annotations

import csv
import io
import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
import torch

from checks.export import canvas_csv, gradescope_package, gradescope_results, main
from checks.grade import Settings, judge_one, write_reports
from checks.paths import NOTEBOOKS, SOLUTIONS
from checks.scores import ScoresError, class_scores, load_overrides, with_overrides

NB3, NB2 = "03-makemore-backprop.ipynb", "02-tensor-backprop.ipynb"
EXPECTED = torch.randn(24, 36, generator=torch.Generator().manual_seed(3))
SIGN = judge_one(
    "ex1/dprobs", "dprobs", -EXPECTED, EXPECTED, Settings(batch=24)
).row()  # as the grader writes it


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


CLASS = [
    row("ann", NB3, "ex1/dlogprobs", True),
    row("ann", NB3, "ex1/dprobs", True),
    row("ann", NB2, "ex1/dY", True),
    row("bob smith", NB3, "ex1/dlogprobs", True),
    row("bob smith", NB3, "ex1/dprobs", False, "sign", SIGN["reason"], feedback=SIGN["feedback"]),
    row("cy", NB3, "ex1/dlogprobs", False, "missing", "not written yet"),
    row("cy", NB3, "ex1/dprobs", False, "missing", "not written yet"),
]
ROSTER = """submission,student,id,sis_user_id,section
ann,"Lovelace, Ann",101,S-101,A
bob smith,"Smith, Bob",102,S-102,B
dee,"Dee, Dee",104,S-104,A
"""


@pytest.fixture()
def out(tmp_path) -> Path:
    folder = tmp_path / "grades"
    folder.mkdir()
    write_reports(CLASS, folder)
    (tmp_path / "roster.csv").write_text(ROSTER)
    return folder


def test_overrides_file_is_created_once_and_survives_a_regrade(out):
    path = out / "overrides.csv"
    assert path.read_text() == "learner,notebook,check,score,comment\n"
    mine = (
        "learner,notebook,check,score,comment\n"
        'bob smith,03-makemore-backprop,ex1/dprobs,0.5,"sign only: half a point"\n'
    )
    path.write_text(mine)
    write_reports(CLASS, out)  # a re-grade
    assert path.read_text() == mine
    with open(out / "totals.csv") as f:
        totals = {(r["submission"], r["notebook"]): r for r in csv.DictReader(f)}
    assert (
        totals[("bob smith", NB3)]["points"] == "1.5"
        and totals[("bob smith", NB3)]["passed"] == "1"
    )
    assert (
        totals[("bob smith", NB3)]["score"] == "0.750" and totals[("ann", NB3)]["score"] == "1.000"
    )


def test_an_override_names_a_learner_by_folder_and_bad_lines_are_said(out):
    (out / "overrides.csv").write_text(
        "learner,notebook,check,score,comment\n"
        "cy,,ex1/dlogprobs,1,late answer accepted\n"  # folder name, notebook left out
        "ann,02-tensor-backprop.ipynb,ex1/dY,0,copied\n"  # the notebook as in grades.csv
        "101,,ex1/dY,1,\n"  # a roster ID: not a folder name
        "zed,,ex1/dY,1,\n"
    )  # nobody
    scores, warnings = with_overrides(CLASS, load_overrides(out / "overrides.csv"))
    got = {(s.submission, s.check): (s.points, s.comment) for s in scores if s.overridden}
    assert got == {
        ("cy", "ex1/dlogprobs"): (1.0, "late answer accepted"),
        ("ann", "ex1/dY"): (0.0, "copied"),
    }
    assert warnings == [
        "overrides.csv, line 4: no check 'ex1/dY' of learner '101'",
        "overrides.csv, line 5: no check 'ex1/dY' of learner 'zed'",
    ]
    (out / "overrides.csv").write_text("learner,check,score\nann,ex1/dY,2\n")
    with pytest.raises(
        ScoresError, match="needs the columns learner, notebook, check, score, comment"
    ):
        load_overrides(out / "overrides.csv")
    (out / "overrides.csv").write_text("learner,notebook,check,score,comment\nann,,ex1/dY,2,\n")
    with pytest.raises(ScoresError, match=r"line 2: score 2.0 is outside 0..1"):
        load_overrides(out / "overrides.csv")
    write_reports(CLASS, out)  # an unreadable overrides file does not stop the reports
    assert (
        "score 2.0 is outside 0..1 (a check is one point) (no override applied)"
        in (out / "report.md").read_text()
    )


def test_canvas_gradebook_has_the_import_columns_points_and_the_roster_order(out, tmp_path, capsys):
    (out / "overrides.csv").write_text(
        "learner,notebook,check,score,comment\nbob smith,,ex1/dprobs,0.5,\n"
    )
    code = main(
        [
            "canvas",
            str(out),
            "--roster",
            str(tmp_path / "roster.csv"),
            "--assignment",
            "03-makemore-backprop=Backprop ninja (1234)",
        ]
    )
    assert code == 0
    said = capsys.readouterr()
    table = list(csv.reader(io.StringIO((out / "canvas.csv").read_text())))
    assert table[0] == [
        "Student",
        "ID",
        "SIS User ID",
        "Section",
        "02-tensor-backprop",
        "Backprop ninja (1234)",
    ]
    assert table[1] == ["Points Possible", "", "", "", "1", "2"]
    assert table[2:] == [
        ["Lovelace, Ann", "101", "S-101", "A", "1", "2"],
        ["Smith, Bob", "102", "S-102", "B", "", "1.5"],
        ["Dee, Dee", "104", "S-104", "A", "", ""],
    ]
    assert "cy: graded, but not in the roster (left out)" in said.err
    assert "dee (Dee, Dee): no 03-makemore-backprop.ipynb graded" in said.err
    scores, _, _ = class_scores(out)
    with pytest.raises(ScoresError, match="needs a roster"):
        canvas_csv(scores, {})


def test_gradescope_results_follow_its_format_and_keep_expected_values_out(out):
    scores, _, _ = class_scores(out)
    bob = gradescope_results([s for s in scores if s.submission == "bob smith"], seconds=12.3)
    assert set(bob) == {
        "score",
        "output",
        "visibility",
        "stdout_visibility",
        "tests",
        "execution_time",
    }
    assert bob["score"] == 1.0 and bob["execution_time"] == 12
    for t in bob["tests"]:
        assert set(t) == {"name", "score", "max_score", "status", "output", "visibility"}
        assert (
            isinstance(t["score"], float)
            and t["max_score"] == 1.0
            and t["status"] in ("passed", "failed")
        )
        assert t["visibility"] in ("hidden", "after_due_date", "after_published", "visible")
    failed = bob["tests"][1]
    assert failed["name"] == "03-makemore-backprop · ex1/dprobs" and failed["status"] == "failed"
    assert failed["output"].startswith("sign: ") and "exactly the negative" in failed["output"]
    worst = f"{float(EXPECTED.flatten()[int((2 * EXPECTED).abs().argmax())]):.6g}"
    assert f"expected {worst}" in SIGN["reason"]  # the instructor's column gives it away, and
    assert worst not in json.dumps(bob) and "expected" not in json.dumps(
        bob
    )  # Gradescope's output does not


@pytest.mark.slow
def test_the_gradescope_package_grades_a_submission_into_results_json(tmp_path):
    """The zip as Gradescope unpacks it (/autograder/source), a learner's notebook 02 with one
    answer written, and run_autograder run as Gradescope runs it (setup.sh's install stands in for
    this venv)."""
    package = gradescope_package(
        tmp_path / "autograder.zip", SOLUTIONS, ["02-tensor-backprop"], seed=7, batch=24, steps=20
    )
    root = tmp_path / "autograder"
    with zipfile.ZipFile(package) as z:
        assert sorted(z.namelist()) == [
            "run_autograder",
            "settings.json",
            "setup.sh",
            f"solutions/{NB2}",
        ]
        assert z.getinfo("run_autograder").external_attr >> 16 & 0o111
        z.extractall(root / "source")
    setup = (root / "source" / "setup.sh").read_text()
    assert "backprop-workbook[grade]==" in setup and "download.pytorch.org/whl/cpu" in setup
    assert subprocess.run(["bash", "-n", str(root / "source" / "setup.sh")]).returncode == 0
    (root / "submission").mkdir()
    mine = (NOTEBOOKS / NB2).read_text().replace("dY = ...", "dY = dD.clone()", 1)
    (root / "submission" / "my-work.ipynb").write_text(mine)
    env = dict(os.environ, AUTOGRADER_ROOT=str(root), WORKBOOK_PYTHON=sys.executable)
    proc = subprocess.run(
        ["bash", str(root / "source" / "run_autograder")],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    results = json.loads((root / "results" / "results.json").read_text())
    tests = {t["name"]: t for t in results["tests"]}
    assert len(tests) == 22 and results["score"] == 1.0
    assert tests["02-tensor-backprop · ex1/dY"]["status"] == "passed"
    assert tests["02-tensor-backprop · ex1/ds"]["output"].startswith("missing: not written yet")
