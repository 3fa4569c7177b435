"""fast_exp, fast_tanh, fast_erf and nn.fast_softmax (aot/ir/ops/fast_math.py):
the error bounds the module documents, measured over dense sweeps of
float32 inputs against the exact functions in float64; the special values;
the exact fallback for other float types; integer data refused."""

from __future__ import annotations

import math

import numpy as np
import pytest

import aot
from aot.ir.ops.fast_math import fast_erf_f32, fast_exp_f32, fast_tanh_f32
from aot.ir.registry import RelationError
from nn_helpers import T, infer

_erf = np.vectorize(math.erf, otypes=[np.float64])


def max_rel(approx: np.ndarray, exact: np.ndarray) -> float:
    return float(np.max(np.abs(approx.astype(np.float64) - exact) / np.abs(exact)))


def sweep(lo: float, hi: float, n: int = 400_001) -> np.ndarray:
    x = np.linspace(lo, hi, n).astype(np.float32)
    return x[x != 0]


@pytest.mark.parametrize("lo,hi,bound", [(-1, 1, 1e-7), (-20, 20, 1.1e-6),
                                         (-87, 88, 4.1e-6)])
def test_fast_exp_error_bound(lo, hi, bound):
    x = sweep(lo, hi)
    err = max_rel(fast_exp_f32(x), np.exp(x.astype(np.float64)))
    assert err <= bound
    assert err > bound / 20         # the bound is measured, not loose


@pytest.mark.parametrize("fn,exact,lo,hi,bound", [
    (fast_tanh_f32, np.tanh, -9, 9, 5e-7),
    (fast_erf_f32, _erf, -4, 4, 5e-7),
])
def test_rational_error_bounds(fn, exact, lo, hi, bound):
    x = np.concatenate([sweep(lo, hi), np.geomspace(1e-30, 1e-3, 2000).astype(np.float32)])
    x = np.concatenate([x, -x])
    err = max_rel(fn(x), exact(x.astype(np.float64)))
    assert bound / 20 < err <= bound


def test_outside_the_clamps():
    big = np.float32([9, 20, 1e30, np.inf])
    assert np.all(fast_tanh_f32(big) == 1) and np.all(fast_tanh_f32(-big) == -1)
    far = np.float32([4, 10, np.inf])
    assert np.all(np.abs(fast_erf_f32(far) - 1) < 2e-8)
    e = fast_exp_f32(np.float32([-np.inf, -100, np.inf, np.nan, 0]))
    assert e[0] == 0 and e[1] == 0 and e[2] == np.inf and np.isnan(e[3]) and e[4] == 1


def test_fast_softmax_error_bound():
    x = np.random.default_rng(0).uniform(-20, 20, (4000, 16)).astype(np.float32)
    mod = aot.parse("def @main(%x: Tensor[(4000, 16), float32]) { nn.fast_softmax(%x) }")
    got = aot.interpret(mod, x)
    x64 = x.astype(np.float64)
    e = np.exp(x64 - x64.max(axis=-1, keepdims=True))
    assert max_rel(got, e / e.sum(axis=-1, keepdims=True)) <= 5e-6


@pytest.mark.parametrize("op,exact", [("fast_exp", np.exp), ("fast_tanh", np.tanh),
                                      ("fast_erf", _erf)])
def test_other_float_types_are_exact(op, exact):
    x = np.linspace(-3, 3, 41)
    mod = aot.parse(f"def @main(%x: Tensor[(41,), float64]) {{ {op}(%x) }}")
    np.testing.assert_array_equal(aot.interpret(mod, x), exact(x))


@pytest.mark.parametrize("name", ["fast_exp", "fast_tanh", "fast_erf", "nn.fast_softmax"])
def test_integer_data_refused(name):
    with pytest.raises(RelationError, match="floating-point"):
        infer(name, [T((2, 3), "int32")])
