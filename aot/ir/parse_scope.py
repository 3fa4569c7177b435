"""Name resolution for the parser: which names exist, and what a name in
the source refers to.

* The *pre-scan* finds every top-level name (``def @f``, ``type T``, its
  constructors) at the token level, before anything is parsed, so that
  definitions may refer to each other in any order.
* References: a local ``%x`` (innermost scope, then ``free_var``), a global
  ``@f`` (the base module or the pre-scan; :func:`aot.ir.parser.parse_expr`
  also accepts others), an identifier (a constructor, else an operator) and
  ``meta[relay.Constant][i]``.
  Names nobody defines are remembered in ``unresolved`` for the prelude
  retry of :func:`aot.ir.parser.parse_module`.
* Duplicate type and constructor definitions are reported here.
"""

from __future__ import annotations

from dataclasses import dataclass

from .expr import Constant, Expr, GlobalVar, Tuple, Var, op
from .lexer import MetaRef, T, Token
from .metadata import CONSTANT_KEY, UnsupportedNode
from .parse_state import ParserState
from .registry import lookup
from .types import IncompleteType


class _Clamped:
    """Token list access that never runs past the final EOF token."""

    def __init__(self, tokens: list[Token]) -> None:
        self.tokens = tokens

    def __getitem__(self, i: int) -> Token:
        return self.tokens[min(i, len(self.tokens) - 1)]

    def __len__(self) -> int:
        return len(self.tokens)


@dataclass
class Prescan:
    """What the pre-scan found: each top-level name's first token, and where
    each type definition starts."""
    globals: dict[str, Token]
    types: dict[str, Token]
    ctors: dict[str, Token]
    type_def_starts: list[int]


class NameResolution(ParserState):
    """Pre-scan, name lookups and duplicate-definition checks (a mixin)."""

    # ------------------------------------------------------------ pre-scan
    def _prescan(self) -> Prescan:
        """Top-level names, found without parsing (forward references)."""
        tokens = _Clamped(self.tokens)
        result = Prescan({}, {}, {}, [])
        openers = (T.LPAREN, T.LSQUARE, T.LCURLY)
        closers = (T.RPAREN, T.RSQUARE, T.RCURLY)
        depth = 0
        i = self.pos
        n = len(tokens)
        while i < n and tokens[i].kind not in (T.EOF, T.METADATA):
            tok = tokens[i]
            if depth == 0 and tok.kind in (T.TYPE, T.EXTERN):
                start = i
                if tok.kind is T.EXTERN:
                    i += 1
                    if tokens[i].kind is not T.TYPE:
                        continue
                if tokens[i + 1].kind is not T.IDENT:
                    i += 1
                    continue
                result.type_def_starts.append(start)
                result.types.setdefault(str(tokens[i + 1].value), tokens[i + 1])
                i = self._prescan_ctors(i + 2, result)
                continue
            if tok.kind in openers:
                depth += 1
            elif tok.kind in closers:
                depth = max(0, depth - 1)
            elif depth == 0 and tok.kind is T.DEF and tokens[i + 1].kind is T.GLOBAL:
                result.globals.setdefault(str(tokens[i + 1].value), tokens[i + 1])
            i += 1
        return result

    def _prescan_ctors(self, i: int, result: Prescan) -> int:
        tokens = _Clamped(self.tokens)
        if tokens[i].kind is T.LSQUARE:
            while tokens[i].kind not in (T.RSQUARE, T.EOF, T.METADATA):
                i += 1
            i += 1
        if tokens[i].kind is not T.LCURLY:
            return i
        i += 1
        depth = 0
        expect_name = True
        while tokens[i].kind not in (T.EOF, T.METADATA):
            kind = tokens[i].kind
            if kind in (T.LPAREN, T.LSQUARE, T.LCURLY):
                depth += 1
            elif kind in (T.RPAREN, T.RSQUARE, T.RCURLY):
                if depth == 0:
                    return i + 1
                depth -= 1
            elif depth == 0 and kind is T.COMMA:
                expect_name = True
                i += 1
                continue
            elif depth == 0 and expect_name and kind is T.IDENT:
                result.ctors.setdefault(str(tokens[i].value), tokens[i])
            expect_name = False
            i += 1
        return i

    # ------------------------------------------------------------ definitions
    def _check_new_type(self, name: str, tok: Token) -> None:
        if name in self.base_type_names:
            self.error(f"type `{name}` is already defined in the base module", tok.span)
            return
        seen = [td for td in self.type_defs if td.header.name == name]
        if seen:
            first = seen[0].span
            self.error(f"duplicate definition of type `{name}`"
                       + (f" (first defined at {first})" if first is not None else ""),
                       tok.span)
        self.type_names.add(name)

    def _check_ctor_type_clash(self) -> None:
        for data in self.type_defs:
            for ctor in data.constructors:
                if ctor.name in self.type_names and self.ctors.get(ctor.name) is ctor:
                    self.error(f"constructor `{ctor.name}` has the same name as a type",
                               ctor.span)

    # ------------------------------------------------------------ references
    def _local(self, tok: Token) -> Expr:
        name = str(tok.value)
        var = self.scopes.lookup(name)
        if var is None:
            var = self.free_vars.get(name)
        if var is None:
            self.error(f"undefined variable `%{name}`", tok.span)
            var = Var(name, span=tok.span)
        return var

    def global_ref(self, tok: Token) -> GlobalVar:
        name = str(tok.value)
        gv = self.gvars.get(name)
        if gv is None:
            gv = self.gvars[name] = GlobalVar(name)
        if self.strict_globals and name not in self.base_globals and (
                self.prescan is None or name not in self.prescan.globals):
            self.unresolved.add(("global", name))
            self.error(f"undefined global function `@{name}`", tok.span)
        return gv

    def _identifier(self) -> Expr:
        first = self.peek()
        ctor = self.ctors.get(str(first.value))
        if ctor is not None:
            self.next()
            return ctor
        parts = [str(self.next().value)]
        while self.at(T.PERIOD) and self.peek(1).kind is T.IDENT:
            self.next()
            parts.append(str(self.next().value))
        name = ".".join(parts)
        span = self.span_from(first)
        if lookup(name) is None:
            if len(parts) == 1:
                self.unresolved.add(("ident", name))
            self.error(f"unknown operator `{name}`", span)
        return op(name)

    def _meta_ref(self, tok: Token) -> Expr:
        ref = tok.value
        assert isinstance(ref, MetaRef)
        if ref.kind != CONSTANT_KEY:
            self.error(f"unsupported meta reference `{tok.text}`: only `meta[{CONSTANT_KEY}][i]` "
                       f"(a constant) can appear in an expression", tok.span)
            return Tuple((), span=tok.span)
        if self.meta_table is None:
            if self.meta_as_params:
                var = self.meta_params.get(ref.index)
                if var is None:
                    var = Var(f"meta_relay_Constant_{ref.index}", IncompleteType(),
                              span=tok.span)
                    self.meta_params[ref.index] = var
                return var
            self.error(f"`{tok.text}` refers to the metadata section, but the program has "
                       f"none (`#[metadata]`)", tok.span)
            return Tuple((), span=tok.span)
        items = self.meta_table.get(CONSTANT_KEY)
        if items is None:
            self.error(f"the metadata section has no `{CONSTANT_KEY}` entry for `{tok.text}`",
                       tok.span)
            return Tuple((), span=tok.span)
        if ref.index >= len(items):
            self.error(f"`{tok.text}`: the index {ref.index} is out of bounds (the metadata "
                       f"section holds {len(items)} constants)", tok.span)
            return Tuple((), span=tok.span)
        item = items[ref.index]
        if isinstance(item, UnsupportedNode) or not isinstance(item, Constant):
            self.error(f"`{tok.text}` is not a constant", tok.span)
            return Tuple((), span=tok.span)
        const = self.meta_consts.get(ref.index)
        if const is None:
            const = self.meta_consts[ref.index] = Constant(item.data, span=tok.span)
        return const
