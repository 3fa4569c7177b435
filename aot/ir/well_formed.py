"""Well-formedness: every variable bound once, every use in scope.

Design note
-----------
Relay's rules: a ``Var`` object is bound at exactly one site (a let, a
function parameter, a match pattern); every use lies inside its binder's
scope (a let's body, or its value when that value is a function -- the
recursive let; a function's body; a clause's right-hand side); a global
function has no free variables; every GlobalVar it names is defined.

Graphs share nodes, so a scoped walk that re-enters shared nodes would be
exponential.  Instead the walk computes each node's *free variables*
bottom-up, memoised by node (one visit per node, on the iterative
trampoline of :mod:`aot.ir.visitor`): a binder removes its variables from
its scope's free set, and a use out of scope shows up as a variable still
free at the top of its global function.  The two formulations agree: a
variable is used out of scope iff it is free in some binder-less path to
the root.
"""

from __future__ import annotations

from collections import Counter

from .adt import pattern_vars
from .expr import Expr, Function, GlobalVar, Let, Match, Var
from .module import IRModule
from .visitor import ExprVisitor, Visit, children, post_order

__all__ = ["ill_formed", "check_well_formed"]

_EMPTY: frozenset[Var] = frozenset()


class _Free(ExprVisitor):
    """memo[node] = frozenset of free Vars of node."""

    def visit_var(self, node: Var) -> frozenset[Var]:
        return frozenset((node,))

    def _leaf(self, node: Expr) -> frozenset[Var]:
        return _EMPTY

    visit_global_var = visit_constant = visit_op = visit_constructor = _leaf

    def _union(self, node: Expr) -> Visit:
        out: frozenset[Var] = _EMPTY
        for c in children(node):
            out = out | (yield c)
        return out

    visit_tuple = visit_tuple_getitem = visit_call = visit_if = _union
    visit_ref_create = visit_ref_read = visit_ref_write = _union

    def visit_function(self, node: Function) -> Visit:
        body = yield node.body
        return body - frozenset(node.params)

    def visit_let(self, node: Let) -> Visit:
        value = yield node.value
        body = yield node.body
        if isinstance(node.value, Function):
            value = value - {node.var}
        return value | (body - {node.var})

    def visit_match(self, node: Match) -> Visit:
        out = yield node.data
        for clause in node.clauses:
            rhs = yield clause.rhs
            out = out | (rhs - frozenset(pattern_vars(clause.lhs)))
        return out


def _binders(expr: Expr) -> list[Var]:
    out: list[Var] = []
    for node in post_order(expr):
        if isinstance(node, Let):
            out.append(node.var)
        elif isinstance(node, Function):
            out.extend(node.params)
        elif isinstance(node, Match):
            for clause in node.clauses:
                out.extend(pattern_vars(clause.lhs))
    return out


def ill_formed(mod: IRModule) -> list[str]:
    """Every well-formedness violation of ``mod``, as messages (empty when
    the module is well formed)."""
    problems: list[str] = []
    seen: Counter[Var] = Counter()
    defined = {gv.name for gv in mod.functions}
    for gv, fn in mod.functions.items():
        free = _Free().visit(fn)
        for v in sorted(free, key=lambda v: v.name_hint):
            problems.append(f"@{gv.name}: %{v.name_hint} used outside the scope of its binding")
        binders = _binders(fn)
        seen.update(set(binders))
        for v, n in Counter(binders).items():
            if n > 1:
                problems.append(f"@{gv.name}: %{v.name_hint} bound {n} times")
        for node in post_order(fn):
            if isinstance(node, GlobalVar) and node.name not in defined:
                problems.append(f"@{gv.name}: refers to undefined @{node.name}")
    for v, n in seen.items():
        if n > 1:
            problems.append(f"%{v.name_hint} bound in {n} global functions")
    return problems


def check_well_formed(mod: IRModule) -> None:
    """AssertionError naming the first violation (for passes' own checks)."""
    problems = ill_formed(mod)
    assert not problems, problems[0]
