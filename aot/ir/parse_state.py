"""The state a parse works on, shared by the grammar mixins.

:class:`ParserState` holds the token cursor, the diagnostics collected so
far, the symbol tables (globals, types, constructors, the base module's
names), the local and type-variable :class:`Scopes` and the metadata
table.  The grammar lives in mixins over this state, one concern per
module (:mod:`.parse_scope`, :mod:`.parse_types`, :mod:`.parse_expr`,
:mod:`.parse_call`); :class:`aot.ir.parser.Parser` combines them.  The
mixins call one another through ``self``.

A syntax error raises :class:`Fatal` (the parse stops); every other error
is recorded with :meth:`ParserState.error` and parsing goes on.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..diagnostics import Diagnostic, Span
from .adt import Constructor, TypeData
from .expr import Constant, GlobalVar, Var
from .lexer import T, Token, tokenize
from .metadata import MetadataError, read_metadata
from .module import IRModule

if TYPE_CHECKING:
    from .parse_scope import Prescan


class Scopes:
    """Nested scopes as name stacks plus an undo log (O(1) lookup)."""

    def __init__(self) -> None:
        self._table: dict[Any, list[Any]] = {}
        self._log: list[Any] = []
        self._marks: list[int] = []

    def push(self) -> None:
        self._marks.append(len(self._log))

    def pop(self) -> None:
        mark = self._marks.pop()
        while len(self._log) > mark:
            key = self._log.pop()
            stack = self._table[key]
            stack.pop()
            if not stack:
                del self._table[key]

    def bind(self, key: Any, value: Any) -> None:
        self._table.setdefault(key, []).append(value)
        self._log.append(key)

    def lookup(self, key: Any) -> Any:
        stack = self._table.get(key)
        return stack[-1] if stack else None


class Fatal(Exception):
    """A syntax error: parsing cannot continue."""

    def __init__(self, diagnostic: Diagnostic):
        super().__init__(diagnostic.message)
        self.diagnostic = diagnostic


class ParserState:
    """Token cursor, diagnostics, symbol tables and scopes of one parse."""

    def __init__(self, text: str, source: str, base: IRModule | None,
                 meta_as_params: bool = False, strict_globals: bool = True) -> None:
        self.text = text
        self.source = source
        tokens, lex_diags = tokenize(text, source)
        self.tokens = tokens
        self.diags: list[Diagnostic] = list(lex_diags)
        self.pos = 0
        self.last: Token = tokens[0]
        self.base = base
        self.meta_as_params = meta_as_params
        self.strict_globals = strict_globals
        self.scopes = Scopes()
        self.type_scopes = Scopes()
        self.free_vars: dict[str, Var] = {}
        #: names the program refers to but nobody defines: (kind, name)
        self.unresolved: set[tuple[str, str]] = set()
        self.gvars: dict[str, GlobalVar] = {}
        self.base_globals: set[str] = set()
        self.type_names: set[str] = set()
        self.base_type_names: set[str] = set()
        self.ctors: dict[str, Constructor] = {}
        self.base_ctor_names: set[str] = set()
        self.type_defs: list[TypeData] = []
        self.type_def_end: dict[int, int] = {}
        self.meta_params: dict[int, Var] = {}
        self.meta_consts: dict[int, Constant] = {}
        self.meta_table: dict[str, list[object]] | None = None
        self.prescan: Prescan | None = None
        #: position of `let` -> (its variable, position after its annotation),
        #: declared early by a graph binding `%n = fn ...;` the let names
        self.recursive_lets: dict[int, tuple[Var, int]] = {}
        self.bracket_match: dict[int, int] | None = None
        if base is not None:
            for gv in base.functions:
                self.gvars[gv.name] = gv
                self.base_globals.add(gv.name)
            for data in base.type_definitions.values():
                self.type_names.add(data.header.name)
                self.base_type_names.add(data.header.name)
                for ctor in data.constructors:
                    self.ctors[ctor.name] = ctor
                    self.base_ctor_names.add(ctor.name)
        self._read_metadata()

    # ------------------------------------------------------------ tokens
    def peek(self, k: int = 0) -> Token:
        i = min(self.pos + k, len(self.tokens) - 1)
        return self.tokens[i]

    def next(self) -> Token:
        tok = self.tokens[self.pos]
        if tok.kind is not T.EOF:
            self.pos += 1
        self.last = tok
        return tok

    def at(self, kind: T) -> bool:
        return self.tokens[self.pos].kind is kind

    def accept(self, kind: T) -> Token | None:
        if self.tokens[self.pos].kind is kind:
            return self.next()
        return None

    def expect(self, kind: T, context: str = "") -> Token:
        tok = self.peek()
        if tok.kind is not kind:
            where = f" {context}" if context else ""
            self.fatal(f"expected {kind.value}{where}, found {tok.describe()}", tok.span)
        return self.next()

    # ------------------------------------------------------------ diagnostics
    def fatal(self, message: str, span: Span | None = None) -> None:
        raise Fatal(Diagnostic(message, span if span is not None else self.peek().span))

    def error(self, message: str, span: Span | None) -> None:
        self.diags.append(Diagnostic(message, span))

    def span_from(self, start: Token | Span | None) -> Span | None:
        if start is None:
            return None
        first = start.span if isinstance(start, Token) else start
        end = self.last.span
        if end.line < first.line or (end.line == first.line and end.end_col < first.col):
            return first
        return Span(self.source, first.line, first.col, end.end_line, end.end_col)

    # ------------------------------------------------------------ metadata
    def _read_metadata(self) -> None:
        if len(self.tokens) < 2 or self.tokens[-2].kind is not T.METADATA:
            return
        tok = self.tokens[-2]
        json_text, json_line, json_col = tok.value  # type: ignore[misc]
        try:
            self.meta_table = read_metadata(json_text)
        except MetadataError as exc:
            span = tok.span
            if exc.line is not None and exc.col is not None:
                line = json_line + exc.line - 1
                col = (json_col + exc.col - 1) if exc.line == 1 else exc.col
                span = Span(self.source, line, col, line, col + 1)
            self.error(f"bad metadata section: {exc}", span)
            self.meta_table = {}
