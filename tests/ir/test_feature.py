"""aot.ir.feature.detect_feature: TVM's test_feature cases (the prelude's
feature set, a reference-passing program like the gradient's), a table of
programs with the features each must give, sharing (fGraph) and local
recursion (fLetRec) in detail, normal forms stated as features, and the
FeatureSet operations."""

from __future__ import annotations

from pathlib import Path

import pytest

import aot
from aot import builder as B
from aot.ir.expr import Let, Tuple
from aot.ir.feature import Feature, FeatureSet, check_feature, detect_feature
from aot.ir.module import IRModule
from aot.ir.normal_form import is_primitive_function
from aot.ir.visitor import post_order
from aot.passes.manager import run_pass

F = Feature
CORPUS = Path(__file__).resolve().parents[2].parent / "shared" / "corpus" / "relay"

PRELUDE_FEATURES = {F.fVar, F.fGlobalVar, F.fConstant, F.fTuple, F.fTupleGetItem,
                    F.fFunction, F.fOp, F.fCall, F.fLet, F.fIf, F.fConstructor, F.fMatch}


def parse(text: str) -> IRModule:
    return aot.parse(text, source_name="feature.relay")


def test_prelude() -> None:
    """TVM's test_prelude: the standard library's features."""
    assert set(detect_feature(aot.prelude())) == PRELUDE_FEATURES


@pytest.mark.skipif(not CORPUS.exists(), reason="../shared/corpus is not beside the repo")
def test_relay_std_prelude() -> None:
    mod = aot.parse((CORPUS / "std/prelude.rly").read_text(), "prelude.rly", prelude=False)
    assert set(detect_feature(mod)) == PRELUDE_FEATURES


def test_reference_passing_program() -> None:
    """TVM's test_ad on a program of the shape its gradient produces:
    closures over a reference, tuples and projections, in let form."""
    mod = parse("""
      def @main(%x: Tensor[(10, 10), float32]) {
        let %grad = ref(zeros_like(%x));
        let %y = add(%x, %x);
        let %back = fn () {
          let %g = ones_like(%y);
          let %u = ref_write(%grad, add(ref_read(%grad), add(%g, %g)));
          ()
        };
        let %r = (%y, %back);
        let %v = %r.1();
        (%r.0, (ref_read(%grad),))
      }""")
    assert set(detect_feature(mod)) == {F.fVar, F.fTuple, F.fTupleGetItem, F.fFunction, F.fOp,
                                        F.fCall, F.fLet, F.fRefCreate, F.fRefRead,
                                        F.fRefWrite}


# ------------------------------------------------------------------ table

TABLE = {
    "var": ("def @main(%x: int32) { %x }", {F.fFunction, F.fVar}),
    "constant": ("def @main() { 1 }", {F.fFunction, F.fConstant}),
    "op_call": ("def @main(%x: int32) { negative(%x) }",
                {F.fFunction, F.fVar, F.fOp, F.fCall}),
    "global": ("def @g() { 1 } def @main() { @g() }",
               {F.fFunction, F.fConstant, F.fGlobalVar, F.fCall}),
    "tuple": ("def @main(%x: int32) { (%x, %x).0 }",
              {F.fFunction, F.fVar, F.fTuple, F.fTupleGetItem}),
    "let": ("def @main() { let %x = 1; %x }", {F.fFunction, F.fVar, F.fConstant, F.fLet}),
    "if": ("def @main(%c: bool) { if (%c) { 1 } else { 2 } }",
           {F.fFunction, F.fVar, F.fConstant, F.fIf}),
    "refs": ("def @main() { let %r = ref(1); let %u = ref_write(%r, 2); ref_read(%r) }",
             {F.fFunction, F.fVar, F.fConstant, F.fLet, F.fRefCreate, F.fRefWrite,
              F.fRefRead}),
    "match": ("def @main(%o: Option[int32]) { match (%o) { Some(%v) => %v, None => 0 } }",
              {F.fFunction, F.fVar, F.fConstant, F.fMatch}),
    "constructor": ("def @main() { Some(1) }",
                    {F.fFunction, F.fConstant, F.fConstructor, F.fCall}),
    "graph": ("def @main(%x: int32) { %0 = negative(%x); add(%0, %0) }",
              {F.fFunction, F.fVar, F.fOp, F.fCall, F.fGraph}),
    "let_rec": ("""def @main(%n: int32) {
                     let %f = fn (%i: int32) -> int32 { if (%i == 0) { 0 } else { %f(%i - 1) } };
                     %f(%n)
                   }""",
                {F.fFunction, F.fVar, F.fConstant, F.fOp, F.fCall, F.fLet, F.fIf,
                 F.fLetRec}),
}


@pytest.mark.parametrize("name", sorted(TABLE))
def test_table(name: str) -> None:
    text, want = TABLE[name]
    mod = parse(text)
    fns = [mod[n] for n in ("g", "main") if n in mod]
    found: set[Feature] = set()
    for fn in fns:
        found |= set(detect_feature(fn))
    assert found == want


def test_shared_atoms_are_not_a_graph() -> None:
    """A variable, operator, constant or constructor used twice is not
    sharing: only a compound node is."""
    x = B.var("x", "int32")
    one = B.const(1)
    body = B.tuple_(B.add(x, one), B.add(x, one), B.negative(x))
    assert F.fGraph not in detect_feature(B.function([x], body))
    shared = B.add(x, one)
    assert F.fGraph in detect_feature(B.function([x], B.tuple_(shared, shared)))


def test_primitive_function_bodies_are_not_looked_into() -> None:
    mod = aot.infer_types(parse("""
      def @main(%x: Tensor[(4), float32]) { %0 = exp(%x); (negative(%0), %0) }"""))
    fused = run_pass("FuseOps", mod)
    found = detect_feature(fused)
    assert F.fFunction in found and F.fOp not in found
    # a primitive function called twice is an atom, not sharing
    prim = next(n for n in post_order(fused["main"]) if is_primitive_function(n))
    x = B.var("y", B.tensor((4,), "float32"))
    twice = B.function([x], B.tuple_(B.call(prim, x), B.call(prim, x)))
    assert F.fGraph not in detect_feature(twice)


def test_let_rec_only_for_a_function_referring_to_itself() -> None:
    f, g, i = B.var("f"), B.var("g"), B.var("i", "int32")
    plain = Let(f, B.function([i], i), Let(g, B.function([i], B.call(f, i)), B.call(g, 1)))
    assert F.fLetRec not in detect_feature(plain)
    assert F.fLet in detect_feature(plain)
    rec = Let(f, B.function([i], B.call(f, i)), B.call(f, 1))
    assert F.fLetRec in detect_feature(rec)


def test_expression_and_module_together() -> None:
    """``detect_feature(expr, mod)``: the union, as in Relay."""
    mod = parse("def @main() { let %x = 1; %x }")
    expr = B.if_(B.const(True), B.const(1), B.const(2))
    found = detect_feature(expr, mod)
    assert F.fIf in found and F.fLet in found


def test_normal_forms_as_features() -> None:
    """ANF output has no fGraph; GNF output of a pure program no fLet."""
    mod = aot.infer_types(parse("""
      def @main(%x: float32) { let %y = add(%x, %x); %0 = multiply(%y, %y); add(%0, %0) }"""))
    assert {F.fGraph, F.fLet} <= set(detect_feature(mod))
    assert F.fGraph not in detect_feature(run_pass("ToANormalForm", mod))
    assert F.fLet not in detect_feature(run_pass("ToGraphNormalForm", mod))


def test_ten_thousand_deep_let_chain_and_graph() -> None:
    n = 10_000
    x = B.var("x", "int32")
    vars_ = [x] + [B.var(f"v{k}") for k in range(n)]
    body = vars_[-1]
    for k in range(n, 0, -1):
        body = Let(vars_[k], B.add(vars_[k - 1], 1), body)
    assert set(detect_feature(B.function([x], body))) == {
        F.fFunction, F.fVar, F.fLet, F.fOp, F.fCall, F.fConstant}
    a, b = x, B.negative(x)
    for _ in range(n):
        a, b = b, B.maximum(a, b)
    assert F.fGraph in detect_feature(B.function([x], b))


# ------------------------------------------------------------------ the set

def test_feature_set_operations() -> None:
    s = FeatureSet.of([F.fLet, F.fVar])
    assert F.fLet in s and F.fIf not in s
    assert list(s) == [F.fVar, F.fLet]                  # declaration order
    assert len(s | [F.fIf]) == 3 and (s + FeatureSet.of([F.fIf])) == (s | [F.fIf])
    assert list(s - [F.fLet]) == [F.fVar]
    assert s.is_subset_of(FeatureSet.all()) and not FeatureSet.all().is_subset_of(s)
    assert len(FeatureSet.none()) == 0 and len(FeatureSet.all()) == len(Feature)
    assert repr(s) == "FeatureSet(fVar, fLet)"


def test_check_feature() -> None:
    mod = parse("def @main(%x: int32) { %0 = negative(%x); add(%0, %0) }")
    check_feature(mod, FeatureSet.all())
    with pytest.raises(AssertionError, match="fGraph"):
        check_feature(mod, FeatureSet.all() - [F.fGraph])


def test_tuple_node_shared_inside_a_tuple() -> None:
    x = B.var("x", "int32")
    t = Tuple((x, x))
    assert F.fGraph in detect_feature(B.function([x], Tuple((t, t))))
