"""Specialize (monomorphisation): every function of the result is
monomorphic, polymorphic globals and locals become one copy per
instantiation, names are stable, the interpreter's results do not change,
and programs that cannot be specialised get a diagnostic."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import aot
from aot.diagnostics import DiagnosticError
from aot.ir.adt import Constructor
from aot.ir.dtype import DType
from aot.ir.expr import Call, Function, GlobalVar, Let, Op
from aot.ir.printer import print_module
from aot.ir.types import (ANY, UNIT, FuncType, GlobalTypeVar, RefType, TensorType, TupleType,
                          Type, TypeCall, TypeVar, free_type_vars, type_children)
from aot.ir.visitor import post_order
from aot.passes import specialize as specialize_module
from aot.passes.specialize import MAX_TYPE_DEPTH, mangle_args, mangle_type, specialize
from aot.ir.type_infer import infer_types
from e2e.random_programs import Program, programs
from test_corpus_semantics import (diverges, has_main, ill_typed, load, random_value,
                                   records)
from pass_helpers import same_value

I32 = TensorType((), DType.INT32)
F32 = TensorType((), DType.FLOAT32)
C_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


def typed(text: str) -> aot.IRModule:
    return infer_types(aot.parse(text, source_name="spec.relay"))


def _type_nodes(t: Type) -> list[Type]:
    out, stack = [], [t]
    while stack:
        node = stack.pop()
        out.append(node)
        stack.extend(type_children(node))
    return out


def assert_monomorphic(mod: aot.IRModule) -> None:
    """No type parameters, no type variables in any node's type, no type
    arguments on calls but constructor calls (whose type arguments match
    their result type), every referenced global defined."""
    assert mod.is_typed
    for gv, func in mod.functions.items():
        assert not func.type_params, gv.name
        for node in post_order(func):
            if isinstance(node, GlobalVar):
                assert node in mod.functions, node.name
                continue
            if node.checked_type is None:
                assert isinstance(node, (Constructor, Op))
                continue
            for t in _type_nodes(node.checked_type):
                assert not isinstance(t, TypeVar), (gv.name, node, node.checked_type)
                assert not (isinstance(t, FuncType) and t.type_params), (gv.name, node)
            if isinstance(node, Call):
                if isinstance(node.op, Constructor):
                    assert isinstance(node.checked_type, TypeCall)
                    assert node.type_args == node.checked_type.args
                else:
                    assert node.type_args == (), (gv.name, node)


def check_same_results(text: str, *args: object, entry: str = "main") -> aot.IRModule:
    mod = typed(text)
    before = aot.interpret(mod, *args, entry=entry)
    out = specialize(mod, entry)
    assert_monomorphic(out)
    after = aot.interpret(out, *args, entry=entry)
    assert same_value(before, after), (before, after)
    return out


def names(mod: aot.IRModule) -> set[str]:
    return {gv.name for gv in mod.functions}


# ------------------------------------------------------------ the prelude

PRELUDE_PROGRAM = """
def @add_i(%a: int32, %b: int32) -> int32 { %a + %b }
def @main(%v: Tensor[(3), float32]) {
  let %xs = Cons(1, Cons(2, Cons(3, Nil)));
  let %vs = Cons(%v, Cons(%v * 2f, Nil));
  let %fs = @map(fn (%x: int32) { cast(%x, dtype="float32") * 0.5f }, %xs);
  let %ws = @map(fn (%w: Tensor[(3), float32]) { %w + 1f }, %vs);
  let %bs = @map(fn (%x: int32) { %x > 1 }, %xs);
  let %z = @zip(%xs, %fs);
  let %zz = @zip(%z, %ws);
  let %s = @foldl(fn (%a: int32, %b: (int32, float32)) { %a + %b.0 }, 0, %z);
  let %t = @foldl(fn (%a: float32, %b: float32) { %a + %b }, 0f, %fs);
  let %r = @foldr(@add_i, 0, %xs);
  let %q = @foldr(fn (%w: Tensor[(3), float32], %acc: Tensor[(3), float32]) { %w + %acc },
                  %v, %ws);
  let %ev = @filter(fn (%x: int32) { %x > 1 }, %xs);
  let %fv = @filter(fn (%x: float32) { %x < 1f }, %fs);
  let %c = @compose(fn (%x: float32) { %x * 2f }, fn (%x: int32) { cast(%x, dtype="float32") });
  let %c2 = @compose(fn (%x: int32) { %x + 1 }, fn (%x: int32) { %x * 3 });
  let %it = @iterate(fn (%x: int32) { %x + 1 }, 3);
  let %itv = @iterate(fn (%w: Tensor[(3), float32]) { %w * 2f }, 2);
  (%s, %t, %r, %q, @length(%ev), @length(%fv), @length(%zz), @length(%bs),
   %c(4), %c2(5), %it(10), %itv(%v), @hd(@rev(%ws)))
}
"""


def test_prelude_functions_at_several_instantiations() -> None:
    v = np.array([1.0, -2.0, 0.5], dtype=np.float32)
    out = check_same_results(PRELUDE_PROGRAM, v)
    got = names(out)
    for name in ["map__i32__f32", "map__f32_3__f32_3", "map__i32__bool",
                 "zip__i32__f32", "zip__tup2_i32_f32__f32_3",
                 "foldl__i32__tup2_i32_f32", "foldl__f32__f32", "foldr__i32__i32",
                 "foldr__f32_3__f32_3", "filter__i32", "filter__f32",
                 "compose__i32__f32__f32", "compose__i32__i32__i32",
                 "iterate__i32", "iterate__f32_3", "id__i32", "id__f32_3",
                 "length__i32", "length__f32", "length__bool",
                 "length__tup2_tup2_i32_f32_f32_3", "rev__f32_3", "hd__f32_3",
                 "flip__f32_3__List_f32_3__List_f32_3", "add_i", "main"]:
        assert name in got, (name, sorted(got))
    # only what main reaches: no generic originals, no unused prelude globals
    assert not got & {"map", "foldl", "id", "nat_add", "tmap", "unfoldr", "sum"}
    # every type definition is kept
    assert {t.name for t in out.type_definitions} == {"List", "Option", "Tree", "nat"}


def test_prelude_recursive_calls_go_to_the_same_copy() -> None:
    out = specialize(typed(PRELUDE_PROGRAM))
    body_refs = {n.name for n in post_order(out["map__i32__f32"]) if isinstance(n, GlobalVar)}
    assert body_refs == {"map__i32__f32"}
    refs = {n.name for n in post_order(out["iterate__i32"]) if isinstance(n, GlobalVar)}
    assert refs == {"iterate__i32", "id__i32", "compose__i32__i32__i32"}


def test_size_passes_itself_as_a_value() -> None:
    # @size calls @map(@size, ...): a global used as a value inside its own body
    out = check_same_results("""
def @main() {
  let %leaf = Rose(1f, Nil);
  let %t = Rose(0f, Cons(%leaf, Cons(Rose(2f, Cons(%leaf, Nil)), Nil)));
  (@size(%t), @size(Rose(1, Nil)))
}""")
    assert {"size__f32", "size__i32", "map__Tree_f32__i32", "map__Tree_i32__i32",
            "sum"} <= names(out)


# ----------------------------------------------------------- user programs

@pytest.mark.parametrize("name, text, args, expected_names", [
    ("mutual recursion, annotated", """
def @even[A](%xs: List[A]) -> bool {
  match (%xs) { Cons(_, %t) => @odd(%t), Nil => True }
}
def @odd[B](%xs: List[B]) -> bool {
  match (%xs) { Cons(_, %t) => @even(%t), Nil => False }
}
def @main() { (@even(Cons(1, Cons(2, Nil))), @odd(Cons(1f, Nil)), @even(Cons((1, 2f), Nil))) }
""", (), {"even__i32", "odd__i32", "even__f32", "odd__f32", "even__tup2_i32_f32",
          "odd__tup2_i32_f32"}),
    ("mutual recursion, inferred (calls in the component carry no type_args)", """
def @ev(%xs, %n: int32) -> int32 {
  match (%xs) { Cons(_, %t) => @od(%t, %n + 1), Nil => %n }
}
def @od(%xs, %n: int32) -> int32 {
  match (%xs) { Cons(_, %t) => @ev(%t, %n * 2), Nil => 0 - %n }
}
def @main() { (@ev(Cons(1, Cons(2, Cons(3, Nil))), 0), @od(Cons(True, Nil), 5)) }
""", (), {"ev__i32", "od__i32", "ev__bool", "od__bool"}),
    ("explicit and inferred type parameters together", """
def @f[A](%x: A, %y, %n: int32) -> int32 {
  if (%n == 0) { 0 } else { 1 + @f(%x, %y, %n - 1) }
}
def @main() { (@f(1, 2f, 3), @f(1f, 2f, 2)) }
""", (), {"f__i32__f32", "f__f32__f32"}),
    ("global used as a value: argument, let, if, result", """
def @add1[A](%a: A, %b: int32) -> int32 { %b + 1 }
def @apply[A, B](%f: fn (A) -> B, %x: A) -> B { %f(%x) }
def @pick(%c: bool) -> fn (int32) -> int32 { if (%c) { @id } else { fn (%x: int32) { %x + 7 } } }
def @mk() { @id }
def @main() {
  let %g = @id;
  let %h: fn (float32) -> float32 = @id;
  (%g(1), %g(2f), %h(3f), @foldr(@add1, 0, Cons(1f, Cons(2f, Nil))),
   @apply(@id, (1, 2f)), @pick(True)(1), @pick(False)(1), @mk()(4), @mk()(5f))
}
""", (), {"id__i32", "id__f32", "id__tup2_i32_f32", "add1__f32", "apply__tup2_i32_f32__tup2_i32_f32",
          "foldr__f32__i32", "pick",
          "mk__i32", "mk__f32"}),
    ("nested polymorphic calls with the caller's type variables", """
def @twice[A](%f: fn (A) -> A, %x: A) -> A { @id(%f(@id(%f(%x)))) }
def @pairs[A, B](%xs: List[A], %ys: List[B]) -> (int32, List[(A, B)]) {
  let %z = @zip(%xs, %ys);
  (@length(%z) + @length(%xs), @map(fn (%p: (A, B)) { @swap(@swap(%p)) }, %z))
}
def @swap[C, D](%p: (C, D)) -> (D, C) { (%p.1, %p.0) }
def @main(%v: Tensor[(2, 2), float32]) {
  (@twice(fn (%y: int32) { %y * 2 }, 3),
   @twice(fn (%w: Tensor[(2, 2), float32]) { %w + %w }, %v),
   @pairs(Cons(1, Nil), Cons(%v, Nil)).0,
   @hd(@pairs(Cons(True, Nil), Cons(2f, Nil)).1))
}
""", (np.ones((2, 2), np.float32),),
        {"twice__i32", "twice__f32_2x2", "id__i32", "id__f32_2x2", "pairs__i32__f32_2x2",
         "pairs__bool__f32", "swap__i32__f32_2x2", "swap__f32_2x2__i32",
         "swap__bool__f32", "swap__f32__bool", "zip__bool__f32", "map__tup2_bool_f32__tup2_bool_f32"}),
    ("an unused type parameter defaults to ()", """
def @u[A](%x: int32) -> int32 { %x + 1 }
def @main() { (@u(1), @u) }
""", (), {"u__unit"}),
    ("dynamic dimensions in type arguments", """
def @main(%x: Tensor[(?, 2), float32]) { (@id(%x), @length(Cons(%x, Nil))) }
""", (np.zeros((3, 2), np.float32),), {"id__f32_anyx2", "length__f32_anyx2"}),
    ("references", """
def @setter[A](%r: Ref[A], %v: A) -> A { let %old = ref_read(%r); ref_write(%r, %v); %old }
def @main() {
  let %r = ref(1);
  let %s = ref(Cons(1f, Nil));
  (@setter(%r, 5), ref_read(%r), @length(@setter(%s, Nil)), @length(ref_read(%s)))
}
""", (), {"setter__i32", "setter__List_f32"}),
])
def test_user_programs(name: str, text: str, args: tuple, expected_names: set[str]) -> None:
    out = check_same_results(text, *args)
    assert expected_names <= names(out), sorted(names(out))


def test_monomorphic_program_is_unchanged() -> None:
    text = """
def @fact(%n: int32) -> int32 { if (%n <= 1) { 1 } else { %n * @fact(%n - 1) } }
def @unused(%n: int32) -> int32 { %n }
def @main(%n: int32) -> int32 { @fact(%n) + @sum(Cons(%n, Nil)) }
"""
    mod = typed(text)
    out = specialize(mod)
    assert names(out) == {"fact", "main", "sum", "foldl__i32__i32"}
    # the monomorphic globals keep their GlobalVar and their text
    assert out.get_global_var("fact") is mod.get_global_var("fact")
    assert str(out["fact"]) == str(mod["fact"])
    assert str(out["main"]) == str(mod["main"])


def test_other_entry() -> None:
    mod = typed("""
def @f(%x: float32) -> float32 { @id(%x) }
def @main() { @id(1) }
""")
    out = specialize(mod, entry="f")
    assert names(out) == {"f", "id__f32"}
    assert aot.interpret(out, np.float32(2), entry="f") == np.float32(2)


def test_name_clash_with_an_existing_global() -> None:
    out = check_same_results("""
def @id__i32(%x: int32) -> int32 { %x + 100 }
def @main() { (@id(1), @id__i32(1)) }
""")
    assert names(out) == {"main", "id__i32", "id__i32_2"}
    assert aot.interpret(out) == (1, 101)


# ------------------------------------------------------- local polymorphism

@pytest.mark.parametrize("name, text, locals_", [
    ("let-bound polymorphic literal", """
def @main() {
  let %f = fn [A](%y: A) -> (A, A) { (%y, %y) };
  (%f(1), %f(2f), %f(3))
}""", {"f__i32", "f__f32"}),
    ("recursive let (annotated)", """
def @main() {
  let %len: fn [A](List[A]) -> int32 = fn [A](%xs: List[A]) -> int32 {
    match (%xs) { Cons(_, %t) => 1 + %len(%t), Nil => 0 }
  };
  (%len(Cons(1, Nil)), %len(Cons(1f, Cons(2f, Nil))))
}""", {"len__i32", "len__f32"}),
    ("alias of a global and of a local", """
def @main() {
  let %g = @id;
  let %f = fn [A](%y: A) -> A { %g(%y) };
  let %h = %f;
  (%h(1), %h(2f), %f(3), %g(True))
}""", {"g__i32", "g__f32", "g__bool", "f__i32", "f__f32", "h__i32", "h__f32"}),
    ("constructor bound by let", """
def @main() { let %c = Cons; (@length(%c(1, Nil)), @length(%c(1f, %c(2f, Nil)))) }
""", {"c__i32", "c__f32"}),
    ("literal called in place and capturing the global's type variable", """
def @p[A](%x: A) -> (A, int32, float32) {
  let %h = fn [B](%y: B) -> (A, B) { (%x, %y) };
  ((fn [C](%z: C) -> C { %z })(%x), %h(1).1, %h(2f).1)
}
def @main() { (@p(1f), @p(True)) }
""", {"h__i32", "h__f32"}),
    ("unused polymorphic let is dropped", """
def @main() { let %f = fn [A](%y: A) -> A { %y }; 5 }
""", set()),
])
def test_local_polymorphism(name: str, text: str, locals_: set[str]) -> None:
    out = check_same_results(text)
    bound = set()
    for func in out.functions.values():
        for node in post_order(func):
            if isinstance(node, Let):
                bound.add(node.var.name_hint)
            if isinstance(node, Function):
                assert not node.type_params
    assert {n for n in bound if "__" in n} == locals_


# ------------------------------------------------------------- diagnostics

@pytest.mark.parametrize("name, text, message, line", [
    ("polymorphic recursion (type doubles)", """
def @f[A](%x: A, %n: int32) -> int32 {
  if (%n == 0) { 0 } else { @f((%x, %x), %n - 1) }
}
def @main() { @f(1, 3) }
""", "polymorphic recursion: @f gets type arguments of more than", 2),
    ("polymorphic recursion (type grows by one)", """
def @g[A](%x: A, %n: int32) -> int32 {
  if (%n == 0) { 0 } else { @g(Cons(%x, Nil), %n - 1) }
}
def @main() { @g(1, 3) }
""", f"polymorphic recursion: @g gets type arguments nested more than {MAX_TYPE_DEPTH} deep", 2),
    ("mutual polymorphic recursion", """
def @main() { @a(1, 2) }
def @a[A](%x: A, %n: int32) -> int32 { if (%n == 0) { 0 } else { @b(Some(%x), %n - 1) } }
def @b[B](%y: B, %n: int32) -> int32 { @a((%y, %y), %n) }
""", "polymorphic recursion", None),
    ("local polymorphic recursion", """
def @main() {
  let %g: fn [A](A, int32) -> int32 = fn [A](%x: A, %n: int32) -> int32 {
    if (%n == 0) { 0 } else { %g((%x, %x), %n - 1) }
  };
  %g(1, 3)
}""", "polymorphic recursion: %g", 3),
    ("polymorphic main", """
def @main(%x) { %x }
""", "@main is polymorphic (`fn [A](A) -> A`): the caller would choose its type parameter A; "
       "give its parameters concrete types", 2),
    ("higher-rank parameter", """
def @g(%f: fn [A](A) -> A) { (%f(1), %f(2f)) }
def @main() { @g(@id) }
""", "%f has type `fn [A](A) -> A`, which holds a polymorphic function", 2),
    ("polymorphic function inside a tuple", """
def @main() { let %t = (@id, 1); (%t.0(1), %t.0(2f)) }
""", "%t has type `(fn [A](A) -> A, int32)`", 2),
    ("polymorphic let of a computed value", """
def @k[A](%x: A) -> A { %x }
def @main(%c: bool) { let %f = if (%c) { @id } else { @k }; (%f(1), %f(2f)) }
""", "%f is bound to a polymorphic value", 3),
    ("global returning a polymorphic function inside a tuple", """
def @mk() { (@id, 1) }
def @main() { @mk().0(1) }
""", "@mk returns a polymorphic function", 2),
])
def test_diagnostics(name: str, text: str, message: str, line: int | None) -> None:
    mod = typed(text)
    with pytest.raises(DiagnosticError) as info:
        specialize(mod)
    err = info.value
    assert message in err.message, err.message
    assert err.span is not None and err.span.source == "spec.relay"
    if line is not None:
        assert err.span.line == line
    assert "error:" in str(err)


def test_mutual_polymorphic_recursion_blames_a_member() -> None:
    mod = typed("""
def @main() { @a(1, 2) }
def @a[A](%x: A, %n: int32) -> int32 { if (%n == 0) { 0 } else { @b(Some(%x), %n - 1) } }
def @b[B](%y: B, %n: int32) -> int32 { @a((%y, %y), %n) }
""")
    with pytest.raises(DiagnosticError) as info:
        specialize(mod)
    assert re.search(r"polymorphic recursion: @[ab] ", info.value.message)
    assert info.value.span.line in (3, 4)


def test_copy_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(specialize_module, "MAX_COPIES", 3)
    mod = typed("def @main() { (@id(1), @id(2f), @id(True), @id((1, 2))) }")
    with pytest.raises(DiagnosticError, match="more than 3 specialised copies") as info:
        specialize(mod)
    assert "polymorphic recursion: @id" in info.value.message


def test_missing_entry() -> None:
    with pytest.raises(DiagnosticError, match="no function @start"):
        specialize(typed("def @main() { 1 }"), entry="start")


def test_untyped_input_is_typed_first() -> None:
    mod = aot.parse("def @main() { (@id(1), @id(2f)) }")
    assert not mod.is_typed
    out = specialize(mod)
    assert names(out) == {"main", "id__i32", "id__f32"}
    assert_monomorphic(out)


# ------------------------------------------------------------------ names

@pytest.mark.parametrize("t, text", [
    (I32, "i32"),
    (F32, "f32"),
    (TensorType((), DType.BOOL), "bool"),
    (TensorType((3,), DType.FLOAT32), "f32_3"),
    (TensorType((2, ANY, 4), DType.UINT8), "u8_2xanyx4"),
    (TensorType((1,), DType.FLOAT16), "f16_1"),
    (UNIT, "unit"),
    (TupleType((I32, TupleType((F32,)))), "tup2_i32_tup1_f32"),
    (TypeCall(GlobalTypeVar("List"), (F32,)), "List_f32"),
    (TypeCall(GlobalTypeVar("nat"), ()), "nat"),
    (GlobalTypeVar("nat"), "nat"),
    (FuncType((I32, F32), TupleType(())), "fn2_i32_f32_unit"),
    (RefType(TensorType((2,), DType.INT64)), "ref_i64_2"),
])
def test_mangle_type(t: Type, text: str) -> None:
    assert mangle_type(t) == text
    assert C_IDENT.match(text)


def test_mangle_args_joins_and_shortens() -> None:
    assert mangle_args((TensorType((3,), DType.FLOAT32), I32)) == "f32_3__i32"
    big = TupleType(tuple(TensorType((i + 1,), DType.FLOAT32) for i in range(20)))
    bigger = TupleType(tuple(TensorType((i + 1,), DType.FLOAT32) for i in range(21)))
    a, b = mangle_args((big,)), mangle_args((bigger,))
    assert len(a) <= 48 and len(b) <= 48 and C_IDENT.match(a) and C_IDENT.match(b)
    assert a != b and a.startswith("tup20_f32_1_f32_2") and re.search(r"_h[0-9a-f]{10}\Z", a)
    assert mangle_args((big,)) == a


def test_long_instantiation_gets_a_hashed_name() -> None:
    fields = ", ".join(f"Tensor[({i + 1}), float32]" for i in range(12))
    out = check_same_results(f"""
def @main() {{
  let %t: ({fields}) = ({", ".join(f"zeros(shape=[{i + 1}], dtype='float32')" for i in range(12))});
  @id(%t).3
}}""".replace("'", '"'))
    (copy,) = names(out) - {"main"}
    assert copy.startswith("id__tup12_f32_1_f32_2") and C_IDENT.match(copy)
    assert len(copy) <= len("id__") + 48


# ------------------------------------------------------------ determinism

def test_same_text_from_two_runs() -> None:
    first = print_module(specialize(typed(PRELUDE_PROGRAM)))
    second = print_module(specialize(typed(PRELUDE_PROGRAM)))
    assert first == second


def test_same_text_in_another_process() -> None:
    """Names and order do not depend on Python's string hashing."""
    script = ("import sys, aot\n"
              "from aot.passes.specialize import specialize\n"
              "from aot.ir.printer import print_module\n"
              "mod = aot.infer_types(aot.parse(sys.stdin.read(), source_name='spec.relay'))\n"
              "sys.stdout.write(print_module(specialize(mod)))\n")
    root = Path(__file__).resolve().parents[2]
    env = dict(os.environ, PYTHONHASHSEED="12345", PYTHONPATH=str(root))
    other = subprocess.run([sys.executable, "-c", script], input=PRELUDE_PROGRAM,
                           capture_output=True, text=True, env=env, cwd=root, check=True)
    assert other.stdout == print_module(specialize(typed(PRELUDE_PROGRAM)))


def test_printed_result_parses_and_checks_to_the_same_text() -> None:
    text = print_module(specialize(typed(PRELUDE_PROGRAM)))
    back = infer_types(aot.parse(text, source_name="printed.relay", prelude=False))
    assert_monomorphic(back)
    assert print_module(back) == text


# --------------------------------------------------------------- scale

def test_deep_let_chain_in_a_polymorphic_function() -> None:
    n = 2500  # deeper than Python's recursion limit
    lets = "".join(f"  let %v{i + 1} = @id(%v{i});\n" for i in range(n))
    text = f"def @deep[A](%v0: A) -> A {{\n{lets}  %v{n}\n}}\n" \
           "def @main() { (@deep(1), @deep(2f)) }\n"
    out = check_same_results(text)
    assert names(out) == {"main", "deep__i32", "deep__f32", "id__i32", "id__f32"}


# ------------------------------------------------- random programs (hypothesis)

@settings(max_examples=15, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(programs(depth=3))
def test_random_programs_keep_their_results(prog: Program) -> None:
    mod = infer_types(aot.parse(prog.text, source_name="random.relay"))
    before = aot.interpret(mod, *prog.arguments(mod))
    out = specialize(mod)
    assert_monomorphic(out)
    assert same_value(before, aot.interpret(out, *prog.arguments(out)))


#: (type text, mangled, a value of it)
VALUE_TYPES = [
    ("int32", "i32", "1"),
    ("float32", "f32", "2f"),
    ("Tensor[(2), float32]", "f32_2", 'ones(shape=[2], dtype="float32")'),
    ("(int32, float32)", "tup2_i32_f32", "(3, 4f)"),
    ("List[int32]", "List_i32", "Cons(5, Nil)"),
    ("Option[bool]", "Option_bool", "Some(True)"),
]


@settings(max_examples=25, deadline=None)
@given(st.lists(st.sampled_from(range(len(VALUE_TYPES))), min_size=1, max_size=6))
def test_one_copy_per_distinct_instantiation(picks: list[int]) -> None:
    """@id, @length . @map and @zip at random instantiations: one copy each
    per distinct type argument list, and the same results."""
    parts = []
    for k, i in enumerate(picks):
        j = picks[(k + 1) % len(picks)]
        vi, vj = VALUE_TYPES[i][2], VALUE_TYPES[j][2]
        parts.append(f"@id({vi})")
        parts.append(f"@length(@map(fn (%x: {VALUE_TYPES[i][0]}) {{ (%x, %x) }}, "
                     f"Cons({vi}, Nil)))")
        parts.append(f"@hd(@zip(Cons({vi}, Nil), Cons({vj}, Nil)))")
    out = check_same_results("def @main() { (" + ", ".join(parts) + ") }")
    got = names(out)
    mangled = [VALUE_TYPES[i][1] for i in picks]
    assert {n for n in got if n.startswith("id__")} == {f"id__{m}" for m in mangled}
    assert {n for n in got if n.startswith("map__")} == \
        {f"map__{m}__tup2_{m}_{m}" for m in mangled}
    pairs = {(mangled[k], mangled[(k + 1) % len(mangled)]) for k in range(len(mangled))}
    assert {n for n in got if n.startswith("zip__")} == {f"zip__{a}__{b}" for a, b in pairs}


# ---------------------------------------------------------------- corpus

def _corpus_cases() -> list[dict]:
    return [r for r in records("AL") if not ill_typed(r) and not diverges(r) and has_main(r)]


@pytest.mark.parametrize("rec", _corpus_cases(), ids=lambda r: r["id"])
def test_corpus_programs_keep_their_results(rec: dict) -> None:
    mod = infer_types(load(rec))
    assert "main" in mod
    main_t = mod["main"].checked_type
    if main_t.type_constraints or \
            {tv for a in main_t.arg_types for tv in free_type_vars(a)} & set(main_t.type_params):
        with pytest.raises(DiagnosticError, match="@main is polymorphic"):
            specialize(mod)
        return
    rng = np.random.default_rng(0)
    args = [random_value(p.checked_type, rng, mod) for p in mod["main"].params]
    before = aot.interpret(mod, *args)
    out = specialize(mod)
    assert_monomorphic(out)
    assert same_value(before, aot.interpret(out, *args))
