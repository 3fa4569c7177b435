"""Inline: global functions marked ``Inline`` and small single-use globals
are substituted into their callers.

Design note
-----------
After Relay's ``Inline`` (``src/relay/transforms/inline.cc``):

* **What is inlined.**  A global function is *inlinable* when it is not
  recursive (it is not in a cycle of the call graph, self-loops
  included: inlining it would never end), not polymorphic (its body's
  annotations would need instantiating; ``Specialize`` runs first in the
  program pipeline), not ``Primitive`` (a fused kernel), not the entry,
  and either carries the function attribute ``Inline`` (``def @f(%x,
  Inline=1)``, Relay's ``kInline``; the free-form
  :class:`~aot.ir.attrs.FuncAttrs` holds it, no new field needed) or is
  referenced exactly once in the module, from the callee position of a
  call, and has at most ``max_size`` nodes (0 turns this off).
* **Order.**  The call graph's strongly connected components are visited
  callees first (Tarjan's order), so when ``@f`` is inlined its own
  inlinable callees are already inlined into it: a chain ``main -> g1 ->
  g11`` of inlinable functions collapses in one pass.  Recursive
  functions are not inlined, but inlinable callees are inlined into
  them.
* **How.**  A call ``@f(a1, ..., an)`` becomes a fresh copy of ``@f``'s
  body: every variable bound in it (parameters, lets, patterns, nested
  functions' parameters) gets a new :class:`Var`, and every non-leaf node
  is a new node, so each copy is bound once (the well-formedness rule)
  and no node -- a ``ref(0)``, a call of a closure -- is shared between
  two copies.  A parameter whose argument is atomic (a variable, a
  constant, a global, an operator, a constructor) is replaced by it;
  any other argument is bound by a ``let`` before the body, in argument
  order, so it is still evaluated exactly once and before the body, as
  the call did (``ToGraphNormalForm`` or ``DeadCodeElimination`` with
  ``inline_once`` turn pure ones into graph edges).  An ``Inline``
  global used as a value, not called (``if (%c) { @g1 } else { @g2 }``),
  becomes a fresh copy of its function literal, as in Relay.
* **Clean-up.**  An inlined global that is no longer referenced anywhere
  is removed (Relay removes the inlined functions whose reference count
  drops to zero); ``Inline`` functions nobody calls stay.

The result is type-checked again.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from ..ir.adt import Constructor
from ..ir.analysis import bound_vars
from ..ir.expr import (Call, Constant, Expr, Function, GlobalVar, Let, Op, Var)
from ..ir.module import IRModule
from ..ir.visitor import ExprFunctor, ExprMutator, Visit, children, post_order
from .manager import register_pass

__all__ = ["InlineOptions", "inline", "fresh_copy", "call_graph_sccs"]


@dataclass(frozen=True)
class InlineOptions:
    """``max_size``: single-use globals of at most this many nodes are
    inlined (0: only ``Inline`` ones); ``entry``: never inlined or
    removed."""

    max_size: int = 32
    entry: str = "main"


# ------------------------------------------------------------- fresh copies

def _copying(method: str):
    parent = getattr(ExprMutator, method)

    def visit(self: ExprMutator, node: Expr) -> Visit:
        out = yield from parent(self, node)
        return dataclasses.replace(out) if out is node else out
    return visit


class _Fresh(ExprMutator):
    """A copy in which every bound variable is new (``memo`` maps old to
    new, pre-seeded) and every non-leaf node is a new object; sharing
    inside the copied expression is kept."""

    def __init__(self, mapping: dict[Var, Expr]) -> None:
        super().__init__()
        self.memo.update(mapping)

    visit_tuple = _copying("visit_tuple")
    visit_tuple_getitem = _copying("visit_tuple_getitem")
    visit_call = _copying("visit_call")
    visit_function = _copying("visit_function")
    visit_let = _copying("visit_let")
    visit_if = _copying("visit_if")
    visit_match = _copying("visit_match")
    visit_ref_create = _copying("visit_ref_create")
    visit_ref_read = _copying("visit_ref_read")
    visit_ref_write = _copying("visit_ref_write")


def fresh_copy(expr: Expr, mapping: dict[Var, Expr] | None = None) -> Expr:
    """``expr`` with every variable it binds renamed freshly and every
    non-leaf node new; ``mapping`` substitutes free variables."""
    memo: dict[Var, Expr] = dict(mapping or {})
    for v in bound_vars(expr):
        if v not in memo:
            memo[v] = Var(v.name_hint, v.type_annotation, span=v.span)
    return _Fresh(memo).visit(expr)


# -------------------------------------------------------------- call graph

class _GlobalEdges(ExprFunctor[None]):
    """``refs[name]``: edges to the global; ``called[name]``: those from the
    callee position of a call."""

    def __init__(self) -> None:
        super().__init__()
        self.refs: dict[str, int] = {}
        self.called: dict[str, int] = {}

    def _walk(self, node: Expr) -> Visit:
        for i, c in enumerate(children(node)):
            if isinstance(c, GlobalVar):
                self.refs[c.name] = self.refs.get(c.name, 0) + 1
                if isinstance(node, Call) and i == 0:
                    self.called[c.name] = self.called.get(c.name, 0) + 1
            else:
                yield c

    def _leaf(self, node: Expr) -> None:
        return None

    visit_var = visit_global_var = visit_constant = visit_op = visit_constructor = _leaf
    visit_tuple = visit_tuple_getitem = visit_call = visit_function = _walk
    visit_let = visit_if = visit_match = _walk
    visit_ref_create = visit_ref_read = visit_ref_write = _walk


def _edges(func: Function) -> _GlobalEdges:
    e = _GlobalEdges()
    e.visit(func)
    return e


def call_graph_sccs(graph: dict[str, list[str]]) -> list[list[str]]:
    """Strongly connected components of ``graph`` (name -> callees), each
    after every component it reaches (callees first); iterative Tarjan."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    out: list[list[str]] = []
    for root in graph:
        if root in index:
            continue
        work: list[tuple[str, int]] = [(root, 0)]
        while work:
            v, i = work.pop()
            if i == 0:
                index[v] = low[v] = len(index)
                stack.append(v)
                on_stack.add(v)
            succ = graph[v]
            if i < len(succ):
                work.append((v, i + 1))
                w = succ[i]
                if w not in index:
                    work.append((w, 0))
                elif w in on_stack:
                    low[v] = min(low[v], index[w])
                continue
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                out.append(sorted(comp))
    return out


# ------------------------------------------------------------------ inline

def _marked_inline(func: Function) -> bool:
    return bool(func.attrs.get("Inline", 0))


def _is_atomic(e: Expr) -> bool:
    return isinstance(e, (Var, Constant, GlobalVar, Op, Constructor))


class _Inliner(ExprMutator):
    #: each use of an Inline global as a value gets its own copy
    no_memo = (GlobalVar,)

    def __init__(self, bodies: dict[str, Function], inlinable: set[str],
                 marked: set[str], done: set[str]) -> None:
        super().__init__()
        self.bodies = bodies
        self.inlinable = inlinable
        self.marked = marked
        self.done = done

    def visit_call(self, node: Call) -> Visit:
        op = node.op
        if not (isinstance(op, GlobalVar) and op.name in self.inlinable):
            return (yield from super().visit_call(node))
        args = yield from self._many(node.args)
        self.done.add(op.name)
        return _instantiate(self.bodies[op.name], args, node)

    def visit_global_var(self, node: GlobalVar) -> Expr:
        if node.name in self.marked and node.name in self.inlinable:
            self.done.add(node.name)
            return fresh_copy(self.bodies[node.name])
        return node


def _instantiate(func: Function, args: tuple[Expr, ...], call: Call) -> Expr:
    mapping: dict[Var, Expr] = {}
    bindings: list[tuple[Var, Expr]] = []
    for p, a in zip(func.params, args):
        if _is_atomic(a):
            mapping[p] = a
        else:
            v = Var(p.name_hint, p.type_annotation, span=p.span)
            mapping[p] = v
            bindings.append((v, a))
    out = fresh_copy(func.body, mapping)
    for v, a in reversed(bindings):
        out = Let(v, a, out, span=call.span)
    return out


def _size(func: Function) -> int:
    return len(post_order(func))


def inline(mod: IRModule, opts: InlineOptions = InlineOptions()) -> IRModule:
    """A new, typed module with the inlinable globals inlined (see the
    module note)."""
    from ..ir.type_infer import infer_types
    edges = {gv.name: _edges(f) for gv, f in mod.functions.items()}
    graph = {n: sorted(k for k in e.refs if k in mod) for n, e in edges.items()}
    refs = _total({n: e.refs for n, e in edges.items()})
    called = _total({n: e.called for n, e in edges.items()})
    sccs = call_graph_sccs(graph)
    recursive = {n for comp in sccs for n in comp if len(comp) > 1 or n in graph[n]}

    def inlinable(name: str) -> bool:
        f = mod[name]
        if name in recursive or name == opts.entry or f.type_params or f.attrs.get("Primitive", 0):
            return False
        if _marked_inline(f):
            return True
        return (opts.max_size > 0 and refs.get(name, 0) == 1 and called.get(name, 0) == 1
                and _size(f) <= opts.max_size)

    chosen = {n for n in graph if inlinable(n)}
    if not chosen:
        return mod
    marked = {n for n in chosen if _marked_inline(mod[n])}
    bodies: dict[str, Function] = {}
    done: set[str] = set()
    for comp in sccs:
        for name in comp:
            func = mod[name]
            bodies[name] = _Inliner(bodies, chosen, marked, done).visit(func)
    out = mod.copy()
    out.functions = {}
    for gv in mod.functions:
        out.add(gv, bodies[gv.name])
    _drop_unreferenced(out, done, opts.entry)
    return infer_types(out)


def _total(counts: dict[str, dict[str, int]]) -> dict[str, int]:
    """Per global, the sum of its counts over every function."""
    out: dict[str, int] = {}
    for per_function in counts.values():
        for k, n in per_function.items():
            out[k] = out.get(k, 0) + n
    return out


def _drop_unreferenced(mod: IRModule, inlined: set[str], entry: str) -> None:
    """Delete the inlined globals nothing refers to any more (never the
    entry)."""
    still = {k for f in mod.functions.values() for k in _edges(f).refs}
    for gv in list(mod.functions):
        if gv.name in inlined and gv.name not in still and gv.name != entry:
            del mod.functions[gv]


@register_pass("Inline", opt_level=1, options=InlineOptions)
def inline_pass(mod: IRModule, opts: InlineOptions) -> IRModule:
    """Inline: globals marked Inline and small single-use globals."""
    return inline(mod, opts)
