"""The float-pair helpers of the pair-loading pointwise tiles
(aot/emit/lower/ops/nn_conv_pointwise.py): the kernel evaluator's
``aot_pack2_f32`` / ``aot_lo_f32`` / ``aot_hi_f32`` move two floats through
one double's bytes unchanged, NaN payloads and signed zeros included (the C
side runs in tests/e2e/test_scalar_tuning_c.py)."""

from __future__ import annotations

import numpy as np

from aot.emit.kernel import ir as K
from aot.emit.kernel.evaluate import evaluate
from aot.ir.dtype import DType

F32, F64 = DType.FLOAT32, DType.FLOAT64


def test_pairs_round_trip_bit_for_bit():
    bits = np.array([0x3F800000, 0x80000000, 0x7FC00123, 0xFF800001, 0x00000001, 0x40C00000],
                    dtype=np.uint32)
    values = bits.view(np.float32)
    for a, b in zip(values[::2], values[1::2]):
        env = {"a": a, "b": b}        # float32 scalars: a signaling NaN stays one
        d = K.call("aot_pack2_f32", [K.var("a", F32), K.var("b", F32)], F64)
        packed = evaluate(d, env, {})
        assert np.asarray(packed).view(np.uint64) == np.array([a, b]).view(np.uint64)[0]
        lo = evaluate(K.call("aot_lo_f32", [d], F32), env, {})
        hi = evaluate(K.call("aot_hi_f32", [d], F32), env, {})
        assert np.asarray(lo, np.float32).view(np.uint32) == np.asarray(a).view(np.uint32)
        assert np.asarray(hi, np.float32).view(np.uint32) == np.asarray(b).view(np.uint32)
