"""When an answer is right: the tolerances every comparison of an answer with its expected
gradient uses (``cmp``, ``check_value``, the Value probes, the grader, the heatmap's shading),
kept in one place as ``torch.testing`` keeps its own.

An answer is right when it has the expected shape and every element is within
``torch.allclose``'s defaults, or within float rounding of the expected value: ``ROUNDING`` units
of the dtype's epsilon, times the size of the gradients involved (another order of the same sums
is never a mistake)."""

RTOL, ATOL = 1e-5, 1e-8
ROUNDING = 32
