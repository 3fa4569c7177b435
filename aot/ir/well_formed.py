"""Well-formedness: every variable bound once, every use in scope.

Design note
-----------
Relay's rules: a ``Var`` object is bound at exactly one site (a let, a
function parameter, a match pattern); every use lies inside its binder's
scope (a let's body, or its value when that value is a function -- the
recursive let; a function's body; a clause's right-hand side); a global
function has no free variables; every GlobalVar it names is defined.

Graphs share nodes, so a scoped walk that re-enters shared nodes would be
exponential.  Instead the walk computes each node's *free variables*
bottom-up, memoised by node (one visit per node, on the iterative
trampoline of :mod:`aot.ir.visitor`: :class:`aot.ir.analysis.FreeVarSets`):
a binder removes its variables from its scope's free set, and a use out of scope shows up as a
variable still free at the top of its global function.  The two formulations agree: a
variable is used out of scope iff it is free in some binder-less path to
the root.
"""

from __future__ import annotations

from collections import Counter

from .analysis import FreeVarSets, binding_sites
from .expr import GlobalVar, Var
from .module import IRModule
from .visitor import post_order

__all__ = ["ill_formed", "check_well_formed"]


def ill_formed(mod: IRModule) -> list[str]:
    """Every well-formedness violation of ``mod``, as messages (empty when
    the module is well formed)."""
    problems: list[str] = []
    seen: Counter[Var] = Counter()
    defined = {gv.name for gv in mod.functions}
    for gv, fn in mod.functions.items():
        free = FreeVarSets().visit(fn)
        for v in sorted(free, key=lambda v: v.name_hint):
            problems.append(f"@{gv.name}: %{v.name_hint} used outside the scope of its binding")
        binders = binding_sites(fn)
        seen.update(set(binders))
        for v, n in Counter(binders).items():
            if n > 1:
                problems.append(f"@{gv.name}: %{v.name_hint} bound {n} times")
        for node in post_order(fn):
            if isinstance(node, GlobalVar) and node.name not in defined:
                problems.append(f"@{gv.name}: refers to undefined @{node.name}")
    for v, n in seen.items():
        if n > 1:
            problems.append(f"%{v.name_hint} bound in {n} global functions")
    return problems


def check_well_formed(mod: IRModule) -> None:
    """AssertionError naming the first violation (for passes' own checks)."""
    problems = ill_formed(mod)
    assert not problems, problems[0]
