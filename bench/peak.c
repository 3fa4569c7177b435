/*
 * peak.c -- a rough single-thread peak of float32 multiply-accumulates.
 *
 * NV independent vector accumulators, each updated acc = acc * m + c for
 * ITERS rounds; the vectors are as wide as the target's widest float
 * registers (GCC/Clang vector extensions: 64 bytes with AVX-512, 32 with
 * AVX, else 16), so with NV = 12 they stay in registers and the loop runs at
 * the machine's multiply-add throughput.  Built with -ffp-contract=fast the
 * update is one fused multiply-add (what onnxruntime's kernels use); with
 * -ffp-contract=off it is a multiply and an add rounded separately (what
 * aot's generated C must do to match the interpreter bit for bit), which on
 * most x86 cores halves the peak.  Prints {"gmacs": ...}: the best of 5.
 *
 * A host benchmark tool, not model code: it uses the vector extension of
 * GCC and Clang, which the generated C never does.
 */
#define _POSIX_C_SOURCE 199309L

#include <stdint.h>
#include <stdio.h>
#include <time.h>

#if defined(__AVX512F__)
#define VBYTES 64
#elif defined(__AVX__)
#define VBYTES 32
#else
#define VBYTES 16
#endif
#define LANES (VBYTES / 4)
#define NV 12
#define ITERS 1000000

typedef float vec __attribute__((vector_size(VBYTES)));

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + (int64_t)ts.tv_nsec;
}

int main(void)
{
    volatile float vm = 0.999f, vc = 0.001f;
    vec m, c, acc[NV];
    double best = 0.0;
    float sink = 0.0f;
    int round, i, j, k;

    for (k = 0; k < LANES; k++) {
        m[k] = vm;
        c[k] = vc;
    }
    for (round = 0; round < 5; round++) {
        int64_t start, elapsed;
        double gmacs;
        for (j = 0; j < NV; j++) {
            for (k = 0; k < LANES; k++) {
                acc[j][k] = (float)(j * LANES + k);
            }
        }
        start = now_ns();
        for (i = 0; i < ITERS; i++) {
            /* written out so that every accumulator is a register */
            acc[0] = acc[0] * m + c;
            acc[1] = acc[1] * m + c;
            acc[2] = acc[2] * m + c;
            acc[3] = acc[3] * m + c;
            acc[4] = acc[4] * m + c;
            acc[5] = acc[5] * m + c;
            acc[6] = acc[6] * m + c;
            acc[7] = acc[7] * m + c;
            acc[8] = acc[8] * m + c;
            acc[9] = acc[9] * m + c;
            acc[10] = acc[10] * m + c;
            acc[11] = acc[11] * m + c;
        }
        elapsed = now_ns() - start;
        for (j = 0; j < NV; j++) {
            for (k = 0; k < LANES; k++) {
                sink += acc[j][k];
            }
        }
        gmacs = (double)NV * LANES * ITERS / (double)elapsed;
        if (gmacs > best) {
            best = gmacs;
        }
    }
    printf("{\"gmacs\": %.2f, \"vector_bytes\": %d, \"checksum\": %g}\n", best, VBYTES,
           (double)sink);
    return 0;
}
