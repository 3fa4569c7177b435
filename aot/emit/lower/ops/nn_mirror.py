"""Lowering of nn.mirror_pad (``aot/ir/ops/nn_mirror.py``): an index
lowering.  Output position ``o`` of an axis padded by ``(b, a)`` reads
input position ``i = o - b`` when it is inside the data, ``-i`` (REFLECT)
or ``-i - 1`` (SYMMETRIC) before it and ``2d - 2 - i`` or ``2d - 1 - i``
after it: two selects on the index, and none for an axis not padded.
"""

from __future__ import annotations

from typing import Any, Sequence

from ....ir.types import Type
from ...kernel import ir as K
from ..registry import ArgValue, Index, LowerContext, TensorValue, index_lowering, out_tensor
from .common import tensor
from .index_math import INDEX, isub


def _source(o: K.Expr, before: int, after: int, d: int, reflect: bool) -> K.Expr:
    if before == 0 and after == 0:
        return o
    i = isub(o, K.Const(before, INDEX)) if before else o
    shift = 0 if reflect else 1
    if before:
        i = K.select(K.lt(i, K.Const(0, INDEX)), isub(K.Const(-shift, INDEX), i), i)
    if after:
        last = 2 * d - 2 + shift
        i = K.select(K.ge(i, K.Const(d, INDEX)), isub(K.Const(last, INDEX), i), i)
    return i


@index_lowering("nn.mirror_pad")
def _mirror_pad(ctx: LowerContext, args: Sequence[ArgValue], attrs: Any, out_type: Type):
    x = tensor(args[0])
    reflect = attrs.mode == "REFLECT"
    shape = tuple(int(d) for d in out_tensor(out_type).shape)

    def read(idx: Index) -> K.Expr:
        return x.read(tuple(_source(o, b, a, d, reflect)
                            for o, (b, a), d in zip(idx, attrs.pad_width, x.shape)))
    return TensorValue(shape, x.dtype, read)
