"""The operator registry: one record per operator.

An :class:`OpDef` holds every column the compiler needs about an operator:

* ``name`` and ``arity`` (number of arguments of a call),
* ``attrs_type``: the frozen :class:`~aot.ir.attrs.Attrs` subclass,
* ``rel``: the type relation.  ``rel(arg_types, attrs)`` returns the
  result type, a :class:`Solved` (result type plus refined argument types,
  used to give a type to an argument that is still a hole, such as a
  weight whose shape follows from ``channels`` and ``kernel_size``), or
  ``None`` when an argument type is not known yet (the solver retries).
  It raises :class:`RelationError` to reject a call,
* ``pattern``: the fusion pattern kind,
* ``compute``: the NumPy reference, ``compute(args, attrs, out_type)`` ->
  ``ndarray`` or tuple of them.  The interpreter and constant folding call
  it; nothing else re-implements an operator,
* ``doc``: one line for ``aot ops``,
* ``api_defaults``: the attributes the Python builder's wrapper builds when
  no keyword is given, an instance of ``attrs_type``; ``None`` means the
  attrs class's defaults.  The attrs class's defaults are what the text
  parser fills in for an omitted attribute (Relay's C++ attrs defaults);
  Relay's Python API sometimes defaults differently (``image.resize2d``'s
  ``rounding_method`` is ``""`` there, ``"round"`` in C++), and the
  builder mirrors the Python API,
* ``grad``: the gradient rule (optional), as Relay's ``FPrimalGradient``:
  ``grad(call, out_grad)`` -> one expression per argument, the adjoint
  of that argument (already reduced to its shape where the operator
  broadcasts), or ``None`` for an argument that gets no gradient
  (an integer index, a condition).  ``call`` is the typed call (its
  arguments carry ``checked_type``); an expression may use ``call``
  itself for the call's result (AD binds it once).  The rules live in
  :mod:`aot.ir.ops.gradients`; an operator without one is not
  differentiable (that module says why).

Operator families register themselves from ``aot/ir/ops/<family>.py`` into
:data:`OPS` (a :class:`~aot.registry.Registry`), which imports them on first use.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Optional, Sequence, Union

import numpy as np

from ..registry import Registry
from .attrs import Attrs
from .types import Type

if TYPE_CHECKING:
    from .expr import Call, Expr


class PatternKind(enum.IntEnum):
    """Fusion pattern kinds, ordered as Relay orders them: a group's kind is
    the max of its members'."""

    ELEMWISE = 0
    BROADCAST = 1
    INJECTIVE = 2
    COMM_REDUCE = 3
    OUT_ELEMWISE_FUSABLE = 4
    TUPLE = 7
    OPAQUE = 8


class RelationError(Exception):
    """A type relation rejects its arguments.  The message names the
    argument and the shapes or dtypes involved; type inference prefixes the
    operator name and attaches the call's span."""


@dataclass(frozen=True, slots=True)
class Solved:
    out: Type
    #: refined argument types, one per argument; None leaves it alone.
    args: tuple[Type | None, ...] = ()


RelResult = Union[Type, Solved, None]
# The attrs parameter is Any: each operator's relation and compute take its
# own Attrs subclass (the record's attrs_type), which a Callable over the
# Attrs base would refuse (parameters are contravariant).
Relation = Callable[[Sequence[Type], Any], RelResult]
Compute = Callable[[Sequence[np.ndarray], Any, Type], object]
#: ``grad(call, out_grad)`` -> the adjoint of each argument (None: none)
GradRule = Callable[["Call", "Expr"], Sequence[Optional["Expr"]]]


@dataclass(frozen=True, slots=True, eq=False)
class OpDef:
    name: str
    arity: int
    attrs_type: type[Attrs]
    rel: Relation
    pattern: PatternKind
    compute: Compute
    doc: str
    #: family file the op lives in (for ``aot ops``)
    family: str = ""
    #: a contraction: each element of its operands is read many times (a
    #: sum of products over a window or an axis: conv, dense, matmul);
    #: FuseOps fuses only data movement into its operands
    contraction: bool = False
    #: the builder's defaults where Relay's Python API differs from the
    #: C++ attrs defaults (see the module docstring)
    api_defaults: Attrs | None = None
    #: the gradient rule (see the module docstring); None: not differentiable
    grad: GradRule | None = None

    def __post_init__(self) -> None:
        assert self.api_defaults is None or type(self.api_defaults) is self.attrs_type, \
            f"{self.name}: api_defaults must be a {self.attrs_type.__name__}"

    def builder_defaults(self) -> Attrs:
        """The attributes of a builder call without keywords."""
        return self.api_defaults if self.api_defaults is not None else self.attrs_type()

    def __repr__(self) -> str:
        return f"OpDef({self.name})"


def _load_families() -> None:
    from . import ops  # noqa: F401  (registers every family)


OPS: Registry[str, OpDef] = Registry("operator", _load_families)


def register(op: OpDef) -> OpDef:
    return OPS.register(op.name, op)


def lookup(name: str) -> OpDef | None:
    return OPS.get(name)


def all_ops() -> list[OpDef]:
    return OPS.values()
