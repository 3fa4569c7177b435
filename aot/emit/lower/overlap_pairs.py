"""Which outputs may overlap which inputs in the arena, for one model.

Design note
-----------
At every step (kernel call) an intermediate output born there may share
bytes with an intermediate input that dies there, if the kernel's loop
nest allows it: :func:`aot.emit.plan.overlap.best_shift` derives the shift
from the kernel IR (the kernel as printed, i.e. simplified).  Every such
fact becomes an :class:`~aot.emit.plan.arena.InPlace` candidate for the
planner; the planner decides which ones it uses.

A used pair makes two arguments of one call overlap in memory, so the C
compiler must not assume they do not alias: :func:`unrestrict` drops
``restrict`` from the two parameters (for every call of that kernel; a
kernel's C is shared).  With the model's ``-fno-strict-aliasing`` (its
make fragment's flags) the compiler also may not assume that pointers of
different element types never alias, so the IR's order of loads and
stores is what the compiled code does, which is what the analysis
reasoned about.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from ..kernel import ir as K
from ..kernel.walk import children, postorder, with_children
from ..plan.arena import InPlace
from ..plan.overlap import best_shift, same_loop_nest

__all__ = ["PairSite", "overlap_candidates", "unrestrict"]


@dataclass(frozen=True, slots=True)
class PairSite:
    """Where a candidate pair lives: the step, the kernel and the
    positions of the output and input arguments in the call."""

    step: int
    kernel: str
    out_arg: int
    in_args: tuple[int, ...]


def overlap_candidates(steps: Sequence, kernels: dict[str, K.Kernel], start: dict[str, int],
                       end: dict[str, int], alignment: int
                       ) -> tuple[list[InPlace], dict[tuple[str, str], PairSite]]:
    """The pairs the loop nests allow, and where each one is.  ``steps``
    are the dataflow steps (``inputs``, ``consts``, ``outputs``,
    ``kernel``); ``start`` / ``end`` the lifetimes of the arena tensors."""
    pairs: list[InPlace] = []
    sites: dict[tuple[str, str], PairSite] = {}
    for k, step in enumerate(steps):
        kernel = kernels[step.kernel]
        first_out = len(step.inputs) + len(step.consts)
        for o, out in enumerate(step.outputs):
            if out.key not in start or start[out.key] != k:
                continue
            seen: set[str] = set()
            for src in step.inputs:
                if src.key in seen or src.key not in end or end[src.key] != k or \
                        src.key == out.key:
                    continue
                seen.add(src.key)
                positions = tuple(j for j, s in enumerate(step.inputs) if s.key == src.key)
                shift = best_shift(kernel, kernel.params[first_out + o].name,
                                   [kernel.params[j].name for j in positions], alignment)
                if shift is None:
                    continue
                pairs.append(InPlace(out.key, src.key, shift))
                sites[out.key, src.key] = PairSite(k, step.kernel, first_out + o, positions)
    return pairs, sites


def unrestrict(kernel: K.Kernel, names: frozenset[str]) -> K.Kernel:
    """``kernel`` with the parameters ``names`` no longer ``restrict``."""
    if all(not p.restrict for p in kernel.params if p.name in names):
        return kernel
    swap = {p: K.Buffer(p.name, p.dtype, p.shape, p.scope, False, p.alignment)
            for p in kernel.params if p.name in names}

    def expr(e: K.Expr) -> K.Expr:
        def combine(x: K.Expr, kids: list[K.Expr]) -> K.Expr:
            if isinstance(x, K.Load) and x.buffer in swap:
                return K.Load(swap[x.buffer], kids[0], x.lanes)
            return with_children(x, kids) if kids else x
        return postorder(e, children, combine)

    def stmt(s: K.Stmt) -> K.Stmt:
        if isinstance(s, K.For):
            return K.For(s.var, expr(s.start), expr(s.extent), stmt(s.body), s.kind)
        if isinstance(s, K.Store):
            return K.Store(swap.get(s.buffer, s.buffer), expr(s.index), expr(s.value))
        if isinstance(s, K.Decl):
            return s if s.init is None else K.Decl(s.var, expr(s.init))
        if isinstance(s, K.Assign):
            return K.Assign(s.var, expr(s.value))
        if isinstance(s, K.IfThenElse):
            return K.IfThenElse(expr(s.cond), stmt(s.then),
                                None if s.else_ is None else stmt(s.else_))
        if isinstance(s, K.Block):
            return K.Block(tuple(stmt(x) for x in s.stmts))
        return s

    params = tuple(swap.get(p, p) for p in kernel.params)
    new = K.Kernel(kernel.name, params, stmt(kernel.body), kernel.comment)
    same_loop_nest(kernel, new)
    return new
