"""The on-disk build cache shared by the object builder and the cffi loader.

Layout (under :func:`cache_root`)::

    objects/<k[:2]>/<k>.o          compiled translation units
    cffi/<k[:2]>/<module><suffix>  compiled cffi extension modules
    templates/<k[:2]>/<k>.jinja    the artifact templates compiled by Jinja
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

Bounded size, least recently used out.  Every use of an entry (a hit as
well as a write) sets its modification time to now (:func:`touch`), so an
entry's mtime is its last use; ``atime`` is not used, file systems mounted
``noatime``/``relatime`` do not keep it.  After a build installed new
entries, :func:`enforce_limit` sums the entries' sizes and, when the total
exceeds the limit (:data:`DEFAULT_LIMIT_BYTES`, 1 GiB, or
``$AOT_CACHE_MAX_BYTES``: bytes, or with a ``K``/``M``/``G`` suffix, ``0``
for no limit), deletes the least recently used entries until the total is
at most 90 % of the limit (the slack keeps the next build from evicting
again at once).  Entries used in the last :data:`EVICTION_GRACE_S` seconds
are never deleted: a concurrent process may have just found one and be
about to link or load it.  So the limit can be exceeded for a while by the
entries of builds in progress, never for long.  Deleting a loaded
extension module is safe (the process keeps its mapping).  Scratch
directories left by a killed process are removed after a day.
``aot cache info`` and ``aot cache clear`` show and empty the cache.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

from aot.diagnostics import DiagnosticError

#: Bump to invalidate every cache entry written by an older layout or keying.
CACHE_FORMAT = "aot-build-cache-1"

#: The cache's default size bound (``$AOT_CACHE_MAX_BYTES`` changes it).
DEFAULT_LIMIT_BYTES = 1 << 30
LIMIT_ENV = "AOT_CACHE_MAX_BYTES"
#: Entries used this recently are never evicted (seconds).
EVICTION_GRACE_S = 120.0
#: Scratch directories older than this are left-overs of a killed process.
STALE_SCRATCH_S = 86400.0
#: The sections that hold entries (named by content key).
SECTIONS = ("objects", "cffi", "templates")
_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}


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


# ---------------------------------------------------------------------------
# Size bound


def limit_bytes() -> int | None:
    """The size bound: ``$AOT_CACHE_MAX_BYTES`` (``0``: none) or
    :data:`DEFAULT_LIMIT_BYTES`."""
    text = os.environ.get(LIMIT_ENV, "").strip()
    if not text:
        return DEFAULT_LIMIT_BYTES
    match = re.fullmatch(r"(\d+)\s*([KMGT]?)(?:I?B)?", text.upper())
    if match is None:
        raise DiagnosticError(f"${LIMIT_ENV}={text!r}: expected a size in bytes, optionally "
                              "with a K, M, G or T suffix (0: no limit)")
    value = int(match.group(1)) * _UNITS[match.group(2)]
    return value or None


def touch(path: Path) -> None:
    """Mark the entry ``path`` as used now (its mtime is its last use)."""
    try:
        os.utime(path)
    except OSError:
        pass             # a read-only cache still works, it only ages wrongly


@dataclass(frozen=True, slots=True)
class Entry:
    path: Path
    size: int
    used: float          # the last use (mtime), seconds since the epoch


def entries(root: Path) -> list[Entry]:
    """Every entry of the cache, least recently used first."""
    found: list[Entry] = []
    for section in SECTIONS:
        base = root / section
        if not base.is_dir():
            continue
        for shard in os.scandir(base):
            if not shard.is_dir(follow_symlinks=False):
                continue
            for item in os.scandir(shard.path):
                try:
                    info = item.stat(follow_symlinks=False)
                except OSError:
                    continue           # evicted by another process meanwhile
                found.append(Entry(Path(item.path), info.st_size, info.st_mtime))
    found.sort(key=lambda e: (e.used, str(e.path)))
    return found


def enforce_limit(root: Path, limit: int | None = None, *, now: float | None = None,
                  grace_s: float = EVICTION_GRACE_S) -> list[Entry]:
    """Delete least recently used entries while the cache is over ``limit``
    (default :func:`limit_bytes`), down to 90 % of it; entries used in the
    last ``grace_s`` seconds are kept.  Returns what was deleted."""
    limit = limit_bytes() if limit is None else limit
    now = time.time() if now is None else now
    _remove_stale_scratch(root, now)
    if not limit:
        return []
    found = entries(root)
    total = sum(e.size for e in found)
    if total <= limit:
        return []
    target = limit * 9 // 10
    evicted = []
    for entry in found:
        if total <= target:
            break
        if now - entry.used < grace_s:
            break                      # sorted: every later entry is newer still
        try:
            entry.path.unlink()
        except FileNotFoundError:
            pass
        except OSError:
            continue
        total -= entry.size
        evicted.append(entry)
    return evicted


def _remove_stale_scratch(root: Path, now: float) -> None:
    scratch = root / "tmp"
    if not scratch.is_dir():
        return
    for item in os.scandir(scratch):
        try:
            old = now - item.stat(follow_symlinks=False).st_mtime > STALE_SCRATCH_S
        except OSError:
            continue
        if old:
            shutil.rmtree(item.path, ignore_errors=True)


def clear(root: Path) -> tuple[int, int]:
    """Delete every entry and scratch file; return (entries, bytes) deleted."""
    found = entries(root)
    for section in (*SECTIONS, "tmp"):
        shutil.rmtree(root / section, ignore_errors=True)
    (root / "tmp").mkdir(parents=True, exist_ok=True)
    return len(found), sum(e.size for e in found)
