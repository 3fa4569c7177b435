"""The C a whole-language program's artifact shows around its functions:
the entry's parameters, and the value API (``<name>_value_*``, the pool,
the context) that builds and reads value handles.

``<name>_value_tensor``, ``_value_tuple``, ``_value_adt`` (constructors by
their ``<NAME>_CTOR_*`` id), ``_value_kind``, ``_value_tag``,
``_value_nfields``, ``_value_field``, ``_value_data``, ``_value_nbytes``,
``_value_release``; and ``<name>_pool_in_use`` / ``_pool_high_water``.
"""

from __future__ import annotations

from ..plan.program import ProgramPart
from .types import c_storage_type

__all__ = ["entry_parameters", "api_prototypes", "api_definitions"]


def entry_parameters(name: str, program: ProgramPart) -> list[str]:
    out = []
    for leaf in program.inputs:
        out.append(f"const {c_storage_type(leaf.spec.dtype)} *{leaf.name}" if leaf.spec
                   else f"{name}_value *{leaf.name}")
    for leaf in program.outputs:
        out.append(f"{c_storage_type(leaf.spec.dtype)} *{leaf.name}" if leaf.spec
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
        f"static union {{\n    unsigned char bytes[{max(pool_bytes, 16)}];\n"
        "    uint64_t align_u64;\n"
        f"    double align_f64;\n    long double align_long_double;\n    void *align_pointer;\n"
        f"}} {name}_pool;\nstatic aot_ctx {name}_ctx;",
        f"static aot_ctx *{name}_context(void)\n{{\n    if ({name}_ctx.base == NULL) {{\n"
        f"        aot_ctx_init(&{name}_ctx, {name}_pool.bytes, {pool_bytes}u, "
        f"{program.max_depth}u);\n"
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
        f"static int32_t {name}_cell(unsigned kind, uint16_t tag, uint32_t n, "
        f"{v} *const *fields,\n"
        f"                         {v} **out)\n{{\n    aot_obj *o;\n    uint32_t i;\n"
        f"    if (out == NULL || (fields == NULL && n != 0u)) {{\n"
        f"        return {NAME}_ERR_NULL;\n"
        "    }\n    *out = NULL;\n"
        "    for (i = 0; i < n; i++) {\n        if (fields[i] == NULL) {\n"
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
         "    (void)ctor;\n    (void)fields;\n"
         "    if (out != NULL) {\n        *out = NULL;\n    }\n"
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
