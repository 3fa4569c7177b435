"""CombineParallelDense: parallel ``nn.dense`` calls of one input become one
wider dense layer (or, optionally, one ``nn.batch_matmul``).

As Relay's ``combine_parallel_dense.cc`` (grouping, followers and the
cycle guard in :mod:`.combine_parallel`), in its two variants:

* **concatenate** (the default, Relay's ``to_batch_matmul=False``):
  dense layers of the same data whose weights agree in dtype and input
  size and whose ``out_dtype`` is equal combine into one dense layer with
  the weights concatenated along the units axis (at compile time when
  they are constants); ``units`` is the sum.  Followers combine along the
  last axis as in CombineParallelConv2D (per-unit operands concatenated;
  an operand broadcast along the units kept when it is one node,
  repeated at compile time when constant); branch ``i`` reads
  ``strided_slice(y, begin=[o_i], end=[o_i + u_i], axes=[rank - 1])``.
* **batch_matmul** (``to_batch_matmul=True``): 2-d dense layers of the
  same data whose weights have the same shape become
  ``nn.batch_matmul(stack((x, x, ...)), stack((w1, w2, ...)))``; the
  followers' operands (equal shapes across branches, rank below 2
  expanded to 2 first) are stacked along a new axis 0, and branch ``i``
  reads ``squeeze(split(y, n)[i], axis=[0])``.  It copies the data once
  per branch, so it only pays on targets that batch well; followers with
  an ``axis`` attribute (``bias_add``) end the combination there.

Option ``min_num_branches`` (default 3, as Relay).  Registered at opt
level 4 as Relay (off unless required).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from ..ir.expr import Call, Constant, Expr, Tuple, TupleGetItem, op
from ..ir.module import IRModule
from ..ir.ops.nn import BatchMatmulAttrs
from ..ir.ops.transform import ExpandDimsAttrs, SplitAttrs, SqueezeAttrs, StackAttrs
from .combine_parallel import (CHANNEL_AXIS_OPS, Branch, ChannelConcatCombiner, ParallelCombiner,
                               check_min_branches, combine_module, concat_exprs, static_tensor)
from .manager import register_pass

__all__ = ["CombineParallelDenseOptions", "combine_parallel_dense"]


@dataclass(frozen=True)
class CombineParallelDenseOptions:
    """``min_num_branches``: the fewest parallel dense layers combined
    (>= 2); ``to_batch_matmul``: combine into one ``nn.batch_matmul`` of
    stacked operands instead of one wider ``nn.dense``."""

    min_num_branches: int = 3
    to_batch_matmul: bool = False


def _dense_ok(call: Call) -> bool:
    return static_tensor(call) is not None and static_tensor(call.args[1]) is not None


class _DenseCombiner(ChannelConcatCombiner):
    op_name = "nn.dense"

    def supported(self, call: Call) -> bool:
        return _dense_ok(call)

    def compatible(self, a: Call, b: Call) -> bool:
        wa, wb = static_tensor(a.args[1]), static_tensor(b.args[1])
        return a.attrs.out_dtype == b.attrs.out_dtype and wa.dtype == wb.dtype \
            and wa.shape[1] == wb.shape[1]

    def channel_axis(self, call: Call) -> int:
        return len(static_tensor(call).shape) - 1

    def make_combined(self, group: Sequence[Branch]) -> Expr:
        first = group[0][0]
        weight = concat_exprs([b[0].args[1] for b in group], 0)
        attrs = dataclasses.replace(first.attrs, units=sum(self.channels(b) for b in group))
        return Call(op("nn.dense"), (first.args[0], weight), attrs, span=first.span)


class _DenseToBatchCombiner(ParallelCombiner):
    op_name = "nn.dense"

    def supported(self, call: Call) -> bool:
        return _dense_ok(call) and len(static_tensor(call).shape) == 2

    def compatible(self, a: Call, b: Call) -> bool:
        wa, wb = static_tensor(a.args[1]), static_tensor(b.args[1])
        return a.attrs.out_dtype == b.attrs.out_dtype and wa == wb

    def follower_ok(self, call: Call) -> bool:
        return call.op.name not in CHANNEL_AXIS_OPS

    def make_combined(self, group: Sequence[Branch]) -> Expr:
        first = group[0][0]
        data = _stack([first.args[0]] * len(group))
        weight = _stack([b[0].args[1] for b in group])
        attrs = BatchMatmulAttrs(out_dtype=first.attrs.out_dtype, transpose_b=True)
        return Call(op("nn.batch_matmul"), (data, weight), attrs, span=first.span)

    def combine_args(self, group: Sequence[Branch], depth: int, index: int) -> Expr | None:
        args = [b[depth].args[index] for b in group]
        types = [static_tensor(a) for a in args]
        if any(t is None or t != types[0] for t in types):
            return None
        rank = len(types[0].shape)
        if rank < 2:
            args = [_expand(a, 2 - rank) for a in args]
        return _stack(args)

    def split(self, combined: Expr, group: Sequence[Branch], depth: int) -> list[Expr]:
        parts = Call(op("split"), (combined,), SplitAttrs(indices_or_sections=len(group), axis=0))
        return [Call(op("squeeze"), (TupleGetItem(parts, i),), SqueezeAttrs(axis=(0,)),
                     span=b[depth].span) for i, b in enumerate(group)]


def _stack(exprs: Sequence[Expr]) -> Expr:
    if all(isinstance(e, Constant) for e in exprs):
        return Constant(np.stack([np.asarray(e.data) for e in exprs]))
    return Call(op("stack"), (Tuple(tuple(exprs)),), StackAttrs(axis=0))


def _expand(e: Expr, count: int) -> Expr:
    """``e`` with ``count`` leading axes of extent 1."""
    if isinstance(e, Constant):
        data = np.asarray(e.data)
        return Constant(data.reshape((1,) * count + data.shape))
    return Call(op("expand_dims"), (e,), ExpandDimsAttrs(axis=0, num_newaxis=count))


@register_pass("CombineParallelDense", opt_level=4, options=CombineParallelDenseOptions)
def combine_parallel_dense(mod: IRModule,
                           opts: CombineParallelDenseOptions = CombineParallelDenseOptions()
                           ) -> IRModule:
    """CombineParallelDense: parallel dense layers of one input into one
    wider dense layer (or one batch_matmul) and a slice per branch."""
    check_min_branches("CombineParallelDense", opts.min_num_branches)
    if opts.to_batch_matmul:
        return combine_module(mod, _DenseToBatchCombiner(opts.min_num_branches))
    return combine_module(mod, _DenseCombiner(opts.min_num_branches))
