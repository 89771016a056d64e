"""The grader reads a learner's answer whole however the learner laid it out (#23): an answer
cell split into several cells, scratch cells added between answers; cells of the instructor's,
edited or not, never join an answer; the hints the notebook shows were used go to their checks."""

from __future__ import annotations

import nbformat

from checks.authoring.student import ROOT
from checks.grading.exercise import hints_shown, learner_cells, load_exercise
from checks.hints import MARKER
from tests.notebooks import ANSWERS, fill

NAME = "03-makemore-backprop.ipynb"
EX = load_exercise(ROOT / "solutions" / NAME)


def filled() -> nbformat.NotebookNode:
    return fill(nbformat.read(ROOT / "notebooks" / NAME, as_version=4), ANSWERS)


def split(nb: nbformat.NotebookNode, check_line: str, keep_id_on_last: bool = False) -> list:
    """Split the cell holding ``check_line`` into one cell per answer line with its check, as
    Jupyter's split does: the new cells get new ids."""
    k = next(i for i, c in enumerate(nb.cells) if check_line in c.source)
    old = nb.cells[k]
    lines = old.source.split("\n")
    answers = [ln for ln in lines if not ln.startswith("cmp(")]
    checks = [ln for ln in lines if ln.startswith("cmp(")]
    parts = [nbformat.v4.new_code_cell(f"{a}\n{c}") for a, c in zip(answers, checks, strict=True)]
    keeper = parts[-1] if keep_id_on_last else parts[0]
    keeper["id"] = old["id"]
    nb.cells[k : k + 1] = parts
    return parts


def answer_of(nb: nbformat.NotebookNode, tmp_path, name: str) -> str:
    path = tmp_path / NAME
    nbformat.write(nb, path)
    found = learner_cells(EX, path)
    index = next(a.index for a in EX.answers if name in a.names)  # exercise 1's
    return found[index] or ""


def test_an_answer_split_into_three_cells_is_read_whole(tmp_path):
    nb = filled()
    split(nb, "cmp('h'")
    got = answer_of(nb, tmp_path, "dW2")
    for line in ("dh = dlogits @ W2.T", "dW2 = h.T @ dlogits", "db2 = dlogits.sum(0)"):
        assert line in got, got
    assert got.index("dh =") < got.index("dW2 =") < got.index("db2 =")


def test_a_split_whose_last_part_kept_the_id_is_read_whole(tmp_path):
    nb = filled()
    split(nb, "cmp('h'", keep_id_on_last=True)
    got = answer_of(nb, tmp_path, "dh")
    assert "dh = dlogits @ W2.T" in got and "db2 = dlogits.sum(0)" in got, got


def test_a_scratch_cell_joins_the_answer_before_it(tmp_path):
    nb = filled()
    k = next(i for i, c in enumerate(nb.cells) if "cmp('hpreact'" in c.source)
    nb.cells.insert(k + 1, nbformat.v4.new_code_cell("print(dhpreact.shape)  # scratch"))
    got = answer_of(nb, tmp_path, "dhpreact")
    assert got.endswith("print(dhpreact.shape)  # scratch"), got


def test_an_edited_cell_of_the_instructors_joins_no_answer(tmp_path):
    nb = filled()
    k = next(i for i, c in enumerate(nb.cells) if "cmp('hpreact'" in c.source)
    after = next(c for c in nb.cells[k + 1 :] if c.cell_type == "code")
    after.source += "\nprint('my own note')"  # its id is the instructor's
    assert "my own note" not in answer_of(nb, tmp_path, "dhpreact")


def shown_hint(
    answer: str, check: str, rung: int, of: int, reveal: bool = False, of_nb="03-makemore-backprop"
):
    mark = {"hint": answer, "check": check, "notebook": of_nb}
    mark |= {"rung": rung, "of": of, "reveal": reveal}
    return nbformat.v4.new_output(
        "display_data", data={"text/plain": "a hint"}, metadata={MARKER: mark}
    )


def test_the_hints_a_notebook_shows_go_to_the_rows_of_their_checks(tmp_path):
    """The marker ``hint()`` leaves in its output: rungs shown, a revealed solution, each on its
    check (``dlogits`` is asked twice: exercise 2's hint is not exercise 1's)."""
    nb = filled()
    cell = next(c for c in nb.cells if "cmp('counts'" in c.source)
    cell.outputs = [shown_hint("dcounts", "counts", 1, 3), shown_hint("dcounts", "counts", 2, 3)]
    cell = next(c for c in nb.cells if "cmp('logits (fused)'" in c.source)
    cell.outputs = [shown_hint("dlogits", "logits (fused)", 3, 3, reveal=True)]
    path = tmp_path / NAME
    nbformat.write(nb, path)
    said = hints_shown(EX, path)
    assert said["ex1/dcounts"] == "2/3"
    assert said["ex2/dlogits"] == "revealed" and "ex1/dlogits" not in said
    assert len(said) == 2


def test_a_drills_hints_in_the_notebook_are_not_the_notebooks(tmp_path):
    """A drill run in notebook 03 (``drill()``) names its own tensors ``W1`` and ``b1`` too: the
    rungs its ladder showed there, and its solution revealed, count for no check of 03."""
    nb = filled()
    cell = next(c for c in nb.cells if "cmp('W1'" in c.source)
    cell.outputs = [
        shown_hint("dW1", "W1", 2, 3, of_nb="drill"),
        shown_hint("db1", "b1", 3, 3, reveal=True, of_nb="drill"),
    ]
    path = tmp_path / NAME
    nbformat.write(nb, path)
    assert hints_shown(EX, path) == {}
    cell.outputs.append(shown_hint("dW1", "W1", 1, 3))
    nbformat.write(nb, path)
    said = hints_shown(EX, path)  # the notebook's own rung counts, the drill's deeper one not
    assert "ex1/dW1" in said and set(said.values()) == {"1/3"}
