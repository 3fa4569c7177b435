"""Convolutions: Conv and ConvTranspose (1-d, 2-d and 3-d).

ONNX keeps data in NCHW and weights in OIHW (Conv) or IOHW (ConvTranspose),
exactly the canonical layouts of ``nn.conv1d``/``nn.conv2d``/``nn.conv3d``/
``nn.conv1d_transpose``/``nn.conv2d_transpose``/``nn.conv3d_transpose``; ``pads`` ``[x1_begin,
x2_begin, x1_end, x2_end]`` is the IR's ``[top, left, bottom, right]``
(``[front, top, left, back, bottom, right]`` in 3-d).  The bias is added
with ``nn.bias_add`` on axis 1.
Schema versions: Conv/ConvTranspose 1 (opset < 11 is refused earlier), 11,
and 22 (adds bfloat16 only).
"""

from __future__ import annotations

from dataclasses import dataclass

from ....ir.expr import Expr
from ..graph import Node
from ..registry import converter
from .util import require_float, spatial_ints, spatial_pads

_VERSIONS = (11, 22)


def _kernel(node: Node, w_shape: tuple[int, ...], n: int) -> list[int]:
    kernel = list(w_shape[2:])
    given = node.attr("kernel_shape")
    if given is not None and [int(k) for k in given] != kernel:
        raise node.error(f"kernel_shape={list(given)} does not match the weight's shape "
                         f"{list(w_shape)}")
    return kernel


def _spatial_rank(node: Node, x: Expr) -> int:
    rank = node.rank(x)
    if rank not in (3, 4, 5):
        raise node.error(f"only 1-d, 2-d and 3-d convolutions are supported "
                         f"(input of rank {rank})")
    return rank - 2


def _add_bias(node: Node, y: Expr, index: int) -> Expr:
    b = node.optional(index)
    if b is None:
        return y
    return node.call("nn.bias_add", [y, b], axis=1)


@dataclass(frozen=True)
class _ConvOperands:
    """What Conv and ConvTranspose read alike: data, weight, the number of
    spatial axes, shapes, kernel, strides and dilations."""
    x: Expr
    w: Expr
    n: int
    x_shape: tuple[int, ...]
    w_shape: tuple[int, ...]
    kernel: list[int]
    strides: list[int]
    dilations: list[int]


def _operands(node: Node) -> _ConvOperands:
    x, w = node.input(0), node.input(1)
    require_float(node, x)
    n = _spatial_rank(node, x)
    x_shape, w_shape = node.shape(x), node.shape(w)
    if len(w_shape) != n + 2:
        raise node.error(f"the weight has shape {list(w_shape)}; rank {n + 2} is needed")
    return _ConvOperands(x, w, n, x_shape, w_shape, _kernel(node, w_shape, n),
                         spatial_ints(node, "strides", n, 1),
                         spatial_ints(node, "dilations", n, 1))


@converter("Conv", _VERSIONS)
def convert_conv(node: Node) -> list[Expr]:
    c = _operands(node)
    x, w, n, x_shape, w_shape = c.x, c.w, c.n, c.x_shape, c.w_shape
    kernel, strides, dilations = c.kernel, c.strides, c.dilations
    pads = spatial_pads(node, x_shape[2:], kernel, strides, dilations,
                        dilated_same=True)
    groups = int(node.attr("group", 1))
    if n == 1:
        y = node.call("nn.conv1d", [x, w], strides=tuple(strides), dilation=tuple(dilations),
                      padding=pads[0], groups=groups, channels=w_shape[0],
                      kernel_size=tuple(kernel))
    elif n == 3:
        y = node.call("nn.conv3d", [x, w], strides=tuple(strides), dilation=tuple(dilations),
                      padding=tuple(p[0] for p in pads) + tuple(p[1] for p in pads),
                      groups=groups, channels=w_shape[0], kernel_size=tuple(kernel))
    else:
        (top, bottom), (left, right) = pads
        y = node.call("nn.conv2d", [x, w], strides=tuple(strides), dilation=tuple(dilations),
                      padding=(top, left, bottom, right), groups=groups, channels=w_shape[0],
                      kernel_size=tuple(kernel))
    return [_add_bias(node, y, 2)]


def _transpose_pads(node: Node, in_sizes: tuple[int, ...], kernel: list[int],
                    strides: list[int], dilations: list[int],
                    out_pad: list[int]) -> list[tuple[int, int]]:
    """(begin, end) cropping of the full transposed-convolution output per
    spatial axis.  With ``output_shape`` (or ``auto_pad=SAME_*``, whose
    target size is ``in * stride``) the total is what makes the output
    that size, split as the specification says: ``total // 2`` at the
    beginning for ``SAME_UPPER``, at the end otherwise (floor division,
    so a negative total extends the end; the ONNX test suite agrees)."""
    n = len(in_sizes)
    auto_pad = node.attr("auto_pad", "NOTSET")
    output_shape = node.attr("output_shape")
    if auto_pad not in ("NOTSET", "VALID", "SAME_UPPER", "SAME_LOWER"):
        raise node.unsupported("auto_pad", auto_pad)
    if output_shape is None and auto_pad in ("NOTSET", "VALID"):
        if auto_pad == "VALID":
            return [(0, 0)] * n
        return spatial_pads(node, in_sizes, kernel, strides, dilations)
    if output_shape is not None:
        targets = [int(v) for v in output_shape][-n:]
        if len(targets) != n:
            raise node.error(f"output_shape={list(output_shape)} needs {n} spatial sizes")
    else:
        targets = [size * s for size, s in zip(in_sizes, strides)]
    out = []
    for size, k, s, d, op, target in zip(in_sizes, kernel, strides, dilations, out_pad, targets):
        total = s * (size - 1) + op + (k - 1) * d + 1 - target
        small, big = total // 2, total - total // 2
        out.append((small, big) if auto_pad == "SAME_UPPER" else (big, small))
    return out


@converter("ConvTranspose", _VERSIONS)
def convert_conv_transpose(node: Node) -> list[Expr]:
    c = _operands(node)
    x, w, n, x_shape, w_shape = c.x, c.w, c.n, c.x_shape, c.w_shape
    kernel, strides, dilations = c.kernel, c.strides, c.dilations
    out_pad = [int(v) for v in node.attr("output_padding", [0] * n)]
    if len(out_pad) != n or any(v < 0 for v in out_pad):
        raise node.unsupported("output_padding", out_pad)
    pads = _transpose_pads(node, x_shape[2:], kernel, strides, dilations, out_pad)
    # a negative end padding (an output_shape larger than the full result)
    # extends the end with zeros, which is what output_padding does
    if any(b < 0 for b, _ in pads):
        raise node.error(f"an output larger than the transposed convolution at the beginning "
                         f"(pads {pads}) is not supported")
    out_pad = [op - min(e, 0) for op, (_, e) in zip(out_pad, pads)]
    pads = [(b, max(e, 0)) for b, e in pads]
    groups = int(node.attr("group", 1))
    if n == 1:
        y = node.call("nn.conv1d_transpose", [x, w], strides=tuple(strides),
                      dilation=tuple(dilations), padding=pads[0], output_padding=tuple(out_pad),
                      groups=groups, channels=w_shape[1] * groups, kernel_size=tuple(kernel))
        return [_add_bias(node, y, 2)]
    if n == 3:
        y = node.call("nn.conv3d_transpose", [x, w], strides=tuple(strides),
                      dilation=tuple(dilations),
                      padding=tuple(p[0] for p in pads) + tuple(p[1] for p in pads),
                      output_padding=tuple(out_pad), groups=groups,
                      channels=w_shape[1] * groups, kernel_size=tuple(kernel))
        return [_add_bias(node, y, 2)]
    (top, bottom), (left, right) = pads
    y = node.call("nn.conv2d_transpose", [x, w], strides=tuple(strides),
                  dilation=tuple(dilations), padding=(top, left, bottom, right),
                  output_padding=tuple(out_pad), groups=groups, channels=w_shape[1] * groups,
                  kernel_size=tuple(kernel))
    return [_add_bias(node, y, 2)]
