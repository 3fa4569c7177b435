/*
 * aot_context.h -- the state of one run of a whole-language program: its
 * object pool's bookkeeping, its recursion depth and its stack budget.
 *
 * Part of the hand-written C99 runtime of `aot` (runtime_c/).  The public
 * header of a program (`<name>.h`) includes it, so that a caller can own
 * contexts (`<name>_ctx`, which holds an aot_ctx and the pool) in memory
 * of its choice: one per thread or RTOS task that runs the program.  The
 * members are private to the generated code and aot_runtime.h.
 *
 * Requirements: C99, <stddef.h>, <stdint.h> (uintptr_t).
 */
#ifndef AOT_CONTEXT_H
#define AOT_CONTEXT_H

#include <stddef.h>
#include <stdint.h>

/* Block granularity and alignment of tensor data, in bytes. */
#define AOT_POOL_ALIGN 16u
/* Blocks up to this size are recycled through exact-size free lists. */
#define AOT_POOL_SMALL_MAX 1024u
#define AOT_POOL_CLASSES (AOT_POOL_SMALL_MAX / AOT_POOL_ALIGN)

typedef struct aot_obj aot_obj;
typedef struct aot_ctx aot_ctx;

/* The state of one context: its pool, its recursion depth and stack. */
struct aot_ctx {
    unsigned char *base;  /* the pool; NULL until aot_ctx_init */
    size_t capacity;
    size_t top;           /* bytes handed out by the bump pointer */
    size_t in_use;        /* bytes in live blocks */
    size_t high_water;    /* the largest in_use seen */
    aot_obj *small[AOT_POOL_CLASSES];
    aot_obj *large;
    uintptr_t stack_base; /* where the entry's frame is (aot_stack_mark) */
    size_t stack_bytes;   /* the stack the calls may use below it */
    uint32_t depth;       /* calls in progress */
    uint32_t max_depth;
    uint8_t in_call;      /* new objects get AOT_FLAG_NEW */
};

#endif /* AOT_CONTEXT_H */
