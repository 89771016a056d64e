"""Notebook 03's variants as edits of the lecture's notebook: for each choice of a
:class:`~checks.variants.Makemore` that is not the lecture's, the forward lines, the
prose, the answer cells (solution, TODO text, hint rungs) and the training step that change with it.

The default variant makes no edit at all, so it is the notebook in ``solutions/`` unchanged. The
sizes change the shapes written in comments and prose; the order permutes the independent answers
of a cell. Each edit is bound to text the lecture's notebook holds once (:mod:`.edits`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator

from checks.authoring.variants import edits
from checks.authoring.variants.edits import Drop, Edit, Sub, Swap, announced, apply, line, reordered
from checks.variants import GROUPS, NAMES, Makemore, renamed, resized, same_sizes

# --- the activation -------------------------------------------------------------------------
# name -> (forward call, the prose after its heading, TODO text, the local-derivative rung,
# the skeleton rung, the solution's expression multiplied by dh)
ACTIVATIONS: dict[str, tuple[str, str, str, str, str, str]] = {
    "relu": (
        "torch.relu(hpreact)",
        "`relu(x) = max(x, 0)` passes a positive input through unchanged and stops a negative one, "
        "so its derivative is 1 where\n`x > 0` and 0 elsewhere (at exactly 0 PyTorch takes 0). A "
        "comparison such as `hpreact > 0` gives a tensor of booleans;\nmultiplied by a float tensor "
        "it counts as ones and zeros.",
        "local derivative of relu (1 where hpreact > 0, else 0) times dh",
        "d relu(x) / dx = 1 where x > 0 and 0 elsewhere: a mask of the positive entries of "
        "`hpreact`.",
        "dhpreact = (____ > 0) * dh",
        "(hpreact > 0)",
    ),
    "sigmoid": (
        "torch.sigmoid(hpreact)",
        "The derivative of `sigmoid(x) = 1 / (1 + exp(-x))` is `sigmoid(x) * (1 - sigmoid(x))`, "
        "and `sigmoid(hpreact)` is `h`,\nalready computed.",
        "local derivative of sigmoid (use h) times dh",
        "d sigmoid(x) / dx = sigmoid(x) * (1 - sigmoid(x)), and `sigmoid(hpreact)` is `h`, "
        "already computed.",
        "dhpreact = h * (____) * dh",
        "h * (1.0 - h)",
    ),
    "gelu": (
        "F.gelu(hpreact)",
        "`F.gelu` is the exact GELU, `gelu(x) = x Φ(x)`, where `Φ(x) = (1 + erf(x / √2)) / 2` is "
        "the standard normal\ndistribution's cumulative function. The product rule gives its "
        "derivative, `Φ(x) + x φ(x)`, with the normal density\n`φ(x) = exp(-x²/2) / √(2π)`, the "
        "derivative of `Φ`. Unlike `tanh`'s, this slope cannot be written with `h` alone: use\n"
        "`hpreact`. `torch.erf` and `torch.pi` are there for it.",
        "local derivative of gelu, Φ(x) + x φ(x) at x = hpreact, times dh",
        "d gelu(x) / dx = Φ(x) + x φ(x), with Φ(x) = (1 + erf(x / √2)) / 2 and "
        "φ(x) = exp(-x**2 / 2) / √(2π), at x = `hpreact`.",
        "dhpreact = (0.5 * (1.0 + torch.erf(____ / 2**0.5)) + ____ * torch.exp(-0.5 * ____**2) "
        "/ (2 * torch.pi)**0.5) * dh",
        "(0.5 * (1.0 + torch.erf(hpreact / 2**0.5)) + hpreact * torch.exp(-0.5 * hpreact**2) "
        "/ (2 * torch.pi)**0.5)",
    ),
}


def activation(name: str) -> Iterator[Edit]:
    """The edits that put ``name`` where the lecture has ``tanh``."""
    call, prose, full, local, skeleton, slope = ACTIVATIONS[name]
    yield Sub("`tanh`, a second linear layer", f"`{name}`, a second linear layer")
    yield Sub(line("h = torch.tanh(hpreact)", "(32, 64)"), line(f"h = {call}", "(32, 64)"))
    yield Swap("### `hpreact`: through `tanh`", f"### `hpreact`: through `{name}`\n\n{prose}")
    yield Swap(
        "# dhpreact: dL/dhpreact, shape (32, 64)",
        "# dhpreact: dL/dhpreact, shape (32, 64)\n"
        f"# dhpreact full: {full}; shape (32, 64)\n"
        f"# hint dhpreact: `hpreact` is used once, in `h = {call}`, element by element. One path: "
        "local derivative times `dh`.\n"
        f"# hint dhpreact: {local}\n"
        f"# hint dhpreact: {skeleton}\n"
        "### BEGIN SOLUTION\n"
        f"dhpreact = {slope} * dh\n"
        "### END SOLUTION\n"
        "cmp('hpreact', dhpreact, hpreact)",
    )
    # the training step of exercise 4, and the trained network's forward pass
    yield Sub("    h = torch.tanh(hpreact)\n", f"    h = {call}\n")
    yield Sub("# dhpreact full: through tanh\n", f"# dhpreact full: through {name}\n")
    yield Sub(
        "    # hint dhpreact: `hpreact` is used once, in `h = torch.tanh(hpreact)`, element by "
        "element: local derivative times `dh`.\n"
        "    # hint dhpreact: d tanh(x) / dx = 1 - tanh(x)**2, and `tanh(hpreact)` is `h`.\n"
        "    # hint dhpreact: dhpreact = (____) * dh\n",
        f"    # hint dhpreact: `hpreact` is used once, in `h = {call}`, element by element: "
        "local derivative times `dh`.\n"
        f"    # hint dhpreact: {local}\n"
        f"    # hint dhpreact: {skeleton}\n",
    )
    yield Sub("    dhpreact = (1.0 - h**2) * dh\n", f"    dhpreact = {slope} * dh\n")
    yield Sub("return torch.tanh(hpreact) @ W2 + b2", f"return {call} @ W2 + b2")


# --- batch norm's variance --------------------------------------------------------------------
BIASED_DBNDIFF2 = """\
### `bndiff2`: a sum, scaled

`bnvar = 1/n * bndiff2.sum(0, keepdim=True)`. The sum becomes a broadcast of `dbnvar` over the 32 rows, and the
factor in front scales it, exactly as it scaled the sum. This variance divides by the batch size itself, without
Bessel's correction `1/(n-1)` (the lecture uses it, this notebook does not): the backward pass must use exactly what
the forward used."""

BIASED_DBNDIFF2_CELL = """\
# dbndiff2: dL/dbndiff2, shape (32, 64)
# dbndiff2 full: dbnvar broadcast over the batch, times 1/n; shape (32, 64)
# hint dbndiff2: `bndiff2` (32, 64) is used once, in `bnvar = 1/n * bndiff2.sum(0, keepdim=True)`. \
A sum forward is a broadcast backward. Mind the factor in front: the backward pass uses the forward \
pass's own factor.
# hint dbndiff2: For y = c * (x1 + ... + xk), every xi has the same slope, dy / dxi = c: the sum \
hands its gradient to each entry, and the factor in front scales it. Each column of `bndiff2` adds \
into one entry of `bnvar`.
# hint dbndiff2: dbndiff2 = ____ * torch.ones_like(bndiff2) * dbnvar
### BEGIN SOLUTION
dbndiff2 = 1.0 / n * torch.ones_like(bndiff2) * dbnvar
### END SOLUTION
cmp('bndiff2', dbndiff2, bndiff2)"""

_BESSEL_TERM = "n / (n - 1) * "


def biased_variance() -> Iterator[Edit]:
    """The edits that make batch norm's variance the plain ``1/n`` one, the lecture's
    ``1/(n-1)`` (Bessel's correction) gone from the forward pass, the prose and the answers."""
    yield Sub(
        "variance with Bessel's correction `1/(n-1)`,",
        "the plain variance `1/n` (no Bessel's correction),",
    )
    yield Sub(
        line(
            "bnvar = 1/(n-1) * bndiff2.sum(0, keepdim=True)",
            "(1, 64): variance, Bessel's correction",
        ),
        line("bnvar = 1/n * bndiff2.sum(0, keepdim=True)", "(1, 64): variance, divided by n"),
    )
    yield Swap("### `bndiff2`: a sum, with Bessel's correction", BIASED_DBNDIFF2)
    yield Swap("# dbndiff2: dL/dbndiff2", BIASED_DBNDIFF2_CELL)
    # exercise 3: the fused gradient without the n/(n-1)
    yield Sub(
        "`dhpreact`; with Bessel's correction in the variance,",
        "`dhpreact`; with the plain variance,",
    )
    yield Sub("- n/(n-1) x̂ Σ(dy x̂))`", "- x̂ Σ(dy x̂))`")
    yield Sub(
        "`var` with `unbiased=True` is the `1/(n-1)` variance",
        "`var` with `unbiased=False` is the `1/n` variance",
    )
    yield Sub(
        "hprebn.var(0, keepdim=True, unbiased=True) + 1e-5)",
        "hprebn.var(0, keepdim=True, unbiased=False) + 1e-5)",
    )
    yield Sub(
        " The n/(n-1) comes from Bessel's correction in the variance.",
        " This variance has no Bessel's correction: no n/(n-1).",
    )
    for indent in ("    ", ""):  # the step's first: the unindented text is in both
        yield Sub(
            f"{indent}# hint dhprebn: dhprebn = bngain * bnvar_inv / n * (n * ____ - ____.sum(0) - {_BESSEL_TERM}",
            f"{indent}# hint dhprebn: dhprebn = bngain * bnvar_inv / n * (n * ____ - ____.sum(0) - ",
        )
        yield Sub(
            f"{indent}dhprebn = bngain * bnvar_inv / n * (n * dhpreact - dhpreact.sum(0) - {_BESSEL_TERM}",
            f"{indent}dhprebn = bngain * bnvar_inv / n * (n * dhpreact - dhpreact.sum(0) - ",
        )
    # exercise 4: the training step and the calibration
    yield Sub(
        "bnvar = hprebn.var(0, keepdim=True, unbiased=True)",
        "bnvar = hprebn.var(0, keepdim=True, unbiased=False)",
    )
    yield Sub(
        "(`mean`, `var` with Bessel's correction)", "(`mean`, `var` without Bessel's correction)"
    )
    yield Sub(
        " n/(n-1) is Bessel's correction.\n",
        " No n/(n-1): this variance has no Bessel's correction.\n",
    )
    yield Sub(
        "hpre.var(0, keepdim=True, unbiased=True)", "hpre.var(0, keepdim=True, unbiased=False)"
    )


# --- the loss: cross-entropy with label smoothing ---------------------------------------------
LECTURE_LOGPROBS = """\
### `logprobs`

`loss = -logprobs[range(n), Yb].mean()` picks one entry per row, the log-probability of the right next character, and
averages their negatives. So only those 32 entries matter: an entry that is not picked never reaches the loss, and its
gradient is 0. For the picked ones, recall the slope of a mean: in `m = (x1 + ... + xk) / k` every `xi` has slope
`1/k`, and a minus sign in front, `-m`, flips the sign of every slope."""

SMOOTHED_LOGPROBS = """\
### `logprobs`

With label smoothing, the target of a row is not one character but a distribution, `targets`: `1 - smoothing` on the
right next character plus `smoothing / 27` on every one of the 27 (so each row sums to 1). The loss weighs each
log-probability by its target, sums each row and averages the rows' negated sums:
`loss = -(targets * logprobs).sum(1).mean()`. So every entry of `logprobs` reaches the loss, through a product with a
constant (slope: the constant), a row sum (slope 1) and a mean over `n` rows (slope `1/n`), with a minus sign in front."""

SMOOTHED_LOGPROBS_CELL = """\
# dlogprobs: dL/dlogprobs, shape (32, 27)
# dlogprobs full: -targets / n, every entry; shape (32, 27) like logprobs
# hint dlogprobs: `logprobs` is used once, in `loss = -(targets * logprobs).sum(1).mean()`. Every \
entry reaches the loss: multiplied by its target, summed over its row, averaged over the batch.
# hint dlogprobs: Chain the three slopes: d(targets * x) / dx = targets, a row sum passes its gradient \
to each entry with slope 1, and the mean over `n` rows gives each row 1/n; the minus sign flips it all.
# hint dlogprobs: dlogprobs = -____ / ____
### BEGIN SOLUTION
dlogprobs = -targets / n
### END SOLUTION
cmp('logprobs', dlogprobs, logprobs)"""

SMOOTHED_EXERCISE_2 = """\
# Exercise 2: the cross-entropy gradient in one line

Nine steps led from `logits` to `loss`. Do the algebra once on paper and they collapse: for one example with
probabilities `p = softmax(logits)` and target distribution `q` (a row of `targets`), the gradient of
`-Σ_j q[j] log p[j]` with respect to `logits[j]` is `p[j] - q[j]`, since the `q[j]` sum to 1. Averaging over the batch
divides by `n`. First, the fused forward pass: `F.cross_entropy` with `label_smoothing=smoothing` gives the same loss
as our steps."""

SMOOTHED_DLOGITS_CELL = """\
# dlogits: dL/dlogits, shape (32, 27)
# dlogits full: softmax of the logits, minus the targets, divided by n; shape (32, 27)
# hint dlogits: The steps from `logits` to `loss` are one function: the mean over the batch of \
-Σ targets * log softmax. Differentiate it in one go. Each row's gradient starts from its own \
probabilities, the targets are taken away, and the mean scales everything.
# hint dlogits: For one row with p = softmax(logits[i]) and targets q (summing to 1): \
d(-Σ_j q[j] log p[j]) / d logits[i, j] = p[j] - q[j]. The mean over the `n` rows divides by n.
# hint dlogits: dlogits = F.softmax(____, 1) - ____
# hint dlogits+: dlogits /= ____
### BEGIN SOLUTION
dlogits = F.softmax(logits, 1) - targets
dlogits /= n
### END SOLUTION
cmp('logits (fused)', dlogits, logits)"""

SMOOTHED_PICTURE = """\
What the gradient looks like: on the left the logits of the batch (noise, at initialisation), on the right `dlogits`.
Each row has one dark cell, the target, pulled up by `1 - smoothing + smoothing/27 - p[y]`; every other character is
pushed down by what the network gave it beyond its `smoothing/27`. Push and pull balance: each row of `dlogits` sums to
zero."""


def label_smoothing(smoothing: float) -> Iterator[Edit]:
    """The edits that make the loss the cross-entropy with label smoothing ``smoothing``."""
    yield Sub(
        "and the cross-entropy loss. The names",
        "and the cross-entropy loss with label smoothing. The names",
    )
    yield Sub(
        "take the log, average the target entries)",
        "take the log, weigh it by the smoothed targets)",
    )
    yield Sub(
        "# cross-entropy loss, one step at a time\n",
        f"# cross-entropy loss with label smoothing, one step at a time\nsmoothing = {smoothing}\n",
    )
    yield Sub(
        line("loss = -logprobs[range(n), Yb].mean()", "a number"),
        line("targets = torch.full((n, vocab_size), smoothing / vocab_size)", "(32, 27): smoothed")
        + "\n"
        + line("targets[range(n), Yb] += 1 - smoothing", "each row sums to 1")
        + "\n"
        + line("loss = -(targets * logprobs).sum(1).mean()", "a number"),
    )
    yield Sub(LECTURE_LOGPROBS, SMOOTHED_LOGPROBS)
    yield Swap("# dlogprobs: dL/dlogprobs", SMOOTHED_LOGPROBS_CELL)
    yield Swap("# Exercise 2: the cross-entropy gradient in one line", SMOOTHED_EXERCISE_2)
    yield Sub(
        "loss_fast = F.cross_entropy(logits, Yb)",
        "loss_fast = F.cross_entropy(logits, Yb, label_smoothing=smoothing)",
    )
    yield Swap(
        "# dlogits full: softmax of the logits, minus 1 at each target", SMOOTHED_DLOGITS_CELL
    )
    yield Swap("Each row has one dark cell, the target,", SMOOTHED_PICTURE)
    # exercise 4's training step
    yield Sub(
        "    loss = F.cross_entropy(logits, Yb)\n",
        "    loss = F.cross_entropy(logits, Yb, label_smoothing=smoothing)\n",
    )
    yield Sub(
        "    # hint dlogits: `loss = F.cross_entropy(logits, Yb)` is the fused cross-entropy: use your gradient from exercise 2, here with this function's `n`, `logits` and `Yb`.\n"
        "    # hint dlogits: For one row with p = softmax(logits[i]) and target y: d(-log p[y]) / d logits[i, j] = p[j] - 1 when j == y, and p[j] otherwise; the mean over the `n` rows divides by n.\n"
        "    # hint dlogits: dlogits = F.softmax(____, 1)\n"
        "    # hint dlogits+: dlogits[range(n), Yb] -= ____\n"
        "    # hint dlogits+: dlogits /= ____\n",
        "    # hint dlogits: `loss = F.cross_entropy(logits, Yb, label_smoothing=smoothing)` is the fused cross-entropy with label smoothing: your gradient from exercise 2, with this function's `n`, `logits` and `Yb`, and the targets made here from `Yb`.\n"
        "    # hint dlogits: For one row with p = softmax(logits[i]): p[j] minus the row's target q[j], which is smoothing / vocab_size for every j plus 1 - smoothing at j == Yb[i]; the mean over the `n` rows divides by n.\n"
        "    # hint dlogits: dlogits = F.softmax(____, 1)\n"
        "    # hint dlogits+: dlogits[range(n), Yb] -= ____\n"
        "    # hint dlogits+: dlogits -= ____\n"
        "    # hint dlogits+: dlogits /= ____\n",
    )
    yield Sub(
        "    dlogits[range(n), Yb] -= 1\n    dlogits /= n\n",
        "    dlogits[range(n), Yb] -= 1 - smoothing\n    dlogits -= smoothing / vocab_size\n    dlogits /= n\n",
    )


# --- sizes, order, and what the lecture measured ----------------------------------------------
def resized_cells(sources: list[str | None], v: Makemore) -> list[str | None]:
    """Every cell with ``v``'s sizes (:func:`checks.variants.resized`); unchanged for the lecture's."""
    if same_sizes(v):
        return sources
    return [None if text is None else resized(text, v) for text in sources]


def lecture_numbers() -> Iterator[Edit]:
    """The lecture's losses told as the lecture's, not as this network's."""
    yield Sub(
        "The lecture reports about 2.07 on the training set and 2.11 on the validation set after "
        "the full 200,000 steps.\n",
        "The lecture's network (`tanh`, batch norm with Bessel's correction, the plain "
        "cross-entropy) reaches about 2.07 on the\ntraining set and 2.11 on the validation set after "
        "the full 200,000 steps. This one is a variant of it: expect numbers\nnear those, not the "
        "same.\n",
    )


# exercise 5 (optional), in a variant whose answers differ: its fast step is the lecture network's
# own, so it goes, and the race keeps the learner's step against autograd's, whose forward pass is
# made from the variant's step once the other edits are made (its cell holds AUTOGRAD until then)
RACE_SAID = edits.race_said(5)  # the last summary's, on the race
COST_SAID = edits.COST_SAID  # and what a variant says instead
AUTOGRAD = "# step_autograd: the variant's forward pass, made from its step"
COST_INTRO = """### What your step costs

Not graded. `race()` below times your training step, `step`, against the same forward pass differentiated by
`loss.backward()`, on the same minibatches, after checking that their gradients agree, and counts the tensor
operations each makes and the memory they allocate. (The lecture's notebook has an exercise here that makes the step
fast; its fast step is the lecture network's own, so this variant has none.)"""
AUTOGRAD_HEAD = (
    "def step_autograd(net, Xb, Yb):\n"
    "    '''The forward pass of `step`, differentiated by `loss.backward()`: the time to beat.'''\n"
)
AUTOGRAD_TAIL = (
    "    for p in net:\n"
    "        p.grad = None\n"
    "    loss.backward()\n"
    "    return loss, [p.grad for p in net]"
)


def cost_only() -> list[Edit]:
    """Exercise 5 without its fast step: the race of the learner's step against autograd's."""
    return [
        Swap("def step_autograd(net, Xb, Yb):", AUTOGRAD),
        Drop("def step_fast(net, Xb, Yb):"),
        Swap("# Exercise 5: make it fast (optional)", COST_INTRO),
        Sub(RACE_SAID, COST_SAID),
        Sub("race(step_fast, step, autograd=step_autograd,", "race(step, autograd=step_autograd,"),
    ]


def autograd_step(step: str) -> str:
    """The cell of ``step_autograd``: the forward pass of ``step`` (its cell's text, a variant's),
    differentiated by ``loss.backward()``."""
    forward = step.split("    # backward, by hand\n", 1)[0].split("\n", 2)[2]  # no def, docstring
    return AUTOGRAD_HEAD + forward + AUTOGRAD_TAIL


IMPORTS = (
    "from checks import cmp, hint, load_names, require, setting, split_dataset, summary, training\n"
)


def edits(v: Makemore, lecture: list[str]) -> list[Edit]:
    """The edits that make the lecture's notebook (its cells' text ``lecture``) ``v``'s (sizes and
    order come after them)."""
    if v == Makemore():
        return []
    # first: its steps repeat the forward pass that the other edits change
    out: list[Edit] = cost_only() if v.answers_differ else []
    out += announced(v, IMPORTS)
    if v.norm == "batchnorm-biased":
        out += biased_variance()
    if v.norm == "layernorm":  # before the activation's: its evaluation cell holds the tanh
        out += layer_norm()
    if v.norm == "rmsnorm":
        out += rms_norm()
    if v.norm == "none":
        out += no_norm(lecture)
    if v.activation != "tanh":
        out += activation(v.activation)
    if v.loss == "label-smoothing":
        out += label_smoothing(v.smoothing)
    if not same_sizes(v) and v.norm in ("batchnorm", "batchnorm-biased"):  # its shape is v's
        out.append(
            Sub("(In the lecture `dbnmeani` comes", "(Written as in the lecture, `dbnmeani` comes")
        )
    return out + list(lecture_numbers())


# --- a normalisation over each example's features: layer norm and RMS norm ----------------------
# the cells the two share in form; {p}: the names' prefix, {x}: what {p}raw scales, {q}: the square
_PER_EXAMPLE = {
    "var_inv": """\
# d{p}var_inv: dL/d{p}var_inv, shape (32, 1)
# d{p}var_inv full: (the other factor) times d{p}raw, summed over the features; shape (32, 1)
# hint d{p}var_inv: `{p}var_inv` (32, 1) is used once, in `{p}raw = {x} * {p}var_inv`, and broadcast over the features of its row there. A product, and then broadcast forward, sum backward, over axis 1 this time.
# hint d{p}var_inv: The slope for one factor of a product is the other factor, here `{x}`. Sum the contributions of a row's features and keep the shape (32, 1).
# hint d{p}var_inv: d{p}var_inv = (____ * d{p}raw).sum(____, keepdim=True)
### BEGIN SOLUTION
d{p}var_inv = ({x} * d{p}raw).sum(1, keepdim=True)
### END SOLUTION
cmp('{p}var_inv', d{p}var_inv, {p}var_inv)""",
    "var": """\
# d{p}var: dL/d{p}var, shape (32, 1)
# d{p}var full: local derivative of (x + 1e-5)**-0.5 times d{p}var_inv; shape (32, 1)
# hint d{p}var: `{p}var` (32, 1) is used once, in `{p}var_inv = ({p}var + 1e-5)**-0.5`, element by element. One path: local derivative times `d{p}var_inv`.
# hint d{p}var: The power rule: d((x + c)**p) / dx = p * (x + c)**(p - 1), here with p = -0.5 and c = 1e-5.
# hint d{p}var: d{p}var = ____ * ({p}var + 1e-5)**____ * d{p}var_inv
### BEGIN SOLUTION
d{p}var = -0.5 * ({p}var + 1e-5)**-1.5 * d{p}var_inv
### END SOLUTION
cmp('{p}var', d{p}var, {p}var)""",
    "square": """\
# d{q}: dL/d{q}, shape (32, 64)
# d{q} full: d{p}var broadcast over the features, times 1/n_hidden; shape (32, 64)
# hint d{q}: `{q}` (32, 64) is used once, in `{p}var = 1/n_hidden * {q}.sum(1, keepdim=True)`. A sum forward is a broadcast backward, here over the features of each row. Mind the factor in front.
# hint d{q}: For y = c * (x1 + ... + xk), every xi has the same slope, dy / dxi = c: the sum hands its gradient to each entry, and the factor in front scales it. Each row of `{q}` adds into one entry of `{p}var`.
# hint d{q}: d{q} = ____ * torch.ones_like({q}) * d{p}var
### BEGIN SOLUTION
d{q} = 1.0 / n_hidden * torch.ones_like({q}) * d{p}var
### END SOLUTION
cmp('{q}', d{q}, {q})""",
    "input": """\
# d{x}: dL/d{x}, shape (32, 64)
# d{x} full: the contribution through {p}raw plus the one through {q}; shape (32, 64)
# hint d{x}: `{x}` is used twice: in `{p}raw = {x} * {p}var_inv` and in `{q} = {x}**2`. Add both contributions (`+=`).
# hint d{x}: Through the product, the slope is the other factor, `{p}var_inv` (32, 1). Through the square, d(x**2) / dx = 2x.
# hint d{x}: d{x} = ____ * d{p}raw
# hint d{x}+: d{x} += ____ * d{q}
### BEGIN SOLUTION
d{x} = {p}var_inv * d{p}raw
d{x} += 2 * {x} * d{q}
### END SOLUTION
cmp('{x}', d{x}, {x})""",
}


def per_example_cells(p: str, x: str, q: str) -> dict[str, str]:
    """The answer cells of a normalisation over each example's features, in its names: the
    inverse deviation's, the variance's, the summed square's, and ``x``'s two contributions."""
    return {part: text.format(p=p, x=x, q=q) for part, text in _PER_EXAMPLE.items()}


LN_CELLS = per_example_cells("ln", "lndiff", "lndiff2")
RMS_CELLS = per_example_cells("rms", "hprerms", "rmsq")


def evaluate_cell(doc: str, gain: str, forward: str) -> str:
    """The evaluation cell of a network with no batch statistics to fix: ``logits_of`` (its
    docstring ending ``doc``, its gain and bias ``gain``, ``forward`` its lines up to ``hpreact``)
    and the losses on the training and validation sets."""
    return (
        "if not lossi:\n"
        '    raise NotWritten("train the network first: the training cell stopped before its first '
        'step (finish step(), then run that cell again)")\n\n\n'
        "@torch.no_grad()\n"
        "def logits_of(net, X):\n"
        f"    '''The trained network's logits for the contexts X{doc}.'''\n"
        f"    C, W1, b1, W2, b2{gain} = net\n"
        f"{forward}"
        "    return torch.tanh(hpreact) @ W2 + b2\n\n\n"
        'print(f"train {F.cross_entropy(logits_of(net, Xtr), Ytr.to(device)).item():.4f}")\n'
        'print(f"val   {F.cross_entropy(logits_of(net, Xdev), Ydev.to(device)).item():.4f}")'
    )


LN_EVALUATE_CELL = evaluate_cell(
    ": layer norm normalises each example by itself",
    ", lngain, lnbias",
    "    hpreln = C[X].view(X.shape[0], -1) @ W1 + b1\n"
    "    hpreact = lngain * (hpreln - hpreln.mean(1, keepdim=True)) * (hpreln.var(1, keepdim=True, unbiased=False) + 1e-5)**-0.5 + lnbias\n",
)
RMS_EVALUATE_CELL = evaluate_cell(
    ": RMS norm normalises each example by itself",
    ", rmsgain, rmsbias",
    "    hprerms = C[X].view(X.shape[0], -1) @ W1 + b1\n"
    "    hpreact = rmsgain * hprerms * ((hprerms**2).mean(1, keepdim=True) + 1e-5)**-0.5 + rmsbias\n",
)
NONE_EVALUATE_CELL = evaluate_cell("", "", "    hpreact = C[X].view(X.shape[0], -1) @ W1 + b1\n")


# --- layer normalisation ----------------------------------------------------------------------
def renamed_metadata(workbook: dict, v: Makemore) -> dict:
    """A cell's ``workbook`` metadata (the answers a probe reads in a function) with the names of
    ``v``'s normalisation, those it takes away left out."""
    norm = v.norm
    gone = [f"d{n}" for n, new in NAMES.get(norm, {}).items() if new is None]
    data = json.loads(renamed(json.dumps(workbook), norm))
    if gone and "checks" in data:
        data["checks"] = [c for c in data["checks"] if c not in gone]
    if gone and "probe" in data:
        data["probe"] = re.sub(rf", '(?:{'|'.join(gone)})'", "", data["probe"])
    return data


LN_FORWARD = [
    (
        line("hprebn = embcat @ W1 + b1", "(32, 64): pre-activation, before batch norm"),
        line("hpreln = embcat @ W1 + b1", "(32, 64): pre-activation, before layer norm"),
    ),
    ("# batch normalisation\n", "# layer normalisation: each example over its own features\n"),
    (
        line("bnmeani = 1/n * hprebn.sum(0, keepdim=True)", "(1, 64): mean over the batch"),
        line(
            "lnmeani = 1/n_hidden * hpreln.sum(1, keepdim=True)", "(32, 1): mean over the features"
        ),
    ),
    (
        line(
            "bnvar = 1/(n-1) * bndiff2.sum(0, keepdim=True)",
            "(1, 64): variance, Bessel's correction",
        ),
        line(
            "lnvar = 1/n_hidden * lndiff2.sum(1, keepdim=True)",
            "(32, 1): variance, divided by n_hidden",
        ),
    ),
    (
        line("bnvar_inv = (bnvar + 1e-5)**-0.5", "(1, 64)"),
        line("lnvar_inv = (lnvar + 1e-5)**-0.5", "(32, 1)"),
    ),
]

LN_GAIN = """\
### The layer-norm gain and bias: `hpreact = lngain * lnraw + lnbias`

`lngain` and `lnbias` are `(1, 64)`, one number per feature, broadcast over the 32 rows: sum over axis 0 and keep the
dimension. (Layer norm's statistics run the other way, one per example; its gain and bias are per feature, as batch
norm's.) As in every product, the local derivative of `lngain * lnraw` with respect to one factor is the other factor.
`lnraw` is `(32, 64)` and was not broadcast, so its gradient needs no sum."""

LN_VAR_INV = """\
### Into layer normalisation: `lnraw = lndiff * lnvar_inv`

`lnvar_inv (32, 1)` holds one number per example, broadcast over the features of its row, so its gradient is a sum over
axis 1; each feature's contribution is, as in every product, the other factor times the gradient from above. (`lndiff`
is used here too, but also in `lndiff2`; its gradient comes once both contributions are known.)"""

LN_DIFF2 = """\
### `lndiff2`: a sum over the features, scaled

`lnvar = 1/n_hidden * lndiff2.sum(1, keepdim=True)`. The sum over a row's features becomes a broadcast of `dlnvar`
over those features, and the factor in front scales it, exactly as it scaled the sum. Layer norm's variance divides by
the number of features itself, without Bessel's correction; the backward pass must use exactly what the forward used."""

LN_MEAN = """\
### `lnmeani` and `hpreln`

`lndiff = hpreln - lnmeani`: `lnmeani (32, 1)` is broadcast over the features with a minus sign (sum over axis 1,
negate), and `hpreln` passes straight through. But `hpreln` is also used to compute the mean,
`lnmeani = 1/n_hidden * hpreln.sum(1, keepdim=True)`: that second path is a sum forward, so a broadcast of `dlnmeani`
over the features backward, scaled by the mean's factor as the gradient of `lndiff2` was by the variance's."""

LN_MEAN_CELL = """\
# dlnmeani: dL/dlnmeani, shape (32, 1)
# dlnmeani full: minus dlndiff, summed over the features; shape (32, 1)
# hint dlnmeani: `lnmeani` (32, 1) is used once, in `lndiff = hpreln - lnmeani`, and broadcast over the features of its row there. Broadcast forward, sum backward, and mind the sign.
# hint dlnmeani: d(a - b) / db = -1: each feature passes its `dlndiff` on with the sign flipped, and `lnmeani` collects a whole row, keeping (32, 1).
# hint dlnmeani: dlnmeani = (____).sum(____, keepdim=True)
# dhpreln: dL/dhpreln, shape (32, 64)
# dhpreln full: the path through lndiff plus the path through lnmeani; shape (32, 64)
# hint dhpreln: `hpreln` is used twice: in `lndiff = hpreln - lnmeani` and in the mean, `lnmeani = 1/n_hidden * hpreln.sum(1, keepdim=True)`. Add both contributions. The second is a sum forward, so a broadcast backward.
# hint dhpreln: Through the subtraction the slope is 1: `dlndiff` passes straight through. Through the mean, each entry adds into its row's sum with slope 1 and the sum is then scaled by the mean's factor, so every feature receives `dlnmeani` times that factor.
# hint dhpreln: dhpreln = ____.clone()
# hint dhpreln+: dhpreln += ____ * torch.ones_like(hpreln) * dlnmeani
### BEGIN SOLUTION
dlnmeani = (-dlndiff).sum(1, keepdim=True)
dhpreln = dlndiff.clone()
dhpreln += 1.0 / n_hidden * torch.ones_like(hpreln) * dlnmeani
### END SOLUTION
cmp('lnmeani', dlnmeani, lnmeani)
cmp('hpreln', dhpreln, hpreln)"""

LN_EXERCISE_3 = """\
# Exercise 3: layer norm's backward pass in one expression

The same for layer normalisation. Write `x̂` for `lnraw`, `γ` for `lngain`, `σ⁻¹` for `lnvar_inv` (one per example),
`dy` for `dhpreact` and `H` for the number of features, `n_hidden`. The gain is per feature and the statistics are per
example, so first take the gain in: `g = γ dy` is the gradient of `lnraw`. Then, example by example (the sums run over
an example's features):

`dhpreln = σ⁻¹ / H * (H g - Σ g - x̂ Σ(g x̂))`

First, the forward pass in one go (layer norm's variance is the plain `1/H` one, `unbiased=False`):"""

LN_FUSED_CELL = """\
# dhpreln: dL/dhpreln, shape (32, 64)
# dhpreln full: the expression above, in one line from lngain, lnvar_inv, lnraw and dhpreact; shape (32, 64)
# hint dhpreln: Layer norm from `hpreln` to `hpreact` is one function. Every entry of a row reaches every output of that row through the mean and the variance: that is where the two sums over the features come from. The expression above is the result; translate it into the notebook's names.
# hint dhpreln: With x̂ = `lnraw`, γ = `lngain`, σ⁻¹ = `lnvar_inv`, H = `n_hidden` and g = `lngain * dhpreact`. A Σ over the features of a (32, 64) tensor `t` is `t.sum(1, keepdim=True)`, a (32, 1) column that broadcasts back over the features; Σ(g x̂) multiplies entry by entry before it sums.
# hint dhpreln: dhpreln = lnvar_inv / n_hidden * (n_hidden * ____ - (____).sum(1, keepdim=True) - ____ * (____).sum(1, keepdim=True))
### BEGIN SOLUTION
dhpreln = lnvar_inv / n_hidden * (n_hidden * lngain * dhpreact - (lngain * dhpreact).sum(1, keepdim=True) - lnraw * (lngain * dhpreact * lnraw).sum(1, keepdim=True))
### END SOLUTION
cmp('hpreln (fused)', dhpreln, hpreln)"""

LN_EVALUATE = """\
### Evaluate

Layer norm normalises each example over its own features, so it needs no statistics of the training set: the network
works on one example at a time as it is."""

_STEP_FUSED_HINTS = (
    "    # hint dhprebn: Batch norm from `hprebn` to `hpreact` is computed here in one go (`mean`, `var` with Bessel's correction): use your fused gradient from exercise 3, with this function's names.\n"
    "    # hint dhprebn: A Σ over the batch of a (32, 200) tensor `t` is `t.sum(0)`, a row that broadcasts back over the rows; Σ(dy x̂) multiplies entry by entry before it sums. n/(n-1) is Bessel's correction.\n"
    "    # hint dhprebn: dhprebn = bngain * bnvar_inv / n * (n * ____ - ____.sum(0) - n / (n - 1) * ____ * (____).sum(0))\n"
)


def layer_norm() -> Iterator[Edit]:
    """The edits that put layer norm (over each example's features) where the lecture has batch
    norm; its names are the lecture's with "ln" for "bn" (:func:`renamed`, after the edits)."""
    yield Sub(
        "a linear layer, batch normalisation, `tanh`", "a linear layer, layer normalisation, `tanh`"
    )
    yield Sub(
        "and so is batch\nnormalisation (mean, deviations, variance with Bessel's correction `1/(n-1)`, inverse standard deviation).",
        "and so is layer\nnormalisation, each example over its own features (mean, deviations, the plain variance `1/n_hidden`, inverse\nstandard deviation).",
    )
    for old, new in LN_FORWARD:
        yield Sub(old, new)
    yield Sub(
        "the biases and the batch-norm gain and bias", "the biases and the layer-norm gain and bias"
    )
    yield Sub("### The batch-norm gain and bias", "### The layer-norm gain and bias")
    yield Swap("### The layer-norm gain and bias", LN_GAIN)
    yield Swap("### Into batch normalisation: `bnraw = bndiff * bnvar_inv`", LN_VAR_INV)
    yield Swap("# dbnvar_inv: dL/dbnvar_inv", LN_CELLS["var_inv"])
    yield Swap("# dbnvar: dL/dbnvar,", LN_CELLS["var"])
    yield Swap("### `bndiff2`: a sum, with Bessel's correction", LN_DIFF2)
    yield Swap("# dbndiff2: dL/dbndiff2", LN_CELLS["square"])
    yield Swap("# dbndiff: dL/dbndiff,", LN_CELLS["input"])
    yield Swap("### `bnmeani` and `hprebn`", LN_MEAN)
    yield Swap("# dbnmeani: dL/dbnmeani", LN_MEAN_CELL)
    yield Swap("# Exercise 3: batch norm's backward pass in one expression", LN_EXERCISE_3)
    yield Sub(
        "hpreact_fast = bngain * (hprebn - hprebn.mean(0, keepdim=True)) / torch.sqrt(hprebn.var(0, keepdim=True, unbiased=True) + 1e-5) + bnbias",
        "hpreact_fast = lngain * (hpreln - hpreln.mean(1, keepdim=True)) / torch.sqrt(hpreln.var(1, keepdim=True, unbiased=False) + 1e-5) + lnbias",
    )
    yield Swap("# dhprebn full: the expression above", LN_FUSED_CELL)
    # exercise 4: the training step, and evaluation without calibration
    yield Sub("fused cross-entropy and batch norm, so", "fused cross-entropy and layer norm, so")
    yield Sub(
        "    bnmeani = hprebn.mean(0, keepdim=True)\n    bnvar = hprebn.var(0, keepdim=True, unbiased=True)\n",
        "    lnmeani = hpreln.mean(1, keepdim=True)\n    lnvar = hpreln.var(1, keepdim=True, unbiased=False)\n",
    )
    yield Sub(
        "    # dhprebn full: the fused batch-norm gradient (exercise 3)\n",
        "    # dhpreln full: the fused layer-norm gradient (exercise 3)\n",
    )
    yield Sub(
        _STEP_FUSED_HINTS,
        "    # hint dhpreln: Layer norm from `hpreln` to `hpreact` is computed here in one go (`mean`, `var` over each row's features): use your fused gradient from exercise 3, with this function's names.\n"
        "    # hint dhpreln: A Σ over the features of a (32, 200) tensor `t` is `t.sum(1, keepdim=True)`, a column that broadcasts back over the features; H, the number of features, is `hpreln.shape[1]` here.\n"
        "    # hint dhpreln: dhpreln = lnvar_inv / hpreln.shape[1] * (hpreln.shape[1] * ____ - (____).sum(1, keepdim=True) - ____ * (____).sum(1, keepdim=True))\n",
    )
    yield Sub(
        "    dhprebn = bngain * bnvar_inv / n * (n * dhpreact - dhpreact.sum(0) - n / (n - 1) * bnraw * (dhpreact * bnraw).sum(0))\n",
        "    dhpreln = lnvar_inv / hpreln.shape[1] * (hpreln.shape[1] * lngain * dhpreact - (lngain * dhpreact).sum(1, keepdim=True) - lnraw * (lngain * dhpreact * lnraw).sum(1, keepdim=True))\n",
    )
    yield Swap("### Calibrate batch norm, then evaluate", LN_EVALUATE)
    yield Swap("def calibrate(net):", LN_EVALUATE_CELL)


# --- RMS normalisation ------------------------------------------------------------------------
RMS_FORWARD = [
    (
        line("hprebn = embcat @ W1 + b1", "(32, 64): pre-activation, before batch norm"),
        line("hprerms = embcat @ W1 + b1", "(32, 64): pre-activation, before RMS norm"),
    ),
    (
        "# batch normalisation\n",
        "# RMS normalisation: each example over its own features, no mean taken away\n",
    ),
    (
        line("bnmeani = 1/n * hprebn.sum(0, keepdim=True)", "(1, 64): mean over the batch")
        + "\n"
        + line("bndiff = hprebn - bnmeani", "(32, 64)")
        + "\n"
        + line("bndiff2 = bndiff**2", "(32, 64)")
        + "\n",
        line("rmsq = hprerms**2", "(32, 64)") + "\n",
    ),
    (
        line(
            "bnvar = 1/(n-1) * bndiff2.sum(0, keepdim=True)",
            "(1, 64): variance, Bessel's correction",
        ),
        line(
            "rmsvar = 1/n_hidden * rmsq.sum(1, keepdim=True)",
            "(32, 1): mean square over the features",
        ),
    ),
    (
        line("bnvar_inv = (bnvar + 1e-5)**-0.5", "(1, 64)"),
        line("rmsvar_inv = (rmsvar + 1e-5)**-0.5", "(32, 1)"),
    ),
    (
        line("bnraw = bndiff * bnvar_inv", "(32, 64): normalised"),
        line("rmsraw = hprerms * rmsvar_inv", "(32, 64): normalised"),
    ),
    (
        "          bnraw, bnvar_inv, bnvar, bndiff2, bndiff, hprebn, bnmeani, embcat, emb]",
        "          rmsraw, rmsvar_inv, rmsvar, rmsq, hprerms, embcat, emb]",
    ),
]

RMS_VAR_INV = """\
### Into RMS normalisation: `rmsraw = hprerms * rmsvar_inv`

`rmsvar_inv (32, 1)` holds one number per example, broadcast over the features of its row, so its gradient is a sum over
axis 1; each feature's contribution is, as in every product, the other factor times the gradient from above.
(`hprerms` is used here too, but also in `rmsq`; its gradient comes once both contributions are known.)"""

RMS_Q = """\
### `rmsq`: a sum over the features, scaled

`rmsvar = 1/n_hidden * rmsq.sum(1, keepdim=True)`, the mean of the squares over a row's features. The sum becomes a
broadcast of `drmsvar` over those features, and the factor in front scales it, exactly as it scaled the sum."""

RMS_INPUT = """\
### `hprerms`: both contributions

From `rmsraw = hprerms * rmsvar_inv` and from `rmsq = hprerms**2` (the derivative of `x**2` is `2x`). Add the two, as
for `counts`. With no mean taken away, that is all: `hprerms` reaches the loss by no third path."""

RMS_EXERCISE_3 = """\
# Exercise 3: RMS norm's backward pass in one expression

The same for RMS normalisation. Write `x̂` for `rmsraw`, `γ` for `rmsgain`, `σ⁻¹` for `rmsvar_inv` (one per example),
`dy` for `dhpreact` and `H` for the number of features, `n_hidden`. With `g = γ dy`, the gradient of `rmsraw`, and the
sum running over an example's features:

`dhprerms = σ⁻¹ / H * (H g - x̂ Σ(g x̂))`

First, the forward pass in one go:"""

RMS_FUSED_CELL = """\
# dhprerms: dL/dhprerms, shape (32, 64)
# dhprerms full: the expression above, in one line from rmsgain, rmsvar_inv, rmsraw and dhpreact; shape (32, 64)
# hint dhprerms: RMS norm from `hprerms` to `hpreact` is one function. Every entry of a row reaches every output of that row through the mean square: that is where the sum over the features comes from. The expression above is the result; translate it into the notebook's names.
# hint dhprerms: With x̂ = `rmsraw`, γ = `rmsgain`, σ⁻¹ = `rmsvar_inv`, H = `n_hidden` and g = `rmsgain * dhpreact`. A Σ over the features of a (32, 64) tensor `t` is `t.sum(1, keepdim=True)`, a (32, 1) column that broadcasts back over the features.
# hint dhprerms: dhprerms = rmsvar_inv / n_hidden * (n_hidden * ____ - ____ * (____).sum(1, keepdim=True))
### BEGIN SOLUTION
dhprerms = rmsvar_inv / n_hidden * (n_hidden * rmsgain * dhpreact - rmsraw * (rmsgain * dhpreact * rmsraw).sum(1, keepdim=True))
### END SOLUTION
cmp('hprerms (fused)', dhprerms, hprerms)"""


def rms_norm() -> Iterator[Edit]:
    """The edits that put RMS norm (each example over its features, no mean taken away) where the
    lecture has batch norm; two cells fewer, and the names of :data:`NAMES` (after the edits)."""
    yield Sub(
        "a linear layer, batch normalisation, `tanh`", "a linear layer, RMS normalisation, `tanh`"
    )
    yield Sub(
        "the biases and the batch-norm gain and bias", "the biases and the RMS-norm gain and bias"
    )
    yield Sub(
        "and so is batch\nnormalisation (mean, deviations, variance with Bessel's correction `1/(n-1)`, inverse standard deviation).",
        "and so is RMS\nnormalisation, each example over its own features (the mean square, with no mean taken away, and its inverse\nsquare root).",
    )
    for old, new in RMS_FORWARD:
        yield Sub(old, new)
    yield Sub("### The batch-norm gain and bias", "### The RMS-norm gain and bias")
    yield Sub(
        "(1, 64)`, broadcast over the 32 rows: sum over axis 0",
        "(1, 64)`, one number per feature, broadcast over the 32 rows: sum over axis 0",
    )
    yield Swap("### Into batch normalisation: `bnraw = bndiff * bnvar_inv`", RMS_VAR_INV)
    yield Swap("# dbnvar_inv: dL/dbnvar_inv", RMS_CELLS["var_inv"])
    yield Swap("# dbnvar: dL/dbnvar,", RMS_CELLS["var"])
    yield Swap("### `bndiff2`: a sum, with Bessel's correction", RMS_Q)
    yield Swap("# dbndiff2: dL/dbndiff2", RMS_CELLS["square"])
    yield Swap("### `bndiff`: both contributions", RMS_INPUT)
    yield Swap("# dbndiff: dL/dbndiff,", RMS_CELLS["input"])
    yield Drop("### `bnmeani` and `hprebn`")
    yield Drop("# dbnmeani: dL/dbnmeani")
    yield Swap("# Exercise 3: batch norm's backward pass in one expression", RMS_EXERCISE_3)
    yield Sub(
        "hpreact_fast = bngain * (hprebn - hprebn.mean(0, keepdim=True)) / torch.sqrt(hprebn.var(0, keepdim=True, unbiased=True) + 1e-5) + bnbias",
        "hpreact_fast = rmsgain * hprerms * ((hprerms**2).mean(1, keepdim=True) + 1e-5)**-0.5 + rmsbias",
    )
    yield Swap("# dhprebn full: the expression above", RMS_FUSED_CELL)
    # exercise 4: the training step, and evaluation without calibration
    yield Sub("fused cross-entropy and batch norm, so", "fused cross-entropy and RMS norm, so")
    yield Sub(
        "    bnmeani = hprebn.mean(0, keepdim=True)\n    bnvar = hprebn.var(0, keepdim=True, unbiased=True)\n"
        "    bnvar_inv = (bnvar + 1e-5)**-0.5\n    bnraw = (hprebn - bnmeani) * bnvar_inv\n",
        "    rmsvar = (hprerms**2).mean(1, keepdim=True)\n    rmsvar_inv = (rmsvar + 1e-5)**-0.5\n"
        "    rmsraw = hprerms * rmsvar_inv\n",
    )
    yield Sub(
        "    # dhprebn full: the fused batch-norm gradient (exercise 3)\n",
        "    # dhprerms full: the fused RMS-norm gradient (exercise 3)\n",
    )
    yield Sub(
        _STEP_FUSED_HINTS,
        "    # hint dhprerms: RMS norm from `hprerms` to `hpreact` is computed here in one go (the mean square over each row's features): use your fused gradient from exercise 3, with this function's names.\n"
        "    # hint dhprerms: A Σ over the features of a (32, 200) tensor `t` is `t.sum(1, keepdim=True)`, a column that broadcasts back over the features; H, the number of features, is `hprerms.shape[1]` here.\n"
        "    # hint dhprerms: dhprerms = rmsvar_inv / hprerms.shape[1] * (hprerms.shape[1] * ____ - ____ * (____).sum(1, keepdim=True))\n",
    )
    yield Sub(
        "    dhprebn = bngain * bnvar_inv / n * (n * dhpreact - dhpreact.sum(0) - n / (n - 1) * bnraw * (dhpreact * bnraw).sum(0))\n",
        "    dhprerms = rmsvar_inv / hprerms.shape[1] * (hprerms.shape[1] * rmsgain * dhpreact - rmsraw * (rmsgain * dhpreact * rmsraw).sum(1, keepdim=True))\n",
    )
    yield Swap(
        "### Calibrate batch norm, then evaluate", LN_EVALUATE.replace("Layer norm", "RMS norm")
    )
    yield Swap("def calibrate(net):", RMS_EVALUATE_CELL)


# --- no normalisation -------------------------------------------------------------------------
NONE_EVALUATE = """\
### Evaluate

With no normalisation the network works on one example at a time as it is: no statistics of the training set to fix."""

_GAIN_LINES = (
    "{i}bngain = torch.randn((1, n_hidden), generator={g}) * 0.1 + 1.0\n"
    "{i}bnbias = torch.randn((1, n_hidden), generator={g}) * 0.1\n"
)
_STEP_BN_FORWARD = (
    "    hprebn = embcat @ W1 + b1\n"
    "    bnmeani = hprebn.mean(0, keepdim=True)\n    bnvar = hprebn.var(0, keepdim=True, unbiased=True)\n"
    "    bnvar_inv = (bnvar + 1e-5)**-0.5\n    bnraw = (hprebn - bnmeani) * bnvar_inv\n"
    "    hpreact = bngain * bnraw + bnbias\n"
)


def _step_comments(name: str, step: str) -> str:
    """The comment block of ``name`` in the training step (its TODO, full text and rungs)."""
    lines = [
        ln
        for ln in step.splitlines(keepends=True)
        if re.match(rf"    # (hint )?{name}(\+| full)?:", ln)
    ]
    return "".join(lines)


def no_norm(lecture: list[str]) -> Iterator[Edit]:
    """The edits that take batch norm out (``lecture``: the cells' text, for the training step's
    comment blocks): its forward lines, cells, exercise 3, gain and bias; ``hpreact`` is then the
    first layer's output, and exercise 4 becomes exercise 3."""
    # first the evaluation, whose cell unpacks the network as the step does
    yield Swap("### Calibrate batch norm, then evaluate", NONE_EVALUATE)
    yield Swap("def calibrate(net):", NONE_EVALUATE_CELL)
    yield Sub("a linear layer, batch normalisation, `tanh`", "a linear layer, `tanh`")
    yield Sub(
        "the biases and the batch-norm gain and bias are small\nrandom numbers instead of zeros and ones",
        "the biases are small random numbers instead of\nzeros",
    )
    yield Sub(
        "), and so is batch\nnormalisation (mean, deviations, variance with Bessel's correction `1/(n-1)`, inverse standard deviation).",
        ").",
    )
    yield Sub(_GAIN_LINES.format(i="", g="g"), "")
    yield Sub(
        "parameters = [C, W1, b1, W2, b2, bngain, bnbias]", "parameters = [C, W1, b1, W2, b2]"
    )
    forward = [
        line("hprebn = embcat @ W1 + b1", "(32, 64): pre-activation, before batch norm")
        + "\n# batch normalisation\n",
        line("bnmeani = 1/n * hprebn.sum(0, keepdim=True)", "(1, 64): mean over the batch") + "\n",
        line("bndiff = hprebn - bnmeani", "(32, 64)") + "\n",
        line("bndiff2 = bndiff**2", "(32, 64)") + "\n",
        line(
            "bnvar = 1/(n-1) * bndiff2.sum(0, keepdim=True)",
            "(1, 64): variance, Bessel's correction",
        )
        + "\n",
        line("bnvar_inv = (bnvar + 1e-5)**-0.5", "(1, 64)") + "\n",
        line("bnraw = bndiff * bnvar_inv", "(32, 64): normalised") + "\n",
    ]
    yield Sub(
        "".join(forward) + line("hpreact = bngain * bnraw + bnbias", "(32, 64)"),
        line("hpreact = embcat @ W1 + b1", "(32, 64): pre-activation"),
    )
    yield Sub(
        "hpreact,\n          bnraw, bnvar_inv, bnvar, bndiff2, bndiff, hprebn, bnmeani, embcat, emb]",
        "hpreact,\n          embcat, emb]",
    )
    # exercise 4, now 3: no gain, no bias, no normalisation in the step
    yield Sub("# Exercise 4: train the network", "# Exercise 3: train the network")
    yield Sub(
        "(the forward pass uses the\nfused cross-entropy and batch norm, so the backward pass can use your fused gradients from exercises 2 and 3).",
        "(the forward pass uses the\nfused cross-entropy, so the backward pass can use your fused gradient from exercise 2).",
    )
    yield Sub("[C, W1, b1, W2, b2, bngain, bnbias].'''", "[C, W1, b1, W2, b2].'''")
    yield Sub(_GAIN_LINES.format(i="    ", g="generator"), "")
    yield Sub("    net = [C, W1, b1, W2, b2, bngain, bnbias]\n", "    net = [C, W1, b1, W2, b2]\n")
    step = next(t for t in lecture if t.startswith("def step("))
    yield Sub("    C, W1, b1, W2, b2, bngain, bnbias = net\n", "    C, W1, b1, W2, b2 = net\n")
    yield Sub(_STEP_BN_FORWARD, "    hpreact = embcat @ W1 + b1\n")
    for name in ("dbngain", "dbnbias", "dhprebn"):
        yield Sub(_step_comments(name, step), "")
    yield Sub(
        "    dbngain = (bnraw * dhpreact).sum(0, keepdim=True)\n    dbnbias = dhpreact.sum(0, keepdim=True)\n"
        "    dhprebn = bngain * bnvar_inv / n * (n * dhpreact - dhpreact.sum(0) - n / (n - 1) * bnraw * (dhpreact * bnraw).sum(0))\n",
        "",
    )
    yield Sub(
        "    grads = [dC, dW1, db1, dW2, db2, dbngain, dbnbias]\n",
        "    grads = [dC, dW1, db1, dW2, db2]\n",
    )
    yield Sub(", dbngain=dbngain, dbnbias=dbnbias)", ")")
    yield Sub('["C", "W1", "b1", "W2", "b2", "bngain", "bnbias"]', '["C", "W1", "b1", "W2", "b2"]')
    # then the cells (the step's comments for dbngain gone, exercise 1's are the only ones)
    for anchor in (
        "### The batch-norm gain and bias",
        "# dbngain: dL/dbngain",
        "### Into batch normalisation",
        "# dbnvar_inv: dL/dbnvar_inv",
        "### `bnvar`\n",
        "# dbnvar: dL/dbnvar,",
        "### `bndiff2`: a sum",
        "# dbndiff2: dL/dbndiff2",
        "### `bndiff`: both contributions",
        "# dbndiff: dL/dbndiff,",
        "### `bnmeani` and `hprebn`",
        "# dbnmeani: dL/dbnmeani",
        "# Exercise 3: batch norm's backward pass",
        "hpreact_fast = bngain",
        "# dhprebn full: the expression above",
    ):
        yield Drop(anchor)


def sources(v: Makemore, lecture: list[str]) -> list[str | None]:
    """The text of each cell of ``v``'s solution, from the lecture's (``lecture``; None: a cell
    ``v`` takes out)."""
    edited = apply(lecture, edits(v, lecture))
    if AUTOGRAD in edited:
        step = next(t for t in edited if t is not None and t.startswith("def step("))
        edited[edited.index(AUTOGRAD)] = autograd_step(step)
    edited = reordered(edited, GROUPS, v.order)
    return resized_cells([renamed(text, v.norm) for text in edited], v)
