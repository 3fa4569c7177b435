"""The C a whole-language program's artifact shows around its functions:
the entry's parameters, and the value API (``<name>_value_*``, the pool,
the context) that builds and reads value handles.

``<name>_value_tensor``, ``_value_tuple``, ``_value_adt`` (constructors by
their ``<NAME>_CTOR_*`` id), ``_value_kind``, ``_value_tag``,
``_value_nfields``, ``_value_field``, ``_value_data``, ``_value_nbytes``,
``_value_release``; and ``<name>_pool_in_use`` / ``_pool_high_water``.

Reentrancy: the pool, its bookkeeping, the depth counter and the stack
budget live in a caller-owned ``<name>_ctx`` (``<name>_ctx_init``); every
function that touches the pool has a ``_ctx`` variant taking the context
first, and the plain one runs on a static context of the library (not
reentrant).  Handles belong to the context whose pool holds them.
"""

from __future__ import annotations

from ..plan.program import ProgramPart
from .types import c_storage_type

__all__ = ["entry_parameters", "api_prototypes", "api_definitions", "context_typedef",
           "context_prototypes"]


def entry_parameters(name: str, program: ProgramPart) -> list[str]:
    out = []
    for leaf in program.inputs:
        out.append(f"const {c_storage_type(leaf.spec.dtype)} *{leaf.name}" if leaf.spec
                   else f"{name}_value *{leaf.name}")
    for leaf in program.outputs:
        out.append(f"{c_storage_type(leaf.spec.dtype)} *{leaf.name}" if leaf.spec
                   else f"{name}_value **{leaf.name}")
    return out


#: (suffix, parameters after the context, return type, the call) of each
#: value function that touches the pool: one with a context, ``_ctx``,
#: and one on the static context
_POOL_FUNCTIONS = (
    ("value_tensor", "const void *data, size_t nbytes, {v} **out", "int32_t",
     "data, nbytes, out"),
    ("value_tuple", "uint32_t n, {v} *const *fields, {v} **out", "int32_t", "n, fields, out"),
    ("value_adt", "uint32_t ctor, {v} *const *fields, {v} **out", "int32_t",
     "ctor, fields, out"),
    ("value_release", "{v} *v", "void", "v"),
    ("pool_in_use", "", "size_t", ""),
    ("pool_high_water", "", "size_t", ""),
)


def _pool_prototype(name: str, suffix: str, params: str, ret: str, ctx: bool) -> str:
    params = params.format(v=f"{name}_value")
    if ctx:
        first = f"const {name}_ctx *context" if suffix.startswith("pool_") else \
            f"{name}_ctx *context"
        params = f"{first}, {params}" if params else first
    return f"{ret} {name}_{suffix}{'_ctx' if ctx else ''}({params or 'void'})"


def context_prototypes(name: str) -> list[str]:
    """The context's functions (after the typedef of ``<name>_ctx``)."""
    return [f"void {name}_ctx_init({name}_ctx *context, size_t stack_bytes);"]


def api_prototypes(name: str) -> list[str]:
    v = f"{name}_value"
    pool = {suffix: (params, ret) for suffix, params, ret, _ in _POOL_FUNCTIONS}

    def both(suffix: str) -> list[str]:
        params, ret = pool[suffix]
        return [_pool_prototype(name, suffix, params, ret, False) + ";",
                _pool_prototype(name, suffix, params, ret, True) + ";"]
    return [
        *both("value_tensor"), *both("value_tuple"), *both("value_adt"),
        f"uint32_t {name}_value_kind(const {v} *v);",
        f"uint32_t {name}_value_tag(const {v} *v);",
        f"uint32_t {name}_value_nfields(const {v} *v);",
        f"{v} *{name}_value_field(const {v} *v, uint32_t i);",
        f"const void *{name}_value_data(const {v} *v);",
        f"size_t {name}_value_nbytes(const {v} *v);",
        *both("value_release"), *both("pool_in_use"), *both("pool_high_water"),
    ]


def context_typedef(name: str, pool_bytes: int) -> list[str]:
    """The lines of ``typedef struct <name>_ctx {...} <name>_ctx;`` (no
    pool array when the program allocates nothing)."""
    if pool_bytes == 0:
        return [f"typedef struct {name}_ctx {{",
                "    aot_ctx state;  /* the depth, the stack budget (no object pool) */",
                f"}} {name}_ctx;"]
    return [f"typedef struct {name}_ctx {{",
            "    aot_ctx state;  /* the pool's blocks, the depth, the stack budget */",
            "    union {",
            f"        unsigned char bytes[{pool_bytes}];",
            "        uint64_t align_u64;",
            "        double align_f64;",
            "        long double align_long_double;",
            "        void *align_pointer;",
            "    } pool;",
            f"}} {name}_ctx;"]


def api_definitions(name: str, program: ProgramPart, pool_bytes: int) -> list[str]:
    """The context, the static context and the value API (C text, one
    function per entry)."""
    NAME = name.upper()
    v = f"{name}_value"
    ctors = program.constructors
    table = ", ".join(f"{{{tag}u, {arity}u}}" for _, _, _, tag, arity in ctors)
    wrappers = []
    for suffix, params, ret, args in _POOL_FUNCTIONS:
        call = f"{name}_{suffix}_ctx({name}_static_context(){', ' + args if args else ''})"
        wrappers.append(f"{_pool_prototype(name, suffix, params, ret, False)}\n{{\n"
                        f"    {'return ' if ret != 'void' else ''}{call};\n}}")
    return [
        f"void {name}_ctx_init({name}_ctx *context, size_t stack_bytes)\n{{\n"
        f"    if (context != NULL) {{\n"
        f"        aot_ctx_init(&context->state, "
        f"{'context->pool.bytes' if pool_bytes else 'NULL'}, {pool_bytes}u, "
        f"{program.max_depth}u,\n"
        f"                     stack_bytes);\n    }}\n}}",
        "/*\n * The context of the functions without a context parameter "
        f"({name}_run and\n * the value functions without _ctx): a static object of "
        "the library,\n * initialised on first use; they are not reentrant.\n */\n"
        f"static {name}_ctx {name}_static;\n\n"
        f"static {name}_ctx *{name}_static_context(void)\n{{\n"
        f"    if ({name}_static.state.max_depth == 0u) {{  /* not initialised yet */\n"
        f"        {name}_ctx_init(&{name}_static, {NAME}_STACK_BYTES);\n"
        f"    }}\n    return &{name}_static;\n}}",
        *([f"/* Constructors by id: tag and number of fields. */\n"
           f"static const uint32_t {name}_ctor_table[][2] = {{{table}}};"] if ctors else []),
        f"{_pool_prototype(name, 'value_tensor', _POOL_FUNCTIONS[0][1], 'int32_t', True)}\n{{\n"
        f"    aot_obj *o;\n    if (context == NULL || out == NULL || "
        f"(data == NULL && nbytes != 0u)) {{\n"
        f"        return {NAME}_ERR_NULL;\n    }}\n    *out = NULL;\n"
        f"    o = aot_new_tensor(&context->state, nbytes);\n    if (o == NULL) {{\n"
        f"        return {NAME}_ERR_POOL;\n    }}\n    if (nbytes != 0u) {{\n"
        f"        memcpy(aot_tensor_out(o), data, nbytes);\n    }}\n    *out = o;\n"
        f"    return {NAME}_OK;\n}}",
        f"static int32_t {name}_cell({name}_ctx *context, unsigned kind, uint16_t tag, "
        f"uint32_t n,\n"
        f"                         {v} *const *fields, {v} **out)\n{{\n    aot_obj *o;\n"
        f"    uint32_t i;\n"
        f"    if (context == NULL || out == NULL || (fields == NULL && n != 0u)) {{\n"
        f"        return {NAME}_ERR_NULL;\n"
        "    }\n    *out = NULL;\n"
        "    for (i = 0; i < n; i++) {\n        if (fields[i] == NULL) {\n"
        f"            return {NAME}_ERR_NULL;\n        }}\n    }}\n"
        f"    o = aot_new_cell(&context->state, kind, tag, n);\n    if (o == NULL) {{\n"
        f"        return {NAME}_ERR_POOL;\n    }}\n    for (i = 0; i < n; i++) {{\n"
        f"        o->fields[i] = aot_retain(fields[i]);\n    }}\n    *out = o;\n"
        f"    return {NAME}_OK;\n}}",
        f"{_pool_prototype(name, 'value_tuple', _POOL_FUNCTIONS[1][1], 'int32_t', True)}\n{{\n"
        f"    return {name}_cell(context, AOT_KIND_TUPLE, 0u, n, fields, out);\n}}",
        (f"{_pool_prototype(name, 'value_adt', _POOL_FUNCTIONS[2][1], 'int32_t', True)}\n{{\n"
         f"    if (ctor >= {len(ctors)}u) {{\n        return {NAME}_ERR_VALUE;\n    }}\n"
         f"    return {name}_cell(context, AOT_KIND_ADT, (uint16_t){name}_ctor_table[ctor][0],\n"
         f"                       {name}_ctor_table[ctor][1], fields, out);\n}}") if ctors else
        (f"{_pool_prototype(name, 'value_adt', _POOL_FUNCTIONS[2][1], 'int32_t', True)}\n{{\n"
         "    (void)context;\n    (void)ctor;\n    (void)fields;\n"
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
        f"{_pool_prototype(name, 'value_release', _POOL_FUNCTIONS[3][1], 'void', True)}\n{{\n"
        f"    if (context != NULL) {{\n        aot_release(&context->state, v);\n    }}\n}}",
        f"{_pool_prototype(name, 'pool_in_use', '', 'size_t', True)}\n{{\n"
        f"    return context == NULL ? 0u : context->state.in_use;\n}}",
        f"{_pool_prototype(name, 'pool_high_water', '', 'size_t', True)}\n{{\n"
        f"    return context == NULL ? 0u : context->state.high_water;\n}}",
        *wrappers,
    ]
