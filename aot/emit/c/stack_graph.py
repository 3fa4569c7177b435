"""The call graph of a model's C, as the stack figure needs it.

Design note
-----------
The worst-case stack of ``<name>_run`` is the heaviest chain of frames
the entry can have on the stack at once.  The compiler that builds the C
knows each function's frame (``-fstack-usage`` writes it to a ``.su``
file); aot knows who calls whom, because it printed every call.  This
module writes down that knowledge as data (metadata.json's ``"stack"``
record); :mod:`aot.emit.build.stack_usage` combines it with the ``.su``
files into one figure, at ``aot compile`` time for the library's
compiler and in the firmware's make (``<name>-stack``, see the make
fragment) for the firmware's.

The graph names C functions:

* dataflow models: ``<name>_run`` calls each kernel of the plan in turn
  (through ``<name>_run_ctx`` when the model has a context: a static
  arena); kernels are leaves.
* programs: ``<name>_run`` calls ``<name>_run_ctx`` (and
  ``<name>_static_context``, which calls ``<name>_ctx_init``);
  ``<name>_run_ctx`` marks the stack (``aot_stack_mark``) and calls what
  the entry's object IR calls; a program function calls the functions and
  kernels its statements call, and a call through a closure may reach any
  closure code the program builds (``SetCode``, static closures).  Every
  ``Function`` starts with ``aot_enter``: it is *counted* against
  ``max_depth`` and the stack budget; forwarding and constructor codes
  are not.  Cycles (recursion) always pass through a counted function.

The runtime's ``static inline`` helpers (``aot_*``) are not in the graph:
any function may call them, and :mod:`~aot.emit.build.stack_usage` adds
what the compiler left of them out of line (their frames summed: they do
not recurse).  A function the compiler inlined has no ``.su`` line; its
frame is part of its caller's, and its callees count from there.
"""

from __future__ import annotations

from typing import Any

from ..objects import ir as O
from ..objects.walk import iter_stmts
from ..plan.model import ModelPlan, entry_name

__all__ = ["stack_graph", "HELPER_PREFIX"]

#: the runtime's functions (runtime_c/*.h), callable from any function
HELPER_PREFIX = "aot_"


def stack_graph(plan: ModelPlan) -> dict[str, Any]:
    """metadata.json's ``"stack"`` record of ``plan`` (the call graph; the
    figures are added when the library is built)."""
    name = plan.name
    run = entry_name(name)
    calls: dict[str, set[str]] = {}
    counted: list[str] = []
    marked = None
    if plan.program is None:
        kernels = {c.kernel for c in plan.calls}
        caller = run
        if plan.arena == "static":
            calls[run] = {f"{run}_ctx"}
            caller = f"{run}_ctx"
        calls[caller] = set(kernels)
        calls.update((k, set()) for k in kernels)
    else:
        objects: O.ObjectProgram = plan.program.objects
        marked = f"{run}_ctx"
        calls[run] = {marked, f"{name}_static_context"}
        calls[f"{name}_static_context"] = {f"{name}_ctx_init"}
        calls[f"{name}_ctx_init"] = set()
        closures = _closure_codes(objects)
        calls[marked] = _callees(objects.entry, closures)
        for code in objects.functions:
            if isinstance(code, O.Function):
                calls[code.name] = _callees(code, closures)
                counted.append(code.name)
            elif isinstance(code, O.ForwardCode):
                calls[code.name] = {code.target}
            else:
                calls[code.name] = set()
        for callees in list(calls.values()):
            for callee in callees:
                calls.setdefault(callee, set())        # kernels
    record: dict[str, Any] = {
        "entry": run,
        "calls": {f: sorted(c) for f, c in sorted(calls.items())},
        "counted": sorted(counted),
        "marked": marked,
        "helper_prefix": HELPER_PREFIX,
    }
    if plan.program is not None:
        record["max_depth"] = plan.program.max_depth
        record["stack_bytes"] = plan.program.stack_bytes
    return record


def _closure_codes(objects: O.ObjectProgram) -> set[str]:
    """The codes a call through a closure may jump to."""
    codes = {s.code for s in objects.statics if s.code is not None}
    for code in (*objects.functions, objects.entry):
        if isinstance(code, O.Function):
            codes.update(s.code for s in iter_stmts(code.body + code.cleanup)
                         if isinstance(s, O.SetCode))
    return codes


def _callees(fn: O.Function, closures: set[str]) -> set[str]:
    out: set[str] = set()
    for s in iter_stmts(fn.body + fn.cleanup):
        if isinstance(s, O.CallFunction):
            out.add(s.function)
        elif isinstance(s, O.CallKernel):
            out.add(s.kernel)
        elif isinstance(s, O.CallClosure):
            out |= closures
    return out
