"""A solution notebook's answer cells run in-process with one answer made wrong: what every later
check then says (the cascade walk of issue 22).

The set-up cells (data, parameters, the forward pass and autograd's backward) run once; each walk
then runs the answer cells in a fresh copy of that namespace, with ``cmp`` starting from nothing
(``checks.reset``), and one line added after the solution lines of one cell to spoil one answer.
"""

from __future__ import annotations

import contextlib
import io
import json
import re
from dataclasses import dataclass
from pathlib import Path

import torch

import checks
from checks.graph import GraphFacts, frame_tensors, uses

ROOT = Path(__file__).resolve().parents[1]
SOLUTION = re.compile(r"### BEGIN SOLUTION\n(.*?)### END SOLUTION\n", re.S)
ASSIGNED = re.compile(r"^(d\w+)\s*(?:[+\-*/]?=)", re.M)
CHECKED = re.compile(r"\bcmp\('([^']+)',\s*(d\w+)\s*,\s*(\w+)")


@dataclass(frozen=True)
class Spoil:
    """One wrong answer: the answer's variable, the kind of slip and the line that makes it."""

    answer: str
    kind: str
    line: str

    def __str__(self) -> str:
        return f"{self.answer}-{self.kind}"


@dataclass(frozen=True)
class Outcome:
    """What one check said: its name, whether it passed, and its mistake word."""

    name: str
    ok: bool
    mistake: str | None
    hint: str | None


class Walk:
    """The answer cells of a solution, from its first answer cell to the cell with ``last``
    (a check's name), with the cells before run once."""

    def __init__(self, notebook: str, last: str, skip: tuple[str, ...] = ("plt.",)) -> None:
        nb = json.loads((ROOT / "solutions" / f"{notebook}.ipynb").read_text())
        code = ["".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code"][1:]
        first = next(i for i, s in enumerate(code) if SOLUTION.search(s))
        end = next(i for i, s in enumerate(code) if f"cmp('{last}'" in s)
        self.cells = [s for s in code[first : end + 1] if not any(k in s for k in skip)]
        self.base: dict = {}
        with contextlib.redirect_stdout(io.StringIO()):
            for s in code[:first]:
                exec(compile(s, f"<{notebook} set-up>", "exec"), self.base)
        checks.reset()

    def answers(self) -> dict[str, tuple[str, str, int]]:
        """Every checked answer variable (``dX`` in ``cmp('X', dX, X)``), in order, with its first
        check's name, its tensor's name and the number of uses of that tensor."""
        root = self.base["loss"]
        out = {}
        for s in self.cells:
            for check, answer, tensor in CHECKED.findall(s):
                t = self.base.get(tensor)
                if answer not in out and isinstance(t, torch.Tensor):
                    out[answer] = (check, tensor, sum(len(s) for _, s in uses(root, t)))
        return out

    def run(self, spoil: Spoil | None = None) -> list[Outcome]:
        """Every check's outcome, in order, with ``spoil``'s line just before the first check of
        its answer."""
        checks.reset()
        ns = dict(self.base)
        ns["one_path"] = one_path
        done = spoil is None
        with contextlib.redirect_stdout(io.StringIO()):
            for s in self.cells:
                if not done:
                    at = re.search(rf"^cmp\('[^']+',\s*{spoil.answer}\s*,", s, re.M)
                    if at:
                        s = s[: at.start()] + spoil.line + "\n" + s[at.start() :]
                        done = True
                exec(compile(s, "<answer cell>", "exec"), ns)
        assert done, f"no cell checks {spoil.answer}"
        return [Outcome(r.name, r.ok, r.mistake, r.hint) for r in checks.results()]


def one_path(t: torch.Tensor) -> torch.Tensor:
    """The contribution to ``t``'s gradient through its first use alone (a path left out)."""
    import sys

    facts = GraphFacts(t, t.grad, frame_tensors(sys._getframe(1)))
    paths = facts.paths()
    assert len(paths) >= 2 and paths[0][1] is not None, "one_path needs a tensor used twice"
    return paths[0][1].clone()


def spoils(answer: str, tensor: str, uses: int, extra: dict[str, str] | None = None) -> list[Spoil]:
    """The slips tried on ``answer``, the gradient of ``tensor``: a sign, a factor, a missing path
    (for a tensor with more than one use) and any written for it (``extra``: kind -> line)."""
    out = [
        Spoil(answer, "sign", f"{answer} = -{answer}"),
        Spoil(answer, "factor", f"{answer} = {answer} * 3"),
    ]
    if uses > 1:
        out.append(Spoil(answer, "missing-path", f"{answer} = one_path({tensor})"))
    out += [Spoil(answer, kind, line) for kind, line in (extra or {}).items()]
    return out
