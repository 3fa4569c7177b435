/* main.c -- run a compiled model on fixed inputs and check its outputs.
 *
 * Plain C99; the same file runs on the host and on the Cortex-M4F under
 * QEMU (stdout and the exit status reach the host through semihosting).
 * Everything model-specific is in test_data.h, written by gen_test_data.py:
 * the inputs, the expected outputs, the tolerances and td_run(), which
 * calls the model's generated entry function.
 *
 * Prints one line per output and then `PASS <model>` or `FAIL <model>`;
 * returns 0 on PASS, 1 on FAIL.
 *
 *   -DRUNS=N              run the inference N times before checking (the
 *                         instruction count per inference is the difference
 *                         between two images with different N, halved)
 *   -DTD_CORRUPT=1        perturb the first expected value beyond its
 *                         tolerance: the check must then FAIL (negative test)
 *
 * On Arm targets it also measures the stack the inference uses: it paints
 * TD_STACK_PAINT_BYTES below its own stack frame with a pattern before the
 * run and afterwards finds the deepest word that changed (-DTD_NO_STACK
 * turns this off; it assumes nothing else lives below the stack pointer,
 * true for a bare-metal program without interrupts).
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "test_data.h"

#ifndef RUNS
#define RUNS 1
#endif

/* Read at run time, so images built with different RUNS run the same code
 * and differ only in this word: their instruction counts then differ by
 * exactly (RUNS difference) x (one inference). */
static volatile int runs = RUNS;

#ifndef TD_CORRUPT
#define TD_CORRUPT 0
#endif

#if TD_ARENA_CALLER
/* The model's scratch memory.  C99 cannot ask for an alignment, so take
 * TD_ARENA_ALIGN bytes more and align the pointer by hand. */
static unsigned char arena_bytes[TD_ARENA_BYTES + TD_ARENA_ALIGN];

static void *aligned_arena(void)
{
    uintptr_t p = (uintptr_t)arena_bytes;
    p = (p + (uintptr_t)(TD_ARENA_ALIGN - 1)) & ~(uintptr_t)(TD_ARENA_ALIGN - 1);
    return (void *)p;
}
#else
static void *aligned_arena(void)
{
    return NULL;
}
#endif

#if defined(__arm__) && !defined(TD_NO_STACK)
#define TD_MEASURE_STACK 1
#ifndef TD_STACK_PAINT_BYTES
#define TD_STACK_PAINT_BYTES 65536u
#endif
#define TD_STACK_PATTERN 0xA5C3A5C3u

static uintptr_t stack_pointer(void)
{
    uintptr_t sp;
    __asm__ volatile("mov %0, sp" : "=r"(sp));
    return sp;
}

/* Fill [top - TD_STACK_PAINT_BYTES, top) with the pattern. */
static void paint_stack(uintptr_t top)
{
    volatile uint32_t *p = (volatile uint32_t *)(top - TD_STACK_PAINT_BYTES);
    while ((uintptr_t)p < top)
        *p++ = TD_STACK_PATTERN;
}

/* The lowest address below `top` written since paint_stack(top) (`top`
 * when none was). */
static uintptr_t stack_low_water(uintptr_t top)
{
    volatile const uint32_t *p = (volatile const uint32_t *)(top - TD_STACK_PAINT_BYTES);
    while ((uintptr_t)p < top && *p == TD_STACK_PATTERN)
        ++p;
    return (uintptr_t)p;
}
#else
#define TD_MEASURE_STACK 0
#endif

static int is_float(td_kind kind)
{
    return kind == TD_F32 || kind == TD_F64;
}

static int is_unsigned(td_kind kind)
{
    return kind == TD_U8 || kind == TD_U16 || kind == TD_U32 || kind == TD_U64 ||
           kind == TD_BOOL;
}

static unsigned long element_bytes(td_kind kind)
{
    switch (kind) {
    case TD_F64: case TD_I64: case TD_U64: return 8;
    case TD_F32: case TD_I32: case TD_U32: return 4;
    case TD_I16: case TD_U16: return 2;
    default: return 1;
    }
}

static double float_at(td_kind kind, const void *p, unsigned long i)
{
    return kind == TD_F32 ? (double)((const float *)p)[i] : ((const double *)p)[i];
}

static long long signed_at(td_kind kind, const void *p, unsigned long i)
{
    switch (kind) {
    case TD_I8: return ((const int8_t *)p)[i];
    case TD_I16: return ((const int16_t *)p)[i];
    case TD_I32: return ((const int32_t *)p)[i];
    default: return (long long)((const int64_t *)p)[i];
    }
}

static unsigned long long unsigned_at(td_kind kind, const void *p, unsigned long i)
{
    switch (kind) {
    case TD_U16: return ((const uint16_t *)p)[i];
    case TD_U32: return ((const uint32_t *)p)[i];
    case TD_U64: return (unsigned long long)((const uint64_t *)p)[i];
    default: return ((const uint8_t *)p)[i];
    }
}

/* |got - want| of integer element i (exact in unsigned long long). */
static unsigned long long int_error(const td_output *o, unsigned long i, int corrupt)
{
    if (is_unsigned(o->kind)) {
        unsigned long long g = unsigned_at(o->kind, o->got, i);
        unsigned long long w = unsigned_at(o->kind, o->want, i);
        if (corrupt)
            w += (unsigned long long)o->int_atol + 1u;
        return g >= w ? g - w : w - g;
    } else {
        long long g = signed_at(o->kind, o->got, i);
        long long w = signed_at(o->kind, o->want, i);
        unsigned long long d = g >= w ? (unsigned long long)g - (unsigned long long)w
                                      : (unsigned long long)w - (unsigned long long)g;
        if (corrupt)
            d += (unsigned long long)o->int_atol + 1u;
        return d;
    }
}

/* Checks one output; prints a line; returns the number of mismatches. */
static unsigned long check_output(const td_output *o, int corrupt_first)
{
    unsigned long i, mismatches = 0, exact = 0;
    double max_err = 0.0, worst = 0.0; /* worst: error / tolerance */

    for (i = 0; i < o->size; ++i) {
        int corrupt = corrupt_first && i == 0;
        if (is_float(o->kind)) {
            double g = float_at(o->kind, o->got, i);
            double w = float_at(o->kind, o->want, i);
            double tol, err;
            if (corrupt)
                w += 1.0 + 2.0 * (o->atol + o->rtol * fabs(w));
            tol = o->atol + o->rtol * fabs(w);
            if (g == w || (g != g && w != w)) { /* equal, or both NaN */
                ++exact;
                continue;
            }
            err = fabs(g - w);
            if (!(err <= tol)) /* NaN against a number fails too */
                ++mismatches;
            if (err != err || err > max_err)
                max_err = err;
            if (err != err || err / tol > worst)
                worst = err / tol;
        } else {
            unsigned long long d = int_error(o, i, corrupt);
            if (d == 0) {
                ++exact;
                continue;
            }
            if (d > (unsigned long long)o->int_atol)
                ++mismatches;
            if ((double)d > max_err)
                max_err = (double)d;
        }
    }
    if (is_float(o->kind))
        printf("  output %s: %lu values, max |err| %.3g (%.3g of tolerance), "
               "bit-exact %lu/%lu, mismatches %lu\n",
               o->name, o->size, max_err, worst, exact, o->size, mismatches);
    else
        printf("  output %s: %lu values, max |err| %.0f (allowed %ld), exact %lu/%lu, "
               "mismatches %lu\n",
               o->name, o->size, max_err, o->int_atol, exact, o->size, mismatches);
    return mismatches;
}

int main(void)
{
    void *arena = aligned_arena();
    unsigned long k, mismatches = 0;
    int32_t status = 0;
    int run;

    /* A pattern the model must overwrite: an output it forgot to write
     * cannot pass by accident on zeroed memory. */
    for (k = 0; k < TD_NUM_OUTPUTS; ++k)
        memset(td_outputs[k].got, 0xA5, td_outputs[k].size * element_bytes(td_outputs[k].kind));

#if TD_MEASURE_STACK
    /* Frames of the inference start at main's stack pointer; 64 bytes of
     * it are left unpainted for paint_stack's own frame. */
    uintptr_t stack_base = stack_pointer();
    uintptr_t stack_top = (stack_base - 64u) & ~(uintptr_t)7u;
    paint_stack(stack_top);
#endif

    for (run = 0; run < runs && status == 0; ++run)
        status = td_run(arena);

    printf("model %s: %d run(s), %lu MACs per inference, reference %s\n",
           TD_MODEL_NAME, runs, (unsigned long)TD_MACS, TD_REFERENCE);
#if TD_MEASURE_STACK
    {
        uintptr_t low = stack_low_water(stack_top);
        printf("stack used by the inference: %s%lu bytes\n",
               low <= stack_top - TD_STACK_PAINT_BYTES ? ">= " : "",
               (unsigned long)(stack_base - low));
    }
#endif
    if (status != 0) {
        printf("FAIL %s: the entry function returned status %ld\n", TD_MODEL_NAME,
               (long)status);
        return 1;
    }
    for (k = 0; k < TD_NUM_OUTPUTS; ++k)
        mismatches += check_output(&td_outputs[k], TD_CORRUPT && k == 0);
    if (mismatches != 0) {
        printf("FAIL %s: %lu value(s) out of tolerance\n", TD_MODEL_NAME, mismatches);
        return 1;
    }
    printf("PASS %s\n", TD_MODEL_NAME);
    return 0;
}
