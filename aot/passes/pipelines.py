"""The default pass pipelines, one readable list per stage.

Each pass declares the optimisation level that enables it (see
``aot passes``); the lists below give the order.  A context
(:class:`~aot.passes.manager.PassContext`) decides which of them run:
``aot compile --opt-level N --disable-pass NAME`` or
``with aot.PassContext(opt_level=N, disabled=[...])``.
"""

from __future__ import annotations

from .manager import Sequential

__all__ = ["GRAPH_FORM", "DATAFLOW", "PROGRAM"]

#: Every program starts here: types, then let-bound dataflow as graph edges.
GRAPH_FORM = Sequential([
    "InferType",
    "ToGraphNormalForm",
])

#: Static tensor programs, before the dataflow C backend (one arena).
DATAFLOW = Sequential([
    "SimplifyInference",      # 0: batch_norm, dropout, layer_norm -> arithmetic
    "FoldConstant",           # 1
    "FoldScaleAxis",          # 2: per-channel scales into conv2d / dense weights
    "FuseOps",                # 0: operators into kernels (one per operator at opt 0)
])

#: Programs with control flow, ADTs, closures or references, before the
#: program backend; DATAFLOW follows on the result.
PROGRAM = Sequential([
    "InferType",
    "Specialize",             # 0: monomorphic instances reachable from the entry
    "EtaExpandOps",           # 0: operators used as values become functions
    "InferType",
    "ToGraphNormalForm",
])
