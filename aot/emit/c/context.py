"""From a :class:`~aot.emit.plan.model.ModelPlan` to the context the
templates print, and to ``metadata.json``'s content.

Design note
-----------
The templates (``templates/model.h.j2``, ``model.c.j2``, ``model.mk.j2``)
only print: every string they show -- prototypes, macro lines, kernel
text, constant initialisers, call statements -- is computed here, so the
C's exact spelling is testable Python and the templates stay skeletons.
Nothing here decides anything the plan did not: names, offsets, the call
order and the kernels come from the plan; this module spells them and
checks that the plan is consistent (a failed check is an
``AssertionError``: a bug in whoever built the plan, not a user error).

Spelling rules:

* **Entry function.**  ``int32_t <name>_run(const T *in..., T *out...,
  void *arena)`` (no ``arena`` in static-arena mode).  Arena arguments are
  ``(T *)((unsigned char *)arena + offset)`` -- no local variables, so no
  parameter name can collide with one.  Every pointer is checked against
  NULL first (``<NAME>_ERR_NULL``); the arena may be NULL when the model
  needs none (``<NAME>_ARENA_BYTES == 0``).
* **Static arena.**  C99 has no ``alignas``; the arena is a union of the
  byte array with ``uint64_t``, ``double``, ``long double`` and ``void *``
  members, so it is aligned to the strictest of those types (8 or 16 bytes
  on the usual targets): at least the alignment of every element type.
  It is never a zero-size array: a model that needs no arena gets none.
* **Constants** are ``static const`` arrays, every element bit-exact
  (:mod:`aot.emit.c.tables`: formatted by NumPy, in the spelling compilers
  parse fastest): float32/float64 tables as unions of their IEEE-754 bit
  patterns (``uint32_t``/``uint64_t``, decimal) and the float array the
  kernels read, NaN payloads included, float16 as ``uint16_t`` bit
  patterns, integers in decimal (``INT32_MIN`` and 64-bit values spelled
  as :func:`~aot.emit.c.printer.format_int` does), bool as 0/1.  C99 cannot
  ask for more alignment than the element type's, so that is all a
  constant table promises (``ConstantData.alignment`` is recorded in the
  metadata, not enforced).
* **Build flags.**  :data:`MODEL_CFLAGS` go into ``<name>.mk`` and
  :data:`BUILD_FLAGS` into aot's own builds: ``-ffp-contract=off`` because
  kernels must round every float operation separately to match the
  interpreter bit for bit (clang contracts ``a * b + c`` into an FMA by
  default), ``-fno-strict-aliasing`` because the arena reuses the same
  bytes for tensors of different element types, and kernels of one model
  are inlined into one function where type-based alias analysis could
  move a load of a dead tensor past the store of its successor.
"""

from __future__ import annotations

import math
import textwrap
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from ...version import __version__ as AOT_VERSION
from ...ir.dtype import DType, to_storage
from .helpers import HELPERS, MACROS
from .types import c_storage_type
from .objects import print_entry_body, print_functions, print_prototypes, print_statics
from .program_api import (api_definitions, api_prototypes, context_prototypes, context_typedef,
                          entry_parameters)
from .printer import format_int, printed_kernel
from .stack_graph import stack_graph
from .tables import (BITS_TYPES, bytes_form_macro, integers_file, representation_checks,
                     split_declaration, table)
from ..kernel.ir import Kernel
from ..plan.model import (ARENA_ALIGNMENT, STATUS_CODES, ArgKind, BranchSpan, BufferRef,
                          ConstantData, KernelInfo, LoopSpan, ModelPlan, OutputTree, TensorSpec,
                          entry_name)

__all__ = [
    "METADATA_VERSION", "BUILD_FLAGS", "MODEL_CFLAGS", "HELPERS_HEADER", "RUNTIME_FILES",
    "StatusMacro", "TensorView", "ConstantView", "KernelView", "RenderContext",
    "build_context", "build_metadata", "float_literal", "constant_literals",
    "entry_name", "entry_prototype", "context_entry_prototype", "has_context", "macro_prefix",
    "ContextView",
]

#: Version of the artifact format (metadata.json's ``version``).
METADATA_VERSION = 1
#: Flags aot adds when it builds an artifact (see the module note).
BUILD_FLAGS: tuple[str, ...] = ("-ffp-contract=off", "-fno-strict-aliasing")
#: ``<NAME>_CFLAGS`` of the make fragment.
MODEL_CFLAGS: tuple[str, ...] = ("-std=c99", *BUILD_FLAGS)
HELPERS_HEADER = "aot_kernel_helpers.h"
RUNTIME_HEADER = "aot_runtime.h"
CONTEXT_HEADER = "aot_context.h"
#: Files of runtime_c/ every artifact carries (in DIR/runtime_c/).
RUNTIME_FILES: tuple[str, ...] = (HELPERS_HEADER,)
#: ... and of a whole-language program's
PROGRAM_RUNTIME_FILES: tuple[str, ...] = (HELPERS_HEADER, CONTEXT_HEADER, RUNTIME_HEADER)

#: Output lines are kept below this width where the content allows.
LINE_WIDTH = 100
_INDENT = "    "


# ------------------------------------------------------------ context types

@dataclass(frozen=True, slots=True)
class StatusMacro:
    name: str        # "ERR_NULL"
    macro: str       # "MODEL_ERR_NULL"
    value: int
    meaning: str
    line: str        # the #define line


@dataclass(frozen=True, slots=True)
class TensorView:
    """A model input or output as the header and the entry see it."""
    kind: str                 # "input" or "output"
    index: int
    name: str                 # C parameter name
    source_name: str
    dtype: str
    c_type: str
    shape: tuple[int, ...]
    size: int
    nbytes: int
    parameter: str            # "const float *x"
    description: str          # "float32[2][3]" / "float32 scalar"
    macro_lines: tuple[str, ...]
    comment: str              # the comment line above the macros


@dataclass(frozen=True, slots=True)
class ConstantView:
    c_name: str
    symbol: str
    dtype: str
    c_type: str
    length: int               # declared array length (>= 1)
    text: str                 # the declaration(s) (aot.emit.c.tables.declaration)
    comment: str
    #: float tables: the type of the stored bit patterns (aot.emit.c.tables)
    bits_type: str | None = None
    #: also written as a string (a large table; aot.emit.c.tables)
    as_bytes: bool = False
    #: a large table's integer form, for the tables file (aot.emit.c.tables)
    integers: str = ""


@dataclass(frozen=True, slots=True)
class KernelView:
    name: str
    comment: str              # C comment naming the IR the kernel came from
    text: str                 # the printed kernel (function definition)


@dataclass(frozen=True, slots=True)
class RenderContext:
    """Everything the three templates print."""
    name: str
    NAME: str
    generator: str
    header_name: str
    source_name: str
    makefile_name: str
    library_name: str
    guard: str
    status_macros: tuple[StatusMacro, ...]
    memory_lines: tuple[str, ...]
    count_lines: tuple[str, ...]
    inputs: tuple[TensorView, ...]
    outputs: tuple[TensorView, ...]
    entry_name: str
    entry_doc: tuple[str, ...]            # lines of the comment before the prototype
    entry_prototype: str                  # possibly wrapped, without ';': the function
                                          # entry_body is the body of (run_ctx or run)
    run_prototype: str                    # <name>_run's prototype, wrapped, without ';'
    arena_mode: str                       # "caller" or "static"
    arena_symbol: str
    arena_bytes: int
    include_helpers: bool
    helpers_used: tuple[str, ...]
    helpers_note: tuple[str, ...]         # comment lines about the helpers
    constants: tuple[ConstantView, ...]
    #: preprocessor checks that float tables' bit patterns mean their values
    table_checks: tuple[str, ...]
    #: the file beside the source with the large tables' integer form
    #: (empty: no large table), and the macro that skips it
    tables_file: str
    tables_macro: str
    kernels: tuple[KernelView, ...]
    entry_body: tuple[str, ...]           # statements, without indentation
    mk_sources: tuple[str, ...]           # artifact-relative
    mk_cflags: str
    mk_memory: tuple[tuple[str, int], ...]  # (suffix, bytes) for <NAME>_<suffix> in the .mk
    runtime_files: tuple[str, ...]
    #: whole-language programs (None for dataflow models): see program_view
    program: Any = None
    #: the reentrant entry's context (None when <name>_run is reentrant)
    context: Any = None
    #: the profiling hook's macro (dataflow models; empty for programs)
    profile_hook: str = ""
    profile_calls: int = 0


@dataclass(frozen=True, slots=True)
class ContextView:
    """The reentrant entry's context, as the templates print it."""
    doc: tuple[str, ...]                  # comment lines above the typedef
    macros: tuple[str, ...]               # #define lines (the size, the stack budget)
    typedef: tuple[str, ...]              # typedef struct <name>_ctx {...} <name>_ctx;
    init_doc: tuple[str, ...]
    init_prototype: str                   # without ';'
    run_doc: tuple[str, ...]
    run_prototype: str                    # <name>_run_ctx, wrapped, without ';'
    definitions: tuple[str, ...]          # source text after the entry


# ----------------------------------------------------------------- names

def macro_prefix(name: str) -> str:
    return name.upper()


def _tensor_parameter(spec: TensorSpec, is_input: bool) -> str:
    const = "const " if is_input else ""
    return f"{const}{c_storage_type(spec.dtype)} *{spec.name}"


def has_context(plan: ModelPlan) -> bool:
    """Whether the model keeps state between the calls of its entry (a
    static arena, an object pool): then it has a reentrant entry
    ``<name>_run_ctx`` on a caller-owned ``<name>_ctx``, and ``<name>_run``
    runs it on a static context."""
    return plan.program is not None or plan.arena == "static"


def _parameters(plan: ModelPlan) -> list[str]:
    if plan.program is not None:
        return entry_parameters(plan.name, plan.program)
    params = [_tensor_parameter(t, True) for t in plan.inputs]
    params += [_tensor_parameter(t, False) for t in plan.outputs]
    if plan.arena == "caller":
        params.append("void *arena")
    return params


def _prototype(head: str, params: list[str], width: int | None) -> str:
    params = params or ["void"]
    if width is None:
        return head + ", ".join(params) + ")"
    return "\n".join(_wrap_list(head, params, ")", width))


def entry_prototype(plan: ModelPlan, width: int | None = None) -> str:
    """``int32_t <name>_run(...)`` without ``;``; wrapped to ``width``
    columns when given."""
    return _prototype(f"int32_t {entry_name(plan.name)}(", _parameters(plan), width)


def context_entry_prototype(plan: ModelPlan, width: int | None = None) -> str:
    """``int32_t <name>_run_ctx(<name>_ctx *context, ...)`` without ``;``."""
    return _prototype(f"int32_t {entry_name(plan.name)}_ctx(",
                      [f"{plan.name}_ctx *context", *_parameters(plan)], width)


def _arguments(plan: ModelPlan) -> list[str]:
    """The entry's parameter names, in order."""
    return [p.rsplit("*", 1)[-1].strip() for p in _parameters(plan)]


def _wrap(head: str, items: Sequence[str], separator: str, tail: str, width: int
          ) -> list[str]:
    """``head`` + items joined by ``separator`` + ``tail``, broken after a
    separator so lines stay within ``width``; continuation lines are
    aligned under the first item."""
    lines: list[str] = []
    current = head
    hang = " " * len(head)
    for i, item in enumerate(items):
        piece = item + (separator if i + 1 < len(items) else tail)
        if len(current) + len(piece.rstrip()) > width and current != head:
            lines.append(current.rstrip())
            current = hang
        current += piece
    lines.append(current.rstrip())
    return lines


def _wrap_list(head: str, items: Sequence[str], tail: str, width: int) -> list[str]:
    return _wrap(head, items, ", ", tail, width)


def _describe(spec: TensorSpec) -> str:
    if not spec.shape:
        return f"{spec.dtype} scalar"
    return f"{spec.dtype}" + "".join(f"[{d}]" for d in spec.shape)


def _safe_comment_text(text: str) -> str:
    """Text that cannot end or nest a C comment, form a trigraph, or carry
    non-ASCII bytes."""
    text = text.replace("*/", "* /").replace("/*", "/ *").replace("??", "? ?")
    return "".join(ch if 32 <= ord(ch) < 127 or ch == "\n" else f"<U+{ord(ch):04X}>"
                   for ch in text.replace("\t", "    "))


def _block_comment(lines: Sequence[str]) -> str:
    safe = [_safe_comment_text(line).rstrip() for line in lines]
    safe = [part for line in safe for part in line.split("\n")]
    return "\n".join(["/*"] + [f" * {line}".rstrip() for line in safe] + [" */"])


# ------------------------------------------------------------- literals

def _hex(value: float) -> str:
    """``float.hex`` without trailing zero digits: ``0x1.8p+1``, ``0x1p-2``
    (finite values only; ``float.hex`` always writes ``0x1.`` or ``0x0.``)."""
    mantissa, exponent = value.hex().split("p")
    return f"{mantissa.rstrip('0').rstrip('.')}p{exponent}"


def float_literal(value: float, dtype: DType) -> str:
    """A bit-exact C99 constant expression of a float32/float64 value
    (hex float; NaN and infinities through the AOT_ macros)."""
    assert dtype in (DType.FLOAT32, DType.FLOAT64), dtype
    suffix = "F32" if dtype is DType.FLOAT32 else "F64"
    if math.isnan(value) or math.isinf(value):
        sign = "-" if math.copysign(1.0, value) < 0 else ""
        return f"{sign}AOT_{'NAN' if math.isnan(value) else 'INF'}_{suffix}"
    return _hex(value) + ("f" if dtype is DType.FLOAT32 else "")


#: integer dtypes whose every value prints as plain decimal
_PLAIN_INTS = (DType.INT8, DType.INT16, DType.UINT8, DType.UINT16)


def constant_literals(dtype: DType, values: np.ndarray) -> list[str]:
    """One C literal per element of ``values`` (flat, the dtype's storage).
    Plain Python loops over ``tolist()``: one to two seconds per million
    elements."""
    flat = np.ascontiguousarray(values, dtype=dtype.np).reshape(-1)
    if dtype.is_narrow_float or dtype.packed:  # bits; 4-bit integers: packed bytes
        units = to_storage(flat, dtype)
        return [f"0x{b:0{2 * units.itemsize}x}" for b in units.tolist()]
    if dtype is DType.FLOAT32 or dtype is DType.FLOAT64:
        suffix = "f" if dtype is DType.FLOAT32 else ""
        return [_hex(v) + suffix if math.isfinite(v) else float_literal(v, dtype)
                for v in flat.tolist()]
    if dtype is DType.BOOL:
        return ["1" if v else "0" for v in flat.tolist()]
    if dtype in _PLAIN_INTS:
        return [str(v) for v in flat.tolist()]
    spelled: dict[int, str] = {}
    out = []
    for v in flat.tolist():
        text = spelled.get(v)
        if text is None:
            text = spelled[v] = format_int(v, dtype).text
        out.append(text)
    return out


def _pack(items: Sequence[str], width: int) -> list[str]:
    """Comma-separated items, several per line, lines below ``width``
    (including the indentation the template adds)."""
    lines: list[str] = []
    current = ""
    limit = width - len(_INDENT)
    for i, item in enumerate(items):
        piece = item + ("," if i + 1 < len(items) else "")
        if current and len(current) + 1 + len(piece) > limit:
            lines.append(current)
            current = piece
        else:
            current = f"{current} {piece}" if current else piece
    if current:
        lines.append(current)
    return lines


# ------------------------------------------------------------ the context

def _status_macros(NAME: str) -> tuple[StatusMacro, ...]:
    out = []
    for suffix, value, meaning in STATUS_CODES:
        macro = f"{NAME}_{suffix}"
        out.append(StatusMacro(suffix, macro, value, meaning,
                               f"#define {macro} {value} /* {_safe_comment_text(meaning)} */"))
    return tuple(out)


def _int_macro(value: int) -> str:
    return str(value) if value <= 0x7FFFFFFF else f"{value}u" if value <= 0xFFFFFFFF \
        else f"{value}ul"


def _define(macro: str, value: int | str, comment: str = "") -> str:
    text = f"#define {macro} {_int_macro(value) if isinstance(value, int) else value}"
    return f"{text} /* {_safe_comment_text(comment)} */" if comment else text


def _tensor_view(NAME: str, kind: str, index: int, spec: TensorSpec) -> TensorView:
    prefix = f"{NAME}_{kind.upper()}_{index}"
    lines = [_define(f"{prefix}_SIZE", spec.size, "elements"),
             _define(f"{prefix}_BYTES", spec.nbytes),
             _define(f"{prefix}_NDIM", len(spec.shape))]
    lines += [_define(f"{prefix}_DIM_{axis}", d) for axis, d in enumerate(spec.shape)]
    origin = f" (program name %{spec.source_name})" if spec.source_name else ""
    storage = c_storage_type(spec.dtype)
    note = {DType.BOOL: ", 0 or 1", DType.FLOAT16: ", IEEE binary16 bits",
            DType.BFLOAT16: ", bfloat16 bits", DType.INT4: ", packed two per byte, low nibble "
            "first", DType.UINT4: ", packed two per byte, low nibble first"}.get(
                spec.dtype, f", {spec.dtype} bits" if spec.dtype.is_float8 else "")
    comment = (f"{kind} {index} `{spec.name}`{origin}: {_describe(spec)}, "
               f"as {storage}{note}")
    return TensorView(kind=kind, index=index, name=spec.name, source_name=spec.source_name,
                      dtype=spec.dtype.value, c_type=storage, shape=tuple(spec.shape),
                      size=spec.size, nbytes=spec.nbytes,
                      parameter=_tensor_parameter(spec, kind == "input"),
                      description=_describe(spec), macro_lines=tuple(lines),
                      comment=_safe_comment_text(comment))


def _tree_text(plan: ModelPlan, tree: OutputTree) -> str:
    if isinstance(tree, int):
        return plan.outputs[tree].name
    return "(" + ", ".join(_tree_text(plan, t) for t in tree) + ("," if len(tree) == 1 else "") \
        + ")"


def _entry_doc(plan: ModelPlan, NAME: str, inputs: Sequence[TensorView],
               outputs: Sequence[TensorView]) -> tuple[str, ...]:
    if plan.program is not None:
        return _program_doc(plan, NAME)
    rows: list[tuple[str, str]] = []
    for t in inputs:
        rows.append((t.name, f"input {t.index}: {t.description} (read only)"))
    for t in outputs:
        rows.append((t.name, f"output {t.index}: {t.description} (written completely)"))
    if plan.arena == "caller":
        rows.append(("arena", f"scratch memory: {NAME}_ARENA_BYTES bytes aligned to"))
        rows.append(("", f"{NAME}_ARENA_ALIGN bytes; nothing in it is kept between"))
        rows.append(("", f"calls; may be NULL when {NAME}_ARENA_BYTES is 0"))
    pad = max((len(r[0]) for r in rows), default=0)
    lines = [f"Run model `{plan.name}`.", ""]
    lines += [f"  {n.ljust(pad)}  {text}".rstrip() for n, text in rows]
    lines += [
        "",
        "Tensors are dense row-major arrays of the element type (bool is uint8_t",
        "holding 0 or 1, float16 is uint16_t holding IEEE binary16 bits); a",
        "scalar is a pointer to one element.  Outputs must not overlap the",
        "inputs, each other or the arena.",
    ]
    if any(DType(t.dtype).packed or DType(t.dtype).bits < 16 and DType(t.dtype).is_float
           or DType(t.dtype) is DType.BFLOAT16 for t in (*inputs, *outputs)):
        lines += ["bfloat16 is uint16_t holding its bits, a float8 format uint8_t; int4",
                  "and uint4 are packed two per byte, element 2k in the low nibble of",
                  "byte k (an array of n of them is (n + 1) / 2 bytes)."]
    if len(plan.outputs) > 1 or not isinstance(plan.output_tree, int):
        lines += textwrap.wrap(f"The result is the tuple {_tree_text(plan, plan.output_tree)}.",
                               width=LINE_WIDTH - 4, break_on_hyphens=False)
    if plan.arena == "static":
        lines += ["",
                  f"The arena ({NAME}_ARENA_BYTES bytes) is in a static {plan.name}_ctx of this",
                  "library: calls must not overlap (not reentrant, not thread safe).",
                  f"{entry_name(plan.name)}_ctx() is the reentrant entry: the same call on a",
                  "context of the caller's."]
    lines += ["",
              f"Returns {NAME}_OK (0), or {NAME}_ERR_NULL when a pointer argument is NULL."]
    return tuple(lines)


def _program_doc(plan: ModelPlan, NAME: str) -> tuple[str, ...]:
    p = plan.program
    rows = [(x.name, f"input: {x.description}" + (" (read only)" if x.is_tensor else
                                                  " (a handle, borrowed)"))
            for x in p.inputs]
    rows += [(x.name, f"output: {x.description}" + (" (written completely)" if x.is_tensor else
                                                    " (receives a handle you own)"))
             for x in p.outputs]
    pad = max((len(r[0]) for r in rows), default=0)
    lines = [f"Run program `{plan.name}`.", ""]
    lines += [f"  {n.ljust(pad)}  {text}".rstrip() for n, text in rows]
    lines += ["",
              "Tensors are dense row-major arrays of the element type; tuples are",
              "flattened into their leaves.  Values live in the object pool",
              f"({NAME}_POOL_BYTES bytes) of a static {plan.name}_ctx of this library:",
              "calls must not overlap (not reentrant, not thread safe);",
              f"{entry_name(plan.name)}_ctx() is the reentrant entry.  Returns {NAME}_OK,",
              f"{NAME}_ERR_NULL, {NAME}_ERR_POOL (the pool is exhausted), {NAME}_ERR_DEPTH",
              f"(more than {p.max_depth} nested calls, or more than the context's stack",
              f"budget, {NAME}_STACK_BYTES by default, of stack below the entry),",
              f"{NAME}_ERR_MATCH (no clause of a match applies).  On an error the",
              "value outputs are NULL and the pool holds nothing of the call."]
    return tuple(lines)


def _kernel_view(kernel: Kernel, info: KernelInfo) -> tuple[KernelView, tuple[str, ...]]:
    printed = printed_kernel(kernel)
    lines = [f"{kernel.name}: from"]
    lines += [f"    {line}" for line in info.source.strip("\n").split("\n")]
    ops = ", ".join(info.ops) if info.ops else "none"
    lines.append(f"ops: {ops}; anchor: {info.anchor or 'none'}")
    if info.nodes:
        lines.append(f"model nodes: {', '.join(info.nodes)}")
    return KernelView(kernel.name, _block_comment(lines), printed.text.rstrip("\n")), \
        printed.helpers


def _constant_view(plan: ModelPlan, c: ConstantData) -> ConstantView:
    rendered = table(c.dtype, c.values)
    count = int(c.values.size)
    what = f"{count} x {c.dtype} ({c.nbytes} bytes)"
    if count == 0:
        what = f"0 x {c.dtype}: one padding element (C has no zero-size arrays)"
    elif rendered.bits_type is not None:
        what += f", as {rendered.bits_type} bit patterns"
    text, integers = split_declaration(f"{plan.name}_{c.symbol}", rendered, plan.name)
    return ConstantView(c_name=f"{plan.name}_{c.symbol}", symbol=c.symbol,
                        dtype=c.dtype.value, c_type=rendered.c_type,
                        length=rendered.length, text=text,
                        comment=_safe_comment_text(f"{c.symbol}: {what}"),
                        bits_type=rendered.bits_type, as_bytes=rendered.bytes_body is not None,
                        integers=integers)


def _arena_arg(plan: ModelPlan, ref: BufferRef) -> str:
    base = "context->arena.bytes" if plan.arena == "static" else "(unsigned char *)arena"
    return f"({c_storage_type(ref.dtype)} *)({base} + {ref.offset})"


def _call_arg(plan: ModelPlan, ref: BufferRef) -> str:
    if ref.kind is ArgKind.INPUT:
        return plan.inputs[ref.index].name
    if ref.kind is ArgKind.OUTPUT:
        return plan.outputs[ref.index].name
    if ref.kind is ArgKind.CONST:
        return f"{plan.name}_{ref.symbol}"
    return _arena_arg(plan, ref)


def _control_lines(plan: ModelPlan, spans: Sequence[LoopSpan | BranchSpan], index: int,
                   depth: int, body: list[str]) -> int:
    """The loop and branch braces and tests before call ``index`` (spans
    outermost first), appended to ``body``; returns the new depth."""
    for sp in reversed(spans):           # innermost first: spans nest
        if sp.end == index:
            depth -= 1
            body.append(_INDENT * depth + "}")
    for sp in spans:                     # outermost first
        if isinstance(sp, BranchSpan):
            if sp.begin == index:
                body.append(f"{_INDENT * depth}if (({_call_arg(plan, sp.cond)})[0]) {{")
                depth += 1
            elif sp.mid == index:
                body.append(_INDENT * (depth - 1) + "} else {")
            continue
        if sp.begin == index:            # a loop is opened before its test
            body.append(_INDENT * depth + "for (;;) {")
            depth += 1
        if sp.test == index:
            test = "" if sp.exit_when else "!"
            body += [f"{_INDENT * depth}if ({test}({_call_arg(plan, sp.cond)})[0]) {{",
                     f"{_INDENT * (depth + 1)}break;", f"{_INDENT * depth}}}"]
    return depth


def _entry_body(plan: ModelPlan, NAME: str) -> tuple[str, ...]:
    width = LINE_WIDTH - len(_INDENT)
    pointers = [t.name for t in (*plan.inputs, *plan.outputs)]
    uses_arena = any(ref.kind is ArgKind.ARENA for call in plan.calls for ref in call.args)
    body: list[str] = []
    if plan.arena == "static":
        pointers.insert(0, "context")
    if plan.arena == "caller":
        if uses_arena:
            pointers.append("arena")
        else:
            body.append("(void)arena;")
    if pointers:
        body += _wrap("if (", [f"{p} == NULL" for p in pointers], " || ", ") {", width)
        body += [f"{_INDENT}return {NAME}_ERR_NULL;", "}"]
    depth = 0
    # loops and branches, outermost first (at one span, the loop outside)
    spans: list[LoopSpan | BranchSpan] = sorted(
        (*plan.loops, *plan.branches),
        key=lambda sp: (sp.begin, -sp.end, isinstance(sp, BranchSpan)))
    for index in range(len(plan.calls) + 1):
        depth = _control_lines(plan, spans, index, depth, body)
        if index == len(plan.calls):
            break
        call = plan.calls[index]
        args = [_call_arg(plan, ref) for ref in call.args]
        pad = _INDENT * depth
        body.append(f"{pad}{NAME}_PROFILE_CALL({index});")
        body += [pad + line for line in (
            _wrap_list(f"{call.kernel}(", args, ");", width - len(pad)) if args
            else [f"{call.kernel}();"])]
    body.append(f"{NAME}_PROFILE_CALL({len(plan.calls)});")
    body.append(f"return {NAME}_OK;")
    return tuple(body)


def _arena_union(member: str, nbytes: int) -> list[str]:
    return ["    union {", f"        unsigned char bytes[{nbytes}];",
            "        uint64_t align_u64;", "        double align_f64;",
            "        long double align_long_double;", "        void *align_pointer;",
            f"    }} {member};"]


def context_view(plan: ModelPlan, NAME: str) -> ContextView:
    """The context of a model with state (:func:`has_context`)."""
    name = plan.name
    run = entry_name(name)
    size = _define(f"{NAME}_CTX_BYTES", f"(sizeof({name}_ctx))", "bytes of one context")
    call = f"{run}_ctx(%s, {', '.join(_arguments(plan))})" if _parameters(plan) \
        else f"{run}_ctx(%s)"
    state = ("the object pool, the recursion depth and the stack budget" if plan.program
             else "the arena")
    common = (
        f"A context of the model: the state one call of {run}_ctx() works in ({state}).  "
        f"Give every thread or RTOS task that runs the model a context of its own "
        f"({NAME}_CTX_BYTES bytes: static, on a stack, in the task's memory) and call "
        f"{run}_ctx() on it: calls on different contexts may overlap, calls on one "
        f"context must not.  The members are private.  {run}() runs on a static "
        f"context of the library (not reentrant).")
    if plan.program is not None:
        p = plan.program
        stack = p.stack_bytes
        macros: tuple[str, ...] = (
            size,
            _define(f"{NAME}_STACK_BYTES", stack, "default stack budget of a call below the entry"),
            _define(f"{NAME}_MAX_DEPTH", p.max_depth, "bound on nested calls"))
        doc = tuple(textwrap.wrap(
            common + "  Value handles belong to the context whose pool holds them: pass "
            "them only to the _ctx functions of that context.", width=74))
        typedef = tuple(context_typedef(name, plan.pool_bytes))
        init_doc: tuple[str, ...] = tuple(textwrap.wrap(
            "Prepare a context (once, before its first use; again to empty it when it "
            "holds no live handle).  stack_bytes bounds the stack the program's calls may "
            f"use below the frame of {run}_ctx(): a non-tail call past it returns "
            f"{NAME}_ERR_DEPTH instead of overflowing the stack.  Give the thread's stack "
            "size less what its code uses above the entry and a few KiB of headroom (the "
            f"last frame and its kernels); {NAME}_STACK_BYTES is the default (the static "
            "context's).", width=74))
        init = context_prototypes(name)[0].rstrip(";")
        definitions: tuple[str, ...] = (
            f"{entry_prototype(plan, LINE_WIDTH)}\n{{\n"
            f"    return {call % f'{name}_static_context()'};\n}}",)
    else:
        macros = (size,)
        doc = tuple(textwrap.wrap(common, width=74))
        typedef = (f"typedef struct {name}_ctx {{",
                   *(_arena_union("arena", plan.arena_bytes) if plan.arena_bytes else
                     ["    unsigned char unused;  /* the model needs no arena */"]),
                   f"}} {name}_ctx;")
        init_doc = ("Prepare a context (zeroes it; nothing in it is kept between calls).",)
        init = f"void {name}_ctx_init({name}_ctx *context)"
        definitions = (
            f"{init}\n{{\n    if (context != NULL) {{\n"
            "        memset(context, 0, sizeof *context);\n    }\n}",
            f"/* The context of {run}(): a static object of the library (not reentrant). */\n"
            f"static {name}_ctx {name}_static;",
            f"{entry_prototype(plan, LINE_WIDTH)}\n{{\n"
            f"    return {call % f'&{name}_static'};\n}}")
    run_doc = (f"{run}() on the caller's context (prepared by {name}_ctx_init): reentrant.",)
    return ContextView(doc=tuple(_safe_comment_text(x) for x in doc), macros=macros,
                       typedef=typedef, init_doc=init_doc, init_prototype=init,
                       run_doc=run_doc, run_prototype=context_entry_prototype(plan, LINE_WIDTH),
                       definitions=definitions)


def _pool_comment(plan: ModelPlan) -> str:
    """What ``<NAME>_POOL_BYTES`` is and how the compiler sized it."""
    if plan.program is None:
        return "object pool (a dataflow model has none)"
    p = plan.program
    return f"object pool in each context, sized {p.pool_sizing}: {p.pool_reason}"


def _pool_record(plan: ModelPlan) -> dict[str, Any]:
    """metadata.json's ``pool``: its bytes, how they were sized, why."""
    if plan.program is None:
        return {"bytes": 0, "sizing": "none", "reason": "a dataflow model has no object pool"}
    p = plan.program
    return {"bytes": plan.pool_bytes, "sizing": p.pool_sizing, "reason": p.pool_reason}


def build_context(plan: ModelPlan) -> RenderContext:
    """Spell everything the templates print for a verified ``plan``
    (:func:`aot.emit.plan.verify.verify_model_plan`)."""
    name, NAME = plan.name, macro_prefix(plan.name)
    inputs = tuple(_tensor_view(NAME, "input", i, t) for i, t in enumerate(plan.inputs))
    outputs = tuple(_tensor_view(NAME, "output", i, t) for i, t in enumerate(plan.outputs))
    used: set[str] = set()
    kernels = []
    for kernel, info in zip(plan.kernels, plan.kernel_info):
        view, names = _kernel_view(kernel, info)
        kernels.append(view)
        used.update(names)
    constants = tuple(_constant_view(plan, c) for c in plan.constants)
    checks = representation_checks(name, sorted({c.dtype for c in plan.constants
                                                  if c.dtype in BITS_TYPES and c.values.size},
                                                 key=lambda d: d.value),
                                   bytes_form=any(c.as_bytes for c in constants))
    helpers_used = tuple(sorted(used))
    assert set(helpers_used) <= set(HELPERS) | set(MACROS), helpers_used
    if helpers_used:
        note = ["Runtime helpers and macros used (from aot_kernel_helpers.h):"]
        note += _wrap_list("  ", list(helpers_used), "", LINE_WIDTH - 3)
    else:
        note = ["Uses no runtime helper."]
    memory = (
        _define(f"{NAME}_ARENA_BYTES", plan.arena_bytes,
                "scratch memory of one call" + (" (in each context)"
                                                if plan.arena == "static" else "")),
        _define(f"{NAME}_ARENA_ALIGN", ARENA_ALIGNMENT, "required alignment of the arena"),
        _define(f"{NAME}_ARENA_LOWER_BOUND_BYTES", plan.arena_lower_bound_bytes,
                "liveness bound with overlaps"),
        _define(f"{NAME}_ARENA_WHOLE_TENSOR_BOUND_BYTES",
                max(plan.arena_whole_tensor_bound_bytes, plan.arena_lower_bound_bytes),
                "liveness bound of whole tensors"),
        _define(f"{NAME}_POOL_BYTES", plan.pool_bytes, _pool_comment(plan)),
        _define(f"{NAME}_CONSTANT_BYTES", plan.constant_bytes, "constant tables (flash)"),
    )
    counts = (_define(f"{NAME}_NUM_INPUTS", len(plan.inputs)),
              _define(f"{NAME}_NUM_OUTPUTS", len(plan.outputs)))
    return RenderContext(
        name=name, NAME=NAME, generator=f"aot {AOT_VERSION}",
        header_name=f"{name}.h", source_name=f"{name}.c", makefile_name=f"{name}.mk",
        library_name=f"lib{name}.a", guard=f"{NAME}_H_INCLUDED",
        status_macros=_status_macros(NAME), memory_lines=memory, count_lines=counts,
        inputs=inputs, outputs=outputs, entry_name=entry_name(name),
        entry_doc=tuple(_safe_comment_text(line) for line in
                        _entry_doc(plan, NAME, inputs, outputs)),
        entry_prototype=(context_entry_prototype(plan, LINE_WIDTH) if has_context(plan)
                         else entry_prototype(plan, LINE_WIDTH)),
        run_prototype=entry_prototype(plan, LINE_WIDTH),
        arena_mode=plan.arena,
        arena_symbol=f"{name}_arena", arena_bytes=plan.arena_bytes,
        include_helpers=bool(helpers_used), helpers_used=helpers_used,
        helpers_note=tuple(note), constants=constants, table_checks=checks,
        tables_file=integers_file(name) if any(c.as_bytes for c in constants) else "",
        tables_macro=bytes_form_macro(name),
        kernels=tuple(kernels),
        entry_body=(_entry_body(plan, NAME) if plan.program is None
                    else print_entry_body(name, plan.program.objects.entry)),
        mk_sources=(f"src/{name}.c",),
        mk_cflags=" ".join(MODEL_CFLAGS),
        mk_memory=(("ARENA_BYTES", plan.arena_bytes), ("ARENA_ALIGN", ARENA_ALIGNMENT),
                   ("POOL_BYTES", plan.pool_bytes), ("CONSTANT_BYTES", plan.constant_bytes)),
        runtime_files=RUNTIME_FILES if plan.program is None else PROGRAM_RUNTIME_FILES,
        program=None if plan.program is None else program_view(plan),
        context=context_view(plan, NAME) if has_context(plan) else None,
        profile_hook=f"{NAME}_PROFILE_CALL" if plan.program is None else "",
        profile_calls=len(plan.calls))


def tables_file_text(ctx: RenderContext) -> str:
    """The large tables' portable integer form (``ctx.tables_file``), which
    the source includes only where ``<NAME>_TABLES_AS_BYTES`` is 0: a
    compiler that reads the string form never opens it, where skipping it
    in the source cost the preprocessor 0.3 s per 100 MB of C."""
    head = (f"/*\n * {ctx.tables_file} -- model `{ctx.name}`, generated by {ctx.generator}.  "
            "Do not edit.\n *\n"
            f" * The large constant tables of {ctx.source_name} as integers, for compilers\n"
            " * that do not read their string form: included by it where\n"
            f" * {ctx.tables_macro} is 0, not compiled on its own.\n */\n")
    return head + "".join(f"\n/* {c.comment} */\n{c.integers}"
                          for c in ctx.constants if c.integers)


# ------------------------------------------------------------- metadata

def _jsonable(value: Any, where: str) -> Any:
    if isinstance(value, (str, bool, int, float)) or value is None:
        return value
    if isinstance(value, (tuple, list)):
        return [_jsonable(v, where) for v in value]
    if isinstance(value, dict):
        return {str(k): _jsonable(v, where) for k, v in value.items()}
    if isinstance(value, np.generic):
        return value.item()
    raise AssertionError(f"{where}: {value!r} cannot go into metadata.json")


def _tensor_record(view: TensorView) -> dict[str, Any]:
    return {"index": view.index, "name": view.name, "source_name": view.source_name,
            "shape": list(view.shape), "dtype": view.dtype, "c_type": view.c_type,
            "size": view.size, "bytes": view.nbytes}


def build_metadata(plan: ModelPlan, ctx: RenderContext) -> dict[str, Any]:
    """metadata.json's content (the keys of the layout contract and more)."""
    extra = {}
    for key, value in plan.extra:
        assert key not in extra, f"duplicate extra metadata key {key!r}"
        extra[key] = _jsonable(value, f"extra[{key!r}]")
    return {
        "version": METADATA_VERSION,
        "generator": ctx.generator,
        "name": plan.name,
        "inputs": [_tensor_record(t) for t in ctx.inputs],
        "outputs": [_tensor_record(t) for t in ctx.outputs],
        "output_tree": _jsonable(plan.output_tree, "output_tree"),
        "arena": plan.arena,
        "arena_align": ARENA_ALIGNMENT,
        "arena_bytes": plan.arena_bytes,
        "arena_lower_bound_bytes": plan.arena_lower_bound_bytes,
        "arena_whole_tensor_bound_bytes": max(plan.arena_whole_tensor_bound_bytes,
                                              plan.arena_lower_bound_bytes),
        "arena_tensors": [{"key": t.key, "offset": t.offset, "bytes": t.nbytes,
                           "first_call": t.first, "last_call": t.last}
                          for t in plan.arena_tensors],
        "arena_overlaps": [{"call": o.call, "out": o.out, "inp": o.inp, "shift": o.shift,
                            "out_arg": o.out_arg, "in_args": list(o.in_args)}
                           for o in plan.arena_overlaps],
        "pool_bytes": plan.pool_bytes,
        "pool": _pool_record(plan),
        **({"loops": [{"begin": lp.begin, "test": lp.test, "end": lp.end,
                       "exit_when": lp.exit_when} for lp in plan.loops]} if plan.loops else {}),
        **({"branches": [{"begin": br.begin, "mid": br.mid, "end": br.end}
                         for br in plan.branches]} if plan.branches else {}),
        "constant_bytes": plan.constant_bytes,
        "entry": {"name": ctx.entry_name, "prototype": entry_prototype(plan) + ";",
                  "returns": "int32_t",
                  **({} if ctx.context is None else {"context": {
                      "type": f"{plan.name}_ctx", "init": f"{plan.name}_ctx_init",
                      "init_prototype": ctx.context.init_prototype + ";",
                      "name": f"{ctx.entry_name}_ctx",
                      "prototype": context_entry_prototype(plan) + ";"}})},
        "status_codes": [{"name": s.name, "macro": s.macro, "value": s.value,
                          "meaning": s.meaning} for s in ctx.status_macros],
        "kernels": [{"name": info.name, "source": info.source, "ops": list(info.ops),
                     "anchor": info.anchor, "nodes": list(info.nodes)}
                    for info in plan.kernel_info],
        "calls": [{"kernel": call.kernel, "nodes": list(call.nodes)} for call in plan.calls],
        "constants": [{"symbol": c.symbol, "c_name": f"{plan.name}_{c.symbol}",
                       "dtype": c.dtype.value, "size": int(c.values.size), "bytes": c.nbytes,
                       "alignment": c.alignment} for c in plan.constants],
        "helpers": list(ctx.helpers_used),
        "c_flags": list(MODEL_CFLAGS),
        "files": {
            "header": f"include/{ctx.header_name}",
            "sources": list(ctx.mk_sources),
            "makefile": ctx.makefile_name,
            "library": f"lib/{ctx.library_name}",
            "runtime": [f"runtime_c/{f}" for f in ctx.runtime_files],
        },
        "extra": extra,
        "stack": stack_graph(plan),
        **({} if plan.program is None else {"backend": "program",
                                            "program": program_metadata(plan)}),
    }


# ------------------------------------------------------ whole programs

@dataclass(frozen=True, slots=True)
class ProgramView:
    """What the templates print for a whole-language program."""
    value_typedef: str
    api_prototypes: tuple[str, ...]
    ctor_macros: tuple[str, ...]
    kind_macros: tuple[str, ...]
    statics: tuple[str, ...]
    api: tuple[str, ...]
    prototypes: tuple[str, ...]
    functions: tuple[str, ...]


def program_view(plan: ModelPlan) -> ProgramView:
    p = plan.program
    NAME = macro_prefix(plan.name)
    ctors = tuple(_define(f"{NAME}_CTOR_{cname}", cid, f"{adt}.{cname}: tag {tag}, {arity} fields")
                  for cid, adt, cname, tag, arity in p.constructors)
    kinds = tuple(_define(f"{NAME}_KIND_{k}", v) for k, v in
                  (("TENSOR", 1), ("ADT", 2), ("TUPLE", 3), ("CLOSURE", 4), ("REF", 5)))
    return ProgramView(
        value_typedef=f"typedef struct aot_obj {plan.name}_value;",
        api_prototypes=tuple(api_prototypes(plan.name)), ctor_macros=ctors, kind_macros=kinds,
        statics=print_statics(plan.name, p.objects),
        api=tuple(api_definitions(plan.name, p, plan.pool_bytes)),
        prototypes=print_prototypes(p.objects), functions=print_functions(plan.name, p.objects))


def program_metadata(plan: ModelPlan) -> dict[str, Any]:
    p = plan.program
    def leaf(x):
        rec = {"name": x.name, "kind": "tensor" if x.is_tensor else "value",
               "type": x.type_json, "description": x.description}
        if x.is_tensor:
            rec.update(shape=list(x.spec.shape), dtype=x.spec.dtype.value,
                       c_type=c_storage_type(x.spec.dtype), bytes=x.spec.nbytes)
        return rec
    return {"inputs": [leaf(x) for x in p.inputs], "outputs": [leaf(x) for x in p.outputs],
            "max_depth": p.max_depth, "stack_bytes": p.stack_bytes,
            "types": _jsonable(p.types, "types"),
            "constructors": [{"id": i, "adt": a, "name": n, "tag": t, "arity": k}
                             for i, a, n, t, k in p.constructors]}
