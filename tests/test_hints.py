"""Hint ladders: written as comment lines in the solutions, generated into checks/hints/, given one
rung per call by checks.hint, counted by summary(); student copies that give no formula away."""

from __future__ import annotations

import json
import re

import nbformat
import pytest
import torch

import checks
from checks import hints
from checks.authoring.student import HINTS, ROOT, ladders, stub_source
from checks.compare import reset

CELL = """\
# dcounts: dL/dcounts, shape (3, 4)
# dcounts full: the path through probs plus the one through counts_sum
# hint dcounts: counts feeds two places: counts_sum and probs; add both contributions.
# hint dcounts: probs = counts * counts_sum_inv: the local derivative is counts_sum_inv.
# hint dcounts: dcounts = ____ * dprobs
# hint dcounts+: dcounts += ____
### BEGIN SOLUTION
dcounts = counts_sum_inv * dprobs
other = 1
dcounts += torch.ones_like(counts) * dcounts_sum
### END SOLUTION
cmp('counts', dcounts, counts)"""


def test_the_comment_lines_make_the_todo_and_the_ladder():
    assert "dcounts = ...  # TODO: dL/dcounts, shape (3, 4)" in stub_source(CELL)
    assert "# hint" not in stub_source(CELL) and "full:" not in stub_source(CELL)
    assert "# TODO: the path through probs plus the one through counts_sum" in stub_source(
        CELL, full=True
    )
    ladder = ladders(CELL)["dcounts"]
    assert ladder["rungs"][0].startswith("counts feeds two places")
    assert ladder["rungs"][2] == "dcounts = ____ * dprobs\ndcounts += ____"
    # not `other = 1`
    assert ladder["solution"] == (
        "dcounts = counts_sum_inv * dprobs\ndcounts += torch.ones_like(counts) * dcounts_sum"
    )


def test_a_hint_for_a_name_the_block_does_not_assign_is_refused():
    with pytest.raises(ValueError, match="describes no name"):
        ladders(CELL.replace("# hint dcounts: counts feeds", "# hint dprobs: counts feeds"))


@pytest.fixture
def use_ladders(tmp_path, monkeypatch):
    """Write ladders as ``{notebook: {answer: [ladder, ...]}}`` and give hints from them alone."""

    def use(found: dict[str, dict]) -> None:
        for notebook, by_name in found.items():
            (tmp_path / f"{notebook}.json").write_text(json.dumps(by_name))
        hints._files.cache_clear()

    monkeypatch.setattr(hints, "HINTS", tmp_path)
    hints.reset()
    reset()
    yield use
    hints._files.cache_clear()
    hints.reset()
    reset()


@pytest.fixture
def ladder_of(use_ladders):
    use_ladders(
        {"03-makemore-backprop": {"dcounts": [{"check": "counts", **ladders(CELL)["dcounts"]}]}}
    )


@pytest.fixture
def real_ladders():
    """The committed ladders, and a kernel that has run nothing yet."""
    hints._files.cache_clear()
    hints.reset()
    reset()
    yield json.loads
    hints.reset()
    reset()


def test_one_rung_per_call_and_the_solution_only_when_asked(ladder_of):
    shown = [checks.hint("counts") for _ in range(4)]
    assert [h.number for h in shown] == [1, 2, 3, 3]
    assert [h.title for h in shown[:3]] == ["the idea", "the local derivative", "a skeleton"]
    assert "reveal=True" in shown[2].after and "counts_sum_inv * dprobs" not in "".join(
        map(str, shown)
    )
    sol = checks.hint("dcounts", reveal=True)
    assert sol.number == 0 and sol.text.startswith("dcounts = counts_sum_inv * dprobs")
    assert hints.used("counts") == (3, True)
    assert "<pre" in sol._repr_html_() and "hint 1 of 3" in shown[0]._repr_html_()


def test_the_first_rung_starts_from_the_last_mistake(ladder_of):
    g = torch.Generator().manual_seed(0)
    counts = torch.rand(3, 4, generator=g, requires_grad=True)
    (counts * torch.arange(12.0).view(3, 4)).sum().backward()
    checks.cmp("counts", -counts.grad, counts, quiet=True)  # a sign slip
    first = checks.hint("counts")
    assert first.text.startswith("Your last dcounts failed (sign): ")
    assert "counts feeds two places" in first.text
    assert "sign" not in checks.hint("counts").text  # the second rung is the ladder's own


def test_summary_counts_the_rungs(ladder_of, capsys):
    g = torch.Generator().manual_seed(0)
    counts = torch.rand(3, 4, generator=g, requires_grad=True)
    counts.sum().backward()
    checks.cmp("counts", torch.ones(3, 4), counts, quiet=True)
    checks.hint("counts")
    checks.hint("counts")
    table = checks.summary()
    assert re.search(r"counts\s+✓ pass\s+\S*\s+1\s+2\b", str(table)), str(table)
    page = table._repr_html_()
    assert re.search(r"<th [^>]*>hints</th>", page) and re.search(r"<td [^>]*>2</td>", page)


def test_an_unknown_name_says_which_ladders_exist(ladder_of):
    h = checks.hint("nothing")
    assert "no hint ladder" in h.text and "dcounts" in h.after


def test_the_ladders_are_generated_from_the_solutions():
    """Committed ladders match the solutions (python -m checks.student --check covers it too)."""
    from checks.authoring.student import notebook_ladders

    for sol in sorted((ROOT / "solutions").glob("*.ipynb")):
        made = notebook_ladders(nbformat.read(sol, as_version=4))
        if not made:  # 06's drills: each drill makes its ladders in the kernel, no file
            assert not (HINTS / f"{sol.stem}.json").exists(), sol.name
            continue
        assert json.loads((HINTS / f"{sol.stem}.json").read_text()) == made, sol.name


def test_every_answer_has_three_rungs():
    """Every ladder, a name asked twice (notebook 01's ``da``) included, and each knows
    its check."""
    for path in sorted(HINTS.glob("*.json")):
        for name, options in json.loads(path.read_text()).items():
            for ladder in options:
                assert len(ladder["rungs"]) == 3, (path.name, name, ladder["rungs"])
                assert ladder["solution"].strip() and ladder["check"], (path.name, name)


GIVEAWAYS = re.compile(
    r"@|\.T\b|\.sum|keepdim|transpos|\bplus\b|1 - |\*\*|\bmean\b|one_hot|softmax|"
    r"broadcast|scatter|index_add|Bessel|n - 1|n-1"
)


def test_the_student_copies_give_no_formula_away():
    found = []
    for path in sorted((ROOT / "notebooks").glob("*.ipynb")):
        for cell in nbformat.read(path, as_version=4).cells:
            for line in cell.source.split("\n") if cell.cell_type == "code" else []:
                todo = line.split("# TODO:", 1)[1] if "# TODO:" in line else ""
                if GIVEAWAYS.search(todo):
                    found.append(f"{path.name}: {line.strip()}")
    assert not found, "\n".join(found)


def test_a_name_asked_twice_gets_the_ladder_of_the_check_run_last():
    hints._files.cache_clear()
    hints.reset()
    reset()
    first = checks.hint("da")
    assert "hint 1 of 3" in first._repr_html_()
    x = torch.tensor(3.0, dtype=torch.float64, requires_grad=True)
    (x * x).backward()
    checks.cmp("a (a*a)", 6.0, x, quiet=True)  # the quiz of notebook 01 was run last
    quiz = checks.hint("da")
    # the quiz's own ladder, from its first rung
    assert quiz.number == 1 and quiz.text != first.text
    assert hints.used("a (a*a)") == (1, False)
    reset()
    hints.reset()


def test_a_self_study_edition_keeps_the_fuller_comments(tmp_path):
    from checks.authoring.student import main

    assert main(["--full", "--out", str(tmp_path)]) == 0
    fuller = nbformat.read(tmp_path / "03-makemore-backprop.ipynb", as_version=4)
    todos = [
        ln
        for c in fuller.cells
        if c.cell_type == "code"
        for ln in c.source.split("\n")
        if "# TODO:" in ln
    ]
    assert any("plus the one through counts_sum" in t for t in todos), todos[:5]
    assert (ROOT / "notebooks" / "03-makemore-backprop.ipynb").read_text() != (
        tmp_path / "03-makemore-backprop.ipynb"
    ).read_text()


# ---------------------------------------------------------------- hints that follow the learner


def counts_and_its_gradient():
    """``counts`` (3, 4) with its gradient, the ``w`` of ``loss = (counts * w).sum()``."""
    counts = torch.rand(3, 4, generator=torch.Generator().manual_seed(0), requires_grad=True)
    w = torch.arange(12.0).view(3, 4) - 5.0
    (counts * w).sum().backward()
    return counts, w


def test_a_new_mistake_starts_the_ladder_again_and_speaks_to_it(ladder_of):
    counts, w = counts_and_its_gradient()
    checks.cmp("counts", -w, counts, quiet=True)  # a sign slip
    first = checks.hint("counts")
    assert first.number == 1 and first.text.startswith("Your last dcounts failed (sign): ")
    assert checks.hint("counts").number == 2
    checks.cmp("counts", -w, counts, quiet=True)  # run again unchanged: the same mistake
    assert checks.hint("counts").number == 3
    checks.cmp("counts", 2 * w, counts, quiet=True)  # fixed the sign, doubled it
    again = checks.hint("counts")
    assert again.number == 1 and again.text.startswith("Your last dcounts failed (scale): ")
    assert "2 times" in again.text and "sign" not in again.text
    assert checks.hint("counts").number == 2  # the same mistake: the ladder goes on
    checks.cmp("counts", -w, counts, quiet=True)  # back to a slip spoken to before, not last
    assert checks.hint("counts").text.startswith("Your last dcounts failed (sign)")
    assert hints.used("counts") == (3, False)  # the deepest rung shown, not the calls


def test_an_answer_not_written_yet_is_no_mistake_to_speak_to(ladder_of):
    counts, _ = counts_and_its_gradient()
    checks.cmp("counts", ..., counts, quiet=True)
    shown = [checks.hint("counts") for _ in range(2)]
    assert [h.number for h in shown] == [1, 2] and "failed" not in shown[0].text


def test_an_upstream_step_is_told_it_is_right_and_pointed_at_the_wrong_answer(use_ladders):
    rungs = ["the idea", "the slope", "d_ = ____"]
    use_ladders(
        {
            "03-makemore-backprop": {
                "dy": [{"check": "y", "rungs": rungs, "solution": "dy = w.clone()"}],
                "dx": [{"check": "x", "rungs": rungs, "solution": "dx = 3.0 * dy"}],
            }
        }
    )
    g = torch.Generator().manual_seed(1)
    x = torch.rand(3, 4, generator=g, requires_grad=True)
    w = torch.rand(3, 4, generator=g)
    y = x * 3.0
    y.retain_grad()
    loss = (y * w).sum()
    loss.backward(retain_graph=True)
    dy = -w  # wrong: the sign
    checks.cmp("y", dy, y, quiet=True)
    dx = 3.0 * dy  # a right step on the wrong dy
    assert checks.cmp("x", dx, x, quiet=True).mistake == "upstream"
    told = checks.hint("x")
    assert told.number == 0 and "failed" not in told.text
    assert "dx is right as a step" in told.text and "`dy`" in told.text
    assert told.after == "hint('y') helps with dy"
    assert hints.used("x") == (0, False)  # no rung spent on a right step
    assert checks.hint("y").text.startswith("Your last dy failed (sign)")
    assert "<pre" not in told._repr_html_()


def test_unknown_names_are_spelled_as_asked_and_near_names_offered(real_ladders):
    assert "ddfoo" not in str(checks.hint("dfoo"))
    assert "there is no hint ladder for dfoo" in checks.hint("dfoo").text
    assert "for zz or dzz" in checks.hint("zz").text
    assert "hint('counts')" in checks.hint("count").after
    assert "hint('dcounts')" in checks.hint("dcount").after
    assert "hint('bngain')" in checks.hint("bngian").after  # a typo
    assert checks.hint("zz").after.startswith("ladders exist for: ")


def ran(*names: str) -> None:
    """This kernel ran the checks ``names`` (right answers; only the names matter here)."""
    x = torch.rand(3, generator=torch.Generator().manual_seed(2), requires_grad=True)
    (2 * x).sum().backward()
    for name in names:
        checks.cmp(name, torch.full((3,), 2.0), x, quiet=True)


def rung_one(notebook: str, answer: str, check: str) -> str:
    options = json.loads((HINTS / f"{notebook}.json").read_text())[answer]
    return next(lad for lad in options if lad["check"] == check)["rungs"][0]


def test_the_ladder_comes_from_the_notebook_whose_checks_ran_last(real_ladders):
    mlp01 = rung_one("01-scalar-autograd", "dW1", "dW1")
    makemore = rung_one("03-makemore-backprop", "dW1", "W1")
    assert mlp01 != makemore
    assert checks.hint("dW1").text == mlp01  # nothing run, no path: the first notebook
    hints.reset()
    ran("logprobs", "probs", "counts", "hprebn", "embcat")  # notebook 03, up to dW1
    assert checks.hint("dW1").text == makemore
    ran("W1 (tanh)", "b1 (tanh)")  # then notebook 01's checks, later
    assert checks.hint("dW1").text.startswith(mlp01[:40])


def test_a_name_of_other_notebooks_only_is_not_given_from_them(real_ladders):
    ran("logprobs", "probs", "W1", "W2")  # notebook 03, which has no dW
    shown = checks.hint("W")
    assert shown.number == 0 and "no hint ladder for dW in 03-makemore-backprop" in shown.text
    assert "02-tensor-backprop and 04-mlp-language-model have one" in shown.text
    assert "hint('W1')" in shown.after and "hint('W2')" in shown.after


def test_a_check_two_notebooks_share_goes_to_the_one_it_opens(real_ladders):
    ran("W")  # the first check of 04, the fifth of 02 (whose first four did not run)
    assert checks.hint("W").text == rung_one("04-mlp-language-model", "dW", "W")


def test_the_notebook_open_in_the_kernel_comes_first(real_ladders, monkeypatch):
    ran("logprobs", "W1")
    monkeypatch.setattr(hints, "_open_stem", lambda: "01")
    assert checks.hint("dW1").text == rung_one("01-scalar-autograd", "dW1", "dW1")


@pytest.mark.slow
def test_in_a_kernel_with_no_notebook_path_the_ladder_is_the_notebooks_own(tmp_path):
    """nbclient sets no ``__session__``: notebook 03's cells up to dW1, a wrong dW1, then hint."""
    from nbclient import NotebookClient

    solution = nbformat.read(ROOT / "solutions" / "03-makemore-backprop.ipynb", as_version=4)
    upto = next(i for i, c in enumerate(solution.cells) if "cmp('W1'" in c.source)
    asks = [
        "print('__session__' in globals(), '__vsc_ipynb_file__' in globals())",
        "dW1 = dhprebn.T @ embcat  # a transpose slip\ncmp('W1', dW1, W1)",
        "print(hint('dW1'))",
        "print(hint('W1'))",
    ]
    nb = nbformat.v4.new_notebook(
        cells=solution.cells[:upto] + [nbformat.v4.new_code_cell(a) for a in asks],
        metadata=solution.metadata,
    )
    client = NotebookClient(
        nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}
    )
    client.execute(env={k: v for k, v in __import__("os").environ.items() if "JPY" not in k})
    shown = ["".join(o.get("text", "") for o in c.outputs) for c in nb.cells[-4:]]
    assert shown[0].strip() == "False False"
    first = rung_one("03-makemore-backprop", "dW1", "W1")
    assert "hint for dW1 (1 of 3: the idea)" in shown[2] and first in shown[2]
    assert "Your last dW1 failed (" in shown[2]
    assert "hint for dW1 (2 of 3: the local derivative)" in shown[3]


def _hint_output(mark: dict | None, text: str = "hint for dcounts (1 of 3: the idea)") -> dict:
    """A hint's display_data output as a saved notebook holds it."""
    out = {"output_type": "display_data", "data": {"text/plain": text}, "metadata": {}}
    if mark is not None:
        out["metadata"]["backprop-workbook"] = mark
    return out


def _submitted(*cells: list[dict]) -> dict:
    return {
        "cells": [{"cell_type": "markdown", "metadata": {}, "source": "# Exercise 1: ..."}]
        + [
            {
                "cell_type": "code",
                "execution_count": i + 1,
                "id": f"c{i}",
                "metadata": {},
                "outputs": outputs,
                "source": "hint('counts')",
            }
            for i, outputs in enumerate(cells)
        ],
        "metadata": {},
        "nbformat": 4,
        "nbformat_minor": 5,
    }


def test_hints_used_reads_the_markers_of_a_saved_notebook():
    from checks.grading.hintlog import hint_records, hints_used, reveals_used

    def mark(answer: str, rung: int, reveal: bool = False, of: int = 3) -> dict:
        return {"hint": answer, "check": answer[1:], "notebook": "03-makemore-backprop",
                "rung": rung, "of": of, "reveal": reveal}  # fmt: skip

    nb = _submitted(
        [
            _hint_output(mark("dcounts", 1)),
            {"output_type": "stream", "name": "stdout", "text": "x"},
        ],
        [_hint_output(mark("dcounts", 3)), _hint_output(mark("dcounts", 2))],
        [_hint_output(mark("dprobs", 0, reveal=True))],  # the solution: every rung
        [_hint_output(mark("dlogprobs", 0, of=0))],  # a message ("reveal is off"): no rung
        [_hint_output(None), _hint_output({"hint": 3, "rung": 1})],  # no marker, a broken one
        [_hint_output({"hint": "dh", "rung": "two"}), _hint_output({"hint": "dW2", "rung": -4})],
    )
    assert hints_used(nb) == {"dcounts": 3, "dprobs": 3}
    assert reveals_used(nb) == {"dprobs"}
    assert [r.cell for r in hint_records(nb)] == [1, 2, 2, 3, 4, 6]
    assert hint_records(nb)[0].check == "counts"
    cleared = _submitted(*[[] for _ in range(6)])  # Kernel → Restart and clear outputs
    assert hints_used(cleared) == {} and reveals_used(cleared) == set()
    assert hints_used(nbformat.from_dict(nb)) == hints_used(nb)


@pytest.fixture
def shell():
    """An IPython shell in this process, gone afterwards (later tests see plain Python)."""
    from IPython.core.interactiveshell import InteractiveShell

    yield InteractiveShell.instance()
    InteractiveShell.clear_instance()


def test_a_hint_shown_carries_its_marker(ladder_of, monkeypatch, shell):
    shown: list[tuple[dict, dict]] = []
    monkeypatch.setattr(
        shell.display_pub,
        "publish",
        lambda data, metadata=None, **kw: shown.append((data, metadata)),
    )
    h = checks.hint("counts")
    h._ipython_display_()
    data, metadata = shown[-1]
    assert data["text/plain"] == str(h) and "hint 1 of 3" in data["text/html"]
    assert metadata == {
        "backprop-workbook": {"hint": "dcounts", "check": "counts",
                              "notebook": "03-makemore-backprop", "rung": 1, "of": 3,
                              "reveal": False}
    }  # fmt: skip
    checks.hint("counts", reveal=True)._ipython_display_()
    assert shown[-1][1]["backprop-workbook"]["reveal"] is True
