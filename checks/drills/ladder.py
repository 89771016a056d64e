"""A drill's hint ladders, built from its operations' rules (checks/drills/ops.py): for each
gradient the learner writes, the idea (where the tensor is used and what those steps do
backwards), the local derivative of each use, a skeleton (the solution line with blanks), and the
solution line itself. The same shape as the notebooks' ladders (``checks/hints/*.json``), so that
``hint()`` gives them rung by rung and follows the learner's mistakes the same way.
"""

from __future__ import annotations

from checks.drills.build import BINARY, Drill, Step

Shape = tuple[int, ...]


def ladders(d: Drill) -> dict[str, list[dict]]:
    """``d``'s ladders by answer name (``dh1``): one ladder each, its check named as the drill's
    answer cell names it (``h1``)."""
    solution = _lines(d.solution())
    skeleton = _lines(d.solution(blank=True))
    return {
        f"d{n}": [
            {
                "check": n,
                "rungs": [idea(d, n), local(d, n), f"d{n} = {skeleton[f'd{n}']}"],
                "solution": f"d{n} = {solution[f'd{n}']}",
            }
        ]
        for n in d.answers
    }


def _lines(code: str) -> dict[str, str]:
    return dict(line.split(" = ", 1) for line in code.split("\n"))


def uses(d: Drill, name: str) -> list[tuple[Step, int]]:
    """The steps that take ``name``, each with the place ``name`` has among its operands."""
    return [(s, i) for s in d.steps for i, o in enumerate(s.operands) if o == name]


def idea(d: Drill, name: str) -> str:
    """The first rung: where ``name`` is used, whether its gradient sums several contributions,
    and what each of those steps does backwards."""
    if name == d.last:
        each = "it" if not d.shapes[name] else f"each entry of `{name}`"
        return (
            f"`{name}` is the last step: the loss is `({name} * u).sum()`, with `u` fixed weights,"
            f" so {each} moves the loss by its weight in `u`."
        )
    found = uses(d, name)
    where = " and ".join(f"`{s.out} = {s.expr}`" for s, _ in found)
    shape = _shape(d.shapes[name])
    if len(found) == 1:
        head = f"`{name}` {shape} is used once, in {where}."
    else:
        head = (
            f"`{name}` {shape} is used {len(found)} times, in {where}: its gradient is the sum"
            " of every use's contribution."
        )
    parts = [head]
    for step, i in found:
        text = _said(d, step, step.op.idea)
        parts.append(f"`{step.out}`: {text}." if len(found) > 1 else f"{_capital(text)}.")
        stretched = _stretched(d, step, i)
        if stretched:
            parts.append(stretched)
    return " ".join(parts)


def local(d: Drill, name: str) -> str:
    """The second rung: the local derivative of each use, which the chain rule multiplies by the
    gradient of that step's output."""
    if name == d.last:
        return f"d loss / d{name} = u, entry by entry: the gradient starts as the weights."
    found = uses(d, name)
    if len(found) == 1:
        step, i = found[0]
        said = _said(d, step, step.op.local[i])
        return f"{said}. The chain rule multiplies it by `d{step.out}`."
    said = "; ".join(f"through `{s.out}`: {_said(d, s, s.op.local[i])}" for s, i in found)
    outs = ", ".join(f"`d{s.out}`" for s, _ in found)
    return (
        f"{said[0].upper()}{said[1:]}. Each is multiplied by its step's output gradient ({outs})."
    )


def _said(d: Drill, step: Step, template: str) -> str:
    """``template`` with the step's names (:meth:`Drill.names`)."""
    return template.format(**d.names(step))


def _stretched(d: Drill, step: Step, i: int) -> str:
    """The broadcast a step makes of its ``i``-th operand, in words ("" where there is none)."""
    name, full = step.operands[i], d.shapes[step.out]
    shape = d.shapes[name]
    if step.op.name not in BINARY or shape == full:
        return ""
    lead = len(full) - len(shape)
    kept = [lead + k for k, n in enumerate(shape) if n == 1 and full[lead + k] > 1]
    how = [f"over axis {' and '.join(map(str, range(lead)))}"] if lead else []
    how += [f"over axis {' and '.join(map(str, kept))} with keepdim=True"] if kept else []
    return (
        f"There `{name}` {_shape(shape)} is broadcast to {_shape(full)}: its gradient is summed"
        f" back {', then '.join(how)}."
    )


def _shape(shape: Shape) -> str:
    return f"({shape[0]},)" if len(shape) == 1 else f"({', '.join(map(str, shape))})"


def _capital(text: str) -> str:
    return text[:1].upper() + text[1:]
