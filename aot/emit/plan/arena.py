"""Static memory planning: one arena offset for every intermediate tensor.

The problem
-----------
Each tensor has a size and a lifetime ``[start, end]`` (inclusive steps:
the kernel that writes it first, the last kernel that reads it).  Two
tensors *conflict* when their lifetimes intersect; conflicting tensors must
not overlap in memory.  We choose byte offsets (multiples of ``alignment``)
that minimise the arena, ``max(offset + aligned size)``.  This is
dynamic storage allocation / 2-D strip packing with fixed x positions:
NP-hard in general, so we run a few cheap heuristics and keep the best.

A lower bound is the largest total (aligned) size live at one step.  It is
reached by any plan when lifetimes form a chain, and it is what the plan is
measured against (``arena_bytes / lower_bound_bytes``).

In-place pairs
--------------
``InPlace(out, inp, shift)`` says the kernel at step ``k == inp.end ==
out.start`` may write ``out`` at ``offset(inp) + shift`` although both are
live at ``k`` (a fact about the kernel's loop nest,
:mod:`aot.emit.plan.overlap`; ``shift == 0`` for an elementwise kernel
writing over its input, ``< 0`` for a kernel whose output streams over
the part of its input already consumed).  A *used* pair is placed exactly
so; at step ``k`` the two cover ``union_bytes(inp, out, shift)`` bytes
instead of the sum of their sizes, and the lower bound counts that (each
input and each output at its best pair, a bound valid for any subset of
the pairs).

Pairs are chosen greedily (:func:`_select_pairs`): *tight* pairs first
(their union is the larger of the two: they waste nothing), then by the
bytes they save.  A tensor is consumed in
place at most once and produced in place at most once, so used pairs link
tensors into *chains* ``a -> b -> c`` (``b`` over ``a``, ``c`` over ``b``).
A chain is placed as one *group*: one base offset, each member at its
fixed offset relative to it (the sum of the shifts along the chain).  A pair is refused when it
would make two members of one chain that are not a used pair live at the
same step (only possible through a member whose lifetime is a single
step), because they would overlap in memory.

A group is not treated as one rectangle: when placing it, each member is
checked against the placed tensors that conflict with *that member*, with
*its own* size.  A small output written over a big input therefore reserves
only its own bytes for the rest of its life.

A used pair is still a constraint: tying a small long-lived output to a
big input's offset can make packing worse.  The planner therefore tries
three pair sets in this order and keeps the smallest arena: the tight
pairs alone (they never waste bytes), all usable pairs, and no pairs (the
last two while the work budget lasts).  Shifts add up along a chain (a
network of streaming layers drifts by a little at every layer) and a chain
is placed rigidly, so then, while the budget lasts and the arena is above
the bound, links are dropped from the set of all usable pairs one at a
time, in a fixed order, keeping a drop when it makes the arena smaller
(first improvement, until no drop helps).

Placement: first fit
--------------------
Every strategy below is an *order* of groups; :func:`_place` places them
one by one at the lowest aligned offset where no member overlaps an
already-placed conflicting tensor (gaps between placed tensors are reused,
as in TFLite Micro's GreedyMemoryPlanner; TVM USMP's greedy instead takes
the highest end of the conflicting buffers).  For member ``m`` of size
``s`` and a placed conflicting tensor at ``[o, o + z)``, the offsets in the
open interval ``(o - s, o + z)`` are forbidden; the lowest offset outside
all forbidden intervals is found by one scan of the intervals sorted by
their low end.  Conflict lists are built once, vectorised (intervals sorted
by start; each one's later conflicts are a contiguous run found by binary
search), and stored as CSR arrays; one placement costs
``O(sum of conflicts * log)``, i.e. ``O(n * live)``.  Short rows are scanned
in plain Python, long rows with NumPy (same result, checked by the tests).

Strategies (run in this fixed order; ties keep the first):

1. ``greedy_by_size`` -- largest first (TFLM GreedyMemoryPlanner, TVM
   ``greedy_by_size``); ties: longer lifetime, earlier start, canonical id.
2. ``greedy_by_conflicts`` -- most conflicts first, then larger (TVM
   ``greedy_by_conflicts``).
3. ``greedy_by_start`` -- program order, larger first within a step (what a
   stack-like online allocator would do; good on chains and pipelines).
4. ``hill_climb`` -- bounded improvement of the best order found so far
   (in the spirit of TVM USMP ``hill_climb``): pick a group that touches
   the arena's top, move it just before a conflicting group placed earlier,
   re-place only the suffix of the order that changed, keep the move if the
   arena did not grow.  Randomness comes from a tiny fixed-seed splitmix64
   generator of our own, so the result is the same on every Python.

Everything is deterministic and independent of the input order: tensors
are indexed by key, and every sort has a total tie-break on that index.
Work is counted in conflict-list entries visited; the three greedy orders
on the first pair set always run, the alternative pair sets and the hill
climb only while ``work_budget`` lasts (a count, not a clock, so plans do
not depend on machine load).  The search stops as soon as an arena equals
the lower bound.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Sequence

import numpy as np

__all__ = [
    "TensorLife", "InPlace", "MemoryPlan", "plan_memory", "lower_bound",
    "verify_plan", "align_up", "union_bytes", "ALGORITHMS",
]

#: The strategies, in the order they are tried (ties keep the first).
ALGORITHMS = ("greedy_by_size", "greedy_by_conflicts", "greedy_by_start", "hill_climb")

_DEFAULT_WORK_BUDGET = 1_000_000
_DEFAULT_CLIMB_STEPS = 300
_DEFAULT_SEED = 0x5EED_0F_A7E4A


@dataclass(frozen=True, slots=True)
class TensorLife:
    """One tensor to place: ``start`` is the step that writes it first,
    ``end`` the last step that reads it (``end == start`` if no later step
    reads it)."""

    key: str
    nbytes: int
    start: int
    end: int


@dataclass(frozen=True, slots=True)
class InPlace:
    """The kernel at step ``inp.end == out.start`` may write ``out`` at
    ``offset(inp) + shift`` bytes (``shift`` a multiple of the alignment)."""

    out: str
    inp: str
    shift: int = 0


@dataclass(frozen=True, slots=True)
class MemoryPlan:
    """The planner's decision.  ``offsets`` is ordered by key; ``inplace``
    holds the pairs actually used (sorted by step, then keys); ``trials``
    records ``(algorithm/pair-set, arena)`` for every placement tried."""

    offsets: dict[str, int] = field(hash=False)
    arena_bytes: int
    lower_bound_bytes: int
    algorithm: str
    inplace: tuple[InPlace, ...]
    trials: tuple[tuple[str, int], ...] = field(default=(), compare=False)

    def offset(self, key: str) -> int:
        return self.offsets[key]


def align_up(n: int, alignment: int) -> int:
    return -(-n // alignment) * alignment


# --------------------------------------------------------------------------
# Lower bound and verification
# --------------------------------------------------------------------------

def lower_bound(tensors: Sequence[TensorLife], inplace: Sequence[InPlace] = (),
                alignment: int = 16) -> int:
    """Max over steps of the aligned bytes live at that step; a tensor
    consumed in place at step ``k`` is not counted at ``k``.  Valid for any
    plan that uses any subset of ``inplace``."""
    by_key = _index_tensors(tensors, alignment)
    by_inp: dict[str, int] = {}
    by_out: dict[str, int] = {}
    for pair in inplace:
        _check_pair(by_key, pair, alignment)
        inp, out = by_key[pair.inp], by_key[pair.out]
        si, so = align_up(inp.nbytes, alignment), align_up(out.nbytes, alignment)
        saving = si + so - union_bytes(si, so, pair.shift)
        by_inp[pair.inp] = max(by_inp.get(pair.inp, 0), saving)
        by_out[pair.out] = max(by_out.get(pair.out, 0), saving)
    # at step k: at most the best saving of each input dying there, and of
    # each output born there (each tensor is in at most one used pair each way)
    saved_in: dict[int, int] = {}
    saved_out: dict[int, int] = {}
    for key, saving in by_inp.items():
        saved_in[by_key[key].end] = saved_in.get(by_key[key].end, 0) + saving
    for key, saving in by_out.items():
        saved_out[by_key[key].start] = saved_out.get(by_key[key].start, 0) + saving
    events: list[tuple[int, int]] = []
    for t in tensors:
        size = align_up(t.nbytes, alignment)
        events.append((t.start, size))
        events.append((t.end + 1, -size))
    for step, saving in saved_in.items():
        saving = min(saving, saved_out.get(step, 0))
        events.append((step, -saving))
        events.append((step + 1, saving))
    events.sort()
    best = live = 0
    i = 0
    while i < len(events):
        step = events[i][0]
        while i < len(events) and events[i][0] == step:
            live += events[i][1]
            i += 1
        best = max(best, live)
    return best


def union_bytes(in_bytes: int, out_bytes: int, shift: int) -> int:
    """Bytes an input and an output placed ``shift`` bytes after it cover."""
    return max(in_bytes, shift + out_bytes) - min(0, shift)


def verify_plan(tensors: Sequence[TensorLife], plan: MemoryPlan, alignment: int = 16) -> None:
    """Raise AssertionError (naming the tensors) unless ``plan`` is a valid
    placement of ``tensors``: every tensor has an aligned offset, fits in
    the arena, and no two tensors live at one step overlap in memory,
    except a used in-place pair, which must be placed at its shift."""
    by_key = _index_tensors(tensors, alignment)
    extra = sorted(set(plan.offsets) - set(by_key))
    assert not extra, f"plan has offsets for unknown tensors {extra}"
    for t in tensors:
        assert t.key in plan.offsets, f"tensor {t.key!r} has no offset"
        off = plan.offsets[t.key]
        assert isinstance(off, int) and off >= 0 and off % alignment == 0, (
            f"tensor {t.key!r}: offset {off} is not a non-negative multiple of {alignment}")
        assert off + t.nbytes <= plan.arena_bytes, (
            f"tensor {t.key!r} [{off}, {off + t.nbytes}) exceeds the arena of "
            f"{plan.arena_bytes} bytes")
    shared: set[tuple[str, str]] = set()
    for pair in plan.inplace:
        _check_pair(by_key, pair, alignment)
        assert plan.offsets[pair.out] == plan.offsets[pair.inp] + pair.shift, (
            f"in-place pair {pair.out!r} over {pair.inp!r} (shift {pair.shift}) is placed "
            f"at offsets {plan.offsets[pair.out]} and {plan.offsets[pair.inp]}")
        shared.add((pair.out, pair.inp))
        shared.add((pair.inp, pair.out))
    active: list[TensorLife] = []
    for t in sorted(tensors, key=lambda t: (t.start, t.key)):
        active = [u for u in active if u.end >= t.start]
        lo = plan.offsets[t.key]
        hi = lo + t.nbytes
        for u in active:
            u_lo = plan.offsets[u.key]
            if u_lo < hi and lo < u_lo + u.nbytes and (t.key, u.key) not in shared:
                raise AssertionError(
                    f"tensors {u.key!r} (steps {u.start}..{u.end}, bytes "
                    f"[{u_lo}, {u_lo + u.nbytes})) and {t.key!r} (steps "
                    f"{t.start}..{t.end}, bytes [{lo}, {hi})) are live at the same "
                    f"step and overlap in memory")
        active.append(t)


def _index_tensors(tensors: Sequence[TensorLife], alignment: int) -> dict[str, TensorLife]:
    assert isinstance(alignment, int) and alignment > 0, f"bad alignment {alignment!r}"
    by_key: dict[str, TensorLife] = {}
    for t in tensors:
        assert t.key not in by_key, f"duplicate tensor key {t.key!r}"
        assert t.nbytes > 0, f"tensor {t.key!r} has nbytes {t.nbytes} (must be > 0)"
        assert t.start <= t.end, f"tensor {t.key!r} ends ({t.end}) before it starts ({t.start})"
        by_key[t.key] = t
    return by_key


def _check_pair(by_key: dict[str, TensorLife], pair: InPlace, alignment: int) -> None:
    assert pair.out in by_key, f"in-place pair names unknown output {pair.out!r}"
    assert pair.inp in by_key, f"in-place pair names unknown input {pair.inp!r}"
    assert pair.out != pair.inp, f"in-place pair of {pair.out!r} with itself"
    out, inp = by_key[pair.out], by_key[pair.inp]
    assert inp.end == out.start, (
        f"in-place pair {pair.out!r} over {pair.inp!r}: input's last read "
        f"(step {inp.end}) is not the output's first write (step {out.start})")
    assert pair.shift % alignment == 0, (
        f"in-place pair {pair.out!r} over {pair.inp!r}: shift {pair.shift} is not a "
        f"multiple of {alignment}")


# --------------------------------------------------------------------------
# Problem: tensors indexed canonically (by key), with conflict lists
# --------------------------------------------------------------------------

@dataclass(frozen=True, slots=True, eq=False)
class _Problem:
    keys: tuple[str, ...]          # sorted; the index of a key is its tensor id
    size: tuple[int, ...]          # aligned sizes
    start: tuple[int, ...]
    end: tuple[int, ...]
    #: conflicts as CSR: the tensors whose lifetime intersects tensor t's
    #: are nbr[ptr[t]:ptr[t + 1]]
    ptr: np.ndarray
    nbr: np.ndarray
    index: dict[str, int]


def _build_problem(tensors: Sequence[TensorLife], alignment: int) -> _Problem:
    ordered = sorted(tensors, key=lambda t: t.key)
    keys = tuple(t.key for t in ordered)
    start = np.array([t.start for t in ordered], dtype=np.int64)
    end = np.array([t.end for t in ordered], dtype=np.int64)
    a, b = _intersecting_pairs(start, end)
    both_a, both_b = np.concatenate((a, b)), np.concatenate((b, a))
    by_a = np.lexsort((both_b, both_a))
    ptr = np.zeros(len(ordered) + 1, dtype=np.int64)
    np.cumsum(np.bincount(both_a, minlength=len(ordered)), out=ptr[1:])
    return _Problem(
        keys=keys,
        size=tuple(align_up(t.nbytes, alignment) for t in ordered),
        start=tuple(t.start for t in ordered),
        end=tuple(t.end for t in ordered),
        ptr=ptr,
        nbr=both_b[by_a],
        index={k: i for i, k in enumerate(keys)},
    )


def _intersecting_pairs(start: np.ndarray, end: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Every unordered pair of intersecting lifetimes, once, by an interval
    sweep: in start order, tensor ``p`` intersects exactly the later tensors
    ``q`` with ``start[q] <= end[p]`` -- a contiguous run found by binary
    search.  O(n log n + pairs), vectorised."""
    n = len(start)
    by_start = np.lexsort((np.arange(n), start))
    sorted_start = start[by_start]
    last = np.searchsorted(sorted_start, end[by_start], side="right")   # exclusive
    first = np.arange(1, n + 1)
    count = np.maximum(last - first, 0)
    total = int(count.sum())
    src = np.repeat(np.arange(n), count)
    run_begin = np.repeat(np.cumsum(count) - count, count)
    dst = np.arange(total) - run_begin + np.repeat(first, count)
    return by_start[src], by_start[dst]


# --------------------------------------------------------------------------
# In-place pair selection and groups
# --------------------------------------------------------------------------

def _saving(p: _Problem, o: int, i: int, shift: int) -> int:
    return p.size[o] + p.size[i] - union_bytes(p.size[i], p.size[o], shift)


def _tight(p: _Problem, o: int, i: int, shift: int) -> bool:
    return union_bytes(p.size[i], p.size[o], shift) == max(p.size[i], p.size[o])


def _select_pairs(p: _Problem, pairs: Sequence[InPlace],
                  tight_only: bool) -> tuple[tuple[int, int, int], ...]:
    """Greedily choose usable pairs, as (out id, inp id, shift)."""
    best: dict[tuple[int, int], int] = {}
    for pair in pairs:
        o, i = p.index[pair.out], p.index[pair.inp]
        if tight_only and not _tight(p, o, i, pair.shift):
            continue
        if (o, i) not in best or _saving(p, o, i, pair.shift) > _saving(p, o, i, best[o, i]):
            best[o, i] = pair.shift
    ranked = sorted(best, key=lambda oi: (not _tight(p, oi[0], oi[1], best[oi]),
                                          -_saving(p, oi[0], oi[1], best[oi]), p.start[oi[0]],
                                          oi))
    succ: dict[int, int] = {}   # inp -> out
    pred: dict[int, int] = {}   # out -> inp
    for o, i in ranked:
        if i in succ or o in pred:
            continue
        # A single-step link would make its chain neighbours live together.
        if p.start[i] == p.end[i] and i in pred:
            continue
        if p.start[o] == p.end[o] and o in succ:
            continue
        succ[i] = o
        pred[o] = i
    return tuple(sorted((o, i, best[o, i]) for i, o in succ.items()))


@dataclass(frozen=True, slots=True, eq=False)
class _Groups:
    """Chains of tensors linked by used pairs, each member at a fixed offset
    ``rel`` from its group's base offset.

    The conflicts of group ``g`` are entries ``row_ptr[g]:row_ptr[g+1]`` of
    three parallel arrays: the low end of the open interval of base offsets
    the conflict forbids relative to the other group's base, that group,
    and the high end (for member ``a`` and the other group's member ``b``:
    ``(rel_b - rel_a - size_a, rel_b + size_b - rel_a)``).  Short rows are
    also needed as Python lists (see :func:`_place`); :meth:`row` makes
    them on first use."""

    members: tuple[tuple[int, ...], ...]
    group_of: tuple[int, ...]
    size: tuple[int, ...]        # extent: max of rel + size over the members
    rel: tuple[int, ...]         # per tensor: offset from its group's base
    start: tuple[int, ...]
    end: tuple[int, ...]
    row_ptr: tuple[int, ...]
    c_lo: np.ndarray
    c_group: np.ndarray
    c_hi: np.ndarray
    _rows: list

    def degree(self, g: int) -> int:
        return self.row_ptr[g + 1] - self.row_ptr[g]

    def row(self, g: int) -> list[tuple[int, int, int]]:
        """(forbidden low, other group, forbidden high) for each conflict of g."""
        cached = self._rows[g]
        if cached is None:
            lo, hi = self.row_ptr[g], self.row_ptr[g + 1]
            cached = list(zip(self.c_lo[lo:hi].tolist(), self.c_group[lo:hi].tolist(),
                              self.c_hi[lo:hi].tolist()))
            self._rows[g] = cached
        return cached

    def neighbours(self, g: int) -> list[int]:
        return self.c_group[self.row_ptr[g]:self.row_ptr[g + 1]].tolist()


def _build_groups(p: _Problem, used: tuple[tuple[int, int, int], ...]) -> _Groups:
    succ = {i: o for o, i, _ in used}
    pred = {o: i for o, i, _ in used}
    shift = {o: s for o, _, s in used}
    n = len(p.keys)
    members: list[tuple[int, ...]] = []
    group_of = [-1] * n
    rel = [0] * n
    for head in range(n):
        if head in pred:
            continue
        chain = [head]
        while chain[-1] in succ:
            chain.append(succ[chain[-1]])
        for t in chain:
            assert group_of[t] == -1, f"tensor {p.keys[t]!r} is in two in-place chains"
            group_of[t] = len(members)
        at = [0]
        for t in chain[1:]:
            at.append(at[-1] + shift[t])
        base = min(at)
        for t, r in zip(chain, at):
            rel[t] = r - base
        members.append(tuple(chain))
    assert all(g >= 0 for g in group_of), "in-place pairs form a cycle"

    # Concatenate the conflict rows of each group's members (tensors in
    # group order), then drop conflicts inside a group.
    gof = np.array(group_of, dtype=np.int64)
    size = np.array(p.size, dtype=np.int64)
    rel_a = np.array(rel, dtype=np.int64)
    perm = np.fromiter((t for chain in members for t in chain), dtype=np.int64, count=n)
    count = p.ptr[perm + 1] - p.ptr[perm]
    total = int(count.sum())
    run_begin = np.repeat(np.cumsum(count) - count, count)
    entries = np.arange(total) - run_begin + np.repeat(p.ptr[perm], count)
    a = np.repeat(perm, count)
    b = p.nbr[entries]
    ga, gb = gof[a], gof[b]
    keep = ga != gb
    a, b, ga, gb = a[keep], b[keep], ga[keep], gb[keep]
    row_ptr = np.zeros(len(members) + 1, dtype=np.int64)
    np.cumsum(np.bincount(ga, minlength=len(members)), out=row_ptr[1:])
    return _Groups(
        members=tuple(members),
        group_of=tuple(group_of),
        size=tuple(max(rel[m] + p.size[m] for m in c) for c in members),
        rel=tuple(rel),
        start=tuple(p.start[c[0]] for c in members),
        end=tuple(max(p.end[m] for m in c) for c in members),
        row_ptr=tuple(row_ptr.tolist()),
        c_lo=rel_a[b] - rel_a[a] - size[a], c_group=gb, c_hi=rel_a[b] + size[b] - rel_a[a],
        _rows=[None] * len(members),
    )


# --------------------------------------------------------------------------
# First-fit placement of an order of groups
# --------------------------------------------------------------------------

class _Work:
    """A budget of conflict-list entries visited."""

    __slots__ = ("left",)

    def __init__(self, budget: int) -> None:
        self.left = budget

    def charge(self, n: int) -> None:
        self.left -= n

    @property
    def exhausted(self) -> bool:
        return self.left <= 0


#: Rows longer than this are scanned with NumPy, shorter ones in Python
#: (NumPy's per-call overhead only pays off on long rows).
_VECTOR_ROW = 48


class _Offsets:
    """Group offsets, -1 for unplaced, mirrored as a list and an array."""

    __slots__ = ("list", "array")

    def __init__(self, n: int) -> None:
        self.list = [-1] * n
        self.array = np.full(n, -1, dtype=np.int64)

    def set(self, g: int, off: int) -> None:
        self.list[g] = off
        self.array[g] = off

    def copy(self) -> list[int]:
        return list(self.list)


def _place(gr: _Groups, order: Sequence[int], offs: _Offsets, first: int, work: _Work) -> None:
    """Place ``order[first:]`` by first fit; the groups in it must be
    unplaced (offset -1)."""
    visited = 0
    for pos in range(first, len(order)):
        g = order[pos]
        lo_i, hi_i = gr.row_ptr[g], gr.row_ptr[g + 1]
        visited += hi_i - lo_i + 1
        if hi_i - lo_i > _VECTOR_ROW:
            off = _first_fit_vector(gr, offs.array, lo_i, hi_i)
        else:
            off = _first_fit_list(gr.row(g), offs.list)
        offs.set(g, off)
    work.charge(visited)


def _first_fit_list(row: list[tuple[int, int, int]], goff: list[int]) -> int:
    forbidden = [(ou + lo, ou + hi) for lo, gu, hi in row if (ou := goff[gu]) >= 0]
    if not forbidden:
        return 0
    forbidden.sort()
    off = 0
    for lo, hi in forbidden:
        if off <= lo:
            break
        if hi > off:
            off = hi
    return off


def _first_fit_vector(gr: _Groups, goff: np.ndarray, lo_i: int, hi_i: int) -> int:
    """The same scan as :func:`_first_fit_list`: with the forbidden open
    intervals sorted by low end, the candidate before interval ``k`` is the
    running max of the earlier high ends (at least 0); the answer is the
    first candidate not inside its interval."""
    ou = goff[gr.c_group[lo_i:hi_i]]
    placed = ou >= 0
    if not placed.any():
        return 0
    ou = ou[placed]
    lo = ou + gr.c_lo[lo_i:hi_i][placed]
    hi = ou + gr.c_hi[lo_i:hi_i][placed]
    by_lo = np.argsort(lo, kind="stable")
    lo, hi = lo[by_lo], hi[by_lo]
    candidate = np.empty(len(lo) + 1, dtype=np.int64)
    candidate[0] = 0
    np.maximum.accumulate(hi, out=candidate[1:])
    np.maximum(candidate, 0, out=candidate)
    free = np.flatnonzero(candidate[:-1] <= lo)
    return int(candidate[free[0]] if free.size else candidate[-1])


def _arena(gr: _Groups, goff: Sequence[int]) -> int:
    return max((o + s for o, s in zip(goff, gr.size)), default=0)


_OrderKey = Callable[[_Groups], Callable[[int], tuple]]

_ORDERS: tuple[tuple[str, _OrderKey], ...] = (
    ("greedy_by_size",
     lambda gr: lambda g: (-gr.size[g], gr.start[g] - gr.end[g], gr.start[g], g)),
    ("greedy_by_conflicts",
     lambda gr: lambda g: (-gr.degree(g), -gr.size[g], gr.start[g], g)),
    ("greedy_by_start",
     lambda gr: lambda g: (gr.start[g], -gr.size[g], -gr.end[g], g)),
)


# --------------------------------------------------------------------------
# Hill climbing
# --------------------------------------------------------------------------

class _SplitMix64:
    """A tiny deterministic generator (splitmix64), the same on every Python."""

    __slots__ = ("state",)
    _MASK = (1 << 64) - 1

    def __init__(self, seed: int) -> None:
        self.state = seed & self._MASK

    def below(self, n: int) -> int:
        self.state = (self.state + 0x9E3779B97F4A7C15) & self._MASK
        z = self.state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & self._MASK
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & self._MASK
        return (z ^ (z >> 31)) % n


def _hill_climb(gr: _Groups, order: list[int], offs: _Offsets, target: int,
                steps: int, seed: int, work: _Work) -> tuple[int, list[int]] | None:
    """Improve the placed ``order`` (mutating ``order`` and ``offs``);
    return (arena, offsets) of the best strictly smaller arena found, or
    None."""
    rng = _SplitMix64(seed)
    pos = [0] * len(order)
    for i, g in enumerate(order):
        pos[g] = i
    arena = start_arena = _arena(gr, offs.list)
    best: tuple[int, list[int]] | None = None
    for _ in range(steps):
        if arena <= target or work.exhausted:
            break
        work.charge(len(order))
        tops = [g for g, (o, s) in enumerate(zip(offs.list, gr.size)) if o + s == arena]
        g = tops[rng.below(len(tops))]
        earlier = sorted({h for h in gr.neighbours(g) if pos[h] < pos[g]})
        if not earlier:
            continue  # g sits at offset 0: the arena is its own size
        h = earlier[rng.below(len(earlier))]
        a, b = pos[h], pos[g]
        # move g to just before h; re-place the suffix from h's position
        saved_order = order[a:b + 1]
        saved_off = [offs.list[x] for x in order[a:]]
        order[a:b + 1] = [g] + saved_order[:-1]
        for x in order[a:]:
            offs.set(x, -1)
        _place(gr, order, offs, a, work)
        new_arena = _arena(gr, offs.list)
        if new_arena <= arena:
            for i in range(a, b + 1):
                pos[order[i]] = i
            arena = new_arena
            if arena < start_arena and (best is None or arena < best[0]):
                best = (arena, offs.copy())
        else:
            order[a:b + 1] = saved_order
            for x, o in zip(order[a:], saved_off):
                offs.set(x, o)
    return best


# --------------------------------------------------------------------------
# The planner
# --------------------------------------------------------------------------

@dataclass(slots=True)
class _Candidate:
    arena: int
    algorithm: str
    groups: _Groups
    used: tuple[tuple[int, int, int], ...]
    order: list[int]
    goff: list[int]


def plan_memory(tensors: Sequence[TensorLife], inplace: Sequence[InPlace] = (),
                alignment: int = 16, *, work_budget: int = _DEFAULT_WORK_BUDGET,
                climb_steps: int = _DEFAULT_CLIMB_STEPS,
                seed: int = _DEFAULT_SEED) -> MemoryPlan:
    """Choose an aligned arena offset for every tensor (see the module
    docstring).  ``work_budget`` bounds the optional searches (alternative
    in-place pair sets, hill climbing) in conflict-list entries visited."""
    by_key = _index_tensors(tensors, alignment)
    for pair in inplace:
        _check_pair(by_key, pair, alignment)
    bound = lower_bound(tensors, inplace, alignment)
    if not tensors:
        return MemoryPlan(offsets={}, arena_bytes=0, lower_bound_bytes=0,
                          algorithm="empty", inplace=())
    p = _build_problem(tensors, alignment)
    work = _Work(work_budget)
    trials: list[tuple[str, int]] = []

    pair_sets: list[tuple[str, tuple[tuple[int, int, int], ...]]] = []
    for label, chosen in (("tight", _select_pairs(p, inplace, tight_only=True)),
                          ("all", _select_pairs(p, inplace, tight_only=False)),
                          ("none", ())):
        if all(chosen != c for _, c in pair_sets):
            pair_sets.append((label, chosen))

    best: _Candidate | None = None
    arena_of: dict[tuple[tuple[int, int, int], ...], int] = {}
    for label, used in pair_sets:
        if best is not None and (best.arena <= bound or work.exhausted):
            break
        before = len(trials)
        best = _try_pairs(p, used, label if len(pair_sets) > 1 else "", best, bound, work,
                          trials)
        arena_of[used] = min(a for _, a in trials[before:])
    assert best is not None

    # Links of a chain add up their shifts and tie tensors that never meet:
    # starting from all usable pairs, drop one link at a time while that
    # makes the arena smaller (first improvement, in a fixed order).
    current = _select_pairs(p, inplace, tight_only=False)
    current_arena = arena_of.get(current, 0)
    while current and best.arena > bound and not work.exhausted:
        for link in current:
            trial = tuple(x for x in current if x != link)
            before = len(trials)
            best = _try_pairs(p, trial, "drop", best, bound, work, trials)
            arena = min(a for _, a in trials[before:])
            if arena < current_arena or work.exhausted:
                break
        else:
            break
        if arena >= current_arena:
            break
        current, current_arena = trial, arena

    target = max(bound, max(best.groups.size))
    if best.arena > target and not work.exhausted and climb_steps > 0:
        offs = _Offsets(len(best.goff))
        for g, o in enumerate(best.goff):
            offs.set(g, o)
        climbed = _hill_climb(best.groups, list(best.order), offs, target,
                              climb_steps, seed, work)
        if climbed is not None:
            trials.append(("hill_climb", climbed[0]))
            best = _Candidate(climbed[0], "hill_climb", best.groups, best.used,
                              best.order, climbed[1])

    return _make_plan(p, best, bound, tuple(trials))


def _try_pairs(p: _Problem, used: tuple[tuple[int, int, int], ...], label: str,
               best: _Candidate | None, bound: int, work: _Work,
               trials: list[tuple[str, int]]) -> _Candidate:
    """Place the groups of ``used`` in every greedy order; the better of
    that and ``best``."""
    gr = _build_groups(p, used)
    for name, key in _ORDERS:
        order = sorted(range(len(gr.members)), key=key(gr))
        offs = _Offsets(len(order))
        _place(gr, order, offs, 0, work)
        arena = _arena(gr, offs.list)
        trials.append((f"{name}/inplace={label}" if label else name, arena))
        if best is None or arena < best.arena:
            best = _Candidate(arena, name, gr, used, order, offs.copy())
        if best.arena <= bound:
            break
    assert best is not None
    return best


def _make_plan(p: _Problem, best: _Candidate, bound: int,
               trials: tuple[tuple[str, int], ...]) -> MemoryPlan:
    gr = best.groups
    offsets = {k: best.goff[gr.group_of[i]] + gr.rel[i] for i, k in enumerate(p.keys)}
    arena = max(offsets[k] + p.size[i] for i, k in enumerate(p.keys))
    assert arena == best.arena and arena >= bound, (arena, best.arena, bound)
    used = tuple(InPlace(out=p.keys[o], inp=p.keys[i], shift=s)
                 for o, i, s in sorted(best.used, key=lambda ois: (p.start[ois[0]], ois)))
    return MemoryPlan(offsets=offsets, arena_bytes=arena, lower_bound_bytes=bound,
                      algorithm=best.algorithm, inplace=used, trials=trials)
