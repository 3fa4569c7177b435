"""The C99 printer: precedence, literals, integer/float semantics compiled
with gcc and clang and run against NumPy and the kernel-IR reference,
warning-free compiles, pycparser parses.

C tests compile with ``-std=c99 -Wall -Wextra -Wpedantic -Werror`` and
call the kernels through ctypes (kernel_c_harness.py); the runtime helpers
come from aot_kernel_helpers.h.  clang runs when installed."""

from __future__ import annotations

import math
import random
import re
import shutil

import numpy as np
import pytest
from pycparser import c_ast, c_generator, c_parser

from aot.emit.kernel import ir as K
from aot.emit.c.expr import (BINARY_PREC, CAtom, CBinary, CCall, CCast, CIndex, CTernary, CUnary,
                             format_c)
from aot.emit.c.helpers import HELPERS, MACROS
from aot.emit.c.printer import (format_float, format_int, kernel_helpers, kernel_prototype,
                                print_expr, print_kernel, print_stmt)
from aot.emit.kernel.evaluate import run_kernel
from aot.emit.kernel.walk import buffers_in, stored_buffers
from aot.emit.kernel.simplify import simplify_kernel
from aot.ir.dtype import DType
from aot.ir.ops.elemwise import floor_divide, floor_mod, trunc_divide, trunc_mod
from aot.ir.ops.transform_init import cast_array
from kernel_c_harness import (ALL_DTYPES, RUNTIME_DIR, ExprGen, bits_equal, build, call, compile_c,
                              compilers, edge_values, module_source, random_values)

D = DType
O = K.BinaryOperator
S = K.BufferScope
INT_DTYPES = [d for d in ALL_DTYPES if d.is_int]

a32, b32, c32 = (K.Var(n, D.INT32) for n in "abc")
fx, fy, fz = (K.Var(n, D.FLOAT32) for n in ("x", "y", "z"))
i8, j8 = K.Var("p", D.INT8), K.Var("q", D.INT8)
u8, v8 = K.Var("u", D.UINT8), K.Var("v", D.UINT8)


def nw(op: O, a: K.Expr, b: K.Expr) -> K.BinOp:
    """No-wrap (plain C) integer arithmetic."""
    return K.BinOp(op, a, b, no_wrap=True)


# ================================================================ precedence

PRECEDENCE_CASES = [
    (nw(O.SUB, a32, nw(O.SUB, b32, c32)), "a - (b - c)"),
    (nw(O.SUB, nw(O.SUB, a32, b32), c32), "a - b - c"),
    (nw(O.MUL, nw(O.ADD, a32, b32), c32), "(a + b) * c"),
    (nw(O.ADD, a32, nw(O.MUL, b32, c32)), "a + b * c"),
    (K.div(K.mul(fx, fy), fz), "x * y / z"),
    (K.mul(fx, K.div(fy, fz)), "x * (y / z)"),
    (K.div(fx, K.mul(fy, fz)), "x / (y * z)"),
    (K.neg(K.Const(-1.0, D.FLOAT32)), "- -1.0f"),
    (K.neg(K.neg(fx)), "- -x"),
    (K.sub(fx, K.Const(-2.0, D.FLOAT32)), "x - -2.0f"),
    (K.neg(K.add(fx, fy)), "-(x + y)"),
    (K.Cast(D.FLOAT32, nw(O.ADD, a32, b32)), "(float)(a + b)"),
    (K.Cast(D.FLOAT64, fx), "(double)x"),
    (K.Cast(D.INT64, a32), "(int64_t)a"),
    (K.Cast(D.INT8, a32), "(int8_t)a"),
    (K.Cast(D.FLOAT32, K.neg(K.Var("w", D.FLOAT64))), "(float)-w"),
    (K.Select(K.lt(fx, fy), fx, fy), "x < y ? x : y"),
    (K.Select(K.Select(K.lt(fx, fy), K.lt(fy, fz), K.lt(fx, fz)), fx, fy),
     "(x < y ? y < z : x < z) ? x : y"),
    (K.Select(K.lt(fx, fy), fx, K.Select(K.lt(fy, fz), fy, fz)), "x < y ? x : y < z ? y : z"),
    (K.add(K.Select(K.lt(fx, fy), fx, fy), fz), "(x < y ? x : y) + z"),
    (K.logical_or(K.lt(a32, b32), K.logical_and(K.lt(b32, c32), K.lt(a32, c32))),
     "a < b || (b < c && a < c)"),
    (K.logical_and(K.logical_or(K.lt(a32, b32), K.lt(b32, c32)), K.lt(a32, c32)),
     "(a < b || b < c) && a < c"),
    (K.eq(K.lt(a32, b32), K.lt(b32, c32)), "(a < b) == (b < c)"),
    (K.eq(K.logical_not(K.lt(a32, b32)), K.lt(b32, c32)), "(!(a < b)) == (b < c)"),
    (K.bit_or(K.bit_and(a32, b32), c32), "(a & b) | c"),
    (K.bit_and(K.bit_and(a32, b32), c32), "a & b & c"),
    (K.shr(nw(O.ADD, a32, b32), K.Const(2, D.INT32)), "(a + b) >> 2"),
    (K.lt(nw(O.ADD, a32, b32), nw(O.MUL, b32, c32)), "a + b < b * c"),
    (K.logical_not(K.lt(fx, fy)), "!(x < y)"),
    (K.mul(K.neg(fx), fy), "-x * y"),
]


@pytest.mark.parametrize("expr, text", PRECEDENCE_CASES, ids=[t for _, t in PRECEDENCE_CASES])
def test_precedence_and_minimal_parentheses(expr, text):
    assert print_expr(expr) == text


C_TREE_CASES = [
    (CBinary("<<", CAtom("a"), CBinary("+", CAtom("b"), CAtom("c"))), "a << (b + c)"),
    (CBinary("<<", CBinary("*", CAtom("a"), CAtom("b")), CAtom("c")), "(a * b) << c"),
    (CBinary("|", CAtom("a"), CBinary("^", CAtom("b"), CAtom("c"))), "a | (b ^ c)"),
    (CBinary("&", CBinary("==", CAtom("a"), CAtom("b")), CAtom("c")), "(a == b) & c"),
    (CTernary(CBinary("&", CAtom("a"), CAtom("b")), CAtom("c"), CAtom("d")), "(a & b) ? c : d"),
    (CUnary("-", CAtom("-1", )), "- -1"),
    (CUnary("-", CUnary("-", CAtom("a"))), "- -a"),
    (CUnary("!", CUnary("!", CAtom("a"))), "!!a"),
    (CCast("float", CUnary("-", CAtom("a"))), "(float)-a"),
    (CUnary("-", CCast("float", CAtom("a"))), "-(float)a"),
    (CCast("int", CBinary("+", CAtom("a"), CAtom("b"))), "(int)(a + b)"),
    (CIndex("p", CBinary("+", CAtom("i"), CAtom("1"))), "p[i + 1]"),
    (CCall("f", (CTernary(CAtom("a"), CAtom("b"), CAtom("c")), CAtom("d"))), "f(a ? b : c, d)"),
    (CBinary("-", CAtom("a"), CTernary(CAtom("b"), CAtom("c"), CAtom("d"))), "a - (b ? c : d)"),
]


@pytest.mark.parametrize("tree, text", C_TREE_CASES, ids=[t for _, t in C_TREE_CASES])
def test_c_tree_formatting(tree, text):
    assert format_c(tree) == text


# ------------------------------------------------ pycparser structural check

_PARSER = c_parser.CParser()


def _random_c_tree(rng: random.Random, depth: int):
    if depth == 0 or rng.random() < 0.15:
        return CAtom(rng.choice(["a", "b", "c", "d", "0", "7"]))
    r = rng.random()
    if r < 0.5:
        op = rng.choice(sorted(BINARY_PREC))
        return CBinary(op, _random_c_tree(rng, depth - 1), _random_c_tree(rng, depth - 1))
    if r < 0.65:
        return CUnary(rng.choice(["-", "!", "~"]), _random_c_tree(rng, depth - 1))
    if r < 0.75:
        return CCast(rng.choice(["int", "float"]), _random_c_tree(rng, depth - 1))
    if r < 0.87:
        return CTernary(*(_random_c_tree(rng, depth - 1) for _ in range(3)))
    if r < 0.94:
        return CCall("f", tuple(_random_c_tree(rng, depth - 1) for _ in range(rng.randint(0, 2))))
    return CIndex("m", _random_c_tree(rng, depth - 1))


def _ours(t) -> tuple:
    if isinstance(t, CAtom):
        return ("atom", t.text)
    if isinstance(t, CBinary):
        return ("bin", t.op, _ours(t.left), _ours(t.right))
    if isinstance(t, CUnary):
        return ("un", t.op, _ours(t.operand))
    if isinstance(t, CCast):
        return ("cast", t.ctype, _ours(t.operand))
    if isinstance(t, CTernary):
        return ("?:", _ours(t.cond), _ours(t.then), _ours(t.else_))
    if isinstance(t, CCall):
        return ("call", t.fn, tuple(_ours(a) for a in t.args))
    assert isinstance(t, CIndex)
    return ("index", t.array, _ours(t.index))


def _theirs(n: c_ast.Node) -> tuple:
    if isinstance(n, c_ast.ID):
        return ("atom", n.name)
    if isinstance(n, c_ast.Constant):
        return ("atom", n.value)
    if isinstance(n, c_ast.BinaryOp):
        return ("bin", n.op, _theirs(n.left), _theirs(n.right))
    if isinstance(n, c_ast.UnaryOp):
        return ("un", n.op, _theirs(n.expr))
    if isinstance(n, c_ast.Cast):
        return ("cast", " ".join(n.to_type.type.type.names), _theirs(n.expr))
    if isinstance(n, c_ast.TernaryOp):
        return ("?:", _theirs(n.cond), _theirs(n.iftrue), _theirs(n.iffalse))
    if isinstance(n, c_ast.FuncCall):
        args = () if n.args is None else tuple(_theirs(a) for a in n.args.exprs)
        return ("call", n.name.name, args)
    assert isinstance(n, c_ast.ArrayRef), n
    return ("index", n.name.name, _theirs(n.subscript))


def _parse_expr(text: str) -> c_ast.Node:
    unit = _PARSER.parse(f"int g(void) {{ return {text}; }}")
    return unit.ext[0].body.block_items[0].expr


def test_formatting_parses_back_to_the_same_tree():
    """Printed with minimal parentheses, every tree parses (pycparser) to
    exactly the structure it was printed from."""
    rng = random.Random(1234)
    for _ in range(400):
        tree = _random_c_tree(rng, 5)
        text = format_c(tree)
        assert _theirs(_parse_expr(text)) == _ours(tree), text


def test_left_chains_need_no_parentheses_except_comparisons():
    """``a - b - c`` is left-associative; chained comparisons get clarity
    parentheses (gcc: "comparisons like 'X<=Y<=Z' do not have their
    mathematical meaning")."""
    atoms = [CAtom(x) for x in "abcd"]
    for op in sorted(BINARY_PREC):
        tree = CBinary(op, CBinary(op, CBinary(op, atoms[0], atoms[1]), atoms[2]), atoms[3])
        if op in ("<", "<=", ">", ">=", "==", "!="):
            assert format_c(tree) == f"((a {op} b) {op} c) {op} d"
        else:
            assert format_c(tree) == f"a {op} b {op} c {op} d"


# ================================================================== literals

@pytest.mark.parametrize("value, dtype, text", [
    (0.1, D.FLOAT32, "0.1f"), (1.0, D.FLOAT32, "1.0f"), (-0.0, D.FLOAT32, "-0.0f"),
    (1e-45, D.FLOAT32, "1e-45f"), (3.4028234663852886e38, D.FLOAT32, "3.4028235e+38f"),
    (math.inf, D.FLOAT32, "AOT_INF_F32"), (-math.inf, D.FLOAT32, "-AOT_INF_F32"),
    (math.nan, D.FLOAT32, "AOT_NAN_F32"), (0.1, D.FLOAT64, "0.1"), (5e-324, D.FLOAT64, "5e-324"),
    (-math.inf, D.FLOAT64, "-AOT_INF_F64"), (math.nan, D.FLOAT64, "AOT_NAN_F64"),
    (0.0999755859375, D.FLOAT16, "0.099975586f"), (65504.0, D.FLOAT16, "65504.0f"),
])
def test_float_literal_text(value, dtype, text):
    assert format_float(float(K.Const(value, dtype).value), dtype).text == text


@pytest.mark.parametrize("value, dtype, text", [
    (-2 ** 31, D.INT32, "(-2147483647 - 1)"), (2 ** 31 - 1, D.INT32, "2147483647"),
    (-5, D.INT32, "-5"), (-128, D.INT8, "-128"), (65535, D.UINT16, "65535"),
    (4294967295, D.UINT32, "4294967295u"), (5, D.INT64, "INT64_C(5)"),
    (-5, D.INT64, "-INT64_C(5)"), (-2 ** 63, D.INT64, "(-INT64_C(9223372036854775807) - 1)"),
    (2 ** 64 - 1, D.UINT64, "UINT64_C(18446744073709551615)"), (1, D.BOOL, "1"),
])
def test_integer_literal_text(value, dtype, text):
    assert format_int(value, dtype).text == text


def _literal_values(dtype: DType, rng: np.random.Generator) -> list:
    """Every class of value of ``dtype`` plus random bit patterns."""
    if dtype.is_int or dtype is D.BOOL:
        vals = edge_values(dtype)
        if dtype is not D.BOOL:
            vals += [int(v) for v in random_values(rng, dtype, 40)]
        return vals
    width = f"u{dtype.itemsize}"
    info = np.finfo(dtype.np)
    special = [0.0, -0.0, 1.0, 0.1, 1 / 3, float(info.max), -float(info.max), float(info.tiny),
               float(info.tiny) * (1 - float(info.eps)),           # largest subnormal
               float(np.array(1, dtype=width).view(dtype.np)),     # smallest subnormal
               math.inf, -math.inf, math.nan, 123456789.0, 1e-5, 65504.0]
    raw = rng.integers(0, 2 ** (8 * dtype.itemsize), size=300, dtype=np.uint64)
    with np.errstate(all="ignore"):
        randoms = np.array(raw).astype(width).view(dtype.np).astype(np.float64)
    return special + [float(v) for v in randoms if np.isfinite(v)]


def _literal_kernel(dtype: DType, values: list) -> tuple[K.Kernel, np.ndarray]:
    consts = [K.Const(v, dtype) for v in values]
    out = K.Buffer(f"lit_{dtype.value}", dtype, (len(consts),), S.OUTPUT)
    body = K.block(*(K.Store(out, K.Const(n, D.INT32), c) for n, c in enumerate(consts)))
    expected = np.array([c.value for c in consts], dtype=np.float64 if dtype.is_float else object)
    return K.Kernel(f"literals_{dtype.value}", (out,), body), expected.astype(dtype.np)


@pytest.fixture(scope="module", params=compilers())
def compiler(request):
    return request.param


def test_literals_round_trip_bit_exactly(compiler, tmp_path):
    rng = np.random.default_rng(7)
    cases = [_literal_kernel(d, _literal_values(d, rng)) for d in ALL_DTYPES]
    lib = build([k for k, _ in cases], tmp_path, "literals", compiler)
    for kernel, expected in cases:
        got = np.zeros_like(expected)
        call(lib, kernel, {kernel.params[0].name: got})
        same = bits_equal(got, expected)
        assert same.all(), (kernel.name, got[~same][:5], expected[~same][:5])
        if expected.dtype.kind == "f":     # NaN literals really are NaN, infinities signed
            assert np.array_equal(np.isnan(got), np.isnan(expected))
            assert np.array_equal(np.signbit(got[~np.isnan(got)]),
                                  np.signbit(expected[~np.isnan(expected)]))


# ================================================== integer edge semantics

def _expected_binary(op: O, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The interpreter's semantics, from NumPy and aot/ir/ops/elemwise.py."""
    with np.errstate(all="ignore"):
        table = {
            O.ADD: np.add, O.SUB: np.subtract, O.MUL: np.multiply, O.DIV: trunc_divide,
            O.MOD: trunc_mod, O.FLOORDIV: floor_divide, O.FLOORMOD: floor_mod,
            O.MIN: np.minimum, O.MAX: np.maximum, O.BIT_AND: np.bitwise_and,
            O.BIT_OR: np.bitwise_or, O.BIT_XOR: np.bitwise_xor, O.EQ: np.equal,
            O.NE: np.not_equal, O.LT: np.less, O.LE: np.less_equal, O.GT: np.greater,
            O.GE: np.greater_equal,
        }
        return np.asarray(table[op](a, b))


def _shift_expected(op: O, a: np.ndarray, s: np.ndarray) -> np.ndarray:
    bits = a.dtype.itemsize * 8
    out = []
    for x, n in zip(a.tolist(), s.tolist()):
        if op is O.SHL:
            v = (x << n) % (1 << bits)
            if a.dtype.kind == "i" and v >= 1 << (bits - 1):
                v -= 1 << bits
        else:
            v = x >> n          # Python's >> is arithmetic, as the IR's
        out.append(v)
    return np.array(out, dtype=a.dtype)


_INT_BINARY = [O.ADD, O.SUB, O.MUL, O.DIV, O.MOD, O.FLOORDIV, O.FLOORMOD, O.MIN, O.MAX,
               O.BIT_AND, O.BIT_OR, O.BIT_XOR, O.EQ, O.NE, O.LT, O.LE, O.GT, O.GE]


def _int_cases(rng: np.random.Generator):
    """(kernel, inputs, expected) for every integer operator and dtype over
    all pairs of edge values."""
    i = K.index_var("i")
    for t in INT_DTYPES:
        edges = np.array(edge_values(t), dtype=t.np)
        a = np.repeat(edges, len(edges))
        b = np.tile(edges, len(edges))
        n = a.size
        ba, bb = (K.Buffer(name, t, (n,), S.INPUT) for name in ("a", "b"))
        for op in _INT_BINARY:
            expr = K.BinOp(op, K.Load(ba, i), K.Load(bb, i))
            out = K.Buffer("out", expr.dtype, (n,), S.OUTPUT)
            kernel = K.Kernel(f"{op.name.lower()}_{t.value}", (ba, bb, out),
                              K.for_range(i, n, [K.Store(out, i, expr)]))
            yield kernel, {"a": a, "b": b}, _expected_binary(op, a, b).astype(expr.dtype.np)
        amounts = np.array([int(rng.integers(t.bits)) for _ in range(n)], dtype=np.int32)
        amounts[:4] = [0, 1, t.bits - 1, t.bits // 2]
        bs = K.Buffer("s", D.INT32, (n,), S.INPUT)
        for op in (O.SHL, O.SHR):
            out = K.Buffer("out", t, (n,), S.OUTPUT)
            kernel = K.Kernel(f"{op.name.lower()}_{t.value}", (ba, bs, out),
                              K.for_range(i, n, [K.Store(out, i, K.BinOp(op, K.Load(ba, i),
                                                                         K.Load(bs, i)))]))
            yield kernel, {"a": a, "s": amounts}, _shift_expected(op, a, amounts)
        for uop, ref in ((K.UnaryOperator.NEG, np.negative), (K.UnaryOperator.BIT_NOT, np.invert)):
            out = K.Buffer("out", t, (n,), S.OUTPUT)
            kernel = K.Kernel(f"{uop.name.lower()}_{t.value}", (ba, out),
                              K.for_range(i, n, [K.Store(out, i, K.UnaryOp(uop, K.Load(ba, i)))]))
            with np.errstate(all="ignore"):
                yield kernel, {"a": a}, ref(a)


def test_integer_operators_match_numpy_semantics(compiler, tmp_path):
    """Wrapping + - * << (no UB), x/0 == x%0 == 0, INT_MIN / -1 == INT_MIN,
    floor division/modulo, shifts, comparisons -- every integer dtype."""
    cases = list(_int_cases(np.random.default_rng(3)))
    lib = build([k for k, _, _ in cases], tmp_path, "intops", compiler)
    for kernel, inputs, expected in cases:
        arrays = {name: arr.copy() for name, arr in inputs.items()}
        arrays["out"] = np.zeros(expected.size, dtype=kernel.params[-1].dtype.np)
        call(lib, kernel, arrays)
        bad = arrays["out"] != expected
        assert not bad.any(), (kernel.name, {k: v[bad][:4] for k, v in inputs.items()},
                               arrays["out"][bad][:4], expected[bad][:4])


def test_reference_evaluator_matches_numpy_on_integer_edges():
    for kernel, inputs, expected in _int_cases(np.random.default_rng(3)):
        if not kernel.name.endswith(("int8", "uint16", "int64")):
            continue    # three dtypes keep this quick; the compiled test covers all
        arrays = {name: arr.copy() for name, arr in inputs.items()}
        arrays["out"] = np.zeros(expected.size, dtype=kernel.params[-1].dtype.np)
        run_kernel(kernel, arrays)
        assert np.array_equal(arrays["out"], expected), kernel.name


# ================================================ float conversions (casts)

def _cast_cases():
    i = K.index_var("i")
    for src in (D.FLOAT16, D.FLOAT32, D.FLOAT64):
        vals = [0.0, -0.0, 0.5, -0.5, 0.99, -0.99, 1.5, -1.5, 127.5, 128.0, -128.5, -129.0,
                255.5, 256.0, 32767.9, 32768.0, 65535.5, 65536.0, 2.0 ** 31, -2.0 ** 31,
                2.0 ** 31 - 1, -2.0 ** 31 - 1, 2.0 ** 32, 2.0 ** 63, -2.0 ** 63, 2.0 ** 64,
                1e30, -1e30, math.inf, -math.inf, math.nan]
        vals += list(np.random.default_rng(5).normal(size=60) * 1e5)
        with np.errstate(all="ignore"):
            x = np.array(vals, dtype=np.float64).astype(src.np)
        buf = K.Buffer("x", src, (x.size,), S.INPUT)
        for dst in ALL_DTYPES:
            if dst is src:
                continue
            out = K.Buffer("out", dst, (x.size,), S.OUTPUT)
            expr = K.Cast(dst, K.Load(buf, i))
            kernel = K.Kernel(f"cast_{src.value}_{dst.value}", (buf, out),
                              K.for_range(i, x.size, [K.Store(out, i, expr)]))
            with np.errstate(all="ignore"):
                expected = np.asarray(cast_array(x, dst)).astype(dst.np)
            yield kernel, x, expected


def test_float_casts_truncate_saturate_and_round_like_the_interpreter(compiler, tmp_path):
    cases = list(_cast_cases())
    lib = build([k for k, _, _ in cases], tmp_path, "casts", compiler)
    for kernel, x, expected in cases:
        arrays = {"x": x.copy(), "out": np.zeros_like(expected)}
        call(lib, kernel, arrays)
        same = bits_equal(arrays["out"], expected)
        assert same.all(), (kernel.name, x[~same][:4], arrays["out"][~same][:4],
                            expected[~same][:4])


def test_reference_half_conversions_match_numpy(tmp_path):
    """aot_kernel_helpers.h's binary16 conversions (what the runtime must
    provide) agree with NumPy on every half and on random floats/doubles."""
    source = module_source([], extra="""
void all_halves(float *out);
void all_halves(float *out)
{
    uint32_t h;
    for (h = 0; h < 65536u; ++h) {
        out[h] = aot_f16_to_f32((uint16_t)h);
    }
}
void from_f32(const float *in, uint16_t *out, int32_t n);
void from_f32(const float *in, uint16_t *out, int32_t n)
{
    int32_t i;
    for (i = 0; i < n; ++i) {
        out[i] = aot_f32_to_f16(in[i]);
    }
}
void from_f64(const double *in, uint16_t *out, int32_t n);
void from_f64(const double *in, uint16_t *out, int32_t n)
{
    int32_t i;
    for (i = 0; i < n; ++i) {
        out[i] = aot_f64_to_f16(in[i]);
    }
}
""")
    import ctypes
    lib = ctypes.CDLL(str(compile_c(source, tmp_path, "halves")))
    halves = np.arange(65536, dtype=np.uint32).astype(np.uint16).view(np.float16)
    got = np.zeros(65536, dtype=np.float32)
    lib.all_halves(ctypes.c_void_p(got.ctypes.data))
    assert bits_equal(got, halves.astype(np.float32)).all()
    rng = np.random.default_rng(11)
    for dtype, fn in ((np.float32, lib.from_f32), (np.float64, lib.from_f64)):
        width = np.dtype(dtype).itemsize * 8
        raw = rng.integers(0, 2 ** width, size=20000, dtype=np.uint64)
        x = np.concatenate([
            np.array(raw).astype(f"u{width // 8}").view(dtype),
            (rng.normal(size=20000) * 10.0 ** rng.integers(-9, 6, size=20000)).astype(dtype),
            halves.astype(dtype)])                                  # exact halves
        with np.errstate(all="ignore"):     # ties between neighbouring halves
            mid = (halves[:-1].astype(np.float64) + halves[1:].astype(np.float64)) / 2
        x = np.concatenate([x, mid[np.isfinite(mid)].astype(dtype)])
        out = np.zeros(x.size, dtype=np.uint16)
        fn(ctypes.c_void_p(x.ctypes.data), ctypes.c_void_p(out.ctypes.data), ctypes.c_int32(x.size))
        with np.errstate(all="ignore"):
            expected = x.astype(np.float16)
        assert bits_equal(out.view(np.float16), expected).all(), dtype


# ====================================== random expressions vs the reference

@pytest.mark.parametrize("seed_base", [0, 1000])
def test_random_expressions_match_the_reference(compiler, tmp_path, seed_base):
    """Random well-typed expressions over every dtype (wrapping chains,
    casts, selects, float16 rounding, helpers), simplified then printed,
    compiled, run: bit-identical to the kernel-IR reference evaluator."""
    n = 40
    i = K.index_var("i")
    inputs = {d: K.Buffer(f"in_{d.value}", d, (n,), S.INPUT) for d in ALL_DTYPES}
    kernels = []
    for seed in range(seed_base, seed_base + 96):
        dtype = ALL_DTYPES[seed % len(ALL_DTYPES)]
        expr = ExprGen(seed, inputs, i).expr(dtype, 5)
        out = K.Buffer("out", dtype, (n,), S.OUTPUT)
        store = K.Store(out, i, expr)
        used = [b for b in buffers_in(store) if b.scope is S.INPUT]
        kernels.append(simplify_kernel(K.Kernel(f"r{seed}", tuple(used) + (out,),
                                                K.for_range(i, n, [store]))))
    lib = build(kernels, tmp_path, "random", compiler)
    rng = np.random.default_rng(seed_base)
    data = {b.name: random_values(rng, d, n) for d, b in inputs.items()}
    # gcc 12 folds ``0.0 - (double)i`` into ``-(double)i`` (-0.0 for i == 0),
    # a gcc bug; the sign of a zero is checked exactly under clang only.
    exact_zeros = compiler != "gcc"
    for kernel in kernels:
        out = kernel.params[-1]
        arrays = {p.name: data[p.name].copy() for p in kernel.params[:-1]}
        expected = dict(arrays, out=np.zeros(n, out.dtype.np))
        arrays["out"] = np.zeros(n, out.dtype.np)
        call(lib, kernel, arrays)
        run_kernel(kernel, expected)
        same = bits_equal(arrays["out"], expected["out"], zero_sign=exact_zeros)
        assert same.all(), (kernel.name, print_kernel(kernel), arrays["out"][~same][:3],
                            expected["out"][~same][:3])


# =========================================================== statements

def test_statement_printing():
    i, j = K.index_var("i"), K.index_var("j")
    acc = K.Var("acc", D.FLOAT32)
    src = K.Buffer("src", D.FLOAT32, (4, 8), S.INPUT)
    dst = K.Buffer("dst", D.FLOAT32, (4,), S.OUTPUT)
    body = K.for_range(i, 4, [
        K.Comment("row */ sum"),
        K.Decl(acc, K.Const(0.0, D.FLOAT32)),
        K.for_range(j, 8, [K.Assign(acc, K.add(acc, K.Load(src, K.flat_index([i, j], (4, 8)))))],
                    kind=K.ForKind.VECTORIZE),
        K.if_then_else(K.gt(acc, K.Const(1.0, D.FLOAT32)),
                       [K.Store(dst, i, acc)],
                       K.if_then_else(K.lt(acc, K.Const(-1.0, D.FLOAT32)),
                                      [K.Store(dst, i, K.neg(acc))],
                                      [K.Store(dst, i, K.Const(0.0, D.FLOAT32))])),
    ])
    assert print_stmt(body) == """\
for (int32_t i = 0; i < 4; ++i) {
    /* row * / sum */
    float acc = 0.0f;
    /* loop hint: vectorize */
    for (int32_t j = 0; j < 8; ++j) {
        acc = acc + src[i * 8 + j];
    }
    if (acc > 1.0f) {
        dst[i] = acc;
    } else if (acc < -1.0f) {
        dst[i] = -acc;
    } else {
        dst[i] = 0.0f;
    }
}
"""


def test_kernel_printing_declares_locals_marks_unused_and_const_params():
    i = K.index_var("i")
    x = K.Buffer("x", D.FLOAT16, (4,), S.INPUT)
    unused = K.Buffer("unused", D.INT8, (2,), S.ARENA, restrict=False)
    y = K.Buffer("y", D.FLOAT16, (4,), S.ARENA)
    tmp = K.Buffer("tmp", D.FLOAT16, (4,), S.LOCAL)
    body = K.block(
        K.for_range(i, 4, [K.Store(tmp, i, K.add(K.Load(x, i), K.Const(1.0, D.FLOAT16)))]),
        K.for_range(i, 4, [K.Store(y, i, K.Load(tmp, K.sub(K.Const(3, D.INT32), i, True)))]),
    )
    kernel = K.Kernel("model_fused_add_0", (x, unused, y), body, "fused: add(x, 1f16)\nreversed")
    assert print_kernel(kernel) == """\
/*
 * fused: add(x, 1f16)
 * reversed
 */
static void model_fused_add_0(const uint16_t *restrict x, const int8_t *unused, \
uint16_t *restrict y)
{
    uint16_t tmp[4];
    (void)unused;
    for (int32_t i = 0; i < 4; ++i) {
        tmp[i] = aot_f32_to_f16(aot_f16_to_f32(x[i]) + 1.0f);
    }
    for (int32_t i = 0; i < 4; ++i) {
        y[i] = tmp[3 - i];
    }
}
"""
    assert kernel_prototype(kernel).startswith("static void model_fused_add_0(const uint16_t")
    assert kernel_helpers(kernel) == ("aot_f16_to_f32", "aot_f32_to_f16")


def test_printing_is_deterministic():
    kernels = _sample_kernels()
    first = [print_kernel(k) for k in kernels]
    rebuilt = [print_kernel(k) for k in _sample_kernels()]
    assert first == rebuilt


def test_print_kernel_rejects_malformed_ir():
    i = K.index_var("i")
    out = K.Buffer("out", D.INT32, (4,), S.OUTPUT)
    stray = K.Kernel("k", (out,), K.Store(out, K.Const(0, D.INT32), i))   # i out of scope
    with pytest.raises(K.KernelIRError, match="i used out of scope"):
        print_kernel(stray)
    u = K.Buffer("u", D.UINT8, (4,), S.INPUT)
    tautology = K.Kernel("t", (u, out), K.for_range(i, 4, [
        K.Store(out, i, K.Select(K.ge(K.Load(u, i), K.Const(0, D.UINT8)), i, i))]))
    with pytest.raises(K.KernelIRError, match="simplify"):
        print_kernel(tautology)
    assert "if" not in print_kernel(simplify_kernel(tautology))


# ============================================= whole kernels: compile, run

def _sample_kernels() -> list[K.Kernel]:
    """A few realistic kernels exercising every statement form."""
    i, j, k = K.index_var("i"), K.index_var("j"), K.index_var("k")
    kernels = []
    # broadcast add with a vector hint
    a = K.Buffer("a", D.FLOAT32, (3, 5), S.INPUT)
    bias = K.Buffer("bias", D.FLOAT32, (5,), S.CONST)
    out = K.Buffer("out", D.FLOAT32, (3, 5), S.OUTPUT)
    idx = K.flat_index([i, j], (3, 5))
    kernels.append(K.Kernel("bias_add", (a, bias, out), K.for_range(i, 3, [
        K.for_range(j, 5, [K.Store(out, idx, K.add(K.Load(a, idx), K.Load(bias, j)))],
                    kind=K.ForKind.VECTORIZE)]), "add(a, bias)"))
    # matmul-like reduction into a local accumulator row, with a clamp; the
    # weights are a global constant table, not a parameter
    m = K.Buffer("m", D.INT8, (2, 4), S.INPUT)
    w = K.Buffer("w", D.INT8, (4, 3), S.CONST)
    res = K.Buffer("res", D.INT8, (2, 3), S.OUTPUT)
    acc = K.Buffer("acc", D.INT32, (3,), S.LOCAL)
    t = K.Var("t", D.INT32)
    kernels.append(K.Kernel("qdense", (m, res), K.for_range(i, 2, [
        K.for_range(j, 3, [K.Store(acc, j, K.Const(0, D.INT32))], kind=K.ForKind.UNROLL),
        K.for_range(k, 4, [K.for_range(j, 3, [K.Store(acc, j, K.add(
            K.Load(acc, j), K.mul(K.Cast(D.INT32, K.Load(m, K.flat_index([i, k], (2, 4)))),
                                  K.Cast(D.INT32, K.Load(w, K.flat_index([k, j], (4, 3)))))))])]),
        K.for_range(j, 3, [
            K.Decl(t, K.Load(acc, j)),
            K.if_then_else(K.gt(t, K.Const(127, D.INT32)), [K.Assign(t, K.Const(127, D.INT32))]),
            K.if_then_else(K.lt(t, K.Const(-128, D.INT32)), [K.Assign(t, K.Const(-128, D.INT32))]),
            K.Store(res, K.flat_index([i, j], (2, 3)), K.Cast(D.INT8, t))]),
    ])))
    # float16 in, float64 out, int64 loop, triangular inner loop, sibling scopes
    h = K.Buffer("h", D.FLOAT16, (6,), S.INPUT)
    d = K.Buffer("d", D.FLOAT64, (6,), S.OUTPUT)
    q, r = K.index_var("q", D.INT64), K.index_var("r", D.INT64)
    s = K.Var("s", D.FLOAT64)
    kernels.append(K.Kernel("prefix_sum", (h, d), K.for_range(q, 6, [
        K.block(K.Decl(s, K.Const(0.0, D.FLOAT64)),
                K.for_range(r, K.add(q, K.Const(1, D.INT64), True), [
                    K.Assign(s, K.add(s, K.Cast(D.FLOAT64, K.Load(h, K.Cast(D.INT32, r)))))]),
                K.Store(d, K.Cast(D.INT32, q), s)),
        K.block(K.Decl(s, K.Load(d, K.Cast(D.INT32, q))),
                K.Store(d, K.Cast(D.INT32, q), K.mul(s, K.Const(0.5, D.FLOAT64)))),
    ]), "prefix sums of a float16 vector, halved\n(two sibling scopes both declare s)"))
    # math calls, select, bool output, offset loop start
    x = K.Buffer("x", D.FLOAT32, (8,), S.INPUT)
    y = K.Buffer("y", D.FLOAT32, (8,), S.OUTPUT)
    flag = K.Buffer("flag", D.BOOL, (8,), S.OUTPUT)
    v = K.Var("v", D.FLOAT32)
    kernels.append(K.Kernel("gelu_tail", (x, y, flag), K.for_range(i, 6, [
        K.Decl(v, K.Load(x, i)),
        K.Store(y, i, K.mul(K.mul(K.Const(0.5, D.FLOAT32), v), K.add(
            K.Const(1.0, D.FLOAT32), K.math_call("erf", K.mul(v, K.Const(0.70710678, D.FLOAT32)))))),
        K.Store(flag, i, K.logical_and(K.Cast(D.BOOL, v), K.lt(v, K.math_call("sqrt", v)))),
    ], start=2)))
    # a kernel that ignores one input entirely
    z = K.Buffer("z", D.UINT16, (4,), S.OUTPUT)
    ignored = K.Buffer("ignored", D.UINT64, (4,), S.INPUT)
    kernels.append(K.Kernel("fill", (ignored, z), K.for_range(i, 4, [
        K.Store(z, i, K.Cast(D.UINT16, K.mul(i, K.Const(20000, D.INT32))))])))
    return kernels


_TABLES = """static const int8_t w[12] = {1, -2, 3, -4, 5, -6, 7, -8, 9, -10, 11, 127};
"""


def _sample_arrays(kernel: K.Kernel, rng: np.random.Generator) -> dict[str, np.ndarray]:
    arrays = {p.name: random_values(rng, p.dtype, p.size) for p in kernel.params}
    for p in kernel.params:
        if p.name in stored_buffers(kernel.body):
            arrays[p.name] = np.zeros_like(arrays[p.name])
    if kernel.name == "gelu_tail":
        arrays["x"] = rng.normal(size=8).astype(np.float32)
    return arrays


@pytest.mark.parametrize("opt", ["-O0", "-O2"])
def test_sample_kernels_compile_warning_free(compiler, tmp_path, opt):
    source = module_source(_sample_kernels()).replace(
        '#include "aot_kernel_helpers.h"\n', '#include "aot_kernel_helpers.h"\n' + _TABLES)
    compile_c(source, tmp_path, f"sample{opt}", compiler, opt, shared=False)


def test_sample_kernels_run_like_the_reference(compiler, tmp_path):
    kernels = _sample_kernels()
    source = module_source(kernels).replace(
        '#include "aot_kernel_helpers.h"\n', '#include "aot_kernel_helpers.h"\n' + _TABLES)
    import ctypes
    lib = ctypes.CDLL(str(compile_c(source, tmp_path, "samples", compiler)))
    tables = {"w": np.array([1, -2, 3, -4, 5, -6, 7, -8, 9, -10, 11, 127], dtype=np.int8)}
    rng = np.random.default_rng(9)
    for kernel in kernels:
        arrays = _sample_arrays(kernel, rng)
        expected = {n: v.copy() for n, v in arrays.items()}
        call(lib, kernel, arrays)
        run_kernel(kernel, {**expected, **tables})
        for name in sorted(stored_buffers(kernel.body) & set(arrays)):
            if kernel.name == "gelu_tail" and name == "y":   # libm erff vs NumPy: ulps
                np.testing.assert_allclose(arrays[name], expected[name], rtol=1e-6, atol=1e-7)
            else:
                assert bits_equal(arrays[name], expected[name]).all(), (kernel.name, name)


_FAKE_TYPEDEFS = "".join(f"typedef int {t};\n" for t in (
    "int8_t", "int16_t", "int32_t", "int64_t", "uint8_t", "uint16_t", "uint32_t", "uint64_t"))


def _for_pycparser(text: str) -> str:
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    text = "\n".join(line for line in text.splitlines() if not line.startswith("#include"))
    return _FAKE_TYPEDEFS + text


def test_pycparser_parses_printed_kernels_and_round_trips():
    gen = c_generator.CGenerator()
    kernels = _sample_kernels()
    text = _for_pycparser(_TABLES + "".join(print_kernel(k) for k in kernels))
    unit = _PARSER.parse(text)
    funcs = [n for n in unit.ext if isinstance(n, c_ast.FuncDef)]
    assert [f.decl.name for f in funcs] == [k.name for k in kernels]
    regenerated = gen.visit(unit)
    assert gen.visit(_PARSER.parse(regenerated)) == regenerated


# ================================================================ catalogue

def test_reference_header_defines_every_helper_and_macro():
    header = (RUNTIME_DIR / "aot_kernel_helpers.h").read_text()
    defined = set(re.findall(r"\b(aot_[a-z0-9_]+)\s*\(", header))
    # names built by the header's macros: aot_div_##S and friends
    for family in ("div", "mod", "min", "max"):
        for sfx in ("i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64"):
            defined.add(f"aot_{family}_{sfx}")
    for family in ("floordiv", "floormod"):
        for sfx in ("i8", "i16", "i32", "i64", "f32", "f64"):
            defined.add(f"aot_{family}_{sfx}")
    for sfx in ("f32", "f64"):
        defined |= {f"aot_min_{sfx}", f"aot_max_{sfx}"}
        defined |= {f"aot_sat_{sfx}_{i}" for i in ("i8", "i16", "i32", "i64",
                                                    "u8", "u16", "u32", "u64")}
    assert set(HELPERS) <= defined, sorted(set(HELPERS) - defined)
    for macro in MACROS:
        assert f"#define {macro} " in header


def test_every_helper_the_printer_uses_is_in_the_catalogue(tmp_path):
    """Helpers are only printed through names of the catalogue; the random
    kernels reach most of it."""
    used: set[str] = set()
    i = K.index_var("i")
    inputs = {d: K.Buffer(f"in_{d.value}", d, (4,), S.INPUT) for d in ALL_DTYPES}
    for seed in range(300):
        dtype = ALL_DTYPES[seed % len(ALL_DTYPES)]
        out = K.Buffer("out", dtype, (4,), S.OUTPUT)
        store = K.Store(out, i, ExprGen(seed, inputs, i).expr(dtype, 4))
        params = tuple(b for b in buffers_in(store) if b.scope is S.INPUT) + (out,)
        kernel = simplify_kernel(K.Kernel("k", params, K.for_range(i, 4, [store])))
        text = print_kernel(kernel)
        names = set(re.findall(r"\b(?:aot|AOT)_\w+", text))
        assert names <= set(HELPERS) | set(MACROS), names - set(HELPERS) - set(MACROS)
        assert set(kernel_helpers(kernel)) == names
        used |= names
    assert len(used) > len(HELPERS) // 2


def test_clang_is_exercised_when_installed():
    assert ("clang" in compilers()) == (shutil.which("clang") is not None)
