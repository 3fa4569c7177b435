"""LambdaLift: before/expected IR (Relay's two-level closure form), the
interpreter giving the same values before and after (hand-written programs,
prelude combinators with lambdas, the Relay corpus, random programs), the
lifted module compiled to C, a 10,000-deep let chain, and the pass
disabled by name."""

from __future__ import annotations

import tempfile

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

import aot
from aot import builder as B
from aot.ir.expr import Call, Function, Let
from aot.ir.module import IRModule
from aot.ir.printer import print_module
from aot.ir.structural import assert_structural_equal, structural_equal
from aot.ir.visitor import post_order
from aot.passes.lambda_lift import MAX_NAME, is_closure, is_primitive, lambda_lift
from aot.passes.manager import PassContext, Sequential, get_pass, run_pass
from aot.values import ConstructorValue
from e2e.random_programs import Program, programs
from test_corpus_semantics import diverges, has_main, ill_typed, load, random_value, records
from pass_helpers import same_value

HEADER = '#[version = "0.0.5"]\n'


def typed(text: str) -> IRModule:
    return aot.infer_types(aot.parse(HEADER + text, source_name="lift.relay"))


def local_functions(mod: IRModule) -> list[Function]:
    """Functions that are neither a global's own, nor the code function of
    a lifted closure, nor primitive (the pass leaves none)."""
    out = []
    for func in mod.functions.values():
        top = {func, func.body} if is_closure(func) else {func}
        out += [n for n in post_order(func) if isinstance(n, Function)
                and n not in top and not is_primitive(n)]
    return out


def check(before: IRModule, expected: str, *args: object) -> IRModule:
    """Lift ``before`` through the pass manager (verified), compare with
    ``expected`` and the interpreter's values on ``args``."""
    after = run_pass("LambdaLift", before)
    assert_structural_equal(after, typed(expected))
    assert not local_functions(after)
    assert same_value(aot.interpret(before, *args), aot.interpret(after, *args))
    return after


def f32(*shape: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def i32(x: int) -> np.ndarray:
    return np.asarray(x, np.int32)


# ------------------------------------------------------ TVM's three tests

def test_basic():
    """TVM test_basic: a closed function called inside main is lifted flat."""
    before = typed("""
def @main(%x1: Tensor[(10, 5), float32], %y1: Tensor[(1, 5), float32]) {
  %0 = fn (%x2: Tensor[(10, 5), float32], %y2: Tensor[(1, 5), float32]) { add(%x2, %y2) };
  %0(%x1, %y1)
}""")
    after = check(before, """
def @main(%x1: Tensor[(10, 5), float32], %y1: Tensor[(1, 5), float32]) {
  @main_lambda(%x1, %y1)
}
def @main_lambda(%x2: Tensor[(10, 5), float32], %y2: Tensor[(1, 5), float32]) {
  add(%x2, %y2)
}""", f32(10, 5), f32(1, 5, seed=1))
    assert len(after.functions) == 2


def test_closure():
    """TVM test_closure: a function returning a closure that captures its
    parameter: the outer is flat, the inner a Closure=1 global."""
    before = typed("""
def @main() {
  %0 = fn (%y: Tensor[(2), float32]) {
    fn (%x: Tensor[(2), float32]) { add(%x, %y) }
  };
  %1 = %0(ones(shape=[2], dtype="float32"));
  %1(zeros(shape=[2], dtype="float32"))
}""")
    after = check(before, """
def @main() {
  %0 = @main_lambda(ones(shape=[2], dtype="float32"));
  %0(zeros(shape=[2], dtype="float32"))
}
def @main_lambda(%y: Tensor[(2), float32]) -> fn (Tensor[(2), float32]) -> Tensor[(2), float32] {
  @main_lambda_lambda(%y)
}
def @main_lambda_lambda(%y: Tensor[(2), float32], Closure=1) -> fn (Tensor[(2), float32]) -> Tensor[(2), float32] {
  fn (%x: Tensor[(2), float32]) { add(%x, %y) }
}""")
    assert len(after.functions) == 3


def test_recursive():
    """TVM test_recursive: a recursive let-bound loop capturing %x calls
    the lifted global applied to the captured variable."""
    before = typed("""
def @main(%x: Tensor[(2), float32]) {
  let %while_loop = fn (%i: int32, %s: Tensor[(2), float32]) -> Tensor[(2), float32] {
    if (less(%i, 10)) { %while_loop(add(%i, 1), add(%s, %x)) } else { %s }
  };
  %while_loop(0, zeros(shape=[2], dtype="float32"))
}""")
    after = check(before, """
def @main(%x: Tensor[(2), float32]) {
  let %while_loop = @main_while_loop(%x);
  %while_loop(0, zeros(shape=[2], dtype="float32"))
}
def @main_while_loop(%x: Tensor[(2), float32], Closure=1)
    -> fn (int32, Tensor[(2), float32]) -> Tensor[(2), float32] {
  fn (%i: int32, %s: Tensor[(2), float32]) -> Tensor[(2), float32] {
    if (less(%i, 10)) {
      %0 = @main_while_loop(%x);
      %0(add(%i, 1), add(%s, %x))
    } else { %s }
  }
}""", f32(2))
    assert len(after.functions) == 2


# ------------------------------------------------------------ more shapes

CASES = [
    ("capture_free_let_is_flat", """
def @main(%a: float32) {
  let %h = fn (%x: float32) { multiply(%x, 2f) };
  %h(%a)
}""", """
def @main(%a: float32) {
  let %h = @main_h;
  %h(%a)
}
def @main_h(%x: float32) { multiply(%x, 2f) }""", (np.float32(1.5),)),

    ("anonymous_lambda_called_in_place", """
def @main(%a: float32) {
  (fn (%y: float32) { add(%y, %a) })(1f)
}""", """
def @main(%a: float32) {
  %0 = @main_lambda(%a);
  %0(1f)
}
def @main_lambda(%a: float32, Closure=1) -> fn (float32) -> float32 {
  fn (%y: float32) { add(%y, %a) }
}""", (np.float32(1.5),)),

    ("captures_in_order_of_first_occurrence", """
def @main(%a: float32, %b: int32) {
  let %c = add(%b, 1);
  let %g = fn (%x: float32) { (%c, multiply(%x, %a), %b) };
  %g(2f)
}""", """
def @main(%a: float32, %b: int32) {
  let %c = add(%b, 1);
  let %g = @main_g(%a, %b, %c);
  %g(2f)
}
def @main_g(%a: float32, %b: int32, %c: int32, Closure=1) -> fn (float32) -> (int32, float32, int32) {
  fn (%x: float32) { (%c, multiply(%x, %a), %b) }
}""", (np.float32(1.5), i32(4))),

    ("recursive_without_captures_refers_to_itself", """
def @main(%n: int32) {
  let %fact = fn (%k: int32) -> int32 {
    if (equal(%k, 0)) { 1 } else { multiply(%k, %fact(subtract(%k, 1))) }
  };
  %fact(%n)
}""", """
def @main(%n: int32) {
  let %fact = @main_fact;
  %fact(%n)
}
def @main_fact(%k: int32) -> int32 {
  if (equal(%k, 0)) { 1 } else { multiply(%k, @main_fact(subtract(%k, 1))) }
}""", (i32(5),)),

    ("recursive_variable_used_as_a_value_and_captured", """
def @main(%a: float32) {
  let %f = fn (%n: int32) -> float32 {
    let %k = fn (%m: int32) { %f(%m) };
    if (equal(%n, 0)) { %a } else { add(%k(subtract(%n, 1)), 1f) }
  };
  %f(3)
}""", """
def @main(%a: float32) {
  let %f = @main_f(%a);
  %f(3)
}
def @main_f(%a: float32, Closure=1) -> fn (int32) -> float32 {
  fn (%n: int32) -> float32 {
    let %k = @main_f_k(@main_f(%a));
    if (equal(%n, 0)) { %a } else { add(%k(subtract(%n, 1)), 1f) }
  }
}
def @main_f_k(%f: fn (int32) -> float32, Closure=1) -> fn (int32) -> float32 {
  fn (%m: int32) { %f(%m) }
}""", (np.float32(0.5),)),

    ("curried_function_nests_two_closures", """
def @main(%a: int32) {
  let %add3 = fn (%x: int32) { fn (%y: int32) { fn (%z: int32) { add(add(%x, %y), %z) } } };
  %add3(%a)(2)(3)
}""", """
def @main(%a: int32) {
  let %add3 = @main_add3;
  %add3(%a)(2)(3)
}
def @main_add3(%x: int32) -> fn (int32) -> fn (int32) -> int32 {
  @main_add3_lambda(%x)
}
def @main_add3_lambda(%x: int32, Closure=1) -> fn (int32) -> fn (int32) -> int32 {
  fn (%y: int32) { @main_add3_lambda_lambda(%x, %y) }
}
def @main_add3_lambda_lambda(%x: int32, %y: int32, Closure=1) -> fn (int32) -> int32 {
  fn (%z: int32) { add(add(%x, %y), %z) }
}""", (i32(1),)),

    ("global_returning_a_function", """
def @adder(%n: int32) -> fn (int32) -> int32 {
  fn (%x: int32) { add(%x, %n) }
}
def @main(%a: int32) { @adder(%a)(10) }""", """
def @adder(%n: int32) -> fn (int32) -> int32 { @adder_lambda(%n) }
def @adder_lambda(%n: int32, Closure=1) -> fn (int32) -> int32 {
  fn (%x: int32) { add(%x, %n) }
}
def @main(%a: int32) { @adder(%a)(10) }""", (i32(7),)),

    ("unannotated_parameters_get_their_types", """
def @main(%a: float32) {
  let %g = fn (%x) { multiply(%x, %a) };
  %g(2f)
}""", """
def @main(%a: float32) {
  let %g = @main_g(%a);
  %g(2f)
}
def @main_g(%a: float32, Closure=1) -> fn (float32) -> float32 {
  fn (%x: float32) { multiply(%x, %a) }
}""", (np.float32(1.5),)),

    ("closure_in_a_match_clause_captures_pattern_variables", """
type Opt { Has(int32), Empty }
def @main(%o: Opt) {
  match (%o) {
    Has(%v) => (fn (%x: int32) { add(%x, %v) })(1),
    Empty => 0,
  }
}""", """
type Opt { Has(int32), Empty }
def @main(%o: Opt) {
  match (%o) {
    Has(%v) => @main_lambda(%v)(1),
    Empty => 0,
  }
}
def @main_lambda(%v: int32, Closure=1) -> fn (int32) -> int32 {
  fn (%x: int32) { add(%x, %v) }
}""", None),

    ("polymorphic_enclosing_global_gives_type_parameters", """
def @pair[A](%x: A) -> (A, int32) {
  let %g = fn (%y: int32) { (%x, %y) };
  %g(1)
}
def @main(%a: float32) { @pair(%a) }""", """
def @pair[A](%x: A) -> (A, int32) {
  let %g = @pair_g(%x);
  %g(1)
}
def @pair_g[A](%x: A, Closure=1) -> fn (int32) -> (A, int32) {
  fn (%y: int32) { (%x, %y) }
}
def @main(%a: float32) { @pair(%a) }""", (np.float32(2.5),)),

    ("polymorphic_local_function_keeps_its_type_parameters", """
def @main(%a: float32) {
  let %h = fn [B](%z: B) { (%a, %z) };
  (%h(1), %h(2f))
}""", """
def @main(%a: float32) {
  let %h = @main_h(%a);
  (%h(1), %h(2f))
}
def @main_h(%a: float32, Closure=1) -> fn [B](B) -> (float32, B) {
  fn [B](%z: B) { (%a, %z) }
}""", (np.float32(2.5),)),

    ("polymorphic_capture_free_function_is_flat_with_all_type_parameters", """
def @wrap[A](%x: A) -> (A, int32) {
  let %k = fn [B](%z: B) -> (B, int32) { (%z, 3) };
  %k(%x)
}
def @main(%a: float32) { @wrap(%a) }""", """
def @wrap[A](%x: A) -> (A, int32) {
  let %k = @wrap_k;
  %k(%x)
}
def @wrap_k[B](%z: B) -> (B, int32) { (%z, 3) }
def @main(%a: float32) { @wrap(%a) }""", (np.float32(2.5),)),
]


@pytest.mark.parametrize("name, before, expected, args", CASES, ids=[c[0] for c in CASES])
def test_before_expected(name: str, before: str, expected: str, args: tuple | None) -> None:
    mod = typed(before)
    if args is None:   # main takes an Opt: one value of each constructor
        for value in (ConstructorValue(mod.constructor("Has"), (i32(4),)),
                      ConstructorValue(mod.constructor("Empty"), ())):
            check(mod, expected, value)
    else:
        check(mod, expected, *args)


def test_primitive_functions_are_not_lifted():
    """After FuseOps the kernels (Primitive=1) stay in place, inside the
    lifted closure as well; only the closure is lifted."""
    mod = typed("""
def @main(%a: Tensor[(3), float32]) {
  let %f = fn (%x: Tensor[(3), float32]) { add(exp(%x), %a) };
  add(%f(%a), 1f)
}""")
    fused = run_pass("FuseOps", run_pass("ToGraphNormalForm", mod))
    kernels = [n for f in fused.functions.values() for n in post_order(f)
               if isinstance(n, Function) and is_primitive(n)]
    assert len(kernels) == 2
    after = run_pass("LambdaLift", fused)
    assert sorted(g.name for g in after.functions) == ["main", "main_f"]
    assert is_closure(after["main_f"])
    lifted_kernels = [n for f in after.functions.values() for n in post_order(f)
                      if isinstance(n, Function) and is_primitive(n)]
    assert sorted(map(str, lifted_kernels)) == sorted(map(str, kernels))
    assert not local_functions(after)
    x = f32(3)
    assert same_value(aot.interpret(fused, x), aot.interpret(after, x))


def test_compiler_globals_are_skipped():
    mod = typed("""
def @ext(%x: float32, Compiler="foo") { (fn (%y: float32) { %y })(%x) }
def @main(%a: float32) { @ext(%a) }""")
    after = run_pass("LambdaLift", mod)
    assert after is mod


def test_idempotent_and_text_round_trip():
    mod = typed(CASES[4][1])       # recursion, capture and nesting
    once = run_pass("LambdaLift", mod)
    twice = run_pass("LambdaLift", once)
    assert twice is once
    text = print_module(once)
    assert "Closure=1" in text
    assert structural_equal(aot.infer_types(aot.parse(text)), once)


def test_names_do_not_clash_with_existing_globals():
    mod = typed("""
def @main_g(%x: int32) { %x }
def @main(%a: int32) {
  let %g = fn (%y: int32) { add(%y, %a) };
  (%g(1), @main_g(2))
}""")
    after = run_pass("LambdaLift", mod)
    assert sorted(g.name for g in after.functions) == ["main", "main_g", "main_g_1"]
    assert is_closure(after["main_g_1"]) and not is_closure(after["main_g"])
    assert same_value(aot.interpret(mod, i32(3)), aot.interpret(after, i32(3)))


def test_unchanged_module_is_returned_as_is():
    mod = typed("def @main(%a: int32) { add(%a, 1) }")
    assert run_pass("LambdaLift", mod) is mod


# ---------------------------------------------------- meaning: programs

PRELUDE_PROGRAMS = [
    # map and foldl with lambdas capturing a tensor
    ("""
def @main(%w: Tensor[(3), float32], %n: int32) {
  let %xs = Cons(%w, Cons(multiply(%w, 2f), Nil));
  let %ys = @map(fn (%v: Tensor[(3), float32]) { add(%v, %w) }, %xs);
  @foldl(fn (%acc: Tensor[(3), float32], %v: Tensor[(3), float32]) { maximum(%acc, %v) },
         %w, %ys)
}""", (f32(3), i32(2))),
    # a recursive closure building a list, then summed with foldr
    ("""
def @main(%w: Tensor[(3), float32], %n: int32) {
  let %build = fn (%k: int32) -> List[Tensor[(3), float32]] {
    if (less_equal(%k, 0)) { Nil } else { Cons(multiply(%w, cast(%k, dtype="float32")), %build(subtract(%k, 1))) }
  };
  @foldr(fn (%v: Tensor[(3), float32], %acc: Tensor[(3), float32]) { add(%v, %acc) },
         zeros(shape=[3], dtype="float32"), %build(%n))
}""", (f32(3), i32(4))),
    # closures stored in a list and applied by map; compose
    ("""
def @main(%w: Tensor[(3), float32], %n: int32) {
  let %fs = Cons(fn (%v: Tensor[(3), float32]) { add(%v, %w) },
                 Cons(fn (%v: Tensor[(3), float32]) { multiply(%v, %w) }, Nil));
  let %g = @compose(fn (%v: Tensor[(3), float32]) { negative(%v) }, @hd(%fs));
  @map(fn (%f: fn (Tensor[(3), float32]) -> Tensor[(3), float32]) { %g(%f(%w)) }, %fs)
}""", (f32(3), i32(1))),
    # a closure in a reference, overwritten, then called
    ("""
def @main(%w: Tensor[(3), float32], %n: int32) {
  let %r = ref(fn (%v: Tensor[(3), float32]) { %v });
  let %u = ref_write(%r, fn (%v: Tensor[(3), float32]) { add(%v, %w) });
  (ref_read(%r))(%w)
}""", (f32(3), i32(1))),
]


@pytest.mark.parametrize("text, args", PRELUDE_PROGRAMS, ids=range(len(PRELUDE_PROGRAMS)))
def test_prelude_programs_keep_their_results(text: str, args: tuple) -> None:
    mod = typed(text)
    after = run_pass("LambdaLift", mod)
    assert not local_functions(after)
    assert same_value(aot.interpret(mod, *args), aot.interpret(after, *args))


CORPUS_RECORDS = [r for r in records("AB") if not ill_typed(r) and not diverges(r)
                  and has_main(r)]


def test_corpus_programs_keep_their_results():
    """Every Relay corpus program (tiers A and B) with a @main: lifted, the
    same value on random arguments; the programs with local functions
    actually change."""
    changed = 0
    for rec in CORPUS_RECORDS:
        mod = aot.infer_types(load(rec))
        rng = np.random.default_rng(0)
        args = [random_value(p.checked_type, rng, mod) for p in mod["main"].params]
        after = run_pass("LambdaLift", mod)
        assert not local_functions(after), rec["id"]
        assert same_value(aot.interpret(mod, *args), aot.interpret(after, *args)), rec["id"]
        changed += len(after.functions) > len(mod.functions)
    has_local = sum(1 for rec in CORPUS_RECORDS if local_functions(aot.infer_types(load(rec))))
    assert has_local > 0 and changed == has_local


@settings(max_examples=15, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(programs(depth=3))
def test_random_programs_keep_their_results(prog: Program) -> None:
    mod = aot.infer_types(aot.parse(prog.text, source_name="random.relay"))
    after = run_pass("LambdaLift", mod)
    assert not local_functions(after)
    assert same_value(aot.interpret(mod, *prog.arguments(mod)),
                      aot.interpret(after, *prog.arguments(after)))


def test_lifted_program_runs_in_c():
    """The program backend compiles the two-level form (a global returning
    a closure) like any other closure."""
    mod = typed("""
def @main(%a: float32) {
  let %f = fn (%n: int32, %acc: float32) -> float32 {
    if (equal(%n, 0)) { %acc } else { %f(subtract(%n, 1), add(%acc, %a)) }
  };
  let %g = fn (%x: float32) { multiply(%x, %a) };
  (%f(3, 0f), %g(2f), (fn (%y: float32) { add(%y, %a) })(1f))
}""")
    after = run_pass("LambdaLift", mod)
    fn = aot.load(aot.compile(after, tempfile.mkdtemp(prefix="aot-lift-"), name="lifted"))
    a = np.asarray(1.5, np.float32)
    assert same_value(fn(a), aot.interpret(mod, a))


# ------------------------------------------------------ deep, registry

def test_ten_thousand_deep_let_chain():
    """A 10,000-deep let chain with a closure every 100 bindings, each
    capturing the binding before it: iterative walks, no RecursionError."""
    n = 10_000
    lines = []
    for i in range(1, n + 1):
        if i % 100 == 0:
            lines.append(f"  let %f{i} = fn (%y: int32) {{ add(%y, %v{i - 1}) }};\n"
                         f"  let %v{i} = %f{i}(1);")
        else:
            lines.append(f"  let %v{i} = add(%v{i - 1}, 1);")
    text = "def @main(%v0: int32) {\n" + "\n".join(lines) + f"\n  %v{n}\n}}"
    mod = typed(text)
    after = run_pass("LambdaLift", mod)
    assert len(after.functions) == 1 + n // 100
    assert not local_functions(after)
    assert int(aot.interpret(after, i32(3))) == int(aot.interpret(mod, i32(3))) == 3 + n


def test_thousand_deep_nested_closures():
    """``let %f0 = fn () { let %f1 = fn () { .. %a + 1 .. }; %f1() }; %f0()``
    nested 1,000 deep (built without the parser, whose nesting is bounded):
    the worklist lifts them without recursion, each capturing %a."""
    n = 1_000
    i32_t = B.scalar("int32")
    a = B.var("a", i32_t)
    body = B.call("add", a, B.const(1))
    for i in reversed(range(n)):
        f = B.var(f"f{i}")
        body = Let(f, Function((), body, i32_t), Call(f, ()))
    mod = IRModule.from_expr(Function((a,), body))
    after = run_pass("LambdaLift", aot.infer_types(mod))
    assert len(after.functions) == n + 1
    assert is_closure(after["main_f0"]) and is_closure(after["main_f0_f1"])
    assert max(len(g.name) for g in after.functions) <= MAX_NAME + len("_9999")
    assert not local_functions(after)
    assert int(aot.interpret(after, i32(2))) == 3


def test_registered_above_the_default_levels():
    p = get_pass("LambdaLift")
    assert p.opt_level == 4
    assert not PassContext(opt_level=3).enabled(p)
    assert PassContext(required=["LambdaLift"]).enabled(p)


def test_disabled_by_name_leaves_the_module_unchanged():
    mod = typed(CASES[1][1])
    with PassContext(disabled=["LambdaLift"]):
        assert Sequential(["LambdaLift"])(mod) is mod
    with PassContext(required=["LambdaLift"]):
        assert Sequential(["LambdaLift"])(mod) is not mod


def test_lambda_lift_function_types_an_untyped_module():
    mod = aot.parse(HEADER + CASES[1][1])
    out = lambda_lift(mod)
    assert out.is_typed and sorted(g.name for g in out.functions) == ["main", "main_lambda"]
