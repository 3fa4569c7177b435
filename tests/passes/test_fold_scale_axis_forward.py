"""ForwardFoldScaleAxis: a per-channel scale before a constant-weight
convolution or dense layer moves into the weight's input channels, through
relu (positive scales) and per-channel shifts (divided by the scale when
that is exact).  TVM's test_pass_fold_scale_axis.py forward cases that
apply (channels-first, constant weights and shifts), before/expected by
structural equality, and the interpreter giving the same values."""

from __future__ import annotations

import numpy as np
import pytest

import aot
from aot import builder as B
from aot.ir.module import IRModule
from aot.ir.structural import assert_structural_equal
from aot.passes.manager import PassContext, Sequential
from pass_helpers import assert_close, main_module, op_names, run_with_options

RNG = np.random.default_rng(5)
X = "%x: Tensor[(2, 4, 6, 6), float32]"
W = "%w: Tensor[(2, 4, 3, 3), float32]"
CONV = "nn.conv2d({}, %w, padding=[1, 1])"
POW2 = np.array([0.5, 2.0, 4.0, 0.25], np.float32)


def f32(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def positive(*shape):
    return RNG.uniform(0.5, 1.0, shape).astype(np.float32)


def fold(mod: IRModule, **options) -> IRModule:
    return run_with_options("ForwardFoldScaleAxis", mod, **options)


def in_scaled(w: np.ndarray, s: np.ndarray) -> np.ndarray:
    """Input channel ``c`` of a groups == 1 OIHW weight times ``s[c]``."""
    return (w * s.reshape((1, -1) + (1,) * (w.ndim - 2))).astype(w.dtype)


# ------------------------------------------------------------ TVM's cases

@pytest.mark.parametrize("scale, options", [
    (POW2, {}),                                   # b / s exact: folded by default
    (positive(4), {"inexact_divide": True}),      # b / s rounded: only on request
])
def test_tvm_fold_fwd_simple(scale, options):
    """conv(relu(x * s) + b): relu(x) + b / s, the weight's input channels
    times s."""
    w, b = f32(2, 4, 3, 3), f32(4, 1, 1)
    s = scale.reshape(4, 1, 1)
    sig = f"{X}, {W}, %b: Tensor[(4, 1, 1), float32]"
    before = main_module(f"{sig}, %s: Tensor[(4, 1, 1), float32]",
                         CONV.format("add(nn.relu(multiply(%x, %s)), %b)"), {"w": w, "b": b, "s": s})
    after = fold(before, **options)
    expected = main_module(sig, CONV.format("add(nn.relu(%x), %b)"),
                           {"w": in_scaled(w, scale), "b": (b / s).astype(np.float32)})
    assert_structural_equal(after, expected)
    assert_close(before, after, f32(2, 4, 6, 6), exact=not options)


def test_rounded_shift_quotient_is_not_folded_by_default():
    w, b, s = f32(2, 4, 3, 3), f32(4, 1, 1), positive(4, 1, 1)
    before = main_module(f"{X}, {W}, %b: Tensor[(4, 1, 1), float32], %s: Tensor[(4, 1, 1), float32]",
                         CONV.format("add(nn.relu(multiply(%x, %s)), %b)"), {"w": w, "b": b, "s": s})
    assert_structural_equal(fold(before), before)


@pytest.mark.parametrize("body", [
    # the scale reaches two layers (TVM test_fold_fwd_dual_path folds both;
    # ours needs one consumer)
    "%0 = subtract(nn.relu(multiply(%s, %x)), %b);\n"
    "  add(nn.conv2d(%0, %w, padding=[1, 1]), nn.conv2d(%0, %w, padding=[1, 1], strides=[1, 1]))",
    # the scaled value is used outside the chain (TVM test_fold_fwd_fail)
    "%0 = multiply(%x, %s);\n"
    "  (nn.conv2d(nn.leaky_relu(%0, alpha=0.1), %w, padding=[1, 1]), %0)",
    # negative scales cannot pass relu (TVM test_fold_fwd_relu_fail)
    "nn.conv2d(nn.relu(multiply(%x, %neg)), %w, padding=[1, 1])",
    # the scale is not a constant
    "nn.conv2d(multiply(%x, %y), %w, padding=[1, 1])",
    # through a let (TVM test_fold_fwd_let_fail)
    "let %v = add(nn.relu(multiply(%x, %s)), %b);\n  nn.conv2d(%v, %w, padding=[1, 1])",
    # a shift that is not per channel
    "nn.conv2d(add(multiply(%x, %s), %full), %w, padding=[1, 1])",
])
def test_tvm_fold_fwd_fail(body):
    sig = (f"{X}, {W}, %b: Tensor[(4, 1, 1), float32], %s: Tensor[(4, 1, 1), float32], "
           "%neg: Tensor[(4, 1, 1), float32], %y: Tensor[(4, 1, 1), float32], "
           "%full: Tensor[(4, 6, 6), float32]")
    before = main_module(sig, body, {"w": f32(2, 4, 3, 3), "b": f32(4, 1, 1), "s": positive(4, 1, 1),
                                "neg": -positive(4, 1, 1), "full": f32(4, 6, 6)})
    assert_structural_equal(fold(before, inexact_divide=True), before)


def test_tvm_fold_fwd_negative_scale():
    w, s = f32(2, 4, 3, 3), -positive(4)
    before = main_module(f"{X}, {W}, %s: Tensor[(4, 1, 1), float32]", CONV.format("multiply(%x, %s)"),
                         {"w": w, "s": s.reshape(4, 1, 1)})
    after = fold(before)
    assert_structural_equal(after, main_module(f"{X}, {W}", CONV.format("%x"),
                                               {"w": in_scaled(w, s)}))
    assert_close(before, after, f32(2, 4, 6, 6))


@pytest.mark.parametrize("rows, k, units", [(2, 4, 3), (3, 5, 4)])
def test_tvm_fold_fwd_dense(rows, k, units):
    w, b = f32(units, k), f32(k)
    s = np.resize(POW2, k)
    sig = f"%x: Tensor[({rows}, {k}), float32], %w: Tensor[({units}, {k}), float32], " \
          f"%b: Tensor[({k}), float32]"
    before = main_module(f"{sig}, %s: Tensor[({k}), float32]",
                         "nn.dense(add(nn.relu(multiply(%x, %s)), %b), %w)", {"w": w, "b": b, "s": s})
    after = fold(before)
    expected = main_module(sig, "nn.dense(add(nn.relu(%x), %b), %w)",
                           {"w": (w * s).astype(np.float32), "b": b / s})
    assert_structural_equal(after, expected)
    assert_close(before, after, f32(rows, k), exact=True)


# ---------------------------------------------------------------- ours

@pytest.mark.parametrize("groups, w_shape", [
    (4, (8, 1, 3, 3)),        # depthwise, channel multiplier 2
    (2, (6, 2, 3, 3)),        # two groups of two input channels
    (1, (5, 4, 1, 1)),
])
def test_grouped_and_depthwise_convolutions(groups, w_shape):
    """Output channel o of group g reads input channels g*I .. g*I+I-1."""
    w, s = f32(*w_shape), positive(4)
    conv = f"nn.conv2d({{}}, %w, padding=[1, 1], groups={groups})"
    sig = f"{X}, %w: Tensor[{w_shape}, float32]"
    before = main_module(f"{sig}, %s: Tensor[(4, 1, 1), float32]", conv.format("multiply(%x, %s)"),
                         {"w": w, "s": s.reshape(4, 1, 1)})
    after = fold(before)
    o, i = w_shape[:2]
    factors = np.array([[s[(oc // (o // groups)) * i + j] for j in range(i)] for oc in range(o)],
                       np.float32)
    expected = main_module(sig, conv.format("%x"),
                           {"w": (w * factors[:, :, None, None]).astype(np.float32)})
    assert_structural_equal(after, expected)
    assert_close(before, after, f32(2, 4, 6, 6))


@pytest.mark.parametrize("std, options, folded", [
    (np.array([2.0, 4.0, 0.5, 1.0], np.float32), {}, True),
    (np.array([0.229, 0.224, 0.225, 0.2], np.float32), {}, False),
    (np.array([0.229, 0.224, 0.225, 0.2], np.float32), {"inexact_divide": True}, True),
])
def test_input_normalisation(std, options, folded):
    """conv((x - mean) / std): the divide folds into the weight when 1/std
    is exact (or on request); the subtraction stays."""
    w, mean = f32(2, 4, 3, 3), f32(4, 1, 1)
    before = main_module(f"{X}, {W}, %m: Tensor[(4, 1, 1), float32], %d: Tensor[(4, 1, 1), float32]",
                         CONV.format("divide(subtract(%x, %m), %d)"),
                         {"w": w, "m": mean, "d": std.reshape(4, 1, 1)})
    after = fold(before, **options)
    if not folded:
        assert_structural_equal(after, before)
        return
    assert op_names(after) == ["subtract", "nn.conv2d"]
    recip = (np.float32(1) / std).astype(np.float32)
    np.testing.assert_array_equal(after["main"].body.args[1].data, in_scaled(w, recip))
    assert_close(before, after, f32(2, 4, 6, 6), exact=not options)


def test_bias_add_and_subtract_in_the_chain():
    """x * s -> bias_add(., b) -> t - . -> relu -> conv1d: every shift divided."""
    w, b, t = f32(3, 4, 3), f32(4), f32(4, 1)
    s = POW2
    sig = "%x: Tensor[(1, 4, 9), float32], %w: Tensor[(3, 4, 3), float32], " \
          "%b: Tensor[(4), float32], %t: Tensor[(4, 1), float32]"
    before = main_module(f"{sig}, %s: Tensor[(4, 1), float32]",
                         "nn.conv1d(nn.relu(subtract(%t, nn.bias_add(multiply(%x, %s), %b))), %w)",
                         {"w": w, "b": b, "t": t, "s": s.reshape(4, 1)})
    after = fold(before)
    expected = main_module(sig, "nn.conv1d(nn.relu(subtract(%t, nn.bias_add(%x, %b))), %w)",
                           {"w": in_scaled(w, s), "b": b / s, "t": t / s.reshape(4, 1)})
    assert_structural_equal(after, expected)
    assert_close(before, after, f32(1, 4, 9), exact=True)


def test_overflowing_weights_are_not_folded():
    w = np.full((2, 4, 3, 3), 3e38, np.float32)
    before = main_module(f"{X}, {W}, %s: Tensor[(4, 1, 1), float32]", CONV.format("multiply(%x, %s)"),
                         {"w": w, "s": np.full((4, 1, 1), 4.0, np.float32)})
    assert_structural_equal(fold(before), before)


def test_disabled_by_name_leaves_the_module_unchanged():
    before = main_module(f"{X}, {W}, %s: Tensor[(4, 1, 1), float32]", CONV.format("multiply(%x, %s)"),
                         {"w": f32(2, 4, 3, 3), "s": positive(4, 1, 1)})
    with PassContext(disabled=["ForwardFoldScaleAxis"]):
        assert Sequential(["ForwardFoldScaleAxis"])(before) is before
        assert_structural_equal(Sequential(["FoldScaleAxis"])(before), before)
    assert op_names(Sequential(["ForwardFoldScaleAxis"])(before)) == ["nn.conv2d"]


def test_deep_chain_of_relus_between_scale_and_layer():
    n = 10_000
    x = B.var("x", B.tensor((2, 4, 6, 6)))
    w, s = f32(2, 4, 3, 3), positive(4)
    e = B.multiply(x, B.const(s.reshape(4, 1, 1)))
    for _ in range(n):
        e = B.call("nn.relu", e)
    body = B.call("nn.conv2d", e, B.const(w), padding=[1, 1])
    before = aot.infer_types(B.module(main=B.function([x], body)))
    after = fold(before)
    names = op_names(after)
    assert names.count("nn.relu") == n and "multiply" not in names
    np.testing.assert_array_equal(after["main"].body.args[1].data, in_scaled(w, s))
