"""Defunctionalization: before/expected IR (TVM's three tests and more),
the result checked first-order, the interpreter giving the same values
before and after (hand-written programs, prelude combinators with lambdas,
the Relay corpus, random programs), the result compiled to C and compared
with the interpreter, diagnostics for unsupported inputs, a 10,000-deep
let chain, and the pass disabled by name.

Every input is made monomorphic by Specialize first, as the pass requires."""

from __future__ import annotations

import tempfile

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

import aot
from aot.ir.module import IRModule
from aot.ir.printer import print_module
from aot.ir.structural import assert_structural_equal, structural_equal
from aot.passes.defunctionalization import first_order_problems
from aot.passes.manager import PassContext, Sequential, get_pass, run_pass
from aot.values import ConstructorValue, make_list
from e2e.c_harness import assert_values_match
from e2e.random_programs import Program, programs
from test_corpus_semantics import (CORPUS, diverges, has_main, ill_typed, load, random_value,
                                   records)
from pass_helpers import same_value

HEADER = '#[version = "0.0.5"]\n'


def typed(text: str) -> IRModule:
    return aot.infer_types(aot.parse(HEADER + text, source_name="defunc.relay"))


def specialized(mod: IRModule) -> IRModule:
    return run_pass("Specialize", mod)


def defunc(mod: IRModule) -> IRModule:
    """Through the pass manager, so the result is verified well formed and
    well typed; and checked first-order."""
    out = run_pass("Defunctionalization", mod)
    assert first_order_problems(out) == []
    return out


def in_module(v: object, mod: IRModule) -> object:
    """An argument value rebuilt with ``mod``'s constructors (by name)."""
    if isinstance(v, tuple):
        return tuple(in_module(x, mod) for x in v)
    if isinstance(v, ConstructorValue):
        ctor = mod.constructor(v.constructor.name)
        assert ctor is not None
        return ConstructorValue(ctor, tuple(in_module(f, mod) for f in v.fields))
    return v


def assert_same_results(before: IRModule, after: IRModule, *args: object) -> None:
    want = aot.interpret(before, *in_module(args, before))
    got = aot.interpret(after, *in_module(args, after))
    assert same_value(want, got, closures=False), (want, got)   # entries are first-order


def i32(x: int) -> np.ndarray:
    return np.asarray(x, np.int32)


def f32(*shape: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def int_list(mod: IRModule, items: list[int], dtype=np.int32) -> ConstructorValue:
    return make_list([np.asarray(i, dtype) for i in items],
                     mod.constructor("Cons"), mod.constructor("Nil"))


def corpus_module(name: str) -> IRModule:
    path = CORPUS / "verbatim" / "test_pass_defunctionalization" / name
    return aot.infer_types(aot.parse(path.read_text(), str(path)))


# ------------------------------------------------------ TVM's three tests

def test_simple():
    """TVM test_simple: a polymorphic higher-order global and a polymorphic
    lambda; after Specialize the lambda is one constructor, the call goes
    through @apply."""
    before = specialized(corpus_module("L0145_test_simple_0.relay"))
    after = defunc(before)
    assert_structural_equal(after, typed("""
type Defunc_fn1_f32_5x5_f32_5x5 { Fn_main_lambda }
def @simple__f32_5x5__f32_5x5(%f: Defunc_fn1_f32_5x5_f32_5x5, %xs: Tensor[(5, 5), float32])
    -> Tensor[(5, 5), float32] {
  @apply_fn1_f32_5x5_f32_5x5(%f, %xs)
}
def @main(%l: Tensor[(5, 5), float32]) -> Tensor[(5, 5), float32] {
  @simple__f32_5x5__f32_5x5(Fn_main_lambda, %l)
}
def @main_lambda(%x: Tensor[(5, 5), float32]) -> Tensor[(5, 5), float32] { %x }
def @apply_fn1_f32_5x5_f32_5x5(%f: Defunc_fn1_f32_5x5_f32_5x5, %y0: Tensor[(5, 5), float32])
    -> Tensor[(5, 5), float32] {
  match (%f) { Fn_main_lambda => @main_lambda(%y0) }
}"""))
    assert_same_results(before, after, f32(5, 5))


def test_global_recursion():
    """TVM test_global_recursion: @map(@id, %l): the global @id as a value
    is a constructor without fields."""
    before = specialized(corpus_module("L0177_test_global_recursion_0.relay"))
    after = defunc(before)
    assert_structural_equal(after, typed("""
type List[A] { Cons(A, List[A]), Nil }
type Defunc_fn1_f32_f32 { Fn_id__f32 }
def @id__f32(%x: float32) -> float32 { %x }
def @map__f32__f32(%f: Defunc_fn1_f32_f32, %xs: List[float32]) -> List[float32] {
  match (%xs) {
    Cons(%x, %rest) => Cons(@apply_fn1_f32_f32(%f, %x), @map__f32__f32(%f, %rest)),
    Nil => Nil,
  }
}
def @main(%l: List[float32]) -> List[float32] { @map__f32__f32(Fn_id__f32, %l) }
def @apply_fn1_f32_f32(%f: Defunc_fn1_f32_f32, %y0: float32) -> float32 {
  match (%f) { Fn_id__f32 => @id__f32(%y0) }
}"""))
    rng = np.random.default_rng(0)
    items = [np.asarray(v, np.float32) for v in rng.random(10)]
    assert_same_results(before, after, make_list(items, before.constructor("Cons"),
                                                 before.constructor("Nil")))


def test_recursive_datatype():
    """TVM test_recursive_datatype (CPS): the continuation captures the
    previous one, so the encoding is a recursive data type."""
    before = specialized(corpus_module("L0215_test_recursive_datatype_0.relay"))
    after = defunc(before)
    assert_structural_equal(after, typed("""
type List[A] { Cons(A, List[A]), Nil }
type Defunc_fn1_i32_i32 { Fn_sum_lambda(Defunc_fn1_i32_i32, int32), Fn_id__i32 }
def @sum(%f: Defunc_fn1_i32_i32, %k: List[int32]) -> int32 {
  match (%k) {
    Cons(%x, %rest) => @sum(Fn_sum_lambda(%f, %x), %rest),
    Nil => @apply_fn1_i32_i32(%f, 0),
  }
}
def @sum_lambda(%f: Defunc_fn1_i32_i32, %x: int32, %n: int32) -> int32 {
  add(%x, @apply_fn1_i32_i32(%f, %n))
}
def @id__i32(%x: int32) -> int32 { %x }
def @main(%l: List[int32]) -> int32 { @sum(Fn_id__i32, %l) }
def @apply_fn1_i32_i32(%f: Defunc_fn1_i32_i32, %y0: int32) -> int32 {
  match (%f) {
    Fn_sum_lambda(%c0, %c1) => @sum_lambda(%c0, %c1, %y0),
    Fn_id__i32 => @id__i32(%y0),
  }
}"""))
    items = list(np.random.default_rng(0).integers(1, 100, 10))
    assert_same_results(before, after, int_list(before, items))


# ------------------------------------------------------------ more shapes

LIST = "type List[A] { Cons(A, List[A]), Nil }\n"

CASES = [
    ("let_bound_closure_passed_to_a_higher_order_global", LIST + """
def @map(%f: fn (int32) -> int32, %xs: List[int32]) -> List[int32] {
  match (%xs) { Cons(%x, %rest) => Cons(%f(%x), @map(%f, %rest)), Nil => Nil }
}
def @main(%a: int32, %xs: List[int32]) {
  let %g = fn (%x: int32) { add(%x, %a) };
  @map(%g, %xs)
}""", LIST + """
type Defunc_fn1_i32_i32 { Fn_main_g(int32) }
def @map(%f: Defunc_fn1_i32_i32, %xs: List[int32]) -> List[int32] {
  match (%xs) {
    Cons(%x, %rest) => Cons(@apply_fn1_i32_i32(%f, %x), @map(%f, %rest)),
    Nil => Nil,
  }
}
def @main(%a: int32, %xs: List[int32]) {
  let %g = Fn_main_g(%a);
  @map(%g, %xs)
}
def @main_g(%a: int32, %x: int32) -> int32 { add(%x, %a) }
def @apply_fn1_i32_i32(%f: Defunc_fn1_i32_i32, %y0: int32) -> int32 {
  match (%f) { Fn_main_g(%c0) => @main_g(%c0, %y0) }
}""", lambda m: (i32(5), int_list(m, [1, 2, 3]))),

    ("function_returned_by_a_global", """
def @adder(%n: int32) -> fn (int32) -> int32 { fn (%x: int32) { add(%x, %n) } }
def @main(%a: int32) { let %f = @adder(%a); %f(10) }""", """
type Defunc_fn1_i32_i32 { Fn_adder_lambda(int32) }
def @adder(%n: int32) -> Defunc_fn1_i32_i32 { Fn_adder_lambda(%n) }
def @adder_lambda(%n: int32, %x: int32) -> int32 { add(%x, %n) }
def @main(%a: int32) { let %f = @adder(%a); @apply_fn1_i32_i32(%f, 10) }
def @apply_fn1_i32_i32(%f: Defunc_fn1_i32_i32, %y0: int32) -> int32 {
  match (%f) { Fn_adder_lambda(%c0) => @adder_lambda(%c0, %y0) }
}""", lambda m: (i32(7),)),

    ("recursive_closure_calls_itself_directly", """
def @main(%a: float32) {
  let %f = fn (%n: int32, %acc: float32) -> float32 {
    if (equal(%n, 0)) { %acc } else { %f(subtract(%n, 1), add(%acc, %a)) }
  };
  %f(3, 0f)
}""", """
type Defunc_fn2_i32_f32_f32 { Fn_main_f(float32) }
def @main(%a: float32) { let %f = Fn_main_f(%a); @apply_fn2_i32_f32_f32(%f, 3, 0f) }
def @main_f(%a: float32, %n: int32, %acc: float32) -> float32 {
  if (equal(%n, 0)) { %acc } else { @main_f(%a, subtract(%n, 1), add(%acc, %a)) }
}
def @apply_fn2_i32_f32_f32(%f: Defunc_fn2_i32_f32_f32, %y0: int32, %y1: float32) -> float32 {
  match (%f) { Fn_main_f(%c0) => @main_f(%c0, %y0, %y1) }
}""", lambda m: (np.float32(1.5),)),

    ("closure_called_in_place_is_a_direct_call", """
def @main(%a: int32) { (fn (%x: int32) { multiply(%x, %a) })(3) }""", """
def @main(%a: int32) { @main_lambda(%a, 3) }
def @main_lambda(%a: int32, %x: int32) -> int32 { multiply(%x, %a) }""",
     lambda m: (i32(4),)),

    ("function_field_of_a_data_type_is_rewritten", """
type Thunk { Delay(fn () -> int32), Ready(int32) }
def @force(%t: Thunk) -> int32 { match (%t) { Delay(%f) => %f(), Ready(%v) => %v } }
def @main(%a: int32) { add(@force(Delay(fn () { multiply(%a, 2) })), @force(Ready(3))) }""", """
type Thunk { Delay(Defunc_fn0_i32), Ready(int32) }
type Defunc_fn0_i32 { Fn_main_lambda(int32) }
def @force(%t: Thunk) -> int32 {
  match (%t) { Delay(%f) => @apply_fn0_i32(%f), Ready(%v) => %v }
}
def @main(%a: int32) { add(@force(Delay(Fn_main_lambda(%a))), @force(Ready(3))) }
def @main_lambda(%a: int32) -> int32 { multiply(%a, 2) }
def @apply_fn0_i32(%f: Defunc_fn0_i32) -> int32 {
  match (%f) { Fn_main_lambda(%c0) => @main_lambda(%c0) }
}""", lambda m: (i32(4),)),

    ("operator_value_is_eta_expanded", LIST + """
def @foldl(%f: fn (int32, int32) -> int32, %acc: int32, %xs: List[int32]) -> int32 {
  match (%xs) { Cons(%x, %rest) => @foldl(%f, %f(%acc, %x), %rest), Nil => %acc }
}
def @main(%xs: List[int32]) { @foldl(add, 0, %xs) }""", LIST + """
type Defunc_fn2_i32_i32_i32 { Fn_main_lambda }
def @foldl(%f: Defunc_fn2_i32_i32_i32, %acc: int32, %xs: List[int32]) -> int32 {
  match (%xs) {
    Cons(%x, %rest) => @foldl(%f, @apply_fn2_i32_i32_i32(%f, %acc, %x), %rest),
    Nil => %acc,
  }
}
def @main(%xs: List[int32]) { @foldl(Fn_main_lambda, 0, %xs) }
def @main_lambda(%x0: int32, %x1: int32) -> int32 { add(%x0, %x1) }
def @apply_fn2_i32_i32_i32(%f: Defunc_fn2_i32_i32_i32, %y0: int32, %y1: int32) -> int32 {
  match (%f) { Fn_main_lambda => @main_lambda(%y0, %y1) }
}""", lambda m: (int_list(m, [4, 5, 6]),)),

    ("constructor_value_is_eta_expanded", LIST + """
type Box { MkBox(int32) }
def @mapb(%f: fn (int32) -> Box, %xs: List[int32]) -> List[Box] {
  match (%xs) { Cons(%x, %rest) => Cons(%f(%x), @mapb(%f, %rest)), Nil => Nil }
}
def @main(%xs: List[int32]) { @mapb(MkBox, %xs) }""", LIST + """
type Box { MkBox(int32) }
type Defunc_fn1_i32_Box { Fn_main_lambda }
def @mapb(%f: Defunc_fn1_i32_Box, %xs: List[int32]) -> List[Box] {
  match (%xs) {
    Cons(%x, %rest) => Cons(@apply_fn1_i32_Box(%f, %x), @mapb(%f, %rest)),
    Nil => Nil,
  }
}
def @main(%xs: List[int32]) { @mapb(Fn_main_lambda, %xs) }
def @main_lambda(%x0: int32) -> Box { MkBox(%x0) }
def @apply_fn1_i32_Box(%f: Defunc_fn1_i32_Box, %y0: int32) -> Box {
  match (%f) { Fn_main_lambda => @main_lambda(%y0) }
}""", lambda m: (int_list(m, [4, 5]),)),

    ("functions_in_tuples_branches_and_references", """
def @main(%a: int32) {
  let %r = ref(fn (%x: int32) -> int32 { multiply(%x, 2) });
  let %u = ref_write(%r, fn (%x: int32) -> int32 { add(%x, %a) });
  let %h = if (greater(%a, 2)) { fn (%x: int32) -> int32 { subtract(%x, 1) } } else { ref_read(%r) };
  let %t = (%h, 5);
  %t.0(%t.1)
}""", """
type Defunc_fn1_i32_i32 { Fn_main_lambda, Fn_main_lambda_1(int32), Fn_main_lambda_2 }
def @main(%a: int32) {
  let %r = ref(Fn_main_lambda);
  let %u = ref_write(%r, Fn_main_lambda_1(%a));
  let %h = if (greater(%a, 2)) { Fn_main_lambda_2 } else { ref_read(%r) };
  let %t = (%h, 5);
  @apply_fn1_i32_i32(%t.0, %t.1)
}
def @main_lambda(%x: int32) -> int32 { multiply(%x, 2) }
def @main_lambda_1(%a: int32, %x: int32) -> int32 { add(%x, %a) }
def @main_lambda_2(%x: int32) -> int32 { subtract(%x, 1) }
def @apply_fn1_i32_i32(%f: Defunc_fn1_i32_i32, %y0: int32) -> int32 {
  match (%f) {
    Fn_main_lambda => @main_lambda(%y0),
    Fn_main_lambda_1(%c0) => @main_lambda_1(%c0, %y0),
    Fn_main_lambda_2 => @main_lambda_2(%y0),
  }
}""", lambda m: (i32(1),)),
]


@pytest.mark.parametrize("name, before, expected, make_args", CASES, ids=[c[0] for c in CASES])
def test_before_expected(name: str, before: str, expected: str, make_args) -> None:
    mod = specialized(typed(before))
    after = defunc(mod)
    assert_structural_equal(after, typed(expected))
    assert_same_results(mod, after, *make_args(mod))


def test_recursive_closure_other_branch():
    """The same program as the branch case with %a > 2 takes the other
    function: both constructors are reached through @apply."""
    mod = specialized(typed(CASES[-1][1]))
    after = defunc(mod)
    for a in (0, 3, 7):
        assert_same_results(mod, after, i32(a))


def test_function_type_without_values_gets_an_empty_apply():
    """A function type no value is made of (only `None` of it) is an ADT
    without constructors; its @apply is a partial match with no clause
    (never reached); the text round-trips."""
    mod = specialized(typed("""
type Opt[A] { Has(A), Empty }
def @main(%a: int32) -> int32 {
  let %o: Opt[fn (int32) -> int32] = Empty;
  match (%o) { Has(%g) => %g(%a), Empty => %a }
}"""))
    after = defunc(mod)
    data = after.lookup_type("Defunc_fn1_i32_i32")
    assert data.constructors == ()
    apply = after["apply_fn1_i32_i32"]
    assert not apply.body.complete and apply.body.clauses == ()
    assert structural_equal(aot.infer_types(aot.parse(print_module(after))), after)
    assert_same_results(mod, after, i32(3))


def test_one_constructor_per_global_value_and_per_closure():
    mod = specialized(typed(LIST + """
def @inc(%x: int32) -> int32 { add(%x, 1) }
def @map(%f: fn (int32) -> int32, %xs: List[int32]) -> List[int32] {
  match (%xs) { Cons(%x, %rest) => Cons(%f(%x), @map(%f, %rest)), Nil => Nil }
}
def @main(%xs: List[int32], %a: int32) {
  let %g = fn (%x: int32) { multiply(%x, %a) };
  @map(@inc, @map(%g, @map(@inc, @map(%g, %xs))))
}"""))
    after = defunc(mod)
    names = [c.name for c in after.lookup_type("Defunc_fn1_i32_i32").constructors]
    assert names == ["Fn_main_g", "Fn_inc"]
    assert_same_results(mod, after, int_list(mod, [1, 2, 3]), i32(3))


def test_text_round_trip():
    after = defunc(specialized(typed(CASES[0][1])))
    assert structural_equal(aot.infer_types(aot.parse(print_module(after))), after)


def test_already_lifted_input():
    """LambdaLift before Defunctionalization gives the same result as
    Defunctionalization alone (it lifts first itself)."""
    mod = specialized(typed(CASES[2][1]))
    assert_structural_equal(defunc(run_pass("LambdaLift", mod)), defunc(mod))


def test_first_order_check_finds_higher_order_code():
    """The check the pass ends with is not vacuous: on the input it names
    the function parameter, the closure and the call of a value."""
    problems = first_order_problems(specialized(typed(CASES[0][1])))
    assert any("@map takes a function" in p for p in problems)
    assert any("local function" in p for p in problems)
    assert any("calls a function value" in p for p in problems)


# ------------------------------------------------------------- diagnostics

REFUSED = [
    ("polymorphic_global", LIST + """
def @map[A, B](%f: fn (A) -> B, %xs: List[A]) -> List[B] {
  match (%xs) { Cons(%x, %rest) => Cons(%f(%x), @map(%f, %rest)), Nil => Nil }
}
def @main(%xs: List[int32]) { @map(fn (%x: int32) { %x }, %xs) }""",
     "@map is polymorphic"),
    ("polymorphic_local_function", """
def @main(%a: int32) { (fn [A](%x: A) -> A { %x })(%a) }""",
     "polymorphic local function; run Specialize first"),
    ("polymorphic_let_bound_value", LIST + """
def @main(%a: int32) { let %c = Cons; %c(%a, Nil) }""",
     "%c in @main has type `fn [A](A, List[A]) -> List[A]`; run Specialize first"),
    ("entry_takes_a_function", """
def @main(%f: fn (int32) -> int32) { %f(1) }""",
     "takes a function value in %f"),
    ("entry_returns_a_function", """
def @main(%a: int32) { fn (%x: int32) { add(%x, %a) } }""",
     "returns a function value"),
    ("entry_takes_a_data_type_holding_functions", """
type Thunk { Delay(fn () -> int32) }
def @main(%t: Thunk) -> int32 { match (%t) { Delay(%f) => %f() } }""",
     "takes a function value in %t"),
    ("polymorphic_function_field", """
type Fn[A] { MkFn(fn (A) -> A) }
def @main(%a: int32) -> int32 { match (MkFn(fn (%x: int32) { %x })) { MkFn(%f) => %f(%a) } }""",
     "polymorphic function type"),
    ("closure_allocator_used_as_a_value", """
def @clo(%c: int32, Closure=1) -> fn (int32) -> int32 { fn (%x: int32) { add(%x, %c) } }
def @main(%a: int32) { let %k = @clo; %k(%a)(1) }""",
     "closure allocator @clo is used as a value"),
    ("primitive_function_used_as_a_value", """
def @main(%a: int32) { let %p = fn (%x: int32, Primitive=1) { add(%x, 1) }; %p(%a) }""",
     "primitive (fused) function is used as a value"),
]


@pytest.mark.parametrize("name, text, message", REFUSED, ids=[r[0] for r in REFUSED])
def test_unsupported_inputs_get_a_diagnostic(name: str, text: str, message: str) -> None:
    mod = typed(text)      # not specialised: the pass must say so itself
    with pytest.raises(aot.DiagnosticError, match="Defunctionalization") as info:
        run_pass("Defunctionalization", mod)
    assert message in str(info.value)


def test_unknown_entry_is_a_diagnostic():
    mod = typed("def @main(%a: int32) { %a }")
    with PassContext(options={"Defunctionalization": {"entry": "start"}}):
        with pytest.raises(aot.DiagnosticError, match="no function @start"):
            run_pass("Defunctionalization", mod)


def test_entry_option_names_the_first_order_function():
    """Another entry: its signature is what must be first-order."""
    mod = typed("""
def @start(%a: int32) { let %g = fn (%x: int32) { add(%x, %a) }; %g(1) }
def @main(%f: fn (int32) -> int32) { %f(1) }""")
    with PassContext(options={"Defunctionalization": {"entry": "start"}}):
        after = run_pass("Defunctionalization", mod)
    assert first_order_problems(after) == []
    assert int(aot.interpret(after, i32(4), entry="start")) == 5


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
    if (less_equal(%k, 0)) { Nil }
    else { Cons(multiply(%w, cast(%k, dtype="float32")), %build(subtract(%k, 1))) }
  };
  @foldr(fn (%v: Tensor[(3), float32], %acc: Tensor[(3), float32]) { add(%v, %acc) },
         zeros(shape=[3], dtype="float32"), %build(%n))
}""", (f32(3), i32(4))),
    # closures stored in a list, compose, applied by map
    ("""
def @main(%w: Tensor[(3), float32], %n: int32) {
  let %fs = Cons(fn (%v: Tensor[(3), float32]) { add(%v, %w) },
                 Cons(fn (%v: Tensor[(3), float32]) { multiply(%v, %w) }, Nil));
  let %g = @compose(fn (%v: Tensor[(3), float32]) { negative(%v) }, @hd(%fs));
  @map(fn (%f: fn (Tensor[(3), float32]) -> Tensor[(3), float32]) { %g(%f(%w)) }, %fs)
}""", (f32(3), i32(1))),
    # operators, constructors and globals as values; iterate returns a closure
    ("""
def @main(%w: Tensor[(3), float32], %n: int32) {
  let %xs = Cons(1, Cons(2, Cons(%n, Nil)));
  (@foldl(add, 0, %xs), @map(Some, %xs), @iterate(fn (%v: Tensor[(3), float32]) { add(%v, %w) }, %n)(%w))
}""", (f32(3), i32(3))),
]


@pytest.mark.parametrize("text, args", PRELUDE_PROGRAMS, ids=range(len(PRELUDE_PROGRAMS)))
def test_prelude_programs_keep_their_results(text: str, args: tuple) -> None:
    mod = specialized(typed(text))
    after = defunc(mod)
    assert_same_results(mod, after, *args)


CORPUS_RECORDS = [r for r in records("AB") if not ill_typed(r) and not diverges(r)
                  and has_main(r)]

#: Why the corpus programs that are refused are refused (Specialize refuses
#: a @main whose type parameters the caller or an operator relation would
#: choose; the pass a @main returning a function).
REFUSALS = ("give its parameters concrete types", "annotate its result type",
            "the entry must be first-order")


def corpus_runs() -> list[tuple[dict, IRModule, IRModule, list]]:
    """(record, specialised module, defunctionalised module, arguments) of
    every corpus program the pass accepts; the refused ones are checked to
    be refused for a reason in REFUSALS."""
    out = []
    for rec in CORPUS_RECORDS:
        mod = aot.infer_types(load(rec))
        rng = np.random.default_rng(0)
        args = [random_value(p.checked_type, rng, mod) for p in mod["main"].params]
        try:
            before = specialized(mod)
            after = defunc(before)
        except aot.DiagnosticError as e:
            assert any(r in str(e) for r in REFUSALS), (rec["id"], str(e))
            continue
        out.append((rec, before, after, args))
    return out


@pytest.fixture(scope="module")
def corpus() -> list[tuple[dict, IRModule, IRModule, list]]:
    return corpus_runs()


def changed(before: IRModule, after: IRModule) -> bool:
    return (len(after.functions) != len(before.functions)
            or len(after.type_definitions) != len(before.type_definitions))


def test_corpus_programs_keep_their_results(corpus) -> None:
    """Every Relay corpus program (tiers A and B) with a @main: either
    refused with a diagnostic (a polymorphic or higher-order @main) or
    first-order with the same value on random arguments."""
    assert len(corpus) > 0.9 * len(CORPUS_RECORDS)
    for _rec, before, after, args in corpus:
        assert_same_results(before, after, *args)
    assert sum(changed(b, a) for _, b, a, _ in corpus) > 0


@settings(max_examples=15, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(programs(depth=3))
def test_random_programs_keep_their_results(prog: Program) -> None:
    mod = specialized(aot.infer_types(aot.parse(prog.text, source_name="random.relay")))
    after = defunc(mod)
    assert same_value(aot.interpret(mod, *prog.arguments(mod)),
                      aot.interpret(after, *prog.arguments(after)), closures=False)


# ------------------------------------------------------------------- in C

def run_in_c(mod: IRModule, *args: object, name: str = "defunc") -> object:
    out_dir = tempfile.mkdtemp(prefix="aot-defunc-")
    fn = aot.load(aot.compile(mod, out_dir, name=name, pool_bytes=64 << 20))
    return fn(*in_module(args, mod))


C_PROGRAMS = [
    (CASES[0][1], CASES[0][3]),
    (CASES[4][1], CASES[4][3]),
    (CASES[-1][1], CASES[-1][3]),
    (PRELUDE_PROGRAMS[1][0], lambda m: PRELUDE_PROGRAMS[1][1]),
    (PRELUDE_PROGRAMS[3][0], lambda m: PRELUDE_PROGRAMS[3][1]),
]


@pytest.mark.parametrize("text, make_args", C_PROGRAMS, ids=range(len(C_PROGRAMS)))
def test_defunctionalized_programs_run_in_c(text: str, make_args) -> None:
    mod = specialized(typed(text))
    after = defunc(mod)
    args = make_args(mod)
    assert_values_match(run_in_c(after, *args), aot.interpret(mod, *in_module(args, mod)),
                        "C after Defunctionalization vs the interpreter before")


@pytest.mark.slow
def test_defunctionalized_corpus_programs_run_in_c(corpus) -> None:
    """Every corpus program the pass changes, compiled to C after it: the
    same value as the interpreter on the original (within the C tests'
    float tolerances)."""
    compiled = 0
    for rec, before, after, args in corpus:
        if not changed(before, after):
            continue
        got = run_in_c(after, *args)
        assert_values_match(got, aot.interpret(before, *in_module(args, before)), rec["id"])
        compiled += 1
    assert compiled > 0


# ------------------------------------------------------ deep, registry

def test_ten_thousand_deep_let_chain():
    """A 10,000-deep let chain with a closure every 100 bindings, each
    capturing the binding before it and passed to a higher-order global."""
    n = 10_000
    lines = []
    for i in range(1, n + 1):
        if i % 100 == 0:
            lines.append(f"  let %f{i} = fn (%y: int32) {{ add(%y, %v{i - 1}) }};\n"
                         f"  let %v{i} = @twice(%f{i}, 0);")
        else:
            lines.append(f"  let %v{i} = add(%v{i - 1}, 1);")
    text = ("def @twice(%f: fn (int32) -> int32, %x: int32) -> int32 { %f(%f(%x)) }\n"
            "def @main(%v0: int32) {\n" + "\n".join(lines) + f"\n  %v{n}\n}}")
    mod = specialized(typed(text))
    after = defunc(mod)
    ctors = after.lookup_type("Defunc_fn1_i32_i32").constructors
    assert len(ctors) == n // 100
    want = aot.interpret(mod, i32(1))
    assert int(aot.interpret(after, i32(1))) == int(want)


def test_registered_above_the_default_levels():
    p = get_pass("Defunctionalization")
    assert p.opt_level == 4
    assert not PassContext(opt_level=3).enabled(p)


def test_disabled_by_name_leaves_the_module_unchanged():
    mod = specialized(typed(CASES[1][1]))
    with PassContext(disabled=["Defunctionalization"]):
        assert Sequential(["Defunctionalization"])(mod) is mod
    with PassContext(required=["Defunctionalization"]):
        assert first_order_problems(Sequential(["Defunctionalization"])(mod)) == []
