"""Lowering of the shape transforms (aot/emit/lower/ops/transform.py):
reshape, reshape_like, squeeze, expand_dims, transpose, reverse,
concatenate, stack, split, tile, repeat, broadcast_to(_like) and the
collapse_sum anchors, alone and fused with elementwise operators, run by
the kernel-IR evaluator (and once compiled with the C compilers) against
the interpreter.  Reshape rows from tests/cases/transform.py."""

from __future__ import annotations

import numpy as np
import pytest

from cases import transform as table
from kernel_c_harness import compilers
from transform_case_helpers import case, check_case, check_cases_in_c, kernel_c, values

F234 = "Tensor[(2, 3, 4), float32]"
X = values((2, 3, 4))

def _tt(shape, dtype="float32") -> str:
    return f"Tensor[({', '.join(map(str, shape))}{',' if len(shape) == 1 else ''}), {dtype}]"


def _reshape_cases():
    out = []
    for n, (shape, newshape, _) in enumerate(table.small(table.RESHAPES)):
        allow = ", allowzero=True" if table.reshape_allows_zero(shape) else ""
        for inner, what in (("%x", "buffer"), ("exp(%x)", "fused")):
            out.append(case(f"reshape{n}-{what}", f"%x: {_tt(shape)}",
                            f"reshape({inner}, newshape={newshape}{allow})",
                            values(shape, seed=n)))
    for label, dt, newshape in table.labelled_dtypes(table.RESHAPE_DTYPES):
        inner = "logical_not(%x)" if dt == "bool" else "negative(%x)"
        out.append(case(f"reshape-{label}", f"%x: {_tt((2, 3, 4), dt)}",
                        f"reshape({inner}, newshape={newshape})", values((2, 3, 4), dt)))
    return out


CASES = _reshape_cases() + [
    case("reshape_like", f"%x: {F234}, %y: Tensor[(6, 4), int8]", "reshape_like(exp(%x), %y)",
         X, values((6, 4), "int8")),
    case("reshape_like-span", f"%x: {F234}, %y: Tensor[(5, 12, 7), int8]",
         "reshape_like(%x, %y, lhs_begin=1, lhs_end=3, rhs_begin=1, rhs_end=2)",
         X, values((5, 12, 7), "int8")),
    case("squeeze-all", "%x: Tensor[(1, 3, 1, 2), float32]", "squeeze(exp(%x))",
         values((1, 3, 1, 2))),
    case("squeeze-axis", "%x: Tensor[(1, 3, 1, 2), float32]", "squeeze(%x, axis=[-2])",
         values((1, 3, 1, 2))),
    case("expand_dims", f"%x: {F234}", "expand_dims(exp(%x), axis=1, num_newaxis=2)", X),
    case("expand_dims-neg", f"%x: {F234}", "expand_dims(%x, axis=-1)", X),
    case("expand_dims-zero", f"%x: {F234}", "expand_dims(exp(%x), axis=0, num_newaxis=0)", X),
    case("transpose-rev", f"%x: {F234}", "transpose(%x)", X),
    case("transpose-perm", f"%x: {F234}", "transpose(%x, axes=[1, 2, 0])", X),
    case("transpose-neg", f"%x: {F234}", "transpose(exp(%x), axes=[0, -1, -2])", X),
    case("transpose-f16", f"%x: {_tt((2, 3, 4), 'float16')}", "transpose(%x, axes=[2, 0, 1])",
         values((2, 3, 4), "float16")),
    case("reverse0", f"%x: {F234}", "reverse(%x, axis=0)", X),
    case("reverse-last", f"%x: {F234}", "reverse(exp(%x), axis=-1)", X),
    case("concatenate-last", f"%x: {F234}", "concatenate((%x, %x), axis=-1)", X),
    case("concatenate-three", f"%x: {F234}, %y: Tensor[(2, 1, 4), float32]",
         "concatenate((%x, %y, exp(%x)), axis=1)", X, values((2, 1, 4), seed=1)),
    case("concatenate-first", f"%x: {F234}, %y: Tensor[(1, 3, 4), float32]",
         "concatenate((%y, %x), axis=0)", X, values((1, 3, 4), seed=2)),
    case("concatenate-one", f"%x: {F234}", "concatenate((%x,), axis=2)", X),
    case("concatenate-empty-part", f"%x: {F234}, %e: Tensor[(2, 0, 4), float32]",
         "concatenate((%e, %x, %e, %x), axis=1)", X, np.zeros((2, 0, 4), np.float32)),
    case("concatenate-int", "%a: Tensor[(3), int16], %b: Tensor[(2), int16]",
         "concatenate((%a, add(%b, %b), %a), axis=0)", values((3,), "int16"),
         values((2,), "int16", seed=1)),
    case("stack0", f"%x: {F234}", "stack((%x, exp(%x)), axis=0)", X),
    case("stack-mid", f"%x: {F234}", "stack((%x, %x, exp(%x)), axis=1)", X),
    case("stack-last", f"%x: {F234}", "stack((%x, negative(%x)), axis=-1)", X),
    case("stack-one", f"%x: {F234}", "stack((%x,), axis=3)", X),
    case("split-sections", f"%x: {F234}", "split(%x, indices_or_sections=3, axis=1)", X),
    case("split-indices", f"%x: {F234}", "split(exp(%x), indices_or_sections=[1, 3], axis=2)",
         X),
    case("split-item", f"%x: {F234}",
         "add(split(%x, indices_or_sections=2, axis=0).1, split(%x, indices_or_sections=2, "
         "axis=0).0)", X),
    case("tile", f"%x: {F234}", "tile(%x, reps=[2, 1, 2])", X),
    case("tile-longer", "%x: Tensor[(2, 3), float32]", "tile(exp(%x), reps=[2, 1, 3])",
         values((2, 3))),
    case("tile-shorter", f"%x: {F234}", "tile(%x, reps=[3])", X),
    case("tile-empty", f"%x: {F234}", "tile(%x, reps=[])", X),
    case("tile-ones", "%x: Tensor[(1, 3), int32]", "tile(%x, reps=[4, 1])",
         values((1, 3), "int32")),
    case("repeat", f"%x: {F234}", "repeat(%x, repeats=2, axis=-1)", X),
    case("repeat0", f"%x: {F234}", "repeat(exp(%x), repeats=3, axis=0)", X),
    case("repeat1", f"%x: {F234}", "repeat(%x, repeats=1, axis=1)", X),
    case("broadcast_to", "%x: Tensor[(3, 1), float32]", "broadcast_to(%x, shape=[2, 3, 4])",
         values((3, 1))),
    case("broadcast_to-same", f"%x: {F234}", "broadcast_to(exp(%x), shape=[2, 3, 4])", X),
    case("broadcast_to_like", f"%x: Tensor[(4), uint8], %y: {F234}",
         "broadcast_to_like(%x, %y)", values((4,), "uint8"), X),
]


@pytest.mark.parametrize("c", CASES, ids=lambda c: c.id)
def test_transform_lowering(c):
    check_case(c)


# =============================================================== collapse_sum

COLLAPSE = [
    case("collapse_sum_like", f"%x: {F234}, %y: Tensor[(3, 1), float32]",
         "collapse_sum_like(%x, %y)", X, values((3, 1)), rtol=1e-6),
    case("collapse_sum_like-lead", f"%x: {F234}, %y: Tensor[(4), float32]",
         "collapse_sum_like(exp(%x), %y)", X, values((4,))),
    case("collapse_sum_like-scalar", f"%x: {F234}, %y: float32",
         "collapse_sum_like(%x, %y)", X, np.float32(0)),
    case("collapse_sum_like-none", f"%x: {F234}, %y: {F234}", "collapse_sum_like(%x, %y)",
         X, X),
    case("collapse_sum_like-keep1", "%x: Tensor[(2, 1, 3), float32], %y: Tensor[(1, 1, 3), "
         "float32]", "collapse_sum_like(%x, %y)", values((2, 1, 3)), values((1, 1, 3))),
    case("collapse_sum_to", f"%x: {F234}, %s: Tensor[(3), int64]",
         "collapse_sum_to(%x, %s, shape=[2, 1, 4])", X, np.array([2, 1, 4], np.int64)),
    case("collapse_sum_int8-wraps", "%x: Tensor[(40, 3), int8], %y: Tensor[(3), int8]",
         "collapse_sum_like(%x, %y)", values((40, 3), "int8", lo=100, hi=128),
         values((3,), "int8")),
    case("collapse_sum_uint64", "%x: Tensor[(3, 2), uint64], %y: Tensor[(1, 2), uint64]",
         "collapse_sum_like(%x, %y)",
         np.array([[2**64 - 1, 5], [2**63, 7], [2**63, 9]], np.uint64),
         np.zeros((1, 2), np.uint64)),
    case("collapse_sum_int32", "%x: Tensor[(2, 2), int32], %y: Tensor[(2), int32]",
         "collapse_sum_like(%x, %y)", np.array([[2**31 - 1, -5], [1, -2**31]], np.int32),
         np.zeros(2, np.int32)),
    case("collapse_sum_f16", "%x: Tensor[(8, 3), float16], %y: Tensor[(1, 3), float16]",
         "collapse_sum_like(%x, %y)", values((8, 3), "float16"), values((1, 3), "float16"),
         rtol=1e-3),
    case("collapse_sum-negzero", "%x: Tensor[(2, 2), float32], %y: Tensor[(1, 2), float32]",
         "collapse_sum_like(%x, %y)", np.full((2, 2), -0.0, np.float32),
         np.zeros((1, 2), np.float32)),
    case("collapse_sum-epilogue", f"%x: {F234}, %y: Tensor[(3, 1), float32]",
         "multiply(collapse_sum_like(exp(%x), %y), %y)", X, values((3, 1), seed=3)),
]


@pytest.mark.parametrize("c", COLLAPSE, ids=lambda c: c.id)
def test_collapse_sum_lowering(c):
    group = check_case(c)
    assert group.anchor in ("collapse_sum_like", "collapse_sum_to")


def test_collapse_sum_keeps_the_sign_of_zero_as_numpy():
    """NumPy's sum starts from +0.0: a sum of -0.0 is +0.0, even over no axes."""
    from lowering_harness import lower_main, run_lowered
    for c in (COLLAPSE[-2], COLLAPSE[3]):
        _, group = lower_main(c.text)
        args = [np.full(a.shape, -0.0, a.dtype) for a in c.args]
        (got,) = run_lowered(group, args)
        assert not np.signbit(got).any()


# ============================================================= fused chains

FUSED = [
    case("reshape-transpose-add", f"%x: {F234}, %b: Tensor[(4, 1), float32]",
         "add(transpose(reshape(%x, newshape=[6, 4]), axes=[1, 0]), %b)",
         X, values((4, 1), seed=4)),
    case("slice-of-exp", f"%x: {F234}",
         "strided_slice(exp(%x), begin=[1, 0, 3], end=[2, 3, 0], strides=[1, 2, -1])", X),
    case("concat-of-elementwise", f"%x: {F234}, %y: {F234}",
         "concatenate((add(%x, %y), multiply(%x, %y)), axis=1)", X, values((2, 3, 4), seed=5)),
    case("take-computed-indices", f"%x: {F234}, %i: Tensor[(5), int32]",
         'take(exp(%x), add(%i, %i), axis=2, mode="wrap")', X,
         np.array([0, 1, -1, 7, -9], np.int32)),
    case("split-stack-tile", f"%x: {F234}",
         "tile(stack(split(%x, indices_or_sections=2, axis=2), axis=0), reps=[1, 2, 1, 1, 1])",
         X),
    case("transpose-of-concat-of-reshape", "%x: Tensor[(6), float32], %y: Tensor[(2, 2), "
         "float32]", "transpose(concatenate((reshape(%x, newshape=[2, 3]), %y), axis=1))",
         values((6,)), values((2, 2), seed=6)),
    case("reverse-repeat-squeeze", "%x: Tensor[(1, 3, 2), float32]",
         "reverse(repeat(squeeze(sigmoid(%x), axis=[0]), repeats=2, axis=0), axis=1)",
         values((1, 3, 2))),
]


@pytest.mark.parametrize("c", FUSED, ids=lambda c: c.id)
def test_fused_transform_chains(c):
    check_case(c)


# ================================================================ code shape

def test_reshape_of_a_buffer_does_not_unravel():
    c = case("r", f"%x: {F234}", "reshape(%x, newshape=[4, 6])", X)
    code = kernel_c(c)
    assert "aot_div" not in code and "aot_mod" not in code, code


def test_reshape_divides_only_inside_a_group():
    # (2, 3, 4) -> (6, 4): the last axis maps straight through
    c = case("r", f"%x: {F234}", "reshape(exp(%x), newshape=[6, 4])", X)
    code = kernel_c(c)
    assert code.count("aot_div_i32") == 1 and code.count("aot_mod_i32") == 1, code


def test_concatenate_reads_every_part_in_bounds():
    """The evaluator evaluates both arms of a select and checks every
    load; a single float input part read past its end would fail."""
    c = case("c", "%a: Tensor[(1, 2), float32], %b: Tensor[(3, 2), float32]",
             "concatenate((%a, %b, %a), axis=0)", values((1, 2)), values((3, 2), seed=1))
    check_case(c)


def test_collapse_sum_accumulates_in_a_scalar():
    c = case("s", f"%x: {F234}, %y: Tensor[(4), float32]", "collapse_sum_like(%x, %y)",
             X, values((4,)))
    code = kernel_c(c)
    assert "double sum" in code, code


@pytest.mark.parametrize("compiler", compilers())
def test_transform_cases_compile_and_run_in_c(compiler, tmp_path):
    check_cases_in_c(CASES + COLLAPSE + FUSED, tmp_path, compiler)


@pytest.mark.parametrize("body", [
    "transpose(%x)",
    "reverse(%x, axis=0)",
    "strided_slice(%x, begin=[2], end=[-4], strides=[-1])",
    'layout_transform(%x, src_layout="NC", dst_layout="CN")',
    "gather(%x, %i, axis=1)",
    "take(%x, %i)",
])
def test_permuting_transforms_never_write_over_their_input(body):
    """Element i of these results is not element i of the input even when
    the shapes agree, so the output must not overwrite an input in place
    (lower_group's ``inplace_inputs``)."""
    from lowering_harness import lower_main
    _, group = lower_main("def @main(%x: Tensor[(3, 3), float32], %i: Tensor[(3, 3), int32]) "
                          f"{{ {body} }}")
    assert group.inplace_inputs == ()
