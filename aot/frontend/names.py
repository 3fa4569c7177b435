"""Names of imported graphs: inputs as IR identifiers, outputs as an
attribute of ``@main``."""

from __future__ import annotations

import re
from typing import Sequence

from ..ir.attrs import OUTPUT_NAMES_ATTR, FuncAttrs
from ..ir.expr import Expr, Function, Tuple, Var
from ..ir.module import IRModule

_IDENT_START = re.compile(r"[A-Za-z_]")


def sanitize_names(names: Sequence[str]) -> list[str]:
    """IR identifiers for a model's names (graph inputs), deterministic
    and unique: characters outside ``[A-Za-z0-9_]`` become ``_``, a
    leading digit gets a ``_`` prefix, and a clash gets ``_1``, ``_2`` ...
    in order."""
    out: list[str] = []
    used: set[str] = set()
    for name in names:
        base = re.sub(r"[^A-Za-z0-9_]", "_", name) or "input"
        if not _IDENT_START.match(base):
            base = "_" + base
        cand = base
        k = 1
        while cand in used:
            cand = f"{base}_{k}"
            k += 1
        used.add(cand)
        out.append(cand)
    return out



def entry_module(params: Sequence[Var], outputs: Sequence[Expr],
                 output_names: Sequence[str]) -> IRModule:
    """The module of an imported graph: ``@main`` takes ``params`` and
    returns its one output, or a tuple of them, in the graph's order.  The
    graph's own output names ride on ``@main`` as the function attribute
    ``output_names`` (a list of strings), which the C backend hands on to
    ``metadata.json`` and :func:`aot.load` (outputs by name)."""
    body = outputs[0] if len(outputs) == 1 else Tuple(tuple(outputs))
    attrs = FuncAttrs.of({OUTPUT_NAMES_ATTR: [str(n) for n in output_names]})
    mod = IRModule()
    mod.add("main", Function(tuple(params), body, attrs=attrs))
    return mod
