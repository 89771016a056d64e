"""A class of notebook 03's variants graded (#26 items 3, 4 and 6): each learner against their own
variant, checked against the hand-out's record and not against the seed the notebook carries, a
reference run per variant, and the same rows from the dask executor as from the local one."""

from __future__ import annotations

import json
from dataclasses import replace

import nbformat
import pytest

from checks.authoring.handout import NOTEBOOK, RECORD
from checks.grading.cli import main
from checks.paths import cache_dir
from checks.variants import Makemore
from tests.submissions import CLASS, answered, keep_references, options

pytestmark = pytest.mark.slow

# A's RMS norm takes out two of batch norm's cells, and two of its checks (35 - 2 = 33)
A = Makemore(activation="relu", norm="rmsnorm", loss="label-smoothing", smoothing=0.1, n_hidden=48)
# B's layer norm renames its tensors (dlnmeani for dbnmeani), and so its checks
B = Makemore(activation="gelu", norm="layernorm", n_embd=8, block_size=4)
# the hand-out's record: ana, ben and cat were given A, dan B; eve is not on the roster
HANDED = {"ana": 0, "ben": 0, "cat": 0, "dan": 1}
SEEDS = (101, 202)
# what a learner who copies the lecture's public answers writes where A's differ from them
LECTURE = {
    "dhpreact": "dhpreact = (1.0 - h**2) * dh",
    "dlogprobs": "dlogprobs = torch.zeros_like(logprobs); dlogprobs[range(n), Yb] = -1.0 / n",
}
CHANGED_IN_A = {"ex1/dhpreact", "ex1/dlogprobs"}


def unseeded(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """``nb`` with no variant and no learner in its metadata (its cells pasted into a new one)."""
    for key in ("variant", "learner"):
        nb.metadata["backprop-workbook"].pop(key)
    return nb


@pytest.fixture(scope="module")
def handout(tmp_path_factory):
    folder = tmp_path_factory.mktemp("handout")
    record = {
        "notebook": NOTEBOOK,
        "class_seed": 1,
        "variants": [{"seed": s, **v.to_metadata()} for s, v in zip(SEEDS, (A, B), strict=True)],
        "learners": {who: {"name": who.title(), "variant": i} for who, i in HANDED.items()},
    }
    (folder / RECORD).write_text(json.dumps(record))
    return folder


@pytest.fixture(scope="module")
def learners():
    return {
        "ana": answered(A, SEEDS[0], "ana"),
        "ben": answered(A, SEEDS[0], "ben", LECTURE),
        "cat": answered(B, SEEDS[1], "dan"),  # dan's notebook, handed in by cat
        "dan": unseeded(answered(B, SEEDS[1], "dan")),
        "eve": answered(B, SEEDS[1], "eve"),
    }


@pytest.fixture(scope="module")
def graded(grade_class, learners, handout):
    return grade_class(learners, replace(CLASS, jobs=2), NOTEBOOK, handout=handout)


def test_each_learner_is_graded_against_their_own_variant(graded):
    ana, ben = graded.of("ana"), graded.of("ben")
    assert len(ana) == 33 and all(r.passed for r in ana.values())
    assert {"ex1/dhprerms", "ex1/drmsq", "ex3/dhprerms", "ex4/drmsgain"} <= set(ana)
    assert not any(r.note for r in ana.values())
    # the lecture's answers where A's differ earn what wrong answers earn, and nothing cascades
    assert {c for c, r in ben.items() if not r.passed} == CHANGED_IN_A
    assert all(ben[c].mistake not in ("", "upstream") for c in CHANGED_IN_A)


def test_one_reference_run_per_variant_and_the_solutions_graded_first(graded):
    runs = [line for line in graded.log if line.startswith(("reference run", "reference of"))]
    assert len(runs) == 2 and all("(variant " in line for line in runs)
    calibrations = [line for line in graded.log if line.startswith("grading the solution")]
    assert len(calibrations) == 2


def test_a_swapped_notebook_is_graded_against_its_submitters_variant_and_said_so(graded):
    cat = graded.of("cat")
    assert all("the notebook is dan's, not cat's" in r.note for r in cat.values())
    assert all("graded against cat's own variant" in r.note for r in cat.values())
    assert {c for c, r in cat.items() if not r.passed} >= {"ex1/dhpreact", "ex1/dlogprobs"}


def test_a_notebook_without_its_metadata_or_off_the_roster_says_what_it_was_graded_as(graded):
    dan, eve = graded.of("dan"), graded.of("eve")
    assert all(r.passed for r in dan.values()) and len(dan) == 35
    assert {"ex1/dlnmeani", "ex3/dhpreln", "ex4/dlngain"} <= set(dan) and "ex1/dbnmeani" not in dan
    # its metadata is gone, but its imports cell's variant(...) call names dan's own variant
    assert not any(r.note for r in dan.values())
    assert all(r.passed for r in eve.values())
    assert all(
        r.note == f"eve is not in the hand-out of 03; graded as the variant the notebook names "
        f"(seed {SEEDS[1]}), unchecked"
        for r in eve.values()
    )


def test_the_self_check_grades_a_learners_notebook_against_its_variant(
    graded, learners, tmp_path, monkeypatch, capsys
):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    keep_references(graded.cache, cache_dir() / "reference", "03-makemore-backprop")
    mine = tmp_path / NOTEBOOK
    nbformat.write(learners["ben"], mine)
    assert main(["--self", str(mine), *options(CLASS), "--jobs", "1"]) == 0
    said = capsys.readouterr()
    assert "31 / 33 checks pass" in said.out and "✗ ex1/dhpreact" in said.out
    assert f"graded as the variant the notebook names (seed {SEEDS[0]})" in said.out
    assert "reference run" not in said.err and "grading the solution" not in said.err


def test_dask_gives_the_local_rows(grade_class, learners, handout, graded):
    some = {who: learners[who] for who in ("cat", "dan")}
    on_dask = grade_class(
        some, replace(CLASS, jobs=2), NOTEBOOK, handout=handout, executor="dask"
    ).rows
    local = [r for r in graded.rows if r.submission in some]
    assert sorted(map(str, on_dask)) == sorted(map(str, local))


def test_an_unreadable_hand_out_stops_before_anything_is_written(learners, tmp_path):
    from checks.grading.grader import grade
    from checks.grading.settings import SetupError

    (tmp_path / "ana").mkdir()
    nbformat.write(learners["ana"], tmp_path / "ana" / NOTEBOOK)
    for broken in ("{}", '{"notebook": "03-makemore-backprop.ipynb", "learners": []}'):
        (tmp_path / RECORD).write_text(broken)
        with pytest.raises(SetupError, match="no hand-out's record"):
            grade([tmp_path / "ana"], tmp_path / "out", CLASS, handout=tmp_path)
        assert not (tmp_path / "out").exists()


def test_learners_added_to_the_hand_out_leave_the_others_graded(
    graded, learners, handout, tmp_path
):
    from checks.grading.grader import grade

    record = json.loads((handout / RECORD).read_text())
    for who in ("ana", "dan"):
        (tmp_path / who).mkdir()
        nbformat.write(learners[who], tmp_path / who / NOTEBOOK)
    subs, out = [tmp_path / "ana", tmp_path / "dan"], tmp_path / "out"
    for extra in ({}, {"zoe": {"name": "Zoe", "variant": 1}}):  # the hand-out, then --add zoe
        (tmp_path / "handout").mkdir(exist_ok=True)
        handed = {**record, "learners": {**record["learners"], **extra}}
        (tmp_path / "handout" / RECORD).write_text(json.dumps(handed))
        log: list[str] = []
        settings, folder = replace(CLASS, jobs=2), tmp_path / "handout"
        grade(subs, out, settings, cache=graded.cache, handout=folder, progress=log.append)
    assert "resuming: 2 of 2 submissions already graded" in log
