"""ONNX QDQ graphs of a 3-D MatMul and of ConvTranspose: FakeQuantizationToInteger
turns them into ``qnn.batch_matmul`` / ``qnn.conv2d_transpose`` with the
bias and requantization fused, and the compiled integer C (one build for
all cases) is compared with onnxruntime (graph optimisations off: its float
QDQ execution).

Agreement asked for: at most one quantization step anywhere, at least 90%
of the elements exact.  onnxruntime dequantizes, sums float32 products in
its own order and quantizes ``x / scale`` rounding half to even; we sum the
integers exactly and requantize in fixed point (ties upward), so an output
whose real value lies within float rounding of a step boundary can land one
step away (measured on these cases: 1056 of 1056 elements exact; a wrong zero point, layout
or transposition is many steps off everywhere).  The interpreter's result
of the rewritten module must equal the C bit for bit.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")

import aot  # noqa: E402
from aot.ir.expr import Call, Function, Op, Tuple  # noqa: E402
from aot.ir.module import IRModule  # noqa: E402
from aot.ir.types import TensorType  # noqa: E402
from aot.ir.visitor import post_order  # noqa: E402
from aot.passes.manager import run_pass  # noqa: E402
from onnx import TensorProto, helper  # noqa: E402
from onnx_helpers import run_ort  # noqa: E402

ONNX_TYPES = {np.dtype(np.int8): TensorProto.INT8, np.dtype(np.uint8): TensorProto.UINT8}


def qdq_model(kind: str, x_shape, w: np.ndarray, attrs: dict, act, w_q, out_q,
              bias: np.ndarray | None = None, w_axis: int | None = None):
    """quantize(x) -> dequantize -> op(., dequantize(w)) [+ bias] -> quantize ->
    dequantize, with activation parameters ``act``/``out_q`` ((scale, zp))."""
    zdt = np.asarray(act[1]).dtype
    inits = [
        helper.make_tensor("xs", TensorProto.FLOAT, [], [act[0]]),
        helper.make_tensor("xz", ONNX_TYPES[zdt], [], [int(act[1])]),
        helper.make_tensor("ys", TensorProto.FLOAT, [], [out_q[0]]),
        helper.make_tensor("yz", ONNX_TYPES[zdt], [], [int(out_q[1])]),
        onnx.numpy_helper.from_array(w, "wq"),
        onnx.numpy_helper.from_array(np.asarray(w_q[0], np.float32), "ws"),
        onnx.numpy_helper.from_array(np.asarray(w_q[1], w.dtype), "wz"),
    ]
    w_attrs = {} if w_axis is None else {"axis": w_axis}
    nodes = [helper.make_node("QuantizeLinear", ["x", "xs", "xz"], ["xq"]),
             helper.make_node("DequantizeLinear", ["xq", "xs", "xz"], ["xf"]),
             helper.make_node("DequantizeLinear", ["wq", "ws", "wz"], ["wf"], **w_attrs)]
    op_inputs = ["xf", "wf"]
    if bias is not None:
        inits.append(onnx.numpy_helper.from_array(bias, "b"))
        op_inputs.append("b")
    nodes += [helper.make_node(kind, op_inputs, ["yf"], **attrs),
              helper.make_node("QuantizeLinear", ["yf", "ys", "yz"], ["yq"]),
              helper.make_node("DequantizeLinear", ["yq", "ys", "yz"], ["y"])]
    graph = helper.make_graph(nodes, kind.lower(),
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, x_shape)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                              inits)
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    return onnx.shape_inference.infer_shapes(m)


def _weights(rng, shape, dtype=np.int8) -> np.ndarray:
    info = np.iinfo(dtype)
    return rng.integers(int(info.min) + 1, int(info.max), shape).astype(dtype)


def cases():
    rng = np.random.default_rng(15)
    out = {}
    out["matmul3d_int8"] = qdq_model(
        "MatMul", [2, 3, 8], _weights(rng, (2, 8, 5)), {}, (0.05, np.int8(3)),
        (0.02, 0), (0.3, np.int8(-4)))
    out["matmul3d_uint8_broadcast"] = qdq_model(
        "MatMul", [3, 4, 6], _weights(rng, (1, 6, 7), np.uint8), {}, (0.04, np.uint8(120)),
        (0.01, 130), (0.15, np.uint8(128)))
    out["conv_transpose_int8"] = qdq_model(
        "ConvTranspose", [1, 3, 4, 5], _weights(rng, (3, 2, 3, 3)),
        {"strides": [2, 2], "pads": [1, 1, 1, 1]}, (0.05, np.int8(-2)),
        (0.03, 0), (0.2, np.int8(5)), bias=rng.normal(0, 0.3, 2).astype(np.float32))
    out["conv_transpose_per_channel"] = qdq_model(
        "ConvTranspose", [1, 2, 3, 3], _weights(rng, (2, 4, 2, 2)),
        {"strides": [2, 1], "output_padding": [1, 0]}, (0.05, np.int8(0)),
        (rng.uniform(0.01, 0.04, 4).astype(np.float32), np.zeros(4, np.int8)),
        (0.1, np.int8(-10)), bias=rng.normal(0, 0.3, 4).astype(np.float32), w_axis=1)
    return out


CASES = cases()


def float_ops(mod: IRModule) -> list[str]:
    """Operators computing a float tensor."""
    names = []
    for n in post_order(mod["main"]):
        if isinstance(n, Call) and isinstance(n.op, Op):
            t = n.checked_type
            if isinstance(t, TensorType) and t.dtype.is_float:
                names.append(n.op.name)
    return names


def inputs(name: str, seed: int) -> np.ndarray:
    shape = [d.dim_value for d in
             CASES[name].graph.input[0].type.tensor_type.shape.dim]
    return np.random.default_rng(seed).uniform(-6, 6, shape).astype(np.float32)


@pytest.mark.parametrize("name", sorted(CASES))
def test_rewritten_to_integer_products(name):
    mod = aot.from_onnx(CASES[name])
    after = run_pass("FakeQuantizationToInteger", mod)
    text = str(after)
    anchor = "qnn.batch_matmul" if "matmul" in name else "qnn.conv2d_transpose"
    assert anchor in text, text
    # the product computes in integers (the input's quantize and the
    # output's dequantize stay float)
    floats = float_ops(after)
    assert not {"nn.batch_matmul", "nn.conv2d_transpose", "nn.bias_add"} & set(floats), text


def test_c_matches_onnxruntime():
    names = sorted(CASES)
    mods = [aot.from_onnx(CASES[n]) for n in names]
    params, bodies = [], []
    for m in mods:
        params.extend(m["main"].params)
        bodies.append(m["main"].body)
    packed = IRModule()
    packed.add("main", Function(tuple(params), Tuple(tuple(bodies))))
    packed = aot.infer_types(packed)
    out = Path(tempfile.mkdtemp(prefix="aot-onnx-qdq-products-"))
    fn = aot.load(aot.compile(packed, out, name="qdq_products"))
    rewritten = [run_pass("FakeQuantizationToInteger", m) for m in mods]
    diffs: dict[str, list[np.ndarray]] = {n: [] for n in names}
    for seed in range(3):
        xs = [inputs(n, seed) for n in names]
        results = fn(*xs)
        models = [CASES[n] for n in names]
        for name, m, x, got, rw in zip(names, models, xs, results, rewritten):
            want = run_ort(m, {"x": x})[0]
            np.testing.assert_array_equal(got, aot.interpret(rw, x), err_msg=f"{name}: C vs interp")
            scale = float(onnx.numpy_helper.to_array(
                next(i for i in m.graph.initializer if i.name == "ys")))
            diffs[name].append(np.rint(np.abs(got - want) / scale).reshape(-1))
    for name, parts in diffs.items():
        d = np.concatenate(parts)
        exact = float(np.mean(d == 0))
        assert d.max() <= 1, f"{name}: off by {d.max()} steps ({exact:.1%} exact)"
        assert exact >= 0.9, f"{name}: only {exact:.1%} exact"
