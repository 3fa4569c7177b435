"""The elemwise family (aot/ir/ops/elemwise.py) compiled to C against the
interpreter: every unary operator over the float dtypes with NaN, inf and
-0.0 mixed in, and over the integer dtypes (float math on integers
truncates and saturates); every binary operator over broadcast shapes and
dtypes, with zero divisors and ``INT_MIN / -1`` for integer division;
comparisons and logic (nonzero is true).  Tables after
tests/ops/test_elemwise.py.  One build per test (see test_ops_c.py)."""

from __future__ import annotations

import numpy as np
import pytest

from c_harness import check_cases
from test_ops_c import case, check_signed_zeros, data, memory_limit, rng_for

FLOATS = ["float32", "float16", "float64"]

FLOAT_MATH = ["exp", "log", "log2", "log10", "sqrt", "rsqrt", "sigmoid", "tanh", "erf", "sin",
              "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "floor", "ceil", "trunc",
              "round"]
SAME_TYPE = ["negative", "abs", "sign", "copy"]
PREDICATES = ["isnan", "isinf", "isfinite"]

#: halfway values (round is half to even) and values around the domains
FLOAT_EDGES = [0.5, 1.5, 2.5, -0.5, -2.5, 1.0, -1.0, 0.99, 20.0, -20.0, 100.0, 1e-3]


def float_input(name: str, dtype: str, shape=(4, 6)) -> np.ndarray:
    x = data(rng_for(name), shape, dtype, specials=True) * np.asarray(2, dtype)
    flat = x.reshape(-1)
    flat[-len(FLOAT_EDGES):] = FLOAT_EDGES
    return x


def unary_float_cases():
    out = []
    for op in FLOAT_MATH + SAME_TYPE + PREDICATES + ["logical_not"]:
        for dt in FLOATS:
            name = f"{op}:{dt}"
            out.append(case(name, [("x", (4, 6), dt)], f"{op}(%x)", [float_input(name, dt)]))
    out.append(case("exp:scalar", [("x", (), "float32")], "exp(%x)",
                    [np.array(88.5, np.float32)]))
    out.append(case("sigmoid:saturated", [("x", (6,), "float32")], "sigmoid(%x)",
                    [np.array([-100, -30, 30, 100, -88.7, 89], np.float32)]))
    out.append(case("tanh:saturated", [("x", (4,), "float16")], "tanh(%x)",
                    [np.array([-12, 12, 0.001, -0.0], np.float16)]))
    return out


INT_DTYPES = ["int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64"]

#: float math on integers is computed in float64 and converted back by
#: truncation, saturating; a few representative functions per dtype
INT_FLOAT_MATH = ["exp", "log", "sqrt", "rsqrt", "sigmoid", "tanh", "sin", "cosh", "round",
                  "log2", "erf", "acos"]


def unary_int_cases():
    out = []
    for dt in INT_DTYPES:
        for op in SAME_TYPE + ["logical_not", "isnan", "isfinite", "isinf"]:
            name = f"{op}:{dt}"
            out.append(case(name, [("x", (3, 5), dt)], f"{op}(%x)", specials=True))
        for k, op in enumerate(INT_FLOAT_MATH):
            if (k + len(dt)) % 2:           # half of them per dtype, all over the dtypes
                continue
            name = f"{op}:{dt}"
            lo, hi = (-20, 60) if op in ("exp", "cosh") else (-1000, 100000)
            out.append(case(name, [("x", (3, 5), dt)], f"{op}(%x)", specials=True, lo=lo, hi=hi))
    out.append(case("exp:int64-saturates", [("x", (3,), "int64")], "exp(%x)",
                    [np.array([2**62, 44, -5], np.int64)]))
    out.append(case("exp:uint64-saturates", [("x", (2,), "uint64")], "exp(%x)",
                    [np.array([100, 3], np.uint64)]))
    out.append(case("sqrt:uint8", [("x", (4,), "uint8")], "sqrt(%x)",
                    [np.array([17, 4, 255, 0], np.uint8)]))
    for op in ("negative", "abs", "logical_not"):
        out.append(case(f"{op}:bool", [("x", (2, 3), "bool")], f"{op}(%x)"))
    return out


ARITH = ["add", "subtract", "multiply", "divide", "floor_divide", "mod", "floor_mod", "power",
         "maximum", "minimum"]
SHAPES = [((2, 3), (3,)), ((2, 1, 4), (3, 1)), ((), (5,)), ((4,), ()), ((2, 3), (2, 3))]


def binary_float_cases():
    out = []
    for k, op in enumerate(ARITH):
        for j, dt in enumerate(FLOATS):
            a_shape, b_shape = SHAPES[(k + j) % len(SHAPES)]
            name = f"{op}:{dt}-{a_shape}-{b_shape}"
            rng = rng_for(name)
            a = data(rng, a_shape, dt, specials=True)
            b = data(rng, b_shape, dt, specials=True)
            if op == "power":
                a = np.abs(a) * np.asarray(2, dt)
            out.append(case(name, [("a", a_shape, dt), ("b", b_shape, dt)],
                            f"{op}(%a, %b)", [a, b]))
        # every float edge value against every other one
        for dt in FLOATS:
            edges = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0, 2.5, -7.25, 3.0,
                              0.5], dt)
            a = np.repeat(edges, len(edges))
            b = np.tile(edges, len(edges))
            out.append(case(f"{op}:{dt}-edges", [("a", a.shape, dt), ("b", b.shape, dt)],
                            f"{op}(%a, %b)", [a, b]))
    out.append(case("power:float32-negative-base", [("a", (4,), "float32"),
                                                    ("b", (4,), "float32")],
                    "power(%a, %b)", [np.array([-2, -2, -8, 0], np.float32),
                                      np.array([3, 0.5, 1 / 3, -1], np.float32)]))
    return out


def int_pairs(dtype: str) -> tuple[np.ndarray, np.ndarray]:
    """Every pair of a few values: zero, +-1, small, the extremes."""
    info = np.iinfo(dtype)
    vals = sorted({0, 1, 7, -7, -1, 5, -5, 100, int(info.min), int(info.max)})
    vals = [v for v in vals if info.min <= v <= info.max]
    a = np.array([x for x in vals for _ in vals], dtype)
    b = np.array([y for _ in vals for y in vals], dtype)
    return a, b


def power_case(dt: str):
    name = f"power:{dt}"
    rng = rng_for(name)
    base = data(rng, (3, 8), dt, lo=-5, hi=5)
    exp = data(rng, (8,), dt, lo=-3, hi=40)
    return case(name, [("a", (3, 8), dt), ("b", (8,), dt)], "power(%a, %b)", [base, exp])


def power_wide_cases():
    return [power_case(dt) for dt in ["int16", "int32", "uint32", "int64"]]


def binary_int_cases():
    out = []
    for dt in ["int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64"]:
        a, b = int_pairs(dt)
        for op in ARITH:
            if op == "power":
                continue
            out.append(case(f"{op}:{dt}-pairs", [("a", a.shape, dt), ("b", b.shape, dt)],
                            f"{op}(%a, %b)", [a, b]))
        if np.dtype(dt).itemsize == 1:
            out.append(power_case(dt))
    for op in ["divide", "mod", "floor_divide", "floor_mod", "add", "multiply"]:
        name = f"{op}:int32-broadcast"
        rng = rng_for(name)
        a = data(rng, (2, 1, 5), "int32", lo=-50, hi=50)
        b = data(rng, (3, 1), "int32", lo=-4, hi=4)
        b[1, 0] = 0
        out.append(case(name, [("a", (2, 1, 5), "int32"), ("b", (3, 1), "int32")],
                        f"{op}(%a, %b)", [a, b]))
    return out


COMPARE = ["equal", "not_equal", "less", "less_equal", "greater", "greater_equal"]
LOGICAL = ["logical_and", "logical_or", "logical_xor"]


def compare_logic_cases():
    out = []
    edges = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0], np.float32)
    ea, eb = np.repeat(edges, len(edges)), np.tile(edges, len(edges))
    for op in COMPARE:
        for dt in ["int8", "uint16", "bool", "float16", "int64"]:
            out.append(case(f"{op}:{dt}", [("a", (4, 3), dt), ("b", (3,), dt)],
                            f"{op}(%a, %b)", lo=-3, hi=3, specials=True))
        out.append(case(f"{op}:float32-edges", [("a", ea.shape, "float32"),
                                                 ("b", eb.shape, "float32")],
                        f"{op}(%a, %b)", [ea, eb]))
    for op in LOGICAL:
        for dt in ["bool", "int32", "uint8", "float32"]:
            name = f"{op}:{dt}"
            rng = rng_for(name)
            a = data(rng, (2, 3, 4), dt, lo=-2, hi=2)
            b = data(rng, (3, 1), dt, lo=-2, hi=2)
            if dt == "float32":
                a.reshape(-1)[:3] = [np.nan, -0.0, 0.0]
            out.append(case(name, [("a", (2, 3, 4), dt), ("b", (3, 1), dt)],
                            f"{op}(%a, %b)", [a, b]))
    return out


def all_cases():
    return (unary_float_cases() + unary_int_cases() + binary_float_cases()
            + binary_int_cases() + compare_logic_cases() + power_wide_cases()
            + signed_zero_cases()
            + [case("sign:bool", [("x", (2, 3), "bool")], "sign(%x)")])


def test_unary_float():
    check_cases(unary_float_cases(), "ew_unary_f")


def test_unary_int():
    check_cases(unary_int_cases(), "ew_unary_i")


def test_binary_float():
    check_cases(binary_float_cases(), "ew_binary_f")


def test_binary_int():
    check_cases(binary_int_cases(), "ew_binary_i")


def test_compare_and_logic():
    check_cases(compare_logic_cases(), "ew_compare")


def test_power_of_wide_integers():
    """Integer power is unrolled over the exponent's bits; 16-, 32- and
    64-bit exponents must compile to C of reasonable size.  Run under an
    address-space limit so that an expression blow-up fails this test
    instead of the machine."""
    try:
        with memory_limit(3 << 30):
            check_cases(power_wide_cases(), "ew_power_wide")
    except MemoryError:
        # no traceback: its frames hold the giant strings, and rendering
        # them takes pytest minutes
        pytest.fail("compiling power on 16/32/64-bit integers needed more than 3 GiB "
                    "of memory", pytrace=False)


#: inputs whose results are signed zeros in IEEE arithmetic
ZEROS = np.array([-0.0, 0.0, -0.3, 0.3, -1e-30, -0.5, -1.0, np.inf, -np.inf], np.float64)
SIGNED_ZERO_UNARY = ["negative", "abs", "copy", "sign", "floor", "ceil", "trunc", "round", "sqrt",
                     "sin", "tan", "asin", "atan", "sinh", "tanh", "erf"]


def signed_zero_cases():
    out = []
    for dt in FLOATS:
        x = ZEROS.astype(dt)
        for op in SIGNED_ZERO_UNARY:
            out.append(case(f"{op}:{dt}-signed-zeros", [("x", x.shape, dt)], f"{op}(%x)", [x]))
        a, b = np.repeat(x, len(x)), np.tile(x, len(x))
        for op in ["add", "subtract", "multiply", "divide"]:
            out.append(case(f"{op}:{dt}-signed-zeros", [("a", a.shape, dt), ("b", b.shape, dt)],
                            f"{op}(%a, %b)", [a, b]))
    return out


def test_sign_of_bool():
    """sign on bool is the identity (as negative and abs on bool)."""
    check_cases([case("sign:bool", [("x", (2, 3), "bool")], "sign(%x)")], "ew_sign_bool")


def test_signed_zeros():
    """-0.0 where IEEE (and NumPy, the reference) put it: ``sign(-0.0)`` is
    +0.0 as NumPy's, ``round(-0.3)`` is -0.0, ..."""
    check_signed_zeros(signed_zero_cases(), "ew_zeros")
