"""FakeQuantizationToInteger: TVM's cases (tests/python/relay/
test_pass_fake_quantization_to_integer.py) that apply, before/expected IR
where the result is predictable, and the rule checked with the
interpreter on random inputs:

* the rewritten program's output is within one step of the final
  quantize (one integer unit) of the float QDQ program's output;
* exactly equal where every operator of the region is exact on integers
  (layout operators, max pooling, relu/clip, maximum/minimum, pad,
  concatenate of one set of parameters, dequantize -> quantize with the
  same parameters).

A QDQ ONNX model built with onnx.helper is at the end of the file (the
C compilation of it in tests/e2e would be slow here: one model, two
artifacts).
"""

from __future__ import annotations

from typing import Callable

import numpy as np
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

import aot
from aot import builder as B
from aot.ir.expr import Call, Constant, Expr, Op
from aot.ir.module import IRModule
from aot.ir.structural import assert_structural_equal, structural_equal
from aot.ir.types import TensorType
from aot.ir.visitor import post_order
from aot.passes.fake_quantization_to_integer import BUDGET, rewrite_plans
from aot.passes.manager import PassContext, Sequential, get_pass, run_pass

PASS = "FakeQuantizationToInteger"


# ------------------------------------------------------------------ helpers

def f32(v) -> Constant:
    return B.const(np.asarray(v, np.float32))


def i32(v) -> Constant:
    return B.const(np.asarray(v, np.int32))


def dq(x: Expr, scale, zp, axis: int = -1) -> Call:
    return B.call("qnn.dequantize", x, f32(scale), i32(zp), axis=axis)


def q(x: Expr, scale, zp, dtype: str = "int8", axis: int = -1) -> Call:
    return B.call("qnn.quantize", x, f32(scale), i32(zp), out_dtype=dtype, axis=axis)


def module(params: list, body: Expr) -> IRModule:
    return aot.infer_types(B.module(main=B.function(params, body)))


def typed(text: str) -> IRModule:
    return aot.infer_types(aot.parse(text, source_name="fq2i.relay"))


def ops(mod: IRModule) -> list[str]:
    return [n.op.name for n in post_order(mod["main"])
            if isinstance(n, Call) and isinstance(n.op, Op)]


def random_args(mod: IRModule, seed: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    out = []
    for p in mod["main"].params:
        t = p.checked_type
        assert isinstance(t, TensorType)
        if t.dtype.is_float:
            out.append(rng.uniform(-4, 4, t.shape).astype(t.dtype.np))
        else:
            info = np.iinfo(t.dtype.np)
            lo, hi = max(info.min, -(1 << 15)), min(info.max, 1 << 15)
            out.append(rng.integers(lo, hi, t.shape, endpoint=True).astype(t.dtype.np))
    return out


def max_difference(before: IRModule, after: IRModule, seeds=range(3)) -> int:
    """The largest integer difference of the outputs over random inputs."""
    worst = 0
    for seed in seeds:
        args = random_args(before, seed)
        want, got = aot.interpret(before, *args), aot.interpret(after, *args)
        assert want.dtype == got.dtype and want.shape == got.shape
        diff = np.abs(want.astype(np.int64) - got.astype(np.int64))
        worst = max(worst, int(diff.max()) if diff.size else 0)
    return worst


def rewrite(mod: IRModule) -> IRModule:
    return run_pass(PASS, mod)


def var(name: str, shape, dtype: str = "int8"):
    return B.var(name, B.tensor(shape, dtype))


# ------------------------------------------------------------------ TVM's cases

Case = Callable[[], tuple[IRModule, bool]]   # the module, and whether it is exact


def conv(out_dtype: str) -> tuple[IRModule, bool]:
    x, w = var("x", (1, 3, 12, 12)), var("w", (4, 3, 5, 5))
    y = B.call("nn.conv2d", dq(x, 2.0, 0), dq(w, 0.5, 0), kernel_size=[5, 5])
    return module([x, w], q(y, 1.0, 0, out_dtype)), False


def conv_per_channel(out_dtype: str) -> tuple[IRModule, bool]:
    x, w = var("x", (1, 3, 12, 12)), var("w", (4, 3, 5, 5))
    ws = np.random.default_rng(1).random(4).astype(np.float32)
    y = B.call("nn.conv2d", dq(x, 2.0, 0), dq(w, ws, np.zeros(4), axis=0),
               kernel_size=[5, 5], channels=4)
    return module([x, w], q(y, 1.0, 0, out_dtype)), False


def dense(out_dtype: str) -> tuple[IRModule, bool]:
    x, w = var("x", (16, 8)), var("w", (12, 8))
    y = B.call("nn.dense", dq(x, 2.0, 0), dq(w, 0.5, 0))
    return module([x, w], q(y, 1.0, 0, out_dtype)), False


def transpose_conv() -> tuple[IRModule, bool]:
    x, w = var("x", (1, 12, 12, 3)), var("w", (4, 3, 5, 5))
    t = B.call("transpose", dq(x, 2.0, 0), axes=[0, 3, 1, 2])
    y = B.call("nn.conv2d", t, dq(w, 0.5, 0), kernel_size=[5, 5])
    return module([x, w], q(y, 1.0, 0)), False


def transpose_conv_bias_add(bias_scale: float) -> tuple[IRModule, bool]:
    """TVM's bias is a parameter; ours is a constant (as every exporter
    makes it): a parameter bias is left in float (test below)."""
    x, w = var("x", (1, 12, 12, 3)), var("w", (4, 3, 5, 5))
    bias = B.const(np.random.default_rng(2).integers(-300, 300, 4).astype(np.int32))
    t = B.call("transpose", dq(x, 2.0, 0), axes=[0, 3, 1, 2])
    y = B.call("nn.conv2d", t, dq(w, 0.5, 0), kernel_size=[5, 5])
    y = B.call("nn.bias_add", y, dq(bias, bias_scale, 0))
    return module([x, w], q(y, 1.0, 0)), False


def unary(name: str, exact: bool = True, **attrs) -> Case:
    def build() -> tuple[IRModule, bool]:
        x = var("x", (1, 3, 12, 12))
        y = B.call(name, dq(x, 2.0, 0), **attrs)
        return module([x], q(y, 2.0, 0)), exact
    return build


def transpose_reshape() -> tuple[IRModule, bool]:
    x = var("x", (1, 3, 12, 12))
    t = B.call("transpose", dq(x, 2.0, 0), axes=[1, 0, 2, 3])
    y = B.call("reshape", t, newshape=[3, -1])
    return module([x], q(y, 2.0, 0)), True


def concat(same: bool) -> tuple[IRModule, bool]:
    xs = [var(f"x{i}", (1, 4)) for i in range(4)]
    parts = [dq(x, 3.5 if same else i + 0.5, 0) for i, x in enumerate(xs)]
    y = B.call("concatenate", B.tuple_(*parts), axis=1)
    return module(xs, q(y, 3.5, 0)), same


def clip() -> tuple[IRModule, bool]:
    x = var("x", (1, 3, 12, 12), "uint8")
    y = B.call("clip", dq(x, 2.0, 114), a_min=0.0, a_max=6.0)
    return module([x], q(y, 2.0, 114, "uint8")), True


def clip_per_channel() -> tuple[IRModule, bool]:
    x = var("x", (1, 3, 12, 12), "uint8")
    s, z = [1.0, 2.0, 3.0], [96, 114, 128]
    y = B.call("clip", dq(x, s, z, axis=1), a_min=0.0, a_max=6.0)
    return module([x], q(y, s, z, "uint8", axis=1)), True


def binary(name: str) -> tuple[IRModule, bool]:
    x, y = var("x", (1, 3, 12, 12)), var("y", (1, 3, 12, 12))
    out = B.call(name, dq(x, 0.1, 0), dq(y, 0.2, 0))
    out_scale = 20.0 if name == "multiply" else 0.1
    return module([x, y], q(out, out_scale, 0)), False


def binary_const(name: str) -> tuple[IRModule, bool]:
    x = var("x", (1, 3, 12, 12))
    out = B.call(name, dq(x, 0.1, 10), f32(1.0))
    return module([x], q(out, 0.1, 10)), name in ("maximum", "minimum")


def pad() -> tuple[IRModule, bool]:
    x = var("x", (1, 38, 12))
    y = B.call("nn.pad", dq(x, 1.0, 10), f32(0.0), pad_width=[[0, 0], [0, 1], [0, 0]])
    return module([x], q(y, 1.0, 10)), True


CASES: dict[str, Case] = {
    "conv_int8": lambda: conv("int8"),
    "conv_uint8": lambda: conv("uint8"),
    "conv_per_channel_int8": lambda: conv_per_channel("int8"),
    "conv_per_channel_uint8": lambda: conv_per_channel("uint8"),
    "dense_int8": lambda: dense("int8"),
    "dense_uint8": lambda: dense("uint8"),
    "transpose_conv": transpose_conv,
    "transpose_conv_bias_add": lambda: transpose_conv_bias_add(1.0),
    "transpose_conv_bias_add_mismatch": lambda: transpose_conv_bias_add(2.0),
    "maxpool": unary("nn.max_pool2d", pool_size=[3, 3]),
    "avgpool": unary("nn.avg_pool2d", exact=False, pool_size=[3, 3]),
    "global_avgpool": unary("nn.global_avg_pool2d", exact=False),
    "mean": unary("mean", exact=False, axis=[2, 3], keepdims=True),
    "reshape": unary("reshape", newshape=[1, 3, -1]),
    "expand_dims": unary("expand_dims", axis=1),
    "squeeze": unary("squeeze", axis=[0]),
    "strided_slice": unary("strided_slice", begin=[0, 0, 0, 0], end=[1, 1, 6, 6]),
    "batch_flatten": unary("nn.batch_flatten"),
    "reverse": unary("reverse", axis=2),
    "tile": unary("tile", reps=[1, 2, 1, 1]),
    "max_reduce": unary("max", axis=[2, 3]),
    "min_reduce": unary("min", axis=[1], keepdims=True),
    "relu": unary("nn.relu"),
    "transpose_reshape": transpose_reshape,
    "concat": lambda: concat(False),
    "concat_same_params": lambda: concat(True),
    "clip": clip,
    "clip_per_channel": clip_per_channel,
    "add": lambda: binary("add"),
    "subtract": lambda: binary("subtract"),
    "multiply": lambda: binary("multiply"),
    "minimum": lambda: binary("minimum"),
    "maximum": lambda: binary("maximum"),
    **{f"{name}_const": (lambda n: lambda: binary_const(n))(name)
       for name in ("add", "multiply", "subtract", "minimum", "maximum")},
    "pad": pad,
}

def float_calls(mod: IRModule) -> list[str]:
    """Operators computing a float tensor (or quantizing one)."""
    out = []
    for n in post_order(mod["main"]):
        if isinstance(n, Call) and isinstance(n.op, Op):
            t = n.checked_type
            if n.op.name == "qnn.quantize" or (isinstance(t, TensorType) and t.dtype.is_float):
                out.append(n.op.name)
    return out


@pytest.mark.parametrize("name", sorted(CASES))
def test_tvm_case_within_the_rule(name):
    before, exact = CASES[name]()
    after = rewrite(before)
    assert not structural_equal(before["main"], after["main"]), "nothing was rewritten"
    assert not float_calls(after), f"float operators left:\n{after}"
    worst = max_difference(before, after)
    if exact:
        assert worst == 0
    else:
        assert worst <= 1


def test_parameter_bias_stays_float():
    """A bias that is not a constant cannot be bounded or rounded to the
    accumulator's scale at compile time (TVM's test has one)."""
    x, w, b = var("x", (1, 3, 8, 8)), var("w", (4, 3, 3, 3)), var("b", (4,), "int32")
    y = B.call("nn.conv2d", dq(x, 2.0, 0), dq(w, 0.5, 0), kernel_size=[3, 3])
    y = B.call("nn.bias_add", y, dq(b, 1.0, 0))
    before = module([x, w, b], q(y, 1.0, 0))
    assert structural_equal(rewrite(before)["main"], before["main"])


# ------------------------------------------------------------------ before / expected

STRUCTURAL = [
    # a quantize of a dequantize with the same parameters: the integers themselves
    ("identity",
     """def @main(%x: Tensor[(2, 3), int8]) {
          %0 = qnn.dequantize(%x, 0.5f, 3);
          qnn.quantize(%0, 0.5f, 3, out_dtype="int8")
        }""",
     """def @main(%x: Tensor[(2, 3), int8]) { %x }"""),
    ("requantize",
     """def @main(%x: Tensor[(2, 3), int8]) {
          %0 = qnn.dequantize(%x, 0.5f, 3);
          qnn.quantize(%0, 0.25f, -1, out_dtype="uint8")
        }""",
     """def @main(%x: Tensor[(2, 3), int8]) {
          qnn.requantize(%x, 0.5f, 3, 0.25f, -1, rounding="TONEAREST", out_dtype="uint8")
        }"""),
    ("max_pool",
     """def @main(%x: Tensor[(1, 3, 8, 8), int8]) {
          %0 = qnn.dequantize(%x, 2f, 0);
          %1 = nn.max_pool2d(%0, pool_size=[3, 3]);
          qnn.quantize(%1, 2f, 0, out_dtype="int8")
        }""",
     """def @main(%x: Tensor[(1, 3, 8, 8), int8]) { nn.max_pool2d(%x, pool_size=[3, 3]) }"""),
    ("reshape_transpose",
     """def @main(%x: Tensor[(1, 3, 4, 4), int8]) {
          %0 = qnn.dequantize(%x, 2f, 0);
          %1 = transpose(%0, axes=[1, 0, 2, 3]);
          %2 = reshape(%1, newshape=[3, -1]);
          qnn.quantize(%2, 2f, 0, out_dtype="int8")
        }""",
     """def @main(%x: Tensor[(1, 3, 4, 4), int8]) {
          %0 = transpose(%x, axes=[1, 0, 2, 3]);
          reshape(%0, newshape=[3, -1])
        }"""),
    # relu before the quantize: max with Q(0) = the zero point
    ("relu_tail",
     """def @main(%x: Tensor[(4, 4), int8]) {
          %0 = qnn.dequantize(%x, 0.5f, -3);
          %1 = nn.relu(%0);
          qnn.quantize(%1, 0.5f, -3, out_dtype="int8")
        }""",
     """def @main(%x: Tensor[(4, 4), int8]) { maximum(%x, -3i8) }"""),
    # relu6 before the quantize: clip at Q(0) and Q(6)
    ("relu6_tail",
     """def @main(%x: Tensor[(4, 4), uint8]) {
          %0 = qnn.dequantize(%x, 0.5f, 10);
          %1 = clip(%0, a_min=0f, a_max=6f);
          qnn.quantize(%1, 0.1f, 7, out_dtype="uint8")
        }""",
     """def @main(%x: Tensor[(4, 4), uint8]) {
          %0 = qnn.requantize(%x, 0.5f, 10, 0.1f, 7, rounding="TONEAREST", out_dtype="uint8");
          clip(%0, a_min=7f, a_max=67f)
        }"""),
    ("conv",
     """def @main(%x: Tensor[(1, 3, 8, 8), int8], %w: Tensor[(4, 3, 3, 3), int8]) {
          %0 = qnn.dequantize(%x, 2f, 0);
          %1 = qnn.dequantize(%w, 0.5f, 0);
          %2 = nn.conv2d(%0, %1, kernel_size=[3, 3]);
          qnn.quantize(%2, 4f, 1, out_dtype="int8")
        }""",
     """def @main(%x: Tensor[(1, 3, 8, 8), int8], %w: Tensor[(4, 3, 3, 3), int8]) {
          %0 = qnn.conv2d(%x, %w, 0, 0, 2f, 0.5f, kernel_size=[3, 3], out_dtype="int32");
          qnn.requantize(%0, 1f, 0, 4f, 1, rounding="TONEAREST", out_dtype="int8")
        }"""),
    ("add",
     """def @main(%x: Tensor[(2, 3), int8], %y: Tensor[(2, 3), int8]) {
          %0 = qnn.dequantize(%x, 0.1f, 0);
          %1 = qnn.dequantize(%y, 0.2f, 1);
          %2 = add(%0, %1);
          qnn.quantize(%2, 0.3f, -2, out_dtype="int8")
        }""",
     """def @main(%x: Tensor[(2, 3), int8], %y: Tensor[(2, 3), int8]) {
          qnn.add(%x, %y, 0.1f, 0, 0.2f, 1, 0.3f, -2)
        }"""),
    ("subtract",
     """def @main(%x: Tensor[(2, 3), int8], %y: Tensor[(2, 3), int8]) {
          %0 = qnn.dequantize(%x, 0.1f, 0);
          %1 = qnn.dequantize(%y, 0.2f, 1);
          %2 = subtract(%0, %1);
          qnn.quantize(%2, 0.3f, -2, out_dtype="int8")
        }""",
     """def @main(%x: Tensor[(2, 3), int8], %y: Tensor[(2, 3), int8]) {
          qnn.subtract(%x, %y, 0.1f, 0, 0.2f, 1, 0.3f, -2)
        }"""),
    ("avg_pool2d",
     """def @main(%x: Tensor[(1, 6, 6, 2), int8]) {
          %0 = qnn.dequantize(%x, 0.1f, 3);
          %1 = nn.avg_pool2d(%0, pool_size=[3, 3], padding=[1, 1], layout="NHWC");
          qnn.quantize(%1, 0.1f, 3, out_dtype="int8")
        }""",
     """def @main(%x: Tensor[(1, 6, 6, 2), int8]) {
          qnn.avg_pool2d(%x, 0.1f, 3, 0.1f, 3, pool_size=[3, 3], padding=[1, 1],
                         layout="NHWC")
        }"""),
    ("concatenate_same_parameters",
     """def @main(%x: Tensor[(2, 3), int8], %y: Tensor[(2, 3), int8]) {
          %0 = qnn.dequantize(%x, 0.1f, 0);
          %1 = qnn.dequantize(%y, 0.1f, 0);
          %2 = concatenate((%0, %1), axis=1);
          qnn.quantize(%2, 0.1f, 0, out_dtype="int8")
        }""",
     """def @main(%x: Tensor[(2, 3), int8], %y: Tensor[(2, 3), int8]) {
          concatenate((%x, %y), axis=1)
        }"""),
    ("concatenate",
     """def @main(%x: Tensor[(2, 3), int8], %y: Tensor[(2, 3), int8]) {
          %0 = qnn.dequantize(%x, 0.1f, 0);
          %1 = qnn.dequantize(%y, 0.2f, 0);
          %2 = concatenate((%0, %1), axis=1);
          qnn.quantize(%2, 0.2f, 0, out_dtype="int8")
        }""",
     """def @main(%x: Tensor[(2, 3), int8], %y: Tensor[(2, 3), int8]) {
          qnn.concatenate((%x, %y), (0.1f, 0.2f), (0, 0), 0.2f, 0, axis=1)
        }"""),
]

@pytest.mark.parametrize("name,before,expected", STRUCTURAL, ids=[c[0] for c in STRUCTURAL])
def test_before_expected(name, before, expected):
    mod = typed(before)
    after = rewrite(mod)
    assert_structural_equal(after["main"], typed(expected)["main"])
    exact = name not in ("requantize", "relu6_tail", "conv", "add", "subtract", "concatenate",
                         "avg_pool2d")
    assert max_difference(mod, after) <= (0 if exact else 1)


def test_conv_bias_relu_expected():
    """A float bias goes into the int32 accumulator at its scale (2 * 0.5);
    the relu becomes a max with the output zero point after requantize."""
    x, w = var("x", (1, 1, 4, 4)), var("w", (2, 1, 1, 1))
    y = B.call("nn.conv2d", dq(x, 2.0, 0), dq(w, 0.5, 0), kernel_size=[1, 1])
    y = B.call("nn.relu", B.call("nn.bias_add", y, f32([1.0, -2.5])))
    before = module([x, w], q(y, 4.0, 1))
    after = rewrite(before)
    x2, w2 = var("x", (1, 1, 4, 4)), var("w", (2, 1, 1, 1))
    acc = B.call("qnn.conv2d", x2, w2, i32(0), i32(0), f32(2.0), f32(0.5), kernel_size=[1, 1],
                 out_dtype="int32")
    acc = B.call("add", acc, B.const(np.array([1, -2], np.int32).reshape(1, 2, 1, 1)))
    out = B.call("qnn.requantize", acc, f32(1.0), i32(0), f32(4.0), i32(1),
                 rounding="TONEAREST", out_dtype="int8")
    expected = module([x2, w2], B.call("maximum", out, B.const(np.int8(1))))
    assert_structural_equal(after["main"], expected["main"])
    # -2.5 rounds to -2 at scale 1: an error of 0.5 / 4 = 1/8 of a step
    (plan,) = rewrite_plans(before["main"], before)
    assert plan.err == pytest.approx(0.125, abs=0.02)
    assert max_difference(before, after) <= 1


# ------------------------------------------------------------------ affine float operators

def batch_norm_after_dense(gamma_dequantized: bool) -> IRModule:
    """dense -> quantize -> dequantize -> batch_norm -> relu -> quantize, as
    onnxruntime's QDQ quantizer leaves a BatchNormalization after a Gemm
    (with SimplifyInference run first, as in the pipeline); gamma has
    negative entries, and may itself be a dequantized int8 weight."""
    x = var("x", (2, 6))
    gamma = np.array([1.5, -0.5, 2.0, 0.25], np.float32)
    if gamma_dequantized:
        g: Expr = dq(B.const(np.array([12, -4, 16, 2], np.int8)), 0.125, 0)
    else:
        g = B.const(gamma)
    h = q(B.call("nn.dense", dq(x, 0.05, 3), dq(B.const(
        np.random.default_rng(3).integers(-127, 128, (4, 6)).astype(np.int8)), 0.02, 0)),
        0.1, -5)
    y = B.call("nn.batch_norm", dq(h, 0.1, -5), g, f32([0.1, 0.2, -0.3, 0.0]),
               f32([0.5, -1.0, 0.0, 2.0]), f32([1.0, 4.0, 0.25, 2.0]))
    body = q(B.call("nn.relu", B.proj(y, 0)), 0.08, -128)
    return run_pass("SimplifyInference", module([x], body))


@pytest.mark.parametrize("gamma_dequantized", [False, True])
def test_batch_norm_between_dequantize_and_quantize(gamma_dequantized):
    before = batch_norm_after_dense(gamma_dequantized)
    after = rewrite(before)
    assert not float_calls(after), str(after)
    assert max_difference(before, after, seeds=range(4)) <= 1


@pytest.mark.parametrize("name,factor", [
    ("multiply", -0.75), ("divide", 0.3), ("multiply", [0.5, -2.0, 0.0]),
    ("divide", [3.0, -1.0, 7.0])])
def test_scaling_by_a_constant(name, factor):
    x = var("x", (2, 3), "uint8")
    c = np.asarray(factor, np.float32)
    y = B.call(name, dq(x, 0.05, 100), B.const(c))
    before = module([x], q(B.call("subtract", y, f32(0.25)), 0.02, 7, "uint8"))
    after = rewrite(before)
    assert not float_calls(after)
    assert max_difference(before, after) <= 1


def test_constant_divided_by_a_tensor_is_a_lookup_table():
    """``c / x`` is not linear (no accumulator); as an elementwise function
    of one 8-bit input it is a table, division by zero included."""
    x = var("x", (4,))
    before = module([x], q(B.call("divide", f32(1.0), dq(x, 0.05, 0)), 0.1, 0))
    after = rewrite(before)
    assert ops(after) == ["cast", "subtract", "take"]
    assert max_difference(before, after) == 0


def test_add_constant_expected():
    """``x + c``: x widened to 2**k times its scale (k = 24 - 8 bits of
    |q - z| <= 255), c rounded to that scale, one requantize."""
    before = typed("""def @main(%x: Tensor[(3), int8]) {
          %0 = qnn.dequantize(%x, 0.5f, 127);
          qnn.quantize(add(%0, 1.3f), 0.25f, 0, out_dtype="int8")
        }""")
    k = 16
    c_int = round(1.3 * 2 ** k / 0.5)
    expected = typed(f"""def @main(%x: Tensor[(3), int8]) {{
          %0 = cast(%x, dtype="int32");
          %1 = subtract(%0, 127);
          %2 = multiply(%1, {1 << k});
          %3 = add(%2, {c_int});
          qnn.requantize(%3, {0.5 / 2 ** k}f, 0, 0.25f, 0, rounding="TONEAREST", out_dtype="int8")
        }}""")
    after = rewrite(before)
    assert_structural_equal(after["main"], expected["main"])
    assert max_difference(before, after) <= 1


# ------------------------------------------------------------------ lookup tables, split

def hard_swish(a: Expr) -> Expr:
    relu6 = B.call("clip", B.call("add", a, f32(3.0)), a_min=0.0, a_max=6.0)
    return B.call("multiply", a, B.call("divide", relu6, f32(6.0)))


LOOKUP = {
    "sigmoid": (lambda a: B.call("sigmoid", a), 1 / 256, -128),
    "tanh": (lambda a: B.call("tanh", a), 1 / 128, 0),
    "hard_swish": (hard_swish, 0.04, -10),
    "leaky_relu": (lambda a: B.call("nn.leaky_relu", a, alpha=0.1), 0.05, 3),
    "exp_scaled": (lambda a: B.call("multiply", B.call("exp", a), f32(0.5)), 0.1, -128),
}


@pytest.mark.parametrize("name", sorted(LOOKUP))
@pytest.mark.parametrize("dtype", ["int8", "uint8"])
def test_elementwise_region_as_lookup_table(name, dtype):
    """TVM's table lookup (its tanh), for any elementwise region of one
    8-bit input: the table is the float program's own values, so the
    result is exact."""
    fn, scale, zp = LOOKUP[name]
    x = var("x", (3, 16), dtype)
    before = module([x], q(fn(dq(x, 0.05, 3 if dtype == "int8" else 130)), scale,
                           zp + (128 if dtype == "uint8" else 0), dtype))
    after = rewrite(before)
    assert "take" in ops(after) and not float_calls(after)
    assert max_difference(before, after) == 0


def test_lookup_table_expected():
    before = typed("""def @main(%x: Tensor[(4), uint8]) {
          %0 = qnn.dequantize(%x, 0.1f, 128);
          qnn.quantize(sigmoid(%0), 0.00390625f, 0, out_dtype="uint8")
        }""")
    after = rewrite(before)
    codes = (np.arange(256) - 128).astype(np.float32) * np.float32(0.1)
    table = aot.interpret(typed("""def @main(%v: Tensor[(256), float32]) {
          qnn.quantize(sigmoid(%v), 0.00390625f, 0, out_dtype="uint8")
        }"""), codes)
    x = var("x", (4,), "uint8")
    expected = module([x], B.call("take", B.const(table), B.call("cast", x, dtype="int32"),
                                  axis=0))
    assert_structural_equal(after["main"], expected["main"])


@pytest.mark.parametrize("why,build", [
    ("two inputs", lambda a, b: B.call("sigmoid", B.call("add", a, b))),
    ("a constant that is not a scalar",
     lambda a, b: B.call("sigmoid", B.call("add", a, f32(np.linspace(0, 1, 16))))),
    ("not elementwise", lambda a, b: B.call("nn.softmax", a)),
])
def test_no_lookup_table(why, build):
    x, y = var("x", (3, 16)), var("y", (3, 16))
    before = module([x, y], q(build(dq(x, 0.05, 0), dq(y, 0.05, 0)), 0.01, 0))
    assert "take" not in ops(rewrite(before)), why


def test_no_lookup_table_for_16_bits():
    x = var("x", (4,), "int16")
    before = module([x], q(B.call("sigmoid", dq(x, 0.001, 0)), 1 / 256, -128))
    assert structural_equal(rewrite(before)["main"], before["main"])


@pytest.mark.parametrize("sections", [2, [1, 3]])
def test_split(sections):
    """TVM's split cases: an item of a split of an Exact value."""
    x = var("x", (1, 3, 4, 4))
    parts = B.call("split", dq(x, 2.0, 0), indices_or_sections=sections, axis=3)
    before = module([x], q(B.proj(parts, 1), 2.0, 0))
    after = rewrite(before)
    assert not float_calls(after) and "split" in ops(after)
    assert max_difference(before, after) == 0


# ------------------------------------------------------------------ what stays in float

def test_shared_float_node_is_not_computed_twice():
    """The conv result also leaves the function in float: rewriting the
    quantize would compute the conv twice, so the region stays."""
    x, w = var("x", (1, 3, 8, 8)), var("w", (4, 3, 3, 3))
    y = B.call("nn.conv2d", dq(x, 2.0, 0), dq(w, 0.5, 0), kernel_size=[3, 3])
    before = module([x, w], B.tuple_(q(y, 1.0, 0), y))
    assert structural_equal(rewrite(before)["main"], before["main"])


def test_shared_integer_value_is_built_once():
    """Two quantizes of one conv: both rewritten, one qnn.conv2d."""
    x, w = var("x", (1, 3, 8, 8)), var("w", (4, 3, 3, 3))
    y = B.call("nn.conv2d", dq(x, 2.0, 0), dq(w, 0.5, 0), kernel_size=[3, 3])
    before = module([x, w], B.tuple_(q(y, 1.0, 0), q(B.call("nn.relu", y), 3.0, -5)))
    after = rewrite(before)
    assert ops(after).count("qnn.conv2d") == 1
    assert not float_calls(after)
    args = random_args(before, 0)
    for want, got in zip(aot.interpret(before, *args), aot.interpret(after, *args)):
        assert np.abs(want.astype(int) - got.astype(int)).max() <= 1


def test_region_over_the_error_budget_stays_float():
    """A constant factor varying along two axes has no accumulator form;
    as an 8-bit operand of qnn.mul its representation error (up to half
    its scale, times the other operand's largest value) is more than the
    budget against a fine output scale, so the multiply stays in float."""
    x = var("x", (4, 8))
    c = np.linspace(-3.0, 3.0, 32).astype(np.float32).reshape(4, 8) + np.float32(0.013)
    before = module([x], q(B.call("multiply", dq(x, 0.02, 0), B.const(c)), 0.02, 0))
    assert structural_equal(rewrite(before)["main"], before["main"])
    # with a coarse output scale the same error is small enough
    coarse = module([x], q(B.call("multiply", dq(x, 0.02, 0), B.const(c)), 0.5, 0))
    (plan,) = rewrite_plans(coarse["main"], coarse)
    assert plan.err <= BUDGET
    assert "qnn.mul" in ops(rewrite(coarse))
    assert max_difference(coarse, rewrite(coarse)) <= 1


def test_bias_rounding_over_the_budget_stays_float():
    """A float bias rounded to the accumulator's scale 1.0 against an
    output scale of 1.0: up to half a step, more than the budget."""
    x, w = var("x", (1, 1, 4, 4)), var("w", (2, 1, 1, 1))
    y = B.call("nn.conv2d", dq(x, 2.0, 0), dq(w, 0.5, 0), kernel_size=[1, 1])
    y = B.call("nn.bias_add", y, f32([0.5, -0.49]))
    before = module([x, w], q(y, 1.0, 0))
    assert structural_equal(rewrite(before)["main"], before["main"])


@pytest.mark.parametrize("why,text", [
    ("a scale that is not a constant",
     """def @main(%x: Tensor[(4), int8], %s: float32) {
          %0 = qnn.dequantize(%x, %s, 0);
          qnn.quantize(%0, 2f, 0, out_dtype="int8")
        }"""),
    ("an operator without an integer form (and not elementwise)",
     """def @main(%x: Tensor[(4), int8]) {
          %0 = qnn.dequantize(%x, 0.1f, 0);
          qnn.quantize(nn.log_softmax(%0), 0.1f, 0, out_dtype="int8")
        }"""),
    ("a float input that is not dequantized",
     """def @main(%x: Tensor[(4), int8], %y: Tensor[(4), float32]) {
          %0 = qnn.dequantize(%x, 0.1f, 0);
          qnn.quantize(add(%0, %y), 0.1f, 0, out_dtype="int8")
        }"""),
    ("a clip in the middle whose bound is not on the integer grid",
     """def @main(%x: Tensor[(4), int8], %w: Tensor[(4, 4), int8]) {
          %0 = qnn.dequantize(%x, 0.3f, 0);
          %1 = clip(%0, a_min=0f, a_max=1f);
          %2 = nn.dense(%1, qnn.dequantize(%w, 0.5f, 0));
          qnn.quantize(%2, 0.1f, 0, out_dtype="int8")
        }"""),
])
def test_left_in_float(why, text):
    before = typed(text)
    assert structural_equal(rewrite(before)["main"], before["main"]), why


def test_per_channel_quantize_of_an_accumulator_stays_float():
    """qnn.requantize has one output scale: a per-channel quantize after a
    conv has no integer form here."""
    x, w = var("x", (1, 2, 4, 4)), var("w", (2, 2, 1, 1))
    y = B.call("nn.conv2d", dq(x, 2.0, 0), dq(w, 0.5, 0), kernel_size=[1, 1])
    before = module([x, w], q(y, [1.0, 2.0], [0, 0], axis=1))
    assert structural_equal(rewrite(before)["main"], before["main"])


def test_clip_on_the_grid_in_the_middle_is_exact():
    """relu6 with scale 6/255 (TFLite's choice): both bounds are integers
    of the grid, so the clip runs on integers inside the region."""
    x, w = var("x", (3, 4), "uint8"), var("w", (5, 4))
    h = B.call("clip", dq(x, 6.0 / 255, 0), a_min=0.0, a_max=6.0)
    y = B.call("nn.dense", h, dq(w, 0.01, 0))
    before = module([x, w], q(y, 0.05, 3))
    after = rewrite(before)
    assert "clip" in ops(after) and not float_calls(after)
    assert max_difference(before, after) <= 1


def test_let_bound_operands_are_not_followed():
    """A-normal form: operands are variables, so nothing is rewritten."""
    before = typed("""def @main(%x: Tensor[(4), int8]) {
          let %a = qnn.dequantize(%x, 0.5f, 0);
          let %b = nn.relu(%a);
          qnn.quantize(%b, 0.5f, 0, out_dtype="int8")
        }""")
    assert structural_equal(rewrite(before)["main"], before["main"])


# ------------------------------------------------------------------ ONNX's QuantizeLinear

def test_onnx_quantize_composite_per_channel():
    """The importer's QuantizeLinear (divide, round half to even, add the
    zero point, clip, cast) with per-channel parameters: a relu between a
    dequantize and it with the same parameters is an integer maximum."""
    x = var("x", (1, 3, 2, 2), "uint8")
    s = np.array([0.5, 0.25, 0.125], np.float32).reshape(1, 3, 1, 1)
    z = np.array([10, 128, 200], np.float32).reshape(1, 3, 1, 1)
    h = B.call("nn.relu", dq(x, s.reshape(-1), z.reshape(-1).astype(np.int32), axis=1))
    r = B.call("add", B.call("round", B.call("divide", h, B.const(s))), B.const(z))
    before = module([x], B.call("cast", B.call("clip", r, a_min=0.0, a_max=255.0),
                                dtype="uint8"))
    after = rewrite(before)
    assert ops(after) == ["maximum"]
    assert max_difference(before, after) == 0


# ------------------------------------------------------------------ the pass manager

def test_registered_at_level_0():
    """A quantized model computes in integers at every opt level (DESIGN.md,
    key decision 8); float is the user's choice (``quantized="float"``)."""
    assert get_pass(PASS).opt_level == 0


def test_runs_at_every_opt_level():
    before, _ = conv("int8")
    seq = Sequential([PASS])
    for level in range(4):
        with PassContext(opt_level=level):
            assert not structural_equal(seq(before)["main"], before["main"])


def test_in_the_dataflow_pipeline_before_fold_constant():
    """FoldConstant folds dequantize(int8 weight) into float32 constants,
    which would hide the quantized weights from the pass."""
    from aot.passes.pipelines import DATAFLOW
    names = list(DATAFLOW.names)
    assert names.index("SimplifyInference") < names.index(PASS) < names.index("FoldConstant")


def test_disabled_by_name():
    before, _ = conv("int8")
    with PassContext(required=[], disabled=[PASS], opt_level=3):
        after = Sequential([PASS])(before)
    assert structural_equal(after["main"], before["main"])


# ------------------------------------------------------------------ deep inputs

def test_ten_thousand_node_chain():
    """dequantize -> 5,000 x (relu, reshape) -> quantize: 10,000 exact
    operators, rewritten without recursion."""
    x = var("x", (4, 4))
    h: Expr = dq(x, 0.5, -3)
    for i in range(5000):
        h = B.call("reshape", B.call("nn.relu", h), newshape=[4, 4] if i % 2 else [16])
    before = module([x], q(h, 0.5, -3))
    after = rewrite(before)
    assert not float_calls(after)
    args = random_args(before, 0)
    np.testing.assert_array_equal(aot.interpret(after, *args), aot.interpret(before, *args))


def test_ten_thousand_deep_let_chain():
    x = var("x", (4,))
    bindings = []
    prev: Expr = x
    for i in range(10000):
        v = B.var(f"v{i}")
        bindings.append((v, dq(prev, 0.5, 0) if i % 2 == 0 else q(prev, 0.5, 0)))
        prev = v
    before = module([x], B.let_chain(bindings, prev))
    assert structural_equal(rewrite(before)["main"], before["main"])


# ------------------------------------------------------------------ the rule, on random parameters

SETTINGS = settings(max_examples=40, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])

scales = st.floats(1e-3, 4.0).map(lambda v: float(np.float32(v)))
qdtypes = st.sampled_from(["int8", "uint8"])


def zero_point(dtype: str):
    return st.integers(-128, 127) if dtype == "int8" else st.integers(0, 255)


@st.composite
def act_params(draw, dtype: str | None = None):
    dt = dtype or draw(qdtypes)
    return draw(scales), draw(zero_point(dt)), dt


def check_rule(before: IRModule, exact: bool = False) -> bool:
    """The rule on random inputs when the pass rewrote something; returns
    whether it did."""
    after = rewrite(before)
    if structural_equal(after["main"], before["main"]):
        event("left in float")
        return False
    event("rewritten")
    worst = max_difference(before, after, seeds=range(2))
    assert worst <= (0 if exact else 1), f"{worst} steps\n{before}\n{after}"
    return True


@SETTINGS
@given(xp=act_params(), wscale=st.lists(scales, min_size=4, max_size=4),
       per_channel=st.booleans(), bias=st.lists(st.floats(-50, 50), min_size=4, max_size=4),
       tail=st.sampled_from(["none", "relu", "relu6"]), out=act_params(), dense_=st.booleans())
def test_rule_on_conv_and_dense(xp, wscale, per_channel, bias, tail, out, dense_):
    xs, xz, xdt = xp
    ws = np.array(wscale if per_channel else wscale[:1] * 4, np.float32)
    if dense_:
        x, w = var("x", (3, 6), xdt), var("w", (4, 6))
        y = B.call("nn.dense", dq(x, xs, xz), dq(w, ws, np.zeros(4), axis=0))
        y = B.call("add", y, f32(bias))
    else:
        x, w = var("x", (1, 3, 5, 5), xdt), var("w", (4, 3, 3, 3))
        y = B.call("nn.conv2d", dq(x, xs, xz), dq(w, ws, np.zeros(4), axis=0),
                   kernel_size=[3, 3], padding=[1, 1])
        y = B.call("nn.bias_add", y, f32(bias))
    if tail == "relu":
        y = B.call("nn.relu", y)
    elif tail == "relu6":
        y = B.call("clip", y, a_min=0.0, a_max=6.0)
    os_, oz, odt = out
    check_rule(module([x, w], q(y, os_, oz, odt)))


@SETTINGS
@given(a=act_params(), b=act_params(), out=act_params(), name=st.sampled_from(
    ["add", "multiply", "maximum", "minimum"]), const=st.sampled_from([None, 0.75, "vec"]))
def test_rule_on_binary(a, b, out, name, const):
    (as_, az, adt), (bs, bz, _), (os_, oz, _) = a, b, out
    x = var("x", (2, 3, 4), adt)
    if const is None:
        y = var("y", (3, 4), adt)
        rhs, params = dq(y, bs, bz), [x, y]
    else:
        value = np.float32(const) if const != "vec" else np.linspace(-2, 2, 4).astype(np.float32)
        rhs, params = B.const(value), [x]
    body = q(B.call(name, dq(x, as_, az), rhs), os_, oz, adt)
    check_rule(module(params, body), exact=name in ("maximum", "minimum") and as_ == os_
               and (const is not None or bs == os_) and az == oz and (const is not None
                                                                      or bz == oz))


@SETTINGS
@given(parts=st.lists(act_params("int8"), min_size=1, max_size=3), out=act_params("int8"),
       pool=st.sampled_from(["none", "avg", "global", "mean", "max"]))
def test_rule_on_concatenate_and_pools(parts, out, pool):
    xs = [var(f"x{i}", (1, 2, 4, 4)) for i in range(len(parts))]
    h = B.call("concatenate", B.tuple_(*[dq(x, s, z) for x, (s, z, _) in zip(xs, parts)]),
               axis=1)
    if pool == "avg":
        h = B.call("nn.avg_pool2d", h, pool_size=[2, 2], padding=[1, 1], count_include_pad=True)
    elif pool == "global":
        h = B.call("nn.global_avg_pool2d", h)
    elif pool == "mean":
        h = B.call("mean", h, axis=[1, 3])
    elif pool == "max":
        h = B.call("nn.max_pool2d", h, pool_size=[3, 3], padding=[1, 1])
    os_, oz, _ = out
    exact = pool in ("none", "max") and all(p[:2] == (os_, oz) for p in parts)
    check_rule(module(xs, q(h, os_, oz)), exact=exact)


@SETTINGS
@given(p=act_params(), lo=st.floats(-3, 0), hi=st.floats(0, 3),
       ops_=st.lists(st.sampled_from(["relu", "clip", "max_pool", "transpose", "reshape"]),
                     min_size=1, max_size=4))
def test_rule_exact_operators(p, lo, hi, ops_):
    """Exact operators between a dequantize and a quantize with the same
    parameters: the integer program equals the float one."""
    s, z, dt = p
    x = var("x", (1, 2, 4, 4), dt)
    h: Expr = dq(x, s, z)
    for name in ops_:
        if name == "relu":
            h = B.call("nn.relu", h)
        elif name == "clip":
            h = B.call("clip", h, a_min=float(np.float32(lo)), a_max=float(np.float32(hi)))
        elif name == "max_pool":
            h = B.call("nn.max_pool2d", h, pool_size=[2, 2], padding=[1, 1])
        elif name == "transpose":
            h = B.call("transpose", h, axes=[0, 1, 3, 2])
        else:
            h = B.call("reshape", h, newshape=[1, 2, -1, 1])
    assert check_rule(module([x], q(h, s, z, dt)), exact=True)


# ------------------------------------------------------------------ a QDQ ONNX model

def qdq_cnn(seed: int = 0):
    """A small CNN as onnxruntime's static quantizer writes it (QDQ format):
    QuantizeLinear/DequantizeLinear around every activation, int8
    per-channel weights and int32 biases (scale ``x_scale * w_scale``)
    behind DequantizeLinear: Conv+Relu, MaxPool, Conv, a residual Add+Relu,
    GlobalAveragePool, Flatten, Gemm; the output is dequantized."""
    onnx = pytest.importorskip("onnx")
    from onnx import helper, numpy_helper

    rng = np.random.default_rng(seed)
    inits: dict[str, np.ndarray] = {}
    nodes = []

    def qdq(name: str, src: str, scale: float, zp: int) -> str:
        inits[name + "_s"] = np.float32(scale)
        inits[name + "_z"] = np.uint8(zp)
        nodes.append(helper.make_node("QuantizeLinear", [src, name + "_s", name + "_z"],
                                      [name + "_q"]))
        nodes.append(helper.make_node("DequantizeLinear", [name + "_q", name + "_s", name + "_z"],
                                      [name + "_d"]))
        return name + "_d"

    def weight(name: str, shape: tuple[int, ...], in_scale: float) -> tuple[str, str]:
        fan_in = int(np.prod(shape[1:]))
        ws = (rng.uniform(1.0, 3.0, shape[0]) / (127 * np.sqrt(fan_in))).astype(np.float32)
        inits[name] = rng.integers(-127, 128, size=shape).astype(np.int8)
        inits[name + "_s"] = ws
        inits[name + "_b"] = rng.integers(-2000, 2000, size=shape[0]).astype(np.int32)
        inits[name + "_bs"] = ws * np.float32(in_scale)
        inits[name + "_bz"] = np.zeros(shape[0], np.int32)
        nodes.append(helper.make_node("DequantizeLinear", [name, name + "_s"], [name + "_d"],
                                      axis=0))
        nodes.append(helper.make_node("DequantizeLinear",
                                      [name + "_b", name + "_bs", name + "_bz"],
                                      [name + "_bd"], axis=0))
        return name + "_d", name + "_bd"

    x = qdq("x", "x", 2 / 255, 128)
    w1, b1 = weight("w1", (8, 3, 3, 3), 2 / 255)
    nodes += [helper.make_node("Conv", [x, w1, b1], ["c1"], pads=[1, 1, 1, 1]),
              helper.make_node("Relu", ["c1"], ["r1"])]
    r1 = qdq("r1", "r1", 4 / 255, 0)
    nodes.append(helper.make_node("MaxPool", [r1], ["p1"], kernel_shape=[2, 2], strides=[2, 2]))
    p1 = qdq("p1", "p1", 4 / 255, 0)
    w2, b2 = weight("w2", (8, 8, 3, 3), 4 / 255)
    nodes.append(helper.make_node("Conv", [p1, w2, b2], ["c2"], pads=[1, 1, 1, 1]))
    c2 = qdq("c2", "c2", 6 / 255, 128)
    nodes += [helper.make_node("Add", [p1, c2], ["a"]), helper.make_node("Relu", ["a"], ["ar"])]
    a = qdq("a", "ar", 6 / 255, 0)
    nodes.append(helper.make_node("GlobalAveragePool", [a], ["g"]))
    g = qdq("g", "g", 3 / 255, 0)
    nodes.append(helper.make_node("Flatten", [g], ["f"]))
    w3, b3 = weight("w3", (10, 8), 3 / 255)
    nodes.append(helper.make_node("Gemm", ["f", w3, b3], ["y0"], transB=1))
    nodes.append(helper.make_node("Identity", [qdq("y", "y0", 8 / 255, 128)], ["y"]))
    graph = helper.make_graph(
        nodes, "qdq_cnn",
        [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [1, 3, 16, 16])],
        [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [1, 10])],
        initializer=[numpy_helper.from_array(np.asarray(v), k) for k, v in inits.items()])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = min(m.ir_version, 10)
    return m


#: the output's quantization step
QDQ_STEP = np.float32(8 / 255)
QDQ_FLOAT_LAYERS = {"nn.conv2d", "nn.dense", "nn.bias_add", "nn.relu", "nn.global_avg_pool2d"}


def qdq_inputs(n: int = 3) -> list[np.ndarray]:
    return [np.random.default_rng(s).uniform(-1, 1, (1, 3, 16, 16)).astype(np.float32)
            for s in range(n)]


def test_qdq_onnx_model_in_the_interpreter():
    """Every layer of the imported QDQ model becomes integer: only the
    input's QuantizeLinear and the output's DequantizeLinear stay float;
    the outputs are within one step of the float QDQ program's."""
    before = aot.from_onnx(qdq_cnn())
    after = rewrite(before)
    assert not set(ops(after)) & QDQ_FLOAT_LAYERS
    assert {"qnn.conv2d", "qnn.dense", "qnn.add", "qnn.requantize"} <= set(ops(after))
    # the input's QuantizeLinear (its zero point cast to float32) and the output's dequantize
    assert float_calls(after) == ["divide", "round", "cast", "add", "clip", "qnn.dequantize"]
    assert len(float_calls(before)) == 52
    for x in qdq_inputs():
        want, got = aot.interpret(before, x), aot.interpret(after, x)
        assert np.max(np.abs(want - got)) <= QDQ_STEP * 1.0001


def _compiled(mod: IRModule, out_dir, name: str, fq2i: bool):
    """``aot.compile`` by default (integer) or with ``quantized="float"``."""
    return aot.compile(mod, out_dir, name=name, quantized="integer" if fq2i else "float")


def test_qdq_onnx_model_compiled(tmp_path):
    """Compiled to C with and without the pass: int8 weights instead of
    float32 ones in flash, no float layer left in the kernels, a smaller
    arena, and the results within one step of the float program's (bit for
    bit the interpreter's)."""
    mod = aot.from_onnx(qdq_cnn())
    plain = _compiled(mod, tmp_path / "float", "qdq_float", fq2i=False)
    quant = _compiled(mod, tmp_path / "int", "qdq_int", fq2i=True)
    kernel_ops = {o for k in quant.metadata["kernels"] for o in k["ops"]}
    assert not kernel_ops & QDQ_FLOAT_LAYERS
    assert {"qnn.conv2d", "qnn.dense"} <= kernel_ops
    assert {"nn.conv2d", "nn.dense"} <= {o for k in plain.metadata["kernels"] for o in k["ops"]}
    # 8*3*3*3 + 8*8*3*3 + 10*8 weights: 4 bytes each before, 1 byte after
    assert quant.metadata["constant_bytes"] * 2 < plain.metadata["constant_bytes"]
    assert quant.metadata["arena_bytes"] < plain.metadata["arena_bytes"]
    run_plain, run_quant = aot.load(plain), aot.load(quant)
    after = rewrite(mod)
    for x in qdq_inputs():
        got = run_quant(x)
        np.testing.assert_array_equal(got, aot.interpret(after, x))
        assert np.max(np.abs(got - run_plain(x))) <= QDQ_STEP * 1.0001


def test_integer_forms_compiled(tmp_path):
    """The integer forms the pass makes that the QDQ CNN does not use
    (qnn.mul, qnn.concatenate, qnn.avg_pool2d, and average pooling as a
    depthwise qnn.conv2d where the output parameters differ too much,
    a widened accumulator with per-channel signs, clip and maximum tails,
    mean as an int32 sum, relu and max pooling on integers, a lookup
    table, an item of a split) compiled to C:
    bit for bit the interpreter's results, within the rule of the float
    program's."""
    x, y = var("x", (1, 4, 6, 6)), var("y", (1, 4, 6, 6))
    a, b = dq(x, 0.05, 3), dq(y, 0.08, -2)
    gamma = np.array([1.5, -0.5, 2.0, 0.0], np.float32).reshape(1, 4, 1, 1)
    beta = np.array([0.1, 0.2, -0.3, 0.0], np.float32).reshape(1, 4, 1, 1)
    norm = B.call("add", B.call("multiply", a, B.const(gamma)), B.const(beta))
    outputs = [
        q(B.call("multiply", a, b), 0.1, 0),
        q(B.call("concatenate", B.tuple_(a, b), axis=1), 0.07, 1),
        q(B.call("nn.avg_pool2d", a, pool_size=[3, 3], padding=[1, 1], count_include_pad=True),
          0.05, 3),
        q(B.call("nn.avg_pool2d", a, pool_size=[3, 3], padding=[1, 1], count_include_pad=True),
          0.03, 0),
        q(B.call("clip", norm, a_min=0.0, a_max=6.0), 0.03, -128),
        q(B.call("maximum", a, f32(0.2)), 0.05, 3),
        q(B.call("mean", a, axis=[2, 3], keepdims=True), 0.02, 0),
        q(B.call("nn.max_pool2d", B.call("nn.relu", a), pool_size=[2, 2]), 0.05, 3),
        q(hard_swish(a), 0.04, -10),
        q(B.proj(B.call("split", b, indices_or_sections=2, axis=1), 1), 0.08, -2),
    ]
    before = module([x, y], B.tuple_(*outputs))
    after = rewrite(before)
    assert not float_calls(after)
    assert {"qnn.mul", "qnn.concatenate", "qnn.avg_pool2d", "qnn.conv2d", "sum", "take",
            "split"} <= set(ops(after))
    run = aot.load(aot.compile(after, tmp_path / "forms", name="fq2i_forms"))
    for seed in range(2):
        args = random_args(before, seed)
        got, want, floats = run(*args), aot.interpret(after, *args), aot.interpret(before, *args)
        for g, w, f in zip(got, want, floats):
            np.testing.assert_array_equal(g, w)
            assert np.abs(g.astype(int) - f.astype(int)).max() <= 1


# ------------------------------------------------------------------ models quantized by onnxruntime

def ort_quantized(name: str):
    """An MLPerf Tiny model quantized by onnxruntime's static quantizer
    (tests/cases/quantized_models.py), its input shape, and the largest
    output difference the rule allows: one step of the last quantize the
    pass rewrites (the logits' when a softmax follows them: softmax at most
    halves a difference in its inputs, and its own quantize may round it
    up by one more step)."""
    onnx = pytest.importorskip("onnx")
    pytest.importorskip("onnxruntime.quantization")
    from cases.quantized_models import ort_quantized as quantize

    qmodel, shape = quantize(name)
    inits = {i.name: onnx.numpy_helper.to_array(i) for i in qmodel.graph.initializer}
    dequantized = [n for n in qmodel.graph.node if n.op_type == "DequantizeLinear"
                   and n.input[0] not in inits]
    step = float(inits[dequantized[-1].input[1]])
    softmax = [n for n in qmodel.graph.node if n.op_type == "Softmax"]
    if softmax:
        logits = [n for n in dequantized if n.output[0] == softmax[0].input[0]][0]
        step += 0.5 * float(inits[logits.input[1]])
    return qmodel, shape, step


@pytest.mark.parametrize("name", ["ds_cnn", "fc_autoencoder"])
def test_onnxruntime_quantized_model(name, tmp_path):
    """Every quantized layer becomes integer, the softmax too
    (``qnn.softmax``); what stays float is the input's QuantizeLinear and
    the last DequantizeLinear; the outputs are within the rule."""
    qmodel, shape, step = ort_quantized(name)
    before = run_pass("SimplifyInference", aot.from_onnx(qmodel))
    after = rewrite(before)
    left = set(float_calls(after))
    assert left <= {"divide", "round", "cast", "add", "clip", "qnn.dequantize"}
    assert float_calls(after).count("qnn.dequantize") == 1
    assert ("qnn.softmax" in ops(after)) == (name == "ds_cnn")
    assert not {"nn.conv2d", "nn.dense", "nn.batch_norm"} & set(ops(after))
    for seed in range(2):
        x = np.random.default_rng(100 + seed).standard_normal(shape).astype(np.float32)
        assert np.max(np.abs(aot.interpret(before, x) - aot.interpret(after, x))) <= step * 1.0001


CHAIN_OPS = ["relu", "clip", "transpose", "max_pool", "avg_pool", "conv", "scale", "shift",
             "sigmoid", "max_reduce"]


def chain_op(name: str, h: Expr, rng: np.random.Generator) -> Expr:
    """One shape-preserving float operator on a (1, 3, 6, 6) tensor."""
    if name == "relu":
        return B.call("nn.relu", h)
    if name == "clip":
        return B.call("clip", h, a_min=float(np.float32(-rng.random())),
                      a_max=float(np.float32(rng.random() * 3)))
    if name == "transpose":
        return B.call("transpose", h, axes=[0, 1, 3, 2])
    if name == "max_pool":
        return B.call("nn.max_pool2d", h, pool_size=[3, 3], padding=[1, 1])
    if name == "avg_pool":
        return B.call("nn.avg_pool2d", h, pool_size=[3, 3], padding=[1, 1],
                      count_include_pad=True)
    if name == "conv":
        w = dq(B.const(rng.integers(-127, 128, (3, 3, 3, 3)).astype(np.int8)),
               (rng.random(3) * 0.05 + 0.01).astype(np.float32), np.zeros(3), axis=0)
        y = B.call("nn.conv2d", h, w, kernel_size=[3, 3], padding=[1, 1])
        return B.call("nn.bias_add", y, f32(rng.standard_normal(3)))
    if name == "scale":
        return B.call("multiply", h, B.const(rng.uniform(-2, 2, (1, 3, 1, 1)).astype(np.float32)))
    if name == "shift":
        return B.call("add", h, f32(rng.uniform(-1, 1)))
    if name == "sigmoid":
        return B.call("sigmoid", h)
    # max_reduce: a reduction, broadcast back to the shape
    return B.call("broadcast_to", B.call("max", h, axis=[3], keepdims=True), shape=[1, 3, 6, 6])


@SETTINGS
@given(names=st.lists(st.sampled_from(CHAIN_OPS), min_size=1, max_size=4),
       inp=act_params(), out=act_params(), seed=st.integers(0, 1000))
def test_rule_on_random_chains(names, inp, out, seed):
    """Random chains of float operators between a dequantize and a
    quantize: whatever the pass rewrites is within the rule."""
    rng = np.random.default_rng(seed)
    s, z, dt = inp
    x = var("x", (1, 3, 6, 6), dt)
    h: Expr = dq(x, s, z)
    for name in names:
        h = chain_op(name, h, rng)
    os_, oz, odt = out
    check_rule(module([x], q(h, os_, oz, odt)))


# ------------------------------------------------------------------ softmax

@pytest.mark.parametrize("dtype, zp_in, scale_out, zp_out", [
    ("int8", 3, 1 / 256, -128), ("uint8", 128, 1 / 256, 0), ("int8", 0, 1 / 255, -128),
])
def test_softmax_becomes_qnn_softmax(dtype, zp_in, scale_out, zp_out):
    """``quantize(nn.softmax(dequantize(q)))`` is ``qnn.softmax`` with the
    quantize's parameters, within one step of the float program."""
    x = var("x", (6, 12), dtype)
    body = B.call("qnn.quantize",
                  B.call("nn.softmax", B.call("qnn.dequantize", x, f32(0.07), i32(zp_in)),
                         axis=-1),
                  f32(scale_out), i32(zp_out), out_dtype=dtype)
    before = module([x], body)
    after = rewrite(before)
    assert "qnn.softmax" in ops(after) and "nn.softmax" not in ops(after)
    rng = np.random.default_rng(3)
    info = np.iinfo(dtype)
    for _ in range(5):
        q = rng.integers(int(info.min), int(info.max) + 1, (6, 12)).astype(dtype)
        d = np.abs(np.asarray(aot.interpret(after, q), np.int64)
                   - np.asarray(aot.interpret(before, q), np.int64))
        assert d.max() <= 1


@pytest.mark.parametrize("why, dtype, out_dtype, shape, scale_out", [
    ("16-bit: the int16 tables exceed the budget", "int16", "int16", (2, 8), 2 ** -15),
    ("the result changes dtype", "int8", "uint8", (2, 8), 1 / 256),
    ("rows too long for the error budget", "int8", "int8", (1, 2000), 1 / 256),
])
def test_softmax_left_in_float(why, dtype, out_dtype, shape, scale_out):
    x = var("x", shape, dtype)
    body = B.call("qnn.quantize",
                  B.call("nn.softmax", B.call("qnn.dequantize", x, f32(0.07), i32(0))),
                  f32(scale_out), i32(0), out_dtype=out_dtype)
    assert "qnn.softmax" not in ops(rewrite(module([x], body))), why
