"""Where the emitter's non-Python resources live: ``templates/`` (Jinja)
and ``runtime_c/`` (the hand-written C runtime).

Both directories sit at the top level of the repository (the layout is
fixed by the design).  An installed wheel carries them as the data-only
packages ``aot._templates`` and ``aot._runtime_c`` (pyproject.toml maps
those package names onto the two directories), so the lookup is:

1. the package resource, when ``aot._templates`` / ``aot._runtime_c`` can
   be found and holds the expected file (an installed wheel);
2. otherwise the repository checkout this module was imported from
   (``<repo>/aot/emit/resources.py`` -> ``<repo>/templates``), which covers
   running from a source tree and editable installs.

``aot/_templates/`` and ``aot/_runtime_c/`` in the source tree are
placeholders (a README each): setuptools' package finder only lists
packages that exist as directories, and pyproject.toml's ``package-dir``
then builds them from ``templates/`` and ``runtime_c/``.

A directory counts only if it holds its marker file (``model.c.j2``,
``aot_kernel_helpers.h``), so a stray empty namespace package never wins.
"""

from __future__ import annotations

import functools
import importlib.util
from pathlib import Path

__all__ = ["templates_dir", "runtime_dir", "runtime_file", "ResourceError"]

_REPO_ROOT = Path(__file__).resolve().parents[2]

#: (package name, directory name in the repository, marker file)
_TEMPLATES = ("aot._templates", "templates", "model.c.j2")
_RUNTIME = ("aot._runtime_c", "runtime_c", "aot_kernel_helpers.h")


class ResourceError(RuntimeError):
    """The package is installed without its data files (a packaging bug)."""


def _from_package(package: str, marker: str) -> Path | None:
    """The installed directory of data package ``package`` holding
    ``marker``.  These packages have no ``__init__.py`` (namespace
    packages), so their directories come from the import spec's search
    locations; an editable install may list the source tree's placeholder
    directory there, which has no marker and is skipped."""
    try:
        spec = importlib.util.find_spec(package)
    except ImportError:
        return None
    if spec is None or spec.submodule_search_locations is None:
        return None
    for location in spec.submodule_search_locations:
        path = Path(location)
        if (path / marker).is_file():
            return path
    return None


def _locate(package: str, directory: str, marker: str) -> Path:
    found = _from_package(package, marker)
    if found is not None:
        return found
    checkout = _REPO_ROOT / directory
    if (checkout / marker).is_file():
        return checkout
    raise ResourceError(f"cannot find aot's `{directory}/` (looked for package {package} "
                        f"and for {checkout / marker}); the installation is incomplete")


@functools.cache
def templates_dir() -> Path:
    """The directory holding ``model.h.j2``, ``model.c.j2``, ``model.mk.j2``."""
    return _locate(*_TEMPLATES)


@functools.cache
def runtime_dir() -> Path:
    """The directory holding the C runtime (``aot_kernel_helpers.h``, ...)."""
    return _locate(*_RUNTIME)


def runtime_file(name: str) -> Path:
    """One file of the C runtime."""
    path = runtime_dir() / name
    if not path.is_file():
        raise ResourceError(f"runtime file `{name}` is missing from {runtime_dir()}")
    return path
