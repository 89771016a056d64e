"""End to end, in a real browser: a learner opens notebook 03 in JupyterLab, runs it, writes an
answer.

JupyterLab runs on 127.0.0.1 in a temporary copy of notebooks/ (the committed files are never
touched), and headless Chromium (Debian's /usr/bin/chromium, driven by the playwright package) does
what a learner does: open the student copy of 03-makemore-backprop.ipynb, wait for the kernel,
Run > Run All Cells, read the checks ("not written yet") and the summary table, then type a right
`dlogprobs` (the check passes, green ✓) and a right `dprobs`, then a `dlogprobs` with the sign
flipped (red ✗, the hint names it, and a heatmap of yours minus expected appears under it), ask for
hints (`hint('logprobs')`, one rung per run: the first speaks to the sign slip), and run the summary
again: its map of the network has a green `probs`, a red `logprobs` and a grey `counts` (colours
read from the page). Screenshots of each state go to tests/artifacts/ (not committed); with
WORKBOOK_UPDATE_SCREENSHOTS=1 the pass and fail pictures are also copied to tests/screenshots/,
which the README shows.

Notebooks 05 and 06 get shorter runs: 05's Run All and a right `dlogits`; 06's endless cell
drawing a drill whose answer cell JupyterLab puts beneath it, a sign slipped there, and the drill's
own hint.

Needs /usr/bin/chromium and playwright (`bash tests/e2e_setup.sh` installs both), and skips with the
reason otherwise. Run it alone with `python -m pytest tests/test_e2e.py -s` (-s shows the timings),
or leave it out with `-m "not e2e"`.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import time
from pathlib import Path

import pytest

from checks.compare import FAIL, PASS, TODO
from tests.browser import (
    CHECK_LINE,
    CHROMIUM,
    CHROMIUM_FLAGS,
    KERNEL_IDLE_JS,
    START,
    TOKEN,
    Lab,
    require_browser,
)

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[1]
NOTEBOOK = "03-makemore-backprop.ipynb"
ARTIFACTS = Path(__file__).resolve().parent / "artifacts"
SCREENSHOTS = Path(__file__).resolve().parent / "screenshots"  # the README's pictures

# Timeouts (ms), generous for a small machine (the server's start: tests.browser.START).
RUN_ALL = 120_000  # Run All Cells up to the cell that stops on a missing answer
RUN_ONE = 60_000  # one re-run cell


def _require_tools():
    require_browser()
    try:
        import checks.data

        checks.data.load_names()
    except Exception as exc:  # noqa: BLE001 - any reason the data set cannot be had
        pytest.skip(f"names.txt unavailable: {exc}")


@pytest.fixture
def lab(tmp_path):
    _require_tools()
    root = tmp_path / "notebooks"
    shutil.copytree(REPO / "notebooks", root)
    home = tmp_path / "jupyter"
    home.mkdir()
    server = Lab(root, home)
    try:
        yield server
    finally:
        server.stop()
        ARTIFACTS.mkdir(exist_ok=True)
        shutil.copy(server.log_path, ARTIFACTS / "jupyterlab.log")


@pytest.fixture
def page(lab):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(
            executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_FLAGS
        )
        try:
            context = browser.new_context(viewport={"width": 1400, "height": 1000})
            yield context.new_page()
        finally:
            browser.close()


def _cell_index(source_start: str) -> int:
    """The index, among all cells, of the one cell of notebook 03 whose source starts with
    ``source_start``."""
    cells = json.loads((REPO / "notebooks" / NOTEBOOK).read_text())["cells"]
    found = [i for i, c in enumerate(cells) if "".join(c["source"]).startswith(source_start)]
    assert len(found) == 1, f"{len(found)} cells of {NOTEBOOK} start with {source_start!r}"
    return found[0]


def _rgb(hex_colour: str) -> str:
    r, g, b = (int(hex_colour[i : i + 2], 16) for i in (1, 3, 5))
    return f"rgb({r}, {g}, {b})"


def expect_colour(cell, kind: str, colour: str) -> None:
    """The cell shows exactly one check, marked as ``kind`` (pass/fail), with a bar and a symbol in
    ``colour``."""
    from playwright.sync_api import expect

    check = cell.locator(".jp-OutputArea-output .workbook-check")
    expect(check).to_have_count(1)
    expect(check).to_have_class(re.compile(rf"\bworkbook-{kind}\b"))
    expect(check).to_have_css("border-left-color", _rgb(colour))
    expect(check.locator("span").first).to_have_css("color", _rgb(colour))
    expect(check.locator("span").first).to_have_text("✓" if kind == "pass" else "✗")


def _editor_text(cell) -> str:
    return cell.locator(".cm-content").evaluate(
        "e => Array.from(e.querySelectorAll('.cm-line'), l => l.textContent).join('\\n')"
    )


def test_learner_runs_notebook_03_and_writes_dlogprobs(lab, page, capsys):
    from playwright.sync_api import expect

    ARTIFACTS.mkdir(exist_ok=True)
    for old in ARTIFACTS.glob("*.png"):  # only this run's pictures
        old.unlink()
    committed = (REPO / "notebooks" / NOTEBOOK).read_bytes()
    nb = json.loads(committed)
    i_logprobs = _cell_index("dlogprobs = ...")
    i_probs = _cell_index("dprobs = ...")
    i_summary = _cell_index('summary("03-makemore-backprop", last=')  # exercise 1's
    i_stop = _cell_index('require("exercise 2"')
    todo_line = "".join(nb["cells"][i_logprobs]["source"]).splitlines()[0]
    assert todo_line.startswith("dlogprobs = ...  # TODO:")

    try:
        lab.wait_ready()
        page.goto(f"{lab.url}/lab/tree/{NOTEBOOK}?token={TOKEN}", timeout=START)
        cells = page.locator(".jp-NotebookPanel:not(.lm-mod-hidden) .jp-Notebook .jp-Cell")
        expect(cells).to_have_count(len(nb["cells"]), timeout=START)
        page.wait_for_function(KERNEL_IDLE_JS, timeout=START)
        opened = time.perf_counter() - lab.started

        # Run > Run All Cells, through the menu bar as a learner would.
        page.get_by_role("menuitem", name="Run", exact=True).click()
        page.locator(".lm-Menu").get_by_text("Run All Cells", exact=True).click()

        logprobs_cell, probs_cell = cells.nth(i_logprobs), cells.nth(i_probs)
        logprobs_out = logprobs_cell.locator(".jp-OutputArea-output")
        expect(logprobs_out).to_contain_text("not written yet", timeout=RUN_ALL)
        first_check = time.perf_counter() - lab.started
        logprobs_cell.scroll_into_view_if_needed()
        expect(logprobs_out.first).to_be_visible()
        expect(logprobs_out).to_contain_text(re.compile(r"logprobs\s+" + CHECK_LINE))
        expect(logprobs_out).to_contain_text("approximate: False")
        # in HTML, code is shown as code: the backticks of the plain text become a <code> element
        expect(logprobs_out).to_contain_text(
            "✗ missing: not written yet: replace the ... with dlogprobs, "
            "a tensor of shape (32, 27)."
        )
        expect(logprobs_out.locator("code").first).to_have_text("...")
        expect_colour(logprobs_cell, "fail", TODO)  # not written yet: grey, not red
        expect(probs_cell.locator(".jp-OutputArea-output")).to_contain_text(
            "✗ missing: not written yet", timeout=RUN_ALL
        )

        # Run All stops at the first cell that needs an answer: exercise 2's plot, after the
        # summary.
        stop_cell = cells.nth(i_stop)
        expect(stop_cell.locator(".jp-OutputArea-output")).to_contain_text(
            "NotWritten: write dlogits in exercise 2 first", timeout=RUN_ALL
        )
        page.wait_for_function(KERNEL_IDLE_JS, timeout=RUN_ALL)
        all_run = time.perf_counter() - lab.started

        # Every check of exercise 1 says "not written yet" (26 of them), and the summary is an HTML
        # table.
        outputs = page.locator(".jp-NotebookPanel:not(.lm-mod-hidden) .jp-OutputArea-output")
        text = "\n".join(outputs.all_text_contents())
        assert len(re.findall(r"✗ missing: not written yet", text)) >= 26, text[:3000]
        summary_cell = cells.nth(i_summary)
        table = summary_cell.locator(".jp-OutputArea-output table")
        expect(table).to_have_count(1, timeout=RUN_ALL)
        summary_cell.scroll_into_view_if_needed()
        expect(table).to_be_visible()
        expect(table).to_contain_text("logprobs")
        expect(table).to_contain_text("missing")
        expect(summary_cell.locator(".jp-OutputArea-output")).to_contain_text("0 / 26 checks pass")
        assert table.locator("tr").count() >= 26 + 1, table.inner_html()[:2000]

        logprobs_cell.evaluate("e => e.scrollIntoView({block: 'start'})")
        page.screenshot(path=str(ARTIFACTS / "01-not-written.png"))
        summary_cell.screenshot(path=str(ARTIFACTS / "02-summary-table.png"))

        def answer(line: str, cell=logprobs_cell, extra: str = "") -> None:
            """Replace the TODO line of ``cell`` with ``line`` (and add ``extra`` lines) in its
            editor, then Shift+Enter."""
            source = _editor_text(cell).splitlines()
            source[0] = line
            source += [extra] if extra else []
            cell.locator(".cm-content").click()
            expect(
                page.locator(".jp-NotebookPanel:not(.lm-mod-hidden) .jp-Notebook.jp-mod-editMode")
            ).to_have_count(1)
            page.keyboard.press("Control+a")  # in the cell's editor: select the cell's whole text
            # inserted as is: no auto-indent, no auto-closed brackets
            page.keyboard.insert_text("\n".join(source))
            assert _editor_text(cell) == "\n".join(source)
            page.keyboard.press("Shift+Enter")

        def rerun(cell) -> None:
            cell.locator(".cm-content").click()
            page.keyboard.press("Shift+Enter")

        # A right answer: the check passes.
        answer("dlogprobs = torch.zeros_like(logprobs); dlogprobs[range(n), Yb] = -1.0 / n")
        expect(logprobs_out).to_contain_text(
            re.compile(r"logprobs\s+\| exact: (True |False) \| approximate: True "), timeout=RUN_ONE
        )
        expect(logprobs_out).not_to_contain_text("✗")
        expect(logprobs_out).not_to_contain_text("not written yet")
        expect_colour(logprobs_cell, "pass", PASS)
        logprobs_cell.scroll_into_view_if_needed()
        expect(logprobs_out.first).to_be_visible()
        logprobs_cell.screenshot(path=str(ARTIFACTS / "03-pass.png"))

        # A right dprobs (given the right dlogprobs): green too.
        probs_out = probs_cell.locator(".jp-OutputArea-output")
        answer("dprobs = (1.0 / probs) * dlogprobs", cell=probs_cell)
        expect(probs_out).to_contain_text(
            re.compile(r"probs\s+\| exact: (True |False) \| approximate: True "), timeout=RUN_ONE
        )
        expect_colour(probs_cell, "pass", PASS)

        # The sign flipped: the check fails and names the mistake.
        answer("dlogprobs = torch.zeros_like(logprobs); dlogprobs[range(n), Yb] = 1.0 / n")
        expect(logprobs_out).to_contain_text("✗ sign:", timeout=RUN_ONE)
        expect(logprobs_out).to_contain_text(
            re.compile(r"logprobs\s+\| exact: False \| approximate: False ")
        )
        expect(logprobs_out).to_contain_text("Mismatched elements")
        expect_colour(logprobs_cell, "fail", FAIL)
        logprobs_cell.scroll_into_view_if_needed()
        expect(logprobs_out.first).to_be_visible()
        # under the failing check, a heatmap of yours minus expected (an inline SVG with its
        # caption)
        heat = logprobs_out.locator("svg[aria-label*='yours']")
        expect(heat).to_have_count(1)
        expect(logprobs_out).to_contain_text("yours − expected, 32 × 27")
        logprobs_cell.screenshot(path=str(ARTIFACTS / "04-sign-hint.png"))
        page.wait_for_function(KERNEL_IDLE_JS, timeout=RUN_ONE)

        # Hints on demand, one rung per run; the first speaks to the mistake just made.
        logprobs_area = logprobs_cell.locator(".jp-Cell-outputArea")  # the check, then the hint
        answer(
            "dlogprobs = torch.zeros_like(logprobs); dlogprobs[range(n), Yb] = 1.0 / n",
            extra="hint('logprobs')",
        )
        expect(logprobs_area).to_contain_text("dlogprobs: hint 1 of 3, the idea", timeout=RUN_ONE)
        expect(logprobs_area).to_contain_text("Your last dlogprobs failed (sign)")
        page.wait_for_function(KERNEL_IDLE_JS, timeout=RUN_ONE)
        rerun(logprobs_cell)
        expect(logprobs_area).to_contain_text(
            "dlogprobs: hint 2 of 3, the local derivative", timeout=RUN_ONE
        )
        expect(logprobs_area).not_to_contain_text("Your last dlogprobs failed")
        page.wait_for_function(KERNEL_IDLE_JS, timeout=RUN_ONE)
        rerun(logprobs_cell)
        expect(logprobs_area).to_contain_text("dlogprobs: hint 3 of 3, a skeleton", timeout=RUN_ONE)
        expect(logprobs_area).to_contain_text("reveal=True")
        # not before it is asked for
        expect(logprobs_area).not_to_contain_text("dlogprobs[range(n), Yb] = -1.0 / n")
        logprobs_cell.scroll_into_view_if_needed()
        logprobs_cell.screenshot(path=str(ARTIFACTS / "05-hint.png"))
        page.wait_for_function(KERNEL_IDLE_JS, timeout=RUN_ONE)

        # The summary again: the map of the network, coloured by the checks.
        rerun(summary_cell)
        network = summary_cell.locator(".jp-OutputArea-output svg g[data-id='logprobs']")
        expect(network).to_have_count(1, timeout=RUN_ONE)
        for node, colour in (("probs", PASS), ("logprobs", FAIL), ("counts", "#6e7781")):
            box = summary_cell.locator(f".jp-OutputArea-output svg g[data-id='{node}'] rect").first
            expect(box).to_have_css("stroke", _rgb(colour))
        expect(
            summary_cell.locator(".jp-OutputArea-output svg g[data-id='logprobs']")
        ).to_contain_text("sign")
        expect(table).to_contain_text("hints")
        summary_cell.scroll_into_view_if_needed()
        summary_cell.screenshot(path=str(ARTIFACTS / "06-map.png"))
        page.wait_for_function(KERNEL_IDLE_JS, timeout=RUN_ONE)
    except Exception:
        page.screenshot(path=str(ARTIFACTS / "failure.png"), full_page=True)
        raise

    if os.environ.get("WORKBOOK_UPDATE_SCREENSHOTS") == "1":
        SCREENSHOTS.mkdir(exist_ok=True)
        shutil.copy(ARTIFACTS / "03-pass.png", SCREENSHOTS / "check-pass.png")
        shutil.copy(ARTIFACTS / "04-sign-hint.png", SCREENSHOTS / "check-fail.png")

    # The committed notebooks are untouched: the server only ever saw the temporary copy.
    assert (REPO / "notebooks" / NOTEBOOK).read_bytes() == committed
    total = time.perf_counter() - lab.started
    timings = (
        f"[e2e] from starting JupyterLab: notebook open with an idle kernel {opened:.1f} s, "
        f"first check visible {first_check:.1f} s, Run All done {all_run:.1f} s, "
        f"the whole test {total:.1f} s"
    )
    (ARTIFACTS / "timings.txt").write_text(timings + "\n")
    with capsys.disabled():
        print("\n" + timings)


def run_all(lab, page, notebook: str):
    """Open the student copy ``notebook`` once its kernel is idle, then Run > Run All Cells
    through the menu bar, as a learner would; its JSON and the page's cells."""
    from playwright.sync_api import expect

    nb = json.loads((REPO / "notebooks" / notebook).read_text())
    lab.wait_ready()
    page.goto(f"{lab.url}/lab/tree/{notebook}?token={TOKEN}", timeout=START)
    cells = page.locator(".jp-NotebookPanel:not(.lm-mod-hidden) .jp-Notebook .jp-Cell")
    expect(cells).to_have_count(len(nb["cells"]), timeout=START)
    page.wait_for_function(KERNEL_IDLE_JS, timeout=START)
    page.get_by_role("menuitem", name="Run", exact=True).click()
    page.locator(".lm-Menu").get_by_text("Run All Cells", exact=True).click()
    return nb, cells


NOTEBOOK_05 = "05-transformer-backprop.ipynb"


def test_learner_runs_notebook_05_and_writes_dlogits(lab, page):
    """Notebook 05 in the browser: Run All Cells gives every check of exercise 1 its grey "not
    written yet" and stops at exercise 2's first function; a right `dlogits` then passes (green)."""
    from playwright.sync_api import expect

    nb, cells = run_all(lab, page, NOTEBOOK_05)
    sources = ["".join(c["source"]) for c in nb["cells"]]
    i_logits = next(i for i, s in enumerate(sources) if s.startswith("dlogits = ...  # TODO:"))
    logits_cell = cells.nth(i_logits)
    out = logits_cell.locator(".jp-OutputArea-output")
    expect(out).to_contain_text("✗ missing: not written yet", timeout=RUN_ALL)
    expect_colour(logits_cell, "fail", TODO)
    outputs = page.locator(".jp-NotebookPanel:not(.lm-mod-hidden) .jp-OutputArea-output")
    expect(outputs.filter(has_text="NotWritten")).to_have_count(1, timeout=RUN_ALL)
    page.wait_for_function(KERNEL_IDLE_JS, timeout=RUN_ALL)
    text = "\n".join(outputs.all_text_contents())
    assert len(re.findall(r"✗ missing: not written yet", text)) >= 40, text[:3000]
    assert "Traceback" not in text.replace("NotWritten", ""), text[-3000:]

    logits_cell.locator(".cm-content").click()
    page.keyboard.press("Control+a")
    page.keyboard.insert_text(
        "dlogits = F.softmax(logits, -1) - F.one_hot(Yb.clamp(min=0), vocab_size)\n"
        "dlogits = dlogits * (Yb >= 0).unsqueeze(-1) / n_targets\n"
        "cmp('logits', dlogits, logits)"
    )
    page.keyboard.press("Shift+Enter")
    expect(out).to_contain_text(
        re.compile(r"logits\s+\| exact: (True |False) \| approximate: True "), timeout=RUN_ONE
    )
    expect_colour(logits_cell, "pass", PASS)


NOTEBOOK_06 = "06-drills.ipynb"


def test_learner_draws_a_drill_in_notebook_06_and_its_hint_follows_the_mistake(lab, page):
    """Notebook 06 in the browser: Run All Cells draws the endless cell's drill, whose answer
    cell JupyterLab puts beneath it (``set_next_input``); a sign slipped in its first answer fails
    red and is named, and ``hint`` there gives that drill's first rung, which starts from it."""
    from playwright.sync_api import expect

    from checks.drills.build import draw

    nb, cells = run_all(lab, page, NOTEBOOK_06)

    # the last cell draws a drill: its code above, its answer cell put beneath it
    expect(cells).to_have_count(len(nb["cells"]) + 1, timeout=RUN_ALL)
    page.wait_for_function(KERNEL_IDLE_JS, timeout=RUN_ALL)
    shown = cells.nth(len(nb["cells"]) - 1).locator(".jp-OutputArea-output").first.inner_text()
    drawn = re.match(r"# drill\((?:'([\w-]+)', )?seed=(\d+)\)", shown)
    assert drawn, shown[:500]
    d = draw(int(drawn.group(2)), drawn.group(1))
    new = cells.nth(len(nb["cells"]))
    assert _editor_text(new) == d.answer_cell()

    # its first answer with the sign slipped, then a hint for it
    name = d.answers[0]
    right = d.solution().split("\n")[0].split(" = ", 1)[1]
    new.locator(".cm-content").click()
    page.keyboard.press("Control+a")
    page.keyboard.insert_text(
        f"d{name} = -({right})\ncmp('{name}', d{name}, {name})\nhint('{name}')"
    )
    page.keyboard.press("Shift+Enter")
    out = new.locator(".jp-Cell-outputArea")
    expect(out).to_contain_text("✗ sign:", timeout=RUN_ONE)
    expect(out).to_contain_text(f"d{name}: hint 1 of 3, the idea")
    expect(out).to_contain_text(f"Your last d{name} failed (sign)")
    check = new.locator(".jp-OutputArea-output .workbook-check")
    expect(check).to_have_class(re.compile(r"\bworkbook-fail\b"))
    expect(check).to_have_css("border-left-color", _rgb(FAIL))
    new.scroll_into_view_if_needed()
    new.screenshot(path=str(ARTIFACTS / "07-drill-hint.png"))
    page.wait_for_function(KERNEL_IDLE_JS, timeout=RUN_ONE)
