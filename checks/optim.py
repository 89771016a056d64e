"""AdamW as ``torch.optim.AdamW`` computes it, and the slips learners make in it, so that a wrong
optimiser step is named (``decay``, ``bias-correction``, ``moment``, ``sign``) rather than called a
factor of 1.0005.

``adamw_slips(p0, grads, lr=...)`` runs each slipped variant over the same gradients; its result
goes to ``check_value(..., slips=...)`` in the notebook and, through the reference run's facts
(``facts``), to the grader.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

Moments = tuple[torch.Tensor, torch.Tensor, torch.Tensor]  # (p, m, v) after a step

# (mistake word, how the step differs) -> the hint when an answer matches what that step gives
SLIPS: dict[tuple[str, tuple[tuple[str, str], ...]], str] = {
    ("decay", (("decay", "none"),)): (
        "your {name} is Adam's, without AdamW's weight decay: shrink the parameter itself, "
        "`p * (1 - lr * weight_decay)`, apart from the step (decoupled)."
    ),
    ("decay", (("decay", "coupled"),)): (
        "your {name} adds the weight decay to the gradient (Adam's L2, `grad + weight_decay * p`): "
        "AdamW decouples it, shrinking the parameter itself by `1 - lr * weight_decay`."
    ),
    ("decay", (("decay", "no-lr"),)): (
        "your {name} shrinks the parameter by `1 - weight_decay`: AdamW's decoupled decay is "
        "scaled by the learning rate, `1 - lr * weight_decay`."
    ),
    ("bias-correction", (("correct", "first"),)): (
        "your {name} corrects the averages' bias as at step 1 on every step: the correction is "
        "`1 - beta**t` with the step count t, which grows."
    ),
    ("bias-correction", (("correct", "next"),)): (
        "your {name} corrects the averages' bias with `t + 1`: at step t the correction is "
        "`1 - beta**t` (t counts from 1)."
    ),
    ("bias-correction", (("correct", "none"),)): (
        "your {name} leaves out the bias correction: divide the averages by `1 - beta1**t` and "
        "`1 - beta2**t` before the step (they start at zero)."
    ),
    ("bias-correction", (("correct", "m-only"),)): (
        "your {name} corrects the first average's bias but not the second's: divide `v` by "
        "`1 - beta2**t` too."
    ),
    ("moment", (("moment", "swapped"),)): (
        "your {name} swaps the running average's weights: the old average keeps `beta` and the "
        "new gradient gets `1 - beta`."
    ),
    ("moment", (("moment", "unsquared"),)): (
        "your {name} averages the gradient where `v` averages its square, entry by entry "
        "(`grad**2`)."
    ),
    ("moment", (("moment", "old"),)): (
        "your {name} steps with the averages from before this step: update `m` and `v` with "
        "this step's gradient first, then correct and use them."
    ),
    ("sign", (("sign", "+"),)): (
        "your {name} moves the parameter up the gradient: the step subtracts "
        "`lr * m_hat / (sqrt(v_hat) + eps)`."
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
    **slip: str,
) -> Moments:
    """Step ``t`` of AdamW, or of one of its slips (``SLIPS``): ``decay`` "none", "coupled" (L2 in
    the gradient) or "no-lr"; ``correct`` "first" (as at step 1), "next" (t + 1), "none" or
    "m-only"; ``moment`` "swapped" (the betas), "unsquared" or "old" (last step's); ``sign``
    "+"."""
    beta1, beta2 = betas
    decay, correct, moment = (slip.get(k, "") for k in ("decay", "correct", "moment"))
    if decay == "coupled":
        grad = grad + weight_decay * p
    w1, w2 = (1 - beta1, 1 - beta2) if moment != "swapped" else (beta1, beta2)
    m_new = (1 - w1) * m + w1 * grad
    v_new = (1 - w2) * v + w2 * (grad if moment == "unsquared" else grad**2)
    m_use, v_use = (m, v) if moment == "old" else (m_new, v_new)
    k = {"first": 1, "next": t + 1, "none": None}.get(correct, t)
    m_hat = m_use if k is None else m_use / (1 - beta1**k)
    v_hat = v_use if k is None or correct == "m-only" else v_use / (1 - beta2**k)
    shrinks = {"none": 1.0, "coupled": 1.0, "no-lr": 1 - weight_decay}
    shrink = shrinks.get(decay, 1 - lr * weight_decay)
    step = lr * m_hat / (v_hat.sqrt() + eps)
    return p * shrink + (step if slip.get("sign") == "+" else -step), m_new, v_new


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
        for t, grad in enumerate(grads, start=t0):
            p, m, v = adamw_step(p, grad, m, v, t, **settings, **dict(how))
        for key, value in zip("pmv", (p, m, v), strict=True):
            out[key].append((word, hint, value))
    return out


def facts(
    p: torch.Tensor, grad: torch.Tensor, m: torch.Tensor, v: torch.Tensor, t: int, lr: float
) -> dict[str, dict[str, list]]:
    """The grader's facts for one probed step of the learner's ``adamw``: for ``p_new``,
    ``m_new`` and ``v_new``, what each slip gives (``checks.grading.facts.apply`` reads them)."""
    found = adamw_slips(p, [grad], m, v, t0=t, lr=lr)
    return {f"{key}_new": {"slips": [list(slip) for slip in found[key]]} for key in ("p", "m", "v")}
