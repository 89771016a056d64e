"""A sealed grader: a class of learners who compute nothing by hand and try to earn points
otherwise (a hijacked recorder, solutions or reference values read from disk, writes where the
grader keeps things, processes that outlive the kernel, numbers pasted in, autograd, an answer kept
from an earlier hand-in), graded in one run beside honest learners. The attacks' code is in
``tests/attacks.py``."""

from __future__ import annotations

import collections
import csv
import dataclasses
import hashlib
import math
import os
import shutil
import site
import threading
import time
import uuid
from pathlib import Path
from types import SimpleNamespace

import nbformat
import pytest

from checks.authoring.student import ROOT
from checks.grading.cli import main
from checks.grading.grader import Grader, grade
from checks.grading.rows import FIELDS
from checks.grading.sandbox import bwrap
from tests import answers01 as t1
from tests import attacks
from tests.lecture_answers import LECTURE
from tests.notebooks import ANSWERS, fill
from tests.submissions import (
    CLASS,
    NAME,
    STUDENT,
    cell_with,
    filled,
    options,
    prepend,
    student_copy,
    substitute,
)

pytestmark = [
    pytest.mark.skipif(
        bwrap() is None,
        reason="no bubblewrap sandbox here: learner code "
        "would run as the user (and the write attacks hit the repository)",
    ),
    pytest.mark.slow,  # a class graded in the sandbox
]

# the settings of the other class fixtures: the session's reference runs and calibrations serve
SETTINGS = CLASS
NB01 = "01-scalar-autograd.ipynb"
HOME = Path.home().resolve()
MARK = f"sealed-{uuid.uuid4().hex[:12]}"  # in the files the attacks make, and the children's argv
POPEN_MARK, DAEMON_MARK = MARK + "-popen", MARK + "-daemon"
WATCHED = ("checks", "solutions", "notebooks")  # the repository's folders no learner may change

# the learners who write nothing by hand; the honest ones (one in place over earlier answers)
ATTACKERS = [
    "att01-recorder-hijack",
    "att02-grading-notebook",
    "att03-reference-cache",
    "att04-solutions",
    "att05-writes",
    "att06-detached-children",
    "att07-literals",
    "att08a-backward-again",
    "att08b-autograd-grad-helper",
    "att08c-autograd-unseen",
    "att08d-autograd-original",
    "att12-symlink",
]
HONEST = ["aaron-honest", "zelda-lecture", "att10-in-place", "yara-split-and-chatty"]


# ---------------------------------------------------------------- the class


def blank() -> nbformat.NotebookNode:
    return nbformat.read(STUDENT, as_version=4)


def forward_again(nb, backward: str) -> str:
    """The notebook's forward cell once more, with ``backward`` for its ``loss.backward()``."""
    return cell_with(nb, "logprobs = probs.log()").source.replace("loss.backward()", backward)


HIDDEN_AUTOGRAD = """
import checks.grading.recorder as _r
_quiet = _r.emit
_r.emit = lambda kind, **c: None if kind == "autograd" else _quiet(kind, **c)
_r.check_grads = lambda scope: None
_ag = getattr(torch.autograd, "gr" + "ad")
"""
ORIGINAL_AUTOGRAD = """
import checks.grading.recorder as _r
_ag = _r._ORIGINAL["torch.autograd.grad"]
"""


def with_hidden_autograd(code: str) -> nbformat.NotebookNode:
    """Autograd through a name the source check does not know, with the run-time watch switched
    off (``code`` sets ``_ag``) in the first answer cell."""
    nb = blank()
    setup = (
        forward_again(nb, "")
        + code
        + ("\ndef _of(x):\n    return _ag(loss, [x], retain_graph=True)[0]\n")
    )
    attacks.fill_top_level(nb, lambda name, k: f"_of({name[1:]})")
    return attacks.prepend_to_first_answer(nb, setup)


def with_autograd(helper: bool) -> nbformat.NotebookNode:
    """Every answer outside ``step()`` from autograd on a graph built again in the first answer
    cell: ``loss.backward()`` again and ``X.grad`` in each answer cell, or (``helper``)
    ``torch.autograd.grad`` in a function that the first answer cell defines."""
    nb = blank()
    if helper:
        helper_code = (
            "\n\ndef _autograd_of(x):\n"
            "    return torch.autograd.grad(loss, [x], retain_graph=True)[0]\n"
        )
        setup = forward_again(nb, "") + helper_code
        attacks.fill_top_level(nb, lambda name, k: f"_autograd_of({name[1:]})")
    else:
        setup = forward_again(nb, "loss.backward(retain_graph=True)")
        again = "try:\n    loss.backward(retain_graph=True)\nexcept RuntimeError:\n    pass\n"
        for cell, _ in attacks.answer_cells(nb):
            if attacks.PLACEHOLDER.search(cell.source):
                cell.source = again + cell.source
        attacks.fill_top_level(nb, lambda name, k: f"{name[1:]}.grad")
    return attacks.prepend_to_first_answer(nb, setup)


NB01_LITERAL = [
    "ex1/dd",
    "ex1/de",
    "ex1/dc",
    "ex1/da",
    "ex1/db",
    "ex1/df",
    "ex2/dy",
    "ex2/du",
    "ex2/dx",
    "ex2/da",
    "ex2/da#2",
]


def nb01_literals() -> nbformat.NotebookNode:
    """Notebook 01 filled in, with the numbers of its default inputs for sections 1 and 2."""
    y = math.tanh(1.5 * 0.5)
    numbers = {
        "dd": [-2.0],
        "de": [-2.0],
        "dc": [-2.0],
        "da": [6.0, -1.0, 6.0],
        "db": [-4.0],
        "df": [4.0],
        "dy": [2 * y],
        "du": [2 * y * (1 - y**2)],
        "dx": [3 * y * (1 - y**2)],
    }
    answers = {**t1.ANSWERS, **{k: [repr(x) for x in v] for k, v in numbers.items()}}
    return t1.fill_value_class(fill(t1.read("notebooks"), answers))


def created(out: Path, cache: Path) -> list[str]:
    """The files the write attack tries to create."""
    paths = [
        cache / f"{MARK}.pt",
        HOME / f"{MARK}.txt",
        ROOT / "checks" / f"{MARK}.py",
        ROOT / "checks" / "__pycache__" / f"{MARK}.pyc",
        ROOT / "data" / f"{MARK}.txt",
        Path(site.getsitepackages()[0]) / f"{MARK}.pth",
        out / ".done" / f"{MARK}.json",
        Path("/tmp") / f"{MARK}.txt",
    ]
    return list(map(str, paths))


def marker_folders(out: Path) -> list[Path]:
    """Where the detached children try to leave a marker file."""
    return [out, HOME, Path("/tmp"), ROOT]


def make_class(root: Path, out: Path, cache: Path, reference_files: list[Path]) -> dict[str, Path]:
    subs = {}

    def save(name, nb, notebook=NAME):
        (root / name).mkdir()
        nbformat.write(nb, root / name / notebook)
        subs[name] = root / name

    first = attacks.prepend_to_first_answer
    kept = [str(cache), str(out / ".reference")]  # where this grader keeps them, and the default
    save("aaron-honest", filled())
    save("att01-recorder-hijack", first(blank(), attacks.HIJACK))
    save(
        "att02-grading-notebook",
        first(attacks.guard_every_answer_cell(blank()), attacks.read_grading_notebook(str(out))),
    )
    save(
        "att03-reference-cache",
        first(attacks.guard_every_answer_cell(blank()), attacks.read_reference_cache(kept)),
    )
    save(
        "att04-solutions",
        first(attacks.guard_every_answer_cell(blank()), attacks.read_solutions(str(ROOT))),
    )
    targets = [
        ROOT / "solutions" / NAME,
        ROOT / "checks" / "compare.py",
        ROOT / "notebooks" / NAME,
        *reference_files,
        out / "grades.csv",
        out / "totals.csv",
    ]
    writes = attacks.write_everything(list(map(str, targets)), created(out, cache), MARK)
    save("att05-writes", first(blank(), writes))
    places = list(map(str, marker_folders(out)))
    loop = attacks.child_loop(str(out), places, "att06-detached-children")
    children = attacks.detached_children(loop, POPEN_MARK, DAEMON_MARK)
    save("att06-detached-children", first(blank(), children))
    numbers = attacks.default_gradients()
    literals = attacks.fill_top_level(blank(), lambda name, k: attacks.literal(numbers[name]))
    save("att07-literals", literals)
    save("att08a-backward-again", with_autograd(helper=False))
    save("att08b-autograd-grad-helper", with_autograd(helper=True))
    save("att08c-autograd-unseen", with_hidden_autograd(HIDDEN_AUTOGRAD))
    save("att08d-autograd-original", with_hidden_autograd(ORIGINAL_AUTOGRAD))
    a = ANSWERS
    stash = filled(dlogits=[a["dlogits"][0], "_kept", a["dlogits"][2]])
    save("att09-stash", prepend(stash, "cmp('h'", "_kept = dlogits.clone()  # just handed in"))
    save(
        "att10-in-place",
        filled(  # right answers, computed in place in the answer before
            dlogits=[
                "dnorm_logits\ndlogits += (logits == logit_maxes).float() * dlogit_maxes",
                *a["dlogits"][1:],
            ],
            dhpreact=["dh\ndhpreact *= 1 - h**2", a["dhpreact"][1]],
            dbndiff=["dbnraw\ndbndiff *= bnvar_inv\ndbndiff += 2 * bndiff * dbndiff2"],
            dhprebn=["dbndiff\ndhprebn += dbnmeani / n", *a["dhprebn"][1:]],
        ),
    )
    save("att11-nb01-literals", nb01_literals(), NB01)
    (root / "att12-symlink").mkdir()  # the solution itself, through a link
    (root / "att12-symlink" / NAME).symlink_to(ROOT / "solutions" / NAME)
    subs["att12-symlink"] = root / "att12-symlink"
    save("yara-split-and-chatty", split_and_chatty(filled()))
    save("att13-routes", attacks.with_routes(filled()))  # autograd by other routes, per answer
    # the lecture's own answers, after every attacker: never held (the run-time watch included)
    save("zelda-lecture", substitute(student_copy(), LECTURE))
    return subs


def split_and_chatty(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """Honest work laid out freely: the dh, dW2, db2 cell split into three cells (the new ones
    with ids of their own, as Jupyter's split makes them), and a cell that displays 3,000 times
    added after the first answer."""
    k = next(i for i, c in enumerate(nb.cells) if "cmp('h'" in c.source)
    lines = nb.cells[k].source.split("\n")
    answers = [ln for ln in lines if not ln.startswith("cmp(")]
    checks = [ln for ln in lines if ln.startswith("cmp(")]
    parts = [nbformat.v4.new_code_cell(f"{a}\n{c}") for a, c in zip(answers, checks, strict=True)]
    parts[0]["id"] = nb.cells[k]["id"]
    nb.cells[k : k + 1] = parts
    k = next(i for i, c in enumerate(nb.cells) if "cmp('logprobs'" in c.source)
    chatty = "from IPython.display import display\nfor i in range(3000):\n    display(i)"
    nb.cells.insert(k + 1, nbformat.v4.new_code_cell(chatty))
    return nb


def fingerprint(reference_files: list[Path]) -> dict[str, str]:
    """sha256 of every file the learners must not change (compiled bytecode aside): the
    repository's and this class's reference values (the session's cache holds other graders'
    files, made and read while this class is graded)."""
    files = [p for d in WATCHED for p in (ROOT / d).rglob("*") if "__pycache__" not in p.parts]
    files += reference_files
    return {
        str(p): hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(files) if p.is_file()
    }


def marked_processes() -> dict[int, str]:
    """The processes whose command line holds this run's marker."""
    found = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                cmd = (entry / "cmdline").read_bytes()
            except OSError:
                continue
            if MARK.encode() in cmd:
                found[int(entry.name)] = cmd.replace(b"\0", b" ").decode(errors="replace")[-120:]
    return found


@pytest.fixture(scope="module")
def sealed(tmp_path_factory, reference_cache):
    root = tmp_path_factory.mktemp("sealed-submissions")
    out = tmp_path_factory.mktemp("sealed-grades").resolve()
    cache = reference_cache.resolve()
    grader = Grader(out, dataclasses.replace(SETTINGS, sandbox="none"), cache=cache)
    graded = [ex for ex in grader.exercises.values() if ex.name in (NAME, NB01)]
    for ex in graded:  # the reference values are there before any learner runs
        grader.reference(ex)
    reference_files = [grader.cache_of(ex) for ex in graded]
    subs = make_class(root, out, cache, reference_files)
    before = fingerprint(reference_files)
    seen: dict[int, str] = {}
    stop = threading.Event()

    def watch():  # the children, seen alive while the class is graded: the attack did start them
        while not stop.wait(0.25):
            seen.update(marked_processes())

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    log: list[str] = []
    started = time.monotonic()
    try:
        rows = grade(list(subs.values()), out, SETTINGS, progress=log.append, cache=cache)
    finally:
        stop.set()
        watcher.join()
    seconds = time.monotonic() - started
    time.sleep(1.0)  # a child that got out would have rewritten totals.csv by now
    after = fingerprint(reference_files)
    alive = marked_processes()
    markers = [f / f"{m}.txt" for f in marker_folders(out) for m in (POPEN_MARK, DAEMON_MARK)]
    left = [p for p in [*map(Path, created(out, cache)), *markers] if p.exists()]
    changed = sorted(p for p in set(before) | set(after) if before.get(p) != after.get(p))
    with open(out / "totals.csv") as f:
        totals = list(csv.DictReader(f))
    with open(out / "grades.csv") as f:
        table = list(csv.DictReader(f))
    yield SimpleNamespace(
        subs=subs,
        out=out,
        cache=cache,
        reference_files=reference_files,
        rows=rows,
        log=log,
        seconds=seconds,
        seen=seen,
        alive=alive,
        left=left,
        changed=changed,
        totals=totals,
        table=table,
    )
    _clean_up(alive, left, changed)


def _clean_up(alive: dict[int, str], left: list[Path], changed: list[str]) -> None:
    """Undo what an attack that got through did (only what carries this run's marker)."""
    for pid in alive:
        try:
            os.kill(pid, 9)
        except OSError:
            pass
    for p in left:
        p.unlink(missing_ok=True)
    tail = f"\n# {MARK}\n".encode()
    for name in changed:
        p = Path(name)
        if p.is_file() and p.read_bytes().endswith(tail):
            p.write_bytes(p.read_bytes()[: -len(tail)])


def rows_of(sealed, sub: str, notebook: str = NAME) -> dict[str, dict]:
    return {r.check: r for r in sealed.rows if r.submission == sub and r.notebook == notebook}


def passed(rows: dict[str, dict]) -> dict[str, str]:
    """The checks that passed, with what the grader said (for the assertion message)."""
    return {c: f"{r.mistake} {r.reason} {r.note}".strip() for c, r in rows.items() if r.passed}


def not_passed(rows: dict[str, dict]) -> dict[str, str]:
    return {c: f"{r.mistake}: {r.reason} {r.note}".strip() for c, r in rows.items() if not r.passed}


# ---------------------------------------------------------------- the tests


def test_the_class_is_graded_in_one_run_in_the_sandbox(sealed):
    assert {r.submission for r in sealed.rows} == set(sealed.subs)
    assert sum(line.startswith("[") for line in sealed.log) == len(sealed.subs), sealed.log
    assert not any("no sandbox" in line for line in sealed.log), sealed.log


@pytest.mark.parametrize("sub", HONEST)
def test_honest_learners_get_every_point(sealed, sub):
    """Before and after the attackers, and with answers computed in place in the answer before."""
    mine = rows_of(sealed, sub)
    assert len(mine) == 35 and not not_passed(mine), not_passed(mine)
    held = {c: r.note for c, r in mine.items() if "review" in (r.mistake, r.note)}
    assert not held, held


@pytest.mark.parametrize("sub", ATTACKERS)
def test_no_attacker_earns_a_point(sealed, sub):
    mine = rows_of(sealed, sub)
    assert len(mine) == 35, sorted(mine)
    assert not passed(mine), passed(mine)


def test_a_hijacked_recorder_sends_nothing_that_counts(sealed):
    """1. ``checks.grading.recorder.record`` and ``emit`` replaced, and a thread that sends every 20
    ms."""
    mine = rows_of(sealed, "att01-recorder-hijack")
    assert not passed(mine), passed(mine)
    words = {r.mistake for c, r in mine.items() if not c.startswith("ex4/")}
    assert words <= {"missing", "review"}, not_passed(mine)  # the cell reaches around: review


def test_reading_the_grading_notebook_finds_no_solution(sealed):
    """2. Notebooks near the kernel, in /tmp, in /proc/*/cwd and in the out folder."""
    mine = rows_of(sealed, "att02-grading-notebook")
    assert not passed(mine), passed(mine)
    assert {r.mistake for r in mine.values()} <= {"missing", "review"}, not_passed(mine)
    # (step() raises NotWritten)
    raised = {
        c: f"{r.reason} {r.note}"
        for c, r in mine.items()
        if "also raised" in r.note or "Error" in r.reason
    }
    assert not raised, raised  # the search ran in its try: no error left the cell


def test_the_reference_values_are_out_of_reach(sealed):
    """3. The reference values in the grader's cache, in ``.reference/`` under the out folder and
    anywhere under ``/``."""
    mine = rows_of(sealed, "att03-reference-cache")
    assert not passed(mine), passed(mine)


def test_the_solutions_are_out_of_reach(sealed):
    """4. ``solutions/`` beside the ``checks`` package and at the repository's real path."""
    mine = rows_of(sealed, "att04-solutions")
    assert not passed(mine), passed(mine)


def test_the_reading_attacks_work_where_the_files_can_be_read(sealed):
    """Run in the grader's own process, the search code of attacks 3 and 4 does find the
    reference values and the solutions: what stops them in the class run is the sandbox."""
    ns: dict = {}
    exec(attacks.read_reference_cache([str(sealed.cache)], seconds=0), ns)
    assert set(attacks.CHECKS) <= set(ns["_REF"])
    ns = {}
    exec(attacks.read_solutions(str(ROOT)), ns)
    assert {cell.get("id") for cell, _ in attacks.answer_cells(blank())} <= set(ns["_SOLVED"])


def test_nothing_the_grader_keeps_can_be_written(sealed):
    """5. Overwrites of the solutions, checks/, the reference values, grades.csv and totals.csv;
    new files in the home, checks/, data/, site-packages and the out folder."""
    assert not sealed.changed, sealed.changed
    assert not sealed.left, sealed.left
    assert not passed(rows_of(sealed, "att05-writes"))
    ordered = sorted(sealed.rows, key=lambda r: (r.submission, r.notebook))
    # the grader's rows
    assert sealed.table == [dict(zip(FIELDS, r.cells(), strict=True)) for r in ordered]


def test_no_process_outlives_its_kernel(sealed):
    """6. A child in a session of its own and a double-forked daemon that rewrite totals.csv."""
    started = " ".join(sealed.seen.values())
    assert POPEN_MARK in started and DAEMON_MARK in started, sealed.seen  # they did run
    assert not sealed.alive, sealed.alive
    assert not [p for p in sealed.left if MARK in p.name], sealed.left
    count = collections.Counter()
    for r in sealed.rows:
        count[r.submission, r.notebook] += r.passed
    totals = {(t["submission"], t["notebook"]): int(t["passed"]) for t in sealed.totals}
    assert totals == dict(count), totals  # the grader's scores, not the children's
    assert not passed(rows_of(sealed, "att06-detached-children"))


def test_numbers_for_the_default_seed_and_batch_fail(sealed):
    """7. Autograd's numbers for the notebook's own seed and batch 32, pasted in as literals
    (``db1`` is about zero for every seed and batch, b1 coming right before batch norm: pasted
    numbers match it, and are for review)."""
    mine = rows_of(sealed, "att07-literals")
    assert not passed(mine), passed(mine)
    words = {r.mistake for c, r in mine.items() if not c.startswith("ex4/")}
    assert words <= {"shape", "wrong", "review"}, not_passed(mine)


@pytest.mark.parametrize("sub", ["att08a-backward-again", "att08b-autograd-grad-helper"])
def test_autograd_answers_are_not_credited(sealed, sub):
    """8. A right value from autograd, and a copy of ``X.grad``, are rows for review."""
    mine = rows_of(sealed, sub)
    assert not passed(mine), passed(mine)
    unmarked = {
        c: f"{r.mistake}: {r.reason} {r.note}"
        for c, r in mine.items()
        if not c.startswith("ex4/")  # every answer outside step() came from autograd
        and r.mistake != "review"
    }
    assert not unmarked, unmarked


@pytest.mark.parametrize("sub", ["att08c-autograd-unseen", "att08d-autograd-original"])
def test_autograd_behind_a_switched_off_watch_is_for_review(sealed, sub):
    """8c/d. The run-time watch switched off from the kernel (``checks.grading.recorder`` patched,
    or its unwrapped original used): the source says so, and every check from that cell on is looked
    at."""
    mine = rows_of(sealed, sub)
    assert not passed(mine), passed(mine)
    reviewed = {c for c, r in mine.items() if r.mistake == "review"}
    assert reviewed and all(
        "reaches around what the grader can read" in mine[c].reason
        or "what an answer may not" in mine[c].reason
        for c in reviewed
    ), not_passed(mine)
    assert {c for c, r in mine.items() if r.note == "the value matches"} <= reviewed


def test_the_out_folder_keeps_no_solution(sealed):
    """The reference run's notebook holds the solutions: it is not left in the out folder."""
    found = [
        p
        for p in sealed.out.rglob("*")
        if p.is_file() and p.suffix != ".pt" and b"### BEGIN SOLUTION" in p.read_bytes()
    ]
    assert not found, found
    assert not list((sealed.out / ".work").glob("reference-*"))


def test_an_answer_kept_from_an_earlier_hand_in_is_for_review(sealed):
    """9. Exercise 1's ``dlogits``, as the grader handed it in, kept for exercise 2."""
    mine = rows_of(sealed, "att09-stash")
    assert set(not_passed(mine)) == {"ex2/dlogits"}, not_passed(mine)
    row = mine["ex2/dlogits"]
    assert row.mistake == "review" and "bit for bit, the `dlogits`" in row.reason, row


def test_literal_answers_in_notebook_01_fail(sealed):
    """11. Notebook 01 with the numbers of its default inputs in sections 1 and 2."""
    from checks.inputs import drawn

    with pytest.MonkeyPatch.context() as mp:  # the grader's inputs differ from the defaults
        mp.setenv("WORKBOOK_SEED", str(SETTINGS.seed))
        inputs = [*drawn(2.0, -3.0, 10.0, -2.0), drawn(0.5), *drawn(3.0, -2.0), drawn(3.0)]
    defaults = [2.0, -3.0, 10.0, -2.0, 0.5, 3.0, -2.0, 3.0]
    assert all(x != d for x, d in zip(inputs, defaults, strict=True)), inputs
    mine = rows_of(sealed, "att11-nb01-literals", NB01)
    assert set(not_passed(mine)) == set(NB01_LITERAL), not_passed(mine)
    assert len(mine) > len(NB01_LITERAL)  # the rest, written honestly, passes


def test_self_check_of_the_hijacked_recorder_fails(sealed, tmp_path, monkeypatch, capsys):
    """12. ``--self --fail-under 1.0`` on attack 1's notebook."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    cache = tmp_path / "cache" / "backprop-workbook" / "reference"
    cache.mkdir(parents=True)
    for p in sealed.reference_files:  # the same seed, batch and steps: no second run
        shutil.copy(p, cache / p.name)
    path = sealed.subs["att01-recorder-hijack"] / NAME
    args = [*options(SETTINGS), "--jobs", "1"]
    assert main(["--self", str(path), "--fail-under", "1.0", *args]) == 1
    shown = capsys.readouterr()
    assert "0 / 35 checks pass" in shown.out, shown.out
    assert "from the cache" in shown.err, shown.err


def test_a_notebook_that_is_a_link_to_the_solution_is_refused_unread(sealed):
    """12. The submission's notebook a symbolic link to ``solutions/``: refused with a reason."""
    mine = rows_of(sealed, "att12-symlink")
    assert {r.reason for r in mine.values()} == {
        "not graded: the notebook is a symbolic link; hand in the file itself"
    }


def test_a_split_answer_and_a_chatty_cell_are_graded_whole(sealed):
    """Honest work laid out freely: the split cell's three answers pass, and the chatty cell's
    outputs are cut in the kernel (its checks' rows say so) instead of timing the cell out."""
    mine = rows_of(sealed, "yara-split-and-chatty")
    assert all(mine[c].passed for c in ("ex1/dh", "ex1/dW2", "ex1/db2"))
    assert "the grader cut" in mine["ex1/dlogprobs"].note, mine["ex1/dlogprobs"]


def test_autograd_by_any_route_is_for_review(sealed):
    """13. ``torch.ops`` backward kernels, ``torch.func`` by an alias, strings, the engine...: each
    answer of ``attacks.ROUTES`` is a row for review, held by the run-time watch alone (the
    grader's reading of the source does not know these routes)."""
    mine = rows_of(sealed, "att13-routes")
    routed = {f"ex1/{answer}" for answer in attacks.ROUTES}
    assert routed <= set(mine), sorted(routed - set(mine))
    assert {mine[c].mistake for c in routed} == {"review"}, {c: mine[c].reason for c in routed}
    assert not set(passed(mine)) & routed
