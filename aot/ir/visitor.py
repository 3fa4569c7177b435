"""The traversal framework: memoised, iterative, one for the whole compiler.

Design note
-----------
Real programs are deep: a model imported from ONNX is a 10,000-node
dataflow graph, a program in A-normal form is a 10,000-deep ``let`` chain.
Python's recursion limit (and C stack) would break a recursive visitor, so
:class:`ExprFunctor` runs visit methods as *generators on a trampoline*:

* a ``visit_<node>`` method is written as if it were recursive, but where it
  would call ``self.visit(child)`` it writes ``value = yield child``;
* :meth:`ExprFunctor.visit` keeps an explicit stack of suspended
  generators, starts the child's generator, and sends the child's result
  back into the parent when the child returns;
* results are memoised by node identity, so a shared node (a graph
  binding) is visited once; ``memoize = False`` turns that off for
  functors whose result depends on context.

A visit method that needs no children may simply ``return`` (it need not
be a generator).  Dispatch is by node class: ``Var`` -> ``visit_var``,
``TupleGetItem`` -> ``visit_tuple_getitem`` and so on (see ``VISIT_METHOD``).

On top of it:

* :class:`ExprVisitor` visits every sub-expression once (override a method
  and ``yield from super().visit_x(node)`` to keep walking);
* :class:`ExprMutator` rebuilds the tree bottom-up, reusing every node whose
  children did not change and keeping spans and checked types; variables
  map through ``self.memo``, so pre-seeding ``memo[old_var] = new_expr``
  substitutes.

Patterns are walked inside ``visit_match`` by ordinary (shallow) recursion.
"""

from __future__ import annotations

import dataclasses
from types import GeneratorType
from typing import Any, Generator, Generic, TypeVar

from . import adt
from .adt import Constructor, Pattern
from .expr import (Call, Constant, Expr, Function, GlobalVar, If, Let, Match, Op,
                   RefCreate, RefRead, RefWrite, Tuple, TupleGetItem, Var)

R = TypeVar("R")
Visit = Generator[Expr, Any, Any]

VISIT_METHOD: dict[type, str] = {
    Var: "visit_var",
    GlobalVar: "visit_global_var",
    Constant: "visit_constant",
    Tuple: "visit_tuple",
    TupleGetItem: "visit_tuple_getitem",
    Op: "visit_op",
    Call: "visit_call",
    Function: "visit_function",
    Let: "visit_let",
    If: "visit_if",
    Match: "visit_match",
    Constructor: "visit_constructor",
    RefCreate: "visit_ref_create",
    RefRead: "visit_ref_read",
    RefWrite: "visit_ref_write",
}

_PENDING = object()


class ExprFunctor(Generic[R]):
    memoize: bool = True
    #: node classes whose results are never memoised (e.g. each reference
    #: to a polymorphic global gets its own instantiation).
    no_memo: tuple[type, ...] = ()

    def __init__(self) -> None:
        self.memo: dict[Any, Any] = {}

    def visit(self, expr: Expr) -> R:
        memo = self.memo
        memoize = self.memoize
        no_memo = self.no_memo
        if memoize and expr in memo:
            return memo[expr]
        stack: list[tuple[Expr, GeneratorType]] = []

        def start(node: Expr) -> Any:
            out = getattr(self, VISIT_METHOD[type(node)])(node)
            if isinstance(out, GeneratorType):
                stack.append((node, out))
                return _PENDING
            if memoize and not isinstance(node, no_memo):
                memo[node] = out
            return out

        result = start(expr)
        send: Any = None
        while stack:
            node, gen = stack[-1]
            try:
                child = gen.send(send)
            except StopIteration as stop:
                stack.pop()
                send = stop.value
                if memoize:
                    memo[node] = send
                continue
            if memoize and child in memo:
                send = memo[child]
                continue
            value = start(child)
            send = None if value is _PENDING else value
        return send if result is _PENDING else result

    # Every node kind must be handled by a subclass.
    # ``node: Any``: subclasses narrow each visit_* to its node class.
    def _unhandled(self, node: Any) -> Any:
        raise NotImplementedError(f"{type(self).__name__} does not handle {type(node).__name__}")

    visit_var = visit_global_var = visit_constant = visit_op = _unhandled
    visit_constructor = visit_tuple = visit_tuple_getitem = visit_call = _unhandled
    visit_function = visit_let = visit_if = visit_match = _unhandled
    visit_ref_create = visit_ref_read = visit_ref_write = _unhandled


def children(e: Expr) -> tuple[Expr, ...]:
    """Direct sub-expressions in evaluation order (binding variables
    included: the Let var, function params, pattern vars)."""
    if isinstance(e, Call):
        return (e.op, *e.args)
    if isinstance(e, Tuple):
        return e.fields
    if isinstance(e, TupleGetItem):
        return (e.tuple_value,)
    if isinstance(e, Function):
        return (*e.params, e.body)
    if isinstance(e, Let):
        return (e.var, e.value, e.body)
    if isinstance(e, If):
        return (e.cond, e.true_branch, e.false_branch)
    if isinstance(e, Match):
        out: list[Expr] = [e.data]
        for c in e.clauses:
            out.extend(adt.pattern_vars(c.lhs))
            out.append(c.rhs)
        return tuple(out)
    if isinstance(e, RefCreate):
        return (e.value,)
    if isinstance(e, RefRead):
        return (e.ref,)
    if isinstance(e, RefWrite):
        return (e.ref, e.value)
    return ()


class ExprVisitor(ExprFunctor[None]):
    """Visits every sub-expression once, children in evaluation order."""

    def _leaf(self, node: Any) -> None:
        return None

    visit_var = visit_global_var = visit_constant = visit_op = visit_constructor = _leaf

    def _walk(self, node: Any) -> Visit:
        for c in children(node):
            yield c

    visit_tuple = visit_tuple_getitem = visit_call = visit_function = _walk
    visit_let = visit_if = visit_match = _walk
    visit_ref_create = visit_ref_read = visit_ref_write = _walk


def post_order(expr: Expr, *, into_functions: bool = True) -> list[Expr]:
    """Every node reachable from ``expr`` (descending into function bodies
    unless ``into_functions`` is False: then a Function is a leaf), each
    once, children before parents."""
    order: list[Expr] = []

    class _Collect(ExprVisitor):
        def _leaf(self, node: Expr) -> None:
            order.append(node)

        visit_var = visit_global_var = visit_constant = visit_op = visit_constructor = _leaf

        def _walk(self, node: Expr) -> Visit:
            yield from ExprVisitor._walk(self, node)
            order.append(node)

        def visit_function(self, node: Expr) -> Visit:
            if into_functions:
                yield from self._walk(node)
            else:
                order.append(node)

        visit_tuple = visit_tuple_getitem = visit_call = _walk
        visit_let = visit_if = visit_match = _walk
        visit_ref_create = visit_ref_read = visit_ref_write = _walk

    _Collect().visit(expr)
    return order


def _rebuild(node: Any, **changes: Any) -> Any:
    """``node`` with ``changes``, or ``node`` itself if nothing changed."""
    for key, value in changes.items():
        old = getattr(node, key)
        if isinstance(value, tuple) and isinstance(old, tuple):
            if len(value) != len(old) or any(a is not b for a, b in zip(value, old)):
                return dataclasses.replace(node, **changes)
        elif value is not old:
            return dataclasses.replace(node, **changes)
    return node


class ExprMutator(ExprFunctor[Expr]):
    """Rebuilds bottom-up; unchanged subtrees are returned as they are."""

    def _same(self, node: Any) -> Expr:
        return node

    visit_var = visit_global_var = visit_constant = visit_op = visit_constructor = _same

    def _many(self, exprs: tuple[Expr, ...]) -> Generator[Expr, Any, tuple[Expr, ...]]:
        out = []
        for e in exprs:
            out.append((yield e))
        return tuple(out)

    def visit_tuple(self, node: Tuple) -> Visit:
        fields = yield from self._many(node.fields)
        return _rebuild(node, fields=fields)

    def visit_tuple_getitem(self, node: TupleGetItem) -> Visit:
        t = yield node.tuple_value
        return _rebuild(node, tuple_value=t)

    def visit_call(self, node: Call) -> Visit:
        fn = yield node.op
        args = yield from self._many(node.args)
        return _rebuild(node, op=fn, args=args)

    def visit_function(self, node: Function) -> Visit:
        params = yield from self._many(node.params)
        body = yield node.body
        return _rebuild(node, params=params, body=body)

    def visit_let(self, node: Let) -> Visit:
        var = yield node.var
        value = yield node.value
        body = yield node.body
        return _rebuild(node, var=var, value=value, body=body)

    def visit_if(self, node: If) -> Visit:
        c = yield node.cond
        t = yield node.true_branch
        f = yield node.false_branch
        return _rebuild(node, cond=c, true_branch=t, false_branch=f)

    def visit_match(self, node: Match) -> Visit:
        data = yield node.data
        clauses = []
        for clause in node.clauses:
            lhs = yield from self.visit_pattern(clause.lhs)
            rhs = yield clause.rhs
            clauses.append(_rebuild(clause, lhs=lhs, rhs=rhs))
        return _rebuild(node, data=data, clauses=tuple(clauses))

    def visit_pattern(self, p: Pattern) -> Generator[Expr, Any, Pattern]:
        if isinstance(p, adt.PatternVar):
            var = yield p.var
            return _rebuild(p, var=var)
        if isinstance(p, adt.PatternConstructor):
            ctor = yield p.constructor
            subs = []
            for sp in p.patterns:
                subs.append((yield from self.visit_pattern(sp)))
            return _rebuild(p, constructor=ctor, patterns=tuple(subs))
        if isinstance(p, adt.PatternTuple):
            subs = []
            for sp in p.patterns:
                subs.append((yield from self.visit_pattern(sp)))
            return _rebuild(p, patterns=tuple(subs))
        return p

    def visit_ref_create(self, node: RefCreate) -> Visit:
        v = yield node.value
        return _rebuild(node, value=v)

    def visit_ref_read(self, node: RefRead) -> Visit:
        r = yield node.ref
        return _rebuild(node, ref=r)

    def visit_ref_write(self, node: RefWrite) -> Visit:
        r = yield node.ref
        v = yield node.value
        return _rebuild(node, ref=r, value=v)


def rebuild(node: Any, **changes: Any) -> Any:
    """Public alias of the copy-on-change helper used by mutators."""
    return _rebuild(node, **changes)

