"""aot.ir.pattern.partition (TVM's test_dataflow_pattern.py partition cases)."""

from __future__ import annotations

import numpy as np

import aot
from aot import builder as B
from aot.ir import Call, Function, Tuple, TupleGetItem, Var, const
from aot.ir.attrs import FuncAttrs
from aot.ir.dtype import DType
from aot.ir.module import IRModule
from aot.ir.pattern import DFPatternCallback, FunctionPattern, dominates, is_constant, is_expr, is_op, is_tuple, is_tuple_get_item, is_var, wildcard
from aot.ir.pattern import partition
from aot.ir.pattern import rewrite
from aot.ir.registry import PatternKind
from aot.ir.structural import assert_structural_equal
from aot.ir.types import TensorType
from aot.ir.visitor import post_order
from aot.passes.manager import verify_module
from aot.ir.type_infer import infer_types

K_ELEMWISE = int(PatternKind.ELEMWISE)


def C(name, *args, **attrs):
    return B.call(name, *args, **attrs)


def fn(params, body, name, **attrs):
    """A partitioned function as Relay's tests write it."""
    return Function(tuple(params), body,
                    attrs=FuncAttrs.of({"PartitionedFromPattern": name, **attrs}))


def fresh(*names):
    return [Var(n) for n in names]


def conv_bias_relu(x, w, b):
    return C("nn.relu", C("nn.bias_add", C("nn.conv2d", x, w), b))


def test_double_partition():
    conv_p = is_op("nn.conv2d")(wildcard(), wildcard())
    bias_p = is_op("nn.bias_add")(conv_p, wildcard())
    relu_p = is_op("nn.relu")(bias_p)
    x, w, b, w2, b2 = fresh("input", "weight", "bias", "weight", "bias")
    e = C("nn.bias_add", C("nn.conv2d", conv_bias_relu(x, w, b), w2), b2)
    for pat, label in [(relu_p, "conv_bias_relu"), (bias_p, "conv_bias")]:
        e = pat.partition(e, {"Composite": label})
    i, k, c = fresh("input", "weight", "bias")
    f0 = fn([i, k, c], conv_bias_relu(i, k, c), "nn.conv2d_nn.bias_add_nn.relu_",
            Composite="conv_bias_relu")
    i, k, c = fresh("input", "weight", "bias")
    f1 = fn([i, k, c], C("nn.bias_add", C("nn.conv2d", i, k), c), "nn.conv2d_nn.bias_add_",
            Composite="conv_bias")
    assert_structural_equal(e, Call(f1, (Call(f0, (x, w, b)), w2, b2)))


def diamond_pattern(path=None):
    path = path or wildcard().has_attr({"TOpPattern": K_ELEMWISE})(wildcard())
    return dominates(is_op("nn.conv2d")(wildcard(), wildcard()), path,
                     is_op("add")(wildcard(), wildcard()))


def relu(e):
    return C("nn.relu", e)


def leaky(e):
    return C("nn.leaky_relu", e, alpha=0.0)


def classic(x, w):
    c = C("nn.conv2d", x, w)
    return C("add", relu(relu(c)), leaky(c))


def deeper(x, w):
    c = C("nn.conv2d", x, w)
    return C("add", C("tanh", relu(relu(c))), leaky(c))


def single_branch(x, w):
    r = relu(relu(C("nn.conv2d", x, w)))
    return C("add", r, C("tanh", r))


def nested(x, w):
    c = C("nn.conv2d", x, w)
    r = relu(c)
    return C("add", C("tanh", C("add", r, r)), leaky(c))


def test_partition_dominator():
    inp, weight = fresh("input", "weight")
    a, b = C("multiply", inp, inp), C("multiply", weight, weight)
    out = diamond_pattern().partition(classic(a, b))
    i, w = fresh("input", "weight")
    f = fn([i, w], classic(i, w), "nn.conv2d_nn.relu_nn.relu_nn.leaky_relu_add_")
    assert_structural_equal(out, Call(f, (a, b)))


def test_quadruple_partition_dominator():
    path = wildcard().has_attr({"TOpPattern": K_ELEMWISE})(wildcard()) \
        | is_op("add")(wildcard(), wildcard())
    inp, weight = fresh("input", "weight")
    e = nested(single_branch(deeper(classic(inp, weight), weight), weight), weight)
    out = diamond_pattern(path).partition(e)
    names = ["nn.conv2d_nn.relu_nn.relu_nn.leaky_relu_add_",
             "nn.conv2d_nn.relu_nn.relu_tanh_nn.leaky_relu_add_",
             "nn.conv2d_nn.relu_nn.relu_tanh_add_",
             "nn.conv2d_nn.relu_add_tanh_nn.leaky_relu_add_"]
    expected = inp
    for make, name in zip([classic, deeper, single_branch, nested], names):
        i, w = fresh("input", "weight")
        expected = Call(fn([i, w], make(i, w), name), (expected, weight))
    assert_structural_equal(out, expected)


def bn(x, var, mean, beta, gamma, eps):
    return C("add", C("divide", C("multiply", gamma, C("subtract", x, mean)),
                      C("sqrt", C("add", var, eps))), beta)


def bn_pattern():
    return (wildcard() * (wildcard() - wildcard()) / is_op("sqrt")(wildcard() + is_constant())
            + wildcard())


BN_NAME = "subtract_multiply_add_sqrt_divide_add_"


def test_partition_batchnorm():
    x, var, mean, beta, gamma = fresh("x", "var", "mean", "beta", "gamma")
    eps = const(1e-5)
    out = partition(bn_pattern(), bn(x, var, mean, beta, gamma, eps))
    xf, varf, meanf, betaf, gammaf = fresh("xf", "varf", "meanf", "betaf", "gammaf")
    # parameters in the pattern's order: gamma, x, mean, var, beta
    f = fn([gammaf, xf, meanf, varf, betaf], bn(xf, varf, meanf, betaf, gammaf, eps), BN_NAME)
    assert_structural_equal(out, Call(f, (gamma, x, mean, var, beta)))


def test_partition_double_batchnorm():
    x, var, mean, beta, gamma = fresh("x", "var", "mean", "beta", "gamma")
    eps = const(1e-5)
    e = bn(bn(x, var, mean, beta, gamma, eps), var, mean, beta, gamma, eps)
    out = bn_pattern().partition(e)
    fs = []
    for _ in range(2):
        xf, varf, meanf, betaf, gammaf = fresh("xf", "varf", "meanf", "betaf", "gammaf")
        fs.append(fn([gammaf, xf, meanf, varf, betaf], bn(xf, varf, meanf, betaf, gammaf, eps),
                     BN_NAME))
    inner = Call(fs[0], (gamma, x, mean, var, beta))
    assert_structural_equal(out, Call(fs[1], (gamma, inner, mean, var, beta)))


def test_overlapping_partitions_are_refused():
    bn_node = is_op("nn.batch_norm")(wildcard(), wildcard(), wildcard(), wildcard(), wildcard())
    pat = is_tuple_get_item(bn_node, 0)
    x, var, mean, beta, gamma = fresh("x", "var", "mean", "beta", "gamma")
    norm = C("nn.batch_norm", x, gamma, beta, mean, var, epsilon=1e-5)
    e = C("add", TupleGetItem(norm, 0), TupleGetItem(norm, 0))
    assert pat.partition(e) is e


def test_partition_overused_is_refused():
    pat = is_op("nn.relu")(is_op("nn.conv2d")(wildcard(), wildcard()))
    x, w = fresh("input", "weight")
    conv = C("nn.conv2d", x, w)
    e = C("add", relu(conv), conv)
    assert pat.partition(e) is e


def concat(*args):
    return C("concatenate", Tuple(args), axis=0)


def test_partition_fuzzy_tuple():
    x, y = fresh("x", "y")
    z = C("add", x, y)
    pat = is_op("concatenate")(is_tuple(None))
    for args in [(x,), (x, y), (x, y, z)]:
        params = fresh(*[f"p{i}" for i in range(len(args))])
        f = fn(params, concat(*params), "Tuple_concatenate_")
        assert_structural_equal(pat.partition(concat(*args)), Call(f, args))


def test_partition_fuzzy_function_args():
    pat = FunctionPattern(None, wildcard() + wildcard())(None) + wildcard()
    x, y, z, b = fresh("x", "y", "z", "b")
    xp, yp, zp = fresh("xp", "yp", "zp")
    for params, body in [([xp], C("add", xp, xp)), ([xp, yp], C("add", xp, yp)),
                         ([xp, yp, zp], C("add", C("add", xp, yp), zp))]:
        inner = Function(tuple(params), body)
        n = len(params)
        args = [x, y, z][:n]
        new = fresh(*[f"q{i}" for i in range(n + 1)])
        label = ("add_" if n == 3 else "") + "add_FunctionCall_add_"
        f = fn(new, C("add", Call(inner, tuple(new[:-1])), new[-1]), label)
        out = pat.partition(C("add", Call(inner, tuple(args)), b))
        assert_structural_equal(out, Call(f, (*args, b)))


def test_partition_check():
    pat = is_op("nn.relu")(is_op("nn.conv2d")(is_var("input"), wildcard()))

    def check(pre):
        return pre.args[0].attrs.data_layout == "NCHW"

    x, w = fresh("input", "weight")
    e = relu(C("nn.conv2d", x, w))
    xf, wf = fresh("input", "weight")
    f = fn([xf, wf], relu(C("nn.conv2d", xf, wf)), "nn.conv2d_nn.relu_")
    assert_structural_equal(pat.partition(e, check=check), Call(f, (x, w)))
    nhwc = relu(C("nn.conv2d", x, w, data_layout="NHWC", kernel_layout="HWIO"))
    assert pat.partition(nhwc, check=check) is nhwc


def typed_body(params, body):
    return infer_types(IRModule.from_expr(Function(tuple(params), body)))["main"].body


def test_partition_check_types():
    pat = is_op("nn.relu")(is_op("nn.conv2d")(wildcard(), wildcard()))

    def check(pre):
        conv = pre.args[0]
        return conv.attrs.data_layout == "NCHW" and conv.checked_type.shape[0] == 1

    def case(batch, **attrs):
        x = Var("input", TensorType((batch, 10, 10, 10), DType.FLOAT32))
        shape = (10, 10, 3, 3) if not attrs else (3, 3, 10, 10)
        w = Var("weight", TensorType(shape, DType.FLOAT32))
        return typed_body([x, w], relu(C("nn.conv2d", x, w, **attrs)))

    ok = case(1)
    out = pat.partition(ok, check=check)
    assert out.op.attrs.get("PartitionedFromPattern") == "nn.conv2d_nn.relu_"
    assert out.checked_type == ok.checked_type      # a typed input gives a typed result
    assert out.op.params[0].type_annotation == ok.args[0].args[0].checked_type
    nhwc = case(1, data_layout="NHWC", kernel_layout="HWIO")
    assert pat.partition(nhwc, check=check) is nhwc
    two = case(2)
    assert pat.partition(two, check=check) is two


def test_partition_option():
    x, w, b = fresh("x", "w", "b")
    conv = is_op("nn.conv2d")(wildcard(), wildcard())
    pattern1 = is_op("nn.relu")(conv.optional(lambda p: is_op("nn.bias_add")(p, wildcard())))
    conv = is_op("nn.conv2d")(wildcard(), wildcard())
    pattern2 = is_op("nn.bias_add")(conv, wildcard()).optional(lambda p: is_op("nn.relu")(p))
    e = conv_bias_relu(x, w, b)
    xf, wf, bf = fresh("x", "w", "b")
    f = fn([xf, wf, bf], conv_bias_relu(xf, wf, bf), "nn.conv2d_nn.bias_add_nn.relu_")
    for pat in (pattern1, pattern2):
        assert pat.match(e)
        assert_structural_equal(pat.partition(e), Call(f, (x, w, b)))


def test_partition_function():
    x, w, b, x1, w1 = fresh("x", "w", "b", "x1", "w1")
    wc_x, wc_w, wc_b, wc_x1, wc_w1 = (wildcard() for _ in range(5))
    func_pattern = FunctionPattern([wc_x1, wc_w1], is_op("nn.conv2d")(wc_x1, wc_w1))
    pat = func_pattern(wc_x, wc_w) + wc_b
    func = Function((x1, w1), C("nn.conv2d", x1, w1))
    e = C("add", C("add", Call(func, (x, w)), b), b)
    x2, w2, b2 = fresh("x2", "w2", "b2")
    f2 = fn([x2, w2, b2], C("add", Call(func, (x2, w2)), b2), "nn.conv2d_FunctionCall_add_")
    assert_structural_equal(pat.partition(e), C("add", Call(f2, (x, w, b)), b))


def test_partition_optional_function():
    x, w, b, x1, w1 = fresh("x", "w", "b", "x1", "w1")
    wc_x, wc_w, wc_x1, wc_w1 = (wildcard() for _ in range(4))
    fp0 = FunctionPattern([wc_x1, wc_w1], is_op("sigmoid")(is_op("nn.conv2d")(wc_x1, wc_w1)))
    fp1 = FunctionPattern([wc_x1, wc_w1], is_op("nn.relu")(is_op("nn.conv2d")(wc_x1, wc_w1)))
    pat = fp0(wc_x, wc_w) | fp1(wc_x, wc_w)
    func = Function((x1, w1), relu(C("nn.conv2d", x1, w1)))
    e = C("add", Call(func, (x, w)), b)
    x2, w2 = fresh("x2", "w2")
    f2 = fn([x2, w2], Call(func, (x2, w2)), "nn.conv2d_nn.relu_FunctionCall_")
    assert_structural_equal(pat.partition(e), C("add", Call(f2, (x, w)), b))


def fuzzy_body_case():
    x, w, b, x1, w1 = fresh("x", "w", "b", "x1", "w1")
    wc_x, wc_w, wc_b, wc_x1, wc_w1 = (wildcard() for _ in range(5))
    pat = FunctionPattern([wc_x1, wc_w1], wildcard())(wc_x, wc_w) + wc_b
    func = Function((x1, w1), C("nn.conv2d", x1, w1))
    return pat, func, (x, w, b), C("add", C("add", Call(func, (x, w)), b), b)


def test_partition_function_with_fuzzy_body():
    pat, func, (x, w, b), e = fuzzy_body_case()
    x2, w2, b2 = fresh("x2", "w2", "b2")
    f2 = fn([x2, w2, b2], C("add", Call(func, (x2, w2)), b2), "nn.conv2d_FunctionCall_add_")
    assert_structural_equal(pat.partition(e), C("add", Call(f2, (x, w, b)), b))


def test_rewrite_function_with_fuzzy_body():
    pat, func, (x, w, b), e = fuzzy_body_case()

    class Rewrite(DFPatternCallback):
        def __init__(self):
            super().__init__()
            self.pattern = pat

        def callback(self, pre, post, node_map):
            return C("add", x, w)

    assert_structural_equal(rewrite(Rewrite(), e), C("add", C("add", x, w), b))


def test_partition_constant_embedding():
    x, w, b = fresh("x", "w", "b")
    wc = const(1)
    xf, bf = fresh("x", "b")
    embedded = fn([xf, bf], conv_bias_relu(xf, wc, bf), "nn.conv2d_nn.bias_add_nn.relu_")
    xf, wf, bf = fresh("x", "w", "b")
    lifted = fn([xf, wf, bf], conv_bias_relu(xf, wf, bf), "nn.conv2d_nn.bias_add_nn.relu_")
    e, ec = conv_bias_relu(x, w, b), conv_bias_relu(x, wc, b)

    def pat(weight):
        return is_op("nn.relu")(is_op("nn.bias_add")(is_op("nn.conv2d")(wildcard(), weight),
                                                     wildcard()))

    # wildcard matches are lifted, constants too
    assert_structural_equal(pat(wildcard()).partition(e), Call(lifted, (x, w, b)))
    assert_structural_equal(pat(wildcard()).partition(ec), Call(lifted, (x, wc, b)))
    # is_var: a constant is not a var
    assert_structural_equal(pat(is_var()).partition(e), Call(lifted, (x, w, b)))
    assert pat(is_var()).partition(ec) is ec
    # is_constant and is_expr(constant) embed the constant
    for weight in (is_constant(), is_expr(wc)):
        assert pat(weight).partition(e) is e
        assert_structural_equal(pat(weight).partition(ec), Call(embedded, (x, b)))
    # alternatives: lifted or embedded by the alternative that matched
    for weight in (is_var() | is_constant(), is_constant() | is_var()):
        assert_structural_equal(pat(weight).partition(e), Call(lifted, (x, w, b)))
        assert_structural_equal(pat(weight).partition(ec), Call(embedded, (x, b)))


OUTSIDE = """
def @main(%data: Tensor[(1, 4, 6, 6), float32], %weight: Tensor[(8, 4, 3, 3), float32],
          %bias: Tensor[(8), float32]) {
  %0 = expand_dims(%bias, axis=1, num_newaxis=2);
  %1 = nn.conv2d(%data, %weight, padding=[1, 1, 1, 1], channels=8, kernel_size=[3, 3]);
  %2 = add(%1, %0);
  %3 = sigmoid(%2);
  %4 = multiply(%2, %3);
  nn.relu(%4)
}
"""

OUTSIDE_EXPECTED = """
def @main(%data: Tensor[(1, 4, 6, 6), float32], %weight: Tensor[(8, 4, 3, 3), float32],
          %bias: Tensor[(8), float32]) {
  %0 = expand_dims(%bias, axis=1, num_newaxis=2);
  %1 = nn.conv2d(%data, %weight, padding=[1, 1, 1, 1], channels=8, kernel_size=[3, 3]);
  %2 = add(%1, %0);
  %3 = sigmoid(%2);
  %4 = fn (%p0: Tensor[(1, 4, 6, 6), float32], %p1: Tensor[(8, 4, 3, 3), float32],
           %p2: Tensor[(8, 1, 1), float32], %p3: Tensor[(1, 8, 6, 6), float32],
           PartitionedFromPattern="nn.conv2d_add_multiply_") {
    %5 = nn.conv2d(%p0, %p1, padding=[1, 1, 1, 1], channels=8, kernel_size=[3, 3]);
    %6 = add(%5, %p2);
    multiply(%6, %p3)
  };
  %7 = %4(%data, %weight, %0, %3);
  nn.relu(%7)
}
"""


def test_matched_outside_but_dominated():
    """The add's value also feeds the sigmoid, but the sigmoid flows back
    into the multiply (the group's root): the group is made, the add is
    computed twice."""
    mod = infer_types(aot.parse(OUTSIDE))
    pat = is_op("multiply")(is_op("add")(is_op("nn.conv2d")(wildcard(), wildcard()),
                                         wildcard()), wildcard())
    out = pat.partition(mod)
    assert_structural_equal(out, infer_types(aot.parse(OUTSIDE_EXPECTED)))
    verify_module(out)
    rng = np.random.default_rng(1)
    args = [rng.standard_normal(s).astype(np.float32)
            for s in [(1, 4, 6, 6), (8, 4, 3, 3), (8,)]]
    np.testing.assert_allclose(aot.interpret(out, *args), aot.interpret(mod, *args),
                               rtol=1e-6, atol=1e-6)


def test_partition_parallel_branch_with_same_input():
    pat = is_op("add")(is_op("multiply")(wildcard(), wildcard()),
                       is_op("add")(wildcard(), wildcard()))
    i, w, left, right = fresh("input", "weight", "left", "right")
    conv = C("nn.conv2d", i, w)
    e = C("add", C("multiply", left, conv), C("add", conv, right))
    lf, mf, rf = fresh("leftf", "midf", "rightf")
    f = fn([lf, mf, rf], C("add", C("multiply", lf, mf), C("add", mf, rf)), "multiply_add_add_")
    assert_structural_equal(pat.partition(e), Call(f, (left, conv, right)))


def test_function_pattern_root_is_refused():
    x = Var("x")
    e = Function((x,), relu(x))
    assert FunctionPattern(None, wildcard()).partition(e) is e


def test_leaf_patterns_make_no_partition():
    x = Var("x")
    e = C("add", relu(x), const(1.0))
    assert wildcard().partition(e) is e
    assert is_var().partition(x) is x
    assert is_constant().partition(e) is e
    assert is_op("nn.relu").partition(e) is e


def test_partitioned_functions_are_not_searched_again():
    pat = is_op("nn.relu")(wildcard())
    x = Var("x")
    once = pat.partition(relu(x))
    assert pat.partition(once) is once


MODEL = """
def @main(%x: Tensor[(1, 3, 8, 8), float32], %w: Tensor[(4, 3, 3, 3), float32],
          %b: Tensor[(4), float32]) {
  %0 = nn.conv2d(%x, %w, padding=[1, 1, 1, 1]);
  %1 = nn.bias_add(%0, %b);
  %2 = nn.relu(%1);
  %3 = nn.conv2d(%2, meta[relay.Constant][0], padding=[1, 1, 1, 1]);
  nn.relu(%3)
}
"""


def test_partition_module_composite_typed_and_same_meaning():
    w2 = np.random.default_rng(2).standard_normal((4, 4, 3, 3)).astype(np.float32)
    mod = aot.parse(MODEL.replace("meta[relay.Constant][0]", "%c")
                    .replace("%b: Tensor[(4), float32]", "%b: Tensor[(4), float32], "
                             "%c: Tensor[(4, 4, 3, 3), float32]"))
    conv = is_op("nn.conv2d")(wildcard(), wildcard())
    pat = is_op("nn.relu")(conv.optional(lambda p: is_op("nn.bias_add")(p, wildcard())))
    out = pat.partition(mod, {"Composite": "conv_relu"})
    assert out.is_typed
    verify_module(out)
    calls = [n for n in post_order(out["main"]) if isinstance(n, Call)
             and isinstance(n.op, Function)]
    assert sorted(c.op.attrs.get("PartitionedFromPattern") for c in calls) == \
        ["nn.conv2d_nn.bias_add_nn.relu_", "nn.conv2d_nn.relu_"]
    assert all(c.op.attrs.get("Composite") == "conv_relu" for c in calls)
    rng = np.random.default_rng(3)
    args = [rng.standard_normal(s).astype(np.float32)
            for s in [(1, 3, 8, 8), (4, 3, 3, 3), (4,)]] + [w2]
    np.testing.assert_allclose(aot.interpret(out, *args), aot.interpret(mod, *args),
                               rtol=1e-5, atol=1e-5)


def test_partition_deep_graph():
    x = Var("x")
    e = x
    for _ in range(5_000):
        e = C("nn.relu", C("exp", e))
    out = is_op("nn.relu")(is_op("exp")(wildcard())).partition(e)
    calls = [n for n in post_order(out) if isinstance(n, Call) and isinstance(n.op, Function)]
    assert len(calls) == 5_000
    assert all(c.op.attrs.get("PartitionedFromPattern") == "exp_nn.relu_" for c in calls)


def test_unused_parameter_of_a_matched_function_is_not_an_input():
    x, y, p, q = fresh("x", "y", "p", "q")
    inner = Function((p, q), relu(p))               # q unused
    pat = FunctionPattern([wildcard(), wildcard()], wildcard())(wildcard(), wildcard())
    out = pat.partition(C("exp", Call(inner, (x, y))))
    a, b = fresh("a", "b")
    f = fn([a, b], Call(inner, (a, b)), "nn.relu_FunctionCall_")
    assert_structural_equal(out, C("exp", Call(f, (x, y))))


def test_node_matched_by_a_call_pattern_and_a_wildcard_is_computed_inside():
    # multiply(add(a, b), c) on multiply(%s, %s), %s = add(%v, %v): the
    # wildcard c also matches %s, but %s belongs to the group
    v = Var("v")
    s = C("add", v, v)
    e = C("exp", C("multiply", s, s))
    pat = is_op("multiply")(is_op("add")(wildcard(), wildcard()), wildcard())
    p = Var("p")
    inner = C("add", p, p)
    f = fn([p], C("multiply", inner, inner), "add_multiply_")
    assert_structural_equal(pat.partition(e), C("exp", Call(f, (v,))))


def test_captured_variable_used_elsewhere_does_not_block_a_group():
    x, z, p = fresh("x", "z", "p")
    inner = Function((p,), C("add", p, z))          # captures %z
    e = C("add", C("exp", Call(inner, (x,))), z)
    pat = is_op("exp")(FunctionPattern(None, wildcard())(wildcard()))
    a = Var("a")
    f = fn([a], C("exp", Call(inner, (a,))), "add_FunctionCall_exp_")
    assert_structural_equal(pat.partition(e), C("add", Call(f, (x,)), z))
