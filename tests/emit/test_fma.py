"""``fmaf``: the evaluator's exact model (aot.emit.kernel.fma) against exact
rational arithmetic and against the C library, and where the lowerings
use it."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from aot.emit.kernel import ir as K
from aot.emit.kernel.fma import exact_fma
from aot.emit.lower.ops.tuning import using
from aot.emit.kernel.simplify import simplify_kernel
from aot.ir.dtype import DType
from kernel_c_harness import bits_equal, build, call, compilers
from lowering_harness import lower_main

F32 = DType.FLOAT32


def _round32(x: Fraction) -> np.float32:
    """``x`` rounded to float32 (nearest, ties to even), by search."""
    limit = Fraction(float(np.finfo(np.float32).max)) + Fraction(2) ** 103   # FLT_MAX + ulp/2
    if abs(x) >= limit:
        return np.float32(np.inf if x > 0 else -np.inf)
    f = np.float32(float(x))
    with np.errstate(over="ignore"):   # next to FLT_MAX is infinity: filtered out below
        cands = [np.nextafter(f, np.float32(-np.inf)), f, np.nextafter(f, np.float32(np.inf))]
    finite = [c for c in cands if np.isfinite(c)]
    best = min(finite, key=lambda c: (abs(Fraction(float(c)) - x),
                                      int(np.float32(c).view(np.uint32)) & 1))
    return np.float32(best)


def reference(a: np.float32, b: np.float32, c: np.float32) -> np.float32:
    a, b, c = float(a), float(b), float(c)
    if not all(np.isfinite([a, b, c])):
        with np.errstate(all="ignore"):
            return np.float32(np.float64(a) * np.float64(b) + np.float64(c))
    exact = Fraction(a) * Fraction(b) + Fraction(c)
    if exact == 0:
        negative = np.signbit(a) != np.signbit(b) and np.signbit(c)
        return np.float32(-0.0 if negative else 0.0)
    return _round32(exact)


def _midpoint_cases(rng: np.random.Generator, n: int) -> tuple[np.ndarray, ...]:
    """a * b lands on a float32 midpoint; c nudges it by far less than a
    float64 ulp -- the double-rounding trap."""
    a = (1 + (2 * rng.integers(0, 2 ** 9, n) + 1) * 2.0 ** -12).astype(np.float32)
    b = a.copy()
    tiny = (rng.choice([-1, 1], n) * 2.0 ** rng.integers(-90, -60, n)).astype(np.float32)
    return a, b, tiny


def _cases() -> tuple[np.ndarray, ...]:
    rng = np.random.default_rng(7)
    n = 3000
    specials = np.array([0.0, -0.0, 1.0, -1.0, np.inf, -np.inf, np.nan, 1e-45, -1e-45,
                         1.1754944e-38, 3.4028235e38, -3.4028235e38, 2.0 ** -75], np.float32)
    a = rng.standard_normal(n).astype(np.float32)
    b = rng.standard_normal(n).astype(np.float32)
    c = rng.standard_normal(n).astype(np.float32)
    cancel = (-(a * b)).astype(np.float32)            # exact cancellation down to the error
    bits = rng.integers(0, 2 ** 32, (3, n), dtype=np.uint64).astype(np.uint32).view(np.float32)
    grid = np.array(np.meshgrid(specials, specials, specials)).reshape(3, -1).astype(np.float32)
    ma, mb, mc = _midpoint_cases(rng, n)
    return (np.concatenate([a, a, bits[0], grid[0], ma]),
            np.concatenate([b, b, bits[1], grid[1], mb]),
            np.concatenate([c, cancel, bits[2], grid[2], mc]))


CASES = _cases()


def test_exact_fma_is_correctly_rounded():
    a, b, c = CASES
    got = exact_fma(a, b, c)
    want = np.array([reference(*t) for t in zip(a, b, c)], np.float32)
    assert bits_equal(got, want).all(), [(a[i], b[i], c[i], got[i], want[i])
                                         for i in np.flatnonzero(~bits_equal(got, want))[:5]]


def test_the_midpoint_cases_are_real_double_rounding_traps():
    a, b, c = _midpoint_cases(np.random.default_rng(3), 200)
    naive = (a.astype(np.float64) * b + c).astype(np.float32)
    assert (exact_fma(a, b, c) != naive).sum() > 50


@settings(max_examples=300, deadline=None)
@given(st.floats(width=32), st.floats(width=32), st.floats(width=32))
def test_exact_fma_property(a, b, c):
    a, b, c = np.float32(a), np.float32(b), np.float32(c)
    got = exact_fma(np.array([a]), np.array([b]), np.array([c]))
    assert bits_equal(got, np.array([reference(a, b, c)], np.float32)).all()


@pytest.mark.parametrize("a, b, c", [(0.1, 3.0, -0.30000000000000004), (1e308, 10.0, -1e308),
                                     (2.0 ** -600, 2.0 ** -600, 0.0), (-0.0, 5.0, -0.0)])
def test_exact_fma_double(a, b, c):
    got = float(exact_fma(np.float64(a), np.float64(b), np.float64(c)))
    exact = Fraction(a) * Fraction(b) + Fraction(c)
    if np.isfinite(a * b) and exact != 0:
        assert got == float(exact)
    elif exact == 0:
        assert got == 0.0 and np.signbit(got) == (np.signbit(a) != np.signbit(b) and np.signbit(c))
    else:
        assert got == a * b + c


@pytest.mark.parametrize("compiler", compilers())
def test_c_fmaf_matches_the_model(compiler, tmp_path):
    a, b, c = CASES
    n = a.size
    bufs = [K.Buffer(name, F32, (n,), K.BufferScope.INPUT) for name in ("a", "b", "c")]
    out = K.Buffer("out", F32, (n,), K.BufferScope.OUTPUT)
    i = K.index_var("i")
    body = K.for_range(i, n, K.store(out, i, K.math_call("fma", *(K.load(x, i) for x in bufs))))
    kernel = K.Kernel("fma_all", (*bufs, out), body)
    lib = build([kernel], tmp_path, "fma", compiler)
    got = np.zeros(n, np.float32)
    call(lib, kernel, {"a": a, "b": b, "c": c, "out": got})
    want = exact_fma(a, b, c)
    assert bits_equal(got, want).all()


CONV = """#[version = "0.0.5"]
def @main(%x: Tensor[(1, 4, 6, 6), float32], %w: Tensor[(8, 4, 3, 3), float32]) {
  nn.conv2d(%x, %w, padding=[1, 1, 1, 1], channels=8, kernel_size=[3, 3])
}
"""
DENSE = """#[version = "0.0.5"]
def @main(%x: Tensor[(2, 12), float32], %w: Tensor[(3, 12), float32]) {
  nn.dense(%x, %w)
}
"""
INT_DENSE = """#[version = "0.0.5"]
def @main(%x: Tensor[(2, 12), int8], %w: Tensor[(3, 12), int8]) {
  nn.dense(%x, %w, out_dtype="int32")
}
"""


def _calls(text: str, tuning: str) -> set[str]:
    from aot.emit.kernel.walk import children, postorder, walk_stmts
    with using(tuning):
        _, group = lower_main(text)
    names: set[str] = set()
    for s in walk_stmts(simplify_kernel(group.kernel).body):
        for e in getattr(s, "value", None), getattr(s, "index", None):
            if e is not None:
                postorder(e, children,
                          lambda n, _: names.add(n.name) if isinstance(n, K.Call) else None)
    return names


@pytest.mark.parametrize("text", [CONV, DENSE])
@pytest.mark.parametrize("tuning, fused", [("scalar", True), ("simd", True),
                                           ("scalar-nofma", False)])
def test_float_macs_use_fmaf_when_the_tuning_says_so(text, tuning, fused):
    assert ("fmaf" in _calls(text, tuning)) == fused


def test_integer_macs_never_use_fmaf():
    assert "fmaf" not in _calls(INT_DENSE, "scalar")
