"""The int8 pointwise convolution of ``qnn.conv2d`` with the dual 16-bit
multiply-accumulate of the Arm DSP extension (``SMLAD``).

Design note
-----------
Scope: a 1x1 convolution, stride 1, no padding, one group, channels-first
data (``NCHW`` / ``OIHW``, the ONNX layout), int8 data read from a buffer,
a constant int8 weight with zero points 0 (symmetric, per channel or per
tensor), a literal input zero point, int32 accumulation.  Anything else
takes the general lowering (:mod:`.qnn_linear`).  Over the flattened
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


def pointwise_int8(ctx: LowerContext, data: TensorValue, weight: TensorValue,
                   in_zp: TensorValue, k_zp: TensorValue, attrs: QnnConv2DAttrs,
                   out_type: Type, sinks: Sequence[Sink]) -> K.Stmt | None:
    """The kernel of the design note, or None when it does not apply."""
    out = out_tensor(out_type)
    if not _applies(data, weight, in_zp, k_zp, attrs, out.dtype):
        return None
    n_batch, chans, height, width = (int(d) for d in data.shape)
    outs = int(weight.shape[0])
    positions = height * width
    zx = int(np.asarray(in_zp.constant).reshape(-1)[0])
    w = np.asarray(weight.constant).astype(np.int64).reshape(outs, chans)
    pairs, odd_c = divmod(chans, 2)
    o_tiles, odd_o = divmod(outs, TILE_O)
    p_tiles, rest_p = divmod(positions, TILE_P)
    if not o_tiles or not p_tiles:
        return None
    # the repacked weight, channel counts padded to even with zeros: the
    # word (ot, cp) holds w[o][c], w[o+1][c], w[o][c+1], w[o+1][c+1]
    # (o = 2*ot, c = 2*cp); every read of the weight goes to this table
    o_pad, c_pad = o_tiles + odd_o, pairs + odd_c
    padded = np.zeros((2 * o_pad, 2 * c_pad), dtype=np.int64)
    padded[:outs, :chans] = w
    quads = padded.reshape(o_pad, 2, c_pad, 2).transpose(0, 2, 3, 1)
    table = ctx.constant_table(quads.astype(np.int8).reshape(-1), DType.INT8)
    if table is None or table.buffer is None:
        return None
    xbuf, wbuf = data.buffer, table.buffer
    init = None
    if zx:
        sums = -zx * w[:, :2 * pairs].sum(axis=1)
        wrapped = (sums + 2 ** 31) % 2 ** 32 - 2 ** 31
        init = ctx.constant_table(wrapped.astype(np.int32), I32)
        if init is None:
            return None
    n = ctx.index_var("n")

    def x_flat(c: K.Expr, p: K.Expr) -> K.Expr:
        base = K.mul(K.add(K.mul(n, _i(chans), no_wrap=True), c, no_wrap=True),
                     _i(positions), no_wrap=True)
        return K.add(base, p, no_wrap=True)

    def shifted_x(c: K.Expr, p: K.Expr) -> K.Expr:
        v = K.cast(I32, K.load(xbuf, x_flat(c, p)))
        return v if zx == 0 else K.sub(v, K.Const(zx, I32))

    def w_at(o: K.Expr, c: K.Expr) -> K.Expr:
        def split(v: K.Expr) -> tuple[K.Expr, K.Expr]:
            if isinstance(v, K.Const):
                return _i(int(v.value) // 2), _i(int(v.value) % 2)
            return K.div(v, _i(2)), K.mod(v, _i(2))
        (ot, oi), (cp, ci) = split(o), split(c)
        flat = K.add(K.mul(K.add(K.mul(ot, _i(c_pad), no_wrap=True), cp, no_wrap=True), _i(4),
                           no_wrap=True),
                     K.add(oi, K.mul(ci, _i(2), no_wrap=True), no_wrap=True), no_wrap=True)
        return K.cast(I32, K.load(wbuf, flat))

    def emit(accs: list[list[K.Var]], os_: list[K.Expr], ps: list[K.Expr]) -> list[K.Stmt]:
        stmts: list[K.Stmt] = []
        for i, o in enumerate(os_):
            for j, p in enumerate(ps):
                idx = (n, o, K.div(p, _i(width)), K.mod(p, _i(width)))
                stmts.append(sinks[0](idx, accs[i][j]))
        return stmts

    def scalar_steps(accs: list[list[K.Var]], os_: list[K.Expr], ps: list[K.Expr],
                     c: K.Expr) -> list[K.Stmt]:
        xs = [ctx.scalar("x", I32) for _ in ps]
        body: list[K.Stmt] = [K.Decl(v, shifted_x(c, p)) for v, p in zip(xs, ps)]
        for i, o in enumerate(os_):
            wv = ctx.scalar("w", I32)
            body.append(K.Decl(wv, w_at(o, c)))
            for j in range(len(ps)):
                body.append(K.Assign(accs[i][j], K.add(accs[i][j], K.mul(xs[j], wv))))
        return body

    def scalar_tile(os_: list[K.Expr], ps: list[K.Expr]) -> K.Stmt:
        accs = [[ctx.scalar("acc", I32) for _ in ps] for _ in os_]
        c = ctx.index_var("c")
        return K.block([K.Decl(a, K.Const(0, I32)) for row in accs for a in row],
                       K.for_range(c, chans, K.block(*scalar_steps(accs, os_, ps, c))),
                       *emit(accs, os_, ps))

    def dsp_tile(ot: K.Var, p0: K.Expr) -> K.Stmt:
        os_ = [K.mul(ot, _i(2), no_wrap=True), K.add(K.mul(ot, _i(2), no_wrap=True), _i(1),
                                                     no_wrap=True)]
        ps = [p0 if j == 0 else K.add(p0, _i(j), no_wrap=True) for j in range(TILE_P)]
        accs = [[ctx.scalar("acc", I32) for _ in ps] for _ in os_]
        cp = ctx.index_var("cp")
        c = K.mul(cp, _i(2), no_wrap=True)
        a, b, ww, w0, w1, lo, hi = (ctx.scalar(s, U32) for s in
                                    ("xa", "xb", "ww", "wa", "wb", "lo", "hi"))
        xp = [ctx.scalar("xp", U32) for _ in ps]
        body: list[K.Stmt] = [
            K.Decl(a, K.load(xbuf, x_flat(c, p0), 4)),
            K.Decl(b, K.load(xbuf, x_flat(K.add(c, _i(1), no_wrap=True), p0), 4)),
            K.Decl(ww, K.load(wbuf, K.mul(K.add(K.mul(ot, _i(c_pad), no_wrap=True), cp,
                                                no_wrap=True), _i(4), no_wrap=True), 4)),
            K.Decl(w0, K.call("aot_sxtb16", [ww], U32)),
            K.Decl(w1, K.call("aot_sxtb16", [_ror8(ww)], U32)),
        ]
        # positions p, p+1 from the low halves of the two words, then p+2, p+3
        for half, (h, packed) in enumerate(((lo, K.bit_or(K.bit_and(a, _u(0xFFFF)),
                                                          K.shl(b, _u(16)))),
                                            (hi, K.bit_or(K.bit_and(b, _u(0xFFFF0000)),
                                                          K.shr(a, _u(16)))))):
            j0 = 2 * half
            body += [K.Decl(h, packed),
                     K.Decl(xp[j0], K.call("aot_sxtb16", [h], U32)),
                     K.Decl(xp[j0 + 1], K.call("aot_sxtb16", [_ror8(h)], U32))]
            for i, wv in enumerate((w0, w1)):
                for j in (j0, j0 + 1):
                    body.append(K.Assign(accs[i][j], K.call("aot_smlad", [xp[j], wv, accs[i][j]],
                                                            I32)))
        # the accumulators start at -zx * sum(w) over the paired channels
        # (the products above use x, not x - zx)
        stmts: list[K.Stmt] = []
        for i, o in enumerate(os_):
            start = K.Const(0, I32) if init is None else init.read((o,))
            stmts += [K.Decl(v, start) for v in accs[i]]
        stmts.append(K.for_range(cp, pairs, K.block(*body)))
        if odd_c:
            stmts.extend(scalar_steps(accs, os_, ps, _i(chans - 1)))
        return K.block(*stmts, *emit(accs, os_, ps))

    ot, pt = ctx.index_var("ot"), ctx.index_var("pt")
    per_o: list[K.Stmt] = [K.for_range(pt, p_tiles, dsp_tile(ot, K.mul(pt, _i(TILE_P),
                                                                        no_wrap=True)))]
    o2 = [K.mul(ot, _i(2), no_wrap=True), K.add(K.mul(ot, _i(2), no_wrap=True), _i(1),
                                                no_wrap=True)]
    for r in range(rest_p):
        per_o.append(scalar_tile(o2, [_i(p_tiles * TILE_P + r)]))
    nest: list[K.Stmt] = [K.for_range(ot, o_tiles, K.block(*per_o))]
    if odd_o:
        pv = ctx.index_var("p")
        nest.append(K.for_range(pv, positions, scalar_tile([_i(outs - 1)], [pv])))
    return K.for_range(n, n_batch, K.block(*nest))
