"""Convolutions, pooling and resizing (aot/ir/ops/nn_conv.py, nn_pool.py,
image.py) compiled to C against the interpreter: conv1d/conv2d over
layouts, strides, symmetric and asymmetric padding, dilation, groups and
depthwise, integer inputs with out_dtype, tile remainders and windows in
the padding; conv2d_transpose with output_padding; max/avg/global pools
over layouts, ceil_mode, count_include_pad and dilation; image.resize2d
in every method, coordinate mode and rounding; nn.upsampling.  Tables
after tests/ops/test_nn_conv.py, test_nn_pool.py, test_image.py and
tests/emit/test_lower_conv.py.  One build per test (see test_ops_c.py)."""

from __future__ import annotations

import numpy as np

from c_harness import check_cases
from cases import conv as table
from cases import image
from cases import pool
from cases.common import attr_text
from test_ops_c import case, data, rng_for

#: float32 convolutions accumulate in float32 (nn_conv's design note)
TOL = {"float32": (2e-5, 2e-5), "float16": (3e-3, 3e-3)}


def sample(name: str, shape, dtype: str) -> np.ndarray:
    rng = rng_for(name)
    if np.dtype(dtype).kind in "iu":
        info = np.iinfo(dtype)
        return rng.integers(max(info.min, -128), min(info.max, 127) + 1, size=shape).astype(dtype)
    return rng.standard_normal(shape).astype(dtype)


def conv(op: str, xs, ws, attrs: dict, xdt: str = "float32", wdt: str | None = None,
         tag: str = ""):
    wdt = wdt or xdt
    name = f"{op}:{xs}-{ws}-{xdt}-{wdt}-{attr_text(attrs)}{tag}"
    out = attrs.get("out_dtype", xdt)
    rtol, atol = TOL.get(out, (None, None))
    body = f"{op}(%x, %w, {attr_text(attrs)})" if attrs else f"{op}(%x, %w)"
    return case(name, [("x", xs, xdt), ("w", ws, wdt)], body,
                [sample(name + "x", xs, xdt), sample(name + "w", ws, wdt)], rtol=rtol, atol=atol)


def pads(strides, padding, dilation, groups) -> dict:
    return dict(strides=list(strides), padding=list(padding), dilation=list(dilation),
                groups=groups)


# ------------------------------------------------------------ conv1d/2d

def to_layout(shape, canon: str, layout: str) -> tuple:
    return tuple(shape[canon.index(c)] for c in layout)


def conv_cases():
    out = []
    for xs, ws, strides, padding, dilation, groups in table.CONV2D:
        for xdt, wdt, odt in table.DTYPES:
            attrs = pads(strides, padding, dilation, groups)
            if odt:
                attrs["out_dtype"] = odt
            out.append(conv("nn.conv2d", xs, ws, attrs, xdt, wdt))
    for xdt, odt in [("float64", None), ("int8", "float32"), ("float32", "float16"),
                     ("int32", "uint8"), ("uint8", "int16"), ("int16", "int64")]:
        attrs = dict(padding=[1, 0], strides=[1, 2])
        if odt:
            attrs["out_dtype"] = odt
        out.append(conv("nn.conv2d", (1, 3, 5, 6), (4, 3, 2, 3), attrs, xdt))
    for dl, kl in table.LAYOUTS:
        for ol in table.OUT_LAYOUTS:
            attrs = dict(strides=[2, 1], padding=[1, 0, 0, 1], groups=2, data_layout=dl,
                         kernel_layout=kl)
            if ol:
                attrs["out_layout"] = ol
            out.append(conv("nn.conv2d", to_layout((2, 4, 6, 5), "NCHW", dl),
                            to_layout((6, 2, 3, 2), "OIHW", kl), attrs))
    for dt, odt in [("int16", "int32"), ("float32", None)]:
        attrs = dict(padding=[1, 1, 1, 1], groups=4, channels=4, kernel_size=[3, 3],
                     data_layout="NHWC", kernel_layout="HWOI")
        if odt:
            attrs["out_dtype"] = odt
        out.append(conv("nn.conv2d", (1, 5, 5, 4), (3, 3, 4, 1), attrs, dt))
    for xs, ws, attrs in [
            ((1, 10, 5, 5), (10, 5, 3, 3), dict(groups=2, padding=[1, 1])),
            ((1, 3, 6, 7), (7, 3, 1, 1), {}),
            ((1, 3, 4, 23), (8, 3, 3, 3), dict(padding=[1, 1])),
            ((1, 6, 5, 9), (6, 1, 3, 3), dict(groups=6, strides=[2, 2], padding=[1, 1],
                                              dilation=[1, 2])),
            ((1, 7, 4, 5), (3, 3, 1, 10), dict(groups=5, padding=[2, 2], data_layout="NHWC",
                                                kernel_layout="HWIO")),
            ((1, 2, 4, 4), (3, 2, 3, 3), dict(padding=[5, 0, 4, 6])),
            ((1, 1, 3, 12), (2, 1, 2, 9), dict(padding=[0, 4, 1, 4], dilation=[2, 1]))]:
        out.append(conv("nn.conv2d", xs, ws, attrs))
    x = np.full((1, 8, 3, 3), 127, np.int8)
    w = np.full((2, 8, 3, 3), 127, np.int8)
    w[1] = -128
    out.append(case("nn.conv2d:int8-wraps", [("x", (1, 8, 3, 3), "int8"),
                                              ("w", (2, 8, 3, 3), "int8")],
                    "nn.conv2d(%x, %w)", [x, w]))
    out.append(case("nn.conv2d:nan-inf-data", [("x", (1, 2, 4, 4), "float32"),
                                                ("w", (2, 2, 3, 3), "float32")],
                    "nn.conv2d(%x, %w, padding=[1, 1])",
                    [data(rng_for("nan-inf-x"), (1, 2, 4, 4), "float32", specials=True),
                     data(rng_for("nan-inf-w"), (2, 2, 3, 3), "float32")]))
    rng = rng_for("conv-fused")
    out.append(case("nn.conv2d:bias-relu", [("x", (1, 3, 6, 6), "float32"),
                                             ("w", (8, 3, 3, 3), "float32"),
                                             ("b", (8,), "float32")],
                    "nn.relu(nn.bias_add(nn.conv2d(%x, %w, padding=[1, 1]), %b))",
                    rtol=2e-5, atol=2e-5))
    out.append(case("nn.conv2d:int8-requantising", [("x", (1, 4, 5, 5), "uint8"),
                                                     ("w", (4, 1, 3, 3), "int8"),
                                                     ("b", (4,), "int32")],
                    '%0 = subtract(cast(%x, dtype="int16"), 3i16);\n'
                    '  %1 = nn.conv2d(%0, %w, padding=[1, 1], groups=4, out_dtype="int32");\n'
                    '  cast(clip(divide(nn.bias_add(%1, %b), 4), a_min=-128f, a_max=127f), '
                    'dtype="int8")',
                    [rng.integers(0, 256, (1, 4, 5, 5)).astype(np.uint8),
                     rng.integers(-128, 128, (4, 1, 3, 3)).astype(np.int8),
                     rng.integers(-500, 500, (4,)).astype(np.int32)]))
    out.append(case("nn.conv2d:pad-prologue", [("x", (1, 2, 4, 5), "float32"),
                                                ("w", (3, 2, 3, 3), "float32")],
                    "nn.conv2d(nn.pad(%x, 0.5f, pad_width=[[0, 0], [0, 0], [1, 2], [2, 1]]), "
                    "%w, strides=[2, 1])", rtol=2e-5, atol=2e-5))
    for xs, ws, stride, padding, dilation, groups in table.CONV1D:
        for layout in ["NCW", "NWC"]:
            attrs = dict(strides=[stride], padding=list(padding), dilation=[dilation],
                         groups=groups, data_layout=layout)
            shape = xs if layout == "NCW" else (xs[0], xs[2], xs[1])
            out.append(conv("nn.conv1d", shape, ws, attrs))
            out.append(conv("nn.conv1d", shape, ws, dict(attrs, out_dtype="int32"), "int8"))
    out.append(conv("nn.conv1d", (1, 9, 4), (3, 4, 5),
                    dict(padding=[1, 2], data_layout="NWC", kernel_layout="WIO")))
    out.append(conv("nn.conv1d", (1, 3, 10), (4, 3, 3),
                    dict(padding=[1, 1], dilation=[2], channels=4, kernel_size=[3])))
    return out


def ragged_tile_cases():
    """float32 channels-first convolutions whose border columns share the
    interior's register tiles, each column skipping its taps in the
    padding (nn_conv's ``ragged_columns``): widths that split into unequal
    tiles, channel remainders, stride 2 with the extra padding at the end,
    dilation, 1x1 windows whose border columns read nothing, a window
    wider than the input, depthwise."""
    rows = [
        ((1, 3, 4, 13), (5, 3, 3, 3), (1, 1), (1, 1), (1, 1), 1),
        ((1, 2, 5, 15), (6, 2, 3, 3), (2, 2), (0, 0, 1, 1), (1, 1), 1),
        ((1, 2, 3, 11), (4, 2, 3, 3), (1, 1), (2, 2), (2, 2), 1),
        ((1, 2, 3, 5), (3, 2, 1, 1), (1, 1), (1, 1), (1, 1), 1),
        ((1, 2, 3, 3), (4, 2, 3, 5), (1, 1), (1, 3), (1, 1), 1),
        ((1, 3, 4, 14), (3, 1, 3, 3), (1, 1), (1, 1), (1, 1), 3),
        ((1, 2, 10, 7), (5, 2, 10, 4), (2, 2), (4, 1, 5, 1), (1, 1), 1),
    ]
    return [conv("nn.conv2d", xs, ws, pads(strides, padding, dilation, groups))
            for xs, ws, strides, padding, dilation, groups in rows]


def non_finite_weight_cases():
    """Zero padding times a NaN or infinite weight is NaN (0 * inf): the
    padded taps are part of the sum, as in the definition over the
    zero-padded input."""
    w = data(rng_for("nan-inf-w2"), (2, 2, 3, 3), "float32")
    w[0, 0, 1, 0] = np.nan          # a left-column tap: meets the padding
    w[1, 1, 0, 0] = np.inf          # a corner tap
    x = data(rng_for("nan-inf-x2"), (1, 2, 4, 4), "float32")
    return [case("nn.conv2d:non-finite-weights", [("x", (1, 2, 4, 4), "float32"),
                                                   ("w", (2, 2, 3, 3), "float32")],
                 "nn.conv2d(%x, %w, padding=[1, 1])", [x, w]),
            case("nn.conv1d:non-finite-weights", [("x", (1, 1, 5), "float32"),
                                                   ("w", (1, 1, 3), "float32")],
                 "nn.conv1d(%x, %w, padding=[1, 1])",
                 [np.ones((1, 1, 5), np.float32), np.array([[[np.inf, 1, 1]]], np.float32)])]


def conv_transpose_cases():
    out = []
    for xs, ws, strides, padding, opad, dilation, groups in table.TRANSPOSE:
        for dt, odt in [("float32", None), ("int8", "int32"), ("float16", None)]:
            attrs = pads(strides, padding, dilation, groups)
            attrs["output_padding"] = list(opad)
            if odt:
                attrs["out_dtype"] = odt
            out.append(conv("nn.conv2d_transpose", xs, ws, attrs, dt))
    for xs, ws, attrs in table.TRANSPOSE_MORE + [
            # C only: channels and kernel_size given
            ((1, 4, 5, 5), (4, 2, 3, 3), dict(channels=2, kernel_size=[3, 3], strides=[2, 2],
                                              output_padding=[1, 1]))]:
        out.append(conv("nn.conv2d_transpose", xs, ws, attrs))
    return out


# ---------------------------------------------------------------- pools

def pool_cases():
    out = []
    for shape, *row in pool.POOLS:
        base = pool.pool_attrs(*row)
        for dt in pool.MAX_DTYPES:
            out.append(case(f"nn.max_pool2d:{shape}-{attr_text(base)}-{dt}", [("x", shape, dt)],
                            f"nn.max_pool2d(%x, {attr_text(base)})", specials=True))
        for include in [False, True]:
            for dt in pool.AVG_DTYPES:
                attrs = attr_text(dict(base, count_include_pad=include))
                out.append(case(f"nn.avg_pool2d:{shape}-{attrs}-{dt}", [("x", shape, dt)],
                                f"nn.avg_pool2d(%x, {attrs})"))
    for kind in ["max", "avg"]:
        out.append(case(f"nn.{kind}_pool2d:nhwc", [("x", (2, 7, 6, 3), "float32")],
                        f'nn.{kind}_pool2d(%x, pool_size=[3, 2], strides=[2, 1], '
                        f'padding=[1, 1, 0, 0], layout="NHWC")'))
        for layout in ["NCHW", "NHWC", "HWNC"]:
            shape = to_layout((2, 3, 5, 4), "NCHW", layout)
            for dt in ["float32", "int16", "int8"]:
                out.append(case(f"nn.global_{kind}_pool2d:{layout}-{dt}", [("x", shape, dt)],
                                f'nn.global_{kind}_pool2d(%x, layout="{layout}")',
                                specials=True))
    out.append(case("nn.avg_pool2d:int8-no-overflow", [("x", (1, 1, 4, 4), "int8")],
                    "nn.avg_pool2d(%x, pool_size=[4, 4])", [np.full((1, 1, 4, 4), 120, np.int8)]))
    out.append(case("nn.avg_pool2d:int8-truncates", [("x", (1, 1, 2, 2), "int8")],
                    "nn.avg_pool2d(%x, pool_size=[2, 2])",
                    [np.array([[[[-3, -4], [0, 0]]]], np.int8)]))
    out.append(case("nn.max_pool2d:nan", [("x", (1, 1, 3, 3), "float32")],
                    "nn.max_pool2d(%x, pool_size=[2, 2])",
                    [np.array([[[[np.nan, 1, 2], [3, 4, np.nan], [-np.inf, 5, 6]]]],
                              np.float32)]))
    out.append(case("nn.max_pool2d:conv-relu", [("x", (1, 2, 6, 6), "float32"),
                                                 ("w", (3, 2, 3, 3), "float32")],
                    "nn.max_pool2d(nn.relu(nn.conv2d(%x, %w, padding=[1, 1])), pool_size=[2, 2], "
                    "strides=[2, 2])", rtol=2e-5, atol=2e-5))
    return out


# ---------------------------------------------------------------- image

def image_cases():
    out = []
    for m, mode in enumerate(image.MODES):
        for r, rounding in enumerate(image.ROUNDINGS):
            in_hw, out_hw = image.SIZES[(m + r) % len(image.SIZES)]
            dt = ["float32", "int8", "uint8"][(m + r) % 3]
            out.append(case(f"image.resize2d:nearest-{mode}-{rounding}-{in_hw}-{out_hw}-{dt}",
                            [("x", (1, 2, *in_hw), dt)],
                            f'image.resize2d(%x, size={list(out_hw)}, method="nearest_neighbor", '
                            f'coordinate_transformation_mode="{mode}", '
                            f'rounding_method="{rounding}")'))
        for s, (in_hw, out_hw) in enumerate(image.SIZES):
            dt = ["float32", "uint8", "float16"][(m + s) % 3]
            out.append(case(f"image.resize2d:linear-{mode}-{in_hw}-{out_hw}-{dt}",
                            [("x", (2, 1, *in_hw), dt)],
                            f'image.resize2d(%x, size={list(out_hw)}, method="linear", '
                            f'coordinate_transformation_mode="{mode}")', lo=0, hi=255))
    for mode in image.CUBIC_MODES:
        for (alpha, exclude), (in_hw, out_hw) in zip(image.CUBIC_PARAMS, image.CUBIC_SIZES):
            for dt in ["float64", "float32"]:
                out.append(case(f"image.resize2d:cubic-{mode}-{alpha}-{exclude}-{dt}",
                                [("x", (1, 2, *in_hw), dt)],
                                f'image.resize2d(%x, size={list(out_hw)}, method="cubic", '
                                f'coordinate_transformation_mode="{mode}", '
                                f'cubic_alpha={alpha!r}f, cubic_exclude={exclude})'))
    for method in ["nearest_neighbor", "linear", "cubic"]:
        out.append(case(f"image.resize2d:tf_crop_and_resize-{method}",
                        [("x", (1, 1, 5, 6), "float32")],
                        f'image.resize2d(%x, size=[4, 5], roi=[0.25f, -0.5f, 1.25f, 0.75f], '
                        f'method="{method}", coordinate_transformation_mode="tf_crop_and_resize", '
                        f'extrapolation_value=-7f)'))
    out += [
        case("image.resize2d:nhwc-out-dtype", [("x", (1, 4, 5, 3), "float32")],
             'image.resize2d(%x, size=[7, 3], layout="NHWC", out_dtype="float16")'),
        case("image.resize2d:uint8-out-int8", [("x", (1, 2, 3, 3), "uint8")],
             'image.resize2d(%x, size=[5, 4], out_dtype="int8")', lo=0, hi=255),
        case("image.resize2d:exact-nearest", [("x", (1, 1, 1, 2), "int32")],
             'image.resize2d(%x, size=[1, 49], method="nearest_neighbor", '
             'coordinate_transformation_mode="tf_half_pixel_for_nn", rounding_method="floor")',
             [np.arange(2, dtype=np.int32).reshape(1, 1, 1, 2)]),
        case("image.resize2d:hand-linear", [("x", (1, 1, 1, 2), "float32")],
             'image.resize2d(%x, size=[1, 4], coordinate_transformation_mode="half_pixel")',
             [np.array([[[[0.0, 10.0]]]], np.float32)]),
        case("image.resize2d:nan-inf", [("x", (1, 1, 3, 3), "float32")],
             "image.resize2d(%x, size=[5, 5])", specials=True),
    ]
    for layout in ["NCHW", "NHWC"]:
        for dt in ["float32", "int8"]:
            shape = (1, 2, 3, 4) if layout == "NCHW" else (1, 3, 4, 2)
            out.append(case(f"nn.upsampling:nearest-{layout}-{dt}", [("x", shape, dt)],
                            f'nn.upsampling(%x, scale_h=2f, scale_w=3f, layout="{layout}")'))
    for method in ["bilinear", "bicubic"]:
        for align in [False, True]:
            out.append(case(f"nn.upsampling:{method}-{align}", [("x", (1, 2, 3, 4), "float32")],
                            f'nn.upsampling(%x, scale_h=2f, scale_w=1.5f, method="{method}", '
                            f'align_corners={align})'))
    out.append(case("nn.upsampling:half", [("x", (1, 1, 3, 5), "float32")],
                    "nn.upsampling(%x, scale_h=1.5f, scale_w=0.5f)"))
    return out


def all_cases():
    return (conv_cases() + ragged_tile_cases() + non_finite_weight_cases() + conv_transpose_cases() + pool_cases()
            + image_cases())


def test_conv1d_conv2d():
    check_cases(conv_cases(), "conv")


def test_conv2d_ragged_tiles():
    check_cases(ragged_tile_cases(), "conv_ragged")


def test_conv_non_finite_weights_meet_the_padding():
    check_cases(non_finite_weight_cases(), "conv_nonfinite")


def test_conv2d_transpose():
    check_cases(conv_transpose_cases(), "convt")


def test_pools():
    check_cases(pool_cases(), "pool")


def test_resize2d_upsampling():
    check_cases(image_cases(), "image")
