"""Operator family: nn (sub-pixel rearrangements).

``nn.depth_to_space`` and ``nn.space_to_depth``, as Relay has them
(``SubPixelAttrs``: ``block_size``, ``layout`` NCHW or NHWC, ``mode``).

* ``nn.depth_to_space(data, block_size=b, mode)``: ``(N, C, H, W)`` to
  ``(N, C/b², H*b, W*b)``; output element ``(n, c, h, w)`` reads channel
  ``((h % b) * b + w % b) * C/b² + c`` (mode ``DCR``, depth-column-row)
  or ``c * b² + (h % b) * b + w % b`` (mode ``CRD``) at ``(h / b, w / b)``.
* ``nn.space_to_depth(data, block_size=b)``: ``(N, C, H, W)`` to ``(N,
  C*b², H/b, W/b)``, the inverse of ``depth_to_space`` in mode ``DCR``
  (Relay's only order for it; another ``mode`` is an error here): output
  channel ``(dh * b + dw) * C + c`` holds ``(c, h*b + dh, w*b + dw)``.

NHWC moves the channel axis last; the rest is the same.  Every output
element is one input element: injective, as Relay registers them.
"""

from __future__ import annotations

from typing import ClassVar, Sequence

from ..attrs import attrs_class
from .common import (Attrs, PatternKind, RelationError, TensorType, Type, as_array, defop, np,
                     tensor_arg)
from .nn_util import array_from_canonical, array_to_canonical, from_canonical, to_canonical
from .shape_util import fmt_shape

FAMILY = "nn"
_LAYOUTS = ("NCHW", "NHWC")
_MODES = ("DCR", "CRD")


@attrs_class
class SubPixelAttrs(Attrs):
    type_key: ClassVar[str] = "SubPixelAttrs"
    block_size: int = 1
    layout: str = "NCHW"
    mode: str = "DCR"


def _check(data: TensorType, attrs: SubPixelAttrs, op: str) -> tuple:
    """The data's NCHW shape, after the attribute checks."""
    if attrs.block_size < 1:
        raise RelationError(f"block_size must be positive, got {attrs.block_size}")
    if attrs.layout not in _LAYOUTS:
        raise RelationError(f"layout must be one of {', '.join(_LAYOUTS)}, got "
                            f"{attrs.layout!r}")
    allowed = _MODES if op == "depth_to_space" else ("DCR",)
    if attrs.mode not in allowed:
        raise RelationError(f"{op}'s mode must be one of {', '.join(allowed)}, got "
                            f"{attrs.mode!r}")
    if data.ndim != 4:
        raise RelationError(f"{op} needs 4-d data ({attrs.layout}), got "
                            f"{fmt_shape(data.shape)}")
    return to_canonical(data.shape, attrs.layout, "NCHW")


def sub_pixel_shape(shape: Sequence, attrs: SubPixelAttrs, to_space: bool) -> tuple:
    """The result's NCHW shape from the data's NCHW shape."""
    n, c, h, w = shape
    b = attrs.block_size
    if to_space:
        if isinstance(c, int) and c % (b * b):
            raise RelationError(f"{c} channels are not divisible by block_size² = {b * b}")
        return (n, c // (b * b) if isinstance(c, int) else c,
                h * b if isinstance(h, int) else h, w * b if isinstance(w, int) else w)
    for what, d in (("height", h), ("width", w)):
        if isinstance(d, int) and d % b:
            raise RelationError(f"the {what} {d} is not divisible by block_size {b}")
    return (n, c * b * b if isinstance(c, int) else c,
            h // b if isinstance(h, int) else h, w // b if isinstance(w, int) else w)


def _rel(op: str, to_space: bool):
    def rel(args: Sequence[Type], attrs: SubPixelAttrs) -> Type | None:
        data = tensor_arg(args, 0, "data")
        if data is None:
            return None
        out = sub_pixel_shape(_check(data, attrs, op), attrs, to_space)
        return TensorType(from_canonical(out, attrs.layout, "NCHW"), data.dtype)
    return rel


def _depth_to_space(args: Sequence[np.ndarray], attrs: SubPixelAttrs, out: Type) -> np.ndarray:
    x = array_to_canonical(args[0], attrs.layout, "NCHW")
    n, c, h, w = x.shape
    b = attrs.block_size
    if attrs.mode == "DCR":
        y = x.reshape(n, b, b, c // (b * b), h, w).transpose(0, 3, 4, 1, 5, 2)
    else:
        y = x.reshape(n, c // (b * b), b, b, h, w).transpose(0, 1, 4, 2, 5, 3)
    y = y.reshape(n, c // (b * b), h * b, w * b)
    return as_array(array_from_canonical(y, attrs.layout, "NCHW"), args[0].dtype)


def _space_to_depth(args: Sequence[np.ndarray], attrs: SubPixelAttrs, out: Type) -> np.ndarray:
    x = array_to_canonical(args[0], attrs.layout, "NCHW")
    n, c, h, w = x.shape
    b = attrs.block_size
    y = x.reshape(n, c, h // b, b, w // b, b).transpose(0, 3, 5, 1, 2, 4)
    y = y.reshape(n, c * b * b, h // b, w // b)
    return as_array(array_from_canonical(y, attrs.layout, "NCHW"), args[0].dtype)


defop("nn.depth_to_space", arity=1, rel=_rel("depth_to_space", True),
      pattern=PatternKind.INJECTIVE, compute=_depth_to_space,
      doc="channels rearranged into block_size x block_size spatial blocks (DCR or CRD)",
      attrs=SubPixelAttrs, family=FAMILY)
defop("nn.space_to_depth", arity=1, rel=_rel("space_to_depth", False),
      pattern=PatternKind.INJECTIVE, compute=_space_to_depth,
      doc="block_size x block_size spatial blocks rearranged into channels (DCR)",
      attrs=SubPixelAttrs, family=FAMILY)

__all__ = ["SubPixelAttrs", "sub_pixel_shape"]
