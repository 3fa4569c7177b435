"""Types of a whole-language program as the program backend's metadata
records them, and the walks over them the entry function needs.

Types go into ``metadata.json`` as JSON so that the loader can convert
values without the IR module:

* ``{"tensor": [shape, dtype]}``
* ``{"tuple": [t...]}``
* ``{"adt": name, "args": [t...]}`` (the ADT's definition is in
  ``types.adts[name]``: type parameters and constructors with field types
  in terms of them)
* ``{"var": name}`` a type parameter inside an ADT definition
* ``{"func": [[arg types], ret]}`` and ``{"ref": t}``: opaque to the loader
"""

from __future__ import annotations

from typing import Any

from ...diagnostics import DiagnosticError
from ...ir.module import IRModule
from ...ir.types import (FuncType, GlobalTypeVar, RefType, TensorType, TupleType, Type,
                         TypeCall, TypeVar)

__all__ = ["type_json", "adt_json", "io_leaves"]


def type_json(t: Type) -> Any:
    if isinstance(t, TensorType):
        shape = []
        for d in t.shape:
            if not isinstance(d, int):
                raise DiagnosticError(f"a tensor of dynamic shape {t} cannot be compiled to C "
                                      "(the C backend needs static shapes)")
            shape.append(int(d))
        return {"tensor": [shape, t.dtype.value]}
    if isinstance(t, TupleType):
        return {"tuple": [type_json(f) for f in t.fields]}
    if isinstance(t, TypeCall):
        return {"adt": t.func.name, "args": [type_json(a) for a in t.args]}
    if isinstance(t, GlobalTypeVar):
        return {"adt": t.name, "args": []}
    if isinstance(t, TypeVar):
        return {"var": t.name}
    if isinstance(t, FuncType):
        return {"func": [[type_json(a) for a in t.arg_types], type_json(t.ret_type)]}
    if isinstance(t, RefType):
        return {"ref": type_json(t.value)}
    raise DiagnosticError(f"the type {t} cannot be compiled to C")


def adt_json(mod: IRModule, ids: dict[str, int]) -> dict[str, Any]:
    """Every ADT of ``mod``: type parameters and constructors (C id, tag,
    field types)."""
    out: dict[str, Any] = {}
    for header in sorted(mod.type_definitions, key=lambda h: h.name):
        data = mod.type_definitions[header]
        out[header.name] = {
            "params": [v.name for v in data.type_vars],
            "constructors": [{"name": c.name, "id": ids[c.name], "tag": c.tag,
                              "fields": [type_json(f) for f in c.inputs]}
                             for c in data.constructors],
        }
    return out


def io_leaves(t: Type) -> list[tuple[tuple[int, ...], Type]]:
    """The leaves of ``t`` below its tuples, with their paths (tuple field
    indices from the root), left to right.  The empty tuple is a leaf: the
    entry function passes the unit value as a value handle."""
    out: list[tuple[tuple[int, ...], Type]] = []
    stack: list[tuple[tuple[int, ...], Type]] = [((), t)]
    while stack:
        path, u = stack.pop()
        if isinstance(u, TupleType) and u.fields:
            for i in range(len(u.fields) - 1, -1, -1):
                stack.append(((*path, i), u.fields[i]))
        else:
            out.append((path, u))
    return out
