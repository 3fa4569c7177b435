"""The compilation pipeline, in order.

::

    BindParams -> GRAPH_FORM -> (static tensor program?)
      yes: DATAFLOW                    -> lower (kernels, slots, arena: aot.emit.lower.dataflow)
      no:  PROGRAM -> (static tensor program now?)
             yes: DATAFLOW             -> lower (kernels, slots, arena)
             no:  DATAFLOW             -> lower (object pool: aot.emit.lower.program_entry)
      -> render (aot.emit.build.artifact) -> build (gcc/clang + ar)

The question is asked twice: a program whose closures, ``if`` on
constants, calls of small globals or references the PROGRAM passes
(Inline, FoldConstant, PartialEvaluate, DeadCodeElimination) remove is a
static tensor program after them, and takes the dataflow backend -- no
object pool, one planned arena -- like one written that way.  A program
whose only control flow is static loops (:mod:`aot.emit.lower.static_loop`)
that the passes do not evaluate away takes the dataflow backend as
written (the passes would peel a first iteration out of each loop); one
they leave with static loops only, too.

Each step is a stage of :mod:`aot.progress` (passes, lowering, planning,
verifying, rendering, C build; the command line adds start-up and import), which the command line
shows as it goes and ``--pass-timing`` accounts in full.

The pass lists are :mod:`aot.passes.pipelines`; which passes run is up to
the current :class:`~aot.passes.manager.PassContext` (opt level, disabled
and required passes, instruments, verification).  ``opt_level`` given
here overrides the context's.  At opt level 0 FuseOps puts every operator
in its own kernel (useful to tell a fusion bug from a lowering bug).

A model that carries quantization (dequantize -> float operators ->
quantize regions) computes in integers at every opt level:
FakeQuantizationToInteger is a level-0 pass of DATAFLOW.  ``quantized``
is the user's switch: ``"integer"`` (the default) or ``"float"``, which
disables that pass so the regions run in float32 as the program is
written (the reference interpreter's result, bit for bit up to float
summation order).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

from .diagnostics import DiagnosticError
from .gc_tuning import gc_tuned
from .ir.module import IRModule
from .passes.manager import PassContext, current
from .progress import stage
from .emit.plan.model import ModelPlan

__all__ = ["optimize_for_c", "plan", "compile_module", "QUANTIZED_MODES"]

#: how a model that carries quantization computes (``aot.compile(quantized=...)``)
QUANTIZED_MODES = ("integer", "float")
_FQ2I = "FakeQuantizationToInteger"


def _context(opt_level: int | None, entry: str, quantized: str = "integer") -> PassContext:
    """The current pass context with ``opt_level`` (when given), the
    quantized mode and the entry function as the option of the passes
    that need one."""
    from .passes.pipelines import in_any_pipeline

    ctx = current()
    if quantized not in QUANTIZED_MODES:
        raise DiagnosticError(f"quantized must be 'integer' or 'float', not {quantized!r}")
    if quantized == "float":
        if _FQ2I in ctx.required:
            raise DiagnosticError(f"quantized='float' disables {_FQ2I}, which the pass "
                                  "context requires")
        ctx = ctx.replace(disabled=ctx.disabled | {_FQ2I})
    for name in sorted(ctx.required):
        if not in_any_pipeline(name):
            raise DiagnosticError(f"pass {name} is required but in no pipeline of "
                                  "aot.passes.pipelines; run it with aot.passes.manager.run_pass")
    if opt_level is not None:
        ctx = ctx.replace(opt_level=opt_level)
    options = dict(ctx.options)
    options["Specialize"] = {**options.get("Specialize", {}), "entry": entry}
    return ctx.replace(options=options)


def graph_form(mod: IRModule, *, params: Mapping[str, Any] | None = None,
               entry: str = "main", ctx: PassContext | None = None) -> IRModule:
    """BindParams, then :data:`~aot.passes.pipelines.GRAPH_FORM`: the module
    both the backend choice and the dataflow passes start from."""
    from .passes.bind_params import bind_params
    from .passes.pipelines import GRAPH_FORM

    return GRAPH_FORM(bind_params(mod, params or {}, entry), ctx or _context(None, entry))


def dataflow_passes(mod: IRModule, *, opt_level: int | None = None,
                    ctx: PassContext | None = None) -> IRModule:
    """:data:`~aot.passes.pipelines.DATAFLOW` on a module in graph form."""
    from .passes.pipelines import DATAFLOW

    return DATAFLOW(mod, ctx or _context(opt_level, "main"))


@gc_tuned
def optimize_for_c(mod: IRModule, *, opt_level: int | None = None,
                   params: Mapping[str, Any] | None = None, entry: str = "main",
                   quantized: str = "integer") -> IRModule:
    """The typed, fused module the lowering takes."""
    ctx = _context(opt_level, entry, quantized)
    return dataflow_passes(graph_form(mod, params=params, entry=entry, ctx=ctx), ctx=ctx)


def optimize_program(mod: IRModule, *, opt_level: int | None = None,
                     params: Mapping[str, Any] | None = None, entry: str = "main",
                     quantized: str = "integer") -> IRModule:
    """The typed, monomorphic, fused module the program backend takes."""
    from .passes.pipelines import DATAFLOW

    ctx = _context(opt_level, entry, quantized)
    return DATAFLOW(program_passes(mod, params=params, entry=entry, ctx=ctx), ctx)


def program_passes(mod: IRModule, *, params: Mapping[str, Any] | None = None,
                   entry: str = "main", ctx: PassContext | None = None) -> IRModule:
    """BindParams, then :data:`~aot.passes.pipelines.PROGRAM`."""
    from .passes.bind_params import bind_params
    from .passes.pipelines import PROGRAM

    return PROGRAM(bind_params(mod, params or {}, entry), ctx or _context(None, entry))


def is_dataflow(mod: IRModule, entry: str = "main", *, loops: bool = False) -> bool:
    """Whether ``entry`` is a static tensor program the dataflow backend
    compiles (tensor parameters, no control flow, ADTs, closures, refs or
    calls of globals; with ``loops``, static loops -- tail-recursive local
    functions over tensors of fixed shape, :mod:`aot.emit.lower.static_loop`
    -- are dataflow too)."""
    return _dataflow_check(mod, entry, loops=loops) is not None


def has_static_loops(mod: IRModule, entry: str = "main") -> bool:
    """Whether ``entry`` is a static tensor program with at least one
    static loop (:mod:`aot.emit.lower.static_loop`): the dataflow backend
    takes it as imported, without the whole-language passes (which would
    peel a first iteration out of the loop)."""
    return bool(_dataflow_check(mod, entry, loops=True))


def _dataflow_check(mod: IRModule, entry: str, *, loops: bool) -> dict | None:
    """The static loops of ``entry`` if it is dataflow, else None."""
    from .ir.types import TensorType
    from .ir.visitor import post_order
    from .emit.lower.dataflow import check_dataflow

    if entry not in mod:
        return {}            # let the dataflow backend report it
    main = mod[entry]
    if not all(isinstance(p.checked_type, TensorType) for p in main.params):
        return None
    from .ir.expr import Call, Op
    order = post_order(main.body, into_functions=False)
    called = {id(n.op) for n in order if isinstance(n, Call) and isinstance(n.op, Op)}
    # an operator node is shared by its uses: one used as a value is not called anywhere
    try:
        return check_dataflow([n for n in order if not (isinstance(n, Op) and id(n) in called)],
                              loops=loops)
    except DiagnosticError:
        return None


@gc_tuned
def plan(mod: IRModule, name: str, *, opt_level: int | None = None,
         params: Mapping[str, Any] | None = None, arena: str = "caller",
         entry: str = "main", pool_bytes: int | None = None,
         max_depth: int | None = None, tuning: str = "scalar",
         quantized: str = "integer", stack_bytes: int | None = None) -> ModelPlan:
    """Everything decided, nothing written.  Static tensor programs go to
    the dataflow backend (one arena planned at compile time); everything
    else to the program backend (the object pool).  ``tuning`` shapes the
    convolution and dense loop nests for a target (:mod:`aot.emit.lower.ops.tuning`)."""
    from .emit.build.library import check_model_name
    from .emit.lower.ops.tuning import using as using_tuning
    from .emit.plan.verify import verify_model_plan

    check_model_name(name)
    with using_tuning(tuning):
        model = _plan(mod, name, opt_level=opt_level, params=params, arena=arena, entry=entry,
                      pool_bytes=pool_bytes, max_depth=max_depth, quantized=quantized,
                      stack_bytes=stack_bytes)
    with stage("verifying"):
        verify_model_plan(model)
    return model


def _plan(mod: IRModule, name: str, *, opt_level: int | None, params: Mapping[str, Any] | None,
          arena: str, entry: str, pool_bytes: int | None, max_depth: int | None,
          quantized: str, stack_bytes: int | None = None) -> ModelPlan:
    from .emit.lower.dataflow import plan_model

    if arena not in ("caller", "static"):
        raise DiagnosticError(f"arena must be 'caller' or 'static', not {arena!r}")
    # decided before the optimisations: an operator used as a value
    # (program backend only) must be eta-expanded before they re-infer types
    ctx = _context(opt_level, entry, quantized)
    program: IRModule | None = None
    with stage("passes"):
        typed = graph_form(mod, params=params, entry=entry, ctx=ctx)
        dataflow = is_dataflow(typed, entry)
        if not dataflow:
            program = program_passes(mod, params=params, entry=entry, ctx=ctx)
            dataflow = is_dataflow(program, entry)   # the passes may have left only tensors
            if not dataflow and has_static_loops(typed, entry):
                # static loops the passes did not evaluate away: as written
                # (the passes would peel a first iteration out of each)
                program, dataflow = None, True
            elif not dataflow:
                dataflow = is_dataflow(program, entry, loops=True)
        fused = dataflow_passes(typed if program is None else program, ctx=ctx)
    if dataflow:
        return plan_model(fused, name, arena=arena, entry=entry)   # lowering, planning
    from .emit.lower.program_entry import plan_program   # the program backend only
    with stage("lowering"):
        return plan_program(fused, name, entry=entry, pool_bytes=pool_bytes,
                            max_depth=max_depth, stack_bytes=stack_bytes)


def compile_module(mod: IRModule, out_dir: str | Path, *, name: str = "model",
                   opt_level: int | None = None, params: Mapping[str, Any] | None = None,
                   arena: str = "caller", entry: str = "main", build: bool = True,
                   pool_bytes: int | None = None, max_depth: int | None = None,
                   tuning: str | None = None, quantized: str = "integer",
                   stack_bytes: int | None = None, target: str = "host",
                   ram_budget: int | None = None, memory_report: bool = False):
    """Write the artifact for ``mod`` into ``out_dir`` and (by default)
    build ``lib/lib<name>.a`` for ``target`` (:mod:`aot.emit.build.targets`:
    the host, or a Cortex-M core with the Arm cross compiler; the loop-nest
    tuning of what is built unless ``tuning`` is given:
    :func:`~aot.emit.build.targets.default_tuning`).  ``ram_budget`` (bytes):
    fail when arena, pool and the built library's stack need more
    (:mod:`aot.emit.build.memory`); ``memory_report``: also write the
    arena's picture and table (:mod:`aot.emit.build.memory_report`).
    Returns the :class:`~aot.emit.build.artifact.Artifact`."""
    from .emit.build.artifact import write_and_build
    from .emit.build.memory import check_budget_value, check_ram_budget
    from .emit.build.targets import default_tuning, get_target, target_toolchain

    if ram_budget is not None:
        check_budget_value(ram_budget)
    chosen = get_target(target)
    # the toolchain first: a missing cross compiler is said before a long compile
    toolchain = target_toolchain(chosen) if build and not chosen.is_host else None
    model = plan(mod, name, opt_level=opt_level, params=params, arena=arena, entry=entry,
                 pool_bytes=pool_bytes, max_depth=max_depth,
                 tuning=tuning if tuning is not None else default_tuning(chosen, build),
                 quantized=quantized, stack_bytes=stack_bytes)
    if ram_budget is not None:                   # arena and pool: before writing anything
        check_ram_budget({"name": model.name, "arena": model.arena,
                          "arena_bytes": model.arena_bytes, "pool_bytes": model.pool_bytes,
                          "backend": "program" if model.program is not None else "dataflow"},
                         ram_budget, stack_note="not measured: arena and pool alone exceed "
                                                "the budget")
    return write_and_build(model, Path(out_dir), build=build, toolchain=toolchain,
                           ram_budget=ram_budget, memory_report=memory_report)
