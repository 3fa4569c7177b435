"""The whole language through the C backend (issue 5), feature by feature.

Each :class:`Case` exercises one feature (or one combination of features):
global definitions of its own (names prefixed by the case so that cases can
share a module), the parameters and body of its entry, its arguments (built
with the parsed module's constructors, so ADT values cross the Python/C
boundary) and the value the program must compute, written out by hand as
plain Python (lists for ``List`` values, ``(name, *fields)`` for other ADT
values, numbers for scalars, arrays for tensors).

Packing: a C build costs about a second, so the cases of one feature group
(a *pack*) share one module.  Every case becomes a global ``@<case>``; the
packed ``@main`` takes the parameters of all of them and returns the tuple
of their results.  A pack is compiled, run and interpreted once (cached);
each case is still its own test item comparing its slot of the tuple, so a
failure names the case.  If the pack does not compile or its call fails,
the failing test compiles its case alone, so the error names the culprit.

Two tests per case: ``test_interpreter`` checks the interpreter against
the hand-computed value (this validates the programs), ``test_c`` checks
the compiled C against the interpreter and that the object pool is empty
after the call.  The bounds (``match?`` reaching no clause, ``max_depth``,
``pool_bytes``) have tests of their own at the end.
"""

from __future__ import annotations

import functools
import math
import re
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np
import pytest

import aot
from aot.ir.expr import Call, Function, Tuple, Var
from aot.ir.module import IRModule
from aot.values import ConstructorValue, list_items, make_list

from c_harness import assert_values_match, compile_and_load

HEADER = '#[version = "0.0.5"]\n'


# ------------------------------------------------------------------ values

class Values:
    """Argument values built with a module's constructors."""

    def __init__(self, mod: IRModule) -> None:
        self.mod = mod

    def __call__(self, name: str, *fields: Any) -> ConstructorValue:
        ctor = self.mod.constructor(name)
        assert ctor is not None, f"no constructor {name}"
        return ConstructorValue(ctor, tuple(val(f) for f in fields))

    def list(self, items: Any) -> ConstructorValue:
        return make_list([val(i) for i in items], self.mod.constructor("Cons"),
                         self.mod.constructor("Nil"))


def val(x: Any) -> Any:
    """Python numbers as 0-d arrays (int32, float32, bool); the rest as is."""
    if isinstance(x, bool):
        return np.asarray(x, np.bool_)
    if isinstance(x, int):
        return np.asarray(x, np.int32)
    if isinstance(x, float):
        return np.asarray(x, np.float32)
    if isinstance(x, tuple):
        return tuple(val(f) for f in x)
    return x


def f32(*shape: int, seed: int = 0, scale: float = 1.0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return (rng.standard_normal(shape) * scale).astype(np.float32)


def to_py(v: Any) -> Any:
    """A runtime value as plain Python (see the module docstring)."""
    if isinstance(v, np.ndarray):
        return v.item() if v.shape == () else v
    if isinstance(v, tuple):
        return tuple(to_py(x) for x in v)
    if isinstance(v, ConstructorValue):
        if v.constructor.name in ("Cons", "Nil"):
            return [to_py(x) for x in list_items(v)]
        return (v.constructor.name, *[to_py(f) for f in v.fields])
    raise AssertionError(f"unexpected value {v!r}")


def same(got: Any, want: Any) -> bool:
    """Plain-Python values equal, floats and arrays within 1e-5."""
    if isinstance(want, np.ndarray) or isinstance(got, np.ndarray):
        return (isinstance(got, np.ndarray) and np.shape(want) == got.shape
                and bool(np.allclose(got, want, rtol=1e-5, atol=1e-5)))
    if isinstance(want, (list, tuple)):
        return (type(got) is type(want) and len(got) == len(want)
                and all(same(g, w) for g, w in zip(got, want)))
    if isinstance(want, bool) or isinstance(got, bool):
        return got is want
    if isinstance(want, float):
        return isinstance(got, float) and math.isclose(got, want, rel_tol=1e-5, abs_tol=1e-5)
    return got == want


# ------------------------------------------------------------------ cases

@dataclass(frozen=True, eq=False)   # hashed by identity (cache keys)
class Case:
    name: str                     # also the name of the case's entry global
    defs: str                     # type and global definitions (unique names)
    params: str                   # the entry's parameters, with types
    body: str                     # the entry's body
    args: Callable[[Values], tuple] = lambda v: ()
    want: Any = None              # the hand-computed result (None: not given)


def build(cases: list[Case]) -> IRModule:
    """One module: the cases' definitions, one ``@<case>`` each and a
    ``@main`` returning the tuple of their results."""
    text = HEADER + "".join(
        f"{c.defs}\ndef @{c.name}({c.params}) {{\n{c.body}\n}}\n" for c in cases)
    mod = aot.parse(text, source_name="lang_c.relay")
    params: list[Var] = []
    calls = []
    for c in cases:
        fresh = tuple(Var(f"{c.name}_{p.name_hint}", p.type_annotation)
                      for p in mod[c.name].params)
        params.extend(fresh)
        calls.append(Call(mod.get_global_var(c.name), fresh))
    mod.add("main", Function(tuple(params), Tuple(tuple(calls))))
    return mod


def arguments(cases: list[Case], mod: IRModule) -> list[Any]:
    values = Values(mod)
    out: list[Any] = []
    for c in cases:
        args = tuple(c.args(values))
        assert len(args) == len(mod[c.name].params), c.name
        out.extend(args)
    return out


def c_name(text: str) -> str:
    return re.sub(r"\W", "_", text)


@dataclass
class Run:
    mod: IRModule
    args: list[Any]
    want: tuple                         # the interpreter's results
    got: tuple | None = None            # the C results (None: see error)
    pool_in_use: int | None = None
    error: str | None = None


@functools.cache
def interpreted(cases: tuple[Case, ...]) -> Run:
    mod = build(list(cases))
    args = arguments(list(cases), mod)
    return Run(mod, args, aot.interpret(mod, *args))


@functools.cache
def compiled(cases: tuple[Case, ...], name: str) -> Run:
    run = interpreted(cases)
    try:
        fn = compile_and_load(run.mod, name=c_name(name))
        got = fn(*run.args)
        return Run(run.mod, run.args, run.want, got, fn.pool_in_use())
    except Exception as e:  # noqa: BLE001  (reported by the cases, one by one)
        return Run(run.mod, run.args, run.want, error=f"{type(e).__name__}: {e}")


# ================================================================== programs

# ------------------------------------------------------------- if / match

CONTROL = [
    Case("if_nested_scalar", """
def @ifn_sign(%x: float32) -> int32 {
  if (%x > 0f) { 1 } else { if (%x < 0f) { -1 } else { 0 } }
}
def @ifn_grade(%s: int32) -> int32 {
  if (%s >= 50) {
    if (%s >= 90) { 4 } else { if (%s >= 70) { 3 } else { 2 } }
  } else {
    if (%s >= 30) { 1 } else { 0 }
  }
}""", "%a: float32, %s: int32",
         "(@ifn_sign(%a), @ifn_sign(negative(%a)), @ifn_sign(0f), @ifn_grade(95),"
         " @ifn_grade(75), @ifn_grade(%s), @ifn_grade(40), @ifn_grade(%s - 40))",
         lambda v: (val(2.5), val(55)), (1, -1, 0, 4, 3, 2, 1, 0)),
    Case("if_logic_and_tensor_condition", """
def @ift_clip(%v: Tensor[(4,), float32]) -> Tensor[(4,), float32] {
  if (max(%v) > 1f) { %v / max(%v) } else { if (min(%v) < -1f) { %v * 0.5f } else { %v } }
}
def @ift_both(%a: int32, %b: int32, %flag: bool) -> int32 {
  if (logical_and(%a > 0, %b > 0)) { if (%flag) { %a } else { %b } } else { 0 }
}""", "%v: Tensor[(4,), float32], %flag: bool",
         "(@ift_clip(%v), @ift_clip(%v * 0.25f), @ift_clip(%v - 10f),"
         " @ift_both(3, 4, %flag), @ift_both(3, 4, logical_not(%flag)), @ift_both(3, -4, %flag))",
         lambda v: (np.array([0.5, 2, -1, 4], np.float32), val(True)),
         (np.array([0.125, 0.5, -0.25, 1]), np.array([0.125, 0.5, -0.25, 1]),
          np.array([-4.75, -4, -5.5, -3]), 3, 4, 0)),
    Case("if_returns_tuple_and_adt", """
def @ifr_pick(%x: int32) -> (int32, Option[float32]) {
  if (%x > 10) { (%x - 10, Some(1.5f)) } else { (0, None) }
}
def @ifr_list(%x: int32) -> List[int32] {
  if (%x > 0) { Cons(%x, @ifr_list(%x - 2)) } else { Nil }
}""", "%n: int32",
         "(@ifr_pick(%n), @ifr_pick(%n - 20), @ifr_list(%n - 8), @ifr_list(0))",
         lambda v: (val(15),),
         ((5, ("Some", 1.5)), (0, ("None",)), [7, 5, 3, 1], [])),
    Case("match_nested_constructors", """
def @mn_shape(%xs: List[int32]) -> int32 {
  match (%xs) {
    Nil => 0,
    Cons(%a, Nil) => %a,
    Cons(%a, Cons(%b, Nil)) => %a * 10 + %b,
    Cons(_, Cons(_, Cons(%c, _))) => 100 + %c,
  }
}""", "%xs: List[int32]",
         "(@mn_shape(Nil), @mn_shape(Cons(7, Nil)), @mn_shape(Cons(1, Cons(2, Nil))),"
         " @mn_shape(%xs))",
         lambda v: (v.list([1, 2, 3, 4]),), (0, 7, 12, 103)),
    Case("match_tuple_patterns", """
def @mt_pair(%p: (Option[int32], List[int32])) -> int32 {
  match (%p) {
    (Some(%x), Cons(%y, _)) => %x + %y,
    (Some(%x), Nil) => %x,
    (None, Cons(_, Cons(%z, _))) => %z,
    (_, _) => -1,
  }
}
def @mt_merge(%a: List[int32], %b: List[int32]) -> List[int32] {
  match (%a, %b) {
    (Nil, %ys) => %ys,
    (%xs, Nil) => %xs,
    (Cons(%x, %xt), Cons(%y, %yt)) => {
      if (%x <= %y) { Cons(%x, @mt_merge(%xt, %b)) } else { Cons(%y, @mt_merge(%a, %yt)) }
    },
  }
}""", "%a: List[int32], %b: List[int32]",
         "(@mt_pair((Some(1), Cons(10, Nil))), @mt_pair((Some(4), Nil)),"
         " @mt_pair((None, Cons(1, Cons(7, Nil)))), @mt_pair((None, Cons(1, Nil))),"
         " @mt_merge(%a, %b), @mt_merge(%b, Nil))",
         lambda v: (v.list([1, 4, 6, 9]), v.list([2, 3, 7])),
         (11, 4, 7, -1, [1, 2, 3, 4, 6, 7, 9], [2, 3, 7])),
    Case("match_vars_and_wildcards_at_every_level", """
def @mw_deep(%t: (List[(int32, Option[int32])], int32)) -> int32 {
  match (%t) {
    (Cons((%a, Some(%b)), Cons((_, None), _)), %k) => %a + %b + %k,
    (Cons((%a, _), %rest), _) => %a + 100 * @length(%rest),
    (_, %k) => %k,
  }
}
def @mw_bind(%o: Option[int32]) -> Option[int32] {
  match (%o) { Some(%x) => Some(%x * 2), %other => %other }
}
def @mw_all(%xs: List[int32]) -> int32 {
  match (%xs) { %all => @length(%all) }
}""", "%xs: List[(int32, Option[int32])]",
         "(@mw_deep((%xs, 10)), @mw_deep((Cons((1, Some(2)), Cons((3, Some(4)), Nil)), 10)),"
         " @mw_deep((Cons((5, None), Nil), 10)), @mw_deep((Nil, 7)),"
         " @mw_deep((Cons((1, Some(2)), Cons((3, None), Cons((9, None), Nil))), 0)),"
         " @mw_bind(Some(21)), @mw_bind(None), @mw_all(Cons(1, Cons(1, Nil))))",
         lambda v: (v.list([(1, v("Some", 2)), (3, v("None"))]),),
         (13, 101, 5, 7, 3, ("Some", 42), ("None",), 2)),
    Case("match_first_clause_wins", """
def @mf_opt(%o: Option[int32]) -> int32 {
  match (%o) { Some(%x) => %x, Some(_) => 1000, _ => -5 }
}
def @mf_list(%xs: List[int32]) -> int32 {
  match (%xs) { Cons(_, _) => 1, Cons(%a, Nil) => %a, Nil => 0, _ => 99 }
}
def @mf_tuple(%p: (int32, List[int32])) -> int32 {
  match (%p) { (%a, _) => %a, (_, Nil) => 50 }
}""", "%n: int32",
         "(@mf_opt(Some(%n)), @mf_opt(None), @mf_list(Cons(%n, Nil)), @mf_list(Nil),"
         " @mf_tuple((%n, Nil)))",
         lambda v: (val(42),), (42, -5, 1, 0, 42)),
]

# ------------------------------------------------------------------ ADTs

ADTS = [
    Case("user_adt_shapes_tensor_fields", """
type Shape {
  Circle(float32),
  Rect(float32, float32),
  Blob(Tensor[(3,), float32]),
  Point,
}
def @sh_area(%s: Shape) -> float32 {
  match (%s) {
    Circle(%r) => 3f * %r * %r,
    Rect(%w, %h) => %w * %h,
    Blob(%v) => sum(%v),
    Point => 0f,
  }
}
def @sh_scale(%k: float32, %s: Shape) -> Shape {
  match (%s) {
    Circle(%r) => Circle(%r * %k),
    Rect(%w, %h) => Rect(%w * %k, %h),
    Blob(%v) => Blob(%v * %k),
    Point => Point,
  }
}""", "%shapes: List[Shape], %k: float32",
         "(@map(@sh_area, %shapes),"
         " @map(fn (%s: Shape) -> Shape { @sh_scale(%k, %s) }, %shapes))",
         lambda v: (v.list([v("Circle", 2.0), v("Rect", 2.0, 3.0),
                            v("Blob", np.array([1, 2, 3], np.float32)), v("Point")]),
                    val(2.0)),
         ([12.0, 6.0, 6.0, 0.0],
          [("Circle", 4.0), ("Rect", 4.0, 3.0), ("Blob", np.array([2, 4, 6])), ("Point",)])),
    Case("user_adt_recursive_expressions", """
type Ex {
  Num(int32),
  Plus(Ex, Ex),
  Times(Ex, Ex),
  Neg(Ex),
  X,
}
def @ex_eval(%e: Ex, %x: int32) -> int32 {
  match (%e) {
    Num(%n) => %n,
    Plus(%a, %b) => @ex_eval(%a, %x) + @ex_eval(%b, %x),
    Times(%a, %b) => @ex_eval(%a, %x) * @ex_eval(%b, %x),
    Neg(%a) => 0 - @ex_eval(%a, %x),
    X => %x,
  }
}
def @ex_simp(%e: Ex) -> Ex {
  match (%e) {
    Neg(Neg(%a)) => @ex_simp(%a),
    Plus(%a, %b) => Plus(@ex_simp(%a), @ex_simp(%b)),
    Times(%a, %b) => Times(@ex_simp(%a), @ex_simp(%b)),
    Neg(%a) => Neg(@ex_simp(%a)),
    %leaf => %leaf,
  }
}
def @ex_deriv(%e: Ex) -> Ex {
  match (%e) {
    Num(_) => Num(0),
    X => Num(1),
    Plus(%a, %b) => Plus(@ex_deriv(%a), @ex_deriv(%b)),
    Times(%a, %b) => Plus(Times(@ex_deriv(%a), %b), Times(%a, @ex_deriv(%b))),
    Neg(%a) => Neg(@ex_deriv(%a)),
  }
}""", "%x: int32",
         "let %e = Plus(Times(Num(3), Times(X, X)), Neg(Neg(Num(4))));\n"
         "(@ex_eval(%e, %x), @ex_simp(%e), @ex_eval(@ex_deriv(%e), %x))",
         lambda v: (val(5),),
         (79, ("Plus", ("Times", ("Num", 3), ("Times", ("X",), ("X",))), ("Num", 4)), 30)),
    Case("prelude_option", """
def @op_div(%a: float32, %b: float32) -> Option[float32] {
  if (%b == 0f) { None } else { Some(%a / %b) }
}
def @op_or(%o: Option[float32], %d: float32) -> float32 {
  match (%o) { Some(%v) => %v, None => %d }
}""", "%a: float32",
         "(@op_div(%a, 2f), @op_div(%a, 0f), @op_or(@op_div(%a, 4f), -1f),"
         " @op_or(@op_div(%a, 0f), -1f), Some(Some(Cons(%a, Nil))))",
         lambda v: (val(3.0),),
         (("Some", 1.5), ("None",), 0.75, -1.0, ("Some", ("Some", [3.0])))),
    Case("prelude_tree", """
def @tr_sum(%t: Tree[int32]) -> int32 {
  match (%t) { Rose(%v, %cs) => %v + @sum(@map(@tr_sum, %cs)) }
}
def @tr_depth(%t: Tree[int32]) -> int32 {
  match (%t) {
    Rose(_, %cs) => 1 + @foldl(fn (%m: int32, %c: Tree[int32]) -> int32 {
      maximum(%m, @tr_depth(%c))
    }, 0, %cs),
  }
}""", "%k: int32",
         "let %t = Rose(%k, Cons(Rose(2, Nil), Cons(Rose(3, Cons(Rose(4, Nil), Nil)), Nil)));\n"
         "(@size(%t), @tr_sum(%t), @tr_depth(%t), @tmap(fn (%v: int32) -> int32 { %v * %v }, %t))",
         lambda v: (val(1),),
         (4, 10, 3, ("Rose", 1, [("Rose", 4, []), ("Rose", 9, [("Rose", 16, [])])]))),
]

# ---------------------------------------------------------------- closures

CLOSURES = [
    Case("closure_captures_tensor", "",
         "%t: Tensor[(3,), float32], %u: Tensor[(3,), float32]",
         "let %w = %t * 2f;\n"
         "let %f = fn (%x: Tensor[(3,), float32]) -> Tensor[(3,), float32] { %x + %w };\n"
         "(%f(%u), %f(%t))",
         lambda v: (np.array([1, 2, 3], np.float32), np.array([10, 20, 30], np.float32)),
         (np.array([12, 24, 36]), np.array([3, 6, 9]))),
    Case("closure_captures_closure", "", "%n: int32",
         "let %g = fn (%x: int32) -> int32 { %x * 3 };\n"
         "let %h = fn (%x: int32) -> int32 { %g(%x) + 1 };\n"
         "let %k = fn (%x: int32) -> int32 { %h(%g(%x)) };\n"
         "(%h(%n), %k(%n))",
         lambda v: (val(4),), (13, 37)),
    Case("closure_returned_from_function", """
def @cr_adder(%k: int32) -> fn (int32) -> int32 {
  fn (%x: int32) -> int32 { %x + %k }
}
def @cr_mul3(%a: float32) -> fn (float32) -> fn (float32) -> float32 {
  fn (%b: float32) -> fn (float32) -> float32 { fn (%c: float32) -> float32 { %a * %b + %c } }
}""", "%n: int32",
         "let %add5 = @cr_adder(5);\n"
         "let %p = @cr_mul3(1.5f);\n"
         "(%add5(%n), @cr_adder(%n)(100), @cr_mul3(2f)(3f)(4f), %p(2f)(0.5f))",
         lambda v: (val(4),), (9, 104, 10.0, 3.5)),
    Case("closures_stored_in_a_list", """
def @cl_adder(%k: int32) -> fn (int32) -> int32 {
  fn (%x: int32) -> int32 { %x + %k }
}""", "%n: int32",
         "let %fs = Cons(fn (%x: int32) -> int32 { %x * 2 },"
         " Cons(@cl_adder(10), Cons(fn (%x: int32) -> int32 { %x - %n }, Nil)));\n"
         "let %apply = fn (%f: fn (int32) -> int32) -> int32 { %f(%n) };\n"
         "let %chain = @foldl(fn (%acc: fn (int32) -> int32, %f: fn (int32) -> int32)"
         " -> fn (int32) -> int32 { @compose(%f, %acc) },"
         " fn (%x: int32) -> int32 { %x }, %fs);\n"
         "(@map(%apply, %fs), %chain(1), @length(%fs), @nth(%fs, 1)(0))",
         lambda v: (val(3),), ([6, 13, 0], 9, 3, 10)),
    Case("closure_partial_application", "", "%n: int32",
         "let %add = fn (%a: int32, %b: int32) -> int32 { %a + %b * 10 };\n"
         "let %partial = fn (%a: int32) -> fn (int32) -> int32 {"
         " fn (%b: int32) -> int32 { %add(%a, %b) } };\n"
         "let %inc = %partial(1);\n"
         "let %fs = @map(%partial, Cons(1, Cons(2, Cons(3, Nil))));\n"
         "(%inc(%n), @map(fn (%f: fn (int32) -> int32) -> int32 { %f(%n) }, %fs))",
         lambda v: (val(5),), (51, [51, 52, 53])),
    Case("closure_compose_flip_iterate", "", "%n: int32",
         "let %sub = fn (%a: int32, %b: int32) -> int32 { %a - %b };\n"
         "let %dbl = fn (%x: int32) -> int32 { %x * 2 };\n"
         "let %inc = fn (%x: int32) -> int32 { %x + 1 };\n"
         "(@compose(%dbl, %inc)(%n), @compose(%inc, %dbl)(%n), @flip(%sub)(%n, 100),"
         " @compose(@compose(%dbl, %dbl), %dbl)(%n), @iterate(%inc, 7)(%n),"
         " @iterate(%dbl, 0)(%n))",
         lambda v: (val(5),), (12, 11, 95, 40, 12, 5)),
    Case("closure_let_bound_recursion", "", "%n: int32, %b: float32",
         "let %fact = fn (%k: int32) -> int32 {"
         " if (%k == 0) { 1 } else { %k * %fact(%k - 1) } };\n"
         "let %pow = fn (%e: int32) -> float32 {"
         " if (%e == 0) { 1f } else { %b * %pow(%e - 1) } };\n"
         "let %down = fn (%k: int32, %acc: List[int32]) -> List[int32] {"
         " if (%k == 0) { %acc } else { %down(%k - 1, Cons(%k, %acc)) } };\n"
         "let %spin = fn (%k: int32, %acc: int32) -> int32 {"
         " if (%k == 0) { %acc } else { %spin(%k - 1, %acc + 1) } };\n"
         "(%fact(%n), %pow(%n), %down(%n, Nil), %spin(3000, 0))",
         lambda v: (val(6), val(1.5)), (720, 1.5 ** 6, [1, 2, 3, 4, 5, 6], 3000)),
    Case("closure_captures_list_tensor_and_closure", """
def @cm_make(%ws: List[float32], %scale: Tensor[(2,), float32], %post: fn (float32) -> float32)
    -> fn (Tensor[(2,), float32]) -> Tensor[(2,), float32] {
  fn (%x: Tensor[(2,), float32]) -> Tensor[(2,), float32] {
    %x * %scale + %post(@foldl(fn (%a: float32, %b: float32) -> float32 { %a + %b }, 0f, %ws))
  }
}""", "%s: Tensor[(2,), float32], %x: Tensor[(2,), float32]",
         "let %f = @cm_make(Cons(1f, Cons(2f, Nil)), %s,"
         " fn (%v: float32) -> float32 { %v * %v });\n"
         "(%f(%x), %f(%s))",
         lambda v: (np.array([2, 3], np.float32), np.array([1, 1], np.float32)),
         (np.array([11, 12]), np.array([13, 18]))),
]

# ------------------------------------------------- prelude higher-order functions

XS = [3, 1, 4, 1, 5, 9, 2, 6]
MINUS = "fn (%a: int32, %b: int32) -> int32 { %a - %b }"
IS_EVEN = "fn (%x: int32) -> bool { %x - (%x / 2) * 2 == 0 }"


def _foldr(f, acc, xs):
    for x in reversed(xs):
        acc = f(x, acc)
    return acc


HOF = [
    Case("hof_map_folds_sum_length", "", "%xs: List[int32]",
         f"(@map(fn (%x: int32) -> int32 {{ %x * %x }}, %xs), @foldl({MINUS}, 100, %xs),"
         f" @foldr({MINUS}, 100, %xs), @foldr1({MINUS}, %xs), @sum(%xs), @length(%xs),"
         " @length(@map(fn (%x: int32) -> bool { %x > 2 }, Nil)))",
         lambda v: (v.list(XS),),
         ([x * x for x in XS], 100 - sum(XS), _foldr(lambda a, b: a - b, 100, XS),
          _foldr(lambda a, b: a - b, XS[-1], XS[:-1]), sum(XS), len(XS), 0)),
    Case("hof_zip_filter_nth_update_concat", "", "%xs: List[int32]",
         f"(@zip(%xs, @rev(%xs)), @filter({IS_EVEN}, %xs), @nth(%xs, 4), @update(%xs, 2, 77),"
         " @concat(%xs, Cons(10, Nil)), @hd(%xs), @tl(%xs),"
         " @zip(%xs, Cons(1f, Cons(2f, Nil))))",
         lambda v: (v.list(XS),),
         (list(zip(XS, XS[::-1])), [x for x in XS if x % 2 == 0], XS[4],
          XS[:2] + [77] + XS[3:], XS + [10], XS[0], XS[1:], [(3, 1.0), (1, 2.0)])),
    Case("hof_unfold", "", "%n: int32",
         "let %step = fn (%k: int32) -> Option[(int32, int32)] {"
         " if (%k == 0) { None } else { Some((%k - 1, %k * %k)) } };\n"
         "(@unfoldr(%step, %n), @unfoldl(%step, %n), @unfoldr(%step, 0))",
         lambda v: (val(5),), ([25, 16, 9, 4, 1], [1, 4, 9, 16, 25], [])),
    Case("hof_map_accum_and_tuple_fold", "", "%xs: List[int32], %fs: List[float32]",
         "let %f = fn (%acc: int32, %x: int32) -> (int32, int32) { (%acc + %x, %acc * 10) };\n"
         "(@map_accumr(%f, 0, %xs), @map_accuml(%f, 0, %xs),"
         " @foldl(fn (%acc: (float32, int32), %x: float32) -> (float32, int32) {"
         " (%acc.0 + %x, %acc.1 + 1) }, (0f, 0), %fs))",
         lambda v: (v.list([1, 2, 3]), v.list([0.5, 1.5, 2.0])),
         ((6, [50, 30, 0]), (6, [30, 10, 0]), (4.0, 3))),
    Case("hof_nat", "", "%xs: List[int32]",
         "let %three = succ(succ(succ(zero)));\n"
         "(@nat_double(@nat_add(succ(zero), %three)), @nat_nth(%xs, %three),"
         " @nat_update(%xs, succ(zero), 0),"
         " @nat_iterate(fn (%x: int32) -> int32 { %x * 2 }, %three)(1))",
         lambda v: (v.list([5, 6, 7, 8]),),
         (functools.reduce(lambda n, _: ("succ", n), range(8), ("zero",)), 8, [5, 0, 7, 8], 8)),
]

# --------------------------------------------------------------- recursion

def _hanoi(n, a, b, c):
    return [] if n == 0 else _hanoi(n - 1, a, c, b) + [(a, c)] + _hanoi(n - 1, b, a, c)


RECURSION = [
    Case("recursion_global", """
def @rg_fib(%n: int32) -> int32 {
  if (%n < 2) { %n } else { @rg_fib(%n - 1) + @rg_fib(%n - 2) }
}
def @rg_upto(%i: int32, %n: int32) -> List[int32] {
  if (%i >= %n) { Nil } else { Cons(%i, @rg_upto(%i + 1, %n)) }
}
def @rg_hanoi(%n: int32, %a: int32, %b: int32, %c: int32) -> List[(int32, int32)] {
  if (%n == 0) { Nil } else {
    @concat(@rg_hanoi(%n - 1, %a, %c, %b), Cons((%a, %c), @rg_hanoi(%n - 1, %b, %a, %c)))
  }
}""", "%n: int32",
         "(@rg_fib(%n), @sum(@rg_upto(0, 300)), @rg_hanoi(3, 1, 2, 3))",
         lambda v: (val(15),), (610, 299 * 300 // 2, _hanoi(3, 1, 2, 3))),
    Case("recursion_mutual", """
def @rm_even(%n: int32) -> bool { if (%n == 0) { True } else { @rm_odd(%n - 1) } }
def @rm_odd(%n: int32) -> bool { if (%n == 0) { False } else { @rm_even(%n - 1) } }
def @rm_ping(%n: int32) -> int32 { if (%n <= 0) { 0 } else { 1 + @rm_pong(%n - 1) } }
def @rm_pong(%n: int32) -> int32 { if (%n <= 0) { 0 } else { 10 + @rm_ping(%n - 1) } }""",
         "%n: int32",
         "(@rm_even(%n), @rm_odd(%n), @rm_even(%n + 1), @rm_ping(7), @rm_pong(7))",
         lambda v: (val(1001),), (False, True, True, 34, 43)),
    Case("recursion_tail_through_match_and_tensors", """
def @rtm_max(%xs: List[int32], %best: int32) -> int32 {
  match (%xs) {
    Nil => %best,
    Cons(%h, %t) => if (%h > %best) { @rtm_max(%t, %h) } else { @rtm_max(%t, %best) },
  }
}
def @rtm_build(%n: int32, %acc: List[int32]) -> List[int32] {
  if (%n == 0) { %acc } else { @rtm_build(%n - 1, Cons(mod(%n * 7919, 1000), %acc)) }
}
def @rtm_relax(%n: int32, %x: Tensor[(4,), float32], %c: Tensor[(4,), float32])
    -> Tensor[(4,), float32] {
  if (%n == 0) { %x } else { @rtm_relax(%n - 1, %x * 0.5f + %c, %c) }
}""", "%n: int32, %x: Tensor[(4,), float32], %c: Tensor[(4,), float32]",
         "(@rtm_max(@rtm_build(%n, Nil), -1), @rtm_relax(5000, %x, %c))",
         lambda v: (val(1000), np.array([100, -100, 0, 3], np.float32),
                    np.array([1, 2, -3, 0.5], np.float32)),
         (max(n * 7919 % 1000 for n in range(1, 1001)), np.array([2, 4, -6, 1]))),
]

RECURSION += [
    Case("recursion_tail_call_parallel_assignment", """
def @rp_swap(%n: int32, %a: int32, %b: int32) -> (int32, int32) {
  if (%n == 0) { (%a, %b) } else { @rp_swap(%n - 1, %b, %a) }
}
def @rp_fib(%n: int32, %a: int32, %b: int32) -> int32 {
  if (%n == 0) { %a } else { @rp_fib(%n - 1, %b, %a + %b) }
}
def @rp_rot(%n: int32, %x: List[int32], %y: List[int32], %z: Tensor[(2,), float32])
    -> (List[int32], List[int32], Tensor[(2,), float32]) {
  if (%n == 0) { (%x, %y, %z) } else {
    @rp_rot(%n - 1, %y, Cons(%n, %x), %z * 2f)
  }
}""", "%n: int32, %z: Tensor[(2,), float32]",
         "(@rp_swap(%n, 1, 2), @rp_swap(%n + 1, 1, 2), @rp_fib(30, 0, 1),"
         " @rp_rot(%n, Nil, Cons(9, Nil), %z))",
         lambda v: (val(5), np.array([1, -0.5], np.float32)),
         ((2, 1), (1, 2), 832040, ([2, 4, 9], [1, 3, 5], np.array([32, -16])))),
    Case("recursion_tail_loop_captures_its_parameters", """
def @rq_collect(%n: int32, %fs: List[fn () -> int32]) -> List[int32] {
  if (%n == 0) {
    @map(fn (%f: fn () -> int32) -> int32 { %f() }, %fs)
  } else {
    @rq_collect(%n - 1, Cons(fn () -> int32 { %n * 10 }, %fs))
  }
}""", "%n: int32",
         "let %loop = fn (%k: int32, %acc: List[fn (int32) -> int32])"
         " -> List[fn (int32) -> int32] {"
         " if (%k == 0) { %acc } else {"
         " %loop(%k - 1, Cons(fn (%x: int32) -> int32 { %x + %k }, %acc)) } };\n"
         "(@rq_collect(%n, Nil),"
         " @map(fn (%f: fn (int32) -> int32) -> int32 { %f(100) }, %loop(%n, Nil)))",
         lambda v: (val(3),), ([10, 20, 30], [101, 102, 103])),
    Case("recursion_nested_non_tail_in_tail_call", """
def @ra_ack(%m: int32, %n: int32) -> int32 {
  if (%m == 0) { %n + 1 } else {
    if (%n == 0) { @ra_ack(%m - 1, 1) } else { @ra_ack(%m - 1, @ra_ack(%m, %n - 1)) }
  }
}
def @ra_mk(%n: int32) -> fn () -> int32 {
  fn () -> int32 { if (%n == 0) { 0 } else { @ra_mk(%n - 1)() + 2 } }
}""", "%m: int32",
         "(@ra_ack(2, 3), @ra_ack(%m, 3), @ra_mk(50)())",
         lambda v: (val(3),), (9, 61, 100)),
]

# ---------------------------------------------------------------- references

REFS = [
    Case("ref_counter_in_a_loop", """
def @rc_loop(%r: Ref[int32], %i: int32) -> () {
  if (%i == 0) { () } else { ref_write(%r, ref_read(%r) + %i); @rc_loop(%r, %i - 1) }
}""", "%n: int32",
         "let %c = ref(0);\n"
         "let %loop = fn (%i: int32) -> () {"
         " if (%i == 0) { () } else { ref_write(%c, ref_read(%c) * 2 + 1); %loop(%i - 1) } };\n"
         "%loop(10);\n"
         "let %d = ref(0);\n"
         "@rc_loop(%d, %n);\n"
         "(ref_read(%c), ref_read(%d))",
         lambda v: (val(100),), (1023, 5050)),
    Case("ref_holding_a_list", """
def @rl_push(%r: Ref[List[int32]], %i: int32) -> () {
  if (%i == 0) { () } else { ref_write(%r, Cons(%i * %i, ref_read(%r))); @rl_push(%r, %i - 1) }
}""", "%n: int32",
         "let %r = ref(Nil);\n"
         "@rl_push(%r, %n);\n"
         "let %snapshot = ref_read(%r);\n"
         "ref_write(%r, @tl(ref_read(%r)));\n"
         "(%snapshot, ref_read(%r), @length(ref_read(%r)))",
         lambda v: (val(5),), ([1, 4, 9, 16, 25], [4, 9, 16, 25], 4)),
    Case("ref_captured_by_closures", """
def @rk_counter(%start: int32) -> fn () -> int32 {
  let %c = ref(%start);
  fn () -> int32 { ref_write(%c, ref_read(%c) + 1); ref_read(%c) }
}""", "%n: int32",
         "let %f = @rk_counter(0);\n"
         "let %g = @rk_counter(%n);\n"
         "let %a = %f();\n"
         "let %b = %f();\n"
         "let %d = %g();\n"
         "let %e = %f();\n"
         "(%a, %b, %d, %e)",
         lambda v: (val(100),), (1, 2, 101, 3)),
    Case("ref_tensor_accumulator_and_aliasing", "",
         "%ts: List[Tensor[(3,), float32]]",
         "let %acc = ref(@hd(%ts) * 0f);\n"
         "let %f = fn (%t: Tensor[(3,), float32]) -> Tensor[(3,), float32] {"
         " ref_write(%acc, ref_read(%acc) + %t); ref_read(%acc) };\n"
         "let %partials = @map(%f, %ts);\n"
         "let %alias = %acc;\n"
         "ref_write(%alias, ref_read(%alias) * 2f);\n"
         "(%partials, ref_read(%acc))",
         lambda v: (v.list([np.array([1, 2, 3], np.float32), np.array([10, 20, 30], np.float32),
                            np.array([-1, 0, 1], np.float32)]),),
         ([np.array([1, 2, 3]), np.array([11, 22, 33]), np.array([10, 22, 34])],
          np.array([20, 44, 68]))),
    Case("ref_holding_a_closure", "", "%n: int32",
         "let %r = ref(fn (%x: int32) -> int32 { %x });\n"
         "let %add = fn (%k: int32) -> () {"
         " let %old = ref_read(%r);"
         " ref_write(%r, fn (%x: int32) -> int32 { %old(%x) * 2 + %k }) };\n"
         "%add(1);\n%add(2);\n%add(3);\n"
         "let %refs = Cons(ref(1), Cons(ref(2), Nil));\n"
         "let %bump = fn (%q: Ref[int32]) -> int32 {"
         " ref_write(%q, ref_read(%q) * 10); ref_read(%q) };\n"
         "let %bumped = @map(%bump, %refs);\n"
         "(ref_read(%r)(%n), %bumped, @map(fn (%q: Ref[int32]) -> int32 { ref_read(%q) }, %refs))",
         lambda v: (val(1),), (19, [10, 20], [10, 20])),
]

# ------------------------------------------------- tensors in lists and trees

W4 = [f32(4, 4, seed=i, scale=0.5) for i in range(3)]
B4 = [f32(4, seed=10 + i, scale=0.5) for i in range(3)]
X14 = f32(1, 4, seed=20)


def _net(x, ws, bs):
    for w, b in zip(ws, bs):
        x = np.maximum(x @ w.T + b, 0) + x
    return x


CONV_W = f32(3, 2, 3, 3, seed=30, scale=0.3)
CONV_XS = [f32(1, 2, 5, 5, seed=31 + i) for i in range(3)]


def _conv2d(x, w, pad):
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    oh, ow = xp.shape[2] - w.shape[2] + 1, xp.shape[3] - w.shape[3] + 1
    out = np.zeros((x.shape[0], w.shape[0], oh, ow), np.float64)
    for i in range(w.shape[2]):
        for j in range(w.shape[3]):
            out += np.einsum("nchw,oc->nohw", xp[:, :, i:i + oh, j:j + ow], w[:, :, i, j])
    return out


LEAVES = [f32(2, 3, seed=40 + i) for i in range(3)]
DENSE_W = f32(2, 4, seed=50)
DENSE_XS = [f32(1, 4, seed=51 + i) for i in range(3)]
RNN_WX, RNN_WH, RNN_H0 = f32(3, 2, seed=60), f32(3, 3, seed=61, scale=0.5), f32(1, 3, seed=62)
RNN_XS = [f32(1, 2, seed=63 + i) for i in range(4)]


def _rnn(h, xs):
    outs = []
    for x in xs:
        h = np.tanh(x @ RNN_WX.T + h @ RNN_WH.T)
        outs.append(h * 2)
    return h, outs[::-1]


TENSORS = [
    Case("tensor_recursive_network", """
def @tn_net(%x: Tensor[(1, 4), float32], %ws: List[Tensor[(4, 4), float32]],
            %bs: List[Tensor[(4,), float32]]) -> Tensor[(1, 4), float32] {
  match (%ws, %bs) {
    (Cons(%w, %wt), Cons(%b, %bt)) =>
      @tn_net(add(nn.relu(add(nn.dense(%x, %w), %b)), %x), %wt, %bt),
    _ => %x,
  }
}""", "%x: Tensor[(1, 4), float32], %ws: List[Tensor[(4, 4), float32]], "
          "%bs: List[Tensor[(4,), float32]]",
         "(@tn_net(%x, %ws, %bs), @tn_net(%x, @tl(%ws), %bs))",
         lambda v: (X14, v.list(W4), v.list(B4)),
         (_net(X14, W4, B4), _net(X14, W4[1:], B4))),
    Case("tensor_layers_as_adt", """
type TnLayer {
  TnDense(Tensor[(4, 4), float32], Tensor[(4,), float32]),
  TnRelu,
  TnScale(float32),
  TnResidual(List[TnLayer]),
}
def @tl_apply(%x: Tensor[(1, 4), float32], %ls: List[TnLayer]) -> Tensor[(1, 4), float32] {
  match (%ls) {
    Nil => %x,
    Cons(TnDense(%w, %b), %rest) => @tl_apply(nn.dense(%x, %w) + %b, %rest),
    Cons(TnRelu, %rest) => @tl_apply(nn.relu(%x), %rest),
    Cons(TnScale(%s), %rest) => @tl_apply(%x * %s, %rest),
    Cons(TnResidual(%inner), %rest) => @tl_apply(%x + @tl_apply(%x, %inner), %rest),
  }
}""", "%x: Tensor[(1, 4), float32], %w1: Tensor[(4, 4), float32], %b1: Tensor[(4,), float32], "
          "%w2: Tensor[(4, 4), float32], %b2: Tensor[(4,), float32]",
         "@tl_apply(%x, Cons(TnDense(%w1, %b1), Cons(TnResidual(Cons(TnRelu,"
         " Cons(TnDense(%w2, %b2), Nil))), Cons(TnScale(0.5f), Cons(TnRelu, Nil)))))",
         lambda v: (X14, W4[0], B4[0], W4[1], B4[1]),
         (lambda h: np.maximum((h + (np.maximum(h, 0) @ W4[1].T + B4[1])) * 0.5, 0))(
             X14 @ W4[0].T + B4[0])),
    Case("tensor_tree_folds", """
type TnTree {
  TnLeaf(Tensor[(2, 3), float32]),
  TnNode(TnTree, TnTree),
  TnScaled(float32, TnTree),
}
def @tt_sum(%t: TnTree) -> Tensor[(2, 3), float32] {
  match (%t) {
    TnLeaf(%v) => %v,
    TnNode(%l, %r) => @tt_sum(%l) + @tt_sum(%r),
    TnScaled(%k, %s) => @tt_sum(%s) * %k,
  }
}
def @tt_rsum(%t: Tree[Tensor[(2, 3), float32]]) -> Tensor[(2, 3), float32] {
  match (%t) {
    Rose(%v, %cs) => @foldl(fn (%acc: Tensor[(2, 3), float32], %c: Tree[Tensor[(2, 3), float32]])
        -> Tensor[(2, 3), float32] { %acc + @tt_rsum(%c) }, %v, %cs),
  }
}""", "%a: Tensor[(2, 3), float32], %b: Tensor[(2, 3), float32], %c: Tensor[(2, 3), float32]",
         "let %t = TnNode(TnLeaf(%a), TnScaled(2f, TnNode(TnLeaf(%b), TnLeaf(%c))));\n"
         "let %r = Rose(%a, Cons(Rose(%b, Nil), Cons(Rose(%c, Nil), Nil)));\n"
         "(@tt_sum(%t), @tt_rsum(@tmap(fn (%v: Tensor[(2, 3), float32]) -> Tensor[(2, 3), float32]"
         " { tanh(%v) }, %r)))",
         lambda v: tuple(LEAVES),
         (LEAVES[0] + 2 * (LEAVES[1] + LEAVES[2]), sum(np.tanh(x) for x in LEAVES))),
    Case("tensor_map_conv2d_closure", "",
         "%w: Tensor[(3, 2, 3, 3), float32], %xs: List[Tensor[(1, 2, 5, 5), float32]]",
         "let %conv = fn (%x: Tensor[(1, 2, 5, 5), float32]) -> Tensor[(1, 3, 5, 5), float32] {"
         " nn.relu(nn.conv2d(%x, %w, padding=[1, 1], channels=3, kernel_size=[3, 3])) };\n"
         "@map(%conv, %xs)",
         lambda v: (CONV_W, v.list(CONV_XS)),
         [np.maximum(_conv2d(x, CONV_W, 1), 0) for x in CONV_XS]),
    Case("tensor_map_dense_zip_fold", "",
         "%w: Tensor[(2, 4), float32], %xs: List[Tensor[(1, 4), float32]]",
         "let %lin = fn (%x: Tensor[(1, 4), float32]) -> Tensor[(1, 2), float32] {"
         " nn.dense(%x, %w) };\n"
         "let %ys = @map(%lin, %xs);\n"
         "let %pairs = @zip(%xs, %ys);\n"
         "(%ys, @foldl(fn (%a: Tensor[(1, 2), float32], %y: Tensor[(1, 2), float32])"
         " -> Tensor[(1, 2), float32] { %a + %y }, @hd(%ys) * 0f, %ys),"
         " @nth(@map(fn (%p: (Tensor[(1, 4), float32], Tensor[(1, 2), float32])) -> float32 {"
         " sum(%p.0) + sum(%p.1) }, %pairs), 1))",
         lambda v: (DENSE_W, v.list(DENSE_XS)),
         ([x @ DENSE_W.T for x in DENSE_XS], sum(x @ DENSE_W.T for x in DENSE_XS),
          float(DENSE_XS[1].sum() + (DENSE_XS[1] @ DENSE_W.T).sum()))),
    Case("tensor_rnn_map_accuml", "",
         "%wx: Tensor[(3, 2), float32], %wh: Tensor[(3, 3), float32], "
         "%h0: Tensor[(1, 3), float32], "
         "%xs: List[Tensor[(1, 2), float32]]",
         "let %cell = fn (%h: Tensor[(1, 3), float32], %x: Tensor[(1, 2), float32])"
         " -> (Tensor[(1, 3), float32], Tensor[(1, 3), float32]) {"
         " let %h2 = tanh(add(nn.dense(%x, %wx), nn.dense(%h, %wh))); (%h2, %h2 * 2f) };\n"
         "@map_accuml(%cell, %h0, %xs)",
         lambda v: (RNN_WX, RNN_WH, RNN_H0, v.list(RNN_XS)),
         _rnn(RNN_H0, RNN_XS)),
    Case("tensor_filter_to_options", "", "%xs: List[Tensor[(3,), float32]]",
         "let %pos = @filter(fn (%t: Tensor[(3,), float32]) -> bool { sum(%t) > 0f }, %xs);\n"
         "let %opt = fn (%t: Tensor[(3,), float32]) -> Option[Tensor[(3,), float32]] {"
         " if (max(%t) > 2f) { Some(%t * %t) } else { None } };\n"
         "(@length(%pos), @map(%opt, %xs))",
         lambda v: (v.list([np.array(r, np.float32) for r in
                            ([1, 2, 3], [-5, 1, 1], [0.5, 0.5, 0.5], [3, -4, 0])]),),
         (2, [("Some", np.array([1, 4, 9])), ("None",), ("None",),
              ("Some", np.array([9, 16, 0]))])),
]

# ------------------------------------------- ADT and tuple inputs / outputs of main

IO = [
    Case("io_list_in_list_out", "", "%xs: List[int32]",
         "(@rev(%xs), @map(fn (%x: int32) -> float32 { cast(%x, dtype=\"float32\") * 0.5f }, %xs))",
         lambda v: (v.list([1, 2, 3]),), ([3, 2, 1], [0.5, 1.0, 1.5])),
    Case("io_nested_and_empty_lists", "", "%xss: List[List[int32]], %empty: List[float32]",
         "(@map(@sum, %xss), @foldr(@concat, Nil, %xss), @length(%empty), %empty, @rev(%empty))",
         lambda v: (v.list([v.list([1, 2]), v.list([]), v.list([3, 4, 5])]), v.list([])),
         ([3, 0, 12], [1, 2, 3, 4, 5], 0, [], [])),
    Case("io_empty_tensors_in_a_list", "",
         "%ts: List[Tensor[(0,), float32]], %m: Tensor[(2, 0), int32]",
         "(@map(fn (%t: Tensor[(0,), float32]) -> Tensor[(0,), float32] { %t * 2f }, %ts),"
         " Some(%m), @length(%ts))",
         lambda v: (v.list([np.zeros((0,), np.float32)] * 2), np.zeros((2, 0), np.int32)),
         ([np.zeros((0,)), np.zeros((0,))], ("Some", np.zeros((2, 0))), 2)),
    Case("io_tuple_in_tuple_out", "",
         "%p: (int32, Tensor[(2,), float32], (bool, float32))",
         "(%p.2.1, %p.1 * %p.2.1, if (%p.2.0) { %p.0 } else { 0 - %p.0 }, (%p.2, %p.0))",
         lambda v: ((val(7), np.array([1, -2], np.float32), (val(False), val(0.5))),),
         (0.5, np.array([0.5, -1]), -7, ((False, 0.5), 7))),
    Case("io_option_and_tree_in_and_out", "",
         "%o: Option[Tensor[(2,), float32]], %t: Tree[int32]",
         "(match (%o) { Some(%v) => Some(%v + 1f), None => None }, @size(%t),"
         " @tmap(fn (%x: int32) -> int32 { %x + 1 }, %t), %o)",
         lambda v: (v("Some", np.array([1, 2], np.float32)),
                    v("Rose", 1, v.list([v("Rose", 2, v.list([])), v("Rose", 3, v.list([]))]))),
         (("Some", np.array([2, 3])), 3, ("Rose", 2, [("Rose", 3, []), ("Rose", 4, [])]),
          ("Some", np.array([1, 2])))),
    Case("io_user_adt_in_and_out", """
type IoEx {
  IoNum(int32),
  IoAdd(IoEx, IoEx),
  IoMul(IoEx, IoEx),
  IoVar,
}
def @io_eval(%e: IoEx, %x: int32) -> int32 {
  match (%e) {
    IoNum(%n) => %n,
    IoAdd(%a, %b) => @io_eval(%a, %x) + @io_eval(%b, %x),
    IoMul(%a, %b) => @io_eval(%a, %x) * @io_eval(%b, %x),
    IoVar => %x,
  }
}
def @io_subst(%e: IoEx, %by: IoEx) -> IoEx {
  match (%e) {
    IoVar => %by,
    IoAdd(%a, %b) => IoAdd(@io_subst(%a, %by), @io_subst(%b, %by)),
    IoMul(%a, %b) => IoMul(@io_subst(%a, %by), @io_subst(%b, %by)),
    %n => %n,
  }
}""", "%e: IoEx, %x: int32",
         "(@io_eval(%e, %x), @io_subst(%e, IoNum(%x)), Cons(%e, Cons(IoVar, Nil)))",
         lambda v: (v("IoAdd", v("IoMul", v("IoNum", 3), v("IoVar")), v("IoNum", 1)), val(4)),
         (13, ("IoAdd", ("IoMul", ("IoNum", 3), ("IoNum", 4)), ("IoNum", 1)),
          [("IoAdd", ("IoMul", ("IoNum", 3), ("IoVar",)), ("IoNum", 1)), ("IoVar",)])),
    Case("io_list_of_tuples_with_options_and_nat", "",
         "%xs: List[(int32, Option[float32])], %n: nat",
         "(@map(fn (%p: (int32, Option[float32])) -> (float32, int32) {"
         " match (%p) { (%k, Some(%f)) => (%f, %k), (%k, None) => (0f, 0 - %k) } }, %xs),"
         " @nat_double(%n))",
         lambda v: (v.list([(1, v("Some", 2.5)), (2, v("None"))]),
                    v("succ", v("succ", v("zero")))),
         ([(2.5, 1), (0.0, -2)],
          ("succ", ("succ", ("succ", ("succ", ("zero",)))))))
]

# ------------------------------------------------------------- combinations

COMBOS = [
    Case("combo_stack_machine", """
type SmInstr {
  SmPush(int32),
  SmAdd,
  SmMul,
  SmDup,
  SmSwap,
}
def @sm_run(%prog: List[SmInstr], %stack: List[int32]) -> Option[List[int32]] {
  match (%prog, %stack) {
    (Nil, %s) => Some(%s),
    (Cons(SmPush(%v), %rest), %s) => @sm_run(%rest, Cons(%v, %s)),
    (Cons(SmAdd, %rest), Cons(%a, Cons(%b, %s))) => @sm_run(%rest, Cons(%a + %b, %s)),
    (Cons(SmMul, %rest), Cons(%a, Cons(%b, %s))) => @sm_run(%rest, Cons(%a * %b, %s)),
    (Cons(SmDup, %rest), Cons(%a, %s)) => @sm_run(%rest, Cons(%a, Cons(%a, %s))),
    (Cons(SmSwap, %rest), Cons(%a, Cons(%b, %s))) => @sm_run(%rest, Cons(%b, Cons(%a, %s))),
    _ => None,
  }
}""", "%prog: List[SmInstr]",
         "(@sm_run(%prog, Nil), @sm_run(Cons(SmAdd, Nil), Cons(1, Nil)),"
         " @sm_run(Cons(SmSwap, Cons(SmPush(5), Nil)), Cons(1, Cons(2, Nil))))",
         lambda v: (v.list([v("SmPush", 3), v("SmPush", 4), v("SmAdd"), v("SmDup"), v("SmMul")]),),
         (("Some", [49]), ("None",), ("Some", [5, 2, 1]))),
    Case("combo_tree_numbering_with_ref", "", "%k: int32",
         "let %c = ref(0);\n"
         "let %number = fn (%v: int32) -> (int32, int32) {"
         " ref_write(%c, ref_read(%c) + 1); (ref_read(%c), %v) };\n"
         "let %t = @tmap(%number, Rose(%k, Cons(Rose(20, Cons(Rose(30, Nil), Nil)),"
         " Cons(Rose(40, Nil), Nil))));\n"
         "(%t, ref_read(%c))",
         lambda v: (val(10),),
         (("Rose", (1, 10), [("Rose", (2, 20), [("Rose", (3, 30), [])]), ("Rose", (4, 40), [])]),
          4)),
    Case("combo_handlers_list_ref_iterate", "", "%n: int32",
         "let %state = ref((0, 1f));\n"
         "let %handlers = Cons(fn () -> () { let %s = ref_read(%state);"
         " ref_write(%state, (%s.0 + 1, %s.1)) },"
         " Cons(fn () -> () { let %s = ref_read(%state); ref_write(%state, (%s.0, %s.1 * 2f)) },"
         " Nil));\n"
         "let %run_all = fn (%u: ()) -> () {"
         " @foldl(fn (%acc: (), %h: fn () -> ()) -> () { %h() }, %u, %handlers) };\n"
         "@iterate(%run_all, %n)(());\n"
         "ref_read(%state)",
         lambda v: (val(5),), (5, 32.0)),
    Case("combo_insertion_sort_foldr", """
def @cs_insert(%x: int32, %xs: List[int32]) -> List[int32] {
  match (%xs) {
    Nil => Cons(%x, Nil),
    Cons(%h, %t) => if (%x <= %h) { Cons(%x, %xs) } else { Cons(%h, @cs_insert(%x, %t)) },
  }
}""", "%xs: List[int32]", "@foldr(@cs_insert, Nil, %xs)",
         lambda v: (v.list(XS),), sorted(XS)),
    Case("combo_unfoldr_tensors", "", "%v: Tensor[(2,), float32]",
         "let %gen = fn (%s: (int32, Tensor[(2,), float32]))"
         " -> Option[((int32, Tensor[(2,), float32]), Tensor[(2,), float32])] {"
         " if (%s.0 == 0) { None } else { Some(((%s.0 - 1, %s.1 * 2f), %s.1 + 1f)) } };\n"
         "let %xs = @unfoldr(%gen, (3, %v));\n"
         "(%xs, @foldl(fn (%a: float32, %t: Tensor[(2,), float32]) -> float32 { %a + sum(%t) },"
         " 0f, %xs))",
         lambda v: (np.array([1, 2], np.float32),),
         ([np.array([2, 3]), np.array([3, 5]), np.array([5, 9])], 27.0)),
]

# ------------------------------------------------------------------ edges

EDGES = [
    Case("edge_evaluation_order_of_effects", "", "%k: int32",
         "let %c = ref(0);\n"
         "let %tick = fn () -> int32 { ref_write(%c, ref_read(%c) + 1); ref_read(%c) * %k };\n"
         "let %pair = fn (%a: int32, %b: int32) -> int32 { %a * 100 + %b };\n"
         "let %a = %pair(%tick(), %tick());\n"
         "let %l = Cons(%tick(), Cons(%tick(), Nil));\n"
         "let %t = (%tick(), %tick());\n"
         "let %i = if (%tick() > 6) { %tick() } else { 0 - %tick() };\n"
         "let %m = match (Some(%tick())) { Some(%v) => %v * 1000 + %tick(), None => 0 };\n"
         "(%a, %l, %t, %i, %m, ref_read(%c))",
         lambda v: (val(1),), (102, [3, 4], (5, 6), 8, 9010, 10)),
    Case("edge_shadowing_and_capture", "", "%x: int32",
         "let %f = fn (%x: int32) -> int32 { %x + 1 };\n"
         "let %y = %x;\n"
         "let %x = 10;\n"
         "let %g = fn (%z: int32) -> int32 { %z + %x + %y };\n"
         "let %x = 1000;\n"
         "(%f(%x), %g(0), match (Some(%x)) { Some(%x) => %x + 1, None => %x },"
         " match ((%x, 5)) { (%y, %x) => %y - %x })",
         lambda v: (val(3),), (1001, 13, 1001, 995)),
    Case("edge_polymorphic_user_adt", """
type EdPair[A, B] {
  EdMk(A, B),
}
def @ed_swap[A, B](%p: EdPair[A, B]) -> EdPair[B, A] {
  match (%p) { EdMk(%a, %b) => EdMk(%b, %a) }
}
def @ed_first[A, B](%p: EdPair[A, B]) -> A {
  match (%p) { EdMk(%a, _) => %a }
}""", "%t: Tensor[(2,), float32]",
         "let %p = EdMk(1, %t);\n"
         "(@ed_swap(%p), @ed_first(@ed_swap(%p)), @ed_first(EdMk(Cons(True, Nil), 2i64)),"
         " @ed_swap(EdMk(Some(1f), (2, 3))))",
         lambda v: (np.array([1.5, -1], np.float32),),
         (("EdMk", np.array([1.5, -1]), 1), np.array([1.5, -1]), [True],
          ("EdMk", (2, 3), ("Some", 1.0)))),
    Case("edge_local_polymorphism_and_polymorphic_globals_as_values", "",
         "%t: Tensor[(2,), float32]",
         "let %pair = fn [A](%x: A) -> (A, A) { (%x, %x) };\n"
         "(%pair(1), %pair(Cons(%t, Nil)), @map(@id, Cons(1, Nil)), @id(@id)(2f),"
         " @map(@length, Cons(Cons(1, Nil), Cons(Nil, Nil))),"
         " @iterate(fn (%v: Tensor[(2,), float32]) -> Tensor[(2,), float32] { %v * %t }, 3)(%t))",
         lambda v: (np.array([2, -1], np.float32),),
         ((1, 1), ([np.array([2, -1])], [np.array([2, -1])]), [1], 2.0, [1, 0],
          np.array([16, 1]))),
    Case("edge_constructors_as_values", "", "%xs: List[int32]",
         "(@map(Some, %xs), @foldr(Cons, Nil, %xs), @zip(@map(Some, %xs), %xs))",
         lambda v: (v.list([4, -2, 9]),),
         ([("Some", 4), ("Some", -2), ("Some", 9)], [4, -2, 9],
          [(("Some", 4), 4), (("Some", -2), -2), (("Some", 9), 9)])),
    Case("edge_many_captures_and_params", "",
         "%a: int32, %b: int32, %c: float32, %t: Tensor[(2, 2), float32], %xs: List[int32]",
         "let %d = %a * 2;\nlet %e = %b + %d;\nlet %o = Some(%c);\nlet %p = (%a, %t);\n"
         "let %f = fn (%u1: int32, %u2: int32, %u3: float32, %u4: Tensor[(2, 2), float32],"
         " %u5: bool, %u6: List[int32], %u7: (int32, int32), %u8: Option[int32]) -> float32 {"
         " let %s = %a + %b + %d + %e + %u1 + %u2 + @sum(%xs) + @sum(%u6) + %u7.0 + %u7.1 + %p.0;"
         " let %m = match (%o) { Some(%v) => %v, None => 0f };"
         " let %n = match (%u8) { Some(%v) => %v, None => 0 };"
         " let %r = cast(%s + %n, dtype=\"float32\") * %m + sum(%t) + sum(%u4) + %u3 + sum(%p.1);"
         " if (%u5) { %r } else { 0f - %r } };\n"
         "(%f(1, 2, 0.5f, %t * 2f, True, Cons(5, Nil), (6, 7), Some(8)),"
         " %f(0, 0, 0f, %t, False, Nil, (0, 0), None))",
         lambda v: (val(1), val(2), val(0.5), np.array([[1, 2], [3, 4]], np.float32),
                    v.list([10, 20])),
         ((1 + 2 + 2 + 4 + 1 + 2 + 30 + 5 + 6 + 7 + 1 + 8) * 0.5 + 10 + 20 + 0.5 + 10,
          -((1 + 2 + 2 + 4 + 30 + 1) * 0.5 + 10 + 10 + 10))),
    Case("edge_nested_closures_four_levels", "", "%a: int32",
         "let %f = fn (%b: int32) -> fn (int32) -> fn (int32) -> int32 {"
         " let %ab = %a * %b;"
         " fn (%c: int32) -> fn (int32) -> int32 {"
         "  let %abc = %ab + %c;"
         "  fn (%d: int32) -> int32 { %abc * %d + %a + %b + %c } } };\n"
         "let %g = %f(2);\nlet %h = %g(3);\n"
         "(%h(4), %g(5)(6), %f(0)(0)(0), @map(%h, Cons(0, Cons(1, Nil))))",
         lambda v: (val(10),), ((20 + 3) * 4 + 15, (20 + 5) * 6 + 17, 10, [15, 38])),
    Case("edge_match_on_temporaries_and_sharing", """
def @es_mk(%n: int32) -> List[Option[Tensor[(2,), float32]]] {
  if (%n == 0) { Nil } else {
    Cons(if (%n > 1) { Some(full(cast(%n, dtype="float32"), shape=(2,), dtype="float32")) }
         else { None }, @es_mk(%n - 1))
  }
}""", "%n: int32",
         "let %shared = @es_mk(%n);\n"
         "let %first = match (@es_mk(%n)) { Cons(Some(%t), _) => %t, _ => full(0f, shape=(2,),"
         " dtype=\"float32\") };\n"
         "let %count = match (%shared) { Cons(_, Cons(Some(_), %rest)) => @length(%rest),"
         " _ => -1 };\n"
         "(%first, %count, %shared, @length(%shared), (%shared, %shared))",
         lambda v: (val(3),),
         (np.array([3, 3]), 1, [("Some", np.array([3, 3])), ("Some", np.array([2, 2])), ("None",)],
          3, ([("Some", np.array([3, 3])), ("Some", np.array([2, 2])), ("None",)],
              [("Some", np.array([3, 3])), ("Some", np.array([2, 2])), ("None",)]))),
    Case("edge_dtypes_inside_adts", "",
         "%xs: List[Tensor[(2,), int8]], %o: Option[float64], %p: (bool, Tensor[(2, 2), uint8])",
         "(@map(fn (%x: Tensor[(2,), int8]) -> Tensor[(2,), int8] { %x * 2i8 }, %xs),"
         " match (%o) { Some(%d) => Some(%d * 2f64), None => None },"
         " (logical_not(%p.0), %p.1 + 1u8), Cons(3i64, Cons(-4i64, Nil)), Some(Some(False)))",
         lambda v: (v.list([np.array([1, -3], np.int8), np.array([60, 0], np.int8)]),
                    v("Some", np.asarray(1.25, np.float64)),
                    (val(True), np.array([[0, 254], [7, 8]], np.uint8))),
         ([np.array([2, -6]), np.array([120, 0])], ("Some", 2.5),
          (False, np.array([[1, 255], [8, 9]])), [3, -4], ("Some", ("Some", False)))),
]

# Operators as function values, a pack of their own (a pack that does not
# compile costs a build per case).
OPERATOR_VALUES = [
    Case("operators_as_values", "", "%xs: List[int32]",
         "let %plus = add;\n"
         "(@foldl(add, 0, %xs), @foldl(maximum, -100, %xs), %plus(1, 2),"
         " @map(fn (%x: int32) -> int32 { negative(%x) }, %xs))",
         lambda v: (v.list([4, -2, 9]),), (11, 9, 3, [-4, 2, -9])),
]

PACKS = {
    "control": CONTROL,
    "adts": ADTS,
    "closures": CLOSURES,
    "hof": HOF,
    "recursion": RECURSION,
    "refs": REFS,
    "tensors": TENSORS,
    "io": IO,
    "combos": COMBOS,
    "edges": EDGES,
    "opvalues": OPERATOR_VALUES,
}
ITEMS = [(pack, i) for pack, cases in PACKS.items() for i in range(len(cases))]
IDS = [f"{pack}-{PACKS[pack][i].name}" for pack, i in ITEMS]


def test_case_names_are_unique():
    names = [c.name for cases in PACKS.values() for c in cases]
    assert len(names) == len(set(names))


@pytest.mark.parametrize("pack, index", ITEMS, ids=IDS)
def test_interpreter(pack: str, index: int) -> None:
    case = PACKS[pack][index]
    got = to_py(interpreted(tuple(PACKS[pack])).want[index])
    assert same(got, case.want), f"{case.name}: interpreter {got!r}, expected {case.want!r}"


@pytest.mark.parametrize("pack", list(PACKS))
def test_pack_compiles_and_runs(pack: str) -> None:
    """The packed module as a whole (its cases are checked one by one in
    ``test_c``, alone if the pack fails)."""
    run = compiled(tuple(PACKS[pack]), pack)
    assert run.error is None, f"pack {pack}: {run.error}"


@pytest.mark.parametrize("pack, index", ITEMS, ids=IDS)
def test_c(pack: str, index: int) -> None:
    case = PACKS[pack][index]
    run = compiled(tuple(PACKS[pack]), pack)
    if run.error is None:
        got, want, in_use = run.got[index], run.want[index], run.pool_in_use
    else:                                       # find out whether this case is the culprit
        alone = interpreted((case,))
        fn = compile_and_load(alone.mod, name=c_name(case.name))
        got, want, in_use = fn(*alone.args)[0], alone.want[0], fn.pool_in_use()
    assert_values_match(got, want, case.name)
    assert in_use == 0, f"{case.name}: {in_use} bytes of the pool still in use after the call"


# ====================================================== run-time bounds

INCOMPLETE = HEADER + """
def @mi_pairs(%xs: List[int32]) -> List[int32] {
  match? (%xs) {
    Cons(%a, Cons(%b, %rest)) => Cons(%a * %b, @mi_pairs(%rest)),
    Nil => Nil,
  }
}
def @main(%xs: List[int32], %os: List[Option[int32]]) -> (List[int32], int32, List[int32]) {
  let %ps = @mi_pairs(%xs);
  let %keep = ref(%ps);
  let %get = fn (%o: Option[int32]) -> int32 {
    match? (%o) { Some(%v) => %v + @hd(ref_read(%keep)) }
  };
  (%ps, @length(%ps), @map(%get, %os))
}
"""

DEEP = HEADER + """
def @dp_depth(%n: int32) -> int32 {
  if (%n == 0) { 0 } else { 1 + @dp_depth(%n - 1) }
}
def @dp_upto(%i: int32, %n: int32) -> List[int32] {
  if (%i >= %n) { Nil } else { Cons(%i, @dp_upto(%i + 1, %n)) }
}
def @dp_loop(%n: int32, %acc: int32) -> int32 {
  if (%n == 0) { %acc } else { @dp_loop(%n - 1, %acc + 2) }
}
def @main(%mode: int32, %n: int32) -> int32 {
  let %down = fn (%k: int32) -> int32 { if (%k == 0) { 0 } else { 3 + %down(%k - 1) } };
  if (%mode == 0) { @dp_depth(%n) } else {
    if (%mode == 1) { @length(@dp_upto(0, %n)) } else {
      if (%mode == 2) { @dp_loop(%n, 0) } else {
        @sum(@map(%down, Cons(1, Cons(%n, Nil))))
      }
    }
  }
}
"""

LONG_LIST = HEADER + """
def @pl_build(%n: int32, %acc: List[int32]) -> List[int32] {
  if (%n == 0) { %acc } else { @pl_build(%n - 1, Cons(%n, %acc)) }
}
def @pl_upto(%i: int32, %n: int32) -> List[int32] {
  if (%i >= %n) { Nil } else { Cons(%i, @pl_upto(%i + 1, %n)) }
}
def @main(%mode: int32, %n: int32, %xs: List[int32]) -> List[int32] {
  if (%mode == 0) { @pl_build(%n, Nil) } else {
    if (%mode == 1) { @pl_upto(0, %n) } else { @rev(%xs) }
  }
}
"""

def _ints(mod: IRModule, items: list[int]) -> ConstructorValue:
    return Values(mod).list(items)


TAIL_LOOP = HEADER + """
def @rt_count(%n: int32, %acc: int32) -> int32 {
  if (%n == 0) { %acc } else { @rt_count(%n - 1, %acc + 3) }
}
def @main(%n: int32) -> int32 { @rt_count(%n, 0) }
"""


def test_self_tail_loop_of_100000_iterations() -> None:
    """With the default max_depth (10,000) a self tail call must be a loop.
    (The interpreter takes seconds for 100,000 steps: it checks 1000, the
    C result for 100,000 is 3n by hand.)"""
    mod = aot.parse(TAIL_LOOP)
    fn = compile_and_load(mod, name="tailloop")
    assert_values_match(_call(fn, val(1000)), aot.interpret(mod, val(1000)), "1000 steps")
    assert to_py(_call(fn, val(100_000))) == 300_000


def test_bound_programs_in_the_interpreter() -> None:
    """The programs of the bound tests mean what those tests assume."""
    mod = aot.parse(INCOMPLETE)
    v = Values(mod)
    os_ = v.list([v("Some", 1), v("Some", 5)])
    assert to_py(aot.interpret(mod, v.list([1, 2, 3, 4]), os_)) == ([2, 12], 2, [3, 7])
    for xs, os_ in [([1, 2, 3], v.list([])), ([1, 2], v.list([v("Some", 1), v("None")])),
                    ([], v.list([v("Some", 1)]))]:
        with pytest.raises(aot.DiagnosticError, match="no clause"):
            aot.interpret(mod, v.list(xs), os_)
    mod = aot.parse(DEEP)
    assert [to_py(aot.interpret(mod, val(m), val(n))) for m, n in
            [(0, 40), (1, 40), (2, 1000), (0, 1000), (3, 40), (3, 1000)]] == \
        [40, 40, 2000, 1000, 123, 3003]
    mod = aot.parse(LONG_LIST)
    nil = Values(mod).list([])
    assert [to_py(aot.interpret(mod, val(m), val(3), nil)) for m in (0, 1)] == \
        [[1, 2, 3], [0, 1, 2]]
    assert to_py(aot.interpret(mod, val(2), val(0), Values(mod).list([1, 2, 3]))) == [3, 2, 1]


def _call(fn: Any, *args: Any) -> Any:
    got = fn(*args)
    assert fn.pool_in_use() == 0, f"{fn.pool_in_use()} bytes of the pool in use after the call"
    return got


def test_incomplete_match_reaching_no_clause() -> None:
    mod = aot.parse(INCOMPLETE)
    v = Values(mod)
    fn = compile_and_load(mod, name="incomplete")

    def check(xs: list[int], os_: ConstructorValue, what: str) -> None:
        args = (v.list(xs), os_)
        assert_values_match(_call(fn, *args), aot.interpret(mod, *args), what)

    check([1, 2, 3, 4, 5, 6], v.list([v("Some", 1)]), "even list")
    for xs, os_, what in [([1, 2, 3, 4, 5], v.list([]), "three frames deep, cells live"),
                          ([7], v.list([]), "at once"),
                          ([1, 2], v.list([v("Some", 1), v("None")]), "in a closure under @map"),
                          ([], v.list([v("Some", 1)]), "@hd(Nil) in the prelude")]:
        with pytest.raises(aot.DiagnosticError, match="no clause matched"):
            fn(v.list(xs), os_)
        check([5, 6], v.list([v("Some", 2)]), f"a call after the error {what}")
    check([], v.list([]), "Nil")


def test_recursion_deeper_than_max_depth() -> None:
    mod = aot.parse(DEEP)
    fn = compile_and_load(mod, name="deep", max_depth=100)
    for mode, n in [(0, 40), (1, 40), (3, 40)]:
        assert_values_match(_call(fn, val(mode), val(n)), aot.interpret(mod, val(mode), val(n)),
                            f"mode {mode}, n={n}")
    # a self tail call is a loop: 100,000 iterations under max_depth=100
    assert_values_match(_call(fn, val(2), val(100_000)), np.asarray(200_000, np.int32),
                        "tail loop of 100000 under max_depth=100")
    # 1000 frames deep: scalar, list-building, a let-bound closure under @map
    for mode in (0, 1, 3):
        with pytest.raises(aot.DiagnosticError, match="recursion deeper than"):
            fn(val(mode), val(1000))
        assert_values_match(_call(fn, val(mode), val(60)), aot.interpret(mod, val(mode), val(60)),
                            f"mode {mode} after the error")


def test_pool_exhausted() -> None:
    mod = aot.parse(LONG_LIST)
    v = Values(mod)
    fn = compile_and_load(mod, name="tinypool", pool_bytes=1024)
    nil = v.list([])

    def check(mode: int, n: int, xs: ConstructorValue, what: str) -> None:
        args = (val(mode), val(n), xs)
        assert_values_match(_call(fn, *args), aot.interpret(mod, *args), what)

    for mode, n, xs, what in [(0, 10_000, nil, "tail loop building a long list"),
                              (1, 10_000, nil, "non-tail recursion building a long list"),
                              (2, 0, v.list(range(1000)), "an input list larger than the pool")]:
        with pytest.raises(aot.DiagnosticError, match="pool exhausted"):
            fn(val(mode), val(n), xs)
        check(mode, 3, v.list([1, 2, 3]), f"a small call after: {what}")
    check(0, 0, nil, "Nil")


# ====================================================== leaks

LOOP_ALLOCATING = HEADER + """
def @lk_adder(%k: int32) -> fn (int32) -> int32 {
  fn (%v: int32) -> int32 { %v + %k }
}
def @lk_loop(%n: int32, %acc: int32, %x: Tensor[(4,), float32],
             %hold: Ref[fn (Tensor[(4,), float32]) -> Tensor[(4,), float32]])
    -> (int32, Tensor[(4,), float32]) {
  if (%n == 0) { (%acc, ref_read(%hold)(%x)) } else {
    let %xs = Cons(%n, Cons(%acc, Cons(1, Nil)));
    let %s = match (%xs) { Cons(%a, Cons(%b, %rest)) => %a - %b + @length(%rest), _ => 0 };
    let %f = fn (%y: Tensor[(4,), float32]) -> Tensor[(4,), float32] { %y * 0.5f + %x };
    ref_write(%hold, %f);
    let %r = ref(%f(%x));
    ref_write(%r, ref_read(%r) * 0.5f);
    let %o = if (%s > 0) { Some((%s, ref_read(%r))) } else { None };
    let %y = match (%o) { Some((_, %v)) => %v + 1f, None => %x };
    let %g = @lk_adder(%s);
    @lk_loop(%n - 1, %g(%acc) - %s + 1, %y, %hold)
  }
}
def @main(%n: int32, %x: Tensor[(4,), float32]) -> (int32, Tensor[(4,), float32]) {
  @lk_loop(%n, 0, %x, ref(fn (%y: Tensor[(4,), float32]) -> Tensor[(4,), float32] { %y }))
}
"""


def test_a_loop_allocating_every_kind_of_object_does_not_leak() -> None:
    """Each iteration of a self-tail loop allocates list cells, a closure
    capturing a tensor (stored into a ref, releasing the previous one), a
    ref, a tuple, an option and a partial application, then drops them.
    The pool's high-water mark must not grow with the number of
    iterations, and 2000 iterations fit a 32 KiB pool."""
    mod = aot.parse(LOOP_ALLOCATING)
    fn = compile_and_load(mod, name="leaks", pool_bytes=32768)
    x = np.array([1, -2, 0.5, 8], np.float32)
    assert_values_match(_call(fn, val(10), x), aot.interpret(mod, val(10), x), "10 iterations")
    short = fn.pool_high_water()
    assert_values_match(_call(fn, val(2000), x), aot.interpret(mod, val(2000), x),
                        "2000 iterations")
    assert fn.pool_high_water() <= short + 512, (
        f"high water {short} bytes after 10 iterations, {fn.pool_high_water()} after 2000")


KNOT = HEADER + """
def @main(%n: int32) -> int32 {
  let %r = ref(fn (%x: int32) -> int32 { %x });
  ref_write(%r, fn (%x: int32) -> int32 { if (%x == 0) { 0 } else { ref_read(%r)(%x - 1) + 2 } });
  ref_read(%r)(%n)
}
"""


def test_a_ref_cycle_is_reclaimed() -> None:
    """Landin's knot: a ref holding a closure that captures the ref (a
    cycle reference counting alone does not free).  The contract is an
    empty pool after every call, so repeated calls cannot run it dry."""
    mod = aot.parse(KNOT)
    assert to_py(aot.interpret(mod, val(5))) == 10
    fn = compile_and_load(mod, name="knot", pool_bytes=4096)
    for _ in range(3):
        assert_values_match(_call(fn, val(5)), np.asarray(10, np.int32), "knot")


LONG_IO = HEADER + """
def @main(%xs: List[int32], %n: nat) -> (List[int32], int32, int32, nat, fn (int32) -> int32) {
  (@rev(%xs), @sum(%xs), @length(%xs), @nat_double(%n), fn (%x: int32) -> int32 { %x + 1 })
}
"""


def test_long_and_deep_values_in_and_out() -> None:
    """A 9000-element list and a 3000-deep nat cross the boundary both ways
    (the conversions must not recurse); @length recurses 9000 frames deep
    (under the default max_depth of 10,000, and under a stack budget of
    6 MiB: the default 64 KiB stops at about 1,000 frames, 300 under
    AddressSanitizer, and the main thread has 8 MiB); a closure comes back as an opaque object and leaves
    nothing in the pool."""
    mod = aot.parse(LONG_IO)
    v = Values(mod)
    xs = v.list(list(range(9000)))
    n = v("zero")
    for _ in range(3000):
        n = v("succ", n)
    fn = compile_and_load(mod, name="longio", pool_bytes=1 << 22, stack_bytes=6 << 20)
    got = _call(fn, xs, n)
    assert not isinstance(got[4], (np.ndarray, tuple, ConstructorValue)), got[4]
    assert_values_match(got[:4], aot.interpret(mod, xs, n)[:4], "long values")
    assert to_py(got[1:3]) == (9000 * 8999 // 2, 9000)


def test_unused_parameter_named_like_a_prefix_of_a_used_one() -> None:
    """%a1 unused, %a10 used: the unused-parameter check must not take the
    text ``a10`` for a use of ``a1`` (gcc -Werror=unused-variable)."""
    params = ", ".join(f"%a{i}: int32" for i in range(11))
    mod = aot.parse(f"def @main({params}) -> int32 {{ if (%a10 > 0) {{ %a0 }} else {{ %a2 }} }}")
    fn = compile_and_load(mod, "unused")
    args = [np.array(i, dtype="int32") for i in range(11)]
    assert int(fn(*args)) == 0
    args[10] = np.array(-1, dtype="int32")
    assert int(fn(*args)) == 2
