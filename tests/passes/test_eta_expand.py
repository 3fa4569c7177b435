"""EtaExpand (Relay's: constructors and globals used as values) and
EtaExpandOps (operators used as values): before/expected IR after TVM's
test_pass_eta_expand.py, the interpreter giving the same values, and a
10,000-deep let chain."""

from __future__ import annotations

import numpy as np
import pytest

import aot
from aot import builder as B
from aot.ir.expr import Function
from aot.ir.module import IRModule
from aot.ir.structural import assert_structural_equal
from aot.ir.visitor import post_order
from aot.passes.manager import PassContext, Sequential, run_pass

LIST = "type List[A] { Cons(A, List[A]), Nil }\n"


def typed(text: str) -> IRModule:
    return aot.infer_types(aot.parse(text, source_name="eta.relay"))


def eta(mod: IRModule, constructor: bool = True, global_var: bool = True) -> IRModule:
    options = {"EtaExpand": {"expand_constructor": constructor, "expand_global_var": global_var}}
    with PassContext(options=options, verify=True):
        return run_pass("EtaExpand", mod)


def functions(mod: IRModule, name: str = "main") -> list[Function]:
    return [n for n in post_order(mod[name]) if isinstance(n, Function) and n is not mod[name]]


# ------------------------------------------------------------ TVM's cases

def test_eta_expand_global_var():
    before = typed("""
        def @aux(%x: int32) -> int32 { %x }
        def @main() -> fn (int32) -> int32 { @aux }""")
    expected = typed("""
        def @aux(%x: int32) -> int32 { %x }
        def @main() -> fn (int32) -> int32 { fn (%y: int32) -> int32 { @aux(%y) } }""")
    after = eta(before, constructor=False)
    assert_structural_equal(after, expected)


def test_eta_expand_constructor():
    before = typed(LIST + "def @main[A]() -> fn (A, List[A]) -> List[A] { Cons }")
    expected = typed(LIST + """
        def @main[A]() -> fn (A, List[A]) -> List[A] {
          fn [B](%x: B, %xs: List[B]) -> List[B] { Cons(%x, %xs) }
        }""")
    after = eta(before, global_var=False)
    assert_structural_equal(after, expected)


# ----------------------------------------------------------------- rules

def test_options_choose_what_is_expanded():
    src = LIST + """def @aux(%x: int32) -> int32 { %x }
                    def @main() { (@aux, Cons) }"""
    before = typed(src)
    assert len(functions(eta(before, True, True))) == 2
    only_ctor = eta(before, True, False)
    assert [type(f.body.op).__name__ for f in functions(only_ctor)] == ["Constructor"]
    only_gv = eta(before, False, True)
    assert [type(f.body.op).__name__ for f in functions(only_gv)] == ["GlobalVar"]
    assert eta(before, False, False) is before


def test_called_matched_and_nullary_are_left_alone():
    src = LIST + """def @aux(%x: int32) -> int32 { %x }
        def @main(%l: List[int32]) {
          (@aux(1), Cons(2, Nil), match (%l) { Cons(%h, %t) => %h, Nil => 0 })
        }"""
    before = typed(src)
    assert_structural_equal(eta(before), before)


def test_polymorphic_global_gets_fresh_type_parameters():
    before = typed("""def @id[A](%x: A) -> A { %x }
                      def @main() { let %f = @id; (%f(1), %f(2f)) }""")
    expected = typed("""def @id[A](%x: A) -> A { %x }
                        def @main() { let %f = fn [B](%y: B) -> B { @id(%y) }; (%f(1), %f(2f)) }""")
    after = eta(before)
    assert_structural_equal(after, expected)
    assert [float(v) for v in aot.interpret(after)] == [1.0, 2.0]


def test_each_use_gets_its_own_function():
    before = typed("""def @aux(%x: int32) -> int32 { %x + 1 }
                      def @main() { (@aux, @aux, @aux) }""")
    after = eta(before)
    fns = functions(after)
    assert len(fns) == 3 and len({id(f.params[0]) for f in fns}) == 3


def _show(v: object) -> object:
    if isinstance(v, tuple):
        return tuple(_show(x) for x in v)
    if isinstance(v, np.ndarray):
        return v.tolist()
    return str(v)


def test_values_are_kept():
    src = LIST + """
    def @inc(%x: int32) -> int32 { %x + 1 }
    def @map(%f: fn (int32) -> int32, %l: List[int32]) -> List[int32] {
      match (%l) { Cons(%h, %t) => Cons(%f(%h), @map(%f, %t)), Nil => Nil }
    }
    def @build(%c: fn (int32, List[int32]) -> List[int32], %n: int32) -> List[int32] {
      if (%n == 0) { Nil } else { %c(%n, @build(%c, %n - 1)) }
    }
    def @main(%n: int32) { @map(@inc, @build(Cons, %n)) }
    """
    before = typed(src)
    after = eta(before)
    assert len(functions(after)) == 2
    assert _show(aot.interpret(after, np.int32(3))) == _show(aot.interpret(before, np.int32(3)))
    assert str(aot.interpret(after, np.int32(2))) == "Cons(3, Cons(2, Nil))"


def test_options_are_typed():
    with pytest.raises(aot.DiagnosticError, match="expand_constructor must be bool"):
        with PassContext(options={"EtaExpand": {"expand_constructor": 1}}):
            run_pass("EtaExpand", typed("def @main() { 1 }"))


def test_disabled_by_name_leaves_the_module_unchanged():
    before = typed("def @aux(%x: int32) -> int32 { %x } def @main() { @aux }")
    ctx = PassContext(disabled=["EtaExpand"],
                      options={"EtaExpand": {"expand_global_var": True}})
    with ctx:
        assert Sequential(["EtaExpand"])(before) is before


def test_ten_thousand_deep_let_chain():
    n = 10_000
    inc = B.gvar("inc")
    x = B.var("x", B.scalar("int32"))
    bindings = []
    prev = x
    for i in range(n):
        v = B.var(f"v{i}")
        bindings.append((v, B.call(inc, prev)))
        prev = v
    f = B.var("f", B.func_type([B.scalar("int32")], B.scalar("int32")))
    body = B.let_chain(bindings, B.let(f, inc, B.call(f, prev)))
    y = B.var("y", B.scalar("int32"))
    mod = aot.infer_types(B.module(inc=B.function([y], B.add(y, B.const(1))),
                                   main=B.function([x], body)))
    after = eta(mod)
    assert len(functions(after)) == 1
    assert int(aot.interpret(after, np.int32(0))) == n + 1


# ------------------------------------------------------------ EtaExpandOps

def test_eta_expand_ops_still_expands_operators():
    before = typed("""
        def @apply(%f: fn (float32, float32) -> float32, %a: float32) -> float32 { %f(%a, %a) }
        def @main(%x: float32) { (@apply(add, %x), let %g: fn (float32) -> float32 = exp; %g(%x)) }""")
    expected = typed("""
        def @apply(%f: fn (float32, float32) -> float32, %a: float32) -> float32 { %f(%a, %a) }
        def @main(%x: float32) {
          (@apply(fn (%p: float32, %q: float32) -> float32 { add(%p, %q) }, %x),
           let %g: fn (float32) -> float32 = fn (%r: float32) -> float32 { exp(%r) }; %g(%x))
        }""")
    with PassContext(verify=True):
        after = run_pass("EtaExpandOps", before)
    assert_structural_equal(after, expected)
    got = aot.interpret(after, np.float32(0.5))
    want = aot.interpret(before, np.float32(0.5))
    assert [float(v) for v in got] == [float(v) for v in want]


def test_a_polymorphic_operator_value_needs_its_instance():
    """Run alone, before Specialize, `let %f = add` has the operator's
    polymorphic type: the pass says so instead of printing a function
    literal over unbound type variables (which did not re-parse)."""
    from aot.diagnostics import DiagnosticError
    from aot.ir.printer import print_module
    poly = aot.infer_types(aot.parse(
        "def @main(%x: Tensor[(2,), float32]) { let %f = add; %f(%x, %x) }"))
    with pytest.raises(DiagnosticError, match="add is used as a polymorphic value"):
        run_pass("EtaExpandOps", poly)
    mono = aot.infer_types(aot.parse(
        "def @main(%x: Tensor[(2,), float32]) {\n"
        "  let %f: fn (Tensor[(2,), float32], Tensor[(2,), float32]) -> Tensor[(2,), float32]"
        " = add;\n  %f(%x, %x) }"))
    text = print_module(run_pass("EtaExpandOps", mono))
    aot.infer_types(aot.parse(text))          # re-parses and re-types
