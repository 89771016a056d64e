"""The summary of a kernel's checks: ``summary()`` and its table, :class:`Summary`, as plain
text and as HTML, with the hint rungs each check used, what the steps raced last cost
(``race()``: their time, operators and bytes against autograd's and the solution's) and, for
notebook 03, the network map.

It reads what :mod:`checks.session` remembers and :mod:`checks.hints` counts, and draws with
:mod:`checks.render`; it sits above them and below :mod:`checks.compare`, which re-exports its
names (``checks.summary``, ``checks.compare.Summary``).
"""

from __future__ import annotations

from checks import hints, kernel, session
from checks.render.draw import Drawing, makemore_graph
from checks.render.html import COLOURS, TABLE, TODO, code_html, esc, td, th, tr
from checks.verdict import Result

__all__ = ["Summary", "summary"]

COST = "What your steps cost, from the last race(): time, tensor operations and memory allocated"


class Summary:
    """Every check so far, and those declared with ``expect()`` but not run yet."""

    def __init__(self, notebook: str | None = None) -> None:
        self.rows = session.tried()
        ran = {r.name for r, _ in self.rows}
        self.unreached = [n for n in session.declared() if n not in ran]
        self.notebook = notebook
        self.race = session.last_race()  # a checks.races.Race, shown as it shows itself

    @property
    def passed(self) -> int:
        return sum(r.ok for r, _ in self.rows)

    @property
    def count(self) -> int:
        return len(self.rows) + len(self.unreached)

    def _tail(self) -> str:
        later = f" ({len(self.unreached)} not run yet)" if self.unreached else ""
        return f"{self.passed} / {self.count} checks pass{later}"

    def __str__(self) -> str:
        head = f"{'check':16s} {'status':14s} {'maxdiff':>10s} {'tries':>5s} {'hints':>5s}"
        lines = [head, "-" * len(head)]
        for r, tries in self.rows:
            md = "" if r.maxdiff is None else f"{r.maxdiff:.2g}"
            lines.append(
                f"{r.name:16s} {_mark(r) + ' ' + _status(r):14s} "
                f"{md:>10s} {tries:>5d} {_hints(r):>5s}"
            )
        lines += [f"{n:16s} {'· not run yet':14s}" for n in self.unreached]
        lines.append(self._tail())
        if self.race is not None:
            lines += ["", COST, str(self.race)]
        return "\n".join(lines)

    __repr__ = __str__

    def _repr_html_(self) -> str:
        rows = []
        for r, tries in self.rows:
            colour = COLOURS[r.state]
            md = "" if r.maxdiff is None else f"{r.maxdiff:.2g}"
            text = r.hint if not r.ok else "; ".join(f"{n.word}: {n.text}" for n in r.notes)
            rows.append(
                td(f"<code>{esc(r.name)}</code>")
                + td(
                    f"{_mark(r)} {esc(_status(r))}",
                    style=f";white-space:nowrap;color:{colour};font-weight:bold",
                )
                + td(md, "right")
                + td(str(tries), "right")
                + td(_hints(r), "right")
                + td(code_html(text or ""))
            )
        for n in self.unreached:
            rows.append(
                td(f"<code>{esc(n)}</code>")
                + td("· not run yet", style=f";white-space:nowrap;color:{TODO}")
                + td("", "right")
                + td("0", "right")
                + td("", "right")
                + td("")
            )
        head = (
            th("check")
            + th("status")
            + th("maxdiff", "right")
            + th("tries", "right")
            + th("hints", "right")
            + th("hint")
        )
        body = "".join(tr(k, row) for k, row in enumerate(rows))
        return (
            f"<table style='{TABLE}'><thead><tr style='background:transparent'>{head}</tr>"
            f"</thead><tbody>{body}</tbody></table>"
            f"<p style='margin:0 0 1em 0;text-align:left'>{self._tail()}</p>"
            + self.cost()
            + self.map()
        )

    def cost(self) -> str:
        """What the steps of the last ``race()`` cost, as its table shows it; "" without one."""
        if self.race is None:
            return ""
        return (
            f"<p style='margin:0;text-align:left'><b>{esc(COST)}</b></p>{self.race._repr_html_()}"
        )

    def map(self) -> str:
        """Notebook 03: the network as SVG, each node coloured by its check
        (``checks.render.draw``); a missing path drawn as a red edge. "" for other notebooks."""
        if not (self.notebook or "").startswith("03"):
            return ""
        nodes, edges = makemore_graph()
        results = {r.name: r for r, _ in self.rows}
        for node in nodes:
            r = results.get(node.id)
            if r is not None:
                node.state = r.state
                node.word = "" if r.ok or r.state == "missing" else (r.mistake or "fail")
                said = (
                    (r.hint or "") if not r.ok else ("; ".join(n.text for n in r.notes) or "pass")
                )
                node.tip = f"{node.tip}\n{r.status}: {said}" if node.tip else f"{r.status}: {said}"
            elif node.id in self.unreached:
                node.tip = "not run yet"
        for r in results.values():
            for use in r.missing_uses:
                for edge in edges:
                    if edge.src == r.name and edge.dst == use:
                        edge.state = "missing"
        return Drawing(nodes, edges, title="the network, coloured by your checks")._repr_html_()


def _hints(r: Result) -> str:
    """The rungs of ``r``'s hint ladder shown so far ("2", "3+solution"), "" for none."""
    try:
        shown, revealed = hints.used(r.name)
    except Exception:  # no ladders installed: nothing to count
        return ""
    return f"{shown}{'+solution' if revealed else ''}" if shown or revealed else ""


def _mark(r: Result) -> str:
    return "✓" if r.ok else "✗"


def _status(r: Result) -> str:
    if r.ok:
        return "pass, " + ", ".join(n.word for n in r.notes) if r.notes else "pass"
    return r.status


def summary(notebook: str | None = None, last: str | None = None) -> Summary:
    """Show every check run so far in this kernel with its status, and return the table.

    With ``notebook`` (say "01-scalar-autograd"), every check of that notebook counts, up to the
    one named ``last`` if given: those not run yet are listed as such (their names come from the
    executed solution's output).
    """
    if notebook:
        names = session.expected_checks(notebook)
        session.expect(*(names[: names.index(last) + 1] if last in names else names))
    table = Summary(notebook)
    if kernel.in_notebook():
        from IPython.display import display

        display(table)
    else:
        print(table)
    return _Quiet(table)


class _Quiet(Summary):
    """The shown summary as a return value that Jupyter does not echo a second time."""

    def __init__(self, table: Summary) -> None:
        self.rows, self.unreached, self.notebook = table.rows, table.unreached, table.notebook
        self.race = table.race

    def _ipython_display_(self) -> None:
        pass
