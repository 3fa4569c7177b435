"""May a kernel write its output over its input?  A fact from the loop nest.

Design note
-----------
The arena planner (:mod:`aot.emit.plan.arena`) keeps tensors that are
live at the same step apart.  At the step where an input ``I`` dies and an
output ``O`` is born, they may share bytes if the kernel never reads an
input byte after writing an output byte over it.  This module decides,
from the kernel IR alone, for which *shift* that holds: ``O`` placed at
``offset(I) + shift`` bytes (``shift`` a multiple of the arena alignment,
usually <= 0: the output starts before the input and streams over the
part already consumed).  No operator names are involved -- an elementwise
kernel, a depthwise convolution or a convolution whose epilogue reads a
residual all come out of the same analysis of their loop nests.

**Events and time.**  A kernel body is a tree of statements over loops
with (per instance) integer bounds.  Every dynamic statement instance gets
an integer time from a static *span* per statement (a Store, Decl or
Assign spans 2: its loads at ``t``, its store at ``t + 1``, which is C's
order -- the operands of an assignment are evaluated before the store; a
Block is its children laid end to end; a For ``1 + R * span(body)`` with
``R`` the largest extent; an If its condition then both arms).  Times
are therefore a total order consistent with execution.  Both arms of an
If count as executed, every Select arm as read: the events that really
happen are a subsequence of ours, in the same order, so every conclusion
below stays true for them (over-approximating reads and writes is sound).

**Enumerated and summarised loops.**  Loops are enumerated exactly,
vectorised: a loop multiplies the set of instances (NumPy arrays of
variable values, one entry per instance) while its bounds are known per
instance and the instance count stays within :data:`MAX_INSTANCES` (one
loop) and :data:`MAX_WORK` (the kernel).  Every store into ``O`` gives a
write event (time, byte address), every load of ``I`` a read event (time,
element index).  A store's index must be exact (one value per instance),
else there is no fact.  A loop that cannot be enumerated is *summarised*:
its variable becomes an interval, every load of ``I`` inside an interval
of element indices (interval arithmetic over the index expression: ``+ -
* min max``, division and modulo by a positive constant, shifts,
comparisons and selects), timed at the loop's last instant -- a superset
of the reads at a later time: sound again.  A store into ``O`` inside such
a loop refuses.  A value loaded from memory, a variable that is ever
re-assigned, or one no address depends on (only those are evaluated) is
unknown (any index), which makes reads cover the whole input and writes
refuse.

**Loops no event depends on.**  A loop whose variable appears in no
loop bound, no index of an input load or an output store and no
declaration those depend on (a convolution's loop over the weights of one
input row, a repeated pass) has the same events in every iteration,
shifted by the body's span.  Only the earliest write of an address and
the latest read of an element matter below, so such a loop (enumerated,
same extent ``c >= 3`` in every instance) walks its first and last
iterations only -- exactly the same facts.  The budgets count what the
full enumeration would (each walked instance stands for ``c / 2``), so
which loops are enumerated or summarised does not change either.

**The condition.**  With ``L[e]`` the time of the last read of input
element ``e``, shift ``s`` is safe iff for every write event ``w`` (time
``t``, bytes ``[a, a + size)``), every input element under the bytes
``[a + s, a + s + size)`` has ``L[e] < t``.  :func:`safe_shift` tests one
shift exactly (vectorised over the writes).  The *best* shift is searched
among few candidates: ``0`` (the output over the input, elementwise
kernels, a residual epilogue), the shift that aligns the two tensors' ends
(an output larger than its input: any shift in between costs the same),
and a shift that is safe by a monotone sufficient condition -- with
``lo(t)`` the lowest input element still read after ``t``, every shift
``s <= min_w (lo(t_w) * itemsize - a_w - size_w)`` is safe (this is the
"streaming" case: a convolution that writes row ``r`` once it has read
the rows it needs below).  The candidate that makes the union of the two
tensors smallest wins; when none overlaps at all there is no fact.

Cost: about one vectorised evaluation per load or store and enumerated
instance (up to :data:`MAX_WORK` instances; beyond, loops are
summarised).  Reads go into ``L`` as they are found: a read of fewer than
:data:`_NARROW` elements as points (``np.maximum.at``), a wider one (a
summarised loop's interval) kept and applied at the end through a
segment tree (:func:`_max_ranges`, O(log n) per range where updating
each range's elements cost its length: ResNet-18's 3x3 convolutions
under the ``scalar`` tuning took 25 CPU-s, now 2.6).  Results are cached
per (kernel, output, inputs).
"""

from __future__ import annotations

import functools
from collections import OrderedDict
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from ..kernel.ir import (Assign, BinaryOperator, BinOp, Block, Cast, Comment, Const, Decl,
                         Expr, For, IfThenElse, Kernel, Load, Select, Stmt, Store, UnaryOp,
                         UnaryOperator, Var)
from ..kernel.walk import children, stmt_exprs, walk_stmts
from .arena import union_bytes

__all__ = ["OverlapFact", "best_shift", "safe_shift", "same_loop_nest", "MAX_INSTANCES",
           "MAX_WORK"]

#: instances one loop may expand to (memory: a few arrays of this length)
MAX_INSTANCES = 1 << 18
#: instances enumerated per kernel in all (time); beyond, loops are summarised
MAX_WORK = 1 << 21
#: reads of more than one element (summarised loops) tracked one by one
MAX_RANGES = 200_000
#: reads of fewer elements than this are tracked element by element
_NARROW = 8

#: "unbounded" for index intervals (products of two stay inside int64)
_BIG = 1 << 31
_LO, _HI = np.int64(-_BIG), np.int64(_BIG)


class _Refuse(Exception):
    """The analysis cannot prove anything about this kernel."""


@dataclass(frozen=True, slots=True)
class OverlapFact:
    """Kernel ``kernel`` may write parameter ``out`` at ``offset(ins) +
    shift`` bytes (every parameter in ``ins`` is the same input tensor)."""

    out: str
    ins: tuple[str, ...]
    shift: int


# --------------------------------------------------------------------------
# Interval arithmetic over per-instance arrays
# --------------------------------------------------------------------------

_Iv = tuple[np.ndarray, np.ndarray]


def _tdiv(a: np.ndarray, b: int) -> np.ndarray:
    q = np.abs(a) // b
    return np.where(a < 0, -q, q)


class _Eval:
    """Evaluate integer expressions to intervals under an environment
    ``{var name: (lo, hi)}`` of arrays of length ``n``."""

    def __init__(self, env: dict[str, _Iv], n: int, unknown: frozenset[str]) -> None:
        self.env = env
        self.n = n
        self.unknown = unknown
        self.memo: dict[int, _Iv] = {}

    def full(self, v: int) -> np.ndarray:
        return np.full(self.n, v, dtype=np.int64)

    def top(self) -> _Iv:
        return self.full(-_BIG), self.full(_BIG)

    def __call__(self, e: Expr) -> _Iv:
        got = self.memo.get(id(e))
        if got is None:
            got = self._eval(e)
            lo, hi = got          # clipped to [-_BIG, _BIG] (ufuncs: np.clip costs 4x)
            got = (np.minimum(np.maximum(lo, _LO), _HI), np.minimum(np.maximum(hi, _LO), _HI))
            self.memo[id(e)] = got
        return got

    def _eval(self, e: Expr) -> _Iv:
        if isinstance(e, Const):
            if isinstance(e.value, float):
                return self.top()
            v = self.full(int(e.value))
            return v, v
        if isinstance(e, Var):
            if e.name in self.unknown or e.name not in self.env:
                return self.top()
            return self.env[e.name]
        if isinstance(e, Cast):
            return self(e.a) if not e.a.dtype.is_float and not e.to.is_float else self.top()
        if isinstance(e, UnaryOp):
            lo, hi = self(e.a)
            if e.op is UnaryOperator.NEG:
                return -hi, -lo
            if e.op is UnaryOperator.NOT:
                return 1 - hi, 1 - lo
            return self.top()
        if isinstance(e, Select):
            clo, chi = self(e.cond)
            alo, ahi = self(e.a)
            blo, bhi = self(e.b)
            lo = np.where(clo == 1, alo, np.where(chi == 0, blo, np.minimum(alo, blo)))
            hi = np.where(clo == 1, ahi, np.where(chi == 0, bhi, np.maximum(ahi, bhi)))
            return lo, hi
        if isinstance(e, BinOp):
            return self._binop(e)
        return self.top()          # Load, Call: a value from memory or a function

    def _binop(self, e: BinOp) -> _Iv:
        if e.a.dtype.is_float:
            return self.top()
        op = e.op
        alo, ahi = self(e.a)
        blo, bhi = self(e.b)
        if op is BinaryOperator.ADD:
            return alo + blo, ahi + bhi
        if op is BinaryOperator.SUB:
            return alo - bhi, ahi - blo
        if op is BinaryOperator.MUL:
            ps = (alo * blo, alo * bhi, ahi * blo, ahi * bhi)
            return functools.reduce(np.minimum, ps), functools.reduce(np.maximum, ps)
        if op is BinaryOperator.MIN:
            return np.minimum(alo, blo), np.minimum(ahi, bhi)
        if op is BinaryOperator.MAX:
            return np.maximum(alo, blo), np.maximum(ahi, bhi)
        if op.is_comparison or op.is_logical:
            return self._truth(op, alo, ahi, blo, bhi)
        return self._divide(e, alo, ahi)

    def _divide(self, e: BinOp, alo: np.ndarray, ahi: np.ndarray) -> _Iv:
        """Shifts, division and modulo by a positive constant."""
        op = e.op
        if op in (BinaryOperator.SHL, BinaryOperator.SHR):
            if not isinstance(e.b, Const):
                return self.top()
            k = int(e.b.value)
            if k > 30:
                return self.top()
            if op is BinaryOperator.SHL:
                return alo << k, ahi << k
            return alo >> k, ahi >> k
        if isinstance(e.b, Const) and int(e.b.value) > 0:
            d = int(e.b.value)
            if op is BinaryOperator.DIV:
                return _tdiv(alo, d), _tdiv(ahi, d)
            if op is BinaryOperator.FLOORDIV:
                return alo // d, ahi // d
            if op is BinaryOperator.FLOORMOD or (op is BinaryOperator.MOD and
                                                 bool(np.all(alo >= 0))):
                same = (alo // d) == (ahi // d)
                return (np.where(same, alo % d, 0), np.where(same, ahi % d, d - 1))
            if op is BinaryOperator.MOD:
                same = (alo == ahi)
                exact = alo - _tdiv(alo, d) * d
                return np.where(same, exact, -(d - 1)), np.where(same, exact, d - 1)
        return self.top()

    def _truth(self, op: BinaryOperator, alo: np.ndarray, ahi: np.ndarray, blo: np.ndarray,
               bhi: np.ndarray) -> _Iv:
        true: np.ndarray
        false: np.ndarray
        if op is BinaryOperator.LT:
            true, false = ahi < blo, alo >= bhi
        elif op is BinaryOperator.LE:
            true, false = ahi <= blo, alo > bhi
        elif op is BinaryOperator.GT:
            true, false = alo > bhi, ahi <= blo
        elif op is BinaryOperator.GE:
            true, false = alo >= bhi, ahi < blo
        elif op is BinaryOperator.EQ:
            true = (alo == ahi) & (blo == bhi) & (alo == blo)
            false = (ahi < blo) | (bhi < alo)
        elif op is BinaryOperator.NE:
            false = (alo == ahi) & (blo == bhi) & (alo == blo)
            true = (ahi < blo) | (bhi < alo)
        elif op is BinaryOperator.AND:
            true, false = (alo == 1) & (blo == 1), (ahi == 0) | (bhi == 0)
        else:
            true, false = (alo == 1) | (blo == 1), (ahi == 0) & (bhi == 0)
        return np.where(true, 1, 0).astype(np.int64), np.where(false, 0, 1).astype(np.int64)


# --------------------------------------------------------------------------
# The trace: write events of the output, last-read times of the input
# --------------------------------------------------------------------------

@dataclass(frozen=True, slots=True, eq=False)
class _Trace:
    write_time: np.ndarray      # int64, one per write event
    write_addr: np.ndarray      # byte address in the output
    write_size: int             # bytes per write
    last_read: np.ndarray       # per input element: time of its last read, -1 if never
    in_itemsize: int


def _loads(e: Expr) -> list[Load]:
    found: list[Load] = []
    seen: set[int] = set()
    stack = [e]
    while stack:
        x = stack.pop()
        if id(x) in seen:
            continue
        seen.add(id(x))
        if isinstance(x, Load):
            found.append(x)
        stack.extend(children(x))
    return found


def _var_names(e: Expr) -> set[str]:
    found: set[str] = set()
    stack, seen = [e], set()
    while stack:
        x = stack.pop()
        if id(x) in seen:
            continue
        seen.add(id(x))
        if isinstance(x, Var):
            found.add(x.name)
        stack.extend(children(x))
    return found


class _Tracer:
    def __init__(self, kernel: Kernel, out: str, ins: frozenset[str]) -> None:
        self.out = out
        self.ins = ins
        self.unknown = frozenset(s.var.name for s in walk_stmts(kernel.body)
                                 if isinstance(s, Assign))
        self.writers: set[int] = set()
        self.touching: dict[int, bool] = {}
        self.spans: dict[int, int] = {}
        #: per expression root (by id), its loads of the input
        self.in_loads: dict[int, list[Load]] = {}
        self._mark(kernel.body)
        self.relevant = self._relevant(kernel.body)
        in_bufs = {p.name: p for p in kernel.params if p.name in ins}
        out_buf = next(p for p in kernel.params if p.name == out)
        if out_buf.dtype.packed or any(b.dtype.packed for b in in_bufs.values()):
            raise _Refuse   # 4-bit elements share bytes: addresses are not element-wise
        self.n_in = next(iter(in_bufs.values())).size
        self.in_itemsize = next(iter(in_bufs.values())).dtype.itemsize
        self.out_itemsize = out_buf.dtype.itemsize
        #: per input element, the time of its last point read so far
        self.last = np.full(self.n_in, -1, dtype=np.int64)
        #: reads of ranges of _NARROW or more elements, applied at the end
        self.ranges: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
        self.n_ranges = 0
        self.writes_t: list[np.ndarray] = []
        self.writes_a: list[np.ndarray] = []
        self.instances = 0
        #: instances each walked instance stands for (num / den): loops
        #: whose variable no event depends on walk two iterations (below)
        self.scale_num, self.scale_den = 1, 1
        self.used: dict[int, frozenset[str]] = {}
        self.span(kernel.body, {})

    # -- static structure ---------------------------------------------------

    def _relevant(self, body: Stmt) -> frozenset[str]:
        """The scalar variables an address or a loop bound depends on: only
        their declarations are evaluated (any other variable is unknown)."""
        want: set[str] = set()
        inits: dict[str, Expr] = {}
        for st in walk_stmts(body):
            if isinstance(st, Decl) and st.init is not None:
                inits[st.var.name] = st.init
            elif isinstance(st, For):
                want |= _var_names(st.start) | _var_names(st.extent)
            if isinstance(st, Store) and st.buffer.name == self.out:
                want |= _var_names(st.index)
            want.update(*(_var_names(ld.index) for root in stmt_exprs(st)
                          for ld in self._input_loads(root)))
        todo = list(want)
        while todo:
            init = inits.get(todo.pop())
            new = set() if init is None else _var_names(init) - want
            want |= new
            todo.extend(new)
        return frozenset(want)

    def _input_loads(self, root: Expr) -> list[Load]:
        """The loads of the input under ``root`` (memoised: the kernel,
        which keeps ``root`` alive, outlives the tracer)."""
        got = self.in_loads.get(id(root))
        if got is None:
            got = [ld for ld in _loads(root) if ld.buffer.name in self.ins]
            self.in_loads[id(root)] = got
        return got

    def _mark(self, s: Stmt) -> bool:
        """Record the statements that (transitively) store into ``out``."""
        if isinstance(s, Store):
            hit = s.buffer.name == self.out
        elif isinstance(s, For):
            hit = self._mark(s.body)
        elif isinstance(s, Block):
            hit = False
            for x in s.stmts:
                hit = self._mark(x) or hit
        elif isinstance(s, IfThenElse):
            hit = self._mark(s.then)
            if s.else_ is not None:
                hit = self._mark(s.else_) or hit
        else:
            hit = False
        if hit:
            self.writers.add(id(s))
        return hit

    def span(self, s: Stmt, env: dict[str, _Iv]) -> int:
        """Static span of ``s`` (and, on the way, static intervals of the
        loop variables for the largest extents).  A statement node shared
        by two places of the tree must get one span."""
        ev = _Eval(env, 1, self.unknown)
        if isinstance(s, Block):
            inner = dict(env)
            total = 0
            for x in s.stmts:
                total += self.span(x, inner)
                if isinstance(x, Decl) and x.init is not None and x.var.name in self.relevant:
                    inner[x.var.name] = _Eval(inner, 1, self.unknown)(x.init)
            result = max(total, 1)
        elif isinstance(s, For):
            slo, shi = ev(s.start)
            _, ehi = ev(s.extent)
            r = max(int(ehi[0]), 0)
            if r >= _BIG:
                raise _Refuse(f"loop {s.var.name} has no bound")
            inner = dict(env)
            inner[s.var.name] = (slo, shi + max(r - 1, 0))
            result = 1 + r * self.span(s.body, inner)
        elif isinstance(s, IfThenElse):
            result = 1 + self.span(s.then, env) + (
                0 if s.else_ is None else self.span(s.else_, env))
        else:
            result = 2
        if self.spans.setdefault(id(s), result) != result:
            raise _Refuse("a shared statement with two spans")
        return result

    # -- events ---------------------------------------------------------------

    def _reads(self, exprs: Sequence[Expr], ev: _Eval, t: np.ndarray) -> None:
        """Read events at times ``t`` for every load of the input in ``exprs``."""
        for root in exprs:
            for ld in self._input_loads(root):
                lo, hi = ev(ld.index)
                self._read(t, lo, hi + (ld.lanes - 1))

    def _read(self, t: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> None:
        """Input elements ``[lo, hi]`` read at times ``t`` (per instance):
        narrow reads (a 4-lane load, a small window) go into ``last`` as
        points now; wider ones are kept for :func:`_max_ranges`."""
        lo, hi = np.maximum(lo, 0), np.minimum(hi, self.n_in - 1)
        width = hi - lo
        if len(width) and int(width.max()) == 0 and int(width.min()) == 0:
            np.maximum.at(self.last, lo, t)          # the usual case: one element each
            return
        narrow = (width >= 0) & (width < _NARROW)
        for k in range(_NARROW):
            more = narrow & (width >= k)
            if k and not more.any():
                break
            np.maximum.at(self.last, lo[more] + k, t[more])
        wide = width >= _NARROW
        count = int(np.count_nonzero(wide))
        if count:
            self.n_ranges += count * self.scale_num // self.scale_den
            if self.n_ranges > MAX_RANGES:
                raise _Refuse("too many reads of unknown extent")
            self.ranges.append((lo[wide], hi[wide], t[wide]))

    def walk(self, s: Stmt, env: dict[str, _Iv], t: np.ndarray,
             frozen: np.ndarray | None) -> None:
        """Events of ``s`` for the instances ``t`` (start times) with
        variables ``env``.  ``frozen``: inside a loop that was not
        enumerated, the time of that loop's last instant (reads are timed
        there; a store into the output there is refused)."""
        n = len(t)
        ev = _Eval(env, n, self.unknown)
        when = t if frozen is None else frozen
        if isinstance(s, Block):
            self._walk_block(s, env, t, frozen)
        elif isinstance(s, For):
            self._walk_for(s, env, t, frozen, ev)
        elif isinstance(s, IfThenElse):
            self._reads((s.cond,), ev, when)
            self.walk(s.then, env, t + 1, frozen)
            if s.else_ is not None:
                self.walk(s.else_, env, t + 1 + self.spans[id(s.then)], frozen)
        elif isinstance(s, Store):
            self._walk_store(s, t, frozen, ev)
        elif isinstance(s, Assign):
            self._reads((s.value,), ev, when)
        elif isinstance(s, Decl):             # a Decl outside a Block: scoped to nothing
            if s.init is not None:
                self._reads((s.init,), ev, when)
        else:
            assert isinstance(s, Comment), type(s).__name__

    def _walk_block(self, s: Block, env: dict[str, _Iv], t: np.ndarray,
                    frozen: np.ndarray | None) -> None:
        """The statements in order; a declaration binds its variable (when
        an address depends on it) for the rest of the block."""
        inner = dict(env)
        offset = 0
        for x in s.stmts:
            if isinstance(x, Decl):
                if x.init is not None:
                    ev_x = _Eval(inner, len(t), self.unknown)
                    self._reads((x.init,), ev_x, t + offset if frozen is None else frozen)
                    if x.var.name in self.relevant:
                        inner[x.var.name] = ev_x(x.init)
            else:
                self.walk(x, inner, t + offset, frozen)
            offset += self.spans[id(x)]

    def _walk_for(self, s: For, env: dict[str, _Iv], t: np.ndarray,
                  frozen: np.ndarray | None, ev: _Eval) -> None:
        """Enumerate the loop when it is exact and within the budgets, else
        make its variable an interval and freeze the time."""
        n = len(t)
        when = t if frozen is None else frozen
        self._reads((s.start, s.extent), ev, when)
        if not self._touches(s):
            return
        slo, shi = ev(s.start)
        elo, ehi = ev(s.extent)
        exact = np.array_equal(slo, shi) and np.array_equal(elo, ehi)
        count = np.maximum(elo, 0)
        total = int(count.sum()) * self.scale_num // self.scale_den if exact else 0
        body_span = self.spans[id(s.body)]
        if frozen is None and exact and total <= MAX_INSTANCES and \
                self.instances + total <= MAX_WORK:
            self.instances += total
            c = int(count[0]) if n else 0
            if c >= 3 and bool(np.all(count == c)) and self._collapsible(s):
                # first and last iteration only: the same events, shifted in time
                which = np.repeat(np.arange(n), 2)
                i = np.tile(np.array([0, c - 1], dtype=np.int64), n)
                num, den = self.scale_num, self.scale_den
                self.scale_num, self.scale_den = num * c, den * 2
            else:
                which = np.repeat(np.arange(n), count)
                i = np.arange(len(which), dtype=np.int64) - \
                    np.repeat(np.cumsum(count) - count, count)
                num, den = self.scale_num, self.scale_den
            inner = {k: (lo[which], hi[which]) for k, (lo, hi) in env.items()}
            v = slo[which] + i
            inner[s.var.name] = (v, v)
            self.walk(s.body, inner, t[which] + 1 + i * body_span, None)
            self.scale_num, self.scale_den = num, den
        else:
            if id(s) in self.writers:
                raise _Refuse(f"loop {s.var.name} stores into {self.out} and cannot be "
                              "enumerated")
            inner = dict(env)
            inner[s.var.name] = (slo, shi + np.maximum(ehi - 1, 0))
            self.walk(s.body, inner, t, t + self.spans[id(s)] - 1 if frozen is None
                      else frozen)

    def _collapsible(self, s: For) -> bool:
        """Whether no event of the loop's body depends on its variable: it
        appears in no loop bound, no index of an input load or an output
        store and no evaluated declaration there.  Then every iteration
        has the same events shifted by the body's span, and the first and
        last iterations carry all that matters: the earliest write of each
        address and the latest read of each element (module note)."""
        return s.var.name not in self._used(s.body)

    def _used(self, s: Stmt) -> frozenset[str]:
        """The variables the events of ``s`` depend on (memoised per
        statement; see :meth:`_collapsible`)."""
        got = self.used.get(id(s))
        if got is None:
            names: set[str] = set()
            subs: tuple[Stmt, ...] = ()
            if isinstance(s, For):
                names |= _var_names(s.start) | _var_names(s.extent)
                subs = (s.body,)
            elif isinstance(s, Store) and s.buffer.name == self.out:
                names |= _var_names(s.index)
            elif isinstance(s, Decl) and s.init is not None and s.var.name in self.relevant:
                names |= _var_names(s.init)
            elif isinstance(s, Block):
                subs = s.stmts
            elif isinstance(s, IfThenElse):
                subs = (s.then,) if s.else_ is None else (s.then, s.else_)
            for root in stmt_exprs(s):
                for ld in self._input_loads(root):
                    names |= _var_names(ld.index)
            for sub in subs:
                names |= self._used(sub)
            got = frozenset(names)
            self.used[id(s)] = got
        return got

    def _touches(self, s: For) -> bool:
        """Whether the loop's body reads the input or stores into the
        output: a loop that does neither (an int8 kernel's product loop over
        a scratch patch) has no events, and enumerating it would only spend
        the budget that keeps later loops exact."""
        got = self.touching.get(id(s))
        if got is None:
            got = id(s) in self.writers or any(
                self._input_loads(e) for x in walk_stmts(s.body) for e in stmt_exprs(x))
            self.touching[id(s)] = got
        return got

    def _walk_store(self, s: Store, t: np.ndarray, frozen: np.ndarray | None,
                    ev: _Eval) -> None:
        when = t if frozen is None else frozen
        self._reads((s.index, s.value), ev, when)
        if s.buffer.name == self.out:
            lo, hi = ev(s.index)
            if frozen is not None or not np.array_equal(lo, hi) or \
                    bool(np.any(np.abs(lo) >= _BIG)):
                raise _Refuse(f"a store into {self.out} at an index not known per instance")
            self.writes_t.append(t + 1)
            self.writes_a.append(lo * self.out_itemsize)

    # -- result ---------------------------------------------------------------

    def trace(self, body: Stmt) -> _Trace:
        if self.spans[id(body)] >= 1 << 62:
            raise _Refuse("too many statement instances for 64-bit times")
        self.walk(body, {}, np.zeros(1, dtype=np.int64), None)
        last = self.last
        if self.ranges:
            _max_ranges(last, *(np.concatenate(x) for x in zip(*self.ranges)))
        wt = np.concatenate(self.writes_t) if self.writes_t else np.zeros(0, np.int64)
        wa = np.concatenate(self.writes_a) if self.writes_a else np.zeros(0, np.int64)
        return _Trace(wt, wa, self.out_itemsize, last, self.in_itemsize)


def _max_ranges(last: np.ndarray, lo: np.ndarray, hi: np.ndarray, t: np.ndarray) -> None:
    """``last[e] = max(last[e], t[k])`` for every ``lo[k] <= e <= hi[k]``.

    A bottom-up segment tree over the elements, vectorised over the ranges:
    each range tags the O(log n) nodes that tile it (level by level, with
    ``np.maximum.at``, which accumulates repeated nodes), then the tags are
    pushed from the root down to the leaves.  O(R log n + n) array work,
    where updating the ranges one by one cost the sum of their lengths."""
    if len(t) == 0:
        return
    size = 1 << max(int(len(last) - 1).bit_length(), 0)
    tag = np.full(2 * size, -1, dtype=np.int64)
    left, right, when = lo + size, hi + size + 1, t           # [left, right) per level
    while len(when):
        odd = (left & 1).astype(bool)
        np.maximum.at(tag, left[odd], when[odd])
        left = left + odd
        odd = (right & 1).astype(bool)
        right = right - odd
        np.maximum.at(tag, right[odd], when[odd])
        left, right = left >> 1, right >> 1
        open_ = left < right
        left, right, when = left[open_], right[open_], when[open_]
    level = 1
    while level < size:                                       # push down, level by level
        parents = tag[level:2 * level]
        kids = tag[2 * level:4 * level].reshape(level, 2)
        np.maximum(kids, parents[:, None], out=kids)
        level *= 2
    np.maximum(last, tag[size:size + len(last)], out=last)


#: traces by (kernel, output, inputs), most recent last
_TRACES: OrderedDict[tuple[Kernel, str, tuple[str, ...]], _Trace | None] = OrderedDict()
_CACHED = 256


def _trace(kernel: Kernel, out: str, ins: tuple[str, ...]) -> _Trace | None:
    key = (kernel, out, ins)
    if key in _TRACES:
        _TRACES.move_to_end(key)
        return _TRACES[key]
    try:
        tr: _Trace | None = _Tracer(kernel, out, frozenset(ins)).trace(kernel.body)
    except _Refuse:
        tr = None
    _TRACES[key] = tr
    while len(_TRACES) > _CACHED:
        _TRACES.popitem(last=False)
    return tr


def same_loop_nest(old: Kernel, new: Kernel) -> None:
    """``new`` is ``old`` with other ``restrict`` flags, which the analysis
    does not read: ``new``'s traces are ``old``'s (saves tracing again)."""
    for (k, out, ins), tr in list(_TRACES.items()):
        if k == old:
            _TRACES[(new, out, ins)] = tr


# --------------------------------------------------------------------------
# Queries
# --------------------------------------------------------------------------

def _check(tr: _Trace, shift: int) -> bool:
    in_bytes = len(tr.last_read) * tr.in_itemsize
    for j in range(tr.write_size):
        b = tr.write_addr + shift + j
        inside = (b >= 0) & (b < in_bytes)
        if not inside.any():
            continue
        e = b[inside] // tr.in_itemsize
        if bool(np.any(tr.last_read[e] >= tr.write_time[inside])):
            return False
    return True


def safe_shift(kernel: Kernel, out: str, ins: Sequence[str], shift: int) -> bool:
    """Whether ``kernel`` may write ``out`` at ``offset(ins) + shift`` (exact
    check of the condition in the module note; False when the analysis
    cannot tell)."""
    tr = _trace(kernel, out, tuple(sorted(ins)))
    return tr is not None and _check(tr, shift)


def _streaming_shift(tr: _Trace) -> int:
    """The largest shift the monotone sufficient condition proves."""
    if len(tr.write_time) == 0:
        return 0
    last = tr.last_read
    order = np.argsort(last, kind="stable")          # elements by last read
    sorted_last = last[order]
    # suffix minimum of element index over elements read last at >= position
    suffix_min = np.minimum.accumulate(order[::-1])[::-1]
    pos = np.searchsorted(sorted_last, tr.write_time, side="right")
    n = len(last)
    lo = np.where(pos < n, suffix_min[np.minimum(pos, n - 1)], n)
    return int(np.min(lo * tr.in_itemsize - tr.write_addr - tr.write_size))


def best_shift(kernel: Kernel, out: str, ins: Sequence[str], alignment: int) -> int | None:
    """The shift (a multiple of ``alignment``) at which the output and the
    input cover the fewest bytes together, among the candidates of the
    module note that are safe; None if no safe candidate overlaps."""
    key = tuple(sorted(ins))
    tr = _trace(kernel, out, key)
    if tr is None:
        return None
    out_bytes = next(p.nbytes for p in kernel.params if p.name == out)
    in_bytes = len(tr.last_read) * tr.in_itemsize
    streaming = _streaming_shift(tr)
    candidates = [0, -(-(in_bytes - out_bytes) // alignment) * alignment,
                  (streaming // alignment) * alignment]
    best: int | None = None
    for s in candidates:
        if s > 0 or s + out_bytes <= 0 or not _check(tr, s):
            continue
        if best is None or (union_bytes(in_bytes, out_bytes, s),
                            -s) < (union_bytes(in_bytes, out_bytes, best), -best):
            best = s
    return best
