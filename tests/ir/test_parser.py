"""The Relay text parser: every construct, and every user error reported as
a diagnostic with its line and column."""

from __future__ import annotations

import re
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from aot.diagnostics import DiagnosticError, Severity
from aot.ir import (ANY, Call, Constant, DType, FuncAttrs, FuncType, Function,
                    GlobalTypeVar, GlobalVar, If, IncompleteType, Let, Match, Op, RefCreate,
                    RefRead, RefType, RefWrite, TensorType, Tuple, TupleGetItem, TupleType,
                    TypeCall, TypeVar, Var)
from aot.ir.adt import PatternConstructor, PatternTuple, PatternVar, PatternWildcard
from aot.ir.metadata import write_metadata
from aot.ir.parser import RawCallAttrs, parse_expr, parse_module
from aot.ir.registry import lookup


def diag(text: str, *, module: bool = False, **kw) -> DiagnosticError:
    with pytest.raises(DiagnosticError) as info:
        if module:
            parse_module(text, "t.relay", **kw)
        else:
            parse_expr(text, "t.relay")
    return info.value


def where(err: DiagnosticError, i: int = 0) -> tuple[int, int]:
    span = err.diagnostics[i].span
    assert span is not None
    return span.line, span.col


def scalar(e) -> tuple[object, str]:
    assert isinstance(e, Constant) and e.data.ndim == 0
    return e.data.item(), str(e.dtype)


# ---------------------------------------------------------------- literals

@pytest.mark.parametrize("text, value, dtype", [
    ("1", 1, "int32"), ("0", 0, "int32"), ("-100", -100, "int32"), ("-05", -5, "int32"),
    ("2147483647", 2147483647, "int32"), ("2147483648", 2147483648, "int64"),
    ("-2147483648", -2147483648, "int32"),
    ("9223372036854775807", 9223372036854775807, "int64"),
    ("-42i", -42, "int32"), ("-42i16", -42, "int16"), ("-42i32", -42, "int32"),
    ("-42i64", -42, "int64"), ("-128i8", -128, "int8"), ("255u8", 255, "uint8"),
    ("7u", 7, "uint32"), ("65535u16", 65535, "uint16"),
    ("--10", 10, "int32"), ("---10", -10, "int32"),
    ("1.0f", 1.0, "float32"), ("0.0f", 0.0, "float32"), ("-10.0f", -10.0, "float32"),
    ("1e-1f", float(np.float32(0.1)), "float32"), ("1E+1f", 10.0, "float32"),
    ("1.0e-1f", float(np.float32(0.1)), "float32"), ("3f16", 3.0, "float16"),
    ("3f32", 3.0, "float32"), ("3f", 3.0, "float32"), ("3f64", 3.0, "float64"),
    ("1.5", 1.5, "float32"), ("0.1f64", 0.1, "float64"), ("65504f16", 65504.0, "float16"),
    ("True", True, "bool"), ("False", False, "bool"),
])
def test_literals(text, value, dtype):
    assert scalar(parse_expr(text)) == (value, dtype)


def test_special_float_literals():
    assert np.isinf(parse_expr("inff").data) and parse_expr("-inff16").data < 0
    assert np.isnan(parse_expr("nanf64").data) and parse_expr("nanf64").dtype is DType.FLOAT64


@pytest.mark.parametrize("text, message", [
    ("2147483648i32", "out of range for int32"),
    ("32768i16", "out of range for int16"),
    ("-129i8", "out of range for int8"),
    ("256u8", "out of range for uint8"),
    ("-1u8", "out of range for uint8"),
    ("3.40283e+38f32", "out of range for float32"),
    ("65505f16", "out of range for float16"),
    ("1e999f", "out of range for float32"),      # past float64 too: read as inf
    ("1e309f64", "out of range for float64"),
    ("99999999999999999999", "out of range for int64"),
    ("1i7", "invalid numeric suffix `i7`"),
    ("1.5i32", "integer suffix on a floating-point literal"),
    ("12abc", "invalid number literal"),
])
def test_literal_errors(text, message):
    err = diag(text)
    assert message in err.message
    assert where(err) == (1, 1)
    assert str(err).startswith("t.relay:1:1: error: ")


def test_literal_error_position_inside_program():
    err = diag("let %x = 1;\nlet %y = 300i8;\n%y")
    assert where(err) == (2, 10)
    rendered = str(err)
    assert "t.relay:2:10: error: integer literal `300i8` is out of range for int8" in rendered
    assert "  let %y = 300i8;\n           ^" in rendered


# ---------------------------------------------------------------- operators

def _shape(e) -> object:
    """A nested (op, args...) view of calls, leaves as literals/names."""
    if isinstance(e, Call) and isinstance(e.op, Op):
        return (e.op.name, *(_shape(a) for a in e.args))
    if isinstance(e, Constant):
        return e.data.item()
    if isinstance(e, Var):
        return "%" + e.name_hint
    raise AssertionError(e)


@pytest.mark.parametrize("text, shape", [
    ("1 * 1", ("multiply", 1, 1)), ("1 / 1", ("divide", 1, 1)), ("1 + 1", ("add", 1, 1)),
    ("1 - 1", ("subtract", 1, 1)), ("1 < 1", ("less", 1, 1)), ("1 > 1", ("greater", 1, 1)),
    ("1 <= 1", ("less_equal", 1, 1)), ("1 >= 1", ("greater_equal", 1, 1)),
    ("1 == 1", ("equal", 1, 1)), ("1 != 1", ("not_equal", 1, 1)),
    ("1 * 2 + 3", ("add", ("multiply", 1, 2), 3)),
    ("1 * (2 + 3)", ("multiply", 1, ("add", 2, 3))),
    ("1 - 2 - 3", ("subtract", ("subtract", 1, 2), 3)),
    ("8 / 4 / 2", ("divide", ("divide", 8, 4), 2)),
    ("1 == 1 < 1 + 1 * 1", ("equal", 1, ("less", 1, ("add", 1, ("multiply", 1, 1))))),
    ("1 * 1 + 1 < 1 == 1", ("equal", ("less", ("add", ("multiply", 1, 1), 1), 1), 1)),
    ("1 - -1", ("subtract", 1, -1)),
    ("free_var %x: int32; -%x", ("negative", "%x")),
    ("free_var %x: int32; 2 * -%x", ("multiply", 2, ("negative", "%x"))),
    ("free_var %x: int32; --%x", ("negative", ("negative", "%x"))),
])
def test_binary_and_unary_operators(text, shape):
    assert _shape(parse_expr(text)) == shape


def test_binary_operator_calls_get_default_attrs():
    e = parse_expr("1 + 2")
    assert e.attrs == lookup("add").attrs_type.from_raw({})


def test_long_operator_chain_is_iterative():
    e = parse_expr(" + ".join(["1"] * 20000))
    depth = 0
    while isinstance(e, Call):
        e = e.args[0]
        depth += 1
    assert depth == 19999


@pytest.mark.parametrize("name", ["add", "nn.global_avg_pool2d"])
def test_bare_operator_is_a_reference(name):
    e = parse_expr(name)
    assert isinstance(e, Op) and e.name == name


def test_operator_call_with_typed_attrs():
    e = parse_expr("free_var %x: Tensor[(1, 3, 8, 8), float32];\n"
                   "free_var %w: Tensor[(16, 3, 3, 3), float32];\n"
                   "nn.conv2d(%x, %w, padding=[1, 1], channels=16, kernel_size=[3, 3],\n"
                   "          data_layout=\"NCHW\", out_dtype=\"float32\")")
    assert isinstance(e, Call) and e.op.name == "nn.conv2d"
    expected = lookup("nn.conv2d").attrs_type.from_raw(
        {"padding": [1, 1], "channels": 16, "kernel_size": [3, 3], "data_layout": "NCHW",
         "out_dtype": "float32"})
    assert e.attrs == expected
    assert e.attrs.channels == 16


def test_attribute_values():
    e = parse_expr("free_var %x: Tensor[(4, 4), float32]; nn.dense(%x, %x, units=None)")
    assert e.attrs.units is None
    e = parse_expr("free_var %x: Tensor[(2, 3), float32]; "
                   "nn.pad(%x, 0f, pad_width=[[0, 0], [1, 1],])")
    assert e.attrs.pad_width == ((0, 0), (1, 1))


def test_unknown_attribute_points_at_it():
    err = diag("free_var %x: Tensor[(2, 2), float32];\nnn.dense(%x, %x,\n  unitz=3)")
    assert "invalid attributes for `nn.dense`" in err.message
    assert "unknown attribute `unitz`" in err.message
    assert where(err) == (3, 3)


def test_bad_attribute_value():
    err = diag("free_var %x: Tensor[(2, 2), float32]; nn.dense(%x, %x, units=\"four\")")
    assert "attribute `units`" in err.message and where(err) == (1, 56)


def test_operator_arity():
    err = diag("add(1, 2, 3)")
    assert err.message == "operator `add` takes 2 arguments, got 3"
    assert where(err) == (1, 1)


def test_unknown_operators_are_all_reported():
    err = diag("%0 = nn.conv9d(1);\n%1 = frobnicate(%0);\n%1")
    assert [d.message for d in err.diagnostics] == ["unknown operator `nn.conv9d`",
                                                   "unknown operator `frobnicate`"]
    assert [where(err, i) for i in range(2)] == [(1, 6), (2, 6)]
    assert "^~~~~~~~~" in str(err)


def test_attrs_on_a_non_operator_call_are_kept():
    e = parse_expr('let %f = fn (%x) { %x }; %f(1, name="g", attrs_type_key="attrs.TestAttrs")')
    call = e.body
    assert isinstance(call.attrs, RawCallAttrs)
    assert call.attrs.to_raw() == {"attrs_type_key": "attrs.TestAttrs", "name": "g"}


# ---------------------------------------------------------------- bindings

def test_let_and_sequence():
    e = parse_expr("let %x: int32 = 1; let %y = %x; (); %y")
    assert isinstance(e, Let) and e.var.name_hint == "x"
    assert e.var.type_annotation == TensorType((), DType.INT32)
    y = e.body
    assert isinstance(y, Let) and y.value is e.var and y.var.type_annotation is None
    seq = y.body
    assert isinstance(seq, Let) and seq.var.name_hint == "_"
    assert isinstance(seq.value, Tuple) and seq.body is y.var


def test_let_is_recursive():
    e = parse_expr("let %f = fn (%n: int32) -> int32 { %f(%n) }; %f")
    assert e.value.body.op is e.var


def test_recursive_function_in_graph_form():
    # how TVM and our printer write a recursive function that is also used elsewhere
    e = parse_expr("%0 = fn (%n: int32) -> int32 { %f(%n) };\n"
                   "let %f: fn (int32) -> int32 = %0;\n(%0, %f)")
    assert isinstance(e, Let) and e.value.body.op is e.var
    assert e.body.fields[0] is e.value and e.body.fields[1] is e.var
    assert isinstance(e.var.type_annotation, FuncType)


@pytest.mark.parametrize("text", [
    "%0 = fn (%n) { %f(%n) };\n%0",  # no let follows
    "%0 = fn (%n) { %f(%n) };\nlet %g = %0;\n%g",  # it names another variable
    "%0 = fn (%n) { %f(%n) };\n%1 = 1;\nlet %f = %1;\n%f",  # the let binds another node
])
def test_graph_bound_function_sees_only_the_let_right_after_it(text):
    with pytest.raises(DiagnosticError, match="undefined variable `%f`"):
        parse_expr(text)


def test_graph_bound_function_keeps_an_outer_variable_of_the_same_name():
    e = parse_expr("free_var %f; %0 = fn (%n) { %f(%n) };\nlet %f = %0;\n%f")
    assert e.value.body.op is not e.var and e.value.body.op.name_hint == "f"


def test_graph_bindings_share_nodes():
    e = parse_expr("%0 = (); %1 = 1; (%0, %0, %1)")
    assert isinstance(e, Tuple)
    assert e.fields[0] is e.fields[1] and isinstance(e.fields[0], Tuple)
    assert scalar(e.fields[2]) == (1, "int32")


def test_graph_numbers_reused_in_nested_function():
    e = parse_expr("%0 = 1;\n%1 = fn (%x) { %0 = 2; add(%x, %0) };\n(%0, %1)")
    outer, fn = e.fields
    assert scalar(outer) == (1, "int32")
    assert scalar(fn.body.args[1]) == (2, "int32")


def test_graph_binding_is_scoped():
    err = diag("%0 = 1;\n%1 = fn () { %5 = 2; %5 };\n%5")
    assert err.message == "undefined graph variable `%5`" and where(err) == (3, 1)


def test_free_var():
    e = parse_expr("free_var %x: float32; free_var %y; (%x, %y)")
    x, y = e.fields
    assert x.type_annotation == TensorType((), DType.FLOAT32)
    assert y.type_annotation is None


def test_deep_let_chain_is_iterative():
    n = 10000
    text = "".join(f"let %v{i} = {i};\n" for i in range(n)) + "%v0"
    e = parse_expr(text)
    for _ in range(n):
        assert isinstance(e, Let)
        e = e.body
    assert isinstance(e, Var) and e.name_hint == "v0"


def test_deep_graph_chain_is_iterative():
    n = 10000
    text = "fn (%a: float32) {\n%0 = negative(%a);\n" + "".join(
        f"%{i} = negative(%{i - 1});\n" for i in range(1, n)) + f"%{n - 1}\n}}"
    e = parse_expr(text).body
    depth = 0
    while isinstance(e, Call):
        e = e.args[0]
        depth += 1
    assert depth == n


def test_excessive_nesting_is_a_diagnostic():
    err = diag("(" * 3000 + "1" + ")" * 3000)
    assert "nested too deeply" in err.message
    assert err.span is not None


# ---------------------------------------------------------------- expressions

def test_tuples_and_projection():
    assert parse_expr("()").fields == ()
    one = parse_expr("(0,)")
    assert isinstance(one, Tuple) and len(one.fields) == 1
    assert scalar(parse_expr("(0)")) == (0, "int32")  # parentheses, not a tuple
    assert len(parse_expr("(0, 1, 2,)").fields) == 3
    e = parse_expr("free_var %t: ((int32, int32),); %t.0.1")
    assert isinstance(e, TupleGetItem) and e.index == 1
    assert isinstance(e.tuple_value, TupleGetItem) and e.tuple_value.index == 0
    e = parse_expr("(1, (2, 3)).1")
    assert isinstance(e, TupleGetItem) and isinstance(e.tuple_value, Tuple)


def test_projection_of_a_call():
    e = parse_expr("let %f = fn () { (1, 2) }; %f().1")
    assert isinstance(e.body, TupleGetItem) and isinstance(e.body.tuple_value, Call)


def test_functions():
    f = parse_expr("fn () { 0 }")
    assert isinstance(f, Function) and f.params == () and f.ret_type is None
    f = parse_expr("fn (%x: int32) -> int32 { %x }")
    assert f.params[0].type_annotation == TensorType((), DType.INT32)
    assert f.ret_type == TensorType((), DType.INT32) and f.body is f.params[0]
    f = parse_expr("fn [A, B](%x: A, %y: B) -> (A, B) { (%x, %y) }")
    a, b = f.type_params
    assert isinstance(a, TypeVar) and f.params[0].type_annotation is a
    assert f.ret_type == TupleType((a, b))


def test_function_attributes():
    f = parse_expr('fn (%x, %y, Primitive=1, Compiler="foo") { add(%x, %y) }')
    assert f.attrs == FuncAttrs.of({"Primitive": 1, "Compiler": "foo"})
    assert len(f.params) == 2
    f = parse_expr('fn (Primitive=1) { 0 }')
    assert f.params == () and f.attrs.get("Primitive") == 1


def test_calls():
    e = parse_expr("(fn (%x) { %x })(0)")
    assert isinstance(e, Call) and isinstance(e.op, Function)
    e = parse_expr("let %f = fn (%x) { fn (%y) { %x } }; %f(0)(1)")
    assert isinstance(e.body.op, Call) and e.body.op.op is e.var
    e = parse_expr("let %constant = fn () { 0 }; %constant()")
    assert e.body.args == ()


def test_if_and_scopes():
    e = parse_expr("if (True) { let %x = 1; %x } else { 2 }")
    assert isinstance(e, If) and isinstance(e.true_branch, Let)
    err = diag("\n  if (True) {\n    let %x = ();\n    ()\n  } else {\n    %x\n  }\n")
    assert err.message == "undefined variable `%x`" and where(err) == (6, 5)


def test_refs():
    e = parse_expr("let %r = ref(1); ref_write(%r, 2); ref_read(%r)")
    assert isinstance(e.value, RefCreate)
    assert isinstance(e.body.value, RefWrite) and e.body.value.ref is e.var
    assert isinstance(e.body.body, RefRead)


def test_comments():
    assert parse_expr("// line comment\n()") is not None
    e = parse_expr("/* block\n /* nested */ still\n */ (1, /* inline */ 2)")
    assert len(e.fields) == 2
    err = diag("1 /* open /* nested */ never closed")
    assert err.message == "unterminated block comment" and where(err) == (1, 3)


def test_version_header():
    assert scalar(parse_expr('#[version = "0.0.5"]\n1')) == (1, "int32")
    err = diag('#[version = "0.0.4"]\n1')
    assert "unsupported text format version" in err.message and where(err) == (1, 1)
    err = diag("#[frobnicate]\n1")
    assert "unsupported attribute" in err.message


# ---------------------------------------------------------------- types

@pytest.mark.parametrize("text, expected", [
    ("Tensor[(1, 2), float32]", TensorType((1, 2), DType.FLOAT32)),
    ("Tensor[(?, 1), uint16]", TensorType((ANY, 1), DType.UINT16)),
    ("Tensor[(1), float32]", TensorType((1,), DType.FLOAT32)),
    ("Tensor[(), bool]", TensorType((), DType.BOOL)),
    ("int32", TensorType((), DType.INT32)), ("int", TensorType((), DType.INT32)),
    ("float16", TensorType((), DType.FLOAT16)), ("bool", TensorType((), DType.BOOL)),
    ("()", TupleType(())), ("(int32,)", TupleType((TensorType((), DType.INT32),))),
    ("(int32)", TupleType((TensorType((), DType.INT32),))),
    ("(int32, bool)", TupleType((TensorType((), DType.INT32), TensorType((), DType.BOOL)))),
    ("fn () -> int32", FuncType((), TensorType((), DType.INT32))),
    ("fn (int32, int32) -> int32", FuncType((TensorType((), DType.INT32),) * 2,
                                            TensorType((), DType.INT32))),
    ("Ref[int32]", RefType(TensorType((), DType.INT32))),
    ("ref(Tensor[(2), int8])", RefType(TensorType((2,), DType.INT8))),
    ("Tensor[(1), f]", TensorType((1,), DType.FLOAT32)),
    ("Tensor[(3, 1), f16]", TensorType((3, 1), DType.FLOAT16)),
    ("Tensor[(3), u8]", TensorType((3,), DType.UINT8)),
])
def test_types(text, expected):
    e = parse_expr(f"let %v: {text} = (); %v")
    assert e.var.type_annotation == expected


def test_incomplete_and_polymorphic_types():
    e = parse_expr("let %v: _ = (); %v")
    assert isinstance(e.var.type_annotation, IncompleteType)
    e = parse_expr("let %v: fn [A](A) -> A = (); %v")
    t = e.var.type_annotation
    assert isinstance(t, FuncType) and len(t.type_params) == 1
    assert t.arg_types == (t.type_params[0],) and t.ret_type is t.type_params[0]


def test_function_types_with_constraints():
    e = parse_expr("let %v: fn [A, B, C](A, B) -> C where add(A, B, C), nn.relu(C, C) = ();"
                   " let %w: (fn [A](A) -> A where negative(A, A), int32) = (); %v")
    t = e.var.type_annotation
    a, b, c = t.type_params
    assert [r.name for r in t.type_constraints] == ["add", "nn.relu"]
    assert t.type_constraints[0].args == (a, b, c)
    assert str(t) == "fn [A, B, C](A, B) -> C where add(A, B, C), nn.relu(C, C)"
    pair = e.body.var.type_annotation
    assert isinstance(pair, TupleType) and len(pair.fields) == 2
    assert pair.fields[0].type_constraints[0].name == "negative"


@pytest.mark.parametrize("text, message, col", [
    ("Foo", "undefined type `Foo`", 9),
    ("int7", "unknown dtype `int7`", 9),
    ("Tensor[(1), g]", "unknown dtype `g`", 21),
])
def test_type_errors(text, message, col):
    err = diag(f"let %v: {text} = (); %v")
    assert err.message == message and where(err) == (1, col)


# ---------------------------------------------------------------- ADTs

LIST = "type List[A] {\n  Cons(A, List[A]),\n  Nil,\n}\n"


def test_adt_definition():
    mod = parse_module(LIST + "type Ayy { }\nextern type T[A]\n"
                       "type Either[A, B] { Left(A), Right(B) }")
    data = mod.lookup_type("List")
    a = data.type_vars[0]
    cons, nil = data.constructors
    assert (cons.name, cons.tag, nil.tag) == ("Cons", 0, 1)
    assert cons.inputs == (a, TypeCall(GlobalTypeVar("List"), (a,)))
    assert mod.lookup_type("Ayy").constructors == ()
    assert mod.lookup_type("T").extern and len(mod.lookup_type("T").type_vars) == 1
    assert [c.name for c in mod.lookup_type("Either").constructors] == ["Left", "Right"]
    assert mod.constructor("Cons") is cons


def test_constructors_and_forward_references():
    mod = parse_module("def @main() -> List[int32] { @single(1) }\n"
                       "def @single(%x: int32) -> List[int32] { Cons(%x, Nil) }\n" + LIST)
    body = mod["single"].body
    cons = mod.constructor("Cons")
    assert isinstance(body, Call) and body.op is cons
    nil_call = body.args[1]
    assert isinstance(nil_call, Call) and nil_call.op is mod.constructor("Nil")
    assert nil_call.args == ()
    assert mod["main"].body.op is mod.get_global_var("single")


def test_unapplied_constructor():
    mod = parse_module(LIST + "def @main[A]() -> fn (A, List[A]) -> List[A] { Cons }")
    assert mod["main"].body is mod.constructor("Cons")


def test_match():
    mod = parse_module(LIST + """
def @length[A](%xs: List[A]) -> int32 {
  match (%xs) {
    Cons(_, %rest : List[A]) => {
      ();
      1 + @length(%rest)
    },
    Nil => 0,
  }
}
def @hd[A](%xs: List[A]) -> A {
  match? %xs {
    Cons(%x, _) => %x
  }
}
def @pairs(%a: (List[()], ())) -> int32 {
  match (%a) {
    (Cons((Nil), Nil), ()) => 1,
    _ => 2,
  }
}""")
    m = mod["length"].body
    assert isinstance(m, Match) and m.complete
    first, second = m.clauses
    assert isinstance(first.lhs, PatternConstructor)
    wildcard, rest = first.lhs.patterns
    assert isinstance(wildcard, PatternWildcard) and isinstance(rest, PatternVar)
    assert isinstance(rest.var.type_annotation, TypeCall)
    assert isinstance(first.rhs, Let)  # the `();` sequence
    assert first.rhs.body.args[1].args[0] is rest.var
    assert second.lhs.patterns == ()
    assert not mod["hd"].body.complete
    tup = mod["pairs"].body.clauses[0].lhs
    assert isinstance(tup, PatternTuple)
    inner = tup.patterns[0].patterns[0]
    assert isinstance(inner, PatternTuple) and len(inner.patterns) == 1  # `(Nil)`
    assert tup.patterns[1].patterns == ()


def test_match_on_a_tuple_and_a_clause_with_bindings():
    mod = parse_module(LIST + """
def @sum(%f: fn(int32) -> int32, %k: List[int32]) -> int32 {
  match (%k, %k) {
    (Cons(%x, %rest), _) => %0 = fn(%n) { %x + %f(%n) };
    @sum(%0, %rest),
    _ => %f(0),
  }
}""")
    m = mod["sum"].body
    assert isinstance(m.data, Tuple)
    rhs = m.clauses[0].rhs
    assert isinstance(rhs, Call) and isinstance(rhs.args[0], Function)


def test_pattern_errors():
    err = diag(LIST + "def @f(%l: List[int32]) { match (%l) { Conz(_, _) => 1, _ => 0 } }",
               module=True, prelude=False)
    assert "undefined constructor `Conz`" in err.message and where(err) == (5, 40)


@pytest.mark.parametrize("text, messages, positions", [
    (LIST + "\ntype List[A] {\n  Cons(A, List[A]),\n  Nil,\n}\n",
     ["duplicate definition of type `List`", "duplicate constructor `Cons`",
      "duplicate constructor `Nil`"], [(6, 6), (7, 3), (8, 3)]),
    ("type Ayy { Lmao }\ntype Haha { Lmao }", ["duplicate constructor `Lmao`"], [(2, 13)]),
    ("type Ayy { Lmao }\ntype Lmao { Ayy }",
     ["constructor `Lmao` has the same name as a type",
      "constructor `Ayy` has the same name as a type"], [(1, 12), (2, 13)]),
    ("def @id[A](%x: A) -> A { %x }\ndef @id[A](%x: A) -> A { %x }",
     ["duplicate definition of global function `@id`"], [(2, 5)]),
    ("extern type T { A }", ["the external type `T` may not have constructors"], [(1, 1)]),
])
def test_duplicate_definitions(text, messages, positions):
    err = diag(text, module=True, prelude=False)
    assert [d.message.split(" (first")[0] for d in err.diagnostics] == messages
    assert [where(err, i) for i in range(len(messages))] == positions


# ---------------------------------------------------------------- modules

def test_bare_expression_module_becomes_main():
    mod = parse_module("free_var %x: float32; free_var %y: float32; %y * %x")
    main = mod["main"]
    assert [p.name_hint for p in main.params] == ["y", "x"]
    assert main.body.args == main.params
    mod = parse_module('#[version = "0.0.5"]\nfn (%a: int32) { %a }')
    assert mod["main"].params[0].name_hint == "a"


def test_module_definitions_after_an_expression_are_an_error():
    err = diag("1\ndef @f() { 1 }", module=True)
    assert where(err) == (2, 1) and "after the expression" in err.message


def test_undefined_global_in_a_module():
    err = diag("def @main() { @nowhere(1) }", module=True, prelude=False)
    assert err.message == "undefined global function `@nowhere`" and where(err) == (1, 15)
    g = parse_expr("@foo")
    assert isinstance(g, GlobalVar) and g.name == "foo"


def test_let_binding_errors():
    err = diag("let @x = 1; ()")
    assert "not the global `@x`" in err.message and where(err) == (1, 5)
    err = diag("let x = 1; ()")
    assert "did you mean `%x`" in err.message and where(err) == (1, 5)


@pytest.mark.parametrize("text, message, position", [
    ("(1, 2", "expected `)` to close the tuple, found end of input", (1, 6)),
    ("fn (%x) %x", "expected `{` to start the function body, found local variable `%x`",
     (1, 9)),
    ("if (True) { 1 }", "an `if` needs an `else` branch", (1, 16)),
    ("1 +", "expected an expression, found end of input", (1, 4)),
    ('nn.dense(%x, "abc', "unterminated string literal", (1, 14)),
    ("1 $ 2", "unexpected character `$`", (1, 3)),
    ("let %x = 1", "expected `;` after the let binding", (1, 11)),
    ("match (1) { %x 2 }", "expected `=>` after the pattern", (1, 16)),
    ("let %v: Tensor[(1, a), int32] = (); %v", "expected a dimension", (1, 20)),
])
def test_syntax_errors(text, message, position):
    err = diag(text)
    assert message in str(err)
    assert position in [where(err, i) for i in range(len(err.diagnostics))]


def test_base_module_is_in_scope_and_copied():
    base = parse_module(LIST + "def @id[A](%x: A) -> A { %x }", prelude=False)
    mod = parse_module("def @main() -> List[int32] { @id(Cons(1, Nil)) }", base=base,
                       prelude=False)
    assert set(g.name for g in mod.functions) == {"id", "main"}
    assert mod.get_global_var("id") is base.get_global_var("id")
    assert mod["main"].body.args[0].op is base.constructor("Cons")
    assert set(g.name for g in base.functions) == {"id"}  # the base is not modified
    err = diag("type List[A] { Cons(A) }", module=True, base=base, prelude=False)
    assert "already defined in the base module" in err.message


def test_prelude_is_added_when_needed():
    pytest.importorskip("aot.ir.prelude")
    mod = parse_module("def @main() -> int32 { @length(Cons(1, Nil)) }")
    assert "length" in mod and mod.has_type("List")
    err = diag("def @main() -> int32 { @length(Cons(1, Nil)) }", module=True, prelude=False)
    assert err.message == "undefined global function `@length`"
    own = parse_module(LIST + "def @main() -> List[int32] { Cons(1, Nil) }")
    assert "length" not in own  # nothing missing: no prelude
    always = parse_module("def @main() { 1 }", prelude=True)
    assert "map" in always


def test_program_definitions_win_over_the_prelude():
    pytest.importorskip("aot.ir.prelude")
    mod = parse_module("def @length(%x: int32) -> int32 { %x }\n"
                       "def @main() { (@length(1), @map) }")
    assert mod["length"].params[0].type_annotation == TensorType((), DType.INT32)
    assert "map" in mod


PRELUDE_CLASHES = [
    # the program's own definition, what it uses from the prelude, @main's result
    ("def @id(%x: float32) -> float32 { %x }",
     "def @main() { Cons(@id(1f), Nil) }", "Cons(1f, Nil)"),
    ("def @map(%x: int32) -> int32 { %x + 1 }",  # the prelude's @tmap and @size use @map
     "def @main() { @length(Cons(@map(1), Nil)) }", "1"),
    ("type List[A] { Cons(A, List[A]), Nil }",  # the prelude's @hd etc. use its List
     "def @main() { @id(Cons(1, Nil)) }", "Cons(1, Nil)"),
    ("type Maybe[A] { Some(A), Nothing }",  # the prelude's Option has a `Some` too
     "def @main() { Some(@length(Cons(2, Nil))) }", "Some(1)"),
]


@pytest.mark.parametrize("own, uses, result", PRELUDE_CLASHES)
def test_program_definitions_shadow_the_prelude_and_type_check(own, uses, result):
    pytest.importorskip("aot.ir.prelude")
    from aot import interpret
    from aot.ir.type_infer import infer_types
    mod = infer_types(parse_module(own + "\n" + uses, "clash.relay"))
    assert str(interpret(mod)) == result


def test_prelude_definition_using_a_shadowed_one_is_reported():
    pytest.importorskip("aot.ir.prelude")
    text = ("def @id(%x: int32) -> int32 { %x }\n"
            "def @main() { @iterate(fn (%y: int32) { %y }, 2)(@id(1)) }")
    err = diag(text, module=True)
    assert err.message == "undefined global function `@iterate`" and where(err) == (2, 15)
    note = err.diagnostics[1]
    assert note.severity is Severity.NOTE and where(err, 1) == (1, 5)
    assert note.message == ("the prelude's `@iterate` is left out because `@id` is defined by "
                            "this program")


def test_prelude_type_clashing_through_a_constructor_is_reported():
    pytest.importorskip("aot.ir.prelude")
    err = diag("type Maybe[A] { Some(A), Nothing }\n"
               "def @main(%o: Option[int32]) { Cons(%o, Nil) }", module=True)
    assert [d.message for d in err.diagnostics][-1] == (
        "the prelude's type `Option` is left out because constructor `Some` is defined by "
        "this program")


# ---------------------------------------------------------------- metadata

def _with_metadata(program: str, *arrays: np.ndarray) -> str:
    return program + "\n#[metadata]\n" + write_metadata(list(arrays))


def test_metadata_constants():
    w = np.arange(6, dtype=np.float32).reshape(2, 3)
    b = np.array([1, 2], dtype=np.int8)
    text = _with_metadata("def @main(%x: Tensor[(2, 3), float32]) {\n"
                          "  (add(%x, meta[relay.Constant][0]), meta[relay.Constant][1],\n"
                          "   meta[relay.Constant][0])\n}", w, b)
    mod = parse_module(text)
    first, second, again = mod["main"].body.fields
    assert isinstance(second, Constant) and second.data.tolist() == [1, 2]
    assert first.args[1].data.tolist() == w.tolist() and first.args[1] is again


def test_meta_reference_errors():
    err = diag("meta[relay.Constant][0]")
    assert "the program has none" in err.message and where(err) == (1, 1)
    err = diag(_with_metadata("(1,\n meta[relay.Constant][3])", np.zeros(2, np.float32)))
    assert "out of bounds" in err.message and where(err) == (2, 2)
    err = diag("meta[VirtualDevice][0]")
    assert "unsupported meta reference `meta[VirtualDevice][0]`" in err.message
    err = diag("meta[type_key][1337]")
    assert "meta[type_key][1337]" in err.message and where(err) == (1, 1)
    err = diag("1\n#[metadata]\n{\"root\": 1,\n \"nodes\": [}")
    assert "bad metadata section" in err.message and where(err)[0] == 4


def test_meta_as_params():
    text = ("def @main(%x: Tensor[(2, 3), float32]) {\n"
            "  %0 = add(meta[relay.Constant][6], %x);\n"
            "  (multiply(%0, meta[relay.Constant][1]), meta[relay.Constant][6])\n}\n"
            "def @other() { meta[relay.Constant][2] }")
    mod = parse_module(text, meta_as_params=True)
    params = mod["main"].params
    assert [p.name_hint for p in params] == ["x", "meta_relay_Constant_1",
                                            "meta_relay_Constant_6"]
    assert all(isinstance(p.type_annotation, IncompleteType) for p in params[1:])
    body = mod["main"].body
    assert body.fields[1] is params[2] and body.fields[0].args[1] is params[1]
    assert [p.name_hint for p in mod["other"].params] == ["meta_relay_Constant_2"]
    expr_mod = parse_module("free_var %x: float32; add(%x, meta[relay.Constant][0])",
                            meta_as_params=True)
    assert [p.name_hint for p in expr_mod["main"].params] == ["x", "meta_relay_Constant_0"]


# ---------------------------------------------------------------- spans

def test_spans():
    e = parse_expr("let %x = 1;\nadd(%x,\n    2)", "spans.relay")
    assert e.span is not None and (e.span.line, e.span.col) == (1, 1)
    call = e.body
    s = call.span
    assert (s.source, s.line, s.col, s.end_line, s.end_col) == ("spans.relay", 2, 1, 3, 7)
    assert (call.args[1].span.line, call.args[1].span.col) == (3, 5)
    assert e.var.span is not None and e.var.span.col == 5


def test_spans_come_from_tokens_not_variables():
    mod = parse_module("def @main(%x: float32) {\n  let %y = %x;\n  %y; -%x + %y * %x\n}",
                       "s.relay")
    let = mod["main"].body
    assert (let.span.line, let.span.col, let.span.end_line, let.span.end_col) == (2, 3, 3, 20)
    seq = let.body
    assert (seq.span.line, seq.span.col) == (3, 3)
    add = seq.body
    assert (add.span.line, add.span.col, add.span.end_col) == (3, 7, 20)
    neg, mul = add.args
    assert (neg.span.col, neg.span.end_col, mul.span.col) == (7, 10, 13)


def test_errors_render_with_caret():
    err = diag("let %x = 1;\nfoo(%x)")
    assert str(err) == ("t.relay:2:1: error: unknown operator `foo`\n"
                        "  foo(%x)\n"
                        "  ^~~")


def test_parse_never_raises_other_exceptions():
    for text in ["", "(", ")", "{", "}", "%", "@", "#", "#[", "meta[", "fn", "def", "type",
                 "match", "let", "1 +* 2", "Tensor", "fn (%x: Tensor[) {}", "type T[ {",
                 "def @f(", "\"", "/*", "%x.", "match (1) {", "if (1) {} else", "-",
                 "ref_write(1)", "type A { B(", "extern", "free_var", "(1,,2)"]:
        try:
            parse_module(text, "fuzz.relay", prelude=False)
        except DiagnosticError as exc:
            assert exc.diagnostics and all(d.span is not None for d in exc.diagnostics)


_FUZZ_PIECES = ["def", "@f", "@main", "(", ")", "[", "]", "{", "}", ",", ";", ":", ".", "=",
                "->", "=>", "%x", "%0", "%1", "let", "fn", "if", "else", "match", "match?",
                "type", "extern", "List", "Cons", "Nil", "A", "_", "1", "-", "2.5f", "+", "*",
                "==", "ref", "ref_read", "free_var", "Tensor", "float32", "add", "nn.dense",
                "meta[relay.Constant][0]", '"s"', "#[version = \"0.0.5\"]", "//c\n", "/*", "*/",
                "é", "²", "$", "units=", "Primitive=1", "?", "True", "\n"]


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(_FUZZ_PIECES), max_size=30))
def test_random_token_soup_only_gives_diagnostics(pieces):
    text = " ".join(pieces)
    for parse in (lambda: parse_module(text, "soup.relay", prelude=False),
                  lambda: parse_expr(text, "soup.relay")):
        try:
            parse()
        except DiagnosticError as exc:
            assert all(d.span is not None for d in exc.diagnostics)


@pytest.mark.parametrize("text, message", [
    ("def @main(%x: List[int32, int32]) { 0 }", "`List` takes 1 type argument(s), given 2"),
    ("def @main(%x: Option) { 0 }", "`Option` needs 1 type argument(s)"),
    ("def @main(%x: int32) -> Option { None }", "`Option` needs 1 type argument(s)"),
    ("def @main() { let %y: List = Nil; 0 }", "`List` needs 1 type argument(s)"),
    ("def @main(%f: fn (List) -> int32) { 0 }", "`List` needs 1 type argument(s)"),
])
def test_type_constructor_arity_is_checked_in_annotations(text, message):
    import aot
    with pytest.raises(DiagnosticError, match=re.escape(message)):
        aot.infer_types(aot.parse(text))
