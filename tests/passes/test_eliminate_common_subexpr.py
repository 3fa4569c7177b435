"""EliminateCommonSubexpr: before/expected IR after TVM's
test_pass_eliminate_common_subexpr.py (simple, fskip callback), the rules
for constants, effects and scopes, values kept on random inputs, and a
10,000-node graph."""

from __future__ import annotations

import numpy as np
import pytest

import aot
from aot import builder as B
from aot.ir.expr import Call, Expr, Op
from aot.ir.module import IRModule
from aot.ir.structural import assert_structural_equal
from aot.ir.visitor import post_order
from aot.passes.eliminate_common_subexpr import SMALL_CONSTANT, eliminate_common_subexpr
from aot.passes.manager import PassContext, Sequential, run_pass
from pass_helpers import assert_same_values


def typed(text: str) -> IRModule:
    return aot.infer_types(aot.parse(text, source_name="cse.relay"))


def cse(mod: IRModule) -> IRModule:
    with PassContext(verify=True):
        return run_pass("EliminateCommonSubexpr", mod)


def calls(mod: IRModule, name: str | None = None) -> list[Call]:
    return [n for f in mod.functions.values() for n in post_order(f)
            if isinstance(n, Call) and isinstance(n.op, Op) and (name is None or n.op.name == name)]


X16 = "%x: Tensor[(1, 16), float32]"


def test_simple():
    """TVM's test_simple: relu twice, +1 twice, then their sum."""
    before = typed(f"def @main({X16}) {{ add(add(nn.relu(%x), 1f), add(nn.relu(%x), 1f)) }}")
    expected = typed(f"def @main({X16}) {{ %0 = add(nn.relu(%x), 1f); add(%0, %0) }}")
    after = cse(before)
    assert_structural_equal(after, expected)
    assert len(calls(after)) == 3
    x = np.random.default_rng(0).standard_normal((1, 16)).astype(np.float32)
    assert_same_values(before, after, x)


def test_callback():
    """TVM's test_callback: fskip keeps the adds apart."""
    before = typed(f"def @main({X16}) {{ add(add(nn.relu(%x), 1f), add(nn.relu(%x), 1f)) }}")
    expected = typed(f"def @main({X16}) {{ %0 = nn.relu(%x); add(add(%0, 1f), add(%0, 1f)) }}")

    def fskip(e: Expr) -> bool:
        return isinstance(e, Call) and isinstance(e.op, Op) and e.op.name == "add"

    after = eliminate_common_subexpr(before, fskip)
    assert_structural_equal(after, expected)
    assert len(calls(after, "nn.relu")) == 1 and len(calls(after, "add")) == 3


def test_projections_of_one_tuple_merge():
    before = typed("""def @main(%x: Tensor[(4), float32]) {
        %0 = split(%x, indices_or_sections=2);
        %1 = split(%x, indices_or_sections=2);
        (add(%0.0, %0.1), add(%1.0, %1.1), %0.0)
    }""")
    after = cse(before)
    assert len(calls(after, "split")) == 1 and len(calls(after, "add")) == 1
    assert_same_values(before, after, np.arange(4, dtype=np.float32))


@pytest.mark.parametrize("a, b, merged", [
    ("1f", "1f", True),                       # small constants compare by value
    ("0f", "-0f", False),                     # ... by bit pattern: signed zeros differ
    ("1f", "expand_dims(1f, axis=0)", False),  # shapes differ
    ("2f", "3f", False),
])
def test_small_constants_compare_by_value(a, b, merged):
    before = typed(f"def @main(%x: float32) {{ (multiply(%x, {a}), multiply(%x, {b})) }}")
    after = cse(before)
    assert len(calls(after, "multiply")) == (1 if merged else 2)
    for v in (1.5, -0.0, np.inf):
        assert_same_values(before, after, np.float32(v))


def test_nan_constants_with_the_same_bits_merge():
    nan = B.const(np.float32(np.nan))
    nan2 = B.const(np.float32(np.nan))
    x = B.var("x", B.scalar("float32"))
    before = aot.infer_types(B.module(main=B.function([x], B.tuple_(B.add(x, nan), B.add(x, nan2)))))
    assert len(calls(cse(before), "add")) == 1


def test_large_constants_compare_by_identity():
    n = SMALL_CONSTANT + 1
    w = np.ones(n, np.float32)
    x = B.var("x", B.tensor((n,)))
    c1, c2 = B.const(w), B.const(w)
    shared = B.const(w)
    body = B.tuple_(B.add(x, c1), B.add(x, c2), B.multiply(x, shared), B.multiply(x, shared))
    before = aot.infer_types(B.module(main=B.function([x], body)))
    after = cse(before)
    assert len(calls(after, "add")) == 2
    assert len(calls(after, "multiply")) == 1


@pytest.mark.parametrize("src", [
    "def @main(%x: Tensor[(2, 3), float32]) { (sum(%x, axis=[0]), sum(%x, axis=[1])) }",
    "def @main(%x: Tensor[(2, 3), float32]) { (sum(%x, axis=[0]), mean(%x, axis=[0])) }",
    "def @main(%x: Tensor[(2, 3), float32], %y: Tensor[(2, 3), float32]) "
    "{ (add(%x, %y), add(%y, %x)) }",
])
def test_different_calls_stay_apart(src):
    before = typed(src)
    assert_structural_equal(cse(before), before)


NOT_MERGED = {
    "global_calls": """
        def @g(%r: Ref[int32]) -> int32 { let %v = ref_read(%r); let %u = ref_write(%r, %v + 1); %v }
        def @main() { let %r = ref(0); (@g(%r), @g(%r)) }""",
    "closure_calls": """
        def @main(%x: float32) { let %f = fn (%y: float32) -> float32 { exp(%y) }; (%f(%x), %f(%x)) }""",
    "ref_creates": "def @main() { (ref(1), ref(1)) }",
    "constructor_calls": "type L { C(int32, L), N } def @main() { (C(1, N), C(1, N)) }",
}


@pytest.mark.parametrize("name", sorted(NOT_MERGED))
def test_calls_that_are_not_operators_stay_apart(name):
    before = typed(NOT_MERGED[name])
    after = cse(before)
    assert_structural_equal(after, before)
    if name == "global_calls":
        assert [int(v) for v in aot.interpret(after)] == [0, 1]


def test_branches_do_not_share_their_own_nodes():
    before = typed("""def @main(%c: bool, %x: float32) {
        (if (%c) { exp(%x) } else { exp(%x) + 1f }, exp(%x))
    }""")
    after = cse(before)
    assert len(calls(after, "exp")) == 3
    assert_same_values(before, after, np.bool_(True), np.float32(0.5))


def test_branches_and_functions_reuse_what_was_computed_before():
    before = typed("""def @main(%c: bool, %x: float32) {
        let %a = exp(%x);
        let %f = fn (%y: float32) -> float32 { exp(%x) + %y };
        if (%c) { exp(%x) + %f(1f) } else { %a }
    }""")
    after = cse(before)
    assert len(calls(after, "exp")) == 1
    for c in (True, False):
        assert_same_values(before, after, np.bool_(c), np.float32(0.5))


def test_type_args_and_types_are_part_of_the_key():
    before = typed("""def @main(%x: Tensor[(2), float32], %y: Tensor[(2, 2), float32]) {
        (zeros_like(%x), zeros_like(%y))
    }""")
    assert len(calls(cse(before), "zeros_like")) == 2


def test_disabled_by_name_leaves_the_module_unchanged():
    before = typed(f"def @main({X16}) {{ add(nn.relu(%x), nn.relu(%x)) }}")
    with PassContext(disabled=["EliminateCommonSubexpr"]):
        assert Sequential(["EliminateCommonSubexpr"])(before) is before
    assert Sequential(["EliminateCommonSubexpr"])(before) is not before


def test_ten_thousand_node_graph():
    """Each level computes relu twice from the level below; CSE keeps one
    per level (20,000 -> 10,000 relu nodes) without recursing."""
    n = 10_000
    x = B.var("x", B.tensor((2,)))
    y: Expr = x
    for _ in range(n // 2):
        y = B.subtract(B.call("nn.relu", y), B.call("nn.relu", y))
    before = aot.infer_types(B.module(main=B.function([x], y)))
    after = cse(before)
    assert len(calls(before, "nn.relu")) == n
    assert len(calls(after, "nn.relu")) == n // 2
    assert_same_values(before, after, np.array([1.0, -2.0], np.float32))


@pytest.mark.parametrize("seed", range(3))
def test_random_inputs_give_the_same_values(seed):
    src = """def @main(%a: Tensor[(3, 4), float32], %b: Tensor[(4), float32]) {
        %0 = add(%a, %b);
        %1 = add(%a, %b);
        %2 = nn.softmax(%0, axis=1);
        %3 = nn.softmax(%1, axis=1);
        %4 = split(%3, indices_or_sections=2, axis=1);
        let %t = (multiply(%2, %3), %4.0, %4.1, split(%2, indices_or_sections=2, axis=1).1);
        (%t.0, add(%t.1, %t.2), %t.3, multiply(%2, %3))
    }"""
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((3, 4)).astype(np.float32)
    b = rng.standard_normal(4).astype(np.float32)
    before = typed(src)
    after = cse(before)
    assert len(calls(after, "nn.softmax")) == 1 and len(calls(after, "split")) == 1
    assert_same_values(before, after, a, b)
