"""Render a :class:`~aot.emit.plan.model.ModelPlan` into an artifact
directory and build it.

The artifact (layout contract, see DESIGN.md)::

    DIR/include/<name>.h            the public header
    DIR/src/<name>.c                constants, kernels, the entry function
    DIR/src/<name>_tables.inc       the large tables' portable integer form,
                                    included by <name>.c where their string
                                    form is not compiled (models with one)
    DIR/runtime_c/*.h               a copy of the runtime headers it uses
    DIR/<name>.mk                   variables for firmware Makefiles
    DIR/metadata.json               shapes, sizes, kernels, ... (sorted JSON)
    DIR/tools/aot_stack.py          the stack tool (:mod:`.stack_usage`; `make <name>-stack`)
    DIR/lib/lib<name>.a             after :func:`build_artifact`

Rendering is :mod:`aot.emit.c.context` (every string) plus the Jinja
templates in ``templates/`` (the skeletons).  The environment uses
``StrictUndefined`` (a misspelt context field is an error, not an empty
string) and ``keep_trailing_newline``; a template error is re-raised as
:class:`TemplateRenderError` naming the template and line.  Output is a
pure function of the plan: the same plan gives byte-identical files, and
files whose bytes did not change are not rewritten (so build caches and
make see no change).
"""

from __future__ import annotations

import errno
import functools
import json
import os
import shutil
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

import jinja2
import jinja2.bccache

from ...diagnostics import DiagnosticError, warn
from ...progress import stage
from . import cache, stack_usage
from .library import (ArtifactLayout, LibraryRequest, build_static_libraries,
                      check_model_name, stack_usage_path, write_sources)
from ..plan.model import ModelPlan
from ..c.context import (BUILD_FLAGS, RenderContext, build_context,
                         build_metadata, tables_file_text)
from ..resources import runtime_file, templates_dir
from .toolchain import Toolchain

__all__ = ["Artifact", "TemplateRenderError", "render_artifact", "write_artifact",
           "write_and_build", "open_artifact", "build_artifact", "build_artifacts",
           "build_and_measure", "TEMPLATES", "STACK_TOOL", "MEMORY_REPORT"]

#: the artifact's copy of :mod:`aot.emit.build.stack_usage` (standard library only)
STACK_TOOL = "tools/aot_stack.py"

#: the memory report's files (``aot compile --memory-report``)
MEMORY_REPORT = ("memory.svg", "memory.txt")

#: template -> artifact path ({name} is the model name)
TEMPLATES: tuple[tuple[str, str], ...] = (
    ("model.h.j2", "include/{name}.h"),
    ("model.c.j2", "src/{name}.c"),
    ("model.mk.j2", "{name}.mk"),
)


class TemplateRenderError(RuntimeError):
    """A template failed to render: a bug in the templates or the context."""


@dataclass(frozen=True, slots=True)
class Artifact:
    """A written artifact: its directory, model name and metadata."""

    root: Path
    name: str
    metadata: Mapping[str, Any] = field(compare=False, repr=False)

    @property
    def layout(self) -> ArtifactLayout:
        return ArtifactLayout(self.root, self.name)


#: the templates' syntax options (part of the compiled templates' cache key)
_JINJA_OPTIONS: Mapping[str, Any] = {"keep_trailing_newline": True, "trim_blocks": True,
                                     "lstrip_blocks": True, "autoescape": False}


class _CompiledTemplates(jinja2.BytecodeCache):
    """The templates compiled to Python code objects, kept in the build
    cache (section ``templates``, :mod:`.cache`): a fresh process renders
    without parsing and compiling them again (24 ms of CPU each time).
    Keyed by everything the code depends on -- the template's path and
    source, Jinja's and Python's versions, the syntax options -- and
    written atomically like every entry, so concurrent processes share it
    safely.  A cache that cannot be read or written only costs the compile."""

    def _path(self, bucket: jinja2.bccache.Bucket) -> Path:
        key = cache.content_key(["jinja2", jinja2.__version__, sys.version,
                                 repr(sorted(_JINJA_OPTIONS.items())), bucket.key,
                                 bucket.checksum])
        return cache.entry_path(cache.cache_root(), "templates", key, f"{key}.jinja")

    def load_bytecode(self, bucket: jinja2.bccache.Bucket) -> None:
        try:
            path = self._path(bucket)
            data = path.read_bytes()
        except OSError:
            return
        try:
            bucket.bytecode_from_string(data)   # checks Jinja's magic and the checksum
        except Exception:                       # noqa: BLE001 (a damaged entry: compile)
            bucket.reset()
        if bucket.code is not None:
            cache.touch(path)

    def dump_bytecode(self, bucket: jinja2.bccache.Bucket) -> None:
        try:
            cache.atomic_write_bytes(self._path(bucket), bucket.bytecode_to_string())
        except OSError:
            pass


@functools.cache
def _environment(directory: Path) -> jinja2.Environment:
    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(directory)),
        undefined=jinja2.StrictUndefined,
        bytecode_cache=_CompiledTemplates(),
        **_JINJA_OPTIONS,
    )


def _render(template_name: str, ctx: RenderContext) -> str:
    env = _environment(templates_dir())
    variables = {name: getattr(ctx, name) for name in RenderContext.__dataclass_fields__}
    try:
        return env.get_template(template_name).render(**variables)
    except jinja2.TemplateError as exc:
        line = getattr(exc, "lineno", None) or _template_line(exc, template_name)
        where = f"{template_name}:{line}" if line else template_name
        raise TemplateRenderError(f"{where}: {type(exc).__name__}: {exc}") from exc


def _template_line(exc: BaseException, template_name: str) -> int | None:
    """The template line a render-time error came from: Jinja rewrites the
    traceback so that template frames carry the template's file and line."""
    line = None
    tb = exc.__traceback__
    while tb is not None:
        if Path(tb.tb_frame.f_code.co_filename).name == template_name:
            line = tb.tb_lineno
        tb = tb.tb_next
    return line


def _metadata_text(metadata: Mapping[str, Any]) -> str:
    return json.dumps(metadata, sort_keys=True, indent=2, ensure_ascii=True,
                      allow_nan=False) + "\n"


def render_artifact(plan: ModelPlan, *, memory_report: bool = False) -> dict[str, str | bytes]:
    """Every file of the artifact (path relative to its root -> content),
    the library excepted; ``memory_report``: also ``memory.svg`` and
    ``memory.txt`` (:mod:`.memory_report`).  Pure: no file system writes."""
    check_model_name(plan.name)
    ctx = build_context(plan)
    files: dict[str, str | bytes] = {}
    for template_name, target in TEMPLATES:
        files[target.format(name=plan.name)] = _render(template_name, ctx)
    if ctx.tables_file:
        files[f"src/{ctx.tables_file}"] = tables_file_text(ctx)
    for runtime_name in ctx.runtime_files:
        files[f"runtime_c/{runtime_name}"] = runtime_file(runtime_name).read_bytes()
    files["metadata.json"] = _metadata_text(build_metadata(plan, ctx))
    files[STACK_TOOL] = Path(stack_usage.__file__).read_bytes()
    if memory_report:
        from .memory_report import memory_svg, memory_table
        files[MEMORY_REPORT[0]] = memory_svg(plan)
        files[MEMORY_REPORT[1]] = memory_table(plan)
    return files


def _remove_stale(root: Path, name: str, keep: set[str]) -> None:
    """Delete what an earlier artifact left in the directories the build
    compiles from (src/, runtime_c/), and the files of an earlier model
    of another name."""
    for directory in ("src", "runtime_c"):
        base = root / directory
        if base.is_dir():
            for path in sorted(base.rglob("*")):
                if path.is_file() and path.relative_to(root).as_posix() not in keep:
                    path.unlink()
    for report in MEMORY_REPORT:                  # an earlier compile's report
        if report not in keep:
            (root / report).unlink(missing_ok=True)
    old = root / "metadata.json"
    if old.is_file():
        try:
            old_name = json.loads(old.read_text()).get("name")
        except (OSError, ValueError, AttributeError):
            old_name = None
        if isinstance(old_name, str) and old_name != name:
            for stale in (f"include/{old_name}.h", f"{old_name}.mk", f"lib/lib{old_name}.a"):
                (root / stale).unlink(missing_ok=True)


def write_artifact(plan: ModelPlan, out_dir: Path | str, *, memory_report: bool = False,
                   write_metadata: bool = True) -> Artifact:
    """Render ``plan`` into ``out_dir`` (created if needed) and return the
    artifact.  Only files whose content changed are rewritten.
    ``write_metadata=False`` leaves metadata.json to the caller (the build
    adds the stack figure: written once, its time kept when unchanged)."""
    root = Path(out_dir).resolve()
    files = render_artifact(plan, memory_report=memory_report)
    root.mkdir(parents=True, exist_ok=True)
    _remove_stale(root, plan.name, set(files))
    metadata = json.loads(files["metadata.json"])
    if not write_metadata:
        del files["metadata.json"]
    write_sources(root, files)
    return Artifact(root, plan.name, metadata)


def write_and_build(plan: ModelPlan, out_dir: Path | str, *, build: bool = True,
                    toolchain: Toolchain | None = None,
                    ram_budget: int | None = None,
                    memory_report: bool = False) -> Artifact:
    """Write ``plan``'s artifact into ``out_dir`` and (``build``) build its
    library, all or nothing: the work happens in a staging directory beside
    ``out_dir`` (a copy of the old artifact, so files whose content did not
    change keep their times and a firmware ``make`` rebuilds nothing more),
    which replaces ``out_dir`` only when everything succeeded.  ``toolchain``
    builds the library (default: the host's); the built library's
    worst-case stack goes into metadata.json (``stack.library``, see
    :func:`build_and_measure`).  ``ram_budget`` (bytes) fails the compile
    when arena, pool and stack need more (:func:`aot.emit.build.memory.check_ram_budget`).
    A failure (a compiler error, a full disk, the budget) leaves ``out_dir``
    as it was."""
    from .memory import check_ram_budget
    root = Path(out_dir).resolve()
    if root.exists() and not root.is_dir():
        raise FileExistsError(errno.EEXIST, "exists and is not a directory", str(root))
    root.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{root.name}.staging-", dir=root.parent))
    try:
        with stage("rendering"):
            if root.is_dir():
                shutil.copytree(root, staging, dirs_exist_ok=True, symlinks=True)
            artifact = write_artifact(plan, staging, memory_report=memory_report,
                                      write_metadata=not build)
        if build:
            with stage("C build"):
                artifact = build_and_measure(artifact, toolchain=toolchain)
        if ram_budget is not None:
            unbuilt = "not known: the library was not built (--no-build)"
            check_ram_budget(artifact.metadata, ram_budget,
                             stack_note=None if build else unbuilt)
        _replace(staging, root)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return Artifact(root, artifact.name, artifact.metadata)


def _replace(staging: Path, root: Path) -> None:
    """``staging`` takes ``root``'s place (the old one is removed after)."""
    old = None
    if root.exists():
        old = Path(tempfile.mkdtemp(prefix=f".{root.name}.old-", dir=root.parent))
        os.rename(root, old / "artifact")
    os.rename(staging, root)
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)


def open_artifact(path: Path | str) -> Artifact:
    """The artifact written earlier into ``path`` (reads metadata.json)."""
    root = Path(path).resolve()
    meta_path = root / "metadata.json"
    try:
        metadata = json.loads(meta_path.read_text())
    except OSError as exc:
        raise DiagnosticError(f"{meta_path}: cannot read the artifact's metadata: "
                              f"{exc.strerror}") from None
    except ValueError as exc:
        raise DiagnosticError(f"{meta_path}: not valid JSON: {exc}") from None
    name = metadata.get("name") if isinstance(metadata, dict) else None
    if not isinstance(name, str):
        raise DiagnosticError(f"{meta_path}: no model name in the metadata")
    return Artifact(root, name, metadata)


def build_artifacts(artifacts: Sequence[Artifact], *, toolchain: Toolchain | None = None,
                    jobs: int | None = None, cache_dir: Path | str | None = None,
                    extra_flags: Sequence[str] = ()) -> list[Path]:
    """Build ``lib/lib<name>.a`` of every artifact (one compile pool for
    all); return the libraries' paths in order.  Compiler errors and
    warnings raise :class:`~aot.emit.build.toolchain.BuildError`."""
    requests = [LibraryRequest(a.root, a.name, extra_flags=(*BUILD_FLAGS, *extra_flags))
                for a in artifacts]
    builds = build_static_libraries(requests, toolchain=toolchain, jobs=jobs,
                                    cache_dir=cache_dir)
    return [b.library for b in builds]


def build_and_measure(artifact: Artifact, *, toolchain: Toolchain | None = None,
                      cache_dir: Path | str | None = None) -> Artifact:
    """Build the artifact's library, then bound its entry's stack from the
    objects' ``-fstack-usage`` files and the call graph in metadata.json
    (:mod:`.stack_usage`); the figure goes into metadata.json as
    ``stack.library`` (with the compiler and its flags), which is (re)written
    from ``artifact.metadata``.  Returns the artifact with the new metadata."""
    from .toolchain import find_toolchain
    toolchain = toolchain or find_toolchain()
    request = LibraryRequest(artifact.root, artifact.name, extra_flags=BUILD_FLAGS)
    built = build_static_libraries([request], toolchain=toolchain, cache_dir=cache_dir)[0]
    root = cache.cache_root(cache_dir)
    metadata = dict(artifact.metadata)
    spec = dict(metadata.get("stack") or {})
    texts = []
    for obj in built.objects:
        try:
            texts.append((obj.source, stack_usage_path(root, obj.key).read_text()))
        except OSError:
            spec = {}               # evicted meanwhile: no figure rather than a wrong one
    if not spec:
        write_sources(artifact.root, {"metadata.json": _metadata_text(metadata)})
        return Artifact(artifact.root, artifact.name, metadata)
    try:
        figure = stack_usage.worst_case(spec, stack_usage.parse_su(texts))
    except stack_usage.StackUsageError as exc:      # the compiler's .su, not the model
        warn(str(artifact.root / "metadata.json"), f"no worst-case stack figure: {exc}")
        write_sources(artifact.root, {"metadata.json": _metadata_text(metadata)})
        return Artifact(artifact.root, artifact.name, metadata)
    tool = Path(toolchain.command[-1]).name         # arm-none-eabi-gcc, or the host's gcc
    spec["library"] = {"compiler": toolchain.label if tool in ("cc", toolchain.kind.value)
                       else f"{tool}-{toolchain.version}",
                       "flags": [*toolchain.target_flags, *toolchain.opt_flags,
                                 *toolchain.sanitize_flags],
                       **figure.record()}
    metadata["stack"] = spec
    write_sources(artifact.root, {"metadata.json": _metadata_text(metadata)})
    return Artifact(artifact.root, artifact.name, metadata)


def build_artifact(artifact: Artifact, *, toolchain: Toolchain | None = None,
                   jobs: int | None = None, cache_dir: Path | str | None = None,
                   extra_flags: Sequence[str] = ()) -> Path:
    """Build the artifact's static library; return its path."""
    return build_artifacts([artifact], toolchain=toolchain, jobs=jobs, cache_dir=cache_dir,
                           extra_flags=extra_flags)[0]
