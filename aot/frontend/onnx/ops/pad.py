"""Pad (versions 11, 13, 18 with ``axes``, 19, 21; 23-25 widen types).

``pads`` (a constant input) lists the begin values of the padded axes, then
their end values.  Positive widths become ``nn.pad`` (modes constant, edge,
reflect; the constant value is the optional third input, 0 when absent,
and may be computed at run time); mode ``wrap`` (19) tiles and slices;
negative widths crop, with a ``strided_slice`` before the padding.
"""

from __future__ import annotations

from ....ir.expr import Expr
from ..graph import Node
from ..registry import converter
from .util import normalize_axis, reshape_to, scalar_like

_MODES = {"constant": "constant", "edge": "edge", "reflect": "reflect", "wrap": "wrap"}


@converter("Pad", (11, 13, 18, 19, 21, 23, 24, 25))
def convert_pad(node: Node) -> list[Expr]:
    x = node.input(0)
    shape = node.shape(x)
    rank = len(shape)
    mode = node.attr("mode", "constant")
    if mode not in _MODES:
        raise node.unsupported("mode")
    pads = node.const_ints(1, "pads")
    if node.version >= 18 and node.has(3):
        axes = [normalize_axis(node, a, rank, "axes") for a in node.const_ints(3, "axes")]
    else:
        axes = list(range(rank))
    if len(pads) != 2 * len(axes):
        raise node.error(f"pads={pads} needs {2 * len(axes)} values for {len(axes)} axes")
    if len(set(axes)) != len(axes):
        raise node.error(f"axes={axes} lists an axis twice")
    begin, end = [0] * rank, [0] * rank
    for i, a in enumerate(axes):
        begin[a], end[a] = pads[i], pads[i + len(axes)]
    if all(b == 0 and e == 0 for b, e in zip(begin, end)):
        return [x]
    y = x
    if any(b < 0 or e < 0 for b, e in zip(begin, end)):
        # negative widths crop the input first (as onnxruntime does; it
        # matters for wrap padding on a cropped axis)
        starts = tuple(-min(b, 0) for b in begin)
        stops = tuple(d + min(e, 0) for d, e in zip(shape, end))
        if any(s > t for s, t in zip(starts, stops)):
            raise node.error(f"pads={pads} crop more than the extent of {list(shape)}")
        y = node.call("strided_slice", [y], begin=starts, end=stops, strides=(1,) * rank)
    widths = tuple((max(b, 0), max(e, 0)) for b, e in zip(begin, end))
    if any(b or e for b, e in widths):
        y = _pad(node, y, widths, mode)
    return [y]


def _pad(node: Node, x: Expr, widths: tuple[tuple[int, int], ...], mode: str) -> Expr:
    """``x`` padded by the non-negative ``widths``."""
    if mode == "wrap":
        return _wrap(node, x, widths)
    shape = node.shape(x)
    if mode == "constant":
        value = node.optional(2)
        if value is None:
            value = scalar_like(node, 0, x)
        elif node.shape(value) not in ((), (1,)):
            raise node.error(f"constant_value must be a scalar, got shape "
                             f"{list(node.shape(value))}")
        else:
            value = reshape_to(node, value, ())
    else:
        value = scalar_like(node, 0, x)
    for axis, (b, e) in enumerate(widths):
        if mode == "reflect" and (b >= shape[axis] or e >= shape[axis]):
            raise node.error(f"reflect padding by {[b, e]} needs widths smaller than the "
                             f"extent {shape[axis]} of axis {axis}")
        if mode == "edge" and shape[axis] == 0 and (b or e):
            raise node.error(f"edge padding of the empty axis {axis}")
    return node.call("nn.pad", [x, value], pad_width=widths, pad_mode=_MODES[mode])

def _wrap(node: Node, x: Expr, widths: tuple[tuple[int, int], ...]) -> Expr:
    """Periodic padding: along each padded axis, the input tiled often
    enough and cut to ``[dim - before mod dim, ...)`` of the right length."""
    y = x
    for axis, (before, after) in enumerate(widths):
        if not (before or after):
            continue
        dim = node.shape(y)[axis]
        if dim == 0:
            raise node.error(f"wrap padding of the empty axis {axis}")
        head, tail = -(-before // dim), -(-after // dim)
        reps = [1] * node.rank(y)
        reps[axis] = 1 + head + tail
        tiled = node.call("tile", [y], reps=tuple(reps))
        start = head * dim - before
        y = node.call("strided_slice", [tiled], begin=(start,),
                      end=(start + before + dim + after,), strides=(1,), axes=(axis,))
    return y
