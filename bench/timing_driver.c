/*
 * timing_driver.c -- time one aot-generated model from C.
 *
 * Generic over the model: it includes "bench_model.h", which
 * bench/onnx_models.py generates next to the model's artifact and which
 * includes the model's own header and defines
 *
 *   BENCH_MODEL_NAME           the model name (a string)
 *   BENCH_RUN(in, out, arena)  a call of the entry function
 *   BENCH_INPUT_SIZE           elements of the (single, float32) input
 *   BENCH_OUTPUT_SIZE          elements of the (single, float32) output
 *   BENCH_ARENA_BYTES          scratch memory of one call
 *   BENCH_ARENA_ALIGN          its required alignment
 *
 * Usage: timing_driver INPUT.bin OUTPUT.bin RUNS WARMUP [TIMES.bin]
 *
 * Reads the input as raw float32, calls the model WARMUP times, then RUNS
 * times each timed with clock_gettime(CLOCK_MONOTONIC), writes the output of
 * the last call as raw float32 (and every call's time as raw int64
 * nanoseconds to TIMES.bin, in call order) and prints one JSON object with
 * the median (the upper one for an even count), minimum, 90th percentile
 * and mean in nanoseconds.  One thread.
 */
#define _POSIX_C_SOURCE 199309L

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_model.h"

#if BENCH_ARENA_BYTES > 0
#define ARENA_ALLOC (BENCH_ARENA_BYTES + BENCH_ARENA_ALIGN)
#else
#define ARENA_ALLOC 1
#endif

static unsigned char arena_storage[ARENA_ALLOC];
static float input[BENCH_INPUT_SIZE];
static float output[BENCH_OUTPUT_SIZE];

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + (int64_t)ts.tv_nsec;
}

static int compare_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a;
    int64_t y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

static int read_floats(const char *path, float *dst, size_t count)
{
    FILE *f = fopen(path, "rb");
    size_t got;
    if (f == NULL) {
        return 0;
    }
    got = fread(dst, sizeof(float), count, f);
    fclose(f);
    return got == count;
}

static int write_floats(const char *path, const float *src, size_t count)
{
    FILE *f = fopen(path, "wb");
    size_t put;
    if (f == NULL) {
        return 0;
    }
    put = fwrite(src, sizeof(float), count, f);
    return (fclose(f) == 0) && put == count;
}

int main(int argc, char **argv)
{
    void *arena;
    int64_t *times;
    long runs, warmup, i;
    double mean = 0.0;
    int32_t status;

    if (argc != 5 && argc != 6) {
        fprintf(stderr, "usage: %s INPUT.bin OUTPUT.bin RUNS WARMUP [TIMES.bin]\n", argv[0]);
        return 2;
    }
    runs = strtol(argv[3], NULL, 10);
    warmup = strtol(argv[4], NULL, 10);
    if (runs < 1 || warmup < 0) {
        fprintf(stderr, "RUNS must be >= 1 and WARMUP >= 0\n");
        return 2;
    }
    if (!read_floats(argv[1], input, BENCH_INPUT_SIZE)) {
        fprintf(stderr, "cannot read %d floats from %s\n", (int)BENCH_INPUT_SIZE, argv[1]);
        return 1;
    }
    /* Align the arena inside its static storage. */
    arena = arena_storage + ((BENCH_ARENA_ALIGN - (uintptr_t)arena_storage % BENCH_ARENA_ALIGN)
                             % BENCH_ARENA_ALIGN);
    times = (int64_t *)malloc((size_t)runs * sizeof(int64_t));
    if (times == NULL) {
        fprintf(stderr, "out of memory\n");
        return 1;
    }

    for (i = 0; i < warmup; i++) {
        status = BENCH_RUN(input, output, arena);
        if (status != 0) {
            fprintf(stderr, "model returned status %d\n", (int)status);
            return 1;
        }
    }
    for (i = 0; i < runs; i++) {
        int64_t start = now_ns();
        status = BENCH_RUN(input, output, arena);
        times[i] = now_ns() - start;
        if (status != 0) {
            fprintf(stderr, "model returned status %d\n", (int)status);
            return 1;
        }
    }
    if (!write_floats(argv[2], output, BENCH_OUTPUT_SIZE)) {
        fprintf(stderr, "cannot write %s\n", argv[2]);
        return 1;
    }

    if (argc == 6) {
        FILE *f = fopen(argv[5], "wb");
        size_t put = f == NULL ? 0 : fwrite(times, sizeof(int64_t), (size_t)runs, f);
        if (f == NULL || fclose(f) != 0 || put != (size_t)runs) {
            fprintf(stderr, "cannot write %s\n", argv[5]);
            return 1;
        }
    }
    for (i = 0; i < runs; i++) {
        mean += (double)times[i];
    }
    mean /= (double)runs;
    qsort(times, (size_t)runs, sizeof(int64_t), compare_i64);
    printf("{\"model\": \"%s\", \"runs\": %ld, \"warmup\": %ld, \"median_ns\": %lld, "
           "\"min_ns\": %lld, \"p90_ns\": %lld, \"mean_ns\": %.1f}\n",
           BENCH_MODEL_NAME, runs, warmup, (long long)times[runs / 2], (long long)times[0],
           (long long)times[(runs * 9) / 10 < runs ? (runs * 9) / 10 : runs - 1], mean);
    free(times);
    return 0;
}
