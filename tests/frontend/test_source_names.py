"""Source names end to end: the imported model's node names (ONNX node
names, TFLite output tensors) ride on the expressions' spans through the
passes into each kernel's C comment and metadata.json's kernel entries."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import aot
from aot.diagnostics import Diagnostic, node_span
from aot.ir.printer import print_module

onnx = pytest.importorskip("onnx")
from onnx import helper  # noqa: E402

from onnx_helpers import model  # noqa: E402

TFLITE_MODELS = Path(__file__).resolve().parent / "tflite_models"


def conv_bn_relu_twice() -> onnx.ModelProto:
    """Two identical conv -> batch norm -> relu layers (one shared kernel)
    and a softmax; the second relu has no name (exporters often leave it
    empty): it is known by its output."""
    rng = np.random.default_rng(0)
    inits = {"w1": rng.standard_normal((4, 4, 3, 3)).astype(np.float32),
             "w2": rng.standard_normal((4, 4, 3, 3)).astype(np.float32)}
    for k in (1, 2):
        inits[f"g{k}"] = rng.uniform(0.5, 1.5, 4).astype(np.float32)
        inits[f"b{k}"] = rng.standard_normal(4).astype(np.float32)
        inits[f"m{k}"] = rng.standard_normal(4).astype(np.float32)
        inits[f"v{k}"] = rng.uniform(0.5, 1.5, 4).astype(np.float32)
    nodes = [
        helper.make_node("Conv", ["x", "w1"], ["c1"], name="conv1", pads=[1, 1, 1, 1]),
        helper.make_node("BatchNormalization", ["c1", "g1", "b1", "m1", "v1"], ["n1"],
                         name="bn1"),
        helper.make_node("Relu", ["n1"], ["r1"], name="relu1"),
        helper.make_node("Conv", ["r1", "w2"], ["c2"], name="conv2", pads=[1, 1, 1, 1]),
        helper.make_node("BatchNormalization", ["c2", "g2", "b2", "m2", "v2"], ["n2"],
                         name="bn2"),
        helper.make_node("Relu", ["n2"], ["relu2_out"]),
        helper.make_node("Flatten", ["relu2_out"], ["f"], name="flatten"),
        helper.make_node("Softmax", ["f"], ["y"], name="softmax"),
    ]
    return model(nodes, {"x": (np.float32, (1, 4, 6, 6))}, ["y"], inits)


def compiled(tmp_path: Path, mod, name: str) -> tuple[dict, str]:
    art = aot.compile(mod, tmp_path / name, name=name, build=False)
    meta = json.loads((art.root / "metadata.json").read_text())
    return meta, (art.root / "src" / f"{name}.c").read_text()


def test_onnx_node_names_reach_the_kernels(tmp_path):
    mod = aot.from_onnx(conv_bn_relu_twice(), source_name="net.onnx")
    meta, c_text = compiled(tmp_path, mod, "net")
    # the two layers lower to one kernel, which lists both layers' nodes
    # (batch norm folded into the convolution's weights and bias)
    assert [(k["ops"], k["nodes"]) for k in meta["kernels"]] == [
        (["nn.conv2d", "nn.bias_add", "nn.relu"],
         ["conv1", "bn1", "relu1", "conv2", "bn2", "relu2_out"]),
        (["reshape", "nn.softmax"], ["flatten", "softmax"])]
    for kernel in meta["kernels"]:
        assert kernel["nodes"], kernel
        assert f"model nodes: {', '.join(kernel['nodes'])}" in c_text


def test_relay_text_has_no_model_nodes(tmp_path):
    mod = aot.infer_types(aot.parse(
        "def @main(%x: Tensor[(4), float32]) { nn.relu(%x + 1f) }", source_name="p.relay"))
    meta, c_text = compiled(tmp_path, mod, "p")
    assert [k["nodes"] for k in meta["kernels"]] == [[]]
    assert "model nodes:" not in c_text


def test_tflite_operators_are_named_by_their_outputs(tmp_path):
    pytest.importorskip("tflite")
    mod = aot.from_tflite(str(TFLITE_MODELS / "cnn_i8.tflite"))
    meta, c_text = compiled(tmp_path, mod, "cnn")
    assert [k["nodes"] for k in meta["kernels"]] == [["conv1"], ["dw1"], ["pool1"],
                                                     ["flat", "logits"]]
    assert "model nodes: flat, logits" in c_text


def test_the_generated_c_stays_deterministic(tmp_path):
    first = compiled(tmp_path / "a", aot.from_onnx(conv_bn_relu_twice()), "net")
    second = compiled(tmp_path / "b", aot.from_onnx(conv_bn_relu_twice()), "net")
    assert first == second


def test_a_node_span_names_the_node_in_diagnostics():
    span = node_span("net.onnx", "conv1")
    assert str(span) == "net.onnx: node 'conv1'"
    assert Diagnostic("bad weights", span).render() == "net.onnx: node 'conv1': error: bad weights"
    assert span.merge(node_span("net.onnx", "relu1")) == span


def test_a_loaded_model_takes_inputs_by_the_models_own_names(tmp_path):
    """An ONNX graph input whose name is not a C identifier (``input.1``,
    as torch's exporter writes them) is the C parameter ``input_1``; the
    loaded model takes it by either name, and metadata.json keeps both."""
    graph = helper.make_graph(
        [helper.make_node("Sub", ["input.1", "bias-2"], ["y"])], "g",
        [helper.make_tensor_value_info("input.1", onnx.TensorProto.FLOAT, [2]),
         helper.make_tensor_value_info("bias-2", onnx.TensorProto.FLOAT, [2])],
        [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [2])])
    mod = aot.from_onnx(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]))
    art = aot.compile(mod, tmp_path / "a", name="named")
    meta = json.loads((art.root / "metadata.json").read_text())
    assert [(i["name"], i["source_name"]) for i in meta["inputs"]] == \
        [("input_1", "input.1"), ("bias_2", "bias-2")]
    run = aot.load(art)
    x, b = np.array([3, 5], np.float32), np.array([1, 2], np.float32)
    for got in (run(x, b), run(**{"input.1": x, "bias-2": b}), run(input_1=x, bias_2=b),
                run(x, **{"bias-2": b})):
        np.testing.assert_array_equal(got, [2, 3])


def two_outputs() -> onnx.ModelProto:
    """Two graph outputs, listed in another order than computed, one with
    a name that is no C identifier."""
    graph = helper.make_graph(
        [helper.make_node("Relu", ["input.1"], ["logits:0"], name="relu"),
         helper.make_node("Softmax", ["logits:0"], ["probs"], name="softmax")], "g",
        [helper.make_tensor_value_info("input.1", onnx.TensorProto.FLOAT, [2, 3])],
        [helper.make_tensor_value_info("probs", onnx.TensorProto.FLOAT, [2, 3]),
         helper.make_tensor_value_info("logits:0", onnx.TensorProto.FLOAT, [2, 3])])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])


def test_a_loaded_model_returns_outputs_by_the_models_own_names(tmp_path):
    mod = aot.from_onnx(two_outputs())
    assert mod["main"].attrs.get("output_names") == ("probs", "logits:0")
    art = aot.compile(mod, tmp_path / "a", name="two")
    meta = json.loads((art.root / "metadata.json").read_text())
    assert [(o["name"], o["source_name"]) for o in meta["outputs"]] == \
        [("out0", "probs"), ("out1", "logits:0")]
    run = aot.load(art)
    x = np.array([[1, -2, 3], [0.5, 4, -1]], np.float32)
    relu = np.maximum(x, 0)
    softmax = np.exp(relu) / np.exp(relu).sum(axis=1, keepdims=True)
    out = run(x)
    probs, logits = out                       # still a tuple, by position
    assert isinstance(out, tuple) and len(out) == 2
    np.testing.assert_array_equal(logits, relu)
    np.testing.assert_allclose(probs, softmax, rtol=1e-6)
    assert out["probs"] is out[0] and out["logits:0"] is out[1]
    assert out["out1"] is out[1]              # the C name too
    assert out.names() == ["probs", "logits:0", "out0", "out1"]
    with pytest.raises(KeyError, match="no output named `logit`.*probs, logits:0"):
        out["logit"]
    assert run.output_names == ["probs", "logits:0"]
    named = run.named(**{"input.1": x})
    assert list(named) == ["probs", "logits:0"]
    np.testing.assert_array_equal(named["probs"], probs)
    np.testing.assert_array_equal(named["logits:0"], logits)


def test_a_single_output_is_an_array_and_named_by_its_graph_name(tmp_path):
    graph = helper.make_graph(
        [helper.make_node("Neg", ["x"], ["minus_x"])], "g",
        [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [2])],
        [helper.make_tensor_value_info("minus_x", onnx.TensorProto.FLOAT, [2])])
    mod = aot.from_onnx(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]))
    run = aot.load(aot.compile(mod, tmp_path / "a", name="one"))
    x = np.array([1, -2], np.float32)
    np.testing.assert_array_equal(run(x), -x)
    assert list(run.named(x)) == ["minus_x"]


def test_relay_text_names_outputs_with_the_output_names_attribute(tmp_path):
    text = ('def @main(%x: Tensor[(2), float32], output_names=["twice", "square"]) '
            '{ (%x + %x, %x * %x) }')
    mod = aot.parse(text)
    assert aot.parse(print_module(mod))["main"].attrs.get("output_names") == ("twice", "square")
    run = aot.load(aot.compile(mod, tmp_path / "a", name="rel"))
    got = run.named(np.array([3, 4], np.float32))
    assert list(got) == ["twice", "square"]
    np.testing.assert_array_equal(got["square"], [9, 16])
    # a count that does not match the outputs names none of them
    mod = aot.parse('def @main(%x: Tensor[(2), float32], output_names=["only"]) { (%x, %x) }')
    assert aot.load(aot.compile(mod, tmp_path / "b", name="rel")).output_names == \
        ["out0", "out1"]


def test_tflite_outputs_are_named_by_their_tensors(tmp_path):
    pytest.importorskip("tflite")
    mod = aot.from_tflite(str(TFLITE_MODELS / "cnn_i8.tflite"))
    meta, _ = compiled(tmp_path, mod, "cnn")
    assert [o["source_name"] for o in meta["outputs"]] == ["logits"]


def test_a_program_backend_result_is_named_too(tmp_path):
    """A whole-language program's tuple result: tensor leaves by the
    ``output_names`` attribute, other leaves by their C names."""
    # a recursion whose depth is a run-time count (an if over tensors alone
    # is a static if of the dataflow backend)
    text = ('def @rep(%n: int32, %x: Tensor[(2), float32]) -> Tensor[(2), float32] {\n'
            '  if (%n <= 0) { %x } else { @rep(%n - 1, negative(%x)) }\n}\n'
            'def @main(%x: Tensor[(2), float32], %n: int32, output_names=["y", "n"]) '
            '{ (@rep(%n, %x), 7) }')
    art = aot.compile(aot.parse(text), tmp_path / "a", name="prog")
    assert json.loads((art.root / "metadata.json").read_text())["backend"] == "program"
    run = aot.load(art)
    x = np.array([1, 2], np.float32)
    out = run(x, np.array(1, np.int32))
    np.testing.assert_array_equal(out["y"], [-1, -2])
    assert int(out["n"]) == 7
    assert list(run.named(x, np.array(2, np.int32))) == ["y", "n"]
    np.testing.assert_array_equal(run.named(x, np.array(2, np.int32))["y"], x)
