"""argsort, sort and topk against an independent reference: Python's
``sorted`` with an explicit key (stable in both directions, NaN greatest)."""

from __future__ import annotations

import math
import zlib

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from aot.ir.types import ANY, IncompleteType, TupleType
from cases import algorithm as table
from shape_op_helpers import bad_attrs, infer, rejects, run, tt


def tied(shape: tuple, dtype: str) -> np.ndarray:
    """The tables' input, from a generator of this shape and dtype."""
    seed = zlib.crc32(repr((shape, dtype)).encode())
    return table.tied_values(np.random.default_rng(seed), shape, dtype)


def order_1d(values: list, ascending: bool) -> list[int]:
    """Stable order of ``values``: ties by original index, NaN greatest."""
    def key(i: int):
        v = values[i]
        nan = isinstance(v, float) and math.isnan(v)
        if ascending:
            return (nan, 0.0 if nan else v, i)
        return (not nan, 0.0 if nan else -v, i)
    return sorted(range(len(values)), key=key)


def ref_argsort(x: np.ndarray, axis: int, ascending: bool) -> np.ndarray:
    moved = np.moveaxis(x, axis, -1)
    out = np.empty(moved.shape, np.int64)
    for pos in np.ndindex(*moved.shape[:-1]):
        row = [v.item() for v in moved[pos]]
        out[pos] = order_1d(row, ascending)
    return np.moveaxis(out, -1, axis)


@st.composite
def sort_case(draw):
    dtype = draw(st.sampled_from(["float32", "float64", "int8", "int32", "uint8", "bool"]))
    shape = draw(hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=5))
    if dtype.startswith("float"):
        elems = st.sampled_from([-1.5, 0.0, -0.0, 2.0, 3.25, math.nan, math.inf, -math.inf])
    elif dtype == "bool":
        elems = st.booleans()
    else:
        elems = st.integers(0 if dtype.startswith("u") else -3, 3)
    x = draw(hnp.arrays(dtype, shape, elements=elems))
    axis = draw(st.integers(-len(shape), len(shape) - 1))
    return x, axis, draw(st.booleans())


@settings(max_examples=100, deadline=None)
@given(case=sort_case())
def test_argsort_and_sort_are_stable_in_both_directions(case):
    check_sorts(*case)


@pytest.mark.parametrize("ascending", [True, False])
@pytest.mark.parametrize("shape,axis", table.SHAPES)
def test_sort_table(shape, axis, ascending):
    check_sorts(tied(shape, "float32"), axis, ascending)


@pytest.mark.parametrize("ascending", [True, False])
@pytest.mark.parametrize("dtype", table.DTYPES)
def test_sort_dtype_table(dtype, ascending):
    check_sorts(tied((3, 7), dtype), -1, ascending)


@pytest.mark.parametrize("ascending", [True, False])
@pytest.mark.parametrize("n", table.ROW_LENGTHS)
def test_sort_row_length_table(n, ascending):
    check_sorts(tied((2, n), "float32"), 1, ascending)


@pytest.mark.parametrize("dtype", table.INDEX_DTYPES)
def test_argsort_index_dtype_table(dtype):
    x = tied((2, 6), "float32")
    got = run("argsort", x, dtype=dtype)
    assert got.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(got, ref_argsort(x, -1, True).astype(dtype))


def check_sorts(x: np.ndarray, axis: int, ascending: bool) -> None:
    want = ref_argsort(x, axis, ascending)
    got = run("argsort", x, axis=axis, is_ascend=ascending)
    np.testing.assert_array_equal(got, want)
    values = run("sort", x, axis=axis, is_ascend=ascending)
    np.testing.assert_array_equal(values, np.take_along_axis(x, want, axis=axis))


@settings(max_examples=100, deadline=None)
@given(case=sort_case(), k=st.integers(-1, 5))
def test_topk_takes_a_prefix_of_the_stable_order(case, k):
    x, axis, ascending = case
    check_topk(x, k, axis, ascending)


@pytest.mark.parametrize("ret_type", table.RET_TYPES)
@pytest.mark.parametrize("shape,attrs", table.TOPK)
def test_topk_table(ret_type, shape, attrs):
    x = tied(shape, "float32")
    check_topk(x, attrs["k"], attrs.get("axis", -1), attrs.get("is_ascend", False), ret_type)


@pytest.mark.parametrize("k", [1, 2, 3, 6])
@pytest.mark.parametrize("dtype", table.TOPK_DTYPES)
def test_topk_dtype_table(k, dtype):
    check_topk(tied((3, 6), dtype), k, -1, False)


def check_topk(x: np.ndarray, k: int, axis: int, ascending: bool,
               ret_type: str = "both") -> None:
    n = x.shape[axis]
    k = min(k, n)
    order = ref_argsort(x, axis, ascending)
    if k >= 1:
        order = np.take(order, np.arange(k), axis=axis)
    got = run("topk", x, k=k, axis=axis, is_ascend=ascending, ret_type=ret_type)
    values, indices = got if ret_type == "both" else (got, got)
    if ret_type != "values":
        np.testing.assert_array_equal(indices, order)
    if ret_type != "indices":
        np.testing.assert_array_equal(values, np.take_along_axis(x, order, axis=axis))


def test_descending_ties_keep_original_order():
    x = np.array([1, 3, 2, 3, 1], np.int32)
    np.testing.assert_array_equal(run("argsort", x, is_ascend=False), [1, 3, 2, 0, 4])
    np.testing.assert_array_equal(run("argsort", x), [0, 4, 2, 1, 3])
    f = np.array([np.nan, 1.0, np.nan, -np.inf], np.float32)
    np.testing.assert_array_equal(run("argsort", f), [3, 1, 0, 2])
    np.testing.assert_array_equal(run("argsort", f, is_ascend=False), [0, 2, 1, 3])


def test_topk_ret_types_and_dtype():
    x = np.array([[4.0, 1.0, 3.0], [0.0, 5.0, 5.0]], np.float32)
    vals = run("topk", x, k=2, ret_type="values")
    np.testing.assert_array_equal(vals, [[4.0, 3.0], [5.0, 5.0]])
    idx = run("topk", x, k=2, ret_type="indices", dtype="int64")
    assert idx.dtype == np.int64
    np.testing.assert_array_equal(idx, [[0, 2], [1, 2]])
    smallest = run("topk", x, k=1, axis=0, is_ascend=True, ret_type="indices")
    np.testing.assert_array_equal(smallest, [[1, 0, 0]])
    as_float = run("argsort", x, dtype="float32")
    assert as_float.dtype == np.float32


def test_types():
    assert infer("argsort", [tt((ANY, 4))]) == tt((ANY, 4), "int32")
    assert infer("sort", [tt((3,), "int8")], is_ascend=False) == tt((3,), "int8")
    assert infer("topk", [tt((ANY, 4))], k=2) == TupleType((tt((ANY, 2)), tt((ANY, 2), "int32")))
    assert infer("topk", [tt((3, 4))], k=0, axis=0, ret_type="values") == tt((3, 4))
    assert infer("topk", [tt((3, ANY))], k=None, ret_type="indices") == tt((3, ANY), "int32")
    assert infer("topk", [tt((ANY, 4))], k=9, axis=0, ret_type="values") == tt((9, 4))
    assert infer("argsort", [IncompleteType()]) is None


def test_rejects():
    rejects("topk", [tt((3, 4))], r"k=5 exceeds the extent 4 of axis 1", k=5)
    rejects("argsort", [tt((3, 4))], "axis=2 is out of range", axis=2)
    rejects("sort", [tt(())], "out of range for a 0-d tensor")
    bad_attrs("topk", "expected one of 'both', 'values', 'indices'", ret_type="all")
    bad_attrs("argsort", "the index dtype cannot be bool", dtype="bool")


@pytest.mark.parametrize("dtype", ["float16", "int64", "uint32"])
def test_sort_matches_numpy_sort(dtype):
    x = np.random.default_rng(2).integers(0, 100, (4, 7)).astype(dtype)
    np.testing.assert_array_equal(run("sort", x, axis=0), np.sort(x, axis=0))
    np.testing.assert_array_equal(run("sort", x, is_ascend=False), -np.sort(-x.astype(
        np.float64), axis=-1).astype(dtype))
