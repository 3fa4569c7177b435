"""Which nodes a pattern can match at its root: a cheap pre-filter.

Design note
-----------
Rewriting tries a pattern at every node of the graph; in a 10,000-node
graph almost every try fails at the first step, because the node is not a
call of the pattern's operator, yet each costs a matcher call.  Instead,
:func:`root_keys` reads off a pattern the *keys* of the nodes it can match
at its root -- the operator's name for a call of a known operator, the
node class otherwise (``Call`` for a call of anything) -- or ``None`` when
it can match any node (a wildcard); :func:`node_keys` gives a node's keys.
A node none of whose keys is among a pattern's keys cannot match it, so
the grouper and the bottom-up rewriter skip it without calling the matcher.

The filter is conservative: it never skips a node the matcher would
accept.  Alternatives take the union of their keys; type and attribute
constraints and a dominator pattern take their inner (child) pattern's;
and because the matcher re-associates ``divide`` and ``multiply`` (see
:mod:`~.matcher`), a call pattern of either operator also accepts calls
of the other.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Hashable

from ..expr import Call, Constant, Expr, Function, If, Let, Op, Tuple, TupleGetItem, Var
from .patterns import (AltPattern, AttrPattern, CallPattern, ConstantPattern, DataTypePattern,
                       DFPattern, DominatorPattern, ExprPattern, FunctionPattern, IfPattern,
                       LetPattern, ShapePattern, TupleGetItemPattern, TuplePattern, TypePattern,
                       VarPattern)

Keys = frozenset[Hashable]

_REASSOCIATED = frozenset({"divide", "multiply"})
_NODE_CLASS: dict[type, type] = {
    ConstantPattern: Constant, VarPattern: Var, FunctionPattern: Function, TuplePattern: Tuple,
    TupleGetItemPattern: TupleGetItem, IfPattern: If, LetPattern: Let,
}


def node_keys(e: Expr) -> tuple[Hashable, ...]:
    """The keys of ``e``: a call of an operator has its operator's name and
    ``Call``; any other node its class."""
    if isinstance(e, Call):
        op = e.op
        return (op.name, Call) if isinstance(op, Op) else (Call,)
    return (type(e),)


@lru_cache(maxsize=1024)
def root_keys(p: DFPattern) -> Keys | None:
    """The keys of the nodes ``p`` can match at its root (``None``: any).
    Cached by pattern identity (patterns are immutable)."""
    if isinstance(p, CallPattern):
        names = _op_names(p.op)
        if names is None:
            return frozenset({Call})
        if names & _REASSOCIATED:
            names = names | _REASSOCIATED
        return names
    if isinstance(p, AltPattern):
        left, right = root_keys(p.left), root_keys(p.right)
        return None if left is None or right is None else left | right
    if isinstance(p, (TypePattern, DataTypePattern, ShapePattern, AttrPattern)):
        return root_keys(p.pattern)
    if isinstance(p, DominatorPattern):
        return root_keys(p.child)
    if isinstance(p, ExprPattern):
        return frozenset(node_keys(p.expr))
    node_class = _NODE_CLASS.get(type(p))
    return None if node_class is None else frozenset({node_class})


def _op_names(p: DFPattern) -> Keys | None:
    """The operator names a callee pattern can match (``None``: it is not
    limited to named operators)."""
    if isinstance(p, ExprPattern):
        return frozenset({p.expr.name}) if isinstance(p.expr, Op) else None
    if isinstance(p, AltPattern):
        left, right = _op_names(p.left), _op_names(p.right)
        return None if left is None or right is None else left | right
    if isinstance(p, (TypePattern, DataTypePattern, ShapePattern, AttrPattern)):
        return _op_names(p.pattern)
    return None


def may_match(keys: Keys | None, e: Expr) -> bool:
    """Can a pattern with root ``keys`` match ``e``?  (``node_keys`` of
    ``e`` meets ``keys``, without building them: this runs per node.)"""
    if keys is None:
        return True
    if isinstance(e, Call):
        op = e.op
        return Call in keys or (isinstance(op, Op) and op.name in keys)
    return type(e) in keys


class Dispatch:
    """Which of a list of patterns may match a node, per node key (the
    answers are remembered: one per operator name and node class)."""

    def __init__(self, patterns: tuple[DFPattern, ...]) -> None:
        self.keys = [root_keys(p) for p in patterns]
        self._known: dict[Hashable, tuple[int, ...]] = {}

    def indices(self, e: Expr) -> tuple[int, ...]:
        """The positions of the patterns that may match ``e``, in order."""
        keys = node_keys(e)
        found = self._known.get(keys[0])
        if found is None:
            found = self._known[keys[0]] = tuple(
                i for i, ks in enumerate(self.keys)
                if ks is None or any(k in ks for k in keys))
        return found


@lru_cache(maxsize=256)
def dispatch_for(patterns: tuple[DFPattern, ...]) -> Dispatch:
    """The (shared) :class:`Dispatch` of ``patterns``."""
    return Dispatch(patterns)
