"""Lowering of the index-based transforms (aot/emit/lower/ops/transform_index.py):
strided_slice (every attribute form), take (clip / wrap / fast, negative
and out-of-range indices of every integer dtype, axis=None, batch_dims),
gather, one_hot and where, run by the kernel-IR evaluator -- which checks
every load against its buffer, so an index that escaped the clamping
fails -- against the interpreter, and once compiled with the C compilers.
Rows from tests/cases/transform.py."""

from __future__ import annotations

import numpy as np
import pytest

from aot.emit.lower.registry import LoweringError
from cases import transform as table
from cases.common import attr_text, tensor_type
from kernel_c_harness import compilers
from lowering_harness import lower_main
from transform_case_helpers import case, check_case, check_cases_in_c, kernel_c, values

X3 = np.arange(4 * 5 * 6, dtype=np.float32).reshape(4, 5, 6)
T3 = "Tensor[(4, 5, 6), float32]"

SLICES = [attr_text(a) for a in table.SLICES]
SLICE_CASES = [case(f"slice{n}", f"%x: {T3}", f"strided_slice(%x, {a})", X3)
               for n, a in enumerate(SLICES)] + [
    case(f"slice{n}-exp", f"%x: {T3}", f"strided_slice(exp(multiply(%x, 0.01f)), {a})", X3)
    for n, a in enumerate(SLICES) if n % 3 == 0]

TAKE_CASES = []
for _mode in table.TAKE_MODES:
    for _dt in table.INDEX_DTYPES:
        _i = table.index_values(_dt)
        TAKE_CASES.append(case(f"take-{_mode}-{_dt}", f"%x: {T3}, %i: Tensor[({len(_i)}), {_dt}]",
                               f'take(%x, %i, axis=1, mode="{_mode}")', X3, _i))
TAKE_CASES += [
    case("take-none-clip", f"%x: {T3}, %i: Tensor[(2, 3), int32]", 'take(%x, %i, mode="clip")',
         X3, np.array([[0, 119, 120], [-1, 57, 500]], np.int32)),
    case("take-none-wrap", f"%x: {T3}, %i: Tensor[(2, 3), int64]", 'take(%x, %i, mode="wrap")',
         X3, np.array([[0, 119, 120], [-1, 57, -500]], np.int64)),
    case("take-axis0-2d", f"%x: {T3}, %i: Tensor[(2, 2), int32]",
         'take(%x, %i, axis=0, mode="wrap")', X3, np.array([[0, -1], [5, 2]], np.int32)),
    case("take-last-axis", f"%x: {T3}, %i: Tensor[(3), int32]",
         'take(%x, %i, axis=-1, mode="clip")', X3, np.array([5, 6, -3], np.int32)),
    case("take-scalar-index", f"%x: {T3}, %i: int32", 'take(%x, %i, axis=2)', X3,
         np.int32(4)),
    case("take-batch1", "%x: Tensor[(2, 5, 3), float32], %i: Tensor[(2, 4), int32]",
         'take(%x, %i, axis=1, batch_dims=1, mode="wrap")', values((2, 5, 3)),
         np.array([[0, 4, 6, -1], [2, 3, -7, 1]], np.int32)),
    case("take-batch-neg", "%x: Tensor[(2, 3, 5), float32], %i: Tensor[(2, 3, 2), int32]",
         'take(%x, %i, axis=2, batch_dims=-1, mode="clip")', values((2, 3, 5)),
         np.array([[[0, 9], [-1, 2], [4, 3]], [[1, 1], [5, 0], [2, -4]]], np.int32)),
    case("take-axis-extent1", "%x: Tensor[(3, 1), float32], %i: Tensor[(4), int32]",
         'take(%x, %i, axis=1, mode="wrap")', values((3, 1)), np.array([0, 5, -3, 9], np.int32)),
    case("take-empty-indices", f"%x: {T3}, %i: Tensor[(0), int32]",
         'take(%x, %i, axis=1)', X3, np.zeros(0, np.int32)),
    case("take-pow2-wrap", "%x: Tensor[(8, 2), int16], %i: Tensor[(5), int8]",
         'take(%x, %i, axis=0, mode="wrap")', values((8, 2), "int16"),
         np.array([-128, -1, 7, 8, 127], np.int8)),
]

GATHER_CASES = [
    case(f"gather-{axis}-{dt}", f"%x: {T3}, %i: {tensor_type(shape, dt)}",
         f"gather(%x, %i, axis={axis})", X3, values(shape, dt, seed=axis + 5, lo=-8, hi=9))
    for axis, shape in table.GATHERS
    for dt in table.GATHER_DTYPES
]

ONE_HOT_CASES = [
    case(f"one_hot-{axis}-{dt}", f"%i: Tensor[(2, 3), {dt}]",
         f'one_hot(%i, 5f, -1f, depth=4, axis={axis}, dtype="{out}")',
         table.one_hot_indices(dt))
    for axis, dt, out in table.ONE_HOTS
] + [
    case("one_hot-convert", "%i: Tensor[(3), int32], %on: float32, %off: float32",
         'one_hot(%i, %on, %off, depth=3, axis=0, dtype="int8")',
         np.array([2, 0, 7], np.int32), np.float32(300.7), np.float32(-2.9)),
    case("one_hot-scalar", "%i: int32", 'one_hot(%i, 1f, 0f, depth=3, dtype="float32")',
         np.int32(1)),
    case("one_hot-uint64-huge", "%i: Tensor[(2), uint64]",
         'one_hot(%i, 1, 0, depth=3, dtype="int32")', np.array([2**64 - 1, 1], np.uint64)),
]

WHERE_CASES = [
    case("where-bool", "%c: Tensor[(3, 1), bool], %x: Tensor[(2, 3, 4), float32], "
         "%y: Tensor[(4), float32]", "where(%c, %x, %y)", values((3, 1), "bool"),
         values((2, 3, 4)), values((4,), seed=1)),
    case("where-float-nan", "%c: Tensor[(4), float32], %x: Tensor[(4), int8], "
         "%y: Tensor[(4), int8]", "where(%c, %x, %y)",
         np.array([0.0, -0.0, np.nan, 2.5], np.float32), values((4,), "int8"),
         values((4,), "int8", seed=2)),
    case("where-int-scalar", "%c: Tensor[(2, 2), int32], %x: float32, %y: Tensor[(2, 2), "
         "float32]", "where(%c, %x, %y)", np.array([[0, 3], [-1, 0]], np.int32),
         np.float32(9), values((2, 2))),
]

CASES = SLICE_CASES + TAKE_CASES + GATHER_CASES + ONE_HOT_CASES + WHERE_CASES


@pytest.mark.parametrize("c", CASES, ids=lambda c: c.id)
def test_index_transform_lowering(c):
    check_case(c)


FUSED = [
    case("take-computed", "%x: Tensor[(5, 3), float32], %i: Tensor[(4), float32]",
         'take(%x, cast(multiply(%i, 3f), dtype="int16"), axis=0, mode="wrap")',
         values((5, 3)), np.array([0.5, -1.2, 2.9, np.nan], np.float32)),
    case("gather-argmax-like", "%x: Tensor[(3, 4), float32], %i: Tensor[(3, 1), int32]",
         "exp(gather(negative(%x), add(%i, 1), axis=1))", values((3, 4)),
         np.array([[0], [2], [3]], np.int32)),
    case("where-of-compare", "%x: Tensor[(2, 3), float32]",
         "where(greater(%x, 0f), exp(%x), multiply(%x, 0.5f))", values((2, 3))),
    case("one_hot-of-take", "%i: Tensor[(3), int32], %t: Tensor[(5), int32]",
         'add(one_hot(take(%t, %i, axis=0, mode="clip"), 1f, 0f, depth=4, axis=-1, '
         'dtype="float32"), 1f)', np.array([0, 4, 9], np.int32),
         np.array([3, 0, 2, 1, 5], np.int32)),
    case("slice-of-take", "%x: Tensor[(4, 6), float32], %i: Tensor[(5), int32]",
         'strided_slice(take(%x, %i, axis=1, mode="wrap"), begin=[3, 4], end=[0, 0], '
         'strides=[-1, -2])', values((4, 6)), np.array([1, 7, -2, 3, 0], np.int32)),
]


@pytest.mark.parametrize("c", FUSED, ids=lambda c: c.id)
def test_fused_index_chains(c):
    check_case(c)


def test_clip_index_of_narrow_dtype_omits_decided_comparisons():
    # a uint8 index can never be negative: only the upper clamp remains
    c = case("t", "%x: Tensor[(300), float32], %i: Tensor[(4), uint8]",
             'take(%x, %i, axis=0, mode="clip")', values((300,)), np.zeros(4, np.uint8))
    code = kernel_c(c)
    assert "< 0" not in code and "299" not in code, code
    c = case("t", "%x: Tensor[(10), float32], %i: Tensor[(4), uint8]",
             'take(%x, %i, axis=0, mode="clip")', values((10,)), np.zeros(4, np.uint8))
    code = kernel_c(c)
    assert "< 0" not in code and "> 9" in code, code


def test_wrap_on_a_power_of_two_is_a_mask():
    c = case("t", "%x: Tensor[(8), float32], %i: Tensor[(4), int32]",
             'take(%x, %i, axis=0, mode="wrap")', values((8,)), np.zeros(4, np.int32))
    code = kernel_c(c)
    assert "& 7" in code and "aot_floormod" not in code, code


def test_take_from_an_empty_axis_is_a_lowering_error():
    text = ("def @main(%x: Tensor[(2, 0), float32], %i: Tensor[(3), int32]) {\n"
            '  take(%x, %i, axis=1)\n}\n')
    with pytest.raises(LoweringError, match="extent 0"):
        lower_main(text)


@pytest.mark.parametrize("compiler", compilers())
def test_index_cases_compile_and_run_in_c(compiler, tmp_path):
    check_cases_in_c(CASES + FUSED, tmp_path, compiler)
