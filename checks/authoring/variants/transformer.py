"""Notebook 05's variants as edits of the lecture's notebook: for each choice of a
:class:`~checks.variants.transformer.Transformer` that is not the lecture's, the forward lines, the
prose, the answer cells (solution, TODO text, hint rungs), exercise 2's functions and exercise 3's
network that change with it.

The default variant makes no edit, so it is the notebook in ``solutions/`` unchanged. The width
and the heads change one line and the prose that states them (the notebook writes its shapes with
letters); the order permutes the independent answers of a cell. Each edit is bound to text the
lecture's notebook holds once (:mod:`.edits`); the names a choice renames (RMS norm's steps, the
activation's function) are renamed after the edits (:func:`checks.variants.transformer.renamed`).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass

from checks.authoring.variants import edits
from checks.authoring.variants.edits import Drop, Edit, Sub, Swap, announced, apply, line, reordered
from checks.variants.transformer import FUNCTIONS, GROUPS, STEM, Transformer, renamed


# --- the activation -------------------------------------------------------------------------
@dataclass(frozen=True)
class Activation:
    """What a notebook says and does with one non-linearity of the MLP. ``{x}`` is the input's
    name, ``{d}`` the gradient from above, ``{dx}`` the answer's."""

    title: str  # how the prose names it
    noun: str  # the same after "the" ("the exact GELU")
    a_noun: str  # the same with "a" or "an" ("an exact GELU")
    call: str  # its forward call
    rule: str  # the prose under its heading: the function and its derivative
    full: str  # the TODO text's "full" line
    local: str  # the second rung: the local derivative
    skeleton: str  # the last rung
    solution: str  # the answer's lines


ACTIVATIONS = {
    "gelu": Activation(
        title="the exact GELU",
        noun="exact GELU",
        a_noun="an exact GELU",
        call="F.gelu({x})",
        rule=(
            "The exact GELU, `gelu(x) = x Φ(x)`, where `Φ(x) = (1 + erf(x / √2)) / 2` is the "
            "standard normal distribution's\ncumulative function (GPT-2 used a `tanh` formula "
            "that is close to it; `F.gelu` without `approximate` is this one).\nThe product rule "
            "gives its derivative, `gelu'(x) = Φ(x) + x φ(x)`, with the normal density\n"
            "`φ(x) = exp(-x²/2) / √(2π)`, the derivative of `Φ`.\n\nUnlike `tanh`, the output "
            "alone does not give the slope: it needs `h_pre`. `torch.erf` is there for it."
        ),
        full="the slope of the exact GELU, Φ(x) + x φ(x), at {x} times {d}",
        local=(
            "gelu(x) = x Φ(x): the product rule gives Φ(x) + x φ(x), with Φ(x) = (1 + erf(x / "
            "sqrt(2))) / 2 and φ(x) = exp(-x**2 / 2) / sqrt(2 pi)."
        ),
        skeleton=(
            "{dx} = (0.5 * (1 + torch.erf(____ / math.sqrt(2))) + ____ * torch.exp(-0.5 * "
            "____**2) / math.sqrt(2 * math.pi)) * {d}"
        ),
        solution=(
            "{dx} = (0.5 * (1 + torch.erf({x} / math.sqrt(2))) + {x} * torch.exp(-0.5 * {x}**2) "
            "/ math.sqrt(2 * math.pi)) * {d}\n"
        ),
    ),
    "relu": Activation(
        title="ReLU",
        noun="ReLU",
        a_noun="a ReLU",
        call="torch.relu({x})",
        rule=(
            "`relu(x) = max(x, 0)` passes a positive input through unchanged and stops a negative "
            "one, so its derivative is 1\nwhere `x > 0` and 0 elsewhere (at exactly 0 PyTorch "
            "takes 0). A comparison such as `h_pre > 0` gives a tensor of\nbooleans; multiplied "
            "by a float tensor it counts as ones and zeros."
        ),
        full="the slope of ReLU (1 where {x} > 0, else 0) times {d}",
        local="d relu(x) / dx = 1 where x > 0 and 0 elsewhere: a mask of the positive entries.",
        skeleton="{dx} = (____ > 0) * {d}",
        solution="{dx} = ({x} > 0) * {d}\n",
    ),
    "silu": Activation(
        title="SiLU",
        noun="SiLU",
        a_noun="a SiLU",
        call="F.silu({x})",
        rule=(
            "The SiLU (also called swish), the non-linearity inside LLaMA's gated MLP: "
            "`silu(x) = x σ(x)`, with the sigmoid "
            "`σ(x) = 1 / (1 + exp(-x))`.\nThe product rule and `σ'(x) = σ(x) (1 - σ(x))` give "
            "its derivative:\n\n`silu'(x) = σ(x) + x σ(x) (1 - σ(x)) = σ(x) (1 + x (1 - σ(x)))`"
            "\n\nUnlike `tanh`, the output alone does not give the slope: it needs `h_pre`."
        ),
        full="the slope of SiLU, σ(x) (1 + x (1 - σ(x))) at {x}, times {d}",
        local=(
            "silu(x) = x σ(x): the product rule gives σ(x) + x σ'(x), and σ'(x) = σ(x) (1 - σ(x))."
        ),
        skeleton="s = torch.sigmoid({x})\n{dx} = s * (1 + ____) * {d}",
        solution="s = torch.sigmoid({x})\n{dx} = s * (1 + {x} * (1 - s)) * {d}\n",
    ),
}


def _rungs(
    act: Activation, name: str, x: str, d: str, indent: str = "", first: str = "", shape: str = ""
) -> str:
    """The TODO text and the hint rungs of ``name`` (the answer's, ``x``'s gradient from ``d``)
    in ``act``'s cell: ``first`` a rung before the others, ``shape`` the answer's, said."""
    skeleton = act.skeleton.format(x=x, d=d, dx=name).split("\n")
    return (
        f"{indent}# {name} full: {act.full.format(x=x, d=d)}{shape}\n"
        + (f"{indent}# hint {name}: {first}\n" if first else "")
        + f"{indent}# hint {name}: `{x}` is used once, in `{act.call.format(x=x)}`, element by "
        f"element: local slope times `{d}`.\n"
        f"{indent}# hint {name}: {act.local}\n"
        + "".join(
            f"{indent}# hint {name}{'+' if i else ''}: {part}\n" for i, part in enumerate(skeleton)
        )
    )


def activation(name: str) -> Iterator[Edit]:
    """The edits that put ``name`` where the lecture has GELU in its ``tanh`` form."""
    act, fn = ACTIVATIONS[name], FUNCTIONS[name]
    yield Sub("an MLP with GELU,", f"an MLP with {act.title},")
    yield Sub(
        line('h = F.gelu(h_pre, approximate="tanh")', "(B, T, 4C)"),
        line(f"h = {act.call.format(x='h_pre')}", "(B, T, 4C)"),
    )
    yield Swap("### GELU\n", f"### {act.title[0].upper()}{act.title[1:]}\n\n{act.rule}")
    yield Swap(
        "# dh_pre: dL/dh_pre, shape (B, T, 4C)",
        "# dh_pre: dL/dh_pre, shape (B, T, 4C)\n"
        + _rungs(act, "dh_pre", "h_pre", "dh", shape="; shape (B, T, 4C)")
        + "### BEGIN SOLUTION\n"
        + act.solution.format(x="h_pre", d="dh", dx="dh_pre")
        + "### END SOLUTION\ncmp('h_pre', dh_pre, h_pre)",
    )
    yield Sub(", GELU and\nthe attention", f", {act.title} and\nthe attention")
    yield Swap(
        "### `gelu_backward`",
        f"### `{fn}_backward`\n\nFrom `dout` and the input `x` of the {act.noun} to `dx`.",
    )
    yield Swap("def gelu_backward(dout, x):", _function_cell(act, fn))
    article, noun = act.a_noun.split(" ", 1)  # the notebook's line breaks after the article
    yield Sub("a\nGELU on a vector", f"{article}\n{noun} on a vector")
    call = act.call.format(x="x")
    yield Sub(
        'against_autograd("gelu", lambda x: F.gelu(x, approximate="tanh"),',
        f'against_autograd("{fn}", lambda x: {call},',
    )
    yield Sub('check_numeric("gelu numeric",', f'check_numeric("{fn} numeric",')
    yield Sub('lambda x: (F.gelu(x, approximate="tanh") * dout_s)', f"lambda x: ({call} * dout_s)")
    yield Sub(
        '        h = F.gelu(h_pre, approximate="tanh")\n',
        f"        h = {act.call.format(x='h_pre')}\n",
    )


def _function_cell(act: Activation, fn: str) -> str:
    """Exercise 2's cell of ``act``'s backward function, ``fn``_backward."""
    return (
        f"def {fn}_backward(dout, x):\n"
        f'    """out = {act.call.format(x="x")}: from dout, dx."""\n'
        f"    # dx: dL/dx of {act.title}, shape like x\n"
        + _rungs(
            act, "dx", "x", "dout", "    ", "exercise 1's `dh_pre`, with this function's names."
        )
        + "    ### BEGIN SOLUTION\n"
        + "".join(
            f"    {ln}\n" for ln in act.solution.format(x="x", d="dout", dx="dx").split("\n")[:-1]
        )
        + "    ### END SOLUTION\n    return dx\n\n\n"
        + f"dx_{fn} = {fn}_backward(dh, h_pre)\ncmp('h_pre (fused)', dx_{fn}, h_pre)"
    )


# --- RMS norm ---------------------------------------------------------------------------------
LN_FUNCTION = '''\
def layernorm(x, w, b, eps=1e-5):
    """Layer norm over the last axis: the output, and x_hat and rstd, which its backward pass needs."""
    mean = x.mean(-1, keepdim=True)
    var = x.var(-1, keepdim=True, unbiased=False)  # 1/n: no Bessel's correction
    rstd = (var + eps)**-0.5
    x_hat = (x - mean) * rstd
    return x_hat * w + b, x_hat, rstd
'''
RMS_FUNCTION = '''\
def layernorm(x, w, b, eps=1e-5):
    """RMS norm over the last axis (no mean taken away), with a gain and a bias: the output, and x_hat and rstd, which its backward pass needs."""
    rstd = ((x**2).mean(-1, keepdim=True) + eps)**-0.5
    x_hat = x * rstd
    return x_hat * w + b, x_hat, rstd
'''

LN_STEPS = (
    line("lnf_mean = x2.mean(-1, keepdim=True)", "(B, T, 1)") + "\n",
    line("lnf_diff = x2 - lnf_mean", "(B, T, C)") + "\n",
    line("lnf_diff2 = lnf_diff**2", "(B, T, C)") + "\n",
    line("lnf_var = lnf_diff2.mean(-1, keepdim=True)", "(B, T, 1): 1/C, no Bessel's correction")
    + "\n",
    line("lnf_rstd = (lnf_var + 1e-5)**-0.5", "(B, T, 1)") + "\n",
    line("lnf_hat = lnf_diff * lnf_rstd", "(B, T, C)") + "\n",
)
RMS_FORWARD = (
    "# final RMS norm, in steps\n"
    + line("lnf_sq = x2**2", "(B, T, C)")
    + "\n"
    + line(
        "lnf_ms = lnf_sq.mean(-1, keepdim=True)", "(B, T, 1): the mean square over the C numbers"
    )
    + "\n"
    + line("lnf_rstd = (lnf_ms + 1e-5)**-0.5", "(B, T, 1)")
    + "\n"
    + line("lnf_hat = x2 * lnf_rstd", "(B, T, C)")
    + "\n"
)

RMS_FINAL = """\
### The final RMS norm: layer norm without the mean

RMS norm (LLaMA's, there without a bias; this one keeps layer norm's gain and bias) divides each position's `C` numbers
by their root mean square, `sqrt(mean(x²) + 1e-5)`, and takes no mean away first. Its sums run over the last axis (`-1`, `keepdim=True`), as layer norm's do, and the mean square
divides by `C`. The gain and the bias are shared by every position, so their gradients sum over `B` and `T`."""

RMS_STEPS_CELL = """\
# dlnf_rstd: dL/dlnf_rstd, shape (B, T, 1)
# dlnf_rstd full: x2 times dlnf_hat, summed over the C numbers of each position; shape (B, T, 1)
# hint dlnf_rstd: `lnf_rstd` (B, T, 1) is broadcast over the C numbers of a position in `lnf_hat = x2 * lnf_rstd`: the other factor, then a sum over the last axis.
# hint dlnf_rstd: d(a * b) / db = a, here `x2`; sum over axis -1 and keep it.
# hint dlnf_rstd: dlnf_rstd = (____ * dlnf_hat).sum(-1, keepdim=True)
# dlnf_ms: dL/dlnf_ms, shape (B, T, 1)
# dlnf_ms full: the power rule for (x + 1e-5)**-0.5, times dlnf_rstd; shape (B, T, 1)
# hint dlnf_ms: `lnf_ms` is used once, in `lnf_rstd = (lnf_ms + 1e-5)**-0.5`, element by element.
# hint dlnf_ms: d((x + c)**p) / dx = p * (x + c)**(p - 1), here p = -0.5.
# hint dlnf_ms: dlnf_ms = -0.5 * (lnf_ms + 1e-5)**____ * dlnf_rstd
# dlnf_sq: dL/dlnf_sq, shape (B, T, C)
# dlnf_sq full: dlnf_ms broadcast over the C numbers, times 1/C; shape (B, T, C)
# hint dlnf_sq: `lnf_sq` is used once, in `lnf_ms = lnf_sq.mean(-1, keepdim=True)`: a mean forward is a broadcast backward. Mind the factor of this mean: it is over the C numbers of a position.
# hint dlnf_sq: For a mean y = (x1 + ... + xk) / k, every xi has the same slope, 1/k: the mean hands its gradient to each of its k entries, scaled.
# hint dlnf_sq: dlnf_sq = torch.ones_like(lnf_sq) / ____ * dlnf_ms
### BEGIN SOLUTION
dlnf_rstd = (x2 * dlnf_hat).sum(-1, keepdim=True)
dlnf_ms = -0.5 * (lnf_ms + 1e-5)**-1.5 * dlnf_rstd
dlnf_sq = torch.ones_like(lnf_sq) / C * dlnf_ms
### END SOLUTION
cmp('lnf_rstd', dlnf_rstd, lnf_rstd)
cmp('lnf_ms', dlnf_ms, lnf_ms)
cmp('lnf_sq', dlnf_sq, lnf_sq, n=C)  # n: the numbers each mean square is over"""

RMS_TWICE = """\
`x2` is used twice, in `lnf_hat = x2 * lnf_rstd` and in `lnf_sq = x2**2`: add both contributions. With no mean taken
away, that is all: `x2` reaches the loss by no third path."""

RMS_INPUT_CELL = """\
# dx2: dL/dx2, shape (B, T, C)
# dx2 full: the path through lnf_hat plus the path through lnf_sq; shape (B, T, C)
# hint dx2: `x2` is used twice: in `lnf_hat = x2 * lnf_rstd` and in `lnf_sq = x2**2`. Add both contributions.
# hint dx2: Through the product the slope is the other factor, `lnf_rstd`; through the square, d(x**2) / dx = 2x.
# hint dx2: dx2 = ____ * dlnf_hat
# hint dx2+: dx2 += ____ * dlnf_sq
### BEGIN SOLUTION
dx2 = lnf_rstd * dlnf_hat
dx2 += 2 * x2 * dlnf_sq
### END SOLUTION
cmp('x2', dx2, x2)"""

RMS_FUSED = """\
### RMS norm in one expression

As for batch norm in notebook 03's exercise 3, the steps collapse. With `x̂ = lnf_hat`, `w = lnf_w`, `r⁻¹ = lnf_rstd`
(one over the root mean square, not over a standard deviation), `dx̂ = w · dy` and the sum over the `C` numbers of
each position:

`dx = r⁻¹ / C · (C dx̂ - x̂ Σ(dx̂ x̂))`

Layer norm's is `σ⁻¹ / C · (C dx̂ - Σ dx̂ - x̂ Σ(dx̂ x̂))`: its `Σ dx̂` term comes from the mean it takes away, and RMS
norm takes none. You use the formula below for the two RMS norms of the block."""


def _fused_rms(dx: str, rstd: str, x_hat: str, w: str, up: str, plus: str = "") -> str:
    """The solution lines of RMS norm's one-expression gradient, in a cell's names."""
    return (
        f"dx_hat = {w} * {up}\n"
        f"{dx} = {plus}{rstd} / C * (C * dx_hat - {x_hat} * (dx_hat * {x_hat}).sum(-1, keepdim=True))"
    )


def _layer_norm_fused(dx: str, rstd: str, x_hat: str, w: str, up: str, plus: str = "") -> str:
    """The lecture's solution lines of layer norm's one-expression gradient, in a cell's names."""
    return (
        f"dx_hat = {w} * {up}\n"
        f"{dx} = {plus}{rstd} / C * (C * dx_hat - dx_hat.sum(-1, keepdim=True) - {x_hat} * "
        f"(dx_hat * {x_hat}).sum(-1, keepdim=True))"
    )


def rms_norm() -> Iterator[Edit]:
    """The edits that put RMS norm where the lecture has layer norm: its function, the final
    norm's steps (two cells fewer answers), the one-expression gradient everywhere it is used.
    The names it renames (``lnf_ms``, ``rmsnorm``) are renamed after the edits."""
    yield Sub("a pre-norm block (layer norm,", "a pre-norm block (RMS norm,")
    yield Sub("connection, layer norm, an MLP", "connection, RMS norm, an MLP")
    yield Sub("a final layer norm, the output", "a final RMS norm, the output")
    yield Sub("the layer-norm gains near 1", "the RMS-norm gains near 1")
    yield Sub(
        "The final layer norm is written out in steps (mean, deviations, squares,\nvariance, "
        "reciprocal standard deviation); the two inside the block use `layernorm` above",
        "The final RMS norm is written out in steps (squares, their mean, its reciprocal\nsquare "
        "root); the two inside the block use `layernorm` above",
    )
    yield Sub(LN_FUNCTION, RMS_FUNCTION)
    yield Sub("# final layer norm, in steps\n" + "".join(LN_STEPS), RMS_FORWARD)
    yield Sub(
        "          lnf_mean, lnf_diff, lnf_diff2, lnf_var, lnf_rstd,",
        "          lnf_sq, lnf_ms, lnf_rstd,",
    )
    yield Swap("### The final layer norm: batch norm over the other axis", RMS_FINAL)
    yield Swap("# dlnf_rstd: dL/dlnf_rstd", RMS_STEPS_CELL)
    yield Swap("`lnf_diff` is used twice (in `lnf_hat`", RMS_TWICE)
    yield Swap("# dlnf_diff: dL/dlnf_diff", RMS_INPUT_CELL)
    yield Swap("### Layer norm in one expression", RMS_FUSED)
    yield from _fused_cells()
    yield from _rms_backward_function()
    yield Sub("feeds the layer norm `ln2`", "feeds the RMS norm `ln2`")
    yield Sub("(your one-expression layer norm,", "(your one-expression RMS norm,")
    yield Sub("Write three: layer norm,", "Write three: RMS norm,")
    yield Sub("A layer norm over 5 numbers and over 36", "An RMS norm over 5 numbers and over 36")


def _fused_cells() -> Iterator[Edit]:
    """RMS norm's one expression where exercise 1 uses layer norm's: the final norm's fused
    cell, ``dx1`` and ``dx0``, their TODO text and rungs."""
    for dx, n, plus, up in (
        ("dx2_fused", "lnf", "", "dlnf"),
        ("dx1", "ln2", "dx2 + ", "dln2"),
        ("dx0", "ln1", "dx1 + ", "dln1"),
    ):
        names = (dx, f"{n}_rstd", f"{n}_hat", f"{n}_w", up, plus)
        yield Sub(_layer_norm_fused(*names), _fused_rms(*names))
        yield Sub(
            f"# hint {dx}+: {dx} = {plus}{n}_rstd / C * (C * dx_hat - ____ - {n}_hat * ____)",
            f"# hint {dx}+: {dx} = {plus}{n}_rstd / C * (C * dx_hat - {n}_hat * ____)",
        )
    yield Sub(
        "# dx2_fused full: the formula above with dx_hat = lnf_w * dlnf and the sums over axis -1",
        "# dx2_fused full: the formula above with dx_hat = lnf_w * dlnf and the sum over axis -1",
    )
    yield Sub(
        "# hint dx2_fused: Layer norm from `x2` to `lnf` is one function; each number of a position "
        "reaches every output of that position through the mean and the variance: the two sums over "
        "the last axis come from there.",
        "# hint dx2_fused: RMS norm from `x2` to `lnf` is one function; each number of a position "
        "reaches every output of that position through the mean square: the sum over the last axis "
        "comes from there.",
    )
    yield Sub(
        "a (B, T, 1) column that broadcasts back; Σ(dx_hat x̂) multiplies entry by entry before it "
        "sums. No n/(n-1).",
        "a (B, T, 1) column that broadcasts back; Σ(dx_hat x̂) multiplies entry by entry before it "
        "sums. No Σ dx_hat term: there is no mean.",
    )
    for n in ("ln2", "ln1"):
        yield Sub(f"back through the layer norm {n};", f"back through the RMS norm {n};")
        yield Sub(f"in the layer norm `{n}` and", f"in the RMS norm `{n}` and")
    yield Sub(
        "use the one-expression layer norm with dx_hat",
        "use the one-expression RMS norm with dx_hat",
    )
    yield Sub("the one-expression layer norm with ln1_w", "the one-expression RMS norm with ln1_w")


def _rms_backward_function() -> Iterator[Edit]:
    """Exercise 2's ``layernorm_backward`` made RMS norm's (renamed after the edits)."""
    yield Sub(
        '"""out = x_hat * w + b, x_hat = (x - mean) * rstd over the last axis',
        '"""out = x_hat * w + b, x_hat = x * rstd over the last axis',
    )
    yield Sub(
        "    n = x_hat.shape[-1]  # the numbers each mean and variance is taken over\n",
        "    n = x_hat.shape[-1]  # the numbers each mean square is taken over\n",
    )
    yield Sub(
        "    # dx: dL/dx of layer norm, shape like x_hat",
        "    # dx: dL/dx of RMS norm, shape like x_hat",
    )
    yield Sub(
        "    dx = rstd / n * (n * dx_hat - dx_hat.sum(-1, keepdim=True) - x_hat * "
        "(dx_hat * x_hat).sum(-1, keepdim=True))\n",
        "    dx = rstd / n * (n * dx_hat - x_hat * (dx_hat * x_hat).sum(-1, keepdim=True))\n",
    )
    yield Sub(
        "    # dx full: rstd / n * (n dx_hat - sum of dx_hat - x_hat * sum of dx_hat x_hat), sums "
        "over the last axis, dx_hat = w * dout\n",
        "    # dx full: rstd / n * (n dx_hat - x_hat * sum of dx_hat x_hat), the sum over the last "
        "axis, dx_hat = w * dout\n",
    )
    yield Sub(
        "    # hint dx: the one-expression layer norm of exercise 1, with this function's names: "
        "`n` numbers per position, sums over the last axis.\n"
        "    # hint dx: dx_hat = w * dout; dx = rstd / n * (n dx_hat - Σ dx_hat - x_hat "
        "Σ(dx_hat x_hat)), both sums over axis -1 with keepdim. No n/(n-1).\n",
        "    # hint dx: the one-expression RMS norm of exercise 1, with this function's names: "
        "`n` numbers per position, the sum over the last axis.\n"
        "    # hint dx: dx_hat = w * dout; dx = rstd / n * (n dx_hat - x_hat Σ(dx_hat x_hat)), "
        "the sum over axis -1 with keepdim.\n",
    )
    yield Sub(
        "    # hint dx+: dx = rstd / n * (n * dx_hat - ____.sum(-1, keepdim=True) - x_hat * "
        "(____).sum(-1, keepdim=True))\n",
        "    # hint dx+: dx = rstd / n * (n * dx_hat - x_hat * (____).sum(-1, keepdim=True))\n",
    )


# --- the loss: cross-entropy with label smoothing ---------------------------------------------
SMOOTHED_LOGITS = """\
### `logits`: a cross-entropy with label smoothing that skips the padding

`F.cross_entropy(..., ignore_index=-1, label_smoothing=smoothing)` is notebook 03's fused cross-entropy against a
softened target, averaged over the `n_targets` positions that have a target: the target character gets `1 - smoothing`
and every character of the vocabulary, the target too, `smoothing / vocab_size`. A position's loss is
`-(1 - smoothing) log p[y] - smoothing / vocab_size · Σ_j log p[j]`, and the fused gradient of its row is `p` minus
that softened target."""

SMOOTHED_DLOGITS_CELL = """\
# dlogits: dL/dlogits, shape (B, T, vocab_size)
# dlogits full: softmax minus the smoothed target (1 - smoothing at the target, smoothing / vocab_size everywhere), divided by n_targets, at positions with a target; zero at padding
# hint dlogits: The loss is the mean, over the `n_targets` positions whose target is not -1, of a cross-entropy against a softened target: `1 - smoothing` on the target and `smoothing / vocab_size` on every character. Notebook 03's fused gradient applies to each of those rows, with that target; a padding row never reaches the loss.
# hint dlogits: For a row with p = softmax(logits[b, t]) and target y: d loss / d logits[b, t, j] = p[j] - (1 - smoothing) [j == y] - smoothing / vocab_size; divide by n_targets. Rows whose target is -1 get 0.
# hint dlogits: dlogits = F.softmax(logits, -1) - (1 - smoothing) * F.one_hot(Yb.clamp(min=0), vocab_size) - ____
# hint dlogits+: dlogits = dlogits * (Yb >= 0).unsqueeze(-1) / ____
### BEGIN SOLUTION
dlogits = F.softmax(logits, -1) - (1 - smoothing) * F.one_hot(Yb.clamp(min=0), vocab_size) - smoothing / vocab_size
dlogits = dlogits * (Yb >= 0).unsqueeze(-1) / n_targets
### END SOLUTION
cmp('logits', dlogits, logits)"""

PLAIN_NATS = (
    "gpt_loss(gpt_forward(params, Xc)[0], Yc)",
    "F.cross_entropy(gpt_forward(params, Xc)[0].reshape(-1, vocab_size), Yc.reshape(-1), "
    "ignore_index=-1)",
)


def label_smoothing(smoothing: float) -> Iterator[Edit]:
    """The edits that make the loss the cross-entropy with label smoothing ``smoothing``; the
    held-out nats stay the plain cross-entropy, as the other models' are."""
    yield Sub(
        "output projection and\nthe cross-entropy.",
        "output projection and\nthe cross-entropy with label smoothing.",
    )
    yield Sub(
        "\n\n\ndef init_gpt(n_layer",
        f"\nsmoothing = {smoothing}  # label smoothing: the target gets 1 - smoothing, every character smoothing / vocab_size\n\n\ndef init_gpt(n_layer",
    )
    yield Sub(
        "loss = F.cross_entropy(logits.view(-1, vocab_size), Yb.view(-1), ignore_index=-1)",
        "loss = F.cross_entropy(logits.view(-1, vocab_size), Yb.view(-1), ignore_index=-1, label_smoothing=smoothing)",
    )
    yield Sub(
        "### `logits`: a cross-entropy that skips the padding\n\n`F.cross_entropy(..., ignore_index=-1)` is notebook 03's "
        "fused cross-entropy, averaged over the `n_targets` positions\nthat have a target.",
        SMOOTHED_LOGITS,
    )
    yield Swap("# dlogits: dL/dlogits, shape (B, T, vocab_size)", SMOOTHED_DLOGITS_CELL)
    yield Sub(
        "    dlogits = (F.softmax(logits, -1) - F.one_hot(Y.clamp(min=0), vocab_size)) * valid / valid.sum()\n",
        "    dlogits = (F.softmax(logits, -1) - (1 - smoothing) * F.one_hot(Y.clamp(min=0), vocab_size) - smoothing / vocab_size) * valid / valid.sum()\n",
    )
    yield Sub(
        "    return F.cross_entropy(logits.reshape(-1, vocab_size), Y.reshape(-1), ignore_index=-1)\n",
        "    return F.cross_entropy(logits.reshape(-1, vocab_size), Y.reshape(-1), ignore_index=-1, label_smoothing=smoothing)\n",
    )
    yield Sub(*PLAIN_NATS)
    yield Sub(
        "(the padding is not counted, so every model is judged on the same\nexamples).",
        "(the padding is not counted, so every model is judged on the same\nexamples), by the plain "
        "cross-entropy: the smoothing is for training only.",
    )


# --- the width, the heads, the order, and what the lecture measured -------------------------
def parameters(n_embd: int, n_layer: int = 2, vocab: int = 27, positions: int = 16) -> int:
    """The number of parameters of the notebook's GPT: per block two norms, the attention's
    q, k, v and projection, an MLP four times as wide; the embeddings, a final norm, the head."""
    c = n_embd
    block = 2 * 2 * c + (3 * c * c + 3 * c) + (c * c + c) + (4 * c * c + 4 * c) + (4 * c * c + c)
    return n_layer * block + vocab * c + positions * c + 2 * c + c * vocab


def width(v: Transformer) -> Iterator[Edit]:
    """The edits that give the network ``v``'s width and heads."""
    c, nh, hs = v.n_embd, v.n_head, v.head_size
    yield Sub(
        "n_embd, n_head = 36, 4\nhead_size = n_embd // n_head  # 9\n",
        f"n_embd, n_head = {c}, {nh}\nhead_size = n_embd // n_head  # {hs}\n",
    )
    yield Sub(
        "`n_embd = 36` numbers per position, `n_head = 4` heads of `head_size = 9`",
        f"`n_embd = {c}` numbers per position, `n_head = {nh}` heads of `head_size = {hs}`",
    )
    yield Sub(
        "(16 positions, 9 numbers per head, 36 per\nposition)",
        f"(16 positions, {hs} numbers per head, {c} per\nposition)",
    )
    yield Sub("two-block GPT (34,632 parameters)", f"two-block GPT ({parameters(c):,} parameters)")


LECTURE_RUN = "What the full run gives (10,000 steps; on our 2-core test machine,"


def lecture_numbers() -> Iterator[Edit]:
    """The lecture's full run told as the lecture's network's, not as this one's."""
    yield Sub(
        LECTURE_RUN,
        "What the lecture's network (GELU in its `tanh` form, layer norm, the plain cross-entropy, "
        "36 numbers per position in 4 heads) gives\nin the full run; yours is a variant of it, so expect numbers near "
        "these, not the same (10,000 steps; on our 2-core test machine,",
    )


IMPORTS = (
    "from checks import NotWritten, adamw_slips, check_numeric, check_value, cmp, hint, "
    "load_names, require, setting, split_dataset, summary, training\n"
)


LLM_C = (
    "llm.c's `train_gpt2.c` does the same in C, one function per layer (`layernorm_backward`,\n"
    "`attention_backward`, `gelu_backward`, `matmul_backward`, `encoder_backward`)"
)
# said instead where the variant's functions are not llm.c's: no function names (they would be
# renamed as the variant's are)
LLM_C_OTHER = (
    "llm.c's `train_gpt2.c` does the same in C for GPT-2's own\nnetwork (layer norm, GELU), one "
    "function per layer"
)


# exercise 4 (optional), in a variant whose answers differ: its fast forward and backward passes
# are the lecture network's own, so they go, and the race keeps the learner's step against
# autograd's (whose forward pass is the variant's gpt_forward), without the solution's rows
FAST_LISTED = (
    "4. **Exercise 4** (optional, not graded): a fast backward pass, `gpt_backward_fast`, timed "
    "against autograd's.\n"
)
COST_LISTED = (
    "4. What your step costs (not graded): your `gpt_backward`'s step timed against autograd's.\n"
)
RACE_SAID = edits.race_said(4)  # the last summary's, on the race
COST_SAID = edits.COST_SAID  # and what a variant says instead
FAST_CELLS = ("def gpt_forward_fast(p, X):", "def gpt_backward_fast(p, X, Y, logits, cache):")
COST_INTRO = """### What your step costs

Not graded. `race()` below times your training step, `gpt_forward` and your `gpt_backward`, against autograd's on
the same minibatches, after checking that their gradients agree, and counts the tensor operations each makes and the
memory they allocate. (The lecture's notebook has an exercise here that makes the backward pass fast; its fast passes
are the lecture network's own, so this variant has none.)"""
STEP_FAST = '''

def step_fast(p, Xb, Yb):
    """gpt_forward_fast and your gpt_backward_fast."""
    logits, cache = gpt_forward_fast(p, Xb)
    return gpt_loss(logits, Yb), gpt_backward_fast(p, Xb, Yb, logits, cache)
'''


def cost_only() -> list[Edit]:
    """Exercise 4 without its fast passes: the race of the learner's step against autograd's."""
    return [
        Sub(FAST_LISTED, COST_LISTED),
        Sub(RACE_SAID, COST_SAID),
        Swap("# Exercise 4: make it fast (optional)", COST_INTRO),
        *map(Drop, FAST_CELLS),
        Sub(STEP_FAST, ""),
        Sub("race(step_fast, step, autograd=step_autograd,", "race(step, autograd=step_autograd,"),
    ]


def edits(v: Transformer) -> list[Edit]:
    """The edits that make the lecture's notebook ``v``'s (the order and the names come after
    them)."""
    if v == Transformer():
        return []
    # first: the fast passes repeat the forward pass that the other edits change
    out: list[Edit] = cost_only() if v.answers_differ else []
    out += announced(v, IMPORTS, STEM)
    if v.norm == "rmsnorm" or v.function != "gelu":  # llm.c's own names are not renamed
        out.append(Sub(LLM_C, LLM_C_OTHER))
    if v.norm == "rmsnorm":
        out += rms_norm()
    if v.activation != "gelu-tanh":
        out += activation(v.activation)
    if v.loss == "label-smoothing":
        out += label_smoothing(v.smoothing)
    if (v.n_embd, v.n_head) != (36, 4):
        out += width(v)
    return out + list(lecture_numbers())


def sources(v: Transformer, lecture: list[str]) -> list[str | None]:
    """The text of each cell of ``v``'s solution, from the lecture's (``lecture``)."""
    edited = reordered(apply(lecture, edits(v)), GROUPS, v.order)
    return [None if text is None else renamed(text, v) for text in edited]


def renamed_metadata(workbook: dict, v: Transformer) -> dict:
    """A cell's ``workbook`` metadata (the answers a probe reads in a function) with ``v``'s
    names; an RMS norm's backward probed on rows normalised as RMS norm normalises them."""
    text = renamed(json.dumps(workbook), v)
    if v.norm == "rmsnorm":
        text = text.replace("__grade_normed(", "__grade_rms_normed(")
    return json.loads(text)
