"""The Relay corpus through the C backend.

Every corpus program with a static-shape ``@main`` that the dataflow C
backend accepts is compiled and compared with the interpreter on random
inputs (tier C's metadata constants become parameters with the shapes type
inference gives them).  Programs it refuses must be refused with the
diagnostic naming the language feature that only the whole-language
backend handles -- never a crash, never "no C lowering".

Programs are packed several to a build (see c_harness) to keep the suite
fast; tier C's networks run alone and are marked slow.
"""

from __future__ import annotations

import numpy as np
import pytest

import aot
from aot.emit.pipeline import plan
from c_harness import Case, check_cases, check_program
from test_corpus_semantics import (CORPUS, _static, diverges, has_main, ill_typed, load,
                                   random_value, records)

pytestmark = pytest.mark.skipif(not CORPUS.exists(), reason="../shared/corpus is not beside the repo")

REFUSED = "not supported by the dataflow C backend"


def _candidates(tiers: str) -> list[dict]:
    out = []
    for rec in records(tiers):
        if rec["tier"][0] == "A" and (ill_typed(rec) or diverges(rec) or not has_main(rec)):
            continue
        out.append(rec)
    return out


def _classify(rec: dict) -> tuple[str, aot.IRModule | None]:
    """("compile" | "refused" | "skip", typed module)."""
    try:
        mod = aot.infer_types(load(rec, meta_as_params=rec["tier"][0] == "C"))
    except aot.DiagnosticError:
        return "skip", None             # underdetermined tier-C programs (see semantics)
    if "main" not in mod or not all(_static(p.checked_type) for p in mod["main"].params):
        return "skip", None
    try:
        plan(mod, "probe")
    except aot.DiagnosticError as e:
        assert REFUSED in e.message, f"{rec['id']}: {e}"
        return "refused", mod
    return "compile", mod


def _text(mod: aot.IRModule) -> str:
    from aot.ir.printer import print_module
    return print_module(mod)


@pytest.mark.parametrize("tiers", ["A", "B"])
def test_corpus_programs_compile_and_match(tiers):
    rng = np.random.default_rng(3)
    cases, refused = [], []
    for rec in _candidates(tiers):
        kind, mod = _classify(rec)
        if kind == "refused":
            refused.append(rec["id"])
        if kind != "compile":
            continue
        args = [random_value(p.checked_type, rng, mod) for p in mod["main"].params]
        cases.append(Case(rec["id"], _text(mod), args))
    assert cases
    for i in range(0, len(cases), 40):
        check_cases(cases[i:i + 40], name=f"corpus{tiers.lower()}")
    print(f"tier {tiers}: {len(cases)} compiled and matched, {len(refused)} refused")


@pytest.mark.slow
@pytest.mark.parametrize("rec", _candidates("C"), ids=lambda r: r["id"])
def test_corpus_networks_compile_and_match(rec):
    kind, mod = _classify(rec)
    if kind != "compile":
        return                      # refused with the feature named, or underdetermined
    rng = np.random.default_rng(5)
    args = []
    for p in mod["main"].params:
        v = random_value(p.checked_type, rng, mod)
        args.append((v * 0.1).astype(v.dtype) if v.dtype.kind == "f" else v)
    half = any(a.dtype == np.float16 for a in args)
    # float16 networks round every intermediate to half precision, the C
    # (accumulating dense and conv in float32) and the reference (in
    # float64) at different points: a few half-precision ulps apart
    check_program(_text(mod), args, rtol=1e-2 if half else 1e-3, atol=1e-3 if half else 1e-4)
