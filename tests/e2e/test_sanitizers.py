"""The C backend's end-to-end tests again, under AddressSanitizer and
UndefinedBehaviorSanitizer.

``AOT_SANITIZE=address,undefined`` makes every C build (objects of the
static library, the cffi extension) instrumented, with no recovery: the
first invalid access or undefined operation aborts the process with a
report (see :mod:`aot.emit.build.toolchain`; such builds are at ``-O0``, where
gcc compiles instrumented C many times faster).  An instrumented extension can only
be loaded into a CPython whose first libraries are the sanitizer runtimes,
so the tests run in a subprocess started with ``LD_PRELOAD`` (gcc's
``libasan`` and ``libubsan``; clang's runtimes are not installed on Debian
by default, hence ``CC=gcc``) and:

- ``ASAN_OPTIONS=detect_leaks=0``: CPython keeps objects alive until exit by
  design, so leak checking would report the interpreter, not us;
  ``halt_on_error=1`` and UBSan's ``halt_on_error=1`` make every report fatal.
- ``LD_PRELOAD`` is removed from the environment once the interpreter has
  started (the runtimes are loaded by then): otherwise every compiler, as
  and ar the build runs would start under ASan too, about a second each.
- pytest runs with ``-v`` and unbuffered, so its output names the test
  that was running when a report ended the process, and with
  ``--capture=sys``: with fd capturing, a sanitizer's report (written to
  file descriptor 2 just before the process ends) would go to pytest's
  capture file and be lost with the process.

:func:`test_sanitizers_catch_an_out_of_bounds_write_and_an_overflow` proves
the set-up is not silently unsanitized: a hand-written C function built
through the same toolchain path must die with an ASan report, another with
a UBSan report, while the in-bounds calls succeed.

Each e2e file is rerun sanitized in a process of its own (one test per
file), so pytest-xdist spreads the sanitized run over the cores; so is the
fuzzer's slice (tests/fuzz/test_fuzz.py: random whole-language programs,
operator chains and ONNX graphs, bounded in time, and the saved
reproducers).  That covers the corpus (tests/e2e/test_corpus_c.py and
test_corpus_lang_c.py, without the ``slow`` tier-C networks) and the
MLPerf Tiny models (test_mlperf_tiny.py).  The sanitized run is part of
``make test`` (these tests are marked ``slow``, which CI runs too).

``make test-sanitize`` runs this file.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from aot.emit.build.library import build_library, write_sources
from aot.emit.build.extension import ExtensionRequest, build_extensions
from aot.emit.build.toolchain import (BuildError, SANITIZE_ENV, CompilerKind, find_toolchain,
                                      sanitizer_runtimes)

REPO = Path(__file__).resolve().parents[2]
SANITIZERS = ("address", "undefined")

#: The e2e files run sanitized: all of them (new ones join automatically),
#: without their ``slow`` cases.  The whole-language backend's tests are the
#: point (reference counting, the object pool, ADT cells, closures), but the
#: dataflow kernels' arena offsets deserve the check as much.
SELECTED_PATTERN = "tests/e2e/test_*.py"
MARKERS = "not slow"

#: also run sanitized: the fuzzer's slice (random programs of every family,
#: bounded in time) and the replay of its saved reproducers
EXTRA_FILES = ("tests/fuzz/test_fuzz.py",)

#: e2e files that run no C (static analysis reads the C, never runs it)
NOT_RUN = ("tests/e2e/test_static_analysis.py",)

#: Seconds before the sanitized run is declared hung.
RUN_TIMEOUT_S = 1500

#: Started as ``python -c BOOT -m module args...`` or ``python -c BOOT
#: script args...``: drop the preload now that the runtimes are in, then run
#: the module or script as ``python`` would.
BOOT = ("import os, runpy, sys; os.environ.pop('LD_PRELOAD', None); "
        "module = sys.argv[1] == '-m'; sys.argv = sys.argv[1 + module:]; "
        "run = runpy.run_module if module else runpy.run_path; "
        "run(sys.argv[0], run_name='__main__', **({'alter_sys': True} if module else {}))")


def selected_files() -> list[str]:
    this = Path(__file__).resolve()
    files = [p.relative_to(REPO).as_posix() for p in REPO.glob(SELECTED_PATTERN)
             if p.resolve() != this]
    return sorted(f for f in files + list(EXTRA_FILES) if f not in NOT_RUN)


def sanitized_env() -> dict[str, str]:
    """The environment of a process that builds and loads sanitized C."""
    toolchain = find_toolchain(CompilerKind.GCC).with_sanitizers(*SANITIZERS)
    env = dict(os.environ, CC=shlex.join(toolchain.command),
               **{SANITIZE_ENV: ",".join(SANITIZERS)})
    env["LD_PRELOAD"] = " ".join(sanitizer_runtimes(toolchain))
    env["ASAN_OPTIONS"] = "detect_leaks=0:halt_on_error=1:abort_on_error=0"
    env["UBSAN_OPTIONS"] = "print_stacktrace=1:halt_on_error=1"
    # a report ends the process without flushing Python's buffers: keep
    # pytest's line naming the running test
    env["PYTHONUNBUFFERED"] = "1"
    # the outer run's options (say ``-n 2``) are not the sanitized run's
    env.pop("PYTEST_ADDOPTS", None)
    return env


def run_python(args: list[str], timeout: float) -> subprocess.CompletedProcess[str]:
    """``python args`` (``-m module ...`` or ``script ...``) in the
    repository, sanitized."""
    return subprocess.run([sys.executable, "-c", BOOT, *args], cwd=REPO, env=sanitized_env(),
                          capture_output=True, text=True, timeout=timeout, check=False)


def tail(text: str, limit: int = 12000) -> str:
    return text if len(text) <= limit else "...\n" + text[-limit:]


# ---------------------------------------------------------------------------
# The flags and the cache


def test_aot_sanitize_selects_the_flags(monkeypatch):
    monkeypatch.setenv(SANITIZE_ENV, "undefined, address")
    toolchain = find_toolchain(CompilerKind.GCC)
    assert toolchain.sanitizers == ("address", "undefined")
    flags = toolchain.object_flags(("-DEXTRA=1",))
    assert "-O0" in flags and "-O2" not in flags and "-O3" not in flags
    for flag in ("-fsanitize=address,undefined", "-fno-sanitize-recover=all",
                 "-fno-omit-frame-pointer", "-g"):
        assert flag in flags
    assert flags[-1] == "-DEXTRA=1"
    monkeypatch.setenv(SANITIZE_ENV, "")
    plain = find_toolchain(CompilerKind.GCC)
    assert plain.sanitizers == () and plain.sanitize_flags == ()
    assert not any(f.startswith("-fsanitize") for f in plain.object_flags())
    assert "-O3" in plain.object_flags()       # the host build's (toolchain.HOST_OPT_FLAGS)


def test_unknown_sanitizer_is_a_clear_error(monkeypatch):
    monkeypatch.setenv(SANITIZE_ENV, "address,thread")
    with pytest.raises(BuildError, match=r"unknown sanitizer in \$AOT_SANITIZE `thread`; "
                                         r"supported: address, undefined"):
        find_toolchain()


def test_gcc_has_both_sanitizer_runtimes():
    toolchain = find_toolchain(CompilerKind.GCC).with_sanitizers(*SANITIZERS)
    runtimes = sanitizer_runtimes(toolchain)
    assert [Path(r).name.split(".so")[0] for r in runtimes] == ["libasan", "libubsan"]
    assert all(os.path.isfile(r) for r in runtimes)


CANARY_HEADER = """\
#ifndef CANARY_H
#define CANARY_H
#include <stdint.h>
int32_t canary_poke(int32_t i);
int32_t canary_inc(int32_t x);
extern int32_t *canary_cursor;
#endif
"""

CANARY_SOURCE = """\
#include "canary.h"

static int32_t canary_cells[4];
/* Through a pointer the compiler cannot follow (external and mutable), as
   generated code reaches arena buffers: UBSan's bounds checks do not see
   the array, only ASan can catch the overflow. */
int32_t *canary_cursor = canary_cells;

/* Writes cell i: out of bounds for i >= 4. */
int32_t canary_poke(int32_t i) {
    canary_cursor[i] = i;
    return canary_cells[i & 3] + 1;
}

/* x + 1: signed overflow (undefined) for INT32_MAX. */
int32_t canary_inc(int32_t x) {
    return x + 1;
}
"""

CANARY_CDEF = "int32_t canary_poke(int32_t i);\nint32_t canary_inc(int32_t x);\n"


def write_canary(root: Path) -> None:
    write_sources(root, {"include/canary.h": CANARY_HEADER, "src/canary.c": CANARY_SOURCE})


def test_sanitized_and_plain_builds_never_share_objects_or_extensions(tmp_path):
    write_canary(tmp_path)
    plain = find_toolchain(CompilerKind.GCC).with_sanitizers()
    sanitized = plain.with_sanitizers(*SANITIZERS)
    first = build_library(tmp_path, "canary", toolchain=plain)
    plain_extension, = build_extensions([ExtensionRequest(tmp_path, "canary", CANARY_CDEF)],
                                        toolchain=plain)
    second = build_library(tmp_path, "canary", toolchain=sanitized)
    assert second.compiled == ("src/canary.c",), "a plain object was reused"
    assert {o.key for o in first.objects}.isdisjoint(o.key for o in second.objects)
    sanitized_extension, = build_extensions(
        [ExtensionRequest(tmp_path, "canary", CANARY_CDEF)], toolchain=sanitized)
    assert sanitized_extension != plain_extension
    assert b"__asan_" in sanitized_extension.read_bytes()
    assert b"__asan_" not in plain_extension.read_bytes()
    # and back: the plain objects are still there, nothing is recompiled
    third = build_library(tmp_path, "canary", toolchain=plain)
    assert third.compiled == ()
    assert [o.key for o in third.objects] == [o.key for o in first.objects]


CANARY_SCRIPT = """\
import sys
from aot.emit.build.library import build_static_library
from aot.emit.build.extension import load_library
from aot.emit.build.toolchain import find_toolchain

root, function, argument = sys.argv[1], sys.argv[2], int(sys.argv[3])
toolchain = find_toolchain()  # from $CC and $AOT_SANITIZE, as the e2e tests do
assert toolchain.sanitizers == ("address", "undefined"), toolchain.sanitizers
build_static_library(root, "canary", toolchain=toolchain)
ffi, lib = load_library(root, "canary", {cdef!r}, toolchain=toolchain)
print("returned", getattr(lib, function)(argument), flush=True)
"""

CANARY_CASES = [
    # (function, argument, what stdout/stderr must show)
    ("canary_poke", 3, "returned 4"),
    ("canary_poke", 4, "ERROR: AddressSanitizer: global-buffer-overflow"),
    ("canary_inc", 41, "returned 42"),
    ("canary_inc", 2**31 - 1, "runtime error: signed integer overflow"),
]


def test_sanitizers_catch_an_out_of_bounds_write_and_an_overflow(tmp_path):
    write_canary(tmp_path)
    script = tmp_path / "canary_run.py"
    script.write_text(CANARY_SCRIPT.format(cdef=CANARY_CDEF))
    for function, argument, expected in CANARY_CASES:
        result = run_python([str(script), str(tmp_path), function, str(argument)],
                            timeout=300)
        output = result.stdout + result.stderr
        what = f"{function}({argument}): exit status {result.returncode}\n{tail(output)}"
        assert expected in output, what
        assert (result.returncode == 0) == expected.startswith("returned"), what


# ---------------------------------------------------------------------------
# The sanitized run


def test_every_e2e_file_is_rerun_sanitized():
    files = selected_files()
    assert "tests/e2e/test_lang_c.py" in files and "tests/e2e/test_fusion_c.py" in files
    assert "tests/e2e/test_sanitizers.py" not in files
    assert "tests/fuzz/test_fuzz.py" in files
    assert all((REPO / f).is_file() for f in files)


#: pytest's exit status when it ran no test (every test of a file deselected)
NO_TESTS_COLLECTED = 5


@pytest.mark.slow
@pytest.mark.parametrize("path", selected_files())
def test_e2e_file_passes_under_address_and_undefined_sanitizers(path):
    """One e2e file, sanitized, in its own process: one test per file lets
    pytest-xdist spread the sanitized run over the workers."""
    result = run_python(["-m", "pytest", path, "-v", "-p", "no:cacheprovider",
                         "-x", "--capture=sys", "-m", MARKERS], timeout=RUN_TIMEOUT_S)
    output = result.stdout + result.stderr
    if result.returncode == NO_TESTS_COLLECTED:
        pytest.skip(f"{path}: no test selected by -m {MARKERS!r}")
    assert result.returncode == 0, (f"sanitized run of {path} failed (exit status "
                                    f"{result.returncode}):\n{tail(output)}")
    for report in ("ERROR: AddressSanitizer", "runtime error:"):
        assert report not in output, tail(output)
