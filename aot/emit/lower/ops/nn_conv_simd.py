"""The ``simd`` tuning of ``nn.conv2d`` / ``nn.conv1d``
(:mod:`aot.emit.lower.ops.tuning`): loop nests a C compiler vectorises.

Design note
-----------
Applies to forward float32 convolutions (float32 or float16 data, float32
accumulator) whose weight is a compile-time constant with finite
elements; everything else takes the scalar nest of :mod:`nn_conv`.

**Input planes.**  For each batch element the input is first copied into
a scratch buffer of *planes*: zero-padded, split by stride phase
(space-to-depth), in canonical channel order whatever the data layout.
Tap ``(kh, kw)`` of output ``(oh, ow)`` reads padded input
``(oh*sh + kh*dh, ow*sw + kw*dw)``; with ``kh*dh = qh0*sh + rh`` that is
row ``oh + qh0`` of the phase-``rh`` rows, likewise for columns, so in
plane ``(rh, rw)`` of ``Hq x Wq`` elements (``Hq = OH + max qh0``,
``Wq = OW + max qw0``) the tap is a constant offset
``qh0*Wq + qw0`` from position ``p = oh*Wq + ow``.  Only the planes some
tap reads are stored.  The copy applies the fused prologue once per
element (not once per tap); the padding around it is zeroed run by run
(not the whole buffer first: that doubled the stores).  A buffer
input in ``NCHW`` that needs no padding and no phase split is read in
place; it has no slack after its last position, so its last tile ends
there, overlapping the one before when the positions are not a multiple
of ``BW`` (the overlap is computed and stored twice, with equal values:
a narrower tile would leave gcc a scalar remainder, DS-CNN's pointwise
layers twice as slow).  Depthwise convolutions on narrow maps take the
form of :mod:`.nn_conv_depthwise_map` instead (no planes at all).

Zero padding *multiplies* padded taps by the weight where the reference
skips them: identical for finite weights (``0 * w`` is a zero, which does
not change a sum, up to the sign of an all-zero sum), different for
``inf``/NaN weights -- hence the finite-weight condition.

**Flattened positions.**  Positions ``p`` run over
``[0, (OH-1)*Wq + OW)`` as one axis, across row ends: positions with
``p % Wq >= OW`` are computed (their reads stay inside the planes) but
never reach the sink.  Every register tile thus has the same width
``BW`` (:data:`TILE_COLUMNS`) except one tail tile, whatever the image's
width (a 5-column map would otherwise give 5-wide tiles).  The waste is
``(Wq - OW) / Wq`` of the work: none for pointwise convolutions.

**The tile.**  ``BO`` output channels by ``BW`` positions accumulate in
a local array ``acc[BO][BW]``::

    acc = 0
    for ic < C/groups:
      for every tap t (unrolled; constant plane offset):
        for i < BO: wv = W[tile][ic][t][i]
                    for j < BW: acc[i][j] += X[plane(ic, i, t) + p0 + j] * wv
    for i, j: if (p0 + j) % Wq < OW: sink(acc[i][j])

The ``j`` loop is contiguous in the planes and in ``acc``: gcc vectorises
it and keeps ``acc`` in vector registers across the reduction.  The
weights are packed at compile time as ``[O/BO][C/groups][KH][KW][BO]`` so
a tile's weights are one contiguous run.  Depthwise convolutions (one
output channel per group) tile ``BO`` groups, each reading its own input
channel.  Each output's summation order is ``ic``, then taps in
``(kh, kw)`` order, in float32.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from ....ir.dtype import DType
from ...kernel import ir as K
from ..registry import LowerContext, Sink
from . import nn_conv_depthwise_map
from .common import mac
from .index_math import idiv, imod
from .nn_conv import Axis, ConvGeometry, iadd, idx, imul

__all__ = ["simd_conv", "TILE_COLUMNS", "MAX_TILE_CHANNELS"]

F32 = DType.FLOAT32
#: positions per register tile (4 AVX vectors of float32)
TILE_COLUMNS = 32
#: output channels per register tile of a depthwise convolution (at most; a
#: divisor of the groups)
MAX_TILE_CHANNELS = 4
#: the same for the other convolutions (not depthwise): 8 channels by 32
#: positions is 16 AVX-512 accumulators, enough independent chains to
#: cover the FMA latency, and two position vectors are loaded per 16
#: multiply-accumulates instead of per 8 (gcc 12 -O3 -march=native:
#: DS-CNN's 64->64 pointwise layer 9.1 -> 7.9 us; ResNet-8's 3x3 layers,
#: whole model 218 -> 199 us)
MAX_POINTWISE_TILE_CHANNELS = 8
#: the channel form (:func:`_channel_vector_conv`): output channels per
#: tile (a multiple of them per group), positions per tile, and the share
#: of wasted positions of the position form above which it is used (8
#: positions by 32 channels: 16 AVX-512 accumulators, as in the position
#: form; 4 positions gave 8, too few to cover the FMA latency: MobileNetV1
#: 0.25 226 -> 209 us, ResNet-8 199 -> 191)
CHANNEL_VECTOR = 16
CHANNEL_TILE_POSITIONS = 8
#: tile widths the channel form takes instead of ``CHANNEL_TILE_POSITIONS``
#: when one of them divides the outputs and it does not: no remainder tile
#: (a second copy of the tile's code; gcc -O3 0.06 CPU-s per layer) --
#: MobileNetV1's 6x6 maps in tiles of 6 run as fast, its 3x3 maps in one
#: tile of 9 (18 AVX-512 accumulators) 7.0 -> 5.7 us per layer
CHANNEL_TILE_ALTERNATIVES = (9, 7, 6)
CHANNEL_FORM_WASTE = 1.15
#: taps the channel form unrolls at most; a larger kernel (DS-CNN's 10x4
#: stem) loops over groups of ``stride`` kernel rows, each group unrolled:
#: a quarter of the C, gcc -O3 spends 0.24 CPU-s on it instead of 2.25, and
#: the layer takes 8.4 us instead of 7.5 (the loop's register moves; the
#: whole model within the noise of bench/onnx_models.py)
MAX_UNROLLED_TAPS = 9


@dataclass(frozen=True, slots=True)
class _Geometry:
    """Planes of ``hq x wq`` elements per input channel, one per stride
    phase in ``phases``; tap ``t`` reads plane ``tap_plane[t]`` at offset
    ``tap_offset[t]`` from the position."""

    hq: int
    wq: int
    phases: tuple[tuple[int, int], ...]
    tap_plane: tuple[int, ...]
    tap_offset: tuple[int, ...]
    in_place: bool

    @property
    def plane_size(self) -> int:
        return self.hq * self.wq


def _geometry(cv: ConvGeometry, h: Axis, w: Axis) -> _Geometry:
    taps = []
    for kh in range(h.kernel):
        for kw in range(w.kernel):
            qh0, rh = divmod(kh * h.dilation, h.stride)
            qw0, rw = divmod(kw * w.dilation, w.stride)
            taps.append(((rh, rw), qh0, qw0))
    hq = h.out + max(t[1] for t in taps)
    wq = w.out + max(t[2] for t in taps)
    phases = tuple(sorted({t[0] for t in taps}))
    plane = {ph: k for k, ph in enumerate(phases)}
    in_place = (cv.data.buffer is not None and cv.data.layout in ("NCHW", "NCW")
                and phases == ((0, 0),) and h.pad == 0 and w.pad == 0
                and hq == h.size and wq == w.size)
    return _Geometry(hq, wq, phases, tuple(plane[t[0]] for t in taps),
                     tuple(t[1] * wq + t[2] for t in taps), in_place)


def applicable(cv: ConvGeometry, weight: np.ndarray | None) -> bool:
    return (not cv.transposed and cv.acc is F32 and weight is not None
            and cv.data.value.dtype in (F32, DType.FLOAT16)
            and bool(np.all(np.isfinite(np.asarray(weight, dtype=np.float64)))))


def _row_classes(h: Axis) -> list[tuple[int, int, int]]:
    """The kernel rows ``kh`` grouped by stride phase (``kh*dh % sh``):
    ``(first, step, count)`` per phase, ``kh = first + m*step``; each
    class reads one plane, ``step*dh/sh`` plane rows further per ``m``."""
    classes: dict[int, list[int]] = {}
    for kh in range(h.kernel):
        classes.setdefault(kh * h.dilation % h.stride, []).append(kh)
    out = []
    for rows in classes.values():
        step = rows[1] - rows[0] if len(rows) > 1 else 1
        assert rows == list(range(rows[0], rows[0] + step * len(rows), step))
        out.append((rows[0], step, len(rows)))
    return sorted(out)


def _tile_channels(per_group: int, limit: int = MAX_TILE_CHANNELS) -> int:
    for b in range(limit, 0, -1):
        if per_group % b == 0:
            return b
    return 1


def _packed_weights(cv: ConvGeometry, weight: np.ndarray, kh: int, kw: int, bo: int) -> np.ndarray:
    """The constant weight in canonical ``O I KH KW``, packed as
    ``[O/bo][I][KH][KW][bo]``."""
    canon = "OIHW" if "H" in cv.weight.layout else "OIW"
    wc = np.transpose(np.asarray(weight), [cv.weight.layout.index(c) for c in canon])
    wc = wc.reshape(cv.o, cv.cg, kh, kw).astype(np.float32)
    return np.ascontiguousarray(wc.reshape(cv.o // bo, bo, cv.cg, kh, kw)
                                .transpose(0, 2, 3, 4, 1))


_Runs = tuple[tuple[int, int, int], ...]


def _border_runs(g: _Geometry, rows: list[int], cols: list[int]) -> _Runs:
    """What the copy leaves of a plane whose valid cells are ``rows x
    cols``: the cells before the first valid one, the gap from each valid
    row's end to the next one's start, and the cells after the last (in
    the flattened plane each is one run), as ``(start, length, repeats
    every wq)``; the whole plane when nothing is valid."""
    if not rows or not cols:
        return ((0, g.plane_size, 1),)
    runs: list[tuple[int, int, int]] = []
    r0, r1, c0, c1 = rows[0], rows[-1] + 1, cols[0], cols[-1] + 1
    runs.append((0, r0 * g.wq + c0, 1))
    if r1 - r0 > 1 and g.wq - c1 + c0 > 0:
        runs.append((r0 * g.wq + c1, g.wq - c1 + c0, r1 - r0 - 1))
    runs.append(((r1 - 1) * g.wq + c1, g.plane_size - (r1 - 1) * g.wq - c1, 1))
    return tuple(r for r in runs if r[1] > 0)


def _zero_border(ctx: LowerContext, g: _Geometry, planes: K.Buffer, count: int,
                 plane: Callable[[K.Expr], K.Expr], runs: _Runs) -> K.Stmt:
    """Zero ``runs`` of planes ``plane(c)`` for ``c < count``."""
    c = ctx.index_var("c")
    base = imul(plane(c), g.plane_size)
    body: list[K.Stmt] = []
    for start, length, repeats in runs:
        z = ctx.index_var("z")
        if repeats == 1:
            body.append(K.for_range(z, length, K.store(planes, iadd(base, iadd(z, start)),
                                                       K.Const(0, F32))))
        else:
            r = ctx.index_var("r")
            at = iadd(base, iadd(imul(r, g.wq), iadd(z, start)))
            body.append(K.for_range(r, repeats, K.for_range(z, length, K.store(
                planes, at, K.Const(0, F32)))))
    return K.for_range(c, count, K.block(*body))


def _fill_planes(ctx: LowerContext, cv: ConvGeometry, h: Axis, w: Axis, g: _Geometry,
                 planes: K.Buffer, n: K.Expr) -> K.Stmt:
    """Copy the input's valid region into the planes and zero the rest
    (the padding, and the slack after the last plane).  When every phase
    leaves the same cells, one loop zeroes them in all the planes (a loop
    per phase costs gcc -O3 0.02 CPU-s each: it unrolls the short runs)."""
    stmts: list[K.Stmt] = []
    slack = planes.size - cv.c * len(g.phases) * g.plane_size
    if slack:
        z = ctx.index_var("z")
        stmts.append(K.for_range(z, slack, K.store(planes, iadd(z, planes.size - slack),
                                                   K.Const(0, F32))))
    nph = len(g.phases)
    valid = []
    for rh, rw in g.phases:
        # plane row qh holds input row qh*sh + rh - pad: the valid qh form a range
        valid.append(([q for q in range(g.hq) if 0 <= q * h.stride + rh - h.pad < h.size],
                      [q for q in range(g.wq) if 0 <= q * w.stride + rw - w.pad < w.size]))
    runs = [_border_runs(g, rows, cols) for rows, cols in valid]
    if len(set(runs)) == 1:
        stmts.append(_zero_border(ctx, g, planes, cv.c * nph, lambda p: p, runs[0]))
    rows, cols = valid[0]
    if nph > 1 and nph == h.stride * w.stride and all(v == valid[0] for v in valid) \
            and rows and cols:
        # every phase (the phases in (rh, rw) order, plane k = rh*sw + rw)
        # has the same valid cells: one copy loop for all of them
        stmts.append(_copy_rows(ctx, cv, h, w, g, planes, n, None, rows, cols))
        return K.block(*stmts)
    for k, (rows, cols) in enumerate(valid):
        if len(set(runs)) > 1:
            stmts.append(_zero_border(ctx, g, planes, cv.c,
                                      lambda c, k=k: iadd(imul(c, nph), k), runs[k]))
        if rows and cols:
            stmts.append(_copy_rows(ctx, cv, h, w, g, planes, n, k, rows, cols))
    return K.block(*stmts)


def _copy_rows(ctx: LowerContext, cv: ConvGeometry, h: Axis, w: Axis, g: _Geometry,
               planes: K.Buffer, n: K.Expr, k: int | None, rows: list[int],
               cols: list[int]) -> K.Stmt:
    """Copy the valid rows of phase ``k`` of every channel into plane ``k``:
    a loop over channels around a loop over rows (gcc -O3 unrolls a short
    row loop completely: slow to compile, but one loop over all the rows,
    a division per row finding its plane row, made ResNet-8's stride-2
    layers 5-9 % slower).  ``k`` None: every phase of the stride, a loop
    over them inside the channel loop (the phase's row and column offsets
    a division and a remainder by the column stride per plane): one copy
    of the row loop for gcc to unroll instead of one per phase
    (MobileNetV1's 3x3 stride-2 depthwise layers, gcc -O3: 0.22 -> 0.15
    CPU-s for the 32-channel one)."""
    c, qh, qw = ctx.index_var("c"), ctx.index_var("qh"), ctx.index_var("qw")
    if k is None:
        phase = ctx.index_var("ph")
        plane: K.Expr = phase
        rh: K.Expr | int = idiv(phase, w.stride)
        rw: K.Expr | int = imod(phase, w.stride)
    else:
        plane = idx(k)
        rh, rw = g.phases[k]
    ih = iadd(imul(qh, h.stride), iadd(rh, -h.pad))
    iw = iadd(imul(qw, w.stride), iadd(rw, -w.pad))
    value = K.cast(F32, cv.data.at({"N": n, "C": c, "H": ih, "W": iw}))
    dst = iadd(imul(iadd(imul(iadd(imul(c, len(g.phases)), plane), g.hq), qh), g.wq), qw)
    inner = K.for_range(qw, len(cols), K.store(planes, dst, value), start=cols[0])
    body = K.for_range(qh, len(rows), inner, start=rows[0])
    if k is None:
        body = K.for_range(phase, len(g.phases), body)
    return K.for_range(c, cv.c, body)


def simd_conv(ctx: LowerContext, cv: ConvGeometry, h: Axis, w: Axis, sink: Sink,
              weight: np.ndarray) -> K.Stmt:
    g = _geometry(cv, h, w)
    depthwise = cv.og == 1 and cv.groups > 1
    positions = (h.out - 1) * g.wq + w.out
    padded = -(-positions // TILE_COLUMNS) * TILE_COLUMNS
    if not depthwise and cv.og % CHANNEL_VECTOR == 0 and \
            padded > CHANNEL_FORM_WASTE * h.out * w.out:
        return _channel_vector_conv(ctx, cv, h, w, sink, weight, g)
    if depthwise and padded > CHANNEL_FORM_WASTE * h.out * w.out and \
            nn_conv_depthwise_map.applicable(cv, h, w):
        return nn_conv_depthwise_map.depthwise_map_conv(ctx, cv, h, w, sink, weight)
    ntaps = h.kernel * w.kernel
    bo = _tile_channels(cv.groups if depthwise else cv.og,
                        MAX_POINTWISE_TILE_CHANNELS if not depthwise
                        else MAX_TILE_CHANNELS)
    wp = ctx.constant_table(_packed_weights(cv, weight, h.kernel, w.kernel, bo).reshape(-1), F32)
    wbuf = wp.buffer
    assert wbuf is not None
    nplanes = len(g.phases)
    chan_size = nplanes * g.plane_size         # elements per input channel
    positions = (h.out - 1) * g.wq + w.out
    tiles = -(-positions // TILE_COLUMNS)
    padded = tiles * TILE_COLUMNS       # the last tile's extra positions read the slack
    # read in place, there is no slack after the last position: the last
    # tile ends there (see positions_loop)
    tail = positions % TILE_COLUMNS if g.in_place else 0
    acc = K.Buffer(ctx.fresh("acc"), F32, (bo * TILE_COLUMNS,), K.BufferScope.LOCAL)
    # positions that are not outputs (p % Wq >= OW): the tiles store
    # everything into a staging buffer and one loop hands the outputs to the
    # sink (a test per position inside the tile's store loop stops gcc from
    # keeping acc in registers: half the speed)
    stage = ctx.scratch(F32, (bo * padded,), "stage") \
        if g.wq != w.out or (padded != positions and not tail) else None
    n = ctx.index_var("n")
    if g.in_place:
        src = cv.data.buffer
        assert src is not None
        src_base: K.Expr = imul(n, cv.c * chan_size)
        fill: K.Stmt | None = None
    else:
        src = ctx.scratch(F32, (cv.c * chan_size + padded - positions,), "planes")
        src_base = idx(0)
        fill = _fill_planes(ctx, cv, h, w, g, src, n)

    def tile(wtile: K.Expr, o0: K.Expr, cbase: K.Expr, cstep: int, p0: K.Expr,
             bw: int) -> K.Stmt:
        i, j = ctx.index_var("i"), ctx.index_var("j")
        init = K.for_range(i, bo, K.for_range(j, bw, K.store(acc, iadd(imul(i, TILE_COLUMNS), j),
                                                              K.Const(0, F32))))
        ic = ctx.index_var("ic")
        xb = ctx.scalar("xb", DType.INT32)
        wb = ctx.scalar("wb", DType.INT32)
        body: list[K.Stmt] = [
            K.Decl(xb, iadd(iadd(src_base, imul(iadd(cbase, ic), chan_size)), p0)),
            K.Decl(wb, imul(iadd(imul(wtile, cv.cg), ic), ntaps * bo)),
        ]
        for kh0, kstep, count in _row_classes(h):
            m = ctx.index_var("kh")
            kh = iadd(imul(m, kstep), kh0) if count > 1 else idx(kh0)
            row: list[K.Stmt] = []
            for kw in range(w.kernel):
                t = kh0 * w.kernel + kw        # the class's first tap in this column
                ti, tj = ctx.index_var("i"), ctx.index_var("j")
                wv = ctx.scalar("wv", F32)
                # tap (kh0 + m*kstep, kw): kstep*dh/sh more plane rows per step of m
                xoff = iadd(imul(m, kstep * h.dilation // h.stride * g.wq),
                            g.tap_plane[t] * g.plane_size + g.tap_offset[t]) \
                    if count > 1 else idx(g.tap_plane[t] * g.plane_size + g.tap_offset[t])
                woff = iadd(imul(kh, w.kernel * bo), kw * bo)
                xi = iadd(xb, iadd(tj, xoff))
                if cstep:
                    xi = iadd(xi, imul(ti, cstep * chan_size))
                cell = iadd(imul(ti, TILE_COLUMNS), tj)
                step = K.store(acc, cell, mac(K.load(acc, cell), K.load(src, xi), wv))
                row.append(K.for_range(ti, bo, K.block(
                    K.Decl(wv, K.load(wbuf, iadd(wb, iadd(woff, ti)))),
                    K.for_range(tj, bw, step))))
            body.append(K.for_range(m, count, K.block(*row)) if count > 1 else K.block(*row))
        reduction = K.for_range(ic, cv.cg, K.block(*body))
        si, sj = ctx.index_var("i"), ctx.index_var("j")
        p = iadd(p0, sj)
        value = K.load(acc, iadd(imul(si, TILE_COLUMNS), sj))
        if stage is not None:
            store = K.store(stage, iadd(imul(si, padded), p), value)
        else:
            index = {"N": n, "C": iadd(o0, si), "H": K.div(p, idx(g.wq)),
                     "W": K.mod(p, idx(g.wq))}
            store = sink(tuple(idx(index[c]) for c in cv.out_layout),
                         K.cast(cv.out_dtype, value))
        out = K.for_range(si, bo, K.for_range(sj, bw, store))
        return K.block(init, reduction, out)

    def staged_sink(o0: K.Expr) -> K.Stmt:
        """The valid positions of the staged tile results to the sink: one
        loop over the tile's output rows (channel ``r / OH``, row ``r %
        OH``) around the row's columns; as two nested loops gcc -O3
        unrolled both around the vectorised row (MobileNetV1 0.25's host
        build: 0.05 CPU-s of gcc over its 8 such kernels)."""
        assert stage is not None
        r, ow = ctx.index_var("r"), ctx.index_var("ow")
        i, oh = (idiv(r, h.out), imod(r, h.out)) if h.out > 1 else (r, idx(0))
        value = K.load(stage, iadd(imul(i, padded), iadd(imul(oh, g.wq), ow)))
        index = {"N": n, "C": iadd(o0, i), "H": oh, "W": ow}
        store = sink(tuple(idx(index[c]) for c in cv.out_layout), K.cast(cv.out_dtype, value))
        return K.for_range(r, bo * h.out, K.for_range(ow, w.out, store))

    def positions_loop(wtile: K.Expr, o0: K.Expr, cbase: K.Expr, cstep: int) -> K.Stmt:
        pt = ctx.index_var("pt")
        full = tiles - 1 if tail else tiles
        stmts: list[K.Stmt] = []
        if full:
            stmts.append(K.for_range(pt, full, tile(wtile, o0, cbase, cstep,
                                                    imul(pt, TILE_COLUMNS), TILE_COLUMNS)))
        if tail and full:
            # a full-width last tile ending at the last position: it computes
            # (and stores) again the previous tile's last positions, with the
            # same values; a narrow tile would leave gcc a scalar remainder
            stmts.append(tile(wtile, o0, cbase, cstep, idx(positions - TILE_COLUMNS),
                              TILE_COLUMNS))
        elif tail:
            stmts.append(tile(wtile, o0, cbase, cstep, idx(0), tail))
        if stage is not None:
            stmts.append(staged_sink(o0))
        return K.block(*stmts)

    if depthwise:
        gt = ctx.index_var("gt")
        o0 = imul(gt, bo)
        channels = K.for_range(gt, cv.groups // bo,
                               positions_loop(gt, o0, imul(o0, cv.cg), cv.cg))
    else:
        grp, ot = ctx.index_var("g"), ctx.index_var("ot")
        wtile = iadd(imul(grp, cv.og // bo), ot)
        channels = K.for_range(grp, cv.groups, K.for_range(
            ot, cv.og // bo, positions_loop(wtile, imul(wtile, bo), imul(grp, cv.cg), 0)))
    return K.for_range(n, cv.n, K.block(*([fill] if fill is not None else []), channels))


def _channel_vector_conv(ctx: LowerContext, cv: ConvGeometry, h: Axis, w: Axis, sink: Sink,
                         weight: np.ndarray, g: _Geometry) -> K.Stmt:
    """Tiles of ``BP`` output positions by ``BV`` output channels, the
    channels innermost (contiguous in the packed weights): for small maps
    with many channels, where the position form would compute mostly
    positions that are not outputs.  Positions are the outputs themselves,
    row by row; each tile position reads its own input offset."""
    bv = 2 * CHANNEL_VECTOR if cv.og % (2 * CHANNEL_VECTOR) == 0 else CHANNEL_VECTOR
    ntaps = h.kernel * w.kernel
    wp = ctx.constant_table(_packed_weights(cv, weight, h.kernel, w.kernel, bv).reshape(-1), F32)
    wbuf = wp.buffer
    assert wbuf is not None
    chan_size = len(g.phases) * g.plane_size
    outputs = h.out * w.out
    bp_full = CHANNEL_TILE_POSITIONS
    if outputs % bp_full:
        bp_full = next((b for b in CHANNEL_TILE_ALTERNATIVES if outputs % b == 0), bp_full)
    acc = K.Buffer(ctx.fresh("acc"), F32, (bp_full * bv,), K.BufferScope.LOCAL)
    n = ctx.index_var("n")
    if g.in_place:
        src = cv.data.buffer
        assert src is not None
        src_base: K.Expr = imul(n, cv.c * chan_size)
        fill: K.Stmt | None = None
    else:
        src = ctx.scratch(F32, (cv.c * chan_size,), "planes")
        src_base = idx(0)
        fill = _fill_planes(ctx, cv, h, w, g, src, n)

    def tile(wtile: K.Expr, cbase: K.Expr, q0: K.Expr, bp: int) -> K.Stmt:
        i, j = ctx.index_var("i"), ctx.index_var("j")
        init = K.for_range(i, bp, K.for_range(j, bv, K.store(acc, iadd(imul(i, bv), j),
                                                              K.Const(0, F32))))
        stmts: list[K.Stmt] = [init]
        xos = []
        for u in range(bp):          # each position's input offset in a plane
            q = iadd(q0, u)
            xo = ctx.scalar("xo", DType.INT32)
            stmts.append(K.Decl(xo, iadd(src_base, iadd(imul(K.div(q, idx(w.out)), g.wq),
                                                        K.mod(q, idx(w.out))))))
            xos.append(xo)
        ic = ctx.index_var("ic")
        xb = ctx.scalar("xb", DType.INT32)
        wb = ctx.scalar("wb", DType.INT32)
        body: list[K.Stmt] = [
            K.Decl(xb, imul(iadd(cbase, ic), chan_size)),
            K.Decl(wb, imul(iadd(imul(wtile, cv.cg), ic), ntaps * bv)),
        ]
        def tap(t: int, m: K.Expr | None) -> list[K.Stmt]:
            """Tap ``t`` (its kernel row advanced by ``m`` row groups)."""
            xoff: K.Expr = idx(g.tap_plane[t] * g.plane_size + g.tap_offset[t])
            woff: K.Expr = idx(t * bv)
            if m is not None:
                xoff = iadd(imul(m, h.dilation * g.wq), xoff)
                woff = iadd(imul(m, h.stride * w.kernel * bv), woff)
            out: list[K.Stmt] = []
            for u in range(bp):
                xv = ctx.scalar("xv", F32)
                tj = ctx.index_var("j")
                cell = iadd(u * bv, tj)
                step = K.store(acc, cell, mac(K.load(acc, cell), xv,
                                              K.load(wbuf, iadd(wb, iadd(tj, woff)))))
                out += [K.Decl(xv, K.load(src, iadd(iadd(xb, xos[u]), xoff))),
                        K.for_range(tj, bv, step)]
            return out

        rows = h.stride                     # kernel rows per loop step
        steps = h.kernel // rows if ntaps > MAX_UNROLLED_TAPS else 0
        if steps >= 2:
            # kernel row m*sh + r (r < sh) reads the plane row r reads, m*dh
            # plane rows further: a loop over m, in (kh, kw) order still
            m = ctx.index_var("kh")
            group = [x for t in range(rows * w.kernel) for x in tap(t, m)]
            body.append(K.for_range(m, steps, K.block(*group)))
        for t in range(steps * rows * w.kernel if steps >= 2 else 0, ntaps):
            body += tap(t, None)
        stmts.append(K.for_range(ic, cv.cg, K.block(*body)))
        # the results: a loop over the tile's positions, each storing its
        # channels (not the loop's body once per position: gcc -O3 spent
        # 0.07-0.14 CPU-s more per layer on MobileNetV1's 6x6 maps, the
        # same speed; with the positions innermost, ResNet-8's residual
        # layer took twice the CPU-s and ran 8 % slower)
        su, sj = ctx.index_var("u"), ctx.index_var("j")
        q = iadd(q0, su)
        index = {"N": n, "C": iadd(imul(wtile, bv), sj), "H": K.div(q, idx(w.out)),
                 "W": K.mod(q, idx(w.out))}
        value = K.load(acc, iadd(imul(su, bv), sj))
        stmts.append(K.for_range(su, bp, K.for_range(sj, bv, sink(
            tuple(idx(index[c]) for c in cv.out_layout), K.cast(cv.out_dtype, value)))))
        return K.block(*stmts)

    full, rest = divmod(outputs, bp_full)

    def positions(wtile: K.Expr, cbase: K.Expr) -> K.Stmt:
        stmts: list[K.Stmt] = []
        if full:
            pt = ctx.index_var("pt")
            stmts.append(K.for_range(pt, full, tile(wtile, cbase, imul(pt, bp_full), bp_full)))
        if rest:
            stmts.append(tile(wtile, cbase, idx(full * bp_full), rest))
        return K.block(*stmts)

    grp, ot = ctx.index_var("g"), ctx.index_var("ot")
    wtile = iadd(imul(grp, cv.og // bv), ot)
    channels = K.for_range(grp, cv.groups, K.for_range(ot, cv.og // bv,
                                                       positions(wtile, imul(grp, cv.cg))))
    return K.for_range(n, cv.n, K.block(*([fill] if fill is not None else []), channels))
