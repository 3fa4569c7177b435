"""What ``aot.compile`` + ``aot.load`` build for the host, and what they
leave portable (aot/emit/build/targets.py, toolchain.py).

A library built for the host is compiled at ``-O3`` for the host CPU
(``-march=native`` where the compiler takes it, which is part of the cache
key) from the ``simd`` loop nests; the sources of ``build=False`` (what a
firmware compiles through ``<name>.mk``) are the ``scalar`` ones and the
make fragment names no host flag.  One small model (a dense layer and a
convolution), compiled a few times; the C builds are cached by content."""

from __future__ import annotations

import platform
import shlex
import stat
import subprocess
from pathlib import Path

import numpy as np
import pytest

import aot
from aot.emit.build.targets import default_tuning, get_target
from aot.emit.build.toolchain import (GCC_HOST_OPT_FLAGS, HOST_OPT_FLAGS, CompilerKind,
                                      _gcc_workaround_flags, _predefined_macros,
                                      find_toolchain, probe_toolchain)

RNG = np.random.default_rng(16)
TEXT = """def @main(%x: Tensor[(1, 8), float32], %w: Tensor[(64, 8), float32],
          %y: Tensor[(1, 4, 6, 6), float32], %k: Tensor[(8, 4, 3, 3), float32]) {
  (nn.dense(%x, %w), nn.conv2d(%y, %k, padding=[1, 1]))
}
"""
PARAMS = {"w": RNG.standard_normal((64, 8)).astype(np.float32),
          "k": (RNG.standard_normal((8, 4, 3, 3)) / 6).astype(np.float32)}
ARGS = (RNG.standard_normal((1, 8)).astype(np.float32),
        RNG.standard_normal((1, 4, 6, 6)).astype(np.float32))


def logging_cc(directory: Path) -> tuple[str, Path]:
    """A ``$CC`` that logs each command line, then runs the host's compiler."""
    base = find_toolchain()
    log = directory / "cc.log"
    wrapper = directory / "logging-cc"
    wrapper.write_text("#!/bin/sh\n"
                       f'printf "%s\\n" "$*" >> {shlex.quote(str(log))}\n'
                       f'exec {shlex.join(base.command)} "$@"\n')
    wrapper.chmod(wrapper.stat().st_mode | stat.S_IXUSR)
    return str(wrapper), log


def test_default_host_build_is_for_the_host_cpu_and_the_firmware_sources_are_portable(
        tmp_path, monkeypatch):
    cc, log = logging_cc(tmp_path)
    monkeypatch.setenv("CC", cc)
    monkeypatch.setenv("AOT_CACHE_DIR", str(tmp_path / "cache"))   # really compile
    monkeypatch.delenv("AOT_SANITIZE", raising=False)
    mod = aot.parse(TEXT)
    host = aot.compile(mod, tmp_path / "host", name="net", params=PARAMS)
    firmware = aot.compile(mod, tmp_path / "firmware", name="net", params=PARAMS, build=False)
    scalar = aot.compile(mod, tmp_path / "scalar", name="net", params=PARAMS, tuning="scalar",
                         build=False)
    toolchain = probe_toolchain(cc)

    # the library's objects: -O3 and the host CPU's flags, probed
    compiles = [line.split() for line in log.read_text().splitlines()
                if " -c src/net.c " in line]
    assert compiles, log.read_text()
    for words in compiles:
        assert set(HOST_OPT_FLAGS) <= set(words) and "-O2" not in words
        assert toolchain.opt_flags == (GCC_HOST_OPT_FLAGS if toolchain.kind is CompilerKind.GCC
                                       else HOST_OPT_FLAGS)
        assert set(toolchain.opt_flags) <= set(words)
        assert set(toolchain.target_flags) <= set(words)
        assert "-ffp-contract=off" in words
    native = toolchain.target_flags
    if native:
        assert toolchain.cpu_key.startswith(" ".join(native))
    # and from the host's loop nests: the dense layer's vector accumulator
    host_c = (host.root / "src" / "net.c").read_text()
    firmware_c = (firmware.root / "src" / "net.c").read_text()
    assert "[64]" in host_c and "[64]" not in firmware_c

    # the firmware's sources: the microcontroller nests, as --tuning scalar
    assert firmware_c == (scalar.root / "src" / "net.c").read_text()
    assert default_tuning(get_target("host"), build=False) == "scalar"
    assert default_tuning(get_target("cortex-m4")) == "scalar"
    assert default_tuning(get_target("host")) == "simd"
    for art in (host, firmware):
        mk = (art.root / "net.mk").read_text()
        for flag in ("-O3", "-O2", "native", "-mfma", "-mavx"):
            assert flag not in mk, (flag, mk)
        assert "-ffp-contract=off" in mk and "-std=c99" in mk

    # fmaf is an instruction, not a libm call, when the host has one
    macros = _predefined_macros([*toolchain.command, *native])
    if "__FMA__" in macros or "__ARM_FEATURE_FMA" in macros:
        symbols = subprocess.run(["nm", "-u", str(host.layout.library)], check=True,
                                 capture_output=True, text=True).stdout.split()
        assert "fmaf" not in symbols

    # the fast library computes what the interpreter computes
    got = aot.load(host)(*ARGS)
    ref = aot.interpret(mod, ARGS[0], PARAMS["w"], ARGS[1], PARAMS["k"])
    for g, r in zip(got, ref):
        np.testing.assert_allclose(g, r, rtol=1e-5, atol=1e-5)


def test_the_host_cpu_is_part_of_the_toolchain_identity():
    toolchain = find_toolchain()
    if not toolchain.target_flags:
        pytest.skip(f"{toolchain.label} takes none of -march=native, -mcpu=native")
    portable = toolchain.with_target_flags()
    assert portable.cpu_key == "" and toolchain.cpu_key
    assert portable.identity != toolchain.identity
    assert not any("native" in f for f in portable.object_flags())
    assert toolchain.with_target_flags(*toolchain.target_flags) == toolchain


def test_gcc_avoids_avx512vl_only_where_native_enables_it():
    """gcc 12.2 miscompiles if-converted masked loads under AVX-512VL (the
    ``test_prelu_example`` node test fails without the workaround): the host
    flags then drop AVX-512VL, and only then (loops with a condition, the
    fused ReLU epilogues included, still vectorise)."""
    toolchain = find_toolchain()
    if toolchain.kind.value != "gcc" or not toolchain.target_flags:
        pytest.skip("the workaround is gcc's, for its native flags")
    native = _predefined_macros([*toolchain.command, *toolchain.target_flags])
    has_vl = "__AVX512VL__" in _predefined_macros(
        [*toolchain.command, *(f for f in toolchain.target_flags if f != "-mno-avx512vl")])
    assert ("-mno-avx512vl" in toolchain.target_flags) == has_vl
    assert "__AVX512VL__" not in native
    assert "-fno-tree-loop-if-convert" not in toolchain.target_flags
    if platform.machine() in ("x86_64", "AMD64"):
        assert _gcc_workaround_flags(toolchain.command, ["-march=skylake-avx512"]) == \
            ("-mno-avx512vl",)
        assert _gcc_workaround_flags(toolchain.command, ["-march=haswell"]) == ()
