"""ToGraphNormalForm: before/expected IR (TVM's
test_pass_to_graph_normal_form.py cases and ours), sharing made implicit,
effects and closures kept as lets, the interpreter giving the same values,
and the round trip GNF(ANF(x)) == x on dataflow programs (TVM's
test_round_trip, plus random graphs and a 10,000-node one)."""

from __future__ import annotations

import numpy as np
import pytest

import aot
from aot import builder as B
from aot.interpreter import Interpreter
from aot.ir.expr import Call, Let, RefCreate, RefWrite
from aot.ir.feature import Feature, detect_feature
from aot.ir.module import IRModule
from aot.ir.structural import assert_structural_equal
from aot.ir.visitor import post_order
from aot.passes.manager import PassContext, Sequential, run_pass
from aot.values import values_equal
from pass_helpers import TVM_REF_PROGRAM, deep_let_chain, random_args, shared_graph


def typed(text: str) -> IRModule:
    return aot.infer_types(aot.parse(text, source_name="gnf.relay"))


def run(name: str, mod: IRModule) -> IRModule:
    with PassContext(verify=True):
        return run_pass(name, mod)


def distinct_calls(mod: IRModule) -> int:
    return sum(isinstance(n, Call) for n in post_order(mod["main"]))


# ------------------------------------------------------------------ cases

CASES: dict[str, tuple[str, str | None]] = {
    # TVM test_implicit_share: every let of a pure value becomes an edge
    "implicit_share": (
        "def @main() { let %x = 1; let %y = add(%x, %x); let %z = add(%y, %y); add(%z, %z) }",
        "def @main() { %0 = 1; %1 = add(%0, %0); %2 = add(%1, %1); add(%2, %2) }",
    ),
    # effects keep their lets (TVM's ref program)
    "ref": (
        TVM_REF_PROGRAM,
        None,
    ),
    "closure": ("def @main(%x: float32) { let %f = fn (%y: float32) { %y }; %f(%x) }", None),
    "closure_inside_value": (
        "def @main(%x: float32) { let %t = (fn (%y: float32) { %y }, %x); %t.1 }", None),
    "call_of_a_global": (
        """def @g(%a: float32) { negative(%a) }
           def @main(%x: float32) { let %y = @g(%x); add(%y, %y) }""",
        None,
    ),
    # constructor calls are pure
    "constructor": (
        "def @main(%x: int32) { let %c = Some(%x); (%c, %c) }",
        "def @main(%x: int32) { %0 = Some(%x); (%0, %0) }",
    ),
    "lets_in_branches": (
        """def @main(%x: float32, %c: bool) {
             if (%c) { let %y = add(%x, %x); multiply(%y, %y) } else { %x }
           }""",
        """def @main(%x: float32, %c: bool) {
             if (%c) { %0 = add(%x, %x); multiply(%0, %0) } else { %x }
           }""",
    ),
    "let_bound_to_a_let": (
        "def @main(%x: float32) { let %y = (let %z = add(%x, %x); %z); multiply(%y, %y) }",
        "def @main(%x: float32) { %0 = add(%x, %x); multiply(%0, %0) }",
    ),
    # a pure let after an effect: the pure one goes, the effect stays
    "mixed": (
        """def @main(%x: float32) {
             let %r = ref(%x); let %y = add(%x, 1f); ref_write(%r, %y); %y
           }""",
        """def @main(%x: float32) {
             let %r = ref(%x); %0 = add(%x, 1f); ref_write(%r, %0); %0
           }""",
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_cases(name: str) -> None:
    before_text, expected_text = CASES[name]
    before = typed(before_text)
    after = run("ToGraphNormalForm", before)
    if expected_text is None:
        assert after["main"] is before["main"]
    else:
        assert_structural_equal(after["main"], typed(expected_text)["main"])
    for seed in range(2):
        args = random_args(before, seed)
        assert values_equal(aot.interpret(after, *args), aot.interpret(before, *args))


def test_implicit_share_is_sharing() -> None:
    """TVM's test_implicit_share by features, and the sharing itself: each
    let's value is one node used by both operands."""
    before = typed(CASES["implicit_share"][0])
    after = run("ToGraphNormalForm", before)
    assert Feature.fLet in detect_feature(before)
    assert Feature.fLet not in detect_feature(after)
    assert Feature.fGraph in detect_feature(after)
    assert distinct_calls(after) == 3
    assert int(aot.interpret(after)) == 8


def test_no_pure_let_is_left() -> None:
    """Graph form: the lets that remain bind closures or touch effects."""
    before = typed(CASES["mixed"][0])
    after = run("ToGraphNormalForm", before)
    lets = [n for n in post_order(after["main"]) if isinstance(n, Let)]
    assert sorted(n.var.name_hint for n in lets) == ["_", "r"]    # ref(..), ref_write(..)
    for let in lets:
        assert any(isinstance(n, (RefCreate, RefWrite)) for n in post_order(let.value))


def test_disabled_by_name_leaves_the_module_unchanged() -> None:
    mod = typed(CASES["implicit_share"][0])
    with PassContext(disabled=["ToGraphNormalForm"]):
        assert Sequential(["ToGraphNormalForm"])(mod) is mod
    assert Sequential(["ToGraphNormalForm"])(mod) is not mod


# ------------------------------------------------------------ round trip

def assert_round_trip(mod: IRModule) -> None:
    """GNF(ANF(x)) == x, sharing included (the same number of distinct
    nodes), and ANF really changed something on the way."""
    a = run("ToANormalForm", mod)
    assert Feature.fLet in detect_feature(a)
    g = run("ToGraphNormalForm", a)
    assert_structural_equal(g, mod)
    assert len(post_order(g["main"])) == len(post_order(mod["main"]))


def test_round_trip() -> None:
    """TVM's test_round_trip: GNF of the let program, then ANF, then GNF."""
    f = typed(CASES["implicit_share"][0])
    g = run("ToGraphNormalForm", f)
    assert_round_trip(g)
    assert int(aot.interpret(run("ToANormalForm", g))) == 8


def random_dataflow(seed: int) -> IRModule:
    """A random dataflow graph over three float32 vectors: every operand
    is drawn from all nodes built so far, so nodes are shared freely;
    tuples and projections included."""
    rng = np.random.default_rng(seed)
    params = [B.var(n, B.tensor((3,), "float32")) for n in "abc"]
    pool: list = list(params)
    for _ in range(int(rng.integers(5, 30))):
        pick = [pool[int(i)] for i in rng.integers(0, len(pool), 2)]
        kind = int(rng.integers(0, 6))
        if kind == 0:
            node = B.negative(pick[0])
        elif kind == 1:
            node = B.proj(B.tuple_(pick[0], pick[1]), int(rng.integers(2)))
        elif kind == 2:
            node = B.add(pick[0], B.const(np.float32(rng.standard_normal())))
        else:
            node = [B.add, B.multiply, B.maximum][kind - 3](pick[0], pick[1])
        pool.append(node)
    out = B.tuple_(pool[-1], pool[int(rng.integers(len(pool)))])
    return aot.infer_types(B.module(main=B.function(params, out)))


@pytest.mark.parametrize("seed", range(25))
def test_round_trip_random_dataflow(seed: int) -> None:
    mod = random_dataflow(seed)
    assert_round_trip(mod)
    g = run("ToGraphNormalForm", run("ToANormalForm", mod))
    args = random_args(mod, seed)
    assert values_equal(aot.interpret(g, *args), aot.interpret(mod, *args))


def test_round_trip_ten_thousand_node_graph() -> None:
    n = 10_000
    x, b = shared_graph(n)
    mod = aot.infer_types(B.module(main=B.function([x], b)))
    assert_round_trip(mod)


def test_ten_thousand_deep_let_chain() -> None:
    n = 10_000
    x, body = deep_let_chain(n)
    before = aot.infer_types(B.module(main=B.function([x], body)))
    after = run("ToGraphNormalForm", before)
    assert Feature.fLet not in detect_feature(after)
    assert distinct_calls(after) == n
    assert float(Interpreter(after).call("main", [np.float32(0.0)])) == float(n)


def test_operator_bound_as_a_value_stays_a_let():
    """``let %o: fn (int32, int32) -> int32 = subtract`` passed to @foldr:
    substituting the bare (polymorphic) operator leaves nothing to infer its
    type from (found by the random C programs)."""
    import aot
    from aot.passes.manager import PassContext, run_pass
    text = """
def @main(%x: int32) -> int32 {
  let %xs: List[int32] = Cons(%x, Nil);
  let %o: fn (int32, int32) -> int32 = subtract;
  @foldr(%o, %x, %xs)
}
"""
    mod = aot.infer_types(aot.parse(text))
    with PassContext(verify=True):
        out = run_pass("ToGraphNormalForm", mod)
    assert "let %o" in str(out["main"])
    assert int(aot.interpret(out, np.int32(5))) == int(aot.interpret(mod, np.int32(5)))
