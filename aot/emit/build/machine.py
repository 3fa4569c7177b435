"""Which processor a static library was built for: the ELF ``e_machine``
of its first object, compared with the running interpreter's, so that
:func:`aot.load` can say so when handed a library cross-compiled for a
microcontroller (``aot compile --target cortex-m4``) instead of letting the
host linker fail on it.

A ``.a`` is ``!<arch>\\n`` and members, each a 60-byte header (name,
decimal size at bytes 48..58) and its bytes, padded to even length; GNU ar
starts with the symbol table (``/``, ``/SYM64/``) and the long-name table
(``//``), which are skipped.  Anything that is not ELF (Mach-O, COFF) or
cannot be read gives None: no claim is made.
"""

from __future__ import annotations

import sys
from pathlib import Path

__all__ = ["ELF_MACHINES", "archive_machine", "host_machine", "machine_name"]

#: e_machine values of the processors the project meets
ELF_MACHINES = {3: "x86 (32-bit)", 40: "Arm (32-bit, e.g. a Cortex-M)", 62: "x86-64",
                183: "AArch64", 243: "RISC-V"}
_SKIPPED = {b"/", b"//", b"/SYM64/"}


def _elf_machine(head: bytes) -> int | None:
    if len(head) < 20 or head[:4] != b"\x7fELF":
        return None
    if head[5] == 1:
        return int.from_bytes(head[18:20], "little")
    return int.from_bytes(head[18:20], "big")


def archive_machine(path: Path) -> int | None:
    """The e_machine of the first object in the archive ``path``."""
    try:
        with open(path, "rb") as f:
            if f.read(8) != b"!<arch>\n":
                return None
            while True:
                header = f.read(60)
                if len(header) < 60:
                    return None
                name = header[:16].rstrip(b" ")
                size = int(header[48:58].strip() or b"0")
                if name in _SKIPPED:
                    f.seek(size + size % 2, 1)
                    continue
                return _elf_machine(f.read(20))
    except (OSError, ValueError):
        return None


def host_machine() -> int | None:
    """The e_machine of the running Python (None where it is not ELF)."""
    try:
        with open(sys.executable, "rb") as f:
            return _elf_machine(f.read(20))
    except OSError:
        return None


def machine_name(machine: int) -> str:
    return ELF_MACHINES.get(machine, f"ELF machine {machine}")
