"""The int8 pointwise convolution of ``qnn.conv2d`` with the dual 16-bit
multiply-accumulate of the Arm DSP extension (``SMLAD``).

Design note
-----------
Scope: a 1x1 convolution, stride 1, no padding, one group, channels-first
data (``NCHW`` / ``OIHW``, the ONNX layout), int8 data read from a buffer,
a constant int8 weight with zero points 0 (symmetric, per channel or per
tensor), a literal input zero point, int32 accumulation.  Anything else
takes the general lowering (:mod:`.qnn_linear`), and so does the ``simd``
tuning (a host's fast configuration: its generic nests are written for the
host compiler's vectorizer).  Over the flattened
positions ``p`` of the ``H*W`` map the convolution is a matrix product
``acc[o][p] = sum_c (x[c][p] - zx) * w[o][c]``.

**Register tile**: 2 output channels x 4 positions (8 int32 accumulators),
the reduction over input channels two at a time.  One step loads

* ``a = x[c][p..p+3]`` and ``b = x[c+1][p..p+3]``: two words (4 bytes
  each, contiguous in channels-first data);
* one word of the repacked weight: ``w[o][c], w[o+1][c], w[o][c+1],
  w[o+1][c+1]`` (bytes 0..3).

``SXTB16(v)`` sign-extends bytes 0 and 2 of ``v`` into two halfwords.  The
halves ``lo = a0 a1 b0 b1`` and ``hi = a2 a3 b2 b3`` of the two input
words (``PKHBT`` / ``PKHTB`` patterns) give the pairs ``(x[c][p],
x[c+1][p])`` = ``SXTB16(lo)`` and, rotated by 8 bits, that of ``p+1``;
``hi`` gives ``p+2`` and ``p+3``.  The weight word gives ``(w[o][c],
w[o][c+1])`` and, rotated, ``(w[o+1][c], w[o+1][c+1])``.  Then 8 ``SMLAD``
do 16 multiply-accumulates.  The positions ``p, p+1`` are finished before
``p+2, p+3`` are unpacked, so fewer values are live at once (a Cortex-M
has 13 usable registers; 8 hold accumulators).

**The input zero point** is not subtracted in the loop: ``sum_c (x - zx)
* w = sum_c x * w - zx * sum_c w``, and ``-zx * sum_c w[o][c]`` (wrapped
to int32) is a compile-time table per output channel that the
accumulators start from.  Every value fits its halfword and the sums wrap
modulo 2^32 like the reference's int32 accumulation, so the result is
bit-identical.

**Weights**: one int8 table in the order the loop reads it, the channel
counts padded to even with zero weights; the remainders (an odd channel
count, positions past the last full tile, an odd output channel) are
scalar multiply-accumulates of ``x - zx`` reading the same table, so the
original weight is not kept.  Requantization and the rest of the fused
epilogue are the sink's.

**Order**: position tiles outermost when the int32 results of one position
tile, all output channels, fit in :data:`~.nn_conv.STAGE_BYTES` (a local
array, the *stage*): every channel pair of the tile accumulates into
registers and stores into the stage, then all channels of the tile go to
the sink.  An output position is then written only after every input it
needs is read, so the arena may place the output over the input (as for
the float32 staged pointwise convolution, :mod:`.nn_conv`); each result is
the same sum as in the plain order (channel pairs outermost), which wider
layers keep.

The kernel IR spells the word loads as 4-lane loads (``aot_load4_i8``, a
``memcpy``) and the instructions as the runtime helpers ``aot_sxtb16`` and
``aot_smlad``: ACLE intrinsics when the C compiler defines
``__ARM_FEATURE_DSP``, a portable C99 computation of the same integers
otherwise (``runtime_c/aot_kernel_helpers.h``; tests build both).
Rotations and the halfword packing are plain shifts and masks.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from ....ir.dtype import DType
from ....ir.ops.qnn_linear import QnnConv2DAttrs
from ....ir.types import Type
from ...kernel import ir as K
from ..registry import INDEX, LowerContext, Sink, TensorValue, out_tensor
from .nn_conv import STAGE_BYTES
from .tuning import current as current_tuning

__all__ = ["pointwise_int8"]

I32 = DType.INT32
U32 = DType.UINT32
#: output channels and positions of a register tile
TILE_O, TILE_P = 2, 4


def _u(v: int) -> K.Const:
    return K.Const(v, U32)


def _i(v: int) -> K.Const:
    return K.Const(v, INDEX)


def _ror8(v: K.Expr) -> K.Expr:
    return K.bit_or(K.shr(v, _u(8)), K.shl(v, _u(24)))


def _applies(data: TensorValue, weight: TensorValue, in_zp: TensorValue, k_zp: TensorValue,
             attrs: QnnConv2DAttrs, out_dtype: DType) -> bool:
    if (attrs.groups != 1 or attrs.data_layout != "NCHW" or attrs.kernel_layout != "OIHW"
            or attrs.out_layout not in ("", "NCHW") or out_dtype is not I32):
        return False
    if tuple(attrs.strides) != (1, 1) or tuple(attrs.dilation) != (1, 1) \
            or any(int(p) for p in attrs.padding):
        return False
    if data.dtype is not DType.INT8 or weight.dtype is not DType.INT8 or data.buffer is None:
        return False
    if weight.constant is None or k_zp.constant is None or in_zp.constant is None:
        return False
    if tuple(weight.shape[2:]) != (1, 1) or data.shape[1] < 2 or in_zp.size != 1:
        return False
    return bool(np.all(np.asarray(k_zp.constant) == 0))


def _packed_weight(w: np.ndarray) -> np.ndarray:
    """The weight ``(O, C)`` in the loop's order, channel counts padded to
    even with zeros: the word ``(ot, cp)`` holds ``w[o][c], w[o+1][c],
    w[o][c+1], w[o+1][c+1]`` (``o = 2*ot``, ``c = 2*cp``)."""
    outs, chans = w.shape
    o_pad, c_pad = (outs + 1) // 2, (chans + 1) // 2
    padded = np.zeros((2 * o_pad, 2 * c_pad), dtype=np.int64)
    padded[:outs, :chans] = w
    return padded.reshape(o_pad, 2, c_pad, 2).transpose(0, 2, 3, 1).astype(np.int8).reshape(-1)


def pointwise_int8(ctx: LowerContext, data: TensorValue, weight: TensorValue,
                   in_zp: TensorValue, k_zp: TensorValue, attrs: QnnConv2DAttrs,
                   out_type: Type, sinks: Sequence[Sink]) -> K.Stmt | None:
    """The kernel of the design note, or None when it does not apply."""
    if current_tuning().simd or not _applies(data, weight, in_zp, k_zp, attrs,
                                             out_tensor(out_type).dtype):
        return None
    outs, chans = int(weight.shape[0]), int(data.shape[1])
    if outs < TILE_O or int(data.shape[2]) * int(data.shape[3]) < TILE_P:
        return None
    w = np.asarray(weight.constant).astype(np.int64).reshape(outs, chans)
    zx = int(np.asarray(in_zp.constant).reshape(-1)[0])
    table = ctx.constant_table(_packed_weight(w), DType.INT8)
    init = None
    if zx:
        sums = -zx * w[:, :chans - chans % 2].sum(axis=1)
        init = ctx.constant_table(((sums + 2 ** 31) % 2 ** 32 - 2 ** 31).astype(np.int32), I32)
        if init is None:
            return None
    if table is None or table.buffer is None or data.buffer is None:
        return None
    return _Pointwise(ctx, data, data.buffer, table.buffer, init, zx, outs, sinks[0]).nest()


Exprs = Sequence[K.Expr]
Accs = list[list[K.Var]]


class _Pointwise:
    def __init__(self, ctx: LowerContext, data: TensorValue, xbuf: K.Buffer, wbuf: K.Buffer,
                 init: TensorValue | None, zx: int, outs: int, sink: Sink) -> None:
        self.ctx, self.xbuf, self.wbuf, self.init, self.zx = ctx, xbuf, wbuf, init, zx
        self.n_batch, self.chans, height, self.width = (int(d) for d in data.shape)
        self.outs, self.positions = outs, height * self.width
        self.c_pad = (self.chans + 1) // 2
        self.sink = sink
        self.n = ctx.index_var("n")
        self.stage: K.Buffer | None = None

    def x_flat(self, c: K.Expr, p: K.Expr) -> K.Expr:
        base = K.mul(K.add(K.mul(self.n, _i(self.chans), no_wrap=True), c, no_wrap=True),
                     _i(self.positions), no_wrap=True)
        return K.add(base, p, no_wrap=True)

    def shifted_x(self, c: K.Expr, p: K.Expr) -> K.Expr:
        v = K.cast(I32, K.load(self.xbuf, self.x_flat(c, p)))
        return v if self.zx == 0 else K.sub(v, K.Const(self.zx, I32))

    def w_at(self, o: K.Expr, c: K.Expr) -> K.Expr:
        def split(v: K.Expr) -> tuple[K.Expr, K.Expr]:
            if isinstance(v, K.Const):
                return _i(int(v.value) // 2), _i(int(v.value) % 2)
            return K.div(v, _i(2)), K.mod(v, _i(2))
        (ot, oi), (cp, ci) = split(o), split(c)
        word = K.mul(K.add(K.mul(ot, _i(self.c_pad), no_wrap=True), cp, no_wrap=True), _i(4),
                     no_wrap=True)
        flat = K.add(word, K.add(oi, K.mul(ci, _i(2), no_wrap=True), no_wrap=True),
                     no_wrap=True)
        return K.cast(I32, K.load(self.wbuf, flat))

    def emit(self, accs: Accs, os_: Exprs, ps: Exprs) -> list[K.Stmt]:
        if self.stage is not None:
            return [K.store(self.stage, K.add(K.mul(o, _i(TILE_P), no_wrap=True), _i(j),
                                              no_wrap=True), accs[i][j])
                    for i, o in enumerate(os_) for j in range(len(ps))]
        return [self.sink((self.n, o, K.div(p, _i(self.width)), K.mod(p, _i(self.width))),
                          accs[i][j]) for i, o in enumerate(os_) for j, p in enumerate(ps)]

    def scalar_steps(self, accs: Accs, os_: Exprs, ps: Exprs, c: K.Expr) -> list[K.Stmt]:
        xs = [self.ctx.scalar("x", I32) for _ in ps]
        body: list[K.Stmt] = [K.Decl(v, self.shifted_x(c, p)) for v, p in zip(xs, ps)]
        for i, o in enumerate(os_):
            wv = self.ctx.scalar("w", I32)
            body.append(K.Decl(wv, self.w_at(o, c)))
            body += [K.Assign(accs[i][j], K.add(accs[i][j], K.mul(xs[j], wv)))
                     for j in range(len(ps))]
        return body

    def scalar_tile(self, os_: Exprs, ps: Exprs) -> K.Stmt:
        accs = [[self.ctx.scalar("acc", I32) for _ in ps] for _ in os_]
        c = self.ctx.index_var("c")
        return K.block([K.Decl(a, K.Const(0, I32)) for row in accs for a in row],
                       K.for_range(c, self.chans, K.block(*self.scalar_steps(accs, os_, ps, c))),
                       *self.emit(accs, os_, ps))

    def dsp_step(self, accs: Accs, ot: K.Var, p0: K.Expr, cp: K.Var) -> list[K.Stmt]:
        """Two input channels of the tile: 16 multiply-accumulates."""
        c = K.mul(cp, _i(2), no_wrap=True)
        a, b, ww, w0, w1, lo, hi = (self.ctx.scalar(s, U32) for s in
                                    ("xa", "xb", "ww", "wa", "wb", "lo", "hi"))
        xp = [self.ctx.scalar("xp", U32) for _ in range(TILE_P)]
        word = K.mul(K.add(K.mul(ot, _i(self.c_pad), no_wrap=True), cp, no_wrap=True), _i(4),
                     no_wrap=True)
        body: list[K.Stmt] = [
            K.Decl(a, K.load(self.xbuf, self.x_flat(c, p0), 4)),
            K.Decl(b, K.load(self.xbuf, self.x_flat(K.add(c, _i(1), no_wrap=True), p0), 4)),
            K.Decl(ww, K.load(self.wbuf, word, 4)),
            K.Decl(w0, K.call("aot_sxtb16", [ww], U32)),
            K.Decl(w1, K.call("aot_sxtb16", [_ror8(ww)], U32)),
        ]
        # positions p, p+1 from the low halves of the two words, then p+2, p+3
        halves = ((lo, K.bit_or(K.bit_and(a, _u(0xFFFF)), K.shl(b, _u(16)))),
                  (hi, K.bit_or(K.bit_and(b, _u(0xFFFF0000)), K.shr(a, _u(16)))))
        for half, (h, packed) in enumerate(halves):
            j0 = 2 * half
            body += [K.Decl(h, packed),
                     K.Decl(xp[j0], K.call("aot_sxtb16", [h], U32)),
                     K.Decl(xp[j0 + 1], K.call("aot_sxtb16", [_ror8(h)], U32))]
            body += [K.Assign(accs[i][j], K.call("aot_smlad", [xp[j], wv, accs[i][j]], I32))
                     for i, wv in enumerate((w0, w1)) for j in (j0, j0 + 1)]
        return body

    def dsp_tile(self, ot: K.Var, p0: K.Expr) -> K.Stmt:
        os_ = [K.mul(ot, _i(2), no_wrap=True),
               K.add(K.mul(ot, _i(2), no_wrap=True), _i(1), no_wrap=True)]
        ps = [p0 if j == 0 else K.add(p0, _i(j), no_wrap=True) for j in range(TILE_P)]
        accs = [[self.ctx.scalar("acc", I32) for _ in ps] for _ in os_]
        cp = self.ctx.index_var("cp")
        # the accumulators start at -zx * sum(w) over the paired channels
        # (the products of dsp_step use x, not x - zx)
        stmts: list[K.Stmt] = []
        for i, o in enumerate(os_):
            start = K.Const(0, I32) if self.init is None else self.init.read((o,))
            stmts += [K.Decl(v, start) for v in accs[i]]
        stmts.append(K.for_range(cp, self.chans // 2,
                                 K.block(*self.dsp_step(accs, ot, p0, cp))))
        if self.chans % 2:
            stmts += self.scalar_steps(accs, os_, ps, _i(self.chans - 1))
        return K.block(*stmts, *self.emit(accs, os_, ps))

    def staged_nest(self) -> K.Stmt:
        """Position tiles outermost, through the stage (design note)."""
        stage = K.Buffer(self.ctx.fresh("stage"), I32, (self.outs * TILE_P,),
                         K.BufferScope.LOCAL)
        self.stage = stage
        p_tiles, rest_p = divmod(self.positions, TILE_P)

        def tile(ps: Exprs, dsp: K.Expr | None) -> K.Stmt:
            stmts: list[K.Stmt] = []
            ot = self.ctx.index_var("ot")
            pair = [K.mul(ot, _i(2), no_wrap=True),
                    K.add(K.mul(ot, _i(2), no_wrap=True), _i(1), no_wrap=True)]
            body = self.dsp_tile(ot, dsp) if dsp is not None else self.scalar_tile(pair, ps)
            stmts.append(K.for_range(ot, self.outs // TILE_O, body))
            if self.outs % 2:
                stmts.append(self.scalar_tile([_i(self.outs - 1)], ps))
            o = self.ctx.index_var("oc")
            copies = [self.sink((self.n, o, K.div(p, _i(self.width)), K.mod(p, _i(self.width))),
                                K.load(stage, K.add(K.mul(o, _i(TILE_P), no_wrap=True), _i(j),
                                                    no_wrap=True)))
                      for j, p in enumerate(ps)]
            return K.block(*stmts, K.for_range(o, self.outs, K.block(*copies)))

        pt = self.ctx.index_var("pt")
        p0 = K.mul(pt, _i(TILE_P), no_wrap=True)
        ps = [p0 if j == 0 else K.add(p0, _i(j), no_wrap=True) for j in range(TILE_P)]
        nest: list[K.Stmt] = [K.for_range(pt, p_tiles, tile(ps, p0))]
        nest += [tile([_i(p_tiles * TILE_P + r)], None) for r in range(rest_p)]
        return K.for_range(self.n, self.n_batch, K.block(*nest))

    def nest(self) -> K.Stmt:
        if self.outs * TILE_P * 4 <= STAGE_BYTES:
            return self.staged_nest()
        p_tiles, rest_p = divmod(self.positions, TILE_P)
        ot, pt = self.ctx.index_var("ot"), self.ctx.index_var("pt")
        per_o: list[K.Stmt] = [K.for_range(pt, p_tiles, self.dsp_tile(
            ot, K.mul(pt, _i(TILE_P), no_wrap=True)))]
        pair = [K.mul(ot, _i(2), no_wrap=True),
                K.add(K.mul(ot, _i(2), no_wrap=True), _i(1), no_wrap=True)]
        per_o += [self.scalar_tile(pair, [_i(p_tiles * TILE_P + r)]) for r in range(rest_p)]
        nest: list[K.Stmt] = [K.for_range(ot, self.outs // TILE_O, K.block(*per_o))]
        if self.outs % 2:
            pv = self.ctx.index_var("p")
            nest.append(K.for_range(pv, self.positions,
                                    self.scalar_tile([_i(self.outs - 1)], [pv])))
        return K.for_range(self.n, self.n_batch, K.block(*nest))
