"""The cffi loader: call a built static library on NumPy arrays."""

from __future__ import annotations

import shlex
import stat
import subprocess
from pathlib import Path

import numpy as np
import pytest

from aot.diagnostics import DiagnosticError
from aot.emit.build.library import build_static_library, write_sources
from aot.emit.build.extension import (ExtensionRequest, build_extensions, input_pointer,
                                      load_extension, load_library, output_array, output_pointer)
from aot.emit.build.toolchain import BuildError, Toolchain, available_toolchains, probe_toolchain
from aot.ir.dtype import DType

TOOLCHAINS = available_toolchains()


def affine_model(name: str, scale: float, offset: int) -> dict[str, str]:
    """A two-file library: ``<name>_affine`` (float) and ``<name>_offset``
    (int64), both with the constants baked in."""
    return {
        f"include/{name}.h": (
            f"#ifndef {name.upper()}_H\n#define {name.upper()}_H\n#include <stdint.h>\n"
            f"int32_t {name}_affine(const float *x, float *out, int32_t n);\n"
            f"int32_t {name}_offset(const int64_t *x, int64_t *out, int32_t n);\n"
            "#endif\n"),
        f"src/{name}_affine.c": (
            f'#include "{name}.h"\n'
            f"int32_t {name}_affine(const float *x, float *out, int32_t n)\n"
            "{\n    int32_t i;\n    for (i = 0; i < n; ++i) {\n"
            f"        out[i] = x[i] * {scale!r}f + 1.0f;\n    }}\n    return n;\n}}\n"),
        f"src/{name}_offset.c": (
            f'#include "{name}.h"\n'
            f"int32_t {name}_offset(const int64_t *x, int64_t *out, int32_t n)\n"
            "{\n    int32_t i;\n    for (i = 0; i < n; ++i) {\n"
            f"        out[i] = x[i] + {offset};\n    }}\n    return 0;\n}}\n"),
    }


def affine_cdef(name: str) -> str:
    return (f"int32_t {name}_affine(const float *x, float *out, int32_t n);\n"
            f"int32_t {name}_offset(const int64_t *x, int64_t *out, int32_t n);\n")


def built_model(root: Path, name: str, toolchain: Toolchain, scale: float = 2.0,
                offset: int = 7) -> Path:
    write_sources(root, affine_model(name, scale, offset))
    build_static_library(root, name, toolchain=toolchain)
    return root


@pytest.fixture(params=TOOLCHAINS, ids=lambda t: t.kind.value)
def toolchain(request) -> Toolchain:
    return request.param


def run_affine(ffi, lib, name: str, x: np.ndarray) -> np.ndarray:
    out, out_ptr = output_array(ffi, x.shape, DType.FLOAT32)
    count = getattr(lib, f"{name}_affine")(input_pointer(ffi, x, DType.FLOAT32), out_ptr, x.size)
    assert count == x.size
    return out


def test_calls_the_library_on_numpy_arrays(tmp_path, toolchain):
    root = built_model(tmp_path / "m", "m", toolchain, scale=2.5, offset=7)
    ffi, lib = load_library(root, "m", affine_cdef("m"), toolchain=toolchain)
    x = np.linspace(-3, 3, 12, dtype=np.float32).reshape(3, 4)
    np.testing.assert_array_equal(run_affine(ffi, lib, "m", x), x * np.float32(2.5) + 1)

    big = np.array([2**40, -5, 0], dtype=np.int64)
    out, out_ptr = output_array(ffi, big.shape, np.int64)
    assert lib.m_offset(input_pointer(ffi, big, np.int64), out_ptr, big.size) == 0
    np.testing.assert_array_equal(out, big + 7)


def test_empty_and_read_only_inputs(tmp_path, toolchain):
    root = built_model(tmp_path / "m", "m", toolchain)
    ffi, lib = load_library(root, "m", affine_cdef("m"), toolchain=toolchain)
    assert run_affine(ffi, lib, "m", np.zeros((0,), np.float32)).shape == (0,)
    frozen = np.arange(4, dtype=np.float32)
    frozen.flags.writeable = False
    np.testing.assert_array_equal(run_affine(ffi, lib, "m", frozen), frozen * 2 + 1)


def test_two_models_load_side_by_side(tmp_path, toolchain):
    alpha = built_model(tmp_path / "alpha", "alpha", toolchain, scale=2.0)
    beta = built_model(tmp_path / "beta", "beta", toolchain, scale=-3.0)
    ffi_a, lib_a = load_library(alpha, "alpha", affine_cdef("alpha"), toolchain=toolchain)
    ffi_b, lib_b = load_library(beta, "beta", affine_cdef("beta"), toolchain=toolchain)
    x = np.arange(5, dtype=np.float32)
    np.testing.assert_array_equal(run_affine(ffi_a, lib_a, "alpha", x), x * 2 + 1)
    np.testing.assert_array_equal(run_affine(ffi_b, lib_b, "beta", x), x * -3 + 1)


def test_two_builds_of_one_model_name_do_not_interpose(tmp_path, toolchain):
    # Same C symbol names in two extensions: each must call its own library.
    old = built_model(tmp_path / "old", "net", toolchain, scale=2.0)
    new = built_model(tmp_path / "new", "net", toolchain, scale=5.0)
    ffi_old, lib_old = load_library(old, "net", affine_cdef("net"), toolchain=toolchain)
    ffi_new, lib_new = load_library(new, "net", affine_cdef("net"), toolchain=toolchain)
    assert lib_old is not lib_new
    x = np.arange(3, dtype=np.float32)
    np.testing.assert_array_equal(run_affine(ffi_old, lib_old, "net", x), x * 2 + 1)
    np.testing.assert_array_equal(run_affine(ffi_new, lib_new, "net", x), x * 5 + 1)
    # Belt and braces: the model's symbols are not exported from the extension.
    module = load_extension(new, "net", affine_cdef("net"), toolchain=toolchain)
    exported = subprocess.run(["nm", "-D", "--defined-only", module.__file__],
                              capture_output=True, text=True, check=True).stdout
    assert "PyInit_" in exported and "net_affine" not in exported


def test_loading_the_same_build_twice_reuses_the_module(tmp_path, toolchain):
    root = built_model(tmp_path / "m", "m", toolchain)
    first = load_extension(root, "m", affine_cdef("m"), toolchain=toolchain)
    # An identical artifact elsewhere is the same build.
    twin = built_model(tmp_path / "twin", "m", toolchain)
    second = load_extension(twin, "m", affine_cdef("m"), toolchain=toolchain)
    assert first is second
    x = np.arange(4, dtype=np.float32)
    np.testing.assert_array_equal(run_affine(second.ffi, second.lib, "m", x), x * 2 + 1)


def test_rebuilt_library_gets_a_fresh_extension(tmp_path, toolchain):
    root = built_model(tmp_path / "m", "m", toolchain, scale=2.0)
    ffi, lib = load_library(root, "m", affine_cdef("m"), toolchain=toolchain)
    built_model(root, "m", toolchain, scale=4.0)
    ffi2, lib2 = load_library(root, "m", affine_cdef("m"), toolchain=toolchain)
    x = np.ones(2, dtype=np.float32)
    np.testing.assert_array_equal(run_affine(ffi2, lib2, "m", x), x * 4 + 1)
    np.testing.assert_array_equal(run_affine(ffi, lib, "m", x), x * 2 + 1)


def test_batch_build_then_load_compiles_nothing_more(tmp_path, toolchain):
    log = tmp_path / "cc.log"
    wrapper = tmp_path / "logging-cc"
    wrapper.write_text("#!/bin/sh\n"
                       f'printf "%s\\n" "$*" >> {shlex.quote(str(log))}\n'
                       f'exec {shlex.join(toolchain.command)} "$@"\n')
    wrapper.chmod(wrapper.stat().st_mode | stat.S_IXUSR)
    counting = probe_toolchain(str(wrapper))
    names = ["first", "second", "third"]
    roots = [built_model(tmp_path / n, n, toolchain, scale=i + 1.0)
             for i, n in enumerate(names)]
    probes = len(log.read_text().splitlines())
    paths = build_extensions([ExtensionRequest(r, n, affine_cdef(n)) for r, n in zip(roots, names)],
                             toolchain=counting, jobs=2)
    assert len(set(paths)) == 3 and all(p.is_file() for p in paths)
    assert len(log.read_text().splitlines()) == probes + 3
    for i, (root, name) in enumerate(zip(roots, names)):
        ffi, lib = load_library(root, name, affine_cdef(name), toolchain=counting)
        x = np.arange(3, dtype=np.float32)
        np.testing.assert_array_equal(run_affine(ffi, lib, name, x), x * (i + 1) + 1)
    assert len(log.read_text().splitlines()) == probes + 3


@pytest.mark.parametrize("array, message", [
    (np.arange(4, dtype=np.float64), "expected dtype float32, got float64"),
    (np.arange(8, dtype=np.float32)[::2], "C-contiguous"),
    (np.arange(8, dtype=np.float32).reshape(2, 4).T, "C-contiguous"),
    ([1.0, 2.0], "expected a numpy.ndarray of float32, got list"),
])
def test_input_pointer_rejects_wrong_arrays(tmp_path, array, message):
    toolchain = TOOLCHAINS[0]
    root = built_model(tmp_path / "m", "m", toolchain)
    ffi, _ = load_library(root, "m", affine_cdef("m"), toolchain=toolchain)
    with pytest.raises(DiagnosticError, match=message):
        input_pointer(ffi, array, DType.FLOAT32, "x")


def test_output_pointer_rejects_read_only_arrays(tmp_path):
    toolchain = TOOLCHAINS[0]
    root = built_model(tmp_path / "m", "m", toolchain)
    ffi, _ = load_library(root, "m", affine_cdef("m"), toolchain=toolchain)
    frozen = np.zeros(3, np.float32)
    frozen.flags.writeable = False
    with pytest.raises(DiagnosticError, match="writable"):
        output_pointer(ffi, frozen, np.float32)


@pytest.mark.parametrize("dtype", list(DType))
def test_output_array_matches_dtype_and_shape(tmp_path, dtype):
    toolchain = TOOLCHAINS[0]
    root = built_model(tmp_path / "m", "m", toolchain)
    ffi, _ = load_library(root, "m", affine_cdef("m"), toolchain=toolchain)
    array, pointer = output_array(ffi, (2, 3), dtype)
    assert array.dtype == dtype.np and array.shape == (2, 3) and array.flags.c_contiguous
    assert ffi.sizeof(pointer) == array.nbytes
    assert ffi.cast("uintptr_t", pointer) == array.ctypes.data


def test_cdef_that_contradicts_the_header_fails_to_build(tmp_path, toolchain):
    root = built_model(tmp_path / "m", "m", toolchain)
    wrong = "int32_t m_affine(const double *x, double *out, int32_t n);\n"
    with pytest.raises(BuildError, match="cffi extension"):
        load_library(root, "m", wrong, toolchain=toolchain)


def test_missing_library_says_to_build_first(tmp_path, toolchain):
    write_sources(tmp_path / "m", affine_model("m", 1.0, 0))
    with pytest.raises(BuildError, match="build it first"):
        load_library(tmp_path / "m", "m", affine_cdef("m"), toolchain=toolchain)


def test_bad_cdef_is_a_build_error(tmp_path, toolchain):
    root = built_model(tmp_path / "m", "m", toolchain)
    with pytest.raises(BuildError, match="invalid cffi declarations"):
        load_library(root, "m", "int32_t m_affine(const float *x", toolchain=toolchain)
