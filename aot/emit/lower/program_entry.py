"""The program backend's plan: a :class:`~aot.emit.plan.model.ModelPlan`
whose ``program`` part holds the object IR of a whole-language program
(:mod:`aot.emit.lower.program`), its entry function and the records the
value API is printed from (:mod:`aot.emit.c.program_api`).

The entry function
------------------
``int32_t <name>_run_ctx(<name>_ctx *context, <inputs>, <outputs>)``
(``<name>_run`` calls it on a static context): ``main``'s parameters and
result are flattened below their tuples (:func:`io_leaves`); a tensor leaf
is a dense array (in: copied into a fresh pool tensor; out: copied out of
the result), any other leaf a value handle (in: borrowed; out: owned by
the caller, who releases it with ``<name>_value_release``).  On any status
but OK, value outputs are NULL and the pool holds nothing the call
allocated.  Its body is an object-IR function of kind ``ENTRY``, checked
by the same verifier as the others.

Only what the entry reaches is kept (:func:`~aot.emit.objects.walk.reachable`):
a closure bound but never called leaves its code, its static object and
its kernels unused, which C compilers warn about.
"""

from __future__ import annotations

from ...diagnostics import DiagnosticError
from ...ir.attrs import output_names
from ...ir.expr import Function
from ...ir.module import IRModule
from ...ir.types import FuncType, TensorType, TupleType, Type
from ...passes.manager import current
from ..kernel.ir import BufferScope
from ..kernel.walk import buffers_in
from ..objects import ir as O
from ..objects.verify import verify_program
from ..objects.walk import Reached, reachable
from ..plan.model import ModelPlan, TensorSpec
from ..plan.program import (DEFAULT_MAX_DEPTH, DEFAULT_POOL_BYTES, DEFAULT_STACK_BYTES, IOLeaf,
                            ProgramPart)
from ..plan.program_types import adt_json, io_leaves, type_json
from .program import ProgramLowering
from .program_function import field_path

__all__ = ["plan_program"]


def _leaf(name: str, t, source: str) -> IOLeaf:
    if isinstance(t, TensorType):
        tj = type_json(t)          # refuses dynamic shapes with a diagnostic
        spec = TensorSpec(name, tuple(tj["tensor"][0]), t.dtype, source)
        return IOLeaf(name, True, spec, tj, str(t))
    return IOLeaf(name, False, None, type_json(t), str(t))


def _result_type(main: Function) -> Type:
    """What ``@main`` returns (its body may be a global, which type
    inference leaves unannotated: the function's type says it)."""
    t = main.type
    assert isinstance(t, FuncType), t
    return t.ret_type


def _check_limits(pool: int, depth: int, stack: int) -> None:
    if pool < 0 or pool > 0x7FFFFFFF:
        raise DiagnosticError(f"pool_bytes must be between 0 and 2^31 - 1, not {pool}")
    if depth < 1 or depth > 0x7FFFFFFF:
        raise DiagnosticError(f"max_depth must be between 1 and 2^31 - 1, not {depth}")
    if stack < 1024 or stack > 0x7FFFFFFF:
        raise DiagnosticError(f"stack_bytes must be between 1024 and 2^31 - 1, not {stack}")


def plan_program(mod: IRModule, name: str, *, entry: str = "main",
                 pool_bytes: int | None = None, max_depth: int | None = None,
                 stack_bytes: int | None = None) -> ModelPlan:
    """The plan of ``mod``'s ``entry`` (typed, monomorphic, fused)."""
    if entry not in mod:
        raise DiagnosticError(f"the module has no `@{entry}` function to compile")
    pool = DEFAULT_POOL_BYTES if pool_bytes is None else int(pool_bytes)
    depth = DEFAULT_MAX_DEPTH if max_depth is None else int(max_depth)
    stack = DEFAULT_STACK_BYTES if stack_bytes is None else int(stack_bytes)
    _check_limits(pool, depth, stack)
    gv = mod.get_global_var(entry)
    main = mod[gv]
    low = ProgramLowering(mod, name)
    main_c = low.lower_globals(gv)
    param_leaves, inputs = _input_leaves(main)
    out_leaves = io_leaves(_result_type(main))
    sources = output_names(main.attrs, len(out_leaves))
    outputs = [_leaf("out" if len(out_leaves) == 1 else f"out{k}", t, source)
               for k, ((_, t), source) in enumerate(zip(out_leaves, sources))]
    entry_fn = _EntryBuilder(f"{name}_run", param_leaves).function(main_c, out_leaves, outputs,
                                                                   low.writes_refs)
    program = O.ObjectProgram(tuple(low.functions), tuple(low.declared), tuple(low.statics),
                              entry_fn)
    if current().verify:
        verify_program(program)
    reached = reachable(program)
    types = {"adts": adt_json(mod, low.ctor_ids),
             "inputs": [leaf.type_json for leaf in inputs],
             "outputs": [leaf.type_json for leaf in outputs],
             "params": [type_json(p.type) for p in main.params],
             "result": type_json(_result_type(main))}
    part = ProgramPart(inputs=tuple(inputs), outputs=tuple(outputs), max_depth=depth,
                       stack_bytes=stack, objects=_pruned(program, reached),
                       constructors=_constructor_table(mod, low.ctor_ids), types=types)
    kernels, infos, constants = _used_kernels(low, reached)
    return ModelPlan(
        name=name,
        inputs=tuple(leaf.spec for leaf in inputs if leaf.spec is not None),
        outputs=tuple(leaf.spec for leaf in outputs if leaf.spec is not None),
        output_tree=0, kernels=kernels, kernel_info=infos, calls=(),
        constants=constants, arena_bytes=0, arena_lower_bound_bytes=0,
        pool_bytes=pool, arena="static", program=part,
        extra=(("backend", "program"), ("max_depth", depth), ("stack_bytes", stack)))


def _input_leaves(main: Function):
    """Per parameter of ``main``: its type and its leaves with their paths;
    and every input leaf, in order."""
    inputs: list[IOLeaf] = []
    param_leaves = []
    for p in main.params:
        names = []
        for path, t in io_leaves(p.type):
            suffix = "".join(f"_{i}" for i in path)
            leaf = _leaf(f"in{len(inputs)}", t, p.name_hint + suffix)
            inputs.append(leaf)
            names.append((path, leaf))
        param_leaves.append((p.checked_type, names))
    return param_leaves, inputs


def _constructor_table(mod: IRModule, ids: dict[str, int]):
    """(id, ADT name, constructor name, tag, arity) of every constructor."""
    return tuple((ids[c.name], header.name, c.name, c.tag, len(c.inputs))
                 for header in sorted(mod.type_definitions, key=lambda h: h.name)
                 for c in mod.type_definitions[header].constructors)


def _pruned(program: O.ObjectProgram, reached: Reached) -> O.ObjectProgram:
    """The functions and statics the entry reaches, in their order."""
    return O.ObjectProgram(
        tuple(f for f in program.functions if f.name in reached.names),
        tuple(n for n in program.declared if n in reached.names),
        tuple(s for s in program.statics if s.symbol in reached.names), program.entry)


def _used_kernels(low: ProgramLowering, reached: Reached):
    """The kernels and constant tables the kept code uses."""
    t = low.kernels
    pairs = [(k, i) for k, i in zip(t.kernels, t.infos) if k.name in reached.kernels]
    names = {f"{low.name}_{c}" for c in reached.constants}
    for k, _ in pairs:
        names.update(b.name for b in buffers_in(k.body) if b.scope is BufferScope.CONST)
    constants = tuple(c for c in t.constants if f"{low.name}_{c.symbol}" in names)
    return tuple(k for k, _ in pairs), tuple(i for _, i in pairs), constants


class _EntryBuilder:
    """The entry's object IR: main's arguments built from the caller's
    leaves, main called, its result's leaves handed back."""

    def __init__(self, name: str, param_leaves) -> None:
        self.name = name
        self.param_leaves = param_leaves
        self.temps: list[str] = []
        self.build: list[O.Stmt] = []

    def temp(self) -> str:
        self.temps.append(f"x{len(self.temps)}")
        return self.temps[-1]

    def argument(self, ptype, names) -> O.Value:
        objs: dict[tuple[int, ...], O.Value] = {}
        for path, leaf in names:
            if leaf.is_tensor:
                tmp = self.temp()
                self.build.append(O.AllocTensor(tmp, leaf.spec.nbytes))
                if leaf.spec.nbytes:
                    self.build.append(O.CopyIn(tmp, leaf.name, leaf.spec.nbytes))
                objs[path] = O.Var(tmp)
            else:
                objs[path] = O.Var(leaf.name)
        return self._tree(ptype, (), objs)

    def _tree(self, t, path: tuple[int, ...], objs) -> O.Value:
        if isinstance(t, TupleType) and t.fields:
            fields = [self._tree(f, (*path, i), objs) for i, f in enumerate(t.fields)]
            tmp = self.temp()
            self.build.append(O.AllocCell(tmp, O.CellKind.TUPLE, 0, len(fields)))
            self.build.extend(O.SetField(O.Var(tmp), i, f) for i, f in enumerate(fields))
            return O.Var(tmp)
        return objs[path]

    def function(self, main_c: str, out_leaves, outputs, collect: bool) -> O.Function:
        args = tuple(self.argument(ptype, names) for ptype, names in self.param_leaves)
        in_leaves = [leaf for _, names in self.param_leaves for _, leaf in names]
        pointers = tuple(leaf.name for leaf in (*in_leaves, *outputs))
        body: list[O.Stmt] = [O.CheckPointers(pointers)] if pointers else []
        body += [O.ClearOutput(leaf.name) for leaf in outputs if not leaf.is_tensor]
        body += [O.BeginCall(), *self.build, O.CallFunction("result", main_c, args)]
        for (path, _), leaf in zip(out_leaves, outputs):
            src = field_path(O.Var("result"), path)
            if not leaf.is_tensor:
                body.append(O.StoreOutput(leaf.name, src))
            elif leaf.spec.nbytes:
                body.append(O.CopyOut(leaf.name, src, leaf.spec.nbytes))
        temps = ("result", *self.temps)
        cleanup: list[O.Stmt] = [O.Release(t) for t in temps]
        if collect:
            roots: list[O.Value] = [O.Var(leaf.name) for leaf in in_leaves if not leaf.is_tensor]
            roots += [O.Deref(leaf.name) for leaf in outputs if not leaf.is_tensor]
            cleanup.append(O.CollectCycles(tuple(roots)))
        cleanup.append(O.EndCall())
        inputs = tuple(leaf.name for leaf in in_leaves if not leaf.is_tensor)
        return O.Function(self.name, O.FunctionKind.ENTRY, "the entry", inputs, temps, (),
                          False, tuple(body), tuple(cleanup))
