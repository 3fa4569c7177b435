"""The residual program: let blocks while evaluating, and the cleanup after.

While the evaluator runs, residual code accumulates in a :class:`Block`: an
ordered list of ``let`` bindings whose values take only atoms as operands
(A-normal form), plus the keys of the shared-node memo entries made in the
block, forgotten when the block closes (their variables go out of scope).
A branch of a dynamic ``if``/``match`` and the body of a residual function
are blocks of their own.

The evaluator binds eagerly (every static tuple, ADT cell and function
literal gets its residual binding the moment it is created, in case the
value is needed at run time), so most bindings end up dead.
:func:`clean` removes them, with dead-code-elimination semantics of our
own (the pass does not depend on a separate DCE pass):

* a ``let`` whose variable is unused goes when its value is *pure*:
  anything but a call of a function value (a global, a closure: it may
  write references or not terminate) and a write to a live reference.
  Operator calls count as pure, as in Relay's DCE, although one may fail
  on its data; so do ``match?`` expressions that may find no clause;
* a reference that is only ever written (every use of its variable is
  the target of a ``ref_write``) is never observed: its writes and its
  creation go too (repeated while it finds more: a reference read only by
  a dead binding is write-only once that binding has gone);
* ``let %x = e; %x`` becomes ``e``.

Both walks are iterative (the memoised trampoline of
:mod:`aot.ir.visitor`; a ``let`` chain is processed as one loop), so
10,000-deep chains are fine.
"""

from __future__ import annotations

from typing import Any

from ...ir.analysis import FreeVarSets
from ...ir.adt import Constructor
from ...ir.expr import (Call, Expr, Function, Let, Match, Op, RefCreate, RefWrite, Var)
from ...ir.visitor import ExprFunctor, ExprMutator, Visit, children, post_order

__all__ = ["Block", "clean"]


class Block:
    """Residual bindings in evaluation order, and the shared-node memo
    keys recorded while they were made."""

    __slots__ = ("bindings", "memo_keys")

    def __init__(self) -> None:
        self.bindings: list[tuple[Var, Expr]] = []
        self.memo_keys: list[Any] = []

    def finish(self, result: Expr) -> Expr:
        """The block as a ``let`` chain ending in ``result``."""
        out = result
        for var, value in reversed(self.bindings):
            out = Let(var, value, out, span=value.span)
        return out


# ------------------------------------------------------------------ cleanup

def clean(func: Function) -> Function:
    """``func`` without dead bindings and unobservable references."""
    write_only = _write_only_refs(func)
    out = _DeadLets(write_only).visit(func)
    assert isinstance(out, Function)
    while True:
        # a reference read only by a dead binding (the residual function of
        # a closure that was unfolded everywhere) is write-only once that
        # binding is gone: again until nothing more goes
        more = _write_only_refs(out)
        if more <= write_only:
            return out
        write_only = more
        out = _DeadLets(write_only).visit(out)
        assert isinstance(out, Function)


def _uses(node: Expr) -> list[tuple[Expr, bool]]:
    """The sub-expressions ``node`` uses (binding occurrences excluded),
    each with whether it is the target of a ``ref_write``."""
    if isinstance(node, RefWrite):
        return [(node.ref, True), (node.value, False)]
    if isinstance(node, Let):
        return [(node.value, False), (node.body, False)]
    if isinstance(node, Function):
        return [(node.body, False)]
    if isinstance(node, Match):
        return [(node.data, False)] + [(c.rhs, False) for c in node.clauses]
    return [(c, False) for c in children(node)]


def _write_only_refs(func: Function) -> frozenset[Var]:
    """Variables bound to ``ref(...)`` whose every use is as the target of
    a ``ref_write``: nobody can observe what is written to them."""
    created: set[Var] = set()
    observed: set[Var] = set()
    for node in post_order(func):
        if isinstance(node, Let) and isinstance(node.value, RefCreate):
            created.add(node.var)
        for child, is_target in _uses(node):
            if isinstance(child, Var) and not is_target:
                observed.add(child)
    return frozenset(created - observed)


class _Impure(ExprFunctor[bool]):
    """memo[node] = evaluating node may have an effect that matters: call
    a function value or write a live reference.  Creating a closure has
    none (its body is not entered)."""

    def __init__(self, write_only: frozenset[Var]) -> None:
        super().__init__()
        self.write_only = write_only

    def _pure(self, node: Expr) -> bool:
        return False

    visit_var = visit_global_var = visit_constant = visit_op = visit_constructor = _pure
    visit_function = _pure

    def _any(self, node: Expr) -> Visit:
        for child, _ in _uses(node):
            if (yield child):
                return True
        return False

    visit_tuple = visit_tuple_getitem = visit_if = visit_match = visit_let = _any
    visit_ref_create = visit_ref_read = _any

    def visit_call(self, node: Call) -> Visit:
        if not isinstance(node.op, (Op, Constructor)):
            return True
        return (yield from self._any(node))

    def visit_ref_write(self, node: RefWrite) -> Visit:
        if not (isinstance(node.ref, Var) and node.ref in self.write_only):
            return True
        return (yield node.value)


class _DeadLets(ExprMutator):
    def __init__(self, write_only: frozenset[Var]) -> None:
        super().__init__()
        self.free = FreeVarSets()
        self.impure = _Impure(write_only)

    def visit_let(self, node: Let) -> Visit:
        chain: list[Let] = []
        e: Expr = node
        while isinstance(e, Let):
            chain.append(e)
            e = e.body
        values = []
        for let in chain:
            values.append((yield let.value))
        out = yield e
        live = set(self.free.visit(out))
        for let, value in zip(reversed(chain), reversed(values)):
            if let.var not in live and not self.impure.visit(value):
                continue
            free = self.free.visit(value)
            if out is let.var and let.var not in free and not isinstance(value, Op):
                out = value                     # let %x = e; %x  ->  e (a bare
                                                # operator would lose its type)
            else:
                out = Let(let.var, value, out, span=let.span)
            live |= free
        return out
