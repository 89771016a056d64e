"""What checks.source reads from a learner's cell: each rule on realistic forms, and right answers
give no facts."""

from __future__ import annotations

import pytest

from checks.source import SourceFacts, answer_assigned, facts, placeholders_used

# Right answers, in the forms learners (and the lecture) write them: none may give a fact.
RIGHT = [
    ("dlogprobs", "dlogprobs = torch.zeros_like(logprobs)\ndlogprobs[range(n), Yb] = -1.0/n"),
    ("dlogprobs", "dlogprobs = torch.zeros_like(logprobs)\ndlogprobs[range(n), Yb] -= 1/n"),
    (
        "dlogprobs",
        "dlogprobs = torch.zeros_like(logprobs)\n"
        "dlogprobs[torch.arange(n), Yb] = -1 / n\ncmp('logprobs', dlogprobs, logprobs)",
    ),
    ("dprobs", "dprobs = (1.0 / probs) * dlogprobs\ncmp('probs', dprobs, probs)"),
    (
        "dcounts",
        "dcounts = counts_sum_inv * dprobs\ndcounts += torch.ones_like(counts) * dcounts_sum",
    ),
    (
        "dhprebn",
        "dhprebn = bngain*bnvar_inv/n * (n*dhpreact - dhpreact.sum(0)"
        " - n/(n-1)*bnraw*(dhpreact*bnraw).sum(0))",
    ),
    ("dhprebn", "dhprebn = dbndiff.clone()\ndhprebn += 1.0/n * torch.ones_like(hprebn) * dbnmeani"),
    ("dhprebn", "dhprebn = dbndiff + 0\ndhprebn += 1.0/n * torch.ones_like(hprebn) * dbnmeani"),
    ("dhprebn", "dhprebn = dbndiff * 1\ndhprebn.add_(dbnmeani / n)"),
    ("dbndiff", "dbndiff = bnvar_inv * dbnraw\ndbndiff += (2*bndiff) * dbndiff2"),
    (
        "dC",
        "dC = torch.zeros_like(C)\nfor k in range(Xb.shape[0]):\n"
        "    for j in range(Xb.shape[1]):\n        ix = Xb[k, j]\n        dC[ix] += demb[k, j]",
    ),
    (
        "dC",
        "dC = torch.zeros_like(C)\nfor i in range(n):\n    for j in range(3):\n"
        "        dC[Xb[i, j]] += demb[i, j]",
    ),
    ("dC", "dC = torch.zeros_like(C)\ndC.index_add_(0, Xb.view(-1), demb.view(-1, 10))"),
    ("dC", "dC = torch.zeros_like(C)\ndC[0] += demb[0, 0]\ndC[1:3] += 1"),
    ("demb", "demb = dembcat.view(emb.shape)"),
    ("dlogits", "dlogits = F.softmax(logits, 1)\ndlogits[range(n), Yb] -= 1\ndlogits /= n"),
    ("dW1", "dW1 = embcat.T @ dhprebn\ndb1 = dhprebn.sum(0)"),
    ("dh", "dh = dlogits @ W2.T"),
]


@pytest.mark.parametrize(("answer", "source"), RIGHT)
def test_right_answers_give_no_facts(answer, source):
    assert facts(source, answer, batch=32) == SourceFacts()


# ---------------------------------------------------------------- reads_grad


@pytest.mark.parametrize(
    "rhs",
    [
        "hpreact.grad",
        "hpreact.grad.clone()",
        "hpreact.grad * 1",
        "hpreact.grad.detach().clone()",
        "1.0 * hpreact.grad",
        "torch.clone(hpreact.grad)",
        "hpreact.grad + 0",
        "hpreact.grad[:]",
        "(1 - h**2) * hpreact.grad",
        "torch.tensor(hpreact.grad.tolist())",
        "getattr(hpreact, 'grad')",
    ],
)
def test_reads_grad_in_any_form(rhs):
    source = f"dhpreact = {rhs}\ncmp('hpreact', dhpreact, hpreact)"
    assert facts(source, "dhpreact").reads_grad == "hpreact.grad"


def test_reads_grad_two_steps_and_three_steps():
    assert facts("g = hpreact.grad\ndhpreact = g.clone()", "dhpreact").reads_grad == "hpreact.grad"
    src = "g = hpreact.grad\nh2 = g * 1\ndhpreact = h2 + 0"
    assert facts(src, "dhpreact").reads_grad == "hpreact.grad"
    assert facts("dhpreact = hpreact.grad\ndhpreact = dhpreact.clone()", "dhpreact").reads_grad
    found = facts("dW = model.layers[0].weight.grad", "dW").reads_grad
    assert found == "model.layers[0].weight.grad"


def test_reads_grad_follows_only_the_latest_binding_and_only_the_answer():
    src = "g = hpreact.grad\ng = (1 - h**2) * dh\ndhpreact = g"
    assert facts(src, "dhpreact").reads_grad is None
    assert facts("x = hpreact.grad\ndhpreact = (1 - h**2) * dh", "dhpreact").reads_grad is None
    src = "dhpreact = (1 - h**2) * dh\nfor p in parameters:\n    p.data += -0.1 * p.grad"
    assert facts(src, "dhpreact").reads_grad is None


# ---------------------------------------------------------------- alias_of / changed_through

ALIASES = [
    "dhprebn = dbndiff\ndhprebn += 1.0/n * torch.ones_like(hprebn) * dbnmeani",
    "dhprebn = dbndiff\ndhprebn -= dbnmeani / n",
    "dhprebn = dbndiff\ndhprebn *= 1\ndhprebn /= 1",
    "dhprebn = dbndiff\ndhprebn[:] += dbnmeani / n",
    "dhprebn = dbndiff\ndhprebn[0] = 0",
    "dhprebn = dbndiff\ndhprebn.add_(dbnmeani / n)",
    "dhprebn = dbndiff\ndhprebn.data += dbnmeani / n",
    "dhprebn = dbndiff\ndhprebn.copy_(dhprebn + dbnmeani / n)",
    "dhprebn = dbndiff\ntorch.add(dhprebn, dbnmeani / n, out=dhprebn)",
    "dhprebn = dbndiff  # first branch\nfor _ in range(1):\n    dhprebn += dbnmeani / n",
]


@pytest.mark.parametrize("source", ALIASES)
def test_alias_changed_in_place(source):
    assert facts(source, "dhprebn").alias_of == "dbndiff"
    assert facts(source, "dbndiff").changed_through == "dhprebn"


@pytest.mark.parametrize(
    "source",
    [
        "dhprebn = dbndiff.clone()\ndhprebn += dbnmeani / n",
        "dhprebn = dbndiff + 0\ndhprebn += dbnmeani / n",
        "dhprebn = dbndiff\ndhprebn = dhprebn + dbnmeani / n",  # rebinding makes a new tensor
        "dhprebn = dbndiff\ndhprebn = dhprebn.clone()\ndhprebn += dbnmeani / n",
        "dhprebn = dbndiff",  # aliased but never changed
        "dhprebn = dbndiff\ndhprebn.sum()\ndhprebn.__iadd__",  # not in place / a dunder
        "dhprebn = torch.zeros_like(hprebn)\ndhprebn += dbndiff",
    ],
)
def test_no_alias(source):
    assert facts(source, "dhprebn").alias_of is None
    assert facts(source, "dbndiff").changed_through is None


def test_changed_through_stops_when_the_answer_is_rebound():
    src = "dhprebn = dbndiff\ndbndiff = dbndiff.clone()\ndhprebn += 1"
    assert facts(src, "dbndiff").changed_through is None
    assert facts(src, "dhprebn").alias_of == "dbndiff"  # still shares the old dbndiff's memory


# ---------------------------------------------------------------- indexed_add


@pytest.mark.parametrize(
    ("source", "statement"),
    [
        ("dC = torch.zeros_like(C)\ndC[Xb] += demb", "dC[Xb] += demb"),
        (
            "dC = torch.zeros_like(C)\ndC[Xb.view(-1)] += demb.view(-1, 10)",
            "dC[Xb.view(-1)] += demb.view(-1, 10)",
        ),
        (
            "dC = torch.zeros_like(C)\ndC[Xb.flatten()] += demb.reshape(-1, 10)  # scatter",
            "dC[Xb.flatten()] += demb.reshape(-1, 10)",
        ),
        ("dC = torch.zeros_like(C)\ndC[Xb] = dC[Xb] + demb", "dC[Xb] = dC[Xb] + demb"),
        ("dC = torch.zeros_like(C)\nif True:\n    dC[Xb] += demb", "dC[Xb] += demb"),
    ],
)
def test_indexed_add(source, statement):
    assert facts(source, "dC").indexed_add == statement


def test_indexed_add_only_for_the_answer_asked():
    src = "dC = torch.zeros_like(C)\ndC[Xb] += demb"
    assert facts(src, "demb").indexed_add is None
    assert facts("dlogits[range(n), Yb] -= 1", "dlogits").indexed_add is None
    assert facts("dlogits[Yb] -= 1", "dlogits").indexed_add == "dlogits[Yb] -= 1"


# ---------------------------------------------------------------- batch_literals


@pytest.mark.parametrize(
    "source",
    [
        "dlogprobs = torch.zeros((32, 27))\ndlogprobs[range(n), Yb] = -1.0/n",
        "dlogprobs = torch.zeros(32, 27)\ndlogprobs[range(n), Yb] = -1.0/n",
        "dlogprobs = torch.zeros_like(logprobs)\ndlogprobs[range(32), Yb] = -1.0/n",
        "dlogprobs = torch.zeros_like(logprobs)\ndlogprobs[range(n), Yb] = -1/32",
        (
            "dlogprobs = torch.zeros_like(logprobs)\n"
            "for i in range(32):\n    dlogprobs[i, Yb[i]] = -1.0/n"
        ),
        "dlogprobs = torch.full([32, 27], 0.0)\ndlogprobs[range(n), Yb] = -1.0/n",
        "dlogprobs = -(F.one_hot(Yb, 27) / 32.0)",
    ],
)
def test_batch_literals(source):
    assert facts(source, "dlogprobs", batch=32).batch_literals == (32,)
    assert facts(source, "dlogprobs").batch_literals == ()  # batch not given: not looked for
    assert facts(source, "dlogprobs", batch=64).batch_literals == ()


def test_batch_literals_other_shapes():
    assert facts("dembcat = dh @ W1.T\ndemb = dembcat.view(32, 3, 10)", "demb", 32).batch_literals
    assert facts("db = torch.ones(32, 1).T @ dlogits", "db", 32).batch_literals == (32,)
    assert facts("dx = torch.zeros(27, 10)\nn = 32", "dx", 32).batch_literals == ()
    assert facts("dx = torch.zeros(27, 10)\ndy = x.view(32, -1)", "dx", 32).batch_literals == ()
    assert facts("dx = x.view(True, -1)", "dx", 1).batch_literals == ()


# ---------------------------------------------------------------- never raises


@pytest.mark.parametrize(
    "source",
    [
        "%time dhpreact = hpreact.grad",
        "!ls\ndhpreact = hpreact.grad",
        "%%timeit\ndhpreact = hpreact.grad",
        "%timeit -n 10 dhpreact = hpreact.grad",
        "for i in range(3):\n    %time f()\ndhpreact = hpreact.grad",
    ],
)
def test_magics_are_blanked(source):
    assert facts(source, "dhpreact").reads_grad == "hpreact.grad"
    assert answer_assigned(source, "dhpreact")


@pytest.mark.parametrize(
    "source",
    ["dhpreact = (", "def f(:\n  dhpreact = hpreact.grad", "", "\x00", None, 42, "dhpreact ?= 1"],
)
def test_unparseable_gives_no_facts(source):
    assert facts(source, "dhpreact", batch=32) == SourceFacts()
    assert not answer_assigned(source, "dhpreact")
    assert placeholders_used(source, {"dhpreact": ...}) == []


def test_answer_assigned():
    assert answer_assigned("dx = 1", "dx")
    assert answer_assigned("a, dx = 1, 2", "dx")
    assert answer_assigned("dx += 1", "dx")
    assert answer_assigned("dx: float = 1", "dx")
    assert answer_assigned("for dx in range(3):\n    pass", "dx")
    assert not answer_assigned("dx[0] = 1", "dx")
    assert not answer_assigned("dxx = dx", "dx")
    assert not answer_assigned("cmp('x', dx, x)", "dx")


# ---------------------------------------------------------------- placeholders_used


def test_placeholders_used_in_order_of_first_use():
    ns = {"counts": 1, "dcounts": ..., "dprobs": None, "n": 32}
    assert placeholders_used("dnorm_logits = counts * dcounts", ns) == ["dcounts"]
    src = "x = dprobs + dcounts * dprobs\ny = dcounts"
    assert placeholders_used(src, ns) == ["dprobs", "dcounts"]
    assert placeholders_used("dcounts += 1", ns) == ["dcounts"]


def test_placeholders_used_ignores_names_the_cell_binds_first():
    ns = {"counts": 1, "dcounts": ..., "dprobs": None}
    assert placeholders_used("dcounts = counts * 2\ny = dcounts", ns) == []
    assert placeholders_used("dcounts = dcounts * 2", ns) == ["dcounts"]  # read before bound
    assert placeholders_used("y = dcounts\ndcounts = 2", ns) == ["dcounts"]
    assert placeholders_used("for dcounts in range(2):\n    print(dcounts)", ns) == []
    assert placeholders_used("[dprobs for dprobs in range(2)]", ns) == []
    assert placeholders_used("f = lambda dprobs: dprobs", ns) == []
    assert placeholders_used("import dcounts\ndcounts.x", ns) == []
    assert placeholders_used("y = ...\nz = undefined_name", ns) == []


def test_placeholders_used_after_magics():
    ns = {"dcounts": ...}
    assert placeholders_used("%time y = dcounts * 2", ns) == ["dcounts"]


@pytest.mark.parametrize(
    "code",
    [
        "dX = torch.zeros_like(X.grad)\ndX[range(n), Yb] = -1.0 / n",
        "dX = torch.zeros(X.grad.shape)",
        "dX = torch.ones_like(logprobs.grad) * dY",
        "dX = torch.empty(X.grad.size(0), 3)",
    ],
)
def test_grad_used_for_its_shape_alone_is_not_a_copy(code):
    assert facts(code, "dX").reads_grad is None


def test_a_grad_read_replaced_by_a_later_binding_does_not_count():
    assert facts("dX = X.grad  # peek\ndX = 2 * Y", "dX").reads_grad is None
    assert facts("dX = 2 * Y\ndX += X.grad", "dX").reads_grad == "X.grad"


@pytest.mark.parametrize(
    ("code", "found", "lasts"),
    [
        ("dh = dlogits @ W2.T", [], []),
        ("%time dh = dlogits @ W2.T", [], []),
        ("%matplotlib inline\ndh = dlogits @ W2.T", [], []),
        ("dlogits = F.softmax(logits, 1)\ndlogits[range(n), Yb] -= 1\ndlogits /= n", [], []),
        ("g = getattr(torch.autograd, 'gr' + 'ad')", ["getattr", "torch.autograd"], []),
        (
            "import checks.grading.recorder as R\nR.emit = print",
            ["checks.grading.recorder"],
            ["checks.grading.recorder"],
        ),
        ("__gr.check_grads = print", ["__gr.check_grads"], ["__gr.check_grads"]),
        ("exec(open('x').read())", ["exec"], ["exec"]),
        ("!python -c 'print(1)'", ["!python -c 'print(1)'"], ["!python -c 'print(1)'"]),
        ("%run other.py", ["%run other.py"], ["%run other.py"]),
        ("import threading\nthreading.Thread(target=f).start()", ["threading"], ["threading"]),
        ("from torch.func import grad", ["torch.func"], []),
        ("from checks import numgrad\ndW = numgrad(f, W)", ["numgrad"], []),
    ],
)
def test_what_reaches_around_the_grader(code, found, lasts):
    from checks.grading.review import lasting, reaches_around

    assert reaches_around(code) == found
    assert lasting(reaches_around(code)) == lasts
