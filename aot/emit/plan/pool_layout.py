"""How many bytes of pool one object takes: the block sizes of
``runtime_c/aot_runtime.h`` (``aot_new_cell``, ``aot_new_tensor``,
``aot_alloc``), for the data models the generated C runs on.

A block is the object's bytes rounded up to ``AOT_POOL_ALIGN`` (16):

* a cell (ADT, tuple, closure, ref) with *n* fields:
  ``offsetof(aot_obj, fields) + n * sizeof(aot_obj *)``;
* a tensor of *b* bytes: ``AOT_TENSOR_OFFSET + b``, where
  ``AOT_TENSOR_OFFSET`` is ``offsetof(aot_obj, fields)`` rounded up to 16.

``struct aot_obj`` is ``uint32_t rc; uint8_t kind, flags; uint16_t tag;
uint32_t nfields, block; size_t nbytes; union {pointers} u; aot_obj
*fields[]``: the fields start at 32 on LP64 (x86-64, AArch64) and at 24 on
ILP32 (Cortex-M, 32-bit RISC-V).  Every block is at least as large on LP64
as on ILP32, so a sum of LP64 blocks bounds both; the exact simulation
(:mod:`.pool_simulate`) runs each layout and keeps the larger need.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["POOL_ALIGN", "POOL_SMALL_MAX", "Layout", "LP64", "ILP32", "LAYOUTS"]

#: AOT_POOL_ALIGN and AOT_POOL_SMALL_MAX of runtime_c/aot_context.h
POOL_ALIGN = 16
POOL_SMALL_MAX = 1024


def _round(n: int) -> int:
    return (n + POOL_ALIGN - 1) // POOL_ALIGN * POOL_ALIGN


@dataclass(frozen=True, slots=True)
class Layout:
    """One data model: where ``aot_obj``'s fields start, a pointer's size."""
    name: str
    fields_offset: int
    pointer: int

    def cell(self, nfields: int) -> int:
        """The block of a cell with ``nfields`` fields."""
        return _round(self.fields_offset + nfields * self.pointer)

    def tensor(self, nbytes: int) -> int:
        """The block of a pool tensor of ``nbytes`` bytes of data."""
        return _round(_round(self.fields_offset) + nbytes)


LP64 = Layout("LP64", 32, 8)
ILP32 = Layout("ILP32", 24, 4)
LAYOUTS = (LP64, ILP32)
