"""FoldConstant: before/expected IR (structural equality), the interpreter
giving the same values before and after, and graphs deep enough to break
a recursive implementation."""

from __future__ import annotations

import numpy as np
import pytest

import aot
from aot import builder as B
from aot.ir.expr import Call, Constant, Let, Op, RefCreate, Tuple, TupleGetItem
from aot.ir.module import IRModule
from aot.ir.structural import assert_structural_equal, structural_equal
from aot.ir.types import TensorType, TupleType
from aot.ir.visitor import post_order
from aot.passes.fold_constant import fold_constant, is_constant
from aot.passes.manager import PassContext, Sequential, run_pass
from pass_helpers import assert_same_values


def typed(text: str) -> IRModule:
    return aot.infer_types(aot.parse(text, source_name="fold.relay"))


def op_calls(mod: IRModule) -> list[Call]:
    return [n for f in mod.functions.values() for n in post_order(f)
            if isinstance(n, Call) and isinstance(n.op, Op)]


def check(before: IRModule, expected: IRModule, *args: object) -> IRModule:
    """Fold ``before``, compare it with ``expected`` and check that both
    compute the same on ``args`` (through the pass manager, so the result
    is verified well formed and well typed)."""
    after = run_pass("FoldConstant", before)
    assert_structural_equal(after, aot.infer_types(expected))
    assert_same_values(before, after, *args)
    return after


# ------------------------------------------------------------- operators

@pytest.mark.parametrize("before, expected", [
    ("add(1f, 2f)", "3f"),
    ("negative(4)", "-4"),
    ("multiply(add(1f, 2f), subtract(10f, 4f))", "18f"),
    ("cast(add(200u8, 100u8), dtype=\"int32\")", "44"),
    ("less(2, 3)", "True"),
    ("sum(multiply(2f, 3f))", "6f"),
])
def test_scalar_operator_chains_fold(before, expected):
    check(typed(f"def @main() {{ {before} }}"), aot.parse(f"def @main() {{ {expected} }}"))


def test_weight_preprocessing_chain_feeding_a_conv2d():
    rng = np.random.default_rng(0)
    w_hwio = rng.standard_normal((3, 3, 2, 4)).astype(np.float32)
    scale = rng.standard_normal((4, 1, 1, 1)).astype(np.float32)
    bias_a = rng.standard_normal(4).astype(np.float32)
    bias_b = rng.standard_normal(4).astype(np.float32)

    def program(weight, bias):
        x = B.var("x", B.tensor((1, 2, 6, 6)))
        conv = B.call("nn.conv2d", x, weight, kernel_size=[3, 3], channels=4, padding=[1, 1])
        return B.module(main=B.function([x], B.call("nn.bias_add", conv, bias)))

    w = B.multiply(B.call("transpose", B.const(w_hwio), axes=[3, 2, 0, 1]), B.const(scale))
    before = aot.infer_types(program(w, B.add(B.const(bias_a), B.const(bias_b))))
    expected = program(B.const(np.transpose(w_hwio, (3, 2, 0, 1)) * scale),
                       B.const(bias_a + bias_b))
    x = rng.standard_normal((1, 2, 6, 6)).astype(np.float32)
    after = check(before, expected, x)
    assert [c.op.name for c in op_calls(after)] == ["nn.conv2d", "nn.bias_add"]


@pytest.mark.parametrize("body", [
    "add(%x, 1f)",
    "nn.relu(%x)",
    "multiply(%x, %x)",
    "concatenate((%x, ones(shape=[2])))",
    "ones_like(%x)",
])
def test_nothing_folds_when_an_input_is_a_variable(body):
    before = typed(f"def @main(%x: Tensor[(2), float32]) {{ {body} }}")
    check(before, aot.parse(f"def @main(%x: Tensor[(2), float32]) {{ {body} }}"),
          np.array([1.5, -2.0], np.float32))


def test_constant_operands_of_a_variable_expression_fold():
    before = typed("def @main(%x: float32) { multiply(%x, add(1f, 2f)) + exp(0f) }")
    check(before, aot.parse("def @main(%x: float32) { multiply(%x, 3f) + 1f }"), 2.0)


def test_calls_without_arguments_are_kept():
    """Relay's heuristic: ``ones(shape=...)`` stays a loop, not a constant
    (and then neither does what consumes it)."""
    src = "def @main() { (ones(shape=[2, 3]), add(zeros(shape=[2]), 1f)) }"
    check(typed(src), aot.parse(src))


@pytest.mark.parametrize("call", [
    "full(1f, shape=[8, 9, 10])",                 # TVM test_fold_full
    "full_like(ones(shape=[4]), 2f)",
    "ones_like(arange(0f, 4f, 1f))",
    "zeros_like(2f)",
])
def test_expanding_calls_are_kept(call):
    """Relay's skip list: an operator that only expands a value into a
    shape is not folded (a loop in code, not a constant in flash); its
    constant arguments still are."""
    before = typed(f"def @main() {{ {call} }}")
    after = run_pass("FoldConstant", before)
    body = after["main"].body
    assert isinstance(body, Call) and body.op.name == call.split("(")[0]
    assert_same_values(before, after)


def test_a_call_whose_evaluation_fails_is_kept():
    src = "def @main() { arange(0f, 4f, 0f) }"
    after = fold_constant(typed(src))
    assert_structural_equal(after, typed(src))
    with pytest.raises(aot.DiagnosticError, match="step is 0"):
        aot.interpret(after)


def test_folding_gives_a_dynamic_shape_its_value():
    before = typed("def @main() { arange(0f, add(2f, 2f), 1f) }")
    assert before["main"].body.checked_type == TensorType((aot.ir.types.ANY,),
                                                          aot.ir.dtype.DType.FLOAT32)
    after = fold_constant(before)
    body = after["main"].body
    assert isinstance(body, Constant)
    assert body.checked_type == TensorType((4,), aot.ir.dtype.DType.FLOAT32)
    assert_same_values(before, after)


@pytest.mark.parametrize("dtype", ["int8", "uint8", "int32", "float16", "float64"])
def test_folded_values_are_the_interpreters(dtype):
    rng = np.random.default_rng(3)
    a = (rng.standard_normal((3, 4)) * 50).astype(dtype)
    b = (rng.standard_normal((4,)) * 50).astype(dtype)
    expr = B.call("max", B.multiply(B.const(a), B.const(b)), axis=[1])
    before = aot.infer_types(B.module(main=B.function([], expr)))
    after = fold_constant(before)
    body = after["main"].body
    assert isinstance(body, Constant) and body.data.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(body.data, aot.interpret(before))


# ----------------------------------------------------------------- tuples

def test_operator_returning_a_tuple_folds_to_a_tuple_of_constants():
    before = typed("def @main() { split(arange(0f, 6f, 1f), indices_or_sections=3) }")
    after = fold_constant(before)
    body = after["main"].body
    assert isinstance(body, Tuple) and len(body.fields) == 3
    assert all(isinstance(f, Constant) for f in body.fields)
    assert isinstance(body.checked_type, TupleType)
    assert_same_values(before, after)


def test_tuple_of_constants_stays_a_tuple_and_feeds_a_fold():
    before = typed("def @main() { let %t = (1f, add(1f, 1f)); (%t, stack(%t)) }")
    after = fold_constant(before)
    t, stacked = after["main"].body.fields
    assert isinstance(t, Tuple) and [float(f.data) for f in t.fields] == [1.0, 2.0]
    assert isinstance(stacked, Constant) and stacked.data.tolist() == [1.0, 2.0]
    assert_same_values(before, after)


PAIR = (np.float32(1), np.float32(2))


@pytest.mark.parametrize("before, expected, args", [
    # a projection of a tuple of constants is the constant
    ("def @main() { (1f, 2f).1 }", "def @main() { 2f }", ()),
    ("def @main() { ((1f, 2f), 3f).0.1 }", "def @main() { 2f }", ()),
    # the other fields are variables, functions, constants: nothing is lost
    ("def @main(%x: float32) { (%x, add(2f, 2f), fn () { %x }).1 }",
     "def @main(%x: float32) { 4f }", (3.0,)),
    ("def @main(%x: float32) { (add(%x, 1f), 2f).0 }",
     "def @main(%x: float32) { add(%x, 1f) }", (3.0,)),
    # a dropped field would be evaluated: keep the projection
    ("def @main(%x: float32) { (add(%x, 1f), 2f).1 }",
     "def @main(%x: float32) { (add(%x, 1f), 2f).1 }", (3.0,)),
    ("def @main(%x: float32) { (ref(%x), 2f).1 }",
     "def @main(%x: float32) { (ref(%x), 2f).1 }", (3.0,)),
    # a projection of something that is not a Tuple node
    ("def @main(%x: (float32, float32)) { %x.1 }",
     "def @main(%x: (float32, float32)) { %x.1 }", (PAIR,)),
])
def test_tuple_projection(before, expected, args):
    check(typed(before), aot.parse(expected), *args)


def test_projection_of_a_folded_tuple_returning_call():
    x = np.arange(12, dtype=np.float32).reshape(3, 4) - 5
    before = aot.infer_types(B.module(main=B.function([], B.proj(B.call(
        "nn.batch_norm", B.const(x), *(B.const(np.full(4, v, np.float32))
                                       for v in (1.0, 0.5, 2.0, 3.0))), 0))))
    after = fold_constant(before)
    assert isinstance(after["main"].body, Constant)
    assert_same_values(before, after)


# ------------------------------------------------------------------- lets

def test_let_bound_constants_propagate():
    before = typed("""
    def @main(%x: float32) {
      let %a = 2f;
      let %b = multiply(%a, 3f);
      let %c = add(%x, %b);
      let %t = (%a, %b);
      (%c, %t.1)
    }""")
    expected = aot.parse("""
    def @main(%x: float32) {
      let %c = add(%x, 6f);
      (%c, 6f)
    }""")
    check(before, expected, 1.0)


def test_let_of_a_non_constant_stays():
    src = "def @main(%x: float32) { let %y = add(%x, 1f); let %z = %y; multiply(%z, %z) }"
    check(typed(src), aot.parse(src), 2.0)


def test_let_bound_tuple_of_constants_is_one_shared_node():
    before = typed("def @main() { let %t = (1f, 2f); (%t, %t) }")
    body = fold_constant(before)["main"].body
    assert not isinstance(body, Let)
    assert body.fields[0] is body.fields[1]
    assert is_constant(body.fields[0])


# ------------------------------------------------- functions and effects

def test_function_bodies_fold_but_not_through_parameters():
    before = typed("""
    def @f(%y: float32) { add(%y, add(1f, 2f)) }
    def @main() {
      let %g = fn (%z: float32) { multiply(%z, 2f) };
      (@f(add(1f, 1f)), %g(5f), (fn (%w: float32) { %w })(7f))
    }""")
    expected = aot.parse("""
    def @f(%y: float32) { add(%y, 3f) }
    def @main() {
      let %g = fn (%z: float32) { multiply(%z, 2f) };
      (@f(2f), %g(5f), (fn (%w: float32) { %w })(7f))
    }""")
    check(before, expected)


def test_references_are_not_folded():
    src = """
    def @main() {
      let %r = ref(add(1f, 2f));
      let %u = ref_write(%r, multiply(2f, 2f));
      add(ref_read(%r), 1f)
    }"""
    expected = """
    def @main() {
      let %r = ref(3f);
      let %u = ref_write(%r, 4f);
      add(ref_read(%r), 1f)
    }"""
    after = check(typed(src), aot.parse(expected))
    assert any(isinstance(n, RefCreate) for n in post_order(after["main"]))


def test_if_branches_fold_but_the_if_stays():
    before = typed("""
    def @main(%c: bool) { if (%c) { add(1, 2) } else { multiply(3, 4) } }""")
    expected = aot.parse("def @main(%c: bool) { if (%c) { 3 } else { 12 } }")
    check(before, expected, True)
    check(before, expected, False)


# ---------------------------------------------------- spans, types, order

def test_folded_constant_keeps_the_span_of_the_call():
    before = typed("def @main(%x: float32) {\n  add(%x, multiply(2f, 3f))\n}")
    call = before["main"].body.args[1]
    after = fold_constant(before)
    folded = after["main"].body.args[1]
    assert isinstance(folded, Constant) and float(folded.data) == 6.0
    assert folded.span == call.span and folded.span is not None
    assert after.is_typed
    assert all(n.checked_type is not None for n in post_order(after["main"])
               if not isinstance(n, Op))


def test_deterministic():
    src = """
    def @main(%x: Tensor[(2, 2), float32]) {
      let %w = transpose(multiply(ones_like(%x), 0f) + (1f, 2f).1);
      (add(%x, exp(1f) + zeros_like(2f)), %w, split(arange(0f, 4f, 1f), indices_or_sections=2))
    }"""
    first = fold_constant(typed(src))
    second = fold_constant(typed(src))
    assert str(first) == str(second)
    assert structural_equal(first, second)


def test_input_module_is_not_changed():
    before = typed("def @main() { add(1f, 2f) }")
    text = str(before)
    fold_constant(before)
    assert str(before) == text
    assert isinstance(before["main"].body, Call)


# ------------------------------------------------------------------- deep

N = 10_000


def test_deep_constant_graph_folds_to_one_constant():
    e = B.const(np.float32(0))
    for _ in range(N):
        e = B.add(e, B.const(np.float32(1)))
    x = B.var("x", B.scalar())
    before = aot.infer_types(B.module(main=B.function([x], B.multiply(x, e))))
    after = fold_constant(before)
    body = after["main"].body
    assert isinstance(body.args[1], Constant) and float(body.args[1].data) == N
    assert aot.interpret(after, 2.0) == aot.interpret(before, 2.0)


def test_deep_graph_on_a_variable_is_unchanged():
    x = B.var("x", B.scalar())
    e = x
    for _ in range(N):
        e = B.add(e, B.const(np.float32(1)))
    before = aot.infer_types(B.module(main=B.function([x], e)))
    after = fold_constant(before)
    assert_structural_equal(after, before)
    assert len(op_calls(after)) == N


def test_deep_let_chain_of_constants():
    bindings = [(B.var("v0"), B.const(np.float32(1)))]
    for i in range(1, N):
        bindings.append((B.var(f"v{i}"), B.add(bindings[-1][0], B.const(np.float32(1)))))
    x = B.var("x", B.scalar())
    body = B.let_chain(bindings, B.add(x, bindings[-1][0]))
    before = aot.infer_types(B.module(main=B.function([x], body)))
    after = fold_constant(before)
    assert_structural_equal(after, aot.infer_types(aot.parse(
        f"def @main(%x: float32) {{ add(%x, {N}f) }}")))


def test_disabled_by_name_leaves_the_module_unchanged():
    before = typed("def @main(%x: float32) { add(%x, add(1f, 2f)) }")
    with PassContext(disabled=["FoldConstant"]):
        after = Sequential(["FoldConstant"])(before)
    assert after is before
    assert isinstance(after["main"].body.args[1], Call)


def test_projection_survives_when_it_is_not_folded():
    before = typed("def @main(%x: (float32, float32)) { %x.0 }")
    assert isinstance(fold_constant(before)["main"].body, TupleGetItem)
