"""Build and run a small C program that calls the runtime helpers
(runtime_c/aot_kernel_helpers.h) and prints what they return: on the host
with cc or clang, and on a Cortex-M4F (arm-none-eabi-gcc, QEMU's
mps2-an386, stdout through semihosting).  The helper tests compare the
printed values with the kernel-IR evaluator's (the reference semantics);
the two builds take the two forms of the helpers that have one per target
(the DSP extension's intrinsics, SSAT/USAT, the M-profile ReLU6)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from aot.emit.resources import runtime_dir

EMBEDDED = Path(__file__).resolve().parents[2] / "examples" / "embedded"
STARTUP = EMBEDDED / "startup.c"
LDSCRIPT = EMBEDDED / "mps2_an386.ld"
CPU = ["-mcpu=cortex-m4", "-mthumb", "-mfloat-abi=hard", "-mfpu=fpv4-sp-d16"]
FLAGS = ["-std=c99", "-Wall", "-Wextra", "-Wpedantic", "-Werror", "-O2", "-ffp-contract=off"]

needs_arm = pytest.mark.skipif(
    shutil.which("arm-none-eabi-gcc") is None or shutil.which("qemu-system-arm") is None,
    reason="needs arm-none-eabi-gcc and qemu-system-arm (scripts/install-ci-deps.sh --embedded)")


def run_host(tmp_path: Path, source: str, cc: str = "cc") -> str:
    """Build ``source`` with ``cc`` (skipping the test when it is missing)
    and run it: its stdout."""
    if shutil.which(cc) is None:
        pytest.skip(f"needs {cc}")
    src, exe = tmp_path / "h.c", tmp_path / "h"
    src.write_text(source)
    subprocess.run([cc, *FLAGS, f"-I{runtime_dir()}", str(src), "-o", str(exe), "-lm"],
                   check=True)
    return subprocess.run([str(exe)], check=True, capture_output=True, text=True).stdout


def run_cortex_m4f(tmp_path: Path, source: str) -> tuple[str, Path]:
    """Build ``source`` for a Cortex-M4F and run it under QEMU: its stdout
    and the ELF (for disassembly checks)."""
    src, elf = tmp_path / "h.c", tmp_path / "h.elf"
    src.write_text(source)
    subprocess.run(["arm-none-eabi-gcc", *CPU, *FLAGS, f"-I{runtime_dir()}", str(src),
                    str(STARTUP), "-T", str(LDSCRIPT), "--specs=rdimon.specs", "-nostartfiles",
                    "-o", str(elf), "-lm"], check=True)
    run = subprocess.run(["qemu-system-arm", "-M", "mps2-an386", "-nographic",
                          "-semihosting-config", "enable=on,target=native", "-kernel", str(elf)],
                         stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stdout + run.stderr
    return run.stdout, elf


def float_rows_program(values: np.ndarray, decls: str, body: str, trailer: str) -> str:
    """A program that reads each float32 of ``values`` (their bit patterns,
    a table) into ``float x``, runs ``body`` on it (declared locals:
    ``decls``; ``uint32_t bits``) and ends the line; then ``trailer``."""
    rows = ",\n".join(f"    0x{int(b):08x}u" for b in np.asarray(values, np.float32).view(np.uint32))
    return f"""#include <stdio.h>
#include <stdint.h>
#include <string.h>
#include "aot_kernel_helpers.h"

static const uint32_t rows[] = {{
{rows}
}};

int main(void)
{{
    size_t i;
    for (i = 0; i < sizeof rows / sizeof rows[0]; ++i) {{
        float x{decls};
        uint32_t bits;
        memcpy(&x, &rows[i], sizeof x);
{body}        printf("\\n");
    }}
{trailer}    return 0;
}}
"""
