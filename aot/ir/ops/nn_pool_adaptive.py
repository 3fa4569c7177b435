"""Operator family: adaptive pooling — ``nn.adaptive_{avg,max}_pool1d``,
``nn.adaptive_{avg,max}_pool2d`` and ``nn.adaptive_{avg,max}_pool3d``
(Relay's names and attributes).

Semantics (TOPI's ``adaptive_pool``): ``output_size`` gives the spatial
output extent (``W`` for 1-d, ``H W`` for 2-d, ``D H W`` for 3-d; one value stands for all
axes; empty keeps the input's extent).  Output position ``o`` of an axis
of input extent ``n`` and output extent ``m`` pools the input positions
``[floor(o*n/m), ceil((o+1)*n/m))`` -- windows of different sizes that
cover the input, overlapping when ``n`` is not a multiple of ``m``.  The
average divides by the window's size; integers sum exactly and divide
truncating toward zero (as the other integer pools here).  ``layout`` is
any string of distinct upper-case letters containing the spatial ones
(``NCW``/``NWC``, ``NCHW``/``NHWC``, ``NCDHW``/``NDHWC`` ...); ``out_layout`` must be empty or
equal to it.

Pattern kind: out-elemwise-fusable, as Relay.
"""

from __future__ import annotations

from typing import ClassVar, Sequence

from ..attrs import attrs_class
from ..types import Type
from .common import ANY, Attrs, PatternKind, RelationError, TensorType, as_array, defop, np
from .nn_pool_nd import check_pool_layout, pool_data
from .nn_util import trunc_div_int

FAMILY = "nn"
FUSABLE = PatternKind.OUT_ELEMWISE_FUSABLE


def _check(output_size: tuple[int, ...], layout: str, out_layout: str, letters: str) -> None:
    if len(output_size) not in (0, 1, len(letters)):
        raise ValueError(f"output_size needs 0, 1 or {len(letters)} values, "
                         f"got {list(output_size)}")
    if any(v < 1 for v in output_size):
        raise ValueError(f"output_size values must be >= 1, got {list(output_size)}")
    check_pool_layout(layout, letters, "layout")
    if out_layout not in ("", layout):
        raise ValueError(f"out_layout must be empty or equal to layout={layout!r}, "
                         f"got {out_layout!r}")


@attrs_class
class AdaptivePool1DAttrs(Attrs):
    type_key: ClassVar[str] = "AdaptivePool1DAttrs"
    output_size: tuple[int, ...] = ()
    layout: str = "NCW"
    out_layout: str = ""

    def __post_init__(self) -> None:
        _check(self.output_size, self.layout, self.out_layout, "W")


@attrs_class
class AdaptivePool2DAttrs(Attrs):
    type_key: ClassVar[str] = "AdaptivePool2DAttrs"
    output_size: tuple[int, ...] = ()
    layout: str = "NCHW"
    out_layout: str = ""

    def __post_init__(self) -> None:
        _check(self.output_size, self.layout, self.out_layout, "HW")


@attrs_class
class AdaptivePool3DAttrs(Attrs):
    type_key: ClassVar[str] = "AdaptivePool3DAttrs"
    output_size: tuple[int, ...] = ()
    layout: str = "NCDHW"
    out_layout: str = ""

    def __post_init__(self) -> None:
        _check(self.output_size, self.layout, self.out_layout, "DHW")


AdaptiveAttrs = AdaptivePool1DAttrs | AdaptivePool2DAttrs | AdaptivePool3DAttrs


def adaptive_letters(attrs: AdaptiveAttrs) -> str:
    """The pooled axes' letters, in canonical order."""
    if isinstance(attrs, AdaptivePool1DAttrs):
        return "W"
    return "HW" if isinstance(attrs, AdaptivePool2DAttrs) else "DHW"


def adaptive_window(o: int, n: int, m: int) -> tuple[int, int]:
    """The input range ``[start, end)`` of output ``o`` (``n`` inputs,
    ``m`` outputs)."""
    return (o * n) // m, -((-(o + 1) * n) // m)


def _out_sizes(attrs: AdaptiveAttrs, in_sizes: Sequence) -> list:
    letters = adaptive_letters(attrs)
    if not attrs.output_size:
        return list(in_sizes)
    if len(attrs.output_size) == 1:
        return [attrs.output_size[0]] * len(letters)
    return list(attrs.output_size)


def _rel(args: Sequence[Type], attrs: AdaptiveAttrs) -> Type | None:
    data = pool_data(args, attrs.layout)
    if data is None:
        return None
    letters = adaptive_letters(attrs)
    axes = [attrs.layout.index(c) for c in letters]
    shape = list(data.shape)
    for axis, size in zip(axes, _out_sizes(attrs, [data.shape[a] for a in axes])):
        if data.shape[axis] == 0:
            raise RelationError(f"cannot pool over the empty axis {attrs.layout[axis]} "
                                f"of {data}")
        shape[axis] = size if size is not ANY else ANY
    return TensorType(tuple(shape), data.dtype)


def _pool(x: np.ndarray, attrs: AdaptiveAttrs, average: bool) -> np.ndarray:
    letters = adaptive_letters(attrs)
    axes = tuple(attrs.layout.index(c) for c in letters)
    outs = _out_sizes(attrs, [x.shape[a] for a in axes])
    shape = list(x.shape)
    for a, m in zip(axes, outs):
        shape[a] = m
    integer = x.dtype.kind in "iu"
    res = np.empty(shape, dtype=np.int64 if integer and average else
                   (np.float64 if average else x.dtype))
    for pos in np.ndindex(*outs):
        src: list = [slice(None)] * x.ndim
        dst: list = [slice(None)] * x.ndim
        count = 1
        for a, o, m in zip(axes, pos, outs):
            lo, hi = adaptive_window(o, x.shape[a], m)
            src[a], dst[a] = slice(lo, hi), slice(o, o + 1)
            count *= hi - lo
        win = x[tuple(src)]
        if not average:
            res[tuple(dst)] = np.max(win, axis=axes, keepdims=True)
        elif integer:
            res[tuple(dst)] = trunc_div_int(np.sum(win.astype(np.int64), axis=axes,
                                                   keepdims=True), np.asarray(count))
        else:
            res[tuple(dst)] = np.sum(win.astype(np.float64), axis=axes, keepdims=True) / count
    return as_array(res, x.dtype)


def _avg(args: Sequence[np.ndarray], attrs: AdaptiveAttrs, out: Type) -> np.ndarray:
    return _pool(args[0], attrs, True)


def _max(args: Sequence[np.ndarray], attrs: AdaptiveAttrs, out: Type) -> np.ndarray:
    return _pool(args[0], attrs, False)


defop("nn.adaptive_avg_pool1d", arity=1, rel=_rel, pattern=FUSABLE, compute=_avg,
      doc="1-d adaptive average pooling to output_size over W", attrs=AdaptivePool1DAttrs,
      family=FAMILY)
defop("nn.adaptive_max_pool1d", arity=1, rel=_rel, pattern=FUSABLE, compute=_max,
      doc="1-d adaptive max pooling to output_size over W", attrs=AdaptivePool1DAttrs,
      family=FAMILY)
defop("nn.adaptive_avg_pool2d", arity=1, rel=_rel, pattern=FUSABLE, compute=_avg,
      doc="2-d adaptive average pooling to output_size over H and W",
      attrs=AdaptivePool2DAttrs, family=FAMILY)
defop("nn.adaptive_max_pool2d", arity=1, rel=_rel, pattern=FUSABLE, compute=_max,
      doc="2-d adaptive max pooling to output_size over H and W", attrs=AdaptivePool2DAttrs,
      family=FAMILY)
defop("nn.adaptive_avg_pool3d", arity=1, rel=_rel, pattern=FUSABLE, compute=_avg,
      doc="3-d adaptive average pooling to output_size over D, H and W",
      attrs=AdaptivePool3DAttrs, family=FAMILY)
defop("nn.adaptive_max_pool3d", arity=1, rel=_rel, pattern=FUSABLE, compute=_max,
      doc="3-d adaptive max pooling to output_size over D, H and W", attrs=AdaptivePool3DAttrs,
      family=FAMILY)

__all__ = ["AdaptivePool1DAttrs", "AdaptivePool2DAttrs", "AdaptivePool3DAttrs",
           "adaptive_letters", "adaptive_window"]
