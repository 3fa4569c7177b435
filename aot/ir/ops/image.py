"""Operator family: image — ``image.resize2d``, and ``nn.upsampling`` (a
resize with a scale factor, kept here because it shares the kernel).

Design note
-----------
A 2-d resize is separable.  For each output axis we build a small table:
for every output index the source taps (clamped to the image, as TOPI
clamps) and their weights — one tap of weight 1 for ``nearest_neighbor``,
two for ``linear``, four for ``cubic``.  The result is the weighted sum over
the taps of both axes.  Source coordinates are computed *exactly*, as
fractions, from the integer sizes (TOPI's exact ``Fraction`` path), so the
nearest index is never off by one through floating-point error:

=========================  ==============================================
coordinate mode            source coordinate of output index ``o``
=========================  ==============================================
``half_pixel``             ``(o + 1/2) * in / out - 1/2``
``align_corners``          ``o * (in - 1) / (out - 1)`` (0 when out = 1)
``asymmetric``             ``o * in / out``
``pytorch_half_pixel``     like half_pixel, 0 when out = 1
``tf_half_pixel_for_nn``   ``(o + 1/2) * in / out``
``tf_crop_and_resize``     ``start*(in-1) + o*(end-start)*(in-1)/(out-1)``
                           with ``roi = [start_h, start_w, end_h, end_w]``
                           (``(start+end)/2*(in-1)`` when out = 1);
                           outside ``[0, in-1]`` gives
                           ``extrapolation_value``
=========================  ==============================================

Nearest rounding (``rounding_method``): ``round`` and
``round_prefer_ceil`` are ``floor(v + 1/2)``, ``round_prefer_floor`` is
``ceil(v - 1/2)``, ``floor``/``ceil`` as named; ``""`` means ``round`` for
``align_corners`` and ``floor`` otherwise (TOPI's choice,
:func:`nearest_rounding`).  Deviation: an ``asymmetric`` nearest resize by
a whole factor ``s = out / in`` takes TOPI's integer-division path,
``o // s``, which floors whatever the rounding method; we apply the
rounding method asked for (as ONNX specifies: ONNX's
``test_resize_upsample_sizes_nearest_round_prefer_ceil_asymmetric``).
The two agree for ``""`` and ``floor``.  The attribute's
default is ``round``, the default of Relay's C++ attrs (what the text
parser fills in); the builder's default is ``""``, the default of Relay's
Python ``relay.image.resize2d`` (the record's ``api_defaults``).  TOPI
floors ``v + 1e-5`` for ``floor``, to absorb float error in its coordinate;
our coordinates are exact fractions, so we floor ``v`` itself (the two
differ only for a ``v`` within 1e-5 below an integer, which needs an
output size above 10^5).

``linear`` interpolates between ``floor(v)`` and ``floor(v) + 1`` with
weight ``t = v - floor(v)`` (the exact fraction rounded once to float64),
as ``(1 - t)*a + t*b`` along W first, then along H; ``cubic`` uses the Keys spline with
``cubic_alpha`` over taps ``floor(v) - 1 .. floor(v) + 2``; with
``cubic_exclude`` taps outside the image get weight 0 and the weights are
renormalised.  Interpolation is computed in float64 and converted once to
``out_dtype``.  A floating-point value converted to an integer
``out_dtype`` is rounded to nearest, ties to even, and saturated.  (TOPI
truncates; but an interpolated value that is mathematically an integer
comes out of floating point as ``160.99999`` or ``161.00001`` depending on
the order of operations, so truncation would make integer results depend
on rounding noise — rounding to nearest does not.)  ``nearest_neighbor``
copies values exactly.

``nn.upsampling`` has output size ``round(in * scale)`` (half to even, as
TVM folds ``round``) and resizes with ``align_corners`` or ``asymmetric``
coordinates (``align_corners`` attribute) and rounding ``""``; its methods
``bilinear``/``bicubic`` are ``linear``/``cubic``.

Both operators are injective.
"""

from __future__ import annotations

import enum
import math
from dataclasses import dataclass

from ..attrs import attrs_class
from fractions import Fraction
from typing import ClassVar, Sequence

from ..types import Dim, Type
from .common import ANY, Attrs, DType, PatternKind, RelationError, TensorType, defop, np, \
    tensor_arg
from .nn_util import (NNAttrs, array_from_canonical, array_to_canonical, cast_result,
                      check_layout, check_rank, from_canonical, to_canonical)
from ..dtype import np_kind

INJ = PatternKind.INJECTIVE


class ResizeMethod(enum.Enum):
    NEAREST_NEIGHBOR = "nearest_neighbor"
    LINEAR = "linear"
    CUBIC = "cubic"


class CoordinateMode(enum.Enum):
    HALF_PIXEL = "half_pixel"
    ALIGN_CORNERS = "align_corners"
    ASYMMETRIC = "asymmetric"
    PYTORCH_HALF_PIXEL = "pytorch_half_pixel"
    TF_HALF_PIXEL_FOR_NN = "tf_half_pixel_for_nn"
    TF_CROP_AND_RESIZE = "tf_crop_and_resize"


class RoundingMethod(enum.Enum):
    AUTO = ""
    ROUND = "round"
    FLOOR = "floor"
    CEIL = "ceil"
    ROUND_PREFER_FLOOR = "round_prefer_floor"
    ROUND_PREFER_CEIL = "round_prefer_ceil"


@attrs_class
class Resize2DAttrs(NNAttrs):
    type_key: ClassVar[str] = "Resize2DAttrs"
    #: output (height, width); required by the relation.
    size: tuple[int, ...] = ()
    roi: tuple[float, ...] = ()
    layout: str = "NCHW"
    method: ResizeMethod = ResizeMethod.LINEAR
    coordinate_transformation_mode: CoordinateMode = CoordinateMode.HALF_PIXEL
    rounding_method: RoundingMethod = RoundingMethod.ROUND
    cubic_alpha: float = -0.5
    cubic_exclude: int = 0
    extrapolation_value: float = 0.0
    out_dtype: DType | None = None

    def __post_init__(self) -> None:
        if self.size and (len(self.size) != 2 or any(s < 1 for s in self.size)):
            raise ValueError(f"size must be two positive integers [height, width], "
                             f"got {list(self.size)}")
        if len(self.roi) not in (0, 4):
            raise ValueError(f"roi must have 4 values [start_h, start_w, end_h, end_w], "
                             f"got {list(self.roi)}")
        if self.cubic_exclude not in (0, 1):
            raise ValueError(f"cubic_exclude must be 0 or 1, got {self.cubic_exclude}")
        check_layout(self.layout, "NCHW", "layout")


class UpsamplingMethod(enum.Enum):
    NEAREST_NEIGHBOR = "nearest_neighbor"
    BILINEAR = "bilinear"
    BICUBIC = "bicubic"


@attrs_class
class UpSamplingAttrs(Attrs):
    type_key: ClassVar[str] = "UpSamplingAttrs"
    scale_h: float = 1.0
    scale_w: float = 1.0
    layout: str = "NCHW"
    method: UpsamplingMethod = UpsamplingMethod.NEAREST_NEIGHBOR
    align_corners: bool = False

    def __post_init__(self) -> None:
        if not (self.scale_h > 0 and self.scale_w > 0):
            raise ValueError(f"scale_h and scale_w must be positive, got "
                             f"{self.scale_h} and {self.scale_w}")
        check_layout(self.layout, "NCHW", "layout")


# ----------------------------------------------------------- axis tables

@dataclass(frozen=True, slots=True)
class ResizeGeometry:
    """Everything the kernel needs, independent of the attrs class."""

    method: ResizeMethod
    mode: CoordinateMode
    rounding: RoundingMethod
    roi: tuple[float, float, float, float]
    alpha: float
    exclude: bool
    extrapolation: float


def source_coordinate(o: int, in_size: int, out_size: int, mode: CoordinateMode,
                      start: Fraction = Fraction(0), end: Fraction = Fraction(1)) -> Fraction:
    """Exact source coordinate of output index ``o`` along one axis."""
    scale = Fraction(in_size, out_size)
    half = Fraction(1, 2)
    if mode is CoordinateMode.HALF_PIXEL:
        return (o + half) * scale - half
    if mode is CoordinateMode.PYTORCH_HALF_PIXEL:
        return (o + half) * scale - half if out_size > 1 else Fraction(0)
    if mode is CoordinateMode.ALIGN_CORNERS:
        return Fraction(o * (in_size - 1), out_size - 1) if out_size > 1 else Fraction(0)
    if mode is CoordinateMode.ASYMMETRIC:
        return o * scale
    if mode is CoordinateMode.TF_HALF_PIXEL_FOR_NN:
        return (o + half) * scale
    assert mode is CoordinateMode.TF_CROP_AND_RESIZE, mode
    if out_size > 1:
        return start * (in_size - 1) + Fraction(o * (in_size - 1), out_size - 1) * (end - start)
    return (start + end) / 2 * (in_size - 1)


def nearest_index(v: Fraction, rounding: RoundingMethod) -> int:
    if rounding in (RoundingMethod.ROUND, RoundingMethod.ROUND_PREFER_CEIL):
        return math.floor(v + Fraction(1, 2))
    if rounding is RoundingMethod.ROUND_PREFER_FLOOR:
        return math.ceil(v - Fraction(1, 2))
    if rounding is RoundingMethod.FLOOR:
        return math.floor(v)
    assert rounding is RoundingMethod.CEIL, rounding
    return math.ceil(v)


def nearest_rounding(r: ResizeGeometry) -> RoundingMethod:
    """The rounding ``nearest_neighbor`` applies: ``""`` is TOPI's choice
    (``round`` for ``align_corners``, else ``floor``)."""
    if r.rounding is RoundingMethod.AUTO:
        return (RoundingMethod.ROUND if r.mode is CoordinateMode.ALIGN_CORNERS
                else RoundingMethod.FLOOR)
    return r.rounding


def cubic_weights(t: float, alpha: float) -> list[float]:
    t2, t3 = t * t, t * t * t
    return [alpha * (t3 - 2 * t2 + t),
            (alpha + 2) * t3 - (3 + alpha) * t2 + 1,
            -(alpha + 2) * t3 + (3 + 2 * alpha) * t2 - alpha * t,
            -alpha * t3 + alpha * t2]


def axis_table(in_size: int, out_size: int, r: ResizeGeometry, start: float,
                end: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(taps, weights, outside) for one axis: int64 (out, k) source indices
    clamped to the image, float64 (out, k) weights and a bool (out,) mask of
    coordinates outside the image (used by ``tf_crop_and_resize``)."""
    rounding = nearest_rounding(r)
    taps: list[list[int]] = []
    weights: list[list[float]] = []
    outside: list[bool] = []
    fstart, fend = Fraction(start), Fraction(end)
    for o in range(out_size):
        v = source_coordinate(o, in_size, out_size, r.mode, fstart, fend)
        outside.append(v < 0 or v > in_size - 1)
        if r.method is ResizeMethod.NEAREST_NEIGHBOR:
            taps.append([nearest_index(v, rounding)])
            weights.append([1.0])
            continue
        base = math.floor(v)
        t = float(v - base)
        if r.method is ResizeMethod.LINEAR:
            taps.append([base, base + 1])
            weights.append([1.0 - t, t])
            continue
        idx = [base - 1 + k for k in range(4)]
        w = cubic_weights(t, r.alpha)
        if r.exclude:
            w = [0.0 if (i < 0 or i > in_size - 1) else wk for i, wk in zip(idx, w)]
            total = sum(w)
            w = [wk / total for wk in w]
        taps.append(idx)
        weights.append(w)
    tap_arr = np.clip(np.array(taps, dtype=np.int64), 0, in_size - 1)
    return tap_arr, np.array(weights, dtype=np.float64), np.array(outside, dtype=bool)


def _weighted_sum(weights: np.ndarray, terms: list[np.ndarray]) -> np.ndarray:
    """``w0*t0 + w1*t1 + ...`` left to right (TOPI's order)."""
    acc = weights[0] * terms[0]
    for w, t in zip(weights[1:], terms[1:]):
        acc = acc + w * t
    return acc


def _interpolate(x: np.ndarray, ty: np.ndarray, wy: np.ndarray, tx: np.ndarray,
                 wx: np.ndarray) -> np.ndarray:
    """Separable interpolation in float64 with a fixed order of operations:
    each source row is first interpolated along W, then the rows along H —
    for linear exactly TOPI's ``lerp(lerp(p00, p01, tx), lerp(p10, p11,
    tx), ty)`` with ``lerp(a, b, t) = (1 - t)*a + t*b``."""
    rows = []
    for j in range(ty.shape[1]):
        row = x[..., ty[:, j], :]  # (..., OH, W)
        rows.append(_weighted_sum([wx[:, i] for i in range(wx.shape[1])],
                                  [row[..., tx[:, i]] for i in range(tx.shape[1])]))
    return _weighted_sum([wy[:, j][:, None] for j in range(wy.shape[1])], rows)


def resize_nchw(x: np.ndarray, out_h: int, out_w: int, r: ResizeGeometry,
                out_dtype: DType) -> np.ndarray:
    """Resize the last two axes of ``x`` to ``(out_h, out_w)``."""
    h, w = x.shape[-2], x.shape[-1]
    roi = r.roi
    ty, wy, oy = axis_table(h, out_h, r, roi[0], roi[2])
    tx, wx, ox = axis_table(w, out_w, r, roi[1], roi[3])
    if r.method is ResizeMethod.NEAREST_NEIGHBOR:
        value = x[..., ty[:, 0][:, None], tx[:, 0][None, :]]
        if r.mode is not CoordinateMode.TF_CROP_AND_RESIZE:
            return _to_out(value, out_dtype)
        value = value.astype(np.float64)
    else:
        value = _interpolate(x.astype(np.float64), ty, wy, tx, wx)
    if r.mode is CoordinateMode.TF_CROP_AND_RESIZE:
        mask = oy[:, None] | ox[None, :]
        value = np.where(mask, r.extrapolation, value)
    return _to_out(value, out_dtype)


def _to_out(value: np.ndarray, out_dtype: DType) -> np.ndarray:
    """Floats to an integer type round to nearest (ties to even) and
    saturate; everything else casts as :func:`cast_result`."""
    if out_dtype.is_int and np_kind(value.dtype) == "f":
        value = np.rint(value)
    return cast_result(value, out_dtype)


# ---------------------------------------------------------------- resize2d

def _resize2d_rel(args: Sequence[Type], attrs: Resize2DAttrs) -> Type | None:
    data = tensor_arg(args, 0, "data")
    if data is None:
        return None
    check_rank(data, attrs.layout, "the data", "layout")
    if not attrs.size:
        raise RelationError("needs the output size attribute size=[height, width]")
    if data.dtype.is_bool or (attrs.out_dtype is not None and attrs.out_dtype.is_bool):
        raise RelationError("does not accept bool tensors")
    n, c, _, _ = to_canonical(data.shape, attrs.layout, "NCHW")
    shape = from_canonical((n, c, attrs.size[0], attrs.size[1]), attrs.layout, "NCHW")
    return TensorType(shape, attrs.out_dtype or data.dtype)


def _resize2d(args: Sequence[np.ndarray], attrs: Resize2DAttrs, out: Type) -> np.ndarray:
    assert isinstance(out, TensorType), out
    roi = attrs.roi or (0.0, 0.0, 0.0, 0.0)
    r = ResizeGeometry(attrs.method, attrs.coordinate_transformation_mode, attrs.rounding_method,
                roi, attrs.cubic_alpha, bool(attrs.cubic_exclude),  # type: ignore[arg-type]
                attrs.extrapolation_value)
    x = array_to_canonical(args[0], attrs.layout, "NCHW")
    res = resize_nchw(x, attrs.size[0], attrs.size[1], r, out.dtype)
    return array_from_canonical(res, attrs.layout, "NCHW")


defop("image.resize2d", arity=1, rel=_resize2d_rel, pattern=INJ, compute=_resize2d,
      doc="resize H and W to size (nearest_neighbor, linear or cubic)", attrs=Resize2DAttrs,
      family="image", api_defaults=Resize2DAttrs(rounding_method=RoundingMethod.AUTO))


# -------------------------------------------------------------- upsampling

def _scaled(d: Dim, scale: float) -> Dim:
    return ANY if d is ANY else int(round(d * scale))  # type: ignore[operator]


def _upsampling_rel(args: Sequence[Type], attrs: UpSamplingAttrs) -> Type | None:
    data = tensor_arg(args, 0, "data")
    if data is None:
        return None
    check_rank(data, attrs.layout, "the data", "layout")
    if data.dtype.is_bool:
        raise RelationError("does not accept bool tensors")
    n, c, h, w = to_canonical(data.shape, attrs.layout, "NCHW")
    oh, ow = _scaled(h, attrs.scale_h), _scaled(w, attrs.scale_w)
    for name, d, o, s in (("H", h, oh, attrs.scale_h), ("W", w, ow, attrs.scale_w)):
        if o is not ANY and o < 1:  # type: ignore[operator]
            raise RelationError(f"the output would be empty along {name}: {d} * {s} rounds "
                                f"to {o}")
    return TensorType(from_canonical((n, c, oh, ow), attrs.layout, "NCHW"), data.dtype)


_UPSAMPLING_METHOD = {
    UpsamplingMethod.NEAREST_NEIGHBOR: ResizeMethod.NEAREST_NEIGHBOR,
    UpsamplingMethod.BILINEAR: ResizeMethod.LINEAR,
    UpsamplingMethod.BICUBIC: ResizeMethod.CUBIC,
}


def _upsampling(args: Sequence[np.ndarray], attrs: UpSamplingAttrs, out: Type) -> np.ndarray:
    assert isinstance(out, TensorType), out
    mode = CoordinateMode.ALIGN_CORNERS if attrs.align_corners else CoordinateMode.ASYMMETRIC
    r = ResizeGeometry(_UPSAMPLING_METHOD[attrs.method], mode, RoundingMethod.AUTO,
                (0.0, 0.0, 0.0, 0.0), -0.5, False, 0.0)
    x = array_to_canonical(args[0], attrs.layout, "NCHW")
    oh, ow = to_canonical(out.shape, attrs.layout, "NCHW")[2:]
    res = resize_nchw(x, oh, ow, r, out.dtype)
    return array_from_canonical(res, attrs.layout, "NCHW")


defop("nn.upsampling", arity=1, rel=_upsampling_rel, pattern=INJ, compute=_upsampling,
      doc="scale H and W by scale_h/scale_w (nearest_neighbor, bilinear or bicubic)",
      attrs=UpSamplingAttrs, family="nn")

__all__ = ["Resize2DAttrs", "UpSamplingAttrs", "ResizeMethod", "CoordinateMode",
           "RoundingMethod", "UpsamplingMethod", "resize_nchw", "source_coordinate",
           "nearest_index", "nearest_rounding", "cubic_weights"]
