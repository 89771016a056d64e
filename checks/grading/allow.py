"""What an answer cell may use, as data (``ALLOWED``), and :func:`disallowed`: what a cell uses
beyond it, read with :mod:`ast` (never by running it).

An answer is the learner's own arithmetic: Python's, and the tensor operations the notebooks
teach. Anything else an answer cell reaches (autograd in any spelling, torch's kernels and
internals, code run from strings, modules it imports, dunder attributes) is listed by its spelling,
so that the grader can hold the answer for review. What the handed-out cell (the template) itself
uses is allowed, and so is whatever the learner defines: their own functions and classes are read
too, where they are called (``earlier``: the learner's earlier answer cells). The section "What an
answer may use" of docs/grading.md is :func:`readme_section`, rendered from ``ALLOWED``.
"""

from __future__ import annotations

import ast
import builtins
import dataclasses
import functools
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

from checks.parsing import parse

__all__ = ["ALLOWED", "MODULES", "disallowed", "readme_section"]


def _words(text: str) -> tuple[str, ...]:
    return tuple(text.split())


# ---------------------------------------------------------------- the allowlist, in one place

# Each entry: (what it is, the names). `torch` and `torch.nn.functional` are read by attribute
# chains rooted at a module name (`torch.X`, `F.X`); `tensor` names any attribute or method of
# any other expression (an in-place `X_` is allowed where `X` is).
ALLOWED: dict[str, tuple[str, tuple[str, ...]]] = {
    "builtins": (
        "Python's builtins for arithmetic, loops and containers",
        _words(
            "range len zip enumerate min max abs sum round divmod pow float int bool complex str "
            "repr format print isinstance issubclass list tuple dict set frozenset sorted reversed "
            "map filter any all iter next slice callable super object property staticmethod "
            "classmethod id hash Exception ValueError TypeError RuntimeError IndexError KeyError "
            "AssertionError NotImplementedError ZeroDivisionError StopIteration ArithmeticError "
            "NotImplemented Ellipsis"
        ),
    ),
    "workbook": (
        "the workbook's own checks and hints, and the notebook's display",
        _words("cmp check_value hint require summary NotWritten display"),
    ),
    "torch": (
        "torch.X: creation, arithmetic, reductions, indexing, shapes, dtypes",
        _words(
            # creation
            "tensor as_tensor from_numpy zeros ones full empty arange linspace eye zeros_like "
            "ones_like full_like empty_like rand_like randn_like rand randn randint randperm "
            "manual_seed Generator no_grad inference_mode set_printoptions "
            # element by element
            "add sub subtract mul multiply div divide true_divide floor_divide remainder fmod neg "
            "negative reciprocal pow square sqrt rsqrt exp exp2 expm1 log log2 log10 log1p abs "
            "sign sgn clamp clip clamp_min clamp_max maximum minimum fmax fmin tanh sigmoid relu "
            "softmax log_softmax erf erfc sin cos tan sinh cosh asin acos atan atan2 floor ceil "
            "round trunc frac lerp addcmul addcdiv heaviside where nan_to_num isnan isinf isfinite "
            "eq ne gt ge lt le logical_and logical_or logical_not logical_xor "
            # reductions
            "sum mean max min amax amin argmax argmin prod var std var_mean std_mean logsumexp "
            "cumsum cumprod norm count_nonzero bincount median all any allclose isclose equal "
            # products
            "matmul mm bmm mv dot outer inner einsum tensordot addmm baddbmm kron "
            # indexing
            "gather scatter scatter_add index_select index_add index_put index_fill index_copy "
            "masked_fill masked_select masked_scatter take take_along_dim nonzero unique sort "
            "argsort topk "
            # shapes
            "reshape transpose permute squeeze unsqueeze flatten unflatten cat concat concatenate "
            "stack hstack vstack split chunk unbind tril triu diag diag_embed diagonal "
            "broadcast_to broadcast_tensors movedim moveaxis swapaxes flip roll repeat_interleave "
            "tile narrow select t numel "
            # dtypes and constants
            "float16 float32 float64 float double half bfloat16 int8 int16 int32 int64 int long "
            "uint8 bool dtype device Size Tensor finfo iinfo inf nan pi e is_tensor "
            "is_floating_point get_default_dtype"
        ),
    ),
    "torch.nn.functional": (
        "F.X (torch.nn.functional): forward functions",
        _words(
            "one_hot softmax log_softmax relu gelu tanh sigmoid silu elu leaky_relu softplus "
            "cross_entropy nll_loss mse_loss linear embedding layer_norm normalize pad dropout "
            "logsigmoid softmin hardtanh"
        ),
    ),
    "tensor": (
        "X.Y on any other expression: tensor methods and attributes",
        _words(
            # the torch functions above, as methods
            "add sub subtract mul multiply div divide true_divide floor_divide remainder fmod neg "
            "negative reciprocal pow square sqrt rsqrt exp exp2 expm1 log log2 log10 log1p abs "
            "sign sgn clamp clip clamp_min clamp_max maximum minimum fmax fmin tanh sigmoid relu "
            "softmax log_softmax erf erfc sin cos tan sinh cosh floor ceil round trunc frac lerp "
            "addcmul addcdiv where nan_to_num isnan isinf isfinite eq ne gt ge lt le logical_and "
            "logical_or logical_not sum mean max min amax amin argmax argmin prod var std "
            "logsumexp cumsum cumprod norm count_nonzero all any allclose isclose equal matmul mm "
            "bmm mv dot outer inner gather scatter scatter_add index_select index_add index_put "
            "index_fill index_copy masked_fill masked_select masked_scatter take nonzero unique "
            "sort argsort topk bincount reshape reshape_as view view_as transpose permute squeeze "
            "unsqueeze flatten unflatten expand expand_as repeat repeat_interleave tile split "
            "chunk unbind tril triu diag diag_embed diagonal movedim swapaxes flip roll narrow "
            "select t T mT "
            # what a tensor is, and copies and casts
            "shape size dim ndim ndimension numel nelement dtype device layout stride "
            "is_contiguous is_floating_point element_size item tolist numpy clone detach "
            "contiguous double float half bfloat16 long int short bool to type type_as cpu data "
            "values indices new_zeros new_ones new_full new_empty new_tensor zero_ fill_ copy_ "
            # numpy arrays, Python's containers, a Generator
            "astype copy append extend insert pop remove index count reverse clear items keys "
            "update setdefault get join format strip startswith endswith replace manual_seed real "
            "imag conjugate ravel lower upper split rsplit lstrip rstrip splitlines find ljust "
            "rjust center zfill title capitalize popitem add discard union intersection difference "
            "issubset mH H"
        ),
    ),
    "read-only": (
        "read, never set: what autograd would do with a tensor",
        _words("requires_grad is_leaf"),
    ),
    "modules": (
        "modules with no autograd of their own: any public name in them",
        _words(
            "math numpy matplotlib matplotlib.pyplot torch.special torch.linalg torch.fft "
            "IPython.display"
        ),
    ),
    "imports": (
        "what an answer cell may import (as any name)",
        _words(
            "torch torch.nn torch.nn.functional math numpy matplotlib matplotlib.pyplot "
            "IPython.display"
        ),
    ),
    "magics": (
        "IPython magics that only time a line or set up plots",
        _words("time timeit matplotlib config precision pprint who whos"),
    ),
    "dunders": (
        "the special methods a class of the learner's may define",
        _words(
            "__init__ __repr__ __str__ __format__ __hash__ __bool__ __len__ __iter__ __next__ "
            "__contains__ __getitem__ __setitem__ __call__ __enter__ __exit__ __float__ __int__ "
            "__eq__ __ne__ __lt__ __le__ __gt__ __ge__ __neg__ __pos__ __abs__ __add__ __radd__ "
            "__iadd__ __sub__ __rsub__ __isub__ __mul__ __rmul__ __imul__ __truediv__ "
            "__rtruediv__ __itruediv__ __floordiv__ __rfloordiv__ __mod__ __pow__ __rpow__ "
            "__matmul__ __rmatmul__"
        ),
    ),
}

# the module names a notebook binds, and what they are
MODULES = {
    "torch": "torch",
    "F": "torch.nn.functional",
    "math": "math",
    "np": "numpy",
    "plt": "matplotlib.pyplot",
}


def _set(key: str) -> frozenset[str]:
    return frozenset(ALLOWED[key][1])


_BUILTINS, _WORKBOOK, _TENSOR = _set("builtins"), _set("workbook"), _set("tensor")
_READ_ONLY, _FREE_MODULES, _IMPORTS = _set("read-only"), _set("modules"), _set("imports")
_MAGICS, _DUNDERS = _set("magics"), _set("dunders")
_IN_MODULE = {"torch": _set("torch"), "torch.nn.functional": _set("torch.nn.functional")}
_PY_BUILTINS = frozenset(dir(builtins))


# ---------------------------------------------------------------- reading a cell

_MAGIC = re.compile(r"\s*(%%?|!)\s*(\w*)")


def _magics(source: str) -> tuple[str, list[str]]:
    """``source`` with each magic or shell line made ``pass`` (a timing magic keeps its code),
    and the lines that are neither timing nor plot set-up, by their text."""
    lines, found = [], []
    for line in source.splitlines():
        m = _MAGIC.match(line)
        if m and (m.group(1) != "!" or line.strip() != "!"):
            indent = line[: len(line) - len(line.lstrip())]
            if m.group(1) == "!" or m.group(2) not in _MAGICS:
                found.append(line.strip()[:40])
                line = indent + "pass"
            else:
                rest = re.sub(r"^(?:-\w+(?:\s+\d+)?\s*)*", "", line[m.end() :].strip())
                timed = m.group(2) in ("time", "timeit") and m.group(1) == "%"
                line = indent + (rest if timed and rest else "pass")
        lines.append(line)
    return "\n".join(lines), found


_HELP = re.compile(r"^\s*(?:\?{1,2}[\w.]+|[\w.]+\?{1,2})\s*$")  # `torch.einsum?`: help, harmless


def _parse(source: str) -> tuple[ast.Module | None, tuple[str, ...]]:
    """The cell's tree (None when it is not Python, even as IPython reads it) and its magics."""
    return _parsed(source if isinstance(source, str) else "")


@functools.lru_cache(maxsize=1024)
def _parsed(source: str) -> tuple[ast.Module | None, tuple[str, ...]]:
    """``_parse`` of a string, kept: a class's cells are read again for every later cell, and its
    templates for every learner (the trees are only read, never changed)."""
    text, magics = _magics(source)
    text = "\n".join("pass" if _HELP.match(line) else line for line in text.split("\n"))
    for attempt in (lambda: text, lambda: _ipython(text)):  # IPython's reading only if needed
        try:
            return parse(attempt()), tuple(magics)
        except (SyntaxError, ValueError, RecursionError, MemoryError, TypeError):
            continue
    return None, tuple(magics)


def _ipython(text: str) -> str | None:
    """The cell as IPython runs it (its other special syntax made calls of ``get_ipython()``)."""
    try:
        from IPython.core.inputtransformer2 import TransformerManager

        return TransformerManager().transform_cell(text)
    except Exception:
        return None


def _chain(node: ast.expr) -> tuple[str, list[str]] | None:
    """``("torch", ["autograd", "grad"])`` for ``torch.autograd.grad``; None unless the chain of
    attributes ends in a plain name."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    return (node.id, parts[::-1]) if isinstance(node, ast.Name) else None


def _bound(tree: ast.AST) -> set[str]:
    """Every name the code binds anywhere (targets, loops, defs, arguments, imports...)."""
    out: set[str] = set()
    for n in ast.walk(tree):
        if isinstance(n, ast.Name) and isinstance(n.ctx, (ast.Store, ast.Del)):
            out.add(n.id)
        elif isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out.add(n.name)
        elif isinstance(n, ast.arg):
            out.add(n.arg)
        elif isinstance(n, ast.alias):
            out.add(n.asname or n.name.split(".")[0])
        elif isinstance(n, ast.ExceptHandler) and n.name:
            out.add(n.name)
        elif isinstance(n, (ast.Global, ast.Nonlocal)):
            out.update(n.names)
        elif isinstance(n, ast.MatchAs | ast.MatchStar) and n.name:
            out.add(n.name)
    return out


def _attributes(tree: ast.AST) -> set[str]:
    """The attribute names ``tree`` uses (read or set), and the method names of its classes."""
    out = {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute)}
    for c in ast.walk(tree):
        if isinstance(c, ast.ClassDef):
            out.update(
                f.name for f in c.body if isinstance(f, ast.FunctionDef | ast.AsyncFunctionDef)
            )
    return out


def _root(node: ast.AST) -> str | None:
    """The name an expression starts from: ``plt`` for ``plt.subplots(2)[1].plot``."""
    while isinstance(node, ast.Attribute | ast.Call | ast.Subscript):
        node = node.func if isinstance(node, ast.Call) else node.value
    return node.id if isinstance(node, ast.Name) else None


_TORCH_OWN: frozenset[str] | None = None


def _torch_own() -> frozenset[str]:
    """The attribute names of torch's tensors and autograd's graph nodes: a class of the
    learner's that defines one does not make it an answer's to use."""
    global _TORCH_OWN
    if _TORCH_OWN is None:
        import torch

        _TORCH_OWN = frozenset(dir(torch.Tensor)) | frozenset(dir(torch.autograd.graph.Node))
    return _TORCH_OWN


def _stays_inside(module: str, attrs: list[str]) -> bool:
    """Whether ``module.attrs...`` stays inside the module's own package: ``plt.sys`` and
    ``matplotlib.subprocess`` are other modules, reached through it (read off the modules
    themselves, imported where they are not yet; a module that cannot be imported is no way out)."""
    import importlib
    import sys
    import types

    try:
        value = sys.modules.get(module) or importlib.import_module(module)
    except Exception:
        return True
    home = module if module.startswith("torch") else module.split(".")[0]  # torch.linalg.torch
    for attr in attrs:
        if not isinstance(value, types.ModuleType):
            return True
        value = getattr(value, attr, None)
        name = getattr(value, "__name__", "") or ""
        if isinstance(value, types.ModuleType) and not (name + ".").startswith(home + "."):
            return False
    return True


@dataclass
class _Context:
    """What one cell's names are: its own, its template's, its module aliases, its plots."""

    own: set[str]
    template_names: set[str]
    template_attrs: set[str]
    aliases: dict[str, str]
    plots: set[str] = field(default_factory=set)
    classes: set[str] = field(default_factory=set)  # attributes the learner's classes define
    earlier: dict[str, tuple[ast.AST, _Context]] = field(default_factory=dict)
    renames: dict[str, str] = field(default_factory=dict)  # `f = numgrad`: f -> numgrad
    before: set[str] = field(default_factory=set)  # names the learner's earlier cells bind


def _imported(node: ast.Import | ast.ImportFrom) -> Iterator[tuple[str, str]]:
    """(the name bound, the dotted thing it is) for each name an import binds."""
    for a in node.names:
        if isinstance(node, ast.Import):
            yield (a.asname, a.name) if a.asname else (a.name.split(".")[0], a.name.split(".")[0])
        else:
            yield a.asname or a.name, f"{'.' * node.level}{node.module or ''}.{a.name}"


def _context(source: str, template: str) -> _Context:
    """What the names of the cell ``source`` (which parses) are, as a copy of the kept reading:
    the caller sets its ``earlier`` and ``before``."""
    return dataclasses.replace(_context_of(source if isinstance(source, str) else "", template))


@functools.lru_cache(maxsize=1024)
def _context_of(source: str, template: str) -> _Context:
    tree, _ = _parse(source)
    own = _bound(tree)
    ttree, _ = _parse(template)
    tnames = _bound(ttree) | {n.id for n in ast.walk(ttree) if isinstance(n, ast.Name)}
    ctx = _Context(own, tnames if ttree else set(), _attributes(ttree) if ttree else set(), {})
    ctx.aliases = {k: v for k, v in MODULES.items() if k not in own}
    for n in ast.walk(tree):
        if isinstance(n, ast.Import | ast.ImportFrom):
            ctx.aliases.update(_imported(n))
    for _ in range(2):  # `ag = torch.autograd`, `fig, ax = plt.subplots()`, `for a in ax:`
        for n in ast.walk(tree):
            value = getattr(n, "value", None) if isinstance(n, ast.Assign) else None
            value = n.iter if isinstance(n, ast.For) else value
            if value is None:
                continue
            targets = n.targets if isinstance(n, ast.Assign) else [n.target]
            root, chain = _root(value), _chain(value)
            names = {t.id for t in targets if isinstance(t, ast.Name)}
            if chain and chain[0] in ctx.aliases and isinstance(n, ast.Assign):
                target = ".".join([ctx.aliases[chain[0]], *chain[1]])
                ctx.aliases.update({t: target for t in names})
            if root in ctx.plots or ctx.aliases.get(root or "", "").startswith("matplotlib"):
                ctx.plots.update(t.id for t in _names_in(targets))
    ctx.classes = _class_attributes(tree) - _torch_own()
    for n in ast.walk(tree):
        if isinstance(n, ast.Assign) and isinstance(n.value, ast.Name):
            ctx.renames.update({t.id: n.value.id for t in _names_in(n.targets)})
    return ctx


def _names_in(targets: Sequence[ast.expr]) -> Iterator[ast.Name]:
    for t in targets:
        yield from (n for n in ast.walk(t) if isinstance(n, ast.Name))


def _class_attributes(tree: ast.AST) -> set[str]:
    """The attributes the classes in ``tree`` define: their methods and ``self.X = ...``."""
    out: set[str] = set()
    for c in ast.walk(tree):
        if isinstance(c, ast.ClassDef):
            for n in ast.walk(c):
                if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef):
                    out.add(n.name)
                elif isinstance(n, ast.Attribute) and isinstance(n.ctx, ast.Store):
                    out.add(n.attr)
    return {a for a in out if not (a.startswith("__") and a.endswith("__"))}


class _Reader(ast.NodeVisitor):
    """Walks one cell (or one function of an earlier cell) and lists what it uses beyond the
    allowlist, by its spelling, in order."""

    def __init__(self, ctx: _Context, seen: set[int] | None = None) -> None:
        self.ctx, self.found, self.seen = ctx, [], seen if seen is not None else set()

    def add(self, node: ast.AST | str) -> None:
        text = node if isinstance(node, str) else ast.unparse(node)
        text = text if len(text) <= 60 else text[:57] + "..."
        if text not in self.found:
            self.found.append(text)

    def attr_ok(self, attr: str, store: bool) -> bool:
        """Whether ``X.attr`` may be used on any expression ``X`` that is not a module."""
        ctx = self.ctx
        if attr in ctx.template_attrs or attr in ctx.classes:
            return True
        if attr.startswith("_"):
            return False
        inplace = attr.endswith("_") and attr[:-1] in _TENSOR
        return attr in _TENSOR or inplace or (attr in _READ_ONLY and not store)

    def module_ok(self, dotted: str) -> bool:
        """Whether the dotted name (``torch.nn.functional.softmax``) is on the allowlist."""
        parts = dotted.split(".")
        for k in range(len(parts), 0, -1):
            head, rest = ".".join(parts[:k]), parts[k:]
            if head in _FREE_MODULES:
                return not any(p.startswith("_") for p in rest) and _stays_inside(head, rest)
            if head in _IN_MODULE:
                return bool(rest) and rest[0] in _IN_MODULE[head] and self.chain_ok(rest[1:])
        return dotted in self.ctx.template_names or dotted in _IMPORTS

    def chain_ok(self, attrs: list[str]) -> bool:
        return all(self.attr_ok(a, False) for a in attrs)

    def visit_Attribute(self, node: ast.Attribute) -> None:
        chain, root = _chain(node), _root(node)
        if chain and chain[0] in self.ctx.aliases:
            if not self.module_ok(".".join([self.ctx.aliases[chain[0]], *chain[1]])):
                self.add(node)
            return
        if root in self.ctx.plots or self.ctx.aliases.get(root or "", "") in _FREE_MODULES:
            if node.attr.startswith("_") and node.attr not in self.ctx.template_attrs:
                self.add(node)
        elif not self.attr_ok(node.attr, isinstance(node.ctx, ast.Store | ast.Del)):
            self.add(node)
        self.visit(node.value)

    def free(self, name: str) -> bool:
        ctx = self.ctx
        return not (
            name in ctx.own
            or name in ctx.aliases
            or name in ctx.template_names
            or name in ctx.earlier
            or name in _BUILTINS
            or name in _WORKBOOK
        )

    def visit_Name(self, node: ast.Name) -> None:
        name = node.id
        mine = name in self.ctx.before  # `_kept`, bound in an earlier cell of the learner's
        if self.free(name) and not mine and (name in _PY_BUILTINS or name.startswith("_")):
            self.add(name)

    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        if isinstance(func, ast.Name):
            name = func.id
            for _ in range(8):  # `f = numgrad; f(...)` calls numgrad
                name = self.ctx.renames.get(name, name) if name in self.ctx.own else name
            if self.free(name) and not (name in _PY_BUILTINS or name.startswith("_")):
                self.add(f"{name}()")  # a function of the notebook's the template does not call
            elif name in self.ctx.earlier and name not in self.ctx.own:
                for inner in self.earlier(name):
                    self.add(f"{name}: {inner}")
        self.generic_visit(node)

    def earlier(self, name: str) -> list[str]:
        """What a function or class of an earlier learner cell uses beyond the allowlist."""
        node, ctx = self.ctx.earlier[name]
        if id(node) in self.seen:
            return []
        self.seen.add(id(node))
        reader = _Reader(ctx, self.seen)
        reader.visit(node)
        return reader.found

    def visit_Import(self, node: ast.Import) -> None:
        for a in node.names:
            if a.name not in _IMPORTS:
                self.add(a.name)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        for a in node.names:
            dotted = f"{'.' * node.level}{node.module or ''}.{a.name}"
            if a.name == "*" or node.level or not (dotted in _IMPORTS or self.module_ok(dotted)):
                self.add(dotted)

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        for f in node.body:
            is_def = isinstance(f, ast.FunctionDef | ast.AsyncFunctionDef)
            if is_def and f.name.startswith("__") and f.name not in _DUNDERS:
                self.add(f"def {f.name}")
        for k in node.keywords:
            self.add(f"{k.arg}=")
        self.generic_visit(node)


def _defs(tree: ast.Module) -> Iterator[tuple[str, ast.AST]]:
    """The functions and classes a cell defines at its top level (in ifs and trys too)."""
    for stmt in tree.body:
        for n in [stmt, *ast.walk(stmt)] if isinstance(stmt, ast.If | ast.Try) else [stmt]:
            if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                yield n.name, n


# names IPython binds itself (the output and input history, the builtins): never the learner's
_IPYTHON_OWN = re.compile(r"^(_+|_[ioh]+\d*|_i[ioh]*|_dh|_ih|_oh|_\d+|__\w*__|_ii+)$")


def disallowed(
    source: str, template: str = "", earlier: Sequence[str | tuple[str, str]] = ()
) -> list[str]:
    """What the answer cell ``source`` uses beyond what an answer may use (``ALLOWED``), by its
    spelling, in order: ``[]`` when nothing (or when the cell does not parse: nothing of it runs).

    Whatever ``template`` (the handed-out cell) uses is allowed. ``earlier``: the learner's
    earlier answer cells (a source, or a pair of source and template), whose functions and
    classes are read where this cell calls them. Never raises.
    """
    try:
        defs: dict[str, tuple[ast.AST, _Context]] = {}
        before: set[str] = set()
        for cell in earlier:
            src, tpl = (cell, "") if isinstance(cell, str) else cell
            tree, _ = _parse(src)
            if tree is not None:
                ctx = _context(src, tpl)
                ctx.earlier = dict(defs)
                defs.update({name: (node, ctx) for name, node in _defs(tree)})
                before |= ctx.own
        tree, magics = _parse(source)
        _, template_magics = _parse(template)
        found = [m for m in magics if m not in template_magics]
        if tree is None:
            return found
        ctx = _context(source, template)
        ctx.earlier = {k: v for k, v in defs.items() if k not in ctx.own}
        ctx.before = {n for n in before if not _IPYTHON_OWN.match(n)}
        reader = _Reader(ctx)
        reader.visit(tree)
        found += reader.found
        return [f for f in found if not any(g.startswith(f + ".") for g in found)]
    except Exception:  # a checker must never fail because of the learner's text
        return []


# The section of docs/grading.md (it was the README's, hence the names) that lists ``ALLOWED``:
# tests/test_allow.py checks that the page holds exactly what ``readme_section()`` renders.
README_HEADING = "## What an answer may use"


def readme_section() -> str:
    """The section on what an answer may use of docs/grading.md, rendered from ``ALLOWED``."""
    rows = "\n".join(
        f"| {key} | {what} | {' '.join(f'`{n}`' for n in names)} |"
        for key, (what, names) in ALLOWED.items()
    )
    aliases = ", ".join(f"`{k}`" + (f" ({v})" if v != k else "") for k, v in MODULES.items())
    return f"""{README_HEADING}

An answer cell is read against this list (`ALLOWED` in `checks/grading/allow.py`): what
it uses beyond it makes its checks `review`, with the spelling in the reason. Attribute chains are
read from the module names the notebooks bind ({aliases}) or that the
cell imports; an attribute of any other expression must be a tensor method or attribute below (an
in-place `X_` where `X` is one). Also allowed: everything the handed-out cell uses, the names the
learner binds, and the functions and classes the learner writes (read too where a later cell calls
them; a class may not claim a name of torch's tensors or graph nodes). Never allowed: a dunder or
private attribute, a builtin not listed (`getattr`, `eval`, `exec`, `globals`, `__import__`...), a
module not listed (`operator`, `importlib`, `inspect`...), `torch.autograd`, `torch.func`,
`torch.ops`, `torch._C`, `grad_fn`, `next_functions`, `register_hook`, `.grad` and `.backward()`
where the handed-out cell has none, a function of the notebook's that the handed-out cell does not
call (`check_numeric`), and magics or `!shell` lines other than those below. At run time, the
grader also reports any use of autograd's engine, its graph or its backward kernels made from the
learner's code during an answer cell, even through torch's own functions.

| list | what | names |
|---|---|---|
{rows}
"""
