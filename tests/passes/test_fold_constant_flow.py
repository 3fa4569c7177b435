"""FoldConstant through tuples, lets and control flow (``if`` on a constant
condition, ``match`` on a known constructor application), and the cases of
TVM's tests/python/relay/test_pass_fold_constant.py that apply to our
catalogue.  Every case: before/expected by structural equality, and the
interpreter giving the same value before and after."""

from __future__ import annotations

import numpy as np
import pytest

import aot
from aot import builder as B
from aot.ir.expr import Call, Constant, If, Let, Match, RefCreate
from aot.ir.module import IRModule
from aot.ir.structural import assert_structural_equal
from aot.ir.visitor import post_order
from aot.passes.manager import run_pass
from aot.values import values_equal

LIST = "type List[A] {\n  Cons(A, List[A]),\n  Nil,\n}\n"
OPTION = "type Option[A] {\n  Some(A),\n  None,\n}\n"


def typed(text: str) -> IRModule:
    return aot.infer_types(aot.parse(text, source_name="fold.relay"))


def fold(mod: IRModule) -> IRModule:
    return run_pass("FoldConstant", mod)


def assert_same(before: IRModule, after: IRModule, *args: object) -> None:
    want = aot.interpret(before, *args)
    got = aot.interpret(after, *args)
    assert values_equal(got, want), (got, want)


def check(before_text: str, expected_text: str, *args: object) -> IRModule:
    before = typed(before_text)
    after = fold(before)
    assert_structural_equal(after, typed(expected_text), map_free_vars=True)
    assert_same(before, after, *args)
    return after


def nodes(mod: IRModule, kind: type) -> list:
    return [n for n in post_order(mod["main"]) if isinstance(n, kind)]


# ------------------------------------------------ TVM test_pass_fold_constant

def test_tvm_concatenate_const():
    c = np.array([1.0, 2.0, 3.0], np.float32)
    before = aot.infer_types(B.module(main=B.function(
        [], B.call("concatenate", B.tuple_(B.const(c), B.const(c)), axis=0))))
    after = fold(before)
    assert_structural_equal(after, aot.infer_types(B.module(main=B.function(
        [], B.const(np.concatenate([c, c]))))))


def test_tvm_fold_const():
    c = np.array([1, 2, 3], np.float32)
    x = B.var("x", B.tensor((1, 2, 3)))
    cc = B.const(c)
    before = B.function([x], B.add(B.add(x, B.multiply(B.add(cc, cc), B.const(np.float32(2)))),
                                   cc))
    x2 = B.var("x", B.tensor((1, 2, 3)))
    expected = B.function([x2], B.add(B.add(x2, B.const((c + c) * 2)), B.const(c)))
    before_mod = aot.infer_types(B.module(main=before))
    after = fold(before_mod)
    assert_structural_equal(after, aot.infer_types(B.module(main=expected)))
    xs = np.arange(6, dtype=np.float32).reshape(1, 2, 3)
    assert_same(before_mod, after, xs)


def test_tvm_fold_let():
    check("""
    def @main(%x: Tensor[(1), float32]) {
      let %t1 = 1f;
      let %t2 = add(%t1, %t1);
      let %t3 = add(%t2, %x);
      %t3
    }""", """
    def @main(%x: Tensor[(1), float32]) {
      let %t3 = add(2f, %x);
      %t3
    }""", np.array([5.0], np.float32))


def test_tvm_fold_tuple():
    """``(%x, c).1`` is ``c`` and ``(%x, c).0`` is ``%x``: the dropped
    fields are inert."""
    check("""
    def @main(%x: Tensor[(1), float32]) {
      %0 = (%x, 1f);
      add(add(%0.1, 1f), %0.0)
    }""", """
    def @main(%x: Tensor[(1), float32]) { add(2f, %x) }""", np.array([5.0], np.float32))


@pytest.mark.parametrize("cond, op", [("True", np.add), ("False", np.subtract)])
def test_tvm_fold_if(cond, op):
    x = np.array([[1, 2, 3]], np.float32)
    c = B.const(x)
    before = aot.infer_types(B.module(main=B.function(
        [], B.if_(B.const(cond == "True"), B.add(c, c), B.subtract(c, c)))))
    after = fold(before)
    assert_structural_equal(after, aot.infer_types(B.module(main=B.function(
        [], B.const(op(x, x))))))


def test_tvm_fold_batch_norm_pipeline():
    """SimplifyInference, FoldConstant, FoldScaleAxis: a batch-normalised
    convolution with zero parameters is one conv2d and one bias_add."""
    data = B.var("data", B.tensor((1, 3, 8, 8)))
    zeros = {n: B.const(np.zeros(s, np.float32)) for n, s in
             [("w", (16, 3, 3, 3)), ("g", (16,)), ("b", (16,)), ("m", (16,)), ("v", (16,))]}
    conv = B.call("nn.conv2d", data, zeros["w"], kernel_size=[3, 3], channels=16,
                  padding=[1, 1])
    bn = B.proj(B.call("nn.batch_norm", conv, zeros["g"], zeros["b"], zeros["m"], zeros["v"]), 0)
    mod = aot.infer_types(B.module(main=B.function([data], bn)))
    for name in ("SimplifyInference", "FoldConstant", "FoldScaleAxis"):
        mod = run_pass(name, mod)
    ops = [n.op.name for n in nodes(mod, Call)]
    assert ops == ["nn.conv2d", "nn.bias_add"]


def test_tvm_fold_dropout_is_the_inference_identity():
    """Relay keeps nn.dropout (marked stateful); ours is the deterministic
    inference identity, so it folds like any operator."""
    before = typed("def @main() { add(nn.dropout(arange(0f, 10f, 1f)).0, 1f) }")
    after = fold(before)
    assert isinstance(after["main"].body, Constant)
    assert_same(before, after)


def _f32(*v):
    return B.const(np.array(v, np.float32) if len(v) > 1 else np.float32(v[0]))


def _i32(v):
    return B.const(np.int32(v))


@pytest.mark.parametrize("name, args, want", [
    # TVM test_fold_quantize: [1, 2, 3] / 0.5 -> [2, 4, 6]
    ("qnn.quantize", lambda: (_f32(1, 2, 3), _f32(0.5), _i32(0)), np.array([2, 4, 6], np.int8)),
    # TVM test_fold_requantize: (q - 1) * 2 / 1 + 1
    ("qnn.requantize", lambda: (B.const(np.array([1, 2, 3], np.int8)), _f32(2), _i32(1),
                                _f32(1), _i32(1)), np.array([1, 3, 5], np.int8)),
])
def test_tvm_fold_quantize_requantize(name, args, want):
    """Relay folds qnn only with fold_qnn=True (its qnn has no compute
    before legalisation); ours always."""
    before = aot.infer_types(B.module(main=B.function([], B.call(name, *args(),
                                                                  out_dtype="int8"))))
    after = fold(before)
    body = after["main"].body
    assert isinstance(body, Constant)
    np.testing.assert_array_equal(body.data, want)
    assert body.data.dtype == want.dtype
    assert_same(before, after)


def test_tvm_pass_link_params_cast_of_int8():
    check('def @main() { cast(10i8, dtype="int32") }', "def @main() { 10 }")


# ---------------------------------------------------------------------- if

@pytest.mark.parametrize("before, expected, args", [
    ("def @main(%x: float32) { if (True) { add(%x, 1f) } else { %x } }",
     "def @main(%x: float32) { add(%x, 1f) }", (2.0,)),
    ("def @main(%x: float32) { if (False) { add(%x, 1f) } else { multiply(%x, 3f) } }",
     "def @main(%x: float32) { multiply(%x, 3f) }", (2.0,)),
    # the condition folds first
    ("def @main(%x: float32) { if (less(1, 2)) { %x } else { negative(%x) } }",
     "def @main(%x: float32) { %x }", (2.0,)),
    # through a let-bound constant, nested
    ("def @main(%x: float32) { let %c = greater(2f, 3f); "
     "if (%c) { 1f } else { if (logical_not(%c)) { %x } else { 2f } } }",
     "def @main(%x: float32) { %x }", (2.0,)),
    # the branch not taken had an effect the program never performed
    ("def @main() { let %r = ref(0); if (False) { ref_write(%r, 1); 5 } else { ref_read(%r) } }",
     "def @main() { let %r = ref(0); ref_read(%r) }", ()),
])
def test_if_on_a_constant_condition_is_its_branch(before, expected, args):
    check(before, expected, *args)


def test_if_on_a_variable_condition_stays_and_its_branches_fold():
    after = check("def @main(%c: bool) { if (%c) { add(1, 2) } else { 0 } }",
                  "def @main(%c: bool) { if (%c) { 3 } else { 0 } }", True)
    assert nodes(after, If)


# ------------------------------------------------------------------- match

@pytest.mark.parametrize("before, expected, args", [
    # a constructor application of constants: the clause, variables substituted
    (LIST + "def @main() { match (Cons(1, Nil)) { Cons(%h, _) => add(%h, 1), Nil => 0 } }",
     LIST + "def @main() { 2 }", ()),
    (LIST + "def @main() { match (Nil) { Cons(%h, _) => %h, Nil => 7 } }",
     LIST + "def @main() { 7 }", ()),
    # variables and nested constructors are known values too
    (LIST + "def @main(%x: int32) { match (Cons(%x, Cons(2, Nil))) "
     "{ Cons(%a, Cons(%b, %t)) => (add(%a, %b), %t), _ => (0, Nil) } }",
     LIST + "def @main(%x: int32) -> (int32, List[int32]) { (add(%x, 2), Nil) }", (5,)),
    # a part that is computed is let-bound by the clause, evaluated once
    (LIST + "def @main(%x: int32) { match (Cons(add(%x, 1), Nil)) "
     "{ Cons(%h, _) => multiply(%h, %h), Nil => 0 } }",
     LIST + "def @main(%x: int32) { let %h = add(%x, 1); multiply(%h, %h) }", (5,)),
    # through a let-bound variable (the A-normal form of a list)
    (LIST + "def @main(%x: float32) { let %n = Nil; let %l = Cons(%x, Cons(2f, %n)); "
     "match (%l) { Cons(%h, Cons(%g, %t)) => (add(%h, %g), %t), _ => (0f, Nil) } }",
     LIST + "def @main(%x: float32) { let %n = Nil; let %l = Cons(%x, Cons(2f, %n)); "
     "(add(%x, 2f), %n) }", (1.5,)),
    # the first clause that matches wins; a wildcard after it is never reached
    (OPTION + "def @main() { match (Some(Some(3))) { Some(None) => 0, Some(Some(%v)) => %v, "
     "_ => 9 } }",
     OPTION + "def @main() { 3 }", ()),
    # tuples and tensors
    ("def @main(%x: int32) { match ((1, (%x, 2))) { (%a, (%b, %c)) => add(%a, add(%b, %c)) } }",
     "def @main(%x: int32) { add(1, add(%x, 2)) }", (4,)),
    ("def @main() { match (multiply(2f, 3f)) { %v => add(%v, 1f) } }",
     "def @main() { 7f }", ()),
    # a partial match that selects a clause
    (LIST + "def @main() { match? (Cons(4, Nil)) { Cons(%h, _) => %h } }",
     LIST + "def @main() { 4 }", ()),
    # an effect bound by the clause is kept, in a let
    (LIST + "def @main() { match (Cons(ref(1), Nil)) { Cons(%r, _) => ref_read(%r), "
     "Nil => 0 } }",
     LIST + "def @main() { let %r = ref(1); ref_read(%r) }", ()),
])
def test_match_on_a_known_value_is_the_selected_clause(before, expected, args):
    after = check(before, expected, *args)
    assert not nodes(after, Match)


@pytest.mark.parametrize("program, args", [
    # a pattern meets a parameter: undecidable
    (LIST + "def @main(%xs: List[int32]) { match (Cons(1, %xs)) "
     "{ Cons(_, Cons(%y, _)) => %y, _ => 0 } }", ("list",)),
    # a computed part the chosen clause does not bind would not be evaluated
    (LIST + "def @main() { let %r = ref(0); match (Cons(ref_write(%r, 1), Nil)) "
     "{ Cons(_, _) => ref_read(%r), Nil => 5 } }", ()),
    # no clause matches: the match stays and fails at run time, as before
    (LIST + "def @main() { match? (Nil) { Cons(%h, _) => %h } }", None),
    # a let-bound value whose part would be bound: binding would compute it again
    (LIST + "def @main(%x: int32) { let %l = Cons(%x, Cons(2, Nil)); "
     "match (%l) { Cons(_, %t) => %t, Nil => Nil } }", (1,)),
    # a let-bound variable whose value is not a constructor application
    (LIST + "def @main(%x: int32) { let %l = @f(%x); match (%l) { Cons(%h, _) => %h, "
     "Nil => 0 } }\ndef @f(%x: int32) -> List[int32] { Cons(%x, Nil) }", (1,)),
])
def test_match_that_cannot_be_decided_or_would_lose_work_stays(program, args):
    before = typed(program)
    after = fold(before)
    assert nodes(after, Match)
    assert_structural_equal(after, before)
    if args is None:
        with pytest.raises(aot.DiagnosticError, match="no clause matches"):
            aot.interpret(after)
        return
    if args == ("list",):
        cons, nil = before.constructor("Cons"), before.constructor("Nil")
        from aot.values import make_list
        args = (make_list([np.array(5, np.int32)], cons, nil),)
    assert_same(before, after, *args)


def test_effect_order_of_bound_parts_is_kept():
    """Two computed parts bound by the clause become lets in evaluation
    order: the writes happen in the order the program performed them."""
    src = LIST + """
    def @main() {
      let %r = ref(0);
      match (Cons(ref_write(%r, 1), Cons(ref_write(%r, 2), Nil))) {
        Cons(%a, Cons(%b, _)) => (%a, %b, ref_read(%r)),
        _ => ((), (), 0),
      }
    }"""
    before = typed(src)
    after = fold(before)
    assert not nodes(after, Match)
    assert len(nodes(after, Let)) == 3
    assert_same(before, after)
    assert int(aot.interpret(after)[2]) == 2


# ------------------------------------------------------ lets of known tuples

@pytest.mark.parametrize("before, expected, args", [
    ("def @main(%x: float32) { let %t = (%x, add(%x, 1f)); %t.0 }",
     "def @main(%x: float32) { let %t = (%x, add(%x, 1f)); %x }", (2.0,)),
    ("def @main(%x: float32) { let %y = add(%x, 1f); let %t = (%x, %y); multiply(%t.1, 2f) }",
     "def @main(%x: float32) { let %y = add(%x, 1f); let %t = (%x, %y); multiply(%y, 2f) }",
     (2.0,)),
    # a computed field is not an atom: projecting it again would not
    # recompute it, but substituting the expression would
    ("def @main(%x: float32) { let %t = (%x, add(%x, 1f)); %t.1 }",
     "def @main(%x: float32) { let %t = (%x, add(%x, 1f)); %t.1 }", (2.0,)),
])
def test_projection_of_a_let_bound_tuple(before, expected, args):
    check(before, expected, *args)


# ---------------------------------------------------------------- deep

N = 10_000


def test_deep_chain_of_ifs_on_constants():
    x = B.var("x", B.scalar())
    e = x
    for i in range(N):
        e = B.if_(B.const(i % 2 == 0), B.add(e, B.const(np.float32(1))), B.const(np.float32(-1)))
    before = aot.infer_types(B.module(main=B.function([x], e)))
    after = fold(before)
    assert not nodes(after, If)
    assert float(aot.interpret(after, 0.5)) == float(aot.interpret(before, 0.5))


def test_deep_let_chain_of_constructor_applications():
    """A 10,000-element list built in A-normal form, matched at the end."""
    mod = typed(LIST + "def @main(%x: int32) { Nil }")
    cons, nil = mod.constructor("Cons"), mod.constructor("Nil")
    x = B.var("x", "int32")
    bindings = [(B.var("l0"), B.call(nil))]
    for i in range(1, N):
        bindings.append((B.var(f"l{i}"), B.call(cons, B.const(np.int32(i)), bindings[-1][0])))
    last = bindings[-1][0]
    h = B.var("h")
    body = B.let_chain(bindings, B.match(last, [
        (B.pcons(cons, h, "_"), B.add(h, x)),
        (B.pcons(nil), x),
    ]))
    mod2 = mod.copy()
    mod2.add(mod.get_global_var("main"), B.function([x], body))
    before = aot.infer_types(mod2)
    after = fold(before)
    assert not nodes(after, Match)
    assert int(aot.interpret(after, 3)) == int(aot.interpret(before, 3)) == N - 1 + 3
    assert not any(isinstance(n, RefCreate) for n in post_order(after["main"]))
