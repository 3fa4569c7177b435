"""The object IR: a whole-language program as functions over the object
runtime (``runtime_c/aot_runtime.h``), as data.

Design note
-----------
:mod:`aot.emit.lower.program` lowers a typed, fused module to this IR,
:mod:`.verify` checks its reference counting, and
:mod:`aot.emit.c.objects` prints it -- the same lower / verify / print
split as the kernel IR (:mod:`aot.emit.kernel`).  Nothing here spells C:
values name C locals and symbols, statements say what happens to them.

**Values** (:data:`Value`) are ``aot_obj`` pointers: a local (:class:`Var`:
a parameter alias ``aN``, an owned temporary ``tN``, a local ``bN``,
``self``), a field of a cell (:class:`Field`), a static object
(:class:`StaticRef`, possibly through its ``volatile`` pointer) or an
output slot of the entry (:class:`Deref`, a root for cycle collection).

**Ownership.**  A function's *temporaries* (``Function.temps``) start NULL,
hold at most one reference each and are released by the function's
``cleanup`` (the code after ``done:``), which every exit goes through: a
:class:`Return`, a :class:`Raise`, the failure edge of an allocation or a
call (the status is set and control jumps to ``done``).  Its *locals*
(``Function.locals``) are not released by the cleanup: a local that takes a
reference (:class:`Retain`, :class:`Take`) must hand it on (to a
:class:`TailJump`) or :class:`Release` it before any exit.
:class:`TailJump` (a self tail call as a loop) releases every temporary
and sets it to NULL, releases the parameters when they are owned (after a
first jump), makes the given locals the new parameters and jumps to the
top.  :mod:`.verify` checks these rules on every path.

**Kinds of code.**  A :class:`Function` is a global function
(``GLOBAL``: C parameters ``p0..``), the code of a function literal
(``CLOSURE``: ``self`` and ``args``) or the entry (``ENTRY``: its body only;
the printer spells its signature from the plan).  :class:`ForwardCode` (a
global used as a closure) and :class:`ConstructorCode` (a constructor used
as a function) are closure codes of a fixed shape.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Union

from ...ir.dtype import DType

__all__ = [
    "ObjectIRError", "CellKind", "Status", "FunctionKind",
    "Var", "Field", "StaticRef", "Deref", "Value",
    "AllocTensor", "AllocCell", "SetField", "SetCode", "Retain", "Take", "Release", "Clear",
    "TensorArg", "TensorOut", "CallKernel", "CallFunction", "CallClosure", "If", "Switch",
    "Raise", "Return", "TailJump", "CheckPointers", "ClearOutput", "BeginCall", "CopyIn",
    "CopyOut", "StoreOutput", "ReleaseParams", "Leave", "CollectCycles", "EndCall",
    "Stmt", "Block", "Function", "ForwardCode", "ConstructorCode", "Code", "StaticObject",
    "ObjectProgram",
]


class ObjectIRError(AssertionError):
    """The object IR breaks a rule (a bug in the lowering, not a user error)."""


class CellKind(enum.Enum):
    TENSOR = "tensor"
    ADT = "adt"
    TUPLE = "tuple"
    CLOSURE = "closure"
    REF = "ref"


class Status(enum.Enum):
    """Why a :class:`Raise` leaves the function."""
    MATCH = "match"          # no clause of a match applies
    BAD_TAG = "bad tag"      # a tag the type does not have


class FunctionKind(enum.Enum):
    GLOBAL = "global"
    CLOSURE = "closure"
    ENTRY = "entry"


# ----------------------------------------------------------------- values

@dataclass(frozen=True, slots=True)
class Var:
    name: str


@dataclass(frozen=True, slots=True)
class Field:
    base: "Value"
    index: int


@dataclass(frozen=True, slots=True)
class StaticRef:
    """A static object; ``indirect``: read through its ``volatile`` pointer."""
    symbol: str
    indirect: bool = False


@dataclass(frozen=True, slots=True)
class Deref:
    """The object an output pointer of the entry points to."""
    pointer: str


Value = Union[Var, Field, StaticRef, Deref]


# ------------------------------------------------------------- statements

@dataclass(frozen=True, slots=True)
class AllocTensor:
    """``dst`` := a fresh pool tensor of ``nbytes`` (may fail: to ``done``)."""
    dst: str
    nbytes: int


@dataclass(frozen=True, slots=True)
class AllocCell:
    """``dst`` := a fresh cell with ``nfields`` NULL fields (may fail)."""
    dst: str
    kind: CellKind
    tag: int
    nfields: int


@dataclass(frozen=True, slots=True)
class SetField:
    """Field ``index`` of ``obj`` := ``value``, retained."""
    obj: Value
    index: int
    value: Value


@dataclass(frozen=True, slots=True)
class SetCode:
    """The code of the closure ``obj``."""
    obj: Value
    code: str


@dataclass(frozen=True, slots=True)
class Retain:
    """``dst`` := ``src`` with one more reference (``dst`` owns it)."""
    dst: str
    src: Value


@dataclass(frozen=True, slots=True)
class Take:
    """``dst`` := ``src``, taking over the reference the field holds (the
    field is overwritten next)."""
    dst: str
    src: Field


@dataclass(frozen=True, slots=True)
class Release:
    var: str


@dataclass(frozen=True, slots=True)
class Clear:
    """``var`` := NULL (after its :class:`Release`)."""
    var: str


@dataclass(frozen=True, slots=True)
class TensorArg:
    value: Value
    dtype: DType


@dataclass(frozen=True, slots=True)
class TensorOut:
    temp: str
    dtype: DType


@dataclass(frozen=True, slots=True)
class CallKernel:
    """A fused kernel: tensor inputs, constant tables (by symbol), outputs
    and scratch (fresh pool tensors held by temporaries)."""
    kernel: str
    inputs: tuple[TensorArg, ...]
    constants: tuple[str, ...]
    outputs: tuple[TensorOut, ...]


@dataclass(frozen=True, slots=True)
class CallFunction:
    """``dst`` := ``function(args)`` (a status other than OK: to ``done``)."""
    dst: str
    function: str
    args: tuple[Value, ...]


@dataclass(frozen=True, slots=True)
class CallClosure:
    dst: str
    closure: Value
    args: tuple[Value, ...]


@dataclass(frozen=True, slots=True)
class If:
    cond: Value
    then: "Block"
    otherwise: "Block"


@dataclass(frozen=True, slots=True)
class Switch:
    """On the constructor tag of ``scrutinee``; ``default`` takes the rest."""
    scrutinee: Value
    cases: tuple[tuple[int, "Block"], ...]
    default: "Block"


@dataclass(frozen=True, slots=True)
class Raise:
    status: Status


@dataclass(frozen=True, slots=True)
class Return:
    """The function's result := ``value``, retained; then ``done``."""
    value: Value


@dataclass(frozen=True, slots=True)
class TailJump:
    """See the module note; ``args`` are locals holding the new arguments."""
    args: tuple[str, ...]


# the entry's own statements (C parameters by name)

@dataclass(frozen=True, slots=True)
class CheckPointers:
    """Return the NULL status at once when one of ``pointers`` is NULL."""
    pointers: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class ClearOutput:
    pointer: str


@dataclass(frozen=True, slots=True)
class BeginCall:
    """Mark the context as inside a call (the value API refuses then)."""


@dataclass(frozen=True, slots=True)
class CopyIn:
    """The elements of tensor ``dst`` := the caller's array ``src``."""
    dst: str
    src: str
    nbytes: int


@dataclass(frozen=True, slots=True)
class CopyOut:
    dst: str
    src: Value
    nbytes: int


@dataclass(frozen=True, slots=True)
class StoreOutput:
    """The caller's handle ``*dst`` := ``src``, retained (the caller owns it)."""
    dst: str
    src: Value


# cleanup statements (after ``done:``)

@dataclass(frozen=True, slots=True)
class ReleaseParams:
    """Release the parameters if a tail jump made them ours."""
    params: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Leave:
    """One call less in progress (the recursion bound)."""


@dataclass(frozen=True, slots=True)
class CollectCycles:
    roots: tuple[Value, ...]


@dataclass(frozen=True, slots=True)
class EndCall:
    """The context is outside a call again, at depth 0."""


Stmt = Union[AllocTensor, AllocCell, SetField, SetCode, Retain, Take, Release, Clear, CallKernel,
             CallFunction, CallClosure, If, Switch, Raise, Return, TailJump, CheckPointers,
             ClearOutput, BeginCall, CopyIn, CopyOut, StoreOutput, ReleaseParams, Leave,
             CollectCycles, EndCall]
Block = tuple[Stmt, ...]


# ------------------------------------------------------------------ code

@dataclass(frozen=True, slots=True)
class Function:
    name: str
    kind: FunctionKind
    comment: str                 # the IR it came from (Relay text)
    params: tuple[str, ...]      # parameter aliases; the entry: its value-handle inputs
    temps: tuple[str, ...]       # owned, released by the cleanup
    locals: tuple[str, ...]      # not released by the cleanup
    loops: bool                  # has a TailJump (parameters may be owned)
    body: Block
    cleanup: Block               # after ``done:``, then ``return st``


@dataclass(frozen=True, slots=True)
class ForwardCode:
    """Closure code calling global function ``target`` with its arguments."""
    name: str
    target: str
    arity: int
    comment: str


@dataclass(frozen=True, slots=True)
class ConstructorCode:
    """Closure code building an ADT cell of ``tag`` from its arguments."""
    name: str
    tag: int
    arity: int
    comment: str


Code = Union[Function, ForwardCode, ConstructorCode]


@dataclass(frozen=True, slots=True)
class StaticObject:
    """A static object: never counted, never freed.  ``data``: a constant
    table's symbol (tensors); ``code``: a closure's code; ``indirect``: used
    through a ``volatile`` pointer (see :mod:`aot.emit.lower.program`)."""
    symbol: str
    kind: CellKind
    comment: str
    tag: int = 0
    nbytes: int = 0
    data: str | None = None
    code: str | None = None
    indirect: bool = False


@dataclass(frozen=True, slots=True)
class ObjectProgram:
    """The functions (in definition order), the order their prototypes are
    declared in, the static objects and the entry."""
    functions: tuple[Code, ...]
    declared: tuple[str, ...]
    statics: tuple[StaticObject, ...]
    entry: Function
