"""Lowering of the convolutions (``aot/ir/ops/nn_conv.py``): ``nn.conv1d``,
``nn.conv2d``, ``nn.conv2d_transpose`` and ``nn.conv1d_transpose``, as
anchors with their own loop nests.

Design note
-----------
Everything is computed in canonical terms -- data ``N C H W``, weight
``O I H W`` (``I O H W`` for the transposed convolution), output
``N O OH OW`` -- and every access is mapped through the operand's layout
(any permutation the reference accepts: ``NHWC``, ``HWIO``, ``OHWI`` ...).
``nn.conv1d`` (and ``nn.conv1d_transpose``) is the same nest with a
spatial axis ``H`` of extent 1 that never appears in an index.  Inputs are
read only through ``args[i].read`` (the fused prologue -- a cast, a
zero-point subtraction, an ``nn.pad`` -- is inlined there); each output
element goes to the sink exactly once.

**The loop nest.**  Outputs are computed in *register tiles* of ``BO``
output channels by ``BW`` output columns.  A tile declares ``BO * BW``
scalar accumulators (``K.Decl``, updated by ``K.Assign``), runs the
reduction once and hands the accumulators to the sink.  In the reduction
every input value is loaded once into a temporary and reused by the
``BO`` channels of the tile, every weight is loaded once and reused by the
``BW`` columns: ``BW + BO`` loads feed ``BO * BW`` multiply-accumulates (a
1x1 tile would need two loads per MAC).  Tile sizes per accumulator type
are in :data:`TILE_BUDGET` / :data:`MAX_TILE_CHANNELS` (chosen from
instruction counts on a Cortex-M4F: float32 4x6, int32 2x4).

::

    for n, [group, channel tile]          (channel tiles innermost instead
      for oh in border rows | interior rows    for channels-last outputs
                                               and float32 accumulators)
        kh range: computed per row | constant [0, KH)
        for ow in border columns: (1 column, kw range per run / per column)
          tile
        for ow0 in interior column tiles: (BW columns, kw range [0, KW))
          tile:  acc[BO][BW] = 0
                 for <non-unrolled reduction axes, in data-layout order>
                   [int32 base indices of x and w]
                   <unrolled axes>: x[j] = X[..], w[i] = W[..], acc[i][j] += x*w
                 sink(acc[i][j]) for every i, j

* The reduction axes (input channel ``ic``, ``kh``, ``kw``) are ordered as
  in the data layout: ``ic, kh, kw`` for ``NCHW``, ``kh, kw, ic`` for
  ``NHWC``.  Axes of extent 1 are dropped, so a pointwise convolution is a
  plain dot product over ``ic`` and a depthwise one a plain window sum.
* Axes with a constant range are unrolled in the kernel IR, innermost
  first, while the unrolled body stays within :data:`UNROLL_MAX_MACS`;
  they move inside the remaining loops.  So for ``NCHW`` a tile's inner
  body is an unrolled run over ``kw`` (contiguous in the input row and in
  an ``OIHW`` weight; neighbouring columns of a stride-1 tile share their
  loads, which are deduplicated) -- and over ``kh`` too when it fits, the
  loop then being the channel loop.  For ``NHWC`` the innermost loop runs
  over ``ic``, contiguous in the input and in ``OHWI`` weights (in
  ``HWIO`` the ``BO`` channels of the tile are the contiguous run).
* For a buffer-backed operand (no prologue) the part of the flat index
  that does not change inside the innermost loop is declared as an
  ``int32`` temporary outside it; the loads inside add ``var * stride``
  and a constant.  An operand with a fused prologue is read through its
  ``read`` with the full index (the C compiler hoists the invariant part).
* Channel tiles: ``BO`` consecutive output channels of one group share
  their input values.  When every group has a single output channel
  (depthwise), a tile takes ``BO`` consecutive *groups* instead (for
  channels-last data; channels-first depthwise tiles columns only).
* A pointwise convolution (1x1, stride 1, no padding) whose rows do not
  split into full column tiles (a 25x5 map) takes ``H*W`` as one row: its
  column tiles run across row ends (a buffer read's flat index is the
  position itself; reads through ``read`` and the sink get ``p / W`` and
  ``p % W``).
* Output order: channel tiles innermost for channels-last outputs (whose
  channels are contiguous) and for float32 accumulators whatever the
  layout; outermost for other channels-first outputs (the tile's weights
  stay in place while the image streams by).  With the channel tiles
  outside, gcc hoists the tile's bias loads (and other per-channel values
  of the fused epilogue) out of the column loops and then spills
  accumulators of the 4x6 float32 tile (Cortex-M4F, DS-CNN's pointwise
  layer: 1.89 instructions per MAC against 1.67 with the channel tiles
  innermost); a microcontroller has no cache for the outer order to
  favour.
* *Staged pointwise* (channels-first, 1x1, stride 1, no padding, one group,
  at most :data:`STAGE_BYTES` of outputs per column tile): column tiles
  outermost, channel tiles inside, each tile's results (cast to the output
  type) stored in a small local array, and all channels of the column tile
  handed to the sink after the last channel tile.  Every output element is
  the same expression as in the plain order (bit-identical), but the output
  of a column tile is written only once every input it needs has been read:
  the output may then take the input's place in the arena (the memory
  planner's overlap analysis, :mod:`aot.emit.plan.overlap`, proves it from
  this loop nest).  In the plain order each channel tile reads the whole
  input again, so no byte of it dies before the last tile.

**Computed weights.**  A weight read through a fused prologue (a
weight-only quantized weight's unpack, zero point and scale, a cast, a
layout change) is converted once per channel tile into a local array the
tile reads instead (:mod:`.nn_conv_wstage`, forward convolutions; channel
tiles then run outermost).

**Tuning.**  These are the ``scalar`` tuning's nests (the default, for a
scalar FPU such as a Cortex-M4F); its float32 pointwise layers with a
constant weight take the pair-loading tiles of :mod:`.nn_conv_pointwise`
instead of the staged order, and float32 accumulators start from a fused
bias (:func:`_with_bias`).  Under the ``simd`` tuning
(:mod:`.tuning`) forward float32 convolutions with a constant, finite
weight take the vectorisable nests of :mod:`.nn_conv_simd` instead.

**Padding.**  There is no bounds test in any reduction loop.  Per spatial
axis, output position ``o`` reads input ``i0 + k*dil`` with
``i0 = o*stride - pad``; the valid taps are ``k`` in
``[max(0, ceil(-i0/dil)), min(K, ceil((size - i0)/dil)))``.  At lowering
time each axis splits into the *interior* -- every tap valid, the constant
range ``[0, K)`` -- and the *border* positions at both ends.  Border
columns run one at a time, each run of columns with the same range as its
own copy with a constant range (at most :data:`MAX_BORDER_RUNS` runs, else
one merged loop computing the range per column, outside the reduction
loops).  Border rows are one merged loop computing the ``kh`` range per
row.  Taps in the padding are skipped, which is exactly the reference's
zero padding.

**Transposed convolution.**  Output ``oh`` collects input rows ``iy`` and
taps ``kh`` with ``iy*stride + kh*dil = oh + pad``.  Splitting the output
rows by phase ``oh = r + stride*q`` makes the valid taps of phase ``r`` a
lowering-time arithmetic progression ``kh = k0 + t*kstep`` with input row
``iy = q + c - t*e`` (``e = kstep*dil/stride``), so the tap loop over ``t``
has no divisibility test either; its range is clipped per output row and
column like the forward convolution's (:class:`Phase` is the axis; the
same tiles, with a column step of ``stride`` in the output).

**Arithmetic.**  The reference accumulates integers exactly (int64) and
wraps to ``out_dtype``; wrapping accumulation in ``int32`` (``int64`` for
a 64-bit ``out_dtype``) followed by the wrapping cast is congruent modulo
``2^bits`` and therefore bit-identical.  Floating-point products
accumulate in :func:`accumulator_dtype`: ``float32`` for ``float32`` and
``float16`` data (the reference's ``float64`` would be software emulation
on a Cortex-M4F, tens of instructions per MAC), ``float64`` when data or
output is ``float64`` or the operands are integers.  The float32 sum
differs from the reference's correctly rounded one by the rounding of the
partial sums (relative error about ``K * 2^-24`` of the sum of absolute
products); :data:`FLOAT32_ACCUMULATOR` switches it to ``float64``.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, replace
from typing import Callable, Protocol, Sequence

import numpy as np

from ....ir.dtype import DType
from ....ir.ops.nn_util import padding_1d, padding_2d, pair
from ...kernel import ir as K
from ..registry import ArgValue, LowerContext, Sink, TensorValue, anchor_lowering, out_tensor
from .common import mac, tensor
from .epilogue_bias import fold_float_bias
from .tuning import current as current_tuning

__all__ = ["FLOAT32_ACCUMULATOR", "accumulator_dtype", "Axis", "Operand", "idx", "iadd", "isub",
           "imul", "smax", "smin", "decl_index", "merged_range_loop", "clip_runs",
           "column_tiles", "columns", "bounds", "interior", "border", "Lin", "Access", "RAxis",
           "Dedup", "reduction_nest", "lin_for", "TILE_BUDGET"]

I32 = DType.INT32

#: The accumulator of float32/float16 convolutions and pools (see the
#: design note); DType.FLOAT64 reproduces the reference's rounding exactly
#: at the price of double arithmetic.
FLOAT32_ACCUMULATOR = DType.FLOAT32

#: Register tiles (measured with arm-none-eabi-gcc 12 -O2 on a Cortex-M4F,
#: which has 32 single-precision and 14 general registers): accumulators
#: per tile and at most this many output channels per tile, by accumulator
#: type.  A float32 4x6 tile needs 10 loads per 24 MACs (24 accumulators,
#: the 6 inputs of a column run and one weight at a time fit the 32
#: registers; 4x4: 8 loads per 16 MACs, DS-CNN's 64->64 pointwise layer
#: 1.67 instead of 1.88 instructions per MAC, 6x4 and 8x3 1.83 and 1.72);
#: integer tiles stay at 8 accumulators (2 channels x 4 columns) so the
#: loop's pointers and loaded values still fit in the general registers.
TILE_BUDGET = {DType.FLOAT32: 24, I32: 8, DType.FLOAT64: 4, DType.INT64: 4}
MAX_TILE_CHANNELS = {DType.FLOAT32: 4, I32: 2, DType.FLOAT64: 2, DType.INT64: 2}
#: columns of a float32 tile at most when the column stride is above 1: a
#: 4x6 tile's 6 columns read 13 inputs per kernel row at stride 2 and the
#: accumulators spill (Cortex-M4F -O2, ResNet-8's stride-2 3x3 layer: 1.77
#: -> 1.71 instructions per MAC; DS-CNN's 10x4 stride-2 first layer 1.86
#: -> 1.67, its 4 columns' 4 taps now unrolled).  A layer with one input
#: channel per group whose rows have at most one column more takes each
#: row as one tile: the weights are most of its loads (DS-CNN's first
#: layer, 5 columns: tiles of 3 and 2 columns -> one of 5, 522,895 ->
#: 476,679 instructions)
STRIDED_COLUMNS = 4
#: columns of a channels-first depthwise float32 tile (one channel): 16
#: accumulators leave too few registers for the 18 input values of a 3x3
#: window row (MobileNet 3x3 depthwise layers, Cortex-M4F -O2: 3.9-4.4
#: -> 3.5-3.9 instructions per MAC with 6 columns; with the 3x3 window
#: unrolled, 8 columns beat 6 by 16,000 instructions on MobileNet, 1.5-3.5 %
#: of its 48x48 and 24x24 depthwise layers; 4 and 5 are worse)
DEPTHWISE_COLUMNS = 8
#: output rows of such a tile in the interior rows (stride at most
#: DEPTHWISE_ROW_STRIDE): the rows share the input rows they both read
DEPTHWISE_ROWS = 2
DEPTHWISE_ROW_STRIDE = 1
#: bytes of the local array a staged pointwise convolution keeps one column
#: tile's outputs of all channels in (on the stack)
STAGE_BYTES = 1536
#: border positions are computed with constant tap ranges (one copy of the
#: tile per run of equal ranges) when there are at most this many runs;
#: otherwise by one loop that computes the range per position
MAX_BORDER_RUNS = 4
#: constant reduction axes (kw, then kh, ...) are unrolled while the
#: unrolled body has at most this many multiply-accumulates: a 4x6 float32
#: tile's whole 3x3 window (216), so its input rows and weights are loaded
#: in one straight-line body (Cortex-M4F -O2: ResNet-8 1.56 -> 1.46
#: instructions per MAC, MobileNet's 3->8 stride-2 first layer 2.12 ->
#: 1.85; 96: 1.56, 144: 1.49; 288 and 480 no better or worse) ...
UNROLL_MAX_MACS = 216
#: ... and the input-channel axis only while the body has at most this
#: many: unrolled whole, the 8 channels of MobileNet's 8->16 pointwise layer
#: (192 MACs) make gcc hoist loads and spill (3.06 -> 3.21 per MAC)
UNROLL_MAX_CHANNEL_MACS = 72
#: ... and each unrolled axis at most this many taps
UNROLL_MAX_TRIP = 8


def accumulator_dtype(out: DType, operand: DType) -> DType:
    """The scalar type a product sum producing ``out`` from ``operand``
    elements accumulates in."""
    if out.is_float:
        if out is DType.FLOAT64 or operand is DType.FLOAT64 or not operand.is_float:
            return DType.FLOAT64
        return FLOAT32_ACCUMULATOR
    return DType.INT64 if out.bits > 32 else I32


# ============================================================ index helpers

def idx(v: K.Operand) -> K.Expr:
    return K.as_expr(v, I32)


def iadd(a: K.Operand, b: K.Operand) -> K.Expr:
    return K.add(idx(a), idx(b), no_wrap=True)


def isub(a: K.Operand, b: K.Operand) -> K.Expr:
    return K.sub(idx(a), idx(b), no_wrap=True)


def imul(a: K.Operand, b: K.Operand) -> K.Expr:
    return K.mul(idx(a), idx(b), no_wrap=True)


def smax(a: K.Expr, b: K.Operand) -> K.Expr:
    """``max`` of int32 index values as a select (the kernel IR's min/max
    are NaN-propagating helpers; indices need none of that)."""
    b = idx(b)
    return K.select(K.lt(a, b), b, a)


def smin(a: K.Expr, b: K.Operand) -> K.Expr:
    b = idx(b)
    return K.select(K.lt(b, a), b, a)


def floordiv_const(a: K.Expr, d: int) -> K.Expr:
    return a if d == 1 else K.floordiv(a, idx(d))


def decl_index(ctx: LowerContext, base: str, value: K.Expr) -> tuple[K.Stmt | None, K.Expr]:
    """Bind ``value`` to a fresh int32 temporary unless it is a constant
    or a variable already."""
    if isinstance(value, (K.Const, K.Var)):
        return None, value
    v = ctx.scalar(base, I32)
    return K.Decl(v, value), v


def merged_range_loop(ctx: LowerContext, ranges: Sequence[tuple[int, int]],
                      body: Callable[[K.Expr], K.Stmt], base: str) -> K.Stmt | None:
    """One loop visiting the positions of up to two disjoint ascending
    ranges ``[a, b)`` (the border positions at both ends of an axis), so
    its body is emitted once."""
    ranges = [(a, b) for a, b in ranges if b > a]
    if not ranges:
        return None
    t = ctx.index_var(base)
    if len(ranges) == 1:
        (a, b), = ranges
        return K.for_range(t, b - a, body(t), start=a)
    assert len(ranges) == 2, ranges
    (a0, b0), (a1, b1) = ranges
    p = ctx.index_var(base)
    pos = iadd(t, K.select(K.lt(t, idx(b0)), idx(0), idx(a1 - b0)))
    return K.for_range(t, (b0 - a0) + (b1 - a1), K.block(K.Decl(p, pos), body(p)), start=a0)


# =============================================================== geometry

class WindowAxis(Protocol):
    """One spatial axis as the column/row enumeration sees it: positions
    ``[0, count)``, each with a tap range ``clip(o)`` out of ``[0, taps)``
    and a first input position ``start(o)``."""

    @property
    def count(self) -> int: ...

    @property
    def taps(self) -> int: ...

    def clip(self, o: int) -> tuple[int, int]: ...

    def start(self, o: K.Expr) -> K.Expr: ...

    def runtime_lo(self, o: K.Expr, first: K.Expr) -> K.Expr: ...

    def runtime_hi(self, o: K.Expr, first: K.Expr) -> K.Expr: ...


def interior(axis: WindowAxis) -> tuple[int, int]:
    """The positions ``[a, b)`` whose every tap is valid (``a == b``:
    none).  Tap ranges only grow at the start and shrink at the end, so
    they form one run."""
    full = [o for o in range(axis.count) if axis.clip(o) == (0, axis.taps)]
    return (full[0], full[-1] + 1) if full else (0, 0)


def border(axis: WindowAxis) -> list[tuple[int, int]]:
    a, b = interior(axis)
    if a == b:
        return [(0, axis.count)]
    return [(0, a), (b, axis.count)]


def bounds(ctx: LowerContext, axis: WindowAxis, o: K.Expr, positions: Sequence[int],
           base: str) -> tuple[list[K.Stmt], K.Expr, K.Expr | int, K.Expr | int]:
    """``(decls, first, lo, hi)`` for position ``o`` (an int32 expression
    ranging over ``positions``): the first input position and the valid
    tap range, each bound a constant when it is the same for every one of
    ``positions`` (then no code computes it)."""
    decls: list[K.Stmt] = []
    d0, first = decl_index(ctx, base, axis.start(o))
    if d0 is not None:
        decls.append(d0)
    clips = [axis.clip(x) for x in positions]
    lo: K.Expr | int = clips[0][0] if len({c[0] for c in clips}) == 1 else \
        axis.runtime_lo(o, first)
    hi: K.Expr | int = clips[0][1] if len({c[1] for c in clips}) == 1 else \
        axis.runtime_hi(o, first)
    if isinstance(lo, K.Expr):
        d, lo = decl_index(ctx, base + "lo", lo)
        decls += [d] if d is not None else []
    if isinstance(hi, K.Expr):
        d, hi = decl_index(ctx, base + "hi", hi)
        decls += [d] if d is not None else []
    return decls, first, lo, hi


@dataclass(frozen=True, slots=True)
class Axis:
    """One spatial axis of a sliding window: output ``o`` reads input
    positions ``o*stride - pad + k*dilation`` for taps ``k < kernel``."""

    size: int
    out: int
    kernel: int
    stride: int = 1
    dilation: int = 1
    pad: int = 0

    @property
    def count(self) -> int:
        return self.out

    @property
    def taps(self) -> int:
        return self.kernel

    def clip(self, o: int) -> tuple[int, int]:
        """The valid taps ``[lo, hi)`` of output ``o`` (``hi <= lo``: none)."""
        i0, d = o * self.stride - self.pad, self.dilation
        lo = -(i0 // d) if i0 < 0 else 0                 # ceil(-i0 / d)
        hi = min(self.kernel, -((i0 - self.size) // d))  # ceil((size - i0) / d)
        return lo, hi

    def start(self, o: K.Expr) -> K.Expr:
        return isub(imul(o, self.stride), self.pad)

    def runtime_lo(self, o: K.Expr, first: K.Expr) -> K.Expr:
        """``ceil(-first / dil)`` when ``first < 0``, else 0."""
        minus_first = isub(self.pad, imul(o, self.stride))
        d = self.dilation
        taps = minus_first if d == 1 else K.div(iadd(minus_first, d - 1), idx(d))
        return K.select(K.lt(first, idx(0)), taps, idx(0))

    def runtime_hi(self, o: K.Expr, first: K.Expr) -> K.Expr:
        """``min(K, ceil((size - first) / dil))``; any value <= lo when
        the window starts past the input's end."""
        room = isub(self.size, first)
        d = self.dilation
        if d > 1:
            room = K.div(iadd(room, d - 1), idx(d))
        return smin(room, self.kernel)


@dataclass(frozen=True, slots=True)
class Phase:
    """The outputs ``o = r + stride*q`` of one axis of a transposed
    convolution: output ``o`` collects input ``i`` and tap ``k`` with
    ``i*stride + k*dil = o + pad``.  For this phase the taps are
    ``k = k0 + t*kstep`` (``t < taps``) and the input is
    ``i = q + c - t*e``."""

    r: int
    stride: int
    count: int      # outputs in the phase
    size: int       # input extent
    taps: int
    k0: int
    kstep: int
    c: int
    e: int

    @staticmethod
    def of(size: int, out: int, kernel: int, stride: int, dilation: int, pad: int,
           r: int) -> Phase:
        count = len(range(r, out, stride))
        ks = [k for k in range(kernel) if (r + pad - k * dilation) % stride == 0]
        g = math.gcd(stride, dilation)
        k0 = ks[0] if ks else 0
        return Phase(r, stride, count, size, len(ks), k0, stride // g,
                     (r + pad - k0 * dilation) // stride, dilation // g)

    def clip(self, q: int) -> tuple[int, int]:
        lo = max(0, (q + self.c - self.size) // self.e + 1)
        hi = min(self.taps, (q + self.c) // self.e + 1)
        return lo, hi

    def start(self, q: K.Expr) -> K.Expr:
        return iadd(q, self.c) if self.c else q

    def runtime_lo(self, q: K.Expr, first: K.Expr) -> K.Expr:
        return smax(iadd(floordiv_const(isub(first, self.size), self.e), 1), 0)

    def runtime_hi(self, q: K.Expr, first: K.Expr) -> K.Expr:
        return smin(iadd(floordiv_const(first, self.e), 1), self.taps)


def clip_runs(axis: WindowAxis, positions: Sequence[int]) -> list[tuple[int, int, int, int]]:
    """Maximal runs ``(start, stop, lo, hi)`` of consecutive ``positions``
    with the same tap range."""
    runs: list[list[int]] = []
    for o in positions:
        lo, hi = axis.clip(o)
        if runs and runs[-1][1] == o and runs[-1][2:] == [lo, hi]:
            runs[-1][1] = o + 1
        else:
            runs.append([o, o + 1, lo, hi])
    return [(a, b, lo, hi) for a, b, lo, hi in runs]


def column_tiles(width: int, max_bw: int) -> list[tuple[int, int]]:
    """``width`` columns as tiles of at most ``max_bw``, as equal as
    possible: ``[(size, count), ...]``, larger tiles first."""
    if width <= 0:
        return []
    n = -(-width // max_bw)
    base, extra = divmod(width, n)
    return [(size, count) for size, count in ((base + 1, extra), (base, n - extra)) if count]


#: ``tile(o0, first, bw, (lo, hi), starts)``: see :func:`columns`
ColumnTile = Callable[[K.Expr, K.Expr, int, tuple, list[int]], K.Stmt]


def ragged_columns(ctx: LowerContext, axis: WindowAxis, max_bw: int,
                   tile: ColumnTile) -> list[K.Stmt]:
    """Every position of the axis in tiles of up to ``max_bw`` (border
    positions included), as ``tile(o0, first, bw, ranges, starts)`` calls
    where ``ranges`` holds each column's constant tap range ``(lo, hi)``.
    Consecutive tiles of the same size and ranges (the interior) share one
    loop."""
    groups: list[list] = []      # [size, ranges, starts]
    start = 0
    for size, count in column_tiles(axis.count, max_bw):
        for o0 in range(start, start + size * count, size):
            ranges = tuple(axis.clip(o) for o in range(o0, o0 + size))
            if groups and groups[-1][0] == size and groups[-1][1] == ranges:
                groups[-1][2].append(o0)
            else:
                groups.append([size, ranges, [o0]])
        start += size * count
    stmts: list[K.Stmt] = []
    for size, ranges, starts in groups:
        if len(starts) == 1:
            o: K.Expr = idx(starts[0])
            loop = None
        else:
            t = ctx.index_var("owt")
            o = iadd(imul(t, size), starts[0])
            loop = t
        d, ov = decl_index(ctx, "ow", o)
        d1, first = decl_index(ctx, "iw", axis.start(ov))
        body = K.block(*(x for x in (d, d1) if x is not None),
                       tile(ov, first, size, ranges, starts))
        stmts.append(body if loop is None else K.for_range(loop, len(starts), body))
    return stmts


def columns(ctx: LowerContext, axis: WindowAxis, max_bw: int, tile: ColumnTile,
            max_runs: int = MAX_BORDER_RUNS) -> list[K.Stmt]:
    """The positions of one axis as ``tile(o0, first, bw, (lo, hi), starts)``
    calls (a tile of ``bw`` positions from ``o0``, which takes the values
    ``starts``): interior positions in tiles of up to ``max_bw`` with the
    constant tap range ``[0, taps)``; border positions one at a time, with
    a constant range per run of equal ranges when there are at most
    ``max_runs`` runs, else with the range computed per position."""
    edge = [o for a, b in border(axis) for o in range(a, b)]
    runs = clip_runs(axis, edge)
    a, b = interior(axis)

    def at(o: K.Expr, bw: int, taps: tuple, starts: list[int]) -> K.Stmt:
        d, ov = decl_index(ctx, "ow", o)
        d1, first = decl_index(ctx, "iw", axis.start(ov))
        return K.block(*(s for s in (d, d1) if s is not None),
                       tile(ov, first, bw, taps, starts))

    def run_loop(start: int, stop: int, size: int, taps: tuple) -> K.Stmt:
        count = (stop - start) // size
        starts = list(range(start, stop, size))
        if count == 1:
            return at(idx(start), size, taps, starts)
        t = ctx.index_var("owt")
        return K.for_range(t, count, at(iadd(imul(t, size), start), size, taps, starts))

    def border_loop(o: K.Expr) -> K.Stmt:
        decls, first, lo, hi = bounds(ctx, axis, o, edge, "iw")
        return K.block(*decls, tile(o, first, 1, (lo, hi), edge))

    few = len(runs) <= max_runs
    stmts: list[K.Stmt] = []
    if few:
        stmts += [run_loop(r0, r1, 1, (lo, hi)) for r0, r1, lo, hi in runs if r0 < a or a == b]
    else:
        loop = merged_range_loop(ctx, border(axis), border_loop, "ow")
        if loop is not None:
            stmts.append(loop)
    start = a
    for size, count in column_tiles(b - a, max_bw):
        stmts.append(run_loop(start, start + size * count, size, (0, axis.taps)))
        start += size * count
    if few and a != b:
        stmts += [run_loop(r0, r1, 1, (lo, hi)) for r0, r1, lo, hi in runs if r0 >= b]
    return stmts


# ================================================================ operands

@dataclass(frozen=True, slots=True, eq=False)
class Operand:
    """A tensor argument seen through its layout: ``at`` takes a canonical
    index (letter -> int32 expression; letters absent from the layout,
    such as conv1d's ``H``, are ignored)."""

    value: TensorValue
    layout: str

    def at(self, index: dict[str, K.Expr]) -> K.Expr:
        return self.value.read(tuple(idx(index[c]) for c in self.layout))

    @property
    def buffer(self) -> K.Buffer | None:
        return self.value.buffer

    def stride(self, letter: str) -> int:
        if letter not in self.layout:
            return 0
        return K.row_major_strides(self.value.shape)[self.layout.index(letter)]


@dataclass(frozen=True, slots=True)
class Lin:
    """One index component inside a tile: ``base + scale*r + ti*i + tj*j``
    where ``r`` is the value of the reduction axis ``axis`` (None: the
    component depends on no reduction axis that varies inside the
    innermost loop; outer loop variables are part of ``base``), ``i`` the
    tile's channel and ``j`` its column."""

    base: K.Expr
    axis: str | None = None
    scale: int = 0
    ti: int = 0
    tj: int = 0
    #: for reads through ``read`` (not a buffer's flat index): the value of
    #: ``base + tj*j`` per column ``j``, when it is not affine in ``j``
    jbase: tuple[K.Expr, ...] | None = None


class Access:
    """Reads of one operand inside a tile's innermost loop body.  For a
    buffer the part of the flat index that does not vary inside the
    innermost loop is declared once (``decls``, placed outside that loop);
    otherwise the index is passed to ``read`` whole."""

    def __init__(self, ctx: LowerContext, op: Operand, comps: dict[str, Lin], name: str):
        self.op = op
        self.comps = comps
        self.decls: list[K.Stmt] = []
        if op.buffer is not None:
            base = K.strided_index([comps[c].base for c in op.layout],
                                   [op.stride(c) for c in op.layout])
            d, self.base = decl_index(ctx, name, base)
            if d is not None:
                self.decls.append(d)

    def read(self, values: dict[str, K.Expr], i: int, j: int) -> K.Expr:
        """The element for reduction-axis ``values`` (the innermost loop
        variable, unrolled constants), tile channel ``i``, column ``j``."""
        buf, comps = self.op.buffer, self.comps
        if buf is not None:
            const = 0
            coefs: dict[K.Expr, int] = {}
            for c in self.op.layout:
                lin, stride = comps[c], self.op.stride(c)
                const += stride * (lin.ti * i + lin.tj * j)
                value = values.get(lin.axis) if lin.axis else None
                if value is not None:
                    terms, offset = _affine(value)
                    const += stride * lin.scale * offset
                    for var, k in terms.items():
                        coefs[var] = coefs.get(var, 0) + stride * lin.scale * k
            index = self.base
            for var, coef in coefs.items():
                if coef:
                    index = iadd(index, var if coef == 1 else imul(var, coef))
            return K.load(buf, iadd(index, const) if const else index)
        full = {}
        for c in self.op.layout:
            lin = comps[c]
            e = lin.base if lin.jbase is None else lin.jbase[j]
            const = lin.ti * i + (lin.tj * j if lin.jbase is None else 0)
            value = values.get(lin.axis) if lin.axis else None
            if isinstance(value, K.Const):
                const += int(value.value) * lin.scale
            elif value is not None and lin.scale:
                e = iadd(e, value if lin.scale == 1 else imul(value, lin.scale))
            full[c] = iadd(e, const) if const else e
        return self.op.at(full)


def _affine(e: K.Expr) -> tuple[dict[K.Expr, int], int]:
    """``e`` as ``sum(k * term) + offset`` over ``+`` and products with
    constants (anything else is one term)."""
    if isinstance(e, K.Const):
        return {}, int(e.value)
    if isinstance(e, K.BinOp) and e.op is K.BinaryOperator.ADD:
        (ta, ca), (tb, cb) = _affine(e.a), _affine(e.b)
        for var, k in tb.items():
            ta[var] = ta.get(var, 0) + k
        return ta, ca + cb
    if isinstance(e, K.BinOp) and e.op is K.BinaryOperator.MUL and isinstance(e.b, K.Const):
        terms, c = _affine(e.a)
        k = int(e.b.value)
        return {var: t * k for var, t in terms.items()}, c * k
    return {e: 1}, 0


def lin_for(outer: dict[str, K.Expr], dynamic: set[str]) -> Callable[..., Lin]:
    """``lin(letter, base, scale, ti=0, tj=0)``: the component
    ``base + scale*r_letter`` where ``r_letter`` is an outer loop variable
    (folded into the base), a value varying inside the innermost loop
    (``dynamic``) or absent (conv1d's ``H``: 0)."""
    def lin(letter: str, base: K.Operand, scale: int, ti: int = 0, tj: int = 0) -> Lin:
        if letter in dynamic and scale:
            return Lin(idx(base), letter, scale, ti, tj)
        if letter in outer and scale:
            return Lin(iadd(base, imul(outer[letter], scale)), None, 0, ti, tj)
        return Lin(idx(base), None, 0, ti, tj)
    return lin


# =========================================================== the reduction

@dataclass(frozen=True, slots=True)
class RAxis:
    """A reduction axis: its letter and loop range."""

    letter: str
    lo: K.Expr | int
    hi: K.Expr | int

    @property
    def extent(self) -> int | None:
        if isinstance(self.lo, int) and isinstance(self.hi, int):
            return max(self.hi - self.lo, 0)
        return None

    @property
    def span(self) -> K.Expr:
        n = self.extent
        return idx(n) if n is not None else isub(self.hi, self.lo)


class Dedup:
    """Values loaded by one innermost body (or one unrolled run of them):
    each distinct read is declared once and reused."""

    def __init__(self, ctx: LowerContext) -> None:
        self.ctx = ctx
        self.vars: dict[K.Expr, K.Var] = {}

    def value(self, e: K.Expr, out: list[K.Stmt], base: str) -> K.Expr:
        if isinstance(e, (K.Const, K.Var)):
            return e
        v = self.vars.get(e)
        if v is None:
            v = self.ctx.scalar(base, e.dtype)
            self.vars[e] = v
            out.append(K.Decl(v, e))
        return v


Emit = Callable[[dict[str, K.Expr], Dedup], list[K.Stmt]]
Body = Callable[[dict[str, K.Expr], set[str]], tuple[list[K.Stmt], Emit]]


def _window_unroll_limit() -> int:
    """:data:`UNROLL_MAX_MACS` for the scalar tunings (a Cortex-M core: a
    whole 3x3 window of a 4x6 tile unrolled saves its loop control);
    :data:`UNROLL_MAX_CHANNEL_MACS` for ``simd`` (the vectorizer does not
    need it, and the host's gcc -O3 took half again as long on ResNet-50)."""
    return UNROLL_MAX_CHANNEL_MACS if current_tuning().simd else UNROLL_MAX_MACS


def _unroll_plan(extents: Sequence[tuple[str, int | None]],
                 macs: int) -> tuple[list[str], list[str]]:
    """``(loops, unrolled)``: the letters of the axes of extent other than
    1 that :func:`reduction_nest` loops over and unrolls (``None``: an
    extent computed at run time)."""
    live = [(c, n) for c, n in extents if n != 1]
    unrolled: list[str] = []
    size = macs
    for c, n in reversed(live):
        limit = UNROLL_MAX_CHANNEL_MACS if c == "C" else _window_unroll_limit()
        if n is not None and n <= UNROLL_MAX_TRIP and size * n <= limit:
            unrolled.insert(0, c)
            size *= n
    return [c for c, _ in live if c not in unrolled], unrolled


def sum_order(extents: Sequence[tuple[str, int | None]], macs: int) -> tuple[str, ...]:
    """The order (outer to inner) in which :func:`reduction_nest` visits
    the reduction axes -- the order of every output's sum."""
    loops, unrolled = _unroll_plan(extents, macs)
    return tuple(loops + unrolled)


def reduction_nest(ctx: LowerContext, axes: Sequence[RAxis], body: Body,
                   macs: int) -> K.Stmt | None:
    """Loops over ``axes`` (outer to inner) around the accumulation.

    Axes of extent 1 are fixed at their start.  Constant axes are unrolled,
    innermost first, while the unrolled body stays within
    :data:`UNROLL_MAX_MACS` (``macs`` per iteration); they move inside the
    remaining loops, in order.  ``body(outer, dynamic)`` gets the values
    of the outer loop variables and fixed axes and the letters that vary
    inside the innermost loop (its own and the unrolled ones); it returns
    ``(hoisted, emit)``: statements placed just outside the innermost loop
    and ``emit(values, dedup)`` building the accumulation for one value of
    the dynamic letters.  None when some axis is constant-empty."""
    live: list[RAxis] = []
    outer: dict[str, K.Expr] = {}
    for ax in axes:
        n = ax.extent
        if n == 0:
            return None
        if n == 1:
            outer[ax.letter] = idx(ax.lo)
        else:
            live.append(ax)
    _, names = _unroll_plan([(ax.letter, ax.extent) for ax in live], macs)
    unrolled = [ax for ax in live if ax.letter in names]
    loops = [ax for ax in live if ax not in unrolled]
    variables = {ax.letter: ctx.index_var(ax.letter.lower() + "r") for ax in loops}
    inner = loops[-1] if loops else None
    outer.update({ax.letter: variables[ax.letter] for ax in loops[:-1]})
    dynamic = {ax.letter for ax in unrolled} | ({inner.letter} if inner else set())
    hoisted, emit = body(outer, dynamic)
    dedup = Dedup(ctx)
    stmts: list[K.Stmt] = []
    for combo in itertools.product(*(range(int(ax.lo), int(ax.hi)) for ax in unrolled)):
        values = {ax.letter: idx(u) for ax, u in zip(unrolled, combo)}
        if inner is not None:
            values[inner.letter] = variables[inner.letter]
        stmts += emit(values, dedup)
    if inner is None:
        return K.block(*hoisted, *stmts)
    loop = K.for_range(variables[inner.letter], inner.span, K.block(*stmts), start=idx(inner.lo))
    stmt: K.Stmt = K.block(*hoisted, loop)
    for ax in reversed(loops[:-1]):
        stmt = K.for_range(variables[ax.letter], ax.span, stmt, start=idx(ax.lo))
    return stmt


# ============================================================ convolutions

@dataclass(frozen=True, slots=True)
class _Tap:
    """A spatial axis inside a tile: tap variable ``t`` in ``[lo, hi)``
    reads input ``x_base + x_coef*t + x_col*j`` (column ``j``) and kernel
    ``w_base + w_coef*t``."""

    x_base: K.Expr
    x_coef: int
    x_col: int
    w_base: int
    w_coef: int
    lo: K.Expr | int
    hi: K.Expr | int
    #: the input position per column when not ``x_base + x_col*j``
    #: (flattened pointwise tiles; reads through ``read`` only)
    x_jbase: tuple[K.Expr, ...] | None = None
    #: each column's own constant tap range (ragged tiles, whose ``lo, hi``
    #: is their union): the taps outside it are skipped
    col_taps: tuple[tuple[int, int], ...] | None = None
    #: output rows of the tile (an ``H`` tap of a two-row depthwise tile,
    #: :data:`DEPTHWISE_ROWS`) and the input offset from one row to the next
    rows: int = 1
    x_row: int = 0

    def valid(self, j: int, tap: int) -> bool:
        if self.col_taps is None:
            return True
        lo, hi = self.col_taps[j]
        return lo <= tap < hi


@dataclass(frozen=True, slots=True)
class ConvGeometry:
    """A convolution in canonical terms (``transposed``: the weight is
    ``I O H W`` and the axes are :class:`Phase` s)."""

    n: int
    c: int
    o: int
    groups: int
    data: Operand
    weight: Operand
    out_layout: str
    out_dtype: DType
    acc: DType
    transposed: bool
    #: output channels per register tile at most (0: :data:`MAX_TILE_CHANNELS`)
    max_bo: int = 0
    #: ``weight`` is a channel tile's weights staged by
    #: :mod:`.nn_conv_wstage` (its ``O`` index is the channel in the tile)
    weight_staged: bool = False
    #: the fused bias ``B[o]`` the accumulators of output channel ``o``
    #: start from (float32 only, :func:`_with_bias`), None: they start at 0
    bias: Callable[[K.Expr], K.Expr] | None = None
    #: the weight as float pairs of two output channels (a ``double`` table,
    #: :mod:`.nn_conv_wpairs`): tiles read it instead of ``weight``
    weight_pairs: Operand | None = None

    @property
    def cg(self) -> int:
        return self.c // self.groups

    @property
    def og(self) -> int:
        return self.o // self.groups

    @property
    def depthwise(self) -> bool:
        """Every group has one output channel: tiles run across groups."""
        return self.og == 1 and self.groups > 1

    @property
    def channels_last(self) -> bool:
        return _channels_last(self.out_layout)


def _channels_last(layout: str) -> bool:
    return layout.index("C") > layout.index("W")


@dataclass(frozen=True, slots=True)
class _ChanTile:
    """``bo`` output channels from ``o0`` (``og0`` within its group).  Tile
    channel ``i`` reads input channels ``cbase + i*cstep + ic``."""

    o0: K.Expr
    og0: K.Expr
    bo: int
    cbase: K.Expr
    cstep: int


def _tile_channels(cv: ConvGeometry) -> int:
    """BO: output channels per register tile, preferably dividing the
    channels of a group (no remainder tile)."""
    if cv.depthwise and not _channels_last(cv.data.layout):
        return 1        # channels-first depthwise: tile columns only
    per_group = cv.groups if cv.depthwise else cv.og
    cap = min(MAX_TILE_CHANNELS.get(cv.acc, 4), TILE_BUDGET.get(cv.acc, 4))
    if cv.max_bo:
        cap = min(cap, cv.max_bo)
    for b in range(cap, 1, -1):
        if per_group % b == 0:
            return b
    return min(per_group, cap)


def _channel_tiles(ctx: LowerContext, cv: ConvGeometry, bo: int,
                   inner: Callable[[_ChanTile], K.Stmt]) -> K.Stmt:
    """Loops over the channel tiles, ``inner`` per tile (and a remainder
    tile when ``bo`` does not divide the channels)."""
    stmts: list[K.Stmt] = []
    if cv.depthwise:
        full, rem = divmod(cv.groups, bo)
        if full:
            t = ctx.index_var("ot")
            o0 = imul(t, bo)
            stmts.append(K.for_range(t, full,
                                     inner(_ChanTile(o0, idx(0), bo, imul(o0, cv.cg), cv.cg))))
        if rem:
            o0 = idx(full * bo)
            stmts.append(inner(_ChanTile(o0, idx(0), rem, imul(o0, cv.cg), cv.cg)))
        return K.block(*stmts)
    g = ctx.index_var("g")
    full, rem = divmod(cv.og, bo)
    if full:
        t = ctx.index_var("ot")
        og0 = imul(t, bo)
        stmts.append(K.for_range(t, full, inner(
            _ChanTile(iadd(imul(g, cv.og), og0), og0, bo, imul(g, cv.cg), 0))))
    if rem:
        og0 = idx(full * bo)
        stmts.append(inner(_ChanTile(iadd(imul(g, cv.og), og0), og0, rem, imul(g, cv.cg), 0)))
    return K.for_range(g, cv.groups, K.block(*stmts))


def _conv_tile(ctx: LowerContext, cv: ConvGeometry, sink: Sink, n: K.Expr, ch: _ChanTile,
               oh: K.Expr, htap: _Tap, ow0: K.Expr, ow_step: int, wtap: _Tap,
               bw: int, cols: Sequence[tuple[K.Expr, K.Expr]] | None = None,
               stage: K.Buffer | None = None) -> K.Stmt:
    """One register tile: ``ch.bo`` channels x ``bw`` columns (outputs
    ``ow0 + j*ow_step``) of output row ``oh``, or the output positions
    ``cols[j]`` (row, column) of a flattened pointwise tile.  With a
    ``stage`` the results go to ``stage[channel * bw + j]``, not the sink."""
    # tile row i: channel ch.o0 + i (bo channels), or with htap.rows > 1
    # (one channel) output row oh + i
    bo = ch.bo if htap.rows == 1 else htap.rows
    assert htap.rows == 1 or ch.bo == 1
    chan = [i if htap.rows == 1 else 0 for i in range(bo)]
    accs = [[ctx.scalar("acc", cv.acc) for _ in range(bw)] for _ in range(bo)]
    start = [K.Const(0, cv.acc) if cv.bias is None else cv.bias(iadd(ch.o0, chan[i]))
             for i in range(bo)]
    stmts: list[K.Stmt] = [K.Decl(a, start[i]) for i, row in enumerate(accs) for a in row]
    ranges = {"C": RAxis("C", 0, cv.cg), "H": RAxis("H", htap.lo, htap.hi),
              "W": RAxis("W", wtap.lo, wtap.hi)}
    axes = [ranges[c] for c in cv.data.layout if c in ranges]
    cstep = ch.cstep if htap.rows == 1 else 0
    shared_x = cstep == 0 and htap.x_row == 0   # every tile row reads the same inputs

    def body(outer: dict[str, K.Expr], dynamic: set[str]) -> tuple[list[K.Stmt], Emit]:
        lin = lin_for(outer, dynamic)
        x_comps = {"N": Lin(n), "C": lin("C", ch.cbase, 1, ti=cstep),
                   "H": replace(lin("H", htap.x_base, htap.x_coef, ti=htap.x_row,
                                    tj=htap.x_col),
                                jbase=htap.x_jbase),
                   "W": replace(lin("W", wtap.x_base, wtap.x_coef, tj=wtap.x_col),
                                jbase=wtap.x_jbase)}
        w_comps = {"H": lin("H", htap.w_base, htap.w_coef), "W": lin("W", wtap.w_base, wtap.w_coef)}
        if cv.transposed:
            w_comps["I"] = lin("C", ch.cbase, 1, ti=ch.cstep)
            w_comps["O"] = Lin(ch.og0, ti=int(shared_x))
        else:
            w_comps["I"] = lin("C", 0, 1)
            w_comps["O"] = Lin(idx(0) if cv.weight_staged else ch.o0, ti=int(htap.rows == 1))
        xa = Access(ctx, cv.data, x_comps, "xb")
        wa = _weight_access(ctx, cv, ch, w_comps)

        def emit(values: dict[str, K.Expr], dedup: Dedup) -> list[K.Stmt]:
            out: list[K.Stmt] = []
            tap = _unrolled_tap(values, ranges["W"], wtap)
            cols = [j for j in range(bw) if wtap.valid(j, tap)]
            if not cols:
                return out
            xs = [{j: dedup.value(K.cast(cv.acc, xa.read(values, i, j)), out, "x")
                   for j in cols} for i in range(1 if shared_x else bo)]
            ws = _tile_weights(cv, wa, values, dedup, out, bo)
            for i in range(bo):
                for j in cols:
                    out.append(K.Assign(accs[i][j], mac(accs[i][j], xs[0 if shared_x else i][j],
                                                        ws[i])))
            return out
        return xa.decls + wa.decls, emit

    nest = reduction_nest(ctx, axes, body, bo * bw)
    if nest is not None:
        stmts.append(nest)
    for i in range(bo):
        for j in range(bw):
            if stage is not None:
                stmts.append(K.store(stage, iadd(imul(iadd(ch.o0, i), bw), j),
                                     K.cast(cv.out_dtype, accs[i][j])))
                continue
            if cols is None:
                index = {"N": n, "C": iadd(ch.o0, chan[i]), "H": iadd(oh, i - chan[i]),
                         "W": iadd(ow0, j * ow_step)}
            else:
                index = {"N": n, "C": iadd(ch.o0, i), "H": cols[j][0], "W": cols[j][1]}
            stmts.append(sink(tuple(idx(index[c]) for c in cv.out_layout),
                              K.cast(cv.out_dtype, accs[i][j])))
    return K.block(*stmts)


def _weight_access(ctx: LowerContext, cv: ConvGeometry, ch: _ChanTile,
                   comps: dict[str, Lin]) -> Access:
    """The tile's weight reads: ``cv.weight``, or its float pairs."""
    if cv.weight_pairs is None:
        return Access(ctx, cv.weight, comps, "wb")
    from .nn_conv_wpairs import half
    return Access(ctx, cv.weight_pairs, dict(comps, O=Lin(half(ch.o0), ti=1)), "wb")


def _tile_weights(cv: ConvGeometry, wa: Access, values: dict[str, K.Expr], dedup: Dedup,
                  out: list[K.Stmt], bo: int) -> list[K.Expr]:
    """The weights of the tile's ``bo`` rows for one reduction step."""
    if cv.weight_pairs is None:
        return [dedup.value(K.cast(cv.acc, wa.read(values, i, 0)), out, "w") for i in range(bo)]
    ws: list[K.Expr] = []
    for i in range(bo // 2):
        d = dedup.value(wa.read(values, i, 0), out, "wd")
        ws += [dedup.value(K.call(f, [d], cv.acc), out, "w") for f in ("aot_lo_f32", "aot_hi_f32")]
    return ws


def _unrolled_tap(values: dict[str, K.Expr], axis: RAxis, tap: _Tap) -> int:
    """The ``W`` tap of one unrolled body of a ragged tile (-1 otherwise):
    the unrolled constant, or the start of an axis of extent 1."""
    if tap.col_taps is None:
        return -1
    v = values.get("W")
    if v is None:
        assert axis.extent == 1, axis
        return int(axis.lo)
    assert isinstance(v, K.Const), v
    return int(v.value)


TileAt = Callable[[K.Expr, _ChanTile, K.Expr, _Tap, K.Expr, int, _Tap, int], K.Stmt]


def _nest(ctx: LowerContext, cv: ConvGeometry, spatial: Callable[[Callable], K.Stmt],
          tile: TileAt) -> K.Stmt:
    """Batch, channel tiles and ``spatial`` loops in the output's order:
    ``spatial(inner)`` calls ``inner(oh, htap, ow0, ow_step, wtap, bw)``
    per spatial tile."""
    bo = _tile_channels(cv)
    n = ctx.index_var("n")
    if cv.channels_last or (cv.acc is DType.FLOAT32 and bo > 1):
        body = spatial(lambda *a: _channel_tiles(ctx, cv, bo, lambda ch: tile(n, ch, *a)))
    else:
        body = _channel_tiles(ctx, cv, bo, lambda ch: spatial(lambda *a: tile(n, ch, *a)))
    return K.for_range(n, cv.n, body)


def _stageable(cv: ConvGeometry, h: Axis, w: Axis, max_bw: int) -> bool:
    """A pointwise convolution the staged order applies to (module note)."""
    pointwise = all(a.kernel == 1 and a.stride == 1 and a.pad == 0 and a.out == a.size
                    for a in (h, w))
    return (pointwise and not cv.channels_last and not cv.transposed and cv.groups == 1
            and cv.og * max_bw * cv.out_dtype.itemsize <= STAGE_BYTES)


def _staged_nest(ctx: LowerContext, cv: ConvGeometry, spatial: Callable[[Callable], K.Stmt],
                 sink: Sink, max_bw: int) -> K.Stmt:
    """Column tiles outermost; per column tile every channel tile into the
    local stage, then every channel of the column tile to the sink."""
    bo = _tile_channels(cv)
    n = ctx.index_var("n")
    stage = K.Buffer(ctx.fresh("stage"), cv.out_dtype, (cv.og * max_bw,), K.BufferScope.LOCAL)

    def at(oh: K.Expr, htap: _Tap, ow0: K.Expr, ow_step: int, wtap: _Tap, bw: int,
           cols: Sequence[tuple[K.Expr, K.Expr]] | None = None) -> K.Stmt:
        tiles = _channel_tiles(ctx, cv, bo, lambda ch: _conv_tile(
            ctx, cv, sink, n, ch, oh, htap, ow0, ow_step, wtap, bw, cols, stage))
        co = ctx.index_var("oc")
        copies = []
        for j in range(bw):
            if cols is None:
                index = {"N": n, "C": co, "H": oh, "W": iadd(ow0, j * ow_step)}
            else:
                index = {"N": n, "C": co, "H": cols[j][0], "W": cols[j][1]}
            copies.append(sink(tuple(idx(index[c]) for c in cv.out_layout),
                               K.load(stage, iadd(imul(co, bw), j))))
        return K.block(tiles, K.for_range(co, cv.og, K.block(*copies)))
    return K.for_range(n, cv.n, spatial(at))


def _weight_staged_nest(ctx: LowerContext, cv: ConvGeometry, h: Axis, w: Axis,
                        spatial: Callable[[Callable], K.Stmt], sink: Sink) -> K.Stmt:
    """Channel tiles outermost, each first converting its weights into the
    local stage that its tiles then read (:mod:`.nn_conv_wstage`)."""
    from .nn_conv_wstage import WeightStage
    bo = _tile_channels(cv)
    stage = WeightStage(ctx, cv, h, w, bo)
    n = ctx.index_var("n")

    def per_tile(ch: _ChanTile) -> K.Stmt:
        return K.block(stage.fill(ctx, ch.o0, ch.bo), spatial(
            lambda *a: _conv_tile(ctx, stage.geometry, sink, n, ch, *a)))
    return K.for_range(n, cv.n, _channel_tiles(ctx, cv, bo, per_tile))


def _depthwise_rows(cv: ConvGeometry) -> bool:
    """A channels-first float32 depthwise convolution: its tiles sum every
    output in (kh, kw) order however its rows are tiled (several rows per
    tile, border rows with constant tap ranges: same sums).  At stride 2
    neither gains (MobileNet: two-row tiles 3-8 % worse)."""
    return cv.depthwise and _tile_channels(cv) == 1 and cv.acc is DType.FLOAT32 \
        and not cv.transposed


def _tile_rows(cv: ConvGeometry, h: Axis) -> int:
    """Output rows per tile: :data:`DEPTHWISE_ROWS` for the convolutions
    of :func:`_depthwise_rows` with a row stride of at most
    :data:`DEPTHWISE_ROW_STRIDE`, else 1."""
    if _depthwise_rows(cv) and h.stride <= DEPTHWISE_ROW_STRIDE:
        return DEPTHWISE_ROWS
    return 1


def _max_columns(cv: ConvGeometry) -> int:
    if cv.depthwise and _tile_channels(cv) == 1 and cv.acc is DType.FLOAT32:
        return DEPTHWISE_COLUMNS
    return max(1, TILE_BUDGET.get(cv.acc, 4) // _tile_channels(cv))


RowBody = Callable[..., list[K.Stmt]]


def rows(ctx: LowerContext, axis: WindowAxis, body: RowBody, split: bool = True,
         step: int = 1, fixed_border: bool = False) -> list[K.Stmt]:
    """The positions of an (outer) axis: ``body(o, first, (lo, hi))`` in
    one loop over the interior positions with the constant tap range
    ``[0, taps)``, and one loop over the border positions of both ends
    with their tap range computed per position (constant when equal).
    Without ``split``, one loop computes the range for every position.
    With a ``step`` above 1 the interior loop takes ``step`` positions at
    a time, ``body(o, first, (0, taps), step)`` (the rest one at a time).
    With ``fixed_border``, at most :data:`MAX_BORDER_RUNS` border positions
    are each emitted with their constant tap range (unrolled like the
    interior's)."""
    stmts: list[K.Stmt] = []
    if not split:
        o = ctx.index_var("oh")
        decls, first, lo, hi = bounds(ctx, axis, o, range(axis.count), "ih")
        return [K.for_range(o, axis.count, K.block(*decls, *body(o, first, (lo, hi))))]
    edge = [o for a, b in border(axis) for o in range(a, b)]

    def border_row(o: K.Expr) -> K.Stmt:
        decls, first, lo, hi = bounds(ctx, axis, o, edge, "ih")
        return K.block(*decls, *body(o, first, (lo, hi)))
    if fixed_border and len(edge) <= MAX_BORDER_RUNS:
        for o in edge:
            d, first = decl_index(ctx, "ih", idx(o * axis.stride - axis.pad))
            stmts.append(K.block(*([d] if d else []), *body(idx(o), first, axis.clip(o))))
    else:
        loop = merged_range_loop(ctx, border(axis), border_row, "oh")
        if loop is not None:
            stmts.append(loop)
    a, b = interior(axis)
    if step > 1 and (b - a) // step:
        t = ctx.index_var("oht")
        d0, o = decl_index(ctx, "oh", iadd(imul(t, step), a))
        d, first = decl_index(ctx, "ih", axis.start(o))
        stmts.append(K.for_range(t, (b - a) // step, K.block(
            *(x for x in (d0, d) if x is not None), *body(o, first, (0, axis.taps), step))))
        a += (b - a) // step * step
    if b > a:
        o = ctx.index_var("oh")
        d, first = decl_index(ctx, "ih", axis.start(o))
        stmts.append(K.for_range(o, b - a, K.block(*([d] if d else []),
                                                   *body(o, first, (0, axis.taps))), start=a))
    return stmts


def _flattenable(cv: ConvGeometry, h: Axis, w: Axis, max_bw: int) -> bool:
    """A pointwise convolution (1x1 kernel, stride 1, no padding) whose
    ``H`` and ``W`` are adjacent in the data and the output, and whose rows
    do not split into full column tiles: the image is taken as one row of
    ``H*W`` columns, so column tiles run across row ends (a 25x5 map gets
    4-column tiles instead of 3 + 2)."""
    pointwise = all(a.kernel == 1 and a.stride == 1 and a.pad == 0 and a.out == a.size
                    for a in (h, w))
    return (pointwise and h.size > 1 and w.out % max_bw != 0 and "HW" in cv.data.layout
            and "HW" in cv.out_layout)


def _flat_spatial(ctx: LowerContext, h: Axis, w: Axis, max_bw: int,
                  inner: Callable[..., K.Stmt]) -> K.Stmt:
    """Column tiles over the flattened ``H*W`` positions of a pointwise
    convolution.  A buffer read uses the flat position (``W`` stride times
    ``p``, as ``H``'s stride is ``W`` times it); reads through ``read`` and
    the sink get each column's row and column, ``p / W`` and ``p % W``."""
    stmts: list[K.Stmt] = []
    start = 0
    for size, count in column_tiles(h.out * w.out, max_bw):
        t = ctx.index_var("pt")
        d0, p0 = decl_index(ctx, "p", iadd(imul(t, size), start))
        decls: list[K.Stmt] = [d0] if d0 is not None else []
        # not bound to temporaries: the sink needs them after the reduction
        # only, and binding them here would keep them live through it
        cols = [(K.div(iadd(p0, j), idx(w.out)), K.mod(iadd(p0, j), idx(w.out)))
                for j in range(size)]
        htap = _Tap(idx(0), 1, 0, 0, 1, 0, 1, tuple(c[0] for c in cols))
        wtap = _Tap(p0, 1, 1, 0, 1, 0, 1, tuple(c[1] for c in cols))
        tile = inner(None, htap, None, 1, wtap, size, cols)
        stmts.append(K.for_range(t, count, K.block(*decls, tile)))
        start += size * count
    return K.block(*stmts)


def _ragged(cv: ConvGeometry, w: Axis, max_bw: int) -> bool:
    """Border columns join the interior's tiles (each column skipping its
    invalid taps) when the ``W`` taps are unrolled in every tile: ``W``
    innermost in the data (channels first) and the tile's unrolled body
    within :func:`reduction_nest`'s limits.  Only for float32
    accumulators (the scalar tuning's Cortex-M4F tiles)."""
    if cv.acc is not DType.FLOAT32 or cv.transposed:
        return False
    order = [c for c in cv.data.layout if c in "CHW"]
    if order[-1] != "W" or w.kernel > UNROLL_MAX_TRIP:
        return False
    if all(w.clip(o) == (0, w.kernel) for o in range(w.out)):
        return False
    return _tile_channels(cv) * max_bw * w.kernel <= _window_unroll_limit()


def _same_order(cv: ConvGeometry, w: Axis, max_bw: int, htaps: tuple) -> bool:
    """Whether ragged tiles sum every output of a row in the order the
    separate border-column tiles do (:func:`columns`).  The order is the
    reduction loops in data-layout order with the unrolled axes moved
    inside (:func:`sum_order`), and what gets unrolled depends on the
    tile's size: a one-column border tile of a 3-channel input unrolls the
    channels inside a row loop of computed range, ``(kh, c, kw)``, where
    a wider tile keeps ``(c, kh, kw)``.  Sums stay bit-identical: such rows
    keep the separate border tiles."""
    lo, hi = htaps
    hext = max(hi - lo, 0) if isinstance(lo, int) and isinstance(hi, int) else None
    letters = [c for c in cv.data.layout if c in "CHW"]
    bos = {_tile_channels(cv)}
    per = cv.groups if cv.depthwise else cv.og
    if per % _tile_channels(cv):
        bos.add(per % _tile_channels(cv))

    def order(macs: int, wext: int | None) -> tuple[str, ...] | None:
        ext = {"C": cv.cg, "H": hext, "W": wext}
        return sum_order([(c, ext[c]) for c in letters], macs)

    a, b = interior(w)
    edge = [o for r in border(w) for o in range(r[0], r[1])]
    few = len(clip_runs(w, edge)) <= MAX_BORDER_RUNS
    old: dict[int, tuple[int, int | None]] = {}     # column -> (tile size, W extent)
    for o in edge:
        lo_w, hi_w = w.clip(o)
        old[o] = (1, max(hi_w - lo_w, 0) if few else None)
    start = a
    for size, count in column_tiles(b - a, max_bw):
        for o in range(start, start + size * count):
            old[o] = (size, w.kernel)
        start += size * count
    start = 0
    for size, count in column_tiles(w.out, max_bw):
        for o0 in range(start, start + size * count, size):
            ranges = [w.clip(o) for o in range(o0, o0 + size)]
            valid = [r for r in ranges if r[1] > r[0]]
            wext = (max(r[1] for r in valid) - min(r[0] for r in valid)) if valid else 0
            for o, (lo_w, hi_w) in zip(range(o0, o0 + size), ranges):
                if hi_w <= lo_w or hext == 0:
                    continue
                osize, oext = old[o]
                for bo in bos:
                    if order(bo * osize, oext) != order(bo * size, wext):
                        return False
        start += size * count
    return True


def _with_bias(ctx: LowerContext, cv: ConvGeometry, h: Axis, w: Axis,
               sink: Sink) -> tuple[ConvGeometry, Sink]:
    """A float32 convolution whose fused epilogue starts by adding a
    constant per-channel bias starts its accumulators from it instead
    (:func:`~.epilogue_bias.fold_float_bias`): one addition and one load
    less per output, a different rounding of the sum (within the float
    contract: sums agree with the interpreter's to rounding)."""
    if cv.acc is not DType.FLOAT32 or cv.out_dtype is not DType.FLOAT32 or cv.transposed:
        return cv, sink
    dims = {"N": cv.n, "C": cv.o, "H": h.out, "W": w.out}
    shape = tuple(dims[c] for c in cv.out_layout)
    found = fold_float_bias(sink, ctx.scalar("probe", DType.FLOAT32),
                            [ctx.index_var("probe") for _ in shape], shape,
                            cv.out_layout.index("C"))
    if found is None:
        return cv, sink
    return replace(cv, bias=found[0]), found[1]


def _with_pairs(ctx: LowerContext, cv: ConvGeometry, w: Axis, max_bw: int,
                weight: np.ndarray | None) -> ConvGeometry:
    """``cv`` with its weight as float pairs where :mod:`.nn_conv_wpairs`
    applies (``weight``: the constant weight; None for a staged one)."""
    from . import nn_conv_wpairs
    widest = max((size for size, _ in column_tiles(w.out, max_bw)), default=0)
    if weight is None or not nn_conv_wpairs.applicable(
            cv.transposed, cv.groups, cv.o, cv.acc, cv.out_dtype, weight, _tile_channels(cv),
            widest):
        return cv
    table, layout = nn_conv_wpairs.pair_table(ctx, weight, cv.weight.layout)
    return replace(cv, weight_pairs=Operand(table, layout))


def _forward_columns(cv: ConvGeometry, w: Axis) -> int:
    """Columns of a forward convolution's tiles at most (see
    :data:`STRIDED_COLUMNS`)."""
    max_bw = _max_columns(cv)
    if w.stride > 1 and cv.acc is DType.FLOAT32 and _tile_channels(cv) > 1 \
            and not (cv.cg == 1 and w.out <= STRIDED_COLUMNS + 1):
        max_bw = min(max_bw, STRIDED_COLUMNS)
    return max_bw


def _forward_nest(ctx: LowerContext, cv: ConvGeometry, h: Axis, w: Axis, sink: Sink,
                  weight: np.ndarray | None = None) -> K.Stmt:
    cv, sink = _with_bias(ctx, cv, h, w, sink)
    from . import nn_conv_pointwise
    if nn_conv_pointwise.applicable(cv, h, w, weight):
        assert weight is not None
        return nn_conv_pointwise.pointwise_pairs(ctx, cv, h, w, sink, weight)
    from .nn_conv_wstage import stage_channels
    stage_bo = stage_channels(cv, h, w, _tile_channels(cv))
    if stage_bo:
        cv = replace(cv, max_bo=stage_bo)
    max_bw = _forward_columns(cv, w)
    cv = _with_pairs(ctx, cv, w, max_bw, None if stage_bo else weight)

    def spatial(inner: Callable[..., K.Stmt]) -> K.Stmt:
        """Rows, then each row's column tiles."""
        def row(oh: K.Expr, ih0: K.Expr, htaps: tuple, nrows: int = 1) -> list[K.Stmt]:
            htap = _Tap(ih0, h.dilation, 0, 0, 1, *htaps, rows=nrows,
                        x_row=h.stride if nrows > 1 else 0)
            ragged_ok = _ragged(cv, w, max_bw)

            def col(ow0: K.Expr, iw0: K.Expr, bw: int, taps: tuple, starts: list[int]):
                return inner(oh, htap, ow0, 1, _Tap(iw0, w.dilation, w.stride, 0, 1, *taps), bw)

            def ragged(ow0: K.Expr, iw0: K.Expr, bw: int, taps: tuple, starts: list[int]):
                lo = min(a for a, b in taps if b > a) if any(b > a for a, b in taps) else 0
                hi = max((b for a, b in taps if b > a), default=0)
                return inner(oh, htap, ow0, 1,
                             _Tap(iw0, w.dilation, w.stride, 0, 1, lo, hi, col_taps=taps), bw)
            if ragged_ok and _same_order(cv, w, max_bw, htaps):
                return ragged_columns(ctx, w, max_bw, ragged)
            return columns(ctx, w, max_bw, col)
        step = _tile_rows(cv, h)
        return K.block(*rows(ctx, h, row, step=step, fixed_border=step > 1))

    if _flattenable(cv, h, w, max_bw):
        def flat(inner: Callable[..., K.Stmt]) -> K.Stmt:
            return _flat_spatial(ctx, h, w, max_bw, inner)
        spatial = flat
    if stage_bo:
        return _weight_staged_nest(ctx, cv, h, w, spatial, sink)
    if _stageable(cv, h, w, max_bw):
        return _staged_nest(ctx, cv, spatial, sink, max_bw)
    return _nest(ctx, cv, spatial, lambda n, ch, *a: _conv_tile(ctx, cv, sink, n, ch, *a))


def _transposed_nest(ctx: LowerContext, cv: ConvGeometry, h: Axis, w: Axis, sink: Sink) -> K.Stmt:
    """Per output phase ``(rh, rw)`` a forward-like nest over the phase's
    rows and columns (see the design note).  With ``stride^2`` phases the
    code is kept small: tap ranges per row and per border column are
    computed at run time, only interior columns get constant ranges."""
    max_bw = _max_columns(cv)
    hphases = [Phase.of(h.size, h.out, h.kernel, h.stride, h.dilation, h.pad, r)
               for r in range(min(h.stride, h.out))]
    wphases = [Phase.of(w.size, w.out, w.kernel, w.stride, w.dilation, w.pad, r)
               for r in range(min(w.stride, w.out))]

    def spatial(inner: Callable[..., K.Stmt]) -> K.Stmt:
        stmts: list[K.Stmt] = []
        for ph in hphases:
            def row(q: K.Expr, iy0: K.Expr, htaps: tuple, ph: Phase = ph) -> list[K.Stmt]:
                htap = _Tap(iy0, -ph.e, 0, ph.k0, ph.kstep, *htaps)
                oh = iadd(imul(q, h.stride), ph.r)
                cols: list[K.Stmt] = []
                for pw in wphases:
                    def col(qw: K.Expr, ix0: K.Expr, bw: int, taps: tuple, starts: list[int],
                            pw: Phase = pw) -> K.Stmt:
                        wtap = _Tap(ix0, -pw.e, 1, pw.k0, pw.kstep, *taps)
                        return inner(oh, htap, iadd(imul(qw, w.stride), pw.r), w.stride, wtap,
                                     bw)
                    cols += columns(ctx, pw, max_bw, col, max_runs=0)
                return cols
            stmts += rows(ctx, ph, row, split=False)
        return K.block(*stmts)

    return _nest(ctx, cv, spatial, lambda n, ch, *a: _conv_tile(ctx, cv, sink, n, ch, *a))


# ============================================================ attributes

def _canon(shape: Sequence[int], layout: str, letters: str) -> tuple[int, ...]:
    return tuple(int(shape[layout.index(c)]) for c in letters)


def _setup(args: Sequence[ArgValue], attrs, out_type, rank: int,
           transposed: bool) -> tuple[ConvGeometry, Axis, Axis]:
    data, weight = tensor(args[0]), tensor(args[1])
    t = out_tensor(out_type)
    out_layout = attrs.out_layout or attrs.data_layout
    kernel_canon = ("IOHW" if transposed else "OIHW") if rank == 2 else "OIW"
    if rank == 1:
        n, c, wd = _canon(data.shape, attrs.data_layout, "NCW")
        (kw,) = _canon(weight.shape, attrs.kernel_layout, "W")
        (ow,) = _canon(t.shape, out_layout, "W")
        left, _ = padding_1d(attrs.padding)
        h = Axis(1, 1, 1)
        w = Axis(wd, ow, kw, attrs.strides[0], attrs.dilation[0], left)
    else:
        n, c, ht, wd = _canon(data.shape, attrs.data_layout, "NCHW")
        kh, kw = _canon(weight.shape, attrs.kernel_layout, "HW")
        oh, ow = _canon(t.shape, out_layout, "HW")
        top, left, _, _ = padding_2d(attrs.padding)
        (sh, sw), (dh, dw) = pair(attrs.strides), pair(attrs.dilation)
        h = Axis(ht, oh, kh, sh, dh, top)
        w = Axis(wd, ow, kw, sw, dw, left)
    (o,) = _canon(t.shape, out_layout, "C")
    assert sorted(attrs.kernel_layout) == sorted(kernel_canon), attrs.kernel_layout
    cv = ConvGeometry(n, c, o, attrs.groups, Operand(data, attrs.data_layout),
               Operand(weight, attrs.kernel_layout), out_layout, t.dtype,
               accumulator_dtype(t.dtype, data.dtype), transposed)
    return cv, h, w


def _forward(ctx: LowerContext, cv: ConvGeometry, h: Axis, w: Axis, weight: np.ndarray | None,
             sink: Sink) -> K.Stmt:
    """The tuning's nest (:mod:`.tuning`): the vectorisable one of
    :mod:`.nn_conv_simd` where it applies, else the scalar register tiles."""
    if current_tuning().simd:
        from . import nn_conv_simd
        if nn_conv_simd.applicable(cv, weight):
            assert weight is not None
            return nn_conv_simd.simd_conv(ctx, cv, h, w, sink, weight)
    return _forward_nest(ctx, cv, h, w, sink, weight)


@anchor_lowering("nn.conv2d")
def _conv2d(ctx: LowerContext, args: Sequence[ArgValue], attrs, out_type, sinks):
    cv, h, w = _setup(args, attrs, out_type, 2, False)
    return _forward(ctx, cv, h, w, tensor(args[1]).constant, sinks[0])


@anchor_lowering("nn.conv1d")
def _conv1d(ctx: LowerContext, args: Sequence[ArgValue], attrs, out_type, sinks):
    cv, h, w = _setup(args, attrs, out_type, 1, False)
    return _forward(ctx, cv, h, w, tensor(args[1]).constant, sinks[0])


@anchor_lowering("nn.conv2d_transpose")
def _conv2d_transpose(ctx: LowerContext, args: Sequence[ArgValue], attrs, out_type, sinks):
    cv, h, w = _setup(args, attrs, out_type, 2, True)
    return _transposed_nest(ctx, cv, h, w, sinks[0])


@anchor_lowering("nn.conv1d_transpose")
def _conv1d_transpose(ctx: LowerContext, args: Sequence[ArgValue], attrs, out_type, sinks):
    cv, h, w = _setup(args, attrs, out_type, 1, True)
    return _transposed_nest(ctx, cv, h, w, sinks[0])
