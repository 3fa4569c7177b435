"""Type inference: what programs get which types, and which are rejected
with which diagnostic."""

from __future__ import annotations

import pytest

import aot
from aot.diagnostics import DiagnosticError
from aot.ir import (Constructor, FuncType, GlobalVar, IncompleteType, Op, TensorType,
                    TupleType, TypeCall)
from aot.ir.attrs import Attrs
from aot.ir.dtype import DType
from aot.ir.registry import OpDef, PatternKind, Solved
from aot.ir.types import IncompleteType as Hole
from aot.ir.visitor import post_order
from aot.ir.type_solver import TypeSolver


def typed(text: str, **kw) -> aot.IRModule:
    return aot.infer_types(aot.parse(text, source_name="t.relay", **kw))


def main_type(text: str) -> str:
    return str(typed(text)["main"].checked_type)


def error_of(text: str) -> DiagnosticError:
    with pytest.raises(DiagnosticError) as info:
        typed(text)
    return info.value


# ------------------------------------------------------------------ accepts

@pytest.mark.parametrize("src, expected", [
    ("fn (%x: Tensor[(2, 3), float32]) { %x + %x }",
     "fn (Tensor[(2, 3), float32]) -> Tensor[(2, 3), float32]"),
    ("fn (%x: Tensor[(2, 1), float32], %y: Tensor[(4), float32]) { %x * %y }",
     "fn (Tensor[(2, 1), float32], Tensor[(4), float32]) -> Tensor[(2, 4), float32]"),
    ("fn (%x: Tensor[(3), int8]) { %x < %x }",
     "fn (Tensor[(3), int8]) -> Tensor[(3), bool]"),
    ("1 + 2", "fn () -> int32"),
    ("1f * 2f", "fn () -> float32"),
    ("(1, 2f, True)", "fn () -> (int32, float32, bool)"),
    ("(1, (2f,)).1.0", "fn () -> float32"),
    ("let %x = 1; let %y = %x + %x; %y", "fn () -> int32"),
    ("if (True) { 1 } else { 2 }", "fn () -> int32"),
    ("let %f = fn (%x) { fn (%y) { %x * %y } }; %f(2)(3)", "fn () -> int32"),
    ("let %r = ref(1f); let %u = ref_write(%r, 2f); ref_read(%r)", "fn () -> float32"),
    ("let %r = ref(1f); ref_write(%r, 2f)", "fn () -> ()"),
    ("fn (%x: Tensor[(?, 3), float32]) { %x + %x }",
     "fn (Tensor[(?, 3), float32]) -> Tensor[(?, 3), float32]"),
    ("let %t = fn (%p) { %p.1 }; %t((1, 2f))", "fn () -> float32"),
    ("let %_ : _ = (); ()", "fn () -> ()"),
    ("fn (%x) { %x }", "fn [A](A) -> A"),
    ("let %f = fn (%x) { %x }; %f", "fn [A]() -> fn (A) -> A"),
])
def test_expression_types(src: str, expected: str) -> None:
    assert main_type(src) == expected


def test_polymorphic_global_is_instantiated_per_call() -> None:
    mod = typed("""
        def @id[A](%x: A) -> A { %x }
        def @main(%f: float32) -> (float32, int32) { (@id(%f), @id(1)) }
    """)
    body = mod["main"].body
    calls = [body.fields[0], body.fields[1]]
    assert [c.type_args for c in calls] == [(TensorType((), DType.FLOAT32),),
                                            (TensorType((), DType.INT32),)]
    assert str(mod["id"].checked_type) == "fn [A](A) -> A"


def test_unannotated_global_is_generalised() -> None:
    mod = typed("""
        def @pair(%x, %y) { (%y, %x) }
        def @main() { @pair(1, 2f) }
    """)
    assert str(mod["pair"].checked_type) == "fn [A, B](A, B) -> (B, A)"
    assert str(mod["main"].checked_type) == "fn () -> (float32, int32)"


def test_mutual_recursion() -> None:
    mod = typed("""
        def @even(%n: int32) -> bool { if (%n == 0) { True } else { @odd(%n - 1) } }
        def @odd(%n: int32) -> bool { if (%n == 0) { False } else { @even(%n - 1) } }
        def @main() { @even(10) }
    """)
    assert str(mod["main"].checked_type) == "fn () -> bool"


def test_recursive_let_bound_function() -> None:
    assert main_type("""
        let %f = fn (%n: int32, %acc: int32) -> int32 {
            if (%n == 0) { %acc } else { %f(%n - 1, %acc + %n) }
        };
        %f(10, 0)
    """) == "fn () -> int32"


def test_adt_constructors_and_match() -> None:
    mod = typed("""
        type Either[A, B] { Left(A), Right(B) }
        def @swap[A, B](%e: Either[A, B]) -> Either[B, A] {
          match (%e) { Left(%a) => Right(%a), Right(%b) => Left(%b) }
        }
        def @main() { @swap(Left(1f)) }
    """)
    main = mod["main"]
    t = main.checked_type
    assert isinstance(t, FuncType) and isinstance(t.ret_type, TypeCall)
    assert t.ret_type.func.name == "Either"
    # Right's parameter of the result is float32; the Left side is unconstrained.
    assert t.ret_type.args[1] == TensorType((), DType.FLOAT32)


def test_nested_patterns_and_tuple_patterns() -> None:
    assert main_type("""
        type List[A] { Cons(A, List[A]), Nil }
        def @main() {
          let %l = Cons(1, Cons(2, Nil));
          match ((%l, 3)) {
            (Cons(%a, Cons(%b, _)), %c) => %a + %b + %c,
            (_, %c) => %c,
          }
        }
    """) == "fn () -> int32"


def test_let_bound_polymorphic_function_is_used_at_two_types() -> None:
    assert main_type("""
        let %id = fn [A](%x: A) -> A { %x };
        (%id(1), %id(2f))
    """) == "fn () -> (int32, float32)"


def test_prelude_functions_type_check() -> None:
    mod = typed("""
        def @main() {
          let %xs = Cons(1, Cons(2, Nil));
          (@sum(@map(fn (%x: int32) { %x * 2 }, %xs)), @length(@rev(%xs)), @hd(%xs))
        }
    """)
    assert str(mod["main"].checked_type) == "fn () -> (int32, int32, int32)"
    assert "foldl" in mod


def test_operator_used_as_a_value() -> None:
    assert main_type("""
        let %f = add;
        %f(1f, 2f)
    """) == "fn () -> float32"


def test_every_node_is_typed() -> None:
    mod = typed("""
        type List[A] { Cons(A, List[A]), Nil }
        def @main(%x: Tensor[(4), float32]) {
          let %f = fn (%y: Tensor[(4), float32]) { %y * %x };
          match (Cons(%f(%x), Nil)) { Cons(%h, _) => (%h, 1), Nil => (%x, 2) }
        }
    """)
    for func in mod.functions.values():
        for node in post_order(func):
            if isinstance(node, (GlobalVar, Constructor, Op)):
                continue
            assert node.checked_type is not None, node
            assert not any(isinstance(t, IncompleteType) for t in _types_in(node.checked_type))


def _types_in(t):
    from aot.ir.types import type_children
    stack = [t]
    while stack:
        node = stack.pop()
        yield node
        stack.extend(type_children(node))


def test_deep_let_chain_type_checks() -> None:
    n = 10_000
    lines = ["fn (%x0: int32) {"]
    for i in range(1, n + 1):
        lines.append(f"  let %x{i} = %x{i - 1} + 1;")
    lines.append(f"  %x{n}\n}}")
    assert main_type("\n".join(lines)) == "fn (int32) -> int32"


def test_wide_dataflow_graph_type_checks() -> None:
    n = 10_000
    lines = ["fn (%x: Tensor[(2, 2), float32]) {", "  %0 = %x + %x;"]
    for i in range(1, n):
        lines.append(f"  %{i} = %{i - 1} * %x;")
    lines.append(f"  %{n - 1}\n}}")
    assert main_type("\n".join(lines)) == \
        "fn (Tensor[(2, 2), float32]) -> Tensor[(2, 2), float32]"


# ------------------------------------------------------------------ rejects

def test_dtype_mismatch_names_operator_and_location() -> None:
    err = error_of("def @main(%x: Tensor[(2), float32]) {\n  add(%x, 1)\n}")
    text = str(err)
    assert "t.relay:2:3: error:" in text
    assert "`add`" in text and "float32" in text and "int32" in text


def test_shape_mismatch() -> None:
    err = error_of("fn (%x: Tensor[(2, 3), float32], %y: Tensor[(4), float32]) { %x + %y }")
    assert "(2, 3)" in err.message and "(4,)" in err.message


def test_ill_typed_comparison_chain_from_corpus() -> None:
    err = error_of("1 * 1 + 1 < 1 == 1")
    assert "bool" in err.message and "int32" in err.message


def test_if_condition_must_be_bool() -> None:
    err = error_of("if (1) { 2 } else { 3 }")
    assert "if condition" in err.message and "bool" in err.message


def test_branches_must_agree() -> None:
    err = error_of("if (True) { 2 } else { 3f }")
    assert "expected `int32`, found `float32`" in err.message


def test_wrong_number_of_arguments() -> None:
    err = error_of("let %f = fn (%x: int32) { %x }; %f(1, 2)")
    assert "takes 1 argument(s), given 2" in err.message


def test_calling_a_tensor() -> None:
    err = error_of("def @main(%x: float32) { %x(1f) }")
    assert "cannot call a value of type `float32`" in err.message


def test_tuple_index_out_of_range() -> None:
    err = error_of("(1, 2).2")
    assert "out of range" in err.message


def test_projection_of_non_tuple() -> None:
    err = error_of("def @main(%x: float32) { %x.0 }")
    assert "not a tuple" in err.message


def test_non_exhaustive_match_lists_missing_cases() -> None:
    err = error_of("""
        type List[A] { Cons(A, List[A]), Nil }
        def @f(%l: List[int32]) -> int32 {
          match (%l) { Cons(%x, Nil) => %x, Nil => 0 }
        }
    """)
    assert "not exhaustive" in err.message and "Cons(_, Cons(_, _))" in err.message


def test_incomplete_match_is_accepted() -> None:
    typed("""
        type List[A] { Cons(A, List[A]), Nil }
        def @f(%l: List[int32]) -> int32 { match? (%l) { Cons(%x, _) => %x } }
    """)


def test_constructor_field_mismatch() -> None:
    err = error_of("""
        type Box { B(int32) }
        def @main() { B(1f) }
    """)
    assert "argument of `B`" in err.message


def test_ref_write_of_wrong_type() -> None:
    err = error_of("let %r = ref(1); ref_write(%r, 1f)")
    assert "ref_write" in err.message


def test_several_errors_are_reported_at_once() -> None:
    err = error_of("""
        def @main(%x: float32) {
          let %a = add(%x, 1);
          let %b = if (1) { %x } else { %x };
          (%a, %b)
        }
    """)
    assert len(err.diagnostics) >= 2


def test_unsolvable_relation_is_reported() -> None:
    err = error_of("def @main() { let %f = fn (%x, %y) { %x + %y }; () }")
    assert "cannot infer the type of this `add` call" in err.message


def test_relations_over_generalised_types_become_constraints() -> None:
    mod = typed("""
        def @f(%x, %y) { %x + %y }
        def @main(%a: Tensor[(2, 1), float32], %b: Tensor[(3), float32]) { @f(%a, %b) }
    """)
    assert str(mod["f"].checked_type) == "fn [A, B, C](A, B) -> C where add(A, B, C)"
    assert str(mod["main"].checked_type) == \
        "fn (Tensor[(2, 1), float32], Tensor[(3), float32]) -> Tensor[(2, 3), float32]"
    err = error_of("""
        def @f(%x, %y) { %x + %y }
        def @main(%a: float32, %b: int32) { @f(%a, %b) }
    """)
    assert "dtype mismatch" in err.message


def test_operator_value_has_a_constrained_polymorphic_type() -> None:
    assert main_type("add") == "fn [A, B, C]() -> fn (A, B) -> C where add(A, B, C)"


def test_defaulting_gives_an_undetermined_operand_its_siblings_type() -> None:
    assert main_type("def @main(%x: Tensor[(2), float32], %b) { %x + %b }") == \
        "fn (Tensor[(2), float32], Tensor[(2), float32]) -> Tensor[(2), float32]"


def test_recursive_type_is_rejected() -> None:
    err = error_of("fn (%f) { %f(%f) }")
    assert "contain itself" in str(err)


def test_type_definition_with_unknown_type() -> None:
    err = error_of("type T { C(Missing[int32]) }")
    assert "type `Missing`" in str(err)


# ------------------------------------------------------------------ solver

def _refining_op() -> OpDef:
    """An operator whose relation gives its second argument a type from its
    first (as conv2d gives its weight one from the attrs)."""
    def rel(args, attrs):
        x = args[0]
        if not isinstance(x, TensorType):
            return None
        return Solved(TensorType((x.shape[0],), x.dtype), (None, TensorType((3,), x.dtype)))
    return OpDef("test.refine", 2, Attrs, rel, PatternKind.OPAQUE,
                 lambda a, at, o: None, "test op")


def test_relation_refines_an_argument_hole() -> None:
    solver = TypeSolver()
    weight = Hole()
    out = Hole()
    solver.add_relation(_refining_op(), [TensorType((5, 2), DType.FLOAT32), weight], out,
                        Attrs(), None)
    solver.solve()
    assert solver.resolve(weight) == TensorType((3,), DType.FLOAT32)
    assert solver.resolve(out) == TensorType((5,), DType.FLOAT32)
    assert not solver.diagnostics


def test_relation_waits_for_its_arguments() -> None:
    solver = TypeSolver()
    x = Hole()
    out = Hole()
    solver.add_relation(_refining_op(), [x, Hole()], out, Attrs(), None)
    solver.solve()
    assert solver.relations  # still pending
    solver.unify(x, TensorType((7, 1), DType.INT8), None)
    solver.solve()
    assert solver.resolve(out) == TensorType((7,), DType.INT8)


def test_unify_any_dimension() -> None:
    solver = TypeSolver()
    from aot.ir.types import ANY
    t = solver.unify(TensorType((ANY, 3), DType.FLOAT32), TensorType((2, 3), DType.FLOAT32), None)
    assert t == TensorType((2, 3), DType.FLOAT32)
    assert not solver.diagnostics


def test_unify_occurs_check() -> None:
    solver = TypeSolver()
    h = Hole()
    solver.unify(h, TupleType((h,)), None)
    assert solver.diagnostics


def test_rigid_type_variables_do_not_unify_with_concrete_types() -> None:
    err = error_of("def @f[A](%x: A) -> int32 { %x }")
    assert "expected `int32`, found `A`" in err.message



def test_an_unchanged_inferred_module_is_not_inferred_again():
    """infer_types of its own unchanged output returns a copy holding the
    same objects; a module changed since (a function replaced, even by an
    equal one, or added) is inferred again."""
    from aot.ir.type_infer import infer_types

    first = typed("def @main(%x: Tensor[(2, 3), float32]) { add(%x, %x) }")
    again = infer_types(first)
    assert again is not first and again.functions == first.functions
    assert all(again.functions[gv] is f for gv, f in first.functions.items())
    assert infer_types(again.copy())["main"] is first["main"]
    changed = first.copy()
    changed.add("main", aot.parse("def @main(%x: Tensor[(2, 3), float32]) { add(%x, %x) }")["main"])
    assert infer_types(changed)["main"] is not first["main"]
    grown = first.copy()
    grown.add("other", first["main"])
    assert infer_types(grown)["main"] is not first["main"]
