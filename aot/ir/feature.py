"""Feature detection: which language constructs a program uses.

After Relay's ``detect_feature`` (``src/relay/analysis/feature.cc``):
one :class:`Feature` per kind of expression node, plus two properties of
the program as a whole:

* ``fGraph`` -- some compound node is used more than once (implicit
  sharing, graph form).  Atoms may be shared freely: variables, globals,
  operators, constructors, constants and primitive functions (FuseOps'
  kernels are called wherever they are used; Relay counts them as
  ordinary functions).
* ``fLetRec`` -- some ``let`` binds a function that refers to the let's
  own variable (local recursion).  Relay asks this of any let value; in a
  well-formed program only a function may do it, and only functions are
  checked here (that keeps a 10,000-deep let chain linear).

Bodies of primitive functions are not looked into (as in Relay).  Normal
forms are stated as feature sets: A-normal form has no ``fGraph``; graph
normal form has no ``fLet`` binding a pure value.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Iterable, Iterator

from .adt import Constructor
from .analysis import recursive_lets
from .expr import (Call, Constant, Expr, Function, GlobalVar, If, Let, Match, Op, RefCreate,
                   RefRead, RefWrite, Tuple, TupleGetItem, Var)
from .module import IRModule
from .visitor import ExprVisitor, Visit, children

__all__ = ["Feature", "FeatureSet", "detect_feature", "check_feature"]


class Feature(enum.Enum):
    """Relay's feature names (``tvm.relay.feature.Feature``)."""

    fVar = 0
    fGlobalVar = 1
    fConstant = 2
    fTuple = 3
    fTupleGetItem = 4
    fFunction = 5
    fOp = 6
    fCall = 7
    fLet = 8
    fIf = 9
    fRefCreate = 10
    fRefRead = 11
    fRefWrite = 12
    fConstructor = 13
    fMatch = 14
    #: a compound node is shared (used more than once)
    fGraph = 15
    #: a let binds a function that refers to the let's own variable
    fLetRec = 16


_NODE_FEATURE: dict[type, Feature] = {
    Var: Feature.fVar, GlobalVar: Feature.fGlobalVar, Constant: Feature.fConstant,
    Tuple: Feature.fTuple, TupleGetItem: Feature.fTupleGetItem, Function: Feature.fFunction,
    Op: Feature.fOp, Call: Feature.fCall, Let: Feature.fLet, If: Feature.fIf,
    RefCreate: Feature.fRefCreate, RefRead: Feature.fRefRead, RefWrite: Feature.fRefWrite,
    Constructor: Feature.fConstructor, Match: Feature.fMatch,
}


@dataclass(frozen=True, slots=True)
class FeatureSet:
    """An immutable set of features (``in``, ``|``, ``-``, iteration in
    declaration order)."""

    features: frozenset[Feature] = frozenset()

    @staticmethod
    def of(features: Iterable[Feature]) -> FeatureSet:
        return FeatureSet(frozenset(features))

    @staticmethod
    def all() -> FeatureSet:
        return FeatureSet(frozenset(Feature))

    @staticmethod
    def none() -> FeatureSet:
        return FeatureSet()

    def __contains__(self, f: object) -> bool:
        return f in self.features

    def __iter__(self) -> Iterator[Feature]:
        return iter(sorted(self.features, key=lambda f: f.value))

    def __len__(self) -> int:
        return len(self.features)

    def __or__(self, other: FeatureSet | Iterable[Feature]) -> FeatureSet:
        return FeatureSet(self.features | _features(other))

    __add__ = __or__

    def __sub__(self, other: FeatureSet | Iterable[Feature]) -> FeatureSet:
        return FeatureSet(self.features - _features(other))

    def is_subset_of(self, other: FeatureSet | Iterable[Feature]) -> bool:
        return self.features <= _features(other)

    def __repr__(self) -> str:
        return "FeatureSet(" + ", ".join(f.name for f in self) + ")"


def _features(x: FeatureSet | Iterable[Feature]) -> frozenset[Feature]:
    return x.features if isinstance(x, FeatureSet) else frozenset(x)


def _is_primitive(e: Expr) -> bool:
    # FuseOps' marker (aot.passes.fuse_ops.PRIMITIVE_ATTRS); the IR layer
    # does not import the passes.
    return isinstance(e, Function) and bool(e.attrs.get("Primitive", 0))


def _atomic(e: Expr) -> bool:
    return isinstance(e, (Var, GlobalVar, Op, Constructor, Constant)) or _is_primitive(e)


class _Detector(ExprVisitor):
    def __init__(self) -> None:
        super().__init__()
        self.found: set[Feature] = set()
        self.seen: set[Expr] = set()

    def _note(self, node: Expr) -> None:
        self.found.add(_NODE_FEATURE[type(node)])

    def _leaf(self, node: Expr) -> None:
        self._note(node)

    visit_var = visit_global_var = visit_constant = visit_op = visit_constructor = _leaf

    def _walk(self, node: Expr) -> Visit:
        self._note(node)
        if _is_primitive(node):
            return
        for c in children(node):
            if c in self.seen:
                if not _atomic(c):
                    self.found.add(Feature.fGraph)
                continue
            self.seen.add(c)
            yield c

    visit_tuple = visit_tuple_getitem = visit_call = visit_function = _walk
    visit_let = visit_if = visit_match = _walk
    visit_ref_create = visit_ref_read = visit_ref_write = _walk


def _detect_expr(expr: Expr) -> set[Feature]:
    d = _Detector()
    d.seen.add(expr)
    d.visit(expr)
    if Feature.fLet in d.found and recursive_lets(expr):
        d.found.add(Feature.fLetRec)
    return d.found


def detect_feature(x: Expr | IRModule, mod: IRModule | None = None) -> FeatureSet:
    """The features used by an expression or by every global function of a
    module (``detect_feature(expr, mod)``: both, as in Relay)."""
    found: set[Feature] = set()
    for item in (x, mod):
        if item is None:
            continue
        if isinstance(item, IRModule):
            for fn in item.functions.values():
                found |= _detect_expr(fn)
        else:
            found |= _detect_expr(item)
    return FeatureSet.of(found)


def check_feature(x: Expr | IRModule, allowed: FeatureSet | Iterable[Feature]) -> None:
    """AssertionError naming the features of ``x`` outside ``allowed`` (for
    passes that require a normal form)."""
    extra = detect_feature(x) - allowed
    assert not extra.features, f"unexpected features: {', '.join(f.name for f in extra)}"
