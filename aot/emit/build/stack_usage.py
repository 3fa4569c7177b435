"""Worst-case stack of a model's entry function, from the compiler's
``-fstack-usage`` files and the call graph aot wrote into metadata.json.

This module uses the standard library only and imports nothing from aot:
every artifact carries a copy of it (``tools/aot_stack.py``), which the
make fragment's ``<name>-stack`` target runs with the firmware's own
compiler's ``.su`` files; ``aot compile`` runs it on the ``.su`` files of
the library it builds (metadata.json's ``stack.library``), and
``aot stack`` is the same command::

    python3 tools/aot_stack.py DIR/metadata.json FILE.su... [--stack-bytes N]
                               [--max-depth N] [--json]

Design note
-----------
*Frames.*  A ``.su`` line is ``file:line[:col]:function<TAB>bytes<TAB>kind``.
A function's frame is the sum of its lines over every file and every
variant the compiler made of it (``f.constprop.0``, ``f.part.0``,
``f.isra.0``, ``f.cold``): a split function calls its part, a clone
replaces its original, and summing covers both.  A function of the graph
with no line was inlined: its frame is inside its callers' frames, so it
counts 0 and its callees are still called (from the function it was
inlined into).  ``dynamic`` without ``bounded`` means the compiler could
not bound the frame (alloca, a VLA: aot's C has neither); the figure is
then not a bound and the command fails.

*Folded functions.*  A function on a cycle of the graph cannot have been
inlined into all its callers: without a ``.su`` line the compiler folded it
into an identical function (gcc's ``-fipa-icf``, on at ``-O2``: after
PartialEvaluate ``@main`` may be a copy of the recursive function it calls,
and both then run as one recursive function) or made its recursion a loop.
Its frame is then taken as the largest frame of the functions with a line
that call what it calls (its twin), or of all functions with a line when none
does: counting it as inlined (0) would make the recursion free.

*Helpers.*  The runtime's ``static inline`` functions (``aot_*``) may be
called from any function; the ones the compiler kept out of line have
frames, and they call each other without recursion.  ``H`` is the sum of
those frames: a bound on any chain of them, added below every function.

*The figure.*  ``cost(f) = frame(f) + max(H, max over callees g of
cost(g))``, on the call graph from the entry.  Programs recurse, and every
cycle passes through a *counted* function (one that starts with
``aot_enter``); two runtime bounds cut the recursion, and the figure is
the smaller of the two bounds they give:

* ``max_depth``: at most ``max_depth`` counted calls in progress; the next
  one fails in ``aot_enter`` after its frame was pushed.  Level ``k``
  (calls still allowed) of ``cost``: a counted ``f`` at level 0 is
  ``frame(f) + H``, at level ``k`` it takes its callees at level ``k-1``;
  the entry is at level ``max_depth``.  Levels are computed up one at a
  time until they stop changing (no recursion left to deepen), reach
  ``max_depth`` or pass the budget's bound (not at all when going round
  one cycle ``max_depth`` times already passes it); past :data:`LEVEL_WORK`
  node evaluations the rest is bounded linearly by the heaviest frame
  chain from one counted function to the next.
* the stack budget: ``aot_enter`` refuses a call when the stack has moved
  more than ``stack_bytes`` from the mark ``<name>_run_ctx`` made
  (``aot_stack_mark``).  The deepest frame that passed the check ends at
  most its own frame below ``stack_bytes``; below it only calls that fail
  their check (one frame each) or do not check (kernels, helpers):
  ``frame(marked) + H + stack_bytes + max over counted f of (frame(f) +
  tail(f))``, ``tail`` being ``cost`` with counted callees at level 0.

Not counted: the C library's functions (``memcpy``, ``expf``, ...) and
what an interrupt pushes on the same stack.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

__all__ = ["SuFrames", "StackFigure", "StackUsageError", "parse_su", "worst_case", "run", "main",
           "LEVEL_WORK"]

#: node evaluations of the levelled recursion bound before it extrapolates
LEVEL_WORK = 500_000


class StackUsageError(Exception):
    """Bad input to the tool (a message for the user)."""


@dataclass
class SuFrames:
    """Frames by function (variants and files summed), and the functions
    whose frame the compiler could not bound."""

    frames: dict[str, int] = field(default_factory=dict)
    unbounded: set[str] = field(default_factory=set)


def parse_su(texts: Iterable[tuple[str, str]]) -> SuFrames:
    """``(file name, text)`` of ``.su`` files -> :class:`SuFrames`."""
    out = SuFrames()
    for source, text in texts:
        for number, line in enumerate(text.splitlines(), 1):
            if not line.strip():
                continue
            fields = line.split("\t")
            try:
                where, size, kind = fields[0], int(fields[1]), fields[2].strip()
            except (IndexError, ValueError):
                raise StackUsageError(f"{source}:{number}: not a -fstack-usage line: "
                                      f"{line!r}") from None
            function = where.rsplit(":", 1)[-1].split(".", 1)[0]
            out.frames[function] = out.frames.get(function, 0) + size
            if "dynamic" in kind and "bounded" not in kind:
                out.unbounded.add(function)
    return out


@dataclass
class StackFigure:
    """The worst-case stack of ``entry`` in bytes and how it was bounded:
    ``"call graph"`` (no recursion), ``"max_depth"`` or ``"stack budget"``."""

    entry: str
    bytes: int
    bound: str
    path: list[str]
    frames: dict[str, int]
    inlined: list[str]
    helpers: dict[str, int]
    recursive: list[str]
    depth_bound: int | None = None
    budget_bound: int | None = None
    unbounded: list[str] = field(default_factory=list)
    #: recursive functions without a ``.su`` line, their frames taken from a twin
    folded: list[str] = field(default_factory=list)

    def record(self) -> dict[str, Any]:
        """The figure as metadata.json keeps it."""
        return {"bytes": self.bytes, "bound": self.bound, "path": self.path,
                "frames": dict(sorted(self.frames.items())),
                "helper_bytes": sum(self.helpers.values()),
                "depth_bound": self.depth_bound, "budget_bound": self.budget_bound,
                "unbounded": self.unbounded, "folded": self.folded}


class _Graph:
    def __init__(self, spec: Mapping[str, Any], su: SuFrames) -> None:
        calls = spec.get("calls")
        entry = spec.get("entry")
        if not isinstance(calls, dict) or not isinstance(entry, str) or entry not in calls:
            raise StackUsageError("the metadata has no call graph (\"stack\" record); "
                                  "compile the model with this version of aot")
        self.entry = entry
        self.calls: dict[str, list[str]] = {f: list(c) for f, c in calls.items()}
        for callees in list(self.calls.values()):
            for g in callees:
                self.calls.setdefault(g, [])       # a callee without a record: a leaf
        self.counted = set(spec.get("counted") or ())
        self.marked = spec.get("marked")
        prefix = spec.get("helper_prefix") or "aot_"
        self.frames = {f: su.frames.get(f, 0) for f in self.calls}
        self.folded = self._folded(su)
        self.frames.update(self.folded)
        self.inlined = sorted(f for f in self.calls if f not in su.frames and f not in self.folded)
        self.helpers = {f: n for f, n in sorted(su.frames.items())
                        if f.startswith(prefix) and f not in self.calls}
        self.H = sum(self.helpers.values())
        self.unbounded = sorted(f for f in su.unbounded
                                if f in self.calls or f in self.helpers)
        self.reached = self._reach(entry)
        # callees first, on the graph without the counted functions' calls (a DAG:
        # every cycle passes through a counted function)
        self.order = self._post_order()

    def _folded(self, su: SuFrames) -> dict[str, int]:
        """Frames of the recursive functions without a ``.su`` line (see
        *Folded functions* in the module note)."""
        known = {f: n for f, n in su.frames.items() if f in self.calls}
        out = {}
        for f in self.calls:
            if f in su.frames or f not in self._reach_from_callees(f):
                continue
            twins = [n for g, n in known.items() if self.calls[g] == self.calls[f]]
            out[f] = max(twins or known.values() or [0])
        return out

    def _reach(self, start: str) -> list[str]:
        seen = {start}
        work = [start]
        while work:
            for g in self.calls[work.pop()]:
                if g not in seen:
                    seen.add(g)
                    work.append(g)
        return sorted(seen)

    def _post_order(self) -> list[str]:
        order: list[str] = []
        state: dict[str, int] = {}
        for root in self.reached:
            if root in state:
                continue
            stack = [(root, iter(self._dag_callees(root)))]
            state[root] = 1
            while stack:
                f, it = stack[-1]
                g = next(it, None)
                if g is None:
                    stack.pop()
                    state[f] = 2
                    order.append(f)
                elif g not in state:
                    state[g] = 1
                    stack.append((g, iter(self._dag_callees(g))))
                elif state[g] == 1:
                    raise StackUsageError(f"the call graph recurses through {g} without a "
                                          "counted function: no bound")
        return order

    def _dag_callees(self, f: str) -> list[str]:
        return [] if f in self.counted else self.calls[f]

    def recursive(self) -> list[str]:
        """The counted functions on a cycle."""
        out = []
        for f in sorted(self.counted & set(self.reached)):
            if f in self._reach_from_callees(f):
                out.append(f)
        return out

    def _reach_from_callees(self, f: str) -> set[str]:
        seen: set[str] = set()
        work = list(self.calls[f])
        while work:
            g = work.pop()
            if g not in seen:
                seen.add(g)
                work.extend(self.calls[g])
        return seen

    def _path(self, start: str, goal: str, first: list[str]) -> list[str] | None:
        """Some path from ``start`` (through ``first``, its first steps) to
        ``goal``, ``start`` excluded (breadth first)."""
        parent: dict[str, str] = {g: start for g in first}
        work = list(dict.fromkeys(first))
        for f in work:
            if f == goal:
                out = [f]
                while out[-1] in parent and parent[out[-1]] != start:
                    out.append(parent[out[-1]])
                return out[::-1]
            for g in self.calls[f]:
                if g not in parent:
                    parent[g] = f
                    work.append(g)
        return None

    def looping_bound(self, depth: int) -> int:
        """A lower bound of the ``max_depth`` bound: a chain from the entry
        to a recursive function, then round one cycle through it as often
        as ``depth`` calls allow."""
        best = 0
        for f in self.recursive():
            to_f = self._path(self.entry, f, self.calls[self.entry]) or []
            cycle = self._path(f, f, self.calls[f]) or []
            per_turn = sum(1 for g in cycle if g in self.counted)
            prefix = sum(1 for g in to_f if g in self.counted)
            if per_turn:
                turns = max(0, depth - prefix) // per_turn
                best = max(best, turns * sum(self.frames[g] for g in cycle))
        return best

    def level(self, prev: dict[str, int] | None) -> dict[str, int]:
        """``cost`` at the next level (``prev``: the level below; None: level 0)."""
        cur: dict[str, int] = {}
        for f in self.order:
            if f in self.counted:
                below = [prev[g] for g in self.calls[f]] if prev is not None else None
            else:
                below = [cur[g] for g in self.calls[f]]
            cur[f] = self.frames[f] + (self.H if below is None else max([self.H, *below]))
        return cur

    def chain_bound(self, levels: int) -> int:
        """A bound for ``levels`` counted calls: the longest uncounted prefix,
        ``levels + 1`` segments from one counted function to the next, ``H``."""
        seg = self.level(None)                    # counted: frame + H; others: their chains
        def through(f: str) -> int:
            return self.frames[f] + max([0, *(seg[g] if g not in self.counted else 0
                                              for g in self.calls[f])])
        G = max((through(f) for f in self.counted if f in self.reached), default=0)
        prefix = {}
        for f in self.order:
            if f in self.counted:
                prefix[f] = 0
            else:
                prefix[f] = self.frames[f] + max([0, *(prefix[g] for g in self.calls[f])])
        return prefix[self.entry] + (levels + 1) * G + self.H

    def budget(self, stack_bytes: int, level0: dict[str, int]) -> int | None:
        """The bound the stack budget gives (None without a mark)."""
        m = self.marked
        if not isinstance(m, str) or m not in self.calls:
            return None
        deepest = max((self.frames[f] + max([self.H, *(level0[g] for g in self.calls[f])])
                       for f in self.counted if f in self.reached), default=0)
        marked = self.frames[m] + max([self.H + stack_bytes + deepest,
                                       *(level0[g] for g in self.calls[m]
                                         if g not in self.counted)])
        cost: dict[str, int | None] = {}
        for f in self.order:
            if f == m:
                cost[f] = marked
            elif f in self.counted:
                cost[f] = None                     # below the mark: in `marked`
            else:
                below = [cost[g] for g in self.calls[f]]
                if None in below:
                    return None                    # a counted call outside the mark
                cost[f] = self.frames[f] + max([self.H, *(b for b in below if b is not None)])
        return cost[self.entry]

    def path(self, cost: dict[str, int]) -> list[str]:
        """The heaviest chain (for a graph without recursion)."""
        out = [self.entry]
        while self.calls[out[-1]] and len(out) < 64:
            out.append(max(self.calls[out[-1]], key=lambda g: (cost[g], g)))
        return out


def worst_case(spec: Mapping[str, Any], su: SuFrames, *, stack_bytes: int | None = None,
               max_depth: int | None = None) -> StackFigure:
    """The worst-case stack of ``spec["entry"]`` (metadata.json's ``"stack"``
    record) with the frames of ``su``.  ``stack_bytes`` / ``max_depth``
    override the compiled bounds (a context initialised with another budget)."""
    g = _Graph(spec, su)
    recursive = g.recursive()
    depth = max_depth if max_depth is not None else spec.get("max_depth")
    budget = stack_bytes if stack_bytes is not None else spec.get("stack_bytes")
    level0 = g.level(None)
    budget_bound = g.budget(int(budget), level0) if budget is not None else None
    cost = level0
    depth_bound: int | None = None
    if recursive and depth is not None and budget_bound is not None and \
            g.looping_bound(int(depth)) > budget_bound:
        depth_bound = None                         # the budget's bound is the smaller
    elif g.counted and depth is not None:
        levels = int(depth)
        work = 0
        k = 0
        exceeded = False
        while k < levels:
            nxt = g.level(cost)
            k += 1
            work += len(g.order)
            stable = nxt == cost
            cost = nxt
            if stable:
                break
            if budget_bound is not None and cost[g.entry] > budget_bound:
                exceeded = True                    # the budget's bound is the smaller
                break
            if work > LEVEL_WORK:
                cost = dict(cost)
                cost[g.entry] = g.chain_bound(levels)
                break
        depth_bound = None if exceeded else cost[g.entry]
    elif g.counted:
        raise StackUsageError("the graph has counted calls but no max_depth")
    figure = cost[g.entry]
    bound = "call graph"
    if recursive:
        bound = "max_depth"
        if budget_bound is not None and (depth_bound is None or budget_bound < figure):
            figure, bound = budget_bound, "stack budget"
    return StackFigure(entry=g.entry, bytes=figure, bound=bound,
                       path=[] if recursive else g.path(cost),
                       frames={f: n for f, n in g.frames.items() if f not in g.inlined},
                       inlined=g.inlined, helpers=g.helpers, recursive=recursive,
                       depth_bound=depth_bound if recursive else None,
                       budget_bound=budget_bound if recursive else None,
                       unbounded=g.unbounded, folded=sorted(g.folded))


def describe(fig: StackFigure, stack_bytes: int | None = None) -> str:
    """The figure for people: one line, then how it was reached."""
    how = {"call graph": "the heaviest call chain",
           "max_depth": "recursion bounded by max_depth",
           "stack budget": "recursion bounded by the stack budget"
                           + (f" of {stack_bytes:,} bytes" if stack_bytes else "")}[fig.bound]
    lines = [f"{fig.entry}: worst-case stack {fig.bytes:,} bytes ({how})"]
    if fig.path:
        lines.append("  chain: " + " -> ".join(
            f"{f} {fig.frames[f]}" if f in fig.frames else f"{f} (inlined)" for f in fig.path))
    if fig.recursive:
        allows = (f"{fig.depth_bound:,} bytes" if fig.depth_bound is not None
                  else "more than the budget")
        lines.append(f"  recursion through: {', '.join(fig.recursive)}; max_depth allows "
                     f"{allows}"
                     + (f", the stack budget {fig.budget_bound:,}"
                        if fig.budget_bound is not None else ""))
    shown = sorted(fig.frames.items(), key=lambda x: (-x[1], x[0]))
    lines.append("  frames: " + (", ".join(f"{f} {n}" for f, n in shown[:12]) or "none")
                 + (f", ... ({len(shown) - 12} more)" if len(shown) > 12 else ""))
    if fig.helpers:
        lines.append(f"  runtime helpers out of line: {sum(fig.helpers.values())} bytes ("
                     + ", ".join(f"{f} {n}" for f, n in fig.helpers.items())
                     + "), counted below every function")
    lines.append("  not counted: C library functions (memcpy, expf, ...) and interrupts")
    for f in fig.unbounded:
        lines.append(f"  error: the compiler could not bound the frame of {f} (dynamic)")
    return "\n".join(lines)


def load_spec(path: str) -> dict[str, Any]:
    """metadata.json's ``"stack"`` record (``path``: the file or the artifact)."""
    file = Path(path)
    if file.is_dir():
        file = file / "metadata.json"
    try:
        meta = json.loads(file.read_text())
    except OSError as exc:
        raise StackUsageError(f"{file}: cannot read: {exc.strerror or exc}") from None
    except ValueError as exc:
        raise StackUsageError(f"{file}: not JSON: {exc}") from None
    spec = meta.get("stack") if isinstance(meta, dict) else None
    if not isinstance(spec, dict):
        raise StackUsageError(f"{file}: no call graph (\"stack\" record); compile the model "
                              "with this version of aot")
    return spec


def run(argv: Sequence[str] | None = None, prog: str = "aot_stack.py") -> int:
    parser = argparse.ArgumentParser(
        prog=prog, description="The worst-case stack of a model's entry function from the "
                               "compiler's -fstack-usage files (.su) and the call graph in the "
                               "artifact's metadata.json.")
    parser.add_argument("metadata", help="the artifact's metadata.json (or its directory)")
    parser.add_argument("su", nargs="+", help="the .su files of the model's sources")
    parser.add_argument("--stack-bytes", type=int, default=None, metavar="N",
                        help="the stack budget the contexts are initialised with (default: "
                             "the compiled one)")
    parser.add_argument("--max-depth", type=int, default=None, metavar="N",
                        help="the bound on nested calls (default: the compiled one)")
    parser.add_argument("--json", action="store_true", help="print the figure as JSON")
    args = parser.parse_args(argv)
    try:
        spec = load_spec(args.metadata)
        texts = []
        for name in args.su:
            try:
                texts.append((name, Path(name).read_text()))
            except OSError as exc:
                raise StackUsageError(f"{name}: cannot read: {exc.strerror or exc}") from None
        su = parse_su(texts)
        if spec.get("entry") not in su.frames:
            raise StackUsageError(f"no frame of {spec.get('entry')} in {', '.join(args.su)}: "
                                  "are these the .su files of the model's sources?")
        fig = worst_case(spec, su, stack_bytes=args.stack_bytes, max_depth=args.max_depth)
    except StackUsageError as exc:
        print(f"{prog}: error: {exc}", file=sys.stderr)
        return 1
    if args.json:
        print(json.dumps({"entry": fig.entry, **fig.record()}, indent=2, sort_keys=True))
    else:
        budget = args.stack_bytes if args.stack_bytes is not None else spec.get("stack_bytes")
        print(describe(fig, budget))
    return 1 if fig.unbounded else 0


def main() -> None:
    sys.exit(run())


if __name__ == "__main__":
    main()
