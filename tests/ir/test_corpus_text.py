"""The Relay conformance corpus (``shared/corpus/relay``) through the text
front end: every program of tiers A, L, B and C parses and survives a
print -> parse round trip; every tier-P program is refused with a
diagnostic that has a line and a column; every tier-D program either parses
(and round-trips) or is refused cleanly."""

from __future__ import annotations

import functools
import json
from pathlib import Path

import pytest

from aot.diagnostics import DiagnosticError
from aot.ir import Match, Op
from aot.ir.module import IRModule
from aot.ir.parser import parse_expr, parse_module
from aot.ir.printer import print_expr, print_module
from aot.ir.registry import lookup
from aot.ir.structural import structural_equal

CORPUS = Path(__file__).resolve().parents[2].parent / "shared/corpus/relay"
MANIFEST_PATH = CORPUS / "manifest.json"


def _records() -> list[dict]:
    if not MANIFEST_PATH.exists():
        return []
    return json.loads(MANIFEST_PATH.read_text())


RECORDS = _records()


def _tier(record: dict) -> str:
    return record["tier"][0]


def _ids(tiers: str) -> list[str]:
    return [r["id"] for r in RECORDS if _tier(r) in tiers]


BY_ID = {r["id"]: r for r in RECORDS}


def test_corpus_is_present():
    assert MANIFEST_PATH.exists(), f"the Relay corpus is missing: {CORPUS}"
    counts = {t: len(_ids(t)) for t in "ALBCDP"}
    assert counts == {"A": 160, "L": 4, "B": 48, "C": 14, "D": 121, "P": 12}


@functools.cache
def _std_prelude() -> IRModule:
    return parse_module((CORPUS / "std/prelude.rly").read_text(), "std/prelude.rly",
                        prelude=False)


#: programs that TVM's tests parsed with an initial module
_INIT_MODULE = {
    "verbatim/test_ir_parser/L1017_test_init_module_and_metatable_0.relay":
        "verbatim/test_ir_parser/L1009_test_init_module_and_metatable_0.relay",
}


def _parse(record: dict):
    text = (CORPUS / record["id"]).read_text()
    name = record["id"]
    if record["kind"] == "expr":
        return parse_expr(text, name)
    base = None
    if name == "std/nat.rly":
        base = _std_prelude()
    elif name in _INIT_MODULE:
        init = _INIT_MODULE[name]
        base = parse_module((CORPUS / init).read_text(), init, prelude=False)
    return parse_module(text, name, base=base, prelude=False,
                        meta_as_params=_tier(record) in "CD")


def _round_trip(record: dict, parsed) -> None:
    if isinstance(parsed, IRModule):
        text = print_module(parsed)
        back = parse_module(text, "reprinted.relay", prelude=False)
        assert structural_equal(parsed, back), text
    else:
        text = print_expr(parsed)
        back = parse_expr(text, "reprinted.relay")
        assert structural_equal(parsed, back, map_free_vars=True), text


@pytest.mark.parametrize("program", _ids("AL"))
def test_core_and_library_programs(program):
    record = BY_ID[program]
    _round_trip(record, _parse(record))


@pytest.mark.parametrize("program", _ids("BC"))
def test_tensor_programs(program):
    record = BY_ID[program]
    _round_trip(record, _parse(record))


#: what each parser-negative program must be refused for, and where
_NEGATIVE = {
    "L0191_test_int_literal_0": ("`2147483648i32` is out of range for int32", (1, 1)),
    "L0194_test_int_literal_0": ("`32768i16` is out of range for int16", (1, 1)),
    "L0223_test_float_literal_0": ("`3.40283e+38f32` is out of range for float32", (1, 1)),
    "L0226_test_float_literal_0": ("`65505f16` is out of range for float16", (1, 1)),
    "L0284_test_meta_ref_0": ("meta[type_key][1337]", (1, 1)),
    "L0319_test_let_global_var_0": ("not the global `@x`", (1, 5)),
    "L0324_test_let_op_0": ("expected a local variable", (1, 5)),
    "L0405_test_ifelse_scope_0": ("undefined variable `%x`", (6, 17)),
    "L0804_test_duplicate_adt_defn_0": ("duplicate definition of type `List`", (9, 18)),
    "L0819_test_duplicate_adt_cons_0": ("duplicate constructor `Lmao`", (3, 25)),
    "L0829_test_duplicate_adt_cons_defn_0": ("has the same name as a type", (2, 24)),
    "L0839_test_duplicate_global_var_0": ("duplicate definition of global function `@id`",
                                          (3, 17)),
}


@pytest.mark.parametrize("program", _ids("P"))
def test_parser_negative_programs(program):
    record = BY_ID[program]
    with pytest.raises(DiagnosticError) as info:
        _parse(record)
    err = info.value
    for d in err.diagnostics:
        assert d.span is not None and d.span.line >= 1 and d.span.col >= 1
        assert str(d.span).startswith(program + ":")
    fragment, position = _NEGATIVE[Path(program).stem]
    found = [(d.span.line, d.span.col) for d in err.diagnostics if fragment in d.message]
    assert position in found, str(err)


@pytest.mark.parametrize("program", _ids("D"))
def test_tvm_internal_programs_parse_or_fail_cleanly(program):
    record = BY_ID[program]
    try:
        parsed = _parse(record)
    except DiagnosticError as err:
        for d in err.diagnostics:
            assert d.span is not None and d.span.line >= 1 and d.span.col >= 1
            assert d.message
            if d.message.startswith("unknown operator `"):
                name = d.message.split("`")[1]
                assert lookup(name) is None
        return
    _round_trip(record, parsed)


# ---------------------------------------------------------------- expectations

def _by_stem(stem: str) -> dict:
    [record] = [r for r in RECORDS if Path(r["id"]).stem == stem]
    return record


@pytest.mark.parametrize("stem, name", [("L0272_test_vars_0", "add"),
                                        ("L0277_test_vars_0", "nn.global_avg_pool2d")])
def test_operator_references(stem, name):
    e = _parse(_by_stem(stem))
    assert isinstance(e, Op) and e.name == name


@pytest.mark.parametrize("stem, complete", [("L0753_test_match_match", True),
                                            ("L0753_test_match_match_incomplete", False)])
def test_match_completeness(stem, complete):
    mod = _parse(_by_stem(stem))
    body = mod["length"].body
    assert isinstance(body, Match) and body.complete is complete


def test_nat_needs_the_prelude():
    record = BY_ID["std/nat.rly"]
    text = (CORPUS / record["id"]).read_text()
    with pytest.raises(DiagnosticError) as info:
        parse_module(text, "std/nat.rly", prelude=False)
    assert "undefined type `List`" in str(info.value)
    mod = _parse(record)
    assert "nat_add" in mod and "map" in mod and mod.has_type("nat")


def test_metadata_program_needs_its_init_module():
    record = BY_ID["verbatim/test_ir_parser/L1017_test_init_module_and_metatable_0.relay"]
    text = (CORPUS / record["id"]).read_text()
    with pytest.raises(DiagnosticError) as info:
        parse_module(text, record["id"], prelude=False)
    messages = [d.message for d in info.value.diagnostics]
    assert any("undefined global function `@f`" in m for m in messages)
    assert any("has none" in m for m in messages)
    mod = _parse(record)
    assert [p.name_hint for p in mod["main"].params] == ["x", "meta_relay_Constant_0"]
