"""Indexing: Slice, Gather, GatherElements, GatherND, OneHot, ArgMax, ArgMin,
TopK, Trilu.

* Slice's starts/ends/axes/steps must be constants; each axis is resolved
  here exactly as the specification says (negative values count from the
  end, then starts are clamped to ``[0, dim]`` and ends to ``[0, dim]``
  for positive steps, to ``[0, dim - 1]`` and ``[-1, dim - 1]`` for
  negative ones) and emitted as a ``strided_slice`` with in-range bounds.
  An end of -1 with a negative step (through element 0) is written
  ``-dim - 1``, which ``strided_slice`` reads the same way.
* Gather is ``take`` with ``mode=wrap``: in-range negative indices count
  from the end, as ONNX says (out-of-range indices are an error in ONNX;
  here they wrap).  GatherElements is ``gather``, negative indices first
  made non-negative.
* GatherND is ``gather_nd`` with the index tuple moved from the last axis
  (ONNX) to the first (Relay) and negative components counted from the
  end of their axis.
* Trilu is ``trilu``; an omitted ``k`` is 0.
* OneHot: ``depth`` must be a constant; negative indices count from the
  end (version 11); values ``[off, on]`` become ``one_hot``'s scalars.
* ArgMax/ArgMin: int64 results (the IR's are int32, then cast).
* TopK: ``k`` must be a constant; ties keep the lower index first (the
  IR's sort is stable in both directions), as ONNX requires; indices are
  int64.

Versions: Slice 11, 13; Gather 11, 13; GatherElements 11, 13; GatherND 11, 12, 13; OneHot 11;
ArgMax/ArgMin 11, 12, 13; TopK 11, 24 (bfloat16 only); Trilu 14.
"""

from __future__ import annotations

import numpy as np

from ....ir.dtype import DType
from ....ir.expr import Expr
from ..graph import Node
from ..registry import converter
from .util import normalize_axis


def _slice_bounds(start: int, end: int, step: int, dim: int) -> tuple[int, int]:
    if start < 0:
        start += dim
    if end < 0:
        end += dim
    if step > 0:
        return min(max(start, 0), dim), min(max(end, 0), dim)
    start = min(max(start, 0), dim - 1)
    end = min(max(end, -1), dim - 1)
    return start, (end if end >= 0 else -dim - 1)


@converter("Slice", (11, 13))
def convert_slice(node: Node) -> list[Expr]:
    x = node.input(0)
    shape = node.shape(x)
    starts = node.const_ints(1, "starts")
    ends = node.const_ints(2, "ends")
    axes = node.const_ints(3, "axes") if node.has(3) else list(range(len(starts)))
    steps = node.const_ints(4, "steps") if node.has(4) else [1] * len(starts)
    if not len(starts) == len(ends) == len(axes) == len(steps):
        raise node.error(f"starts {starts}, ends {ends}, axes {axes} and steps {steps} must "
                         "have the same length")
    axes = [normalize_axis(node, a, len(shape), "axes") for a in axes]
    if len(set(axes)) != len(axes):
        raise node.error(f"axes {axes} lists an axis twice")
    begin, end = [], []
    for s, e, k, a in zip(starts, ends, steps, axes):
        if k == 0:
            raise node.error("steps must not be 0")
        b, e2 = _slice_bounds(s, e, k, shape[a])
        begin.append(b)
        end.append(e2)
    if all(b == 0 and e == shape[a] and k == 1
           for b, e, k, a in zip(begin, end, steps, axes)):
        return [x]
    return [node.call("strided_slice", [x], begin=tuple(begin), end=tuple(end),
                      strides=tuple(steps), axes=tuple(axes))]


def _index_input(node: Node, i: int) -> Expr:
    idx = node.input(i)
    if node.dtype(idx) not in (DType.INT32, DType.INT64):
        raise node.error(f"indices of dtype {node.dtype(idx)} are not supported")
    return idx


@converter("Gather", (11, 13))
def convert_gather(node: Node) -> list[Expr]:
    data, idx = node.input(0), _index_input(node, 1)
    axis = normalize_axis(node, int(node.attr("axis", 0)), node.rank(data))
    extent = node.shape(data)[axis]
    value = node.ctx.const_value(idx)
    if value is not None and value.size:
        bad = value[(value < -extent) | (value >= extent)]
        if bad.size:
            raise node.error(f"index {int(bad.flat[0])} is out of range for axis {axis} of "
                             f"extent {extent} (ONNX allows [-{extent}, {extent - 1}])")
    return [node.call("take", [data, idx], axis=axis, mode="wrap")]


def _non_negative(node: Node, idx: Expr, extent: int) -> Expr:
    """``idx`` with negative entries counted from the end of ``extent``."""
    value = node.ctx.const_value(idx)
    if value is not None:
        if (value >= 0).all():
            return idx
        return node.constant(np.where(value < 0, value + extent, value).astype(value.dtype))
    dt = node.dtype(idx)
    zero = node.constant(np.zeros((), dt.np))
    neg = node.call("less", [idx, zero])
    shifted = node.call("add", [idx, node.constant(np.asarray(extent, dt.np))])
    return node.call("where", [neg, shifted, idx])


@converter("GatherElements", (11, 13))
def convert_gather_elements(node: Node) -> list[Expr]:
    data, idx = node.input(0), _index_input(node, 1)
    axis = normalize_axis(node, int(node.attr("axis", 0)), node.rank(data))
    d_shape, i_shape = node.shape(data), node.shape(idx)
    if len(d_shape) != len(i_shape) or any(i > d for k, (d, i) in enumerate(zip(d_shape, i_shape))
                                           if k != axis):
        raise node.error(f"indices {list(i_shape)} do not fit the data {list(d_shape)} "
                         f"off axis {axis}")
    if any(i != d for k, (d, i) in enumerate(zip(d_shape, i_shape)) if k != axis):
        # only data[..., j < indices.shape[k], ...] is read off the axis
        ends = tuple(d if k == axis else i for k, (d, i) in enumerate(zip(d_shape, i_shape)))
        data = node.call("strided_slice", [data], begin=(0,) * len(ends), end=ends,
                         strides=(1,) * len(ends))
    idx = _non_negative(node, idx, d_shape[axis])
    return [node.call("gather", [data, idx], axis=axis)]


@converter("OneHot", (11,))
def convert_one_hot(node: Node) -> list[Expr]:
    idx, values = node.input(0), node.input(2)
    if node.dtype(idx).is_bool:
        raise node.error("bool indices are not supported")
    depth_v = node.const(1, "depth").reshape(-1)
    if depth_v.size != 1:
        raise node.error("depth must be a scalar")
    depth = int(depth_v[0])
    if depth < 1:
        raise node.error(f"depth={depth} must be positive")
    if node.shape(values) != (2,):
        raise node.error(f"values must have shape [2], got {list(node.shape(values))}")
    if not node.dtype(idx).is_int:
        idx = node.call("cast", [idx], dtype=DType.INT64)
    idx = _non_negative(node, idx, depth)
    off = node.call("take", [values, node.constant(np.asarray(0, np.int64))], axis=0)
    on = node.call("take", [values, node.constant(np.asarray(1, np.int64))], axis=0)
    axis = int(node.attr("axis", -1))
    rank = node.rank(idx) + 1
    axis = normalize_axis(node, axis, rank)
    return [node.call("one_hot", [idx, on, off], depth=depth, axis=axis,
                      dtype=node.dtype(values))]


def _arg(node: Node, op_name: str) -> list[Expr]:
    x = node.input(0)
    axis = normalize_axis(node, int(node.attr("axis", 0)), node.rank(x))
    y = node.call(op_name, [x], axis=(axis,), keepdims=bool(node.attr("keepdims", 1)),
                  select_last_index=bool(node.attr("select_last_index", 0)))
    return [node.call("cast", [y], dtype=DType.INT64)]


@converter("ArgMax", (11, 12, 13))
def convert_argmax(node: Node) -> list[Expr]:
    return _arg(node, "argmax")


@converter("ArgMin", (11, 12, 13))
def convert_argmin(node: Node) -> list[Expr]:
    return _arg(node, "argmin")


@converter("TopK", (11, 24))
def convert_topk(node: Node) -> list[Expr]:
    x = node.input(0)
    k_v = node.const(1, "k").reshape(-1)
    if k_v.size != 1:
        raise node.error("k must have one element")
    k = int(k_v[0])
    axis = normalize_axis(node, int(node.attr("axis", -1)), node.rank(x))
    extent = node.shape(x)[axis]
    if not 0 <= k <= extent:
        raise node.error(f"k={k} is out of range for axis {axis} of extent {extent}")
    if k == 0:
        raise node.error("k=0 (empty results) is not supported")
    largest = bool(node.attr("largest", 1))
    both = node.call("topk", [x], k=k, axis=axis, is_ascend=not largest, dtype=DType.INT64)
    return [node.ctx.get_item(both, 0), node.ctx.get_item(both, 1)]


@converter("GatherND", (11, 12, 13))
def convert_gather_nd(node: Node) -> list[Expr]:
    data, idx = node.input(0), _index_input(node, 1)
    shape, ishape = node.shape(data), node.shape(idx)
    b = int(node.attr("batch_dims", 0))
    if not ishape or not 1 <= ishape[-1] <= len(shape) - b:
        raise node.error(f"indices of shape {list(ishape)} do not index data of shape "
                         f"{list(shape)} after {b} batch axes")
    m = ishape[-1]
    extents = np.asarray(shape[b:b + m], node.dtype(idx).np)
    value = node.ctx.const_value(idx)
    if value is not None:
        bad = (value < -extents) | (value >= extents)
        if bad.any():
            raise node.error(f"index {int(value[bad].flat[0])} is out of range (the index "
                             f"tuples address axes of extents {extents.tolist()})")
        idx = node.constant(np.where(value < 0, value + extents, value).astype(value.dtype))
    else:
        neg = node.call("less", [idx, node.constant(np.zeros((), extents.dtype))])
        idx = node.call("where", [neg, node.call("add", [idx, node.constant(extents)]), idx])
    perm = (len(ishape) - 1, *range(len(ishape) - 1))
    first = node.call("transpose", [idx], axes=perm)
    return [node.call("gather_nd", [data, first], batch_dims=b)]


@converter("Trilu", (14,))
def convert_trilu(node: Node) -> list[Expr]:
    data = node.input(0)
    k = node.optional(1)
    if k is None:
        k = node.constant(np.zeros((), np.int64))
    elif node.shape(k) != ():
        k = node.call("reshape", [k], newshape=())
    return [node.call("trilu", [data, k], upper=bool(node.attr("upper", 1)))]
