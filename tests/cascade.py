"""A solution notebook's answer cells run in-process with one answer made wrong: what every later
check then says (the cascade walk of issue 22).

The set-up cells (data, parameters, the forward pass and autograd's backward) run once; each walk
then runs the answer cells in a fresh copy of that namespace, with ``cmp`` starting from nothing
(``checks.reset``), and one line added after the solution lines of one cell to spoil one answer.

``Walk.said`` is closer to a learner's cell: the solution's lines for the answer are replaced by the
learner's (inside a function's solution block too), and, with ``sources=True``, each cell's text is
where ``cmp`` reads it in a notebook (``linecache``, as IPython keeps it), so what the code says
(``dC[Xb] += demb``, a batch size written as a number) counts as it does there.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import linecache
import re
from dataclasses import dataclass
from pathlib import Path
from unittest import mock

import torch
from torch.utils._pytree import tree_leaves, tree_map_only

import checks
import checks.compare
import checks.numeric
from checks.graph import GraphFacts, frame_tensors, uses

ROOT = Path(__file__).resolve().parents[1]
SOLUTION = re.compile(r"### BEGIN SOLUTION\n(.*?)### END SOLUTION\n", re.S)
ASSIGNED = re.compile(r"^(d\w+)\s*(?:[+\-*/]?=)", re.M)
ASSIGNS = re.compile(r"^(\w+)\s*(?:[-+*/@]?=(?!=)|\[.*\]\s*[-+*/]?=(?!=))", re.M)
CHECKED = re.compile(r"\bcmp\('([^']+)',\s*(d\w+)\s*,\s*(\w+)")


@dataclass(frozen=True)
class Spoil:
    """One answer put into a solution: its variable, the kind of slip (or ``right``) and the line
    that makes it.

    For ``Walk.said``: ``check`` is the check the answer is judged by (by default the first check
    of ``answer``), in the ``nth`` cell that runs it (02 checks ``W`` in three sections); ``inside``
    names the function whose solution block assigns ``answer`` (04's and 05's layers), when that
    is not the block of the check's own cell."""

    answer: str
    kind: str
    line: str
    check: str | None = None
    nth: int = 1
    inside: str | None = None

    def __str__(self) -> str:
        return f"{self.answer}-{self.kind}"


@dataclass(frozen=True)
class Outcome:
    """What one check said: its name, whether it passed, and its mistake word."""

    name: str
    ok: bool
    mistake: str | None
    hint: str | None
    notes: tuple[str, ...] = ()  # the words of its notes (``keepdim``, ``dtype``, ...)


class Walk:
    """The answer cells of a solution, from its first answer cell to the cell with ``last``
    (a check's name, for ``cmp`` or ``check_value``), with the cells before run once. With
    ``sources``, the answer cells' text is kept where ``cmp`` reads a cell's source."""

    def __init__(
        self,
        notebook: str,
        last: str,
        skip: tuple[str, ...] = ("plt.",),
        sources: bool = False,
        moved_before: str | None = None,
    ) -> None:
        """With ``moved_before`` (a text of a set-up cell), every tensor the set-up made until
        that cell is moved to :data:`tests.otherdevice.OTHER` before it runs: the graph, the
        answers and the checks are then on another device than the CPU (run the walk inside
        :func:`tests.otherdevice.on_other_device`)."""
        nb = json.loads((ROOT / "solutions" / f"{notebook}.ipynb").read_text())
        code = ["".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code"][1:]
        first = next(i for i, s in enumerate(code) if SOLUTION.search(s))
        end = next(i for i, s in enumerate(code) if _runs(s, last))
        self.cells = [s for s in code[first : end + 1] if not any(k in s for k in skip)]
        self.sources = sources
        self.base: dict = {}
        with contextlib.redirect_stdout(io.StringIO()):
            for s in code[:first]:
                if moved_before is not None and moved_before in s:
                    _move_tensors(self.base)
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
                exec(self._code(s), ns)
        assert done, f"no cell checks {spoil.answer}"
        return [Outcome(r.name, r.ok, r.mistake, r.hint) for r in checks.results()]

    def said(self, spoil: Spoil) -> Outcome:
        """What ``spoil``'s own check says when the solution's lines for ``spoil.answer`` are
        replaced by ``spoil.line``; the walk stops after the cell of that check."""
        check = spoil.check or self._first_check(spoil.answer)
        at = [i for i, s in enumerate(self.cells) if _runs(s, check)]
        assert len(at) >= spoil.nth, f"{len(at)} cells run the check {check!r}"
        end = at[spoil.nth - 1]
        edit = end
        if spoil.inside:
            edit = next(i for i, s in enumerate(self.cells) if f"def {spoil.inside}(" in s)
        cells = list(self.cells[: end + 1])
        cells[edit] = replaced(cells[edit], spoil.answer, spoil.line)
        checks.reset()
        ns = dict(self.base)
        ran: list = []

        def record(res, quiet=False, _record=checks.compare.record):
            ran.append(res)
            return _record(res, quiet)

        with (
            contextlib.redirect_stdout(io.StringIO()),
            mock.patch.object(checks.compare, "record", record),
            mock.patch.object(checks.numeric, "record", record),
        ):
            for s in cells:
                before = len(ran)
                exec(self._code(s), ns)
        own = [r for r in ran[before:] if r.name == check]
        assert own, f"the check {check!r} did not run"
        res = own[0]
        return Outcome(res.name, res.ok, res.mistake, res.hint, tuple(n.word for n in res.notes))

    def _first_check(self, answer: str) -> str:
        for s in self.cells:
            for check, name, _ in CHECKED.findall(s):
                if name == answer:
                    return check
        raise AssertionError(f"no cell checks {answer}")

    def _code(self, s: str):
        """``s`` compiled as a cell: with ``sources``, under a name whose text linecache holds,
        as IPython keeps each cell's."""
        if not self.sources:
            return compile(s, "<answer cell>", "exec")
        name = f"<cell {hashlib.sha1(s.encode()).hexdigest()[:16]}>"
        linecache.cache[name] = (len(s), None, s.splitlines(keepends=True), name)
        return compile(s, name, "exec")


def _move_tensors(namespace: dict) -> None:
    """Every tensor of ``namespace`` (and of its dicts and lists: 05's ``params``) on the other
    device, a leaf that requires grad still one."""
    from tests.otherdevice import to_other

    for name, x in list(namespace.items()):
        if any(isinstance(v, torch.Tensor) for v in tree_leaves(x)):
            namespace[name] = tree_map_only(torch.Tensor, to_other, x)


def _runs(cell: str, check: str) -> bool:
    """Whether ``cell`` runs the check named ``check`` (with ``cmp`` or ``check_value``)."""
    return re.search(rf"\b(?:cmp|check_value)\('{re.escape(check)}'", cell) is not None


def replaced(cell: str, answer: str, lines: str) -> str:
    """``cell`` with the lines of its solution block that assign ``answer`` (``dX = ...``,
    ``dX += ...``, ``dX[...] -= ...``, ``dX.index_add_(...)``), or any other name that ``lines``
    assign at their top level, replaced by ``lines``, indented as they were, where the first of
    them stood."""
    m = SOLUTION.search(cell)
    assert m, "the cell has no solution block"
    *block, tail = m.group(1).split("\n")  # tail: the indentation of the END line
    names = {answer, *ASSIGNS.findall(lines)}
    alternatives = "|".join(re.escape(name) for name in sorted(names))
    own = re.compile(rf"\s*(?:{alternatives})(?:\s*[-+*/@]?=(?!=)|\[|\.\w+_\()")
    at = [i for i, line in enumerate(block) if own.match(line)]
    assert at, f"the solution block assigns no {answer}"
    indent = block[at[0]][: len(block[at[0]]) - len(block[at[0]].lstrip())]
    new = [indent + line if line.strip() else line for line in lines.split("\n")]
    kept = [line for i, line in enumerate(block) if i not in at]
    kept[at[0] : at[0]] = new
    body = "".join(line + "\n" for line in kept) + tail
    return cell[: m.start(1)] + body + cell[m.end(1) :]


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
