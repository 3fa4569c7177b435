"""Lowering of qnn.leaky_relu (``aot/ir/ops/qnn_activation.py``) as an
index lowering: the two multipliers are literals computed by the
reference's own :func:`~aot.ir.ops.qnn_activation.leaky_relu_multipliers`
when the scales are constants; run-time scales compute them in the kernel
from the float32 ratios (:func:`.fixed_point.runtime_multiplier`), as the
reference does.  The sign of ``q - izp`` selects between the two
rescalings: a select for literal multipliers; with run-time ones a blend
``pos * s + neg * (1 - s)`` of 0/1 factors, because loads inside select
arms are never hoisted (:mod:`aot.emit.kernel.cse`) and the run-time
multiplier, a chain of selects, would print as an exponential tree."""

from __future__ import annotations

from typing import Sequence

from ....ir.ops.qnn_activation import leaky_relu_multipliers
from ....ir.types import Type
from ...kernel import ir as K
from ..registry import ArgValue, LowerContext, TensorValue, index_lowering
from .common import tensor
from .fixed_point import (F32, F64, I32, Multiplier, i32, multiply_double, runtime_multiplier,
                          saturate, wrap_sub)
from .qnn import check_scales, checked, constant_of, scalar_param

__all__: list[str] = []


def _multipliers(ctx: LowerContext, s_in: TensorValue, s_out: TensorValue,
                 alpha: float) -> tuple[Multiplier, Multiplier]:
    a, b = constant_of(ctx, s_in), constant_of(ctx, s_out)
    if a is not None and b is not None:
        pairs = checked("qnn.leaky_relu", lambda: leaky_relu_multipliers(
            float(a.reshape(-1)[0]), float(b.reshape(-1)[0]), alpha))
        assert isinstance(pairs, tuple)
        mi, shi, ma, sha = pairs
        return Multiplier(i32(mi), i32(shi)), Multiplier(i32(ma), i32(sha))
    si, so = scalar_param(s_in), scalar_param(s_out)
    identity = K.cast(F64, K.div(si, so))
    scaled = K.cast(F64, K.div(K.mul(si, K.Const(alpha, F32)), so))
    return runtime_multiplier(identity), runtime_multiplier(scaled)


@index_lowering("qnn.leaky_relu")
def _leaky_relu(ctx: LowerContext, args: Sequence[ArgValue], attrs,
                out_type: Type) -> TensorValue:
    data, s_in, z_in, s_out, z_out = (tensor(a) for a in args)
    for p, what in ((s_in, "input_scale"), (s_out, "output_scale")):
        check_scales("qnn.leaky_relu", ctx, p, what)
    identity, alpha = _multipliers(ctx, s_in, s_out, attrs.alpha)

    def read(idx: tuple) -> K.Expr:
        x = wrap_sub(data.read(idx), scalar_param(z_in))
        pos, neg = multiply_double(x, identity), multiply_double(x, alpha)
        y: K.Expr
        if identity.static is not None and alpha.static is not None:
            y = K.select(K.ge(x, i32(0)), pos, neg)
        else:       # no select arms: the run-time multipliers stay hoistable (kernel.cse)
            nonneg = K.cast(I32, K.ge(x, i32(0)))
            y = K.add(K.mul(pos, nonneg), K.mul(neg, K.sub(i32(1), nonneg)))
        return saturate(K.add(y, K.cast(I32, scalar_param(z_out))), data.dtype)
    return TensorValue(data.shape, data.dtype, read)
