/* startup.c -- vector table and reset handler of the firmware `aot profile`
 * builds for a Cortex-M core under QEMU (a copy of examples/embedded/startup.c,
 * shipped in the package: an installed aot has no examples/).
 *
 * The core reads the initial stack pointer and the reset vector from the
 * first two words of the vector table (at address 0 on these boards, see
 * mps2.ld).  Reset_Handler then prepares what C expects:
 *
 *   1. copy .data's initial values from flash to RAM, zero .bss;
 *   2. give the FPU's coprocessors CP10/CP11 full access (SCB->CPACR) when
 *      compiled for hard float, before any floating-point instruction;
 *   3. open the semihosting stdio handles (newlib's rdimon: printf goes to
 *      the debugger, here QEMU's stdout);
 *   4. exit(main()): through semihosting, main's result becomes QEMU's exit
 *      status.
 *
 * Porting: keep this file, change the linker script's memory map; on real
 * hardware without a debugger attached, link with --specs=nosys.specs
 * instead of rdimon.specs, drop initialise_monitor_handles() and route
 * printf to a UART (_write).  A fault handler here exits with status 3 so an
 * emulated crash fails loudly instead of hanging.
 *
 * C99 plus GCC attributes for section placement (a startup file is
 * toolchain-specific by nature). */
#include <stdint.h>
#include <stdlib.h>

extern uint32_t _sidata, _sdata, _edata, _sbss, _ebss, _estack;

extern int main(void);
extern void initialise_monitor_handles(void);
extern void _exit(int status);

void Reset_Handler(void);
void Fault_Handler(void);
void Default_Handler(void);

#define SCB_CPACR (*(volatile uint32_t *)0xE000ED88u)

void Reset_Handler(void)
{
    const uint32_t *src = &_sidata;
    uint32_t *dst;

    for (dst = &_sdata; dst < &_edata; ++dst, ++src)
        *dst = *src;
    for (dst = &_sbss; dst < &_ebss; ++dst)
        *dst = 0u;

#if defined(__ARM_FP)
    SCB_CPACR |= (0xFu << 20); /* CP10 and CP11: full access */
    __asm__ volatile("dsb\n\tisb" ::: "memory");
#endif

    initialise_monitor_handles();
    exit(main());
}

/* HardFault, MemManage, BusFault, UsageFault: report through the exit
 * status (semihosting works from a handler under QEMU). */
void Fault_Handler(void)
{
    _exit(3);
}

void Default_Handler(void)
{
    _exit(4);
}

/* crti.o's hooks, which -nostartfiles leaves out: newlib's exit() calls
 * __libc_fini_array(), which calls _fini().  Nothing to do in C. */
void _init(void);
void _fini(void);

void _init(void)
{
}

void _fini(void)
{
}

/* Cortex-M4 system exceptions; this example enables no interrupts, so the
 * 32 device IRQ vectors of the board are left out. */
__attribute__((section(".isr_vector"), used))
static void (*const vector_table[16])(void) = {
    (void (*)(void))(uintptr_t)&_estack, /* initial stack pointer */
    Reset_Handler,
    Default_Handler, /* NMI */
    Fault_Handler,   /* HardFault */
    Fault_Handler,   /* MemManage */
    Fault_Handler,   /* BusFault */
    Fault_Handler,   /* UsageFault */
    0, 0, 0, 0,      /* reserved */
    Default_Handler, /* SVCall */
    Default_Handler, /* DebugMonitor */
    0,               /* reserved */
    Default_Handler, /* PendSV */
    Default_Handler, /* SysTick */
};
