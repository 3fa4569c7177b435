"""Load a built artifact as a Python callable (through cffi).

:func:`load` reads ``metadata.json``, declares the entry function to cffi
from the prototype recorded there (cffi cannot parse real headers; the
wrapper includes the real header, so the C compiler checks the two
agree), loads the static library with :func:`aot.emit.build.extension.load_library`
and returns a :class:`CompiledModel`.

Calling a :class:`CompiledModel` never lets a bad argument reach C:

* the number of arguments must match the model's inputs;
* a NumPy array (or NumPy scalar) must have exactly the input's dtype --
  no silent casts, so a float64 array for a float32 input is an error that
  says how to convert; a bool array goes to C as its bytes (``uint8_t``
  0/1), a float16 array as its ``uint16_t`` bits; the types NumPy lacks
  are ``ml_dtypes`` arrays (``ml_dtypes.bfloat16``, ``float8_e4m3fn``,
  ``float8_e4m3fnuz``, ``float8_e5m2``, ``float8_e5m2fnuz``, ``int4``,
  ``uint4``), passed as their bits and int4/uint4 packed two per byte;
* plain Python values (numbers, nested lists) are converted when that is
  exact in kind: booleans to anything, integers to integer types when in
  range and to float types, floats to float types (rounded as a literal
  would be); anything else is an error;
* the shape must be the input's shape exactly (a scalar input takes a
  0-d array or a Python number).

The usual call -- every input a C-contiguous ``numpy.ndarray`` of exactly
its dtype and shape, by position -- takes a path prepared at load time
(:meth:`CompiledModel._run_fast`): no conversion, no copy of the inputs,
the outputs copied from poisoned templates; about 5 µs of Python per call
on DS-CNN where it was 18 (most of the rest is poisoning the arena).

Errors are :class:`~aot.diagnostics.DiagnosticError` naming the model,
the input and the expected and received shape and dtype.  Outputs are
fresh arrays (pre-filled with a 0xA5 byte pattern, so an output the C does
not write completely is noticed, not zero by luck); float16 outputs come
back as ``np.float16``, bool outputs as ``np.bool_`` and the others as
``ml_dtypes`` arrays of their type.  In caller-arena
mode each thread has an arena aligned to ``arena_align`` bytes, filled with
the same byte pattern before every call.  A
non-zero status raises a DiagnosticError with the status macro's name and
meaning.  The result is one array or a (nested) tuple shaped like the
model's ``output_tree``.

Threads.  cffi releases the GIL while the C runs, so calls from several
threads really overlap.  A model that keeps state in the library (a static
arena; a program's object pool and depth counter) has a non-reentrant
``<name>_run``: calls to it are serialised by a lock per loaded library
(two :func:`load` of one build share the library, and the lock).  A
caller-arena model needs no lock (each call gets its own arena).
:meth:`CompiledModel.context` gives a callable of its own on the reentrant
entry ``<name>_run_ctx`` with a context of its own: one per thread runs
the model in parallel.
"""

from __future__ import annotations

import copy
import functools
import math
import threading

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence

import ml_dtypes
import numpy as np

from ...diagnostics import DiagnosticError
from ...ir.dtype import DType, from_storage, to_storage
from .artifact import Artifact, build_artifact, open_artifact
from ..c.types import c_storage_type
from .extension import load_library
from .machine import archive_machine, host_machine, machine_name
from ..c.context import METADATA_VERSION
from .toolchain import Toolchain

__all__ = ["TensorInfo", "CompiledModel", "load", "library_lock", "context_cdef", "model_cdef"]

_POISON = 0xA5

#: one lock per loaded library (keyed by the cffi ``lib`` object's id: the
#: extension module, and so its ``lib``, lives as long as the process)
_LIBRARY_LOCKS: dict[int, threading.Lock] = {}
_LIBRARY_LOCKS_GUARD = threading.Lock()


def library_lock(lib: Any) -> threading.Lock:
    """The lock serialising calls into ``lib``'s non-reentrant functions."""
    with _LIBRARY_LOCKS_GUARD:
        return _LIBRARY_LOCKS.setdefault(id(lib), threading.Lock())


class _NoLock:
    """A reentrant entry needs no lock."""

    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: Any) -> None:
        return None


_MISSING = object()   # an input no argument gave


@dataclass(frozen=True, slots=True)
class TensorInfo:
    """A model input or output as recorded in metadata.json."""

    index: int
    name: str
    shape: tuple[int, ...]
    dtype: DType
    source_name: str = ""

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    @property
    def c_type(self) -> str:
        return c_storage_type(self.dtype)

    def describe(self) -> str:
        return _describe(self.shape, str(self.dtype))


def in_storage(dtype: DType) -> bool:
    """Passed to C as its storage units rather than as NumPy's bytes:
    bfloat16 and float8 as their bits, int4/uint4 packed two per byte."""
    return dtype.packed or (dtype.is_narrow_float and dtype is not DType.FLOAT16)


def storage(array: np.ndarray, dtype: DType) -> np.ndarray:
    return to_storage(array, dtype) if in_storage(dtype) else array


def _describe(shape: Sequence[int], dtype: str) -> str:
    return f"{dtype}{list(shape)}" if shape else f"{dtype} scalar"


def _bad_metadata(root: Path, message: str) -> DiagnosticError:
    return DiagnosticError(f"{root / 'metadata.json'}: {message}")


def _tensor_infos(root: Path, records: Any, what: str) -> tuple[TensorInfo, ...]:
    if not isinstance(records, list):
        raise _bad_metadata(root, f"`{what}` must be a list")
    infos = []
    for i, record in enumerate(records):
        try:
            dtype = DType(record["dtype"])
            shape = tuple(int(d) for d in record["shape"])
            infos.append(TensorInfo(i, str(record["name"]), shape, dtype,
                                    str(record.get("source_name", ""))))
        except (KeyError, TypeError, ValueError) as exc:
            raise _bad_metadata(root, f"{what}[{i}] is malformed ({exc})") from None
    return tuple(infos)


def _tree(value: Any) -> Any:
    """metadata's output_tree (ints and lists) as ints and tuples."""
    if isinstance(value, list):
        return tuple(_tree(v) for v in value)
    return int(value)


class Outputs(tuple):
    """A model's outputs when it has several: a tuple (by position, nested
    as the model's result is), whose tensors can also be read by name,
    ``outputs["probs"]``: the model's own name for the output (an ONNX or
    TFLite graph output's, or Relay's ``output_names`` attribute of
    ``@main``) or its C name (``out0``, ...)."""

    _by_name: dict[str, Any]

    def __new__(cls, items: Sequence[Any], by_name: Mapping[str, Any]) -> Outputs:
        obj = super().__new__(cls, items)
        obj._by_name = dict(by_name)
        return obj

    def __getitem__(self, key: Any) -> Any:   # type: ignore[override]
        if isinstance(key, str):
            if key not in self._by_name:
                names = ", ".join(self._by_name) or "none"
                raise KeyError(f"no output named `{key}` (outputs: {names})")
            return self._by_name[key]
        return super().__getitem__(key)

    def __reduce__(self) -> tuple[Any, ...]:
        return (Outputs, (tuple(self), self._by_name))

    def names(self) -> list[str]:
        """The outputs' names, in order (model names where they exist)."""
        return list(self._by_name)


def output_names(infos: Sequence[TensorInfo]) -> list[str]:
    """Each output's name for users: the model's own, else the C name."""
    return [t.source_name or t.name for t in infos]


def _named(infos: Sequence[TensorInfo], values: Sequence[Any]) -> dict[str, Any]:
    """Output values by name: the model's own names first, then the C
    names that differ from them."""
    by_name = dict(zip(output_names(infos), values))
    for info, value in zip(infos, values):
        by_name.setdefault(info.name, value)
    return by_name


class CompiledModel:
    """A model's C entry function, callable on NumPy arrays."""

    def __init__(self, artifact: Artifact, ffi: Any, lib: Any) -> None:
        meta = artifact.metadata
        root = artifact.root
        self.artifact = artifact
        self.name: str = artifact.name
        self.metadata: Mapping[str, Any] = meta
        self.inputs = _tensor_infos(root, meta.get("inputs"), "inputs")
        self.outputs = _tensor_infos(root, meta.get("outputs"), "outputs")
        self.output_tree = _tree(meta.get("output_tree", 0))
        self.arena_mode: str = meta.get("arena", "caller")
        self.arena_bytes = int(meta.get("arena_bytes", 0))
        self.arena_align = int(meta.get("arena_align", 16))
        self._status = {int(s["value"]): (str(s["macro"]), str(s["meaning"]))
                        for s in meta.get("status_codes", [])}
        self._ffi = ffi
        self._lib = lib
        self._entry = getattr(lib, meta["entry"]["name"])
        #: the reentrant entry (metadata ``entry.context``), if the model has state
        self._context_info: Mapping[str, Any] | None = meta["entry"].get("context")
        #: the C context this callable runs on (None: the library's static one)
        self._ctx: Any = None
        #: per thread: the caller arena, reused by the thread's calls
        self._arenas = threading.local()
        stateful = self.arena_mode == "static" or meta.get("backend") == "program"
        self._lock: Any = library_lock(lib) if stateful else _NoLock()
        # a program (CompiledProgram) has calls of its own
        self._fast = None if meta.get("backend") == "program" else self._fast_path()

    def _fast_path(self) -> tuple[Any, ...] | None:
        """What a call on plain arrays needs, computed once (see
        :meth:`_run_fast`): each input's shape, NumPy dtype and cffi type,
        and each output's poisoned template; None when a tensor travels in
        storage units (converted on every call)."""
        if any(in_storage(t.dtype) for t in (*self.inputs, *self.outputs)):
            return None
        inputs = tuple((t.shape, t.dtype.np, f"{t.c_type}[]") for t in self.inputs)
        templates = []
        for info in self.outputs:
            template = np.empty(info.shape, dtype=info.dtype.np)
            template.reshape(-1).view(np.uint8).fill(_POISON)
            templates.append((template, f"{info.c_type}[]"))
        return inputs, tuple(templates)

    def __repr__(self) -> str:
        ins = ", ".join(f"{t.name}: {t.describe()}" for t in self.inputs)
        outs = ", ".join(t.describe() for t in self.outputs)
        return f"<CompiledModel {self.name}({ins}) -> ({outs})>"

    # -- arguments -----------------------------------------------------

    def _where(self, info: TensorInfo) -> str:
        return f"model `{self.name}`: input {info.index} `{info.name}`"

    def _convert(self, info: TensorInfo, value: Any) -> np.ndarray:
        expected = info.describe()
        if isinstance(value, (np.ndarray, np.generic)):
            array = np.asarray(value)
            if array.dtype != info.dtype.np:
                raise DiagnosticError(
                    f"{self._where(info)}: expected {expected}, got "
                    f"{_describe(array.shape, str(array.dtype))} (NumPy arrays are not "
                    f"converted implicitly; use .astype(numpy.{info.dtype.np.name}))")
        else:
            array = self._from_python(info, value)
        if array.shape != info.shape:
            raise DiagnosticError(f"{self._where(info)}: expected {expected}, got "
                                  f"{_describe(array.shape, str(info.dtype))}")
        return np.ascontiguousarray(array)

    def _from_python(self, info: TensorInfo, value: Any) -> np.ndarray:
        target = info.dtype
        try:
            natural = np.asarray(value)
        except (ValueError, TypeError) as exc:
            raise DiagnosticError(f"{self._where(info)}: cannot make an array of "
                                  f"{type(value).__name__}: {exc}") from None
        kind = natural.dtype.kind
        if natural.size == 0:
            ok = True
        elif kind == "b":
            ok = True
        elif kind in "iu":
            ok = target.is_int or target.is_float
        elif kind == "f":
            ok = target.is_float
        else:
            ok = False
        if not ok:
            got = "values" if kind == "O" else f"{natural.dtype} values"
            raise DiagnosticError(f"{self._where(info)}: expected {info.describe()}; "
                                  f"Python {got} cannot be converted to {target} exactly")
        if kind in "iu" and target.is_int and natural.size:
            limits = ml_dtypes.iinfo(target.np)
            lo, hi = int(natural.min()), int(natural.max())
            if lo < int(limits.min) or hi > int(limits.max):
                bad = lo if lo < int(limits.min) else hi
                raise DiagnosticError(f"{self._where(info)}: value {bad} is out of "
                                      f"range of {target}")
        return natural.astype(target.np)

    def _pointer(self, array: np.ndarray, c_type: str) -> Any:
        if array.size == 0:   # no bytes: any valid pointer will do, never NULL
            array = np.zeros(1, dtype=np.uint8)
        return self._ffi.from_buffer(f"{c_type}[]", array, require_writable=False)

    # -- the call ------------------------------------------------------

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """Run the model on its inputs, by position or by name (the input's
        C name or, if it differs, the model's own name for it, e.g. an ONNX
        graph input ``input.1``: pass those as ``**{"input.1": x}``).  A
        model with several outputs returns :class:`Outputs`, a tuple that
        also takes the outputs' names."""
        results = self._run_fast(args) if not kwargs else None
        if results is None:
            results = self._run(self._bind(args, kwargs))
        if type(self.output_tree) is int:
            return results[self.output_tree]
        shaped = self._shape(self.output_tree, results)
        if isinstance(shaped, tuple):
            return Outputs(shaped, _named(self.outputs, results))
        return shaped

    def named(self, *args: Any, **kwargs: Any) -> dict[str, np.ndarray]:
        """Run the model (inputs as for a call) and return its output
        tensors by name, in order: the model's own names where it has
        them (ONNX and TFLite graph outputs), else the C names."""
        results = self._run(self._bind(args, kwargs))
        return dict(zip(output_names(self.outputs), results))

    @property
    def output_names(self) -> list[str]:
        """The outputs' names, in order (see :meth:`named`)."""
        return output_names(self.outputs)

    def _run(self, args: tuple[Any, ...]) -> list[np.ndarray]:
        """The flat output tensors of one run on the bound inputs."""
        fast = self._run_fast(args)
        if fast is not None:
            return fast
        arrays = [storage(self._convert(info, value), info.dtype)
                  for info, value in zip(self.inputs, args)]
        pointers = [self._pointer(a, info.c_type) for a, info in zip(arrays, self.inputs)]
        results = []
        for info in self.outputs:
            out = np.empty(info.shape, dtype=info.dtype.np)
            if in_storage(info.dtype):
                out = to_storage(out, info.dtype).copy()
            out.reshape(-1).view(np.uint8).fill(_POISON)
            results.append(out)
            pointers.append(self._pointer(out, info.c_type))
        if self.arena_mode == "caller":
            pointers.append(self._arena())
        with self._lock:
            status = int(self._entry(*pointers))
        del pointers, arrays   # the inputs and arena stay alive until here
        if status != 0:
            macro, meaning = self._status.get(status, ("unknown status", "?"))
            raise DiagnosticError(f"model `{self.name}` failed with status {status} "
                                  f"({macro}: {meaning})")
        return [from_storage(r, info.dtype, info.shape) if in_storage(info.dtype) else r
                for r, info in zip(results, self.outputs)]

    def _run_fast(self, args: tuple[Any, ...]) -> list[np.ndarray] | None:
        """:meth:`_run` for the usual call, every input a C-contiguous
        ``numpy.ndarray`` of exactly its dtype and shape, with no
        conversion, no copy and no per-call set-up but the outputs (copies
        of poisoned templates); None for any other call, which the general
        path checks, converts or refuses."""
        if self._fast is None or len(args) != len(self.inputs):
            return None
        inputs, templates = self._fast
        ffi = self._ffi
        pointers = []
        for value, (shape, dtype, c_type) in zip(args, inputs):
            if type(value) is not np.ndarray or value.dtype != dtype or \
                    value.shape != shape or not value.flags.c_contiguous or value.size == 0:
                return None
            pointers.append(ffi.from_buffer(c_type, value, require_writable=False))
        results = []
        for template, c_type in templates:
            out = template.copy()
            if out.size == 0:
                return None
            results.append(out)
            pointers.append(ffi.from_buffer(c_type, out))
        if self.arena_mode == "caller":
            pointers.append(self._arena())
        with self._lock:
            status = int(self._entry(*pointers))
        if status != 0:
            macro, meaning = self._status.get(status, ("unknown status", "?"))
            raise DiagnosticError(f"model `{self.name}` failed with status {status} "
                                  f"({macro}: {meaning})")
        return results

    def _bind(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, ...]:
        """The inputs in order, from positional then keyword arguments."""
        names = ", ".join(t.name for t in self.inputs) or "none"
        if len(args) > len(self.inputs):
            raise DiagnosticError(f"model `{self.name}` takes {len(self.inputs)} input(s) "
                                  f"({names}), got {len(args) + len(kwargs)}")
        bound: list[Any] = list(args) + [_MISSING] * (len(self.inputs) - len(args))
        for key, value in kwargs.items():
            found = [t.index for t in self.inputs if key in (t.name, t.source_name)]
            if not found:
                raise DiagnosticError(f"model `{self.name}` has no input named `{key}` "
                                      f"(inputs: {names})")
            if bound[found[0]] is not _MISSING:
                raise DiagnosticError(f"model `{self.name}`: input `{key}` given twice")
            bound[found[0]] = value
        missing = [t.name for t in self.inputs if bound[t.index] is _MISSING]
        if missing:
            raise DiagnosticError(f"model `{self.name}` takes {len(self.inputs)} input(s) "
                                  f"({names}), got {len(args) + len(kwargs)} (missing: "
                                  f"{', '.join(missing)})")
        return tuple(bound)

    def context(self) -> CompiledModel:
        """A callable like this one on a context of its own (the reentrant
        entry ``<name>_run_ctx``): calls on different contexts run in
        parallel, with no lock; one context serialises its own calls."""
        clone = copy.copy(self)
        info = self._context_info
        if info is None:
            if isinstance(self._lock, _NoLock):
                return clone                    # a caller-arena model is reentrant
            raise DiagnosticError(f"model `{self.name}`: the artifact has no reentrant entry "
                                  "(written by an older aot); compile it again")
        clone._ctx = self._new_context(info)
        clone._entry = functools.partial(getattr(self._lib, str(info["name"])), clone._ctx)
        clone._lock = threading.Lock()
        return clone

    def _new_context(self, info: Mapping[str, Any]) -> Any:
        ctx = self._ffi.new(f"{info['type']} *")
        getattr(self._lib, str(info["init"]))(ctx)
        return ctx

    def _arena(self) -> Any:
        """This thread's arena, poisoned again: allocated on the thread's
        first call and reused after (a fresh allocation of a few hundred KiB
        per call costs page faults comparable to a small model's run)."""
        if self.arena_bytes == 0:
            return self._ffi.NULL
        cached = getattr(self._arenas, "arena", None)
        if cached is None:
            raw = np.empty(self.arena_bytes + self.arena_align, dtype=np.uint8)
            skip = -raw.ctypes.data % self.arena_align
            array = raw[skip:skip + self.arena_bytes]
            cached = self._arenas.arena = (array, self._ffi.from_buffer("uint8_t[]", array))
        array, pointer = cached
        array.fill(_POISON)
        return pointer

    def _shape(self, tree: Any, results: list[np.ndarray]) -> Any:
        if isinstance(tree, tuple):
            return tuple(self._shape(t, results) for t in tree)
        return results[tree]


def context_cdef(meta: Mapping[str, Any]) -> str:
    """cffi declarations of the context type and its functions (none for
    a model without state).  The struct is declared with ``...``: cffi
    takes its size and alignment from the real header."""
    info = meta["entry"].get("context")
    if info is None:
        return ""
    return (f"typedef struct {{ ...; }} {info['type']};\n{info['init_prototype']}\n"
            f"{info['prototype']}\n")


def model_cdef(meta: Mapping[str, Any]) -> str:
    return context_cdef(meta) + meta["entry"]["prototype"] + "\n"


def _check_machine(library: Path) -> None:
    """A library built for another processor (a cross build for firmware)
    cannot be loaded here: say so instead of the host linker's error."""
    built, here = archive_machine(library), host_machine()
    if built is not None and here is not None and built != here:
        raise DiagnosticError(
            f"{library}: the library was built for {machine_name(built)}, not for this "
            f"machine ({machine_name(here)}), as `aot compile --target cortex-m...` builds "
            "it for firmware; aot.load runs host libraries: compile the model again for "
            "the host (without --target) to load it")


def load(artifact: Artifact | Path | str, *, toolchain: Toolchain | None = None,
         cache_dir: Path | str | None = None) -> CompiledModel:
    """The artifact's model as a callable.  The static library is built
    first when the artifact has none (call
    :func:`~aot.emit.build.artifact.build_artifact` to rebuild after changes)."""
    if not isinstance(artifact, Artifact):
        artifact = open_artifact(artifact)
    meta = artifact.metadata
    if meta.get("version") != METADATA_VERSION:
        raise _bad_metadata(artifact.root, f"unsupported artifact version "
                                           f"{meta.get('version')!r} (this aot reads "
                                           f"{METADATA_VERSION})")
    entry = meta.get("entry")
    if not isinstance(entry, dict) or not isinstance(entry.get("prototype"), str):
        raise _bad_metadata(artifact.root, "no entry prototype")
    if not artifact.layout.library.is_file():
        build_artifact(artifact, toolchain=toolchain, cache_dir=cache_dir)
    _check_machine(artifact.layout.library)
    if meta.get("backend") == "program":
        from .compiled_program import CompiledProgram, program_cdef
        ffi, lib = load_library(artifact.root, artifact.name, program_cdef(dict(meta)),
                                toolchain=toolchain, cache_dir=cache_dir)
        return CompiledProgram(artifact, ffi, lib)
    ffi, lib = load_library(artifact.root, artifact.name, model_cdef(dict(meta)),
                            toolchain=toolchain, cache_dir=cache_dir)
    return CompiledModel(artifact, ffi, lib)
