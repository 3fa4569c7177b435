"""Expressions for the parser: functions, blocks, operator chains, atoms,
``if``, ``match`` and patterns.

A block's statements (``let``, graph bindings ``%n = e;``, ``free_var``,
``e;``) are read in a loop and folded into :class:`Let` nodes afterwards;
binary operator chains use an explicit operator stack (see the design note
of :mod:`aot.ir.parser`).  ``-`` directly before a number is part of the
literal; before anything else it is ``negative``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..diagnostics import Span
from .adt import (Clause, Constructor, Pattern, PatternConstructor, PatternTuple, PatternVar,
                  PatternWildcard)
from .attrs import FuncAttrs
from .expr import (Call, Constant, Expr, Function, If, Let, Match, RefCreate, RefRead, RefWrite,
                   Tuple, TupleGetItem, Var, op)
from .lexer import Number, T, Token
from .parse_state import Fatal, ParserState
from .types import GlobalTypeVar

#: binary operator token -> (operator name, precedence); all left associative
BINARY_OPS: dict[T, tuple[str, int]] = {
    T.STAR: ("multiply", 4), T.SLASH: ("divide", 4),
    T.PLUS: ("add", 3), T.MINUS: ("subtract", 3),
    T.LT: ("less", 2), T.GT: ("greater", 2), T.LE: ("less_equal", 2),
    T.GE: ("greater_equal", 2),
    T.EQEQ: ("equal", 1), T.NE: ("not_equal", 1),
}


_OPENERS = {T.LPAREN: T.RPAREN, T.LSQUARE: T.RSQUARE, T.LCURLY: T.RCURLY}
_STATEMENT_STOPS = frozenset((T.SEMI, T.EOF, T.RPAREN, T.RSQUARE, T.RCURLY))


def _match_brackets(tokens: list[Token]) -> dict[int, int]:
    """Position of each opening bracket -> position of its closing one
    (brackets left unmatched by a syntax error are left out)."""
    match: dict[int, int] = {}
    stack: list[int] = []
    for i, tok in enumerate(tokens):
        if tok.kind in _OPENERS:
            stack.append(i)
        elif tok.kind in _STATEMENT_STOPS and tok.kind not in (T.SEMI, T.EOF):
            if stack and _OPENERS[tokens[stack[-1]].kind] is tok.kind:
                match[stack.pop()] = i
            else:
                stack.clear()  # mismatched: give up on what is open
    return match


class ExprSyntax(ParserState):
    """Functions, blocks, operator chains, atoms, control flow and patterns (a mixin)."""

    # ------------------------------------------------------------ functions
    def parse_function(self, start: Token) -> Function:
        """``[A, B](%x: T, Attr=1) -> R { body }`` after ``fn`` or ``def @f``."""
        self.type_scopes.push()
        self.scopes.push()
        try:
            type_params = self._type_params()
            self.expect(T.LPAREN, "to start the parameter list")
            params: list[Var] = []
            raw_attrs: dict[str, Any] = {}
            while not self.accept(T.RPAREN):
                if self.at(T.IDENT) and self.peek(1).kind is T.EQUAL:
                    raw_attrs, _ = self.parse_attrs()
                    self.expect(T.RPAREN, "to close the parameter list")
                    break
                tok = self.peek()
                if tok.kind is not T.LOCAL:
                    self.fatal(f"expected a parameter such as `%x`, found {tok.describe()}")
                self.next()
                if self.at(T.LCURLY):
                    brace = self.next()
                    self.parse_attrs()
                    self.expect(T.RCURLY, "to close the parameter attributes")
                    self.error("parameter attributes (such as `virtual_device`) are not "
                               "supported", self.span_from(brace))
                annotation = self.parse_type() if self.accept(T.COLON) else None
                var = Var(str(tok.value), annotation, span=tok.span)
                self.scopes.bind(var.name_hint, var)
                params.append(var)
                if not self.accept(T.COMMA):
                    self.expect(T.RPAREN, "to close the parameter list")
                    break
            ret_type = self.parse_type() if self.accept(T.ARROW) else None
            self.expect(T.LCURLY, "to start the function body")
            body = self.parse_body()
            self.expect(T.RCURLY, "to close the function body")
        finally:
            self.scopes.pop()
            self.type_scopes.pop()
        return Function(tuple(params), body, ret_type, tuple(type_params),
                        FuncAttrs.of(raw_attrs), span=self.span_from(start))

    # ------------------------------------------------------------ blocks
    def parse_body(self) -> Expr:
        """Statements and a result (``let``, ``%n = e;``, ``free_var``,
        ``e;``), read in a loop and folded into Let nodes."""
        self.scopes.push()
        steps: list[tuple[Var, Expr, Span | None]] = []
        try:
            while True:
                tok = self.peek()
                if tok.kind is T.LET:
                    steps.append(self._let_binding())
                    continue
                if tok.kind is T.GRAPH and self.peek(1).kind is T.EQUAL:
                    self.next()
                    self.next()
                    self._declare_recursive_let(tok)
                    value = self.parse_expr()
                    self.expect(T.SEMI, "after the graph binding")
                    self.scopes.bind(("graph", tok.value), value)
                    continue
                if tok.kind is T.FREE_VAR:
                    self._free_var()
                    continue
                if tok.kind is T.LCURLY:
                    expr = self.parse_block()
                else:
                    expr = self.parse_expr()
                if self.accept(T.SEMI):
                    steps.append((Var("_"), expr, tok.span))
                    continue
                result = expr
                break
        finally:
            self.scopes.pop()
        end = self.last.span
        for var, value, span in reversed(steps):
            result = Let(var, value, result, span=span.merge(end) if span is not None else None)
        return result

    def parse_block(self) -> Expr:
        self.expect(T.LCURLY)
        expr = self.parse_body()
        self.expect(T.RCURLY, "to close the block")
        return expr

    def _let_binding(self) -> tuple[Var, Expr, Span | None]:
        let_tok = self.expect(T.LET)
        tok = self.peek()
        if tok.kind is T.GLOBAL:
            self.fatal(f"`let` binds a local variable such as `%{tok.value}`, not the global "
                       f"`@{tok.value}`")
        if tok.kind is not T.LOCAL:
            hint = f"; did you mean `%{tok.value}`?" if tok.kind is T.IDENT else ""
            self.fatal(f"expected a local variable such as `%x` after `let`, found "
                       f"{tok.describe()}{hint}")
        self.next()
        declared = self.recursive_lets.pop(self.pos - 2, None)
        if declared is not None:  # `%n = fn ...; let %f = %n;`: %f exists already
            var, self.pos = declared
        else:
            annotation = self.parse_type() if self.accept(T.COLON) else None
            var = Var(str(tok.value), annotation, span=tok.span)
        self.expect(T.EQUAL, "in the let binding")
        self.scopes.bind(var.name_hint, var)  # a let-bound function may recurse
        value = self.parse_expr()
        self.expect(T.SEMI, "after the let binding")
        return var, value, let_tok.span

    def _declare_recursive_let(self, graph_tok: Token) -> None:
        """At ``%n = fn ...``: if the statement right after this binding is
        ``let %f = %n;`` (how TVM and our printer write a recursive function
        that is also used elsewhere), create ``%f`` now and bring it into
        scope, so the function can call itself.  The cursor is left where
        it was; :meth:`_let_binding` picks the variable up.  A ``%f`` already
        in scope keeps its old meaning inside the function (the printer
        never reuses a name within a definition)."""
        if not self.at(T.FN):
            return
        start, last, n_diags = self.pos, self.last, len(self.diags)
        end = self._statement_end(start)
        if self.tokens[end].kind is not T.SEMI:
            return
        let_pos = end + 1
        var: Var | None = None
        self.pos = let_pos
        try:
            if self.accept(T.LET) and self.at(T.LOCAL) and self._unbound(self.peek()):
                name_tok = self.next()
                annotation = self.parse_type() if self.accept(T.COLON) else None
                after_annotation = self.pos
                if self.accept(T.EQUAL) and self.at(T.GRAPH) \
                        and self.next().value == graph_tok.value and self.at(T.SEMI):
                    var = Var(str(name_tok.value), annotation, span=name_tok.span)
        except Fatal:
            var = None
        if var is None:
            del self.diags[n_diags:]  # the annotation is parsed (and reported) again later
        else:
            self.recursive_lets[let_pos] = (var, after_annotation)
            self.scopes.bind(var.name_hint, var)
        self.pos, self.last = start, last

    def _unbound(self, tok: Token) -> bool:
        name = str(tok.value)
        return self.scopes.lookup(name) is None and name not in self.free_vars

    def _statement_end(self, start: int) -> int:
        """The position of the ``;`` (or whatever else stops it) ending the
        statement that starts at ``start``; bracketed groups are skipped in
        one step each (a table of matching brackets, built once)."""
        if self.bracket_match is None:
            self.bracket_match = _match_brackets(self.tokens)
        tokens, match = self.tokens, self.bracket_match
        i = start
        while tokens[i].kind not in _STATEMENT_STOPS:
            i = match[i] + 1 if i in match else i + 1
        return i

    def _free_var(self) -> None:
        self.expect(T.FREE_VAR)
        tok = self.expect(T.LOCAL, "after `free_var`")
        annotation = self.parse_type() if self.accept(T.COLON) else None
        self.expect(T.SEMI, "after the free variable declaration")
        self.free_vars[str(tok.value)] = Var(str(tok.value), annotation, span=tok.span)

    # ------------------------------------------------------------ operator chains
    def parse_expr(self) -> Expr:
        """Binary operator chains, left associative, by precedence.  Spans
        come from the tokens (a variable's own span is its binding site)."""
        operands: list[tuple[Expr, Span | None]] = [self._operand()]
        ops: list[tuple[str, int]] = []
        while True:
            info = BINARY_OPS.get(self.peek().kind)
            if info is None:
                break
            self.next()
            while ops and ops[-1][1] >= info[1]:
                self._reduce(operands, ops)
            ops.append(info)
            operands.append(self._operand())
        while ops:
            self._reduce(operands, ops)
        return operands[0][0]

    def _operand(self) -> tuple[Expr, Span | None]:
        start = self.peek()
        expr = self.parse_unary()
        return expr, self.span_from(start)

    def _reduce(self, operands: list[tuple[Expr, Span | None]],
                ops: list[tuple[str, int]]) -> None:
        name, _ = ops.pop()
        rhs, rhs_span = operands.pop()
        lhs, lhs_span = operands.pop()
        span = lhs_span.merge(rhs_span) if lhs_span is not None else rhs_span
        call = Call(op(name), (lhs, rhs), self._op_attrs(name, {}, {}, span), span=span)
        operands.append((call, span))

    def parse_unary(self) -> Expr:
        if not self.at(T.MINUS):
            return self.parse_postfix()
        minuses: list[Token] = []
        while self.at(T.MINUS):
            minuses.append(self.next())
        if self.at(T.NUMBER):
            tok = self.next()
            return self.number_constant(tok, len(minuses) % 2 == 1,
                                        self.span_from(minuses[0]), "-" * len(minuses))
        expr = self.parse_postfix()
        for minus in reversed(minuses):
            span = self.span_from(minus)
            expr = Call(op("negative"), (expr,), self._op_attrs("negative", {}, {}, span),
                        span=span)
        return expr

    # ------------------------------------------------------------ postfix and atoms
    def parse_postfix(self) -> Expr:
        start = self.peek()
        expr = self.parse_atom()
        while True:
            if self.at(T.LPAREN):
                expr = self.parse_call(expr, start)
            elif self.at(T.PERIOD) and self.peek(1).kind is T.NUMBER:
                self.next()
                index_tok = self.next()
                number = index_tok.value
                assert isinstance(number, Number)
                if number.is_float or number.dtype is not None:
                    self.error(f"a tuple index must be a plain integer, found "
                               f"`{index_tok.text}`", index_tok.span)
                expr = TupleGetItem(expr, int(number.value), span=self.span_from(start))
            else:
                break
        if isinstance(expr, Constructor) and not expr.inputs:
            expr = Call(expr, (), span=self.span_from(start))
        return expr

    def parse_atom(self) -> Expr:
        tok = self.peek()
        kind = tok.kind
        if kind is T.NUMBER:
            self.next()
            return self.number_constant(tok, False, tok.span, "")
        if kind is T.BOOL:
            self.next()
            return Constant(np.array(bool(tok.value)), span=tok.span)
        if kind is T.LOCAL:
            self.next()
            return self._local(tok)
        if kind is T.GRAPH:
            self.next()
            value = self.scopes.lookup(("graph", tok.value))
            if value is None:
                self.error(f"undefined graph variable `%{tok.value}`", tok.span)
                return Var(f"v{tok.value}", span=tok.span)
            return value
        if kind is T.GLOBAL:
            self.next()
            return self.global_ref(tok)
        if kind is T.IDENT:
            return self._identifier()
        if kind is T.META:
            self.next()
            return self._meta_ref(tok)
        if kind is T.FN:
            self.next()
            return self.parse_function(tok)
        if kind is T.IF:
            return self.parse_if()
        if kind in (T.MATCH, T.MATCH_PARTIAL):
            return self.parse_match()
        if kind is T.REF:
            (value,) = self._ref_operands("ref")
            return RefCreate(value, span=self.span_from(tok))
        if kind is T.REF_READ:
            (ref,) = self._ref_operands("ref_read")
            return RefRead(ref, span=self.span_from(tok))
        if kind is T.REF_WRITE:
            ref, value = self._ref_operands("ref_write")
            return RefWrite(ref, value, span=self.span_from(tok))
        if kind is T.LPAREN:
            return self._parens()
        self.fatal(f"expected an expression, found {tok.describe()}")
        raise AssertionError("unreachable")

    def _ref_operands(self, keyword: str) -> list[Expr]:
        """The parenthesised operands after the keyword ``ref``, ``ref_read``
        (one) or ``ref_write`` (the reference and the value)."""
        self.next()
        self.expect(T.LPAREN, f"after `{keyword}`")
        operands = [self.parse_body()]
        if keyword == "ref_write":
            self.expect(T.COMMA, f"between the reference and the value of `{keyword}`")
            operands.append(self.parse_body())
        self.expect(T.RPAREN, f"to close `{keyword}(...)`")
        return operands

    def _parens(self) -> Expr:
        start = self.expect(T.LPAREN)
        if self.accept(T.RPAREN):
            return Tuple((), span=self.span_from(start))
        first = self.parse_body()
        if self.accept(T.RPAREN):
            return first
        self.expect(T.COMMA, "or `)` after the expression")
        fields = [first]
        while not self.accept(T.RPAREN):
            fields.append(self.parse_body())
            if not self.accept(T.COMMA):
                self.expect(T.RPAREN, "to close the tuple")
                break
        return Tuple(tuple(fields), span=self.span_from(start))

    # ------------------------------------------------------------ control flow
    def parse_if(self) -> Expr:
        start = self.expect(T.IF)
        self.expect(T.LPAREN, "after `if`")
        cond = self.parse_body()
        self.expect(T.RPAREN, "to close the condition")
        self.expect(T.LCURLY, "to start the `if` branch")
        then = self.parse_body()
        self.expect(T.RCURLY, "to close the `if` branch")
        self.expect(T.ELSE, "(an `if` needs an `else` branch)")
        self.expect(T.LCURLY, "to start the `else` branch")
        other = self.parse_body()
        self.expect(T.RCURLY, "to close the `else` branch")
        return If(cond, then, other, span=self.span_from(start))

    def parse_match(self) -> Expr:
        start = self.next()
        complete = start.kind is T.MATCH
        data = self.parse_postfix()
        self.expect(T.LCURLY, "to start the match clauses")
        clauses: list[Clause] = []
        while not self.accept(T.RCURLY):
            clause_start = self.peek()
            self.scopes.push()
            try:
                lhs = self.parse_pattern()
                self.expect(T.FAT_ARROW, "after the pattern")
                rhs = self.parse_body()
            finally:
                self.scopes.pop()
            clauses.append(Clause(lhs, rhs, span=self.span_from(clause_start)))
            if not self.accept(T.COMMA):
                self.expect(T.RCURLY, "to close the match")
                break
        return Match(data, tuple(clauses), complete, span=self.span_from(start))

    # ------------------------------------------------------------ patterns
    def parse_pattern(self) -> Pattern:
        tok = self.peek()
        if tok.kind is T.UNDERSCORE:
            self.next()
            return PatternWildcard(span=tok.span)
        if tok.kind is T.LOCAL:
            self.next()
            annotation = self.parse_type() if self.accept(T.COLON) else None
            var = Var(str(tok.value), annotation, span=tok.span)
            self.scopes.bind(var.name_hint, var)
            return PatternVar(var, span=self.span_from(tok))
        if tok.kind is T.IDENT:
            self.next()
            name = str(tok.value)
            ctor = self.ctors.get(name)
            if ctor is None:
                self.unresolved.add(("ctor", name))
                self.error(f"undefined constructor `{name}` (a pattern variable is written "
                           f"`%{name}`)", tok.span)
                ctor = Constructor(name, (), GlobalTypeVar(name), 0)
            subs: tuple[Pattern, ...] = ()
            if self.at(T.LPAREN):
                subs = self._pattern_list()
            return PatternConstructor(ctor, subs, span=self.span_from(tok))
        if tok.kind is T.LPAREN:
            return PatternTuple(self._pattern_list(), span=self.span_from(tok))
        self.fatal(f"expected a pattern, found {tok.describe()}")
        raise AssertionError("unreachable")

    def _pattern_list(self) -> tuple[Pattern, ...]:
        self.expect(T.LPAREN)
        out: list[Pattern] = []
        while not self.accept(T.RPAREN):
            out.append(self.parse_pattern())
            if not self.accept(T.COMMA):
                self.expect(T.RPAREN, "to close the pattern list")
                break
        return tuple(out)
