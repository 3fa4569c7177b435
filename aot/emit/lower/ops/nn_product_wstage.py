"""Staged weights of a matrix product (``nn.dense``, ``nn.matmul``,
``nn.batch_matmul``) whose second operand is computed as it is read
(:mod:`.nn`).

Design note
-----------
A weight-only quantized product -- ``DequantizeLinear`` of a packed int4
table feeding ``MatMul`` / ``Gemm``, kept narrow by FoldConstant and fused
as the product's prologue -- reads every weight through its prologue
(unpack the nibble, subtract the zero point, multiply by the scale) at
every multiply-accumulate: once per row of the left operand, inside the
register tile's inner body.

Staged instead, as the convolutions' weights (:mod:`.nn_conv_wstage`,
whose :func:`~.nn_conv_wstage.stage_fill` and byte budget this shares):
the unit tiles (``BJ`` units) become the outermost loops, and each first
converts its units' whole reduction into a local array of the accumulator
type, laid out ``[K][BJ]`` so the tile's inner body reads ``BJ``
consecutive values per ``k`` (one pointer, constant offsets) as it would
read a packed float table (:mod:`.nn_dense_packed`); every row then runs
over the array, each ``lhs[row, k]`` loaded once per ``BJ``
multiply-accumulates.  The conversion is paid once per weight instead of
once per row (a transformer's projection over a sequence, a batched
dense): Cortex-M4F, a 16x64 by 64x64 ``MatMul``, 13.57 -> 4.04
instructions per MAC (a float32 table: 4.16).

Only products of more than one row are staged.  With one row (a
keyword spotter's dense layer) every weight is used once per call:
staging cannot save a conversion and costs a store, a load and a loop of
its own (measured 11.56 -> 17.76 per MAC for a 256 -> 64 ``Gemm``), so
those keep the in-place tiles.  Nor is a product whose single unit's
reduction exceeds the budget (it would have to be staged per row again).

Every product is the same expression on the same values as unstaged (the
conversion is the prologue cast to the accumulator type, as the unstaged
term casts it) and each output sums in ``k`` order from zero: the results
are bit-identical.  The weights stay packed in flash; the array is on the
stack, at most ``WEIGHT_STAGE_BYTES``.
"""

from __future__ import annotations

from collections.abc import Callable

from ....ir.dtype import DType
from ...kernel import ir as K
from ..registry import INDEX, Index, LowerContext, Sink, TensorValue, loop_nest
from . import nn_conv_wstage
from .common import mac

__all__ = ["STAGE_UNITS", "staged_units", "staged_product"]

#: units per register tile (scalar accumulators: 8 of the Cortex-M4F's 32
#: single-precision registers, the staged weights and the input value
#: leave room)
STAGE_UNITS = 8


def _idx(i: int) -> K.Const:
    return K.Const(i, INDEX)


def staged_units(weight: TensorValue, rows: int, units: int, reduce: int, acc: DType) -> int:
    """Units per staged tile, 0 when the product's weight is not staged: a
    weight read from a buffer or a constant table (already a table of its
    values), an integer accumulator, one row, or one unit's reduction
    larger than the budget."""
    if weight.buffer is not None or weight.constant is not None or not acc.is_float:
        return 0
    if rows < 2 or units < 1 or reduce < 1:
        return 0
    return min(STAGE_UNITS, units, nn_conv_wstage.WEIGHT_STAGE_BYTES // (reduce * acc.itemsize))


def staged_product(ctx: LowerContext, rows: tuple[int, ...], units: int, reduce: int,
                   lhs: Callable[[Index, K.Expr], K.Expr],
                   rhs: Callable[[K.Expr, K.Expr], K.Expr], rhs_k_contiguous: bool,
                   acc: DType, out: DType, sink: Sink, bj: int) -> K.Stmt:
    """``out[row, j] = sum_k lhs(row, k) * rhs(j, k)`` (``rhs`` the same
    for every row) with the weights staged per tile of ``bj`` units (see
    the design note; ``bj`` from :func:`staged_units`)."""
    stage = K.Buffer(ctx.fresh("wst"), acc, (reduce * bj,), K.BufferScope.LOCAL)

    def fill(j0: K.Expr, valid: int) -> K.Stmt:
        """units ``[j0, j0 + valid)`` into the stage as ``[K][valid]``"""
        i, kk = ctx.index_var("si"), ctx.index_var("sk")
        at = K.add(K.mul(kk, _idx(valid), no_wrap=True), i, no_wrap=True)
        value = rhs(K.add(j0, i, no_wrap=True), kk)
        loops = [(i, valid), (kk, reduce)] if rhs_k_contiguous else [(kk, reduce), (i, valid)]
        return nn_conv_wstage.stage_fill(stage, loops, at, value)

    def row_tile(row: Index, j0: K.Expr, valid: int) -> K.Stmt:
        accs = [ctx.scalar("acc", acc) for _ in range(valid)]
        kk = ctx.index_var("k")
        xv = ctx.scalar("xv", acc)
        base = K.mul(kk, _idx(valid), no_wrap=True)
        return K.block(*(K.Decl(a, K.Const(0.0, acc)) for a in accs), K.for_range(kk, reduce, [
            K.Decl(xv, K.cast(acc, lhs(row, kk))),
            *(K.Assign(a, mac(a, xv, K.load(stage, K.add(base, _idx(i), no_wrap=True)
                                                if i else base)))
              for i, a in enumerate(accs))]),
            *(sink((*row, K.add(j0, _idx(i), no_wrap=True) if i else j0), K.cast(out, a))
              for i, a in enumerate(accs)))

    def tile(j0: K.Expr, valid: int) -> list[K.Stmt]:
        return [fill(j0, valid), loop_nest(ctx, rows, lambda r: row_tile(r, j0, valid), "r")]
    full, rest = divmod(units, bj)
    stmts: list[K.Stmt] = []
    if full:
        jt = ctx.index_var("jt")
        stmts.append(K.for_range(jt, full, tile(K.mul(jt, _idx(bj), no_wrap=True), bj)))
    if rest:
        stmts.extend(tile(_idx(full * bj), rest))
    return K.block(*stmts)
