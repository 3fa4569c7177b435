"""Calls for the parser: arguments, ``key=value`` attributes and number
literals.

A call of a registered operator is checked against the operator's record:
its arity, and its attributes, which are parsed into the operator's typed
attribute class (the diagnostic points at the offending attribute when it
can tell which).  A call of a function, closure or constructor keeps its
attributes as :class:`~aot.ir.attrs.RawCallAttrs`.  Number literals are range-checked
against their dtype (unsuffixed integers are int32, else int64; unsuffixed
floats are float32).
"""

from __future__ import annotations

import math
from typing import Any

import ml_dtypes
import numpy as np

from ..diagnostics import Span
from .attrs import NO_ATTRS, AttrError, Attrs, RawCallAttrs
from .dtype import DType
from .expr import Call, Constant, Expr, Op
from .lexer import Number, T, Token
from .parse_state import ParserState
from .registry import lookup


class CallSyntax(ParserState):
    """Calls, attributes and number literals (a mixin)."""

    # ------------------------------------------------------------ calls
    def parse_call(self, callee: Expr, start: Token) -> Expr:
        self.expect(T.LPAREN)
        args: list[Expr] = []
        raw: dict[str, Any] = {}
        key_spans: dict[str, Span] = {}
        while not self.accept(T.RPAREN):
            if self.at(T.IDENT) and self.peek(1).kind is T.EQUAL:
                raw, key_spans = self.parse_attrs()
                self.expect(T.RPAREN, "to close the call")
                break
            args.append(self.parse_body())
            if not self.accept(T.COMMA):
                self.expect(T.RPAREN, "to close the call")
                break
        span = self.span_from(start)
        attrs: Attrs = NO_ATTRS
        if isinstance(callee, Op):
            op_def = lookup(callee.name)
            if op_def is not None:
                if op_def.arity >= 0 and len(args) != op_def.arity:
                    plural = "s" if op_def.arity != 1 else ""
                    self.error(f"operator `{callee.name}` takes {op_def.arity} argument{plural}, "
                               f"got {len(args)}", span)
                attrs = self._op_attrs(callee.name, raw, key_spans, span)
        elif raw:
            attrs = RawCallAttrs.from_raw(raw)
        return Call(callee, tuple(args), attrs, span=span)

    def _op_attrs(self, name: str, raw: dict[str, Any], key_spans: dict[str, Span],
                  span: Span | None) -> Attrs:
        op_def = lookup(name)
        if op_def is None:
            self.error(f"unknown operator `{name}`", span)
            return NO_ATTRS
        attrs_type = op_def.attrs_type
        try:
            return attrs_type.from_raw(raw)
        except AttrError as exc:
            where = span
            for key in raw:  # point at the offending attribute when we can tell which
                try:
                    attrs_type.from_raw({key: raw[key]})
                except AttrError:
                    where = key_spans.get(key, span)
                    break
            self.error(f"invalid attributes for `{name}`: {exc}", where)
            return attrs_type.from_raw({})

    # ------------------------------------------------------------ attributes
    def parse_attrs(self) -> tuple[dict[str, Any], dict[str, Span]]:
        """``key=value, ...`` up to (not including) a closing bracket."""
        raw: dict[str, Any] = {}
        spans: dict[str, Span] = {}
        while self.at(T.IDENT):
            first = self.next()
            parts = [str(first.value)]
            while self.at(T.PERIOD) and self.peek(1).kind is T.IDENT:
                self.next()
                parts.append(str(self.next().value))
            key = ".".join(parts)
            self.expect(T.EQUAL, f"after the attribute name `{key}`")
            value = self.parse_attr_value()
            if key in raw:
                self.error(f"duplicate attribute `{key}`", first.span)
            raw[key] = value
            spans[key] = self.span_from(first) or first.span
            if not self.accept(T.COMMA):
                break
        return raw, spans

    def parse_attr_value(self) -> Any:
        tok = self.peek()
        if tok.kind in (T.MINUS, T.NUMBER):
            minuses = 0
            while self.accept(T.MINUS):
                minuses += 1
            num = self.expect(T.NUMBER, "after `-`")
            value, _ = self.number_value(num, minuses % 2 == 1, "-" * minuses,
                                         self.span_from(tok))
            return value
        if tok.kind is T.BOOL:
            self.next()
            return bool(tok.value)
        if tok.kind is T.STRING:
            self.next()
            return str(tok.value)
        if tok.kind is T.LSQUARE:
            self.next()
            items: list[Any] = []
            while not self.accept(T.RSQUARE):
                items.append(self.parse_attr_value())
                if not self.accept(T.COMMA):
                    self.expect(T.RSQUARE, "to close the list")
                    break
            return items
        if tok.kind is T.LPAREN:
            self.next()
            items = []
            saw_comma = False
            while not self.accept(T.RPAREN):
                items.append(self.parse_attr_value())
                if self.accept(T.COMMA):
                    saw_comma = True
                    continue
                self.expect(T.RPAREN, "to close the value")
                break
            return items if saw_comma or not items else items[0]
        if tok.kind is T.META:
            self.next()
            self.error(f"unsupported meta reference `{tok.text}` in an attribute value",
                       tok.span)
            return None
        if tok.kind is T.IDENT:
            self.next()
            if tok.value in ("None", "nullptr"):
                return None
            parts = [str(tok.value)]
            while self.at(T.PERIOD) and self.peek(1).kind is T.IDENT:
                self.next()
                parts.append(str(self.next().value))
            return ".".join(parts)
        self.fatal(f"expected an attribute value (a number, string, bool, None or list), "
                   f"found {tok.describe()}")
        raise AssertionError("unreachable")

    # ------------------------------------------------------------ literals
    def number_constant(self, tok: Token, negate: bool, span: Span | None,
                        sign_text: str) -> Constant:
        value, dtype = self.number_value(tok, negate, sign_text, span)
        return Constant(np.array(value, dtype=dtype.np), span=span)

    def number_value(self, tok: Token, negate: bool, sign_text: str,
                     span: Span | None = None) -> tuple[Any, DType]:
        """The (Python) value and dtype of a number literal, range-checked."""
        span = span if span is not None else tok.span
        number = tok.value
        assert isinstance(number, Number)
        text = sign_text + number.text
        if number.is_float:
            dtype = number.dtype or DType.FLOAT32
            fvalue = -float(number.value) if negate else float(number.value)
            limit = float(ml_dtypes.finfo(dtype.np).max)
            # a decimal past float64's range reads as inf; `inff` is spelled so
            overflowed = math.isinf(fvalue) and not number.text.startswith("inf")
            if overflowed or (math.isfinite(fvalue) and abs(fvalue) > limit):
                self.error(f"floating-point literal `{text}` is out of range for {dtype}",
                           span)
                fvalue = 0.0
            return fvalue, dtype
        ivalue = -int(number.value) if negate else int(number.value)
        if number.dtype is None:
            for candidate in (DType.INT32, DType.INT64):
                info = ml_dtypes.iinfo(candidate.np)
                if info.min <= ivalue <= info.max:
                    return ivalue, candidate
            self.error(f"integer literal `{text}` is out of range for int64", span)
            return 0, DType.INT64
        dtype = number.dtype
        info = ml_dtypes.iinfo(dtype.np)
        if not info.min <= ivalue <= info.max:
            self.error(f"integer literal `{text}` is out of range for {dtype} "
                       f"({info.min} to {info.max})", span)
            return 0, dtype
        return ivalue, dtype
