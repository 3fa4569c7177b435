"""Shared pieces for operator families: registration and the relation
helpers most operators are built from.

A relation receives the argument types as type inference currently knows
them.  An argument may still be a hole (``IncompleteType``): helpers
return ``None`` then ("not yet"), and the solver asks again later.
"""

from __future__ import annotations

from typing import Iterable, Sequence

import ml_dtypes
import numpy as np

from ..attrs import NO_ATTRS, Attrs
from ..dtype import DType
from ..registry import (Compute, GradRule, OpDef, PatternKind, Relation, RelationError,
                        RelResult, register)
from ..types import ANY, Dim, TensorType, TupleType, Type

__all__ = ["defop", "tensor_arg", "tensor_args", "broadcast_shapes", "broadcast_rel",
           "compare_rel", "identity_rel", "same_dtype", "as_array", "float_to_int", "ordinal",
           "fmt_shape", "out_tensor_type", "RelationError", "PatternKind", "NO_ATTRS", "Attrs",
           "DType", "ANY", "TensorType", "TupleType", "Type", "np"]

_ORDINALS = ("first", "second", "third", "fourth", "fifth", "sixth", "seventh", "eighth")


def ordinal(i: int) -> str:
    return _ORDINALS[i] if i < len(_ORDINALS) else f"#{i + 1}"


def defop(name: str, *, arity: int, rel: Relation, pattern: PatternKind, compute: Compute,
          doc: str, attrs: type[Attrs] = Attrs, family: str = "",
          contraction: bool = False, api_defaults: Attrs | None = None,
          grad: GradRule | None = None) -> OpDef:
    """Register the operator ``name``; every column is named at the call
    (see :class:`~aot.ir.registry.OpDef` for their meaning)::

        defop("nn.relu", arity=1, rel=identity_rel, pattern=EW, compute=_relu,
              doc="max(x, 0), element-wise", family=FAMILY)

    ``grad`` defaults to the operator's rule in :data:`aot.ir.ops.gradients.RULES`
    (kept together there, as Relay keeps them in ``_tensor_grad.py``).
    """
    if grad is None:
        from .gradients import RULES
        grad = RULES.get(name)
    return register(OpDef(name=name, arity=arity, attrs_type=attrs, rel=rel,
                          pattern=pattern, compute=compute, doc=doc, family=family,
                          contraction=contraction, api_defaults=api_defaults, grad=grad))


def tensor_arg(args: Sequence[Type], i: int, what: str | None = None) -> TensorType | None:
    """``args[i]`` as a tensor type; None while it is unknown; an error when
    it is known to be something else."""
    t = args[i]
    if isinstance(t, TensorType):
        return t
    if isinstance(t, (TupleType,)) or not _is_hole(t):
        raise RelationError(f"expects a tensor as its {what or ordinal(i) + ' argument'}, "
                            f"got {t}")
    return None


def tensor_args(args: Sequence[Type]) -> list[TensorType] | None:
    out = []
    for i in range(len(args)):
        t = tensor_arg(args, i)
        if t is None:
            return None
        out.append(t)
    return out


def _is_hole(t: Type) -> bool:
    from ..types import IncompleteType, TypeVar
    return isinstance(t, (IncompleteType, TypeVar))


def broadcast_shapes(a: tuple[Dim, ...], b: tuple[Dim, ...]) -> tuple[Dim, ...]:
    """NumPy broadcasting; ``?`` against 1 gives ``?``, against n gives n."""
    out: list[Dim] = []
    for i in range(max(len(a), len(b))):
        x = a[len(a) - 1 - i] if i < len(a) else 1
        y = b[len(b) - 1 - i] if i < len(b) else 1
        if x == y:
            out.append(x)
        elif x == 1:
            out.append(y)
        elif y == 1:
            out.append(x)
        elif x is ANY:
            out.append(y)
        elif y is ANY:
            out.append(x)
        else:
            raise RelationError(f"shapes {fmt_shape(a)} and {fmt_shape(b)} do not broadcast "
                                f"(dimension {x} vs {y})")
    return tuple(reversed(out))


def fmt_shape(shape: Iterable[Dim]) -> str:
    """``(2, 3)``, ``(4,)``, ``()``, with ``?`` for unknown dimensions."""
    dims = [str(d) for d in shape]
    if len(dims) == 1:
        return f"({dims[0]},)"
    return "(" + ", ".join(dims) + ")"


def same_dtype(ts: Sequence[TensorType]) -> DType:
    first = ts[0].dtype
    for i, t in enumerate(ts[1:], 1):
        if t.dtype != first:
            raise RelationError(f"dtype mismatch: the first argument is {first} but the "
                                f"{ordinal(i)} is {t.dtype}")
    return first


def broadcast_rel(args: Sequence[Type], attrs: Attrs) -> RelResult:
    ts = tensor_args(args)
    if ts is None:
        return None
    dtype = same_dtype(ts)
    shape = ts[0].shape
    for t in ts[1:]:
        shape = broadcast_shapes(shape, t.shape)
    return TensorType(shape, dtype)


def compare_rel(args: Sequence[Type], attrs: Attrs) -> RelResult:
    out = broadcast_rel(args, attrs)
    if out is None:
        return None
    assert isinstance(out, TensorType)
    return TensorType(out.shape, DType.BOOL)


def identity_rel(args: Sequence[Type], attrs: Attrs) -> RelResult:
    return tensor_arg(args, 0)


def out_tensor_type(out: Type) -> TensorType:
    """The result type handed to a compute that produces one tensor (an
    internal invariant: the relation made it a tensor type)."""
    assert isinstance(out, TensorType), out
    return out


def float_to_int(x: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """The language's float -> integer conversion: truncate toward zero,
    saturate at ``dtype``'s limits, NaN -> 0 (bool: nonzero -> True)."""
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return np.asarray(np.asarray(x) != 0)
    info = ml_dtypes.iinfo(dtype)
    t = np.nan_to_num(np.trunc(np.asarray(x, dtype=np.float64)), nan=0.0)
    # float(info.max) rounds up to 2**63 / 2**64 for the 64-bit types, so
    # compare with >= and saturate explicitly instead of clipping.
    hi = t >= float(info.max)
    lo = t <= float(info.min)
    out = np.asarray(np.where(hi | lo, 0.0, t).astype(dtype))
    out[hi] = info.max
    out[lo] = info.min
    return out


def as_array(value: object, dtype: DType | np.dtype) -> np.ndarray:
    """An ndarray of exactly ``dtype`` (NumPy returns scalars for 0-d ops)."""
    np_dtype = dtype.np if isinstance(dtype, DType) else dtype
    return np.asarray(value).astype(np_dtype, copy=False)
