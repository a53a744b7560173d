/* main.c - ncf.h on a microcontroller: the model is a const array in flash (model_f32.h and
   model_int8.h, written by demo --export_c), read in place (ncf_model_open), and every
   recommendation is scored in a static workspace, no heap. Runs under qemu-system-arm
   (mps2-an386: Cortex-M4F; mps2-an385 with the Cortex-M0 build) and qemu-system-riscv32 (virt:
   RV32IMAC, RV32IMAFC) with semihosting for its output. Checks its top-10 lists against the
   host's (expect.h, from gen.c) and prints the figures: heap, workspace, stack and
   instructions per recommendation and per open. */
#include "ncf.h"
#include "expect.h"
#include "model_f32.h"
#include "model_int8.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- heap accounting: ncf.h's allocations only (NCF_MALLOC in ncf_impl.c) ---- */
static size_t heap_now, heap_peak;
static long heap_calls;

void *dev_malloc(size_t n)
{
    size_t *p = (size_t *)malloc(n + 8);
    if (!p) return NULL;
    p[0] = n, heap_now += n, heap_calls++;
    if (heap_now > heap_peak) heap_peak = heap_now;
    return (char *)p + 8;
}

void dev_free(void *p)
{
    if (!p) return;
    heap_now -= *(size_t *)((char *)p - 8);
    free((char *)p - 8);
}

void *dev_realloc(void *p, size_t n)
{
    void *q = dev_malloc(n);
    if (q && p) {
        size_t old = *(size_t *)((char *)p - 8);
        memcpy(q, p, old < n ? old : n);
        dev_free(p);
    }
    return q;
}

/* ---- instructions ---- */
#if defined(__riscv)
/* minstret counts retired instructions (under qemu -icount, exactly): one per "tick". Read
   with csrrs rd, csr, x0 spelt as .insn: assemblers that want Zicsr named refuse csrr. */
#define READ_CSR(csr, v) __asm__ __volatile__(".insn i 0x73, 2, %0, x0, " #csr : "=r"(v))
static uint64_t ticks_now(void)
{
    uint32_t hi, lo, again;
    do {
        READ_CSR(-1150, hi); /* minstreth, 0xB82 */
        READ_CSR(-1278, lo); /* minstret, 0xB02 */
        READ_CSR(-1150, again);
    } while (hi != again);
    return (uint64_t)hi << 32 | lo;
}
static void ticks_start(void) {}
static uint32_t insns_per_tick(void) { return 1; }
#if defined(__riscv_flen)
#define CORE_NAME "RV32IMAFC (hard float)"
#else
#define CORE_NAME "RV32IMAC (soft float)"
#endif
#define SP_READ "mv %0, sp"
#else
/* SysTick counts the core clock; qemu -icount shift=0 runs one instruction per virtual
   nanosecond, so instructions per tick are measured once on a known loop */
#define SYST_CSR (*(volatile uint32_t *)0xE000E010u)
#define SYST_RVR (*(volatile uint32_t *)0xE000E014u)
#define SYST_CVR (*(volatile uint32_t *)0xE000E018u)
static volatile uint32_t wraps;

void SysTick_Handler(void) { wraps++; }

static void spin(uint32_t n);

/* (qemu may count the first reload as a wrap: it is taken before the count starts) */
static void ticks_start(void)
{
    SYST_CSR = 0, SYST_RVR = 0xFFFFFFu, SYST_CVR = 0, SYST_CSR = 7u;
    spin(64);
    wraps = 0;
}

static uint64_t ticks_now(void)
{
    uint32_t w, v;
    do w = wraps, v = SYST_CVR;
    while (w != wraps);
    return (uint64_t)w * 0x1000000u + (0xFFFFFFu - v);
}

static void spin(uint32_t n) /* 2 instructions an iteration */
{
    __asm__ __volatile__(".syntax unified\n1: subs %0, %0, #1\n bne 1b" : "+l"(n) : : "cc");
}

static uint32_t insns_per_tick(void)
{
    uint64_t t;
    ticks_start();
    t = ticks_now();
    spin(2000000u);
    t = ticks_now() - t;
    return (uint32_t)((4000000u + t / 2) / t);
}
#if defined(__ARM_FP)
#define CORE_NAME "Cortex-M4F (hard float)"
#else
#define CORE_NAME "Cortex-M0 (soft float)"
#endif
#define SP_READ "mov %0, sp"
#endif

/* ---- stack: painted below the caller's frame, then the deepest byte written is found ---- */
#define PAINTED 16384

static uint8_t *stack_pointer(void)
{
    uint8_t *sp;
    __asm__ __volatile__(SP_READ : "=r"(sp));
    return sp;
}

static void __attribute__((noinline)) paint(uint8_t *top) { memset(top - PAINTED, 0xA5, PAINTED - 512); }

static unsigned long stack_used(const uint8_t *top)
{
    const uint8_t *p = top - PAINTED;
    while (p < top - 512 && *p == 0xA5) p++;
    return (unsigned long)(top - p);
}

/* ---- the run ---- */
static unsigned char workspace[32 * 1024] __attribute__((aligned(8)));

static int close_enough(float a, float b)
{
    float d = a > b ? a - b : b - a, m = b < 0 ? -b : b;
    return d <= 1e-5f * (1.0f + m);
}

/* Opens file in place (ncf_model_open with flags 0 or NCF_OPEN_VERIFIED): the ticks it took,
   or 0 when it refused (said why). */
static uint64_t timed_open(int flags, ncf_model **m, const unsigned char *file, size_t len, const char *name)
{
    uint64_t t;
    ticks_start();
    t = ticks_now();
    if (ncf_model_open(m, file, len, flags) != NCF_OK) {
        printf("%s: %s\n", name, ncf_error_text());
        return 0;
    }
    t = ticks_now() - t;
    return t ? t : 1;
}

static int run(const char *name, const unsigned char *file, size_t len, const struct expect *want, uint32_t ipt)
{
    ncf_model *m = NULL;
    size_t need, heap0 = heap_now;
    long calls0 = heap_calls, serve_calls;
    uint64_t t, best = (uint64_t)-1, open_checked, open_verified;
    uint8_t *top = stack_pointer();
    unsigned long open_stack, serve_stack = 0;
    ncf_rec_opts ro = ncf_rec_opts_default();
    int u, j, equal = 0, exact = 0, scores = 0;
    paint(top);
    if (!(open_verified = timed_open(NCF_OPEN_VERIFIED, &m, file, len, name))) return 0;
    ncf_model_free(m), m = NULL;
    calls0 = heap_calls;
    if (!(open_checked = timed_open(0, &m, file, len, name))) return 0;
    open_stack = stack_used(top);
    printf("%s: opening took %lu instructions (ncf_model_open: the CRC and every value checked), %lu where the "
           "firmware verified the image (NCF_OPEN_VERIFIED)\n",
           name, (unsigned long)(open_checked * ipt), (unsigned long)(open_verified * ipt));
    ro.work = workspace, ro.work_size = sizeof workspace; /* the 10 best not rated, in the workspace */
    need = ncf_rec_workspace_size(m, &ro);
    printf("%s: model file %lu bytes read in place; opening took %ld allocations, %lu bytes of heap (no "
           "parameters); workspace %lu bytes\n",
           name, (unsigned long)len, heap_calls - calls0, (unsigned long)(heap_now - heap0), (unsigned long)need);
    if (need > sizeof workspace) {
        printf("%s: the workspace needs %lu bytes, more than the %lu here\n", name, (unsigned long)need,
               (unsigned long)sizeof workspace);
        return 0;
    }
    serve_calls = heap_calls;
    for (u = 0; u < CHECKED; u++) {
        int64_t items[10];
        float sc[10];
        int n, same = 1;
        paint(top);
        ticks_start();
        t = ticks_now();
        n = ncf_recommend(m, want[u].user, &ro, items, sc);
        t = ticks_now() - t;
        if (stack_used(top) > serve_stack) serve_stack = stack_used(top);
        if (t < best) best = t;
        if (n != 10) {
            printf("%s: user %ld: %s\n", name, (long)want[u].user, ncf_error_text());
            return 0;
        }
        for (j = 0; j < 10; j++) {
            float w;
            uint32_t bits = (uint32_t)want[u].score_bits[j], got;
            memcpy(&w, &bits, 4), memcpy(&got, &sc[j], 4);
            /* the same item, or a near tie that rounding may order either way */
            same &= (items[j] == want[u].items[j] || j > 0) && close_enough(sc[j], w);
            exact += got == bits && items[j] == want[u].items[j], scores++;
        }
        equal += same;
        if (u == 0) {
            printf("%s: user %ld's top 10:", name, (long)want[u].user);
            for (j = 0; j < 10; j++) printf(" %ld", (long)items[j]);
            printf("\n");
        }
    }
    serve_calls = heap_calls - serve_calls;
    printf("%s: %d of %d top-10 lists equal to the host's (%d of %d scores bit-identical); %ld allocations while "
           "serving; %lu instructions per recommendation (the fastest of %d)\n",
           name, equal, CHECKED, exact, scores, serve_calls, (unsigned long)(best * ipt), CHECKED);
    printf("%s: stack at most %lu bytes opening, %lu recommending (painted, with the callers' frames; 512 at "
           "least)\n",
           name, open_stack, serve_stack);
    ncf_model_free(m);
    return equal == CHECKED && serve_calls == 0 && heap_now == heap0;
}

static long want_user(void) { return (long)expect_f32[0].user; }

/* Refusals say why, in newlib-nano's printf (no %lld, no floats): a misaligned buffer, an
   unknown user, a workspace too small. */
static int errors_read_right(void)
{
    static const char *want[3] = {"not 8-byte aligned", "unknown user 999999", "need"};
    ncf_model *m = NULL;
    int64_t items[10];
    int q, ok = 1;
    for (q = 0; q < 3; q++) {
        ncf_rec_opts ro = ncf_rec_opts_default();
        int rc;
        ro.work = workspace, ro.work_size = q == 1 ? sizeof workspace : 64;
        if (q == 0) rc = ncf_model_open(&m, model_f32 + 4, sizeof model_f32 - 4, 0);
        else if (ncf_model_open(&m, model_f32, sizeof model_f32, 0) != NCF_OK) return 0;
        else rc = ncf_recommend(m, q == 1 ? 999999 : want_user(), &ro, items, NULL);
        ok &= rc < 0 && strstr(ncf_error_text(), want[q]) != NULL;
        printf("refused: %s\n", ncf_error_text());
        ncf_model_free(m), m = NULL;
    }
    return ok;
}

int main(void)
{
    uint32_t ipt = insns_per_tick();
    int ok;
    printf("ncf.h %s on %s; %lu instructions per tick\n", ncf_version(), CORE_NAME, (unsigned long)ipt);
    ok = run("float32", model_f32, sizeof model_f32, expect_f32, ipt);
    ok &= run("int8", model_int8, sizeof model_int8, expect_int8, ipt);
    ok &= errors_read_right();
    printf("peak heap %lu bytes (ncf.h's), %s\n", (unsigned long)heap_peak, ok ? "ALL OK" : "FAILED");
    return ok ? 0 : 1;
}
