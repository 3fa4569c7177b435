"""SimplifyInference: rewrite training-style operators into plain arithmetic.

Design note
-----------
Relay's ``SimplifyInference`` (``src/relay/transforms/simplify_inference.cc``)
replaces the normalisation and dropout operators, which only make sense as
single calls while training, by the elementwise/broadcast/reduce operators
they compute at inference, so that FuseOps can fuse them into the
neighbouring convolution or dense and FoldConstant can fold the per-channel
arithmetic on constant weights.  The catalogue (``aot/ir/ops/nn.py``) has
three such operators; ``nn.instance_norm``, ``nn.group_norm`` and
``nn.l2_normalize``, which Relay also rewrites, do not exist here.

* ``nn.batch_norm(x, gamma, beta, mean, var)`` -> the tuple
  ``(x * scale + shift, mean, var)``, with, exactly as Relay builds it::

      scale = 1 / sqrt(var + eps)            (* gamma   when scale=True)
      shift = negative(mean) * scale         (+ beta    when center=True)

  and ``scale``/``shift`` expanded to broadcast along ``axis``
  (``expand_dims(v, axis=1, num_newaxis=rank(x) - axis - 1)``, nothing when
  ``axis`` is the last dimension: Relay's ``ExpandBiasToMatchAxis``).
  Relay rewrites only the projection ``.0`` and leaves the call in place
  for other uses; here the whole call becomes a tuple whose ``.1``/``.2``
  are the statistics unchanged (what the operator returns), so no
  ``nn.batch_norm`` survives the pass.
* ``nn.dropout(x)`` -> the tuple ``(x, ones_like(x))``: the identity and the
  all-ones mask the catalogue's dropout returns.
* ``nn.layer_norm(x, gamma, beta)`` -> Relay's expansion::

      m = mean(x, axis=[axis], keepdims=True)
      v = variance(x, m, axis=[axis], keepdims=True)
      (x - m) / sqrt(v + eps)  (* gamma) (+ beta)     (gamma, beta expanded)

* A projection ``t.i`` of a tuple this pass created is the field itself,
  so ``nn.batch_norm(...).0`` becomes the arithmetic with no tuple in
  between (the other fields are the call's own arguments: nothing is
  evaluated less than before, and every operator involved is pure).

The pass needs the argument types (rank, dtype) and reads them from the
*input* nodes' ``checked_type``: the module must be typed.  New nodes carry
the span of the call they replace.  The result is type-checked again.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from ..diagnostics import Span
from ..ir.attrs import Attrs
from ..ir.expr import Call, Constant, Expr, Op, Tuple, TupleGetItem, op
from ..ir.module import IRModule
from ..ir.ops.nn import BatchNormAttrs, LayerNormAttrs
from ..ir.ops.reduce import ReduceAttrs, VarianceAttrs
from ..ir.ops.transform import ExpandDimsAttrs
from ..ir.types import TensorType
from ..ir.visitor import ExprMutator, Visit, rebuild
from .manager import register_pass

__all__ = ["simplify_inference"]


def simplify_inference(mod: IRModule) -> IRModule:
    """A new, typed module in which every ``nn.batch_norm``, ``nn.dropout``
    and ``nn.layer_norm`` call is replaced by the arithmetic it computes."""
    from .type_infer import infer_types
    assert mod.is_typed, "simplify_inference needs a typed module (run aot.infer_types)"
    out = mod.copy()
    for gv, func in mod.functions.items():
        out.add(gv, _Simplifier().visit(func))
    return infer_types(out)


class _Builder:
    """Makes calls that all carry one span (the span of the replaced call)."""

    def __init__(self, span: Span | None) -> None:
        self.span = span

    def call(self, name: str, *args: Expr, attrs: Attrs | None = None) -> Call:
        if attrs is None:
            return Call(op(name), tuple(args), span=self.span)
        return Call(op(name), tuple(args), attrs, span=self.span)

    def scalar(self, value: float, like: TensorType) -> Constant:
        return Constant(np.asarray(value, dtype=like.dtype.np), span=self.span)

    def expand_to_axis(self, vec: Expr, ndim: int, axis: int) -> Expr:
        """Relay's ExpandBiasToMatchAxis for one axis: give the per-channel
        vector trailing unit dimensions so it broadcasts along ``axis``."""
        trailing = ndim - axis - 1
        if trailing == 0:
            return vec
        return self.call("expand_dims", vec, attrs=ExpandDimsAttrs(axis=1, num_newaxis=trailing))


def _data_type(call: Call) -> TensorType:
    t = call.args[0].checked_type
    assert isinstance(t, TensorType), \
        f"{call.op}: the data argument has no tensor type (is the module typed?)"
    return t


def _batch_norm(call: Call, args: tuple[Expr, ...]) -> Tuple:
    x, gamma, beta, mean, var = args
    attrs = call.attrs
    assert isinstance(attrs, BatchNormAttrs)
    xt = _data_type(call)
    b = _Builder(call.span)
    scale: Expr = b.call("divide", b.scalar(1.0, xt),
                         b.call("sqrt", b.call("add", var, b.scalar(attrs.epsilon, xt))))
    if attrs.scale:
        scale = b.call("multiply", scale, gamma)
    shift: Expr = b.call("multiply", b.call("negative", mean), scale)
    if attrs.center:
        shift = b.call("add", shift, beta)
    ndim = len(xt.shape)
    axis = attrs.axis % ndim
    scale = b.expand_to_axis(scale, ndim, axis)
    shift = b.expand_to_axis(shift, ndim, axis)
    out = b.call("add", b.call("multiply", x, scale), shift)
    return Tuple((out, mean, var), span=call.span)


def _dropout(call: Call, args: tuple[Expr, ...]) -> Tuple:
    (x,) = args
    b = _Builder(call.span)
    return Tuple((x, b.call("ones_like", x)), span=call.span)


def _layer_norm(call: Call, args: tuple[Expr, ...]) -> Expr:
    x, gamma, beta = args
    attrs = call.attrs
    assert isinstance(attrs, LayerNormAttrs)
    xt = _data_type(call)
    b = _Builder(call.span)
    axes = (attrs.axis,)
    mean = b.call("mean", x, attrs=ReduceAttrs(axis=axes, keepdims=True))
    var = b.call("variance", x, mean, attrs=VarianceAttrs(axis=axes, keepdims=True))
    denom = b.call("sqrt", b.call("add", var, b.scalar(attrs.epsilon, xt)))
    out: Expr = b.call("divide", b.call("subtract", x, mean), denom)
    ndim = len(xt.shape)
    axis = attrs.axis % ndim
    if attrs.scale:
        out = b.call("multiply", out, b.expand_to_axis(gamma, ndim, axis))
    if attrs.center:
        out = b.call("add", out, b.expand_to_axis(beta, ndim, axis))
    return out


_REWRITES: dict[str, Callable[[Call, tuple[Expr, ...]], Expr]] = {
    "nn.batch_norm": _batch_norm,
    "nn.dropout": _dropout,
    "nn.layer_norm": _layer_norm,
}


class _Simplifier(ExprMutator):
    def __init__(self) -> None:
        super().__init__()
        #: tuples built by this pass (their projections are the fields)
        self.created: set[Tuple] = set()

    def visit_call(self, node: Call) -> Visit:
        new = yield from super().visit_call(node)
        rewrite = _REWRITES.get(node.op.name) if isinstance(node.op, Op) else None
        if rewrite is None:
            return new
        out = rewrite(node, new.args)
        if isinstance(out, Tuple):
            self.created.add(out)
        return out

    def visit_tuple_getitem(self, node: TupleGetItem) -> Visit:
        t = yield node.tuple_value
        if t in self.created:
            assert isinstance(t, Tuple)
            return t.fields[node.index]
        return rebuild(node, tuple_value=t)


register_pass("SimplifyInference", opt_level=0)(simplify_inference)
