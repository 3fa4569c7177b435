"""Float32 pointwise convolutions for a scalar FPU with a fused
multiply-add (the ``scalar`` tuning: Cortex-M4F/M7/M33): register tiles
that load their operands two floats at a time.

Design note
-----------
A channels-first pointwise (1x1, stride 1, no padding, one group)
convolution is a product ``out[o][p] = sum_c W[o][c] * x[c][p]`` over the
``H*W`` positions ``p``.  :mod:`.nn_conv`'s register tile (4 channels x 6
positions) loads 6 inputs and 4 weights per input channel for 24 ``fmaf``
(Cortex-M4F -O2: 37 instructions per 24 MACs with the loop).  gcc 12 never
merges consecutive ``vldr`` into a multi-register ``vldm``; it does load
two floats with one ``vldr.64`` when C reads a ``double`` and takes its two
halves through a union (``aot_lo_f32`` / ``aot_hi_f32`` of
``aot_kernel_helpers.h``), which needs the pair 8-byte aligned.  So:

* the weight becomes a compile-time ``double`` table (a float64 table of
  the model: bit patterns, exact) holding ``W`` as float pairs laid out
  ``[O/BO][BO/2][C]``: the ``BO`` weights a tile needs per input channel
  are ``BO/2`` doubles, each from its own run over the channels.  Only
  finite weights (a pair of floats is then never a NaN double, which a
  double move could quiet on some cores);
* per column tile of ``BW`` positions, the inputs of every channel are
  first copied into a local ``double`` array ``xs[BW/2][C]`` as float
  pairs (``aot_pack2_f32``; gcc: 6 ``ldr`` + 3 ``strd`` per channel);
* each tile of ``BO`` output channels then reads ``BW/2 + BO/2`` doubles
  per input channel: 5 loads for 24 MACs.  Each of the five is the next
  element of a run of its own (the stage's pair ``k`` of every channel,
  the table's pair ``k`` of the tile), so gcc -O2 walks five pointers and
  folds their increments into the loads (``vldmia rN!, {dM}``): 31
  instructions per 24 MACs with the loop (1.29 per MAC).  Laid out
  channel-major (``xs[C][BW/2]``, ``[O/BO][C][BO/2]``) the loads were
  offsets from two pointers that the loop advanced with two adds: 33
  (MobileNetV1 0.25 on the M4F: 12,175,039 -> 11,656,770 instructions,
  DS-CNN 4,115,012 -> 3,947,792).

The copy is also what lets the output take the input's place in the arena:
a column tile's outputs are written (through the sink, the fused epilogue
applied in registers) only after all of its inputs have been copied, as
the staged order of :mod:`.nn_conv` guaranteed with a local array of
outputs and a second pass over it -- which this nest no longer needs.
Every output keeps the summation order of :mod:`.nn_conv` (input channel
by input channel, from the bias when :func:`~.nn_conv._with_bias` moved
it there, else from 0), so its results equal the plain tile's bit for bit.

An odd-sized column tile stores its last input with a 0 as the pair's
second half, which no tile reads.  The local array is ``C * BW`` floats on
the stack (at most :data:`STAGE_BYTES`).
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from ....ir.dtype import DType
from ...kernel import ir as K
from ..registry import LowerContext, Sink
from .common import mac
from .nn_conv import Axis, ConvGeometry, column_tiles, decl_index, iadd, idx, imul
from .tuning import current as current_tuning

__all__ = ["applicable", "pointwise_pairs", "BW", "BO", "STAGE_BYTES"]

F32, F64 = DType.FLOAT32, DType.FLOAT64
#: positions (columns) and output channels of a register tile: 24
#: accumulators, 3 + 2 pair loads per input channel
BW, BO = 6, 4
#: input channels per step of the copy loop (when they divide the channels)
COPY_CHANNELS = 4
#: bytes of the local copy of a column tile's inputs, at most
STAGE_BYTES = 6144


def applicable(cv: ConvGeometry, h: Axis, w: Axis, weight: np.ndarray | None) -> bool:
    """A float32 channels-first pointwise convolution with a constant,
    finite weight, under a scalar tuning with ``fmaf`` (module note)."""
    tuning = current_tuning()
    pointwise = all(a.kernel == 1 and a.stride == 1 and a.pad == 0 and a.dilation == 1
                    and a.out == a.size for a in (h, w))
    return (not tuning.simd and tuning.fma and pointwise and weight is not None
            and weight.dtype == np.float32 and bool(np.all(np.isfinite(weight)))
            and cv.acc is F32 and cv.out_dtype is F32 and cv.data.value.dtype is F32
            and not cv.transposed and cv.groups == 1 and cv.o % BO == 0
            and cv.data.layout in ("NCHW", "NCW") and cv.out_layout in ("NCHW", "NCW")
            and cv.c * BW * F32.itemsize <= STAGE_BYTES)


def _weight_pairs(cv: ConvGeometry, weight: np.ndarray) -> np.ndarray:
    """``W`` as ``[O/BO][BO/2][C]`` float64 values, each two float32 weights
    (output channels ``2k``, ``2k+1`` of the tile)."""
    layout = cv.weight.layout
    w2 = np.moveaxis(weight, [layout.index("O"), layout.index("I")], [0, 1])
    w2 = np.ascontiguousarray(w2).reshape(cv.o, cv.c)
    tiles = w2.reshape(cv.o // BO, BO // 2, 2, cv.c).transpose(0, 1, 3, 2)
    return np.ascontiguousarray(tiles, dtype=np.float32).view(np.float64)


def pointwise_pairs(ctx: LowerContext, cv: ConvGeometry, h: Axis, w: Axis, sink: Sink,
                    weight: np.ndarray) -> K.Stmt:
    """The nest of the module note."""
    return _Pairs(ctx, cv, w, sink, weight).nest(h.out * w.out)


def _pairs(ctx: LowerContext, buf: K.Buffer, at: Callable[[int], K.Expr], count: int,
           base: str, body: list[K.Stmt]) -> list[K.Expr]:
    """The ``2 * count`` floats of the doubles ``buf[at(k)]``, ``k <
    count``: each double declared once in ``body``, then split."""
    out: list[K.Expr] = []
    for k in range(count):
        d = ctx.scalar(base, F64)
        body.append(K.Decl(d, K.load(buf, at(k))))
        out += [K.call("aot_lo_f32", [d], F32), K.call("aot_hi_f32", [d], F32)]
    return out


class _Pairs:
    """One pointwise convolution's pair-loading nest."""

    def __init__(self, ctx: LowerContext, cv: ConvGeometry, w: Axis, sink: Sink,
                 weight: np.ndarray) -> None:
        self.ctx, self.cv, self.width, self.sink = ctx, cv, w.out, sink
        table = ctx.constant_table(_weight_pairs(cv, weight), F64).buffer
        assert table is not None
        self.table = table
        self.xs = K.Buffer(ctx.fresh("xs"), F64, (cv.c * BW // 2,), K.BufferScope.LOCAL)
        self.n = ctx.index_var("n")

    def nest(self, positions: int) -> K.Stmt:
        tiles: list[K.Stmt] = []
        start = 0
        for size, count in column_tiles(positions, BW):
            t = self.ctx.index_var("pt")
            d0, p0 = decl_index(self.ctx, "p", iadd(imul(t, size), start))
            decls: list[K.Stmt] = [d0] if d0 is not None else []
            tiles.append(K.for_range(t, count, K.block(*decls, self.column_tile(p0, size))))
            start += size * count
        return K.for_range(self.n, self.cv.n, K.block(*tiles))

    def x_at(self, c: K.Expr, p: K.Expr) -> K.Expr:
        """Input channel ``c`` at flat position ``p``."""
        cv, buf = self.cv, self.cv.data.buffer
        if buf is not None and buf.dtype is F32:
            return K.load(buf, iadd(imul(iadd(imul(self.n, cv.c), c), self.positions), p))
        return cv.data.at({"N": self.n, "C": c, "H": K.div(p, idx(self.width)),
                           "W": K.mod(p, idx(self.width))})

    @property
    def positions(self) -> int:
        return int(np.prod(self.cv.data.value.shape[2:]))

    def column_tile(self, p0: K.Expr, size: int) -> K.Stmt:
        """The copy of the column tile's inputs, then its channel tiles."""
        cv, c = self.cv, self.ctx.index_var("c")
        step = COPY_CHANNELS if cv.c % COPY_CHANNELS == 0 else 1
        copies = []
        for r in range(step):
            ch = iadd(imul(c, step), r)
            for k in range((size + 1) // 2):
                a = self.x_at(ch, iadd(p0, 2 * k))
                b = self.x_at(ch, iadd(p0, 2 * k + 1)) if 2 * k + 1 < size else K.Const(0.0, F32)
                copies.append(K.store(self.xs, iadd(ch, k * cv.c),
                                      K.call("aot_pack2_f32", [a, b], F64)))
        ot = self.ctx.index_var("ot")
        return K.block(K.for_range(c, cv.c // step, K.block(*copies)),
                       K.for_range(ot, cv.o // BO, self.channel_tile(ot, p0, size)))

    def channel_tile(self, ot: K.Var, p0: K.Expr, size: int) -> K.Stmt:
        """``BO`` output channels x ``size`` positions: accumulators from
        the bias, the reduction over the input channels, the sink."""
        ctx, cv = self.ctx, self.cv
        o0 = imul(ot, BO)
        accs = [[ctx.scalar("acc", F32) for _ in range(size)] for _ in range(BO)]
        stmts: list[K.Stmt] = []
        for i in range(BO):
            start = K.Const(0.0, F32) if cv.bias is None else cv.bias(iadd(o0, i))
            stmts += [K.Decl(a, start) for a in accs[i]]
        c = ctx.index_var("c")
        body: list[K.Stmt] = []
        xv = _pairs(ctx, self.xs, lambda k: iadd(c, k * cv.c), (size + 1) // 2, "xd", body)
        wv = _pairs(ctx, self.table, lambda k: iadd(imul(iadd(imul(ot, BO // 2), k), cv.c), c),
                    BO // 2, "wd", body)
        xs_ = [ctx.scalar("x", F32) for _ in range(size)]
        ws_ = [ctx.scalar("w", F32) for _ in range(BO)]
        body += [K.Decl(v, e) for v, e in zip(xs_, xv)] + [K.Decl(v, e) for v, e in zip(ws_, wv)]
        body += [K.Assign(accs[i][j], mac(accs[i][j], xs_[j], ws_[i]))
                 for i in range(BO) for j in range(size)]
        stmts.append(K.for_range(c, cv.c, K.block(*body)))
        for i in range(BO):
            for j in range(size):
                p = iadd(p0, j)
                index = {"N": self.n, "C": iadd(o0, i), "H": K.div(p, idx(self.width)),
                         "W": K.mod(p, idx(self.width))}
                stmts.append(self.sink(tuple(idx(index[ch]) for ch in cv.out_layout),
                                       K.cast(cv.out_dtype, accs[i][j])))
        return K.block(*stmts)
