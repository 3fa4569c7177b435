"""The interpreter on programs written in the text format, and on the
prelude's functions (parsed, type-checked, then run through aot.interpret)."""

from __future__ import annotations

import functools

import numpy as np
import pytest

import aot
from aot.diagnostics import DiagnosticError
from aot.ir.module import IRModule
from aot.values import ConstructorValue, list_items, make_list, values_equal


@functools.cache
def _prelude() -> IRModule:
    return aot.prelude()


def ctor(name: str):
    c = _prelude().constructor(name)
    assert c is not None, name
    return c


def plist(items) -> ConstructorValue:
    """A prelude List of int32 scalars (or of given values)."""
    return make_list([np.asarray(i, np.int32) if isinstance(i, int) else i for i in items],
                     ctor("Cons"), ctor("Nil"))


def text_list(items) -> str:
    out = "Nil"
    for i in reversed(list(items)):
        out = f"Cons({i}, {out})"
    return out


def to_py(v):
    """A runtime value as plain Python: lists for List values, tuples,
    ints/floats/bools for scalars; other ADTs as (name, fields...)."""
    if isinstance(v, np.ndarray):
        assert v.shape == ()
        return v.item()
    if isinstance(v, tuple):
        return tuple(to_py(x) for x in v)
    if isinstance(v, ConstructorValue):
        if v.constructor.name in ("Cons", "Nil"):
            return [to_py(x) for x in list_items(v)]
        return (v.constructor.name, *[to_py(f) for f in v.fields])
    raise AssertionError(f"unexpected value {v!r}")


def run_text(body: str, *args, params: str = ""):
    src = f'#[version = "0.0.5"]\ndef @main({params}) {{\n  {body}\n}}\n'
    return aot.interpret(aot.parse(src, source_name="test.relay"), *args)


XS = [3, 1, 4, 1, 5, 9, 2, 6]
L = text_list(XS)
DOUBLE = "fn (%x: int32) -> int32 { %x * 2 }"
MINUS = "fn (%a: int32, %b: int32) -> int32 { %a - %b }"
IS_EVEN = "fn (%x: int32) -> bool { %x - (%x / 2) * 2 == 0 }"


def _foldl(f, acc, xs):
    for x in xs:
        acc = f(acc, x)
    return acc


def _foldr(f, acc, xs):
    for x in reversed(xs):
        acc = f(x, acc)
    return acc


# (program body, expected value as plain Python)
PRELUDE_CASES = [
    (f"@map({DOUBLE}, {L})", [2 * x for x in XS]),
    (f"@foldl({MINUS}, 100, {L})", _foldl(lambda a, b: a - b, 100, XS)),
    (f"@foldr({MINUS}, 100, {L})", _foldr(lambda a, b: a - b, 100, XS)),
    (f"@foldr1({MINUS}, {L})", _foldr(lambda a, b: a - b, XS[-1], XS[:-1])),
    (f"@sum({L})", sum(XS)),
    (f"@length({L})", len(XS)),
    ("@length(Nil)", 0),
    (f"@nth({L}, 5)", XS[5]),
    (f"@update({L}, 2, 77)", XS[:2] + [77] + XS[3:]),
    (f"@concat({L}, Cons(10, Nil))", XS + [10]),
    (f"@filter({IS_EVEN}, {L})", [x for x in XS if x % 2 == 0]),
    (f"@zip({L}, Cons(1f, Cons(2f, Nil)))", [(XS[0], 1.0), (XS[1], 2.0)]),
    (f"@rev({L})", XS[::-1]),
    (f"@hd({L})", XS[0]),
    (f"@tl({L})", XS[1:]),
    ("@map_accumr(fn (%acc: int32, %x: int32) -> (int32, int32) { (%acc + %x, %acc * 10) },"
     f" 0, {L})",
     (sum(XS), [10 * sum(XS[i + 1:]) for i in range(len(XS))])),
    ("@map_accuml(fn (%acc: int32, %x: int32) -> (int32, int32) { (%acc + %x, %acc * 10) },"
     f" 0, {L})",
     (sum(XS), [10 * sum(XS[:i]) for i in range(len(XS))][::-1])),
    ("@unfoldr(fn (%n: int32) -> Option[(int32, int32)] {"
     " if (%n == 0) { None } else { Some((%n - 1, %n * %n)) } }, 5)",
     [n * n for n in range(5, 0, -1)]),
    ("@unfoldl(fn (%n: int32) -> Option[(int32, int32)] {"
     " if (%n == 0) { None } else { Some((%n - 1, %n * %n)) } }, 5)",
     [n * n for n in range(1, 6)]),
    (f"@iterate({DOUBLE}, 5)(3)", 3 * 2 ** 5),
    (f"@iterate({DOUBLE}, 0)(3)", 3),
    (f"@compose({DOUBLE}, fn (%x: int32) -> int32 {{ %x + 1 }})(5)", (5 + 1) * 2),
    (f"@flip({MINUS})(1, 10)", 10 - 1),
    ("@id((1, 2f))", (1, 2.0)),
    ("@size(Rose(1, Cons(Rose(2, Nil), Cons(Rose(3, Cons(Rose(4, Nil), Nil)), Nil))))", 4),
    (f"@tmap({DOUBLE}, Rose(1, Cons(Rose(2, Nil), Nil)))",
     ("Rose", 2, [("Rose", 4, [])])),
    ("@nat_double(succ(succ(zero)))", ("succ", ("succ", ("succ", ("succ", ("zero",)))))),
    ("@nat_add(succ(zero), succ(succ(zero)))", ("succ", ("succ", ("succ", ("zero",))))),
    (f"@nat_nth({L}, succ(succ(zero)))", XS[2]),
    (f"@nat_update({L}, succ(zero), 0)", XS[:1] + [0] + XS[2:]),
    (f"@nat_iterate({DOUBLE}, succ(succ(succ(zero))))(1)", 8),
]


@pytest.mark.parametrize("body, expected", PRELUDE_CASES,
                         ids=[c[0].split("(")[0] for c in PRELUDE_CASES])
def test_prelude_function(body, expected):
    assert to_py(run_text(body)) == expected


@pytest.mark.parametrize("body", ["@hd(Nil)", "@tl(Nil)", f"@nth({text_list([1])}, 3)",
                                  "@foldr1(" + MINUS + ", Nil)"])
def test_prelude_partial_functions_fail_at_the_match(body):
    with pytest.raises(DiagnosticError, match="no clause matches Nil") as info:
        run_text(body)
    span = info.value.span
    assert span is not None and span.source.endswith("prelude.relay")


# -------------------------------------------------- long lists through the prelude

N = 10_000


@pytest.mark.parametrize("body, expected", [
    ("@length(%xs)", N),
    ("@sum(%xs)", N * (N - 1) // 2),
    ("@foldl(fn (%a: int32, %b: int32) -> int32 { %a + %b }, 0, %xs)", N * (N - 1) // 2),
    ("@foldr(fn (%a: int32, %b: int32) -> int32 { %a + %b }, 0, %xs)", N * (N - 1) // 2),
    ("@length(@foldr(Cons, Nil, %xs))", N),
    ("@nth(@rev(%xs), 0)", N - 1),
    ("@nth(@map(fn (%x: int32) -> int32 { %x * 3 }, %xs), 9999)", 3 * 9999),
    ("@length(@filter(fn (%x: int32) -> bool { %x < 100 }, %xs))", 100),
])
def test_prelude_on_a_10000_element_list(body, expected):
    xs = plist(range(N))
    assert to_py(run_text(body, xs, params="%xs: List[int32]")) == expected


def test_build_a_long_list_by_recursion():
    src = """#[version = "0.0.5"]
def @upto(%i: int32, %n: int32) -> List[int32] {
  if (%i >= %n) { Nil } else { Cons(%i, @upto(%i + 1, %n)) }
}
def @main(%n: int32) -> List[int32] { @upto(0, %n) }
"""
    result = aot.interpret(aot.parse(src), N)
    assert to_py(result) == list(range(N))
    assert result == plist(range(N))


# -------------------------------------------------- core language in text

TEXT_CASES = [
    # closures: currying and capture
    ("let %add = fn (%x: int32) { fn (%y: int32) { %x + %y } }; %add(3)(4)", 7),
    ("let %a = 10; let %f = fn (%x: int32) { %x + %a }; let %a2 = 100; %f(1)", 11),
    # let-bound recursion
    ("let %fact = fn (%n: int32) -> int32 { if (%n == 0) { 1 } else { %n * %fact(%n - 1) } };"
     " %fact(10)", 3628800),
    # tuples
    ("let %t = (1, (2f, True)); (%t.1.0, %t.0)", (2.0, 1)),
    # references: a counter
    ("let %c = ref(0); let %tick = fn () { ref_write(%c, ref_read(%c) + 1) };"
     " %tick(); %tick(); %tick(); ref_read(%c)", 3),
    ("let %r = ref(1f); ref_write(%r, 2f)", ()),
    # match with nested and tuple patterns, first clause wins
    (f"match ({text_list([1, 2])}, 5) {{ (Cons(%h, Cons(%h2, Nil)), %z) => %h + %h2 + %z,"
     " (_, %z) => %z }", 8),
    (f"match ({text_list([1, 2, 3])}) {{ Cons(_, Cons(%b, _)) => %b, _ => 0 }}", 2),
    ("match (Some(3)) { Some(%x) => %x, _ => 0, Some(_) => 1 }", 3),
    # graph bindings are shared values
    ("%0 = add(1, 2); %1 = multiply(%0, %0); %1", 9),
    # integer semantics
    ("(7 / -2, -7 / 2, 7 / 0)", (-3, -3, 0)),
    ("(1f / 0f, 2i64 * 3i64)", (float("inf"), 6)),
]


@pytest.mark.parametrize("body, expected", TEXT_CASES, ids=range(len(TEXT_CASES)))
def test_text_program(body, expected):
    assert to_py(run_text(body)) == expected


def test_text_program_dtypes_are_exact():
    v = run_text("(2i64 * 3i64, 1.5f64, 3u8, True)")
    assert [x.dtype for x in v] == [np.int64, np.float64, np.uint8, np.bool_]


def test_incomplete_match_in_text_points_at_the_match():
    src = ('#[version = "0.0.5"]\n'
           'def @main(%x: int32) {\n'
           '  match? (Some(%x)) {\n'
           '    None => 0,\n'
           '  }\n'
           '}\n')
    with pytest.raises(DiagnosticError, match=r"no clause matches Some\(4\)") as info:
        aot.interpret(aot.parse(src, source_name="incomplete.relay"), 4)
    assert str(info.value).startswith("incomplete.relay:3:")
    assert values_equal(aot.interpret(aot.parse(src.replace("None => 0", "_ => 0"),
                                                 source_name="complete.relay"), 4),
                        np.asarray(0, np.int32))


def test_argument_errors_through_aot_interpret():
    src = '#[version = "0.0.5"]\ndef @main(%x: Tensor[(2, 2), float32]) { %x * 2f }\n'
    mod = aot.parse(src, source_name="args.relay")
    with pytest.raises(DiagnosticError, match=r"argument %x of @main: expected "
                                              r"Tensor\[\(2, 2\), float32\], got a tensor of "
                                              r"type Tensor\[\(2, 2\), int32\]") as info:
        aot.interpret(mod, np.zeros((2, 2), np.int32))
    assert str(info.value).startswith("args.relay:2:")
    x = np.arange(4, dtype=np.float32).reshape(2, 2)
    assert values_equal(aot.interpret(mod, x), x * 2)


# -------------------------------------------------- builder programs on the prelude

def test_builder_program_using_the_prelude():
    from aot import builder as B
    prelude = aot.prelude()
    List = B.ADT.of(prelude, "List")
    xs = B.var("xs", List["int32"])
    body = B.call(B.gvar("sum"), B.call(B.gvar("map"),
                                        B.lam(lambda x: B.multiply(x, x), "int32"), xs))
    mod = B.module(base=prelude, main=B.function([xs], body))
    assert to_py(aot.interpret(mod, plist([1, 2, 3]))) == 1 + 4 + 9
    # Constructors of the prelude build values the prelude's functions accept.
    rev = B.module(base=prelude, main=B.function([], B.call(
        B.gvar("rev"), B.call(List.Cons, 1, B.call(List.Cons, 2, List.Nil)))))
    assert to_py(aot.interpret(rev)) == [2, 1]


# -------------------------------------------------- properties on random lists

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

_PROPS_SRC = """#[version = "0.0.5"]
def @p_rev(%xs: List[int32]) -> List[int32] { @rev(%xs) }
def @p_even(%xs: List[int32]) -> List[int32] {
  @filter(fn (%x: int32) -> bool { %x - (%x / 2) * 2 == 0 }, %xs)
}
def @p_foldl(%xs: List[int32]) -> int32 { @foldl(fn (%a: int32, %b: int32) { %a * 3 - %b }, 1, %xs) }
def @p_foldr(%xs: List[int32]) -> int32 { @foldr(fn (%a: int32, %b: int32) { %a - %b * 3 }, 1, %xs) }
def @p_zip(%xs: List[int32], %ys: List[int32]) -> List[(int32, int32)] { @zip(%xs, %ys) }
def @p_concat(%xs: List[int32], %ys: List[int32]) -> List[int32] { @concat(%xs, %ys) }
"""


@functools.cache
def _props_module() -> IRModule:
    return aot.infer_types(aot.parse(_PROPS_SRC, source_name="props.relay"))


small_lists = st.lists(st.integers(-50, 50), max_size=12)


@settings(max_examples=25, deadline=None)
@given(small_lists, small_lists)
def test_prelude_list_functions_agree_with_python(xs, ys):
    mod = _props_module()

    def call(name, *args):
        return to_py(aot.interpret(mod, *args, entry=name))

    def wrap(v: int) -> int:   # int32 arithmetic wraps
        return (v + 2 ** 31) % 2 ** 32 - 2 ** 31

    assert call("p_rev", plist(xs)) == xs[::-1]
    assert call("p_even", plist(xs)) == [x for x in xs if x % 2 == 0]
    assert call("p_foldl", plist(xs)) == wrap(_foldl(lambda a, b: wrap(a * 3 - b), 1, xs))
    assert call("p_foldr", plist(xs)) == wrap(_foldr(lambda a, b: wrap(a - b * 3), 1, xs))
    assert call("p_zip", plist(xs), plist(ys)) == list(zip(xs, ys))
    assert call("p_concat", plist(xs), plist(ys)) == xs + ys
