"""FakeQuantizationToInteger on an ONNX average quantized with its
operand's own parameters (what onnxruntime's quantizer makes of
AveragePool and GlobalAveragePool): ONNX's QuantizeLinear rounds half to
even, so the integer program rounds the window average ``S / n`` (of
``q - z``) half to even too (``floor_divide``/``floor_mod``) and adds
``z``: the exact QDQ result, checked against numpy on inputs full of exact
ties, and against onnxruntime's float QDQ execution (graph optimisations
off) with a power-of-two scale, where its float arithmetic is exact (with
another scale it computes the tie in float and lands on either side of
it).  onnxruntime's default session runs QLinearAveragePool, which rounds
the *raw* average ``S / n + z`` half to even: the same integers when ``z``
is even (ResNet-8's pool after a ReLU has ``z = -128``), the other way on
ties when ``z`` is odd (there it differs from its own float QDQ
execution; the test checks both facts).  It runs GlobalAveragePool in
float, which equals the integer program at every zero point.
An odd divisor has no ties and keeps ``qnn.avg_pool2d``; a ``qnn.quantize``
(TFLite) keeps TFLite's rounding (tests/passes/test_fake_quantization_to_integer.py,
case ``avg_pool2d``)."""

from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

import aot  # noqa: E402
from aot.compiler import optimize_for_c  # noqa: E402
from aot.ir.expr import Call, Op  # noqa: E402
from aot.ir.visitor import post_order  # noqa: E402

from onnx import TensorProto, helper  # noqa: E402

SCALE = 0.0625                 # 2**-4: onnxruntime's float mean is exact


def qdq_average(pool: str, kernel: int, size: int, zp: int = -4) -> onnx.ModelProto:
    """int8 input -> DequantizeLinear -> ``pool`` -> QuantizeLinear with the
    same scale and zero point -> int8 output."""
    attrs = {} if pool == "GlobalAveragePool" else {"kernel_shape": [kernel, kernel]}
    out_hw = 1 if pool == "GlobalAveragePool" else size - kernel + 1
    nodes = [helper.make_node("DequantizeLinear", ["x", "s", "z"], ["xf"]),
             helper.make_node(pool, ["xf"], ["yf"], **attrs),
             helper.make_node("QuantizeLinear", ["yf", "s", "z"], ["y"])]
    graph = helper.make_graph(
        nodes, "avg",
        [helper.make_tensor_value_info("x", TensorProto.INT8, [1, 4, size, size])],
        [helper.make_tensor_value_info("y", TensorProto.INT8, [1, 4, out_hw, out_hw])],
        [helper.make_tensor("s", TensorProto.FLOAT, [], [SCALE]),
         helper.make_tensor("z", TensorProto.INT8, [], [zp])])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])


def op_names(mod) -> set[str]:
    return {n.op.name for n in post_order(mod["main"])
            if isinstance(n, Call) and isinstance(n.op, Op)}


@pytest.mark.parametrize("zp", [-4, -3])
@pytest.mark.parametrize("pool,kernel,size", [("AveragePool", 2, 6), ("AveragePool", 4, 8),
                                              ("GlobalAveragePool", 0, 8)])
def test_even_divisor_rounds_ties_to_even(pool, kernel, size, zp):
    model = qdq_average(pool, kernel, size, zp)
    mod = optimize_for_c(aot.from_onnx(model))
    names = op_names(mod)
    assert {"floor_divide", "floor_mod"} <= names, names
    assert not names & {"nn.avg_pool2d", "nn.global_avg_pool2d", "divide", "round"}, names
    sessions = []
    for level in (ort.GraphOptimizationLevel.ORT_DISABLE_ALL,
                  ort.GraphOptimizationLevel.ORT_ENABLE_ALL):
        options = ort.SessionOptions()
        options.graph_optimization_level = level
        sessions.append(ort.InferenceSession(model.SerializeToString(), options,
                                             providers=["CPUExecutionProvider"]))
    n = size * size if pool == "GlobalAveragePool" else kernel * kernel
    ties = 0
    for seed in range(6):
        x = np.random.default_rng(seed).integers(-128, 128, (1, 4, size, size)).astype(np.int8)
        if seed == 0:
            x[...] = np.int8(-128)
            x[..., 0, 0] = np.int8(-128 + n // 2)  # a tie at the bottom of the range
        shifted = x.astype(np.int64) - zp
        if pool == "GlobalAveragePool":
            sums = shifted.sum(axis=(2, 3), keepdims=True)
        else:
            sums = np.lib.stride_tricks.sliding_window_view(
                shifted, (kernel, kernel), axis=(2, 3)).sum(axis=(-2, -1))
        exact = np.clip(np.round(sums / n) + zp, -128, 127)   # np.round: half to even
        got = np.asarray(aot.interpret(mod, x))
        np.testing.assert_array_equal(got, exact)
        (want,) = sessions[0].run(None, {"x": x})
        np.testing.assert_array_equal(got, want)
        (fused,) = sessions[1].run(None, {"x": x})
        if pool == "AveragePool":
            raw = np.clip(np.round(sums / n + zp), -128, 127)
            np.testing.assert_array_equal(fused, raw)
        if zp % 2 == 0 or pool != "AveragePool":     # GlobalAveragePool stays float
            np.testing.assert_array_equal(got, fused)
        ties += int((sums % n == n // 2).sum())
    assert ties > 0                                 # the cases this is about occurred


def test_odd_divisor_keeps_qnn_avg_pool():
    mod = optimize_for_c(aot.from_onnx(qdq_average("AveragePool", 3, 7)))
    names = op_names(mod)
    assert "qnn.avg_pool2d" in names and "floor_divide" not in names, names
