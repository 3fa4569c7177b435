"""BindParams: parameters of the entry function become constants.

``aot.compile(mod, ..., params={"w": w})`` binds ``main``'s parameter
``%w`` to the array ``w``, as Relay's ``build(..., params=...)`` did: the
parameter disappears from ``main``'s signature and every use of it is the
constant, so FoldConstant can pre-compute weight transformations and the
kernels read the weights from flash.

The array must have the parameter's shape (when annotated) and a dtype that
converts exactly (a float64 array for a float32 weight is refused rather
than silently rounded).  Unknown names are errors.
"""

from __future__ import annotations

from typing import Any, Mapping

import numpy as np

from ..diagnostics import DiagnosticError
from ..ir.dtype import DType
from ..ir.expr import Constant, Function
from ..ir.module import IRModule
from ..ir.types import TensorType
from ..ir.visitor import ExprMutator
from ..ir.dtype import np_kind

__all__ = ["bind_params"]


def _as_constant(name: str, value: Any, annotation: object) -> Constant:
    arr = np.asarray(value)
    if isinstance(annotation, TensorType):
        want = annotation.dtype
        if arr.dtype != want.np:
            converted = arr.astype(want.np)
            is_float = np_kind(arr.dtype) == "f"
            same = (converted.astype(arr.dtype) == arr) | (np.isnan(arr) if is_float else False)
            if np_kind(arr.dtype) not in "iubf" or not np.all(same):
                raise DiagnosticError(f"param `{name}`: a {arr.dtype} array does not convert "
                                      f"exactly to {want}")
            arr = converted
        shape = tuple(annotation.shape)
        if all(isinstance(d, int) for d in shape) and tuple(arr.shape) != shape:
            raise DiagnosticError(f"param `{name}`: expected shape {shape}, got {arr.shape}")
    else:
        DType.from_numpy(arr.dtype)
    return Constant(np.array(arr, order="C"))   # ascontiguousarray would make 0-d 1-d


def bind_params(mod: IRModule, params: Mapping[str, Any], entry: str = "main") -> IRModule:
    """A copy of ``mod`` whose ``entry`` has the named parameters replaced
    by constants."""
    if not params:
        return mod
    if entry not in mod:
        raise DiagnosticError(f"params given, but the module has no `@{entry}`")
    fn = mod[entry]
    by_name = {p.name_hint: p for p in fn.params}
    unknown = sorted(set(params) - set(by_name))
    if unknown:
        raise DiagnosticError(f"`@{entry}` has no parameter named "
                              + ", ".join(f"`{u}`" for u in unknown)
                              + f" (parameters: {', '.join(by_name) or 'none'})")
    mutator = ExprMutator()
    for name, value in params.items():
        p = by_name[name]
        mutator.memo[p] = _as_constant(name, value, p.type_annotation)
    body = mutator.visit(fn.body)
    kept = tuple(p for p in fn.params if p.name_hint not in params)
    out = mod.copy()
    out.add(mod.global_var(entry), Function(kept, body, fn.ret_type, fn.type_params, fn.attrs,
                                            span=fn.span))
    return out
