"""The HTML helpers every rendering shares: the state colours, escaping, numbers, and code in
backticks shown as ``<code>``.

One place for them, read by the check's own output (:mod:`checks.verdict`), the summary table
(:mod:`checks.overview`), the hints (:mod:`checks.hints`), the map and the heatmap
(:mod:`checks.render.draw`, :mod:`checks.render.heatmap`) and the feedback pages
(:mod:`checks.grading.feedback`). Pure Python; it imports nothing of the checks.
"""

from __future__ import annotations

import html
import re

# Colours that read on JupyterLab's light and dark themes alike (and in Colab and VS Code: inline
# styles only, no theme variables, no <style> element, no class that carries a look: the
# ``workbook-*`` classes are hooks for tests).
PASS, FAIL, TODO, NOTE = "#1a7f37", "#cf222e", "#8c959f", "#9a6700"
UPSTREAM = "#0969da"  # a right step on a wrong earlier answer: look elsewhere, not here
TINT = {
    PASS: "rgba(26,127,55,0.10)",
    FAIL: "rgba(207,34,46,0.10)",
    TODO: "rgba(140,149,159,0.12)",
    NOTE: "rgba(191,135,0,0.12)",
    UPSTREAM: "rgba(9,105,218,0.10)",
}
# a result's state (``Result.state``) -> its colour
COLOURS = {"pass": PASS, "note": NOTE, "upstream": UPSTREAM, "missing": TODO, "fail": FAIL}


def esc(text: object, quote: bool = True) -> str:
    """``text`` safe in an HTML or SVG element (and, with ``quote``, in an attribute)."""
    return html.escape(str(text), quote=quote)


def num(x: float, digits: int = 6) -> str:
    """A number with ``digits`` significant digits, as the messages write it."""
    return f"{x:.{digits}g}"


_TICKS = re.compile(r"`([^`]+)`")


def code_html(text: str) -> str:
    """Escaped text with `code` in backticks shown as <code>."""
    return _TICKS.sub(lambda m: f"<code>{m.group(1)}</code>", esc(text, quote=False))


def bold(colour: str, text: str) -> str:
    """``text`` (already HTML) in bold, in ``colour``."""
    return f"<span style='color:{colour};font-weight:bold'>{text}</span>"


# A table's look, all inline. JupyterLab's stylesheet styles a bare table in an output (cells
# right-aligned, a rule under the head, bold headers, striped rows); VS Code and Colab do not, so
# every cell says its alignment, padding and border, and every row its background. Greys with
# alpha read on light and dark themes alike.
RULE = "rgba(128,128,128,0.55)"  # under the head
STRIPE = "rgba(128,128,128,0.10)"  # every second row, as JupyterLab stripes them
TABLE = "border-collapse:collapse;border-spacing:0;border:none;margin:0 0 0.5em 0;text-align:left"
CELL = "padding:0.5em;border:none;line-height:normal"


def th(text: str, align: str = "left") -> str:
    """A header cell, ruled below."""
    return (
        f"<th style='text-align:{align};font-weight:bold;vertical-align:bottom;{CELL};"
        f"border-bottom:1px solid {RULE}'>{text}</th>"
    )


def td(content: str, align: str = "left", style: str = "") -> str:
    """A body cell."""
    return f"<td style='text-align:{align};vertical-align:middle;{CELL}{style}'>{content}</td>"


def tr(k: int, cells: str) -> str:
    """Row ``k`` (from 0) of the body: the first, third... plain, the others striped."""
    return f"<tr style='background:{STRIPE if k % 2 else 'transparent'}'>{cells}</tr>"
