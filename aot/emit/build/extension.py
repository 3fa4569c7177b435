"""Load a built artifact into Python through a cffi extension module.

Given an artifact (``include/<name>.h``, ``lib/lib<name>.a``) and the C
declarations of its entry functions (a cffi ``cdef`` string, written by the
emitter because cffi cannot parse real headers), :func:`load_library`
returns ``(ffi, lib)`` whose ``lib`` calls straight into the static library.

Design
------
*API mode, compiled by us.*  cffi writes the wrapper's C
(``ffi.set_source(module, '#include "<name>.h"')`` + ``ffi.emit_c_code``);
we compile it with the project's toolchain into a shared object linked
against ``lib<name>.a``, without going through setuptools (which costs more
than the compile itself).  The wrapper includes the real header, so the C
compiler checks the cdef against it.  The wrapper is cffi's code, not ours:
it is compiled without the strict warning flags.

*Optimisation.*  The wrapper is built at ``-O0``
(:data:`EXTENSION_OPT_FLAGS`).  Its work per call is a few conversions per
argument, calls into cffi's backend and CPython: a loaded dense model's call
costs 19.1 us from Python whether its wrapper is built at ``-O0`` or
``-O1``, while compiling the wrapper costs in proportion to the entry
point's arguments: 0.85 CPU-s at ``-O0`` against 3.2 s at ``-O1`` for the
10,000-line wrapper of a packed test program with 802 pointer arguments,
and with the sanitizers (``-fsanitize=address,undefined -g``, see below)
2.7 s against 62 s (gcc 12's variable tracking exceeds its limit and
starts over).

*Cache.*  The extension is named and stored by a content key over the
cffi and Python versions, the toolchain, the cdef, every header in the
include directories and the bytes of the static library, so a rebuilt
library never reuses a stale extension and an unchanged one is never
rebuilt.  The toolchain's sanitizer flags (``$AOT_SANITIZE``, see
:mod:`aot.emit.build.toolchain`) are added to the wrapper's compile and link
command and to the key: the wrapper is instrumented too, and linking with
``-fsanitize`` records the sanitizer runtimes as the extension's
dependencies.  :func:`build_extensions` compiles many at once in a thread pool
(batching for test suites); loading afterwards is a cache hit.

*Two models in one process.*  The module name embeds the model name and
the key (``_aot_<name>_<key16>``), so different models, and different
builds of one model, get different modules.  The static library is linked
with ``--exclude-libs,ALL``: its symbols are not exported from the
extension, so two extensions holding equal C symbol names cannot interpose
on each other.  Loading the same build twice returns the already imported
module.

Arrays: :func:`input_pointer` checks dtype and C-contiguity before handing
a NumPy buffer to C (a wrong pointer type silently corrupts memory, so the
check is not optional), and :func:`output_array` makes the output buffer
and its pointer.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import sys
import sysconfig
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any, Sequence

import cffi
import numpy as np

from aot.diagnostics import DiagnosticError
from aot.emit.build import cache
from aot.emit.build.library import ArtifactLayout, default_jobs, header_key_parts
from aot.emit.c.types import c_storage_type
from aot.emit.build.toolchain import BuildError, Toolchain, find_toolchain, run_tool
from aot.ir.dtype import DType

#: Flags for the cffi wrapper.  It is cffi's C, not ours, so the strict set
#: does not apply; but a cdef that disagrees with the real header must fail
#: (a call through a mismatched prototype corrupts memory silently).
EXTENSION_FLAGS: tuple[str, ...] = (
    "-fPIC", "-shared", "-fdiagnostics-color=never",
    "-Werror=incompatible-pointer-types", "-Werror=int-conversion",
    "-Werror=implicit-function-declaration", "-Werror=pointer-sign",
)

#: Optimisation of the wrapper (see the module note).
EXTENSION_OPT_FLAGS: tuple[str, ...] = ("-O0",)


def wrapper_flags(toolchain: Toolchain) -> tuple[str, ...]:
    """The wrapper's compile and link flags under ``toolchain`` (without
    the include directories)."""
    return (*EXTENSION_FLAGS, *EXTENSION_OPT_FLAGS, *toolchain.sanitize_flags)


#: C element type for each dtype, as spelled in generated headers
#: (:func:`~aot.emit.c.types.c_storage_type`: bool travels as a ``uint8_t``
#: holding 0 or 1, float16 as its raw 16 bits in a ``uint16_t``).
C_TYPES: dict[DType, str] = {dtype: c_storage_type(dtype) for dtype in DType}


@dataclass(frozen=True, slots=True)
class ExtensionRequest:
    """One extension to build: an artifact plus the cdef of its entry points.
    ``library`` and ``include_dirs`` default to the artifact layout's."""

    root: Path
    name: str
    cdef: str
    library: Path | None = None
    include_dirs: tuple[Path, ...] | None = None


@dataclass(frozen=True, slots=True)
class _ExtensionPlan:
    module_name: str
    key: str
    cdef: str
    header_name: str
    library: Path
    include_dirs: tuple[Path, ...]


def _plan(request: ExtensionRequest, toolchain: Toolchain) -> _ExtensionPlan:
    root = Path(request.root).resolve()
    layout = ArtifactLayout(root, request.name)
    library = (root / request.library) if request.library is not None else layout.library
    include_dirs = tuple(root / d for d in (request.include_dirs if request.include_dirs
                                            is not None else layout.include_dirs()))
    try:
        library_bytes = library.read_bytes()
    except OSError as exc:
        raise BuildError(f"cannot read the static library of `{request.name}` "
                         f"(build it first): {exc.strerror}", path=library) from None
    key = cache.content_key([
        "cffi-extension", cffi.__version__, sys.implementation.cache_tag or "",
        sysconfig.get_config_var("SOABI") or "", toolchain.identity,
        "flags:" + " ".join(wrapper_flags(toolchain)),
        request.name, request.cdef, *header_key_parts(include_dirs, root), library_bytes,
    ])
    return _ExtensionPlan(module_name=f"_aot_{request.name}_{key[:16]}", key=key,
                          cdef=request.cdef, header_name=f"{request.name}.h",
                          library=library, include_dirs=include_dirs)


def _extension_suffix() -> str:
    return importlib.machinery.EXTENSION_SUFFIXES[0]


def _extension_path(cache_root: Path, plan: _ExtensionPlan) -> Path:
    return cache.entry_path(cache_root, "cffi", plan.key,
                            plan.module_name + _extension_suffix())


def _make_ffi(plan: _ExtensionPlan) -> cffi.FFI:
    ffi = cffi.FFI()
    try:
        ffi.cdef(plan.cdef)
    except cffi.CDefError as exc:
        raise BuildError(f"invalid cffi declarations for `{plan.module_name}`: {exc}") from None
    ffi.set_source(plan.module_name, f'#include "{plan.header_name}"', compiler_verbose=False)
    return ffi


def _link_flags() -> list[str]:
    if sys.platform == "darwin":
        return ["-undefined", "dynamic_lookup"]
    return ["-Wl,--exclude-libs,ALL"]


def _compile_extension(plan: _ExtensionPlan, toolchain: Toolchain, cache_root: Path) -> Path:
    target = _extension_path(cache_root, plan)
    if target.is_file():
        cache.touch(target)
        return target
    ffi = _make_ffi(plan)
    with cache.scratch_dir(cache_root, "cffi-") as scratch:
        work = Path(scratch)
        wrapper = work / f"{plan.module_name}.c"
        ffi.emit_c_code(str(wrapper))
        output = work / ("out" + _extension_suffix())
        includes = [f"-I{d}" for d in plan.include_dirs]
        command = [*toolchain.command, *wrapper_flags(toolchain),
                   f"-I{sysconfig.get_paths()['include']}",
                   *includes, wrapper.name, str(plan.library), *_link_flags(),
                   "-o", str(output)]
        run_tool(command, cwd=work, what="building the cffi extension", path=wrapper)
        cache.install_file(output, target)
    cache.enforce_limit(cache_root)
    return target


_IMPORT_LOCK = threading.Lock()


def _import_extension(module_name: str, path: Path) -> ModuleType:
    with _IMPORT_LOCK:
        module = sys.modules.get(module_name)
        if module is not None:
            return module
        loader = importlib.machinery.ExtensionFileLoader(module_name, str(path))
        spec = importlib.util.spec_from_file_location(module_name, str(path), loader=loader)
        assert spec is not None
        module = importlib.util.module_from_spec(spec)
        loader.exec_module(module)
        sys.modules[module_name] = module
        return module


def build_extensions(requests: Sequence[ExtensionRequest], *,
                     toolchain: Toolchain | None = None, jobs: int | None = None,
                     cache_dir: Path | str | None = None) -> list[Path]:
    """Compile (or find in the cache) the extension of every request, in
    parallel; return the shared objects' paths in request order."""
    toolchain = toolchain or find_toolchain()
    root = cache.cache_root(cache_dir)
    plans = [_plan(request, toolchain) for request in requests]
    parallel = min(jobs or default_jobs(), len(plans))
    if parallel <= 1:
        return [_compile_extension(plan, toolchain, root) for plan in plans]
    with ThreadPoolExecutor(max_workers=parallel) as pool:
        futures = [pool.submit(_compile_extension, plan, toolchain, root) for plan in plans]
        return [future.result() for future in futures]


def load_extension(artifact_dir: Path | str, name: str, cdef: str, *,
                   toolchain: Toolchain | None = None, library: Path | str | None = None,
                   include_dirs: Sequence[Path | str] | None = None,
                   cache_dir: Path | str | None = None) -> ModuleType:
    """Build (or reuse) and import the extension; the module has ``ffi`` and
    ``lib`` attributes."""
    toolchain = toolchain or find_toolchain()
    root = cache.cache_root(cache_dir)
    request = ExtensionRequest(
        Path(artifact_dir), name, cdef,
        library=None if library is None else Path(library),
        include_dirs=None if include_dirs is None else tuple(Path(d) for d in include_dirs))
    plan = _plan(request, toolchain)
    module = sys.modules.get(plan.module_name)
    if module is not None:
        return module
    return _import_extension(plan.module_name, _compile_extension(plan, toolchain, root))


def load_library(artifact_dir: Path | str, name: str, cdef: str, *,
                 toolchain: Toolchain | None = None, library: Path | str | None = None,
                 include_dirs: Sequence[Path | str] | None = None,
                 cache_dir: Path | str | None = None) -> tuple[Any, Any]:
    """``(ffi, lib)`` for the artifact's static library; ``lib.<fn>`` calls
    the C entry functions declared in ``cdef``."""
    module = load_extension(artifact_dir, name, cdef, toolchain=toolchain, library=library,
                            include_dirs=include_dirs, cache_dir=cache_dir)
    return module.ffi, module.lib


# ---------------------------------------------------------------------------
# NumPy arrays <-> C pointers


def _dtype_of(dtype: DType | np.dtype | type | str) -> DType:
    if isinstance(dtype, DType):
        return dtype
    return DType.from_numpy(np.dtype(dtype))


def input_pointer(ffi: Any, array: Any, dtype: DType | np.dtype | type | str,
                  what: str = "argument") -> Any:
    """A ``<ctype>[]`` cdata over ``array``'s memory (no copy), after checking
    it is a C-contiguous ``numpy.ndarray`` of exactly ``dtype``.  The cdata
    keeps ``array`` alive."""
    expected = _dtype_of(dtype)
    if not isinstance(array, np.ndarray):
        raise DiagnosticError(f"{what}: expected a numpy.ndarray of {expected}, "
                              f"got {type(array).__name__}")
    if array.dtype != expected.np:
        raise DiagnosticError(f"{what}: expected dtype {expected}, got {array.dtype}")
    if not array.flags.c_contiguous:
        raise DiagnosticError(f"{what}: array must be C-contiguous "
                              "(use numpy.ascontiguousarray)")
    return ffi.from_buffer(f"{C_TYPES[expected]}[]", array)


def output_pointer(ffi: Any, array: np.ndarray, dtype: DType | np.dtype | type | str,
                   what: str = "output") -> Any:
    """Like :func:`input_pointer`, and also requires a writable array."""
    pointer = input_pointer(ffi, array, dtype, what)
    if not array.flags.writeable:
        raise DiagnosticError(f"{what}: array must be writable")
    return pointer


def output_array(ffi: Any, shape: Sequence[int],
                 dtype: DType | np.dtype | type | str) -> tuple[np.ndarray, Any]:
    """A fresh C-contiguous array for C to fill, and its pointer."""
    element = _dtype_of(dtype)
    array = np.zeros(tuple(shape), dtype=element.np)
    return array, ffi.from_buffer(f"{C_TYPES[element]}[]", array, require_writable=True)
