"""Structural equality is alpha-equivalence; the hash agrees with it."""

from __future__ import annotations

import numpy as np

from aot.ir import (Call, Constructor, Function, GlobalTypeVar, Let, Match, Tuple, TypeCall,
                    TypeVar, Var, const, op)
from aot.ir.adt import Clause, PatternConstructor, PatternVar, PatternWildcard
from aot.ir.structural import structural_equal, structural_hash
from aot.ir.types import FuncType, TensorType
from aot.ir.dtype import DType


def test_alpha_equivalent_functions():
    x, y = Var("x"), Var("y")
    f = Function((x,), Call(op("add"), (x, x)))
    g = Function((y,), Call(op("add"), (y, y)))
    assert structural_equal(f, g)
    assert structural_hash(f) == structural_hash(g)


def test_bijection_required():
    x1, x2, y = Var("a"), Var("b"), Var("c")
    f = Function((x1, x2), Tuple((x1, x2)))
    g = Function((y, Var("d")), Tuple((y, y)))
    assert not structural_equal(f, g)


def test_free_vars_need_identity_unless_mapped():
    a, b = Var("a"), Var("b")
    assert not structural_equal(Tuple((a,)), Tuple((b,)))
    assert structural_equal(Tuple((a,)), Tuple((b,)), map_free_vars=True)


def test_constants_bitwise():
    assert structural_equal(const(np.float32("nan")), const(np.float32("nan")))
    assert not structural_equal(const(1.0), const(1.0, "float64"))
    assert not structural_equal(const(0.0), const(-0.0))


def test_sharing_is_ignored():
    x = Var("x")
    s = Call(op("negative"), (x,))
    assert structural_equal(Function((x,), Tuple((s, s))),
                            Function((x,), Tuple((Call(op("negative"), (x,)),
                                                  Call(op("negative"), (x,))))))


def test_let_and_match_bind():
    L = GlobalTypeVar("L")
    A = TypeVar("A")
    c = Constructor("C", (A,), L, 0)
    def make():
        v, h = Var("v"), Var("h")
        return Let(v, const(1), Match(Call(c, (v,)), (
            Clause(PatternConstructor(c, (PatternVar(h),)), h),
            Clause(PatternWildcard(), v))))
    assert structural_equal(make(), make())


def test_type_alpha_equivalence():
    A, B = TypeVar("A"), TypeVar("B")
    t1 = FuncType((A,), A, (A,))
    t2 = FuncType((B,), B, (B,))
    assert structural_equal(t1, t2)
    assert not structural_equal(FuncType((A,), A, (A,)),
                                FuncType((B,), TensorType((), DType.INT32), (B,)))
    assert structural_equal(TypeCall(GlobalTypeVar("L"), ()), TypeCall(GlobalTypeVar("L"), ()))
