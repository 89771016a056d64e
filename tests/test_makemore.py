"""The makemore backward pass: a correct hand-written pass passes all 26 checks; realistic mistakes
are named."""

from __future__ import annotations

import contextlib
import io

import pytest
import torch

import checks
from tests import makemore as mm
from tests.catalog import CATALOG


@pytest.fixture(scope="module", autouse=True)
def names_available():
    try:
        checks.load_names()
    except Exception as exc:  # no data and no network: say so rather than fail obscurely
        pytest.skip(f"names.txt unavailable: {exc}")


@pytest.mark.parametrize("retain", [False, True])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_correct_backward_passes_every_check(retain, dtype):
    checks.reset()
    p, f, Xb, Yb = mm.setup(retain_graph=retain, dtype=dtype)
    d = mm.backward(p, f, Xb, Yb)
    with contextlib.redirect_stdout(io.StringIO()) as out:
        res = [checks.cmp(k, d[k], mm.tensor_of(k, p, f)) for k in mm.ORDER]
    assert len(res) == 26
    assert all(r.ok for r in res), [(r.name, r.mistake, r.hint) for r in res if not r.ok]
    assert out.getvalue().count("approximate: True") == 26
    assert checks.summary().passed == 26


@pytest.fixture(scope="module", params=[False, True], ids=["freed-graph", "retained-graph"])
def model(request):
    p, f, Xb, Yb = mm.setup(retain_graph=request.param)
    return p, f, mm.backward(p, f, Xb, Yb), Xb, Yb


@pytest.mark.parametrize(
    ("name", "mistake", "wrong"), CATALOG, ids=[f"{c[0]}-{c[1]}-{i}" for i, c in enumerate(CATALOG)]
)
def test_catalog_mistake_is_named(model, name, mistake, wrong):
    p, f, d, Xb, Yb = model
    checks.reset()  # one mistake on right upstream answers: no earlier check's answer counts
    answer = wrong(p, f, d, Xb, Yb, Xb.shape[0])
    res = checks.cmp(name, answer, mm.tensor_of(name, p, f), quiet=True)
    assert not res.ok
    assert res.mistake == mistake, res.hint


LECTURE = """
import torch
from checks import cmp
from tests import makemore as mm
p, f, Xb, Yb = mm.setup()
globals().update(p); globals().update(f)
n = Xb.shape[0]
dlogprobs = torch.zeros_like(logprobs)
dlogprobs[range(n), Yb] = -1.0/n
cmp('logprobs', dlogprobs, logprobs)
dprobs = (1.0 / probs) * dlogprobs
cmp('probs', dprobs, probs)
dcounts_sum_inv = (counts * dprobs).sum(1, keepdim=True)
cmp('counts_sum_inv', dcounts_sum_inv, counts_sum_inv)
dcounts = counts_sum_inv * dprobs
dcounts_sum = -counts_sum**-2 * dcounts_sum_inv
cmp('counts_sum', dcounts_sum, counts_sum)
first = cmp('counts', dcounts, counts)
dcounts += torch.ones_like(counts) * dcounts_sum
second = cmp('counts', dcounts, counts)
"""


def test_lecture_flow_in_a_notebook_namespace(capsys):
    """As in a notebook: names in globals, a plain loss.backward(), dcounts checked before and
    after `+=`."""
    ns: dict = {}
    exec(compile(LECTURE, "<notebook>", "exec"), ns)
    out = capsys.readouterr().out
    assert ns["first"].mistake == "missing-path" and "`counts_sum`" in ns["first"].hint
    assert ns["second"].ok
    assert out.count("approximate: True") == 5 and "✗ missing-path" in out


def test_hints_built_from_the_tensors_not_from_guesses(model):
    """The batch-norm mean path without its 1/n, demb left flat, and dW2 as the transposed product
    missing its 1/n."""
    p, f, d, Xb, Yb = model
    n = Xb.shape[0]
    no_mean = d["bndiff"] + torch.ones_like(f["hprebn"]) * d["bnmeani"]
    res = checks.cmp("hprebn", no_mean, f["hprebn"], quiet=True)
    assert (
        res.mistake == "scale"
        and f"is {n} times what it should be, and {n} is the batch size n" in res.hint
    ), res.hint
    assert "the loss is a mean" not in res.hint and "a 1/n is missing" in res.hint
    res = checks.cmp("emb", d["embcat"].clone(), f["emb"], quiet=True)
    assert (
        res.mistake == "shape"
        and "`.view(emb.shape)`" in res.hint
        and "(32, 3, 10)`" not in res.hint
    ), res.hint
    res = checks.cmp("W2", (d["logits"] * n).T @ f["h"].detach(), p["W2"], quiet=True)
    assert (
        res.mistake == "shape"
        and "shape (27, 64) but W2 has shape (64, 27): that is its shape transposed" in res.hint
    ), res.hint
    assert f"transposed back, it is {n} times the gradient, and {n} is the batch size n" in res.hint
