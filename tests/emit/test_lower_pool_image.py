"""Lowerings of the pooling operators (aot/emit/lower/ops/nn_pool.py) and of
image.resize2d / nn.upsampling (aot/emit/lower/ops/image.py) against the
interpreter, over the attribute tables of tests/ops/test_nn_pool.py and
tests/ops/test_image.py: layouts, strides, symmetric and asymmetric
padding, dilation, ceil_mode, count_include_pad, windows wholly in the
padding, global pools; every resize method, coordinate transformation and
rounding method, tf_crop_and_resize extrapolation, out_dtype; fused
neighbours; the printed C compiled with gcc."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from aot.emit.kernel import ir as K
from aot.emit.kernel.walk import walk_exprs, walk_stmts
from aot.emit.kernel.simplify import simplify_kernel
from kernel_c_harness import build, call
from cases import image
from cases import pool as pool_table
from lowering_harness import check_lowering, lower_main, run_lowered

#: float32 pools sum in float32 (nn_conv.FLOAT32_ACCUMULATOR)
TOL = {"float16": (2e-3, 2e-3), "float32": (2e-6, 2e-6), "float64": (1e-12, 1e-12)}


def ttype(shape: tuple, dtype: str) -> str:
    return f"Tensor[({', '.join(str(d) for d in shape)}), {dtype}]"


def attr_text(attrs: dict) -> str:
    parts = []
    for k, v in attrs.items():
        if isinstance(v, bool):
            parts.append(f"{k}={'True' if v else 'False'}")
        elif isinstance(v, str):
            parts.append(f'{k}="{v}"')
        elif isinstance(v, (list, tuple)):
            parts.append(f"{k}=[{', '.join(repr(e) for e in v)}]")
        else:
            parts.append(f"{k}={v!r}")
    return ", ".join(parts)


def sample(rng: np.random.Generator, shape: tuple, dtype: str, lo: int = -100,
           hi: int = 100) -> np.ndarray:
    if np.dtype(dtype).kind in "iu":
        info = np.iinfo(dtype)
        return rng.integers(max(lo, info.min), min(hi, info.max) + 1, size=shape).astype(dtype)
    return (rng.standard_normal(shape) * 10).astype(dtype)


def check(op: str, shape: tuple, dtype: str, attrs: dict, seed: int = 0, lo: int = -100,
          hi: int = 100, out_dtype: str | None = None):
    text = f"def @main(%x: {ttype(shape, dtype)}) {{ {op}(%x, {attr_text(attrs)}) }}" \
        if attrs else f"def @main(%x: {ttype(shape, dtype)}) {{ {op}(%x) }}"
    x = sample(np.random.default_rng(seed), shape, dtype, lo, hi)
    rtol, atol = TOL.get(out_dtype or dtype, (0, 0))
    return check_lowering(text, [x], rtol=rtol, atol=atol)


def to_layout(shape: tuple, layout: str) -> tuple:
    return tuple(shape["NCHW".index(c)] for c in layout)


# ================================================================= pools

@pytest.mark.parametrize("shape,pool,strides,padding,dilation,ceil_mode", pool_table.POOLS)
@pytest.mark.parametrize("dtype", pool_table.MAX_DTYPES)
def test_max_pool2d(shape, pool, strides, padding, dilation, ceil_mode, dtype):
    check("nn.max_pool2d", shape, dtype,
          pool_table.pool_attrs(pool, strides, padding, dilation, ceil_mode))


@pytest.mark.parametrize("shape,pool,strides,padding,dilation,ceil_mode", pool_table.POOLS)
@pytest.mark.parametrize("include_pad", [False, True])
@pytest.mark.parametrize("dtype", pool_table.AVG_DTYPES)
def test_avg_pool2d(shape, pool, strides, padding, dilation, ceil_mode, include_pad, dtype):
    check("nn.avg_pool2d", shape, dtype,
          pool_table.pool_attrs(pool, strides, padding, dilation, ceil_mode,
                                count_include_pad=include_pad), lo=-2**31, hi=2**31 - 1)


def test_avg_pool2d_integer_sums_do_not_overflow_and_truncate():
    check("nn.avg_pool2d", (1, 1, 4, 4), "int8", dict(pool_size=[4, 4]), lo=120, hi=127)
    check("nn.avg_pool2d", (1, 2, 5, 5), "int8", dict(pool_size=[2, 2], padding=[1, 1]),
          lo=-128, hi=127)
    check("nn.avg_pool2d", (1, 2, 5, 5), "uint16", dict(pool_size=[3, 3]), lo=0, hi=65535)
    check("nn.avg_pool2d", (1, 2, 4, 4), "int64", dict(pool_size=[3, 3], padding=[1, 1]),
          lo=-2**62, hi=2**62)


@pytest.mark.parametrize("kind", ["max", "avg"])
@pytest.mark.parametrize("layout", ["NHWC", "HWNC", "NCWH"])
def test_pool_layouts(kind, layout):
    shape = to_layout((2, 3, 7, 6), layout)
    check(f"nn.{kind}_pool2d", shape, "float32",
          dict(pool_size=[3, 2], strides=[2, 1], padding=[1, 1, 0, 0], layout=layout,
               count_include_pad=True) if kind == "avg" else
          dict(pool_size=[3, 2], strides=[2, 1], padding=[1, 1, 0, 0], layout=layout))


@pytest.mark.parametrize("kind", ["max", "avg"])
def test_pool_nhwc_channel_tiles_with_remainder(kind):
    check(f"nn.{kind}_pool2d", (1, 5, 5, 7), "int16",
          dict(pool_size=[2, 2], strides=[2, 2], padding=[0, 0, 1, 1], layout="NHWC",
               ceil_mode=True))


@st.composite
def pool_configs(draw):
    kh, kw = draw(st.integers(1, 3)), draw(st.integers(1, 3))
    strides = [draw(st.integers(1, 3)), draw(st.integers(1, 3))]
    dil = [draw(st.integers(1, 2)), draw(st.integers(1, 2))]
    pad = [draw(st.integers(0, 2)) for _ in range(4)]
    ceil_mode = draw(st.booleans())
    h = draw(st.integers(max(1, (kh - 1) * dil[0] + 1 - pad[0] - pad[2]), 7))
    w = draw(st.integers(max(1, (kw - 1) * dil[1] + 1 - pad[1] - pad[3]), 7))
    layout = draw(st.sampled_from(["NCHW", "NHWC"]))
    kind = draw(st.sampled_from(["max", "avg"]))
    attrs = dict(pool_size=[kh, kw], strides=strides, dilation=dil, padding=pad,
                 ceil_mode=ceil_mode, layout=layout)
    if kind == "avg":
        attrs["count_include_pad"] = draw(st.booleans())
    return kind, to_layout((1, 2, h, w), layout), attrs


@settings(max_examples=25, deadline=None)
@given(pool_configs())
def test_pool_random_configurations(cfg):
    kind, shape, attrs = cfg
    check(f"nn.{kind}_pool2d", shape, "int16", attrs, lo=-30000, hi=30000)


def test_max_pool2d_propagates_nan_and_keeps_infinities():
    text = ("def @main(%x: Tensor[(1, 1, 4, 4), float32]) { "
            "nn.max_pool2d(%x, pool_size=[2, 2], strides=[2, 2]) }")
    x = np.arange(16, dtype=np.float32).reshape(1, 1, 4, 4)
    x[0, 0, 0, 1] = np.nan
    x[0, 0, 3, 3] = np.inf
    x[0, 0, 2, 0:2] = -np.inf
    x[0, 0, 3, 0:2] = -np.inf
    check_lowering(text, [x])


def test_wide_pool_uses_column_ranges_in_the_border():
    # 9 windows clip differently on each side: more runs than get their own copy
    check("nn.avg_pool2d", (1, 1, 2, 12), "float32",
          dict(pool_size=[1, 9], padding=[0, 8, 0, 8], count_include_pad=False))
    check("nn.max_pool2d", (1, 1, 2, 12), "float32",
          dict(pool_size=[1, 9], padding=[0, 8, 0, 8], dilation=[1, 2]))


@pytest.mark.parametrize("layout", ["NCHW", "NHWC", "HWNC"])
@pytest.mark.parametrize("dtype", ["float32", "int16", "float16"])
@pytest.mark.parametrize("kind", ["max", "avg"])
def test_global_pools(layout, dtype, kind):
    check(f"nn.global_{kind}_pool2d", to_layout((2, 3, 5, 4), layout), dtype,
          dict(layout=layout))


def test_avg_pool_fused_with_cast_prologue_and_relu_epilogue():
    text = ("def @main(%x: Tensor[(1, 3, 6, 6), int8]) { "
            "nn.relu(nn.avg_pool2d(cast(%x, dtype=\"float32\"), pool_size=[3, 3], "
            "strides=[2, 2], padding=[1, 1])) }")
    x = sample(np.random.default_rng(3), (1, 3, 6, 6), "int8")
    group = check_lowering(text, [x], rtol=2e-6, atol=2e-6)
    assert group.anchor == "nn.avg_pool2d"


def test_pools_have_no_bounds_test_in_the_window_loops():
    text = ("def @main(%x: Tensor[(1, 2, 9, 9), float32]) { "
            "nn.avg_pool2d(%x, pool_size=[3, 3], strides=[2, 2], padding=[1, 1], "
            "count_include_pad=True, ceil_mode=True) }")
    _, group = lower_main(text)
    kernel = simplify_kernel(group.kernel)
    window_loops = [f for f in walk_stmts(kernel.body) if isinstance(f, K.For)
                    and not any(isinstance(s, K.Store) for s in walk_stmts(f.body))]
    assert window_loops
    for f in window_loops:
        for s in walk_stmts(f.body):
            if isinstance(s, K.Assign):
                assert not any(isinstance(e, K.Select) for e in walk_exprs(s.value))


# ================================================================ resize

@pytest.mark.parametrize("mode", image.MODES)
@pytest.mark.parametrize("in_hw,out_hw", image.SIZES)
@pytest.mark.parametrize("rounding", image.ROUNDINGS)
def test_resize2d_nearest(mode, in_hw, out_hw, rounding):
    check("image.resize2d", (1, 2, *in_hw), "float32",
          dict(size=list(out_hw), method="nearest_neighbor",
               coordinate_transformation_mode=mode, rounding_method=rounding))


@pytest.mark.parametrize("mode", image.MODES)
@pytest.mark.parametrize("in_hw,out_hw", image.SIZES)
@pytest.mark.parametrize("dtype", ["float32", "uint8"])
def test_resize2d_linear(mode, in_hw, out_hw, dtype):
    check("image.resize2d", (2, 1, *in_hw), dtype,
          dict(size=list(out_hw), method="linear", coordinate_transformation_mode=mode),
          lo=0, hi=255)


@pytest.mark.parametrize("mode", image.CUBIC_MODES)
@pytest.mark.parametrize("in_hw,out_hw", image.CUBIC_SIZES)
@pytest.mark.parametrize("alpha,exclude", image.CUBIC_PARAMS)
def test_resize2d_cubic(mode, in_hw, out_hw, alpha, exclude):
    check("image.resize2d", (1, 2, *in_hw), "float64",
          dict(size=list(out_hw), method="cubic", coordinate_transformation_mode=mode,
               cubic_alpha=alpha, cubic_exclude=exclude))


@pytest.mark.parametrize("method", ["nearest_neighbor", "linear", "cubic"])
@pytest.mark.parametrize("roi", [[0.25, -0.5, 1.25, 0.75],     # exact in int32
                                 [0.1, -0.3, 1.3, 0.7]])       # needs the table
def test_resize2d_tf_crop_and_resize(method, roi):
    group = check("image.resize2d", (1, 1, 5, 6), "float32",
                  dict(size=[4, 5], roi=roi, method=method,
                       coordinate_transformation_mode="tf_crop_and_resize",
                       extrapolation_value=-7.0))
    got = run_lowered(group, [sample(np.random.default_rng(0), (1, 1, 5, 6), "float32")])[0]
    assert (got == -7.0).any()


def test_resize2d_tf_crop_single_output_pixel():
    check("image.resize2d", (1, 1, 5, 6), "float32",
          dict(size=[1, 1], roi=[0.2, 0.4, 0.6, 0.9], method="linear",
               coordinate_transformation_mode="tf_crop_and_resize"))


@pytest.mark.parametrize("layout", ["NHWC", "CHWN"])
@pytest.mark.parametrize("out_dtype", ["float16", "int8", "uint8"])
def test_resize2d_layouts_and_out_dtype(layout, out_dtype):
    check("image.resize2d", to_layout((1, 3, 4, 5), layout), "float32",
          dict(size=[7, 3], layout=layout, out_dtype=out_dtype), out_dtype=out_dtype)


def test_resize2d_integer_results_round_to_nearest_even():
    # values exactly halfway after interpolation: 0.5*(a+b) with a+b odd
    text = ("def @main(%x: Tensor[(1, 1, 1, 4), int32]) { image.resize2d(%x, size=[1, 7], "
            "coordinate_transformation_mode=\"align_corners\", out_dtype=\"int8\") }")
    x = np.array([[[[1, 4, -5, 300]]]], dtype=np.int32)
    check_lowering(text, [x])


def test_resize2d_nearest_is_exact_where_floats_are_not():
    text = ("def @main(%x: Tensor[(1, 1, 1, 2), int32]) { image.resize2d(%x, size=[1, 49], "
            "method=\"nearest_neighbor\", coordinate_transformation_mode=\"tf_half_pixel_for_nn\", "
            "rounding_method=\"floor\") }")
    check_lowering(text, [np.arange(2, dtype=np.int32).reshape(1, 1, 1, 2)])


def test_resize_fuses_into_its_consumer():
    text = ("def @main(%x: Tensor[(1, 2, 3, 3), float32], %y: Tensor[(1, 2, 6, 6), float32]) { "
            "add(image.resize2d(%x, size=[6, 6]), %y) }")
    rng = np.random.default_rng(9)
    group = check_lowering(text, [sample(rng, (1, 2, 3, 3), "float32"),
                                  sample(rng, (1, 2, 6, 6), "float32")])
    assert group.anchor is None and group.ops == ("image.resize2d", "add")


@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
@pytest.mark.parametrize("dtype", ["float32", "int8"])
def test_upsampling_nearest(layout, dtype):
    check("nn.upsampling", to_layout((1, 2, 3, 4), layout), dtype,
          dict(scale_h=2.0, scale_w=3.0, layout=layout))


@pytest.mark.parametrize("method", ["bilinear", "bicubic"])
@pytest.mark.parametrize("align_corners", [False, True])
def test_upsampling_interpolating(method, align_corners):
    check("nn.upsampling", (1, 2, 3, 4), "float32",
          dict(scale_h=2.0, scale_w=1.5, method=method, align_corners=align_corners))


def test_upsampling_fractional_scale():
    check("nn.upsampling", (1, 1, 3, 5), "float32",
          dict(scale_h=1.5, scale_w=0.5, method="bilinear"))


# ============================================================= C compile

@pytest.mark.parametrize("text,shape,dtype", [
    ("nn.avg_pool2d(%x, pool_size=[3, 3], strides=[2, 2], padding=[1, 1], ceil_mode=True)",
     (1, 2, 7, 7), "int8"),
    ("nn.max_pool2d(%x, pool_size=[2, 2], strides=[2, 2], layout=\"NHWC\")",
     (1, 4, 4, 6), "float32"),
    ("nn.global_avg_pool2d(%x)", (1, 3, 5, 5), "float32"),
    ("image.resize2d(%x, size=[5, 7], method=\"cubic\", cubic_exclude=1)",
     (1, 1, 3, 4), "float32"),
    ("image.resize2d(%x, size=[4, 4], method=\"nearest_neighbor\", "
     "coordinate_transformation_mode=\"asymmetric\", rounding_method=\"round_prefer_floor\")",
     (1, 1, 3, 3), "uint8"),
])
def test_printed_c_matches_the_evaluator(tmp_path, text, shape, dtype):
    _, group = lower_main(f"def @main(%x: {ttype(shape, dtype)}) {{ {text} }}")
    kernel = simplify_kernel(group.kernel)
    x = sample(np.random.default_rng(1), shape, dtype)
    want = run_lowered(group, [x])[0]
    lib = build([kernel], tmp_path, "pool")
    out = np.zeros(group.outputs[0].size, dtype=group.outputs[0].dtype.np)
    call(lib, kernel, {group.inputs[0].name: np.ascontiguousarray(x).reshape(-1),
                       group.outputs[0].name: out})
    np.testing.assert_allclose(out.reshape(want.shape).astype(np.float64),
                               want.astype(np.float64), rtol=1e-6, atol=1e-6)


# ================================================================ larger

@pytest.mark.slow
@pytest.mark.parametrize("op,shape,dtype,attrs", [
    ("nn.max_pool2d", (1, 8, 16, 16), "int8", dict(pool_size=[3, 3], strides=[2, 2],
                                                   padding=[1, 1])),
    ("nn.avg_pool2d", (1, 12, 12, 16), "float32", dict(pool_size=[2, 2], strides=[2, 2],
                                                       layout="NHWC")),
    ("nn.global_avg_pool2d", (1, 25, 5, 32), "int8", dict(layout="NHWC")),
    ("image.resize2d", (1, 3, 12, 12), "uint8", dict(size=[20, 16])),
])
def test_larger(op, shape, dtype, attrs):
    check(op, shape, dtype, attrs)
