"""qnn.batch_matmul, qnn.conv2d_transpose (aot/ir/ops/qnn_products.py),
the 16x8 additions to the qnn family (qnn.requantize
``rounding="TFLITE_INT64"``, int16 qnn.add): relations and their errors,
and the references against independent oracles written with Python
integers (loops over every product; TFLite's formulas transcribed)."""

from __future__ import annotations

from typing import Sequence

import numpy as np
import pytest

from aot.ir import quant
from aot.ir.attrs import AttrError
from aot.ir.dtype import DType
from aot.ir.ops.nn import BatchMatmulAttrs
from aot.ir.ops.nn_conv import Conv2DTransposeAttrs
from aot.ir.ops.qnn import BroadcastAttrs, RequantizeAttrs
from aot.ir.quant import QuantizationError
from aot.ir.registry import RelationError, Solved, lookup
from aot.ir.types import TensorType, Type


def T(shape: Sequence[int], dtype: str) -> TensorType:
    return TensorType(tuple(shape), DType(dtype))


F32, I32 = T((), "float32"), T((), "int32")


def run(name: str, args: Sequence[np.ndarray], attrs: object) -> np.ndarray:
    op = lookup(name)
    assert op is not None
    types: list[Type] = [TensorType(np.shape(a), DType.from_numpy(np.asarray(a).dtype))
                         for a in args]
    out = op.rel(types, attrs)
    if isinstance(out, Solved):
        out = out.out
    assert isinstance(out, TensorType)
    result = np.asarray(op.compute([np.asarray(a) for a in args], attrs, out))
    assert result.shape == tuple(out.shape) and result.dtype == out.dtype.np
    return result


@pytest.mark.parametrize("name,args,attrs,message", [
    ("qnn.batch_matmul", [T((2, 3, 4), "float32"), T((2, 5, 4), "int8"), I32, I32, F32, F32],
     BatchMatmulAttrs(transpose_b=True), "x must be int8, uint8, int16"),
    ("qnn.batch_matmul", [T((2, 3, 4), "int8"), T((2, 5, 4), "int16"), I32, I32, F32, F32],
     BatchMatmulAttrs(transpose_b=True), "y must be int8, uint8, got"),
    ("qnn.batch_matmul", [T((2, 3, 4), "int8"), T((2, 5, 4), "int8"), I32, I32, F32, F32],
     BatchMatmulAttrs(), "reduced dimensions 4 and 5 do not match"),
    ("qnn.batch_matmul", [T((2, 3, 4), "int8"), T((3, 5, 4), "int8"), I32, I32, F32, F32],
     BatchMatmulAttrs(transpose_b=True), "batch dimensions 2 and 3"),
    ("qnn.batch_matmul", [T((3, 4), "int8"), T((2, 5, 4), "int8"), I32, I32, F32, F32],
     BatchMatmulAttrs(transpose_b=True), "rank-3"),
    ("qnn.batch_matmul", [T((2, 3, 4), "int8"), T((2, 5, 4), "int8"), I32, T((5,), "int32"),
                          F32, F32], BatchMatmulAttrs(transpose_b=True), "y_zero_point must be"),
    ("qnn.batch_matmul", [T((2, 3, 4), "int8"), T((2, 5, 4), "int8"), I32, I32, F32, F32],
     BatchMatmulAttrs(transpose_b=True, out_dtype=DType.INT16), "out_dtype must be int32"),
    ("qnn.conv2d_transpose", [T((1, 3, 4, 4), "int8"), T((4, 2, 3, 3), "int8"), I32, I32,
                              F32, F32], Conv2DTransposeAttrs(), "3 input channels"),
    ("qnn.conv2d_transpose", [T((1, 3, 4, 4), "int8"), T((3, 2, 3, 3), "int16"), I32, I32,
                              F32, F32], Conv2DTransposeAttrs(), "weight must be int8, uint8"),
    ("qnn.conv2d_transpose", [T((1, 3, 4, 4), "int32"), T((3, 2, 3, 3), "int8"), I32, I32,
                              F32, F32], Conv2DTransposeAttrs(), "data must be int8"),
    ("qnn.conv2d_transpose", [T((1, 3, 4, 4), "int8"), T((3, 2, 3, 3), "int8"), I32, I32, F32,
                              T((3,), "float32")], Conv2DTransposeAttrs(),
     "kernel_scale .* 2 elements"),
    ("qnn.conv2d_transpose", [T((1, 3, 4, 4), "int8"), T((3, 2, 3, 3), "int8"), T((2,), "int32"),
                              I32, F32, F32], Conv2DTransposeAttrs(), "input_zero_point must"),
    ("qnn.add", [T((2, 3), "int16"), T((2, 3), "int8")] + [F32, I32] * 3, BroadcastAttrs(),
     "same dtype"),
])
def test_relation_rejects(name: str, args: list[Type], attrs: object, message: str) -> None:
    with pytest.raises(RelationError, match=message):
        lookup(name).rel(args, attrs)  # type: ignore[union-attr]


def test_relations_give_types():
    rel = lookup("qnn.batch_matmul").rel  # type: ignore[union-attr]
    out = rel([T((1, 4, 3), "int16"), T((5, 4, 6), "uint8"), I32, I32, F32, F32],
              BatchMatmulAttrs(transpose_a=True, out_dtype=DType.INT64))
    assert out == T((5, 3, 6), "int64")
    rel = lookup("qnn.conv2d_transpose").rel  # type: ignore[union-attr]
    out = rel([T((1, 4, 5, 3), "int8"), T((5, 3, 3, 3), "int8"), I32, T((5,), "int32"), F32,
               T((5,), "float32")],
              Conv2DTransposeAttrs(strides=(2, 2), padding=(1, 1), output_padding=(1, 0),
                                   data_layout="NHWC", kernel_layout="OHWI"))
    assert out == T((1, 8, 9, 5), "int32")


def test_batch_matmul_against_loops():
    rng = np.random.default_rng(0)
    x = rng.integers(-128, 128, (2, 4, 3)).astype(np.int8)     # transposed: (B, K, M)
    y = rng.integers(0, 256, (1, 5, 4)).astype(np.uint8)       # transposed: (B, N, K)
    got = run("qnn.batch_matmul", [x, y, np.int32(-7), np.int32(130), np.float32(0.5),
                                   np.float32(0.25)],
              BatchMatmulAttrs(transpose_a=True, transpose_b=True))
    want = np.zeros((2, 3, 5), np.int64)
    for b in range(2):
        for m in range(3):
            for n in range(5):
                want[b, m, n] = sum((int(x[b, k, m]) + 7) * (int(y[0, n, k]) - 130)
                                    for k in range(4))
    assert np.array_equal(got, want)


def test_conv2d_transpose_against_scatter_loops():
    """Grouped, strided, padded, per-channel kernel zero points: every input
    pixel scatters its products (TFLite's TransposeConv loop), cropped."""
    rng = np.random.default_rng(1)
    n, c, h, w, g, og, kh, kw, s, pad = 1, 4, 3, 3, 2, 3, 3, 2, 2, (1, 0, 0, 1)
    x = rng.integers(-128, 128, (n, c, h, w)).astype(np.int8)
    wt = rng.integers(-128, 128, (c, og, kh, kw)).astype(np.int8)       # IOHW
    kz = np.arange(g * og, dtype=np.int32) - 2
    attrs = Conv2DTransposeAttrs(strides=(s, s), padding=pad, groups=g, channels=g * og)
    got = run("qnn.conv2d_transpose", [x, wt, np.int32(5), kz, np.float32(1),
                                       np.ones(g * og, np.float32)], attrs)
    full = np.zeros((n, g * og, (h - 1) * s + kh, (w - 1) * s + kw), np.int64)
    for ci in range(c):
        grp = ci // (c // g)
        for o in range(og):
            oc = grp * og + o
            for i in range(h):
                for j in range(w):
                    for a in range(kh):
                        for b in range(kw):
                            full[0, oc, i * s + a, j * s + b] += \
                                (int(x[0, ci, i, j]) - 5) * (int(wt[ci, o, a, b]) - int(kz[oc]))
    top, left, bottom, right = pad
    want = full[:, :, top:full.shape[2] - bottom, left:full.shape[3] - right]
    assert np.array_equal(got, want)


def tflite_multiply_int64(x: int, m: int, s: int) -> int:
    """TFLite's ``MultiplyByQuantizedMultiplier(int64_t, int32_t, int)``."""
    reduced = (m + (1 << 15)) >> 16 if m < 0x7FFF0000 else 0x7FFF
    total = 15 - s
    return (x * reduced + (1 << (total - 1))) >> total


def test_requantize_tflite_int64_against_formula():
    rng = np.random.default_rng(2)
    x = np.concatenate([rng.integers(-(1 << 40), 1 << 40, 200),
                        np.array([0, 1, -1, 1 << 46, -(1 << 46)])]).astype(np.int64)
    for s_in, s_out in [(0.0001234, 0.05), (3.5, 0.07), (1e-7, 3e-4), (0.5, 1.0)]:
        attrs = RequantizeAttrs(rounding=RequantizeAttrs.from_raw(
            {"rounding": "TFLITE_INT64"}).rounding, out_dtype=DType.INT16)  # type: ignore
        got = run("qnn.requantize", [x, np.float32(s_in), np.int32(3), np.float32(s_out),
                                     np.int32(-2)], attrs)
        qm = quant.quantize_multiplier(float(np.float32(s_in)) / float(np.float32(s_out)))
        want = [min(max(quant.wrap_int32(tflite_multiply_int64(int(v) - 3, qm.multiplier,
                                                                qm.shift)) - 2, -32768), 32767)
                for v in x]
        assert got.tolist() == want, (s_in, s_out)


def test_requantize_tflite_int64_rejects_large_factors():
    attrs = RequantizeAttrs.from_raw({"rounding": "TFLITE_INT64", "out_dtype": "int32"})
    with pytest.raises(QuantizationError, match="below 128"):
        run("qnn.requantize", [np.array([1], np.int64), np.float32(300), np.int32(0),
                               np.float32(1), np.int32(0)], attrs)
    with pytest.raises(AttrError, match="integer arithmetic"):
        RequantizeAttrs.from_raw({"rounding": "TFLITE_INT64", "compute_dtype": "float32"})


def tflite_add(a: int, b: int, sa: float, sb: float, so: float, left: int) -> int:
    """TFLite's general-scale ADD (zero points 0), from its formulas."""
    twice = 2 * max(sa, sb)
    ma = quant.quantize_multiplier_smaller_than_one_exp(sa / twice)
    mb = quant.quantize_multiplier_smaller_than_one_exp(sb / twice)
    mo = quant.quantize_multiplier_smaller_than_one_exp(twice / ((1 << left) * so))

    def mul(v: int, q: quant.QuantizedMultiplier) -> int:
        return int(quant.multiply_by_quantized_multiplier_smaller_than_one_exp(
            np.int64(v), q.multiplier, q.shift))
    return mul(mul(a << left, ma) + mul(b << left, mb), mo)


def test_int16_add_uses_15_bits_of_headroom():
    rng = np.random.default_rng(3)
    a = rng.integers(-32768, 32768, (3, 8)).astype(np.int16)
    b = rng.integers(-32768, 32768, (8,)).astype(np.int16)
    sa, sb, so = (float(np.float32(v)) for v in (0.0003, 0.0002, 0.00045))
    got = run("qnn.add", [a, b, np.float32(sa), np.int32(0), np.float32(sb), np.int32(0),
                          np.float32(so), np.int32(0)], BroadcastAttrs())
    want = [[min(max(tflite_add(int(a[i, j]), int(b[j]), sa, sb, so, 15), -32768), 32767)
             for j in range(8)] for i in range(3)]
    assert got.dtype == np.int16 and got.tolist() == want
