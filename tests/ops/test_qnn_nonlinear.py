"""qnn.sigmoid, qnn.tanh, qnn.hardswish (aot/ir/ops/qnn_nonlinear.py) and
qnn.mean (aot/ir/ops/qnn_reduce.py): records and relations, hand-worked
values, and the references within one quantization step of the float
operator they approximate, over the rows of tests/cases/qnn_nonlinear.py
(bit-exactness against LiteRT is tests/frontend/test_tflite_qnn_nonlinear.py)."""

from __future__ import annotations

import numpy as np
import pytest

from aot.ir import quant
from aot.ir.dtype import DType
from aot.ir.ops.qnn_nonlinear import hard_swish_params, lookup_table
from aot.ir.ops.qnn_reduce import mean_multiplier
from aot.ir.ops.reduce import ReduceAttrs, reduce_axes
from aot.ir.attrs import Attrs
from aot.ir.registry import PatternKind, RelationError, lookup
from aot.ir.types import TensorType
from cases.qnn_nonlinear import ACTIVATIONS, MEANS

F32 = TensorType((), DType.FLOAT32)
I32 = TensorType((), DType.INT32)
ACTS = ["qnn.sigmoid", "qnn.tanh", "qnn.hardswish"]


def run(name: str, x: np.ndarray, params, attrs=None) -> np.ndarray:
    op = lookup(name)
    assert op is not None
    attrs = attrs if attrs is not None else op.attrs_type()
    out = op.rel([TensorType(x.shape, DType.from_numpy(x.dtype)), F32, I32, F32, I32], attrs)
    si, zi, so, zo = params
    args = [x, np.float32(si), np.int32(zi), np.float32(so), np.int32(zo)]
    return op.compute([np.asarray(a) for a in args], attrs, out)


@pytest.mark.parametrize("name", ACTS)
def test_activation_records_and_relations(name):
    op = lookup(name)
    assert op is not None and op.arity == 5 and op.family == "qnn"
    assert op.pattern is PatternKind.ELEMWISE
    assert op.rel([TensorType((2, 3), DType.UINT8), F32, I32, F32, I32], Attrs()) == \
        TensorType((2, 3), DType.UINT8)
    for bad in (DType.INT16, DType.INT32, DType.FLOAT32):
        with pytest.raises(RelationError, match="int8 or uint8"):
            op.rel([TensorType((3,), bad), F32, I32, F32, I32], Attrs())
    with pytest.raises(RelationError, match="input_scale must be a float32 scalar"):
        op.rel([TensorType((3,), DType.INT8), TensorType((3,), DType.FLOAT32), I32, F32, I32],
               Attrs())


def test_mean_record_and_relation():
    op = lookup("qnn.mean")
    assert op is not None and op.pattern is PatternKind.COMM_REDUCE
    x = TensorType((2, 3, 4), DType.INT16)
    assert op.rel([x, F32, I32, F32, I32], ReduceAttrs(axis=(1,), keepdims=True)) == \
        TensorType((2, 1, 4), DType.INT16)
    assert op.rel([x, F32, I32, F32, I32], ReduceAttrs(axis=(1,), exclude=True)) == \
        TensorType((3,), DType.INT16)
    with pytest.raises(RelationError, match="int8, uint8 or int16"):
        op.rel([TensorType((3,), DType.INT32), F32, I32, F32, I32], ReduceAttrs())
    with pytest.raises(RelationError):
        op.rel([x, F32, I32, F32, I32], ReduceAttrs(axis=(3,)))
    with pytest.raises(RelationError, match="output_zero_point must be a int32 scalar"):
        op.rel([x, F32, I32, F32, TensorType((2,), DType.INT32)], ReduceAttrs())


def test_golden_values():
    # sigmoid(0) = 0.5 -> 128 steps of 1/256 above -128: 0; the extremes saturate
    x = np.array([-128, 0, 127], np.int8)
    assert run("qnn.sigmoid", x, (0.1, 0, 1 / 256, -128)).tolist() == [-128, 0, 127]
    # tanh: odd, tanh(0.5) = 0.4621 -> round(59.15) = 59
    assert run("qnn.tanh", np.array([-5, 0, 5], np.int8), (0.1, 0, 1 / 128, 0)).tolist() == \
        [-59, 0, 59]
    # hard swish: 0 below -3, x above 3, x * (x + 3) / 6 between (x = 1: 2/3)
    got = run("qnn.hardswish", np.array([-100, 0, 10, 100], np.int8), (0.1, 0, 0.1, 0))
    assert got.tolist() == [0, 0, 7, 100]
    # mean of [1, 2, 4] = 7/3 -> 2.333 steps -> 2; 1.0 = 2**30 * 2**-31 * 2**1, and
    # n = 3 folds in as (2**30 << 1) // 3 with the shift lowered by floor(log2 3) = 1
    assert mean_multiplier(0.5, 0.5, 3) == ((1 << 31) // 3, 0)
    got = run("qnn.mean", np.array([[1, 2, 4]], np.int8), (0.5, 0, 0.5, 0),
              ReduceAttrs(axis=(1,)))
    assert got.tolist() == [2]


def test_hard_swish_rejects_output_multiplier_above_one():
    with pytest.raises(quant.QuantizationError, match="HardSwishPrepare"):
        hard_swish_params(1.0, 1e-5)


FLOAT_FNS = {"qnn.sigmoid": lambda v: 1 / (1 + np.exp(-v)), "qnn.tanh": np.tanh,
             "qnn.hardswish": lambda v: v * np.clip(v + 3, 0, 6) / 6}


@pytest.mark.parametrize("row", ACTIVATIONS, ids=lambda r: f"{r[0]}-{r[1]}-{r[2]}")
def test_activation_within_one_step_of_float(row):
    name, dt, si, zi, so, zo = row
    info = np.iinfo(dt)
    x = np.arange(int(info.min), int(info.max) + 1).astype(dt)
    got = run(name, x, (si, zi, so, zo)).astype(np.int64)
    real = FLOAT_FNS[name](np.float64(np.float32(si)) * (x.astype(np.int64) - zi))
    want = np.clip(np.round(real / np.float64(np.float32(so))) + zo, info.min, info.max)
    assert np.abs(got - want).max() <= 1
    if name != "qnn.hardswish":             # tables of the float function: exact but at ties
        assert np.mean(got == want) >= 0.99


def test_tables_are_in_dtype_order():
    t = lookup_table("qnn.sigmoid", 0.1, 0, 1 / 256, -128, DType.INT8)
    assert t.dtype == np.int8 and t.shape == (256,)
    assert np.all(np.diff(t.astype(np.int64)) >= 0) and t[0] == -128 and t[-1] == 127


@pytest.mark.parametrize("row", MEANS, ids=lambda r: f"{r[0]}-{r[1]}-{r[2]}")
def test_mean_within_one_step_of_float(row):
    dt, shape, axis, keep, excl, si, zi, so, zo = row
    info = np.iinfo(dt)
    x = np.random.default_rng(len(shape)).integers(int(info.min), int(info.max) + 1,
                                                   shape).astype(dt)
    attrs = ReduceAttrs(axis=axis, keepdims=keep, exclude=excl)
    got = run("qnn.mean", x, (si, zi, so, zo), attrs).astype(np.int64)
    axes = reduce_axes(x.ndim, attrs)
    real = np.mean(np.float64(np.float32(si)) * (x.astype(np.int64) - zi), axis=axes,
                   keepdims=keep)
    want = np.clip(np.round(real / np.float64(np.float32(so))) + zo, info.min, info.max)
    assert got.shape == want.shape
    assert np.abs(got - want).max() <= 1
