"""Runtime values: printing, structural equality, types, deep lists."""

from __future__ import annotations

import numpy as np
import pytest

from aot import builder as B
from aot.ir.dtype import DType
from aot.ir.types import TensorType, TupleType
from aot.values import (Closure, ConstructorFunction, ConstructorValue, RefValue,
                        format_scalar, format_value, list_items, make_list, value_type,
                        values_equal)

List = B.adt("List", ["A"], lambda L, A: [("Cons", [A, L[A]]), ("Nil", [])])
Pair = B.adt("Pair", ["A", "B"], lambda P, A, B_: [("MkPair", [A, B_])])


def i32(x: int) -> np.ndarray:
    return np.asarray(x, np.int32)


def f32(x: float) -> np.ndarray:
    return np.asarray(x, np.float32)


def cons_list(*items):
    return make_list(items, List.Cons, List.Nil)


# ------------------------------------------------------------------ printing

@pytest.mark.parametrize("value, text", [
    (np.asarray(1, np.int32), "1"),
    (np.asarray(-7, np.int32), "-7"),
    (np.asarray(1.0, np.float32), "1f"),
    (np.asarray(1.5, np.float32), "1.5f"),
    (np.asarray(0.1, np.float32), "0.1f"),
    (np.asarray(2.0, np.float64), "2f64"),
    (np.asarray(0.25, np.float16), "0.25f16"),
    (np.asarray(3, np.int64), "3i64"),
    (np.asarray(3, np.int8), "3i8"),
    (np.asarray(3, np.int16), "3i16"),
    (np.asarray(200, np.uint8), "200u8"),
    (np.asarray(5, np.uint32), "5u32"),
    (np.asarray(True), "True"),
    (np.asarray(False), "False"),
    (np.asarray(np.nan, np.float32), "nanf"),
    (np.asarray(-np.inf, np.float64), "-inff64"),
])
def test_format_scalar(value, text):
    assert format_scalar(value) == text
    assert format_value(value) == text


def test_format_adt_and_tuples():
    assert str(cons_list(i32(1), i32(2))) == "Cons(1, Cons(2, Nil))"
    assert str(cons_list(f32(1.0))) == "Cons(1f, Nil)"
    assert str(cons_list()) == "Nil"
    assert format_value((i32(1), f32(2.0))) == "(1, 2f)"
    assert format_value((i32(1),)) == "(1,)"
    assert format_value(()) == "()"
    nested = cons_list((i32(1), cons_list(np.asarray(True))))
    assert str(nested) == "Cons((1, Cons(True, Nil)), Nil)"
    pair = ConstructorValue(Pair.MkPair, (i32(3), (f32(0.5), i32(4))))
    assert repr(pair) == "MkPair(3, (0.5f, 4))"


def test_format_non_scalar_tensor_uses_numpy_repr():
    arr = np.arange(3, dtype=np.int32)
    assert format_value(arr) == repr(arr)
    assert str(cons_list(arr)) == f"Cons({arr!r}, Nil)"


def test_format_limit_cuts_long_values():
    xs = cons_list(*[i32(i) for i in range(1000)])
    text = format_value(xs, limit=50)
    assert text.endswith("...")
    assert len(text) == 53
    assert format_value(xs).startswith(text[:-3])


def test_opaque_values_print():
    assert repr(RefValue(i32(1))) == "<ref>"
    assert repr(ConstructorFunction(List.Cons)) == "<constructor Cons>"
    f = B.function([B.var("x")], B.var("y"))
    assert repr(Closure(f, {})) == "<closure fn (%x)>"
    assert repr(Closure(f, {}, "main")) == "<closure @main>"


# ------------------------------------------------------------------ equality

@pytest.mark.parametrize("a, b, equal", [
    (i32(1), i32(1), True),
    (i32(1), i32(2), False),
    (i32(1), np.asarray(1, np.int64), False),               # dtype matters
    (np.zeros((2, 3), np.float32), np.zeros((3, 2), np.float32), False),  # shape matters
    (np.zeros((1,), np.float32), np.zeros((), np.float32), False),
    (f32(np.nan), f32(np.nan), True),                       # NaN equals NaN
    ((i32(1), (f32(2.0),)), (i32(1), (f32(2.0),)), True),
    ((i32(1), (f32(2.0),)), (i32(1), (f32(3.0),)), False),
    ((i32(1),), (i32(1), i32(1)), False),
    ((), (), True),
    (i32(1), (i32(1),), False),
])
def test_values_equal_table(a, b, equal):
    assert values_equal(a, b) is equal
    assert values_equal(b, a) is equal


def test_adt_equality_is_structural():
    assert cons_list(i32(1), i32(2)) == cons_list(i32(1), i32(2))
    assert cons_list(i32(1), i32(2)) != cons_list(i32(1), i32(3))
    assert cons_list(i32(1)) != cons_list(i32(1), i32(1))
    assert cons_list(i32(1)) != cons_list(f32(1.0))
    assert not (cons_list() == i32(0))
    other = B.adt("List", ["A"], lambda L, A: [("Cons", [A, L[A]]), ("Nil", [])])
    # A constructor of another definition of the same type, same name and tag.
    assert ConstructorValue(other.Nil) == cons_list()
    assert ConstructorValue(Pair.MkPair, (i32(1), i32(2))) != \
        ConstructorValue(List.Cons, (i32(1), i32(2)))


def test_adt_values_are_unhashable():
    with pytest.raises(TypeError):
        hash(cons_list())


def test_tolerance():
    a = (f32(1.0), np.asarray([1.0, 2.0], np.float32))
    b = (f32(1.0 + 1e-6), np.asarray([1.0, 2.0 + 1e-6], np.float32))
    assert not values_equal(a, b)
    assert values_equal(a, b, rtol=1e-5, atol=1e-6)
    assert not values_equal(f32(1.0), f32(1.1), rtol=1e-5)
    # Integers are always exact: a tolerance is about floating point.
    assert not values_equal(i32(1), i32(2), atol=0) and values_equal(i32(1), i32(1), atol=5)


def test_closures_and_refs_compare_by_identity():
    r = RefValue(i32(1))
    assert values_equal(r, r)
    assert not values_equal(r, RefValue(i32(1)))
    f = B.function([], B.const(1))
    c = Closure(f, {})
    assert values_equal((c,), (c,))
    assert not values_equal(c, Closure(f, {}))
    assert values_equal(ConstructorFunction(List.Cons), ConstructorFunction(List.Cons))


# ------------------------------------------------------------------ types

def test_value_type():
    assert value_type(np.zeros((2, 3), np.float32)) == TensorType((2, 3), DType.FLOAT32)
    assert value_type(i32(1)) == TensorType((), DType.INT32)
    assert value_type(np.bool_(True)) == TensorType((), DType.BOOL)
    assert value_type((i32(1), ((), np.zeros(4, np.uint8)))) == TupleType((
        TensorType((), DType.INT32),
        TupleType((TupleType(()), TensorType((4,), DType.UINT8)))))
    with pytest.raises(TypeError):
        value_type(cons_list())


# ------------------------------------------------------------------ deep values

def test_deep_list_build_print_compare():
    n = 10_000
    xs = cons_list(*[i32(i) for i in range(n)])
    ys = cons_list(*[i32(i) for i in range(n)])
    assert xs == ys
    assert xs != cons_list(*[i32(i) for i in range(n - 1)] + [i32(0)])
    text = str(xs)
    assert text.startswith("Cons(0, Cons(1, ") and text.endswith("Nil" + ")" * n)
    assert [int(v) for v in list_items(xs)] == list(range(n))
    deep_tuple: object = ()
    for _ in range(n):
        deep_tuple = (deep_tuple,)
    assert values_equal(deep_tuple, deep_tuple)
    assert format_value(deep_tuple).startswith("((((")
    del xs, ys  # deallocating a deep chain must not overflow either
