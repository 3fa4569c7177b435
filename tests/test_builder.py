"""The builder API builds the IR nodes it promises."""

from __future__ import annotations

import dataclasses
import inspect

import numpy as np
import pytest

from aot import builder as B
from aot import parse
from aot.ir.adt import PatternConstructor, PatternTuple, PatternVar, PatternWildcard, TypeData
from aot.ir.analysis import free_vars
from aot.ir.dtype import DType
from aot.ir.expr import (Call, Constant, Function, GlobalVar, If, Let, Match, Op, RefCreate,
                         RefRead, RefWrite, Tuple, TupleGetItem, Var)
from aot.ir.registry import all_ops
from aot.ir.types import (ANY, FuncType, GlobalTypeVar, RefType, TensorType, TupleType,
                          TypeCall, TypeVar)
from aot.ir.visitor import post_order

List = B.adt("List", ["A"], lambda L, A: [("Cons", [A, L[A]]), ("Nil", [])])


# ---------------------------------------------------------------- types

@pytest.mark.parametrize("built, expected", [
    (B.tensor((2, 3)), TensorType((2, 3), DType.FLOAT32)),
    (B.tensor((2, None, "?"), "int8"), TensorType((2, ANY, ANY), DType.INT8)),
    (B.tensor(4, "uint8"), TensorType((4,), DType.UINT8)),
    (B.scalar("int32"), TensorType((), DType.INT32)),
    (B.scalar("float"), TensorType((), DType.FLOAT32)),
    (B.tuple_type("int32", B.tensor((1,))), TupleType((TensorType((), DType.INT32),
                                                       TensorType((1,), DType.FLOAT32)))),
    (B.tuple_type(), TupleType(())),
    (B.func_type(["int32"], "bool"), FuncType((TensorType((), DType.INT32),),
                                              TensorType((), DType.BOOL))),
    (B.ref_type("float64"), RefType(TensorType((), DType.FLOAT64))),
])
def test_types(built, expected):
    assert built == expected


def test_bad_types_are_rejected():
    with pytest.raises(ValueError):
        B.tensor((2, -1))
    with pytest.raises(ValueError):
        B.scalar("float128")
    with pytest.raises(TypeError):
        B.as_type(3)


# ---------------------------------------------------------------- expressions

def test_const_literal_rules():
    assert B.const(1).data.dtype == np.int32
    assert B.const(1.0).data.dtype == np.float32
    assert B.const(True).data.dtype == np.bool_
    assert B.const(2, "int64").data.dtype == np.int64
    assert B.const(np.arange(3, dtype=np.uint16)).data.dtype == np.uint16


def test_python_numbers_take_the_dtype_of_a_known_sibling():
    x = B.var("x", B.tensor((2,), "float64"))
    call = B.add(x, 1)
    assert isinstance(call.args[1], Constant) and call.args[1].data.dtype == np.float64
    y = B.var("y", "int8")
    assert B.multiply(2, y).args[0].data.dtype == np.int8
    # An int that does not fit the sibling's dtype keeps the default rule.
    assert B.multiply(y, 1000).args[1].data.dtype == np.int32
    # Unknown sibling: Relay's literal rules.
    z = B.var("z")
    assert B.add(z, 1.5).args[1].data.dtype == np.float32


def test_node_kinds():
    x = B.var("x", "int32")
    assert isinstance(x, Var) and x.type_annotation == TensorType((), DType.INT32)
    t = B.tuple_(x, 1, (2, 3))
    assert isinstance(t, Tuple) and isinstance(t.fields[2], Tuple)
    assert isinstance(B.proj(t, 1), TupleGetItem) and B.proj(t, 1).index == 1
    assert isinstance(B.if_(True, x, 0), If)
    r = B.ref(0)
    assert isinstance(r, RefCreate)
    assert isinstance(B.ref_read(r), RefRead)
    assert isinstance(B.ref_write(r, 1), RefWrite)
    assert isinstance(B.gvar("f"), GlobalVar)


def test_nodes_carry_the_builder_call_site_span():
    x = B.var("x")
    node = B.add(x, x)
    assert node.span is not None and node.span.source == __file__
    assert x.span.line + 1 == node.span.line


def test_call_op_with_attrs_converted_by_attrs_class():
    x = B.var("x", B.tensor((2, 2), "float32"))
    c = B.call("add", x, x)
    assert isinstance(c.op, Op) and c.op.name == "add"
    w = B.var("w", B.tensor((4, 2, 3, 3), "float32"))
    conv = B.call("nn.conv2d", x, w, padding=(1, 1), channels=4, kernel_size=[3, 3])
    attrs = conv.attrs
    assert type(attrs).__name__ == "Conv2DAttrs"
    assert attrs.padding == (1, 1) and attrs.channels == 4 and attrs.kernel_size == (3, 3)
    assert attrs.strides == (1, 1)                       # defaults filled in
    total = B.call("sum", x, axis=1)
    assert total.attrs.axis == (1,)                     # a single int for a tuple field
    with pytest.raises(ValueError, match="nn.conv2d: attribute `groups`"):
        B.call("nn.conv2d", x, w, groups="two")
    with pytest.raises(ValueError, match="unknown attribute"):
        B.call("add", x, x, axis=1)
    with pytest.raises(ValueError, match="unknown operator"):
        B.call("nn.conv9d", x)
    with pytest.raises(ValueError, match="takes 2 arguments"):
        B.call("add", x)


def test_call_of_function_values():
    f = B.var("f")
    c = B.call(f, 1, 2.0)
    assert c.op is f and [a.data.dtype for a in c.args] == [np.int32, np.float32]
    c = B.call(List.Cons, 1, List.Nil)
    assert c.op is List.Cons
    with pytest.raises(ValueError):
        B.call(f, 1, axis=0)


def test_elementwise_wrappers_build_op_calls():
    x = B.var("x", "float32")
    for wrapper, name in [(B.add, "add"), (B.sub, "subtract"), (B.mul, "multiply"),
                          (B.less, "less"), (B.equal, "equal"), (B.maximum, "maximum")]:
        c = wrapper(x, 1.0)
        assert isinstance(c, Call) and c.op.name == name and len(c.args) == 2
    for wrapper, name in [(B.neg, "negative"), (B.exp, "exp"), (B.sqrt, "sqrt"),
                          (B.logical_not, "logical_not")]:
        c = wrapper(x)
        assert c.op.name == name and c.args == (x,)


# ---------------------------------------------------------------- functions

def test_function_and_lam():
    x = B.var("x", "int32")
    f = B.function([x], B.add(x, 1), ret_type="int32")
    assert isinstance(f, Function) and f.params == (x,)
    assert f.ret_type == TensorType((), DType.INT32)
    g = B.lam(lambda a, b: B.add(a, b), "int32")
    assert [p.name_hint for p in g.params] == ["a", "b"]
    assert g.params[0].type_annotation == TensorType((), DType.INT32)
    assert g.params[1].type_annotation is None
    assert g.body.args == g.params
    A = B.type_var("A")
    ident = B.lam(lambda v: v, A, ret_type=A, type_params=[A])
    assert ident.type_params == (A,) and ident.body is ident.params[0]
    with pytest.raises(TypeError):
        B.function(["x"], 1)
    with pytest.raises(TypeError):
        B.function([], 1, type_params=["A"])


def test_let_forms():
    v = B.let("x", 1, lambda x: B.add(x, x))
    assert isinstance(v, Let) and v.body.args == (v.var, v.var)
    y = B.var("y")
    assert B.let(y, 2, y).var is y


def test_scope_builds_long_let_chains_without_recursion():
    s = B.Scope()
    prev = s.let("x0", 0)
    for i in range(1, 10_000):
        prev = s.let(f"x{i}", B.add(prev, 1))
    body = s.ret(prev)
    depth = 0
    node = body
    while isinstance(node, Let):
        depth += 1
        node = node.body
    assert depth == 10_000 and node is prev
    assert free_vars(body) == []


def test_let_chain():
    a, b = B.var("a"), B.var("b")
    e = B.let_chain([(a, 1), (b, B.add(a, 1))], b)
    assert e.var is a and e.body.var is b and e.body.body is b
    with pytest.raises(TypeError):
        B.let_chain([("a", 1)], 1)


# ---------------------------------------------------------------- match

def test_patterns():
    h = B.var("h")
    p = B.pcons(List.Cons, h, B.pcons(List.Cons, "_", "t"))
    assert isinstance(p, PatternConstructor) and isinstance(p.patterns[0], PatternVar)
    inner = p.patterns[1]
    assert isinstance(inner.patterns[0], PatternWildcard)
    assert isinstance(inner.patterns[1], PatternVar) and inner.patterns[1].var.name_hint == "t"
    assert isinstance(B.ptuple(B.pwild(), B.pvar("z")), PatternTuple)
    assert B.pvar("q", "int32").var.type_annotation == TensorType((), DType.INT32)
    with pytest.raises(TypeError):
        B.pcons("Cons")


def test_match_clause_callables_get_pattern_vars_in_order():
    xs = B.var("xs")
    m = B.match(xs, [
        (B.pcons(List.Cons, "h", B.pcons(List.Cons, "h2", "_")), lambda h, h2: B.add(h, h2)),
        (B.pcons(List.Nil), 0),
        (B.pwild(), 1),
    ], complete=False)
    assert isinstance(m, Match) and not m.complete and len(m.clauses) == 3
    first = m.clauses[0]
    h, h2 = first.lhs.patterns[0].var, first.lhs.patterns[1].patterns[0].var
    assert first.rhs.args == (h, h2)


# ---------------------------------------------------------------- ADTs

def test_adt_definition():
    data = List.data
    assert isinstance(data, TypeData) and data.header == GlobalTypeVar("List")
    (A,) = data.type_vars
    cons, nil = data.constructors
    assert (cons.name, cons.tag, nil.name, nil.tag) == ("Cons", 0, "Nil", 1)
    assert cons.inputs == (A, TypeCall(GlobalTypeVar("List"), (A,)))
    assert List.Cons is cons and List.ctor("Nil") is nil
    assert List["int32"] == TypeCall(GlobalTypeVar("List"), (TensorType((), DType.INT32),))
    with pytest.raises(AttributeError):
        _ = List.Snoc
    with pytest.raises(ValueError):
        List["int32", "int32"]
    Color = B.adt("Color", [], [("Red", []), ("Green", [])])
    assert B.as_type(Color) == TypeCall(GlobalTypeVar("Color"), ())
    with pytest.raises(ValueError):
        B.adt("Bad", [], [("X", []), ("X", [])])
    T = TypeVar("T")
    Box = B.adt("Box", [T], lambda Bx, t: [("MkBox", [t])])
    assert Box.data.type_vars == (T,) and Box.MkBox.inputs == (T,)


# ---------------------------------------------------------------- modules

def test_module_resolves_globals_by_name():
    n = B.var("n", "int32")
    is_even = B.function([n], B.if_(B.equal(n, 0), True, B.call(B.gvar("is_odd"),
                                                                 B.subtract(n, 1))))
    m = B.var("m", "int32")
    is_odd = B.function([m], B.if_(B.equal(m, 0), False, B.call(B.gvar("is_even"),
                                                                B.subtract(m, 1))))
    mod = B.module(is_even=is_even, is_odd=is_odd, types=[List])
    assert set(g.name for g in mod.functions) == {"is_even", "is_odd"}
    assert mod.has_type("List")
    for func in mod.functions.values():
        for node in post_order(func):
            if isinstance(node, GlobalVar):
                assert node is mod.global_var(node.name)
    # An unchanged function is added as it is.
    k = B.function([], 1)
    assert B.module({"k": k})["k"] is k
    with pytest.raises(TypeError):
        B.module(main=B.const(1))
    with pytest.raises(ValueError):
        B.module({"main": k}, main=k)


def test_module_on_a_base_module():
    base = B.module(types=[List], one=B.function([], 1))
    mod = B.module(base=base, main=B.function([], B.call(B.gvar("one"))))
    assert "one" in mod and "main" in mod and "main" not in base
    call = mod["main"].body
    assert call.op is mod.global_var("one") is base.global_var("one")


# ---------------------------------------------------------------- operators

def _wrapper(name: str):
    """The builder's wrapper of operator ``name``: ``nn.conv2d`` is
    ``B.nn.conv2d``."""
    target = B
    for part in name.split("."):
        target = getattr(target, part, None)
    return target


@pytest.mark.parametrize("op", all_ops(), ids=lambda o: o.name)
def test_every_registered_operator_has_a_builder_wrapper(op):
    wrapper = _wrapper(op.name)
    assert callable(wrapper), (f"operator {op.name} is not reachable from the builder as "
                               f"B.{op.name}: the wrappers are generated from the registry "
                               f"in aot/builder.py")
    args = [B.var(f"a{i}") for i in range(op.arity)]
    c = wrapper(*args)
    assert isinstance(c, Call) and c.op.name == op.name and c.args == tuple(args)
    assert isinstance(c.attrs, op.attrs_type)
    params = list(inspect.signature(wrapper).parameters.values())
    assert [p.kind for p in params[:op.arity]] == [inspect.Parameter.POSITIONAL_ONLY] * op.arity
    assert [p.name for p in params[op.arity:]] == [f.name for f in dataclasses.fields(
        op.attrs_type)]


def test_operator_wrappers_take_attrs_as_keywords_and_check_them():
    x = B.var("x", B.tensor((1, 2, 4, 4)))
    w = B.var("w", B.tensor((3, 2, 3, 3)))
    conv = B.nn.conv2d(x, w, channels=3, kernel_size=[3, 3])
    assert conv.op.name == "nn.conv2d" and conv.attrs.kernel_size == (3, 3)
    assert B.sum(x, axis=1).attrs.axis == (1,)
    assert B.asin(x).op.name == "asin" and B.cosh(x).op.name == "cosh"
    with pytest.raises(ValueError, match="unknown attribute"):
        B.nn.relu(x, axis=1)
    with pytest.raises(ValueError, match="takes 2 arguments"):
        B.nn.conv2d(x)
    with pytest.raises(AttributeError, match="no operator nn.conv9d"):
        getattr(B.nn, "conv9d")  # noqa: B009 (the name is the point)


# ------------------------------------------------- defaults (Relay's Python API)

def test_wrapper_defaults_are_the_records_builder_defaults():
    """Every wrapper's keyword defaults (and the attrs of a call without
    keywords) are its record's api defaults, else the attrs class's."""
    for op_def in all_ops():
        prefix, _, short = op_def.name.rpartition(".")
        wrapper = getattr(getattr(B, prefix) if prefix else B, short)
        want = op_def.builder_defaults()
        params = inspect.signature(wrapper).parameters
        for f in dataclasses.fields(op_def.attrs_type):
            assert params[f.name].default == getattr(want, f.name), (op_def.name, f.name)
        if op_def.api_defaults is not None:
            args = [B.var(f"a{i}", B.tensor((1, 1, 2, 2))) for i in range(op_def.arity)]
            assert wrapper(*args).attrs == op_def.api_defaults, op_def.name


def test_api_defaults_differ_from_the_text_defaults():
    """Relay's Python API defaults where they differ from its C++ attrs
    (scripts/audit_relay_defaults.py lists them); the text parser keeps
    the C++ ones."""
    from aot.ir.ops.image import RoundingMethod
    from aot.ir.registry import lookup

    x = B.var("x", B.tensor((1, 1, 2, 2)))
    assert B.image.resize2d(x, size=(4, 4)).attrs.rounding_method is RoundingMethod.AUTO
    assert B.nn.leaky_relu(x).attrs.alpha == 0.01
    assert B.nn.batch_matmul(x, x).attrs.transpose_b is True
    pooled = B.qnn.avg_pool2d(x, x, x, x, x, pool_size=(1, 1)).attrs   # relay.qnn.op.avg_pool2d
    assert pooled.layout == "NHWC" and pooled.count_include_pad is True
    given = B.image.resize2d(x, size=(4, 4), rounding_method="floor", method="nearest_neighbor")
    assert given.attrs.rounding_method is RoundingMethod.FLOOR
    mod = parse("def @main(%x: Tensor[(1, 1, 2, 2), float32]) { nn.leaky_relu(%x) }")
    assert mod["main"].body.attrs.alpha == 0.25
    assert lookup("image.resize2d").attrs_type().rounding_method is RoundingMethod.ROUND
    assert lookup("nn.batch_matmul").attrs_type().transpose_b is False
    assert lookup("qnn.avg_pool2d").attrs_type().layout == "NCHW"
