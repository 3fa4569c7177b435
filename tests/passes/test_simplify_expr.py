"""SimplifyExpr: before/expected IR after TVM's test_pass_simplify_expr.py
(reshape, transpose, same and consecutive casts, identities), exactness of
every float rule on NaN, +-0 and +-inf (and inexactness of the rules left
out), the cast-chain rule checked against the interpreter's conversions
for every dtype pair, values kept on random inputs, and a 10,000-node
graph."""

from __future__ import annotations

import itertools

import ml_dtypes
import numpy as np
import pytest

import aot
from aot import builder as B
from aot.ir.dtype import DType
from aot.ir.expr import Call, Expr, Op
from aot.ir.module import IRModule
from aot.ir.ops.transform_init import cast_array
from aot.ir.structural import assert_structural_equal
from aot.ir.visitor import post_order
from aot.passes.manager import PassContext, Sequential, run_pass
from aot.passes.simplify_expr import cast_chain_exact, holds_exactly


def typed(text: str) -> IRModule:
    return aot.infer_types(aot.parse(text, source_name="simplify.relay"))


def simplify(mod: IRModule) -> IRModule:
    with PassContext(verify=True):
        return run_pass("SimplifyExpr", mod)


def calls(mod: IRModule, name: str | None = None) -> list[Call]:
    return [n for f in mod.functions.values() for n in post_order(f)
            if isinstance(n, Call) and isinstance(n.op, Op) and (name is None or n.op.name == name)]


def same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    """Equal dtypes, shapes and bits (any NaN matches any NaN)."""
    a, b = np.asarray(a), np.asarray(b)
    if a.dtype != b.dtype or a.shape != b.shape:
        return False
    if a.dtype.kind == "f":
        nan = np.isnan(a)
        if not np.array_equal(nan, np.isnan(b)):
            return False
        return a[~nan].tobytes() == b[~nan].tobytes()
    return a.tobytes() == b.tobytes()


def assert_same_values(before: IRModule, after: IRModule, *args: object) -> None:
    def leaves(v):
        return [x for f in v for x in leaves(f)] if isinstance(v, tuple) else [v]
    want = leaves(aot.interpret(before, *args))
    got = leaves(aot.interpret(after, *args))
    assert len(want) == len(got)
    for w, g in zip(want, got):
        assert same_bits(g, w), (g, w)


def check(body: str, expected: str, params: str, *args: object) -> IRModule:
    before = typed(f"def @main({params}) {{ {body} }}")
    after = simplify(before)
    assert_structural_equal(after, typed(f"def @main({params}) {{ {expected} }}"))
    if args:
        assert_same_values(before, after, *args)
    return after


RNG = np.random.default_rng(0)


# --------------------------------------------------------- TVM's reshape

def test_simplify_reshape():
    params = "%x: Tensor[(1, 16, 16, 16), float32], %w: Tensor[(32, 16, 3, 3), float32]"
    before = """%0 = nn.conv2d(%x, %w, padding=[1, 1]);
                reshape(reshape(%0, newshape=[1, 16, -1]), newshape=[4, 8, -1, 16])"""
    expected = "reshape(nn.conv2d(%x, %w, padding=[1, 1]), newshape=[4, 8, 16, 16])"
    check(before, expected, params, RNG.standard_normal((1, 16, 16, 16)).astype(np.float32),
          RNG.standard_normal((32, 16, 3, 3)).astype(np.float32))


def test_simplify_reshape_symbolic_is_left_alone():
    params = "%x: Tensor[(?, 16, 16, 16), float32], %w: Tensor[(32, 16, 3, 3), float32]"
    body = """%0 = nn.conv2d(%x, %w, padding=[1, 1]);
              reshape(reshape(%0, newshape=[1, 16, -1]), newshape=[4, 8, -1, 16])"""
    check(body, body, params)


# ------------------------------------------------------- TVM's transpose

X4 = "%x: Tensor[(1, 3, 8, 8), float32]"


@pytest.mark.parametrize("body, expected", [
    # before2: all transposes cancel
    ("transpose(transpose(transpose(nn.relu(%x), axes=[0, 2, 3, 1]), axes=[1, 2, 3, 0]), "
     "axes=[3, 2, 0, 1])", "nn.relu(%x)"),
    # before3: default (reverse) and negative axes
    ("%0 = transpose(transpose(nn.relu(%x)));"
     "transpose(transpose(transpose(%0, axes=[0, 2, -1, 1])))",
     "transpose(nn.relu(%x), axes=[0, 2, 3, 1])"),
    # before11: identity transpose
    ("nn.relu(transpose(%x, axes=[0, 1, 2, 3]))", "nn.relu(%x)"),
    # two that compose to a third
    ("transpose(transpose(%x, axes=[0, 2, 3, 1]), axes=[0, 2, 1, 3])",
     "transpose(%x, axes=[0, 3, 2, 1])"),
])
def test_simplify_transpose(body, expected):
    check(body, expected, X4, RNG.standard_normal((1, 3, 8, 8)).astype(np.float32))


# ------------------------------------------------------------ TVM's casts

def test_simplify_same_cast():
    params = "%data: Tensor[(3, 4, 5), int32], %like: Tensor[(2, 2, 2), int32]"
    check('(cast(%data, dtype="int32"), cast_like(%data, %like))', "(%data, %data)", params)


def test_simplify_consecutive_cast():
    params = ("%x: Tensor[(3, 4, 5), int8], %y: Tensor[(3, 4), int64], "
              "%z: Tensor[(3), float32]")
    e2 = 'cast(cast(%x, dtype="int16"), dtype="int32")'
    e3 = f"cast_like({e2}, %y)"
    e4 = f"cast_like({e3}, %z)"
    x = RNG.integers(-128, 128, (3, 4, 5)).astype(np.int8)
    y = np.zeros((3, 4), np.int64)
    z = np.zeros(3, np.float32)
    check(f"({e2}, {e3}, {e4})",
          '(cast(%x, dtype="int32"), cast(%x, dtype="int64"), cast(%x, dtype="float32"))',
          params, x, y, z)


@pytest.mark.parametrize("params, body", [
    ("%x: Tensor[(3, 4), float32], %y: Tensor[(3), float32]",
     'cast_like(cast(%x, dtype="int32"), %y)'),
    ("%x: Tensor[(3, 4), int64]", 'cast(cast(%x, dtype="bool"), dtype="int32")'),
])
def test_narrowing_casts_stay(params, body):
    before = typed(f"def @main({params}) {{ {body} }}")
    after = simplify(before)
    assert len(calls(after, "cast")) == 2


# ----------------------------------------------------- TVM's identities

SHAPE = "Tensor[(2, 3, 4), {dt}]"


@pytest.mark.parametrize("dt", ["float32", "int32"])
@pytest.mark.parametrize("body", [
    "multiply(ones_like(%x), %x)", "multiply(ones(shape=[2, 3, 4], dtype=\"{dt}\"), %x)",
    "multiply(ONE, %x)", "multiply(ones(shape=[3, 4], dtype=\"{dt}\"), %x)",
    "multiply(%x, ones_like(%x))", "multiply(%x, ones(shape=[2, 3, 4], dtype=\"{dt}\"))",
    "multiply(%x, ONE)", "multiply(%x, ones(shape=[3, 4], dtype=\"{dt}\"))",
    "divide(%x, ones_like(%x))", "divide(%x, ONE)",
    "divide(%x, ones(shape=[2, 3, 4], dtype=\"{dt}\"))",
    "divide(%x, ones(shape=[3, 4], dtype=\"{dt}\"))",
    "subtract(%x, zeros_like(%x))", "subtract(%x, ZERO)",
    "subtract(%x, zeros(shape=[2, 3, 4], dtype=\"{dt}\"))",
    "subtract(%x, zeros(shape=[3, 4], dtype=\"{dt}\"))",
])
def test_eliminate_identity(dt, body):
    one, zero = ("1f", "0f") if dt == "float32" else ("1", "0")
    body = body.replace("{dt}", dt).replace("ONE", one).replace("ZERO", zero)
    x = RNG.standard_normal((2, 3, 4)).astype(dt) if dt == "float32" else \
        RNG.integers(-9, 9, (2, 3, 4)).astype(dt)
    check(body, "%x", "%x: " + SHAPE.format(dt=dt), x)


@pytest.mark.parametrize("body", [
    "add(zeros_like(%x), %x)", "add(zeros(shape=[2, 3, 4], dtype=\"int32\"), %x)",
    "add(0, %x)", "add(%x, zeros_like(%x))", "add(%x, 0)",
    "add(%x, zeros(shape=[3, 4], dtype=\"int32\"))",
])
def test_eliminate_integer_zero(body):
    x = RNG.integers(-9, 9, (2, 3, 4)).astype(np.int32)
    check(body, "%x", "%x: " + SHAPE.format(dt="int32"), x)


@pytest.mark.parametrize("dt", ["float32", "int32"])
@pytest.mark.parametrize("body", [
    "multiply(%x, ones(shape=[2, 2, 3, 4], dtype=\"{dt}\"))",     # broadcasts x
    "multiply(ones(shape=[2, 2, 3, 4], dtype=\"{dt}\"), %x)",
    "subtract(zeros_like(%x), %x)",                                # 0 - x is not x
    "divide(ones_like(%x), %x)",
    "multiply(%x, TWO)",
])
def test_do_nothing(dt, body):
    body = body.replace("{dt}", dt).replace("TWO", "2f" if dt == "float32" else "2")
    check(body, body, "%x: " + SHAPE.format(dt=dt))


def test_float_plus_positive_zero_is_kept():
    """Unlike Relay, ``x + 0f`` and ``x + zeros`` stay for floats: -0 + 0 is +0."""
    body = "(add(%x, 0f), add(0f, %x), add(%x, zeros_like(%x)), subtract(%x, -0f))"
    check(body, body, "%x: " + SHAPE.format(dt="float32"))


def test_a_dropped_operand_must_be_pure():
    src = """def @f(%r: Ref[int32]) -> Tensor[(2), int32] { let %u = ref_write(%r, 1); zeros(shape=[2], dtype="int32") }
             def @main(%x: Tensor[(2), int32], %r: Ref[int32]) { add(%x, zeros_like(@f(%r))) }"""
    before = typed(src)
    assert_structural_equal(simplify(before), before)


def test_booleans_are_left_alone():
    body = "(multiply(%b, True), add(%b, False))"
    check(body, body, "%b: Tensor[(3), bool]")


# ---------------------------------------- exactness over float specials

SPECIALS = [np.nan, -np.nan, 0.0, -0.0, np.inf, -np.inf, 1.5, -2.25, 1e-30, 6e-8]
FLOATS = ["float16", "float32", "float64"]
SUFFIX = {"float16": "f16", "float32": "f", "float64": "f64"}

#: every float identity rule, written with C for the constant literal suffix
EXACT_RULES = ["multiply(%x, 1C)", "multiply(1C, %x)", "divide(%x, 1C)",
               "subtract(%x, 0C)", "add(%x, -0C)", "add(-0C, %x)",
               "multiply(%x, ones_like(%x))", "subtract(%x, zeros_like(%x))"]
#: identities that do not hold bit for bit, so are not rules
INEXACT = ["add(%x, 0C)", "add(0C, %x)", "subtract(%x, -0C)", "add(%x, zeros_like(%x))"]


def _specials(dt: str) -> np.ndarray:
    with np.errstate(all="ignore"):
        return np.array(SPECIALS, dtype=dt)


@pytest.mark.parametrize("dt", FLOATS)
@pytest.mark.parametrize("rule", EXACT_RULES)
def test_float_rules_are_exact_on_specials(dt, rule):
    body = rule.replace("C", SUFFIX[dt])
    params = f"%x: Tensor[({len(SPECIALS)}), {dt}]"
    before = typed(f"def @main({params}) {{ {body} }}")
    after = simplify(before)
    assert_structural_equal(after, typed(f"def @main({params}) {{ %x }}"))
    x = _specials(dt)
    assert same_bits(aot.interpret(before, x), x)


@pytest.mark.parametrize("dt", FLOATS)
@pytest.mark.parametrize("rule", INEXACT)
def test_inexact_identities_are_not_rules(dt, rule):
    body = rule.replace("C", SUFFIX[dt])
    params = f"%x: Tensor[({len(SPECIALS)}), {dt}]"
    before = typed(f"def @main({params}) {{ {body} }}")
    assert_structural_equal(simplify(before), before)
    x = _specials(dt)
    assert not same_bits(aot.interpret(before, x), x)       # -0 comes out as +0 (or back)


# --------------------------------------------------------- cast chains

DTYPES = [d for d in DType]
#: the chains through every pair of intermediate types are cubic in the
#: number of dtypes: the NumPy ones and one of each narrow kind
CHAIN_DTYPES = [d for d in DType if d.np.kind != "V" and d is not DType.FLOAT8_E5M2] + \
    [DType.BFLOAT16, DType.FLOAT8_E4M3FN, DType.INT4]


def _samples(d: DType) -> np.ndarray:
    if d.is_bool:
        return np.array([False, True])
    if d.is_float:
        # witnesses: a third, the largest finite value, the smallest
        # subnormal and one past 1 of each format (bfloat16, float8 too)
        fi = ml_dtypes.finfo(d.np)
        with np.errstate(all="ignore"):
            more = np.array([1 / 3, 65504.0, 1e38, 2049.0, 0.5, 300.0, -1.0, float(fi.max),
                             float(fi.smallest_subnormal), 1 + float(fi.eps)], dtype=d.np)
        return np.concatenate([_specials(d.np), more])
    info = ml_dtypes.iinfo(d.np)
    cands = [0, 1, -1, 2, 127, 128, 255, 256, 2049, 32767, 32768, 65535, 65536, 16777217,
             2**31 - 1, 2**31, 2**32 - 1, 2**53 + 1, 2**63 - 1, 2**63, 2**64 - 1,
             -128, -129, -32768, -32769, -2**31, -2**31 - 1, -2**63, info.min, info.max]
    return np.array(sorted({c for c in cands if info.min <= c <= info.max}), dtype=d.np)


def _same_numbers(a: np.ndarray, b: np.ndarray) -> bool:
    """Element-wise the same mathematical values (Python compares ints and
    floats exactly), NaN matching NaN and signed zeros told apart."""
    for u, v in zip(a.tolist(), b.tolist()):
        if isinstance(u, float) and isinstance(v, float):
            if np.isnan(u) or np.isnan(v):
                if not (np.isnan(u) and np.isnan(v)):
                    return False
                continue
            if np.copysign(1.0, u) != np.copysign(1.0, v):
                return False
        if isinstance(u, float) and np.isnan(u) or isinstance(v, float) and np.isnan(v):
            return False
        if u != v:
            return False
    return True


@pytest.mark.parametrize("src, mid", list(itertools.product(DTYPES, DTYPES)))
def test_holds_exactly_is_sound_and_tight(src, mid):
    """``holds_exactly(src, mid)`` iff casting to ``mid`` keeps the value of
    every sample of ``src`` (the samples hold a witness for each pair that
    loses something: int8 -1 in uint8, 2049 in float16, 1/3 in float16)."""
    x = _samples(src)
    assert holds_exactly(src, mid) == _same_numbers(cast_array(x, mid), x)


def test_cast_chain_exact_is_sound():
    """For every dtype triple that ``cast_chain_exact`` accepts, the chain
    and the direct cast agree on every sample.  (The rule is sufficient,
    not necessary: int32 -> int16 -> int8 agrees too, by wrapping twice,
    but goes through a narrowing step.)"""
    wrong = []
    for src, mid, dst in itertools.product(DTYPES, DTYPES, DTYPES):
        if cast_chain_exact(src, mid, dst):
            x = _samples(src)
            if not same_bits(cast_array(cast_array(x, mid), dst), cast_array(x, dst)):
                wrong.append((src.value, mid.value, dst.value))
    assert wrong == []


@pytest.mark.parametrize("src, mid, dst", [
    (DType.INT8, DType.FLOAT16, DType.UINT8),     # saturates vs wraps
    (DType.INT16, DType.FLOAT32, DType.INT8),
    (DType.UINT8, DType.FLOAT32, DType.INT8),
    (DType.BOOL, DType.FLOAT16, DType.INT8),      # here both agree: 0 and 1 fit
])
def test_int_to_float_to_int_needs_the_values_to_fit(src, mid, dst):
    x = _samples(src)
    agree = same_bits(cast_array(cast_array(x, mid), dst), cast_array(x, dst))
    assert holds_exactly(src, mid)
    assert cast_chain_exact(src, mid, dst) == agree == holds_exactly(src, dst)


@pytest.mark.parametrize("src", CHAIN_DTYPES)
def test_cast_chains(src):
    """Every chain src -> mid -> dst collapses exactly when
    ``cast_chain_exact``, and gives the same values as before on the
    samples."""
    chains = [(m, d) for m in CHAIN_DTYPES for d in CHAIN_DTYPES if m != src and d != m]
    x = B.var("x", B.tensor((len(_samples(src)),), src))
    body = B.tuple_(*[B.call("cast", B.call("cast", x, dtype=m.value), dtype=d.value)
                      for m, d in chains])
    before = aot.infer_types(B.module(main=B.function([x], body)))
    after = simplify(before)
    for (m, d), field in zip(chains, after["main"].body.fields):
        n = 0
        e: Expr = field
        while isinstance(e, Call):
            n += 1
            e = e.args[0]
        want = (0 if d == src else 1) if cast_chain_exact(src, m, d) else 2
        assert n == want, (src, m, d)
    assert_same_values(before, after, _samples(src))


# ----------------------------------------------------------- shape chains

X234 = "%x: Tensor[(2, 3, 4), float32]"


@pytest.mark.parametrize("body, expected", [
    ("squeeze(expand_dims(%x, axis=1), axis=[1])", "%x"),
    ("squeeze(expand_dims(%x, axis=0, num_newaxis=2))", "%x"),
    ("expand_dims(squeeze(expand_dims(%x, axis=3), axis=[3]), axis=1)",
     "expand_dims(%x, axis=1)"),
    ("reshape(%x, newshape=[2, 3, 4])", "%x"),
    ("reshape(%x, newshape=[0, -1, 4])", "%x"),
    ("expand_dims(%x, axis=0, num_newaxis=0)", "%x"),
    ("reshape(reshape(%x, newshape=[6, 4]), newshape=[2, 12])", "reshape(%x, newshape=[2, 12])"),
    ("reshape(reshape(%x, newshape=[24]), newshape=[2, 3, 4])", "%x"),
    ("squeeze(reshape(%x, newshape=[1, 24, 1]), axis=[0])", "reshape(%x, newshape=[24, 1])"),
    ("reshape(expand_dims(reshape(%x, newshape=[24]), axis=0), newshape=[4, 6])",
     "reshape(%x, newshape=[4, 6])"),
    ("squeeze(%x)", "%x"),
])
def test_shape_chains(body, expected):
    check(body, expected, X234, RNG.standard_normal((2, 3, 4)).astype(np.float32))


def test_dynamic_shape_chains_are_left_alone():
    body = "squeeze(expand_dims(%x, axis=1), axis=[1])"
    check(body, body, "%x: Tensor[(?, 3), float32]")


@pytest.mark.parametrize("body, expected", [
    ("concatenate((%x,), axis=1)", "%x"),
    ("concatenate((%x, %x), axis=1)", "concatenate((%x, %x), axis=1)"),
])
def test_concatenate_of_one_tensor(body, expected):
    check(body, expected, X234, RNG.standard_normal((2, 3, 4)).astype(np.float32))


def test_a_chain_whose_inner_call_has_other_users_is_merged():
    """The inner call stays for its other user; the outer one reads x
    directly (no work is added)."""
    check("%0 = reshape(%x, newshape=[6, 4]); %1 = cast(%x, dtype=\"float64\");"
          "(reshape(%0, newshape=[2, 12]), %0, cast(%1, dtype=\"float32\"), %1)",
          "(reshape(%x, newshape=[2, 12]), reshape(%x, newshape=[6, 4]), %x,"
          " cast(%x, dtype=\"float64\"))",
          X234, RNG.standard_normal((2, 3, 4)).astype(np.float32))


@pytest.mark.parametrize("first", [True, False])
def test_identity_operand_found_in_either_place_when_both_are_constant_like(first):
    """add(zeros_like(x), c) with c all -0: c is the identity (x + -0 = x),
    zeros_like(x) is not (+0); wherever c stands, zeros_like(x) stays."""
    x = B.var("x", B.tensor((2, 3, 4)))
    z = B.call("zeros_like", x)
    c = B.const(np.full((2, 3, 4), -0.0, np.float32))
    before = aot.infer_types(B.module(main=B.function([x], B.add(z, c) if first
                                                      else B.add(c, z))))
    after = simplify(before)
    body = after["main"].body
    assert isinstance(body, Call) and body.op.name == "zeros_like"
    assert_same_values(before, after, RNG.standard_normal((2, 3, 4)).astype(np.float32))


def test_concatenate_of_a_tuple_variable_stays():
    body = "concatenate(%t)"
    check(body, body, "%t: (Tensor[(2), float32],)")


# ---------------------------------------------------------------- manager

def test_disabled_by_name_leaves_the_module_unchanged():
    before = typed(f"def @main({X234}) {{ multiply(%x, 1f) }}")
    with PassContext(disabled=["SimplifyExpr"]):
        assert Sequential(["SimplifyExpr"])(before) is before
    assert Sequential(["SimplifyExpr"])(before) is not before


def test_nothing_to_do_returns_the_module():
    before = typed(f"def @main({X234}) {{ multiply(%x, 2f) }}")
    assert simplify(before) is before


def test_ten_thousand_node_graph():
    n = 10_000
    x = B.var("x", B.tensor((2, 3)))
    y: Expr = x
    for _ in range(n // 4):
        y = B.multiply(y, B.const(1.0))
        y = B.call("transpose", y)
        y = B.call("reshape", y, newshape=[6])
        y = B.call("reshape", y, newshape=[3, 2])
        y = B.call("transpose", y)
    y = B.add(y, y)
    before = aot.infer_types(B.module(main=B.function([x], y)))
    after = simplify(before)
    # every level is the identity: x * 1, then transpose . reshape . reshape . transpose
    assert_structural_equal(after["main"].body, B.add(after["main"].params[0],
                                                      after["main"].params[0]))
    x0 = RNG.standard_normal((2, 3)).astype(np.float32)
    assert_same_values(before, after, x0)


@pytest.mark.parametrize("seed", range(3))
def test_random_inputs_give_the_same_values(seed):
    src = """def @main(%x: Tensor[(2, 3, 4), float32], %i: Tensor[(2, 3, 4), int8]) {
        %0 = transpose(multiply(%x, 1f), axes=[2, 0, 1]);
        %1 = transpose(%0, axes=[1, 2, 0]);
        %2 = reshape(expand_dims(subtract(%1, 0f), axis=0), newshape=[6, 4]);
        %3 = cast(cast(%i, dtype="int32"), dtype="float32");
        %4 = cast(cast(%x, dtype="float64"), dtype="float16");
        (concatenate((%2,)), add(%3, -0f), divide(%4, 1f16), cast(cast(%x, dtype="int8"), dtype="float32"))
    }"""
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal((2, 3, 4)) * 100).astype(np.float32)
    i = rng.integers(-128, 128, (2, 3, 4)).astype(np.int8)
    before = typed(src)
    after = simplify(before)
    assert len(calls(after)) < len(calls(before))
    assert len(calls(after, "cast")) == 4
    assert_same_values(before, after, x, i)
