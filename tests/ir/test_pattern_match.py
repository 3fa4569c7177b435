"""aot.ir.pattern: pattern records and the matcher (TVM's test_dataflow_pattern.py,
node and matcher cases)."""

from __future__ import annotations

import numpy as np
import pytest

from aot import builder as B
from aot.ir import (Call, Function, If, Let, Tuple, TupleGetItem, Var, const, op)
from aot.ir.attrs import FuncAttrs, RawCallAttrs
from aot.ir.dtype import DType
from aot.ir.module import IRModule
from aot.ir.pattern import (AltPattern, AttrPattern, CallPattern, ConstantPattern,
                            DataTypePattern, DFPatternMatcher, ExprPattern, FunctionPattern,
                            IfPattern, LetPattern, PatternError, ShapePattern,
                            TupleGetItemPattern, TuplePattern, TypePattern, VarPattern,
                            WildcardPattern, has_attr, has_dtype, has_shape, has_type,
                            is_constant, is_expr, is_if, is_let, is_op, is_tuple,
                            is_tuple_get_item, is_var, match, wildcard)
from aot.ir.registry import PatternKind
from aot.ir.types import TensorType
from aot.ir.type_infer import infer_types

K_ELEMWISE = int(PatternKind.ELEMWISE)
K_BROADCAST = int(PatternKind.BROADCAST)


def C(name, *args, **attrs):
    return B.call(name, *args, **attrs)


def typed_body(params, body):
    """The body of ``fn(params) { body }`` after type inference."""
    return infer_types(IRModule.from_expr(Function(tuple(params), body)))["main"].body


# ============================================================ node records

def test_node_records():
    wc1, wc2 = wildcard(), wildcard()
    c = is_op("add")(wc1, wc2)
    assert isinstance(c, CallPattern) and c.args == (wc1, wc2)
    assert isinstance(c.op, ExprPattern) and c.op.expr is op("add")
    f = FunctionPattern([wc1, wc2], c)
    assert f.params == (wc1, wc2) and f.body is c
    t = is_tuple([wc1, wc2])
    assert isinstance(t, TuplePattern) and t.fields == (wc1, wc2)
    tgi = is_tuple_get_item(t, 1)
    assert isinstance(tgi, TupleGetItemPattern) and tgi.tuple is t and tgi.index == 1
    assert is_tuple_get_item(t).index is None
    assert isinstance(is_op("add") | is_op("subtract"), AltPattern)
    assert isinstance(is_var("x"), VarPattern) and is_var("x").name == "x"
    assert isinstance(is_constant(), ConstantPattern)
    assert isinstance(wildcard(), WildcardPattern)
    assert isinstance(is_expr(Var("x")), ExprPattern)
    tt = TensorType((10, 10), DType.FLOAT32)
    assert isinstance(has_type(tt), TypePattern) and has_type(tt).type == tt
    assert isinstance(has_dtype("float16"), DataTypePattern)
    assert has_dtype("float16").dtype is DType.FLOAT16
    assert isinstance(has_shape([10, 10]), ShapePattern) and has_shape([10, 10]).shape == (10, 10)
    a = is_op("add").has_attr({"TOpPattern": K_ELEMWISE})
    assert isinstance(a, AttrPattern) and dict(a.attrs) == {"TOpPattern": K_ELEMWISE}
    x, y = is_var("x"), is_var("y")
    i = is_if(is_op("less")(x, y), x, y)
    assert isinstance(i, IfPattern) and isinstance(i.cond, CallPattern)
    lv = is_var("let")
    let = is_let(lv, is_op("less")(x, y), lv)
    assert isinstance(let, LetPattern) and let.var is lv and let.body is lv
    assert wildcard()(None).args is None
    assert isinstance(wildcard() + wildcard(), CallPattern)
    assert (wildcard() / wildcard()).op.expr is op("divide")


def test_patterns_are_identities():
    a, b = wildcard(), wildcard()
    assert a != b and a == a and len({a, b}) == 2


def test_expressions_become_expr_patterns():
    x = Var("x")
    p = is_op("add")(x, wildcard())
    assert isinstance(p.args[0], ExprPattern) and p.args[0].expr is x


@pytest.mark.parametrize("build", [
    lambda: is_op("no.such.op"),
    lambda: is_op("add")(1, 2),
    lambda: has_dtype("float99"),
    lambda: has_shape(["a"]),
    lambda: is_tuple(wildcard()),
    lambda: has_attr(["x"]),
    lambda: is_tuple_get_item(wildcard(), -1),
])
def test_bad_patterns_are_refused(build):
    with pytest.raises(PatternError):
        build()


def test_repr():
    p = is_op("nn.relu")(is_op("add")(wildcard(), is_constant()) | is_var("x"))
    assert repr(p) == 'is_op("nn.relu")((is_op("add")(*, is_constant()) | is_var("x")))'
    assert repr(is_tuple(None)) == "(...)"
    assert repr(is_tuple_get_item(wildcard())) == "*.?"


# ============================================================ matcher

x, y, z, w, b = (Var(n) for n in ("x", "y", "z", "w", "b"))


MATCHES = [
    ("op", is_op("add"), op("add"), True),
    ("other op", is_op("add"), op("subtract"), False),
    ("alt left", is_op("add") | is_op("subtract"), op("add"), True),
    ("alt right", is_op("add") | is_op("subtract"), op("subtract"), True),
    ("add commutes", is_op("add")(is_var("x"), is_var("y")), C("add", y, x), True),
    ("add in order", is_op("add")(is_var("x"), is_var("y")), C("add", x, y), True),
    ("multiply commutes", is_op("multiply")(is_var("x"), is_var("y")), C("multiply", y, x), True),
    ("subtract in order", is_op("subtract")(is_var("x"), is_var("y")), C("subtract", x, y), True),
    ("subtract does not commute", is_op("subtract")(is_var("x"), is_var("y")),
     C("subtract", y, x), False),
    ("divide does not commute", is_op("divide")(is_var("x"), is_var("y")),
     C("divide", y, x), False),
    ("call wildcards", is_op("add")(wildcard(), wildcard()), C("add", x, y), True),
    ("call other op", is_op("add")(wildcard(), wildcard()), C("subtract", x, y), False),
    ("any args, unary", wildcard()(None), C("nn.relu", x), True),
    ("any args, binary", wildcard()(None), C("add", x, y), True),
    ("arity differs", is_op("add")(wildcard()), C("add", x, y), False),
    ("not a call", is_op("add")(wildcard(), wildcard()), x, False),
    ("var any name", is_var(), x, True),
    ("var by name", is_var("x"), x, True),
    ("var other name", is_var("x"), y, False),
    ("constant", is_constant(), const(1.0), True),
    ("not constant", is_constant(), x, False),
    ("expr structural", is_expr(const(0.0)), const(0.0), True),
    ("expr other dtype", is_expr(const(0)), const(0.0), False),
    ("expr var identity", is_expr(x), x, True),
    ("expr var other", is_expr(x), Var("x"), False),
    ("if", is_if(is_op("less")(is_var("x"), is_var("y")), is_var("x"), is_var("y")),
     If(C("less", x, y), x, y), True),
    ("if other cond", is_if(is_op("less")(is_var("x"), is_var("y")), is_var("x"), is_var("y")),
     If(C("greater", x, y), x, y), False),
    ("if swapped branches", is_if(is_op("less")(is_var("x"), is_var("y")), is_var("x"),
                                  is_var("y")), If(C("less", x, y), y, x), False),
    ("tuple", is_tuple((is_var("x"), wildcard(), is_op("add"))), Tuple((x, y, op("add"))), True),
    ("tuple too short", is_tuple((is_var("x"), wildcard(), is_op("add"), wildcard())),
     Tuple((x, y, op("add"))), False),
    ("tuple any fields", is_tuple(None), Tuple((x,)), True),
    ("getitem", is_tuple_get_item(is_tuple((is_var("x"), wildcard())), 1),
     TupleGetItem(Tuple((x, y)), 1), True),
    ("getitem other index", is_tuple_get_item(is_tuple((is_var("x"), wildcard())), 1),
     TupleGetItem(Tuple((x, y)), 0), False),
    ("getitem any index", is_tuple_get_item(is_tuple(None)), TupleGetItem(Tuple((x, y)), 0), True),
]


@pytest.mark.parametrize("name,pattern,expr,expected", MATCHES, ids=[m[0] for m in MATCHES])
def test_match_table(name, pattern, expr, expected):
    assert pattern.match(expr) is expected
    assert match(pattern, expr) is expected


def test_match_concat_of_any_tuple():
    pat = is_op("concatenate")(is_tuple(None))
    for fields in [(x,), (x, y), (x, y, z)]:
        assert pat.match(C("concatenate", Tuple(fields), axis=0))


def test_match_let():
    lv = Var("let")
    pv = is_var("let")
    pat = is_let(pv, is_op("less")(is_var("x"), is_var("y")), pv)
    assert pat.match(Let(lv, C("less", x, y), lv))
    assert not pat.match(Let(lv, C("greater", x, y), lv))
    assert not pat.match(Let(lv, C("less", x, y), C("multiply", lv, x)))


def test_match_function():
    wc1, wc2 = wildcard(), wildcard()
    pat = FunctionPattern([wc1, wc2], wc1 + wc2)
    a, c = Var("a"), Var("c")
    assert pat.match(Function((a, c), C("add", a, c)))
    assert not pat.match(Function((a, c), C("subtract", a, c)))
    assert not pat.match(Function((a, c), C("add", a, a)))  # wc2 bound to c
    anything = FunctionPattern(None, wildcard())
    assert anything.match(Function((a,), a))
    assert anything.match(Function((a, c), C("add", a, c)))


def test_shared_pattern_needs_shared_expression():
    v = wildcard()
    pat = is_op("add")(v, v)
    assert pat.match(C("add", x, x))
    assert not pat.match(C("add", x, Var("x")))


def test_match_option():
    pat = is_op("nn.relu")(is_op("nn.conv2d")(wildcard(), wildcard()).optional(
        lambda p: is_op("nn.bias_add")(p, wildcard())))
    assert pat.match(C("nn.relu", C("nn.conv2d", x, w)))
    assert pat.match(C("nn.relu", C("nn.bias_add", C("nn.conv2d", x, w), b)))
    assert not pat.match(C("tanh", C("nn.conv2d", x, w)))
    assert not pat.match(C("tanh", C("nn.dense", x, w)))
    assert not pat.match(C("nn.relu", C("nn.bias_add", C("nn.dense", x, w), b)))
    assert not pat.match(C("nn.relu", C("add", C("nn.conv2d", x, w), w)))

    chained = is_op("nn.conv2d")(wildcard(), wildcard()) \
        .optional(is_op("nn.relu")).optional(is_op("tanh"))
    conv = C("nn.conv2d", x, w)
    relu, tanh = C("nn.relu", conv), C("tanh", conv)
    assert chained.match(conv)
    assert chained.match(relu)
    assert chained.match(tanh)
    assert chained.match(C("tanh", relu))
    assert not chained.match(C("nn.relu", tanh))


def test_match_const_after_binding():
    pat = is_op("nn.bias_add")(is_op("nn.conv2d")(wildcard(), is_constant()), wildcard())
    assert not pat.match(C("nn.bias_add", C("nn.conv2d", x, w), b))
    weight = const(np.ones((3, 3, 3, 3), np.float32))
    assert pat.match(C("nn.bias_add", C("nn.conv2d", x, weight), b))


# ------------------------------------------------------------ types

def tvar(name, shape, dtype="float32"):
    return Var(name, TensorType(tuple(shape), DType.parse(dtype)))


@pytest.mark.parametrize("pattern,dtype,expected", [
    (has_type(TensorType((10, 10), DType.FLOAT32)), "float32", True),
    (has_type(TensorType((10, 10), DType.FLOAT32)), "int32", False),
    (has_dtype("float32"), "float32", True),
    (has_dtype("float32"), "int32", False),
    (has_shape((10, 10)), "int32", True),
    (has_shape((10, 5)), "int32", False),
    (wildcard().has_dtype(DType.INT32).has_shape([10, 10]), "int32", True),
])
def test_match_types_of_annotated_var(pattern, dtype, expected):
    v = tvar("x", (10, 10), dtype)
    assert pattern.match(v) is expected   # typed on demand (no checked_type yet)
    assert pattern.match(typed_body([v], v)) is expected


def test_type_patterns_read_inferred_types():
    a, c = tvar("a", (2, 3)), tvar("c", (3,))
    body = typed_body([a, c], C("add", a, c))
    assert body.checked_type == TensorType((2, 3), DType.FLOAT32)
    assert is_op("add")(wildcard(), wildcard().has_shape((3,))).has_shape((2, 3)).match(body)
    assert not is_op("add")(wildcard().has_shape((3,)), wildcard().has_shape((3,))).match(body)


def test_untyped_subexpression_is_typed_from_its_root():
    a = tvar("a", (2, 3))
    inner = C("nn.relu", a)
    root = C("add", inner, a)
    pat = is_op("add")(is_op("nn.relu")(wildcard()).has_dtype("float32"), wildcard())
    assert pat.match(root)
    # an expression that does not type-check has no types: no match, no error
    bad = C("add", C("nn.relu", a), tvar("q", (5, 7)))
    assert not is_op("add")(wildcard().has_dtype("float32"), wildcard()).match(bad)
    assert is_op("add")(wildcard(), wildcard()).match(bad)


def test_type_of_untyped_var_is_unknown():
    assert not has_dtype("float32").match(Var("x"))


# ------------------------------------------------------------ attributes

def test_match_op_attr():
    assert is_op("add").has_attr({"TOpPattern": K_BROADCAST})(wildcard(), wildcard()) \
        .match(C("add", x, y))
    assert wildcard().has_attr({"TOpPattern": K_ELEMWISE})(wildcard()).match(C("nn.relu", x))
    assert wildcard().has_attr({"TOpPattern": "elemwise"})(wildcard()).match(C("nn.relu", x))
    assert wildcard().has_attr({"family": "nn", "arity": 1})(None).match(C("nn.relu", x))


def test_no_match_op_attr():
    assert not is_op("nn.dense").has_attr({"TOpPattern": K_ELEMWISE})(wildcard(), wildcard()) \
        .match(C("nn.dense", x, y))
    add_bcast = is_op("add").has_attr({"TOpPattern": K_BROADCAST})(wildcard(), wildcard())
    assert not add_bcast.match(C("subtract", x, y))
    assert not add_bcast.match(Let(z, C("add", x, y), z))
    assert not is_op("add").has_attr({"NoSuchColumn": 1}).match(op("add"))


def test_match_func_attr():
    pat = wildcard().has_attr({"Composite": "add"})
    a, c = Var("a"), Var("c")
    f = Function((a, c), C("add", a, c), attrs=FuncAttrs.of({"Composite": "add"}))
    assert pat.match(f)
    assert not pat.match(Function((a, c), C("add", a, c),
                                  attrs=FuncAttrs.of({"RandomTest": "add"})))
    assert not pat.match(Function((a, c), C("add", a, c),
                                  attrs=FuncAttrs.of({"Composite": "conv_bias"})))
    assert not pat.match(C("add", a, c).op)


def test_match_call_attr():
    conv = C("nn.conv2d", x, y)
    assert is_op("nn.conv2d")(wildcard(), wildcard()).has_attr({"data_layout": "NCHW"}).match(conv)
    k33 = is_op("nn.conv2d")(wildcard(), wildcard()).has_attr({"kernel_size": [3, 3]})
    assert k33.match(C("nn.conv2d", x, y, kernel_size=[3, 3]))
    assert not k33.match(C("nn.conv2d", x, y, kernel_size=[2, 1]))
    assert not k33.match(conv)  # kernel_size None
    assert not is_op("nn.conv2d")(wildcard(), wildcard()).has_attr({"data_layout": "NHWC"}) \
        .match(conv)
    assert not is_op("nn.conv2d")(wildcard(), wildcard()).has_attr({"RandomAttr": "NCHW"}) \
        .match(conv)
    assert not is_op("nn.conv2d")(wildcard(), wildcard()).has_attr({"data_layout": 3}) \
        .match(conv)
    assert is_op("cast")(wildcard()).has_attr({"dtype": "float32"}).match(
        C("cast", x, dtype="float32"))
    assert not is_op("cast")(wildcard()).has_attr({"dtype": "int8"}).match(
        C("cast", x, dtype="float32"))
    assert is_op("nn.leaky_relu")(wildcard()).has_attr({"alpha": 0}).match(
        C("nn.leaky_relu", x, alpha=0.0))


def test_match_raw_call_attr():
    a, c = Var("a"), Var("c")
    has = wildcard()(wildcard()).has_attr({"call_attr": "attr"})
    assert has.match(Call(a, (c,), RawCallAttrs.from_raw({"call_attr": "attr"})))
    assert not has.match(Call(a, (c,)))
    assert not has.match(Call(a, (c,), RawCallAttrs.from_raw({"wrong": "attr"})))
    assert not has.match(Call(a, (c,), RawCallAttrs.from_raw({"call_attr": "wrong"})))
    assert not has.match(Call(a, (c,), RawCallAttrs.from_raw({})))
    empty = wildcard()(wildcard()).has_attr({})
    assert empty.match(Call(a, (c,), RawCallAttrs.from_raw({})))
    assert empty.match(Call(a, (c,), RawCallAttrs.from_raw({"call_attr": "attr"})))
    lists = wildcard()(wildcard()).has_attr({"k": [1, 2]})
    assert lists.match(Call(a, (c,), RawCallAttrs.from_raw({"k": [1, 2]})))


# ------------------------------------------------------------ graphs

def diamond_pattern():
    conv = is_op("nn.conv2d")(wildcard(), wildcard())
    return is_op("add")(is_op("nn.relu")(conv), is_op("nn.leaky_relu")(conv))


def test_match_diamond():
    conv = C("nn.conv2d", x, w)
    relu, leaky = C("nn.relu", conv), C("nn.leaky_relu", conv, alpha=0.0)
    assert diamond_pattern().match(C("add", relu, leaky))
    assert not diamond_pattern().match(relu)
    assert not diamond_pattern().match(leaky)


def test_no_match_fake_diamond():
    relu = C("nn.relu", C("nn.conv2d", x, w))
    leaky = C("nn.leaky_relu", C("nn.conv2d", y, b), alpha=0.0)
    assert not diamond_pattern().match(C("add", relu, leaky))


def test_match_batchnorm_shape_in_every_association():
    gamma, mean, var, beta = (Var(n) for n in ("gamma", "mean", "var", "beta"))
    pat = (wildcard() * (wildcard() - wildcard()) / is_op("sqrt")(wildcard() + is_constant())
           + wildcard())
    eps = const(1e-5)
    sub = C("subtract", x, mean)
    den = C("sqrt", C("add", var, eps))
    forms = [
        C("add", C("divide", C("multiply", gamma, sub), den), beta),
        C("add", beta, C("divide", C("multiply", gamma, sub), den)),
        C("add", C("multiply", gamma, C("divide", sub, den)), beta),
        C("add", C("multiply", C("divide", sub, den), gamma), beta),
    ]
    for form in forms:
        assert pat.match(form), form
    assert not pat.match(C("subtract", C("divide", C("multiply", gamma, sub), den), beta))


def test_node_map_after_match():
    v, c = wildcard(), is_constant()
    pat = is_op("add")(v, c)
    one = const(1.0)
    m = DFPatternMatcher(C("add", one, x))
    root = m.root
    assert m.match(pat, root)
    node_map = m.node_map()
    assert node_map[v] == [x] and node_map[c] == [one] and node_map[pat] == [root]


def test_failed_alternative_leaves_no_bindings():
    v = wildcard()
    pat = is_op("add")(is_op("nn.relu")(v) | is_op("tanh")(wildcard()), v)
    relu_case = C("add", C("nn.relu", x), x)
    tanh_case = C("add", C("tanh", y), x)
    assert pat.match(relu_case)
    assert pat.match(tanh_case)


def test_match_deep_expression_does_not_recurse_over_it():
    e = x
    for _ in range(10_000):
        e = C("nn.relu", e)
    assert is_op("nn.relu")(is_op("nn.relu")(wildcard())).match(e)
    assert is_expr(e).match(e)
    assert has_dtype("float32").match(e) is False  # untyped x: no type, no error
