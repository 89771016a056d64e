"""Drills (checks/drills/): drawn from a seed, reproducible, and right by construction: the
generator's own answers match autograd and pass ``cmp``; a dropped path is caught and named."""

from __future__ import annotations

import contextlib
import io
import re
from collections import Counter

import pytest
import torch
from hypothesis import HealthCheck, assume, example, given, settings
from hypothesis import strategies as st

import checks
from checks.drills.build import FOCUSES, TABLES, draw
from checks.drills.ladder import ladders
from tests.drills import checked, run_answers, slipped, solved

SEEDS = st.integers(0, 2**31 - 1)


def test_a_thousand_drills_answers_match_autograd():
    """The rules of every operation, every broadcast and reduction, and the sums of paths: the
    generator's answers for seeds 0..999 against autograd's gradients, finite and allclose; every
    operation of the library among them."""
    used = set()
    for seed in range(1000):
        d = draw(seed)
        used |= {s.op.name for s in d.steps}
        ns = solved(d)
        assert 2 <= len(d.steps) <= 6 and all(2 <= s <= 8 for s in d.shapes["x"]), seed
        for name in d.answers:
            want, got = ns[name].grad, ns[f"d{name}"]
            assert torch.isfinite(want).all(), (seed, name)
            assert got.shape == want.shape and torch.allclose(got, want), (seed, name)
    assert used == {op.name for ops in TABLES.values() for op in ops.values()}


@settings(deadline=None, max_examples=1000, suppress_health_check=[HealthCheck.too_slow])
@given(seed=SEEDS)
def test_the_generators_answers_pass_cmp(seed):
    d, results, _ = run_answers(seed, draw(seed).solution())
    failed = {n: (r.mistake, r.hint) for n, r in results.items() if not r.ok}
    assert not failed, (seed, failed)
    assert list(results) == d.answers


@settings(deadline=None, max_examples=200, suppress_health_check=[HealthCheck.too_slow])
@given(seed=SEEDS)
# what another reading's numbers also fit: with the other tensor in the gradient's place (a norm's
# output, whose own path then adds zero), with a square gradient from above transposed
@example(seed=198)
@example(seed=2097)
# the term kept is minus the whole (``h5 = h4 / h3`` with ``h4 = h3**2``): the negative of the
# right answer, and still a path left out
@example(seed=5147426)
def test_a_dropped_path_is_caught_and_named(seed):
    """A tensor that feeds several steps, its gradient given only the first contribution: the check
    fails and says ``missing-path``, even where the part kept is a constant multiple of the whole
    (``x * x``) or equals another explanation's numbers."""
    solution = draw(seed).solution().split("\n")
    summed = [k for k, line in enumerate(solution) if ") + (" in line]
    if not summed:
        return
    lhs, rhs = solution[summed[0]].split(" = ", 1)
    solution[summed[0]] = f"{lhs} = {rhs.split(') + (')[0]})"
    _, results, ns = run_answers(seed, "\n".join(solution))
    name = lhs[1:]
    r = results[name]
    # a path whose contribution is zero (a relu off everywhere) dropped: still the right answer
    assume(not torch.allclose(ns[lhs], ns[name].grad))
    assert not r.ok, (seed, name)
    assert r.mistake == "missing-path", (seed, r)


FORWARD = """
import torch
from checks import cmp
g = torch.Generator().manual_seed(5)
x = torch.randn(4, 3, generator=g, dtype=torch.float64, requires_grad=True)
p = (torch.rand(4, 1, generator=g, dtype=torch.float64) + 0.5).requires_grad_()
W = torch.randn(3, 3, generator=g, dtype=torch.float64, requires_grad=True)
u = torch.randn(4, 3, generator=g, dtype=torch.float64)
{steps}
loss = (h * u).sum()
for t in [{names}]:
    t.retain_grad()
loss.backward(retain_graph=True)
"""

# a tensor used by several steps, its gradient given the first contribution only, where the
# numbers also fit another explanation, or where another rule cannot be worked out
LEFT_OUT = {
    "three equal uses (a third of the gradient)": (
        "a = x * p\nb = a * x\nh = b * x",
        "dh = u\ndb = x * dh\nda = x * db\ndx = b * dh",
        "x",
    ),
    "the direct use equals another operand's rule": (
        "a = x.sum(1, keepdim=True)\nb = a / p\nc = b + p\nh = c * a",
        "dh = u\ndc = a * dh\nda = (c * dh).sum(1, keepdim=True)",
        "a",
    ),
    "a softmax's path (its local derivative alone sums to zero, as the path left out does)": (
        "a = x @ W\nb = torch.softmax(a, -1)\nh = b * a",
        "dh = u\ndb = a * dh\nda = b * dh",
        "a",
    ),
    "a square gradient from above, transposed, adds nothing (a variance's rows sum to zero)": (
        "r = x[0] * 1.0\na = W + r\nb = a.var(1)\nh = b * r",
        "dh = u.sum(0)\ndb = r * dh\nda = 2 * (a - a.mean(1, keepdim=True)) / 2 * db.unsqueeze(1)"
        "\ndr = b * dh",
        "r",
    ),
    "a product whose other operands do not fit": (
        "a = x.sum(0, keepdim=True)\nb = a @ W\nh = b * a",
        "dh = u\ndb = a * dh\nda = (b * dh).sum(0, keepdim=True)",
        "a",
    ),
}


@pytest.mark.parametrize("case", sorted(LEFT_OUT))
def test_a_path_left_out_is_named_whatever_else_the_numbers_fit(case):
    steps, answers, name = LEFT_OUT[case]
    made = [line.split(" = ")[0] for line in steps.split("\n")]
    forward = FORWARD.format(steps=steps, names=", ".join(made))
    results, _ = checked(forward, answers, [name])
    assert results[name].mistake == "missing-path", (case, results[name])


@pytest.fixture
def fresh():
    """A kernel with no check run yet (``drill()`` reads the session's failing checks)."""
    checks.reset()
    yield
    checks.reset()


def test_drill_runs_where_it_is_called_shows_its_code_and_prints_the_answer_cell(fresh):
    """Called at a notebook's top level (here: code run in a namespace of its own), the drill's
    tensors become that namespace's variables, with autograd's gradients in them."""
    out, ns = io.StringIO(), {}
    with contextlib.redirect_stdout(out):
        exec("from checks import drill\nd = drill(seed=7)", ns)
    shown, d = out.getvalue(), ns["d"]
    assert "manual_seed(7)" in shown and "loss.backward(retain_graph=True)" in shown
    assert all(f"d{n} = ...\ncmp('{n}', d{n}, {n})" in shown for n in d.answers)
    assert ns["loss"].ndim == 0 and all(ns[n].grad is not None for n in d.answers)
    again = draw(7)
    assert again.forward_code() == d.forward_code() and again.solution() == d.solution()
    out = io.StringIO()  # cell=False: the notebook holds the answer cell (06's first drill)
    with contextlib.redirect_stdout(out):
        exec("d = drill(seed=7, cell=False)", ns)
    assert "manual_seed(7)" in out.getvalue() and "cmp('" not in out.getvalue()


def test_a_drill_without_a_seed_draws_one_and_shows_it(fresh):
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        d = checks.drill()
    assert f"manual_seed({d.seed})" in out.getvalue()


def test_a_bad_seed_is_a_sentence_not_a_traceback(fresh):
    for bad in ("abc", -1, 2.5, True, ...):
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            assert checks.drill(seed=bad) is None
        assert out.getvalue().startswith("drill(seed=...) takes a whole number"), bad


@pytest.mark.parametrize("focus", FOCUSES)
def test_a_drill_for_a_mistake_holds_a_step_where_it_is_made(focus):
    """``drill(word)``: a step whose rule a slip of that kind breaks (a tensor used a second time
    for missing-path), its answers still autograd's, for a hundred seeds of each word."""
    for seed in range(100):
        d = draw(seed, focus)
        uses = Counter(name for step in d.steps for name in step.operands)
        held = max(uses.values()) >= 2 if focus == "missing-path" else None
        assert held or any(focus in step.op.teaches for step in d.steps), (focus, seed)
        ns = solved(d)
        assert all(torch.allclose(ns[f"d{n}"], ns[n].grad) for n in d.answers), (focus, seed)
        assert d.forward_code().startswith(f"# drill({focus!r}, seed={seed})")


@settings(deadline=None, max_examples=200, suppress_health_check=[HealthCheck.too_slow])
@given(seed=SEEDS, focus=st.sampled_from(FOCUSES))
def test_a_focused_drills_answers_pass_cmp(seed, focus):
    d = draw(seed, focus)
    results, _ = checked(d.forward_code(), d.solution(), d.answers)
    assert all(r.ok for r in results.values()), (seed, focus, results)


def test_an_unknown_mistake_word_gets_the_list_of_words(fresh):
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert checks.drill("keepdims") is None
    said = out.getvalue().strip()
    assert "\n" not in said and said.startswith("there is no drill for 'keepdims'")
    assert all(word in said for word in FOCUSES)


def test_a_drill_without_a_word_is_for_the_mistake_of_a_failing_check(fresh):
    """A learner whose checks named ``transpose`` twice and ``sign`` once gets a drill for
    ``transpose``; once nothing fails, a drill for no word in particular."""
    forward = FORWARD.format(steps="a = x @ W\nh = torch.tanh(a)", names="a, h")
    answers = (
        "dh = u\nda = (1 - h**2) * dh\n"
        "cmp('a', -da, a)\ncmp('W', da.T @ x, W)\ncmp('x', (da @ W.T).T, x)"
    )
    ns: dict = {}
    with contextlib.redirect_stdout(io.StringIO()):
        exec(compile(f"{forward}\n{answers}", "<answers>", "exec"), ns)
        words = [r.mistake for r in checks.results()]
        assert words == ["sign", "transpose", "transpose"], words
        assert checks.drill(seed=1).focus == "transpose"
        checks.reset()
        assert checks.drill(seed=1).focus is None


# the catalogued slips (``Op.slips``) that the checks name today; "local" (another function's
# slope) is caught, but on a drill's few entries the slope's shape cannot always be told
NAMED = ("accumulate", "bessel", "chain", "operand", "scale", "shape", "sign", "transpose")


@pytest.mark.parametrize("word", [w for w in FOCUSES if w != "missing-path"])
def test_each_catalogued_slip_in_a_drill_for_it_is_caught(word):
    """Forty drills for each word (a path left out: test_a_dropped_path_is_caught_and_named), the
    slip made at their first step that teaches it: the check of that gradient fails (or, for a
    row's size-1 axis dropped, passes with its keepdim note; a column's fails as ``shape``, saying
    keepdim=True), and for the words in ``NAMED`` says that word; at least ten of the forty hold
    such a slip."""
    made = 0
    for seed in range(40):
        found = slipped(draw(seed, word), word)
        if found is None:
            continue
        made += 1
        name, results, ns = found
        r, mine, right = results[name], ns[f"d{name}"], ns[name].grad
        if mine.shape == right.shape and torch.allclose(mine, right):
            continue  # the slip changes nothing here (a mean over an axis of size 1)
        if word == "keepdim" and not r.ok:  # a column's axis dropped: a shape that says so
            assert r.mistake == "shape" and "keepdim=True" in r.hint, (seed, r)
            continue
        if r.ok:  # values right, a row's leading size-1 axis dropped: a pass, noted
            assert word in ("shape", "keepdim"), (word, seed, r)
            assert [n.word for n in r.notes] == ["keepdim"], (word, seed, r)
            continue
        assert word not in NAMED or r.mistake == word, (word, seed, r.mistake, r.hint)
    assert made >= 10, (word, made)


def test_exactly_the_negative_is_sign_whatever_other_gradient_it_equals():
    """Two subtractions in a row: ``dp3`` written without its minus is also what the rule gives
    with ``dp4`` in place of the gradient arriving from above; the plainer reading, a sign, wins."""
    forward = "\n".join(
        [
            "import torch",
            "from checks import cmp",
            "g = torch.Generator().manual_seed(2)",
            *(
                f"{n} = torch.randn({dims}, generator=g, dtype=torch.float64, requires_grad=True)"
                for n, dims in (("x", "5, 4"), ("p3", "5, 1"), ("p4", "5, 1"))
            ),
            "u = torch.randn(5, 1, generator=g, dtype=torch.float64)",
            "h2 = x.sum(1, keepdim=True)\nh3 = h2 - p3\nh4 = h3 - p4",
            "loss = (h4 * u).sum()",
            "for t in [h2, h3, h4]:\n    t.retain_grad()",
            "loss.backward()",
        ]
    )
    answers = "dh4 = u\ndh3 = dh4\ndh2 = dh3\ndp4 = -dh4\ndp3 = dh3"
    results, _ = checked(forward, answers, ["h4", "h3", "h2", "p4", "p3"])
    assert [r.ok for r in results.values()] == [True] * 4 + [False]
    assert results["p3"].mistake == "sign", results["p3"]


def test_a_kernel_that_runs_drill_after_drill_keeps_only_the_live_answers(fresh):
    """Each check keeps a copy of the answer for later checks' upstream tracing; once a drill's
    tensors are gone (the next drill replaced them), their copies go too, so that checks stay as
    fast as the first and the kernel's memory does not grow with practice. (What the heap's
    freezes hold, the tensors alive at a freeze, stays: it does not grow with the drills.)"""
    import gc

    from checks import session

    def others_kept(seeds: range) -> int:
        for seed in seeds:
            d = draw(seed)
            results, ns = checked(d.forward_code(), d.solution(), d.answers)
            assert all(r.ok for r in results.values()), seed
            gc.collect()
        live = session.remembered()
        assert {id(ns[name]) for name in d.answers} <= {id(t) for t, *_ in live}
        return len(session._ANSWERS) - len(d.answers)

    after_15 = others_kept(range(15))
    assert others_kept(range(15, 45)) <= after_15  # 82 and 252 when the copies stayed


def test_every_drills_ladder_climbs_to_its_own_solution():
    """A thousand drills: each gradient asked for has a ladder of three rungs (the idea, the local
    derivative, a skeleton) and the solution; the skeleton is the solution with blanks (every
    ``____`` stands for some code, the rest written as the solution writes it), and one with no
    blank passes gradients on unchanged; the idea names every step that uses the tensor."""
    for seed in range(1000):
        d = draw(seed)
        made = ladders(d)
        assert list(made) == [f"d{n}" for n in d.answers], seed
        for name in d.answers:
            [lad] = made[f"d{name}"]
            idea, slope, skeleton = lad["rungs"]
            assert lad["check"] == name and "{" not in idea + slope, (seed, name)
            pattern = ".+?".join(map(re.escape, skeleton.split("____")))
            assert re.fullmatch(pattern, lad["solution"]), (seed, skeleton, lad["solution"])
            if "____" not in skeleton:
                assert re.fullmatch(r"d\w+ = -?\(?d\w+\)?( \+ -?\(?d\w+\)?)*", skeleton), skeleton
            for step in d.steps:
                assert (name in step.operands) == (f"`{step.out} = {step.expr}`" in idea), seed


def test_hint_climbs_the_latest_drills_ladder_and_speaks_to_its_mistake(fresh):
    """After ``drill()``, ``hint("h1")`` gives that drill's rungs in order, then the solution on
    reveal; a wrong answer's mistake opens the next first rung; a new drill starts its ladders
    afresh; a notebook's own names still get the notebook's ladder."""
    from checks import hints

    ns: dict = {}
    with contextlib.redirect_stdout(io.StringIO()):
        exec("from checks import drill, hint, cmp\nd = drill('transpose', seed=3)", ns)
    d = ns["d"]
    [lad] = ladders(d)[f"d{d.answers[1]}"]
    name = d.answers[1]
    given = [hints.hint(name) for _ in range(4)]
    assert [h.number for h in given] == [1, 2, 3, 3] and given[0].notebook == "drill"
    assert [h.text for h in given[:3]] == lad["rungs"]
    assert hints.hint(name, reveal=True).text == lad["solution"]
    # the transposed answer for the product's left operand
    k, step = next((k, s) for k, s in enumerate(d.steps) if s.op.name in ("matmul", "linear"))
    wrong = d.solution((k, 0, "transpose")).split("\n")
    left = step.operands[0]
    upto = next(j for j, ln in enumerate(wrong) if ln.startswith(f"d{left} = "))
    with contextlib.redirect_stdout(io.StringIO()):
        exec(compile("\n".join(wrong[: upto + 1]), "<answers>", "exec"), ns)
        cmp = ns["cmp"]
        results = [cmp(n, ns[f"d{n}"], ns[n]) for n in d.answers[: d.answers.index(left) + 1]]
    assert results[-1].mistake == "transpose"
    first = hints.hint(left)
    assert first.number == 1 and first.text.startswith(f"Your last d{left} failed (transpose)")
    with contextlib.redirect_stdout(io.StringIO()):
        exec("d = drill(seed=4)", ns)
    assert hints.hint(ns["d"].answers[0]).number == 1  # a new drill: its ladder from the top
    assert hints.hint("logprobs").notebook == "03-makemore-backprop"


def test_a_cross_entropy_without_its_mean_is_scale():
    """The drills that end in a cross-entropy (a quarter of those whose last tensor fits one):
    its gradient written without the division by the rows is caught and named ``scale``."""
    ended = 0
    for seed in range(400):
        d = draw(seed)
        if not d.last_is_loss:
            continue
        ended += 1
        k, name = len(d.steps) - 1, d.steps[-1].operands[0]
        lines = d.solution((k, 0, "scale")).split("\n")
        upto = next(j for j, ln in enumerate(lines) if ln.startswith(f"d{name} = "))
        names = d.answers[: d.answers.index(name) + 1]
        results, _ = checked(d.forward_code(), "\n".join(lines[: upto + 1]), names)
        assert results[name].mistake == "scale", (seed, results[name])
    assert ended >= 30


def test_notebook_06s_first_drill_is_the_drills_own_answer_cell_filled_in_order():
    """06's worked drill: the student copy holds exactly the cell that drill puts beneath itself,
    the solution assigns every one of its answers in the same order, checks each with ``cmp``,
    and the cell that draws it adds no second answer cell (``cell=False``)."""
    import nbformat

    from checks.paths import METADATA, NOTEBOOKS, SOLUTIONS

    solution = nbformat.read(SOLUTIONS / "06-drills.ipynb", as_version=4)
    student = nbformat.read(NOTEBOOKS / "06-drills.ipynb", as_version=4)
    [at] = [i for i, c in enumerate(solution.cells) if METADATA in c.metadata]
    drawn = solution.cells[at].metadata[METADATA]["drill"]
    d = draw(drawn["seed"], drawn["mistake"])
    assert student.cells[at].source == d.answer_cell()
    assert f'drill("{d.focus}", seed={d.seed}, cell=False)' in solution.cells[at - 1].source
    lines = solution.cells[at].source.split("\n")
    assigned = [m.group(1) for ln in lines if (m := re.match(r"d(\w+) = ", ln))]
    checked_names = [m.group(1) for ln in lines if (m := re.match(r"cmp\('(\w+)'", ln))]
    assert assigned == checked_names == d.answers
