"""Instructions per kernel call on a Cortex-M core under QEMU (see the
design note of :mod:`aot.profiler`)."""

from __future__ import annotations

import os
import shutil
import subprocess
from importlib import resources
from pathlib import Path
from typing import Sequence

import numpy as np

from ..diagnostics import DiagnosticError
from ..emit.build.targets import TARGETS, Target, target_toolchain
from ..emit.build.toolchain import find_toolchain, run_tool
from ..emit.c.context import MODEL_CFLAGS
from ..progress import stage
from . import driver_arrays

#: cores QEMU models on a board with the memory map of data/mps2.ld
BOARDS = {t.name: t.qemu_board for t in TARGETS.values() if t.qemu_board}
QEMU = "qemu-system-arm"
QEMU_TIMEOUT_S = 1800
MARKER = "aot_profile_mark"

MAIN_C = """\
/* aot profile's firmware: one inference, the marker around it. */
#include <stdint.h>
#include "{name}.h"

void {marker}(void) __attribute__((noinline));
void {marker}(void)
{{
    __asm__ volatile("" ::: "memory");
}}

{arrays}
int main(void)
{{
    int32_t status;
    {marker}();                 /* two back-to-back marks: the marker's cost */
    {marker}();
    {marker}();                 /* before the entry */
    status = {name}_run({args});
    {marker}();                 /* after it */
    return (int)status;
}}
"""

MODEL_C = """\
/* The model's source with its profiling hook calling the marker. */
void {marker}(void);
#define {macro}_PROFILE_CALL(i) {marker}()
#include "{source}"
"""


def board_of(target: Target) -> str:
    try:
        return BOARDS[target.name]
    except KeyError:
        raise DiagnosticError(
            f"aot profile runs on the cores QEMU models with the MPS2 memory map: "
            f"{', '.join(BOARDS)} (and host); not {target.name}") from None


def _data(name: str) -> Path:
    return Path(str(resources.files("aot.profiler").joinpath("data", name)))


def _build_plugin(work: Path) -> Path:
    plugin = work / "qemu_profile.so"
    host = find_toolchain()
    run_tool([*host.command, "-O2", "-shared", "-fPIC", "-o", str(plugin),
              str(_data("qemu_profile.c"))], cwd=work, what="building the QEMU plugin")
    return plugin


def _build_firmware(art: Path, meta: dict, inputs: Sequence[np.ndarray], work: Path,
                    target: Target) -> Path:
    name = meta["name"]
    arrays, args = driver_arrays(meta, inputs)
    (work / "main.c").write_text(MAIN_C.format(name=name, marker=MARKER, arrays=arrays,
                                               args=args))
    (work / "model.c").write_text(MODEL_C.format(marker=MARKER, macro=name.upper(),
                                                 source=art / "src" / f"{name}.c"))
    toolchain = target_toolchain(target)
    cc = [*toolchain.command, *target.cpu_flags, "-O2", "-g", "-I", str(art / "include"),
          "-I", str(art / "runtime_c")]
    elf = work / "app.elf"
    run_tool([*cc, *MODEL_CFLAGS, "-c", "model.c", "-o", "model.o"], cwd=work,
             what="compiling the model for the profile", path=work / "model.c")
    run_tool([*cc, "-T", str(_data("mps2.ld")), "--specs=rdimon.specs", "-nostartfiles",
              str(_data("startup.c")), "main.c", "model.o", "-lm", "-o", str(elf)],
             cwd=work, what="linking the profiling firmware", path=work / "main.c")
    return elf


def _marker_address(elf: Path, target: Target) -> int:
    nm = f"{target.prefix}nm"
    result = subprocess.run([nm, str(elf)], capture_output=True, text=True, check=False)
    for line in result.stdout.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[2] == MARKER:
            return int(parts[0], 16) & ~1          # the Thumb bit is not the address
    raise DiagnosticError(f"{elf}: no symbol {MARKER} ({nm} said: {result.stderr.strip()})")


def _run(elf: Path, plugin: Path, marker: int, board: str, work: Path) -> list[int]:
    if shutil.which(QEMU) is None:
        raise DiagnosticError(f"aot profile on a Cortex-M core needs {QEMU} (Debian/Ubuntu: "
                              "apt-get install qemu-system-arm, or `make deps`)")
    out = work / "marks.txt"
    command = [QEMU, "-M", board, "-nographic", "-semihosting-config",
               "enable=on,target=native", "-kernel", str(elf),
               "-plugin", f"{plugin},marker={marker:#x},out={out}"]
    try:
        run = subprocess.run(command, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                             timeout=QEMU_TIMEOUT_S, check=False)
    except subprocess.TimeoutExpired:
        raise DiagnosticError(f"the profiling firmware did not finish in {QEMU_TIMEOUT_S} s "
                              "under QEMU") from None
    if run.returncode != 0:
        raise DiagnosticError(f"the profiling firmware failed under QEMU (exit status "
                              f"{run.returncode}; 1 is an error status of the entry, 3 a "
                              f"fault):\n{run.stdout}{run.stderr}")
    text = out.read_text()
    if "overflow" in text:
        raise DiagnosticError("too many kernel calls to profile (the plugin keeps 65536 marks)")
    return [int(line.split()[1]) for line in text.splitlines() if line.startswith("mark ")]


def profile_on_qemu(art: Path, meta: dict, inputs: Sequence[np.ndarray], work: Path,
                    target: Target) -> tuple[list[float], float, str]:
    """(instructions of each call, of the whole entry, where) for one inference."""
    board = board_of(target)
    work = work / "qemu"
    os.makedirs(work, exist_ok=True)
    with stage("firmware build"):
        elf = _build_firmware(art, meta, inputs, work, target)
        plugin = _build_plugin(work)
    with stage("QEMU run"):
        marks = _run(elf, plugin, _marker_address(elf, target), board, work)
    n = len(meta["calls"])
    if len(marks) != n + 5:
        raise DiagnosticError(f"the profiling firmware marked {len(marks)} times, expected "
                              f"{n + 5} ({n} kernel calls)")
    cost = marks[1] - marks[0]
    hooks = marks[3:3 + n + 1]
    values = [float(b - a - cost) for a, b in zip(hooks, hooks[1:])]
    total = float(marks[n + 4] - marks[2] - (n + 2) * cost)
    return values, total, f"QEMU {board}, instructions"
