"""Operator family: nn pooling — ``nn.max_pool2d``, ``nn.avg_pool2d``,
``nn.global_max_pool2d``, ``nn.global_avg_pool2d``.

Semantics (TOPI's ``pool_impl_nd``, written down):

* ``layout`` names the axes (any distinct upper-case letters containing H
  and W, e.g. ``NCHW``, ``NHWC``); pooling runs over H and W only.
  ``out_layout`` must be empty or equal to ``layout`` (Relay's pooling
  does not transpose).
* ``padding`` has 1, 2 or 4 values (``[top, left, bottom, right]``).  The
  output size is ``(in + pad_before + pad_after - dilated_kernel) // stride
  + 1``; with ``ceil_mode`` the division rounds up (TOPI adds
  ``stride - 1`` to the trailing padding).  An empty output is an error.
* Max pooling ignores padding: a window lying wholly in the padding gives
  the dtype's lowest value (``-inf`` for floats).
* Average pooling divides the window sum by the number of taps counted:
  with ``count_include_pad`` the taps inside the padded input (the extra
  ``ceil_mode`` padding excluded), otherwise the taps inside the input; a
  window without any counted tap gives 0.  Floats sum in float64; integers
  sum exactly in int64 and divide truncating toward zero (TOPI sums in the
  input type, which can overflow; we do not).
* Global pooling reduces H and W to 1; the integer average truncates.

Pattern kind: out-elemwise-fusable for all four, as Relay.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..attrs import attrs_class
from typing import ClassVar, Sequence

from ..types import Dim, Type
from .common import (ANY, Attrs, DType, PatternKind, RelationError, TensorType, as_array, defop,
                     np, tensor_arg)
from .nn_util import (check_padding, check_positive, check_spatial_layout, dilated_extent,
                      padding_2d, pair, strided_windows, trunc_div_int, window_count)
from ..dtype import np_kind

FAMILY = "nn"
FUSABLE = PatternKind.OUT_ELEMWISE_FUSABLE


@attrs_class
class MaxPool2DAttrs(Attrs):
    type_key: ClassVar[str] = "MaxPool2DAttrs"
    pool_size: tuple[int, ...] = (1, 1)
    strides: tuple[int, ...] = (1, 1)
    dilation: tuple[int, ...] = (1, 1)
    padding: tuple[int, ...] = (0, 0)
    layout: str = "NCHW"
    out_layout: str = ""
    ceil_mode: bool = False

    def __post_init__(self) -> None:
        _check_pool_attrs(self)


@attrs_class
class AvgPool2DAttrs(Attrs):
    type_key: ClassVar[str] = "AvgPool2DAttrs"
    pool_size: tuple[int, ...] = (1, 1)
    strides: tuple[int, ...] = (1, 1)
    dilation: tuple[int, ...] = (1, 1)
    padding: tuple[int, ...] = (0, 0)
    layout: str = "NCHW"
    out_layout: str = ""
    ceil_mode: bool = False
    count_include_pad: bool = False

    def __post_init__(self) -> None:
        _check_pool_attrs(self)


@attrs_class
class GlobalPool2DAttrs(Attrs):
    type_key: ClassVar[str] = "GlobalPool2DAttrs"
    layout: str = "NCHW"
    out_layout: str = ""

    def __post_init__(self) -> None:
        check_spatial_layout(self.layout, "layout")
        _check_out_layout(self.layout, self.out_layout)


def _check_out_layout(layout: str, out_layout: str) -> None:
    if out_layout not in ("", layout):
        raise ValueError(f"out_layout must be empty or equal to layout={layout!r}, "
                         f"got {out_layout!r}")


def _check_pool_attrs(a: MaxPool2DAttrs | AvgPool2DAttrs) -> None:
    check_positive(a.pool_size, "pool_size", (1, 2))
    check_positive(a.strides, "strides", (1, 2))
    check_positive(a.dilation, "dilation", (1, 2))
    check_padding(a.padding, "padding", (1, 2, 4))
    check_spatial_layout(a.layout, "layout")
    _check_out_layout(a.layout, a.out_layout)


@dataclass(frozen=True, slots=True)
class _Window:
    """Per spatial axis (H then W): kernel, stride, dilation, padding."""

    kernel: tuple[int, int]
    stride: tuple[int, int]
    dilation: tuple[int, int]
    pad_before: tuple[int, int]
    pad_after: tuple[int, int]
    ceil_mode: bool

    @staticmethod
    def of(a: MaxPool2DAttrs | AvgPool2DAttrs) -> _Window:
        top, left, bottom, right = padding_2d(a.padding)
        return _Window(pair(a.pool_size), pair(a.strides), pair(a.dilation), (top, left),
                       (bottom, right), a.ceil_mode)

    def dilated(self, i: int) -> int:
        return dilated_extent(self.kernel[i], self.dilation[i])

    def extra(self, i: int) -> int:
        """The trailing padding ``ceil_mode`` adds."""
        return self.stride[i] - 1 if self.ceil_mode else 0

    def out_size(self, i: int, d: Dim) -> Dim:
        if d is ANY:
            return ANY
        pads = self.pad_before[i] + self.pad_after[i] + self.extra(i)
        n = window_count(d + pads, self.dilated(i), self.stride[i])  # type: ignore[operator]
        return max(n, 0)  # 0 when no window fits


def _pool_data(args: Sequence[Type], layout: str) -> TensorType | None:
    """The data argument of a pooling operator (None while unknown): a
    non-bool tensor whose rank matches ``layout``."""
    data = tensor_arg(args, 0, "data")
    if data is None:
        return None
    if data.ndim != len(layout):
        raise RelationError(f"the data has rank {data.ndim} ({data}) but layout="
                            f"{layout!r} needs rank {len(layout)}")
    if data.dtype.is_bool:
        raise RelationError("does not accept bool data")
    return data


def _pool_rel(args: Sequence[Type], attrs: MaxPool2DAttrs | AvgPool2DAttrs) -> Type | None:
    data = _pool_data(args, attrs.layout)
    if data is None:
        return None
    win = _Window.of(attrs)
    shape = list(data.shape)
    for i, letter in enumerate("HW"):
        axis = attrs.layout.index(letter)
        size = win.out_size(i, data.shape[axis])
        if size is not ANY and size < 1:  # type: ignore[operator]
            raise RelationError(
                f"the output would be empty along {letter}: input size {data.shape[axis]}, "
                f"pool_size {win.kernel[i]} (dilated {win.dilated(i)}), padding "
                f"{[win.pad_before[i], win.pad_after[i]]}, stride {win.stride[i]}")
        shape[axis] = size
    return TensorType(tuple(shape), data.dtype)


def _lowest(dtype: np.dtype) -> object:
    if np_kind(dtype) == "f":
        return np.asarray(DType.from_numpy(dtype).lowest).astype(dtype)[()]
    return np.asarray(DType.from_numpy(dtype).min).astype(dtype)[()]


def _windows(x: np.ndarray, win: _Window, fill: object) -> np.ndarray:
    """(..., OH, OW, KH, KW) windows of canonical (..., H, W) ``x`` padded
    with ``fill``."""
    pads = [(0, 0)] * (x.ndim - 2) + [(win.pad_before[i], win.pad_after[i] + win.extra(i))
                                      for i in range(2)]
    xp = np.pad(x, pads, mode="constant", constant_values=fill)
    return strided_windows(xp, win.kernel, win.stride, win.dilation)


def _tap_counts(win: _Window, i: int, size: int, include_pad: bool) -> np.ndarray:
    """Number of taps of each output window along spatial axis ``i`` that
    fall inside the input (or the padded input)."""
    n_out = win.out_size(i, size)
    start = np.arange(n_out)[:, None] * win.stride[i] - win.pad_before[i]  # type: ignore[operator]
    taps = start + np.arange(win.kernel[i])[None, :] * win.dilation[i]
    lo, hi = (-win.pad_before[i], size + win.pad_after[i]) if include_pad else (0, size)
    return np.sum((taps >= lo) & (taps < hi), axis=1)


def _hw_axes(layout: str) -> tuple[int, int]:
    return (layout.index("H"), layout.index("W"))


def _to_hw_last(x: np.ndarray, layout: str) -> tuple[np.ndarray, list[int]]:
    """Move H and W to the last two axes; returns the permutation used."""
    perm = [i for i, c in enumerate(layout) if c not in "HW"] + list(_hw_axes(layout))
    return np.transpose(x, perm), perm


def _from_hw_last(x: np.ndarray, perm: list[int]) -> np.ndarray:
    return np.transpose(x, np.argsort(perm))


def _max_pool2d(args: Sequence[np.ndarray], attrs: MaxPool2DAttrs, out: Type) -> np.ndarray:
    x, perm = _to_hw_last(args[0], attrs.layout)
    win = _Window.of(attrs)
    res = np.max(_windows(x, win, _lowest(x.dtype)), axis=(-2, -1))
    return as_array(_from_hw_last(res, perm), args[0].dtype)


def avg_pool_sums(x: np.ndarray, attrs: AvgPool2DAttrs) -> tuple[np.ndarray, np.ndarray]:
    """The window sums of average pooling (int64 for integer ``x``,
    float64 otherwise; padding adds 0) and their divisors (at least 1,
    broadcast to the sums' shape), in ``attrs.layout``."""
    xt, perm = _to_hw_last(x, attrs.layout)
    win = _Window.of(attrs)
    acc = np.int64 if np_kind(xt.dtype) in "iu" else np.float64
    total = np.sum(_windows(xt.astype(acc), win, 0), axis=(-2, -1))
    h, w = xt.shape[-2], xt.shape[-1]
    count = np.outer(_tap_counts(win, 0, h, attrs.count_include_pad),
                     _tap_counts(win, 1, w, attrs.count_include_pad))
    count = np.broadcast_to(np.maximum(count, 1), total.shape).astype(np.int64)
    return _from_hw_last(total, perm), _from_hw_last(count, perm)


def _avg_pool2d(args: Sequence[np.ndarray], attrs: AvgPool2DAttrs, out: Type) -> np.ndarray:
    total, count = avg_pool_sums(args[0], attrs)
    if total.dtype == np.int64:
        res = trunc_div_int(total, count)
    else:
        res = total / count
    return as_array(res, args[0].dtype)


def _global_pool_rel(args: Sequence[Type], attrs: GlobalPool2DAttrs) -> Type | None:
    data = _pool_data(args, attrs.layout)
    if data is None:
        return None
    shape = list(data.shape)
    for letter in "HW":
        axis = attrs.layout.index(letter)
        if data.shape[axis] == 0:
            raise RelationError(f"cannot pool over the empty axis {letter} of {data}")
        shape[axis] = 1
    return TensorType(tuple(shape), data.dtype)


def _global_max_pool2d(args: Sequence[np.ndarray], attrs: GlobalPool2DAttrs,
                       out: Type) -> np.ndarray:
    (x,) = args
    return as_array(np.max(x, axis=_hw_axes(attrs.layout), keepdims=True), x.dtype)


def _global_avg_pool2d(args: Sequence[np.ndarray], attrs: GlobalPool2DAttrs,
                       out: Type) -> np.ndarray:
    (x,) = args
    axes = _hw_axes(attrs.layout)
    count = x.shape[axes[0]] * x.shape[axes[1]]
    if np_kind(x.dtype) in "iu":
        total = np.sum(x.astype(np.int64), axis=axes, keepdims=True)
        return as_array(trunc_div_int(total, count), x.dtype)
    total = np.sum(x.astype(np.float64), axis=axes, keepdims=True)
    return as_array(total / count, x.dtype)


defop("nn.max_pool2d", arity=1, rel=_pool_rel, pattern=FUSABLE, compute=_max_pool2d,
      doc="2-d max pooling over H and W", attrs=MaxPool2DAttrs, family=FAMILY)
defop("nn.avg_pool2d", arity=1, rel=_pool_rel, pattern=FUSABLE, compute=_avg_pool2d,
      doc="2-d average pooling over H and W", attrs=AvgPool2DAttrs, family=FAMILY)
defop("nn.global_max_pool2d", arity=1, rel=_global_pool_rel, pattern=FUSABLE,
      compute=_global_max_pool2d, doc="max over all of H and W", attrs=GlobalPool2DAttrs,
      family=FAMILY)
defop("nn.global_avg_pool2d", arity=1, rel=_global_pool_rel, pattern=FUSABLE,
      compute=_global_avg_pool2d, doc="mean over all of H and W", attrs=GlobalPool2DAttrs,
      family=FAMILY)

__all__ = ["MaxPool2DAttrs", "AvgPool2DAttrs", "GlobalPool2DAttrs", "avg_pool_sums"]
