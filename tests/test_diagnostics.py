"""Diagnostics render as file:line:col: error: message, the line, a caret."""

from __future__ import annotations

from aot.diagnostics import Diagnostic, DiagnosticCollector, DiagnosticError, Span, register_source


def test_render_with_caret():
    register_source("m.relay", "let %x = 1;\nadd(%x, 1f)\n")
    d = Diagnostic("dtype mismatch", Span("m.relay", 2, 1, 2, 12))
    assert d.render() == ("m.relay:2:1: error: dtype mismatch\n"
                          "  add(%x, 1f)\n"
                          "  ^~~~~~~~~~~")


def test_render_without_source_or_span():
    assert Diagnostic("boom").render() == "error: boom"
    assert Diagnostic("boom", Span("nowhere", 3, 4, 3, 5)).render() == "nowhere:3:4: error: boom"


def test_several_errors():
    c = DiagnosticCollector()
    c.error("first", Span("a", 1, 1, 1, 2))
    c.error("second", Span("a", 2, 1, 2, 2))
    try:
        c.raise_if_any()
    except DiagnosticError as exc:
        assert len(exc.diagnostics) == 2
        assert str(exc).splitlines()[0] == "a:1:1: error: first"
        assert exc.message == "first"
    else:
        raise AssertionError("no error raised")
