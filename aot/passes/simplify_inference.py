"""SimplifyInference: rewrite training-style operators into plain arithmetic.

Design note
-----------
Relay's ``SimplifyInference`` (``src/relay/transforms/simplify_inference.cc``)
replaces the normalisation and dropout operators, which only make sense as
single calls while training, by the elementwise/broadcast/reduce operators
they compute at inference, so that FuseOps can fuse them into the
neighbouring convolution or dense and FoldConstant can fold the per-channel
arithmetic on constant weights.  The catalogue (``aot/ir/ops/nn.py``) has
three such operators and ``aot/ir/ops/nn_norm.py`` three more, all of which
Relay also rewrites.

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

* ``nn.instance_norm(x, gamma, beta)`` -> the same with ``mean`` and
  ``variance`` over every axis but 0 and ``axis``.
* ``nn.group_norm(x, gamma, beta)`` -> Relay's expansion: ``x`` reshaped to
  split ``axis`` into (groups, channels per group), normalised over the
  channels of a group and the axes after them, reshaped back, then
  ``gamma``/``beta`` per channel.
* ``nn.l2_normalize(x)`` -> ``x / sqrt(maximum(sum(x * x, axis,
  keepdims=True), eps))``.
* A projection ``t.i`` of a tuple this pass created is the field itself,
  so ``nn.batch_norm(...).0`` becomes the arithmetic with no tuple in
  between (the other fields are the call's own arguments: nothing is
  evaluated less than before, and every operator involved is pure).

Each rewrite is a dataflow pattern and a callback (:mod:`aot.ir.pattern`):
``nn.batch_norm(x, gamma, beta, mean, var)``, ``nn.dropout(x)``,
the four normalisations and ``(...).i``, applied in one
bottom-up walk (:func:`~aot.ir.pattern.rewrite_bottom_up`): a call is
expanded once its arguments are, and a projection is matched after the
tuple it projects has been built, so the projection callback recognises
the tuples the other callbacks made (they remember them; a tuple the
program wrote itself is left alone: dropping its other fields could drop
effects).

The pass needs the argument types (rank, dtype) and reads them from the
*original* call's arguments (``pre``), whose ``checked_type`` is set: the
module must be typed.  New nodes carry the span of the call they replace.
The result is type-checked again; a module without these operators comes
back as it is.
"""

from __future__ import annotations

import numpy as np

from ..diagnostics import Span
from ..ir.attrs import Attrs
from ..ir.expr import Call, Constant, Expr, Tuple, TupleGetItem, op
from ..ir.module import IRModule
from ..ir.ops.nn import BatchNormAttrs, LayerNormAttrs
from ..ir.ops.nn_norm import GroupNormAttrs, InstanceNormAttrs, L2NormalizeAttrs
from ..ir.ops.shape_util import group_shape, instance_axes, l2_axes
from ..ir.ops.reduce import ReduceAttrs, VarianceAttrs
from ..ir.ops.transform import ExpandDimsAttrs, ReshapeAttrs
from ..ir.pattern import (DFPattern, DFPatternCallback, is_op, is_tuple, is_tuple_get_item,
                          rewrite_bottom_up, wildcard)
from ..ir.types import TensorType
from .manager import register_pass

__all__ = ["simplify_inference"]

NodeMap = dict[DFPattern, list[Expr]]


def simplify_inference(mod: IRModule) -> IRModule:
    """A new, typed module in which every ``nn.batch_norm``, ``nn.dropout``,
    ``nn.layer_norm``, ``nn.instance_norm``, ``nn.group_norm`` and
    ``nn.l2_normalize`` call is replaced by the arithmetic it computes
    (the module itself when there is none)."""
    assert mod.is_typed, "simplify_inference needs a typed module (run aot.infer_types)"
    created: set[Tuple] = set()
    callbacks = [ExpandBatchNorm(created), ExpandDropout(created), ExpandLayerNorm(),
                 ExpandInstanceNorm(), ExpandGroupNorm(), ExpandL2Normalize(),
                 ProjectExpansion(created)]
    out = rewrite_bottom_up(callbacks, mod)
    assert isinstance(out, IRModule)
    return out


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


def _data_type(pre: Expr) -> TensorType:
    """The type of the data argument of the original call."""
    assert isinstance(pre, Call)
    t = pre.args[0].checked_type
    assert isinstance(t, TensorType), \
        f"{pre.op}: the data argument has no tensor type (is the module typed?)"
    return t


class ExpandBatchNorm(DFPatternCallback):
    """``nn.batch_norm(x, gamma, beta, mean, var)`` -> ``(x * scale + shift,
    mean, var)`` (the note)."""

    def __init__(self, created: set[Tuple]) -> None:
        super().__init__()
        self.created = created
        self.x, self.gamma, self.beta, self.mean, self.var = (wildcard() for _ in range(5))
        self.pattern = is_op("nn.batch_norm")(self.x, self.gamma, self.beta, self.mean,
                                              self.var)

    def callback(self, pre: Expr, post: Expr, node_map: NodeMap) -> Expr:
        x, gamma, beta, mean, var = (node_map[p][0] for p in
                                     (self.x, self.gamma, self.beta, self.mean, self.var))
        attrs = post.attrs
        assert isinstance(attrs, BatchNormAttrs)
        xt = _data_type(pre)
        b = _Builder(post.span)
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
        tup = Tuple((out, mean, var), span=post.span)
        self.created.add(tup)
        return tup


class ExpandDropout(DFPatternCallback):
    """``nn.dropout(x)`` -> ``(x, ones_like(x))``."""

    def __init__(self, created: set[Tuple]) -> None:
        super().__init__()
        self.created = created
        self.x = wildcard()
        self.pattern = is_op("nn.dropout")(self.x)

    def callback(self, pre: Expr, post: Expr, node_map: NodeMap) -> Expr:
        x = node_map[self.x][0]
        tup = Tuple((x, _Builder(post.span).call("ones_like", x)), span=post.span)
        self.created.add(tup)
        return tup


NormAttrs = LayerNormAttrs | InstanceNormAttrs | GroupNormAttrs


class _ExpandNorm(DFPatternCallback):
    """``op(x, gamma, beta)`` -> ``(x - mean) / sqrt(var + eps)`` over the
    operator's axes, then ``* gamma + beta`` per channel (the note)."""

    op_name = ""

    def __init__(self) -> None:
        super().__init__()
        self.x, self.gamma, self.beta = wildcard(), wildcard(), wildcard()
        self.pattern = is_op(self.op_name)(self.x, self.gamma, self.beta)

    def axes(self, attrs: NormAttrs, ndim: int) -> tuple[int, ...]:
        raise NotImplementedError

    def callback(self, pre: Expr, post: Expr, node_map: NodeMap) -> Expr:
        x, gamma, beta = (node_map[p][0] for p in (self.x, self.gamma, self.beta))
        attrs = post.attrs
        assert isinstance(attrs, (LayerNormAttrs, InstanceNormAttrs, GroupNormAttrs))
        xt = _data_type(pre)
        b = _Builder(post.span)
        ndim = len(xt.shape)
        axis = attrs.axis % ndim
        data: Expr = x
        if isinstance(attrs, GroupNormAttrs):
            split, axes = group_shape(tuple(int(d) for d in xt.shape), axis, attrs.num_groups)
            data = b.call("reshape", x, attrs=ReshapeAttrs(newshape=split))
        else:
            axes = self.axes(attrs, ndim)
        mean = b.call("mean", data, attrs=ReduceAttrs(axis=axes, keepdims=True))
        var = b.call("variance", data, mean, attrs=VarianceAttrs(axis=axes, keepdims=True))
        denom = b.call("sqrt", b.call("add", var, b.scalar(attrs.epsilon, xt)))
        out: Expr = b.call("divide", b.call("subtract", data, mean), denom)
        if isinstance(attrs, GroupNormAttrs):
            out = b.call("reshape", out,
                         attrs=ReshapeAttrs(newshape=tuple(int(d) for d in xt.shape)))
        if attrs.scale:
            out = b.call("multiply", out, b.expand_to_axis(gamma, ndim, axis))
        if attrs.center:
            out = b.call("add", out, b.expand_to_axis(beta, ndim, axis))
        return out


class ExpandLayerNorm(_ExpandNorm):
    """``nn.layer_norm(x, gamma, beta)``: over ``axis`` itself."""

    op_name = "nn.layer_norm"

    def axes(self, attrs: NormAttrs, ndim: int) -> tuple[int, ...]:
        return (attrs.axis,)


class ExpandInstanceNorm(_ExpandNorm):
    """``nn.instance_norm(x, gamma, beta)``: over all axes but 0 and ``axis``."""

    op_name = "nn.instance_norm"

    def axes(self, attrs: NormAttrs, ndim: int) -> tuple[int, ...]:
        return instance_axes(ndim, attrs.axis % ndim)


class ExpandGroupNorm(_ExpandNorm):
    """``nn.group_norm(x, gamma, beta)``: over a group's channels and the
    axes after them, on the data reshaped to split the channels."""

    op_name = "nn.group_norm"


class ExpandL2Normalize(DFPatternCallback):
    """``nn.l2_normalize(x)`` -> ``x / sqrt(max(sum(x * x), eps))``."""

    def __init__(self) -> None:
        super().__init__()
        self.x = wildcard()
        self.pattern = is_op("nn.l2_normalize")(self.x)

    def callback(self, pre: Expr, post: Expr, node_map: NodeMap) -> Expr:
        x = node_map[self.x][0]
        attrs = post.attrs
        assert isinstance(attrs, L2NormalizeAttrs)
        xt = _data_type(pre)
        b = _Builder(post.span)
        axes = l2_axes(len(xt.shape), attrs.axis)
        total = b.call("sum", b.call("multiply", x, x),
                       attrs=ReduceAttrs(axis=axes, keepdims=True))
        return b.call("divide", x, b.call("sqrt", b.call("maximum", total,
                                                         b.scalar(attrs.eps, xt))))


class ProjectExpansion(DFPatternCallback):
    """``(a, b, c).i`` -> the field, for a tuple an expansion made."""

    def __init__(self, created: set[Tuple]) -> None:
        super().__init__()
        self.created = created
        self.tuple = is_tuple(None)
        self.pattern = is_tuple_get_item(self.tuple)

    def callback(self, pre: Expr, post: Expr, node_map: NodeMap) -> Expr:
        tup = node_map[self.tuple][0]
        if tup not in self.created:
            return post
        assert isinstance(tup, Tuple) and isinstance(post, TupleGetItem)
        return tup.fields[post.index]


register_pass("SimplifyInference", opt_level=0)(simplify_inference)
