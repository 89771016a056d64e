"""The operations a drill is built from, as data: each one's forward expression and, for each
operand, its contribution to that operand's gradient (the rule a learner must write).

Templates name the output's gradient ``{g}``, the output ``{out}`` and the operands ``{a}`` and
``{b}``; a contribution whose operand was broadcast is summed back by :func:`unbroadcast`.
Plain data and string work: this module imports nothing heavy.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Op:
    """One step of a forward pass: ``{out} = forward``, each operand's gradient rule, and the
    slips a learner makes at it."""

    name: str
    forward: str
    grads: tuple[str, ...]  # one per operand: its contribution, given the output's gradient {g}
    # the catalogued slips: a mistake word (checks.MISTAKES) -> per operand, the contribution a
    # learner who makes it writes (None: no such slip for that operand). For an elementwise step
    # "shape" is the rule itself, its broadcast left unsummed
    slips: dict[str, tuple[str | None, ...]] = field(default_factory=dict)
    positive_out: bool = False  # the output is > 0 everywhere (so a log may follow)
    needs_positive: bool = False  # the operand must be > 0 everywhere
    bounded_out: bool = False  # the output lies in [-1, 1] (so an exp of it stays small)
    needs_bounded: bool = False  # the operand must be small (a leaf, or a bounded output)
    # a reduction over an axis of 3 or more (a variance: its n/(n-1) is told from a plain factor
    # of 2 only from n = 3)
    needs_spread: bool = False
    # the axis a step works across (a softmax's, a norm's): it must hold 3 entries or more
    spans: int | None = None
    # the hint ladder's rungs (checks/drills/ladder.py), in the templates' names: what the step
    # does backwards, then per operand its local derivative and its rule with a blank
    idea: str = ""
    local: tuple[str, ...] = ()
    skeleton: tuple[str, ...] = ()

    @property
    def teaches(self) -> tuple[str, ...]:
        """The mistake words a slip at this step earns."""
        return tuple(self.slips)


ELEMENTWISE = "element by element: each entry of `{a}` moves only its own entry of `{out}`"
ROW = "every entry of `{out}` depends on every entry of its row of `{a}` (the last axis)"
NORM = (
    "`{out}` is `{a}` normalised over axis {ax}: every entry depends on every entry of its {line}"
    " of `{a}` (through the mean and the variance), so its rule holds sums over that axis"
)
NORM_LOCAL = (
    "with x̂ = `{out}` and means over axis {ax}: d{a} = (g - mean(g) - x̂ * mean(g * x̂))"
    " / sqrt(var + 1e-5), g being `{g}`, the variance without Bessel's correction"
)

UNARY: dict[str, Op] = {
    op.name: op
    for op in (
        Op(
            "tanh",
            "torch.tanh({a})",
            ("(1 - {out}**2) * {g}",),
            {"chain": ("(1 - {out}**2)",), "local": ("(1 - {a}**2) * {g}",)},
            bounded_out=True,
            idea=ELEMENTWISE,
            local=("d tanh({a}) / d{a} = 1 - tanh({a})**2, and tanh({a}) is `{out}`: no new tanh",),
            skeleton=("(1 - ____**2) * {g}",),
        ),
        Op(
            "exp",
            "{a}.exp()",
            ("{out} * {g}",),
            {"chain": ("{out}",)},
            positive_out=True,
            needs_bounded=True,
            idea=ELEMENTWISE,
            local=("d exp({a}) / d{a} = exp({a}), which is `{out}` itself",),
            skeleton=("____ * {g}",),
        ),
        Op(
            "relu",
            "torch.relu({a})",
            ("({a} > 0) * {g}",),
            {"chain": ("({a} > 0).to({a}.dtype)",)},
            idea=ELEMENTWISE,
            local=("d relu({a}) / d{a} = 1 where {a} > 0, 0 elsewhere",),
            skeleton=("(____ > 0) * {g}",),
        ),
        Op(
            "sigmoid",
            "torch.sigmoid({a})",
            ("{out} * (1 - {out}) * {g}",),
            {"chain": ("{out} * (1 - {out})",), "local": ("(1 - {out}**2) * {g}",)},
            positive_out=True,
            bounded_out=True,
            idea=ELEMENTWISE,
            local=(
                "d sigmoid({a}) / d{a} = sigmoid({a}) * (1 - sigmoid({a})),"
                " and sigmoid({a}) is `{out}`",
            ),
            skeleton=("{out} * (____) * {g}",),
        ),
        Op(
            "log",
            "{a}.log()",
            ("{g} / {a}",),
            {"chain": ("1 / {a}",)},
            needs_positive=True,
            idea=ELEMENTWISE,
            local=("d log({a}) / d{a} = 1 / {a}",),
            skeleton=("{g} / ____",),
        ),
        # over the last axis: every output depends on every input of its row
        Op(
            "softmax",
            "torch.softmax({a}, -1)",
            ("{out} * ({g} - ({g} * {out}).sum(-1, keepdim=True))",),
            positive_out=True,
            bounded_out=True,
            spans=-1,
            idea=ROW,
            local=(
                "with s = `{out}`: ds_i / d{a}_j = s_i * (1 - s_j) for i = j, -s_i * s_j otherwise;"
                " summed against `{g}` over the row: s * (g - Σ_row g * s)",
            ),
            skeleton=("{out} * ({g} - (____).sum(-1, keepdim=True))",),
        ),
        Op(
            "log_softmax",
            "torch.log_softmax({a}, -1)",
            ("{g} - {out}.exp() * {g}.sum(-1, keepdim=True)",),
            spans=-1,
            idea=ROW,
            local=(
                "d log_softmax({a})_i / d{a}_j = 1 for i = j, minus softmax({a})_j, where softmax"
                " is `{out}`.exp(): summed against `{g}` over the row: g - softmax * Σ_row g",
            ),
            skeleton=("{g} - ____.exp() * {g}.sum(-1, keepdim=True)",),
        ),
        # normalised over the last axis (a layer norm) or the first (a batch norm), no gain or
        # bias: every output of a row (a column) depends on every input of it
        *(
            Op(
                name,
                f"({{a}} - {{a}}.mean({ax}, keepdim=True))"
                f" / ({{a}}.var({ax}, keepdim=True, correction=0) + 1e-5).sqrt()",
                (
                    f"({{g}} - {{g}}.mean({ax}, keepdim=True)"
                    f" - {{out}} * ({{g}} * {{out}}).mean({ax}, keepdim=True))"
                    f" / ({{a}}.var({ax}, keepdim=True, correction=0) + 1e-5).sqrt()",
                ),
                spans=ax,
                idea=NORM.replace("{ax}", str(ax)).replace("{line}", line),
                local=(NORM_LOCAL.replace("{ax}", str(ax)),),
                skeleton=(
                    f"({{g}} - {{g}}.mean({ax}, keepdim=True)"
                    f" - {{out}} * (____).mean({ax}, keepdim=True))"
                    f" / ({{a}}.var({ax}, keepdim=True, correction=0) + 1e-5).sqrt()",
                ),
            )
            for name, ax, line in (("layer_norm", -1, "row"), ("batch_norm", 0, "column"))
        ),
        Op(
            "square",
            "{a}**2",
            ("2 * {a} * {g}",),
            {"chain": ("2 * {a}",), "scale": ("{a} * {g}",)},
            idea=ELEMENTWISE,
            local=("d({a}**2) / d{a} = 2 * {a}",),
            skeleton=("____ * {a} * {g}",),
        ),
    )
}

BROADCAST = "element by element, after broadcasting"

# elementwise with a second operand; the second may be broadcast (a row, a column). Their "shape"
# slip is the rule with the broadcast left unsummed, their "keepdim" slip the rule summed back
# without keepdim=True (Drill._contribution writes both)
BINARY: dict[str, Op] = {
    op.name: op
    for op in (
        Op(
            "add",
            "{a} + {b}",
            ("{g}", "{g}"),
            {"shape": ("{g}", "{g}"), "keepdim": ("{g}", "{g}")},
            idea=BROADCAST,
            local=("d({a} + {b}) / d{a} = 1", "d({a} + {b}) / d{b} = 1"),
            skeleton=("{g}", "{g}"),
        ),
        Op(
            "sub",
            "{a} - {b}",
            ("{g}", "-{g}"),
            {"sign": (None, "{g}"), "shape": ("{g}", "-{g}"), "keepdim": ("{g}", "-{g}")},
            idea=BROADCAST,
            local=("d({a} - {b}) / d{a} = 1", "d({a} - {b}) / d{b} = -1: mind the sign"),
            skeleton=("{g}", "-{g}"),
        ),
        Op(
            "mul",
            "{a} * {b}",
            ("{b} * {g}", "{a} * {g}"),
            {
                "operand": ("{a} * {g}", "{b} * {g}"),
                "shape": ("{b} * {g}", "{a} * {g}"),
                "keepdim": ("{b} * {g}", "{a} * {g}"),
            },
            idea=BROADCAST,
            local=(
                "d({a} * {b}) / d{a} = {b}, the other factor",
                "d({a} * {b}) / d{b} = {a}, the other factor",
            ),
            skeleton=("____ * {g}", "____ * {g}"),
        ),
        Op(
            "div",
            "{a} / {b}",
            ("{g} / {b}", "-{a} / {b}**2 * {g}"),
            {
                "sign": (None, "{a} / {b}**2 * {g}"),
                "shape": ("{g} / {b}", "-{a} / {b}**2 * {g}"),
                "keepdim": ("{g} / {b}", "-{a} / {b}**2 * {g}"),
            },
            needs_positive=True,
            idea=BROADCAST,
            local=("d({a} / {b}) / d{a} = 1 / {b}", "d({a} / {b}) / d{b} = -{a} / {b}**2"),
            skeleton=("{g} / ____", "-{a} / ____ * {g}"),
        ),
    )
}

MATMUL = Op(
    "matmul",
    "{a} @ {b}",
    ("{g} @ {b}.T", "{a}.T @ {g}"),
    {"transpose": ("({b} @ {g}.T)", "({g}.T @ {a})")},
    idea=(
        "a matrix product: entry (i, j) of `{out}` is row i of `{a}` times column j of `{b}`, so"
        " each operand's gradient is `{g}` times the other operand, transposed to fit"
    ),
    local=(
        "d {out}[i, j] / d {a}[i, k] = {b}[k, j]: a sum over j, a product with `{b}` turned",
        "d {out}[i, j] / d {b}[k, j] = {a}[i, k]: a sum over i, a product with `{a}` turned",
    ),
    skeleton=("{g} @ ____", "____ @ {g}"),
)

# a linear layer: a product with a weight matrix and a bias added to every row
LINEAR = Op(
    "linear",
    "{a} @ {b} + {c}",
    ("{g} @ {b}.T", "{a}.T @ {g}", "{g}.sum(0)"),
    {"transpose": ("({b} @ {g}.T)", "({g}.T @ {a})", None), "shape": (None, None, "{g}")},
    idea=(
        "a linear layer: the product of `{a}` and `{b}` (each operand's gradient is `{g}` times"
        " the other, transposed to fit), then the bias `{c}` added to every row (summed back"
        " over the rows)"
    ),
    local=(
        "d {out}[i, j] / d {a}[i, k] = {b}[k, j]: a sum over j, a product with `{b}` turned",
        "d {out}[i, j] / d {b}[k, j] = {a}[i, k]: a sum over i, a product with `{a}` turned",
        "d {out}[i, j] / d {c}[j] = 1 for every row i: a sum over the rows",
    ),
    skeleton=("{g} @ ____", "____ @ {g}", "{g}.sum(____)"),
)

# the mean cross-entropy of the rows' logits against one target class per row ({ix}), a drill's
# last step when it comes (a number: the loss's weight {g} is a number too)
CROSS_ENTROPY = Op(
    "cross_entropy",
    "F.cross_entropy({a}, torch.tensor({ix}))",
    ("(torch.softmax({a}, -1) - F.one_hot(torch.tensor({ix}), {classes})) / {rows} * {g}",),
    {"scale": ("(torch.softmax({a}, -1) - F.one_hot(torch.tensor({ix}), {classes})) * {g}",)},
    spans=-1,
    idea=(
        "the mean over the {rows} rows of -log softmax({a})[row, target], the targets {ix}:"
        " every logit of a row moves its row's loss"
    ),
    local=("d {out} / d {a}[i, j] = (softmax({a})[i, j] - 1 where j is row i's target) / {rows}",),
    skeleton=("(torch.softmax({a}, -1) - F.one_hot(torch.tensor({ix}), {classes})) / ____ * {g}",),
)

# the same entries as another matrix ({shape}: its sizes, baked in when drawn)
VIEW = Op(
    "view",
    "{a}.view({shape})",
    ("{g}.reshape_as({a})",),
    {"shape": ("{g}",)},
    idea="a view: the same entries of `{a}`, in the same order, read as a matrix of another shape",
    local=("slope 1 for each entry, which keeps its place: `{g}` read back in `{a}`'s shape",),
    skeleton=("{g}.reshape_as(____)",),
)

# two tensors side by side along an axis ({size}, {size_b}: each one's extent along it)
CAT = Op(
    "cat",
    "torch.cat([{a}, {b}], {axis})",
    ("{g}.narrow({axis}, 0, {size})", "{g}.narrow({axis}, {size}, {size_b})"),
    idea=(
        "`{a}` and `{b}` put side by side along axis {axis}: every entry of `{out}` is one entry"
        " of one of them"
    ),
    local=(
        "slope 1 for each entry of `{a}`, the first {size} along axis {axis}",
        "slope 1 for each entry of `{b}`, the {size_b} after the first {size} along axis {axis}",
    ),
    skeleton=("{g}.narrow({axis}, ____, ____)", "{g}.narrow({axis}, ____, ____)"),
)

# over one axis of a 2-d tensor, with or without keepdim ({g_kept}, {out_kept}: with the axis)
REDUCE: dict[str, Op] = {
    op.name: op
    for op in (
        Op(
            "sum",
            "{a}.sum({axis}{keep})",
            ("{g_kept}.expand_as({a})",),
            {"shape": ("{g}",)},
            idea="a sum over axis {axis}: each entry of `{a}` adds to one entry of `{out}`",
            local=(
                "slope 1 for every entry summed: `{g}` copied back along axis {axis} (put the"
                " axis back first where the sum dropped it)",
            ),
            skeleton=("____.expand_as({a})",),
        ),
        Op(
            "mean",
            "{a}.mean({axis}{keep})",
            ("{g_kept}.expand_as({a}) / {size}",),
            {"scale": ("{g_kept}.expand_as({a})",)},
            idea="a mean over axis {axis}: each entry of `{a}` adds 1/{size} of itself to `{out}`",
            local=("slope 1 / {size} for each of the {size} entries averaged",),
            skeleton=("{g_kept}.expand_as({a}) / ____",),
        ),
        # torch shares a maximum's gradient among equal maxima (rows repeated by an index)
        Op(
            "max",
            "{a}.amax({axis}{keep})",
            ("({a} == {out_kept}) * {g_kept} / ({a} == {out_kept}).sum({axis}, keepdim=True)",),
            idea="a maximum over axis {axis}: only the largest entries of `{a}` reach `{out}`",
            local=(
                "slope 1 where an entry is the maximum, 0 elsewhere; equal maxima share the"
                " gradient (amax splits it evenly among them)",
            ),
            skeleton=("({a} == ____) * {g_kept} / ({a} == {out_kept}).sum({axis}, keepdim=True)",),
        ),
        # the variance with Bessel's correction (torch's default), then without it
        Op(
            "var",
            "{a}.var({axis}{keep})",
            ("2 * ({a} - {a}.mean({axis}, keepdim=True)) / ({size} - 1) * {g_kept}",),
            {"bessel": ("2 * ({a} - {a}.mean({axis}, keepdim=True)) / {size} * {g_kept}",)},
            needs_spread=True,
            idea=(
                "a variance over axis {axis} with Bessel's correction (torch's default):"
                " Σ(a - mean)**2 / (n - 1), n = {size}"
            ),
            local=("d var / d{a}[i] = 2 * ({a}[i] - mean) / (n - 1), n = {size}",),
            skeleton=("2 * ({a} - {a}.mean({axis}, keepdim=True)) / ____ * {g_kept}",),
        ),
        Op(
            "var_biased",
            "{a}.var({axis}, correction=0{keep})",
            ("2 * ({a} - {a}.mean({axis}, keepdim=True)) / {size} * {g_kept}",),
            {"bessel": ("2 * ({a} - {a}.mean({axis}, keepdim=True)) / ({size} - 1) * {g_kept}",)},
            needs_spread=True,
            idea=(
                "a variance over axis {axis} without Bessel's correction (correction=0):"
                " Σ(a - mean)**2 / n, n = {size}"
            ),
            local=("d var / d{a}[i] = 2 * ({a}[i] - mean) / n, n = {size}",),
            skeleton=("2 * ({a} - {a}.mean({axis}, keepdim=True)) / ____ * {g_kept}",),
        ),
    )
}

# rows picked by a list of indices, some of them repeated ({ix}: the list)
INDEX = Op(
    "index",
    "{a}[{ix}]",
    ("torch.zeros_like({a}).index_add(0, torch.tensor({ix}), {g})",),
    {"accumulate": ("torch.zeros_like({a}).index_put((torch.tensor({ix}),), {g})",)},
    idea="rows of `{a}` picked by the list {ix}: a row picked several times is copied each time",
    local=(
        "each copy has slope 1: a row of d{a} collects the gradient of every copy of it (add,"
        " do not overwrite), and a row never picked gets 0",
    ),
    skeleton=("torch.zeros_like({a}).index_add(0, torch.tensor(____), {g})",),
)


def unbroadcast(
    expr: str, shape: tuple[int, ...], full: tuple[int, ...], blank: bool = False, keep: bool = True
) -> str:
    """``expr`` (a gradient of shape ``full``) summed back to an operand of shape ``shape``,
    as code: over the leading axes the operand lacks, and keepdim over those it holds as 1 (with
    ``blank``, each axis a blank to fill in; without ``keep``, as a learner who drops keepdim
    writes it: one sum over every axis, the size-1 axes gone)."""
    lead = len(full) - len(shape)
    kept = [i for i, size in enumerate(shape) if size == 1 and full[lead + i] != 1]
    if not keep:
        axes = [*range(lead), *(lead + i for i in kept)]
        return f"({expr}).sum({axes[0] if len(axes) == 1 else tuple(axes)})" if axes else expr
    axes = "____" if blank else 0 if lead == 1 else tuple(range(lead))
    sums = [f".sum({axes})"] if lead else []
    sums += [f".sum({'____' if blank else i}, keepdim=True)" for i in kept]
    return f"({expr}){''.join(sums)}" if sums else expr


def kept_axes(shape: tuple[int, ...], full: tuple[int, ...]) -> bool:
    """Whether an operand of ``shape`` broadcast to ``full`` holds a size-1 axis it is stretched
    along (a row (1, c) or a column (r, 1)): its gradient's sum needs keepdim=True."""
    lead = len(full) - len(shape)
    return any(size == 1 and full[lead + i] != 1 for i, size in enumerate(shape))
