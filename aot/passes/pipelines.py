"""The default pass pipelines, one readable list per stage.

Each pass declares the optimisation level that enables it (see
``aot passes``); the lists below give the order.  A context
(:class:`~aot.passes.manager.PassContext`) decides which of them run:
``aot compile --opt-level N --disable-pass NAME`` or
``with aot.PassContext(opt_level=N, disabled=[...])``.  A pass above
level 3 runs only when required (``--enable-pass``), where its list puts
it; passes in no list (ToANormalForm, LambdaLift, EtaExpand, ...)
are utilities run with :func:`~aot.passes.manager.run_pass`.
"""

from __future__ import annotations

from .manager import Sequential

__all__ = ["GRAPH_FORM", "DATAFLOW", "PROGRAM", "ALL", "in_any_pipeline"]

#: Every program starts here: types, then let-bound dataflow as graph edges.
GRAPH_FORM = Sequential([
    "InferType",
    "ToGraphNormalForm",
])

#: Static tensor programs, before the dataflow C backend (one arena).
DATAFLOW = Sequential([
    "SimplifyInference",      # 0: batch_norm, dropout, layer_norm -> arithmetic
    "FakeQuantizationToInteger",  # 0: dequantize -> float ops -> quantize as integer qnn ops
                              #    (off with aot.compile(..., quantized="float"))
    "ConvertLayout",          # 3: transposes moved and cancelled (desired layouts: option)
    "SimplifyExpr",           # 1: x*1, reshape of reshape, transpose of transpose, casts
    "FoldConstant",           # 1
    "FoldScaleAxis",          # 2: backward then forward: per-channel scales into weights
    "EliminateCommonSubexpr", # 2
    "CombineParallelConv2D",  # 4: parallel convs of one input -> one wider conv + slices
    "CombineParallelDense",   # 4: the same for dense
    "FastMath",               # 4 (only when required): exp, tanh, erf, softmax -> fast_*
    "FuseOps",                # 0: operators into kernels (one per operator at opt 0)
])

#: Programs with control flow, ADTs, closures or references, before the
#: program backend; DATAFLOW follows on the result.
PROGRAM = Sequential([
    "InferType",
    "Specialize",             # 0: monomorphic instances reachable from the entry
    "PartialEvaluate",        # 3: static closures, matches, refs and loops evaluated
    "InferType",
    "Inline",                 # 1: functions marked inline, small single-use ones
    "FoldConstant",           # 1: also `if`/`match` on constants, tuple projections
    "DeadCodeElimination",    # 1: unused pure lets, unreachable globals
    "EtaExpandOps",           # 0: operators used as values become functions
    "InferType",
    "Defunctionalization",    # 4 (only when required): closures -> ADTs + apply
    "ToGraphNormalForm",
    "ToBasicBlockNormalForm", # 0: a node shared across branches is let-bound once
])

#: Every pipeline, by name (``aot passes`` prints them).
ALL = {"GRAPH_FORM": GRAPH_FORM, "PROGRAM": PROGRAM, "DATAFLOW": DATAFLOW}


def in_any_pipeline(name: str) -> bool:
    return any(name in seq.names for seq in ALL.values())
