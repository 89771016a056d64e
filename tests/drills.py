"""Shared code of the drill tests: a drill's forward pass and an answer cell run together, the way
a learner runs them, with each check's Result kept."""

from __future__ import annotations

from checks.compare import Result
from checks.drills.build import Drill, draw


def run_answers(seed: int, answers: str) -> tuple[Drill, dict[str, Result], dict]:
    """Drill ``seed``'s forward pass, then ``answers`` (``dX = ...`` lines) and a quiet ``cmp`` of
    every gradient the drill asks for: the drill, each check's Result by tensor, the namespace."""
    d = draw(seed)
    results, ns = checked(d.forward_code(), answers, d.answers)
    return d, results, ns


def checked(forward: str, answers: str, names: list[str]) -> tuple[dict[str, Result], dict]:
    """``forward`` (which ends in ``loss.backward()``), then ``answers``, then a quiet ``cmp`` of
    each of ``names``, in one namespace: each check's Result by tensor, and the namespace."""
    ns: dict = {"__results": {}}
    exec(compile(forward, "<forward>", "exec"), ns)
    checks = "\n".join(f"__results[{n!r}] = cmp({n!r}, d{n}, {n}, quiet=True)" for n in names)
    exec(compile(f"{answers}\n{checks}", "<answers>", "exec"), ns)
    return ns["__results"], ns
