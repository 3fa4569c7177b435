"""Operator family: transform (index-based part).

strided_slice, take, gather, one_hot, where.  Registered when
:mod:`transform` is imported.

Semantic choices (Relay's unless stated):

* ``strided_slice``: without ``axes``, ``begin``/``end``/``strides`` may
  be shorter than the rank; missing strides are 1 and missing begin/end
  select the whole axis.  With ``axes``, the three lists must have one
  entry per listed axis.  Indices are canonicalised per axis of extent
  ``n`` as Relay's ``CanonicalizeIndex``: a negative index gets ``n``
  added, then it is clamped to ``[0, n]`` for a positive stride and to
  ``[-1, n - 1]`` for a negative one (-1 meaning "before the first
  element").  ``slice_mode="size"`` reads ``end`` as a size counted from
  the canonical begin (a negative size means "to the end") and ignores
  ``strides`` (all 1).  A stride of 0 is rejected.  An axis of extent
  ``?`` gives ``?``.  Three strict extensions of Relay, each where Relay
  rejects or misbehaves: a slice whose ``end`` lies before ``begin`` (in
  stride direction) is empty, as in NumPy (Relay rejects it); in size mode
  Relay adds the size to the *raw* begin, which differs only when a
  negative begin plus the size reaches 0 or beyond (Relay then rejects the
  slice); and an axis with a negative stride but no ``end`` runs through
  element 0 (Relay pads the missing end with 0, which drops element 0).
* ``take`` (NumPy's ``take``, with Relay's ``batch_dims``): out-of-range
  indices are handled by ``mode``: ``clip`` clamps to ``[0, n - 1]`` (so a
  negative index selects element 0, as in Relay, not the Python
  convention), ``wrap`` reduces modulo ``n`` (so -1 is the last element).
  Relay's ``fast`` mode does no checking at all (undefined behaviour out
  of range); here it is defined to behave exactly as ``clip``, which is
  always memory-safe.  ``axis=None`` indexes the flattened tensor.
* ``gather`` (ONNX GatherElements / torch.gather): ``indices`` has the
  rank of ``data`` and equal extents off ``axis``; out-of-range indices
  are clamped to ``[0, n - 1]`` like take's ``clip`` (Relay leaves them
  undefined).
* ``one_hot``: indices outside ``[0, depth)`` (negative ones included)
  give a row of ``off_value``.  ``on_value``/``off_value`` are scalar
  arguments of any dtype, converted to ``dtype`` by cast's rules.
* ``where``: any nonzero condition element selects ``x``; the three
  arguments broadcast together (NumPy rules); ``x`` and ``y`` must share a
  dtype.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from ..attrs import attrs_class
from typing import ClassVar, Sequence

from ..registry import Solved
from ..types import IncompleteType, TypeVar
from .common import (ANY, Attrs, DType, PatternKind, RelationError, TensorType, Type,
                     as_array, broadcast_shapes, defop, np, tensor_arg, tensor_args)
from .shape_util import fmt_shape, normalize_axes, normalize_axis, require_int_dtype, \
    require_scalar
from .transform_init import cast_array

FAMILY = "transform"
INJ = PatternKind.INJECTIVE


# ============================================================ strided_slice

class SliceMode(enum.Enum):
    END = "end"
    SIZE = "size"


@attrs_class
class StridedSliceAttrs(Attrs):
    type_key: ClassVar[str] = "StridedSliceAttrs"
    begin: tuple[int, ...] = ()
    end: tuple[int, ...] = ()
    strides: tuple[int, ...] = (1,)
    axes: tuple[int, ...] | None = None
    slice_mode: SliceMode = SliceMode.END

    def __post_init__(self) -> None:
        if self.slice_mode is SliceMode.END and 0 in self.strides:
            raise ValueError(f"strides {list(self.strides)} contain 0")


@dataclass(frozen=True, slots=True)
class _AxisSlice:
    """One sliced axis as written (not yet canonicalised against its
    extent).  ``None`` bounds select the whole axis in stride direction;
    ``size`` is set in size mode (``None`` there means "to the end")."""

    axis: int
    begin: int | None
    end: int | None
    stride: int
    size: int | None = None


def _canonical(index: int, extent: int, stride: int) -> int:
    lo, hi = (-1, extent - 1) if stride < 0 else (0, extent)
    if index < 0:
        index += extent
    return min(max(index, lo), hi)


def slice_spec(ndim: int, attrs: StridedSliceAttrs) -> list[_AxisSlice]:
    size_mode = attrs.slice_mode is SliceMode.SIZE
    if attrs.axes is not None:
        n = len(attrs.axes)
        if not (len(attrs.begin) == n and len(attrs.end) == n
                and (size_mode or len(attrs.strides) == n)):
            raise RelationError(f"with axes={list(attrs.axes)}, begin, end and strides need "
                                f"{n} entries each; got begin={list(attrs.begin)}, "
                                f"end={list(attrs.end)}, strides={list(attrs.strides)}")
        axes = normalize_axes(attrs.axes, ndim, "axes")
    else:
        for name in ("begin", "end") + (() if size_mode else ("strides",)):
            values = getattr(attrs, name)
            if len(values) > ndim:
                raise RelationError(f"{name}={list(values)} has {len(values)} entries but the "
                                    f"tensor has rank {ndim}")
        axes = tuple(range(ndim))
    out = []
    for i, ax in enumerate(axes):
        begin = attrs.begin[i] if i < len(attrs.begin) else None
        end = attrs.end[i] if i < len(attrs.end) else None
        if size_mode:
            size = end if end is not None and end >= 0 else None
            out.append(_AxisSlice(ax, begin, None, 1, size))
        else:
            stride = attrs.strides[i] if i < len(attrs.strides) else 1
            out.append(_AxisSlice(ax, begin, end, stride))
    return out


def resolve_slice(s: _AxisSlice, extent: int) -> tuple[int, int, int]:
    """Canonical (begin, end, length) of ``s`` on an axis of ``extent``."""
    if s.stride > 0:
        b = 0 if s.begin is None else _canonical(s.begin, extent, s.stride)
        if s.size is not None:
            e = min(b + s.size, extent)
        else:
            e = extent if s.end is None else _canonical(s.end, extent, s.stride)
        length = max(0, -(-(e - b) // s.stride))
    else:
        b = extent - 1 if s.begin is None else _canonical(s.begin, extent, s.stride)
        e = -1 if s.end is None else _canonical(s.end, extent, s.stride)
        length = max(0, -(-(b - e) // -s.stride))
    return b, e, length


def _strided_slice_rel(args: Sequence[Type], attrs: StridedSliceAttrs) -> Type | None:
    t = tensor_arg(args, 0)
    if t is None:
        return None
    shape = list(t.shape)
    for s in slice_spec(t.ndim, attrs):
        extent = t.shape[s.axis]
        shape[s.axis] = resolve_slice(s, extent)[2] if isinstance(extent, int) else ANY
    return TensorType(tuple(shape), t.dtype)


def _strided_slice(args: Sequence[np.ndarray], attrs: StridedSliceAttrs,
                   out: Type) -> np.ndarray:
    (x,) = args
    index: list[slice] = [slice(None)] * x.ndim
    for s in slice_spec(x.ndim, attrs):
        b, e, length = resolve_slice(s, x.shape[s.axis])
        if length == 0:
            index[s.axis] = slice(0, 0)
        elif s.stride > 0:
            index[s.axis] = slice(b, e, s.stride)
        else:  # e == -1 means "through element 0", which Python spells None
            index[s.axis] = slice(b, e if e >= 0 else None, s.stride)
    return as_array(x[tuple(index)].copy(), x.dtype)


defop("strided_slice", arity=1, rel=_strided_slice_rel, pattern=INJ, compute=_strided_slice,
      doc="slice with begin/end/strides per axis (negative indices count from the end)",
      attrs=StridedSliceAttrs, family=FAMILY)


# ===================================================================== take

class TakeMode(enum.Enum):
    CLIP = "clip"
    WRAP = "wrap"
    FAST = "fast"


@attrs_class
class TakeAttrs(Attrs):
    type_key: ClassVar[str] = "TakeAttrs"
    batch_dims: int = 0
    axis: int | None = None
    mode: TakeMode = TakeMode.CLIP


def fix_indices(idx: np.ndarray, extent: int, mode: TakeMode) -> np.ndarray:
    """Indices made valid for an axis of ``extent`` by ``mode`` (fast = clip)."""
    idx = idx.astype(np.int64)
    if extent == 0:
        if idx.size:
            raise ValueError("take/gather: indexing into an axis of extent 0")
        return idx
    if mode is TakeMode.WRAP:
        return np.mod(idx, extent)
    return np.clip(idx, 0, extent - 1)


def _take_rel(args: Sequence[Type], attrs: TakeAttrs) -> Type | None:
    ts = tensor_args(args)
    if ts is None:
        return None
    data, indices = ts
    require_int_dtype(indices, "the indices")
    if attrs.axis is None:
        return TensorType(indices.shape, data.dtype)
    axis = normalize_axis(attrs.axis, data.ndim)
    b = attrs.batch_dims + indices.ndim if attrs.batch_dims < 0 else attrs.batch_dims
    if not 0 <= b <= indices.ndim:
        raise RelationError(f"batch_dims={attrs.batch_dims} is out of range for indices of "
                            f"rank {indices.ndim}")
    if b > axis:
        raise RelationError(f"batch_dims={attrs.batch_dims} must not exceed axis={axis}")
    for k in range(b):
        d, i = data.shape[k], indices.shape[k]
        if isinstance(d, int) and isinstance(i, int) and d != i:
            raise RelationError(f"batch dimension {k} differs: data {fmt_shape(data.shape)} "
                                f"vs indices {fmt_shape(indices.shape)}")
    shape = tuple(data.shape[:axis]) + tuple(indices.shape[b:]) + tuple(data.shape[axis + 1:])
    return TensorType(shape, data.dtype)


def _take(args: Sequence[np.ndarray], attrs: TakeAttrs, out: Type) -> np.ndarray:
    data, indices = args
    if attrs.axis is None:
        flat = data.reshape(-1)
        return as_array(flat[fix_indices(indices, flat.size, attrs.mode)], data.dtype)
    axis = normalize_axis(attrs.axis, data.ndim)
    idx = fix_indices(indices, data.shape[axis], attrs.mode)
    b = attrs.batch_dims + indices.ndim if attrs.batch_dims < 0 else attrs.batch_dims
    if b == 0:
        return as_array(np.take(data, idx, axis=axis), data.dtype)
    result = np.empty(data.shape[:axis] + idx.shape[b:] + data.shape[axis + 1:], data.dtype)
    for pos in np.ndindex(*data.shape[:b]):
        result[pos] = np.take(data[pos], idx[pos], axis=axis - b)
    return result


defop("take", arity=2, rel=_take_rel, pattern=INJ, compute=_take,
      doc="select entries along axis by an index tensor (mode clip|wrap|fast=clip)",
      attrs=TakeAttrs, family=FAMILY)


# =================================================================== gather

@attrs_class
class GatherAttrs(Attrs):
    type_key: ClassVar[str] = "GatherAttrs"
    axis: int = 0


def _gather_rel(args: Sequence[Type], attrs: GatherAttrs) -> Type | None:
    ts = tensor_args(args)
    if ts is None:
        return None
    data, indices = ts
    require_int_dtype(indices, "the indices")
    if data.ndim != indices.ndim:
        raise RelationError(f"indices must have the rank of the data: data "
                            f"{fmt_shape(data.shape)} vs indices {fmt_shape(indices.shape)}")
    axis = normalize_axis(attrs.axis, data.ndim)
    for k, (d, i) in enumerate(zip(data.shape, indices.shape)):
        if k != axis and isinstance(d, int) and isinstance(i, int) and d != i:
            raise RelationError(f"dimension {k} differs: data {fmt_shape(data.shape)} vs "
                                f"indices {fmt_shape(indices.shape)} (only axis {axis} may)")
    return TensorType(indices.shape, data.dtype)


def _gather(args: Sequence[np.ndarray], attrs: GatherAttrs, out: Type) -> np.ndarray:
    data, indices = args
    axis = normalize_axis(attrs.axis, data.ndim)
    idx = fix_indices(indices, data.shape[axis], TakeMode.CLIP)
    return as_array(np.take_along_axis(data, idx, axis=axis), data.dtype)


defop("gather", arity=2, rel=_gather_rel, pattern=INJ, compute=_gather,
      doc="out[..i..] = data[..indices[..i..]..] along axis (indices clamped)", attrs=GatherAttrs,
      family=FAMILY)


# ================================================================== one_hot

@attrs_class
class OneHotAttrs(Attrs):
    type_key: ClassVar[str] = "OneHotAttrs"
    depth: int = 1
    axis: int = -1
    dtype: DType = DType.FLOAT32

    def __post_init__(self) -> None:
        if self.depth < 1:
            raise ValueError(f"one_hot depth must be >= 1, got {self.depth}")


def one_hot_axis(ndim_indices: int, axis: int) -> int:
    n = ndim_indices + 1
    if not -n <= axis < n:
        raise RelationError(f"axis={axis} is out of range for a one-hot result of rank {n}")
    return axis + n if axis < 0 else axis


def _one_hot_rel(args: Sequence[Type], attrs: OneHotAttrs) -> Type | Solved | None:
    indices = tensor_arg(args, 0, "indices")
    if indices is None:
        return None
    require_int_dtype(indices, "the indices")
    axis = one_hot_axis(indices.ndim, attrs.axis)
    shape = tuple(indices.shape[:axis]) + (attrs.depth,) + tuple(indices.shape[axis:])
    out = TensorType(shape, attrs.dtype)
    refined: list[Type | None] = [None]
    for i, name in ((1, "on_value"), (2, "off_value")):
        if isinstance(args[i], (IncompleteType, TypeVar)):
            refined.append(TensorType((), attrs.dtype))
            continue
        t = tensor_arg(args, i, name)
        assert t is not None
        require_scalar(t, name)
        refined.append(None)
    if any(r is not None for r in refined):
        return Solved(out, tuple(refined))
    return out


def _one_hot(args: Sequence[np.ndarray], attrs: OneHotAttrs, out: Type) -> np.ndarray:
    indices, on, off = args
    axis = one_hot_axis(indices.ndim, attrs.axis)
    on_v = cast_array(np.asarray(on), attrs.dtype)
    off_v = cast_array(np.asarray(off), attrs.dtype)
    hot = indices.astype(np.int64)[..., None] == np.arange(attrs.depth)
    values = np.where(hot, on_v, off_v)
    return as_array(np.moveaxis(values, -1, axis), attrs.dtype)


defop("one_hot", arity=3, rel=_one_hot_rel, pattern=PatternKind.OUT_ELEMWISE_FUSABLE,
      compute=_one_hot, doc="one-hot encoding of integer indices with depth entries along axis",
      attrs=OneHotAttrs, family=FAMILY)


# ==================================================================== where

def _where_rel(args: Sequence[Type], attrs: Attrs) -> Type | None:
    ts = tensor_args(args)
    if ts is None:
        return None
    cond, x, y = ts
    if x.dtype != y.dtype:
        raise RelationError(f"x and y must have the same dtype, got {x.dtype} and {y.dtype}")
    shape = broadcast_shapes(cond.shape, broadcast_shapes(x.shape, y.shape))
    return TensorType(shape, x.dtype)


def _where(args: Sequence[np.ndarray], attrs: Attrs, out: Type) -> np.ndarray:
    cond, x, y = args
    return as_array(np.where(cond != 0, x, y), x.dtype)


defop("where", arity=3, rel=_where_rel, pattern=PatternKind.BROADCAST, compute=_where,
      doc="element-wise condition ? x : y with broadcasting (nonzero is true)", family=FAMILY)

__all__ = ["SliceMode", "StridedSliceAttrs", "TakeMode", "TakeAttrs", "GatherAttrs",
           "OneHotAttrs", "fix_indices"]
