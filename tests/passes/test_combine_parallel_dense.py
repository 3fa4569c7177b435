"""CombineParallelDense: before/expected IR for both variants (the cases of
Relay's tests/python/relay/test_pass_combine_parallel_dense.py that apply,
and ours), the interpreter giving the same values before and after, a
10,000-node graph and the pass manager's switches."""

from __future__ import annotations

import numpy as np
import pytest

import aot
from aot.diagnostics import DiagnosticError
from aot.ir.structural import assert_structural_equal
from aot.passes.manager import PassContext, Sequential
from pass_helpers import assert_close_on_random_args, check_rewrite, op_counts, run_with_options, typed

PASS = "CombineParallelDense"


def combine(mod, **opts):
    return run_with_options(PASS, mod, **opts)


def check(before_text: str, expected_text: str, *, params=None, expected_params=None, **opts):
    return check_rewrite(PASS, before_text, expected_text, params=params,
                         expected_params=expected_params, **opts)


def sl(value: str, begin: int, end: int, axis: int = 1) -> str:
    return f"strided_slice({value}, begin=[{begin}], end=[{end}], strides=[1], axes=[{axis}])"


# ------------------------------------------------------- concatenate variant

@pytest.mark.parametrize("i, j, k", [(3, 5, 4), (10, 20, 30)])
def test_flat(i, j, k):
    """Relay's flat case: three widths j, 2j, 3j combine into 6j units."""
    sig = (f"%x: Tensor[({i}, {k}), float32], %w1: Tensor[({j}, {k}), float32], "
           f"%w2: Tensor[({2 * j}, {k}), float32], %w3: Tensor[({3 * j}, {k}), float32]")
    before = f"def @main({sig}) {{\n  (nn.dense(%x, %w1), nn.dense(%x, %w2), nn.dense(%x, %w3))\n}}"
    expected = f"""
def @main({sig}) {{
  %0 = nn.dense(%x, concatenate((%w1, %w2, %w3), axis=0), units={6 * j});
  ({sl("%0", 0, j)}, {sl("%0", j, 3 * j)}, {sl("%0", 3 * j, 6 * j)})
}}"""
    check(before, expected)


# Relay's flat_biasadd shapes for (i, j, k) = (3, 5, 4) with parameter
# biases: a per-unit bias (last axis j / 2j) is concatenated; a bias that
# broadcasts along the units is a different parameter per branch, which
# only Relay's repeat could join, so the combination stops before the add;
# a bias of higher rank than the output broadcasts the dense up and stops it.
BIAS_SHAPES = [
    ((), (), None),
    ((1,), (1,), None),
    ((5,), (1,), None),
    ((5,), (10,), 0),
    ((3, 1), (3, 1), None),
    ((3, 5), (3, 10), 1),
    ((3, 1), (3, 10), None),
    ((9, 3, 5), (9, 3, 10), None),
]


def _shape(s: tuple) -> str:
    return "(" + ", ".join(map(str, s)) + ("," if len(s) == 1 else "") + ")"


@pytest.mark.parametrize("shape1, shape2, axis", BIAS_SHAPES,
                         ids=[f"{a}-{b}" for a, b, _ in BIAS_SHAPES])
def test_flat_bias_add(shape1, shape2, axis):
    sig = ("%x: Tensor[(3, 4), float32], %w1: Tensor[(5, 4), float32], "
           f"%w2: Tensor[(10, 4), float32], %b1: Tensor[{_shape(shape1)}, float32], "
           f"%b2: Tensor[{_shape(shape2)}, float32]")
    before = (f"def @main({sig}) {{\n  (add(nn.dense(%x, %w1), %b1), "
              f"add(nn.dense(%x, %w2), %b2))\n}}")
    dense = "nn.dense(%x, concatenate((%w1, %w2), axis=0), units=15)"
    if axis is None:
        body = f"%0 = {dense};\n  (add({sl('%0', 0, 5)}, %b1), add({sl('%0', 5, 15)}, %b2))"
    else:
        body = (f"%0 = add({dense}, concatenate((%b1, %b2), axis={axis}));\n"
                f"  ({sl('%0', 0, 5)}, {sl('%0', 5, 15)})")
    check(before, f"def @main({sig}) {{\n  {body}\n}}", min_num_branches=2)


def test_flat_constant_followers_are_spread_per_unit():
    """Constant operands that broadcast along the units (Relay repeats
    them with ``repeat``) are repeated at compile time: bias, scale and
    relu all combine."""
    sig = "%x: Tensor[(3, 4), float32], %w1: Tensor[(2, 4), float32], %w2: Tensor[(3, 4), float32]"
    before = f"""
def @main({sig}, %b1: Tensor[(2,), float32], %b2: Tensor[(3,), float32],
          %s1: Tensor[(1,), float32], %s2: Tensor[(1,), float32]) {{
  (nn.relu(multiply(add(nn.dense(%x, %w1), %b1), %s1)),
   nn.relu(multiply(add(nn.dense(%x, %w2), %b2), %s2)))
}}"""
    expected = f"""
def @main({sig}, %b: Tensor[(5,), float32], %s: Tensor[(5,), float32]) {{
  %0 = nn.relu(multiply(add(nn.dense(%x, concatenate((%w1, %w2), axis=0), units=5), %b), %s));
  ({sl("%0", 0, 2)}, {sl("%0", 2, 5)})
}}"""
    b1, b2 = np.float32([1, 2]), np.float32([3, 4, 5])
    params = {"b1": b1, "b2": b2, "s1": np.float32([0.5]), "s2": np.float32([2])}
    want = {"b": np.concatenate([b1, b2]), "s": np.float32([0.5, 0.5, 2, 2, 2])}
    check(before, expected, params=params, expected_params=want, min_num_branches=2)


def test_flat_expand_dims_ends_the_combination():
    """Relay's expand_dims case: expand_dims has an axis, so the slices
    come before it (the slice axis stays the units axis)."""
    sig = ("%x: Tensor[(2, 32), float32], %w1: Tensor[(16, 32), float32], "
           "%w2: Tensor[(8, 32), float32]")
    before = f"""
def @main({sig}) {{
  (expand_dims(nn.dense(%x, %w1), axis=2), expand_dims(nn.dense(%x, %w2), axis=2))
}}"""
    expected = f"""
def @main({sig}) {{
  %0 = nn.dense(%x, concatenate((%w1, %w2), axis=0), units=24);
  (expand_dims({sl("%0", 0, 16)}, axis=2), expand_dims({sl("%0", 16, 24)}, axis=2))
}}"""
    check(before, expected, min_num_branches=2)


def test_flat_three_dimensional_data_slices_the_last_axis():
    sig = ("%x: Tensor[(2, 3, 4), float32], %w1: Tensor[(2, 4), float32], "
           "%w2: Tensor[(5, 4), float32], %w3: Tensor[(1, 4), float32]")
    before = f"def @main({sig}) {{\n  (nn.dense(%x, %w1), nn.dense(%x, %w2), nn.dense(%x, %w3))\n}}"
    expected = f"""
def @main({sig}) {{
  %0 = nn.dense(%x, concatenate((%w1, %w2, %w3), axis=0), units=8);
  ({sl("%0", 0, 2, 2)}, {sl("%0", 2, 7, 2)}, {sl("%0", 7, 8, 2)})
}}"""
    check(before, expected)


def test_flat_different_input_size_or_out_dtype_not_combined():
    text = """
def @main(%x: Tensor[(3, 4), int8], %w1: Tensor[(5, 4), int8], %w2: Tensor[(5, 4), int8],
          %w3: Tensor[(5, 4), int8]) {
  (nn.dense(%x, %w1, out_dtype="int32"), nn.dense(%x, %w2), nn.dense(%x, %w3, out_dtype="int16"))
}"""
    before = typed(text)
    assert_structural_equal(combine(before, min_num_branches=2), before)


# ------------------------------------------------------- batch_matmul variant

@pytest.mark.parametrize("i, j, k", [(3, 5, 4), (10, 20, 30)])
def test_batch(i, j, k):
    """Relay's simple case: w3 has another shape and stays a dense."""
    sig = (f"%x: Tensor[({i}, {k}), float32], %w1: Tensor[({j}, {k}), float32], "
           f"%w2: Tensor[({j}, {k}), float32], %w3: Tensor[({j + 1}, {k}), float32], "
           f"%w4: Tensor[({j}, {k}), float32]")
    before = f"""
def @main({sig}) {{
  (nn.dense(%x, %w1), nn.dense(%x, %w2), nn.dense(%x, %w3), nn.dense(%x, %w4))
}}"""
    expected = f"""
def @main({sig}) {{
  %0 = nn.batch_matmul(stack((%x, %x, %x), axis=0), stack((%w1, %w2, %w4), axis=0),
                      transpose_b=True);
  %1 = split(%0, indices_or_sections=3, axis=0);
  (squeeze(%1.0, axis=[0]), squeeze(%1.1, axis=[0]), nn.dense(%x, %w3), squeeze(%1.2, axis=[0]))
}}"""
    check(before, expected, min_num_branches=2, to_batch_matmul=True)


@pytest.mark.parametrize("bias_2d", [False, True])
def test_batch_bias_scale_reshape(bias_2d):
    """Relay's biasadd_scale_reshape (and biasadd) case: 1-d operands get a
    leading axis before stacking; reshape is injective and stays per branch."""
    b = "(3, 5)" if bias_2d else "(5,)"
    sig = (f"%x: Tensor[(3, 4), float32], %w1: Tensor[(5, 4), float32], "
           f"%w2: Tensor[(5, 4), float32], %b1: Tensor[{b}, float32], %b2: Tensor[{b}, float32], "
           "%s1: Tensor[(1,), float32], %s2: Tensor[(1,), float32]")
    before = f"""
def @main({sig}) {{
  (reshape(multiply(add(nn.dense(%x, %w1), %b1), %s1), newshape=[1, 1, 15]),
   reshape(multiply(add(nn.dense(%x, %w2), %b2), %s2), newshape=[1, 1, 15]))
}}"""
    bias = "stack((%b1, %b2), axis=0)" if bias_2d else \
        "stack((expand_dims(%b1, axis=0), expand_dims(%b2, axis=0)), axis=0)"
    expected = f"""
def @main({sig}) {{
  %0 = nn.batch_matmul(stack((%x, %x), axis=0), stack((%w1, %w2), axis=0), transpose_b=True);
  %1 = multiply(add(%0, {bias}),
                stack((expand_dims(%s1, axis=0), expand_dims(%s2, axis=0)), axis=0));
  %2 = split(%1, indices_or_sections=2, axis=0);
  (reshape(squeeze(%2.0, axis=[0]), newshape=[1, 1, 15]),
   reshape(squeeze(%2.1, axis=[0]), newshape=[1, 1, 15]))
}}"""
    check(before, expected, min_num_branches=2, to_batch_matmul=True)


def test_batch_scalar_operand_is_given_two_axes():
    """A scalar operand becomes (1, 1) before stacking (stacked (B,) would
    broadcast along the units, not the branches)."""
    sig = ("%x: Tensor[(2, 3), float32], %w1: Tensor[(4, 3), float32], "
           "%w2: Tensor[(4, 3), float32], %c1: float32, %c2: float32")
    before = (f"def @main({sig}) {{\n  (add(nn.dense(%x, %w1), %c1), "
              f"add(nn.dense(%x, %w2), %c2))\n}}")
    after = combine(typed(before), min_num_branches=2, to_batch_matmul=True)
    assert op_counts(after)["expand_dims"] == 2 and op_counts(after)["add"] == 1
    assert_close_on_random_args(typed(before), after)


def test_batch_constant_weights_stacked_at_compile_time():
    sig = "%x: Tensor[(2, 3), float32]"
    w = [np.random.default_rng(i).standard_normal((4, 3)).astype(np.float32) for i in range(3)]
    before = typed(f"def @main({sig}, %w0: Tensor[(4, 3), float32], %w1: Tensor[(4, 3), float32], "
                   f"%w2: Tensor[(4, 3), float32]) {{\n  (nn.dense(%x, %w0), nn.dense(%x, %w1), "
                   f"nn.dense(%x, %w2))\n}}", {f"w{i}": a for i, a in enumerate(w)})
    after = combine(before, to_batch_matmul=True)
    assert op_counts(after) == {"stack": 1, "nn.batch_matmul": 1, "split": 1, "squeeze": 3}
    assert_close_on_random_args(before, after)


# ------------------------------------------------------------ both variants

def _deep_module():
    from aot import builder as B
    x = B.var("x", B.tensor((2, 3)))
    ws = [B.var(f"w{i}", B.tensor((3, 3))) for i in range(3)]
    y = x
    for _ in range(10_000):
        y = B.call("tanh", y)
    return aot.infer_types(B.module(main=B.function(
        [x, *ws], B.tuple_(*[B.call("nn.relu", B.call("nn.dense", y, w)) for w in ws]))))


@pytest.mark.parametrize("to_batch", [False, True])
def test_deep_graph(to_batch):
    after = combine(_deep_module(), to_batch_matmul=to_batch)
    assert op_counts(after)["nn.relu"] == 1 and op_counts(after)["tanh"] == 10_000
    assert op_counts(after)["nn.batch_matmul" if to_batch else "nn.dense"] == 1


def test_disabled_by_name_and_required():
    text = """
def @main(%x: Tensor[(2, 3), float32], %w1: Tensor[(4, 3), float32],
          %w2: Tensor[(5, 3), float32], %w3: Tensor[(6, 3), float32]) {
  (nn.dense(%x, %w1), nn.dense(%x, %w2), nn.dense(%x, %w3))
}"""
    before = typed(text)
    with PassContext(disabled=[PASS], verify=True):
        assert Sequential([PASS])(before) is before
    with PassContext(verify=True):   # opt level 4: off by default
        assert Sequential([PASS])(before) is before
    with PassContext(required=[PASS], verify=True):
        after = Sequential([PASS])(before)
    assert op_counts(after)["nn.dense"] == 1
    assert_close_on_random_args(before, after)


@pytest.mark.parametrize("opts, message", [
    ({"min_num_branches": 0}, "min_num_branches"),
    ({"to_batch_matmul": 1}, "to_batch_matmul"),
])
def test_bad_options_are_user_errors(opts, message):
    with pytest.raises(DiagnosticError, match=message):
        combine(typed("def @main(%x: Tensor[(2, 3), float32]) {\n  %x\n}"), **opts)
