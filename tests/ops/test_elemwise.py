"""Elementwise and broadcasting operators against NumPy, over a table of
shapes and dtypes, with the exact integer semantics the module documents."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from aot.ir.dtype import DType
from aot.ir.ops.elemwise import floor_divide, floor_mod, trunc_divide, trunc_mod
from aot.ir.registry import RelationError, lookup
from aot.ir.types import ANY, IncompleteType, TensorType, TupleType

RNG = np.random.default_rng(0)
FLOATS = ["float16", "float32", "float64"]
INTS = ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"]
#: tolerance per float dtype (the reference computes in the dtype itself)
RTOL = {"float16": 1e-3, "float32": 1e-6, "float64": 1e-12}


def sample(shape, dtype, positive=False):
    dt = np.dtype(dtype)
    if dt.kind == "f":
        x = RNG.standard_normal(shape).astype(dt)
        return np.abs(x) + dt.type(0.5) if positive else x
    if dt.kind == "b":
        return RNG.integers(0, 2, shape).astype(dt)
    info = np.iinfo(dt)
    lo = 1 if positive else max(info.min, -100)
    return RNG.integers(lo, min(info.max, 100), shape, endpoint=True).astype(dt)


def run(name, *args, **attrs):
    op = lookup(name)
    at = op.attrs_type.from_raw(attrs)
    types = [TensorType(a.shape, DType.from_numpy(a.dtype)) for a in args]
    out = op.rel(types, at)
    result = op.compute(list(args), at, out)
    assert isinstance(result, np.ndarray)
    assert result.dtype == out.dtype.np and result.shape == out.shape
    return result


SHAPES = [((), ()), ((3,), (3,)), ((2, 3), (3,)), ((2, 1, 4), (3, 1)), ((1,), (5, 2))]

BINARY_FLOAT = {
    "add": np.add, "subtract": np.subtract, "multiply": np.multiply, "divide": np.divide,
    "maximum": np.maximum, "minimum": np.minimum, "power": np.power,
    "floor_divide": np.floor_divide, "mod": np.fmod, "floor_mod": np.mod,
}


@pytest.mark.parametrize("name", sorted(BINARY_FLOAT))
@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("shapes", SHAPES)
def test_binary_float(name, dtype, shapes):
    a = sample(shapes[0], dtype, positive=name == "power")
    b = sample(shapes[1], dtype, positive=name in ("power", "divide", "mod", "floor_mod",
                                                     "floor_divide"))
    want = BINARY_FLOAT[name](a, b)
    np.testing.assert_allclose(run(name, a, b), want.astype(dtype), rtol=RTOL[dtype])


@pytest.mark.parametrize("name", ["add", "subtract", "multiply", "maximum", "minimum"])
@pytest.mark.parametrize("dtype", INTS)
def test_binary_int_wraps(name, dtype):
    info = np.iinfo(dtype)
    a = np.array([info.max, info.min, 7, 0], dtype=dtype)
    b = np.array([1, 1, 3, 0], dtype=dtype) if info.min == 0 else \
        np.array([1, -1, 3, 0], dtype=dtype)
    with np.errstate(all="ignore"):
        want = {"add": np.add, "subtract": np.subtract, "multiply": np.multiply,
                "maximum": np.maximum, "minimum": np.minimum}[name](a, b)
    np.testing.assert_array_equal(run(name, a, b), want)


def c_div(a: int, b: int) -> int:
    """C99 truncating division, spelled out on Python ints."""
    if b == 0:
        return 0
    q = abs(a) // abs(b)
    return q if (a < 0) == (b < 0) else -q


@pytest.mark.parametrize("dtype", ["int8", "int16", "int32", "int64"])
def test_integer_division_truncates_like_c(dtype):
    info = np.iinfo(dtype)
    vals = [-7, 7, -1, 0, 1, 5, -5, int(info.min), int(info.max)]
    a = np.array([x for x in vals for _ in vals], dtype=dtype)
    b = np.array([y for _ in vals for y in vals], dtype=dtype)
    got_q = run("divide", a, b)
    got_r = run("mod", a, b)
    for x, y, q, r in zip(a.tolist(), b.tolist(), got_q.tolist(), got_r.tolist()):
        want_q = c_div(x, y)
        if want_q > info.max:  # INT_MIN / -1 wraps
            want_q = int(info.min)
        assert q == want_q, (x, y)
        assert r == (0 if y == 0 else x - c_div(x, y) * y if c_div(x, y) <= info.max else 0)


@pytest.mark.parametrize("dtype", ["int8", "int32", "uint8"])
def test_floor_division_and_modulo(dtype):
    a = sample((50,), dtype)
    b = sample((50,), dtype)
    b[::7] = 0
    for name, fn in [("floor_divide", floor_divide), ("floor_mod", floor_mod)]:
        got = run(name, a, b)
        for x, y, g in zip(a.tolist(), b.tolist(), got.tolist()):
            if y == 0:
                assert g == 0
            elif name == "floor_divide":
                assert g == x // y
            else:
                assert g == x % y
    assert fn is floor_mod


def test_division_helpers_broadcast():
    a = np.array([[7], [-7]], dtype=np.int32)
    b = np.array([2, -2, 0], dtype=np.int32)
    np.testing.assert_array_equal(trunc_divide(a, b), [[3, -3, 0], [-3, 3, 0]])
    np.testing.assert_array_equal(trunc_mod(a, b), [[1, 1, 0], [-1, -1, 0]])


def test_integer_power():
    a = np.array([2, -3, 1, -1, 5, 2], dtype=np.int32)
    b = np.array([10, 3, -4, -3, -1, 40], dtype=np.int32)
    got = run("power", a, b)
    want = [1024, -27, 1, -1, 0, (2 ** 40) % (2 ** 32)]
    want = [w - 2 ** 32 if w >= 2 ** 31 else w for w in want]
    np.testing.assert_array_equal(got, want)


COMPARE = {"equal": np.equal, "not_equal": np.not_equal, "less": np.less,
           "less_equal": np.less_equal, "greater": np.greater,
           "greater_equal": np.greater_equal}


@pytest.mark.parametrize("name", sorted(COMPARE))
@pytest.mark.parametrize("dtype", ["float32", "int8", "uint16", "bool"])
def test_comparisons_give_bool(name, dtype):
    a = sample((4, 3), dtype)
    b = sample((3,), dtype)
    got = run(name, a, b)
    assert got.dtype == np.bool_
    np.testing.assert_array_equal(got, COMPARE[name](a, b))


@pytest.mark.parametrize("name, fn", [("logical_and", np.logical_and),
                                      ("logical_or", np.logical_or),
                                      ("logical_xor", np.logical_xor)])
def test_logical(name, fn):
    a = sample((5,), "bool")
    b = sample((5,), "bool")
    np.testing.assert_array_equal(run(name, a, b), fn(a, b))
    np.testing.assert_array_equal(run("logical_not", a), ~a)


UNARY = {
    "exp": np.exp, "log": np.log, "sqrt": np.sqrt, "tanh": np.tanh, "floor": np.floor,
    "ceil": np.ceil, "trunc": np.trunc, "round": np.round, "negative": np.negative,
    "abs": np.abs, "sign": np.sign, "sin": np.sin, "cos": np.cos, "copy": np.copy,
    "sigmoid": lambda x: 1 / (1 + np.exp(-x)), "rsqrt": lambda x: 1 / np.sqrt(x),
    "erf": np.vectorize(math.erf),
}


@pytest.mark.parametrize("name", sorted(UNARY))
@pytest.mark.parametrize("dtype", FLOATS)
def test_unary_float(name, dtype):
    x = sample((3, 4), dtype, positive=name in ("log", "sqrt", "rsqrt"))
    want = UNARY[name](x.astype(np.float64)).astype(dtype)
    np.testing.assert_allclose(run(name, x), want, rtol=RTOL[dtype] * 10,
                               atol=RTOL[dtype])


def test_round_is_half_to_even():
    x = np.array([0.5, 1.5, 2.5, -0.5, -1.5], dtype=np.float32)
    np.testing.assert_array_equal(run("round", x), [0, 2, 2, -0, -2])


def test_float_math_on_integers_truncates_and_saturates():
    x = np.array([10000, 1, 0, -3], dtype=np.int32)
    np.testing.assert_array_equal(run("log", x), [9, 0, np.iinfo(np.int32).min, 0])
    np.testing.assert_array_equal(run("sqrt", np.array([17, 4], dtype=np.uint8)), [4, 2])


def test_abs_and_negative_wrap():
    x = np.array([-128, 5], dtype=np.int8)
    np.testing.assert_array_equal(run("abs", x), [-128, 5])
    np.testing.assert_array_equal(run("negative", x), [-128, -5])


@settings(max_examples=60, deadline=None)
@given(hnp.mutually_broadcastable_shapes(num_shapes=2, max_dims=4, max_side=4))
def test_broadcast_relation_matches_numpy(shapes):
    (s1, s2), want = shapes.input_shapes, shapes.result_shape
    out = lookup("add").rel([TensorType(s1, DType.FLOAT32), TensorType(s2, DType.FLOAT32)],
                            lookup("add").attrs_type())
    assert out == TensorType(tuple(want), DType.FLOAT32)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(2, 5), min_size=1, max_size=3),
       st.lists(st.integers(2, 5), min_size=1, max_size=3))
def test_broadcast_relation_rejects_what_numpy_rejects(s1, s2):
    try:
        np.broadcast_shapes(tuple(s1), tuple(s2))
        ok = True
    except ValueError:
        ok = False
    op = lookup("multiply")
    args = [TensorType(tuple(s1), DType.INT32), TensorType(tuple(s2), DType.INT32)]
    if ok:
        op.rel(args, op.attrs_type())
    else:
        with pytest.raises(RelationError, match="do not broadcast"):
            op.rel(args, op.attrs_type())


def test_relation_cases():
    add = lookup("add")
    f32 = DType.FLOAT32
    at = add.attrs_type()
    assert add.rel([TensorType((ANY, 3), f32), TensorType((3,), f32)], at) == \
        TensorType((ANY, 3), f32)
    assert add.rel([TensorType((ANY,), f32), TensorType((1,), f32)], at) == \
        TensorType((ANY,), f32)
    assert add.rel([IncompleteType(), TensorType((3,), f32)], at) is None
    with pytest.raises(RelationError, match="dtype mismatch"):
        add.rel([TensorType((3,), f32), TensorType((3,), DType.INT32)], at)
    with pytest.raises(RelationError, match="expects a tensor"):
        add.rel([TupleType(()), TensorType((3,), f32)], at)
    less = lookup("less")
    assert less.rel([TensorType((2,), DType.INT8)] * 2, at) == TensorType((2,), DType.BOOL)


def test_float_math_on_64_bit_integers_saturates_at_the_limits():
    big = np.array([2 ** 62], dtype=np.int64)
    # exp(2**62) is +inf in float64: it saturates to INT64_MAX, not INT64_MIN
    assert run("exp", big).tolist() == [np.iinfo(np.int64).max]
    assert run("exp", np.array([100], dtype=np.uint64)).tolist() == [np.iinfo(np.uint64).max]
