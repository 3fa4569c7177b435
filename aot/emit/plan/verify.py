"""Verification of a :class:`~aot.emit.plan.model.ModelPlan`: the plan is
internally consistent before anything is printed.

A failed check is an ``AssertionError`` naming the plan and what is wrong:
a bug in whoever built the plan, not a user error.  The driver
(:func:`aot.compiler.plan`) runs :func:`verify_model_plan` on every plan
it makes; the printer (:mod:`aot.emit.c`) assumes a verified plan.

What holds after it: names are C identifiers prefixed with the model name,
unique at file scope; every kernel is called and every constant used (an
unused static does not compile warning-free); every call passes arguments
of the kernel's parameter types; inputs and constants are never written;
arena arguments are aligned, inside the arena, and arguments written
through ``restrict`` parameters do not overlap others of the same call;
two arena arguments of one call overlap only as a declared
:class:`~aot.emit.plan.model.ArenaOverlap` -- output over input at the
declared shift -- that the kernel's loop nest allows
(:func:`aot.emit.plan.overlap.safe_shift`, checked again here);
the output tree lists every output once, in order; loops and branches
over calls are well formed (:mod:`aot.emit.plan.verify_control`).
"""

from __future__ import annotations

from ..kernel.ir import BufferScope, Kernel, is_c_identifier
from ..kernel.walk import buffers_in, stored_buffers
from .model import (ARENA_ALIGNMENT, ArenaOverlap, ArgKind, BufferRef, KernelCall, ModelPlan,
                    OutputTree, entry_name)
from .overlap import safe_shift
from .verify_control import check_control

__all__ = ["verify_model_plan"]


def _fail(plan: ModelPlan, message: str) -> None:
    raise AssertionError(f"inconsistent ModelPlan `{plan.name}`: {message}")


def verify_model_plan(plan: ModelPlan) -> None:
    """The plan's internal consistency (asserts: these are bugs upstream)."""
    if plan.arena not in ("caller", "static"):
        _fail(plan, f"arena mode must be 'caller' or 'static', got {plan.arena!r}")
    if len(plan.kernels) != len(plan.kernel_info):
        _fail(plan, "kernels and kernel_info differ in length")
    if plan.arena_bytes < 0 or plan.pool_bytes < 0:
        _fail(plan, "negative arena or pool size")
    _check_names(plan)
    if plan.program is not None:
        return                   # kernels are called from the program's functions
    _check_output_tree(plan)
    used_constants = _check_calls(plan)
    check_control(plan, lambda message: _fail(plan, message))
    known = {f"{plan.name}_{c.symbol}" for c in plan.constants}
    if not used_constants <= known:
        _fail(plan, f"kernels read undefined constant tables {sorted(used_constants - known)}")
    for c in plan.constants:
        if f"{plan.name}_{c.symbol}" not in used_constants:
            _fail(plan, f"constant {c.symbol} is never used (an unused static const "
                        "does not compile warning-free)")


def _check_names(plan: ModelPlan) -> None:
    """File-scope names (entry, arena, kernels, constants) unique and
    prefixed; entry parameters C identifiers that collide with none."""
    file_scope = {entry_name(plan.name), f"{plan.name}_arena", f"{entry_name(plan.name)}_ctx",
                  f"{plan.name}_ctx", f"{plan.name}_ctx_init", f"{plan.name}_static"}
    for k, info in zip(plan.kernels, plan.kernel_info):
        if k.name != info.name:
            _fail(plan, f"kernel {k.name} has the info of {info.name}")
        if not k.name.startswith(plan.name + "_"):
            _fail(plan, f"kernel {k.name} is not prefixed with the model name")
        if k.name in file_scope:
            _fail(plan, f"two file-scope definitions named {k.name}")
        file_scope.add(k.name)
    for c in plan.constants:
        c_name = f"{plan.name}_{c.symbol}"
        if not is_c_identifier(c_name) or c_name in file_scope:
            _fail(plan, f"bad or duplicate constant symbol {c.symbol!r}")
        if c.values.ndim != 1 or c.values.dtype != c.dtype.np:
            _fail(plan, f"constant {c.symbol}'s values must be a flat array of {c.dtype}, "
                        f"got {c.values.dtype}{list(c.values.shape)}")
        file_scope.add(c_name)
        file_scope.add(f"{c_name}_bits")      # a float table's union (aot.emit.c.tables)
    params = [t.name for t in (*plan.inputs, *plan.outputs)]
    for p in params:
        if not is_c_identifier(p) or p == "arena" or p in file_scope:
            _fail(plan, f"entry parameter name {p!r} is not a C identifier or collides "
                        "with `arena` or a file-scope name")
    if len(set(params)) != len(params):
        _fail(plan, f"duplicate entry parameter names {params}")


def _check_calls(plan: ModelPlan) -> set[str]:
    """Every call well formed and every kernel called; returns the C names
    of the constant tables the calls and kernels read."""
    kernels = {k.name: k for k in plan.kernels}
    called: set[str] = set()
    used_constants: set[str] = set()
    declared: dict[int, list[ArenaOverlap]] = {}
    for ov in plan.arena_overlaps:
        if not 0 <= ov.call < len(plan.calls):
            _fail(plan, f"overlap {ov.out} over {ov.inp} names no call ({ov.call})")
        declared.setdefault(ov.call, []).append(ov)
    for index, call in enumerate(plan.calls):
        kernel = kernels.get(call.kernel)
        if kernel is None:
            _fail(plan, f"call of unknown kernel {call.kernel}")
        assert kernel is not None
        called.add(kernel.name)
        _check_call(plan, kernel, call, used_constants, declared.get(index, []))
    for k in plan.kernels:
        if k.name not in called:
            _fail(plan, f"kernel {k.name} is never called (an unused static function "
                        "does not compile warning-free)")
        for b in buffers_in(k.body):
            if b.scope is BufferScope.CONST and b.name not in {p.name for p in k.params}:
                used_constants.add(b.name)
    return used_constants


def _leaves(tree: OutputTree) -> list[int]:
    if isinstance(tree, int):
        return [tree]
    return [leaf for sub in tree for leaf in _leaves(sub)]


def _check_output_tree(plan: ModelPlan) -> None:
    leaves = _leaves(plan.output_tree)
    if leaves != list(range(len(plan.outputs))):
        _fail(plan, f"output_tree {plan.output_tree!r} must list the outputs in order, "
                    "each once")


#: an arena argument of one call: bytes [start, end), written, restrict, position
_Span = tuple[int, int, bool, bool, int]


def _check_call(plan: ModelPlan, kernel: Kernel, call: KernelCall,
                used_constants: set[str], overlaps: list[ArenaOverlap]) -> None:
    if len(call.args) != len(kernel.params):
        _fail(plan, f"{kernel.name} takes {len(kernel.params)} arguments, "
                    f"the call passes {len(call.args)}")
    written = stored_buffers(kernel.body)
    spans: list[_Span] = []
    for position, (ref, param) in enumerate(zip(call.args, kernel.params)):
        where = f"{kernel.name}'s argument {param.name}"
        if ref.dtype is not param.dtype or ref.size != param.size:
            _fail(plan, f"{where}: {ref.size} x {ref.dtype} passed for "
                        f"{param.size} x {param.dtype}")
        is_written = param.name in written
        if ref.kind is ArgKind.INPUT or ref.kind is ArgKind.OUTPUT:
            _check_io_arg(plan, ref, where, is_written)
        elif ref.kind is ArgKind.CONST:
            _check_constant_arg(plan, ref, where, is_written)
            used_constants.add(f"{plan.name}_{ref.symbol}")
        else:
            nbytes = ref.dtype.nbytes(ref.size)
            if ref.offset < 0 or ref.offset % ARENA_ALIGNMENT or \
                    ref.offset + nbytes > plan.arena_bytes:
                _fail(plan, f"{where}: arena bytes [{ref.offset}, {ref.offset + nbytes}) are "
                            f"misaligned or outside the {plan.arena_bytes}-byte arena")
            spans.append((ref.offset, ref.offset + nbytes, is_written, param.restrict,
                          position))
    allowed = {(ov.out_arg, j) for ov in overlaps for j in ov.in_args}
    for ov in overlaps:
        _check_overlap(plan, kernel, call, ov)
    for i, (a0, a1, aw, ar, ap) in enumerate(spans):
        for b0, b1, bw, br, bp in spans[i + 1:]:
            if a0 < b1 and b0 < a1 and (aw or bw) and (ar or br):
                _fail(plan, f"{kernel.name}: overlapping arena arguments, one written, "
                            "through restrict parameters")
            if a0 < b1 and b0 < a1 and (aw or bw) and \
                    (ap, bp) not in allowed and (bp, ap) not in allowed:
                _fail(plan, f"{kernel.name}: arena arguments {kernel.params[ap].name} and "
                            f"{kernel.params[bp].name} overlap, one written, and no overlap "
                            "is declared for them")


def _check_overlap(plan: ModelPlan, kernel: Kernel, call: KernelCall, ov: ArenaOverlap) -> None:
    """A declared overlap: an arena output over arena inputs of one tensor,
    at the declared shift, allowed by the kernel's loop nest."""
    n = len(call.args)
    if not (0 <= ov.out_arg < n and ov.in_args and all(0 <= j < n for j in ov.in_args)):
        _fail(plan, f"overlap {ov.out} over {ov.inp}: argument positions out of range")
    out_ref = call.args[ov.out_arg]
    in_refs = [call.args[j] for j in ov.in_args]
    if out_ref.kind is not ArgKind.ARENA or any(r.kind is not ArgKind.ARENA or
                                                r.offset != in_refs[0].offset for r in in_refs):
        _fail(plan, f"overlap {ov.out} over {ov.inp}: not arena arguments of one tensor")
    if out_ref.offset - in_refs[0].offset != ov.shift:
        _fail(plan, f"overlap {ov.out} over {ov.inp}: placed {out_ref.offset - in_refs[0].offset} "
                    f"bytes apart, declared {ov.shift}")
    out_name = kernel.params[ov.out_arg].name
    in_names = [kernel.params[j].name for j in ov.in_args]
    if out_name not in stored_buffers(kernel.body):
        _fail(plan, f"overlap {ov.out} over {ov.inp}: {kernel.name} does not write {out_name}")
    if not safe_shift(kernel, out_name, in_names, ov.shift):
        _fail(plan, f"overlap {ov.out} over {ov.inp}: {kernel.name}'s loop nest does not "
                    f"allow writing {out_name} at {ov.shift} bytes from {', '.join(in_names)}")


def _check_io_arg(plan: ModelPlan, ref: BufferRef, where: str, is_written: bool) -> None:
    specs = plan.inputs if ref.kind is ArgKind.INPUT else plan.outputs
    if not 0 <= ref.index < len(specs):
        _fail(plan, f"{where}: no {ref.kind.value} {ref.index}")
    spec = specs[ref.index]
    if spec.dtype is not ref.dtype or spec.size != ref.size:
        _fail(plan, f"{where}: does not match {ref.kind.value} {spec.name}")
    if is_written and ref.kind is ArgKind.INPUT:
        _fail(plan, f"{where}: the kernel writes into input {spec.name}")


def _check_constant_arg(plan: ModelPlan, ref: BufferRef, where: str, is_written: bool) -> None:
    c = next((c for c in plan.constants if c.symbol == ref.symbol), None)
    if c is None or c.dtype is not ref.dtype or max(int(c.values.size), 1) < ref.size:
        _fail(plan, f"{where}: no constant {ref.symbol!r} of {ref.size} x {ref.dtype}")
    if is_written:
        _fail(plan, f"{where}: the kernel writes into constant {ref.symbol}")
