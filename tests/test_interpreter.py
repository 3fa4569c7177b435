"""The reference interpreter on programs built with the builder."""

from __future__ import annotations

import numpy as np
import pytest

import aot
from aot import builder as B
from aot.diagnostics import DiagnosticError
from aot.interpreter import Interpreter, match_pattern, run
from aot.ir.module import IRModule
from aot.values import (Closure, ConstructorFunction, ConstructorValue, RefValue, list_items,
                        make_list, values_equal)

List = B.adt("List", ["A"], lambda L, A: [("Cons", [A, L[A]]), ("Nil", [])])
Tree = B.adt("Tree", ["A"], lambda T, A: [("Leaf", []), ("Node", [T[A], A, T[A]])])
I32 = B.scalar("int32")
F32 = B.scalar("float32")


def i32(x: int) -> np.ndarray:
    return np.asarray(x, np.int32)


def f32(x: float) -> np.ndarray:
    return np.asarray(x, np.float32)


def pylist(*items: object) -> ConstructorValue:
    return make_list([np.asarray(i, np.int32) if isinstance(i, int) else i for i in items],
                     List.Cons, List.Nil)


def ev(expr, mod: IRModule | None = None):
    """Evaluate a closed expression (with the ADTs above in scope)."""
    return Interpreter(mod or B.module(types=[List, Tree])).evaluate(B.expr(expr))


def ints(v: ConstructorValue) -> list[int]:
    return [int(x) for x in list_items(v)]


def same(value, expected) -> bool:
    """Exact equality including dtype; expected Python ints mean int32,
    floats float32, bools bool."""
    if isinstance(expected, bool):
        expected = np.asarray(expected)
    elif isinstance(expected, int):
        expected = i32(expected)
    elif isinstance(expected, float):
        expected = f32(expected)
    return values_equal(value, expected)


# ------------------------------------------------------------------ arithmetic

@pytest.mark.parametrize("build, expected", [
    (lambda: B.add(1, 2), 3),
    (lambda: B.subtract(1, 5), -4),
    (lambda: B.multiply(6, 7), 42),
    (lambda: B.divide(-7, 2), -3),                 # integer division truncates
    (lambda: B.mod(-7, 2), -1),
    (lambda: B.floor_divide(-7, 2), -4),
    (lambda: B.divide(7, 0), 0),                   # integer division by zero gives 0
    (lambda: B.add(B.const(2147483647), 1), -2147483648),   # wraps
    (lambda: B.divide(1.0, 4.0), 0.25),
    (lambda: B.divide(1.0, 0.0), float("inf")),    # no warning, IEEE result
    (lambda: B.add(B.const(1.5, "float64"), B.const(1.0, "float64")), np.asarray(2.5)),
    (lambda: B.less(1, 2), True),
    (lambda: B.equal(1.0, 2.0), False),
    (lambda: B.logical_and(True, False), False),
    (lambda: B.negative(B.const(3, "int8")), np.asarray(-3, np.int8)),
    (lambda: B.sqrt(16.0), 4.0),
    (lambda: B.maximum(B.const([1, 5], "int32"), 3), np.asarray([3, 5], np.int32)),
    (lambda: B.add(B.const(np.ones((2, 1), np.float32)), B.const(np.arange(3, dtype=np.float32))),
     np.ones((2, 1), np.float32) + np.arange(3, dtype=np.float32)),
])
def test_arithmetic(build, expected):
    assert same(ev(build()), expected)


def test_results_are_arrays_of_exact_dtype():
    v = ev(B.add(B.const(1, "uint8"), B.const(255, "uint8")))
    assert isinstance(v, np.ndarray) and v.shape == () and v.dtype == np.uint8 and int(v) == 0


def test_function_with_tensor_params():
    x = B.var("x", B.tensor((2, 3)))
    y = B.var("y", B.tensor((3,)))
    mod = B.module(main=B.function([x, y], B.multiply(B.add(x, 1.0), y)))
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    b = np.asarray([1, 2, 3], np.float32)
    out = Interpreter(mod).call("main", [a, b])
    assert values_equal(out, (a + 1) * b)
    assert values_equal(run(mod, a, b), (a + 1) * b)


def test_op_relation_error_at_runtime_has_span():
    # Untyped code: the operator's relation rejects the concrete shapes.
    x = B.var("x")
    bad = B.add(x, B.const(np.zeros(3, np.float32)))
    it = Interpreter(B.module(main=B.function([x], bad)))
    assert values_equal(it.call("main", [np.ones(3, np.float32)]), np.ones(3, np.float32))
    with pytest.raises(DiagnosticError, match="add: shapes .* do not broadcast") as info:
        it.call("main", [np.zeros(2, np.float32)])
    assert info.value.span is bad.span and bad.span is not None


def test_operators_with_attrs_and_tuple_arguments_and_results():
    x = np.arange(2 * 3 * 5 * 5, dtype=np.float32).reshape(2, 3, 5, 5) / 10
    w = np.ones((4, 3, 3, 3), np.float32)
    conv = ev(B.call("nn.conv2d", B.const(x), B.const(w), padding=(1, 1)))
    assert conv.shape == (2, 4, 5, 5) and conv.dtype == np.float32
    # The centre output sums the 3x3x3 window.
    assert np.isclose(conv[1, 0, 2, 2], x[1, :, 1:4, 1:4].sum(), rtol=1e-5)
    total = ev(B.call("sum", B.const(x), axis=(1, 2)))
    assert values_equal(total, x.sum(axis=(1, 2)), rtol=1e-6)
    a = np.arange(4, dtype=np.int32).reshape(2, 2)
    both = ev(B.call("concatenate", B.tuple_(B.const(a), B.const(a)), axis=1))
    assert values_equal(both, np.concatenate([a, a], axis=1))
    parts = ev(B.call("split", B.const(np.arange(6, dtype=np.int32)), indices_or_sections=3))
    assert isinstance(parts, tuple) and len(parts) == 3
    assert values_equal(parts[2], np.asarray([4, 5], np.int32))


def test_operator_applied_to_non_tensor_is_a_diagnostic():
    with pytest.raises(DiagnosticError, match="add"):
        ev(B.add(List.Nil, 1))


# ------------------------------------------------------------------ tuples

def test_tuples_and_projection():
    t = B.tuple_(1, (2.0, True), ())
    v = ev(t)
    assert isinstance(v, tuple) and len(v) == 3
    assert same(v[0], 1) and same(v[1][0], 2.0) and same(v[1][1], True) and v[2] == ()
    assert same(ev(B.proj(B.proj(t, 1), 0)), 2.0)
    assert ev(B.tuple_()) == ()


def test_projection_errors():
    with pytest.raises(DiagnosticError, match="out of range"):
        ev(B.proj(B.tuple_(1, 2), 2))
    with pytest.raises(DiagnosticError, match="not a tuple"):
        ev(B.proj(B.const(1), 0))


# ------------------------------------------------------------------ closures

def test_currying_and_capture():
    add = B.lam(lambda x: B.lam(lambda y: B.add(x, y), I32), I32)
    assert same(ev(B.call(B.call(add, 3), 4)), 7)
    # The closure keeps the value captured when it was created.
    s = B.Scope()
    a = s.let("a", 10)
    f = s.let("f", B.lam(lambda x: B.add(x, a), I32))
    assert same(ev(s.ret(B.call(f, 5))), 15)
    inc = ev(B.call(add, 1))
    assert isinstance(inc, Closure)


def test_higher_order_functions():
    twice = B.lam(lambda f, x: B.call(f, B.call(f, x)))
    double = B.lam(lambda x: B.multiply(x, 2), I32)
    assert same(ev(B.call(twice, double, 3)), 12)
    compose = B.lam(lambda f, g: B.lam(lambda x: B.call(f, B.call(g, x))))
    inc = B.lam(lambda x: B.add(x, 1), I32)
    assert same(ev(B.call(B.call(compose, double, inc), 5)), 12)
    assert same(ev(B.call(B.call(compose, inc, double), 5)), 11)


def test_global_used_as_a_value_and_returned_closures():
    n = B.var("n", I32)
    mod = B.module(types=[List], inc=B.function([n], B.add(n, 1)),
                   main=B.function([], B.call(B.lam(lambda f: B.call(f, 41)), B.gvar("inc"))))
    assert same(Interpreter(mod).call("main", []), 42)
    v = Interpreter(mod).evaluate(mod.global_var("inc"))
    assert isinstance(v, Closure) and v.name == "inc"
    assert same(Interpreter(mod).apply(v, [i32(1)]), 2)


def test_wrong_arity_call_is_a_diagnostic():
    f = B.lam(lambda x: x)
    call = B.call(f, 1, 2)
    with pytest.raises(DiagnosticError, match="expects 1 argument, got 2") as info:
        ev(call)
    assert info.value.span is call.span


def test_calling_a_non_function_is_a_diagnostic():
    with pytest.raises(DiagnosticError, match="cannot call"):
        ev(B.call(B.const(1), 2))


def test_unbound_variable_is_a_diagnostic():
    with pytest.raises(DiagnosticError, match="unbound variable %ghost"):
        ev(B.add(B.var("ghost"), 1))


# ------------------------------------------------------------------ recursion

def _fact_module() -> IRModule:
    n = B.var("n", I32)
    body = B.if_(B.equal(n, 0), 1, B.multiply(n, B.call(B.gvar("fact"), B.subtract(n, 1))))
    return B.module(fact=B.function([n], body, ret_type=I32))


@pytest.mark.parametrize("n, expected", [(0, 1), (1, 1), (5, 120), (10, 3628800)])
def test_global_recursion(n, expected):
    assert same(Interpreter(_fact_module()).call("fact", [i32(n)]), expected)


def test_let_bound_recursion_sees_itself():
    loop = B.var("loop")
    body = B.lam(lambda i, acc: B.if_(B.equal(i, 0), acc,
                                      B.call(loop, B.subtract(i, 1), B.add(acc, i))), I32, I32)
    program = B.let(loop, body, B.call(loop, 100, 0))
    assert same(ev(program), 5050)


def test_mutual_recursion():
    n = B.var("n", I32)
    m = B.var("m", I32)
    mod = B.module(
        is_even=B.function([n], B.if_(B.equal(n, 0), True,
                                      B.call(B.gvar("is_odd"), B.subtract(n, 1)))),
        is_odd=B.function([m], B.if_(B.equal(m, 0), False,
                                     B.call(B.gvar("is_even"), B.subtract(m, 1)))))
    it = Interpreter(mod)
    for k in range(6):
        assert same(it.call("is_even", [i32(k)]), k % 2 == 0)
        assert same(it.call("is_odd", [i32(k)]), k % 2 == 1)
    # 10,000 mutually tail-recursive calls run in constant stack.
    assert same(it.call("is_even", [i32(10_001)]), False)


def test_mutual_recursion_with_an_irmodule_directly():
    mod = IRModule()
    even, odd = mod.global_var("even"), mod.global_var("odd")
    n, m = B.var("n", I32), B.var("m", I32)
    mod.add(even, B.function([n], B.if_(B.equal(n, 0), True, B.call(odd, B.subtract(n, 1)))))
    mod.add(odd, B.function([m], B.if_(B.equal(m, 0), False, B.call(even, B.subtract(m, 1)))))
    assert same(run(mod, 7, entry="odd"), True)
    assert same(run(mod, 7, entry="even"), False)


def test_if_condition_must_be_a_bool_scalar():
    cond = B.const(1)
    with pytest.raises(DiagnosticError, match="0-d bool") as info:
        ev(B.if_(cond, 1, 2))
    assert info.value.span is cond.span
    with pytest.raises(DiagnosticError, match="0-d bool"):
        ev(B.if_(B.const([True, False]), 1, 2))


# ------------------------------------------------------------------ ADTs, match

def _list_module() -> IRModule:
    """length, map, foldl, foldr, range (builds a list) over List."""
    A, Bt = B.type_var("A"), B.type_var("B")
    xs = B.var("xs", List[A])
    length = B.function([xs], B.match(xs, [
        (B.pcons(List.Cons, "_", "t"), lambda t: B.add(1, B.call(B.gvar("length"), t))),
        (B.pcons(List.Nil), 0),
    ]), ret_type=I32, type_params=[A])

    A, Bt = B.type_var("A"), B.type_var("B")
    f = B.var("f", B.func_type([A], Bt))
    xs = B.var("xs", List[A])
    map_ = B.function([f, xs], B.match(xs, [
        (B.pcons(List.Cons, "h", "t"),
         lambda h, t: B.call(List.Cons, B.call(f, h), B.call(B.gvar("map"), f, t))),
        (B.pcons(List.Nil), List.Nil),
    ]), ret_type=List[Bt], type_params=[A, Bt])

    A, Bt = B.type_var("A"), B.type_var("B")
    f = B.var("f", B.func_type([A, Bt], A))
    acc = B.var("acc", A)
    xs = B.var("xs", List[Bt])
    foldl = B.function([f, acc, xs], B.match(xs, [
        (B.pcons(List.Cons, "h", "t"),
         lambda h, t: B.call(B.gvar("foldl"), f, B.call(f, acc, h), t)),
        (B.pcons(List.Nil), acc),
    ]), ret_type=A, type_params=[A, Bt])

    A, Bt = B.type_var("A"), B.type_var("B")
    f = B.var("f", B.func_type([A, Bt], Bt))
    acc = B.var("acc", Bt)
    xs = B.var("xs", List[A])
    foldr = B.function([f, acc, xs], B.match(xs, [
        (B.pcons(List.Cons, "h", "t"),
         lambda h, t: B.call(f, h, B.call(B.gvar("foldr"), f, acc, t))),
        (B.pcons(List.Nil), acc),
    ]), ret_type=Bt, type_params=[A, Bt])

    lo = B.var("lo", I32)
    hi = B.var("hi", I32)
    range_ = B.function([lo, hi], B.if_(
        B.greater_equal(lo, hi), List.Nil,
        B.call(List.Cons, lo, B.call(B.gvar("range"), B.add(lo, 1), hi))), ret_type=List[I32])

    return B.module(types=[List, Tree], length=length, map=map_, foldl=foldl, foldr=foldr,
                    range=range_)


def test_list_functions():
    it = Interpreter(_list_module())
    xs = pylist(1, 2, 3)
    assert same(it.call("length", [xs]), 3)
    assert same(it.call("length", [pylist()]), 0)
    double = it.evaluate(B.lam(lambda x: B.multiply(x, 2), I32))
    assert ints(it.call("map", [double, xs])) == [2, 4, 6]
    minus = it.evaluate(B.lam(lambda a, b: B.subtract(a, b), I32, I32))
    assert same(it.call("foldl", [minus, i32(0), xs]), ((0 - 1) - 2) - 3)
    assert same(it.call("foldr", [minus, i32(0), xs]), 1 - (2 - (3 - 0)))
    assert ints(it.call("range", [i32(2), i32(6)])) == [2, 3, 4, 5]


def test_constructor_used_as_a_function_value():
    mod = _list_module()
    it = Interpreter(mod)
    xs = pylist(4, 5, 6)
    cons = it.evaluate(List.Cons)
    assert isinstance(cons, ConstructorFunction)
    assert it.call("foldr", [cons, it.evaluate(List.Nil), xs]) == xs
    assert ints(it.evaluate(B.call(B.lam(lambda c: B.call(c, 1, List.Nil)), List.Cons))) == [1]


def test_nullary_constructor_value_and_call():
    assert ev(List.Nil) == pylist()
    assert ev(B.call(List.Nil)) == pylist()
    with pytest.raises(DiagnosticError, match="constructor Cons expects 2 fields, got 1"):
        ev(B.call(B.lam(lambda c: B.call(c, 1)), List.Cons))


def test_first_matching_clause_wins():
    xs = B.var("xs")
    m = B.function([xs], B.match(xs, [
        (B.pcons(List.Cons, B.pvar("a"), B.pcons(List.Nil)), lambda a: B.tuple_(1, a)),
        (B.pcons(List.Cons, "_", "_"), B.tuple_(2, 0)),
        (B.pwild(), B.tuple_(3, 0)),
        (B.pcons(List.Nil), B.tuple_(4, 0)),     # unreachable: the wildcard wins
    ]))
    it = Interpreter(B.module(types=[List], main=m))
    assert [int(v[0]) for v in (it.call("main", [pylist(7)]), it.call("main", [pylist(7, 8)]),
                                it.call("main", [pylist()]))] == [1, 2, 3]
    assert same(it.call("main", [pylist(7)])[1], 7)


def test_nested_and_tuple_patterns():
    # Sum of the first two elements of a list of pairs, matched in one pattern.
    data = B.var("data")
    m = B.match(data, [
        (B.pcons(List.Cons, B.ptuple("a", "_"), B.pcons(List.Cons, B.ptuple("_", "b"), "_")),
         lambda a, b: B.add(a, b)),
        (B.ptuple(), -2),
        (B.pwild(), -1),
    ], complete=False)
    f = B.function([data], m)
    it = Interpreter(B.module(types=[List], main=f))
    pairs = make_list([(i32(1), i32(10)), (i32(2), i32(20)), (i32(3), i32(30))],
                      List.Cons, List.Nil)
    assert same(it.call("main", [pairs]), 1 + 20)
    assert same(it.call("main", [pylist()]), -1)
    assert same(it.call("main", [()]), -2)


def test_deeply_nested_pattern():
    depth = 2000
    pattern: object = B.pvar("innermost")
    for _ in range(depth):
        pattern = B.pcons(List.Cons, "_", pattern)
    value = pylist(*range(depth + 5))
    bindings = match_pattern(pattern, value)
    assert bindings is not None
    (bound,) = bindings.values()
    assert ints(bound) == list(range(depth, depth + 5))
    assert match_pattern(pattern, pylist(*range(depth - 1))) is None


def test_tree_match():
    t = B.var("t")
    size = B.function([t], B.match(t, [
        (B.pcons(Tree.Leaf), 0),
        (B.pcons(Tree.Node, "l", "_", "r"),
         lambda l, r: B.add(1, B.add(B.call(B.gvar("size"), l), B.call(B.gvar("size"), r)))),
    ]))
    it = Interpreter(B.module(types=[Tree], size=size))
    leaf = ConstructorValue(Tree.Leaf)
    tree = ConstructorValue(Tree.Node, (ConstructorValue(Tree.Node, (leaf, i32(1), leaf)),
                                        i32(2), leaf))
    assert same(it.call("size", [tree]), 2)


@pytest.mark.parametrize("complete", [True, False])
def test_incomplete_match_fails_with_span(complete):
    xs = B.var("xs")
    m = B.match(xs, [(B.pcons(List.Cons, "h", "_"), lambda h: h)], complete=complete)
    it = Interpreter(B.module(types=[List], hd=B.function([xs], m)))
    assert same(it.call("hd", [pylist(5)]), 5)
    with pytest.raises(DiagnosticError, match="no clause matches Nil") as info:
        it.call("hd", [pylist()])
    assert info.value.span is m.span and m.span is not None
    assert f":{m.span.line}:" in str(info.value)


def test_no_clause_message_shows_a_bounded_value():
    xs = B.var("xs")
    m = B.match(xs, [(B.pcons(List.Nil), 0)], complete=False)
    it = Interpreter(B.module(types=[List], f=B.function([xs], m)))
    with pytest.raises(DiagnosticError, match=r"no clause matches Cons\(0, Cons\(1, ") as info:
        it.call("f", [pylist(*range(10_000))])
    assert len(info.value.message) < 300


# ------------------------------------------------------------------ references

def test_counter():
    s = B.Scope()
    c = s.let("c", B.ref(0))
    tick = s.let("tick", B.lam(lambda: B.ref_write(c, B.add(B.ref_read(c), 1))))
    for _ in range(3):
        s.do(B.call(tick))
    result = s.ret(B.ref_read(c))
    assert same(ev(result), 3)


def test_ref_write_returns_unit_and_refs_are_shared_cells():
    s = B.Scope()
    r = s.let("r", B.ref(1.0))
    alias = s.let("alias", r)
    w = s.let("w", B.ref_write(alias, 2.5))
    out = s.ret(B.tuple_(w, B.ref_read(r)))
    written, read = ev(out)
    assert written == () and same(read, 2.5)
    assert isinstance(ev(B.ref(0)), RefValue)


def test_closures_share_a_ref():
    # make_counter returns (increment, get) closures over one ref.
    s = B.Scope()
    cell = s.let("cell", B.ref(0))
    inc = B.lam(lambda k: B.ref_write(cell, B.add(B.ref_read(cell), k)), I32)
    get = B.lam(lambda: B.ref_read(cell))
    make = B.function([], s.ret(B.tuple_(inc, get)))
    s2 = B.Scope()
    pair = s2.let("pair", B.call(make))
    other = s2.let("other", B.call(make))
    s2.do(B.call(B.proj(pair, 0), 5))
    s2.do(B.call(B.proj(pair, 0), 6))
    s2.do(B.call(B.proj(other, 0), 100))
    program = s2.ret(B.tuple_(B.call(B.proj(pair, 1)), B.call(B.proj(other, 1))))
    a, b = ev(program)
    assert same(a, 11) and same(b, 100)


def test_ref_read_of_a_non_ref_is_a_diagnostic():
    with pytest.raises(DiagnosticError, match="expected a reference"):
        ev(B.ref_read(B.const(1)))


def test_shared_node_is_evaluated_once_per_activation():
    s = B.Scope()
    c = s.let("c", B.ref(0))
    bump = B.ref_write(c, B.add(B.ref_read(c), 1))   # one node, used twice
    s.do(bump)
    s.do(bump)
    once = s.ret(B.ref_read(c))
    assert same(ev(once), 1)
    s = B.Scope()
    c = s.let("c", B.ref(0))
    s.do(B.ref_write(c, B.add(B.ref_read(c), 1)))
    s.do(B.ref_write(c, B.add(B.ref_read(c), 1)))
    twice = s.ret(B.ref_read(c))
    assert same(ev(twice), 2)
    # ... but once per *activation*: a shared node inside a function body
    # is evaluated again in each call.
    s = B.Scope()
    c = s.let("c", B.ref(0))
    f = s.let("f", B.lam(lambda: B.ref_write(c, B.add(B.ref_read(c), 1))))
    call_f = B.call(f)
    s.do(call_f)
    s.do(B.call(f))
    assert same(ev(s.ret(B.ref_read(c))), 2)


def test_wide_dag_is_linear():
    # x1 = x0 + x0, x2 = x1 + x1, ...: a tree of 2**60 paths, 60 nodes.
    node = B.const(1.0)
    for _ in range(60):
        node = B.add(node, node)
    assert same(ev(node), float(2 ** 60))


# ------------------------------------------------------------------ polymorphism

def test_polymorphic_identity_on_different_types():
    A = B.type_var("A")
    x = B.var("x", A)
    ident = B.function([x], x, ret_type=A, type_params=[A])
    main = B.function([], B.tuple_(B.call(B.gvar("id"), 1), B.call(B.gvar("id"), (2.0, True)),
                                   B.call(B.gvar("id"), List.Nil)))
    mod = B.module(types=[List], id=ident, main=main)
    for value in (Interpreter(mod).call("main", []), run(mod)):
        a, (b, c), d = value
        assert same(a, 1) and same(b, 2.0) and same(c, True) and d == pylist()


def test_run_typechecks_polymorphic_list_functions():
    mod = _list_module()
    assert same(run(mod, pylist(1, 2, 3), entry="length"), 3)
    assert ints(run(mod, 2, 5, entry="range")) == [2, 3, 4]


# ------------------------------------------------------------------ deep programs

N = 10_000


def test_deep_let_chain():
    s = B.Scope()
    x = s.let("x0", 0)
    for i in range(1, N):
        x = s.let(f"x{i}", B.add(x, 1))
    assert same(ev(s.ret(x)), N - 1)


def test_deep_nested_expression():
    node = B.const(0)
    for _ in range(N):
        node = B.add(node, B.const(1))
    assert same(ev(node), N)


def test_deep_recursion_over_long_lists():
    mod = _list_module()
    it = Interpreter(mod)
    xs = it.call("range", [i32(0), i32(N)])                    # non-tail recursion builds
    assert ints(xs) == list(range(N))
    assert same(it.call("length", [xs]), N)                     # non-tail recursion
    plus = it.evaluate(B.lam(lambda a, b: B.add(a, b), I32, I32))
    assert same(it.call("foldl", [plus, i32(0), xs]), N * (N - 1) // 2)
    assert same(it.call("foldr", [plus, i32(0), xs]), N * (N - 1) // 2)
    cons = it.evaluate(List.Cons)
    assert it.call("foldr", [cons, it.evaluate(List.Nil), xs]) == xs
    doubled = it.call("map", [it.evaluate(B.lam(lambda v: B.multiply(v, 2), I32)), xs])
    assert ints(doubled)[-1] == 2 * (N - 1)


def test_deep_recursion_through_run():
    mod = _list_module()
    assert same(run(mod, pylist(*range(N)), entry="length"), N)


def test_deep_let_bound_recursion():
    loop = B.var("loop")
    body = B.lam(lambda i: B.if_(B.equal(i, 0), 0, B.add(1, B.call(loop, B.subtract(i, 1)))),
                 I32)
    assert same(ev(B.let(loop, body, B.call(loop, N))), N)


# ------------------------------------------------------------------ run(): arguments

def _typed_main() -> IRModule:
    x = B.var("x", B.tensor((2, 3), "float32"))
    n = B.var("n", "int32")
    flag = B.var("flag", "bool")
    pair = B.var("pair", B.tuple_type("float64", B.tensor((2,), "uint8")))
    body = B.tuple_(B.add(x, 1.0), B.add(n, 1), flag, B.proj(pair, 0))
    return B.module(main=B.function([x, n, flag, pair], body))


def test_run_converts_python_scalars():
    x = np.zeros((2, 3), np.float32)
    out = run(_typed_main(), x, 41, True, (2.5, np.asarray([1, 2], np.uint8)))
    assert values_equal(out, (x + 1, i32(42), np.asarray(True), np.asarray(2.5)))
    out = run(_typed_main(), x, np.int32(1), np.bool_(False), (1, np.zeros(2, np.uint8)))
    assert same(out[1], 2) and same(out[3], np.asarray(1.0))


@pytest.mark.parametrize("args, message", [
    ((np.zeros((3, 2), np.float32), 1, True, (1.0, np.zeros(2, np.uint8))),
     r"argument %x of @main: expected Tensor\[\(2, 3\), float32\], got a tensor of type "
     r"Tensor\[\(3, 2\), float32\]"),
    ((np.zeros((2, 3), np.float64), 1, True, (1.0, np.zeros(2, np.uint8))),
     r"argument %x of @main: expected Tensor\[\(2, 3\), float32\], got .*float64"),
    ((np.zeros((2, 3), np.float32), 1.5, True, (1.0, np.zeros(2, np.uint8))),
     r"argument %n of @main: expected int32, got the Python float 1.5"),
    ((np.zeros((2, 3), np.float32), 2 ** 40, True, (1.0, np.zeros(2, np.uint8))),
     r"argument %n of @main: expected int32, got the Python int"),
    ((np.zeros((2, 3), np.float32), 1, 1, (1.0, np.zeros(2, np.uint8))),
     r"argument %flag of @main: expected bool, got the Python int 1"),
    ((np.zeros((2, 3), np.float32), 1, True, (1.0,)),
     r"argument %pair of @main: expected \(float64, Tensor\[\(2\), uint8\]\), got a tuple of "
     r"1 field"),
    ((np.zeros((2, 3), np.float32), 1, True, (1.0, np.zeros(3, np.uint8))),
     r"argument %pair of @main: .*got a tensor of type Tensor\[\(3\), uint8\]"),
    ((np.zeros((2, 3), np.float32), 1, True), r"@main expects 4 arguments \(%x, %n, %flag, "
                                               r"%pair\), got 3"),
    ((np.zeros((2, 3), np.float32), "1", True, (1.0, np.zeros(2, np.uint8))),
     r"argument %n of @main: expected int32, got a Python str"),
])
def test_run_argument_errors(args, message):
    with pytest.raises(DiagnosticError, match=message):
        run(_typed_main(), *args)


def test_run_checks_adt_arguments():
    mod = _list_module()
    with pytest.raises(DiagnosticError, match="argument %xs of @length"):
        run(mod, i32(3), entry="length")
    xs = B.var("xs", List["int32"])
    main = B.module(base=mod, main=B.function([xs], B.call(B.gvar("length"), xs)))
    assert same(run(main, pylist(1, 2)), 2)
    mixed = make_list([i32(1), f32(2.0)], List.Cons, List.Nil)
    with pytest.raises(DiagnosticError, match=r"argument %xs of @main: expected List\[int32\], "
                                              r"got a tensor of type float32 inside Cons"):
        run(main, mixed)
    with pytest.raises(DiagnosticError, match=r"expected List\[int32\], got an ADT value Leaf"):
        run(main, ConstructorValue(Tree.Leaf))


def test_run_unknown_entry():
    with pytest.raises(DiagnosticError, match="no global function @nope"):
        run(_typed_main(), entry="nope")


def test_run_python_list_argument():
    v = B.var("v", B.tensor((3,), "int64"))
    mod = B.module(main=B.function([v], B.multiply(v, v)))
    assert values_equal(run(mod, [1, 2, 3]), np.asarray([1, 4, 9], np.int64))
    with pytest.raises(DiagnosticError, match="argument %v"):
        run(mod, [1, 2])
    with pytest.raises(DiagnosticError, match="argument %v"):
        run(mod, [1.5, 2, 3])


def test_runaway_recursion_is_a_diagnostic(monkeypatch):
    """Non-tail recursion without a base case grew the continuation stack
    until the machine's memory ran out; it stops at MAX_PENDING frames."""
    import aot.interpreter as interpreter
    monkeypatch.setattr(interpreter, "MAX_PENDING", 5_000)
    mod = aot.parse("def @f(%x: int32) -> int32 { add(@f(add(%x, 1)), 1) }\n"
                    "def @main(%x: int32) -> int32 { @f(%x) }")
    with pytest.raises(DiagnosticError, match="nested too deeply: more than 5,000 pending"):
        aot.interpret(mod, np.int32(0))


def test_deep_but_finite_recursion_is_not_stopped():
    """10,000 nested non-tail calls (the C's default bound) evaluate."""
    mod = aot.parse("def @f(%n: int32) -> int32 {\n"
                    "  if (equal(%n, 0)) { 0 } else { add(@f(subtract(%n, 1)), 1) } }\n"
                    "def @main(%n: int32) -> int32 { @f(%n) }")
    assert int(aot.interpret(mod, np.int32(10_000))) == 10_000
