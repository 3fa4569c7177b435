"""The IR: types, expressions, ADTs, modules, operators, traversals."""

from .adt import (Clause, Constructor, Pattern, PatternConstructor, PatternTuple,
                  PatternVar, PatternWildcard, TypeData)
from .attrs import Attrs, FuncAttrs
from .dtype import DType
from .expr import (Call, Constant, Expr, Function, GlobalVar, If, Let, Match, Op, RefCreate,
                   RefRead, RefWrite, Tuple, TupleGetItem, Var, const, op)
from .module import IRModule
from .types import (ANY, UNIT, AnyDim, FuncType, GlobalTypeVar, IncompleteType, RefType,
                    TensorType, TupleType, Type, TypeCall, TypeKind, TypeRelation, TypeVar,
                    scalar_type)

__all__ = [
    "Clause", "Constructor", "Pattern", "PatternConstructor", "PatternTuple", "PatternVar",
    "PatternWildcard", "TypeData", "Attrs", "FuncAttrs", "DType", "Call", "Constant", "Expr",
    "Function", "GlobalVar", "If", "Let", "Match", "Op", "RefCreate", "RefRead", "RefWrite",
    "Tuple", "TupleGetItem", "Var", "const", "op", "IRModule", "ANY", "UNIT", "AnyDim",
    "FuncType", "GlobalTypeVar", "IncompleteType", "RefType", "TensorType", "TupleType",
    "Type", "TypeCall", "TypeKind", "TypeRelation", "TypeVar", "scalar_type",
]
