"""Data layouts and the ``layout_transform`` operator.

A layout string names the dimensions of a tensor, outermost first, as in
TVM: an upper-case letter is a *primal* axis (``N``, ``C``, ``H``, ``W``,
``O``, ``I``, ...); a lower-case letter preceded by a factor is a
*subordinate* axis that splits its primal axis into blocks
(``NCHW4c``: ``C`` is split into ``C/4`` outer blocks of 4; the full
channel index is ``C_outer * 4 + c``).  Each letter appears at most once
and a subordinate axis needs its primal axis in the same layout.

``layout_transform(data, src_layout, dst_layout)`` moves data between two
layouts with the same primal axes.  Design, in three steps on the array:

1. merge every subordinate axis of ``src`` into its primal axis (a
   transpose that puts each ``c`` right after its ``C``, then a reshape),
   giving the tensor in ``src``'s primal order with full extents;
2. transpose to ``dst``'s primal order;
3. split each primal axis that ``dst`` blocks (a reshape into
   ``(full / f, f)``) and transpose into ``dst``'s axis order.

Only exact blocking is supported: a primal extent must be divisible by
the factor ``dst`` splits it by (TVM would pad with zeros; we reject it in
the type relation), and a subordinate dimension of the input must equal
its factor.  Pattern: injective, as Relay.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..attrs import attrs_class
from typing import ClassVar, Sequence

from ..types import ANY, Dim
from .common import (Attrs, PatternKind, RelationError, TensorType, Type, as_array, defop,
                     np, tensor_arg)
from .shape_util import fmt_shape

FAMILY = "transform"


@dataclass(frozen=True, slots=True)
class Layout:
    """A parsed layout: ``axes`` holds (letter, factor) outermost first;
    the factor is 0 for a primal axis."""

    name: str
    axes: tuple[tuple[str, int], ...]

    @staticmethod
    def parse(text: str) -> Layout:
        """Parse ``text``; ValueError with a message naming the problem."""
        axes: list[tuple[str, int]] = []
        digits = ""
        for ch in text:
            if ch.isdigit():
                digits += ch
            elif ch.isalpha() and ch.isascii():
                if ch.isupper():
                    if digits:
                        raise ValueError(f"layout {text!r}: primal axis {ch} cannot have a "
                                         f"factor ({digits})")
                    axes.append((ch, 0))
                else:
                    if not digits or int(digits) < 1:
                        raise ValueError(f"layout {text!r}: subordinate axis {ch} needs a "
                                         f"positive factor before it (as in 4{ch})")
                    axes.append((ch, int(digits)))
                digits = ""
            else:
                raise ValueError(f"layout {text!r}: unexpected character {ch!r}")
        if digits:
            raise ValueError(f"layout {text!r}: factor {digits} is not followed by an axis")
        letters = [a for a, _ in axes]
        for a in letters:
            if letters.count(a) > 1:
                raise ValueError(f"layout {text!r}: axis {a} appears twice")
            if a.islower() and a.upper() not in letters:
                raise ValueError(f"layout {text!r}: subordinate axis {a} has no primal "
                                 f"axis {a.upper()}")
        return Layout(text, tuple(axes))

    @property
    def ndim(self) -> int:
        return len(self.axes)

    @property
    def primal(self) -> tuple[str, ...]:
        return tuple(a for a, f in self.axes if f == 0)

    def index_of(self, letter: str) -> int:
        for i, (a, _) in enumerate(self.axes):
            if a == letter:
                return i
        return -1

    def factor_of(self, primal: str) -> int:
        """The factor the subordinate axis of ``primal`` splits it by; 0
        when this layout does not split it."""
        for a, f in self.axes:
            if a == primal.lower():
                return f
        return 0


@attrs_class
class LayoutTransformAttrs(Attrs):
    type_key: ClassVar[str] = "LayoutTransformAttrs"
    src_layout: str = ""
    dst_layout: str = ""

    def __post_init__(self) -> None:
        src = Layout.parse(self.src_layout)
        dst = Layout.parse(self.dst_layout)
        if sorted(src.primal) != sorted(dst.primal):
            raise ValueError(f"cannot convert layout {self.src_layout!r} to "
                             f"{self.dst_layout!r}: their primal axes differ")


def _layouts(attrs: LayoutTransformAttrs) -> tuple[Layout, Layout]:
    return Layout.parse(attrs.src_layout), Layout.parse(attrs.dst_layout)


def _div(full: Dim, f: int) -> Dim:
    return full // f if isinstance(full, int) else ANY


def layout_shape(shape: Sequence[Dim], src: Layout, dst: Layout) -> tuple[Dim, ...]:
    """The shape of a tensor of ``shape`` in ``src`` once moved to ``dst``."""
    if len(shape) != src.ndim:
        raise RelationError(f"layout {src.name!r} has {src.ndim} axes but the data has shape "
                            f"{fmt_shape(shape)}")
    full: dict[str, Dim] = {}
    for (letter, factor), d in zip(src.axes, shape):
        if factor and isinstance(d, int) and d != factor:
            raise RelationError(f"axis {factor}{letter} of layout {src.name!r} has extent {d} "
                                f"in data of shape {fmt_shape(shape)}, not {factor}")
        if not factor:
            inner = src.factor_of(letter)
            if not inner:
                full[letter] = d
            else:
                full[letter] = d * inner if isinstance(d, int) else ANY
    out: list[Dim] = []
    for letter, factor in dst.axes:
        if factor:
            out.append(factor)
            continue
        f = dst.factor_of(letter)
        ext = full[letter]
        if f and isinstance(ext, int) and ext % f != 0:
            raise RelationError(f"axis {letter} of extent {ext} cannot be split into blocks of "
                                f"{f} for layout {dst.name!r}")
        out.append(_div(ext, f) if f else ext)
    return tuple(out)


def transform_layout(x: np.ndarray, src: Layout, dst: Layout) -> np.ndarray:
    """Move array ``x`` from layout ``src`` to ``dst`` (see module doc)."""
    # 1. merge subordinate axes: src primal order, full extents
    perm: list[int] = []
    merged: list[int] = []
    for letter in src.primal:
        i = src.index_of(letter)
        perm.append(i)
        extent = x.shape[i]
        j = src.index_of(letter.lower())
        if j >= 0:
            perm.append(j)
            extent *= x.shape[j]
        merged.append(extent)
    y = np.transpose(x, perm).reshape(merged)
    # 2. dst primal order
    y = np.transpose(y, [src.primal.index(letter) for letter in dst.primal])
    # 3. split blocked axes, then order as dst
    split: list[int] = []
    names: list[str] = []
    for letter, full in zip(dst.primal, y.shape):
        f = dst.factor_of(letter)
        if f:
            split += [full // f, f]
            names += [letter, letter.lower()]
        else:
            split.append(full)
            names.append(letter)
    z = y.reshape(split)
    return np.transpose(z, [names.index(letter) for letter, _ in dst.axes]).copy()


def _layout_transform_rel(args: Sequence[Type], attrs: LayoutTransformAttrs) -> Type | None:
    t = tensor_arg(args, 0)
    if t is None:
        return None
    src, dst = _layouts(attrs)
    return TensorType(layout_shape(t.shape, src, dst), t.dtype)


def _layout_transform(args: Sequence[np.ndarray], attrs: LayoutTransformAttrs,
                      out: Type) -> np.ndarray:
    (x,) = args
    src, dst = _layouts(attrs)
    return as_array(transform_layout(x, src, dst), x.dtype)


defop("layout_transform", arity=1, rel=_layout_transform_rel, pattern=PatternKind.INJECTIVE,
      compute=_layout_transform,
      doc="move data between layouts (NCHW <-> NHWC, blocked NCHW4c, OIHW4i4o, ...)",
      attrs=LayoutTransformAttrs, family=FAMILY)

__all__ = ["Layout", "LayoutTransformAttrs", "layout_shape", "transform_layout"]
