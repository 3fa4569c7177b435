"""Operator family: transform (broadcasting part).

broadcast_to, broadcast_to_like, collapse_sum_like, collapse_sum_to.
Registered when :mod:`transform` is imported.

``broadcast_to`` / ``broadcast_to_like`` require the input to broadcast to
the target (NumPy rules); ``collapse_sum_like`` / ``collapse_sum_to`` are
the adjoint: the target must broadcast to the input, and the input is
summed over the broadcast dimensions (integer sums wrap; floating sums are
computed in float64 and rounded once).  As in Relay, ``collapse_sum_to``
takes the target shape both as a 1-D integer tensor argument and as the
``shape`` attribute the relation reads (without it the result has ``?``
dimensions).

Relay's ``InitOpAttrs`` (a static ``shape`` and a ``dtype``) is defined
here and shared with zeros, ones and full (:mod:`transform_init`).
"""

from __future__ import annotations

from typing import ClassVar, Sequence

from ..attrs import attrs_class
from ..registry import Solved
from ..types import Dim
from .common import (ANY, Attrs, DType, PatternKind, RelationError, TensorType, Type,
                     as_array, defop, np, tensor_arg, tensor_args)
from .shape_util import fmt_shape
from ..dtype import np_kind

FAMILY = "transform"
BC = PatternKind.BROADCAST
REDUCE = PatternKind.COMM_REDUCE


@attrs_class
class InitOpAttrs(Attrs):
    """Relay's InitOpAttrs: a static shape and an element type, shared by
    zeros, ones, full, broadcast_to and collapse_sum_to (each documents
    which fields it reads)."""

    type_key: ClassVar[str] = "InitOpAttrs"
    shape: tuple[int, ...] | None = None
    dtype: DType | None = None

    def __post_init__(self) -> None:
        if self.shape is not None and any(d < 0 for d in self.shape):
            raise ValueError(f"shape {list(self.shape)} has a negative dimension")


def _broadcasts_to(src: Sequence[Dim], dst: Sequence[Dim]) -> bool:
    """True when ``src`` broadcasts to exactly ``dst`` (``?`` matches)."""
    if len(src) > len(dst):
        return False
    for s, d in zip(reversed(src), reversed(dst)):
        if s == 1 or s == d or not isinstance(s, int) or not isinstance(d, int):
            continue
        return False
    return True


def _check_broadcast_to(src: Sequence[Dim], dst: Sequence[Dim]) -> None:
    if not _broadcasts_to(src, dst):
        raise RelationError(f"shape {fmt_shape(src)} does not broadcast to {fmt_shape(dst)}")


def _broadcast_to_rel(args: Sequence[Type], attrs: InitOpAttrs) -> Type | None:
    t = tensor_arg(args, 0)
    if t is None:
        return None
    if attrs.shape is None:
        raise RelationError("needs a `shape` attribute")
    _check_broadcast_to(t.shape, attrs.shape)
    return TensorType(attrs.shape, t.dtype)


def _broadcast_to(args: Sequence[np.ndarray], attrs: InitOpAttrs, out: Type) -> np.ndarray:
    (x,) = args
    assert attrs.shape is not None
    return as_array(np.broadcast_to(x, attrs.shape).copy(), x.dtype)


defop("broadcast_to", arity=1, rel=_broadcast_to_rel, pattern=BC, compute=_broadcast_to,
      doc="broadcast to the static shape attribute", attrs=InitOpAttrs, family=FAMILY)


def _broadcast_to_like_rel(args: Sequence[Type], attrs: Attrs) -> Type | None:
    ts = tensor_args(args)
    if ts is None:
        return None
    data, like = ts
    _check_broadcast_to(data.shape, like.shape)
    return TensorType(like.shape, data.dtype)


def _broadcast_to_like(args: Sequence[np.ndarray], attrs: Attrs, out: Type) -> np.ndarray:
    x, like = args
    return as_array(np.broadcast_to(x, like.shape).copy(), x.dtype)


defop("broadcast_to_like", arity=2, rel=_broadcast_to_like_rel, pattern=BC,
      compute=_broadcast_to_like, doc="broadcast the first tensor to the second tensor's shape",
      family=FAMILY)


def collapse_sum(x: np.ndarray, shape: Sequence[int]) -> np.ndarray:
    """Sum ``x`` over the dimensions along which ``shape`` was broadcast
    to ``x.shape``.  Integers wrap; floats are summed in float64."""
    lead = x.ndim - len(shape)
    axes = tuple(range(lead)) + tuple(lead + i for i, d in enumerate(shape)
                                      if d == 1 and x.shape[lead + i] != 1)
    return as_array(wide_sum(x, axes, keepdims=True).reshape(tuple(shape)), x.dtype)


def wide_sum(x: np.ndarray, axes: tuple[int, ...], keepdims: bool) -> np.ndarray:
    """Sum over ``axes`` giving ``x.dtype``: integers wrap at the dtype's
    width (summing modulo 2**64 and truncating gives exactly that), floats
    are accumulated in float64 and rounded once."""
    if np_kind(x.dtype) == "f":
        acc = np.sum(x.astype(np.float64), axis=axes, keepdims=keepdims)
    elif np_kind(x.dtype) == "u":
        acc = np.sum(x, axis=axes, keepdims=keepdims, dtype=np.uint64)
    else:
        acc = np.sum(x, axis=axes, keepdims=keepdims, dtype=np.int64)
    with np.errstate(over="ignore"):
        return np.asarray(acc).astype(x.dtype)


def _collapse_check(data: TensorType, target: TensorType) -> None:
    if data.dtype != target.dtype:
        raise RelationError(f"dtype mismatch: the data is {data.dtype} but the target is "
                            f"{target.dtype}")
    if data.dtype.is_bool:
        raise RelationError("cannot sum a bool tensor")
    _check_broadcast_to(target.shape, data.shape)


def _collapse_sum_like_rel(args: Sequence[Type], attrs: Attrs) -> Type | None:
    ts = tensor_args(args)
    if ts is None:
        return None
    data, like = ts
    _collapse_check(data, like)
    return like


def _collapse_sum_like(args: Sequence[np.ndarray], attrs: Attrs, out: Type) -> np.ndarray:
    x, like = args
    return collapse_sum(x, like.shape)


defop("collapse_sum_like", arity=2, rel=_collapse_sum_like_rel, pattern=REDUCE,
      compute=_collapse_sum_like,
      doc="sum the first tensor down to the second tensor's (broadcastable) shape", family=FAMILY)


def _collapse_sum_to_rel(args: Sequence[Type], attrs: InitOpAttrs) -> Type | None:
    data = tensor_arg(args, 0)
    if data is None:
        return None
    shape_t = tensor_arg(args, 1, "shape argument")
    if attrs.shape is not None:
        out_shape: tuple[Dim, ...] = attrs.shape
    elif shape_t is not None and shape_t.ndim == 1 and isinstance(shape_t.shape[0], int):
        out_shape = (ANY,) * shape_t.shape[0]
    else:
        return None
    expected = TensorType((len(out_shape),), DType.INT64)
    if shape_t is not None:
        if shape_t.ndim != 1 or not shape_t.dtype.is_int:
            raise RelationError(f"the shape argument must be a 1-D integer tensor, got "
                                f"{shape_t}")
        if isinstance(shape_t.shape[0], int) and shape_t.shape[0] != len(out_shape):
            raise RelationError(f"the shape argument has {shape_t.shape[0]} entries but the "
                                f"shape attribute {list(out_shape)} has {len(out_shape)}")
    out = TensorType(out_shape, data.dtype)
    _collapse_check(data, out)
    if shape_t is None:
        return Solved(out, (None, expected))
    return out


def _collapse_sum_to(args: Sequence[np.ndarray], attrs: InitOpAttrs, out: Type) -> np.ndarray:
    x, shape = args
    target = tuple(int(d) for d in np.asarray(shape).reshape(-1))
    if attrs.shape is not None and target != attrs.shape:
        raise ValueError(f"collapse_sum_to: the shape argument {list(target)} differs from the "
                         f"shape attribute {list(attrs.shape)}")
    return collapse_sum(x, target)


defop("collapse_sum_to", arity=2, rel=_collapse_sum_to_rel, pattern=REDUCE,
      compute=_collapse_sum_to, doc="sum the first tensor down to a shape it was broadcast from",
      attrs=InitOpAttrs, family=FAMILY)


__all__ = ["InitOpAttrs", "collapse_sum", "wide_sum"]
