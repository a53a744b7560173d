/* startup.c - the vector table for the mps2 boards: the initial stack pointer, reset (the
   FPU switched on where there is one, then newlib's crt0 _start: it zeroes .bss, sets up
   the heap over semihosting, calls main and exits with its status), and SysTick for the
   instruction count. qemu loads .data where it runs. */
#include <stdint.h>
extern void _start(void);
extern void SysTick_Handler(void);
extern uint32_t __stack_top;

static void hang(void)
{
    for (;;) {}
}

static void reset(void)
{
#if defined(__ARM_FP)
    *(volatile uint32_t *)0xE000ED88u |= 0xFu << 20; /* CPACR: CP10 and CP11, full access */
    __asm__ __volatile__("dsb\n\tisb");
#endif
    _start();
}

__attribute__((section(".vectors"), used)) static void (*const vectors[16])(void) = {
    (void (*)(void))(uintptr_t)&__stack_top,
    reset,
    hang,
    hang,
    hang,
    hang,
    hang,
    0,
    0,
    0,
    0,
    hang,
    hang,
    0,
    hang,
    SysTick_Handler};
