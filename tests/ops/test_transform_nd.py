"""gather_nd and trilu (aot/ir/ops/transform_nd.py): references against
NumPy written independently of the records, relations accepting and
rejecting."""

from __future__ import annotations

import numpy as np
import pytest

from aot.ir.registry import RelationError
from nn_helpers import T, infer, run

RNG = np.random.default_rng(3)


def test_gather_nd_reads_index_tuples_from_the_first_axis():
    x = RNG.standard_normal((3, 4, 5)).astype(np.float32)
    i = np.array([[0, 2, 1], [3, 0, 1]], np.int32)            # M=2, Y=(3,)
    want = np.stack([x[0, 3], x[2, 0], x[1, 1]])
    np.testing.assert_array_equal(run("gather_nd", x, i), want)
    full = np.array([[0, 2], [3, 0], [4, 1]], np.int64)      # M=3: scalars
    np.testing.assert_array_equal(run("gather_nd", x, full), [x[0, 3, 4], x[2, 0, 1]])


def test_gather_nd_batch_dims_and_clamping():
    x = RNG.standard_normal((2, 3, 4)).astype(np.float32)
    i = np.array([[[1], [7]], [[-1], [2]]], np.int64)         # (M=2, B=2, Y=1)
    got = run("gather_nd", x, i, batch_dims=1)
    want = np.array([[x[0, 1, 0]], [x[1, 2, 2]]])             # 7 -> 2, -1 -> 0
    assert got.shape == (2, 1)
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("data,indices,attrs,message", [
    ((3, 4), (3, 2), {}, "do not fit"),
    ((3, 4), (2,), {"batch_dims": 1}, "no index axis"),
    ((3, 4), (1, 2), {"index_rank": 2}, "index_rank=2"),
    ((3, 4), (1, 4), {"batch_dims": 1}, "batch axis 0 differs"),
    ((3, 4), (1, 2), {"batch_dims": -1}, "non-negative"),
])
def test_gather_nd_relation_rejects(data, indices, attrs, message):
    with pytest.raises(RelationError, match=message):
        infer("gather_nd", [T(data), T(indices, "int32")], **attrs)


def test_gather_nd_relation_needs_integer_indices():
    with pytest.raises(RelationError, match="integer"):
        infer("gather_nd", [T((3, 4)), T((1, 2))])


@pytest.mark.parametrize("k", [-3, -1, 0, 1, 2, 9])
@pytest.mark.parametrize("upper", [True, False])
def test_trilu_is_numpy_triu_and_tril(k, upper):
    x = RNG.standard_normal((2, 4, 5)).astype(np.float32)
    want = np.triu(x, k) if upper else np.tril(x, k)
    np.testing.assert_array_equal(run("trilu", x, np.array(k, np.int64), upper=upper), want)


def test_trilu_relation():
    assert infer("trilu", [T((3, 4)), T((), "int64")]) == T((3, 4))
    with pytest.raises(RelationError, match="rank 2"):
        infer("trilu", [T((4,)), T((), "int64")])
    with pytest.raises(RelationError, match="scalar"):
        infer("trilu", [T((3, 4)), T((1,), "int64")])
    with pytest.raises(RelationError, match="integer"):
        infer("trilu", [T((3, 4)), T(())])
