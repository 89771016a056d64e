"""The hand-out of notebook 03's variants (#26 items 2 and 4): a notebook per learner of a roster,
the instructor's record, and a clear refusal, with nothing written, for a roster or a folder that
no hand-out can be made from."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import nbformat
import pytest

from checks.authoring.handout import NOTEBOOK, RECORD, TABLE, main, variant_of
from checks.authoring.variants import build
from checks.cli import main as cli
from checks.variants import Makemore

CLASS = [("ada", "Ada Lovelace"), ("bo", "Bo Diddley"), ("cy", "Cy Young"), ("di", "Di Fontaine")]


def _roster(path: Path, rows: list[tuple[str, ...]], header: str = "id,name") -> Path:
    path.write_text(header + "\n" + "".join(",".join(r) + "\n" for r in rows), encoding="utf-8")
    return path


def _files(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in folder.rglob("*") if p.is_file()}


def test_each_learner_gets_a_notebook_of_their_variant_and_the_record_says_which(tmp_path):
    roster = _roster(tmp_path / "roster.csv", CLASS)
    out = tmp_path / "handout"
    assert cli(["variants", "--roster", str(roster), "--out", str(out), "--variants", "3"]) == 0
    record = json.loads((out / RECORD).read_text())
    assert list(record["learners"]) == [who for who, _ in CLASS] and len(record["variants"]) == 3
    table = list(csv.DictReader((out / TABLE).open()))
    assert [r["id"] for r in table] == [who for who, _ in CLASS]
    for who, name in CLASS:
        nb = nbformat.read(out / who / NOTEBOOK, as_version=4)
        meta = nb.metadata["backprop-workbook"]
        seed, v = variant_of(record, who)
        assert meta["learner"] == who and meta["variant"]["seed"] == seed
        assert (
            Makemore.from_metadata({k: x for k, x in meta["variant"].items() if k != "seed"}) == v
        )
        row = next(r for r in table if r["id"] == who)
        assert (row["name"], row["activation"], int(row["seed"])) == (name, v.activation, seed)
        code = "\n".join(c.source for c in nb.cells if c.cell_type == "code")
        assert "BEGIN SOLUTION" not in code and "dhpreact = ...  # TODO" in code
        assert [c.source for c in nb.cells] == [c.source for c in build.student(v, seed).cells]


def test_the_same_class_seed_makes_the_same_hand_out(tmp_path):
    roster = _roster(tmp_path / "roster.csv", CLASS)
    for out in ("one", "two"):
        assert main(["--roster", str(roster), "--out", str(tmp_path / out), "--seed", "5"]) == 0
    assert _files(tmp_path / "one") == _files(tmp_path / "two")


def test_adding_learners_writes_only_theirs_and_keeps_the_rest(tmp_path, capsys):
    out = tmp_path / "handout"
    first = _roster(tmp_path / "first.csv", CLASS[:2])
    assert main(["--roster", str(first), "--out", str(out), "--seed", "11"]) == 0
    before = _files(out)
    everyone = _roster(tmp_path / "everyone.csv", CLASS)
    assert main(["--roster", str(everyone), "--out", str(out)]) == 2  # no --add: refused
    assert "already holds a hand-out" in capsys.readouterr().err and _files(out) == before
    assert main(["--roster", str(everyone), "--out", str(out), "--add"]) == 0
    after = _files(out)
    assert {k: after[k] for k in before if k not in (RECORD, TABLE)} == {
        k: v for k, v in before.items() if k not in (RECORD, TABLE)
    }
    assert {f"{who}/{NOTEBOOK}" for who, _ in CLASS} <= set(after)
    # a class drawn with seed 11 from the start gives every learner the same variant
    assert main(["--roster", str(everyone), "--out", str(tmp_path / "fresh"), "--seed", "11"]) == 0
    assert json.loads(after[RECORD]) == json.loads((tmp_path / "fresh" / RECORD).read_text())


@pytest.mark.parametrize(
    "rows, header, words",
    [
        (CLASS, "who,name", "no column id (its header: who, name)"),
        (CLASS, "id,full name", "no column name"),
        ([*CLASS, ("bo", "Bo Again")], "id,name", "line 6: the id 'bo' is on line 3 already"),
        ([("ada", ""), *CLASS[1:]], "id,name", "line 2: the name of ada is empty"),
        ([("", "Nobody"), *CLASS[1:]], "id,name", "line 2: the id is empty"),
        ([("../up", "Up"), *CLASS[1:]], "id,name", "the id '../up' cannot be a folder name"),
        ([], "id,name", "lists no learner"),
    ],
)
def test_a_roster_that_cannot_be_handed_out_is_named_and_nothing_is_written(
    tmp_path, capsys, rows, header, words
):
    roster = _roster(tmp_path / "roster.csv", rows, header)
    assert main(["--roster", str(roster), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert words in err and err.startswith("no hand-out: ") and "Traceback" not in err
    assert not (tmp_path / "out").exists()


def test_a_roster_from_a_spreadsheet_reads_as_written(tmp_path):
    roster = tmp_path / "roster.csv"
    roster.write_bytes(
        "\ufeffID, Name ,email\r\nada,Ada Lovelace,a@x\r\n\r\nbo,Bo,b@x\r\n".encode()
    )
    assert main(["--roster", str(roster), "--out", str(tmp_path / "out")]) == 0
    record = json.loads((tmp_path / "out" / RECORD).read_text())
    assert {who: e["name"] for who, e in record["learners"].items()} == {
        "ada": "Ada Lovelace",
        "bo": "Bo",
    }


def test_a_folder_of_something_else_or_a_changed_learner_is_refused(tmp_path, capsys):
    roster = _roster(tmp_path / "roster.csv", CLASS)
    other = tmp_path / "other"
    other.mkdir()
    (other / "notes.txt").write_text("mine")
    assert main(["--roster", str(roster), "--out", str(other), "--add"]) == 2
    assert "holds files and no hand-out" in capsys.readouterr().err
    assert _files(other) == {"notes.txt": b"mine"}
    out = tmp_path / "handout"
    assert main(["--roster", str(roster), "--out", str(out), "--seed", "3"]) == 0
    before = _files(out)
    renamed = _roster(tmp_path / "renamed.csv", [("ada", "Ada King"), *CLASS[1:]])
    assert main(["--roster", str(renamed), "--out", str(out), "--add"]) == 2
    assert (
        "ada is 'Ada Lovelace' in the hand-out, 'Ada King' in the roster" in capsys.readouterr().err
    )
    assert main(["--roster", str(roster), "--out", str(out), "--add", "--seed", "4"]) == 2
    assert "class seed 3, not 4" in capsys.readouterr().err
    assert _files(out) == before


@pytest.mark.parametrize(
    "rows, words",
    [
        ([("handout.json", "A File"), *CLASS[1:]], "the id 'handout.json' cannot be a folder name"),
        ([("x" * 65, "Long"), *CLASS[1:]], "cannot be a folder name"),
        ([("a\tb", "Tab"), *CLASS[1:]], "cannot be a folder name"),
        ([*CLASS, ("ADA", "Ada Again")], "the id 'ADA' is on line 2 already (letter case aside)"),
    ],
)
def test_an_id_that_is_no_folder_of_its_own_is_refused(tmp_path, capsys, rows, words):
    roster = _roster(tmp_path / "roster.csv", rows)
    assert main(["--roster", str(roster), "--out", str(tmp_path / "out")]) == 2
    assert words in capsys.readouterr().err and not (tmp_path / "out").exists()


def test_an_out_folder_or_a_record_that_cannot_be_added_to_is_refused(tmp_path, capsys):
    roster = _roster(tmp_path / "roster.csv", CLASS)
    (tmp_path / "a-file").write_text("x")
    assert main(["--roster", str(roster), "--out", str(tmp_path / "a-file")]) == 2
    assert "is a file, not a folder" in capsys.readouterr().err
    assert main(["--roster", str(roster), "--out", str(tmp_path / "none"), "--add"]) == 2
    assert "holds no hand-out to add to" in capsys.readouterr().err
    out = tmp_path / "handout"
    assert main(["--roster", str(roster), "--out", str(out), "--variants", "2"]) == 0
    assert main(["--roster", str(roster), "--out", str(out), "--add", "--variants", "3"]) == 2
    assert "has 2 variants, not 3" in capsys.readouterr().err
    for broken in ("{}", '{"notebook": "03-makemore-backprop.ipynb", "learners": []}', "[]"):
        (out / RECORD).write_text(broken)
        assert main(["--roster", str(roster), "--out", str(out), "--add"]) == 2
        err = capsys.readouterr().err
        assert "is not a hand-out's record" in err and "Traceback" not in err
