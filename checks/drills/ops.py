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

    @property
    def teaches(self) -> tuple[str, ...]:
        """The mistake words a slip at this step earns."""
        return tuple(self.slips)


UNARY: dict[str, Op] = {
    op.name: op
    for op in (
        Op(
            "tanh",
            "torch.tanh({a})",
            ("(1 - {out}**2) * {g}",),
            {"chain": ("(1 - {out}**2)",), "local": ("(1 - {a}**2) * {g}",)},
            bounded_out=True,
        ),
        Op(
            "exp",
            "{a}.exp()",
            ("{out} * {g}",),
            {"chain": ("{out}",)},
            positive_out=True,
            needs_bounded=True,
        ),
        Op(
            "relu",
            "torch.relu({a})",
            ("({a} > 0) * {g}",),
            {"chain": ("({a} > 0).to({a}.dtype)",)},
        ),
        Op(
            "sigmoid",
            "torch.sigmoid({a})",
            ("{out} * (1 - {out}) * {g}",),
            {"chain": ("{out} * (1 - {out})",), "local": ("(1 - {out}**2) * {g}",)},
            positive_out=True,
            bounded_out=True,
        ),
        Op("log", "{a}.log()", ("{g} / {a}",), {"chain": ("1 / {a}",)}, needs_positive=True),
        # over the last axis: every output depends on every input of its row
        Op(
            "softmax",
            "torch.softmax({a}, -1)",
            ("{out} * ({g} - ({g} * {out}).sum(-1, keepdim=True))",),
            positive_out=True,
            bounded_out=True,
            spans=-1,
        ),
        Op(
            "log_softmax",
            "torch.log_softmax({a}, -1)",
            ("{g} - {out}.exp() * {g}.sum(-1, keepdim=True)",),
            spans=-1,
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
            )
            for name, ax in (("layer_norm", -1), ("batch_norm", 0))
        ),
        Op(
            "square", "{a}**2", ("2 * {a} * {g}",), {"chain": ("2 * {a}",), "scale": ("{a} * {g}",)}
        ),
    )
}

# elementwise with a second operand; the second may be broadcast (a row, a column)
BINARY: dict[str, Op] = {
    op.name: op
    for op in (
        Op("add", "{a} + {b}", ("{g}", "{g}"), {"shape": ("{g}", "{g}")}),
        Op("sub", "{a} - {b}", ("{g}", "-{g}"), {"sign": (None, "{g}"), "shape": ("{g}", "-{g}")}),
        Op(
            "mul",
            "{a} * {b}",
            ("{b} * {g}", "{a} * {g}"),
            {"operand": ("{a} * {g}", "{b} * {g}"), "shape": ("{b} * {g}", "{a} * {g}")},
        ),
        Op(
            "div",
            "{a} / {b}",
            ("{g} / {b}", "-{a} / {b}**2 * {g}"),
            {
                "sign": (None, "{a} / {b}**2 * {g}"),
                "shape": ("{g} / {b}", "-{a} / {b}**2 * {g}"),
            },
            needs_positive=True,
        ),
    )
}

MATMUL = Op(
    "matmul",
    "{a} @ {b}",
    ("{g} @ {b}.T", "{a}.T @ {g}"),
    {"transpose": ("({b} @ {g}.T)", "({g}.T @ {a})")},
)

# over one axis of a 2-d tensor, with or without keepdim ({g_kept}, {out_kept}: with the axis)
REDUCE: dict[str, Op] = {
    op.name: op
    for op in (
        Op("sum", "{a}.sum({axis}{keep})", ("{g_kept}.expand_as({a})",), {"shape": ("{g}",)}),
        Op(
            "mean",
            "{a}.mean({axis}{keep})",
            ("{g_kept}.expand_as({a}) / {size}",),
            {"scale": ("{g_kept}.expand_as({a})",)},
        ),
        # torch shares a maximum's gradient among equal maxima (rows repeated by an index)
        Op(
            "max",
            "{a}.amax({axis}{keep})",
            ("({a} == {out_kept}) * {g_kept} / ({a} == {out_kept}).sum({axis}, keepdim=True)",),
        ),
        # the variance with Bessel's correction (torch's default), then without it
        Op(
            "var",
            "{a}.var({axis}{keep})",
            ("2 * ({a} - {a}.mean({axis}, keepdim=True)) / ({size} - 1) * {g_kept}",),
            {"bessel": ("2 * ({a} - {a}.mean({axis}, keepdim=True)) / {size} * {g_kept}",)},
            needs_spread=True,
        ),
        Op(
            "var_biased",
            "{a}.var({axis}, correction=0{keep})",
            ("2 * ({a} - {a}.mean({axis}, keepdim=True)) / {size} * {g_kept}",),
            {"bessel": ("2 * ({a} - {a}.mean({axis}, keepdim=True)) / ({size} - 1) * {g_kept}",)},
            needs_spread=True,
        ),
    )
}

# rows picked by a list of indices, some of them repeated ({ix}: the list)
INDEX = Op(
    "index",
    "{a}[{ix}]",
    ("torch.zeros_like({a}).index_add(0, torch.tensor({ix}), {g})",),
    {"accumulate": ("torch.zeros_like({a}).index_put((torch.tensor({ix}),), {g})",)},
)


def unbroadcast(expr: str, shape: tuple[int, ...], full: tuple[int, ...]) -> str:
    """``expr`` (a gradient of shape ``full``) summed back to an operand of shape ``shape``,
    as code: over the leading axes the operand lacks, and keepdim over those it holds as 1."""
    lead = len(full) - len(shape)
    sums = [f".sum({0 if lead == 1 else tuple(range(lead))})"] if lead else []
    sums += [
        f".sum({i}, keepdim=True)"
        for i, size in enumerate(shape)
        if size == 1 and full[lead + i] != 1
    ]
    return f"({expr}){''.join(sums)}" if sums else expr
