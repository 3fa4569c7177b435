"""The Relay text printer: expected text for small programs, sharing and
name placement, literals that round-trip bit for bit, deep inputs, and
print -> parse round trips (including random programs)."""

from __future__ import annotations

import dataclasses
import random
import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from aot.ir import (Call, Constant, DType, FuncAttrs, FuncType, Function, If, IncompleteType,
                    IRModule, Let, Match, RefCreate, RefRead, TensorType, Tuple, TupleGetItem, Var,
                    const, op)
from aot.ir.adt import Clause, PatternTuple, PatternVar, PatternWildcard
from aot.ir.parser import RawCallAttrs, parse_expr, parse_module
from aot.ir.printer import attr_value, print_expr, print_module, scalar_literal
from aot.ir.registry import lookup
from aot.ir.structural import structural_equal

F32 = TensorType((), DType.FLOAT32)


def roundtrip_expr(e):
    text = print_expr(e)
    back = parse_expr(text, "roundtrip.relay")
    assert structural_equal(e, back, map_free_vars=True), text
    return text


def roundtrip_module(mod):
    text = print_module(mod)
    back = parse_module(text, "roundtrip.relay", prelude=False)
    assert structural_equal(mod, back), text
    assert print_module(back) == text  # a fixpoint
    return text


# ---------------------------------------------------------------- expected text

def test_module_text():
    mod = parse_module("""
type List[A] { Cons(A, List[A]), Nil }
extern type Storage
type Empty { }
def @main(%x: Tensor[(2, 2), float32], %c: bool) -> (Tensor[(2, 2), float32], Tensor[(2, 2), float32]) {
  %0 = nn.relu(%x);
  %1 = if (%c) { let %y = %0; add(%y, %0) } else { %0 };
  (%1, %1)
}
def @len[A](%l: List[A]) -> int32 {
  match (%l) { Cons(_, %t) => 1 + @len(%t), Nil => 0 }
}""", prelude=False)
    assert print_module(mod) == """\
#[version = "0.0.5"]

type List[A] {
  Cons(A, List[A]),
  Nil,
}

extern type Storage

type Empty {
}

def @main(%x: Tensor[(2, 2), float32], %c: bool) -> (Tensor[(2, 2), float32], Tensor[(2, 2), float32]) {
  %0 = nn.relu(%x);
  %1 = if (%c) {
    let %y = %0;
    add(%y, %0)
  } else {
    %0
  };
  (%1, %1)
}

def @len[A](%l: List[A]) -> int32 {
  match (%l) {
    Cons(_, %t) => {
      %0 = @len(%t);
      add(1, %0)
    },
    Nil => 0,
  }
}
"""
    roundtrip_module(mod)


@pytest.mark.parametrize("source, expected", [
    ("1 + 2 * 3", "%0 = multiply(2, 3);\nadd(1, %0)"),
    ("1 * 2 + 3", "%0 = multiply(1, 2);\nadd(%0, 3)"),
    ("free_var %t: ((int32,), int32); add(%t.1, %t.0.0)",
     "free_var %t: ((int32,), int32);\n%0 = %t.0;\nadd(%t.1, %0.0)"),
    ("(); ()", "();\n()"),
    ("let %x = 1; let %y = (%x,); %y.0", "let %x = 1;\nlet %y = (%x,);\n%y.0"),
    ("free_var %x: float32; -%x", "free_var %x: float32;\nnegative(%x)"),
    ("fn (%x, %y) { %x + %y }", "fn (%x, %y) {\n  add(%x, %y)\n}"),
    ("fn [A](%x: A) -> A { %x }", "fn [A](%x: A) -> A {\n  %x\n}"),
    ('fn (%x, Primitive=1, Compiler="foo") { %x }',
     'fn (%x, Compiler="foo", Primitive=1) {\n  %x\n}'),
    ("(fn (%x) { %x })(1)", "%0 = fn (%x) {\n  %x\n};\n%0(1)"),
    ("%0 = (); %1 = 1; (%0, %0, %1)", "%0 = ();\n(%0, %0, 1)"),
    ("let %r = ref(1); ref_write(%r, 2); ref_read(%r)",
     "let %r = ref(1);\nref_write(%r, 2);\nref_read(%r)"),
    ("if (True) { 0 } else { 1 }", "if (True) {\n  0\n} else {\n  1\n}"),
    ("let %f = fn () { (1, 2) }; %f().1", "let %f = fn () {\n  (1, 2)\n};\n%0 = %f();\n%0.1"),
    ("(let %a = 1; 3) + 2", "%0 = (\n  let %a = 1;\n  3\n);\nadd(%0, 2)"),
    ("let %b = (let %a = 1; %a); %b", "let %b = (\n  let %a = 1;\n  %a\n);\n%b"),
    ("if (1 < 2) { 3 } else { 4 }", "if (less(1, 2)) {\n  3\n} else {\n  4\n}"),
    ("let %v: _ = 1; %v", "let %v: _ = 1;\n%v"),
    ("let %v: Ref[int32] = ref(1); %v", "let %v: Ref[int32] = ref(1);\n%v"),
])
def test_expression_text(source, expected):
    e = parse_expr(source)
    assert print_expr(e) == expected
    roundtrip_expr(e)


def test_operator_attrs_print_non_defaults_only():
    e = parse_expr("free_var %x: Tensor[(1, 3, 8, 8), float32]; "
                   "free_var %w: Tensor[(4, 3, 3, 3), float32]; "
                   "nn.conv2d(%x, %w, padding=[1, 1], channels=4, kernel_size=[3, 3], "
                   "data_layout=\"NCHW\")")
    text = print_expr(e)
    call_line = text.splitlines()[-1]
    assert call_line.startswith("nn.conv2d(%x, %w, ")
    assert "channels=4" in call_line and "kernel_size=[3, 3]" in call_line
    defaults = lookup("nn.conv2d").attrs_type()
    if defaults.data_layout == "NCHW":
        assert "data_layout" not in call_line
    roundtrip_expr(e)


def test_raw_call_attrs_round_trip():
    e = parse_expr('let %f = fn (%x) { %x }; %f(1, name="g", shape=[1, 2], ratio=0.5f)')
    assert isinstance(e.body.attrs, RawCallAttrs)
    assert 'name="g"' in print_expr(e)
    roundtrip_expr(e)


@pytest.mark.parametrize("value, text", [
    (None, "None"), (True, "True"), (3, "3"), (-4, "-4"), (0.5, "0.5f"), (0.1, "0.1f"),
    (1e300, "1e+300f64"), ("NCHW", '"NCHW"'), ('a"b\\c', '"a\\"b\\\\c"'),
    ([1, [2, 3]], "[1, [2, 3]]"), ((), "[]"), (float("inf"), "inff64"),
])
def test_attr_values(value, text):
    assert attr_value(value) == text


def test_func_attrs_round_trip():
    f = Function((Var("x"),), const(1),
                 attrs=FuncAttrs.of({"Primitive": 1, "Compiler": "ccompiler", "Inline": True,
                                     "hash": "9f0b2b", "ratio": 0.25, "dims": [1, 2]}))
    text = roundtrip_expr(f)
    assert 'Compiler="ccompiler"' in text and "dims=[1, 2]" in text and "Inline=True" in text


# ---------------------------------------------------------------- sharing

def test_shared_node_used_in_both_branches_is_bound_before_the_if():
    x = Var("x", F32)
    shared = Call(op("negative"), (x,))
    f = Function((x,), If(const(True), Tuple((shared, shared)), shared))
    text = print_expr(f)
    assert text == ("fn (%x: float32) {\n  %0 = negative(%x);\n  if (True) {\n    (%0, %0)\n"
                    "  } else {\n    %0\n  }\n}")
    roundtrip_expr(f)


def test_shared_node_local_to_a_branch_stays_in_it():
    x = Var("x", F32)
    shared = Call(op("negative"), (x,))
    f = Function((x,), If(const(True), Tuple((shared, shared)), x))
    assert print_expr(f) == ("fn (%x: float32) {\n  if (True) {\n    %0 = negative(%x);\n"
                             "    (%0, %0)\n  } else {\n    %x\n  }\n}")
    roundtrip_expr(f)


def test_shared_node_using_an_inner_variable_is_bound_inside_its_scope():
    x = Var("x", F32)
    y = Var("y", F32)
    inner_shared = Call(op("add"), (x, y))
    g = Function((y,), Tuple((inner_shared, inner_shared)))
    f = Function((x,), Let(Var("g"), g, Call(Var("h"), ())))
    # (the free %h only makes the let body something other than %g)
    text = roundtrip_expr(f)
    lines = text.splitlines()
    assert lines.index("    %0 = add(%x, %y);") > lines.index("  let %g = fn (%y: float32) {")


def test_shared_node_used_inside_and_outside_a_function():
    x = Var("x", F32)
    shared = Call(op("negative"), (x,))
    inner = Function((), shared)
    f = Function((x,), Tuple((shared, inner)))
    text = roundtrip_expr(f)
    assert text.splitlines()[1] == "  %0 = negative(%x);"


def test_shared_let_function_and_match_values():
    x = Var("x", F32)
    shared_let = Let(Var("t"), x, Call(op("negative"), (x,)))
    shared_fn = Function((Var("a"),), x)
    e = Function((x,), Tuple((shared_let, shared_let, shared_fn, shared_fn)))
    text = roundtrip_expr(e)
    assert "%0 = (\n" in text and "%1 = fn (%a) {" in text


def test_shared_nodes_in_a_let_chain_come_before_their_first_use():
    x = Var("x", F32)
    a = Var("a")
    shared = Call(op("negative"), (a,))
    body = Let(a, Call(op("exp"), (x,)), Let(Var("b"), Tuple((shared, shared)), shared))
    text = roundtrip_expr(Function((x,), body))
    lines = [ln.strip() for ln in text.splitlines()]
    assert lines.index("%0 = negative(%a);") == lines.index("let %a = exp(%x);") + 1


def test_shared_node_of_a_recursive_function_is_not_bound_before_its_let():
    f = Var("f")
    n = Var("n", F32)
    mention = Tuple((f,))  # mentions %f: cannot be bound before `let %f`
    body = If(const(True), Tuple((mention, mention)), Call(f, (n,)))
    e = Let(f, Function((n,), body), Tuple((mention, mention)))
    text = roundtrip_expr(e)
    assert text.index("let %f = fn") < text.index("%0 = (%f,);")


def test_shared_recursive_function_prints_before_its_let():
    # `let %f = F; (if (%c) { F } else { %f })(3f)`: F calls %f and is shared
    f = Var("f")
    n = Var("n", F32)
    c = Var("c", TensorType((), DType.BOOL))
    func = Function((n,), Call(f, (n,)))
    e = Function((c,), Let(f, func, Call(If(c, func, f), (const(3.0),))))
    text = roundtrip_expr(e)
    lines = [ln.strip() for ln in text.splitlines()]
    assert lines.index("let %f = %0;") == lines.index("%0 = fn (%n: float32) {") + 3
    back = parse_expr(text)
    assert back.body.body.op.true_branch is back.body.value  # still shared
    mod = IRModule()
    mod.add("main", e)
    roundtrip_module(mod)


def test_shared_annotated_recursive_function_called_in_the_let_body():
    n = Var("n", F32)
    x = Var("x", F32)
    f = Var("f", FuncType((F32,), F32))
    func = Function((n,), Call(f, (n,)))
    e = Function((x,), Let(f, func, Tuple((Call(func, (x,)), Call(f, (x,))))))
    text = roundtrip_expr(e)
    assert "let %f: fn (float32) -> float32 = %0;" in text


def test_sharing_is_preserved_by_the_round_trip():
    x = Var("x", F32)
    shared = Call(op("negative"), (x,))
    f = Function((x,), Tuple((shared, shared)))
    back = parse_expr(print_expr(f))
    assert back.body.fields[0] is back.body.fields[1]


# ---------------------------------------------------------------- names

def test_equal_name_hints_are_disambiguated():
    a, b, c = Var("x"), Var("x"), Var("x_1")
    f = Function((a, b, c), Tuple((c, b, a)))
    assert print_expr(f) == "fn (%x, %x_1, %x_1_1) {\n  (%x_1_1, %x_1, %x)\n}"
    roundtrip_expr(f)


@pytest.mark.parametrize("hint, printed", [
    ("a.b", "%a_b"), ("0", "%v0"), ("", "%x"), ("moments/mean", "%moments_mean"),
    ("ok_name", "%ok_name"),
])
def test_names_are_sanitized(hint, printed):
    v = Var(hint)
    text = print_expr(Function((v,), v))
    assert text.startswith(f"fn ({printed})")
    roundtrip_expr(Function((v,), v))


def test_names_restart_per_definition():
    mod = parse_module("def @f(%x) { %x }\ndef @g(%x) { %0 = (%x,); (%0, %0) }\n"
                       "def @h(%y) { %0 = (%y,); (%0, %0) }", prelude=False)
    text = roundtrip_module(mod)
    assert "def @g(%x) {\n  %0 = (%x,);" in text and "def @h(%y) {\n  %0 = (%y,);" in text


def test_unused_sequence_variables_print_as_statements():
    e = Let(Var("_"), const(1), Let(Var("_"), const(2), Tuple(())))
    assert print_expr(e) == "1;\n2;\n()"
    used = Var("_")
    e = Let(used, const(1), used)
    assert print_expr(e) == "let %_1 = 1;\n%_1"  # `%_` is kept for unused variables
    roundtrip_expr(e)


def test_an_unused_underscore_never_shadows_a_used_one():
    param = Var("_")
    unused = Var("_", F32)
    f = Function((param,), Let(unused, const(1.0), param))
    assert print_expr(f) == "fn (%_1) {\n  let %_: float32 = 1f;\n  %_1\n}"
    roundtrip_expr(f)


def test_free_variables_are_declared():
    x = Var("x", F32)
    y = Var("y")
    assert print_expr(Tuple((x, y))) == "free_var %x: float32;\nfree_var %y;\n(%x, %y)"


# ---------------------------------------------------------------- ADTs

def test_adt_programs_round_trip():
    mod = parse_module("""
type List[A] { Cons(A, List[A]), Nil, }
type Tree[A] { Rose(A, List[Tree[A]]) }
type GradCell[T] { Raw(T), One(fn () -> T), Zero(fn () -> T) }
def @hd[A](%xs: List[A]) -> A { match? (%xs) { Cons(%x, _) => %x } }
def @f(%a: (List[()], ())) -> int32 {
  match (%a) { (Cons((Nil), Nil), ()) => 1, _ => 2 }
}
def @g[A]() -> fn (A, List[A]) -> List[A] { Cons }
def @n() -> List[int32] { Nil }
def @z(%p: (int32, int32)) { match %p { (%a, %b) => %a + %b } }
""", prelude=False)
    text = roundtrip_module(mod)
    assert "match? (%xs) {" in text
    assert "(Cons((Nil,), Nil), ()) => 1," in text
    assert "def @n() -> List[int32] {\n  Nil\n}" in text
    assert "def @g[A]() -> fn (A, List[A]) -> List[A] {\n  Cons\n}" in text
    assert "One(fn () -> T)," in text


def test_match_on_tuple_prints_without_extra_parentheses():
    mod = parse_module("type L { N } def @f(%a: L, %b: L) { match (%a, %b) { (N, N) => 1 } }",
                       prelude=False)
    assert "match (%a, %b) {" in roundtrip_module(mod)


# ---------------------------------------------------------------- constants

@pytest.mark.parametrize("value, dtype, text", [
    (1, "int32", "1"), (-5, "int32", "-5"), (7, "int64", "7i64"), (-128, "int8", "-128i8"),
    (300, "int16", "300i16"), (255, "uint8", "255u8"), (2**64 - 1, "uint64",
                                                          "18446744073709551615u64"),
    (True, "bool", "True"), (False, "bool", "False"),
    (1.0, "float32", "1f"), (0.1, "float32", "0.1f"), (-2.5, "float16", "-2.5f16"),
    (0.1, "float64", "0.1f64"), (1e-5, "float32", "1e-05f"), (-0.0, "float32", "-0f"),
    (float("inf"), "float32", "inff"), (float("-inf"), "float64", "-inff64"),
    (float("nan"), "float16", "nanf16"), (65504.0, "float16", "65500f16"),
])
def test_scalar_literals(value, dtype, text):
    c = const(value, dtype)
    assert scalar_literal(c.data) == text
    back = parse_expr(text)
    assert back.data.dtype == c.data.dtype and back.data.tobytes() == c.data.tobytes()


def test_extreme_float_literals_round_trip():
    for dtype in (np.float16, np.float32, np.float64):
        info = np.finfo(dtype)
        for v in (info.max, -info.max, info.tiny, info.smallest_subnormal, info.eps):
            c = const(np.array(v, dtype=dtype))
            back = parse_expr(scalar_literal(c.data))
            assert back.data.tobytes() == c.data.tobytes(), (dtype, v)


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(["float16", "float32", "float64"]), st.integers(min_value=0))
def test_float_literals_are_bit_exact(dtype, bits):
    np_dtype = np.dtype(dtype)
    width = np_dtype.itemsize * 8
    raw = np.array(bits % (1 << width), dtype=f"uint{width}")
    value = raw.view(np_dtype).reshape(())
    text = scalar_literal(value)
    if text is None:  # only NaNs other than the canonical one need metadata
        assert np.isnan(value)
        return
    back = parse_expr(text)
    assert back.data.dtype == np_dtype and back.data.tobytes() == value.tobytes()


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
                        "uint64"]), st.integers())
def test_int_literals_are_exact(dtype, n):
    info = np.iinfo(dtype)
    value = np.array(info.min + n % (int(info.max) - int(info.min) + 1), dtype=dtype)
    back = parse_expr(scalar_literal(value))
    assert back.data.dtype == value.dtype and back.data.tobytes() == value.tobytes()


def test_tensor_constants_go_to_the_metadata_section():
    w = const(np.arange(6, dtype=np.float32).reshape(2, 3))
    b = const(np.array([True, False]))
    odd_nan = Constant(np.array(0x7FC00001, dtype=np.uint32).view(np.float32).reshape(()))
    x = Var("x", TensorType((2, 3), DType.FLOAT32))
    mod = IRModule()
    mod.add("main", Function((x,), Tuple((Call(op("add"), (x, w)), b, w, odd_nan))))
    text = roundtrip_module(mod)
    assert "  %0 = add(%x, meta[relay.Constant][0]);\n  (%0, meta[relay.Constant][1], " \
           "meta[relay.Constant][0], meta[relay.Constant][2])" in text
    assert "\n#[metadata]\n{" in text and text.count("relay.Constant\"") >= 3
    e = Tuple((w, w))
    assert print_expr(e).startswith("(meta[relay.Constant][0], meta[relay.Constant][0])\n"
                                    "#[metadata]\n")
    roundtrip_expr(e)


# ---------------------------------------------------------------- types

def test_types_round_trip():
    mod = parse_module("""
def @f[A, B](%f: fn (A) -> B, %r: Ref[A], %t: (A, (B,)), %u: (), %d: Tensor[(?, 3), int8],
             %p: fn [C](C) -> C, %q: _) -> B {
  %f(ref_read(%r))
}""", prelude=False)
    text = roundtrip_module(mod)
    assert "%r: Ref[A]" in text and "%d: Tensor[(?, 3), int8]" in text and "%q: _" in text


def test_meta_params_print_with_incomplete_annotations():
    mod = parse_module("def @main(%x: float32) { add(%x, meta[relay.Constant][0]) }",
                       meta_as_params=True, prelude=False)
    text = print_module(mod)
    assert "def @main(%x: float32, %meta_relay_Constant_0: _) {" in text
    assert structural_equal(mod, parse_module(text, prelude=False))


# ---------------------------------------------------------------- show_types

def test_show_types():
    x = Var("x", F32)
    call = dataclasses.replace(Call(op("negative"), (x,)), checked_type=F32)
    shared = Tuple((call, call))
    f = Function((x,), shared)
    text = print_expr(f, show_types=True)
    assert "%0 = negative(%x) /* ty=float32 */;" in text
    assert print_expr(f) == print_expr(f, show_types=False)
    roundtrip = parse_expr(text)
    assert structural_equal(f, roundtrip)


def test_str_uses_the_printer():
    x = Var("x", F32)
    assert str(Function((x,), x)) == "fn (%x: float32) {\n  %x\n}"
    mod = IRModule()
    mod.add("main", Function((x,), x))
    assert str(mod) == print_module(mod)


# ---------------------------------------------------------------- deep inputs

def _max_paren_depth(text: str) -> int:
    depth = best = 0
    for ch in text:
        if ch == "(":
            depth += 1
            best = max(best, depth)
        elif ch == ")":
            depth -= 1
    return best


def test_deep_let_chain_prints_flat():
    n = 10000
    lets = []
    for i in range(n):
        lets.append(Var(f"v{i}"))
    e = lets[-1]
    for i in reversed(range(n)):
        e = Let(lets[i], const(i) if i == 0 else Call(op("add"), (lets[i - 1], const(1))), e)
    text = roundtrip_expr(e)
    assert text.count("\n") == n and _max_paren_depth(text) <= 2


def test_deep_call_chain_is_bound_to_stay_shallow():
    x = Var("x", F32)
    e = x
    for _ in range(10000):
        e = Call(op("negative"), (e,))
    f = Function((x,), e)
    text = roundtrip_expr(f)
    assert _max_paren_depth(text) <= 2


def test_long_operator_chain():
    e = parse_expr(" + ".join(f"{i}" for i in range(5000)))
    text = roundtrip_expr(e)
    assert _max_paren_depth(text) <= 2


def test_wide_graph_with_many_shared_nodes():
    x = Var("x", F32)
    nodes = [x]
    rng = random.Random(7)
    for _ in range(3000):
        a, b = rng.choice(nodes), rng.choice(nodes)
        nodes.append(Call(op("add"), (a, b)))
    f = Function((x,), Tuple(tuple(nodes[-5:])))
    roundtrip_expr(f)


def test_printing_is_deterministic():
    src = ("def @main(%a: float32) { %0 = exp(%a); %1 = (%0, %0); "
           "let %f = fn (%b) { (%b, %0) }; (%f(%1), %1) }")
    texts = {print_module(parse_module(src, prelude=False)) for _ in range(3)}
    assert len(texts) == 1


# ---------------------------------------------------------------- random programs

class _Gen:
    """Random well-scoped expressions with sharing across scopes."""

    NAMES = ["x", "x", "y", "_", "a.b", "", "0"]

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)

    def expr(self, scope: list, pool: list, depth: int):
        rng = self.rng
        if depth <= 0 or rng.random() < 0.2:
            return self.leaf(scope, pool)
        kind = rng.choice(["tuple", "call", "proj", "let", "fn", "if", "ref", "shared",
                           "match"])
        if kind == "shared" and pool:
            return rng.choice(pool)
        if kind == "tuple":
            e = Tuple(tuple(self.expr(scope, pool, depth - 1) for _ in range(rng.randint(0, 3))))
        elif kind == "call":
            e = Call(op("add"), (self.expr(scope, pool, depth - 1),
                                 self.expr(scope, pool, depth - 1)))
        elif kind == "proj":
            e = TupleGetItem(Tuple((self.expr(scope, pool, depth - 1),)), 0)
        elif kind == "let":
            v = Var(rng.choice(self.NAMES), rng.choice([None, F32, IncompleteType()]))
            if rng.random() < 0.3:  # a recursive function
                params = (Var(rng.choice(self.NAMES)),)
                value = Function(params, self.expr(scope + [v, *params], list(pool), depth - 1))
                inner = [*pool, value]  # the body may use the function itself too
            else:
                value = self.expr(scope, pool, depth - 1)
                inner = list(pool)
            e = Let(v, value, self.expr(scope + [v], inner, depth - 1))
        elif kind == "fn":
            params = tuple(Var(rng.choice(self.NAMES)) for _ in range(rng.randint(0, 2)))
            e = Function(params, self.expr(scope + list(params), list(pool), depth - 1))
            if rng.random() < 0.5:
                e = Call(e, tuple(self.expr(scope, pool, depth - 1) for _ in params))
        elif kind == "if":
            e = If(self.expr(scope, pool, depth - 1), self.expr(scope, list(pool), depth - 1),
                   self.expr(scope, list(pool), depth - 1))
        elif kind == "ref":
            e = RefRead(RefCreate(self.expr(scope, pool, depth - 1)))
        else:
            v = Var(rng.choice(self.NAMES))
            data = self.expr(scope, pool, depth - 1)
            clauses = (Clause(PatternTuple((PatternVar(v), PatternWildcard())),
                              self.expr(scope + [v], list(pool), depth - 1)),
                       Clause(PatternWildcard(), self.expr(scope, list(pool), depth - 1)))
            e = Match(Tuple((data, data)), clauses, complete=rng.random() < 0.5)
        pool.append(e)
        return e

    def leaf(self, scope: list, pool: list):
        rng = self.rng
        r = rng.random()
        if scope and r < 0.5:
            return rng.choice(scope)
        if pool and r < 0.7:
            return rng.choice(pool)
        dtype = rng.choice(["int32", "int64", "float32", "float16", "bool", "uint8"])
        value = rng.choice([0, 1, -1, 7, 100]) if dtype != "bool" else rng.random() < 0.5
        if dtype == "uint8":
            value = abs(value)
        return const(value, dtype)


@settings(max_examples=150, deadline=None)
@given(st.integers(min_value=0, max_value=2**32))
def test_random_programs_round_trip(seed):
    gen = _Gen(seed)
    x = Var("x", F32)
    body = gen.expr([x], [], 6)
    f = Function((x,), body)
    text = roundtrip_expr(f)
    assert print_expr(parse_expr(text)) == text
    mod = IRModule()
    mod.add("main", f)
    roundtrip_module(mod)


def test_printed_text_never_has_unbalanced_brackets():
    gen = _Gen(11)
    f = Function((), gen.expr([], [], 7))
    text = print_expr(f)
    stripped = re.sub(r'"[^"]*"', "", text)
    for open_, close in ("()", "[]", "{}"):
        assert stripped.count(open_) == stripped.count(close)
