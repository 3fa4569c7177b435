"""FuseOps: which operator calls share a primitive function, the exact IR
of a few fused programs (structural equality with parsed text), the same
values from the interpreter before and after, the invariants the lowering
relies on (checked on every program here and on random DAGs), and
10,000-op graphs.  Cases follow Relay's ``test_pass_fuse_ops.py``, adapted
to our rules (see the design note of :mod:`aot.passes.fuse_ops`)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import aot
from aot.ir.analysis import free_vars
from aot.ir.dtype import DType
from aot.ir.expr import Call, Constant, Expr, Function, Op, Tuple, TupleGetItem, Var, const, op
from aot.ir.module import IRModule
from aot.ir.registry import PatternKind
from aot.ir.structural import assert_structural_equal
from aot.ir.types import TensorType
from aot.ir.visitor import post_order
from aot.ir.dominators import ForwardGraph, PostDomTree, nodes_between
from aot.passes.fuse_ops import fuse_ops, is_primitive, primitive_groups
from pass_helpers import assert_same_values

K = PatternKind
F32 = DType.parse("float32")
ANCHORS = (K.COMM_REDUCE, K.OUT_ELEMWISE_FUSABLE, K.OPAQUE)


# ---------------------------------------------------------------- helpers

def typed(text: str) -> IRModule:
    return aot.infer_types(aot.parse(text, source_name="fuse.relay"))


def op_names(fn: Function) -> list[str]:
    return [n.op.name for n in post_order(fn.body) if isinstance(n, Call) and isinstance(n.op, Op)]


def groups(mod: IRModule, entry: str = "main") -> list[list[str]]:
    """The operators of each primitive function of ``@entry``, in
    evaluation order."""
    return [op_names(fn) for fn in primitive_groups(mod[entry])]


def check_group(fn: Function) -> None:
    """One primitive function obeys the backend's rules."""
    assert not free_vars(fn), "a primitive function closes over outer values"
    calls = [n for n in post_order(fn.body) if isinstance(n, Call)]
    assert all(isinstance(c.op, Op) for c in calls), "only operator calls inside a group"
    assert calls, "a group holds at least one operator call"
    anchors = [c for c in calls if c.op.op_def.pattern in ANCHORS]
    assert len(anchors) <= 1, f"two anchors: {op_names(fn)}"
    if not anchors:
        return
    anchor = anchors[0]
    if anchor.op.op_def.pattern == K.OPAQUE:
        assert len(calls) == 1, f"an opaque op fused: {op_names(fn)}"
    # the epilogue: everything computed from the anchor is elementwise on it
    downstream: set[Expr] = {anchor}
    for node in post_order(fn.body):
        if node is anchor or not isinstance(node, (Call, Tuple, TupleGetItem)):
            continue
        operands = node.args if isinstance(node, Call) else \
            node.fields if isinstance(node, Tuple) else (node.tuple_value,)
        if not any(o in downstream for o in operands):
            continue
        downstream.add(node)
        assert isinstance(anchor.checked_type, TensorType), "epilogue after a tuple anchor"
        assert isinstance(node, Call) and node.op.op_def.pattern in (K.ELEMWISE, K.BROADCAST)
        assert node.checked_type.shape == anchor.checked_type.shape


def check_fused(after: IRModule) -> None:
    """Every group obeys the rules, constants are never parameters,
    parameters are deduplicated, types are those type inference gives, and
    fusing again changes nothing."""
    for func in after.functions.values():
        for node in post_order(func):
            if isinstance(node, Call) and is_primitive(node.op):
                check_group(node.op)
                assert not any(isinstance(a, Constant) for a in node.args)
                assert len({id(a) for a in node.args}) == len(node.args)
                inner = [n for n in post_order(node.op.body) if is_primitive(n)]
                assert not inner, "nested primitive functions"
    retyped = aot.infer_types(after)
    for gv in after.functions:
        old, new = post_order(after[gv.name]), post_order(retyped[gv.name])
        assert len(old) == len(new)
        for a, b in zip(old, new):
            if not isinstance(a, Op):
                assert a.checked_type == b.checked_type, (a, a.checked_type, b.checked_type)
    assert_structural_equal(fuse_ops(after), after)


def fuse_checked(text: str, *args: object, max_depth: int = 256) -> IRModule:
    before = typed(text)
    after = fuse_ops(before, max_depth=max_depth)
    check_fused(after)
    if args:
        assert_same_values(before, after, *args)
    return after


def rand(*shape: int, dtype: str = "float32", seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed + len(shape))
    return rng.standard_normal(shape).astype(dtype)


# ------------------------------------------------------- exact IR (text)

def test_simple_chain_is_one_function_with_inlined_constant():
    after = fuse_checked("""
    def @main(%x: Tensor[(10, 20), float32]) {
      %0 = add(%x, 1f);
      %1 = exp(%0);
      squeeze(%1)
    }""", rand(10, 20))
    expected = typed("""
    def @main(%x: Tensor[(10, 20), float32]) {
      %0 = fn (%p0: Tensor[(10, 20), float32], Primitive=1) -> Tensor[(10, 20), float32] {
        squeeze(exp(add(%p0, 1f)))
      };
      %0(%x)
    }""")
    assert_structural_equal(after, expected)


def test_conv2d_bias_relu_is_one_function():
    after = fuse_checked("""
    def @main(%x: Tensor[(1, 3, 8, 8), float32], %w: Tensor[(4, 3, 3, 3), float32],
              %b: Tensor[(4), float32]) {
      %0 = nn.conv2d(%x, %w, padding=[1, 1], channels=4, kernel_size=[3, 3]);
      %1 = nn.bias_add(%0, %b);
      nn.relu(%1)
    }""", rand(1, 3, 8, 8), rand(4, 3, 3, 3), rand(4))
    expected = typed("""
    def @main(%x: Tensor[(1, 3, 8, 8), float32], %w: Tensor[(4, 3, 3, 3), float32],
              %b: Tensor[(4), float32]) {
      %0 = fn (%p0: Tensor[(1, 3, 8, 8), float32], %p1: Tensor[(4, 3, 3, 3), float32],
               %p2: Tensor[(4), float32], Primitive=1) -> Tensor[(1, 4, 8, 8), float32] {
        %1 = nn.conv2d(%p0, %p1, padding=[1, 1], channels=4, kernel_size=[3, 3]);
        nn.relu(nn.bias_add(%1, %p2))
      };
      %0(%x, %w, %b)
    }""")
    assert_structural_equal(after, expected)


def test_if_condition_fused_alone_and_closures_left_alone():
    """Relay's myia regression: the condition is a group, the branches are
    closures without operators."""
    after = fuse_checked("""
    def @main(%x: int64, %y: int64) {
      %0 = if (greater(%x, %y)) { fn () { %x } } else { fn () { %y } };
      %0()
    }""", np.int64(3), np.int64(2))
    expected = typed("""
    def @main(%x: int64, %y: int64) {
      %0 = fn (%p0: int64, %p1: int64, Primitive=1) -> bool { greater(%p0, %p1) };
      %1 = if (%0(%x, %y)) { fn () { %x } } else { fn () { %y } };
      %1()
    }""")
    assert_structural_equal(after, expected)


def test_concatenate_takes_its_fields_and_pool_stays_alone():
    """Relay's test_concatenate: upsampling + tuple + concatenate + add
    fuse; max_pool2d cannot take the injective upsampling as epilogue."""
    after = fuse_checked("""
    def @main(%x: Tensor[(1, 2, 4, 4), float32]) {
      %0 = nn.max_pool2d(%x, pool_size=[2, 2], strides=[2, 2]);
      %1 = nn.upsampling(%0, scale_h=2f, scale_w=2f);
      %2 = concatenate((%1, %x), axis=1);
      add(%2, 1f)
    }""", rand(1, 2, 4, 4))
    expected = typed("""
    def @main(%x: Tensor[(1, 2, 4, 4), float32]) {
      %0 = fn (%p0: Tensor[(1, 2, 4, 4), float32], Primitive=1) -> Tensor[(1, 2, 2, 2), float32] {
        nn.max_pool2d(%p0, pool_size=[2, 2], strides=[2, 2])
      };
      %1 = fn (%p0: Tensor[(1, 2, 2, 2), float32], %p1: Tensor[(1, 2, 4, 4), float32],
               Primitive=1) -> Tensor[(1, 4, 4, 4), float32] {
        %2 = nn.upsampling(%p0, scale_h=2f, scale_w=2f);
        add(concatenate((%2, %p1), axis=1), 1f)
      };
      %1(%0(%x), %x)
    }""")
    assert_structural_equal(after, expected)


def test_tuple_result_stays_outside():
    """Relay's test_tuple_root: fields do not fuse into a tuple that is an
    output."""
    after = fuse_checked("""
    def @main(%x: Tensor[(1, 2, 4, 4), float32]) {
      %0 = nn.max_pool2d(%x, pool_size=[2, 2], strides=[2, 2]);
      (nn.upsampling(%0, scale_h=2f, scale_w=2f), %x)
    }""", rand(1, 2, 4, 4))
    assert groups(after) == [["nn.max_pool2d"], ["nn.upsampling"]]
    assert isinstance(after["main"].body, Tuple)


def test_parameters_deduplicated_in_first_use_order():
    after = fuse_checked("""
    def @main(%x: Tensor[(3), float32], %y: Tensor[(3), float32]) {
      %0 = multiply(%y, %x);
      add(%0, add(%x, %y))
    }""", rand(3), rand(3, seed=1))
    call = after["main"].body
    assert isinstance(call, Call) and is_primitive(call.op)
    assert [a.name_hint for a in call.args] == ["y", "x"]
    assert len(call.op.params) == 2


# ------------------------------------------------------------- group tables

X4 = "%x: Tensor[(2, 4), float32]"

GROUP_CASES = [
    # (name, parameters, body, expected groups)
    ("dense_add_tanh", f"{X4}, %w: Tensor[(3, 4), float32], %b: Tensor[(3), float32]",
     "tanh(add(nn.dense(%x, %w), %b))",
     [["nn.dense", "add", "tanh"]]),
    ("reshape_transpose_add", f"{X4}, %y: Tensor[(2, 4), float32]",
     "add(transpose(reshape(%x, newshape=[4, 2])), %y)",
     [["reshape", "transpose", "add"]]),
    ("two_convs_in_sequence",
     "%x: Tensor[(1, 2, 5, 5), float32], %w: Tensor[(2, 2, 3, 3), float32]",
     "nn.conv2d(nn.conv2d(%x, %w, padding=[1, 1]), %w, padding=[1, 1])",
     [["nn.conv2d"], ["nn.conv2d"]]),
    ("diamond", X4,
     "%0 = exp(%x); add(%0, log(%0))",
     [["exp", "log", "add"]]),
    ("conv_diamond_epilogue",
     "%x: Tensor[(1, 2, 5, 5), float32], %w: Tensor[(2, 2, 3, 3), float32]",
     "%0 = nn.conv2d(%x, %w, padding=[1, 1]); add(%0, add(1f, %0))",
     [["nn.conv2d", "add", "add"]]),
    ("elementwise_feeding_two_anchors_joins_neither",
     f"{X4}, %w: Tensor[(3, 4), float32], %v: Tensor[(3, 4), float32]",
     "%0 = exp(%x); add(nn.dense(%0, %w), nn.dense(%0, %v))",
     [["exp"], ["nn.dense"], ["nn.dense", "add"]]),
    ("two_anchors_meeting_in_add",
     f"{X4}, %w: Tensor[(3, 4), float32]",
     "add(nn.dense(%x, %w), nn.softmax(nn.dense(%x, %w)))",
     [["nn.dense"], ["nn.softmax"], ["nn.dense", "add"]]),
    ("softmax_epilogue_then_injective", X4,
     "reshape(cast(multiply(nn.softmax(%x), 2f), dtype=\"float64\"), newshape=[8])",
     [["nn.softmax", "multiply", "cast"], ["reshape"]]),
    ("sum_times_scalar", X4,
     "multiply(sum(%x, axis=[1]), 2f)",
     [["sum", "multiply"]]),
    ("sum_broadcast_back_is_no_epilogue", X4,
     "add(sum(%x, axis=[1], keepdims=True), %x)",
     [["sum"], ["add"]]),
    ("subtract_sum_prologue", f"{X4}, %y: Tensor[(4), float32]",
     "sum(subtract(%x, %y), axis=[1])",
     [["subtract", "sum"]]),
    ("mean_centred_variance",
     X4, "%0 = mean(%x, axis=[1], keepdims=True);"
     "mean(multiply(subtract(%x, %0), subtract(%x, %0)), axis=[1])",
     [["mean"], ["subtract", "subtract", "multiply", "mean"]]),
    ("cast_dense_prologue", "%x: Tensor[(2, 4), int32], %w: Tensor[(3, 4), float32]",
     "nn.dense(cast(%x, dtype=\"float32\"), %w)",
     [["cast", "nn.dense"]]),
    ("pad_conv_prologue", "%x: Tensor[(1, 2, 4, 4), float32], %w: Tensor[(2, 2, 3, 3), float32]",
     "nn.conv2d(nn.pad(%x, 0f, pad_width=[[0, 0], [0, 0], [1, 1], [1, 1]]), %w)",
     [["nn.pad", "nn.conv2d"]]),
    ("arithmetic_is_no_contraction_prologue",
     "%x: Tensor[(2, 4), float32], %w: Tensor[(3, 4), float32]",
     "nn.dense(exp(%x), %w)",
     [["exp"], ["nn.dense"]]),
    ("arithmetic_is_no_conv_prologue",  # the relu has joined the pad first
     "%x: Tensor[(1, 2, 4, 4), float32], %w: Tensor[(2, 2, 3, 3), float32]",
     "nn.conv2d(nn.pad(nn.relu(%x), 0f, pad_width=[[0, 0], [0, 0], [1, 1], [1, 1]]), %w)",
     [["nn.relu", "nn.pad"], ["nn.conv2d"]]),
    ("moves_then_arithmetic_then_moves_into_dense",
     "%x: Tensor[(2, 2, 2), int8], %w: Tensor[(3, 4), float32]",
     "nn.dense(reshape(multiply(cast(%x, dtype=\"float32\"), 2f), newshape=[2, 4]), %w)",
     [["cast", "multiply", "reshape"], ["nn.dense"]]),
    ("moves_only_into_dense",
     "%x: Tensor[(2, 2, 2), int8], %w: Tensor[(3, 4), float32]",
     "nn.dense(reshape(cast(%x, dtype=\"float32\"), newshape=[2, 4]), %w)",
     [["cast", "reshape", "nn.dense"]]),
    ("arithmetic_prologue_of_a_pool", "%x: Tensor[(1, 2, 4, 4), float32]",
     "nn.max_pool2d(exp(%x), pool_size=[2, 2], strides=[2, 2])",
     [["exp", "nn.max_pool2d"]]),
    ("epilogue_side_input", "%x: Tensor[(2, 4), float32], %w: Tensor[(3, 4), float32], "
     "%b: Tensor[(2, 3), float32]",
     "add(nn.dense(%x, %w), exp(%b))",
     [["nn.dense", "exp", "add"]]),
    ("prologue_value_also_used_in_epilogue_stays_out",
     "%x: Tensor[(4, 4), float32], %w: Tensor[(4, 4), float32]",
     "%0 = exp(%x); add(nn.dense(%0, %w), %0)",
     [["exp"], ["nn.dense", "add"]]),
    ("opaque_takes_nothing", X4,
     "%0 = topk(exp(%x), k=2); (exp(%0.0), %0.1)",
     [["exp"], ["topk"], ["exp"]]),
    ("opaque_dropout_alone", X4,
     "exp(nn.dropout(exp(%x)).0)",
     [["exp"], ["nn.dropout"], ["exp"]]),
    ("tuple_anchor_takes_no_epilogue",
     "%x: Tensor[(2, 3), float32], %g: Tensor[(3), float32], %b: Tensor[(3), float32], "
     "%m: Tensor[(3), float32], %v: Tensor[(3), float32]",
     "nn.relu(nn.batch_norm(negative(%x), %g, %b, %m, %v).0)",
     [["negative", "nn.batch_norm"], ["nn.relu"]]),
    ("dense_split_elementwise",  # Relay's test_fuse_tuple_get_elemwise
     "%x: Tensor[(1, 4), float32], %w: Tensor[(12, 4), float32]",
     "%0 = split(nn.dense(%x, %w), indices_or_sections=3, axis=1);"
     "add(sigmoid(%0.0), multiply(tanh(%0.1), exp(%0.2)))",
     [["nn.dense"], ["split", "sigmoid", "tanh", "exp", "multiply", "add"]]),
    ("split_projection_into_dense",  # Relay's test_tuple_get_root, plus our prologue
     "%x: Tensor[(1, 12), float32], %w: Tensor[(4, 4), float32]",
     "nn.dense(split(%x, indices_or_sections=3, axis=1).0, %w)",
     [["split", "nn.dense"]]),
    ("split_with_outside_uses_stays_root",
     "%x: Tensor[(6, 9), float32]",
     "%0 = split(exp(%x), indices_or_sections=3); (add(%0.0, 1f), %0.1)",
     [["exp", "split"], ["add"]]),
    ("split_through_refs",  # Relay's test_split: well formed
     "%x: Tensor[(6, 9), float32]",
     "%0 = split(%x, indices_or_sections=3); add(add(%0.0, ref_read(ref(%0.1))), %0.2)",
     [["split"], ["add", "add"]]),
    ("parallel_injective",  # Relay's test_fuse_parallel_injective
     "%x: Tensor[(10, 20), float32]",
     "%0 = add(%x, 1f); subtract(squeeze(%0), transpose(%0, axes=[0, 1]))",
     [["add", "squeeze", "transpose", "subtract"]]),
    ("tuple_intermediate",  # Relay's test_tuple_intermediate
     "%x: Tensor[(1, 4, 3, 3), float32]",
     "%0 = squeeze(%x); %1 = add(squeeze(%0), 1f);"
     "%2 = concatenate((add(%0, 1f), add(%1, 1f), add(%0, 1f)), axis=1);"
     "add(squeeze(%2), 1f)",
     [["squeeze", "add", "squeeze", "add", "add", "add", "concatenate", "squeeze", "add"]]),
    ("inception_like",  # Relay's test_inception_like
     "%x: Tensor[(1, 2, 4, 4), float32], %w: Tensor[(2, 2, 3, 3), float32], "
     "%v: Tensor[(2, 4, 3, 3), float32]",
     "%0 = concatenate((nn.relu(nn.conv2d(%x, %w, padding=[1, 1])),"
     "                  nn.relu(nn.conv2d(%x, %w, padding=[1, 1]))), axis=1);"
     "concatenate((nn.relu(nn.conv2d(%0, %v, padding=[1, 1])),"
     "             nn.relu(nn.conv2d(%0, %v, padding=[1, 1]))), axis=1)",
     [["nn.conv2d", "nn.relu"], ["nn.conv2d", "nn.relu"], ["concatenate"],
      ["nn.conv2d", "nn.relu"], ["nn.conv2d", "nn.relu"], ["concatenate"]]),
    ("zero_argument_op_fuses_forward", X4,
     "add(%x, ones(shape=[2, 4], dtype=\"float32\"))",
     [["ones", "add"]]),
    ("let_is_a_boundary", X4,
     "let %a = exp(%x); log(%a)",
     [["exp"], ["log"]]),
]


def _inputs(params: str) -> list[np.ndarray]:
    mod = typed(f"def @main({params}) {{ 0 }}")
    out = []
    for i, p in enumerate(mod["main"].params):
        t = p.checked_type
        assert isinstance(t, TensorType)
        out.append(rand(*t.shape, dtype=t.dtype.value, seed=i))
    return out


@pytest.mark.parametrize("name, params, body, expected", GROUP_CASES,
                         ids=[c[0] for c in GROUP_CASES])
def test_groups(name, params, body, expected):
    after = fuse_checked(f"def @main({params}) {{ {body} }}", *_inputs(params))
    assert groups(after) == expected


def test_conv2d_fuse_like_relay():
    """Relay's test_conv2d_fuse, with Relay's groups: the add before the
    first conv2d is its own function (arithmetic is no prologue of a
    contraction); the second path's add joins the conv2d evaluated first."""
    params = "%x: Tensor[(1, 2, 6, 6), float32], %w1: Tensor[(2, 2, 3, 3), float32], " \
             "%w2: Tensor[(2, 2, 1, 1), float32], %w3: Tensor[(2, 2, 3, 3), float32]"
    after = fuse_checked(f"""
    def @main({params}) {{
      %0 = add(%x, 1f);
      %1 = nn.conv2d(%0, %w1, padding=[1, 1], channels=2, kernel_size=[3, 3]);
      %2 = add(1f, %1);
      %3 = add(%1, %2);
      %4 = nn.conv2d(%3, %w2, channels=2, kernel_size=[1, 1]);
      %5 = nn.conv2d(%3, %w3, padding=[1, 1], channels=2, kernel_size=[3, 3]);
      add(%4, %5)
    }}""", *_inputs(params))
    assert groups(after) == [["add"], ["nn.conv2d", "add", "add"], ["nn.conv2d"],
                             ["nn.conv2d", "add"]]


def test_tuple_consecutive_like_relay():
    """Relay's test_tuple_consecutive: nested concatenations fuse into one
    function, which (our prologue rule) the pool takes before it, with the
    elementwise add after it; the add of that add stays out (two uses)."""
    inner = "concatenate((add(%x, 1f), add(%x, 1f), add(%x, 1f)), axis=1)"
    level = f"add({inner}, 1f)"
    after = fuse_checked(f"""
    def @main(%x: Tensor[(1, 2, 4, 4), float32]) {{
      %0 = concatenate(({level}, {level}, {level}), axis=1);
      %1 = add(nn.max_pool2d(%0, pool_size=[2, 2], strides=[2, 2]), 1f);
      (%1, add(%1, 1f))
    }}""", rand(1, 2, 4, 4))
    assert groups(after) == [["add", "add", "add", "concatenate", "add"] * 3
                             + ["concatenate", "nn.max_pool2d", "add"], ["add"]]


# ------------------------------------------------------------ control flow

def test_if_in_the_middle_keeps_branches_separate():
    after = fuse_checked("""
    def @main(%c: bool, %x: Tensor[(3), float32]) {
      %0 = exp(%x);
      %1 = if (%c) { negative(add(%0, 1f)) } else { log(abs(%x)) };
      multiply(%1, %0)
    }""", np.bool_(True), rand(3))
    assert groups(after) == [["exp"], ["add", "negative"], ["abs", "log"], ["multiply"]]
    assert_same_values(typed(str(after)), after, np.bool_(False), rand(3))


def test_value_used_only_in_one_branch_fuses_there():
    after = fuse_checked("""
    def @main(%c: bool, %x: Tensor[(3), float32]) {
      %0 = exp(%x);
      if (%c) { negative(%0) } else { %x }
    }""", np.bool_(True), rand(3))
    assert groups(after) == [["exp", "negative"]]


def test_value_used_in_both_branches_is_its_own_group():
    after = fuse_checked("""
    def @main(%c: bool, %x: Tensor[(3), float32]) {
      %0 = exp(%x);
      if (%c) { negative(%0) } else { abs(%0) }
    }""", np.bool_(False), rand(3))
    assert sorted(groups(after)) == [["abs"], ["exp"], ["negative"]]


def test_closures_globals_match_and_adts():
    text = """
    type Boxed { Box(Tensor[(3), float32]) }
    def @twice(%v: Tensor[(3), float32]) { multiply(add(%v, %v), 2f) }
    def @main(%x: Tensor[(3), float32]) {
      let %f = fn (%y: Tensor[(3), float32]) { exp(negative(%y)) };
      %0 = @twice(%f(abs(%x)));
      match (Box(tanh(%0))) {
        Box(%z) => sigmoid(add(%z, 1f)),
      }
    }"""
    before = typed(text)
    after = fuse_checked(text, rand(3))
    assert groups(after, "twice") == [["add", "multiply"]]
    assert groups(after) == [["negative", "exp"], ["abs"], ["tanh"], ["add", "sigmoid"]]
    assert_same_values(before, after, rand(3, seed=5))


def test_polymorphic_functions_are_left_alone():
    text = """
    def @id[A](%a: A) -> A { %a }
    def @main(%x: Tensor[(3), float32]) { exp(@id(negative(%x))) }"""
    after = fuse_checked(text, rand(3))
    assert groups(after) == [["negative"], ["exp"]]
    assert_structural_equal(after["id"], typed(text)["id"])


def test_existing_primitive_functions_untouched():
    text = """
    def @main(%x: Tensor[(3), float32]) {
      %0 = fn (%p: Tensor[(3), float32], Primitive=1) { exp(%p) };
      negative(%0(abs(%x)))
    }"""
    before = typed(text)
    after = fuse_ops(before)
    existing = [n for n in post_order(before["main"]) if is_primitive(n)]
    assert len(existing) == 1 and existing[0] in primitive_groups(after["main"])
    assert groups(after) == [["abs"], ["exp"], ["negative"]]
    assert_same_values(before, after, rand(3))


# ---------------------------------------------------------- constants, size

def test_constants_stay_inside_every_group_using_them():
    """One non-scalar constant used by two groups: each keeps it inside."""
    k = const(np.arange(3, dtype=np.float32))
    x = Var("x", TensorType((1, 3), F32))
    w = Var("w", TensorType((3, 3), F32))
    d = Call(op("add"), (Call(op("nn.dense"), (x, w)), k))
    body = Tuple((Call(op("multiply"), (d, k)), Call(op("subtract"), (x, k))))
    before = aot.infer_types(IRModule.from_expr(Function((x, w), body)))
    after = fuse_ops(before)
    check_fused(after)
    assert groups(after) == [["nn.dense", "add", "multiply"], ["subtract"]]
    for fn in primitive_groups(after["main"]):
        assert [p.name_hint for p in fn.params] in (["p0", "p1"], ["p0"])
        assert any(isinstance(n, Constant) for n in post_order(fn.body))
    assert_same_values(before, after, rand(1, 3), rand(3, 3))


@pytest.mark.parametrize("n, max_depth, sizes", [
    (300, 256, [256, 44]),   # Relay's test_fuse_max
    (7, 3, [3, 3, 1]),
    (4, 1, [1, 1, 1, 1]),
])
def test_max_depth_splits_chains(n, max_depth, sizes):
    x = Var("x", TensorType((2, 2), F32))
    y: Expr = x
    for _ in range(n):
        y = Call(op("negative"), (y,))
    before = aot.infer_types(IRModule.from_expr(Function((x,), y)))
    after = fuse_ops(before, max_depth=max_depth)
    assert [len(g) for g in groups(after)] == sizes
    assert_same_values(before, after, rand(2, 2))


def test_original_module_is_not_changed():
    text = "def @main(%x: Tensor[(3), float32]) { squeeze(exp(add(%x, 1f))) }"
    before = typed(text)
    body = before["main"].body
    fuse_ops(before)
    assert before["main"].body is body
    assert_structural_equal(before, typed(text))


def test_untyped_module_is_typed_first():
    after = fuse_ops(aot.parse("def @main(%x: Tensor[(3), float32]) { exp(negative(%x)) }"))
    assert groups(after) == [["negative", "exp"]]
    assert after.is_typed


def test_printed_result_parses_back():
    after = fuse_checked("""
    def @main(%x: Tensor[(1, 2, 4, 4), float32], %w: Tensor[(2, 2, 3, 3), float32]) {
      %0 = nn.relu(nn.conv2d(nn.pad(%x, 0f, pad_width=[[0, 0], [0, 0], [1, 1], [1, 1]]), %w));
      %1 = split(%0, indices_or_sections=2, axis=1);
      (add(%1.0, %1.1), sum(%0))
    }""")
    assert_structural_equal(typed(str(after)), after)
    assert str(fuse_ops(typed(str(after)))) == str(after), "not deterministic"


# -------------------------------------------------------------- big graphs

def test_ten_thousand_op_chain_and_ladder():
    x = Var("x", TensorType((2, 2), F32))
    y: Expr = x
    for i in range(10_000):
        name = "add" if i % 5 == 0 else "negative" if i % 2 else "abs"
        y = Call(op(name), (y, x) if name == "add" else (y,))
    before = aot.infer_types(IRModule.from_expr(Function((x,), y)))
    after = fuse_ops(before)
    assert [len(g) for g in groups(after)] == [256] * 39 + [16]
    assert_same_values(before, after, rand(2, 2))

    y = x
    for _ in range(3_400):  # 10,200 ops in diamonds
        y = Call(op("add"), (Call(op("abs"), (y,)), Call(op("negative"), (y,))))
    before = aot.infer_types(IRModule.from_expr(Function((x,), y)))
    after = fuse_ops(before)
    sizes = [len(g) for g in groups(after)]
    assert sum(sizes) == 10_200 and max(sizes) <= 256


# --------------------------------------------------------- dominator tree

def test_post_dominators_of_a_diamond_and_a_fork():
    # 0 -> 1, 0 -> 2, 1 -> 3, 2 -> 3, 3 -> 4 (extern); 5 -> 4, 5 -> 6 (extern)
    g = ForwardGraph()
    for _ in range(7):
        g.add_node()
    for a, b in [(0, 1), (0, 2), (1, 3), (2, 3), (3, 4), (5, 6)]:
        g.add_edge(a, b)
    g.add_edge(4, 6)
    g.extern[6] = True
    g.add_edge(5, 6)
    tree = PostDomTree.build(g)
    assert tree.parent == (3, 3, 3, 4, 6, 6, -1)
    assert nodes_between(g, 0, 3) == [1, 2, 3]
    g.extern[4] = True
    tree = PostDomTree.build(g)
    assert tree.parent[:5] == (3, 3, 3, 4, -1)


# ------------------------------------------------------ random programs

_SHAPE = (3, 4)


def _random_program(steps: list[tuple[int, int, int]]) -> IRModule:
    t = TensorType(_SHAPE, F32)
    x, y = Var("x", t), Var("y", t)
    w = Var("w", TensorType((4, 4), F32))
    values: list[Expr] = [x, y, Call(op("exp"), (x,))]

    def pick(k: int) -> Expr:
        return values[k % len(values)]

    used: set[Expr] = set()
    for kind, a, b in steps:
        u, v = pick(a), pick(b)
        used.update((u, v))
        if kind == 0:
            e: Expr = Call(op(("negative", "tanh", "sigmoid", "abs")[b % 4]), (u,))
        elif kind == 1:
            e = Call(op(("add", "multiply", "subtract", "maximum")[b % 4]), (u, v))
        elif kind == 2:
            e = Call(op("add"), (u, const(0.5)))
        elif kind == 3:
            e = Call(op("reverse"), (u,), op("reverse").op_def.attrs_type.from_raw({"axis": 0}))
        elif kind == 4:
            s = Call(op("split"), (u,),
                     op("split").op_def.attrs_type.from_raw({"indices_or_sections": 2, "axis": 1}))
            e = Call(op("concatenate"), (Tuple((TupleGetItem(s, 1), TupleGetItem(s, 0))),),
                     op("concatenate").op_def.attrs_type.from_raw({"axis": 1}))
        elif kind == 5:
            e = Call(op("nn.dense"), (u, w))
        elif kind == 6:
            e = Call(op("nn.softmax"), (u,))
        elif kind == 7:
            r = Call(op("sum"), (u,), op("sum").op_def.attrs_type.from_raw(
                {"axis": [1], "keepdims": True}))
            e = Call(op("multiply"), (r, v))
        else:
            e = TupleGetItem(Call(op("topk"), (u,), op("topk").op_def.attrs_type.from_raw(
                {"k": 4})), 0)
        values.append(e)
    sinks = [e for e in values[3:] if e not in used]
    out = Tuple(tuple(sinks)) if len(sinks) > 1 else values[-1]
    return aot.infer_types(IRModule.from_expr(Function((x, y, w), out)))


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 8), st.integers(0, 50), st.integers(0, 50)),
                min_size=1, max_size=14),
       st.sampled_from([2, 3, 256]))
def test_random_dataflow_graphs(steps, max_depth):
    before = _random_program(steps)
    after = fuse_ops(before, max_depth=max_depth)
    check_fused(after)
    ops_before = [n for n in post_order(before["main"])
                  if isinstance(n, Call) and isinstance(n.op, Op)]
    fused_ops = sum(len(g) for g in groups(after))
    assert fused_ops == len(ops_before)
    assert all(len(g) <= max_depth for g in groups(after))
    rng = np.random.default_rng(len(steps))
    args = [rng.standard_normal(s).astype(np.float32) for s in (_SHAPE, _SHAPE, (4, 4))]
    assert_same_values(before, after, *args)
