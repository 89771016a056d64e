"""Notebook 03's variants (#26): drawn from a seed, made from the lecture's notebook by edits, the
lecture's notebook itself for the default, and every drawn solution's gradients equal to
autograd's."""

from __future__ import annotations

import json
import re
from dataclasses import replace
from pathlib import Path

import matplotlib
import nbformat
import pytest
import torch

from checks import hint, hints, session, summary, variant
from checks.authoring.variants import build
from checks.authoring.variants.edits import EditError, Sub, apply
from checks.grading.exercise import load_exercise
from checks.grading.review import source_reviews
from checks.grading.variants import Assigned, assigned
from checks.paths import HINTS
from checks.variants import (
    ACTIVATIONS,
    GROUPS,
    LOSSES,
    NORMS,
    Makemore,
    check_record,
    checks_renamed,
    draw,
    makemore,
    resized,
)
from checks.verdict import Result
from tests.inprocess import run_cells
from tests.notebooks import assert_passes_nbval

matplotlib.use("Agg")
SEEDS = range(50)
SHAPE = re.compile(r"^# (d\w+): dL/d\w+, shape (\([\d, ]*\))$", re.M)
LAST_CHECK = "loss4.backward("  # the cell of exercise 4's last check against autograd


def _run(
    nb: nbformat.NotebookNode, answers: dict[str, str] | None = None, whole: bool = False
) -> tuple[dict, list]:
    """Run ``nb`` in this process up to exercise 4's last check (``whole``: to the end)."""
    return run_cells(nb, answers, stop=None if whole else LAST_CHECK)


@pytest.fixture(autouse=True)
def _few_steps(monkeypatch):
    monkeypatch.setenv("WORKBOOK_STEPS", "20")


def test_the_default_variant_makes_no_edit_and_sizes_map_to_themselves():
    lecture = [c.source for c in build.lecture().cells]
    assert build.sources(Makemore()) == lecture
    # the shapes' rewriting, forced on the lecture's own sizes, gives every cell back unchanged
    assert [resized(text, Makemore()) for text in lecture] == lecture
    # a variant in the lecture's order lists the lecture's checks in the lecture's order
    assert build.checks(Makemore(activation="relu")) == session.expected_checks(build.NOTEBOOK)


def test_a_seed_draws_one_variant_and_never_the_lectures_answers():
    drawn = [draw(seed) for seed in range(200)]
    assert drawn[:20] == [draw(seed) for seed in range(20)]
    assert not any(v.answers_differ is False for v in drawn)
    for axis, values in (("activation", ACTIVATIONS), ("norm", NORMS), ("loss", LOSSES)):
        assert {getattr(v, axis) for v in drawn} == set(values), axis
    assert {v.order for v in drawn} > {GROUPS}
    assert all(Makemore.from_metadata(v.to_metadata()) == v for v in drawn)


@pytest.mark.parametrize(
    "bad, words",
    [
        ({"activation": "swish"}, "activation 'swish'"),
        ({"loss": "label-smoothing"}, "smoothing 0.0"),
        ({"smoothing": 0.1}, "smoothing 0.1"),
        ({"order": (("dh", "dW2"), GROUPS[1], GROUPS[2])}, "order"),
    ],
)
def test_a_variant_that_cannot_be_is_refused(bad, words):
    with pytest.raises(ValueError, match=re.escape(words)):
        Makemore(**bad)
    with pytest.raises(ValueError, match="no colour"):
        Makemore.from_metadata({"colour": "red"})


@pytest.mark.parametrize(
    "choices",
    [{"block_size": 5}, {"n_embd": [1]}, {"n_hidden": 10**9}, {"n_hidden": 64.0}, {"order": 3}],
)
def test_sizes_and_an_order_no_notebook_can_have_are_refused(choices):
    with pytest.raises(ValueError, match=next(iter(choices))):
        Makemore.from_metadata(choices)


def _notebook(path, variant: dict | None = None, learner: str | None = None, call: str = ""):
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(call or "x = 1")])
    meta = {k: x for k, x in (("variant", variant), ("learner", learner)) if x is not None}
    nb.metadata["backprop-workbook"] = meta
    nbformat.write(nb, path)
    return path


RELU, GELU = Makemore(activation="relu"), Makemore(activation="gelu", n_hidden=48)
RECORD = {
    "notebook": "03-makemore-backprop.ipynb",
    "class_seed": 1,
    "variants": [{"seed": 5, **RELU.to_metadata()}, {"seed": 6, **GELU.to_metadata()}],
    "learners": {"ana": {"name": "Ana", "variant": 0}, "bo": {"name": "Bo", "variant": 1}},
}


def test_the_variant_graded_against_is_the_records_and_the_notebook_only_says_so(tmp_path):
    mine = _notebook(tmp_path / "a.ipynb", {"seed": 5, **RELU.to_metadata()}, "ana")
    assert assigned(RECORD, "ana", mine) == Assigned(RELU, 5, "", "ana")
    # bo hands in ana's notebook; a folder off the roster hands in bo's; the metadata is garbage
    swapped = assigned(RECORD, "bo", mine)
    assert (swapped.variant, swapped.learner) == (
        GELU,
        "bo",
    ) and "the notebook is ana's" in swapped.note
    late = assigned(RECORD, "bo_late", _notebook(tmp_path / "b.ipynb", {}, "bo"))
    assert (late.variant, late.learner) == (
        GELU,
        "bo",
    ) and "graded against bo's variant" in late.note
    junk = assigned(RECORD, "ana", _notebook(tmp_path / "c.ipynb", {"activation": "swish"}))
    assert junk.variant == RELU and "its variant cannot be read" in junk.note
    # cells pasted into a new notebook: no metadata, the imports cell's call still says which
    call = 'variant(activation="gelu", n_hidden=48)  # your own network'
    pasted = _notebook(tmp_path / "d.ipynb", call=call)
    assert assigned(None, "me", pasted) == Assigned(
        GELU, None, "graded as the variant the notebook names (its imports cell's variant(...))"
    )
    assert assigned(None, "me", _notebook(tmp_path / "e.ipynb")) == Assigned(None, None, "")
    nothing = assigned(RECORD, "ana", _notebook(tmp_path / "f.ipynb"))
    assert nothing == Assigned(
        RELU, 5, "the notebook names no variant: graded against ana's, from the hand-out", "ana"
    )
    off = assigned(RECORD, "zed", _notebook(tmp_path / "g.ipynb"))
    assert off == Assigned(
        None,
        None,
        "zed is not in the hand-out of 03; graded as the lecture's notebook 03: it names none",
    )


def test_a_record_that_is_no_hand_out_is_refused_whole():
    assert check_record(json.loads(json.dumps(RECORD))) == RECORD
    for broken in (
        {**RECORD, "learners": []},
        {**RECORD, "variants": [{"activation": "relu"}]},
        {**RECORD, "variants": [{"seed": 5, "activation": "swish"}]},
        {**RECORD, "learners": {"ana": {"name": "Ana", "variant": 0.0}}},
        {**RECORD, "notebook": "01-scalar-autograd.ipynb"},
    ):
        with pytest.raises(ValueError):
            check_record(broken)


def test_an_edit_that_no_longer_fits_the_notebook_stops_the_generator():
    with pytest.raises(EditError, match="0 cells"):
        apply(["a = 1", "b = 2"], [Sub("c = 3", "c = 4")])
    with pytest.raises(EditError, match="more than once"):
        apply(["a = 1; a = 1"], [Sub("a = 1", "a = 2")])


def test_every_variant_of_50_seeds_matches_autograd_with_its_shapes_as_written():
    lecture_checks = set(build.checks(Makemore()))
    for seed in SEEDS:
        v = draw(seed)
        nb = build.solution(v, seed=seed)
        namespace, results = _run(nb)
        failed = [f"{r.name}: {r.mistake} {r.hint}" for r in results if not r.ok]
        assert not failed, (seed, v, failed)
        assert {r.name for r in results} == set(build.checks(v)), seed
        # layer norm renames batch norm's tensors (lnraw for bnraw), and so their checks
        renamed = set(checks_renamed(list(lecture_checks), v.norm))
        assert set(build.checks(v)) == renamed
        written = [(m[1], m[2]) for c in nb.cells for m in SHAPE.finditer(c.source)]
        # exercise 1's 26 answers, 2's and 3's; RMS norm has no dbnmeani and one input for bndiff;
        # without a norm, no batch norm's 9 and no exercise 3
        assert len(written) == {"rmsnorm": 26, "none": 18}.get(v.norm, 28)
        for name, shape in written:
            assert str(tuple(namespace[name].shape)) == shape, (seed, name)


@pytest.mark.parametrize("norm", NORMS)
def test_each_normalisations_notebook_runs_to_its_end(norm):
    v = Makemore(norm=norm, activation="sigmoid", n_hidden=48, block_size=4)
    ns, results = _run(build.solution(v, seed=1), whole=True)
    assert results and all(r.ok for r in results) and ns["lossi"]
    # its evaluation (no calibration but batch norm's) and its sampling work on the trained net
    dev = ns["F"].cross_entropy(ns["logits_of"](ns["net"], ns["Xdev"]), ns["Ydev"]).item()
    assert 2.5 < dev < 4.0  # 20 steps from log(27) = 3.3: trained a little, nothing broken
    assert set(ns["make_name"](ns["net"], ns["g_sample"])) <= set(ns["itos"].values())


def _failed(v: Makemore, answers: dict[str, str]) -> dict[str, Result]:
    return {r.name: r for r in _run(build.solution(v), answers)[1] if not r.ok}


def test_the_lectures_answer_fails_a_variant_and_its_slips_are_named():
    relu = Makemore(activation="relu")
    lecture_slope = _failed(relu, {"dhpreact": "dhpreact = (1.0 - h**2) * dh"})
    assert "hpreact" in lecture_slope
    assert lecture_slope["hpreact"].mistake != "upstream"
    sign = _failed(relu, {"dhpreact": "dhpreact = (hpreact > 0) * -dh"})
    assert sign["hpreact"].mistake == "sign"
    assert {r.mistake for name, r in sign.items() if name != "hpreact"} <= {"upstream"}
    smoothed = Makemore(loss="label-smoothing", smoothing=0.1)
    one_hot = _failed(
        smoothed,
        {"dlogprobs": "dlogprobs = torch.zeros_like(logprobs); dlogprobs[range(n), Yb] = -1.0 / n"},
    )
    assert "logprobs" in one_hot and one_hot["logprobs"].mistake != "upstream"
    bessel = _failed(
        Makemore(norm="batchnorm-biased"),
        {"dbndiff2": "dbndiff2 = 1.0 / (n - 1) * torch.ones_like(bndiff2) * dbnvar"},
    )
    assert bessel["bndiff2"].mistake == "bessel"
    # layer norm's slips: batch norm's axis, batch norm's factor
    ln = Makemore(norm="layernorm")
    axis = _failed(ln, {"dlnvar_inv": "dlnvar_inv = (lndiff * dlnraw).sum(0, keepdim=True)"})
    assert axis["lnvar_inv"].mistake == "shape" and "over axis 1" in axis["lnvar_inv"].hint
    batch = _failed(ln, {"dlndiff2": "dlndiff2 = 1.0 / n * torch.ones_like(lndiff2) * dlnvar"})
    assert batch["lndiff2"].mistake == "scale"
    assert {r.mistake for name, r in batch.items() if name != "lndiff2"} == {"upstream"}


def test_a_variants_student_copy_and_ladders_come_from_its_solution():
    v = replace(draw(3), activation="gelu", loss="label-smoothing", smoothing=0.2)
    student = build.student(v, seed=3)
    code = "\n".join(c.source for c in student.cells if c.cell_type == "code")
    assert "BEGIN SOLUTION" not in code and "torch.erf(hpreact" not in code
    assert "dhpreact = ...  # TODO" in code
    meta = student.metadata["backprop-workbook"]
    assert meta["variant"]["seed"] == 3
    assert Makemore.from_metadata({k: x for k, x in meta["variant"].items() if k != "seed"}) == v
    assert meta["checks"] == build.checks(v)
    ladders = build.ladders(v)
    first = ladders["dhpreact"][0]
    assert "F.gelu(hpreact)" in first["rungs"][0] and "torch.erf(hpreact" in first["solution"]
    assert [lad["check"] for lad in ladders["dlogits"]] == ["logits", "logits (fused)", "dlogits"]
    assert "targets" in ladders["dlogits"][1]["solution"]


@pytest.mark.parametrize(
    ("changes", "kept"),
    [
        ({"n_embd": 16, "n_hidden": 96, "block_size": 4}, True),  # the lecture's maths, resized
        ({"activation": "relu"}, False),
        ({"norm": "batchnorm-biased", "n_hidden": 48}, False),
        ({"norm": "none"}, False),
        ({"loss": "label-smoothing", "smoothing": 0.1}, False),
    ],
)
def test_the_fast_step_exercise_is_kept_only_for_the_lectures_maths(changes, kept):
    """Exercise 5's fast step is the lecture network's: a variant of other maths leaves it out
    (no stray heading) and races the learner's step against an autograd step made from its own
    forward pass, without the lecture solution's rows; a resized one keeps the exercise, and its
    fast step gives its autograd step's gradients at its sizes."""
    v = replace(Makemore(), **changes)
    nb = build.solution(v, seed=1)
    texts = [c.source for c in nb.cells]
    present = {
        "Exercise 5": kept,
        "def step_fast(": kept,
        "race(step_fast, step, autograd=step_autograd,": kept,
        "### What your step costs": not kept,
        "race(step, autograd=step_autograd,": not kept,
        "def step_autograd(": True,
    }
    for anchor, there in present.items():
        assert any(anchor in t for t in texts) == there, anchor
    student = build.student(v, seed=1)
    assert any("def step_fast(" in c.source for c in student.cells) == kept
    if not kept:  # the race of its step, each gradient checked against its autograd step's
        _run(nb, whole=True)
        raced = session.last_race()
        laps = [(lap.name, lap.problem) for lap in raced.laps]
        assert laps == [("autograd", None), ("step", None)]
        assert raced.solution is None  # the lecture solution's steps are another network's
        return
    ns, _ = _run(nb)
    steps = [t for t in texts if t.startswith(("def step_autograd(", "def step_fast("))]
    assert len(steps) == 2
    for text in steps:  # step_autograd and step_fast, defined where the network is
        exec(text, ns)
    net = [p.detach().requires_grad_() for p in ns["net"]]
    loss, expected = ns["step_autograd"](net, ns["Xtr"][:32], ns["Ytr"][:32])
    with torch.no_grad():
        loss_fast, grads = ns["step_fast"](net, ns["Xtr"][:32], ns["Ytr"][:32])
    assert torch.allclose(loss, loss_fast, atol=1e-6)
    for g, e in zip(grads, expected, strict=True):
        assert g.shape == e.shape and torch.allclose(g, e, rtol=1e-4, atol=1e-6)


@pytest.mark.slow
def test_a_generated_solution_passes_nbval(tmp_path):
    v = Makemore(
        activation="gelu",
        norm="batchnorm-biased",
        loss="label-smoothing",
        smoothing=0.05,
        n_embd=12,
        n_hidden=48,
        block_size=4,
        order=tuple(tuple(reversed(g)) for g in GROUPS),
    )
    assert_passes_nbval(build.solution(v, seed=1), tmp_path, steps=50)


def test_a_variants_own_constants_are_no_pasted_answer_but_numbers_beyond_them_are(tmp_path):
    path = tmp_path / "03-makemore-backprop.ipynb"
    nbformat.write(build.solution(Makemore(activation="gelu")), path)
    ex = load_exercise(path)
    right = {a.index: a.solution for a in ex.answers}
    assert source_reviews(ex, right) == {}  # GELU's slope writes out eight numbers of its own
    cell = next(a for a in ex.answers if a.names == ["dhpreact"])
    numbers = ", ".join(f"{x / 100:.2f}" for x in range(40))
    pasted = {**right, cell.index: f"{cell.solution}\ndhpreact += torch.tensor([{numbers}])"}
    assert source_reviews(ex, pasted) == {
        "ex1/dhpreact": "the cell writes out 40 numbers (an answer pasted as numbers?)"
    }


def test_the_kernels_ladders_of_a_variant_are_those_of_its_notebook():
    lecture = json.loads((HINTS / "03-makemore-backprop.json").read_text())
    changed = build.changed_ladders()
    for seed in SEEDS:
        v = draw(seed)
        assert makemore.ladders(v, lecture, changed) == build.ladders(v), seed
    assert makemore.ladders(Makemore(), lecture, changed) == lecture


def test_a_variants_notebook_announces_it_and_hint_speaks_of_it(capsys):
    v = Makemore(activation="sigmoid", loss="label-smoothing", smoothing=0.2, n_hidden=80)
    imports = next(c.source for c in build.student(v, 9).cells if "variant(" in c.source)
    assert (
        'variant(activation="sigmoid", loss="label-smoothing", smoothing=0.2, n_hidden=80)'
        in imports
    )
    hints.reset()
    namespace: dict = {}
    exec(compile(imports, "<cell>", "exec"), namespace)
    assert (
        "your variant of notebook 03: sigmoid, batch norm with Bessel's" in capsys.readouterr().out
    )
    try:
        first = str(hint("hpreact"))
        assert "torch.sigmoid(hpreact)" in first and "tanh" not in first
        assert "smoothed" in str(hint("logprobs")) or "targets" in str(hint("logprobs"))
    finally:
        hints._OWN.clear()
        hints.reset()
        session.own_checks("03-makemore-backprop", None)


def test_a_variants_kernel_lists_its_own_checks(capsys):
    lecture = session.expected_checks("03-makemore-backprop")
    try:
        variant(norm="rmsnorm", order=[list(reversed(g)) for g in GROUPS])
        mine = session.expected_checks("03-makemore-backprop")
        assert mine == build.checks(
            Makemore(norm="rmsnorm", order=tuple(tuple(reversed(g)) for g in GROUPS))
        )
        assert "rmsq" in mine and "bnmeani" not in mine and len(mine) == 33
        assert "rmsq" in str(summary("03-makemore-backprop"))
    finally:
        hints._OWN.clear()
        session.own_checks("03-makemore-backprop", None)
    assert session.expected_checks("03-makemore-backprop") == lecture


def test_a_variant_handed_out_by_another_version_of_the_workbook_says_so(tmp_path):
    from checks.grading.grader import Grader
    from checks.grading.settings import Settings
    from checks.grading.variants import CHANGED
    from checks.variants import NOTEBOOK

    record = json.loads(json.dumps(RECORD))
    record["variants"][0]["made"] = build.digest(build.written(RELU))
    record["variants"][1]["made"] = "0123456789abcdef"  # made by another generator
    grader = Grader(
        tmp_path / "out",
        Settings(),
        cache=tmp_path / "cache",
        handouts={record["notebook"]: record},
    )
    for who in ("ana", "bo"):
        (tmp_path / who).mkdir()
    ana = _notebook(tmp_path / "ana" / NOTEBOOK, {"seed": 5, **RELU.to_metadata()}, "ana")
    bo = _notebook(tmp_path / "bo" / NOTEBOOK, {"seed": 6, **GELU.to_metadata()}, "bo")
    assert grader.exercise_of("ana", ana)[1] == ""
    ex, note = grader.exercise_of("bo", bo)
    assert note == CHANGED and ex.path.parent.name == build.digest(build.written(GELU))
    assert grader.exercise_of("bo", bo)[0] is ex  # generated once


def test_variant_gives_no_hints_where_there_are_no_ladders(monkeypatch, capsys):
    from checks import variants

    monkeypatch.setattr(variants, "HINTS", Path("/nonexistent"))
    variants._files.cache_clear()
    try:
        assert variants.variant(activation="relu") == Makemore(activation="relu")
        assert "your variant of notebook 03: relu" in capsys.readouterr().out
    finally:
        variants._files.cache_clear()
        hints._OWN.clear()
        session.own_checks("03-makemore-backprop", None)
