"""Algebraic data types: type definitions, constructors, patterns.

``type List[A] { Cons(A, List[A]), Nil }`` is a :class:`TypeData` whose
header is the :class:`GlobalTypeVar` ``List``, whose type parameters are
``[A]`` and whose constructors carry their field types (which may mention
``A`` and ``List`` itself) and their tag (the index in the definition).

Patterns are identities too (like expressions): ``PatternVar`` binds the
very :class:`Var` object used in the clause's right-hand side.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..diagnostics import Span
from .expr import Expr, Var
from .types import GlobalTypeVar, Type, TypeCall, TypeVar


@dataclass(frozen=True, eq=False, slots=True)
class Constructor(Expr):
    """A data constructor, usable as a function value (``Cons``) or called
    (``Cons(1, Nil)``).  ``inputs`` are the field types, in terms of the
    owning TypeData's type variables."""

    name: str
    inputs: tuple[Type, ...]
    belong_to: GlobalTypeVar
    tag: int

    def __repr__(self) -> str:
        return f"Constructor({self.name})"


@dataclass(frozen=True, eq=False, slots=True)
class TypeData:
    header: GlobalTypeVar
    type_vars: tuple[TypeVar, ...]
    constructors: tuple[Constructor, ...]
    #: ``extern type T`` has no constructors and is opaque.
    extern: bool = False
    span: Span | None = field(default=None, kw_only=True, repr=False)

    @property
    def self_type(self) -> TypeCall:
        """``List[A]`` in terms of the definition's own variables."""
        return TypeCall(self.header, tuple(self.type_vars))


# ---------------------------------------------------------------- patterns

@dataclass(frozen=True, eq=False, slots=True)
class Pattern:
    span: Span | None = field(default=None, kw_only=True, repr=False)


@dataclass(frozen=True, eq=False, slots=True)
class PatternWildcard(Pattern):
    pass


@dataclass(frozen=True, eq=False, slots=True)
class PatternVar(Pattern):
    var: Var


@dataclass(frozen=True, eq=False, slots=True)
class PatternConstructor(Pattern):
    constructor: Constructor
    patterns: tuple[Pattern, ...] = ()


@dataclass(frozen=True, eq=False, slots=True)
class PatternTuple(Pattern):
    patterns: tuple[Pattern, ...] = ()


@dataclass(frozen=True, eq=False, slots=True)
class Clause:
    lhs: Pattern
    rhs: Expr
    span: Span | None = field(default=None, kw_only=True, repr=False)


def pattern_vars(p: Pattern) -> list[Var]:
    """Variables bound by a pattern, left to right."""
    out: list[Var] = []
    stack = [p]
    while stack:
        node = stack.pop()
        if isinstance(node, PatternVar):
            out.append(node.var)
        elif isinstance(node, (PatternConstructor, PatternTuple)):
            stack.extend(reversed(node.patterns))
    return out
