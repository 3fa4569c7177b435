"""Target tuning of the anchor lowerings (convolutions, dense).

Design note
-----------
The fastest loop nest for a convolution or a matrix product depends on
the core the C is compiled for, and no single form is good on both kinds
of target we measure (``bench/kernels.py``):

* ``scalar`` (the default): a scalar FPU with few registers, a Cortex-M4F
  compiled at ``-O2``.  Register tiles of scalar accumulators
  (``K.Decl``): gcc keeps them in the 32 single-precision registers.  An
  accumulator *array* (the SIMD form) stays in memory on such a core, a
  load and a store per multiply-accumulate: 8 to 10 instructions per MAC
  instead of 2.5 to 3.
* ``simd``: a host with SIMD units compiled at ``-O3`` (x86 SSE/AVX,
  AArch64 NEON).  gcc vectorises none of the scalar tiles (they are
  loop-carried scalars, not memory), but it vectorises a loop over a
  small local accumulator array whose index is the innermost, contiguous
  loop variable, and keeps the array in vector registers: 8 times the
  scalar form's speed on a 3x3 convolution (AVX-512 host, gcc 12).

Both accumulate float32 with ``fmaf`` (``a * b + c`` rounded once): one
instruction on the FPUs we target (Cortex-M4F/M7/M33 ``vfma.f32``, x86
FMA3, AArch64 ``fmadd``), where a multiply and an add are two -- and gcc
at ``-O2`` for the M4 splits even ``vmla`` into ``vmul`` + ``vadd``.
MobileNetV1 0.25 on the M4F: 3.04 -> 2.04 instructions per MAC.  C99
requires ``fmaf`` to be correctly rounded, so the result is the same on
every conforming target (and :mod:`aot.emit.kernel.fma` is the evaluator's exact
model of it).  ``scalar-nofma`` keeps a separate multiply and add, for
cores without a fused multiply-add (Cortex-M0/M3, soft float), where
``fmaf`` is a library call.

The tuning is chosen per compilation (``aot.compile(..., tuning=...)``,
``aot compile --tuning``) and read by the lowerings through
:func:`current`; the results are the same within float rounding (both
accumulate float32 products in float32, in different orders).
"""

from __future__ import annotations

import contextlib
import contextvars
from dataclasses import dataclass
from typing import Iterator

__all__ = ["Tuning", "TUNINGS", "current", "using"]


@dataclass(frozen=True, slots=True)
class Tuning:
    """``vector_floats``: float32 lanes the innermost accumulation loops
    are shaped for (0: scalar register tiles).  ``fma``: float32
    multiply-accumulates are ``fmaf`` calls (see the module note)."""

    name: str
    vector_floats: int = 0
    fma: bool = True

    @property
    def simd(self) -> bool:
        return self.vector_floats > 0


TUNINGS = {
    "scalar": Tuning("scalar"),
    "simd": Tuning("simd", vector_floats=8),
    "scalar-nofma": Tuning("scalar-nofma", fma=False),
}

_CURRENT: contextvars.ContextVar[Tuning] = contextvars.ContextVar("aot_tuning",
                                                                  default=TUNINGS["scalar"])


def current() -> Tuning:
    return _CURRENT.get()


def lookup(name: str | Tuning) -> Tuning:
    if isinstance(name, Tuning):
        return name
    if name not in TUNINGS:
        from ....diagnostics import DiagnosticError
        raise DiagnosticError(f"unknown tuning {name!r} (expected one of "
                              f"{', '.join(sorted(TUNINGS))})")
    return TUNINGS[name]


@contextlib.contextmanager
def using(name: str | Tuning) -> Iterator[Tuning]:
    """Lower with tuning ``name`` inside the block."""
    token = _CURRENT.set(lookup(name))
    try:
        yield _CURRENT.get()
    finally:
        _CURRENT.reset(token)
