"""The int8 convolution of ``qnn.conv2d`` (pointwise and regular, any
stride, padding and dilation) with the dual 16-bit multiply-accumulate of
the Arm DSP extension (``SMLAD``).

Design note
-----------
Scope: one group, channels-first data (``NCHW`` / ``OIHW``, the ONNX
layout), int8 or uint8 data, a constant int8 weight with zero points 0
(symmetric, per channel or per tensor), a literal input zero point, int32
accumulation.  Anything else takes the general lowering
(:mod:`.qnn_linear`), and so does the ``simd`` tuning (a host's fast
configuration: its generic nests are written for the host compiler's
vectorizer).  Over the flattened output positions ``q`` of the
``OH*OW`` map and the reduction index ``k`` over ``(c, kh, kw)`` the
convolution is a matrix product ``acc[o][q] = sum_k (x[k][q] - zx) *
w[o][k]``, ``x[k][q]`` the input under tap ``k`` of window ``q``.

``SMLAD`` computes ``acc + lo(a)*lo(b) + hi(a)*hi(b)`` of two words of
16-bit halves: both halves must hold the *same* output's reduction terms.
Channels-first data has the reduction dimension at a stride (a word of it
holds four positions of one channel), so the kernel first copies the
windows of a few positions into a scratch buffer in which the reduction
dimension is contiguous (im2col), as 16-bit values, two per word:

* **The patch buffer** (scratch in the arena, ``P_T * KP`` words): for
  each of the ``P_T = 2`` positions of a tile, the ``KP`` words ``(x[k0],
  x[k1])`` of its window, one *pair* of reduction elements per word.  A
  pair is two channels of one tap (``c, c+1``, tap-major: one bounds test
  per tap, a loop over the channel pairs; an odd channel count gets a
  zero weight for the missing channel), or, when the window is small
  (``C*KH*KW <= UNROLLED``: DS-CNN's 1-channel 10x4 convolution,
  MobileNet's 3-channel 3x3 one), two consecutive elements of the
  flattened ``(c, kh, kw)`` order, fully unrolled at compile time with a
  bounds test per element (no padded channel: 27 elements are 14 words,
  not 18); for int8 window rows of 3 or 4 columns, the pairs of a row's
  columns ``(0, 2)`` and ``(1, 3)`` instead (3 columns: the middle ones
  of consecutive rows pair up), so that a tile inside the input copies a
  window row from one 4-byte word (:meth:`_Conv.row_words_copy`).  A tap
  outside the input (padding) holds the input zero point.
* **The weight** is repacked at compile time into the same pairs,
  sign-extended to 16 bits: one word ``(w[o][k0], w[o][k1])`` is one
  ``SMLAD`` operand, with no unpacking in the loop.  Words are ordered
  ``[ot][kp][i]`` (``O_T = 4`` output channels ``4*ot + i`` of a tile,
  the output count padded to a multiple of 4 with zero rows), so the loop
  walks one pointer.  The trade: the weight takes twice its int8 size in
  flash (plus at most 3 zero rows and one zero column).
* **Register tile**: 4 output channels x 2 positions, 8 int32
  accumulators; one step loads the 2 patch words of the pair and the 4
  weight words and issues 8 ``SMLAD``: 16 multiply-accumulates in 6 loads
  + 8 multiply-accumulate instructions (0.875 per MAC before the loop
  overhead, which unrolling by two pairs halves).  The accumulators, the
  two patch words, one weight word and the two pointers fit the 14
  general registers a Cortex-M leaves a leaf loop.
* **Order**: the patch of a position tile is built once and reused for
  every output channel, so the copy costs ``1 / O`` of the work per
  element (a few instructions per pair: two byte loads, a pack, a store).
* **Pointwise layers** (1x1, stride 1, no padding, even channel count,
  int8) take tiles of ``O_W = 2`` output channels by ``P_W = 4``
  positions instead (the weight packed ``[ot][kp][i]`` for 2 channels):
  the same 14 instructions per 16 multiply-accumulates (4 patch words, 2
  weight words, 8 ``SMLAD``), but each channel's requantization values
  (multiplier, rounding term, shift: loaded per output channel of a tile)
  serve 4 outputs instead of 2, the copy reads one word per channel for 4
  positions (:meth:`_Conv.plane_copy`), and the outputs go to their flat
  position ``q`` (no division by the row length, one output pointer).
  MobileNetV1-0.25's pointwise layers: 8 -> 16 918,157 -> 849,607
  instructions, 16 -> 32 597,859 -> 528,356, 128 -> 128 623,299 ->
  597,489; DS-CNN's 64 -> 64: 630,916 -> 576,768.

**The input zero point** is not subtracted: ``sum_k (x - zx) * w =
sum_k x * w - zx * sum_k w``, and ``-zx * sum_k w[o][k]`` (over every
tap, the padding taps included: the patch holds ``zx`` there, so their
``x - zx`` is 0) is a compile-time table per output channel the
accumulators start from.  Every value fits its halfword and the sums wrap
modulo 2^32 like the reference's int32 accumulation, so the result is
bit-identical.

Remainders: an output count not a multiple of the tile's ends with a
narrower tile reading the same table; a position count not a multiple of
the tile's ends with a shorter tile.  Requantization and the rest of the
fused epilogue are the sink's.

The kernel IR spells the instruction as the runtime helper ``aot_smlad``:
the ACLE intrinsic when the C compiler defines ``__ARM_FEATURE_DSP``, a
portable C99 computation of the same integers otherwise
(``runtime_c/aot_kernel_helpers.h``; tests build both).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Sequence

import numpy as np

from ....ir.dtype import DType
from ....ir.ops.qnn_linear import QnnConv2DAttrs
from ....ir.types import Type
from ...kernel import ir as K
from ..registry import LowerContext, Sink, TensorValue, out_tensor
from .epilogue_bias import fold_bias
from .dsp_common import add_index as _add, index as _i, mul_index as _mul, ror8 as _ror8, u32 as _u
from .tuning import current as current_tuning

__all__ = ["conv_int8_dsp"]

I32 = DType.INT32
U32 = DType.UINT32
#: output channels and positions of a register tile
O_T, P_T = 4, 2
#: windows of at most this many elements are paired in flattened order,
#: the copy unrolled at compile time
UNROLLED = 64
#: a window paired in flattened order with at most this many output tiles
#: emits them unrolled (4 tiles, ResNet-8's 3 -> 16 layer, cost the firmware
#: 120k instructions more, through gcc's register allocation of the whole
#: run function, where aot profile counted 73k fewer)
UNROLLED_TILES = 2
#: at most this many taps (the copy unrolls the taps)
MAX_TAPS = 64
#: pairs per turn of the product loop: (reductions of at least so many
#: pairs, pairs per turn), the first that applies.  Longer turns pay for
#: long reductions (ResNet-8 3x3: 1.24 -> 1.22 instructions per MAC, 64 ->
#: 64 with the residual add 1.17 -> 1.09) and cost short ones their
#: remainder steps and register pressure (DS-CNN's 10x4 layer 1.53 -> 1.64)
UNROLL = ((64, 8), (0, 4))
#: output channels and positions of a pointwise layer's tile that reads 4
#: positions of a channel as one word (see the design note)
O_W, P_W = 2, 4

#: one reduction element (c, kh, kw); None: a zero-weight pad
Elem = Optional[tuple[int, int, int]]


def _pack(lo: K.Expr, hi: K.Expr) -> K.Expr:
    """Two 16-bit values (int32 expressions in range) in one word."""
    return K.bit_or(K.bit_and(K.cast(U32, lo), _u(0xFFFF)), K.shl(K.cast(U32, hi), _u(16)))


def _applies(data: TensorValue, weight: TensorValue, in_zp: TensorValue, k_zp: TensorValue,
             attrs: QnnConv2DAttrs, out_dtype: DType) -> bool:
    if (attrs.groups != 1 or attrs.data_layout != "NCHW" or attrs.kernel_layout != "OIHW"
            or attrs.out_layout not in ("", "NCHW") or out_dtype is not I32):
        return False
    if data.dtype not in (DType.INT8, DType.UINT8) or weight.dtype is not DType.INT8:
        return False
    if weight.constant is None or k_zp.constant is None or in_zp.constant is None:
        return False
    if in_zp.size != 1 or int(weight.shape[2]) * int(weight.shape[3]) > MAX_TAPS:
        return False
    return bool(np.all(np.asarray(k_zp.constant) == 0))


@dataclass(frozen=True)
class _Geometry:
    n: int
    chans: int
    height: int
    width: int
    outs: int
    kh: int
    kw: int
    oh: int
    ow: int
    strides: tuple[int, int]
    dilation: tuple[int, int]
    pad: tuple[int, int]            # top, left

    @property
    def positions(self) -> int:
        return self.oh * self.ow


def _row_words(g: _Geometry, dtype: DType) -> bool:
    """Whether a window paired in flattened order is copied a window row
    at a time (see :meth:`_Conv.row_words_copy`): rows of 3 or 4 adjacent
    int8 bytes."""
    return g.kw in (3, 4) and g.dilation[1] == 1 and g.width >= 4 and dtype is DType.INT8


def _pairs(g: _Geometry, rows: bool = False) -> tuple[bool, list[tuple[Elem, Elem]]]:
    """Whether the window is paired in flattened order (unrolled copy), and
    the pairs of reduction elements of the patch words, in order.  With
    ``rows`` (a small window whose rows are 3 or 4 bytes, see
    :meth:`_Conv.row_words_copy`) the pairs of a window row are its columns
    ``(0, 2)`` (and ``(1, 3)`` for 4 columns); the middle columns of 3-column
    rows pair up across consecutive rows (the last alone)."""
    size = g.chans * g.kh * g.kw
    if size <= UNROLLED and g.chans % 2:
        if rows:
            out: list[tuple[Elem, Elem]] = []
            middles: list[Elem] = []
            for c in range(g.chans):
                for r in range(g.kh):
                    out.append(((c, r, 0), (c, r, 2)))
                    if g.kw == 4:
                        out.append(((c, r, 1), (c, r, 3)))
                    else:
                        middles.append((c, r, 1))
            middles += [None] * (len(middles) % 2)
            return True, out + [(middles[i], middles[i + 1]) for i in range(0, len(middles), 2)]
        flat: list[Elem] = [(c, r, s) for c in range(g.chans) for r in range(g.kh)
                            for s in range(g.kw)]
        flat += [None] * (len(flat) % 2)
        return True, [(flat[i], flat[i + 1]) for i in range(0, len(flat), 2)]
    pairs: list[tuple[Elem, Elem]] = []
    for r in range(g.kh):
        for s in range(g.kw):
            for c in range(0, g.chans, 2):
                pairs.append(((c, r, s), (c + 1, r, s) if c + 1 < g.chans else None))
    return False, pairs


def _plane(g: _Geometry, unrolled: bool, data: TensorValue) -> bool:
    """Whether the layer is a pointwise convolution whose tiles read 4
    positions of a channel as one word (:meth:`_Conv.plane_copy`)."""
    return not (unrolled or g.kh != 1 or g.kw != 1 or g.strides != (1, 1) or g.pad != (0, 0)
                or g.chans % 2 or data.buffer is None or data.dtype is not DType.INT8
                or (g.oh, g.ow) != (g.height, g.width) or g.positions < 4)


def _packed_weight(w: np.ndarray, pairs: list[tuple[Elem, Elem]], o_t: int = O_T) -> np.ndarray:
    """Words ``[ot][kp][i]``: output ``o_t*ot + i``, its weights of pair
    ``kp`` as two int16 halves."""
    outs = w.shape[0]
    o_pad = -(-outs // o_t) * o_t
    halves = np.zeros((o_pad, len(pairs), 2), dtype=np.int64)
    for kp, pair in enumerate(pairs):
        for h, e in enumerate(pair):
            if e is not None:
                halves[:outs, kp, h] = w[:, e[0], e[1], e[2]]
    words = (halves[..., 0] & 0xFFFF) | ((halves[..., 1] & 0xFFFF) << 16)
    return words.reshape(o_pad // o_t, o_t, len(pairs)).transpose(0, 2, 1).reshape(-1) \
        .astype(np.uint32)


def conv_int8_dsp(ctx: LowerContext, data: TensorValue, weight: TensorValue,
                  in_zp: TensorValue, k_zp: TensorValue, attrs: QnnConv2DAttrs,
                  out_type: Type, sinks: Sequence[Sink]) -> K.Stmt | None:
    """The kernel of the design note, or None when it does not apply."""
    out = out_tensor(out_type)
    if current_tuning().simd or not _applies(data, weight, in_zp, k_zp, attrs, out.dtype):
        return None
    n, chans, height, width = (int(d) for d in data.shape)
    outs, _, kh, kw = (int(d) for d in weight.shape)
    g = _Geometry(n, chans, height, width, outs, kh, kw, int(out.shape[2]), int(out.shape[3]),
                  (int(attrs.strides[0]), int(attrs.strides[1])),
                  (int(attrs.dilation[0]), int(attrs.dilation[1])),
                  (int(attrs.padding[0]), int(attrs.padding[1])))
    if g.positions == 0 or outs == 0 or n == 0:
        return None
    w = np.asarray(weight.constant).astype(np.int64)
    zx = int(np.asarray(in_zp.constant).reshape(-1)[0])
    rows = data.buffer is not None and _row_words(g, data.dtype)
    unrolled, pairs = _pairs(g, rows)
    o_t, p_t = (O_W, P_W) if _plane(g, unrolled, data) else (O_T, P_T)
    table = ctx.constant_table(_packed_weight(w, pairs, o_t), U32)
    init = None
    sink = sinks[0]
    sums = -zx * w.reshape(outs, -1).sum(axis=1)
    bias = fold_bias(ctx, sink, tuple(int(d) for d in out.shape), 1)
    if bias is not None:
        sums, sink = sums + bias[0], bias[1]
    if zx or bias is not None:
        init = ctx.constant_table(((sums + 2 ** 31) % 2 ** 32 - 2 ** 31).astype(np.int32), I32)
    if table.buffer is None or (init is not None and init.buffer is None):
        return None
    patch = ctx.scratch(U32, (p_t * len(pairs),), "patch")
    return _Conv(ctx, g, data, table.buffer, init, patch, zx, unrolled, pairs, sink,
                 rows and unrolled, (o_t, p_t)).nest()


class _Conv:
    def __init__(self, ctx: LowerContext, g: _Geometry, data: TensorValue, wbuf: K.Buffer,
                 init: TensorValue | None, patch: K.Buffer, zx: int, unrolled: bool,
                 pairs: list[tuple[Elem, Elem]], sink: Sink, rows: bool = False,
                 tile: tuple[int, int] = (O_T, P_T)) -> None:
        self.ctx, self.g, self.data, self.wbuf, self.init = ctx, g, data, wbuf, init
        self.patch, self.zx, self.unrolled, self.pairs, self.sink = (patch, zx, unrolled,
                                                                     pairs, sink)
        self.rows = rows
        #: output channels and positions of a register tile
        self.o_t, self.p_t = tile
        self.kp = len(pairs)
        self.n = ctx.index_var("n")

    # ------------------------------------------------------------ the copy

    def _inside(self, pos: tuple[K.Var, K.Var], r: int, s: int) -> K.Expr | None:
        """The bounds test of tap (r, s) for the position (oh, ow), or None
        when every position's tap is inside the input."""
        g, tests = self.g, []
        for axis, (v, k, size) in enumerate(((pos[0], r, g.height), (pos[1], s, g.width))):
            off = k * g.dilation[axis] - g.pad[axis]
            extent = g.oh if axis == 0 else g.ow
            at = _add(_mul(v, g.strides[axis]), off) if off >= 0 else \
                K.sub(_mul(v, g.strides[axis]), _i(-off), no_wrap=True)
            if off < 0:
                tests.append(K.ge(at, _i(0)))
            if (extent - 1) * g.strides[axis] + off >= size:
                tests.append(K.lt(at, _i(size)))
        if not tests:
            return None
        cond = tests[0]
        for t in tests[1:]:
            cond = K.logical_and(cond, t)
        return cond

    def _x(self, pos: tuple[K.Var, K.Var], c: K.Expr, r: int, s: int) -> K.Expr:
        g = self.g
        ih = _add(_mul(pos[0], g.strides[0]), r * g.dilation[0] - g.pad[0]) \
            if r * g.dilation[0] >= g.pad[0] else \
            K.sub(_mul(pos[0], g.strides[0]), _i(g.pad[0] - r * g.dilation[0]), no_wrap=True)
        iw = _add(_mul(pos[1], g.strides[1]), s * g.dilation[1] - g.pad[1]) \
            if s * g.dilation[1] >= g.pad[1] else \
            K.sub(_mul(pos[1], g.strides[1]), _i(g.pad[1] - s * g.dilation[1]), no_wrap=True)
        return K.cast(I32, self.data.read((self.n, c, ih, iw)))

    def copy(self, slot: int, pos: tuple[K.Var, K.Var]) -> list[K.Stmt]:
        """The patch words of one position into slot ``slot``."""
        base = slot * self.kp
        zxzx = _u(((self.zx & 0xFFFF) | (self.zx << 16)) & 0xFFFFFFFF)
        if self.unrolled:
            return self._copy_unrolled(base, pos)
        g, out = self.g, []
        cp_full, odd = divmod(g.chans, 2)
        per_tap = cp_full + odd
        for r in range(g.kh):
            for s in range(g.kw):
                first = base + (r * g.kw + s) * per_tap
                cp = self.ctx.index_var("cp")
                c0 = _mul(cp, 2)
                words: list[K.Stmt] = []
                if cp_full:
                    pair = _pack(self._x(pos, c0, r, s), self._x(pos, _add(c0, 1), r, s))
                    words.append(K.for_range(cp, cp_full, K.store(self.patch, _add(cp, first),
                                                                  pair)))
                if odd:
                    words.append(K.store(self.patch, _i(first + cp_full),
                                         _pack(self._x(pos, _i(g.chans - 1), r, s),
                                               K.Const(0, I32))))
                cond = self._inside(pos, r, s)
                if cond is None:
                    out += words
                    continue
                cz = self.ctx.index_var("cp")
                fill = K.for_range(cz, per_tap, K.store(self.patch, _add(cz, first), zxzx))
                out.append(K.if_then_else(cond, words, [fill]))
        return out

    def row_copy(self, pos: list[tuple[K.Var, K.Var]]) -> tuple[K.Expr, list[K.Stmt]] | None:
        """The copy of both positions of a tile from one 4-byte word per
        channel and window row, when the two positions lie in one output
        row and their windows' columns (``(P_T-1)*sw + KW <= 4``, e.g. a
        3x3 window at stride 1) are inside the input: the condition and
        the statements, or None when the layer has no such tiles.

        Words ``a`` and ``b`` of channels ``c`` and ``c+1`` (columns
        ``iw..iw+3``) give the halves ``lo = a0 a1 b0 b1`` and ``hi = a2 a3
        b2 b3``; ``SXTB16`` of ``lo`` and of ``lo`` rotated by 8 bits are
        the pairs of columns 0 and 1, ``hi`` those of columns 2 and 3: 2
        loads, 4 packing instructions and 4 ``SXTB16`` for the 6 patch
        words of a channel pair and window row (ten instructions a word
        the other way)."""
        g = self.g
        span = (P_T - 1) * g.strides[1] + g.kw
        buf = self.data.buffer
        if (self.p_t != P_T or self.unrolled or g.chans % 2 or span > 4
                or g.dilation[1] != 1 or g.width < 4 or span > P_T * g.kw
                or buf is None or self.data.dtype is not DType.INT8 or g.ow < 2):
            return None
        (oh, ow0), (_, ow1) = pos[0], pos[1]
        iw = self.ctx.index_var("iw")
        at = K.sub(_mul(ow0, g.strides[1]), _i(g.pad[1]), no_wrap=True) if g.pad[1] else \
            _mul(ow0, g.strides[1])
        cond = K.logical_and(K.logical_and(K.eq(ow1, _add(ow0, 1)), K.ge(at, _i(0))),
                             K.lt(at, _i(g.width - 3)))
        stmts: list[K.Stmt] = [K.Decl(iw, at)]
        per_tap = g.chans // 2
        zxzx = _u(((self.zx & 0xFFFF) | (self.zx << 16)) & 0xFFFFFFFF)
        for r in range(g.kh):
            first = [[j * self.kp + (r * g.kw + s) * per_tap for s in range(g.kw)]
                     for j in range(P_T)]
            ih = _add(_mul(oh, g.strides[0]), r * g.dilation[0] - g.pad[0]) \
                if r * g.dilation[0] >= g.pad[0] else \
                K.sub(_mul(oh, g.strides[0]), _i(g.pad[0] - r * g.dilation[0]), no_wrap=True)
            cp = self.ctx.index_var("cp")
            row = K.mul(_add(_mul(_add(_mul(self.n, g.chans), _mul(cp, 2)), g.height), ih),
                        _i(g.width), no_wrap=True)
            a, b, lo, hi = (self.ctx.scalar(v, U32) for v in ("xa", "xb", "lo", "hi"))
            cols = [self.ctx.scalar("col", U32) for _ in range(4)]
            body: list[K.Stmt] = [
                K.Decl(a, K.load(buf, _add(row, iw), 4)),
                K.Decl(b, K.load(buf, _add(_add(row, g.height * g.width), iw), 4)),
                K.Decl(lo, K.bit_or(K.bit_and(a, _u(0xFFFF)), K.shl(b, _u(16)))),
                K.Decl(hi, K.bit_or(K.bit_and(b, _u(0xFFFF0000)), K.shr(a, _u(16)))),
                K.Decl(cols[0], K.call("aot_sxtb16", [lo], U32)),
                K.Decl(cols[1], K.call("aot_sxtb16", [_ror8(lo)], U32)),
                K.Decl(cols[2], K.call("aot_sxtb16", [hi], U32)),
                K.Decl(cols[3], K.call("aot_sxtb16", [_ror8(hi)], U32))]
            for j in range(P_T):
                for s_ in range(g.kw):
                    body.append(K.store(self.patch, _add(cp, first[j][s_]),
                                        cols[j * g.strides[1] + s_]))
            words: list[K.Stmt] = [K.for_range(cp, per_tap, K.block(*body))]
            row_test = self._row_inside(oh, r)
            if row_test is None:
                stmts += words
                continue
            cz = self.ctx.index_var("cp")
            fill = [K.store(self.patch, _add(cz, first[j][s_]), zxzx)
                    for j in range(P_T) for s_ in range(g.kw)]
            stmts.append(K.if_then_else(row_test, words, [K.for_range(cz, per_tap,
                                                                       K.block(*fill))]))
        return cond, stmts

    def interior_copy(self, pos: list[tuple[K.Var, K.Var]]
                      ) -> tuple[K.Expr, list[K.Stmt]] | None:
        """For a window paired in flattened order: the copy without bounds
        tests when every tap of every position of the tile is inside the
        input (most positions of a first layer), with its condition (with
        row words, the fourth byte of each 3-column window row too)."""
        if not self.unrolled:
            return None
        last = 3 if self.rows else self.g.kw - 1
        tests = [t for p in pos for t in (self._inside(p, 0, 0),
                                          self._inside(p, self.g.kh - 1, last))
                 if t is not None]
        if not tests:
            return None
        cond = tests[0]
        for t in tests[1:]:
            cond = K.logical_and(cond, t)
        copy = self.row_words_copy if self.rows else \
            (lambda base, p: self._copy_unrolled(base, p, checked=False))
        return cond, [st for j, p in enumerate(pos) for st in copy(j * self.kp, p)]

    def row_words_copy(self, base: int, pos: tuple[K.Var, K.Var]) -> list[K.Stmt]:
        """The patch words of one position whose window is inside the input
        (and, for 3 columns, the byte after each window row too), from one
        4-byte word per window row: ``SXTB16`` of the word ``(x0 x1 x2 x3)``
        is the pair of columns 0 and 2, of the word rotated by 8 bits that
        of columns 1 and 3.  A 3-column row's middle byte pairs with the
        next row's: ``SXTB16`` of ``(a & 0xFFFF | b << 16) >> 8`` (bytes
        ``a1`` and ``b1`` in lanes 0 and 2; no 32-bit mask constant for gcc
        to reload); the last one alone, with a don't-care high half (its
        weight is 0).  MobileNet's 3-channel 3x3 window: 9 word loads, 14
        ``SXTB16`` and 4 packs for 14 words, where byte copies take 27
        loads and 13 packs."""
        g, buf = self.g, self.data.buffer
        assert buf is not None
        at = {pair: base + k for k, pair in enumerate(self.pairs)}
        oh, ow = pos
        ih = _mul(oh, g.strides[0]) if not g.pad[0] else \
            K.sub(_mul(oh, g.strides[0]), _i(g.pad[0]), no_wrap=True)
        iw = _mul(ow, g.strides[1]) if not g.pad[1] else \
            K.sub(_mul(ow, g.strides[1]), _i(g.pad[1]), no_wrap=True)
        start = self.ctx.index_var("at")
        out: list[K.Stmt] = [K.Decl(start, _add(K.mul(_add(_mul(self.n, g.chans * g.height), ih),
                                                       _i(g.width), no_wrap=True), iw))]
        middles: list[tuple[Elem, K.Var]] = []
        for c in range(g.chans):
            for r in range(g.kh):
                w = self.ctx.scalar("xr", U32)
                off = (c * g.height + r * g.dilation[0]) * g.width
                out += [K.Decl(w, K.load(buf, _add(start, off), 4)),
                        K.store(self.patch, _i(at[((c, r, 0), (c, r, 2))]),
                                K.call("aot_sxtb16", [w], U32))]
                if g.kw == 4:
                    out.append(K.store(self.patch, _i(at[((c, r, 1), (c, r, 3))]),
                                       K.call("aot_sxtb16", [_ror8(w)], U32)))
                else:
                    middles.append(((c, r, 1), w))
        for i in range(0, len(middles), 2):
            (ea, a), rest = middles[i], middles[i + 1:i + 2]
            if rest:
                (eb, b), = rest
                word = K.shr(K.bit_or(K.bit_and(a, _u(0xFFFF)), K.shl(b, _u(16))), _u(8))
                out.append(K.store(self.patch, _i(at[(ea, eb)]),
                                   K.call("aot_sxtb16", [word], U32)))
            else:
                out.append(K.store(self.patch, _i(at[(ea, None)]),
                                   K.call("aot_sxtb16", [K.shr(a, _u(8))], U32)))
        return out

    def _row_inside(self, oh: K.Var, r: int) -> K.Expr | None:
        g, tests = self.g, []
        off = r * g.dilation[0] - g.pad[0]
        at = _add(_mul(oh, g.strides[0]), off) if off >= 0 else \
            K.sub(_mul(oh, g.strides[0]), _i(-off), no_wrap=True)
        if off < 0:
            tests.append(K.ge(at, _i(0)))
        if (g.oh - 1) * g.strides[0] + off >= g.height:
            tests.append(K.lt(at, _i(g.height)))
        if not tests:
            return None
        return tests[0] if len(tests) == 1 else K.logical_and(tests[0], tests[1])

    def _copy_unrolled(self, base: int, pos: tuple[K.Var, K.Var],
                       checked: bool = True) -> list[K.Stmt]:
        out: list[K.Stmt] = []
        tests: dict[tuple[int, int], K.Var | None] = {}
        for r in range(self.g.kh):
            for s in range(self.g.kw):
                cond = self._inside(pos, r, s) if checked else None
                if cond is not None:
                    v = self.ctx.scalar("in", DType.BOOL)
                    out.append(K.Decl(v, cond))
                    tests[(r, s)] = v
                else:
                    tests[(r, s)] = None
        for kp, pair in enumerate(self.pairs):
            vals: list[K.Expr] = []
            for e in pair:
                if e is None:
                    vals.append(K.Const(0, I32))
                    continue
                c, r, s = e
                t = tests[(r, s)]
                if t is None:
                    vals.append(self._x(pos, _i(c), r, s))
                    continue
                v = self.ctx.scalar("x", I32)
                out += [K.Decl(v, K.Const(self.zx, I32)),
                        K.if_then_else(t, [K.Assign(v, self._x(pos, _i(c), r, s))])]
                vals.append(v)
            out.append(K.store(self.patch, _i(base + kp), _pack(vals[0], vals[1])))
        return out

    # ---------------------------------------------------------- the product

    def step(self, ot: K.Expr, accs: list[list[K.Var]], kp: K.Expr) -> list[K.Stmt]:
        """One pair of every position and output of the tile."""
        ctx, kp_n = self.ctx, self.kp
        xs = [ctx.scalar("xq", U32) for _ in accs[0]]
        body: list[K.Stmt] = [K.Decl(x, K.load(self.patch, _add(kp, j * kp_n)))
                              for j, x in enumerate(xs)]
        word = _mul(_add(_mul(ot, kp_n), kp), self.o_t)
        for i, row in enumerate(accs):
            wv = ctx.scalar("wq", U32)
            body.append(K.Decl(wv, K.load(self.wbuf, _add(word, i))))
            body += [K.Assign(a, K.call("aot_smlad", [x, wv, a], I32)) for x, a in zip(xs, row)]
        return body

    def tile(self, ot: K.Expr, width: int, slots: int,
             pos: list[tuple[K.Expr, K.Expr]]) -> list[K.Stmt]:
        """``width`` output channels ``o_t*ot + i`` by the first ``slots``
        positions of the patch."""
        ctx, kp_n = self.ctx, self.kp
        os_ = [_add(_mul(ot, self.o_t), i) for i in range(width)]
        accs = [[ctx.scalar("acc", I32) for _ in range(slots)] for _ in range(width)]
        stmts: list[K.Stmt] = []
        for i, o in enumerate(os_):
            start = K.Const(0, I32) if self.init is None else self.init.read((o,))
            stmts += [K.Decl(a, start) for a in accs[i]]
        # the pairs 4 or 8 at a time (the loop's pointer updates, compare
        # and branch once per 64 or 128 multiply-accumulates), then the
        # rest one by one
        kpu = ctx.index_var("kp")
        unroll = next(u for least, u in UNROLL if kp_n >= least)
        if kp_n >= unroll:
            body = [st for u in range(unroll) for st in self.step(ot, accs,
                                                                  _add(_mul(kpu, unroll), u))]
            stmts.append(K.for_range(kpu, kp_n // unroll, K.block(*body)))
        for rest in range(kp_n - kp_n % unroll, kp_n):
            stmts += self.step(ot, accs, _i(rest))
        for i, o in enumerate(os_):
            stmts += [self.sink((self.n, o, pos[j][0], pos[j][1]), accs[i][j])
                      for j in range(slots)]
        return stmts

    def plane_copy(self, q0: K.Expr) -> list[K.Stmt]:
        """The patch of a pointwise tile whose positions ``q0 .. q0 + 3``
        lie in the input plane: per channel pair, the words
        ``x[c][q0..q0+3]`` and ``x[c+1][q0..q0+3]`` (the plane is
        contiguous: stride 1, no padding) packed and split by ``SXTB16``
        into the pairs of the tile's 2 or 4 positions (as :meth:`row_copy`,
        across row ends too)."""
        g, kp_n = self.g, self.kp
        buf = self.data.buffer
        assert buf is not None
        plane = g.height * g.width
        cp = self.ctx.index_var("cp")
        base = _add(K.mul(_add(_mul(self.n, g.chans), _mul(cp, 2)), _i(plane), no_wrap=True), q0)
        a, b, lo = (self.ctx.scalar(v, U32) for v in ("xa", "xb", "lo"))
        body = [K.Decl(a, K.load(buf, base, 4)),
                K.Decl(b, K.load(buf, _add(base, plane), 4)),
                K.Decl(lo, K.bit_or(K.bit_and(a, _u(0xFFFF)), K.shl(b, _u(16)))),
                K.store(self.patch, cp, K.call("aot_sxtb16", [lo], U32)),
                K.store(self.patch, _add(cp, kp_n), K.call("aot_sxtb16", [_ror8(lo)], U32))]
        if self.p_t == 4:
            hi = self.ctx.scalar("hi", U32)
            body += [K.Decl(hi, K.bit_or(K.bit_and(b, _u(0xFFFF0000)), K.shr(a, _u(16)))),
                     K.store(self.patch, _add(cp, 2 * kp_n), K.call("aot_sxtb16", [hi], U32)),
                     K.store(self.patch, _add(cp, 3 * kp_n),
                             K.call("aot_sxtb16", [_ror8(hi)], U32))]
        return [K.for_range(cp, g.chans // 2, K.block(*body))]

    def plane_tiles(self) -> int:
        """How many leading position tiles :meth:`plane_copy` takes (0:
        the layer is not such a pointwise convolution, see :func:`_plane`).
        They run in a loop of their own, without the other copies' tests: a
        test would make the arena's overlap analysis (which takes both arms
        as executed) see reads of earlier positions after their outputs
        were written, and no output could share the input's bytes; in a
        loop of their own, a pointwise layer may write its output over its
        input."""
        if not _plane(self.g, self.unrolled, self.data):
            return 0
        return (self.g.positions - 4) // self.p_t + 1

    def positions(self, q0: K.Expr, slots: int, plane: bool = False) -> K.Stmt:
        g, ctx = self.g, self.ctx
        pos: list[tuple[K.Var, K.Var]] = []
        stmts: list[K.Stmt] = []
        decls: list[list[K.Stmt]] = []
        copies: list[list[K.Stmt]] = []
        # a plane tile's outputs are at the flat positions q0 + j: their
        # row and column go to the sink as ``q / OW`` and ``q % OW``, which
        # the output's flattened index folds back into ``q`` (no division,
        # one output pointer for the tile's positions)
        at: list[tuple[K.Expr, K.Expr]] = []
        for j in range(slots):
            q = _add(q0, j)
            if plane:
                at.append((K.div(q, _i(g.ow)), K.mod(q, _i(g.ow))) if g.ow > 1 else (q, _i(0)))
                continue
            oh, ow = ctx.index_var("oh"), ctx.index_var("ow")
            decls.append([K.Decl(oh, K.div(q, _i(g.ow)) if g.ow > 1 else q),
                          K.Decl(ow, K.mod(q, _i(g.ow)) if g.ow > 1 else _i(0))])
            pos.append((oh, ow))
            at.append((oh, ow))
            copies.append(self.copy(j, (oh, ow)))
        # after the plane tiles (the last 1..3 positions): the element copy
        # alone, whose reads stay at the tile's positions (see plane_tiles)
        fast = None if plane or self.plane_tiles() else \
            (self.row_copy(pos) if slots == self.p_t else None) or self.interior_copy(pos)
        if plane:
            stmts += self.plane_copy(q0)
        elif fast is None:
            for d, c in zip(decls, copies):
                stmts += d + c
        else:
            stmts += [d for ds in decls for d in ds]
            stmts.append(K.if_then_else(fast[0], fast[1], [c for cs in copies for c in cs]))
        full, rest = divmod(g.outs, self.o_t)
        ot = ctx.index_var("ot")
        if full and self.unrolled and full <= UNROLLED_TILES:
            # a small first layer's few output tiles one after the other,
            # each with its table offsets known (MobileNet's 3 -> 8 layer:
            # gcc 12 spilled the loop's table pointers around the
            # requantization; 1,051,663 -> 900,251 instructions)
            for t in range(full):
                stmts += self.tile(_i(t), self.o_t, slots, at)
        elif full:
            stmts.append(K.for_range(ot, full, K.block(*self.tile(ot, self.o_t, slots, at))))
        if rest:
            stmts += self.tile(_i(full), rest, slots, at)
        return K.block(*stmts)

    def nest(self) -> K.Stmt:
        full, rest = divmod(self.g.positions, self.p_t)
        qt = self.ctx.index_var("qt")
        body: list[K.Stmt] = []
        plane = self.plane_tiles()
        if plane:
            body.append(K.for_range(qt, plane, self.positions(_mul(qt, self.p_t), self.p_t,
                                                              True)))
            qt = self.ctx.index_var("qt")
        if full > plane:
            body.append(K.for_range(qt, full - plane,
                                    self.positions(_mul(qt, self.p_t), self.p_t), plane))
        if rest:
            body.append(self.positions(_i(full * self.p_t), rest))
        return K.for_range(self.n, self.g.n, K.block(*body))
