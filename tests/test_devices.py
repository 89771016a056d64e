"""Another device than the CPU: the notebooks' ``device`` setting, and checks that say on a GPU
what they say on the CPU (issue 27, item 4).

This machine has no GPU, so the other device is the stand-in of :mod:`tests.otherdevice`: tensors
that compute on the CPU and refuse, as CUDA does, to mix with CPU tensors.
"""

from __future__ import annotations

import json
from collections import Counter

import nbformat
import pytest
import torch
from torch.utils._pytree import tree_map

import checks.inputs
import checks.races
from checks import session, setting
from checks.authoring.variants import build
from checks.inputs import device_named
from checks.paths import SOLUTIONS
from checks.races import Race, race, shipped
from checks.variants import Makemore, Transformer
from tests import makemore
from tests.cascade import Walk
from tests.corpus_answers import CORPUS, LAST
from tests.fast_steps import autograd_step, fused_step
from tests.inprocess import run_cells, split_at
from tests.otherdevice import OTHER, on_other_device, to_other

NB03 = "03-makemore-backprop"
INIT03 = "def init_network"
# each solution, and variants of 03 and 05 with other maths: the notebook, where its training
# begins, the name of the network it trains, and what it keeps of its evaluation on the data sets
# (04 prints its losses and keeps none, nor do the variants without batch norm)
TRAINING = {
    NB03: (NB03, INIT03, "net", ("bn_mean", "bn_var")),
    "04": ("04-mlp-language-model", "train_batch, lr_max", "model", ()),
    "05": ("05-transformer-backprop", "train_names, lr_max", "hand", ("rows",)),
    "03 layernorm, relu, label smoothing": (
        Makemore(norm="layernorm", activation="relu", loss="label-smoothing", smoothing=0.1),
        INIT03,
        "net",
        (),
    ),
    "03 rmsnorm, gelu": (
        Makemore(norm="rmsnorm", activation="gelu"),
        INIT03,
        "net",
        (),
    ),
    "03 no norm, sigmoid": (
        Makemore(norm="none", activation="sigmoid"),
        INIT03,
        "net",
        (),
    ),
    "05 rmsnorm, silu, label smoothing": (
        Transformer(norm="rmsnorm", activation="silu", loss="label-smoothing", smoothing=0.05),
        "train_names, lr_max",
        "hand",
        ("rows",),
    ),
}
SMALL = 1000  # examples (names in 05) of each data set that a training test keeps


def test_the_device_is_the_cpu_unless_set(monkeypatch):
    monkeypatch.delenv("WORKBOOK_DEVICE", raising=False)
    assert setting("device", "cpu") == torch.device("cpu")
    monkeypatch.setenv("WORKBOOK_DEVICE", " CPU ")
    assert setting("device", "cuda") == torch.device("cpu")


def test_auto_takes_the_gpu_where_there_is_one(monkeypatch):
    monkeypatch.setattr(checks.inputs, "DEVICES", {**checks.inputs.DEVICES, "cuda": lambda: False})
    assert device_named("auto") == torch.device("cpu")
    monkeypatch.setattr(checks.inputs, "DEVICES", {**checks.inputs.DEVICES, "cuda": lambda: True})
    assert device_named("auto") == torch.device("cuda")


@pytest.mark.parametrize(
    ("name", "said"),
    [
        ("gpu", "'gpu', which is no device to train on: use one of 'cpu', 'cuda'"),
        ("cuda:x", "which is no device to train on"),
        ("meta", "which is no device to train on"),
        ("", "which is no device to train on"),
    ],
)
def test_a_name_that_is_no_device_is_said_in_one_sentence(name, said):
    with pytest.raises(ValueError, match="^device is ") as caught:
        device_named(name)
    assert said in str(caught.value) and "\n" not in str(caught.value)


def test_a_device_this_machine_lacks_is_said_with_what_to_do(monkeypatch):
    monkeypatch.setattr(checks.inputs, "DEVICES", {**checks.inputs.DEVICES, "cuda": lambda: False})
    monkeypatch.setenv("WORKBOOK_DEVICE", "cuda")
    with pytest.raises(ValueError) as caught:
        setting("device", "cpu")
    said = str(caught.value)
    assert said.startswith("WORKBOOK_DEVICE is 'cuda', but this machine has no cuda device")
    assert "use 'cpu', or 'auto'" in said and "Change runtime type" in said
    monkeypatch.setattr(checks.inputs, "DEVICES", {**checks.inputs.DEVICES, "cuda": lambda: True})
    monkeypatch.setattr(checks.inputs, "_cuda_count", lambda: 1)
    with pytest.raises(ValueError, match="has 1 cuda device.*'cuda:0'"):
        device_named("cuda:1")
    assert device_named("cuda:0") == torch.device("cuda:0")


def one_of_each_kind(notebook: str) -> list:
    """The first entry of the corpus of each (answer, kind): every slip of each answer once."""
    seen, out = set(), []
    for entry in CORPUS[notebook]:
        if (entry.answer, entry.kind) not in seen:
            seen.add((entry.answer, entry.kind))
            out.append(entry)
    return out


def test_the_checks_say_on_another_device_what_they_say_on_the_cpu():
    """Notebook 03's graph, answers and checks on the other device: each learner's answer of the
    corpus (one of each kind of slip) gets the verdict, the mistake and the hint it gets on the
    CPU. An answer whose own line makes a CPU tensor (``torch.ones(n, 1)``) or reads numpy fails
    on a GPU too, before any check: it is left out, and it is a few."""
    entries = one_of_each_kind(NB03)
    cpu = Walk(NB03, LAST[NB03], sources=True)
    said_here = [cpu.said(e) for e in entries]
    with on_other_device():
        other = Walk(NB03, LAST[NB03], sources=True, moved_before="emb = C[Xb]")
        assert other.base["loss"].device == OTHER and other.base["hprebn"].device == OTHER
        said_there, raised = [], Counter()
        for entry in entries:
            try:
                said_there.append(other.said(entry))
            except (RuntimeError, TypeError) as error:  # the learner's line, on a GPU
                raised[str(error).split(",")[0][:40]] += 1
                said_there.append(None)
    ran = [(e, a, b) for e, a, b in zip(entries, said_here, said_there, strict=True) if b]
    assert len(ran) >= 0.9 * len(entries), raised
    assert sum(not a.ok for _, a, _ in ran) >= 40  # wrong answers, their diagnoses compared
    assert [(str(e), b) for e, _, b in ran] == [(str(e), a) for e, a, _ in ran]


@pytest.fixture(scope="module")
def data():
    """Exercise 4's network and a small made-up training set of contexts and targets."""
    return makemore.race_data()


def test_a_race_runs_where_the_network_is_and_counts_what_it_counts_on_the_cpu(data):
    net, X, Y = data
    here = race(fused_step, autograd=autograd_step, net=net, X=X, Y=Y, blocks=1, per_block=2)
    with on_other_device():
        there = race(
            fused_step,
            autograd=autograd_step,
            net=[to_other(p) for p in net],
            X=X,  # the data set stays on the CPU: the minibatches are moved
            Y=Y,
            blocks=1,
            per_block=2,
        )
    assert there.device == str(OTHER) and here.device == "cpu"
    assert [lap.problem for lap in there.laps] == [None, None]
    assert [(x.cost.count, x.cost.nbytes) for x in there.laps] == [
        (x.cost.count, x.cost.nbytes) for x in here.laps
    ]
    assert str(there).startswith(f"steps on minibatches of 32, on {OTHER}:")
    assert str(here).startswith("steps on minibatches of 32:")
    back = Race.from_json(json.loads(json.dumps(there.json())))
    assert back.device == there.device and back.laps == there.laps


def test_a_wrong_step_on_another_device_is_not_timed(data):
    net, X, Y = data

    def step_cpu_grads(net, Xb, Yb):  # right numbers, sent back to the CPU
        loss, grads = fused_step(net, Xb, Yb)
        return loss, [g.cpu() for g in grads]

    def step_sign(net, Xb, Yb):
        loss, grads = fused_step(net, Xb, Yb)
        return loss, [*grads[:3], -grads[3], *grads[4:]]

    with on_other_device():
        there = race(
            step_cpu_grads,
            step_sign,
            autograd=autograd_step,
            net=[to_other(p) for p in net],
            X=X,
            Y=Y,
            blocks=1,
            per_block=2,
        )
    assert there.lap("step_cpu_grads").problem is None
    said = there.lap("step_sign").problem
    assert said == "not timed: its gradient of net[3] differs from autograd's"


def test_the_solutions_rows_are_those_of_the_same_kind_of_device(data, tmp_path):
    """A race made on the CPU gives no solution's rows to one on a GPU, nor the other way round;
    a race kept before the device was (no "device") was run on the CPU."""
    net, X, Y = data
    made = race(fused_step, autograd=autograd_step, net=net, X=X, Y=Y, blocks=1, per_block=2)
    old = {k: v for k, v in made.json().items() if k != "device"}
    (tmp_path / "03.json").write_text(json.dumps({"races": [old]}))
    checks.races._shipped.cache_clear()
    try:
        assert shipped(32, made.net, tmp_path).laps == made.laps
        assert shipped(32, made.net, tmp_path, device="cpu") is not None
        assert shipped(32, made.net, tmp_path, device="cuda:0") is None
        gpu = {**made.json(), "device": "cuda:0"}
        (tmp_path / "03.json").write_text(json.dumps({"races": [gpu]}))
        checks.races._shipped.cache_clear()
        assert shipped(32, made.net, tmp_path, device="cuda:1").device == "cuda:0"
        assert shipped(32, made.net, tmp_path, device="cpu") is None
    finally:
        checks.races._shipped.cache_clear()


@pytest.mark.parametrize("case", TRAINING)
def test_a_solution_trains_on_another_device_as_it_trains_on_the_cpu(case, monkeypatch):
    """From its training on, a solution run with ``WORKBOOK_DEVICE`` set to the other device keeps
    its network there and does what it does on the CPU: the same losses, the same checks passed,
    the same names sampled, the same losses on the data sets, and its race run there."""
    which, start, network, evaluated = TRAINING[case]
    if isinstance(which, str):
        nb = nbformat.read(SOLUTIONS / f"{which}.ipynb", as_version=4)
    else:
        nb = build.solution(which, seed=1)
    monkeypatch.setitem(checks.inputs.DEVICES, OTHER.type, lambda: True)
    monkeypatch.setenv("WORKBOOK_STEPS", "20")
    before, training = split_at(nb, start)
    ready, _ = run_cells(before)
    for name in ("Xtr", "Ytr", "Xdev", "Ydev", "Xte", "Yte"):  # a quick evaluation
        ready[name] = ready[name][:SMALL]
    here, said_here = run_cells(training, namespace=ready)
    monkeypatch.setenv("WORKBOOK_DEVICE", OTHER.type)
    with on_other_device():
        there, said_there = run_cells(training, namespace=ready)
        names = _sampled(there, network)
    raced = session.last_race()
    assert here["device"] == torch.device("cpu") and there["device"] == OTHER
    net = there[network]
    assert all(p.device == OTHER for p in (net.values() if isinstance(net, dict) else net))
    losses = sorted(name for name in here if name.startswith("lossi"))
    assert losses and [here[k] for k in losses] == [there[k] for k in losses]
    assert len(here[losses[0]]) == 20
    assert [(r.name, r.ok) for r in said_there] == [(r.name, r.ok) for r in said_here]
    assert all(r.ok for r in said_here)
    assert names == _sampled(here, network)
    assert [_numbers(here[k]) for k in evaluated] == [_numbers(there[k]) for k in evaluated]
    assert raced is None if "race(" not in str(training.cells) else raced.device == str(OTHER)


def _sampled(namespace: dict, network: str) -> list[str] | None:
    """Five names made up by the trained network, where the notebook makes up names."""
    if "make_name" not in namespace:
        return None
    generator = torch.Generator().manual_seed(1)
    return [namespace["make_name"](namespace[network], generator) for _ in range(5)]


def _numbers(x):
    """``x`` with its tensors as lists of numbers."""
    return tree_map(lambda t: t.cpu().tolist() if isinstance(t, torch.Tensor) else t, x)
