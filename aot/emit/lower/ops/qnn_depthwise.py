"""The int8 depthwise 3x3 convolution of ``qnn.conv2d`` with the dual
16-bit multiply-accumulate of the Arm DSP extension (``SMLAD``).

Design note
-----------
Scope: a 3x3 kernel, one group per channel (channel multiplier 1), stride
1 or 2 on each axis, padding 0 or 1 on each side, no dilation,
channels-first data (``NCHW`` / ``OIHW``, the ONNX layout) of int8 read
from a buffer, a constant int8 weight with zero
points 0 (symmetric, per channel or per tensor), a literal input zero
point, int32 accumulation.  Anything else takes the general lowering
(:mod:`.qnn_linear`), and so does the ``simd`` tuning (the host's fast
configuration).  Channels-first, each channel is an independent 2-D 3x3
correlation ``acc[r][c] = sum_ij (x[s*r-pt+i][s*c-pl+j] - zx) * w[i][j]``
of one input plane.

**Pairs of taps.**  ``SXTB16(v)`` sign-extends bytes 0 and 2 of a word into
two halfwords; a word read at input column ``q`` gives the pair ``(x[q],
x[q+2])`` and, rotated by 8 bits, ``(x[q+1], x[q+3])``.  Two taps 2
columns apart are the outer taps of a kernel row: the word read at a
weight row ``w0 w1 w2 ..`` gives ``W02 = SXTB16(v) = (w0, w2)`` and, its
high half cleared, ``W10 = SXTB16(v >> 8) & 0xFFFF = (w1, 0)``.  An
output's kernel row is then two instructions: ``SMLAD`` of its outer pair
with ``W02``, and of a pair holding its middle tap in the
low half with ``W10`` -- or ``SMLADX`` (halves of ``W10`` exchanged) when
the middle tap is in the high half.  Six per output for 9
multiply-accumulates; 6 weight words per channel stay in registers.

**Register tiles.**  Per kernel row a tile of ``n`` adjacent outputs needs
the outer pairs starting at columns ``s*k`` (k < n, relative to the
tile's first input column) and a pair holding each middle tap ``s*k+1``;
a small planner at compile time picks the pairs (a middle tap is the low
half of a pair already there, or the high half of the one 2 columns
left, else its own pair) and the words (a word at ``q`` serves the pairs
at ``q`` and ``q+1``).  Stride 1, ``n = 4``: two word loads and four
``SXTB16`` per input row (12 MACs); stride 2: four loads, six ``SXTB16``.
With stride 1 the interior rows go two at a time, 2 outputs of each (4
accumulators): the 4 input rows the pair of windows covers are unpacked
once and each feeds both rows (kernel row ``i`` of the upper, ``i-1`` of
the lower).  Measured on MobileNet's 48x48 layer: 563k instructions with
1x4 tiles only, 521k so (2x4 tiles spill: 573k); stride 2 shares one input
row of three and gains nothing.  Other rows (top, bottom, stride 2, an odd
count) take 1x4 tiles.

**Borders.**  Output columns whose words lie inside the input row form the
interior: a loop over tiles with plain word loads, no tests.  The tiles at
the left and right (and a last tile of 1..3 outputs) are emitted with
their column known at compile time: a word reaching past the row is read
inside the row (at column 0 or ``W-4``) and shifted into place, and the
bytes that stand for padding and feed a product are or-ed in as the input
zero point (the reference pads with it), so every product of a padded tap
is ``zx * w``.  Rows narrower than a word (MobileNet's last 3x3 maps)
have no interior; their words are assembled from byte loads
(:meth:`_Depthwise.narrow_word`).  Output rows whose window leaves the
input (the top and bottom rows with padding) are emitted on their own and
skip the missing kernel rows.

**The input zero point** is not subtracted in the loop: ``sum (x - zx) *
w = sum x * w - zx * sum w``, where the sums run over the kernel rows
inside the input (padded columns count with ``x = zx``, so they add
nothing either way).  ``-zx * sum w`` (wrapped to int32) over each set of
kernel rows that occurs (all three; the top and bottom rows' two; ...) is
the accumulators' start, computed once per channel from the unpacked
weight words (``SMLAD`` with ``(1, 1)``: a few instructions per channel
instead of a 4-byte table entry per channel and set).  Every value fits
its halfword and the sums wrap modulo 2^32 like the reference's int32
accumulation: bit-identical.

**Weights**: the int8 weight as it is (9 bytes per channel) and one zero
byte after it, unpacked into 6 words once per channel.  Requantization and the
rest of the fused epilogue are the sink's, per output.  The helpers
``aot_load4_i8``, ``aot_sxtb16``, ``aot_smlad`` and ``aot_smladx`` are ACLE
intrinsics when the C compiler defines ``__ARM_FEATURE_DSP`` and portable C99
computing the same integers otherwise (``runtime_c/aot_kernel_helpers.h``;
tests build both).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from ....ir.dtype import DType
from ....ir.ops.nn_util import padding_2d
from ....ir.ops.qnn_linear import QnnConv2DAttrs
from ....ir.types import Type
from ...kernel import ir as K
from ..registry import INDEX, LowerContext, Sink, TensorValue, out_tensor
from .epilogue_bias import fold_bias
from .dsp_common import add_index as _add, index as _i, mul_index as _mul, ror8 as _ror8, u32 as _u
from .tuning import current as current_tuning

__all__ = ["depthwise_int8"]

I32 = DType.INT32
U32 = DType.UINT32
#: output columns of a register tile of one output row, and of two
TILE, PAIR_TILE = 4, 2


def _applies(data: TensorValue, weight: TensorValue, in_zp: TensorValue, k_zp: TensorValue,
             attrs: QnnConv2DAttrs, out_dtype: DType) -> bool:
    if (attrs.data_layout != "NCHW" or attrs.kernel_layout != "OIHW"
            or attrs.out_layout not in ("", "NCHW") or out_dtype is not I32):
        return False
    if data.dtype is not DType.INT8 or weight.dtype is not DType.INT8 or data.buffer is None:
        return False
    if weight.constant is None or k_zp.constant is None or in_zp.constant is None \
            or in_zp.size != 1:
        return False
    chans = int(data.shape[1])
    if attrs.groups != chans or tuple(int(d) for d in weight.shape) != (chans, 1, 3, 3):
        return False
    if tuple(attrs.dilation) != (1, 1) or any(int(s) not in (1, 2) for s in attrs.strides):
        return False
    if any(p not in (0, 1) for p in padding_2d(attrs.padding)):
        return False
    return bool(np.all(np.asarray(k_zp.constant) == 0))


def _packed_weight(w: np.ndarray) -> np.ndarray:
    """``(C, 3, 3)`` -> its 9 bytes per channel and one zero byte, so that
    the word of the last row of the last channel stays inside."""
    return np.concatenate([w.reshape(-1), [0]]).astype(np.int8)


# ------------------------------------------------------------ the tile plan

@dataclass(frozen=True)
class _Plan:
    """Which words and pairs a tile of ``n`` outputs reads per kernel row,
    columns relative to the tile's first input column."""
    #: word starts, ascending
    words: tuple[int, ...]
    #: pair start -> (word start, rotated by 8 bits)
    pairs: tuple[tuple[int, int, bool], ...]
    #: per output: (outer pair, middle pair, middle in the high half)
    taps: tuple[tuple[int, int, bool], ...]
    #: the input columns whose bytes feed a product
    used: frozenset[int]


def _plan(n: int, stride: int) -> _Plan:
    outer = [stride * k for k in range(n)]
    starts = set(outer)
    mids: list[tuple[int, bool]] = []
    for k in range(n):
        m = stride * k + 1
        if m in starts:
            mids.append((m, False))
        elif m - 2 in starts:
            mids.append((m - 2, True))
        else:
            starts.add(m)
            mids.append((m, False))
    words: list[int] = []
    pairs: list[tuple[int, int, bool]] = []
    for p in sorted(starts):
        if words and p == words[-1] + 1:
            pairs.append((p, words[-1], True))
        else:
            words.append(p)
            pairs.append((p, p, False))
    used = set()
    for k in range(n):
        used |= {outer[k], outer[k] + 2, mids[k][0] + (2 if mids[k][1] else 0)}
    taps = tuple((outer[k], mids[k][0], mids[k][1]) for k in range(n))
    return _Plan(tuple(words), tuple(pairs), taps, frozenset(used))


# ------------------------------------------------------------------ kernel

def depthwise_int8(ctx: LowerContext, data: TensorValue, weight: TensorValue,
                   in_zp: TensorValue, k_zp: TensorValue, attrs: QnnConv2DAttrs,
                   out_type: Type, sinks: Sequence[Sink]) -> K.Stmt | None:
    """The kernel of the design note, or None when it does not apply."""
    out = out_tensor(out_type)
    if current_tuning().simd or not _applies(data, weight, in_zp, k_zp, attrs, out.dtype):
        return None
    chans = int(data.shape[1])
    w = np.asarray(weight.constant).astype(np.int64).reshape(chans, 3, 3)
    zx = int(np.asarray(in_zp.constant).reshape(-1)[0])
    table = ctx.constant_table(_packed_weight(w), DType.INT8)
    if table.buffer is None or data.buffer is None:
        return None
    sink, bias = sinks[0], None
    folded = fold_bias(ctx, sink, tuple(int(d) for d in out.shape), 1)
    if folded is not None:
        values = (folded[0] + 2 ** 31) % 2 ** 32 - 2 ** 31
        bias = ctx.constant_table(values.astype(np.int32), I32).buffer
        if bias is not None:
            sink = folded[1]
    kernel = _Depthwise(ctx, data, data.buffer, table.buffer, w, zx, attrs,
                        tuple(int(d) for d in out.shape), sink, bias)
    return kernel.nest()


Rows = tuple[int, ...]


class _Depthwise:
    def __init__(self, ctx: LowerContext, data: TensorValue, xbuf: K.Buffer, wbuf: K.Buffer,
                 w: np.ndarray, zx: int, attrs: QnnConv2DAttrs, out_shape: tuple[int, ...],
                 sink: Sink, bias: K.Buffer | None = None) -> None:
        self.ctx, self.xbuf, self.wbuf, self.w, self.zx = ctx, xbuf, wbuf, w, zx
        #: the fused bias per channel, folded into the start values
        self.bias = bias
        self.n_batch, self.chans, self.height, self.width = (int(d) for d in data.shape)
        self.sh, self.sw = (int(s) for s in attrs.strides)
        self.pt, self.pl, _, _ = padding_2d(attrs.padding)
        self.out_h, self.out_w = out_shape[2], out_shape[3]
        self.sink = sink
        self.n = ctx.index_var("n")
        self.c = ctx.index_var("c")
        #: the accumulators' start per set of kernel rows (see start_values)
        self.inits: dict[Rows, K.Expr] = {}
        self.weights: list[tuple[K.Var, K.Var]] = []

    # -- per channel

    def init(self, rows: Rows) -> K.Expr:
        return self.inits.get(rows, K.Const(0, I32))

    def start_values(self, row_sets: Sequence[Rows]) -> list[K.Stmt]:
        """``-zx * sum w`` over each set of kernel rows, per channel, from
        the unpacked weight words: ``SMLAD`` with ``(1, 1)`` sums a pair;
        plus the channel's bias when the epilogue's was folded here
        (:mod:`.epilogue_bias`)."""
        body: list[K.Stmt] = []
        bias: K.Expr | None = None
        if self.bias is not None:
            b = self.ctx.scalar("bias", I32)
            body.append(K.Decl(b, K.load(self.bias, self.c)))
            bias = b
        if self.zx == 0:
            if bias is not None:
                self.inits.update({rows: bias for rows in row_sets})
            return body
        ones = _u(0x00010001)
        row_sums = []
        for w02, w10 in self.weights:
            v = self.ctx.scalar("ws", I32)
            inner = K.call("aot_smlad", [w10, ones, K.Const(0, I32)], I32)
            body.append(K.Decl(v, K.call("aot_smlad", [w02, ones, inner], I32)))
            row_sums.append(v)
        for rows in row_sets:
            v = self.ctx.scalar("start", I32)
            total: K.Expr = row_sums[rows[0]]
            for i in rows[1:]:
                total = K.add(total, row_sums[i])
            start = K.mul(total, K.Const(-self.zx, I32))
            body.append(K.Decl(v, start if bias is None else K.add(start, bias)))
            self.inits[rows] = v
        return body

    def unpack_weights(self) -> list[K.Stmt]:
        body: list[K.Stmt] = []
        for i in range(3):
            raw, w02, w10 = (self.ctx.scalar(s, U32) for s in ("wr", "w02", "w10"))
            word = _add(_mul(self.c, 9), 3 * i)
            body += [K.Decl(raw, K.load(self.wbuf, word, 4)),
                     K.Decl(w02, K.call("aot_sxtb16", [raw], U32)),
                     K.Decl(w10, K.bit_and(K.call("aot_sxtb16", [K.shr(raw, _u(8))], U32),
                                           _u(0xFFFF)))]
            self.weights.append((w02, w10))
        return body

    # -- words of one input row

    def row_base(self, ih: K.Expr) -> K.Expr:
        plane = _add(_mul(self.n, self.chans), self.c)
        return _mul(_add(_mul(plane, self.height), ih), self.width)

    def word(self, base: K.Expr, col: K.Expr | int, used: frozenset[int]) -> K.Expr:
        """The 4 bytes of the input row from column ``col`` (an int: known
        at compile time, may reach past the row; an Expr: inside it)."""
        if not isinstance(col, int):
            return K.load(self.xbuf, _add(base, col), 4)
        lanes = range(4)
        outside = [lane for lane in lanes if not 0 <= col + lane < self.width]
        zx_mask = sum((self.zx & 0xFF) << (8 * lane) for lane in outside if col + lane in used)
        if len(outside) == 4:
            return _u(zx_mask)
        if self.width < 4:
            return self.narrow_word(base, col, zx_mask)
        if not outside:
            return K.load(self.xbuf, _add(base, col), 4)
        if col < 0:
            v: K.Expr = K.shl(K.load(self.xbuf, base, 4), _u(-8 * col))
        else:
            shift = col - (self.width - 4)
            v = K.shr(K.load(self.xbuf, _add(base, self.width - 4), 4), _u(8 * shift))
        return K.bit_or(v, _u(zx_mask)) if zx_mask else v

    def narrow_word(self, base: K.Expr, col: int, zx_mask: int) -> K.Expr:
        """The word at ``col`` of a row narrower than 4 bytes (MobileNet's
        last 3x3 maps): its bytes inside the row read one by one (a word
        read would pass the row's end), the padding bytes that feed a
        product or-ed in as the input zero point."""
        v: K.Expr = _u(zx_mask)
        for lane in range(4):
            if 0 <= col + lane < self.width:
                byte = K.cast(U32, K.cast(DType.UINT8, K.load(self.xbuf, _add(base, col + lane))))
                byte = K.shl(byte, _u(8 * lane)) if lane else byte
                v = byte if isinstance(v, K.Const) and v.value == 0 else K.bit_or(v, byte)
        return v

    # -- a tile

    def tile(self, outs: Sequence[tuple[Rows, K.Expr]], ih0: K.Expr, oc: K.Expr | int,
             n: int) -> K.Stmt:
        """Outputs ``(oh, oc .. oc+n-1)`` of consecutive output rows ``outs``
        (each with the kernel rows inside the input); ``ih0``: the input row
        of the first one's kernel row 0.  An input row read once serves
        every output row of the tile whose window holds it."""
        plan = _plan(n, self.sw)
        accs = [[self.ctx.scalar("acc", I32) for _ in range(n)] for _ in outs]
        body: list[K.Stmt] = [K.Decl(a, self.init(rows))
                              for (rows, _), row in zip(outs, accs) for a in row]
        col0: K.Expr | int = oc * self.sw - self.pl if isinstance(oc, int) else \
            _add(_mul(oc, self.sw), -self.pl)
        # input row offset -> (output row, kernel row) pairs reading it
        readers: dict[int, list[tuple[int, int]]] = {}
        for g, (rows, _) in enumerate(outs):
            for i in rows:
                readers.setdefault(g * self.sh + i, []).append((g, i))
        for d in sorted(readers):
            base = self.row_base(_add(ih0, d))
            words: dict[int, K.Var] = {}
            for q in plan.words:
                v = self.ctx.scalar("xw", U32)
                col = col0 + q if isinstance(col0, int) else _add(col0, q)
                used = frozenset(u - q + col for u in plan.used) if isinstance(col, int) \
                    else frozenset()
                body.append(K.Decl(v, self.word(base, col, used)))
                words[q] = v
            pairs: dict[int, K.Var] = {}
            for p, q, rotated in plan.pairs:
                v = self.ctx.scalar("xp", U32)
                src: K.Expr = _ror8(words[q]) if rotated else words[q]
                body.append(K.Decl(v, K.call("aot_sxtb16", [src], U32)))
                pairs[p] = v
            for g, i in readers[d]:
                w02, w10 = self.weights[i]
                for acc, (outer, mid, high) in zip(accs[g], plan.taps):
                    body.append(K.Assign(acc, K.call("aot_smlad", [pairs[outer], w02, acc],
                                                     I32)))
                    body.append(K.Assign(acc, K.call("aot_smladx" if high else "aot_smlad",
                                                     [pairs[mid], w10, acc], I32)))
        for (_, oh), row in zip(outs, accs):
            for k, acc in enumerate(row):
                col = oc + k if isinstance(oc, int) else _add(oc, k)
                body.append(self.sink((self.n, self.c, oh, K.as_expr(col, INDEX)), acc))
        return K.block(*body)

    # -- rows and columns

    def interior_tile(self, t: int, width: int) -> bool:
        if (t + 1) * width > self.out_w:
            return False
        plan = _plan(width, self.sw)
        first = t * width * self.sw - self.pl
        return first + plan.words[0] >= 0 and first + plan.words[-1] + 3 <= self.width - 1

    def row(self, outs: Sequence[tuple[Rows, K.Expr]]) -> list[K.Stmt]:
        """Consecutive output rows (one, or a pair: see ``nest``)."""
        width = TILE if len(outs) == 1 else PAIR_TILE
        ih0 = _add(_mul(outs[0][1], self.sh), -self.pt)
        tiles = range((self.out_w + width - 1) // width)
        inner = [t for t in tiles if self.interior_tile(t, width)]
        out: list[K.Stmt] = []
        for t in tiles:
            if inner and t == inner[0]:
                tv = self.ctx.index_var("t")
                oc = _add(_mul(tv, width), inner[0] * width)
                out.append(K.for_range(tv, len(inner), self.tile(outs, ih0, oc, width)))
            elif t not in inner:
                out.append(self.tile(outs, ih0, t * width, min(width, self.out_w - t * width)))
        return out

    def rows_of(self, oh: int) -> Rows:
        top = oh * self.sh - self.pt
        return tuple(i for i in range(3) if 0 <= top + i < self.height)

    def nest(self) -> K.Stmt:
        per_c: list[K.Stmt] = self.unpack_weights()
        per_c += self.start_values(sorted({self.rows_of(oh) for oh in range(self.out_h)}))
        full = [oh for oh in range(self.out_h) if self.rows_of(oh) == (0, 1, 2)]
        first, last = (full[0], full[-1]) if full else (self.out_h, self.out_h)
        every = (0, 1, 2)
        for oh in range(self.out_h):
            if full and oh == first:
                # stride 1: two output rows at a time share two input rows
                group = 2 if self.sh == 1 else 1
                count = last - first + 1
                ov = self.ctx.index_var("oh")
                oh0 = _add(_mul(ov, group), first)
                outs = [(every, _add(oh0, g)) for g in range(group)]
                if count // group:
                    per_c.append(K.for_range(ov, count // group, K.block(*self.row(outs))))
                for r in range(count - count % group, count):
                    per_c += self.row([(every, _i(first + r))])
            elif not first <= oh <= last:
                per_c += self.row([(self.rows_of(oh), _i(oh))])
        return K.for_range(self.n, self.n_batch,
                           K.for_range(self.c, self.chans, K.block(*per_c)))
