"""A built whole-language program as a Python callable.

The same values go in and come out as with :func:`aot.interpret`: NumPy
arrays, tuples, :class:`~aot.values.ConstructorValue` (compared with the
interpreter's by constructor name, ADT and tag).  Conversion is directed
by the types recorded in ``metadata.json`` (``program.types``) and is
iterative, so a 100,000-element list converts without Python recursion:

* in: tensors are checked and converted exactly as for dataflow models
  (:class:`~aot.emit.build.compiled_model.CompiledModel`), then copied into the
  pool (``<name>_value_tensor``); tuples and ADT values are built bottom
  up with ``<name>_value_tuple`` / ``<name>_value_adt``; function values
  and references cannot be passed in (a DiagnosticError says so);
* out: value handles are read with the accessors and released; closures
  and references come back as opaque :class:`OpaqueValue` objects.

After a call every handle the loader made or received is released, so
``pool_in_use()`` is 0 again unless the program leaked.
"""

from __future__ import annotations

import copy
import functools
from typing import Any

import numpy as np

from ...diagnostics import DiagnosticError
from ...ir.adt import Constructor
from ...ir.dtype import DType, from_storage, to_storage
from ...ir.types import GlobalTypeVar
from ...values import ConstructorValue, FunctionValue, RefValue
from .compiled_model import (CompiledModel, Outputs, TensorInfo, in_storage, storage,
                             output_names)

__all__ = ["CompiledProgram", "OpaqueValue", "program_cdef"]

_KIND_TENSOR, _KIND_ADT, _KIND_TUPLE, _KIND_CLOSURE, _KIND_REF = 1, 2, 3, 4, 5


class OpaqueValue:
    """A closure or reference returned by a compiled program."""

    def __init__(self, kind: str) -> None:
        self.kind = kind

    def __repr__(self) -> str:
        return f"<compiled {self.kind}>"


def program_cdef(meta: dict) -> str:
    from ..c.program_api import api_prototypes
    from .compiled_model import context_cdef
    name = meta["name"]
    return "\n".join([f"typedef struct aot_obj {name}_value;", context_cdef(meta).rstrip("\n"),
                      *api_prototypes(name), meta["entry"]["prototype"], ""])


#: value functions that touch the pool: a context's callable uses their
#: ``_ctx`` forms on its own context
_POOL_FUNCTIONS = frozenset({"value_tensor", "value_tuple", "value_adt", "value_release",
                             "pool_in_use", "pool_high_water"})


def _substitute(t: Any, env: dict[str, Any]) -> Any:
    if "var" in t:
        return env[t["var"]]
    if "tuple" in t:
        return {"tuple": [_substitute(f, env) for f in t["tuple"]]}
    if "adt" in t:
        return {"adt": t["adt"], "args": [_substitute(a, env) for a in t["args"]]}
    return t


def _leaves(t: Any) -> list[Any]:
    """io_leaves on JSON types (same order)."""
    if "tuple" in t and t["tuple"]:
        return [leaf for f in t["tuple"] for leaf in _leaves(f)]
    return [t]


class CompiledProgram(CompiledModel):
    """A whole-language program's entry function, callable on interpreter
    values."""

    def __init__(self, artifact: Any, ffi: Any, lib: Any) -> None:
        super().__init__(artifact, ffi, lib)
        program = self.metadata["program"]
        self._lib = lib
        self._types = program["types"]
        self._adts = self._types["adts"]
        self._in_leaves = program["inputs"]
        self._out_leaves = program["outputs"]
        self._max_depth = program["max_depth"]
        self._ctors: dict[str, Constructor] = {}
        for adt, data in self._adts.items():
            for c in data["constructors"]:
                self._ctors[c["name"]] = Constructor(c["name"], (), GlobalTypeVar(adt), c["tag"])
        self._stack_bytes = int(program.get("stack_bytes", 0))

    def _fn(self, suffix: str) -> Any:
        """The C function ``<name>_<suffix>`` (its ``_ctx`` form bound to
        this callable's context when it has one and the function uses the
        pool)."""
        if self._ctx is not None and suffix in _POOL_FUNCTIONS:
            return functools.partial(getattr(self._lib, f"{self.name}_{suffix}_ctx"), self._ctx)
        return getattr(self._lib, f"{self.name}_{suffix}")

    def context(self, stack_bytes: int | None = None) -> CompiledProgram:
        """A callable like this one on a context of its own (its own pool,
        depth counter and stack budget, ``stack_bytes`` or the compiled
        default): see :meth:`CompiledModel.context`.  Values built for one
        context's call stay in its pool."""
        if stack_bytes is not None and (isinstance(stack_bytes, bool) or
                                        not isinstance(stack_bytes, int) or stack_bytes < 0):
            raise DiagnosticError(f"model `{self.name}`: stack_bytes must be a non-negative "
                                  f"int, not {stack_bytes!r}")
        clone = copy.copy(self)
        if stack_bytes is not None:
            clone._stack_bytes = stack_bytes
        result = CompiledModel.context(clone)
        assert isinstance(result, CompiledProgram)
        return result

    def _new_context(self, info: Any) -> Any:
        ctx = self._ffi.new(f"{info['type']} *")
        getattr(self._lib, str(info["init"]))(ctx, self._stack_bytes)
        return ctx

    def pool_in_use(self) -> int:
        return int(self._fn("pool_in_use")())

    def pool_high_water(self) -> int:
        return int(self._fn("pool_high_water")())

    # -- Python -> C -----------------------------------------------------

    def _check(self, status: int, what: str) -> None:
        if status != 0:
            raise self._failure(status, what)

    def _failure(self, status: int, what: str) -> DiagnosticError:
        macro, meaning = self._status.get(status, ("unknown status", "?"))
        detail = {2: f"object pool exhausted ({self.metadata.get('pool_bytes')} bytes; compile "
                     "with a larger pool_bytes)",
                  3: f"recursion deeper than {self._max_depth} nested calls or "
                     f"{self._stack_bytes} bytes of stack (compile with a larger max_depth "
                     "or stack_bytes)",
                  4: "no clause matched the value of a match"}.get(status, meaning)
        return DiagnosticError(f"model `{self.name}` {what} failed with status {status} "
                               f"({macro}): {detail}")

    def _tensor_handle(self, value: Any, t: Any, where: str) -> Any:
        shape, dtype = t["tensor"]
        info = TensorInfo(0, where, tuple(shape), DType(dtype))
        array = storage(self._convert(info, value), info.dtype)
        c_type = info.c_type
        data = self._pointer(array, c_type)
        out = self._ffi.new(f"{self.name}_value **")
        self._check(self._fn("value_tensor")(data, array.nbytes, out), "building an input")
        return out[0]

    def _to_c(self, value: Any, t: Any, where: str, owned: list) -> Any:
        """An owned handle for ``value`` of JSON type ``t`` (iterative)."""
        results: list[Any] = []
        stack: list[tuple[Any, Any, Any]] = [(value, t, None)]
        while stack:
            v, ty, marker = stack.pop()
            if marker is not None:
                kind, ident, n = marker
                fields = results[len(results) - n:]
                del results[len(results) - n:]
                out = self._ffi.new(f"{self.name}_value **")
                array = self._ffi.new(f"{self.name}_value *[]", max(n, 1))
                for i, f in enumerate(fields):
                    array[i] = f
                if kind == "tuple":
                    status = self._fn("value_tuple")(n, array, out)
                else:
                    status = self._fn("value_adt")(ident, array, out)
                for f in fields:
                    owned.remove(f)
                    self._fn("value_release")(f)
                self._check(status, "building an input")
                owned.append(out[0])
                results.append(out[0])
                continue
            if "tensor" in ty:
                h = self._tensor_handle(v, ty, where)
                owned.append(h)
                results.append(h)
            elif "tuple" in ty:
                if not isinstance(v, tuple) or len(v) != len(ty["tuple"]):
                    raise DiagnosticError(f"model `{self.name}`: {where}: expected a tuple of "
                                          f"{len(ty['tuple'])}, got {_describe(v)}")
                stack.append((v, ty, ("tuple", 0, len(v))))
                stack.extend(reversed(list(zip(v, ty["tuple"], [None] * len(v)))))
            elif "adt" in ty:
                data = self._adts[ty["adt"]]
                if not isinstance(v, ConstructorValue):
                    raise DiagnosticError(f"model `{self.name}`: {where}: expected a value of "
                                          f"type {ty['adt']}, got {_describe(v)}")
                ctor = next((c for c in data["constructors"] if c["name"] == v.constructor.name),
                            None)
                if ctor is None or len(ctor["fields"]) != len(v.fields):
                    raise DiagnosticError(f"model `{self.name}`: {where}: {v.constructor.name} "
                                          f"is not a constructor of {ty['adt']} with "
                                          f"{len(v.fields)} fields")
                env = dict(zip(data["params"], ty["args"]))
                ftypes = [_substitute(f, env) for f in ctor["fields"]]
                stack.append((v, ty, ("adt", ctor["id"], len(v.fields))))
                stack.extend(reversed(list(zip(v.fields, ftypes, [None] * len(v.fields)))))
            else:
                what = "closures" if "func" in ty else "references"
                raise DiagnosticError(f"model `{self.name}`: {where}: {what} cannot be passed "
                                      "into a compiled program")
        assert len(results) == 1
        return results[0]

    # -- C -> Python -----------------------------------------------------

    def _array(self, h: Any, t: Any) -> np.ndarray:
        shape, dtype = t["tensor"]
        dt = DType(dtype)
        n = int(self._fn("value_nbytes")(h))
        size = int(np.prod(shape, dtype=np.int64))
        assert n == dt.nbytes(size), (n, shape, dtype)
        if dt.packed or dt.is_narrow_float:
            raw = np.frombuffer(self._ffi.buffer(self._fn("value_data")(h), n), dtype=np.uint8) \
                if n else np.zeros(0, np.uint8)
            return from_storage(raw.copy(), dt, tuple(shape))
        unit = np.uint8 if dt is DType.BOOL else dt.np
        if n == 0:
            raw = np.zeros(size, dtype=unit)
        else:
            raw = np.frombuffer(self._ffi.buffer(self._fn("value_data")(h), n),
                                dtype=unit).copy()
        if dt is DType.BOOL:
            raw = raw.astype(np.bool_)
        return raw.reshape(shape)

    def _from_c(self, handle: Any, t: Any) -> Any:
        results: list[Any] = []
        stack: list[tuple[Any, Any, Any]] = [(handle, t, None)]
        while stack:
            h, ty, marker = stack.pop()
            if marker is not None:
                kind, ctor, n = marker
                fields = tuple(results[len(results) - n:])
                del results[len(results) - n:]
                results.append(fields if kind == "tuple" else ConstructorValue(ctor, fields))
                continue
            if "tensor" in ty:
                results.append(self._array(h, ty))
            elif "tuple" in ty:
                n = len(ty["tuple"])
                stack.append((h, ty, ("tuple", None, n)))
                subs = [(self._fn("value_field")(h, i), ty["tuple"][i], None) for i in range(n)]
                stack.extend(reversed(subs))
            elif "adt" in ty:
                data = self._adts[ty["adt"]]
                tag = int(self._fn("value_tag")(h))
                ctor = next(c for c in data["constructors"] if c["tag"] == tag)
                env = dict(zip(data["params"], ty["args"]))
                n = len(ctor["fields"])
                stack.append((h, ty, ("adt", self._ctors[ctor["name"]], n)))
                subs = [(self._fn("value_field")(h, i), _substitute(ctor["fields"][i], env), None)
                        for i in range(n)]
                stack.extend(reversed(subs))
            else:
                results.append(OpaqueValue("closure" if "func" in ty else "reference"))
        assert len(results) == 1
        return results[0]

    # -- the call --------------------------------------------------------

    def __call__(self, *args: Any) -> Any:
        """Run the program on interpreter values; a tuple result is
        :class:`Outputs` (its leaves also by name, see :meth:`named`)."""
        results = self._leaf_results(args)
        joined = _join(self._types["result"], iter(results))
        if isinstance(joined, tuple) and joined:
            return Outputs(joined, dict(zip(self._leaf_names(), results)))
        return joined

    def named(self, *args: Any, **kwargs: Any) -> dict[str, Any]:
        """The result's leaves by name, in order: a tensor leaf under the
        model's own output name where it has one, every leaf under its C
        name (``out0``, ...) otherwise."""
        if kwargs:
            raise DiagnosticError(f"model `{self.name}`: a whole-language program takes its "
                                  "arguments by position")
        return dict(zip(self._leaf_names(), self._leaf_results(args)))

    @property
    def output_names(self) -> list[str]:
        return self._leaf_names()

    def _leaf_names(self) -> list[str]:
        sources = iter(output_names(self.outputs))
        return [next(sources) if leaf["kind"] == "tensor" else str(leaf["name"])
                for leaf in self._out_leaves]

    def _leaf_results(self, args: tuple[Any, ...]) -> list[Any]:
        # the whole call: its inputs and outputs are handles in the pool
        with self._lock:
            return self._call(*args)

    def _call(self, *args: Any) -> list[Any]:
        params = self._types["params"]
        if len(args) != len(params):
            raise DiagnosticError(f"model `{self.name}` takes {len(params)} argument(s), got "
                                  f"{len(args)}")
        owned: list[Any] = []
        pointers: list[Any] = []
        keep: list[Any] = []
        results: list[Any] = []
        try:
            leaf_index = 0
            for k, (value, t) in enumerate(zip(args, params)):
                for leaf_value, leaf_t in _split(value, t, f"argument {k}", self.name):
                    leaf = self._in_leaves[leaf_index]
                    leaf_index += 1
                    if leaf["kind"] == "tensor":
                        info = TensorInfo(leaf_index - 1, leaf["name"], tuple(leaf["shape"]),
                                          DType(leaf["dtype"]))
                        array = storage(self._convert(info, leaf_value), info.dtype)
                        keep.append(array)
                        pointers.append(self._pointer(array, info.c_type))
                    else:
                        pointers.append(self._to_c(leaf_value, leaf_t, f"argument {k}", owned))
            outs = []
            for leaf in self._out_leaves:
                if leaf["kind"] == "tensor":
                    out = np.empty(tuple(leaf["shape"]), dtype=DType(leaf["dtype"]).np)
                    if in_storage(DType(leaf["dtype"])):
                        out = to_storage(out, DType(leaf["dtype"])).copy()
                    out.reshape(-1).view(np.uint8).fill(0xA5)
                    outs.append(out)
                    pointers.append(self._pointer(out, leaf["c_type"]))
                else:
                    box = self._ffi.new(f"{self.name}_value **")
                    outs.append(box)
                    pointers.append(box)
            status = int(self._entry(*pointers))
            if status != 0:
                raise self._failure(status, "run")
            for leaf, out in zip(self._out_leaves, outs):
                if leaf["kind"] == "tensor":
                    dt = DType(leaf["dtype"])
                    results.append(from_storage(out, dt, tuple(leaf["shape"]))
                                   if in_storage(dt) else out)
                else:
                    handle = out[0]
                    try:
                        results.append(self._from_c(handle, leaf["type"]))
                    finally:
                        self._fn("value_release")(handle)
        finally:
            for h in owned:
                self._fn("value_release")(h)
        return results


def _split(value: Any, t: Any, where: str, name: str) -> list[tuple[Any, Any]]:
    """(value, type) of each io leaf of ``value`` (tuples opened)."""
    if "tuple" in t and t["tuple"]:
        if not isinstance(value, tuple) or len(value) != len(t["tuple"]):
            raise DiagnosticError(f"model `{name}`: {where}: expected a tuple of "
                                  f"{len(t['tuple'])}, got {_describe(value)}")
        return [leaf for v, f in zip(value, t["tuple"]) for leaf in _split(v, f, where, name)]
    return [(value, t)]


def _join(t: Any, leaves: Any) -> Any:
    if "tuple" in t and t["tuple"]:
        return tuple(_join(f, leaves) for f in t["tuple"])
    return next(leaves)


def _describe(v: Any) -> str:
    if isinstance(v, ConstructorValue):
        return f"constructor {v.constructor.name}"
    if isinstance(v, FunctionValue):
        return "a function"
    if isinstance(v, RefValue):
        return "a reference"
    if isinstance(v, tuple):
        return f"a tuple of {len(v)}"
    return type(v).__name__
