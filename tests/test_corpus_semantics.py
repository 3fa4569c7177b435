"""The Relay corpus, semantically: type checking and evaluation.

Tiers A and L type-check unless the manifest's `expect` note says the
program is ill-typed (then type inference must reject it with a
diagnostic), and every program whose `@main` takes no arguments evaluates.
Tier B programs type-check and evaluate on random inputs; tier C programs
type-check with their missing metadata constants as parameters whose shapes
type inference works out from the operators' relations.

(Parsing, printing and round trips of every tier are in
tests/ir/test_corpus_text.py.)
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import aot
from aot.diagnostics import DiagnosticError
from aot.ir.types import TensorType, TupleType, Type, TypeCall, TypeVar, substitute
from aot.values import ConstructorValue

CORPUS = Path(__file__).resolve().parents[1].parent / "shared" / "corpus" / "relay"
MANIFEST = json.loads((CORPUS / "manifest.json").read_text()) if CORPUS.exists() else []
pytestmark = pytest.mark.skipif(not CORPUS.exists(), reason="../shared/corpus is not beside the repo")


def records(tiers: str) -> list[dict]:
    return [r for r in MANIFEST if r["tier"][0] in tiers and not r.get("duplicate_of")]


def ill_typed(rec: dict) -> bool:
    return "ill-typed" in (rec.get("expect") or "").lower() or _stem(rec) in NOT_TYPEABLE


def _stem(rec: dict) -> str:
    return Path(rec["id"]).stem


#: Tier-A programs that TVM's tests only parsed and that are not well typed,
#: though the manifest does not say so; type inference must reject them with
#: this text in the message.
NOT_TYPEABLE = {
    "L0267_test_vars_0": "undefined global function `@foo`",  # `@foo` alone
    "L0540_test_tensor_type_0": "type mismatch",   # let %_ : Tensor[(), float32] = ()
    "L0545_test_tensor_type_0": "type mismatch",   # let %_ : Tensor[(1), float32] = ()
    "L0550_test_tensor_type_0": "type mismatch",   # let %_ : Tensor[(1, 1), float32] = ()
    "L0555_test_tensor_type_0": "type mismatch",   # let %_ : Tensor[(?, 1), float32] = ()
}

#: Tier-C programs whose metadata constants' shapes no relation determines
#: (the constants were given by TVM's metadata section, which the corpus
#: lacks): type inference must say which call it cannot type.
UNDERDETERMINED = {
    "L0089_mnist_0": "nn.dense",          # units=None: the weight's row count is free
    "L0304_gpt2_0": "take",               # the embedding table's shape is free
    "L1255_gpt2_16_0": "take",
    "L2328_gpt2_16_for_cutlass_extract_0": "nn.batch_matmul",  # no attribute fixes the weight
}


def load(rec: dict, **kw) -> aot.IRModule:
    path = CORPUS / rec["id"]
    text = path.read_text()
    if "only with init module" in (rec.get("expect") or ""):
        # TVM's test parsed it on top of the module of the previous snippet.
        init = CORPUS / "verbatim/test_ir_parser/L1009_test_init_module_and_metatable_0.relay"
        return aot.parse(text, str(path), base=aot.parse(init.read_text(), str(init)), **kw)
    if rec["id"] == "std/nat.rly":
        base = aot.parse((CORPUS / "std/prelude.rly").read_text(), "prelude.rly", prelude=False)
        return aot.parse(text, str(path), base=base, prelude=False)
    if rec["id"].startswith("std/"):
        return aot.parse(text, str(path), prelude=False)
    return aot.parse(text, str(path), **kw)


def random_value(t: Type, rng: np.random.Generator, mod: aot.IRModule | None = None,
                 depth: int = 0):
    """A random value of type ``t``; ADT values stay small (at depth 3 and
    beyond, constructors without recursive fields are preferred)."""
    if isinstance(t, TupleType):
        return tuple(random_value(f, rng, mod, depth) for f in t.fields)
    if isinstance(t, TypeVar):  # a polymorphic @main: use int32 scalars
        return np.int32(rng.integers(0, 5))
    if isinstance(t, TensorType) and not t.is_static:  # `?` dimensions: pick 2
        t = TensorType(tuple(d if isinstance(d, int) else 2 for d in t.shape), t.dtype)
    if isinstance(t, TypeCall):
        assert mod is not None
        data = mod.type_definitions[t.func]
        ctors = list(data.constructors)
        if depth >= 3:
            ctors = [c for c in ctors if not c.inputs] or ctors
        ctor = ctors[int(rng.integers(len(ctors)))]
        mapping = dict(zip(data.type_vars, t.args))
        fields = tuple(random_value(substitute(f, mapping), rng, mod, depth + 1)
                       for f in ctor.inputs)
        return ConstructorValue(ctor, fields)
    assert isinstance(t, TensorType) and t.is_static, t
    dt = t.dtype.np
    if t.dtype.is_float:
        return rng.standard_normal(t.shape).astype(dt)
    if t.dtype.is_bool:
        return rng.integers(0, 2, t.shape).astype(dt)
    return rng.integers(0, 5, t.shape).astype(dt)


def diverges(rec: dict) -> bool:
    return "diverges" in (rec.get("expect") or "")


@pytest.mark.parametrize("rec", records("AL"), ids=lambda r: r["id"])
def test_tier_a_and_l_type_check(rec: dict) -> None:
    if ill_typed(rec):
        with pytest.raises(DiagnosticError) as info:
            aot.infer_types(load(rec))
        assert NOT_TYPEABLE.get(_stem(rec), "") in str(info.value)
        return
    typed = aot.infer_types(load(rec))
    assert typed.is_typed


def has_main(rec: dict) -> bool:
    return rec["kind"] == "expr" or "@main" in (CORPUS / rec["id"]).read_text()


@pytest.mark.parametrize("rec", [r for r in records("A") if not ill_typed(r)
                                 and not diverges(r) and has_main(r)], ids=lambda r: r["id"])
def test_tier_a_mains_evaluate(rec: dict) -> None:
    """Every @main runs; one that takes arguments gets random ones (lists
    and other ADT values included)."""
    mod = aot.infer_types(load(rec))
    rng = np.random.default_rng(0)
    args = [random_value(p.checked_type, rng, mod) for p in mod["main"].params]
    aot.interpret(mod, *args)


def _static(t: Type) -> bool:
    if isinstance(t, TupleType):
        return all(_static(f) for f in t.fields)
    return isinstance(t, TensorType) and t.is_static


def test_ref_program_returns_one() -> None:
    rec = next(r for r in MANIFEST if "returns 1f for any x" in (r.get("expect") or ""))
    mod = aot.infer_types(load(rec))
    assert aot.interpret(mod, np.float32(42.0)) == np.float32(1.0)


def test_std_prelude_and_nat_evaluate() -> None:
    nat = aot.infer_types(load(next(r for r in MANIFEST if r["id"] == "std/nat.rly")))
    assert "nat_double" in nat and "map" in nat


@pytest.mark.parametrize("rec", records("B"), ids=lambda r: r["id"])
def test_tier_b_type_checks_and_evaluates(rec: dict) -> None:
    mod = aot.infer_types(load(rec))
    if "main" not in mod:
        pytest.skip("no @main: type-checked only")
    params = mod["main"].params
    if not all(_static(p.checked_type) for p in params):
        pytest.skip("dynamic shapes: type-checked only")
    rng = np.random.default_rng(1)
    aot.interpret(mod, *[random_value(p.checked_type, rng) for p in params])


@pytest.mark.parametrize("rec", records("C"), ids=lambda r: r["id"])
def test_tier_c_type_checks_with_inferred_constant_shapes(rec: dict) -> None:
    if _stem(rec) in UNDERDETERMINED:
        with pytest.raises(DiagnosticError) as info:
            aot.infer_types(load(rec, meta_as_params=True))
        assert f"cannot infer the type of this `{UNDERDETERMINED[_stem(rec)]}` call" \
            in info.value.message
        return
    mod = aot.infer_types(load(rec, meta_as_params=True))
    for p in mod["main"].params:
        assert _static(p.checked_type), (p.name_hint, p.checked_type)
