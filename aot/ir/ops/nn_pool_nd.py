"""Operator family: 1-d and 3-d pooling — ``nn.max_pool1d``,
``nn.avg_pool1d``, ``nn.max_pool3d``, ``nn.avg_pool3d`` (Relay's names and
attributes).

Semantics are those of the 2-d pools (:mod:`aot.ir.ops.nn_pool`), over the
spatial axes ``W`` (1-d, default layout ``NCW``) or ``D H W`` (3-d, default
``NCDHW``); the layout is any string of distinct upper-case letters
containing them.  ``padding`` has 1 or 2 values for 1-d (``[left,
right]``) and 1, 3 or 6 for 3-d (``[front, top, left, back, bottom,
right]``; 3 values pad both ends alike), as Relay normalises them.  Output
size ``(in + before + after - dilated_kernel) // stride + 1`` (rounded up
with ``ceil_mode``, which adds ``stride - 1`` trailing padding that the
average's ``count_include_pad`` does not count).  Max pooling ignores
padding (a window wholly in it gives the lowest value); the average
divides by the taps inside the input (or the explicitly padded input),
at least 1; integers sum exactly and divide truncating toward zero.

:func:`pool_axes` gives the per-axis window geometry the lowering uses.

Pattern kind: out-elemwise-fusable, as Relay.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from ..attrs import attrs_class
from typing import ClassVar, Sequence

from numpy.lib.stride_tricks import sliding_window_view

from ..types import Dim, Type
from .common import ANY, Attrs, PatternKind, RelationError, TensorType, as_array, defop, np, \
    tensor_arg
from .nn_util import check_padding, check_positive, dilated_extent, trunc_div_int, window_count

FAMILY = "nn"
FUSABLE = PatternKind.OUT_ELEMWISE_FUSABLE


def check_pool_layout(value: str, letters: str, field: str, allow_empty: bool = False) -> None:
    """Distinct upper-case axis letters containing every spatial letter."""
    if allow_empty and value == "":
        return
    if not value.isalpha() or not value.isupper() or len(set(value)) != len(value) \
            or any(c not in value for c in letters):
        raise ValueError(f"{field} must be distinct upper-case axis letters containing "
                         f"{' and '.join(letters)} (packed layouts are not supported), "
                         f"got {value!r}")


def _check_out_layout(layout: str, out_layout: str) -> None:
    if out_layout not in ("", layout):
        raise ValueError(f"out_layout must be empty or equal to layout={layout!r}, "
                         f"got {out_layout!r}")


def _check(a: Attrs, letters: str) -> None:
    n = len(letters)
    counts = (1,) if n == 1 else (1, n)
    check_positive(a.pool_size, "pool_size", counts)  # type: ignore[attr-defined]
    check_positive(a.strides, "strides", counts)  # type: ignore[attr-defined]
    check_positive(a.dilation, "dilation", counts)  # type: ignore[attr-defined]
    check_padding(a.padding, "padding", (1, 2) if n == 1 else (1, 3, 6))  # type: ignore
    check_pool_layout(a.layout, letters, "layout")  # type: ignore[attr-defined]
    _check_out_layout(a.layout, a.out_layout)  # type: ignore[attr-defined]


@attrs_class
class MaxPool1DAttrs(Attrs):
    type_key: ClassVar[str] = "MaxPool1DAttrs"
    pool_size: tuple[int, ...] = (1,)
    strides: tuple[int, ...] = (1,)
    dilation: tuple[int, ...] = (1,)
    padding: tuple[int, ...] = (0,)
    layout: str = "NCW"
    out_layout: str = ""
    ceil_mode: bool = False

    def __post_init__(self) -> None:
        _check(self, "W")


@attrs_class
class AvgPool1DAttrs(Attrs):
    type_key: ClassVar[str] = "AvgPool1DAttrs"
    pool_size: tuple[int, ...] = (1,)
    strides: tuple[int, ...] = (1,)
    dilation: tuple[int, ...] = (1,)
    padding: tuple[int, ...] = (0,)
    layout: str = "NCW"
    out_layout: str = ""
    ceil_mode: bool = False
    count_include_pad: bool = False

    def __post_init__(self) -> None:
        _check(self, "W")


@attrs_class
class MaxPool3DAttrs(Attrs):
    type_key: ClassVar[str] = "MaxPool3DAttrs"
    pool_size: tuple[int, ...] = (1, 1, 1)
    strides: tuple[int, ...] = (1, 1, 1)
    dilation: tuple[int, ...] = (1, 1, 1)
    padding: tuple[int, ...] = (0, 0, 0)
    layout: str = "NCDHW"
    out_layout: str = ""
    ceil_mode: bool = False

    def __post_init__(self) -> None:
        _check(self, "DHW")


@attrs_class
class AvgPool3DAttrs(Attrs):
    type_key: ClassVar[str] = "AvgPool3DAttrs"
    pool_size: tuple[int, ...] = (1, 1, 1)
    strides: tuple[int, ...] = (1, 1, 1)
    dilation: tuple[int, ...] = (1, 1, 1)
    padding: tuple[int, ...] = (0, 0, 0)
    layout: str = "NCDHW"
    out_layout: str = ""
    ceil_mode: bool = False
    count_include_pad: bool = False

    def __post_init__(self) -> None:
        _check(self, "DHW")


PoolNDAttrs = MaxPool1DAttrs | AvgPool1DAttrs | MaxPool3DAttrs | AvgPool3DAttrs


@dataclass(frozen=True, slots=True)
class PoolAxis:
    """One spatial axis of a pooling window."""

    letter: str
    kernel: int
    stride: int
    dilation: int
    before: int
    after: int
    #: the trailing padding ``ceil_mode`` adds (never counted as padding)
    extra: int

    @property
    def dilated(self) -> int:
        return dilated_extent(self.kernel, self.dilation)

    def out_size(self, d: Dim) -> Dim:
        if d is ANY:
            return ANY
        n = window_count(d + self.before + self.after + self.extra,  # type: ignore[operator]
                         self.dilated, self.stride)
        return max(n, 0)

    def taps(self, size: int, include_pad: bool) -> np.ndarray:
        """Per output position, the taps inside the input (or the
        explicitly padded input)."""
        n_out = int(self.out_size(size))  # type: ignore[arg-type]
        start = np.arange(n_out)[:, None] * self.stride - self.before
        taps = start + np.arange(self.kernel)[None, :] * self.dilation
        lo, hi = (-self.before, size + self.after) if include_pad else (0, size)
        return np.sum((taps >= lo) & (taps < hi), axis=1)


def spatial_letters(attrs: Attrs) -> str:
    return "W" if isinstance(attrs, (MaxPool1DAttrs, AvgPool1DAttrs)) else "DHW"


def pool_axes(attrs: PoolNDAttrs) -> list[PoolAxis]:
    """The window geometry per spatial axis, in ``W`` or ``D H W`` order."""
    letters = spatial_letters(attrs)
    n = len(letters)

    def per_axis(v: Sequence[int]) -> tuple[int, ...]:
        return tuple(v) * n if len(v) == 1 else tuple(v)
    p = tuple(attrs.padding)
    if len(p) == 1:
        p = p * 2 * n
    elif len(p) == n:
        p = p * 2
    kernel, strides, dilation = per_axis(attrs.pool_size), per_axis(attrs.strides), \
        per_axis(attrs.dilation)
    return [PoolAxis(c, kernel[i], strides[i], dilation[i], p[i], p[n + i],
                     strides[i] - 1 if attrs.ceil_mode else 0) for i, c in enumerate(letters)]


def pool_data(args: Sequence[Type], layout: str) -> TensorType | None:
    """A pooling operator's data argument, checked against its layout."""
    data = tensor_arg(args, 0, "data")
    if data is None:
        return None
    if data.ndim != len(layout):
        raise RelationError(f"the data has rank {data.ndim} ({data}) but layout="
                            f"{layout!r} needs rank {len(layout)}")
    if data.dtype.is_bool:
        raise RelationError("does not accept bool data")
    return data


def _pool_rel(args: Sequence[Type], attrs: PoolNDAttrs) -> Type | None:
    data = pool_data(args, attrs.layout)
    if data is None:
        return None
    shape = list(data.shape)
    for ax in pool_axes(attrs):
        i = attrs.layout.index(ax.letter)
        size = ax.out_size(data.shape[i])
        if size is not ANY and size < 1:  # type: ignore[operator]
            raise RelationError(
                f"the output would be empty along {ax.letter}: input size {data.shape[i]}, "
                f"pool_size {ax.kernel} (dilated {ax.dilated}), padding "
                f"{[ax.before, ax.after]}, stride {ax.stride}")
        shape[i] = size
    return TensorType(tuple(shape), data.dtype)


def _spatial_last(x: np.ndarray, attrs: PoolNDAttrs) -> tuple[np.ndarray, list[int]]:
    letters = spatial_letters(attrs)
    perm = [i for i, c in enumerate(attrs.layout) if c not in letters] + \
        [attrs.layout.index(c) for c in letters]
    return np.transpose(x, perm), perm


def _windows(x: np.ndarray, axes: list[PoolAxis], fill: object) -> np.ndarray:
    """(..., O1.., K1..) windows over the last ``len(axes)`` axes of ``x``
    padded with ``fill``."""
    n = len(axes)
    pads = [(0, 0)] * (x.ndim - n) + [(a.before, a.after + a.extra) for a in axes]
    xp = np.pad(x, pads, mode="constant", constant_values=fill)  # type: ignore[call-overload]
    win = sliding_window_view(xp, [a.dilated for a in axes], axis=tuple(range(-n, 0)))
    outs = [int(a.out_size(x.shape[x.ndim - n + i])) for i, a in enumerate(axes)]
    lead = (slice(None),) * (x.ndim - n)
    return win[lead + tuple(slice(0, (o - 1) * a.stride + 1, a.stride)
                            for o, a in zip(outs, axes))
               + tuple(slice(None, None, a.dilation) for a in axes)]


def _lowest(dtype: np.dtype) -> object:
    return -np.inf if dtype.kind == "f" else np.iinfo(dtype).min


def _max_pool(args: Sequence[np.ndarray], attrs: PoolNDAttrs, out: Type) -> np.ndarray:
    x, perm = _spatial_last(args[0], attrs)
    axes = pool_axes(attrs)
    n = len(axes)
    res = np.max(_windows(x, axes, _lowest(x.dtype)), axis=tuple(range(-n, 0)))
    return as_array(np.transpose(res, np.argsort(perm)), args[0].dtype)


def _avg_pool(args: Sequence[np.ndarray], attrs: AvgPool1DAttrs | AvgPool3DAttrs,
              out: Type) -> np.ndarray:
    x, perm = _spatial_last(args[0], attrs)
    axes = pool_axes(attrs)
    n = len(axes)
    acc = np.int64 if x.dtype.kind in "iu" else np.float64
    total = np.sum(_windows(x.astype(acc), axes, 0), axis=tuple(range(-n, 0)))
    counts = [a.taps(x.shape[x.ndim - n + i], attrs.count_include_pad)
              for i, a in enumerate(axes)]
    count = np.maximum(functools.reduce(np.multiply.outer, counts), 1)
    count = np.broadcast_to(count, total.shape).astype(np.int64)
    res = trunc_div_int(total, count) if acc is np.int64 else total / count
    return as_array(np.transpose(res, np.argsort(perm)), args[0].dtype)


defop("nn.max_pool1d", arity=1, rel=_pool_rel, pattern=FUSABLE, compute=_max_pool,
      doc="1-d max pooling over W", attrs=MaxPool1DAttrs, family=FAMILY)
defop("nn.avg_pool1d", arity=1, rel=_pool_rel, pattern=FUSABLE, compute=_avg_pool,
      doc="1-d average pooling over W", attrs=AvgPool1DAttrs, family=FAMILY)
defop("nn.max_pool3d", arity=1, rel=_pool_rel, pattern=FUSABLE, compute=_max_pool,
      doc="3-d max pooling over D, H and W", attrs=MaxPool3DAttrs, family=FAMILY)
defop("nn.avg_pool3d", arity=1, rel=_pool_rel, pattern=FUSABLE, compute=_avg_pool,
      doc="3-d average pooling over D, H and W", attrs=AvgPool3DAttrs, family=FAMILY)

__all__ = ["MaxPool1DAttrs", "AvgPool1DAttrs", "MaxPool3DAttrs", "AvgPool3DAttrs", "PoolAxis",
           "pool_axes", "spatial_letters", "check_pool_layout"]
