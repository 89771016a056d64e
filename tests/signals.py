"""Subprocesses that take Ctrl-C as a terminal gives it, whatever the test process inherited."""

from __future__ import annotations

import signal


def default_sigint() -> None:
    """For ``Popen(preexec_fn=...)``: SIGINT back to its default in the child before it starts
    (a library in the test process may ignore it, and an ignored SIGINT is inherited: Python then
    installs no KeyboardInterrupt, and the signal the test sends does nothing)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
