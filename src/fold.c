/* ---- >>fold-in: a user's rows from its items, the rest of the model frozen ------------------- */
/* A user who was not in training (or a known one with fresh items) is served from its rows
   alone: [GMF or MF row][MLP row][MF bias], found by a few Adam steps on its items as
   positives and fresh uniform negatives, every other parameter read only. The item half of
   the first dense layer comes from the cached projection, so a step costs the layers above it
   forward and back per example, and the first layer's user half once. */

NCFDEF int ncf_row_size(const ncf_model *m) { return m ? m->scratch->F + m->scratch->H + 1 : 0; }

/* User (side 0) or item (1) k's rows [GMF or MF][MLP][MF bias], int8 rows dequantized. */
static int ncf__side_row(const ncf_model *m, int side, int k, float *row, const char *what)
{
    const struct ncf__scratch *s;
    const float *r, *bias;
    int n = m ? (side ? m->cfg.num_items : m->cfg.num_users) : 0;
    if (!m || !row || k < 0 || k >= n)
        return ncf__fail(NCF_ERR_ARG, "%s: need a model, a row and a%s %s index in [0, %d)", what, side ? "n" : "",
                         side ? "item" : "user", n);
    s = m->scratch, bias = side ? m->item_bias : m->user_bias;
    if (s->F && (r = ncf__emb_row(&s->tables.tab[s->tables.gmf], side, k, row)) != row)
        memcpy(row, r, sizeof(float) * (size_t)s->F);
    if (s->H && (r = ncf__emb_row(&s->tables.tab[s->tables.mlp], side, k, row + s->F)) != row + s->F)
        memcpy(row + s->F, r, sizeof(float) * (size_t)s->H);
    row[s->F + s->H] = bias ? bias[k] : 0.0f;
    return NCF_OK;
}

NCFDEF int ncf_row(const ncf_model *m, int side, int index, float *row)
{
    int rc = ncf__side_ok(m, side, "ncf_row");
    return rc != NCF_OK ? rc : ncf__side_row(m, side, index, row, "ncf_row");
}

NCFDEF ncf_fold_opts ncf_fold_opts_default(void)
{
    ncf_fold_opts o;
    memset(&o, 0, sizeof o);
    o.steps = NCF__FOLD_STEPS, o.lr = NCF__FOLD_LR, o.num_neg = 4, o.l2 = NCF__FOLD_L2, o.seed = 1;
    return o;
}

/* A fold-in's buffers, carved from one block (the caller's workspace, or the heap). */
typedef struct {
    int32_t *given;                   /* [n] the items, sorted, each once */
    float *m1, *m2, *grad;            /* [R] Adam's moments, and the gradient */
    int32_t *cand;                    /* [C] a chunk's examples */
    float *dz;                        /* [C] d(mean loss)/d(logit) */
    float *pu;                        /* [L1] the first layer's user half, with its bias */
    float *act[NCF_MAX_LAYERS];       /* [C][L[l]] layer l's outputs, l = 1..nd */
    float *irow;                      /* [C][H] the other side's MLP rows, without a cached projection */
    float *gi;                        /* [C][F] the other side's int8 GMF rows, dequantized */
    const float *go[NCF__FOLD_CHUNK]; /* the other side's GMF rows of the chunk */
    float *d[2];                      /* [widest][C] deltas, transposed: feature-major */
    float *g1;                        /* [L1] the first layer's deltas summed over the examples */
    ncf__wide *sys, *rhs;             /* an ALS model's: [D][D] the row's system, [2][K] its right side */
    float *orow;                      /* [2][K] int8 rows of the other side, dequantized */
} ncf__fold_buf;

/* count floats (or int32s) from mem + *at, 64-byte aligned as the eval buffers; NULL when
   only sizing (mem NULL). */
static void *ncf__carve(float *mem, size_t *at, size_t count)
{
    void *p = mem ? (void *)(mem + *at) : NULL;
    *at += ncf__round_floats(count ? count : 1);
    return p;
}

/* An ALS fold-in's system is K x K (K = mf_dim) or, for a side with fewer weighing rows than
   factors, D x D over those rows (the dual form, ncf__fold_als_dual): its cost is bounded by
   the other side's table, never K^2 memory and K^3 time from a file with a few rows. The rows
   that weigh: all of the other side's when unobserved cells weigh (w0 > 0), else the given. */
static int ncf__als_rows_in(const ncf_model *m, int side, int n)
{
    return m->cfg.unobserved > 0 ? (side ? m->cfg.num_users : m->cfg.num_items) : n;
}
static int ncf__als_dim(const ncf_model *m, int side, int n)
{
    int rows = ncf__als_rows_in(m, side, n), K = m->scratch->F;
    return rows < K ? rows : K;
}

/* Floats of a fold-in's buffers for n items; with mem, also carves them. */
static size_t ncf__fold_carve(ncf__fold_buf *b, const ncf_model *m, int n, float *mem)
{
    const struct ncf__scratch *s = m->scratch;
    const int *L = m->cfg.layers, C = NCF__FOLD_CHUNK;
    size_t at = 0, R = (size_t)s->F + (size_t)s->H + 1, w = (size_t)ncf__widest_dense(m),
           L1 = (size_t)(s->H ? L[1] : 1);
    int l;
    b->given = (int32_t *)ncf__carve(mem, &at, (size_t)n);
    b->m1 = (float *)ncf__carve(mem, &at, R), b->m2 = (float *)ncf__carve(mem, &at, R);
    b->grad = (float *)ncf__carve(mem, &at, R);
    b->cand = (int32_t *)ncf__carve(mem, &at, C), b->dz = (float *)ncf__carve(mem, &at, C);
    b->pu = (float *)ncf__carve(mem, &at, L1), b->g1 = (float *)ncf__carve(mem, &at, L1);
    for (l = 1; l <= s->nd; l++) b->act[l] = (float *)ncf__carve(mem, &at, (size_t)C * (size_t)L[l]);
    b->irow = (float *)ncf__carve(mem, &at, (size_t)C * (size_t)s->H);
    b->gi = (float *)ncf__carve(mem, &at, (size_t)C * (size_t)s->F);
    b->d[0] = (float *)ncf__carve(mem, &at, w * C), b->d[1] = (float *)ncf__carve(mem, &at, w * C);
    b->sys = b->rhs = NULL, b->orow = NULL;
    if (m->cfg.optimizer == NCF_OPT_ALS) { /* (either side's system: the workspace serves both) */
        size_t K = (size_t)s->F, wide = sizeof(ncf__wide) / sizeof(float);
        int d0 = ncf__als_dim(m, 0, n), d1 = ncf__als_dim(m, 1, n);
        size_t D = (size_t)(d0 > d1 ? d0 : d1);
        b->sys = (ncf__wide *)ncf__carve(mem, &at, D * D * wide);
        b->rhs = (ncf__wide *)ncf__carve(mem, &at, 2 * K * wide), b->orow = (float *)ncf__carve(mem, &at, 2 * K);
    }
    return at;
}

NCFDEF size_t ncf_fold_workspace_size(const ncf_model *m, int n)
{
    ncf__fold_buf b;
    return m && n > 0 ? sizeof(float) * (ncf__fold_carve(&b, m, n, NULL) + NCF__ALIGN_FLOATS) : 0;
}

/* The logits of the folded row (side 0 a user's, 1 an item's) against the other side's
   b->cand[0..c), into b->dz, every MLP layer kept in b->act. b->pu holds the row's half of the
   first layer (with the layer's bias on the user's side, as training adds it); proj, the
   items' cached half (user fold-in only), or NULL. The scores are the training forward's. */
static void ncf__fold_forward(const ncf_model *m, int side, const float *proj, const float *row, ncf__fold_buf *b,
                              int c)
{
    const struct ncf__scratch *s = m->scratch;
    const int *L = m->cfg.layers, F = s->F, H = s->H, nd = s->nd;
    const float rb = row[F + H];
    int j, d, l;
    if (H) { /* forward through the MLP, every layer kept */
        int L1 = L[1];
        if (!proj) { /* the other side's rows through its half of the first layer */
            for (j = 0; j < c; j++) {
                float *dst = b->irow + (size_t)j * H;
                const float *r = ncf__emb_row(&s->tables.tab[s->tables.mlp], !side, b->cand[j], dst);
                if (r != dst) memcpy(dst, r, sizeof(float) * (size_t)H);
            }
            ncf__gemm_rows(b->act[1], L1, b->irow, H, 1, m->w[1] + (size_t)!side * H * L1, L1, side ? m->b[1] : NULL, 0,
                           c, L1, H, 0);
        }
        for (j = 0; j < c; j++) {
            const float *pi = proj ? proj + (size_t)b->cand[j] * L1 : b->act[1] + (size_t)j * L1;
            float *h = b->act[1] + (size_t)j * L1;
            for (d = 0; d < L1; d++) {
                float v = b->pu[d] + pi[d];
                h[d] = v > 0.0f ? v : 0.0f;
            }
        }
        for (l = 2; l <= nd; l++)
            ncf__gemm_rows(b->act[l], L[l], b->act[l - 1], L[l - 1], 1, m->w[l], L[l], m->b[l], 0, c, L[l], L[l - 1],
                           NCF__RELU);
    }
    for (j = 0; j < c; j++) { /* the logit as serving computes it (the user's bias first, as training adds them) */
        int o = b->cand[j];
        const float *go = F ? ncf__emb_row(&s->tables.tab[s->tables.gmf], !side, o, b->gi + (size_t)j * F) : NULL;
        float bias = !m->user_bias ? 0.0f : side ? m->user_bias[o] + rb : rb + m->item_bias[o];
        const float *h = H ? b->act[nd] + (size_t)j * s->top : NULL;
        b->dz[j] = side ? ncf__output_biased(m, go, F ? row : NULL, bias, h)
                        : ncf__output_biased(m, F ? row : NULL, go, bias, h);
        b->go[j] = go;
    }
}

/* Examples [e0, e0 + c) of a step, the positives first: forward, then d(mean loss)/d(row) added
   into grad (the first layer's deltas into g1, multiplied out by the caller). */
static void ncf__fold_chunk(const ncf_model *m, int side, const float *proj, const float *row, ncf__fold_buf *b,
                            int64_t e0, int c, int npos, float inv_e, float neg_e)
{
    const struct ncf__scratch *s = m->scratch;
    const int *L = m->cfg.layers, C = NCF__FOLD_CHUNK, F = s->F, H = s->H, nd = s->nd;
    const float *wh = m->w_out ? m->w_out + F : NULL;
    int j, d, l, cur;
    ncf__fold_forward(m, side, proj, row, b, c);
    for (j = 0; j < c; j++) { /* d(mean loss)/d(logit); the GMF or MF part's gradient */
        float dz = e0 + j < npos ? (1.0f / (1.0f + expf(-b->dz[j])) - 1.0f) * inv_e
                                 : (1.0f / (1.0f + expf(-b->dz[j])) - 0.0f) * neg_e;
        b->dz[j] = dz;
        for (d = 0; d < F; d++) b->grad[d] += dz * s->tables.gmf_weights[d] * b->go[j][d];
        if (m->user_bias) b->grad[F + H] += dz;
    }
    if (!H) return;
    for (d = 0; d < s->top; d++) /* back through the MLP, deltas feature-major so each layer is one GEMM */
        for (j = 0; j < c; j++)
            b->d[0][(size_t)d * C + j] = b->act[nd][(size_t)j * s->top + d] > 0.0f ? b->dz[j] * wh[d] : 0.0f;
    for (l = nd, cur = 0; l >= 2; l--, cur ^= 1) {
        ncf__gemm_rows(b->d[cur ^ 1], C, m->w[l], L[l], 1, b->d[cur], C, NULL, 0, L[l - 1], c, L[l], 0);
        for (d = 0; d < L[l - 1]; d++)
            for (j = 0; j < c; j++)
                if (!(b->act[l - 1][(size_t)j * L[l - 1] + d] > 0.0f)) b->d[cur ^ 1][(size_t)d * C + j] = 0.0f;
    }
    for (d = 0; d < L[1]; d++)
        for (j = 0; j < c; j++) b->g1[d] += b->d[cur][(size_t)d * C + j];
}

/* One step: the gradient of the mean loss over the given items and fresh negatives, L2, Adam.
   c[0], c[1]: beta1 and beta2 to the power step, made step + 1's here. */
/* The folded row's half of the first layer into b->pu: W1's half of its side times its MLP
   row, with the layer's bias on the user's side (as training adds it). */
static void ncf__fold_first_half(const ncf_model *m, int side, const float *row, ncf__fold_buf *b)
{
    int H = m->scratch->H, L1 = m->cfg.layers[1];
    ncf__gemm_rows(b->pu, L1, row + m->scratch->F, 0, 1, m->w[1] + (size_t)side * H * L1, L1, side ? NULL : m->b[1], 0,
                   1, L1, H, 0);
}

/* Rated items per item, the mean over the catalogue: every varint of the rated lists ends in a
   byte under 128, one per rated item. 0 when the model keeps no lists. */
static double ncf__mean_item_degree(const ncf_model *m)
{
    int64_t k, total = 0, bytes = m->rated ? m->rated_ptr[m->cfg.num_users] : 0;
    for (k = 0; k < bytes; k++) total += m->rated[k] < 128;
    return (double)total / (double)m->cfg.num_items;
}

/* w, the weight of a negative's loss term: 1 for a user (training draws num_neg negatives a
   positive, as the fold-in does); for an item, what makes its negatives weigh as training's do:
   an epoch draws an item as a negative about num_neg times the mean item degree D, whatever its
   own n positives, so each of the fold-in's num_neg n negatives weighs D / n. */
static float ncf__fold_neg_weight(const ncf_model *m, int side, int n)
{
    double d = side ? ncf__mean_item_degree(m) : 0;
    return side && d > 0 ? (float)(d / n) : 1.0f;
}

static void ncf__fold_step(const ncf_model *m, int side, const ncf_fold_opts *o, int n, int step, float *row,
                           ncf__fold_buf *b, float *c, float w)
{
    const struct ncf__scratch *s = m->scratch;
    const float *proj = side ? NULL : ncf__proj_row_major(m, ncf__cached_projection(m));
    int64_t E = (int64_t)n + (int64_t)n * o->num_neg, e0;
    int R = s->F + s->H + 1, j, r, L1 = m->cfg.layers[1], others = side ? m->cfg.num_users : m->cfg.num_items;
    float b1 = 0.9f, b2 = 0.999f, c1 = c[0] *= b1, c2 = c[1] *= b2;
    float inv_e = w == 1.0f ? 1.0f / (float)E : (float)(1.0 / (n + (double)w * (double)(E - n))), neg_e = w * inv_e;
    memset(b->grad, 0, sizeof(float) * (size_t)R);
    if (s->H) memset(b->g1, 0, sizeof(float) * (size_t)L1), ncf__fold_first_half(m, side, row, b);
    for (e0 = 0; e0 < E; e0 += NCF__FOLD_CHUNK) {
        int n_c = E - e0 < NCF__FOLD_CHUNK ? (int)(E - e0) : NCF__FOLD_CHUNK;
        for (j = 0; j < n_c; j++) {
            int64_t e = e0 + j;
            b->cand[j] = e < n ? b->given[e]
                               : (int32_t)ncf__nth_absent(b->given, n,
                                                          (int32_t)ncf__below(ncf__hash3(o->seed ^ NCF__TAG_FOLD,
                                                                                         (uint64_t)step, (uint64_t)e),
                                                                              (uint32_t)(others - n)));
        }
        ncf__fold_chunk(m, side, proj, row, b, e0, n_c, n, inv_e, neg_e);
    }
    if (s->H) /* the MLP row's gradient: W1's half of the row's side times the summed deltas */
        ncf__gemm_rows(b->grad + s->F, 1, m->w[1] + (size_t)side * s->H * L1, L1, 1, b->g1, 1, NULL, 0, s->H, 1, L1, 0);
    for (r = 0; r < R; r++) {
        float g = b->grad[r] + (r < s->F + s->H ? o->l2 * row[r] : 0.0f);
        b->m1[r] = b1 * b->m1[r] + (1.0f - b1) * g;
        b->m2[r] = b2 * b->m2[r] + (1.0f - b2) * g * g;
        row[r] -= o->lr * (b->m1[r] / (1.0f - c1)) / (sqrtf(b->m2[r] / (1.0f - c2)) + 1e-8f);
    }
}

/* The ALS fold-in with fewer weighing rows (D) than factors: A = mf_reg I + Y^T W Y with W the
   rows' weights (1 given, w0 the rest) and b = Y^T W p (p 1 for the given) give, since
   (mf_reg I + Y^T W Y)^-1 Y^T = Y^T (mf_reg I + W Y Y^T)^-1, x = Y^T z with
   (Y Y^T + mf_reg W^-1) z = p: a D x D system, D^2 K + D^3 work. The same row in exact
   arithmetic; mf_reg 0 leaves A singular (rank D < K), as the K x K form finds it. */
static int ncf__fold_als_dual(const ncf_model *m, int side, int n, ncf__fold_buf *b, float *row, const char *what,
                              int D)
{
    const ncf__table *T = &m->scratch->tables.tab[m->scratch->tables.gmf];
    ncf__wide w0 = m->cfg.unobserved, lambda = m->cfg.mf_reg, *S = b->sys, *z = b->rhs, *x = b->rhs + m->scratch->F;
    int K = m->scratch->F, all = w0 > 0, a, c, k, g = 0;
    if (!(lambda > 0))
        return ncf__fail(NCF_ERR_DATA, "%s: the ALS system is singular (an mf_reg of 0 with too few rows?)", what);
    for (a = 0; a < D; a++) {
        int ra = all ? a : b->given[a], given = g < n && b->given[g] == ra;
        const float *ya = ncf__emb_row(T, !side, ra, b->orow);
        g += given;
        for (c = 0; c <= a; c++) {
            const float *yc = ncf__emb_row(T, !side, all ? c : b->given[c], b->orow + K);
            ncf__wide dot = 0;
            for (k = 0; k < K; k++) dot += (ncf__wide)ya[k] * yc[k];
            S[(size_t)a * D + c] = dot;
        }
        S[(size_t)a * D + a] += lambda / (given ? 1 : w0);
        z[a] = given ? 1 : 0;
    }
    if (ncf__cholesky_solve(S, D, z))
        return ncf__fail(NCF_ERR_DATA, "%s: the ALS system is singular (an mf_reg of 0 with too few rows?)", what);
    for (k = 0; k < K; k++) x[k] = 0;
    for (a = 0; a < D; a++) {
        const float *ya = ncf__emb_row(T, !side, all ? a : b->given[a], b->orow);
        for (k = 0; k < K; k++) x[k] += z[a] * ya[k];
    }
    for (k = 0; k < K; k++) {
        row[k] = (float)x[k];
        if (NCF__NONFINITE(row[k]))
            return ncf__fail(NCF_ERR_DATA, "%s: the ALS row is not finite (factor %d)", what, k);
    }
    row[K] = 0.0f;
    return NCF_OK;
}

/* An ALS model's fold-in: the row that training's least squares gives it, exactly. With the
   given rows y_j of the other side (each a positive of confidence 1) and its Gram matrix G,
   (w0 G + mf_reg I + (1 - w0) sum_j y_j y_j^T) x = sum_j y_j, solved by Cholesky's factors
   (implicit's recalculate_user). The bias stays 0, as training leaves it. */
static int ncf__fold_als(const ncf_model *m, int side, int n, ncf__fold_buf *b, float *row, const char *what)
{
    const ncf__table *T = &m->scratch->tables.tab[m->scratch->tables.gmf];
    const ncf__wide *G = ncf__cached_gram(m, !side);
    ncf__wide w0 = m->cfg.unobserved, *A = b->sys, *v = b->rhs;
    int K = m->scratch->F, j, a, c, D = ncf__als_dim(m, side, n);
    if (D < K) return ncf__fold_als_dual(m, side, n, b, row, what, D);
    if (G) memcpy(A, G, sizeof(ncf__wide) * (size_t)K * K);
    else ncf__side_gram(m, !side, A, b->orow);
    for (a = 0; a < K * K; a++) A[a] *= w0;
    for (a = 0; a < K; a++) A[(size_t)a * K + a] += m->cfg.mf_reg, v[a] = 0;
    for (j = 0; j < n; j++) {
        const float *y = ncf__emb_row(T, !side, b->given[j], b->orow);
        for (a = 0; a < K; a++) {
            ncf__wide ya = (1 - w0) * y[a], *Aa = A + (size_t)a * K;
            for (c = 0; c <= a; c++) Aa[c] += ya * y[c]; /* (the lower triangle: all the factors read) */
            v[a] += y[a];
        }
    }
    if (ncf__cholesky_solve(A, K, v))
        return ncf__fail(NCF_ERR_DATA, "%s: the ALS system is singular (an mf_reg of 0 with too few rows?)", what);
    for (a = 0; a < K; a++) {
        row[a] = (float)v[a];
        if (NCF__NONFINITE(row[a]))
            return ncf__fail(NCF_ERR_DATA, "%s: the ALS row is not finite (factor %d)", what, a);
    }
    row[K] = 0.0f;
    return NCF_OK;
}

/* A fold-in of side 0 (a user, from items) or 1 (an item, from users). */
static int ncf__fold(const ncf_model *m, int side, const int32_t *given, int n, const ncf_fold_opts *o, float *row,
                     const char *what)
{
    const char *other = side ? "user" : "item";
    int others = side ? m->cfg.num_users : m->cfg.num_items;
    ncf__fold_buf b;
    float *mem, c[2] = {1.0f, 1.0f}, w;
    int j, nu, step, R;
    if (!given || !o || !row || n <= 0)
        return ncf__fail(NCF_ERR_ARG, "%s: need a model, %ss (n > 0), options and a row", what, other);
    if (o->steps < 0 || o->steps > NCF__FOLD_MOST_STEPS || !(o->lr > 0.0f && o->lr < 1e30f) || o->num_neg < 0 ||
        o->num_neg > NCF__FOLD_MOST_NEG || !(o->l2 >= 0.0f && o->l2 < 1e30f))
        return ncf__fail(NCF_ERR_ARG, "%s: need 0 <= steps <= %d, a finite lr > 0, 0 <= num_neg <= %d and l2 >= 0",
                         what, NCF__FOLD_MOST_STEPS, NCF__FOLD_MOST_NEG);
    if (NCF__MPI_STALE(m)) return ncf__fail(NCF_ERR_ARG, "%s: " NCF__STALE_TEXT, what);
    for (j = 0; o->start && j < ncf_row_size(m); j++)
        if (!(o->start[j] >= -1e6f && o->start[j] <= 1e6f)) /* (the model files' bound; NaN fails it) */
            return ncf__fail(NCF_ERR_ARG, "%s: start[%d] is not a number in [-1e6, 1e6]", what, j);
    for (j = 0; j < n; j++)
        if (given[j] < 0 || given[j] >= others)
            return ncf__fail(NCF_ERR_ARG,
                             "%s: %ss[%d] = %d is not a%s %s index in [0, %d) (ncf_%s_index finds an id's)", what,
                             other, j, (int)given[j], side ? "" : "n", other, others, other);
    if (o->work) {
        size_t need = ncf_fold_workspace_size(m, n);
        if (o->work_size < need)
            return ncf__fail(NCF_ERR_ARG, "%s: workspace of %lu bytes; %d %ss need %lu (ncf_fold_workspace_size)", what,
                             (unsigned long)o->work_size, n, other, (unsigned long)need);
        mem = (float *)(void *)((char *)o->work + (size_t)(-(intptr_t)o->work & 63));
    } else if (!(mem = NCF__NEW(float, ncf_fold_workspace_size(m, n) / sizeof(float)))) {
        return ncf__fail(NCF_ERR_NOMEM, "%s: out of memory for %d %ss", what, n, other);
    }
    ncf__fold_carve(&b, m, n, mem);
    for (j = 0; j < n; j++) b.given[j] = given[j];
    ncf__heap_sort((char *)b.given, (size_t)n, sizeof *b.given,
                   ncf__cmp_i32); /* (in place: the workspace form allocates nothing) */
    for (j = nu = 0; j < n; j++)
        if (nu == 0 || b.given[j] != b.given[nu - 1]) b.given[nu++] = b.given[j];
    if (m->cfg.optimizer == NCF_OPT_ALS) {
        int rc = ncf__fold_als(m, side, nu, &b, row, what);
        if (!o->work) NCF_FREE(mem);
        return rc;
    }
    R = ncf_row_size(m);
    if (nu == others && o->num_neg > 0 && o->steps > 0) {
        if (!o->work) NCF_FREE(mem);
        return ncf__fail(NCF_ERR_DATA, "%s: the %ss given are all of them: no negative to draw", what, other);
    }
    if (o->start) memcpy(row, o->start, sizeof(float) * (size_t)R);
    else memset(row, 0, sizeof(float) * (size_t)R);
    if (!m->user_bias) row[R - 1] = 0.0f;
    memset(b.m1, 0, sizeof(float) * (size_t)R), memset(b.m2, 0, sizeof(float) * (size_t)R);
    w = ncf__fold_neg_weight(m, side, nu);
    for (step = 0; step < o->steps; step++) ncf__fold_step(m, side, o, nu, step, row, &b, c, w);
    if (!o->work) NCF_FREE(mem);
    for (j = 0; j < R; j++)
        if (NCF__NONFINITE(row[j]))
            return ncf__fail(NCF_ERR_DATA, "%s: the row is not finite (value %d): the model's scores overflow", what,
                             j);
    return NCF_OK;
}

NCFDEF int ncf_fold_in(const ncf_model *m, int side, const int32_t *given, int n, const ncf_fold_opts *o, float *row)
{
    ncf_fold_opts d = ncf_fold_opts_default();
    int rc = ncf__side_ok(m, side, "ncf_fold_in");
    return rc != NCF_OK ? rc : ncf__fold(m, side, given, n, o ? o : &d, row, "ncf_fold_in");
}

static int ncf__predict_users(const ncf_model *m, int i, const float *irow, const int32_t *users, int n, float *logits)
{
    ncf__fold_buf b;
    float *mem, *own = NULL;
    int j, R;
    if (!m || !users || !logits || n < 0) return ncf__fail(NCF_ERR_ARG, "ncf_predict_for: NULL argument or n < 0");
    if (!irow && (i < 0 || i >= m->cfg.num_items))
        return ncf__fail(NCF_ERR_ARG, "ncf_predict_for: item index %d is not in [0, %d)", i, m->cfg.num_items);
    for (j = 0; j < n; j++)
        if (users[j] < 0 || users[j] >= m->cfg.num_users)
            return ncf__fail(NCF_ERR_ARG, "ncf_predict_for: users[%d] = %d is not a user index", j, (int)users[j]);
    R = ncf_row_size(m);
    mem = NCF__NEW(float, ncf_fold_workspace_size(m, 1) / sizeof(float) + (irow ? 0 : (size_t)R));
    if (!mem) return ncf__fail(NCF_ERR_NOMEM, "ncf_predict_for: out of memory");
    own = irow ? NULL : mem + ncf_fold_workspace_size(m, 1) / sizeof(float);
    if (own) ncf__side_row(m, NCF_ITEM, i, own, "ncf_predict_for"), irow = own;
    ncf__fold_carve(&b, m, 1, (float *)(void *)((char *)mem + (size_t)(-(intptr_t)mem & 63)));
    if (m->scratch->H) ncf__fold_first_half(m, 1, irow, &b);
    for (j = 0; j < n; j += NCF__FOLD_CHUNK) {
        int c = n - j < NCF__FOLD_CHUNK ? n - j : NCF__FOLD_CHUNK;
        memcpy(b.cand, users + j, sizeof(int32_t) * (size_t)c);
        ncf__fold_forward(m, 1, NULL, irow, &b, c);
        memcpy(logits + j, b.dz, sizeof(float) * (size_t)c);
    }
    NCF_FREE(mem);
    return NCF_OK;
}

NCFDEF int ncf_predict_for(const ncf_model *m, int side, int index, const float *row, const int32_t *others, int n,
                           float *logits)
{
    int rc = ncf__side_ok(m, side, "ncf_predict_for");
    if (rc != NCF_OK) return rc;
    return side == NCF_USER ? ncf__predict_items(m, index, row, others, n, logits)
                            : ncf__predict_users(m, index, row, others, n, logits);
}

#ifndef NCF_INFERENCE_ONLY
/* ---- >>growth: a model that grows with new data ---------------------------------------------- */

/* map[k] = the index in t of ids' id k as written, or -1; *missing counts t's ids not in ids. */
static int ncf__map_ids(ncf__ids from, ncf__ids to, int32_t *map, int *missing, int *first_missing)
{
    char name[NCF_MAX_ID_BYTES + 1];
    uint8_t *hit = NCF__ZNEW(uint8_t, to.n ? to.n : 1);
    int k;
    if (!hit) return ncf__fail(NCF_ERR_NOMEM, "out of memory mapping ids");
    for (k = 0; k < from.n; k++) {
        int n = ncf__ids_name(&from, k, name, sizeof name);
        map[k] = n < 0 ? -1 : ncf__ids_find(&to, name, (size_t)n);
        if (map[k] >= 0) hit[map[k]] = 1;
    }
    *missing = 0, *first_missing = -1;
    for (k = 0; k < to.n; k++)
        if (!hit[k]) (*missing)++, *first_missing = *first_missing < 0 ? k : *first_missing;
    NCF_FREE(hit);
    return NCF_OK;
}

/* Rows of tensor t of the old model into the new one, row r of new from row map[r] of old when
   >= 0 (a fresh row otherwise): parameters, and Adam moments where both keep them. */
static void ncf__copy_rows(ncf_model *dst, const ncf_model *src, int t, const int32_t *map)
{
    const ncf_tensor *T = &dst->tensors[t], *S = &src->tensors[t];
    size_t r, cols = (size_t)T->cols;
    for (r = 0; r < (size_t)T->rows; r++) {
        size_t from = map ? (size_t)map[r] : r;
        if (map && map[r] < 0) continue;
        memcpy(dst->params + T->offset + r * cols, src->params + S->offset + from * cols, sizeof(float) * cols);
        if (dst->adam_m && src->adam_m) {
            memcpy(dst->adam_m + T->offset + r * cols, src->adam_m + S->offset + from * cols, sizeof(float) * cols);
            memcpy(dst->adam_v + T->offset + r * cols, src->adam_v + S->offset + from * cols, sizeof(float) * cols);
        }
    }
}

/* A table's ids and extra names merged and sorted as every table is (integers by value when
   all are plain integers, else text by bytes): into *out (num, or text and at, allocated),
   with where each old id (map_old) and each extra name (map_extra) lands. */

static int ncf__union_ids(ncf__ids t, const char *extra, const int64_t *extra_at, int nextra, int64_t **num,
                          char **text, int64_t **at, int32_t *map_old, int32_t *map_extra)
{
    int n = t.n + nextra, k, all_int = 1;
    char name[NCF_MAX_ID_BYTES + 1], *names;
    ncf__idkey *key = NCF__NEW(ncf__idkey, n);
    int64_t bytes = 0;
    *num = NULL, *text = NULL, *at = NULL;
    for (k = 0; k < t.n; k++) bytes += ncf__ids_name(&t, k, name, sizeof name);
    names = NCF__NEW(char, bytes + extra_at[nextra] + 1);
    if (!key || !names) {
        NCF_FREE(key), NCF_FREE(names);
        return ncf__fail(NCF_ERR_NOMEM, "out of memory merging ids");
    }
    for (k = 0, bytes = 0; k < n; k++) {
        int len = k < t.n ? ncf__ids_name(&t, k, name, sizeof name) : (int)(extra_at[k - t.n + 1] - extra_at[k - t.n]);
        memcpy(names + bytes, k < t.n ? name : extra + extra_at[k - t.n], (size_t)len);
        key[k].p = names + bytes, key[k].len = len, key[k].src = k;
        all_int &= ncf__plain_int(key[k].p, key[k].p + len, &key[k].num);
        bytes += len;
    }
    ncf__sort(key, (size_t)n, sizeof *key, all_int ? ncf__cmp_idkey_num : ncf__cmp_idkey_text);
    if (all_int) *num = NCF__NEW(int64_t, n);
    else *text = NCF__NEW(char, bytes + 1), *at = NCF__NEW(int64_t, (size_t)n + 1);
    if (all_int ? !*num : !*text || !*at) {
        NCF_FREE(key), NCF_FREE(names), NCF__DROP(*num), NCF__DROP(*text), NCF__DROP(*at);
        return ncf__fail(NCF_ERR_NOMEM, "out of memory merging ids");
    }
    for (k = 0, bytes = 0; k < n; k++) {
        if (all_int) (*num)[k] = key[k].num;
        else (*at)[k] = bytes, memcpy(*text + bytes, key[k].p, (size_t)key[k].len), bytes += key[k].len;
        if (key[k].src < t.n) map_old[key[k].src] = k;
        else map_extra[key[k].src - t.n] = k;
    }
    if (!all_int) (*at)[n] = bytes;
    NCF_FREE(key), NCF_FREE(names);
    return NCF_OK;
}

/* The names of the model's ids (side 0 users, 1 items) that the dataset lacks, back to back;
   on failure *text and *at are NULL. */
static int ncf__missing_ids(const ncf_dataset *d, const ncf_model *m, int side, char **text, int64_t **at, int *n)
{
    ncf__ids mt = ncf__model_ids(m, side), dt = ncf__dataset_ids(d, side);
    char name[NCF_MAX_ID_BYTES + 1];
    int k, len;
    int64_t bytes = 0;
    *n = 0, *text = NULL;
    for (k = 0; k < mt.n; k++) bytes += ncf__ids_name(&mt, k, name, sizeof name);
    *at = NCF__NEW(int64_t, (size_t)mt.n + 1), *text = NCF__NEW(char, bytes + 1);
    if (!*at || !*text) {
        NCF__DROP(*at), NCF__DROP(*text);
        return ncf__fail(NCF_ERR_NOMEM, "out of memory for the model's %d %s ids", mt.n, side ? "item" : "user");
    }
    for (k = 0, (*at)[0] = 0; k < mt.n; k++) {
        len = ncf__ids_name(&mt, k, name, sizeof name);
        if (ncf__ids_find(&dt, name, (size_t)len) >= 0) continue;
        memcpy(*text + (*at)[*n], name, (size_t)len);
        (*at)[*n + 1] = (*at)[*n] + len, (*n)++;
    }
    return NCF_OK;
}

/* d's per-user rows of width w (eval or validation negatives) in the new user order, items
   remapped; zeros for the users added. */
static int32_t *ncf__moved_rows(const int32_t *rows, int w, int U2, const int32_t *old_of, const int32_t *imap)
{
    int32_t *out = rows ? NCF__ZNEW(int32_t, (size_t)U2 * (size_t)w + 1) : NULL;
    int v, j;
    for (v = 0; out && v < U2; v++)
        for (j = 0; old_of[v] >= 0 && j < w; j++) out[(size_t)v * w + j] = imap[rows[(size_t)old_of[v] * w + j]];
    return out;
}

/* A positive and its weight, to sort them together (the item first: ncf__cmp_i32 orders them). */
typedef struct {
    int32_t item;
    float weight;
} ncf__weighed;

static int32_t *ncf__moved_items(const int32_t *per_user, int U2, const int32_t *old_of, const int32_t *imap)
{
    int32_t *out = per_user ? NCF__NEW(int32_t, U2 ? U2 : 1) : NULL;
    int v;
    for (v = 0; out && v < U2; v++) out[v] = old_of[v] < 0 || per_user[old_of[v]] < 0 ? -1 : imap[per_user[old_of[v]]];
    return out;
}

NCFDEF int ncf_dataset_add_ids(ncf_dataset *d, const ncf_model *m)
{
    char *miss[2] = {NULL, NULL}, *text[2] = {NULL, NULL};
    int64_t *miss_at[2] = {NULL, NULL}, *num[2] = {NULL, NULL}, *at[2] = {NULL, NULL}, *ptr = NULL;
    int32_t *map[2] = {NULL, NULL}, *xmap[2] = {NULL, NULL}, *old_of = NULL, *items = NULL, *tu = NULL;
    int32_t *test = NULL, *val = NULL, *recent = NULL, *eneg = NULL, *vneg = NULL;
    float *wt = NULL, *vwt = NULL;
    ncf__weighed *pair = NULL; /* with weights: each user's (item, weight) pairs, sorted together */
    int nmiss[2] = {0, 0}, rc = NCF_OK, side, U2, I2, v;
    if (!d || !d->user_ptr || !m || !ncf__has_ids(m))
        return ncf__fail(NCF_ERR_ARG, "ncf_dataset_add_ids: need a dataset and a model with ids");
    if (ncf__is_shard(d)) return ncf__fail(NCF_ERR_ARG, "ncf_dataset_add_ids: the dataset is a shard");
    if (d->test_ptr) return ncf__fail(NCF_ERR_ARG, "ncf_dataset_add_ids: a split of many items per user is not grown");
    for (side = 0; side < 2 && rc == NCF_OK; side++)
        rc = ncf__missing_ids(d, m, side, &miss[side], &miss_at[side], &nmiss[side]);
    if (rc != NCF_OK || (!nmiss[0] && !nmiss[1])) goto done;
    U2 = d->num_users + nmiss[0], I2 = d->num_items + nmiss[1];
    for (side = 0; side < 2 && rc == NCF_OK; side++) {
        int n = side ? d->num_items : d->num_users;
        map[side] = NCF__NEW(int32_t, n ? n : 1), xmap[side] = NCF__NEW(int32_t, nmiss[side] ? nmiss[side] : 1);
        rc = !map[side] || !xmap[side]
            ? ncf__fail(NCF_ERR_NOMEM, "out of memory")
            : ncf__union_ids(ncf__dataset_ids(d, side), miss[side], miss_at[side], nmiss[side], &num[side], &text[side],
                             &at[side], map[side], xmap[side]);
    }
    if (rc != NCF_OK) goto done;
    old_of = NCF__NEW(int32_t, U2), ptr = NCF__NEW(int64_t, (size_t)U2 + 1);
    items = NCF__NEW(int32_t, d->num_train ? d->num_train : 1), tu = NCF__NEW(int32_t, d->num_train ? d->num_train : 1);
    if (d->weight)
        wt = NCF__NEW(float, d->num_train ? d->num_train : 1),
        pair = NCF__NEW(ncf__weighed, d->num_train ? d->num_train : 1);
    if (!old_of || !ptr || !items || !tu || (d->weight && (!wt || !pair))) {
        rc = ncf__fail(NCF_ERR_NOMEM, "out of memory");
        goto done;
    }
    for (v = 0; v < U2; v++) old_of[v] = -1;
    for (v = 0; v < d->num_users; v++) old_of[map[0][v]] = v;
    for (v = 0, ptr[0] = 0; v < U2; v++) { /* each user's items remapped, ascending again */
        int u = old_of[v];
        int64_t k, n = u < 0 ? 0 : d->user_ptr[u + 1] - d->user_ptr[u], o = ptr[v];
        for (k = 0; k < n; k++) items[o + k] = map[1][d->items[d->user_ptr[u] + k]], tu[o + k] = v;
        if (pair) {
            for (k = 0; k < n; k++) pair[o + k].item = items[o + k], pair[o + k].weight = d->weight[d->user_ptr[u] + k];
            ncf__sort(pair + o, (size_t)n, sizeof *pair, ncf__cmp_i32); /* (item first: by item) */
            for (k = 0; k < n; k++) items[o + k] = pair[o + k].item, wt[o + k] = pair[o + k].weight;
        } else ncf__sort(items + o, (size_t)n, sizeof *items, ncf__cmp_i32);
        ptr[v + 1] = ptr[v] + n;
    }
    test = ncf__moved_items(d->test_item, U2, old_of, map[1]);
    val = ncf__moved_items(d->val_item, U2, old_of, map[1]),
    recent = ncf__moved_items(d->recent_item, U2, old_of, map[1]);
    eneg = ncf__moved_rows(d->eval_neg, d->num_eval_neg, U2, old_of, map[1]);
    vneg = ncf__moved_rows(d->val_neg, d->num_val_neg, U2, old_of, map[1]);
    if (d->val_weight && (vwt = NCF__NEW(float, U2 ? U2 : 1)) != NULL)
        for (v = 0; v < U2; v++) vwt[v] = old_of[v] < 0 ? 0 : d->val_weight[old_of[v]];
    if (!test || (d->val_item && !val) || (d->val_weight && !vwt) || (d->recent_item && !recent) ||
        (d->eval_neg && !eneg) || (d->val_neg && !vneg)) {
        rc = ncf__fail(NCF_ERR_NOMEM, "out of memory");
        goto done;
    }
    { /* all built: in they go, and out go the old arrays */
        ncf_dataset old = *d;
        d->user_ptr = ptr, d->items = items, d->train_user = tu, d->test_item = test, d->val_item = val;
        d->recent_item = recent, d->eval_neg = eneg, d->val_neg = vneg, d->weight = wt, d->val_weight = vwt;
        d->raw_user = num[0], d->raw_item = num[1], d->user_text = text[0], d->item_text = text[1];
        d->user_text_at = at[0], d->item_text_at = at[1];
        ptr = NULL, items = tu = test = val = recent = eneg = vneg = NULL, wt = vwt = NULL;
        num[0] = num[1] = at[0] = at[1] = NULL, text[0] = text[1] = NULL;
        NCF_FREE(old.user_ptr), NCF_FREE(old.items), NCF_FREE(old.train_user), NCF_FREE(old.test_item);
        NCF_FREE(old.val_item), NCF_FREE(old.recent_item), NCF_FREE(old.eval_neg), NCF_FREE(old.val_neg);
        NCF_FREE(old.weight), NCF_FREE(old.val_weight);
        NCF_FREE(old.raw_user), NCF_FREE(old.raw_item), NCF_FREE(old.user_text), NCF_FREE(old.item_text);
        NCF_FREE(old.user_text_at), NCF_FREE(old.item_text_at);
    }
    d->num_users = U2, d->num_items = I2;
done:
    for (side = 0; side < 2; side++)
        NCF_FREE(miss[side]), NCF_FREE(miss_at[side]), NCF_FREE(num[side]), NCF_FREE(text[side]), NCF_FREE(at[side]),
            NCF_FREE(map[side]), NCF_FREE(xmap[side]);
    NCF_FREE(old_of), NCF_FREE(ptr), NCF_FREE(items), NCF_FREE(tu), NCF_FREE(test), NCF_FREE(val), NCF_FREE(recent);
    NCF_FREE(eneg), NCF_FREE(vneg), NCF_FREE(wt), NCF_FREE(vwt), NCF_FREE(pair);
    return rc;
}

NCFDEF int ncf_model_grow(ncf_model **mp, const ncf_dataset *d)
{
    ncf_model *m, *g = NULL;
    ncf_config c;
    int32_t *umap = NULL, *imap = NULL;
    int rc, t, mu, mi, fu, fi;
    char name[NCF_MAX_ID_BYTES + 1];
    if (!mp || !*mp || !d || !d->user_ptr)
        return ncf__fail(NCF_ERR_ARG, "ncf_model_grow: need a model and a loaded dataset");
    m = *mp;
    if ((rc = ncf__writable(m, "ncf_model_grow")) != NCF_OK) return rc;
    if (!ncf__has_ids(m))
        return ncf__fail(NCF_ERR_ARG, "ncf_model_grow: the model holds no ids to match the data's by");
    umap = NCF__NEW(int32_t, d->num_users ? d->num_users : 1),
    imap = NCF__NEW(int32_t, d->num_items ? d->num_items : 1);
    if (!umap || !imap) {
        rc = ncf__fail(NCF_ERR_NOMEM, "ncf_model_grow: out of memory");
        goto done;
    }
    if ((rc = ncf__map_ids(ncf__dataset_ids(d, 0), ncf__model_ids(m, 0), umap, &mu, &fu)) != NCF_OK ||
        (rc = ncf__map_ids(ncf__dataset_ids(d, 1), ncf__model_ids(m, 1), imap, &mi, &fi)) != NCF_OK)
        goto done;
    if (mu || mi) {
        ncf__ids ids = ncf__model_ids(m, mu ? 0 : 1);
        ncf__ids_name(&ids, mu ? fu : fi, name, sizeof name);
        rc = ncf__fail(NCF_ERR_DATA,
                       "ncf_model_grow: the data lacks %d of the model's users and %d of its items "
                       "(%s '%s', ...): growing would drop them (ncf_dataset_add_ids keeps them)",
                       mu, mi, mu ? "user" : "item", ncf__shown(name, name + strlen(name)));
        goto done;
    }
    c = m->cfg;
    c.num_users = d->num_users, c.num_items = d->num_items;
    if ((rc = ncf_model_create(&g, &c)) != NCF_OK) goto done;
    for (t = 0; t < g->num_tensors; t++) {
        const char *nm = g->tensors[t].name;
        int per_user = !strcmp(nm, "gmf_user") || !strcmp(nm, "mlp_user") || !strcmp(nm, "user_bias");
        int per_item = !strcmp(nm, "gmf_item") || !strcmp(nm, "mlp_item") || !strcmp(nm, "item_bias");
        ncf__copy_rows(g, m, t, per_user ? umap : per_item ? imap : NULL);
    }
    g->step = m->step, g->epoch = m->epoch;
    if ((rc = ncf__features_carry(g, m)) != NCF_OK || (rc = ncf_model_set_ids(g, d)) != NCF_OK) goto done;
    ncf_model_free(m);
    *mp = g, g = NULL;
done:
    ncf_model_free(g);
    NCF_FREE(umap), NCF_FREE(imap);
    return rc;
}

/* Rows [GMF or MF][MLP][MF bias] into user (side 0) or item (1) k of m. */
/* Where row k of a side lives among the parameters: its GMF (or MF) part, MLP part and bias,
   each NULL where the model has none (a row's layout, [F][H][1], as ncf_row's). */
static void ncf__row_parts(const ncf_model *m, int side, int k, float **gmf, float **mlp, float **bias)
{
    const struct ncf__scratch *s = m->scratch;
    float *g = side ? m->gmf_item : m->gmf_user, *h = side ? m->mlp_item : m->mlp_user,
          *b = side ? m->item_bias : m->user_bias;
    *gmf = s->F ? g + (size_t)k * s->F : NULL, *mlp = s->H ? h + (size_t)k * s->H : NULL, *bias = b ? b + k : NULL;
}

static void ncf__put_side_row(ncf_model *m, int side, int k, const float *row)
{
    const struct ncf__scratch *s = m->scratch;
    float *g, *h, *b;
    ncf__row_parts(m, side, k, &g, &h, &b);
    if (g) memcpy(g, row, sizeof(float) * (size_t)s->F);
    if (h) memcpy(h, row + s->F, sizeof(float) * (size_t)s->H);
    if (b) *b = row[s->F + s->H];
}

/* A new id for ncf_model_add: its bytes, its number where the side's ids are integers, and
   which of the caller's ids it is. */
typedef struct {
    const char *id;
    size_t len;
    int64_t num;
    int given;
} ncf__new_id;

static int ncf__cmp_new_text(const void *a, const void *b)
{
    const ncf__new_id *x = (const ncf__new_id *)a, *y = (const ncf__new_id *)b;
    int c = ncf__cmp_text(x->id, x->len, y->id, y->len);
    return c ? c : (x->given > y->given) - (x->given < y->given);
}
static int ncf__cmp_new_num(const void *a, const void *b)
{
    const ncf__new_id *x = (const ncf__new_id *)a, *y = (const ncf__new_id *)b;
    return x->num != y->num ? (x->num > y->num) - (x->num < y->num) : (x->given > y->given) - (x->given < y->given);
}

/* A dataset of m's ids with c new ids of one side (ascending, each once) merged in at their
   places (a side whose ids were given out of order takes them at its end), and m's rated
   items as its training positives, renumbered: what ncf_model_grow grows m to, all at once. */
static int ncf__ids_plus(const ncf_model *m, int side, const ncf__new_id *add, int c, ncf_dataset *d)
{
    ncf__ids t[2];
    int n[2], i, j, k, u, s, rc = NCF_OK;
    int32_t *map = NULL, *src = NULL; /* old index -> new; new index -> old (or -1 - j: new id j) */
    int64_t total = 0;
    memset(d, 0, sizeof *d);
    t[0] = ncf__model_ids(m, 0), t[1] = ncf__model_ids(m, 1);
    n[!side] = t[!side].n, n[side] = t[side].n + c;
    map = NCF__NEW(int32_t, (size_t)t[side].n + 1), src = NCF__NEW(int32_t, (size_t)n[side]);
    if (!map || !src) {
        NCF_FREE(map), NCF_FREE(src);
        return ncf__fail(NCF_ERR_NOMEM, "ncf_model_add: out of memory for %d ids", n[side]);
    }
    for (i = j = k = 0; k < n[side]; k++) { /* the merge */
        int take_new = j < c &&
            (i == t[side].n ||
             (!t[side].order &&
              (t[side].text ? ncf__cmp_text(t[side].text + t[side].at[i], (size_t)(t[side].at[i + 1] - t[side].at[i]),
                                            add[j].id, add[j].len) > 0
                            : t[side].num[i] > add[j].num)));
        if (take_new) src[k] = -1 - j++;
        else map[i] = k, src[k] = i++;
    }
    d->num_users = n[0], d->num_items = n[1];
    for (s = 0; s < 2 && rc == NCF_OK; s++) { /* each side's ids, side's merged */
        int extra = s == side;
        if (t[s].text) {
            int64_t bytes = t[s].at[t[s].n], *at_s = NCF__NEW(int64_t, (size_t)n[s] + 1);
            char *text;
            for (j = 0; extra && j < c; j++) bytes += (int64_t)add[j].len;
            text = NCF__NEW(char, bytes ? bytes : 1);
            if (s) d->item_text = text, d->item_text_at = at_s;
            else d->user_text = text, d->user_text_at = at_s;
            if (!text || !at_s) {
                rc = ncf__fail(NCF_ERR_NOMEM, "ncf_model_add: out of memory for the ids");
                break;
            }
            for (k = 0, at_s[0] = 0; k < n[s]; k++) {
                int o = extra ? src[k] : k;
                const char *p = o < 0 ? add[-1 - o].id : t[s].text + t[s].at[o];
                size_t l = o < 0 ? add[-1 - o].len : (size_t)(t[s].at[o + 1] - t[s].at[o]);
                memcpy(text + at_s[k], p, l), at_s[k + 1] = at_s[k] + (int64_t)l;
            }
        } else {
            int64_t *raw = NCF__NEW(int64_t, (size_t)n[s]);
            if (s) d->raw_item = raw;
            else d->raw_user = raw;
            if (!raw) {
                rc = ncf__fail(NCF_ERR_NOMEM, "ncf_model_add: out of memory for the ids");
                break;
            }
            for (k = 0; k < n[s]; k++) {
                int o = extra ? src[k] : k;
                raw[k] = o < 0 ? add[-1 - o].num : t[s].num[o];
            }
        }
    }
    for (u = 0; rc == NCF_OK && u < m->cfg.num_users; u++) { /* the rated items, as training positives */
        ncf__rated_cursor q;
        for (ncf__rated_from(&q, m, u, 0); q.next < INT32_MAX; ncf__rated_step(&q)) total++;
    }
    if (rc == NCF_OK) {
        d->user_ptr = NCF__NEW(int64_t, (size_t)n[0] + 1), d->items = NCF__NEW(int32_t, total ? total : 1);
        d->test_item = NCF__NEW(int32_t, (size_t)n[0]);
        if (!d->user_ptr || !d->items || !d->test_item) rc = ncf__fail(NCF_ERR_NOMEM, "ncf_model_add: out of memory");
    }
    for (u = 0, total = 0; rc == NCF_OK && u < n[0]; u++) { /* (a map keeps each list ascending) */
        int o = side ? u : src[u];
        if (u == 0) d->user_ptr[0] = 0;
        d->test_item[u] = -1;
        if (o >= 0) {
            ncf__rated_cursor q;
            for (ncf__rated_from(&q, m, o, 0); q.next < INT32_MAX; ncf__rated_step(&q))
                d->items[total++] = side ? map[q.next] : q.next;
        }
        d->user_ptr[u + 1] = total;
    }
    d->num_train = total;
    NCF_FREE(map), NCF_FREE(src);
    return rc;
}

NCFDEF int ncf_model_add(ncf_model **mp, int side, const char *const *ids, const float *rows, int n)
{
    ncf_dataset d;
    ncf__ids t;
    ncf__new_id *add = NULL;
    int j, c = 0, r, R, rc;
    if (!mp || !*mp || (side != 0 && side != 1) || !ids || !rows || n < 1)
        return ncf__fail(NCF_ERR_ARG,
                         "ncf_model_add: need a model, side 0 (users) or 1 (items), n >= 1 ids and their rows");
    if ((rc = ncf__writable(*mp, "ncf_model_add")) != NCF_OK) return rc;
    if (!ncf__has_ids(*mp)) return ncf__fail(NCF_ERR_ARG, "ncf_model_add: the model holds no ids (ncf_model_set_ids)");
    R = ncf_row_size(*mp), t = ncf__model_ids(*mp, side);
    if (!(add = NCF__NEW(ncf__new_id, (size_t)n))) return ncf__fail(NCF_ERR_NOMEM, "ncf_model_add: out of memory");
    for (j = 0; j < n; j++) { /* every id and row checked before anything changes */
        size_t len = ids[j] ? strlen(ids[j]) : 0;
        int64_t num = 0;
        if (len == 0 || len > NCF_MAX_ID_BYTES) {
            NCF_FREE(add);
            return ncf__fail(NCF_ERR_ARG, "ncf_model_add: ids[%d]: an id of 1 to %d bytes, not %lu", j,
                             NCF_MAX_ID_BYTES, (unsigned long)len);
        }
        for (r = 0; r < R; r++)
            if (!(rows[(size_t)j * R + r] >= -NCF__MAX_PARAM && rows[(size_t)j * R + r] <= NCF__MAX_PARAM)) {
                NCF_FREE(add);
                return ncf__fail(NCF_ERR_ARG,
                                 "ncf_model_add: rows[%d][%d] = %g is not a parameter (finite, within 1e6)", j, r,
                                 (double)rows[(size_t)j * R + r]);
            }
        if (ncf__ids_find(&t, ids[j], len) >= 0) continue; /* known: its rows replaced below */
        if (!t.text && !ncf__plain_int(ids[j], ids[j] + len, &num)) {
            NCF_FREE(add);
            return ncf__fail(NCF_ERR_ARG, "ncf_model_add: the model's %s ids are integers; '%s' is not one",
                             side ? "item" : "user", ncf__shown(ids[j], ids[j] + len));
        }
        add[c].id = ids[j], add[c].len = len, add[c].num = num, add[c++].given = j;
    }
    if (c) { /* the new ids ascending, each once; one grow for them all */
        int k;
        ncf__heap_sort((char *)add, (size_t)c, sizeof *add, t.text ? ncf__cmp_new_text : ncf__cmp_new_num);
        for (j = k = 0; j < c; j++)
            if (!k ||
                (t.text ? ncf__cmp_text(add[k - 1].id, add[k - 1].len, add[j].id, add[j].len)
                        : add[k - 1].num != add[j].num))
                add[k++] = add[j];
        c = k;
        rc = ncf__ids_plus(*mp, side, add, c, &d);
        if (rc == NCF_OK) rc = ncf_model_grow(mp, &d);
        ncf_dataset_free(&d);
    }
    NCF_FREE(add);
    if (rc != NCF_OK) return rc;
    t = ncf__model_ids(*mp, side);
    for (j = 0; j < n; j++) /* (in the order given: an id given twice keeps its last rows) */
        ncf__put_side_row(*mp, side, ncf__ids_find(&t, ids[j], strlen(ids[j])), rows + (size_t)j * R);
    ncf_model_params_changed(*mp);
    return NCF_OK;
}
#endif
