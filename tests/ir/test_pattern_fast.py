"""aot.ir.pattern fast paths: compiled tree patterns decide and bind exactly
as the general matcher; dispatch keys never skip a node the matcher would
accept; rewrite_bottom_up (one walk, no grouping)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import aot
from aot import builder as B
from aot.ir import Constant, Function, Tuple, TupleGetItem, Var, const
from aot.ir.dtype import DType
from aot.ir.module import IRModule
from aot.ir.pattern import DFPatternCallback, DFPatternMatcher, RewriteError, dominates, has_attr, has_dtype, is_constant, is_expr, is_op, is_tuple, is_tuple_get_item, is_var, rewrite_bottom_up, wildcard
from aot.ir.pattern import rewrite
from aot.ir.pattern import CallPattern
from aot.ir.pattern.compiled import _op_name, _reassociates, compile_pattern
from aot.ir.pattern.grouper import pattern_post_order
from aot.ir.pattern.dispatch import may_match, root_keys
from aot.ir.structural import assert_structural_equal, structural_equal
from aot.ir.types import TensorType
from aot.ir.visitor import post_order
from aot.ir.type_infer import infer_types

T = TensorType((2, 3), DType.FLOAT32)
OPS = ["add", "multiply", "subtract", "divide", "nn.relu", "negative"]
ARITY = {"nn.relu": 1, "negative": 1}


def C(name, *args, **attrs):
    return B.call(name, *args, **attrs)


# ============================================================ random inputs

@st.composite
def expressions(draw):
    """A small dataflow graph (shared nodes, tuples, projections); the
    root and every node in it are candidates for matching."""
    x, y = Var("x", T), Var("y", T)
    nodes: list = [x, y, const(np.ones((2, 3), np.float32))]
    for _ in range(draw(st.integers(1, 8))):
        def pick():
            return nodes[-draw(st.integers(1, len(nodes)))]
        kind = draw(st.sampled_from(["call", "call", "call", "tuple"]))
        if kind == "call":
            name = draw(st.sampled_from(OPS))
            nodes.append(C(name, *(pick() for _ in range(ARITY.get(name, 2)))))
        else:
            t = Tuple((pick(), pick()))
            nodes.append(TupleGetItem(t, draw(st.integers(0, 1))))
            nodes.append(t)
    return nodes[-1]


@st.composite
def patterns(draw, depth=0):
    """A pattern over the same operators; sub-patterns are fresh objects
    unless ``share`` reuses one (then it is not a tree)."""
    leaves = ["wildcard", "constant", "var", "expr_const"]
    kinds = leaves if depth >= 3 else leaves + ["call", "call", "call", "alt", "tuple",
                                                "item", "any_args", "attr", "op_alt"]
    kind = draw(st.sampled_from(kinds))
    if kind == "wildcard":
        return wildcard()
    if kind == "constant":
        return is_constant()
    if kind == "var":
        return is_var(draw(st.sampled_from(["", "x", "y"])))
    if kind == "expr_const":
        return is_expr(const(np.ones((2, 3), np.float32)))
    sub = patterns(depth=depth + 1)
    if kind == "call":
        name = draw(st.sampled_from(OPS))
        return is_op(name)(*(draw(sub) for _ in range(ARITY.get(name, 2))))
    if kind == "op_alt":
        callee = is_op(draw(st.sampled_from(OPS))) | is_op(draw(st.sampled_from(OPS)))
        return callee(draw(sub), draw(sub))
    if kind == "any_args":
        return is_op(draw(st.sampled_from(OPS)))(None)
    if kind == "alt":
        return draw(sub) | draw(sub)
    if kind == "tuple":
        return is_tuple([draw(sub), draw(sub)])
    if kind == "item":
        return is_tuple_get_item(draw(sub), draw(st.sampled_from([None, 0, 1])))
    return draw(sub).has_attr({"TOpPattern": draw(st.sampled_from([0, 1, 8]))})


def general(pattern, expr):
    m = DFPatternMatcher(expr, fast=False)
    ok = m.match(pattern, expr)
    return ok, m.node_map()


# ============================================================ compiled patterns

@settings(max_examples=300, deadline=None)
@given(pattern=patterns(), expr=expressions())
def test_compiled_match_equals_the_general_matcher(pattern, expr):
    if compile_pattern(pattern) is None:
        # every generated pattern is a tree: only re-association shapes
        # are left to the general matcher
        assert any(isinstance(p, CallPattern) and _reassociates(p, _op_name(p.op))
                   for p in pattern_post_order(pattern))
        return
    for node in post_order(expr):
        want_ok, want_map = general(pattern, node)
        fast = DFPatternMatcher(node)
        assert fast.match(pattern, node) == want_ok
        got_map = fast.node_map()
        # the same patterns bound, in the same order, to the same nodes
        assert list(got_map) == list(want_map)
        assert all(a is b for p in want_map for a, b in zip(got_map[p], want_map[p]))


def test_commutative_retry_binds_in_the_matchers_order():
    x, y = Var("x", T), Var("y", T)
    a, c = wildcard(), is_constant()
    pattern = is_op("add")(a, c)
    e = C("add", const(np.ones((2, 3), np.float32)), x)
    for m in (DFPatternMatcher(e), DFPatternMatcher(e, fast=False)):
        assert m.match(pattern, e)
        assert m.node_map()[a] == [x]
        assert list(m.node_map()) == [pattern.op, c, a, pattern]
    assert not DFPatternMatcher(C("add", x, y)).match(pattern, C("add", x, y))


@pytest.mark.parametrize("pattern", [
    (lambda w: is_op("add")(w, w))(wildcard()),                           # shared
    is_op("divide")(is_op("multiply")(wildcard(), wildcard()), wildcard()),  # re-associates
    is_op("multiply")(is_op("divide")(wildcard(), wildcard()), wildcard()),
    has_dtype("float32"),
    dominates(wildcard(), wildcard(), wildcard()),
])
def test_patterns_left_to_the_general_matcher(pattern):
    assert compile_pattern(pattern) is None


def test_reassociation_still_matches():
    """The matcher's divide/multiply re-association (general path)."""
    a, b, c = (Var(n, T) for n in "abc")
    pattern = is_op("divide")(is_op("multiply")(wildcard(), wildcard()), wildcard())
    assert pattern.match(C("multiply", a, C("divide", b, c)))


# ============================================================ dispatch keys

@settings(max_examples=200, deadline=None)
@given(pattern=patterns(), expr=expressions())
def test_dispatch_keys_never_skip_a_match(pattern, expr):
    keys = root_keys(pattern)
    for node in post_order(expr):
        if general(pattern, node)[0]:
            assert may_match(keys, node)


@pytest.mark.parametrize("pattern, expr, ok", [
    (is_op("add")(wildcard(), wildcard()), "mul", False),
    (is_op("add")(wildcard(), wildcard()) | is_op("multiply")(wildcard(), wildcard()),
     "mul", True),
    (is_op("divide")(is_op("multiply")(wildcard(), wildcard()), wildcard()), "mul", True),
    (wildcard()(wildcard(), wildcard()), "mul", True),
    (wildcard(), "mul", True),
    (is_tuple(None), "mul", False),
    (has_attr({"TOpPattern": 0}, is_op("multiply")(None)), "mul", True),
    (dominates(wildcard(), wildcard(), is_op("nn.relu")(None)), "mul", False),
])
def test_dispatch_keys(pattern, expr, ok):
    a, b = Var("a", T), Var("b", T)
    e = {"mul": C("multiply", a, C("divide", b, a))}[expr]
    assert may_match(root_keys(pattern), e) == ok
    if not ok:
        assert not pattern.match(e)


# ============================================================ rewrite_bottom_up

class Callback(DFPatternCallback):
    def __init__(self, pattern, fn):
        super().__init__()
        self.pattern = pattern
        self.fn = fn
        self.calls = 0

    def callback(self, pre, post, node_map):
        self.calls += 1
        return self.fn(pre, post, node_map)


def negate_twice():
    """negative(negative(x)) -> x."""
    x = wildcard()
    return Callback(is_op("negative")(is_op("negative")(x)), lambda pre, post, m: m[x][0])


def merge_adds():
    """add(add(x, c1), c2) -> add(x, c1 + c2) for scalar constants."""
    x, c1, c2 = wildcard(), is_constant(), is_constant()
    inner = is_op("add")(x, c1)

    def fn(pre, post, m):
        total = m[c1][0].data + m[c2][0].data
        return C("add", m[x][0], Constant(np.asarray(total, np.float32)))
    return Callback(is_op("add")(inner, c2), fn)


def test_bottom_up_rewrites_every_match():
    x = Var("x", T)
    e = Tuple((C("negative", C("negative", x)), C("nn.relu", C("negative", C("negative", x)))))
    assert_structural_equal(rewrite_bottom_up(negate_twice(), e), Tuple((x, C("nn.relu", x))))


def test_chains_collapse_in_one_walk():
    x = Var("x", T)
    e = x
    for i in range(6):
        e = C("add", e, const(float(i)))
    cb = merge_adds()
    out = rewrite_bottom_up(cb, e)
    assert_structural_equal(out, C("add", x, const(15.0)))
    assert cb.calls == 5           # once per inner add: the result is matched again


def test_a_shared_inner_node_is_still_rewritten():
    """Unlike ``rewrite``, no grouping: the inner node stays for its other
    user, the outer match is rewritten anyway."""
    x = Var("x", T)
    inner = C("add", x, const(1.0))
    e = Tuple((C("add", inner, const(2.0)), inner))
    assert_structural_equal(rewrite_bottom_up(merge_adds(), e),
                            Tuple((C("add", x, const(3.0)), C("add", x, const(1.0)))))
    assert_structural_equal(rewrite(merge_adds(), e), e)


def test_first_callback_that_changes_the_node_wins_and_the_result_is_offered_again():
    x = Var("x", T)
    order = []

    def to(name, log):
        def fn(pre, post, m):
            order.append(log)
            return C(name, *post.args)
        return fn
    declines = Callback(is_op("nn.relu")(wildcard()), lambda pre, post, m: post)
    relu_to_tanh = Callback(is_op("nn.relu")(wildcard()), to("tanh", "relu"))
    tanh_to_neg = Callback(is_op("tanh")(wildcard()), to("negative", "tanh"))
    out = rewrite_bottom_up([declines, relu_to_tanh, tanh_to_neg], C("nn.relu", x))
    assert_structural_equal(out, C("negative", x))
    assert order == ["relu", "tanh"] and declines.calls == 1


def test_general_patterns_work_too():
    x, y = Var("x", T), Var("y", T)
    w = wildcard()
    double = Callback(is_op("add")(w, w), lambda pre, post, m: C("multiply", m[w][0],
                                                                 const(2.0)))
    e = Tuple((C("add", x, x), C("add", x, y)))
    assert_structural_equal(rewrite_bottom_up(double, e),
                            Tuple((C("multiply", x, const(2.0)), C("add", x, y))))


def test_callbacks_that_undo_each_other_are_an_error():
    x = Var("x", T)
    a = Callback(is_op("nn.relu")(wildcard()), lambda pre, post, m: C("tanh", *post.args))
    b = Callback(is_op("tanh")(wildcard()), lambda pre, post, m: C("nn.relu", *post.args))
    with pytest.raises(RewriteError, match="did not end"):
        rewrite_bottom_up([a, b], C("nn.relu", x), max_steps=10)


def test_a_callback_must_return_an_expression():
    bad = Callback(is_op("nn.relu")(wildcard()), lambda pre, post, m: None)
    with pytest.raises(RewriteError, match="not an expression"):
        rewrite_bottom_up(bad, C("nn.relu", Var("x", T)))


def test_modules_are_retyped_or_returned_as_they_are():
    mod = aot.infer_types(aot.parse("""
    def @main(%x: Tensor[(2, 3), float32]) { nn.relu(negative(negative(%x))) }"""))
    out = rewrite_bottom_up(negate_twice(), mod)
    assert out.is_typed
    assert_structural_equal(out, aot.infer_types(aot.parse(
        "def @main(%x: Tensor[(2, 3), float32]) { nn.relu(%x) }")))
    assert rewrite_bottom_up(negate_twice(), out) is out


def test_typed_expressions_come_back_typed():
    x = Var("x", T)
    body = infer_types(IRModule.from_expr(Function((x,), C("nn.relu", C("negative", C(
        "negative", x))))))["main"].body
    out = rewrite_bottom_up(negate_twice(), body)
    assert all(n.checked_type is not None for n in post_order(out)
               if not isinstance(n, aot.ir.expr.Op))


def test_ten_thousand_deep_chain():
    x = Var("x", T)
    e = x
    for _ in range(10_000):
        e = C("negative", e)
    out = rewrite_bottom_up(negate_twice(), C("nn.relu", e))
    assert_structural_equal(out, C("nn.relu", x))
    assert structural_equal(rewrite_bottom_up(negate_twice(), C("negative", e)),
                            C("negative", x))
