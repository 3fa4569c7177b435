/* main.c -- the on-device training loop: STEPS steps of SGD on a small MLP,
 * each step one call of the compiled training step
 *
 *     train_step_run(w1, b1, w2, b2, x, y, &loss, w1', b1', w2', b2', arena)
 *
 * (written by aot from the IR; see train.py).  The parameters live in two
 * sets of buffers used in turn (a step's outputs must not overlap its
 * inputs), the batches and the interpreter's losses in train_data.h
 * (train.py firmware).  Plain C99, no malloc: the same file runs on the
 * host and on the Cortex-M4F under QEMU (printf and the exit status reach
 * the host through semihosting).
 *
 * Prints `step <i> loss <value>` per step, then `PASS train_step` when
 * every loss equals the interpreter's to TD_RTOL x |loss| + TD_ATOL and the
 * last is below TD_FALL x the first, else `FAIL train_step`; returns 0 on
 * PASS, 1 on FAIL.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "train_step.h"
#include "train_data.h"

/* The step's scratch memory (C99 cannot ask for an alignment: take
 * TRAIN_STEP_ARENA_ALIGN bytes more and align the pointer by hand). */
static unsigned char arena_bytes[TRAIN_STEP_ARENA_BYTES + TRAIN_STEP_ARENA_ALIGN];

static float w1[2][TRAIN_STEP_INPUT_0_SIZE], b1[2][TRAIN_STEP_INPUT_1_SIZE];
static float w2[2][TRAIN_STEP_INPUT_2_SIZE], b2[2][TRAIN_STEP_INPUT_3_SIZE];

int main(void)
{
    uintptr_t p = (uintptr_t)arena_bytes;
    void *arena;
    int step, failed = 0;
    double first = 0.0, last = 0.0;

    p = (p + (uintptr_t)(TRAIN_STEP_ARENA_ALIGN - 1)) & ~(uintptr_t)(TRAIN_STEP_ARENA_ALIGN - 1);
    arena = (void *)p;
    memcpy(w1[0], td_init_w1, sizeof w1[0]);
    memcpy(b1[0], td_init_b1, sizeof b1[0]);
    memcpy(w2[0], td_init_w2, sizeof w2[0]);
    memcpy(b2[0], td_init_b2, sizeof b2[0]);
    for (step = 0; step < TD_STEPS; ++step) {
        int in = step % 2, out = 1 - in, batch = step % TD_BATCHES;
        float loss;
        double want = td_want[step], err;
        int32_t status = train_step_run(w1[in], b1[in], w2[in], b2[in], td_x[batch], td_y[batch],
                                        &loss, w1[out], b1[out], w2[out], b2[out], arena);
        if (status != TRAIN_STEP_OK) {
            printf("step %d: train_step_run returned %ld\n", step, (long)status);
            return 1;
        }
        err = fabs((double)loss - want);
        if (!(err <= TD_RTOL * fabs(want) + TD_ATOL))
            ++failed;
        printf("step %d loss %.9g (interpreter %.9g)\n", step, (double)loss, want);
        if (step == 0)
            first = loss;
        last = loss;
    }
    if (!(last < TD_FALL * first)) {
        printf("the loss did not fall: %.9g -> %.9g\n", first, last);
        ++failed;
    }
    printf("arena %lu bytes; %s train_step\n", (unsigned long)TRAIN_STEP_ARENA_BYTES,
           failed ? "FAIL" : "PASS");
    return failed ? 1 : 0;
}
