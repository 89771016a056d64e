"""The picture of ``checks.progress()``: each misconception's Leitner box over time, a cross where
it was answered wrong and a dot where a drill for it was answered right."""

from __future__ import annotations

from datetime import datetime
from typing import Any


def timeline(misconceptions: dict[str, dict]) -> Any:
    """A matplotlib Figure: one line per misconception (its box, 1 to 4, after each move), or
    None when there is none to draw."""
    if not misconceptions:
        return None
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 1.2 + 0.4 * len(misconceptions)))
    for k, (word, entry) in enumerate(sorted(misconceptions.items())):
        moves = [(datetime.fromisoformat(at), right, box) for at, right, box in entry["history"]]
        if not moves:
            continue
        lift = (k - (len(misconceptions) - 1) / 2) * 0.06  # words on one box side by side
        when = [m[0] for m in moves]
        boxes = [m[2] + lift for m in moves]
        (line,) = ax.step(when, boxes, where="post", label=word)
        for at, right, box in moves:
            ax.plot([at], [box + lift], "o" if right else "x", color=line.get_color())
    ax.set_yticks([1, 2, 3, 4], ["1 (1 day)", "2 (3 days)", "3 (7 days)", "4 (21 days)"])
    ax.set_ylim(0.5, 4.5)
    ax.set_ylabel("box (due again in)")
    ax.set_title("misconceptions over time: x answered wrong, o a drill answered right")
    ax.legend(loc="upper left", fontsize="small", frameon=False)
    fig.autofmt_xdate()
    fig.tight_layout()
    return fig
