"""The RAM a compiled model needs, and the check against a budget
(``aot compile --ram-budget BYTES``, ``aot.compile(ram_budget=...)``).

RAM is the arena (the caller's or the library's static one), the object
pool of a program (inside its context) and the stack of one call of the
entry: the worst case :mod:`.stack_usage` bounds for the library aot built
(metadata.json's ``stack.library``), known only when the library was
built.  Constants are ``static const`` (flash on a microcontroller) and
not counted.  The budget is checked once the plan is known (arena and
pool: before anything is written) and again after the build with the
stack; a failure is a :class:`~aot.diagnostics.DiagnosticError` naming the
budget and the breakdown, and the artifact directory stays as it was.
"""

from __future__ import annotations

from typing import Any, Mapping

from ...diagnostics import DiagnosticError

__all__ = ["ram_breakdown", "check_ram_budget", "check_budget_value"]


def check_budget_value(budget: Any) -> int:
    """``budget`` as a byte count, or a DiagnosticError."""
    if isinstance(budget, bool) or not isinstance(budget, int) or budget < 0:
        raise DiagnosticError(f"ram_budget must be a non-negative number of bytes, "
                              f"not {budget!r}")
    return budget


def ram_breakdown(metadata: Mapping[str, Any], stack_note: str | None = None,
                  ) -> list[tuple[str, int | None, str]]:
    """(part, bytes or None when unknown, note) of a model's RAM;
    ``stack_note`` says why the stack is not known yet."""
    stack = (metadata.get("stack") or {}).get("library")
    if stack:
        how = {"stack budget": "bounded by the stack budget",
               "max_depth": "bounded by max_depth"}.get(stack.get("bound"), "call graph")
        stack_part: tuple[str, int | None, str] = (
            "stack", int(stack["bytes"]), f"worst case with {stack.get('compiler')}, {how}")
    else:
        stack_part = ("stack", None, stack_note or "not known: the library was not built")
    arena = int(metadata.get("arena_bytes", 0))
    where = ("a program has none" if metadata.get("backend") == "program" else
             "the library's static arena" if metadata.get("arena") == "static" else
             "the caller's arena")
    return [("arena", arena, where),
            ("pool", int(metadata.get("pool_bytes", 0)),
             "the object pool" if metadata.get("backend") == "program"
             else "a dataflow model has none"),
            stack_part]


def check_ram_budget(metadata: Mapping[str, Any], budget: int,
                     stack_note: str | None = None) -> None:
    """DiagnosticError when the known parts of ``metadata``'s RAM exceed
    ``budget`` bytes."""
    check_budget_value(budget)
    parts = ram_breakdown(metadata, stack_note)
    total = sum(n for _, n, _ in parts if n is not None)
    if total <= budget:
        return
    name = metadata.get("name", "model")
    lines = [f"model `{name}` needs {total:,} bytes of RAM, more than the budget of "
             f"{budget:,} bytes (ram_budget, --ram-budget); {total - budget:,} too many:"]
    for part, n, note in parts:
        shown = f"{n:>12,}" if n is not None else f"{'?':>12}"
        lines.append(f"    {part:6} {shown}  {note}")
    raise DiagnosticError("\n".join(lines))
