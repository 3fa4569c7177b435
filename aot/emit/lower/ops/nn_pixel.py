"""Lowering of the sub-pixel rearrangements (``aot/ir/ops/nn_pixel.py``):
nn.depth_to_space and nn.space_to_depth, index lowerings.

Output element ``(n, c, h, w)`` (in the layout's order) reads one input
element whose channel and spatial position are a few divisions and
remainders by the constant ``block_size`` (shifts and masks when it is a
power of two, after simplification), so the rearrangement fuses with its
producer and consumer like a transpose.
"""

from __future__ import annotations

from typing import Any, Sequence

from ....ir.types import Type
from ...kernel import ir as K
from ..registry import ArgValue, Index, LowerContext, TensorValue, index_lowering, out_tensor
from .common import tensor
from .index_math import iadd, idiv, imod, imul


def _axes(layout: str) -> tuple[int, int, int, int]:
    return tuple(layout.index(a) for a in "NCHW")  # type: ignore[return-value]


def _at(layout: str, n: K.Expr, c: K.Expr, h: K.Expr, w: K.Expr) -> Index:
    by = dict(zip("NCHW", (n, c, h, w)))
    return tuple(by[a] for a in layout)


@index_lowering("nn.depth_to_space")
def _depth_to_space(ctx: LowerContext, args: Sequence[ArgValue], attrs: Any, out_type: Type):
    x = tensor(args[0])
    b = attrs.block_size
    an, ac, ah, aw = _axes(attrs.layout)
    c_out = x.shape[ac] // (b * b)
    shape = tuple(int(d) for d in out_tensor(out_type).shape)

    def read(idx: Index) -> K.Expr:
        n, c, h, w = idx[an], idx[ac], idx[ah], idx[aw]
        dh, dw = imod(h, b), imod(w, b)
        if attrs.mode == "DCR":
            ch = iadd(iadd(imul(dh, b * c_out), imul(dw, c_out)), c)
        else:
            ch = iadd(iadd(imul(c, b * b), imul(dh, b)), dw)
        return x.read(_at(attrs.layout, n, ch, idiv(h, b), idiv(w, b)))
    return TensorValue(shape, x.dtype, read)


@index_lowering("nn.space_to_depth")
def _space_to_depth(ctx: LowerContext, args: Sequence[ArgValue], attrs: Any, out_type: Type):
    x = tensor(args[0])
    b = attrs.block_size
    an, ac, ah, aw = _axes(attrs.layout)
    c_in = x.shape[ac]
    shape = tuple(int(d) for d in out_tensor(out_type).shape)

    def read(idx: Index) -> K.Expr:
        n, c, h, w = idx[an], idx[ac], idx[ah], idx[aw]
        block = idiv(c, c_in)
        return x.read(_at(attrs.layout, n, imod(c, c_in), iadd(imul(h, b), idiv(block, b)),
                          iadd(imul(w, b), imod(block, b))))
    return TensorValue(shape, x.dtype, read)
