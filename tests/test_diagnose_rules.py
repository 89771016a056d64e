"""The shape rules of ``checks.diagnose``: each is the first to explain its own kind of shape."""

import pytest
import torch

from checks.diagnose import SHAPE_RULES, Context, diagnose_shape

g = torch.Generator().manual_seed(0)
E = torch.randn(4, 5, generator=g)
E3 = torch.randn(2, 3, 4, generator=g)
BIAS = torch.randn(1, 5, generator=g)

# (rule, answer, expected gradient, words the hint holds)
CASES = [
    ("_one_number", torch.tensor(1.0), E, "one number per element"),
    ("_permuted", E.T.clone(), E, "right but transposed"),
    ("_permuted", torch.randn(5, 4, generator=g), E, "its shape transposed"),
    ("_size_one_dropped", BIAS.reshape(5, 1).sum(1), BIAS.reshape(5, 1), "was dropped"),
    ("_size_one_extra", E.reshape(4, 1, 5), E, "extra size-1 axis"),
    ("_not_summed", BIAS.expand(32, 5).clone(), BIAS, "broadcast along axis 0"),
    ("_summed_other_axis", torch.randn(4, 1, generator=g), BIAS, "needs the sum over axis 0"),
    ("_summed_other_axis_dropped", torch.randn(32, generator=g), torch.randn(5), "summed over"),
    ("_flattened", E.flatten(), E, "view them back"),
    ("_summed_away", torch.randn(2, 4, generator=g), E3, "is gone"),
    ("_indexed", torch.randn(32, 3, 5, generator=g), torch.randn(27, 5), "index_add_"),
    ("_ones_for_sizes", torch.randn(1, 5, generator=g), E, "one entry for each"),
    ("_dimensions", torch.randn(7, generator=g), E, "1 dimension where 2"),
    (None, torch.randn(4, 6, generator=g), E, "axis 1 differs (6 vs 5)"),
]


@pytest.mark.parametrize(("rule", "y", "e", "words"), CASES, ids=[str(c[0]) for c in CASES])
def test_each_shape_rule_is_the_first_to_explain_its_case(rule, y, e, words):
    first = next((r.__name__ for r in SHAPE_RULES if r(y, e, Context("W"))), None)
    assert first == rule
    mistake, hint = diagnose_shape(y, e, Context("W"))
    assert words in hint
    assert hint.startswith("your dW has shape ")
    assert mistake == ("transpose" if words == "right but transposed" else "shape")


def test_every_shape_rule_has_a_case():
    assert {r.__name__ for r in SHAPE_RULES} == {c[0] for c in CASES} - {None}
