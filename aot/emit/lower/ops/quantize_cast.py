"""QuantizeLinear's float tail as one integer helper.

An imported QuantizeLinear (ONNX round-half-to-even semantics) reaches the
lowering as float operators: ``cast<int>(clip(round(x / s) + z, lo, hi))``.
Composed literally, that is the general ``aot_round_even_f32`` (sign
handling for every float), two NaN-propagating comparisons and a
saturating float -> integer conversion: about 30 instructions an element on
a Cortex-M4F.  When the cast's operand is exactly that chain -- round_even,
optionally plus an integral float constant ``z``, optionally clipped by
integral constants -- and the integer dtype is at most 16 bits, the whole
tail (the clip may be the ``aot_clip0_f32`` helper) is
``aot_quantize_f32(x / s, lo, hi, z)`` narrowed to the dtype:
clamp(rint(v) + z, lo, hi) with NaN -> 0, where [lo, hi] is the clip's
range intersected with the dtype's (the saturating cast is that
intersection, since the clipped value is an integer).  It equals the
chain for every float32: float32 addition of the small integer z is exact
below 2^24 and monotonic above, clipping commutes with a monotonic rounding
that keeps integers, and NaN stays NaN through round, add and clip and
converts to 0.
"""

from __future__ import annotations

from ....ir.dtype import DType
from ...kernel import ir as K

__all__ = ["quantize_cast"]

_LIMIT = 2 ** 22      # aot_quantize_f32 needs |lo - z|, |hi - z| below this


def _integral(e: K.Expr) -> int | None:
    if isinstance(e, K.Const) and e.dtype is DType.FLOAT32:
        v = float(e.value)
        if v == v and abs(v) < 2 ** 24 and v == int(v):
            return int(v)
    return None


def _bound(e: K.Expr, op: K.BinaryOperator) -> tuple[K.Expr, int] | None:
    """``e = op(inner, c)`` (either order) with an integral constant c."""
    if isinstance(e, K.BinOp) and e.op is op:
        for inner, c in ((e.a, e.b), (e.b, e.a)):
            v = _integral(c)
            if v is not None:
                return inner, v
    return None


def quantize_cast(dtype: DType, x: K.Expr) -> K.Expr | None:
    """``cast(dtype, x)`` through ``aot_quantize_f32`` when ``x`` is the
    round-add-clip chain (see the module note); None otherwise."""
    if x.dtype is not DType.FLOAT32 or not dtype.is_int or dtype.bits > 16:
        return None
    lo, hi = K.dtype_range(dtype)
    clip_lo, clip_hi = -2 ** 24, 2 ** 24
    if isinstance(x, K.Call) and x.name == "aot_clip0_f32":     # clip(v, 0, hi)
        top = _integral(x.args[1])
        if top is None:
            return None
        x, clip_lo, clip_hi = x.args[0], 0, top
    else:
        found = _bound(x, K.BinaryOperator.MIN)
        if found is not None:
            x, clip_hi = found
        found = _bound(x, K.BinaryOperator.MAX)
        if found is not None:
            x, clip_lo = found
    z = 0
    found = _bound(x, K.BinaryOperator.ADD)
    if found is not None:
        x, z = found
    if not (isinstance(x, K.Call) and x.name == "aot_round_even_f32"):
        return None
    lo, hi = max(lo, clip_lo), min(hi, clip_hi)
    if lo > hi or max(abs(lo - z), abs(hi - z)) >= _LIMIT:
        return None
    i32 = DType.INT32
    q = K.call("aot_quantize_f32", [x.args[0], K.Const(lo, i32), K.Const(hi, i32),
                                    K.Const(z, i32)], i32)
    return K.cast(dtype, q)
