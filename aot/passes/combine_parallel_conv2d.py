"""CombineParallelConv2D: parallel ``nn.conv2d`` calls of one input become
one convolution with the weights concatenated along the output channels,
followed by a ``strided_slice`` per branch.

As Relay's ``combine_parallel_conv2d.cc`` (the grouping, the follower
combination and the cycle guard are in :mod:`.combine_parallel`):

* convolutions combine when they read the same data, have ``groups == 1``
  and equal attributes except ``channels`` (strides, padding, dilation,
  layouts, ``out_dtype``) and their weights agree in dtype and in every
  axis but the kernel layout's ``O`` (same kernel size);
* the wide weight is the branches' weights concatenated along ``O`` --
  at compile time when they are constants, else by a ``concatenate``
  call; ``channels`` is the sum;
* elementwise and broadcast operators that follow every branch combine
  too (``bias_add``, ``multiply`` by a per-channel scale, ``relu``): their
  per-channel operands are concatenated along the channel axis of the
  output layout (``C`` of ``out_layout`` or ``data_layout``).  Beyond
  Relay, an operand that broadcasts along the channels combines when it
  is the same node in every branch (kept as it is) or a constant in every
  branch (repeated per channel at compile time), so ``clip`` and
  ``multiply(x, 0.5f)`` after each branch combine;
* branch ``i`` then reads ``strided_slice(y, begin=[o_i], end=[o_i + c_i],
  axes=[C])``, which the backend fuses into its consumer (a convolution
  reads it through its prologue, a ``concatenate`` through its fields).

Option ``min_num_branches`` (default 3, as Relay): the fewest branches worth
combining.  Registered at opt level 4 as Relay (off unless required):
whether one wide kernel beats several narrow ones depends on the model --
the branches' outputs must stay live together in the arena, and a branch
output that is a function result becomes a copy kernel of its own.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Sequence

from ..ir.expr import Call, Expr, op
from ..ir.module import IRModule
from .combine_parallel import (Branch, ChannelConcatCombiner, check_min_branches, combine_module,
                               concat_exprs, static_tensor)
from .manager import register_pass

__all__ = ["CombineParallelConv2DOptions", "combine_parallel_conv2d"]


@dataclass(frozen=True)
class CombineParallelConv2DOptions:
    """``min_num_branches``: the fewest parallel convolutions combined (>= 2)."""

    min_num_branches: int = 3


class _Conv2DCombiner(ChannelConcatCombiner):
    op_name = "nn.conv2d"

    def supported(self, call: Call) -> bool:
        return call.attrs.groups == 1 and static_tensor(call) is not None \
            and static_tensor(call.args[1]) is not None

    def compatible(self, a: Call, b: Call) -> bool:
        plain = dict(channels=None, kernel_size=None)
        if dataclasses.replace(a.attrs, **plain) != dataclasses.replace(b.attrs, **plain):
            return False
        wa, wb = static_tensor(a.args[1]), static_tensor(b.args[1])
        o = a.attrs.kernel_layout.index("O")
        return wa.dtype == wb.dtype and static_tensor(a).dtype == static_tensor(b).dtype \
            and _drop(wa.shape, o) == _drop(wb.shape, o)

    def channel_axis(self, call: Call) -> int:
        attrs = call.attrs
        return (attrs.out_layout or attrs.data_layout).index("C")

    def make_combined(self, group: Sequence[Branch]) -> Expr:
        first = group[0][0]
        weight = concat_exprs([b[0].args[1] for b in group], first.attrs.kernel_layout.index("O"))
        attrs = dataclasses.replace(first.attrs, channels=sum(self.channels(b) for b in group))
        return Call(op("nn.conv2d"), (first.args[0], weight), attrs, span=first.span)


def _drop(shape: tuple, axis: int) -> tuple:
    return shape[:axis] + shape[axis + 1:]


@register_pass("CombineParallelConv2D", opt_level=4, options=CombineParallelConv2DOptions)
def combine_parallel_conv2d(mod: IRModule,
                            opts: CombineParallelConv2DOptions = CombineParallelConv2DOptions()
                            ) -> IRModule:
    """CombineParallelConv2D: parallel convolutions of one input into one
    wider convolution and a slice per branch."""
    check_min_branches("CombineParallelConv2D", opts.min_num_branches)
    return combine_module(mod, _Conv2DCombiner(opts.min_num_branches))
