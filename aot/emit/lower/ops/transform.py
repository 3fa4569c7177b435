"""Lowering of the shape transforms (``aot/ir/ops/transform.py`` and
``transform_broadcast.py``): reshape, reshape_like, squeeze, expand_dims,
transpose, reverse, concatenate, stack, split, tile, repeat, broadcast_to,
broadcast_to_like (index lowerings: each is a map from the output index to
an input index, :mod:`.index_math`), and collapse_sum_like /
collapse_sum_to (an anchor: a sum over the broadcast axes).

* The reshapes (reshape, reshape_like, squeeze, expand_dims) of a value
  read row-major from a buffer stay such a read: the element at the output
  index is the buffer's element at the same flat position, so no index is
  unravelled.  Otherwise :func:`reshape_index` maps the index group by group.
* concatenate selects its part along the axis.  The arms of a ``Select``
  may both be evaluated (kernel IR semantics), so every part is read at an
  index clamped into its own extent: the unselected arms read a valid
  element and discard it.  For 32- and 64-bit types the select is the
  runtime's ``aot_pick_S`` and the clamps integer min / max, a form gcc
  12.2's vectoriser does not miscompile (see :func:`_pick`).
* collapse_sum accumulates floats in float64 and integers in uint32 /
  uint64 (wrapping, whose low bits are the dtype's wrapped sum), starting
  from +0.0 as NumPy's sum does, and rounds once -- the reference's
  :func:`~aot.ir.ops.transform_broadcast.wide_sum`.

The index-based transforms live in ``transform_index.py``, the value
creating ones in ``transform_init.py`` and layout_transform in
``layout.py``; importing this module registers them all.
"""

from __future__ import annotations

from typing import Sequence

from ....ir.dtype import DType
from ....ir.ops.shape_util import normalize_axis
from ....ir.ops.transform import expand_pivot, split_extents, transpose_axes
from ....ir.types import Type
from ...kernel import ir as K
from ..registry import (ArgValue, Index, LowerContext, Sink, TensorValue, anchor_lowering,
                        broadcast_index, index_lowering, loop_nest, out_tensor)
from .index_math import ZERO, iadd, idiv, idx_const, imod, isub, reshape_index
from .common import tensor


def _out_shape(out_type: Type) -> tuple[int, ...]:
    return tuple(int(d) for d in out_tensor(out_type).shape)


def reshaped(x: TensorValue, shape: tuple[int, ...]) -> TensorValue:
    """``x`` viewed with ``shape`` (same element count, row-major order)."""
    if shape == x.shape:
        return x
    buf = x.buffer
    if buf is not None:
        def read_buffer(idx: Index) -> K.Expr:
            return K.load(buf, K.flat_index(idx, shape))
        return TensorValue(shape, x.dtype, read_buffer, buf)
    in_shape = x.shape
    return TensorValue(shape, x.dtype, lambda idx: x.read(reshape_index(idx, shape, in_shape)))


@index_lowering("reshape", "reshape_like", "squeeze", "expand_dims")
def _reshape(ctx: LowerContext, args: Sequence[ArgValue], attrs: object, out_type: Type):
    return reshaped(tensor(args[0]), _out_shape(out_type))


@index_lowering("transpose")
def _transpose(ctx: LowerContext, args: Sequence[ArgValue], attrs, out_type: Type):
    x = tensor(args[0])
    perm = transpose_axes(x.ndim, attrs.axes)

    def read(idx: Index) -> K.Expr:
        src: list[K.Expr] = [ZERO] * x.ndim
        for k, a in enumerate(perm):
            src[a] = idx[k]
        return x.read(tuple(src))
    return TensorValue(_out_shape(out_type), x.dtype, read)


@index_lowering("reverse")
def _reverse(ctx: LowerContext, args: Sequence[ArgValue], attrs, out_type: Type):
    x = tensor(args[0])
    axis = normalize_axis(attrs.axis, x.ndim)
    last = x.shape[axis] - 1

    def read(idx: Index) -> K.Expr:
        src = list(idx)
        src[axis] = isub(idx_const(last), idx[axis]) if last > 0 else ZERO
        return x.read(tuple(src))
    return TensorValue(x.shape, x.dtype, read)


# ====================================================== joining and splitting

def _clamped(j: K.Expr, lo: int, hi: int, first: bool, last: bool) -> K.Expr:
    """``j - lo`` for the part covering ``[lo, hi)`` of the axis, clamped
    into ``[0, hi - lo)`` on the sides where other parts lie (integer
    min / max: see :func:`_pick`)."""
    local = iadd(j, -lo)
    if not last:
        local = K.minimum(local, idx_const(hi - lo - 1))
    if not first:
        local = K.maximum(local, ZERO)
    return local


def _pick(cond: K.Expr, a: K.Expr, b: K.Expr) -> K.Expr:
    """``cond ? a : b`` between two parts' elements: for the types AVX2
    loads with masks, the runtime's ``aot_pick_S``, whose arguments C
    evaluates both -- gcc 12.2 -O3 vectorises the select itself with a
    wrong mask (the helper's note); otherwise a select."""
    suffix = _PICK_SUFFIX.get(a.dtype)
    if suffix is not None:
        return K.call(f"aot_pick_{suffix}", [cond, a, b], a.dtype)
    return K.select(cond, a, b)


#: the types with an ``aot_pick_S`` (those AVX2's masked loads move), and S
_PICK_SUFFIX = {DType.INT32: "i32", DType.UINT32: "u32", DType.INT64: "i64",
                DType.UINT64: "u64", DType.FLOAT32: "f32", DType.FLOAT64: "f64"}


@index_lowering("concatenate")
def _concatenate(ctx: LowerContext, args: Sequence[ArgValue], attrs, out_type: Type):
    parts_in = args[0]
    assert isinstance(parts_in, tuple)
    xs = [tensor(p) for p in parts_in]
    shape = _out_shape(out_type)
    axis = normalize_axis(attrs.axis, len(shape))
    spans: list[tuple[TensorValue, int, int]] = []
    begin = 0
    for x in xs:
        n = x.shape[axis]
        if n > 0:       # an empty part holds no element to read
            spans.append((x, begin, begin + n))
        begin += n
    if len(spans) == 1:
        only, lo, _ = spans[0]
        if lo == 0 and only.shape == shape:
            return only
    if not spans:       # an empty result: nothing is read
        return TensorValue(shape, xs[0].dtype, lambda idx: K.Const(0, xs[0].dtype))
    last = len(spans) - 1

    def read(idx: Index) -> K.Expr:
        j = idx[axis]
        value: K.Expr | None = None
        for k in range(last, -1, -1):
            x, lo, hi = spans[k]
            src = list(idx)
            src[axis] = _clamped(j, lo, hi, k == 0, k == last)
            element = x.read(tuple(src))
            value = element if value is None else _pick(K.lt(j, idx_const(hi)), element, value)
        assert value is not None
        return value
    return TensorValue(shape, xs[0].dtype, read)


@index_lowering("stack")
def _stack(ctx: LowerContext, args: Sequence[ArgValue], attrs, out_type: Type):
    parts_in = args[0]
    assert isinstance(parts_in, tuple)
    xs = [tensor(p) for p in parts_in]
    axis = expand_pivot(xs[0].ndim, attrs.axis)

    def read(idx: Index) -> K.Expr:
        j = idx[axis]
        rest = idx[:axis] + idx[axis + 1:]
        value = xs[-1].read(rest)
        for k in range(len(xs) - 2, -1, -1):
            value = K.select(K.eq(j, idx_const(k)), xs[k].read(rest), value)
        return value
    return TensorValue(_out_shape(out_type), xs[0].dtype, read)


def _part(x: TensorValue, axis: int, begin: int, extent: int) -> TensorValue:
    shape = x.shape[:axis] + (extent,) + x.shape[axis + 1:]

    def read(idx: Index) -> K.Expr:
        src = list(idx)
        src[axis] = iadd(idx[axis], begin)
        return x.read(tuple(src))
    return TensorValue(shape, x.dtype, read)


@index_lowering("split")
def _split(ctx: LowerContext, args: Sequence[ArgValue], attrs, out_type: Type):
    x = tensor(args[0])
    axis = normalize_axis(attrs.axis, x.ndim)
    parts = []
    begin = 0
    for extent in split_extents(x.shape[axis], attrs):
        assert isinstance(extent, int)
        parts.append(_part(x, axis, begin, extent))
        begin += extent
    return tuple(parts)


# ================================================================ repetition

@index_lowering("tile")
def _tile(ctx: LowerContext, args: Sequence[ArgValue], attrs, out_type: Type):
    x = tensor(args[0])
    shape = _out_shape(out_type)
    offset = len(shape) - x.ndim

    def read(idx: Index) -> K.Expr:
        src = []
        for a, d in enumerate(x.shape):
            o = idx[offset + a]
            src.append(o if shape[offset + a] == d else imod(o, d))
        return x.read(tuple(src))
    return TensorValue(shape, x.dtype, read)


@index_lowering("repeat")
def _repeat(ctx: LowerContext, args: Sequence[ArgValue], attrs, out_type: Type):
    x = tensor(args[0])
    axis = normalize_axis(attrs.axis, x.ndim)

    def read(idx: Index) -> K.Expr:
        src = list(idx)
        src[axis] = idiv(idx[axis], attrs.repeats)
        return x.read(tuple(src))
    return TensorValue(_out_shape(out_type), x.dtype, read)


@index_lowering("broadcast_to", "broadcast_to_like")
def _broadcast_to(ctx: LowerContext, args: Sequence[ArgValue], attrs, out_type: Type):
    x = tensor(args[0])
    shape = _out_shape(out_type)
    if shape == x.shape:
        return x
    return TensorValue(shape, x.dtype, lambda idx: x.read(broadcast_index(idx, shape, x.shape)))


# ============================================================= collapse_sum

def _accumulator_dtype(t: DType) -> DType:
    if t.is_float:
        return DType.FLOAT64
    return DType.UINT64 if t.bits == 64 else DType.UINT32


@anchor_lowering("collapse_sum_like", "collapse_sum_to")
def _collapse_sum(ctx: LowerContext, args: Sequence[ArgValue], attrs, out_type: Type,
                  sinks: Sequence[Sink]) -> K.Stmt:
    x = tensor(args[0])
    t = out_tensor(out_type)
    shape = _out_shape(out_type)
    lead = x.ndim - len(shape)
    reduced = [a for a in range(x.ndim)
               if a < lead or (shape[a - lead] == 1 and x.shape[a] != 1)]
    acc_t = _accumulator_dtype(t.dtype)

    def per_output(out_idx: Index) -> K.Stmt:
        acc = ctx.scalar("sum", acc_t)

        def accumulate(red_idx: Index) -> K.Stmt:
            src: list[K.Expr] = []
            r = iter(red_idx)
            for a in range(x.ndim):
                src.append(next(r) if a in reduced else out_idx[a - lead])
            return K.Assign(acc, K.add(acc, K.cast(acc_t, x.read(tuple(src)))))
        return K.block(K.Decl(acc, K.Const(0, acc_t)),
                       loop_nest(ctx, [x.shape[a] for a in reduced], accumulate, "r"),
                       sinks[0](out_idx, K.cast(t.dtype, acc)))
    return loop_nest(ctx, shape, per_output)


# Register the rest of the family.
from . import layout  # noqa: E402,F401
from . import transform_index  # noqa: E402,F401
from . import transform_init  # noqa: E402,F401
