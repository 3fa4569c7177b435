"""Pooling: MaxPool, AveragePool (1-d, 2-d and 3-d), LpPool, GlobalAveragePool,
GlobalMaxPool, GlobalLpPool.

Pools map onto ``nn.max_pool{1,2,3}d``/``nn.avg_pool{1,2,3}d`` (``NCW``,
``NCHW``, ``NCDHW``).  ``ceil_mode`` follows onnxruntime and
PyTorch: the output size is rounded up, but a last window that would start
in the end padding is dropped (ONNX PR 5741); the IR operator rounds up
without that rule, so its extra last row/column is sliced off.  The
average's divisor is what the IR documents: with ``count_include_pad`` the
taps inside the explicitly padded input, otherwise those inside the input.
Global pools of 4-d tensors use the global pooling operators, other ranks a
keepdims mean/max over the spatial axes.

LpPool is ``(sum of |x|^p over the window)^(1/p)`` with the padding
contributing 0, built as Relay's converter builds it (an average with
``count_include_pad`` of ``|x|^p``, times its divisor); GlobalLpPool is a
keepdims ``sum`` of ``|x|^p``.  ``p`` must be a positive integer.

Schema versions: MaxPool 11, 12 (int8/uint8), 22 (bfloat16); AveragePool
11, 19 (dilations), 22 (bfloat16); LpPool 11, 18 (dilations, ceil_mode),
22; GlobalAveragePool/GlobalMaxPool 1, 22 (bfloat16); GlobalLpPool 2, 22.
"""

from __future__ import annotations

import functools

import numpy as np

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


_OPS = {(1, False): "nn.max_pool1d", (2, False): "nn.max_pool2d", (3, False): "nn.max_pool3d",
        (1, True): "nn.avg_pool1d", (2, True): "nn.avg_pool2d", (3, True): "nn.avg_pool3d"}


def _pool(node: Node, average: bool, x: Expr | None = None,
          include_pad: bool | None = None) -> list[Expr]:
    """The pool of ``x`` (default: the node's input) and, for LpPool, with
    ``count_include_pad`` forced to ``include_pad``."""
    x = node.input(0) if x is None else x
    if len([o for o in node.proto.output if o]) > 1:
        raise node.error("the Indices output is not supported")
    rank = node.rank(x)
    if rank not in (3, 4, 5):
        raise node.error(f"only 1-d, 2-d and 3-d pooling is supported (input of rank {rank})")
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
    padding = tuple(p[0] for p in pads) + tuple(p[1] for p in pads)
    if include_pad is None:
        include_pad = bool(node.attr("count_include_pad", 0))
    extra = {"count_include_pad": include_pad} if average else {}
    layout = {1: "NCW", 2: "NCHW", 3: "NCDHW"}[n]
    y = node.call(_OPS[n, average], [x], pool_size=tuple(kernel), strides=tuple(strides),
                  dilation=tuple(dilations), padding=padding, ceil_mode=ceil_mode,
                  layout=layout, **extra)
    got = node.shape(y)[2:]
    if list(got) != want:
        y = node.call("strided_slice", [y], begin=(0,) * n, end=tuple(want), strides=(1,) * n,
                      axes=tuple(range(2, rank)))
    if average and include_pad and node.op_type == "LpPool":
        y = node.call("multiply", [y, node.constant(_divisors(sizes, kernel, strides, dilations,
                                                              pads, want, node.dtype(x).np))])
    return [y]


def _divisors(sizes, kernel, strides, dilations, pads, want, dtype) -> np.ndarray:
    """The average's divisors with ``count_include_pad`` (taps inside the
    explicitly padded input, at least 1) over the ``want`` outputs:
    multiplying by them turns the average back into the window sum."""
    counts = []
    for size, k, s, d, (before, after), n in zip(sizes, kernel, strides, dilations, pads, want):
        start = np.arange(n)[:, None] * s - before
        taps = start + np.arange(k)[None, :] * d
        counts.append(np.maximum(np.sum((taps >= -before) & (taps < size + after), axis=1), 1))
    total = functools.reduce(np.multiply.outer, counts)
    if np.all(total == total.flat[0]):
        return np.asarray(total.flat[0], dtype)
    return total.astype(dtype)


def _lp_power(node: Node, x: Expr, p: int) -> Expr:
    """``|x|^p`` (``p`` a positive integer)."""
    a = node.call("abs", [x])
    if p == 1:
        return a
    if p == 2:
        return node.call("multiply", [a, a])
    return node.call("power", [a, node.constant(np.asarray(p, node.dtype(x).np))])


def _lp_root(node: Node, y: Expr, p: int) -> Expr:
    if p == 1:
        return y
    if p == 2:
        return node.call("sqrt", [y])
    return node.call("power", [y, node.constant(np.asarray(1.0 / p, node.dtype(y).np))])


def _lp_order(node: Node) -> int:
    p = node.attr("p", 2)
    if not isinstance(p, int) or p < 1:
        raise node.unsupported("p", p, "(not a positive integer) is not supported")
    if not node.dtype(node.input(0)).is_float:
        raise node.error(f"LpPool needs a floating-point input, got {node.dtype(node.input(0))}")
    return p


@converter("LpPool", (11, 18, 22))
def convert_lp_pool(node: Node) -> list[Expr]:
    """``(sum over the window of |x|^p)^(1/p)``, padding contributing 0 (as
    Relay's converter: the average with ``count_include_pad`` of ``|x|^p``,
    times the divisor, to the power ``1/p``)."""
    p = _lp_order(node)
    (y,) = _pool(node, True, _lp_power(node, node.input(0), p), include_pad=True)
    return [_lp_root(node, y, p)]


@converter("GlobalLpPool", (2, 22))
def convert_global_lp_pool(node: Node) -> list[Expr]:
    x = node.input(0)
    p = _lp_order(node)
    rank = node.rank(x)
    if rank < 3:
        raise node.error(f"the input must have rank >= 3, got rank {rank}")
    total = node.call("sum", [_lp_power(node, x, p)], axis=tuple(range(2, rank)), keepdims=True)
    return [_lp_root(node, total, p)]


@converter("MaxPool", (11, 12, 22))
def convert_max_pool(node: Node) -> list[Expr]:
    if node.attr("storage_order", 0) not in (0, 1):
        raise node.unsupported("storage_order")
    return _pool(node, average=False)


@converter("AveragePool", (11, 19, 22))
def convert_average_pool(node: Node) -> list[Expr]:
    return _pool(node, average=True)


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
