"""Lowering of the value-creating transforms (``aot/ir/ops/transform_init.py``):
cast, cast_like, clip, full, full_like, zeros, ones, zeros_like, ones_like
and arange -- all index lowerings.

Kernel IR's :class:`~aot.emit.kernel.ir.Cast` *is* the family's conversion
rule (truncate toward zero and saturate float -> integer, NaN -> 0, wrap
integer -> integer, ``x != 0`` to bool), so cast and every fill value are
one Cast.  clip converts its bounds to the tensor's dtype by the same rule
at compile time and applies NaN-propagating max then min, leaving out a
bound that cannot bind (an infinite float bound, an integer bound at the
dtype's limit).  arange reads its scalar arguments (the reference checks
that they agree with the attributes) and computes ``start + step * i`` in
its dtype: float16 rounds after each operation and integers wrap, exactly
as the reference's arithmetic in that dtype.  A cast of QuantizeLinear's
round-add-clip chain becomes one ``aot_quantize_f32`` (``quantize_cast``).
"""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np

from ....ir.dtype import DType
from ....ir.ops.transform_init import cast_array
from ....ir.types import Type
from ...kernel import ir as K
from ..registry import ArgValue, LowerContext, TensorValue, index_lowering, out_tensor, scalar_value
from .common import elementwise, tensor
from .quantize_cast import quantize_cast


@index_lowering("cast", "cast_like")
def _cast(ctx: LowerContext, args: Sequence[ArgValue], attrs: object, out_type: Type):
    dtype = out_tensor(out_type).dtype
    return elementwise(args[0], dtype, lambda x: quantize_cast(dtype, x) or K.cast(dtype, x))


def _bound(value: float, dtype: DType, upper: bool) -> K.Const | None:
    """The clip bound ``value`` in ``dtype`` (cast's rule); None when it
    cannot change any value: a lower bound of -inf or the dtype's minimum,
    an upper bound of +inf or the dtype's maximum."""
    converted = cast_array(np.array(value), dtype)[()]
    if dtype.is_float:
        limit = math.inf if upper else -math.inf
        if float(converted) == limit:
            return None
    else:
        lo, hi = K.dtype_range(dtype)
        if int(converted) == (hi if upper else lo):
            return None
    return K.Const(converted.item(), dtype)


def _clip0_bound(lo: K.Const | None, hi: K.Const | None) -> K.Const | None:
    """``hi`` when the float32 bounds are +0 and a positive finite ``hi``
    (ReLU6's): clip is then the ``aot_clip0_f32`` helper, which equals the
    select chain bit for bit and takes fewer instructions on a Cortex-M (the
    helper's note; MobileNetV1's 27 ReLU6 layers, Cortex-M4F: 270,000 fewer,
    2.2 %)."""
    if (lo is None or hi is None or lo.dtype is not DType.FLOAT32
            or float(lo.value) != 0.0 or math.copysign(1.0, float(lo.value)) < 0):
        return None
    return hi if 0.0 < float(hi.value) < math.inf else None


@index_lowering("clip")
def _clip(ctx: LowerContext, args: Sequence[ArgValue], attrs, out_type: Type):
    x = tensor(args[0])
    lo = _bound(attrs.a_min, x.dtype, upper=False)
    hi = _bound(attrs.a_max, x.dtype, upper=True)
    top = _clip0_bound(lo, hi)
    if top is not None:
        return elementwise(x, x.dtype, lambda v: K.call("aot_clip0_f32", [v, top], v.dtype))

    def fn(v: K.Expr) -> K.Expr:
        if lo is not None:
            v = K.maximum(v, lo)
        if hi is not None:
            v = K.minimum(v, hi)
        return v
    return elementwise(x, x.dtype, fn)


@index_lowering("full", "full_like")
def _full(ctx: LowerContext, args: Sequence[ArgValue], attrs: object, out_type: Type):
    t = out_tensor(out_type)
    fill = tensor(args[-1])
    return scalar_value(K.cast(t.dtype, fill.read(())), tuple(int(d) for d in t.shape))


def _filled(value: int):
    def lower(ctx: LowerContext, args: Sequence[ArgValue], attrs: object, out_type: Type):
        t = out_tensor(out_type)
        return scalar_value(K.Const(value, t.dtype), tuple(int(d) for d in t.shape))
    return lower


index_lowering("zeros", "zeros_like")(_filled(0))
index_lowering("ones", "ones_like")(_filled(1))


@index_lowering("arange")
def _arange(ctx: LowerContext, args: Sequence[ArgValue], attrs, out_type: Type):
    t = out_tensor(out_type)
    dtype = t.dtype
    start = tensor(args[0]).read(())
    step = tensor(args[2]).read(())

    def read(idx: tuple[K.Expr, ...]) -> K.Expr:
        return K.add(start, K.mul(step, K.cast(dtype, idx[0])))
    return TensorValue((int(t.shape[0]),), dtype, read)
