"""Lowering of the fast approximations (``aot/ir/ops/fast_math.py``):
``fast_exp``, ``fast_tanh``, ``fast_erf`` as index lowerings (element-wise,
fusable), ``nn.fast_softmax`` as an anchor.

Each float32 function is one call of a runtime helper
(``aot_fast_exp_f32``, ``aot_fast_tanh_f32``, ``aot_fast_erf_f32`` in
``runtime_c/aot_kernel_helpers.h``) that computes the record's definition
operation for operation in float32 (the design note there).  A helper,
not an inline expression: the approximations use their clamped argument
and partial results many times, and an expression tree (which the kernel
IR is) would repeat them -- fused chains such as ``fast_tanh(fast_exp(x))``
would grow exponentially.  float16 ``fast_erf`` is computed in float32 and rounded
once; the other float types fall back to the exact functions (as the
records do).  ``nn.fast_softmax`` on float32 is two passes over each row
after the maximum: the float32 sum of ``fast_exp(x - max)`` in order, then
each ``fast_exp(x - max) / sum`` (the same value recomputed); on other
types it is ``nn.softmax``'s nest.
"""

from __future__ import annotations

from typing import Callable, Sequence

from ....ir.dtype import DType
from ....ir.types import Type
from ...kernel import ir as K
from ..registry import (LowerContext, Sink, anchor_lowering, index_lowering, lookup_lowering,
                        loop_nest, out_tensor)
from .common import elementwise, tensor

F32 = DType.FLOAT32


def _helper(fn: str) -> Callable[[K.Expr], K.Expr]:
    return lambda x: K.call(f"aot_fast_{fn}_f32", [x], F32)


def _exact(fn: str) -> Callable[[K.Expr], K.Expr]:
    """The exact function (float16 through float32, erf of float16 and
    float32 data through float64, as the ``erf`` lowering)."""
    if fn == "erf":
        return lambda x: K.cast(x.dtype, K.math_call("erf", K.cast(DType.FLOAT64, x)))
    return lambda x: K.math_call(fn, x)


def _lowering(name: str, approx: Callable[[K.Expr], K.Expr], exact: str,
              f16: bool = False) -> None:
    @index_lowering(name)
    def lower(ctx: LowerContext, args: Sequence, attrs: object, out_type: Type):
        dtype = out_tensor(out_type).dtype
        if dtype is F32:
            return elementwise(args[0], dtype, approx)
        if f16 and dtype is DType.FLOAT16:
            return elementwise(args[0], dtype, lambda x: K.cast(dtype, approx(K.cast(F32, x))))
        return elementwise(args[0], dtype, _exact(exact))


_lowering("fast_exp", _helper("exp"), "exp")
_lowering("fast_tanh", _helper("tanh"), "tanh")
_lowering("fast_erf", _helper("erf"), "erf", f16=True)


@anchor_lowering("nn.fast_softmax")
def _fast_softmax(ctx: LowerContext, args: Sequence, attrs, out_type: Type,
                  sinks: Sequence[Sink]) -> K.Stmt:
    t = out_tensor(out_type)
    if t.dtype is not F32:
        exact = lookup_lowering("nn.softmax")
        assert exact is not None
        return exact.fn(ctx, args, attrs, out_type, sinks)
    x = tensor(args[0])
    shape = tuple(int(d) for d in t.shape)
    axis = attrs.axis % len(shape)
    n = shape[axis]
    fast_exp = _helper("exp")

    def row(index: tuple) -> list[K.Stmt]:
        def at(k: K.Expr) -> tuple:
            return (*index[:axis], k, *index[axis:])
        mx, total = ctx.scalar("max", F32), ctx.scalar("sum", F32)
        k1, k2, k3 = ctx.index_var("k"), ctx.index_var("k"), ctx.index_var("k")
        return [K.Decl(mx, K.Const(float("-inf"), F32)),
                K.for_range(k1, n, K.Assign(mx, K.maximum(mx, x.read(at(k1))))),
                K.Decl(total, K.Const(0.0, F32)),
                K.for_range(k2, n, K.Assign(total, K.add(total, fast_exp(
                    K.sub(x.read(at(k2)), mx))))),
                K.for_range(k3, n, sinks[0](at(k3), K.div(fast_exp(K.sub(x.read(at(k3)), mx)),
                                                          total)))]
    return loop_nest(ctx, shape[:axis] + shape[axis + 1:], row, "r")
