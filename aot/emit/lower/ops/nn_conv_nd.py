"""Lowering of ``nn.conv3d`` (``aot/ir/ops/nn_conv_nd.py``), as an anchor.
(``nn.conv1d_transpose`` is lowered with the 2-d convolutions, in
:mod:`.nn_conv`.)

Design note
-----------
A plain loop nest, in canonical terms mapped through the operands'
layouts (any permutation of ``NCDHW`` and ``OIDHW``)::

    for n, o, od, oh, ow                     (output channel o in group o / (O/G))
      per spatial axis: first = o*stride - pad, tap range [lo, hi)
      acc = 0
      for ic < C/G, kd in [lo_d, hi_d), kh in [lo_h, hi_h), kw in [lo_w, hi_w)
        acc += x[n, g*C/G + ic, first_d + kd*dil_d, ...] * w[o, ic, kd, kh, kw]
      sink(acc)

The tap ranges are clipped to the input as the 2-d nests clip theirs
(:class:`~aot.emit.lower.ops.nn_conv.Axis`: constant when the same for
every output position of the axis, else computed per position outside
the reduction), so no reduction loop tests for padding and a tap in the
padding is skipped, as the reference skips it.  Accumulation as the 2-d
convolutions (:func:`~aot.emit.lower.ops.nn_conv.accumulator_dtype`:
float32 for float32/float16, wrapping int32 for integers up to 32 bits).
No register tiles: 3-d convolutions are rare on microcontrollers; this
nest is correct for every attribute combination and the C compiler
hoists the invariant index arithmetic.
"""

from __future__ import annotations

from typing import Sequence

from ....ir.ops.nn_conv import conv_pads
from ....ir.ops.nn_util import expand
from ...kernel import ir as K
from ..registry import ArgValue, LowerContext, anchor_lowering, out_tensor
from .common import mac, tensor
from .nn_conv import Axis, Operand, accumulator_dtype, bounds, iadd, idx, imul


@anchor_lowering("nn.conv3d")
def _conv3d(ctx: LowerContext, args: Sequence[ArgValue], attrs, out_type, sinks):
    data, weight = tensor(args[0]), tensor(args[1])
    t = out_tensor(out_type)
    dl, kl = attrs.data_layout, attrs.kernel_layout
    ol = attrs.out_layout or dl
    n_, c_ = (int(data.shape[dl.index(c)]) for c in "NC")
    o_, cg = (int(weight.shape[kl.index(c)]) for c in "OI")
    og = o_ // attrs.groups
    strides, dilation = expand(attrs.strides, 3), expand(attrs.dilation, 3)
    pads = conv_pads(attrs, 3)
    axes = {c: Axis(int(data.shape[dl.index(c)]), int(t.shape[ol.index(c)]),
                    int(weight.shape[kl.index(c)]), strides[i], dilation[i], pads[i][0])
            for i, c in enumerate("DHW")}
    acc_t = accumulator_dtype(t.dtype, data.dtype)
    x, w = Operand(data, dl), Operand(weight, kl)
    n, o = ctx.index_var("n"), ctx.index_var("o")
    outs = {c: ctx.index_var("o" + c.lower()) for c in "DHW"}
    decls: list[K.Stmt] = []
    firsts: dict[str, K.Expr] = {}
    ranges: dict[str, tuple] = {}
    for c in "DHW":
        ax = axes[c]
        d, first, lo, hi = bounds(ctx, ax, outs[c], range(ax.out), "i" + c.lower())
        decls += d
        firsts[c], ranges[c] = first, (lo, hi)
    acc = ctx.scalar("acc", acc_t)
    ic = ctx.index_var("ic")
    taps = {c: ctx.index_var("k" + c.lower()) for c in "DHW"}
    cbase = imul(K.div(o, idx(og)), cg) if attrs.groups > 1 else idx(0)
    xi: dict[str, K.Expr] = {"N": n, "C": iadd(cbase, ic)}
    xi.update({c: iadd(firsts[c], imul(taps[c], axes[c].dilation)) for c in "DHW"})
    wi: dict[str, K.Expr] = {"O": o, "I": ic, **taps}
    xv, wv = K.cast(acc_t, x.at(xi)), K.cast(acc_t, w.at(wi))
    red: K.Stmt = K.Assign(acc, mac(acc, xv, wv))
    for c in "WHD":
        lo, hi = ranges[c]
        red = K.for_range(taps[c], K.sub(idx(hi), idx(lo), no_wrap=True), red, start=idx(lo))
    red = K.for_range(ic, cg, red)
    index = {"N": n, "C": o, **outs}
    body: K.Stmt = K.block(*decls, K.Decl(acc, K.Const(0, acc_t)), red,
                           sinks[0](tuple(idx(index[c]) for c in ol), K.cast(t.dtype, acc)))
    loops = [(outs[c], axes[c].out) for c in "WHD"] + [(o, o_), (n, n_)]
    for v, extent in loops:
        body = K.for_range(v, extent, body)
    return body
