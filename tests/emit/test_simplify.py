"""Kernel-IR simplification: rule table, exactness on random expressions
(checked with the reference evaluator), statement clean-ups."""

from __future__ import annotations

import math

import numpy as np
import pytest

from aot.emit.kernel import ir as K
from aot.emit.c.printer import print_expr, print_stmt
from aot.emit.kernel.evaluate import evaluate
from aot.emit.kernel.verify import verify_kernel
from aot.emit.kernel.walk import buffers_in
from aot.emit.kernel.simplify import simplify_expr, simplify_kernel, simplify_stmt
from aot.ir.dtype import DType
from kernel_c_harness import ALL_DTYPES, ExprGen, bits_equal, random_values

D = DType
O = K.BinaryOperator
S = K.BufferScope

i, j = K.index_var("i"), K.index_var("j")
a, b = K.Var("a", D.INT32), K.Var("b", D.INT32)
u = K.Var("u", D.UINT8)
w = K.Var("w", D.UINT32)
x = K.Var("x", D.FLOAT32)
p = K.Var("p", D.BOOL)


def c(v, d=D.INT32):
    return K.Const(v, d)


RULES = [
    ("constant offsets gather", K.sub(K.add(K.add(i, 1, True), j, True), 3, True), "i + j - 2"),
    ("constant on the left", K.add(c(4), i, True), "i + 4"),
    ("offsets cancel", K.sub(K.add(i, 3, True), 3, True), "i"),
    ("products of constants", K.mul(K.mul(i, 4, True), 8, True), "i * 32"),
    ("x * 1", K.mul(i, 1, True), "i"),
    ("x * 0", K.mul(a, 0), "0"),
    ("x + 0", K.add(a, 0), "a"),
    ("x / 1", K.div(a, 1), "a"),
    ("x % 1", K.mod(a, 1), "0"),
    ("x >> 0", K.shr(a, 0), "a"),
    ("x | 0", K.bit_or(a, 0), "a"),
    ("x & 0", K.bit_and(a, 0), "0"),
    ("x ^ x", K.bit_xor(a, a), "0"),
    ("min(x, x)", K.minimum(a, a), "a"),
    ("x | ~x", K.bit_or(a, K.bit_not(a)), "-1"),
    ("~x ^ x on unsigned", K.bit_xor(K.bit_not(w), w), "4294967295u"),
    ("x & ~x", K.bit_and(u, K.bit_not(u)), "0"),
    ("x | all ones", K.bit_or(c(255, D.UINT8), u), "255"),
    ("x & all ones", K.bit_and(a, c(-1)), "a"),
    ("x - x", K.sub(a, a), "0"),
    ("wrapping offsets merge modulo 2^32", K.add(K.add(a, 2 ** 31 - 1), 2), "(int32_t)((uint32_t)a "
                                                                           "- 2147483647u)"),
    ("unsigned offsets print small", K.add(w, c(2 ** 32 - 3, D.UINT32)), "w - 3u"),
    ("no-wrap offsets that overflow stay", K.add(K.add(a, 2 ** 31 - 1, True), 2, True),
     "a + 2147483647 + 2"),
    ("constants fold exactly", K.div(c(-2 ** 31), c(-1)), "(-2147483647 - 1)"),
    ("division by zero folds to 0", K.div(c(7), c(0)), "0"),
    ("float constants fold", K.add(c(0.1, D.FLOAT32), c(0.2, D.FLOAT32)), "0.3f"),
    ("float16 folds with rounding", K.add(c(1.0, D.FLOAT16), c(0.0004, D.FLOAT16)), "1.0f"),
    ("saturating casts fold", K.Cast(D.INT8, c(1e9, D.FLOAT32)), "127"),
    ("float identities are not applied", K.add(x, c(0.0, D.FLOAT32)), "x + 0.0f"),
    ("float x - x is not 0", K.sub(x, x), "x - x"),
    ("unsigned >= 0", K.ge(u, c(0, D.UINT8)), "1"),
    ("unsigned < 0", K.lt(u, c(0, D.UINT8)), "0"),
    ("widened range", K.lt(K.Cast(D.INT32, u), c(256)), "1"),
    ("widened range, undecided", K.lt(K.Cast(D.INT32, u), c(255)), "(int32_t)u < 255"),
    ("x <= max", K.le(a, c(2 ** 31 - 1)), "1"),
    ("self comparison", K.lt(a, a), "0"),
    ("masked bits", K.eq(K.bit_and(a, 4), c(3)), "0"),
    ("or'd bits", K.ne(K.bit_or(a, 4), c(3)), "1"),
    ("conversion to bool decided", K.Cast(D.BOOL, K.bit_or(a, 1)), "1"),
    ("x && 1", K.logical_and(p, c(1, D.BOOL)), "p"),
    ("x || 1", K.logical_or(p, c(1, D.BOOL)), "1"),
    ("!!x", K.logical_not(K.logical_not(p)), "p"),
    ("select on a constant", K.select(c(1, D.BOOL), x, K.neg(x)), "x"),
    ("select with equal arms", K.select(p, x, x), "x"),
    ("calls are never folded", K.math_call("sqrt", c(4.0, D.FLOAT32)), "sqrtf(4.0f)"),
    ("max(x, c) is one compare", K.maximum(x, c(0.0, D.FLOAT32)), "x <= 0.0f ? 0.0f : x"),
    ("max(c, x) is one compare", K.maximum(c(0.0, D.FLOAT32), x), "0.0f > x ? 0.0f : x"),
    ("min(x, c) is one compare", K.minimum(x, c(6.0, D.FLOAT32)), "x >= 6.0f ? 6.0f : x"),
    ("min(c, x) is one compare", K.minimum(c(6.0, D.FLOAT32), x), "6.0f < x ? 6.0f : x"),
    ("max with NaN stays", K.maximum(x, c(math.nan, D.FLOAT32)), "aot_max_f32(x, AOT_NAN_F32)"),
    ("quotient and remainder recombine", K.add(K.mul(K.div(a, c(5)), c(5)), K.mod(a, c(5))), "a"),
    ("... as the tail of a sum", K.add(K.add(K.mul(b, 500, True), K.mul(K.div(K.add(a, 1, True),
                                                                                c(5)), 5, True),
                                             True), K.mod(K.add(a, 1, True), c(5)), True),
     "b * 500 + a + 1"),
    ("... not with another divisor", K.add(K.mul(K.div(a, c(5)), c(4), True), K.mod(a, c(5)),
                                           True),
     "aot_div_i32(a, 5) * 4 + aot_mod_i32(a, 5)"),
    ("... not with a negative divisor", K.add(K.mul(K.div(a, c(-5)), c(-5), True),
                                              K.mod(a, c(-5)), True),
     "aot_div_i32(a, -5) * -5 + aot_mod_i32(a, -5)"),
]


@pytest.mark.parametrize("op", [K.maximum, K.minimum])
@pytest.mark.parametrize("const_first", [False, True])
def test_float_extremum_with_constant_is_exact(op, const_first):
    """min/max against every interesting constant, on every interesting
    float: the one-compare select equals the NaN-propagating helper bit for
    bit (signed zeros and NaN included)."""
    specials = [0.0, -0.0, 1.0, -1.0, 6.0, math.inf, -math.inf, math.nan, 1e-45, -3.5]
    for dtype in (D.FLOAT32, D.FLOAT64):
        v = K.Var("v", dtype)
        for const in [s for s in specials if not math.isnan(s)]:
            expr = op(K.Const(const, dtype), v) if const_first else op(v, K.Const(const, dtype))
            simple = simplify_expr(expr)
            assert isinstance(simple, K.Select)
            for value in specials:
                before = evaluate(expr, {"v": value}, {})
                after = evaluate(simple, {"v": value}, {})
                assert bits_equal(np.array([after]), np.array([before])).all(), (
                    print_expr(expr), value, before, after)


@pytest.mark.parametrize("expr, text", [(e, t) for _, e, t in RULES], ids=[n for n, _, _ in RULES])
def test_rule(expr, text):
    assert print_expr(simplify_expr(expr)) == text


# ------------------------------------------------------------- exactness

def _random_case(seed: int, n: int = 12):
    inputs = {d: K.Buffer(f"in_{d.value}", d, (n,), S.INPUT) for d in ALL_DTYPES}
    dtype = ALL_DTYPES[seed % len(ALL_DTYPES)]
    return ExprGen(seed, inputs, i).expr(dtype, 4), inputs


def test_simplification_is_exact_on_random_expressions():
    """Every rewrite keeps the value bit for bit (NaN, -0.0, wrap-around,
    saturation included), on edge-heavy random inputs."""
    rng = np.random.default_rng(42)
    n = 12
    data = {f"in_{d.value}": random_values(rng, d, n) for d in ALL_DTYPES}
    for seed in range(150):
        expr, _ = _random_case(seed, n)
        simple = simplify_expr(expr)
        for k in range(n):
            before = evaluate(expr, {"i": k}, data)
            after = evaluate(simple, {"i": k}, data)
            assert bits_equal(np.array([after]), np.array([before])).all(), (
                seed, k, print_expr(expr), print_expr(simple), before, after)


def test_simplification_is_idempotent():
    for seed in range(150):
        once = simplify_expr(_random_case(seed)[0])
        assert simplify_expr(once) == once, seed


def test_simplified_random_kernels_verify():
    """Simplified kernels pass the verifier, whose hazard checks stand for
    the compilers' warnings (-Wtype-limits, -Wtautological-compare)."""
    for seed in range(150):
        expr, _ = _random_case(seed)
        out = K.Buffer("out", expr.dtype, (12,), S.OUTPUT)
        store = K.Store(out, i, expr)
        params = tuple(b for b in buffers_in(store) if b.scope is S.INPUT) + (out,)
        verify_kernel(simplify_kernel(K.Kernel("k", params, K.for_range(i, 12, [store]))))


# ------------------------------------------------------------ statements

out = K.Buffer("out", D.FLOAT32, (8,), S.OUTPUT)
inp = K.Buffer("inp", D.FLOAT32, (8,), S.INPUT)


def test_loops_of_extent_zero_vanish_and_of_extent_one_unroll():
    body = K.block(
        K.for_range(i, 0, [K.store(out, i, 1.0)]),
        K.for_range(i, 1, [K.for_range(j, 4, [K.store(out, K.flat_index([i, j], (2, 4)),
                                                      K.load(inp, j))])], start=1),
    )
    assert print_stmt(simplify_stmt(body)) == """\
{
    for (int32_t j = 0; j < 4; ++j) {
        out[j + 4] = inp[j];
    }
}
"""


def test_blocks_splice_unless_they_declare():
    t = K.Var("t", D.FLOAT32)
    body = K.block(
        K.block(K.store(out, 0, 1.0), K.block()),
        K.block(K.Decl(t, K.load(inp, 0)), K.store(out, 1, t)),
        K.block(K.Decl(t, K.load(inp, 1)), K.store(out, 2, t)),
    )
    assert print_stmt(simplify_stmt(body)) == """\
{
    out[0] = 1.0f;
    {
        float t = inp[0];
        out[1] = t;
    }
    {
        float t = inp[1];
        out[2] = t;
    }
}
"""


def test_constant_conditions_and_empty_branches():
    stmt = K.block(
        K.if_then_else(c(0, D.BOOL), [K.store(out, 0, 1.0)], [K.store(out, 0, 2.0)]),
        K.if_then_else(K.lt(x, c(0.0, D.FLOAT32)), [], [K.store(out, 1, x)]),
        K.if_then_else(K.lt(x, c(1.0, D.FLOAT32)), [K.block()]),
    )
    assert print_stmt(simplify_stmt(stmt)) == """\
{
    out[0] = 2.0f;
    if (!(x < 0.0f)) {
        out[1] = x;
    }
}
"""


def test_simplify_kernel_drops_temporaries_left_unread():
    t, s = K.Var("t", D.FLOAT32), K.Var("s", D.FLOAT32)
    body = K.for_range(i, 8, [
        K.Decl(t, K.load(inp, i)),
        K.Decl(s, K.mul(t, 2.0)),      # only read by the dead select arm below
        K.store(out, i, K.select(c(1, D.BOOL), t, s)),
    ])
    kernel = simplify_kernel(K.Kernel("k", (inp, out), body))
    verify_kernel(kernel)
    assert print_stmt(kernel.body) == """\
for (int32_t i = 0; i < 8; ++i) {
    float t = inp[i];
    out[i] = t;
}
"""


def test_simplify_keeps_nan_and_signed_zero_constants():
    assert simplify_expr(K.add(c(math.nan, D.FLOAT32), c(1.0, D.FLOAT32))) == \
        c(math.nan, D.FLOAT32)
    assert simplify_expr(K.mul(c(-1.0, D.FLOAT32), c(0.0, D.FLOAT32))) == c(-0.0, D.FLOAT32)
