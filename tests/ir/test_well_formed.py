"""aot.ir.well_formed: a table of ill-formed programs built with the
builder (each with the message ill_formed must give) and of well-formed
ones (which must give none), the prelude, and deep inputs."""

from __future__ import annotations

from typing import Callable

import pytest

import aot
from aot import builder as B
from aot.ir.expr import Let, Tuple
from aot.ir.module import IRModule
from aot.ir.well_formed import check_well_formed, ill_formed

Maybe = B.adt("Maybe", ["A"], lambda M, A: [("Just", [A]), ("Nothing", [])])


def main(body, *params) -> IRModule:
    return B.module(main=B.function(list(params), body), types=[Maybe])


# ------------------------------------------------------------ ill-formed

def bound_twice_by_lets() -> IRModule:
    x = B.var("x", "int32")
    return main(Let(x, B.const(1), Let(x, B.const(2), x)))


def bound_twice_in_sibling_branches() -> IRModule:
    c, x = B.var("c", "bool"), B.var("x", "int32")
    return main(B.if_(c, Let(x, B.const(1), x), Let(x, B.const(2), x)), c)


def parameter_twice() -> IRModule:
    x = B.var("x", "int32")
    return main(B.call(B.function([x, x], x), 1, 2))


def bound_by_pattern_and_let() -> IRModule:
    o, h = B.var("o", Maybe["int32"]), B.var("h", "int32")
    m = B.match(o, [(B.pcons(Maybe.Just, h), h), (B.pcons(Maybe.Nothing), 0)])
    return main(Let(h, B.const(1), B.add(h, m)), o)


def use_in_its_own_let_value() -> IRModule:
    x = B.var("x", "int32")
    return main(Let(x, B.add(x, 1), x))


def use_in_a_sibling_branch() -> IRModule:
    c, y = B.var("c", "bool"), B.var("y", "int32")
    return main(B.if_(c, Let(y, B.const(1), y), y), c)


def parameter_used_after_its_function() -> IRModule:
    y = B.var("y", "int32")
    return main(B.add(B.call(B.function([y], y), 1), y))


def pattern_variable_in_another_clause() -> IRModule:
    o, h = B.var("o", Maybe["int32"]), B.var("h", "int32")
    return main(B.match(o, [(B.pcons(Maybe.Just, h), h), (B.pcons(Maybe.Nothing), h)]), o)


def recursion_through_a_non_function() -> IRModule:
    f = B.var("f")
    return main(Let(f, B.tuple_(B.function([], 1), f), B.proj(f, 0)))


def shared_node_escaping_its_let() -> IRModule:
    """One node, used inside the let that binds its variable and outside."""
    x = B.var("x", "int32")
    n = B.add(x, 1)
    return main(Tuple((Let(x, B.const(1), n), n)))


def free_variable_in_a_global() -> IRModule:
    return main(B.var("z", "int32"))


def undefined_global() -> IRModule:
    return main(B.call(B.gvar("nope"), 1))


def bound_in_two_globals() -> IRModule:
    x = B.var("x", "int32")
    return B.module(f=B.function([x], x), g=B.function([x], x))


ILL_FORMED: dict[str, tuple[Callable[[], IRModule], list[str]]] = {
    "bound_twice_by_lets": (bound_twice_by_lets, ["@main: %x bound 2 times"]),
    "bound_twice_in_sibling_branches": (bound_twice_in_sibling_branches,
                                        ["@main: %x bound 2 times"]),
    "parameter_twice": (parameter_twice, ["@main: %x bound 2 times"]),
    "bound_by_pattern_and_let": (bound_by_pattern_and_let, ["@main: %h bound 2 times"]),
    "use_in_its_own_let_value": (use_in_its_own_let_value,
                                 ["@main: %x used outside the scope of its binding"]),
    "use_in_a_sibling_branch": (use_in_a_sibling_branch,
                                ["@main: %y used outside the scope of its binding"]),
    "parameter_used_after_its_function": (parameter_used_after_its_function,
                                          ["@main: %y used outside the scope of its binding"]),
    "pattern_variable_in_another_clause": (pattern_variable_in_another_clause,
                                           ["@main: %h used outside the scope of its binding"]),
    "recursion_through_a_non_function": (recursion_through_a_non_function,
                                         ["@main: %f used outside the scope of its binding"]),
    "shared_node_escaping_its_let": (shared_node_escaping_its_let,
                                     ["@main: %x used outside the scope of its binding"]),
    "free_variable_in_a_global": (free_variable_in_a_global,
                                  ["@main: %z used outside the scope of its binding"]),
    "undefined_global": (undefined_global, ["@main: refers to undefined @nope"]),
    "bound_in_two_globals": (bound_in_two_globals, ["%x bound in 2 global functions"]),
}


@pytest.mark.parametrize("name", sorted(ILL_FORMED))
def test_ill_formed(name: str) -> None:
    build, messages = ILL_FORMED[name]
    mod = build()
    assert ill_formed(mod) == messages
    with pytest.raises(AssertionError, match=messages[0]):
        check_well_formed(mod)


# ------------------------------------------------------------ well-formed

def local_recursion() -> IRModule:
    f, i = B.var("f", B.func_type(["int32"], "int32")), B.var("i", "int32")
    fn = B.function([i], B.if_(B.equal(i, 0), 0, B.call(f, B.subtract(i, 1))), "int32")
    return main(Let(f, fn, B.call(f, 3)))


def shared_node_in_scope() -> IRModule:
    c, x = B.var("c", "bool"), B.var("x", "int32")
    n = B.add(x, 1)
    return main(Let(x, B.const(1), B.if_(c, n, B.multiply(n, 2))), c)


def shared_let_node() -> IRModule:
    """The same let node used twice binds its variable once."""
    x = B.var("x", "int32")
    let = Let(x, B.const(1), B.add(x, x))
    return main(B.add(let, let))


def closure_capturing() -> IRModule:
    x, y = B.var("x", "int32"), B.var("y", "int32")
    return main(B.call(B.function([y], B.add(x, y)), 2), x)


def same_name_distinct_vars() -> IRModule:
    a, b = B.var("x", "int32"), B.var("x", "int32")
    return main(Let(a, B.const(1), Let(b, B.add(a, 1), b)))


def pattern_variables() -> IRModule:
    o, h = B.var("o", Maybe["int32"]), B.var("h", "int32")
    return main(B.match(o, [(B.pcons(Maybe.Just, h), h), (B.pcons(Maybe.Nothing), 0)]), o)


def mutual_recursion() -> IRModule:
    n, m = B.var("n", "int32"), B.var("m", "int32")
    even = B.function([n], B.if_(B.equal(n, 0), True, B.call(B.gvar("odd"), B.subtract(n, 1))))
    odd = B.function([m], B.if_(B.equal(m, 0), False, B.call(B.gvar("even"), B.subtract(m, 1))))
    return B.module(even=even, odd=odd)


WELL_FORMED = {f.__name__: f for f in (local_recursion, shared_node_in_scope, shared_let_node,
                                       closure_capturing, same_name_distinct_vars,
                                       pattern_variables, mutual_recursion)}


@pytest.mark.parametrize("name", sorted(WELL_FORMED))
def test_well_formed(name: str) -> None:
    mod = WELL_FORMED[name]()
    assert ill_formed(mod) == []
    check_well_formed(mod)
    aot.infer_types(mod)        # and they are real programs


def test_prelude_is_well_formed() -> None:
    assert ill_formed(aot.prelude()) == []


def test_every_violation_is_reported() -> None:
    """Problems of several kinds in one module are all listed."""
    x, z = B.var("x", "int32"), B.var("z", "int32")
    body = Let(x, B.const(1), Let(x, B.const(2), B.add(z, B.call(B.gvar("nope"), x))))
    assert ill_formed(main(body)) == [
        "@main: %z used outside the scope of its binding",
        "@main: %x bound 2 times",
        "@main: refers to undefined @nope",
    ]


def test_ten_thousand_deep_let_chain() -> None:
    n = 10_000
    x = B.var("x", "float32")
    vars_ = [x] + [B.var(f"v{i}") for i in range(n)]
    body = vars_[-1]
    for k in range(n, 0, -1):
        body = Let(vars_[k], B.add(vars_[k - 1], 1.0), body)
    assert ill_formed(main(body, x)) == []
    # the innermost value uses a variable bound only in that let's body
    stray = B.var("stray", "float32")
    body = Let(vars_[n], B.add(vars_[n - 1], stray), Let(stray, B.const(0.0), vars_[n]))
    for k in range(n - 1, 0, -1):
        body = Let(vars_[k], B.add(vars_[k - 1], 1.0), body)
    assert ill_formed(main(body, x)) == ["@main: %stray used outside the scope of its binding"]
