"""Lowering of the qnn family (aot/emit/lower/ops/qnn.py, qnn_linear.py,
_quant.py) against the interpreter: the fixed-point helpers against
aot.ir.quant on TFLite's golden cases, every operator over the tables of
tests/ops/test_qnn.py (constant, per-channel and run-time parameters), and
fused chains (conv2d + bias + requantize + clip) lowered as one kernel."""

from __future__ import annotations

from typing import Mapping

import numpy as np
import pytest
from cases import qnn as qnn_cases
from hypothesis import given, settings
from hypothesis import strategies as st

import aot
from aot.emit.kernel import ir as K
from aot.emit.kernel.evaluate import evaluate
from aot.emit.kernel.walk import walk_exprs, walk_stmts, stmt_exprs
from aot.emit.lower.group import LoweredGroup, lower_group
from aot.emit.lower.ops import fixed_point as Q
from aot.emit.lower.registry import LowerContext, LoweringError, TensorValue, from_buffer
from aot.ir import quant
from aot.ir.dtype import DType
from aot.ir.expr import Constant, Function
from aot.ir.module import IRModule
from aot.ir.visitor import ExprMutator
from aot.emit.kernel.verify import verify_kernel
from aot.emit.kernel.simplify import simplify_kernel
from kernel_c_harness import build, call, compilers
from lowering_harness import _flatten, assert_close, main_as_group, run_lowered

I32, F64 = DType.INT32, DType.FLOAT64


# ================================================================ harness

def f32(x: object) -> np.ndarray:
    return np.asarray(x, dtype=np.float32)


def i32(x: object) -> np.ndarray:
    return np.asarray(x, dtype=np.int32)


def tt(a: np.ndarray) -> str:
    dims = ", ".join(str(d) for d in a.shape)
    if len(a.shape) == 1:
        dims += ","
    return f"Tensor[({dims}), {np.dtype(a.dtype).name}]"


def bind_constants(mod: IRModule, consts: Mapping[str, np.ndarray]) -> IRModule:
    """``main``'s parameters named in ``consts`` replaced by constants (as
    aot.passes.bind_params, which turns a 0-d array into shape (1,):
    np.ascontiguousarray returns at least 1-d)."""
    fn = mod["main"]
    mutator = ExprMutator()
    for p in fn.params:
        if p.name_hint in consts:
            mutator.memo[p] = Constant(np.array(consts[p.name_hint]))
    body = mutator.visit(fn.body)
    kept = tuple(p for p in fn.params if p.name_hint not in consts)
    out = mod.copy()
    out.add(mod.global_var("main"), Function(kept, body, fn.ret_type, fn.type_params, fn.attrs))
    return out


def lower(params: Mapping[str, np.ndarray], body: str, consts: Mapping[str, np.ndarray] = {},
          name: str = "k") -> tuple[IRModule, LoweredGroup]:
    """``main(params..., consts...) = body`` with ``consts`` bound to
    constants, lowered as one fused group."""
    decl = ", ".join(f"%{n}: {tt(np.asarray(a))}" for n, a in {**params, **consts}.items())
    text = f'#[version = "0.0.5"]\ndef @main({decl}) {{\n  {body}\n}}\n'
    mod = aot.infer_types(bind_constants(aot.parse(text), consts))
    return mod, lower_group(main_as_group(mod), name)


def check(params: Mapping[str, np.ndarray], body: str,
          consts: Mapping[str, np.ndarray] = {}, rtol: float = 0.0) -> LoweredGroup:
    """Lower and run; the result must equal the interpreter's (floats
    within ``rtol``, integers exactly)."""
    mod, group = lower(params, body, consts)
    verify_kernel(simplify_kernel(group.kernel))
    args = [np.asarray(a) for a in params.values()]
    want = _flatten(aot.interpret(mod, *args))
    got = run_lowered(group, args)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert_close(g, w, rtol, 0.0, body)
    return group


def kernel_dtypes(group: LoweredGroup) -> set[DType]:
    """The dtypes of every expression in the kernel."""
    found: set[DType] = set()
    for s in walk_stmts(group.kernel.body):
        for root in stmt_exprs(s):
            found.update(e.dtype for e in walk_exprs(root))
    return found


rng = np.random.default_rng(20240611)


# ================================================ fixed point vs quant.py

GOLDEN_REALS = [  # tests/ops/test_quant.py: TFLite's quantization_util cases
    0.125, 0.25, 0.5, 1.0, 2.0, 4.0, 1 + 1e-11, 1.25, 1.5, 1.75, 2 - 1e-9, 2 - 1e-11,
    2.0 ** -31, 2.0 ** -32, 0.99 * 2.0 ** -32, 2.0 ** -33, 0.3, (2 ** 30 + 0.5) / 2 ** 34,
    2.0 ** 29, 1e-5, 123.456, 0.0078125 / 0.0235, 2.0 ** -40, 1e-20,
]
EDGE_X = [0, 1, -1, 2, -2, 3, -3, 5, -5, 7, -7, 100, -100, 2 ** 31 - 1, -(2 ** 31),
          2 ** 30, -(2 ** 30), 12345678, -87654321]


def _eval(expr: K.Expr, **env: object) -> int:
    return int(evaluate(expr, env, {}))


@pytest.mark.parametrize("real", GOLDEN_REALS)
def test_runtime_multiplier_is_quantize_multiplier(real: float) -> None:
    qm = quant.quantize_multiplier(real)
    q = Q.runtime_multiplier(K.var("r", F64))
    assert (_eval(q.multiplier, r=real), _eval(q.shift, r=real)) == (qm.multiplier, qm.shift)
    static = Q.static_multiplier(real)
    assert static.static == (qm.multiplier, qm.shift)


def test_runtime_multiplier_random_factors() -> None:
    q = Q.runtime_multiplier(K.var("r", F64))
    for real in np.exp(rng.uniform(np.log(2.0 ** -34), np.log(2.0 ** 29), 200)).tolist():
        qm = quant.quantize_multiplier(real)
        assert (_eval(q.multiplier, r=real), _eval(q.shift, r=real)) == \
            (qm.multiplier, qm.shift), real


@pytest.mark.parametrize("real", GOLDEN_REALS)
@pytest.mark.parametrize("runtime", [False, True])
def test_fixed_point_multiplies_match_quant(real: float, runtime: bool) -> None:
    qm = quant.quantize_multiplier(real)
    q = Q.runtime_multiplier(K.var("r", F64)) if runtime else Q.static_multiplier(real)
    x = K.var("x", I32)
    exprs = {"double": Q.multiply_double(x, q), "upward": Q.multiply_single(x, q, False),
             "nearest": Q.multiply_single(x, q, True)}
    xs = EDGE_X + rng.integers(-(2 ** 31), 2 ** 31, 20).tolist()
    for v in xs:
        want = {
            "double": quant.multiply_by_quantized_multiplier(v, qm.multiplier, qm.shift),
            "upward": quant.multiply_by_quantized_multiplier_single_rounding(
                v, qm.multiplier, qm.shift),
            "nearest": quant.multiply_by_quantized_multiplier_single_rounding(
                v, qm.multiplier, qm.shift, True)}
        for name, e in exprs.items():
            assert _eval(e, x=v, r=real) == int(want[name]), (name, real, v)


@settings(deadline=None, max_examples=200)
@given(st.integers(-(2 ** 31), 2 ** 31 - 1),
       st.floats(2.0 ** -34, 2.0 ** 29.9, allow_nan=False, allow_infinity=False),
       st.sampled_from(["double", "upward", "nearest"]), st.booleans())
def test_fixed_point_property(x: int, real: float, kind: str, runtime: bool) -> None:
    qm = quant.quantize_multiplier(real)
    q = Q.runtime_multiplier(K.var("r", F64)) if runtime else Q.static_multiplier(real)
    xv = K.var("x", I32)
    if kind == "double":
        e = Q.multiply_double(xv, q)
        want = quant.multiply_by_quantized_multiplier(x, qm.multiplier, qm.shift)
    else:
        e = Q.multiply_single(xv, q, kind == "nearest")
        want = quant.multiply_by_quantized_multiplier_single_rounding(
            x, qm.multiplier, qm.shift, kind == "nearest")
    assert _eval(e, x=x, r=real) == int(want)


@pytest.mark.parametrize("a, b", [  # SRDHM golden cases of test_quant.py (b >= 0)
    (1, 1 << 30), (-1, 1 << 30), (3, 1 << 30), (-3, 1 << 30), (-5, 1 << 30),
    (100, 2 ** 31 - 1), (-100, 2 ** 31 - 1), (-(2 ** 31), 2 ** 31 - 1),
    (2 ** 31 - 1, 2 ** 31 - 1), (0, 2 ** 31 - 1),
])
def test_srdhm_golden(a: int, b: int) -> None:
    e = Q._srdhm(K.var("a", I32), K.var("b", I32))
    assert _eval(e, a=a, b=b) == int(quant.saturating_rounding_doubling_high_mul(a, b))


@pytest.mark.parametrize("x, e", [  # RDBPOT golden cases of test_quant.py
    (5, 1), (-5, 1), (6, 1), (-6, 1), (7, 1), (-7, 1), (3, 2), (-3, 2), (2, 2), (-2, 2),
    (1, 2), (-1, 2), (12, 3), (-12, 3), (11, 3), (-11, 3), (2 ** 31 - 1, 31),
    (-(2 ** 31), 31), (-(2 ** 30), 31), ((1 << 30) - 1, 31), (123, 0), (-123, 0),
])
def test_rdbpot_golden(x: int, e: int) -> None:
    want = int(quant.rounding_divide_by_pot(x, e))
    v = K.var("v", DType.INT64)
    assert _eval(Q._rdbpot_static(v, e), v=x) == want
    assert _eval(Q._rdbpot_dynamic(v, K.var("e", I32)), v=x, e=e) == want


@pytest.mark.parametrize("x", [0.5, -0.5, 1.5, -2.5, 0.49999997, -0.49999997, 2.0 ** 23 + 1,
                               1e30, -0.0, np.inf, -np.inf, np.nan])
def test_round_half_away(x: float) -> None:
    e = Q.round_half_away(K.var("x", DType.FLOAT32))
    got = evaluate(e, {"x": np.float32(x)}, {})
    want = quant.round_half_away_from_zero(np.float32(x))
    assert np.array_equal(np.asarray(got), np.asarray(want), equal_nan=True)


# ================================================================ quantize

QUANTIZE_GOLDEN = [  # tests/ops/test_qnn.py::test_quantize_golden
    ([0.25, -0.25, 0.75, -1.25], 0.5, 0, "int8"),
    ([0.25, -0.25, 0.75, -1.25], 0.5, -1, "int8"),
    ([63.5, 64.0, 1e9, -64.0, -64.5, -1e9], 0.5, 0, "int8"),
    ([63.9, -63.75], 0.5, -1, "int8"),
    ([0.0, -0.2, 127.4, 200.0], 1.0, 128, "uint8"),
    ([-200.0, 0.4], 1.0, 0, "uint8"),
    ([np.nan, np.inf, -np.inf], 0.1, 5, "int8"),
    ([np.nan], 1.0, 300, "uint8"),
    ([40000.0, -40000.0, 12.5], 1.0, 0, "int16"),
    ([3e9, -3e9, 1000.5, np.nan], 1.0, 0, "int32"),
    ([3e9, -3e9, 1000.5, np.nan], 1.0, 2 ** 31 - 1, "int32"),
    ([0.3], 0.1, 0, "int8"),
    ([70000.0, -5.0, 65535.4, np.nan], 1.0, 0, "uint16"),
]


@pytest.mark.parametrize("x, scale, zp, out_dtype", QUANTIZE_GOLDEN)
@pytest.mark.parametrize("where", ["literal", "runtime"])
def test_quantize(x: list, scale: float, zp: int, out_dtype: str, where: str) -> None:
    data = f32(x)
    if where == "literal":
        check({"x": data}, f'qnn.quantize(%x, %s, %z, out_dtype="{out_dtype}")',
              {"s": f32(scale), "z": i32(zp)})
    else:
        check({"x": data, "s": f32(scale), "z": i32(zp)},
              f'qnn.quantize(%x, %s, %z, out_dtype="{out_dtype}")')


@pytest.mark.parametrize("axis, scale, zp", [
    (1, [0.5, 0.25, 1.0], [0, 10, -5]),
    (0, [0.5, 0.25], [0, 0]),
    (-1, [0.5, 0.25, 1.0], [3, 3, 3]),
])
def test_quantize_per_channel(axis: int, scale: list, zp: list) -> None:
    x = f32([[1.0, 1.0, 1.0], [-1.0, -1.0, -3.7]])
    body = f"qnn.quantize(%x, %s, %z, axis={axis})"
    check({"x": x}, body, {"s": f32(scale), "z": i32(zp)})
    check({"x": x, "s": f32(scale), "z": i32(zp)}, body)


def test_quantize_literal_zero_point_needs_no_double() -> None:
    group = check({"x": f32([0.4, -7.5, 1e10, np.nan])}, "qnn.quantize(%x, 0.5f, 3)")
    assert F64 not in kernel_dtypes(group)


def test_quantize_invalid_constant_scale_is_a_lowering_error() -> None:
    with pytest.raises(LoweringError, match="output_scale must be positive"):
        lower({"x": f32([1.0])}, "qnn.quantize(%x, %s, 0)", {"s": f32(0.0)})


# ============================================================== dequantize

DEQUANTIZE_GOLDEN = [  # tests/ops/test_qnn.py::test_dequantize_golden
    ([-128, 0, 127], "int8", 0.5, 0, "float32"),
    ([0, 128, 255], "uint8", 0.25, 128, "float32"),
    ([-32768, 32767], "int16", 1.0, -1, "float32"),
    ([2 ** 31 - 1], "int32", 1.0, -1, "float32"),
    ([1000, -1000, 3], "int16", 100.0, 0, "float16"),
    ([3], "int8", 0.1, 0, "float32"),
    ([0, 65535], "uint16", 0.003, 7, "float32"),
]


@pytest.mark.parametrize("q, dtype, scale, zp, out_dtype", DEQUANTIZE_GOLDEN)
@pytest.mark.parametrize("where", ["literal", "runtime"])
def test_dequantize(q: list, dtype: str, scale: float, zp: int, out_dtype: str,
                    where: str) -> None:
    body = f'qnn.dequantize(%x, %s, %z, out_dtype="{out_dtype}")'
    consts = {"s": f32(scale), "z": i32(zp)}
    if where == "literal":
        check({"x": np.array(q, dtype)}, body, consts)
    else:
        check({"x": np.array(q, dtype), **consts}, body)


def test_dequantize_per_channel() -> None:
    q = np.array([[10, 10], [20, 20], [30, 30]], np.int8)
    check({"q": q}, "qnn.dequantize(%q, %s, %z, axis=0)",
          {"s": f32([1.0, 0.5, 0.25]), "z": i32([0, 10, 30])})


# ============================================================== requantize



def requantize(rounding: str = "None", out_dtype: str = "int8", axis: int = -1,
               compute: str = "None") -> str:
    return (f'qnn.requantize(%x, %si, %zi, %so, %zo, axis={axis}, rounding="{rounding}", '
            f'compute_dtype="{compute}", out_dtype="{out_dtype}")')


@pytest.mark.parametrize("rounding", qnn_cases.ROUNDINGS)
@pytest.mark.parametrize("x, si, so", [
    ([5, -5, 3, -3, 7, -7], 1.0, 2.0),          # ties (test_requantize_ties)
    ([6, -6, -3, -2], 0.25, 1.0),               # test_requantize_quarter
    ([1, -1, 9, -9, 2 ** 31 - 1, -(2 ** 31)], 3.0, 0.25),   # a left shift
])
def test_requantize_ties(rounding: str, x: list, si: float, so: float) -> None:
    consts = {"si": f32(si), "zi": i32(0), "so": f32(so), "zo": i32(0)}
    check({"x": i32(x)}, requantize(rounding, "int32"), consts)


@pytest.mark.parametrize("out_dtype, x", [  # test_requantize_saturates
    ("int8", [1000, -1000, 254, 256, -258]),
    ("uint8", [1000, -1000, 254, 256]),
    ("int16", [1 << 20, -(1 << 20)]),
    ("int32", [2 ** 31 - 1, -(2 ** 31)]),
])
@pytest.mark.parametrize("rounding", ["TFLITE", "UPWARD"])
def test_requantize_saturates(out_dtype: str, x: list, rounding: str) -> None:
    consts = {"si": f32(0.5), "zi": i32(0), "so": f32(1.0), "zo": i32(0)}
    group = check({"x": i32(x)}, requantize(rounding, out_dtype), consts)
    assert not any(d.is_float for d in kernel_dtypes(group))


@pytest.mark.parametrize("dtype", ["int64", "int8", "uint8", "int16"])
def test_requantize_zero_points_and_input_dtypes(dtype: str) -> None:
    info = np.iinfo(dtype)
    x = np.array([info.min, info.max, 0, 6, -3 if info.min < 0 else 3], dtype)
    if dtype == "int64":
        x[2] = 2 ** 32 + 6
    consts = {"si": f32(0.5), "zi": i32(2), "so": f32(1.0), "zo": i32(-3)}
    for rounding in ("TFLITE", "TONEAREST"):
        check({"x": x}, requantize(rounding, "int16"), consts)


def _random_requantize_case(seed: int) -> tuple[np.ndarray, dict, str, str]:
    r = np.random.default_rng(seed)
    while True:
        si, so = (float(np.float32(2.0 ** r.uniform(-13, 10))) for _ in range(2))
        if si / so < 2 ** 30:
            break
    x = r.integers(-(2 ** 31), 2 ** 31, 12).astype(np.int32)
    x[:4] = r.integers(-3000, 3000, 4)
    consts = {"si": f32(si), "zi": i32(r.integers(-1000, 1000)), "so": f32(so),
              "zo": i32(r.integers(-128, 128))}
    rounding = ["TFLITE", "UPWARD", "TONEAREST"][seed % 3]
    out_dtype = ["int8", "uint8", "int16", "int32"][seed % 4]
    return x, consts, rounding, out_dtype


@pytest.mark.parametrize("seed", range(12))
def test_requantize_random_constant_scales(seed: int) -> None:
    x, consts, rounding, out_dtype = _random_requantize_case(seed)
    check({"x": x}, requantize(rounding, out_dtype), consts)


@pytest.mark.parametrize("seed", range(6))
def test_requantize_random_runtime_scales(seed: int) -> None:
    x, consts, rounding, out_dtype = _random_requantize_case(seed)
    check({"x": x, **consts}, requantize(rounding, out_dtype))


PER_CHANNEL = {"si": f32([0.3, 0.07, 1.9, 0.5]), "zi": i32([3, -7, 0, 100]),
               "so": f32(0.4), "zo": i32(-5)}


@pytest.mark.parametrize("rounding", qnn_cases.ROUNDINGS)
def test_requantize_per_channel_constant(rounding: str) -> None:
    """test_requantize_per_channel_matches_slices: a CONST scale vector."""
    x = np.random.default_rng(0).integers(-2000, 2000, size=(2, 4, 3)).astype(np.int32)
    check({"x": x}, requantize(rounding, "int8", axis=1), PER_CHANNEL)


@pytest.mark.parametrize("rounding", ["TFLITE", "UPWARD"])
def test_requantize_per_channel_runtime(rounding: str) -> None:
    x = np.random.default_rng(1).integers(-2000, 2000, size=(2, 4, 3)).astype(np.int32)
    check({"x": x, **PER_CHANNEL}, requantize(rounding, "int16", axis=1))


def test_requantize_per_channel_with_equal_multipliers_is_literal() -> None:
    consts = {**PER_CHANNEL, "si": f32([0.3, 0.3, 0.3, 0.3])}
    x = np.arange(-12, 12, dtype=np.int32).reshape(2, 4, 3) * 37
    group = check({"x": x}, requantize("TFLITE", "int8", axis=1), consts)
    assert not any(d.is_float for d in kernel_dtypes(group))


@pytest.mark.parametrize("compute, rounding", [
    ("float32", "UPWARD"), ("float32", "TONEAREST"), ("float64", "UPWARD"),
    ("float64", "None"), ("float64", "TONEAREST"), ("float32", "None"),
])
@pytest.mark.parametrize("per_channel", [False, True])
def test_requantize_float_compute(compute: str, rounding: str, per_channel: bool) -> None:
    x = i32([[-5, 5, -3, 3], [2 ** 31 - 1, -(2 ** 31), 1000, -77]])
    consts = {"si": f32([0.5, 0.49999997, 3.0, 0.1]) if per_channel else f32(0.5),
              "zi": i32(1), "so": f32(1.0), "zo": i32(2)}
    check({"x": x}, requantize(rounding, "int32", axis=1, compute=compute), consts)
    check({"x": x}, requantize(rounding, "int8", axis=1, compute=compute), consts)


def test_requantize_float_upward_rounds_the_bias_addition() -> None:
    s_in = float(np.float32(0.49999997))
    consts = {"si": f32(s_in), "zi": i32(0), "so": f32(1.0), "zo": i32(0)}
    check({"x": i32([1, -1, 3])}, requantize("UPWARD", "int32", compute="float32"), consts)
    check({"x": i32([1, -1, 3])}, requantize("UPWARD", "int32"), consts)


@pytest.mark.parametrize("rounding, compute", [
    ("None", "None"), ("TFLITE", "int64"), ("UPWARD", "None"), ("TONEAREST", "int64"),
    ("UPWARD", "float32"), ("TONEAREST", "float64"),
])
@pytest.mark.parametrize("scale, zp", [(0.0078125, -128), (0.173, 17), (3.5, 0)])
def test_requantize_same_parameters(rounding: str, compute: str, scale: float,
                                    zp: int) -> None:
    """test_requantize_same_parameters_is_identity, over every int8 value."""
    consts = {"si": f32(scale), "zi": i32(zp), "so": f32(scale), "zo": i32(zp)}
    x = np.arange(-128, 128, dtype=np.int8)
    check({"x": x}, requantize(rounding, "int8", compute=compute), consts)


@pytest.mark.parametrize("si, so, message", [
    (0.0, 1.0, "input_scale must be positive"),
    (1.0, 0.0, "output_scale must be positive"),
    (float("nan"), 1.0, "input_scale must be positive"),
    (2.0 ** 31, 1.0, "too large"),
])
def test_requantize_invalid_constant_scales(si: float, so: float, message: str) -> None:
    consts = {"si": f32(si), "zi": i32(0), "so": f32(so), "zo": i32(0)}
    with pytest.raises(LoweringError, match=f"qnn.requantize: .*{message}"):
        lower({"x": i32([1])}, requantize(), consts)


# ============================================================ add and mul

def binary(op: str, attrs: str = "") -> str:
    return f"qnn.{op}(%a, %b, %sa, %za, %sb, %zb, %so, %zo{attrs})"


def binary_consts(sa: object, za: object, sb: object, zb: object, so: float,
                  zo: int) -> dict[str, np.ndarray]:
    return {"sa": f32(sa), "za": i32(za), "sb": f32(sb), "zb": i32(zb), "so": f32(so),
            "zo": i32(zo)}


ADD_GOLDEN = [  # tests/ops/test_qnn.py::test_add_golden
    ([1, 2, 3, -128, 127, 100], [10, -10, 127, 10, -10, 100], (0.1, 0, 0.1, 0, 0.1, 0)),
    ([3, -3], [3, -3], (0.5, 0, 0.25, 0, 0.5, 0)),
    ([10], [2], (0.5, 5, 0.25, -2, 0.25, 1)),
    ([-128, -100], [-128, 0], (1.0, 0, 1.0, 0, 0.5, 0)),
    ([-125], [-100], (0.013, 0, 0.029, 0, 0.05, 0)),
]
SUBTRACT_GOLDEN = [  # tests/ops/test_qnn.py::test_subtract_golden
    ([1, 2, 3, -128, 127, 100], [10, -10, 127, 10, -10, 100], (0.1, 0, 0.1, 0, 0.1, 0)),
    ([3, -3], [-3, 3], (0.5, 0, 0.25, 0, 0.5, 0)),
    ([10], [2], (0.5, 5, 0.25, -2, 0.25, 1)),
    ([-125], [100], (0.013, 0, 0.029, 0, 0.05, 0)),
    ([3, 1], [1, 3], (0.25, 0, 0.5, 0, 0.5, 0)),
]
MUL_GOLDEN = [  # tests/ops/test_qnn.py::test_mul_golden
    ([3, -3, 5, -5], [1, 1, 1, 1], (1.0, 0, 0.5, 0, 1.0, 0)),
    ([127, -128, 127], [127, 127, -128], (1.0, 0, 1.0, 0, 1.0, 0)),
    ([10], [-3], (0.25, 2, 0.5, -1, 0.125, 4)),
    ([3, -7], [5, 5], (0.5, 0, 0.5, 0, 0.0625, 0)),
]


@pytest.mark.parametrize("op, lhs, rhs, params",
                         [("add", *c) for c in ADD_GOLDEN] + [("mul", *c) for c in MUL_GOLDEN]
                         + [("subtract", *c) for c in SUBTRACT_GOLDEN])
@pytest.mark.parametrize("where", ["literal", "runtime"])
def test_binary_golden(op: str, lhs: list, rhs: list, params: tuple, where: str) -> None:
    a, b = np.array(lhs, np.int8), np.array(rhs, np.int8)
    consts = binary_consts(*params)
    if where == "literal":
        group = check({"a": a, "b": b}, binary(op), consts)
        assert not any(d.is_float for d in kernel_dtypes(group))
    else:
        check({"a": a, "b": b, **consts}, binary(op))


@pytest.mark.parametrize("op", ["add", "subtract", "mul"])
def test_binary_uint8_broadcasting(op: str) -> None:
    a = np.array([[0], [128], [255]], np.uint8)
    b = np.array([[128, 200]], np.uint8)
    s = 0.125 if op == "mul" else 0.5
    check({"a": a, "b": b}, binary(op), binary_consts(s, 128, s, 128, s, 128))


@pytest.mark.parametrize("op", ["add", "subtract", "mul"])
@pytest.mark.parametrize("where", ["literal", "runtime"])
def test_binary_per_channel_scales(op: str, where: str) -> None:
    """test_binary_per_channel_scales, both operands per channel."""
    a = np.array([[4, 4, 4], [-4, -100, 17]], np.int8)
    b = np.array([[2], [-9]], np.int8)
    consts = binary_consts([0.5, 0.25, 1.0], [0, 3, -2], [0.5, 0.125], [1, 0], 0.5, -1)
    body = binary(op, ", lhs_axis=1, rhs_axis=0")
    if where == "literal":
        check({"a": a, "b": b}, body, consts)
    else:
        check({"a": a, "b": b, **consts}, body)


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("op", ["add", "subtract", "mul"])
def test_binary_random_scales(seed: int, op: str) -> None:
    r = np.random.default_rng(seed)
    while True:
        sa, sb, so = (float(np.float32(2.0 ** r.uniform(-13, 10))) for _ in range(3))
        if (2 * max(sa, sb) / ((1 << 20) * so) < 1) if op != "mul" else (sa * sb / so < 2 ** 30):
            break
    a = r.integers(-128, 128, 8).astype(np.int8)
    b = r.integers(-128, 128, 8).astype(np.int8)
    consts = binary_consts(sa, r.integers(-128, 128), sb, r.integers(-128, 128), so,
                           r.integers(-128, 128))
    check({"a": a, "b": b}, binary(op), consts)


def test_add_output_scale_too_small_is_a_lowering_error() -> None:
    with pytest.raises(LoweringError, match="qnn.add: .*too small"):
        lower({"a": np.array([1], np.int8), "b": np.array([1], np.int8)}, binary("add"),
              binary_consts(1.0, 0, 1.0, 0, 1e-6, 0))


# ============================================================= concatenate

@pytest.mark.parametrize("parts, scales, zps, oscale, ozp, axis", [
    # test_concatenate_requantizes_with_upward_rounding
    ([[[1, -1], [3, -3]], [[5], [-5]]], [1.0, 0.5], [0, 0], 1.0, 0, 1),
    # test_concatenate_zero_points_and_saturation
    ([[100, -100], [0, 1]], [2.0, 1.0], [10, -50], 1.0, 0, 0),
    # identical parameters: the parts pass unchanged
    ([[1, 2, 3], [-128, 127], [0]], [0.3, 0.3, 0.3], [7, 7, 7], 0.3, 7, 0),
    ([[[1, 2]], [[3, 4]], [[5, 6]]], [0.3, 0.6, 0.15], [7, -1, 0], 0.3, 7, 0),
])
@pytest.mark.parametrize("where", ["literal", "runtime"])
def test_concatenate(parts: list, scales: list, zps: list, oscale: float, ozp: int, axis: int,
                     where: str) -> None:
    arrays = {f"x{i}": np.array(p, np.int8) for i, p in enumerate(parts)}
    n = len(parts)
    consts = {**{f"s{i}": f32(s) for i, s in enumerate(scales)},
              **{f"z{i}": i32(z) for i, z in enumerate(zps)}, "so": f32(oscale), "zo": i32(ozp)}
    xs = ", ".join(f"%x{i}" for i in range(n))
    ss = ", ".join(f"%s{i}" for i in range(n))
    zs = ", ".join(f"%z{i}" for i in range(n))
    body = f"qnn.concatenate(({xs}), ({ss}), ({zs}), %so, %zo, axis={axis})"
    if where == "literal":
        check(arrays, body, consts)
    else:
        check({**arrays, **consts}, body)


# ==================================================== fixed_point_multiply

@pytest.mark.parametrize("multiplier, shift", [
    (2080045879, -4), (1 << 30, 0), (1 << 30, 1), (1 << 30, 3), (-(1 << 30), 0),
    (-(2 ** 31), 5), (2 ** 31 - 1, 30), (12345, -31), (0, 7),
])
def test_fixed_point_multiply(multiplier: int, shift: int) -> None:
    x = i32(EDGE_X)
    check({"x": x}, f"fixed_point_multiply(%x, multiplier={multiplier}, shift={shift})")


# =================================================================== dense

def dense(out_dtype: str = "int32") -> str:
    return f'qnn.dense(%x, %w, %zx, %zw, %sx, %sw, out_dtype="{out_dtype}")'


@pytest.mark.parametrize("xshape, units, xdtype, wdtype, per_channel, out_dtype", [
    # tests/ops/test_qnn.py::test_dense_matches_loop
    ((2, 5), 3, "int8", "int8", False, "int32"),
    ((3, 2, 7), 4, "uint8", "uint8", True, "int32"),
    ((1, 16), 2, "int16", "int8", True, "int64"),
    ((4, 3), 5, "uint16", "uint8", False, "int64"),
    ((2, 9), 11, "int8", "int8", True, "int32"),
])
@pytest.mark.parametrize("where", ["literal", "runtime", "zero"])
def test_dense(xshape: tuple, units: int, xdtype: str, wdtype: str, per_channel: bool,
               out_dtype: str, where: str) -> None:
    r = np.random.default_rng(1)
    xi, wi = np.iinfo(xdtype), np.iinfo(wdtype)
    x = r.integers(xi.min, int(xi.max) + 1, size=xshape).astype(xdtype)
    w = r.integers(wi.min, int(wi.max) + 1, size=(units, xshape[-1])).astype(wdtype)
    zw = i32(r.integers(-20, 20, size=units)) if per_channel else i32(3)
    zx = i32(7)
    if where == "zero":
        zx, zw = i32(0), np.zeros_like(zw)
    params = {"zx": zx, "zw": zw, "sx": f32(0.5), "sw": f32([0.1] * units)}
    if where == "runtime":
        check({"x": x, "w": w, **params}, dense(out_dtype))
    else:
        check({"x": x}, dense(out_dtype), {"w": w, **params})


def test_dense_int32_accumulator_wraps() -> None:
    x = np.full((1, 4096), 65535, np.uint16)
    w = np.full((1, 4096), 255, np.uint8)
    for out in ("int32", "int64"):
        check({"x": x}, dense(out), {"w": w, "zx": i32(0), "zw": i32(0), "sx": f32(1.0),
                                     "sw": f32(1.0)})


# ================================================================== conv2d



def layout_shape(layout: str, **dims: int) -> tuple[int, ...]:
    return tuple(dims[a] for a in layout)


def conv_attrs(dl: str, kl: str, extra: dict) -> str:
    out = [f'data_layout="{dl}"', f'kernel_layout="{kl}"']
    for k, v in extra.items():
        out.append(f"{k}={list(v)}" if isinstance(v, tuple) else
                   f'{k}="{v}"' if isinstance(v, str) else f"{k}={v}")
    return ", ".join(out)


def conv_operands(dl: str, kl: str, N: int, C: int, H: int, W: int, O: int, KH: int, KW: int,
                  groups: int, dtype: str, per_channel: bool, seed: int = 2):
    r = np.random.default_rng(seed)
    lo, hi = (-100, 100) if dtype == "int16" else (int(np.iinfo(dtype).min),
                                                  int(np.iinfo(dtype).max))
    x = r.integers(lo, hi + 1, size=layout_shape(dl, N=N, C=C, H=H, W=W)).astype(dtype)
    w = r.integers(lo, hi + 1, size=layout_shape(kl, O=O, I=C // groups, H=KH, W=KW)
                   ).astype(dtype)
    params = {"zx": i32(r.integers(-10, 10)),
              "zw": i32(r.integers(-10, 10, size=O)) if per_channel else i32(4),
              "sx": f32(0.5),
              "sw": f32(r.uniform(0.01, 1.0, size=O)) if per_channel else f32(0.25)}
    return x, w, params


@pytest.mark.parametrize("dl, kl, N, C, H, W, O, KH, KW, extra", qnn_cases.CONV_CASES)
@pytest.mark.parametrize("dtype, per_channel", [("int8", False), ("uint8", True),
                                                ("int16", True)])
def test_conv2d(dl: str, kl: str, N: int, C: int, H: int, W: int, O: int, KH: int, KW: int,
                extra: dict, dtype: str, per_channel: bool) -> None:
    x, w, params = conv_operands(dl, kl, N, C, H, W, O, KH, KW, extra.get("groups", 1), dtype,
                                 per_channel)
    body = f"qnn.conv2d(%x, %w, %zx, %zw, %sx, %sw, {conv_attrs(dl, kl, extra)})"
    check({"x": x}, body, {"w": w, **params})


@pytest.mark.parametrize("case", [0, 2, 3])
@pytest.mark.parametrize("where", ["runtime", "zero"])
def test_conv2d_zero_point_variants(case: int, where: str) -> None:
    dl, kl, N, C, H, W, O, KH, KW, extra = qnn_cases.CONV_CASES[case]
    x, w, params = conv_operands(dl, kl, N, C, H, W, O, KH, KW, extra.get("groups", 1), "int8",
                                 True)
    body = f"qnn.conv2d(%x, %w, %zx, %zw, %sx, %sw, {conv_attrs(dl, kl, extra)})"
    if where == "zero":
        params = {**params, "zx": i32(0), "zw": np.zeros_like(params["zw"])}
        check({"x": x}, body, {"w": w, **params})
    else:
        check({"x": x, "w": w, **params}, body)


@pytest.mark.parametrize("out_dtype", ["int16", "int64"])
def test_conv2d_out_dtype(out_dtype: str) -> None:
    x = np.full((1, 1, 3, 3), 127, np.int8)
    w = np.full((1, 1, 3, 3), 127, np.int8)
    x[0, 0, 1, 1] = -128
    body = f'qnn.conv2d(%x, %w, %zx, %zw, %sx, %sw, padding=[1], out_dtype="{out_dtype}")'
    check({"x": x}, body, {"w": w, "zx": i32(-128), "zw": i32(-128), "sx": f32(1.0),
                           "sw": f32(1.0)})


def test_conv2d_invalid_kernel_scale_is_a_lowering_error() -> None:
    x, w, params = conv_operands("NCHW", "OIHW", 1, 1, 3, 3, 2, 1, 1, 1, "int8", True)
    params["sw"] = f32([0.5, -1.0])
    with pytest.raises(LoweringError, match="kernel_scale must be positive"):
        lower({"x": x}, "qnn.conv2d(%x, %w, %zx, %zw, %sx, %sw)", {"w": w, **params})


# ============================================================ fused chains

def test_conv2d_bias_requantize_clip_is_one_kernel() -> None:
    """The TFLite int8 convolution: NHWC data, HWIO weights with symmetric
    per-channel scales, an int32 bias, per-channel requantize (TFLITE
    rounding) and the fused ReLU6 clip."""
    x, w, params = conv_operands("NHWC", "HWIO", 1, 3, 5, 6, 4, 3, 3, 1, "int8", True, seed=5)
    params["zw"] = i32([0, 0, 0, 0])
    consts = {"w": w, **params, "bias": i32([100, -2000, 0, 37]),
              "rs": params["sw"] * np.float32(0.5), "ro": f32(0.0235)}
    body = ('%0 = qnn.conv2d(%x, %w, %zx, %zw, %sx, %sw, padding=[1], data_layout="NHWC", '
            'kernel_layout="HWIO");\n'
            '  %1 = add(%0, %bias);\n'
            '  %2 = qnn.requantize(%1, %rs, 0, %ro, -3, axis=3, rounding="TFLITE", '
            'out_dtype="int8");\n'
            '  clip(%2, a_min=-3f, a_max=80f)')
    group = check({"x": x}, body, consts)
    assert group.anchor == "qnn.conv2d"
    assert group.ops == ("qnn.conv2d", "add", "qnn.requantize", "clip")


def test_conv2d_bias_add_requantize_nchw() -> None:
    x, w, params = conv_operands("NCHW", "OIHW", 1, 2, 5, 5, 3, 3, 3, 1, "uint8", False, seed=7)
    consts = {"w": w, **params, "bias": i32([5, -700, 1234])}
    body = ('%0 = qnn.conv2d(%x, %w, %zx, %zw, %sx, %sw, strides=[2, 2], padding=[1]);\n'
            '  %1 = nn.bias_add(%0, %bias);\n'
            '  qnn.requantize(%1, 0.125f, 0, 0.6f, 128, out_dtype="uint8")')
    group = check({"x": x}, body, consts)
    assert group.anchor == "qnn.conv2d"


def test_dense_bias_requantize_dequantize() -> None:
    r = np.random.default_rng(3)
    x = r.integers(-128, 128, size=(2, 10)).astype(np.int8)
    consts = {"w": r.integers(-128, 128, size=(6, 10)).astype(np.int8), "zx": i32(-4),
              "zw": i32(0), "sx": f32(0.05), "sw": f32(r.uniform(0.001, 0.01, 6)),
              "bias": i32(r.integers(-500, 500, 6))}
    body = ('%0 = qnn.dense(%x, %w, %zx, %zw, %sx, %sw, units=6);\n'
            '  %1 = nn.bias_add(%0, %bias, axis=1);\n'
            '  %2 = qnn.requantize(%1, 0.0004f, 0, 0.03f, 5, rounding="UPWARD");\n'
            '  qnn.dequantize(%2, 0.03f, 5)')
    group = check({"x": x}, body, consts)
    assert group.anchor == "qnn.dense"


def test_quantize_after_float_ops_and_dequantize_before() -> None:
    x = np.array([[-3, 100, 127], [0, -128, 5]], np.int8)
    body = ('%0 = qnn.dequantize(%x, 0.1f, -3);\n'
            '  %1 = nn.relu(%0);\n'
            '  qnn.quantize(multiply(%1, 2f), 0.07f, 10, out_dtype="uint8")')
    check({"x": x}, body)


# ================================================= per-channel tables hook

def test_per_channel_multipliers_use_constant_tables(monkeypatch: pytest.MonkeyPatch) -> None:
    """With ``LowerContext.constant_table`` the per-channel multiplier and
    shift are table loads, and no float arithmetic remains."""
    tables: list[tuple[K.Buffer, np.ndarray]] = []

    def constant_table(self: LowerContext, data: np.ndarray, dtype: DType) -> TensorValue:
        buf = K.Buffer(self.fresh("tab"), dtype, data.shape, K.BufferScope.CONST)
        tables.append((buf, data))
        return from_buffer(buf)
    monkeypatch.setattr(LowerContext, "constant_table", constant_table, raising=False)
    x = np.random.default_rng(0).integers(-2000, 2000, size=(2, 4, 3)).astype(np.int32)
    for rounding in qnn_cases.ROUNDINGS:
        tables.clear()
        mod, group = lower({"x": x}, requantize(rounding, "int8", axis=1), PER_CHANNEL)
        assert len(tables) == 2
        assert not any(d.is_float for d in kernel_dtypes(group))
        extra = LoweredGroup(group.kernel, group.inputs, group.constants + tuple(tables),
                             group.outputs, group.scratch, group.inplace_inputs, group.ops,
                             group.anchor, group.source)
        (got,) = run_lowered(extra, [x])
        np.testing.assert_array_equal(got, aot.interpret(mod, x))


# ======================================================== the printed C

def _c_cases() -> list[tuple[dict, str, dict]]:
    x8 = np.array([[-128, -7, 0, 5, 127, 33]], np.int8)
    xi = i32([[5, -5, 2 ** 31 - 1, -(2 ** 31), 1000, -77]])
    conv_x, conv_w, conv_p = conv_operands("NHWC", "HWIO", 1, 3, 5, 6, 4, 3, 3, 1, "int8", True,
                                           seed=5)
    dense_x = np.random.default_rng(3).integers(-128, 128, size=(2, 10)).astype(np.int8)
    dense_w = np.random.default_rng(4).integers(-128, 128, size=(6, 10)).astype(np.int8)
    rq = {"si": f32(0.3), "zi": i32(3), "so": f32(0.07), "zo": i32(-5)}
    rq_pc = {"si": f32([0.3, 0.07, 1.9, 0.5, 2.0, 0.01]), "zi": i32(3), "so": f32(0.4),
             "zo": i32(-5)}
    return [
        ({"x": f32([[0.4, -7.5, 1e10, np.nan, -0.5, 2.5]])}, "qnn.quantize(%x, 0.5f, 3)", {}),
        ({"x": f32([[0.4, -7.5, 1e10, np.nan, -0.5, 2.5]]), "s": f32(0.3), "z": i32(-2)},
         'qnn.quantize(%x, %s, %z, out_dtype="int32")', {}),
        ({"x": x8}, 'qnn.dequantize(%x, 0.1f, -3, out_dtype="float16")', {}),
        *[({"x": xi}, requantize(r, "int8"), rq) for r in qnn_cases.ROUNDINGS],
        *[({"x": xi, **rq_pc}, requantize(r, "int16", axis=1), {}) for r in qnn_cases.ROUNDINGS[:3]],
        ({"x": xi}, requantize("TFLITE", "uint8", axis=1), rq_pc),
        ({"x": xi}, requantize("UPWARD", "int8", axis=1, compute="float32"), rq_pc),
        ({"x": xi}, requantize("TONEAREST", "int32", compute="float64"), rq),
        ({"a": x8, "b": x8[:, ::-1].copy()}, binary("add"),
         binary_consts(0.013, 3, 0.029, -1, 0.05, 2)),
        ({"a": x8, "b": x8[:, ::-1].copy(), **binary_consts(0.02, 3, 0.07, -1, 0.05, 2)},
         binary("subtract"), {}),
        ({"a": x8, "b": x8[:, ::-1].copy(), **binary_consts(0.5, 3, 0.25, -1, 0.0625, 2)},
         binary("mul"), {}),
        ({"x": xi}, "fixed_point_multiply(%x, multiplier=2080045879, shift=-4)", {}),
        ({"x": xi}, "fixed_point_multiply(%x, multiplier=-1073741824, shift=3)", {}),
        ({"a": x8, "b": x8}, "qnn.concatenate((%a, %b), (0.5f, 0.3f), (0, 4), 0.5f, 0)", {}),
        ({"x": conv_x}, '%0 = qnn.conv2d(%x, %w, %zx, %zw, %sx, %sw, padding=[1], '
         'data_layout="NHWC", kernel_layout="HWIO");\n'
         '  qnn.requantize(%0, %rs, 0, 0.0235f, -3, axis=3, rounding="TFLITE")',
         {"w": conv_w, **conv_p, "rs": conv_p["sw"] * np.float32(0.5)}),
        ({"x": dense_x}, dense(), {"w": dense_w, "zx": i32(-4), "zw": i32(1), "sx": f32(0.05),
                                   "sw": f32(0.1)}),
        ({"x": conv_x}, 'qnn.avg_pool2d(%x, 0.5f, -3, 0.5f, -3, pool_size=[3, 3], '
         'padding=[1, 1], layout="NHWC")', {}),
        ({"x": conv_x, "zo": i32(7)}, 'qnn.avg_pool2d(%x, 0.5f, -3, 0.4f, %zo, pool_size=[2, 3], '
         'strides=[2, 1], padding=[1, 1], count_include_pad=True, layout="NHWC")', {}),
    ]


@pytest.mark.parametrize("compiler", compilers())
def test_printed_c_matches_the_interpreter(tmp_path, compiler: str) -> None:
    """Every kernel of the table in one -Werror build, run through ctypes
    and compared with the interpreter bit for bit."""
    cases = []
    for n, (params, body, consts) in enumerate(_c_cases()):
        mod, group = lower(params, body, consts, f"k{n}")
        cases.append((body, mod, group, simplify_kernel(group.kernel),
                      [np.asarray(a) for a in params.values()]))
    lib = build([k for _, _, _, k, _ in cases], tmp_path, "qnn", compiler)
    for body, mod, group, kernel, args in cases:
        arrays = {b.name: np.ascontiguousarray(a, b.dtype.np).reshape(-1).copy()
                  for b, a in zip(group.inputs, args)}
        for b, data in group.constants:
            arrays[b.name] = np.asarray(data, b.dtype.np).reshape(-1).copy()
        for b in (*group.outputs, *group.scratch):
            arrays[b.name] = np.zeros(b.size, b.dtype.np)
        call(lib, kernel, arrays)
        want = np.asarray(aot.interpret(mod, *args))
        (out,) = group.outputs
        assert_close(arrays[out.name].reshape(want.shape), want, 0.0, 0.0, body)
