"""Value-creating transforms: cast (with the documented conversion
rules), cast_like, clip, full/zeros/ones and the *_like initialisers,
arange."""

from __future__ import annotations

import math

import numpy as np
import pytest

from aot.ir.registry import Solved
from aot.ir.types import ANY, IncompleteType
from cases import transform as table
from shape_op_helpers import (FLOATS, INTS, bad_attrs, get, infer, rejects, run, sample,
                              solve, tt)

RNG = np.random.default_rng(3)


def ref_float_to_int(v: float, dtype: str) -> int:
    """Independent scalar reference: truncate, saturate, NaN -> 0."""
    info = np.iinfo(dtype)
    if math.isnan(v):
        return 0
    if math.isinf(v):
        return int(info.max) if v > 0 else int(info.min)
    return max(int(info.min), min(int(info.max), math.trunc(v)))


SPECIAL = [0.0, -0.0, 0.7, -0.7, 2.9, -2.9, 127.5, 128.0, -128.9, -129.0, 255.9, 256.0,
           65535.0, -32769.0, 3e9, -3e9, 1.8e19, 9.3e18, -9.3e18, 2.0 ** 63, -(2.0 ** 63),
           1e300, math.inf, -math.inf, math.nan]


@pytest.mark.parametrize("to", INTS)
@pytest.mark.parametrize("src", ["float32", "float64"])
def test_cast_float_to_int_truncates_and_saturates(src, to):
    with np.errstate(over="ignore"):
        x = np.array(SPECIAL, dtype=src)
    got = run("cast", x, dtype=to)
    want = [ref_float_to_int(float(v), to) for v in x]
    assert got.tolist() == want


@pytest.mark.parametrize("to", INTS)
def test_cast_float16_to_int(to):
    x = np.array([0.5, -1.5, 65504.0, -65504.0, np.inf, np.nan, 300.0], np.float16)
    assert run("cast", x, dtype=to).tolist() == [ref_float_to_int(float(v), to) for v in x]


@pytest.mark.parametrize("src", INTS + ["bool"])
@pytest.mark.parametrize("to", INTS + FLOATS + ["bool"])
def test_cast_from_integers(src, to):
    x = sample(RNG, (3, 4), src, lo=-300, hi=300)
    with np.errstate(all="ignore"):
        want = x.astype(to) if to != "bool" else x != 0   # wrap / round to nearest
    np.testing.assert_array_equal(run("cast", x, dtype=to), want)


@pytest.mark.parametrize("src", FLOATS)
@pytest.mark.parametrize("to", FLOATS + ["bool"])
def test_cast_between_floats_and_to_bool(src, to):
    with np.errstate(over="ignore"):
        x = np.array([0.0, -0.0, 1.5, -2.25, 1e5, 7e38, np.inf, np.nan]).astype(src)
    got = run("cast", x, dtype=to)
    if to == "bool":
        assert got.tolist() == [False, False, True, True, True, True, True, True]
    else:
        with np.errstate(all="ignore"):
            np.testing.assert_array_equal(got, x.astype(to))


@pytest.mark.parametrize("src,to", table.CAST_PAIRS)
def test_cast_pairs_on_edge_values(src, to):
    """The shared cast pairs on the edge values tests/emit and tests/e2e
    feed: float to int by the scalar reference, to bool by != 0 (NaN is
    true), everything else by NumPy's conversion (wrapping, rounding to
    nearest, overflowing to infinity)."""
    x = table.edge_values(src)
    got = run("cast", x, dtype=to)
    if to == "bool":
        want = x != 0
    elif x.dtype.kind == "f" and np.dtype(to).kind in "iu":
        want = np.array([ref_float_to_int(float(v), to) for v in x], to)
    else:
        with np.errstate(all="ignore"):
            want = x.astype(to)
    np.testing.assert_array_equal(got, want)


def test_cast_types_and_cast_like():
    assert infer("cast", [tt((ANY, 2))], dtype="int8") == tt((ANY, 2), "int8")
    x = np.array([1.9, -1.9, 300.0], np.float32)
    np.testing.assert_array_equal(run("cast_like", x, np.zeros((5,), np.uint8)), [1, 0, 255])
    assert infer("cast_like", [tt((3,)), tt((7, 7), "int16")]) == tt((3,), "int16")
    bad_attrs("cast", "expected a dtype name", dtype="float7")


# ===================================================================== clip

@pytest.mark.parametrize("dtype", FLOATS)
def test_clip_float(dtype):
    x = np.array([-3.0, -1.0, 0.25, 1.0, 3.0, np.nan, np.inf, -np.inf], dtype)
    got = run("clip", x, a_min=-1.5, a_max=2.0)
    want = np.clip(x, np.asarray(-1.5, dtype), np.asarray(2.0, dtype))
    np.testing.assert_array_equal(got, want)   # NaN passes through
    assert np.isnan(got[5])


@pytest.mark.parametrize("dtype", INTS)
def test_clip_int_truncates_the_bounds(dtype):
    info = np.iinfo(dtype)
    x = np.array([info.min, 0, 1, 2, 3, info.max], dtype)
    got = run("clip", x, a_min=0.9, a_max=2.9)        # bounds become 0 and 2
    np.testing.assert_array_equal(got, np.clip(x, 0, 2).astype(dtype))
    got = run("clip", x, a_min=-1e30, a_max=1e30)     # bounds saturate
    np.testing.assert_array_equal(got, x)


def test_clip_corpus_example_and_rejects():
    x = np.array([-5, 0, 100, 300], np.int32)
    np.testing.assert_array_equal(run("clip", x, a_min=0.0, a_max=255.0), [0, 0, 100, 255])
    bad_attrs("clip", "a_min <= a_max", a_min=2.0, a_max=1.0)
    bad_attrs("clip", "must not be NaN", a_min=math.nan)
    rejects("clip", [tt((2,), "bool")], "cannot clip a bool tensor")


# ============================================================ initialisers

@pytest.mark.parametrize("dtype", ["float32", "int8", "uint16", "bool", None])
def test_full(dtype):
    fill = np.array(-3.75, np.float64)
    got = run("full", fill, shape=[2, 3], dtype=dtype)
    target = dtype or "float64"
    want = {"float32": -3.75, "int8": -3, "uint16": 0, "bool": True, "float64": -3.75}[target]
    np.testing.assert_array_equal(got, np.full((2, 3), want, target))


def test_full_types():
    assert infer("full", [tt((), "int32")], shape=[4]) == tt((4,), "int32")
    assert solve("full", [IncompleteType()], shape=[4], dtype="int8") == \
        Solved(tt((4,), "int8"), (tt((), "int8"),))
    assert solve("full", [IncompleteType()], shape=[4]) is None
    rejects("full", [tt((2,))], r"the fill value must be a scalar", shape=[4])
    rejects("full", [tt(())], "needs a `shape` attribute")


@pytest.mark.parametrize("name,value", [("zeros", 0), ("ones", 1)])
@pytest.mark.parametrize("dtype", ["float16", "int64", "bool", None])
def test_zeros_ones(name, value, dtype):
    got = run(name, shape=[3, 2], dtype=dtype)
    np.testing.assert_array_equal(got, np.full((3, 2), value, dtype or "float32"))


def test_zeros_needs_a_shape():
    rejects("zeros", [], "needs a `shape` attribute")
    assert infer("ones", [], shape=[]) == tt(())


@pytest.mark.parametrize("dtype", ["float32", "int16", "bool"])
def test_like_initialisers(dtype):
    x = sample(RNG, (2, 3), dtype)
    np.testing.assert_array_equal(run("zeros_like", x), np.zeros((2, 3), dtype))
    np.testing.assert_array_equal(run("ones_like", x), np.ones((2, 3), dtype))
    got = run("full_like", x, np.array(7.9, np.float32))
    want = {"float32": np.float32(7.9), "int16": 7, "bool": True}[dtype]
    np.testing.assert_array_equal(got, np.full((2, 3), want, dtype))
    rejects("full_like", [tt((2,)), tt((1,))], "the fill value must be a scalar")


# =================================================================== arange

@pytest.mark.parametrize("start,stop,step,dtype", [
    (0, 5, 1, "float32"), (0, 5, 2, "float32"), (1.5, 4.0, 0.5, "float64"),
    (10, 0, -3, "int32"), (0, 10, 3, "int64"), (2, 2, 1, "float32"), (5, 0, 1, "int8"),
    (0, 1, 0.1, "float32"), (-4, 4, 3, "int16"), (0, 200, 1, "uint8"),
])
def test_arange(start, stop, step, dtype):
    args = [np.array(v, dtype) for v in (start, stop, step)]
    got = run("arange", *args, start=start, stop=stop, step=step, dtype=dtype)
    s, e, d = (float(np.array(v, dtype)) for v in (start, stop, step))
    want = np.arange(s, e, d).astype(dtype)
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-6)


def test_arange_integer_wraps():
    args = [np.array(v, "int8") for v in (100, 127, 10)]
    got = run("arange", *args, start=100, stop=127, step=10, dtype="int8")
    np.testing.assert_array_equal(got, np.array([100, 110, 120], np.int8))
    # the length comes from the values; element 2 (100 + 2*20 = 140) wraps
    args = [np.array(v, "int8") for v in (100, 127, 20)]
    got = run("arange", *args, start=100, stop=127, step=20, dtype="int8")
    np.testing.assert_array_equal(got, np.array([100, 120], np.int8))


def test_arange_types():
    scalars = [tt(())] * 3
    assert infer("arange", scalars) == tt((ANY,))
    assert infer("arange", scalars, start=0.0, stop=7.0, step=2.0) == tt((4,))
    holes = [IncompleteType(), tt((), "int32"), IncompleteType()]
    assert solve("arange", holes, dtype="int32") == \
        Solved(tt((ANY,), "int32"), (tt((), "int32"), None, tt((), "int32")))
    rejects("arange", [tt(()), tt((), "int32"), tt(())], r"the `stop` argument must be float32")
    rejects("arange", [tt((2,)), tt(()), tt(())], r"the `start` argument must be float32")
    bad_attrs("arange", "step must not be 0", step=0.0)


def test_arange_dynamic_and_mismatch():
    op = get("arange")
    args = [np.array(v, np.float32) for v in (0, 3, 1)]
    got = op.compute(args, op.attrs_type.from_raw({}), tt((ANY,)))
    np.testing.assert_array_equal(got, [0, 1, 2])
    attrs = op.attrs_type.from_raw({"start": 0.0, "stop": 4.0, "step": 1.0})
    with pytest.raises(ValueError, match="the `stop` argument 3.0 differs from the attribute"):
        op.compute(args, attrs, tt((4,)))
