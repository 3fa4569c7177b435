"""Kernel-IR spelling shared by the int8 DSP-extension lowerings
(:mod:`.qnn_conv_dsp`, :mod:`.qnn_depthwise`): 32-bit word constants,
index constants and ``no_wrap`` index arithmetic, and the byte rotation
``SXTB16`` pairs with."""

from __future__ import annotations

from ....ir.dtype import DType
from ...kernel import ir as K
from ..registry import INDEX

U32 = DType.UINT32


def u32(v: int) -> K.Const:
    return K.Const(v, U32)


def index(v: int) -> K.Const:
    return K.Const(v, INDEX)


def add_index(a: K.Expr, b: K.Expr | int) -> K.Expr:
    """``a + b`` on indices (no wrap); ``a`` itself for ``b = 0``."""
    if isinstance(b, int):
        if b == 0:
            return a
        b = index(b)
    return K.add(a, b, no_wrap=True)


def mul_index(a: K.Expr, b: int) -> K.Expr:
    return a if b == 1 else K.mul(a, index(b), no_wrap=True)


def ror8(v: K.Expr) -> K.Expr:
    """A word rotated right by 8 bits (the odd bytes to SXTB16's lanes)."""
    return K.bit_or(K.shr(v, u32(8)), K.shl(v, u32(24)))
