"""Structural equality and hashing, up to alpha-equivalence.

Design note
-----------
Two expressions are structurally equal when they have the same shape and
their bound variables correspond one to one: ``fn (%x) { %x }`` equals
``fn (%y) { %y }``.  Type variables bound by function types or type
parameters are matched the same way.  Free variables must be the same
object unless ``map_free_vars`` is set (then they too are paired on first
sight).  Globals, operators and constructors compare by name.  Constants
compare bit for bit (so NaN equals NaN).  Sharing is ignored: a graph
binding used twice equals two copies of the same tree.

The walk is iterative (a worklist of node pairs), and each pair of nodes
is compared once, so deep lets and wide DAGs cost linear time.

The hash ignores variable identity entirely (every variable hashes by its
annotation only), which is coarse but consistent: equal => same hash.
"""

from __future__ import annotations

from typing import Any

from . import adt
from .adt import Constructor, TypeData
from .expr import (Call, Constant, Expr, Function, GlobalVar, If, Let, Match, Op,
                   RefCreate, RefRead, RefWrite, Tuple, TupleGetItem, Var)
from .module import IRModule
from .types import (FuncType, GlobalTypeVar, IncompleteType, RefType, TensorType,
                    TupleType, Type, TypeCall, TypeRelation, TypeVar)
from .visitor import children, post_order


class _Equal:
    def __init__(self, map_free_vars: bool) -> None:
        self.map_free_vars = map_free_vars
        self.vars: dict[Var, Var] = {}
        self.vars_rev: dict[Var, Var] = {}
        self.tvs: dict[TypeVar, TypeVar] = {}
        self.tvs_rev: dict[TypeVar, TypeVar] = {}

    # ---------------------------------------------------------------- types
    def bind_tv(self, a: TypeVar, b: TypeVar) -> bool:
        if a.kind != b.kind:
            return False
        self.tvs[a] = b
        self.tvs_rev[b] = a
        return True

    def type_eq(self, a: Type | None, b: Type | None) -> bool:
        if a is None or b is None:
            return a is None and b is None
        if type(a) is not type(b):
            return False
        if isinstance(a, TypeVar):
            assert isinstance(b, TypeVar)
            if a in self.tvs:
                return self.tvs[a] == b
            if b in self.tvs_rev:
                return False
            if a == b:
                return True
            return self.map_free_vars and self.bind_tv(a, b)
        if isinstance(a, TensorType):
            return a == b
        if isinstance(a, IncompleteType):
            return True
        if isinstance(a, GlobalTypeVar):
            return a.name == b.name  # type: ignore[attr-defined]
        if isinstance(a, TupleType):
            return self.types_eq(a.fields, b.fields)  # type: ignore[attr-defined]
        if isinstance(a, TypeCall):
            return self.type_eq(a.func, b.func) and self.types_eq(a.args, b.args)  # type: ignore[attr-defined]
        if isinstance(a, RefType):
            return self.type_eq(a.value, b.value)  # type: ignore[attr-defined]
        if isinstance(a, TypeRelation):
            return a.name == b.name and self.types_eq(a.args, b.args)  # type: ignore[attr-defined]
        if isinstance(a, FuncType):
            assert isinstance(b, FuncType)
            if len(a.type_params) != len(b.type_params):
                return False
            for x, y in zip(a.type_params, b.type_params):
                if not self.bind_tv(x, y):
                    return False
            return (self.types_eq(a.arg_types, b.arg_types)
                    and self.type_eq(a.ret_type, b.ret_type)
                    and self.types_eq(a.type_constraints, b.type_constraints))
        raise AssertionError(f"unknown type {a!r}")

    def types_eq(self, a: tuple[Type, ...], b: tuple[Type, ...]) -> bool:
        return len(a) == len(b) and all(self.type_eq(x, y) for x, y in zip(a, b))

    # ---------------------------------------------------------------- vars
    def bind_var(self, a: Var, b: Var) -> bool:
        if a in self.vars:
            return self.vars[a] is b
        if b in self.vars_rev:
            return False
        self.vars[a] = b
        self.vars_rev[b] = a
        return self.type_eq(a.type_annotation, b.type_annotation)

    def var_use(self, a: Var, b: Var) -> bool:
        if a in self.vars:
            return self.vars[a] is b
        if b in self.vars_rev:
            return False
        if a is b:
            return True
        return self.map_free_vars and self.bind_var(a, b)

    def pattern_eq(self, a: adt.Pattern, b: adt.Pattern) -> bool:
        if type(a) is not type(b):
            return False
        if isinstance(a, adt.PatternVar):
            return self.bind_var(a.var, b.var)  # type: ignore[attr-defined]
        if isinstance(a, adt.PatternConstructor):
            assert isinstance(b, adt.PatternConstructor)
            if not ctor_eq(a.constructor, b.constructor):
                return False
            subs_a, subs_b = a.patterns, b.patterns
        elif isinstance(a, adt.PatternTuple):
            assert isinstance(b, adt.PatternTuple)
            subs_a, subs_b = a.patterns, b.patterns
        else:
            return True
        return len(subs_a) == len(subs_b) and all(
            self.pattern_eq(x, y) for x, y in zip(subs_a, subs_b))

    # ---------------------------------------------------------------- exprs
    def expr_eq(self, lhs: Expr, rhs: Expr) -> bool:
        work: list[tuple[Expr, Expr]] = [(lhs, rhs)]
        seen: set[tuple[int, int]] = set()
        while work:
            a, b = work.pop()
            key = (id(a), id(b))
            if key in seen:
                continue
            seen.add(key)
            pairs = self.node_eq(a, b)
            if pairs is None:
                return False
            work.extend(reversed(pairs))
        return True

    def node_eq(self, a: Expr, b: Expr) -> list[tuple[Expr, Expr]] | None:
        """Compare the node's own fields (binding its variables); return the
        child pairs still to compare, or None when they differ."""
        if type(a) is not type(b):
            return None
        if isinstance(a, Var):
            return [] if self.var_use(a, b) else None  # type: ignore[arg-type]
        if isinstance(a, GlobalVar):
            return [] if a.name == b.name else None  # type: ignore[attr-defined]
        if isinstance(a, Op):
            return [] if a.name == b.name else None  # type: ignore[attr-defined]
        if isinstance(a, Constructor):
            return [] if ctor_eq(a, b) else None  # type: ignore[arg-type]
        if isinstance(a, Constant):
            return [] if const_eq(a, b) else None  # type: ignore[arg-type]
        if isinstance(a, Tuple):
            if len(a.fields) != len(b.fields):  # type: ignore[attr-defined]
                return None
        elif isinstance(a, TupleGetItem):
            if a.index != b.index:  # type: ignore[attr-defined]
                return None
        elif isinstance(a, Call):
            assert isinstance(b, Call)
            if len(a.args) != len(b.args) or a.attrs != b.attrs:
                return None
            if a.type_args and b.type_args and not self.types_eq(a.type_args, b.type_args):
                return None
        elif isinstance(a, Function):
            assert isinstance(b, Function)
            if len(a.params) != len(b.params) or len(a.type_params) != len(b.type_params):
                return None
            if a.attrs != b.attrs:
                return None
            for x, y in zip(a.type_params, b.type_params):
                if not self.bind_tv(x, y):
                    return None
            for p, q in zip(a.params, b.params):
                if not self.bind_var(p, q):
                    return None
            if not self.type_eq(a.ret_type, b.ret_type):
                return None
            return [(a.body, b.body)]
        elif isinstance(a, Let):
            assert isinstance(b, Let)
            if not self.bind_var(a.var, b.var):
                return None
            return [(a.value, b.value), (a.body, b.body)]
        elif isinstance(a, Match):
            assert isinstance(b, Match)
            if a.complete != b.complete or len(a.clauses) != len(b.clauses):
                return None
            pairs = [(a.data, b.data)]
            for x, y in zip(a.clauses, b.clauses):
                if not self.pattern_eq(x.lhs, y.lhs):
                    return None
                pairs.append((x.rhs, y.rhs))
            return pairs
        elif not isinstance(a, (If, RefCreate, RefRead, RefWrite)):
            raise AssertionError(f"unknown expression {a!r}")
        return list(zip(children(a), children(b)))


def ctor_eq(a: Constructor, b: Constructor) -> bool:
    return a.name == b.name and a.belong_to.name == b.belong_to.name and a.tag == b.tag


def const_eq(a: Constant, b: Constant) -> bool:
    return (a.data.dtype == b.data.dtype and a.data.shape == b.data.shape
            and a.data.tobytes() == b.data.tobytes())


def _typedata_eq(eq: _Equal, a: TypeData, b: TypeData) -> bool:
    if a.header.name != b.header.name or len(a.type_vars) != len(b.type_vars):
        return False
    if a.extern != b.extern or len(a.constructors) != len(b.constructors):
        return False
    for x, y in zip(a.type_vars, b.type_vars):
        eq.bind_tv(x, y)
    return all(ctor_eq(x, y) and eq.types_eq(x.inputs, y.inputs)
               for x, y in zip(a.constructors, b.constructors))


def structural_equal(lhs: Any, rhs: Any, map_free_vars: bool = False) -> bool:
    """Alpha-equivalence of two expressions, types or modules."""
    eq = _Equal(map_free_vars)
    if isinstance(lhs, IRModule) and isinstance(rhs, IRModule):
        names_a = sorted(g.name for g in lhs.functions)
        names_b = sorted(g.name for g in rhs.functions)
        types_a = sorted(t.name for t in lhs.type_definitions)
        types_b = sorted(t.name for t in rhs.type_definitions)
        if names_a != names_b or types_a != types_b:
            return False
        for name in types_a:
            if not _typedata_eq(_Equal(False), lhs.lookup_type(name), rhs.lookup_type(name)):
                return False
        return all(_Equal(map_free_vars).expr_eq(lhs[n], rhs[n]) for n in names_a)
    if isinstance(lhs, Type) and isinstance(rhs, Type):
        return eq.type_eq(lhs, rhs)
    if isinstance(lhs, Expr) and isinstance(rhs, Expr):
        return eq.expr_eq(lhs, rhs)
    return False


def assert_structural_equal(lhs: Any, rhs: Any, map_free_vars: bool = False) -> None:
    if not structural_equal(lhs, rhs, map_free_vars):
        raise AssertionError(f"not structurally equal:\n{lhs}\n----\n{rhs}")


# -------------------------------------------------------------------- hash

def _type_hash(t: Type | None) -> int:
    if t is None:
        return 0
    if isinstance(t, (TypeVar, IncompleteType)):
        return hash(type(t).__name__)
    if isinstance(t, TensorType):
        return hash(t)
    if isinstance(t, GlobalTypeVar):
        return hash(("gtv", t.name))
    if isinstance(t, TupleType):
        return hash(("tuple", *map(_type_hash, t.fields)))
    if isinstance(t, TypeCall):
        return hash(("call", t.func.name, *map(_type_hash, t.args)))
    if isinstance(t, RefType):
        return hash(("ref", _type_hash(t.value)))
    if isinstance(t, FuncType):
        return hash(("fn", len(t.type_params), *map(_type_hash, t.arg_types),
                     _type_hash(t.ret_type)))
    if isinstance(t, TypeRelation):
        return hash(("rel", t.name, *map(_type_hash, t.args)))
    return hash(type(t).__name__)


def structural_hash(node: Any) -> int:
    if isinstance(node, Type):
        return _type_hash(node)
    if isinstance(node, IRModule):
        return hash(tuple(sorted((g.name, structural_hash(f))
                                 for g, f in node.functions.items())))
    memo: dict[Expr, int] = {}
    for e in post_order(node):
        kids = tuple(memo[c] for c in children(e))
        if isinstance(e, Var):
            h = hash(("var", _type_hash(e.type_annotation)))
        elif isinstance(e, (GlobalVar, Op)):
            h = hash((type(e).__name__, e.name))
        elif isinstance(e, Constructor):
            h = hash(("ctor", e.name))
        elif isinstance(e, Constant):
            h = hash(("const", e.data.dtype.str, e.data.shape, e.data.tobytes()))
        elif isinstance(e, Call):
            h = hash(("call", e.attrs, kids))
        elif isinstance(e, TupleGetItem):
            h = hash(("proj", e.index, kids))
        elif isinstance(e, Function):
            h = hash(("fn", _type_hash(e.ret_type), kids))
        elif isinstance(e, Match):
            h = hash(("match", e.complete, kids))
        else:
            h = hash((type(e).__name__, kids))
        memo[e] = h
    return memo[node]


__all__ = ["structural_equal", "structural_hash", "assert_structural_equal"]
