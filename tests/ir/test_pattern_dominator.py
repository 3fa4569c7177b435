"""aot.ir.pattern: dominator patterns (TVM's test_dataflow_pattern.py diamond cases)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from aot import builder as B
from aot.ir import Var
from aot.ir.dtype import DType
from aot.ir.pattern import dominates, is_op, wildcard
from aot.ir.pattern.graph import ExprGraph
from aot.ir.registry import PatternKind
from aot.ir.types import TensorType

K_ELEMWISE = int(PatternKind.ELEMWISE)


def C(name, *args, **attrs):
    return B.call(name, *args, **attrs)


def conv(x, w):
    return C("nn.conv2d", x, w)


def relu(x):
    return C("nn.relu", x)


def leaky(x):
    return C("nn.leaky_relu", x, alpha=0.0)


def elemwise_path():
    return wildcard().has_attr({"TOpPattern": K_ELEMWISE})(wildcard())


def diamond(path=None):
    return dominates(is_op("nn.conv2d")(wildcard(), wildcard()), path or elemwise_path(),
                     is_op("add")(wildcard(), wildcard()))


def fuzzy_diamond():
    return diamond(elemwise_path() | is_op("add")(wildcard(), wildcard()))


# The four shapes of TVM's test_match_dominator / test_quadruple_* tests.
def classic(x, w):
    c = conv(x, w)
    return C("add", relu(relu(c)), leaky(c))


def deeper(x, w):
    c = conv(x, w)
    return C("add", C("tanh", relu(relu(c))), leaky(c))


def single_branch(x, w):
    r = relu(relu(conv(x, w)))
    return C("add", r, C("tanh", r))


def nested(x, w):
    c = conv(x, w)
    r = relu(c)
    return C("add", C("tanh", C("add", r, r)), leaky(c))


def test_match_dominator():
    x, w = Var("input"), Var("weight")
    assert diamond().match(classic(x, w))
    assert diamond().match(deeper(x, w))
    assert diamond().match(single_branch(x, w))
    assert fuzzy_diamond().match(nested(x, w))


def test_not_match_dominator():
    x, w = Var("input"), Var("weight")
    # fake diamond: two different convolutions
    fake = C("add", relu(conv(Var("input1"), Var("weight1"))),
             leaky(conv(Var("input2"), Var("weight2"))))
    assert not diamond().match(fake)
    # an add on the path does not match the elementwise path pattern
    assert not diamond().match(nested(x, w))
    # relu on the input instead of the conv: that path never reaches the parent
    c = conv(x, w)
    assert not diamond().match(C("add", relu(x), leaky(c)))
    # no conv at all
    r = relu(relu(x))
    assert not diamond().match(C("add", r, C("tanh", r)))


def test_at_most_one_parent():
    #       n6(P)
    #      /  \
    #     n7   \
    #    /      \
    #    n8(P)  n10(I)
    #    \      /
    #    n9(I) /
    #      \  /
    #      n11(C)
    P = is_op("nn.conv2d")(wildcard(), wildcard())
    I = is_op("nn.relu")(wildcard())
    Cp = is_op("add")(wildcard(), wildcard())
    x, w = Var("x"), Var("w")
    n6 = conv(x, w)
    n7 = C("tanh", n6)
    n8 = conv(n7, w)
    n9 = relu(n8)
    n10 = relu(n6)
    n11 = C("add", n9, n10)
    assert not dominates(P, I, Cp).match(n11)
    # without the jump over n7 it matches
    assert dominates(P, I, Cp).match(C("add", relu(n6), relu(relu(n6))))


def test_not_match_dominator2():
    P = is_op("nn.conv2d")(wildcard(), wildcard())
    I = is_op("nn.relu")(wildcard())
    Cp = is_op("add")(wildcard(), wildcard())
    x, w = Var("x"), Var("w")
    n6 = conv(x, w)
    n8 = conv(C("tanh", n6), w)
    n10 = C("add", n8, relu(n6))
    assert not dominates(P, I, Cp).match(n10)


def test_parent_must_be_post_dominated_by_child():
    # every input path of the add reaches the conv, but the conv is also
    # used outside the diamond: the add does not post-dominate it
    x, w = Var("x"), Var("w")
    c = conv(x, w)
    inner = C("add", relu(c), leaky(c))
    assert diamond().match(inner)
    outer = C("add", inner, C("sigmoid", c))
    from aot.ir.pattern import DFPatternMatcher
    m = DFPatternMatcher(outer)
    assert not m.match(diamond(), inner)


def test_dominates_method_and_node_map():
    parent = is_op("nn.conv2d")(wildcard(), wildcard())
    path = elemwise_path()
    child = is_op("add")(wildcard(), wildcard())
    pat = child.dominates(parent, path)
    x, w = Var("x"), Var("w")
    e = classic(x, w)
    from aot.ir.pattern import DFPatternMatcher
    m = DFPatternMatcher(e)
    assert m.match(pat, e)
    node_map = m.node_map()
    assert node_map[parent] == [e.args[0].args[0].args[0]]   # the one conv
    assert len(node_map[path]) == 3                          # relu, relu, leaky_relu
    assert child.dominates(parent).match(e)                  # default path: anything


def tvar(name, shape):
    return Var(name, TensorType(shape, DType.FLOAT32))


def typed_diamond(dtype, shape):
    return dominates(is_op("nn.conv2d")(wildcard(), wildcard()),
                     elemwise_path().has_dtype(dtype),
                     is_op("add")(wildcard(), wildcard()).has_shape(shape))


def test_match_typed_dominator():
    e = classic(tvar("input", (1, 3, 12, 12)), tvar("weight", (3, 3, 3, 3)))
    assert typed_diamond("float32", [1, 3, 10, 10]).match(e)
    assert not typed_diamond("float32", [1, 1, 10, 10]).match(e)
    assert not typed_diamond("float16", [1, 3, 10, 10]).match(e)


def test_long_path_is_walked_iteratively():
    x, w = Var("x"), Var("w")
    c = conv(x, w)
    r = c
    for _ in range(10_000):
        r = relu(r)
    e = C("add", r, leaky(c))
    assert diamond().match(e)
    assert not diamond(is_op("nn.relu")(wildcard())).match(e)


def test_graph_post_dominators():
    x, w = Var("x"), Var("w")
    c = conv(x, w)
    r1, r2 = relu(c), leaky(c)
    root = C("add", r1, r2)
    g = ExprGraph(root)
    assert g.post_dominates(root, c)
    assert not g.post_dominates(r1, c)
    assert g.post_dominates(root, r1)
    assert set(map(id, g.dominator_subtree(root))) >= {id(c), id(r1), id(r2)}
    assert g.outputs_of(c) == [r1, r2]
    assert g.inputs_of(root)[1:] == [r1, r2]


def _reaches_root_avoiding(g, b, a):
    root = g.index[g.root]
    stack, seen = [g.index[b]], set()
    while stack:
        i = stack.pop()
        if i == g.index[a] or i in seen:
            continue
        if i == root:
            return True
        seen.add(i)
        stack.extend(g.outputs[i])
    return False


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["nn.relu", "add", "multiply"]),
                          st.integers(0, 50), st.integers(0, 50)), min_size=1, max_size=25))
def test_post_dominators_agree_with_their_definition(steps):
    nodes = [Var("x"), Var("y")]
    for name, i, j in steps:
        a, b = nodes[-1 - i % len(nodes)], nodes[-1 - j % len(nodes)]
        nodes.append(C(name, a) if name == "nn.relu" else C(name, a, b))
    g = ExprGraph(nodes[-1])
    for a in g.nodes:
        for b in g.nodes:
            expected = a is not b and not _reaches_root_avoiding(g, b, a)
            assert g.post_dominates(a, b) == expected, (a, b)
