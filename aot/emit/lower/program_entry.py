"""The program backend's plan: a :class:`~aot.emit.plan.model.ModelPlan`
whose ``program`` part holds the C functions of a whole-language program
(:mod:`aot.emit.lower.program`), the entry function and the value API.

The entry function
------------------
``int32_t <name>_run(<inputs>, <outputs>)``: ``main``'s parameters and
result are flattened below their tuples (:func:`io_leaves`); a tensor leaf
is a dense array (``const T *`` in, ``T *`` out, copied into / out of the
pool), any other leaf a value handle (``<name>_value *`` in, borrowed;
``<name>_value **`` out, owned by the caller, who releases it with
``<name>_value_release``).  On any status but OK, value outputs are NULL
and the pool holds nothing the call allocated.

The value API builds and reads handles: ``<name>_value_tensor``,
``_value_tuple``, ``_value_adt`` (constructors by their ``<NAME>_CTOR_*``
id), ``_value_kind``, ``_value_tag``, ``_value_nfields``, ``_value_field``,
``_value_data``, ``_value_nbytes``, ``_value_release``; and
``<name>_pool_in_use`` / ``_pool_high_water``.
"""

from __future__ import annotations

import re

from ...diagnostics import DiagnosticError
from ...ir.module import IRModule
from ...ir.types import TensorType, TupleType
from ..c.types import c_storage_type
from ..plan.model import ModelPlan, TensorSpec
from .program import ProgramLowering
from ..plan.program import DEFAULT_MAX_DEPTH, DEFAULT_POOL_BYTES, IOLeaf, ProgramPart
from ..plan.program_types import adt_json, io_leaves, type_json

__all__ = ["plan_program", "api_prototypes"]


def _leaf(name: str, t, source: str) -> IOLeaf:
    if isinstance(t, TensorType):
        tj = type_json(t)          # refuses dynamic shapes with a diagnostic
        spec = TensorSpec(name, tuple(tj["tensor"][0]), t.dtype, source)
        return IOLeaf(name, True, spec, tj, str(t))
    return IOLeaf(name, False, None, type_json(t), str(t))


def plan_program(mod: IRModule, name: str, *, entry: str = "main",
                 pool_bytes: int | None = None, max_depth: int | None = None) -> ModelPlan:
    """The plan of ``mod``'s ``entry`` (typed, monomorphic, fused)."""
    if entry not in mod:
        raise DiagnosticError(f"the module has no `@{entry}` function to compile")
    pool = DEFAULT_POOL_BYTES if pool_bytes is None else int(pool_bytes)
    depth = DEFAULT_MAX_DEPTH if max_depth is None else int(max_depth)
    if pool < 0 or pool > 0x7FFFFFFF:
        raise DiagnosticError(f"pool_bytes must be between 0 and 2^31 - 1, not {pool}")
    if depth < 1 or depth > 0x7FFFFFFF:
        raise DiagnosticError(f"max_depth must be between 1 and 2^31 - 1, not {depth}")
    gv = mod.get_global_var(entry)
    main = mod[gv]
    low = ProgramLowering(mod, name)
    main_c = low.lower_globals(gv)

    inputs: list[IOLeaf] = []
    param_leaves = []
    for k, p in enumerate(main.params):
        leaves = io_leaves(p.checked_type)
        names = []
        for path, t in leaves:
            suffix = "".join(f"_{i}" for i in path)
            leaf = _leaf(f"in{len(inputs)}", t, p.name_hint + suffix)
            inputs.append(leaf)
            names.append((path, leaf))
        param_leaves.append((p.checked_type, names))
    outputs: list[IOLeaf] = []
    out_leaves = io_leaves(main.body.checked_type)
    for path, t in out_leaves:
        outputs.append(_leaf("out" if len(out_leaves) == 1 else f"out{len(outputs)}", t, ""))

    body = _entry_body(name, main_c, param_leaves, out_leaves, outputs, low.writes_refs)
    constructors = []
    for header in sorted(mod.type_definitions, key=lambda h: h.name):
        for c in mod.type_definitions[header].constructors:
            constructors.append((low.ctor_ids[c.name], header.name, c.name, c.tag, len(c.inputs)))
    types = {"adts": adt_json(mod, low.ctor_ids),
             "inputs": [leaf.type_json for leaf in inputs],
             "outputs": [leaf.type_json for leaf in outputs],
             "params": [type_json(p.checked_type) for p in main.params],
             "result": type_json(main.body.checked_type)}
    statics, prototypes, functions = _prune(low, body)
    program = ProgramPart(inputs=tuple(inputs), outputs=tuple(outputs), max_depth=depth,
                          statics=statics, prototypes=prototypes,
                          functions=functions, entry_body=tuple(body),
                          constructors=tuple(constructors), types=types)
    kernels, infos, constants = _used_kernels(low, [*statics, *functions, *body])
    return ModelPlan(
        name=name,
        inputs=tuple(leaf.spec for leaf in inputs if leaf.spec is not None),
        outputs=tuple(leaf.spec for leaf in outputs if leaf.spec is not None),
        output_tree=0, kernels=kernels, kernel_info=infos, calls=(),
        constants=constants, arena_bytes=0, arena_lower_bound_bytes=0,
        pool_bytes=pool, arena="static", program=program,
        extra=(("backend", "program"), ("max_depth", depth)))


_DEFINED = re.compile(r"static (?:int32_t|aot_obj) (?:\*volatile )?(\w+)")
_WORD = re.compile(r"\w+")


def _prune(low: ProgramLowering, body: list[str]) -> tuple[tuple[str, ...], ...]:
    """The static objects and functions reachable from the entry: a
    closure bound but never called leaves its code and static object
    unused, which C compilers warn about."""
    items: dict[str, str] = {}
    for text in [*low.functions, *(t for _, t in low.statics)]:
        for defined in _DEFINED.findall(text):
            items[defined] = text
    seen: set[str] = set()
    work = ["\n".join(body)]
    while work:
        for word in _WORD.findall(work.pop()):
            if word in items and word not in seen:
                seen.add(word)
                work.append(items[word].split("\n", 1)[1] if items[word].startswith("/*")
                            else items[word])
    keep = lambda text: any(d in seen for d in _DEFINED.findall(text))
    return (tuple(t for _, t in low.statics if keep(t)),
            tuple(p for p in low.prototypes if keep(p)),
            tuple(f for f in low.functions if keep(f)))


def _used_kernels(low: ProgramLowering, texts: list[str]):
    """The kernels and constant tables the kept code uses."""
    from ..kernel.ir import BufferScope
    from ..kernel.walk import buffers_in
    words = set(_WORD.findall("\n".join(texts)))
    t = low.kernels
    pairs = [(k, i) for k, i in zip(t.kernels, t.infos) if k.name in words]
    for k, _ in pairs:
        words.update(b.name for b in buffers_in(k.body) if b.scope is BufferScope.CONST)
    constants = tuple(c for c in t.constants if f"{low.name}_{c.symbol}" in words)
    return tuple(k for k, _ in pairs), tuple(i for _, i in pairs), constants


def _path(expr: str, path: tuple[int, ...]) -> str:
    return expr + "".join(f"->fields[{i}]" for i in path)


def _entry_body(name: str, main_c: str, param_leaves, out_leaves, outputs,
                collect: bool) -> list[str]:
    NAME = name.upper()
    pointers = [leaf.name for _, names in param_leaves for _, leaf in names]
    pointers += [leaf.name for leaf in outputs]
    lines = [f"aot_ctx *ctx = {name}_context();", "int32_t st = AOT_OK;",
             "aot_obj *result = NULL;"]
    temps: list[str] = []
    args: list[str] = []
    build: list[str] = []

    def temp() -> str:
        temps.append(f"x{len(temps)}")
        return temps[-1]

    def alloc_check(tmp: str) -> list[str]:
        return [f"if ({tmp} == NULL) {{", "    st = AOT_ERR_POOL;", "    goto done;", "}"]

    for ptype, names in param_leaves:
        objs: dict[tuple[int, ...], str] = {}
        for path, leaf in names:
            if leaf.is_tensor:
                tmp = temp()
                n = leaf.spec.nbytes
                build += [f"{tmp} = aot_new_tensor(ctx, {n}u);", *alloc_check(tmp)]
                if n:
                    build.append(f"memcpy(aot_tensor_out({tmp}), {leaf.name}, {n}u);")
                objs[path] = tmp
            else:
                objs[path] = leaf.name

        def tree(t, path: tuple[int, ...]) -> str:
            if isinstance(t, TupleType) and t.fields:
                fields = [tree(f, (*path, i)) for i, f in enumerate(t.fields)]
                tmp = temp()
                build.extend([f"{tmp} = aot_new_cell(ctx, AOT_KIND_TUPLE, 0u, "
                              f"{len(fields)}u);", *alloc_check(tmp)])
                build.extend(f"{tmp}->fields[{i}] = aot_retain({f});"
                             for i, f in enumerate(fields))
                return tmp
            return objs[path]
        args.append(tree(ptype, ()))

    for t in temps:
        lines.append(f"aot_obj *{t} = NULL;")
    if pointers:
        lines.append("if (" + " || ".join(f"{p} == NULL" for p in pointers) + ") {")
        lines += [f"    return {NAME}_ERR_NULL;", "}"]
    lines += [f"*{leaf.name} = NULL;" for leaf in outputs if not leaf.is_tensor]
    lines.append("ctx->in_call = 1;")
    lines += build
    lines.append(f"st = {main_c}({', '.join(['ctx', *args, '&result'])});")
    lines += ["if (st != AOT_OK) {", "    goto done;", "}"]
    for (path, _), leaf in zip(out_leaves, outputs):
        src = _path("result", path)
        if leaf.is_tensor:
            if leaf.spec.nbytes:
                lines.append(f"memcpy({leaf.name}, {src}->u.data, {leaf.spec.nbytes}u);")
        else:
            lines.append(f"*{leaf.name} = aot_retain({src});")
    lines.append("done:")
    lines += [f"aot_release(ctx, {t});" for t in ["result", *temps]]
    if collect:
        roots = [leaf.name for _, names in param_leaves for _, leaf in names
                 if not leaf.is_tensor]
        roots += [f"*{leaf.name}" for leaf in outputs if not leaf.is_tensor]
        if roots:
            lines.append("{")
            lines.append(f"    aot_obj *roots[{len(roots)}];")
            lines += [f"    roots[{i}] = {r};" for i, r in enumerate(roots)]
            lines.append(f"    aot_collect_cycles(ctx, roots, {len(roots)}u);")
            lines.append("}")
        else:
            lines.append("aot_collect_cycles(ctx, NULL, 0u);")
    lines += ["ctx->in_call = 0;", "ctx->depth = 0;", "return st;"]
    return lines


def entry_parameters(name: str, program: ProgramPart) -> list[str]:
    out = []
    for leaf in program.inputs:
        out.append(f"const {c_storage_type(leaf.spec.dtype)} *{leaf.name}" if leaf.is_tensor
                   else f"{name}_value *{leaf.name}")
    for leaf in program.outputs:
        out.append(f"{c_storage_type(leaf.spec.dtype)} *{leaf.name}" if leaf.is_tensor
                   else f"{name}_value **{leaf.name}")
    return out


def api_prototypes(name: str) -> list[str]:
    v = f"{name}_value"
    return [
        f"int32_t {name}_value_tensor(const void *data, size_t nbytes, {v} **out);",
        f"int32_t {name}_value_tuple(uint32_t n, {v} *const *fields, {v} **out);",
        f"int32_t {name}_value_adt(uint32_t ctor, {v} *const *fields, {v} **out);",
        f"uint32_t {name}_value_kind(const {v} *v);",
        f"uint32_t {name}_value_tag(const {v} *v);",
        f"uint32_t {name}_value_nfields(const {v} *v);",
        f"{v} *{name}_value_field(const {v} *v, uint32_t i);",
        f"const void *{name}_value_data(const {v} *v);",
        f"size_t {name}_value_nbytes(const {v} *v);",
        f"void {name}_value_release({v} *v);",
        f"size_t {name}_pool_in_use(void);",
        f"size_t {name}_pool_high_water(void);",
    ]


def api_definitions(name: str, program: ProgramPart, pool_bytes: int) -> list[str]:
    """The pool, the context and the value API (C text, one function per
    entry)."""
    NAME = name.upper()
    v = f"{name}_value"
    ctors = program.constructors
    table = ", ".join(f"{{{tag}u, {arity}u}}" for _, _, _, tag, arity in ctors)
    return [
        "/*\n * The object pool (a static object of the library: the model is not\n"
        " * reentrant) and the model's context.  C99 has no alignas: the union\n"
        " * aligns the bytes for every object and element type.\n */\n"
        f"static union {{\n    unsigned char bytes[{max(pool_bytes, 16)}];\n    uint64_t align_u64;\n"
        f"    double align_f64;\n    long double align_long_double;\n    void *align_pointer;\n"
        f"}} {name}_pool;\nstatic aot_ctx {name}_ctx;",
        f"static aot_ctx *{name}_context(void)\n{{\n    if ({name}_ctx.base == NULL) {{\n"
        f"        aot_ctx_init(&{name}_ctx, {name}_pool.bytes, {pool_bytes}u, {program.max_depth}u);\n"
        f"    }}\n    return &{name}_ctx;\n}}",
        *([f"/* Constructors by id: tag and number of fields. */\n"
           f"static const uint32_t {name}_ctor_table[][2] = {{{table}}};"] if ctors else []),
        f"int32_t {name}_value_tensor(const void *data, size_t nbytes, {v} **out)\n{{\n"
        f"    aot_obj *o;\n    if (out == NULL || (data == NULL && nbytes != 0u)) {{\n"
        f"        return {NAME}_ERR_NULL;\n    }}\n    *out = NULL;\n"
        f"    o = aot_new_tensor({name}_context(), nbytes);\n    if (o == NULL) {{\n"
        f"        return {NAME}_ERR_POOL;\n    }}\n    if (nbytes != 0u) {{\n"
        f"        memcpy(aot_tensor_out(o), data, nbytes);\n    }}\n    *out = o;\n"
        f"    return {NAME}_OK;\n}}",
        f"static int32_t {name}_cell(unsigned kind, uint16_t tag, uint32_t n, {v} *const *fields,\n"
        f"                         {v} **out)\n{{\n    aot_obj *o;\n    uint32_t i;\n"
        f"    if (out == NULL || (fields == NULL && n != 0u)) {{\n        return {NAME}_ERR_NULL;\n"
        f"    }}\n    *out = NULL;\n    for (i = 0; i < n; i++) {{\n        if (fields[i] == NULL) {{\n"
        f"            return {NAME}_ERR_NULL;\n        }}\n    }}\n"
        f"    o = aot_new_cell({name}_context(), kind, tag, n);\n    if (o == NULL) {{\n"
        f"        return {NAME}_ERR_POOL;\n    }}\n    for (i = 0; i < n; i++) {{\n"
        f"        o->fields[i] = aot_retain(fields[i]);\n    }}\n    *out = o;\n"
        f"    return {NAME}_OK;\n}}",
        f"int32_t {name}_value_tuple(uint32_t n, {v} *const *fields, {v} **out)\n{{\n"
        f"    return {name}_cell(AOT_KIND_TUPLE, 0u, n, fields, out);\n}}",
        (f"int32_t {name}_value_adt(uint32_t ctor, {v} *const *fields, {v} **out)\n{{\n"
         f"    if (ctor >= {len(ctors)}u) {{\n        return {NAME}_ERR_VALUE;\n    }}\n"
         f"    return {name}_cell(AOT_KIND_ADT, (uint16_t){name}_ctor_table[ctor][0],\n"
         f"                       {name}_ctor_table[ctor][1], fields, out);\n}}") if ctors else
        (f"int32_t {name}_value_adt(uint32_t ctor, {v} *const *fields, {v} **out)\n{{\n"
         f"    (void)ctor;\n    (void)fields;\n    if (out != NULL) {{\n        *out = NULL;\n    }}\n"
         f"    return {NAME}_ERR_VALUE;  /* the program has no constructors */\n}}"),
        f"uint32_t {name}_value_kind(const {v} *v)\n{{\n    return v == NULL ? 0u : v->kind;\n}}",
        f"uint32_t {name}_value_tag(const {v} *v)\n{{\n    return v == NULL ? 0u : v->tag;\n}}",
        f"uint32_t {name}_value_nfields(const {v} *v)\n{{\n"
        f"    return v == NULL ? 0u : v->nfields;\n}}",
        f"{v} *{name}_value_field(const {v} *v, uint32_t i)\n{{\n"
        f"    return v == NULL || i >= v->nfields ? NULL : v->fields[i];\n}}",
        f"const void *{name}_value_data(const {v} *v)\n{{\n"
        f"    return v == NULL || v->kind != AOT_KIND_TENSOR ? NULL : v->u.data;\n}}",
        f"size_t {name}_value_nbytes(const {v} *v)\n{{\n"
        f"    return v == NULL || v->kind != AOT_KIND_TENSOR ? 0u : v->nbytes;\n}}",
        f"void {name}_value_release({v} *v)\n{{\n    aot_release({name}_context(), v);\n}}",
        f"size_t {name}_pool_in_use(void)\n{{\n    return {name}_context()->in_use;\n}}",
        f"size_t {name}_pool_high_water(void)\n{{\n    return {name}_context()->high_water;\n}}",
    ]
