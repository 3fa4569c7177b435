"""EliminateCommonSubexpr: identical operator calls become one node.

Design note
-----------
As Relay's ``EliminateCommonSubexpr``
(``src/relay/transforms/eliminate_common_subexpr.cc``): one bottom-up
:class:`~aot.ir.visitor.ExprMutator` walk.  After a node's children have
been rewritten, the node is looked up in a table keyed by

* for a call of an **operator**: the operator name, its typed attrs
  (frozen dataclasses, compared by value), the arguments, the call's
  ``type_args`` and its checked type;
* for a **projection** ``t.i``: the tuple node and ``i``.

Arguments are compared *by identity* -- after CSE of the arguments
themselves, so ``relu(%x) + 1f`` twice becomes one node bottom-up -- with
one exception: a **constant of at most** :data:`SMALL_CONSTANT` elements
is compared by value (dtype, shape and bit pattern: ``-0f`` is not ``0f``,
a NaN matches only the same NaN), so two literal ``1f`` nodes do not keep
two ``add(%x, 1f)`` apart.  Larger constants (weights) compare by
identity: hashing them costs time and equal weights are rare.

A hit returns the earlier node: the two uses share one node (a graph
binding), which the interpreter and the backends evaluate once.

Only operator calls are merged: every operator of the catalogue is pure
and deterministic, while calls of globals, closures and constructors may
have effects, diverge, or allocate (refs inside an ADT value are
distinct).  Projections are merged because projecting the same tuple
node twice reads the same value.

The table is **scoped**: a function body, an ``if`` branch and a
``match`` clause see the entries of the scopes around them (nodes that
are evaluated before them) but their own entries are dropped when they
end, so nothing computed only inside a branch or a closure is shared
with code outside it.

``fskip(call)`` (the function API only: a Python callable is not a typed
pass option) returns True for rewritten calls that must not be merged,
as in Relay.  Types stay correct: merged nodes have the same checked type.
"""

from __future__ import annotations

from typing import Any, Callable, Hashable

from ..ir.expr import Call, Constant, Expr, Function, If, Match, Op, TupleGetItem
from ..ir.module import IRModule
from ..ir.visitor import ExprMutator, Visit, rebuild
from .manager import register_pass

__all__ = ["eliminate_common_subexpr", "SMALL_CONSTANT"]

#: Constants with at most this many elements are compared by value.
SMALL_CONSTANT = 64

Skip = Callable[[Expr], bool]


def _arg_key(arg: Expr) -> Hashable:
    if isinstance(arg, Constant) and arg.data.size <= SMALL_CONSTANT:
        return ("const", arg.data.dtype.str, arg.data.shape, arg.data.tobytes())
    return arg          # identity (expressions hash and compare by identity)


def _hashable(key: Any) -> bool:
    try:
        hash(key)
    except TypeError:
        return False
    return True


class _CSE(ExprMutator):
    def __init__(self, fskip: Skip | None) -> None:
        super().__init__()
        self.fskip = fskip
        self.scopes: list[dict[Hashable, Expr]] = [{}]

    def _lookup_or_add(self, key: Hashable, node: Expr) -> Expr:
        if not _hashable(key):
            return node
        for scope in reversed(self.scopes):
            found = scope.get(key)
            if found is not None:
                return found
        self.scopes[-1][key] = node
        return node

    def _scoped(self, e: Expr) -> Visit:
        self.scopes.append({})
        out = yield e
        self.scopes.pop()
        return out

    def visit_call(self, node: Call) -> Visit:
        new = yield from super().visit_call(node)
        if not isinstance(new.op, Op) or (self.fskip is not None and self.fskip(new)):
            return new
        key = ("call", new.op.name, new.attrs, tuple(_arg_key(a) for a in new.args),
               new.type_args, node.checked_type)
        return self._lookup_or_add(key, new)

    def visit_tuple_getitem(self, node: TupleGetItem) -> Visit:
        new = yield from super().visit_tuple_getitem(node)
        return self._lookup_or_add(("proj", new.tuple_value, new.index), new)

    def visit_function(self, node: Function) -> Visit:
        body = yield from self._scoped(node.body)
        return rebuild(node, body=body)

    def visit_if(self, node: If) -> Visit:
        cond = yield node.cond
        t = yield from self._scoped(node.true_branch)
        f = yield from self._scoped(node.false_branch)
        return rebuild(node, cond=cond, true_branch=t, false_branch=f)

    def visit_match(self, node: Match) -> Visit:
        data = yield node.data
        clauses = []
        for clause in node.clauses:
            rhs = yield from self._scoped(clause.rhs)
            clauses.append(rebuild(clause, rhs=rhs))
        return rebuild(node, data=data, clauses=tuple(clauses))


def eliminate_common_subexpr(mod: IRModule, fskip: Skip | None = None) -> IRModule:
    """A new module in which identical operator calls and projections of
    each function share one node (``fskip(call)`` True keeps a call
    apart)."""
    out = mod.copy()
    for gv, func in mod.functions.items():
        out.add(gv, _CSE(fskip).visit(func))
    return out


@register_pass("EliminateCommonSubexpr", opt_level=2)
def eliminate_common_subexpr_pass(mod: IRModule) -> IRModule:
    """EliminateCommonSubexpr: identical operator calls become one node."""
    return eliminate_common_subexpr(mod)
