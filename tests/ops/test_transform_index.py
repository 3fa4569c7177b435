"""Index-based transforms against NumPy / direct loops: strided_slice,
take, gather, one_hot, where."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from aot.ir.registry import Solved
from aot.ir.types import ANY, IncompleteType
from cases import transform as table
from shape_op_helpers import (ALL_DTYPES, arange, bad_attrs, get, infer, rejects, run, sample,
                              solve, tt)

RNG = np.random.default_rng(11)


# ============================================================ strided_slice

X3 = arange(table.SLICE_SHAPE)

#: the NumPy index equivalent to each row of the shared strided_slice table
NUMPY_INDEX = [
    np.s_[1:3],
    np.s_[-3:-1],
    np.s_[3:0:-1],
    np.s_[::-1],
    np.s_[:],
    np.s_[0:4:2, 0:5:2, 0:6:4],
    np.s_[0:2, 1:4],
    np.s_[1:3, ::2],
    np.s_[:, ::-1],
    np.s_[:, :, 1:4],
    np.s_[0:3, :, 4:0:-2],
    np.s_[1:3, 0:],
    np.s_[-2:],
    np.s_[:, 1:3],
    np.s_[3:1],          # end before begin: an empty axis (Relay rejects this)
    np.s_[1:3:-1],
    np.s_[2::-1, 4::-2, 5::-3],
    np.s_[0:4:3, 0:5:4, 5:0:-5],
]
assert len(NUMPY_INDEX) == len(table.SLICES)
SLICE_CASES = list(zip(table.SLICES, NUMPY_INDEX))


@pytest.mark.parametrize("attrs,index", SLICE_CASES)
def test_strided_slice(attrs, index):
    np.testing.assert_array_equal(run("strided_slice", X3, **attrs), X3[index])


@st.composite
def slice_case(draw):
    shape = draw(hnp.array_shapes(min_dims=1, max_dims=3, min_side=0, max_side=6))
    begin, end, strides = [], [], []
    for n in shape:
        begin.append(draw(st.integers(-n - 3, n + 3)))
        end.append(draw(st.integers(-n - 3, n + 3)))
        strides.append(draw(st.sampled_from([-3, -2, -1, 1, 2, 3])))
    return shape, begin, end, strides


@settings(max_examples=80, deadline=None)
@given(case=slice_case())
def test_strided_slice_matches_python_slicing(case):
    """With explicit bounds, Relay's canonicalisation is Python's."""
    shape, begin, end, strides = case
    x = arange(shape, "int32")
    index = tuple(slice(b, e, s) for b, e, s in zip(begin, end, strides))
    np.testing.assert_array_equal(
        run("strided_slice", x, begin=begin, end=end, strides=strides), x[index])


def test_strided_slice_corpus_example():
    # from the Relay corpus: end=-1 counts from the end
    t = infer("strided_slice", [tt((1, 384, 128))], begin=[0, 0, 0], end=[1, -1, 128],
              strides=[1, 1, 1], axes=None)
    assert t == tt((1, 383, 128))


def test_strided_slice_dynamic():
    assert infer("strided_slice", [tt((ANY, 6))], begin=[0, 1], end=[2, 4]) == tt((ANY, 3))
    assert infer("strided_slice", [tt((ANY, 6))], begin=[1], end=[4], axes=[1]) == \
        tt((ANY, 3))


@pytest.mark.parametrize("attrs,match", [
    ({"begin": [0, 0, 0, 0], "end": [1]}, r"begin=\[0, 0, 0, 0\] has 4 entries but the tensor"),
    ({"begin": [0], "end": [1, 2], "axes": [0]}, "need 1 entries each"),
    ({"begin": [0], "end": [1], "axes": [3]}, "axes=3 is out of range"),
])
def test_strided_slice_rejects(attrs, match):
    rejects("strided_slice", [tt((4, 5, 6))], match, **attrs)


def test_strided_slice_attrs():
    bad_attrs("strided_slice", "strides .* contain 0", begin=[0], end=[1], strides=[0])
    bad_attrs("strided_slice", "expected one of 'end', 'size'", slice_mode="stride")
    at = get("strided_slice").attrs_type.from_raw(
        {"begin": [0, 1], "end": [1, -1], "strides": [1], "axes": None})
    assert at.to_raw() == {"begin": [0, 1], "end": [1, -1]}


# ===================================================================== take

@pytest.mark.parametrize("shape,ishape,axis", [
    ((5,), (3,), 0), ((4, 5), (2, 3), 1), ((4, 5), (6,), -2), ((4, 5), (), 0),
    ((4, 5), (7,), None), ((2, 3, 4), (2, 2), -1),
])
@pytest.mark.parametrize("mode", ["clip", "wrap", "fast"])
def test_take(shape, ishape, axis, mode):
    x = arange(shape)
    n = x.size if axis is None else shape[axis]
    idx = RNG.integers(-2 * n, 2 * n, ishape).astype(np.int32)
    np_mode = "wrap" if mode == "wrap" else "clip"   # fast is defined as clip
    np.testing.assert_array_equal(run("take", x, idx, axis=axis, mode=mode),
                                  np.take(x, idx, axis=axis, mode=np_mode))


def test_take_clip_does_not_wrap_negative_indices():
    x = np.array([10, 20, 30], np.int64)
    idx = np.array([-1, 0, 5], np.int8)
    np.testing.assert_array_equal(run("take", x, idx, axis=0), [10, 10, 30])
    np.testing.assert_array_equal(run("take", x, idx, axis=0, mode="wrap"), [30, 10, 30])


@pytest.mark.parametrize("mode", table.TAKE_MODES)
@pytest.mark.parametrize("dtype", table.INDEX_DTYPES)
def test_take_index_dtypes(dtype, mode):
    """Indices of every integer dtype, out of range both ways, against
    Python integer arithmetic: clip (and fast) clamp, wrap is the floored
    remainder.  A uint64 index is read as the int64 of the same bits
    (2**64 - 1 is -1), as aot/emit/lower/ops/index_math.py documents."""
    x = arange((4, 5, 6))
    idx = table.index_values(dtype)
    n = x.shape[1]
    signed = [v - 2**64 if v >= 2**63 else v for v in idx.tolist()]
    if mode == "wrap":
        picked = [v % n for v in signed]
    else:
        picked = [min(max(v, 0), n - 1) for v in signed]
    np.testing.assert_array_equal(run("take", x, idx, axis=1, mode=mode), x[:, picked, :])


@pytest.mark.parametrize("shape,ishape,axis,batch_dims", [
    ((2, 5), (2, 3), 1, 1), ((2, 3, 5), (2, 3, 4), 2, 2), ((2, 3, 5), (2, 4), 2, 1),
    ((2, 5, 3), (2, 4), 1, -1),
])
def test_take_batch_dims(shape, ishape, axis, batch_dims):
    x = arange(shape, "int32")
    idx = RNG.integers(0, shape[axis], ishape)
    got = run("take", x, idx, axis=axis, batch_dims=batch_dims)
    b = batch_dims + len(ishape) if batch_dims < 0 else batch_dims
    # direct loop reference: out[batch, pre, i, post] = x[batch, pre, idx[batch, i], post]
    want = np.empty(shape[:axis] + ishape[b:] + shape[axis + 1:], np.int32)
    for pos in np.ndindex(*want.shape):
        batch = pos[:b]
        pre = pos[b:axis]
        ipos = pos[axis:axis + len(ishape) - b]
        post = pos[axis + len(ishape) - b:]
        want[pos] = x[batch + pre + (idx[batch + ipos],) + post]
    np.testing.assert_array_equal(got, want)


def test_take_types_and_rejects():
    assert infer("take", [tt((4, 5)), tt((2, 3), "int64")], axis=0) == tt((2, 3, 5))
    assert infer("take", [tt((ANY, 5)), tt((ANY,), "int32")], axis=1) == tt((ANY, ANY))
    rejects("take", [tt((4, 5)), tt((3,))], "the indices must be an integer tensor")
    rejects("take", [tt((4, 5)), tt((3,), "int32")], "axis=2 is out of range", axis=2)
    rejects("take", [tt((4, 5)), tt((4, 3), "int32")], "batch_dims=1 must not exceed axis=0",
            axis=0, batch_dims=1)
    rejects("take", [tt((4, 5)), tt((3, 3), "int32")], "batch dimension 0 differs",
            axis=1, batch_dims=1)
    rejects("take", [tt((4, 5)), tt((3,), "int32")], "batch_dims=2 is out of range",
            axis=1, batch_dims=2)
    bad_attrs("take", "expected one of 'clip', 'wrap', 'fast'", mode="raise")


# =================================================================== gather

@pytest.mark.parametrize("shape,ishape,axis", [
    ((4,), (6,), 0), ((3, 4), (3, 2), 1), ((3, 4), (5, 4), 0), ((2, 3, 4), (2, 3, 1), -1),
])
def test_gather(shape, ishape, axis):
    x = arange(shape)
    n = shape[axis]
    idx = RNG.integers(-2, n + 2, ishape)
    want = np.take_along_axis(x, np.clip(idx, 0, n - 1), axis=axis)
    np.testing.assert_array_equal(run("gather", x, idx, axis=axis), want)


def test_gather_rejects():
    rejects("gather", [tt((3, 4)), tt((3,), "int32")], "indices must have the rank")
    rejects("gather", [tt((3, 4)), tt((2, 4), "int32")], "dimension 0 differs", axis=1)
    rejects("gather", [tt((3, 4)), tt((3, 4))], "integer tensor")
    assert infer("gather", [tt((ANY, 4)), tt((3, 4), "int32")], axis=1) == tt((3, 4))


# ================================================================== one_hot

@pytest.mark.parametrize("ishape,depth,axis", [((4,), 3, -1), ((4,), 3, 0), ((2, 3), 5, 1),
                                               ((2, 3), 2, -1), ((), 4, 0)])
@pytest.mark.parametrize("dtype", ["float32", "int32"])
def test_one_hot(ishape, depth, axis, dtype):
    idx = RNG.integers(-1, depth + 1, ishape).astype(np.int64)
    on, off = np.array(5.7, np.float64), np.array(-1, np.int8)
    got = run("one_hot", idx, on, off, depth=depth, axis=axis, dtype=dtype)
    on_v = 5.7 if dtype == "float32" else 5   # float -> int truncates
    rows = np.zeros(ishape + (depth,))
    for pos in np.ndindex(*ishape):
        for d in range(depth):
            rows[pos + (d,)] = on_v if idx[pos] == d else -1
    want = np.moveaxis(rows, -1, axis if axis >= 0 else axis + len(ishape) + 1)
    np.testing.assert_array_equal(got, want.astype(dtype))


def test_one_hot_types():
    out = solve("one_hot", [tt((3,), "int32"), IncompleteType(), IncompleteType()], depth=4)
    assert out == Solved(tt((3, 4)), (None, tt(()), tt(())))
    assert infer("one_hot", [tt((ANY,), "int32"), tt(()), tt(())], depth=2, axis=0) == \
        tt((2, ANY))
    rejects("one_hot", [tt((3,)), tt(()), tt(())], "integer tensor", depth=2)
    rejects("one_hot", [tt((3,), "int8"), tt((1,)), tt(())], "on_value must be a scalar",
            depth=2)
    rejects("one_hot", [tt((3,), "int8"), tt(()), tt(())], "axis=2 is out of range",
            depth=2, axis=2)
    bad_attrs("one_hot", "depth must be >= 1", depth=0)


# ==================================================================== where

@settings(max_examples=60, deadline=None)
@given(shapes=hnp.mutually_broadcastable_shapes(num_shapes=3, min_dims=0, max_dims=4,
                                                max_side=3),
       dtype=st.sampled_from(ALL_DTYPES), cond_dtype=st.sampled_from(["bool", "int8",
                                                                       "float32"]))
def test_where_broadcasts_like_numpy(shapes, dtype, cond_dtype):
    rng = np.random.default_rng(5)
    c_shape, x_shape, y_shape = shapes.input_shapes
    cond = rng.integers(-1, 2, c_shape).astype(cond_dtype)
    x = sample(rng, x_shape, dtype)
    y = sample(rng, y_shape, dtype)
    got = run("where", cond, x, y)
    np.testing.assert_array_equal(got, np.where(cond.astype(bool), x, y))
    assert got.shape == shapes.result_shape


def test_where_rejects():
    rejects("where", [tt((2,), "bool"), tt((2,)), tt((2,), "int32")],
            "x and y must have the same dtype, got float32 and int32")
    rejects("where", [tt((3,), "bool"), tt((2,)), tt((2,))], "do not broadcast")
    assert infer("where", [tt((ANY, 1), "bool"), tt((4,)), tt((1,))]) == tt((ANY, 4))
    assert infer("where", [IncompleteType(), tt((4,)), tt((1,))]) is None
