"""ToBasicBlockNormalForm: before/expected IR (TVM's
test_pass_to_basic_block_normal_form.py cases and ours), the interpreter
giving the same values before and after, the basic-block checker on
every result, and deep inputs.  (Random programs and the Relay corpus:
tests/passes/test_normal_forms_semantics.py.)"""

from __future__ import annotations

import numpy as np
import pytest

import aot
from aot import builder as B
from aot.interpreter import Interpreter
from aot.ir.expr import Let
from aot.ir.feature import Feature, detect_feature
from aot.ir.module import IRModule
from aot.ir.normal_form import basic_block_violations
from aot.ir.structural import assert_structural_equal
from aot.ir.visitor import post_order
from aot.passes.manager import PassContext, Sequential, run_pass
from aot.values import Closure, ConstructorValue, values_equal
from pass_helpers import TVM_REF_PROGRAM, deep_let_chain, random_args, shared_graph


def typed(text: str) -> IRModule:
    return aot.infer_types(aot.parse(text, source_name="bbnf.relay"))


def bbnf(mod: IRModule) -> IRModule:
    with PassContext(verify=True):
        return run_pass("ToBasicBlockNormalForm", mod)


def check(before: str, expected: str | None) -> IRModule:
    """``expected`` None: the module comes back unchanged (same objects)."""
    b = typed(before)
    after = bbnf(b)
    if expected is None:
        assert after["main"] is b["main"]
    else:
        assert_structural_equal(after["main"], typed(expected)["main"])
    assert basic_block_violations(after) == []
    for seed in range(3):
        args = random_args(b, seed)
        aot.interpret(after, *args)     # type-checks the arguments
        assert same_results(Interpreter(b), Interpreter(after), args)
    return after


def same_results(before: Interpreter, after: Interpreter, args: list) -> bool:
    """@main gives the same value in both; a closure in the result (at the
    top or in a tuple) is called on ones of its parameters' types."""
    want, got = before.call("main", args), after.call("main", args)
    pairs = list(zip(want, got)) if isinstance(want, tuple) else [(want, got)]
    for w, g in pairs:
        if isinstance(w, Closure):
            probe = [np.ones(p.checked_type.shape, p.checked_type.dtype.np)
                     for p in w.func.params]
            w, g = before.apply(w, probe), after.apply(g, probe)
        if not values_equal(w, g):
            return False
    return True


# ------------------------------------------------------------------ cases

CASES: dict[str, tuple[str, str | None]] = {
    # TVM test_no_explicit_bind: sharing inside one block stays graph form
    "no_explicit_bind": (
        "def @main() { %0 = 1; %1 = add(%0, %0); %2 = add(%1, %1); add(%2, %2) }",
        None,
    ),
    # TVM test_top_level_nested_if: %0 is used in both outer branches (bound
    # at the top), %1 in both inner branches of the true one (bound there)
    "top_level_nested_if": (
        """def @main(%x: bool, %y: float32, %z: float32) {
             %0 = add(%z, %z);
             %1 = add(%y, %y);
             if (%x) { if (True) { add(%0, %1) } else { add(3f, %1) } }
             else { if (False) { %0 } else { 1f } }
           }""",
        """def @main(%x: bool, %y: float32, %z: float32) {
             let %z2 = add(%z, %z);
             if (%x) {
               let %y2 = add(%y, %y);
               if (True) { add(%z2, %y2) } else { add(3f, %y2) }
             } else {
               if (False) { %z2 } else { 1f }
             }
           }""",
    ),
    # TVM test_nested_if
    "nested_if": (
        """def @main(%x: bool, %y: float32) {
             %0 = add(%y, %y);
             if (%x) { if (True) { %0 } else { add(3f, %0) } }
             else { if (False) { 2f } else { 1f } }
           }""",
        """def @main(%x: bool, %y: float32) {
             if (%x) {
               let %y2 = add(%y, %y);
               if (True) { %y2 } else { add(3f, %y2) }
             } else {
               if (False) { 2f } else { 1f }
             }
           }""",
    ),
    # TVM test_if: the binding comes before the if (the condition stays a
    # graph node of the if)
    "if": (
        """def @main(%x: float32) {
             %0 = add(%x, 1f);
             if (equal(%x, 2f)) { multiply(%0, 2f) } else { multiply(%0, 1f) }
           }""",
        """def @main(%x: float32) {
             let %v1 = add(%x, 1f);
             if (equal(%x, 2f)) { multiply(%v1, 2f) } else { multiply(%v1, 1f) }
           }""",
    ),
    # TVM test_ref: lets only, nothing shared
    "ref": (
        TVM_REF_PROGRAM,
        None,
    ),
    # TVM test_let (let1, let1_1, let3): unchanged
    "let1": ("def @main() { let %x = 4f; %x }", None),
    "let1_1": ("def @main() { let %y = 4f; add(%y, %y) }", None),
    "let3": ("def @main() { let %y = 3f; let %x = 4f; let %z = %x + %y; %x + %z }", None),
    # TVM's let2 expects `let %y = %x; %y`: Relay renames %x to %y; we do
    # not rename, so the program is unchanged
    "let2": ("def @main() { let %x = 4f; let %y = %x; %x }", None),
    # TVM test_function, test_gradient_if: unchanged
    "function": ("def @main(%x: float32) { %x + %x }", None),
    "gradient_if": (
        """def @main(%cond: bool, %a: Tensor[(1, 16), float32], %y: Tensor[(1, 16), float32]) {
             add(%a, if (%cond) { %a } else { %a })
           }""",
        None,
    ),
    # TVM test_higher_order_return: %0 is shared by two closures
    "higher_order_return": (
        """def @main(%x: Tensor[(1), float32]) {
             %0 = add(%x, %x);
             (fn (%y: Tensor[(1), float32]) { add(%0, %y) },
              fn (%z: Tensor[(1), float32]) { add(%0, %z) })
           }""",
        """def @main(%x: Tensor[(1), float32]) {
             let %x2 = add(%x, %x);
             (fn (%y: Tensor[(1), float32]) { add(%x2, %y) },
              fn (%z: Tensor[(1), float32]) { add(%x2, %z) })
           }""",
    ),
    # TVM test_higher_order_nested: shared by closures in both branches
    "higher_order_nested": (
        """def @main(%f: fn () -> bool, %s: Tensor[(1), float32]) {
             %0 = add(%s, %s);
             if (%f()) { fn (%x: Tensor[(1), float32]) { add(%x, %0) } }
             else { fn (%z: Tensor[(1), float32]) { add(%z, %0) } }
           }""",
        """def @main(%f: fn () -> bool, %s: Tensor[(1), float32]) {
             let %sh = add(%s, %s);
             if (%f()) { fn (%x: Tensor[(1), float32]) { add(%x, %sh) } }
             else { fn (%z: Tensor[(1), float32]) { add(%z, %sh) } }
           }""",
    ),
    # a binding that uses a let's variable goes after that let
    "after_the_let_it_uses": (
        """def @main(%x: float32) {
             let %y = add(%x, %x);
             %0 = multiply(%y, %y);
             if (less(%x, 1f)) { %0 } else { negative(%0) }
           }""",
        """def @main(%x: float32) {
             let %y = add(%x, %x);
             let %t = multiply(%y, %y);
             if (less(%x, 1f)) { %t } else { negative(%t) }
           }""",
    ),
    # a let's value and body are one block: sharing between them stays
    "let_value_and_body_one_block": (
        "def @main(%x: float32) { %0 = add(%x, %x); let %y = multiply(%0, 2f); add(%0, %y) }",
        None,
    ),
    # used by a branch and after the if: bound before the if
    "branch_and_continuation": (
        """def @main(%x: float32, %c: bool) {
             %0 = add(%x, %x);
             add(if (%c) { %0 } else { 1f }, %0)
           }""",
        """def @main(%x: float32, %c: bool) {
             let %s = add(%x, %x);
             add(if (%c) { %s } else { 1f }, %s)
           }""",
    ),
    "shared_across_clauses": (
        """def @main(%o: Option[int32], %y: int32) {
             %0 = add(%y, 1);
             match (%o) { Some(%h) => multiply(%h, %0), None => %0 }
           }""",
        """def @main(%o: Option[int32], %y: int32) {
             let %s = add(%y, 1);
             match (%o) { Some(%h) => multiply(%h, %s), None => %s }
           }""",
    ),
    # a closure node used in two blocks is bound once
    "shared_closure": (
        """def @main(%c: bool, %x: float32) {
             %0 = fn (%y: float32) { negative(%y) };
             if (%c) { %0(%x) } else { %0(1f) }
           }""",
        """def @main(%c: bool, %x: float32) {
             let %f = fn (%y: float32) { negative(%y) };
             if (%c) { %f(%x) } else { %f(1f) }
           }""",
    ),
    # a shared node inside a recursive function: bound in the function's
    # body, before its if
    "local_recursion": (
        """def @main(%n: int32) {
             let %f = fn (%i: int32) -> int32 {
               %0 = multiply(%i, 2);
               if (%i == 0) { %0 } else { %0 + %f(%i - 1) }
             };
             %f(%n)
           }""",
        """def @main(%n: int32) {
             let %f = fn (%i: int32) -> int32 {
               let %m = multiply(%i, 2);
               if (%i == 0) { %m } else { %m + %f(%i - 1) }
             };
             %f(%n)
           }""",
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_cases(name: str) -> None:
    before, expected = CASES[name]
    if name == "shared_across_clauses":
        b = typed(before)
        after = bbnf(b)
        assert_structural_equal(after["main"], typed(expected)["main"])
        assert basic_block_violations(after) == []
        some, none = b.constructor("Some"), b.constructor("None")
        for o in (ConstructorValue(some, (np.asarray(3, np.int32),)), ConstructorValue(none, ())):
            args = [o, np.asarray(5, np.int32)]
            assert values_equal(aot.interpret(after, *args), aot.interpret(b, *args))
        return
    if name == "higher_order_nested":
        # @main takes a function: compare the structure and the checker only
        after = bbnf(typed(before))
        assert_structural_equal(after["main"], typed(expected)["main"])
        assert basic_block_violations(after) == []
        return
    check(before, expected)


def test_no_explicit_bind_has_no_lets() -> None:
    before = typed(CASES["no_explicit_bind"][0])
    assert Feature.fLet not in detect_feature(before)
    after = bbnf(before)
    assert Feature.fLet not in detect_feature(after)
    assert Feature.fGraph in detect_feature(after)
    assert int(aot.interpret(after)) == 8


def test_global_recursion() -> None:
    """TVM's test_recursion: %m is shared by both branches of the global's
    body."""
    before = typed("""
      def @f(%n: int64) -> int64 {
        %0 = multiply(%n, 2i64);
        if (equal(%n, 0i64)) { %0 } else { add(%0, @f(subtract(%n, 1i64))) }
      }
      def @main() -> int64 { @f(5i64) }""")
    expected = typed("""
      def @f(%n: int64) -> int64 {
        let %m = multiply(%n, 2i64);
        if (equal(%n, 0i64)) { %m } else { add(%m, @f(subtract(%n, 1i64))) }
      }
      def @main() -> int64 { @f(5i64) }""")
    after = bbnf(before)
    assert_structural_equal(after, expected)
    assert basic_block_violations(after) == []
    assert int(aot.interpret(after)) == 30


def test_recursive_function_sharing_its_own_call() -> None:
    """A call of a recursive let's function shared by the function's body
    and the let's body cannot be bound outside the function: the function
    is copied, and nothing is shared between blocks any more."""
    f = B.var("f", B.func_type(["int32"], "int32"))
    i = B.var("i", "int32")
    shared = B.call(f, 0)
    fn = B.function([i], B.if_(B.equal(i, 0), 0, B.add(shared, i)), "int32")
    before = aot.infer_types(B.module(main=B.function([], Let(f, fn, B.add(shared, B.call(f, 3))))))
    assert basic_block_violations(before) != []
    after = bbnf(before)
    assert basic_block_violations(after) == []
    assert int(aot.interpret(after)) == int(aot.interpret(before)) == 3


def test_disabled_by_name_leaves_the_module_unchanged() -> None:
    mod = typed(CASES["if"][0])
    with PassContext(disabled=["ToBasicBlockNormalForm"]):
        assert Sequential(["ToBasicBlockNormalForm"])(mod) is mod
    assert Sequential(["ToBasicBlockNormalForm"])(mod) is not mod


def test_idempotent() -> None:
    once = bbnf(typed(CASES["top_level_nested_if"][0]))
    assert bbnf(once)["main"] is once["main"]


def test_ten_thousand_deep_let_chain() -> None:
    """Nothing is shared between blocks: the chain comes back as it is."""
    n = 10_000
    x, body = deep_let_chain(n)
    before = aot.infer_types(B.module(main=B.function([x], body)))
    after = bbnf(before)
    assert after["main"] is before["main"]


def test_ten_thousand_node_graph_under_an_if() -> None:
    """A 10,000-node graph whose last node is used by both branches: one
    binding, the rest stays graph form."""
    n = 10_000
    x, b = shared_graph(n)
    body = B.if_(B.less(x, 0.0), b, B.negative(b))
    before = aot.infer_types(B.module(main=B.function([x], body)))
    after = bbnf(before)
    assert basic_block_violations(after) == []
    lets = [node for node in post_order(after["main"]) if isinstance(node, Let)]
    assert len(lets) == 1
    args = [np.asarray(-2.5, np.float32)]
    assert values_equal(Interpreter(after).call("main", args),
                        Interpreter(before).call("main", args))
