"""The build cache is bounded: least recently used entries go first, the
ones in use stay, and a real build both refreshes what it reuses and
evicts what is old (aot.emit.build.cache)."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from aot.diagnostics import DiagnosticError
from aot.emit.build import cache
from aot.emit.build.library import build_library, write_sources
from aot.emit.build.toolchain import find_toolchain

from test_build import tiny_library


def put(root: Path, index: int, size: int, age_s: float, now: float) -> Path:
    """An entry of ``size`` bytes last used ``age_s`` seconds before ``now``."""
    path = cache.entry_path(root, "objects", f"{index:064x}", f"{index:064x}.o")
    cache.atomic_write_bytes(path, b"o" * size)
    os.utime(path, (now - age_s, now - age_s))
    return path


@pytest.mark.parametrize("text, limit", [
    ("", cache.DEFAULT_LIMIT_BYTES), ("1000", 1000), ("500M", 500 << 20), ("2g", 2 << 30),
    ("64KiB", 64 << 10), ("0", None)])
def test_the_limit_comes_from_the_environment(monkeypatch, text, limit):
    monkeypatch.setenv(cache.LIMIT_ENV, text)
    assert cache.limit_bytes() == limit


def test_a_limit_that_is_not_a_size_is_refused(monkeypatch):
    monkeypatch.setenv(cache.LIMIT_ENV, "-5")
    with pytest.raises(DiagnosticError, match="expected a size in bytes"):
        cache.limit_bytes()


def test_least_recently_used_entries_go_first_down_to_nine_tenths(tmp_path):
    root = cache.cache_root(tmp_path)
    now = time.time()
    # ages 1000 s (oldest) .. 600 s; 100 bytes each, 500 in all
    paths = [put(root, i, 100, 1000 - 100 * i, now) for i in range(5)]
    evicted = cache.enforce_limit(root, 400, now=now)
    # over 400: delete the oldest until at most 360 remain
    assert [e.path for e in evicted] == paths[:2]
    assert [p.exists() for p in paths] == [False, False, True, True, True]
    assert cache.enforce_limit(root, 400, now=now) == []        # under the limit: nothing


def test_a_use_refreshes_an_entry(tmp_path):
    root = cache.cache_root(tmp_path)
    now = time.time()
    paths = [put(root, i, 100, 1000 - 100 * i, now) for i in range(3)]
    cache.touch(paths[0])                              # the oldest is used again
    cache.enforce_limit(root, 250, now=time.time())
    assert [p.exists() for p in paths] == [True, False, True]


def test_entries_in_use_are_never_evicted(tmp_path):
    root = cache.cache_root(tmp_path)
    now = time.time()
    old = put(root, 0, 100, 3600, now)
    recent = [put(root, i, 100, 5, now) for i in (1, 2)]
    cache.enforce_limit(root, 50, now=now)
    assert not old.exists() and all(p.exists() for p in recent)


def test_no_limit_keeps_everything_and_stale_scratch_goes(tmp_path, monkeypatch):
    monkeypatch.setenv(cache.LIMIT_ENV, "0")
    root = cache.cache_root(tmp_path)
    now = time.time()
    path = put(root, 0, 100, 10 ** 6, now)
    stale = Path(cache.scratch_dir(root, "cc-").name)
    stale.mkdir(exist_ok=True)
    os.utime(stale, (now - 2 * cache.STALE_SCRATCH_S,) * 2)
    assert cache.enforce_limit(root, now=now) == []
    assert path.exists() and not stale.exists()


def test_a_build_reuses_fresh_objects_and_evicts_old_ones(tmp_path, monkeypatch):
    toolchain = find_toolchain()
    cache_dir = tmp_path / "cache"
    root = cache.cache_root(cache_dir)
    now = time.time()
    old = [put(root, i, 40_000, 3600 + i, now) for i in range(5)]   # 200 kB, an hour old
    write_sources(tmp_path / "a", tiny_library("tiny"))
    monkeypatch.setenv(cache.LIMIT_ENV, "100K")
    first = build_library(tmp_path / "a", "tiny", toolchain=toolchain, cache_dir=cache_dir)
    assert len(first.compiled) == 2
    assert not any(p.exists() for p in old[2:]), "the oldest entries are evicted"
    kept = cache.entries(root)
    assert sum(e.size for e in kept) <= 100 * 1024 * 9 // 10
    objects = {e.path.name for e in kept}
    assert {o.key + ".o" for o in first.objects} <= objects, "this build's objects stay"
    # a hit refreshes the object's last use
    for o in first.objects:
        path = root / "objects" / o.key[:2] / (o.key + ".o")
        os.utime(path, (now - 7200, now - 7200))
    second = build_library(tmp_path / "a", "tiny", toolchain=toolchain, cache_dir=cache_dir)
    assert second.compiled == ()
    for o in second.objects:
        path = root / "objects" / o.key[:2] / (o.key + ".o")
        assert time.time() - path.stat().st_mtime < 60
