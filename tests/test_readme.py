"""The README's commands are the ones CI runs, and its examples are what the code prints."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def readme_commands() -> list[str]:
    """The commands of the README's "Two commands" section."""
    text = (ROOT / "README.md").read_text()
    section = text.split("## Two commands", 1)[1].split("\n## ", 1)[0]
    return [c.strip() for c in re.findall(r"```bash\n(.*?)```", section, re.S)]


def test_readme_has_the_two_setup_commands():
    cmds = readme_commands()
    assert len(cmds) == 2
    assert cmds == [
        'python -m pip install -e ".[lab]" && backprop-workbook start',
        'python -m pip install -e ".[dev]" && python -m pytest',
    ]


def test_ci_runs_the_readme_test_command():
    ci = (ROOT / ".ci" / "run").read_text()
    test_cmd = readme_commands()[1].replace("python -m", '"$PY" -m')
    assert test_cmd in ci


def test_readme_mistake_table_is_the_vocabulary():
    from checks import MISTAKES

    text = (
        (ROOT / "README.md").read_text().split("### The mistakes it names", 1)[1].split("\n#", 1)[0]
    )
    listed = re.findall(r"^\| `([a-z-]+)` \|", text, re.M)
    assert listed[1:] == list(MISTAKES) and listed[0] == "mistake"


def test_readme_pictures_are_committed_pngs():
    text = (ROOT / "README.md").read_text()
    pictures = re.findall(r"!\[[^\]]+\]\((?!https://)([^)]+)\)", text)  # not the Colab badges
    assert len(pictures) >= 2
    for rel in pictures:
        assert (ROOT / rel).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", rel
