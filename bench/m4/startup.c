/*
 * Minimal bare-metal startup for the kernel benchmark on QEMU's mps2-an386
 * (Cortex-M4F): a vector table, a Reset_Handler that copies .data, zeroes
 * .bss, enables the FPU and runs main() under newlib's semihosting
 * (rdimon), whose exit() ends QEMU with main's status.  Only for
 * bench/kernels.py --m4; the user-facing firmware lives in
 * examples/embedded/.
 */
#include <stdint.h>
#include <stdlib.h>

extern uint32_t __data_load__, __data_start__, __data_end__, __bss_start__, __bss_end__;
extern uint32_t __stack_top__;
extern void initialise_monitor_handles(void);
extern int main(void);

void Reset_Handler(void);
void Default_Handler(void);

void Default_Handler(void)
{
    exit(99);
}

void Reset_Handler(void)
{
    uint32_t *src = &__data_load__, *dst = &__data_start__;
    while (dst < &__data_end__) {
        *dst++ = *src++;
    }
    for (dst = &__bss_start__; dst < &__bss_end__; ++dst) {
        *dst = 0;
    }
#if defined(__ARM_FP)
    /* CP10 and CP11 full access (SCB->CPACR) */
    *(volatile uint32_t *)0xE000ED88u |= (0xFu << 20);
    __asm volatile("dsb\n\tisb");
#endif
    initialise_monitor_handles();
    exit(main());
}

__attribute__((section(".vectors"), used))
static void (*const vectors[16])(void) = {
    (void (*)(void))(&__stack_top__),
    Reset_Handler,
    Default_Handler, Default_Handler, Default_Handler, Default_Handler, Default_Handler,
    0, 0, 0, 0,
    Default_Handler, Default_Handler, 0, Default_Handler, Default_Handler,
};
