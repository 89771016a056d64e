"""One command, `backprop-workbook`, for every role: each subcommand reaches its module's own
command line, and the `python -m checks.X` forms stay."""

from __future__ import annotations

import subprocess
import sys

import pytest

from checks.cli import PASSED_ON, main


@pytest.mark.parametrize("command", sorted(PASSED_ON))
def test_each_subcommand_is_its_modules_command_line(command, capsys):
    with pytest.raises(SystemExit) as stop:
        main([command, "--help"])
    assert stop.value.code == 0
    assert capsys.readouterr().out.startswith(f"usage: backprop-workbook {command}")


def test_the_top_level_help_lists_every_subcommand(capsys):
    with pytest.raises(SystemExit):
        main(["--help"])
    shown = capsys.readouterr().out
    assert all(command in shown for command in ["start", "check", *PASSED_ON])


def test_arguments_reach_the_module():
    """`student --check` exits as `python -m checks.student --check` does: 0, the copies current."""
    assert main(["student", "--check"]) == 0


@pytest.mark.parametrize("module", sorted({m for m, _ in PASSED_ON.values()}))
def test_the_python_m_forms_still_run(module):
    run = subprocess.run([sys.executable, "-m", module, "--help"], capture_output=True, text=True)
    assert run.returncode == 0 and run.stdout.startswith("usage: "), run.stderr
