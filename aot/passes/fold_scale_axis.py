"""FoldScaleAxis (forward, constant weights): fold a per-channel scale and
shift that follow a convolution or dense layer into its weights and bias.

Design note
-----------
After SimplifyInference and FoldConstant a batch-normalised convolution is
``add(multiply(bias_add(conv2d(x, W), b), s), t)`` with constant ``W``,
``b``, ``s`` (shape ``(C, 1, 1)``) and ``t``: two extra operations per
output element, which on a microcontroller cost as much as a few
multiply-accumulates of a depthwise layer.  Because the convolution is
linear in its weight, per output channel ``o``::

    (conv(x, W)[o] + b[o]) * s[o] + t[o]  ==  conv(x, W[o] * s[o])[o] + (b[o] * s[o] + t[o])

so the scale moves into the weight's output-channel rows and everything
additive into one ``bias_add``.  This is the forward half of Relay's
``FoldScaleAxis`` restricted to what exporters produce: an ``nn.conv2d`` /
``nn.conv1d`` with channels-first data and an ``O...`` kernel layout, or an
``nn.dense``, whose weight is a constant; the scale or shift a constant that
broadcasts along the channel axis only (a ``(C, 1, 1)`` or ``(C,)`` vector,
or a scalar); each intermediate used once (the rewrite must not change what
another user sees).

Rounding: ``x * (w * s)`` summed is not bit-identical to ``(sum x * w) * s``
-- the results agree to float rounding, as in every framework that folds
batch normalisation (onnxruntime's graph optimiser does the same).  The
scale must be finite (an infinite scale times a zero sum is NaN, times a
zero weight also NaN, but not always at the same elements).  Float dtypes
only.
"""

from __future__ import annotations

import numpy as np

from ..ir.expr import Call, Constant, Expr, Function, Op, op
from ..ir.module import IRModule
from ..ir.ops.nn import BiasAddAttrs
from ..ir.types import TensorType
from ..ir.visitor import ExprMutator, Visit, children, post_order
from .manager import register_pass

__all__ = ["fold_scale_axis"]

_LINEAR = ("nn.conv2d", "nn.conv1d", "nn.dense")


def fold_scale_axis(mod: IRModule) -> IRModule:
    """A new, typed module with per-channel scales and shifts after
    constant-weight convolutions and dense layers folded into them."""
    from .type_infer import infer_types
    assert mod.is_typed, "fold_scale_axis needs a typed module"
    out = mod.copy()
    for gv, func in mod.functions.items():
        out.add(gv, _Folder(_use_counts(func)).visit(func))
    return infer_types(out)


def _use_counts(func: Function) -> dict[int, int]:
    """How many times each node is referenced (graph form shares nodes)."""
    uses: dict[int, int] = {id(func.body): 1}
    for node in post_order(func):
        for child in children(node):
            uses[id(child)] = uses.get(id(child), 0) + 1
    return uses


def _channel_axis(call: Call, rank: int) -> int | None:
    """The output's channel axis of a foldable linear call of output rank
    ``rank``, or None."""
    name = call.op.name
    if name == "nn.dense":
        return 1 if rank == 2 else None
    attrs = call.attrs
    layout = attrs.data_layout
    out_layout = attrs.out_layout or layout
    if layout not in ("NCHW", "NCW") or out_layout != layout or not attrs.kernel_layout.startswith("O"):
        return None
    return 1


class _Folder(ExprMutator):
    def __init__(self, uses: dict[int, int]) -> None:
        super().__init__()
        self.uses = uses
        #: id of a node this pass made or rebuilt -> (the node, the original
        #: it stands for, or None for a new node used once)
        self.made: dict[int, tuple[Expr, Expr | None]] = {}

    def _single(self, node: Expr) -> bool:
        """``node`` (old, rebuilt or new) is used once."""
        if id(node) in self.made:
            original = self.made[id(node)][1]
            if original is None:
                return True
            node = original
        return self.uses.get(id(node), 0) == 1

    def _make(self, node: Expr) -> Expr:
        self.made[id(node)] = (node, None)
        return node

    def visit_call(self, node: Call) -> Visit:
        new = yield from super().visit_call(node)
        if new is not node:
            self.made[id(new)] = (new, node)
        if not isinstance(node.op, Op) or node.op.name not in ("multiply", "add"):
            return new
        for k in (0, 1):
            folded = self._fold(node, new, k)
            if folded is not None:
                return folded
        return new

    # ------------------------------------------------------------ matching

    def _fold(self, old: Call, new: Call, k: int) -> Expr | None:
        """Fold operand ``1 - k`` (a constant) into operand ``k`` (the linear
        layer, possibly with a bias_add)."""
        y, c = new.args[k], new.args[1 - k]
        if not isinstance(c, Constant) or not isinstance(y, Call) or not isinstance(y.op, Op):
            return None
        if not self._single(y):
            return None
        out_t = old.checked_type
        if not isinstance(out_t, TensorType) or not out_t.dtype.is_float \
                or out_t != old.args[k].checked_type:
            return None
        bias: np.ndarray | None = None
        linear = y
        if y.op.name == "nn.bias_add":
            linear, b = y.args
            if not isinstance(b, Constant) or not isinstance(linear, Call) \
                    or not isinstance(linear.op, Op) or not self._single(linear):
                return None
            bias = np.asarray(b.data)
        if linear.op.name not in _LINEAR or not isinstance(linear.args[1], Constant):
            return None
        axis = _channel_axis(linear, len(out_t.shape))
        if axis is None or (bias is not None and y.attrs.axis % len(out_t.shape) != axis):
            return None
        vec = _channel_vector(np.asarray(c.data), out_t, axis)
        if vec is None:
            return None
        if old.op.name == "multiply":
            if not np.all(np.isfinite(vec)):
                return None
            w = np.asarray(linear.args[1].data)
            w = (w * vec.reshape((-1,) + (1,) * (w.ndim - 1))).astype(w.dtype)
            linear = self._make(Call(linear.op, (linear.args[0], Constant(w, span=c.span)),
                                     linear.attrs, span=linear.span))
            bias = None if bias is None else (bias * vec).astype(bias.dtype)
        else:
            bias = vec if bias is None else (bias + vec).astype(vec.dtype)
        if bias is None:
            return linear
        return self._make(Call(op("nn.bias_add"), (linear, Constant(bias, span=c.span)),
                               BiasAddAttrs(axis=axis), span=old.span))


def _channel_vector(c: np.ndarray, out_t: TensorType, axis: int) -> np.ndarray | None:
    """``c`` as a per-channel vector of the output's channel axis when it
    broadcasts along that axis only, else None."""
    rank = len(out_t.shape)
    if c.dtype != out_t.dtype.np or c.ndim > rank:
        return None
    shape = (1,) * (rank - c.ndim) + c.shape
    channels = int(out_t.shape[axis])
    if any(d != 1 for i, d in enumerate(shape) if i != axis) or shape[axis] not in (1, channels):
        return None
    return np.broadcast_to(c.reshape(-1), (channels,)).copy()


register_pass("FoldScaleAxis", opt_level=2)(fold_scale_axis)
