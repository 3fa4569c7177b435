"""Verification of a plan's control flow: its loops and branches over calls
(:class:`~aot.emit.plan.model.LoopSpan`, :class:`~aot.emit.plan.model.BranchSpan`).

What holds after it: every span is a span of calls, tested on a
one-element bool tensor (an arena one inside the arena); a branch's two
parts are non-empty; spans nest properly -- a span inside a branch lies in
one of its parts, a span inside a loop on one side of its test, and a
branch and a loop of the same calls are the branch inside the loop; and
a buffer one part of a branch writes that is read after the branch before
anything writes it again (or is an output of the entry) is written by the
other part too: whichever branch runs leaves the result in the same place.
"""

from __future__ import annotations

from typing import Callable, Union

from ...ir.dtype import DType
from ..kernel.walk import stored_buffers
from .model import ARENA_ALIGNMENT, ArgKind, BranchSpan, BufferRef, LoopSpan, ModelPlan

__all__ = ["check_control"]

_Span = Union[LoopSpan, BranchSpan]
_Key = tuple[ArgKind, int, int, DType, int]


def check_control(plan: ModelPlan, fail: Callable[[str], None]) -> None:
    """The plan's loops and branches (``fail`` raises)."""
    n = len(plan.calls)
    spans: list[_Span] = [*plan.loops, *plan.branches]
    for sp in spans:
        what = _name(sp)
        if isinstance(sp, LoopSpan):
            if not 0 <= sp.begin <= sp.test <= sp.end <= n:
                fail(f"{what} is not a span of calls")
        elif not 0 <= sp.begin < sp.mid < sp.end <= n:
            fail(f"{what} is not two non-empty spans of calls")
        ref = sp.cond
        if ref.dtype is not DType.BOOL or ref.size != 1:
            fail(f"{what} tests {ref}, not a bool element")
        if ref.kind is ArgKind.ARENA and (ref.offset < 0 or ref.offset % ARENA_ALIGNMENT or
                                          ref.offset + 1 > plan.arena_bytes):
            fail(f"{what} tests arena byte {ref.offset}, misaligned or outside the arena")
    for a in spans:
        for b in spans:
            if a is not b and not _apart_or_nested(a, b) and not _apart_or_nested(b, a):
                fail(f"{_name(a)} and {_name(b)} overlap without nesting")
    if plan.branches:
        _check_results(plan, fail)


def _name(sp: _Span) -> str:
    if isinstance(sp, LoopSpan):
        return f"loop [{sp.begin}, {sp.test}, {sp.end})"
    return f"branch [{sp.begin}, {sp.mid}, {sp.end})"


def _cuts(sp: _Span) -> int:
    return sp.test if isinstance(sp, LoopSpan) else sp.mid


def _apart_or_nested(inner: _Span, outer: _Span) -> bool:
    """``inner`` and ``outer`` are apart, or ``inner`` nests in ``outer``."""
    if inner.end <= outer.begin or outer.end <= inner.begin:
        return True
    if not (outer.begin <= inner.begin and inner.end <= outer.end):
        return False
    if (inner.begin, inner.end) == (outer.begin, outer.end):
        if isinstance(inner, LoopSpan) and isinstance(outer, LoopSpan):
            return True                  # (two loops of the same calls: one test each)
        if not (isinstance(inner, BranchSpan) and isinstance(outer, LoopSpan)):
            return False                 # the loop is outside
    cut = _cuts(outer)
    return inner.end <= cut or cut <= inner.begin


def _key(ref: BufferRef) -> _Key:
    return (ref.kind, ref.index, ref.offset, ref.dtype, ref.size)


def _check_results(plan: ModelPlan, fail: Callable[[str], None]) -> None:
    kernels = {k.name: k for k in plan.kernels}
    writes: list[set[_Key]] = []
    reads: list[set[_Key]] = []
    for call in plan.calls:
        kernel = kernels[call.kernel]
        stored = stored_buffers(kernel.body)
        w = {_key(r) for r, p in zip(call.args, kernel.params) if p.name in stored}
        writes.append(w)
        reads.append({_key(r) for r, p in zip(call.args, kernel.params)
                      if p.name not in stored})
    spans: list[_Span] = [*plan.loops, *plan.branches]
    for sp in spans:                             # a test reads its condition
        reads[min(_cuts(sp) if isinstance(sp, LoopSpan) else sp.begin, len(plan.calls) - 1)
              ].add(_key(sp.cond))
    outputs = {_key(BufferRef(ArgKind.OUTPUT, t.dtype, _size(t.shape), index=i))
               for i, t in enumerate(plan.outputs)}
    for br in plan.branches:
        then = set().union(*writes[br.begin:br.mid])
        other = set().union(*writes[br.mid:br.end])
        for key in sorted(then ^ other, key=repr):
            if _read_after(key, br.end, reads, writes, outputs):
                part = "then" if key in then else "else"
                fail(f"branch [{br.begin}, {br.mid}, {br.end}): only its {part} part writes "
                     f"{key[0].value} buffer {_where(key)}, read after the branch")


def _size(shape: tuple[int, ...]) -> int:
    n = 1
    for d in shape:
        n *= int(d)
    return n


def _where(key: _Key) -> str:
    kind, index, offset, dtype, size = key
    place = f"at byte {offset}" if kind is ArgKind.ARENA else f"#{index}"
    return f"{place} ({size} x {dtype})"


def _read_after(key: _Key, start: int, reads: list[set[_Key]], writes: list[set[_Key]],
                outputs: set[_Key]) -> bool:
    """``key``'s value at call ``start`` is read later (in call order)."""
    for r, w in zip(reads[start:], writes[start:]):
        if key in r:
            return True
        if key in w:
            return False
    return key in outputs
