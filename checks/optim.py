"""AdamW as ``torch.optim.AdamW`` computes it, and the slips learners make in it, so that a wrong
optimiser step is named (``decay``, ``bias-correction``) rather than called a factor of 1.0005.

``adamw_slips(p0, grads, lr=...)`` runs each slipped variant over the same gradients; its result
goes to ``check_value(..., slips=...)`` in the notebook and, through the reference run's facts
(``facts``), to the grader.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

Moments = tuple[torch.Tensor, torch.Tensor, torch.Tensor]  # (p, m, v) after a step

# (mistake word, the variant) -> the hint when an answer matches what the variant gives
SLIPS = {
    ("decay", "none"): (
        "your {name} is Adam's, without AdamW's weight decay: shrink the parameter itself, "
        "`p * (1 - lr * weight_decay)`, apart from the step (decoupled)."
    ),
    ("decay", "coupled"): (
        "your {name} adds the weight decay to the gradient (Adam's L2, `grad + weight_decay * p`): "
        "AdamW decouples it, shrinking the parameter itself by `1 - lr * weight_decay`."
    ),
    ("bias-correction", "first"): (
        "your {name} corrects the averages' bias as at step 1 on every step: the correction is "
        "`1 - beta**t` with the step count t, which grows."
    ),
    ("bias-correction", "none"): (
        "your {name} leaves out the bias correction: divide the averages by `1 - beta1**t` and "
        "`1 - beta2**t` before the step (they start at zero)."
    ),
}


def adamw_step(
    p: torch.Tensor,
    grad: torch.Tensor,
    m: torch.Tensor,
    v: torch.Tensor,
    t: int,
    lr: float,
    betas: tuple[float, float] = (0.9, 0.999),
    eps: float = 1e-8,
    weight_decay: float = 0.01,
    decay: str = "decoupled",
    correct: str = "t",
) -> Moments:
    """Step ``t`` of AdamW (``decay="decoupled"``, ``correct="t"``) or of one of its slips:
    ``decay`` "none" or "coupled" (L2 in the gradient), ``correct`` "first" (as at step 1) or
    "none"."""
    beta1, beta2 = betas
    if decay == "coupled":
        grad = grad + weight_decay * p
    m = beta1 * m + (1 - beta1) * grad
    v = beta2 * v + (1 - beta2) * grad**2
    k = {"t": t, "first": 1}.get(correct)
    m_hat = m if k is None else m / (1 - beta1**k)
    v_hat = v if k is None else v / (1 - beta2**k)
    shrink = 1 - lr * weight_decay if decay == "decoupled" else 1.0
    return p * shrink - lr * m_hat / (v_hat.sqrt() + eps), m, v


def adamw_slips(
    p0: torch.Tensor,
    grads: Sequence[torch.Tensor],
    m0: torch.Tensor | None = None,
    v0: torch.Tensor | None = None,
    t0: int = 1,
    **settings: Any,
) -> dict[str, list[tuple[str, str, torch.Tensor]]]:
    """Each slip of ``SLIPS`` run from ``p0`` (and ``m0``, ``v0``, zeros by default) over
    ``grads``, the first at step ``t0``: for "p", "m" and "v", (word, hint with ``{name}``, the
    value that slip ends with)."""
    out: dict[str, list[tuple[str, str, torch.Tensor]]] = {"p": [], "m": [], "v": []}
    for (word, how), hint in SLIPS.items():
        p = p0.clone()
        m = torch.zeros_like(p0) if m0 is None else m0.clone()
        v = torch.zeros_like(p0) if v0 is None else v0.clone()
        way = {"decay" if word == "decay" else "correct": how}
        for t, grad in enumerate(grads, start=t0):
            p, m, v = adamw_step(p, grad, m, v, t, **settings, **way)
        for key, value in zip("pmv", (p, m, v), strict=True):
            out[key].append((word, hint, value))
    return out


def facts(
    p: torch.Tensor, grad: torch.Tensor, m: torch.Tensor, v: torch.Tensor, t: int, lr: float
) -> dict[str, dict[str, list]]:
    """The grader's facts for one probed step of the learner's ``adamw``: for ``p_new``,
    ``m_new`` and ``v_new``, what each slip gives (``checks.facts.apply`` reads them)."""
    found = adamw_slips(p, [grad], m, v, t0=t, lr=lr)
    return {f"{key}_new": {"slips": [list(slip) for slip in found[key]]} for key in ("p", "m", "v")}
