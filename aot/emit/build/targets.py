"""Build targets: the host, and the Arm Cortex-M cores ``aot compile
--target`` cross-compiles ``lib<name>.a`` for.

A target is a name, the prefix of its GNU cross tools
(``arm-none-eabi-``: gcc, ar) and the flags that select the core, its
floating-point unit and the calling convention.  The flags follow Arm's
(and gcc's) own: every core in Thumb mode; the hard-float ABI with the
core's FPU where it has one (single precision ``fpv4-sp-d16`` on the
Cortex-M4F, ``fpv5-sp-d16`` on the M33, double precision ``fpv5-d16`` on
the M7, the M55's FPU and MVE from ``-mcpu`` itself), the soft-float ABI on
the M0+ and M3.  A firmware links the library with the same ``-mcpu``,
``-mfloat-abi`` and ``-mfpu`` (the linker refuses to mix hard- and
soft-float objects); :attr:`Target.cpu_flags` is what to give it.

Cross objects are built without ``-fPIC`` (bare-metal firmware is linked
at fixed addresses; position-independent code would address every
constant through a table) and with ``-ffunction-sections
-fdata-sections`` so that ``--gc-sections`` drops what a firmware does
not call.  Everything else (the strict warning flags, ``-O2``, the
model's own flags) is as on the host.

The cores without an FPU get the ``scalar-nofma`` loop nests by default:
``fmaf`` is a library call there (a correctly rounded software fused
multiply-add), not an instruction.

The loop nests follow what the library is built for (:func:`default_tuning`).
A library built for the host (``aot.compile`` and ``aot compile`` by default,
then ``aot.load``) gets the host's: the ``simd`` nests, compiled at ``-O3``
for the host CPU (:mod:`aot.emit.build.toolchain`).  Sources nobody builds
(``build=False``, ``aot compile --no-build``: a firmware compiles them from
the make fragment) get :data:`PORTABLE_TUNING`, the microcontroller nests,
unless ``--target`` names a core, whose nests they get.  ``tuning=`` says
otherwise explicitly.  The tunings differ in summation order only, so a
host library and a firmware built from the same model agree within float
rounding, not bit for bit; a host build with ``tuning="scalar"`` computes
exactly what the default firmware sources compute.
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass

from aot.emit.build.toolchain import (DEFAULT_OPT_FLAGS, BuildError, Toolchain, find_toolchain,
                                      probe_toolchain, run_probe_banner)

__all__ = ["Target", "TARGETS", "HOST", "PORTABLE_TUNING", "default_tuning", "get_target",
           "target_toolchain"]

#: Flags of every object built for a microcontroller.
EMBEDDED_FLAGS: tuple[str, ...] = ("-ffunction-sections", "-fdata-sections")
ARM_PREFIX = "arm-none-eabi-"


@dataclass(frozen=True, slots=True)
class Target:
    name: str
    #: prefix of the cross tools (empty: the host's compiler, ``$CC``)
    prefix: str = ""
    #: the core, its FPU and the float ABI (give them to the firmware's link too)
    cpu_flags: tuple[str, ...] = ()
    #: the loop nests of float convolutions and dense layers by default
    tuning: str = "scalar"
    description: str = ""
    #: the QEMU board with the MPS2 memory map that models the core
    #: (``aot profile``; empty when QEMU has none)
    qemu_board: str = ""

    @property
    def is_host(self) -> bool:
        return not self.prefix


HOST = Target("host", tuning="simd",
              description="this machine's C compiler ($CC, else gcc, clang, cc)")
#: The loop nests of sources built for no particular core (see the module note).
PORTABLE_TUNING = "scalar"

TARGETS: dict[str, Target] = {t.name: t for t in (
    HOST,
    Target("cortex-m0plus", ARM_PREFIX, ("-mcpu=cortex-m0plus", "-mthumb", "-mfloat-abi=soft"),
           "scalar-nofma", "Armv6-M, no FPU", "microbit"),
    Target("cortex-m3", ARM_PREFIX, ("-mcpu=cortex-m3", "-mthumb", "-mfloat-abi=soft"),
           "scalar-nofma", "Armv7-M, no FPU", "mps2-an385"),
    Target("cortex-m4", ARM_PREFIX, ("-mcpu=cortex-m4", "-mthumb", "-mfloat-abi=hard",
                                     "-mfpu=fpv4-sp-d16"),
           "scalar", "Armv7E-M with DSP, single-precision FPU (Cortex-M4F)", "mps2-an386"),
    Target("cortex-m7", ARM_PREFIX, ("-mcpu=cortex-m7", "-mthumb", "-mfloat-abi=hard",
                                     "-mfpu=fpv5-d16"),
           "scalar", "Armv7E-M with DSP, double-precision FPU", "mps2-an500"),
    Target("cortex-m33", ARM_PREFIX, ("-mcpu=cortex-m33", "-mthumb", "-mfloat-abi=hard",
                                      "-mfpu=fpv5-sp-d16"),
           "scalar", "Armv8-M Mainline with DSP, single-precision FPU", "mps2-an505"),
    Target("cortex-m55", ARM_PREFIX, ("-mcpu=cortex-m55", "-mthumb", "-mfloat-abi=hard"),
           "scalar", "Armv8.1-M with MVE (Helium) and FPU", "mps3-an547"),
)}


def get_target(name: str) -> Target:
    try:
        return TARGETS[name]
    except KeyError:
        raise BuildError(f"unknown target `{name}`; known: {', '.join(TARGETS)}") from None


def default_tuning(target: Target | str, build: bool = True) -> str:
    """The loop-nest tuning of a compile for ``target`` that gives none: the
    target's own when a library is built for it, :data:`PORTABLE_TUNING`
    for host-target sources that are not built (they are for firmware)."""
    if isinstance(target, str):
        target = get_target(target)
    if target.is_host and not build:
        return PORTABLE_TUNING
    return target.tuning


def target_toolchain(target: Target | str) -> Toolchain:
    """The toolchain that builds libraries for ``target``: the host's (see
    :func:`~aot.emit.build.toolchain.find_toolchain`), or the target's cross
    gcc and ar, with its flags, without ``-fPIC``.  A missing cross
    compiler is a BuildError saying how to install one."""
    if isinstance(target, str):
        target = get_target(target)
    if target.is_host:
        return find_toolchain()
    cc = f"{target.prefix}gcc"
    try:
        base = probe_toolchain(cc)
    except BuildError:
        raise BuildError(f"--target {target.name} needs the cross compiler `{cc}`, which is "
                         "not on PATH; install it (Debian/Ubuntu: apt-get install "
                         "gcc-arm-none-eabi libnewlib-arm-none-eabi, or `make deps`)") from None
    ar = _cross_tool(f"{target.prefix}ar")
    return dataclasses.replace(base, ar=ar, ar_banner=run_probe_banner(ar),
                               target_flags=(*target.cpu_flags, *EMBEDDED_FLAGS), pic=False,
                               sanitizers=(), opt_flags=DEFAULT_OPT_FLAGS, cpu_key="")


def _cross_tool(word: str) -> str:
    import shutil
    found = shutil.which(word)
    if found is None:
        raise BuildError(f"`{word}` not found on PATH (it comes with the cross compiler)")
    return os.path.abspath(found)
