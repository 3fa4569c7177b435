"""scatter_elements and scatter_nd (aot/ir/ops/transform_scatter.py):
references against NumPy's unbuffered ``ufunc.at`` (written independently
of the records), relations accepting and rejecting."""

from __future__ import annotations

import numpy as np
import pytest

from aot.ir.registry import RelationError
from nn_helpers import T, infer, run

RNG = np.random.default_rng(5)
UFUNC = {"add": np.add, "mul": np.multiply, "min": np.minimum, "max": np.maximum}


@pytest.mark.parametrize("reduction", ["add", "mul", "min", "max"])
def test_scatter_elements_is_ufunc_at(reduction):
    x = RNG.standard_normal((3, 5)).astype(np.float32)
    idx = np.array([[4, -1, 0], [2, 2, 2]], np.int64)          # -1 is 4
    upd = RNG.standard_normal((2, 3)).astype(np.float32)
    want = x.copy()
    rows = np.broadcast_to(np.arange(2)[:, None], idx.shape)
    UFUNC[reduction].at(want, (rows, idx % 5), upd)
    got = run("scatter_elements", x, idx, upd, axis=1, reduction=reduction)
    np.testing.assert_array_equal(got, want)


def test_scatter_elements_update_mean_and_clamp():
    x = np.array([10, 20, 30], np.int32)
    idx = np.array([1, 1, 7, -9], np.int64)                    # 7 -> 2, -9 + 3 -> 0
    upd = np.array([1, 2, 3, 4], np.int32)
    np.testing.assert_array_equal(run("scatter_elements", x, idx, upd), [4, 2, 3])
    # mean, one update at a time, C's truncating division: (20+1)/2=10, (10+2)/2=6
    np.testing.assert_array_equal(run("scatter_elements", x, idx[:2], upd[:2],
                                      reduction="mean"), [10, 6, 30])


@pytest.mark.parametrize("mode", ["update", "add", "mul", "min", "max"])
def test_scatter_nd_writes_slices(mode):
    x = RNG.standard_normal((4, 3, 2)).astype(np.float32)
    idx = np.array([[3, 0, 3], [1, 2, 1]], np.int32)           # (M=2, 3): (3,1) twice
    upd = RNG.standard_normal((3, 2)).astype(np.float32)
    want = x.copy()
    if mode == "update":
        for k in range(3):
            want[idx[0, k], idx[1, k]] = upd[k]
    else:
        UFUNC[mode].at(want, (idx[0], idx[1]), upd)
    np.testing.assert_array_equal(run("scatter_nd", x, idx, upd, mode=mode), want)


@pytest.mark.parametrize("types,attrs,message", [
    ([T((3, 4)), T((2, 3), "int32"), T((2, 4))], {}, "differ in shape"),
    ([T((3, 4)), T((2, 5), "int32"), T((2, 5))], {"axis": 0}, "do not fit"),
    ([T((3, 4)), T((2,), "int32"), T((2,))], {}, "rank 1"),
    ([T((3, 4)), T((2, 3)), T((2, 3))], {}, "integer"),
    ([T((3, 4)), T((2, 3), "int32"), T((2, 3), "int8")], {}, "dtype"),
    ([T((3, 4)), T((2, 3), "int32"), T((2, 3))], {"axis": 2}, "out of range"),
])
def test_scatter_elements_relation_rejects(types, attrs, message):
    with pytest.raises(RelationError, match=message):
        infer("scatter_elements", types, **attrs)


def test_scatter_nd_relation():
    assert infer("scatter_nd", [T((4, 3)), T((1, 2), "int64"), T((2, 3))]) == T((4, 3))
    with pytest.raises(RelationError, match="must have shape"):
        infer("scatter_nd", [T((4, 3)), T((1, 2), "int64"), T((2, 2))])
    with pytest.raises(RelationError, match="do not fit"):
        infer("scatter_nd", [T((4, 3)), T((3, 2), "int64"), T((2,))])
    with pytest.raises(RelationError, match="mean"):
        infer("scatter_nd", [T((4, 3)), T((1, 2), "int64"), T((2, 3))], mode="mean")
    with pytest.raises(RelationError, match="booleans"):
        infer("scatter_nd", [T((4,), "bool"), T((1, 2), "int64"), T((2,), "bool")], mode="add")
