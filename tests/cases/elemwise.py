"""The elementwise family's cases, derived from the operator registry.

An operator belongs to the family when its record says so: fusion pattern
``ELEMWISE`` or ``BROADCAST``, one or two arguments and no attributes
(``attrs_type`` is the bare :class:`~aot.ir.attrs.Attrs`).  Its cases are
every dtype and every shape of :data:`UNARY_SHAPES` / :data:`BINARY_SHAPES`
that its type relation accepts, all arguments of one dtype.  A newly
registered operator of this kind gets cases in every layer without anyone
listing it; the layers' completeness tests then ask for what only a
person can write (a NumPy oracle in tests/ops).

The full table is cheap to evaluate in NumPy (tests/ops runs all of it);
the layers that compile or lower take a slice: :func:`one_shape_each`
keeps one shape per (operator, dtype), rotating through the shapes so
every operator still meets every shape.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from functools import cache

from aot.ir.attrs import Attrs
from aot.ir.dtype import DType
from aot.ir.registry import OpDef, PatternKind, RelationError, all_ops
from aot.ir.types import TensorType

from .common import Param, program

#: every dtype NumPy has, in DType's order; an operator's cases take those
#: its relation accepts (bfloat16, float8 and int4/uint4 compute through the
#: same printer paths as float16 and int8: tests/e2e/test_narrow_dtypes.py)
DTYPES = [d.np.name if d is not DType.BOOL else "bool" for d in DType
          if d.np.kind != "V" and d is not DType.FLOAT8_E5M2]

#: unary shapes: the ones tests/e2e used per dtype kind (floats (4, 6),
#: integers (3, 5), bool (2, 3)), tests/ops' (3, 4) and (5,), and 0-d
UNARY_SHAPES: list[tuple[int, ...]] = [(4, 6), (3, 5), (2, 3), (3, 4), (5,), ()]

#: broadcast pairs: equal shapes, a vector against a matrix, size-1 axes
#: stretched on both sides, 0-d against a tensor either way
BINARY_SHAPES: list[tuple[tuple[int, ...], tuple[int, ...]]] = [
    ((2, 3), (3,)), ((2, 1, 4), (3, 1)), ((), (5,)), ((4,), ()), ((2, 3), (2, 3)),
    ((), ()), ((3,), (3,)), ((1,), (5, 2)), ((4, 3), (3,)), ((2, 3, 4), (3, 1)),
    ((5,), (5,)),
]

#: the shape per dtype kind that :func:`shape_by_kind` keeps for a unary case
KIND_SHAPE = {"f": (4, 6), "i": (3, 5), "u": (3, 5), "b": (2, 3)}


@dataclass(frozen=True)
class ElemwiseCase:
    op: str
    dtype: str
    shapes: tuple[tuple[int, ...], ...]

    @property
    def name(self) -> str:
        """``"<op>:<dtype>-<shapes>"`` (tests/e2e's completeness test reads
        the operator before the colon)."""
        return f"{self.op}:{self.dtype}-" + "-".join(str(s) for s in self.shapes)

    @property
    def params(self) -> list[Param]:
        names = "ab" if len(self.shapes) == 2 else "x"
        return [(n, s, self.dtype) for n, s in zip(names, self.shapes)]

    @property
    def body(self) -> str:
        return f"{self.op}({', '.join('%' + n for n, _, _ in self.params)})"

    @property
    def text(self) -> str:
        return program(self.params, self.body)


def is_elemwise(op: OpDef) -> bool:
    """The record says: elementwise or broadcast, one or two arguments, no
    attributes."""
    return (op.pattern in (PatternKind.ELEMWISE, PatternKind.BROADCAST)
            and op.arity in (1, 2) and op.attrs_type is Attrs
            and not dataclasses.fields(op.attrs_type))


def elemwise_ops() -> list[OpDef]:
    return [op for op in all_ops() if is_elemwise(op)]


def accepts(op: OpDef, dtype: str, shapes: tuple[tuple[int, ...], ...]) -> bool:
    """The operator's type relation types a call on these arguments."""
    types = [TensorType(s, DType.from_numpy(dtype)) for s in shapes]
    try:
        return op.rel(types, op.attrs_type()) is not None
    except RelationError:
        return False


@cache
def all_cases() -> tuple[ElemwiseCase, ...]:
    """Every (operator, dtype, shapes) the relations accept, in registry,
    dtype and shape order."""
    out = []
    for op in elemwise_ops():
        shape_list = UNARY_SHAPES if op.arity == 1 else BINARY_SHAPES
        for dtype in DTYPES:
            for s in shape_list:
                shapes = (s,) if op.arity == 1 else s
                if accepts(op, dtype, shapes):
                    out.append(ElemwiseCase(op.name, dtype, shapes))
    return tuple(out)


def ops_with_cases() -> set[str]:
    return {c.op for c in all_cases()}


def one_shape_each(cases: tuple[ElemwiseCase, ...]) -> list[ElemwiseCase]:
    """One case per (operator, dtype): the k-th dtype of the i-th operator
    takes its accepted shape number ``i + k`` (mod their count), so the
    shapes rotate over the dtypes and every operator meets each shape."""
    groups: dict[tuple[str, str], list[ElemwiseCase]] = {}
    for c in cases:
        groups.setdefault((c.op, c.dtype), []).append(c)
    op_index = {name: i for i, name in enumerate(dict.fromkeys(c.op for c in cases))}
    out = []
    for (op, dtype), group in groups.items():
        k = op_index[op] + DTYPES.index(dtype)
        out.append(group[k % len(group)])
    return out


def shape_by_kind(cases: tuple[ElemwiseCase, ...]) -> list[ElemwiseCase]:
    """Unary cases on :data:`KIND_SHAPE`'s shape for their dtype's kind,
    binary cases as :func:`one_shape_each` picks them."""
    unary = [c for c in cases if len(c.shapes) == 1
             and c.shapes[0] == KIND_SHAPE[DType.from_numpy(c.dtype).np.kind]]
    binary = one_shape_each(tuple(c for c in cases if len(c.shapes) == 2))
    return unary + binary
