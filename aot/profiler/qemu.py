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

#: cores QEMU models, and the board for each
BOARDS = {t.name: t.qemu_board for t in TARGETS.values() if t.qemu_board}
#: each board's code and RAM as QEMU models them (origin, length): the
#: MEMORY lines of data/mps2.ld.  The MPS2 AN385/AN386/AN500 boards have
#: 4 MiB of each at 0x0 and 0x20000000; the AN505 (Cortex-M33) boots in the
#: Secure state, its vector table at 0x10000000 (SSRAM1's Secure alias)
#: and its RAM at 0x38000000 (SSRAM2); the MPS3 AN547 (Cortex-M55) runs
#: from its 512 KiB ITCM at 0x0 with its 512 KiB DTCM at 0x20000000.
#: The micro:bit (nRF51822) is QEMU's only Armv6-M board: a Cortex-M0,
#: whose instruction set is the Cortex-M0+'s (the counts are the M0+'s;
#: its cycles would differ), with 256 KiB of flash and 16 KiB of RAM.
MEMORY_MAPS: dict[str, tuple[tuple[int, str], tuple[int, str]]] = {
    "mps2-an385": ((0x00000000, "4M"), (0x20000000, "4M")),
    "mps2-an386": ((0x00000000, "4M"), (0x20000000, "4M")),
    "mps2-an500": ((0x00000000, "4M"), (0x20000000, "4M")),
    "mps2-an505": ((0x10000000, "4M"), (0x38000000, "2M")),
    "mps3-an547": ((0x00000000, "512K"), (0x20000000, "512K")),
    "microbit": ((0x00000000, "256K"), (0x20000000, "16K")),
}
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
            f"aot profile runs on the cores QEMU models: "
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
    script = work / "board.ld"
    script.write_text(linker_script(board_of(target)))
    run_tool([*cc, "-T", str(script), "--specs=rdimon.specs", "-nostartfiles",
              str(_data("startup.c")), "main.c", "model.o", "-lm", "-o", str(elf)],
             cwd=work, what="linking the profiling firmware", path=work / "main.c")
    return elf


def linker_script(board: str) -> str:
    """data/mps2.ld with ``board``'s memory map."""
    (flash, flash_len), (ram, ram_len) = MEMORY_MAPS[board]
    text = _data("mps2.ld").read_text()
    memory = (f"MEMORY\n{{\n    FLASH (rx)  : ORIGIN = {flash:#010x}, LENGTH = {flash_len}\n"
              f"    RAM   (rwx) : ORIGIN = {ram:#010x}, LENGTH = {ram_len}\n}}")
    start = text.index("MEMORY\n{")
    end = text.index("}", start) + 1
    text = text[:start] + memory + text[end:]
    if board == "microbit":                    # 16 KiB of RAM in all
        text = text.replace("MIN_STACK_BYTES = 16K;", "MIN_STACK_BYTES = 4K;")
    return text


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
    if meta.get("loops") or meta.get("branches"):
        # calls in loops run (and mark) once per iteration, in branches once or
        # not at all: the whole entry only
        if len(marks) < 5:
            raise DiagnosticError(f"the profiling firmware marked {len(marks)} times")
        cost = marks[1] - marks[0]
        total = float(marks[-1] - marks[2] - (len(marks) - 3) * cost)
        return [], total, f"QEMU {board}, instructions"
    if len(marks) != n + 5:
        raise DiagnosticError(f"the profiling firmware marked {len(marks)} times, expected "
                              f"{n + 5} ({n} kernel calls)")
    cost = marks[1] - marks[0]
    hooks = marks[3:3 + n + 1]
    values = [float(b - a - cost) for a, b in zip(hooks, hooks[1:])]
    total = float(marks[n + 4] - marks[2] - (n + 2) * cost)
    return values, total, f"QEMU {board}, instructions"
