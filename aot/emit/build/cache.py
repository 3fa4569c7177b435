"""The on-disk build cache shared by the object builder and the cffi loader.

Layout (under :func:`cache_root`)::

    objects/<k[:2]>/<k>.o          compiled translation units
    cffi/<k[:2]>/<module><suffix>  compiled cffi extension modules
    tmp/                           scratch space; files are renamed out of it

Entries are named by a content key (:func:`content_key`, a SHA-256 over
everything that can change the output), never by an artifact path, so two
artifact directories holding the same C share their objects, and an entry
once written never changes.  Every write goes to a fresh temporary file in
the same file system and is then ``os.replace``-d into place, so concurrent
processes (pytest-xdist workers, parallel ``aot compile`` runs) can race on
the same key safely: each rename installs a complete, identical file.

The root is ``$AOT_CACHE_DIR`` when set, else ``$XDG_CACHE_HOME/aot``, else
``~/.cache/aot``.  The test suite points ``AOT_CACHE_DIR`` at a per-session
temporary directory.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from pathlib import Path
from typing import Iterable

#: Bump to invalidate every cache entry written by an older layout or keying.
CACHE_FORMAT = "aot-build-cache-1"


def cache_root(explicit: Path | str | None = None) -> Path:
    """The cache directory (created on demand)."""
    if explicit is not None:
        root = Path(explicit)
    elif os.environ.get("AOT_CACHE_DIR"):
        root = Path(os.environ["AOT_CACHE_DIR"])
    elif os.environ.get("XDG_CACHE_HOME"):
        root = Path(os.environ["XDG_CACHE_HOME"]) / "aot"
    else:
        root = Path.home() / ".cache" / "aot"
    root = root.expanduser().resolve()
    (root / "tmp").mkdir(parents=True, exist_ok=True)
    return root


def content_key(parts: Iterable[str | bytes]) -> str:
    """SHA-256 over ``parts``; each part is length-prefixed so that no two
    different sequences of parts can collide by concatenation."""
    digest = hashlib.sha256(CACHE_FORMAT.encode())
    for part in parts:
        data = part.encode() if isinstance(part, str) else part
        digest.update(len(data).to_bytes(8, "little"))
        digest.update(data)
    return digest.hexdigest()


def entry_path(root: Path, section: str, key: str, filename: str) -> Path:
    """Where the entry ``key`` of ``section`` lives (directory created)."""
    directory = root / section / key[:2]
    directory.mkdir(parents=True, exist_ok=True)
    return directory / filename


def scratch_dir(root: Path, prefix: str) -> tempfile.TemporaryDirectory[str]:
    """A private temporary directory inside the cache (same file system as
    the entries, so a finished file can be renamed into place)."""
    return tempfile.TemporaryDirectory(prefix=prefix, dir=root / "tmp")


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` so that readers see the old file or the
    complete new one, never a partial file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, temp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.chmod(temp, 0o644)
        os.replace(temp, path)
    except BaseException:
        if os.path.exists(temp):
            os.unlink(temp)
        raise


def write_if_changed(path: Path, data: bytes) -> bool:
    """Atomically write ``data`` unless ``path`` already holds exactly it
    (keeps the timestamp, so make does not rebuild).  True if written."""
    try:
        if path.read_bytes() == data:
            return False
    except FileNotFoundError:
        pass
    atomic_write_bytes(path, data)
    return True


def install_file(source: Path, destination: Path) -> None:
    """Atomically move a finished scratch file into its cache slot."""
    destination.parent.mkdir(parents=True, exist_ok=True)
    os.chmod(source, 0o644)
    os.replace(source, destination)
