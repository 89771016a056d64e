"""The fixed words of a check's outcome, as data, in one place: the learner's mistake words
(``MISTAKES``, the vocabulary of ``Result.mistake``), the grader's own mistake word, the words a
note names its parts with, and the words the reports give a row that has no mistake word.
docs/checking.md lists ``MISTAKES`` and docs/grading.md the rest, each in this order (tests hold
the pages and this module together, and check that every word the code can write is here).
Plain data: this module imports nothing.
"""

from __future__ import annotations

# a check's ``mistake``, written by the learner's side (``cmp``: checks/compare.py, named by
# checks/diagnose.py), and used by the grader's rows too
MISTAKES: dict[str, str] = {
    "missing": "nothing written yet: the answer is None or `...`",
    "nan": "the answer holds NaN or infinity where the gradient is finite",
    "shape": (
        "the answer does not have the tensor's shape (a dropped keepdim, a sum over the wrong "
        "axis, a missing sum)"
    ),
    "transpose": (
        "the right values transposed, or a rule applied with the gradient from above transposed "
        "(`datt.T` where `datt` belongs)"
    ),
    "sign": "exactly the negative of the gradient",
    "scale": "the gradient times a constant factor (often the batch size or its inverse)",
    "bessel": (
        "off by n/(n-1) or (n-1)/n: Bessel's correction used where it should not be, or left out"
    ),
    "missing-path": (
        "the tensor feeds several operations and the answer holds only some of their contributions"
    ),
    "accumulate": "rows used several times were overwritten instead of summed (scatter-add)",
    "autograd-grad": "the answer is autograd's own `.grad` tensor, not a hand-written gradient",
    "upstream": "the step is right, but it was taken from an earlier answer that is wrong",
    "chain": (
        "the local derivative alone: the gradient arriving from above (the output's `dX`) is not "
        "multiplied in"
    ),
    "operand": (
        "a rule applied with the wrong operand: another tensor where the forward input belongs"
    ),
    "rule": (
        "the local derivative of another operation: a sum's rule where a product's belongs, or the "
        "other way round"
    ),
    "order": (
        "a node's `_backward` ran before all the gradient from its uses had arrived (the "
        "topological order not reversed), or ran twice or never"
    ),
    "forward": (
        "the forward pass computes a wrong value (an operation's `out.data`), so no gradient built "
        "on it can be right"
    ),
    "alias": "two names for one tensor: an in-place change through one changed the other",
    "factor": (
        "the gradient times or divided by a tensor of the forward pass: a factor of the formula "
        "missing or one too many (`bngain`, `lnf_rstd`)"
    ),
    "local": (
        "the gradient from above is multiplied in, but by another function than the local "
        "derivative (`1 - hpreact**2` for tanh's `1 - h**2`)"
    ),
    "layout": (
        "the right numbers in the wrong places: axes split, joined or concatenated in another "
        "order than the forward pass's"
    ),
    "mask": (
        "a mask in the wrong place or missing: a softmax's mask after it (rows that no longer sum "
        "to 1) or never; values where the loss sees nothing (padding targets of -1)"
    ),
    "decay": (
        "an optimiser step without AdamW's decoupled weight decay, or with the decay added to "
        "the gradient (Adam's L2)"
    ),
    "bias-correction": (
        "an optimiser step whose bias correction is left out or taken at a fixed step (`t` never "
        "grows)"
    ),
    "moment": (
        "an optimiser's running average computed wrong: its weights swapped, the gradient not "
        "squared in `v`, or last step's average used"
    ),
    "wrong": "anything else: the values differ in no recognisable way",
    "no-grad": (
        "the check cannot run: the tensor has no `.grad` to compare with (a set-up problem, "
        "not the answer)"
    ),
}

# a grader's row's ``mistake``: one word of ``MISTAKES`` (``missing``, ``wrong``... as ``cmp``
# says), this one, written by the grader alone (checks/grading/judge.py), or none (the grader's
# own reason: nothing could be compared)
MISTAKE_WORDS: dict[str, str] = {
    "review": (
        "not credited until an instructor has looked: the cell uses what an answer may not, hands "
        "back a tensor the grader handed in, or writes an answer out as numbers; the note says "
        "what the value did"
    ),
}
REVIEW = "review"

# a note's words: ``word: text`` parts, joined by ``; `` (what a pass should still fix, what a
# fail also did); ``keepdim`` to ``untraced`` written by the learner's side (``cmp``:
# checks/compare.py, checks/diagnose.py), ``review`` and ``cell-error`` by the grader's judge
NOTE_WORDS: dict[str, str] = {
    "keepdim": "the answer lacks a size-1 axis the tensor has (a dropped `keepdim=True`)",
    "dtype": "the answer is of another dtype than the tensor (compared after conversion)",
    "converted": "the answer was a numpy array, converted to a tensor",
    "batch-size": "the answer is built with the batch size written as a number",
    "alias": "the answer is another name for a tensor the cell changed in place",
    "untraced": "earlier answers are wrong too, and the freed graph cannot tell this step apart",
    "review": "why a failing answer needs a look as well",
    "cell-error": "the answer's cell also raised",
}

# what the grader's reports (report.md's common mistakes, the pages, Gradescope's output) call a
# row without a mistake word
PASS, ERROR = "pass", "error"
REPORT_WORDS: dict[str, str] = {
    PASS: "a row that passed (Gradescope's output)",
    ERROR: (
        "a row that failed with no mistake word (report.md's common mistakes, the pages, "
        "Gradescope): the reason says why (no value recorded, the cell raised, the kernel died, "
        "the notebook ran out of time)"
    ),
}
