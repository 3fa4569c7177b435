"""Type syntax for the parser: types and type definitions.

Types: ``Tensor[(1, ?), float32]`` (a literal suffix such as ``f32`` may
stand for the dtype), a bare dtype (a scalar tensor), tuples ``(A, B)``,
function types ``fn [A](A) -> A where rel(A)``, ``_`` (a hole), references
``Ref[T]`` / ``ref(T)``, type variables in scope and calls of defined types
``List[T]``.  Type definitions: ``type T[A] { C1(A), C2 }`` and
``extern type T``, whose constructors are created here.
"""

from __future__ import annotations

from typing import Any

from .adt import Constructor, TypeData
from .dtype import DType
from .lexer import Number, T, Token, suffix_dtype
from .parse_state import ParserState
from .types import (ANY, FuncType, GlobalTypeVar, IncompleteType, RefType, TensorType,
                    TupleType, Type, TypeCall, TypeRelation, TypeVar)

#: an unknown type name with one of these prefixes is reported as an unknown dtype
_DTYPE_PREFIXES = ("int", "uint", "float", "bool")


class TypeSyntax(ParserState):
    """Types and type definitions (a mixin)."""

    # ------------------------------------------------------------ definitions
    def parse_type_def(self) -> TypeData:
        start = self.peek()
        extern = self.accept(T.EXTERN) is not None
        self.expect(T.TYPE)
        name_tok = self.expect(T.IDENT, "(the name of the type)")
        name = str(name_tok.value)
        header = GlobalTypeVar(name)
        self._check_new_type(name, name_tok)
        self.type_scopes.push()
        try:
            type_vars = self._type_params()
            ctor_specs: list[tuple[Token, tuple[Type, ...]]] = []
            if self.accept(T.LCURLY):
                while not self.accept(T.RCURLY):
                    ctor_tok = self.expect(T.IDENT, "(a constructor name)")
                    inputs: tuple[Type, ...] = ()
                    if self.at(T.LPAREN):
                        inputs = tuple(self._type_list(T.LPAREN, T.RPAREN))
                    ctor_specs.append((ctor_tok, inputs))
                    if not self.accept(T.COMMA):
                        self.expect(T.RCURLY, "to close the type definition")
                        break
        finally:
            self.type_scopes.pop()
        if extern and ctor_specs:
            self.error(f"the external type `{name}` may not have constructors", start.span)
        ctors = []
        for tag, (ctor_tok, inputs) in enumerate(ctor_specs):
            ctor_name = str(ctor_tok.value)
            ctor = Constructor(ctor_name, inputs, header, tag, span=ctor_tok.span)
            known = self.ctors.get(ctor_name)
            if known is not None and known.span is not ctor_tok.span:
                where = f" (first defined at {known.span})" if known.span is not None else \
                    " (defined in the base module)"
                self.error(f"duplicate constructor `{ctor_name}`{where}", ctor_tok.span)
            else:
                self.ctors[ctor_name] = ctor
            ctors.append(ctor)
        return TypeData(header, tuple(type_vars), tuple(ctors), extern=extern,
                        span=self.span_from(start))

    def _type_params(self) -> list[TypeVar]:
        out: list[TypeVar] = []
        if not self.accept(T.LSQUARE):
            return out
        while not self.accept(T.RSQUARE):
            tok = self.expect(T.IDENT, "(a type parameter)")
            tv = TypeVar(str(tok.value))
            self.type_scopes.bind(tv.name, tv)
            out.append(tv)
            if not self.accept(T.COMMA):
                self.expect(T.RSQUARE, "to close the type parameters")
                break
        return out

    # ------------------------------------------------------------ types
    def parse_type(self) -> Type:
        tok = self.peek()
        if tok.kind is T.LPAREN:
            return TupleType(tuple(self._type_list(T.LPAREN, T.RPAREN)))
        if tok.kind is T.FN:
            self.next()
            self.type_scopes.push()
            try:
                type_params = self._type_params()
                args = self._type_list(T.LPAREN, T.RPAREN)
                self.expect(T.ARROW, "in the function type")
                ret = self.parse_type()
                constraints = self._type_constraints()
            finally:
                self.type_scopes.pop()
            return FuncType(tuple(args), ret, tuple(type_params), tuple(constraints))
        if tok.kind is T.UNDERSCORE:
            self.next()
            return IncompleteType()
        if tok.kind is T.REF:  # TVM prints a reference type as `ref(T)`
            self.next()
            self.expect(T.LPAREN, "after `ref` in a type")
            value = self.parse_type()
            self.expect(T.RPAREN, "to close the reference type")
            return RefType(value)
        if tok.kind is T.IDENT:
            return self._named_type()
        self.fatal(f"expected a type, found {tok.describe()}")
        raise AssertionError("unreachable")

    def _type_constraints(self) -> list[TypeRelation]:
        """``where rel(A, B), nn.rel(C)`` after a function type (the form
        ``str(FuncType)`` prints for a polymorphic operator-like type)."""
        out: list[TypeRelation] = []
        tok = self.peek()
        if tok.kind is not T.IDENT or tok.value != "where":
            return out
        self.next()
        while True:
            parts = [str(self.expect(T.IDENT, "(a type relation)").value)]
            while self.at(T.PERIOD) and self.peek(1).kind is T.IDENT:
                self.next()
                parts.append(str(self.next().value))
            out.append(TypeRelation(".".join(parts), tuple(self._type_list(T.LPAREN,
                                                                            T.RPAREN))))
            nxt, after = self.peek(1), self.peek(2)
            if self.at(T.COMMA) and nxt.kind is T.IDENT and after.kind in (T.LPAREN, T.PERIOD):
                self.next()
                continue
            return out

    def _type_list(self, open_kind: T, close_kind: T) -> list[Type]:
        self.expect(open_kind)
        out: list[Type] = []
        while not self.accept(close_kind):
            out.append(self.parse_type())
            if not self.accept(T.COMMA):
                self.expect(close_kind, "to close the type list")
                break
        return out

    def _named_type(self) -> Type:
        tok = self.next()
        name = str(tok.value)
        tv = self.type_scopes.lookup(name)
        if tv is not None:
            if self.at(T.LSQUARE):
                self.error(f"the type variable `{name}` cannot take type arguments", tok.span)
                self._type_list(T.LSQUARE, T.RSQUARE)
            return tv
        if name == "Tensor" and self.at(T.LSQUARE) and name not in self.type_names:
            return self._tensor_type(tok)
        if name == "Ref" and self.at(T.LSQUARE) and name not in self.type_names:
            lsq = self.peek()
            args = self._type_list(T.LSQUARE, T.RSQUARE)
            if len(args) != 1:
                self.error("a reference type takes one type argument: `Ref[T]`",
                           self.span_from(lsq))
                return RefType(IncompleteType())
            return RefType(args[0])
        if name in self.type_names or (self.prescan is not None and name in self.prescan.types):
            args: list[Type] = []
            if self.at(T.LSQUARE):
                args = self._type_list(T.LSQUARE, T.RSQUARE)
            return TypeCall(GlobalTypeVar(name), tuple(args))
        dtype = DType.parse(name)
        if dtype is not None:
            return TensorType((), dtype)
        if name.startswith(_DTYPE_PREFIXES):
            self.error(f"unknown dtype `{name}`", tok.span)
            return IncompleteType()
        self.unresolved.add(("type", name))
        self.error(f"undefined type `{name}`", tok.span)
        if self.at(T.LSQUARE):
            self._type_list(T.LSQUARE, T.RSQUARE)
        return IncompleteType()

    def _tensor_type(self, start: Token) -> Type:
        self.expect(T.LSQUARE)
        self.expect(T.LPAREN, "to start the shape (write `Tensor[(1, 2), float32]`)")
        dims: list[Any] = []
        while not self.accept(T.RPAREN):
            tok = self.peek()
            if self.accept(T.QUESTION):
                dims.append(ANY)
            elif tok.kind is T.NUMBER and isinstance(tok.value, Number) \
                    and not tok.value.is_float:
                self.next()
                dims.append(int(tok.value.value))
            else:
                self.fatal(f"expected a dimension (an integer or `?`), found {tok.describe()}")
            if not self.accept(T.COMMA):
                self.expect(T.RPAREN, "to close the shape")
                break
        self.expect(T.COMMA, "between the shape and the dtype")
        dtype_tok = self.expect(T.IDENT, "(the dtype)")
        # a dtype name, or a literal suffix as shorthand (`f32`, `i64`, `u8`, `f`)
        dtype = DType.parse(str(dtype_tok.value)) or suffix_dtype(str(dtype_tok.value))
        self.expect(T.RSQUARE, "to close the tensor type")
        if dtype is None:
            self.error(f"unknown dtype `{dtype_tok.value}`", dtype_tok.span)
            return IncompleteType()
        return TensorType(tuple(dims), dtype)
