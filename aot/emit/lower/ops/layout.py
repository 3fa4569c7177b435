"""Lowering of ``layout_transform`` (``aot/ir/ops/layout.py``), an index
lowering.

An output index (in ``dst``'s axes) names one element by its *full*
primal coordinates: a primal axis ``C`` that ``dst`` blocks by ``f`` has
full coordinate ``C_outer * f + c``, an unblocked one is its index.  The
input index follows from the full coordinates in ``src``'s axes: a primal
axis ``src`` blocks by ``g`` is ``full / g``, its subordinate axis
``full % g``.  When both layouts block an axis by the same factor both
indices pass through unchanged, so the usual conversions (NCHW <-> NHWC,
NCHW <-> NCHW4c, NCHW4c <-> NHWC4c ...) divide only where the blocking
really changes.
"""

from __future__ import annotations

from typing import Sequence

from ....ir.ops.layout import Layout
from ....ir.types import Type
from ...kernel import ir as K
from ..registry import ArgValue, Index, LowerContext, TensorValue, index_lowering, out_tensor
from .index_math import ZERO, iadd, idiv, imod, imul
from .common import tensor


def _source_index(idx: Index, src: Layout, dst: Layout) -> Index:
    out: list[K.Expr] = [ZERO] * src.ndim
    for letter in dst.primal:
        outer = idx[dst.index_of(letter)]
        f = dst.factor_of(letter)
        g = src.factor_of(letter)
        inner = idx[dst.index_of(letter.lower())] if f else None
        primal_at, sub_at = src.index_of(letter), src.index_of(letter.lower())
        if f and f == g:
            assert inner is not None
            out[primal_at], out[sub_at] = outer, inner
            continue
        full = outer if inner is None else iadd(imul(outer, f), inner)
        if g:
            out[primal_at], out[sub_at] = idiv(full, g), imod(full, g)
        else:
            out[primal_at] = full
    return tuple(out)


@index_lowering("layout_transform")
def _layout_transform(ctx: LowerContext, args: Sequence[ArgValue], attrs, out_type: Type):
    x = tensor(args[0])
    src, dst = Layout.parse(attrs.src_layout), Layout.parse(attrs.dst_layout)
    shape = tuple(int(d) for d in out_tensor(out_type).shape)
    return TensorValue(shape, x.dtype, lambda idx: x.read(_source_index(idx, src, dst)))
