"""aot.ir.analysis: TVM's test_pass_vars cases (free, bound and all
variables and type variables, in Relay's order) and ours: constructors'
type parameters, global references, local recursion, deep inputs."""

from __future__ import annotations

import numpy as np

from aot import builder as B
from aot.ir.adt import Clause, PatternConstructor, PatternVar, PatternWildcard
from aot.ir.analysis import (all_type_vars, all_vars, bound_type_vars, bound_vars, free_type_vars,
                             free_vars, global_refs, let_function_refs, recursive_lets)
from aot.ir.expr import Call, Constant, Function, GlobalVar, Let, Match, Tuple, TupleGetItem, Var
from aot.ir.module import IRModule
from aot.ir.dtype import DType
from aot.ir.types import FuncType, TensorType, TupleType, TypeCall, TypeVar

I32 = TensorType((), DType.INT32)
UNIT = Tuple(())

List = B.adt("List", ["A"], lambda L, A: [("Cons", [A, L[A]]), ("Nil", [])])
Cons, Nil = List.Cons, List.Nil


# ------------------------------------------------------------ variables

def test_free_vars() -> None:
    x = Var("x", I32)
    assert free_vars(x) == [x]
    let = Let(x, Constant(np.asarray(10, np.int32)), x)
    assert free_vars(let) == []
    assert free_vars(Function((x,), x, I32)) == []


def test_free_vars_tuple() -> None:
    t = Var("t")
    assert free_vars(Tuple((t, t))) == [t]
    assert free_vars(TupleGetItem(t, 123)) == [t]


def test_bound_vars() -> None:
    x, y, z, a = Var("x"), Var("y"), Var("z"), Var("a")
    f1 = Function((x, y, z), Let(a, x, UNIT))
    assert bound_vars(f1) == [x, y, z, a]
    assert bound_vars(Tuple((x, y, z, a))) == []
    f2 = Function((x, y), Tuple((x, y, z, a)))
    assert bound_vars(f2) == [x, y]


def test_match_vars() -> None:
    x, y, z = Var("x"), Var("y"), Var("z")
    nil = Call(Nil, ())
    match1 = Match(nil, (
        Clause(PatternConstructor(Nil), z),
        Clause(PatternConstructor(Cons, (PatternVar(x), PatternVar(y))), Call(Cons, (x, y))),
    ))
    match2 = Match(nil, (
        Clause(PatternConstructor(Cons, (PatternWildcard(), PatternVar(x))), y),
        Clause(PatternWildcard(), z),
    ))
    assert bound_vars(match1) == [x, y]
    assert free_vars(match1) == [z]
    assert all_vars(match1) == [z, x, y]
    assert bound_vars(match2) == [x]
    assert free_vars(match2) == [y, z]
    assert all_vars(match2) == [x, y, z]


def test_all_vars() -> None:
    x, y, z = Var("x"), Var("y"), Var("z")
    assert all_vars(Function((x, y), z)) == [x, y, z]
    assert all_vars(Function((x,), Let(y, UNIT, z))) == [x, y, z]
    assert all_vars(Function((x,), Tuple((y, z)))) == [x, y, z]
    assert all_vars(Tuple((x, y, z))) == [x, y, z]


def test_shared_nodes_count_once() -> None:
    x, y = Var("x"), Var("y")
    shared = B.add(x, y)
    e = Tuple((shared, shared))
    assert free_vars(e) == [x, y]
    assert all_vars(e) == [x, y]


# ------------------------------------------------------------ type variables

def test_free_type_vars() -> None:
    tp = TypeVar("")
    x, y = Var("x", TupleType((tp, I32))), Var("y")
    let = Let(x, y, x)
    assert free_vars(let) == [y]
    assert free_type_vars(let) == [tp]


def test_bound_type_vars() -> None:
    a, b, c = TypeVar("a"), TypeVar("b"), TypeVar("c")
    assert bound_type_vars(FuncType((a,), b, (a, b))) == [a, b]
    assert bound_type_vars(FuncType((), c, (a,))) == [a]
    assert bound_type_vars(TupleType((a, b, c))) == []
    assert bound_type_vars(Function((), UNIT, type_params=(a, b))) == [a, b]
    assert bound_type_vars(Function((), UNIT, c)) == []
    x = Var("x", a)
    assert bound_type_vars(Let(x, UNIT, x)) == []
    assert bound_type_vars(Let(x, Function((), UNIT, type_params=(b, c)), x)) == [b, c]


def test_all_type_vars() -> None:
    a, b, c = TypeVar("a"), TypeVar("b"), TypeVar("c")
    assert all_type_vars(FuncType((b,), c, (a,))) == [a, b, c]
    assert all_type_vars(FuncType((), TupleType((a, b, c)))) == [a, b, c]
    w, x, y, z = Var("w"), Var("x", a), Var("y", b), Var("z", c)
    assert all_type_vars(Function((x,), y, b, (a,))) == [a, b]
    assert all_type_vars(Function((x,), Let(y, x, z))) == [a, b, c]
    assert all_type_vars(Function((), Tuple((x, y, z)), TupleType((a, b, c)))) == [a, b, c]
    assert all_type_vars(Function((w,), UNIT, type_params=(a, b, c))) == [a, b, c]
    assert all_type_vars(Function((w,), w)) == []


def test_type_var_order_follows_relay() -> None:
    """Type parameters, then parameter annotations, then the return type;
    a call's type arguments before its arguments."""
    a, b, c, d = TypeVar("a"), TypeVar("b"), TypeVar("c"), TypeVar("d")
    x, y = Var("x", c), Var("y", d)
    f = Function((x,), Call(x, (y,), type_args=(b,)), b, (a,))
    assert all_type_vars(f) == [a, c, b, d]
    assert free_type_vars(f) == [c, b, d]


def test_constructor_type_params_are_bound_given_the_module() -> None:
    mod = IRModule()
    mod.add_type(List.data)
    (A,) = List.data.type_vars
    e = Call(Cons, (Var("h", A), Call(Nil, ())))
    assert free_type_vars(e) == [A]
    assert bound_type_vars(e, mod) == [A] and free_type_vars(e, mod) == []
    assert all_type_vars(e, mod) == [A]


def test_nested_function_types_bind() -> None:
    a, b = TypeVar("a"), TypeVar("b")
    t = TupleType((FuncType((a,), a, (a,)), b))
    assert bound_type_vars(t) == [a]
    assert free_type_vars(t) == [b]
    assert all_type_vars(TypeCall(List.data.header, (b,))) == [b]


# ------------------------------------------------------------ globals, recursion

def test_global_refs() -> None:
    f, g = GlobalVar("f"), GlobalVar("g")
    x = Var("x")
    e = Tuple((Call(f, (x,)), Call(g, (Call(f, (x,)),))))
    assert global_refs(e) == [f, g]


def _local_recursion():
    f, i = Var("f"), Var("i", I32)
    body = Call(f, (i,))
    fn = Function((i,), body)
    return f, fn, body, Let(f, fn, Call(f, (Constant(np.asarray(1, np.int32)),)))


def test_recursive_lets() -> None:
    f, fn, body, let = _local_recursion()
    assert recursive_lets(let) == [let]
    g, j = Var("g"), Var("j")
    plain = Let(g, Function((j,), j), Call(g, (UNIT,)))
    assert recursive_lets(plain) == []
    # a non-function value referring to its own variable is ill formed,
    # not recursion: it is not reported
    h = Var("h")
    assert recursive_lets(Let(h, Tuple((h,)), h)) == []


def test_let_function_refs() -> None:
    f, fn, body, let = _local_recursion()
    refs = let_function_refs(let)
    assert refs[body] == frozenset({f}) and refs[fn] == frozenset({f})
    assert let not in refs          # the let binds f: no reference escapes it
    assert refs[let.body] == frozenset({f})


def test_ten_thousand_deep_let_chain() -> None:
    n = 10_000
    x = Var("x", I32)
    vars_ = [x] + [Var(f"v{k}") for k in range(n)]
    body: Let | Call = Call(vars_[n], ())
    for k in range(n, 0, -1):
        body = Let(vars_[k], Function((), vars_[k - 1]), body)
    assert free_vars(body) == [x]
    assert len(bound_vars(body)) == n and len(all_vars(body)) == n + 1
    assert recursive_lets(body) == []
    assert free_type_vars(body) == []
