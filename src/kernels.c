/* The GEMM tile and its plain-C reference. */
/* Activations are batch-major [B][C]; kernels are [in][out] (as Keras). The plain-C tile is
   the reference: a vector tile (GCC/clang vector extensions) computes the same sums in the
   same order with the same rounding, so its results must equal the plain tile's bit for bit
   where both round alike (make device and the WebAssembly checks compare plain-tile builds
   with a vector-tile host build, score bits included). */

/* One rounding rule for every kernel path. Compilers fuse a*b + c into one multiply-add in
   some loops and not in others (gcc's Zen tuning splits the FMA chain of a one-row tile but
   not of the full tile), which made a logit depend on where its row fell in a batch. So where
   the target has a fused multiply-add, every multiply-add in the kernels is written as one,
   and elsewhere none can be fused: a score is the same from any tile, batch or thread. */
#if defined(__FMA__) || defined(__FP_FAST_FMAF) || defined(__ARM_FEATURE_FMA) || defined(__aarch64__) || \
    defined(__s390x__) || defined(__powerpc64__)
#define NCF__FUSED 1
#define NCF__MADD(a, b, c) fmaf(a, b, c)
#else
#define NCF__FUSED 0
#define NCF__MADD(a, b, c) ((c) + (a) * (b))
#endif

/* Register tile: MR rows x NR columns of C held in registers across the k loop.
   With GCC/clang vector extensions NR is two vectors (AVX-512: 2x16 floats, else
   2x8); elsewhere the same tile in plain C, which gives the same bits. The vector form
   is the default only where the target has SIMD registers for it (x86, NEON, WebAssembly
   with -msimd128, POWER, z): on a microcontroller (Cortex-M, RISC-V without V) the compiler would emulate
   the vectors lane by lane, in more code and more time than the plain tile
   (NCF_VECTOR_EXT forces it, NCF_NO_VECTOR_EXT turns it off). */
#if !defined(NCF_VECTOR_EXT) && \
    (defined(__x86_64__) || defined(__i386__) || defined(__ARM_NEON) || defined(__aarch64__) || \
     defined(__wasm_simd128__) || defined(__powerpc64__) || defined(__s390x__))
#define NCF_VECTOR_EXT 1
#endif
#if (defined(__GNUC__) || defined(__clang__)) && defined(NCF_VECTOR_EXT) && !defined(NCF_NO_VECTOR_EXT)
#define NCF__VEC 1
#if defined(__AVX512F__)
#define NCF__VW 16
#elif defined(__AVX__)
#define NCF__VW 8
#else
#define NCF__VW 4 /* SSE, NEON */
#endif
typedef float ncf__vf __attribute__((vector_size(NCF__VW * 4)));
typedef int32_t ncf__vi __attribute__((vector_size(NCF__VW * 4))); /* a comparison's lane masks */
/* unaligned loads and stores (memcpy compiles to one instruction); macros, since
   passing vectors wider than the target's registers changes the ABI */
#define NCF__VLOAD(v, p) memcpy(&(v), (p), sizeof(ncf__vf))
#define NCF__VSTORE(p, v) memcpy((p), &(v), sizeof(ncf__vf))
#define NCF__MR (NCF__VW == 16 ? 8 : 6) /* rows per register tile: AVX-512 has 32 vector registers */
#define NCF__NR (2 * NCF__VW)
#if NCF__VW == 16 /* an 8-wide path for layers of 8 (the paper's last) */
typedef float ncf__vh __attribute__((vector_size(32)));
typedef int32_t ncf__vhi __attribute__((vector_size(32)));
#endif
/* c += a * b on vectors, under the rule above: the ISA's fused multiply-add where we know
   its intrinsic, else fmaf lane by lane (a target with FMA but no such mapping here). */
#if NCF__FUSED && defined(__FMA__)
#include <immintrin.h>
#if NCF__VW == 16
#define NCF__VFMA(c, a, b) ((c) = (ncf__vf)_mm512_fmadd_ps((__m512)(a), (__m512)(b), (__m512)(c)))
#define NCF__HFMA(c, a, b) ((c) = (ncf__vh)_mm256_fmadd_ps((__m256)(a), (__m256)(b), (__m256)(c)))
#else
#define NCF__VFMA(c, a, b) ((c) = (ncf__vf)_mm256_fmadd_ps((__m256)(a), (__m256)(b), (__m256)(c)))
#endif
#elif NCF__FUSED && defined(__ARM_NEON) && defined(__ARM_FEATURE_FMA) && NCF__VW == 4
#include <arm_neon.h>
#define NCF__VFMA(c, a, b) ((c) = (ncf__vf)vfmaq_f32((float32x4_t)(c), (float32x4_t)(a), (float32x4_t)(b)))
#elif NCF__FUSED
#define NCF__LANE_FMA(c, a, b, W) \
    do { \
        int l_; \
        for (l_ = 0; l_ < (W); l_++) (c)[l_] = fmaf((a)[l_], (b)[l_], (c)[l_]); \
    } while (0)
#define NCF__VFMA(c, a, b) NCF__LANE_FMA(c, a, b, NCF__VW)
#define NCF__HFMA(c, a, b) NCF__LANE_FMA(c, a, b, 8)
#else
#define NCF__VFMA(c, a, b) ((c) += (a) * (b))
#define NCF__HFMA(c, a, b) ((c) += (a) * (b))
#endif
/* Lane-wise square roots, correctly rounded as sqrtf is (the optimizer's row step): the ISA's
   instruction where we know its intrinsic, else sqrtf lane by lane. */
#if defined(__AVX512F__) || defined(__AVX__) || defined(__SSE2__)
#include <immintrin.h>
#endif
#define NCF__LANE_SQRT(v, W) \
    do { \
        int q_; \
        for (q_ = 0; q_ < (W); q_++) (v)[q_] = sqrtf((v)[q_]); \
    } while (0)
#if NCF__VW == 16
#define NCF__VSQRT(v) ((v) = (ncf__vf)_mm512_sqrt_ps((__m512)(v)))
#define NCF__HSQRT(v) ((v) = (ncf__vh)_mm256_sqrt_ps((__m256)(v)))
#elif NCF__VW == 8
#define NCF__VSQRT(v) ((v) = (ncf__vf)_mm256_sqrt_ps((__m256)(v)))
#elif defined(__SSE2__)
#define NCF__VSQRT(v) ((v) = (ncf__vf)_mm_sqrt_ps((__m128)(v)))
#elif defined(__aarch64__)
#include <arm_neon.h>
#define NCF__VSQRT(v) ((v) = (ncf__vf)vsqrtq_f32((float32x4_t)(v)))
#else
#define NCF__VSQRT(v) NCF__LANE_SQRT(v, NCF__VW)
#endif
#else
#define NCF__VEC 0
#define NCF__MR 4
#define NCF__NR 16
#endif
/* Tile flags. NCF__ACC continues each sum from C; NCF__ADD sums from the bias (or 0) as
   usual and adds the total to C once at the end (the split first layer's two halves). */
enum { NCF__ACC = 1, NCF__RELU = 2, NCF__ADD = 4 };

/* Any tile up to MR x NR, in plain C: edges, and every tile without vectors. */
static void ncf__tile_scalar(float *C, int ldc, const float *A, ptrdiff_t sam, ptrdiff_t sak, const float *B, int ldb,
                             const float *bias, int mr, int nr, int K, int flags)
{
    float acc[NCF__MR][NCF__NR];
    int i, j, k;
    for (i = 0; i < mr; i++)
        for (j = 0; j < nr; j++) acc[i][j] = flags & NCF__ACC ? C[(size_t)i * ldc + j] : bias ? bias[j] : 0.0f;
    for (k = 0; k < K; k++) {
        const float *b = B + (size_t)k * ldb;
        for (i = 0; i < mr; i++) {
            float a = A[i * sam + k * sak];
            for (j = 0; j < nr; j++) acc[i][j] = NCF__MADD(a, b[j], acc[i][j]);
        }
    }
    for (i = 0; i < mr; i++)
        for (j = 0; j < nr; j++) {
            float *c = C + (size_t)i * ldc + j, v = flags & NCF__ADD ? *c + acc[i][j] : acc[i][j];
            *c = (flags & NCF__RELU) && v < 0.0f ? 0.0f : v;
        }
}

#if NCF__VEC
/* v = a vector of x. Where float math runs in double (FLT_EVAL_METHOD 1, as gcc on
   s390x) scalar-vector arithmetic does not compile, so the lanes are set one by one;
   elsewhere x - 0 is exact and compiles to a single broadcast. */
#if defined(__FLT_EVAL_METHOD__) && __FLT_EVAL_METHOD__ > 0
#define NCF__SPLAT(V, W, v, x) \
    do { \
        int s_; \
        for (s_ = 0; s_ < (W); s_++) (v)[s_] = (x); \
    } while (0)
#else
#define NCF__SPLAT(V, W, v, x) \
    do { \
        V z_ = {0}; \
        (v) = (x)-z_; \
    } while (0)
#endif

/* The tile's output stage: C + c with NCF__ADD, clamped at 0 with NCF__RELU, stored. The
   clamp is x < 0 ? 0 : x, as the scalar paths write it (NaN and -0 pass), on whole vectors:
   the lanes that compare below 0, of mask type VI, are cleared. */
#define NCF__TILE_STORE(V, VI, p, c, flags) \
    do { \
        if ((flags)&NCF__ADD) { \
            V o_; \
            memcpy(&o_, (p), sizeof o_); \
            (c) = o_ + (c); \
        } \
        if ((flags)&NCF__RELU) { \
            V z_ = {0}; \
            (c) = (V)(~((c) < z_) & (VI)(c)); \
        } \
        memcpy((p), &(c), sizeof(c)); \
    } while (0)

/* A loop with a small constant trip count, unrolled whole. */
#if defined(__clang__)
#define NCF__UNROLL _Pragma("unroll")
#else
#define NCF__UNROLL _Pragma("GCC unroll 16")
#endif

/* The full MR x NR tile: constant trip counts, unrolled so the accumulators stay in
   registers from the first load to the last store. Rows before `from` are summed and not
   stored (the last rows of a range, whose tile overlaps the one before: see ncf__gemm_block). */
static void ncf__tile_full(float *C, int ldc, const float *A, ptrdiff_t sam, ptrdiff_t sak, const float *B, int ldb,
                           const float *bias, int K, int flags, int from)
{
    ncf__vf c0[NCF__MR], c1[NCF__MR], i0 = {0}, i1 = {0};
    int i, k;
    if (bias && !(flags & NCF__ACC)) NCF__VLOAD(i0, bias), NCF__VLOAD(i1, bias + NCF__VW);
    NCF__UNROLL
    for (i = 0; i < NCF__MR; i++) {
        c0[i] = i0, c1[i] = i1;
        if (flags & NCF__ACC) NCF__VLOAD(c0[i], C + (size_t)i * ldc), NCF__VLOAD(c1[i], C + (size_t)i * ldc + NCF__VW);
    }
    for (k = 0; k < K; k++) {
        const float *b = B + (size_t)k * ldb, *a = A + k * sak;
        ncf__vf b0, b1;
        NCF__VLOAD(b0, b);
        NCF__VLOAD(b1, b + NCF__VW);
        NCF__UNROLL
        for (i = 0; i < NCF__MR; i++) {
            ncf__vf ai;
            NCF__SPLAT(ncf__vf, NCF__VW, ai, a[i * sam]);
            NCF__VFMA(c0[i], ai, b0);
            NCF__VFMA(c1[i], ai, b1);
        }
    }
    NCF__UNROLL
    for (i = 0; i < NCF__MR; i++)
        if (i >= from) {
            NCF__TILE_STORE(ncf__vf, ncf__vi, C + (size_t)i * ldc, c0[i], flags);
            NCF__TILE_STORE(ncf__vf, ncf__vi, C + (size_t)i * ldc + NCF__VW, c1[i], flags);
        }
}

/* mr x W tiles at the edges, one row at a time, for vector type V of W floats. */
#define NCF__TILE_ROWS(name, V, VI, W, FMA) \
    static void name(float *C, int ldc, const float *A, ptrdiff_t sam, ptrdiff_t sak, const float *B, int ldb, \
                     const float *bias, int mr, int K, int flags) \
    { \
        int i, k; \
        for (i = 0; i < mr; i++) { \
            V c = {0}, b, ak; \
            const float *a = A + i * sam; \
            if (flags & NCF__ACC) memcpy(&c, C + (size_t)i * ldc, sizeof c); \
            else if (bias) memcpy(&c, bias, sizeof c); \
            for (k = 0; k < K; k++) { \
                memcpy(&b, B + (size_t)k * ldb, sizeof b); \
                NCF__SPLAT(V, W, ak, a[k * sak]); \
                FMA(c, ak, b); \
            } \
            NCF__TILE_STORE(V, VI, C + (size_t)i * ldc, c, flags); \
        } \
    }
/* A column W wide and R rows high (NCF__TALL, or NCF__MR for what is left), for vector type
   V: one row at a time would be a single chain of dependent multiply-adds, bound by their
   latency (the paper's last layers, 16 and 8 wide, ran at a fifth of the full tile's rate);
   this many rows keep the FMA units busy. Each sum still runs over k in order from its bias:
   the same bits as the edge tile. */
#define NCF__TALL (2 * NCF__MR)
#define NCF__TILE_TALL(name, V, VI, W, FMA, R) \
    static void name(float *C, int ldc, const float *A, ptrdiff_t sam, ptrdiff_t sak, const float *B, int ldb, \
                     const float *bias, int K, int flags, int from) \
    { \
        V c[R], i0 = {0}; \
        int i, k; \
        if (bias && !(flags & NCF__ACC)) memcpy(&i0, bias, sizeof i0); \
        NCF__UNROLL \
        for (i = 0; i < (R); i++) { \
            c[i] = i0; \
            if (flags & NCF__ACC) memcpy(&c[i], C + (size_t)i * ldc, sizeof c[i]); \
        } \
        for (k = 0; k < K; k++) { \
            const float *a = A + k * sak; \
            V b; \
            memcpy(&b, B + (size_t)k * ldb, sizeof b); \
            NCF__UNROLL \
            for (i = 0; i < (R); i++) { \
                V ai; \
                NCF__SPLAT(V, W, ai, a[i * sam]); \
                FMA(c[i], ai, b); \
            } \
        } \
        NCF__UNROLL \
        for (i = 0; i < (R); i++) \
            if (i >= from) NCF__TILE_STORE(V, VI, C + (size_t)i * ldc, c[i], flags); \
    }
NCF__TILE_ROWS(ncf__tile_narrow, ncf__vf, ncf__vi, NCF__VW, NCF__VFMA)
NCF__TILE_TALL(ncf__tile_tall, ncf__vf, ncf__vi, NCF__VW, NCF__VFMA, NCF__TALL)
NCF__TILE_TALL(ncf__tile_column, ncf__vf, ncf__vi, NCF__VW, NCF__VFMA, NCF__MR)
#if NCF__VW == 16
NCF__TILE_ROWS(ncf__tile_half, ncf__vh, ncf__vhi, 8, NCF__HFMA) /* 8 wide, for layers of 8 (the paper's last) */
NCF__TILE_TALL(ncf__tile_half_tall, ncf__vh, ncf__vhi, 8, NCF__HFMA, NCF__TALL)
NCF__TILE_TALL(ncf__tile_half_column, ncf__vh, ncf__vhi, 8, NCF__HFMA, NCF__MR)
#endif
#endif

/* C[m][n] = init + sum_k A(m,k) * B[k][n] for rows m0 <= m < m1 (a tile-aligned range),
   where A(m,k) = A[m*sam + k*sak]; init is C itself with NCF__ACC, else bias[n]
   (or 0 when bias is NULL); NCF__ADD stores C + that sum; NCF__RELU clamps at 0.
   Every output is summed in ascending k by one thread, and every path rounds as the
   others do, so results depend neither on how rows are split across threads nor on
   where a row falls in a tile. */
static void ncf__gemm_block(float *C, int ldc, const float *A, ptrdiff_t sam, ptrdiff_t sak, const float *B, int ldb,
                            const float *bias, int m0, int m1, int N, int K, int flags);

#ifndef NCF__KC
#define NCF__KC 256
#endif
#ifdef NCF__BARE_METAL /* a microcontroller: no cache to block for, and the code it takes saved */
#define NCF__NO_CACHE 1
#else
#define NCF__NO_CACHE 0
#endif
static void ncf__gemm_rows(float *C, int ldc, const float *A, ptrdiff_t sam, ptrdiff_t sak, const float *B, int ldb,
                           const float *bias, int m0, int m1, int N, int K, int flags)
{
    /* Blocks of NCF__KC along k, so a block of B stays in L1 across the row tiles. Each sum
       goes on from where the last block stored it, in the same order: the result does not
       change. (NCF__ADD sums apart from C, so it runs unblocked.) */
    int k0;
    if (K <= NCF__KC || (flags & NCF__ADD) || NCF__NO_CACHE) {
        ncf__gemm_block(C, ldc, A, sam, sak, B, ldb, bias, m0, m1, N, K, flags);
        return;
    }
    for (k0 = 0; k0 < K; k0 += NCF__KC) {
        int kc = K - k0 < NCF__KC ? K - k0 : NCF__KC;
        int f = (k0 ? NCF__ACC : flags & NCF__ACC) | (k0 + kc == K ? flags & NCF__RELU : 0);
        ncf__gemm_block(C, ldc, A + k0 * sak, sam, sak, B + (size_t)k0 * ldb, ldb, k0 ? NULL : bias, m0, m1, N, kc, f);
    }
}

/* A range of this many row tiles or more copies each K x NR panel of B it reads into a
   contiguous block on the stack first (KC x NR floats: 16 KB with AVX2), where the panel's
   rows span more than NCF__PACK_SPAN floats. B's rows are a layer's width apart, 1 KB for
   256 floats: a panel's lines then fall in a few of L1's sets and evict each other, and
   each tile read the panel from L2 again; contiguous, it stays in L1 across the range's
   tiles. (AMD EPYC, AVX2: 36 rows of 256 x 256 x 256 on one thread at 59-61 GFLOP/s with
   the panels strided, 77-88 with them copied beforehand; the MLPerf config, copies included,
   trained 1.04-1.07x as fast, the same bits.) The paper's layers fit L1 as they are. */
#define NCF__PACK_TILES 3
#define NCF__PACK_SPAN 4096 /* floats a panel's rows span, beyond which it is copied: 16 KB */
#if NCF__VEC
/* Rows [0, K) of the NR columns at B (rows ldb apart), contiguous in panel; returns panel. */
static const float *ncf__pack_panel(float *panel, const float *B, int ldb, int K)
{
    size_t k, nr = 2 * sizeof(ncf__vf) / sizeof(float); /* NCF__NR */
    for (k = 0; k < (size_t)K; k++) memcpy(panel + k * nr, B + k * ldb, nr * sizeof(float));
    return panel;
}
#endif

/* Column panels outside, row tiles inside: a K x NR panel of B stays in cache across this
   thread's rows. Each panel width has its tile: two vectors, one, half of one (AVX-512), and
   the plain-C tile for the rest (and everywhere without vectors). The last rows of a range of
   MR or more that do not fill a tile take a whole tile ending with the range, which sums
   again the rows it shares with the tile before and stores only its own: the one-row tile
   would sum each output as a single chain of dependent multiply-adds, bound by their latency
   (a dW of 64 rows, 10 tiles and 4 rows, spent over a quarter of its time on those 4). */
static void ncf__gemm_block(float *C, int ldc, const float *A, ptrdiff_t sam, ptrdiff_t sak, const float *B, int ldb,
                            const float *bias, int m0, int m1, int N, int K, int flags)
{
    int m, n = 0;
#if NCF__VEC
    float panel[NCF__KC * NCF__NR];
    int pack = m1 - m0 >= NCF__PACK_TILES * NCF__MR && K <= NCF__KC && (size_t)K * ldb > NCF__PACK_SPAN;
    for (; n + NCF__NR <= N; n += NCF__NR) {
        const float *Bn = pack ? ncf__pack_panel(panel, B + n, ldb, K) : B + n;
        int ldn = pack ? NCF__NR : ldb;
        for (m = m0; m < m1; m += NCF__MR) {
            int mr = m1 - m < NCF__MR ? m1 - m : NCF__MR, back = m1 - m0 >= NCF__MR ? NCF__MR - mr : 0;
            const float *Am = A + (m - back) * sam, *bn = bias ? bias + n : NULL;
            float *Cm = C + (size_t)(m - back) * ldc + n;
            if (mr == NCF__MR || back) {
                ncf__tile_full(Cm, ldc, Am, sam, sak, Bn, ldn, bn, K, flags, back);
            } else {
                ncf__tile_narrow(Cm, ldc, Am, sam, sak, Bn, ldn, bn, mr, K, flags);
                ncf__tile_narrow(Cm + NCF__VW, ldc, Am, sam, sak, Bn + NCF__VW, ldn, bn ? bn + NCF__VW : NULL, mr, K,
                                 flags);
            }
        }
    }
    for (; n + NCF__VW <= N; n += NCF__VW)
        for (m = m0; m < m1;) {
            int mr = m1 - m < NCF__TALL ? (m1 - m < NCF__MR ? m1 - m : NCF__MR) : NCF__TALL;
            int back = mr < NCF__MR && m1 - m0 >= NCF__MR ? NCF__MR - mr : 0;
            const float *Am = A + (m - back) * sam, *bn = bias ? bias + n : NULL;
            float *Cm = C + (size_t)(m - back) * ldc + n;
            if (mr == NCF__TALL) ncf__tile_tall(Cm, ldc, Am, sam, sak, B + n, ldb, bn, K, flags, 0);
            else if (mr == NCF__MR || back) ncf__tile_column(Cm, ldc, Am, sam, sak, B + n, ldb, bn, K, flags, back);
            else ncf__tile_narrow(Cm, ldc, Am, sam, sak, B + n, ldb, bn, mr, K, flags);
            m += mr;
        }
#if NCF__VW == 16
    for (; n + 8 <= N; n += 8)
        for (m = m0; m < m1;) {
            int mr = m1 - m < NCF__TALL ? (m1 - m < NCF__MR ? m1 - m : NCF__MR) : NCF__TALL;
            int back = mr < NCF__MR && m1 - m0 >= NCF__MR ? NCF__MR - mr : 0;
            const float *Am = A + (m - back) * sam, *bn = bias ? bias + n : NULL;
            float *Cm = C + (size_t)(m - back) * ldc + n;
            if (mr == NCF__TALL) ncf__tile_half_tall(Cm, ldc, Am, sam, sak, B + n, ldb, bn, K, flags, 0);
            else if (mr == NCF__MR || back)
                ncf__tile_half_column(Cm, ldc, Am, sam, sak, B + n, ldb, bn, K, flags, back);
            else ncf__tile_half(Cm, ldc, Am, sam, sak, B + n, ldb, bn, mr, K, flags);
            m += mr;
        }
#endif
#endif
    for (; n < N; n += NCF__NR) {
        int nr = N - n < NCF__NR ? N - n : NCF__NR;
        for (m = m0; m < m1; m += NCF__MR) {
            int mr = m1 - m < NCF__MR ? m1 - m : NCF__MR;
            const float *Am = A + m * sam, *bn = bias ? bias + n : NULL;
            float *Cm = C + (size_t)m * ldc + n;
            ncf__tile_scalar(Cm, ldc, Am, sam, sak, B + n, ldb, bn, mr, nr, K, flags);
        }
    }
}

#define NCF__TILES(n) NCF__CEIL_DIV((int64_t)(n), NCF__MR)

/* Tiles of rows to claim at a time so a claim carries about NCF__PAR_WORK multiply-adds. */
static int64_t ncf__tile_grain(float macs_per_row)
{
    float g = NCF__PAR_WORK / (macs_per_row * NCF__MR);
    return g < 1 ? 1 : g > 1024 ? 1024 : (int64_t)g;
}

/* ncf__gemm_rows over all M rows, as a phase of row tiles. */
static void ncf__gemm_phase(ncf__ctx *x, float *C, int ldc, const float *A, ptrdiff_t sam, ptrdiff_t sak,
                            const float *B, int ldb, const float *bias, int M, int N, int K, int flags)
{
    int64_t lo, hi;
    while (ncf__claim(x, NCF__TILES(M), ncf__tile_grain((float)N * K), &lo, &hi))
        ncf__gemm_rows(C, ldc, A, sam, sak, B, ldb, bias, (int)lo * NCF__MR, hi * NCF__MR < M ? (int)hi * NCF__MR : M,
                       N, K, flags);
}

/* The same in a region of its own. */
static void ncf__gemm(float *C, int ldc, const float *A, ptrdiff_t sam, ptrdiff_t sak, const float *B, int ldb,
                      const float *bias, int M, int N, int K, int flags)
{
    ncf__team team = NCF__TEAM_INIT;
    NCF__PARALLEL((float)M * N * K > 4 * NCF__PAR_WORK && M > NCF__MR)
    {
        ncf__ctx x = ncf__join(&team);
        ncf__gemm_phase(&x, C, ldc, A, sam, sak, B, ldb, bias, M, N, K, flags);
    }
}

#ifndef NCF_INFERENCE_ONLY
/* Stable for any logit: log(1 + e^-|z|) never overflows. */
/* Cross-entropy of logit z against label y: 0 a negative, y > 0 a positive weighing y. */
static double ncf__bce(float z, float y)
{
    double zd = z;
    if (y > 0) return y * ((zd > 0 ? zd : 0) - zd + log1p(exp(-fabs(zd))));
    return (zd > 0 ? zd : 0) + log1p(exp(-fabs(zd)));
}

static float ncf__sigmoid(float z)
{
    if (z >= 0) return 1.0f / (1.0f + expf(-z));
    {
        float e = expf(z);
        return e / (1.0f + e);
    }
}
#endif
