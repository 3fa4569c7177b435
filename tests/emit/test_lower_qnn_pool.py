"""Lowering of qnn.avg_pool2d (aot/emit/lower/ops/qnn_pool.py) against the
interpreter: layouts, padding counted or not, windows wholly in the
padding, equal and different parameters (constant: decided at compile
time; run-time: a select), int8/uint8/int16, and fusion with a following
requantize.  The printed C is covered by test_lower_qnn.py's C table and
tests/e2e/test_ops_c_qnn.py."""

from __future__ import annotations

import numpy as np
import pytest

from aot.emit.kernel import ir as K
from aot.emit.kernel.walk import stmt_exprs, walk_exprs, walk_stmts
from aot.ir.dtype import DType
from test_lower_qnn import check, f32, i32, kernel_dtypes, lower

POOLS = [
    'pool_size=[3, 3], padding=[1, 1], layout="NHWC"',
    'pool_size=[2, 3], strides=[2, 1], padding=[1, 0, 1, 2], layout="NHWC"',
    'pool_size=[2, 2], strides=[2, 2], padding=[2, 2], ceil_mode=True, layout="NHWC"',
    'pool_size=[3, 2], dilation=[2, 1], padding=[1, 1], count_include_pad=True, layout="NHWC"',
    'pool_size=[2, 2], padding=[1, 1], count_include_pad=True',
    'pool_size=[6, 3]',
]


def data(dtype: str, shape=(2, 5, 6, 3), seed: int = 0) -> np.ndarray:
    lo, hi = np.iinfo(dtype).min, np.iinfo(dtype).max
    return np.random.default_rng(seed).integers(lo, hi + 1, shape).astype(dtype)


@pytest.mark.parametrize("attrs", POOLS)
@pytest.mark.parametrize("params", [(0.5, 3, 0.5, 3), (0.5, 3, 0.3, -2), (0.02, -128, 0.02, -128)])
@pytest.mark.parametrize("where", ["literal", "runtime"])
def test_avg_pool2d(attrs: str, params: tuple, where: str) -> None:
    x = data("int8")
    consts = {"si": f32(params[0]), "zi": i32(params[1]), "so": f32(params[2]),
              "zo": i32(params[3])}
    body = f"qnn.avg_pool2d(%x, %si, %zi, %so, %zo, {attrs})"
    if where == "literal":
        group = check({"x": x}, body, consts)
        assert not any(d.is_float for d in kernel_dtypes(group))
    else:
        check({"x": x, **consts}, body)


@pytest.mark.parametrize("dtype", ["uint8", "int16"])
def test_avg_pool2d_dtypes(dtype: str) -> None:
    x = data(dtype)
    for params in ["0.5f, 100, 0.5f, 100", "0.5f, 100, 0.25f, 7"]:
        check({"x": x}, f'qnn.avg_pool2d(%x, {params}, pool_size=[3, 2], padding=[1, 1], '
                        f'layout="NHWC")')


def division_dtypes(group) -> set[DType]:
    return {e.dtype for st in walk_stmts(group.kernel.body) for root in stmt_exprs(st)
            for e in walk_exprs(root)
            if isinstance(e, K.BinOp) and e.op is K.BinaryOperator.DIV}


def test_avg_pool2d_divides_in_int32_for_literal_zero_points() -> None:
    """int8 with a literal zero point in range: the sums and divisions are
    int32 (an int64 division is a library call on 32-bit cores); a
    run-time zero point needs int64."""
    x = data("int8")
    body = "qnn.avg_pool2d(%x, 0.5f, 3, 0.25f, %z, pool_size=[3, 3], padding=[1, 1])"
    _, group = lower({"x": x, "z": i32(1)}, body)
    assert division_dtypes(group) == {DType.INT32}
    _, group = lower({"x": x, "z": i32(1)}, body.replace("0.5f, 3", "0.5f, %z"))
    assert DType.INT64 in division_dtypes(group)


def test_avg_pool2d_then_requantize_is_one_kernel() -> None:
    x = data("int8")
    check({"x": x}, '%0 = qnn.avg_pool2d(%x, 0.5f, 3, 0.5f, 3, pool_size=[2, 2], '
                    'strides=[2, 2], layout="NHWC");\n'
                    '  qnn.requantize(%0, 0.5f, 3, 0.25f, 0, out_dtype="int8")')
