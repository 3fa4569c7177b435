"""Gradient rules of ``nn.conv3d``, ``nn.conv1d_transpose`` and
``nn.conv3d_transpose`` (merged into :data:`aot.ir.ops.gradients.RULES`).

Design note
-----------
The rules of ``nn.conv2d`` (:mod:`aot.ir.ops.gradients`) and
``nn.conv2d_transpose`` (:mod:`aot.ir.ops.gradients_more`) written once
for any number ``r`` of spatial axes (channels-first layouts only:
``NC*`` data, ``OI*`` / ``IO*`` weights; ``padding`` is passed as all
``r`` befores then all ``r`` afters, which is every rank's full form):

* forward convolution ``y = conv(x, w)``: the data gradient is the
  transposed convolution of ``g`` with the same weight, with the
  ``output_padding`` that restores the data's extent; the weight gradient
  correlates the data with ``g`` -- a convolution with strides and
  dilation exchanged, batch and channel axes exchanged (``groups=1``) or
  folded together (depthwise), cut to the kernel size;
* transposed convolution: the data gradient is the forward convolution
  of ``g`` with the same weight (its ``I`` and ``O`` axes read as ``O``
  and ``I``), cut to the data's extent; the weight gradient correlates
  ``g`` with the data, cut to the kernel size (``groups=1``).
"""

from __future__ import annotations

from typing import Any

from ..expr import Call, Expr
from .gradients import Adjoints, NoGradient, call, tensor_type

__all__ = ["CONV_ND_RULES"]

_CANON = {1: ("NCW", "OIW", "IOW"), 2: ("NCHW", "OIHW", "IOHW"),
          3: ("NCDHW", "OIDHW", "IODHW")}


def _shape(e: Expr) -> tuple[int, ...]:
    return tuple(int(d) for d in tensor_type(e).shape)  # type: ignore[arg-type]


def _attr(c: Call, name: str) -> Any:
    return getattr(c.attrs, name)


def _expand(values: Any, r: int) -> list[int]:
    v = [int(x) for x in values]
    return v * r if len(v) == 1 else v


def _pads(c: Call, r: int) -> tuple[list[int], list[int]]:
    from .nn_conv import conv_pads
    pairs = conv_pads(c.attrs, r)  # type: ignore[arg-type]
    return [b for b, _ in pairs], [a for _, a in pairs]


def _check(c: Call, r: int, transposed: bool) -> None:
    data, oi, io = _CANON[r]
    kernel = io if transposed else oi
    if (_attr(c, "data_layout"), _attr(c, "kernel_layout")) != (data, kernel) \
            or _attr(c, "out_layout") not in ("", data):
        raise NoGradient(f"the gradient rule handles {data} data and {kernel} kernels only")
    out_dtype = _attr(c, "out_dtype")
    if out_dtype is not None and out_dtype != tensor_type(c.args[0]).dtype:
        raise NoGradient("the gradient rule needs out_dtype equal to the data's dtype")


def _swap01(e: Expr, r: int) -> Expr:
    return call("transpose", e, axes=[1, 0, *range(2, 2 + r)])


def _cut(e: Expr, kernel: list[int], reach: list[int]) -> Expr:
    """``e[:, :, :k1, :k2, ...]``: a correlation reaches ``reach`` taps,
    past the kernel when a stride does not divide the padded extent."""
    if reach == kernel:
        return e
    r = len(kernel)
    return call("strided_slice", e, begin=[0] * r, end=kernel, strides=[1] * r,
                axes=list(range(2, 2 + r)))


def _conv(r: int) -> str:
    return f"nn.conv{r}d"


def _geometry(c: Call, r: int):
    """The output's spatial sizes, strides, dilations, padding before and after."""
    s, d = _expand(_attr(c, "strides"), r), _expand(_attr(c, "dilation"), r)
    before, after = _pads(c, r)
    return list(_shape(c)[2:]), s, d, before, after


def _forward_rule(r: int):
    def rule(c: Call, g: Expr) -> Adjoints:
        _check(c, r, False)
        x, w = c.args
        n, ch, *size = _shape(x)
        o, ig, *kernel = _shape(w)
        out, s, d, before, after = _geometry(c, r)
        pads = before + after
        groups = _attr(c, "groups")
        full = [(out[i] - 1) * s[i] - before[i] - after[i] + d[i] * (kernel[i] - 1) + 1
                for i in range(r)]
        dx = call(f"{_conv(r)}_transpose", g, w, channels=ch, kernel_size=kernel, strides=s,
                  padding=pads, output_padding=[size[i] - full[i] for i in range(r)],
                  dilation=d, groups=groups)
        reach = [(size[i] + before[i] + after[i] - s[i] * (out[i] - 1) - 1) // d[i] + 1
                 for i in range(r)]
        swapped: dict[str, Any] = {"strides": d, "padding": pads, "dilation": s,
                                   "kernel_size": out}
        if groups == 1:
            corr = call(_conv(r), _swap01(x, r), _swap01(g, r), channels=o, **swapped)
            dw = _swap01(_cut(corr, kernel, reach), r)
        elif groups == ch == o and ig == 1:
            corr = call(_conv(r), call("reshape", x, newshape=[1, n * ch, *size]),
                        call("reshape", g, newshape=[n * ch, 1, *out]), channels=n * ch,
                        groups=n * ch, **swapped)
            per_image = call("reshape", _cut(corr, kernel, reach), newshape=[n, ch, *kernel])
            dw = call("reshape", call("sum", per_image, axis=[0]), newshape=[o, 1, *kernel])
        else:
            raise NoGradient(f"the gradient rule handles groups=1 and depthwise convolutions, "
                             f"not groups={groups} with {ig} input channels per group")
        return [dx, dw]
    return rule


def _transposed_rule(r: int):
    def rule(c: Call, g: Expr) -> Adjoints:
        _check(c, r, True)
        if _attr(c, "groups") != 1:
            raise NoGradient(f"the gradient rule handles groups=1, "
                             f"not groups={_attr(c, 'groups')}")
        x, w = c.args
        _, ch, *size = _shape(x)
        _, _, *kernel = _shape(w)
        out, s, d, before, after = _geometry(c, r)
        pads = before + after
        dx: Expr = call(_conv(r), g, w, strides=s, padding=pads, dilation=d, channels=ch,
                        kernel_size=kernel)
        got = [(out[i] + before[i] + after[i] - d[i] * (kernel[i] - 1) - 1) // s[i] + 1
               for i in range(r)]
        if got != size:
            dx = call("strided_slice", dx, begin=[0] * r, end=size, strides=[1] * r,
                      axes=list(range(2, 2 + r)))
        reach = [(out[i] + before[i] + after[i] - s[i] * (size[i] - 1) - 1) // d[i] + 1
                 for i in range(r)]
        corr = call(_conv(r), _swap01(g, r), _swap01(x, r), strides=d, padding=pads,
                    dilation=s, channels=ch, kernel_size=size)
        return [dx, _swap01(_cut(corr, kernel, reach), r)]
    return rule


CONV_ND_RULES: dict[str, Any] = {
    "nn.conv3d": _forward_rule(3),
    "nn.conv1d_transpose": _transposed_rule(1),
    "nn.conv3d_transpose": _transposed_rule(3),
}
