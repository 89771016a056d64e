"""checks.cost: what a step costs (operators, bytes allocated, put down to the names its
statements assign) and the one sentence that names the biggest saving it has left."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from checks.cost import saving, tally, timings
from tests import makemore
from tests.fast_steps import autograd_step, fused_step
from tests.fresh import run_fresh

ORDER = ["C", "W1", "b1", "W2", "b2", "bngain", "bnbias"]


@pytest.fixture(scope="module")
def batch():
    """The lecture's parameters (200 hidden, as in exercise 4), detached, and a minibatch of 32."""
    p = makemore.init_params(27, 3, 10, 200, 2147483647)
    net = [p[k].detach().clone() for k in ORDER]
    g = torch.Generator().manual_seed(7)
    return net, torch.randint(0, 27, (32, 3), generator=g), torch.randint(0, 27, (32,), generator=g)


def chained_step(net, Xb, Yb):
    """Exercise 4 as a learner writes it who carries exercise 1's cross-entropy over, step by
    step, instead of the fused dlogits."""
    C, W1, b1, W2, b2, bngain, bnbias = net
    n = Xb.shape[0]
    embcat = C[Xb].view(n, -1)
    hprebn = embcat @ W1 + b1
    bnvar_inv = (hprebn.var(0, keepdim=True) + 1e-5) ** -0.5
    bnraw = (hprebn - hprebn.mean(0, keepdim=True)) * bnvar_inv
    h = torch.tanh(bngain * bnraw + bnbias)
    logits = h @ W2 + b2
    counts = (logits - logits.max(1, keepdim=True).values).exp()
    counts_sum_inv = counts.sum(1, keepdim=True) ** -1
    probs = counts * counts_sum_inv
    loss = -probs.log()[range(n), Yb].mean()
    dlogprobs = torch.zeros_like(probs)
    dlogprobs[range(n), Yb] = -1.0 / n
    dprobs = (1.0 / probs) * dlogprobs
    dcounts_sum_inv = (counts * dprobs).sum(1, keepdim=True)
    dcounts = counts_sum_inv * dprobs - counts_sum_inv**2 * dcounts_sum_inv
    dlogits = counts * dcounts
    dh = dlogits @ W2.T
    dW2 = h.T @ dlogits
    db2 = dlogits.sum(0)
    dhpreact = (1.0 - h**2) * dh
    dbngain = (bnraw * dhpreact).sum(0, keepdim=True)
    dbnbias = dhpreact.sum(0, keepdim=True)
    dhprebn = (
        bngain
        * bnvar_inv
        / n
        * (n * dhpreact - dhpreact.sum(0) - n / (n - 1) * bnraw * (dhpreact * bnraw).sum(0))
    )
    dembcat = dhprebn @ W1.T
    dW1 = embcat.T @ dhprebn
    db1 = dhprebn.sum(0)
    dC = torch.zeros_like(C)
    dC.index_add_(0, Xb.view(-1), dembcat.view(-1, C.shape[1]))
    return loss, [dC, dW1, db1, dW2, db2, dbngain, dbnbias]


def looped_step(net, Xb, Yb):
    """The fused step, but dC gathered row by row in a Python loop, as the lecture first does."""
    loss, grads = fused_step(net, Xb, Yb)
    demb = torch.zeros(Xb.shape[0], Xb.shape[1], net[0].shape[1])
    dC = torch.zeros_like(net[0])
    for k in range(Xb.shape[0]):
        for j in range(Xb.shape[1]):
            dC[Xb[k, j]] += demb[k, j]
    return loss, [dC, *grads[1:]]


def test_every_operator_is_counted_and_put_down_to_the_name_it_makes():
    a, b = torch.ones(4, 8), torch.ones(8, 16)

    def f(a, b):
        c = a @ b
        d = c.relu()
        d.mul_(2.0)
        e = d.T
        return e

    cost = tally(f, a, b)
    assert cost.count == 4 and cost.ops["aten.mm"] == 1 and cost.ops["aten.mul_"] == 1
    # two new (4, 16) float32 tensors; the in-place product and the transpose allocate nothing
    assert cost.nbytes == 2 * 4 * 16 * 4
    assert (cost.part("d").ops, cost.part("d").nbytes) == (2, 4 * 16 * 4)
    assert (cost.part("e").ops, cost.part("e").nbytes) == (1, 0)


def test_the_fused_step_gives_autograds_gradients_in_fewer_operations_and_bytes(batch):
    net, Xb, Yb = batch
    leaves = [t.clone().requires_grad_() for t in net]
    loss, expected = autograd_step(leaves, Xb, Yb)
    with torch.no_grad():
        fast_loss, grads = fused_step(net, Xb, Yb)
        chained_loss, chained = chained_step(net, Xb, Yb)
        fast, slow = tally(fused_step, net, Xb, Yb), tally(chained_step, net, Xb, Yb)
    torch.testing.assert_close(fast_loss, loss.detach())
    torch.testing.assert_close(chained_loss, loss.detach())
    for name, got, want, mine in zip(ORDER, grads, expected, chained, strict=True):
        assert torch.allclose(got, want, rtol=1e-4, atol=1e-6), name
        assert torch.allclose(mine, want, rtol=1e-4, atol=1e-6), name
    auto = tally(autograd_step, leaves, Xb, Yb)
    # (a learner's chain may well cost more than autograd)
    assert fast.count < min(slow.count, auto.count) and fast.nbytes < min(slow.nbytes, auto.nbytes)
    # autograd's own work is put down to the line that calls backward()
    assert max(auto.parts, key=lambda p: p.ops).label.startswith("line ")


def test_the_saving_names_the_chain_the_fused_gradient_never_builds(batch):
    net, Xb, Yb = batch
    with torch.no_grad():
        mine, fast = tally(chained_step, net, Xb, Yb), tally(fused_step, net, Xb, Yb)
    sentence = saving(mine, fast)
    assert (
        sentence.startswith("your step assigns `")
        and "names that the solution's step never assigns." in sentence
    )
    named = {part.split("`")[0] for part in sentence.split("`")[1::2]}
    assert named <= {"dlogprobs", "dprobs", "dcounts_sum_inv", "dcounts", "counts", "probs"}
    assert "dlogits" not in sentence and "dh`" not in sentence


def test_the_saving_names_a_loop_where_the_solution_takes_one_operation(batch):
    net, Xb, Yb = batch
    with torch.no_grad():
        mine, fast = tally(looped_step, net, Xb, Yb), tally(fused_step, net, Xb, Yb)
    sentence = saving(mine, fast, "the fused step")
    assert sentence.startswith("your `dC` takes ") and "the fused step takes" in sentence
    assert int(sentence.split()[3]) > 96 * 2  # an index and an add per row, at least


def test_no_saving_is_named_against_a_step_whose_work_hides_in_a_helper(batch):
    net, Xb, Yb = batch

    def step_fast(net, Xb, Yb):
        return fused_step(net, Xb, Yb)  # its statements are fused_step's, not named here

    with torch.no_grad():
        mine, hidden = tally(chained_step, net, Xb, Yb), tally(step_fast, net, Xb, Yb)
    assert saving(mine, hidden) is None


def test_no_saving_is_named_against_a_helper_whose_result_is_assigned(batch):
    net, Xb, Yb = batch

    def step_fast(net, Xb, Yb):
        loss, grads = fused_step(net, Xb, Yb)  # named, but fused_step's own statements did it
        return loss, grads

    with torch.no_grad():
        mine, hidden = tally(chained_step, net, Xb, Yb), tally(step_fast, net, Xb, Yb)
    assert saving(mine, hidden) is None


def test_the_same_work_under_other_names_is_no_saving(batch):
    net, Xb, Yb = batch

    def renamed(net, Xb, Yb):
        C, W1, b1, W2, b2, bngain, bnbias = net
        flat = C[Xb].view(Xb.shape[0], -1)
        pre = flat @ W1 + b1
        return (pre * 2).sum()

    def original(net, Xb, Yb):
        C, W1, b1, W2, b2, bngain, bnbias = net
        embcat = C[Xb].view(Xb.shape[0], -1)
        hprebn = embcat @ W1 + b1
        return (hprebn * 2).sum()

    with torch.no_grad():
        assert saving(tally(original, net, Xb, Yb), tally(renamed, net, Xb, Yb)) is None


def test_a_module_changed_in_place_is_not_a_name_and_a_lambda_names_nothing():
    h = torch.randn(4, 5)

    def step(h):
        torch.relu_(h)
        g = h * 2
        return g

    assert [p.label for p in tally(step, h.clone()).parts] == ["g", "h"]
    lam = lambda h: h * 2  # noqa: E731
    assert all(p.label.startswith("line ") for p in tally(lam, h).parts)


def test_an_out_tensor_and_a_resize_are_counted_as_allocations():
    a, out = torch.ones(100), torch.empty(0)

    def step(a, out):
        torch.mul(a, 2, out=out)
        a.resize_(1000)

    cost = tally(step, a, out)
    assert cost.nbytes == 100 * 4 + 1000 * 4


def test_a_step_as_lean_as_the_solution_has_no_saving_left(batch):
    net, Xb, Yb = batch
    with torch.no_grad():
        assert saving(tally(fused_step, net, Xb, Yb), tally(fused_step, net, Xb, Yb)) is None


def test_a_step_whose_source_cannot_be_read_is_still_counted(batch):
    net, Xb, Yb = batch
    scope = {"torch": torch, "F": F}
    exec("def step(a):\n    b = a * 2\n    return b.sum()\n", scope)
    cost = tally(scope["step"], torch.ones(3))
    assert cost.count == 2 and [p.label for p in cost.parts] == ["line 2", "line 3"]
    assert saving(cost, tally(fused_step, net, Xb, Yb)) is None


def test_timings_take_turns_and_give_a_median_per_call():
    calls = {"a": 0, "b": 0}

    def counted(name):
        def call():
            calls[name] += 1

        return call

    medians = timings({k: counted(k) for k in calls}, per_block=3, blocks=4, warmup=2)
    assert calls == {"a": 14, "b": 14} and set(medians) == {"a", "b"}
    assert all(m >= 0 for m in medians.values())


def layer(x, w):
    """A function of this module that a step calls: its statements' names count as the step's."""
    pre = x @ w
    return torch.tanh(pre)  # a return assigns nothing: its operator goes to the caller's names


def layer_twice(x, w):
    pre = x @ w
    again = x @ w  # noqa: F841  (made again, for nothing: the saving names it)
    return torch.tanh(pre)


def test_a_function_of_the_steps_own_module_is_counted_under_its_own_names():
    x, w = torch.randn(4, 3), torch.randn(3, 5)

    def step(x, w):
        h = layer(x, w)
        return h.sum()

    cost = tally(step, x, w)
    assert cost.part("pre").ops == 1 and cost.part("h").ops == 1  # mm in layer; tanh its return
    # the step's own sum, under its line
    assert [p.line for p in cost.parts if not p.names] == [step.__code__.co_firstlineno + 2]


def test_the_saving_names_what_a_called_function_recomputes():
    x, w = torch.randn(4, 3), torch.randn(3, 5)

    def lean(x, w):
        h = layer(x, w)
        return h

    def wasteful(x, w):
        h = layer_twice(x, w)
        return h

    sentence = saving(tally(wasteful, x, w), tally(lean, x, w), "the solution's `lean`")
    assert sentence.startswith("your step assigns `again` (1 operation")
    assert sentence.endswith("names that the solution's `lean` never assigns.")


def test_counting_imports_no_compiler():
    """torch wraps a dispatch mode's ``__torch_dispatch__`` for ``torch.compile`` unless told not
    to, and the wrapper imports ``torch._dynamo`` (1.2 s of CPU) at the first operator: in every
    grading kernel that counts a learner's function, and in a learner's first ``race()``."""
    code = (
        "import sys, torch\n"
        "from checks.cost import tally\n"
        "from checks.grading.probecost import count\n"
        "def step(x):\n    y = x * 2\n    return y.sum()\n"
        "assert tally(step, torch.ones(3)).count == 2\n"
        "assert count('step(x)', {'step': step, 'x': torch.ones(3)}) == {'ops': 2, 'nbytes': 16}\n"
        "print('torch._dynamo' in sys.modules)\n"
    )
    assert run_fresh(code).strip() == "False"
