"""Inline: before/expected IR after TVM's test_pass_inline.py (functions
marked ``Inline=1``), single-use small globals (``max_size``), recursion
never inlined, fresh variables in every copy, effects of arguments kept,
values kept on random inputs, and a 10,000-deep callee."""

from __future__ import annotations

import numpy as np
import pytest

import aot
from aot import builder as B
from aot.ir.expr import Let
from aot.ir.module import IRModule
from aot.ir.structural import assert_structural_equal
from aot.ir.visitor import post_order
from aot.ir.well_formed import ill_formed
from aot.passes.inline import call_graph_sccs, fresh_copy
from aot.passes.manager import PassContext, Sequential, run_pass
from pass_helpers import assert_same_values


def typed(text: str) -> IRModule:
    return aot.infer_types(aot.parse(text, source_name="inline.relay"))


def inline(mod: IRModule, **options: object) -> IRModule:
    with PassContext(options={"Inline": options}, verify=True):
        return run_pass("Inline", mod)


T = "Tensor[(3, 5), float32]"
P4 = f"%p0: {T}, %p1: {T}, %p2: {T}, %p3: {T}"
SUM_UP = """
def @sum_up(%i: int32, Inline=1) -> int32 {
  if (%i == 0) { %i } else { add(@sum_up(subtract(%i, 1)), %i) }
}
"""

# (before, expected): TVM's cases, with single-use inlining off (max_size=0)
# so that only Inline=1 functions move, as in Relay.
RELAY = {
    "call_chain_inline_leaf": (
        f"""def @g11(%x11: {T}, Inline=1) {{ %x11 }}
            def @g1(%x1: {T}, %y1: {T}) {{ %x1 + %y1 + @g11(%x1) }}
            def @g2(%x2: {T}, %y2: {T}) {{ %x2 - %y2 }}
            def @main({P4}) {{ @g1(%p0, %p1) * @g2(%p2, %p3) }}""",
        f"""def @g1(%x1: {T}, %y1: {T}) {{ %x1 + %y1 + %x1 }}
            def @g2(%x2: {T}, %y2: {T}) {{ %x2 - %y2 }}
            def @main({P4}) {{ @g1(%p0, %p1) * @g2(%p2, %p3) }}"""),
    "call_chain_inline_multiple_levels": (
        f"""def @g11(%x11: {T}, Inline=1) {{ %x11 }}
            def @g1(%x1: {T}, %y1: {T}, Inline=1) {{ %x1 + %y1 + @g11(%x1) }}
            def @g2(%x2: {T}, %y2: {T}) {{ %x2 - %y2 }}
            def @main({P4}) {{ @g1(%p0, %p1) * @g2(%p2, %p3) }}""",
        f"""def @g2(%x2: {T}, %y2: {T}) {{ %x2 - %y2 }}
            def @main({P4}) {{ (%p0 + %p1 + %p0) * @g2(%p2, %p3) }}"""),
    "recursive_call_with_global": (
        """def @gx(%x: int32, Inline=1) { %x }
           def @sum_up(%i: int32, Inline=1) -> int32 {
             if (%i == 0) { %i } else { add(add(@sum_up(subtract(%i, 1)), @gx(%i)), %i) }
           }
           def @main(%i: int32) { @sum_up(%i) }""",
        """def @sum_up(%i: int32, Inline=1) -> int32 {
             if (%i == 0) { %i } else { add(add(@sum_up(subtract(%i, 1)), %i), %i) }
           }
           def @main(%i: int32) { @sum_up(%i) }"""),
    "recursive_called": (
        SUM_UP + "def @main(%i: int32) { @sum_up(%i) }",
        SUM_UP + "def @main(%i: int32) { @sum_up(%i) }"),
    "recursive_not_called": (
        SUM_UP + """def @g1(%x1: Tensor[(2, 2), float32], Inline=1) { %x1 }
           def @main(%x: Tensor[(2, 2), float32], %y: Tensor[(2, 2), float32]) { %x + %y + @g1(%x) }""",
        SUM_UP + """
           def @main(%x: Tensor[(2, 2), float32], %y: Tensor[(2, 2), float32]) { %x + %y + %x }"""),
    "globalvar_as_call_arg": (
        f"""def @g1(%x1: {T}, %y1: {T}, Inline=1) {{ %x1 + %y1 }}
            def @g2(%x2: {T}, %y2: {T}, Inline=1) {{ %x2 - %y2 }}
            def @main({P4}) {{ @g1(%p0, %p1) * @g2(%p2, %p3) }}""",
        f"""def @main({P4}) {{ (%p0 + %p1) * (%p2 - %p3) }}"""),
    "inline_globalvar_without_args": (
        """def @g1(Inline=1) { 1 }
           def @g2(Inline=1) { 2 }
           def @main(%p: bool) { (if (%p) { @g1 } else { @g2 })() }""",
        """def @main(%p: bool) {
             (if (%p) { fn (Inline=1) { 1 } } else { fn (Inline=1) { 2 } })()
           }"""),
    "globalvar_called_by_multiple_functions": (
        f"""def @g1(%x1: {T}, %y1: {T}) {{ %x1 + %y1 }}
            def @g2(%x2: {T}, %y2: {T}, Inline=1) {{ %x2 - %y2 }}
            def @g0(%x0: {T}, %y0: {T}, %z0: {T}) {{ @g2(%x0, %y0) + %z0 }}
            def @main({P4}) {{ @g1(%p0, %p1) * @g2(%p2, %p3) }}""",
        f"""def @g1(%x1: {T}, %y1: {T}) {{ %x1 + %y1 }}
            def @g0(%x0: {T}, %y0: {T}, %z0: {T}) {{ %x0 - %y0 + %z0 }}
            def @main({P4}) {{ @g1(%p0, %p1) * (%p2 - %p3) }}"""),
    "entry_with_inline": (
        f"""def @g1(%x1: {T}, %y1: {T}, Inline=1) {{ %x1 + %y1 }}
            def @g2(%x2: {T}, %y2: {T}, Inline=1) {{ %x2 - %y2 }}""",
        f"""def @g1(%x1: {T}, %y1: {T}, Inline=1) {{ %x1 + %y1 }}
            def @g2(%x2: {T}, %y2: {T}, Inline=1) {{ %x2 - %y2 }}"""),
    "callee_not_inline": (
        f"""def @g1(%x1: {T}, %y1: {T}) {{ %x1 + %y1 }}
            def @g2(%x2: {T}, %y2: {T}, Inline=1) {{ %x2 - @g1(%x2, %y2) }}""",
        f"""def @g1(%x1: {T}, %y1: {T}) {{ %x1 + %y1 }}
            def @g2(%x2: {T}, %y2: {T}, Inline=1) {{ %x2 - @g1(%x2, %y2) }}"""),
    "callee_not_inline_leaf_inline": (
        f"""def @g0(%x0: {T}, %y0: {T}, Inline=1) {{ %x0 * %y0 }}
            def @g1(%x1: {T}, %y1: {T}) {{ %x1 + @g0(%x1, %y1) }}
            def @g2(%x2: {T}, %y2: {T}, Inline=1) {{ %x2 - @g1(%x2, %y2) }}""",
        f"""def @g1(%x1: {T}, %y1: {T}) {{ %x1 + %x1 * %y1 }}
            def @g2(%x2: {T}, %y2: {T}, Inline=1) {{ %x2 - @g1(%x2, %y2) }}"""),
}


def _args(mod: IRModule, seed: int = 0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    out = []
    for p in mod["main"].params:
        t = p.checked_type
        if t.dtype.is_bool:
            out.append(np.bool_(rng.integers(2)))
        elif t.dtype.is_int:
            out.append(np.asarray(rng.integers(0, 6), t.dtype.np))
        else:
            out.append(rng.standard_normal(t.shape).astype(t.dtype.np))
    return out


@pytest.mark.parametrize("name", sorted(RELAY))
def test_relay_cases(name):
    before_src, expected_src = RELAY[name]
    before = typed(before_src)
    after = inline(before, max_size=0)
    assert_structural_equal(after, typed(expected_src))
    if "main" in before:
        assert_same_values(before, after, *_args(before))


# ------------------------------------------------------- single-use globals

SINGLE = f"""
def @small(%a: {T}, %b: {T}) {{ nn.relu(%a) * %b }}
def @twice(%a: {T}) {{ exp(%a) }}
def @main(%x: {T}, %y: {T}) {{ (@small(%x, %y), @twice(%x), @twice(%y)) }}
"""


def test_a_small_single_use_global_is_inlined_and_removed():
    after = inline(typed(SINGLE))
    assert sorted(g.name for g in after.functions) == ["main", "twice"]
    assert_structural_equal(after, typed(f"""
        def @twice(%a: {T}) {{ exp(%a) }}
        def @main(%x: {T}, %y: {T}) {{ (nn.relu(%x) * %y, @twice(%x), @twice(%y)) }}"""))
    assert_same_values(typed(SINGLE), after, *_args(typed(SINGLE)))


@pytest.mark.parametrize("max_size, inlined", [(0, False), (6, False), (7, True), (32, True)])
def test_max_size(max_size, inlined):
    """@small has 7 nodes: the function, two parameters, two operators and
    two calls (a variable's uses are the parameter node itself)."""
    after = inline(typed(SINGLE), max_size=max_size)
    assert ("small" in after) is not inlined


def test_a_global_used_as_a_value_is_not_single_use_inlined():
    src = """def @f(%x: float32) -> float32 { %x * 2f }
             def @main(%x: float32) { let %g = @f; %g(%x) }"""
    assert_structural_equal(inline(typed(src)), typed(src))


def test_the_entry_is_never_inlined():
    src = """def @main(%x: float32, Inline=1) -> float32 { %x }
             def @other(%x: float32) -> float32 { @main(%x) }"""
    assert_structural_equal(inline(typed(src)), typed(src))


def test_recursion_is_never_inlined():
    src = """
    def @even(%n: int32, Inline=1) -> bool { if (%n == 0) { True } else { @odd(%n - 1) } }
    def @odd(%n: int32) -> bool { if (%n == 0) { False } else { @even(%n - 1) } }
    def @loop(%n: int32) -> int32 { if (%n == 0) { 0 } else { @loop(%n - 1) } }
    def @main(%n: int32) { (@even(%n), @loop(%n)) }
    """
    before = typed(src)
    after = inline(before)
    assert_structural_equal(after, before)


def test_polymorphic_globals_are_not_inlined():
    src = """def @id[A](%x: A, Inline=1) -> A { %x }
             def @main(%x: float32) { @id(%x) }"""
    assert_structural_equal(inline(typed(src)), typed(src))


# --------------------------------------------------------- copies and order

def test_every_copy_binds_fresh_variables():
    src = """def @f(%x: float32, Inline=1) -> float32 {
               let %a = exp(%x); let %g = fn (%y: float32) -> float32 { %y + %a }; %g(%a)
             }
             def @main(%x: float32) { (@f(%x), @f(%x + 1f), @f(%x)) }"""
    before = typed(src)
    after = inline(before)
    assert ill_formed(after) == []
    assert list(after.functions) == [after.get_global_var("main")]
    # two lets per copy, and one binding the argument %x + 1f
    assert len([e for e in post_order(after["main"]) if isinstance(e, Let)]) == 7
    assert_same_values(before, after, np.float32(0.5))


def test_copies_do_not_share_effects():
    """``ref(0)`` in the callee has no variable in it; the two copies must
    still be two references."""
    src = """def @mk(Inline=1) -> Ref[int32] { ref(0) }
             def @main() {
               let %a = @mk(); let %b = @mk(); let %u = ref_write(%a, 1); ref_read(%b)
             }"""
    before = typed(src)
    after = inline(before)
    assert "mk" not in after
    assert int(aot.interpret(after)) == 0 == int(aot.interpret(before))


def test_arguments_are_evaluated_once_and_first():
    """A non-atomic argument is let-bound before the body: its effect
    happens even when the parameter is unused, and once when it is used
    twice."""
    src = """def @f(%unused: (), %v: int32, Inline=1) -> int32 { %v + %v }
             def @main() {
               let %r = ref(1);
               let %s = @f(ref_write(%r, 5), ref_read(%r));
               (%s, ref_read(%r))
             }"""
    before = typed(src)
    after = inline(before)
    assert "f" not in after
    assert [int(v) for v in aot.interpret(after)] == [10, 5]
    assert [int(v) for v in aot.interpret(before)] == [10, 5]


def test_fresh_copy_keeps_sharing_inside_the_copy():
    x = B.var("x", B.scalar("float32"))
    shared = B.exp(x)
    f = B.function([x], B.add(shared, shared))
    g = fresh_copy(f)
    assert g is not f and g.params[0] is not x
    assert g.body.args[0] is g.body.args[1] and g.body.args[0] is not shared


def test_call_graph_sccs_order():
    graph = {"main": ["a", "b"], "a": ["c"], "b": ["c", "b"], "c": ["d"], "d": ["c"]}
    comps = call_graph_sccs(graph)
    assert sorted(map(tuple, comps)) == [("a",), ("b",), ("c", "d"), ("main",)]
    pos = {n: i for i, comp in enumerate(comps) for n in comp}
    for n, succ in graph.items():
        for m in succ:
            assert pos[m] <= pos[n]


# --------------------------------------------------------------- manager

def test_options_are_typed():
    with pytest.raises(aot.DiagnosticError, match="max_size must be int"):
        inline(typed(SINGLE), max_size=1.5)


def test_disabled_by_name_leaves_the_module_unchanged():
    before = typed(SINGLE)
    with PassContext(disabled=["Inline"]):
        assert Sequential(["Inline"])(before) is before


def test_ten_thousand_deep_callee():
    n = 10_000
    x = B.var("x", B.scalar("float32"))
    bindings = []
    prev = x
    for i in range(n):
        v = B.var(f"v{i}")
        bindings.append((v, B.add(prev, B.const(1.0))))
        prev = v
    callee = B.function([x], B.let_chain(bindings, prev))
    callee = type(callee)(callee.params, callee.body, attrs=aot.ir.attrs.FuncAttrs.of({"Inline": 1}))
    y = B.var("y", B.scalar("float32"))
    mod = B.module(f=callee, main=B.function([y], B.multiply(B.call(B.gvar("f"), y), y)))
    mod = aot.infer_types(mod)
    after = inline(mod)
    assert list(after.functions) == [after.get_global_var("main")]
    lets = [e for e in post_order(after["main"]) if isinstance(e, Let)]
    assert len(lets) == n and not {let.var for let in lets} & set(bindings_vars(mod["f"]))
    np.testing.assert_array_equal(aot.interpret(after, np.float32(2.0)), np.float32(2 * (n + 2)))


def bindings_vars(func):
    return [e.var for e in post_order(func) if isinstance(e, Let)]


@pytest.mark.parametrize("seed", range(3))
def test_random_inputs_give_the_same_values(seed):
    src = f"""
    def @act(%a: {T}, Inline=1) {{ let %r = nn.relu(%a); %r * sigmoid(%r) }}
    def @block(%a: {T}, %b: {T}) {{ @act(%a + %b) - @act(%b) }}
    def @main(%x: {T}, %y: {T}) {{ @block(%x, tanh(%y)) }}
    """
    before = typed(src)
    after = inline(before)
    assert list(after.functions) == [after.get_global_var("main")]
    assert_same_values(before, after, *_args(before, seed))
