"""The stack budget on the Cortex-M4F (QEMU mps2-an386): a deep non-tail
recursion returns ERR_DEPTH there too, and one within the budget computes
the right sum.

The firmware is the project's own bare-metal start-up and linker script
(examples/embedded/startup.c, mps2_an386.ld) around a main of this test
that runs the program on a context in .bss with a 16 KiB budget, and on
the static context (the default budget, 64 KiB).  The stack grows down
from the top of RAM there (the budget measures the distance in either
direction).  A bare-metal overflow does not trap, it silently overwrites
the heap and .bss below the stack, so the check matters more than on a
host.  Frames there take 64 bytes at -O2 (40 at -Os): 16 KiB holds about
255 nested calls, enough for the 100 that must succeed.  Needs
arm-none-eabi-gcc and qemu-system-arm (scripts/install-ci-deps.sh
--embedded); skipped, saying so, without them.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

import aot

REPO = Path(__file__).resolve().parents[2]
EMBEDDED = REPO / "examples" / "embedded"

needs_arm = pytest.mark.skipif(
    shutil.which("arm-none-eabi-gcc") is None or shutil.which("qemu-system-arm") is None,
    reason="needs arm-none-eabi-gcc and qemu-system-arm "
           "(scripts/install-ci-deps.sh --embedded)")

DEEP = '#[version = "0.0.5"]\n' + """
def @sum_to(%n: int32) -> int32 {
  if (%n == 0) { 0 } else { %n + @sum_to(%n - 1) }
}
def @main(%n: int32) -> int32 { @sum_to(%n) }
"""

MAIN_C = r"""
#include <stdio.h>

#include "mdeep.h"

static mdeep_ctx context;

static int32_t run(mdeep_ctx *ctx, int32_t n, int32_t *out)
{
    *out = -1;
    return ctx == NULL ? mdeep_run(&n, out) : mdeep_run_ctx(ctx, &n, out);
}

int main(void)
{
    int32_t out, st;
    static const int32_t ns[4] = {9000, 100, 9000, 300};
    int i;
    mdeep_ctx_init(&context, 16u * 1024u);
    for (i = 0; i < 4; i++) {
        st = run(i < 2 ? &context : NULL, ns[i], &out);
        printf("%s %ld %ld %ld\n", i < 2 ? "ctx" : "static", (long)ns[i], (long)st,
               (long)(st == MDEEP_OK ? out : -1));
    }
    return 0;
}
"""

CPU_FLAGS = ["-mcpu=cortex-m4", "-mthumb", "-mfloat-abi=hard", "-mfpu=fpv4-sp-d16"]


@needs_arm
def test_deep_recursion_on_cortex_m4(tmp_path) -> None:
    art = aot.compile(aot.parse(DEEP), tmp_path / "art", name="mdeep", build=False,
                      pool_bytes=1 << 20)
    (tmp_path / "main.c").write_text(MAIN_C)
    elf = tmp_path / "app.elf"
    flags = [*CPU_FLAGS, "-O2", "-Wall", "-Wextra", "-Wpedantic", "-Werror",
             "-ffunction-sections", "-fdata-sections"]
    subprocess.run(["arm-none-eabi-gcc", *flags, "-std=c99", "-ffp-contract=off",
                    "-fno-strict-aliasing", f"-I{art.root / 'include'}",
                    f"-I{art.root / 'runtime_c'}", "-T", str(EMBEDDED / "mps2_an386.ld"),
                    "--specs=rdimon.specs", "-nostartfiles", "-Wl,--gc-sections",
                    str(EMBEDDED / "startup.c"), str(tmp_path / "main.c"),
                    str(art.root / "src" / "mdeep.c"), "-lm", "-o", str(elf)], check=True)
    result = subprocess.run(["qemu-system-arm", "-M", "mps2-an386", "-nographic",
                             "-semihosting-config", "enable=on,target=native", "-kernel",
                             str(elf)], stdin=subprocess.DEVNULL, capture_output=True,
                            text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.splitlines() == [
        "ctx 9000 3 -1", f"ctx 100 0 {100 * 101 // 2}",
        "static 9000 3 -1", f"static 300 0 {300 * 301 // 2}"]
