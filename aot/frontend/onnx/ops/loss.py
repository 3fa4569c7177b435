"""Losses: NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss, composed
of catalogue operators.

For input ``x`` of shape ``(N, C, d..)`` and integer targets ``t`` of shape
``(N, d..)``: ``loss[n, d] = -x[n, t[n, d], d] * w[n, d]`` with ``w`` the
class weight of the target (``take``, clipped; 1 without weights) times 0
where ``t`` is ``ignore_index``.  The element picked is ``gather`` along
axis 1, whose clamping keeps an ignored target outside ``[0, C)`` in the
buffer (its loss is then multiplied by 0).  ``reduction`` none gives
``loss``, sum its sum, mean ``sum(loss) / sum(w)`` (the mean over the
elements not ignored, weighted; ``mean`` of ``loss`` when there are
neither weights nor ``ignore_index``).  ONNX's reference divides by the
count of *all* elements when ``ignore_index`` is -1 and there are no
weights; onnxruntime and PyTorch by the elements kept, as here.

SoftmaxCrossEntropyLoss is the same over ``log_softmax(scores, axis=1)``,
which is also its optional second output ``log_prob``.

Versions: NegativeLogLikelihoodLoss 12, 13, 22; SoftmaxCrossEntropyLoss
12, 13.
"""

from __future__ import annotations

import numpy as np

from ....ir.expr import Expr
from ..graph import Node
from ..registry import converter
from .util import require_float

_REDUCTIONS = ("none", "sum", "mean")


def _loss(node: Node, x: Expr, t: Expr, weight: Expr | None) -> Expr:
    dt = require_float(node, x)
    shape, tshape = node.shape(x), node.shape(t)
    if len(shape) < 2 or tshape != (shape[0], *shape[2:]):
        raise node.error(f"targets of shape {list(tshape)} do not fit the input of shape "
                         f"{list(shape)} (expected {[shape[0], *shape[2:]]})")
    if not node.dtype(t).is_int:
        raise node.error(f"targets must be integers, got {node.dtype(t)}")
    reduction = node.attr("reduction", "mean")
    if reduction not in _REDUCTIONS:
        raise node.unsupported("reduction", reduction, "must be none, sum or mean")
    ignore = node.attr("ignore_index")
    picked = node.call("gather", [x, node.call("expand_dims", [t], axis=1)], axis=1)
    loss = node.call("negative", [node.call("squeeze", [picked], axis=(1,))])
    w = None
    if weight is not None:
        if node.shape(weight) != (shape[1],):
            raise node.error(f"weights of shape {list(node.shape(weight))} for {shape[1]} "
                             "classes")
        w = node.call("take", [weight, t], axis=0, mode="clip")
    if ignore is not None:
        keep = node.call("cast", [node.call("not_equal", [t, node.constant(
            np.asarray(int(ignore), node.dtype(t).np))])], dtype=dt)
        w = keep if w is None else node.call("multiply", [w, keep])
    if w is not None:
        loss = node.call("multiply", [loss, w])
    if reduction == "none":
        return loss
    total = node.call("sum", [loss])
    if reduction == "sum":
        return total
    if w is None:
        return node.call("mean", [loss])
    return node.call("divide", [total, node.call("sum", [w])])


@converter("NegativeLogLikelihoodLoss", (12, 13, 22))
def convert_nll_loss(node: Node) -> list[Expr]:
    return [_loss(node, node.input(0), node.input(1), node.optional(2))]


@converter("SoftmaxCrossEntropyLoss", (12, 13))
def convert_softmax_cross_entropy(node: Node) -> list[Expr]:
    scores = node.input(0)
    require_float(node, scores)
    if node.rank(scores) < 2:
        raise node.error(f"scores must have rank >= 2, got {list(node.shape(scores))}")
    log_prob = node.call("nn.log_softmax", [scores], axis=1)
    loss = _loss(node, log_prob, node.input(1), node.optional(2))
    return [loss, log_prob] if len([o for o in node.proto.output if o]) > 1 else [loss]
