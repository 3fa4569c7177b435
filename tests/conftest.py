"""Suite-wide fixtures."""

import os

import pytest

# Every pass run through the pass manager is verified: the module after it
# must be well formed and well typed (aot.passes.manager.verify_module).
os.environ.setdefault("AOT_VERIFY_PASSES", "1")


@pytest.fixture(scope="session", autouse=True)
def _aot_cache_dir(tmp_path_factory):
    """Point the C build cache (aot.emit.cache) at a per-session directory,
    unless the developer chose one with AOT_CACHE_DIR (reusing a cache is
    safe: entries are keyed by content)."""
    if os.environ.get("AOT_CACHE_DIR"):
        yield
        return
    os.environ["AOT_CACHE_DIR"] = str(tmp_path_factory.mktemp("aot-cache"))
    try:
        yield
    finally:
        os.environ.pop("AOT_CACHE_DIR", None)
