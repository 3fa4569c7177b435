"""BackwardFoldScaleAxis: a per-channel scale after a convolution or dense
layer moves backwards into the layer's weight (output channels).

Design note
-----------
The shared rules (which layers, which scales, rounding, divides) are in
:mod:`aot.passes.fold_scale_axis`.  After SimplifyInference and
FoldConstant a batch-normalised convolution is
``add(multiply(bias_add(conv2d(x, W), b), s), t)`` with constant ``W``,
``b``, ``s`` (``(C, 1, 1)``) and ``t``.  One bottom-up walk (the
iterative, memoised :class:`~aot.ir.visitor.ExprMutator`; the rewrite of a
call sees its operands already rewritten, so chains of scales and shifts
collapse one node at a time) does two rewrites:

* **Scale** ``multiply(y, s)`` / ``multiply(s, y)`` / ``divide(y, c)``
  (``s = 1 / c`` only when that is exact, unless ``inexact_divide``): the
  tree under ``y`` is checked first, as Relay's backward "prepare" phase
  does, then rebuilt with the scale pushed into it.  The tree may be, as
  in Relay's ``FScaleAxisBackwardTransform`` rules:

  - the layer itself: its weight's output channels are scaled;
  - ``nn.bias_add(u, b)`` on the channel axis: ``b * s`` and ``u`` scaled;
  - ``add``/``subtract`` of ``u`` and a per-channel constant ``t``:
    ``t * s`` and ``u`` scaled;
  - ``add``/``subtract`` of two tensors of the output's shape: both scaled
    (a residual sum of two convolutions);
  - ``nn.relu(u)`` / ``nn.leaky_relu(u)``: ``u`` scaled, only when every
    scale is positive (``relu(u) * s == relu(u * s)`` needs ``s > 0``).

  Every node of the tree is used once and has the output's type (no
  broadcast grows it); every leaf is a foldable layer with the same
  channel axis.  Relay also pushes a scale through an ``add`` with a
  per-channel tensor that is not a constant, by multiplying that operand
  at run time; here such an operand stops the fold (it would move a
  multiply, not remove one).

* **Shift** ``add(y, t)`` / ``add(t, y)`` / ``subtract(y, t)`` with ``y`` a
  layer or ``nn.bias_add(layer, b)``, ``t`` a per-channel constant:
  ``nn.bias_add(layer, b + t)`` (``b - t`` for subtract: negation is
  exact, the sum is one float addition per channel instead of one per
  element).  Not in Relay, which keeps the add: here it makes a batch
  normalisation's shift and the layer's own bias one ``bias_add``.

So batch normalisation becomes ``bias_add(conv2d(x, W * s), b * s + t)``.
New nodes carry the type and span of the node they replace; the result is
type-checked again.
"""

from __future__ import annotations

import numpy as np

from ..ir.expr import Call, Constant, Expr, op
from ..ir.module import IRModule
from ..ir.ops.nn import BiasAddAttrs
from ..ir.types import TensorType
from ..ir.visitor import Visit
from .fold_scale_axis import (ScaleAxisOptions, ScaleRewriter, channel_shaped, channel_vector,
                              is_op, linear_info, reciprocal, run_on_functions,
                              scale_output_channels, shift_side, stays_finite, typed_const,
                              usable_scale)
from .manager import register_pass

__all__ = ["backward_fold_scale_axis"]


def backward_fold_scale_axis(mod: IRModule, opts: ScaleAxisOptions | None = None) -> IRModule:
    """A new, typed module with per-channel scales and shifts after
    constant-weight convolutions and dense layers folded into them."""
    options = opts or ScaleAxisOptions()
    return run_on_functions(mod, lambda uses: _Backward(uses, options))


class _Backward(ScaleRewriter):
    def visit_call(self, node: Call) -> Visit:
        new = yield from super().visit_call(node)
        self.note_rebuilt(node, new)
        result = self._fold(new, node.checked_type)
        # the fold's root stands for ``node``: it has node's uses, not one
        self.note_rebuilt(node, result)
        return result

    def _fold(self, new: Call, out_t: object) -> Expr:
        if not isinstance(out_t, TensorType) or not out_t.dtype.is_float:
            return new
        if is_op(new, "multiply", "divide"):
            for k in ((0, 1) if new.op.name == "multiply" else (0,)):
                folded = self._scale(new, k, out_t)
                if folded is not None:
                    return folded
        elif is_op(new, "add", "subtract"):
            for k in ((0, 1) if new.op.name == "add" else (0,)):
                folded = self._shift(new, k, out_t)
                if folded is not None:
                    return folded
        return new

    # ---------------------------------------------------------------- shift

    def _shift(self, call: Call, k: int, out_t: TensorType) -> Expr | None:
        """``call`` = ``y + t`` (or ``y - t``) with ``y`` = operand ``k``: the
        shift into the layer's bias."""
        y, t = call.args[k], call.args[1 - k]
        if not isinstance(t, Constant) or not isinstance(y, Call) or y.checked_type != out_t \
                or not self.single(y):
            return None
        layer, bias = y, None
        if is_op(y, "nn.bias_add"):
            layer, b = y.args
            if not isinstance(b, Constant) or not self.single(layer):
                return None
            bias = b
        lin = linear_info(layer)
        if lin is None or layer.checked_type != out_t:
            return None
        rank = len(out_t.shape)
        if bias is not None and y.attrs.axis % rank != lin.out_axis:
            return None
        vec = channel_vector(np.asarray(t.data), out_t, lin.out_axis)
        if vec is None:
            return None
        if call.op.name == "subtract":
            vec = -vec
        if bias is not None:
            vec = (np.asarray(bias.data) + vec).astype(vec.dtype)
        return self.make(Call(op("nn.bias_add"), (layer, typed_const(vec, t.span)),
                              BiasAddAttrs(axis=lin.out_axis), span=call.span,
                              checked_type=out_t))

    # ---------------------------------------------------------------- scale

    def _scale(self, call: Call, k: int, out_t: TensorType) -> Expr | None:
        """``call`` = ``y * c`` (or ``y / c``) with ``y`` = operand ``k``: the
        scale pushed into the tree under ``y``."""
        y, c = call.args[k], call.args[1 - k]
        if not isinstance(c, Constant) or not isinstance(y, Call):
            return None
        axis = _channel_axis(y)
        if axis is None:
            return None
        vec = channel_vector(np.asarray(c.data), out_t, axis)
        if vec is not None and call.op.name == "divide":
            vec = reciprocal(vec, self.opts.inexact_divide)
        if vec is None or not usable_scale(vec):
            return None
        order = self._plan(y, out_t, axis, positive=bool(np.all(vec > 0)))
        if order is None:
            return None
        return self._rebuild(order, out_t, axis, vec)

    def _plan(self, root: Expr, out_t: TensorType, axis: int, positive: bool) -> list[Call] | None:
        """The nodes of the tree under ``root`` the scale is pushed through,
        parents before children, or None when the scale cannot reach a
        layer along every path."""
        order: list[Call] = []
        seen: set[int] = set()
        stack = [root]
        while stack:
            n = stack.pop()
            if id(n) in seen or not isinstance(n, Call) or n.checked_type != out_t \
                    or not self.single(n):
                return None
            seen.add(id(n))
            order.append(n)
            lin = linear_info(n)
            if lin is not None:
                if lin.out_axis != axis:
                    return None
            elif is_op(n, "nn.relu", "nn.leaky_relu"):
                if not positive:
                    return None
                stack.append(n.args[0])
            elif is_op(n, "nn.bias_add"):
                if not isinstance(n.args[1], Constant) or n.attrs.axis % len(out_t.shape) != axis:
                    return None
                stack.append(n.args[0])
            elif is_op(n, "add", "subtract"):
                side = shift_side(n, out_t, axis)
                if side is None:
                    if any(isinstance(a, Constant) for a in n.args):
                        return None
                    stack.extend(reversed(n.args))
                else:
                    stack.append(n.args[1 - side])
            else:
                return None
        return order

    def _rebuild(self, order: list[Call], out_t: TensorType, axis: int,
                 vec: np.ndarray) -> Expr | None:
        """The tree of ``order`` with the scale pushed in (children first),
        or None when a scaled constant would overflow."""
        rank = len(out_t.shape)
        new_of: dict[int, Expr] = {}

        def scaled(e: Expr) -> Expr:
            return new_of.get(id(e), e)

        def times(c: Constant, factor: np.ndarray) -> Constant | None:
            old = np.asarray(c.data)
            with np.errstate(all="ignore"):
                new = (old * factor).astype(old.dtype)
            return typed_const(new, c.span) if stays_finite(new, old) else None

        for n in reversed(order):
            lin = linear_info(n)
            if lin is not None:
                data, w = n.args
                w_new = scale_output_channels(np.asarray(w.data), lin, vec)
                if not stays_finite(w_new, np.asarray(w.data)):
                    return None
                args: tuple[Expr, ...] = (data, typed_const(w_new, w.span))
            elif is_op(n, "nn.bias_add"):
                x, b = n.args
                b_new = times(b, vec)
                if b_new is None:
                    return None
                args = (scaled(x), b_new)
            elif is_op(n, "add", "subtract") and shift_side(n, out_t, axis) is not None:
                side = shift_side(n, out_t, axis)
                t_new = times(n.args[side], channel_shaped(vec, rank, axis))
                if t_new is None:
                    return None
                args = tuple(t_new if i == side else scaled(a) for i, a in enumerate(n.args))
            else:                                   # relu, leaky_relu, add of two scaled
                args = tuple(scaled(a) for a in n.args)
            new_of[id(n)] = Call(n.op, args, n.attrs, n.type_args, span=n.span,
                                 checked_type=n.checked_type)
        for node in new_of.values():
            self.make(node)
        return new_of[id(order[0])]


def _channel_axis(y: Expr) -> int | None:
    """The output channel axis of the first layer under ``y`` along the
    chain a scale would travel (the fold checks every path later)."""
    n = y
    while isinstance(n, Call):
        lin = linear_info(n)
        if lin is not None:
            return lin.out_axis
        if is_op(n, "nn.relu", "nn.leaky_relu", "nn.bias_add"):
            n = n.args[0]
        elif is_op(n, "add", "subtract"):
            a, b = n.args
            n = a if not isinstance(a, Constant) else b
        else:
            return None
    return None


register_pass("BackwardFoldScaleAxis", opt_level=2, options=ScaleAxisOptions)(
    backward_fold_scale_axis)
