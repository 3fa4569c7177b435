"""Graph patterns of real exporters, built by hand with onnx.helper and
checked against onnxruntime: PyTorch's classic exporter (Shape -> Gather
-> Unsqueeze -> Concat -> Reshape), its dynamo exporter (opset 18: axes as
inputs, Split with num_outputs, Pad with axes), a TensorFlow-style NHWC
graph, and one end-to-end compile of a small conv net to C."""

from __future__ import annotations

import pytest

pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")

import numpy as np  # noqa: E402
from onnx import TensorProto  # noqa: E402

import aot  # noqa: E402
from aot.ir.expr import Call, Constant, Var  # noqa: E402
from aot.ir.visitor import post_order  # noqa: E402
from onnx_helpers import check, model, node, rand, run_ort  # noqa: E402


def i64(values) -> np.ndarray:
    return np.asarray(values, dtype=np.int64)


def torch_flatten_net(opset: int = 13):
    """conv -> relu -> x.view(x.size(0), -1) -> linear, as torch.onnx.export
    (classic) writes it, with Constant nodes for the indices."""
    nodes = [
        node("Conv", ["input", "conv.weight", "conv.bias"], ["/conv/Conv_output_0"],
             name="/conv/Conv", pads=[1, 1, 1, 1], kernel_shape=[3, 3]),
        node("Relu", ["/conv/Conv_output_0"], ["/relu/Relu_output_0"], name="/relu/Relu"),
        node("Shape", ["/relu/Relu_output_0"], ["/Shape_output_0"], name="/Shape"),
        node("Constant", [], ["/Constant_output_0"], name="/Constant",
             value=_tensor(np.asarray(0, np.int64))),
        node("Gather", ["/Shape_output_0", "/Constant_output_0"], ["/Gather_output_0"],
             name="/Gather", axis=0),
        node("Constant", [], ["/Constant_1_output_0"], name="/Constant_1",
             value=_tensor(i64([0]))),
        node("Unsqueeze", ["/Gather_output_0", "/Constant_1_output_0"],
             ["/Unsqueeze_output_0"], name="/Unsqueeze"),
        node("Constant", [], ["/Constant_2_output_0"], name="/Constant_2",
             value=_tensor(i64([-1]))),
        node("Concat", ["/Unsqueeze_output_0", "/Constant_2_output_0"], ["/Concat_output_0"],
             name="/Concat", axis=0),
        node("Reshape", ["/relu/Relu_output_0", "/Concat_output_0"], ["/Reshape_output_0"],
             name="/Reshape"),
        node("Gemm", ["/Reshape_output_0", "fc.weight", "fc.bias"], ["output"], name="/fc/Gemm",
             alpha=1.0, beta=1.0, transB=1),
    ]
    inits = {"conv.weight": rand((4, 3, 3, 3), seed=1), "conv.bias": rand((4,), seed=2),
             "fc.weight": rand((5, 4 * 6 * 6), seed=3), "fc.bias": rand((5,), seed=4)}
    return model(nodes, {"input": (np.float32, ["batch_size", 3, 6, 6])}, ["output"], inits,
                 opset=opset)


def _tensor(a: np.ndarray):
    from onnx import numpy_helper
    return numpy_helper.from_array(a)


def test_torch_shape_gather_concat_reshape():
    m = torch_flatten_net()
    x = rand((2, 3, 6, 6))
    check(m, {"input": x}, input_shapes={"input": (2, 3, 6, 6)})
    mod = aot.from_onnx(m, input_shapes={"input": (2, 3, 6, 6)})
    # the shape computation folded away: one reshape with an explicit shape
    calls = [n for n in post_order(mod["main"].body) if isinstance(n, Call)]
    names = sorted(n.op.name for n in calls)
    assert names == ["add", "nn.bias_add", "nn.conv2d", "nn.dense", "nn.relu", "reshape"]
    reshape = next(n for n in calls if n.op.name == "reshape")
    assert reshape.attrs.newshape == (2, 144)


def test_torch_dynamo_opset18_patterns():
    """ReduceMean with axes as an input, Split with num_outputs, Pad with an
    axes input, Unsqueeze/Squeeze with axes inputs."""
    nodes = [
        node("ReduceMean", ["x", "axes_hw"], ["mean"], keepdims=1),
        node("Sub", ["x", "mean"], ["centered"]),
        node("Split", ["centered"], ["s0", "s1", "s2"], axis=1, num_outputs=3),
        node("Pad", ["s0", "pads", "pad_value", "pad_axes"], ["p0"], mode="constant"),
        node("ReduceSum", ["s1", "axes_c"], ["r1"], keepdims=0),
        node("Unsqueeze", ["r1", "axes_c"], ["u1"]),
        node("Mul", ["u1", "s2"], ["m2"]),
        node("ReduceMax", ["m2", "axes_last"], ["mx"], keepdims=1),
        node("Squeeze", ["mx", "axes_last"], ["y1"]),
    ]
    inits = {"axes_hw": i64([2, 3]), "axes_c": i64([1]), "axes_last": i64([-1]),
             "pads": i64([1, 2, 0, 1]), "pad_value": np.asarray(0.5, np.float32),
             "pad_axes": i64([2, 3])}
    x = rand((2, 7, 4, 5))
    check(model(nodes, {"x": x}, ["p0", "y1"], inits, opset=18), {"x": x})


def test_tf_style_nhwc_graph():
    """Transpose NHWC -> NCHW, Conv, BatchNormalization, Relu6 as Clip,
    depthwise Conv, Transpose back, mean over H and W."""
    nodes = [
        node("Transpose", ["input_1"], ["nchw"], perm=[0, 3, 1, 2]),
        node("Conv", ["nchw", "w1", "b1"], ["c1"], strides=[2, 2], auto_pad="SAME_UPPER"),
        node("BatchNormalization", ["c1", "g", "be", "mu", "var"], ["bn"], epsilon=1e-3),
        node("Clip", ["bn", "zero", "six"], ["relu6"]),
        node("Conv", ["relu6", "dw"], ["c2"], group=4, pads=[1, 1, 1, 1]),
        node("Transpose", ["c2"], ["nhwc"], perm=[0, 2, 3, 1]),
        node("ReduceMean", ["nhwc"], ["Identity"], axes=[1, 2], keepdims=0),
    ]
    inits = {"w1": rand((4, 3, 3, 3), seed=1), "b1": rand((4,), seed=2),
             "g": rand((4,), seed=3), "be": rand((4,), seed=4), "mu": rand((4,), seed=5),
             "var": rand((4,), seed=6, low=0.5, high=2), "zero": np.asarray(0, np.float32),
             "six": np.asarray(6, np.float32), "dw": rand((4, 1, 3, 3), seed=7)}
    x = rand((1, 9, 9, 3))
    check(model(nodes, {"input_1": (np.float32, ["unk__1", 9, 9, 3])}, ["Identity"], inits),
          {"input_1": x}, input_shapes={"input_1": (1, 9, 9, 3)})


def test_gemm_fc_autoencoder_shape():
    """An MLPerf-Tiny style fully connected stack with BatchNorm on 2-d."""
    nodes, inits = [], {}
    prev, width = "x", 16
    for i, out in enumerate([8, 4, 8, 16]):
        nodes += [node("Gemm", [prev, f"w{i}", f"b{i}"], [f"g{i}"], transB=1),
                  node("BatchNormalization", [f"g{i}", f"s{i}", f"o{i}", f"m{i}", f"v{i}"],
                       [f"n{i}"]),
                  node("Relu", [f"n{i}"], [f"r{i}"])]
        inits.update({f"w{i}": rand((out, width), seed=i), f"b{i}": rand((out,), seed=10 + i),
                      f"s{i}": rand((out,), seed=20 + i), f"o{i}": rand((out,), seed=30 + i),
                      f"m{i}": rand((out,), seed=40 + i),
                      f"v{i}": rand((out,), seed=50 + i, low=0.5, high=1.5)})
        prev, width = f"r{i}", out
    x = rand((3, 16))
    check(model(nodes, {"x": x}, [prev], inits), {"x": x}, rtol=1e-4, atol=1e-4)


def test_constant_subgraph_stays_constant():
    """A ConstantOfShape/Range chain used as data folds to constant leaves:
    no parameter other than the graph input reaches the computation."""
    nodes = [node("Shape", ["x"], ["s"]),
             node("ConstantOfShape", ["s"], ["ones"], value=_tensor(np.asarray([1.0],
                                                                               np.float32))),
             node("Range", ["start", "limit", "delta"], ["r"]),
             node("Cast", ["r"], ["rf"], to=TensorProto.FLOAT),
             node("Mul", ["ones", "rf"], ["w"]),
             node("Add", ["x", "w"], ["y"])]
    inits = {"start": np.asarray(0, np.int64), "limit": np.asarray(4, np.int64),
             "delta": np.asarray(1, np.int64)}
    x = rand((2, 4))
    m = model(nodes, {"x": x}, ["y"], inits)
    check(m, {"x": x})
    mod = aot.from_onnx(m)
    leaves = [n for n in post_order(mod["main"].body) if isinstance(n, (Var, Constant))]
    assert [n.name_hint for n in leaves if isinstance(n, Var)] == ["x"]


def test_compile_and_load_conv_net(tmp_path):
    m = torch_flatten_net()
    mod = aot.from_onnx(m, input_shapes={"input": (1, 3, 6, 6)})
    art = aot.compile(mod, tmp_path / "net", name="net")
    fn = aot.load(art)
    x = rand((1, 3, 6, 6), seed=9)
    want = run_ort(m, {"input": x})[0]
    np.testing.assert_allclose(fn(x), want, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(fn(x), aot.interpret(mod, x), rtol=1e-5, atol=1e-5)
