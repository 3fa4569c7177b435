"""The four MLPerf Tiny reference architectures as ONNX models.

Each builder returns an ``onnx.ModelProto`` (opset 13, float32, NCHW) with
the architecture of the MLPerf Tiny v1.x reference model and fixed, seeded
random weights; nothing is downloaded, so the models say nothing about
accuracy, only about the shape of the computation:

* ``ds_cnn``            keyword spotting, input 1x1x49x10 (MFCC), 12 classes
* ``resnet8``           image classification (CIFAR-10), input 1x3x32x32, 10 classes
* ``mobilenet_v1_025``  visual wake words, input 1x3x96x96, 2 classes
* ``fc_autoencoder``    anomaly detection (ToyADMOS), input 1x640, output 1x640

Weights are He-style (normal, std sqrt(2 / fan_in)) so ReLU activations stay
O(1); every BatchNormalization gets a random but sane running mean and
variance, gamma and beta.  Convolutions pad like Keras' ``padding="same"``
(the reference models are Keras models): a stride-2 convolution over an even
size pads one more at the end than at the start.

Usage::

    python3 examples/mlperf_tiny/models.py --out DIR [ds_cnn resnet8 ...]

writes ``DIR/<name>.onnx`` and prints each model's parameter and
multiply-accumulate counts.  ``<name>_int8`` (``ds_cnn_int8``, ...) is the
same model quantized by onnxruntime's static quantizer (:func:`quantize_int8`;
needs the ``onnxruntime`` package): QDQ format, int8 activations,
per-channel int8 weights, int32 biases, calibrated on four seeded
standard-normal inputs -- the form of int8 model a user brings from
onnxruntime's tooling.  The result is deterministic for one onnxruntime
version.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path
from typing import Callable

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper, shape_inference

OPSET = 13


class GraphBuilder:
    """Accumulates nodes and seeded random initializers for one graph."""

    def __init__(self, seed: int):
        self.rng = np.random.default_rng(seed)
        self.nodes: list[onnx.NodeProto] = []
        self.initializers: list[onnx.TensorProto] = []
        self.count = 0

    def fresh(self, prefix: str) -> str:
        self.count += 1
        return f"{prefix}_{self.count}"

    def const(self, prefix: str, value: np.ndarray) -> str:
        name = self.fresh(prefix)
        self.initializers.append(numpy_helper.from_array(np.asarray(value, np.float32), name))
        return name

    def node(self, op: str, inputs: list[str], **attrs) -> str:
        out = self.fresh(op.lower())
        self.nodes.append(helper.make_node(op, inputs, [out], name=out, **attrs))
        return out

    # -- layers ---------------------------------------------------------------

    def conv(self, x: str, c_in: int, c_out: int, kernel: tuple[int, int], stride: int,
             pads: list[int], group: int = 1) -> str:
        fan_in = (c_in // group) * kernel[0] * kernel[1]
        w = self.rng.normal(0.0, np.sqrt(2.0 / fan_in), (c_out, c_in // group, *kernel))
        b = self.rng.normal(0.0, 0.05, c_out)
        return self.node("Conv", [x, self.const("w", w), self.const("b", b)],
                         kernel_shape=list(kernel), strides=[stride, stride], pads=pads,
                         group=group)

    def batch_norm(self, x: str, channels: int) -> str:
        rng = self.rng
        params = [rng.uniform(0.8, 1.2, channels),   # gamma
                  rng.normal(0.0, 0.1, channels),    # beta
                  rng.normal(0.0, 0.1, channels),    # running mean
                  rng.uniform(0.5, 1.5, channels)]   # running variance
        names = [self.const(p, v) for p, v in zip(("gamma", "beta", "mean", "var"), params)]
        return self.node("BatchNormalization", [x, *names], epsilon=1e-3)

    def relu(self, x: str) -> str:
        return self.node("Relu", [x])

    def relu6(self, x: str) -> str:
        """ReLU6 as the TFLite/Keras reference writes it: Clip(x, 0, 6)."""
        return self.node("Clip", [x, self.const("zero", np.float32(0.0)),
                                  self.const("six", np.float32(6.0))])

    def gemm(self, x: str, n_in: int, n_out: int, gain: float = 2.0) -> str:
        w = self.rng.normal(0.0, np.sqrt(gain / n_in), (n_out, n_in))
        b = self.rng.normal(0.0, 0.05, n_out)
        return self.node("Gemm", [x, self.const("w", w), self.const("b", b)], transB=1)

    def model(self, name: str, x_shape: list[int], y: str, y_shape: list[int]) -> onnx.ModelProto:
        graph = helper.make_graph(
            self.nodes, name,
            [helper.make_tensor_value_info("input", TensorProto.FLOAT, x_shape)],
            [helper.make_tensor_value_info(y, TensorProto.FLOAT, y_shape)],
            self.initializers)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)],
                                  producer_name="aot examples/mlperf_tiny")
        model.ir_version = 8
        onnx.checker.check_model(model, full_check=True)
        return model


def same_pads(size: tuple[int, int], kernel: tuple[int, int], stride: int) -> list[int]:
    """ONNX ``pads`` (h_begin, w_begin, h_end, w_end) of Keras ``padding="same"``:
    output ceil(size / stride), the odd pixel of padding at the end."""
    begin, end = [], []
    for n, k in zip(size, kernel):
        out = -(-n // stride)
        total = max((out - 1) * stride + k - n, 0)
        begin.append(total // 2)
        end.append(total - total // 2)
    return begin + end


def out_size(size: tuple[int, int], stride: int) -> tuple[int, int]:
    return (-(-size[0] // stride), -(-size[1] // stride))


# -- the four models -----------------------------------------------------------

def ds_cnn(seed: int = 0) -> onnx.ModelProto:
    """Keyword spotting DS-CNN: 10x4/2 conv, 4 depthwise-separable blocks of 64."""
    g = GraphBuilder(seed)
    size = (49, 10)
    x = g.conv("input", 1, 64, (10, 4), 2, same_pads(size, (10, 4), 2))
    size = out_size(size, 2)                                       # 25 x 5
    x = g.relu(g.batch_norm(x, 64))
    for _ in range(4):
        x = g.conv(x, 64, 64, (3, 3), 1, same_pads(size, (3, 3), 1), group=64)
        x = g.relu(g.batch_norm(x, 64))
        x = g.conv(x, 64, 64, (1, 1), 1, [0, 0, 0, 0])
        x = g.relu(g.batch_norm(x, 64))
    x = g.node("AveragePool", [x], kernel_shape=list(size))       # 1 x 64 x 1 x 1
    x = g.node("Flatten", [x])
    y = g.node("Softmax", [g.gemm(x, 64, 12, gain=1.0)])
    return g.model("ds_cnn", [1, 1, 49, 10], y, [1, 12])


def resnet8(seed: int = 1) -> onnx.ModelProto:
    """CIFAR-10 ResNet-8: a 16-channel stem and three residual stacks."""
    g = GraphBuilder(seed)
    size = (32, 32)
    x = g.relu(g.batch_norm(g.conv("input", 3, 16, (3, 3), 1, same_pads(size, (3, 3), 1)), 16))
    c_in = 16
    for c_out, stride in ((16, 1), (32, 2), (64, 2)):
        y = g.conv(x, c_in, c_out, (3, 3), stride, same_pads(size, (3, 3), stride))
        y = g.relu(g.batch_norm(y, c_out))
        size = out_size(size, stride)
        y = g.batch_norm(g.conv(y, c_out, c_out, (3, 3), 1, same_pads(size, (3, 3), 1)), c_out)
        shortcut = x if stride == 1 and c_in == c_out else \
            g.conv(x, c_in, c_out, (1, 1), stride, [0, 0, 0, 0])
        x = g.relu(g.node("Add", [y, shortcut]))
        c_in = c_out
    x = g.node("AveragePool", [x], kernel_shape=list(size))       # 8 x 8 -> 1 x 1
    x = g.node("Flatten", [x])
    y = g.node("Softmax", [g.gemm(x, 64, 10, gain=1.0)])
    return g.model("resnet8", [1, 3, 32, 32], y, [1, 10])


MOBILENET_BLOCKS = ((16, 1), (32, 2), (32, 1), (64, 2), (64, 1), (128, 2), (128, 1),
                    (128, 1), (128, 1), (128, 1), (128, 1), (256, 2), (256, 1))


def mobilenet_v1_025(seed: int = 2) -> onnx.ModelProto:
    """Visual wake words MobileNetV1 with width multiplier 0.25, ReLU6 as Clip."""
    g = GraphBuilder(seed)
    size = (96, 96)
    x = g.relu6(g.batch_norm(g.conv("input", 3, 8, (3, 3), 2, same_pads(size, (3, 3), 2)), 8))
    size = out_size(size, 2)
    c_in = 8
    for c_out, stride in MOBILENET_BLOCKS:
        x = g.conv(x, c_in, c_in, (3, 3), stride, same_pads(size, (3, 3), stride), group=c_in)
        x = g.relu6(g.batch_norm(x, c_in))
        size = out_size(size, stride)
        x = g.relu6(g.batch_norm(g.conv(x, c_in, c_out, (1, 1), 1, [0, 0, 0, 0]), c_out))
        c_in = c_out
    x = g.node("GlobalAveragePool", [x])                          # 3 x 3 -> 1 x 1
    x = g.node("Flatten", [x])
    y = g.node("Softmax", [g.gemm(x, c_in, 2, gain=1.0)])
    return g.model("mobilenet_v1_025", [1, 3, 96, 96], y, [1, 2])


def fc_autoencoder(seed: int = 3) -> onnx.ModelProto:
    """ToyADMOS anomaly detection: 640 -> 128 x4 -> 8 -> 128 x4 -> 640."""
    g = GraphBuilder(seed)
    x, n_in = "input", 640
    for n_out in (128, 128, 128, 128, 8, 128, 128, 128, 128):
        x = g.relu(g.batch_norm(g.gemm(x, n_in, n_out), n_out))
        n_in = n_out
    y = g.gemm(x, n_in, 640, gain=1.0)
    return g.model("fc_autoencoder", [1, 640], y, [1, 640])


MODELS: dict[str, Callable[[], onnx.ModelProto]] = {
    "ds_cnn": ds_cnn,
    "resnet8": resnet8,
    "mobilenet_v1_025": mobilenet_v1_025,
    "fc_autoencoder": fc_autoencoder,
}


INT8 = "_int8"


def known(name: str) -> bool:
    return name in MODELS or (name.endswith(INT8) and name[:-len(INT8)] in MODELS)


def build(name: str) -> onnx.ModelProto:
    """Model ``name``: one of :data:`MODELS`, or ``<model>_int8`` for its
    onnxruntime-quantized form (:func:`quantize_int8`)."""
    if not known(name):
        raise KeyError(f"unknown model {name!r}; known: {', '.join(MODELS)} "
                       f"(and each with the suffix {INT8})")
    if name.endswith(INT8):
        return quantize_int8(MODELS[name[:-len(INT8)]]())
    return MODELS[name]()


def quantize_int8(model: onnx.ModelProto, calibration: int = 4) -> onnx.ModelProto:
    """``model`` quantized by onnxruntime's ``quantize_static``: pre-processed
    first (``quant_pre_process`` folds the batch norms after convolutions),
    then QDQ, int8 activations, per-channel int8 weights, calibrated on
    ``calibration`` seeded standard-normal inputs (seeds 0, 1, ...)."""
    from onnxruntime import quantization
    from onnxruntime.quantization.shape_inference import quant_pre_process

    shape = input_shape(model)
    feed = model.graph.input[0].name

    class Reader(quantization.CalibrationDataReader):
        def __init__(self) -> None:
            self.batches = iter([{feed: np.random.default_rng(s).standard_normal(shape)
                                  .astype(np.float32)} for s in range(calibration)])

        def get_next(self) -> dict[str, np.ndarray] | None:
            return next(self.batches, None)

    with tempfile.TemporaryDirectory() as tmp:
        float_path, pre_path, q_path = (str(Path(tmp) / f"{n}.onnx") for n in ("f", "p", "q"))
        onnx.save(model, float_path)
        # Static shapes: onnx's own shape inference is enough (the symbolic
        # one needs sympy, which onnxruntime no longer installs).
        quant_pre_process(float_path, pre_path, skip_symbolic_shape=True)
        quantization.quantize_static(pre_path, q_path, Reader(),
                                     quant_format=quantization.QuantFormat.QDQ,
                                     per_channel=True,
                                     activation_type=quantization.QuantType.QInt8,
                                     weight_type=quantization.QuantType.QInt8)
        return onnx.load(q_path)


# -- statistics ----------------------------------------------------------------

def param_count(model: onnx.ModelProto) -> int:
    """Elements of all initializers (BatchNormalization statistics included)."""
    return int(sum(np.prod(t.dims, dtype=np.int64) for t in model.graph.initializer))


def macs(model: onnx.ModelProto) -> int:
    """Multiply-accumulates of the Conv, Gemm and MatMul nodes, from the
    shapes ONNX shape inference gives (the usual convention: BatchNorm,
    activations, pooling and softmax are not counted).  A Conv output element
    costs (C_in / group) * kH * kW MACs; a Gemm/MatMul output element costs K."""
    inferred = shape_inference.infer_shapes(model, strict_mode=True)
    graph = inferred.graph
    shapes: dict[str, list[int]] = {}
    for info in [*graph.input, *graph.value_info, *graph.output]:
        shapes[info.name] = [d.dim_value for d in info.type.tensor_type.shape.dim]
    for t in graph.initializer:
        shapes[t.name] = list(t.dims)
    attrs = lambda n: {a.name: helper.get_attribute_value(a) for a in n.attribute}  # noqa: E731
    total = 0
    for node in graph.node:
        if node.op_type == "Conv":
            out = shapes[node.output[0]]
            w = shapes[node.input[1]]                  # C_out x C_in/group x kH x kW
            total += int(np.prod(out)) * int(np.prod(w[1:]))
        elif node.op_type == "Gemm":
            a = shapes[node.input[0]]
            k = a[0] if attrs(node).get("transA", 0) else a[1]
            total += int(np.prod(shapes[node.output[0]])) * k
        elif node.op_type == "MatMul":
            total += int(np.prod(shapes[node.output[0]])) * shapes[node.input[0]][-1]
    return total


def input_shape(model: onnx.ModelProto) -> tuple[int, ...]:
    return tuple(d.dim_value for d in model.graph.input[0].type.tensor_type.shape.dim)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", required=True, type=Path, help="directory for <name>.onnx")
    parser.add_argument("names", nargs="*", help=f"models (default: all of {', '.join(MODELS)}); "
                        f"<model>{INT8} for the int8 form (needs onnxruntime)")
    args = parser.parse_args(argv)
    unknown = [n for n in args.names if not known(n)]
    if unknown:
        parser.error(f"unknown model(s) {', '.join(unknown)}; known: {', '.join(MODELS)} "
                     f"(and each with the suffix {INT8})")
    args.out.mkdir(parents=True, exist_ok=True)
    for name in args.names or MODELS:
        model = build(name)
        path = args.out / f"{name}.onnx"
        onnx.save(model, path)
        print(f"{path}: {param_count(model):,} parameters, {macs(model):,} MACs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
