"""The fixed words of the grader's rows, as data: the mistake words of its own (beside the
learner's vocabulary, ``checks.MISTAKES``, whose words its rows use too), the words a row's
``note`` names its parts with, and the words the reports give a row that has no mistake word.
docs/grading.md lists them in this order (a test holds the two together, and checks that every
word the code can write is here).
"""

from __future__ import annotations

# a row's ``mistake``: one word of ``checks.MISTAKES`` (``missing``, ``wrong``... as ``cmp`` says),
# one of these, or none (the grader's own reason: nothing could be compared)
MISTAKE_WORDS: dict[str, str] = {
    "review": (
        "not credited until an instructor has looked: the cell uses what an answer may not, hands "
        "back a tensor the grader handed in, or writes an answer out as numbers; the note says "
        "what the value did"
    ),
}
REVIEW = "review"

# a row's ``note``: ``word: text`` parts, joined by ``; `` (what a pass should still fix, what a
# fail also did)
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

# what report.md's common mistakes and Gradescope's output call a row without a mistake word
PASS, ERROR = "pass", "error"
REPORT_WORDS: dict[str, str] = {
    PASS: "a row that passed (Gradescope's output)",
    ERROR: (
        "a row that failed with no mistake word (report.md's common mistakes, the pages, "
        "Gradescope): the reason says why (no value recorded, the cell raised, the kernel died, "
        "the notebook ran out of time)"
    ),
}
