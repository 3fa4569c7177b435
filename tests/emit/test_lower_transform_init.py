"""Lowering of the value-creating transforms (aot/emit/lower/ops/transform_init.py:
cast, cast_like, clip, full, full_like, zeros, ones, zeros_like, ones_like,
arange) and of layout_transform (aot/emit/lower/ops/layout.py), run by the
kernel-IR evaluator against the interpreter and once compiled with the C
compilers.  Conversions are exercised on edge values (NaN, infinities,
saturation, wrap-around, -0.0)."""

from __future__ import annotations

import numpy as np
import pytest

from cases import transform as table
from kernel_c_harness import compilers
from transform_case_helpers import case, check_case, check_cases_in_c, kernel_c, values

def _cast_case(src: str, dst: str):
    x = table.edge_values(src)
    return case(f"cast-{src}-{dst}", f"%x: Tensor[({len(x)}), {src}]",
                f'cast(%x, dtype="{dst}")', x)


CAST_CASES = [_cast_case(s, d) for s, d in table.CAST_PAIRS] + [
    case("cast_like", "%x: Tensor[(20), float32], %y: Tensor[(2), int16]", "cast_like(%x, %y)",
         table.edge_values("float32"), np.zeros(2, np.int16)),
    case("cast-fused", "%x: Tensor[(20), float32]",
         'add(cast(multiply(%x, 2f), dtype="int8"), 3i8)', table.edge_values("float32")),
]


def _clip_case(id: str, dtype: str, bounds: str):
    x = table.edge_values(dtype)
    return case(id, f"%x: Tensor[({len(x)}), {dtype}]", f"clip(%x, {bounds})", x)


CLIP_CASES = [_clip_case(f"clip-{label}", dt, bounds)
              for label, dt, bounds in table.CLIPS] + [
    case("clip-fused", "%x: Tensor[(2, 3), float32]",
         "exp(clip(negative(%x), a_min=0f, a_max=1f))", values((2, 3))),
]

INIT_CASES = [
    case("zeros-i16", "", 'zeros(shape=[2, 2], dtype="int16")'),
    case("zeros-scalar", "", 'zeros(shape=[], dtype="float32")'),
    case("ones-f32", "", 'ones(shape=[3], dtype="float32")'),
    case("ones-bool", "", 'ones(shape=[2, 3], dtype="bool")'),
    case("full-int8", "", 'full(7, shape=[2], dtype="int8")'),
    case("full-saturate", "%v: float32", 'full(%v, shape=[2, 2], dtype="int8")',
         np.float32(300.7)),
    case("full-nan-to-int", "%v: float32", 'full(%v, shape=[3], dtype="uint16")',
         np.float32(np.nan)),
    case("full-wrap", "%v: int32", 'full(%v, shape=[3], dtype="uint8")', np.int32(-1)),
    case("full-default-dtype", "%v: float16", "full(%v, shape=[2, 1])", np.float16(-0.0)),
    case("full_like", "%x: Tensor[(2, 3), int16], %v: float64", "full_like(%x, %v)",
         values((2, 3), "int16"), np.float64(-7.9)),
    case("full_like-bool", "%x: Tensor[(4), bool], %v: float32", "full_like(%x, %v)",
         values((4,), "bool"), np.float32(np.nan)),
    case("zeros_like", "%x: Tensor[(2, 3), float64]", "zeros_like(%x)", values((2, 3), "float64")),
    case("ones_like", "%x: Tensor[(2, 3), uint32]", "ones_like(%x)", values((2, 3), "uint32")),
    case("ones_like-fused", "%x: Tensor[(2, 3), float32]", "add(%x, ones_like(%x))",
         values((2, 3))),
]

ARANGE_CASES = [
    case("arange-f32", "", 'arange(0f, 5f, 2f, start=0f, stop=5f, step=2f, dtype="float32")'),
    case("arange-f32-frac", "",
         'arange(0.1f, 1f, 0.1f, start=0.1f, stop=1f, step=0.1f, dtype="float32")'),
    case("arange-neg-step", "", 'arange(3f, -2f, -0.5f, start=3f, stop=-2f, step=-0.5f, '
         'dtype="float32")'),
    case("arange-f16", "", 'arange(1000f16, 1010f16, 0.7f16, start=1000f, stop=1010f, '
         'step=0.7f, dtype="float16")'),
    case("arange-int8-wraps", "", 'arange(100i8, 10i8, -30i8, start=100f, stop=10f, step=-30f, '
         'dtype="int8")'),
    case("arange-uint8", "", 'arange(250u8, 255u8, 1u8, start=250f, stop=255f, step=1f, '
         'dtype="uint8")'),
    case("arange-args", "%a: int32, %b: int32, %c: int32",
         'arange(%a, %b, %c, start=-3f, stop=9f, step=4f, dtype="int32")',
         np.int32(-3), np.int32(9), np.int32(4)),
    case("arange-empty", "", 'arange(5f, 0f, 1f, start=5f, stop=0f, step=1f, dtype="float32")'),
    case("arange-fused", "%x: Tensor[(4), float32]",
         'multiply(%x, arange(0f, 4f, 1f, start=0f, stop=4f, step=1f, dtype="float32"))',
         values((4,))),
]

def _layout_case(n: int, shape, src: str, dst: str):
    return case(f"layout-{src}-{dst}", f"%x: Tensor[({', '.join(map(str, shape))}), float32]",
                f'layout_transform({"exp(%x)" if n % 2 else "%x"}, src_layout="{src}", '
                f'dst_layout="{dst}")', values(shape, seed=n))


LAYOUT_CASES = [_layout_case(n, *spec) for n, spec in enumerate(table.LAYOUTS)] + [
    case("layout-roundtrip", "%x: Tensor[(1, 8, 2, 2), float32]",
         'layout_transform(add(layout_transform(%x, src_layout="NCHW", dst_layout="NCHW4c"), '
         '1f), src_layout="NCHW4c", dst_layout="NHWC")', values((1, 8, 2, 2))),
]

CASES = CAST_CASES + CLIP_CASES + INIT_CASES + ARANGE_CASES + LAYOUT_CASES


@pytest.mark.parametrize("c", CASES, ids=lambda c: c.id)
def test_init_and_layout_lowering(c):
    check_case(c)


def test_layout_with_equal_blocking_does_not_divide():
    c = case("l", "%x: Tensor[(1, 2, 2, 3, 4), float32]",
             'layout_transform(%x, src_layout="NCHW4c", dst_layout="NHWC4c")',
             values((1, 2, 2, 3, 4)))
    code = kernel_c(c)
    assert "aot_div" not in code and "aot_mod" not in code, code


def test_clip_leaves_out_bounds_that_cannot_bind():
    c = case("c", "%x: Tensor[(4), int8]", "clip(%x, a_min=-1000f, a_max=1000f)",
             values((4,), "int8"))
    code = kernel_c(c)
    assert "aot_max" not in code and "aot_min" not in code, code
    c = case("c", "%x: Tensor[(4), float32]", "clip(%x, a_min=-inff, a_max=1f)", values((4,)))
    code = kernel_c(c)
    # the upper bound is one compare against the constant (no min helper)
    assert "aot_max" not in code and "aot_min" not in code and ">= 1.0f ? 1.0f :" in code, code


@pytest.mark.parametrize("compiler", compilers())
def test_init_cases_compile_and_run_in_c(compiler, tmp_path):
    check_cases_in_c(CASES, tmp_path, compiler)
