"""repr of expression nodes: one level, never recursive (error messages and
pytest's failure output call it on arbitrarily deep expressions)."""

from __future__ import annotations

import pytest

from aot.ir import (Call, Clause, Constructor, Function, GlobalTypeVar, GlobalVar, If, Let,
                    Match, PatternWildcard, RefCreate, RefRead, RefWrite, Tuple, TupleGetItem,
                    Var, const, op)

X = Var("x")
CONV = Call(op("nn.conv2d"), (X, const(1.0)))
NIL = Constructor("Nil", (), GlobalTypeVar("List"), 1)

TABLE = [
    (X, "Var(%x)"),
    (GlobalVar("f"), "GlobalVar(@f)"),
    (const(1.0), "Constant(float32[])"),
    (op("add"), "Op(add)"),
    (NIL, "Constructor(Nil)"),
    (CONV, "Call(Op(nn.conv2d), 2 args)"),
    (Call(GlobalVar("f"), (X,)), "Call(GlobalVar(@f), 1 arg)"),
    (Call(NIL, ()), "Call(Constructor(Nil), 0 args)"),
    (Call(Function((X,), X), (const(1),)), "Call(Function, 1 arg)"),
    (Tuple((X, CONV, CONV)), "Tuple(3 fields)"),
    (Tuple((X,)), "Tuple(1 field)"),
    (TupleGetItem(Tuple((X,)), 0), "TupleGetItem(Tuple, 0)"),
    (TupleGetItem(X, 2), "TupleGetItem(Var(%x), 2)"),
    (Function((X, Var("y")), CONV), "Function(%x, %y)"),
    (Let(X, CONV, X), "Let(%x, Call)"),
    (If(X, CONV, X), "If(Var(%x))"),
    (Match(CONV, (Clause(PatternWildcard(), X),)), "Match(Call, 1 clause)"),
    (Match(X, (), complete=False), "Match?(Var(%x), 0 clauses)"),
    (RefCreate(CONV), "RefCreate(Call)"),
    (RefRead(X), "RefRead(Var(%x))"),
    (RefWrite(X, CONV), "RefWrite(Var(%x), Call)"),
]


@pytest.mark.parametrize("expr, text", TABLE, ids=[t for _, t in TABLE])
def test_repr_shows_one_level(expr, text):
    assert repr(expr) == text
    assert f"{expr!r}" == text


def _deep(kind: str, n: int):
    e = X
    for _ in range(n):
        if kind == "call":
            e = Call(op("negative"), (e,))
        elif kind == "tuple":
            e = TupleGetItem(Tuple((e, X)), 0)
        elif kind == "let":
            e = Let(Var("y"), e, X)
        elif kind == "fn":
            e = Function((), e)
        elif kind == "if":
            e = If(X, e, X)
        else:
            e = RefRead(RefCreate(e))
    return e


@pytest.mark.parametrize("kind", ["call", "tuple", "let", "fn", "if", "ref"])
def test_repr_of_a_ten_thousand_deep_expression(kind):
    e = _deep(kind, 10_000)
    assert len(repr(e)) < 40
    assert len(repr([e, e])) < 80  # containers of nodes too
