"""Shared code of the drill tests: a drill's forward pass and an answer cell run together, the way
a learner runs them, with each check's Result kept."""

from __future__ import annotations

from collections import Counter

from checks.compare import Result
from checks.drills.build import BINARY, Drill, draw
from checks.drills.ops import kept_axes


def run_answers(seed: int, answers: str) -> tuple[Drill, dict[str, Result], dict]:
    """Drill ``seed``'s forward pass, then ``answers`` (``dX = ...`` lines) and a quiet ``cmp`` of
    every gradient the drill asks for: the drill, each check's Result by tensor, the namespace."""
    d = draw(seed)
    results, ns = checked(d.forward_code(), answers, d.answers)
    return d, results, ns


def solved(d: Drill) -> dict:
    """The namespace of ``d``'s forward pass followed by the generator's own answers."""
    ns: dict = {}
    exec(compile(d.forward_code(), f"<drill {d.seed}>", "exec"), ns)
    exec(compile(d.solution(), "<solution>", "exec"), ns)
    return ns


def checked(forward: str, answers: str, names: list[str]) -> tuple[dict[str, Result], dict]:
    """``forward`` (which ends in ``loss.backward()``), then ``answers``, then a quiet ``cmp`` of
    each of ``names``, in one namespace: each check's Result by tensor, and the namespace."""
    ns: dict = {"__results": {}}
    exec(compile(forward, "<forward>", "exec"), ns)
    checks = "\n".join(f"__results[{n!r}] = cmp({n!r}, d{n}, {n}, quiet=True)" for n in names)
    exec(compile(f"{answers}\n{checks}", "<answers>", "exec"), ns)
    return ns["__results"], ns


def slipped(d: Drill, word: str) -> tuple[str, dict[str, Result], dict] | None:
    """Drill ``d`` answered right up to the first operand used once whose contribution has a
    catalogued slip ``word`` (``Op.slips``), that one written with the slip; every answer up to it
    checked in order, as a learner checks them. The operand, the Results and the namespace; None
    when the drill has no such operand (or the slip is an unbroadcast where nothing broadcasts)."""
    uses = Counter(name for step in d.steps for name in step.operands)
    for k, step in enumerate(d.steps):
        rules = step.op.slips.get(word, ())
        for i, name in enumerate(step.operands):
            if i >= len(rules) or rules[i] is None or uses[name] != 1:
                continue
            if word == "shape" and step.op.name in BINARY and d.shapes[name] == d.shapes[step.out]:
                continue  # nothing broadcast: no sum to leave out
            if word == "keepdim" and not kept_axes(d.shapes[name], d.shapes[step.out]):
                continue  # no size-1 axis stretched: no keepdim to drop
            lines = d.solution((k, i, word)).split("\n")
            upto = next(j for j, line in enumerate(lines) if line.startswith(f"d{name} = "))
            names = d.answers[: d.answers.index(name) + 1]
            results, ns = checked(d.forward_code(), "\n".join(lines[: upto + 1]), names)
            return name, results, ns
    return None
