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
from ..registry import LowerContext, Sink, anchor_lowering, index_lowering, out_tensor
from .common import elementwise, tensor
from .elemwise import _FLOAT_UNARY
from .nn import _reduce_loop, _row_loops, _softmax_common

F32 = DType.FLOAT32


def _helper(fn: str) -> Callable[[K.Expr], K.Expr]:
    return lambda x: K.call(f"aot_fast_{fn}_f32", [x], F32)


fast_exp_expr = _helper("exp")


def _lowering(name: str, approx: Callable[[K.Expr], K.Expr], exact: str,
              f16: bool = False) -> None:
    @index_lowering(name)
    def lower(ctx: LowerContext, args: Sequence, attrs: object, out_type: Type):
        dtype = out_tensor(out_type).dtype
        if dtype is F32:
            return elementwise(args[0], dtype, approx)
        if f16 and dtype is DType.FLOAT16:
            return elementwise(args[0], dtype, lambda x: K.cast(dtype, approx(K.cast(F32, x))))
        return elementwise(args[0], dtype, _FLOAT_UNARY[exact])


_lowering("fast_exp", _helper("exp"), "exp")
_lowering("fast_tanh", _helper("tanh"), "tanh")
_lowering("fast_erf", _helper("erf"), "erf", f16=True)


@anchor_lowering("nn.fast_softmax")
def _fast_softmax(ctx: LowerContext, args: Sequence, attrs, out_type: Type,
                  sinks: Sequence[Sink]) -> K.Stmt:
    x = tensor(args[0])
    t = out_tensor(out_type)
    if t.dtype is not F32:
        return _softmax_common(ctx, args, attrs, out_type, sinks[0], log=False)
    shape = tuple(int(d) for d in t.shape)
    n = shape[attrs.axis % len(shape)]

    def body(at: Callable[[K.Expr], tuple]) -> list[K.Stmt]:
        mx, total = ctx.scalar("max", F32), ctx.scalar("sum", F32)
        stmts = _reduce_loop(ctx, mx, K.Const(float("-inf"), F32), n,
                             lambda k: K.maximum(mx, x.read(at(k))))

        def e(k: K.Expr) -> K.Expr:
            return fast_exp_expr(K.sub(x.read(at(k)), mx))
        stmts += _reduce_loop(ctx, total, K.Const(0.0, F32), n, lambda k: K.add(total, e(k)))
        k = ctx.index_var("k")
        stmts.append(K.for_range(k, n, sinks[0](at(k), K.div(e(k), total))))
        return stmts
    return _row_loops(ctx, shape, attrs.axis, body)
