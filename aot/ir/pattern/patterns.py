"""Dataflow pattern records and the functions that build them.

Design note
-----------
The pattern language is Relay's (``tvm.relay.dataflow_pattern``): a
pattern is a small graph describing a piece of dataflow, matched against
expressions by :mod:`aot.ir.pattern.matcher`.

Patterns are *identities*, like expressions: frozen dataclasses with
``eq=False``, so a pattern object used twice means "the same expression
both times" (``x = wildcard(); is_op("add")(x, x)`` matches ``add(%a, %a)``
but not ``add(%a, %b)``), and the ``node_map`` handed to rewrite callbacks
is keyed by the pattern objects the user built.

The kinds, one record each:

=====================  ======================================================
``WildcardPattern``    anything
``ExprPattern``        an expression, structurally equal (``is_op``, ``is_expr``)
``VarPattern``         a local variable, optionally with that name
``ConstantPattern``    a tensor constant
``CallPattern``        a call; ``args=None`` accepts any arguments
``FunctionPattern``    a function literal; ``params=None`` accepts any
``TuplePattern``       a tuple; ``fields=None`` accepts any fields
``TupleGetItemPattern``  a projection; ``index=None`` accepts any index
``IfPattern``, ``LetPattern``
``AltPattern``         ``left | right``
``TypePattern``, ``DataTypePattern``, ``ShapePattern``  a type constraint on
                       the expression's (inferred) type
``AttrPattern``        attribute constraints: an operator's registry columns
                       (``TOpPattern``), a call's attrs fields, a function's
                       attributes
``DominatorPattern``   ``child`` whose every input path leads back, through
                       nodes matching ``path``, to one node matching ``parent``
=====================  ======================================================

Builders (``is_op("nn.conv2d")``, ``wildcard()``, ...) and the methods on
:class:`DFPattern` (``p(q, r)``, ``p | q``, ``p + q``, ``p.has_attr(...)``,
``p.optional(f)``, ``p.dominates(...)``, ``p.match(e)``, ``p.partition(e)``)
are sugar over these records.  Expressions given where a pattern is
expected become ``ExprPattern``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Sequence

from ..dtype import DType
from ..expr import Expr, op
from ..registry import lookup
from ..types import AnyDim, Dim, Type

if TYPE_CHECKING:
    from ..module import IRModule

PatternLike = Any  # DFPattern | Expr


@dataclass(frozen=True, eq=False, slots=True)
class DFPattern:
    """Base of all dataflow patterns."""

    # ------------------------------------------------------------ sugar
    def __call__(self, *args: PatternLike) -> CallPattern:
        """``p(a, b)``: a call of ``p`` with arguments ``a, b``;
        ``p(None)``: a call of ``p`` with any arguments."""
        if len(args) == 1 and args[0] is None:
            return CallPattern(self, None)
        return CallPattern(self, tuple(args))

    def __or__(self, other: PatternLike) -> AltPattern:
        return AltPattern(self, as_pattern(other))

    def __add__(self, other: PatternLike) -> CallPattern:
        return is_op("add")(self, other)

    def __sub__(self, other: PatternLike) -> CallPattern:
        return is_op("subtract")(self, other)

    def __mul__(self, other: PatternLike) -> CallPattern:
        return is_op("multiply")(self, other)

    def __truediv__(self, other: PatternLike) -> CallPattern:
        return is_op("divide")(self, other)

    def has_attr(self, attrs: dict[str, Any]) -> AttrPattern:
        return AttrPattern(self, _attr_items(attrs))

    def has_type(self, ttype: Type) -> TypePattern:
        return has_type(ttype, self)

    def has_dtype(self, dtype: DType | str) -> DataTypePattern:
        return has_dtype(dtype, self)

    def has_shape(self, shape: Sequence[Dim]) -> ShapePattern:
        return has_shape(shape, self)

    def optional(self, option: Callable[[DFPattern], DFPattern]) -> AltPattern:
        """``self`` alone, or ``option(self)`` (``option`` may be a pattern:
        ``p.optional(is_op("nn.relu"))`` is ``p | nn.relu(p)``)."""
        return AltPattern(self, option(self))

    def dominates(self, parent: PatternLike, path: PatternLike | None = None
                  ) -> DominatorPattern:
        """``self`` as the child of a dominator pattern (``path`` defaults
        to a wildcard)."""
        return dominates(parent, wildcard() if path is None else path, self)

    # ------------------------------------------------------------ services
    def match(self, expr: Expr) -> bool:
        from .matcher import match
        return match(self, expr)

    def partition(self, expr: Expr | IRModule, attrs: dict[str, Any] | None = None,
                  check: Callable[[Expr], bool] | None = None,
                  mod: IRModule | None = None) -> Expr | IRModule:
        from .partition import partition
        return partition(self, expr, attrs, check, mod)

    def __repr__(self) -> str:
        from .printer import pattern_str
        return pattern_str(self)


@dataclass(frozen=True, eq=False, slots=True, repr=False)
class WildcardPattern(DFPattern):
    pass


@dataclass(frozen=True, eq=False, slots=True, repr=False)
class ExprPattern(DFPattern):
    expr: Expr

    def __post_init__(self) -> None:
        if not isinstance(self.expr, Expr):
            raise PatternError(f"is_expr needs an expression, got {self.expr!r}")


@dataclass(frozen=True, eq=False, slots=True, repr=False)
class VarPattern(DFPattern):
    #: "" matches any variable
    name: str = ""


@dataclass(frozen=True, eq=False, slots=True, repr=False)
class ConstantPattern(DFPattern):
    pass


@dataclass(frozen=True, eq=False, slots=True, repr=False)
class CallPattern(DFPattern):
    op: DFPattern
    #: None matches any number of arguments
    args: tuple[DFPattern, ...] | None

    def __post_init__(self) -> None:
        object.__setattr__(self, "op", as_pattern(self.op))
        object.__setattr__(self, "args", _pattern_tuple(self.args))


@dataclass(frozen=True, eq=False, slots=True, repr=False)
class FunctionPattern(DFPattern):
    #: None matches any number of parameters
    params: tuple[DFPattern, ...] | None
    body: DFPattern

    def __post_init__(self) -> None:
        object.__setattr__(self, "params", _pattern_tuple(self.params))
        object.__setattr__(self, "body", as_pattern(self.body))


@dataclass(frozen=True, eq=False, slots=True, repr=False)
class TuplePattern(DFPattern):
    #: None matches any number of fields
    fields: tuple[DFPattern, ...] | None

    def __post_init__(self) -> None:
        object.__setattr__(self, "fields", _pattern_tuple(self.fields))


@dataclass(frozen=True, eq=False, slots=True, repr=False)
class TupleGetItemPattern(DFPattern):
    tuple: DFPattern
    #: None matches any index
    index: int | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "tuple", as_pattern(self.tuple))
        _check(self.index is None or (isinstance(self.index, int) and self.index >= 0),
               f"tuple index must be a non-negative int or None, got {self.index!r}")


@dataclass(frozen=True, eq=False, slots=True, repr=False)
class IfPattern(DFPattern):
    cond: DFPattern
    true_branch: DFPattern
    false_branch: DFPattern

    def __post_init__(self) -> None:
        for name in ("cond", "true_branch", "false_branch"):
            object.__setattr__(self, name, as_pattern(getattr(self, name)))


@dataclass(frozen=True, eq=False, slots=True, repr=False)
class LetPattern(DFPattern):
    var: DFPattern
    value: DFPattern
    body: DFPattern

    def __post_init__(self) -> None:
        for name in ("var", "value", "body"):
            object.__setattr__(self, name, as_pattern(getattr(self, name)))


@dataclass(frozen=True, eq=False, slots=True, repr=False)
class AltPattern(DFPattern):
    left: DFPattern
    right: DFPattern

    def __post_init__(self) -> None:
        object.__setattr__(self, "left", as_pattern(self.left))
        object.__setattr__(self, "right", as_pattern(self.right))


@dataclass(frozen=True, eq=False, slots=True, repr=False)
class TypePattern(DFPattern):
    pattern: DFPattern
    type: Type

    def __post_init__(self) -> None:
        object.__setattr__(self, "pattern", as_pattern(self.pattern))
        if not isinstance(self.type, Type):
            raise PatternError(f"has_type needs a type, got {self.type!r}")


@dataclass(frozen=True, eq=False, slots=True, repr=False)
class DataTypePattern(DFPattern):
    pattern: DFPattern
    dtype: DType

    def __post_init__(self) -> None:
        object.__setattr__(self, "pattern", as_pattern(self.pattern))
        dtype = self.dtype
        if isinstance(dtype, str):
            parsed = DType.parse(dtype)
            _check(parsed is not None, f"unknown dtype {dtype!r}")
            object.__setattr__(self, "dtype", parsed)
        else:
            _check(isinstance(dtype, DType), f"has_dtype needs a dtype, got {dtype!r}")


@dataclass(frozen=True, eq=False, slots=True, repr=False)
class ShapePattern(DFPattern):
    pattern: DFPattern
    shape: tuple[Dim, ...]

    def __post_init__(self) -> None:
        object.__setattr__(self, "pattern", as_pattern(self.pattern))
        shape = tuple(self.shape)
        _check(all(isinstance(d, AnyDim) or (isinstance(d, int) and not isinstance(d, bool))
                   for d in shape), f"has_shape needs ints or ANY, got {self.shape!r}")
        object.__setattr__(self, "shape", shape)


@dataclass(frozen=True, eq=False, slots=True, repr=False)
class AttrPattern(DFPattern):
    pattern: DFPattern
    #: sorted (name, raw value) pairs
    attrs: tuple[tuple[str, Any], ...]

    def __post_init__(self) -> None:
        object.__setattr__(self, "pattern", as_pattern(self.pattern))


@dataclass(frozen=True, eq=False, slots=True, repr=False)
class DominatorPattern(DFPattern):
    """``child`` such that every path from ``child``'s inputs back to a
    node matching ``parent`` goes through nodes matching ``path``, all
    paths reach the *same* parent node, and that parent is post-dominated
    by ``child``."""

    parent: DFPattern
    path: DFPattern
    child: DFPattern

    def __post_init__(self) -> None:
        for name in ("parent", "path", "child"):
            object.__setattr__(self, name, as_pattern(getattr(self, name)))


# ====================================================================== helpers

class PatternError(TypeError):
    """A pattern was built from something that is not a pattern."""


def _check(ok: bool, message: str) -> None:
    if not ok:
        raise PatternError(message)


def as_pattern(p: PatternLike) -> DFPattern:
    """``p`` itself if it is a pattern; an expression becomes ``is_expr``."""
    if isinstance(p, DFPattern):
        return p
    if isinstance(p, Expr):
        return ExprPattern(p)
    raise PatternError(f"expected a pattern or an expression, got {type(p).__name__} {p!r}")


def _pattern_tuple(items: Sequence[PatternLike] | None) -> tuple[DFPattern, ...] | None:
    if items is None:
        return None
    if isinstance(items, (DFPattern, Expr, str)):
        raise PatternError(f"expected a list of patterns or None, got {type(items).__name__}")
    return tuple(as_pattern(p) for p in items)


def freeze(value: Any) -> Any:
    """Lists become tuples (recursively), so raw attribute values compare
    with the stored, frozen ones."""
    if isinstance(value, (list, tuple)):
        return tuple(freeze(v) for v in value)
    return value


def _attr_items(attrs: dict[str, Any]) -> tuple[tuple[str, Any], ...]:
    _check(isinstance(attrs, dict), f"has_attr needs a dict, got {attrs!r}")
    _check(all(isinstance(k, str) for k in attrs), "attribute names must be strings")
    return tuple(sorted((k, freeze(v)) for k, v in attrs.items()))


# ====================================================================== builders

def wildcard() -> WildcardPattern:
    return WildcardPattern()


def is_op(name: str) -> ExprPattern:
    """The operator ``name`` (a registered operator); call it with
    argument patterns to match a call: ``is_op("add")(x, y)``."""
    _check(isinstance(name, str) and lookup(name) is not None, f"unknown operator {name!r}")
    return ExprPattern(op(name))


def is_expr(expr: Expr) -> ExprPattern:
    return ExprPattern(expr)


def is_var(name: str = "") -> VarPattern:
    return VarPattern(name)


def is_constant() -> ConstantPattern:
    return ConstantPattern()


def is_tuple(fields: Sequence[PatternLike] | None) -> TuplePattern:
    return TuplePattern(fields)  # type: ignore[arg-type]


def is_tuple_get_item(tuple_value: PatternLike, index: int | None = None) -> TupleGetItemPattern:
    return TupleGetItemPattern(tuple_value, index)  # type: ignore[arg-type]


def is_if(cond: PatternLike, true_branch: PatternLike, false_branch: PatternLike) -> IfPattern:
    return IfPattern(cond, true_branch, false_branch)  # type: ignore[arg-type]


def is_let(var: PatternLike, value: PatternLike, body: PatternLike) -> LetPattern:
    return LetPattern(var, value, body)  # type: ignore[arg-type]


def has_type(ttype: Type, pattern: PatternLike | None = None) -> TypePattern:
    return TypePattern(wildcard() if pattern is None else pattern, ttype)


def has_dtype(dtype: DType | str, pattern: PatternLike | None = None) -> DataTypePattern:
    return DataTypePattern(wildcard() if pattern is None else pattern, dtype)  # type: ignore


def has_shape(shape: Sequence[Dim], pattern: PatternLike | None = None) -> ShapePattern:
    return ShapePattern(wildcard() if pattern is None else pattern, shape)  # type: ignore


def has_attr(attrs: dict[str, Any], pattern: PatternLike | None = None) -> AttrPattern:
    return as_pattern(wildcard() if pattern is None else pattern).has_attr(attrs)


def dominates(parent: PatternLike, path: PatternLike, child: PatternLike) -> DominatorPattern:
    return DominatorPattern(parent, path, child)  # type: ignore[arg-type]
