"""FoldScaleAxis (BackwardFoldScaleAxis then ForwardFoldScaleAxis): per-channel
scales and shifts after constant-weight convolutions and dense layers fold
into the weights and one bias_add, scales before them into the weights'
input channels; everything else is left alone.  Results are compared with
the unfolded program through the interpreter (equal to float rounding).
Each direction has its own file of cases (test_fold_scale_axis_backward.py,
test_fold_scale_axis_forward.py); this one holds the composite and how the
two directions meet."""

from __future__ import annotations

import numpy as np
import pytest

import aot
from aot.passes.bind_params import bind_params
from aot.passes.fold_scale_axis import fold_scale_axis
from aot.passes.manager import PassContext, run_pass
from pass_helpers import op_counts

RNG = np.random.default_rng(11)


def _fold(text: str, params: dict):
    mod = aot.infer_types(bind_params(aot.infer_types(aot.parse(text)), params, "main"))
    return mod, run_pass("FoldScaleAxis", mod)


def _f32(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


CONV = "def @main(%x: Tensor[(1, 4, 6, 6), float32], %w: Tensor[(8, 4, 3, 3), float32], " \
       "%b: Tensor[(8,), float32], %s: Tensor[(8, 1, 1), float32], " \
       "%t: Tensor[(8, 1, 1), float32]) {\n  @BODY@\n}\n"
CONV_CALL = "nn.conv2d(%x, %w, padding=[1, 1])"

FOLDED = [
    ("conv bias scale shift", f"add(multiply(nn.bias_add({CONV_CALL}, %b), %s), %t)",
     {"nn.conv2d": 1, "nn.bias_add": 1}),
    ("conv scale", f"multiply({CONV_CALL}, %s)", {"nn.conv2d": 1}),
    ("scale on the left", f"multiply(%s, nn.bias_add({CONV_CALL}, %b))",
     {"nn.conv2d": 1, "nn.bias_add": 1}),
    ("conv shift", f"add({CONV_CALL}, %t)", {"nn.conv2d": 1, "nn.bias_add": 1}),
    ("then relu", f"nn.relu(add(multiply({CONV_CALL}, %s), %t))",
     {"nn.conv2d": 1, "nn.bias_add": 1, "nn.relu": 1}),
]


@pytest.mark.parametrize("body, ops", [(b, o) for _, b, o in FOLDED],
                         ids=[n for n, _, _ in FOLDED])
def test_conv_scale_and_shift_fold(body, ops):
    params = {"w": _f32(8, 4, 3, 3), "b": _f32(8), "s": _f32(8, 1, 1), "t": _f32(8, 1, 1)}
    before, after = _fold(CONV.replace("@BODY@", body), params)
    assert dict(op_counts(after)) == ops
    x = _f32(1, 4, 6, 6)
    np.testing.assert_allclose(aot.interpret(after, x), aot.interpret(before, x),
                               rtol=1e-5, atol=1e-5)


def test_dense_scale_and_shift_fold():
    text = ("def @main(%x: Tensor[(2, 5), float32], %w: Tensor[(3, 5), float32], "
            "%s: Tensor[(3,), float32], %t: float32) {\n"
            "  add(multiply(nn.dense(%x, %w), %s), %t)\n}\n")
    params = {"w": _f32(3, 5), "s": _f32(3), "t": np.float32(0.5)}
    before, after = _fold(text, params)
    assert dict(op_counts(after)) == {"nn.dense": 1, "nn.bias_add": 1}
    x = _f32(2, 5)
    np.testing.assert_allclose(aot.interpret(after, x), aot.interpret(before, x), rtol=1e-5)


KEPT = [
    ("intermediate used twice",
     f"%0 = nn.bias_add({CONV_CALL}, %b);\n  (multiply(%0, %s), %0)"),
    ("scale not per channel", f"multiply({CONV_CALL}, %x2)"),
    ("weight is a parameter", "multiply(nn.conv2d(%x, %x3, padding=[1, 1]), %s)"),
]


@pytest.mark.parametrize("body", [b for _, b in KEPT], ids=[n for n, _ in KEPT])
def test_not_folded(body):
    text = CONV.replace("%t: Tensor[(8, 1, 1), float32]) {",
                        "%t: Tensor[(8, 1, 1), float32], %x2: Tensor[(1, 8, 6, 6), float32], "
                        "%x3: Tensor[(8, 4, 3, 3), float32]) {").replace("@BODY@", body)
    params = {"w": _f32(8, 4, 3, 3), "b": _f32(8), "s": _f32(8, 1, 1), "t": _f32(8, 1, 1),
              "x2": _f32(1, 8, 6, 6)}
    if "%x3" not in body:
        params["x3"] = _f32(8, 4, 3, 3)
    before, after = _fold(text, params)
    assert op_counts(after)["multiply"] == op_counts(before)["multiply"] == 1


def test_infinite_scale_and_nhwc_are_not_folded():
    s = np.full((8, 1, 1), np.inf, np.float32)
    params = {"w": _f32(8, 4, 3, 3), "b": _f32(8), "s": s, "t": _f32(8, 1, 1)}
    _, after = _fold(CONV.replace("@BODY@", f"multiply({CONV_CALL}, %s)"), params)
    assert op_counts(after)["multiply"] == 1
    text = ("def @main(%x: Tensor[(1, 6, 6, 4), float32], %w: Tensor[(3, 3, 4, 8), float32], "
            "%s: Tensor[(8,), float32]) {\n  multiply(nn.conv2d(%x, %w, padding=[1, 1], "
            "data_layout=\"NHWC\", kernel_layout=\"HWIO\"), %s)\n}\n")
    _, after = _fold(text, {"w": _f32(3, 3, 4, 8), "s": _f32(8)})
    assert op_counts(after)["multiply"] == 1


def test_compiled_batch_norm_has_no_epilogue_multiply(tmp_path):
    """Through aot.compile: the batch-normalised convolution is one kernel
    whose epilogue is the bias and the ReLU only."""
    text = ("def @main(%x: Tensor[(1, 4, 6, 6), float32], %w: Tensor[(8, 4, 3, 3), float32], "
            "%g: Tensor[(8,), float32], %be: Tensor[(8,), float32], %m: Tensor[(8,), float32], "
            "%v: Tensor[(8,), float32]) {\n"
            "  nn.relu(nn.batch_norm(nn.conv2d(%x, %w, padding=[1, 1]), %g, %be, %m, %v).0)\n}\n")
    params = {"w": _f32(8, 4, 3, 3), "g": _f32(8), "be": _f32(8), "m": _f32(8),
              "v": np.abs(_f32(8)) + 0.5}
    mod = aot.parse(text)
    art = aot.compile(mod, tmp_path, name="bn", params=params)
    ops = [k["ops"] for k in art.metadata["kernels"]]
    assert ops == [["nn.conv2d", "nn.bias_add", "nn.relu"]], ops
    x = _f32(1, 4, 6, 6)
    want = aot.interpret(bind_params(aot.infer_types(mod), params, "main"), x)
    np.testing.assert_allclose(aot.load(art)(x), want, rtol=1e-5, atol=1e-5)


# ------------------------------------------- the two directions together

TWO = ("def @main(%x: Tensor[(1, 4, 6, 6), float32], %w1: Tensor[(8, 4, 3, 3), float32], "
       "%b1: Tensor[(8), float32], %s: Tensor[(8, 1, 1), float32], "
       "%t: Tensor[(8, 1, 1), float32], %w2: Tensor[(2, 8, 1, 1), float32]) {\n  @BODY@\n}\n")
POW2 = np.array([0.5, 2, 4, 1, 0.25, 8, 2, 1], np.float32).reshape(8, 1, 1)


def _two(body: str, s: np.ndarray):
    params = {"w1": _f32(8, 4, 3, 3), "b1": _f32(8), "s": s, "t": _f32(8, 1, 1),
              "w2": _f32(2, 8, 1, 1)}
    return aot.infer_types(bind_params(aot.infer_types(aot.parse(TWO.replace("@BODY@", body))),
                                       params, "main"))


CONV1_BN_RELU_CONV2 = ("nn.conv2d(nn.relu(add(multiply(nn.bias_add(nn.conv2d(%x, %w1, "
                       "padding=[1, 1]), %b1), %s), %t)), %w2)")


def test_backward_goes_first_and_takes_the_scale_with_the_bias():
    """conv1 (with its ONNX bias) -> batch norm -> relu -> conv2: the scale
    and shift fold backwards into conv1 and its one bias_add (exact up to a
    rounding per weight), not forwards into conv2 (which would divide the
    shift by the scale)."""
    before = _two(CONV1_BN_RELU_CONV2, _f32(8, 1, 1))
    after = run_pass("FoldScaleAxis", before)
    assert dict(op_counts(after)) == {"nn.conv2d": 2, "nn.bias_add": 1, "nn.relu": 1}
    conv2 = after["main"].body
    np.testing.assert_array_equal(conv2.args[1].data, before["main"].body.args[1].data)
    x = _f32(1, 4, 6, 6)
    np.testing.assert_allclose(aot.interpret(after, x), aot.interpret(before, x),
                               rtol=1e-5, atol=1e-5)


def test_forward_alone_takes_the_scale_into_the_next_layer():
    """The same network with BackwardFoldScaleAxis disabled: the scale goes
    forwards into conv2's input channels and the shift is divided by it
    (exactly: the scales are powers of two), so the result is bit-equal."""
    before = _two(CONV1_BN_RELU_CONV2, POW2)
    with PassContext(disabled=["BackwardFoldScaleAxis"]):
        after = run_pass("FoldScaleAxis", before)
    assert dict(op_counts(after)) == {"nn.conv2d": 2, "nn.bias_add": 1, "nn.relu": 1, "add": 1}
    x = _f32(1, 4, 6, 6)
    np.testing.assert_array_equal(aot.interpret(after, x), aot.interpret(before, x))


def test_forward_picks_up_what_backward_cannot():
    """conv1's output is also returned, so its scale cannot move backwards
    into it; the scaled value feeds only conv2, so it moves forwards."""
    body = ("%0 = nn.conv2d(%x, %w1, padding=[1, 1]);\n"
            "  (nn.conv2d(nn.relu(multiply(%0, %s)), %w2), %0)")
    before = _two(body, np.abs(_f32(8, 1, 1)) + 0.1)
    with PassContext(disabled=["ForwardFoldScaleAxis"]):
        assert op_counts(run_pass("FoldScaleAxis", before))["multiply"] == 1
    after = run_pass("FoldScaleAxis", before)
    assert "multiply" not in op_counts(after)
    x = _f32(1, 4, 6, 6)
    for got, want in zip(aot.interpret(after, x), aot.interpret(before, x)):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_options_reach_both_directions():
    """inexact_divide on FoldScaleAxis: a divide after conv1 folds backwards
    into it, and (conv1's output being used twice) a divide before conv2
    forwards into that one; by default neither (1/3 and 1/5 are rounded)."""
    body = ("%0 = nn.conv2d(%x, %w1, padding=[1, 1]);\n"
            "  (nn.conv2d(divide(%0, %t), %w2), nn.relu(divide(nn.conv2d(%x, %w1), %s)))")
    s, t = np.full((8, 1, 1), 3.0, np.float32), np.full((8, 1, 1), 5.0, np.float32)
    params = {"w1": _f32(8, 4, 3, 3), "b1": _f32(8), "s": s, "t": t, "w2": _f32(2, 8, 1, 1)}
    text = TWO.replace("@BODY@", body)
    before = aot.infer_types(bind_params(aot.infer_types(aot.parse(text)), params, "main"))
    assert op_counts(run_pass("FoldScaleAxis", before))["divide"] == 2
    with PassContext(options={"FoldScaleAxis": {"inexact_divide": True}}):
        after = run_pass("FoldScaleAxis", before)
    assert "divide" not in op_counts(after)
    x = _f32(1, 4, 6, 6)
    for got, want in zip(aot.interpret(after, x), aot.interpret(before, x)):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_fold_scale_axis_function_is_the_composite():
    before = _two(CONV1_BN_RELU_CONV2, _f32(8, 1, 1))
    from aot.ir.structural import assert_structural_equal
    assert_structural_equal(fold_scale_axis(before), run_pass("FoldScaleAxis", before))


# A fold rewrites a node into a new one; the new node is used wherever the
# old one was.  Folding a scale or shift into it again when it has two uses
# would leave the old layer for the other use and compute it twice (the
# classic exporter's Hardswish at opset 13: Gemm -> HardSigmoid (multiply by
# 1/6, add 1/2) and Mul of the Gemm's output with that).
SHARED = [
    ("shift then scale of a shared layer (Hardswish)",
     "%0 = add(@LAYER@, %t);\n  %1 = add(multiply(%0, %s), 0.5f);\n"
     "  multiply(%0, clip(%1, a_min=0f, a_max=1f))"),
    ("shift of a shared layer",
     "%0 = add(@LAYER@, %t);\n  add(add(%0, %t), %0)"),
    ("scale of a shared scaled layer",
     "%0 = multiply(@LAYER@, %s);\n  add(multiply(%0, %s), %0)"),
    ("forward fold of a layer whose output is shared and scaled",
     "%0 = nn.conv2d(multiply(%x, %s4), %w);\n  add(multiply(%0, %s), %0)"),
]


@pytest.mark.parametrize("body", [b for _, b in SHARED], ids=[n for n, _ in SHARED])
def test_no_layer_is_duplicated(body):
    text = CONV.replace("%t: Tensor[(8, 1, 1), float32])",
                        "%t: Tensor[(8, 1, 1), float32], %s4: Tensor[(4, 1, 1), float32])")
    text = text.replace("@BODY@", body.replace("@LAYER@", CONV_CALL))
    params = {"w": _f32(8, 4, 3, 3), "b": _f32(8), "s": np.abs(_f32(8, 1, 1)) + 0.5,
              "t": _f32(8, 1, 1), "s4": np.abs(_f32(4, 1, 1)) + 0.5}
    before, after = _fold(text, params)
    assert op_counts(after)["nn.conv2d"] == op_counts(before)["nn.conv2d"] == 1
    x = _f32(1, 4, 6, 6)
    np.testing.assert_allclose(aot.interpret(after, x), aot.interpret(before, x),
                               rtol=1e-5, atol=1e-5)


def test_onnx_hardswish_after_gemm_keeps_one_dense():
    """The defect as found: MobileNetV3-small's 576x1024 dense layer ran twice."""
    pytest.importorskip("onnx")
    from onnx import TensorProto, helper, numpy_helper
    w = numpy_helper.from_array(_f32(4, 8), "W")
    b = numpy_helper.from_array(_f32(4), "B")
    nodes = [helper.make_node("Gemm", ["x", "W", "B"], ["y"], transB=1),
             helper.make_node("HardSigmoid", ["y"], ["h"], alpha=1 / 6, beta=0.5),
             helper.make_node("Mul", ["y", "h"], ["z"])]
    graph = helper.make_graph(nodes, "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8])],
                              [helper.make_tensor_value_info("z", TensorProto.FLOAT, [1, 4])],
                              [w, b])
    mod = aot.from_onnx(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]))
    for name in ("InferType", "SimplifyInference", "FoldConstant", "FoldScaleAxis"):
        mod = run_pass(name, mod)
    assert op_counts(mod)["nn.dense"] == 1
