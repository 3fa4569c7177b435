"""aot.ir.pattern: properties over random dataflow graphs.

Partitioning must never change what a program computes, nor make it ill
formed (overlapping groups, a value escaping a group); a rewrite whose
callback returns ``post`` must change nothing.
"""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

import aot
from aot import builder as B
from aot.ir import Call, Function, Var
from aot.ir.dtype import DType
from aot.ir.module import IRModule
from aot.ir.pattern import DFPatternCallback, dominates, is_op, wildcard
from aot.ir.pattern import rewrite
from aot.ir.structural import structural_equal
from aot.ir.types import TensorType
from aot.ir.visitor import post_order
from aot.passes.manager import verify_module
from aot.ir.type_infer import infer_types

UNARY = ["nn.relu", "tanh", "negative"]
BINARY = ["add", "multiply", "add", "subtract"]
SHAPE = (2, 3)


def _patterns():
    elem = wildcard().has_attr({"TOpPattern": 0})(wildcard())
    return [
        is_op("add")(wildcard(), wildcard()),
        is_op("nn.relu")(is_op("add")(wildcard(), wildcard())),
        is_op("multiply")(is_op("add")(wildcard(), wildcard()), wildcard()),
        is_op("tanh")(wildcard()).optional(is_op("negative")),
        dominates(wildcard()(None), elem, wildcard()(wildcard(), wildcard())),
    ]


@st.composite
def graphs(draw):
    x = Var("x", TensorType(SHAPE, DType.FLOAT32))
    y = Var("y", TensorType(SHAPE, DType.FLOAT32))
    nodes = [x, y]

    def operand():
        # mostly one of the last few values, so chains and diamonds are common
        back = draw(st.sampled_from([1, 1, 1, 2, 2, 3, len(nodes)]))
        return nodes[max(0, len(nodes) - back)]

    for _ in range(draw(st.integers(1, 12))):
        step = draw(st.sampled_from(["unary", "binary", "diamond"]))
        if step == "unary":
            nodes.append(B.call(draw(st.sampled_from(UNARY)), operand()))
        elif step == "binary":
            nodes.append(B.call(draw(st.sampled_from(BINARY)), operand(), operand()))
        else:  # two elementwise branches from one value, joined again
            top = operand()
            left = B.call(draw(st.sampled_from(UNARY)), top)
            right = B.call(draw(st.sampled_from(UNARY)), top)
            nodes += [left, right, B.call(draw(st.sampled_from(BINARY)), left, right)]
    # the root uses the last node and one earlier value, so values are shared
    root = B.call("add", nodes[-1], operand())
    return infer_types(IRModule.from_expr(Function((x, y), root)))


def _args():
    rng = np.random.default_rng(7)
    return [rng.standard_normal(SHAPE).astype(np.float32) for _ in range(2)]


@settings(max_examples=40, deadline=None)
@given(mod=graphs(), which=st.integers(0, 4))
def test_partition_keeps_meaning_and_form(mod, which):
    pattern = _patterns()[which]
    out = pattern.partition(mod, {"Composite": "c"})
    verify_module(out)
    args = _args()
    np.testing.assert_allclose(aot.interpret(out, *args), aot.interpret(mod, *args),
                               rtol=1e-5, atol=1e-6)
    groups = [n for n in post_order(out["main"])
              if isinstance(n, Call) and isinstance(n.op, Function)]
    for g in groups:
        assert g.op.attrs.get("Composite") == "c"
        assert pattern.match(g.op.body)


@settings(max_examples=30, deadline=None)
@given(mod=graphs(), which=st.integers(0, 4))
def test_identity_rewrite_changes_nothing(mod, which):
    class Same(DFPatternCallback):
        def __init__(self):
            super().__init__()
            self.pattern = _patterns()[which]

        def callback(self, pre, post, node_map):
            return post

    assert structural_equal(rewrite(Same(), mod), mod)
