"""Pooling: MaxPool, AveragePool (1-d and 2-d), GlobalAveragePool,
GlobalMaxPool.

2-d pools map onto ``nn.max_pool2d``/``nn.avg_pool2d`` (NCHW); a 1-d pool
runs as a 2-d one of height 1.  ``ceil_mode`` follows onnxruntime and
PyTorch: the output size is rounded up, but a last window that would start
in the end padding is dropped (ONNX PR 5741); the IR operator rounds up
without that rule, so its extra last row/column is sliced off.  The
average's divisor is what the IR documents: with ``count_include_pad`` the
taps inside the explicitly padded input, otherwise those inside the input.
Global pools of 4-d tensors use the global pooling operators, other ranks a
keepdims mean/max over the spatial axes.

Schema versions: MaxPool 11, 12 (int8/uint8), 22 (bfloat16); AveragePool
11, 19 (dilations), 22 (bfloat16); GlobalAveragePool/GlobalMaxPool 1, 22
(bfloat16).
"""

from __future__ import annotations

from ....ir.expr import Expr
from ..graph import Node
from ..registry import converter
from .util import spatial_ints, spatial_pads


def _onnx_out_size(size: int, k: int, s: int, d: int, pad: tuple[int, int],
                   ceil_mode: bool) -> int:
    numerator = size + pad[0] + pad[1] - d * (k - 1) - 1
    if not ceil_mode:
        return numerator // s + 1
    out = -(-numerator // s) + 1
    if (out - 1) * s >= size + pad[0]:
        out -= 1
    return out


def _pool(node: Node, op_name: str, average: bool) -> list[Expr]:
    x = node.input(0)
    if len([o for o in node.proto.output if o]) > 1:
        raise node.error("the Indices output is not supported")
    rank = node.rank(x)
    if rank not in (3, 4):
        raise node.error(f"only 1-d and 2-d pooling is supported (input of rank {rank})")
    if node.dtype(x).is_bool:
        raise node.error("bool tensors cannot be pooled")
    n = rank - 2
    kernel = node.attr("kernel_shape")
    if kernel is None or len(kernel) != n:
        raise node.error(f"kernel_shape needs {n} values, got {kernel}")
    kernel = [int(k) for k in kernel]
    strides = spatial_ints(node, "strides", n, 1)
    dilations = spatial_ints(node, "dilations", n, 1)
    sizes = node.shape(x)[2:]
    pads = spatial_pads(node, sizes, kernel, strides, dilations)
    ceil_mode = bool(node.attr("ceil_mode", 0))
    want = [_onnx_out_size(sz, k, s, d, p, ceil_mode)
            for sz, k, s, d, p in zip(sizes, kernel, strides, dilations, pads)]
    if any(w < 1 for w in want):
        raise node.error(f"the output would be empty (input {list(node.shape(x))}, "
                         f"kernel_shape={kernel}, pads={pads}, strides={strides})")
    if n == 1:
        x = node.call("expand_dims", [x], axis=2)
        kernel, strides, dilations = [1] + kernel, [1] + strides, [1] + dilations
        pads = [(0, 0)] + pads
        want = [1] + want
    (top, bottom), (left, right) = pads
    extra = {"count_include_pad": bool(node.attr("count_include_pad", 0))} if average else {}
    y = node.call(op_name, [x], pool_size=tuple(kernel), strides=tuple(strides),
                  dilation=tuple(dilations), padding=(top, left, bottom, right),
                  ceil_mode=ceil_mode, **extra)
    got = node.shape(y)[2:]
    if list(got) != want:
        y = node.call("strided_slice", [y], begin=(0, 0), end=tuple(want), strides=(1, 1),
                      axes=(2, 3))
    if n == 1:
        y = node.call("squeeze", [y], axis=(2,))
    return [y]


@converter("MaxPool", (11, 12, 22))
def convert_max_pool(node: Node) -> list[Expr]:
    if node.attr("storage_order", 0) not in (0, 1):
        raise node.unsupported("storage_order")
    return _pool(node, "nn.max_pool2d", average=False)


@converter("AveragePool", (11, 19, 22))
def convert_average_pool(node: Node) -> list[Expr]:
    return _pool(node, "nn.avg_pool2d", average=True)


def _global(node: Node, pool_op: str, reduce_op: str) -> list[Expr]:
    x = node.input(0)
    rank = node.rank(x)
    if rank < 3:
        raise node.error(f"the input must have rank >= 3, got rank {rank}")
    if rank == 4:
        return [node.call(pool_op, [x])]
    return [node.call(reduce_op, [x], axis=tuple(range(2, rank)), keepdims=True)]


@converter("GlobalAveragePool", (1, 22))
def convert_global_average_pool(node: Node) -> list[Expr]:
    return _global(node, "nn.global_avg_pool2d", "mean")


@converter("GlobalMaxPool", (1, 22))
def convert_global_max_pool(node: Node) -> list[Expr]:
    return _global(node, "nn.global_max_pool2d", "max")
