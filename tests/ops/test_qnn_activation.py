"""qnn.leaky_relu (aot/ir/ops/qnn_activation.py): relation, hand-worked
TFLite cases, and the reference against TFLite's QuantizeLeakyRelu loop
written out on Python integers (multipliers from float32 ratios, as
TFLite's LeakyReluPrepare)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import aot
from aot.ir import quant
from aot.ir.dtype import DType
from aot.ir.ops.nn import LeakyReluAttrs
from aot.ir.registry import PatternKind, RelationError, lookup
from aot.ir.types import TensorType

F32 = TensorType((), DType.FLOAT32)
I32 = TensorType((), DType.INT32)


def leaky(x: np.ndarray, s_in: float, z_in: int, s_out: float, z_out: int,
          alpha: float) -> np.ndarray:
    op = lookup("qnn.leaky_relu")
    assert op is not None
    attrs = LeakyReluAttrs(alpha=alpha)
    out = op.rel([TensorType(x.shape, DType.from_numpy(x.dtype)), F32, I32, F32, I32], attrs)
    assert out == TensorType(x.shape, DType.from_numpy(x.dtype))
    args = [x, np.float32(s_in), np.int32(z_in), np.float32(s_out), np.int32(z_out)]
    return op.compute([np.asarray(a) for a in args], attrs, out)


def srdhm(a: int, b: int) -> int:
    p = a * b
    nudge = (1 << 30) if p >= 0 else 1 - (1 << 30)
    v = p + nudge
    return abs(v) // (1 << 31) * (1 if v >= 0 else -1)


def rdbpot(x: int, e: int) -> int:
    mask = (1 << e) - 1
    return (x >> e) + ((x & mask) > (mask >> 1) + (x < 0))


def mbqm(x: int, real: float) -> int:
    qm = quant.quantize_multiplier(real)
    ls, rs = max(qm.shift, 0), max(-qm.shift, 0)
    return rdbpot(srdhm(x * (1 << ls), qm.multiplier), rs)


def tflite_leaky_relu(q: int, s_in: float, z_in: int, s_out: float, z_out: int,
                      alpha: float, lo: int, hi: int) -> int:
    f = np.float32
    identity = float(f(f(s_in) / f(s_out)))
    scaled = float(f(f(f(s_in) * f(alpha)) / f(s_out)))
    x = q - z_in
    y = mbqm(x, identity if x >= 0 else scaled) + z_out
    return min(max(y, lo), hi)


def test_record_and_relation() -> None:
    op = lookup("qnn.leaky_relu")
    assert op is not None and op.arity == 5 and op.family == "qnn"
    assert op.pattern is PatternKind.ELEMWISE and op.attrs_type is LeakyReluAttrs
    with pytest.raises(RelationError, match="int8, uint8 or int16"):
        op.rel([TensorType((3,), DType.INT32), F32, I32, F32, I32], LeakyReluAttrs())
    with pytest.raises(RelationError, match="output_zero_point must be a int32 scalar"):
        op.rel([TensorType((3,), DType.INT8), F32, I32, F32, TensorType((3,), DType.INT32)],
               LeakyReluAttrs())


def test_golden() -> None:
    x = np.array([-3, -5, -1, 0, 3, 100, -128], np.int8)
    # identity 0.5 / 0.25 = 2; alpha 0.5 * 0.25 / 0.25 = 0.5 with SRDHM's ties toward
    # +infinity: -1.5 -> -1, -2.5 -> -2, -0.5 -> 0
    got = leaky(x, 0.5, 0, 0.25, 0, 0.25)
    assert got.tolist() == [-1, -2, 0, 0, 6, 127, -64]


def test_golden_zero_points_uint8() -> None:
    x = np.array([120, 128, 140, 0], np.uint8)
    # x - 128 = -8, 0, 12, -128; alpha 0.1: -0.8 -> -1, 0, 12, -12.8 -> -13; + 10
    got = leaky(x, 0.1, 128, 0.1, 10, 0.1)
    assert got.tolist() == [9, 10, 22, 0]


def test_negative_alpha_raises() -> None:
    with pytest.raises(quant.QuantizationError):
        leaky(np.array([1], np.int8), 0.5, 0, 0.5, 0, -0.1)


@settings(deadline=None, max_examples=80)
@given(st.sampled_from(["int8", "uint8", "int16"]), st.floats(2.0 ** -10, 4.0, width=32),
       st.floats(2.0 ** -10, 4.0, width=32), st.floats(0.0, 1.0, width=32),
       st.integers(-100, 100), st.integers(-100, 100), st.integers(0, 2 ** 16))
def test_matches_tflite(dtype: str, s_in: float, s_out: float, alpha: float, z_in: int,
                        z_out: int, seed: int) -> None:
    lo, hi = quant.dtype_range(np.dtype(dtype))
    x = np.random.default_rng(seed).integers(lo, hi + 1, 12).astype(dtype)
    got = leaky(x, s_in, z_in, s_out, z_out, alpha)
    assert got.tolist() == [tflite_leaky_relu(int(q), s_in, z_in, s_out, z_out, alpha, lo, hi)
                            for q in x]


def test_text() -> None:
    text = '''#[version = "0.0.5"]
def @main(%x: Tensor[(2, 3), int8]) {
  qnn.leaky_relu(%x, 0.5f, 1, 0.25f, -2, alpha=0.2f)
}'''
    mod = aot.infer_types(aot.parse(text))
    again = aot.infer_types(aot.parse(str(mod)))
    x = np.arange(-3, 3, dtype=np.int8).reshape(2, 3)
    assert np.array_equal(aot.interpret(mod, x), aot.interpret(again, x))
