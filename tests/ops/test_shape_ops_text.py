"""The transform, reduce and algorithm operators in the text format: each
call with attributes parses, prints back and re-parses to the same
program, type-checks to the expected type, and a few programs evaluate
with the interpreter as NumPy does."""

from __future__ import annotations

import numpy as np
import pytest

import aot
from aot.ir.structural import structural_equal
from op_helpers import program

F = "Tensor[(2, 3, 4), float32]"
I = "Tensor[(2), int32]"

# (parameters, call, expected result type)
CALLS = [
    (f"%x: {F}", "reshape(%x, newshape=[-1, 4])", "Tensor[(6, 4), float32]"),
    (f"%x: {F}", "reshape(%x, newshape=[0, -4, 1, 3, -2], allowzero=False)",
     "Tensor[(2, 1, 3, 4), float32]"),
    (f"%x: {F}, %y: Tensor[(6, 4), int8]", "reshape_like(%x, %y)", "Tensor[(6, 4), float32]"),
    (f"%x: {F}", "transpose(%x, axes=[0, 2, 1])", "Tensor[(2, 4, 3), float32]"),
    (f"%x: {F}", "transpose(%x)", "Tensor[(4, 3, 2), float32]"),
    ("%x: Tensor[(1, 3, 1), float32]", "squeeze(%x, axis=[0])", "Tensor[(3, 1), float32]"),
    (f"%x: {F}", "expand_dims(%x, axis=1, num_newaxis=2)", "Tensor[(2, 1, 1, 3, 4), float32]"),
    (f"%x: {F}", "concatenate((%x, %x), axis=-1)", "Tensor[(2, 3, 8), float32]"),
    (f"%x: {F}", "stack((%x, %x, %x), axis=1)", "Tensor[(2, 3, 3, 4), float32]"),
    (f"%x: {F}", "split(%x, indices_or_sections=[1, 3], axis=2)",
     "(Tensor[(2, 3, 1), float32], Tensor[(2, 3, 2), float32], Tensor[(2, 3, 1), float32])"),
    (f"%x: {F}", "split(%x, indices_or_sections=3, axis=1).1", "Tensor[(2, 1, 4), float32]"),
    (f"%x: {F}", "tile(%x, reps=[2, 1, 1])", "Tensor[(4, 3, 4), float32]"),
    (f"%x: {F}", "repeat(%x, repeats=2, axis=-1)", "Tensor[(2, 3, 8), float32]"),
    (f"%x: {F}", "reverse(%x, axis=1)", F),
    (f"%x: {F}", "broadcast_to(%x, shape=[5, 2, 3, 4])", "Tensor[(5, 2, 3, 4), float32]"),
    (f"%x: {F}, %y: Tensor[(3, 1), float32]", "collapse_sum_like(%x, %y)",
     "Tensor[(3, 1), float32]"),
    (f"%x: {F}", "strided_slice(%x, begin=[0, 1], end=[2, -1], strides=[1, 1], axes=None)",
     "Tensor[(2, 1, 4), float32]"),
    (f"%x: {F}", 'strided_slice(%x, begin=[1], end=[2], axes=[2], slice_mode="size")',
     "Tensor[(2, 3, 2), float32]"),
    (f"%x: {F}, %i: {I}", 'take(%x, %i, axis=1, mode="wrap")', "Tensor[(2, 2, 4), float32]"),
    (f"%x: {F}, %i: Tensor[(2, 3, 1), int64]", "gather(%x, %i, axis=2)",
     "Tensor[(2, 3, 1), float32]"),
    (f"%i: {I}", 'one_hot(%i, 1f, 0f, depth=3, axis=-1, dtype="float32")',
     "Tensor[(2, 3), float32]"),
    (f"%x: {F}, %c: Tensor[(3, 1), bool]", "where(%c, %x, %x)", F),
    (f"%x: {F}", 'cast(%x, dtype="int8")', "Tensor[(2, 3, 4), int8]"),
    (f"%x: {F}, %i: {I}", "cast_like(%x, %i)", "Tensor[(2, 3, 4), int32]"),
    (f"%x: {F}", "clip(%x, a_min=-1f, a_max=2.5f)", F),
    ("", 'zeros(shape=[2, 2], dtype="int16")', "Tensor[(2, 2), int16]"),
    ("", 'ones(shape=[3], dtype="float32")', "Tensor[(3), float32]"),
    ("", 'full(7, shape=[2], dtype="int8")', "Tensor[(2), int8]"),
    (f"%x: {F}", "full_like(%x, 2f)", F),
    (f"%x: {F}", "zeros_like(%x)", F),
    (f"%x: {F}", "ones_like(%x)", F),
    ("", 'arange(0f, 5f, 2f, start=0f, stop=5f, step=2f, dtype="float32")',
     "Tensor[(3), float32]"),
    ("%x: Tensor[(1, 8, 2, 2), float32]",
     'layout_transform(%x, src_layout="NCHW", dst_layout="NCHW4c")',
     "Tensor[(1, 2, 2, 2, 4), float32]"),
    (f"%x: {F}", "sum(%x, axis=[1], keepdims=True)", "Tensor[(2, 1, 4), float32]"),
    (f"%x: {F}", "mean(%x, axis=[-1], keepdims=True)", "Tensor[(2, 3, 1), float32]"),
    (f"%x: {F}", "max(%x, axis=[0], exclude=True)", "Tensor[(2), float32]"),
    (f"%x: {F}", "min(%x)", "float32"),
    (f"%x: {F}", "prod(%x, axis=[0, 2])", "Tensor[(3), float32]"),
    (f"%x: {F}", "logsumexp(%x, axis=[1])", "Tensor[(2, 4), float32]"),
    ("%b: Tensor[(2, 3), bool]", "all(%b, axis=[1])", "Tensor[(2), bool]"),
    ("%b: Tensor[(2, 3), bool]", "any(%b)", "bool"),
    (f"%x: {F}", "argmax(%x, axis=[1], keepdims=True, select_last_index=True)",
     "Tensor[(2, 1, 4), int32]"),
    (f"%x: {F}", "argmin(%x, axis=[0, 1])", "Tensor[(4), int32]"),
    (f"%x: {F}, %m: Tensor[(2, 1, 4), float32]", "variance(%x, %m, axis=[1], unbiased=True)",
     "Tensor[(2, 4), float32]"),
    (f"%x: {F}, %m: Tensor[(2, 1, 4), float32]", "std(%x, %m, axis=[1])",
     "Tensor[(2, 4), float32]"),
    (f"%x: {F}", 'argsort(%x, axis=1, is_ascend=False, dtype="int64")',
     "Tensor[(2, 3, 4), int64]"),
    (f"%x: {F}", "sort(%x, axis=0)", F),
    (f"%x: {F}", 'topk(%x, k=2, axis=-1, ret_type="both", is_ascend=False, dtype="int32")',
     "(Tensor[(2, 3, 2), float32], Tensor[(2, 3, 2), int32])"),
    (f"%x: {F}", 'topk(%x, k=1, ret_type="indices")', "Tensor[(2, 3, 1), int32]"),
]


@pytest.mark.parametrize("params,call,expected", CALLS, ids=[c[1].split("(")[0] + str(i)
                                                            for i, c in enumerate(CALLS)])
def test_parse_print_reparse_and_type(params, call, expected):
    mod = aot.parse(program(params, call))
    text = str(mod)
    again = aot.parse(text)
    assert structural_equal(mod, again), text
    assert str(again) == text
    typed = aot.infer_types(mod)
    assert str(typed["main"].checked_type.ret_type) == expected


def test_bad_attribute_is_a_diagnostic():
    with pytest.raises(aot.DiagnosticError, match="neither a dimension"):
        aot.infer_types(aot.parse(program(f"%x: {F}", "reshape(%x, newshape=[-5])")))
    with pytest.raises(aot.DiagnosticError, match=r"`reshape`: cannot reshape \(2, 3, 4\)"):
        aot.infer_types(aot.parse(program(f"%x: {F}", "reshape(%x, newshape=[5, 5])")))
    with pytest.raises(aot.DiagnosticError, match=r"3:3: error: `split`: 5 sections"):
        aot.infer_types(aot.parse(program(f"%x: {F}", "split(%x, indices_or_sections=5)")))


def test_interpret_a_pipeline():
    text = program(f"%x: {F}, %i: {I}", """
  %0 = reshape(%x, newshape=[-1, 4]);
  %1 = transpose(%0, axes=[1, 0]);
  %2 = split(%1, indices_or_sections=2, axis=0);
  %3 = concatenate(%2, axis=1);
  %4 = strided_slice(%3, begin=[0, 1], end=[4, -1], strides=[1, 2], axes=None);
  %5 = take(%4, %i, axis=1, mode="wrap");
  %6 = sum(%5, axis=[-1], keepdims=True);
  (topk(%6, k=2, axis=0), argmax(%x, axis=[1, 2], select_last_index=True))""")
    x = np.random.default_rng(0).standard_normal((2, 3, 4)).astype(np.float32)
    i = np.array([0, -1], np.int32)
    (values, indices), am = aot.interpret(aot.parse(text), x, i)
    t = x.reshape(-1, 4).T
    c = np.concatenate(np.split(t, 2, axis=0), axis=1)
    s = c[:, 1:-1:2]
    taken = np.take(s, i, axis=1, mode="wrap")
    sums = taken.sum(axis=-1, keepdims=True, dtype=np.float64).astype(np.float32)
    order = np.argsort(-sums[:, 0], kind="stable")[:2]
    np.testing.assert_allclose(values[:, 0], sums[order, 0], rtol=1e-6)
    np.testing.assert_array_equal(indices[:, 0], order)
    flat = x.reshape(2, -1)
    want = flat.shape[1] - 1 - np.argmax(flat[:, ::-1], axis=1)
    np.testing.assert_array_equal(am, want)


def test_interpret_init_and_layout():
    text = program("%x: Tensor[(1, 8, 2, 2), float32]", """
  %0 = layout_transform(%x, src_layout="NCHW", dst_layout="NCHW4c");
  %1 = layout_transform(%0, src_layout="NCHW4c", dst_layout="NHWC");
  %2 = arange(0f, 8f, 1f, start=0f, stop=8f, step=1f, dtype="float32");
  %3 = add(%1, %2);
  (%3, cast(clip(%3, a_min=0f, a_max=9.5f), dtype="uint8"), one_hot(argmax(%x, axis=[1]),
   1f, 0f, depth=8, axis=1, dtype="float32"))""")
    x = np.random.default_rng(1).standard_normal((1, 8, 2, 2)).astype(np.float32)
    nhwc, clipped, hot = aot.interpret(aot.parse(text), x)
    want = np.transpose(x, (0, 2, 3, 1)) + np.arange(8, dtype=np.float32)
    np.testing.assert_array_equal(nhwc, want)
    np.testing.assert_array_equal(clipped, np.trunc(np.clip(want, 0, 9.5)).astype(np.uint8))
    np.testing.assert_array_equal(hot.argmax(axis=1), x.argmax(axis=1))
