"""aot.ir.pattern.rewrite (TVM's test_dataflow_pattern.py rewrite cases)."""

from __future__ import annotations

import numpy as np
import pytest

import aot
from aot import builder as B
from aot.ir import Call, Function, Tuple, TupleGetItem, Var, const
from aot.ir.attrs import FuncAttrs
from aot.ir.dtype import DType
from aot.ir.module import IRModule
from aot.ir.pattern import DFPatternCallback, RewriteError, dominates, is_constant, is_expr, is_op, is_tuple, wildcard
from aot.ir.pattern import rewrite
from aot.ir.registry import PatternKind
from aot.ir.structural import assert_structural_equal, structural_equal
from aot.ir.types import TensorType
from aot.ir.visitor import post_order
from aot.ir.type_infer import infer_types

K_ELEMWISE = int(PatternKind.ELEMWISE)


def C(name, *args, **attrs):
    return B.call(name, *args, **attrs)


class Callback(DFPatternCallback):
    """A callback from a pattern and a function."""

    def __init__(self, pattern, fn, **flags):
        super().__init__(**flags)
        self.pattern = pattern
        self.fn = fn

    def callback(self, pre, post, node_map):
        return self.fn(pre, post, node_map)


def add_to_subtract():
    return Callback(is_op("add")(wildcard(), wildcard()),
                    lambda pre, post, m: C("subtract", post.args[0], post.args[1]))


x, y, z, w = (Var(n) for n in ("x", "y", "z", "w"))


def test_rewrite():
    out = rewrite(add_to_subtract(), C("add", x, y))
    assert_structural_equal(out, C("subtract", x, y))


def test_rewrite_reaches_every_match_in_one_round():
    e = C("add", C("add", x, y), C("multiply", C("add", y, z), x))
    out = rewrite(add_to_subtract(), e)
    assert_structural_equal(out, C("subtract", C("subtract", x, y),
                                   C("multiply", C("subtract", y, z), x)))


def test_rewrite_func_call():
    a, c = Var("input"), Var("weight")
    func = Function((a, c), C("nn.relu", C("nn.conv2d", a, c)))
    out = rewrite(add_to_subtract(), C("add", Call(func, (x, w)), y))
    assert is_op("subtract")(wildcard(), wildcard()).match(out)
    assert out.args[0].op is func


def test_rewrite_func_with_attr():
    a, c = Var("x"), Var("y")
    f = Function((a, c), C("add", a, c), attrs=FuncAttrs.of({"Composite": "add"}))
    e = C("abs", Call(f, (Var("a"), Var("b"))))
    inline = Callback(wildcard().has_attr({"Composite": "add"})(wildcard(), wildcard()),
                      lambda pre, post, m: C("add", post.args[0], post.args[1]))
    out = rewrite(inline, e)
    assert is_op("abs")(is_op("add")(wildcard(), wildcard())).match(out)


def test_nested_rewrite_identity():
    y_add = C("add", y, y)
    n0 = C("add", x, y_add)
    n1 = C("add", x, n0)
    e = C("add", n1, n0)
    a, b = wildcard(), wildcard()
    p0 = is_op("add")(a, b)
    pat = is_op("add")(p0, is_op("add")(p0, a))
    out = rewrite(Callback(pat, lambda pre, post, m: post), e)
    assert_structural_equal(out, e)


# ------------------------------------------------------------ batch norm

class BatchnormCallback(DFPatternCallback):
    def __init__(self):
        super().__init__()
        self.x, self.var, self.mean = wildcard(), wildcard(), wildcard()
        self.beta, self.gamma, self.eps = wildcard(), wildcard(), is_constant()
        self.pattern = (self.gamma * (self.x - self.mean)
                        / is_op("sqrt")(self.var + self.eps) + self.beta)

    def callback(self, pre, post, node_map):
        get = lambda p: node_map[p][0]  # noqa: E731
        eps = float(get(self.eps).data)
        return TupleGetItem(C("nn.batch_norm", get(self.x), get(self.gamma), get(self.beta),
                              get(self.mean), get(self.var), epsilon=eps), 0)


gamma, mean, var, beta = (Var(n) for n in ("gamma", "mean", "var", "beta"))


def bn_expected(data):
    eps = float(np.float32(1e-5))
    return TupleGetItem(C("nn.batch_norm", data, gamma, beta, mean, var, epsilon=eps), 0)


def bn(data, tail="add"):
    """gamma * (data - mean) / sqrt(var + eps) <tail> beta"""
    eps = const(np.float32(1e-5))
    body = C("divide", C("multiply", gamma, C("subtract", data, mean)),
             C("sqrt", C("add", var, eps)))
    return C(tail, body, beta)


def test_fuse_batchnorm():
    assert_structural_equal(rewrite(BatchnormCallback(), bn(x)), bn_expected(x))


def test_no_fuse_batchnorm():
    fake = bn(x, tail="subtract")
    assert_structural_equal(rewrite(BatchnormCallback(), fake), fake)


def test_fuse_double_batchnorm():
    out = rewrite(BatchnormCallback(), bn(bn(x)))
    assert_structural_equal(out, bn_expected(bn_expected(x)))


def test_partial_fuse_double_batchnorm():
    inner = bn(x, tail="subtract")
    out = rewrite(BatchnormCallback(), bn(inner))
    assert_structural_equal(out, bn_expected(inner))


def test_fuse_batchnorm_commutation():
    eps = const(np.float32(1e-5))
    sub = C("subtract", x, mean)
    den = C("sqrt", C("add", var, eps))
    forms = [
        C("add", beta, C("divide", C("multiply", gamma, sub), den)),  # commute add
        C("add", C("divide", C("multiply", gamma, sub), den), beta),  # divide/multiply
        C("add", C("multiply", gamma, C("divide", sub, den)), beta),  # multiply/divide
    ]
    for form in forms:
        assert_structural_equal(rewrite(BatchnormCallback(), form), bn_expected(x))


# ------------------------------------------------------------ dominators

class DominatorRemovalCallback(DFPatternCallback):
    def __init__(self):
        super().__init__()
        self.inp, self.weight = wildcard(), wildcard()
        path = wildcard().has_attr({"TOpPattern": K_ELEMWISE})(wildcard()) \
            | is_op("add")(wildcard(), wildcard())
        self.pattern = dominates(is_op("nn.conv2d")(self.inp, self.weight), path,
                                 is_op("add")(wildcard(), wildcard()))

    def callback(self, pre, post, node_map):
        return C("nn.conv2d", node_map[self.inp][0], node_map[self.weight][0])


def test_quadruple_rewrite_dominator():
    inp, weight = Var("input"), Var("weight")

    def relu(e):
        return C("nn.relu", e)

    def leaky(e):
        return C("nn.leaky_relu", e, alpha=0.0)

    conv = C("nn.conv2d", inp, weight)
    out = C("add", relu(relu(conv)), leaky(conv))                     # classic
    conv = C("nn.conv2d", out, weight)
    out = C("add", C("tanh", relu(relu(conv))), leaky(conv))          # deeper
    conv = C("nn.conv2d", out, weight)
    r = relu(relu(conv))
    out = C("add", r, C("tanh", r))                                   # single branch
    conv = C("nn.conv2d", out, weight)
    r = relu(conv)
    out = C("add", C("tanh", C("add", r, r)), leaky(conv))           # nested
    expected = inp
    for _ in range(4):
        expected = C("nn.conv2d", expected, weight)
    assert_structural_equal(DominatorRemovalCallback().rewrite(out), expected)


# ------------------------------------------------------------ fixed point

def algebraic_simplify(expr):
    zero = is_expr(const(0)) | is_expr(const(0.0))
    one = is_expr(const(1)) | is_expr(const(1.0))

    def keep(p):
        return lambda pre, post, m: m[p][0]

    callbacks = []
    for build in (lambda v: v + zero, lambda v: v - zero, lambda v: v * one,
                  lambda v: v / one):
        v = wildcard()
        callbacks.append(Callback(build(v), keep(v)))
    for build in (lambda v: v * wildcard(), lambda v: v / wildcard()):
        callbacks.append(Callback(build(zero), keep(zero)))
    return rewrite(callbacks, expr)


def test_algebraic_simplify():
    one, zero, onef, zerof = const(1), const(0), const(1.0), const(0.0)
    cases = [
        (C("add", x, zero), x), (C("add", x, zerof), x),
        (C("add", zero, x), x), (C("add", zerof, x), x),
        (C("subtract", x, zero), x), (C("subtract", x, zerof), x),
        (C("multiply", x, one), x), (C("multiply", x, onef), x),
        (C("multiply", one, x), x), (C("multiply", onef, x), x),
        (C("multiply", x, zero), zero), (C("multiply", x, zerof), zerof),
        (C("divide", x, one), x), (C("divide", x, onef), x),
        (C("divide", zero, x), zero), (C("divide", zerof, x), zerof),
    ]
    for before, after in cases:
        assert algebraic_simplify(before) is after, before
    # needs several rounds: each rewrite exposes the next
    e = C("subtract", C("add", C("divide", C("add", x, C("multiply", zero, y)), one),
                         C("multiply", y, one)), C("divide", zero, x))
    assert_structural_equal(algebraic_simplify(e), C("add", x, y))


def test_rewrite_once():
    class ConcatRewriter(DFPatternCallback):
        def __init__(self, once):
            super().__init__(rewrite_once=once)
            self.pattern = is_op("concatenate")(None)

        def callback(self, pre, post, node_map):
            fields = post.args[0].fields[:-1]
            if len(fields) > 1:
                return C("concatenate", Tuple(fields), axis=0)
            return fields[0]

    class OneMoreRelu(DFPatternCallback):
        def __init__(self, once):
            super().__init__(rewrite_once=once)
            self.pattern = is_op("nn.softmax")(None)

        def callback(self, pre, post, node_map):
            return C("nn.relu", post)

    concat = C("concatenate", Tuple((x, y, z)), axis=0)
    assert_structural_equal(rewrite(ConcatRewriter(False), concat), x)
    assert_structural_equal(rewrite(ConcatRewriter(True), concat),
                            C("concatenate", Tuple((x, y)), axis=0))
    before = C("nn.softmax", concat)
    out = rewrite([OneMoreRelu(True), ConcatRewriter(True)], before)
    assert_structural_equal(out, C("nn.relu", C("nn.softmax",
                                                C("concatenate", Tuple((x, y)), axis=0))))
    out = rewrite([OneMoreRelu(True), ConcatRewriter(False)], before)
    assert_structural_equal(out, C("nn.relu", C("nn.softmax", x)))
    with pytest.raises(RewriteError, match="fixed point"):
        rewrite(OneMoreRelu(False), before, max_rounds=5)


def test_callbacks_that_undo_each_other_within_a_round_are_a_fixed_point():
    there = Callback(is_op("add")(wildcard(), wildcard()),
                     lambda pre, post, m: C("subtract", *post.args))
    back = Callback(is_op("subtract")(wildcard(), wildcard()),
                    lambda pre, post, m: C("add", *post.args))
    assert_structural_equal(rewrite([there, back], C("add", x, y)), C("add", x, y))


def test_a_rewrite_that_never_settles_is_reported():
    swap = Callback(is_op("add")(wildcard(), wildcard()),
                    lambda pre, post, m: C("add", post.args[1], post.args[0]))
    with pytest.raises(RewriteError, match="after 7 rounds"):
        rewrite(swap, C("add", x, const(1.0)), max_rounds=7)


def test_callback_must_return_an_expression():
    bad = Callback(is_op("add")(wildcard(), wildcard()), lambda pre, post, m: None)
    with pytest.raises(RewriteError, match="not an expression"):
        rewrite(bad, C("add", x, y))


def test_node_map_holds_rewritten_operands():
    seen = {}
    inner = wildcard()

    def record(pre, post, m):
        seen["operand"] = m[inner][0]
        seen["post_arg"] = post.args[0]
        return post

    relu_to_tanh = Callback(is_op("nn.relu")(wildcard()),
                            lambda pre, post, m: C("tanh", post.args[0]))
    e = C("exp", C("nn.relu", x))
    rewrite([relu_to_tanh, Callback(is_op("exp")(inner), record)], e)
    assert seen["operand"] is seen["post_arg"]
    assert is_op("tanh")(wildcard()).match(seen["operand"])


# ------------------------------------------------------------ types and modules

def tvar(name, shape):
    return Var(name, TensorType(shape, DType.FLOAT32))


def test_require_type_gives_typed_operands():
    seen = []

    class Typed(DFPatternCallback):
        def __init__(self):
            super().__init__(require_type=True)
            self.pattern = is_op("nn.relu")(wildcard())

        def callback(self, pre, post, node_map):
            seen.append(pre.checked_type)
            return C("nn.relu", C("nn.relu", post.args[0])) if len(seen) == 1 else post

    a = tvar("a", (2, 3))
    out = rewrite(Typed(), C("nn.relu", a))
    assert seen[0] == TensorType((2, 3), DType.FLOAT32)
    assert out.checked_type == seen[0]  # typed by the last round, for the callback
    assert free_var_is(out, a)


def free_var_is(expr, v):
    return any(n is v for n in post_order(expr))


def test_typed_open_expression_stays_typed_with_its_free_vars():
    a, c = tvar("a", (2, 3)), tvar("c", (2, 3))
    typed = infer_types(IRModule.from_expr(Function((a, c), C("add", a, c))))["main"]
    body = typed.body
    out = rewrite(add_to_subtract(), body)
    assert out.checked_type == TensorType((2, 3), DType.FLOAT32)
    assert out.args[0] is typed.params[0] and out.args[1] is typed.params[1]


def test_type_patterns_in_rewrite_of_untyped_expression():
    a = tvar("a", (4,))
    b = Var("b", TensorType((4,), DType.INT32))
    float_relu = Callback(is_op("nn.relu")(wildcard()).has_dtype("float32"),
                          lambda pre, post, m: C("abs", post.args[0]))
    e = Tuple((C("nn.relu", a), C("nn.relu", b)))
    out = rewrite(float_relu, e)
    assert is_tuple([is_op("abs")(wildcard()), is_op("nn.relu")(wildcard())]).match(out)


PROGRAM = """
def @main(%x: Tensor[(2, 3), float32], %y: Tensor[(2, 3), float32]) {
  %0 = add(%x, 0f);
  %1 = multiply(1f, %0);
  %2 = add(%1, %y);
  subtract(%2, 0f)
}
"""


def test_rewrite_module_is_typed_and_keeps_meaning():
    mod = aot.parse(PROGRAM)
    zero, one = is_expr(const(0.0)), is_expr(const(1.0))
    v1, v2, v3 = wildcard(), wildcard(), wildcard()
    cbs = [Callback(v1 + zero, lambda pre, post, m: m[v1][0]),
           Callback(v2 * one, lambda pre, post, m: m[v2][0]),
           Callback(v3 - zero, lambda pre, post, m: m[v3][0])]
    out = rewrite(cbs, mod)
    assert out.is_typed
    xs, ys = Var("x", TensorType((2, 3), DType.FLOAT32)), Var("y", TensorType((2, 3),
                                                                                DType.FLOAT32))
    expected = infer_types(IRModule.from_expr(Function((xs, ys), C("add", xs, ys))))
    assert_structural_equal(out, expected)
    rng = np.random.default_rng(0)
    args = [rng.standard_normal((2, 3)).astype(np.float32) for _ in range(2)]
    np.testing.assert_allclose(aot.interpret(out, *args), aot.interpret(mod, *args))


def test_rewrite_module_unchanged_is_returned_typed():
    mod = aot.parse(PROGRAM)
    out = rewrite(Callback(is_op("nn.relu")(wildcard()), lambda pre, post, m: post), mod)
    assert out.is_typed and structural_equal(out, infer_types(mod))


MATCH_PROGRAM = """
type Box { B(Tensor[(2,), float32]), E }
def @main(%b: Box, %y: Tensor[(2,), float32]) -> Tensor[(2,), float32] {
  match (%b) {
    B(%v) => add(%v, %y),
    E => add(%y, %y),
  }
}
"""


def test_rewrite_inside_match_clauses():
    mod = aot.parse(MATCH_PROGRAM)
    out = rewrite(add_to_subtract(), mod)
    text = str(out)
    assert "add(" not in text and text.count("subtract(") == 2
    assert out.is_typed


def test_rewrite_deep_graph():
    a = tvar("a", (4,))
    e = a
    for i in range(10_000):
        e = C("add", e, const(np.float32(0.0))) if i % 2 else C("nn.relu", e)
    v = wildcard()
    out = rewrite(Callback(v + is_expr(const(0.0)), lambda pre, post, m: m[v][0]), e)
    relus = [n for n in post_order(out) if isinstance(n, Call)]
    assert len(relus) == 5_000
    assert all(n.op.name == "nn.relu" for n in relus)


def test_rewrite_and_partition_deep_let_chain():
    a = tvar("a", (4,))
    bindings, prev = [], a
    for i in range(10_000):
        v = Var(f"v{i}")
        name, c = ("add", 0.0) if i % 2 else ("multiply", 2.0)
        bindings.append((v, C(name, prev, const(np.float32(c)))))
        prev = v
    func = Function((a,), B.let_chain(bindings, prev))
    v = wildcard()
    drop_zero = Callback(v + is_expr(const(0.0)), lambda pre, post, m: m[v][0])
    out = rewrite(drop_zero, func)
    ops = [n.op.name for n in post_order(out) if isinstance(n, Call)]
    assert ops == ["multiply"] * 5_000
    parts = is_op("multiply")(wildcard(), is_constant()).partition(out)
    calls = [n for n in post_order(parts) if isinstance(n, Call) and isinstance(n.op, Function)]
    assert len(calls) == 5_000
