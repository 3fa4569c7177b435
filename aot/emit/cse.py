"""Common subexpressions of a fused element expression become temporaries.

Design note
-----------
Fusion by composing reads (:mod:`aot.emit.te`) inlines a producer into
every place its value is read, so ``y = exp(x); z = y * y`` reads as
``exp(x) * exp(x)``.  Before such an expression is stored, :func:`hoist`
finds the sub-expressions that occur more than once *in the tree* (counted
over the value-deduplicated DAG: a node's occurrences are the sum of its
parents', so a DAG with exponentially many tree paths is counted in linear
time) and binds each to a ``Decl`` temporary, innermost first.

Only unconditional occurrences count: the arms of a ``Select`` are not
evaluated unconditionally (a guarded load may be out of bounds when its
guard is false), so an expression occurring only inside arms is never
hoisted; one that also occurs outside them is evaluated anyway and may be
replaced everywhere.  Loads, leaves and index arithmetic (``no_wrap``) are
left to the C compiler.
"""

from __future__ import annotations

from typing import Callable

from . import kernel_ir as K
from .kernel_walk import children, with_children

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

    occurrences: dict[K.Expr, int] = {value: 1}
    for node in reversed(order):          # parents before children
        n = occurrences.get(node, 0)
        if n == 0:
            continue
        for c in _unconditional_children(node):
            occurrences[c] = occurrences.get(c, 0) + n

    decls: list[K.Stmt] = []
    rebuilt: dict[K.Expr, K.Expr] = {}
    for node in order:
        new = with_children(node, [rebuilt[c] for c in children(node)])
        if occurrences.get(node, 0) >= 2 and _worth_hoisting(node):
            tmp = K.var(fresh("t"), new.dtype)
            decls.append(K.Decl(tmp, new))
            new = tmp
        rebuilt[node] = new
    return decls, rebuilt[value]
