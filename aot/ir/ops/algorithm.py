"""Operator family: algorithm (sorting).

argsort, sort, topk.  Pattern: opaque, as Relay (they are library-style
kernels that do not fuse).

Order, exact and shared with the C backend:

* Sorting is **stable in both directions**: elements that compare equal
  keep their original relative order (lower index first), whether
  ``is_ascend`` is true or false.  (A descending sort is therefore not the
  reverse of an ascending one when there are ties.)
* NaN compares greater than every number (NumPy's order): it goes last in
  an ascending sort and first in a descending one; NaNs keep their
  original order among themselves.  -0.0 and +0.0 compare equal.
* ``argsort`` and ``topk`` return indices of ``dtype`` (int32 by default,
  as Relay; any integer type or a float type may be requested, as topi
  allows).
* ``topk`` takes the first ``k`` elements of that order along ``axis``
  (``is_ascend=False``, the default, gives the largest).  ``k`` < 1 (or
  None) means the whole axis, as Relay.  ``ret_type`` selects a tuple
  ``(values, indices)`` (``both``), or one of them.
"""

from __future__ import annotations

import enum
from typing import ClassVar, Sequence

from ..attrs import attrs_class
from .common import (Attrs, DType, PatternKind, RelationError, TensorType, TupleType, Type,
                     as_array, defop, np, tensor_arg)
from .shape_util import normalize_axis, same_type_axis_rel

FAMILY = "algorithm"
OPAQUE = PatternKind.OPAQUE


def stable_argsort(x: np.ndarray, axis: int, ascending: bool) -> np.ndarray:
    """Stable argsort along ``axis`` in either direction (see module doc)."""
    if ascending:
        return np.argsort(x, axis=axis, kind="stable")
    # Sort the reversed array ascending (stable: equal elements in reversed
    # original order), then reverse the result: descending order with equal
    # elements back in original order.
    n = x.shape[axis]
    rev = np.flip(x, axis=axis)
    order = np.argsort(rev, axis=axis, kind="stable")
    return np.flip(n - 1 - order, axis=axis)


def _check_index_dtype(dtype: DType) -> None:
    if dtype.is_bool:
        raise ValueError("the index dtype cannot be bool")


@attrs_class
class ArgsortAttrs(Attrs):
    type_key: ClassVar[str] = "ArgsortAttrs"
    axis: int = -1
    is_ascend: bool = True
    dtype: DType = DType.INT32

    def __post_init__(self) -> None:
        _check_index_dtype(self.dtype)


def _argsort_rel(args: Sequence[Type], attrs: ArgsortAttrs) -> Type | None:
    t = tensor_arg(args, 0)
    if t is None:
        return None
    normalize_axis(attrs.axis, t.ndim)
    return TensorType(t.shape, attrs.dtype)


def _argsort(args: Sequence[np.ndarray], attrs: ArgsortAttrs, out: Type) -> np.ndarray:
    (x,) = args
    order = stable_argsort(x, normalize_axis(attrs.axis, x.ndim), attrs.is_ascend)
    return as_array(order, attrs.dtype)


defop("argsort", arity=1, rel=_argsort_rel, pattern=OPAQUE, compute=_argsort,
      doc="indices that sort along axis (stable; NaN greatest)", attrs=ArgsortAttrs, family=FAMILY)


@attrs_class
class SortAttrs(Attrs):
    type_key: ClassVar[str] = "SortAttrs"
    axis: int = -1
    is_ascend: bool = True


def _sort(args: Sequence[np.ndarray], attrs: SortAttrs, out: Type) -> np.ndarray:
    (x,) = args
    axis = normalize_axis(attrs.axis, x.ndim)
    order = stable_argsort(x, axis, attrs.is_ascend)
    return as_array(np.take_along_axis(x, order, axis=axis), x.dtype)


defop("sort", arity=1, rel=same_type_axis_rel, pattern=OPAQUE, compute=_sort,
      doc="sort along axis (stable; NaN greatest)", attrs=SortAttrs, family=FAMILY)


class TopKRetType(enum.Enum):
    BOTH = "both"
    VALUES = "values"
    INDICES = "indices"


@attrs_class
class TopKAttrs(Attrs):
    type_key: ClassVar[str] = "TopKAttrs"
    k: int | None = 1
    axis: int = -1
    ret_type: TopKRetType = TopKRetType.BOTH
    is_ascend: bool = False
    dtype: DType = DType.INT32

    def __post_init__(self) -> None:
        _check_index_dtype(self.dtype)


def _topk_rel(args: Sequence[Type], attrs: TopKAttrs) -> Type | None:
    t = tensor_arg(args, 0)
    if t is None:
        return None
    axis = normalize_axis(attrs.axis, t.ndim)
    shape = list(t.shape)
    if attrs.k is not None and attrs.k >= 1:
        extent = t.shape[axis]
        if isinstance(extent, int) and attrs.k > extent:
            raise RelationError(f"k={attrs.k} exceeds the extent {extent} of axis {axis} "
                                f"in {t}")
        shape[axis] = attrs.k
    values = TensorType(tuple(shape), t.dtype)
    indices = TensorType(tuple(shape), attrs.dtype)
    if attrs.ret_type is TopKRetType.VALUES:
        return values
    if attrs.ret_type is TopKRetType.INDICES:
        return indices
    return TupleType((values, indices))


def _topk(args: Sequence[np.ndarray], attrs: TopKAttrs, out: Type) -> object:
    (x,) = args
    axis = normalize_axis(attrs.axis, x.ndim)
    order = stable_argsort(x, axis, attrs.is_ascend)
    if attrs.k is not None and attrs.k >= 1:
        order = np.take(order, np.arange(attrs.k), axis=axis)
    values = as_array(np.take_along_axis(x, order, axis=axis), x.dtype)
    indices = as_array(order, attrs.dtype)
    if attrs.ret_type is TopKRetType.VALUES:
        return values
    if attrs.ret_type is TopKRetType.INDICES:
        return indices
    return (values, indices)


defop("topk", arity=1, rel=_topk_rel, pattern=OPAQUE, compute=_topk,
      doc="the k first elements (and/or their indices) of a stable sort along axis",
      attrs=TopKAttrs, family=FAMILY)

__all__ = ["ArgsortAttrs", "SortAttrs", "TopKAttrs", "TopKRetType", "stable_argsort"]
