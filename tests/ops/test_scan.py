"""cumsum and cumprod (aot/ir/ops/scan.py): references against loops
written independently of the records, relations accepting and rejecting."""

from __future__ import annotations

import numpy as np
import pytest

from aot.ir.registry import RelationError
from nn_helpers import T, infer, run


def running(x: np.ndarray, axis: int, op, start, exclusive: bool, dtype) -> np.ndarray:
    """One step at a time in ``dtype`` along ``axis`` (a Python loop)."""
    x = np.moveaxis(x.astype(dtype), axis, -1)
    out = np.empty_like(x)
    for idx in np.ndindex(*x.shape[:-1]):
        acc = np.asarray(start, dtype)
        for k in range(x.shape[-1]):
            if exclusive:
                out[idx + (k,)] = acc
            with np.errstate(all="ignore"):
                acc = op(acc, x[idx + (k,)]).astype(dtype)
            if not exclusive:
                out[idx + (k,)] = acc
    return np.moveaxis(out, -1, axis)


@pytest.mark.parametrize("name,op,start", [("cumsum", np.add, 0), ("cumprod", np.multiply, 1)])
@pytest.mark.parametrize("dtype", ["float32", "int8", "float16", "uint16"])
@pytest.mark.parametrize("axis", [0, 1, -1])
@pytest.mark.parametrize("exclusive", [False, True])
def test_scans_step_by_step_in_the_dtype(name, op, start, dtype, axis, exclusive):
    rng = np.random.default_rng(5)
    x = (rng.integers(-9, 9, (3, 4, 5)) if np.dtype(dtype).kind in "iu"
         else rng.standard_normal((3, 4, 5))).astype(dtype)
    want = running(x, axis, op, start, exclusive, np.dtype(dtype))
    np.testing.assert_array_equal(run(name, x, axis=axis, exclusive=exclusive), want)


def test_axis_none_scans_the_flattened_data_and_dtype_converts():
    x = np.array([[100, 100], [100, 100]], np.int8)
    np.testing.assert_array_equal(run("cumsum", x), np.array([100, -56, 44, -112], np.int8))
    np.testing.assert_array_equal(run("cumsum", x, dtype="int32"), [100, 200, 300, 400])
    b = np.array([True, False, True])
    np.testing.assert_array_equal(run("cumsum", b, dtype="int8"), [1, 1, 2])


def test_relations():
    assert infer("cumsum", [T((2, 3))]) == T((6,))
    assert infer("cumprod", [T((2, 3))], axis=1, dtype="int64") == T((2, 3), "int64")
    with pytest.raises(RelationError, match="out of range"):
        infer("cumsum", [T((2, 3))], axis=2)
    with pytest.raises(RelationError, match="needs dtype"):
        infer("cumsum", [T((2, 3), "bool")], axis=1)
