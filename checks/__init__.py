"""Checks for hand-written gradients: compare with autograd or central differences, and say what went wrong.

>>> from checks import cmp
>>> cmp("logprobs", dlogprobs, logprobs)   # doctest: +SKIP
logprobs        | exact: True  | approximate: True  | maxdiff: 0.0
"""

from checks.compare import Result, Summary, check_value, cmp, expect, reset, results, summary
from checks.data import (
    DATA_DIR,
    NAMES_SHA256,
    DataIntegrityError,
    DataUnavailableError,
    Split,
    build_dataset,
    load_names,
    split_dataset,
    vocab,
)
from checks.diagnose import MISTAKES
from checks.hints import hint
from checks.inputs import drawn
from checks.numeric import check_numeric, numgrad
from checks.placeholders import NotWritten, install_hook, require

__all__ = [
    "DATA_DIR",
    "MISTAKES",
    "NAMES_SHA256",
    "DataIntegrityError",
    "DataUnavailableError",
    "Split",
    "build_dataset",
    "load_names",
    "split_dataset",
    "vocab",
    "NotWritten",
    "Result",
    "Summary",
    "check_numeric",
    "check_value",
    "cmp",
    "drawn",
    "expect",
    "hint",
    "numgrad",
    "require",
    "reset",
    "results",
    "summary",
]

install_hook()  # in IPython: a cell that uses an answer still `...` says so in one line


