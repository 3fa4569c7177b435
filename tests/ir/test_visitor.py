"""The traversal framework: order, memoisation, depth, mutation."""

from __future__ import annotations

from aot.ir import Call, Function, Let, Tuple, Var, const, op
from aot.ir.analysis import bound_vars, free_vars
from aot.ir.visitor import ExprMutator, ExprVisitor, Visit, children, post_order


def deep_let(n: int):
    x = Var("x")
    body = x
    for i in range(n):
        v = Var(f"v{i}")
        body = Let(v, Call(op("add"), (x, const(i))), body)
    return Function((x,), body), x


def test_post_order_children_first_and_shared_once():
    x = Var("x")
    shared = Call(op("add"), (x, x))
    root = Tuple((shared, shared))
    order = post_order(root)
    assert order.count(shared) == 1
    assert order.index(x) < order.index(shared) < order.index(root)
    assert order[-1] is root


def test_deep_let_chain_has_no_recursion_limit():
    f, _ = deep_let(20_000)
    assert len(post_order(f)) > 60_000


def test_visitor_memoises_by_identity():
    seen = []

    class Count(ExprVisitor):
        def visit_call(self, node) -> Visit:
            seen.append(node)
            yield from super().visit_call(node)

    x = Var("x")
    shared = Call(op("negative"), (x,))
    Count().visit(Tuple((shared, shared, Call(op("negative"), (x,)))))
    assert len(seen) == 2


def test_mutator_substitutes_and_keeps_unchanged_nodes():
    x, y = Var("x"), Var("y")
    untouched = Call(op("negative"), (y,))
    expr = Tuple((Call(op("add"), (x, x)), untouched))
    m = ExprMutator()
    m.memo[x] = const(1.0)
    out = m.visit(expr)
    assert out is not expr
    assert out.fields[1] is untouched
    assert out.fields[0].args[0] is out.fields[0].args[1]  # sharing preserved
    assert ExprMutator().visit(expr) is expr


def test_mutator_keeps_spans():
    from aot.diagnostics import Span
    sp = Span("f", 1, 2, 1, 5)
    x = Var("x")
    e = Call(op("add"), (x, x), span=sp)
    m = ExprMutator()
    m.memo[x] = Var("z")
    assert m.visit(e).span is sp


def test_mutator_on_deep_chain():
    f, x = deep_let(10_000)
    m = ExprMutator()
    m.memo[x] = x  # identity
    assert m.visit(f) is f


def test_free_and_bound_vars():
    x, y, z, w = Var("x"), Var("y"), Var("z"), Var("w")
    e = Let(y, Call(op("add"), (x, w)), Function((z,), Tuple((y, z, x))))
    assert free_vars(e) == [x, w]
    assert set(bound_vars(e)) == {y, z}
    assert children(e) == (y, e.value, e.body)
