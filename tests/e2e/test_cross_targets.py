"""``aot compile --target <core>``: lib<name>.a cross-built for each
Cortex-M core with arm-none-eabi-gcc and the core's flags, checked in the
objects' Arm build attributes (architecture, FPU, float ABI), and, on the
cores QEMU models with the same memory map (M3, M4F, M7), linked into a
firmware that runs the model and prints its outputs, which must match the
reference interpreter.  Skipped, saying so, without the cross toolchain
(``make deps`` installs it)."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

import aot
from aot.cli import main
from aot.emit.build.targets import TARGETS, target_toolchain

REPO = Path(__file__).resolve().parents[2]
EMBEDDED = REPO / "examples" / "embedded"

needs_arm = pytest.mark.skipif(shutil.which("arm-none-eabi-gcc") is None,
                               reason="needs arm-none-eabi-gcc (make deps)")
needs_qemu = pytest.mark.skipif(shutil.which("qemu-system-arm") is None,
                                reason="needs qemu-system-arm (make deps)")

PROGRAM = """
def @main(%x: Tensor[(1, 2, 5, 5), float32], %w: Tensor[(3, 2, 3, 3), float32]) {
  nn.softmax(nn.relu(nn.conv2d(%x, %w, padding=[1, 1], channels=3, kernel_size=[3, 3])), axis=1)
}
"""
WEIGHTS = np.random.default_rng(7).standard_normal((3, 2, 3, 3)).astype(np.float32)
INPUT = np.linspace(-2.0, 2.0, 50, dtype=np.float32).reshape(1, 2, 5, 5)

#: target -> (Tag_CPU_arch, Tag_FP_arch or None, hard-float argument passing)
ATTRIBUTES = {
    "cortex-m0plus": ("v6S-M", None, False),
    "cortex-m3": ("v7", None, False),
    "cortex-m4": ("v7E-M", "VFPv4-D16", True),
    "cortex-m7": ("v7E-M", "FPv5/FP-D16 for ARMv8", True),
    "cortex-m33": ("v8-M.mainline", "FPv5/FP-D16 for ARMv8", True),
    "cortex-m55": ("v8.1-M.mainline", "FPv5/FP-D16 for ARMv8", True),
}
#: cores QEMU models with the MPS2 AN386 memory map (examples/embedded's linker script)
BOARDS = {"cortex-m3": "mps2-an385", "cortex-m4": "mps2-an386", "cortex-m7": "mps2-an500"}

MAIN_C = r"""
#include <stdio.h>
#include <stdint.h>
#include <string.h>
#include "net.h"

static const float x[50] = {%(inputs)s};
static float y[NET_OUTPUT_0_SIZE];

int main(void)
{
    int32_t status = net_run(x, y);
    size_t i;
    if (status != NET_OK) {
        printf("status %%ld\n", (long)status);
        return 1;
    }
    for (i = 0; i < NET_OUTPUT_0_SIZE; ++i) {
        uint32_t bits;
        memcpy(&bits, &y[i], sizeof bits);
        printf("%%08lx\n", (unsigned long)bits);
    }
    return 0;
}
"""


def test_every_target_is_documented_and_listed():
    assert set(ATTRIBUTES) | {"host"} == set(TARGETS)
    readme = (REPO / "README.md").read_text()
    for name in TARGETS:
        assert f"`{name}`" in readme, name


def compile_for(tmp_path: Path, target: str) -> Path:
    program = tmp_path / "net.relay"
    program.write_text(PROGRAM)
    np.save(tmp_path / "w.npy", WEIGHTS)
    out = tmp_path / f"net-{target}"
    assert main(["compile", str(program), "-o", str(out), "--name", "net", "--arena", "static",
                 "--param", f"w={tmp_path / 'w.npy'}", "--target", target, "-q"]) == 0
    return out


@needs_arm
@pytest.mark.parametrize("target", sorted(ATTRIBUTES))
def test_the_library_is_built_for_the_core(tmp_path, target):
    library = compile_for(tmp_path, target) / "lib" / "libnet.a"
    shown = subprocess.run(["arm-none-eabi-readelf", "-A", str(library)], capture_output=True,
                           text=True, check=True).stdout
    arch, fp, hard = ATTRIBUTES[target]
    assert re.search(rf"Tag_CPU_arch: {re.escape(arch)}\n", shown), shown
    assert "Tag_THUMB_ISA_use" in shown and "Tag_ARM_ISA_use" not in shown, shown
    if fp is None:
        assert "Tag_FP_arch" not in shown, shown
    else:
        assert f"Tag_FP_arch: {fp}\n" in shown, shown
    assert ("Tag_ABI_VFP_args: VFP registers" in shown) == hard, shown
    flags = target_toolchain(target).object_flags()
    assert "-fPIC" not in flags and "-ffunction-sections" in flags
    assert all(f in flags for f in TARGETS[target].cpu_flags)


def test_the_summary_says_how_to_link(tmp_path, capsys):
    if shutil.which("arm-none-eabi-gcc") is None:
        pytest.skip("needs arm-none-eabi-gcc (make deps)")
    compile_for(tmp_path, "cortex-m4")
    out = capsys.readouterr().out
    assert out == ""                             # -q
    program = tmp_path / "net.relay"
    main(["compile", str(program), "-o", str(tmp_path / "o"), "--name", "net", "--arena",
          "static", "--param", f"w={tmp_path / 'w.npy'}", "--target", "cortex-m4"])
    assert ("libnet.a: built for cortex-m4 with arm-none-eabi-gcc; link the firmware with "
            "-mcpu=cortex-m4 -mthumb -mfloat-abi=hard -mfpu=fpv4-sp-d16") in \
        capsys.readouterr().out


def test_a_missing_cross_compiler_is_said_before_the_compile(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))          # no arm-none-eabi-gcc here
    program = tmp_path / "net.relay"
    program.write_text(PROGRAM)
    assert main(["compile", str(program), "-o", str(tmp_path / "o"), "--target", "cortex-m7",
                 "-q"]) == 1
    err = capsys.readouterr().err
    assert "--target cortex-m7 needs the cross compiler `arm-none-eabi-gcc`" in err
    assert not (tmp_path / "o").exists()


def test_cores_without_an_fpu_default_to_separate_multiply_and_add(tmp_path):
    mod = aot.infer_types(aot.parse(PROGRAM))
    for target, fma in (("cortex-m3", False), ("cortex-m4", True)):
        art = aot.compile(mod, tmp_path / target, name="net", params={"w": WEIGHTS},
                          build=False, target=target)
        assert ("fmaf(" in (art.root / "src" / "net.c").read_text()) == fma, target


@needs_arm
@needs_qemu
@pytest.mark.parametrize("target", sorted(BOARDS))
def test_the_cross_built_library_runs_on_the_core(tmp_path, target):
    art = compile_for(tmp_path, target)
    inputs = ", ".join(f"{float(v).hex()}f" for v in INPUT.reshape(-1))
    source = tmp_path / "main.c"
    source.write_text(MAIN_C % {"inputs": inputs})
    flags = [*TARGETS[target].cpu_flags, "-O2", "-std=c99"]
    elf = tmp_path / "app.elf"
    link = subprocess.run(["arm-none-eabi-gcc", *flags, "-I", str(art / "include"),
                           "-T", str(EMBEDDED / "mps2_an386.ld"), "--specs=rdimon.specs",
                           "-nostartfiles", "-Wl,--gc-sections", str(EMBEDDED / "startup.c"),
                           str(source), str(art / "lib" / "libnet.a"), "-lm", "-o", str(elf)],
                          capture_output=True, text=True)
    assert link.returncode == 0, link.stderr
    run = subprocess.run(["qemu-system-arm", "-M", BOARDS[target], "-nographic",
                          "-semihosting-config", "enable=on,target=native", "-kernel", str(elf)],
                         stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stdout + run.stderr
    got = np.array([int(line, 16) for line in run.stdout.split()], dtype=np.uint32)
    got = got.view(np.float32).reshape(1, 3, 5, 5)
    mod = aot.infer_types(aot.parse(PROGRAM))
    want = aot.interpret(mod, INPUT, WEIGHTS)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


@needs_arm
def test_loading_a_cross_built_library_says_what_it_was_built_for(tmp_path):
    """aot.load of a library built for a Cortex-M core gets a diagnostic
    naming both processors, not the host linker's error."""
    from aot.emit.build.machine import archive_machine, host_machine
    mod = aot.parse("def @main(%x: Tensor[(4), float32]) { %x + %x }")
    arm = aot.compile(mod, tmp_path / "arm", name="twice", target="cortex-m4")
    assert archive_machine(arm.layout.library) == 40          # EM_ARM
    with pytest.raises(aot.DiagnosticError, match=r"built for Arm .*not for this machine"):
        aot.load(arm)
    host = aot.compile(mod, tmp_path / "host", name="twice")
    assert archive_machine(host.layout.library) == host_machine()
    np.testing.assert_array_equal(aot.load(host)(np.ones(4, np.float32)), 2)


def test_a_file_that_is_not_an_elf_archive_makes_no_claim(tmp_path):
    from aot.emit.build.machine import archive_machine
    (tmp_path / "x.a").write_bytes(b"!<arch>\n" + b"/".ljust(16) + b" " * 32 + b"4".ljust(10)
                                   + b"`\n" + b"abcd" + b"m.o/".ljust(16) + b" " * 32
                                   + b"4".ljust(10) + b"`\n" + b"MZxx")
    assert archive_machine(tmp_path / "x.a") is None
    (tmp_path / "y.a").write_bytes(b"not an archive")
    assert archive_machine(tmp_path / "y.a") is None
    assert archive_machine(tmp_path / "missing.a") is None
