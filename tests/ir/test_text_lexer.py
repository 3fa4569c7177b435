"""The Relay text tokenizer."""

from __future__ import annotations

import pytest

from aot.ir.dtype import DType
from aot.ir.lexer import MetaRef, Number, T, tokenize


def kinds(text: str) -> list[T]:
    tokens, diags = tokenize(text, "lex.relay")
    assert not diags, diags
    return [t.kind for t in tokens[:-1]]


@pytest.mark.parametrize("text, expected", [
    ("%t.0.1", [T.LOCAL, T.PERIOD, T.NUMBER, T.PERIOD, T.NUMBER]),
    ("%0.1", [T.GRAPH, T.PERIOD, T.NUMBER]),
    ("fn (%x) -> int32", [T.FN, T.LPAREN, T.LOCAL, T.RPAREN, T.ARROW, T.IDENT]),
    ("_ => 1", [T.UNDERSCORE, T.FAT_ARROW, T.NUMBER]),
    ("a == b != c <= d >= e < f > g", [T.IDENT, T.EQEQ, T.IDENT, T.NE, T.IDENT, T.LE, T.IDENT,
                                       T.GE, T.IDENT, T.LT, T.IDENT, T.GT, T.IDENT]),
    ("match? match", [T.MATCH_PARTIAL, T.MATCH]),
    ("x=-1", [T.IDENT, T.EQUAL, T.MINUS, T.NUMBER]),
    ("@main @f2", [T.GLOBAL, T.GLOBAL]),
    ("True False", [T.BOOL, T.BOOL]),
    ("let ref ref_read ref_write free_var extern type def if else",
     [T.LET, T.REF, T.REF_READ, T.REF_WRITE, T.FREE_VAR, T.EXTERN, T.TYPE, T.DEF, T.IF,
      T.ELSE]),
    ("1 // comment\n2 /* a /* b */ c */ 3", [T.NUMBER, T.NUMBER, T.NUMBER]),
    ("meta[relay.Constant][12] metadata meta_x", [T.META, T.IDENT, T.IDENT]),
    ('#[version = "0.0.5"] 1', [T.VERSION, T.NUMBER]),
    ("nn.conv2d", [T.IDENT, T.PERIOD, T.IDENT]),
])
def test_token_kinds(text, expected):
    assert kinds(text) == expected


@pytest.mark.parametrize("text, value, is_float, dtype", [
    ("12", 12, False, None), ("3f", 3.0, True, DType.FLOAT32), ("2.5", 2.5, True, None),
    ("1e-05f16", 1e-05, True, DType.FLOAT16), ("7i64", 7, False, DType.INT64),
    ("9u8", 9, False, DType.UINT8), ("1E+1f64", 10.0, True, DType.FLOAT64),
    ("inff32", float("inf"), True, DType.FLOAT32),
])
def test_numbers(text, value, is_float, dtype):
    tokens, diags = tokenize(text, "lex.relay")
    assert not diags
    number = tokens[0].value
    assert isinstance(number, Number)
    assert (number.value, number.is_float, number.dtype) == (value, is_float, dtype)


def test_token_values_and_spans():
    tokens, _ = tokenize('%x_1 @g meta[relay.Constant][3] "s\\"q"\n  %7', "lex.relay")
    local, glob, meta, string, graph, eof = tokens
    assert local.value == "x_1" and glob.value == "g" and graph.value == 7
    assert meta.value == MetaRef("relay.Constant", 3)
    assert string.value == 's"q'
    assert (graph.span.line, graph.span.col, graph.span.end_col) == (2, 3, 5)
    assert (meta.span.col, meta.span.end_col) == (9, 32)
    assert eof.kind is T.EOF


def test_metadata_section_runs_to_the_end():
    tokens, diags = tokenize('1\n#[metadata]\n{"root": 1}\n', "lex.relay")
    assert not diags
    assert [t.kind for t in tokens] == [T.NUMBER, T.METADATA, T.EOF]
    json_text, line, col = tokens[1].value
    assert json_text == '\n{"root": 1}\n' and (line, col) == (2, 12)


@pytest.mark.parametrize("text, message, swallows_rest", [
    ("$", "unexpected character `$`", False),
    ('"abc', "unterminated string literal", True),
    ("/* x", "unterminated block comment", True),
    ("1i3", "invalid numeric suffix", False),
    ("meta[relay.Constant][x]", "must be a number", False),
    ("#foo", "must start an attribute", False),
    ("#[bogus]", "unsupported attribute", False),
    ("%", "expected a variable name", False),
    ("@1", "expected a global name", False),
])
def test_lexical_errors_are_collected(text, message, swallows_rest):
    _, diags = tokenize(text + " 1 $", "lex.relay")
    assert message in diags[0].message
    assert diags[0].span is not None and (diags[0].span.line, diags[0].span.col) == (1, 1)
    # lexing goes on after the error: the trailing `$` is reported too
    assert (len(diags) == 1) == swallows_rest
