"""Depthwise convolutions on narrow maps, read in place (``simd`` tuning).

Design note
-----------
The position form of :mod:`.nn_conv_simd` copies every input channel into
zero-padded planes ``Hq x Wq`` and computes ``(OH-1)*Wq + OW`` flattened
positions, ``Wq - OW`` of every ``Wq`` wasted.  On a narrow map such as
DS-CNN's 25x5 (a 3x3 kernel, padding 1: planes 27x7) that is 1.5 times
the work, and the copy (zeroing the planes, then 5-element rows) costs
about as much as the arithmetic: the layer ran at 8 GMAC/s.

This form reads the input where it is.  It applies to depthwise
convolutions (one input and one output channel per group) with stride 1
whose output rows are as wide as the input's (``OW == W``: the column
padding is exactly what the kernel's width removes), on float32 ``NCHW``
buffers.  Then output position ``j = oh*W + ow`` of a channel reads, for
tap ``t = (kh, kw)``, input element ``j + d_t`` of the same channel, with
the constant ``d_t = (kh*dh - pt)*W + kw*dw - pl``.  Whether the tap is
in the input (not padding) depends on ``j`` only: a compile-time mask
table ``mask[t][j]`` says it, and a masked-off tap adds the padding's
``0 * w`` (a select, never a multiply of the data by zero: an infinite
input element stays out of its neighbours' sums, as in the reference).
Each channel's positions run over ``[0, P)``, ``P`` the output plane
rounded up to :data:`POSITION_MULTIPLE`, so every tap is one contiguous
loop gcc vectorises without tails; positions ``>= OH*W`` are computed
and dropped.

The reads of a masked-off tap, and those of the dropped positions, land in
the neighbouring channels: inside the tensor for every channel but the
first and the last (the form applies only when ``-d_t <= H*W`` and
``P - 1 + d_t < 2*H*W``).  Those two (one body, in a loop of two
iterations before the others, its taps in a loop that reads each tap's
offset and range from a table: unrolled, gcc -O3 spent 0.07 CPU-s on each
copy) take a ranged loop per tap instead:
``j`` from ``max(0, -d_t)`` to ``min(OH*W, H*W - d_t)``, which keeps every
read inside the channel (a valid tap reads inside its channel, so the
positions the range drops are masked off anyway).

Each output's sum is its taps in ``(kh, kw)`` order from zero, rounded
after each multiply-add, as in the position form; masked-off taps add
``+0`` or ``-0``.  An output is written after its channel's taps are all
read, and a channel reads only its own channel's valid elements, so the
output may overwrite the input in place.
"""

from __future__ import annotations

import numpy as np

from ....ir.dtype import DType
from ...kernel import ir as K
from ..registry import LowerContext, Sink
from .common import mac
from .nn_conv import Axis, ConvGeometry, iadd, idx, imul

__all__ = ["applicable", "depthwise_map_conv", "POSITION_MULTIPLE"]

F32 = DType.FLOAT32
#: a channel's positions are rounded up to a multiple of this (one 512-bit
#: vector of float32), so each tap's loop has no remainder
POSITION_MULTIPLE = 16
#: the largest mask table (taps x padded positions) this form accepts: a
#: larger map wastes little in the position form, which needs no table
MAX_MASK_ELEMENTS = 4096


def _padded(positions: int) -> int:
    return -(-positions // POSITION_MULTIPLE) * POSITION_MULTIPLE


def _offsets(h: Axis, w: Axis) -> list[int]:
    return [(kh * h.dilation - h.pad) * w.size + kw * w.dilation - w.pad
            for kh in range(h.kernel) for kw in range(w.kernel)]


def _masks(h: Axis, w: Axis, padded: int) -> np.ndarray:
    """``mask[t][j]``: output position ``j`` reads a real input element
    through tap ``t``; 1 for the dropped positions ``j >= OH*W``."""
    out = np.ones((h.kernel * w.kernel, padded), dtype=np.int32)
    for t in range(h.kernel * w.kernel):
        kh, kw = divmod(t, w.kernel)
        for j in range(h.out * w.out):
            oh, ow = divmod(j, w.out)
            ih, iw = oh - h.pad + kh * h.dilation, ow - w.pad + kw * w.dilation
            out[t, j] = int(0 <= ih < h.size and 0 <= iw < w.size)
    return out


def applicable(cv: ConvGeometry, h: Axis, w: Axis) -> bool:
    """The form applies (see the module note), and the position form would
    waste more than ``waste`` of its work."""
    if not (cv.depthwise and cv.cg == 1 and cv.og == 1 and not cv.transposed
            and cv.data.buffer is not None and cv.data.layout in ("NCHW", "NCW")
            and cv.data.value.dtype is F32 and cv.acc is F32
            and h.stride == 1 and w.stride == 1 and w.out == w.size and h.out > 0):
        return False
    plane = h.size * w.size
    padded = _padded(h.out * w.out)
    offsets = _offsets(h, w)
    return (h.kernel * w.kernel * padded <= MAX_MASK_ELEMENTS
            and -min(offsets) <= plane and padded - 1 + max(offsets) < 2 * plane)


def depthwise_map_conv(ctx: LowerContext, cv: ConvGeometry, h: Axis, w: Axis, sink: Sink,
                       weight: np.ndarray) -> K.Stmt:
    ntaps = h.kernel * w.kernel
    plane, positions = h.size * w.size, h.out * w.out
    padded = _padded(positions)
    offsets = _offsets(h, w)
    masks = _masks(h, w, padded)
    canon = "OIHW" if "H" in cv.weight.layout else "OIW"
    wc = np.transpose(np.asarray(weight), [cv.weight.layout.index(c) for c in canon])
    wbuf = ctx.constant_table(wc.reshape(cv.o, ntaps).astype(np.float32).reshape(-1),
                              F32).buffer
    masked = [t for t in range(ntaps) if not masks[t].all()]
    mbuf = ctx.constant_table(masks[masked].reshape(-1), DType.INT32).buffer if masked \
        else None
    assert wbuf is not None
    src = cv.data.buffer
    assert src is not None
    acc = K.Buffer(ctx.fresh("acc"), F32, (padded,), K.BufferScope.LOCAL)
    channels = cv.n * cv.c

    def channel(q: K.Expr, full: bool) -> K.Stmt:
        """All outputs of flat channel ``q`` (``n*C + c``)."""
        n, c = (idx(0), q) if cv.n == 1 else (K.div(q, idx(cv.c)), K.mod(q, idx(cv.c)))
        z = ctx.index_var("j")
        stmts: list[K.Stmt] = [K.for_range(z, padded, K.store(acc, z, K.Const(0, F32)))]
        xb = ctx.scalar("xb", DType.INT32)
        stmts.append(K.Decl(xb, imul(q, plane)))
        for t, d in enumerate(offsets):
            lo, hi = (0, padded) if full else (max(0, -d), min(positions, plane - d))
            if hi <= lo:
                continue
            wv, xv, j = ctx.scalar("wv", F32), ctx.scalar("xv", F32), ctx.index_var("j")
            value: K.Expr = xv
            if t in masked:
                assert mbuf is not None
                bit = K.load(mbuf, iadd(j, masked.index(t) * padded))
                value = K.select(K.binop(K.BinaryOperator.NE, bit, K.Const(0, DType.INT32)),
                                 xv, K.Const(0, F32))
            body = K.block(K.Decl(xv, K.load(src, iadd(xb, iadd(j, d)))),
                           K.store(acc, j, mac(K.load(acc, j), value, wv)))
            stmts += [K.Decl(wv, K.load(wbuf, iadd(imul(c, ntaps), t))),
                      K.for_range(j, hi - lo, body, start=lo)]
        j = ctx.index_var("j")
        index = {"N": n, "C": c, "H": K.div(j, idx(w.out)), "W": K.mod(j, idx(w.out))}
        store = sink(tuple(idx(index[letter]) for letter in cv.out_layout),
                     K.cast(cv.out_dtype, K.load(acc, j)))
        stmts.append(K.for_range(j, positions, store))
        return K.block(*stmts)

    def edge_channel(q: K.Expr) -> K.Stmt:
        """``channel(q, False)`` with the taps in a loop, each tap's offset
        and range read from a table: one vectorised loop for gcc to
        compile instead of one per tap."""
        n, c = (idx(0), q) if cv.n == 1 else (K.div(q, idx(cv.c)), K.mod(q, idx(cv.c)))
        ranges = np.array([(d, max(0, -d), max(max(0, -d), min(positions, plane - d)))
                           for d in offsets], dtype=np.int32)
        rbuf = ctx.constant_table(ranges.reshape(-1), DType.INT32).buffer
        fbuf = ctx.constant_table(masks.reshape(-1), DType.INT32).buffer
        assert rbuf is not None and fbuf is not None
        z, t, j = ctx.index_var("j"), ctx.index_var("t"), ctx.index_var("j")
        xb, wv, xv = ctx.scalar("xb", DType.INT32), ctx.scalar("wv", F32), ctx.scalar("xv", F32)
        d, lo = ctx.scalar("d", DType.INT32), ctx.scalar("lo", DType.INT32)
        bit = K.load(fbuf, iadd(imul(t, padded), j))
        value = K.select(K.binop(K.BinaryOperator.NE, bit, K.Const(0, DType.INT32)),
                         xv, K.Const(0, F32))
        body = K.block(K.Decl(xv, K.load(src, iadd(xb, iadd(j, d)))),
                       K.store(acc, j, mac(K.load(acc, j), value, wv)))
        taps = K.block(K.Decl(wv, K.load(wbuf, iadd(imul(c, ntaps), t))),
                       K.Decl(d, K.load(rbuf, imul(t, 3))),
                       K.Decl(lo, K.load(rbuf, iadd(imul(t, 3), 1))),
                       K.for_range(j, K.sub(K.load(rbuf, iadd(imul(t, 3), 2)), lo, no_wrap=True),
                                   body, start=lo))
        jo = ctx.index_var("j")
        index = {"N": n, "C": c, "H": K.div(jo, idx(w.out)), "W": K.mod(jo, idx(w.out))}
        store = sink(tuple(idx(index[letter]) for letter in cv.out_layout),
                     K.cast(cv.out_dtype, K.load(acc, jo)))
        return K.block(K.for_range(z, padded, K.store(acc, z, K.Const(0, F32))),
                       K.Decl(xb, imul(q, plane)), K.for_range(t, ntaps, taps),
                       K.for_range(jo, positions, store))

    if channels == 1:
        return channel(idx(0), False)
    # the first and the last channel: one body, its taps in a loop (a body
    # per channel, its taps unrolled, cost gcc -O3 0.07 CPU-s each)
    e = ctx.index_var("q")
    parts = [K.for_range(e, 2, edge_channel(imul(e, channels - 1)))]
    if channels > 2:
        q = ctx.index_var("q")
        parts.append(K.for_range(q, channels - 2, channel(q, True), start=1))
    return K.block(*parts)
