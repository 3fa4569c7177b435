"""The elemwise family compiled to C against the interpreter.

The bulk is the family's table derived from the registry
(tests/cases/elemwise.py): every operator over every dtype, unary ones on
the table's shape for their dtype's kind, binary ones on one broadcast
pair per dtype (rotating), with NaN, infinities, -0.0 and the integer
extremes mixed into the inputs.  Then what only C needs: every float edge
value against every other one, all pairs of integer extremes (zero
divisors, ``INT_MIN / -1``), saturating float math, integer power over
wide exponents, and signed zeros.  One build per test (see test_ops_c.py).
"""

from __future__ import annotations

import numpy as np
import pytest

from c_harness import check_cases
from cases import elemwise
from test_ops_c import case, check_signed_zeros, data, memory_limit, rng_for

FLOATS = ["float32", "float16", "float64"]

#: halfway values (round is half to even) and values around the domains
FLOAT_EDGES = [0.5, 1.5, 2.5, -0.5, -2.5, 1.0, -1.0, 0.99, 20.0, -20.0, 100.0, 1e-3]

#: integer inputs of unary float math: wide (truncation and saturation),
#: narrower where the function overflows float64 early
#: narrower where the function grows fast: below 2**53, where a libm result
#: one ulp away from NumPy's would truncate to a different integer (the
#: saturating end has cases of its own)
INT_RANGE = {"exp": (-20, 36), "cosh": (-20, 36), "sinh": (-20, 36)}


def float_input(name: str, dtype: str, shape=(4, 6)) -> np.ndarray:
    x = data(rng_for(name), shape, dtype, specials=True) * np.asarray(2, dtype)
    flat = x.reshape(-1)
    flat[-len(FLOAT_EDGES):] = FLOAT_EDGES
    return x


def derived_case(c: elemwise.ElemwiseCase):
    """A C case of a row of the shared table, its inputs with edge values."""
    kind = np.dtype(c.dtype).kind
    if len(c.shapes) == 1 and kind == "f":
        return case(c.name, c.params, c.body, [float_input(c.name, c.dtype, c.shapes[0])])
    if len(c.shapes) == 1:
        lo, hi = INT_RANGE.get(c.op, (-1000, 100000))
        return case(c.name, c.params, c.body, specials=True, lo=lo, hi=hi)
    if c.op == "power" and kind == "f":
        rng = rng_for(c.name)
        a = np.abs(data(rng, c.shapes[0], c.dtype, specials=True)) * np.asarray(2, c.dtype)
        return case(c.name, c.params, c.body, [a, data(rng, c.shapes[1], c.dtype, specials=True)])
    if c.op == "power" and c.dtype == "uint64":
        # exponents from 2**63 up are a known bug of the reference (see
        # tests/ops/test_elemwise.py::test_power_of_huge_uint64_exponents)
        rng = rng_for(c.name)
        return case(c.name, c.params, c.body, [data(rng, c.shapes[0], c.dtype, specials=True),
                                               data(rng, c.shapes[1], c.dtype, lo=0, hi=70)])
    return case(c.name, c.params, c.body, specials=True, lo=-5, hi=5)


def derived(arity: int) -> list:
    rows = elemwise.shape_by_kind(elemwise.all_cases())
    return [derived_case(c) for c in rows if len(c.shapes) == arity]


def test_derived_unary():
    check_cases(derived(1), "ew_derived_1")


def test_derived_binary():
    check_cases(derived(2), "ew_derived_2")


def test_unsigned_power_past_int64_in_c():
    check_cases([case("power:u64-big", [("a", (2,), "uint64"), ("b", (2,), "uint64")],
                      "power(%a, %b)", [np.array([2**64 - 1, 3], np.uint64),
                                        np.array([2**63, 2**63 + 1], np.uint64)])],
                "ew_pow_u64")


def saturation_cases():
    """Float math at and beyond its range, on floats and on integers."""
    return [
        case("exp:scalar", [("x", (), "float32")], "exp(%x)", [np.array(88.5, np.float32)]),
        case("sigmoid:saturated", [("x", (6,), "float32")], "sigmoid(%x)",
             [np.array([-100, -30, 30, 100, -88.7, 89], np.float32)]),
        case("tanh:saturated", [("x", (4,), "float16")], "tanh(%x)",
             [np.array([-12, 12, 0.001, -0.0], np.float16)]),
        case("exp:int64-saturates", [("x", (3,), "int64")], "exp(%x)",
             [np.array([2**62, 44, -5], np.int64)]),
        case("exp:uint64-saturates", [("x", (2,), "uint64")], "exp(%x)",
             [np.array([100, 3], np.uint64)]),
        case("sqrt:uint8", [("x", (4,), "uint8")], "sqrt(%x)",
             [np.array([17, 4, 255, 0], np.uint8)]),
    ]


ARITH = ["add", "subtract", "multiply", "divide", "floor_divide", "mod", "floor_mod", "power",
         "maximum", "minimum"]
COMPARE = ["equal", "not_equal", "less", "less_equal", "greater", "greater_equal"]


def float_edge_cases():
    """Every float edge value against every other one."""
    out = []
    for op in ARITH:
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
    edges = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0], np.float32)
    ea, eb = np.repeat(edges, len(edges)), np.tile(edges, len(edges))
    for op in COMPARE:
        out.append(case(f"{op}:float32-edges", [("a", ea.shape, "float32"),
                                                 ("b", eb.shape, "float32")],
                        f"{op}(%a, %b)", [ea, eb]))
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


def int_edge_cases():
    """All pairs of integer extremes, zero divisors in broadcasts, integer
    power with exponents up to 40."""
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


def all_cases():
    return (derived(1) + derived(2) + saturation_cases() + float_edge_cases()
            + int_edge_cases() + power_wide_cases() + signed_zero_cases())


def test_saturation():
    check_cases(saturation_cases(), "ew_saturate")


def test_float_edges():
    check_cases(float_edge_cases(), "ew_float_edges")


def test_int_edges():
    check_cases(int_edge_cases(), "ew_int_edges")


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


def test_signed_zeros():
    """-0.0 where IEEE (and NumPy, the reference) put it: ``sign(-0.0)`` is
    +0.0 as NumPy's, ``round(-0.3)`` is -0.0, ..."""
    check_signed_zeros(signed_zero_cases(), "ew_zeros")
