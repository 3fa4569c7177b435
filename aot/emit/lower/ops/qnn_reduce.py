"""Lowering of qnn.mean (``aot/ir/ops/qnn_reduce.py``) as an anchor on the
reduction skeleton of ``mean`` (:func:`.reduce.sum_fold`): an int32 sum of
the raw codes (wrapping, TFLite's ``temp_sum``), then ``sum - izp * n`` in
64 bits truncated to int32, TFLite's double-rounding
``MultiplyByQuantizedMultiplier`` by the multiplier with ``1/n`` folded in
(literals from the reference's own
:func:`~aot.ir.ops.qnn_reduce.mean_multiplier`), the output zero point and
saturation.  Constant quantization parameters only (run-time ones are
refused with a LoweringError)."""

from __future__ import annotations

from typing import Sequence

from ....ir.ops.qnn_reduce import mean_multiplier
from ....ir.types import Type
from ...kernel import ir as K
from ..registry import ArgValue, LowerContext, LoweringError, Sink, anchor_lowering
from .common import tensor
from .fixed_point import I32, I64, Multiplier, i32, i64, multiply_double, saturate
from .qnn import checked, constant_of
from .reduce import sum_fold

__all__: list[str] = []


@anchor_lowering("qnn.mean")
def _mean(ctx: LowerContext, args: Sequence[ArgValue], attrs, out_type: Type,
          sinks: Sequence[Sink]) -> K.Stmt:
    data, *params = (tensor(a) for a in args)
    values = [constant_of(ctx, p) for p in params]
    if any(v is None for v in values):
        raise LoweringError("qnn.mean needs constant quantization parameters (its multiplier "
                            "is computed at compile time)")
    s_in, z_in, s_out, z_out = (v.reshape(-1)[0] for v in values)  # type: ignore[union-attr]
    izp, ozp = int(z_in), int(z_out)
    dtype = data.dtype

    def finish(acc: K.Expr, count: int) -> K.Expr:
        if count == 0:
            return K.Const(0, dtype)
        pair = checked("qnn.mean", lambda: mean_multiplier(float(s_in), float(s_out), count))
        assert isinstance(pair, tuple)
        shifted = K.cast(I32, K.sub(K.cast(I64, acc), i64(izp * count)))
        scaled = multiply_double(shifted, Multiplier(i32(pair[0]), i32(pair[1])))
        return saturate(K.add(scaled, i32(ozp)), dtype)

    return sum_fold(ctx, data, attrs, out_type, sinks[0], I32, finish)
