"""What the program backend decides about a whole-language program: the
records :mod:`aot.emit.lower.program_entry` fills and :mod:`aot.emit.c`
spells (see :mod:`aot.emit.lower.program`'s design note).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..objects.ir import ObjectProgram
from .model import TensorSpec

__all__ = ["IOLeaf", "ProgramPart", "DEFAULT_MAX_DEPTH", "DEFAULT_STACK_BYTES"]

#: Bound on nested non-tail calls when the caller does not choose.
DEFAULT_MAX_DEPTH = 10_000
#: the default stack budget of a call, in bytes: the stack the program's
#: nested calls may use below the entry's frame before a call returns
#: ERR_DEPTH (``<NAME>_STACK_BYTES``; a context may set its own).  64 KiB
#: leaves room on small thread stacks (256 KiB threads, 512 KiB macOS
#: secondary threads) and is what a Cortex-M firmware might give one task;
#: non-tail recursion gets about 64 KiB / (bytes of one frame) calls deep.
DEFAULT_STACK_BYTES = 64 * 1024


@dataclass(frozen=True, slots=True)
class IOLeaf:
    """One parameter of the entry function: a leaf of the flattened
    (tuple-free) parameters or results of ``main``."""

    name: str                    # C parameter name
    is_tensor: bool              # tensor: ``const T *`` / ``T *``; else a value handle
    spec: TensorSpec | None      # tensors only
    type_json: Any               # the leaf's type (program_types.type_json)
    description: str             # the type as Relay text


@dataclass(frozen=True, slots=True)
class ProgramPart:
    """The program-specific half of a :class:`~aot.emit.plan.model.ModelPlan`."""

    inputs: tuple[IOLeaf, ...]
    outputs: tuple[IOLeaf, ...]
    max_depth: int
    #: the functions, static objects and entry the entry reaches (verified)
    objects: ObjectProgram
    #: constructor table: (id, ADT name, constructor name, tag, arity)
    constructors: tuple[tuple[int, str, str, int, int], ...]
    #: metadata: ADT definitions and the entry's types, as JSON
    types: Any
    #: the default stack budget of a context, bytes (see DEFAULT_STACK_BYTES)
    stack_bytes: int = DEFAULT_STACK_BYTES
    #: how the pool was sized (:class:`~aot.emit.plan.pool_bound.PoolSizing`:
    #: "none", "exact", "allocations", "max_depth" or "user") and why
    pool_sizing: str = "user"
    pool_reason: str = ""
