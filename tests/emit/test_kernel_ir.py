"""Kernel IR: construction checks, values (equality/hashing), index
builders, the verifier, and the reference evaluator."""

from __future__ import annotations

import math
import re
import sys

import numpy as np
import pytest

from aot.emit.kernel import ir as K
from aot.emit.c.printer import print_expr
from aot.emit.kernel.evaluate import evaluate, run_kernel
from aot.emit.kernel.verify import verify_kernel
from aot.emit.kernel.walk import buffers_in, stored_buffers, substitute, substitute_stmt, walk_exprs
from aot.ir.dtype import DType

D = DType
O = K.BinaryOperator
S = K.BufferScope

i, j = K.index_var("i"), K.index_var("j")
fx = K.Var("x", D.FLOAT32)
a32 = K.Var("a", D.INT32)
inp = K.Buffer("inp", D.FLOAT32, (4,), S.INPUT)
out = K.Buffer("out", D.FLOAT32, (4,), S.OUTPUT)


# ================================================================ constants

def test_constants_are_normalised_to_their_dtype():
    assert K.Const(0.1, D.FLOAT32).value == float(np.float32(0.1))
    assert K.Const(0.1, D.FLOAT16).value == float(np.float16(0.1))
    assert K.Const(0.1, D.FLOAT64).value == 0.1
    assert K.Const(True, D.BOOL).value == 1
    assert K.Const(np.int8(-3), D.INT8).value == -3
    assert K.Const(1e6, D.FLOAT16).value == math.inf


def test_constants_compare_by_bit_pattern():
    assert K.Const(math.nan, D.FLOAT32) == K.Const(math.nan, D.FLOAT32)
    assert hash(K.Const(math.nan, D.FLOAT32)) == hash(K.Const(math.nan, D.FLOAT32))
    assert K.Const(-0.0, D.FLOAT32) != K.Const(0.0, D.FLOAT32)
    assert K.Const(1, D.INT32) != K.Const(1, D.INT64)
    assert K.Const(1.0, D.FLOAT32) != K.Const(1, D.INT32)


@pytest.mark.parametrize("value, dtype", [(128, D.INT8), (-1, D.UINT32), (2, D.BOOL),
                                          (2 ** 63, D.INT64), (1.5, D.INT32), ("1", D.FLOAT32)])
def test_constant_out_of_range_or_of_wrong_kind_is_rejected(value, dtype):
    with pytest.raises(K.KernelIRError):
        K.Const(value, dtype)


# =========================================================== type checking

BAD_NODES = [
    ("mixed dtypes", lambda: K.BinOp(O.ADD, a32, K.Var("b", D.INT64))),
    ("logical on ints", lambda: K.BinOp(O.AND, a32, a32)),
    ("bitwise on floats", lambda: K.BinOp(O.BIT_AND, fx, fx)),
    ("shift by too much", lambda: K.shl(a32, 32)),
    ("negative shift", lambda: K.shr(a32, -1)),
    ("shift of a float", lambda: K.BinOp(O.SHL, fx, a32)),
    ("no_wrap on unsigned", lambda: K.add(K.Var("u", D.UINT32), K.Var("v", D.UINT32), True)),
    ("no_wrap on float", lambda: K.add(fx, fx, True)),
    ("no_wrap on division", lambda: K.BinOp(O.DIV, a32, a32, no_wrap=True)),
    ("arithmetic on bool", lambda: K.add(K.Var("p", D.BOOL), K.Var("p", D.BOOL))),
    ("negation of bool", lambda: K.neg(K.Var("p", D.BOOL))),
    ("not of an int", lambda: K.logical_not(a32)),
    ("bit not of a float", lambda: K.bit_not(fx)),
    ("select arms differ", lambda: K.Select(K.lt(fx, fx), fx, a32)),
    ("select on an int", lambda: K.Select(a32, fx, fx)),
    ("float index", lambda: K.Load(inp, fx)),
    ("store of the wrong dtype", lambda: K.Store(out, i, a32)),
    ("store into an input", lambda: K.Store(inp, i, fx)),
    ("float loop", lambda: K.For(K.Var("f", D.FLOAT32), K.Const(0.0, D.FLOAT32),
                                 K.Const(1.0, D.FLOAT32), K.Block(()))),
    ("loop bounds of another dtype", lambda: K.For(i, K.Const(0, D.INT64),
                                                   K.Const(4, D.INT64), K.Block(()))),
    ("negative extent", lambda: K.for_range(i, -1, [])),
    ("decl of the wrong dtype", lambda: K.Decl(a32, fx)),
    ("if on a float", lambda: K.IfThenElse(fx, K.Block(()))),
    ("keyword name", lambda: K.Var("int", D.INT32)),
    ("reserved name", lambda: K.Var("__x", D.INT32)),
    ("reserved name _X", lambda: K.Buffer("_X", D.INT32, (1,), S.INPUT)),
    ("not an identifier", lambda: K.Var("1a", D.INT32)),
    ("empty local buffer", lambda: K.Buffer("acc", D.INT32, (0,), S.LOCAL)),
    ("bad alignment", lambda: K.Buffer("b", D.INT32, (4,), S.ARENA, alignment=12)),
    ("math on ints", lambda: K.math_call("exp", a32)),
    ("unknown math", lambda: K.math_call("frobnicate", fx)),
    ("math arity", lambda: K.math_call("pow", fx)),
]


@pytest.mark.parametrize("build", [b for _, b in BAD_NODES], ids=[n for n, _ in BAD_NODES])
def test_malformed_nodes_are_rejected(build):
    with pytest.raises(K.KernelIRError):
        build()


def test_result_dtypes():
    assert K.lt(fx, fx).dtype is D.BOOL
    assert K.logical_and(K.lt(fx, fx), K.lt(fx, fx)).dtype is D.BOOL
    assert K.shl(K.Var("s", D.INT8), K.Var("n", D.INT32)).dtype is D.INT8
    assert K.Cast(D.UINT8, fx).dtype is D.UINT8
    assert K.load(inp, i).dtype is D.FLOAT32
    assert K.cast(D.FLOAT32, fx) is fx


@pytest.mark.parametrize("fn, dtype, name", [("exp", D.FLOAT32, "expf"),
                                              ("exp", D.FLOAT16, "expf"),
                                              ("exp", D.FLOAT64, "exp"),
                                              ("nearbyint", D.FLOAT32, "nearbyintf")])
def test_math_call_picks_the_function_per_dtype(fn, dtype, name):
    c = K.math_call(fn, K.Var("v", dtype))
    assert (c.name, c.dtype) == (name, dtype)


def test_python_numbers_take_the_other_operands_dtype():
    e = K.add(1, K.Var("s", D.INT16))
    assert e.a == K.Const(1, D.INT16)
    assert K.select(K.lt(fx, fx), 0.5, fx).a == K.Const(0.5, D.FLOAT32)


# ===================================================================== values

def _tree():
    return K.add(K.mul(K.load(inp, K.flat_index([i], (4,))), 2.0), K.math_call("sqrt", fx))


def test_structurally_equal_trees_are_equal_and_hash_alike():
    assert _tree() == _tree() and _tree() is not _tree()
    assert hash(_tree()) == hash(_tree())
    assert {_tree(): 1}[_tree()] == 1
    assert _tree() != K.add(K.mul(K.load(inp, i), 3.0), K.math_call("sqrt", fx))


def test_deep_expressions_need_no_recursion():
    depth = 3 * sys.getrecursionlimit()
    e: K.Expr = K.Var("s", D.INT32)
    for n in range(depth):
        e = K.add(e, n % 7)
    hash(e)
    assert sum(1 for _ in walk_exprs(e)) == 2 * depth + 1
    value = evaluate(e, {"s": 5}, {})
    assert int(value) == 5 + sum(n % 7 for n in range(depth))
    text = print_expr(e)
    # one wrapping chain in the unsigned domain: no conversions back and forth
    assert text.startswith("(int32_t)((uint32_t)s + 0u + 1u + 2u")
    assert text.count("(uint32_t)") == 1 and text.count("+") == depth


# ============================================================ index builders

def test_flat_index_is_row_major_and_clean():
    assert print_expr(K.flat_index([i, j, 2], (4, 5, 6))) == "i * 30 + j * 6 + 2"
    assert print_expr(K.flat_index([i, j], (4, 5))) == "i * 5 + j"
    assert print_expr(K.flat_index([1, 2], (4, 5))) == "7"
    assert K.row_major_strides((2, 3, 4)) == (12, 4, 1)
    assert K.row_major_strides(()) == ()


def test_strided_index_drops_broadcast_dims_and_folds_offsets():
    assert print_expr(K.strided_index([i, j], [0, 1])) == "j"
    assert print_expr(K.strided_index([i, j], [3, 1], offset=-3)) == "i * 3 + j - 3"
    q = K.index_var("q", D.INT64)
    e = K.strided_index([q], [8], offset=1, dtype=D.INT64)
    assert print_expr(e) == "q * INT64_C(8) + INT64_C(1)"
    assert all(x.no_wrap for x in walk_exprs(e) if isinstance(x, K.BinOp))


def test_flat_index_needs_one_index_per_dim():
    with pytest.raises(K.KernelIRError):
        K.flat_index([i], (2, 3))


# ================================================================= verifier

def _kernel(body, params=(inp, out)):
    return K.Kernel("k", params, body)


acc = K.Var("acc", D.FLOAT32)
local = K.Buffer("tmp", D.FLOAT32, (4,), S.LOCAL)
arena = K.Buffer("mid", D.FLOAT32, (4,), S.ARENA)
table = K.Buffer("table", D.FLOAT32, (4,), S.CONST)

VERIFY_PROBLEMS = [
    ("variable out of scope", K.block(K.for_range(i, 4, []), K.store(out, i, fx)),
     "i used out of scope"),
    ("temporary never read", K.block(K.Decl(acc, K.Const(0.0, D.FLOAT32))), "never read"),
    ("shadowing", K.for_range(i, 4, [K.for_range(i, 2, [K.store(out, i, 0.0)])]),
     "declared twice in nested scopes"),
    ("assignment to a loop variable", K.for_range(i, 4, [K.Assign(i, K.Const(0, D.INT32))]),
     "assignment to loop variable i"),
    ("assignment to an undeclared variable", K.Assign(acc, K.Const(0.0, D.FLOAT32)),
     "undeclared acc"),
    ("buffer not a parameter", K.store(arena, 0, 1.0), "mid (arena) is not a parameter"),
    ("constant index out of bounds", K.store(out, 4, 1.0), "constant index 4 outside out[4]"),
    ("variable named like a function", K.block(K.Decl(K.Var("expf", D.FLOAT32), fx),
                                                K.store(out, 0, K.Var("expf", D.FLOAT32))),
     "expf shadows a function"),
    ("reserved prefix", K.block(K.Decl(K.Var("aot_t", D.FLOAT32), K.Const(1.0, D.FLOAT32)),
                                K.store(out, 0, K.Var("aot_t", D.FLOAT32))), "aot_ prefix"),
    ("variable used with two dtypes", K.for_range(i, 4, [K.store(out, K.Cast(D.INT32, K.Var(
        "i", D.INT64)), 1.0)]), "i used as int64, declared int32"),
    ("decided comparison", K.for_range(i, 4, [K.store(out, i, K.select(
        K.ge(K.Cast(D.INT32, K.Var("i8", D.INT8)), K.Const(-128, D.INT32)), fx, fx))]),
     "decided by the operands' ranges"),
]


@pytest.mark.parametrize("body, message", [(b, m) for _, b, m in VERIFY_PROBLEMS],
                         ids=[n for n, _, _ in VERIFY_PROBLEMS])
def test_verifier_reports_problems(body, message):
    with pytest.raises(K.KernelIRError, match=re.escape(message)):
        verify_kernel(_kernel(body))


def test_verifier_rejects_bad_parameter_lists():
    with pytest.raises(K.KernelIRError, match="duplicate parameter inp"):
        verify_kernel(_kernel(K.Block(()), (inp, inp)))
    with pytest.raises(K.KernelIRError, match="local buffer tmp cannot be a parameter"):
        verify_kernel(_kernel(K.Block(()), (local,)))
    other = K.Buffer("inp", D.INT32, (4,), S.INPUT)
    with pytest.raises(K.KernelIRError, match="two different buffers named inp"):
        verify_kernel(_kernel(K.store(out, 0, K.Cast(D.FLOAT32, K.load(other, 0)))))


def test_verifier_accepts_scopes_locals_and_global_tables():
    t = K.Var("t", D.FLOAT32)
    body = K.for_range(i, 4, [
        K.block(K.Decl(t, K.load(inp, i)), K.store(local, i, t)),
        K.block(K.Decl(t, K.load(table, i)), K.store(out, i, K.add(t, K.load(local, i)))),
        K.Decl(acc),
        K.Assign(acc, K.load(local, 0)),
        K.store(out, 0, acc),
    ])
    verify_kernel(_kernel(body))
    assert [b.name for b in buffers_in(body)] == ["inp", "tmp", "table", "out"]
    assert stored_buffers(body) == {"tmp", "out"}


# ======================================================= reference semantics

def _eval(e, env=None):
    return evaluate(e, env or {}, {})


def c(v, d):
    return K.Const(v, d)


@pytest.mark.parametrize("expr, expected", [
    (K.add(c(127, D.INT8), c(1, D.INT8)), np.int8(-128)),
    (K.mul(c(200, D.UINT8), c(2, D.UINT8)), np.uint8(144)),
    (K.div(c(-2 ** 31, D.INT32), c(-1, D.INT32)), np.int32(-2 ** 31)),
    (K.mod(c(-2 ** 31, D.INT32), c(-1, D.INT32)), np.int32(0)),
    (K.div(c(7, D.INT32), c(0, D.INT32)), np.int32(0)),
    (K.mod(c(7, D.UINT8), c(0, D.UINT8)), np.uint8(0)),
    (K.div(c(-7, D.INT32), c(2, D.INT32)), np.int32(-3)),
    (K.mod(c(-7, D.INT32), c(2, D.INT32)), np.int32(-1)),
    (K.floordiv(c(-7, D.INT32), c(2, D.INT32)), np.int32(-4)),
    (K.floormod(c(-7, D.INT32), c(2, D.INT32)), np.int32(1)),
    (K.shl(c(-1, D.INT8), 7), np.int8(-128)),
    (K.shr(c(-128, D.INT8), 7), np.int8(-1)),
    (K.neg(c(-128, D.INT8)), np.int8(-128)),
    (K.Cast(D.INT8, c(300.7, D.FLOAT32)), np.int8(127)),
    (K.Cast(D.UINT8, c(-3.5, D.FLOAT64)), np.uint8(0)),
    (K.Cast(D.INT32, c(math.nan, D.FLOAT32)), np.int32(0)),
    (K.Cast(D.INT8, c(300, D.INT32)), np.int8(44)),
    (K.Cast(D.BOOL, c(math.nan, D.FLOAT32)), np.True_),
    (K.add(c(1.0, D.FLOAT16), c(0.0004, D.FLOAT16)), np.float16(1.0)),
    (K.minimum(c(math.nan, D.FLOAT32), c(1.0, D.FLOAT32)), np.float32(math.nan)),
    (K.floordiv(c(7.0, D.FLOAT32), c(-2.0, D.FLOAT32)), np.float32(-4.0)),
    (K.floormod(c(7.0, D.FLOAT32), c(-2.0, D.FLOAT32)), np.float32(-1.0)),
    (K.mod(c(7.0, D.FLOAT32), c(-2.0, D.FLOAT32)), np.float32(1.0)),
    (K.math_call("sqrt", c(2.0, D.FLOAT16)), np.float16(np.sqrt(np.float32(2.0)))),
])
def test_evaluator_semantics(expr, expected):
    got = _eval(expr)
    assert got.dtype == expected.dtype
    assert got.tobytes() == expected.tobytes() or (np.isnan(got) and np.isnan(expected))


def test_run_kernel_transposes_like_numpy():
    src = K.Buffer("src", D.INT16, (3, 5), S.INPUT)
    dst = K.Buffer("dst", D.INT16, (5, 3), S.OUTPUT)
    kernel = K.Kernel("transpose", (src, dst), K.for_range(i, 3, [K.for_range(j, 5, [
        K.store(dst, K.flat_index([j, i], (5, 3)), K.load(src, K.flat_index([i, j], (3, 5))))])]))
    x = np.arange(15, dtype=np.int16).reshape(3, 5)
    arrays = {"src": x.copy(), "dst": np.zeros((5, 3), dtype=np.int16)}
    run_kernel(kernel, arrays)
    assert np.array_equal(arrays["dst"], x.T)


def test_run_kernel_checks_bounds():
    kernel = K.Kernel("k", (out,), K.for_range(i, 5, [K.store(out, i, 0.0)]))
    with pytest.raises(K.KernelIRError, match="out of bounds"):
        run_kernel(kernel, {"out": np.zeros(4, np.float32)})


def test_substitute_replaces_variables():
    e = K.add(K.mul(i, 4, True), j, True)
    assert print_expr(substitute(e, {i: K.Const(2, D.INT32)})) == "2 * 4 + j"
    s = substitute_stmt(K.store(out, e, 1.0), {j: K.Const(1, D.INT32)})
    assert print_expr(s.index) == "i * 4 + 1"

