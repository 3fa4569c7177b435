"""The compiler sizes the object pool: the bytes of pool one call of the
entry function needs, from the object IR (:mod:`aot.emit.objects`).

Design note
-----------
What takes pool bytes is exactly what allocates in the object IR:
:class:`~aot.emit.objects.ir.AllocTensor` (boxed tensors: the entry's
copies of its tensor inputs, kernel outputs and scratch),
:class:`~aot.emit.objects.ir.AllocCell` (ADT cells, tuples, closures,
refs) and a :class:`~aot.emit.objects.ir.ConstructorCode` called as a
closure (one ADT cell); each takes one block of :mod:`.pool_layout`.
Static objects (constants, nullary constructors, the unit value, closures
without captures) take none.  The allocator (``runtime_c/aot_runtime.h``)
is not a bump allocator reset per call: it reuses freed blocks through
exact-size free lists and a first-fit list, so a peak of *live* bytes is
not a bound -- fragmentation can put the bump pointer above it.  Two
analyses give bounds that hold for the real allocator:

* **exact** (:mod:`.pool_simulate`): the allocator itself, run block for
  block over every path of the call (branches on tensor values and on
  the tags of input values are taken both ways; self tail loops run
  until their state repeats).  The need is the highest bump pointer of
  any path: a pool one block smaller fails on that path.  It applies when
  the pool is empty at the start of every call -- the entry's inputs and
  outputs are tensors, so nothing outlives a call -- and no path makes a
  non-tail recursive call.  Run for both data models, the larger kept.
* **allocation totals** (below): the bytes a path allocates, frees
  ignored.  The bump pointer moves up only to hand out a block a call
  allocates, so it ends at most this many bytes above wherever the
  caller's own values left it: sound whatever the free lists hold, and on
  top of value handles the caller keeps.  It is the bound for programs
  with value outputs ("allocations"), and the fallback when the
  simulation gives up (a recursive call, too many paths).

**Recursion** (a cycle of non-tail calls in the call graph; a closure
call may call any closure code of its arity).  Every non-tail call counts
against ``max_depth``, so a *linear* recursion -- no path through a frame
makes more than one call back into its cycle -- runs at most
``max_depth`` frames per entry into the cycle: its bound is
``max_depth`` times the most one frame allocates outside the cycle
("max_depth").  A recursion that branches (two calls back per frame) or
a self tail loop that allocates in every iteration grows the pool with
its input and cannot be bounded this way: a :class:`DiagnosticError`
names the function and asks for ``pool_bytes``.  So does a value input
(an ADT, a closure, a reference passed as a handle): the caller builds it
in the pool, at a size only the caller knows
(:mod:`aot.emit.lower.program_entry` refuses it).  A program that
allocates nothing anywhere needs no pool ("none": the context has no
pool array).
"""

from __future__ import annotations

from dataclasses import dataclass

from ...diagnostics import DiagnosticError
from ..objects import ir as O
from ..objects.walk import iter_stmts
from .pool_layout import LP64, Layout
from .pool_simulate import MAX_STEPS, simulate

__all__ = ["PoolSizing", "size_pool", "allocation_total", "code_label"]


@dataclass(frozen=True, slots=True)
class PoolSizing:
    """The pool of a program and how it was decided: ``sizing`` is
    "none", "exact", "allocations", "max_depth" or "user"."""
    bytes: int
    sizing: str
    reason: str


def code_label(code: O.Code) -> str:
    """The IR a piece of code came from, for a diagnostic (``@length``)."""
    head, _, signature = code.comment.partition(": ")
    if head.startswith("@"):
        return head
    if head == "fn literal" and signature:
        return f"the function literal `{signature}`"
    return f"{head} ({code.name})"


def size_pool(program: O.ObjectProgram, max_depth: int, *, value_io: bool) -> PoolSizing:
    """The pool ``program``'s entry needs (see the module note);
    ``value_io``: the entry returns value handles (which the caller may
    keep in the pool across calls)."""
    totals = _Totals(program, max_depth, LP64)
    if not value_io:        # gives up at a recursive call (or too many paths)
        exact = simulate(program)
        if exact == 0:
            return PoolSizing(0, "none", "the program allocates no object")
        if exact is not None:
            return PoolSizing(exact, "exact", "the allocator simulated on every path of a call")
    bound = totals.entry_total()
    if bound == 0:
        return PoolSizing(0, "none", "the program allocates no object")
    if totals.recursive:
        names = ", ".join(sorted(totals.recursive))
        return PoolSizing(bound, "max_depth",
                          f"recursion ({names}) bounded by max_depth={max_depth} frames "
                          "of bounded allocation")
    why = ("value handles come out of the entry" if value_io else
           f"the simulation gave up: a recursive call or more than {MAX_STEPS:,} statements "
           "over all paths")
    return PoolSizing(bound, "allocations",
                      f"every allocation of the worst path counted, frees ignored ({why})")


def allocation_total(program: O.ObjectProgram, max_depth: int, layout: Layout = LP64) -> int:
    """The allocation-totals bound of the entry (module note)."""
    return _Totals(program, max_depth, layout).entry_total()


def _arity(code: O.Code) -> int:
    return len(code.params) if isinstance(code, O.Function) else code.arity


@dataclass
class _Path:
    """The most a set of paths allocates and the most calls back into the
    current cycle any of them makes (a pair of maxima, over-approximated
    componentwise)."""
    cost: int = 0
    calls: int = 0

    def join(self, other: "_Path | None") -> "_Path":
        if other is None:
            return self
        return _Path(max(self.cost, other.cost), max(self.calls, other.calls))


def _join(a: _Path | None, b: _Path | None) -> _Path | None:
    return b if a is None else a.join(b)


class _Totals:
    """Allocation totals per piece of code, callees first (module note)."""

    def __init__(self, program: O.ObjectProgram, max_depth: int, layout: Layout) -> None:
        self.program = program
        self.max_depth = max_depth
        self.layout = layout
        self.codes: dict[str, O.Code] = {c.name: c for c in program.functions}
        self.by_arity: dict[int, list[str]] = {}
        for name in sorted(self._closure_codes()):
            self.by_arity.setdefault(_arity(self.codes[name]), []).append(name)
        self.cost: dict[str, int] = {}     # the bound of one call from outside its cycle
        self.recursive: set[str] = set()   # labels of recursive functions
        self.scc: set[str] = set()         # the cycle being measured

    def _closure_codes(self) -> set[str]:
        names = {s.code for s in self.program.statics if s.code is not None}
        for code in (*self.program.functions, self.program.entry):
            if isinstance(code, O.Function):
                names.update(s.code for s in iter_stmts(code.body) if isinstance(s, O.SetCode))
        return {n for n in names if n in self.codes}

    def callees(self, code: O.Code) -> list[str]:
        if isinstance(code, O.ForwardCode):
            return [code.target]
        if not isinstance(code, O.Function):
            return []
        out: list[str] = []
        for s in iter_stmts(code.body):
            if isinstance(s, O.CallFunction):
                out.append(s.function)
            elif isinstance(s, O.CallClosure):
                out.extend(self.by_arity.get(len(s.args), []))
        return out

    def has_cycles(self) -> bool:
        """Whether some call can reach its own function again."""
        return any(len(scc) > 1 or scc[0] in self.callees(self.codes[scc[0]])
                   for scc in _sccs(self.codes, self.callees))

    def entry_total(self) -> int:
        for scc in _sccs(self.codes, self.callees):
            self._measure(scc)
        path = self._function(self.program.entry)
        return path.cost

    # ------------------------------------------------------------ cycles

    def _measure(self, scc: list[str]) -> None:
        members = set(scc)
        recursive = len(scc) > 1 or any(n in self.callees(self.codes[n]) for n in scc)
        self.scc = members if recursive else set()
        frames = {n: self._code(self.codes[n]) for n in scc}
        self.scc = set()
        if not recursive:
            (name,) = scc
            self.cost[name] = frames[name].cost
            return
        per_frame = max(p.cost for p in frames.values())
        if per_frame > 0:
            labels = sorted(code_label(self.codes[n]) for n in scc)
            branching = sorted(code_label(self.codes[n]) for n, p in frames.items()
                               if p.calls > 1)
            if branching:
                raise DiagnosticError(
                    f"cannot size the object pool: {', '.join(branching)} calls itself more "
                    "than once per call (its pool use grows with its input, not only with "
                    "max_depth); give the pool's size with --pool-bytes (aot.compile(..., "
                    "pool_bytes=N))")
            self.recursive.update(labels)
        for n in scc:
            self.cost[n] = self.max_depth * per_frame

    # ------------------------------------------------------------- code

    def _code(self, code: O.Code) -> _Path:
        if isinstance(code, O.ConstructorCode):
            return _Path(self.layout.cell(code.arity))
        if isinstance(code, O.ForwardCode):
            return self._call(code.target)
        return self._function(code)

    def _call(self, name: str) -> _Path:
        if name in self.scc:
            return _Path(0, 1)
        return _Path(self.cost[name])

    def _function(self, fn: O.Function) -> _Path:
        fall, done, loop = self._block(fn.body, _Path())
        if loop is not None and loop.cost > 0:
            why = ("and the program recurses, so its allocations are counted, not simulated"
                   if self.has_cycles() else "and the pool it needs did not settle after "
                   "simulated iterations, so it may grow with the input")
            raise DiagnosticError(
                f"cannot size the object pool: {code_label(fn)} allocates in the iterations "
                f"of its loop (a self tail call) {why}; give the pool's size with "
                "--pool-bytes (aot.compile(..., pool_bytes=N))")
        out = _join(fall, done) or _Path()
        if loop is not None and loop.calls > 0:
            out = _Path(out.cost, 2)    # calls back into its cycle in every iteration
        return out

    def _block(self, block: O.Block, cur: _Path | None):
        """(fall-through, exits, tail jumps) of the paths through ``block``."""
        done: _Path | None = None
        loop: _Path | None = None
        for s in block:
            if cur is None:
                break
            if isinstance(s, (O.If, O.Switch)):
                branches = ((s.then, s.otherwise) if isinstance(s, O.If) else
                            (*(b for _, b in s.cases), s.default))
                after: _Path | None = None
                for b in branches:
                    f, d, lp = self._block(b, _Path(cur.cost, cur.calls))
                    after, done, loop = _join(after, f), _join(done, d), _join(loop, lp)
                cur = after
            elif isinstance(s, (O.Return, O.Raise)):
                done, cur = _join(done, cur), None
            elif isinstance(s, O.TailJump):
                loop, cur = _join(loop, cur), None
            else:
                step = self._step(s)
                cur = _Path(cur.cost + step.cost, cur.calls + step.calls)
        return cur, done, loop

    def _step(self, s: O.Stmt) -> _Path:
        if isinstance(s, O.AllocTensor):
            return _Path(self.layout.tensor(s.nbytes))
        if isinstance(s, O.AllocCell):
            return _Path(self.layout.cell(s.nfields))
        if isinstance(s, O.CallFunction):
            return self._call(s.function)
        if isinstance(s, O.CallClosure):
            best = _Path()
            for name in self.by_arity.get(len(s.args), []):
                best = best.join(self._call(name))
            return best
        return _Path()


def _sccs(codes: dict[str, O.Code], callees) -> list[list[str]]:
    """Strongly connected components of the call graph, callees first
    (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    out: list[list[str]] = []
    for root in codes:
        if root in index:
            continue
        work = [(root, iter(callees(codes[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, it = work[-1]
            nxt = next(it, None)
            if nxt is not None:
                if nxt not in index:
                    index[nxt] = low[nxt] = len(index)
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(callees(codes[nxt]))))
                elif nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                scc = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    scc.append(w)
                    if w == node:
                        break
                out.append(sorted(scc))
    return out
