"""A training loop's timing, progress lines and Kernel > Interrupt: the notebook's loop reads as
the lecture's (sample a batch, forward, backward, update, append the loss).

>>> lossi = []
>>> with training(range(1, 3), every=1) as run:   # doctest: +SKIP
...     for t in run:
...         loss = 3.0 / t   # sample a batch, forward, backward, update
...         lossi.append(loss)
...         run.show(loss=loss)
     1/2: loss 3.0000  (9,000 steps/s)
     2/2: loss 1.5000  (9,500 steps/s)
>>> run.elapsed   # seconds   # doctest: +SKIP
0.0002
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from types import TracebackType
from typing import SupportsFloat

__all__ = ["Training", "training"]

# how the values given to ``show`` are printed
FORMATS = {"loss": ".4f", "lr": ".5f"}
STOPPED = "stopped after {} steps; the parameters keep what they learned"


class Training:
    """The steps of one training run: timed, with a progress line at the notebook's cadence, and
    stopped cleanly by a KeyboardInterrupt in the loop (the ``with`` block ends there, what the
    steps before it learned is kept, and the cell goes on after the block)."""

    def __init__(self, steps: range, every: int | None, seconds: float | None) -> None:
        self.steps, self.every, self.seconds = steps, every, seconds
        self.done = 0  # steps finished
        self._k = -1  # the index of the step under way
        self._started: float | None = None
        self._shown = self._stopped = self._started

    def __enter__(self) -> Training:
        self._started = self._shown = time.perf_counter()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        tb: TracebackType | None,
    ) -> bool:
        self._stopped = time.perf_counter()
        if kind is not None and issubclass(kind, KeyboardInterrupt):
            print(STOPPED.format(self.done))
            return True
        return False

    def __iter__(self) -> Iterator[int]:
        if self._started is None:
            raise RuntimeError("use training() in a with statement: with training(...) as run")
        for k, step in enumerate(self.steps):
            self._k = k
            yield step
            self.done = k + 1

    @property
    def elapsed(self) -> float:
        """Seconds since the run started, up to its end once it has ended."""
        if self._started is None:
            return 0.0
        return (self._stopped or time.perf_counter()) - self._started

    def due(self) -> bool:
        """Whether the step under way gets a progress line: the first and the last, every
        ``every``-th (by its number), and any step ``seconds`` after the last line shown."""
        if self._k < 0 or (self.every is None and self.seconds is None):
            return False
        if self._k in (0, len(self.steps) - 1):
            return True
        if self.every is not None and self.steps[self._k] % max(1, self.every) == 0:
            return True
        return self.seconds is not None and time.perf_counter() - self._shown > self.seconds

    def show(self, **values: SupportsFloat) -> None:
        """Print the progress line of the step under way if it is due: its number, each value
        (``loss=``, ``lr=``: numbers or 0-d tensors, as ``FORMATS`` says) and the steps per
        second so far."""
        if not self.due():
            return
        self._shown = time.perf_counter()
        total = len(self.steps)
        width = max(6, len(str(total)) + 1)
        shown = "  ".join(f"{k} {float(v):{FORMATS.get(k, '.4g')}}" for k, v in values.items())
        rate = (self._k + 1) / max(self._shown - self._started, 1e-9)
        print(f"{self.steps[self._k]:{width}d}/{total}: {shown}  ({rate:,.0f} steps/s)")


def training(steps: range, every: int | None = None, seconds: float | None = None) -> Training:
    """The steps of a training loop, for ``with training(range(n), every=1000) as run: for i in
    run: ...``. ``run.show(loss=..., lr=...)`` at the end of a step prints its progress line on
    the first and last step, on every ``every``-th and at least every ``seconds`` (neither: no
    lines). A KeyboardInterrupt ends the block with one line, keeping what was learned;
    ``run.elapsed`` is the run's seconds and ``run.done`` the steps it finished."""
    return Training(steps, every, seconds)
