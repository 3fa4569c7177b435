"""Small analyses over expressions: free and bound variables, type
variables, global references, local recursion.  All are linear, iterative
walks built on :mod:`aot.ir.visitor` (Relay's names: ``free_vars``,
``bound_vars``, ``all_vars``, ``free_type_vars``, ``bound_type_vars``,
``all_type_vars``).

Type variables are read where an expression *states* types: variable
annotations, a function's type parameters (which bind) and return type,
a call's type arguments, and -- given the module -- the type parameters of
the data type a constructor belongs to (bound there, as in Relay).
Checked types are not read: after type inference every variable's
annotation is its checked type anyway.
"""

from __future__ import annotations

from typing import Callable

from .adt import Constructor, pattern_vars
from .expr import Call, Expr, Function, GlobalVar, Let, Match, Var
from .module import IRModule
from .types import FuncType, Type, TypeVar, type_children
from .visitor import ExprFunctor, ExprVisitor, Visit, children, post_order

__all__ = [
    "bound_vars", "free_vars", "all_vars", "global_refs", "binding_sites",
    "FreeVarSets", "free_vars_by_node",
    "free_type_vars", "bound_type_vars", "all_type_vars",
    "let_function_refs", "recursive_lets",
]


def _vars_and_binders(expr: Expr) -> tuple[list[Var], set[Var]]:
    """Every variable of ``expr`` in order of first occurrence (a binding
    site counts: a parameter comes before the body, a let's variable before
    its value, a pattern's variables before the clause's right-hand side),
    and the set of those bound inside ``expr``."""
    nodes = post_order(expr)
    return [n for n in nodes if isinstance(n, Var)], set(_binding_sites(nodes))


def _binding_sites(nodes: list[Expr]) -> list[Var]:
    out: list[Var] = []
    for node in nodes:
        if isinstance(node, Let):
            out.append(node.var)
        elif isinstance(node, Function):
            out.extend(node.params)
        elif isinstance(node, Match):
            for clause in node.clauses:
                out.extend(pattern_vars(clause.lhs))
    return out


def binding_sites(expr: Expr) -> list[Var]:
    """The variable of every binding site inside ``expr`` (let, function
    parameters, match patterns), in post-order of the binders; a variable
    bound at two sites appears twice."""
    return _binding_sites(post_order(expr))


def bound_vars(expr: Expr) -> list[Var]:
    """Variables bound inside ``expr`` (let, parameters, patterns), in
    order of first occurrence."""
    order, binders = _vars_and_binders(expr)
    return [v for v in order if v in binders]


def free_vars(expr: Expr) -> list[Var]:
    """Variables used in ``expr`` but not bound in it, in order of first
    use."""
    order, binders = _vars_and_binders(expr)
    return [v for v in order if v not in binders]


def all_vars(expr: Expr) -> list[Var]:
    """Every variable of ``expr``, bound or free, each once, in order of
    first occurrence."""
    return _vars_and_binders(expr)[0]


def global_refs(expr: Expr) -> list[GlobalVar]:
    """Global functions referenced from ``expr``, in order of first use."""
    return [n for n in post_order(expr) if isinstance(n, GlobalVar)]


# ------------------------------------------------- free variables per node

_EMPTY: frozenset[Var] = frozenset()


class FreeVarSets(ExprFunctor[frozenset[Var]]):
    """``memo[node]`` = the free variables of ``node`` (a frozenset), for
    every node visited: bottom-up, one visit per node however shared.

    A binder removes its variables from its scope: a function its
    parameters from its body, a match pattern its variables from the
    clause's right-hand side, a let its variable from its body and -- when
    the value is a function (a recursive let) -- from its value.  A let
    whose value is not a function does not bind its variable in the value,
    so such a use stays free (that is a use out of scope).

    ``closed(function)`` true: the function is taken as closed (empty set)
    and not entered (e.g. primitive functions)."""

    def __init__(self, closed: Callable[[Function], bool] | None = None) -> None:
        super().__init__()
        self.closed = closed

    def visit_var(self, node: Var) -> frozenset[Var]:
        return frozenset((node,))

    def _none(self, node: Expr) -> frozenset[Var]:
        return _EMPTY

    visit_global_var = visit_constant = visit_op = visit_constructor = _none

    def _union(self, node: Expr) -> Visit:
        out = _EMPTY
        for c in children(node):
            out = out | (yield c)
        return out

    visit_tuple = visit_tuple_getitem = visit_call = visit_if = _union
    visit_ref_create = visit_ref_read = visit_ref_write = _union

    def visit_function(self, node: Function) -> Visit:
        if self.closed is not None and self.closed(node):
            return _EMPTY
        body = yield node.body
        return body - frozenset(node.params)

    def visit_let(self, node: Let) -> Visit:
        value = yield node.value
        body = yield node.body
        if isinstance(node.value, Function):      # a recursive let
            value = value - {node.var}
        return value | (body - {node.var})

    def visit_match(self, node: Match) -> Visit:
        out = yield node.data
        for clause in node.clauses:
            rhs = yield clause.rhs
            out = out | (rhs - frozenset(pattern_vars(clause.lhs)))
        return out


def free_vars_by_node(expr: Expr,
                      closed: Callable[[Function], bool] | None = None,
                      ) -> dict[Expr, frozenset[Var]]:
    """The free variables of every node of ``expr`` (see
    :class:`FreeVarSets`; unordered sets, where :func:`free_vars` gives the
    free variables of one expression in order of first use)."""
    sets = FreeVarSets(closed)
    sets.visit(expr)
    return sets.memo


# ------------------------------------------------------------ type variables

def _type_occurrences(t: Type | None, out: list[TypeVar], bound: list[TypeVar]) -> None:
    """Append every TypeVar of ``t`` to ``out`` and those bound by a
    function type inside it to ``bound`` (types are shallow: an explicit
    stack, no recursion)."""
    if t is None:
        return
    stack: list[Type] = [t]
    while stack:
        node = stack.pop()
        if isinstance(node, TypeVar):
            out.append(node)
            continue
        if isinstance(node, FuncType):
            out.extend(node.type_params)
            bound.extend(node.type_params)
        stack.extend(reversed(type_children(node)))


class _TypeVarCollector(ExprVisitor):
    """Type variables in the order Relay's visitor meets them: a
    function's type parameters, its parameters' annotations, its return
    type, then its body; a call's callee, type arguments, then arguments."""

    def __init__(self, mod: IRModule | None) -> None:
        super().__init__()
        self.mod = mod
        self.out: list[TypeVar] = []
        self.bound: list[TypeVar] = []

    def _bind(self, tvs: tuple[TypeVar, ...]) -> None:
        self.out.extend(tvs)
        self.bound.extend(tvs)

    def visit_var(self, node: Var) -> None:
        _type_occurrences(node.type_annotation, self.out, self.bound)

    def visit_constructor(self, node: Constructor) -> None:
        if self.mod is not None and node.belong_to in self.mod.type_definitions:
            self._bind(self.mod.type_definitions[node.belong_to].type_vars)

    def visit_function(self, node: Function) -> Visit:
        self._bind(node.type_params)
        for p in node.params:
            yield p
        _type_occurrences(node.ret_type, self.out, self.bound)
        yield node.body

    def visit_call(self, node: Call) -> Visit:
        yield node.op
        for t in node.type_args:
            _type_occurrences(t, self.out, self.bound)
        for a in node.args:
            yield a


def _type_vars(x: Expr | Type, mod: IRModule | None) -> tuple[list[TypeVar], list[TypeVar]]:
    """(every occurrence, bound occurrences) of type variables in ``x``."""
    if isinstance(x, Type):
        out: list[TypeVar] = []
        bound: list[TypeVar] = []
        _type_occurrences(x, out, bound)
        return out, bound
    collector = _TypeVarCollector(mod)
    collector.visit(x)
    return collector.out, collector.bound


def _unique(tvs: list[TypeVar]) -> list[TypeVar]:
    return list(dict.fromkeys(tvs))


def all_type_vars(x: Expr | Type, mod: IRModule | None = None) -> list[TypeVar]:
    """Every type variable occurring in ``x`` (an expression or a type),
    bound or free, each once, in order of first occurrence."""
    return _unique(_type_vars(x, mod)[0])


def bound_type_vars(x: Expr | Type, mod: IRModule | None = None) -> list[TypeVar]:
    """Type variables bound in ``x``: a function's type parameters, a
    function type's parameters and (with ``mod``) the parameters of the
    data types whose constructors ``x`` uses."""
    return _unique(_type_vars(x, mod)[1])


def free_type_vars(x: Expr | Type, mod: IRModule | None = None) -> list[TypeVar]:
    """Type variables occurring in ``x`` but bound nowhere in it.  (Like
    Relay, binding is by variable, not by position: a variable bound
    anywhere in ``x`` is not free anywhere in it.)"""
    occurrences, bound = _type_vars(x, mod)
    skip = set(bound)
    return [tv for tv in _unique(occurrences) if tv not in skip]


# ------------------------------------------------------------ local recursion

_NONE: frozenset[Var] = frozenset()


class _LetFunctionRefs(ExprFunctor[frozenset[Var]]):
    """memo[node] = variables of let-bound functions that ``node`` refers
    to outside the let binding them.  Only lets whose value is a function
    are tracked: they are the only ones that may refer to themselves, and
    keeping the sets that small keeps a 10,000-deep let chain linear."""

    def __init__(self) -> None:
        super().__init__()
        self.tracked: set[Var] = set()

    def visit_var(self, node: Var) -> frozenset[Var]:
        return frozenset((node,)) if node in self.tracked else _NONE

    def _leaf(self, node: Expr) -> frozenset[Var]:
        return _NONE

    visit_global_var = visit_constant = visit_op = visit_constructor = _leaf

    def _union(self, node: Expr) -> Visit:
        out = _NONE
        for c in children(node):
            refs = yield c
            if refs:
                out = out | refs
        return out

    visit_tuple = visit_tuple_getitem = visit_call = visit_if = visit_function = _union
    visit_match = visit_ref_create = visit_ref_read = visit_ref_write = _union

    def visit_let(self, node: Let) -> Visit:
        if isinstance(node.value, Function):
            self.tracked.add(node.var)
        value = yield node.value
        body = yield node.body
        out = value | body if value and body else value or body
        return out - {node.var} if node.var in out else out


def let_function_refs(expr: Expr) -> dict[Expr, frozenset[Var]]:
    """For each node of ``expr`` that refers to the variable of a
    let-bound function (``let %f = fn ...``) from outside that let, the set
    of such variables (nodes that refer to none are left out).  A let whose
    function refers to its own variable is a local recursion."""
    v = _LetFunctionRefs()
    v.visit(expr)
    return {node: refs for node, refs in v.memo.items() if refs}


def recursive_lets(expr: Expr) -> list[Let]:
    """The lets of ``expr`` binding a function that calls itself through
    the let's variable (``let %f = fn (...) { ... %f ... }``), in
    post-order."""
    refs = let_function_refs(expr)
    return [n for n in post_order(expr)
            if isinstance(n, Let) and n.var in refs.get(n.value, _NONE)]
