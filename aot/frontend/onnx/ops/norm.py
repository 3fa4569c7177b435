"""Normalisation: BatchNormalization (inference), LayerNormalization,
RMSNormalization, InstanceNormalization, GroupNormalization,
LpNormalization, LRN.

BatchNormalization maps onto ``nn.batch_norm`` on axis 1 (its first
output); only inference is supported (``training_mode`` 0, and only the
first output).  Version 15 lets the statistics have another float type
than the data: they are cast to it.  Versions 9, 14, 15.

LayerNormalization (17) normalises over the axes ``[axis, rank)``: when
that is the last axis alone and Scale/B are vectors of its length,
``nn.layer_norm``; otherwise the normalised axes are flattened into one
for ``nn.layer_norm`` without scale and centre, the result reshaped back,
and Scale/B applied with broadcasting.  The optional Mean and InvStdDev
outputs are computed apart (``mean``, ``variance``, ``rsqrt``) in float32
(``stash_type`` 1, the default and only one supported).

RMSNormalization (23) is ``x * rsqrt(mean(x * x) + epsilon) * scale`` with
the mean over the axes ``[axis, rank)`` (ONNX's reference formula), in
float32 for a float16 input (``stash_type`` 1, the only one defined).

InstanceNormalization is ``nn.instance_norm`` on axis 1 (rank 3 or more).
GroupNormalization is ``nn.group_norm`` on axis 1: version 21's scale and
bias are per channel; version 18's are per group, repeated to the
channels of each group (what 18's reference computes; ONNX 1.22's checker
refuses such models as deprecated, older ones accept them).  A float16 input
with ``stash_type`` 1 (float32, the default) is normalised in float32 and
cast back.  LpNormalization is ``x / norm`` over its axis with ``norm``
``sqrt(sum(x * x))`` (``p`` 2) or ``sum(abs(x))`` (``p`` 1), and 0 where the
norm is 0 (ONNX's reference and onnxruntime; ``nn.l2_normalize`` would give
NaN there, or change tiny vectors through its ``eps``).
"""

from __future__ import annotations

import numpy as np

from ....ir.dtype import DType
from ....ir.expr import Expr
from ..graph import Node
from ..registry import converter
from .util import normalize_axis, prod, require_float, reshape_to


@converter("BatchNormalization", (9, 14, 15))
def convert_batch_norm(node: Node) -> list[Expr]:
    x = node.input(0)
    dt = require_float(node, x)
    if node.attr("training_mode", 0):
        raise node.unsupported("training_mode", why="(training) is not supported")
    if len([o for o in node.proto.output if o]) > 1:
        raise node.error("only the inference form (one output) is supported")
    if node.rank(x) < 2:
        raise node.error(f"the input must have rank >= 2, got {list(node.shape(x))}")
    args = [x]
    for i in range(1, 5):
        p = node.input(i)
        if node.dtype(p) != dt:
            p = node.call("cast", [p], dtype=dt)
        args.append(p)
    bn = node.call("nn.batch_norm", args, axis=1, epsilon=float(node.attr("epsilon", 1e-5)))
    return [node.ctx.get_item(bn, 0)]


@converter("LayerNormalization", (17,))
def convert_layer_norm(node: Node) -> list[Expr]:
    x, scale, bias = node.input(0), node.input(1), node.optional(2)
    require_float(node, x)
    shape = node.shape(x)
    axis = normalize_axis(node, int(node.attr("axis", -1)), len(shape))
    eps = float(node.attr("epsilon", 1e-5))
    y = _layer_norm(node, x, scale, bias, axis, eps)
    if len(node.proto.output) == 1:
        return [y]
    return [y, *_layer_norm_statistics(node, x, axis, eps)]


def _layer_norm_statistics(node: Node, x: Expr, axis: int, eps: float) -> list[Expr]:
    """The Mean and InvStdDev outputs: keepdims statistics over the
    normalised axes in the stash type (float32 by default)."""
    stash = int(node.attr("stash_type", 1))
    if stash != 1:
        raise node.unsupported("stash_type")
    xf = x if node.dtype(x) is DType.FLOAT32 else node.call("cast", [x], dtype=DType.FLOAT32)
    axes = tuple(range(axis, node.rank(x)))
    mean = node.call("mean", [xf], axis=axes, keepdims=True)
    var = node.call("variance", [xf, mean], axis=axes, keepdims=True)
    eps_c = node.constant(np.asarray(eps, np.float32))
    inv = node.call("rsqrt", [node.call("add", [var, eps_c])])
    return [mean, inv]


def _layer_norm(node: Node, x: Expr, scale: Expr, bias: Expr | None, axis: int,
                eps: float) -> Expr:
    shape = node.shape(x)
    norm_shape = shape[axis:]
    vec = (prod(norm_shape),)
    simple = axis == len(shape) - 1 and node.shape(scale) == vec \
        and (bias is None or node.shape(bias) == vec)
    if simple:
        beta = bias if bias is not None else node.constant(
            np.zeros(vec, dtype=node.dtype(x).np))
        return node.call("nn.layer_norm", [x, scale, beta], axis=-1, epsilon=eps,
                         center=bias is not None)
    flat = reshape_to(node, x, shape[:axis] + vec)
    ones = node.constant(np.ones(vec, dtype=node.dtype(x).np))
    zeros = node.constant(np.zeros(vec, dtype=node.dtype(x).np))
    y = node.call("nn.layer_norm", [flat, ones, zeros], axis=-1, epsilon=eps, center=False,
                  scale=False)
    y = reshape_to(node, y, shape)
    y = node.call("multiply", [y, scale])
    if bias is not None:
        y = node.call("add", [y, bias])
    return y


@converter("LRN", (1, 13))
def convert_lrn(node: Node) -> list[Expr]:
    """``x / (bias + alpha/size * square_sum)^beta`` with ``square_sum``
    over the channel window ``[c - floor((size-1)/2), c + ceil((size-1)/2)]``:
    the window mean of ``x*x`` (zeros outside, counted) is an average pool
    over channels of the ``(N, 1, C, H*W)`` view, and ``alpha/size *
    square_sum`` is ``alpha`` times that mean."""
    x = node.input(0)
    require_float(node, x)
    shape = node.shape(x)
    if len(shape) < 3:
        raise node.error(f"the input must have rank >= 3, got {list(shape)}")
    size = node.attr("size")
    if size is None or int(size) < 1:
        raise node.error(f"size must be a positive integer, got {size}")
    size = int(size)
    alpha, beta = float(node.attr("alpha", 1e-4)), float(node.attr("beta", 0.75))
    bias = float(node.attr("bias", 1.0))
    n, c = shape[0], shape[1]
    rest = prod(shape[2:])
    sq = node.call("multiply", [x, x])
    view = reshape_to(node, sq, (n, 1, c, rest))
    before, after = (size - 1) // 2, size - 1 - (size - 1) // 2
    mean = node.call("nn.avg_pool2d", [view], pool_size=(size, 1),
                     padding=(before, 0, after, 0), count_include_pad=True)
    mean = reshape_to(node, mean, shape)
    dt = node.dtype(x)
    scaled = node.call("multiply", [mean, node.constant(np.asarray(alpha, dt.np))])
    base = node.call("add", [scaled, node.constant(np.asarray(bias, dt.np))])
    den = node.call("power", [base, node.constant(np.asarray(beta, dt.np))])
    return [node.call("divide", [x, den])]


@converter("InstanceNormalization", (6, 22))
def convert_instance_norm(node: Node) -> list[Expr]:
    x, scale, bias = node.input(0), node.input(1), node.input(2)
    require_float(node, x)
    if node.rank(x) < 3:
        raise node.error(f"the input must have rank >= 3, got {list(node.shape(x))}")
    return [node.call("nn.instance_norm", [x, scale, bias], axis=1,
                      epsilon=float(node.attr("epsilon", 1e-5)))]


@converter("GroupNormalization", (18, 21))
def convert_group_norm(node: Node) -> list[Expr]:
    x, scale, bias = node.input(0), node.input(1), node.input(2)
    dt = require_float(node, x)
    shape = node.shape(x)
    if len(shape) < 2:
        raise node.error(f"the input must have rank >= 2, got {list(shape)}")
    groups = node.attr("num_groups")
    if groups is None or int(groups) < 1 or shape[1] % int(groups):
        raise node.error(f"num_groups must be a positive divisor of the {shape[1]} channels, "
                         f"got {groups}")
    groups = int(groups)
    if node.version < 21:        # per group: repeated to each group's channels
        scale, bias = (node.call("repeat", [v], repeats=shape[1] // groups, axis=0)
                       for v in (scale, bias))
    stash = int(node.attr("stash_type", 1))
    if stash != 1:
        raise node.unsupported("stash_type")
    wide = dt is not DType.FLOAT32 and dt.itemsize < 4
    if wide:
        x, scale, bias = (node.call("cast", [v], dtype=DType.FLOAT32) for v in (x, scale, bias))
    y = node.call("nn.group_norm", [x, scale, bias], num_groups=groups, axis=1,
                  epsilon=float(node.attr("epsilon", 1e-5)))
    return [node.call("cast", [y], dtype=dt) if wide else y]


@converter("LpNormalization", (1, 22))
def convert_lp_norm(node: Node) -> list[Expr]:
    x = node.input(0)
    require_float(node, x)
    axis = normalize_axis(node, int(node.attr("axis", -1)), node.rank(x))
    p = int(node.attr("p", 2))
    if p not in (1, 2):
        raise node.error(f"p must be 1 or 2, got {p}")
    terms = node.call("multiply", [x, x]) if p == 2 else node.call("abs", [x])
    norm = node.call("sum", [terms], axis=(axis,), keepdims=True)
    if p == 2:
        norm = node.call("sqrt", [norm])
    zero = node.constant(np.zeros((), node.dtype(x).np))
    return [node.call("where", [node.call("equal", [norm, zero]), zero,
                                node.call("divide", [x, norm])])]


@converter("RMSNormalization", (23,))
def convert_rms_norm(node: Node) -> list[Expr]:
    x, scale = node.input(0), node.input(1)
    dt = require_float(node, x)
    if int(node.attr("stash_type", 1)) != 1:
        raise node.unsupported("stash_type")
    rank = node.rank(x)
    axis = normalize_axis(node, int(node.attr("axis", -1)), rank)
    work = DType.FLOAT32 if dt is DType.FLOAT16 else dt
    if dt is not work:
        x = node.call("cast", [x], dtype=work)
    if node.dtype(scale) is not work:
        scale = node.call("cast", [scale], dtype=work)
    eps = node.constant(np.asarray(float(node.attr("epsilon", 1e-5)), work.np))
    ms = node.call("mean", [node.call("multiply", [x, x])], axis=tuple(range(axis, rank)),
                   keepdims=True)
    y = node.call("multiply", [node.call("multiply", [x, node.call("rsqrt", [node.call(
        "add", [ms, eps])])]), scale])
    return [y if dt is work else node.call("cast", [y], dtype=dt)]
