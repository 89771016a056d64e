"""Notebook 05's GPT (exercise 3: token and position embeddings, pre-norm blocks of causal
multi-head attention and a tanh-GELU MLP, a final layer norm, the output projection, the mean
cross-entropy over the targets that are not -1) made fast by hand, as exercise 4 of
``solutions/05`` writes it: ``gpt_forward_fast`` keeps what the backward pass needs (the attention
probabilities, the GELU's sigmoid, each layer norm's x̂ and 1/σ, with q, k and v laid out once),
and ``gpt_backward_fast``, taking and returning what the notebook's ``gpt_backward`` does,
recomputes none of it, with fused layer-norm, GELU, attention and cross-entropy gradients.

Read from the solution for a GPT of any width and heads (the notebook's globals ``n_embd``,
``n_head`` and ``head_size``), so that ``tests/test_fast_steps.py`` checks the notebook's own
cells."""

from __future__ import annotations

import math
from collections.abc import Callable

from tests.fast_steps import SOLUTIONS, defining


def fast_gpt(n_embd: int, n_head: int) -> tuple[Callable, Callable]:
    """Exercise 4's ``gpt_forward_fast(p, X)`` and ``gpt_backward_fast(p, X, Y, logits, cache)``
    for ``n_embd`` numbers per position in ``n_head`` heads."""
    scope = defining(
        SOLUTIONS / "05-transformer-backprop.ipynb",
        "gpt_forward_fast",
        "gpt_backward_fast",
        math=math,
        n_embd=n_embd,
        n_head=n_head,
        head_size=n_embd // n_head,
    )
    return scope["gpt_forward_fast"], scope["gpt_backward_fast"]
