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

The parser is split by concern, as mixins over one shared state
(:mod:`.parse_state`: token cursor, diagnostics, symbol tables, scopes):
:mod:`.parse_scope` (pre-scan and name resolution), :mod:`.parse_types`
(types and type definitions), :mod:`.parse_expr` (blocks, operator chains,
atoms, ``if``, ``match``, patterns, ``fn``) and :mod:`.parse_call` (calls,
attributes, number literals).  This module holds the entry points, the
module-level sweeps, ``def`` and the prelude retry.

Deviations from TVM, all deliberate: unary minus works on any expression
(``-%x`` is ``negative(%x)``); ``match`` may appear wherever an atom may;
``Ref[T]`` (the form ``str(RefType)`` prints) and TVM's ``ref(T)`` are
reference types; ``Tensor[(2), f32]`` accepts literal suffixes as dtypes;
``fn [A](A) -> A`` is a polymorphic function type; integer suffixes
``u8``...``u64`` exist; ``1.5`` without suffix is float32; in
``%n = fn ...; let %f = %n;`` (how TVM prints a shared recursive function)
the function sees ``%f``.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from ..diagnostics import Diagnostic, DiagnosticError, Severity, Span, register_source
from .analysis import free_vars
from .attrs import RawCallAttrs
from .expr import Expr, Function, GlobalVar
from .lexer import T, Token
from .module import IRModule
from .parse_call import CallSyntax
from .parse_expr import ExprSyntax
from .parse_scope import NameResolution, Prescan
from .parse_state import Fatal
from .parse_types import TypeSyntax

__all__ = ["Parser", "RawCallAttrs", "parse_expr", "parse_module"]

SUPPORTED_VERSION = '"0.0.5"'


def _position(diag: Diagnostic) -> tuple[int, int]:
    return (diag.span.line, diag.span.col) if diag.span is not None else (0, 0)


# --------------------------------------------------------------- the parser

class Parser(ExprSyntax, CallSyntax, TypeSyntax, NameResolution):
    """The whole grammar: the mixins of the ``parse_*`` modules over one
    :class:`~aot.ir.parse_state.ParserState`, plus what is module-level here
    (the version line, the sweeps over definitions, ``def``, assembling the
    :class:`IRModule`)."""

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


@dataclasses.dataclass(frozen=True)
class _Withheld:
    """Why a prelude definition is left out: the clashing definition
    (rendered, e.g. ``@id``), where the program defines it, and by whom."""
    clash: str
    span: Span | None
    owner: str


def _prelude_base(prelude: IRModule, base: IRModule | None, scan: Prescan | None
                  ) -> tuple[IRModule, dict[tuple[str, str], _Withheld]]:
    """``base`` plus whatever the prelude defines that neither ``base`` nor
    the program defines (the program's own definitions win), except the
    prelude definitions that use one left out, directly or not: a program
    with its own ``@id`` gets no ``@iterate`` (which calls the prelude's
    ``@id``) but all the rest.  Also returns what is left out and why, keyed
    like :attr:`Parser.unresolved`."""
    own_globals = scan.globals if scan is not None else {}
    own_types = scan.types if scan is not None else {}
    own_ctors = scan.ctors if scan is not None else {}
    out = base.copy() if base is not None else IRModule()
    taken_ctors = {c.name for td in out.type_definitions.values() for c in td.constructors}

    def clash(rendered: str, token: Token | None) -> _Withheld:
        if token is None:
            return _Withheld(rendered, None, "the base module")
        return _Withheld(rendered, token.span, "this program")

    withheld: dict[tuple[str, str], _Withheld] = {}
    for data in prelude.type_definitions.values():
        name = data.header.name
        if name in own_types or out.has_type(name):
            withheld[("type", name)] = clash(f"type `{name}`", own_types.get(name))
            continue
        for ctor in data.constructors:
            if ctor.name in own_ctors or ctor.name in taken_ctors:
                withheld[("type", name)] = clash(f"constructor `{ctor.name}`",
                                                 own_ctors.get(ctor.name))
                break
            if ctor.name in own_types:
                withheld[("type", name)] = clash(f"type `{ctor.name}`", own_types[ctor.name])
                break
    for gv in prelude.functions:
        if gv.name in own_globals or gv.name in out:
            withheld[("global", gv.name)] = clash(f"`@{gv.name}`", own_globals.get(gv.name))
    # Leave out whatever uses something left out (the prelude is small:
    # sweep until nothing changes).
    from .prelude import prelude_dependencies
    dependencies = prelude_dependencies()
    changed = True
    while changed:
        changed = False
        for item, uses in dependencies.items():
            if item in withheld:
                continue
            cause = next((withheld[u] for u in sorted(uses) if u in withheld), None)
            if cause is not None:
                withheld[item] = cause
                changed = True
    for data in prelude.type_definitions.values():
        cause = withheld.get(("type", data.header.name))
        if cause is None:
            out.add_type(data)
            continue
        for ctor in data.constructors:
            withheld.setdefault(("ctor", ctor.name), cause)
            withheld.setdefault(("ident", ctor.name), cause)
    for gv, func in prelude.functions.items():
        if ("global", gv.name) not in withheld:
            out.add(gv, func)
    return out, withheld


def _with_notes(exc: DiagnosticError, unresolved: set[tuple[str, str]],
                withheld: dict[tuple[str, str], _Withheld]) -> DiagnosticError:
    """``exc`` plus a note for each name used but left out of the prelude."""
    notes = []
    for kind, name in sorted(unresolved):
        cause = withheld.get((kind, name))
        if cause is None:
            continue
        what = {"global": f"`@{name}`", "type": f"type `{name}`"}.get(kind,
                                                                  f"constructor `{name}`")
        notes.append(Diagnostic(f"the prelude's {what} is left out because {cause.clash} is "
                                f"defined by {cause.owner}", cause.span, Severity.NOTE))
    return DiagnosticError(exc.diagnostics + notes) if notes else exc


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
    does; True always adds it; False never.  The program's definitions
    shadow the prelude's, and prelude definitions that use a shadowed one
    are left out (a note explains it if the program uses one).  ``meta_as_params``: without a
    metadata section, each ``meta[relay.Constant][i]`` becomes a trailing
    parameter ``%meta_relay_Constant_<i>`` of the function using it."""
    register_source(source_name, text)
    withheld: dict[tuple[str, str], _Withheld] = {}
    if prelude:
        prelude_mod = _load_prelude()
        if prelude_mod is not None:
            scanner = Parser(text, source_name, None)
            scan = scanner.run(scanner.scan_names)
            base, withheld = _prelude_base(prelude_mod, base, scan)
    parser = Parser(text, source_name, base, meta_as_params)
    try:
        return parser.run(parser.module)
    except DiagnosticError as exc:
        if prelude is not None or not parser.unresolved:
            noted = _with_notes(exc, parser.unresolved, withheld)
            if noted is exc:
                raise
            raise noted from None
        prelude_mod = _load_prelude()
        if prelude_mod is None or not any(_defines(prelude_mod, kind, name)
                                          for kind, name in sorted(parser.unresolved)):
            raise
    # The program uses names only the prelude defines: parse again with it.
    retry_base, withheld = _prelude_base(prelude_mod, base, parser.prescan)
    retry = Parser(text, source_name, retry_base, meta_as_params)
    try:
        return retry.run(retry.module)
    except DiagnosticError as exc:
        noted = _with_notes(exc, retry.unresolved, withheld)
        if noted is exc:
            raise
        raise noted from None


def parse_expr(text: str, source_name: str = "<string>", *,
               base: IRModule | None = None) -> Expr:
    """Parse one expression (``free_var`` declarations, bindings and a
    metadata section allowed).  Globals of ``base`` and its types and
    constructors are in scope; other ``@names`` become fresh GlobalVars."""
    register_source(source_name, text)
    parser = Parser(text, source_name, base, strict_globals=False)
    return parser.run(parser.expression)
