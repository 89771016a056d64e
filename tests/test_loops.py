"""checks.training: a training loop's steps, timed, with progress lines at the notebook's cadence,
stopped cleanly by Kernel > Interrupt; and no learner cell carries that machinery itself."""

from __future__ import annotations

import ast
import os
import signal
import subprocess
import sys
import textwrap

import nbformat
import pytest
import torch

from checks import training
from checks.paths import ROOT
from tests.signals import default_sigint


class Clock:
    """``time.perf_counter`` for checks.loops: it moves only when told to."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock(monkeypatch) -> Clock:
    c = Clock()
    monkeypatch.setattr("checks.loops.time.perf_counter", c)
    return c


def shown_steps(out: str) -> list[int]:
    return [int(line.split("/")[0]) for line in out.splitlines() if "steps/s" in line]


def test_an_interrupt_in_the_loop_ends_the_block_and_keeps_the_losses(capsys):
    lossi, after = [], []
    with training(range(1, 101), every=10) as run:
        for t in run:
            if t == 8:
                raise KeyboardInterrupt  # Kernel > Interrupt during step 8
            lossi.append(1.0 / t)
            run.show(loss=lossi[-1])
    after.append("the cell goes on")
    assert after and lossi == [1.0 / t for t in range(1, 8)]
    assert run.done == 7
    out = capsys.readouterr().out
    assert out.splitlines()[-1] == "stopped after 7 steps; the parameters keep what they learned"


def test_a_sigint_as_kernel_interrupt_sends_it_stops_the_loop_and_the_cell_goes_on():
    """Kernel > Interrupt is a SIGINT to the kernel: Python raises KeyboardInterrupt wherever the
    loop is, in its body or in the steps' own code."""
    script = textwrap.dedent("""
        import time
        from checks import training
        lossi = []
        with training(range(10**9), every=10**9) as run:
            for i in run:
                time.sleep(0.001)
                lossi.append(i)
                run.show(loss=1.0)
        print("kept", len(lossi), "done", run.done, flush=True)
    """)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(
        [sys.executable, "-u", "-c", script],
        stdout=subprocess.PIPE,
        text=True,
        env=env,
        preexec_fn=default_sigint,
    )
    assert proc.stdout is not None
    first = proc.stdout.readline()  # the first step's line: the loop is running
    assert first.split()[:3] == ["0/1000000000:", "loss", "1.0000"], first
    proc.send_signal(signal.SIGINT)
    out, _ = proc.communicate(timeout=60)
    assert proc.returncode == 0, out
    stopped, kept = out.splitlines()
    _, n, _, done = kept.split()
    assert stopped == f"stopped after {done} steps; the parameters keep what they learned"
    assert int(n) >= 1 and int(done) in (int(n) - 1, int(n))  # a step stopped after its append


def test_an_interrupt_stops_a_silent_run_too(capsys):
    with training(range(5)) as run:
        for i in run:
            if i == 3:
                raise KeyboardInterrupt
    assert run.done == 3
    out = capsys.readouterr().out
    assert out == "stopped after 3 steps; the parameters keep what they learned\n"


def test_any_other_error_goes_through(capsys):
    with pytest.raises(ValueError, match="step"), training(range(5), every=1) as run:
        for i in run:
            if i == 2:
                raise ValueError("step() not written yet")
            run.show(loss=1.0)
    assert run.done == 2 and "stopped" not in capsys.readouterr().out


def test_a_line_on_the_first_and_last_step_and_every_nth_by_its_number(capsys):
    with training(range(10), every=3) as run:  # notebook 03 counts from 0
        for _ in run:
            run.show(loss=2.0)
    assert shown_steps(capsys.readouterr().out) == [0, 3, 6, 9]
    with training(range(1, 11), every=4) as run:  # notebooks 04 and 05 from 1
        for _ in run:
            run.show(loss=2.0)
    assert shown_steps(capsys.readouterr().out) == [1, 4, 8, 10]


def test_every_below_one_shows_every_step(capsys):
    steps = 3
    with training(range(1, steps + 1), every=steps // 10) as run:
        for _ in run:
            run.show(loss=2.0)
    assert shown_steps(capsys.readouterr().out) == [1, 2, 3]


def test_a_line_at_least_every_so_many_seconds(capsys, clock):
    with training(range(20), every=100, seconds=10) as run:
        for _ in run:
            clock.now += 4  # 4 s a step: a line when more than 10 s passed since the last
            run.show(loss=2.0)
    assert shown_steps(capsys.readouterr().out) == [0, 3, 6, 9, 12, 15, 18, 19]


def test_no_cadence_no_lines(capsys):
    with training(range(1, 6)) as run:
        for _ in run:
            run.show(loss=2.0)
    assert capsys.readouterr().out == "" and run.done == 5


def test_the_line_is_the_notebooks_and_the_rate_is_steps_over_seconds(capsys, clock):
    with training(range(1, 20_001), every=2_000) as run:
        for t in run:
            clock.now += 0.01 if t > 1 else 0.02
            run.show(loss=torch.tensor(3.30021), lr=0.01)
            if t == 2_000:
                break
    lines = capsys.readouterr().out.splitlines()
    assert lines == [
        "     1/20000: loss 3.3002  lr 0.01000  (50 steps/s)",
        "  2000/20000: loss 3.3002  lr 0.01000  (100 steps/s)",
    ]
    with training(range(200_000), every=10_000) as run:
        for _ in run:
            clock.now += 0.5
            run.show(loss=3.95081)
            break
    assert capsys.readouterr().out == "      0/200000: loss 3.9508  (2 steps/s)\n"


def test_the_run_is_timed_from_the_with_to_its_end(clock):
    with training(range(4)) as run:
        for _ in run:
            clock.now += 1.5
        assert run.elapsed == 6.0  # so far
    clock.now += 60  # after the block: the run's own seconds stay
    assert run.elapsed == 6.0
    with training(range(4)) as stopped:
        for i in stopped:
            clock.now += 2
            if i == 1:
                raise KeyboardInterrupt
    assert stopped.elapsed == 4.0 and stopped.done == 1


def test_the_steps_outside_a_with_statement_say_so():
    with pytest.raises(RuntimeError, match="with statement"):
        list(training(range(3)))


# ---------------------------------------------------------------- the learner's cells

STUDENT = sorted((ROOT / "notebooks").glob("*.ipynb"))
# the one clock a learner cell reads: notebook 01 times the models of its accuracy table, and a
# line after the table says how long they took (its own cell's outputs, not the training loop's)
TIMED = {("01-scalar-autograd", "nb01-62")}


def calls(source: str) -> set[str]:
    """What a cell's code names: attributes, imported names and the exceptions it catches."""
    tree = ast.parse(source)
    names = {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute)}
    names |= {a.name for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) for a in n.names}
    names |= {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
    return names


@pytest.mark.parametrize("path", STUDENT, ids=lambda p: p.stem)
def test_no_learner_cell_times_a_loop_or_catches_an_interrupt(path):
    """The training loops read as the lecture's: their clock, progress lines and Kernel >
    Interrupt live in checks.training, not in the notebook's cells."""
    cells = [c for c in nbformat.read(path, as_version=4).cells if c.cell_type == "code"]
    interrupts = [c.id for c in cells[1:] if "KeyboardInterrupt" in calls(c.source)]
    assert not interrupts, f"cells {interrupts} of {path.name} catch KeyboardInterrupt"
    clocks = {"perf_counter", "perf_counter_ns", "monotonic", "time"}
    timed = {(path.stem, c.id) for c in cells[1:] if calls(c.source) & clocks}
    assert timed <= TIMED, f"cells {sorted(timed - TIMED)} of {path.name} read the clock"


def test_the_training_notebooks_train_through_checks_training():
    trained = {
        path.stem
        for path in STUDENT
        for c in nbformat.read(path, as_version=4).cells
        if c.cell_type == "code" and "training(range(" in c.source
    }
    assert trained == {"03-makemore-backprop", "04-mlp-language-model", "05-transformer-backprop"}
