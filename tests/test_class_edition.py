"""A class edition: ``start --class`` marks the learner's folder, a kernel working there keeps
``hint(..., reveal=True)`` off, and the hints shown are recorded in the saved notebook."""

from __future__ import annotations

import json

import nbformat
import pytest

import checks
from checks import hints
from checks.compare import reset
from checks.grading.hintlog import hints_used, reveals_used
from checks.paths import MANIFEST, NOTEBOOKS, class_edition
from checks.start import copy_notebooks, start


@pytest.fixture
def fresh_hints(monkeypatch):
    """The committed ladders, a kernel that has run nothing, and no edition from the environment."""
    monkeypatch.delenv("WORKBOOK_EDITION", raising=False)
    hints._files.cache_clear()
    hints.reset()
    reset()
    yield
    hints.reset()
    reset()


def test_start_class_marks_the_folder_and_a_later_start_keeps_it(tmp_path, monkeypatch, capsys):
    monkeypatch.delenv("WORKBOOK_EDITION", raising=False)
    plain, course = tmp_path / "plain", tmp_path / "course"
    assert start(plain, lab=False) == 0 and not class_edition(plain)
    assert "class edition" not in capsys.readouterr().out
    assert start(course, lab=False, class_edition=True) == 0
    assert "reveal=True) is off for this course" in capsys.readouterr().out
    manifest = json.loads((course / MANIFEST).read_text())
    assert manifest["edition"] == "class" and len(manifest["copies"]) == 6
    assert class_edition(course) and not (course / "solutions").exists()
    assert not [p for p in course.iterdir() if p.suffix != ".ipynb" and p.name != MANIFEST]
    copy_notebooks(course)  # a plain start later: the folder stays a class edition
    assert class_edition(course)
    copy_notebooks(plain, class_edition=True)  # and a self-study folder can become one
    assert class_edition(plain)


def test_the_edition_from_the_environment_and_a_broken_manifest(tmp_path, monkeypatch):
    monkeypatch.delenv("WORKBOOK_EDITION", raising=False)
    (tmp_path / MANIFEST).write_text("[1, 2")
    assert not class_edition(tmp_path)
    (tmp_path / MANIFEST).write_text('["edition", "class"]')
    assert not class_edition(tmp_path)
    monkeypatch.setenv("WORKBOOK_EDITION", "class")
    assert class_edition(tmp_path) and class_edition(tmp_path / "missing")


def test_reveal_is_off_in_a_class_folder(tmp_path, monkeypatch, fresh_hints):
    copy_notebooks(tmp_path, class_edition=True)
    monkeypatch.chdir(tmp_path)  # JupyterLab starts the kernel in the notebook's folder
    solution = json.loads((hints.HINTS / "03-makemore-backprop.json").read_text())["dcounts"]
    rungs = [checks.hint("counts") for _ in range(3)]
    assert [h.number for h in rungs] == [1, 2, 3]
    last = rungs[2].after
    assert "reveal is off for this course" in last and "reveal=True)" not in last
    refused = checks.hint("counts", reveal=True)
    shown = str(refused) + refused._repr_html_()
    assert "reveal=True) is off for this course (a class edition)" in shown
    assert solution[0]["solution"].splitlines()[0] not in shown
    assert not refused.revealed and refused.marker()["backprop-workbook"]["reveal"] is False
    assert hints.used("counts") == (3, False)
    monkeypatch.chdir(tmp_path.parent)  # elsewhere, the self-study edition reveals it
    assert checks.hint("counts", reveal=True).text == solution[0]["solution"]


def test_the_saved_notebook_records_the_hints_and_the_refused_reveal(tmp_path, monkeypatch):
    """A real kernel (nbclient): hint outputs carry their marker into the saved file, which
    hints_used reads; in a folder start --class made, reveal prints no solution line."""
    from nbclient import NotebookClient

    ladders = json.loads((hints.HINTS / "03-makemore-backprop.json").read_text())
    cells = [
        "from checks import hint",
        'hint("counts")',
        'hint("counts")',
        'hint("logprobs", reveal=True)',
        "print('no hint here')",
        f"import json; open({MANIFEST!r}, 'w').write(json.dumps({{'edition': 'class'}}))",
        'hint("probs", reveal=True)',
    ]
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(s) for s in cells])
    client = NotebookClient(nb, timeout=120, resources={"metadata": {"path": str(tmp_path)}})
    monkeypatch.delenv("WORKBOOK_EDITION", raising=False)
    client.execute()
    saved = tmp_path / "submitted.ipynb"
    nbformat.write(nb, saved)
    submitted = json.loads(saved.read_text())  # the file as the grader reads it
    assert hints_used(submitted) == {"dcounts": 2, "dlogprobs": 3}
    assert reveals_used(submitted) == {"dlogprobs"}
    assert hints_used(nbformat.read(saved, as_version=4)) == hints_used(submitted)
    refused = "".join(json.dumps(o) for o in submitted["cells"][6]["outputs"])
    assert "off for this course" in refused
    assert ladders["dprobs"][0]["solution"].splitlines()[0] not in refused
    revealed = "".join(json.dumps(o) for o in submitted["cells"][3]["outputs"])
    assert json.dumps(ladders["dlogprobs"][0]["solution"].splitlines()[0])[1:-1] in revealed


def test_the_class_folder_gets_the_same_notebooks(tmp_path):
    copy_notebooks(tmp_path, class_edition=True)
    for nb in NOTEBOOKS.glob("*.ipynb"):
        assert (tmp_path / nb.name).read_bytes() == nb.read_bytes()


def test_the_command_line_start_class(tmp_path, monkeypatch, capsys):
    from checks.cli import main

    monkeypatch.delenv("WORKBOOK_EDITION", raising=False)
    assert main(["start", str(tmp_path / "c"), "--class", "--no-lab"]) == 0
    assert class_edition(tmp_path / "c") and "off for this course" in capsys.readouterr().out
    assert main(["start", str(tmp_path / "p"), "--no-lab"]) == 0
    assert not class_edition(tmp_path / "p")
