"""Weight pairs for the float32 register tiles of :mod:`.nn_conv` (the
``scalar`` tuning: a scalar FPU with a fused multiply-add, Cortex-M4F).

Design note
-----------
A tile of ``BO`` output channels by ``BW`` columns loads, per reduction
step (input channel, kernel row, kernel column), the ``BO`` weights of its
channels one ``vldr`` each.  gcc 12 never merges consecutive float loads,
but it loads two floats with one ``vldr.64`` when C reads a ``double`` and
takes its halves through a union (``aot_lo_f32`` / ``aot_hi_f32`` of
``aot_kernel_helpers.h``; the pointwise tiles of :mod:`.nn_conv_pointwise`
do the same).  So a constant, finite float32 weight of a forward
convolution with one group becomes a compile-time ``double`` table (bit
patterns, exact) laid out ``I [H] W O/2``: the output channel innermost,
two channels per double, and a tile reads ``BO/2`` doubles per step
instead of ``BO`` floats.  ``BO`` must be even and divide the output
channels, so every pair is two channels of one tile (8-byte aligned).
Only finite weights: a pair of floats is then never a NaN double, which a
double move could quiet on some cores.

Nothing else changes: the same loop nest, the same loads of the input,
the same multiply-adds in the same order (bit-identical results).
Measured (Cortex-M4F, gcc 12 -O2, QEMU instruction counts): see
:data:`MAX_COLUMNS`; MobileNetV1's 3->8 stride-2 first layer (4x4 tiles)
gains nothing (gcc moves the pairs' halves between registers).
"""

from __future__ import annotations

import numpy as np

from ....ir.dtype import DType
from ...kernel import ir as K
from ..registry import LowerContext
from .tuning import current as current_tuning

__all__ = ["applicable", "pair_layout", "pair_table", "half"]

F32, F64 = DType.FLOAT32, DType.FLOAT64
#: columns of a tile at most: a 4x6 tile's 24 accumulators leave too few
#: single registers for gcc to place the pairs in double registers, and it
#: shuffles them with moves (ResNet-8's stride-1 3x3 layers on 32x32 and
#: 16x16 maps: 2-4 % more instructions with pairs; its 4-column tiles of
#: stride-2 layers and 8x8 maps 4-13 % fewer, DS-CNN's 5-column first
#: layer 3 %)
MAX_COLUMNS = 5


def applicable(transposed: bool, groups: int, o: int, acc: DType, out_dtype: DType,
               weight: np.ndarray | None, bo: int, columns: int) -> bool:
    """Pairs apply (module note) to tiles of at most :data:`MAX_COLUMNS`
    columns (``columns``: the widest column tile)."""
    tuning = current_tuning()
    return (columns <= MAX_COLUMNS and not tuning.simd and tuning.fma and weight is not None
            and not transposed and groups == 1 and acc is F32 and out_dtype is F32
            and bo % 2 == 0 and bo > 0 and o % bo == 0 and weight.dtype == np.float32
            and bool(np.all(np.isfinite(weight))))


def pair_layout(canon: str) -> str:
    """The table's layout for a canonical weight layout (``OIHW``, ``OIW``):
    ``I``, the spatial letters, then ``O``."""
    return "I" + "".join(c for c in canon if c in "HW") + "O"


def pair_table(ctx: LowerContext, weight: np.ndarray, layout: str):
    """The weight (in ``layout``) as the module note's ``double`` table."""
    target = pair_layout("OIHW" if "H" in layout else "OIW")
    w = np.transpose(np.asarray(weight), [layout.index(c) for c in target])
    w = np.ascontiguousarray(w, dtype=np.float32)
    return ctx.constant_table(w.view(np.float64), F64), target


def _even(e: K.Expr) -> bool:
    """``e`` is even whatever its variables (a sum of even constants and
    products with even constants)."""
    if isinstance(e, K.Const):
        return int(e.value) % 2 == 0
    if isinstance(e, K.BinOp) and e.op is K.BinaryOperator.ADD:
        return _even(e.a) and _even(e.b)
    if isinstance(e, K.BinOp) and e.op is K.BinaryOperator.MUL:
        return _even(e.a) if isinstance(e.a, K.Const) else \
            isinstance(e.b, K.Const) and _even(e.b)
    return False


def half(e: K.Expr) -> K.Expr:
    """``e / 2`` for an even index ``e``, simplified through sums and
    products with even constants when :func:`_even` proves each part even."""
    if not _even(e):
        return K.div(e, K.Const(2, e.dtype))
    if isinstance(e, K.Const):
        return K.Const(int(e.value) // 2, e.dtype)
    assert isinstance(e, K.BinOp)
    if e.op is K.BinaryOperator.ADD:
        return K.add(half(e.a), half(e.b), no_wrap=True)
    a, b = (e.a, e.b) if isinstance(e.b, K.Const) and _even(e.b) else (e.b, e.a)
    assert isinstance(b, K.Const)
    k = int(b.value) // 2
    return a if k == 1 else K.mul(a, K.Const(k, b.dtype), no_wrap=True)
