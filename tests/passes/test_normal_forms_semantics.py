"""ToANormalForm and ToBasicBlockNormalForm keep the meaning: random
graph-form programs (shared nodes, ifs, lets, closures) and every Relay
corpus program with a runnable @main (closures, ADTs, match, refs,
recursion), interpreted before and after each pass; each result passes
its normal-form checker."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import aot
from aot import builder as B
from aot.ir.module import IRModule
from aot.ir.normal_form import a_normal_form_violations, basic_block_violations
from aot.ir.types import TensorType, TupleType, Type, TypeCall, TypeVar, substitute
from aot.passes.manager import PassContext, run_pass
from aot.interpreter import Interpreter
from aot.values import Closure, ConstructorValue, RefValue, Value, values_equal

CHECKERS = {
    "ToANormalForm": a_normal_form_violations,
    "ToBasicBlockNormalForm": basic_block_violations,
}


def convert(name: str, mod: IRModule) -> IRModule:
    with PassContext(verify=True):
        out = run_pass(name, mod)
    assert CHECKERS[name](out) == []
    return out


# ------------------------------------------------------------ random programs

def random_program(seed: int) -> IRModule:
    """A random graph-form program over two float32 vectors: shared nodes
    (operands drawn from everything built so far, in any block), ifs,
    lets and closures called on the spot."""
    rng = np.random.default_rng(seed)
    x = B.var("x", B.tensor((2,), "float32"))
    y = B.var("y", B.tensor((2,), "float32"))
    pool: list = [x, y]
    budget = [int(rng.integers(15, 40))]

    def scoped(var, build):
        """``build()`` with ``var`` usable; nothing built with it outlives
        the binder."""
        mark = len(pool)
        pool.append(var)
        out = build()
        del pool[mark:]
        return out

    def gen(depth: int):
        budget[0] -= 1
        kind = int(rng.integers(0, 10)) if depth < 4 and budget[0] > 0 else 0
        if kind <= 2:
            return pool[int(rng.integers(len(pool)))]
        if kind <= 5:
            op = [B.add, B.subtract, B.multiply, B.maximum][int(rng.integers(4))]
            node = op(gen(depth + 1), gen(depth + 1))
        elif kind == 6:
            node = B.negative(gen(depth + 1))
        elif kind == 7:
            cond = B.less(B.call("sum", gen(depth + 1)), B.const(0.0))
            node = B.if_(cond, gen(depth + 1), gen(depth + 1))
        elif kind == 8:
            v = B.var(f"v{budget[0]}")
            value = gen(depth + 1)
            node = B.let(v, value, scoped(v, lambda: gen(depth + 1)))
        else:
            p = B.var(f"p{budget[0]}", B.tensor((2,), "float32"))
            fn = B.function([p], scoped(p, lambda: gen(depth + 1)))
            node = B.call(fn, gen(depth + 1))
        pool.append(node)
        return node

    body = B.tuple_(gen(0), gen(0))
    return aot.infer_types(B.module(main=B.function([x, y], body)))


@pytest.mark.parametrize("name", sorted(CHECKERS))
@pytest.mark.parametrize("seed", range(30))
def test_random_programs(name: str, seed: int) -> None:
    before = random_program(seed)
    after = convert(name, before)
    rng = np.random.default_rng(seed)
    for _ in range(2):
        args = [rng.standard_normal(2).astype(np.float32) for _ in range(2)]
        assert values_equal(aot.interpret(after, *args), aot.interpret(before, *args))


# ------------------------------------------------------------ the corpus

CORPUS = Path(__file__).resolve().parents[2].parent / "shared" / "corpus" / "relay"
MANIFEST = json.loads((CORPUS / "manifest.json").read_text()) if CORPUS.exists() else []
needs_corpus = pytest.mark.skipif(not CORPUS.exists(),
                                  reason="../shared/corpus is not beside the repo")


def runnable(rec: dict) -> bool:
    """Tier A (core language) and B (tensor programs) with a @main that
    type-checks and terminates (the manifest's notes say which do not)."""
    if rec["tier"][0] not in "AB" or rec.get("duplicate_of"):
        return False
    expect = (rec.get("expect") or "").lower()
    if "ill-typed" in expect or "diverges" in expect:
        return False
    return rec["kind"] == "expr" or "@main" in (CORPUS / rec["id"]).read_text()


def load(rec: dict) -> IRModule | None:
    path = CORPUS / rec["id"]
    try:
        mod = aot.infer_types(aot.parse(path.read_text(), str(path)))
    except aot.DiagnosticError:
        return None    # the programs TVM only parsed (tests/test_corpus_semantics.py)
    return mod if "main" in mod else None


def random_value(t: Type, rng: np.random.Generator, mod: IRModule, depth: int = 0):
    """A random value of ``t``; ADT values stay small."""
    if isinstance(t, TupleType):
        return tuple(random_value(f, rng, mod, depth) for f in t.fields)
    if isinstance(t, TypeVar):
        return np.asarray(rng.integers(0, 5), np.int32)
    if isinstance(t, TypeCall):
        data = mod.type_definitions[t.func]
        ctors = list(data.constructors)
        if depth >= 3:
            ctors = [c for c in ctors if not c.inputs] or ctors
        ctor = ctors[int(rng.integers(len(ctors)))]
        mapping = dict(zip(data.type_vars, t.args))
        return ConstructorValue(ctor, tuple(random_value(substitute(f, mapping), rng, mod,
                                                         depth + 1) for f in ctor.inputs))
    assert isinstance(t, TensorType), t
    shape = tuple(d if isinstance(d, int) else 2 for d in t.shape)
    if t.dtype.is_float:
        return rng.standard_normal(shape).astype(t.dtype.np)
    if t.dtype.is_bool:
        return rng.integers(0, 2, shape).astype(np.bool_)
    return rng.integers(0, 5, shape).astype(t.dtype.np)


def _can_generate(t: Type) -> bool:
    if isinstance(t, TupleType):
        return all(_can_generate(f) for f in t.fields)
    return isinstance(t, (TensorType, TypeCall, TypeVar))


@needs_corpus
@pytest.mark.parametrize("rec", [r for r in MANIFEST if runnable(r)], ids=lambda r: r["id"])
def test_corpus_programs(rec: dict) -> None:
    mod = load(rec)
    if mod is None:
        pytest.skip("no typeable @main (tests/test_corpus_semantics.py says why)")
    params = mod["main"].params
    if not all(_can_generate(p.checked_type) for p in params):
        pytest.skip("@main takes a function")
    rng = np.random.default_rng(0)
    args = [random_value(p.checked_type, rng, mod) for p in params]
    before = Interpreter(mod)
    want = before.call("main", args)
    for name in sorted(CHECKERS):
        after = convert(name, mod)
        aot.interpret(after, *args)     # type-checks the arguments
        got = Interpreter(after)
        assert same_value(want, before, got.call("main", args), got, mod), name


def same_value(a: Value, ia: Interpreter, b: Value, ib: Interpreter, mod: IRModule) -> bool:
    """``a`` (from interpreter ``ia``) and ``b`` (from ``ib``) agree; two
    closures agree when they give the same value on random arguments,
    two references when their contents agree."""
    if isinstance(a, Closure) and isinstance(b, Closure):
        types = [p.checked_type for p in a.func.params]
        if not all(t is not None and _can_generate(t) for t in types):
            return True
        rng = np.random.default_rng(1)
        args = [random_value(t, rng, mod) for t in types]
        return same_value(ia.apply(a, args), ia, ib.apply(b, args), ib, mod)
    if isinstance(a, RefValue) and isinstance(b, RefValue):
        return same_value(a.value, ia, b.value, ib, mod)
    if isinstance(a, tuple) and isinstance(b, tuple):
        return len(a) == len(b) and all(same_value(x, ia, y, ib, mod) for x, y in zip(a, b))
    if isinstance(a, ConstructorValue) and isinstance(b, ConstructorValue):
        return a.constructor.name == b.constructor.name and \
            same_value(a.fields, ia, b.fields, ib, mod)
    return values_equal(a, b)


@needs_corpus
def test_corpus_covers_the_language() -> None:
    """The corpus programs above include closures, ADTs, match, refs and
    recursion (so the test means what its docstring says)."""
    features = set()
    for rec in MANIFEST:
        if runnable(rec):
            features.update(rec["features"])
    assert {"closure", "match", "ref", "recursion", "if", "let", "adt_def"} <= features


@needs_corpus
@pytest.mark.parametrize("name", sorted(CHECKERS))
def test_nat_add(name: str) -> None:
    """TVM's test_nat_add: the standard library's Peano naturals, converted
    and evaluated (2 = 1 + 1)."""
    prelude = aot.parse((CORPUS / "std/prelude.rly").read_text(), "prelude.rly", prelude=False)
    nat = aot.parse((CORPUS / "std/nat.rly").read_text(), "nat.rly", base=prelude,
                    prelude=False)
    main = aot.parse("def @main() { @nat_add(succ(zero), succ(zero)) }", "main.relay",
                     base=nat, prelude=False)
    mod = aot.infer_types(main)
    after = convert(name, mod)

    def count(v: ConstructorValue) -> int:
        n = 0
        while v.constructor.name == "succ":
            n, v = n + 1, v.fields[0]
        return n

    assert count(aot.interpret(after)) == count(aot.interpret(mod)) == 2
