"""The model plan: everything the emitter needs, decided.

Lowering (fused groups -> kernel IR), memory planning (arena offsets) and
constant collection produce one :class:`ModelPlan`; the renderer turns it
into the artifact (header, sources, make fragment, metadata.json) without
deciding anything further.  Data moves forward only: the renderer never
re-derives what the planner decided.

The entry function every model exports (``<name>`` is the model name):

* caller-provided arena (``arena="caller"``, the default)::

      int32_t <name>_run(const T0 *<in0>, ..., T *<out0>, ..., void *arena);

* static arena (``arena="static"``): the library defines a static arena
  of ``<NAME>_ARENA_BYTES`` (a union with ``uint64_t``, ``double``, ``long
  double`` and ``void *``: aligned for every element type, 8 bytes on a
  Cortex-M, 16 on x86-64; C99 has no ``alignas``) and the entry has no
  ``arena`` parameter.

It returns ``<NAME>_OK`` (0) or an error status (``<NAME>_ERR_NULL`` when a
pointer argument is NULL).  Inputs are read only; outputs are written
completely.  Tensors are dense row-major arrays of their element type
(``bool`` is ``uint8_t`` holding 0 or 1, ``float16`` is ``uint16_t``
holding IEEE binary16 bits); a scalar (shape ``()``) is a pointer to one
element.  A ``main`` returning a (nested) tuple has one output per leaf, in
order; :attr:`ModelPlan.output_tree` records the nesting.
"""

from __future__ import annotations

import math

import enum
from dataclasses import dataclass
from typing import Any, Union

import numpy as np

from ...ir.dtype import DType
from ..kernel.ir import Kernel

__all__ = [
    "TensorSpec", "ConstantData", "ArgKind", "BufferRef", "KernelCall",
    "KernelInfo", "LoopSpan", "BranchSpan", "ArenaTensor", "ArenaOverlap", "ModelPlan",
    "OutputTree",
    "STATUS_CODES",
    "ARENA_ALIGNMENT", "entry_name",
]

#: Every arena offset is a multiple of this; a caller's arena should be
#: aligned to it (SIMD-friendly), and must be aligned for its element types.
ARENA_ALIGNMENT = 16

#: Status codes of the entry function: (suffix, value, meaning).  Printed as
#: ``#define <NAME>_<suffix> <value>`` in the header.  Codes 2-4 are used
#: by programs with ADTs, closures and recursion (the object pool).
STATUS_CODES: tuple[tuple[str, int, str], ...] = (
    ("OK", 0, "success"),
    ("ERR_NULL", 1, "a pointer argument is NULL"),
    ("ERR_POOL", 2, "the object pool is exhausted"),
    ("ERR_DEPTH", 3, "the recursion bound is exceeded"),
    ("ERR_MATCH", 4, "no clause of a match applies"),
    ("ERR_VALUE", 5, "a value handed in is not of the expected kind"),
)


@dataclass(frozen=True, slots=True)
class TensorSpec:
    """A model input or output.  ``name`` is the C parameter name (a C
    identifier, unique among the entry's parameters); ``source_name`` the
    name in the program (``%x`` -> ``x``) or ``""``."""

    name: str
    shape: tuple[int, ...]
    dtype: DType
    source_name: str = ""

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    @property
    def nbytes(self) -> int:
        return self.dtype.nbytes(self.size)


@dataclass(frozen=True, slots=True, eq=False)
class ConstantData:
    """A ``static const`` array in the model source, named
    ``<name>_<symbol>``.  ``values`` is a flat NumPy array of the dtype's
    storage (float16 as float16, bool as bool); the renderer prints every
    element bit-exactly."""

    symbol: str
    dtype: DType
    values: np.ndarray
    alignment: int = ARENA_ALIGNMENT

    @property
    def nbytes(self) -> int:
        return self.dtype.nbytes(int(self.values.size))


class ArgKind(enum.Enum):
    INPUT = "input"      # index: position among the model inputs
    OUTPUT = "output"    # index: position among the model outputs
    ARENA = "arena"      # offset: byte offset in the arena
    CONST = "const"      # symbol: ConstantData.symbol


@dataclass(frozen=True, slots=True)
class BufferRef:
    """Where one kernel argument lives."""

    kind: ArgKind
    dtype: DType
    size: int                 # elements
    index: int = 0            # INPUT / OUTPUT position
    offset: int = 0           # ARENA byte offset
    symbol: str = ""          # CONST symbol


@dataclass(frozen=True, slots=True)
class KernelCall:
    """One statement of the entry function: ``<kernel>(args...)``.  The
    arguments match the kernel's ``params`` one to one."""

    kernel: str
    args: tuple[BufferRef, ...]
    #: the imported model's nodes this call computes (see KernelInfo.nodes)
    nodes: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class KernelInfo:
    """metadata.json's record of one kernel: its C name, the IR it came
    from (the fused group printed, one line per operator), the operator
    names in it and the names of the imported model's nodes fused into it
    (ONNX node names, TFLite output tensors; empty for Relay text)."""

    name: str
    source: str
    ops: tuple[str, ...]
    anchor: str | None = None
    nodes: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class ArenaTensor:
    """One intermediate tensor in the arena: bytes ``[offset, offset +
    nbytes)`` from the call ``first`` that writes it to the call ``last``
    that reads it (indices into :attr:`ModelPlan.calls`, inclusive)."""

    key: str
    offset: int
    nbytes: int
    first: int
    last: int


@dataclass(frozen=True, slots=True)
class ArenaOverlap:
    """Call ``call`` writes its output argument ``out_arg`` over its input
    arguments ``in_args`` (positions in the call's ``args``; one tensor,
    ``inp``), placed at ``offset(inp) + shift`` bytes: the kernel's loop
    nest never reads an input byte after writing an output byte over it
    (:mod:`aot.emit.plan.overlap`)."""

    call: int
    out_arg: int
    in_args: tuple[int, ...]
    out: str
    inp: str
    shift: int


@dataclass(frozen=True, slots=True)
class LoopSpan:
    """Calls ``[begin, end)`` repeat (a C ``for (;;)``); after call ``test
    - 1`` (before call ``test``) the loop is left when the one-element
    bool tensor ``cond`` holds ``exit_when``.  Spans nest properly
    (:mod:`aot.emit.lower.static_loop`)."""

    begin: int
    test: int
    end: int
    cond: BufferRef
    exit_when: bool


@dataclass(frozen=True, slots=True)
class BranchSpan:
    """Calls ``[begin, mid)`` run when the one-element bool tensor ``cond``
    is true (a C ``if``), calls ``[mid, end)`` when it is false; both
    parts are non-empty.  Branches and loops nest properly, a loop inside a
    branch within one part; a loop and a branch of the same span are the
    branch inside the loop (:mod:`aot.emit.lower.static_if`)."""

    begin: int
    mid: int
    end: int
    cond: BufferRef


OutputTree = Union[int, tuple["OutputTree", ...]]


@dataclass(frozen=True, slots=True, eq=False)
class ModelPlan:
    name: str
    inputs: tuple[TensorSpec, ...]
    outputs: tuple[TensorSpec, ...]
    #: the result's nesting: an output index, or a tuple of subtrees
    output_tree: OutputTree
    kernels: tuple[Kernel, ...]          # names already prefixed with the model name
    kernel_info: tuple[KernelInfo, ...]  # one per kernel, same order
    calls: tuple[KernelCall, ...]        # the entry function's body, in order
    constants: tuple[ConstantData, ...]
    arena_bytes: int
    #: the liveness lower bound with the overlaps the kernels allow
    arena_lower_bound_bytes: int
    pool_bytes: int = 0
    arena: str = "caller"                # "caller" or "static"
    #: free-form extra metadata (planner algorithm, pass timings, ...)
    extra: tuple[tuple[str, object], ...] = ()
    #: the liveness lower bound when tensors overlap only whole (an
    #: elementwise kernel writing over its input), the bound before overlaps
    arena_whole_tensor_bound_bytes: int = 0
    #: every arena tensor's place and lifetime (dataflow models)
    arena_tensors: tuple[ArenaTensor, ...] = ()
    #: the overlapping arguments the plan uses, each proven by its kernel
    arena_overlaps: tuple[ArenaOverlap, ...] = ()
    #: a whole-language program's functions and entry
    #: (:class:`aot.emit.plan.program.ProgramPart`); None for dataflow models
    program: Any = None
    #: the loops over calls (dataflow models with static loops)
    loops: tuple[LoopSpan, ...] = ()
    #: the branches over calls (dataflow models with static ifs)
    branches: tuple[BranchSpan, ...] = ()

    @property
    def constant_bytes(self) -> int:
        return sum(c.nbytes for c in self.constants)


def entry_name(name: str) -> str:
    """The C name of a model's entry function."""
    return f"{name}_run"
