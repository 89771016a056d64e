"""Exports to an LMS (checks/grading/export.py) and the instructor's overrides
(checks/grading/scores.py), against the formats they are read in: Canvas's gradebook import,
Gradescope's results.json."""

from __future__ import annotations

import base64
import csv
import io
import json
import os
import subprocess
import sys
import zipfile
from importlib.metadata import version
from pathlib import Path

import pytest
import torch
import yaml

from checks.grading.export import (
    GRADESCOPE_KEYS,
    GRADESCOPE_TEST_KEYS,
    build_wheel,
    canvas_csv,
    check_keys,
    classroom_result,
    github_selfcheck,
    github_workflow,
    gradescope_package,
    gradescope_results,
    gradescope_scores,
    main,
    notebook_checks,
    run_checks,
)
from checks.grading.judge import judge_one
from checks.grading.reports import write_reports
from checks.grading.scores import (
    FORMULA_STARTS,
    ScoresError,
    class_scores,
    load_overrides,
    load_roster,
    plain_cell,
    with_overrides,
)
from checks.grading.settings import Settings
from checks.paths import NOTEBOOKS, SOLUTIONS
from tests.rows import HOSTILE, row

NB3, NB2 = "03-makemore-backprop.ipynb", "02-tensor-backprop.ipynb"
EXPECTED = torch.randn(24, 36, generator=torch.Generator().manual_seed(3))
SIGN = judge_one(
    "ex1/dprobs", "dprobs", -EXPECTED, EXPECTED, Settings(batch=24)
).row()  # as the grader writes it


CLASS = [
    row("ann", NB3, "ex1/dlogprobs", True),
    row("ann", NB3, "ex1/dprobs", True),
    row("ann", NB2, "ex1/dY", True),
    row("bob smith", NB3, "ex1/dlogprobs", True),
    row("bob smith", NB3, "ex1/dprobs", False, "sign", SIGN["reason"], feedback=SIGN["feedback"]),
    row("cy", NB3, "ex1/dlogprobs", False, "missing", "not written yet"),
    row("cy", NB3, "ex1/dprobs", False, "missing", "not written yet"),
]
ROSTER = """submission,student,id,sis_user_id,sis_login_id,section
ann,"Lovelace, Ann",101,S-101,alovelace,A
bob smith,"Smith, Bob",102,S-102,bsmith,B
dee,"Dee, Dee",104,S-104,ddee,A
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
    # nobody
    (out / "overrides.csv").write_text(
        "learner,notebook,check,score,comment\n"
        "cy,,ex1/dlogprobs,1,late answer accepted\n"  # folder name, notebook left out
        "ann,02-tensor-backprop.ipynb,ex1/dY,0,copied\n"  # the notebook as in grades.csv
        "101,,ex1/dY,1,\n"  # a roster ID: not a folder name
        "zed,,ex1/dY,1,\n"
    )
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
    # Canvas's gradebook import: Student, ID, SIS User ID, SIS Login ID, Section, then one
    # column per assignment (its export's order; the Points Possible row under the header)
    assert table[0] == [
        "Student",
        "ID",
        "SIS User ID",
        "SIS Login ID",
        "Section",
        "02-tensor-backprop",
        "Backprop ninja (1234)",
    ]
    assert table[1] == ["Points Possible", "", "", "", "", "1", "2"]
    assert table[2:] == [
        ["Lovelace, Ann", "101", "S-101", "alovelace", "A", "1", "2"],
        ["Smith, Bob", "102", "S-102", "bsmith", "B", "", "1.5"],
        ["Dee, Dee", "104", "S-104", "ddee", "A", "", ""],
    ]
    assert "cy: graded, but not in the roster (left out)" in said.err
    assert "dee (Dee, Dee): no 03-makemore-backprop.ipynb graded" in said.err
    scores, _, _ = class_scores(out)
    with pytest.raises(ScoresError, match="needs a roster"):
        canvas_csv(scores, {})


def test_canvas_cells_a_learner_controls_are_never_formulas_and_points_stay_numbers(tmp_path):
    subs = ["sub-" + str(k) for k in range(len(HOSTILE))]
    rows = [row(s, NB3, "ex1/dlogprobs", True) for s in subs]
    rows += [row(s, NB3, "ex1/dprobs", False, "sign", "flipped") for s in subs]
    out = tmp_path / "grades"
    out.mkdir()
    write_reports(rows, out)
    lines = ["submission,student,id,sis_user_id,sis_login_id,section"]
    for k, (sub, name) in enumerate(zip(subs, HOSTILE, strict=True)):
        quoted = '"' + name.replace('"', '""') + '"'
        lines.append(f"{sub},{quoted},{200 + k},{quoted},-{k},{quoted}")
    (tmp_path / "roster.csv").write_text("\n".join(lines) + "\n")
    (out / "overrides.csv").write_text(
        "learner,notebook,check,score,comment\nsub-0,,ex1/dprobs,0.5,half\n"
    )
    assert main(["canvas", str(out), "--roster", str(tmp_path / "roster.csv")]) == 0
    table = list(csv.reader(io.StringIO((out / "canvas.csv").read_text())))
    texts = [c for r in table for c in r[:5]]
    assert not [c for c in texts if c.startswith(FORMULA_STARTS)]  # OWASP's rule
    for r, name in zip(table[2:], HOSTILE, strict=True):  # the values themselves are all there
        # (the roster is read as a file written by hand: stripped of white space)
        assert [plain_cell(c) for c in (r[0], r[2], r[4])] == [name.strip()] * 3
    assert [r[3] for r in table[2:4]] == ["'-0", "'-1"]  # a login, not a number: text
    assert table[1][-1] == "2" and [r[-1] for r in table[2:4]] == ["1.5", "1"]  # numbers


def test_two_folders_of_one_learner_give_one_row_and_a_warning(out, tmp_path, capsys):
    rows = CLASS + [
        row("bob-resubmit", NB2, "ex1/dY", True),
        row("ann (2)", NB3, "ex1/dlogprobs", False, "sign", "flipped"),
        row("ann (2)", NB3, "ex1/dprobs", True),
    ]
    write_reports(rows, out)
    (tmp_path / "roster.csv").write_text(
        ROSTER + 'bob-resubmit,"Smith, Bob",102,S-102,bsmith,B\n'
        'ann (2),"Lovelace, Ann",101,S-101,alovelace,A\n'
    )
    assert main(["canvas", str(out), "--roster", str(tmp_path / "roster.csv")]) == 0
    said = capsys.readouterr()
    table = list(csv.reader(io.StringIO((out / "canvas.csv").read_text())))
    ids = [r[1] for r in table[2:]]
    assert ids == ["101", "102", "104"]  # one row per learner ID, in roster order
    by_id = {r[1]: r[5:] for r in table[2:]}
    assert by_id["102"] == ["1", "1"]  # 02 from bob-resubmit, 03 from bob smith
    assert by_id["101"] == ["1", ""]  # 03 graded in both of ann's folders: left for you
    assert "ID 101: 2 submission folders map to one learner ('ann', 'ann (2)')" in said.err
    assert "ID 102: 2 submission folders map to one learner" in said.err
    assert "03-makemore-backprop.ipynb graded in 2 folders ('ann', 'ann (2)')" in said.err
    assert "wrote" in said.out and "3 learners" in said.out


def test_a_roster_without_sis_login_ids_still_reads(tmp_path):
    path = tmp_path / "roster.csv"
    path.write_text('submission,student,id,sis_user_id,section\nann,"Lovelace, Ann",101,S-101,A\n')
    assert load_roster(path)["ann"].sis_login_id == ""


def test_gradescope_results_follow_its_format_and_keep_expected_values_out(out):
    scores, _, _ = class_scores(out)
    bob = gradescope_results([s for s in scores if s.submission == "bob smith"], seconds=12.3)
    # the keys Gradescope's "Autograder Specifications" document, and no other
    assert set(bob) <= GRADESCOPE_KEYS and {"score", "tests"} <= set(bob)
    assert bob["score"] == 1.0 and bob["execution_time"] == 12
    assert bob["stdout_visibility"] in ("hidden", "after_due_date", "after_published", "visible")
    for t in bob["tests"]:
        assert set(t) <= GRADESCOPE_TEST_KEYS
        assert {"name", "score", "max_score", "status", "output"} <= set(t)
        assert isinstance(t["score"], float) and t["max_score"] == 1.0
        assert t["status"] in ("passed", "failed")
        assert t["visibility"] in ("hidden", "after_due_date", "after_published", "visible")
    failed = bob["tests"][1]
    assert failed["name"] == "03-makemore-backprop · ex1/dprobs" and failed["status"] == "failed"
    assert failed["output"].startswith("sign: ") and "exactly the negative" in failed["output"]
    worst = f"{float(EXPECTED.flatten()[int((2 * EXPECTED).abs().argmax())]):.6g}"
    assert f"expected {worst}" in SIGN["reason"]  # the instructor's column gives it away, and
    assert worst not in json.dumps(bob) and "expected" not in json.dumps(bob)  # Gradescope's not


def _metadata(root: Path, **user) -> None:
    """Gradescope's /autograder/submission_metadata.json, as its documentation shows it."""
    meta = {
        "id": 123456,
        "created_at": "2026-11-30T14:22:32.365935-07:00",
        "assignment": {"id": 25828, "title": "Backprop ninja", "total_points": "2.0"},
        "submission_method": "upload",
        "users": [user],
        "previous_submissions": [],
    }
    (root / "submission_metadata.json").write_text(json.dumps(meta))


def test_gradescope_applies_the_overrides_of_the_learner_who_handed_in(out, tmp_path):
    """The zip's overrides.csv names learners by e-mail or student ID (Gradescope knows no
    folder names); only the submitter's lines count, as they count in totals.csv."""
    root = tmp_path / "autograder"
    (root / "source").mkdir(parents=True)
    (root / "source" / "overrides.csv").write_text(
        "learner,notebook,check,score,comment\n"
        "bob@uni.example,03-makemore-backprop,ex1/dprobs,0.5,sign only: half a point\n"
        "ann@uni.example,,ex1/dprobs,0,not bob\n"
        "S-102,,ex1/dlogprobs,0.25,by student ID\n"
    )
    bob_rows = [r for r in CLASS if r.submission == "bob smith"]
    write_reports([r.of("submission", r.notebook) for r in bob_rows], out)
    _metadata(root, email="bob@uni.example", id=4242, name="Bob Smith", sid="S-102")
    got = gradescope_results(gradescope_scores(out, root))
    by = {t["name"].split(" · ")[1]: t for t in got["tests"]}
    assert by["ex1/dprobs"]["score"] == 0.5 and by["ex1/dlogprobs"]["score"] == 0.25
    assert got["score"] == 0.75  # as totals.csv would give bob with these two lines
    assert by["ex1/dprobs"]["output"].startswith("instructor: 0.5 / 1 (sign only: half a point)")
    assert by["ex1/dprobs"]["status"] == "failed"
    _metadata(root, email="cy@uni.example", id=4243, name="Cy")  # another learner: none applies
    assert gradescope_results(gradescope_scores(out, root))["score"] == 1.0


def test_the_autograder_zip_refuses_anything_but_a_workbook_wheel(tmp_path):
    fake = tmp_path / "backprop-workbook-0.1.0.tar.gz"
    fake.write_text("not a wheel")
    with pytest.raises(ScoresError, match="not a wheel of the workbook"):
        gradescope_package(tmp_path / "a.zip", fake, SOLUTIONS, ["02-tensor-backprop"])
    bad = tmp_path / "overrides.csv"
    bad.write_text("learner,notebook,check,score,comment\nann,,ex1/dY,7,\n")
    wheel = tmp_path / "backprop_workbook-0.1.0-py3-none-any.whl"
    wheel.write_bytes(b"PK")
    with pytest.raises(ScoresError, match="outside 0..1"):  # stops here, not on Gradescope
        gradescope_package(
            tmp_path / "a.zip", wheel, SOLUTIONS, ["02-tensor-backprop"], overrides=bad
        )


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    """The workbook's wheel, built from this checkout as ``gradescope-package`` builds it."""
    return build_wheel(tmp_path_factory.mktemp("wheel"))


@pytest.mark.slow
def test_the_zip_carries_its_wheel_and_setup_installs_only_that(wheel, tmp_path):
    package = gradescope_package(
        tmp_path / "autograder.zip", wheel, SOLUTIONS, ["02-tensor-backprop"], seed=7, batch=24
    )
    with zipfile.ZipFile(package) as z:
        assert wheel.name in z.namelist()
        setup = z.read("setup.sh").decode()
        z.extract(wheel.name, tmp_path / "source")
    installs = [ln for ln in setup.splitlines() if "pip install" in ln]
    assert installs == [
        "/opt/workbook/bin/pip install -q torch --index-url https://download.pytorch.org/whl/cpu",
        f'/opt/workbook/bin/pip install -q "/autograder/source/{wheel.name}[grade]"',
    ]
    assert "backprop-workbook[grade]==" not in setup and "backprop-workbook==" not in setup
    assert setup.index("apt-get update") < setup.index("apt-get install")
    assert subprocess.run(["bash", "-n", "-c", setup]).returncode == 0
    # the wheel in the zip installs (offline, as setup.sh's line does but for its dependencies)
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "-q", "--no-compile"]
    pip += ["--no-index", "--no-deps"]
    subprocess.run([*pip, str(tmp_path / "source" / wheel.name)], check=True)
    said = subprocess.run(
        [
            str(venv / "bin" / "python"),
            "-c",
            "from importlib.metadata import version as v; "
            "import checks.grading.export as e; print(v('backprop-workbook'), e.__file__)",
        ],
        capture_output=True,
        text=True,
        check=True,
        cwd=tmp_path,
    ).stdout.split()
    assert said[0] == version("backprop-workbook") and str(venv) in said[1]


@pytest.mark.slow
def test_the_gradescope_package_grades_a_submission_into_results_json(wheel, tmp_path):
    """The zip as Gradescope unpacks it (/autograder/source), a learner's notebook 02 with one
    answer written, an override for that learner, and run_autograder run as Gradescope runs it
    (setup.sh's install stands in for this venv)."""
    overrides = tmp_path / "overrides.csv"
    overrides.write_text(
        "learner,notebook,check,score,comment\n"
        "ada@uni.example,02-tensor-backprop,ex1/ds,1,answered by e-mail\n"
    )
    package = gradescope_package(
        tmp_path / "autograder.zip",
        wheel,
        SOLUTIONS,
        ["02-tensor-backprop"],
        seed=7,
        batch=24,
        steps=20,
        overrides=overrides,
    )
    root = tmp_path / "autograder"
    with zipfile.ZipFile(package) as z:
        assert sorted(z.namelist()) == sorted(
            ["overrides.csv", "run_autograder", "settings.json", "setup.sh", wheel.name]
            + [f"solutions/{NB2}"]
        )
        assert z.getinfo("run_autograder").external_attr >> 16 & 0o111
        z.extractall(root / "source")
    (root / "submission").mkdir()
    _metadata(root, email="ada@uni.example", id=4242, name="Ada Lovelace")
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
    assert set(results) <= GRADESCOPE_KEYS and len(tests) == 22
    assert results["score"] == 2.0  # dY, and ds by the override
    assert tests["02-tensor-backprop · ex1/dY"]["status"] == "passed"
    assert tests["02-tensor-backprop · ex1/ds"]["score"] == 1.0
    said = tests["02-tensor-backprop · ex1/ds"]["output"]
    assert said.startswith("instructor: 1 / 1 (answered by e-mail)\nmissing: not written yet")
    assert tests["02-tensor-backprop · ex1/dX"]["output"].startswith("missing: not written yet")


# ---------------------------------------------------------------- GitHub Classroom


def test_the_classroom_workflow_is_the_shape_the_reporter_requires():
    """The reporter's README: a workflow named "Autograding Tests" with one job,
    run-autograding-tests, and an env ``<RUNNER-ID>_RESULTS`` per runner id; ubuntu-24.04 with
    Python from actions/setup-python (its system Python refuses pip, PEP 668); no solutions."""
    text = github_workflow(NOTEBOOKS / NB3, "https://example.edu/backprop_workbook-0.1.0.whl")
    flow = yaml.safe_load(text)
    assert flow["name"] == "Autograding Tests" and list(flow["jobs"]) == ["run-autograding-tests"]
    assert set(flow["on"]) >= {"push", "workflow_dispatch"}
    assert flow["permissions"] == {"checks": "write", "actions": "read", "contents": "read"}
    job = flow["jobs"]["run-autograding-tests"]
    assert job["runs-on"] == "ubuntu-24.04"
    steps = job["steps"]
    uses = [s.get("uses", "") for s in steps]
    setup = uses.index("actions/setup-python@v5")
    runs = [(k, s["run"]) for k, s in enumerate(steps) if "run" in s]
    assert all(k > setup for k, r in runs if "pip" in r)  # never the runner's system Python
    assert not any("sudo" in r and "pip" in r for _, r in runs)
    for _, r in runs:  # nothing from apt needed; if ever, the index first
        if "apt-get install" in r:
            assert "apt-get update" in r.split("apt-get install")[0]
    said = json.dumps(flow)  # what runs, comments aside
    assert "solutions" not in said and "secrets." not in said  # nothing to keep from the learner
    reporter = steps[-1]
    assert reporter["uses"] == "classroom-resources/autograding-grading-reporter@v1"
    ids = reporter["with"]["runners"].split(",")
    for runner in ids:
        step = next(s for s in steps if s.get("id") == runner)
        assert reporter["env"][f"{runner.upper()}_RESULTS"] == (
            "${{steps." + runner + ".outputs.result}}"
        )
        assert "github-selfcheck" in step["run"]
    checks = notebook_checks(NOTEBOOKS / NB3)
    assert len(checks) == 28 and checks[-2:] == ["logits (fused)", "hprebn (fused)"]
    assert f'--checks "{",".join(checks)}"' in steps[-2]["run"]


def test_a_point_per_check_in_the_reporters_result_format():
    """The result the command grader hands the reporter (version 1: status, max_score, tests with
    name, status, score, message...), scored as the reporter scores it."""
    calls = [["Y", True, "", ""], ["s", False, "sign", "flip it"], ["Y", False, "wrong", "again"]]
    assert check_keys(calls) == ["Y", "s", "Y#2"]
    result = classroom_result(calls, ["Y", "s", "X", "Y#2"], NB2)
    assert set(result) == {"version", "status", "max_score", "tests"} and result["version"] == 1
    assert result["status"] == "fail" and result["max_score"] == 4
    for t in result["tests"]:
        assert set(t) >= {"name", "status", "score", "message"} and t["status"] in ("pass", "fail")
    tests = {t["name"]: t for t in result["tests"]}
    assert [tests[k]["score"] for k in ("Y", "s", "X", "Y#2")] == [1, 0, 0, 0]
    assert tests["X"]["message"].startswith("not reached") and tests["s"]["message"] == (
        "sign: flip it"
    )
    # the reporter: NotifyClassroom sums the tests' scores over max_score; the console table
    # gives passed / tests * max_score: both 1 of 4, not all-or-nothing
    passed = sum(t["status"] == "pass" for t in result["tests"])
    assert sum(t["score"] for t in result["tests"]) == passed / len(tests) * 4 == 1


@pytest.mark.slow
def test_the_selfcheck_runs_a_learners_notebook_and_writes_the_step_output(tmp_path, monkeypatch):
    mine = (NOTEBOOKS / NB2).read_text().replace("dY = ...", "dY = dD.clone()", 1)
    notebook = tmp_path / NB2
    notebook.write_text(mine)
    output = tmp_path / "github_output"
    output.write_text("earlier=1\n")
    monkeypatch.setenv("GITHUB_OUTPUT", str(output))
    checks = notebook_checks(notebook)
    github_selfcheck(notebook, checks, timeout=120)
    lines = output.read_text().splitlines()
    assert lines[0] == "earlier=1" and lines[1].startswith("result=") and len(lines) == 2
    result = json.loads(base64.b64decode(lines[1].removeprefix("result=")))
    tests = {t["name"]: t for t in result["tests"]}
    assert result["max_score"] == len(checks) == len(tests)
    assert tests["Y"]["status"] == "pass" and tests["Y"]["score"] == 1
    assert sum(t["score"] for t in tests.values()) == 1  # the others are not written yet
    assert tests["s"]["status"] == "fail"


@pytest.mark.slow
def test_the_checks_a_notebook_names_are_the_checks_its_run_makes(tmp_path, capsys):
    """The workflow's list read off the code (``--static``) against a run of the solution (the
    default: notebooks 01, 03 and 04 also check in loops, which the code does not name)."""
    ran = check_keys(run_checks(SOLUTIONS / NB2, timeout=120))
    assert ran == notebook_checks(NOTEBOOKS / NB2) and len(ran) == 16
    to = tmp_path / ".github" / "workflows" / "classroom.yml"
    code = main(["github-workflow", str(NOTEBOOKS / NB2), "--install", "./w.whl", "--to", str(to)])
    assert code == 0 and f'--checks "{",".join(ran)}"' in to.read_text()
    evil = ["--install", 'x" && curl evil', "--static"]
    assert main(["github-workflow", str(NOTEBOOKS / NB2), *evil]) == 2
    assert "cannot go on a command line" in capsys.readouterr().err


@pytest.mark.slow
def test_a_notebook_that_hangs_keeps_the_points_it_earned_before(tmp_path):
    nb = json.loads((NOTEBOOKS / NB2).read_text().replace("dY = ...", "dY = dD.clone()", 1))
    at = next(k for k, c in enumerate(nb["cells"]) if "dY = dD.clone()" in "".join(c["source"]))
    checked = next(
        k for k in range(at, len(nb["cells"])) if "cmp(" in "".join(nb["cells"][k]["source"])
    )
    hang = {"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None}
    nb["cells"].insert(
        checked + 1, {**hang, "source": "import time\nwhile True:\n    time.sleep(1)\n"}
    )
    notebook = tmp_path / NB2
    notebook.write_text(json.dumps(nb))
    calls = run_checks(notebook, timeout=15)
    result = classroom_result(calls, notebook_checks(notebook), NB2)
    tests = {t["name"]: t for t in result["tests"]}
    assert tests["Y"]["score"] == 1 and result["max_score"] == 16
    assert tests["W#2"]["message"].startswith("not reached")
