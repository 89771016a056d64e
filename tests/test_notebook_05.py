"""Notebook 05 (a transformer block by hand): the student copy as handed out and filled in by a
learner with answers written independently of the solution, five realistic mistakes and what the
checks say about each, and the committed full run (the two training curves, the table)."""

from __future__ import annotations

import re

import nbformat
import pytest

from checks.authoring.student import ROOT, render, student_notebook
from checks.grading.settings import Settings
from tests.notebooks import LINE, STUB, errors_of, fill, race_shown, run, text_of

pytestmark = pytest.mark.slow  # the notebook run as a learner and through the grader

NAME = "05-transformer-backprop.ipynb"
SOLUTION = ROOT / "solutions" / NAME
STUDENT = ROOT / "notebooks" / NAME
# a failed check: its line, then "  ✗ <mistake>: <hint>"
VERDICT = re.compile(
    r"^(.+?)\s*\| exact: (?:True |False) \| approximate: False \| maxdiff: \S+\n"
    r"\s+✗ ([a-z-]+): (.*)$",
    re.M,
)
TABLE = re.compile(
    r"^(bigram \(counts \+ 1\)|MLP, notebook 03|GPT, your gradients|GPT, autograd)\s+([\d,]+)"
    r"\s+(\d\.\d+)\s+(\d\.\d+)\s+(\d\.\d+|-)$",
    re.M,
)

SQRT2PI = "0.7978845608028654"  # sqrt(2/pi)
GELU = (
    f"(lambda u, du: {{d}} * (0.5 * (1 + torch.tanh(u)) + 0.5 * {{x}} * du / torch.cosh(u)**2))"
    f"({SQRT2PI} * ({{x}} + 0.044715 * {{x}}**3), {SQRT2PI} * (1 + 0.134145 * {{x}}**2))"
)


def ln_back(dout: str, w: str, x_hat: str, rstd: str) -> str:
    """Layer norm's input gradient with means instead of sums over C (not the solution's form)."""
    return (
        f"(lambda dxh: {rstd} * (dxh - dxh.mean(-1, keepdim=True)"
        f" - {x_hat} * (dxh * {x_hat}).mean(-1, keepdim=True)))({dout} * {w})"
    )


def heads_back(t: str) -> str:
    return f"{t}.permute(0, 2, 1, 3).reshape(B, T, C)"


# One line per `... = ...  # TODO` placeholder, in the order they appear (exercise 1, then
# exercise 2's functions, then AdamW): einsum where the solution has @, means where it has sums / C,
# index_put_ for index_add_, ...
ANSWERS = {
    "dlogits": [
        "(logits.softmax(-1) - F.one_hot(Yb.clamp(min=0), vocab_size).to(logits.dtype))"
        " * (Yb != -1)[..., None].to(logits.dtype) / (Yb != -1).sum()"
    ],
    "dlnf": ["torch.einsum('btv,cv->btc', dlogits, W_head)"],
    "dW_head": ["torch.einsum('btc,btv->cv', lnf, dlogits)"],
    "dlnf_w": ["torch.einsum('btc,btc->c', dlnf, lnf_hat)"],
    "dlnf_b": ["dlnf.sum(dim=(1, 0))"],
    "dlnf_hat": ["dlnf * lnf_w"],
    "dlnf_rstd": ["(dlnf_hat * lnf_diff).sum(dim=-1, keepdim=True)"],
    "dlnf_var": ["-0.5 * dlnf_rstd / (lnf_var + 1e-5)**1.5"],
    "dlnf_diff2": ["dlnf_var.expand_as(lnf_diff2) / lnf_diff2.shape[-1]"],
    "dlnf_diff": ["dlnf_hat * lnf_rstd + dlnf_diff2 * 2 * lnf_diff"],
    "dlnf_mean": ["-dlnf_diff.sum(-1, keepdim=True)"],
    "dx2": ["dlnf_diff + dlnf_mean.expand_as(x2) / x2.shape[-1]"],
    "dx2_fused": [ln_back("dlnf", "lnf_w", "lnf_hat", "lnf_rstd")],
    "dmlp_out": ["dx2 * 1.0"],
    "dh": ["torch.einsum('btc,kc->btk', dmlp_out, W_mproj)"],
    "dW_mproj": ["torch.einsum('btk,btc->kc', h, dmlp_out)"],
    "db_mproj": ["dmlp_out.sum(0).sum(0)"],
    "dh_pre": [GELU.format(d="dh", x="h_pre")],
    "dln2": ["torch.einsum('btj,cj->btc', dh_pre, W_fc)"],
    "dW_fc": ["torch.einsum('btc,btj->cj', ln2, dh_pre)"],
    "db_fc": ["dh_pre.sum(dim=(0, 1))"],
    "dln2_w": ["(dln2 * ln2_hat).sum(dim=(0, 1))"],
    "dln2_b": ["dln2.sum(dim=(1, 0))"],
    "dx1": ["dx2 + " + ln_back("dln2", "ln2_w", "ln2_hat", "ln2_rstd")],
    "dattn_out": ["dx1 + 0"],
    "dy_cat": ["torch.einsum('btj,cj->btc', dattn_out, W_aproj)"],
    "dW_aproj": ["torch.einsum('btc,btj->cj', y_cat, dattn_out)"],
    "db_aproj": ["dattn_out.sum(dim=(0, 1))"],
    "dy": ["dy_cat.reshape(B, T, nh, hs).permute(0, 2, 1, 3)"],
    "datt_probs": ["torch.einsum('bhtd,bhsd->bhts', dy, v)"],
    "dv": [
        "torch.einsum('bhts,bhtd->bhsd', att_probs, dy)",
        "torch.einsum('...ts,...td->...sd', att_probs, dy)",
    ],
    "datt_masked": [
        "att_probs * datt_probs - att_probs * (att_probs * datt_probs).sum(-1, keepdim=True)"
    ],
    "datt": [
        "torch.where(mask, datt_masked, torch.zeros_like(datt_masked))",
        "att_probs * (dy @ v.transpose(-2, -1))"
        " - att_probs * (att_probs * (dy @ v.transpose(-2, -1))).sum(-1, keepdim=True)",
    ],
    "dq": [
        "torch.einsum('bhts,bhsd->bhtd', datt, k) / math.sqrt(hs)",
        "torch.einsum('...ts,...sd->...td', datt, k) * hs**-0.5",
    ],
    "dk": [
        "torch.einsum('bhts,bhtd->bhsd', datt, q) / math.sqrt(hs)",
        "torch.einsum('...ts,...td->...sd', datt, q) * hs**-0.5",
    ],
    "dqkv": [f"torch.cat([{heads_back('dq')}, {heads_back('dk')}, {heads_back('dv')}], -1)"],
    "dln1": ["torch.einsum('btj,cj->btc', dqkv, W_attn)"],
    "dW_attn": ["torch.einsum('btc,btj->cj', ln1, dqkv)"],
    "db_attn": ["dqkv.sum(dim=(0, 1))"],
    "dln1_w": ["(dln1 * ln1_hat).sum(dim=(0, 1))"],
    "dln1_b": ["dln1.sum(dim=(1, 0))"],
    "dx0": ["dx1 + " + ln_back("dln1", "ln1_w", "ln1_hat", "ln1_rstd")],
    "dwte": [
        "torch.zeros_like(wte).index_put_((Xb.reshape(-1),), dx0.reshape(-1, C), accumulate=True)"
    ],
    "dwpe": ["dx0.sum(dim=0)"],
    # layernorm_backward, then gelu_backward
    "dx": [ln_back("dout", "w", "x_hat", "rstd"), GELU.format(d="dout", x="x")],
    "dw": ["(dout * x_hat).reshape(-1, x_hat.shape[-1]).sum(0)"],
    "db": ["dout.reshape(-1, dout.shape[-1]).sum(0)"],
    # attention_backward
    "att_probs": [
        "torch.softmax(torch.where(mask, q @ k.transpose(-2, -1) * hs**-0.5, "
        "torch.tensor(float('-inf'), dtype=q.dtype)), -1)"
    ],
    "m_new": ["m + (1 - beta1) * (grad - m)"],
    "v_new": ["beta2 * v + (1 - beta2) * grad * grad"],
    "p_new": [
        "p - lr * weight_decay * p"
        " - lr * (m_new / (1 - beta1**t)) / (torch.sqrt(v_new / (1 - beta2**t)) + eps)"
    ],
}


def answers(**override: list[str]) -> dict[str, list[str]]:
    a = {k: list(v) for k, v in ANSWERS.items()}
    a.update(override)
    return a


def read(path) -> nbformat.NotebookNode:
    return nbformat.read(path, as_version=4)


def outputs(nb) -> str:
    return "".join(text_of(c) for c in nb.cells if c.cell_type == "code")


def verdicts(nb) -> list[tuple[str, bool]]:
    return [(name, approx.strip() == "True") for name, _, approx, _ in LINE.findall(outputs(nb))]


def failures(nb) -> dict[str, tuple[str, str]]:
    """Each failed check: (mistake, hint)."""
    return {name: (mistake, said) for name, mistake, said in VERDICT.findall(outputs(nb))}


def before(nb, heading: str) -> nbformat.NotebookNode:
    nb.cells = nb.cells[
        : next(
            i
            for i, c in enumerate(nb.cells)
            if c.cell_type == "markdown" and c.source.startswith(heading)
        )
    ]
    return nb


# ---------------------------------------------------------------- the student copy, as handed out


def test_student_copy_is_generated_from_the_solution():
    assert STUDENT.read_text() == render(student_notebook(read(SOLUTION))), (
        "regenerate notebooks/ (checks.authoring.student)"
    )


def test_every_placeholder_has_one_answer():
    nb = fill(read(STUDENT), ANSWERS)  # fill() asserts that every answer is used
    assert not STUB.search("\n".join(c.source for c in nb.cells if c.cell_type == "code"))


@pytest.fixture(scope="module")
def handed_out():
    return run(read(STUDENT), steps=20)


def test_student_copy_passes_nothing_and_stops_only_with_not_written(handed_out):
    found = verdicts(handed_out)
    assert len(found) > 60 and not any(ok for _, ok in found)
    errors = errors_of(handed_out)
    assert errors and all(ename == "NotWritten" for _, ename, _ in errors), errors


# ------------------------------------------------------- the student copy, filled in by a learner


@pytest.fixture(scope="module")
def filled():
    return run(fill(read(STUDENT), ANSWERS), steps=200)


def test_filled_student_copy_passes_every_check(filled):
    assert errors_of(filled) == []
    found = verdicts(filled)
    assert len(found) > 100
    assert all(ok for _, ok in found), [name for name, ok in found if not ok]
    names = {name for name, _ in found}
    assert {
        "q",
        "k",
        "v",
        "att",
        "att_masked",
        "x0",
        "x1",
        "wte",
        "wpe",
        "x2 (fused)",
        "q (fused)",
        "att_probs (recomputed)",
        "p (5 steps)",
        "wte (2 blocks)",
        "W_head (trained)",
    } <= names


def test_filled_student_copy_trains_below_the_bigram(filled):
    out = outputs(filled)
    rows = {name: nats for name, _, *nats in TABLE.findall(out)}
    # val, after 200 steps
    assert float(rows["GPT, your gradients"][1]) < float(rows["bigram (counts + 1)"][1])
    assert rows["GPT, your gradients"] == rows["GPT, autograd"]  # to 4 decimals
    assert "(after 200 training steps)" in out
    assert len(re.findall(r"^(?:\S+  ){19}\S+$", out, re.M)) == 1  # twenty names on one line


def test_the_fast_exercise_times_only_the_steps_whose_gradients_agree(filled):
    """Exercise 4 (optional) left as handed out: autograd's step and the learner's gpt_backward
    are timed side by side; gpt_backward_fast, not written, is not timed, and stops nothing. The
    solution's two steps follow, as the package ships them, and the last summary shows the
    race."""
    shown, rows = race_shown(filled)
    assert shown.startswith("steps on minibatches of 32:") and list(rows) == [
        "autograd",
        "step_fast",
        "step",
        "solution's step_fast",
        "solution's step",
    ]
    assert rows["autograd"][1] == "1.00x" and re.fullmatch(r"\d+\.\d\dx", rows["step"][1])
    assert "not timed: it raised NotWritten: gpt_backward_fast: your fast backward" in shown
    fast = rows["solution's step_fast"]  # no time of its own: its ratio, operators and kB
    assert fast[0] == "" and int(fast[2]) < int(rows["step"][2])
    # gpt_backward's intermediates, counted under their names though the step is two lines
    said = re.search(r"\n  (your step assigns .*)", shown)
    assert said and said[1].endswith("names that the solution's `step_fast` never assigns."), shown
    assert shown in text_of(filled.cells[-1])  # the last summary: every check, and the race


def test_the_solutions_fast_gpt_is_timed_and_leaner_than_its_gpt_backward():
    """The committed run: the fast passes agree with autograd and make fewer tensor operations
    and allocations than gpt_forward and gpt_backward (times are the machine's: not asserted)."""
    shown, rows = race_shown(read(SOLUTION))
    assert "not timed" not in shown, shown
    ops = {step: int(cells[2]) for step, cells in rows.items()}
    kb = {step: float(cells[3].replace(",", "")) for step, cells in rows.items()}
    assert ops["step_fast"] < ops["step"] and kb["step_fast"] < kb["step"], shown


# ------------------------------------------------------ realistic mistakes, and what the checks say


def mistaken(**override: list[str]) -> dict[str, tuple[str, str]]:
    nb = before(fill(read(STUDENT), answers(**override)), "# Exercise 3")
    return failures(run(nb, steps=20))


def test_a_missing_scale_is_a_factor_of_sqrt_head_size():
    found = mistaken(
        dq=["torch.einsum('bhts,bhsd->bhtd', datt, k)", ANSWERS["dq"][1]],
        dk=[ANSWERS["dk"][0], "torch.einsum('...ts,...td->...sd', datt, q)"],
    )
    assert "the square root of the head size" in found["q"][1], found["q"]
    # sqrt(head_size) = sqrt(9)
    assert found["q"][0] == "scale" and "3 times" in found["q"][1], found["q"]
    assert found["k (fused)"][0] == "scale" and "3 times" in found["k (fused)"][1], found[
        "k (fused)"
    ]
    assert "k" not in found and "q (fused)" not in found


MASK_AFTER = "torch.softmax(q @ k.transpose(-2, -1) * hs**-0.5, -1).masked_fill(~mask, 0.0)"
BESSEL_STEP = "dlnf_var.expand_as(lnf_diff2) / (lnf_diff2.shape[-1] - 1)"
BESSEL_FUSED = (
    "rstd / n * (n * w * dout - (w * dout).sum(-1, keepdim=True)"
    " - n / (n - 1) * x_hat * (w * dout * x_hat).sum(-1, keepdim=True))"
)


@pytest.fixture(scope="module")
def mask_and_bessel():
    """One run with two independent slips of exercise 2 (exercise 1 right): the mask after the
    softmax in attention_backward, Bessel's correction in layernorm_backward."""
    return mistaken(att_probs=[MASK_AFTER], dx=[BESSEL_FUSED, ANSWERS["dx"][1]])


def test_a_mask_after_the_softmax_fails_the_recomputed_probabilities(mask_and_bessel):
    found = mask_and_bessel
    assert {"att_probs (recomputed)", "q (fused)", "k (fused)", "v (fused)"} <= set(found), found
    assert "q" not in found and "att_probs" not in found  # exercise 1 is untouched


def test_a_mask_after_the_softmax_is_named(mask_and_bessel):
    mistake, said = mask_and_bessel["att_probs (recomputed)"]
    assert mistake == "mask" and "came after the softmax" in said, (mistake, said)


def test_bessels_correction_in_the_layer_norm_steps_is_named():
    mistake, said = mistaken(dlnf_diff2=[BESSEL_STEP])["lnf_diff2"]
    assert mistake == "bessel" and "36/35" in said and "n=36" in said, (mistake, said)


def test_bessels_correction_in_layernorm_backward_fails(mask_and_bessel):
    assert "x1 (fused)" in mask_and_bessel and "ln2_w (fused)" not in mask_and_bessel


def test_bessels_correction_in_layernorm_backward_is_named(mask_and_bessel):
    assert mask_and_bessel["x1 (fused)"][0] == "bessel", mask_and_bessel["x1 (fused)"]


def test_a_missing_residual_path_is_named():
    found = mistaken(dx1=[ln_back("dln2", "ln2_w", "ln2_hat", "ln2_rstd")])
    assert found["x1"][0] == "missing-path", found["x1"]
    assert "x2" in found["x1"][1]  # the use left out: the residual addition into x2


def test_a_transposed_dq_is_named():
    found = mistaken(
        dq=["(k.transpose(-2, -1) @ datt.transpose(-2, -1)) / math.sqrt(hs)", ANSWERS["dq"][1]]
    )
    assert found["q"][0] == "transpose", found["q"]


# ------------------------------------------------------- the committed solution: the full run


def test_committed_solution_holds_the_full_run():
    nb = read(SOLUTION)
    out = outputs(nb)
    assert "10000/10000: loss" in out and "(after 10,000 training steps)" in out
    rows = {name: nats for name, _, *nats in TABLE.findall(out)}
    bigram, gpt, auto = (
        rows["bigram (counts + 1)"],
        rows["GPT, your gradients"],
        rows["GPT, autograd"],
    )
    # val: GPT < MLP < bigram
    assert float(gpt[1]) < float(rows["MLP, notebook 03"][1]) < float(bigram[1])
    assert abs(float(gpt[1]) - float(auto[1])) < 0.01
    smoothed = float(
        re.search(r"largest difference of the smoothed curves: (\S+) nats", out).group(1)
    )
    assert smoothed < 0.02
    assert re.search(r"by hand: 10,000 steps in \d+\.\d s", out)
    assert all(ok for _, ok in verdicts(nb))


def test_only_the_training_and_what_follows_is_ignored_by_nbval():
    """What the training and the timings show differs from run to run: nbval ignores it, and
    nothing before it. A cell after it that shows nothing (a function's definition) needs no tag."""
    nb = read(SOLUTION)
    start = next(
        i
        for i, c in enumerate(nb.cells)
        if c.cell_type == "markdown" and c.source.startswith("### Training")
    )
    for i, cell in enumerate(nb.cells):
        if cell.cell_type == "code":
            ignored = "nbval-ignore-output" in cell.metadata.get("tags", [])
            assert ignored == (i > start) or (i > start and not cell.outputs), cell.source[:80]


# ------------------------------------------------------- grading (checks.grade), as a class run

UNSCALED_DQ = "torch.einsum('bhts,bhsd->bhtd', datt, k)"  # no 1/sqrt(head_size)
TRANSPOSED_DQ = "(k.transpose(-2, -1) @ datt.transpose(-2, -1)) / math.sqrt(hs)"
UNTRANSPOSED_DK = "torch.einsum('bhst,bhtd->bhsd', datt, q) / math.sqrt(hs)"  # datt as it is
UNMASKED_DLOGITS = (  # the padding targets (-1) get a gradient too
    "(logits.softmax(-1) - F.one_hot(Yb.clamp(min=0), vocab_size).to(logits.dtype))"
    " / (Yb != -1).sum()"
)


@pytest.fixture(scope="module")
def graded(grade_class):
    """Three learners through the grader: every answer right (written independently), one with
    two slips (a transposed ``dq`` in exercise 1, the mask after the softmax in exercise 2), and
    one whose ``dq`` lacks the scale 1/sqrt(head_size) (and whose ``dlogits`` lacks the padding
    mask, and whose ``dk`` takes ``datt`` untransposed) and who also puts Bessel's correction in
    a layer norm's steps (exercise 1) and in ``layernorm_backward`` (exercise 2): cells apart, so
    that with no cascade each slip fails what it fails alone (one notebook run fewer)."""
    learners = {
        "complete": fill(read(STUDENT), ANSWERS),
        "slips": fill(
            read(STUDENT), answers(att_probs=[MASK_AFTER], dq=[TRANSPOSED_DQ, ANSWERS["dq"][1]])
        ),
        "scale-mask-bessel": fill(
            read(STUDENT),
            answers(
                dq=[UNSCALED_DQ, ANSWERS["dq"][1]],
                dk=[UNTRANSPOSED_DK, ANSWERS["dk"][1]],
                dlogits=[UNMASKED_DLOGITS],
                dlnf_diff2=[BESSEL_STEP],
                dx=[BESSEL_FUSED, ANSWERS["dx"][1]],
            ),
        ),
    }
    settings = Settings(steps=20, cell_timeout=120, notebook_timeout=900, jobs=2)
    rows = grade_class(learners, settings, NAME).rows
    return {(r.submission, r.check): r for r in rows}


def test_grading_passes_every_check_of_a_complete_notebook(graded):
    mine = {c: r for (s, c), r in graded.items() if s == "complete"}
    assert len(mine) == 55 and {"ex1/dq", "ex2/probs_att", "ex2/dq_att", "ex3/p_new"} <= set(mine)
    assert all(r.passed for r in mine.values()), [r for r in mine.values() if not r.passed]


def test_grading_names_each_slip_and_fails_nothing_else(graded):
    """No cascade: the grader hands each answer cell the right upstream values, so exercise 1's
    transposed dq fails ex1/dq alone; the mask after the softmax fails what the
    probabilities feed."""
    bad = {c: r for (s, c), r in graded.items() if s == "slips" and not r.passed}
    assert set(bad) == {"ex1/dq", "ex2/probs_att", "ex2/dv_att", "ex2/dq_att", "ex2/dk_att"}, (
        sorted(bad)
    )
    assert bad["ex1/dq"].mistake == "transpose", bad["ex1/dq"]
    assert bad["ex2/probs_att"].mistake == "mask", bad["ex2/probs_att"]
    assert "came after the softmax" in bad["ex2/probs_att"].feedback


def test_grading_names_a_missing_attention_scale_by_the_head_size(graded):
    bad = {c: r for (s, c), r in graded.items() if s == "scale-mask-bessel" and not r.passed}
    # and the two layer norm steps with Bessel's correction (test below), nothing else
    assert set(bad) == {"ex1/dq", "ex1/dk", "ex1/dlogits", "ex1/dlnf_diff2", "ex2/dx_ln"}, sorted(
        bad
    )
    assert bad["ex1/dq"].mistake == "scale", bad["ex1/dq"]
    assert "the square root of the head size" in bad["ex1/dq"].feedback, bad["ex1/dq"]


def test_grading_names_a_missing_padding_mask_and_an_untransposed_datt(graded):
    """Two more slips of exercise 1, named by the grader as the notebook names them (issue 22):
    ``dlogits`` with values at the padding positions, ``dk`` from ``datt`` untransposed."""
    bad = {c: r for (s, c), r in graded.items() if s == "scale-mask-bessel" and not r.passed}
    assert bad["ex1/dlogits"].mistake == "mask", bad["ex1/dlogits"]
    assert "padding targets of -1" in bad["ex1/dlogits"].feedback
    assert bad["ex1/dk"].mistake == "transpose", bad["ex1/dk"]
    assert "`datt`, the gradient from above" in bad["ex1/dk"].feedback, bad["ex1/dk"]


def test_grading_names_bessels_correction_in_a_layer_norm(graded):
    """The grader reads the n=C of the cell's cmp call, as the notebook's cmp does: the slip in
    the layer norm's steps is named. Inside layernorm_backward (probed on fresh inputs, so with no
    graph facts) only one term is off by 36/35: it fails, but as 'wrong'."""
    bad = {c: r for (s, c), r in graded.items() if s == "scale-mask-bessel" and not r.passed}
    assert {"ex1/dlnf_diff2", "ex2/dx_ln"} <= set(bad) and not {"ex1/dx1", "ex1/dx0"} & set(bad), (
        bad
    )
    row = bad["ex1/dlnf_diff2"]
    assert row.mistake == "bessel" and "36/35" in row.feedback, row
