"""A class of generated submissions of one notebook, for trying the grader at scale.

    python bench/make_class.py DIR [--n 300] [--notebook 03-makemore-backprop.ipynb] [--seed 0]

Writes ``DIR/learner-NNN/NOTEBOOK``: the student copy with its answer cells filled from the
solution, learner by learner, drawn from ``--seed``: about 40% complete, 25% stopped partway (the
first k answer cells), 25% with slips in a fifth of the cells (a sign flipped or a factor of 2
added after the answer), 5% blank and 5% with a cell that does not parse. Prints how many of each.
Every learner differs from the others only in these choices; the notebooks are the workbook's own.
"""

from __future__ import annotations

import argparse
import collections
import random
from pathlib import Path

import nbformat

from checks.grading.exercise import load_exercise
from checks.paths import NOTEBOOKS, SOLUTIONS

KINDS = [("complete", 40), ("partial", 25), ("slips", 25), ("blank", 5), ("broken", 5)]


def slip(source: str, names: list[str], rng: random.Random) -> str:
    """The answer, then one of its names changed as a hurried learner would get it wrong."""
    name = rng.choice(names)
    return source + (f"\n{name} = -{name}" if rng.random() < 0.5 else f"\n{name} = {name} * 2")


def learner(notebook: str, kind: str, rng: random.Random) -> nbformat.NotebookNode:
    ex = load_exercise(SOLUTIONS / notebook)
    nb = nbformat.read(NOTEBOOKS / notebook, as_version=4)
    answers = ex.answers
    stop = rng.randrange(1, len(answers)) if kind == "partial" else len(answers)
    broken = rng.randrange(len(answers)) if kind == "broken" else None
    for k, ans in enumerate(answers):
        if kind == "blank" or k >= stop:
            continue  # the student copy's placeholder stays
        source = ans.solution
        if kind == "slips" and not ans.probe and rng.random() < 0.2:
            source = slip(source, ans.names, rng)
        if k == broken:
            source += "\nthis line is not python"
        nb.cells[ans.index].source = source
    return nb


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("folder", type=Path)
    ap.add_argument("--n", type=int, default=300)
    ap.add_argument("--notebook", default="03-makemore-backprop.ipynb")
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    rng = random.Random(a.seed)
    names, weights = zip(*KINDS, strict=True)
    made: collections.Counter = collections.Counter()
    for i in range(a.n):
        kind = rng.choices(names, weights)[0]
        folder = a.folder / f"learner-{i:03d}"
        folder.mkdir(parents=True, exist_ok=True)
        nbformat.write(learner(a.notebook, kind, rng), folder / a.notebook)
        made[kind] += 1
    print(
        f"{a.n} submissions of {a.notebook} in {a.folder}: "
        + ", ".join(f"{made[k]} {k}" for k, _ in KINDS)
    )


if __name__ == "__main__":
    main()
