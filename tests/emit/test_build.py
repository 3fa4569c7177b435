"""The build layer: toolchain discovery, the object cache, static libraries.

Compiler invocations are counted with a wrapper script that logs its
arguments and then runs the real compiler, so the cache tests do not take
the builder's own report on trust.
"""

from __future__ import annotations

import os
import shlex
import stat
import subprocess
import threading
from pathlib import Path

import pytest

from aot.diagnostics import DiagnosticError
from aot.emit.build.library import (ArtifactLayout, LibraryRequest, build_library,
                                    build_static_libraries, build_static_library, compile_check,
                                    write_sources)
from aot.emit.build.toolchain import (STRICT_FLAGS, BuildError, CompilerKind, Toolchain,
                                      available_toolchains, find_toolchain, probe_toolchain)

TOOLCHAINS = available_toolchains()


def tiny_library(name: str, scale: int = 2) -> dict[str, str]:
    """A two-file C library with one header, in the artifact layout."""
    return {
        f"include/{name}.h": (
            f"#ifndef {name.upper()}_H\n#define {name.upper()}_H\n"
            "#include <stdint.h>\n"
            f"#define {name.upper()}_SCALE {scale}\n"
            f"int32_t {name}_add(const int32_t *a, const int32_t *b, int32_t *out, int32_t n);\n"
            f"int32_t {name}_scale(const float *x, float *out, int32_t n);\n"
            "#endif\n"),
        f"src/{name}_add.c": (
            f'#include "{name}.h"\n'
            f"int32_t {name}_add(const int32_t *a, const int32_t *b, int32_t *out, int32_t n)\n"
            "{\n    int32_t i;\n    for (i = 0; i < n; ++i) {\n"
            "        out[i] = a[i] + b[i];\n    }\n    return 0;\n}\n"),
        f"src/{name}_scale.c": (
            f'#include "{name}.h"\n'
            f"int32_t {name}_scale(const float *x, float *out, int32_t n)\n"
            "{\n    int32_t i;\n    for (i = 0; i < n; ++i) {\n"
            f"        out[i] = x[i] * (float){name.upper()}_SCALE;\n    }}\n    return 0;\n}}\n"),
    }


def counting_toolchain(base: Toolchain, directory: Path) -> tuple[Toolchain, Path]:
    """``base`` behind a wrapper that appends each command line to a log."""
    log = directory / "cc.log"
    wrapper = directory / f"logging-{base.kind.value}"
    wrapper.write_text("#!/bin/sh\n"
                       f'printf "%s\\n" "$*" >> {shlex.quote(str(log))}\n'
                       f'exec {shlex.join(base.command)} "$@"\n')
    wrapper.chmod(wrapper.stat().st_mode | stat.S_IXUSR)
    return probe_toolchain(str(wrapper)), log


def object_compiles(log: Path) -> list[str]:
    """The logged invocations that compiled an object (not probes)."""
    if not log.exists():
        return []
    return [line for line in log.read_text().splitlines() if " -c " in f" {line} "]


def ar_member_headers(archive: bytes) -> list[dict[str, str]]:
    """The member headers of a System V / GNU ``ar`` archive."""
    assert archive.startswith(b"!<arch>\n")
    fields = [("name", 16), ("mtime", 12), ("uid", 6), ("gid", 6), ("mode", 8), ("size", 10)]
    headers, offset = [], 8
    while offset < len(archive):
        raw, header, at = archive[offset:offset + 60], {}, 0
        for field, width in fields:
            header[field] = raw[at:at + width].decode().strip()
            at += width
        headers.append(header)
        offset += 60 + int(header["size"])
        offset += offset % 2
    return headers


@pytest.fixture(params=TOOLCHAINS, ids=lambda t: t.kind.value)
def toolchain(request) -> Toolchain:
    return request.param


@pytest.fixture
def cache_dir(tmp_path) -> Path:
    """A private cache per test, so counts do not depend on test order."""
    return tmp_path / "cache"


# ---------------------------------------------------------------------------
# Toolchains


def test_gcc_and_clang_are_both_available():
    # CI installs both with scripts/install-ci-deps.sh; the generated C must
    # be checked by both.
    assert {t.kind for t in TOOLCHAINS} == {CompilerKind.GCC, CompilerKind.CLANG}


@pytest.mark.parametrize("kind", list(CompilerKind))
def test_probe_reads_kind_and_version_from_the_compiler(kind):
    found = find_toolchain(kind)
    assert found.kind is kind
    assert os.path.isabs(found.cc) and os.access(found.cc, os.X_OK)
    major, minor, patch = found.version.split(".")
    assert major.isdigit() and minor.isdigit() and patch.isdigit()
    macro = "__clang_major__" if kind is CompilerKind.CLANG else "__GNUC__"
    out = subprocess.run([*found.command, "-dM", "-E", "-x", "c", "/dev/null"],
                         capture_output=True, text=True, check=True).stdout
    assert f"#define {macro} {major}" in out


def test_object_flags_are_strict_position_independent_and_configurable(toolchain):
    flags = toolchain.object_flags(("-DEXTRA=1",))
    n = len(toolchain.target_flags)         # the host CPU's (-march=native) first
    assert flags[:n] == toolchain.target_flags
    assert flags[n:n + len(STRICT_FLAGS)] == STRICT_FLAGS
    assert "-O3" in flags and "-fPIC" in flags and flags[-1] == "-DEXTRA=1"
    fast = toolchain.with_opt_flags("-O3", "-funroll-loops")
    assert "-O3" in fast.object_flags() and "-O2" not in fast.object_flags()
    slow = toolchain.with_opt_flags("-O2")
    assert "-O2" in slow.object_flags() and "-O3" not in slow.object_flags()
    assert fast.identity == toolchain.identity


def test_cc_environment_variable_is_honoured(monkeypatch, toolchain):
    monkeypatch.setenv("CC", f"{toolchain.cc} -m64")
    chosen = find_toolchain()
    assert chosen.cc == toolchain.cc and chosen.cc_args == ("-m64",)
    assert chosen.kind is toolchain.kind


def test_aot_host_opt_sets_the_host_optimisation(monkeypatch, toolchain):
    monkeypatch.delenv("AOT_SANITIZE", raising=False)
    monkeypatch.setenv("AOT_HOST_OPT", "-O1")
    chosen = find_toolchain(toolchain.kind)
    assert chosen.opt_flags == ("-O1",)
    flags = chosen.object_flags()
    assert "-O1" in flags and "-O3" not in flags
    assert chosen.target_flags == toolchain.target_flags      # the host CPU's still
    assert chosen.identity == toolchain.identity              # the flags key the cache
    monkeypatch.setenv("AOT_SANITIZE", "address")
    assert find_toolchain(toolchain.kind).opt_flags == ("-O0",)  # sanitized builds win
    monkeypatch.delenv("AOT_SANITIZE")
    monkeypatch.setenv("AOT_HOST_OPT", "-O9")
    with pytest.raises(BuildError, match=r"unknown optimisation level in \$AOT_HOST_OPT `-O9`"):
        find_toolchain()


def test_missing_compiler_in_cc_is_a_clear_error(monkeypatch, tmp_path):
    monkeypatch.setenv("CC", str(tmp_path / "no-such-cc"))
    with pytest.raises(BuildError, match="no-such-cc.*not found.*install-ci-deps"):
        find_toolchain()


def test_no_compiler_on_path_is_a_clear_error(monkeypatch, tmp_path):
    monkeypatch.delenv("CC", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(BuildError, match="no C compiler found.*gcc, clang, cc"):
        find_toolchain()


def test_a_program_that_is_not_a_compiler_is_rejected(tmp_path):
    fake = tmp_path / "fakecc"
    fake.write_text("#!/bin/sh\necho 'nothing to see' >&2\nexit 3\n")
    fake.chmod(0o755)
    with pytest.raises(BuildError, match="does not behave like a C compiler"):
        probe_toolchain(str(fake))


# ---------------------------------------------------------------------------
# Building


def test_builds_a_static_library_with_the_symbols(tmp_path, toolchain, cache_dir):
    write_sources(tmp_path / "art", tiny_library("tiny"))
    library = build_static_library(tmp_path / "art", "tiny", toolchain=toolchain,
                                   cache_dir=cache_dir)
    assert library == (tmp_path / "art" / "lib" / "libtiny.a").resolve()
    members = subprocess.run([toolchain.ar, "t", str(library)], capture_output=True,
                             text=True, check=True).stdout.split()
    assert members == ["tiny_add.o", "tiny_scale.o"]
    symbols = subprocess.run(["nm", "--defined-only", str(library)], capture_output=True,
                             text=True, check=True).stdout
    assert " T tiny_add" in symbols and " T tiny_scale" in symbols


def test_second_build_hits_the_cache(tmp_path, toolchain, cache_dir):
    counting, log = counting_toolchain(toolchain, tmp_path)
    root = tmp_path / "art"
    write_sources(root, tiny_library("tiny"))
    first = build_library(root, "tiny", toolchain=counting, cache_dir=cache_dir)
    assert len(object_compiles(log)) == 2
    assert sorted(first.compiled) == ["src/tiny_add.c", "src/tiny_scale.c"]
    mtime = first.library.stat().st_mtime_ns

    second = build_library(root, "tiny", toolchain=counting, cache_dir=cache_dir)
    assert len(object_compiles(log)) == 2, "no compiler run on an unchanged artifact"
    assert second.compiled == () and len(second.reused) == 2
    assert not second.written and second.library.stat().st_mtime_ns == mtime


def test_cache_is_shared_between_artifact_directories(tmp_path, toolchain, cache_dir):
    counting, log = counting_toolchain(toolchain, tmp_path)
    for where in ("a", "b"):
        write_sources(tmp_path / where, tiny_library("tiny"))
    first = build_static_library(tmp_path / "a", "tiny", toolchain=counting, cache_dir=cache_dir)
    second = build_static_library(tmp_path / "b", "tiny", toolchain=counting, cache_dir=cache_dir)
    assert len(object_compiles(log)) == 2
    assert first.read_bytes() == second.read_bytes()


@pytest.mark.parametrize("edit, recompiled", [
    ("src/tiny_add.c", ["src/tiny_add.c"]),
    ("include/tiny.h", ["src/tiny_add.c", "src/tiny_scale.c"]),
])
def test_editing_a_file_recompiles_exactly_what_can_see_it(tmp_path, toolchain, cache_dir,
                                                           edit, recompiled):
    counting, log = counting_toolchain(toolchain, tmp_path)
    root = tmp_path / "art"
    files = tiny_library("tiny")
    write_sources(root, files)
    build_library(root, "tiny", toolchain=counting, cache_dir=cache_dir)
    write_sources(root, {edit: files[edit] + "/* edited */\n"})
    rebuilt = build_library(root, "tiny", toolchain=counting, cache_dir=cache_dir)
    assert sorted(rebuilt.compiled) == recompiled
    assert len(object_compiles(log)) == 2 + len(recompiled)


def test_flags_are_part_of_the_cache_key(tmp_path, toolchain, cache_dir):
    root = tmp_path / "art"
    write_sources(root, tiny_library("tiny"))
    build_library(root, "tiny", toolchain=toolchain, cache_dir=cache_dir)
    for variant in [dict(toolchain=toolchain.with_opt_flags("-O0")),
                    dict(toolchain=toolchain, extra_flags=["-DTINY_VARIANT=1"])]:
        rebuilt = build_library(root, "tiny", cache_dir=cache_dir, **variant)
        assert len(rebuilt.compiled) == 2, variant


def test_library_is_deterministic(tmp_path, toolchain):
    # Two independent compiles (separate caches, separate directories).
    outputs = []
    for where in ("one", "two"):
        write_sources(tmp_path / where, tiny_library("tiny"))
        build = build_library(tmp_path / where, "tiny", toolchain=toolchain,
                              cache_dir=tmp_path / f"cache-{where}")
        assert len(build.compiled) == 2
        outputs.append(build.library.read_bytes())
    assert outputs[0] == outputs[1]
    headers = ar_member_headers(outputs[0])
    assert [h["name"] for h in headers if not h["name"].startswith("/")] == [
        "tiny_add.o/", "tiny_scale.o/"]
    for header in headers:
        assert (header["mtime"], header["uid"], header["gid"]) == ("0", "0", "0"), header


@pytest.mark.parametrize("defect, compiler_says", [
    ("int32_t unused_local = 0;", "unused"),
    ("int32_t shifted = 1 << 40; (void)shifted;", "shift"),
])
def test_a_warning_fails_the_build_with_a_clear_message(tmp_path, toolchain, cache_dir,
                                                        defect, compiler_says):
    root = tmp_path / "art"
    files = tiny_library("tiny")
    files["src/tiny_add.c"] = files["src/tiny_add.c"].replace(
        "    int32_t i;\n", f"    int32_t i;\n    {defect}\n")
    write_sources(root, files)
    with pytest.raises(BuildError) as caught:
        build_static_library(root, "tiny", toolchain=toolchain, cache_dir=cache_dir)
    error = caught.value
    message = str(error)
    assert message.startswith("error: C compiler failed")
    assert "src/tiny_add.c" in message and "-Werror" in message
    assert compiler_says in error.stderr and compiler_says in message
    assert error.command[0] == toolchain.cc and "src/tiny_add.c" in error.command
    assert not (root / "lib" / "libtiny.a").exists()


def test_a_failed_compile_is_not_cached(tmp_path, toolchain, cache_dir):
    root = tmp_path / "art"
    files = tiny_library("tiny")
    broken = dict(files, **{"src/tiny_add.c": files["src/tiny_add.c"] + "int oops(void) {}\n"})
    write_sources(root, broken)
    for _ in range(2):
        with pytest.raises(BuildError):
            build_library(root, "tiny", toolchain=toolchain, cache_dir=cache_dir)
    write_sources(root, files)
    assert build_library(root, "tiny", toolchain=toolchain, cache_dir=cache_dir).library.exists()


def test_batch_builds_several_libraries_and_compiles_shared_units_once(tmp_path, toolchain,
                                                                       cache_dir):
    counting, log = counting_toolchain(toolchain, tmp_path)
    write_sources(tmp_path / "alpha", tiny_library("alpha"))
    write_sources(tmp_path / "alpha_copy", tiny_library("alpha"))
    write_sources(tmp_path / "beta", tiny_library("beta", scale=3))
    requests = [LibraryRequest(tmp_path / d, n) for d, n in
                [("alpha", "alpha"), ("beta", "beta"), ("alpha_copy", "alpha")]]
    builds = build_static_libraries(requests, toolchain=counting, jobs=2, cache_dir=cache_dir)
    assert [b.library.parent.parent.name for b in builds] == ["alpha", "beta", "alpha_copy"]
    assert len(object_compiles(log)) == 4
    assert builds[0].library.read_bytes() == builds[2].library.read_bytes()
    assert builds[2].compiled == ()


def test_concurrent_builds_of_one_artifact_are_safe(tmp_path, toolchain, cache_dir):
    root = tmp_path / "art"
    write_sources(root, tiny_library("tiny"))
    errors: list[BaseException] = []

    def build() -> None:
        try:
            build_static_library(root, "tiny", toolchain=toolchain, cache_dir=cache_dir, jobs=1)
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=build) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    reference = build_static_library(root, "tiny", toolchain=toolchain,
                                     cache_dir=tmp_path / "fresh")
    assert (root / "lib" / "libtiny.a").read_bytes() == reference.read_bytes()
    assert list((cache_dir / "tmp").iterdir()) == [], "scratch files left behind"


def test_runtime_directory_is_compiled_and_searched_for_headers(tmp_path, toolchain, cache_dir):
    files = tiny_library("tiny")
    files["runtime_c/aot_rt.h"] = "#ifndef AOT_RT_H\n#define AOT_RT_H\nint aot_rt_one(void);\n#endif\n"
    files["runtime_c/aot_rt.c"] = '#include "aot_rt.h"\nint aot_rt_one(void) { return 1; }\n'
    files["include/tiny.h"] = files["include/tiny.h"].replace(
        "#include <stdint.h>\n", '#include <stdint.h>\n#include "aot_rt.h"\n')
    write_sources(tmp_path / "art", files)
    layout = ArtifactLayout(tmp_path / "art", "tiny")
    assert layout.include_dirs() == (layout.include_dir, layout.runtime_dir)
    build = build_library(tmp_path / "art", "tiny", toolchain=toolchain, cache_dir=cache_dir)
    assert sorted(o.member for o in build.objects) == ["aot_rt.o", "tiny_add.o", "tiny_scale.o"]


def test_two_sources_with_one_base_name_are_rejected(tmp_path, toolchain, cache_dir):
    files = tiny_library("tiny")
    files["runtime_c/tiny_add.c"] = "int tiny_other(void);\nint tiny_other(void) { return 0; }\n"
    write_sources(tmp_path / "art", files)
    with pytest.raises(BuildError, match="share the archive member tiny_add.o"):
        build_static_library(tmp_path / "art", "tiny", toolchain=toolchain, cache_dir=cache_dir)


def test_an_artifact_without_sources_is_an_error(tmp_path, toolchain, cache_dir):
    with pytest.raises(BuildError, match="no C sources"):
        build_static_library(tmp_path, "empty", toolchain=toolchain, cache_dir=cache_dir)


@pytest.mark.parametrize("name", ["9lives", "has-dash", "", "a b"])
def test_model_names_must_be_c_identifiers(tmp_path, name):
    with pytest.raises(DiagnosticError, match="invalid model name"):
        build_static_library(tmp_path, name)


# ---------------------------------------------------------------------------
# compile_check


@pytest.mark.parametrize("text", [
    "#include <stdint.h>\nint32_t twice(int32_t x) { return 2 * x; }\n",
    "static const float table[3] = {1.0f, 2.0f, 3.0f};\n"
    "float pick(int i) { return table[i]; }\n",
])
def test_compile_check_accepts_clean_c99(toolchain, cache_dir, text):
    compile_check(text, toolchain, cache_dir=cache_dir)


@pytest.mark.parametrize("text", [
    "",                                                        # empty translation unit
    "int f(void) { int x; return 0; }\n",                      # unused variable
    "int f(int a) { return ({ a; }); }\n",                     # GNU statement expression
    "int f(void) { for (int i = 0; i < 2; ++i) { } return 0 }\n",  # syntax error
    "#include <stdio.h>\nint f(long v) { printf(\"%d\", v); return 0; }\n",  # format
])
def test_compile_check_rejects_warnings_and_extensions(toolchain, cache_dir, text):
    with pytest.raises(BuildError, match="check.c"):
        compile_check(text, toolchain, cache_dir=cache_dir)


def test_compile_check_sees_include_dirs(tmp_path, toolchain, cache_dir):
    write_sources(tmp_path, {"inc/answer.h": "#define ANSWER 42\n"})
    text = '#include "answer.h"\nint answer(void) { return ANSWER; }\n'
    compile_check(text, toolchain, include_dirs=[tmp_path / "inc"], cache_dir=cache_dir)
    with pytest.raises(BuildError, match="answer.h"):
        compile_check(text, toolchain, cache_dir=cache_dir)
