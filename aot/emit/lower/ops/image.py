"""Lowering of ``image.resize2d`` and ``nn.upsampling``
(``aot/ir/ops/image.py``): injective operators, so index lowerings -- the
value at an output index is an expression of input reads, fused into
whatever consumes it.

Design note
-----------
The reference builds, per axis, a table of source taps and weights from
the *exact* source coordinate of each output index (a fraction).  In every
coordinate mode that coordinate is affine in the output index ``o``:
``v(o) = (A*o + B) / D`` with integers ``A, B, D`` -- derived here from the
reference's own :func:`~aot.ir.ops.image.source_coordinate` at ``o = 0``
and ``o = 1`` and checked against it at every ``o``.  The kernel computes
the table entries with integer arithmetic, so it reproduces the
reference exactly:

* nearest: ``floor(v + 1/2) = floor((2(A*o + B) + D) / (2D))`` and the
  like for each rounding method (each checked against
  :func:`~aot.ir.ops.image.nearest_index` for every ``o``), clamped to the
  image;
* linear / cubic: ``base = floor(v)`` and the weight parameter
  ``t = r / D`` with ``r = (A*o + B) - base*D``: one division of two
  exactly representable doubles, i.e. the fraction correctly rounded, as
  the reference's ``float(Fraction)``; the Keys weights, ``cubic_exclude``'s
  zeroing and renormalisation and the weighted sums are evaluated in
  double in the reference's order of operations;
* ``tf_crop_and_resize``: outside the image exactly when
  ``A*o + B < 0`` or ``> (in - 1)*D``.

The index arithmetic is int32 when every intermediate fits, else int64.
When even int64 cannot hold it (a region of interest whose floats have
long binary fractions), the per-axis table is computed at lowering time
(the reference's ``axis_table``) and selected by a balanced tree of
comparisons on ``o``.  The H-axis quantities depend only on the output
row, so the C compiler hoists them out of the column loop.

Values are interpolated in double and converted once to the output dtype
(integers: round to nearest, ties to even, then the saturating
conversion); nearest-neighbour copies convert the element directly.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Callable, Sequence

import numpy as np

from ....ir.dtype import DType
from ....ir.ops.nn_util import to_canonical
from ....ir.ops.image import (CoordinateMode, ResizeMethod, RoundingMethod, UpsamplingMethod,
                              axis_table, ResizeGeometry, nearest_index,
                              nearest_rounding, source_coordinate)
from ...kernel import ir as K
from ..registry import ArgValue, Index, LowerContext, TensorValue, index_lowering, out_tensor
from .common import tensor

__all__: list[str] = []

F64 = DType.FLOAT64


@dataclass(frozen=True, slots=True)
class _Affine:
    """``v(o) = (a*o + b) / d`` (``d > 0``) over ``o`` in ``[0, n)``, in
    integer arithmetic of ``dtype``."""

    a: int
    b: int
    d: int
    n: int
    dtype: DType

    def num(self, o: K.Expr) -> K.Expr:
        o = K.cast(self.dtype, o)
        term = o if self.a == 1 else K.mul(o, K.Const(self.a, self.dtype), no_wrap=True)
        if self.a == 0:
            return K.Const(self.b, self.dtype)
        return K.add(term, K.Const(self.b, self.dtype), no_wrap=True) if self.b else term

    def floor(self, o: K.Expr, scale: int = 1, offset: int = 0, ceil: bool = False) -> K.Expr:
        """``floor((scale*(a*o + b) + offset) / (scale*d))`` (``ceil``:
        rounded up instead), in :attr:`dtype`."""
        t = self.dtype
        num = self.num(o)
        if scale != 1:
            num = K.mul(num, K.Const(scale, t), no_wrap=True)
        if offset:
            num = K.add(num, K.Const(offset, t), no_wrap=True)
        den = K.Const(scale * self.d, t)
        if ceil:
            num = K.neg(num)
        lowest = min(self._num_value(x) * scale + offset for x in (0, self.n - 1))
        q = K.div(num, den) if (lowest >= 0 and not ceil) else K.floordiv(num, den)
        return K.neg(q) if ceil else q

    def _num_value(self, o: int) -> int:
        return self.a * o + self.b


def _fit_affine(values: Sequence[Fraction]) -> _Affine | None:
    """The affine form of exact coordinates ``values`` (one per output
    index), or None when its integers do not fit int64."""
    v0 = values[0]
    step = values[1] - v0 if len(values) > 1 else Fraction(0)
    d = math.lcm(v0.denominator, step.denominator)
    a, b = int(step * d), int(v0 * d)
    n = len(values)
    assert all(Fraction(a * o + b, d) == v for o, v in enumerate(values))
    # the largest intermediate: 2*(a*o + b) + 2*d (rounding transforms)
    bound = 2 * (abs(a) * max(n - 1, 0) + abs(b)) + 4 * d
    if bound < 2**31:
        return _Affine(a, b, d, n, DType.INT32)
    if bound < 2**62:
        return _Affine(a, b, d, n, DType.INT64)
    return None


def _select_tree(o: K.Expr, values: Sequence[K.Expr]) -> K.Expr:
    """``values[o]`` by comparisons (``o`` in ``[0, len(values))``)."""
    def tree(lo: int, hi: int) -> K.Expr:
        if hi - lo == 1:
            return values[lo]
        mid = (lo + hi) // 2
        a, b = tree(lo, mid), tree(mid, hi)
        return a if a == b else K.select(K.lt(o, K.const(mid)), a, b)
    return tree(0, len(values))


def _clamp(i: K.Expr, size: int) -> K.Expr:
    """``i`` (int32 or int64) clamped to ``[0, size)``, as int32."""
    zero, top = K.Const(0, i.dtype), K.Const(size - 1, i.dtype)
    i = K.select(K.lt(i, zero), zero, i)
    return K.cast(DType.INT32, K.select(K.lt(top, i), top, i))


@dataclass(frozen=True, slots=True)
class _Taps:
    """One axis: for output index ``o`` the clamped source taps, their
    weights (double; None for nearest) and whether ``o``'s coordinate is
    outside the image."""

    taps: Callable[[K.Expr], list[K.Expr]]
    weights: Callable[[K.Expr], list[K.Expr]] | None
    outside: Callable[[K.Expr], K.Expr]


def _axis(in_size: int, out_size: int, r: ResizeGeometry, start: float, end: float) -> _Taps:
    coords = [source_coordinate(o, in_size, out_size, r.mode, Fraction(start), Fraction(end))
              for o in range(out_size)]
    aff = _fit_affine(coords)
    if aff is None:
        return _table_axis(in_size, out_size, r, start, end)
    rounding = nearest_rounding(r)
    top = (in_size - 1) * aff.d

    def outside(o: K.Expr) -> K.Expr:
        num = aff.num(o)
        return K.logical_or(K.lt(num, K.Const(0, aff.dtype)), K.lt(K.Const(top, aff.dtype), num))

    if r.method is ResizeMethod.NEAREST_NEIGHBOR:
        def nearest(o: K.Expr) -> K.Expr:
            if rounding in (RoundingMethod.ROUND, RoundingMethod.ROUND_PREFER_CEIL):
                return aff.floor(o, 2, aff.d)                 # floor(v + 1/2)
            if rounding is RoundingMethod.ROUND_PREFER_FLOOR:
                return aff.floor(o, 2, -aff.d, ceil=True)     # ceil(v - 1/2)
            return aff.floor(o, ceil=rounding is RoundingMethod.CEIL)
        _check_nearest(aff, coords, rounding)
        return _Taps(lambda o: [_clamp(nearest(o), in_size)], None, outside)

    def base(o: K.Expr) -> K.Expr:
        return aff.floor(o)

    def t(o: K.Expr) -> K.Expr:
        rem = K.sub(aff.num(o), K.mul(base(o), K.Const(aff.d, aff.dtype), no_wrap=True),
                    no_wrap=True)
        return K.div(K.cast(F64, rem), K.Const(aff.d, F64))

    k = 2 if r.method is ResizeMethod.LINEAR else 4
    first = 0 if k == 2 else -1

    def raw(o: K.Expr) -> list[K.Expr]:
        b = base(o)
        return [K.add(b, K.Const(first + i, b.dtype), no_wrap=True) if first + i else b
                for i in range(k)]

    def taps(o: K.Expr) -> list[K.Expr]:
        return [_clamp(i, in_size) for i in raw(o)]

    def weights(o: K.Expr) -> list[K.Expr]:
        tt = t(o)
        if k == 2:
            return [K.sub(K.Const(1.0, F64), tt), tt]
        w = _cubic(tt, r.alpha)
        if not r.exclude:
            return w
        w = [K.select(K.logical_or(K.lt(i, K.Const(0, i.dtype)),
                                   K.lt(K.Const(in_size - 1, i.dtype), i)),
                      K.Const(0.0, F64), wk) for i, wk in zip(raw(o), w)]
        total = K.add(K.add(K.add(w[0], w[1]), w[2]), w[3])
        return [K.div(wk, total) for wk in w]
    return _Taps(taps, weights, outside)


def _check_nearest(aff: _Affine, coords: Sequence[Fraction], rounding: RoundingMethod) -> None:
    """The integer forms used for each rounding method agree with the
    reference at every output index."""
    for o, v in enumerate(coords):
        num = aff.a * o + aff.b
        if rounding in (RoundingMethod.ROUND, RoundingMethod.ROUND_PREFER_CEIL):
            got = (2 * num + aff.d) // (2 * aff.d)
        elif rounding is RoundingMethod.ROUND_PREFER_FLOOR:
            got = -((aff.d - 2 * num) // (2 * aff.d))
        elif rounding is RoundingMethod.CEIL:
            got = -(-num // aff.d)
        else:
            got = num // aff.d
        assert got == nearest_index(v, rounding), (o, v, rounding)


def _cubic(t: K.Expr, alpha: float) -> list[K.Expr]:
    """:func:`~aot.ir.ops.image.cubic_weights` in the same order of
    operations."""
    c = lambda x: K.Const(float(x), F64)  # noqa: E731
    t2 = K.mul(t, t)
    t3 = K.mul(K.mul(t, t), t)
    a = alpha
    return [K.mul(c(a), K.add(K.sub(t3, K.mul(c(2), t2)), t)),
            K.add(K.sub(K.mul(c(a + 2), t3), K.mul(c(3 + a), t2)), c(1)),
            K.sub(K.add(K.mul(c(-(a + 2)), t3), K.mul(c(3 + 2 * a), t2)), K.mul(c(a), t)),
            K.add(K.mul(c(-a), t3), K.mul(c(a), t2))]


def _table_axis(in_size: int, out_size: int, r: ResizeGeometry, start: float, end: float) -> _Taps:
    """The reference's per-axis table, selected by output index."""
    taps, weights, outside = axis_table(in_size, out_size, r, start, end)

    def column(values: np.ndarray, make: Callable) -> Callable[[K.Expr], K.Expr]:
        consts = [make(v) for v in values]
        return lambda o: _select_tree(o, consts)
    tap_fns = [column(taps[:, i], lambda v: K.const(int(v))) for i in range(taps.shape[1])]
    w_fns = [column(weights[:, i], lambda v: K.Const(float(v), F64))
             for i in range(weights.shape[1])]
    out_fn = column(outside, lambda v: K.Const(bool(v), DType.BOOL))
    return _Taps(lambda o: [f(o) for f in tap_fns],
                 None if r.method is ResizeMethod.NEAREST_NEIGHBOR else
                 (lambda o: [f(o) for f in w_fns]), out_fn)


def _weighted_sum(weights: Sequence[K.Expr], terms: Sequence[K.Expr]) -> K.Expr:
    acc = K.mul(weights[0], terms[0])
    for w, x in zip(weights[1:], terms[1:]):
        acc = K.add(acc, K.mul(w, x))
    return acc


def _to_out(value: K.Expr, out: DType) -> K.Expr:
    if out.is_int and value.dtype.is_float:
        value = K.math_call("nearbyint", value)
    return K.cast(out, value)


def _resize(data: TensorValue, layout: str, out_shape: tuple[int, ...], out_dtype: DType,
            r: ResizeGeometry) -> TensorValue:
    _, _, h, w = to_canonical(data.shape, layout, "NCHW")
    _, _, oh, ow = to_canonical(out_shape, layout, "NCHW")
    roi = r.roi
    ay = _axis(h, oh, r, roi[0], roi[2])
    ax = _axis(w, ow, r, roi[1], roi[3])
    pos = {c: layout.index(c) for c in "NCHW"}
    crop = r.mode is CoordinateMode.TF_CROP_AND_RESIZE

    def at(index: Index, y: K.Expr, x: K.Expr) -> K.Expr:
        full = list(index)
        full[pos["H"]], full[pos["W"]] = y, x
        return data.read(tuple(full))

    def read(index: Index) -> K.Expr:
        yo, xo = index[pos["H"]], index[pos["W"]]
        ys, xs = ay.taps(yo), ax.taps(xo)
        if ay.weights is None:
            value = at(index, ys[0], xs[0])
            if not crop:
                return _to_out(value, out_dtype)
            value = K.cast(F64, value)
        else:
            wy, wx = ay.weights(yo), ax.weights(xo)
            rows = [_weighted_sum(wx, [K.cast(F64, at(index, y, x)) for x in xs]) for y in ys]
            value = _weighted_sum(wy, rows)
        if crop:
            value = K.select(K.logical_or(ay.outside(yo), ax.outside(xo)),
                             K.Const(r.extrapolation, F64), value)
        return _to_out(value, out_dtype)

    return TensorValue(out_shape, out_dtype, read)


@index_lowering("image.resize2d")
def _resize2d(ctx: LowerContext, args: Sequence[ArgValue], attrs, out_type):
    t = out_tensor(out_type)
    roi = tuple(attrs.roi) if attrs.roi else (0.0, 0.0, 0.0, 0.0)
    r = ResizeGeometry(attrs.method, attrs.coordinate_transformation_mode, attrs.rounding_method,
                roi, attrs.cubic_alpha, bool(attrs.cubic_exclude),  # type: ignore[arg-type]
                attrs.extrapolation_value)
    return _resize(tensor(args[0]), attrs.layout, tuple(int(d) for d in t.shape), t.dtype, r)


_UPSAMPLING = {
    UpsamplingMethod.NEAREST_NEIGHBOR: ResizeMethod.NEAREST_NEIGHBOR,
    UpsamplingMethod.BILINEAR: ResizeMethod.LINEAR,
    UpsamplingMethod.BICUBIC: ResizeMethod.CUBIC,
}


@index_lowering("nn.upsampling")
def _upsampling(ctx: LowerContext, args: Sequence[ArgValue], attrs, out_type):
    t = out_tensor(out_type)
    mode = CoordinateMode.ALIGN_CORNERS if attrs.align_corners else CoordinateMode.ASYMMETRIC
    r = ResizeGeometry(_UPSAMPLING[attrs.method], mode, RoundingMethod.AUTO, (0.0, 0.0, 0.0, 0.0),
                -0.5, False, 0.0)
    return _resize(tensor(args[0]), attrs.layout, tuple(int(d) for d in t.shape), t.dtype, r)
