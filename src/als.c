/* MF fitted to the whole matrix by alternating least squares (implicit ALS). The Gram matrices
   and the Cholesky solve serve an ALS model's fold-in, on a device too; the rest trains. */

/* G [K][K] = the sum of y y^T over side's MF rows y (0 users, 1 items; K = mf_dim), each
   entry summed over the rows in order; tmp: K floats for an int8 row. */
static void ncf__side_gram(const ncf_model *m, int side, ncf__wide *G, float *tmp)
{
    const ncf__table *T = &m->scratch->tables.tab[m->scratch->tables.gmf];
    int K = m->scratch->F, n = side ? m->cfg.num_items : m->cfg.num_users, r, a, b;
    memset(G, 0, sizeof(ncf__wide) * (size_t)K * K);
    for (r = 0; r < n; r++) {
        const float *y = ncf__emb_row(T, side, r, tmp);
        for (a = 0; a < K; a++) {
            ncf__wide ya = y[a], *Ga = G + (size_t)a * K;
            for (b = a; b < K; b++) Ga[b] += ya * y[b];
        }
    }
    for (a = 0; a < K; a++)
        for (b = a + 1; b < K; b++) G[(size_t)b * K + a] = G[(size_t)a * K + b];
}

/* An ALS model's fold-in solves with the other side's Gram matrix (>>fold-in): kept for both
   sides, where they are not past the projection's bound. */
static void ncf__refresh_gram(ncf_model *m)
{
    struct ncf__scratch *s = m->scratch;
    size_t KK = (size_t)s->F * s->F;
    int side;
    float *tmp = NULL;
    for (side = 0; side < 2; side++) NCF_FREE(s->cache.gram[side]), s->cache.gram[side] = NULL;
    if (m->cfg.optimizer != NCF_OPT_ALS || !s->F ||
        !ncf__proj_fits(m, 2 * KK * (sizeof(ncf__wide) / sizeof(float)) + (size_t)s->F))
        return;
    tmp = NCF__NEW(float, s->F);
    for (side = 0; side < 2 && tmp; side++)
        if ((s->cache.gram[side] = NCF__NEW(ncf__wide, KK)) != NULL) ncf__side_gram(m, side, s->cache.gram[side], tmp);
    NCF_FREE(tmp);
}

/* The cached Gram matrix of side's rows, when it is that of the current parameters, or NULL. */
static const ncf__wide *ncf__cached_gram(const ncf_model *m, int side)
{
    const struct ncf__scratch *s = m->scratch;
    return s->cache.step == m->step ? s->cache.gram[side] : NULL;
}

/* Solves A x = v in place by Cholesky's factors (A symmetric [K][K], its lower triangle
   overwritten). Returns nonzero when A is not positive definite. */
static int ncf__cholesky_solve(ncf__wide *A, int K, ncf__wide *v)
{
    int i, j, k;
    for (j = 0; j < K; j++) {
        ncf__wide *Aj = A + (size_t)j * K, d = Aj[j];
        for (k = 0; k < j; k++) d -= Aj[k] * Aj[k];
        if (!(d > 0)) return 1;
        Aj[j] = NCF__WIDE_SQRT(d);
        for (i = j + 1; i < K; i++) {
            ncf__wide *Ai = A + (size_t)i * K, e = Ai[j];
            for (k = 0; k < j; k++) e -= Ai[k] * Aj[k];
            Ai[j] = e / Aj[j];
        }
    }
    for (i = 0; i < K; i++) { /* L y = v */
        for (k = 0; k < i; k++) v[i] -= A[(size_t)i * K + k] * v[k];
        v[i] /= A[(size_t)i * K + i];
    }
    for (i = K - 1; i >= 0; i--) { /* L^T x = y */
        for (k = i + 1; k < K; k++) v[i] -= A[(size_t)k * K + i] * v[k];
        v[i] /= A[(size_t)i * K + i];
    }
    return 0;
}

#ifndef NCF_INFERENCE_ONLY        /* training */
#define NCF__ALS_CG_STEPS 3       /* conjugate gradient steps a row an epoch (implicit's default) */
#define NCF__ALS_REPORT_ROWS 4096 /* rows between progress reports */

/* One side's positives as rows: row r's are other-side rows idx[ptr[r] .. ptr[r+1]), each of
   confidence wt[j] (NULL: all 1). The users' are the data's own; the items' its transpose. */
typedef struct {
    int n;
    const int64_t *ptr;
    const int32_t *idx;
    const float *wt;
} ncf__als_side;

/* The items' side: the data's positives by item, users ascending within each. */
static int ncf__als_transpose(const ncf_dataset *ds, int64_t **ptr, int32_t **idx, float **wt)
{
    int64_t *at, j;
    int u, i;
    *ptr = NCF__ZNEW(int64_t, (size_t)ds->num_items + 1), at = NCF__NEW(int64_t, ds->num_items);
    *idx = NCF__NEW(int32_t, ds->num_train ? ds->num_train : 1);
    *wt = ds->weight ? NCF__NEW(float, ds->num_train ? ds->num_train : 1) : NULL;
    if (!*ptr || !at || !*idx || (ds->weight && !*wt)) {
        NCF_FREE(at);
        return ncf__fail(NCF_ERR_NOMEM, "ALS: out of memory for the positives of %d items", ds->num_items);
    }
    for (j = 0; j < ds->num_train; j++) (*ptr)[ds->items[j] + 1]++;
    for (i = 0; i < ds->num_items; i++) (*ptr)[i + 1] += (*ptr)[i], at[i] = (*ptr)[i];
    for (u = 0; u < ds->num_users; u++)
        for (j = ds->user_ptr[u]; j < ds->user_ptr[u + 1]; j++) {
            int64_t k = at[ds->items[j]]++;
            (*idx)[k] = u;
            if (*wt) (*wt)[k] = ds->weight[j];
        }
    NCF_FREE(at);
    return NCF_OK;
}

/* A = unobserved * Y^T Y + mf_reg * I over the first n rows of Y [n][K]: each entry summed
   over the rows in order, by one thread, so its bits do not depend on the thread count. */
static void ncf__als_gram(const float *Y, int n, int K, double w0, double lambda, double *A)
{
    int a0;
    memset(A, 0, sizeof(double) * (size_t)K * K);
    NCF__PARALLEL((float)n * K * K > 64 * NCF__PAR_WORK)
    NCF__OMP(for schedule(dynamic, 1))
    for (a0 = 0; a0 < K; a0 += 8) {
        int a1 = a0 + 8 < K ? a0 + 8 : K, a, b, r;
        for (r = 0; r < n; r++) {
            const float *y = Y + (size_t)r * K;
            for (a = a0; a < a1; a++) {
                double ya = y[a], *Aa = A + (size_t)a * K;
                for (b = a; b < K; b++) Aa[b] += ya * y[b];
            }
        }
    }
    for (a0 = 0; a0 < K; a0++) {
        int b;
        for (b = a0; b < K; b++) A[(size_t)a0 * K + b] *= w0, A[(size_t)b * K + a0] = A[(size_t)a0 * K + b];
        A[(size_t)a0 * K + a0] += lambda;
    }
}

/* y . v in four running sums (one would wait on each add). */
static double ncf__als_dot(const float *y, const double *v, int K)
{
    double d0 = 0, d1 = 0, d2 = 0, d3 = 0;
    int k;
    for (k = 0; k + 4 <= K; k += 4)
        d0 += y[k] * v[k], d1 += y[k + 1] * v[k + 1], d2 += y[k + 2] * v[k + 2], d3 += y[k + 3] * v[k + 3];
    for (; k < K; k++) d0 += y[k] * v[k];
    return (d0 + d1) + (d2 + d3);
}

/* out = A v. */
static void ncf__als_gram_apply(const double *A, int K, const double *v, double *out)
{
    int a, b;
    memset(out, 0, sizeof(double) * (size_t)K);
    /* (A symmetric: its columns read as rows, so the loops are axpys, which vectorize; four
       rows a pass, so out is loaded and stored once for four multiply-adds) */
    for (a = 0; a + 4 <= K; a += 4) {
        const double *A0 = A + (size_t)a * K, *A1 = A0 + K, *A2 = A1 + K, *A3 = A2 + K;
        double v0 = v[a], v1 = v[a + 1], v2 = v[a + 2], v3 = v[a + 3];
        for (b = 0; b < K; b++) out[b] += v0 * A0[b] + v1 * A1[b] + v2 * A2[b] + v3 * A3[b];
    }
    for (; a < K; a++) {
        const double *Aa = A + (size_t)a * K;
        double va = v[a];
        for (b = 0; b < K; b++) out[b] += va * Aa[b];
    }
}

/* out = (A + sum_j (c_j - w0) y_j y_j^T) v, the row's system applied to v. */
static void ncf__als_apply(const double *A, const float *Y, const ncf__als_side *sd, int r, int K, double w0,
                           const double *v, double *out)
{
    int64_t j;
    int b;
    ncf__als_gram_apply(A, K, v, out);
    for (j = sd->ptr[r]; j < sd->ptr[r + 1]; j++) {
        const float *y = Y + (size_t)sd->idx[j] * K;
        double d = ((sd->wt ? sd->wt[j] : 1.0) - w0) * ncf__als_dot(y, v, K);
        for (b = 0; b < K; b++) out[b] += d * y[b];
    }
}

/* Row x of side row r moved toward the solution of its least squares, (A + sum_j (c_j - w0)
   y_j y_j^T) x = sum_j c_j y_j, by conjugate gradients from where it is (Takacs et al. 2011,
   as implicit). buf: 4K doubles. Returns nonzero when the row is no longer finite. */
static int ncf__als_row(float *x, const double *A, const float *Y, const ncf__als_side *sd, int r, int K, double w0,
                        double *buf)
{
    double *xd = buf, *res = buf + K, *p = buf + (size_t)2 * K, *Ap = buf + (size_t)3 * K, rs = 0, rs1, pAp, step;
    int64_t j;
    int k, s, bad = 0;
    for (k = 0; k < K; k++) xd[k] = x[k];
    ncf__als_apply(A, Y, sd, r, K, w0, xd, res);
    for (k = 0; k < K; k++) res[k] = -res[k];
    for (j = sd->ptr[r]; j < sd->ptr[r + 1]; j++) {
        const float *y = Y + (size_t)sd->idx[j] * K;
        double c = sd->wt ? sd->wt[j] : 1.0;
        for (k = 0; k < K; k++) res[k] += c * y[k];
    }
    for (k = 0; k < K; k++) p[k] = res[k], rs += res[k] * res[k];
    for (s = 0; s < NCF__ALS_CG_STEPS && rs > 1e-30; s++) {
        ncf__als_apply(A, Y, sd, r, K, w0, p, Ap);
        for (pAp = 0, k = 0; k < K; k++) pAp += p[k] * Ap[k];
        if (!(pAp > 0)) break; /* (a singular system with mf_reg 0: x is as good as it gets along p) */
        step = rs / pAp;
        for (rs1 = 0, k = 0; k < K; k++) xd[k] += step * p[k], res[k] -= step * Ap[k], rs1 += res[k] * res[k];
        for (k = 0; k < K; k++) p[k] = res[k] + rs1 / rs * p[k];
        rs = rs1;
    }
    for (k = 0; k < K; k++) x[k] = (float)xd[k], bad |= NCF__NONFINITE(x[k]);
    return bad;
}

/* What an ALS epoch works in, allocated before it changes anything: the system's fixed part
   A [K][K], 4K doubles a thread, a figure a row, and the items' positives by item; and where
   its progress goes: rows of all are done, reported as that share of total examples. */
typedef struct {
    double *A, *buf, *part;
    int64_t *iptr;
    int32_t *iidx;
    float *iwt;
    ncf_progress_fn progress;
    void *ctx;
    int64_t done, all, total;
} ncf__als_work;

/* Rows [r0, r1) of side sd fitted (see below), the objective's part of each in w->part. */
static int ncf__als_rows(float *X, const float *Y, const ncf__als_side *sd, int r0, int r1, int K, double w0,
                         const ncf__als_work *w, int part, int big)
{
    const double *A = w->A;
    int r, bad = 0, T = ncf__threads();
    (void)big, (void)T; /* (without OpenMP) */
    NCF__OMP(parallel num_threads(ncf__team_of(big, T)))
    {
        int t = 0;
#ifdef _OPENMP
        t = omp_get_thread_num();
#endif
        NCF__OMP(for schedule(dynamic, 16) reduction(| : bad))
        for (r = r0; r < r1; r++) {
            float *x = X + (size_t)r * K;
            double *b = w->buf + (size_t)t * 4 * K;
            bad |= ncf__als_row(x, A, Y, sd, r, K, w0, b);
            if (part) {
                int64_t j;
                int k;
                double l = 0;
                for (k = 0; k < K; k++) b[k] = x[k];
                ncf__als_gram_apply(A, K, b, b + K);
                for (j = sd->ptr[r]; j < sd->ptr[r + 1]; j++) {
                    double s = ncf__als_dot(Y + (size_t)sd->idx[j] * K, b, K), cj = sd->wt ? sd->wt[j] : 1.0;
                    l += cj * (1 - s) * (1 - s) - w0 * s * s; /* (x^T A x counts the cell at w0) */
                }
                w->part[r] = l + ncf__als_dot(x, b + K, K);
            }
        }
    }
    return bad;
}

/* Side sd's rows X [n][K] fitted with the other side's Y [ny][K] fixed, a block of rows at a
   time with a progress report after each but the epoch's last (its caller reports the end with
   the loss, unknown before: NaN until then). With loss, *loss gets this side's part of the
   objective after the fit: sum_r (sum_j c_j (1 - s_j)^2 - w0 s_j^2 + x_r^T A x_r), s_j = x_r .
   y_j (the cells without a positive weigh w0 s^2 each through A). */
static int ncf__als_half(float *X, const float *Y, int ny, const ncf__als_side *sd, int K, const ncf_config *c,
                         ncf__als_work *w, double *loss)
{
    int r, r1, bad = 0, big = (float)sd->n * K * K > 16 * NCF__PAR_WORK;
    ncf__als_gram(Y, ny, K, c->unobserved, c->mf_reg, w->A);
    for (r = 0; r < sd->n; r = r1) {
        r1 = w->progress && sd->n - r > NCF__ALS_REPORT_ROWS ? r + NCF__ALS_REPORT_ROWS : sd->n;
        bad |= ncf__als_rows(X, Y, sd, r, r1, K, c->unobserved, w, loss != NULL, big);
        w->done += r1 - r;
        if (w->progress && w->done < w->all)
            w->progress(w->ctx, (int64_t)((double)w->total * (double)w->done / (double)w->all), w->total, NAN);
    }
    if (loss)
        for (*loss = 0, r = 0; r < sd->n; r++) *loss += w->part[r];
    if (bad) return ncf__fail(NCF_ERR_DATA, "ALS made a factor infinite or NaN (mf_reg too small for the data?)");
    return NCF_OK;
}

static void ncf__als_free(ncf__als_work *w)
{
    NCF_FREE(w->A), NCF_FREE(w->buf), NCF_FREE(w->part), NCF_FREE(w->iptr), NCF_FREE(w->iidx), NCF_FREE(w->iwt);
}

/* An ALS epoch: the users' rows, then the items'; *mean_loss the objective over the positives.
   Progress, when given, hears of every block of rows but the last as a share of total. */
static int ncf__als_epoch(ncf_model *m, const ncf_dataset *ds, ncf_progress_fn progress, void *ctx, int64_t total,
                          double *mean_loss)
{
    ncf__als_side users, items;
    ncf__als_work w;
    int K = m->cfg.mf_dim, rc, u;
    double loss = 0, reg = 0;
    memset(&w, 0, sizeof w);
    w.progress = progress, w.ctx = ctx, w.all = (int64_t)ds->num_users + ds->num_items, w.total = total;
    w.A = NCF__NEW(double, (size_t)K *K), w.buf = NCF__NEW(double, (size_t)ncf__threads() * 4 * K);
    w.part = NCF__NEW(double, ds->num_users > ds->num_items ? ds->num_users : ds->num_items);
    if (!w.A || !w.buf || !w.part) rc = ncf__fail(NCF_ERR_NOMEM, "ALS: out of memory for an mf_dim %d system", K);
    else rc = ncf__als_transpose(ds, &w.iptr, &w.iidx, &w.iwt);
    if (rc != NCF_OK) {
        ncf__als_free(&w);
        return rc;
    }
    memset(m->user_bias, 0, sizeof(float) * (size_t)m->cfg.num_users);
    memset(m->item_bias, 0, sizeof(float) * (size_t)m->cfg.num_items);
    m->b_out[0] = 0;
    users.n = ds->num_users, users.ptr = ds->user_ptr, users.idx = ds->items, users.wt = ds->weight;
    items.n = ds->num_items, items.ptr = w.iptr, items.idx = w.iidx, items.wt = w.iwt;
    rc = ncf__als_half(m->gmf_user, m->gmf_item, ds->num_items, &users, K, &m->cfg, &w, NULL);
    if (rc == NCF_OK) rc = ncf__als_half(m->gmf_item, m->gmf_user, ds->num_users, &items, K, &m->cfg, &w, &loss);
    ncf__als_free(&w);
    for (u = 0; rc == NCF_OK && u < ds->num_users; u++) {
        const float *x = m->gmf_user + (size_t)u * K;
        int k;
        for (k = 0; k < K; k++) reg += (double)m->cfg.mf_reg * x[k] * x[k];
    }
    if (rc == NCF_OK && mean_loss) *mean_loss = ds->num_train ? (loss + reg) / (double)ds->num_train : 0;
    return rc;
}

#endif /* NCF_INFERENCE_ONLY */
