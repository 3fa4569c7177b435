"""The scope tree of a graph-form function body: where each shared node
must be evaluated.  Shared by ToANormalForm and ToBasicBlockNormalForm.

Design note
-----------
After Relay's ``DependencyGraph`` + ``CalcScope``
(``src/relay/analysis/dependency_graph.cc``,
``src/relay/transforms/to_a_normal_form.cc``).

*Blocks.*  A function body is a tree of blocks -- code that runs as a unit
or not at all: the body itself, each branch of an ``if``, each clause of a
``match`` and the body of each nested function open a new block, a child
of the block they appear in.  With ``let_scopes`` (basic block form), the
body of every ``let`` also opens a *scope* that is not a block: the place,
inside the block, just after the let's variable is bound.  Bindings are
later inserted at the start of a scope, so a binding that uses a let
variable must live in the scope of that let's body.

*Scopes of nodes.*  A compound node gets the lowest common ancestor (LCA)
of the scopes it is used from -- the deepest scope that encloses every use,
so binding the node at the start of that scope (or, in A-normal form,
where it is first reached in that scope) dominates every use.  The scope
of a use is the scope of the user, or the sub-scope it opens for that
child (the branch, clause, function body or let body).  Nodes are visited
parents first (reverse post-order of the DAG), so all uses of a node are
known when it is reached; the LCA climbs by level (a chain costs O(1) per
node).  A node whose uses lie in more than one block is *shared across
blocks* (:attr:`ScopeTree.across`).

Variables need no scope: a node using a variable bound by a parameter, a
pattern or a let is used only inside that binder's scope (the program is
well formed), so its LCA is inside that scope too.  The exception is a
recursive let, ``let %f = fn ... { N(%f) ... }; ... N(%f) ...``: a node
that refers to ``%f`` and is shared between the function body and the
let's body would be placed outside the function, i.e. before ``%f`` is
bound, and no placement is right.  :attr:`ScopeTree.conflicts` names
those lets; :func:`separate_recursive_functions` replaces each such
function by a fresh copy (new nodes and new bound variables, internal
sharing kept), after which the function shares nothing with its
surroundings.  Relay does not handle this case.

*Atoms* have no scope and are never bound: variables, globals, operators,
constructors, primitive functions (FuseOps' kernels stay in call position)
and, when ``constants_atomic``, constants.

:class:`ScopedRebuild` is the common half of both passes: an iterative
functor (the trampoline of :mod:`aot.ir.visitor`) that rebuilds each
compound node from its children's results, wraps each block in the
bindings collected for it, and leaves to subclasses whether a node is
bound (:meth:`ScopedRebuild.finish`) and what a ``let`` becomes.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Generator

from ..ir.adt import pattern_vars
from ..ir.analysis import let_function_refs
from ..ir.expr import (Call, Constant, Expr, Function, If, Let, Match, RefCreate, RefRead,
                       RefWrite, Tuple, TupleGetItem, Var)
from ..ir.normal_form import SAME_BLOCK, block_edges, is_atom
from ..ir.normal_form import is_primitive_function as is_primitive
from ..ir.types import Type
from ..ir.visitor import ExprFunctor, ExprMutator, ExprVisitor, Visit, rebuild

__all__ = ["Scope", "ScopeTree", "ScopedRebuild", "build_scope_tree",
           "separate_recursive_functions"]


class Scope:
    """A node of the scope tree, with the bindings collected for it."""

    __slots__ = ("parent", "level", "block", "bindings", "_wrapped")

    def __init__(self, parent: Scope | None, is_block: bool) -> None:
        self.parent = parent
        self.level = 0 if parent is None else parent.level + 1
        #: the block this scope belongs to (itself when it is a block)
        self.block: Scope = self if is_block or parent is None else parent.block
        self.bindings: list[tuple[Var, Expr]] = []
        self._wrapped = False

    def child(self, is_block: bool) -> Scope:
        return Scope(self, is_block)

    def within(self, other: Scope) -> bool:
        """``self`` is ``other`` or lies inside it."""
        s: Scope | None = self
        while s is not None and s.level > other.level:
            s = s.parent
        return s is other

    def bind(self, value: Expr, hint: str = "x") -> Var:
        """A new variable bound to ``value`` at the end of this scope's
        bindings (typed like ``value`` when ``value`` is typed)."""
        t = value.checked_type
        var = Var(hint, t, span=value.span, checked_type=t)
        self.bindings.append((var, value))
        return var

    def wrap(self, body: Expr, body_type: Type | None) -> Expr:
        """``body`` under this scope's bindings, in order (once)."""
        assert not self._wrapped, "a scope is wrapped once"
        self._wrapped = True
        for var, value in reversed(self.bindings):
            body = Let(var, value, body, span=value.span, checked_type=body_type)
        return body


def lca(a: Scope, b: Scope) -> Scope:
    while a is not b:
        if a.level > b.level:
            a = a.parent  # type: ignore[assignment]
        elif b.level > a.level:
            b = b.parent  # type: ignore[assignment]
        else:
            a = a.parent  # type: ignore[assignment]
            b = b.parent  # type: ignore[assignment]
    return a


def _sub_scopes(node: Expr, scope: Scope, let_scopes: bool) -> tuple[Scope, ...]:
    if isinstance(node, If):
        return (scope.child(True), scope.child(True))
    if isinstance(node, Match):
        return tuple(scope.child(True) for _ in node.clauses)
    if isinstance(node, Function):
        return (scope.child(True),)
    if isinstance(node, Let) and let_scopes:
        return (scope.child(False),)
    return ()


class _CompoundOrder(ExprVisitor):
    """Compound nodes in post-order, not entering primitive functions."""

    def __init__(self, constants_atomic: bool, let_scopes: bool) -> None:
        super().__init__()
        self.constants_atomic = constants_atomic
        self.let_scopes = let_scopes
        self.order: list[Expr] = []

    def _leaf(self, node: Expr) -> None:
        if not is_atom(node, constants=self.constants_atomic):
            self.order.append(node)

    visit_var = visit_global_var = visit_op = visit_constructor = visit_constant = _leaf

    def _walk(self, node: Expr) -> Visit:
        if is_atom(node, constants=self.constants_atomic):
            return
        for child, _ in block_edges(node, let_body_scope=self.let_scopes):
            yield child
        self.order.append(node)

    visit_tuple = visit_tuple_getitem = visit_call = visit_function = _walk
    visit_let = visit_if = visit_match = _walk
    visit_ref_create = visit_ref_read = visit_ref_write = _walk


@dataclasses.dataclass(eq=False)
class ScopeTree:
    """Scopes of the compound nodes of one function body."""

    root: Scope
    #: the scope of every compound node
    scope: dict[Expr, Scope]
    #: the sub-scopes a node opens (if: then, else; match: one per clause;
    #: function: its body; let with ``let_scopes``: its body)
    subs: dict[Expr, tuple[Scope, ...]]
    #: compound nodes used from more than one block
    across: set[Expr]
    #: recursive lets whose function shares a node referring to the let's
    #: variable with the code around it (see the design note)
    conflicts: list[Let]
    #: lets binding a function that refers to the let's own variable
    recursive: set[Let]

    @staticmethod
    def build(body: Expr, *, constants_atomic: bool, let_scopes: bool) -> ScopeTree:
        walker = _CompoundOrder(constants_atomic, let_scopes)
        walker.visit(body)
        order = walker.order
        refs = let_function_refs(body)
        recursive: dict[Var, Let] = {}
        for node in order:
            if isinstance(node, Let) and node.var in refs.get(node.value, ()):
                recursive[node.var] = node
        root = Scope(None, True)
        scope: dict[Expr, Scope] = {}
        subs: dict[Expr, tuple[Scope, ...]] = {}
        across: set[Expr] = set()
        incoming: dict[Expr, Scope] = {}
        first_block: dict[Expr, Scope] = {}
        # scopes a node referring to a recursive let's variable is used from
        uses: dict[Expr, list[Scope]] = {}
        for node in reversed(order):
            s = incoming.pop(node, None)
            if s is None:
                assert node is body, "every node but the root has a user"
                s = root
            scope[node] = s
            sub = _sub_scopes(node, s, let_scopes)
            if sub:
                subs[node] = sub
            for child, kind in block_edges(node, let_body_scope=let_scopes):
                if is_atom(child, constants=constants_atomic):
                    continue
                edge = s if kind == SAME_BLOCK else sub[kind]
                seen = incoming.get(child)
                incoming[child] = edge if seen is None else lca(seen, edge)
                block = first_block.setdefault(child, edge.block)
                if block is not edge.block:
                    across.add(child)
                if recursive and child in refs:
                    uses.setdefault(child, []).append(edge)
        conflicts: list[Let] = []
        for node, edges in uses.items():
            for var in refs[node]:
                let = recursive.get(var)
                if let is None or let in conflicts:
                    continue
                inner = subs[let.value][0]
                if not scope[node].within(inner) and any(e.within(inner) for e in edges):
                    conflicts.append(let)
        return ScopeTree(root, scope, subs, across, conflicts, set(recursive.values()))


def build_scope_tree(body: Expr, *, constants_atomic: bool, let_scopes: bool
                     ) -> tuple[Expr, ScopeTree]:
    """The scope tree of ``body``, after separating the recursive
    functions that conflict (``body`` is returned, possibly rebuilt)."""
    while True:
        tree = ScopeTree.build(body, constants_atomic=constants_atomic, let_scopes=let_scopes)
        if not tree.conflicts:
            return body, tree
        body = separate_recursive_functions(body, tree.conflicts)


# ------------------------------------------------------------ fresh copies

class _FreshCopy(ExprMutator):
    """A copy sharing no compound node and no bound variable with the
    original; sharing inside it is kept."""

    def _fresh(self, v: Var) -> None:
        self.memo[v] = Var(v.name_hint, v.type_annotation, span=v.span,
                           checked_type=v.checked_type)

    def _copy(self, node: Expr, out: Expr) -> Expr:
        return dataclasses.replace(node) if out is node else out

    def _compound(self, node: Expr) -> Visit:
        out = yield from getattr(ExprMutator, _VISIT[type(node)])(self, node)
        return self._copy(node, out)

    visit_tuple = visit_tuple_getitem = visit_call = visit_if = _compound
    visit_ref_create = visit_ref_read = visit_ref_write = _compound

    def visit_function(self, node: Function) -> Visit:
        if is_primitive(node):
            return node
        for p in node.params:
            self._fresh(p)
        return (yield from self._compound(node))

    def visit_let(self, node: Let) -> Visit:
        self._fresh(node.var)
        return (yield from self._compound(node))

    def visit_match(self, node: Match) -> Visit:
        for clause in node.clauses:
            for v in pattern_vars(clause.lhs):
                self._fresh(v)
        return (yield from self._compound(node))


_VISIT = {Tuple: "visit_tuple", TupleGetItem: "visit_tuple_getitem", Call: "visit_call",
          If: "visit_if", RefCreate: "visit_ref_create", RefRead: "visit_ref_read",
          RefWrite: "visit_ref_write", Function: "visit_function", Let: "visit_let",
          Match: "visit_match"}


class _Separate(ExprMutator):
    def __init__(self, lets: list[Let]) -> None:
        super().__init__()
        self.lets = set(lets)

    def visit_let(self, node: Let) -> Visit:
        if node not in self.lets:
            return (yield from super().visit_let(node))
        value = _FreshCopy().visit(node.value)
        body = yield node.body
        return rebuild(node, value=value, body=body)


def separate_recursive_functions(body: Expr, lets: list[Let]) -> Expr:
    """``body`` with the function of each let in ``lets`` replaced by a
    fresh copy (see the design note)."""
    return _Separate(lets).visit(body)


# ------------------------------------------------------------ rebuilding

Build = Generator[Expr, Any, Expr]


class ScopedRebuild(ExprFunctor[Expr]):
    """Rebuilds a body over a :class:`ScopeTree`; ``memo[node]`` is what
    replaces ``node`` (a variable when it was bound).  Subclasses define
    :meth:`finish` and :meth:`visit_let`."""

    def __init__(self, tree: ScopeTree) -> None:
        super().__init__()
        self.tree = tree

    def run(self, body: Expr) -> Expr:
        return self.tree.root.wrap(self.visit(body), body.checked_type)

    def finish(self, node: Expr, built: Expr) -> Expr:
        """The replacement of compound ``node``, rebuilt as ``built``."""
        raise NotImplementedError

    def _atom(self, node: Expr) -> Expr:
        return node

    visit_var = visit_global_var = visit_op = visit_constructor = _atom

    def visit_constant(self, node: Constant) -> Expr:
        if node in self.tree.scope:
            return self.finish(node, node)
        return node

    def block(self, expr: Expr, scope: Scope) -> Build:
        """``expr`` rebuilt as the whole of the block (or let body)
        ``scope``: under the bindings collected for it."""
        out = yield expr
        return scope.wrap(out, expr.checked_type)

    def build(self, node: Expr) -> Build:
        """``node`` rebuilt from its children's replacements (not bound)."""
        if isinstance(node, Constant):
            return node
        if isinstance(node, Call):
            fn = yield node.op
            args = []
            for a in node.args:
                args.append((yield a))
            return rebuild(node, op=fn, args=tuple(args))
        if isinstance(node, Tuple):
            fields = []
            for f in node.fields:
                fields.append((yield f))
            return rebuild(node, fields=tuple(fields))
        if isinstance(node, TupleGetItem):
            return rebuild(node, tuple_value=(yield node.tuple_value))
        if isinstance(node, Function):
            body = yield from self.block(node.body, self.tree.subs[node][0])
            return rebuild(node, body=body)
        if isinstance(node, If):
            then_scope, else_scope = self.tree.subs[node]
            cond = yield node.cond
            then = yield from self.block(node.true_branch, then_scope)
            else_ = yield from self.block(node.false_branch, else_scope)
            return rebuild(node, cond=cond, true_branch=then, false_branch=else_)
        if isinstance(node, Match):
            data = yield node.data
            clauses = []
            for clause, scope in zip(node.clauses, self.tree.subs[node]):
                rhs = yield from self.block(clause.rhs, scope)
                clauses.append(rebuild(clause, rhs=rhs))
            return rebuild(node, data=data, clauses=tuple(clauses))
        if isinstance(node, RefCreate):
            return rebuild(node, value=(yield node.value))
        if isinstance(node, RefRead):
            return rebuild(node, ref=(yield node.ref))
        if isinstance(node, RefWrite):
            ref = yield node.ref
            value = yield node.value
            return rebuild(node, ref=ref, value=value)
        raise AssertionError(f"not a compound node: {type(node).__name__}")

    def _compound(self, node: Expr) -> Visit:
        built = yield from self.build(node)
        return self.finish(node, built)

    visit_call = visit_tuple = visit_tuple_getitem = visit_if = visit_match = _compound
    visit_ref_create = visit_ref_read = visit_ref_write = _compound

    def visit_function(self, node: Function) -> Visit:
        if is_primitive(node):
            return node
        return (yield from self._compound(node))

    def let_function(self, node: Let) -> Build:
        """The function of a recursive let, rebuilt in place (never bound
        to another variable: it refers to the let's own); its other uses
        become the let's variable."""
        value = node.value
        assert node in self.tree.recursive and value not in self.memo
        built = yield from self.build(value)
        self.memo[value] = node.var
        return built
