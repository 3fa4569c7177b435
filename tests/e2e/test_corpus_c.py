"""The Relay corpus through the C backend.

Tier A: every well-typed program with a ``@main`` compiles to C and matches
the interpreter on random inputs (lists and other ADT values included).
Mains the C cannot be called with directly -- polymorphic ones, ones taking
closures, ones returning closures -- run through a wrapper ``@main`` that
instantiates, builds and applies them (tests/e2e/test_corpus_lang_c.py,
which also covers the globals of tier-A programs without a main and the
standard library of tier L).  Tiers B and C: the tensor programs and
networks (tier C's metadata constants become parameters with the shapes
type inference gives them) through the dataflow backend.

Nothing is refused any more, except programs whose ``@main`` has a dynamic
dimension (``?``): those must give a DiagnosticError naming the dynamic
shape, and are counted.  Programs are packed several to a build; tier C's
networks run alone and are marked slow.
"""

from __future__ import annotations

import numpy as np
import pytest

import aot
from aot.compiler import is_dataflow, optimize_for_c
from aot.emit.build.toolchain import HOST_OPT_ENV
from aot.ir.printer import print_module
from c_harness import Case, check_cases, check_program, compile_and_load
from test_corpus_lang_c import Entry, Report, entry_for, is_dynamic, run_entries
from test_corpus_semantics import (CORPUS, _static, diverges, has_main, ill_typed, load,
                                   random_value, records)

pytestmark = pytest.mark.skipif(not CORPUS.exists(), reason="../shared/corpus is not beside the repo")

DYNAMIC = "dynamic shape"


def tier_a_main_entries(report: Report) -> list[Entry]:
    entries = []
    for rec in records("A"):
        if ill_typed(rec) or not has_main(rec):
            continue
        if diverges(rec):
            report.skip("diverges (manifest)", rec["id"])
            continue
        parsed = load(rec)
        mod = aot.infer_types(parsed)
        text = print_module(parsed)
        if is_dynamic(mod["main"].checked_type):
            entries.append(Entry(rec["id"], text))        # must be refused, see prepare
        else:
            entries.append(entry_for(rec, mod, text, "main"))
    return entries


def test_tier_a_mains_compile_and_match():
    report = Report("tier A mains")
    entries = tier_a_main_entries(report)
    run_entries(entries, report, "corpusa")
    wrapped = [e.name for e in entries if e.note]
    print(f"tier A mains: {len(entries)} entries, {len(wrapped)} through a wrapper main")
    assert len(report.matched) + len(report.dynamic) + len(report.failures) == len(entries)
    report.check()


def _classify(rec: dict) -> tuple[str, aot.IRModule | None]:
    """("compile" | "dynamic" | "skip", typed module): "skip" only for a
    tier-C program whose constant shapes no relation determines (see
    test_corpus_semantics) or a program without a main."""
    try:
        mod = aot.infer_types(load(rec, meta_as_params=rec["tier"][0] == "C"))
    except aot.DiagnosticError:
        return "skip", None
    if "main" not in mod:
        return "skip", None
    if not all(_static(p.checked_type) for p in mod["main"].params) \
            or is_dynamic(mod["main"].checked_type):
        return "dynamic", mod
    return "compile", mod


def assert_refused_as_dynamic(rec: dict, mod: aot.IRModule) -> None:
    with pytest.raises(aot.DiagnosticError) as info:
        compile_and_load(mod, name="dynamic")
    assert DYNAMIC in info.value.message, f"{rec['id']}: {info.value}"


def test_tier_b_programs_compile_and_match():
    """Tensor programs through the dataflow backend, packed with
    c_harness.check_cases; the few with closures or `if` through the
    program backend (with a pool big enough for their tensors)."""
    rng = np.random.default_rng(3)
    cases, dynamic, skipped, programs = [], [], [], []
    for rec in records("B"):
        kind, mod = _classify(rec)
        if kind == "skip":
            skipped.append(rec["id"])
            continue
        if kind == "dynamic":
            assert_refused_as_dynamic(rec, mod)
            dynamic.append(rec["id"])
            continue
        if not is_dataflow(optimize_for_c(mod)):
            parsed = load(rec)
            programs.append(entry_for(rec, mod, print_module(parsed), "main"))
            continue
        args = [random_value(p.checked_type, rng, mod) for p in mod["main"].params]
        cases.append(Case(rec["id"], print_module(mod), args))
    assert cases and programs
    for i in range(0, len(cases), 40):
        check_cases(cases[i:i + 40], name="corpusb")
    report = Report("tier B programs with closures or if")
    run_entries(programs, report, "corpusbp", pool_bytes=1 << 23)
    print(f"tier B: {len(cases)} dataflow programs compiled and matched, "
          f"{len(dynamic)} refused (dynamic shape): {', '.join(dynamic)}; "
          f"{len(skipped)} without a main: {', '.join(skipped)}")
    assert len(report.matched) == len(programs)
    report.check()


@pytest.mark.slow
@pytest.mark.parametrize("rec", [r for r in records("C")], ids=lambda r: r["id"])
def test_corpus_networks_compile_and_match(rec, monkeypatch):
    # built at -O1 (aot.emit.build.toolchain, "Test builds"): these check
    # the values of whole networks; the same kernels are built at -O3 by
    # the operator tables (test_ops_c_conv.py, test_ops_c_nn.py, float16
    # included) and by test_architectures.py's networks.  1 MB of float16
    # ResNet-50: 10 CPU-s of gcc instead of 28.
    monkeypatch.setenv(HOST_OPT_ENV, "-O1")
    kind, mod = _classify(rec)
    if kind == "skip":
        return                      # underdetermined constants (test_corpus_semantics)
    if kind == "dynamic":
        assert_refused_as_dynamic(rec, mod)
        return
    rng = np.random.default_rng(5)
    args = []
    for p in mod["main"].params:
        v = random_value(p.checked_type, rng, mod)
        args.append((v * 0.1).astype(v.dtype) if v.dtype.kind == "f" else v)
    half = any(a.dtype == np.float16 for a in args)
    # float16 networks round every intermediate to half precision, the C
    # (accumulating dense and conv in float32) and the reference (in
    # float64) at different points: a few half-precision ulps apart
    check_program(print_module(mod), args, rtol=1e-2 if half else 1e-3,
                  atol=1e-3 if half else 1e-4)
