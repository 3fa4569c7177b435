"""Operator family: nn (mirror padding).

``nn.mirror_pad(data, pad_width, mode="SYMMETRIC")``, as Relay has it
(``MirrorPadAttrs``): one ``(before, after)`` pair of non-negative widths
per axis; the border is the data mirrored at its edge, ``REFLECT``
without repeating the edge element (NumPy's ``reflect``: ``abc`` ->
``cb|abc|ba``) and ``SYMMETRIC`` with it (``ba|abc|cb``).  One reflection
only: a width must be below the axis extent for ``REFLECT`` and at most
the extent for ``SYMMETRIC`` (Relay does not check; larger widths would
read outside the data).  Injective, as Relay registers it.
"""

from __future__ import annotations

from typing import ClassVar, Sequence

from ..attrs import attrs_class
from ..types import ANY, Dim
from .common import (Attrs, PatternKind, RelationError, TensorType, Type, as_array, defop, np,
                     tensor_arg)

FAMILY = "nn"
_MODES = ("REFLECT", "SYMMETRIC")


@attrs_class
class MirrorPadAttrs(Attrs):
    type_key: ClassVar[str] = "MirrorPadAttrs"
    mode: str = "SYMMETRIC"
    pad_width: tuple[tuple[int, ...], ...] = ()


def _rel(args: Sequence[Type], attrs: MirrorPadAttrs) -> Type | None:
    data = tensor_arg(args, 0, "data")
    if data is None:
        return None
    if attrs.mode not in _MODES:
        raise RelationError(f"mode must be REFLECT or SYMMETRIC, got {attrs.mode!r}")
    if len(attrs.pad_width) != data.ndim:
        raise RelationError(f"{len(attrs.pad_width)} pad width pairs for data of rank "
                            f"{data.ndim}")
    shape: list[Dim] = []
    for axis, (pair, d) in enumerate(zip(attrs.pad_width, data.shape)):
        if len(pair) != 2 or min(pair) < 0:
            raise RelationError(f"pad_width[{axis}] must be two non-negative widths, got "
                                f"{list(pair)}")
        if not isinstance(d, int):
            shape.append(ANY)
            continue
        limit = d - 1 if attrs.mode == "REFLECT" else d
        if max(pair) > limit:
            raise RelationError(f"{attrs.mode} padding of axis {axis} (extent {d}) by "
                                f"{list(pair)}: a width may be at most {limit}")
        shape.append(d + pair[0] + pair[1])
    return TensorType(tuple(shape), data.dtype)


def _mirror_pad(args: Sequence[np.ndarray], attrs: MirrorPadAttrs, out: Type) -> np.ndarray:
    (x,) = args
    widths = [(int(b), int(a)) for b, a in attrs.pad_width]
    if attrs.mode == "REFLECT":
        return as_array(np.pad(x, widths, mode="reflect"), x.dtype)
    return as_array(np.pad(x, widths, mode="symmetric"), x.dtype)


defop("nn.mirror_pad", arity=1, rel=_rel, pattern=PatternKind.INJECTIVE, compute=_mirror_pad,
      doc="the data with mirrored borders (REFLECT or SYMMETRIC)", attrs=MirrorPadAttrs,
      family=FAMILY)

__all__ = ["MirrorPadAttrs"]
