"""Small analyses over expressions: free and bound variables, global
references.  All are linear, iterative walks built on :mod:`aot.ir.visitor`.
"""

from __future__ import annotations

from .adt import pattern_vars
from .expr import Expr, Function, GlobalVar, Let, Match, Var
from .visitor import post_order


def bound_vars(expr: Expr) -> list[Var]:
    """Variables bound inside ``expr`` (let, parameters, patterns), in
    post-order."""
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


def free_vars(expr: Expr) -> list[Var]:
    """Variables used in ``expr`` but not bound in it, in order of first
    use."""
    bound = set(bound_vars(expr))
    return [n for n in post_order(expr) if isinstance(n, Var) and n not in bound]


def global_refs(expr: Expr) -> list[GlobalVar]:
    """Global functions referenced from ``expr``, in order of first use."""
    return [n for n in post_order(expr) if isinstance(n, GlobalVar)]
