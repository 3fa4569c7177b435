"""The compilation pipeline of the dataflow C backend, in order.

::

    BindParams -> InferType -> ToGraphNormalForm -> SimplifyInference -> FoldConstant -> FuseOps
      -> lower (kernels, slots, memory plan: aot.emit.lower_model)
      -> render (aot.emit.artifact) -> build (gcc/clang + ar)

``opt_level`` 0 skips FoldConstant and fuses nothing (every operator is its
own kernel: useful to tell a fusion bug from a lowering bug); 1 and above
run the whole list.  The pass manager of the optimizer (issue 7) will take
this list over; until then it is this one readable function.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

from ..diagnostics import DiagnosticError
from ..ir.module import IRModule
from .model_plan import ModelPlan

__all__ = ["optimize_for_c", "plan", "compile_module"]


def graph_form(mod: IRModule, *, params: Mapping[str, Any] | None = None,
               entry: str = "main") -> IRModule:
    """BindParams -> InferType -> ToGraphNormalForm: the module both the
    backend choice and the dataflow passes start from."""
    from ..passes.bind_params import bind_params
    from ..passes.to_graph_normal_form import to_graph_normal_form
    from ..passes.type_infer import infer_types

    return to_graph_normal_form(infer_types(bind_params(mod, params or {}, entry)))


def dataflow_passes(mod: IRModule, *, opt_level: int = 3) -> IRModule:
    """SimplifyInference -> FoldConstant (opt 1) -> FoldScaleAxis (opt 2) ->
    FuseOps on a module in graph form."""
    from ..passes.fold_constant import fold_constant
    from ..passes.fold_scale_axis import fold_scale_axis
    from ..passes.fuse_ops import fuse_ops
    from ..passes.simplify_inference import simplify_inference

    mod = simplify_inference(mod)
    if opt_level >= 1:
        mod = fold_constant(mod)
    if opt_level >= 2:
        mod = fold_scale_axis(mod)
    return fuse_ops(mod, max_depth=256 if opt_level >= 1 else 1)


def optimize_for_c(mod: IRModule, *, opt_level: int = 3,
                   params: Mapping[str, Any] | None = None, entry: str = "main") -> IRModule:
    """The typed, fused module the lowering takes."""
    return dataflow_passes(graph_form(mod, params=params, entry=entry), opt_level=opt_level)


def optimize_program(mod: IRModule, *, opt_level: int = 3,
                     params: Mapping[str, Any] | None = None, entry: str = "main") -> IRModule:
    """The typed, monomorphic, fused module the program backend takes."""
    from ..passes.bind_params import bind_params
    from ..passes.eta_expand import eta_expand_ops
    from ..passes.specialize import specialize
    from ..passes.type_infer import infer_types

    mod = infer_types(bind_params(mod, params or {}, entry))
    mod = specialize(mod, entry)
    mod = eta_expand_ops(mod)
    return optimize_for_c(mod, opt_level=opt_level, entry=entry)


def is_dataflow(mod: IRModule, entry: str = "main") -> bool:
    """Whether ``entry`` is a static tensor program the dataflow backend
    compiles (tensor parameters, no control flow, ADTs, closures, refs or
    calls of globals)."""
    from ..ir.types import TensorType
    from ..ir.visitor import post_order
    from .lower_model import check_dataflow

    if entry not in mod:
        return True          # let the dataflow backend report it
    main = mod[entry]
    if not all(isinstance(p.checked_type, TensorType) for p in main.params):
        return False
    from ..ir.expr import Call, Op
    order = post_order(main.body, into_functions=False)
    called = {id(n.op) for n in order if isinstance(n, Call) and isinstance(n.op, Op)}
    # an operator node is shared by its uses: one used as a value is not called anywhere
    try:
        check_dataflow([n for n in order if not (isinstance(n, Op) and id(n) in called)])
    except DiagnosticError:
        return False
    return True


def plan(mod: IRModule, name: str, *, opt_level: int = 3,
         params: Mapping[str, Any] | None = None, arena: str = "caller",
         entry: str = "main", pool_bytes: int | None = None,
         max_depth: int | None = None, tuning: str = "scalar") -> ModelPlan:
    """Everything decided, nothing written.  Static tensor programs go to
    the dataflow backend (one arena planned at compile time); everything
    else to the program backend (the object pool).  ``tuning`` shapes the
    convolution and dense loop nests for a target (:mod:`.lowering.tuning`)."""
    from .build import check_model_name
    from .lowering.tuning import using as using_tuning

    check_model_name(name)
    with using_tuning(tuning):
        return _plan(mod, name, opt_level=opt_level, params=params, arena=arena, entry=entry,
                     pool_bytes=pool_bytes, max_depth=max_depth)


def _plan(mod: IRModule, name: str, *, opt_level: int, params: Mapping[str, Any] | None,
          arena: str, entry: str, pool_bytes: int | None, max_depth: int | None) -> ModelPlan:
    from .lower_model import plan_model
    from .program_model import plan_program

    if arena not in ("caller", "static"):
        raise DiagnosticError(f"arena must be 'caller' or 'static', not {arena!r}")
    # decided before the optimisations: an operator used as a value
    # (program backend only) must be eta-expanded before they re-infer types
    typed = graph_form(mod, params=params, entry=entry)
    if is_dataflow(typed, entry):
        fused = dataflow_passes(typed, opt_level=opt_level)
        return plan_model(fused, name, arena=arena, entry=entry)
    program = optimize_program(mod, opt_level=opt_level, params=params, entry=entry)
    return plan_program(program, name, entry=entry, pool_bytes=pool_bytes, max_depth=max_depth)


def compile_module(mod: IRModule, out_dir: str | Path, *, name: str = "model",
                   opt_level: int = 3, params: Mapping[str, Any] | None = None,
                   arena: str = "caller", entry: str = "main", build: bool = True,
                   pool_bytes: int | None = None, max_depth: int | None = None,
                   tuning: str = "scalar"):
    """Write the artifact for ``mod`` into ``out_dir`` and (by default)
    build ``lib/lib<name>.a``.  Returns the :class:`~aot.emit.artifact.Artifact`."""
    from .artifact import build_artifact, write_artifact

    model = plan(mod, name, opt_level=opt_level, params=params, arena=arena, entry=entry,
                 pool_bytes=pool_bytes, max_depth=max_depth, tuning=tuning)
    artifact = write_artifact(model, Path(out_dir))
    if build:
        build_artifact(artifact)
    return artifact
