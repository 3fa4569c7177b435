"""Parser for the Relay text format (version 0.0.5).

Design note
-----------
A hand-written recursive-descent parser over the tokens of
:mod:`aot.ir.lexer`, modelled on TVM's ``src/relay/parser/parser.cc`` but
with its own structure:

* **Name resolution before parsing.**  Globals, types and constructors may
  be used before their definition (mutual recursion), so a module is read
  in three sweeps: a token-level *pre-scan* collects every ``def @name``,
  ``type Name`` and constructor name; *sweep A* parses every type
  definition (creating the :class:`Constructor` objects function bodies
  refer to); *sweep B* parses the definitions in order.
* **No recursion on long sequences.**  A block (function body, branch,
  clause, parenthesised expression) is a list of statements: ``let``,
  graph bindings ``%n = e;``, ``free_var`` declarations and ``e;``
  sequencing, ending with a result expression.  They are read in a loop and
  folded into nested :class:`Let` nodes afterwards, so a 10,000-deep let
  chain or 10,000 graph bindings cost no stack.  Binary operator chains use
  an explicit operator stack (shunting-yard).  Only genuinely nested syntax
  (calls within calls, nested blocks) recurses; a RecursionError there
  becomes a diagnostic.
* **Scopes** are one dictionary of name stacks plus an undo log, so lookup
  is O(1) however deep the let chain.  Graph bindings live in the same
  scopes (keyed by number), so ``%0`` may be reused in a nested function.
* **Diagnostics.**  Semantic errors (unknown operator, undefined variable,
  bad attribute, literal out of range, duplicate definition) are collected
  and parsing continues with a placeholder, so one run reports them all.
  A syntax error stops the parse.  Everything is raised together as one
  :class:`~aot.diagnostics.DiagnosticError`.

Deviations from TVM, all deliberate: unary minus works on any expression
(``-%x`` is ``negative(%x)``); ``match`` may appear wherever an atom may;
``Ref[T]`` (the form ``str(RefType)`` prints) and TVM's ``ref(T)`` are
reference types; ``Tensor[(2), f32]`` accepts literal suffixes as dtypes;
``fn [A](A) -> A`` is a polymorphic function type; integer suffixes
``u8``...``u64`` exist; ``1.5`` without suffix is float32.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np

from ..diagnostics import Diagnostic, DiagnosticError, Span, register_source
from .adt import (Clause, Constructor, Pattern, PatternConstructor, PatternTuple, PatternVar,
                  PatternWildcard)
from .analysis import free_vars
from .attrs import NO_ATTRS, AttrError, Attrs, FuncAttrs, RawCallAttrs
from .dtype import DType
from .expr import (Call, Constant, Expr, Function, GlobalVar, If, Let, Match, Op, RefCreate,
                   RefRead, RefWrite, Tuple, TupleGetItem, Var, op)
from .lexer import Number, T, Token
from .module import IRModule
from .parse_scope import NameResolution, Prescan
from .parse_state import Fatal
from .parse_types import TypeSyntax
from .registry import lookup
from .types import GlobalTypeVar

SUPPORTED_VERSION = '"0.0.5"'

#: binary operator token -> (operator name, precedence); all left associative
BINARY_OPS: dict[T, tuple[str, int]] = {
    T.STAR: ("multiply", 4), T.SLASH: ("divide", 4),
    T.PLUS: ("add", 3), T.MINUS: ("subtract", 3),
    T.LT: ("less", 2), T.GT: ("greater", 2), T.LE: ("less_equal", 2),
    T.GE: ("greater_equal", 2),
    T.EQEQ: ("equal", 1), T.NE: ("not_equal", 1),
}


def _position(diag: Diagnostic) -> tuple[int, int]:
    return (diag.span.line, diag.span.col) if diag.span is not None else (0, 0)


# --------------------------------------------------------------- the parser

class Parser(TypeSyntax, NameResolution):
    # ------------------------------------------------------------ entry points
    def run(self, fn: Any) -> Any:
        try:
            result = fn()
        except Fatal as fatal:
            self._add_fatal(fatal.diagnostic)
            result = None
        except RecursionError:
            self._add_fatal(Diagnostic("the program is nested too deeply for the parser",
                                       self.peek().span))
            result = None
        if self.diags:
            raise DiagnosticError(sorted(self.diags, key=_position))
        return result

    def _add_fatal(self, diag: Diagnostic) -> None:
        # A syntax error at the very place a lexical error was reported is
        # the same problem: report it once.
        if diag.span is not None and any(
                d.span is not None and (d.span.line, d.span.col) == (diag.span.line, diag.span.col)
                for d in self.diags):
            return
        self.diags.append(diag)

    def parse_version(self) -> None:
        tok = self.accept(T.VERSION)
        if tok is not None and tok.value != SUPPORTED_VERSION:
            self.error(f"unsupported text format version {tok.value} (only {SUPPORTED_VERSION} "
                       f"is supported)", tok.span)

    def scan_names(self) -> Prescan:
        """Only the pre-scan: the names the program defines."""
        self.parse_version()
        return self._prescan()

    def module(self) -> IRModule:
        self.parse_version()
        body_start = self.pos
        self.prescan = self._prescan()
        # Sweep A: every type definition, so constructors exist before use.
        for start in self.prescan.type_def_starts:
            self.pos = start
            self.type_defs.append(self.parse_type_def())
            self.type_def_end[start] = self.pos
        self._check_ctor_type_clash()
        # Sweep B: definitions in order.
        self.pos = body_start
        functions: list[tuple[GlobalVar, Function]] = []
        defined: dict[str, Token] = {}
        main_expr: Expr | None = None
        saw_definition = False
        while True:
            tok = self.peek()
            if tok.kind is T.DEF:
                saw_definition = True
                gv, func, name_tok = self.parse_def()
                if gv.name in defined:
                    first = defined[gv.name].span
                    self.error(f"duplicate definition of global function `@{gv.name}` (first "
                               f"defined at {first})", name_tok.span)
                else:
                    defined[gv.name] = name_tok
                    functions.append((gv, func))
            elif tok.kind in (T.TYPE, T.EXTERN):
                saw_definition = True
                end = self.type_def_end.get(self.pos)
                if end is None:  # not found by the pre-scan: parse (and report) it now
                    self.parse_type_def()
                else:
                    self.pos = end
            elif tok.kind in (T.METADATA, T.EOF):
                break
            elif saw_definition:
                self.fatal("expected a definition (`def`, `type` or `extern type`), found "
                           f"{tok.describe()}")
            else:
                self.meta_params = {}
                main_expr = self.parse_body()
                if not self.at(T.METADATA) and not self.at(T.EOF):
                    self.fatal(f"unexpected {self.peek().describe()} after the expression")
        return self._assemble(functions, main_expr)

    def expression(self) -> Expr:
        self.parse_version()
        self.meta_params = {}
        expr = self.parse_body()
        if not self.at(T.METADATA) and not self.at(T.EOF):
            self.fatal(f"unexpected {self.peek().describe()} after the expression")
        return expr

    def _assemble(self, functions: list[tuple[GlobalVar, Function]],
                  main_expr: Expr | None) -> IRModule:
        mod = self.base.copy() if self.base is not None else IRModule()
        for data in self.type_defs:
            if data.header.name in self.base_type_names:
                continue  # reported as a duplicate
            mod.add_type(data)
        for gv, func in functions:
            mod.add(gv, func)
        if main_expr is not None:
            expr = main_expr
            metas = [self.meta_params[i] for i in sorted(self.meta_params)]
            if isinstance(expr, Function):
                if metas:
                    expr = dataclasses.replace(expr, params=expr.params + tuple(metas))
            else:
                meta_set = set(metas)
                params = [v for v in free_vars(expr) if v not in meta_set] + metas
                expr = Function(tuple(params), expr, span=expr.span)
            mod.add("main", expr)
        return mod

    # ------------------------------------------------------------ definitions
    def parse_def(self) -> tuple[GlobalVar, Function, Token]:
        def_tok = self.expect(T.DEF)
        name_tok = self.peek()
        if name_tok.kind is not T.GLOBAL:
            self.fatal(f"expected a global name such as `@main` after `def`, found "
                       f"{name_tok.describe()}")
        self.next()
        name = str(name_tok.value)
        gv = self.gvars.get(name)
        if gv is None:
            gv = self.gvars[name] = GlobalVar(name)
        self.meta_params = {}
        func = self.parse_function(def_tok)
        if self.meta_params:
            metas = tuple(self.meta_params[i] for i in sorted(self.meta_params))
            func = dataclasses.replace(func, params=func.params + metas)
        self.meta_params = {}
        return gv, func, name_tok

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
        annotation = self.parse_type() if self.accept(T.COLON) else None
        var = Var(str(tok.value), annotation, span=tok.span)
        self.expect(T.EQUAL, "in the let binding")
        self.scopes.bind(var.name_hint, var)  # a let-bound function may recurse
        value = self.parse_expr()
        self.expect(T.SEMI, "after the let binding")
        return var, value, let_tok.span

    def _free_var(self) -> None:
        self.expect(T.FREE_VAR)
        tok = self.expect(T.LOCAL, "after `free_var`")
        annotation = self.parse_type() if self.accept(T.COLON) else None
        self.expect(T.SEMI, "after the free variable declaration")
        self.free_vars[str(tok.value)] = Var(str(tok.value), annotation, span=tok.span)

    # ------------------------------------------------------------ expressions
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
            limit = float(np.finfo(dtype.np).max)
            if math.isfinite(fvalue) and abs(fvalue) > limit:
                self.error(f"floating-point literal `{text}` is out of range for {dtype}",
                           span)
                fvalue = 0.0
            return fvalue, dtype
        ivalue = -int(number.value) if negate else int(number.value)
        if number.dtype is None:
            for candidate in (DType.INT32, DType.INT64):
                info = np.iinfo(candidate.np)
                if info.min <= ivalue <= info.max:
                    return ivalue, candidate
            self.error(f"integer literal `{text}` is out of range for int64", span)
            return 0, DType.INT64
        dtype = number.dtype
        info = np.iinfo(dtype.np)
        if not info.min <= ivalue <= info.max:
            self.error(f"integer literal `{text}` is out of range for {dtype} "
                       f"({info.min} to {info.max})", span)
            return 0, dtype
        return ivalue, dtype

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


# ----------------------------------------------------------------- API

def _load_prelude() -> IRModule | None:
    try:
        from .prelude import load_prelude
    except ImportError:
        return None
    try:
        return load_prelude()
    except (DiagnosticError, ImportError):
        return None


def _prelude_base(prelude: IRModule, base: IRModule | None, scan: Prescan | None) -> IRModule:
    """``base`` plus whatever the prelude defines that neither ``base`` nor
    the program defines (the program's own definitions win)."""
    own_globals = set(scan.globals) if scan is not None else set()
    own_types = set(scan.types) if scan is not None else set()
    own_ctors = set(scan.ctors) if scan is not None else set()
    out = base.copy() if base is not None else IRModule()
    taken_ctors = {c.name for td in out.type_definitions.values() for c in td.constructors}
    for data in prelude.type_definitions.values():
        names = {c.name for c in data.constructors}
        if data.header.name in own_types or out.has_type(data.header.name) \
                or names & (own_ctors | own_types | taken_ctors):
            continue
        out.add_type(data)
    for gv, func in prelude.functions.items():
        if gv.name in own_globals or gv.name in out:
            continue
        out.add(gv, func)
    return out


def _defines(mod: IRModule, kind: str, name: str) -> bool:
    if kind == "global":
        return name in mod
    if kind == "type":
        return mod.has_type(name)
    return mod.constructor(name) is not None


def parse_module(text: str, source_name: str = "<string>", *, base: IRModule | None = None,
                 prelude: bool | None = None, meta_as_params: bool = False) -> IRModule:
    """Parse a module (definitions) or a bare expression, which becomes
    ``@main`` (its free variables, declared with ``free_var``, become its
    parameters).

    ``base``: a module whose globals, types and constructors are in scope
    and copied into the result.  ``prelude``: None adds the standard
    prelude when the program uses a name it does not define and the prelude
    does; True always adds it; False never.  ``meta_as_params``: without a
    metadata section, each ``meta[relay.Constant][i]`` becomes a trailing
    parameter ``%meta_relay_Constant_<i>`` of the function using it."""
    register_source(source_name, text)
    if prelude:
        prelude_mod = _load_prelude()
        if prelude_mod is not None:
            scanner = Parser(text, source_name, None)
            scan = scanner.run(scanner.scan_names)
            base = _prelude_base(prelude_mod, base, scan)
    parser = Parser(text, source_name, base, meta_as_params)
    try:
        return parser.run(parser.module)
    except DiagnosticError:
        if prelude is not None or not parser.unresolved:
            raise
        prelude_mod = _load_prelude()
        if prelude_mod is None or not any(_defines(prelude_mod, kind, name)
                                          for kind, name in sorted(parser.unresolved)):
            raise
    # The program uses names only the prelude defines: parse again with it.
    retry = Parser(text, source_name, _prelude_base(prelude_mod, base, parser.prescan),
                   meta_as_params)
    return retry.run(retry.module)


def parse_expr(text: str, source_name: str = "<string>", *,
               base: IRModule | None = None) -> Expr:
    """Parse one expression (``free_var`` declarations, bindings and a
    metadata section allowed).  Globals of ``base`` and its types and
    constructors are in scope; other ``@names`` become fresh GlobalVars."""
    register_source(source_name, text)
    parser = Parser(text, source_name, base, strict_globals=False)
    return parser.run(parser.expression)
