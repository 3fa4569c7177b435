"""DeadCodeElimination: before/expected IR after TVM's
test_pass_dead_code_elimination.py, the interpreter giving the same values
before and after, unreachable globals, and a 10,000-deep let chain."""

from __future__ import annotations

import numpy as np
import pytest

import aot
from aot import builder as B
from aot.ir.expr import Let
from aot.ir.module import IRModule
from aot.ir.structural import assert_structural_equal
from aot.ir.visitor import post_order
from aot.passes.manager import PassContext, Sequential, run_pass
from pass_helpers import assert_same_values


def typed(text: str) -> IRModule:
    return aot.infer_types(aot.parse(text, source_name="dce.relay"))


def dce(mod: IRModule, **options: object) -> IRModule:
    with PassContext(options={"DeadCodeElimination": options}, verify=True):
        return run_pass("DeadCodeElimination", mod)


def check(before: str, expected: str, *args: object, **options: object) -> IRModule:
    b = typed(before)
    after = dce(b, **options)
    assert_structural_equal(after, typed(expected))
    if args or not b["main"].params:
        assert_same_values(b, after, *args)
    return after


# ------------------------------------------------------- TVM's cases

CASES = {
    "dead_let": (
        "def @main(%z: int32) { let %x = 1; %z }",
        "def @main(%z: int32) { %z }",
    ),
    "one_live_let": (
        "def @main(%z: int32) { let %x = 1; let %y = 2; %x + %x }",
        "def @main(%z: int32) { let %x = 1; %x + %x }",
    ),
    "nested_let": (
        "def @main(%d: int32, %b: int32) { let %a = %b; let %c = %d; %c }",
        "def @main(%d: int32, %b: int32) { let %c = %d; %c }",
    ),
    "chain_of_dead_lets_feeding_each_other": (
        "def @main(%p: int32) { let %a = %p; let %b = %a + 1; let %c = %b * %a; %p }",
        "def @main(%p: int32) { %p }",
    ),
    "add_with_let": (
        "def @main() { (let %a = 1; 3) + 2 }",
        "def @main() { 3 + 2 }",
    ),
    "tuple_get_item": (
        "def @main() { let %a = 100; (1, 2, 3, 4).0 }",
        "def @main() { (1, 2, 3, 4).0 }",
    ),
    "dead_recursion": (
        """def @main() {
             let %f = fn (%n: int32, %data: float32) -> float32 {
               if (%n == 0) { %data } else { %f(%n - 1, log(%data)) }
             };
             ()
           }""",
        "def @main() { () }",
    ),
    "dead_bindings_inside_a_function_body": (
        """def @main(%x: float32) {
             let %g = fn (%y: float32) -> float32 { let %unused = exp(%y); %y * 2f };
             %g(%x)
           }""",
        """def @main(%x: float32) {
             let %g = fn (%y: float32) -> float32 { %y * 2f };
             %g(%x)
           }""",
    ),
    "dead_binding_inside_a_branch": (
        "def @main(%c: bool, %x: float32) { if (%c) { let %t = %x + 1f; %x } else { %x } }",
        "def @main(%c: bool, %x: float32) { if (%c) { %x } else { %x } }",
    ),
    "match_clause": (
        """type L { C(int32, L), N }
           def @main(%l: L) { match (%l) { C(%h, %t) => { let %d = %h + 1; %h }, N => 0 } }""",
        """type L { C(int32, L), N }
           def @main(%l: L) { match (%l) { C(%h, %t) => %h, N => 0 } }""",
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_tvm_cases(name):
    before, expected = CASES[name]
    args = {"one_live_let": (np.int32(4),), "nested_let": (np.int32(1), np.int32(2)),
            "dead_let": (np.int32(3),),
            "chain_of_dead_lets_feeding_each_other": (np.int32(5),),
            "dead_bindings_inside_a_function_body": (np.float32(1.5),),
            "dead_binding_inside_a_branch": (np.bool_(True), np.float32(2.0))}
    if name == "match_clause":
        check(before, expected)
        return
    check(before, expected, *args.get(name, ()))


LIVE = {
    "live_recursion": """
        def @main() {
          let %f = fn (%n: int32, %data: float32) -> float32 {
            if (%n == 0) { %data } else { %f(%n - 1, log(%data)) }
          };
          %f(2, 10000f)
        }""",
    "refs": """
        def @f(%r: Ref[int32]) -> int32 {
          let %v = ref_read(%r);
          let %u = ref_write(%r, %v + 1);
          %v
        }
        def @main() -> int32 {
          let %r = ref(0);
          let %y = @f(%r);
          let %z = @f(%r);
          %z
        }""",
    "impure_global_call": """
        def @g(%r: Ref[int32]) -> () { ref_write(%r, 7) }
        def @main() -> int32 {
          let %r = ref(0);
          let %unused = @g(%r);
          ref_read(%r)
        }""",
    "call_of_a_closure": """
        def @main(%x: float32) {
          let %f = fn (%y: float32) -> float32 { %y };
          let %unused = %f(%x);
          %x
        }""",
    "unused_ref_create": "def @main() { let %r = ref(1); 2 }",
    "unused_ref_read_of_a_parameter": "def @main(%r: Ref[int32]) { let %v = ref_read(%r); 2 }",
}


@pytest.mark.parametrize("name", sorted(LIVE))
@pytest.mark.parametrize("inline_once", [False, True])
def test_effects_are_kept(name, inline_once):
    """What may have an effect or diverge stays, used or not (TVM's
    test_refs, test_impure_func, test_live_recursion)."""
    src = LIVE[name]
    before = typed(src)
    after = dce(before, inline_once=inline_once)
    assert_structural_equal(after, before)


# ----------------------------------------------------------- inline_once

INLINE = {
    "relay_test_inline": (
        "def @main(%b: int32, %d: int32) { let %a = %b; let %c = %d; %c }",
        "def @main(%b: int32, %d: int32) { %d }",
    ),
    "not_across_a_function_boundary": (
        """def @main() {
             let %x = 1 + 1;
             let %f = fn (%y: int32) -> int32 { let %z = %y + %y; %x + %z };
             (%f(2), %f(3))
           }""",
        """def @main() {
             let %x = 1 + 1;
             let %f = fn (%y: int32) -> int32 { %x + (%y + %y) };
             (%f(2), %f(3))
           }""",
    ),
    "used_twice_stays": (
        "def @main(%p: float32) { let %a = exp(%p); let %b = %a + 1f; %a * %b }",
        "def @main(%p: float32) { let %a = exp(%p); %a * (%a + 1f) }",
    ),
    "impure_value_used_once_stays": (
        "def @main() { let %r = ref(1); let %v = ref_read(%r); %v + 1 }",
        "def @main() { let %r = ref(1); let %v = ref_read(%r); %v + 1 }",
    ),
}


@pytest.mark.parametrize("name", sorted(INLINE))
def test_inline_once(name):
    before, expected = INLINE[name]
    b = typed(before)
    after = dce(b, inline_once=True)
    assert_structural_equal(after, typed(expected))
    args = [np.float32(0.5)] if b["main"].params and name == "used_twice_stays" else []
    if name == "relay_test_inline":
        args = [np.int32(1), np.int32(2)]
    assert_same_values(b, after, *args)


def test_inline_once_is_off_by_default():
    src = "def @main(%b: int32) { let %a = %b + 1; %a }"
    assert_structural_equal(dce(typed(src)), typed(src))


# -------------------------------------------------------------- globals

GLOBALS = """
def @used(%x: float32) -> float32 { @leaf(%x) * 2f }
def @leaf(%x: float32) -> float32 { exp(%x) }
def @unused(%x: float32) -> float32 { @leaf(%x) + @unused2(%x) }
def @unused2(%x: float32) -> float32 { %x }
def @main(%x: float32) -> float32 { @used(%x) }
"""


def test_unreachable_globals_are_dropped():
    after = dce(typed(GLOBALS))
    assert sorted(g.name for g in after.functions) == ["leaf", "main", "used"]
    assert_same_values(typed(GLOBALS), after, np.float32(0.25))


def test_keep_globals():
    after = dce(typed(GLOBALS), keep_globals=True)
    assert len(after.functions) == 5


def test_entry_option():
    after = dce(typed(GLOBALS), entry="unused")
    assert sorted(g.name for g in after.functions) == ["leaf", "unused", "unused2"]


def test_a_module_without_the_entry_keeps_every_global():
    src = GLOBALS.replace("def @main(%x: float32) -> float32 { @used(%x) }", "")
    after = dce(typed(src))
    assert len(after.functions) == 4


def test_type_definitions_are_kept():
    src = "type T { A, B } def @main() { 1 }"
    after = dce(typed(src))
    assert after.has_type("T")


def test_mutual_recursion_reachable_from_main_is_kept():
    src = """
    def @even(%n: int32) -> bool { if (%n == 0) { True } else { @odd(%n - 1) } }
    def @odd(%n: int32) -> bool { if (%n == 0) { False } else { @even(%n - 1) } }
    def @main(%n: int32) -> bool { @even(%n) }
    """
    after = dce(typed(src))
    assert len(after.functions) == 3
    assert_same_values(typed(src), after, np.int32(7))


# --------------------------------------------------------- options, manager

def test_options_are_typed():
    with pytest.raises(aot.DiagnosticError, match="inline_once must be bool"):
        dce(typed("def @main() { 1 }"), inline_once="yes")
    with pytest.raises(aot.DiagnosticError, match="no option"):
        dce(typed("def @main() { 1 }"), inline=True)


def test_disabled_by_name_leaves_the_module_unchanged():
    before = typed("def @main(%z: int32) { let %x = 1; %z }")
    with PassContext(disabled=["DeadCodeElimination"]):
        after = Sequential(["DeadCodeElimination"])(before)
    assert after is before


# -------------------------------------------------------------- deep input

def test_ten_thousand_deep_let_chain():
    """Every other binding is dead; the live ones form a chain.  Both walks
    are iterative (no RecursionError) and linear."""
    n = 10_000
    x = B.var("x", B.scalar("float32"))
    bindings = []
    prev = x
    for i in range(n):
        v = B.var(f"v{i}")
        if i % 2:
            bindings.append((v, B.exp(prev)))       # dead: nobody uses v
        else:
            bindings.append((v, B.add(prev, B.const(1.0))))
            prev = v
    mod = aot.infer_types(B.module(main=B.function([x], B.let_chain(bindings, prev))))
    after = dce(mod)
    lets = [e for e in post_order(after["main"]) if isinstance(e, Let)]
    assert len(lets) == n // 2
    np.testing.assert_array_equal(aot.interpret(after, np.float32(0.0)), np.float32(n // 2))
    inlined = dce(mod, inline_once=True)
    assert not [e for e in post_order(inlined["main"]) if isinstance(e, Let)]
    np.testing.assert_array_equal(aot.interpret(inlined, np.float32(0.0)), np.float32(n // 2))


# -------------------------------------------------- random programs, values

@pytest.mark.parametrize("seed", range(3))
def test_random_inputs_give_the_same_values(seed):
    src = """
    def @main(%a: Tensor[(3, 4), float32], %b: Tensor[(4), float32]) {
      let %dead1 = nn.relu(%a);
      let %s = add(%a, %b);
      let %dead2 = multiply(%dead1, %s);
      let %m = fn (%t: Tensor[(3, 4), float32]) -> Tensor[(3, 4), float32] {
        let %dead3 = tanh(%t); sigmoid(%t)
      };
      let %r = %m(%s);
      (%r, let %u = exp(%b); %b)
    }
    """
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((3, 4)).astype(np.float32)
    b = rng.standard_normal(4).astype(np.float32)
    before = typed(src)
    for inline_once in (False, True):
        after = dce(before, inline_once=inline_once)
        assert_same_values(before, after, a, b)
        assert "dead" not in str(after) and "%u" not in str(after)
