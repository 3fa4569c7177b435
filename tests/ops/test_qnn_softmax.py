"""qnn.softmax (aot/ir/ops/qnn_softmax.py): relation, gemmlowp's
fixed-point functions (aot/ir/gemmlowp.py) against the real functions,
hand-worked rows, and the reference against a float64 softmax.  Bit-exactness with LiteRT: tests/frontend/test_tflite_softmax.py."""

from __future__ import annotations

import numpy as np
import pytest

from aot.ir import gemmlowp
from aot.ir.dtype import DType
from aot.ir.ops.qnn_softmax import QnnSoftmaxAttrs, int8_params, int16_lut, lut_lookup
from aot.ir.quant import QuantizationError
from aot.ir.registry import RelationError, Solved, lookup
from aot.ir.types import TensorType
from cases import qnn as qnn_cases

F32 = TensorType((), DType.FLOAT32)
I32 = TensorType((), DType.INT32)
OP = lookup("qnn.softmax")


def softmax(x, s_in, z_in, s_out, z_out, axis=-1, beta=1.0):
    assert OP is not None
    attrs = QnnSoftmaxAttrs(axis=axis, beta=beta)
    t = TensorType(x.shape, DType.from_numpy(x.dtype))
    out = OP.rel([t, F32, I32, F32, I32], attrs)
    assert out == t
    args = [x, np.float32(s_in), np.int32(z_in), np.float32(s_out), np.int32(z_out)]
    return OP.compute([np.asarray(a) for a in args], attrs, out)


# ------------------------------------------------------------------ relation

def test_relation_accepts_quantized_data_and_fills_parameter_holes():
    assert OP is not None
    for dt in (DType.INT8, DType.UINT8, DType.INT16):
        t = TensorType((2, 5), dt)
        assert OP.rel([t, F32, I32, F32, I32], QnnSoftmaxAttrs()) == t
    from aot.ir.types import IncompleteType
    solved = OP.rel([TensorType((3,), DType.INT8)] + [IncompleteType()] * 4, QnnSoftmaxAttrs())
    assert isinstance(solved, Solved) and solved.args[1] == F32 and solved.args[2] == I32


@pytest.mark.parametrize("args, attrs, message", [
    ([TensorType((2, 5), DType.FLOAT32), F32, I32, F32, I32], QnnSoftmaxAttrs(), "int8, uint8"),
    ([TensorType((2, 5), DType.INT32), F32, I32, F32, I32], QnnSoftmaxAttrs(), "int8, uint8"),
    ([TensorType((2, 5), DType.INT8), F32, I32, F32, I32], QnnSoftmaxAttrs(axis=2), "axis"),
    ([TensorType((2, 5), DType.INT8), TensorType((5,), DType.FLOAT32), I32, F32, I32],
     QnnSoftmaxAttrs(), "input_scale"),
    ([TensorType((2, 5), DType.INT8), F32, I32, F32, F32], QnnSoftmaxAttrs(),
     "output_zero_point"),
    ([TensorType((2, 5), DType.INT8), F32, I32, F32, I32], QnnSoftmaxAttrs(beta=0.0), "beta"),
    ([TensorType((2, 4096), DType.INT8), F32, I32, F32, I32], QnnSoftmaxAttrs(), "4095"),
    ([TensorType((65537,), DType.INT16), F32, I32, F32, I32], QnnSoftmaxAttrs(), "65536"),
])
def test_relation_errors(args, attrs, message):
    assert OP is not None
    with pytest.raises(RelationError, match=message):
        OP.rel(args, attrs)


def test_unrepresentable_scale_raises():
    with pytest.raises(QuantizationError, match="too small"):
        softmax(np.zeros((2, 3), np.int8), 1e-9, 0, 1 / 256, -128)
    with pytest.raises(QuantizationError, match="too large"):
        int8_params(100.0, 1.0)


# ------------------------------------------------------------ fixed point

def test_gemmlowp_exp_and_reciprocal():
    rng = np.random.default_rng(0)
    a = -rng.integers(0, 32 << 26, 200_000)
    a[:3] = [0, -1, -(32 << 26) + 1]
    got = gemmlowp.exp_on_negative_values(a, 5) / 2.0 ** 31
    assert np.abs(got - np.exp(a / 2.0 ** 26)).max() < 2.5e-7
    x = rng.integers(0, 1 << 31, 100_000)
    r = gemmlowp.one_over_one_plus_x_for_x_in_0_1(x) / 2.0 ** 31
    assert np.abs(r * (1 + x / 2.0 ** 31) - 1).max() < 1e-8
    assert list(gemmlowp.count_leading_zeros([1, 2, 3, 1 << 19, (1 << 31) - 1, 0, -1])) == \
        [31, 30, 30, 12, 1, 32, 0]


def test_int16_tables_are_close_to_the_functions():
    exp_lut, recip_lut = int16_lut("exp"), int16_lut("recip")
    assert exp_lut.shape == recip_lut.shape == (513,)
    xs = np.linspace(-10, 0, 513)
    assert np.abs(exp_lut / 32768.0 - np.exp(xs)).max() < 2 / 32768       # measured 1.46
    assert np.abs(recip_lut / 32768.0 - 1 / (1 + (xs + 10) / 10)).max() < 1.5 / 32768
    assert exp_lut[-1] == 32767 and recip_lut[0] == 32767 and recip_lut[-1] == 16384
    v = np.arange(-32768, 32768)
    x = (v + 32768) / 65536.0
    interp = lut_lookup(v, exp_lut) / 32768.0
    assert np.abs(interp - np.exp(-10 + 10 * x)).max() < 2.5 / 32768     # measured 1.91
    interp = lut_lookup(v, recip_lut) / 32768.0
    assert np.abs(interp - 1 / (1 + x)).max() < 2 / 32768                # measured 1.42


# -------------------------------------------------------------- hand-worked

def test_equal_rows_and_single_elements():
    y = softmax(np.full((2, 4), 7, np.int8), 0.1, 0, 1 / 256, -128)
    assert (y == 64 - 128).all()                       # 1/4 in steps of 1/256
    y = softmax(np.array([[5], [-100]], np.int8), 0.1, 0, 1 / 256, -128)
    assert (y == 127).all()                            # 1.0 saturates at 127/256 + 1/2
    y = softmax(np.full((3,), 1000, np.int16), 0.001, 0, 1 / 32768, 0)
    assert (np.abs(y.astype(int) - 32768 // 3) <= 2).all()
    # a dominant element: the others below diff_min count as exactly 0
    x = np.array([[127, -128, -128]], np.int8)
    assert softmax(x, 1.0, 0, 1 / 256, -128).tolist() == [[127, -128, -128]]


def test_zero_point_does_not_matter_and_axis_moves():
    rng = np.random.default_rng(1)
    x = rng.integers(-128, 128, (3, 4, 5)).astype(np.int8)
    a = softmax(x, 0.05, 0, 1 / 256, -128, axis=1)
    b = softmax(x, 0.05, 77, 1 / 256, -128, axis=1)
    assert (a == b).all()
    c = softmax(np.moveaxis(x, 1, -1).copy(), 0.05, 0, 1 / 256, -128, axis=-1)
    assert (np.moveaxis(c, -1, 1) == a).all()


# ------------------------------------------------------------ against float

@pytest.mark.parametrize("row", qnn_cases.SOFTMAX_CASES,
                         ids=[f"{c[0]}-{i}" for i, c in enumerate(qnn_cases.SOFTMAX_CASES)])
def test_reference_against_float(row):
    """Against the exact (float64) softmax in output steps, before its
    rounding: int8/uint8 within 0.51 steps (the rounding's 1/2 plus the
    fixed-point error, measured below 0.001 of a step); int16 (TFLite's
    interpolated tables) within 6e-4 absolute plus one step (measured
    5.5e-4, 18 steps of 2**-15)."""
    dt, shape, axis, s_in, z_in, s_out, z_out, beta = row
    rng = np.random.default_rng(len(shape) * 1000 + shape[-1] + int(s_in * 1e4))
    info = np.iinfo(dt)
    x = rng.integers(int(info.min), int(info.max) + 1, (40, *shape)).astype(dt)
    ax = axis if axis < 0 else axis + 1
    y = softmax(x, s_in, z_in, s_out, z_out, axis=ax, beta=beta)
    so = float(np.float32(s_out))
    real = float(np.float32(s_in)) * (x.astype(np.float64) - z_in) * float(np.float32(beta))
    p = np.exp(real - real.max(axis=ax, keepdims=True))
    p /= p.sum(axis=ax, keepdims=True)
    exact = np.clip(p / so + z_out, info.min, info.max)
    err = np.abs(y - exact).max()
    bound = 6e-4 / so + 1.0 if dt == "int16" else 0.51
    assert err <= bound, (err, bound)
