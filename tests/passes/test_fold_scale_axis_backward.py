"""BackwardFoldScaleAxis: a per-channel scale after a constant-weight
convolution or dense layer moves into the weight's output channels, through
bias_add, per-channel shifts, residual sums of two layers and (positive
scales only) relu.  TVM's test_pass_fold_scale_axis.py backward cases that
apply (channels-first, constant weights; no blocked layouts or conv3d in
our catalogue), before/expected by structural equality, and the
interpreter giving the same values (bit for bit when the scales are powers
of two)."""

from __future__ import annotations

import numpy as np
import pytest

import aot
from aot import builder as B
from aot.ir.expr import Call, Op
from aot.ir.module import IRModule
from aot.ir.structural import assert_structural_equal
from aot.ir.visitor import post_order
from aot.passes.manager import PassContext, Sequential
from pass_helpers import assert_close, main_module, op_names, run_with_options

RNG = np.random.default_rng(7)
X = "%x: Tensor[(1, 4, 6, 6), float32]"
W = "%w: Tensor[(8, 4, 3, 3), float32]"
CONV = "nn.conv2d(%x, %w, padding=[1, 1])"


def f32(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def positive(*shape):
    return RNG.uniform(0.5, 1.0, shape).astype(np.float32)


def fold(mod: IRModule, **options) -> IRModule:
    return run_with_options("BackwardFoldScaleAxis", mod, **options)


def out_scaled(w: np.ndarray, s: np.ndarray) -> np.ndarray:
    return (w * s.reshape((-1,) + (1,) * (w.ndim - 1))).astype(w.dtype)


# ------------------------------------------------------------ TVM's cases

def test_tvm_fold_bwd_simple():
    """relu(conv + b) * s, s > 0: the weight's output channels and the
    shift are scaled (the shift becomes the layer's bias_add)."""
    w, b, s = f32(8, 4, 3, 3), f32(8, 1, 1), positive(8, 1, 1)
    before = main_module(f"{X}, {W}, %b: Tensor[(8, 1, 1), float32], %s: Tensor[(8, 1, 1), float32]",
                         f"multiply(nn.relu(add({CONV}, %b)), %s)", {"w": w, "b": b, "s": s})
    after = fold(before)
    expected = main_module(f"{X}, {W}, %b: Tensor[(8), float32]",
                           f"nn.relu(nn.bias_add({CONV}, %b))",
                           {"w": out_scaled(w, s), "b": (b.reshape(8) * s.reshape(8))})
    assert_structural_equal(after, expected)
    assert_close(before, after, f32(1, 4, 6, 6))


def test_tvm_fold_bwd_dual_path():
    """(relu(conv1) + relu(conv2)) * s: both layers scaled."""
    w1, w2, s = f32(8, 4, 3, 3), f32(8, 4, 3, 3), positive(8, 1, 1)
    sig = f"{X}, %w1: Tensor[(8, 4, 3, 3), float32], %w2: Tensor[(8, 4, 3, 3), float32]"
    body = ("add(nn.relu(nn.conv2d(%x, %w1, padding=[1, 1])), "
            "nn.relu(nn.conv2d(%x, %w2, padding=[1, 1])))")
    before = main_module(f"{sig}, %s: Tensor[(8, 1, 1), float32]", f"multiply({body}, %s)",
                         {"w1": w1, "w2": w2, "s": s})
    after = fold(before)
    expected = main_module(sig, body, {"w1": out_scaled(w1, s), "w2": out_scaled(w2, s)})
    assert_structural_equal(after, expected)
    assert_close(before, after, f32(1, 4, 6, 6))


def test_tvm_fold_bwd_simple_constant():
    """A scalar scale (2.0) through relu after a conv and its bias."""
    w, b = f32(8, 4, 3, 3), f32(8, 1, 1)
    before = main_module(f"{X}, {W}, %b: Tensor[(8, 1, 1), float32]",
                         f"multiply(nn.relu(add({CONV}, %b)), 2f)", {"w": w, "b": b})
    after = fold(before)
    expected = main_module(f"{X}, {W}, %b: Tensor[(8), float32]", f"nn.relu(nn.bias_add({CONV}, %b))",
                           {"w": w * np.float32(2), "b": b.reshape(8) * np.float32(2)})
    assert_structural_equal(after, expected)
    assert_close(before, after, f32(1, 4, 6, 6), exact=True)


def test_tvm_fold_bwd_dual_consumer():
    """relu(conv0 * s) feeds two convs, each scaled by s: three folds."""
    w, s = f32(4, 4, 3, 3), positive(4, 1, 1)
    sig = f"{X}, %w0: Tensor[(4, 4, 3, 3), float32], %w1: Tensor[(4, 4, 3, 3), float32], " \
          "%w2: Tensor[(4, 4, 3, 3), float32]"
    params = {"w0": w, "w1": w, "w2": w}

    def body(scale: str) -> str:
        def conv(d, k):
            c = f"nn.conv2d({d}, %w{k}, padding=[1, 1])"
            return f"multiply({c}, {scale})" if scale else c
        y0 = f"nn.relu({conv('%x', 0)})"
        return f"%0 = {y0};\n  add(nn.relu({conv('%0', 1)}), nn.relu({conv('%0', 2)}))"

    before = main_module(f"{sig}, %s: Tensor[(4, 1, 1), float32]", body("%s"), {**params, "s": s})
    after = fold(before)
    scaled = out_scaled(w, s)
    expected = main_module(sig, body(""), {"w0": scaled, "w1": scaled, "w2": scaled})
    assert_structural_equal(after, expected)
    assert_close(before, after, f32(1, 4, 6, 6))


@pytest.mark.parametrize("body", [
    # the layer's output is used twice (TVM fail2)
    f"%0 = {CONV};\n  add(multiply(%0, %s), nn.relu(%0))",
    # one branch of the sum is not a layer (TVM fail1's spirit: the paths disagree)
    f"multiply(add(nn.relu({CONV}), nn.relu(%y)), %s)",
    # negative scales cannot pass relu (TVM test_fold_bwd_relu_fail)
    f"multiply(nn.relu({CONV}), %neg)",
    # the scale is not a constant
    f"multiply(nn.relu({CONV}), %y)",
    # the "scale" broadcasts the layer's output bigger
    f"multiply({CONV}, %big)",
])
def test_tvm_fold_bwd_fail(body):
    sig = (f"{X}, {W}, %s: Tensor[(8, 1, 1), float32], %neg: Tensor[(8, 1, 1), float32], "
           "%y: Tensor[(1, 8, 6, 6), float32], %big: Tensor[(2, 8, 1, 1), float32]")
    before = main_module(sig, body, {"w": f32(8, 4, 3, 3), "s": positive(8, 1, 1),
                                "neg": -positive(8, 1, 1), "big": f32(2, 8, 1, 1)})
    assert_structural_equal(fold(before), before)


def test_tvm_fold_bwd_negative_scale():
    w, s = f32(8, 4, 3, 3), -positive(8, 1, 1)
    before = main_module(f"{X}, {W}, %s: Tensor[(8, 1, 1), float32]", f"multiply({CONV}, %s)",
                         {"w": w, "s": s})
    after = fold(before)
    assert_structural_equal(after, main_module(f"{X}, {W}", CONV, {"w": out_scaled(w, s)}))
    assert_close(before, after, f32(1, 4, 6, 6))


@pytest.mark.parametrize("rows, k, units", [(2, 4, 3), (3, 5, 4)])
def test_tvm_fold_bwd_dense(rows, k, units):
    w, b, s = f32(units, k), f32(units), positive(units)
    sig = f"%x: Tensor[({rows}, {k}), float32], %w: Tensor[({units}, {k}), float32], " \
          f"%b: Tensor[({units}), float32]"
    before = main_module(f"{sig}, %s: Tensor[({units}), float32]",
                         "multiply(nn.relu(add(nn.dense(%x, %w), %b)), %s)", {"w": w, "b": b, "s": s})
    after = fold(before)
    expected = main_module(sig, "nn.relu(nn.bias_add(nn.dense(%x, %w), %b))",
                           {"w": out_scaled(w, s), "b": b * s})
    assert_structural_equal(after, expected)
    assert_close(before, after, f32(rows, k))


def test_tvm_fold_bwd_bias_add():
    w, b, s = f32(8, 4, 3, 3), f32(8), positive(8, 1, 1)
    sig = f"{X}, {W}, %b: Tensor[(8), float32]"
    before = main_module(f"{sig}, %s: Tensor[(8, 1, 1), float32]",
                         f"multiply(nn.relu(nn.bias_add({CONV}, %b)), %s)", {"w": w, "b": b, "s": s})
    after = fold(before)
    expected = main_module(sig, f"nn.relu(nn.bias_add({CONV}, %b))",
                           {"w": out_scaled(w, s), "b": b * s.reshape(8)})
    assert_structural_equal(after, expected)
    assert_close(before, after, f32(1, 4, 6, 6))


# ---------------------------------------------------------------- ours

def test_batch_norm_after_a_conv_with_a_bias_is_one_bias_add():
    """The ONNX form: bias_add(conv) then the batch norm's multiply and add:
    bias_add(conv(x, W * s), b * s + t)."""
    w, b, s, t = f32(8, 4, 3, 3), f32(8), f32(8, 1, 1), f32(8, 1, 1)
    sig = f"{X}, {W}, %b: Tensor[(8), float32]"
    before = main_module(f"{sig}, %s: Tensor[(8, 1, 1), float32], %t: Tensor[(8, 1, 1), float32]",
                         f"nn.relu(add(multiply(nn.bias_add({CONV}, %b), %s), %t))",
                         {"w": w, "b": b, "s": s, "t": t})
    after = fold(before)
    expected = main_module(sig, f"nn.relu(nn.bias_add({CONV}, %b))",
                           {"w": out_scaled(w, s), "b": b * s.reshape(8) + t.reshape(8)})
    assert_structural_equal(after, expected)
    assert_close(before, after, f32(1, 4, 6, 6))


@pytest.mark.parametrize("body, bias", [
    (f"subtract({CONV}, %t)", lambda t: -t),
    (f"add(%t, {CONV})", lambda t: t),
])
def test_shift_becomes_the_bias(body, bias):
    w, t = f32(8, 4, 3, 3), f32(8, 1, 1)
    before = main_module(f"{X}, {W}, %t: Tensor[(8, 1, 1), float32]", body, {"w": w, "t": t})
    after = fold(before)
    expected = main_module(f"{X}, {W}, %b: Tensor[(8), float32]", f"nn.bias_add({CONV}, %b)",
                           {"w": w, "b": bias(t.reshape(8))})
    assert_structural_equal(after, expected)
    assert_close(before, after, f32(1, 4, 6, 6), exact=True)


@pytest.mark.parametrize("divisor, options, folded", [
    (np.float32(4), {}, True),                                   # 1/4 exact
    (np.array([0.5, 2, 4, 8, 0.25, 1, 16, 2], np.float32), {}, True),
    (np.array([-2, 2, 4, 8, 0.25, 1, 16, 2], np.float32), {}, True),
    (np.float32(3), {}, False),                                  # 1/3 rounded
    (np.float32(3), {"inexact_divide": True}, True),
    (np.float32(0), {"inexact_divide": True}, False),            # never: x / 0
    (np.float32(2.0 ** -127), {}, False),           # exact 1/c, but W / c overflows
])
def test_divide_folds_when_the_reciprocal_is_exact(divisor, options, folded):
    w = f32(8, 4, 3, 3)
    before = main_module(f"{X}, {W}, %c: Tensor[{'(8, 1, 1)' if divisor.ndim else '()'}, float32]",
                         f"divide({CONV}, %c)",
                         {"w": w, "c": divisor.reshape(8, 1, 1) if divisor.ndim else divisor})
    after = fold(before, **options)
    x = f32(1, 4, 6, 6)
    if not folded:
        assert_structural_equal(after, before)
        return
    assert op_names(after) == ["nn.conv2d"]
    recip = (np.float32(1) / divisor).astype(np.float32)
    w_new = after["main"].body.args[1].data
    np.testing.assert_array_equal(w_new, out_scaled(w, np.broadcast_to(recip, (8,)).copy()))
    assert_close(before, after, x, exact=not options)


def test_power_of_two_scales_are_bit_exact():
    """Scaling by a power of two rounds nothing: the folded program is the
    unfolded one bit for bit."""
    w, b = f32(8, 4, 3, 3), f32(8)
    s = np.array([0.5, 2, 4, 1, 0.25, 8, 2, 1], np.float32).reshape(8, 1, 1)
    before = main_module(f"{X}, {W}, %b: Tensor[(8), float32], %s: Tensor[(8, 1, 1), float32]",
                         f"multiply(nn.relu(nn.bias_add({CONV}, %b)), %s)", {"w": w, "b": b, "s": s})
    after = fold(before)
    assert op_names(after) == ["nn.conv2d", "nn.bias_add", "nn.relu"]
    for seed in range(3):
        x = np.random.default_rng(seed).standard_normal((1, 4, 6, 6)).astype(np.float32)
        assert_close(before, after, x, exact=True)


@pytest.mark.parametrize("groups, w_shape", [(4, (8, 1, 3, 3)), (2, (6, 2, 3, 3))])
def test_grouped_and_depthwise_convolutions(groups, w_shape):
    w, s = f32(*w_shape), positive(w_shape[0], 1, 1)
    o = w_shape[0]
    conv = f"nn.conv2d(%x, %w, padding=[1, 1], groups={groups})"
    sig = f"{X}, %w: Tensor[{w_shape}, float32]"
    before = main_module(f"{sig}, %s: Tensor[({o}, 1, 1), float32]",
                         f"multiply(nn.leaky_relu({conv}, alpha=0.1), %s)", {"w": w, "s": s})
    after = fold(before)
    expected = main_module(sig, f"nn.leaky_relu({conv}, alpha=0.1)", {"w": out_scaled(w, s)})
    assert_structural_equal(after, expected)
    assert_close(before, after, f32(1, 4, 6, 6))


def test_conv1d_and_a_kernel_layout_with_o_elsewhere():
    w, s = f32(6, 3, 5), positive(6, 1)
    before = main_module("%x: Tensor[(1, 3, 10), float32], %w: Tensor[(6, 3, 5), float32], "
                         "%s: Tensor[(6, 1), float32]", "multiply(nn.conv1d(%x, %w), %s)",
                         {"w": w, "s": s})
    after = fold(before)
    assert op_names(after) == ["nn.conv1d"]
    assert_close(before, after, f32(1, 3, 10))
    # OIHW written as IOHW-style "HWOI": O on axis 2
    w2 = f32(3, 3, 8, 4)
    before = main_module(f"{X}, %w: Tensor[(3, 3, 8, 4), float32], %s: Tensor[(8, 1, 1), float32]",
                         'multiply(nn.conv2d(%x, %w, padding=[1, 1], kernel_layout="HWOI"), %s)',
                         {"w": w2, "s": positive(8, 1, 1)})
    after = fold(before)
    assert op_names(after) == ["nn.conv2d"]
    assert_close(before, after, f32(1, 4, 6, 6))


@pytest.mark.parametrize("scale", [np.inf, -np.inf, np.nan])
def test_scales_that_do_not_fold(scale):
    s = np.full((8, 1, 1), scale, np.float32)
    before = main_module(f"{X}, {W}, %s: Tensor[(8, 1, 1), float32]", f"multiply({CONV}, %s)",
                         {"w": f32(8, 4, 3, 3), "s": s})
    assert_structural_equal(fold(before), before)


def test_a_zero_scale_folds():
    """TVM's batch norm with zero parameters: the weight becomes zero."""
    w = f32(8, 4, 3, 3)
    before = main_module(f"{X}, {W}, %s: Tensor[(8, 1, 1), float32]", f"multiply({CONV}, %s)",
                         {"w": w, "s": np.zeros((8, 1, 1), np.float32)})
    after = fold(before)
    assert_structural_equal(after, main_module(f"{X}, {W}", CONV, {"w": w * np.float32(0)}))
    assert_close(before, after, f32(1, 4, 6, 6), exact=True)


def test_channels_last_and_parameter_weights_do_not_fold():
    nhwc = main_module("%x: Tensor[(1, 6, 6, 4), float32], %w: Tensor[(3, 3, 4, 8), float32], "
                       "%s: Tensor[(8), float32]",
                       'multiply(nn.conv2d(%x, %w, padding=[1, 1], data_layout="NHWC", '
                       'kernel_layout="HWIO"), %s)', {"w": f32(3, 3, 4, 8), "s": positive(8)})
    assert_structural_equal(fold(nhwc), nhwc)
    param_w = main_module(f"{X}, {W}, %s: Tensor[(8, 1, 1), float32]", f"multiply({CONV}, %s)",
                          {"s": positive(8, 1, 1)})
    assert_structural_equal(fold(param_w), param_w)


def test_disabled_by_name_leaves_the_module_unchanged():
    before = main_module(f"{X}, {W}, %s: Tensor[(8, 1, 1), float32]", f"multiply({CONV}, %s)",
                         {"w": f32(8, 4, 3, 3), "s": positive(8, 1, 1)})
    with PassContext(disabled=["BackwardFoldScaleAxis"]):
        assert Sequential(["BackwardFoldScaleAxis"])(before) is before
        assert_structural_equal(Sequential(["FoldScaleAxis"])(before), before)
    assert op_names(Sequential(["BackwardFoldScaleAxis"])(before)) == ["nn.conv2d"]


N = 10_000


def test_deep_chain_of_relus_between_layer_and_scale():
    x = B.var("x", B.tensor((1, 4, 6, 6)))
    w, s = f32(8, 4, 3, 3), positive(8, 1, 1)
    e = B.call("nn.conv2d", x, B.const(w), padding=[1, 1])
    for _ in range(N):
        e = B.call("nn.relu", e)
    before = aot.infer_types(B.module(main=B.function([x], B.multiply(e, B.const(s)))))
    after = fold(before)
    names = op_names(after)
    assert names.count("nn.relu") == N and "multiply" not in names
    conv = next(n for n in post_order(after["main"]) if isinstance(n, Call)
                and isinstance(n.op, Op) and n.op.name == "nn.conv2d")
    np.testing.assert_array_equal(conv.args[1].data, out_scaled(w, s))
