"""image.resize2d and nn.upsampling against a per-pixel reference written
from TOPI's formulas (exact source coordinates, float64 interpolation in
TOPI's order, so integer results compare exactly), plus hand-checked small
cases and relations."""

from __future__ import annotations

import itertools
import math
from fractions import Fraction as F

import numpy as np
import pytest

from aot.ir.attrs import AttrError
from aot.ir.registry import PatternKind, RelationError
from aot.ir.types import ANY
from cases import image
from nn_helpers import T, assert_close, get, infer, run, sample

RNG = np.random.default_rng(4)


def coord(o, size_in, size_out, mode, start=0.0, end=0.0):
    """The source coordinate, exactly (the documented contract: fractions,
    with interpolation weights rounded once to float64)."""
    scale = F(size_in, size_out)
    half = F(1, 2)
    start, end = F(start), F(end)
    if mode == "half_pixel":
        return (o + half) * scale - half
    if mode == "pytorch_half_pixel":
        return (o + half) * scale - half if size_out > 1 else F(0)
    if mode == "align_corners":
        return o * F(size_in - 1, size_out - 1) if size_out > 1 else F(0)
    if mode == "asymmetric":
        return o * scale
    if mode == "tf_half_pixel_for_nn":
        return (o + half) * scale
    assert mode == "tf_crop_and_resize"
    if size_out > 1:
        return start * (size_in - 1) + o * (end - start) * F(size_in - 1, size_out - 1)
    return half * (start + end) * (size_in - 1)


def nearest(v, rounding, mode):
    if rounding == "":
        rounding = "round" if mode == "align_corners" else "floor"
    if rounding in ("round", "round_prefer_ceil"):
        return math.floor(v + F(1, 2))
    if rounding == "round_prefer_floor":
        return math.ceil(v - F(1, 2))
    return math.floor(v) if rounding == "floor" else math.ceil(v)


def spline(t, a):
    return [a * (t ** 3 - 2 * t ** 2 + t), (a + 2) * t ** 3 - (3 + a) * t ** 2 + 1,
            -(a + 2) * t ** 3 + (3 + 2 * a) * t ** 2 - a * t, -a * t ** 3 + a * t ** 2]


def resize_ref(x, size, method, mode, rounding="round", alpha=-0.5, exclude=0, roi=(0, 0, 0, 0),
               extrapolation=0.0, out_dtype=None):
    """NCHW, one output pixel at a time."""
    n, c, h, w = x.shape
    oh, ow = size
    out_dtype = np.dtype(out_dtype or x.dtype)
    out = np.zeros((n, c, oh, ow), dtype=np.float64)

    def px(b, ch, yy, xx):
        return float(x[b, ch, min(max(yy, 0), h - 1), min(max(xx, 0), w - 1)])

    for b, ch, y, xo in itertools.product(range(n), range(c), range(oh), range(ow)):
        vy = coord(y, h, oh, mode, roi[0], roi[2])
        vx = coord(xo, w, ow, mode, roi[1], roi[3])
        if method == "nearest_neighbor":
            val = px(b, ch, nearest(vy, rounding, mode), nearest(vx, rounding, mode))
        elif method == "linear":
            y0, x0 = math.floor(vy), math.floor(vx)
            ty, tx = float(vy - y0), float(vx - x0)
            top = (1 - tx) * px(b, ch, y0, x0) + tx * px(b, ch, y0, x0 + 1)
            bot = (1 - tx) * px(b, ch, y0 + 1, x0) + tx * px(b, ch, y0 + 1, x0 + 1)
            val = (1 - ty) * top + ty * bot
        else:
            y0, x0 = math.floor(vy), math.floor(vx)
            wy, wx = spline(float(vy - y0), alpha), spline(float(vx - x0), alpha)
            if exclude:
                wy = [0.0 if not 0 <= y0 - 1 + k <= h - 1 else v for k, v in enumerate(wy)]
                wx = [0.0 if not 0 <= x0 - 1 + k <= w - 1 else v for k, v in enumerate(wx)]
                wy = [v / sum(wy) for v in wy]
                wx = [v / sum(wx) for v in wx]
            val = sum(wy[j] * wx[i] * px(b, ch, y0 - 1 + j, x0 - 1 + i)
                      for j in range(4) for i in range(4))
        if mode == "tf_crop_and_resize" and (vy < 0 or vy > h - 1 or vx < 0 or vx > w - 1):
            val = extrapolation
        out[b, ch, y, xo] = val
    if out_dtype.kind in "iu":   # round to nearest, ties to even, saturating
        info = np.iinfo(out_dtype)
        return np.clip(np.rint(out), info.min, info.max).astype(out_dtype)
    return out.astype(out_dtype)


@pytest.mark.parametrize("mode", image.MODES)
@pytest.mark.parametrize("in_hw,out_hw", image.SIZES)
@pytest.mark.parametrize("rounding", image.ROUNDINGS)
def test_resize2d_nearest(mode, in_hw, out_hw, rounding):
    x = sample(RNG, (1, 2, *in_hw), "float32")
    got = run("image.resize2d", x, size=list(out_hw), method="nearest_neighbor",
              coordinate_transformation_mode=mode, rounding_method=rounding)
    rounding_eff = rounding
    assert_close(got, resize_ref(x, out_hw, "nearest_neighbor", mode, rounding_eff))


@pytest.mark.parametrize("mode", image.MODES)
@pytest.mark.parametrize("in_hw,out_hw", image.SIZES)
@pytest.mark.parametrize("dtype", ["float32", "uint8"])
def test_resize2d_linear(mode, in_hw, out_hw, dtype):
    x = sample(RNG, (2, 1, *in_hw), dtype, 0, 255)
    got = run("image.resize2d", x, size=list(out_hw), method="linear",
              coordinate_transformation_mode=mode)
    assert_close(got, resize_ref(x, out_hw, "linear", mode))


@pytest.mark.parametrize("mode", image.CUBIC_MODES)
@pytest.mark.parametrize("in_hw,out_hw", image.CUBIC_SIZES)
@pytest.mark.parametrize("alpha,exclude", image.CUBIC_PARAMS)
def test_resize2d_cubic(mode, in_hw, out_hw, alpha, exclude):
    x = sample(RNG, (1, 2, *in_hw), "float64")
    got = run("image.resize2d", x, size=list(out_hw), method="cubic",
              coordinate_transformation_mode=mode, cubic_alpha=alpha, cubic_exclude=exclude)
    assert_close(got, resize_ref(x, out_hw, "cubic", mode, alpha=alpha, exclude=exclude))


@pytest.mark.parametrize("method", ["nearest_neighbor", "linear"])
def test_resize2d_tf_crop_and_resize(method):
    x = sample(RNG, (1, 1, 5, 6), "float32")
    roi = [0.25, -0.5, 1.25, 0.75]   # partly outside the image: extrapolated
    got = run("image.resize2d", x, size=[4, 5], roi=roi, method=method,
              coordinate_transformation_mode="tf_crop_and_resize", extrapolation_value=-7.0)
    expected = resize_ref(x, (4, 5), method, "tf_crop_and_resize", roi=roi, extrapolation=-7.0)
    assert_close(got, expected)
    assert (got == -7.0).any()


def test_resize2d_nhwc_and_out_dtype():
    x = sample(RNG, (1, 3, 4, 5), "float32")
    expected = resize_ref(x, (7, 3), "linear", "half_pixel", out_dtype="float16")
    got = run("image.resize2d", np.transpose(x, (0, 2, 3, 1)), size=[7, 3], layout="NHWC",
              out_dtype="float16")
    assert_close(got, np.transpose(expected, (0, 2, 3, 1)))


def test_resize2d_nearest_is_exact_where_floats_are_not():
    # tf_half_pixel_for_nn 2 -> 49: output 24 maps to exactly (24.5) * 2/49 = 1,
    # which float64 computes as 0.99999...; exact coordinates floor to 1.
    assert math.floor((24 + 0.5) * (2 / 49)) == 0
    x = np.arange(2, dtype=np.int32).reshape(1, 1, 1, 2)
    got = run("image.resize2d", x, size=[1, 49], method="nearest_neighbor",
              coordinate_transformation_mode="tf_half_pixel_for_nn", rounding_method="floor")
    assert got[0, 0, 0].tolist() == [min((2 * o + 1) // 49, 1) for o in range(49)]
    assert got[0, 0, 0, 24] == 1


def test_resize2d_linear_hand_checked():
    x = np.array([[[[0.0, 10.0]]]], dtype=np.float32)
    got = run("image.resize2d", x, size=[1, 4], coordinate_transformation_mode="half_pixel")
    # source coordinates -0.25 (clamped), 0.25, 0.75, 1.25 (clamped)
    assert got[0, 0, 0].tolist() == [0.0, 2.5, 7.5, 10.0]
    got = run("image.resize2d", x, size=[1, 3], coordinate_transformation_mode="align_corners")
    assert got[0, 0, 0].tolist() == [0.0, 5.0, 10.0]


# ------------------------------------------------------------ upsampling

@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
@pytest.mark.parametrize("dtype", ["float32", "int8"])
def test_upsampling_nearest_repeats(layout, dtype):
    x = sample(RNG, (1, 2, 3, 4), dtype)
    xl = x if layout == "NCHW" else np.transpose(x, (0, 2, 3, 1))
    got = run("nn.upsampling", xl, scale_h=2.0, scale_w=3.0, layout=layout)
    expected = np.repeat(np.repeat(x, 2, axis=2), 3, axis=3)
    assert_close(got, expected if layout == "NCHW" else np.transpose(expected, (0, 2, 3, 1)))


@pytest.mark.parametrize("method,resize_method", [("bilinear", "linear"), ("bicubic", "cubic")])
@pytest.mark.parametrize("align_corners", [False, True])
def test_upsampling_interpolating(method, resize_method, align_corners):
    x = sample(RNG, (1, 2, 3, 4), "float32")
    got = run("nn.upsampling", x, scale_h=2.0, scale_w=1.5, method=method,
              align_corners=align_corners)
    mode = "align_corners" if align_corners else "asymmetric"
    assert_close(got, resize_ref(x, (6, 6), resize_method, mode))


def test_upsampling_output_size_rounds_half_to_even():
    assert infer("nn.upsampling", [T((1, 1, 3, 5))], scale_h=1.5, scale_w=0.5) \
        == T((1, 1, 4, 2))   # round(4.5) = 4, round(2.5) = 2
    assert infer("nn.upsampling", [T((ANY, 1, ANY, 5))], scale_h=2.0, scale_w=2.0) \
        == T((ANY, 1, ANY, 10))
    with pytest.raises(RelationError, match="empty along W: 1 \\* 0.2 rounds to 0"):
        infer("nn.upsampling", [T((1, 1, 4, 1))], scale_w=0.2)


# ------------------------------------------------------------ relations

def test_resize2d_relation():
    assert infer("image.resize2d", [T((1, 3, 8, 8))], size=[16, 12]) == T((1, 3, 16, 12))
    assert infer("image.resize2d", [T((ANY, 8, 8, 3), "uint8")], size=[4, 4], layout="NHWC",
                 out_dtype="float32") == T((ANY, 4, 4, 3))
    with pytest.raises(RelationError, match="needs the output size"):
        infer("image.resize2d", [T((1, 3, 8, 8))])
    with pytest.raises(RelationError, match="rank 3 .* layout='NCHW' needs rank 4"):
        infer("image.resize2d", [T((3, 8, 8))], size=[4, 4])


@pytest.mark.parametrize("raw,match", [
    ({"size": [0, 4]}, "size must be two positive"),
    ({"size": [4]}, "size must be two positive"),
    ({"roi": [0.0, 1.0]}, "roi must have 4 values"),
    ({"method": "area"}, "'nearest_neighbor', 'linear', 'cubic'"),
    ({"coordinate_transformation_mode": "corners"}, "'half_pixel'"),
    ({"rounding_method": "nearest"}, "'round'"),
    ({"layout": "NCHW4c"}, "permutation"),
])
def test_resize2d_attrs_reject(raw, match):
    with pytest.raises(AttrError, match=match):
        get("image.resize2d").attrs_type.from_raw(raw)


def test_resize2d_attrs_defaults_and_round_trip():
    cls = get("image.resize2d").attrs_type
    d = cls()
    assert (d.method.value, d.coordinate_transformation_mode.value, d.rounding_method.value,
            d.cubic_alpha, d.layout) == ("linear", "half_pixel", "round", -0.5, "NCHW")
    raw = {"size": [224, 224], "method": "nearest_neighbor", "rounding_method": "",
           "coordinate_transformation_mode": "asymmetric", "out_dtype": "uint8"}
    assert cls.from_raw(raw).to_raw() == raw


@pytest.mark.parametrize("name", ["image.resize2d", "nn.upsampling"])
def test_resize_pattern_is_injective(name):
    assert get(name).pattern is PatternKind.INJECTIVE
