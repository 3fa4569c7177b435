"""ToANormalForm: before/expected IR (TVM's test_pass_to_a_normal_form.py
cases and ours), the interpreter giving the same values before and after,
the A-normal-form checker on every result, and deep inputs.  (Random
programs and the Relay corpus: tests/passes/test_normal_forms_semantics.py.)"""

from __future__ import annotations

import numpy as np
import pytest

import aot
from aot import builder as B
from aot.ir.expr import Call, Let, Var
from aot.ir.feature import Feature, detect_feature
from aot.ir.module import IRModule
from aot.ir.normal_form import a_normal_form_violations, is_primitive_function
from aot.ir.structural import assert_structural_equal
from aot.ir.visitor import post_order
from aot.interpreter import Interpreter
from aot.passes.manager import PassContext, Sequential, run_pass
from aot.values import make_list, values_equal
from pass_helpers import deep_let_chain, random_args, shared_graph


def typed(text: str) -> IRModule:
    return aot.infer_types(aot.parse(text, source_name="anf.relay"))


def anf(mod: IRModule) -> IRModule:
    with PassContext(verify=True):
        return run_pass("ToANormalForm", mod)


def assert_same_values(before: IRModule, after: IRModule, args: list) -> None:
    want = aot.interpret(before, *args)
    got = aot.interpret(after, *args)
    assert values_equal(want, got), (want, got)


def check(before: str, expected: str, args: list | None = None,
          names: tuple[str, ...] = ("main",)) -> IRModule:
    """``names``: the globals to compare (a module using ``List`` also
    holds the prelude, converted too and checked by the checker only)."""
    b = typed(before)
    after = anf(b)
    want = typed(expected)
    for name in names:
        assert_structural_equal(after[name], want[name])
    assert a_normal_form_violations(after) == []
    assert Feature.fGraph not in detect_feature(after)
    for seed in range(2):
        assert_same_values(b, after, args if args is not None else random_args(b, seed))
    return after


# ------------------------------------------------------------------ cases

CASES = {
    # TVM test_explicit_bound: one constant node shared, each add shared
    "explicit_bound": (
        "def @main() { %0 = 1; %1 = add(%0, %0); %2 = add(%1, %1); add(%2, %2) }",
        """def @main() {
             let %a = 1; let %b = add(%a, %a); let %c = add(%b, %b); let %d = add(%c, %c); %d
           }""",
    ),
    # TVM test_order: bindings follow evaluation order, not construction
    "order": (
        "def @main() { 1 + 2 * 3 }",
        """def @main() {
             let %a = 1; let %b = 2; let %c = 3; let %d = multiply(%b, %c);
             let %e = add(%a, %d); %e
           }""",
    ),
    # TVM test_if: each branch is a block ending in an atom; the if is bound
    "if": (
        "def @main() { if (True) { 2 } else { 3 } }",
        """def @main() {
             let %c = True;
             let %d = if (%c) { let %a = 2; %a } else { let %b = 3; %b };
             %d
           }""",
    ),
    # TVM test_let: the let's binding is kept; uses of %x are not renamed
    "let": (
        "def @main() { let %x = 4f; let %y = %x; %x + %y }",
        "def @main() { let %x = 4f; let %y = %x; let %s = add(%x, %y); %s }",
    ),
    # TVM test_function
    "function": (
        "def @main(%x: float32) { %x + %x }",
        "def @main(%x: float32) { let %s = add(%x, %x); %s }",
    ),
    # TVM test_gradient_if: variables are atoms, never bound
    "gradient_if": (
        """def @main(%cond: bool, %a: Tensor[(1, 16), float32], %y: Tensor[(1, 16), float32]) {
             add(%a, if (%cond) { %a } else { %a })
           }""",
        """def @main(%cond: bool, %a: Tensor[(1, 16), float32], %y: Tensor[(1, 16), float32]) {
             let %i = if (%cond) { %a } else { %a }; let %s = add(%a, %i); %s
           }""",
    ),
    # TVM test_ref: effects stay in order
    "ref": (
        """def @main() {
             let %i = ref(1); let %iv = ref_read(%i); let %u = ref_write(%i, 2);
             let %uv = ref_read(%i); add(%iv, %uv)
           }""",
        """def @main() {
             let %one = 1; let %i = ref(%one); let %iv = ref_read(%i); let %two = 2;
             let %u = ref_write(%i, %two); let %uv = ref_read(%i); let %s = add(%iv, %uv); %s
           }""",
    ),
    # a node used by both branches is bound once, before the if (after the
    # condition, which is reached first)
    "shared_across_branches": (
        """def @main(%x: float32) {
             %0 = add(%x, %x);
             if (less(%x, 1f)) { %0 } else { multiply(%0, 2f) }
           }""",
        """def @main(%x: float32) {
             let %one = 1f; let %c = less(%x, %one); let %s = add(%x, %x);
             let %r = if (%c) { %s } else { let %two = 2f; let %m = multiply(%s, %two); %m };
             %r
           }""",
    ),
    # TVM's nested-if case (from test_pass_to_basic_block_normal_form):
    # %0 is used in both outer branches, %1 only inside the outer true one
    "nested_if": (
        """def @main(%x: bool, %y: float32, %z: float32) {
             %0 = add(%z, %z);
             %1 = add(%y, %y);
             if (%x) { if (True) { add(%0, %1) } else { add(3f, %1) } }
             else { if (False) { %0 } else { 1f } }
           }""",
        """def @main(%x: bool, %y: float32, %z: float32) {
             let %z2 = add(%z, %z);
             let %r = if (%x) {
               let %t = True;
               let %y2 = add(%y, %y);
               let %ri = if (%t) { let %s = add(%z2, %y2); %s }
                         else { let %three = 3f; let %s2 = add(%three, %y2); %s2 };
               %ri
             } else {
               let %f = False;
               let %re = if (%f) { %z2 } else { let %one = 1f; %one };
               %re
             };
             %r
           }""",
    ),
    # clauses are blocks like branches
    "shared_across_clauses": (
        """def @main(%xs: List[int32], %y: int32) {
             %0 = add(%y, 1);
             match (%xs) { Cons(%h, _) => multiply(%h, %0), Nil => %0 }
           }""",
        """def @main(%xs: List[int32], %y: int32) {
             let %one = 1; let %s = add(%y, %one);
             let %m = match (%xs) { Cons(%h, _) => { let %p = multiply(%h, %s); %p }, Nil => %s };
             %m
           }""",
    ),
    # a node shared by a closure and the code around it is bound outside
    # the closure, where it dominates both (as in Relay)
    "shared_with_closure": (
        """def @main(%x: float32) {
             %0 = add(%x, %x);
             %1 = fn (%y: float32) { multiply(%y, %0) };
             (%1(%0), %0)
           }""",
        """def @main(%x: float32) {
             let %s = add(%x, %x);
             let %f = fn (%y: float32) { let %m = multiply(%y, %s); %m };
             let %c = %f(%s);
             let %r = (%c, %s);
             %r
           }""",
    ),
    "shared_node_bound_once": (
        "def @main(%x: float32) { %0 = add(%x, %x); (%0, %0) }",
        "def @main(%x: float32) { let %s = add(%x, %x); let %t = (%s, %s); %t }",
    ),
    # the value of a let already bound by an earlier use: the let binds
    # its variable to that atom
    "let_of_a_bound_node": (
        "def @main(%x: float32) { %0 = add(%x, 1f); (%0, let %y = %0; %y) }",
        """def @main(%x: float32) {
             let %one = 1f; let %s = add(%x, %one); let %y = %s; let %t = (%s, %y); %t
           }""",
    ),
    # a let in an argument is flattened into the block
    "let_in_argument": (
        "def @main(%x: float32) { add(let %y = %x; %y, 1f) }",
        "def @main(%x: float32) { let %y = %x; let %one = 1f; let %s = add(%y, %one); %s }",
    ),
    "projection": (
        "def @main(%x: float32) { (%x, 2f).1 }",
        "def @main(%x: float32) { let %two = 2f; let %t = (%x, %two); let %p = %t.1; %p }",
    ),
    "local_recursion": (
        """def @main(%n: int32) {
             let %f = fn (%i: int32) -> int32 { if (%i == 0) { 0 } else { %f(%i - 1) + 1 } };
             %f(%n)
           }""",
        """def @main(%n: int32) {
             let %f = fn (%i: int32) -> int32 {
               let %z = 0; let %c = equal(%i, %z);
               let %r = if (%c) { let %z2 = 0; %z2 } else {
                 let %one = 1; let %d = subtract(%i, %one); let %k = %f(%d);
                 let %one2 = 1; let %s = add(%k, %one2); %s
               };
               %r
             };
             let %v = %f(%n);
             %v
           }""",
    ),
}


def list_args(mod: IRModule) -> list:
    """[Cons(3, Cons(4, Nil)), 5] for a @main(List[int32], int32)."""
    items = [np.asarray(3, np.int32), np.asarray(4, np.int32)]
    return [make_list(items, mod.constructor("Cons"), mod.constructor("Nil")),
            np.asarray(5, np.int32)]


ARGS = {"shared_across_clauses": list_args}


@pytest.mark.parametrize("name", sorted(CASES))
def test_cases(name: str) -> None:
    before, expected = CASES[name]
    args = ARGS[name](typed(before)) if name in ARGS else None
    check(before, expected, args)


def test_explicit_bound_adds_lets() -> None:
    """TVM's test_explicit_bound, by features: graph in, lets out."""
    before = typed(CASES["explicit_bound"][0])
    assert Feature.fLet not in detect_feature(before)
    assert Feature.fGraph in detect_feature(before)
    after = anf(before)
    assert Feature.fLet in detect_feature(after)
    assert int(aot.interpret(after)) == 8


def test_global_recursion() -> None:
    """TVM's test_recursion: %m is shared by both branches of the global's
    body, so it is bound before the if."""
    before = """
      def @f(%n: int64) -> int64 {
        %0 = multiply(%n, 2i64);
        if (equal(%n, 0i64)) { %0 } else { add(%0, @f(subtract(%n, 1i64))) }
      }
      def @main() -> int64 { @f(5i64) }"""
    expected = """
      def @f(%n: int64) -> int64 {
        let %z = 0i64; let %c = equal(%n, %z);
        let %two = 2i64; let %m = multiply(%n, %two);
        let %r = if (%c) { %m } else {
          let %one = 1i64; let %d = subtract(%n, %one); let %k = @f(%d);
          let %s = add(%m, %k); %s
        };
        %r
      }
      def @main() -> int64 { let %five = 5i64; let %v = @f(%five); %v }"""
    after = check(before, expected, [], names=("f", "main"))
    assert int(aot.interpret(after)) == 30


def test_recursive_function_sharing_its_own_call() -> None:
    """A node that calls a recursive let's function is shared by the
    function's body and the let's body: it cannot be bound outside the
    function (the function's variable is not bound yet there), so the
    function is copied and each side binds its own."""
    f = B.var("f", B.func_type(["int32"], "int32"))
    i = B.var("i", "int32")
    shared = B.call(f, 0)
    fn = B.function([i], B.if_(B.equal(i, 0), 0, B.add(shared, i)), "int32")
    before = aot.infer_types(B.module(main=B.function([], Let(f, fn, B.add(shared, B.call(f, 3))))))
    after = anf(before)
    assert a_normal_form_violations(after) == []
    assert int(aot.interpret(after)) == int(aot.interpret(before)) == 3
    calls = [n for n in post_order(after["main"])
             if isinstance(n, Call) and isinstance(n.op, Var) and n.op.name_hint == "f"]
    assert len(calls) == 3   # f(0) inside, f(0) and f(3) outside


def test_primitive_functions_stay_in_call_position() -> None:
    before = typed("""
      def @main(%x: Tensor[(4), float32], %y: Tensor[(4), float32]) {
        %0 = add(%x, %y);
        %1 = exp(%0);
        (multiply(%1, %0), negative(%1))
      }""")
    with PassContext(verify=True):
        fused = run_pass("FuseOps", before)
    after = anf(fused)
    assert a_normal_form_violations(after) == []
    prims = [n for n in post_order(after["main"]) if is_primitive_function(n)]
    assert prims
    called = {n.op for n in post_order(after["main"]) if isinstance(n, Call)}
    assert all(p in called for p in prims)
    bound = [n.value for n in post_order(after["main"]) if isinstance(n, Let)]
    assert not any(is_primitive_function(v) for v in bound)
    assert_same_values(before, after, random_args(before))


def test_typed_result_keeps_checked_types() -> None:
    after = anf(typed(CASES["shared_across_branches"][0]))
    for node in post_order(after["main"]):
        if isinstance(node, Let):
            assert node.var.checked_type == node.value.checked_type
            assert node.checked_type == node.body.checked_type


def test_disabled_by_name_leaves_the_module_unchanged() -> None:
    mod = typed(CASES["shared_across_branches"][0])
    with PassContext(disabled=["ToANormalForm"]):
        assert Sequential(["ToANormalForm"])(mod) is mod
    assert Sequential(["ToANormalForm"])(mod) is not mod


def test_idempotent() -> None:
    once = anf(typed(CASES["nested_if"][0]))
    twice = anf(once)
    assert_structural_equal(twice, once)


# ------------------------------------------------------------------ deep

def test_ten_thousand_deep_let_chain() -> None:
    n = 10_000
    x, body = deep_let_chain(n)
    before = aot.infer_types(B.module(main=B.function([x], body)))
    after = anf(before)
    assert a_normal_form_violations(after) == []
    assert sum(isinstance(node, Let) for node in post_order(after["main"])) == 2 * n
    # (the Interpreter directly: aot.interpret would type-check again)
    assert float(Interpreter(after).call("main", [np.float32(0.0)])) == float(n)


def test_ten_thousand_node_graph() -> None:
    """A chain in which every node is used twice (by the next two)."""
    n = 10_000
    x, b = shared_graph(n)
    before = aot.infer_types(B.module(main=B.function([x], b)))
    assert Feature.fGraph in detect_feature(before)
    after = anf(before)
    assert a_normal_form_violations(after) == []
    assert sum(isinstance(node, Let) for node in post_order(after["main"])) == n + 1
    args = [np.asarray(-2.5, np.float32)]
    assert values_equal(Interpreter(after).call("main", args),
                        Interpreter(before).call("main", args))


def test_a_function_body_that_is_an_atom() -> None:
    mod = typed("def @main(%x: float32) { %x }")
    assert anf(mod)["main"] is mod["main"]
