"""Build an artifact directory's C sources into ``lib/lib<name>.a``.

The emitter writes the artifact (``include/<name>.h``, ``src/*.c``, the copy
of ``runtime_c/``, ...); this module only compiles and archives what is
there.  It never generates C.

Design
------
*Object cache.*  Each translation unit is compiled to an object named by a
content key (see :mod:`aot.emit.build.cache`) over

- the toolchain identity (compiler path, ``$CC`` words, kind, version
  banner, archiver),
- the exact compiler arguments (flags, ``-I`` directories, the source's
  path relative to the artifact root),
- the source text, and
- the path and text of every header the unit could include: all ``*.h``
  files under the include directories and under the source's directory.
  Hashing every header is coarser than tracking ``#include`` lines but can
  never miss a dependency, and the headers of one model are few and small.

System headers are covered by the compiler identity.  Compiles run with
the artifact root as the working directory and root-relative paths, so the
object (``__FILE__`` in ``assert``, say) does not depend on where the
artifact lives and identical artifacts in different directories share
their objects.

*Batching.*  :func:`build_static_libraries` takes many artifacts at once
and compiles all their translation units in one thread pool (the work is in
compiler subprocesses, so threads are enough), which keeps both cores busy
even when each model has one or two source files.  Identical units in a
batch are compiled once.

*Determinism.*  Members are archived in sorted order with ``ar``'s
deterministic mode (``D``: zero timestamps, uids and modes), so the same
sources give a byte-identical ``lib<name>.a``.  The library is rewritten
only when its bytes change.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Mapping, Sequence

from aot.diagnostics import DiagnosticError
from aot.emit.build import cache
from aot.emit.build.toolchain import BuildError, Toolchain, find_toolchain, run_tool

_C_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
#: Every object is compiled with it: the compiler writes each function's
#: frame to ``<object>.su``, kept in the cache beside the object, from which
#: :mod:`aot.emit.build.stack_usage` bounds the entry's stack (gcc and clang).
STACK_USAGE_FLAG = "-fstack-usage"
#: Files hashed as possible ``#include`` targets.
HEADER_SUFFIXES = (".h", ".inc")


#: The longest model name: it prefixes every C symbol and names the
#: header, the library and the make fragment.
MAX_MODEL_NAME = 64
#: C99's keywords (C11's start with `_`, refused as reserved).
C_KEYWORDS = frozenset("""
    auto break case char const continue default do double else enum extern float for goto
    if inline int long register restrict return short signed sizeof static struct switch
    typedef union unsigned void volatile while""".split())
#: Headers a model's ``include/<name>.h`` must not shadow: C99's standard
#: headers and the ACLE header the kernels include on Arm.
SYSTEM_HEADERS = frozenset("""
    assert complex ctype errno fenv float inttypes iso646 limits locale math setjmp signal
    stdarg stdbool stddef stdint stdio stdlib string tgmath time wchar wctype
    arm_acle""".split())


def check_model_name(name: str) -> str:
    """``name`` if it can prefix C symbols and name a library, else a
    user-facing error: a C identifier of at most :data:`MAX_MODEL_NAME`
    characters, not reserved (a leading `_`), not a keyword, not the
    runtime's own prefix (`aot`, `aot_...` in any case: the runtime's
    ``aot_*`` functions and ``AOT_*`` macros) and not the name of a standard
    header (the model's header would shadow it; compared without case, for
    case-insensitive file systems)."""
    def refuse(why: str) -> DiagnosticError:
        return DiagnosticError(f"invalid model name `{name}`: {why}")

    if not _C_IDENTIFIER.match(name):
        raise refuse("it must be a C identifier (letters, digits and `_`, not starting "
                     "with a digit)")
    if len(name) > MAX_MODEL_NAME:
        raise refuse(f"it has {len(name)} characters, at most {MAX_MODEL_NAME} are allowed")
    if name.startswith("_"):
        raise refuse("C reserves identifiers that start with `_` at file scope")
    if name in C_KEYWORDS:
        raise refuse("it is a C keyword")
    lower = name.lower()
    if lower == "aot" or lower.startswith("aot_"):
        raise refuse("`aot` and `aot_...` are the C runtime's own prefixes")
    if lower in SYSTEM_HEADERS:
        raise refuse(f"include/{name}.h would shadow the standard header <{lower}.h>")
    return name


@dataclass(frozen=True, slots=True)
class ArtifactLayout:
    """The paths of an artifact directory (the layout contract)."""

    root: Path
    name: str

    def __post_init__(self) -> None:
        check_model_name(self.name)

    @property
    def include_dir(self) -> Path:
        return self.root / "include"

    @property
    def header(self) -> Path:
        return self.include_dir / f"{self.name}.h"

    @property
    def src_dir(self) -> Path:
        return self.root / "src"

    @property
    def runtime_dir(self) -> Path:
        """Where the emitter copies the hand-written runtime (optional: it
        may instead put the runtime's files into ``src/`` and ``include/``)."""
        return self.root / "runtime_c"

    @property
    def library(self) -> Path:
        return self.root / "lib" / f"lib{self.name}.a"

    @property
    def metadata(self) -> Path:
        return self.root / "metadata.json"

    def sources(self) -> tuple[Path, ...]:
        """Every ``*.c`` under ``src/`` and ``runtime_c/``, sorted."""
        found: list[Path] = []
        for directory in (self.src_dir, self.runtime_dir):
            if directory.is_dir():
                found.extend(directory.rglob("*.c"))
        return tuple(sorted(found))

    def include_dirs(self) -> tuple[Path, ...]:
        """``include/``, and ``runtime_c/`` when the artifact has one."""
        dirs = [self.include_dir]
        if self.runtime_dir.is_dir():
            dirs.append(self.runtime_dir)
        return tuple(dirs)


@dataclass(frozen=True, slots=True)
class LibraryRequest:
    """One library to build.  ``sources`` and ``include_dirs`` default to
    the artifact layout's; relative paths are taken from ``root``."""

    root: Path
    name: str
    sources: tuple[Path, ...] | None = None
    include_dirs: tuple[Path, ...] | None = None
    extra_flags: tuple[str, ...] = ()

    @property
    def layout(self) -> ArtifactLayout:
        return ArtifactLayout(Path(self.root), self.name)


@dataclass(frozen=True, slots=True)
class ObjectBuild:
    """One translation unit of a library build."""

    source: str          # path as given to the compiler (root-relative when inside)
    member: str          # member name in the archive
    key: str             # content key of the object
    cached: bool         # True if the object came from the cache


@dataclass(frozen=True, slots=True)
class LibraryBuild:
    library: Path
    objects: tuple[ObjectBuild, ...]
    written: bool        # False when the library already held these bytes

    @property
    def compiled(self) -> tuple[str, ...]:
        return tuple(o.source for o in self.objects if not o.cached)

    @property
    def reused(self) -> tuple[str, ...]:
        return tuple(o.source for o in self.objects if o.cached)


# ---------------------------------------------------------------------------
# Keys


def _shown(path: Path, root: Path) -> str:
    """``path`` relative to ``root`` (POSIX form) when inside it, else absolute."""
    path = path if path.is_absolute() else root / path
    path = Path(os.path.normpath(path))
    try:
        return path.relative_to(root).as_posix()
    except ValueError:
        return str(path)


def header_key_parts(directories: Iterable[Path], root: Path) -> list[str | bytes]:
    """(name, text) of every header under ``directories``, in sorted order."""
    headers: set[Path] = set()
    for directory in directories:
        if directory.is_dir():
            headers.update(p for p in directory.rglob("*")
                           if p.suffix in HEADER_SUFFIXES and p.is_file())
    parts: list[str | bytes] = []
    for header in sorted(headers, key=lambda p: _shown(p, root)):
        parts.append(_shown(header, root))
        parts.append(header.read_bytes())
    return parts


@dataclass(frozen=True, slots=True)
class _CompileJob:
    key: str
    root: Path
    argv: tuple[str, ...]       # without `-o <object>`
    source: str


def _compile_jobs(request: LibraryRequest, toolchain: Toolchain,
                  ) -> list[tuple[_CompileJob, str]]:
    root = Path(request.root).resolve()
    layout = ArtifactLayout(root, request.name)
    sources = request.sources if request.sources is not None else layout.sources()
    include_dirs = (request.include_dirs if request.include_dirs is not None
                    else layout.include_dirs())
    if not sources:
        raise BuildError(f"no C sources to build for `{request.name}` in {root} "
                         "(expected src/*.c)")
    include_paths = [Path(os.path.normpath(root / d)) for d in include_dirs]
    include_flags = [f"-I{_shown(d, root)}" for d in include_paths]
    flags = toolchain.object_flags(request.extra_flags)
    jobs: list[tuple[_CompileJob, str]] = []
    members: dict[str, str] = {}
    for source in sources:
        source_path = Path(os.path.normpath(root / source))
        shown = _shown(source_path, root)
        member = source_path.stem + ".o"
        if member in members:
            raise BuildError(f"two sources of `{request.name}` would share the archive "
                             f"member {member}: {members[member]} and {shown}; "
                             "give C files distinct base names")
        members[member] = shown
        try:
            text = source_path.read_bytes()
        except OSError as exc:
            raise BuildError(f"cannot read C source: {exc.strerror}", path=source_path) from None
        argv = (*toolchain.command, *flags, STACK_USAGE_FLAG, *include_flags, "-c", shown)
        headers = header_key_parts([*include_paths, source_path.parent], root)
        key = cache.content_key([toolchain.identity, *argv, shown, text, *headers])
        jobs.append((_CompileJob(key, root, argv, shown), member))
    return jobs


# ---------------------------------------------------------------------------
# Compiling


def _object_path(cache_root: Path, key: str) -> Path:
    return cache.entry_path(cache_root, "objects", key, key + ".o")


def stack_usage_path(cache_root: Path, key: str) -> Path:
    """The ``-fstack-usage`` file of the object ``key`` (beside it in the cache)."""
    return cache.entry_path(cache_root, "objects", key, key + ".su")


def _run_compile(job: _CompileJob, cache_root: Path) -> None:
    """Compile ``job`` into its cache slot (the ``.su`` file first: an
    object in the cache has its stack usage beside it)."""
    with cache.scratch_dir(cache_root, "cc-") as scratch:
        output = Path(scratch) / "out.o"
        run_tool([*job.argv, "-o", str(output)], cwd=job.root,
                 what="C compiler", path=job.root / job.source)
        su = output.with_suffix(".su")
        if su.is_file():
            cache.install_file(su, stack_usage_path(cache_root, job.key))
        cache.install_file(output, _object_path(cache_root, job.key))


def default_jobs() -> int:
    configured = os.environ.get("AOT_BUILD_JOBS", "").strip()
    if configured.isdigit() and int(configured) > 0:
        return int(configured)
    return os.cpu_count() or 1


def _compile_all(jobs: Sequence[_CompileJob], cache_root: Path,
                 parallel: int) -> set[str]:
    """Compile every job whose object is not cached; return the keys that
    were compiled.  On failure, raise the error of the first failing job in
    order (deterministic whatever the scheduling)."""
    pending: dict[str, _CompileJob] = {}
    for job in jobs:
        if job.key in pending:
            continue
        cached = _object_path(cache_root, job.key)
        su = stack_usage_path(cache_root, job.key)
        if cached.is_file() and su.is_file():
            cache.touch(cached)        # used now: least recently used goes first
            cache.touch(su)
        else:
            pending[job.key] = job
    if not pending:
        return set()
    ordered = list(pending.values())
    if parallel <= 1 or len(ordered) == 1:
        for job in ordered:
            _run_compile(job, cache_root)
        return set(pending)
    with ThreadPoolExecutor(max_workers=min(parallel, len(ordered))) as pool:
        futures: list[Future[None]] = [pool.submit(_run_compile, job, cache_root)
                                       for job in ordered]
        for future in futures:
            exc = future.exception()
            if exc is not None:
                for other in futures:
                    other.cancel()
                raise exc
    return set(pending)


# ---------------------------------------------------------------------------
# Archiving


def _archive(library: Path, members: Sequence[tuple[str, str]], toolchain: Toolchain,
             cache_root: Path) -> bool:
    """Archive ``members`` ((member name, object key), in order) into
    ``library``; return whether the file was (re)written."""
    deterministic = "GNU" in toolchain.ar_banner or "LLVM" in toolchain.ar_banner
    operation = "rcsD" if deterministic else "rcs"
    with cache.scratch_dir(cache_root, "ar-") as scratch:
        staging = Path(scratch)
        for member, key in members:
            target = staging / member
            try:
                os.link(_object_path(cache_root, key), target)
            except OSError:
                shutil.copyfile(_object_path(cache_root, key), target)
        command = [toolchain.ar, operation, "out.a", *(m for m, _ in members)]
        env = dict(os.environ, ZERO_AR_DATE="1")
        try:
            result = subprocess.run(command, cwd=staging, capture_output=True, text=True,
                                    env=env, timeout=600, check=False)
        except OSError as exc:
            raise BuildError(f"cannot run the archiver: {exc.strerror}",
                             command=command) from None
        if result.returncode != 0:
            raise BuildError(f"archiver failed (exit status {result.returncode})",
                             command=command, path=library,
                             stderr=result.stderr + result.stdout)
        data = (staging / "out.a").read_bytes()
    return cache.write_if_changed(library, data)


# ---------------------------------------------------------------------------
# Public API


def build_static_libraries(requests: Sequence[LibraryRequest], *,
                           toolchain: Toolchain | None = None, jobs: int | None = None,
                           cache_dir: Path | str | None = None) -> list[LibraryBuild]:
    """Build several libraries, compiling all their translation units in one
    pool of ``jobs`` workers (default ``$AOT_BUILD_JOBS`` or the CPU count).
    Results are in request order."""
    toolchain = toolchain or find_toolchain()
    root = cache.cache_root(cache_dir)
    planned = [_compile_jobs(request, toolchain) for request in requests]
    compiled = _compile_all([job for plan in planned for job, _ in plan], root,
                            jobs or default_jobs())
    results = []
    seen: set[str] = set()
    for request, plan in zip(requests, planned):
        library = ArtifactLayout(Path(request.root).resolve(), request.name).library
        written = _archive(library, [(member, job.key) for job, member in plan],
                           toolchain, root)
        objects = []
        for job, member in plan:
            fresh = job.key in compiled and job.key not in seen
            seen.add(job.key)
            objects.append(ObjectBuild(job.source, member, job.key, cached=not fresh))
        results.append(LibraryBuild(library, tuple(objects), written))
    if compiled:
        cache.enforce_limit(root)
    return results


def build_library(artifact_dir: Path | str, name: str, *,
                  toolchain: Toolchain | None = None,
                  sources: Sequence[Path | str] | None = None,
                  include_dirs: Sequence[Path | str] | None = None,
                  extra_flags: Sequence[str] = (), jobs: int | None = None,
                  cache_dir: Path | str | None = None) -> LibraryBuild:
    """Build ``artifact_dir/lib/lib<name>.a`` and report what was compiled."""
    request = LibraryRequest(
        Path(artifact_dir), name,
        sources=None if sources is None else tuple(Path(s) for s in sources),
        include_dirs=None if include_dirs is None else tuple(Path(d) for d in include_dirs),
        extra_flags=tuple(extra_flags))
    return build_static_libraries([request], toolchain=toolchain, jobs=jobs,
                                  cache_dir=cache_dir)[0]


def build_static_library(artifact_dir: Path | str, name: str, *,
                         toolchain: Toolchain | None = None,
                         sources: Sequence[Path | str] | None = None,
                         include_dirs: Sequence[Path | str] | None = None,
                         extra_flags: Sequence[str] = (), jobs: int | None = None,
                         cache_dir: Path | str | None = None) -> Path:
    """Compile the artifact's C (default: ``src/**/*.c`` and
    ``runtime_c/**/*.c``, with ``-Iinclude`` and ``-Iruntime_c``) into
    ``artifact_dir/lib/lib<name>.a``; return the library's path.
    Raises :class:`~aot.emit.build.toolchain.BuildError` on any compiler error
    or warning."""
    return build_library(artifact_dir, name, toolchain=toolchain, sources=sources,
                         include_dirs=include_dirs, extra_flags=extra_flags, jobs=jobs,
                         cache_dir=cache_dir).library


def compile_check(c_text: str, toolchain: Toolchain | None = None, *,
                  include_dirs: Sequence[Path | str] = (), extra_flags: Sequence[str] = (),
                  filename: str = "check.c", cache_dir: Path | str | None = None) -> None:
    """Compile ``c_text`` as one translation unit with the strict flags;
    return if it compiles without a warning, raise
    :class:`~aot.emit.build.toolchain.BuildError` otherwise.  Cached like any
    object, so re-checking the same text is free."""
    toolchain = toolchain or find_toolchain()
    root = cache.cache_root(cache_dir)
    with tempfile.TemporaryDirectory(prefix="aot-check-") as scratch:
        work = Path(scratch)
        (work / filename).write_text(c_text)
        request = LibraryRequest(work, "check", sources=(Path(filename),),
                                 include_dirs=tuple(Path(d).resolve() for d in include_dirs),
                                 extra_flags=tuple(extra_flags))
        plan = _compile_jobs(request, toolchain)
        if _compile_all([job for job, _ in plan], root, 1):
            cache.enforce_limit(root)


def write_sources(artifact_dir: Path | str, files: Mapping[str, str | bytes]) -> list[Path]:
    """Write ``files`` (path relative to ``artifact_dir`` -> text) into the
    artifact, atomically and only where the content changed.  Returns the
    paths in sorted order."""
    root = Path(artifact_dir)
    written = []
    for relative in sorted(files):
        assert not Path(relative).is_absolute() and ".." not in Path(relative).parts, relative
        content = files[relative]
        data = content.encode() if isinstance(content, str) else content
        path = root / relative
        cache.write_if_changed(path, data)
        written.append(path)
    return written
