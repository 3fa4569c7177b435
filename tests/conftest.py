"""Suite-wide fixtures."""

import os
import shutil
import tempfile

import pytest

# Every pass run through the pass manager is verified: the module after it
# must be well formed and well typed (aot.passes.manager.verify_module).
os.environ.setdefault("AOT_VERIFY_PASSES", "1")


def pytest_configure(config):
    """Give this process's temporary files (``tempfile.mkdtemp`` in tests,
    the artifacts they compile, the CLI's subprocesses through ``TMPDIR``)
    one directory of their own, removed when the process ends: tests
    compile thousands of artifacts and must not leave them in /tmp."""
    root = tempfile.mkdtemp(prefix="aot-tests-")
    config._aot_tmp_root = (root, tempfile.tempdir, os.environ.get("TMPDIR"))
    tempfile.tempdir = root
    os.environ["TMPDIR"] = root


def pytest_unconfigure(config):
    saved = getattr(config, "_aot_tmp_root", None)
    if saved is None:
        return
    root, old_tempdir, old_env = saved
    tempfile.tempdir = old_tempdir
    if old_env is None:
        os.environ.pop("TMPDIR", None)
    else:
        os.environ["TMPDIR"] = old_env
    shutil.rmtree(root, ignore_errors=True)


@pytest.fixture(scope="session", autouse=True)
def _aot_cache_dir(tmp_path_factory):
    """Point the C build cache (aot.emit.build.cache) at a directory of this test
    run, unless the developer chose one with AOT_CACHE_DIR (reusing a cache
    is safe: entries are keyed by content).  pytest-xdist's workers share
    it (the parent of their base temporary directories is the run's): the
    same C built by two workers is compiled once, and the cache's writes
    are atomic renames, safe between processes."""
    if os.environ.get("AOT_CACHE_DIR"):
        yield
        return
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        root = tmp_path_factory.mktemp("aot-cache")
    else:
        root = tmp_path_factory.getbasetemp().parent / "aot-cache"
        root.mkdir(exist_ok=True)
    os.environ["AOT_CACHE_DIR"] = str(root)
    try:
        yield
    finally:
        os.environ.pop("AOT_CACHE_DIR", None)


def pytest_collection_modifyitems(config, items):
    """Run the ``slow`` tests first (a stable sort: the order among them,
    and among the rest, is kept).  pytest-xdist's work stealing balances
    the workers to within one test, so the suite ends at most the longest
    test *started last* after the ideal: with the minute-long tests
    (sanitized reruns of whole e2e files, corpus networks) started first,
    the last ones to start are short, and no core idles while the other
    finishes a long test.  Every test still runs; only the order changes."""
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)
