"""The qnn operator family: relations (accepting and rejecting), exact
integer references against hand-worked TFLite cases and independent
scalar references (exact rationals, direct loops), properties, attrs, and
the text format end to end."""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Sequence

import numpy as np
import pytest
from cases import qnn as qnn_cases
from hypothesis import given, settings
from hypothesis import strategies as st

import aot
from aot.diagnostics import DiagnosticError
from aot.ir import quant
from aot.ir.attrs import AttrError
from aot.ir.dtype import DType
from aot.ir.ops.qnn import (BroadcastAttrs, DequantizeAttrs, FixedPointMultiplyAttrs,
                            QnnConcatenateAttrs, QuantizeAttrs, RequantizeAttrs)
from aot.ir.ops.qnn_linear import QnnConv2DAttrs, QnnDenseAttrs
from aot.ir.registry import PatternKind, RelationError, Solved, lookup
from aot.ir.types import ANY, IncompleteType, TensorType, TupleType, Type

QNN_OPS = ["qnn.quantize", "qnn.dequantize", "qnn.requantize", "qnn.add", "qnn.subtract",
           "qnn.mul",
           "qnn.concatenate", "qnn.dense", "qnn.conv2d", "fixed_point_multiply"]


def T(shape: Sequence[object], dtype: str) -> TensorType:
    return TensorType(tuple(shape), DType(dtype))


F32 = T((), "float32")
I32 = T((), "int32")


def f32(x: object) -> np.ndarray:
    return np.asarray(x, dtype=np.float32)


def i32(x: object) -> np.ndarray:
    return np.asarray(x, dtype=np.int32)


def run(name: str, args: Sequence[object], attrs: object) -> np.ndarray:
    """Relation then compute, as the interpreter does."""
    op = lookup(name)
    assert op is not None
    types: list[Type] = [
        TupleType(tuple(TensorType(np.shape(a), DType.from_numpy(np.asarray(a).dtype))
                        for a in arg)) if isinstance(arg, tuple)
        else TensorType(np.shape(arg), DType.from_numpy(np.asarray(arg).dtype))
        for arg in args]
    out = op.rel(types, attrs)
    if isinstance(out, Solved):
        out = out.out
    assert isinstance(out, TensorType)
    result = op.compute(list(args), attrs, out)
    assert result.dtype == out.dtype.np and result.shape == out.shape
    return result


# ----------------------------------------------------------- exact references

def srdhm(a: int, b: int) -> int:
    if a == b == quant.INT32_MIN:
        return quant.INT32_MAX
    return math.floor(Fraction(a * b, 1 << 31) + Fraction(1, 2))


def half_away(v: Fraction) -> int:
    magnitude = math.floor(abs(v) + Fraction(1, 2))
    return magnitude if v >= 0 else -magnitude


def rdbpot(x: int, e: int) -> int:
    return half_away(Fraction(x, 1 << e))


def wrap32(v: int) -> int:
    return (v + (1 << 31)) % (1 << 32) - (1 << 31)


def clamp(v: int, dtype: str) -> int:
    info = np.iinfo(dtype)
    return max(int(info.min), min(int(info.max), v))


def apply_multiplier(x: int, real: float, rounding: str) -> int:
    qm = quant.quantize_multiplier(real)
    m, s = qm.multiplier, qm.shift
    if rounding == "TFLITE":
        return rdbpot(srdhm(wrap32(x << max(s, 0)), m), max(-s, 0))
    exact = Fraction(x * m) * Fraction(2) ** (s - 31)
    r = math.floor(exact + Fraction(1, 2)) if rounding == "UPWARD" else half_away(exact)
    return wrap32(r)


def requantize_ref(x: int, in_scale: float, in_zp: int, out_scale: float, out_zp: int,
                   rounding: str, out_dtype: str) -> int:
    real = float(np.float32(in_scale)) / float(np.float32(out_scale))
    y = apply_multiplier(wrap32(x - in_zp), real, rounding)
    return clamp(wrap32(y + out_zp), out_dtype)


def tflite_add_ref(a: int, b: int, sa: float, za: int, sb: float, zb: int, so: float,
                   zo: int, dtype: str, sign: int = 1) -> int:
    """TFLite's reference AddFunc (``sign=-1``: SubElementwise, the
    difference of the rescaled operands), step by step on Python integers."""
    sa, sb, so = (float(np.float32(s)) for s in (sa, sb, so))
    twice = 2 * max(sa, sb)
    m1 = quant.quantize_multiplier(sa / twice)
    m2 = quant.quantize_multiplier(sb / twice)
    mo = quant.quantize_multiplier(twice / ((1 << 20) * so))
    x = rdbpot(srdhm((a - za) << 20, m1.multiplier), -m1.shift)
    y = rdbpot(srdhm((b - zb) << 20, m2.multiplier), -m2.shift)
    out = rdbpot(srdhm(x + sign * y, mo.multiplier), -mo.shift) + zo
    return clamp(out, dtype)


def tflite_mul_ref(a: int, b: int, sa: float, za: int, sb: float, zb: int, so: float,
                   zo: int, dtype: str) -> int:
    sa, sb, so = (float(np.float32(s)) for s in (sa, sb, so))
    return clamp(apply_multiplier((a - za) * (b - zb), sa * sb / so, "TFLITE") + zo, dtype)


# ------------------------------------------------------------------ registry

@pytest.mark.parametrize("name", QNN_OPS)
def test_registry_columns(name: str) -> None:
    op = lookup(name)
    assert op is not None and op.family == "qnn"
    assert op.doc and callable(op.rel) and callable(op.compute)
    assert op.attrs_type().to_raw() == {}


@pytest.mark.parametrize("name, arity, pattern", [
    ("qnn.quantize", 3, PatternKind.BROADCAST), ("qnn.dequantize", 3, PatternKind.BROADCAST),
    ("qnn.requantize", 5, PatternKind.BROADCAST), ("qnn.add", 8, PatternKind.BROADCAST),
    ("qnn.subtract", 8, PatternKind.BROADCAST),
    ("qnn.mul", 8, PatternKind.BROADCAST), ("qnn.concatenate", 5, PatternKind.INJECTIVE),
    ("qnn.dense", 6, PatternKind.OUT_ELEMWISE_FUSABLE),
    ("qnn.conv2d", 6, PatternKind.OUT_ELEMWISE_FUSABLE),
    ("fixed_point_multiply", 1, PatternKind.ELEMWISE),
])
def test_arity_and_pattern(name: str, arity: int, pattern: PatternKind) -> None:
    op = lookup(name)
    assert op is not None and (op.arity, op.pattern) == (arity, pattern)


# --------------------------------------------------------------------- attrs

@pytest.mark.parametrize("cls, raw", [
    (QuantizeAttrs, {"axis": 1, "out_dtype": "uint8"}),
    (DequantizeAttrs, {"axis": 0, "out_dtype": "float16"}),
    (RequantizeAttrs, {"axis": 1, "rounding": "TONEAREST", "compute_dtype": "int64",
                       "out_dtype": "int16"}),
    (RequantizeAttrs, {"rounding": "TFLITE"}),
    (RequantizeAttrs, {"rounding": "UPWARD", "compute_dtype": "float32"}),
    (BroadcastAttrs, {"lhs_axis": 1, "rhs_axis": 0}),
    (QnnConcatenateAttrs, {"axis": 1}),
    (FixedPointMultiplyAttrs, {"multiplier": 2080045879, "shift": -4}),
    (QnnDenseAttrs, {"units": 16, "out_dtype": "int32"}),
    (QnnConv2DAttrs, {"strides": [2, 2], "padding": [1, 1, 1, 1], "dilation": [2, 1],
                      "groups": 4, "channels": 8, "kernel_size": [3, 3],
                      "data_layout": "NHWC", "kernel_layout": "HWOI", "out_dtype": "int64"}),
])
def test_attrs_round_trip(cls: type, raw: dict) -> None:
    attrs = cls.from_raw(raw)
    assert attrs.to_raw() == raw
    assert cls.from_raw(attrs.to_raw()) == attrs


@pytest.mark.parametrize("cls, raw, message", [
    (QuantizeAttrs, {"out_dtype": "float32"}, "out_dtype must be one of"),
    (DequantizeAttrs, {"out_dtype": "int8"}, "float16, float32"),
    (RequantizeAttrs, {"out_dtype": "uint16"}, "out_dtype must be one of"),
    (RequantizeAttrs, {"rounding": "DOWNWARD"}, "'TONEAREST'"),
    (RequantizeAttrs, {"rounding": "TFLITE", "compute_dtype": "float32"}, "int64"),
    (FixedPointMultiplyAttrs, {"shift": 40}, "shift 40"),
    (FixedPointMultiplyAttrs, {"multiplier": 1 << 31}, "not an int32"),
    (QnnDenseAttrs, {"out_dtype": "int16"}, "int32, int64"),
    (QnnConv2DAttrs, {"strides": [0, 1]}, "strides"),
    (QnnConv2DAttrs, {"padding": [1, 1, 1]}, "padding"),
    (QnnConv2DAttrs, {"data_layout": "NCWH"}, "data_layout"),
    (QnnConv2DAttrs, {"kernel_layout": "IOHW"}, "kernel_layout"),
    (QnnConv2DAttrs, {"groups": 0}, "groups"),
    (QnnConv2DAttrs, {"kernel_sizes": [3, 3]}, "unknown attribute"),
])
def test_attrs_reject(cls: type, raw: dict, message: str) -> None:
    with pytest.raises(AttrError, match=message):
        cls.from_raw(raw)


# ----------------------------------------------------------------- relations

X23 = T((2, 3), "int8")
F23 = T((2, 3), "float32")


@pytest.mark.parametrize("name, args, attrs, expected", [
    ("qnn.quantize", [F23, F32, I32], QuantizeAttrs(), X23),
    ("qnn.quantize", [F23, T((3,), "float32"), T((3,), "int32")], QuantizeAttrs(axis=1),
     T((2, 3), "int8")),
    ("qnn.quantize", [F23, T((2,), "float32"), I32], QuantizeAttrs(axis=0, out_dtype=DType.UINT8),
     T((2, 3), "uint8")),
    ("qnn.quantize", [F23, T((1,), "float32"), I32], QuantizeAttrs(axis=7), X23),
    ("qnn.quantize", [T((ANY, 3), "float32"), T((3,), "float32"), I32], QuantizeAttrs(),
     T((ANY, 3), "int8")),
    ("qnn.quantize", [T((2, ANY), "float32"), T((5,), "float32"), I32], QuantizeAttrs(),
     T((2, ANY), "int8")),
    ("qnn.dequantize", [X23, F32, I32], DequantizeAttrs(), F23),
    ("qnn.dequantize", [T((4,), "int32"), T((4,), "float32"), T((4,), "int32")],
     DequantizeAttrs(out_dtype=DType.FLOAT16), T((4,), "float16")),
    ("qnn.requantize", [T((2, 3), "int32"), T((3,), "float32"), I32, F32, I32],
     RequantizeAttrs(axis=-1), X23),
    ("qnn.requantize", [T((), "int64"), F32, I32, F32, I32],
     RequantizeAttrs(out_dtype=DType.INT32), T((), "int32")),
    ("qnn.add", [X23, T((3,), "int8"), F32, I32, F32, I32, F32, I32], BroadcastAttrs(), X23),
    ("qnn.mul", [T((2, 1), "uint8"), T((1, 4), "uint8"), T((2,), "float32"), I32, F32, I32,
                 F32, I32], BroadcastAttrs(lhs_axis=0), T((2, 4), "uint8")),
    ("qnn.concatenate", [TupleType((X23, T((2, 5), "int8"))), TupleType((F32, F32)),
                         TupleType((I32, I32)), F32, I32], QnnConcatenateAttrs(axis=1),
     T((2, 8), "int8")),
    ("qnn.concatenate", [TupleType((T((ANY, 3), "int8"), T((2, 3), "int8"))),
                         TupleType((F32, F32)), TupleType((I32, I32)), F32, I32],
     QnnConcatenateAttrs(axis=0), T((ANY, 3), "int8")),
    ("qnn.concatenate", [TupleType((T((ANY, 3), "int8"), T((2, 3), "int8"))),
                         TupleType((F32, F32)), TupleType((I32, I32)), F32, I32],
     QnnConcatenateAttrs(axis=1), T((2, 6), "int8")),
    ("fixed_point_multiply", [T((4, 5), "int32")], FixedPointMultiplyAttrs(),
     T((4, 5), "int32")),
    ("qnn.dense", [T((2, 5), "int8"), T((3, 5), "int8"), I32, I32, F32, T((3,), "float32")],
     QnnDenseAttrs(units=3), T((2, 3), "int32")),
    ("qnn.dense", [T((4, 2, 5), "uint16"), T((3, 5), "uint8"), I32, T((3,), "int32"), F32, F32],
     QnnDenseAttrs(out_dtype=DType.INT64), T((4, 2, 3), "int64")),
    ("qnn.conv2d", [T((1, 3, 8, 8), "int8"), T((4, 3, 3, 3), "int8"), I32, I32, F32,
                    T((4,), "float32")], QnnConv2DAttrs(padding=(1,)), T((1, 4, 8, 8), "int32")),
    ("qnn.conv2d", [T((1, 9, 9, 8), "uint8"), T((3, 3, 8, 1), "uint8"), I32, I32, F32, F32],
     QnnConv2DAttrs(strides=(2, 2), groups=8, channels=8, kernel_size=(3, 3),
                    data_layout="NHWC", kernel_layout="HWOI"), T((1, 4, 4, 8), "int32")),
    ("qnn.conv2d", [T((2, 10, 7, 4), "int16"), T((6, 2, 2, 2), "int16"), I32, T((6,), "int32"),
                    F32, F32],
     QnnConv2DAttrs(dilation=(2, 3), groups=2, data_layout="NHWC", kernel_layout="OHWI",
                    out_layout="NCHW", out_dtype=DType.INT16), T((2, 6, 8, 4), "int16")),
    ("qnn.conv2d", [T((ANY, 3, ANY, 8), "int8"), T((4, 3, 3, 3), "int8"), I32, I32, F32, F32],
     QnnConv2DAttrs(padding=(0, 1)), T((ANY, 4, ANY, 8), "int32")),
])
def test_relation_accepts(name: str, args: list[Type], attrs: object, expected: Type) -> None:
    out = lookup(name).rel(args, attrs)  # type: ignore[union-attr]
    assert out == expected


@pytest.mark.parametrize("name, args, attrs, message", [
    ("qnn.quantize", [X23, F32, I32], QuantizeAttrs(),
     r"data must be float32, got Tensor\[\(2, 3\), int8\]"),
    ("qnn.quantize", [F23, T((), "float64"), I32], QuantizeAttrs(),
     "output_scale must be a float32"),
    ("qnn.quantize", [F23, F32, T((), "int8")], QuantizeAttrs(),
     "output_zero_point must be an? int32"),
    ("qnn.quantize", [F23, T((4,), "float32"), I32], QuantizeAttrs(axis=1),
     r"3 elements \(axis=1 of the data"),
    ("qnn.quantize", [F23, T((2, 3), "float32"), I32], QuantizeAttrs(), "1-D float32"),
    ("qnn.quantize", [F23, T((3,), "float32"), I32], QuantizeAttrs(axis=2),
     "axis=2 is out of range for a tensor of rank 2"),
    ("qnn.dequantize", [T((2,), "int64"), F32, I32], DequantizeAttrs(), "data must be int8"),
    ("qnn.requantize", [X23, F32, I32, T((3,), "float32"), I32], RequantizeAttrs(),
     "output_scale must be a float32 scalar"),
    ("qnn.requantize", [X23, F32, I32, F32, T((1,), "int32")], RequantizeAttrs(),
     "output_zero_point must be a int32 scalar"),
    ("qnn.requantize", [F23, F32, I32, F32, I32], RequantizeAttrs(), "data must be int8"),
    ("qnn.add", [X23, T((2, 3), "uint8"), F32, I32, F32, I32, F32, I32], BroadcastAttrs(),
     "same dtype"),
    ("qnn.add", [T((2, 3), "int32")] * 2 + [F32, I32, F32, I32, F32, I32], BroadcastAttrs(),
     "lhs must be int8, uint8, int16"),
    ("qnn.mul", [T((2, 3), "int16")] * 2 + [F32, I32, F32, I32, F32, I32], BroadcastAttrs(),
     "lhs must be int8, uint8, got"),
    ("qnn.mul", [X23, T((4,), "int8"), F32, I32, F32, I32, F32, I32], BroadcastAttrs(),
     "do not broadcast"),
    ("qnn.mul", [X23, X23, F32, I32, T((2,), "float32"), I32, F32, I32], BroadcastAttrs(),
     r"rhs_scale .* 3 elements \(rhs_axis=-1"),
    ("qnn.concatenate", [X23, TupleType((F32,)), TupleType((I32,)), F32, I32],
     QnnConcatenateAttrs(), "data must be a tuple"),
    ("qnn.concatenate", [TupleType((X23, X23)), TupleType((F32,)), TupleType((I32, I32)), F32,
                         I32], QnnConcatenateAttrs(), "input_scales has 1 elements for 2"),
    ("qnn.concatenate", [TupleType((X23, T((2, 4), "int8"))), TupleType((F32, F32)),
                         TupleType((I32, I32)), F32, I32], QnnConcatenateAttrs(axis=0),
     "dimension 1 of the second input"),
    ("qnn.concatenate", [TupleType((X23, T((2,), "int8"))), TupleType((F32, F32)),
                         TupleType((I32, I32)), F32, I32], QnnConcatenateAttrs(), "rank 1"),
    ("qnn.concatenate", [TupleType((X23, X23)), TupleType((F32, T((), "float64"))),
                         TupleType((I32, I32)), F32, I32], QnnConcatenateAttrs(),
     r"input_scales\[1\] must be a float32 scalar"),
    ("fixed_point_multiply", [T((3,), "int8")], FixedPointMultiplyAttrs(), "data must be int32"),
    ("qnn.dense", [T((2, 5), "int8"), T((3, 4), "int8"), I32, I32, F32, F32], QnnDenseAttrs(),
     "last dimension 5 does not match the weight's input dimension 4"),
    ("qnn.dense", [T((2, 5), "int8"), T((3, 5), "int8"), I32, I32, F32, F32],
     QnnDenseAttrs(units=4), "units=4 does not match"),
    ("qnn.dense", [T((2, 5), "int8"), T((3, 5), "int8"), I32, I32, F32, T((4,), "float32")],
     QnnDenseAttrs(), "kernel_scale .* 3 elements"),
    ("qnn.dense", [T((2, 5), "int8"), T((3, 5), "int16"), I32, I32, F32, F32], QnnDenseAttrs(),
     "weight must be int8, uint8"),
    ("qnn.dense", [T((2, 5), "int8"), T((3, 5), "int8"), T((1,), "int32"), I32, F32, F32],
     QnnDenseAttrs(), "input_zero_point must be a int32 scalar"),
    ("qnn.conv2d", [T((1, 3, 8, 8), "int8"), T((4, 4, 3, 3), "int8"), I32, I32, F32, F32],
     QnnConv2DAttrs(), "input channels 3 do not match the weight's 4 per group"),
    ("qnn.conv2d", [T((1, 6, 8, 8), "int8"), T((5, 3, 3, 3), "int8"), I32, I32, F32, F32],
     QnnConv2DAttrs(groups=2), "output channels 5 .* not divisible by groups=2"),
    ("qnn.conv2d", [T((1, 3, 8, 8), "int8"), T((4, 3, 3, 3), "int8"), I32, I32, F32, F32],
     QnnConv2DAttrs(channels=5), "channels=5 does not match the weight's 4"),
    ("qnn.conv2d", [T((1, 3, 8, 8), "int8"), T((4, 3, 3, 3), "int8"), I32, I32, F32, F32],
     QnnConv2DAttrs(kernel_size=(5, 5)), r"kernel_size=\[5, 5\] does not match"),
    ("qnn.conv2d", [T((1, 3, 2, 8), "int8"), T((4, 3, 3, 3), "int8"), I32, I32, F32, F32],
     QnnConv2DAttrs(), "dilated kernel height 3 is larger than the padded input height 2"),
    ("qnn.conv2d", [T((1, 3, 8, 8), "int8"), T((4, 3, 3, 3), "int8"), I32, I32, F32,
                    T((3,), "float32")], QnnConv2DAttrs(), "kernel_scale .* 4 elements"),
    ("qnn.conv2d", [T((1, 3, 8, 8), "float32"), T((4, 3, 3, 3), "int8"), I32, I32, F32, F32],
     QnnConv2DAttrs(), "data must be int8, uint8, int16"),
    ("qnn.conv2d", [T((3, 8, 8), "int8"), T((4, 3, 3, 3), "int8"), I32, I32, F32, F32],
     QnnConv2DAttrs(), "data must be 4-D"),
])
def test_relation_rejects(name: str, args: list[Type], attrs: object, message: str) -> None:
    with pytest.raises(RelationError, match=message):
        lookup(name).rel(args, attrs)  # type: ignore[union-attr]


def test_relation_waits_for_holes() -> None:
    hole = IncompleteType()
    assert lookup("qnn.quantize").rel([hole, F32, I32], QuantizeAttrs()) is None
    # whether a per-channel parameter is a scalar or a vector is not known yet
    assert lookup("qnn.quantize").rel([F23, hole, I32], QuantizeAttrs()) is None
    assert lookup("qnn.conv2d").rel([T((1, 3, 8, 8), "int8"), hole, I32, I32, F32, F32],
                                    QnnConv2DAttrs()) is None


def test_relation_solves_scalar_parameters() -> None:
    out = lookup("qnn.requantize").rel([X23, F32, I32, IncompleteType(), IncompleteType()],
                                       RequantizeAttrs())
    assert out == Solved(X23, (None, None, None, F32, I32))
    out = lookup("qnn.concatenate").rel(
        [TupleType((X23, X23)), IncompleteType(), TupleType((I32, IncompleteType())),
         F32, I32], QnnConcatenateAttrs())
    assert out == Solved(T((4, 3), "int8"),
                         (None, TupleType((F32, F32)), TupleType((I32, I32)), None, None))


# ------------------------------------------------------------------ quantize

@pytest.mark.parametrize("x, scale, zp, out_dtype, expected", [
    # ties round away from zero (C round): 0.5 -> 1, -0.5 -> -1, 1.5 -> 2, -2.5 -> -3
    ([0.25, -0.25, 0.75, -1.25], 0.5, 0, "int8", [1, -1, 2, -3]),
    ([0.25, -0.25, 0.75, -1.25], 0.5, -1, "int8", [0, -2, 1, -4]),
    # saturation at -128 / 127
    ([63.5, 64.0, 1e9, -64.0, -64.5, -1e9], 0.5, 0, "int8", [127, 127, 127, -128, -128, -128]),
    ([63.9, -63.75], 0.5, -1, "int8", [127, -128]),
    ([0.0, -0.2, 127.4, 200.0], 1.0, 128, "uint8", [128, 128, 255, 255]),
    ([-200.0, 0.4], 1.0, 0, "uint8", [0, 0]),
    ([np.nan, np.inf, -np.inf], 0.1, 5, "int8", [5, 127, -128]),
    ([np.nan], 1.0, 300, "uint8", [255]),
    ([40000.0, -40000.0, 12.5], 1.0, 0, "int16", [32767, -32768, 13]),
    ([3e9, -3e9, 1000.5], 1.0, 0, "int32", [2147483647, -2147483648, 1001]),
    # float32 division: 0.3f / 0.1f is within an ulp of 3, rounds to 3
    ([0.3], 0.1, 0, "int8", [3]),
])
def test_quantize_golden(x: list[float], scale: float, zp: int, out_dtype: str,
                         expected: list[int]) -> None:
    got = run("qnn.quantize", [f32(x), f32(scale), i32(zp)],
              QuantizeAttrs(out_dtype=DType(out_dtype)))
    assert got.tolist() == expected


def test_quantize_per_channel() -> None:
    x = f32([[1.0, 1.0, 1.0], [-1.0, -1.0, -1.0]])
    got = run("qnn.quantize", [x, f32([0.5, 0.25, 1.0]), i32([0, 10, -5])],
              QuantizeAttrs(axis=1))
    assert got.tolist() == [[2, 14, -4], [-2, 6, -6]]
    got = run("qnn.quantize", [x, f32([0.5, 0.25]), i32(0)], QuantizeAttrs(axis=0))
    assert got.tolist() == [[2, 2, 2], [-4, -4, -4]]


@settings(deadline=None, max_examples=150)
@given(st.floats(-200, 200, width=32), st.sampled_from([0.5, 0.1, 0.0078125, 1.7, 0.03]),
       st.integers(-128, 127))
def test_quantize_dequantize_round_trip(x: float, scale: float, zp: int) -> None:
    """Within half a quantization step, unless the value saturates."""
    q = run("qnn.quantize", [f32([x]), f32(scale), i32(zp)], QuantizeAttrs())
    back = run("qnn.dequantize", [q, f32(scale), i32(zp)], DequantizeAttrs())
    s = float(np.float32(scale))
    level = x / s + zp
    if -128 <= level <= 127:
        assert abs(float(back[0]) - x) <= s / 2 * (1 + 1e-5)
    else:
        assert int(q[0]) == (127 if level > 127 else -128)


@settings(deadline=None)
@given(st.integers(-128, 127), st.sampled_from([0.5, 0.1, 0.0078125, 3.0]),
       st.integers(-20, 20))
def test_dequantize_quantize_is_identity(q: int, scale: float, zp: int) -> None:
    """Every representable level survives dequantize -> quantize."""
    back = run("qnn.dequantize", [np.array([q], np.int8), f32(scale), i32(zp)],
               DequantizeAttrs())
    again = run("qnn.quantize", [back, f32(scale), i32(zp)], QuantizeAttrs())
    assert int(again[0]) == q


# ---------------------------------------------------------------- dequantize

@pytest.mark.parametrize("q, dtype, scale, zp, out_dtype, expected", [
    ([-128, 0, 127], "int8", 0.5, 0, "float32", [-64.0, 0.0, 63.5]),
    ([0, 128, 255], "uint8", 0.25, 128, "float32", [-32.0, 0.0, 31.75]),
    ([-32768, 32767], "int16", 1.0, -1, "float32", [-32767.0, 32768.0]),
    ([2 ** 31 - 1], "int32", 1.0, -1, "float32", [float(np.float32(-(2 ** 31)))]),  # wraps
    ([1000, -1000], "int16", 100.0, 0, "float16", [65504.0, -65504.0]),            # clamps
    ([3], "int8", 0.1, 0, "float32", [float(np.float32(3) * np.float32(0.1))]),
])
def test_dequantize_golden(q: list[int], dtype: str, scale: float, zp: int, out_dtype: str,
                           expected: list[float]) -> None:
    got = run("qnn.dequantize", [np.array(q, dtype), f32(scale), i32(zp)],
              DequantizeAttrs(out_dtype=DType(out_dtype)))
    assert got.tolist() == expected


def test_dequantize_per_channel() -> None:
    q = np.array([[10, 10], [20, 20], [30, 30]], np.int8)
    got = run("qnn.dequantize", [q, f32([1.0, 0.5, 0.25]), i32([0, 10, 30])],
              DequantizeAttrs(axis=0))
    assert got.tolist() == [[10.0, 10.0], [5.0, 5.0], [0.0, 0.0]]


# ---------------------------------------------------------------- requantize

R = {"TFLITE": "TFLITE", "UPWARD": "UPWARD", "TONEAREST": "TONEAREST", "None": "UPWARD"}


@pytest.mark.parametrize("rounding, x, expected", [
    # scale ratio 0.5: ties; TFLite's SRDHM sends -2.5 to -2, TONEAREST to -3
    ("TFLITE", [5, -5, 3, -3, 7, -7], [3, -2, 2, -1, 4, -3]),
    ("UPWARD", [5, -5, 3, -3, 7, -7], [3, -2, 2, -1, 4, -3]),
    ("TONEAREST", [5, -5, 3, -3, 7, -7], [3, -3, 2, -2, 4, -4]),
    ("None", [5, -5, 3, -3, 7, -7], [3, -2, 2, -1, 4, -3]),
])
def test_requantize_ties(rounding: str, x: list[int], expected: list[int]) -> None:
    attrs = RequantizeAttrs.from_raw({"rounding": rounding})
    got = run("qnn.requantize", [i32(x), f32(1.0), i32(0), f32(2.0), i32(0)], attrs)
    assert got.tolist() == expected


@pytest.mark.parametrize("rounding, expected", [
    # ratio 0.25: -6 * 0.25 = -1.5; double rounding: SRDHM exact (-3), RDBPOT away -> -2
    ("TFLITE", [2, -2, -1, -1]),      # -0.5: SRDHM exact (-1), RDBPOT away -> -1
    ("UPWARD", [2, -1, -1, 0]),
    ("TONEAREST", [2, -2, -1, -1]),
])
def test_requantize_quarter(rounding: str, expected: list[int]) -> None:
    attrs = RequantizeAttrs.from_raw({"rounding": rounding})
    got = run("qnn.requantize", [i32([6, -6, -3, -2]), f32(0.25), i32(0), f32(1.0), i32(0)],
              attrs)
    assert got.tolist() == expected


@pytest.mark.parametrize("out_dtype, x, expected", [
    ("int8", [1000, -1000, 254, 256, -258], [127, -128, 127, 127, -128]),
    ("uint8", [1000, -1000, 254, 256], [255, 0, 127, 128]),
    ("int16", [1 << 20, -(1 << 20)], [32767, -32768]),
    ("int32", [2 ** 31 - 1, -(2 ** 31)], [2 ** 30, -(2 ** 30)]),
])
def test_requantize_saturates(out_dtype: str, x: list[int], expected: list[int]) -> None:
    attrs = RequantizeAttrs(out_dtype=DType(out_dtype), rounding=quant_rounding("TFLITE"))
    got = run("qnn.requantize", [i32(x), f32(0.5), i32(0), f32(1.0), i32(0)], attrs)
    assert got.tolist() == expected


def quant_rounding(name: str) -> object:
    return RequantizeAttrs.from_raw({"rounding": name}).rounding


def test_requantize_zero_points_and_int64_input() -> None:
    # int64 input is truncated to int32 first (TVM's cast): 2**32 + 6 -> 6
    x = np.array([2 ** 32 + 6, 10], np.int64)
    got = run("qnn.requantize", [x, f32(0.5), i32(2), f32(1.0), i32(-3)],
              RequantizeAttrs(rounding=quant_rounding("TFLITE")))
    assert got.tolist() == [-1, 1]


def test_requantize_per_channel_matches_slices() -> None:
    rng = np.random.default_rng(0)
    x = rng.integers(-2000, 2000, size=(2, 4, 3)).astype(np.int32)
    scales = f32([0.3, 0.07, 1.9, 0.5])
    zps = i32([3, -7, 0, 100])
    for rounding in ("TFLITE", "UPWARD", "TONEAREST"):
        attrs = RequantizeAttrs(axis=1, rounding=quant_rounding(rounding))
        got = run("qnn.requantize", [x, scales, zps, f32(0.4), i32(-5)], attrs)
        for c in range(4):
            alone = run("qnn.requantize", [x[:, c], scales[c], zps[c], f32(0.4), i32(-5)],
                        RequantizeAttrs(rounding=attrs.rounding))
            assert np.array_equal(got[:, c], alone)


scales_st = st.floats(2.0 ** -13, 2.0 ** 10, width=32)


@settings(deadline=None, max_examples=150)
@given(st.lists(st.integers(-(2 ** 31), 2 ** 31 - 1), min_size=1, max_size=6), scales_st,
       st.integers(-1000, 1000), scales_st, st.integers(-128, 127),
       st.sampled_from(["TFLITE", "UPWARD", "TONEAREST"]),
       st.sampled_from(["int8", "uint8", "int16", "int32"]))
def test_requantize_matches_exact_reference(x: list[int], s_in: float, z_in: int, s_out: float,
                                            z_out: int, rounding: str, out_dtype: str) -> None:
    if s_in / s_out >= 2 ** 30:
        return
    attrs = RequantizeAttrs(rounding=quant_rounding(rounding), out_dtype=DType(out_dtype))
    got = run("qnn.requantize", [i32(x), f32(s_in), i32(z_in), f32(s_out), i32(z_out)], attrs)
    ratio = s_in / s_out
    for v, g in zip(x, got.tolist()):
        if abs(wrap32(v - z_in)) * ratio < 2 ** 30:   # beyond, the int32 result wraps
            assert g == requantize_ref(v, s_in, z_in, s_out, z_out, rounding, out_dtype)


@settings(deadline=None)
@given(st.lists(st.integers(-128, 127), min_size=1, max_size=8), scales_st,
       st.integers(-128, 127),
       st.sampled_from(["None", "TFLITE", "UPWARD", "TONEAREST"]),
       st.sampled_from(["None", "int64", "float32", "float64"]))
def test_requantize_same_parameters_is_identity(x: list[int], scale: float, zp: int,
                                                rounding: str, compute: str) -> None:
    if rounding == "TFLITE" and compute.startswith("float"):
        return
    attrs = RequantizeAttrs.from_raw({"rounding": rounding, "compute_dtype": compute})
    data = np.array(x, np.int8)
    got = run("qnn.requantize", [data, f32(scale), i32(zp), f32(scale), i32(zp)], attrs)
    assert np.array_equal(got, data)


@settings(deadline=None)
@given(st.lists(st.integers(-(2 ** 20), 2 ** 20), min_size=1, max_size=6), scales_st,
       scales_st, st.sampled_from(["TFLITE", "UPWARD", "TONEAREST"]))
def test_requantize_is_close_to_real_rescaling(x: list[int], s_in: float, s_out: float,
                                               rounding: str) -> None:
    attrs = RequantizeAttrs(rounding=quant_rounding(rounding), out_dtype=DType.INT32)
    if s_in / s_out >= 2 ** 30:
        return
    got = run("qnn.requantize", [i32(x), f32(s_in), i32(0), f32(s_out), i32(0)], attrs)
    ratio = Fraction(float(np.float32(s_in))) / Fraction(float(np.float32(s_out)))
    for v, g in zip(x, got.tolist()):
        if abs(v * ratio) < 2 ** 30:
            assert abs(g - v * ratio) <= 1


@pytest.mark.parametrize("compute, rounding, expected", [
    ("float32", "UPWARD", [-2, 3, -1, 2]),
    ("float32", "TONEAREST", [-3, 3, -2, 2]),
    ("float64", "UPWARD", [-2, 3, -1, 2]),
    ("float64", "None", [-2, 3, -1, 2]),
])
def test_requantize_float_compute(compute: str, rounding: str, expected: list[int]) -> None:
    attrs = RequantizeAttrs.from_raw({"compute_dtype": compute, "rounding": rounding})
    got = run("qnn.requantize", [i32([-5, 5, -3, 3]), f32(0.5), i32(0), f32(1.0), i32(0)],
              attrs)
    assert got.tolist() == expected


def test_requantize_float_upward_rounds_the_bias_addition() -> None:
    """TVM's float UPWARD is floor(t + 0.5) with the addition rounded in
    float32: 0.49999997f + 0.5f == 1.0f."""
    attrs = RequantizeAttrs.from_raw({"compute_dtype": "float32", "rounding": "UPWARD",
                                      "out_dtype": "int32"})
    s_in = float(np.float32(0.49999997))
    got = run("qnn.requantize", [i32([1]), f32(s_in), i32(0), f32(1.0), i32(0)], attrs)
    assert got.tolist() == [1]
    attrs = RequantizeAttrs.from_raw({"out_dtype": "int32"})
    got = run("qnn.requantize", [i32([1]), f32(s_in), i32(0), f32(1.0), i32(0)], attrs)
    assert got.tolist() == [0]


@pytest.mark.parametrize("in_scale, out_scale, message", [
    (0.0, 1.0, "input_scale must be positive"),
    (1.0, 0.0, "output_scale must be positive"),
    (float("nan"), 1.0, "input_scale must be positive"),
    (2.0 ** 31, 1.0, "too large"),
])
def test_requantize_bad_scales(in_scale: float, out_scale: float, message: str) -> None:
    with pytest.raises(quant.QuantizationError, match=message):
        run("qnn.requantize", [i32([1]), f32(in_scale), i32(0), f32(out_scale), i32(0)],
            RequantizeAttrs())


# --------------------------------------------------------------- add and mul

def binary(name: str, lhs: object, rhs: object, ls: object, lz: object, rs: object, rz: object,
           os_: float, oz: int, attrs: BroadcastAttrs | None = None) -> np.ndarray:
    return run(name, [lhs, rhs, f32(ls), i32(lz), f32(rs), i32(rz), f32(os_), i32(oz)],
               attrs or BroadcastAttrs())


@pytest.mark.parametrize("lhs, rhs, params, expected", [
    # equal scales and zero points 0: the exact sum, saturated
    ([1, 2, 3, -128, 127, 100], [10, -10, 127, 10, -10, 100], (0.1, 0, 0.1, 0, 0.1, 0),
     [11, -8, 127, -118, 117, 127]),
    # 1.5 + 0.75 = 2.25 -> 4.5 output steps: ties away from zero in the final RDBPOT
    ([3, -3], [3, -3], (0.5, 0, 0.25, 0, 0.5, 0), [5, -5]),
    # zero points: (10-5)*0.5 + (2+2)*0.25 = 3.5 -> /0.25 = 14, + 1
    ([10], [2], (0.5, 5, 0.25, -2, 0.25, 1), [15]),
    # output saturation at the bottom
    ([-128, -100], [-128, 0], (1.0, 0, 1.0, 0, 0.5, 0), [-128, -128]),
    # -125 * 0.013f + -100 * 0.029f = -90.49999 output steps of 0.05f: TFLite's 20 bits
    # of headroom keep it above the tie (with 16 bits the result would be -91)
    ([-125], [-100], (0.013, 0, 0.029, 0, 0.05, 0), [-90]),
])
def test_add_golden(lhs: list[int], rhs: list[int], params: tuple, expected: list[int]) -> None:
    got = binary("qnn.add", np.array(lhs, np.int8), np.array(rhs, np.int8), *params)
    assert got.tolist() == expected


@pytest.mark.parametrize("lhs, rhs, params, expected", [
    # equal scales and zero points 0: the exact difference, saturated
    ([1, 2, 3, -128, 127, 100], [10, -10, 127, 10, -10, 100], (0.1, 0, 0.1, 0, 0.1, 0),
     [-9, 12, -124, -128, 127, 0]),
    # 1.5 - (-0.75) = 2.25 -> 4.5 output steps: ties away from zero in the final RDBPOT
    ([3, -3], [-3, 3], (0.5, 0, 0.25, 0, 0.5, 0), [5, -5]),
    # zero points: (10-5)*0.5 - (2+2)*0.25 = 1.5 -> /0.25 = 6, + 1
    ([10], [2], (0.5, 5, 0.25, -2, 0.25, 1), [7]),
    # -125 * 0.013f - 100 * 0.029f = -90.49999 output steps of 0.05f (as in the add case)
    ([-125], [100], (0.013, 0, 0.029, 0, 0.05, 0), [-90]),
    # 0.75 - 0.5 = 0.25 (0.5 output steps of 0.5) and 0.25 - 1.5 = -1.25 (-2.5
    # steps), both exact in the rescaled integers: ties away from zero
    ([3, 1], [1, 3], (0.25, 0, 0.5, 0, 0.5, 0), [1, -3]),
])
def test_subtract_golden(lhs: list[int], rhs: list[int], params: tuple,
                         expected: list[int]) -> None:
    got = binary("qnn.subtract", np.array(lhs, np.int8), np.array(rhs, np.int8), *params)
    assert got.tolist() == expected


def test_subtract_uint8_broadcasting_and_scale_check() -> None:
    lhs = np.array([[0], [128], [255]], np.uint8)
    rhs = np.array([[128, 200]], np.uint8)
    got = binary("qnn.subtract", lhs, rhs, 0.5, 128, 0.5, 128, 0.5, 128)
    assert got.tolist() == [[0, 0], [128, 56], [255, 183]]
    with pytest.raises(quant.QuantizationError, match="qnn.subtract: .*too small"):
        binary("qnn.subtract", np.array([1], np.int8), np.array([1], np.int8), 1.0, 0, 1.0, 0,
               1e-6, 0)


@pytest.mark.parametrize("lhs, rhs, params, expected", [
    # 3 * 1 * 0.5 = 1.5 -> 2 but -1.5 -> -1: TFLite's SRDHM rounds ties toward +infinity
    ([3, -3, 5, -5], [1, 1, 1, 1], (1.0, 0, 0.5, 0, 1.0, 0), [2, -1, 3, -2]),
    ([127, -128, 127], [127, 127, -128], (1.0, 0, 1.0, 0, 1.0, 0), [127, -128, -128]),
    # zero points: (10-2)*(-3+1) * 0.25*0.5/0.125 = -16, + 4
    ([10], [-3], (0.25, 2, 0.5, -1, 0.125, 4), [-12]),
    # a multiplier above one (left shift): 0.5 * 0.5 / 0.0625 = 4
    ([3, -7], [5, 5], (0.5, 0, 0.5, 0, 0.0625, 0), [60, -128]),
])
def test_mul_golden(lhs: list[int], rhs: list[int], params: tuple, expected: list[int]) -> None:
    got = binary("qnn.mul", np.array(lhs, np.int8), np.array(rhs, np.int8), *params)
    assert got.tolist() == expected


def test_binary_uint8_and_broadcasting() -> None:
    lhs = np.array([[0], [128], [255]], np.uint8)
    rhs = np.array([[128, 200]], np.uint8)
    got = binary("qnn.add", lhs, rhs, 0.5, 128, 0.5, 128, 0.5, 128)
    assert got.tolist() == [[0, 72], [128, 200], [255, 255]]
    got = binary("qnn.mul", lhs, rhs, 0.125, 128, 0.125, 128, 0.125, 128)
    expected = [[tflite_mul_ref(int(a), int(b), 0.125, 128, 0.125, 128, 0.125, 128, "uint8")
                 for b in rhs[0]] for a in lhs[:, 0]]
    assert got.tolist() == expected


int8_lists = st.lists(st.integers(-128, 127), min_size=1, max_size=6)


@settings(deadline=None, max_examples=150)
@given(st.data(), scales_st, st.integers(-128, 127), scales_st, st.integers(-128, 127),
       scales_st, st.integers(-128, 127))
def test_add_subtract_and_mul_match_tflite_reference(data: st.DataObject, sa: float, za: int, sb: float,
                                            zb: int, so: float, zo: int) -> None:
    n = data.draw(st.integers(1, 6))
    a = data.draw(st.lists(st.integers(-128, 127), min_size=n, max_size=n))
    b = data.draw(st.lists(st.integers(-128, 127), min_size=n, max_size=n))
    lhs, rhs = np.array(a, np.int8), np.array(b, np.int8)
    if 2 * max(sa, sb) / ((1 << 20) * so) < 1:
        for name, sign in (("qnn.add", 1), ("qnn.subtract", -1)):
            got = binary(name, lhs, rhs, sa, za, sb, zb, so, zo)
            assert got.tolist() == [tflite_add_ref(x, y, sa, za, sb, zb, so, zo, "int8", sign)
                                    for x, y in zip(a, b)]
    if sa * sb / so < 2 ** 30:
        got = binary("qnn.mul", lhs, rhs, sa, za, sb, zb, so, zo)
        assert got.tolist() == [tflite_mul_ref(x, y, sa, za, sb, zb, so, zo, "int8")
                                for x, y in zip(a, b)]


@settings(deadline=None)
@given(int8_lists, int8_lists, st.sampled_from([0.5, 0.02, 1.0, 0.0078125]))
def test_add_equal_scales_is_exact_sum(a: list[int], b: list[int], scale: float) -> None:
    n = min(len(a), len(b))
    lhs, rhs = np.array(a[:n], np.int8), np.array(b[:n], np.int8)
    got = binary("qnn.add", lhs, rhs, scale, 0, scale, 0, scale, 0)
    assert got.tolist() == [clamp(x + y, "int8") for x, y in zip(a, b)]


@settings(deadline=None)
@given(int8_lists, int8_lists, scales_st, scales_st, scales_st, st.integers(-50, 50))
def test_add_and_mul_commute(a: list[int], b: list[int], sa: float, sb: float, so: float,
                             zp: int) -> None:
    n = min(len(a), len(b))
    lhs, rhs = np.array(a[:n], np.int8), np.array(b[:n], np.int8)
    for name, ok in (("qnn.add", 2 * max(sa, sb) / ((1 << 20) * so) < 1),
                     ("qnn.mul", sa * sb / so < 2 ** 30)):
        if ok:
            assert np.array_equal(binary(name, lhs, rhs, sa, zp, sb, -zp, so, 3),
                                  binary(name, rhs, lhs, sb, -zp, sa, zp, so, 3))


def test_binary_per_channel_scales() -> None:
    lhs = np.array([[4, 4, 4], [-4, -4, -4]], np.int8)
    rhs = np.array([2, 2, 2], np.int8)
    attrs = BroadcastAttrs(lhs_axis=1)
    got = binary("qnn.add", lhs, rhs, f32([0.5, 0.25, 1.0]), 0, 0.5, 0, 0.5, 0, attrs)
    expected = [[tflite_add_ref(int(x), 2, s, 0, 0.5, 0, 0.5, 0, "int8")
                 for x, s in zip(row, (0.5, 0.25, 1.0))] for row in lhs]
    assert got.tolist() == expected == [[6, 4, 10], [-2, 0, -6]]


def test_add_output_scale_too_small() -> None:
    with pytest.raises(quant.QuantizationError, match="too small"):
        binary("qnn.add", np.array([1], np.int8), np.array([1], np.int8), 1.0, 0, 1.0, 0,
               1e-6, 0)


# --------------------------------------------------------------- concatenate

def test_concatenate_requantizes_with_upward_rounding() -> None:
    a = np.array([[1, -1], [3, -3]], np.int8)
    b = np.array([[5], [-5]], np.int8)
    got = run("qnn.concatenate",
              [(a, b), (f32(1.0), f32(0.5)), (i32(0), i32(0)), f32(1.0), i32(0)],
              QnnConcatenateAttrs(axis=1))
    # b: 2.5 -> 3 and -2.5 -> -2 (UPWARD); a passes unchanged
    assert got.tolist() == [[1, -1, 3], [3, -3, -2]]


def test_concatenate_zero_points_and_saturation() -> None:
    a = np.array([100, -100], np.int8)
    b = np.array([0, 1], np.int8)
    got = run("qnn.concatenate",
              [(a, b), (f32(2.0), f32(1.0)), (i32(10), i32(-50)), f32(1.0), i32(0)],
              QnnConcatenateAttrs(axis=0))
    assert got.tolist() == [127, -128, 50, 51]


@settings(deadline=None)
@given(st.lists(int8_lists, min_size=1, max_size=4), st.integers(-128, 127), scales_st)
def test_concatenate_same_parameters_is_plain(parts: list[list[int]], zp: int,
                                              scale: float) -> None:
    arrays = tuple(np.array(p, np.int8) for p in parts)
    got = run("qnn.concatenate", [arrays, tuple(f32(scale) for _ in arrays),
                                  tuple(i32(zp) for _ in arrays), f32(scale), i32(zp)],
              QnnConcatenateAttrs())
    assert np.array_equal(got, np.concatenate(arrays))


# ------------------------------------------------------- fixed_point_multiply

def test_fixed_point_multiply_corpus_parameters() -> None:
    x = i32([0, 1, 8, 9, 100, -100, 2 ** 31 - 1, -(2 ** 31)])
    got = run("fixed_point_multiply", [x], FixedPointMultiplyAttrs(multiplier=2080045879,
                                                                   shift=-4))
    expected = [math.floor(Fraction(v * 2080045879, 2 ** 35) + Fraction(1, 2))
                for v in x.tolist()]
    assert got.tolist() == expected


@pytest.mark.parametrize("multiplier, shift, x, expected", [
    (1 << 30, 0, [5, -5, 3, -3], [3, -2, 2, -1]),       # x * 0.5, ties toward +inf
    (1 << 30, 1, [7, -7], [7, -7]),                      # identity
    (1 << 30, 3, [2 ** 29], [-(2 ** 31)]),               # 2**31 wraps
    (-(1 << 30), 0, [5, -5], [-2, 3]),                   # a negative multiplier
])
def test_fixed_point_multiply_golden(multiplier: int, shift: int, x: list[int],
                                     expected: list[int]) -> None:
    got = run("fixed_point_multiply", [i32(x)],
              FixedPointMultiplyAttrs(multiplier=multiplier, shift=shift))
    assert got.tolist() == expected


# --------------------------------------------------------------------- dense

def dense_loop(x: np.ndarray, w: np.ndarray, xz: int, wz: Sequence[int]) -> np.ndarray:
    flat = x.reshape(-1, x.shape[-1])
    out = np.zeros((flat.shape[0], w.shape[0]), dtype=object)
    for r in range(flat.shape[0]):
        for u in range(w.shape[0]):
            out[r, u] = sum((int(flat[r, k]) - xz) * (int(w[u, k]) - wz[u])
                            for k in range(w.shape[1]))
    return out.reshape(x.shape[:-1] + (w.shape[0],))


@pytest.mark.parametrize("xshape, units, xdtype, wdtype, per_channel, out_dtype", [
    ((2, 5), 3, "int8", "int8", False, "int32"),
    ((3, 2, 7), 4, "uint8", "uint8", True, "int32"),
    ((1, 16), 2, "int16", "int8", True, "int64"),
    ((4, 3), 5, "uint16", "uint8", False, "int64"),
])
def test_dense_matches_loop(xshape: tuple, units: int, xdtype: str, wdtype: str,
                            per_channel: bool, out_dtype: str) -> None:
    rng = np.random.default_rng(1)
    xi, wi = np.iinfo(xdtype), np.iinfo(wdtype)
    x = rng.integers(xi.min, int(xi.max) + 1, size=xshape).astype(xdtype)
    w = rng.integers(wi.min, int(wi.max) + 1, size=(units, xshape[-1])).astype(wdtype)
    xz = 7
    wz = [int(v) for v in rng.integers(-20, 20, size=units)] if per_channel else [3] * units
    wz_arg = i32(wz) if per_channel else i32(3)
    got = run("qnn.dense", [x, w, i32(xz), wz_arg, f32(0.5), f32([0.1] * units)],
              QnnDenseAttrs(units=units, out_dtype=DType(out_dtype)))
    expected = dense_loop(x, w, xz, wz)
    assert np.array_equal(got, expected.astype(out_dtype))


def test_dense_int32_accumulator_wraps() -> None:
    x = np.full((1, 40000), 65535, np.uint16)
    w = np.full((1, 40000), 255, np.uint8)
    got = run("qnn.dense", [x, w, i32(0), i32(0), f32(1.0), f32(1.0)], QnnDenseAttrs())
    assert got.tolist() == [[wrap32(65535 * 255 * 40000)]]
    got = run("qnn.dense", [x, w, i32(0), i32(0), f32(1.0), f32(1.0)],
              QnnDenseAttrs(out_dtype=DType.INT64))
    assert got.tolist() == [[65535 * 255 * 40000]]


# -------------------------------------------------------------------- conv2d

def conv_loop(x: np.ndarray, w: np.ndarray, attrs: QnnConv2DAttrs, xz: int,
              wz: Sequence[int]) -> np.ndarray:
    """Direct loops over the output, reading through the layout strings."""
    dl, kl = attrs.data_layout, attrs.kernel_layout

    def xat(n: int, c: int, h: int, ww: int) -> int:
        idx = {"N": n, "C": c, "H": h, "W": ww}
        return int(x[tuple(idx[a] for a in dl)])

    def wat(o: int, i: int, h: int, ww: int) -> int:
        idx = {"O": o, "I": i, "H": h, "W": ww}
        return int(w[tuple(idx[a] for a in kl)])

    N, C, H, W = (x.shape[dl.index(a)] for a in "NCHW")
    O, I, KH, KW = (w.shape[kl.index(a)] for a in "OIHW")
    top, left, bottom, right = attrs.pads
    sh, sw = attrs.strides
    dh, dw = attrs.dilation
    OH = (H + top + bottom - dh * (KH - 1) - 1) // sh + 1
    OW = (W + left + right - dw * (KW - 1) - 1) // sw + 1
    per_group = O // attrs.groups
    out = np.zeros((N, O, OH, OW), dtype=np.int64)
    for n in range(N):
        for o in range(O):
            g = o // per_group
            for oh in range(OH):
                for ow in range(OW):
                    acc = 0
                    for i in range(I):
                        for kh in range(KH):
                            for kw in range(KW):
                                h = oh * sh + kh * dh - top
                                ww = ow * sw + kw * dw - left
                                if 0 <= h < H and 0 <= ww < W:
                                    xv = xat(n, g * I + i, h, ww) - xz
                                else:
                                    xv = 0    # padding holds the zero point
                                acc += xv * (wat(o, i, kh, kw) - wz[o])
                    out[n, o, oh, ow] = acc
    if attrs.result_layout == "NHWC":
        out = out.transpose(0, 2, 3, 1)
    return out


def layout_shape(layout: str, **dims: int) -> tuple[int, ...]:
    return tuple(dims[a] for a in layout)




@pytest.mark.parametrize("dl, kl, N, C, H, W, O, KH, KW, extra", qnn_cases.CONV_CASES)
@pytest.mark.parametrize("dtype, per_channel", [("int8", False), ("uint8", True),
                                                ("int16", True)])
def test_conv2d_matches_loop(dl: str, kl: str, N: int, C: int, H: int, W: int, O: int, KH: int,
                             KW: int, extra: dict, dtype: str, per_channel: bool) -> None:
    rng = np.random.default_rng(2)
    attrs = QnnConv2DAttrs(data_layout=dl, kernel_layout=kl, channels=O, kernel_size=(KH, KW),
                           **extra)
    I = C // attrs.groups
    lo, hi = (-100, 100) if dtype == "int16" else (int(np.iinfo(dtype).min),
                                                  int(np.iinfo(dtype).max))
    x = rng.integers(lo, hi + 1, size=layout_shape(dl, N=N, C=C, H=H, W=W)).astype(dtype)
    w = rng.integers(lo, hi + 1, size=layout_shape(kl, O=O, I=I, H=KH, W=KW)).astype(dtype)
    xz = int(rng.integers(-10, 10))
    wz = [int(v) for v in rng.integers(-10, 10, size=O)] if per_channel else [4] * O
    args = [x, w, i32(xz), i32(wz) if per_channel else i32(4), f32(0.5),
            f32(rng.uniform(0.01, 1.0, size=O)) if per_channel else f32(0.25)]
    got = run("qnn.conv2d", args, attrs)
    assert np.array_equal(got, conv_loop(x, w, attrs, xz, wz).astype(np.int32))


def test_conv2d_out_dtype_wraps() -> None:
    x = np.full((1, 1, 3, 3), 127, np.int8)
    w = np.full((1, 1, 3, 3), 127, np.int8)
    attrs = QnnConv2DAttrs(out_dtype=DType.INT16)
    got = run("qnn.conv2d", [x, w, i32(-128), i32(-128), f32(1.0), f32(1.0)], attrs)
    # (127 + 128)**2 * 9 = 585225 wraps to 585225 - 9 * 65536 = -4599 in int16
    assert got.tolist() == [[[[-4599]]]]


# --------------------------------------------------------------- text format

PROGRAM = """#[version = "0.0.5"]
def @main(%x: Tensor[(2, 3), float32], %w: Tensor[(4, 3), int8]) {
  %0 = qnn.quantize(%x, 0.5f, 1, out_dtype="int8");
  %1 = qnn.dense(%0, %w, 1, 0, 0.5f, 0.25f, units=4, out_dtype="int32");
  %2 = qnn.requantize(%1, 0.125f, 0, 0.25f, -3, rounding="TFLITE", out_dtype="int8");
  %3 = qnn.add(%2, %2, 0.25f, -3, 0.25f, -3, 0.5f, 0);
  %4 = qnn.mul(%3, %2, 0.5f, 0, 0.25f, -3, 1f, 0);
  %5 = qnn.concatenate((%3, %4), (0.5f, 1f), (0, 0), 0.5f, 0, axis=1);
  %6 = fixed_point_multiply(cast(%5, dtype="int32"), multiplier=1073741824, shift=0);
  (qnn.dequantize(%5, 0.5f, 0), %6)
}
"""


def test_program_type_checks_and_runs() -> None:
    mod = aot.infer_types(aot.parse(PROGRAM))
    x = f32([[0.3, -1.2, 2.0], [5.0, -0.26, 0.74]])
    w = np.array([[1, 2, 3], [-1, 0, 1], [4, -4, 2], [0, 0, 1]], np.int8)
    deq, fpm = aot.interpret(mod, x, w)
    # an independent pipeline of the scalar references above
    q0 = [clamp(half_away(Fraction(float(v)) / Fraction(0.5)) + 1, "int8") for v in x.ravel()]
    xq = np.array(q0).reshape(2, 3) - 1
    acc = xq @ w.astype(np.int64).T
    r = [[requantize_ref(int(v), 0.125, 0, 0.25, -3, "TFLITE", "int8") for v in row]
         for row in acc]
    a = [[tflite_add_ref(v, v, 0.25, -3, 0.25, -3, 0.5, 0, "int8") for v in row] for row in r]
    m = [[tflite_mul_ref(u, v, 0.5, 0, 0.25, -3, 1.0, 0, "int8") for u, v in zip(ra, rr)]
         for ra, rr in zip(a, r)]
    q = [ra + [requantize_ref(v, 1.0, 0, 0.5, 0, "UPWARD", "int8") for v in rm]
         for ra, rm in zip(a, m)]
    # the first row worked by hand: quantize [2, -1, 5]; dense [9, 3, 20, 4];
    # requantize (x0.5, TFLITE, -3) [2, -1, 7, -1]; add [5, 2, 10, 2]; mul (x0.125)
    # [3, 1, 13, 1] (0.5 and 12.5 round away from zero in RDBPOT); concatenate
    # requantizes mul by 2
    assert q[0] == [5, 2, 10, 2, 6, 2, 26, 2]
    assert deq.dtype == np.float32 and deq.tolist() == [[v * 0.5 for v in row] for row in q]
    assert fpm.tolist() == [[math.floor(v / 2 + 0.5) for v in row] for row in q]


def test_hole_parameters_are_inferred() -> None:
    text = """#[version = "0.0.5"]
def @main(%x: Tensor[(3), int32], %s, %z) {
  qnn.requantize(%x, 0.5f, 0, %s, %z, out_dtype="int8")
}
"""
    mod = aot.infer_types(aot.parse(text))
    got = aot.interpret(mod, i32([4, -4, 5]), f32(0.25), i32(1))
    assert got.tolist() == [9, -7, 11]


def test_type_error_is_a_diagnostic() -> None:
    text = """#[version = "0.0.5"]
def @main(%x: Tensor[(2, 3), int8]) {
  qnn.quantize(%x, 0.5f, 0)
}
"""
    with pytest.raises(DiagnosticError, match="qnn.quantize.*data must be float32"):
        aot.infer_types(aot.parse(text))


def test_bad_scale_is_a_diagnostic_at_run_time() -> None:
    text = """#[version = "0.0.5"]
def @main(%x: Tensor[(2), float32]) {
  qnn.quantize(%x, 0f, 0)
}
"""
    mod = aot.infer_types(aot.parse(text))
    with pytest.raises(DiagnosticError, match="output_scale must be positive"):
        aot.interpret(mod, f32([1.0, 2.0]))


def test_print_parse_round_trip() -> None:
    pytest.importorskip("aot.ir.printer", reason="the text printer has not landed yet")
    mod = aot.parse(PROGRAM)
    again = aot.parse(str(mod))
    assert str(again) == str(mod)
