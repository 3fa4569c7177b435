/*
 * aot_runtime.h -- objects, the object pool and reference counting for
 * programs with ADTs, closures, references and recursion.
 *
 * Part of the hand-written C99 runtime of `aot` (runtime_c/).  Every
 * artifact carries a copy in DIR/runtime_c/; a model compiled by the
 * program backend (aot.emit.lower.program) includes it.  Everything is
 * `static` or `static inline`, so two models (or two versions of this
 * header) link into one program without symbol clashes.
 *
 * Values
 * ------
 * Every value of a program is an `aot_obj *`:
 *
 *   AOT_KIND_TENSOR   the elements at `u.data` (`nbytes` of them, dense,
 *                     row-major); the shape is static, known to the code
 *   AOT_KIND_ADT      a constructor cell: `tag` and `nfields` fields
 *   AOT_KIND_TUPLE    a tuple: `nfields` fields (the unit value has none)
 *   AOT_KIND_CLOSURE  `u.code` and the captured values as fields
 *   AOT_KIND_REF      a mutable cell: one field
 *
 * An object lives either in the pool (`rc` >= 1 references, `block` bytes
 * of pool memory) or in static storage (`rc` == 0: constant tensors,
 * constructors without fields, the unit value, closures of global
 * functions): static objects are never counted, never freed, never
 * written.  Cells are immutable once built, except a reference's field.
 *
 * The pool
 * --------
 * One fixed array (a context's, `<NAME>_POOL_BYTES` long), carved into
 * blocks that are multiples of AOT_POOL_ALIGN bytes:
 *
 *   - a bump pointer `top` hands out fresh memory;
 *   - freed blocks of up to AOT_POOL_SMALL_MAX bytes go to exact-size
 *     free lists (one per size class: O(1) reuse, the common case of list
 *     cells and closures);
 *   - larger freed blocks (tensors) go to one first-fit list; a block much
 *     bigger than the request is split;
 *   - a freed block that ends at `top` lowers `top` instead;
 *   - when the last live block is freed the pool is reset to empty, so
 *     fragmentation never carries from one call of the model to the next.
 *
 * Exhaustion is not an error here: aot_alloc returns NULL and the
 * generated code returns AOT_ERR_POOL, releasing what it holds on the way
 * out.  No malloc, no recursion: aot_release frees a dead list of any
 * length with a worklist threaded through the dead objects themselves.
 *
 * Requirements: C99, <stdint.h>; warning-free under
 * -std=c99 -Wall -Wextra -Wpedantic with gcc and clang; no undefined
 * behaviour (tested with AddressSanitizer and UBSan).
 */
#ifndef AOT_RUNTIME_H
#define AOT_RUNTIME_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "aot_context.h"

/* Status codes (the header of each model repeats them as <NAME>_...). */
#define AOT_OK 0
#define AOT_ERR_NULL 1
#define AOT_ERR_POOL 2
#define AOT_ERR_DEPTH 3
#define AOT_ERR_MATCH 4
#define AOT_ERR_VALUE 5

#define AOT_KIND_TENSOR 1u
#define AOT_KIND_ADT 2u
#define AOT_KIND_TUPLE 3u
#define AOT_KIND_CLOSURE 4u
#define AOT_KIND_REF 5u

/* Flags: made during the current call of the entry function; reached by
   the cycle collector's marking. */
#define AOT_FLAG_NEW 1u
#define AOT_FLAG_MARK 2u

/* The code of a closure: `self` is the closure (its fields are the
   captured values), `args` the arguments (borrowed), `*out` receives the
   result (owned by the caller) when the status is AOT_OK. */
typedef int32_t (*aot_code)(aot_ctx *ctx, aot_obj *self, aot_obj *const *args, aot_obj **out);

struct aot_obj {
    uint32_t rc;          /* references held; 0 for a static or free object */
    uint8_t kind;         /* AOT_KIND_... */
    uint8_t flags;        /* AOT_FLAG_... (pool objects) */
    uint16_t tag;         /* the constructor's tag (AOT_KIND_ADT) */
    uint32_t nfields;     /* entries of fields[] */
    uint32_t block;       /* bytes of pool memory (0 for a static object) */
    size_t nbytes;        /* bytes of tensor data (AOT_KIND_TENSOR) */
    union {
        const void *data; /* AOT_KIND_TENSOR: the elements */
        aot_code code;    /* AOT_KIND_CLOSURE */
        aot_obj *next;    /* free or dead blocks: the list link */
    } u;
    aot_obj *fields[];    /* fields, captured values, a reference's value */
};

/* Byte offset of a pool tensor's data from its object (aligned). */
#define AOT_TENSOR_OFFSET \
    ((offsetof(aot_obj, fields) + AOT_POOL_ALIGN - 1u) / AOT_POOL_ALIGN * AOT_POOL_ALIGN)

static inline void aot_ctx_init(aot_ctx *ctx, unsigned char *base, size_t capacity,
                                uint32_t max_depth, size_t stack_bytes)
{
    size_t i;
    ctx->base = base;
    ctx->capacity = capacity / AOT_POOL_ALIGN * AOT_POOL_ALIGN;
    ctx->top = 0;
    ctx->in_use = 0;
    ctx->high_water = 0;
    for (i = 0; i < AOT_POOL_CLASSES; i++) {
        ctx->small[i] = NULL;
    }
    ctx->large = NULL;
    ctx->stack_base = 0;
    ctx->stack_bytes = stack_bytes;
    ctx->depth = 0;
    ctx->max_depth = max_depth;
    ctx->in_call = 0;
}

/* Forget every block: only when none is live. */
static inline void aot_pool_reset(aot_ctx *ctx)
{
    size_t i;
    ctx->top = 0;
    for (i = 0; i < AOT_POOL_CLASSES; i++) {
        ctx->small[i] = NULL;
    }
    ctx->large = NULL;
}

/* A block of at least `bytes` bytes, or NULL when the pool is exhausted
   (or the request cannot be represented). */
static inline aot_obj *aot_alloc(aot_ctx *ctx, size_t bytes)
{
    size_t block;
    aot_obj *o = NULL;
    if (bytes > ctx->capacity || bytes > (size_t)UINT32_MAX - AOT_POOL_ALIGN) {
        return NULL;
    }
    block = (bytes + AOT_POOL_ALIGN - 1u) / AOT_POOL_ALIGN * AOT_POOL_ALIGN;
    if (block <= AOT_POOL_SMALL_MAX) {
        size_t cls = block / AOT_POOL_ALIGN - 1u;
        if (ctx->small[cls] != NULL) {
            o = ctx->small[cls];
            ctx->small[cls] = o->u.next;
        }
    } else {
        aot_obj **link = &ctx->large;
        while (*link != NULL && (*link)->block < block) {
            link = &(*link)->u.next;
        }
        if (*link != NULL) {
            o = *link;
            *link = o->u.next;
            if (o->block - block >= 2u * AOT_POOL_SMALL_MAX) {
                /* split: the tail stays free */
                aot_obj *rest = (aot_obj *)(void *)((unsigned char *)o + block);
                rest->rc = 0;
                rest->block = (uint32_t)(o->block - block);
                rest->u.next = ctx->large;
                ctx->large = rest;
                o->block = (uint32_t)block;
            }
            block = o->block;
        }
    }
    if (o == NULL) {
        if (ctx->capacity - ctx->top < block) {
            return NULL;
        }
        o = (aot_obj *)(void *)(ctx->base + ctx->top);
        ctx->top += block;
    }
    o->block = (uint32_t)block;
    o->flags = ctx->in_call ? (uint8_t)AOT_FLAG_NEW : (uint8_t)0u;
    ctx->in_use += block;
    if (ctx->in_use > ctx->high_water) {
        ctx->high_water = ctx->in_use;
    }
    return o;
}

static inline void aot_free_block(aot_ctx *ctx, aot_obj *o)
{
    size_t block = o->block;
    o->rc = 0;
    ctx->in_use -= block;
    if (ctx->in_use == 0) {
        aot_pool_reset(ctx);
        return;
    }
    if ((unsigned char *)o + block == ctx->base + ctx->top) {
        ctx->top -= block;
    } else if (block <= AOT_POOL_SMALL_MAX) {
        size_t cls = block / AOT_POOL_ALIGN - 1u;
        o->u.next = ctx->small[cls];
        ctx->small[cls] = o;
    } else {
        o->u.next = ctx->large;
        ctx->large = o;
    }
}

/* A cell (ADT, tuple, closure, reference) with `n` fields, all NULL. */
static inline aot_obj *aot_new_cell(aot_ctx *ctx, unsigned kind, uint16_t tag, uint32_t n)
{
    uint32_t i;
    aot_obj *o = aot_alloc(ctx, offsetof(aot_obj, fields) + (size_t)n * sizeof(aot_obj *));
    if (o == NULL) {
        return NULL;
    }
    o->rc = 1;
    o->kind = (uint8_t)kind;
    o->tag = tag;
    o->nfields = n;
    o->nbytes = 0;
    o->u.data = NULL;
    for (i = 0; i < n; i++) {
        o->fields[i] = NULL;
    }
    return o;
}

/* A tensor of `nbytes` bytes of (uninitialised) data. */
static inline aot_obj *aot_new_tensor(aot_ctx *ctx, size_t nbytes)
{
    aot_obj *o;
    if (nbytes > ctx->capacity) {
        return NULL;
    }
    o = aot_alloc(ctx, AOT_TENSOR_OFFSET + nbytes);
    if (o == NULL) {
        return NULL;
    }
    o->rc = 1;
    o->kind = (uint8_t)AOT_KIND_TENSOR;
    o->tag = 0;
    o->nfields = 0;
    o->nbytes = nbytes;
    o->u.data = (unsigned char *)o + AOT_TENSOR_OFFSET;
    return o;
}

/* The writable data of a tensor made by aot_new_tensor. */
static inline void *aot_tensor_out(aot_obj *o)
{
    return (unsigned char *)o + AOT_TENSOR_OFFSET;
}

/* Reads of a scalar tensor, for conditions. */
static inline int aot_truth(const aot_obj *o)
{
    return *(const unsigned char *)o->u.data != 0;
}

static inline aot_obj *aot_retain(aot_obj *o)
{
    if (o != NULL && o->rc != 0) {
        o->rc++;
    }
    return o;
}

/* Drop one reference; free what dies, iteratively. */
static inline void aot_release(aot_ctx *ctx, aot_obj *o)
{
    aot_obj *dead;
    if (o == NULL || o->rc == 0 || --o->rc != 0) {
        return;
    }
    o->u.next = NULL;
    dead = o;
    while (dead != NULL) {
        aot_obj *d = dead;
        uint32_t i;
        dead = d->u.next;
        for (i = 0; i < d->nfields; i++) {
            aot_obj *f = d->fields[i];
            if (f != NULL && f->rc != 0 && --f->rc == 0) {
                f->u.next = dead;
                dead = f;
            }
        }
        aot_free_block(ctx, d);
    }
}

/*
 * Cycles.  Cells are immutable, so only a reference write can close a
 * cycle (Landin's knot: a ref holding a closure that captures the ref),
 * which reference counting alone never frees.  Programs that write
 * references call aot_collect_cycles at the end of each call of the entry
 * function: an object made during the call (AOT_FLAG_NEW) that the caller
 * cannot reach -- not from the value handles it passed or received
 * (`roots`), not from an object older than the call -- is garbage.
 * Marking propagates in linear passes over the pool until nothing
 * changes (no recursion, no stack, no extra memory); then the garbage's
 * references to survivors are dropped and its blocks freed.
 */
static inline aot_obj *aot_block_at(aot_ctx *ctx, size_t offset)
{
    return (aot_obj *)(void *)(ctx->base + offset);
}

static inline int aot_mark(aot_obj *o)
{
    if (o != NULL && o->rc != 0 && (o->flags & AOT_FLAG_NEW) != 0u &&
            (o->flags & AOT_FLAG_MARK) == 0u) {
        o->flags = (uint8_t)(o->flags | AOT_FLAG_MARK);
        return 1;
    }
    return 0;
}

static inline void aot_collect_cycles(aot_ctx *ctx, aot_obj *const *roots, size_t nroots)
{
    size_t i, off;
    int changed = 1;
    if (ctx->in_use == 0) {
        return;
    }
    for (i = 0; i < nroots; i++) {
        (void)aot_mark(roots[i]);
    }
    while (changed) {
        changed = 0;
        for (off = 0; off < ctx->top; off += aot_block_at(ctx, off)->block) {
            aot_obj *o = aot_block_at(ctx, off);
            uint32_t k;
            if (o->rc == 0 || ((o->flags & AOT_FLAG_NEW) != 0u &&
                               (o->flags & AOT_FLAG_MARK) == 0u)) {
                continue;
            }
            for (k = 0; k < o->nfields; k++) {
                changed |= aot_mark(o->fields[k]);
            }
        }
    }
    /* the garbage drops its references to survivors */
    for (off = 0; off < ctx->top; off += aot_block_at(ctx, off)->block) {
        aot_obj *o = aot_block_at(ctx, off);
        uint32_t k;
        if (o->rc == 0 || (o->flags & (AOT_FLAG_NEW | AOT_FLAG_MARK)) != AOT_FLAG_NEW) {
            continue;
        }
        for (k = 0; k < o->nfields; k++) {
            aot_obj *f = o->fields[k];
            if (f != NULL && f->rc != 0 &&
                    (f->flags & (AOT_FLAG_NEW | AOT_FLAG_MARK)) != AOT_FLAG_NEW) {
                f->rc--;   /* a survivor is still referenced by a root: never 0 here */
            }
        }
    }
    /* free the garbage, clear the flags of the survivors */
    off = 0;
    while (off < ctx->top) {
        aot_obj *o = aot_block_at(ctx, off);
        size_t next = off + o->block;
        if (o->rc != 0) {
            if ((o->flags & (AOT_FLAG_NEW | AOT_FLAG_MARK)) == AOT_FLAG_NEW) {
                aot_free_block(ctx, o);
            } else {
                o->flags = 0u;
            }
        }
        off = next;
    }
}

/*
 * The stack.  The recursion bound is two bounds: `max_depth` calls in
 * progress, and `stack_bytes` bytes of stack between the entry function's
 * frame and the frame making a call.  The entry records where its frame
 * is (aot_stack_mark); every non-tail call (aot_enter) measures how far
 * the stack has moved since.  C99 cannot measure a stack: comparing or
 * subtracting pointers to different objects is undefined, so the
 * addresses are converted to uintptr_t first (C99 7.18.1.4) and the
 * integers subtracted.  What the integers mean is implementation-defined;
 * on every target aot supports (gcc and clang on x86-64, AArch64, Arm
 * Cortex-M, RISC-V: flat address spaces) they are the byte addresses, and
 * the distance is taken in either direction, so the stack may grow down
 * or up.  The distance counts the frames of the calls in progress but not
 * the one about to start, nor what a kernel or the runtime needs below
 * it: the thread's stack must exceed stack_bytes by that headroom (a few
 * KiB; see the README).
 */
static inline uintptr_t aot_stack_address(const volatile unsigned char *here)
{
    return (uintptr_t)(const volatile void *)here;
}

static inline void aot_stack_mark(aot_ctx *ctx)
{
#if defined(__clang_analyzer__)
    /* clang --analyze follows the integer back to the local and reports a
     * stack address escaping into the context (core.StackAddressEscape);
     * it is only ever compared as an integer, never turned back into a
     * pointer.  The analyzer sees a fixed mark instead. */
    ctx->stack_base = (uintptr_t)0u;
#else
    volatile unsigned char here = 0u;
    ctx->stack_base = aot_stack_address(&here);
#endif
}

/* Enter a (non-tail) call: AOT_ERR_DEPTH past either bound. */
static inline int32_t aot_enter(aot_ctx *ctx)
{
    volatile unsigned char here = 0u;
    uintptr_t now = aot_stack_address(&here);
    uintptr_t used = now < ctx->stack_base ? ctx->stack_base - now : now - ctx->stack_base;
    if (ctx->depth >= ctx->max_depth || used > ctx->stack_bytes) {
        return AOT_ERR_DEPTH;
    }
    ctx->depth++;
    return AOT_OK;
}

static inline void aot_leave(aot_ctx *ctx)
{
    ctx->depth--;
}

#endif /* AOT_RUNTIME_H */
