"""Common subexpressions of a fused element expression become temporaries.

Design note
-----------
Fusion by composing reads (:mod:`aot.emit.lower.registry`) inlines a producer into
every place its value is read, so ``y = exp(x); z = y * y`` reads as
``exp(x) * exp(x)``.  Before such an expression is stored, :func:`hoist`
finds the sub-expressions that occur more than once *in the tree* (counted
over the value-deduplicated DAG: a node's occurrences are the sum of its
parents', so a DAG with exponentially many tree paths is counted in linear
time) and binds each to a ``Decl`` temporary, innermost first.

Hoisting evaluates a sub-expression unconditionally, and the arms of a
``Select`` are not evaluated unconditionally: a load guarded by a select
may be out of bounds when its guard is false.  So an expression that
contains a load is hoisted only if it occurs at least twice outside select
arms (it is evaluated anyway); a load-free expression (every other kernel
IR operation is total: integer division by zero is defined) is hoisted
whenever it occurs twice anywhere -- without that, a chain of selects that
reuse their operands in both arms (integer ``power`` unrolled over the
exponent's bits) would print as a tree exponentially large.  Loads, leaves
and index arithmetic (``no_wrap``) are left to the C compiler.
"""

from __future__ import annotations

from typing import Callable

from . import ir as K
from .walk import children, with_children

__all__ = ["hoist"]


def _unconditional_children(e: K.Expr) -> tuple[K.Expr, ...]:
    if isinstance(e, K.Select):
        return (e.cond,)
    return children(e)


def _worth_hoisting(e: K.Expr) -> bool:
    if isinstance(e, (K.Const, K.Var, K.Load)):
        return False
    if isinstance(e, K.BinOp) and e.no_wrap:
        return False
    return True


def _occurrences(value: K.Expr, order: list[K.Expr],
                 kids: Callable[[K.Expr], tuple[K.Expr, ...]]) -> dict[K.Expr, int]:
    """How often each node occurs in the tree of ``value`` through the
    edges ``kids`` gives (``order``: children before parents)."""
    counts: dict[K.Expr, int] = {value: 1}
    for node in reversed(order):          # parents before children
        n = counts.get(node, 0)
        if n == 0:
            continue
        for c in kids(node):
            counts[c] = counts.get(c, 0) + n
    return counts


def hoist(value: K.Expr, fresh: Callable[[str], str]) -> tuple[list[K.Stmt], K.Expr]:
    """``(decls, expr)``: ``expr`` computes ``value`` using the temporaries
    ``decls`` declares; ``fresh`` names them."""
    order: list[K.Expr] = []          # unique nodes (by value), children first
    seen: set[K.Expr] = set()
    stack: list[tuple[K.Expr, bool]] = [(value, False)]
    while stack:
        node, expanded = stack.pop()
        if expanded:
            order.append(node)
            continue
        if node in seen:
            continue
        seen.add(node)
        stack.append((node, True))
        for c in reversed(children(node)):
            if c not in seen:
                stack.append((c, False))

    unconditional = _occurrences(value, order, _unconditional_children)
    anywhere = _occurrences(value, order, children)
    load_free: dict[K.Expr, bool] = {}
    for node in order:
        load_free[node] = not isinstance(node, K.Load) and \
            all(load_free[c] for c in children(node))

    decls: list[K.Stmt] = []
    rebuilt: dict[K.Expr, K.Expr] = {}
    for node in order:
        new = with_children(node, [rebuilt[c] for c in children(node)])
        repeated = unconditional.get(node, 0) >= 2 or \
            (load_free[node] and anywhere.get(node, 0) >= 2)
        if repeated and _worth_hoisting(node):
            tmp = K.var(fresh("t"), new.dtype)
            decls.append(K.Decl(tmp, new))
            new = tmp
        rebuilt[node] = new
    return decls, rebuilt[value]
