"""Lowering of qnn.sigmoid, qnn.tanh and qnn.hardswish
(``aot/ir/ops/qnn_nonlinear.py``) as index lowerings, for constant
quantization parameters (what every importer produces).

* sigmoid / tanh: the reference's own 256-entry table
  (:func:`~aot.ir.ops.qnn_nonlinear.lookup_table`, TFLite's float32
  ``LUTPopulate``) becomes a ``static const`` array of the model and the
  kernel reads ``table[q - min]``: no float arithmetic in the C.
* hardswish: the int16 fixed-point steps of ``reference_ops::HardSwish``
  with the multipliers and exponents as literals
  (:func:`~aot.ir.ops.qnn_nonlinear.hard_swish_params`), computed in int32
  with explicit int16 truncations where TFLite stores to ``int16_t``.
  Products of two int16 values fit int32; the saturating left shifts are
  done in int64.  gemmlowp's 16-bit ``SaturatingRoundingDoublingHighMul``
  saturates only for ``a == b == -32768``; its multipliers here are
  Q0.15 values >= 0, so that case never arises, nor in the truncating
  product, whose first factor is in ``[0, 32767]``.

Run-time parameters are refused with a LoweringError (the tables and
multipliers are prepare-time constants in TFLite too).
"""

from __future__ import annotations

from typing import Sequence

from ....ir.dtype import DType
from ....ir.ops.qnn_nonlinear import (HardSwishParams, hard_swish_params, lookup_table,
                                      rdbpot16_constants)
from ....ir.types import Type
from ...kernel import ir as K
from ..registry import (ArgValue, LowerContext, LoweringError, TensorValue, index_lowering)
from .common import tensor
from .fixed_point import I32, I64, i32, i64, saturate
from .qnn import checked, constant_of

__all__: list[str] = []

I16 = DType.INT16


def _constant_params(op: str, ctx: LowerContext,
                     params: Sequence[TensorValue]) -> tuple[float, int, float, int]:
    values = [constant_of(ctx, p) for p in params]
    if any(v is None for v in values):
        raise LoweringError(f"{op} needs constant quantization parameters (its tables and "
                            "multipliers are computed at compile time)")
    s_in, z_in, s_out, z_out = (v.reshape(-1)[0] for v in values)  # type: ignore[union-attr]
    return float(s_in), int(z_in), float(s_out), int(z_out)


def _table_lowering(op: str) -> None:
    @index_lowering(op)
    def lower(ctx: LowerContext, args: Sequence[ArgValue], attrs,
              out_type: Type) -> TensorValue:
        data, *params = (tensor(a) for a in args)
        s_in, z_in, s_out, z_out = _constant_params(op, ctx, params)
        values = checked(op, lambda: lookup_table(op, s_in, z_in, s_out, z_out, data.dtype))
        table = ctx.constant_table(values, data.dtype)  # type: ignore[arg-type]
        lo = K.dtype_range(data.dtype)[0]

        def read(idx: tuple) -> K.Expr:
            return table.read((K.sub(K.cast(I32, data.read(idx)), i32(lo)),))
        return TensorValue(data.shape, data.dtype, read)


_table_lowering("qnn.sigmoid")
_table_lowering("qnn.tanh")


# ============================================================ hard swish

def _i16(x: K.Expr) -> K.Expr:
    """Truncate to int16 and widen back (a store to ``int16_t``)."""
    return K.cast(I32, K.cast(I16, x))


def _srdhm16(a: K.Expr, m: int) -> K.Expr:
    """16-bit ``SaturatingRoundingDoublingHighMul`` by a constant ``m >= 0``."""
    ab = K.mul(a, i32(m))
    nudged = K.select(K.ge(ab, i32(0)), K.add(ab, i32(1 << 14)), K.add(ab, i32(1 - (1 << 14))))
    return _i16(K.div(nudged, i32(1 << 15)))


def _sat_left_shift16(v: K.Expr, amount: int) -> K.Expr:
    if amount == 0:
        return v
    wide = K.shl(K.cast(I64, v), i64(amount))       # amount <= 30: no int64 overflow
    return K.cast(I32, K.maximum(K.minimum(wide, i64(32767)), i64(-32768)))


def _rdbpot16(x: K.Expr, e: int) -> K.Expr:
    """16-bit ``RoundingDivideByPOT`` by a constant ``0 <= e <= 31``."""
    if e == 0:
        return x
    mask, half = rdbpot16_constants(e)
    threshold = K.select(K.lt(x, i32(0)), i32(half + 1), i32(half))
    up = K.cast(I32, K.gt(K.bit_and(x, i32(mask)), threshold))
    return _i16(K.add(K.shr(x, i32(e)), up))


def _hard_swish_expr(q: K.Expr, izp: int, ozp: int, p: HardSwishParams,
                     dtype: DType) -> K.Expr:
    x = _i16(K.mul(_i16(K.sub(K.cast(I32, q), i32(izp))), i32(128)))
    on_output = _srdhm16(x, p.output_multiplier)
    e = p.reluish_exponent
    r = _sat_left_shift16(x, e - 1) if e > 0 else x
    r = _srdhm16(r, p.reluish_multiplier)
    if e > 0:
        r = _sat_left_shift16(r, 1)
    if e < 0:
        r = _rdbpot16(r, -e)
    r = K.shr(K.add(r, i32(1 << 15)), i32(1))
    y = _i16(K.div(K.mul(r, on_output), i32(1 << 15)))
    return saturate(_i16(K.add(_rdbpot16(y, -p.output_exponent), i32(ozp))), dtype)


@index_lowering("qnn.hardswish")
def _hardswish(ctx: LowerContext, args: Sequence[ArgValue], attrs,
               out_type: Type) -> TensorValue:
    data, *params = (tensor(a) for a in args)
    s_in, z_in, s_out, z_out = _constant_params("qnn.hardswish", ctx, params)
    p = checked("qnn.hardswish", lambda: hard_swish_params(s_in, s_out))
    assert isinstance(p, HardSwishParams)
    return TensorValue(data.shape, data.dtype,
                       lambda idx: _hard_swish_expr(data.read(idx), z_in, z_out, p, data.dtype))
