"""DeadCodeElimination: drop bindings nobody uses and globals nobody calls.

Design note
-----------
As Relay's ``DeadCodeElimination`` (``src/relay/transforms/dead_code.cc``),
in two walks over each global function, both on the iterative trampoline
of :mod:`aot.ir.visitor` (a 10,000-deep let chain is one loop, not 10,000
frames):

1. **Count uses.**  A let chain is walked body first, then its bindings
   from the last to the first; a binding's value is walked only if its
   variable has been used by then (by the body, by a later live binding,
   or by itself through a live recursive closure) or if the value cannot
   be dropped.  So a chain of dead bindings that only feed each other
   (``let %a = %p; let %b = %a; 0``) is dead in one walk, and uses inside
   dead values never count.  Each node is visited once (memoised), and a
   use is counted on the edge from the using node, so a shared node (a
   graph binding, evaluated once) counts its uses once.
2. **Rebuild.**  A binding whose variable has no use is dropped when
   evaluating its value cannot be observed: the value is *pure* in the
   sense of :mod:`aot.passes.to_graph_normal_form` (no reference
   operation, no call of anything but an operator or a constructor, no
   function literal inside) or it is a function literal itself (making a
   closure has no effect).  Bindings of effects -- ``ref_write``,
   ``ref_read``, calls of globals or closures, which may have effects or
   diverge -- stay, used or not.  Dropped, like Relay, are pure operator
   calls that would fail at run time on their data (an out-of-range
   ``take``): a dead computation is not run.

   With ``inline_once``, a pure binding used exactly once, and not from
   inside a function literal nested in its scope (that use may run many
   times, or never, and Relay does not cross function boundaries either),
   is substituted into its use: ``let %x = f(%a); g(%x)`` -> ``g(f(%a))``.

Global functions not reachable from ``entry`` through global references
are dropped, unless ``keep_globals``; a module without ``entry`` keeps all
of its globals (a library of functions has no root to measure from).
Type definitions are kept.  Types stay correct without re-inference: a
dropped binding changes no type, a substituted variable is replaced by a
value of its own type.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..ir.expr import Expr, Function, GlobalVar, Let, Match, Var
from ..ir.module import IRModule
from ..ir.visitor import ExprFunctor, ExprMutator, Visit, children
from .manager import register_pass
from .to_graph_normal_form import is_pure

__all__ = ["DeadCodeOptions", "dead_code_elimination", "eliminate_dead_code_expr",
           "reachable_globals", "removable"]


@dataclass(frozen=True)
class DeadCodeOptions:
    """``entry``: the root for unreachable globals; ``keep_globals``: keep
    every global; ``inline_once``: substitute pure bindings used once."""

    entry: str = "main"
    keep_globals: bool = False
    inline_once: bool = False


def removable(value: Expr) -> bool:
    """Evaluating ``value`` has no observable effect (so an unused binding
    of it can go)."""
    return isinstance(value, Function) or is_pure(value)


def _let_chain(node: Let) -> tuple[list[Let], Expr]:
    chain: list[Let] = []
    e: Expr = node
    while isinstance(e, Let):
        chain.append(e)
        e = e.body
    return chain, e


# --------------------------------------------------------------- 1. uses

class _Uses(ExprFunctor[None]):
    """``uses[v]``: the number of live edges to ``v``; ``use_fn[v]`` and
    ``bind_fn[v]``: the innermost function literal around the (last) use
    and around the binding of let variable ``v``."""

    def __init__(self) -> None:
        super().__init__()
        self.uses: dict[Var, int] = {}
        self.use_fn: dict[Var, Function | None] = {}
        self.bind_fn: dict[Var, Function | None] = {}
        self.fn_stack: list[Function | None] = [None]

    def _edge(self, child: Expr) -> Visit:
        if isinstance(child, Var):
            self.uses[child] = self.uses.get(child, 0) + 1
            self.use_fn[child] = self.fn_stack[-1]
        else:
            yield child

    def _walk(self, node: Expr) -> Visit:
        for c in children(node):
            yield from self._edge(c)

    def _leaf(self, node: Expr) -> None:
        return None

    visit_var = visit_global_var = visit_constant = visit_op = visit_constructor = _leaf
    visit_tuple = visit_tuple_getitem = visit_call = visit_if = _walk
    visit_ref_create = visit_ref_read = visit_ref_write = _walk

    def visit_function(self, node: Function) -> Visit:
        self.fn_stack.append(node)
        yield from self._edge(node.body)
        self.fn_stack.pop()

    def visit_match(self, node: Match) -> Visit:
        yield from self._edge(node.data)
        for clause in node.clauses:
            yield from self._edge(clause.rhs)

    def visit_let(self, node: Let) -> Visit:
        chain, body = _let_chain(node)
        for let in chain:
            self.bind_fn[let.var] = self.fn_stack[-1]
        yield from self._edge(body)
        for let in reversed(chain):
            if self.uses.get(let.var, 0) > 0 or not removable(let.value):
                yield from self._edge(let.value)


# ------------------------------------------------------------- 2. rebuild

class _Eliminate(ExprMutator):
    def __init__(self, uses: _Uses, inline_once: bool) -> None:
        super().__init__()
        self.info = uses
        self.inline_once = inline_once

    def _inlinable(self, let: Let) -> bool:
        v = let.var
        return (self.inline_once and self.info.uses.get(v, 0) == 1
                and self.info.use_fn.get(v) is self.info.bind_fn.get(v)
                and is_pure(let.value))

    def visit_let(self, node: Let) -> Visit:
        chain, body = _let_chain(node)
        kept: list[tuple[Let, Expr]] = []
        for let in chain:
            if self.info.uses.get(let.var, 0) == 0 and removable(let.value):
                continue
            value = yield let.value
            if self._inlinable(let):
                self.memo[let.var] = value
                continue
            kept.append((let, value))
        out = yield body
        for let, value in reversed(kept):
            out = Let(let.var, value, out, span=let.span, checked_type=out.checked_type)
        return out


def eliminate_dead_code_expr(func: Function, inline_once: bool = False) -> Function:
    """``func`` without its dead bindings (see the module note)."""
    uses = _Uses()
    uses.visit(func)
    out = _Eliminate(uses, inline_once).visit(func)
    assert isinstance(out, Function)
    return out


# ---------------------------------------------------------------- globals

class _GlobalRefs(ExprFunctor[None]):
    def __init__(self) -> None:
        super().__init__()
        self.found: list[GlobalVar] = []

    def visit_global_var(self, node: GlobalVar) -> None:
        self.found.append(node)

    def _leaf(self, node: Expr) -> None:
        return None

    def _walk(self, node: Expr) -> Visit:
        for c in children(node):
            yield c

    visit_var = visit_constant = visit_op = visit_constructor = _leaf
    visit_tuple = visit_tuple_getitem = visit_call = visit_function = _walk
    visit_let = visit_if = visit_match = _walk
    visit_ref_create = visit_ref_read = visit_ref_write = _walk


def reachable_globals(mod: IRModule, entry: str) -> list[GlobalVar]:
    """Globals reachable from ``entry`` (itself included), in the order
    found; every global when the module has no ``entry``."""
    if entry not in mod:
        return list(mod.functions)
    root = mod.get_global_var(entry)
    order = [root]
    seen = {root.name}
    i = 0
    while i < len(order):
        finder = _GlobalRefs()
        finder.visit(mod[order[i]])
        for gv in finder.found:
            if gv.name not in seen and gv.name in mod:
                seen.add(gv.name)
                order.append(mod.get_global_var(gv.name))
        i += 1
    return order


def dead_code_elimination(mod: IRModule, opts: DeadCodeOptions = DeadCodeOptions()) -> IRModule:
    """A new module without dead bindings and (unless ``keep_globals``)
    without globals unreachable from ``entry``."""
    keep = list(mod.functions) if opts.keep_globals else reachable_globals(mod, opts.entry)
    keep_names = {gv.name for gv in keep}
    out = mod.copy()
    out.functions = {}
    for gv, func in mod.functions.items():
        if gv.name in keep_names:
            out.add(gv, eliminate_dead_code_expr(func, opts.inline_once))
    return out


@register_pass("DeadCodeElimination", opt_level=1, options=DeadCodeOptions)
def dead_code_elimination_pass(mod: IRModule, opts: DeadCodeOptions) -> IRModule:
    """DeadCodeElimination: unused pure bindings and unreachable globals."""
    return dead_code_elimination(mod, opts)

