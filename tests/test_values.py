"""checks.values on Value classes a learner could write: every right one, in whatever style, passes
every check; every wrong one is named by its mistake, in the check of its operation, in
``backward()``'s check and in the whole graphs that reveal it, with no internal name in a message.
"""

from __future__ import annotations

import math
import random
import re

import pytest
import torch

import checks
from checks import MISTAKES, NotWritten, hints
from checks import values as cv
from checks.compare import reset, results
from tests.answers01 import solution_source

# ---------------------------------------------------------------- right engines, in four styles

# Karpathy's engine.py: `_prev` a set, a recursive topological sort with a visited set, subtraction
# through __neg__ and __add__, tanh from exp, relu's gradient read off its output.
MICROGRAD = """
class Value:
    def __init__(self, data, _children=(), _op="", label=""):
        self.data = data
        self.grad = 0
        self._backward = lambda: None
        self._prev = set(_children)
        self._op = _op
        self.label = label

    def __add__(self, other):
        other = other if isinstance(other, Value) else Value(other)
        out = Value(self.data + other.data, (self, other), "+")

        def _backward():
            self.grad += out.grad
            other.grad += out.grad
        out._backward = _backward
        return out

    def __mul__(self, other):
        other = other if isinstance(other, Value) else Value(other)
        out = Value(self.data * other.data, (self, other), "*")

        def _backward():
            self.grad += other.data * out.grad
            other.grad += self.data * out.grad
        out._backward = _backward
        return out

    def __pow__(self, other):
        out = Value(self.data**other, (self,), f"**{other}")

        def _backward():
            self.grad += (other * self.data**(other - 1)) * out.grad
        out._backward = _backward
        return out

    def tanh(self):
        e2 = math.exp(2 * self.data)
        t = (e2 - 1) / (e2 + 1)
        out = Value(t, (self,), "tanh")

        def _backward():
            self.grad += (1 - t**2) * out.grad
        out._backward = _backward
        return out

    def exp(self):
        out = Value(math.exp(self.data), (self,), "exp")

        def _backward():
            self.grad += out.data * out.grad
        out._backward = _backward
        return out

    def relu(self):
        out = Value(0 if self.data < 0 else self.data, (self,), "relu")

        def _backward():
            self.grad += (out.data > 0) * out.grad
        out._backward = _backward
        return out

    def backward(self):
        topo = []
        visited = set()

        def build_topo(v):
            if v not in visited:
                visited.add(v)
                for child in v._prev:
                    build_topo(child)
                topo.append(v)
        build_topo(self)
        self.grad = 1
        for v in reversed(topo):
            v._backward()

    def __neg__(self):
        return self * -1

    def __radd__(self, other):
        return self + other

    def __sub__(self, other):
        return self + (-other)

    def __rsub__(self, other):
        return other + (-self)

    def __rmul__(self, other):
        return self * other

    def __truediv__(self, other):
        return self * other**-1

    def __rtruediv__(self, other):
        return other * self**-1
"""

# `_prev` a list, an iterative depth-first walk, `x.grad = x.grad + ...`, tanh's slope from
# out.data, exp's from math.exp again, subtraction as a product by -1.
ITERATIVE_CLASS = """
class Value:
    def __init__(self, data, _children=(), _op="", label=""):
        self.data, self.grad, self.label = data, 0.0, label
        self._prev, self._op = list(_children), _op
        self._backward = lambda: None

    @staticmethod
    def wrap(x):
        return x if isinstance(x, Value) else Value(x)

    def __add__(self, other):
        other = Value.wrap(other)
        out = Value(self.data + other.data, [self, other], "+")

        def _backward():
            self.grad = self.grad + 1.0 * out.grad
            other.grad = other.grad + 1.0 * out.grad
        out._backward = _backward
        return out

    def __mul__(self, other):
        other = Value.wrap(other)
        out = Value(self.data * other.data, [self, other], "*")

        def _backward():
            self.grad = self.grad + out.grad * other.data
            other.grad = other.grad + out.grad * self.data
        out._backward = _backward
        return out

    def __pow__(self, k):
        out = Value(self.data ** k, [self], "**" + str(k))

        def _backward():
            self.grad = self.grad + out.grad * k * self.data ** (k - 1)
        out._backward = _backward
        return out

    def tanh(self):
        out = Value(math.tanh(self.data), [self], "tanh")

        def _backward():
            self.grad = self.grad + out.grad * (1 - out.data * out.data)
        out._backward = _backward
        return out

    def exp(self):
        out = Value(math.exp(self.data), [self], "exp")

        def _backward():
            self.grad = self.grad + out.grad * math.exp(self.data)
        out._backward = _backward
        return out

    def relu(self):
        out = Value(max(0.0, self.data), [self], "relu")

        def _backward():
            self.grad = self.grad + (out.grad if self.data > 0 else 0.0)
        out._backward = _backward
        return out

    def backward(self):
        #BACKWARD

    def __neg__(self):
        return -1 * self

    __radd__ = __add__
    __rmul__ = __mul__

    def __sub__(self, other):
        return self + Value.wrap(other) * -1

    def __rsub__(self, other):
        return Value.wrap(other) - self

    def __truediv__(self, other):
        return self * Value.wrap(other) ** -1

    def __rtruediv__(self, other):
        return Value.wrap(other) * self ** -1
"""

DFS = """order, seen, stack = [], set(), [(self, False)]
        while stack:
            v, finished = stack.pop()
            if finished:
                order.append(v)
            elif v not in seen:
                seen.add(v)
                stack.append((v, True))
                stack.extend((c, False) for c in v._prev)
        self.grad = 1.0
        for v in order[::-1]:
            v._backward()"""
ITERATIVE = ITERATIVE_CLASS.replace("#BACKWARD", DFS)

# Kahn's algorithm: count each node's uses, run a node once every user has passed its gradient on.
KAHN = ITERATIVE_CLASS.replace(
    "#BACKWARD",
    """uses, stack, seen = {}, [self], {self}
        while stack:
            v = stack.pop()
            for c in v._prev:
                uses[c] = uses.get(c, 0) + 1
                if c not in seen:
                    seen.add(c)
                    stack.append(c)
        self.grad = 1.0
        ready = [self]
        while ready:
            v = ready.pop()
            v._backward()
            for c in v._prev:
                uses[c] -= 1
                if uses[c] == 0:
                    ready.append(c)""",
)

# A post-order built by recursion with insert(0, ...), run from the front; leaves skipped.
PREPENDED = MICROGRAD.replace(
    """        build_topo(self)
        self.grad = 1
        for v in reversed(topo):
            v._backward()""",
    """        build_topo(self)
        topo = topo[::-1]
        self.grad = 1.0
        for v in topo:
            if v._prev:
                v._backward()""",
)

RIGHT = {"micrograd": MICROGRAD, "iterative": ITERATIVE, "kahn": KAHN, "prepended": PREPENDED}


def make(source: str, *swaps: tuple[str, str]) -> type:
    """The Value class of ``source``, each ``(old, new)`` of ``swaps`` replaced in its code."""
    for old, new in swaps:
        assert source.count(old) == 1, old
        source = source.replace(old, new)
    ns = {"math": math, "NotWritten": NotWritten}
    exec(source, ns)
    return ns["Value"]


def sol() -> str:
    return solution_source("class Value")


# ---------------------------------------------------------------- graphs for the whole engine


def g1(x0, x1, x2, x3):
    a = x0 * x1 + x2  # an intermediate node used three times, by two tanh nodes among them: an
    return a.tanh() * (a - x3) / (1 + x1**2) + a.tanh()  # `=` in tanh shows in any order


def g2(x0, x1, x2, x3):
    return (x0.relu() + x3.relu() + (0.5 * x2).exp()) * (x2 * x3 - x0**3)


def g3(x0, x1, x2, x3):
    h = (x1 - x2).tanh()
    return h * h + x3 / (2 + x0.tanh()) - h.exp()


def section1(a, b, c, f):
    return (a * b + c) * f


GRAPHS = [(g1, (0.9, -0.4, 0.3, -1.2)), (g2, (0.9, -0.4, 0.3, -1.2)), (g3, (0.7, 1.1, -0.5, 0.8))]


def mlp_loss(Value: type):
    """A small tanh MLP (3 -> 4 -> 4 -> 1) on four examples, its sum of squared errors, and its
    parameters: every hidden output feeds every neuron of the next layer."""
    rng = random.Random(1)
    sizes = [3, 4, 4, 1]
    layers = [
        [[Value(rng.uniform(-1, 1)) for _ in range(n_in + 1)] for _ in range(n_out)]
        for n_in, n_out in zip(sizes, sizes[1:], strict=False)
    ]
    xs = [[2.0, 3.0, -1.0], [3.0, -1.0, 0.5], [0.5, 1.0, 1.0], [1.0, 1.0, -1.0]]
    ys = [1.0, -1.0, -1.0, 1.0]
    loss = Value(0.0)
    for x, y in zip(xs, ys, strict=True):
        h = x
        for layer in layers:
            h = [sum((w * hi for w, hi in zip(n[1:], h, strict=True)), n[0]).tanh() for n in layer]
        loss = loss + (h[0] - y) ** 2
    return loss, [p for layer in layers for n in layer for p in n]


def whole(Value: type) -> dict[str, cv.Result]:
    """Every check of a whole backward pass: the section-1 graph against tensors, the graphs
    above against tensors and against central differences, and the MLP against its mirror."""
    out = {}
    for k, (f, xs) in enumerate([(section1, (2.0, -3.0, 10.0, -2.0)), *GRAPHS]):
        vs = [Value(x) for x in xs]
        tx = torch.tensor(xs, dtype=torch.float64, requires_grad=True)
        f(*tx).backward()
        (out[f"g{k}"],) = cv.judge_grads(f(*vs), [(f"g{k}", vs, tx)])
        if k:
            central = cv.judge_central(f"g{k} numeric", lambda v, f=f: f(*v), xs, Value)
            out[f"g{k} numeric"] = central
    out["net"] = cv.judge_graph("net", *mlp_loss(Value))
    return out


def everything(Value: type) -> dict[str, cv.Result]:
    return {
        **{op: cv.judge_op(Value, op) for op in cv.OPS},
        "backward": cv.judge_backward(Value),
        **whole(Value),
    }


INTERNAL = re.compile(r"`(loss|tL|tL_sq|result|ta_sq)`|\b(tL|tL_sq|ta_sq)\b")


def messages(res) -> str:
    return " ".join(filter(None, [res.hint, res.where, res.note]))


# ---------------------------------------------------------------- never red on a right answer


@pytest.mark.parametrize("style", [*RIGHT, "solution"])
def test_a_right_engine_passes_every_check(style):
    Value = make(sol()) if style == "solution" else make(RIGHT[style])
    got = everything(Value)
    assert all(r.ok for r in got.values()), {k: r.report() for k, r in got.items() if not r.ok}
    assert len(got) == len(cv.OPS) + 1 + 4 + 3 + 1


def test_a_right_engine_passes_again_after_its_graph_was_used():
    """A check runs its own backward pass from zero gradients: the grads of a graph that has
    been through backward() before do not add up."""
    Value = make(MICROGRAD)
    vs = [Value(x) for x in (2.0, -3.0, 10.0, -2.0)]
    L = section1(*vs)
    L.backward()
    tx = torch.tensor([2.0, -3.0, 10.0, -2.0], dtype=torch.float64, requires_grad=True)
    section1(*tx).backward()
    assert all(r.ok for r in cv.judge_grads(L, [("a", vs, tx), ("a again", vs, tx)]))
    assert [v.grad for v in vs] == [6.0, -4.0, -2.0, 4.0]


# ---------------------------------------------------------------- one operation at a time

MUL_EQ = (
    "self.grad += other.data * out.grad\n            other.grad += self.data * out.grad",
    "self.grad = other.data * out.grad\n            other.grad = self.data * out.grad",
)
ADD_EQ = (
    "self.grad += out.grad\n            other.grad += out.grad",
    "self.grad = out.grad\n            other.grad = out.grad",
)
ADD_AS_MUL = (  # the add and mul rules swapped (the issue's misleading "scale"s)
    ADD_EQ[0],
    "self.grad += other.data * out.grad\n            other.grad += self.data * out.grad",
)
MUL_AS_ADD = (MUL_EQ[0], "self.grad += out.grad\n            other.grad += out.grad")

# (engine, replacements, the operation, its mistake word)
OP_SLIPS = {
    # = for +=, in every operation and style it can hide in
    "mul, = for +=": (MICROGRAD, [MUL_EQ], "mul", "missing-path"),
    "add, = for +=": (MICROGRAD, [ADD_EQ], "add", "missing-path"),
    "tanh, = for +=": (
        MICROGRAD,
        [("self.grad += (1 - t**2) * out.grad", "self.grad = (1 - t**2) * out.grad")],
        "tanh",
        "missing-path",
    ),
    "pow, = for +=": (
        ITERATIVE,
        [("self.grad = self.grad + out.grad * k", "self.grad = out.grad * k")],
        "pow",
        "missing-path",
    ),
    "mul, both at once": (
        ITERATIVE,
        [
            (
                "self.grad = self.grad + out.grad * other.data\n"
                "            other.grad = other.grad + out.grad * self.data",
                "self.grad, other.grad = (self.grad + out.grad * other.data,\n"
                "                         other.grad + out.grad * self.data)",
            )
        ],
        "mul",
        "missing-path",
    ),
    # the rules of a sum and a product swapped, or a sum's where relu's belongs
    "add with mul's rule": (MICROGRAD, [ADD_AS_MUL], "add", "rule"),
    "mul with add's rule": (MICROGRAD, [MUL_AS_ADD], "mul", "rule"),
    "relu passes everything": (
        MICROGRAD,
        [("self.grad += (out.data > 0) * out.grad", "self.grad += out.grad")],
        "relu",
        "rule",
    ),
    # the input where the output belongs, or the wrong operand of a product
    "tanh with the input": (
        sol(),
        [("(1 - t**2) * out.grad", "(1 - self.data**2) * out.grad")],
        "tanh",
        "operand",
    ),
    "tanh with out.data's input": (
        ITERATIVE,
        [("(1 - out.data * out.data)", "(1 - self.data * self.data)")],
        "tanh",
        "operand",
    ),
    "exp with the input": (
        MICROGRAD,
        [("self.grad += out.data * out.grad", "self.grad += self.data * out.grad")],
        "exp",
        "operand",
    ),
    "mul with its own operand": (
        MICROGRAD,
        [
            (
                "self.grad += other.data * out.grad\n"
                "            other.grad += self.data * out.grad",
                "self.grad += self.data * out.grad\n"
                "            other.grad += other.data * out.grad",
            )
        ],
        "mul",
        "operand",
    ),
    # the gradient from above never multiplied in
    "tanh without out.grad": (
        sol(),
        [("self.grad += (1 - t**2) * out.grad", "self.grad += (1 - t**2)")],
        "tanh",
        "chain",
    ),
    "mul without out.grad": (
        ITERATIVE,
        [
            (
                "self.grad = self.grad + out.grad * other.data\n"
                "            other.grad = other.grad + out.grad * self.data",
                "self.grad = self.grad + other.data\n"
                "            other.grad = other.grad + self.data",
            )
        ],
        "mul",
        "chain",
    ),
    "pow without out.grad": (
        MICROGRAD,
        [("(other * self.data**(other - 1)) * out.grad", "(other * self.data**(other - 1))")],
        "pow",
        "chain",
    ),
    "add without out.grad": (
        ITERATIVE,
        [("self.grad = self.grad + 1.0 * out.grad", "self.grad = self.grad + 1.0")],
        "add",
        "chain",
    ),
    # a wrong forward pass
    "relu as abs": (
        sol(),
        [("self.data if self.data > 0 else 0.0", "abs(self.data)")],
        "relu",
        "forward",
    ),
    "exp of the negative": (
        ITERATIVE,
        [('math.exp(self.data), [self], "exp")', 'math.exp(-self.data), [self], "exp")')],
        "exp",
        "forward",
    ),
    "pow as a product": (
        MICROGRAD,
        [("Value(self.data**other, (self,)", "Value(self.data * other, (self,)")],
        "pow",
        "forward",
    ),
    # and the rest
    "tanh's slope negated": (
        MICROGRAD,
        [("(1 - t**2) * out.grad", "(t**2 - 1) * out.grad")],
        "tanh",
        "sign",
    ),
    "relu passes nothing": (
        MICROGRAD,
        [("self.grad += (out.data > 0) * out.grad", "pass")],
        "relu",
        "wrong",
    ),
    "pow's exponent kept": (
        MICROGRAD,
        [("(other * self.data**(other - 1))", "(other * self.data**other)")],
        "pow",
        "wrong",
    ),
    "mul adds a Value": (
        MICROGRAD,
        [("self.grad += other.data * out.grad", "self.grad += other * out.grad")],
        "mul",
        "wrong",
    ),
    "exp gives NaN": (
        MICROGRAD,
        [("self.grad += out.data * out.grad", "self.grad += math.nan * out.grad")],
        "exp",
        "nan",
    ),
}


@pytest.mark.parametrize("slip", list(OP_SLIPS))
def test_a_slip_in_one_operation_is_named_in_its_check_only(slip):
    source, swap, op, word = OP_SLIPS[slip]
    Value = make(source, *swap)
    got = {name: cv.judge_op(Value, name) for name in cv.OPS}
    assert not got[op].ok and got[op].mistake == word, got[op].report()
    assert all(r.ok for name, r in got.items() if name != op), [
        r.report() for name, r in got.items() if name != op and not r.ok
    ]
    assert not INTERNAL.search(messages(got[op])), got[op].report()


def test_the_words_are_the_vocabulary():
    assert {w for *_, w in OP_SLIPS.values()} <= set(MISTAKES)
    for word in ("order", "forward", "rule", "chain", "missing-path", "operand"):
        assert word in MISTAKES


def test_what_the_messages_say():
    said = {
        slip: cv.judge_op(make(src, *swap), op) for slip, (src, swap, op, _) in OP_SLIPS.items()
    }
    assert "`x * x` at x = 1.5 both operands are one Value" in said["mul, = for +="].hint
    assert "keeps only one of their two contributions" in said["mul, = for +="].hint
    assert said["mul, = for +="].where == "yours 1.05, expected 2.1 from autograd."
    # the quiz's x * x is right with `self.grad, other.grad = ...`: the slot lost is named there
    assert "`x * x`" in said["mul, both at once"].hint
    assert (
        "already held 0.25" in said["tanh, = for +="].hint and "`+=`" in said["pow, = for +="].hint
    )
    assert "multiply it by `out.grad`" in said["tanh without out.grad"].hint
    assert "what the rule of a product gives" in said["add with mul's rule"].hint
    assert "what the rule of a sum gives" in said["mul with add's rule"].hint
    assert "`out.grad` handed on unchanged" in said["relu passes everything"].hint
    assert "the input (`self.data`) where tanh's output belongs" in said["tanh with the input"].hint
    assert "at x = -1.5" in said["relu as abs"].hint and "`out.data`" in said["relu as abs"].hint
    assert said["relu as abs"].where == "yours 1.5, expected 0 from PyTorch."
    assert "is a Value, not a number" in said["mul adds a Value"].hint
    for res in said.values():  # one sentence, and no expected number in the hint itself
        assert res.hint.endswith(".") and str(res.expected) not in res.hint.replace("0.7", "")


def test_an_operation_not_written_yet_says_so_and_a_broken_one_says_why():
    Value = make(
        sol(), ("self.grad += out.data * out.grad", 'raise NotWritten("the exp of a Value")')
    )
    res = cv.judge_op(Value, "exp")
    assert res.mistake == "missing" and res.hint == "not written yet: the exp of a Value"
    Value = make(sol(), ("self.grad += out.data * out.grad", "self.grad += out.data / 0.0"))
    res = cv.judge_op(Value, "exp")
    assert res.mistake == "wrong" and "raised ZeroDivisionError" in res.hint, res.hint
    assert cv.judge_op(make(sol()), "exp").ok


# ---------------------------------------------------------------- backward() and its order

ORDER = """        for v in reversed(order):
            v._backward()"""
VISIT = """            if v not in seen:
                seen.add(v)
                for child in v._prev:
                    visit(child)
                order.append(v)"""
PRE_ORDER = (  # each node listed before its children, not after them
    VISIT,
    VISIT.replace("                order.append(v)", "").replace(
        "seen.add(v)", "seen.add(v)\n                order.append(v)"
    ),
)
UNREVERSED = (ORDER, ORDER.replace("reversed(order)", "order"))
ORDER_SLIPS = {  # (replacements, what the hint says)
    "not reversed": ([UNREVERSED], "ran before"),
    "pre-order": ([UNREVERSED, PRE_ORDER], "ran before"),
    "pre-order reversed": ([PRE_ORDER], "ran before"),
    "no visited set": ([("            if v not in seen:", "            if True:")], "2 times"),
    "the root left out": (
        [("        visit(self)", "        for c in self._prev:\n            visit(c)")],
        "never ran",
    ),
}
BFS = """        order, seen, queue = [], {self}, [self]
        while queue:
            v = queue.pop(0)
            order.append(v)
            for c in v._prev:
                if c not in seen:
                    seen.add(c)
                    queue.append(c)
        self.grad = 1.0
        for v in order:
            v._backward()"""


def _breadth_first() -> type:
    src = sol()
    start = src.index("        order, seen = [], set()")
    end = src.index("        ### END SOLUTION", start)
    return make(src[:start] + BFS + "\n" + src[end:])


@pytest.mark.parametrize("slip", [*ORDER_SLIPS, "breadth first"])
def test_an_order_slip_is_named_order_where_a_node_is_used_twice(slip):
    if slip == "breadth first":
        Value, said = _breadth_first(), "ran before"
    else:
        swap, said = ORDER_SLIPS[slip]
        Value = make(sol(), *swap)
    got = everything(Value)
    assert all(got[op].ok for op in cv.OPS)  # the operations are right
    assert got["backward"].mistake == "order" and said in got["backward"].hint, got[
        "backward"
    ].report()
    assert "reverse topological order" in got["backward"].hint or said != "ran before"
    assert not got["net"].ok and got["net"].mistake == "order", got["net"].report()
    assert "the check `backward` shows the same" in got["net"].hint
    failed = [r for r in got.values() if not r.ok]
    assert all(r.mistake == "order" for r in failed), [r.report() for r in failed]
    assert not any(INTERNAL.search(messages(r)) for r in failed)


def test_the_order_message_names_the_node_and_its_user():
    swap, _ = ORDER_SLIPS["pre-order"]
    res = cv.judge_backward(make(sol(), *swap))
    assert res.hint.startswith("in L = t * s (t = tanh(a), s = a + z, a = x * y), the `_backward`")
    assert "of `a` ran before that of `s`, which uses it" in res.hint, res.hint


def test_a_backward_pass_that_does_not_start_at_one_says_so():
    Value = make(sol(), ("        self.grad = 1.0\n", ""))
    res = cv.judge_backward(Value)
    assert res.mistake == "wrong" and "root's grad at 0" in res.hint and "∂L/∂L = 1" in res.hint


def test_backward_right_but_an_operation_wrong_is_upstream():
    res = cv.judge_backward(make(MICROGRAD, MUL_EQ))
    assert res.mistake == "upstream" and res.blamed == ("mul",), res.report()
    assert "fails its own check `mul`" in res.hint


# ---------------------------------------------------------------- whole graphs name the slip


@pytest.mark.parametrize("slip", list(OP_SLIPS))
def test_a_whole_graph_names_the_operation_and_its_slip(slip):
    source, swap, op, word = OP_SLIPS[slip]
    got = whole(make(source, *swap))
    failed = {k: r for k, r in got.items() if not r.ok}
    assert failed, slip  # some graph reveals it
    for k, r in failed.items():
        assert r.mistake == word, (k, r.report())
        assert f"goes through your {op}, which fails its own check `{op}`" in r.hint, r.hint
        assert not INTERNAL.search(messages(r)), r.report()


def test_the_trained_network_of_the_issue_is_caught():
    """#22: an unreversed order trains section 5's MLP to 0.0246 instead of 0.0196."""
    Value = make(sol(), UNREVERSED)
    loss, params = mlp_loss(Value)
    res = cv.judge_graph("net (trained)", loss, params)
    assert res.mistake == "order" and res.hint.startswith("in net (trained), the `_backward` of")


def test_a_graph_that_cannot_be_built_in_pytorch_says_why():
    Value = make(MICROGRAD)
    x = Value(0.5)
    y = x.tanh()
    y._op = "sinh"
    res = cv.judge_graph("odd", y, [x])
    assert res.mistake == "no-grad" and "'sinh'" in res.hint


def test_a_backward_that_raises_gives_a_sentence_not_a_traceback():
    Value = make(sol(), ("        visit(self)", "        visit(self.missing)"))
    vs = [Value(2.0), Value(3.0)]
    t = torch.tensor([2.0, 3.0], dtype=torch.float64, requires_grad=True)
    (t[0] * t[1]).backward()
    (res,) = cv.judge_grads(vs[0] * vs[1], [("x", vs, t)])
    assert res.mistake == "wrong" and res.hint.startswith("your backward() raised AttributeError")


# ---------------------------------------------------------------- recorded, with its hint ladder


@pytest.fixture
def fresh():
    """No check run and no rung shown, before and after."""
    forget = (reset, hints.reset)
    for f in forget:
        f()
    yield
    for f in forget:
        f()


def test_each_check_is_recorded_under_its_ladder_and_the_hint_starts_from_it(fresh, capsys):
    import json

    ladders = json.loads((hints.HINTS / "01-scalar-autograd.json").read_text())
    for name in [*cv.OPS, "backward"]:
        assert [lad["check"] for lad in ladders[name]] == [name]
    Value = make(MICROGRAD, MUL_EQ)
    for op in cv.OPS:
        cv.check_op(Value, op)
    cv.check_backward(Value)
    shown = capsys.readouterr().out
    assert "mul             | exact: False | approximate: False" in shown
    assert "  ✗ missing-path: in `x * x` at x = 1.5" in shown
    assert [r.name for r in results()] == [*cv.OPS, "backward"]
    first = checks.hint("mul")
    assert first.text.startswith("Your last mul failed (missing-path): in `x * x`"), first.text
    assert hints.used("mul")[0] == 1


def test_check_grads_prints_one_line_per_check(capsys, fresh):
    Value = make(ITERATIVE)
    vs = [Value(x) for x in (2.0, -3.0, 10.0, -2.0)]
    tx = [torch.tensor(x, dtype=torch.float64, requires_grad=True) for x in (2.0, -3.0, 10.0, -2.0)]
    section1(*tx).backward()
    named = [(n, v, t) for n, v, t in zip("abcf", vs, tx, strict=True)]
    assert cv.check_grads(section1(*vs), *named) is None
    lines = capsys.readouterr().out.splitlines()
    assert [ln.split()[0] for ln in lines] == list("abcf") and all("True " in ln for ln in lines)
