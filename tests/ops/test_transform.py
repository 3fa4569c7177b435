"""Shape-manipulation and broadcasting transforms against NumPy: reshape
(with Relay's special values), reshape_like, transpose, squeeze,
expand_dims, concatenate, stack, split, tile, repeat, reverse,
broadcast_to(_like), collapse_sum_like/_to."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from aot.ir.registry import Solved
from aot.ir.types import ANY, IncompleteType, TensorType, TupleType
from cases import transform as table
from shape_op_helpers import (ALL_DTYPES, arange, bad_attrs, get, infer, rejects, run, sample,
                              solve, tt)

RNG = np.random.default_rng(7)


# ================================================================== reshape

@pytest.mark.parametrize("ishape,newshape,expected", table.RESHAPES)
@pytest.mark.parametrize("dtype", ["float32", "int8", "bool"])
def test_reshape(ishape, newshape, expected, dtype):
    attrs = dict(newshape=newshape, allowzero=table.reshape_allows_zero(ishape))
    assert infer("reshape", [tt(ishape, dtype)], **attrs) == tt(expected, dtype)
    x = arange(ishape, dtype)
    np.testing.assert_array_equal(run("reshape", x, **attrs), np.reshape(x, expected))


@pytest.mark.parametrize("ishape,newshape,expected", [
    ((ANY, 3, 4), [0, -1], (ANY, 12)),
    ((ANY, 4), [-1], (ANY,)),
    ((2, ANY), [-1, 2], (ANY, 2)),
    ((ANY, 3, 4), [0, -3], (ANY, 12)),
    ((2, ANY, 4), [-3, 4], (ANY, 4)),
    ((ANY, 6), [0, -4, 2, -1], (ANY, 2, 3)),
    ((ANY, 6), [-4, -1, 2, 6], (ANY, 2, 6)),
])
def test_reshape_dynamic(ishape, newshape, expected):
    assert infer("reshape", [tt(ishape)], newshape=newshape) == tt(expected)


def test_reshape_compute_with_dynamic_type_uses_the_data():
    op = get("reshape")
    attrs = op.attrs_type.from_raw({"newshape": [0, -1]})
    x = arange((5, 3, 4))
    out = op.compute([x], attrs, tt((ANY, 12)))
    assert out.shape == (5, 12)


def test_reshape_allowzero():
    assert infer("reshape", [tt((0, 3))], newshape=[3, 0], allowzero=True) == tt((3, 0))
    out = run("reshape", np.zeros((0, 3), np.float32), newshape=[3, 0], allowzero=True)
    assert out.shape == (3, 0)
    # without allowzero the 0 copies dimension 1 (3): 9 elements vs 0
    rejects("reshape", [tt((0, 3))], r"\(0 elements\) into \(3, 3\)", newshape=[3, 0])


@pytest.mark.parametrize("ishape,newshape,match", [
    ((2, 3), [4, 2], r"cannot reshape \(2, 3\) \(6 elements\) into \(4, 2\) \(8 elements\)"),
    ((2, 3), [-1, -1], "at most one dimension can be -1"),
    ((2,), [1, 0], "copies input dimension 1"),
    ((2, 3), [-3, -3], "merges input dimensions 2 and 3"),
    ((6,), [-4, 4, -1], "cannot split input dimension 6 by 4"),
    ((6,), [-4, -1, -1], "cannot both be -1"),
    ((6,), [-4, 2, 4], "splits input dimension 6 into 2 x 4"),
    ((6,), [-4, 2], "must be followed by two dimensions"),
    ((5,), [2, -1], r"cannot infer the -1 in newshape \[2, -1\]"),
])
def test_reshape_rejects(ishape, newshape, match):
    rejects("reshape", [tt(ishape)], match, newshape=newshape)


def test_reshape_bad_special_value():
    bad_attrs("reshape", "neither a dimension nor a special value", newshape=[2, -5])


def test_reshape_waits_for_its_argument():
    assert infer("reshape", [IncompleteType()], newshape=[-1]) is None


@pytest.mark.parametrize("lshape,rshape,attrs,expected", [
    ((2, 3), (3, 2), {}, (3, 2)),
    ((1, 2, 3, 4), (6, 2, 2, 3), {"lhs_begin": 1, "rhs_end": 3}, (1, 6, 2, 2)),
    ((2, 12), (3, 4), {"lhs_begin": 1}, (2, 3, 4)),
    ((2, 12), (9, 3, 4), {"lhs_begin": -1, "rhs_begin": 1}, (2, 3, 4)),
])
def test_reshape_like(lshape, rshape, attrs, expected):
    x, like = arange(lshape), np.zeros(rshape, np.int8)
    out = run("reshape_like", x, like, **attrs)
    np.testing.assert_array_equal(out, x.reshape(expected))


def test_reshape_like_rejects():
    rejects("reshape_like", [tt((2, 3)), tt((4,))], r"\(6 elements\) like \(4,\)")
    rejects("reshape_like", [tt((2, 3)), tt((6,))], "do not select a range", lhs_begin=3,
            lhs_end=1)


# ============================================================= permutations

@pytest.mark.parametrize("shape,axes", [
    ((2, 3), None), ((2, 3, 4), [0, 2, 1]), ((2, 3, 4), [-1, 0, 1]), ((2, 3, 4, 5), None),
    ((5,), [0]), ((), None), ((50, 12, 32, 64), [0, 2, 1, 3]), ((2, 3, 4, 5), [0, 2, 3, 1]),
])
@pytest.mark.parametrize("dtype", ["float16", "int64", "bool"])
def test_transpose(shape, axes, dtype):
    x = sample(RNG, shape, dtype)
    np.testing.assert_array_equal(run("transpose", x, axes=axes), np.transpose(x, axes))


@pytest.mark.parametrize("axes,match", [
    ([0, 1, 2], "has 3 entries but the tensor has rank 2"),
    ([0, 0], "names dimension 0 twice"),
    ([0, -3], "out of range for a tensor of rank 2"),
])
def test_transpose_rejects(axes, match):
    rejects("transpose", [tt((2, 3))], match, axes=axes)


def test_transpose_keeps_dynamic_dims():
    assert infer("transpose", [tt((ANY, 3))]) == tt((3, ANY))


@pytest.mark.parametrize("shape,axis,expected", [
    ((1, 3, 1, 4), None, (3, 4)),
    ((1, 3, 1, 4), [0], (3, 1, 4)),
    ((1, 3, 1, 4), [-2, 0], (3, 4)),
    ((1, 1), None, ()),
    ((3,), [], (3,)),
])
def test_squeeze(shape, axis, expected):
    x = arange(shape)
    out = run("squeeze", x, axis=axis)
    np.testing.assert_array_equal(out, x.reshape(expected))


def test_squeeze_rejects():
    rejects("squeeze", [tt((1, 3))], r"cannot squeeze axis 1 of shape \(1, 3\)", axis=[1])
    rejects("squeeze", [tt((ANY, 3))], "needs a static shape")
    rejects("squeeze", [tt((1, 3))], "out of range", axis=[2])
    # a dynamic dimension may be squeezed when named
    assert infer("squeeze", [tt((ANY, 3))], axis=[0]) == tt((3,))


@pytest.mark.parametrize("shape,axis,num", [
    ((2, 3), 0, 1), ((2, 3), 2, 1), ((2, 3), -1, 1), ((2, 3), -3, 2), ((2, 3), 1, 0),
    ((), 0, 3), ((4,), 1, 2),
])
def test_expand_dims(shape, axis, num):
    x = arange(shape)
    want = x
    pivot = axis + len(shape) + 1 if axis < 0 else axis
    for _ in range(num):
        want = np.expand_dims(want, pivot)
    np.testing.assert_array_equal(run("expand_dims", x, axis=axis, num_newaxis=num), want)


def test_expand_dims_rejects():
    rejects("expand_dims", [tt((2, 3))], r"axis=3 is out of range.*-3 <= axis <= 2", axis=3)
    rejects("expand_dims", [tt((2, 3))], "axis=-4 is out of range", axis=-4)
    bad_attrs("expand_dims", "num_newaxis must be >= 0", num_newaxis=-1)


@pytest.mark.parametrize("shape,axis", [((4,), 0), ((2, 3), 1), ((2, 3, 4), -1), ((2, 3), -2)])
def test_reverse(shape, axis):
    x = arange(shape, "int16")
    np.testing.assert_array_equal(run("reverse", x, axis=axis), np.flip(x, axis))


def test_reverse_rejects():
    rejects("reverse", [tt((2, 3))], "axis=2 is out of range", axis=2)


# ==================================================== concatenate and stack

@pytest.mark.parametrize("shapes,axis", [
    ([(2, 3), (4, 3)], 0), ([(2, 3), (2, 1), (2, 5)], 1), ([(2, 3, 4)], -1),
    ([(1, 2), (1, 2)], -2), ([(10, 10), (10, 10)], 0), ([(0, 3), (2, 3)], 0),
])
@pytest.mark.parametrize("dtype", ["float32", "uint8", "bool"])
def test_concatenate(shapes, axis, dtype):
    xs = tuple(sample(RNG, s, dtype) for s in shapes)
    np.testing.assert_array_equal(run("concatenate", xs, axis=axis),
                                  np.concatenate(xs, axis=axis))


def test_concatenate_dynamic():
    tup = TupleType((tt((ANY, 3)), tt((2, 3))))
    assert infer("concatenate", [tup], axis=0) == tt((ANY, 3))
    tup = TupleType((tt((ANY, 3)), tt((2, 4))))
    assert infer("concatenate", [tup], axis=1) == tt((2, 7))


@pytest.mark.parametrize("fields,axis,match", [
    ([tt((2, 3)), tt((2, 3), "int32")], 0, "tensor 0 is float32 but tensor 1 is int32"),
    ([tt((2, 3)), tt((2,))], 0, "tensor 0 has rank 2 but tensor 1 has rank 1"),
    ([tt((2, 3)), tt((2, 4))], 0, r"dimension 1 of tensor 1 is 4 but 3"),
    ([tt(())], 0, "cannot concatenate 0-d tensors"),
    ([], 0, "at least one tensor"),
    ([tt((2, 3))], 2, "axis=2 is out of range"),
])
def test_concatenate_rejects(fields, axis, match):
    rejects("concatenate", [TupleType(tuple(fields))], match, axis=axis)


def test_concatenate_argument_kinds():
    rejects("concatenate", [tt((2, 3))], "expects a tuple of tensors as its first argument")
    assert infer("concatenate", [IncompleteType()]) is None
    assert infer("concatenate", [TupleType((tt((2,)), IncompleteType()))]) is None


@pytest.mark.parametrize("shape,n,axis", [((2, 3), 2, 0), ((2, 3), 3, 1), ((2, 3), 2, -1),
                                          ((2, 3), 1, 2), ((), 4, 0), ((4,), 2, -2)])
def test_stack(shape, n, axis):
    xs = tuple(sample(RNG, shape, "int32") for _ in range(n))
    np.testing.assert_array_equal(run("stack", xs, axis=axis), np.stack(xs, axis=axis))


def test_stack_rejects():
    rejects("stack", [TupleType((tt((2, 3)), tt((3, 2))))], "dimension 0 of tensor 1 is 3")
    rejects("stack", [TupleType((tt((2, 3)),))], "axis=3 is out of range", axis=3)
    assert infer("stack", [TupleType((tt((ANY, 3)), tt((2, 3))))], axis=1) == tt((2, 2, 3))


# ==================================================================== split

@pytest.mark.parametrize("shape,ios,axis", [
    ((6, 2), 3, 0), ((6, 2), 1, 0), ((2, 6), [1, 4], 1), ((2, 6), [5], -1), ((4,), [], 0),
    ((50, 32, 2304), [768, 1536], 2),
])
def test_split(shape, ios, axis):
    x = arange(shape)
    parts = run("split", x, indices_or_sections=ios, axis=axis)
    want = np.split(x, ios, axis=axis)
    assert len(parts) == len(want)
    for got, w in zip(parts, want):
        np.testing.assert_array_equal(got, w)


def test_split_types():
    out = infer("split", [tt((ANY, 4))], indices_or_sections=2)
    assert out == TupleType((tt((ANY, 4)), tt((ANY, 4))))
    out = infer("split", [tt((ANY, 4))], indices_or_sections=[1])
    assert out == TupleType((tt((1, 4)), tt((ANY, 4))))


@pytest.mark.parametrize("shape,ios,match", [
    ((5,), 2, "2 sections do not divide the axis extent 5"),
    ((5,), [3, 2], r"indices \[3, 2\] must be strictly ascending"),
    ((5,), [0, 2], "strictly ascending and positive"),
    ((5,), [2, 5], "split index 5 is not below the axis extent 5"),
    ((), 1, "cannot split a 0-d tensor"),
])
def test_split_rejects(shape, ios, match):
    rejects("split", [tt(shape)], match, indices_or_sections=ios)


def test_split_attrs():
    bad_attrs("split", "positive number of sections", indices_or_sections=0)
    attrs = get("split").attrs_type.from_raw({"indices_or_sections": [768, 1536], "axis": 2})
    assert attrs.indices_or_sections == (768, 1536)
    assert attrs.to_raw() == {"indices_or_sections": [768, 1536], "axis": 2}
    attrs = get("split").attrs_type.from_raw({"indices_or_sections": 3})
    assert attrs.to_raw() == {"indices_or_sections": 3}


# =============================================================== repetition

@pytest.mark.parametrize("shape,reps", [((2, 3), [2, 1]), ((2, 3), [3]), ((3,), [2, 2]),
                                        ((2, 3), []), ((), [4]), ((1, 2, 3), [1, 2, 1])])
def test_tile(shape, reps):
    x = arange(shape, "int8")
    np.testing.assert_array_equal(run("tile", x, reps=reps), np.tile(x, reps))


def test_tile_rejects_and_dynamic():
    bad_attrs("tile", "reps must all be >= 1", reps=[2, 0])
    assert infer("tile", [tt((ANY, 3))], reps=[2, 2]) == tt((ANY, 6))


@pytest.mark.parametrize("shape,repeats,axis", [((2, 3), 2, 0), ((2, 3), 3, 1),
                                                ((2, 3), 1, -1), ((4,), 2, -1)])
def test_repeat(shape, repeats, axis):
    x = arange(shape, "float64")
    np.testing.assert_array_equal(run("repeat", x, repeats=repeats, axis=axis),
                                  np.repeat(x, repeats, axis=axis))


def test_repeat_rejects():
    bad_attrs("repeat", "repeats must be >= 1", repeats=0)
    rejects("repeat", [tt((2, 3))], "axis=2 is out of range", axis=2)
    assert infer("repeat", [tt((ANY, 3))], repeats=2, axis=0) == tt((ANY, 3))


# ============================================================= broadcasting

@st.composite
def broadcast_pair(draw):
    """A target shape and a shape that broadcasts to it."""
    target = draw(hnp.array_shapes(min_dims=0, max_dims=4, min_side=0, max_side=4))
    keep = draw(st.integers(0, len(target)))
    src = list(target[len(target) - keep:])
    for i in range(len(src)):
        if draw(st.booleans()):
            src[i] = 1
    return tuple(src), tuple(target)


@settings(max_examples=60, deadline=None)
@given(pair=broadcast_pair(), dtype=st.sampled_from(ALL_DTYPES))
def test_broadcast_to_matches_numpy(pair, dtype):
    src, target = pair
    x = sample(np.random.default_rng(len(src)), src, dtype)
    np.testing.assert_array_equal(run("broadcast_to", x, shape=list(target)),
                                  np.broadcast_to(x, target))
    like = np.zeros(target, np.int8)
    np.testing.assert_array_equal(run("broadcast_to_like", x, like),
                                  np.broadcast_to(x, target))


@settings(max_examples=60, deadline=None)
@given(pair=broadcast_pair())
def test_collapse_sum_is_the_adjoint_of_broadcast(pair):
    src, target = pair
    x = sample(np.random.default_rng(3), target, "int32")
    like = np.zeros(src, np.int32)
    lead = len(target) - len(src)
    axes = tuple(range(lead)) + tuple(lead + i for i, d in enumerate(src)
                                      if d == 1 and target[lead + i] != 1)
    want = np.sum(x, axis=axes, keepdims=True).reshape(src)
    np.testing.assert_array_equal(run("collapse_sum_like", x, like), want)


@pytest.mark.parametrize("src,dst", [((3,), (1,)), ((2, 3), (3,)), ((4,), (2, 3))])
def test_broadcast_to_rejects(src, dst):
    rejects("broadcast_to", [tt(src)], "does not broadcast to", shape=list(dst))
    rejects("broadcast_to_like", [tt(src), tt(dst)], "does not broadcast to")


def test_broadcast_to_types():
    rejects("broadcast_to", [tt((3,))], "needs a `shape` attribute")
    assert infer("broadcast_to", [tt((ANY,))], shape=[2, 5]) == tt((2, 5))
    assert infer("broadcast_to_like", [tt((3,), "int8"), tt((2, 3))]) == tt((2, 3), "int8")
    bad_attrs("broadcast_to", "negative dimension", shape=[2, -1])


def test_collapse_sum_like_wraps_integers():
    x = np.full((4, 3), 100, np.int8)
    out = run("collapse_sum_like", x, np.zeros((3,), np.int8))
    np.testing.assert_array_equal(out, np.full((3,), (400 + 128) % 256 - 128, np.int8))


def test_collapse_sum_like_float_and_rejects():
    x = sample(RNG, (2, 3, 4), "float32")
    out = run("collapse_sum_like", x, np.zeros((3, 1), np.float32))
    np.testing.assert_allclose(out, x.sum(axis=(0, 2)).reshape(3, 1), rtol=1e-5)
    rejects("collapse_sum_like", [tt((2, 3)), tt((4,))], r"\(4,\) does not broadcast to")
    rejects("collapse_sum_like", [tt((2, 3)), tt((3,), "int32")], "dtype mismatch")
    rejects("collapse_sum_like", [tt((2, 3), "bool"), tt((3,), "bool")], "cannot sum a bool")


def test_collapse_sum_to():
    x = arange((2, 3, 4), "float64")
    shape = np.array([3, 1], np.int64)
    np.testing.assert_array_equal(run("collapse_sum_to", x, shape, shape=[3, 1]),
                                  x.sum(axis=(0, 2)).reshape(3, 1))
    # without the attribute the result has dynamic dimensions of the right rank
    assert infer("collapse_sum_to", [tt((2, 3)), tt((2,), "int64")]) == tt((ANY, ANY))
    # the attribute types a shape argument that is still a hole
    solved = solve("collapse_sum_to", [tt((2, 3)), IncompleteType()], shape=[3])
    assert solved == Solved(tt((3,)), (None, TensorType((1,), tt((), "int64").dtype)))
    rejects("collapse_sum_to", [tt((2, 3)), tt((3,), "int64")], "has 3 entries", shape=[3])
    rejects("collapse_sum_to", [tt((2, 3)), tt((1,), "float32")], "1-D integer tensor",
            shape=[3])
