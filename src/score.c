/* Scoring one user against many items: the item projection and its cache, the lanes. */
/* Scoring one user against many items uses the split first layer:
   W1 [u; i] = W1u u + W1i i, with W1i i precomputed once per item. */

#define NCF__SCORE_CHUNK 48 /* the most items serving scores at a time (ncf__score_chunk) */
#define NCF__FOLD_CHUNK 32  /* a fold-in's examples at a time (its sums follow this order) */

/* Items a block of the cached projection holds, and scoring takes at a time with it: one to
   a vector lane (ncf__score_lanes) with AVX or AVX-512, whose multiply-adds read a broadcast
   weight straight from memory; else 1 (row by row: with 4 lanes, SSE's broadcasts cost more
   than the lanes win, 9-15% slower). */
#if NCF__VEC && NCF__VW >= 8
#define NCF__PB NCF__VW
#else
#define NCF__PB 1
#endif

/* Where the projection of R rows a block holds item i's value d: its block, row d of it, the
   item's lane. */
static size_t ncf__proj_at(int R, size_t i, size_t d)
{
    return ((i / NCF__PB) * (size_t)R + d) * NCF__PB + i % NCF__PB;
}

/* Rows of a projection block: layers[1], then in blocks of lanes the item's GMF row too, so
   that a block's whole score reads vectors. */
static int ncf__proj_rows(const ncf_model *m) { return m->cfg.layers[1] + (NCF__PB > 1 ? m->scratch->F : 0); }

/* Scoring buffers for n items at a time, carved from one block: the heap's, or the caller's
   workspace (ncf_rec_workspace_size). */
typedef struct {
    float *h[2]; /* [n][widest dense layer] activations */
    float *pu;   /* [layers[1]] user half of the first layer, plus its bias */
    float *urow; /* [F + H] the user's GMF and MLP rows, when int8 */
    float *irow; /* [n][H] the items' MLP rows, when no item projection is cached */
    float *gi;   /* [F] an item's GMF row, when int8 */
    float *sc;   /* [n] scores */
} ncf__eval_buf;

#define NCF__ALIGN_FLOATS 16 /* each buffer starts on a 64-byte line */

static size_t ncf__round_floats(size_t n) { return NCF__CEIL_DIV(n, NCF__ALIGN_FLOATS) * NCF__ALIGN_FLOATS; }

static int ncf__widest_dense(const ncf_model *m)
{
    int l, w = 1;
    for (l = 1; l <= m->scratch->nd; l++)
        if (m->cfg.layers[l] > w) w = m->cfg.layers[l];
    return w;
}

/* Floats of an eval buffer for n items; with mem, also carves it from mem. */
static size_t ncf__eval_buf_carve(ncf__eval_buf *e, const ncf_model *m, int n, float *mem)
{
    const struct ncf__scratch *s = m->scratch;
    size_t at = 0, w = (size_t)ncf__widest_dense(m), sizes[7];
    float **dst[7];
    int q;
    size_t lanes = (size_t)(n > NCF__PB ? n : NCF__PB); /* (ncf__score_lanes scores NCF__PB at a time) */
    dst[0] = &e->h[0], sizes[0] = lanes * w;
    dst[1] = &e->h[1], sizes[1] = lanes * w;
    dst[2] = &e->pu, sizes[2] = w;
    dst[3] = &e->urow, sizes[3] = (size_t)s->F + s->H;
    dst[4] = &e->irow, sizes[4] = (size_t)n * s->H;
    dst[5] = &e->gi, sizes[5] = (size_t)s->F;
    dst[6] = &e->sc, sizes[6] = (size_t)n;
    for (q = 0; q < 7; q++) {
        if (mem) *dst[q] = mem + at;
        at += ncf__round_floats(sizes[q] ? sizes[q] : 1);
    }
    return at;
}

/* Items serving scores at a time: 48, a whole number of every target's tall tile (12 rows
   with AVX2, SSE and NEON, 16 with AVX-512), while their activations take at most 64 KB, so
   they stay near the core; else 32, which bounds a thread's buffers by the widest layer. */
static size_t ncf__floats_per_item(const ncf_model *m)
{
    return 2 * (size_t)ncf__widest_dense(m) + (size_t)m->scratch->H + 1; /* (ncf__eval_buf_carve) */
}

static int ncf__score_chunk(const ncf_model *m)
{
    return ncf__floats_per_item(m) * sizeof(float) * NCF__SCORE_CHUNK <= 65536 ? NCF__SCORE_CHUNK : 32;
}

#ifndef NCF_INFERENCE_ONLY
static void ncf__eval_buf_free(ncf__eval_buf *e) { NCF_FREE(e->h[0]); }

/* Items scored at a time in evaluation: as many as 1 MB of activations holds, at least
   serving's chunk, at most n. A thread's buffers are then bounded by the model's widest
   layer, whatever the catalogue. */
static int ncf__eval_chunk(const ncf_model *m, int n)
{
    size_t c = ((size_t)1 << 18) / ncf__floats_per_item(m), sc = (size_t)ncf__score_chunk(m);
    c = c < sc ? sc : c / sc * sc; /* (whole chunks of serving's, so whole blocks of lanes) */
    return (int)(c < (size_t)n ? c : (size_t)(n > 0 ? n : 1));
}

static int ncf__eval_buf_alloc(ncf__eval_buf *e, const ncf_model *m, int n)
{
    float *mem = NCF__NEW(float, ncf__eval_buf_carve(e, m, n, NULL));
    if (!mem) return 0;
    ncf__eval_buf_carve(e, m, n, mem);
    return 1;
}
#endif

/* Floats of the projection's blocks (none without lanes: its rows are then the cache). */
static size_t ncf__proj_blocked(const ncf_model *m)
{
    return NCF__PB == 1 ? 0 : NCF__CEIL_DIV((size_t)m->cfg.num_items, NCF__PB) * NCF__PB * (size_t)ncf__proj_rows(m);
}

/* Whether the projection's rows, [num_items][layers[1]], come after its blocks: they cost items
   x layers[1] floats, which a file's parameters need not pay for (a 1-wide item embedding under
   a 65,536-wide layer), so only while the whole stays within 4 parameters' worth (and 1M
   floats). Without blocks, past that there is no cache, and scoring projects each chunk as it
   goes, with the same scores; with them, past that candidate lists take their lanes from the
   blocks (ncf__score_lanes), and past that for the blocks alone there is no cache. */
static int ncf__proj_fits(const ncf_model *m, size_t floats)
{
    return (uint64_t)floats <= 4 * (uint64_t)m->num_params + (1 << 20); /* (no double math on a device) */
}

static int ncf__proj_has_rows(const ncf_model *m)
{
    return ncf__proj_fits(m, ncf__proj_blocked(m) + (size_t)m->cfg.num_items * m->cfg.layers[1]);
}

/* The projection's rows, or NULL. (Without lanes the cache is its rows.) */
static const float *ncf__proj_row_major(const ncf_model *m, const float *proj)
{
    return NCF__PB == 1 || !proj ? proj : ncf__proj_has_rows(m) ? proj + ncf__proj_blocked(m) : NULL;
}

/* Item halves of the first dense layer, or NULL without MLP. With lanes (NCF__PB > 1) first
   in blocks of NCF__PB items, each [ncf__proj_rows][NCF__PB] (item i's d-th value at
   ncf__proj_at), so that one vector load reads a value of a whole block's items
   (ncf__score_lanes); then, where they fit, as rows, [num_items][layers[1]], which a list of
   candidates reads an item at a time (a row is a line or two; a block's column, a line a value). */
static float *ncf__item_projection(const ncf_model *m, int *rc)
{
    const struct ncf__scratch *s = m->scratch;
    int L1, R, i0, rows, n, items = m->cfg.num_items, keep = ncf__proj_has_rows(m);
    size_t blocked, d, i;
    float *proj, *tmp;
    *rc = NCF_OK;
    if (!s->H || !m->mlp_item) return NULL; /* (an int8 model projects as it scores) */
    L1 = m->cfg.layers[1], R = ncf__proj_rows(m), blocked = ncf__proj_blocked(m);
    if (!ncf__proj_fits(m, blocked ? blocked : (size_t)items * L1)) return NULL;
    /* The rows are made a run at a time: all of them into their place when they are kept, else
       64K floats of them, one block at least (at most 4 MB: 16 items of a 65,536-wide layer). */
    rows = keep ? items : (65536 / L1) / NCF__PB * NCF__PB;
    rows = rows < NCF__PB ? NCF__PB : rows > items ? items : rows;
    proj = NCF__ZNEW(float, blocked + (keep ? (size_t)items * L1 : 0));
    tmp = !proj ? NULL : keep ? proj + blocked : NCF__NEW(float, (size_t)rows *L1);
    if (!proj || !tmp) {
        NCF_FREE(proj);
        if (!keep) NCF_FREE(tmp);
        *rc = ncf__fail(NCF_ERR_NOMEM, "out of memory for the item projection");
        return NULL;
    }
    for (i0 = 0; i0 < items; i0 += rows) { /* rows at a time, then into their blocks */
        float *at = keep ? tmp + (size_t)i0 * L1 : tmp;
        n = items - i0 < rows ? items - i0 : rows;
        ncf__gemm(at, L1, m->mlp_item + (size_t)i0 * s->H, s->H, 1, m->w[1] + (size_t)s->H * L1, L1, NULL, n, L1, s->H,
                  0);
        for (i = 0; blocked && i < (size_t)n; i++)
            for (d = 0; d < (size_t)L1; d++) proj[ncf__proj_at(R, (size_t)i0 + i, d)] = at[i * L1 + d];
    }
    for (i = 0; blocked && i < (size_t)items; i++) /* the GMF rows into their blocks */
        for (d = 0; d < (size_t)s->F; d++) proj[ncf__proj_at(R, i, (size_t)L1 + d)] = m->gmf_item[i * s->F + d];
    if (!keep) NCF_FREE(tmp);
    return proj;
}

#ifdef NCF__BARE_METAL /* a microcontroller keeps its RAM: it projects each chunk as it scores, the same scores */
#define NCF__KEEPS_PROJECTION 0
#else
#define NCF__KEEPS_PROJECTION 1
#endif

/* The cached item projection, when it is that of the current parameters, or NULL. The cache
   is rebuilt only where the model is being changed anyway (after an epoch, a load, pre-training,
   ncf_model_params_changed), so serving only reads the model. */
static const float *ncf__cached_projection(const ncf_model *m)
{
    const struct ncf__scratch *s = m->scratch;
    return NCF__KEEPS_PROJECTION && s->cache.proj && s->cache.step == m->step ? s->cache.proj : NULL;
}

#ifndef NCF_INFERENCE_ONLY
/* The projection for scoring: the cache, or one of the caller's own (*own, freed by it). */
static const float *ncf__projection_for(const ncf_model *m, float **own, int *rc)
{
    const float *p = ncf__cached_projection(m);
    *own = NULL, *rc = NCF_OK;
    return p || !m->scratch->H ? p : (*own = ncf__item_projection(m, rc));
}
#endif

/* What serving computes once, for the current parameters. Out of memory leaves no cache;
   scoring then makes its own projection, a fold-in its own Gram matrix. */
static void ncf__refresh_cache(ncf_model *m)
{
    struct ncf__scratch *s = m->scratch;
    int rc;
    NCF_FREE(s->cache.proj);
    s->cache.proj = NCF__KEEPS_PROJECTION ? ncf__item_projection(m, &rc) : NULL;
    ncf__refresh_gram(m);
    s->cache.step = m->step;
}

/* ncf__outfile for items cand[0..n) (first.. when NULL) of one user, their top activations h
   row by row, into e->sc: the per-logit work hoisted out of the loop, so that it runs at the
   rate of the sums. */
static void ncf__output_items(const ncf_model *m, const float *gu, float ub, const int32_t *cand, int first, int n,
                              const float *h, ncf__eval_buf *e)
{
    const struct ncf__scratch *s = m->scratch;
    const ncf__table *T = s->F ? &s->tables.tab[s->tables.gmf] : NULL;
    const float *gw = s->tables.gmf_weights, *wh = m->w_out ? m->w_out + s->F : NULL;
    int j, F = s->F, top = s->top;
    j = 0;
#if NCF__VEC
    if (F % NCF__LANES == 0 && top % NCF__LANES == 0 && (!T || T->item))
        for (; j + 4 <= n; j += 4) {
            const float *gi[4], *hj[4];
            float sum[4];
            int q;
            for (q = 0; q < 4; q++) {
                int i = cand ? cand[j + q] : first + j + q;
                gi[q] = T ? T->item + (size_t)i * F : NULL, hj[q] = h + (size_t)(j + q) * top;
            }
            ncf__output_sum4(gu, gi, gw, F, wh, hj, top, sum);
            for (q = 0; q < 4; q++) {
                int i = cand ? cand[j + q] : first + j + q;
                float z = m->b_out[0], bias = m->user_bias ? ub + m->item_bias[i] : 0.0f;
                if (m->user_bias) z += bias;
                e->sc[j + q] = z + sum[q];
            }
        }
#endif
    for (; j < n; j++) {
        int i = cand ? cand[j] : first + j;
        const float *gi = T ? ncf__emb_row(T, 1, i, e->gi) : NULL;
        float z = m->b_out[0], bias = m->user_bias ? ub + m->item_bias[i] : 0.0f; /* (rounded as ncf__outfile) */
        if (m->user_bias) z += bias;
        e->sc[j] = z + ncf__output_sum(gu, gi, gw, F, wh, h + (size_t)j * top, top);
    }
}

#if NCF__PB > 1
/* Outputs [n0, n0 + NB) of a dense layer for a block of items, one to a vector lane: X and Y
   are [width][NCF__VW], W is [K][N]. Each output's sum runs from its bias in k order with
   the tiles' multiply-add and clamp (NCF__TILE_STORE), so a lane's value is the row path's
   bit for bit; the NB sums are independent chains, each weight a broadcast. With FIRST, X is
   the block's projection and input k the first layer's value, P[k] + X[k] clamped as the row
   path clamps it, made as it is read rather than stored and read back. */
#define NCF__LANES_OUT(name, NB, FIRST) \
    static void name(const float *X, const float *P, int K, const float *W, const float *bias, int N, int n0, \
                     float *Y) \
    { \
        ncf__vf a[NB], x, w, z = {0}; \
        int j, k; \
        NCF__UNROLL \
        for (j = 0; j < NB; j++) NCF__SPLAT(ncf__vf, NCF__VW, a[j], bias ? bias[n0 + j] : 0.0f); \
        for (k = 0; k < K; k++) { \
            NCF__VLOAD(x, X + (size_t)k * NCF__VW); \
            if (FIRST) { \
                NCF__SPLAT(ncf__vf, NCF__VW, w, P[k]); \
                x = w + x; \
                x = (ncf__vf)((x > z) & (ncf__vi)x); /* (v > 0 ? v : 0) */ \
            } \
            NCF__UNROLL \
            for (j = 0; j < NB; j++) { \
                NCF__SPLAT(ncf__vf, NCF__VW, w, W[(size_t)k * N + n0 + j]); \
                NCF__VFMA(a[j], w, x); \
            } \
        } \
        NCF__UNROLL \
        for (j = 0; j < NB; j++) { \
            a[j] = (ncf__vf)(~(a[j] < z) & (ncf__vi)a[j]); \
            NCF__VSTORE(Y + (size_t)(n0 + j) * NCF__VW, a[j]); \
        } \
    }
NCF__LANES_OUT(ncf__lanes_out16, 16, 0)
NCF__LANES_OUT(ncf__lanes_out8, 8, 0)
NCF__LANES_OUT(ncf__lanes_out1, 1, 0)
NCF__LANES_OUT(ncf__lanes_first16, 16, 1)
NCF__LANES_OUT(ncf__lanes_first8, 8, 1)
NCF__LANES_OUT(ncf__lanes_first1, 1, 1)

#if NCF__VW == 8
/* Outputs [n0, n0 + NO) of a dense layer for three blocks at once, the same sums in the same
   order as NCF__LANES_OUT's, so the same bits: X holds the blocks' inputs [3][K][NCF__VW] at
   a stride of xs floats, Y takes [3][N][NCF__VW]. With AVX2's 16 registers, 8 outputs of one
   block read 9 vectors for 8 multiply-adds, and the loads, not the FMAs, set the pace; 4
   outputs of 3 blocks read 7 for 12. The empty asm keeps each input in a register: without
   it GCC reads it from memory again in each of its 4 multiply-adds. */
#define NCF__LANES3_OUT(name, NO) \
    static void name(const float *X, size_t xs, int K, const float *W, const float *bias, int N, int n0, float *Y, \
                     size_t ys) \
    { \
        ncf__vf a[3][NO], x[3], w, z = {0}; \
        int b, j, k; \
        NCF__UNROLL \
        for (j = 0; j < NO; j++) { \
            NCF__SPLAT(ncf__vf, NCF__VW, a[0][j], bias ? bias[n0 + j] : 0.0f); \
            a[1][j] = a[0][j], a[2][j] = a[0][j]; \
        } \
        for (k = 0; k < K; k++) { \
            NCF__UNROLL \
            for (b = 0; b < 3; b++) { \
                NCF__VLOAD(x[b], X + b * xs + (size_t)k * NCF__VW); \
                __asm__("" : "+x"(x[b])); \
            } \
            NCF__UNROLL \
            for (j = 0; j < NO; j++) { \
                NCF__SPLAT(ncf__vf, NCF__VW, w, W[(size_t)k * N + n0 + j]); \
                NCF__VFMA(a[0][j], w, x[0]); \
                NCF__VFMA(a[1][j], w, x[1]); \
                NCF__VFMA(a[2][j], w, x[2]); \
            } \
        } \
        NCF__UNROLL \
        for (b = 0; b < 3; b++) { \
            NCF__UNROLL \
            for (j = 0; j < NO; j++) { \
                a[b][j] = (ncf__vf)(~(a[b][j] < z) & (ncf__vi)a[b][j]); \
                NCF__VSTORE(Y + b * ys + (size_t)(n0 + j) * NCF__VW, a[b][j]); \
            } \
        } \
    }
NCF__LANES3_OUT(ncf__lanes3_out4, 4)
NCF__LANES3_OUT(ncf__lanes3_out1, 1)

/* The first layer's values for three blocks of the projection (at a stride of xs floats),
   [3][K][NCF__VW]: P[k] + X[k] clamped, as the row path clamps them. Made once and stored:
   made as read (NCF__LANES_OUT's FIRST) they would need registers that 4 outputs of 3 blocks
   use. next: the following three blocks, or NULL: a catalogue is read as one stream. */
static void ncf__lanes3_first(const float *X, size_t xs, const float *P, int K, const float *next,
                              float *NCF__RESTRICT Y)
{
    ncf__vf v, p, z = {0};
    size_t ys = (size_t)K * NCF__VW;
    int b, k;
    for (k = 0; k < K; k++, X += NCF__VW, Y += NCF__VW) {
        NCF__SPLAT(ncf__vf, NCF__VW, p, P[k]);
        NCF__UNROLL
        for (b = 0; b < 3; b++) {
            NCF__VLOAD(v, X + b * xs);
            if (next) NCF__PREFETCH(next + b * xs + (size_t)k * NCF__VW);
            v = p + v;
            v = (ncf__vf)((v > z) & (ncf__vi)v);
            NCF__VSTORE(Y + b * ys, v);
        }
    }
}

/* A dense layer for three blocks (NCF__LANES3_OUT). */
static void ncf__lanes3_layer(const float *X, size_t xs, int K, const float *W, const float *bias, int N, float *Y)
{
    int n0 = 0;
    for (; n0 + 4 <= N; n0 += 4) ncf__lanes3_out4(X, xs, K, W, bias, N, n0, Y, (size_t)N * NCF__VW);
    for (; n0 < N; n0++) ncf__lanes3_out1(X, xs, K, W, bias, N, n0, Y, (size_t)N * NCF__VW);
}
#endif

/* A dense layer for a block: 16 outputs at a time with AVX-512's 32 registers, else 8. With P,
   the second layer, its inputs made from the first's halves (NCF__LANES_OUT). */
static void ncf__lanes_layer(const float *X, const float *P, int K, const float *W, const float *bias, int N, float *Y)
{
    int n0 = 0;
    for (; NCF__VW == 16 && n0 + 16 <= N; n0 += 16)
        (P ? ncf__lanes_first16 : ncf__lanes_out16)(X, P, K, W, bias, N, n0, Y);
    for (; n0 + 8 <= N; n0 += 8) (P ? ncf__lanes_first8 : ncf__lanes_out8)(X, P, K, W, bias, N, n0, Y);
    for (; n0 < N; n0++) (P ? ncf__lanes_first1 : ncf__lanes_out1)(X, P, K, W, bias, N, n0, Y);
}

/* v = row d of the projection for the lanes' items it: one load for a whole block (at blk). */
#define NCF__LANES_ROW(v, d) \
    do { \
        int l_; \
        float g_[NCF__PB]; /* (lanes by index would keep v in memory) */ \
        if (blk) NCF__VLOAD(v, blk + (size_t)(d)*NCF__PB); \
        else { \
            for (l_ = 0; l_ < NCF__PB; l_++) g_[l_] = proj[ncf__proj_at(R, (size_t)it[l_], (size_t)(d))]; \
            NCF__VLOAD(v, g_); \
        } \
    } while (0)

/* The output layer's terms for a block, as ncf__output_sum takes them: GMF term d (rows L1 + d
   of the projection), then MLP term t (row t of x), to partial sum d or t % NCF__LANES in
   order, then the partial sums pairwise into p[0]. Whole groups of NCF__LANES index p by
   constants, which keeps it in registers; the tails of sizes that are not whole groups go
   through a copy in memory. */
static void ncf__lanes_terms(ncf__vf *p, const float *proj, int R, const int32_t *it, const float *blk, int L1,
                             const float *gw, const float *gu, int F, const float *x, const float *wh, int top)
{
    ncf__vf q[NCF__LANES], g, u, w;
    int d = 0, t = 0, j;
    for (; d + NCF__LANES <= F; d += NCF__LANES) {
        NCF__UNROLL
        for (j = 0; j < NCF__LANES; j++) {
            NCF__LANES_ROW(g, L1 + d + j);
            NCF__SPLAT(ncf__vf, NCF__VW, u, gu[d + j]);
            NCF__SPLAT(ncf__vf, NCF__VW, w, gw[d + j]);
            g = u * g;
            NCF__VFMA(p[j], w, g);
        }
    }
    for (; d == F && t + NCF__LANES <= top; t += NCF__LANES) {
        NCF__UNROLL
        for (j = 0; j < NCF__LANES; j++) {
            NCF__VLOAD(g, x + (size_t)(t + j) * NCF__VW);
            NCF__SPLAT(ncf__vf, NCF__VW, w, wh[t + j]);
            NCF__VFMA(p[j], w, g);
        }
    }
    if (d < F || t < top) {
        memcpy(q, p, sizeof q);
        for (; d < F; d++) {
            NCF__LANES_ROW(g, L1 + d);
            NCF__SPLAT(ncf__vf, NCF__VW, u, gu[d]);
            NCF__SPLAT(ncf__vf, NCF__VW, w, gw[d]);
            g = u * g;
            NCF__VFMA(q[d % NCF__LANES], w, g);
        }
        for (; t < top; t++) {
            NCF__VLOAD(g, x + (size_t)t * NCF__VW);
            NCF__SPLAT(ncf__vf, NCF__VW, w, wh[t]);
            NCF__VFMA(q[t % NCF__LANES], w, g);
        }
        memcpy(p, q, sizeof q);
    }
    NCF__UNROLL
    for (j = 0; j < 4; j++) p[j] += p[j + 4];
    p[0] += p[2], p[1] += p[3];
    p[0] += p[1];
}

/* Logits of one user against n <= NCF__PB items (cand[0..n), or first.. when cand is NULL)
   into sc, a vector lane each: the same sums in the same order as the row path
   (ncf__score_user, ncf__output_sum), so the same bits, with every layer's work on whole
   vectors however narrow the layer. The lanes past n repeat the last item. */
static void ncf__score_lanes(const ncf_model *m, const float *proj, const float *gu, const int32_t *cand, int first,
                             int n, ncf__eval_buf *e, float *sc)
{
    const struct ncf__scratch *s = m->scratch;
    const int *L = m->cfg.layers;
    const float *gw = s->tables.gmf_weights, *wh = m->w_out ? m->w_out + s->F : NULL, *x, *pu = e->pu, *blk = NULL;
    float *h0 = e->h[0];
    int32_t it[NCF__PB];
    int j, d, l, cur = 0, L1 = L[1], R = ncf__proj_rows(m);
    ncf__vf v, p[NCF__LANES], z = {0}, c;
    for (j = 0; j < NCF__PB; j++) it[j] = cand ? cand[j < n ? j : n - 1] : first + (j < n ? j : n - 1);
    if (!cand && n == NCF__PB && first % NCF__PB == 0) blk = proj + ncf__proj_at(R, (size_t)first, 0);
    if (blk && s->nd >= 2) /* the first two layers at once (a whole block reads its projection in place) */
        l = 3, cur = 1, ncf__lanes_layer(blk, pu, L1, m->w[2], m->b[2], L[2], e->h[1]);
    else
        for (l = 2, d = 0; d < L1; d++) { /* the first layer: the user's half (with the bias) plus the item's */
            NCF__LANES_ROW(v, d);
            NCF__SPLAT(ncf__vf, NCF__VW, c, pu[d]);
            v = c + v;
            v = (ncf__vf)((v > z) & (ncf__vi)v); /* (v > 0 ? v : 0, as the row path) */
            NCF__VSTORE(h0 + (size_t)d * NCF__VW, v);
        }
    for (; l <= s->nd; l++, cur ^= 1)
        ncf__lanes_layer(e->h[cur], NULL, L[l - 1], m->w[l], m->b[l], L[l], e->h[cur ^ 1]);
    x = e->h[cur];
    NCF__UNROLL
    for (j = 0; j < NCF__LANES; j++) p[j] = z;
    ncf__lanes_terms(p, proj, R, it, blk, L1, gw, gu, s->F, x, wh, s->top);
    NCF__SPLAT(ncf__vf, NCF__VW, v, m->b_out[0]); /* (no biases: MF's, which has no projection) */
    v += p[0];
    if (n == NCF__PB) NCF__VSTORE(sc, v);
    else {
        float t[NCF__PB];
        NCF__VSTORE(t, v);
        memcpy(sc, t, sizeof(float) * (size_t)n);
    }
}
#endif

#if NCF__VW == 8
/* ncf__lanes_terms' p[0] for three blocks at once (at a stride of bs floats, their last layer's
   values at xs) where F and top are whole groups of NCF__LANES: each block's partial sum j
   takes its terms in the same order, each weight splat once for the three blocks, and partial
   sums j and j + 4 are made together and added as ncf__lanes_terms adds them. */
static void ncf__lanes3_terms(ncf__vf *v, const float *blk, size_t bs, int L1, const float *gw, const float *gu, int F,
                              const float *x, size_t xs, const float *wh, int top)
{
    ncf__vf q[3][4], a[3], c[3], g, u, w, z = {0};
    int b, j, d, t;
    for (j = 0; j < 4; j++) {
        NCF__UNROLL
        for (b = 0; b < 3; b++) a[b] = z, c[b] = z;
        for (d = 0; d < F; d += NCF__LANES) {
            NCF__SPLAT(ncf__vf, NCF__VW, u, gu[d + j]);
            NCF__SPLAT(ncf__vf, NCF__VW, w, gw[d + j]);
            NCF__UNROLL
            for (b = 0; b < 3; b++) {
                NCF__VLOAD(g, blk + b * bs + (size_t)(L1 + d + j) * NCF__PB);
                g = u * g;
                NCF__VFMA(a[b], w, g);
            }
            NCF__SPLAT(ncf__vf, NCF__VW, u, gu[d + j + 4]);
            NCF__SPLAT(ncf__vf, NCF__VW, w, gw[d + j + 4]);
            NCF__UNROLL
            for (b = 0; b < 3; b++) {
                NCF__VLOAD(g, blk + b * bs + (size_t)(L1 + d + j + 4) * NCF__PB);
                g = u * g;
                NCF__VFMA(c[b], w, g);
            }
        }
        for (t = 0; t < top; t += NCF__LANES) {
            NCF__SPLAT(ncf__vf, NCF__VW, w, wh[t + j]);
            NCF__UNROLL
            for (b = 0; b < 3; b++) {
                NCF__VLOAD(g, x + b * xs + (size_t)(t + j) * NCF__VW);
                NCF__VFMA(a[b], w, g);
            }
            NCF__SPLAT(ncf__vf, NCF__VW, w, wh[t + j + 4]);
            NCF__UNROLL
            for (b = 0; b < 3; b++) {
                NCF__VLOAD(g, x + b * xs + (size_t)(t + j + 4) * NCF__VW);
                NCF__VFMA(c[b], w, g);
            }
        }
        NCF__UNROLL
        for (b = 0; b < 3; b++) q[b][j] = a[b] + c[b];
    }
    NCF__UNROLL
    for (b = 0; b < 3; b++) {
        q[b][0] += q[b][2], q[b][1] += q[b][3];
        v[b] = q[b][0] + q[b][1];
    }
}

/* ncf__score_lanes of three whole blocks of the catalogue at once (items first.., first a
   multiple of NCF__PB; at least two dense layers), the same bits; next as ncf__lanes3_first. */
static void ncf__score_lanes3(const ncf_model *m, const float *proj, const float *gu, int first, const float *next,
                              ncf__eval_buf *e, float *sc)
{
    const struct ncf__scratch *s = m->scratch;
    const int *L = m->cfg.layers;
    const float *gw = s->tables.gmf_weights, *wh = m->w_out ? m->w_out + s->F : NULL;
    int b, j, l, cur = 0, R = ncf__proj_rows(m);
    const float *blk = proj + ncf__proj_at(R, (size_t)first, 0);
    ncf__vf p[NCF__LANES], v, t[3], z = {0};
    ncf__lanes3_first(blk, (size_t)R * NCF__PB, e->pu, L[1], next, e->h[1]);
    ncf__lanes3_layer(e->h[1], (size_t)L[1] * NCF__VW, L[1], m->w[2], m->b[2], L[2], e->h[0]);
    for (l = 3; l <= s->nd; l++, cur ^= 1)
        ncf__lanes3_layer(e->h[cur], (size_t)L[l - 1] * NCF__VW, L[l - 1], m->w[l], m->b[l], L[l], e->h[cur ^ 1]);
    if (s->F % NCF__LANES == 0 && s->top % NCF__LANES == 0)
        ncf__lanes3_terms(t, blk, (size_t)R * NCF__PB, L[1], gw, gu, s->F, e->h[cur], (size_t)s->top * NCF__VW, wh,
                          s->top);
    else
        for (b = 0; b < 3; b++) {
            NCF__UNROLL
            for (j = 0; j < NCF__LANES; j++) p[j] = z;
            ncf__lanes_terms(p, proj, R, NULL, blk + (size_t)b * R * NCF__PB, L[1], gw, gu, s->F,
                             e->h[cur] + (size_t)b * s->top * NCF__VW, wh, s->top);
            t[b] = p[0];
        }
    for (b = 0; b < 3; b++) {
        NCF__SPLAT(ncf__vf, NCF__VW, v, m->b_out[0]);
        v += t[b];
        NCF__VSTORE(sc + b * NCF__PB, v);
    }
}
#endif

/* Logits of user u (or of the user rows urow, [F][H][bias], when given: a user folded in)
   against items cand[0..n) (items first.. in order when cand is NULL) into e->sc, with the
   training forward's rounding (ncf__first_layer, ncf__outfile). Without a projection the items'
   half of the first layer is computed here, row by row as the cache computes it, so the scores
   are the same. e holds at least n items. same_user: the last call on e scored this user, so
   e->pu holds its half of the first layer already (a catalogue is scored a chunk at a time). */
static void ncf__score_user(const ncf_model *m, const float *proj, int u, const float *urow, const int32_t *cand,
                            int first, int n, ncf__eval_buf *e, int same_user)
{
    const struct ncf__scratch *s = m->scratch;
    const int *L = m->cfg.layers;
    int ur = u - NCF__USER0(s); /* (a model shard's row of user u) */
    const float *gu = !s->F ? NULL : urow ? urow : ncf__emb_row(&s->tables.tab[s->tables.gmf], 0, ur, e->urow);
    float ub = urow ? urow[s->F + s->H] : m->user_bias ? m->user_bias[ur] : 0.0f;
    int j, d, l, cur = 0;
    if (s->H) {
        int L1 = L[1], H = s->H;
        const float *hu = urow ? urow + s->F : ncf__emb_row(&s->tables.tab[s->tables.mlp], 0, ur, e->urow + s->F);
        if (!same_user) ncf__gemm_rows(e->pu, L1, hu, 0, 1, m->w[1], L1, m->b[1], 0, 1, L1, H, 0);
#if NCF__PB > 1
        if (proj && (!cand || !ncf__proj_row_major(m, proj)) && (!s->F || s->tables.tab[s->tables.gmf].item)) {
            for (j = 0; j < n;) { /* (a list of candidates reads the rows, when there are any) */
#if NCF__VW == 8
                if (!cand && n - j >= 3 * NCF__PB && (first + j) % NCF__PB == 0 && s->nd >= 2) {
                    size_t next = ncf__proj_at(ncf__proj_rows(m), (size_t)(first + j + 3 * NCF__PB), 0);
                    ncf__score_lanes3(m, proj, gu, first + j, n - j >= 6 * NCF__PB ? proj + next : NULL, e, e->sc + j);
                    j += 3 * NCF__PB;
                    continue;
                }
#endif
                ncf__score_lanes(m, proj, gu, cand ? cand + j : NULL, first + j, n - j < NCF__PB ? n - j : NCF__PB, e,
                                 e->sc + j);
                j += NCF__PB;
            }
            return;
        }
#endif
        proj = ncf__proj_row_major(m, proj);
        if (!proj) { /* the items' rows gathered, then their half of the first layer */
            for (j = 0; j < n; j++) {
                float *dst = e->irow + (size_t)j * H;
                const float *r = ncf__emb_row(&s->tables.tab[s->tables.mlp], 1, cand ? cand[j] : first + j, dst);
                if (r != dst) memcpy(dst, r, sizeof(float) * (size_t)H);
            }
            ncf__gemm_rows(e->h[1], L1, e->irow, H, 1, m->w[1] + (size_t)H * L1, L1, NULL, 0, n, L1, H, 0);
        }
        for (j = 0; j < n; j++) {
            const float *pi = proj ? proj + (size_t)(cand ? cand[j] : first + j) * L1 : e->h[1] + (size_t)j * L1;
            float *h = e->h[0] + (size_t)j * L1;
            for (d = 0; d < L1; d++) {
                float v = e->pu[d] + pi[d];
                h[d] = v > 0.0f ? v : 0.0f;
            }
        }
        for (l = 2; l <= s->nd; l++, cur ^= 1)
            ncf__gemm_rows(e->h[cur ^ 1], L[l], e->h[cur], L[l - 1], 1, m->w[l], L[l], m->b[l], 0, n, L[l], L[l - 1],
                           NCF__RELU);
    }
    ncf__output_items(m, gu, ub, cand, first, n, e->h[cur], e);
}
