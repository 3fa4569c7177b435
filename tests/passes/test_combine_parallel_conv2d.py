"""CombineParallelConv2D: before/expected IR (the cases of Relay's
tests/python/relay/test_pass_combine_parallel_conv2d.py and ours), the
interpreter giving the same values before and after, what must not
combine, a 10,000-node graph and the pass manager's switches."""

from __future__ import annotations

import numpy as np
import pytest

import aot
from aot.diagnostics import DiagnosticError
from aot.ir.structural import assert_structural_equal
from aot.passes.manager import PassContext, Sequential, run_pass
from pass_helpers import assert_close_on_random_args, check_rewrite, op_counts, run_with_options, typed

PASS = "CombineParallelConv2D"


def combine(mod, **opts):
    return run_with_options(PASS, mod, **opts)


def check(before_text: str, expected_text: str, *, params=None, expected_params=None, **opts):
    return check_rewrite(PASS, before_text, expected_text, params=params,
                         expected_params=expected_params, **opts)


def f32(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


# ------------------------------------------------------------ Relay's cases

@pytest.mark.parametrize("c1, c2, c3, c4", [(4, 4, 4, 4), (4, 8, 4, 7)])
def test_simple(c1, c2, c3, c4):
    """Three 1x1 convolutions combine; the 3x3 one and the pool do not."""
    sig = (f"%x: Tensor[(1, 4, 16, 16), float32], %w1: Tensor[({c1}, 4, 1, 1), float32], "
           f"%w2: Tensor[({c2}, 4, 1, 1), float32], %w3: Tensor[({c3}, 4, 3, 3), float32], "
           f"%w4: Tensor[({c4}, 4, 1, 1), float32]")
    before = f"""
def @main({sig}) {{
  %0 = nn.conv2d(%x, %w1);
  %1 = nn.conv2d(%x, %w2);
  %2 = nn.conv2d(%x, %w3);
  %3 = nn.conv2d(%x, %w4);
  (%0, %1, %2, %3, nn.max_pool2d(%x))
}}"""
    n = c1 + c2 + c4
    expected = f"""
def @main({sig}) {{
  %0 = nn.conv2d(%x, concatenate((%w1, %w2, %w4), axis=0), channels={n});
  (strided_slice(%0, begin=[0], end=[{c1}], strides=[1], axes=[1]),
   strided_slice(%0, begin=[{c1}], end=[{c1 + c2}], strides=[1], axes=[1]),
   nn.conv2d(%x, %w3),
   strided_slice(%0, begin=[{c1 + c2}], end=[{n}], strides=[1], axes=[1]),
   nn.max_pool2d(%x))
}}"""
    check(before, expected, min_num_branches=2)


def test_scale_relu():
    """conv + per-channel scale + relu combine in both branches; the add
    that only the second branch has stays on its slice."""
    sig = ("%x: Tensor[(1, 4, 16, 16), float32], %w1: Tensor[(4, 4, 1, 1), float32], "
           "%w2: Tensor[(8, 4, 1, 1), float32], %s1: Tensor[(4, 1, 1), float32], "
           "%s2: Tensor[(8, 1, 1), float32], %b: Tensor[(8, 1, 1), float32]")
    before = f"""
def @main({sig}) {{
  %0 = nn.relu(multiply(nn.conv2d(%x, %w1), %s1));
  %1 = add(nn.relu(multiply(nn.conv2d(%x, %w2), %s2)), %b);
  (%0, %1)
}}"""
    expected = f"""
def @main({sig}) {{
  %0 = nn.conv2d(%x, concatenate((%w1, %w2), axis=0), channels=12);
  %1 = nn.relu(multiply(%0, concatenate((%s1, %s2), axis=0)));
  (strided_slice(%1, begin=[0], end=[4], strides=[1], axes=[1]),
   add(strided_slice(%1, begin=[4], end=[12], strides=[1], axes=[1]), %b))
}}"""
    check(before, expected, min_num_branches=2)


def test_scale_broadcast_along_channels_is_not_combined():
    """Relay's un-combinable scale: distinct (1,) scales broadcast along
    the channels, so only the convolutions combine."""
    sig = ("%x: Tensor[(1, 4, 16, 16), float32], %w1: Tensor[(4, 4, 1, 1), float32], "
           "%w2: Tensor[(8, 4, 1, 1), float32], %s1: Tensor[(1,), float32], "
           "%s2: Tensor[(1,), float32]")
    before = f"""
def @main({sig}) {{
  (multiply(nn.conv2d(%x, %w1), %s1), multiply(nn.conv2d(%x, %w2), %s2))
}}"""
    expected = f"""
def @main({sig}) {{
  %0 = nn.conv2d(%x, concatenate((%w1, %w2), axis=0), channels=12);
  (multiply(strided_slice(%0, begin=[0], end=[4], strides=[1], axes=[1]), %s1),
   multiply(strided_slice(%0, begin=[4], end=[12], strides=[1], axes=[1]), %s2))
}}"""
    check(before, expected, min_num_branches=2)


def test_multiple_blocks():
    """Stacked blocks: each block's root is the previous block's output."""
    repeat = 4
    body, want = ["%y0 = %x;"], ["%y0 = %x;"]
    for i in range(repeat):
        body.append(f"%y{i + 1} = concatenate((nn.conv2d(%y{i}, %w), nn.conv2d(%y{i}, %w)), "
                    f"axis=1);")
        want.append(f"%c{i} = nn.conv2d(%y{i}, concatenate((%w, %w), axis=0), channels=4);")
        want.append(f"%y{i + 1} = concatenate((strided_slice(%c{i}, begin=[0], end=[2], "
                    f"strides=[1], axes=[1]), strided_slice(%c{i}, begin=[2], end=[4], "
                    f"strides=[1], axes=[1])), axis=1);")
    sig = "%x: Tensor[(1, 4, 16, 16), float32], %w: Tensor[(2, 4, 1, 1), float32]"
    before = "def @main(" + sig + ") {\n  let " + "\n  let ".join(body) + f"\n  %y{repeat}\n}}"
    expected = "def @main(" + sig + ") {\n  let " + "\n  let ".join(want) + f"\n  %y{repeat}\n}}"
    before_mod = run_pass("ToGraphNormalForm", typed(before))
    after = combine(before_mod, min_num_branches=2)
    assert_structural_equal(after, run_pass("ToGraphNormalForm", typed(expected)))
    assert op_counts(after)["nn.conv2d"] == repeat
    assert_close_on_random_args(before_mod, after)


# ------------------------------------------------------------- our cases

INCEPTION = """
def @main(%x: Tensor[(1, 8, 10, 10), float32], %w1: Tensor[(4, 8, 1, 1), float32],
          %w2: Tensor[(6, 8, 1, 1), float32], %w3: Tensor[(2, 8, 1, 1), float32],
          %b1: Tensor[(4,), float32], %b2: Tensor[(6,), float32], %b3: Tensor[(2,), float32],
          %k2: Tensor[(5, 6, 3, 3), float32], %k3: Tensor[(3, 2, 5, 5), float32]) {
  %0 = nn.relu(nn.bias_add(nn.conv2d(%x, %w1), %b1));
  %1 = nn.relu(nn.bias_add(nn.conv2d(%x, %w2), %b2));
  %2 = nn.relu(nn.bias_add(nn.conv2d(%x, %w3), %b3));
  %3 = nn.conv2d(%1, %k2, padding=[1, 1]);
  %4 = nn.conv2d(%2, %k3, padding=[2, 2]);
  concatenate((%0, %3, %4), axis=1)
}"""


def inception_params() -> dict:
    shapes = {"w1": (4, 8, 1, 1), "w2": (6, 8, 1, 1), "w3": (2, 8, 1, 1), "b1": (4,),
              "b2": (6,), "b3": (2,), "k2": (5, 6, 3, 3), "k3": (3, 2, 5, 5)}
    return {k: f32(*s, seed=i) for i, (k, s) in enumerate(shapes.items())}


def test_constant_weights_and_biases_concatenated_at_compile_time():
    """An Inception-like block with constant weights: one 1x1 convolution
    with one weight and one bias constant (no concatenate call left), the
    ReLU combined, the 3x3 and 5x5 convolutions reading slices."""
    p = inception_params()
    expected = """
def @main(%x: Tensor[(1, 8, 10, 10), float32], %w: Tensor[(12, 8, 1, 1), float32],
          %b: Tensor[(12,), float32], %k2: Tensor[(5, 6, 3, 3), float32],
          %k3: Tensor[(3, 2, 5, 5), float32]) {
  %0 = nn.relu(nn.bias_add(nn.conv2d(%x, %w, channels=12), %b));
  %3 = nn.conv2d(strided_slice(%0, begin=[4], end=[10], strides=[1], axes=[1]), %k2,
                 padding=[1, 1]);
  %4 = nn.conv2d(strided_slice(%0, begin=[10], end=[12], strides=[1], axes=[1]), %k3,
                 padding=[2, 2]);
  concatenate((strided_slice(%0, begin=[0], end=[4], strides=[1], axes=[1]), %3, %4), axis=1)
}"""
    want = {"w": np.concatenate([p["w1"], p["w2"], p["w3"]]),
            "b": np.concatenate([p["b1"], p["b2"], p["b3"]]), "k2": p["k2"], "k3": p["k3"]}
    after = check(INCEPTION, expected, params=p, expected_params=want)
    assert "concatenate" in op_counts(after) and op_counts(after)["concatenate"] == 1  # the block's own


def test_nhwc_hwio_concatenates_on_kernel_o_and_slices_on_c():
    sig = ("%x: Tensor[(1, 6, 6, 3), float32], %w1: Tensor[(1, 1, 3, 4), float32], "
           "%w2: Tensor[(1, 1, 3, 5), float32], %w3: Tensor[(1, 1, 3, 2), float32], "
           "%b1: Tensor[(4,), float32], %b2: Tensor[(5,), float32], %b3: Tensor[(2,), float32]")
    conv = 'data_layout="NHWC", kernel_layout="HWIO"'
    before = f"""
def @main({sig}) {{
  (add(nn.conv2d(%x, %w1, {conv}), %b1), add(nn.conv2d(%x, %w2, {conv}), %b2),
   add(nn.conv2d(%x, %w3, {conv}), %b3))
}}"""
    expected = f"""
def @main({sig}) {{
  %0 = add(nn.conv2d(%x, concatenate((%w1, %w2, %w3), axis=3), channels=11, {conv}),
           concatenate((%b1, %b2, %b3), axis=0));
  (strided_slice(%0, begin=[0], end=[4], strides=[1], axes=[3]),
   strided_slice(%0, begin=[4], end=[9], strides=[1], axes=[3]),
   strided_slice(%0, begin=[9], end=[11], strides=[1], axes=[3]))
}}"""
    check(before, expected)


def test_followers_broadcast_along_channels():
    """clip (no operand), a shared parameter and distinct scalar constants
    broadcast along the channels: all combine (the constants repeated per
    channel at compile time)."""
    sig = ("%x: Tensor[(1, 3, 5, 5), float32], %w1: Tensor[(2, 3, 1, 1), float32], "
           "%w2: Tensor[(3, 3, 1, 1), float32], %w3: Tensor[(1, 3, 1, 1), float32], "
           "%s: Tensor[(5, 5), float32]")

    def branch(i, c):
        return f"multiply(clip(subtract(nn.conv2d(%x, %w{i}), %s), a_min=0f, a_max=6f), {c})"

    before = f"""
def @main({sig}) {{
  ({branch(1, "0.5f")}, {branch(2, "2f")}, {branch(3, "3f")})
}}"""
    expected = f"""
def @main({sig}, %c: Tensor[(6, 1, 1), float32]) {{
  %0 = nn.conv2d(%x, concatenate((%w1, %w2, %w3), axis=0), channels=6);
  %1 = multiply(clip(subtract(%0, %s), a_min=0f, a_max=6f), %c);
  (strided_slice(%1, begin=[0], end=[2], strides=[1], axes=[1]),
   strided_slice(%1, begin=[2], end=[5], strides=[1], axes=[1]),
   strided_slice(%1, begin=[5], end=[6], strides=[1], axes=[1]))
}}"""
    scale = np.array([0.5, 0.5, 2, 2, 2, 3], np.float32).reshape(6, 1, 1)
    check(before, expected, expected_params={"c": scale})


def test_min_num_branches_default_is_three():
    text = """
def @main(%x: Tensor[(1, 4, 8, 8), float32], %w1: Tensor[(4, 4, 1, 1), float32],
          %w2: Tensor[(4, 4, 1, 1), float32]) {
  (nn.conv2d(%x, %w1), nn.conv2d(%x, %w2))
}"""
    before = typed(text)
    assert_structural_equal(combine(before), before)
    assert op_counts(combine(before, min_num_branches=2))["nn.conv2d"] == 1


SIG3 = ("%x: Tensor[(1, 4, 8, 8), float32], %w1: Tensor[(4, 4, 3, 3), float32], "
        "%w2: Tensor[(4, 4, 3, 3), float32], %w3: Tensor[(4, 4, 3, 3), float32]")
NOT_COMBINED = [
    ("different strides", "(nn.conv2d(%x, %w1), nn.conv2d(%x, %w2, strides=[2, 2]), "
                          "nn.conv2d(%x, %w3, padding=[1, 1]))"),
    ("grouped", "(nn.conv2d(%x, %w1, groups=2, channels=4, kernel_size=[3, 3]), "
                "nn.conv2d(%x, %w2, groups=2, channels=4, kernel_size=[3, 3]), "
                "nn.conv2d(%x, %w3, groups=2, channels=4, kernel_size=[3, 3]))"),
    ("different data", "(nn.conv2d(%x, %w1), nn.conv2d(nn.relu(%x), %w2), "
                       "nn.conv2d(negative(%x), %w3))"),
]


@pytest.mark.parametrize("body", [b for _, b in NOT_COMBINED], ids=[n for n, _ in NOT_COMBINED])
def test_not_combined(body):
    sig = SIG3.replace("(4, 4, 3, 3)", "(4, 2, 3, 3)") if "groups" in body else SIG3
    text = f"def @main({sig}) {{\n  {body}\n}}"
    before = typed(text)
    assert_structural_equal(combine(before, min_num_branches=2), before)


def test_follower_reading_a_sibling_is_not_combined():
    """add(conv1, conv2): the add reads a node of the group, so combining
    it would make the combined call depend on itself; the convolutions
    still combine."""
    text = f"""
def @main({SIG3}) {{
  %0 = nn.conv2d(%x, %w1);
  %1 = nn.conv2d(%x, %w2);
  (add(%0, %1), nn.conv2d(%x, %w3))
}}"""
    before = typed(text)
    after = combine(before)
    assert op_counts(after) == {"nn.conv2d": 1, "concatenate": 1, "strided_slice": 3, "add": 1}
    assert_close_on_random_args(before, after)


def test_weight_computed_from_a_sibling_drops_the_branch():
    text = """
def @main(%x: Tensor[(1, 4, 2, 2), float32], %w2: Tensor[(4, 4, 1, 1), float32],
          %w3: Tensor[(4, 4, 1, 1), float32]) {
  %0 = nn.conv2d(%x, %w2);
  %1 = nn.conv2d(%x, %w3);
  %2 = nn.conv2d(%x, reshape(%0, newshape=[4, 4, 1, 1]));
  (%1, %2)
}"""
    before = typed(text)
    after = combine(before, min_num_branches=2)
    assert op_counts(after)["nn.conv2d"] == 2
    assert_close_on_random_args(before, after)


def test_branch_with_a_second_user_stops_there():
    """The relu of branch 1 is also returned: the branches combine up to
    the bias only, and the relus read slices."""
    text = """
def @main(%x: Tensor[(1, 4, 6, 6), float32], %w1: Tensor[(2, 4, 1, 1), float32],
          %w2: Tensor[(3, 4, 1, 1), float32], %w3: Tensor[(4, 4, 1, 1), float32],
          %b1: Tensor[(2,), float32], %b2: Tensor[(3,), float32], %b3: Tensor[(4,), float32]) {
  %0 = nn.bias_add(nn.conv2d(%x, %w1), %b1);
  %1 = nn.bias_add(nn.conv2d(%x, %w2), %b2);
  %2 = nn.bias_add(nn.conv2d(%x, %w3), %b3);
  %3 = nn.relu(%0);
  (%3, %0, nn.relu(%1), nn.relu(%2))
}"""
    before = typed(text)
    after = combine(before)
    assert op_counts(after) == {"nn.conv2d": 1, "concatenate": 2, "nn.bias_add": 1,
                          "strided_slice": 3, "nn.relu": 3}
    assert_close_on_random_args(before, after)


def test_let_bound_branches_are_left_alone():
    """Outside graph form the branches hide behind let variables: nothing
    moves past a let."""
    text = f"""
def @main({SIG3}) {{
  let %a = nn.conv2d(%x, %w1);
  let %b = nn.conv2d(%x, %w2);
  let %c = nn.conv2d(%x, %w3);
  (nn.relu(%a), %b, %c)
}}"""
    before = typed(text)
    after = combine(before)
    # the convolutions are the values of separate lets, used through their variables
    assert op_counts(after)["nn.conv2d"] == 3
    assert_close_on_random_args(before, after)


def test_deep_graph():
    """A 10,000-node chain feeding three parallel convolutions."""
    from aot import builder as B
    x = B.var("x", B.tensor((1, 2, 3, 3)))
    ws = [B.var(f"w{i}", B.tensor((2, 2, 1, 1))) for i in range(3)]
    y = x
    for _ in range(10_000):
        y = B.call("nn.relu", y)
    body = B.tuple_(*[B.call("nn.conv2d", y, w) for w in ws])
    mod = aot.infer_types(B.module(main=B.function([x, *ws], body)))
    after = combine(mod)
    assert op_counts(after)["nn.conv2d"] == 1 and op_counts(after)["nn.relu"] == 10_000


def test_let_chain_10000_deep():
    from aot import builder as B
    x = B.var("x", B.tensor((1, 2, 3, 3)))
    bindings = []
    prev = x
    for i in range(10_000):
        v = B.var(f"v{i}")
        bindings.append((v, B.call("nn.relu", prev)))
        prev = v
    mod = aot.infer_types(B.module(main=B.function([x], B.let_chain(bindings, prev))))
    assert_structural_equal(combine(mod), mod)


def test_disabled_by_name_and_required():
    before = typed(INCEPTION)
    with PassContext(disabled=[PASS], verify=True):
        assert Sequential([PASS])(before) is before
    with PassContext(verify=True):   # opt level 4: off by default
        assert Sequential([PASS])(before) is before
    with PassContext(required=[PASS], verify=True):
        after = Sequential([PASS])(before)
    assert op_counts(after)["nn.conv2d"] == 3   # three 1x1 become one
    assert_close_on_random_args(before, after)


def test_min_num_branches_below_two_is_a_user_error():
    with pytest.raises(DiagnosticError, match="min_num_branches"):
        combine(typed(INCEPTION), min_num_branches=1)


def test_operand_depending_on_another_group_is_not_combined():
    """Group H's combined weight would read g2 (through h2's weight), and
    g1's follower reads h1: combining both would make each combined call
    depend on the other.  h2 is dropped from H and g1's add stays apart."""
    text = """
def @main(%x: Tensor[(1, 4, 2, 2), float32], %y: Tensor[(1, 4, 2, 2), float32],
          %w1: Tensor[(4, 4, 1, 1), float32], %w2: Tensor[(4, 4, 1, 1), float32],
          %w3: Tensor[(4, 4, 1, 1), float32], %v1: Tensor[(4, 4, 1, 1), float32],
          %v3: Tensor[(4, 4, 1, 1), float32]) {
  %0 = nn.conv2d(%x, %w2);
  %1 = nn.conv2d(%y, %v1);
  (add(nn.conv2d(%x, %w1), %1), nn.conv2d(%x, %w3),
   nn.conv2d(%y, reshape(%0, newshape=[4, 4, 1, 1])), nn.conv2d(%y, %v3))
}"""
    before = typed(text)
    after = combine(before, min_num_branches=2)
    assert op_counts(after)["nn.conv2d"] == 3 and op_counts(after)["add"] == 1
    assert_close_on_random_args(before, after)


def test_residual_operand_that_is_the_root_combines():
    """add(conv(x1, w_i), x1) in the second of two blocks: x1 depends on
    the first block's group, but it is the root itself, so the adds
    combine (x1 repeated per branch)."""
    text = """
def @main(%x: Tensor[(1, 6, 4, 4), float32], %w: Tensor[(2, 6, 1, 1), float32],
          %v: Tensor[(6, 6, 1, 1), float32]) {
  let %x1 = concatenate((nn.conv2d(%x, %w), nn.conv2d(%x, %w), nn.conv2d(%x, %w)), axis=1);
  (add(nn.conv2d(%x1, %v), %x1), add(nn.conv2d(%x1, %v), %x1), add(nn.conv2d(%x1, %v), %x1))
}"""
    before = run_pass("ToGraphNormalForm", typed(text))
    after = combine(before)
    assert op_counts(after)["nn.conv2d"] == 2 and op_counts(after)["add"] == 1
    assert_close_on_random_args(before, after)
