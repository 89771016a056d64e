"""What an answer may use (checks/grading/allow.py): every honest answer of the lecture, the corpus
and the solutions uses nothing beyond it, every route to autograd (or around the grader) is listed
by its spelling, and the section of docs/grading.md is the allowlist."""

from __future__ import annotations

import functools
import re
from pathlib import Path

import pytest

from checks.grading.allow import README_HEADING, disallowed, readme_section
from checks.grading.exercise import AnswerCell, Exercise, load_exercise
from checks.grading.review import lasting
from tests.cascade import CHECKED, Spoil, _runs, replaced
from tests.corpus_answers import CORPUS
from tests.lecture_answers import LECTURE

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = ("01", "02", "03", "04", "05")
Case = tuple[str, str, list[tuple[str, str]]]  # a cell, its template, the earlier answer cells


@functools.cache
def exercise(prefix: str) -> Exercise:
    return load_exercise(next((ROOT / "solutions").glob(f"{prefix}-*.ipynb")))


def _source(ex: Exercise, a: AnswerCell) -> str:
    return ex.cells[a.index].source


def solved(prefix: str) -> list[Case]:
    """Every answer cell of a solution, with its template and the solution's earlier cells."""
    ex = exercise(prefix)
    pairs = [(_source(ex, a), a.template) for a in ex.answers]
    return [(src, tpl, pairs[:k]) for k, (src, tpl) in enumerate(pairs)]


def corpus_case(notebook: str, spoil: Spoil) -> Case:
    """The answer cell of ``spoil``: the solution's cell with the learner's lines put in."""
    cases = solved(notebook[:2])
    if spoil.inside:
        k = next(i for i, (s, _, _) in enumerate(cases) if f"def {spoil.inside}(" in s)
    else:
        check = spoil.check or next(
            c for s, _, _ in cases for c, name, _ in CHECKED.findall(s) if name == spoil.answer
        )
        k = [i for i, (s, _, _) in enumerate(cases) if _runs(s, check)][spoil.nth - 1]
    src, tpl, before = cases[k]
    return replaced(src, spoil.answer, spoil.line), tpl, before


def lecture_cases() -> list[tuple[str, Case]]:
    """Notebook 03's answer cells as the lecture writes them (its lines for the placeholders)."""
    ex = exercise("03")
    filled = []
    for a in ex.answers:
        tpl = a.template
        lines = tpl.split("\n")
        at = [i for i, ln in enumerate(lines) if re.match(r"\s*\w+ = \.\.\.  # TODO", ln)]
        lines[at[0] : at[-1] + 1] = LECTURE[a.cell_id]
        filled.append((a.cell_id, "\n".join(lines), tpl))
    return [
        (cid, (src, tpl, [(s, t) for _, s, t in filled[:k]]))
        for k, (cid, src, tpl) in enumerate(filled)
    ]


# ---------------------------------------------------------------- honest work: nothing listed

HONEST = [  # forms a learner writes that the solutions and the corpus may not have
    "def helper(x):\n    return 1 - x**2\ndhpreact = helper(h) * dh",
    "dlogits = torch.einsum('bi,ij->bj', dh, W2)",
    "dlogits = F.one_hot(Yb, num_classes=27).float()\ndlogits = (probs - dlogits) / n",
    "dx = torch.where(h > 0, dh, torch.zeros_like(dh))",
    "dC = torch.zeros_like(C)\ndC.index_add_(0, Xb.view(-1), demb.view(-1, 10))",
    "dC = torch.zeros_like(C)\ndC.index_put_((Xb.flatten(),), demb.flatten(0, 1), accumulate=True)",
    "dC = torch.zeros_like(C).scatter_add_(0, Xb.view(-1, 1).expand(-1, 10), demb.view(-1, 10))",
    "dh = (dlogits.double() @ W2.double().T).float()",
    "dh = (dlogits.to(torch.float64) @ W2.to(torch.float64).T).to(W2.dtype)",
    "dC = torch.zeros_like(C)\nfor i in range(n):\n    for j in range(3):\n"
    "        dC[Xb[i, j]] += demb[i, j]",
    "print(dh.shape, dh.dtype)\ndh = dlogits @ W2.T\nprint(f'{dh.abs().max().item():.3f}')",
    "import matplotlib.pyplot as plt\nfig, ax = plt.subplots(1, 2)\nax[0].imshow(dh.numpy())\n"
    "ax[1].hist(dh.view(-1).tolist(), 50)\nfor a in ax:\n    a.set_title('dh')\nplt.show()",
    "h = dlogits @ W2.T  # scratch in a forward name\ndh = h\nlogits = None",
    "import torch.nn.functional as F\nimport math\nfrom torch.nn.functional import one_hot\n"
    "dlogits = (F.softmax(logits, 1) - one_hot(Yb, 27)) / n * math.exp(0)",
    "import numpy as np\ndW = torch.from_numpy(np.dot(x.numpy().T, dout.numpy()))",
    "with torch.no_grad():\n    dh = dlogits @ W2.T",
    "%time dh = dlogits @ W2.T",
    "%%time\ndh = dlogits @ W2.T",
    "dh = dlogits @ W2.T\ndisplay(dh)\nhint('dh')",
    "dh = sum(dlogits[:, k:k + 1] * W2.T[k] for k in range(W2.shape[1]))",
    "dbnraw = bngain * dhpreact\ndbnraw.mul_(1.0)\ndbnraw.clamp_(-1e9, 1e9)",
    "lst = []\nfor row in dlogits:\n    lst.append(row @ W2.T)\ndh = torch.stack(lst)",
    "dh = dlogits.matmul(W2.mT).contiguous().clone().detach()",
    "print(W2.requires_grad, W2.is_leaf)\ndh = dlogits @ W2.T",
    "torch.einsum?\ndh = torch.einsum('bj,ij->bi', dlogits, W2)",
    "%matplotlib inline\nfrom IPython.display import display\nimport torch.nn as nn\n"
    "dh = nn.functional.linear(dlogits, W2)\nprint(torch.special.erf(dh).norm(), 'a'.upper())",
]


@pytest.mark.parametrize("source", HONEST)
def test_honest_forms_use_nothing_else(source):
    assert disallowed(source, "dh = ...  # TODO\ncmp('h', dh, h)") == []


@pytest.mark.parametrize("prefix", NOTEBOOKS)
def test_the_solutions_use_nothing_else(prefix):
    for src, tpl, before in solved(prefix):
        assert disallowed(src, tpl, before) == [], src[-300:]
        assert disallowed(tpl, tpl) == []


def test_the_lectures_answers_use_nothing_else():
    cases = lecture_cases()
    assert len(cases) == 21
    for cid, (src, tpl, before) in cases:
        assert disallowed(src, tpl, before) == [], cid


@pytest.mark.parametrize("notebook", sorted(CORPUS))
def test_every_corpus_answer_uses_nothing_else(notebook):
    flagged = []
    for spoil in CORPUS[notebook]:
        src, tpl, before = corpus_case(notebook, spoil)
        if found := disallowed(src, tpl, before):
            flagged.append(f"{spoil} `{spoil.line}`: {found}")
    assert flagged == []
    assert len(CORPUS[notebook]) >= 50


# ---------------------------------------------------------------- routes around: each is listed

WALKER = """
def _walk(root, wanted):
    grads = {root.grad_fn: (torch.ones_like(root),)}
    order, seen = [], set()
    def visit(node):
        if node is None or node in seen:
            return
        seen.add(node)
        for nxt, _ in node.next_functions:
            visit(nxt)
        order.append(node)
    visit(root.grad_fn)
    found = {}
    for node in reversed(order):
        outs = node(*grads.get(node, ()))
        outs = outs if isinstance(outs, tuple) else (outs,)
        for (nxt, _), g in zip(node.next_functions, outs):
            if nxt is not None and g is not None:
                old = grads.get(nxt)
                grads[nxt] = (g if old is None else old[0] + g,)
        found[node] = grads.get(node)
    return found
dh = _walk(loss, h)
"""

ATTACKS = {  # a route, and a spelling that must be among what is listed
    "walker": (WALKER, "root.grad_fn"),
    "walker-next": (WALKER, "node.next_functions"),
    "from-torch-import-func": ("from torch import func\ndh = func.grad(f)(h)", "torch.func"),
    "func-alias": ("import torch.func as tf\ndh = tf.vjp(f, h)[1](g)", "torch.func"),
    "func-chain": ("dh = torch.func.jacrev(f)(h)", "torch.func.jacrev"),
    "vmap": ("dh = torch.vmap(f)(h)", "torch.vmap"),
    "attrgetter": (
        "import operator\ndh = operator.attrgetter('autograd.functional.vjp')(torch)(f, h)[1]",
        "operator",
    ),
    "attrgetter-unimported": (
        "dh = operator.attrgetter('autograd.forward_ad')(torch)",
        "operator.attrgetter",
    ),
    "reduce-getattr": (
        "import functools\ndh = functools.reduce(getattr, ['autograd', 'grad'], torch)",
        "getattr",
    ),
    "engine": (
        "dh = torch._C._ImperativeEngine().run_backward((loss,), (g,), True, False, (h,), 1, 0)",
        "torch._C._ImperativeEngine",
    ),
    "variable-engine": (
        "e = torch.autograd.variable.Variable._execution_engine",
        "torch.autograd.variable.Variable._execution_engine",
    ),
    "register-hook": (
        "h.register_hook(lambda g: keep.append(g))\nloss.backward()",
        "h.register_hook",
    ),
    "node-hook": ("loss.grad_fn.register_hook(lambda gi, go: None)", "loss.grad_fn"),
    "tanh-backward": (
        "dhpreact = torch.ops.aten.tanh_backward(dh, h)",
        "torch.ops.aten.tanh_backward",
    ),
    "nll-backward": (
        "dlogprobs = torch.ops.aten.nll_loss_backward(g, logprobs, Yb, None, 1, -100, t)",
        "torch.ops.aten.nll_loss_backward",
    ),
    "embedding-backward": (
        "dC = torch.ops.aten.embedding_dense_backward(demb, Xb, 27, -1, False)",
        "torch.ops.aten.embedding_dense_backward",
    ),
    "torch-kernel": ("dhpreact = torch.tanh_backward(dh, h)", "torch.tanh_backward"),
    "vf-kernel": ("dhpreact = torch._VF.tanh_backward(dh, h)", "torch._VF.tanh_backward"),
    "plain-grad": (
        "loss.backward(retain_graph=True)\ndlogprobs = logprobs.grad.clone()",
        "logprobs.grad",
    ),
    "backward": ("loss.backward(retain_graph=True)", "loss.backward"),
    "tensor-backward": ("torch.Tensor.backward(loss)", "torch.Tensor.backward"),
    "autograd-grad": ("dh, = torch.autograd.grad(loss, [h])", "torch.autograd.grad"),
    "from-autograd": (
        "from torch.autograd import grad as g\ndh = g(loss, h)[0]",
        "torch.autograd.grad",
    ),
    "functional": (
        "dh = torch.autograd.functional.jacobian(f, h)",
        "torch.autograd.functional.jacobian",
    ),
    "forward-ad": (
        "import torch.autograd.forward_ad as fwAD\nwith fwAD.dual_level():\n    pass",
        "torch.autograd.forward_ad",
    ),
    "nn-grad": ("dW = F.grad.conv2d_weight(x, w, g)", "F.grad.conv2d_weight"),
    "f-torch": ("dh = F.torch.autograd.grad(loss, h)", "F.torch.autograd.grad"),
    "dunder-dict": ("ag = torch.__dict__['autograd']", "torch.__dict__"),
    "vars": ("ag = vars(torch)['autograd']", "vars"),
    "dunder-import": ("ag = __import__('torch.autograd')", "__import__"),
    "eval": ("dh = eval('h' + '.grad')", "eval"),
    "exec": ("exec(compile(code, 'x', 'exec'))", "exec"),
    "globals": ("globals()['dh'] = 1", "globals"),
    "builtins": ("g = __builtins__.getattr", "__builtins__.getattr"),
    "sys-modules": ("ag = sys.modules['torch.autograd']", "sys.modules"),
    "importlib": ("import importlib\nag = importlib.import_module('torch.autograd')", "importlib"),
    "import-in-function": (
        "def f():\n    import torch.autograd as ag\n    return ag",
        "torch.autograd",
    ),
    "ipython": ("get_ipython().run_cell('dh = h.grad')", "get_ipython()"),
    "recorder": ("import checks.grading.recorder as r\nr.emit = print", "checks.grading.recorder"),
    "grader-prelude": ("__gr.check_grads = lambda scope: None", "__gr.check_grads"),
    "class-claims-grad-fn": (
        "class D:\n    def __init__(self):\n        self.grad_fn = None\ndh = loss.grad_fn",
        "loss.grad_fn",
    ),
    "torch-function": (
        "class T(torch.Tensor):\n    @classmethod\n"
        "    def __torch_function__(cls, f, t, a=(), k=None):\n        return f(*a)",
        "def __torch_function__",
    ),
    "metaclass": ("class T(metaclass=M):\n    pass", "metaclass="),
    "type": ("T = type('T', (torch.Tensor,), {})", "type"),
    "dunder-get": ("dh = torch.Tensor.grad_fn.__get__(loss)", "torch.Tensor.grad_fn.__get__"),
    "lambda": ("f = lambda: [p.grad for p in parameters]", "p.grad"),
    "enable-grad": ("with torch.enable_grad():\n    pass", "torch.enable_grad"),
    "requires-grad": ("x = h.detach().requires_grad_()", "h.detach().requires_grad_"),
    "requires-grad-set": ("h.requires_grad = True", "h.requires_grad"),
    "retain-grad": ("h.retain_grad()", "h.retain_grad"),
    "numeric": ("dh = check_numeric(f, h)", "check_numeric()"),
    "numgrad": ("dh = numgrad(f, h)", "numgrad()"),
    "plt-sys": ("ag = plt.sys.modules['torch.autograd']", "plt.sys.modules"),
    "plt-importlib": ("ag = plt.importlib.import_module('torch.func')", "plt.importlib"),
    "matplotlib-subprocess": (
        "import matplotlib\nmatplotlib.subprocess.run(['cat', 'x'])",
        "matplotlib.subprocess",
    ),
    "special-torch": ("dh = torch.special.torch.autograd.grad(loss, h)", "torch.special.torch"),
    "numgrad-renamed": ("g = numgrad\ndh = g(f, h)", "numgrad()"),
    "shell-capture": ("out = !ls ..\ndh = h", "get_ipython()"),
    "help-hides-nothing": ("torch.einsum?\ndh = h.grad", "h.grad"),
    "instructor-backward": ("dh = against_autograd(h)", "against_autograd()"),
    "checkpoint": ("torch.utils.checkpoint.checkpoint(f, h)", "torch.utils.checkpoint.checkpoint"),
    "module": ("lin = torch.nn.Linear(3, 4)", "torch.nn.Linear"),
    "shell": ("!cat /etc/passwd", "!cat /etc/passwd"),
    "run-magic": ("%run solutions.py", "%run solutions.py"),
    "cell-magic": ("%%bash\ncat ../solutions/*.ipynb", "%%bash"),
    "os": ("import os\nos.system('ls')", "os"),
    "star": ("from torch.autograd import *", "torch.autograd.*"),
    "relative": ("from . import x", "..x"),
    "private": ("dh = h._grad", "h._grad"),
    "named-tuple-edge": ("e = torch.autograd.graph.get_gradient_edge(h)", "torch.autograd.graph"),
}


@pytest.mark.parametrize("route", sorted(ATTACKS))
def test_every_route_around_is_listed(route):
    source, spelling = ATTACKS[route]
    found = disallowed(source, "dh = ...  # TODO\ncmp('h', dh, h)")
    assert any(f.startswith(spelling) for f in found), found


def test_a_function_of_an_earlier_cell_is_read_where_it_is_called():
    helper = "def _of(x):\n    return torch.autograd.grad(loss, [x], retain_graph=True)[0]\n"
    earlier = [(helper + "dlogprobs = _of(logprobs)", "dlogprobs = ...  # TODO")]
    assert disallowed("dprobs = _of(probs)", "dprobs = ...  # TODO", earlier) == [
        "_of: torch.autograd.grad"
    ]
    honest = [("def helper(x):\n    return 1 - x**2\ndh = 1", "dh = ...  # TODO")]
    assert disallowed("dhpreact = helper(h) * dh", "", honest) == []
    # the cell's own definition wins over an earlier one
    own = "def _of(x):\n    return x * 2\ndprobs = _of(probs)"
    assert disallowed(own, "", earlier) == []


def test_what_the_template_uses_is_allowed():
    template = "a = drawn(3.0)\nt = scalar(a)\nL = t * t\nL.backward()\nda = ...  # TODO"
    assert disallowed(template + "\nda = 2 * a", template) == []
    assert disallowed("L.backward()\nda = 2 * a", "da = ...  # TODO") == ["L.backward"]
    value = (
        "class V:\n    def __init__(self):\n        self.grad = 0.0\n    def backward(self): pass"
    )
    assert disallowed(value + "\nv = V()\nv.backward()\nx = v.grad", value) == []


def test_what_changes_the_kernel_lasts():
    assert lasting(disallowed("__gr.emit = print", "")) == ["__gr.emit"]
    assert lasting(disallowed("exec('x = 1')", "")) == ["exec"]
    assert lasting(disallowed("dh = h.grad", "")) == []


def test_unparseable_cells_and_odd_input_list_nothing():
    assert disallowed("dh = (", "") == []
    assert disallowed(None, None) == []  # type: ignore[arg-type]


def test_the_readme_section_is_the_allowlist():
    """The section of docs/grading.md (once the README's) is what ``readme_section`` renders."""
    text = (ROOT / "docs" / "grading.md").read_text()
    start = text.index(README_HEADING)
    end = text.find("\n#", start + len(README_HEADING))  # the next heading, or the page's end
    assert text[start : end if end >= 0 else None].strip() == readme_section().strip()


# ---------------------------------------------------------------- the run-time watch

KERNEL = """
import json, sys, warnings
import torch
import torch.nn.functional as F
import checks.grading.recorder as r
from checks import cmp
warnings.simplefilter("ignore")
got = []
r.emit = lambda kind, **c: got.append(c["call"]) if kind == "autograd" else None
r.watch_autograd()
g = torch.Generator().manual_seed(0)
W2 = torch.randn(8, 5, generator=g, requires_grad=True)
x = torch.randn(4, 8, generator=g)
h = torch.tanh(x @ W2)
logits = h * 2
Yb = torch.tensor([0, 1, 2, 3])
loss = F.cross_entropy(logits, Yb)
loss.backward(retain_graph=True)
said = {}
for label, src in json.loads(sys.argv[1]).items():
    got.clear()
    r.restore(globals(), r.pack({}), [], [], [])
    try:
        exec(compile(src, "<cell>", "exec"), globals())
    except Exception as e:
        got.append("raised " + type(e).__name__)
    r.record({})
    r.check_grads(globals())
    said[label] = list(got)
print(json.dumps(said))
"""

CELLS = {  # what a cell does, and whether the watch must see autograd in it
    "honest": (
        "dh = (F.softmax(logits, 1) - F.one_hot(Yb, 5)) / 4 * 2\nprint(dh)\nrepr(h)\n"
        "dW = x.T @ (dh * (1 - h**2))\ncmp('h', dh, h)\nz = torch.zeros_like(W2)\n"
        "z.index_add_(0, torch.tensor([0, 0]), W2[:2].detach())\nq = torch.where(h > 0, h, 0 * h)",
        False,
    ),
    "backward": ("loss.backward(retain_graph=True)\nd = W2.grad", True),
    "autograd.grad": ("d = torch.autograd.grad(loss, [h], retain_graph=True)[0]", True),
    "functional": (
        "import operator\nvjp = operator.attrgetter('autograd.functional.vjp')(torch)\n"
        "d = vjp(lambda w: torch.tanh(x @ w).sum(), W2.detach())[1]",
        True,
    ),
    "func": ("from torch import func\nd = func.grad(lambda w: torch.tanh(x @ w).sum())(W2)", True),
    "engine": (
        "e = torch._C._ImperativeEngine()\n"
        "d = e.run_backward((loss,), (torch.tensor(1.0),), True, False, (h,), True, False)",
        True,
    ),
    "kernel": ("d = torch.ops.aten.tanh_backward(torch.ones_like(h), h.detach())", True),
    "nodes": ("node = loss.grad_fn\nouts = node(torch.tensor(1.0))", True),
    "attrgetter": ("import operator\nnode = operator.attrgetter('grad_fn')(loss)", True),
    "hook": ("keep = []\nh.register_hook(keep.append)", True),
    "leaf": ("leaf = torch.zeros(3, requires_grad=True)", True),
    "forward-ad": (
        "import torch.autograd.forward_ad as fwAD\nwith fwAD.dual_level():\n"
        "    t = fwAD.unpack_dual(torch.tanh(fwAD.make_dual(x, torch.ones_like(x)))).tangent",
        True,
    ),
    "edge": ("e = torch.autograd.graph.get_gradient_edge(h)", True),
    "func-jvp": (
        "from torch import func\nt = func.jvp(torch.tanh, (x,), (torch.ones_like(x),))",
        True,
    ),
    "softmax-kernel": ("d = torch._softmax_backward_data(h, h, 1, h.dtype)", True),
    "vf-kernel": ("d = torch._C._VariableFunctions._softmax_backward_data(h, h, 1, h.dtype)", True),
    "nn-grad": (
        "d = torch.nn.grad.conv1d_input((1, 1, 5), torch.ones(1, 1, 2), torch.ones(1, 1, 4))",
        True,
    ),
}


def test_the_watch_sees_autograd_however_it_is_reached_and_nothing_else():
    import json
    import subprocess
    import sys

    cells = {k: src for k, (src, _) in CELLS.items()}
    done = subprocess.run(
        [sys.executable, "-c", KERNEL, json.dumps(cells)],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    said = json.loads(done.stdout.strip().splitlines()[-1])
    for label, (_, seen) in CELLS.items():
        assert bool(said[label]) == seen, (label, said[label])
        assert not any(s.startswith("raised") for s in said[label]), (label, said[label])


def test_a_private_name_the_learner_bound_earlier_is_theirs_but_ipythons_are_not():
    """``_tmp`` from one of the learner's earlier cells is their own scratch; IPython's history
    (``_``, ``_oh``, ``_12``, ``_i3``) and the builtins are never an answer's to read."""
    earlier = [("_tmp = dlogits.clone()\ndh = dlogits @ W2.T", "dh = ...  # TODO")]
    assert disallowed("dhpreact = _tmp @ W2.T", "dhpreact = ...  # TODO", earlier) == []
    for name in ("_", "__", "_oh", "_12", "_i3", "_ih", "__builtins__"):
        bound = [(f"{name} = 1\ndh = 2", "dh = ...  # TODO")]
        assert disallowed(f"dx = {name}", "dx = ...  # TODO", bound) == [name], name
