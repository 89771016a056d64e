"""Notebook 05's variants (checks.variants.transformer, checks.authoring.variants.transformer):
drawn from a seed, generated from the lecture's notebook, right against autograd, named in the
kernel and hinted there; and, for 03's and 05's alike, every combination of the answer-changing
choices generated."""

from __future__ import annotations

import contextlib
import dataclasses
import io
import itertools
import json
import re

import pytest

from checks import hint, hints, session, summary, variant
from checks.authoring.variants import build
from checks.authoring.variants.transformer import parameters
from checks.paths import HINTS
from checks.variants import Transformer, makemore, named_in
from checks.variants import transformer as tv
from tests.inprocess import run_cells
from tests.notebooks import assert_passes_nbval

STEM = tv.STEM
SEEDS = range(50)
TRAINING = "def train_by_hand("  # exercise 3's training: everything before it is checked here
DATA = "words = load_names()"  # the data cell, the same in every variant


def _checked(v: Transformer, answers: dict[str, str] | None = None) -> list:
    """The checks of ``v``'s solution run in this process up to its training (without it)."""
    nb = build.solution(v, seed=1)
    cut = next(i for i, c in enumerate(nb.cells) if TRAINING in c.source)
    nb.cells = nb.cells[:cut]
    return run_cells(nb, answers, keep=DATA)[1]


@pytest.fixture(autouse=True)
def _few_steps(monkeypatch):
    monkeypatch.setenv("WORKBOOK_STEPS", "20")


def test_the_default_variant_makes_no_edit():
    lecture = build.lecture(notebook=STEM)
    assert build.sources(Transformer()) == [c.source for c in lecture.cells]
    assert build.solution(Transformer()) == lecture
    assert build.checks(Transformer(n_embd=48, n_head=6)) == session.expected_checks(STEM)


def test_a_seed_draws_one_variant_and_never_the_lectures_answers():
    drawn = [tv.draw(seed) for seed in range(200)]
    assert drawn[:20] == [tv.draw(seed) for seed in range(20)]
    assert all(v.answers_differ for v in drawn)
    for axis, values in tv.AXES.items():
        assert {getattr(v, axis) for v in drawn} == set(values), axis
    assert {(v.n_embd, v.n_head) for v in drawn} == set(tv.WIDTHS)
    assert len({v.order for v in drawn}) > 100  # of 288 orders
    assert all(Transformer.from_metadata(v.to_metadata()) == v for v in drawn)


@pytest.mark.parametrize("n_embd, n_head", tv.WIDTHS)
def test_no_two_axes_of_a_width_are_alike(n_embd, n_head):
    axes = [16, n_embd, n_embd // n_head, n_head, 3 * n_embd, 4 * n_embd, 27]
    assert n_embd % n_head == 0 and len(set(axes)) == len(axes)


@pytest.mark.parametrize(
    "bad, words",
    [
        ({"activation": "tanh"}, "activation 'tanh'"),
        ({"norm": "batchnorm"}, "norm 'batchnorm'"),
        ({"loss": "label-smoothing"}, "smoothing 0.0"),
        ({"smoothing": 0.1}, "smoothing 0.1"),
        ({"n_embd": 36, "n_head": 6}, "36/6"),  # 6 heads of 6: two axes alike
        ({"n_embd": 36.0}, "36.0/4"),
        ({"order": (("dlnf",), *tv.GROUPS[1:])}, "order"),
    ],
)
def test_a_variant_that_cannot_be_is_refused(bad, words):
    with pytest.raises(ValueError, match=re.escape(words)):
        Transformer(**bad)
    with pytest.raises(ValueError, match="no colour"):
        Transformer.from_metadata({"colour": "red"})


def test_every_variant_of_50_seeds_matches_autograd():
    """Each solution up to exercise 3's training: exercise 1 against autograd, exercise 2's
    functions against autograd and central differences, the two-block check, AdamW."""
    for seed in SEEDS:
        v = tv.draw(seed)
        results = _checked(v)
        assert [r.name for r in results if not r.ok] == [], (seed, v)
        names = [r.name for r in results]
        assert names == build.checks(v)[: len(names)] and len(names) > 100, (seed, v)


def test_a_variants_text_has_its_network_and_not_the_lectures():
    v = Transformer(activation="silu", norm="rmsnorm", n_embd=42, n_head=6)
    text = "\n".join(t for t in build.sources(v) if t is not None)  # None: a cell taken out
    assert "n_embd, n_head = 42, 6\nhead_size = n_embd // n_head  # 7" in text
    assert f"two-block GPT ({parameters(42):,} parameters)" in text
    assert "silu_backward" in text and "rmsnorm_backward" in text and "rmsnorm(x0" in text
    for gone in ("gelu_backward", "layernorm(", "lnf_diff", "lnf_mean", 'approximate="tanh"'):
        assert gone not in text, gone
    assert parameters(36) == 34_632  # the lecture's count, as its notebook prints it


@pytest.mark.parametrize(
    "v, answers, first, mistake",
    [
        # the lecture's GELU slope in a ReLU network
        (
            Transformer(activation="relu"),
            {
                "dh_pre": "dh_pre = (0.5 * (1 + torch.tanh(math.sqrt(2 / math.pi) * (h_pre + "
                "0.044715 * h_pre**3)))) * dh"
            },
            "h_pre",
            "local",
        ),
        # SiLU's slope without the product rule's second term, then with its sign flipped
        (
            Transformer(activation="silu"),
            {"dh_pre": "dh_pre = torch.sigmoid(h_pre) * dh"},
            "h_pre",
            "wrong",
        ),
        (
            Transformer(activation="silu"),
            {
                "dh_pre": "dh_pre = -torch.sigmoid(h_pre) * (1 + h_pre * (1 - "
                "torch.sigmoid(h_pre))) * dh"
            },
            "h_pre",
            "sign",
        ),
        # layer norm's one expression in an RMS-norm network: the mean's term too many
        (
            Transformer(norm="rmsnorm"),
            {
                "dx1": "dx1 = dx2 + ln2_rstd / C * (C * dx_hat - dx_hat.sum(-1, keepdim=True) - "
                "ln2_hat * (dx_hat * ln2_hat).sum(-1, keepdim=True))"
            },
            "x1",
            "wrong",
        ),
        # the lecture's one-hot target where the variant smooths it
        (
            Transformer(loss="label-smoothing", smoothing=0.2),
            {  # both of the cell's lines made the lecture's whole answer
                "dlogits": "dlogits = (F.softmax(logits, -1) - F.one_hot(Yb.clamp(min=0), "
                "vocab_size)) * (Yb >= 0).unsqueeze(-1) / n_targets"
            },
            "logits",
            "wrong",
        ),
        # the lecture's C = 36 pasted into a wider network
        (
            Transformer(n_embd=48, n_head=4),
            {"dlnf_diff2": "dlnf_diff2 = torch.ones_like(lnf_diff2) / 36 * dlnf_var"},
            "lnf_diff2",
            "scale",
        ),
    ],
)
def test_the_lectures_answer_or_a_slip_fails_where_the_variant_differs(v, answers, first, mistake):
    """The slip fails its own check with its mistake's word; what is built on it is blamed on it
    (``upstream``), not called wrong."""
    failed = [r for r in _checked(v, answers) if not r.ok]
    assert [(r.name, r.mistake) for r in failed[:1]] == [(first, mistake)], failed[:3]
    assert {r.mistake for r in failed[1:]} <= {"upstream"}, failed[:3]


@pytest.mark.parametrize(
    ("changes", "kept"),
    [
        ({"n_embd": 42, "n_head": 6}, True),  # the lecture's maths, wider
        ({"n_embd": 30, "n_head": 5}, True),
        ({"activation": "relu"}, False),
        ({"norm": "rmsnorm"}, False),
        ({"loss": "label-smoothing", "smoothing": 0.2}, False),
    ],
)
def test_the_fast_exercise_is_kept_only_for_the_lectures_maths(changes, kept):
    """Exercise 4's fast passes are the lecture network's: a variant of other maths leaves them
    out and races the learner's step against autograd's (through its own gpt_forward), without
    the lecture solution's rows; a wider one keeps the exercise, and its fast passes give its
    gpt_backward's gradients at its width and heads."""
    v = dataclasses.replace(Transformer(), **changes)
    nb = build.solution(v, seed=1)
    texts = [c.source for c in nb.cells]
    anchors = ("**Exercise 4**", "make it fast", "def gpt_forward_fast(", "def gpt_backward_fast(")
    for anchor in (*anchors, "race(step_fast, step,"):
        assert any(anchor in t for t in texts) == kept, anchor
    for anchor in ("### What your step costs", "race(step, autograd=step_autograd,"):
        assert any(anchor in t for t in texts) != kept, anchor
    assert any("def gpt_backward_fast(" in c.source for c in build.student(v, seed=1).cells) == kept
    if not kept:  # the race of its step, each gradient checked against autograd's
        cut = next(i for i, c in enumerate(nb.cells) if TRAINING in c.source)
        raced = next(c for c in nb.cells if "race(step, autograd=" in c.source)
        nb.cells = nb.cells[:cut]
        ns, _ = run_cells(nb, keep=DATA)
        ns.update(device=ns["torch"].device("cpu"), train_names=8)  # the training cell's
        with contextlib.redirect_stdout(io.StringIO()):
            exec(raced.source, ns)
        laps = [(lap.name, lap.problem) for lap in session.last_race().laps]
        assert laps == [("autograd", None), ("step", None)]
        assert session.last_race().solution is None  # the lecture solution's: another network
        return
    if kept:
        cut = next(i for i, c in enumerate(nb.cells) if TRAINING in c.source)
        fast = [
            c
            for c in nb.cells
            if "def gpt_forward_fast(" in c.source or "def gpt_backward_fast(" in c.source
        ]
        nb.cells = nb.cells[:cut] + fast
        ns, _ = run_cells(nb, keep=DATA)
        p = ns["init_gpt"](2, ns["torch"].Generator().manual_seed(1))
        X, Y = ns["Xtr"][:8], ns["Ytr"][:8]
        logits, cache = ns["gpt_forward"](p, X)
        expected = ns["gpt_backward"](p, X, Y, logits, cache)
        logits_fast, cache_fast = ns["gpt_forward_fast"](p, X)
        assert ns["torch"].allclose(logits, logits_fast, atol=1e-5)
        got = ns["gpt_backward_fast"](p, X, Y, logits_fast, cache_fast)
        assert list(got) == list(expected)
        for name, g in got.items():
            assert ns["torch"].allclose(g, expected[name], rtol=1e-4, atol=1e-6), name


def test_a_generated_solution_passes_nbval(tmp_path):
    v = Transformer(
        activation="gelu",
        norm="rmsnorm",
        loss="label-smoothing",
        smoothing=0.05,
        n_embd=30,
        n_head=5,
        order=tuple(tuple(reversed(g)) for g in tv.GROUPS),
    )
    assert_passes_nbval(build.solution(v, seed=1), tmp_path, steps=20)


def test_the_kernels_ladders_of_a_variant_are_those_of_its_notebook():
    lecture = json.loads((HINTS / f"{STEM}.json").read_text())
    changed = json.loads((HINTS / "variants" / f"{STEM}.json").read_text())
    for seed in range(20):
        v = tv.draw(seed)
        assert tv.ladders(v, lecture, changed) == build.ladders(v), seed
    # the width changes no ladder: the notebook writes its shapes with letters
    assert build.ladders(Transformer(n_embd=48, n_head=6)) == lecture


def test_a_variants_notebook_announces_it_and_its_kernel_speaks_of_it(capsys):
    v = Transformer(activation="relu", norm="rmsnorm", n_embd=30, n_head=3)
    imports = next(c.source for c in build.student(v, 9).cells if "variant(" in c.source)
    call = f'variant("{STEM}", activation="relu", norm="rmsnorm", n_embd=30, n_head=3)'
    assert call in imports and named_in(imports, STEM) == v and named_in(imports) is None
    hints.reset()
    try:
        exec(compile(imports, "<cell>", "exec"), {})
        assert "your variant of notebook 05: ReLU in the MLP, RMS norm" in capsys.readouterr().out
        mine = session.expected_checks(STEM)
        assert mine == build.checks(v) and "lnf_ms" in mine and "lnf_mean" not in mine
        assert "relu numeric" in mine and "rmsnorm numeric #0" in mine
        assert "lnf_sq" in str(summary(STEM))
        assert "x2" in str(hint("lnf_rstd")) and "> 0" in str(hint("h_pre", reveal=True))
    finally:
        hints._OWN.clear()
        hints.reset()
        session.own_checks(STEM, None)
    assert session.expected_checks(STEM) == build.checks(Transformer())


def test_variant_refuses_a_notebook_without_variants():
    with pytest.raises(ValueError, match="has no variants"):
        variant("04-mlp-language-model", activation="relu")


def _combinations(kind) -> list:
    """One variant of ``kind`` for every combination of the choices that change answers (the
    activation, the normalisation, the loss with each smoothing), each with the width and order
    of a drawn variant."""
    losses = [("cross-entropy", 0.0)] + [("label-smoothing", s) for s in kind.SMOOTHINGS]
    out = []
    for i, (act, norm, (loss, smoothing)) in enumerate(
        itertools.product(kind.ACTIVATIONS, kind.NORMS, losses)
    ):
        drawn = kind.draw(1000 + i)
        choices = dict(activation=act, norm=norm, loss=loss, smoothing=smoothing)
        out.append(dataclasses.replace(drawn, **choices))
    return out


@pytest.mark.parametrize("kind", [makemore, tv], ids=["03", "05"])
def test_every_combination_of_choices_is_generated_and_names_itself(kind):
    """The edits of every combination fit the lecture's notebook together (none takes another's
    text away), and the imports cell of each names its variant."""
    for v in _combinations(kind):
        imports = next(c.source for c in build.student(v, 1).cells if "variant(" in c.source)
        assert dataclasses.replace(named_in(imports, kind.NOTEBOOK), order=v.order) == v, v


def test_every_combination_of_05s_choices_matches_autograd():
    """All 32 combinations of notebook 05's answer-changing choices, beyond the 50 seeds' 23."""
    for v in _combinations(tv):
        assert [r.name for r in _checked(v) if not r.ok] == [], v
