"""Tree patterns compiled to closures: the matcher's fast path.

Design note
-----------
The general matcher (:mod:`~.matcher`) interprets a pattern: every step
is a method dispatch plus a memo lookup and update, because a pattern
object may occur twice (``add(x, x)``) and must then match one node.
Most patterns that rewrite rules use are *trees* -- no pattern object
reachable twice -- made of calls of named operators, wildcards, constants,
tuples and alternatives; for those the memo never constrains anything
and a match is a handful of ``isinstance`` checks.
:func:`compile_pattern` turns such a pattern into nested closures
``m(expr, trail) -> bool`` (``None`` for any other pattern, which stays
with the general matcher).

The closures decide exactly what the general matcher decides, and record
the same bindings in the same order: on success a closure appends
``(pattern, expr)`` to ``trail`` after its sub-patterns' pairs (the
matcher's post-order), and on failure it removes what it appended, so the
node map built from the trail (:func:`match_compiled`) equals the
matcher's memo.  In particular:

* a call of ``add`` or ``multiply`` with two argument patterns is tried
  with the arguments swapped when they fail as written, keeping the
  binding of the operator;
* a call pattern shaped for the matcher's ``divide``/``multiply``
  re-association (``divide(multiply(a, b), c)``, ``multiply(divide(a, b),
  c)``) is not compiled;
* compiled kinds: wildcard, ``is_expr`` (an operator by name, anything
  else by identity or structural equality), variable, constant, call,
  tuple, projection, alternative and attribute patterns.  Type and
  dominator patterns (which need the graph or typing), function, if and
  let patterns are not.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any, Callable

from ..expr import Call, Constant, Expr, Function, Op, Tuple, TupleGetItem, Var
from ..structural import structural_equal
from .patterns import (AltPattern, AttrPattern, CallPattern, ConstantPattern, DFPattern,
                       ExprPattern, TupleGetItemPattern, TuplePattern, VarPattern,
                       WildcardPattern)

Trail = list[tuple[DFPattern, Expr]]
Compiled = Callable[[Expr, Trail], bool]

_COMMUTATIVE = frozenset({"add", "multiply"})


class _NotCompiled(Exception):
    """The pattern needs the general matcher."""


@lru_cache(maxsize=1024)
def compile_pattern(pattern: DFPattern) -> Compiled | None:
    """The closure matching ``pattern``, or ``None`` if it is not a tree of
    compiled kinds (see the note).  Cached by pattern identity (patterns
    are immutable), so a pass's rules compile once per process."""
    try:
        return _Compiler().compile(pattern)
    except _NotCompiled:
        return None


def match_compiled(fn: Compiled, expr: Expr) -> dict[DFPattern, list[Expr]] | None:
    """The node map of a match of ``fn`` at ``expr``, or ``None``."""
    trail: Trail = []
    if not fn(expr, trail):
        return None
    node_map: dict[DFPattern, list[Expr]] = {}
    for p, e in trail:
        node_map[p] = [e]     # a tree binds each pattern once
    return node_map


class _Compiler:
    def __init__(self) -> None:
        self.seen: set[DFPattern] = set()

    def compile(self, p: DFPattern) -> Compiled:
        if p in self.seen:
            raise _NotCompiled  # shared: the memo would constrain it
        self.seen.add(p)
        method = _KINDS.get(type(p))
        if method is None:
            raise _NotCompiled
        return method(self, p)

    # ------------------------------------------------------------ leaves
    def _wildcard(self, p: WildcardPattern) -> Compiled:
        def m(e: Expr, trail: Trail) -> bool:
            trail.append((p, e))
            return True
        return m

    def _expr(self, p: ExprPattern) -> Compiled:
        want = p.expr
        if isinstance(want, Op):
            name = want.name

            def m_op(e: Expr, trail: Trail) -> bool:
                if e is want or (isinstance(e, Op) and e.name == name):
                    trail.append((p, e))
                    return True
                return False
            return m_op

        def m(e: Expr, trail: Trail) -> bool:
            if e is want or structural_equal(want, e):
                trail.append((p, e))
                return True
            return False
        return m

    def _var(self, p: VarPattern) -> Compiled:
        name = p.name

        def m(e: Expr, trail: Trail) -> bool:
            if isinstance(e, Var) and (not name or name == e.name_hint):
                trail.append((p, e))
                return True
            return False
        return m

    def _constant(self, p: ConstantPattern) -> Compiled:
        def m(e: Expr, trail: Trail) -> bool:
            if isinstance(e, Constant):
                trail.append((p, e))
                return True
            return False
        return m

    # ------------------------------------------------------------ structure
    def _operands(self, ps: tuple[DFPattern, ...] | None) -> list[Compiled] | None:
        return None if ps is None else [self.compile(q) for q in ps]

    def _call(self, p: CallPattern) -> Compiled:
        name = _op_name(p.op)
        if _reassociates(p, name):
            raise _NotCompiled
        op_m = self.compile(p.op)
        ms = self._operands(p.args)
        args = _sequence(ms)
        # add, multiply: the argument patterns against the operands the
        # other way round, the second pattern first (as the matcher does)
        swapped = _sequence_swapped(ms) if name in _COMMUTATIVE and ms and len(ms) == 2 \
            else None

        def m(e: Expr, trail: Trail) -> bool:
            if not isinstance(e, Call):
                return False
            callee = e.op
            if name is not None and isinstance(callee, Op) and callee.name != name:
                return False
            mark = len(trail)
            if not op_m(callee, trail):
                return False
            inner = len(trail)
            if args(e.args, trail):
                trail.append((p, e))
                return True
            del trail[inner:]
            if swapped is not None:
                if swapped(e.args, trail):
                    trail.append((p, e))
                    return True
                del trail[inner:]
            del trail[mark:]
            return False
        return m

    def _tuple(self, p: TuplePattern) -> Compiled:
        fields = _sequence(self._operands(p.fields))

        def m(e: Expr, trail: Trail) -> bool:
            if not isinstance(e, Tuple):
                return False
            mark = len(trail)
            if fields(e.fields, trail):
                trail.append((p, e))
                return True
            del trail[mark:]
            return False
        return m

    def _tuple_get_item(self, p: TupleGetItemPattern) -> Compiled:
        index = p.index
        sub = self.compile(p.tuple)

        def m(e: Expr, trail: Trail) -> bool:
            if isinstance(e, TupleGetItem) and (index is None or index == e.index) \
                    and sub(e.tuple_value, trail):
                trail.append((p, e))
                return True
            return False
        return m

    def _alt(self, p: AltPattern) -> Compiled:
        left = self.compile(p.left)
        right = self.compile(p.right)

        def m(e: Expr, trail: Trail) -> bool:
            if left(e, trail) or right(e, trail):
                trail.append((p, e))
                return True
            return False
        return m

    def _attr(self, p: AttrPattern) -> Compiled:
        from .matcher import MISSING, call_attr_matches, op_attr_matches
        sub = self.compile(p.pattern)
        items = p.attrs

        def attrs_match(e: Expr) -> bool:
            if isinstance(e, Op):
                return all(op_attr_matches(e, k, v) for k, v in items)
            if isinstance(e, Call):
                return all(call_attr_matches(e.attrs, k, v) for k, v in items)
            if isinstance(e, Function):
                return all(e.attrs.get(k, MISSING) == v for k, v in items)
            return False

        def m(e: Expr, trail: Trail) -> bool:
            mark = len(trail)
            if not sub(e, trail):
                return False
            if attrs_match(e):
                trail.append((p, e))
                return True
            del trail[mark:]
            return False
        return m


Operands = Callable[[tuple[Expr, ...], Trail], bool]


def _sequence(ms: list[Compiled] | None) -> Operands:
    """Matches operands one by one (``None``: any operands); the caller
    undoes the bindings of a failure."""
    if ms is None:
        return lambda es, trail: True
    n = len(ms)

    def many(es: tuple[Expr, ...], trail: Trail) -> bool:
        if len(es) != n:
            return False
        for q, e in zip(ms, es):
            if not q(e, trail):
                return False
        return True
    return many


def _sequence_swapped(ms: list[Compiled]) -> Operands:
    first, second = ms

    def swapped(es: tuple[Expr, ...], trail: Trail) -> bool:
        return len(es) == 2 and second(es[0], trail) and first(es[1], trail)
    return swapped


_KINDS: dict[type, Any] = {
    WildcardPattern: _Compiler._wildcard,
    ExprPattern: _Compiler._expr,
    VarPattern: _Compiler._var,
    ConstantPattern: _Compiler._constant,
    CallPattern: _Compiler._call,
    TuplePattern: _Compiler._tuple,
    TupleGetItemPattern: _Compiler._tuple_get_item,
    AltPattern: _Compiler._alt,
    AttrPattern: _Compiler._attr,
}


def _op_name(p: DFPattern) -> str | None:
    return p.expr.name if isinstance(p, ExprPattern) and isinstance(p.expr, Op) else None


def _reassociates(p: CallPattern, name: str | None) -> bool:
    """Would the general matcher try ``p`` re-associated (see its note)?"""
    if p.args is None or len(p.args) != 2:
        return False
    if name == "divide":
        inner = p.args[0]
        return isinstance(inner, CallPattern) and _op_name(inner.op) == "multiply"
    if name == "multiply":
        return any(isinstance(a, CallPattern) and _op_name(a.op) == "divide" for a in p.args)
    return False
