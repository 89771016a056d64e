"""Checks for hand-written gradients: compare with autograd or central differences, and say what went wrong.

>>> from checks import cmp
>>> cmp("logprobs", dlogprobs, logprobs)   # doctest: +SKIP
logprobs        | exact: True  | approximate: True  | maxdiff: 0.0
"""

from checks.compare import Result, Summary, cmp, reset, results, summary
from checks.diagnose import MISTAKES
from checks.numeric import check_numeric, numgrad

__all__ = [
    "MISTAKES",
    "Result",
    "Summary",
    "check_numeric",
    "cmp",
    "numgrad",
    "reset",
    "results",
    "summary",
]

try:  # written alongside; the package works without it while it is being built
    from checks.data import DATA_DIR, NAMES_SHA256, DataUnavailableError, build_dataset, load_names, split_dataset, vocab

    __all__ += ["DATA_DIR", "NAMES_SHA256", "DataUnavailableError", "build_dataset", "load_names", "split_dataset", "vocab"]
except ImportError:  # pragma: no cover
    pass
