"""A training step written in the IR: one step of stochastic gradient
descent on a loss function.

Design note
-----------
``@entry(p1, ..., pn) -> loss`` (a float scalar) becomes

    @entry(p1, ..., pn) -> (loss, p_t1 - lr * dloss/dp_t1, ..., p_tk - lr * dloss/dp_tk)

for the trainable parameters ``t1 < ... < tk`` (by default every float
parameter); the others (the batch, the labels, frozen weights passed as
arguments) are inputs only.  It is the first-order gradient
(:mod:`aot.passes.gradient`) with its result tuple replaced: the gradient
is a ``let`` chain ending in ``(loss, (d1, ..., dn))``, and the step ends
the same chain in the update instead, so the adjoints nobody uses (those
of the batch and of frozen parameters) are dead bindings the optimizer's
DeadCodeElimination removes, and the compiled step is dataflow: fused
kernels on the static arena, no pool.  A caller runs the loop by feeding
the new parameters back (``examples/train_on_device``).
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from ..diagnostics import DiagnosticError
from ..ir.expr import Constant, Expr, Function, Let, Tuple, TupleGetItem, Var
from ..ir.module import IRModule
from ..ir.ops.gradients import call
from ..ir.type_infer import infer_types
from ..ir.types import TensorType
from .gradient import GradientOptions, first_order_gradient

__all__ = ["sgd_step"]


def sgd_step(mod: IRModule, lr: float, trainable: Sequence[str] | None = None,
             entry: str = "main") -> IRModule:
    """``mod`` with ``@entry`` returning ``(loss, updated trainable
    parameters...)`` after one SGD step of rate ``lr`` (see the module
    docstring); ``trainable`` names parameters (default: the float ones)."""
    typed = infer_types(mod)
    if entry not in typed:
        raise DiagnosticError(f"sgd_step: the module has no function @{entry}")
    fn = typed[entry]
    rtype = fn.body.checked_type
    if not (isinstance(rtype, TensorType) and rtype.shape == () and rtype.dtype.is_float):
        raise DiagnosticError(f"sgd_step: @{entry} must return a float scalar loss, not "
                              f"{rtype}", fn.span)
    names = [p.name_hint for p in fn.params]
    if trainable is None:
        chosen = [i for i, p in enumerate(fn.params)
                  if isinstance(p.checked_type, TensorType) and p.checked_type.dtype.is_float]
    else:
        unknown = [t for t in trainable if t not in names]
        if unknown:
            raise DiagnosticError(f"sgd_step: @{entry} has no parameter {unknown[0]!r} "
                                  f"(parameters: {', '.join(names)})", fn.span)
        chosen = [i for i, n in enumerate(names) if n in set(trainable)]
    for i in chosen:
        t = fn.params[i].checked_type
        if not (isinstance(t, TensorType) and t.dtype.is_float):
            raise DiagnosticError(f"sgd_step: parameter {names[i]!r} of type {t} is not a "
                                  f"float tensor and cannot be trained", fn.span)
    grad = first_order_gradient(typed, GradientOptions(entry))[entry]
    lets: list[tuple[Var, Expr]] = []
    body = grad.body
    while isinstance(body, Let):
        lets.append((body.var, body.value))
        body = body.body
    assert isinstance(body, Tuple) and len(body.fields) == 2, "first-order gradient's result"
    loss, grads = body.fields
    outs: list[Expr] = [loss]
    for i in chosen:
        p = grad.params[i]
        t = p.checked_type
        assert isinstance(t, TensorType)
        d = grads.fields[i] if isinstance(grads, Tuple) else TupleGetItem(grads, i)
        rate = Constant(np.asarray(lr, dtype=t.dtype.np))
        outs.append(call("subtract", p, call("multiply", rate, d)))
    result: Expr = Tuple(tuple(outs))
    for v, value in reversed(lets):
        result = Let(v, value, result)
    out = typed.copy()
    out.add(entry, Function(grad.params, result, None, (), grad.attrs, span=fn.span))
    return infer_types(out)
