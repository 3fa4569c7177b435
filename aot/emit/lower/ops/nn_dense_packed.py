"""The ``scalar`` tuning's float32 ``nn.dense`` with a constant weight:
register tiles over a weight packed at compile time.

Design note
-----------
A dense layer of batch 1 is a matrix-vector product: every weight is used
once, so one weight load per multiply-accumulate is the floor, and what a
kernel can still save is the input loads and the address arithmetic.  The
weight ``[units, K]`` is stored as ``[units/BJ][K][BJ]`` (the remainder
units as one last ``[K][units % BJ]`` block): for each ``k`` the tile's
``BJ`` weights are contiguous, so the inner loop walks *one* weight
pointer with constant offsets, instead of ``BJ`` row pointers each
advanced per step (Cortex-M4F, gcc 12 -O2: 5 pointer increments per 8
MACs with 4 rows in place).  ``x[k]`` is loaded once per ``BJ``
multiply-accumulates into ``BJ`` scalar accumulators, ``k`` unrolled twice
(the odd step straight-line after the loop).

``BJ`` = 24: 24 accumulators, one input and one weight at a time fit the
32 single-precision registers; per 48 MACs 48 weight loads, 2 input loads,
48 ``vfma`` and 4 instructions of loop control (the weight index of the
second step is the first one's plus ``BJ``, so gcc keeps one pointer).
Measured on the MLPerf Tiny autoencoder's layers (Cortex-M4F, gcc 12
-O2, instructions per MAC): 4 rows in place 3.14-3.21; packed, 8 units
2.45-2.91 (gcc moves accumulators between registers), 16 units 2.20-2.32,
24 units 2.19-2.21.  The packed table replaces the original weight (which
no kernel reads any more), so flash stays the same.

Each output sums its products in ``k`` order in float32, as the in-place
nest (:func:`.nn._dense_scalar_tiles`) does: the results are bit-identical.
"""

from __future__ import annotations

import numpy as np

from ....ir.dtype import DType
from ...kernel import ir as K
from ..registry import INDEX, Index, LowerContext, Sink, TensorValue, loop_nest
from .common import mac

__all__ = ["PACKED_UNITS", "pack", "dense_packed"]

#: units per register tile
PACKED_UNITS = 24


def _idx(i: int) -> K.Const:
    return K.Const(i, INDEX)


def pack(weight: np.ndarray, bj: int = PACKED_UNITS) -> np.ndarray:
    """``weight [units, K]`` as the flat ``[units/bj][K][bj]`` table, the
    remainder units last as ``[K][units % bj]``."""
    units, reduce = weight.shape
    full = units // bj
    head = weight[:full * bj].reshape(full, bj, reduce).transpose(0, 2, 1).reshape(-1)
    tail = weight[full * bj:].T.reshape(-1)
    return np.ascontiguousarray(np.concatenate([head, tail]).astype(np.float32))


def dense_packed(ctx: LowerContext, x: TensorValue, weight: np.ndarray,
                 shape: tuple[int, ...], dtype: DType, sink: Sink) -> K.Stmt:
    units, reduce = weight.shape
    bj = PACKED_UNITS
    wbuf = ctx.constant_table(pack(weight, bj), DType.FLOAT32).buffer
    assert wbuf is not None
    full = units // bj

    def row_body(row: Index) -> K.Stmt:
        def tile(base: K.Expr, unit0: K.Expr, valid: int) -> list[K.Stmt]:
            accs = [ctx.scalar("acc", DType.FLOAT32) for _ in range(valid)]
            stmts: list[K.Stmt] = [K.Decl(a, K.Const(0.0, DType.FLOAT32)) for a in accs]

            def step(k: K.Expr, at: K.Expr, off: int) -> list[K.Stmt]:
                """``x[k]`` times the weights from ``at + off``"""
                xv = ctx.scalar("xv", DType.FLOAT32)
                return [K.Decl(xv, K.cast(DType.FLOAT32, x.read((*row, k))))] + [
                    K.Assign(a, mac(a, xv, K.load(wbuf, K.add(at, _idx(off + i), no_wrap=True)
                                                  if off + i else at)))
                    for i, a in enumerate(accs)]
            k = ctx.index_var("k")
            pairs, odd = divmod(reduce, 2)
            if pairs:
                k2 = K.mul(k, _idx(2), no_wrap=True)
                at = ctx.scalar("wi", INDEX)
                stmts.append(K.for_range(k, pairs, K.block(
                    K.Decl(at, K.add(base, K.mul(k, _idx(2 * valid), no_wrap=True),
                                     no_wrap=True)),
                    K.block(*step(k2, at, 0)),
                    K.block(*step(K.add(k2, _idx(1), no_wrap=True), at, valid)))))
            if odd:
                stmts.append(K.block(*step(_idx(reduce - 1), base, (reduce - 1) * valid)))
            for i, a in enumerate(accs):
                unit = K.add(unit0, _idx(i), no_wrap=True) if i else unit0
                stmts.append(sink((*row, unit), K.cast(dtype, a)))
            return stmts
        out: list[K.Stmt] = []
        if full:
            jt = ctx.index_var("jt")
            out.append(K.for_range(jt, full, tile(K.mul(jt, _idx(bj * reduce), no_wrap=True),
                                                  K.mul(jt, _idx(bj), no_wrap=True), bj)))
        if units % bj:
            out.append(K.block(*tile(_idx(full * bj * reduce), _idx(full * bj), units % bj)))
        return K.block(*out)
    return loop_nest(ctx, shape[:-1], row_body, "r")
