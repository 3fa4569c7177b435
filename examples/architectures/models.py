"""Real architectures as ONNX graphs, written the way PyTorch's exporters write them.

torch is not a dependency of aot, so these graphs are built with
``onnx.helper``, node for node in the form ``torch.onnx.export`` gives for the
torchvision (or ``torch.nn``) module named, in eval mode, at a
microcontroller input size, with seeded random weights (nothing is
downloaded: the models say nothing about accuracy, only about the shape of
the computation).  Two exporter styles:

* **classic** (TorchScript-based ``torch.onnx.export``, opset 13 to 17):
  Conv with BatchNormalization folded into its weights (``resnet18`` keeps
  the BatchNormalization nodes, as ``do_constant_folding=False`` exports
  them); ``Linear`` as ``Gemm(transB=1)`` after ``Flatten``, or
  ``MatMul`` + ``Add`` on 3-D tensors; ``x.view(x.size(0), -1)`` and the
  channel shuffle as ``Shape -> Gather -> Unsqueeze -> Concat -> Reshape``;
  ReLU6 as ``Clip`` with min/max inputs; Hardswish at opset 13 as
  ``HardSigmoid(alpha=1/6) * x``; SiLU as ``Sigmoid * x``; GELU as
  ``0.5 * x * (1 + Erf(x / sqrt 2))``; ``torch.chunk`` as ``Split`` with a
  split input; GRU/LSTM as ONNX ``GRU``/``LSTM`` nodes between the
  Transposes and Squeezes ``batch_first`` needs, gates reordered to ONNX's
  order.
* **dynamo** (``torch.onnx.export(..., dynamo=True)``, opset 18): axes and
  pads as inputs, ``Split`` with ``num_outputs``, ``LayerNormalization``
  written out as ``ReduceMean``/``Sub``/``Pow``/``Sqrt``/``Div``.

Width and classes are reduced where torchvision's full model would make a
multi-megabyte C file for every test run; each builder says what it
reduced (layer structure, kernel sizes, strides, expansion factors and
block counts are torchvision's).

Usage::

    python3 examples/architectures/models.py --out DIR [name ...]

writes ``DIR/<name>.onnx`` and prints parameter and multiply-accumulate counts.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Callable

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def make_divisible(v: float, divisor: int = 8) -> int:
    """torchvision's ``_make_divisible``: channels a multiple of 8, never
    below 90% of ``v``."""
    new_v = max(divisor, int(v + divisor / 2) // divisor * divisor)
    if new_v < 0.9 * v:
        new_v += divisor
    return new_v


class Graph:
    """Nodes and seeded random initializers of one exported graph."""

    def __init__(self, seed: int, opset: int = 13):
        self.rng = np.random.default_rng(seed)
        self.opset = opset
        self.nodes: list[onnx.NodeProto] = []
        self.inits: list[onnx.TensorProto] = []
        self.count = 0

    def fresh(self, prefix: str) -> str:
        self.count += 1
        return f"{prefix}_{self.count}"

    def const(self, value, prefix: str = "c", dtype=np.float32) -> str:
        name = self.fresh(prefix)
        self.inits.append(numpy_helper.from_array(np.asarray(value, dtype), name))
        return name

    def ints(self, value) -> str:
        return self.const(value, "i", np.int64)

    def node(self, op: str, inputs: list[str], n_out: int = 1, **attrs):
        outs = [self.fresh(op.lower()) for _ in range(n_out)]
        self.nodes.append(helper.make_node(op, inputs, outs, name=outs[0], **attrs))
        return outs[0] if n_out == 1 else outs

    # -- layers -----------------------------------------------------------------

    def conv(self, x: str, c_in: int, c_out: int, k: int | tuple[int, ...], stride: int = 1,
             pad: int | None = None, group: int = 1, bias: bool = True, dims: int = 2) -> str:
        kernel = (k,) * dims if isinstance(k, int) else tuple(k)
        pads = [kk // 2 for kk in kernel] if pad is None else [pad] * dims
        fan_in = (c_in // group) * int(np.prod(kernel))
        w = self.rng.normal(0.0, np.sqrt(2.0 / fan_in), (c_out, c_in // group, *kernel))
        inputs = [x, self.const(w, "w")]
        if bias:
            inputs.append(self.const(self.rng.normal(0.0, 0.05, c_out), "b"))
        return self.node("Conv", inputs, kernel_shape=list(kernel), strides=[stride] * dims,
                         pads=pads * 2, group=group, dilations=[1] * dims)

    def batch_norm(self, x: str, c: int, eps: float = 1e-5) -> str:
        r = self.rng
        params = [r.uniform(0.8, 1.2, c), r.normal(0.0, 0.1, c), r.normal(0.0, 0.1, c),
                  r.uniform(0.5, 1.5, c)]
        names = [self.const(p, n) for p, n in zip(params, ("gamma", "beta", "mean", "var"))]
        return self.node("BatchNormalization", [x, *names], epsilon=eps, momentum=0.9)

    def conv_bn(self, x: str, c_in: int, c_out: int, k: int, stride: int = 1,
                group: int = 1, fold: bool = True) -> str:
        """Conv2d(bias=False) + BatchNorm2d: folded into one biased Conv, as the
        classic exporter's constant folding writes it, or kept."""
        if fold:
            return self.conv(x, c_in, c_out, k, stride, group=group)
        return self.batch_norm(self.conv(x, c_in, c_out, k, stride, group=group, bias=False),
                               c_out)

    def relu(self, x: str) -> str:
        return self.node("Relu", [x])

    def relu6(self, x: str) -> str:
        return self.node("Clip", [x, self.const(0.0), self.const(6.0)])

    def hardswish(self, x: str) -> str:
        """opset 13 has no HardSwish: the classic exporter writes x * HardSigmoid(x)."""
        return self.node("Mul", [x, self.node("HardSigmoid", [x], alpha=1.0 / 6, beta=0.5)])

    def silu(self, x: str) -> str:
        return self.node("Mul", [x, self.node("Sigmoid", [x])])

    def gelu(self, x: str) -> str:
        """nn.GELU() (erf form): x * 0.5 * (1 + erf(x / sqrt 2))."""
        e = self.node("Erf", [self.node("Div", [x, self.const(np.sqrt(2.0))])])
        return self.node("Mul", [self.node("Mul", [x, self.node("Add", [e, self.const(1.0)])]),
                                 self.const(0.5)])

    def gemm(self, x: str, n_in: int, n_out: int, gain: float = 1.0) -> str:
        w = self.rng.normal(0.0, np.sqrt(gain / n_in), (n_out, n_in))
        b = self.rng.normal(0.0, 0.05, n_out)
        return self.node("Gemm", [x, self.const(w, "w"), self.const(b, "b")],
                         alpha=1.0, beta=1.0, transB=1)

    def linear3d(self, x: str, n_in: int, n_out: int, gain: float = 1.0) -> str:
        """nn.Linear on a 3-D tensor: MatMul by the transposed weight, then Add."""
        w = self.rng.normal(0.0, np.sqrt(gain / n_in), (n_in, n_out))
        y = self.node("MatMul", [x, self.const(w, "w")])
        return self.node("Add", [self.const(self.rng.normal(0.0, 0.05, n_out), "b"), y])

    def unsqueeze(self, x: str, axes: list[int]) -> str:
        return self.node("Unsqueeze", [x, self.ints(axes)])

    def squeeze(self, x: str, axes: list[int]) -> str:
        return self.node("Squeeze", [x, self.ints(axes)])

    def dim(self, x: str, i: int) -> str:
        """x.size(i) traced: Shape -> Gather(scalar index)."""
        return self.node("Gather", [self.node("Shape", [x]), self.ints(np.int64(i))], axis=0)

    def view(self, x: str, dims: list[str | int]) -> str:
        """x.view(...) with traced sizes: each part unsqueezed, then Concat -> Reshape."""
        parts = [self.unsqueeze(d, [0]) if isinstance(d, str) else self.ints([d]) for d in dims]
        return self.node("Reshape", [x, self.node("Concat", parts, axis=0)])

    def flatten_view(self, x: str) -> str:
        """x.view(x.size(0), -1)."""
        return self.view(x, [self.dim(x, 0), -1])

    def global_pool_flatten(self, x: str) -> str:
        """AdaptiveAvgPool2d(1) + torch.flatten(x, 1)."""
        return self.node("Flatten", [self.node("GlobalAveragePool", [x])], axis=1)

    def squeeze_excite(self, x: str, c: int, squeeze: int, act: str, gate: str) -> str:
        """torchvision's SqueezeExcitation: pool, 1x1 conv, act, 1x1 conv, gate, scale."""
        s = self.node("GlobalAveragePool", [x])
        s = self.conv(s, c, squeeze, 1)
        s = self.relu(s) if act == "relu" else self.silu(s)
        s = self.conv(s, squeeze, c, 1)
        s = self.node("HardSigmoid", [s], alpha=1.0 / 6, beta=0.5) if gate == "hardsigmoid" \
            else self.node("Sigmoid", [s])
        return self.node("Mul", [s, x])

    def model(self, name: str, inputs: list[tuple[str, list[int]]], y: str,
              y_shape: list[int]) -> onnx.ModelProto:
        graph = helper.make_graph(
            self.nodes, name,
            [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in inputs],
            [helper.make_tensor_value_info(y, TensorProto.FLOAT, y_shape)], self.inits)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", self.opset)],
                                  producer_name="aot examples/architectures")
        model.ir_version = 8
        onnx.checker.check_model(model, full_check=True)
        return model


# -- image classifiers -----------------------------------------------------------

def mobilenet_v2(seed: int = 0) -> onnx.ModelProto:
    """torchvision mobilenet_v2(width_mult=0.35, num_classes=10), input 1x3x96x96.
    Classic exporter, opset 13: BN folded, ReLU6 as Clip."""
    g = Graph(seed)
    width = 0.35
    c_in = make_divisible(32 * width)
    x = g.relu6(g.conv_bn("input", 3, c_in, 3, 2))
    settings = ((1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1),
                (6, 160, 3, 2), (6, 320, 1, 1))
    for t, c, n, s in settings:
        c_out = make_divisible(c * width)
        for i in range(n):
            stride = s if i == 0 else 1
            hidden = int(round(c_in * t))
            y = x
            if t != 1:
                y = g.relu6(g.conv_bn(y, c_in, hidden, 1))
            y = g.relu6(g.conv_bn(y, hidden, hidden, 3, stride, group=hidden))
            y = g.conv_bn(y, hidden, c_out, 1)
            x = g.node("Add", [x, y]) if stride == 1 and c_in == c_out else y
            c_in = c_out
    last = make_divisible(1280 * max(1.0, width))
    x = g.relu6(g.conv_bn(x, c_in, last, 1))
    y = g.gemm(g.global_pool_flatten(x), last, 10)
    return g.model("mobilenet_v2", [("input", [1, 3, 96, 96])], y, [1, 10])


def mobilenet_v3_small(seed: int = 1) -> onnx.ModelProto:
    """torchvision mobilenet_v3_small(width_mult=0.5, num_classes=10), input
    1x3x96x96.  Classic exporter, opset 13: Hardswish as HardSigmoid * x (so
    the classifier's first Gemm feeds a HardSigmoid and a Mul), SE blocks
    with ReLU and a HardSigmoid gate."""
    g = Graph(seed)
    width = 0.5
    adj = lambda c: make_divisible(c * width)  # noqa: E731
    # (kernel, expanded, out, use_se, activation, stride) -- torchvision's table
    cfg = ((3, 16, 16, True, "RE", 2), (3, 72, 24, False, "RE", 2), (3, 88, 24, False, "RE", 1),
           (5, 96, 40, True, "HS", 2), (5, 240, 40, True, "HS", 1), (5, 240, 40, True, "HS", 1),
           (5, 120, 48, True, "HS", 1), (5, 144, 48, True, "HS", 1), (5, 288, 96, True, "HS", 2),
           (5, 576, 96, True, "HS", 1), (5, 576, 96, True, "HS", 1))
    c_in = adj(16)
    x = g.hardswish(g.conv_bn("input", 3, c_in, 3, 2))
    for k, exp, out, se, act, stride in cfg:
        exp, out = adj(exp), adj(out)
        fn = g.relu if act == "RE" else g.hardswish
        y = x
        if exp != c_in:
            y = fn(g.conv_bn(y, c_in, exp, 1))
        y = fn(g.conv_bn(y, exp, exp, k, stride, group=exp))
        if se:
            y = g.squeeze_excite(y, exp, make_divisible(exp // 4), "relu", "hardsigmoid")
        y = g.conv_bn(y, exp, out, 1)
        x = g.node("Add", [y, x]) if stride == 1 and c_in == out else y
        c_in = out
    last_conv = 6 * c_in
    x = g.hardswish(g.conv_bn(x, c_in, last_conv, 1))
    last = make_divisible(1024 * width)
    x = g.hardswish(g.gemm(g.global_pool_flatten(x), last_conv, last, gain=2.0))
    y = g.gemm(x, last, 10)
    return g.model("mobilenet_v3_small", [("input", [1, 3, 96, 96])], y, [1, 10])


def squeezenet1_1(seed: int = 2) -> onnx.ModelProto:
    """torchvision squeezenet1_1(num_classes=10), full width, input 1x3x64x64.
    Classic exporter, opset 13: MaxPool with ceil_mode, Fire modules' Concat,
    the classifier's Conv + ReLU + GlobalAveragePool + Flatten."""
    g = Graph(seed)
    x = g.relu(g.conv("input", 3, 64, 3, 2, pad=0))
    pool = lambda v: g.node("MaxPool", [v], kernel_shape=[3, 3], strides=[2, 2],  # noqa: E731
                            pads=[0, 0, 0, 0], ceil_mode=1)
    x = pool(x)
    c_in = 64

    def fire(v: str, squeeze: int, expand: int) -> str:
        s = g.relu(g.conv(v, c_in, squeeze, 1))
        return g.node("Concat", [g.relu(g.conv(s, squeeze, expand, 1)),
                                 g.relu(g.conv(s, squeeze, expand, 3))], axis=1)

    for i, (sq, ex) in enumerate(((16, 64), (16, 64), (32, 128), (32, 128), (48, 192),
                                  (48, 192), (64, 256), (64, 256))):
        x = fire(x, sq, ex)
        c_in = 2 * ex
        if i in (1, 3):
            x = pool(x)
    x = g.relu(g.conv(x, 512, 10, 1, pad=0))
    y = g.global_pool_flatten(x)
    return g.model("squeezenet1_1", [("input", [1, 3, 64, 64])], y, [1, 10])


def shufflenet_v2(seed: int = 3) -> onnx.ModelProto:
    """torchvision shufflenet_v2_x0_5(num_classes=10), input 1x3x64x64.
    Classic exporter, opset 13: the channel shuffle as view/transpose/view
    with traced sizes (Shape -> Gather -> Concat -> Reshape), torch.chunk as
    Split with a split input, the final mean([2, 3]) as ReduceMean."""
    g = Graph(seed)
    stages = (24, 48, 96, 192, 1024)
    x = g.relu(g.conv_bn("input", 3, stages[0], 3, 2))
    x = g.node("MaxPool", [x], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    c_in = stages[0]

    def shuffle(v: str) -> str:
        b, c, h, w = (g.dim(v, i) for i in range(4))
        per_group = g.node("Div", [c, g.ints(np.int64(2))])
        v = g.view(v, [b, 2, per_group, h, w])
        v = g.node("Transpose", [v], perm=[0, 2, 1, 3, 4])
        return g.view(v, [b, -1, h, w])

    def branch(v: str, cin: int, cout: int, stride: int) -> str:
        v = g.relu(g.conv_bn(v, cin, cout, 1))
        v = g.conv_bn(v, cout, cout, 3, stride, group=cout)
        return g.relu(g.conv_bn(v, cout, cout, 1))

    for repeats, c_out in zip((4, 8, 4), stages[1:4]):
        half = c_out // 2
        for i in range(repeats):
            if i == 0:
                left = g.relu(g.conv_bn(g.conv_bn(x, c_in, c_in, 3, 2, group=c_in),
                                        c_in, half, 1))
                x = g.node("Concat", [left, branch(x, c_in, half, 2)], axis=1)
            else:
                a, b = g.node("Split", [x, g.ints([half, half])], n_out=2, axis=1)
                x = g.node("Concat", [a, branch(b, half, half, 1)], axis=1)
            x = shuffle(x)
            c_in = c_out
    x = g.relu(g.conv_bn(x, c_in, stages[4], 1))
    x = g.node("ReduceMean", [x], axes=[2, 3], keepdims=0)
    y = g.gemm(x, stages[4], 10)
    return g.model("shufflenet_v2", [("input", [1, 3, 64, 64])], y, [1, 10])


def mnasnet(seed: int = 4) -> onnx.ModelProto:
    """torchvision mnasnet0_5(num_classes=10), input 1x3x96x96.  Classic
    exporter, opset 13: BN folded, the final x.mean([2, 3]) as ReduceMean."""
    g = Graph(seed)
    alpha = 0.5
    depths = [make_divisible(c * alpha, 8) for c in (32, 16, 24, 40, 80, 96, 192, 320)]
    x = g.relu(g.conv_bn("input", 3, depths[0], 3, 2))
    x = g.relu(g.conv_bn(x, depths[0], depths[0], 3, 1, group=depths[0]))
    x = g.conv_bn(x, depths[0], depths[1], 1)
    c_in = depths[1]
    # (out, kernel, stride, expansion, repeats) -- torchvision's _stack calls
    for c_out, k, s, e, n in ((depths[2], 3, 2, 3, 3), (depths[3], 5, 2, 3, 3),
                              (depths[4], 5, 2, 6, 3), (depths[5], 3, 1, 6, 2),
                              (depths[6], 5, 2, 6, 4), (depths[7], 3, 1, 6, 1)):
        for i in range(n):
            stride = s if i == 0 else 1
            mid = c_in * e
            y = g.relu(g.conv_bn(x, c_in, mid, 1))
            y = g.relu(g.conv_bn(y, mid, mid, k, stride, group=mid))
            y = g.conv_bn(y, mid, c_out, 1)
            x = g.node("Add", [y, x]) if stride == 1 and c_in == c_out else y
            c_in = c_out
    x = g.relu(g.conv_bn(x, c_in, 1280, 1))
    x = g.node("ReduceMean", [x], axes=[2, 3], keepdims=0)
    y = g.gemm(x, 1280, 10)
    return g.model("mnasnet", [("input", [1, 3, 96, 96])], y, [1, 10])


def efficientnet_b0(seed: int = 5) -> onnx.ModelProto:
    """torchvision efficientnet_b0's block structure at width 0.5 (channels
    halved and rounded to multiples of 8, as width_mult=0.5 would; depth 1.0),
    num_classes=10, input 1x3x64x64.  Classic exporter, opset 13: SiLU as
    Sigmoid * x, SE blocks with SiLU and a Sigmoid gate, BN folded."""
    g = Graph(seed)
    adj = lambda c: make_divisible(c * 0.5)  # noqa: E731
    c_in = adj(32)
    x = g.silu(g.conv_bn("input", 3, c_in, 3, 2))
    # (expand, kernel, stride, in, out, layers) -- torchvision's MBConvConfig table
    for e, k, s, _, out, n in ((1, 3, 1, 32, 16, 1), (6, 3, 2, 16, 24, 2),
                               (6, 5, 2, 24, 40, 2), (6, 3, 2, 40, 80, 3),
                               (6, 5, 1, 80, 112, 3), (6, 5, 2, 112, 192, 4),
                               (6, 3, 1, 192, 320, 1)):
        out = adj(out)
        for i in range(n):
            stride = s if i == 0 else 1
            exp = make_divisible(c_in * e)
            y = x
            if exp != c_in:
                y = g.silu(g.conv_bn(y, c_in, exp, 1))
            y = g.silu(g.conv_bn(y, exp, exp, k, stride, group=exp))
            y = g.squeeze_excite(y, exp, max(1, c_in // 4), "silu", "sigmoid")
            y = g.conv_bn(y, exp, out, 1)
            x = g.node("Add", [y, x]) if stride == 1 and c_in == out else y
            c_in = out
    last = 4 * c_in
    x = g.silu(g.conv_bn(x, c_in, last, 1))
    y = g.gemm(g.global_pool_flatten(x), last, 10)
    return g.model("efficientnet_b0", [("input", [1, 3, 64, 64])], y, [1, 10])


def resnet18(seed: int = 6) -> onnx.ModelProto:
    """torchvision resnet18's layers at quarter width (16 to 128 channels),
    num_classes=10, input 1x3x64x64.  Classic exporter with
    do_constant_folding=False, opset 13: BatchNormalization nodes kept, the
    classifier's input as x.view(x.size(0), -1) (Shape -> Gather ->
    Unsqueeze -> Concat -> Reshape)."""
    g = Graph(seed)
    x = g.relu(g.conv_bn("input", 3, 16, 7, 2, fold=False))
    x = g.node("MaxPool", [x], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    c_in = 16
    for stage, c_out in enumerate((16, 32, 64, 128)):
        for block in range(2):
            stride = 2 if stage > 0 and block == 0 else 1
            y = g.relu(g.conv_bn(x, c_in, c_out, 3, stride, fold=False))
            y = g.conv_bn(y, c_out, c_out, 3, 1, fold=False)
            short = x if stride == 1 and c_in == c_out else \
                g.conv_bn(x, c_in, c_out, 1, stride, fold=False)
            x = g.relu(g.node("Add", [y, short]))
            c_in = c_out
    x = g.flatten_view(g.node("GlobalAveragePool", [x]))
    y = g.gemm(x, c_in, 10)
    return g.model("resnet18", [("input", [1, 3, 64, 64])], y, [1, 10])


# -- keyword spotters --------------------------------------------------------------

def kws_conv1d(seed: int = 7) -> onnx.ModelProto:
    """Conv1d keyword spotter over 40 MFCCs x 49 frames (1x40x49): four
    Conv1d + BatchNorm1d (folded) + ReLU, MaxPool1d, AdaptiveAvgPool1d(1)
    + flatten, Linear to 12 classes.  Classic exporter, opset 13."""
    g = Graph(seed)
    x, c_in = "input", 40
    for c_out, k, s in ((64, 5, 1), (64, 3, 2), (96, 3, 1), (96, 3, 2)):
        x = g.relu(g.conv(x, c_in, c_out, k, s, dims=1))
        c_in = c_out
        if k == 5:
            x = g.node("MaxPool", [x], kernel_shape=[2], strides=[2], pads=[0, 0])
    x = g.node("Flatten", [g.node("GlobalAveragePool", [x])], axis=1)
    y = g.gemm(x, c_in, 12)
    return g.model("kws_conv1d", [("input", [1, 40, 49])], y, [1, 12])


def _recurrent_weights(g: Graph, gates: int, n_in: int, hidden: int) -> tuple[str, str, str]:
    bound = 1.0 / np.sqrt(hidden)                  # torch's uniform(-1/sqrt(h), 1/sqrt(h))
    u = lambda *shape: g.rng.uniform(-bound, bound, shape)  # noqa: E731
    return (g.const(u(1, gates * hidden, n_in), "W"), g.const(u(1, gates * hidden, hidden), "R"),
            g.const(u(1, 2 * gates * hidden), "B"))


def _recurrent_kws(op: str, seed: int) -> onnx.ModelProto:
    """nn.GRU/LSTM(40, 64, batch_first=True) over 1x49x40, the last step's
    output, Linear to 12.  Classic exporter, opset 14: Transpose to
    sequence-first, the recurrent node with W/R/B (torch's gates reordered),
    Squeeze of the direction axis, Transpose back, out[:, -1] as Gather."""
    g = Graph(seed, opset=14)
    hidden, gates = 64, 3 if op == "GRU" else 4
    x = g.node("Transpose", ["input"], perm=[1, 0, 2])
    w, r, b = _recurrent_weights(g, gates, 40, hidden)
    attrs = {"linear_before_reset": 1} if op == "GRU" else {}
    n_out = 2 if op == "GRU" else 3
    outs = g.node(op, [x, w, r, b, ""], n_out=n_out, hidden_size=hidden, **attrs)
    y = g.squeeze(outs[0], [1])                    # seq x batch x hidden
    y = g.node("Transpose", [y], perm=[1, 0, 2])
    last = g.node("Gather", [y, g.ints(np.int64(-1))], axis=1)
    out = g.gemm(last, hidden, 12)
    return g.model(f"kws_{op.lower()}", [("input", [1, 49, 40])], out, [1, 12])


def kws_gru(seed: int = 8) -> onnx.ModelProto:
    return _recurrent_kws("GRU", seed)


def kws_lstm(seed: int = 9) -> onnx.ModelProto:
    return _recurrent_kws("LSTM", seed)


# -- transformer ---------------------------------------------------------------------

def _layer_norm(g: Graph, x: str, d: int, decomposed: bool) -> str:
    gamma = g.const(g.rng.uniform(0.8, 1.2, d), "gamma")
    beta = g.const(g.rng.normal(0.0, 0.1, d), "beta")
    if not decomposed:
        return g.node("LayerNormalization", [x, gamma, beta], axis=-1, epsilon=1e-5)
    axes = g.ints([-1])
    mean = g.node("ReduceMean", [x, axes], keepdims=1)
    centred = g.node("Sub", [x, mean])
    var = g.node("ReduceMean", [g.node("Pow", [centred, g.const(2.0)]), axes], keepdims=1)
    std = g.node("Sqrt", [g.node("Add", [var, g.const(1e-5)])])
    return g.node("Add", [g.node("Mul", [g.node("Div", [centred, std]), gamma]), beta])


def _encoder_layer(name: str, seed: int, dynamo: bool) -> onnx.ModelProto:
    g = Graph(seed, opset=18 if dynamo else 17)
    seq, d, heads, ff = 16, 64, 4, 128
    hd = d // heads
    x = "input"
    # packed in_proj: one MatMul + Add, then q, k, v
    qkv = g.linear3d(x, d, 3 * d)
    if dynamo:
        q, k, v = g.node("Split", [qkv], n_out=3, axis=-1, num_outputs=3)
    else:
        q, k, v = g.node("Split", [qkv, g.ints([d, d, d])], n_out=3, axis=-1)

    def heads_first(t: str) -> str:
        if dynamo:
            t = g.node("Reshape", [t, g.ints([1, seq, heads, hd])])
        else:
            t = g.view(t, [g.dim(t, 0), g.dim(t, 1), heads, hd])
        return g.node("Transpose", [t], perm=[0, 2, 1, 3])

    q, k, v = heads_first(q), heads_first(k), heads_first(v)
    scores = g.node("MatMul", [q, g.node("Transpose", [k], perm=[0, 1, 3, 2])])
    scores = g.node("Mul", [scores, g.const(1.0 / np.sqrt(hd))]) if dynamo else \
        g.node("Div", [scores, g.const(np.sqrt(hd))])
    attn = g.node("MatMul", [g.node("Softmax", [scores], axis=-1), v])
    attn = g.node("Transpose", [attn], perm=[0, 2, 1, 3])
    attn = g.node("Reshape", [attn, g.ints([1, seq, d])])
    x = _layer_norm(g, g.node("Add", [x, g.linear3d(attn, d, d)]), d, dynamo)
    h = g.gelu(g.linear3d(x, d, ff, gain=2.0))
    x = _layer_norm(g, g.node("Add", [x, g.linear3d(h, ff, d)]), d, dynamo)
    return g.model(name, [("input", [1, seq, d])], x, [1, seq, d])


def transformer_encoder(seed: int = 10) -> onnx.ModelProto:
    """nn.TransformerEncoderLayer(d_model=64, nhead=4, dim_feedforward=128,
    activation="gelu", batch_first=True) over 1x16x64.  Classic exporter,
    opset 17: LayerNormalization, erf GELU, heads split by a traced view."""
    return _encoder_layer("transformer_encoder", seed, dynamo=False)


def transformer_encoder_dynamo(seed: int = 11) -> onnx.ModelProto:
    """The same layer as the dynamo exporter writes it (opset 18): Split with
    num_outputs, constant reshapes, axes as inputs, LayerNorm decomposed into
    ReduceMean/Sub/Pow/Sqrt/Div."""
    return _encoder_layer("transformer_encoder_dynamo", seed, dynamo=True)


# -- dense prediction ---------------------------------------------------------------

def conv_autoencoder(seed: int = 12) -> onnx.ModelProto:
    """Convolutional autoencoder on 1x1x32x32: Conv(1->16, s2) ReLU
    Conv(16->32, s2) ReLU, ConvTranspose(32->16, k3 s2 p1 op1) ReLU,
    ConvTranspose(16->1, k3 s2 p1 op1) Sigmoid.  Classic exporter, opset 13."""
    g = Graph(seed)
    x = g.relu(g.conv("input", 1, 16, 3, 2))
    x = g.relu(g.conv(x, 16, 32, 3, 2))
    for c_in, c_out in ((32, 16), (16, 1)):
        w = g.rng.normal(0.0, np.sqrt(2.0 / (c_in * 9)), (c_in, c_out, 3, 3))
        x = g.node("ConvTranspose", [x, g.const(w, "w"), g.const(g.rng.normal(0, .05, c_out))],
                   kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1],
                   output_padding=[1, 1], dilations=[1, 1], group=1)
        x = g.relu(x) if c_out > 1 else g.node("Sigmoid", [x])
    return g.model("conv_autoencoder", [("input", [1, 1, 32, 32])], x, [1, 1, 32, 32])


def upsample_net(seed: int = 13) -> onnx.ModelProto:
    """A small segmentation decoder on 1x3x32x32, dynamo exporter style
    (opset 18): ReflectionPad2d as Pad with pads as an input, Conv s2 ReLU,
    Conv s2 ReLU, nn.Upsample(scale_factor=2, mode="nearest") and
    (mode="bilinear", align_corners=False) as Resize with scales, a 1x1
    Conv to 4 classes."""
    g = Graph(seed, opset=18)
    x = g.node("Pad", ["input", g.ints([0, 0, 1, 1, 0, 0, 1, 1])], mode="reflect")
    x = g.relu(g.conv(x, 3, 16, 3, 2, pad=0))
    x = g.relu(g.conv(x, 16, 32, 3, 2))
    scales = g.const([1.0, 1.0, 2.0, 2.0])
    x = g.node("Resize", [x, "", scales], mode="nearest", nearest_mode="floor",
               coordinate_transformation_mode="asymmetric")
    x = g.relu(g.conv(x, 32, 16, 3))
    x = g.node("Resize", [x, "", scales], mode="linear",
               coordinate_transformation_mode="pytorch_half_pixel")
    y = g.conv(x, 16, 4, 1)
    return g.model("upsample_net", [("input", [1, 3, 32, 32])], y, [1, 4, 32, 32])


MODELS: dict[str, Callable[[], onnx.ModelProto]] = {
    "mobilenet_v2": mobilenet_v2,
    "mobilenet_v3_small": mobilenet_v3_small,
    "squeezenet1_1": squeezenet1_1,
    "shufflenet_v2": shufflenet_v2,
    "mnasnet": mnasnet,
    "efficientnet_b0": efficientnet_b0,
    "resnet18": resnet18,
    "kws_conv1d": kws_conv1d,
    "kws_gru": kws_gru,
    "kws_lstm": kws_lstm,
    "transformer_encoder": transformer_encoder,
    "transformer_encoder_dynamo": transformer_encoder_dynamo,
    "conv_autoencoder": conv_autoencoder,
    "upsample_net": upsample_net,
}


# -- statistics ------------------------------------------------------------------------

def param_count(model: onnx.ModelProto) -> int:
    """Elements of the floating-point initializers (shapes and axes excluded)."""
    return int(sum(np.prod(t.dims, dtype=np.int64) for t in model.graph.initializer
                   if t.data_type == TensorProto.FLOAT))


def macs(model: onnx.ModelProto) -> int:
    """Multiply-accumulates of Conv, ConvTranspose, Gemm, MatMul, GRU and LSTM
    (BatchNorm, activations, pooling, softmax and normalization not
    counted).  Shapes come from running the model once in onnxruntime on
    zeros: ONNX's shape inference loses them after a traced view."""
    shapes = tensor_shapes(model)
    total = 0
    for node in model.graph.node:
        op = node.op_type
        if op == "Conv":
            total += int(np.prod(shapes[node.output[0]])) * int(np.prod(shapes[node.input[1]][1:]))
        elif op == "ConvTranspose":                # every input pixel x the whole kernel
            w = shapes[node.input[1]]
            total += int(np.prod(shapes[node.input[0]])) * int(np.prod(w[1:]))
        elif op == "Gemm":
            k = shapes[node.input[0]][0 if _attr(node, "transA") else 1]
            total += int(np.prod(shapes[node.output[0]])) * k
        elif op == "MatMul":
            total += int(np.prod(shapes[node.output[0]])) * shapes[node.input[0]][-1]
        elif op in ("GRU", "LSTM"):
            seq, batch, n_in = shapes[node.input[0]]
            w, r = shapes[node.input[1]], shapes[node.input[2]]
            total += seq * batch * (w[1] * n_in + r[1] * r[2])
    return total


def tensor_shapes(model: onnx.ModelProto) -> dict[str, tuple[int, ...]]:
    """Every tensor's shape: initializers' dims, and each node output's shape
    in one onnxruntime run on zeros (needs the ``onnxruntime`` package)."""
    import onnxruntime as ort
    probe = onnx.ModelProto()
    probe.CopyFrom(model)
    del probe.graph.output[:]
    names = [o for n in model.graph.node for o in n.output if o]
    probe.graph.output.extend(helper.ValueInfoProto(name=o) for o in names)
    session = ort.InferenceSession(probe.SerializeToString(), providers=["CPUExecutionProvider"])
    feeds = {i.name: np.zeros(input_shape(model), np.float32) for i in model.graph.input}
    shapes = {name: tuple(v.shape) for name, v in zip(names, session.run(names, feeds))}
    shapes.update((t.name, tuple(t.dims)) for t in model.graph.initializer)
    shapes.update((i.name, input_shape(model)) for i in model.graph.input)
    return shapes


def _attr(node: onnx.NodeProto, name: str, default: int = 0) -> int:
    return next((helper.get_attribute_value(a) for a in node.attribute if a.name == name),
                default)


def input_shape(model: onnx.ModelProto) -> tuple[int, ...]:
    return tuple(d.dim_value for d in model.graph.input[0].type.tensor_type.shape.dim)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", required=True, type=Path, help="directory for <name>.onnx")
    parser.add_argument("names", nargs="*", help=f"models (default: all of {', '.join(MODELS)})")
    args = parser.parse_args(argv)
    unknown = [n for n in args.names if n not in MODELS]
    if unknown:
        parser.error(f"unknown model(s) {', '.join(unknown)}; known: {', '.join(MODELS)}")
    args.out.mkdir(parents=True, exist_ok=True)
    for name in args.names or MODELS:
        model = MODELS[name]()
        path = args.out / f"{name}.onnx"
        onnx.save(model, path)
        print(f"{path}: {param_count(model):,} parameters, {macs(model):,} MACs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
