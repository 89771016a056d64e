"""What the autograd graph knows about a tensor: who used it, and what each use sent back.

Used only to explain a wrong answer, never to judge a right one. The graph is read from
the loss (given, or found among the caller's variables). Each use's contribution to the
tensor's gradient is measured with hooks on a second backward pass when the graph is
still alive (``loss.backward(retain_graph=True)``); after a plain ``loss.backward()`` the
saved tensors are gone, and the contributions are rebuilt from the retained ``.grad`` of
each use's output with the local derivative of the operation (a small table of rules).
"""

from __future__ import annotations

import itertools
import math
import re
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from types import FrameType

import torch

from checks import heap
from checks.diagnose import Given, Use

Node = object  # torch.autograd.graph.Node; kept loose so that any graph object fits


@dataclass(frozen=True)
class Earlier:
    """A learner's earlier checked answer: the tensor it is the gradient of, its name (``dX``), its
    value, whether it passed, and the first wrong answers it was built on (``roots``: itself for a
    mistake of its own, those it was taken from for an ``upstream`` one, none for a pass)."""

    tensor: torch.Tensor
    label: str
    value: torch.Tensor
    ok: bool
    roots: tuple[str, ...] = ()

    @property
    def own(self) -> bool:
        """Wrong by a mistake of its own, not only by what it was taken from."""
        return not self.ok and self.roots == (self.label,)


def _roots(wrong: list[Earlier]) -> tuple[str, ...]:
    """The first wrong answers behind ``wrong``, each once, in order."""
    return tuple(dict.fromkeys(r for a in wrong for r in (a.roots or (a.label,))))


def frame_tensors(frame: FrameType | None) -> dict[str, torch.Tensor]:
    """Tensors visible from ``frame`` outwards, by name (innermost binding wins)."""
    found: dict[str, torch.Tensor] = {}
    while frame is not None:
        for scope in (frame.f_locals, frame.f_globals):
            for key, val in scope_tensors(scope).items():
                found.setdefault(key, val)
        frame = frame.f_back
    return found


def scope_tensors(scope: dict) -> dict[str, torch.Tensor]:
    """The tensors of one namespace by name (not ``_private`` ones), a dict of named tensors too."""
    found: dict[str, torch.Tensor] = {}
    for key, val in list(scope.items()):
        if key.startswith("_"):
            continue
        if isinstance(val, torch.Tensor):
            found.setdefault(key, val)
        elif isinstance(val, dict) and len(val) < 1000:  # a dict of named tensors counts too
            for k, v in list(val.items()):
                if isinstance(k, str) and isinstance(v, torch.Tensor):
                    found.setdefault(k, v)
    return found


def frame_ints(frame: FrameType | None, names: tuple[str, ...] = ("n", "batch_size")) -> list[int]:
    """Integer variables called like a batch size, seen from ``frame`` outwards."""
    out: list[int] = []
    while frame is not None:
        for scope in (frame.f_locals, frame.f_globals):
            for key in names:
                val = scope.get(key)
                if (
                    isinstance(val, int)
                    and not isinstance(val, bool)
                    and val > 1
                    and val not in out
                ):
                    out.append(val)
        frame = frame.f_back
    return out


def grad_of(t: torch.Tensor) -> torch.Tensor | None:
    """``t.grad``, without the warning PyTorch gives for a non-leaf tensor that does not retain it
    (it is None then)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        return t.grad


def node_of(t: torch.Tensor) -> tuple[Node | None, int]:
    """The graph node that produced ``t`` (None for a leaf) and its output slot."""
    return t.grad_fn, (t.output_nr if t.grad_fn is not None else 0)


def walk(root: torch.Tensor, limit: int = 20000) -> dict[Node, list[Node]]:
    """Every node reachable from ``root``, mapped to the nodes that feed gradient into it."""
    parents: dict[Node, list[Node]] = {}
    start = root.grad_fn
    if start is None:
        return parents
    parents[start] = []
    stack = [start]
    while stack and len(parents) < limit:
        node = stack.pop()
        for nxt, _ in node.next_functions:
            if nxt is None:
                continue
            if nxt not in parents:
                parents[nxt] = []
                stack.append(nxt)
            parents[nxt].append(node)
    return parents


def is_use_of(t: torch.Tensor, nxt: Node | None, slot: int) -> bool:
    if nxt is None:
        return False
    if t.grad_fn is not None:
        return nxt is t.grad_fn and slot == t.output_nr
    return getattr(nxt, "variable", None) is t


def uses(
    root: torch.Tensor, t: torch.Tensor, parents: dict[Node, list[Node]] | None = None
) -> list[tuple[Node, list[int]]]:
    """The operations that consumed ``t`` on the way to ``root``, with the input slots
    that are ``t``."""
    out = []
    for node in walk(root) if parents is None else parents:
        slots = [j for j, (nxt, nr) in enumerate(node.next_functions) if is_use_of(t, nxt, nr)]
        if slots:
            out.append((node, slots))
    return out


def find_root(
    t: torch.Tensor, names: dict[str, torch.Tensor], loss: torch.Tensor | None = None
) -> torch.Tensor | None:
    """The scalar the backward pass started from: ``loss`` if given, else a variable that
    reaches ``t``.

    Of several named scalars that reach ``t`` (``tL``, and the ``te = ta * tb`` it was built from),
    the root is one that no other uses: the last in the chain. ``loss`` is preferred among those,
    and unnamed live scalars are tried only when no variable reaches ``t``.
    """
    if loss is not None:
        return (
            loss
            if isinstance(loss, torch.Tensor) and loss.grad_fn is not None and uses(loss, t)
            else None
        )
    scalars = {id(v): v for v in names.values() if v.dim() == 0 and v.grad_fn is not None}
    graphs = {k: walk(v) for k, v in scalars.items()}
    reach = [k for k, v in scalars.items() if uses(v, t, graphs[k])]
    last = [k for k in reach if not any(scalars[k].grad_fn in graphs[j] for j in reach if j != k)]
    if last:
        named_loss = names.get("loss")
        return next((scalars[k] for k in last if scalars[k] is named_loss), scalars[last[0]])
    for v in heap.tensors():  # unnamed roots last
        if v.dim() == 0 and v.grad_fn is not None and uses(v, t):
            return v
    return None


def op_name(node: Node) -> str:
    return re.sub(r"Backward\d*$", "", type(node).__name__).lower()


class GraphFacts:
    """Uses of one tensor and their contributions, computed on demand."""

    def __init__(
        self,
        t: torch.Tensor,
        expected: torch.Tensor,
        names: dict[str, torch.Tensor],
        loss: torch.Tensor | None = None,
    ) -> None:
        self.t, self.expected, self.names = t, expected, names
        self.root = find_root(t, names, loss) if t.requires_grad else None
        self.by_node: dict[int, tuple[str | None, torch.Tensor]] = {}
        for k, v in names.items():
            if v.grad_fn is not None:
                self.by_node.setdefault(id(v.grad_fn), (k, v))
        self.parents = walk(self.root) if self.root is not None else {}
        # one entry per input slot that is t: an operation taking t twice (t * t) is two uses
        used = uses(self.root, t, self.parents) if self.root is not None else []
        self._place: dict[int, int] = {}  # use -> the element of t it takes (t unbound: x, y = t)
        if len(used) == 1 and type(used[0][0]).__name__ == "UnbindBackward0":
            used, self._place = self._element_uses(used[0][0])
        self._uses = [(node, [slot]) for node, slots in used for slot in slots]
        # an operation that takes the tensor (or one of its elements) twice: x * x
        ids = [id(node) for node, slots in used for _ in slots]
        self._twice = {i for i in ids if ids.count(i) > 1}
        self._extra: list[torch.Tensor] | None = None
        self._paths: list[tuple[str, torch.Tensor | None]] | None = None

    def _element_uses(self, unbind: Node) -> tuple[list[tuple[Node, list[int]]], dict[int, int]]:
        """The uses of t's elements when t was unbound into them (``op(*t)``): a use per input slot,
        with the element it takes, so that ``x * x`` on an element counts as two uses."""
        if getattr(unbind, "_saved_dim", 0) != 0:
            return [], {}
        found, place = [], {}
        for node in dict.fromkeys(self.parents.get(unbind, [])):  # once each, in order
            for j, (nxt, nr) in enumerate(node.next_functions):
                if nxt is unbind:
                    place[len(found)] = nr
                    found.append((node, [j]))
        return found, place

    @property
    def extra(self) -> list[torch.Tensor]:
        """Unnamed live tensors: graph outputs (added to ``by_node``) and integer index tensors."""
        if self._extra is None:
            self._extra = [
                v for v in heap.tensors() if v.grad_fn is not None or not v.is_floating_point()
            ]
            for v in self._extra:
                if v.grad_fn is not None and v.grad_fn in self.parents:
                    self.by_node.setdefault(id(v.grad_fn), (None, v))
        return self._extra

    def freed(self) -> bool:
        """Whether the backward pass already released the graph's saved tensors."""
        for node in list(self.parents)[:500]:
            for attr in dir(node):
                if attr.startswith("_saved_"):
                    try:
                        getattr(node, attr)
                    except RuntimeError:
                        return True
        return False

    @staticmethod
    def _is_index(node: Node) -> bool:
        return type(node).__name__ in (
            "IndexBackward0",
            "EmbeddingBackward0",
            "IndexSelectBackward0",
        )

    # -- labels
    def label(self, node: Node) -> str:
        """The operation's label: "`counts_sum` (sum)", "a mul on the way to `h`", "a mul"."""
        return self._named_label(node)[0]

    def _named_label(self, node: Node) -> tuple[str, str]:
        """The operation's label, and the named tensor it makes or leads to ("" for none)."""
        hit = self.by_node.get(id(node))
        if hit is not None and hit[0]:
            return f"`{hit[0]}` ({op_name(node)})", hit[0]
        parents = self.parents
        seen, frontier = set(), list(parents.get(node, []))
        while frontier:
            up = frontier.pop(0)
            if id(up) in seen:
                continue
            seen.add(id(up))
            hit = self.by_node.get(id(up))
            if hit is not None and hit[0]:
                return f"a {op_name(node)} on the way to `{hit[0]}`", hit[0]
            frontier.extend(parents.get(up, []))
        return f"a {op_name(node)}", ""

    def use(self, node: Node, slots: list[int]) -> Use:
        """The use of the tensor by ``node``, its input named when ``node`` takes it twice."""
        op, tensor = self._named_label(node)
        return Use(op, tensor, slots[0] if id(node) in self._twice else None)

    # -- contributions
    def paths(self) -> list[tuple[Use, torch.Tensor | None]]:
        """(use, contribution or None when it cannot be known) for each use; computed once."""
        if self._paths is None:
            self._paths = self._compute_paths()
        return self._paths

    def terms(self) -> list[tuple[str, torch.Tensor | None]]:
        """The paths, each split one step further where its output feeds several operations: the
        terms of a fused formula (batch norm's gradient is three terms, one per path)."""
        if len(self._uses) == 1:
            return self._softmax_terms()
        out: list[tuple[str, torch.Tensor | None]] = []
        for i, ((node, slots), (label, c)) in enumerate(
            zip(self._uses, self.paths(), strict=False)
        ):
            split = None
            got = self._output(node) if c is not None and i not in self._place else None
            if got is not None and got[0] is not None and got[0] is not self.root:
                try:
                    subs = GraphFacts(got[0], got[1], self.names, self.root).split()
                except Exception:
                    subs = []
                if len(subs) >= 2 and all(sc is not None for _, sc in subs):
                    parts = [self._apply(node, slots, got[0], sc) for _, sc in subs]
                    # parts that cancel out (a max's path, which carries nearly nothing) are no
                    # terms of the formula
                    big = max((float(p.abs().max()) for p in parts if p is not None), default=0.0)
                    if all(p is not None for p in parts) and float(c.abs().max()) > 1e-3 * big:
                        split = [
                            (f"{label} then {sl}", p)
                            for (sl, _), p in zip(subs, parts, strict=True)
                        ]
            out += split or [(str(label), c)]
        return out

    def _softmax_terms(self) -> list[tuple[str, torch.Tensor | None]]:
        """For a tensor used once, in a softmax or a log-softmax (``F.cross_entropy``'s), directly
        or through one lookup or view: that rule's two terms, carried back to the tensor (the
        log-softmax's passes the gradient through and takes the softmax times the row's total
        off it: cross-entropy's one-hot term and its softmax term)."""
        node, slots = self._uses[0]
        soft, step = node, None
        if type(node).__name__ not in _SOFTMAX:
            ups = self.parents.get(node, [])
            views = type(node).__name__ in _VIEWS or self._is_index(node)
            if not views or len(ups) != 1 or type(ups[0]).__name__ not in _SOFTMAX:
                return []
            soft, step = ups[0], node
        try:
            out, dim = soft._saved_result.detach(), int(soft._saved_dim)
        except (RuntimeError, AttributeError):  # freed by the backward pass
            return []
        g = self._arriving(soft)
        if g is None or g.shape != out.shape:
            return []
        g = g.to(out.dtype)
        if type(soft).__name__ == "LogSoftmaxBackward0":
            parts = [
                ("the gradient passed straight through the log-softmax", g),
                ("the log-softmax's softmax term", -out.exp() * g.sum(dim, keepdim=True)),
            ]
        else:
            parts = [
                ("the softmax's own entry (`p * dp`)", out * g),
                ("the softmax's row term (`p * sum(p * dp)`)", -out * (out * g).sum(dim, True)),
            ]
        back = [self._back_through(step, p) for _, p in parts]
        if any(b is None for b in back):
            return []
        return [(label, b) for (label, _), b in zip(parts, back, strict=True)]

    def _back_through(self, step: Node | None, g: torch.Tensor) -> torch.Tensor | None:
        """``g``, the gradient at a lookup's or a view's output, carried back to the tensor."""
        t = self.t.detach()
        if step is None:
            return g.reshape(t.shape) if g.numel() == t.numel() else None
        if not self._is_index(step):
            return g.reshape(t.shape) if g.numel() == t.numel() else None
        idx = self._saved_index(step)
        if idx is None:
            return None
        rows = g.reshape(-1, *t.shape[1:]).to(t.dtype)
        return torch.zeros_like(t).index_add_(0, idx.flatten(), rows)

    def split(self, depth: int = 3) -> list[tuple[str, torch.Tensor | None]]:
        """The paths, or, for a tensor used once, the paths of the first tensor after it (along
        a chain of single uses, at most ``depth`` steps) that is used several times, carried back
        by each step's rule: the exp of 03's ``norm_logits`` feeds ``counts``, whose two uses are
        the two terms of the fused cross-entropy."""
        if len(self._uses) != 1 or depth <= 0:
            return [(str(use), c) for use, c in self.paths()]
        node, slots = self._uses[0]
        got = self._output(node) if not self._place else None
        if got is None or got[0] is None or got[0] is self.root:
            return []
        subs = GraphFacts(got[0], got[1], self.names, self.root).split(depth - 1)
        if len(subs) < 2 or any(sc is None for _, sc in subs):
            return []
        parts = [self._apply(node, slots, got[0], sc) for _, sc in subs]
        if any(p is None for p in parts):
            return []
        label = self.label(node)
        return [(f"{label} then {sl}", p) for (sl, _), p in zip(subs, parts, strict=True)]

    def _compute_paths(self) -> list[tuple[Use, torch.Tensor | None]]:
        if len(self._uses) < 2:
            return []
        measured = None if self.freed() else self._measure()
        if measured is None:
            if any(self.by_node.get(id(node)) is None for node, _ in self._uses):
                _ = self.extra  # unnamed outputs of the uses, found among the live tensors
            measured = [
                None if i in self._place else self._rebuild(node, slots)
                for i, (node, slots) in enumerate(self._uses)
            ]
        return [
            (self.use(node, slots), c)
            for (node, slots), c in zip(self._uses, measured, strict=False)
        ]

    def _measure(self) -> list[torch.Tensor] | None:
        """Contributions from hooks on a second backward; None when the graph was freed."""
        got: dict[int, torch.Tensor] = {}
        handles = []
        for i, (node, slots) in enumerate(self._uses):

            def hook(grad_inputs, grad_outputs, i=i, slots=slots):
                parts = [grad_inputs[j] for j in slots if grad_inputs[j] is not None]
                if parts:
                    got[i] = got.get(i, 0) + sum(parts)

            handles.append(node.register_hook(hook))
        saved = _retained_grads()
        try:
            torch.autograd.grad(self.root, [self.t], retain_graph=True, allow_unused=True)
        except RuntimeError:
            return None
        finally:
            for h in handles:
                h.remove()
            for x, g in saved:
                x.grad = g
        zero = torch.zeros_like(self.expected)
        out = []
        for i in range(len(self._uses)):
            part = zero.clone()
            if i in got and i in self._place:
                part[self._place[i]] = got[i].to(zero.dtype)
            elif i in got:
                part = got[i].to(zero.dtype).reshape(zero.shape)
            out.append(part)
        return out

    def _output(self, node: Node) -> tuple[torch.Tensor, torch.Tensor] | None:
        """The tensor ``node`` produced and its gradient: the retained ``.grad``, or 1 for the
        root itself."""
        root = self.root
        if root is not None and node is root.grad_fn:
            g = grad_of(root)
            return root, torch.ones_like(root) if g is None else g  # root.backward() starts from 1
        hit = self.by_node.get(id(node))
        g = grad_of(hit[1]) if hit is not None else None
        if g is None and hit is None:
            return self._through_add(node)
        return None if g is None else (hit[1], g)

    def _through_add(self, node: Node) -> tuple[None, torch.Tensor] | None:
        """An unnamed output that only feeds a sum (``embcat @ W1`` in ``embcat @ W1 + b1``): its
        gradient is the sum's, up to the sign of a subtraction. The output itself is unknown."""
        ups = self.parents.get(node, [])
        if len(ups) != 1 or type(ups[0]).__name__ not in ("AddBackward0", "SubBackward0"):
            return None
        up = ups[0]
        got = self._output(up)
        if got is None:
            return None
        slots = [j for j, (nxt, _) in enumerate(up.next_functions) if nxt is node]
        if slots != [0] and slots != [1]:
            return None
        g = got[1]
        if slots == [1]:
            alpha = getattr(up, "_saved_alpha", 1)
            g = g * alpha * (-1 if type(up).__name__ == "SubBackward0" else 1)
        return None, g

    def _carried(
        self, node: Node, by_tensor: dict[int, Earlier]
    ) -> tuple[Earlier, torch.Tensor] | None:
        """A learner's answer for a later named tensor, carried back to the unnamed output of
        ``node`` through operations that need no saved value (``+``, ``-``, a number's ``*``):
        ``dlogits`` for ``h @ W2`` in ``h @ W2 + b2``. None when there is no such chain."""
        chain, cur = [], node
        for _ in range(4):
            ups = self.parents.get(cur, [])
            up = ups[0] if len(ups) == 1 else None
            slots = [j for j, (nxt, _) in enumerate(up.next_functions) if nxt is cur] if up else []
            if up is None or len(slots) != 1 or type(up).__name__ not in _PASSED:
                return None
            chain.append((up, slots[0]))
            hit = self.by_node.get(id(up))
            if hit is not None:
                mine = by_tensor.get(id(hit[1]))
                if mine is None:
                    return None
                g = mine.value
                for n, slot in reversed(chain):
                    g = _PASSED[type(n).__name__](n, slot, g)
                return mine, g
            cur = up
        return None

    def _rebuild(self, node: Node, slots: list[int], live: bool = False) -> torch.Tensor | None:
        """A use's contribution from its output's gradient and the operation's rule; with ``live``,
        an unnamed output's gradient is measured on the kept graph (``_arriving``)."""
        got = self._output(node)
        if got is None and live:
            g = self._arriving(node)
            got = None if g is None else (None, g)
        return None if got is None else self._apply(node, slots, *got)

    def _arriving(self, node: Node) -> torch.Tensor | None:
        """The gradient arriving at ``node``'s output (its first), measured with a hook on a
        second backward pass over the kept graph; None when the graph was freed."""
        if self.root is None:
            return None
        got: list[torch.Tensor] = []
        handle = node.register_prehook(lambda grads: got.append(grads[0]) and None)
        keep = [(x, x.grad) for x in self.names.values() if x.retains_grad]
        try:
            torch.autograd.grad(self.root, [self.t], retain_graph=True, allow_unused=True)
        except RuntimeError:
            return None
        finally:
            handle.remove()
            for x, g in keep:
                x.grad = g
        return got[0].detach() if got and got[0] is not None else None

    def _apply(
        self, node: Node, slots: list[int], out: torch.Tensor | None, g: torch.Tensor
    ) -> torch.Tensor | None:
        """The rule of ``node`` for the inputs ``slots`` (the tensor),
        given its output's gradient."""
        total = None
        for slot in slots:
            rule = RULES.get(type(node).__name__)
            try:
                o = out.detach() if out is not None else None
                part = rule(self, node, slot, self.t.detach(), o, g) if rule else None
            except (RuntimeError, AttributeError, IndexError, TypeError):
                part = None
            if part is None:
                return None
            if part.shape != self.t.shape:  # a view of the tensor entered, or a broadcast one
                flat = part.numel() == self.t.numel() and part.dim() != self.t.dim()
                part = part.reshape(self.t.shape) if flat else part.sum_to_size(self.t.shape)
            total = part if total is None else total + part
        return total

    # -- what the learner's own answers and the sizes around the tensor say
    def upstream_scale(self) -> float | None:
        """How large the gradients arriving at the tensor's uses are: the largest entry of each
        use's output gradient where it is known, else of the gradients of the leaves that are the
        use's other inputs, or inputs of those (``_leaf_grads``)."""
        if self.root is None:
            return None
        sizes = []
        for node, _ in self._uses:
            got = self._output(node)
            g = got[1] if got is not None else None
            if g is None:
                g = self._leaf_grads(node)
            if g is not None and g.numel():
                sizes.append(float(torch.nan_to_num(g.detach().double().abs(), 0, 0, 0).max()))
        return max(sizes) if sizes else None

    def broadcast(self) -> list[tuple[int, int]]:
        """(size, axis) of each axis of a use's output along which the tensor was broadcast (a
        size-1 axis of the tensor, or one it lacks, where the output has more)."""
        if self.root is None:
            return []
        shape, out = tuple(self.t.shape), []
        for node, _ in self._uses:
            got = self._output(node)
            g = got[1] if got is not None else None
            if g is None or g.dim() < len(shape) or tuple(g.shape) == shape:
                continue
            pad = (1,) * (g.dim() - len(shape)) + shape
            for axis, (a, b) in enumerate(zip(pad, g.shape, strict=True)):
                if a == 1 and b > 1 and (int(b), axis) not in out:
                    out.append((int(b), axis))
        return out

    def shared_over(self) -> list[int]:
        """The leading sizes of the uses' outputs that the tensor's own leading size is not: the
        rows a parameter is shared by (the batch of ``A @ W + b`` for ``W`` and ``b``)."""
        if self.root is None:
            return []
        own = self.t.shape[0] if self.t.dim() else 1
        out = []
        for node, _ in self._uses:
            got = self._output(node)
            g = got[1] if got is not None else None
            if g is not None and g.dim() >= 2 and g.shape[0] not in (own, 1, *out):
                out.append(int(g.shape[0]))
        return out

    def variance_sizes(self) -> list[int]:
        """How many entries each variance (or standard deviation) in the graph is taken over: the
        n of its Bessel's correction."""
        sizes: list[int] = []
        for node in self.parents:
            if not type(node).__name__.startswith(("Var", "Std")):
                continue
            try:
                shape, dims = node._saved_self.shape, node._saved_dim
            except (AttributeError, RuntimeError):  # another variant, or the graph freed
                continue
            # a negative axis comes back as an unsigned number (2**64 - 1 for -1)
            axes = [d - 2**64 if d >= 2**63 else d for d in dims or range(len(shape))]
            n = math.prod(shape[d] for d in axes)
            sizes += [] if n in sizes else [n]
        return sizes

    def _leaf_grads(self, node: Node, depth: int = 2) -> torch.Tensor | None:
        """The largest gradient of a leaf that is another input of ``node``, or an input of one
        (``W1`` for ``b1`` in ``embcat @ W1 + b1``): what the same upstream gradient gave them."""
        best, frontier = None, [node]
        for _ in range(depth + 1):
            nxt_frontier = []
            for cur in frontier:
                var = getattr(cur, "variable", None)
                if isinstance(var, torch.Tensor) and var is not self.t and var.grad is not None:
                    m = var.grad.detach().abs().max()
                    best = m if best is None or bool(m > best) else best
                nxt_frontier += [n for n, _ in cur.next_functions if n is not None]
            frontier = nxt_frontier
        return best

    def given(self, earlier: list[Earlier]) -> list[Given]:
        """The gradient of the tensor when each later tensor the learner has checked gets the
        learner's answer as its gradient (``Given``), once for each way to read the learner's
        steps: the latest answer of a tensor checked twice, then its first; every earlier answer
        used, then those wrong on their own skipped (a fused formula that goes around them).
        Empty when no wrong answer is involved."""
        if self.root is None or not self._uses:
            return []
        out: list[Given] = []
        tried: list[set[int]] = []
        for marks in (self._marks(earlier), self._marks(earlier, first=True)):
            for skip_own in (False, True):
                use = {k: a for k, a in marks.items() if not (skip_own and a.own)}
                front, root_hit = self._frontier(use)
                wrong = [a for a in front if not a.ok]
                if not wrong or {id(a) for a in front} in tried:
                    continue
                tried.append({id(a) for a in front})
                got = self._replay([(a.tensor, a.value) for a in front], root_hit)
                if got is None:  # the graph was freed: the local rules, where they reach
                    by_rules = self._given_by_rules(list(marks.values()))
                    untraced = Given(None, tuple(a.label for a in wrong), _roots(wrong))
                    return by_rules + [untraced]
                scale = max(float(a.value.abs().max()) for a in front if a.value.numel())
                out.append(Given(got, tuple(a.label for a in wrong), _roots(wrong), scale))
        return out

    def local(self, earlier: list[Earlier]) -> list[tuple[tuple[str, ...], torch.Tensor]]:
        """The gradient with the gradient arriving from above forgotten: each nearest later tensor
        that has an answer gives ones instead (all of them, then each alone), with the names of the
        answers left out. Empty when the tensor reaches only the root, or the graph was freed."""
        if self.root is None or not self._uses:
            return []
        front, root_hit = self._frontier(self._marks(self._with_named(earlier)))
        if not front:
            return []
        ways = [set(range(len(front)))]
        if len(front) > 1:
            ways += [{i} for i in range(len(front))]
        out = []
        for forgotten in ways:
            seeds = [
                (a.tensor, torch.ones_like(a.tensor) if i in forgotten else a.value)
                for i, a in enumerate(front)
            ]
            got = self._replay(seeds, root_hit)
            if got is None:
                return []
            out.append((tuple(front[i].label for i in sorted(forgotten)), got))
        return out

    def transposed(self, earlier: list[Earlier]) -> list[tuple[str, torch.Tensor]]:
        """The gradient with one square gradient from above (a nearest later tensor's answer, its
        last two axes of one size) transposed, with that answer's name in backticks."""

        def flipped(a: Earlier) -> list[tuple[str, torch.Tensor]]:
            v = a.value
            square = v.dim() >= 2 and v.shape[-1] == v.shape[-2] > 1
            return [(f"`{a.label}`", v.transpose(-2, -1))] if square else []

        return [(label, got) for _, label, got in self._seeded(earlier, flipped)]

    def instead(self, earlier: list[Earlier]) -> list[tuple[str, str, torch.Tensor]]:
        """The gradient with one gradient from above replaced by another tensor of its shape: an
        earlier answer (a step too far or too near) or the later tensor's own forward value:
        (what was used, the answer meant, the gradient)."""
        everyone = self._with_named(earlier)

        def others(a: Earlier) -> list[tuple[str, torch.Tensor]]:
            own = self.name_of(a.tensor)
            found = {own: a.tensor.detach()} if own else {}
            for b in everyone:
                fits = b.value.shape == a.value.shape and b.value.dtype == a.value.dtype
                if fits and b.tensor is not a.tensor and b.tensor is not self.t:
                    found.setdefault(b.label, b.value)
            # about nothing in its place is a path left out, not another tensor
            least = 1e-3 * float(a.value.double().norm())
            return [(k, v) for k, v in found.items() if float(v.double().norm()) > least]

        return [(label, a.label, got) for a, label, got in self._seeded(earlier, others)]

    def _seeded(
        self, earlier: list[Earlier], alternatives: Callable[[Earlier], list]
    ) -> list[tuple[Earlier, str, torch.Tensor]]:
        """For each nearest later tensor's answer ``a`` and each (label, tensor) that
        ``alternatives(a)`` offers in its place, the gradient replayed with that seed instead:
        (a, label, gradient). Empty on a freed graph."""
        if self.root is None or not self._uses:
            return []
        front, root_hit = self._frontier(self._marks(self._with_named(earlier)))
        out = []
        for a in front:
            for label, seed in alternatives(a):
                seeds = [(b.tensor, seed if b is a else b.value) for b in front]
                got = self._replay(seeds, root_hit)
                if got is None:
                    return []
                out.append((a, label, got))
        return out

    def _with_named(self, earlier: list[Earlier]) -> list[Earlier]:
        """``earlier`` and, for each named tensor with a kept gradient that no answer is for, that
        gradient (one the notebook gives: 02's ``dD``), as a right answer called ``d<name>``."""
        have = {id(a.tensor) for a in earlier}
        extra = [
            Earlier(v, f"d{k}", grad_of(v).detach(), True)
            for k, v in self.names.items()
            if v.retains_grad and grad_of(v) is not None and id(v) not in have and v is not self.t
        ]
        return [*earlier, *extra]

    def elementwise(
        self, earlier: list[Earlier]
    ) -> list[tuple[torch.Tensor, torch.Tensor, str, torch.Tensor]]:
        """For each use that reaches a later tensor through elementwise operations alone
        (``h = tanh(hpreact)``, ``bnvar_inv = (bnvar + 1e-5)**-0.5``, one of ``bndiff``'s two
        uses): the tensor's values, the gradient arriving at that later tensor (the learner's
        answer, or its ``.grad``), its name, and what the other uses contribute."""
        if self.root is None or not self._uses or self._place:
            return []
        marks = self._marks(earlier)
        paths = self.paths() if len(self._uses) > 1 else []
        out = []
        for i, (node, _) in enumerate(self._uses):
            if len(self._uses) > 1 and (i >= len(paths) or paths[i][1] is None):
                continue
            reached = self._elementwise_to(node, marks)
            if reached is not None:
                rest = self.expected - paths[i][1] if paths else torch.zeros_like(self.expected)
                out.append((self.t.detach(), *reached, rest))
        return out

    def _elementwise_to(
        self, node: Node, marks: dict[int, Earlier]
    ) -> tuple[torch.Tensor, str] | None:
        """The gradient arriving at the later tensor that ``node`` reaches through elementwise
        operations alone, and its name; None when another operation comes first."""
        for _ in range(8):
            if not _elementwise(node):
                return None
            hit = marks.get(id(node))
            named = self.by_node.get(id(node))
            if hit is not None:
                return hit.value, hit.label
            if named is not None and named[0] and grad_of(named[1]) is not None:
                return grad_of(named[1]).detach(), f"d{named[0]}"
            ups = self.parents.get(node, [])
            if len(ups) != 1:
                return None
            node = ups[0]
        return None

    def _marks(self, earlier: list[Earlier], first: bool = False) -> dict[int, Earlier]:
        """The earlier answers that can stand for a later tensor's gradient, by its graph node, in
        the order checked: for a tensor checked twice its last answer, or its ``first``."""
        fit = [
            a
            for a in earlier
            if a.tensor is not self.t
            and a.tensor.grad_fn is not None
            and tuple(a.value.shape) == tuple(a.tensor.shape)
            and a.value.dtype == a.tensor.dtype
        ]
        chosen = {id(a.tensor.grad_fn): a for a in (fit[::-1] if first else fit)}
        keep = {id(a) for a in chosen.values()}
        return {id(a.tensor.grad_fn): a for a in fit if id(a) in keep}

    def _frontier(self, marks: dict[int, Earlier]) -> tuple[list[Earlier], bool]:
        """The marked tensors (by the id of their graph node) that the tensor reaches through no
        other marked one, in the order of ``marks``, and whether it reaches the root that way."""
        found: set[int] = set()
        root_hit, seen = False, set()
        stack = [node for node, _ in self._uses]
        start = self.root.grad_fn
        while stack:
            node = stack.pop()
            if id(node) in seen:
                continue
            seen.add(id(node))
            if id(node) in marks:
                found.add(id(node))
            elif node is start:
                root_hit = True
            else:
                stack.extend(self.parents.get(node, []))
        return [a for k, a in marks.items() if k in found], root_hit

    def _replay(
        self, seeds: list[tuple[torch.Tensor, torch.Tensor]], root_hit: bool
    ) -> torch.Tensor | None:
        """The tensor's gradient by autograd when each seeded tensor's gradient is replaced by its
        seed (and the root, when reached, starts from 1); None when the graph was freed."""
        outs = [c for c, _ in seeds]
        grads = [g.detach().to(c.dtype).reshape(c.shape) for c, g in seeds]
        if root_hit:
            outs.append(self.root)
            grads.append(torch.ones_like(self.root))
        handles = [c.register_hook(lambda _, g=g: g) for c, g in zip(outs, grads, strict=False)]
        keep = {id(x): x for x in [*self.names.values(), *outs, self.t] if x.retains_grad}
        saved = [(x, x.grad) for x in keep.values()]
        try:
            (got,) = torch.autograd.grad(
                outs, [self.t], grads, retain_graph=True, allow_unused=True
            )
        except RuntimeError:
            return None
        finally:
            for h in handles:
                h.remove()
            for x, g in saved:
                x.grad = g
        return torch.zeros_like(self.expected) if got is None else got.detach()

    def _given_by_rules(self, earlier: list[Earlier]) -> list[Given]:
        """``given`` on a freed graph: each use's output takes the learner's answer where it has
        one, and the operations' rules (``RULES``) give the rest, where they can."""
        by_tensor = {id(a.tensor): a for a in earlier}
        total, wrong = None, []
        for node, slots in self._uses:
            got = self._output(node)
            carried = self._carried(node, by_tensor) if got is None or got[0] is None else None
            if got is None and carried is None:
                return []
            out, g = got or (None, carried[1])
            mine = by_tensor.get(id(out)) if out is not None else None
            if mine is not None and tuple(mine.value.shape) == tuple(g.shape):
                g = mine.value.to(g.dtype)
            elif carried is not None:
                mine, g = carried[0], carried[1].to(g.dtype).sum_to_size(g.shape)
            else:
                mine = None
            if mine is not None and not mine.ok:
                wrong.append(mine)
            part = self._apply(node, slots, out, g)
            if part is None:
                return []
            total = part if total is None else total + part
        if not wrong or total is None:
            return []
        scale = max(float(a.value.abs().max()) for a in wrong if a.value.numel())
        return [Given(total, tuple(a.label for a in wrong), _roots(wrong), scale)]

    def _use_parts(self) -> list[torch.Tensor] | None:
        """Each use's contribution, rebuilt on the kept graph (one use carries the whole
        gradient); None where one cannot be had or the uses are a tensor's unbound elements."""
        if self.root is None or not self._uses or self._place:  # no products of unbound elements
            return None
        base = [self._rebuild(node, slots, live=True) for node, slots in self._uses]
        if len(base) == 1 and base[0] is None:  # one use: it carries the whole gradient
            base = [self.expected]
        return None if any(b is None for b in base) else base

    def _products(self, kinds: tuple[str, ...]):
        """For each use that is (through views) a product of one of ``kinds`` taking the tensor
        once: (use number, product node, its input slot, the other uses' contributions, this
        use's own)."""
        base = self._use_parts()
        for i, (use, use_slots) in enumerate(self._uses if base is not None else []):
            node, slots = self._product_behind(use, use_slots)
            if type(node).__name__ in kinds and len(slots) == 1:
                rest = sum((b for j, b in enumerate(base) if j != i), torch.zeros_like(base[i]))
                yield i, node, slots, rest, base[i]

    def swaps(self, candidates: dict[str, torch.Tensor]) -> list[tuple[str, str, torch.Tensor]]:
        """The gradient with the other operand of a product (``*``, ``/``, ``@``) replaced by each
        tensor of its shape, by the tensor itself, by the operand's own gradient or, when square,
        by its transpose: (the tensor used, the operand meant, the gradient). For a single number
        only the tensor itself is tried (the wrong "other factor"), named ""."""
        out = []
        for i, node, slots, rest, base_i in self._products(tuple(_SAVED)):
            operand = self.operand(node, 1 - slots[0])
            if operand is None:
                continue
            meant = self.name_of(operand) or ""  # "": a tensor the notebook has no name for
            pool = self._pool(node, i, operand, meant, candidates)
            if not meant and (arranged := self._arranged(operand)) is not None:
                meant, more = arranged  # a named tensor, transposed or viewed for the product
                pool = {**more, **pool}
            for used, c in pool.items():
                self._instead = (id(node), 1 - slots[0], c.detach())
                try:
                    part = self._rebuild(node, slots, live=True)
                except RuntimeError:  # the rule with this tensor does not fit the shapes
                    continue
                finally:
                    self._instead = None
                # a part of about nothing is a path left out, not another operand
                if part is not None and float(part.norm()) > 1e-3 * float(base_i.norm()):
                    out.append((used, meant, rest + part))
        return out

    def reordered(self) -> list[tuple[str, torch.Tensor]]:
        """The gradient with a matrix product's rule taken with its two factors in the other order
        (``dN @ A.T`` for ``A.T @ dN``: square factors fit either way): (the other factor's name,
        or "", the gradient)."""
        out = []
        for _, node, slots, rest, _ in self._products(("MmBackward0", "BmmBackward0")):
            other = self.operand(node, 1 - slots[0])
            got = self._output(node)
            g = got[1] if got is not None else self._arriving(node)
            if other is None or g is None or other.dim() < 2:
                continue
            g = g.to(other.dtype)
            if other.shape[-1] != other.shape[-2] or g.shape[-1] != g.shape[-2]:
                continue  # the other order fits the shapes only for square factors
            right = other.mT @ g if slots[0] == 1 else g @ other.mT
            swapped = g @ other.mT if slots[0] == 1 else other.mT @ g
            if swapped.shape != right.shape or swapped.numel() != self.t.numel():
                continue
            if torch.allclose(swapped, right):
                continue
            out.append((self.name_of(other) or "", rest + swapped.reshape(self.t.shape)))
        return out

    def shared_terms(self, most: int = 6) -> torch.Tensor | None:
        """For a tensor used once, as a factor of a matrix product whose shared index runs over at
        most ``most`` values: the rule's terms, one per value of that index (a weight's gradient
        from each sample, an input's from each neuron), stacked along a new first axis."""
        if len(self._uses) != 1 or self._place or self.root is None:
            return None
        node, slots = self._product_behind(*self._uses[0])
        if type(node).__name__ != "MmBackward0" or len(slots) != 1:
            return None
        other = self.operand(node, 1 - slots[0])
        got = self._output(node)
        g = got[1] if got is not None else self._arriving(node)
        if other is None or g is None or other.dim() != 2 or g.dim() != 2:
            return None
        g = g.to(other.dtype)
        if slots[0] == 1:  # A @ t: dt[i, j] = sum_k A[k, i] g[k, j]
            terms = torch.einsum("ki,kj->kij", other, g)
        else:  # (t @ W): dt[i, k] = sum_j g[i, j] W[k, j]
            terms = torch.einsum("ij,kj->jik", g, other)
        if terms.shape[0] > most or terms[0].numel() != self.t.numel():
            return None
        return terms.reshape(terms.shape[0], *self.t.shape)

    def skipped(self, most: int = 12) -> list[tuple[str, str, torch.Tensor]]:
        """The gradient with the gradient arriving at a later named tensor ``Z`` replaced by that
        of a named tensor ``O`` at most three operations after it, of its shape (``dlnf`` for
        ``lnf_hat``'s, the factor ``lnf_w`` between them skipped): (O, Z, the gradient). The
        part through ``Z`` is measured on the kept graph, so nothing else changes."""
        if self.root is None or not self._uses:
            return []
        t = self.t
        out = []
        later, frontier = set(), [node for node, _ in self._uses]
        while frontier:  # the operations computed from t
            node = frontier.pop()
            if id(node) not in later:
                later.add(id(node))
                frontier.extend(self.parents.get(node, []))
        for z_name, z in self.names.items():
            if z is t or z.grad_fn is None or id(z.grad_fn) not in later:
                continue
            after = self._after(z)
            gz = grad_of(z) if after else None
            if after and gz is None:  # not kept: measured on the kept graph
                gz = self._grad_at(z)
            for o_name, o in after if gz is not None else []:
                go = grad_of(o)
                if go is None or go.shape != gz.shape or torch.equal(go, gz):
                    continue
                saved = _retained_grads()
                try:  # the part through z with gz, less the part with go in its place
                    (diff,) = torch.autograd.grad(
                        [z, z], [t], grad_outputs=[gz, -go.to(gz.dtype)], retain_graph=True
                    )
                except RuntimeError:
                    return out
                finally:
                    for x, g in saved:
                        x.grad = g
                out.append((o_name, z_name, self.expected - diff))
                if len(out) >= most:
                    return out
        return out

    def _grad_at(self, z: torch.Tensor) -> torch.Tensor | None:
        """The loss's gradient at ``z``, measured on the kept graph; None once it was freed."""
        saved = _retained_grads()
        try:
            (g,) = torch.autograd.grad(self.root, [z], retain_graph=True)
        except RuntimeError:
            return None
        finally:
            for x, old in saved:
                x.grad = old
        return g

    def _after(self, z: torch.Tensor, depth: int = 3) -> list[tuple[str, torch.Tensor]]:
        """The named tensors computed from ``z`` within ``depth`` operations, nearest first."""
        found, frontier, seen = [], [z.grad_fn], set()
        for _ in range(depth):
            nxt = []
            for node in frontier:
                for up in self.parents.get(node, []):
                    if id(up) in seen:
                        continue
                    seen.add(id(up))
                    hit = self.by_node.get(id(up))
                    if hit is not None and hit[0] and hit[1].shape == z.shape:
                        found.append((hit[0], hit[1]))
                    nxt.append(up)
            frontier = nxt
        return found

    def _product_behind(self, node: Node, slots: list[int]) -> tuple[Node, list[int]]:
        """The product a use leads to through views of the tensor (``x @ W`` on a 3-D ``x`` views
        it as 2-D first), with the input slot it enters; the use itself when there is none."""
        cur, at = node, slots
        for _ in range(4):
            ups = self.parents.get(cur, [])
            if type(cur).__name__ not in _VIEWS or len(ups) != 1:
                break
            found = [j for j, (nxt, _) in enumerate(ups[0].next_functions) if nxt is cur]
            if len(found) != 1:
                break
            cur, at = ups[0], found
        return (cur, at) if type(cur).__name__ in _SAVED else (node, slots)

    def _pool(
        self,
        node: Node,
        i: int,
        operand: torch.Tensor,
        meant: str,
        candidates: dict[str, torch.Tensor],
    ) -> dict[str, torch.Tensor]:
        """What may stand where ``operand`` belongs in use ``i``: the notebook's tensors of its
        shape, the tensor itself (broadcast), the operand's gradient, its transpose."""
        if self.t.numel() == 1:  # a single number: only the tensor itself ("" names it)
            return {"": self.t.detach()}
        pool = dict(candidates if meant else {})
        own = self.name_of(self.t) or ""
        if own and own != meant:
            pool.setdefault(own, self.t)
        pool.setdefault(f"d{meant}" if meant else GRADIENT, self._gradient_of(node, i))
        square = operand.dim() >= 2 and operand.shape[-2] == operand.shape[-1] > 1
        if type(node).__name__ in ("MmBackward0", "BmmBackward0") and meant and square:
            pool[f"{meant}{TRANSPOSED}"] = operand.mT
        fit = {}
        for used, c in pool.items():
            if c is None or used == meant or c.dtype != operand.dtype:
                continue
            if c.shape != operand.shape and c.numel() == operand.numel() and c.is_contiguous():
                c = c.reshape(operand.shape)  # a named tensor, viewed as the operand is
            same = c.shape == operand.shape
            if (same or (c is self.t and _broadcasts(c, operand))) and not torch.equal(
                c.detach(), operand
            ):
                fit[used] = c
        return fit

    def _arranged(self, x: torch.Tensor) -> tuple[str, dict[str, torch.Tensor]] | None:
        """The named tensor that ``x`` holds rearranged (``k.transpose(-2, -1)`` copied and viewed
        for a batched product), and the notebook's other tensors of its shape arranged the same
        way, by name; None when no named tensor matches by value."""
        for k, v in self.names.items():
            if v.numel() != x.numel() or v.dim() < 2 or v.dtype != x.dtype:
                continue
            for arrange in (lambda a: a.reshape(x.shape), lambda a: a.mT.reshape(x.shape)):
                if torch.equal(arrange(v.detach()), x):
                    others = {
                        n: arrange(o.detach())
                        for n, o in self.names.items()
                        if n != k and o.shape == v.shape and o.dtype == v.dtype
                    }
                    return k, others
        return None

    def name_of(self, x: torch.Tensor) -> str | None:
        """The variable that holds ``x`` (or a tensor with the same data), if any."""
        for k, v in self.names.items():
            if v is x or (
                v.shape == x.shape and v.data_ptr() == x.data_ptr() and v.stride() == x.stride()
            ):
                return k
        for k, v in self.names.items():  # a view of a named tensor (``lnf.view(-1, C)`` in a @)
            if v.numel() == x.numel() and v.data_ptr() == x.data_ptr() and v.is_contiguous():
                return k
        return None

    _instead: tuple[int, int, torch.Tensor] | None = None  # (node id, slot, tensor) for swaps()

    def operand(self, node: Node, slot: int) -> torch.Tensor | None:
        """The tensor that entered ``node`` at input ``slot`` (a leaf, or a named variable)."""
        if self._instead is not None and self._instead[:2] == (id(node), slot):
            return self._instead[2]
        nxt, nr = node.next_functions[slot]
        if nxt is None:
            return None
        if hasattr(nxt, "variable"):
            return nxt.variable.detach()
        hit = self.by_node.get(id(nxt))
        if hit is not None and hit[1].output_nr == nr:
            return hit[1].detach()
        saved = self._saved_input(node, slot)
        return None if saved is None else saved.detach()

    def _saved_input(self, node: Node, slot: int) -> torch.Tensor | None:
        """Input ``slot`` of a product as the kept graph saved it; None once it was freed."""
        attr = _SAVED.get(type(node).__name__, ())[slot : slot + 1]
        try:
            x = getattr(node, attr[0], None) if attr else None
        except RuntimeError:  # freed by the backward pass
            return None
        return x if isinstance(x, torch.Tensor) else None

    def _gradient_of(self, node: Node, i: int) -> torch.Tensor | None:
        """The gradient of the other factor of use ``i`` (a product), on the kept graph."""
        other = self._saved_input(node, 1 - self._uses[i][1][0])
        if other is None or not other.requires_grad:
            return None
        keep = [(x, x.grad) for x in self.names.values() if x.retains_grad]
        try:
            (g,) = torch.autograd.grad(self.root, [other], retain_graph=True, allow_unused=True)
        except RuntimeError:
            return None
        finally:
            for x, kept in keep:
                x.grad = kept
        return None if g is None else g.detach()

    # -- index uses (the embedding lookup)
    def index_uses(self) -> list[torch.Tensor]:
        out = []
        for node, _ in self._uses:
            if not self._is_index(node):
                continue
            idx = self._saved_index(node)
            if idx is not None:
                out.append(idx)
        return out

    def positions(self, most: int = 16) -> list[torch.Tensor]:
        """For a lookup ``C[X]`` with an index of two axes (examples, at most ``most`` positions):
        what each position of the index gives back, the gradient arriving there added into the
        rows it picked; their sum is the lookup's whole contribution."""
        out: list[torch.Tensor] = []
        for node, _ in self._uses:
            idx = self._saved_index(node) if self._is_index(node) else None
            if idx is None or idx.dim() != 2 or not 2 <= idx.shape[1] <= most:
                continue
            g = self._arriving(node)
            if g is None or tuple(g.shape[:2]) != tuple(idx.shape):
                continue
            rows = g.reshape(*idx.shape, *self.t.shape[1:]).to(self.t.dtype)
            zero = torch.zeros_like(self.t.detach())
            try:
                out = [
                    zero.clone().index_add_(0, idx[:, j], rows[:, j]) for j in range(idx.shape[1])
                ]
            except (RuntimeError, IndexError):
                continue
            break
        return out

    def misplaced(self) -> list[torch.Tensor]:
        """What an index's use gives back when the index and the gradient arriving there are
        flattened in different orders (``Xb.T.flatten()`` with ``demb.view(-1, n_embd)``): every
        position's gradient added, into another position's row."""
        out = []
        for node, _ in self._uses:
            idx = self._saved_index(node) if self._is_index(node) else None
            if idx is None or not 2 <= idx.dim() <= 3:
                continue
            g = self._arriving(node)
            if g is None or tuple(g.shape[: idx.dim()]) != tuple(idx.shape):
                continue
            tail = list(range(idx.dim(), g.dim()))
            for order in itertools.permutations(range(idx.dim())):
                if list(order) == sorted(order):
                    continue
                pairs = [
                    (idx.permute(order).flatten(), g.reshape(-1, *self.t.shape[1:])),
                    (idx.flatten(), g.permute(*order, *tail).reshape(-1, *self.t.shape[1:])),
                ]
                for flat, rows in pairs:
                    try:
                        out.append(torch.zeros_like(self.t.detach()).index_add_(0, flat, rows))
                    except (RuntimeError, IndexError):
                        continue
        return out

    def _saved_index(self, node: Node) -> torch.Tensor | None:
        try:
            saved = getattr(node, "_saved_indices", None)
            if isinstance(saved, (list, tuple)) and len(saved) == 1 and saved[0] is not None:
                return saved[0]
            if isinstance(saved, torch.Tensor):
                return saved
        except RuntimeError:
            pass  # freed by the backward pass: find the index among the variables instead
        hit = self.by_node.get(id(node))
        if hit is None:
            _ = self.extra
            hit = self.by_node.get(id(node))
        if hit is None:
            return None
        out = hit[1].detach()
        src = self.t.detach()
        for val in [*self.names.values(), *self.extra]:
            if (
                val.dtype in (torch.int64, torch.int32)
                and val.numel()
                and tuple(val.shape) == tuple(out.shape[: val.dim()])
            ):
                try:
                    if (
                        int(val.min()) >= 0
                        and int(val.max()) < src.shape[0]
                        and torch.equal(src[val], out)
                    ):
                        return val
                except (RuntimeError, IndexError):
                    continue
        return None


# operations whose gradient rule needs no saved value: (node, input slot, output gradient) -> the
# input's gradient, before any sum over broadcast axes
_PASSED: dict[str, Callable] = {
    "AddBackward0": lambda n, s, g: g if s == 0 else g * n._saved_alpha,
    "SubBackward0": lambda n, s, g: g if s == 0 else -g * n._saved_alpha,
    "AddBackward1": lambda n, s, g: g,
    "SubBackward1": lambda n, s, g: g,
    "RsubBackward1": lambda n, s, g: -g,
    "NegBackward0": lambda n, s, g: -g,
    "MulBackward1": lambda n, s, g: g * n._saved_other,
    "DivBackward1": lambda n, s, g: g / n._saved_other,
}

# operations that act on each number alone (with constants): a local derivative is a function of
# the input number
_ELEMENTWISE = {
    "TanhBackward0",
    "ExpBackward0",
    "LogBackward0",
    "PowBackward0",
    "SigmoidBackward0",
    "ReluBackward0",
    "GeluBackward0",
    "SqrtBackward0",
    "RsqrtBackward0",
    "NegBackward0",
    "ReciprocalBackward0",
    "SinBackward0",
    "CosBackward0",
    "AbsBackward0",
    "AddBackward1",
    "SubBackward1",
    "RsubBackward1",
    "MulBackward1",
    "DivBackward1",
}


def _elementwise(node: Node) -> bool:
    """An operation on each number alone: one of ``_ELEMENTWISE``, or a product, quotient, sum or
    difference with a constant (a number, which has no graph)."""
    kind = type(node).__name__
    if kind in _ELEMENTWISE:
        return True
    if kind in ("MulBackward0", "DivBackward0", "AddBackward0", "SubBackward0"):
        return sum(nxt is not None for nxt, _ in node.next_functions) == 1
    return False


# the saved inputs of a product, by input slot
_SAVED = {
    "MulBackward0": ("_saved_self", "_saved_other"),
    "DivBackward0": ("_saved_self", "_saved_other"),
    "MmBackward0": ("_saved_self", "_saved_mat2"),
    "BmmBackward0": ("_saved_self", "_saved_mat2"),
}
# operations that only rearrange: a product behind one of them still takes the tensor
_VIEWS = (
    "ViewBackward0",
    "UnsafeViewBackward0",
    "ReshapeAliasBackward0",
    "ExpandBackward0",
    "CloneBackward0",
)
# what ``swaps`` calls the other factor's own gradient when the notebook has no name for the factor
GRADIENT = "the other factor's gradient"
# what ``swaps`` appends to an operand's name for its transpose (a square one)
TRANSPOSED = " transposed"


def _broadcasts(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Whether ``a`` and ``b`` broadcast together."""
    try:
        torch.broadcast_shapes(a.shape, b.shape)
    except RuntimeError:
        return False
    return True


def _retained_grads() -> list[tuple[torch.Tensor, torch.Tensor | None]]:
    """Every live tensor that retains its grad, with that grad (a second backward adds to them)."""
    return [(t, t.grad) for t in heap.tensors() if t.retains_grad]


Rule = Callable[
    [GraphFacts, Node, int, torch.Tensor, torch.Tensor, torch.Tensor], torch.Tensor | None
]


def _mul(f: GraphFacts, node: Node, slot: int, t: torch.Tensor, out: torch.Tensor, g: torch.Tensor):
    other = f.operand(node, 1 - slot)
    return None if other is None else g * other


def _div(f, node, slot, t, out, g):
    other = f.operand(node, 1 - slot)
    if other is None:
        return None
    return g / other if slot == 0 else -g * other / t**2


def _mm(f, node, slot, t, out, g):
    other = f.operand(node, 1 - slot)
    if other is None:
        return None
    return g @ other.mT if slot == 0 else other.mT @ g


def _sum(f, node, slot, t, out, g):
    dims = getattr(node, "_saved_dim", None)
    if dims is not None and not node._saved_keepdim:
        for d in sorted(x % t.dim() for x in dims):
            g = g.unsqueeze(d)
    return g.expand(t.shape)


def _mean(f, node, slot, t, out, g):
    return _sum(f, node, slot, t, out, g) * (out.numel() / t.numel())


def _max(f, node, slot, t, out, g):
    dim = node._saved_dim
    if not node._saved_keepdim:
        g = g.unsqueeze(dim)
    return torch.zeros_like(t).scatter(dim, t.argmax(dim, keepdim=True), g)


def _pow(f, node, slot, t, out, g):
    p = node._saved_exponent
    return g * p * t ** (p - 1)


_SOFTMAX = ("LogSoftmaxBackward0", "SoftmaxBackward0")

RULES: dict[str, Rule] = {
    "AddBackward0": lambda f, n, s, t, o, g: g if s == 0 else g * n._saved_alpha,
    "SubBackward0": lambda f, n, s, t, o, g: g if s == 0 else -g * n._saved_alpha,
    "AddBackward1": lambda f, n, s, t, o, g: g,
    "SubBackward1": lambda f, n, s, t, o, g: g,
    "RsubBackward1": lambda f, n, s, t, o, g: -g,
    "NegBackward0": lambda f, n, s, t, o, g: -g,
    "MulBackward0": _mul,
    "DivBackward0": _div,
    "MmBackward0": _mm,
    "BmmBackward0": _mm,
    "SumBackward0": _sum,
    "SumBackward1": _sum,
    "MeanBackward0": _mean,
    "MeanBackward1": _mean,
    "MaxBackward0": _max,
    "PowBackward0": _pow,
    "ExpBackward0": lambda f, n, s, t, o, g: g * o,
    "LogBackward0": lambda f, n, s, t, o, g: g / t,
    "TanhBackward0": lambda f, n, s, t, o, g: g * (1 - o**2),
    "ViewBackward0": lambda f, n, s, t, o, g: g.reshape(t.shape),
    "UnsafeViewBackward0": lambda f, n, s, t, o, g: g.reshape(t.shape),
    "ReshapeAliasBackward0": lambda f, n, s, t, o, g: g.reshape(t.shape),
    "TBackward0": lambda f, n, s, t, o, g: g.T,
    "ExpandBackward0": lambda f, n, s, t, o, g: g.sum_to_size(t.shape),
    "CloneBackward0": lambda f, n, s, t, o, g: g,
}
