"""Lowering of the pooling operators (``aot/ir/ops/nn_pool.py``,
``nn_pool_nd.py``): ``nn.max_pool2d``, ``nn.avg_pool2d``,
``nn.global_max_pool2d``, ``nn.global_avg_pool2d`` and the 1-d and 3-d
``nn.max_pool1d``, ``nn.avg_pool1d``, ``nn.max_pool3d``,
``nn.avg_pool3d``, as anchors.

Design note
-----------
A pool is a depthwise window reduction, so it reuses the convolution's
machinery (:mod:`aot.emit.lower.ops.nn_conv`):

* **Loops** follow the layout's letters (any layout with ``H`` and ``W``):
  a loop per batch-like axis, the output rows (the ``kh`` tap range
  computed once per row), and per row the column tiles of
  :func:`~aot.emit.lower.ops.nn_conv.columns` -- interior columns with the
  constant tap range ``[0, K)``, border columns with clipped ranges, so no
  reduction loop ever tests for padding.  When the layout's last axis is
  not ``W`` (``NHWC``), a tile covers up to four consecutive elements of
  that axis (contiguous in memory) instead of columns.
* **Max** starts at the dtype's lowest value (``-inf``): a window lying
  wholly in the padding gives it, as the reference's padding with the
  lowest value does.  Floats use the NaN-propagating ``max`` (the
  reference's ``np.max`` propagates NaN), integers a select.
* **Average** divides the window sum by the reference's divisor, computed
  per output position outside the reduction: the number of taps inside the
  input, or with ``count_include_pad`` inside the padded input (the extra
  ``ceil_mode`` padding excluded) -- per axis the clipped range of a
  window over the padded extent -- and at least 1.  It is a constant
  wherever it is the same for every position a tile covers (the interior,
  runs of border positions), otherwise ``max(hi - lo, 0)`` per axis.
  Integers sum exactly (``int32`` when ``bits + log2(taps)`` cannot
  overflow it, else ``int64``) and divide truncating toward zero, as the
  reference; floats sum in
  :func:`~aot.emit.lower.ops.nn_conv.accumulator_dtype` (``float32`` for
  ``float32``/``float16`` data).
* **Global pools** are the same nest with one window covering the whole
  ``H x W`` plane.
* **1-d pools** are the same nest with a virtual ``H`` of extent 1 that
  never appears in an index (as ``nn.conv1d``); **3-d pools** put a loop
  over the output depth ``od`` where the layout has ``D`` (its tap range
  computed per depth, like the rows') and make ``D`` one more reduction
  axis of the tile; the divisor multiplies the three axes' counts.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Callable, Sequence

from ....ir.dtype import DType
from ....ir.ops.nn_pool_nd import pool_axes
from ....ir.ops.nn_util import padding_2d, pair
from ...kernel import ir as K
from ..registry import ArgValue, LowerContext, Sink, TensorValue, anchor_lowering, out_tensor
from .common import tensor
from .nn_conv import (Access, Axis, Dedup, Lin, Operand, RAxis, accumulator_dtype, bounds,
                      columns, iadd, idx, imul, lin_for, reduction_nest, smax)

__all__ = ["avg_pool_nest", "Finish"]

I32 = DType.INT32
#: ``(window sum, divisor taps) -> value`` (the count may be 0)
Finish = Callable[[K.Expr, "K.Expr | int"], K.Expr]
#: accumulators per pooling tile (no weights to reuse: tiles only
#: amortise loop overhead)
POOL_TILE = 4
SPATIAL = "DHW"


@dataclass(frozen=True, slots=True)
class _Pool:
    is_max: bool
    data: Operand
    extents: dict[str, int]     # every letter's output extent
    h: Axis
    w: Axis
    #: per axis the window whose clipped range counts the divisor's taps
    hcount: Axis
    wcount: Axis
    dtype: DType
    acc: DType
    #: the average's last step, ``(window sum, tap count) -> value``, the
    #: count before it is raised to 1 (default: :func:`_divide`)
    finish: Finish | None = None
    #: the depth axis of a 3-d pool (and its divisor window)
    d: Axis | None = None
    dcount: Axis | None = None
    #: the letters the loops follow when not the data's layout: a 1-d
    #: pool's layout with a virtual ``H`` of extent 1 before ``W``
    loops: str = ""

    @property
    def layout(self) -> str:
        return self.data.layout

    @property
    def loop_layout(self) -> str:
        return self.loops or self.layout

    @property
    def tile_letter(self) -> str | None:
        """The layout's last axis when it is not a spatial one (``C`` of
        ``NHWC``): tiles run along it."""
        last = self.layout[-1]
        return None if last in SPATIAL else last


def _lowest(dtype: DType) -> K.Const:
    if dtype.is_float:
        return K.Const(dtype.lowest, dtype)
    return K.Const(K.dtype_range(dtype)[0], dtype)


def _int_accumulator(dtype: DType, taps: int) -> DType:
    """int32 when no window sum can overflow it, else int64."""
    lo, hi = K.dtype_range(dtype)
    return I32 if max(abs(lo), hi) * max(taps, 1) < 2**31 else DType.INT64


def _combine(pool: _Pool, acc: K.Expr, x: K.Expr) -> K.Expr:
    if not pool.is_max:
        return K.add(acc, x)
    if pool.acc.is_float:
        return K.maximum(acc, x)          # NaN-propagating, as np.max
    return K.select(K.lt(acc, x), x, acc)


def _count(ctx: LowerContext, axis: Axis, o: K.Expr, positions: Sequence[int]) -> K.Expr | int:
    """Divisor taps along one axis at position ``o`` (ranging over
    ``positions``): a constant when the same for all of them."""
    counts = {max(0, hi - lo) for lo, hi in (axis.clip(p) for p in positions)}
    if len(counts) == 1:
        return counts.pop()
    first = axis.start(o)
    return smax(K.sub(axis.runtime_hi(o, first), axis.runtime_lo(o, first), no_wrap=True), 0)


def _times(a: K.Expr | int, b: K.Expr | int) -> K.Expr | int:
    if isinstance(a, int) and isinstance(b, int):
        return a * b
    return K.mul(idx(a), idx(b), no_wrap=True)


def _divide(pool: _Pool, acc: K.Expr, count: K.Expr | int) -> K.Expr:
    if isinstance(count, int):
        divisor: K.Expr = K.Const(max(count, 1), pool.acc)
    else:
        c = smax(count, 1)
        divisor = K.cast(pool.acc, c)
    return K.div(acc, divisor)


def _result(pool: _Pool, acc: K.Expr, count: K.Expr | int) -> K.Expr:
    if pool.is_max:
        return acc
    if pool.finish is not None:
        return pool.finish(acc, count)
    return _divide(pool, acc, count)


def _pool_tile(ctx: LowerContext, pool: _Pool, sink: Sink, env: dict[str, K.Expr],
               t0: K.Expr | None, bt: int, oh: K.Expr, htaps: tuple, ih0: K.Expr,
               ow0: K.Expr, iw0: K.Expr, bw: int, wtaps: tuple, starts: list[int],
               hcount: K.Expr | int, depth: dict | None) -> K.Stmt:
    """``bt`` elements along the tile axis (from ``t0``) x ``bw`` columns
    (``depth``: a 3-d pool's ``od``, ``id0``, ``dtaps``, ``dcount``)."""
    accs = [[ctx.scalar("acc", pool.acc) for _ in range(bw)] for _ in range(bt)]
    init = _lowest(pool.acc) if pool.is_max else K.Const(0, pool.acc)
    stmts: list[K.Stmt] = [K.Decl(a, init) for row in accs for a in row]
    axes = _tile_axes(pool, htaps, wtaps, depth)
    hcount = _times(hcount, depth["dcount"] if depth else 1)
    tl = pool.tile_letter

    def body(outer: dict[str, K.Expr], dynamic: set[str]):
        lin = lin_for(outer, dynamic)
        comps = {c: Lin(env[c]) for c in pool.layout if c not in SPATIAL and c != tl}
        if tl is not None:
            comps[tl] = Lin(t0, ti=1)
        comps["H"] = lin("H", ih0, pool.h.dilation)
        comps["W"] = lin("W", iw0, pool.w.dilation, tj=pool.w.stride)
        comps.update(_depth_comp(pool, lin, depth))
        xa = Access(ctx, pool.data, comps, "xb")

        def emit(values: dict[str, K.Expr], dedup: Dedup) -> list[K.Stmt]:
            out: list[K.Stmt] = []
            for i in range(bt):
                for j in range(bw):
                    x = dedup.value(K.cast(pool.acc, xa.read(values, i, j)), out, "x")
                    out.append(K.Assign(accs[i][j], _combine(pool, accs[i][j], x)))
            return out
        return xa.decls, emit

    nest = reduction_nest(ctx, axes, body, bt * bw)
    if nest is not None:
        stmts.append(nest)
    for j in range(bw):
        if pool.is_max:
            count: K.Expr | int = 1
        else:
            wcount = _count(ctx, pool.wcount, iadd(ow0, j), [s + j for s in starts])
            count = _times(hcount, wcount)
        for i in range(bt):
            value = _result(pool, accs[i][j], count)
            index = dict(env, H=oh, W=iadd(ow0, j), **({"D": depth["od"]} if depth else {}))
            if tl is not None:
                index[tl] = iadd(t0, i)
            stmts.append(sink(tuple(idx(index[c]) for c in pool.layout),
                              K.cast(pool.dtype, value)))
    return K.block(*stmts)


def _tile_axes(pool: _Pool, htaps: tuple, wtaps: tuple, depth: dict | None) -> list[RAxis]:
    """The tile's reduction axes in the loops' letter order."""
    ranges = {"H": RAxis("H", *htaps), "W": RAxis("W", *wtaps)}
    if depth is not None:
        ranges["D"] = RAxis("D", *depth["dtaps"])
    return [ranges[c] for c in pool.loop_layout if c in ranges]


def _depth_comp(pool: _Pool, lin: Callable[..., Lin], depth: dict | None) -> dict[str, Lin]:
    if depth is None or pool.d is None:
        return {}
    return {"D": lin("D", depth["id0"], pool.d.dilation)}


def _rows(ctx: LowerContext, pool: _Pool, letter: str,
          rest: Callable[[dict], K.Stmt]) -> K.Stmt | None:
    """The loop over the output rows (``H``; a 1-d pool's virtual row has
    none) or a 3-d pool's output depth (``D``); ``rest(spatial)`` builds
    the nest inside.  None for any other letter."""
    if letter == "H" and letter not in pool.layout:
        return rest(dict(oh=idx(0), ih0=idx(0), htaps=(0, 1), hcount=1))
    if letter == "H":
        oh = ctx.index_var("oh")
        decls, ih0, lo, hi = bounds(ctx, pool.h, oh, range(pool.h.out), "ih")
        hcount = 1 if pool.is_max else _count(ctx, pool.hcount, oh, range(pool.h.out))
        inner = rest(dict(oh=oh, ih0=ih0, htaps=(lo, hi), hcount=hcount))
        return K.for_range(oh, pool.h.out, K.block(*decls, inner))
    if letter != "D" or pool.d is None or pool.dcount is None:
        return None
    od = ctx.index_var("od")
    decls, id0, lo, hi = bounds(ctx, pool.d, od, range(pool.d.out), "id")
    dcount = 1 if pool.is_max else _count(ctx, pool.dcount, od, range(pool.d.out))
    inner = rest(dict(depth=dict(od=od, id0=id0, dtaps=(lo, hi), dcount=dcount)))
    return K.for_range(od, pool.d.out, K.block(*decls, inner))


def _pool_nest(ctx: LowerContext, pool: _Pool, sink: Sink) -> K.Stmt:
    tl = pool.tile_letter
    bt = 1
    if tl is not None:
        extent = pool.extents[tl]
        bt = next((b for b in range(POOL_TILE, 1, -1) if extent % b == 0), min(extent, POOL_TILE))
    max_bw = max(1, POOL_TILE // bt)

    def build(pos: int, env: dict[str, K.Expr], spatial: dict) -> K.Stmt:
        if pos == len(pool.loop_layout):    # (with a tile axis, it closes the nest instead)
            return tile(env, None, 1, spatial)
        letter = pool.loop_layout[pos]
        rows = _rows(ctx, pool, letter, lambda more: build(pos + 1, env, dict(spatial, **more)))
        if rows is not None:
            return rows
        if letter == "W":
            def col(ow0: K.Expr, iw0: K.Expr, bw: int, taps: tuple, starts: list[int]):
                return build(pos + 1, env, dict(spatial, ow0=ow0, iw0=iw0, bw=bw, wtaps=taps,
                                                starts=starts))
            return K.block(*columns(ctx, pool.w, max_bw if tl is None else 1, col))
        if letter == tl:
            return tiles_along(env, spatial)
        v = ctx.index_var(letter.lower())
        return K.for_range(v, pool.extents[letter], build(pos + 1, dict(env, **{letter: v}),
                                                          spatial))

    def tiles_along(env: dict[str, K.Expr], spatial: dict) -> K.Stmt:
        full, rem = divmod(pool.extents[tl], bt)
        stmts: list[K.Stmt] = []
        if full:
            t = ctx.index_var("t")
            stmts.append(K.for_range(t, full, tile(env, imul(t, bt), bt, spatial)))
        if rem:
            stmts.append(tile(env, idx(full * bt), rem, spatial))
        return K.block(*stmts)

    def tile(env: dict[str, K.Expr], t0: K.Expr | None, n: int, sp: dict) -> K.Stmt:
        bw = sp["bw"]
        return _pool_tile(ctx, pool, sink, env, t0, n, sp["oh"], sp["htaps"], sp["ih0"],
                          sp["ow0"], sp["iw0"], bw, sp["wtaps"], sp["starts"], sp["hcount"],
                          sp.get("depth"))

    return build(0, {}, {})


# ============================================================ attributes

def _setup(args: Sequence[ArgValue], attrs, out_type, is_max: bool,
           global_pool: bool) -> _Pool:
    data = tensor(args[0])
    t = out_tensor(out_type)
    layout = attrs.layout
    extents = {c: int(t.shape[i]) for i, c in enumerate(layout)}
    ht, wd = (int(data.shape[layout.index(c)]) for c in "HW")
    if global_pool:
        h, w = Axis(ht, 1, ht), Axis(wd, 1, wd)
        hcount, wcount = h, w
    else:
        top, left, bottom, right = padding_2d(attrs.padding)
        (kh, kw), (sh, sw), (dh, dw) = pair(attrs.pool_size), pair(attrs.strides), \
            pair(attrs.dilation)
        h = Axis(ht, extents["H"], kh, sh, dh, top)
        w = Axis(wd, extents["W"], kw, sw, dw, left)
        hcount, wcount = h, w
        if not is_max and attrs.count_include_pad:
            hcount = Axis(ht + top + bottom, h.out, kh, sh, dh, 0)
            wcount = Axis(wd + left + right, w.out, kw, sw, dw, 0)
    if is_max:
        acc = t.dtype
    elif t.dtype.is_float:
        acc = accumulator_dtype(t.dtype, t.dtype)
    else:
        acc = _int_accumulator(t.dtype, h.kernel * w.kernel)
    return _Pool(is_max, Operand(data, layout), extents, h, w, hcount, wcount, t.dtype, acc)


def _setup_nd(args: Sequence[ArgValue], attrs, out_type, is_max: bool) -> _Pool:
    """A 1-d pool (the 2-d nest with a virtual ``H`` of extent 1) or a 3-d
    one (the 2-d nest inside a loop over ``D``, whose taps are one more
    reduction axis)."""
    data = tensor(args[0])
    t = out_tensor(out_type)
    layout = attrs.layout
    extents = {c: int(t.shape[i]) for i, c in enumerate(layout)}
    include = not is_max and attrs.count_include_pad
    geo: dict[str, tuple[Axis, Axis]] = {}
    for ax in pool_axes(attrs):
        size = int(data.shape[layout.index(ax.letter)])
        window = Axis(size, extents[ax.letter], ax.kernel, ax.stride, ax.dilation, ax.before)
        count = Axis(size + ax.before + ax.after, window.out, ax.kernel, ax.stride,
                     ax.dilation, 0) if include else window
        geo[ax.letter] = (window, count)
    loops = layout
    if "H" not in geo:
        geo["H"] = (Axis(1, 1, 1), Axis(1, 1, 1))
        loops = layout.replace("W", "HW")
    (h, hcount), (w, wcount) = geo["H"], geo["W"]
    d, dcount = geo.get("D", (None, None))
    taps = h.kernel * w.kernel * (d.kernel if d is not None else 1)
    if is_max:
        acc = t.dtype
    elif t.dtype.is_float:
        acc = accumulator_dtype(t.dtype, t.dtype)
    else:
        acc = _int_accumulator(t.dtype, taps)
    return _Pool(is_max, Operand(data, layout), extents, h, w, hcount, wcount, t.dtype, acc,
                 d=d, dcount=dcount, loops=loops)


@anchor_lowering("nn.max_pool1d", "nn.max_pool3d")
def _max_pool_nd(ctx: LowerContext, args: Sequence[ArgValue], attrs, out_type, sinks):
    return _pool_nest(ctx, _setup_nd(args, attrs, out_type, True), sinks[0])


@anchor_lowering("nn.avg_pool1d", "nn.avg_pool3d")
def _avg_pool_nd(ctx: LowerContext, args: Sequence[ArgValue], attrs, out_type, sinks):
    return _pool_nest(ctx, _setup_nd(args, attrs, out_type, False), sinks[0])


@anchor_lowering("nn.max_pool2d")
def _max_pool2d(ctx: LowerContext, args: Sequence[ArgValue], attrs, out_type, sinks):
    return _pool_nest(ctx, _setup(args, attrs, out_type, True, False), sinks[0])


@anchor_lowering("nn.avg_pool2d")
def _avg_pool2d(ctx: LowerContext, args: Sequence[ArgValue], attrs, out_type, sinks):
    return _pool_nest(ctx, _setup(args, attrs, out_type, False, False), sinks[0])


@anchor_lowering("nn.global_max_pool2d")
def _global_max_pool2d(ctx: LowerContext, args: Sequence[ArgValue], attrs, out_type, sinks):
    return _pool_nest(ctx, _setup(args, attrs, out_type, True, True), sinks[0])


@anchor_lowering("nn.global_avg_pool2d")
def _global_avg_pool2d(ctx: LowerContext, args: Sequence[ArgValue], attrs, out_type, sinks):
    return _pool_nest(ctx, _setup(args, attrs, out_type, False, True), sinks[0])


def avg_pool_nest(ctx: LowerContext, data: TensorValue, attrs, out_type, sink: Sink,
                  acc: DType, finish: Finish) -> K.Stmt:
    """The nest of ``nn.avg_pool2d`` over ``data`` (read as given) with
    accumulator ``acc`` and a custom last step (the quantized average)."""
    pool = _setup([data], attrs, out_type, False, False)
    return _pool_nest(ctx, replace(pool, acc=acc, finish=finish), sink)
