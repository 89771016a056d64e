"""The README's commands are the ones CI runs, its pages (docs/, CONTRIBUTING.md) say what the code
does, and every link between them resolves."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# the README and the pages it links to
PAGES = [ROOT / "README.md", ROOT / "CONTRIBUTING.md", *sorted((ROOT / "docs").glob("*.md"))]


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
    """The table of docs/checking.md (the README's page for learners), in MISTAKES' order."""
    from checks import MISTAKES

    page = (ROOT / "docs" / "checking.md").read_text()
    text = page.split("## The mistakes it names", 1)[1].split("\n#", 1)[0]
    listed = re.findall(r"^\| `([a-z-]+)` \|", text, re.M)
    assert listed[1:] == list(MISTAKES) and listed[0] == "mistake"


def test_the_grading_pages_words_are_the_registry():
    """The table of docs/grading.md's "The words of a row", in ``checks.words``' order."""
    from checks import words

    page = (ROOT / "docs" / "grading.md").read_text()
    text = page.split("### The words of a row", 1)[1].split("\n#", 1)[0]
    listed = re.findall(r"^\| `([a-z-]+)` \| (\w+) \|", text, re.M)
    registry = [
        *((w, "mistake") for w in words.MISTAKE_WORDS),
        *((w, "note") for w in words.NOTE_WORDS),
        *((w, "reports") for w in words.REPORT_WORDS),
    ]
    assert listed == registry


def test_readme_pictures_are_committed_pngs():
    def pictures(page: Path) -> list[Path]:  # not the Colab badges
        found = re.findall(r"!\[[^\]]+\]\((?!https://)([^)]+)\)", page.read_text())
        return [page.parent / rel for rel in found]

    assert len(pictures(ROOT / "README.md")) >= 2
    for path in [p for page in PAGES for p in pictures(page)]:
        assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", path


def _prose(text: str) -> str:
    """The text without its fenced code blocks."""
    return re.sub(r"^```.*?^```", "", text, flags=re.S | re.M)


def anchors(page: Path) -> set[str]:
    """The anchors GitHub gives the page's headings: lower case, punctuation dropped, spaces as
    hyphens, a repeated one numbered."""
    seen: dict[str, int] = {}
    out = set()
    for heading in re.findall(r"^#+ (.+)$", _prose(page.read_text()), re.M):
        slug = re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")
        out.add(slug if slug not in seen else f"{slug}-{seen[slug]}")
        seen[slug] = seen.get(slug, 0) + 1
    return out


def test_the_anchors_are_githubs():
    assert anchors(ROOT / "docs" / "anywhere.md") >= {
        "without-a-clone-pip-colab-vs-code",
        "pip-from-your-own-wheel",
    }
    assert "cmp" in anchors(ROOT / "docs" / "checking.md")  # "## `cmp`"


def test_every_link_between_the_pages_resolves():
    """A relative link (README, CONTRIBUTING.md, docs/) names a file that exists and, for a page,
    one of its headings."""
    assert (ROOT / "docs" / "grading.md") in PAGES
    broken = []
    for page in PAGES:
        text = re.sub(r"`[^`\n]*`", "", _prose(page.read_text()))  # not what code shows
        for target in re.findall(r"\]\(([^)\s]+)\)", text):
            if re.match(r"[a-z]+:", target):  # https:, mailto:
                continue
            rel, _, anchor = target.partition("#")
            path = (page.parent / rel).resolve() if rel else page
            if not path.exists():
                broken.append(f"{page.name}: {target} (no such file)")
            elif anchor and path.suffix == ".md" and anchor not in anchors(path):
                broken.append(f"{page.name}: {target} (no such heading)")
    assert not broken, broken


def test_the_readme_is_a_five_minute_read():
    """Learners read the README; the reference, the grading and the code have their own pages."""
    lines = (ROOT / "README.md").read_text().splitlines()
    assert len(lines) <= 150, f"README.md has {len(lines)} lines: move detail to docs/"
