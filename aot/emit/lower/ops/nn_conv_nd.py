"""Lowering of ``nn.conv3d`` and ``nn.conv3d_transpose``
(``aot/ir/ops/nn_conv_nd.py``), as anchors.  (``nn.conv1d_transpose`` is
lowered with the 2-d convolutions, in :mod:`.nn_conv`.)

Design note
-----------
One plain loop nest for both, in canonical terms mapped through the
operands' layouts (any permutation of ``NCDHW`` and ``OIDHW`` /
``IODHW``)::

    for n, o, od, oh, ow                     (output channel o in group o / (O/G))
      per spatial axis: first input, tap range [lo, hi)
      acc = 0
      for ic < C/G, td in [lo_d, hi_d), th in [lo_h, hi_h), tw in [lo_w, hi_w)
        acc += x[n, g*C/G + ic, in_d(td), ...] * w[<o, ic>, k_d(td), ...]
      sink(acc)

*Forward* (``nn.conv3d``, weight ``[o, ic]``): tap ``t`` is the kernel
index ``k``, reading input ``o*stride - pad + k*dil``.  The tap ranges are
clipped to the input as the 2-d nests clip theirs
(:class:`~aot.emit.lower.ops.nn_conv.Axis`: constant when the same for
every output position of the axis, else computed per position outside
the reduction).

*Transposed* (``nn.conv3d_transpose``, weight ``[g*C/G + ic, o % (O/G)]``):
output ``o`` of an axis collects input ``i`` and kernel index ``k`` with
``i*stride + k*dil = o + pad``.  With ``g = gcd(stride, dil)``,
``kstep = stride/g`` and ``e = dil/g`` the valid ``k`` form the progression
``k = k0 + t*kstep`` with input ``i = i0 - t*e``, where (for ``num = o +
pad``) ``num`` must be a multiple of ``g`` and ``k0 = ((num mod stride)/g *
inv(e) mod kstep)`` (``inv`` the lowering-time inverse of ``e`` modulo
``kstep``), ``i0 = (num - k0*dil) / stride`` (exact).  Clipping to the
input and the kernel: ``t`` in ``[max(0, floor((i0 - size)/e) + 1),
min(ceil((K - k0)/kstep), floor(i0/e) + 1))``.  All of it is int32
arithmetic per output position, outside the reduction (for ``stride = 1``
it folds to ``k = t``, ``i = o + pad - t*dil``), so the reduction loops
test nothing: :mod:`.nn_conv`'s tiled transposed nest splits outputs into
``stride`` phases per axis instead, which in 3-d would multiply the code
by ``stride^3``.

In both, a tap in the padding is skipped, as the reference skips it.
Accumulation as the 2-d convolutions
(:func:`~aot.emit.lower.ops.nn_conv.accumulator_dtype`: float32 for
float32/float16, wrapping int32 for integers up to 32 bits).  No register
tiles: 3-d convolutions are rare on microcontrollers; this nest is
correct for every attribute combination and the C compiler hoists the
invariant index arithmetic.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

from ....ir.ops.nn_conv import conv_pads
from ....ir.ops.nn_util import expand
from ...kernel import ir as K
from ..registry import ArgValue, LowerContext, anchor_lowering, out_tensor
from .common import mac, tensor
from .nn_conv import (Axis, Operand, accumulator_dtype, bounds, decl_index, floordiv_const,
                      iadd, idx, imul, isub, smax, smin)

_SPATIAL = "DHW"


@dataclass(frozen=True, slots=True)
class _Taps:
    """One spatial axis of an output position: the tap loop ``[lo, hi)``
    and, for tap ``t``, the input position ``x_base + x_coef*t`` and the
    kernel index ``w_base + w_coef*t``."""

    decls: list[K.Stmt]
    lo: K.Expr | int
    hi: K.Expr | int
    x_base: K.Expr
    x_coef: int
    w_base: K.Expr | int
    w_coef: int

    def x_at(self, t: K.Expr) -> K.Expr:
        return iadd(self.x_base, imul(t, self.x_coef))

    def w_at(self, t: K.Expr) -> K.Expr:
        return iadd(self.w_base, imul(t, self.w_coef)) if self.w_coef != 1 or self.w_base != 0 \
            else t


def _forward_taps(ctx: LowerContext, ax: Axis, o: K.Expr, name: str) -> _Taps:
    decls, first, lo, hi = bounds(ctx, ax, o, range(ax.out), "i" + name)
    return _Taps(decls, lo, hi, first, ax.dilation, 0, 1)


def _bind(ctx: LowerContext, decls: list[K.Stmt], base: str, value: K.Expr) -> K.Expr:
    d, v = decl_index(ctx, base, value)
    if d is not None:
        decls.append(d)
    return v


def _transposed_taps(ctx: LowerContext, ax: Axis, o: K.Expr, name: str) -> _Taps:
    """The progression of valid kernel indices of output ``o`` (see the
    design note)."""
    s, dil, size, kernel = ax.stride, ax.dilation, ax.size, ax.kernel
    g = math.gcd(s, dil)
    kstep, e = s // g, dil // g
    decls: list[K.Stmt] = []
    num = _bind(ctx, decls, name + "n", iadd(o, ax.pad) if ax.pad else o)
    valid: K.Expr | None = None
    k0: K.Expr | int = 0
    if s > 1:
        r = _bind(ctx, decls, name + "r", K.mod(num, idx(s)))
        if g > 1:
            valid = K.eq(K.mod(r, idx(g)), idx(0))
        if kstep > 1:
            inv = pow(e, -1, kstep)
            q = K.div(r, idx(g)) if g > 1 else r
            k0 = _bind(ctx, decls, name + "k0", K.mod(imul(q, inv), idx(kstep)))
    i0 = num if s == 1 else _bind(ctx, decls, "i" + name, K.div(
        isub(num, imul(k0, dil)) if not isinstance(k0, int) else num, idx(s)))
    ntaps: K.Expr | int = -(-kernel // kstep) if isinstance(k0, int) else \
        K.div(isub(kernel + kstep - 1, k0), idx(kstep))
    lo = smax(iadd(floordiv_const(isub(i0, size), e), 1), 0)
    hi = smin(iadd(floordiv_const(i0, e), 1), ntaps)
    if valid is not None:
        hi = K.select(valid, hi, idx(0))
    lo = _bind(ctx, decls, name + "lo", lo)
    hi = _bind(ctx, decls, name + "hi", hi)
    return _Taps(decls, lo, hi, i0, -e, k0, kstep)


def _conv_nd(ctx: LowerContext, args: Sequence[ArgValue], attrs, out_type, sinks,
             transposed: bool) -> K.Stmt:
    data, weight = tensor(args[0]), tensor(args[1])
    t = out_tensor(out_type)
    dl, kl = attrs.data_layout, attrs.kernel_layout
    ol = attrs.out_layout or dl
    rank = len(dl) - 2
    spatial = _SPATIAL[-rank:]
    n_, c_ = (int(data.shape[dl.index(c)]) for c in "NC")
    o_ = int(t.shape[ol.index("C")])
    g_ = attrs.groups
    cg, og = c_ // g_, o_ // g_
    strides, dilation = expand(attrs.strides, rank), expand(attrs.dilation, rank)
    pads = conv_pads(attrs, rank)
    acc_t = accumulator_dtype(t.dtype, data.dtype)
    x, w = Operand(data, dl), Operand(weight, kl)
    n, o = ctx.index_var("n"), ctx.index_var("o")
    outs = {c: ctx.index_var("o" + c.lower()) for c in spatial}
    taps: dict[str, _Taps] = {}
    for i, c in enumerate(spatial):
        ax = Axis(int(data.shape[dl.index(c)]), int(t.shape[ol.index(c)]),
                  int(weight.shape[kl.index(c)]), strides[i], dilation[i], pads[i][0])
        plan = _transposed_taps if transposed else _forward_taps
        taps[c] = plan(ctx, ax, outs[c], c.lower())
    acc = ctx.scalar("acc", acc_t)
    ic = ctx.index_var("ic")
    tv = {c: ctx.index_var("k" + c.lower()) for c in spatial}
    cbase = imul(K.div(o, idx(og)), cg) if g_ > 1 else idx(0)
    xi: dict[str, K.Expr] = {"N": n, "C": iadd(cbase, ic)}
    xi.update({c: taps[c].x_at(tv[c]) for c in spatial})
    wi: dict[str, K.Expr] = {c: taps[c].w_at(tv[c]) for c in spatial}
    if transposed:
        wi.update(I=iadd(cbase, ic), O=K.mod(o, idx(og)) if g_ > 1 else o)
    else:
        wi.update(O=o, I=ic)
    xv, wv = K.cast(acc_t, x.at(xi)), K.cast(acc_t, w.at(wi))
    red: K.Stmt = K.Assign(acc, mac(acc, xv, wv))
    for c in reversed(spatial):
        lo, hi = taps[c].lo, taps[c].hi
        red = K.for_range(tv[c], K.sub(idx(hi), idx(lo), no_wrap=True), red, start=idx(lo))
    red = K.for_range(ic, cg, red)
    index = {"N": n, "C": o, **outs}
    decls = [d for c in spatial for d in taps[c].decls]
    body: K.Stmt = K.block(*decls, K.Decl(acc, K.Const(0, acc_t)), red,
                           sinks[0](tuple(idx(index[c]) for c in ol), K.cast(t.dtype, acc)))
    loops = [(outs[c], int(t.shape[ol.index(c)])) for c in reversed(spatial)]
    for v, extent in loops + [(o, o_), (n, n_)]:
        body = K.for_range(v, extent, body)
    return body


@anchor_lowering("nn.conv3d")
def _conv3d(ctx: LowerContext, args: Sequence[ArgValue], attrs, out_type, sinks):
    return _conv_nd(ctx, args, attrs, out_type, sinks, False)


@anchor_lowering("nn.conv3d_transpose")
def _conv3d_transpose(ctx: LowerContext, args: Sequence[ArgValue], attrs, out_type, sinks):
    return _conv_nd(ctx, args, attrs, out_type, sinks, True)

