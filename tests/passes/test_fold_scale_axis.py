"""FoldScaleAxis: per-channel scales and shifts after constant-weight
convolutions and dense layers fold into the weights and one bias_add;
everything else is left alone.  Results are compared with the unfolded
program through the interpreter (equal to float rounding)."""

from __future__ import annotations

import collections

import numpy as np
import pytest

import aot
from aot.ir.expr import Call, Op
from aot.ir.visitor import post_order
from aot.passes.bind_params import bind_params
from aot.passes.fold_scale_axis import fold_scale_axis

RNG = np.random.default_rng(11)


def _ops(mod) -> collections.Counter:
    return collections.Counter(n.op.name for n in post_order(mod["main"])
                               if isinstance(n, Call) and isinstance(n.op, Op))


def _fold(text: str, params: dict):
    mod = aot.infer_types(bind_params(aot.infer_types(aot.parse(text)), params, "main"))
    return mod, fold_scale_axis(mod)


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
    assert dict(_ops(after)) == ops
    x = _f32(1, 4, 6, 6)
    np.testing.assert_allclose(aot.interpret(after, x), aot.interpret(before, x),
                               rtol=1e-5, atol=1e-5)


def test_dense_scale_and_shift_fold():
    text = ("def @main(%x: Tensor[(2, 5), float32], %w: Tensor[(3, 5), float32], "
            "%s: Tensor[(3,), float32], %t: float32) {\n"
            "  add(multiply(nn.dense(%x, %w), %s), %t)\n}\n")
    params = {"w": _f32(3, 5), "s": _f32(3), "t": np.float32(0.5)}
    before, after = _fold(text, params)
    assert dict(_ops(after)) == {"nn.dense": 1, "nn.bias_add": 1}
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
    assert _ops(after)["multiply"] == _ops(before)["multiply"] == 1


def test_infinite_scale_and_nhwc_are_not_folded():
    s = np.full((8, 1, 1), np.inf, np.float32)
    params = {"w": _f32(8, 4, 3, 3), "b": _f32(8), "s": s, "t": _f32(8, 1, 1)}
    _, after = _fold(CONV.replace("@BODY@", f"multiply({CONV_CALL}, %s)"), params)
    assert _ops(after)["multiply"] == 1
    text = ("def @main(%x: Tensor[(1, 6, 6, 4), float32], %w: Tensor[(3, 3, 4, 8), float32], "
            "%s: Tensor[(8,), float32]) {\n  multiply(nn.conv2d(%x, %w, padding=[1, 1], "
            "data_layout=\"NHWC\", kernel_layout=\"HWIO\"), %s)\n}\n")
    _, after = _fold(text, {"w": _f32(3, 3, 4, 8), "s": _f32(8)})
    assert _ops(after)["multiply"] == 1


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
