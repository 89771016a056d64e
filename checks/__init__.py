"""Checks for hand-written gradients: compare with autograd or central differences, and say what
went wrong.

>>> from checks import cmp
>>> cmp("logprobs", dlogprobs, logprobs)   # doctest: +SKIP
logprobs        | exact: True  | approximate: True  | maxdiff: 0.0
"""

from importlib import import_module
from typing import Any

from checks.placeholders import install_hook

# the public names and their modules, imported on first use: ``import checks`` stays light
# (no torch), so the grader's test runner and the backprop-workbook command start quickly
_WHERE = {
    **dict.fromkeys(
        ["Result", "Summary", "check_value", "cmp", "expect", "reset", "results", "summary"],
        "checks.compare",
    ),
    **dict.fromkeys(
        [
            "DATA_DIR",
            "NAMES_SHA256",
            "DataIntegrityError",
            "DataUnavailableError",
            "Split",
            "build_dataset",
            "load_names",
            "split_dataset",
            "vocab",
        ],
        "checks.data",
    ),
    "MISTAKES": "checks.words",
    "drill": "checks.drills",
    "hint": "checks.hints",
    "progress": "checks.practice",
    "adamw_slips": "checks.optim",
    **dict.fromkeys(["drawn", "setting"], "checks.inputs"),
    "training": "checks.loops",
    "race": "checks.races",
    "variant": "checks.variants",
    **dict.fromkeys(["check_numeric", "numgrad"], "checks.numeric"),
    **dict.fromkeys(["NotWritten", "WrongDtype", "require"], "checks.placeholders"),
}


def __getattr__(name: str) -> Any:
    if name not in _WHERE:
        raise AttributeError(f"module 'checks' has no attribute {name!r}")
    value = getattr(import_module(_WHERE[name]), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_WHERE})


__all__ = [
    "race",
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
    "WrongDtype",
    "Result",
    "adamw_slips",
    "Summary",
    "check_numeric",
    "check_value",
    "cmp",
    "drawn",
    "drill",
    "expect",
    "variant",
    "hint",
    "progress",
    "numgrad",
    "require",
    "reset",
    "results",
    "setting",
    "summary",
    "training",
]

install_hook()  # in IPython: a cell that uses an answer still `...` says so in one line
