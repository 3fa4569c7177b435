"""aot.ir.normal_form: the A-normal-form and basic-block checkers on tables
of programs in and out of each form (with the message each violation
must give), and block_edges."""

from __future__ import annotations

import pytest

import aot
from aot.ir.expr import Function, If, Let
from aot.ir.normal_form import (SAME_BLOCK, a_normal_form_violations, basic_block_violations,
                                block_edges, check_a_normal_form, check_basic_block_normal_form)


def parse(text: str):
    return aot.parse(text, source_name="nf.relay")


ANF_OK = {
    "atom": "def @main(%x: int32) { %x }",
    "chain": "def @main(%x: int32) { let %a = 1; let %b = add(%x, %a); %b }",
    "if_with_atomic_cond": """def @main(%c: bool) {
        let %r = if (%c) { let %a = 1; %a } else { let %b = 2; %b }; %r }""",
    "let_bound_function": """def @main(%x: int32) {
        let %f = fn (%y: int32) { let %s = negative(%y); %s }; let %r = %f(%x); %r }""",
    "match": """def @main(%o: Option[int32]) {
        let %r = match (%o) { Some(%v) => %v, None => { let %z = 0; %z } }; %r }""",
    "var_to_var": "def @main(%x: int32) { let %y = %x; %y }",
}

ANF_BAD = {
    "compound_operand": ("def @main(%x: int32) { let %a = add(%x, 1); %a }",
                         "@main: the value of %a has a compound operand (Constant)"),
    "block_ends_in_call": ("def @main(%x: int32) { negative(%x) }",
                           "@main: a block ends in Call, not an atom"),
    "compound_cond": ("""def @main(%x: int32) {
                           let %r = if (%x == 0) { %x } else { %x }; %r }""",
                      "@main: the value of %r has a compound operand (Call)"),
    "let_in_let_value": ("def @main(%x: int32) { let %a = (let %b = %x; %b); %a }",
                         "@main: %a is bound to a let"),
    "branch_not_in_form": ("""def @main(%c: bool, %x: int32) {
                               let %r = if (%c) { negative(%x) } else { %x }; %r }""",
                           "@main: a block ends in Call, not an atom"),
    "function_body_not_in_form": ("""def @main(%x: int32) {
                                      let %f = fn (%y: int32) { negative(%y) }; %f }""",
                                  "@main: a block ends in Call, not an atom"),
    "sharing": ("""def @main(%x: int32) {
                     %0 = negative(%x);
                     let %a = (%0, %0); %a }""",
                "@main: the value of %a has a compound operand (Call)"),
}


@pytest.mark.parametrize("name", sorted(ANF_OK))
def test_anf_accepts(name: str) -> None:
    mod = parse(ANF_OK[name])
    assert a_normal_form_violations(mod["main"]) == []
    check_a_normal_form(mod["main"])


@pytest.mark.parametrize("name", sorted(ANF_BAD))
def test_anf_rejects(name: str) -> None:
    text, message = ANF_BAD[name]
    problems = a_normal_form_violations(parse(text))
    assert problems and problems[0] == message
    with pytest.raises(AssertionError):
        check_a_normal_form(parse(text))


def test_anf_reports_a_shared_let_value() -> None:
    """The same compound node as the value of two lets is sharing."""
    mod = parse("def @main(%x: int32) { %0 = negative(%x); let %a = %0; let %b = %0; %b }")
    assert a_normal_form_violations(mod) == ["@main: a compound node is shared (graph form)"]


BB_OK = {
    "graph_inside_one_block": "def @main(%x: int32) { %0 = negative(%x); add(%0, %0) }",
    "shared_constant": """def @main(%c: bool) {
        %0 = 1; if (%c) { %0 } else { add(%0, %0) } }""",
    "bound_before_branches": """def @main(%c: bool, %x: int32) {
        let %s = negative(%x); if (%c) { %s } else { add(%s, %s) } }""",
    "let_value_and_body": """def @main(%x: int32) {
        %0 = negative(%x); let %y = add(%0, 1); add(%y, %0) }""",
}

BB_BAD = {
    "across_branches": ("""def @main(%c: bool, %x: int32) {
        %0 = negative(%x); if (%c) { %0 } else { add(%0, %0) } }""", "Call"),
    "branch_and_condition": ("""def @main(%x: int32) {
        %0 = negative(%x); if (%0 == 0) { %0 } else { 1 } }""", "Call"),
    "across_clauses": ("""def @main(%o: Option[int32], %x: int32) {
        %0 = negative(%x); match (%o) { Some(%v) => add(%v, %0), None => %0 } }""", "Call"),
    "into_a_closure": ("""def @main(%x: int32) {
        %0 = negative(%x); (fn () { %0 }, %0) }""", "Call"),
    "shared_tuple": ("""def @main(%c: bool, %x: int32) {
        %0 = (%x, %x); if (%c) { %0.0 } else { %0.1 } }""", "Tuple"),
}


@pytest.mark.parametrize("name", sorted(BB_OK))
def test_basic_blocks_accept(name: str) -> None:
    mod = parse(BB_OK[name])
    assert basic_block_violations(mod) == []
    check_basic_block_normal_form(mod)


@pytest.mark.parametrize("name", sorted(BB_BAD))
def test_basic_blocks_reject(name: str) -> None:
    text, kind = BB_BAD[name]
    assert basic_block_violations(parse(text)) == [
        f"@main: a {kind} is used from more than one block"]
    with pytest.raises(AssertionError):
        check_basic_block_normal_form(parse(text))


def test_block_edges() -> None:
    mod = parse("""def @main(%c: bool, %x: int32) {
        let %y = negative(%x); if (%c) { %y } else { %x } }""")
    let = mod["main"].body
    assert isinstance(let, Let)
    assert block_edges(let) == [(let.value, SAME_BLOCK), (let.body, SAME_BLOCK)]
    assert block_edges(let, let_body_scope=True) == [(let.value, SAME_BLOCK), (let.body, 0)]
    branch = let.body
    assert isinstance(branch, If)
    assert [k for _, k in block_edges(branch)] == [SAME_BLOCK, 0, 1]
    fn = mod["main"]
    assert isinstance(fn, Function) and block_edges(fn) == [(fn.body, 0)]
