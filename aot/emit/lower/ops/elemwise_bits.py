"""Lowering of the bitwise operators and shifts
(``aot/ir/ops/elemwise_bits.py``): one scalar expression per element.

C leaves a shift by a negative amount or by the width or more undefined,
so the amount is made safe first, giving the record's (NumPy's) answers:
``left_shift`` selects 0 when the amount is out of range (and shifts by 0
there); a signed ``right_shift`` clamps the amount to ``bits - 1``, which
fills with the sign exactly as an out-of-range amount must; an unsigned
one selects 0.  Kernel IR shifts a signed value left in its unsigned
type, so the wrap-around is defined too.
"""

from __future__ import annotations

from typing import Any, Sequence

from ....ir.types import Type
from ...kernel import ir as K
from ..registry import LowerContext, index_lowering
from .common import broadcast, elementwise


def _in_range(s: K.Expr, bits: int) -> K.Expr:
    below = K.lt(s, K.Const(bits, s.dtype))
    if not s.dtype.is_signed:
        return below
    return K.logical_and(K.ge(s, K.Const(0, s.dtype)), below)


def _left(a: K.Expr, s: K.Expr) -> K.Expr:
    ok = _in_range(s, a.dtype.bits)
    safe = K.select(ok, s, K.Const(0, s.dtype))
    return K.select(ok, K.shl(a, safe), K.Const(0, a.dtype))


def _right(a: K.Expr, s: K.Expr) -> K.Expr:
    bits = a.dtype.bits
    ok = _in_range(s, bits)
    if a.dtype.is_signed:
        return K.shr(a, K.select(ok, s, K.Const(bits - 1, s.dtype)))
    return K.select(ok, K.shr(a, K.select(ok, s, K.Const(0, s.dtype))), K.Const(0, a.dtype))


_BINARY = {"bitwise_and": K.bit_and, "bitwise_or": K.bit_or, "bitwise_xor": K.bit_xor,
           "left_shift": _left, "right_shift": _right}


def _binary_lowering(name: str) -> None:
    fn = _BINARY[name]

    @index_lowering(name)
    def lower(ctx: LowerContext, args: Sequence, attrs: Any, out_type: Type):
        return broadcast(args, out_type, fn)


for _name in _BINARY:
    _binary_lowering(_name)


@index_lowering("bitwise_not")
def _bitwise_not(ctx: LowerContext, args: Sequence, attrs: Any, out_type: Type):
    return elementwise(args[0], args[0].dtype, K.bit_not)
