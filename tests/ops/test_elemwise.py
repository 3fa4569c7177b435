"""Elementwise and broadcasting operators against NumPy, over the family's
cases derived from the registry (tests/cases/elemwise.py), with the exact
integer semantics the module documents."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import aot
from aot.diagnostics import DiagnosticError
from aot.ir.dtype import DType
from aot.ir.ops.elemwise import floor_divide, floor_mod, trunc_divide, trunc_mod
from aot.ir.registry import RelationError, lookup
from aot.ir.types import ANY, IncompleteType, TensorType, TupleType
from cases import elemwise

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


def _erf(x):
    return np.vectorize(math.erf, otypes=[np.float64])(x)


def _cast_like(x, like):
    return x.astype(like.dtype)


#: the independent NumPy oracle of every operator of the elementwise family
#: (tests/cases/elemwise.py derives the family from the registry): the
#: function and the dtype kinds it is an oracle for ("f" float, "i"/"u"
#: integers, "b" bool; integer division, power and float math on integers
#: have tests of their own below).  Unary float math is computed in float64
#: and rounded once to the dtype; the rest in the dtype itself.
ORACLE = {
    "add": (np.add, "fiub"), "subtract": (np.subtract, "fiu"), "multiply": (np.multiply, "fiu"),
    "divide": (np.divide, "f"), "floor_divide": (np.floor_divide, "f"), "mod": (np.fmod, "f"),
    "floor_mod": (np.mod, "f"), "power": (np.power, "f"),
    "maximum": (np.maximum, "fiub"), "minimum": (np.minimum, "fiub"),
    "equal": (np.equal, "fiub"), "not_equal": (np.not_equal, "fiub"),
    "less": (np.less, "fiub"), "less_equal": (np.less_equal, "fiub"),
    "greater": (np.greater, "fiub"), "greater_equal": (np.greater_equal, "fiub"),
    "logical_and": (np.logical_and, "b"), "logical_or": (np.logical_or, "b"),
    "logical_xor": (np.logical_xor, "b"), "logical_not": (np.logical_not, "b"),
    "bitwise_and": (np.bitwise_and, "iu"), "bitwise_or": (np.bitwise_or, "iu"),
    "bitwise_xor": (np.bitwise_xor, "iu"), "bitwise_not": (np.invert, "iu"),
    "left_shift": (np.left_shift, "iu"), "right_shift": (np.right_shift, "iu"),
    "exp": (np.exp, "f"), "log": (np.log, "f"), "log2": (np.log2, "f"),
    "log10": (np.log10, "f"), "sqrt": (np.sqrt, "f"), "rsqrt": (lambda x: 1 / np.sqrt(x), "f"),
    "sigmoid": (lambda x: 1 / (1 + np.exp(-x)), "f"), "tanh": (np.tanh, "f"),
    "erf": (_erf, "f"), "sin": (np.sin, "f"), "cos": (np.cos, "f"), "tan": (np.tan, "f"),
    "asin": (np.arcsin, "f"), "acos": (np.arccos, "f"), "atan": (np.arctan, "f"),
    "sinh": (np.sinh, "f"), "cosh": (np.cosh, "f"), "floor": (np.floor, "f"),
    "ceil": (np.ceil, "f"), "trunc": (np.trunc, "f"), "round": (np.round, "f"),
    "negative": (np.negative, "fiu"), "abs": (np.abs, "fiu"), "sign": (np.sign, "fiu"),
    "copy": (np.copy, "fiub"), "isnan": (np.isnan, "fiu"), "isinf": (np.isinf, "fiu"),
    "isfinite": (np.isfinite, "fiu"), "nn.relu": (lambda x: np.maximum(x, 0), "fiu"),
    "ones_like": (np.ones_like, "fiub"), "zeros_like": (np.zeros_like, "fiub"),
    "full_like": (lambda x, v: np.full_like(x, v), "fiub"), "cast_like": (_cast_like, "fiub"),
    "broadcast_to_like": (lambda x, like: np.broadcast_to(x, like.shape), "fiub"),
    # the fast approximations against the exact functions (their bounds:
    # tests/ops/test_fast_math.py)
    "fast_exp": (np.exp, "f"), "fast_tanh": (np.tanh, "f"), "fast_erf": (_erf, "f"),
}
WIDE = {"exp", "log", "log2", "log10", "sqrt", "rsqrt", "sigmoid", "tanh", "erf", "sin", "cos",
        "tan", "asin", "acos", "atan", "sinh", "cosh", "fast_exp", "fast_tanh", "fast_erf"}
#: arguments drawn from a positive range, so the oracle compares numbers
POSITIVE = {"log": (0,), "log2": (0,), "log10": (0,), "sqrt": (0,), "rsqrt": (0,),
            "power": (0, 1), "divide": (1,), "floor_divide": (1,), "mod": (1,),
            "floor_mod": (1,)}

OP_DTYPES = [pytest.param(op, dt, id=f"{op}-{dt}")
             for op, dt in sorted({(c.op, c.dtype) for c in elemwise.all_cases()})]


@pytest.mark.parametrize("op", ["subtract", "divide", "floor_divide", "mod", "floor_mod",
                                "power"])
def test_arithmetic_on_bool_is_a_type_error(op):
    """NumPy refuses (or disagrees with C on) these on truth values; the
    relation says so instead of the reference or the lowering failing."""
    text = f"def @main(%a: Tensor[(2,), bool], %b: Tensor[(2,), bool]) {{ {op}(%a, %b) }}"
    with pytest.raises(DiagnosticError, match=f"{op} is not defined on bool"):
        aot.infer_types(aot.parse(text))



def test_every_elementwise_operator_has_an_oracle():
    missing = sorted(elemwise.ops_with_cases() - set(ORACLE))
    assert not missing, (
        f"elementwise operators without a NumPy oracle in tests/ops/test_elemwise.py: "
        f"{missing}; add each to ORACLE with the dtype kinds it is an oracle for")
    unknown = sorted(set(ORACLE) - elemwise.ops_with_cases())
    assert not unknown, f"ORACLE entries for operators without elementwise cases: {unknown}"


@pytest.mark.parametrize("name,dtype", OP_DTYPES)
def test_against_numpy(name, dtype):
    """Every derived case of (``name``, ``dtype``), one per shape: the result
    has the type the relation infers and, where ``ORACLE`` is an oracle for
    the dtype, its values."""
    fn, kinds = ORACLE[name]
    for c in elemwise.all_cases():
        if (c.op, c.dtype) != (name, dtype):
            continue
        args = [sample(s, dtype, positive=k in POSITIVE.get(name, ()))
                for k, s in enumerate(c.shapes)]
        got = run(name, *args)
        if np.dtype(dtype).kind not in kinds:
            continue
        with np.errstate(all="ignore"):
            if name in WIDE:
                want = fn(*[a.astype(np.float64) for a in args]).astype(dtype)
            else:
                want = np.asarray(fn(*args))
        if want.dtype.kind == "f":
            rtol = RTOL[dtype] * (10 if name in WIDE else 1)
            np.testing.assert_allclose(got, want, rtol=rtol, atol=RTOL[dtype], err_msg=c.name)
        else:
            np.testing.assert_array_equal(got, want, err_msg=c.name)


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


def test_power_of_huge_uint64_exponents():
    """(2**64 - 1) ** e wraps to 1 for even e and 2**64 - 1 for odd e, as
    the C backend says (uint64 exponents from 2**63 up were read as int64,
    so negative, and gave 0)."""
    base = np.array([2 ** 64 - 1] * 2, np.uint64)
    exps = np.array([2 ** 63, 2 ** 64 - 1], np.uint64)
    np.testing.assert_array_equal(run("power", base, exps), [1, 2 ** 64 - 1])


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
