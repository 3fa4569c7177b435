"""qnn.avg_pool2d (aot/ir/ops/qnn_pool.py): relation, hand-worked cases,
and the reference against a transcription of TFLite's integer
``AveragePool`` loop (reference_integer_ops/pooling.h) on NHWC data."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import aot
from aot.ir import quant
from aot.ir.dtype import DType
from aot.ir.ops.nn_pool import AvgPool2DAttrs
from aot.ir.registry import PatternKind, RelationError, Solved, lookup
from aot.ir.types import IncompleteType, TensorType

F32 = TensorType((), DType.FLOAT32)
I32 = TensorType((), DType.INT32)


def pool(x: np.ndarray, s_in: float, z_in: int, s_out: float, z_out: int,
         **attrs: object) -> np.ndarray:
    op = lookup("qnn.avg_pool2d")
    assert op is not None
    a = AvgPool2DAttrs(**attrs)  # type: ignore[arg-type]
    types = [TensorType(x.shape, DType.from_numpy(x.dtype)), F32, I32, F32, I32]
    out = op.rel(types, a)
    assert isinstance(out, TensorType)
    args = [x, np.float32(s_in), np.int32(z_in), np.float32(s_out), np.int32(z_out)]
    got = op.compute([np.asarray(v) for v in args], a, out)
    assert got.dtype == x.dtype and got.shape == out.shape
    return got


def c_div(a: int, b: int) -> int:
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b > 0) else -q


def tflite_average_pool(x: np.ndarray, kh: int, kw: int, sh: int, sw: int, ph: int, pw: int,
                        oh: int, ow: int, lo: int, hi: int) -> np.ndarray:
    """reference_integer_ops::AveragePool, loop for loop (NHWC)."""
    n, h, w, c = x.shape
    out = np.zeros((n, oh, ow, c), np.int64)
    for b in range(n):
        for oy in range(oh):
            for ox in range(ow):
                for ch in range(c):
                    x0, y0 = ox * sw - pw, oy * sh - ph
                    acc, count = 0, 0
                    for fy in range(max(0, -y0), min(kh, h - y0)):
                        for fx in range(max(0, -x0), min(kw, w - x0)):
                            acc += int(x[b, y0 + fy, x0 + fx, ch])
                            count += 1
                    assert count
                    acc = c_div(acc + count // 2, count) if acc > 0 else \
                        c_div(acc - count // 2, count)
                    out[b, oy, ox, ch] = min(max(acc, lo), hi)
    return out


# ------------------------------------------------------------------ record

def test_record() -> None:
    op = lookup("qnn.avg_pool2d")
    assert op is not None and op.family == "qnn" and op.arity == 5
    assert op.pattern is PatternKind.OUT_ELEMWISE_FUSABLE and op.attrs_type is AvgPool2DAttrs


def test_relation_shape_and_holes() -> None:
    op = lookup("qnn.avg_pool2d")
    assert op is not None
    x = TensorType((1, 7, 7, 4), DType.INT8)
    attrs = AvgPool2DAttrs(pool_size=(3, 3), strides=(2, 2), layout="NHWC")
    assert op.rel([x, F32, I32, F32, I32], attrs) == TensorType((1, 3, 3, 4), DType.INT8)
    solved = op.rel([x, IncompleteType(), I32, F32, IncompleteType()], attrs)
    assert isinstance(solved, Solved) and solved.args[1] == F32 and solved.args[4] == I32


@pytest.mark.parametrize("data, params, attrs, message", [
    (TensorType((1, 4, 4, 1), DType.FLOAT32), [F32, I32, F32, I32], {}, "int8, uint8 or int16"),
    (TensorType((1, 4, 4, 1), DType.INT8), [TensorType((2,), DType.FLOAT32), I32, F32, I32], {},
     "input_scale must be a float32 scalar"),
    (TensorType((1, 2, 2, 1), DType.INT8), [F32, I32, F32, I32], {"pool_size": (3, 3)},
     "output would be empty"),
    (TensorType((4, 4), DType.INT8), [F32, I32, F32, I32], {}, "rank"),
])
def test_relation_rejects(data: TensorType, params: list, attrs: dict, message: str) -> None:
    op = lookup("qnn.avg_pool2d")
    assert op is not None
    with pytest.raises(RelationError, match=message):
        op.rel([data, *params], AvgPool2DAttrs(**attrs))  # type: ignore[arg-type]


def test_type_error_names_the_operator() -> None:
    text = '''#[version = "0.0.5"]
def @main(%x: Tensor[(1, 2, 2, 1), float32]) {
  qnn.avg_pool2d(%x, 0.5f, 0, 0.5f, 0, pool_size=[2, 2], layout="NHWC")
}'''
    with pytest.raises(aot.DiagnosticError, match="qnn.avg_pool2d"):
        aot.infer_types(aot.parse(text))


# ------------------------------------------------------------ hand-worked

def test_golden_same_parameters() -> None:
    """TFLite rounds the raw window average half away from zero."""
    x = np.array([-7, -6, 5, 6, -2, 1, 3, 4], np.int8).reshape(1, 1, 8, 1)
    got = pool(x, 0.5, 3, 0.5, 3, pool_size=(1, 2), strides=(1, 2), layout="NHWC")
    # -6.5 -> -7, 5.5 -> 6, -0.5 -> -1, 3.5 -> 4
    assert got.reshape(-1).tolist() == [-7, 6, -1, 4]


def test_golden_zero_point_changes_the_tie() -> None:
    """-3 and 2 average -0.5 in raw values: TFLite gives -1.  Rounding the
    shifted average instead ((0 + 5) / 2 = 2.5 -> 3) and adding the zero
    point -3 back would give 0."""
    x = np.array([-3, 2], np.int8).reshape(1, 1, 2, 1)
    assert pool(x, 0.25, -3, 0.25, -3, pool_size=(1, 2), layout="NHWC").item() == -1


def test_golden_padding_not_counted() -> None:
    x = np.array([[10, 20], [30, 41]], np.int8).reshape(1, 2, 2, 1)
    got = pool(x, 1.0, 0, 1.0, 0, pool_size=(2, 2), padding=(1, 1), layout="NHWC")
    # windows: {10}, {10, 20}, {20}, {10, 30}, {all}, ...: 25.25 -> 25, 35.5 -> 36
    assert got[0, :, :, 0].tolist() == [[10, 15, 20], [20, 25, 31], [30, 36, 41]]


def test_golden_count_include_pad_pads_with_real_zeros() -> None:
    x = np.array([[10, 20], [30, 41]], np.int8).reshape(1, 2, 2, 1)
    got = pool(x, 1.0, 5, 1.0, 5, pool_size=(2, 2), padding=(1, 1), count_include_pad=True,
               layout="NHWC")
    # corner: three padding taps count as the zero point, (3 * 5 + 10) / 4 = 6.25 -> 6;
    # a side: (2 * 5 + 10 + 20) / 4 = 10; the centre (10 + 20 + 30 + 41) / 4 = 25.25 -> 25
    assert got[0, :2, :2, 0].tolist() == [[6, 10], [13, 25]]


def test_golden_requantized() -> None:
    """Different output parameters: the average of q - izp rounded, then
    requantized with TFLite's double rounding."""
    x = np.array([1, 2, 3, 4], np.uint8).reshape(1, 1, 1, 4)        # NCHW, window 1x4
    got = pool(x, 0.5, 1, 0.25, 128, pool_size=(1, 4))
    # (0 + 1 + 2 + 3) / 4 = 1.5 -> 2; * 2 = 4; + 128
    assert got.item() == 132
    got = pool(x, 0.5, 1, 0.001, 0, pool_size=(1, 4))
    assert got.item() == 255                                           # saturated


def test_window_wholly_in_padding_is_the_zero_point() -> None:
    x = np.full((1, 1, 1, 1), 50, np.int8)
    got = pool(x, 0.5, 7, 0.5, 7, pool_size=(1, 1), padding=(1, 1))
    assert got[0, 0].tolist() == [[7, 7, 7], [7, 50, 7], [7, 7, 7]]


def test_bad_scale() -> None:
    x = np.zeros((1, 1, 2, 2), np.int8)
    with pytest.raises(quant.QuantizationError, match="input_scale"):
        pool(x, -1.0, 0, 1.0, 0)


# -------------------------------------------------------- against TFLite

@settings(deadline=None, max_examples=60)
@given(st.data(), st.sampled_from(["int8", "uint8", "int16"]))
def test_matches_tflite_average_pool(data: st.DataObject, dtype: str) -> None:
    lo, hi = quant.dtype_range(np.dtype(dtype))
    h, w, c = (data.draw(st.integers(1, 6)) for _ in range(3))
    kh, kw = data.draw(st.integers(1, h + 1)), data.draw(st.integers(1, w + 1))
    sh, sw = data.draw(st.integers(1, 3)), data.draw(st.integers(1, 3))
    ph, pw = data.draw(st.integers(0, kh - 1)), data.draw(st.integers(0, kw - 1))
    if h + 2 * ph < kh or w + 2 * pw < kw:
        return
    zp = data.draw(st.integers(lo, hi))
    seed = data.draw(st.integers(0, 2 ** 16))
    x = np.random.default_rng(seed).integers(lo, hi + 1, (2, h, w, c)).astype(dtype)
    got = pool(x, 0.37, zp, 0.37, zp, pool_size=(kh, kw), strides=(sh, sw),
               padding=(ph, pw), layout="NHWC")
    oh, ow = got.shape[1:3]
    assert got.tolist() == tflite_average_pool(x, kh, kw, sh, sw, ph, pw, oh, ow,
                                               lo, hi).tolist()


def test_layouts_agree() -> None:
    x = np.random.default_rng(1).integers(-128, 128, (2, 3, 6, 5)).astype(np.int8)
    nchw = pool(x, 0.1, -4, 0.07, 9, pool_size=(3, 2), strides=(2, 1), padding=(1, 0, 1, 1))
    nhwc = pool(x.transpose(0, 2, 3, 1).copy(), 0.1, -4, 0.07, 9, pool_size=(3, 2),
                strides=(2, 1), padding=(1, 0, 1, 1), layout="NHWC")
    assert np.array_equal(nchw, nhwc.transpose(0, 3, 1, 2))


def test_text_round_trip_and_interpreter() -> None:
    text = '''#[version = "0.0.5"]
def @main(%x: Tensor[(1, 4, 4, 2), int8]) {
  qnn.avg_pool2d(%x, 0.5f, 3, 0.5f, 3, pool_size=[2, 2], strides=[2, 2], layout="NHWC")
}'''
    mod = aot.infer_types(aot.parse(text))
    again = aot.infer_types(aot.parse(str(mod)))
    x = np.random.default_rng(0).integers(-128, 128, (1, 4, 4, 2)).astype(np.int8)
    assert np.array_equal(aot.interpret(mod, x), aot.interpret(again, x))
    assert aot.interpret(mod, x).shape == (1, 2, 2, 2)
