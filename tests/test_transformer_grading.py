"""A class of notebook 05's variants handed out and graded (#26): the hand-out of ``--notebook 05``,
each learner graded against their own variant, the lecture's public answers failing where the
variant differs, and one grading run that reads the hand-outs of two notebooks."""

from __future__ import annotations

import csv
import json

import nbformat
import pytest

from checks.authoring.handout import RECORD, TABLE, main
from checks.grading.cli import main as main_grade
from checks.grading.grader import Grader
from checks.grading.settings import Settings
from checks.grading.variants import HandoutUnreadable, read_handouts
from checks.paths import cache_dir
from checks.variants import Makemore, Transformer, named_in, variant_of
from tests.submissions import answered, keep_references, options

pytestmark = pytest.mark.slow

NAME = "05-transformer-backprop.ipynb"
V = Transformer(activation="relu", norm="rmsnorm", n_embd=30, n_head=3)
SEED = 303
# the lecture's GELU slope, which a learner finds on the internet, where V has ReLU's
LECTURE_SLOPE = {
    "dh_pre": "dh_pre = (0.5 * (1 + torch.tanh(math.sqrt(2 / math.pi) * (h_pre + 0.044715 * "
    "h_pre**3))) + 0.5 * h_pre * (1 - torch.tanh(math.sqrt(2 / math.pi) * (h_pre + 0.044715 * "
    "h_pre**3))**2) * math.sqrt(2 / math.pi) * (1 + 3 * 0.044715 * h_pre**2)) * dh"
}
SETTINGS = Settings(steps=20, cell_timeout=120, notebook_timeout=900, jobs=2)


def _record(notebook: str, variants: list, learners: dict[str, int]) -> dict:
    return {
        "notebook": notebook,
        "class_seed": 1,
        "variants": [{"seed": s, **v.to_metadata()} for s, v in variants],
        "learners": {who: {"name": who.title(), "variant": i} for who, i in learners.items()},
    }


def test_a_hand_out_of_notebook_05(tmp_path, capsys):
    roster = tmp_path / "roster.csv"
    roster.write_text("id,name\nana,Ana\nben,Ben\ncai,Cai\n")
    out = tmp_path / "class"
    args = ["--roster", str(roster), "--out", str(out), "--variants", "3", "--seed", "11"]
    assert main([*args, "--notebook", "05"]) == 0
    record = json.loads((out / RECORD).read_text())
    assert record["notebook"] == NAME and len(record["variants"]) == 3
    for who in ("ana", "ben", "cai"):
        nb = nbformat.read(out / who / NAME, as_version=4)
        seed, v = variant_of(record, who)
        assert isinstance(v, Transformer) and v.answers_differ
        assert nb.metadata["backprop-workbook"]["variant"] == {"seed": seed, **v.to_metadata()}
        assert nb.metadata["backprop-workbook"]["learner"] == who
    with open(out / TABLE) as f:
        assert {row["notebook"] for row in csv.DictReader(f)} == {
            f"{who}/{NAME}" for who in ("ana", "ben", "cai")
        }
    # adding learners keeps the notebook; another notebook or one without variants is refused
    roster.write_text("id,name\nana,Ana\nben,Ben\ncai,Cai\ndee,Dee\n")
    assert main([*args[:4], "--add"]) == 0 and (out / "dee" / NAME).exists()
    capsys.readouterr()
    assert main([*args[:4], "--add", "--notebook", "03"]) == 2
    assert "the hand-out is of 05-transformer-backprop.ipynb" in capsys.readouterr().err
    assert main(["--roster", str(roster), "--out", str(tmp_path / "x"), "--notebook", "04"]) == 2
    assert "only 03 and 05 have variants" in capsys.readouterr().err
    assert not (tmp_path / "x").exists()


def test_one_grading_run_reads_the_hand_outs_of_two_notebooks(tmp_path):
    """ana was handed a variant of 03 and one of 05: each notebook of hers is graded against
    its own hand-out's variant; two hand-outs of one notebook are refused."""
    m = Makemore(activation="relu")
    for name, record in (
        ("three", _record("03-makemore-backprop.ipynb", [(1, m)], {"ana": 0})),
        ("five", _record(NAME, [(SEED, V)], {"ana": 0})),
    ):
        (tmp_path / name).mkdir()
        (tmp_path / name / RECORD).write_text(json.dumps(record))
    records = read_handouts([tmp_path / "three", tmp_path / "five"])
    grader = Grader(tmp_path / "out", Settings(), cache=tmp_path / "cache", handouts=records)
    (tmp_path / "ana").mkdir()
    for v, seed in ((m, 1), (V, SEED)):
        nb = answered(v, seed, "ana")
        name = "05-transformer-backprop.ipynb" if v is V else "03-makemore-backprop.ipynb"
        nbformat.write(nb, tmp_path / "ana" / name)
        ex, note = grader.exercise_of("ana", tmp_path / "ana" / name)
        assert ex is grader.variants[v] and ex.name == name and note == ""
    with pytest.raises(HandoutUnreadable, match="two hand-outs of"):
        read_handouts([tmp_path / "five", tmp_path / "five"])


@pytest.fixture(scope="module")
def graded(grade_class, tmp_path_factory):
    handout = tmp_path_factory.mktemp("handout05")
    record = _record(NAME, [(SEED, V)], {"ana": 0, "ben": 0})
    (handout / RECORD).write_text(json.dumps(record))
    learners = {
        "ana": answered(V, SEED, "ana"),
        "ben": answered(V, SEED, "ben", LECTURE_SLOPE),
    }
    return grade_class(learners, SETTINGS, NAME, handout=handout)


def test_each_learner_of_05_is_graded_against_their_own_variant(graded):
    ana, ben = graded.of("ana"), graded.of("ben")
    assert all(r.passed for r in ana.values()) and not any(r.note for r in ana.values())
    # RMS norm's checks, ReLU's function: the variant's own names
    assert {"ex1/dlnf_ms", "ex1/dlnf_sq", "ex2/dx_relu"} <= set(ana)
    assert not {"ex1/dlnf_mean", "ex1/dlnf_diff", "ex2/dx_gelu"} & set(ana)
    assert set(ben) == set(ana)
    # the lecture's GELU slope earns what a wrong answer earns, and nothing cascades
    assert {c for c, r in ben.items() if not r.passed} == {"ex1/dh_pre"}
    assert ben["ex1/dh_pre"].mistake not in ("", "upstream")
    runs = [line for line in graded.log if line.startswith(("reference run", "reference of"))]
    assert len(runs) == 1 and "(variant " in runs[0]


def test_the_self_check_grades_a_05_notebook_against_its_variant(
    graded, tmp_path, monkeypatch, capsys
):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    keep_references(graded.cache, cache_dir() / "reference", "05-transformer-backprop")
    mine = tmp_path / NAME
    nbformat.write(answered(V, SEED, "ben", LECTURE_SLOPE), mine)
    assert main_grade(["--self", str(mine), *options(SETTINGS), "--jobs", "1"]) == 0
    said = capsys.readouterr()
    total = len(graded.of("ben"))
    assert f"{total - 1} / {total} checks pass" in said.out and "✗ ex1/dh_pre" in said.out
    assert f"graded as the variant the notebook names (seed {SEED})" in said.out
    assert "reference run" not in said.err and "grading the solution" not in said.err


def test_an_rms_norms_backward_is_probed_on_rows_rms_norm_makes():
    """The grader probes ``rmsnorm_backward`` on fresh rows divided by their root mean square,
    not on layer norm's rows of mean 0 (on those a slip with a term in Σ x_hat would pass)."""
    import torch

    from checks.authoring.variants import build
    from checks.grading.recorder import rms_normed

    probes = [
        c.metadata["workbook"]["probe"]
        for c in build.solution(V).cells
        if "workbook" in c.metadata and "rmsnorm_backward" in c.source
    ]
    assert len(probes) == 1 and "__grade_rms_normed(" in probes[0]
    x = torch.randn(4, 7, 30, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    x_hat, rstd = rms_normed(x + 1.0)  # rows whose mean is far from 0
    assert torch.allclose(x_hat, (x + 1.0) * rstd)
    assert torch.allclose((x_hat**2).mean(-1), torch.ones(4, 7, dtype=torch.float64), atol=1e-4)
    assert x_hat.mean(-1).abs().min() > 0.5  # no mean taken away


def _unseeded(nb):
    nb.metadata["backprop-workbook"].pop("variant")
    return nb


def test_what_a_notebook_says_of_its_variant_is_read_per_notebook(tmp_path):
    """A notebook whose metadata is lost names its variant in its imports cell, without its order:
    that is no swap. Metadata copied from the other notebook falls back to the imports cell, or
    says whose it is. A call of the other notebook is passed over."""
    from checks.grading.variants import assigned
    from checks.variants import makemore
    from checks.variants import transformer as tv

    v = tv.draw(7)  # a drawn variant: its order is not the lecture's
    assert v.order != tv.GROUPS
    record = _record(NAME, [(SEED, v)], {"ana": 0})
    path = tmp_path / NAME
    nbformat.write(_unseeded(answered(v, SEED, "ana")), path)
    got = assigned(record, "ana", path, NAME)
    assert (got.variant, got.note) == (v, "")
    # the metadata of a variant of 03 in a copy of 05: its imports cell's call still names 05's
    nb = answered(v, SEED, "ana")
    nb.metadata["backprop-workbook"]["variant"] = {"seed": 1, **makemore.draw(1).to_metadata()}
    nbformat.write(nb, path)
    assert assigned(None, "ana", path, NAME).variant.activation == v.activation
    # with no call either, the rows say whose metadata it is
    for cell in nb.cells:
        cell.source = cell.source.replace("variant(", "print(")
    nbformat.write(nb, path)
    note = assigned(None, "ana", path, NAME).note
    assert "its metadata names a variant of notebook 03, not 05" in note, note
    both = 'variant(activation="relu")\nvariant("05", norm="rmsnorm")'
    assert named_in(both, NAME) == Transformer(norm="rmsnorm")
    assert named_in(both) == Makemore(activation="relu")


def test_a_record_is_read_as_its_notebook_whatever_its_spelling(tmp_path):
    record = _record("05-transformer-backprop", [(SEED, V)], {"ana": 0})
    (tmp_path / RECORD).write_text(json.dumps(record))
    assert list(read_handouts([tmp_path])) == [NAME]
    wrong = _record(NAME, [(1, Makemore(activation="relu"))], {"ana": 0})
    (tmp_path / RECORD).write_text(json.dumps(wrong))
    with pytest.raises(HandoutUnreadable, match="its variant 0 is no variant of " + NAME):
        read_handouts([tmp_path])


def test_a_notebook_with_no_hand_out_among_those_given_says_it_is_unchecked(tmp_path):
    m = Makemore(activation="relu")
    grader = Grader(
        tmp_path / "out",
        Settings(),
        cache=tmp_path / "cache",
        handouts={NAME: _record(NAME, [(SEED, V)], {"ana": 0})},
    )
    (tmp_path / "ana").mkdir()
    path = tmp_path / "ana" / "03-makemore-backprop.ipynb"
    nbformat.write(answered(m, 1, "ana"), path)
    ex, note = grader.exercise_of("ana", path)
    assert ex is grader.variants[m]
    assert note == (
        "graded as the variant the notebook names (seed 1); no hand-out of 03 was given, so "
        "unchecked"
    )
