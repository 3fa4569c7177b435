"""SimplifyInference: before/expected IR (structural equality, as Relay's
tests/python/relay/test_pass_simplify_inference.py) and the interpreter
giving the same values before and after the pass."""

from __future__ import annotations

import numpy as np
import pytest

import aot
from aot import builder as B
from aot.ir.expr import Call, Constant, Op, Tuple
from aot.ir.module import IRModule
from aot.ir.structural import assert_structural_equal
from aot.ir.types import TensorType
from aot.ir.visitor import post_order
from aot.passes.simplify_inference import simplify_inference

REWRITTEN = {"nn.batch_norm", "nn.dropout", "nn.layer_norm"}


def typed(text: str) -> IRModule:
    return aot.infer_types(aot.parse(text, source_name="simplify.relay"))


def op_names(mod: IRModule) -> set[str]:
    return {n.op.name for f in mod.functions.values() for n in post_order(f)
            if isinstance(n, Call) and isinstance(n.op, Op)}


def flatten(value: object) -> list[np.ndarray]:
    if isinstance(value, tuple):
        return [leaf for v in value for leaf in flatten(v)]
    assert isinstance(value, np.ndarray)
    return [value]


def random_args(mod: IRModule, seed: int = 0) -> list[np.ndarray]:
    """Random inputs for @main; parameters named like a variance get
    positive values."""
    rng = np.random.default_rng(seed)
    out = []
    for p in mod["main"].params:
        t = p.checked_type
        assert isinstance(t, TensorType)
        arr = rng.standard_normal(t.shape).astype(t.dtype.np)
        if p.name_hint.startswith("var") or p.name_hint == "v":
            arr = np.abs(arr) + t.dtype.np.type(0.1)
        out.append(arr)
    return out


def assert_same_values(before: IRModule, after: IRModule, seed: int = 0) -> None:
    args = random_args(before, seed)
    expect = flatten(aot.interpret(before, *args))
    got = flatten(aot.interpret(after, *args))
    assert len(expect) == len(got)
    for e, g in zip(expect, got):
        assert e.dtype == g.dtype and e.shape == g.shape
        rtol = 1e-5 if e.dtype == np.float32 else 1e-12
        # absolute slack scaled to the data for outputs that cancel to ~0
        atol = rtol * max(1.0, float(np.max(np.abs(e), initial=0.0)))
        np.testing.assert_allclose(g, e, rtol=rtol, atol=atol)


def check(before: IRModule, expected: IRModule) -> IRModule:
    after = simplify_inference(before)
    assert_structural_equal(after, aot.infer_types(expected))
    assert not op_names(after) & REWRITTEN
    assert_same_values(before, after)
    return after


# ------------------------------------------------------------ batch_norm

def simple_bn(x, gamma, beta, mean, var, *, axis, epsilon, ndim, dtype="float32",
              center=True, scale=True):
    """The expansion Relay's test expects, written out by hand."""
    s = B.divide(B.const(1.0, dtype), B.sqrt(B.add(var, B.const(epsilon, dtype))))
    if scale:
        s = B.multiply(s, gamma)
    shift = B.multiply(B.negative(mean), s)
    if center:
        shift = B.add(shift, beta)
    trailing = ndim - (axis % ndim) - 1
    if trailing:
        s = B.call("expand_dims", s, axis=1, num_newaxis=trailing)
        shift = B.call("expand_dims", shift, axis=1, num_newaxis=trailing)
    return B.add(B.multiply(x, s), shift)


@pytest.mark.parametrize("ndim, axis, nstep", [
    (2, 1, 1), (4, 1, 1), (4, 0, 3), (4, 3, 1), (3, -1, 2), (4, -3, 1), (1, 0, 1),
])
def test_batch_norm_chain_as_relay(ndim, axis, nstep):
    """Relay's test: ``nstep`` times (x + 1 -> batch_norm -> dropout)."""
    eps = 0.01
    shape = tuple(10 if i == axis % ndim else 2 + i for i in range(ndim))

    def params():
        return (B.var("x", B.tensor(shape)), *(B.var(n, B.tensor((10,))) for n in
                                               ("gamma", "beta", "mean", "var")))

    x, gamma, beta, mean, var = params()
    y = x
    for _ in range(nstep):
        bn = B.call("nn.batch_norm", B.add(y, 1.0), gamma, beta, mean, var,
                    epsilon=eps, axis=axis)
        y = B.proj(B.call("nn.dropout", B.proj(bn, 0)), 0)
    before = aot.infer_types(B.module(main=B.function([x, gamma, beta, mean, var], y)))

    x, gamma, beta, mean, var = params()
    y = x
    for _ in range(nstep):
        y = simple_bn(B.add(y, 1.0), gamma, beta, mean, var, axis=axis, epsilon=eps, ndim=ndim)
    expected = B.module(main=B.function([x, gamma, beta, mean, var], y))
    check(before, expected)


@pytest.mark.parametrize("center, scale", [(True, False), (False, True), (False, False)])
def test_batch_norm_without_center_or_scale(center, scale):
    def params():
        return (B.var("x", B.tensor((2, 3, 4))),
                *(B.var(n, B.tensor((3,))) for n in ("gamma", "beta", "mean", "var")))

    x, gamma, beta, mean, var = params()
    bn = B.call("nn.batch_norm", x, gamma, beta, mean, var, axis=1, epsilon=1e-3,
                center=center, scale=scale)
    before = aot.infer_types(B.module(main=B.function([x, gamma, beta, mean, var],
                                                      B.proj(bn, 0))))
    x, gamma, beta, mean, var = params()
    body = simple_bn(x, gamma, beta, mean, var, axis=1, epsilon=1e-3, ndim=3,
                     center=center, scale=scale)
    check(before, B.module(main=B.function([x, gamma, beta, mean, var], body)))


BN_PARAMS = ("%x: Tensor[(2, 3, 4), float32], %g: Tensor[(3), float32], "
             "%b: Tensor[(3), float32], %m: Tensor[(3), float32], %v: Tensor[(3), float32]")
BN_EXPANDED = """
  %0 = multiply(divide(1f, sqrt(add(%v, 0.001f))), %g);
  %1 = add(multiply(negative(%m), %0), %b);
  %2 = add(multiply(%x, expand_dims(%0, axis=1)), expand_dims(%1, axis=1));
"""


def test_batch_norm_statistics_outputs_are_the_arguments():
    before = typed(f"""
    def @main({BN_PARAMS}) {{
      %0 = nn.batch_norm(%x, %g, %b, %m, %v, epsilon=1e-3f);
      (%0.0, %0.1, %0.2)
    }}""")
    expected = aot.parse(f"def @main({BN_PARAMS}) {{ {BN_EXPANDED} (%2, %m, %v) }}")
    check(before, expected)


def test_batch_norm_used_as_a_whole_tuple_becomes_a_tuple():
    before = typed(f"""
    def @main({BN_PARAMS}) {{
      let %bn = nn.batch_norm(%x, %g, %b, %m, %v, epsilon=1e-3f);
      (%bn, %bn.1)
    }}""")
    expected = aot.parse(f"""
    def @main({BN_PARAMS}) {{
      {BN_EXPANDED}
      let %bn = (%2, %m, %v);
      (%bn, %bn.1)
    }}""")
    after = check(before, expected)
    assert isinstance(after["main"].body.value, Tuple)


def test_shared_batch_norm_is_expanded_once():
    before = typed(f"""
    def @main({BN_PARAMS}) {{
      %0 = nn.batch_norm(%x, %g, %b, %m, %v, epsilon=1e-3f);
      (%0.0, %0.0, %0.1)
    }}""")
    after = simplify_inference(before)
    body = after["main"].body
    assert isinstance(body, Tuple)
    assert body.fields[0] is body.fields[1]
    assert body.fields[2] is after["main"].params[3]
    assert sum(isinstance(n, Call) and n.op == aot.ir.expr.op("sqrt")
               for n in post_order(after["main"])) == 1
    assert_same_values(before, after)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_batch_norm_constants_take_the_data_dtype(dtype):
    before = typed(f"""
    def @main(%x: Tensor[(4, 3), {dtype}], %g: Tensor[(3), {dtype}], %b: Tensor[(3), {dtype}],
              %m: Tensor[(3), {dtype}], %v: Tensor[(3), {dtype}]) {{
      nn.batch_norm(%x, %g, %b, %m, %v, epsilon=1e-4f).0
    }}""")
    after = simplify_inference(before)
    consts = [n for n in post_order(after["main"]) if isinstance(n, Constant)]
    assert sorted(float(c.data) for c in consts) == pytest.approx([1e-4, 1.0])
    assert {c.data.dtype for c in consts} == {np.dtype(dtype)}
    assert_same_values(before, after)


# --------------------------------------------------------------- dropout

def test_dropout_output_is_its_input():
    before = typed("""
    def @main(%x: Tensor[(3, 4), float32]) {
      nn.relu(nn.dropout(%x, rate=0.25f).0)
    }""")
    check(before, aot.parse("def @main(%x: Tensor[(3, 4), float32]) { nn.relu(%x) }"))


def test_dropout_as_a_whole_tuple_gives_a_mask_of_ones():
    before = typed("""
    def @main(%x: Tensor[(3, 4), float32]) {
      let %d = nn.dropout(%x);
      (%d, %d.1)
    }""")
    expected = aot.parse("""
    def @main(%x: Tensor[(3, 4), float32]) {
      let %d = (%x, ones_like(%x));
      (%d, %d.1)
    }""")
    check(before, expected)


# ------------------------------------------------------------ layer_norm

def expanded_layer_norm(x, gamma, beta, *, axis, epsilon, ndim, center=True, scale=True):
    """Relay's LayerNormToInferUnpack, written out by hand."""
    m = B.call("mean", x, axis=[axis], keepdims=True)
    v = B.call("variance", x, m, axis=[axis], keepdims=True)
    out = B.divide(B.subtract(x, m), B.sqrt(B.add(v, B.const(epsilon, "float32"))))
    trailing = ndim - (axis % ndim) - 1

    def expand(vec):
        return B.call("expand_dims", vec, axis=1, num_newaxis=trailing) if trailing else vec
    if scale:
        out = B.multiply(out, expand(gamma))
    if center:
        out = B.add(out, expand(beta))
    return out


@pytest.mark.parametrize("shape, axis, center, scale", [
    ((2, 5), -1, True, True),
    ((2, 5), 1, True, True),
    ((3, 4, 5), 1, True, True),
    ((3, 4, 5), 0, True, True),
    ((2, 3, 4, 5), -3, True, True),
    ((3, 4, 5), -1, False, True),
    ((3, 4, 5), 1, True, False),
    ((3, 4, 5), 2, False, False),
])
def test_layer_norm(shape, axis, center, scale):
    eps = 1e-3
    width = shape[axis]

    def params():
        return (B.var("x", B.tensor(shape)), B.var("gamma", B.tensor((width,))),
                B.var("beta", B.tensor((width,))))

    x, gamma, beta = params()
    ln = B.call("nn.layer_norm", x, gamma, beta, axis=axis, epsilon=eps, center=center,
                scale=scale)
    before = aot.infer_types(B.module(main=B.function([x, gamma, beta], ln)))
    x, gamma, beta = params()
    body = expanded_layer_norm(x, gamma, beta, axis=axis, epsilon=eps, ndim=len(shape),
                               center=center, scale=scale)
    check(before, B.module(main=B.function([x, gamma, beta], body)))


# ------------------------------------------------------------- the module

def test_every_function_and_nested_function_is_rewritten():
    before = typed("""
    def @norm(%x: Tensor[(2, 3), float32], %g: Tensor[(3), float32]) {
      nn.layer_norm(%x, %g, %g)
    }
    def @main(%x: Tensor[(2, 3), float32], %g: Tensor[(3), float32], %flag: bool) {
      let %f = fn (%y: Tensor[(2, 3), float32]) {
        nn.dropout(@norm(%y, %g)).0
      };
      if (%flag) { %f(%x) } else { nn.batch_norm(%x, %g, %g, %g, %g + 1f, axis=1).0 }
    }""")
    after = simplify_inference(before)
    assert not op_names(after) & REWRITTEN
    # the channel axis is the last one: no expand_dims
    assert {"mean", "variance"} <= op_names(after)
    assert "expand_dims" not in op_names(after)
    rng = np.random.default_rng(1)
    x = rng.standard_normal((2, 3)).astype(np.float32)
    g = np.abs(rng.standard_normal(3)).astype(np.float32)
    for flag in (True, False):
        np.testing.assert_allclose(aot.interpret(after, x, g, flag),
                                   aot.interpret(before, x, g, flag), rtol=1e-5, atol=1e-5)


def test_program_without_these_operators_is_unchanged():
    before = typed("""
    def @main(%x: Tensor[(2, 3), float32]) {
      let %y = nn.softmax(%x + 1f);
      (%y, split(%y, indices_or_sections=3, axis=1).0)
    }""")
    assert_structural_equal(simplify_inference(before), before)


def test_result_is_typed_and_new_nodes_carry_the_call_span():
    before = typed(f"""
    def @main({BN_PARAMS}) {{
      nn.batch_norm(%x, %g, %b, %m, %v, epsilon=1e-3f).0
    }}""")
    bn_call = before["main"].body.tuple_value
    assert isinstance(bn_call, Call) and bn_call.span is not None
    after = simplify_inference(before)
    assert after.is_typed
    params = set(after["main"].params)
    for node in post_order(after["main"]):
        if isinstance(node, Op):
            continue
        assert node.checked_type is not None, node
        if isinstance(node, (Call, Constant)):
            assert node.span == bn_call.span, node
    assert after["main"].checked_type == before["main"].checked_type
    assert params == set(after["main"].params)


def test_untyped_module_is_a_bug():
    with pytest.raises(AssertionError, match="typed module"):
        simplify_inference(aot.parse("def @main(%x: Tensor[(2), float32]) { %x }"))
