"""Notebook 04 (an MLP language model): the student copy as handed out and filled in by a learner,
the solution's numbers against the issue's, any UTF-8 text instead of the names, and grading with
checks.grade."""

from __future__ import annotations

import math
import re

import nbformat
import pytest

from checks.authoring.student import ROOT, render, student_notebook
from checks.grading.settings import Settings
from tests.notebooks import LINE, STUB, errors_of, fill, run, run_then_rerun, text_of

pytestmark = pytest.mark.slow  # the notebook run as a learner and through the grader

NAME = "04-mlp-language-model.ipynb"
SOLUTION = ROOT / "solutions" / NAME
STUDENT = ROOT / "notebooks" / NAME
DEEP = [f"{p} [64, 32]" for p in ["C", "W1", "b1", "W2", "b2", "W3", "b3"]]
# every check in order: section 1 (the bigram's table), section 2 (each layer, then a network with
# two hidden layers), section 3 (AdamW against torch.optim.AdamW)
CHECKS = [
    "W",
    "logits",
    "h1",
    "W2",
    "b2",
    "a1",
    "x",
    "W1",
    "b1",
    "C",
    *DEEP,
    "p (5 steps)",
    "m (5 steps)",
    "v (5 steps)",
]
# what checks.grade records: one value per name a solution block asks for
GRADED = [
    "ex1/dW",
    "ex2/dlogits",
    "ex2/dh1",
    "ex2/dW2",
    "ex2/db2",
    "ex2/da1",
    "ex2/dC",
    "ex3/p_new",
    "ex3/m_new",
    "ex3/v_new",
]
HELD_OUT = re.compile(
    r"^(bigram \(counts \+ 1\)|MLP\(.*?\))\s+([\d,]+)"
    r"\s+(\d\.\d+)\s+(\d\.\d+)\s+(\d\.\d+)\s+([\d.]+)$",
    re.M,
)


def read(path) -> nbformat.NotebookNode:
    return nbformat.read(path, as_version=4)


def outputs(nb) -> str:
    return "".join(text_of(c) for c in nb.cells if c.cell_type == "code")


def verdicts(nb) -> list[tuple[str, bool]]:
    return [(name, approx.strip() == "True") for name, _, approx, _ in LINE.findall(outputs(nb))]


def held_out(out: str) -> dict[str, tuple[int, float, float, float, float]]:
    """The comparison table: model -> (parameters, train, val, test, e**test)."""
    rows = {}
    for name, size, *nats in HELD_OUT.findall(out):
        rows["bigram" if name.startswith("bigram") else "mlp"] = (
            int(size.replace(",", "")),
            *map(float, nats),
        )
    return rows


def before(nb, heading: str) -> nbformat.NotebookNode:
    """The notebook cut just before the markdown cell that starts with ``heading``."""
    nb.cells = nb.cells[
        : next(
            i
            for i, c in enumerate(nb.cells)
            if c.cell_type == "markdown" and c.source.startswith(heading)
        )
    ]
    return nb


# -------------------------------------------- answers, written independently of the solution blocks

# One line per `... = ...  # TODO` placeholder, in the order they appear: dW of the bigram first,
# then linear_backward's; dx of linear_backward, then tanh_backward's.
ANSWERS = {
    "dW": [
        "(F.softmax(W, 1) * counts.sum(1)[:, None] - counts) / Ytr.numel()",
        "torch.einsum('ni,nj->ij', x, dout)",
    ],
    "dlogits": ["(logits.softmax(-1) - F.one_hot(Y, logits.shape[1]).to(logits.dtype)) / n"],
    "dx": ["torch.einsum('nj,ij->ni', dout, W)", "dout - dout * out * out"],
    "db": ["dout.sum(dim=0)"],
    "dC": [
        "torch.zeros_like(C).index_put_((X.reshape(-1),), dout.reshape(X.numel(), d_embed), "
        "accumulate=True)"
    ],
    "m_new": ["m + (1 - beta1) * (grad - m)"],
    "v_new": ["beta2 * v + (1 - beta2) * grad * grad"],
    "p_new": [
        "p - lr * weight_decay * p "
        "- lr * (m_new / (1 - beta1**t)) / (torch.sqrt(v_new / (1 - beta2**t)) + eps)"
    ],
}


def answers(**override) -> dict[str, list[str]]:
    a = {k: list(v) for k, v in ANSWERS.items()}
    a.update(override)
    return a


# ---------------------------------------------------------------- the student copy, as handed out


def test_student_copy_is_generated_from_the_solution():
    assert STUDENT.read_text() == render(student_notebook(read(SOLUTION))), (
        "regenerate notebooks/ (checks.authoring.student)"
    )


@pytest.fixture(scope="module")
def handed_out():
    return run(read(STUDENT), steps=50)


def test_student_copy_reports_not_written_for_every_check(handed_out):
    found = verdicts(handed_out)
    assert [name for name, _ in found] == CHECKS
    assert not any(ok for _, ok in found)
    assert outputs(handed_out).count("✗ missing: not written yet") == len(CHECKS)


def test_student_copy_stops_only_where_it_must(handed_out):
    errors = errors_of(handed_out)
    # the training run, then the loss curve, the table, the top 3 and the embeddings
    assert len(errors) == 5, errors
    for i, ename, evalue in errors:
        assert ename == "NotWritten", (i, ename, evalue)
        src = handed_out.cells[i].source
        assert "mlp_backward(" in src or "raise NotWritten" in src, src
    assert "write dlogits in cross_entropy_backward() first" in errors[0][2]
    assert all("train the network first" in evalue for _, _, evalue in errors[1:])


def test_student_copy_shows_what_needs_no_answer(handed_out):
    out = outputs(handed_out)
    # the chapter's parameter count, before any answer
    assert "total                               39,025" in out
    assert re.search(r"^val\s+2\.45\d\d\s+11\.6\d$", out, re.M)  # the bigram by counting


# --------------------------------------------------------- the student copy, filled in by a learner


@pytest.fixture(scope="module")
def filled():
    nb = fill(read(STUDENT), ANSWERS)
    assert not STUB.search("\n".join(c.source for c in nb.cells if c.cell_type == "code"))
    return run(nb, steps=300)


def test_filled_student_copy_passes_every_check(filled):
    assert errors_of(filled) == []
    found = verdicts(filled)
    assert [name for name, _ in found] == CHECKS
    assert all(ok for _, ok in found), [name for name, ok in found if not ok]


def test_filled_student_copy_trains_below_the_bigram(filled):
    out = outputs(filled)
    table = held_out(out)
    assert table["bigram"][0] == 27**2 and table["mlp"][0] == 19_915
    # val, test: 300 steps
    assert table["mlp"][2] < table["bigram"][2] - 0.1 and table["mlp"][3] < table["bigram"][3] - 0.1
    assert "(after 300 training steps)" in out
    assert "most similar pairs (cosine):" in out


def test_a_wrong_tanh_slope_fails_exactly_what_depends_on_it():
    nb = before(
        fill(read(STUDENT), answers(dx=["torch.einsum('nj,ij->ni', dout, W)", "dout * (1 - out)"])),
        "## 4.",
    )
    found = verdicts(run(nb))
    assert [name for name, _ in found] == CHECKS
    failing = {name for name, ok in found if not ok}
    # below the first tanh: a1 and everything computed from it; the output layer of both networks is
    # above any tanh
    assert failing == {
        "a1",
        "x",
        "W1",
        "b1",
        "C",
        "C [64, 32]",
        "W1 [64, 32]",
        "b1 [64, 32]",
        "W2 [64, 32]",
        "b2 [64, 32]",
    }


# a check's line and, for a failure, the word on the line after it
WORD = re.compile(r"^(\S.*?)\s+\| exact: .*\n  ✗ ([a-z-]+): (.*)$", re.M)
ADAM_SLIPS = {  # AdamW's usual slips (issue 22): each named, not "a factor of 1.0005"
    "bias-correction": "p * (1 - lr * weight_decay) - lr * m_new / (v_new.sqrt() + eps)",
    "decay": "p - lr * (m_new / (1 - beta1**t)) / ((v_new / (1 - beta2**t)).sqrt() + eps)",
}


@pytest.mark.parametrize("word", sorted(ADAM_SLIPS))
def test_adamws_slips_fail_the_step_and_are_named(word):
    nb = before(fill(read(STUDENT), answers(p_new=[ADAM_SLIPS[word]])), "## 4.")
    run(nb)
    failing = {name for name, ok in verdicts(nb) if not ok}
    assert failing == {"p (5 steps)"}  # m and v are right; only the step that uses them is not
    said = {name: (w, hint) for name, w, hint in WORD.findall(outputs(nb))}
    assert said["p (5 steps)"][0] == word, said


# ------------------------------------------------------ the solution: the numbers, computed


def test_answers_written_after_run_all_pass():
    """Run All stops in the training cell; the training keeps its names to itself, so section 2's
    tensors are still there: a learner who then writes the right cross_entropy_backward and
    linear_backward sees both pass."""
    nb, solution = read(STUDENT), read(SOLUTION)
    fixed = [
        i
        for i, c in enumerate(solution.cells)
        if c.source.startswith(("def cross_entropy_backward(", "def linear_backward("))
    ]
    assert len(fixed) == 2
    shown = run_then_rerun(nb, {i: solution.cells[i].source for i in fixed})
    for out in shown:
        assert (
            "approximate: True" in out and "approximate: False" not in out and "Error" not in out
        ), out


def test_solution_counts_the_chapters_parameters():
    out = outputs(read(SOLUTION))
    assert re.search(r"^embeddings\s+97 × 16\s+1,552$", out, re.M)
    assert re.search(r"^hidden layer 1\s+48 × 256 \+ 256\s+12,544$", out, re.M)
    assert re.search(r"^output layer\s+256 × 97 \+ 97\s+24,929$", out, re.M)
    assert re.search(r"^total\s+39,025$", out, re.M)
    assert "97**4 = 88,529,281 cells" in out


def test_committed_solution_holds_the_full_run_with_the_mlp_clearly_below_the_bigram():
    nb = read(SOLUTION)
    out = outputs(nb)
    assert "20000/20000: loss" in out and "(after 20,000 training steps)" in out
    table = held_out(out)
    bigram, mlp = table["bigram"], table["mlp"]
    # val and test; the lectures: about 2.45
    assert 2.40 < bigram[2] < 2.50 and 2.40 < bigram[3] < 2.50
    assert mlp[2] < 2.15 and mlp[3] < 2.15  # the lectures: near 2.1
    assert bigram[3] - mlp[3] > 0.3
    assert mlp[4] == pytest.approx(math.exp(mlp[3]), abs=0.01) and bigram[4] == pytest.approx(
        math.exp(bigram[3]), abs=0.01
    )


def test_prose_quotes_what_the_solution_computes():
    nb = read(SOLUTION)
    out = outputs(nb)
    prose = "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")
    results = re.search(r"What the full run gives.*?\n\n", prose, re.S).group(0)
    quoted = set(re.findall(r"\d\.\d{4}", results))
    computed = {x for row in HELD_OUT.findall(out) for x in row[2:5]}
    assert quoted and quoted <= computed, quoted - computed
    mlp, bigram = held_out(out)["mlp"], held_out(out)["bigram"]
    assert f"≈ {mlp[4]:.2f}" in results and f"≈ {bigram[4]:.2f}" in results
    embeddings = re.search(r"Two things stand out.*", prose, re.S).group(0)
    assert "(its norm is 0.4)" in embeddings and "shortest embeddings: . 0.4" in out
    assert "c-k" in out and "i-y" in out and "q-x" in out


def test_only_the_cells_after_training_starts_are_ignored_by_nbval():
    nb = read(SOLUTION)
    start = next(
        i
        for i, c in enumerate(nb.cells)
        if c.cell_type == "markdown" and c.source.startswith("## 4.")
    )
    for i, cell in enumerate(nb.cells):
        if cell.cell_type == "code":
            assert ("nbval-ignore-output" in cell.metadata.get("tags", [])) == (i > start), (
                cell.source[:80]
            )


# ---------------------------------------------------------------- any UTF-8 text


def test_any_text_file_with_its_own_vocabulary(tmp_path, monkeypatch):
    words = [
        "über",
        "naïve",
        "café",
        "Straße",
        "the",
        "cat",
        "sat",
        "on",
        "a",
        "mat",
        "and",
        "then",
        "ran",
        "away",
        "to",
        "see",
        "ça",
        "va",
        "señor",
        "¿qué?",
    ]
    lines, state = [], 7
    for _ in range(1500):
        line = []
        for _ in range(6):
            state = (state * 1103515245 + 12345) % 2**31
            line.append(words[state % len(words)])
        lines.append(" ".join(line) + ".")
    text = "\n".join(lines) + "\n"
    path = tmp_path / "story.txt"
    path.write_text(text, encoding="utf-8")
    monkeypatch.setenv("WORKBOOK_TEXT", str(path))
    nb = run(read(SOLUTION), steps=200)
    assert errors_of(nb) == []
    out = outputs(nb)
    vocab = sorted(set(text))
    shown = "".join({" ": "␣", "\n": "⏎"}.get(ch, ch) for ch in vocab)
    assert f"story.txt: vocabulary of {len(vocab)}: {shown}" in out
    assert all(ok for _, ok in verdicts(nb))
    table = held_out(out)
    V = len(vocab)
    assert table["bigram"][0] == V * V
    assert table["mlp"][0] == V * 16 + 48 * 256 + 256 + 256 * V + V
    assert table["mlp"][3] < table["bigram"][3]


# ---------------------------------------------------------------- grading


@pytest.fixture(scope="module")
def graded(grade_class):
    learners = {
        "complete": fill(read(STUDENT), ANSWERS),
        "transposed-dW": fill(
            read(STUDENT),
            answers(dW=[ANSWERS["dW"][0], "dout.T @ x"], p_new=[ADAM_SLIPS["decay"]]),
        ),
    }
    settings = Settings(steps=20, cell_timeout=60, notebook_timeout=600, jobs=2)
    rows = grade_class(learners, settings, NAME).rows
    return {(r.submission, r.check): r for r in rows}


def test_grading_records_every_answer_and_passes_a_complete_notebook(graded):
    mine = {c: r for (s, c), r in graded.items() if s == "complete"}
    assert sorted(mine) == sorted(GRADED)
    assert all(r.passed for r in mine.values()), [r for r in mine.values() if not r.passed]


def test_grading_fails_only_the_wrong_answer(graded):
    bad = {c: r for (s, c), r in graded.items() if s == "transposed-dW" and not r.passed}
    assert set(bad) == {"ex2/dW2", "ex3/p_new"}, bad
    assert bad["ex2/dW2"].mistake == "transpose"
    assert bad["ex3/p_new"].mistake == "decay", bad["ex3/p_new"]  # the reference's facts
