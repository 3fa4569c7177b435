"""Lowering of the index-based transforms (``aot/ir/ops/transform_index.py``,
``transform_nd.py``): strided_slice, take, gather, gather_nd, one_hot,
where, trilu -- all index lowerings.

* strided_slice resolves its attributes with the reference's own
  canonicalisation (``slice_spec`` / ``resolve_slice``); output position ``o``
  of a sliced axis reads input position ``begin + o * stride``.
* take and gather read their index tensor through ``args[1].read`` (so
  computed indices fuse) and make each index valid with
  :func:`~.index_math.fix_index` (clip / wrap / fast = clip, in the
  kernel), so a load never leaves its buffer whatever the indices hold.
* gather_nd reads each component of the index tuple at ``(k, batch,
  rest)`` and clamps it to its axis (``fix_index``, clip).
* trilu compares ``j - i`` (widened to the type of ``k``) with ``k``.
* one_hot compares the widened index with the position along the new
  axis; on/off values are converted with cast's rules.
* where is a select on ``cond != 0`` over the broadcast operands.
"""

from __future__ import annotations

import math
from typing import Sequence

from ....ir.dtype import DType
from ....ir.ops.shape_util import normalize_axis
from ....ir.ops.transform_index import TakeMode, one_hot_axis, resolve_slice, slice_spec
from ....ir.types import Type
from ...kernel import ir as K
from ..registry import (ArgValue, Index, LowerContext, LoweringError, TensorValue, broadcast_index,
                        index_lowering, out_tensor)
from .index_math import fix_index, iadd, idx_const, imul, isub, unravel, widen_index
from .common import tensor


def _out_shape(out_type: Type) -> tuple[int, ...]:
    return tuple(int(d) for d in out_tensor(out_type).shape)


@index_lowering("strided_slice")
def _strided_slice(ctx: LowerContext, args: Sequence[ArgValue], attrs, out_type: Type):
    x = tensor(args[0])
    # axis -> (begin, stride) of every sliced axis that keeps elements
    starts: dict[int, tuple[int, int]] = {}
    for s in slice_spec(x.ndim, attrs):
        begin, _, length = resolve_slice(s, x.shape[s.axis])
        if length > 0:
            starts[s.axis] = (begin, s.stride)

    def read(idx: Index) -> K.Expr:
        src = list(idx)
        for axis, (begin, stride) in starts.items():
            o = idx[axis]
            src[axis] = iadd(imul(o, stride), begin) if stride > 0 \
                else isub(idx_const(begin), imul(o, -stride))
        return x.read(tuple(src))
    return TensorValue(_out_shape(out_type), x.dtype, read)


def _check_extent(extent: int, out_shape: Sequence[int]) -> None:
    """The reference fails when a non-empty result is taken from an axis
    of extent 0; so does compilation (there is no element to read)."""
    if extent == 0 and math.prod(out_shape) > 0:
        raise LoweringError("take/gather of a non-empty result from an axis of extent 0")


def _batch_dims(attrs, indices_ndim: int) -> int:
    b = attrs.batch_dims
    return b + indices_ndim if b < 0 else b


@index_lowering("take")
def _take(ctx: LowerContext, args: Sequence[ArgValue], attrs, out_type: Type):
    data, indices = tensor(args[0]), tensor(args[1])
    shape = _out_shape(out_type)
    mode: TakeMode = attrs.mode
    if attrs.axis is None:
        size = data.size
        _check_extent(size, shape)

        def read_flat(idx: Index) -> K.Expr:
            flat = fix_index(indices.read(idx), size, mode)
            return data.read(unravel(flat, data.shape))
        return TensorValue(shape, data.dtype, read_flat)

    axis = normalize_axis(attrs.axis, data.ndim)
    b = _batch_dims(attrs, indices.ndim)
    extent = data.shape[axis]
    n_idx = indices.ndim - b
    _check_extent(extent, shape)

    def read(idx: Index) -> K.Expr:
        ind = idx[:b] + idx[axis:axis + n_idx]
        pos = fix_index(indices.read(ind), extent, mode)
        return data.read(idx[:axis] + (pos,) + idx[axis + n_idx:])
    return TensorValue(shape, data.dtype, read)


@index_lowering("gather")
def _gather(ctx: LowerContext, args: Sequence[ArgValue], attrs, out_type: Type):
    data, indices = tensor(args[0]), tensor(args[1])
    axis = normalize_axis(attrs.axis, data.ndim)
    extent = data.shape[axis]
    _check_extent(extent, indices.shape)

    def read(idx: Index) -> K.Expr:
        src = list(idx)
        src[axis] = fix_index(indices.read(idx), extent, TakeMode.CLIP)
        return data.read(tuple(src))
    return TensorValue(indices.shape, data.dtype, read)


@index_lowering("gather_nd")
def _gather_nd(ctx: LowerContext, args: Sequence[ArgValue], attrs, out_type: Type):
    data, indices = tensor(args[0]), tensor(args[1])
    shape = _out_shape(out_type)
    b, m = attrs.batch_dims, indices.shape[0]
    n_rest = len(indices.shape) - 1 - b
    for k in range(m):
        _check_extent(data.shape[b + k], shape)

    def read(idx: Index) -> K.Expr:
        batch, rest, tail = idx[:b], idx[b:b + n_rest], idx[b + n_rest:]
        tup = tuple(fix_index(indices.read((idx_const(k), *batch, *rest)), data.shape[b + k],
                              TakeMode.CLIP) for k in range(m))
        return data.read((*batch, *tup, *tail))
    return TensorValue(shape, data.dtype, read)


@index_lowering("trilu")
def _trilu(ctx: LowerContext, args: Sequence[ArgValue], attrs, out_type: Type):
    data, k = tensor(args[0]), tensor(args[1])
    shift = widen_index(k.read(()))

    def read(idx: Index) -> K.Expr:
        diff = K.cast(shift.dtype, isub(idx[-1], idx[-2]))
        keep = K.ge(diff, shift) if attrs.upper else K.le(diff, shift)
        return K.select(keep, data.read(idx), K.Const(0, data.dtype))
    return TensorValue(data.shape, data.dtype, read)


@index_lowering("one_hot")
def _one_hot(ctx: LowerContext, args: Sequence[ArgValue], attrs, out_type: Type):
    indices, on, off = (tensor(a) for a in args)
    dtype: DType = attrs.dtype
    axis = one_hot_axis(indices.ndim, attrs.axis)
    on_v = K.cast(dtype, on.read(()))
    off_v = K.cast(dtype, off.read(()))

    def read(idx: Index) -> K.Expr:
        v = widen_index(indices.read(idx[:axis] + idx[axis + 1:]))
        hot = K.eq(v, K.cast(v.dtype, idx[axis]))
        return K.select(hot, on_v, off_v)
    return TensorValue(_out_shape(out_type), dtype, read)


@index_lowering("where")
def _where(ctx: LowerContext, args: Sequence[ArgValue], attrs, out_type: Type):
    cond, x, y = (tensor(a) for a in args)
    t = out_tensor(out_type)
    shape = _out_shape(out_type)

    def read(idx: Index) -> K.Expr:
        c = cond.read(broadcast_index(idx, shape, cond.shape))
        truth = c if c.dtype is DType.BOOL else K.ne(c, K.Const(0, c.dtype))
        return K.select(truth, x.read(broadcast_index(idx, shape, x.shape)),
                        y.read(broadcast_index(idx, shape, y.shape)))
    return TensorValue(shape, t.dtype, read)
