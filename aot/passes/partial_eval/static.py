"""Partially static values: what the partial evaluator knows about a value.

Every expression evaluates to a :class:`PStatic`: an optional *static*
part (what is known at compile time) and a *dynamic* part, an atom of the
residual program (a variable, global, constant, operator, constructor or
the unit tuple) that computes the same value at run time.  The static part
is one of:

* :class:`STensor`      a tensor whose elements are known;
* :class:`STuple`       a tuple whose fields are partially static values;
* :class:`SConstructor` an ADT cell with a known constructor;
* :class:`SRef`         a reference cell created by the program, tracked by
                        identity; its contents live in the evaluator's store;
* :class:`SClosure`     a function value whose code is known (a function
                        literal with the partially static values of its free
                        variables, or a global function);
* :class:`SOp`, :class:`SCtorFn`  an operator or a constructor with fields
                        used as a function value.

Each PStatic carries its *creation time* (a global counter), which the
termination rule uses: the parts of a static structure are always created
before the structure, so walking down a static list goes back in time.

Matching a pattern against a partially static value
(:func:`match_static`) has three outcomes: it matches (with the bindings),
it does not, or it cannot be decided at compile time.
"""

from __future__ import annotations

import enum
import itertools
from dataclasses import dataclass, field
from typing import Mapping

import numpy as np

from ...ir import adt
from ...ir.adt import Constructor, Pattern
from ...ir.expr import Expr, Function, GlobalVar, Op, Var
from ...ir.types import Type, TypeVar
from ...values import Value
from ...ir.dtype import np_kind

__all__ = ["PStatic", "Static", "STensor", "STuple", "SConstructor", "SRef", "SClosure",
           "SOp", "SCtorFn", "MatchStatus", "match_static", "static_value", "int_measure"]

_CLOCK = itertools.count()


class Static:
    """Base of the static parts."""

    __slots__ = ()


@dataclass(frozen=True, eq=False, slots=True)
class STensor(Static):
    data: np.ndarray


@dataclass(frozen=True, eq=False, slots=True)
class STuple(Static):
    fields: tuple[PStatic, ...]


@dataclass(frozen=True, eq=False, slots=True)
class SConstructor(Static):
    constructor: Constructor
    fields: tuple[PStatic, ...]


@dataclass(frozen=True, eq=False, slots=True)
class SRef(Static):
    """A reference cell; compared by identity (its contents are in the
    evaluator's store, which may forget them)."""


@dataclass(frozen=True, eq=False, slots=True)
class SClosure(Static):
    """A function with known code.  ``env`` holds the partially static
    values of the function's free variables; ``self_var`` is the variable
    of a recursive ``let`` that names the closure inside its own body;
    ``tsubst`` maps type variables of the context the closure was created
    in to the types they stand for in the residual program."""

    func: Function
    env: Mapping[Var, PStatic]
    self_var: Var | None = None
    tsubst: Mapping[TypeVar, Type] = field(default_factory=dict)
    global_var: GlobalVar | None = None


@dataclass(frozen=True, eq=False, slots=True)
class SOp(Static):
    op: Op


@dataclass(frozen=True, eq=False, slots=True)
class SCtorFn(Static):
    constructor: Constructor


@dataclass(frozen=True, eq=False, slots=True)
class PStatic:
    """A partially static value: ``static`` (None when nothing is known)
    and ``dyn``, an atom of the residual program computing the value."""

    static: Static | None
    dyn: Expr
    time: int = field(default_factory=lambda: next(_CLOCK))


def static_value(ps: PStatic) -> Value | None:
    """The runtime value of ``ps`` when it is a fully static tensor or a
    tuple of those (what an operator can be evaluated on), else None.
    Iterative (a post-order walk): tuples may nest to any depth."""
    out: list[Value] = []
    stack: list[tuple[PStatic, bool]] = [(ps, False)]
    while stack:
        node, fields_done = stack.pop()
        s = node.static
        if fields_done:
            assert isinstance(s, STuple)
            n = len(s.fields)
            values = tuple(out[len(out) - n:])
            del out[len(out) - n:]
            out.append(values)
        elif isinstance(s, STensor):
            out.append(s.data)
        elif isinstance(s, STuple):
            stack.append((node, True))
            stack.extend((f, False) for f in reversed(s.fields))
        else:
            return None
    return out[0]


def int_measure(ps: PStatic) -> int:
    """A non-negative integer that a static 0-d integer tensor stands for
    (negative values count as 0); 0 for anything else."""
    s = ps.static
    if isinstance(s, STensor) and s.data.shape == () and np_kind(s.data.dtype) in "iu":
        return max(0, int(s.data))
    return 0


class MatchStatus(enum.Enum):
    MATCH = "match"
    NO_MATCH = "no match"
    UNKNOWN = "unknown"


def _same_constructor(a: Constructor, b: Constructor) -> bool:
    return a is b or (a.name == b.name and a.belong_to == b.belong_to)


def match_static(pattern: Pattern, ps: PStatic) -> tuple[MatchStatus, list[tuple[Var, PStatic]]]:
    """Match ``pattern`` against ``ps`` as far as the static parts allow.
    A part that certainly does not match makes the whole clause NO_MATCH,
    even where other parts are unknown.  Iterative over pattern depth."""
    bindings: list[tuple[Var, PStatic]] = []
    status = MatchStatus.MATCH
    work: list[tuple[Pattern, PStatic]] = [(pattern, ps)]
    while work:
        p, value = work.pop()
        if isinstance(p, adt.PatternWildcard):
            continue
        if isinstance(p, adt.PatternVar):
            bindings.append((p.var, value))
            continue
        s = value.static
        if isinstance(p, adt.PatternConstructor):
            if not isinstance(s, SConstructor):
                status = MatchStatus.UNKNOWN
                continue
            if not _same_constructor(p.constructor, s.constructor):
                return MatchStatus.NO_MATCH, []
            if len(p.patterns) != len(s.fields):
                if p.patterns:
                    return MatchStatus.NO_MATCH, []
                continue  # `Cons` without sub-patterns matches any Cons
            work.extend(zip(reversed(p.patterns), reversed(s.fields)))
        elif isinstance(p, adt.PatternTuple):
            if not isinstance(s, STuple) or len(s.fields) != len(p.patterns):
                status = MatchStatus.UNKNOWN
                continue
            work.extend(zip(reversed(p.patterns), reversed(s.fields)))
        else:
            raise AssertionError(f"unknown pattern {p!r}")
    if status is MatchStatus.UNKNOWN:
        return status, []
    return status, bindings
