"""Reductions against NumPy and direct loops: random shapes, random axis
subsets (negative axes included), keepdims and exclude, plus the
documented integer, NaN and empty-slice semantics."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from aot.ir.types import ANY, IncompleteType
from cases import reduce as table
from shape_op_helpers import FLOATS, INTS, RTOL, get, infer, rejects, run, sample, tt

RNG = np.random.default_rng(17)


def ref_axes(ndim: int, axis: list[int] | None, exclude: bool) -> tuple[int, ...]:
    """The specification of the reduced axes (Relay's GetReduceAxes)."""
    if not axis:
        return tuple(range(ndim))
    listed = {a % ndim for a in axis}
    if exclude:
        return tuple(a for a in range(ndim) if a not in listed)
    return tuple(sorted(listed))


@st.composite
def reduce_case(draw, min_side=1):
    shape = draw(hnp.array_shapes(min_dims=1, max_dims=4, min_side=min_side, max_side=4))
    ndim = len(shape)
    if draw(st.booleans()):
        axis = None
    else:
        picked = draw(st.lists(st.integers(0, ndim - 1), unique=True, max_size=ndim))
        axis = [a - ndim if draw(st.booleans()) else a for a in picked]
    return shape, axis, draw(st.booleans()), draw(st.booleans())


def trunc_div(total: int, count: int) -> int:
    q = abs(total) // count
    return q if total >= 0 else -q


def reference(name: str, x: np.ndarray, axes: tuple[int, ...], keepdims: bool) -> np.ndarray:
    dt = x.dtype
    if name == "sum":
        return np.sum(x, axis=axes, keepdims=keepdims, dtype=dt)   # wraps in the dtype
    if name == "prod":
        return np.prod(x, axis=axes, keepdims=keepdims, dtype=dt)
    # the identity of an empty max / min: the lowest / highest value
    lowest, highest = ((-np.inf, np.inf) if dt.kind == "f" else (False, True) if dt.kind == "b"
                       else (np.iinfo(dt).min, np.iinfo(dt).max))
    if name == "max":
        return np.max(x, axis=axes, keepdims=keepdims, initial=lowest)
    if name == "min":
        return np.min(x, axis=axes, keepdims=keepdims, initial=highest)
    if name == "all":
        return np.all(x != 0, axis=axes, keepdims=keepdims).astype(dt)
    if name == "any":
        return np.any(x != 0, axis=axes, keepdims=keepdims).astype(dt)
    if name == "mean":
        if dt.kind == "f":
            return np.mean(x, axis=axes, keepdims=keepdims)
        count = math.prod(x.shape[a] for a in axes)
        sums = np.sum(x, axis=axes, keepdims=keepdims, dtype=dt)
        return np.vectorize(lambda s: trunc_div(int(s), count), otypes=[dt])(sums)
    raise AssertionError(name)


def check_close(got: np.ndarray, want: np.ndarray, x: np.ndarray, axes, keepdims) -> None:
    if x.dtype.kind != "f":
        np.testing.assert_array_equal(got, want)
        return
    # float: the operator sums in float64, the reference in the dtype
    scale = np.sum(np.abs(x.astype(np.float64)), axis=axes, keepdims=keepdims) + 1
    got, want = got.astype(np.float64), want.astype(np.float64)
    same = (got == want) | (np.isnan(got) & np.isnan(want))   # infinities, the mean of nothing
    with np.errstate(invalid="ignore"):
        near = np.abs(got - want) <= RTOL[x.dtype.name] * 4 * scale
    assert np.all(near | same)


@settings(max_examples=150, deadline=None)
@given(case=reduce_case(), name=st.sampled_from(table.REDUCERS),
       dtype=st.sampled_from(FLOATS + INTS))
def test_reductions_match_numpy(case, name, dtype):
    shape, axis, keepdims, exclude = case
    check_reducer(name, shape, dtype, axis, keepdims, exclude)


@pytest.mark.parametrize("name", table.REDUCERS)
@pytest.mark.parametrize("shape,attrs", table.AXES)
def test_axis_table(name, shape, attrs):
    check_reducer(name, shape, "float32", attrs.get("axis"), attrs.get("keepdims", False),
                  attrs.get("exclude", False))


@pytest.mark.parametrize("name,dtype", [(op, dt) for op, dts in table.DTYPES.items()
                                        for dt in dts])
@pytest.mark.parametrize("shape,attrs", table.DTYPE_AXES)
def test_dtype_table(name, dtype, shape, attrs):
    check_reducer(name, shape, dtype, attrs["axis"], False, False)


def check_reducer(name: str, shape: tuple, dtype: str, axis: list[int] | None,
                  keepdims: bool, exclude: bool) -> None:
    lo, hi = (-3, 3) if name == "prod" else (-50, 50)
    x = sample(np.random.default_rng(sum(shape)), shape, dtype, lo=lo, hi=hi)
    if name == "prod" and x.dtype.kind == "f":
        x = np.asarray(np.abs(x) % 1 + 0.5, dtype)
    axes = ref_axes(len(shape), axis, exclude)
    got = run(name, x, axis=axis, keepdims=keepdims, exclude=exclude)
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)      # the mean of nothing
        want = reference(name, x, axes, keepdims)
    assert got.shape == np.shape(want)
    check_close(got, np.asarray(want), x, axes, keepdims)


def arg_reference(x: np.ndarray, axes: tuple[int, ...], keepdims: bool, last: bool,
                  better) -> np.ndarray:
    """Direct loop: scan the reduced sub-block in row-major order."""
    kept = [i for i in range(x.ndim) if i not in axes]
    out_shape = tuple(1 if i in axes else x.shape[i] for i in range(x.ndim)) if keepdims \
        else tuple(x.shape[i] for i in kept)
    out = np.zeros(out_shape, np.int32)
    for kpos in np.ndindex(*[x.shape[i] for i in kept]):
        best, best_i = None, 0
        for flat, rpos in enumerate(np.ndindex(*[x.shape[i] for i in axes])):
            full = [0] * x.ndim
            for i, p in zip(kept, kpos):
                full[i] = p
            for i, p in zip(axes, rpos):
                full[i] = p
            v = x[tuple(full)]
            if best is None or better(v, best) or (last and v == best):
                best, best_i = v, flat
        opos = tuple(kpos[kept.index(i)] if i in kept else 0 for i in range(x.ndim)) \
            if keepdims else kpos
        out[opos] = best_i
    return out


@settings(max_examples=80, deadline=None)
@given(case=reduce_case(), which=st.sampled_from(table.ARG_REDUCERS),
       last=st.booleans(), dtype=st.sampled_from(["float32", "int8", "uint16", "bool"]))
def test_arg_reductions_match_a_loop(case, which, last, dtype):
    shape, axis, keepdims, exclude = case
    check_arg_reduction(which, shape, dtype, axis, keepdims, exclude, last)


@pytest.mark.parametrize("which", table.ARG_REDUCERS)
@pytest.mark.parametrize("last", [False, True])
@pytest.mark.parametrize("shape,attrs", table.nonscalar(table.AXES))
def test_arg_axis_table(which, last, shape, attrs):
    check_arg_reduction(which, shape, "int8", attrs.get("axis"), attrs.get("keepdims", False),
                        attrs.get("exclude", False), last)


@pytest.mark.parametrize("which", table.ARG_REDUCERS)
@pytest.mark.parametrize("last", [False, True])
@pytest.mark.parametrize("dtype", table.ARG_DTYPES)
def test_arg_dtype_table(which, last, dtype):
    check_arg_reduction(which, (3, 6), dtype, [-1], False, False, last)


def check_arg_reduction(which: str, shape: tuple, dtype: str, axis: list[int] | None,
                        keepdims: bool, exclude: bool, last: bool) -> None:
    x = sample(np.random.default_rng(len(shape)), shape, dtype, lo=-2, hi=2)  # many ties
    axes = ref_axes(len(shape), axis, exclude)
    got = run(which, x, axis=axis, keepdims=keepdims, exclude=exclude,
              select_last_index=last)
    better = (lambda a, b: a > b) if which == "argmax" else (lambda a, b: a < b)
    np.testing.assert_array_equal(got, arg_reference(x, axes, keepdims, last, better))


# ============================================================ exact semantics

def test_integer_sum_and_mean_wrap_and_truncate():
    x = np.array([100, 100], np.int8)
    assert run("sum", x).item() == -56
    assert run("mean", x).item() == -28                # the wrapped sum, halved
    y = np.array([[-3, -4], [3, 4]], np.int32)
    np.testing.assert_array_equal(run("mean", y, axis=[1]), [-3, 3])
    assert run("sum", np.array([200, 100], np.uint8)).item() == 44
    big = np.array([2 ** 62, 2 ** 62], np.int64)
    assert run("sum", big).item() == -(2 ** 63)
    assert run("prod", np.array([2 ** 32, 2 ** 32], np.uint64)).item() == 0


def test_max_min_propagate_nan():
    x = np.array([[1.0, np.nan, 3.0], [1.0, 2.0, 3.0]], np.float32)
    got = run("max", x, axis=[1])
    assert np.isnan(got[0]) and got[1] == 3.0
    got = run("min", x, axis=[1])
    assert np.isnan(got[0]) and got[1] == 1.0


def test_argmax_nan_and_ties():
    x = np.array([1.0, np.nan, 5.0, np.nan], np.float32)
    assert run("argmax", x).item() == 1
    assert run("argmax", x, select_last_index=True).item() == 3
    y = np.array([1, 3, 3, 2, 1], np.int16)
    assert run("argmax", y).item() == 1
    assert run("argmax", y, select_last_index=True).item() == 2
    assert run("argmin", y).item() == 0
    assert run("argmin", y, select_last_index=True).item() == 4


@pytest.mark.parametrize("dtype", ["float32", "int16", "uint8"])
def test_empty_reductions(dtype):
    x = np.zeros((0, 3), dtype)
    np.testing.assert_array_equal(run("sum", x, axis=[0]), np.zeros(3, dtype))
    np.testing.assert_array_equal(run("prod", x, axis=[0]), np.ones(3, dtype))
    lowest = -np.inf if dtype == "float32" else np.iinfo(dtype).min
    highest = np.inf if dtype == "float32" else np.iinfo(dtype).max
    np.testing.assert_array_equal(run("max", x, axis=[0]), np.full(3, lowest, dtype))
    np.testing.assert_array_equal(run("min", x, axis=[0]), np.full(3, highest, dtype))
    np.testing.assert_array_equal(run("argmax", x, axis=[0]), np.zeros(3, np.int32))
    mean = run("mean", x, axis=[0])
    if dtype == "float32":
        assert np.all(np.isnan(mean))
    else:
        np.testing.assert_array_equal(mean, np.zeros(3, dtype))
    np.testing.assert_array_equal(run("all", x, axis=[0]), np.ones(3, dtype))
    np.testing.assert_array_equal(run("any", x, axis=[0]), np.zeros(3, dtype))


def test_all_any_treat_nonzero_as_true():
    x = np.array([[0.5, 0.0], [-2.0, 3.0]], np.float32)
    np.testing.assert_array_equal(run("all", x, axis=[1]), np.array([0, 1], np.float32))
    np.testing.assert_array_equal(run("any", x, axis=[0]), np.array([1, 1], np.float32))
    b = np.array([[True, False], [True, True]])
    np.testing.assert_array_equal(run("all", b, axis=[1]), [False, True])


def test_axis_edge_cases():
    x = sample(RNG, (2, 3, 4), "int32")
    # exclude listing every axis reduces nothing; axis=[] reduces everything
    np.testing.assert_array_equal(run("sum", x, axis=[0, 1, 2], exclude=True), x)
    assert run("sum", x, axis=[]).item() == int(x.sum())
    # a 0-d input reduces to itself
    s = np.array(7, np.int8)
    assert run("sum", s).item() == 7 and run("max", s, keepdims=True).shape == ()


# ================================================================ relations

def test_reduce_types():
    assert infer("sum", [tt((ANY, 3, 4))], axis=[1]) == tt((ANY, 4))
    assert infer("mean", [tt((ANY, 3, 4))], axis=[-1], keepdims=True) == tt((ANY, 3, 1))
    assert infer("max", [tt((2, 3))], axis=[0], exclude=True) == tt((2,))
    assert infer("argmax", [tt((2, 3), "float16")], axis=[1]) == tt((2,), "int32")
    assert infer("argmin", [tt((2, 3))], keepdims=True) == tt((1, 1), "int32")
    assert infer("sum", [IncompleteType()]) is None


@pytest.mark.parametrize("name,t,attrs,match", [
    ("sum", tt((2, 3)), {"axis": [2]}, "axis=2 is out of range for a tensor of rank 2"),
    ("sum", tt((2, 3)), {"axis": [1, -1]}, r"axis \[1, -1\] names dimension 1 twice"),
    ("sum", tt((2,), "bool"), {}, "needs a numeric tensor"),
    ("mean", tt((2,), "bool"), {}, "needs a numeric tensor"),
    ("logsumexp", tt((2,), "int32"), {}, "needs a floating-point tensor"),
    ("argmax", tt(()), {}, "needs a tensor of rank >= 1"),
])
def test_reduce_rejects(name, t, attrs, match):
    rejects(name, [t], match, **attrs)


def test_attrs_round_trip():
    op = get("argmax")
    at = op.attrs_type.from_raw({"axis": 1, "keepdims": True, "select_last_index": True})
    assert at.axis == (1,)
    assert at.to_raw() == {"axis": [1], "keepdims": True, "select_last_index": True}


# ======================================================= variance and std

@settings(max_examples=60, deadline=None)
@given(case=reduce_case(), unbiased=st.booleans(), dtype=st.sampled_from(FLOATS))
def test_variance_and_std_match_numpy(case, unbiased, dtype):
    shape, axis, keepdims, exclude = case
    x = sample(np.random.default_rng(len(shape) + 1), shape, dtype)
    axes = ref_axes(len(shape), axis, exclude)
    mean = np.mean(x.astype(np.float64), axis=axes, keepdims=True).astype(dtype)
    check_variance(x, mean, axis, keepdims, exclude, unbiased)


@pytest.mark.parametrize("dtype", table.FLOATS)
@pytest.mark.parametrize("unbiased", [False, True])
@pytest.mark.parametrize("shape,attrs,mean_shape", table.VARIANCE_AXES)
def test_variance_table(dtype, unbiased, shape, attrs, mean_shape):
    """Both variance and std (table.STATISTICS) on one row."""
    rng = np.random.default_rng(len(shape) + 1)
    x = sample(rng, shape, dtype)
    mean = (sample(rng, mean_shape, dtype) * np.asarray(0.1, dtype)).astype(dtype)
    check_variance(x, mean, attrs.get("axis"), attrs.get("keepdims", False),
                   attrs.get("exclude", False), unbiased)


def check_variance(x: np.ndarray, mean: np.ndarray, axis: list[int] | None, keepdims: bool,
                   exclude: bool, unbiased: bool) -> None:
    shape, dtype = x.shape, x.dtype.name
    axes = ref_axes(len(shape), axis, exclude)
    ddof = 1 if unbiased else 0
    count = math.prod(shape[a] for a in axes)
    attrs = dict(axis=axis, keepdims=keepdims, exclude=exclude, unbiased=unbiased)
    var = run("variance", x, mean, **attrs)
    std = run("std", x, mean, **attrs)
    d = x.astype(np.float64) - mean.astype(np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):  # count - ddof is 0 or -1
        want = np.sum(d * d, axis=axes, keepdims=keepdims) / (count - ddof)
        want_std = np.sqrt(want)
    np.testing.assert_allclose(var, want.astype(dtype), rtol=RTOL[dtype] * 4, atol=1e-6)
    np.testing.assert_allclose(std, want_std.astype(dtype), rtol=RTOL[dtype] * 4, atol=1e-6)


def test_variance_with_numpy_var():
    x = sample(RNG, (3, 5), "float64")
    m = np.mean(x, axis=1, keepdims=True)
    np.testing.assert_allclose(run("variance", x, m, axis=[1], unbiased=True),
                               np.var(x, axis=1, ddof=1))
    np.testing.assert_allclose(run("std", x, m, axis=[1]), np.std(x, axis=1))


@pytest.mark.parametrize("data,mean,match", [
    (tt((2, 3), "int32"), tt((2, 1), "int32"), "needs a floating-point tensor"),
    (tt((2, 3)), tt((2,)), "must have the rank of the data"),
    (tt((2, 3)), tt((2, 1), "float64"), "the mean is float64 but the data is float32"),
    (tt((2, 3)), tt((2, 2)), r"the mean \(2, 2\) does not broadcast to the data"),
    (tt(()), tt(()), "rank >= 1"),
])
def test_variance_rejects(data, mean, match):
    rejects("variance", [data, mean], match, axis=[1])


def test_variance_types():
    assert infer("variance", [tt((ANY, 3)), tt((ANY, 1))], axis=[1]) == tt((ANY,))
    assert infer("std", [tt((2, 3)), tt((1, 1))], keepdims=True) == tt((1, 1))


# ================================================================ logsumexp

@pytest.mark.parametrize("dtype", table.FLOATS)
@pytest.mark.parametrize("shape,attrs", table.LOGSUMEXP_AXES)
def test_logsumexp_table(dtype, shape, attrs):
    x = sample(RNG, shape, dtype) * np.asarray(3, dtype)
    axes = ref_axes(len(shape), attrs.get("axis"), False)
    with np.errstate(divide="ignore"):                   # the log of an empty sum
        want = np.log(np.sum(np.exp(x.astype(np.float64)), axis=axes,
                             keepdims=attrs.get("keepdims", False)))
    np.testing.assert_allclose(run("logsumexp", x, **attrs), want.astype(dtype),
                               rtol=RTOL[dtype] * 4)


@pytest.mark.parametrize("dtype", FLOATS)
def test_logsumexp(dtype):
    x = sample(RNG, (3, 4), dtype)
    want = np.log(np.sum(np.exp(x.astype(np.float64)), axis=1))
    np.testing.assert_allclose(run("logsumexp", x, axis=[1]), want.astype(dtype),
                               rtol=RTOL[dtype])
    big = np.array([1000.0, 1000.0, -np.inf], dtype)
    np.testing.assert_allclose(run("logsumexp", big), np.array(1000 + math.log(2), dtype),
                               rtol=RTOL[dtype])
    assert run("logsumexp", np.full((2,), -np.inf, dtype)).item() == -np.inf
    assert run("logsumexp", x, axis=[0], keepdims=True).shape == (1, 4)
