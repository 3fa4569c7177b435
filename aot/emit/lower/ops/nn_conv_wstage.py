"""Staged weights of a forward convolution whose weight is computed as it
is read (:mod:`.nn_conv`).

Design note
-----------
A weight with a fused prologue -- above all a weight-only quantized one,
``DequantizeLinear`` of a packed int4 table that FoldConstant keeps narrow
-- is read through its ``read``: unpack the nibble, subtract the zero
point, multiply by the scale, at every load of the register tile's inner
body, i.e. once per ``BW`` multiply-accumulates (Cortex-M4F -O2, a 32->32
3x3 layer: 3.71 instructions per MAC against 1.41 with the same weights
folded into a float32 table).

Staged instead: the channel tiles become the outermost loops (inside the
batch), and each channel tile first converts its ``BO`` output channels'
weights (``BO * C/G * KH * KW`` values, canonical ``O I H W`` order) into
a local array of the accumulator type, once; the tile's reduction then
reads that array as it reads a constant float table (flat index, hoisted
base).  Every product is the same expression on the same values as
unstaged (the conversion is the prologue's, cast to the accumulator type
as the tile casts it), so the results are bit-identical.  The weights stay
packed in flash; the array is on the stack and bounded by
:data:`WEIGHT_STAGE_BYTES`: ``BO`` is lowered until a tile's weights fit,
but not below two channels (the array then up to twice the budget), and a
layer whose single output channel does not fit is not staged.  A tile of
one channel reads every input value for one channel's products only: a
32->32 3x3 layer on 16x16 (1,152 bytes per channel) took 1,190 us on the
host with the ``scalar`` tuning in one-channel tiles, 1,065 in two-channel
ones (872 unstaged, whose rows-outermost order keeps the input in the
cache; the channel tiles outermost sweep it once per tile), Cortex-M4F
1.43 -> 1.42 instructions per MAC.  Capping a one-channel tile's columns
does not help: 12 columns 1,170 us and 1.58 per MAC; four-channel tiles
(4,608 bytes) 996 us but 1.53 per MAC.
"""

from __future__ import annotations

from dataclasses import replace

from ...kernel import ir as K
from ..registry import LowerContext, from_buffer
from .nn_conv import Axis, ConvGeometry, Operand, iadd, idx

__all__ = ["WEIGHT_STAGE_BYTES", "stage_channels", "stage_fill", "WeightStage"]

#: bytes of the local array holding one channel tile's converted weights
#: (on the stack, as nn_conv's STAGE_BYTES)
WEIGHT_STAGE_BYTES = 2048


def _reindexed(cv: ConvGeometry) -> bool:
    """Whether the weight is a stored tensor read in another order only (a
    transpose or reshape as its prologue, e.g. the activation gradient a
    weight-gradient convolution reads): its read is one load, so staging
    would copy values without converting any, and the channel tiles
    outermost sweep the input once per tile (DS-CNN's training step, the
    64x64 weight gradient: 1,349,064 Cortex-M4F instructions in place,
    2,511,823 staged)."""
    value = cv.weight.value
    probe = value.read(tuple(K.Const(0, K.DType.INT32) for _ in value.shape))
    return isinstance(probe, K.Load) and probe.dtype == cv.acc


def stage_channels(cv: ConvGeometry, h: Axis, w: Axis, bo: int) -> int:
    """Output channels per staged tile (at most ``bo``), 0 when the
    convolution's weights are not staged: a transposed convolution, a
    weight read from a buffer, or one output channel's weights larger than
    :data:`WEIGHT_STAGE_BYTES`.  Two channels are staged when one fits
    (the array then up to twice the budget; see the module note)."""
    if cv.transposed or cv.weight.buffer is not None or _reindexed(cv):
        return 0
    per_channel = cv.cg * h.kernel * w.kernel * cv.acc.itemsize
    if per_channel > WEIGHT_STAGE_BYTES:
        return 0
    return min(bo, max(2, WEIGHT_STAGE_BYTES // per_channel))


def stage_fill(buffer: K.Buffer, loops: list[tuple[K.Var, int]], at: K.Expr,
               value: K.Expr) -> K.Stmt:
    """``buffer[at] = (buffer's dtype) value`` in ``loops`` (outermost
    first): the conversion of a stage, shared with the products'
    (:mod:`.nn_product_wstage`)."""
    body: K.Stmt = K.store(buffer, at, K.cast(buffer.dtype, value))
    for v, n in reversed(loops):
        body = K.for_range(v, n, body)
    return body


class WeightStage:
    """The local array of one channel tile's weights and the geometry whose
    weight operand reads it."""

    def __init__(self, ctx: LowerContext, cv: ConvGeometry, h: Axis, w: Axis, bo: int):
        self.cv = cv
        self.layout = "OIHW" if "H" in cv.weight.layout else "OIW"
        self.kernel = {"H": h.kernel, "W": w.kernel}
        shape = (bo, cv.cg) + tuple(self.kernel[c] for c in self.layout[2:])
        self.buffer = K.Buffer(ctx.fresh("wst"), cv.acc, shape, K.BufferScope.LOCAL)
        self.geometry = replace(cv, weight=Operand(from_buffer(self.buffer), self.layout),
                                weight_staged=True)

    def fill(self, ctx: LowerContext, o0: K.Expr, bo: int) -> K.Stmt:
        """Converts output channels ``[o0, o0 + bo)`` into the array."""
        i, ic = ctx.index_var("si"), ctx.index_var("sc")
        taps = {c: ctx.index_var("s" + c.lower()) for c in self.layout[2:]}
        src: dict[str, K.Expr] = {"O": iadd(o0, i), "I": ic, "H": idx(0), **taps}
        dst = (i, ic) + tuple(taps[c] for c in self.layout[2:])
        loops = [(i, bo), (ic, self.cv.cg)] + [(taps[c], self.kernel[c]) for c in self.layout[2:]]
        return stage_fill(self.buffer, loops, K.flat_index(dst, self.buffer.shape),
                          self.cv.weight.at(src))
