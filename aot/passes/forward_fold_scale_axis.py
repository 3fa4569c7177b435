"""ForwardFoldScaleAxis: a per-channel scale before a convolution or dense
layer moves forwards into the layer's weight (input channels).

Design note
-----------
The shared rules (which layers, which scales, rounding, divides) are in
:mod:`aot.passes.fold_scale_axis`.  An input normalisation
``conv2d(multiply(x, s), W)`` or a batch normalisation before a layer
(pre-activation networks: ``conv2d(relu(add(multiply(x, s), t)), W)``)
scales the layer's *input* channels, and per input channel ``c``::

    conv(x * s, W) == conv(x, W')   with W'[o, j] = W[o, j] * s[c(o, j)]

where ``c(o, j) = g * I + j`` for output channel ``o`` in group
``g = o // (O / groups)`` and ``I`` the weight's input-channel extent (so
``groups == 1``, depthwise and grouped convolutions are all covered; a
dense layer is the ``groups == 1`` case with channels on the last axis).
Zero padding is applied to the layer's input in both forms, so it stays
zero.

One bottom-up walk (the iterative :class:`~aot.ir.visitor.ExprMutator`)
looks, at each foldable layer, down the chain that feeds its data operand,
as Relay's ``FScaleAxisForwardRewrite`` rules do:

* ``nn.relu(u)`` / ``nn.leaky_relu(u)``: continue into ``u``; the scale
  must then be positive everywhere (``relu(u * s) == relu(u) * s`` needs
  ``s > 0``);
* ``add``/``subtract`` of ``u`` and a per-channel constant ``t``, or
  ``nn.bias_add(u, t)`` on the channel axis: continue into ``u``; ``t``
  becomes ``t / s`` (``u * s + t == (u + t / s) * s``), only when that
  quotient is exact (``s`` a power of two) unless ``inexact_divide``;
* ``multiply(x, s)`` / ``multiply(s, x)`` / ``divide(x, c)`` with ``s`` (or
  ``1 / c``, see the divide rule) a per-channel constant: the scale; the
  chain is rebuilt on ``x`` without it and the weight's input channels
  are scaled.

Every node of the chain is used once (by the next) and has the data's
type.  Relay's ``ForwardPrep`` additionally lets the scale through when it
reaches several layers (the intersection of their demands); here the
scale must feed one layer, the case the backward direction does not
already cover.  New nodes carry the type and span of the node they
replace; the result is type-checked again.
"""

from __future__ import annotations

import numpy as np

from ..ir.expr import Call, Constant, Expr
from ..ir.module import IRModule
from ..ir.types import TensorType
from ..ir.visitor import Visit
from .fold_scale_axis import (Linear, ScaleAxisOptions, ScaleRewriter, channel_shaped,
                              channel_vector, exact_quotient, is_op, linear_info, reciprocal,
                              run_on_functions, scale_input_channels, shift_side, stays_finite,
                              typed_const, usable_scale)
from .manager import register_pass

__all__ = ["forward_fold_scale_axis"]


def forward_fold_scale_axis(mod: IRModule, opts: ScaleAxisOptions | None = None) -> IRModule:
    """A new, typed module with per-channel scales before constant-weight
    convolutions and dense layers folded into them."""
    options = opts or ScaleAxisOptions()
    return run_on_functions(mod, lambda uses: _Forward(uses, options))


class _Forward(ScaleRewriter):
    def visit_call(self, node: Call) -> Visit:
        new = yield from super().visit_call(node)
        self.note_rebuilt(node, new)
        lin = linear_info(new)
        if lin is None:
            return new
        folded = self._fold(new, lin)
        if folded is None:
            return new
        self.note_rebuilt(node, folded)     # it has node's uses, not one
        return folded

    def _fold(self, layer: Call, lin: Linear) -> Expr | None:
        data, weight = layer.args
        data_t = data.checked_type
        assert isinstance(data_t, TensorType)
        chain: list[Call] = []
        positive = False
        n = data
        while True:
            if not isinstance(n, Call) or n.checked_type != data_t or not self.single(n):
                return None
            if is_op(n, "multiply", "divide"):
                break
            if is_op(n, "nn.relu", "nn.leaky_relu"):
                positive = True
                chain.append(n)
                n = n.args[0]
            elif is_op(n, "nn.bias_add"):
                if not isinstance(n.args[1], Constant) \
                        or n.attrs.axis % len(data_t.shape) != lin.data_axis:
                    return None
                chain.append(n)
                n = n.args[0]
            elif is_op(n, "add", "subtract"):
                side = shift_side(n, data_t, lin.data_axis)
                if side is None:
                    return None
                chain.append(n)
                n = n.args[1 - side]
            else:
                return None
        found = self._scale_of(n, data_t, lin.data_axis)
        if found is None:
            return None
        x, vec = found
        if not usable_scale(vec) or (positive and not np.all(vec > 0)):
            return None
        w = scale_input_channels(np.asarray(weight.data), lin, vec)
        if w is None or not stays_finite(w, np.asarray(weight.data)):
            return None
        rank = len(data_t.shape)
        current = x
        for m in reversed(chain):
            if is_op(m, "nn.relu", "nn.leaky_relu"):
                args: tuple[Expr, ...] = (current,)
            else:
                if is_op(m, "nn.bias_add"):
                    side, divisor = 1, vec
                else:
                    side = shift_side(m, data_t, lin.data_axis)
                    divisor = channel_shaped(vec, rank, lin.data_axis)
                t = m.args[side]
                q = exact_quotient(np.asarray(t.data), divisor, self.opts.inexact_divide)
                if q is None:
                    return None
                args = tuple(typed_const(q, t.span) if i == side else current
                             for i in range(2))
            current = self.make(Call(m.op, args, m.attrs, m.type_args, span=m.span,
                                     checked_type=m.checked_type))
        return self.make(Call(layer.op, (current, typed_const(w, weight.span)), layer.attrs,
                              layer.type_args, span=layer.span, checked_type=layer.checked_type))

    def _scale_of(self, n: Call, data_t: TensorType, axis: int
                  ) -> tuple[Expr, np.ndarray] | None:
        """``(x, s)`` when ``n`` is ``x * s``, ``s * x`` or ``x / c`` (``s =
        1 / c``) with a per-channel constant scale."""
        for k in ((0, 1) if n.op.name == "multiply" else (0,)):
            x, c = n.args[k], n.args[1 - k]
            if not isinstance(c, Constant) or x.checked_type != data_t:
                continue
            vec = channel_vector(np.asarray(c.data), data_t, axis)
            if vec is not None and n.op.name == "divide":
                vec = reciprocal(vec, self.opts.inexact_divide)
            if vec is not None:
                return x, vec
        return None


register_pass("ForwardFoldScaleAxis", opt_level=2, options=ScaleAxisOptions)(
    forward_fold_scale_axis)
