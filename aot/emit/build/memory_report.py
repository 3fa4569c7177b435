"""The memory report of a model: its arena as a picture (SVG) and a table.

Design note
-----------
Read from the plan (:class:`~aot.emit.plan.model.ModelPlan`) as it is:
the calls, in order, and where each argument lives.  A kernel's parameter
of scope ``input`` (or ``const``) is read, any other is written.  A
*tensor* is an arena range a call writes: it lives from that call (its
first step) to the last call that reads the same range (offset and size)
before another call writes there.  Reads are resolved before the call's
own writes, so an output placed over its input (in place, or overlapping
it) is a new tensor starting where the input ends.

The picture: time (kernel index) runs left to right, arena offset bottom
to top; each tensor is one ``<rect class="tensor">`` spanning its steps
and bytes (with a ``<title>`` for tools that show it), the planner's lower
bound is a dashed line, the arena's size a solid one, and the *peak
kernel* (the first step with the most bytes live) a shaded column.  Plain
string building, fixed number formats and a colour per tensor index: the
same plan gives the same bytes.
"""

from __future__ import annotations

from dataclasses import dataclass
from xml.sax.saxutils import escape

from ..kernel.ir import BufferScope
from ..plan.model import ArgKind, ModelPlan

__all__ = ["ArenaTensor", "arena_tensors", "memory_svg", "memory_table", "peak_step"]

_READ = (BufferScope.INPUT, BufferScope.CONST)


@dataclass(frozen=True, slots=True)
class ArenaTensor:
    """One tensor of the arena: ``[offset, offset + nbytes)`` from step
    ``start`` to step ``end`` (inclusive); ``writer`` the kernel at ``start``."""

    index: int
    offset: int
    nbytes: int
    start: int
    end: int
    writer: str


def arena_tensors(plan: ModelPlan) -> list[ArenaTensor]:
    """The arena's tensors, in the order the calls write them."""
    kernels = {k.name: k for k in plan.kernels}
    found: list[list] = []                 # [offset, nbytes, start, end, writer]
    latest: dict[tuple[int, int], int] = {}
    for step, call in enumerate(plan.calls):
        params = kernels[call.kernel].params
        writes = []
        for param, arg in zip(params, call.args):
            if arg.kind is not ArgKind.ARENA:
                continue
            key = (arg.offset, arg.dtype.nbytes(arg.size))
            if param.scope in _READ:
                if key in latest:
                    found[latest[key]][3] = step
            else:
                writes.append(key)
        for key in writes:
            if key in latest and found[latest[key]][2] == step:
                continue                   # written twice by one call: one tensor
            latest[key] = len(found)
            found.append([key[0], key[1], step, step, call.kernel])
    return [ArenaTensor(i, *row) for i, row in enumerate(found)]


def live_bytes(plan: ModelPlan, tensors: list[ArenaTensor]) -> list[int]:
    """Bytes of the arena in use at each step: the tensors live then, less
    what an output written over an input at its last step shares with it
    (as the planner's lower bound counts an in-place pair once)."""
    live = [0] * len(plan.calls)
    for t in tensors:
        for step in range(t.start, t.end + 1):
            live[step] += t.nbytes
    starting: dict[int, list[ArenaTensor]] = {}
    for t in tensors:
        starting.setdefault(t.start, []).append(t)
    for a in tensors:
        for b in starting.get(a.end, ()):
            if a is not b and a.start < a.end:
                shared = min(a.offset + a.nbytes, b.offset + b.nbytes) - max(a.offset, b.offset)
                live[a.end] -= max(shared, 0)
    return live


def peak_step(plan: ModelPlan, tensors: list[ArenaTensor]) -> int | None:
    """The first step with the most bytes live (None without tensors)."""
    live = live_bytes(plan, tensors)
    if not tensors:
        return None
    return max(range(len(live)), key=lambda k: (live[k], -k))


# ------------------------------------------------------------------- table

def memory_table(plan: ModelPlan) -> str:
    """A short text table of the arena."""
    tensors = arena_tensors(plan)
    head = (f"arena of `{plan.name}`: {plan.arena_bytes:,} bytes (lower bound "
            f"{plan.arena_lower_bound_bytes:,}), {len(tensors)} tensors, "
            f"{len(plan.calls)} kernel calls")
    if plan.program is not None:
        head += f"; object pool {plan.pool_bytes:,} bytes (a program: no arena)"
    if plan.branches:
        head += (f"; {len(plan.branches)} if/else branch spans (a result buffer both "
                 "parts write shows as two tensors)")
    peak = peak_step(plan, tensors)
    if peak is not None:
        head += (f"; peak at call {peak} ({plan.calls[peak].kernel}): "
                 f"{live_bytes(plan, tensors)[peak]:,} bytes live")
    rows = [head, "", f"{'tensor':>6} {'offset':>10} {'bytes':>10} {'first':>6} {'last':>6}  "
                      "written by"]
    for t in tensors:
        rows.append(f"t{t.index:<5} {t.offset:>10,} {t.nbytes:>10,} {t.start:>6} {t.end:>6}  "
                    f"{t.writer}")
    return "\n".join(rows) + "\n"


# --------------------------------------------------------------------- svg

_LEFT, _RIGHT, _TOP, _BOTTOM = 84, 24, 44, 48
_PLOT_H = 420


def _colour(i: int) -> str:
    hue = (i * 137) % 360                  # the golden angle: neighbours differ
    return f"hsl({hue},60%,62%)"


def memory_svg(plan: ModelPlan) -> str:
    """The arena as a self-contained SVG document."""
    tensors = arena_tensors(plan)
    steps = max(len(plan.calls), 1)
    col = max(8, min(48, 960 // steps))
    width = _LEFT + steps * col + _RIGHT
    height = _TOP + _PLOT_H + _BOTTOM
    top = max(plan.arena_bytes, plan.arena_lower_bound_bytes, 1)
    scale = _PLOT_H / top

    def y(offset: int) -> float:
        return _TOP + _PLOT_H - offset * scale

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="11">',
           f"<title>arena of {escape(plan.name)}</title>",
           f'<rect x="0" y="0" width="{width}" height="{height}" fill="white"/>',
           f'<text x="{_LEFT}" y="18" font-size="13">{escape(_caption(plan, tensors))}</text>']
    peak = peak_step(plan, tensors)
    if peak is not None:
        out.append(f'<rect class="peak" x="{_LEFT + peak * col}" y="{_TOP}" width="{col}" '
                   f'height="{_PLOT_H}" fill="#ffe9a8"/>')
        out.append(f'<text x="{_LEFT + peak * col + col / 2:.1f}" y="{_TOP - 6}" '
                   f'text-anchor="middle">peak: {escape(plan.calls[peak].kernel)}</text>')
    out.append(f'<rect x="{_LEFT}" y="{_TOP}" width="{steps * col}" height="{_PLOT_H}" '
               'fill="none" stroke="#999"/>')
    for t in tensors:
        h = max(t.nbytes * scale, 1.0)
        out.append(
            f'<rect class="tensor" x="{_LEFT + t.start * col + 1}" '
            f'y="{y(t.offset + t.nbytes):.2f}" width="{(t.end - t.start + 1) * col - 2}" '
            f'height="{h:.2f}" fill="{_colour(t.index)}" fill-opacity="0.8" stroke="#333" '
            'stroke-width="0.5">'
            f"<title>t{t.index}: {t.nbytes:,} bytes at offset {t.offset:,}, calls "
            f"{t.start}..{t.end}, written by {escape(t.writer)}</title></rect>")
    lines = [(plan.arena_bytes, "arena", ""),
             (plan.arena_lower_bound_bytes, "lower bound", ' stroke-dasharray="6,4"')]
    if plan.arena_bytes == plan.arena_lower_bound_bytes:    # one label, not two on top
        lines = [(plan.arena_bytes, "arena = lower bound", ' stroke-dasharray="6,4"')]
    for value, label, dash in lines:
        cls = "arena" if label == "arena" else "lower-bound"
        out.append(f'<line class="{cls}" x1="{_LEFT}" y1="{y(value):.2f}" '
                   f'x2="{_LEFT + steps * col}" y2="{y(value):.2f}" stroke="#c00"{dash}/>')
        out.append(f'<text x="{_LEFT - 4}" y="{y(value) + 4:.2f}" text-anchor="end">'
                   f"{value:,}</text>")
        out.append(f'<text x="{_LEFT + steps * col - 2}" y="{y(value) - 3:.2f}" '
                   f'text-anchor="end" fill="#c00">{label}</text>')
    out.append(f'<text x="{_LEFT - 4}" y="{y(0) + 4:.2f}" text-anchor="end">0</text>')
    every = max(1, (steps + 19) // 20)
    for k in range(0, len(plan.calls), every):
        out.append(f'<text x="{_LEFT + k * col + col / 2:.1f}" y="{_TOP + _PLOT_H + 14}" '
                   f'text-anchor="middle">{k}</text>')
    out.append(f'<text x="{_LEFT + steps * col / 2:.1f}" y="{height - 12}" '
               'text-anchor="middle">kernel call (time)</text>')
    out.append(f'<text x="14" y="{_TOP + _PLOT_H / 2:.1f}" text-anchor="middle" '
               f'transform="rotate(-90 14 {_TOP + _PLOT_H / 2:.1f})">arena offset (bytes)</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


def _caption(plan: ModelPlan, tensors: list[ArenaTensor]) -> str:
    text = (f"{plan.name}: arena {plan.arena_bytes:,} bytes, lower bound "
            f"{plan.arena_lower_bound_bytes:,}, {len(tensors)} tensors")
    if plan.program is not None:
        text += f" (a program: object pool {plan.pool_bytes:,} bytes, no arena)"
    return text
