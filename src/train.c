#ifndef NCF_INFERENCE_ONLY /* the whole stage: a device only serves */
/* ---- >>training-step: loss, backward pass and gradient sums of a step ------------------------ */
/* A training step runs as three phases in one parallel region (four with dense Adam):
   1. rows: each tile of batch rows sampled, forward, loss terms and every gradient that
      stays within its row (down to the gathered embeddings);
   2. sums over the batch: the dense layers' weight and bias gradients, the batch grouped by
      user and by item, the loss;
   3. rows of the tables: each embedding row's gradient summed over its batch positions and
      the row updated (lazy Adam, SGD); the dense parameters updated;
   4. dense Adam only: every embedding row updated.
   ncf_train_epoch keeps one region for up to NCF__BLOCK steps. */

static double ncf__sqnorm(const float *v, size_t n)
{
    double a = 0;
    size_t i;
    for (i = 0; i < n; i++) a += (double)v[i] * v[i];
    return a;
}

/* Per-example loss of rows [r0, r1): cross-entropy plus the L2 terms of its embedding rows. */
static void ncf__loss_rows(ncf_model *m, const int32_t *users, const int32_t *items, const float *labels, int r0,
                           int r1)
{
    struct ncf__scratch *s = m->scratch;
    const ncf_config *c = &m->cfg;
    int b;
    for (b = r0; b < r1; b++) {
        double r = ncf__bce(s->batch.act.logit[b], labels[b]);
        if (s->F && c->mf_reg > 0)
            r += c->mf_reg *
                (ncf__sqnorm(m->gmf_user + (size_t)users[b] * s->F, s->F) +
                 ncf__sqnorm(m->gmf_item + (size_t)items[b] * s->F, s->F));
        if (m->user_bias && c->mf_reg > 0)
            r += c->mf_reg *
                ((double)m->user_bias[users[b]] * m->user_bias[users[b]] +
                 (double)m->item_bias[items[b]] * m->item_bias[items[b]]);
        if (s->H && c->mlp_reg[0] > 0)
            r += c->mlp_reg[0] *
                (ncf__sqnorm(m->mlp_user + (size_t)users[b] * s->H, s->H) +
                 ncf__sqnorm(m->mlp_item + (size_t)items[b] * s->H, s->H));
        s->batch.ex_loss[b] = r;
    }
}

/* sum plus the dense layers' L2 terms of the loss, added in layer order. */
static double ncf__plus_dense_l2(const ncf_model *m, double sum)
{
    int l;
    for (l = 1; l <= m->scratch->nd; l++)
        if (m->cfg.mlp_reg[l] > 0)
            sum += m->cfg.mlp_reg[l] * ncf__sqnorm(m->w[l], (size_t)m->cfg.layers[l - 1] * m->cfg.layers[l]);
    return sum;
}

/* The mean of the per-example losses, summed in order, plus the dense layers' L2 terms. */
static double ncf__loss_total(const ncf_model *m, int n)
{
    const struct ncf__scratch *s = m->scratch;
    double sum = 0;
    int b;
    for (b = 0; b < n; b++) sum += s->batch.ex_loss[b];
    return ncf__plus_dense_l2(m, sum / n);
}

/* A training batch: given, or sampled in phase 1 (smp set) from examples start.. of epoch. */
typedef struct {
    int32_t *users, *items;
    float *labels;
    int n;
    const ncf_sampler *smp;
    int epoch;
    int64_t start;
} ncf__batch;

static void ncf__sample_rows(const ncf__batch *bt, int r0, int r1)
{
    ncf__fill_rows(bt->smp, bt->epoch, bt->start + r0, r1 - r0, bt->users + r0, bt->items + r0, bt->labels + r0, NULL);
}

/* Prefetches of row r of every table on one side (0 users, 1 items): its moments, and with
   with_params its parameters too. A macro: GCC takes a function of prefetches alone for one
   without effects and drops its calls. */
#define NCF__PREFETCH_ROW(m, side, r, with_params) \
    do { \
        const struct ncf__scratch *s_ = (m)->scratch; \
        int t_, d_; \
        for (t_ = 0; t_ < s_->tables.n; t_++) { \
            int D_ = s_->tables.tab[t_].D; \
            size_t o_ = \
                (size_t)(((side) ? s_->tables.tab[t_].item : s_->tables.tab[t_].user) - (m)->params) + (size_t)(r)*D_; \
            for (d_ = 0; d_ < D_; d_ += 16) { \
                if (with_params) NCF__PREFETCH((m)->params + o_ + d_); \
                if ((m)->adam_m) NCF__PREFETCH((m)->adam_m + o_ + d_), NCF__PREFETCH((m)->adam_v + o_ + d_); \
            } \
        } \
    } while (0)

#define NCF__EARLY_BYTES 262144 /* a batch's moments prefetched early fit in this (half an L2) */

/* Whether the backward pass prefetches the moments of the batch's rows: with lazy Adam, where
   they all fit in a core's L2 until the update reads them (the paper config's 160 KB, not the
   MLPerf config's tens of MB). */
static int ncf__moments_early(const ncf_model *m, int n)
{
    const struct ncf__scratch *s = m->scratch;
    size_t row = 0;
    int t;
    if (!m->adam_m || m->cfg.optimizer != NCF_OPT_ADAM || m->cfg.adam != NCF_ADAM_LAZY) return 0;
    for (t = 0; t < s->tables.n; t++) row += (size_t)s->tables.tab[t].D;
    return (size_t)n * row * 4 * sizeof(float) <= NCF__EARLY_BYTES; /* m and v, a user's and an item's */
}

static float *ncf__grad_of(ncf_model *m, const float *param) { return m->grads + (param - m->params); }

/* The gradients that stay within rows [r0, r1): dz = d(loss)/d(logit), the GMF rows' (dgu,
   dgi), and dy[l] = d(loss)/d(output of layer l) through its ReLU, down to dy[0] for the
   gathered [user; item] MLP rows. The weight gradients are sums over rows: phase 2. */
static void ncf__backward_rows(ncf_model *m, const ncf__batch *bt, int r0, int r1)
{
    struct ncf__scratch *s = m->scratch;
    const int *L = m->cfg.layers;
    const int32_t *users = bt->users, *items = bt->items;
    int F = s->F, b, k, l, early = ncf__moments_early(m, bt->n);
    float inv_n = 1.0f / (float)bt->n;
    for (b = r0; b < r1; b++) {
        float y = bt->labels[b], p = ncf__sigmoid(s->batch.act.logit[b]);
        float dz = (y > 0 ? y * (p - 1.0f) : p) * inv_n; /* (y 1: p - 1, as unweighted) */
        s->batch.dz[b] = dz;
        if (early) {
            NCF__PREFETCH_ROW(m, 0, users[b], 0);
            NCF__PREFETCH_ROW(m, 1, items[b], 0);
        }
        if (F) { /* d/d(user row) = dgmf * item row, and vice versa */
            const float *gu = m->gmf_user + (size_t)users[b] * F, *gi = m->gmf_item + (size_t)items[b] * F;
            for (k = 0; k < F; k++) {
                float dg = dz * s->tables.gmf_weights[k];
                s->batch.dgu[(size_t)b * F + k] = dg * gi[k];
                s->batch.dgi[(size_t)b * F + k] = dg * gu[k];
            }
        }
        if (s->top) {
            const float *h = s->batch.act.x[s->nd] + (size_t)b * s->top;
            float *g = s->batch.dy[s->nd] + (size_t)b * s->top;
            for (k = 0; k < s->top; k++) g[k] = h[k] > 0.0f ? dz * m->w_out[F + k] : 0.0f;
        }
    }
    for (l = s->nd; l >= 1; l--) { /* dy[l-1] = dy[l] W^T, through layer l-1's ReLU */
        int in = L[l - 1], out = L[l];
        ncf__gemm_rows(s->batch.dy[l - 1], in, s->batch.dy[l], out, 1, s->batch.wt[l], in, NULL, r0, r1, in, out, 0);
        if (l > 1)
            for (b = r0; b < r1; b++) {
                const float *h = s->batch.act.x[l - 1] + (size_t)b * in;
                float *g = s->batch.dy[l - 1] + (size_t)b * in;
                for (k = 0; k < in; k++) g[k] = h[k] > 0.0f ? g[k] : 0.0f;
            }
    }
}

#define NCF__SPAN_BYTES 262144 /* phase 1's rows in flight keep their activations within this */

/* The rows phase 1 takes forward and then backward at a time: whole tiles whose activations
   and gradients come to about NCF__SPAN_BYTES (one tile at least), so the backward pass still
   finds them in a core's L2, while every layer's kernel, read once a span forward and once
   back, serves enough rows to pay for the trip from a farther cache. (The MLPerf config's
   kernels take 832 KB; at 64 KB a span was one tile of 6 rows (AVX2), and 36 rows trained
   1.14-1.16x as fast.) A claim early in a phase can span hundreds of rows. */
static int ncf__span_rows(const ncf_model *m)
{
    const struct ncf__scratch *s = m->scratch;
    int l, floats = 3 * s->F + 4, tiles; /* a row's GMF product and its two gradients, and scalars */
    for (l = 0; l <= s->nd && s->H; l++) floats += 2 * m->cfg.layers[l]; /* x[l] and dy[l] */
    tiles = NCF__SPAN_BYTES / (4 * floats * NCF__MR);
    return (tiles < 1 ? 1 : tiles) * NCF__MR;
}

/* Phase 1 for rows [a, b) of the batch (see above); the backward part when `backward`. */
static void ncf__rows_range(ncf__ctx *x, ncf_model *m, const ncf__batch *bt, int a, int b, int backward)
{
    int64_t lo, hi;
    int64_t grain = ncf__tile_grain(ncf__row_macs(m) * (backward ? 2 : 1));
    int span = ncf__span_rows(m);
    while (ncf__claim(x, NCF__TILES(b - a), grain, &lo, &hi)) {
        int r0 = a + (int)lo * NCF__MR, r1 = a + hi * NCF__MR < b ? a + (int)hi * NCF__MR : b, t0, t1;
        if (bt->smp) ncf__sample_rows(bt, r0, r1);
        for (t0 = r0; t0 < r1; t0 = t1) {
            t1 = t0 + span < r1 ? t0 + span : r1;
            ncf__forward_rows(m, &m->scratch->batch.act, bt->users, bt->items, t0, t1);
            ncf__loss_rows(m, bt->users, bt->items, bt->labels, t0, t1);
            if (backward) ncf__backward_rows(m, bt, t0, t1);
        }
    }
}

static void ncf__rows_phase(ncf__ctx *x, ncf_model *m, const ncf__batch *bt, int backward)
{
    ncf__rows_range(x, m, bt, 0, bt->n, backward);
}

/* Groups batch positions by row: key = row << 32 | position, sorted; start[q] is
   where the q-th distinct row begins. Returns the number of distinct rows. An LSD
   radix sort on the row, 8 bits a pass: stable, so positions stay ascending. */
static int ncf__sort_batch_by_row(uint64_t *key, uint64_t *tmp, int *start, const int32_t *rows, int n)
{
    int b, q = 0;
    for (b = 0; b < n; b++) key[b] = (uint64_t)(uint32_t)rows[b] << 32 | (uint32_t)b;
    ncf__radix_sort(key, tmp, (size_t)n, 32);
    for (b = 0; b < n; b++)
        if (b == 0 || (key[b] >> 32) != (key[b - 1] >> 32)) start[q++] = b;
    start[q] = n;
    return q;
}

#define NCF__COLS 64 /* columns a block: a row adds to several vectors of sums at once */

/* acc[j] += sum over rows b (ascending) of w[b] * X[b][j] (w NULL: 1) for the block of
   columns j0 <= j < min(j0 + NCF__COLS, cols). */
static void ncf__col_block(float *acc, const float *w, const float *X, int ld, int n, int j0, int cols)
{
    int nc = cols - j0 < NCF__COLS ? cols - j0 : NCF__COLS, b, j;
    float g[NCF__COLS] = {0};
    for (b = 0; b < n; b++) {
        const float *xb = X + (size_t)b * ld + j0;
        float wb = w ? w[b] : 1.0f;
        for (j = 0; j < nc; j++) g[j] += wb * xb[j];
    }
    for (j = 0; j < nc; j++) acc[j0 + j] += g[j];
}

#define NCF__BLOCKS(cols) NCF__CEIL_DIV((int64_t)(cols), NCF__COLS)

/* Row tiles of a layer's dW per unit: a unit reads all of the batch's dy once, so the fewer
   units the less it is read again, while four a layer keep two threads busy. The last unit
   also takes the rows that do not fill a unit, so that they end a range of whole tiles
   (ncf__gemm_block). */
static int ncf__dw_tiles(int in)
{
    int t = (int)(NCF__TILES(in) / 4);
    return t < 1 ? 1 : t > 8 ? 8 : t;
}
static int ncf__dw_units(int in)
{
    int u = in / (ncf__dw_tiles(in) * NCF__MR);
    return u > 1 ? u : 1;
}

/* Dense-gradient unit u of phase 2, summing batch rows [k0, k1) in order into g (the dense
   parameters' gradients, laid out as the parameters from emb_params on): each dense layer's
   dW, some row tiles a unit (dW += x^T dy, plus its L2 term when l2), and its bias column
   blocks; then the output layer's column blocks and its bias. */
static void ncf__layer_grads_of(ncf_model *m, int k0, int k1, int64_t u, float *g, int l2)
{
    struct ncf__scratch *s = m->scratch;
    const int *L = m->cfg.layers;
    int n = k1 - k0, l, F = s->F;
#define NCF__G(param) (g + ((param)-m->params - s->emb_params))
    for (l = 1; l <= s->nd; l++) {
        int in = L[l - 1], out = L[l];
        float *gw = NCF__G(m->w[l]);
        if (u < ncf__dw_units(in)) {
            int rows = ncf__dw_tiles(in) * NCF__MR, m0 = (int)u * rows, m1 = u + 1 < ncf__dw_units(in) ? m0 + rows : in;
            ncf__gemm_rows(gw, out, s->batch.act.x[l - 1] + (size_t)k0 * in, 1, in, s->batch.dy[l] + (size_t)k0 * out,
                           out, NULL, m0, m1, out, n, NCF__ACC);
            if (l2 && m->cfg.mlp_reg[l] > 0) {
                float two_r = 2.0f * m->cfg.mlp_reg[l];
                size_t k;
                for (k = (size_t)m0 * out; k < (size_t)m1 * out; k++) gw[k] += two_r * m->w[l][k];
            }
            return;
        }
        u -= ncf__dw_units(in);
        if (u < NCF__BLOCKS(out)) {
            ncf__col_block(NCF__G(m->b[l]), NULL, s->batch.dy[l] + (size_t)k0 * out, out, n, (int)u * NCF__COLS, out);
            return;
        }
        u -= NCF__BLOCKS(out);
    }
    if (m->w_out) {
        if (u < NCF__BLOCKS(F)) {
            ncf__col_block(NCF__G(m->w_out), s->batch.dz + k0, s->batch.act.gmf + (size_t)k0 * F, F, n,
                           (int)u * NCF__COLS, F);
            return;
        }
        u -= NCF__BLOCKS(F);
        if (u < NCF__BLOCKS(s->top)) {
            ncf__col_block(NCF__G(m->w_out) + F, s->batch.dz + k0, s->batch.act.x[s->nd] + (size_t)k0 * s->top, s->top,
                           n, (int)u * NCF__COLS, s->top);
            return;
        }
    }
    ncf__col_block(NCF__G(m->b_out), NULL, s->batch.dz + k0, 1, n, 0, 1);
#undef NCF__G
}

/* The units of ncf__layer_grads_of. */
static int64_t ncf__layer_grads_count(const ncf_model *m)
{
    const struct ncf__scratch *s = m->scratch;
    int64_t units = 1;
    int l;
    for (l = 1; l <= s->nd; l++) units += ncf__dw_units(m->cfg.layers[l - 1]) + NCF__BLOCKS(m->cfg.layers[l]);
    if (m->w_out) units += NCF__BLOCKS(s->F) + NCF__BLOCKS(s->top);
    return units;
}

/* Phase 2, unit u: 0 groups the batch by user, 1 by item, 2 sums the loss into *loss; then the
   dense gradients over the whole batch. Every sum runs over the batch in order. */
static void ncf__sums_unit(ncf_model *m, const ncf__batch *bt, int64_t u, double *loss)
{
    struct ncf__scratch *s = m->scratch;
    int n = bt->n;
    if (u == 0) {
        s->batch.nuser = ncf__sort_batch_by_row(s->batch.ukey, s->batch.sortbuf, s->batch.ustart, bt->users, n);
        return;
    }
    if (u == 1) {
        s->batch.nitem = ncf__sort_batch_by_row(s->batch.ikey, s->batch.sortbuf + n, s->batch.istart, bt->items, n);
        return;
    }
    if (u == 2) {
        *loss = ncf__loss_total(m, n);
        return;
    }
    ncf__layer_grads_of(m, 0, n, u - 3, m->grads + s->emb_params, 1);
}

static void ncf__sums_phase(ncf__ctx *x, ncf_model *m, const ncf__batch *bt, double *loss)
{
    int64_t units = 3 + ncf__layer_grads_count(m), lo, hi, u;
    while (ncf__claim(x, units, 1, &lo, &hi))
        for (u = lo; u < hi; u++) ncf__sums_unit(m, bt, u, loss);
}

/* ---- >>optimizer: Adam (lazy, dense) and SGD updates ----------------------------------------- */

typedef struct {
    float b1, b2, lr_t, eps;
} ncf__adam_k;

/* The constants of optimizer step t (1, 2, ...). */
static ncf__adam_k ncf__adam_consts(const ncf_model *m, int64_t t)
{
    const ncf_config *c = &m->cfg;
    ncf__adam_k k;
    k.b1 = c->beta1, k.b2 = c->beta2, k.eps = c->epsilon;
    k.lr_t = c->optimizer == NCF_OPT_SGD
        ? c->lr
        : (float)(c->lr * sqrt(1.0 - pow(c->beta2, (double)t)) / (1.0 - pow(c->beta1, (double)t)));
    return k;
}

/* The updates return nonzero when a parameter they wrote is no longer finite: the check
   rides along in loops that are bound by memory, so it costs next to nothing. They clear
   the gradients they used. */

/* TF's Adam: the bias corrections folded into the step size (epsilon-hat form), on n
   parameters p with their moments mm, vv and gradient g. */
static int ncf__adam_step(float *NCF__RESTRICT p, float *NCF__RESTRICT mm, float *NCF__RESTRICT vv,
                          float *NCF__RESTRICT g, size_t n, const ncf__adam_k *k)
{
    size_t i;
    int bad = 0;
    for (i = 0; i < n; i++) {
        mm[i] = k->b1 * mm[i] + (1.0f - k->b1) * g[i];
        vv[i] = k->b2 * vv[i] + (1.0f - k->b2) * g[i] * g[i];
        p[i] -= k->lr_t * mm[i] / (sqrtf(vv[i]) + k->eps);
        g[i] = 0.0f;
        bad |= NCF__NONFINITE(p[i]);
    }
    return bad;
}

/* Plain SGD, the same way. */
static int ncf__sgd_step(float *NCF__RESTRICT p, float *NCF__RESTRICT g, size_t n, const ncf__adam_k *k)
{
    size_t i;
    int bad = 0;
    for (i = 0; i < n; i++) {
        p[i] -= k->lr_t * g[i];
        g[i] = 0.0f;
        bad |= NCF__NONFINITE(p[i]);
    }
    return bad;
}

/* The model's params [off, off + n) stepped by gradient g (m->grads + off, or a row summed
   elsewhere). */
static int ncf__adam_update(ncf_model *m, size_t off, size_t n, float *NCF__RESTRICT g, const ncf__adam_k *k)
{
    return ncf__adam_step(m->params + off, m->adam_m + off, m->adam_v + off, g, n, k);
}

static int ncf__sgd_update(ncf_model *m, size_t off, size_t n, float *NCF__RESTRICT g, const ncf__adam_k *k)
{
    return ncf__sgd_step(m->params + off, g, n, k);
}

/* One optimizer on [off, off + n) with gradient g, chosen outside the loops that call it so
   each inlines. */
static int ncf__update_with(ncf_model *m, size_t off, size_t n, float *g, const ncf__adam_k *k)
{
    return m->cfg.optimizer == NCF_OPT_SGD ? ncf__sgd_update(m, off, n, g, k) : ncf__adam_update(m, off, n, g, k);
}

static int ncf__update_range(ncf_model *m, size_t off, size_t n, const ncf__adam_k *k)
{
    return ncf__update_with(m, off, n, m->grads + off, k);
}

/* Every embedding row has moments that decay each step (TF's dense Adam). */
static int ncf__dense_adam(const ncf_model *m)
{
    return m->cfg.optimizer != NCF_OPT_SGD && m->cfg.adam == NCF_ADAM_DENSE;
}

#define NCF__CHUNK 4096 /* parameters per unit of a flat update */

/* The transposed kernels' copies of parameters [a, e): the backward pass reads W^T. */
static void ncf__transpose_part(ncf_model *m, size_t a, size_t e)
{
    struct ncf__scratch *s = m->scratch;
    int l;
    for (l = 1; l <= s->nd; l++) {
        size_t off = (size_t)(m->w[l] - m->params), in = m->cfg.layers[l - 1], out = m->cfg.layers[l], i, end, r, c;
        if (e <= off) break; /* the tensors lie in order */
        i = a > off ? a - off : 0, end = e - off < in * out ? e - off : in * out;
        for (r = i / out, c = i % out; i < end; i++) { /* w[l][i] is row r, column c */
            s->batch.wt[l][c * in + r] = m->w[l][i];
            if (++c == out) c = 0, r++;
        }
    }
}

/* Dense-parameter unit u: updates [emb_params + u*CHUNK, ..) and refreshes their transposes. */
static int ncf__layer_update(ncf_model *m, int64_t u, const ncf__adam_k *k)
{
    size_t a = m->scratch->emb_params + (size_t)u * NCF__CHUNK, e = a + NCF__CHUNK;
    int bad;
    if (e > m->num_params) e = m->num_params;
    bad = ncf__update_range(m, a, e - a, k);
    ncf__transpose_part(m, a, e);
    return bad;
}

static int64_t ncf__layer_updates_count(const ncf_model *m)
{
    return (int64_t)NCF__CEIL_DIV(m->num_params - m->scratch->emb_params, NCF__CHUNK);
}

static int64_t ncf__table_updates_count(const ncf_model *m)
{
    return NCF__CEIL_DIV((int64_t)m->scratch->emb_params, NCF__CHUNK);
}

/* Embedding unit u of dense Adam: every row, in flat chunks. */
static int ncf__table_update(ncf_model *m, int64_t u, const ncf__adam_k *k)
{
    size_t a = (size_t)u * NCF__CHUNK, e = a + NCF__CHUNK;
    if (e > m->scratch->emb_params) e = m->scratch->emb_params;
    return ncf__update_range(m, a, e - a, k);
}

/* What the rows of table t on one side (0 users, 1 items) receive from each batch position,
   and the factor of their L2 term. */
static const float *ncf__row_source(const ncf_model *m, int t, int side, int *ld, float *coef, int n)
{
    const struct ncf__scratch *s = m->scratch;
    float inv_n = 1.0f / (float)n;
    const float *tab = s->tables.tab[t].user;
    if (tab == m->mlp_user) {
        *ld = 2 * s->H, *coef = 2.0f * m->cfg.mlp_reg[0] * inv_n;
        return s->batch.dy[0] + (side ? s->H : 0);
    }
    *coef = 2.0f * m->cfg.mf_reg * inv_n;
    if (tab == m->user_bias) return *ld = 1, s->batch.dz;
    *ld = s->F;
    return side ? s->batch.dgi : s->batch.dgu;
}

/* The lanes of the row steps that wrote a non-finite parameter, folded once for many rows. */
typedef struct {
    int any;
#if NCF__VEC
    ncf__vi lanes;
#if NCF__VW == 16
    ncf__vhi half;
#endif
#endif
} ncf__row_check;

/* One row's lanes [*d, ..) in steps of W, W floats a vector of type V (lane masks VI): each
   lane's gradient summed over the row's batch positions b0..b1 of src (key's low halves, rows
   ld apart) in order, plus c times the parameter, then stepped, all in registers. The same
   operations in the same order as the sum into a buffer and ncf__adam_step (ncf__sgd_step
   with sgd), so the same bits; without the buffer's store and reload. The lanes that wrote a
   non-finite parameter are set in bad->LANES, which the caller folds once for many rows. */
#define NCF__ROW_STEP(name, V, VI, W, SQRT, LANES) \
    static void name(float *NCF__RESTRICT p, float *NCF__RESTRICT mm, float *NCF__RESTRICT vv, int *d, int D, \
                     const float *src, int ld, const uint64_t *key, int b0, int b1, float c, const ncf__adam_k *k, \
                     int sgd, ncf__row_check *bad) \
    { \
        V z = {0}, cv, lr, b1v, b1c, b2v, b2c, eps; \
        int b; \
        NCF__SPLAT(V, W, cv, c); \
        NCF__SPLAT(V, W, lr, k->lr_t); \
        NCF__SPLAT(V, W, b1v, k->b1); \
        NCF__SPLAT(V, W, b1c, 1.0f - k->b1); \
        NCF__SPLAT(V, W, b2v, k->b2); \
        NCF__SPLAT(V, W, b2c, 1.0f - k->b2); \
        NCF__SPLAT(V, W, eps, k->eps); \
        for (; *d + (W) <= D; *d += (W)) { \
            V g = z, x, pv, mv, sv; \
            for (b = b0; b < b1; b++) { \
                memcpy(&x, src + (size_t)(key[b] & 0xffffffffu) * ld + *d, sizeof x); \
                g += x; \
            } \
            memcpy(&pv, p + *d, sizeof pv); \
            if (c != 0.0f) g += cv * pv; \
            if (sgd) pv -= lr * g; \
            else { \
                memcpy(&mv, mm + *d, sizeof mv); \
                memcpy(&sv, vv + *d, sizeof sv); \
                mv = b1v * mv + b1c * g; \
                sv = b2v * sv + b2c * g * g; \
                memcpy(mm + *d, &mv, sizeof mv); \
                memcpy(vv + *d, &sv, sizeof sv); \
                SQRT(sv); \
                pv -= lr * mv / (sv + eps); \
            } \
            memcpy(p + *d, &pv, sizeof pv); \
            bad->LANES |= (VI)(pv - pv != z); \
        } \
    }
#if NCF__VEC
NCF__ROW_STEP(ncf__row_lanes, ncf__vf, ncf__vi, NCF__VW, NCF__VSQRT, lanes)
#if NCF__VW == 16
NCF__ROW_STEP(ncf__row_half_lanes, ncf__vh, ncf__vhi, 8, NCF__HSQRT, half) /* rows of 8 (the paper's GMF) */
#endif
#endif

static int ncf__row_check_fold(const ncf__row_check *r)
{
    int any = r->any, l;
#if NCF__VEC
    for (l = 0; l < NCF__VW; l++) any |= r->lanes[l];
#if NCF__VW == 16
    for (l = 0; l < 8; l++) any |= r->half[l];
#endif
#endif
    (void)l;
    return any != 0;
}

/* A row's whole step from the batch (see NCF__ROW_STEP): vectors, then the lanes left one at
   a time through the plain step. */
static void ncf__row_step(ncf_model *m, float *p, int D, const float *src, int ld, const uint64_t *key, int b0, int b1,
                          float c, const ncf__adam_k *k, ncf__row_check *bad)
{
    size_t off = (size_t)(p - m->params);
    int d = 0, b, sgd = m->cfg.optimizer == NCF_OPT_SGD;
    float *mm = sgd ? NULL : m->adam_m + off, *vv = sgd ? NULL : m->adam_v + off; /* (SGD has none) */
#if NCF__VEC
    ncf__row_lanes(p, mm, vv, &d, D, src, ld, key, b0, b1, c, k, sgd, bad);
#if NCF__VW == 16
    ncf__row_half_lanes(p, mm, vv, &d, D, src, ld, key, b0, b1, c, k, sgd, bad);
#endif
#endif
    for (; d < D; d++) {
        float g = 0.0f;
        for (b = b0; b < b1; b++) g += src[(size_t)(key[b] & 0xffffffffu) * ld + d];
        if (c != 0.0f) g += c * p[d];
        bad->any |= sgd ? ncf__sgd_step(p + d, &g, 1, k) : ncf__adam_step(p + d, mm + d, vv + d, &g, 1, k);
    }
}

/* Phase 3, distinct rows [q0, q1) of nq on one side of the batch: each row's gradient in
   every table, summed over its batch positions in order, plus its L2 term. With k the row is
   then stepped at once (lazy Adam and SGD touch only the batch's rows; ncf__row_step), its
   gradient never stored in the cold gradient table, and the rows a few ahead prefetched (they
   are scattered over tables far larger than the caches); without, the gradient is summed into
   the table for ncf_update. Returns nonzero when a step wrote a non-finite parameter. */
static int ncf__update_batch_rows(ncf_model *m, int side, int n, int q0, int q1, int nq, const ncf__adam_k *k)
{
    struct ncf__scratch *s = m->scratch;
    const uint64_t *key = side ? s->batch.ikey : s->batch.ukey;
    const int *start = side ? s->batch.istart : s->batch.ustart;
    float coef[2];
    const float *src[2];
    int q, t, ld[2];
    ncf__row_check chk;
    memset(&chk, 0, sizeof chk);
    for (t = 0; t < s->tables.n; t++) src[t] = ncf__row_source(m, t, side, &ld[t], &coef[t], n);
    for (q = q0; k && q < q0 + NCF__AHEAD && q < nq; q++) NCF__PREFETCH_ROW(m, side, key[start[q]] >> 32, 1);
    for (q = q0; q < q1; q++) {
        size_t r = (size_t)(key[start[q]] >> 32);
        if (k && q + NCF__AHEAD < nq) NCF__PREFETCH_ROW(m, side, key[start[q + NCF__AHEAD]] >> 32, 1);
        for (t = 0; t < s->tables.n; t++) {
            int D = s->tables.tab[t].D, b, d;
            float *p = (side ? s->tables.tab[t].item : s->tables.tab[t].user) + r * D, *g;
            float c = coef[t] * (float)(start[q + 1] - start[q]);
            if (k) {
                ncf__row_step(m, p, D, src[t], ld[t], key, start[q], start[q + 1], c, k, &chk);
                continue;
            }
            g = ncf__grad_of(m, p);
            for (b = start[q]; b < start[q + 1]; b++) {
                const float *xb = src[t] + (size_t)(key[b] & 0xffffffffu) * ld[t];
                for (d = 0; d < D; d++) g[d] += xb[d];
            }
            if (c != 0.0f)
                for (d = 0; d < D; d++) g[d] += c * p[d];
        }
    }
    return ncf__row_check_fold(&chk);
}

#define NCF__ROWS_PER_UNIT 32 /* distinct rows per unit */

/* Appends the batch's distinct rows to the touched lists (each row once until the update
   that clears it), for ncf_update after ncf_forward_backward. */
static void ncf__list_touched(ncf_model *m)
{
    struct ncf__scratch *s = m->scratch;
    int q;
    for (q = 0; q < s->batch.nuser; q++) {
        int32_t r = (int32_t)(s->batch.ukey[s->batch.ustart[q]] >> 32);
        if (!s->touched.flag[r]) s->touched.flag[r] = 1, s->touched.user[s->touched.nuser++] = r;
    }
    for (q = 0; q < s->batch.nitem; q++) {
        int32_t r = (int32_t)(s->batch.ikey[s->batch.istart[q]] >> 32);
        uint8_t *t = &s->touched.flag[m->cfg.num_users + r];
        if (!*t) *t = 1, s->touched.item[s->touched.nitem++] = r;
    }
}

/* Phase 3. With k (a whole step): the rows are updated as they are summed, and the dense
   parameters too; without (ncf_forward_backward): the rows are listed for ncf_update. */
static void ncf__rows_of_tables_phase(ncf__ctx *x, ncf_model *m, int n, const ncf__adam_k *k, int *bad)
{
    struct ncf__scratch *s = m->scratch;
    /* Counted from n, not from the distinct rows: a thread that arrives late must count the
       phase's units as the others did, and by then a thread ahead may have grouped the next
       batch. The distinct rows are read only by units, which cannot outlive the phase. */
    int64_t gu = NCF__CEIL_DIV(n, NCF__ROWS_PER_UNIT), gi = gu;
    int64_t units = gu + gi + (k ? ncf__layer_updates_count(m) : 1), lo, hi, u;
    const ncf__adam_k *rows_k = k && !ncf__dense_adam(m) ? k : NULL;
    while (ncf__claim(x, units, 1, &lo, &hi))
        for (u = lo; u < hi; u++) {
            int side = u >= gu, q0 = (int)(side ? u - gu : u) * NCF__ROWS_PER_UNIT,
                nq = side ? s->batch.nitem : s->batch.nuser, b = 0;
            if (u < gu + gi) {
                if (q0 < nq)
                    b = ncf__update_batch_rows(m, side, n, q0,
                                               q0 + NCF__ROWS_PER_UNIT < nq ? q0 + NCF__ROWS_PER_UNIT : nq, nq, rows_k);
            } else if (k) b = ncf__layer_update(m, u - gu - gi, k);
            else ncf__list_touched(m);
            if (b && bad) ncf__flag(bad, 1); /* (b is 0 when bad is NULL: no update ran) */
        }
}

/* Phase 4 of dense Adam: every embedding row. */
static void ncf__emb_phase(ncf__ctx *x, ncf_model *m, const ncf__adam_k *k, int *bad)
{
    int64_t lo, hi, u;
    while (ncf__claim(x, ncf__table_updates_count(m), 1, &lo, &hi))
        for (u = lo; u < hi; u++)
            if (ncf__table_update(m, u, k)) ncf__flag(bad, 1);
}

/* The transposed kernels, made afresh where a call begins: the caller may have changed any
   parameter since the last. The dense-parameter updates keep them current after that. */
static void ncf__transpose_phase(ncf__ctx *x, ncf_model *m)
{
    int64_t lo, hi, u;
    while (ncf__claim(x, ncf__layer_updates_count(m), 1, &lo, &hi))
        for (u = lo; u < hi; u++) {
            size_t a = m->scratch->emb_params + (size_t)u * NCF__CHUNK;
            ncf__transpose_part(m, a, a + NCF__CHUNK < m->num_params ? a + NCF__CHUNK : m->num_params);
        }
}

/* A flag's value once the phase that sets it is done. */
static int ncf__flag_value(const int *f)
{
#if NCF__TEAMS
    return __atomic_load_n(f, __ATOMIC_RELAXED);
#else
    return *f;
#endif
}

/* One whole step in a region: returns 0 and updates nothing when the loss is not finite;
   else updates (step t) and returns 1, setting *bad when a parameter became non-finite. */
static int ncf__step_phases(ncf__ctx *x, ncf_model *m, const ncf__batch *bt, int64_t t, double *loss, int *bad)
{
    ncf__adam_k k = ncf__adam_consts(m, t);
    ncf__rows_phase(x, m, bt, 1);
    ncf__sums_phase(x, m, bt, loss);
    if (!(*loss - *loss == 0.0)) return 0;
    ncf__rows_of_tables_phase(x, m, bt->n, &k, bad);
    if (ncf__dense_adam(m)) ncf__emb_phase(x, m, &k, bad);
    return 1;
}

static int ncf__reserve(ncf_model *m, int n); /* the batch buffers for n rows */

/* A batch the caller gave: checked, the buffers made ready for it. */
static int ncf__given_batch(ncf_model *m, ncf__batch *bt, const int32_t *users, const int32_t *items,
                            const float *labels, int n)
{
    int rc;
    if ((rc = ncf__writable(m, "training")) != NCF_OK) return rc;
    if ((rc = ncf__check_batch(m, users, items, labels, 1, n)) != NCF_OK) return rc;
    if ((rc = ncf__reserve(m, n)) != NCF_OK) return rc;
    memset(bt, 0, sizeof *bt);
    bt->users = (int32_t *)users, bt->items = (int32_t *)items, bt->labels = (float *)labels, bt->n = n;
    return NCF_OK;
}

NCFDEF int ncf_loss(ncf_model *m, const int32_t *users, const int32_t *items, const float *labels, int n, double *loss)
{
    ncf__team team = NCF__TEAM_INIT;
    ncf__batch bt;
    int rc;
    if (!m || !loss) return ncf__fail(NCF_ERR_ARG, "ncf_loss: NULL model or loss");
    if ((rc = ncf__given_batch(m, &bt, users, items, labels, n)) != NCF_OK) return rc;
    NCF__PARALLEL(ncf__rows_parallel(m, n))
    {
        ncf__ctx x = ncf__join(&team);
        ncf__rows_phase(&x, m, &bt, 0);
    }
    *loss = ncf__loss_total(m, n);
    return NCF_OK;
}

/* Whether rows have gradients waiting for ncf_update. */
static int ncf__pending(const ncf_model *m) { return m->scratch->touched.nuser || m->scratch->touched.nitem; }

NCFDEF int ncf_forward_backward(ncf_model *m, const int32_t *users, const int32_t *items, const float *labels, int n,
                                double *loss)
{
    ncf__team team = NCF__TEAM_INIT;
    ncf__batch bt;
    double l = 0;
    int rc;
    if (!m) return ncf__fail(NCF_ERR_ARG, "ncf_forward_backward: NULL model");
    if (m->cfg.optimizer == NCF_OPT_ALS)
        return ncf__fail(NCF_ERR_ARG, "ncf_forward_backward: an ALS model has no gradient step");
    if ((rc = ncf__given_batch(m, &bt, users, items, labels, n)) != NCF_OK) return rc;
    NCF__PARALLEL(ncf__rows_parallel(m, n))
    {
        ncf__ctx x = ncf__join(&team);
        ncf__transpose_phase(&x, m);
        ncf__rows_phase(&x, m, &bt, 1);
        ncf__sums_phase(&x, m, &bt, &l);
        ncf__rows_of_tables_phase(&x, m, n, NULL, NULL);
    }
    if (loss) *loss = l;
    return NCF_OK;
}

static NCF__MAYBE_UNUSED void ncf__zero_grad(ncf_model *m)
{
    struct ncf__scratch *s = m ? m->scratch : NULL;
    ptrdiff_t i;
    int t;
    if (!m || !m->grads) return; /* a model read in place has none */
    memset(m->grads + s->emb_params, 0, sizeof(float) * (m->num_params - s->emb_params));
    for (t = 0; t < s->tables.n; t++) {
        int D = s->tables.tab[t].D;
        float *gu = ncf__grad_of(m, s->tables.tab[t].user), *gi = ncf__grad_of(m, s->tables.tab[t].item);
        for (i = 0; i < s->touched.nuser; i++) memset(gu + (size_t)s->touched.user[i] * D, 0, sizeof(float) * D);
        for (i = 0; i < s->touched.nitem; i++) memset(gi + (size_t)s->touched.item[i] * D, 0, sizeof(float) * D);
    }
    for (i = 0; i < s->touched.nuser; i++) s->touched.flag[s->touched.user[i]] = 0;
    for (i = 0; i < s->touched.nitem; i++) s->touched.flag[m->cfg.num_users + s->touched.item[i]] = 0;
    s->touched.nuser = s->touched.nitem = 0;
}

/* ncf_update's units: the dense parameters, then (dense Adam) every embedding row, then each
   side's listed rows in g groups of NCF__ROWS_PER_UNIT (a group past the list does nothing). */
static int64_t ncf__update_units(const ncf_model *m, int64_t g)
{
    return ncf__layer_updates_count(m) + (ncf__dense_adam(m) ? ncf__table_updates_count(m) : 0) + 2 * g;
}

/* ncf_update unit u of those (ncf__update_units with g groups a side): the listed rows' flags
   cleared, the rows updated unless dense Adam did. */
static int ncf__update_unit(ncf_model *m, int64_t u, int64_t g, const ncf__adam_k *k)
{
    struct ncf__scratch *s = m->scratch;
    int64_t nd = ncf__layer_updates_count(m), ne = ncf__dense_adam(m) ? ncf__table_updates_count(m) : 0;
    int side, i, i0, i1, t, bad = 0;
    const int32_t *list;
    if (u < nd) return ncf__layer_update(m, u, k);
    if ((u -= nd) < ne) return ncf__table_update(m, u, k);
    u -= ne;
    side = u >= g;
    i0 = (int)(side ? u - g : u) * NCF__ROWS_PER_UNIT;
    i1 = i0 + NCF__ROWS_PER_UNIT, list = side ? s->touched.item : s->touched.user;
    if (i1 > (side ? s->touched.nitem : s->touched.nuser)) i1 = side ? s->touched.nitem : s->touched.nuser;
    for (i = i0; i < i1; i++) {
        s->touched.flag[(side ? m->cfg.num_users : 0) + list[i]] = 0;
        for (t = 0; t < s->tables.n && !ncf__dense_adam(m); t++) {
            int D = s->tables.tab[t].D;
            const float *row = (side ? s->tables.tab[t].item : s->tables.tab[t].user) + (size_t)list[i] * D;
            bad |= ncf__update_range(m, (size_t)(row - m->params), (size_t)D, k);
        }
    }
    return bad;
}

static void ncf__update_now(ncf_model *m)
{
    struct ncf__scratch *s = m->scratch;
    ncf__adam_k k = ncf__adam_consts(m, m->step + 1);
    ncf__team team = NCF__TEAM_INIT;
    int64_t rows = (int64_t)s->touched.nuser + s->touched.nitem;
    int64_t gu = NCF__CEIL_DIV(s->touched.nuser, NCF__ROWS_PER_UNIT),
            gi = NCF__CEIL_DIV(s->touched.nitem, NCF__ROWS_PER_UNIT);
    int64_t g = gu > gi ? gu : gi, units = ncf__update_units(m, g);
    double work = ncf__dense_adam(m) ? (double)m->num_params : (double)(m->num_params - s->emb_params) + 64.0 * rows;
    int bad = 0;
    NCF__PARALLEL(work > 16 * NCF__PAR_WORK)
    {
        ncf__ctx x = ncf__join(&team);
        int64_t lo, hi, u;
        while (ncf__claim(&x, units, 1, &lo, &hi))
            for (u = lo; u < hi; u++)
                if (ncf__update_unit(m, u, g, &k)) ncf__flag(&bad, 1);
    }
    s->touched.nuser = s->touched.nitem = 0;
    s->nonfinite |= bad;
    m->step++;
}

NCFDEF void ncf_update(ncf_model *m)
{
    if (m && m->grads && m->cfg.optimizer != NCF_OPT_ALS) ncf__update_now(m); /* (in place: no gradients) */
}

/* Refuses a non-finite loss (nothing updated) or a step that wrote a non-finite parameter. */
static int ncf__step_failed(ncf_model *m, double loss, int updated)
{
    if (!updated) {
        ncf__zero_grad(m);
        return ncf__fail(NCF_ERR_DATA,
                         "the loss is %g at step %lld: the parameters are not finite (learning "
                         "rate too high?)",
                         loss, (long long)m->step + 1);
    }
    return ncf__fail(NCF_ERR_DATA,
                     "step %lld made a parameter infinite or NaN (learning rate too high?); "
                     "stopped there",
                     (long long)m->step);
}

NCFDEF int ncf_train_step(ncf_model *m, const int32_t *users, const int32_t *items, const float *labels, int n,
                          double *loss)
{
    ncf__team team = NCF__TEAM_INIT;
    ncf__batch bt;
    double l = 0;
    int rc, updated = 0, bad = 0;
    if (m && ncf__pending(m)) { /* rows from an earlier ncf_forward_backward: update them too */
        if ((rc = ncf_forward_backward(m, users, items, labels, n, &l)) != NCF_OK) return rc;
        if (!(l - l == 0.0)) return ncf__step_failed(m, l, 0);
        m->scratch->nonfinite = 0;
        ncf_update(m);
        if (m->scratch->nonfinite) return ncf__step_failed(m, l, 1);
        if (loss) *loss = l;
        return NCF_OK;
    }
    if (!m) return ncf__fail(NCF_ERR_ARG, "ncf_train_step: NULL model");
    if (m->cfg.optimizer == NCF_OPT_ALS)
        return ncf__fail(NCF_ERR_ARG, "ncf_train_step: an ALS model has no gradient step");
    if ((rc = ncf__given_batch(m, &bt, users, items, labels, n)) != NCF_OK) return rc;
    team.pace = &m->scratch->pace, team.solo = team.pace->solo;
    NCF__PARALLEL(ncf__rows_parallel(m, n))
    {
        ncf__ctx x = ncf__join(&team);
        int up;
        ncf__transpose_phase(&x, m);
        up = ncf__step_phases(&x, m, &bt, m->step + 1, &l, &bad);
#if NCF__TEAMS
        if (omp_get_thread_num() == 0)
#endif
            updated = up;
    }
    if (!updated) return ncf__step_failed(m, l, 0);
    m->step++;
    if (bad) return ncf__step_failed(m, l, 1);
    if (loss) *loss = l;
    return NCF_OK;
}

/* ---- >>train-loop: steps, epochs, the public training calls ---------------------------------- */

#define NCF__BLOCK 1024 /* steps per parallel region */

typedef struct {
    ncf_progress_fn progress;
    void *ctx;
    int64_t done0, total; /* examples before this block, and in the whole run */
    double *sum;          /* loss * examples, summed so far */
} ncf__report;

/* Steps [0, nsteps) of a block, batch i being examples start + i*B.. of the epoch, in one
   region. losses[i] and bad[i] are step i's. Returns the steps that updated the model. */
static int ncf__train_block(ncf_model *m, const ncf__batch *first, int64_t end, int nsteps, double *losses, int *bad,
                            const ncf__report *rep)
{
    ncf__team team = NCF__TEAM_INIT;
    int B = m->cfg.batch_size, done = 0;
    int64_t t0 = m->step;
    team.pace = &m->scratch->pace, team.solo = team.pace->solo;
    NCF__PARALLEL(ncf__rows_parallel(m, B))
    {
        ncf__ctx x = ncf__join(&team);
        ncf__batch bt = *first;
        int i, lead = 1;
        double sum = *rep->sum;
#if NCF__TEAMS
        lead = omp_get_thread_num() == 0;
#endif
        ncf__transpose_phase(&x, m);
        for (i = 0; i < nsteps;) {
            int64_t seen;
            bt.start = first->start + (int64_t)i * B;
            bt.n = (int)(end - bt.start < B ? end - bt.start : B);
            if (!ncf__step_phases(&x, m, &bt, t0 + i + 1, &losses[i], &bad[i])) break;
            seen = rep->done0 + bt.start + bt.n - first->start;
            if (lead) {
                sum += losses[i] * bt.n;
                if (rep->progress && ((rep->done0 / B + i) % 16 == 15 || bt.start + bt.n == end))
                    rep->progress(rep->ctx, seen, rep->total, sum / (double)seen);
            }
            if (ncf__flag_value(&bad[i++])) break;
        }
        if (lead) done = i, *rep->sum = sum;
    }
    return done;
}

/* Rendle et al.'s recipe, MF trained by SGD one example a step (batch_size 1), is a run of
   millions of tiny steps: the batch machinery (a parallel region, row sorting, gradient
   tables) costs many times the step itself. This loop takes the same steps, the same math
   as ncf_train_step on one example, the logit from ncf__outfile: the user's and the item's
   rows and biases and the output bias move by lr times their gradient, each computed from
   the values before the step. The examples come from the sampler in chunks. */
#define NCF__SGD_CHUNK 1024 /* examples drawn at a time: 12 KB of stack */

static int ncf__per_example_sgd(const ncf_config *c)
{
    return c->model == NCF_MF && c->optimizer == NCF_OPT_SGD && c->batch_size == 1;
}

/* out[j] += the sum of TERM(a[k], b[k]) over k = j mod NCF__LANES: ncf__lane_squares of
   a[k]^2 + b[k]^2, ncf__lane_sums of a[k] + b[k]. The lanes as one vector where there is one:
   left to itself, GCC vectorizes these loops for AVX-512 16 floats at a time and shuffles the
   halves together, and a run of the recipe took 2.4x as long as with 8 (measured on an Intel
   Xeon with AVX-512). SSE's 4 lanes vectorize well as they are. */
#if NCF__VEC && NCF__VW >= 8
#define NCF__LANE_VECTORS(TERM) \
    do { \
        ncf__v8 v, x, y; \
        NCF__V8LOAD(v, out); \
        for (; k + NCF__LANES <= n; k += NCF__LANES) { \
            NCF__V8LOAD(x, a + k), NCF__V8LOAD(y, b + k); \
            v += TERM(x, y); \
        } \
        memcpy(out, &v, sizeof v); \
    } while (0)
#else
#define NCF__LANE_VECTORS(TERM) ((void)0)
#endif
#define NCF__LANE_FOLD(name, TERM) \
    static void name(const float *NCF__RESTRICT a, const float *NCF__RESTRICT b, int n, float *out) \
    { \
        int k = 0, j; \
        NCF__LANE_VECTORS(TERM); \
        for (; k + NCF__LANES <= n; k += NCF__LANES) \
            for (j = 0; j < NCF__LANES; j++) out[j] += TERM(a[k + j], b[k + j]); \
        for (; k < n; k++) out[k % NCF__LANES] += TERM(a[k], b[k]); \
    }
#define NCF__SQUARES(x, y) ((x) * (x) + (y) * (y))
#define NCF__SUM(x, y) ((x) + (y))
NCF__LANE_FOLD(ncf__lane_squares, NCF__SQUARES)
NCF__LANE_FOLD(ncf__lane_sums, NCF__SUM)

/* One example's step; returns its loss (the L2 terms included), NaN when the logit is not
   finite (nothing updated). *bad is set when a parameter it wrote is not finite. */
static double ncf__sgd_example(ncf_model *m, int32_t u, int32_t i, float y, int *bad)
{
    const int F = m->scratch->F;
    float *NCF__RESTRICT gu = m->gmf_user + (size_t)u * F, *NCF__RESTRICT gi = m->gmf_item + (size_t)i * F;
    float z = ncf__output(m, gu, gi, m->user_bias[u], i, NULL), p, dz, lr = m->cfg.lr, coef = 2.0f * m->cfg.mf_reg;
    float bu = m->user_bias[u], bi = m->item_bias[i];
    float sq[NCF__LANES] = {0}, sum[NCF__LANES] = {0}; /* the old rows' squares, the new rows' sum */
    int k, j;
    if (NCF__NONFINITE(z)) return z - z;
    p = ncf__sigmoid(z), dz = y > 0 ? y * (p - 1.0f) : p;
    ncf__lane_squares(gu, gi, F, sq); /* (three simple loops: each vectorizes, one fused would not) */
    for (k = 0; k < F; k++) {
        float a = gu[k], b = gi[k];
        gu[k] = a - lr * (dz * b + coef * a);
        gi[k] = b - lr * (dz * a + coef * b);
    }
    ncf__lane_sums(gu, gi, F, sum);
    for (k = NCF__LANES / 2; k >= 1; k /= 2)
        for (j = 0; j < k; j++) sq[j] += sq[j + k], sum[j] += sum[j + k];
    m->user_bias[u] = bu - lr * (dz + coef * bu);
    m->item_bias[i] = bi - lr * (dz + coef * bi);
    m->b_out[0] -= lr * dz;
    /* an infinite or NaN parameter makes the sum so (or one near FLT_MAX overflows it: diverged too) */
    *bad |= NCF__NONFINITE(sum[0] + m->user_bias[u] + m->item_bias[i] + m->b_out[0]);
    return ncf__bce(z, y) + m->cfg.mf_reg * ((double)sq[0] + (double)bu * bu + (double)bi * bi);
}

/* Examples [first, end) of the epoch (in ncf__fill_by_positive's order), a step each. */
static int ncf__train_sgd_examples(ncf_model *m, const ncf_sampler *s, int epoch, int64_t first, int64_t end,
                                   const ncf__report *rep)
{
    int32_t u[NCF__SGD_CHUNK], it[NCF__SGD_CHUNK];
    float y[NCF__SGD_CHUNK];
    const int F = m->scratch->F;
    int64_t pos;
    for (pos = first; pos < end;) {
        int n = (int)(end - pos < NCF__SGD_CHUNK ? end - pos : NCF__SGD_CHUNK), j, bad = 0;
        ncf__fill_by_positive(s, epoch, pos, n, u, it, y, NULL);
        for (j = 0; j < n; j++) {
            double l;
            /* every cache line of the rows of a step ahead: the item rows are random, in a table
               larger than the nearer caches. (In the loop, not a function of its own: GCC takes a
               function of prefetches alone for one without effects and drops its calls.) */
            if (j + NCF__AHEAD < n) {
                const char *a = (const char *)(m->gmf_user + (size_t)u[j + NCF__AHEAD] * F),
                           *b = (const char *)(m->gmf_item + (size_t)it[j + NCF__AHEAD] * F);
                size_t o;
                for (o = 0; o < sizeof(float) * (size_t)F; o += 64) NCF__PREFETCH(a + o), NCF__PREFETCH(b + o);
            }
            l = ncf__sgd_example(m, u[j], it[j], y[j], &bad);
            if (!(l - l == 0.0)) return ncf__step_failed(m, l, 0);
            m->step++;
            if (bad) return ncf__step_failed(m, l, 1);
            *rep->sum += l;
        }
        pos += n;
        if (rep->progress) rep->progress(rep->ctx, pos - first, rep->total, *rep->sum / (double)(pos - first));
    }
    return NCF_OK;
}

/* An epoch number the model can count to, and examples [first, first + count) within its n. */
static int ncf__epoch_span(const char *who, int epoch, int64_t first, int64_t count, int64_t n)
{
    if (epoch < 0 || epoch > NCF_MAX_EPOCH)
        return ncf__fail(NCF_ERR_ARG, "%s: epoch %d is outside 0 to NCF_MAX_EPOCH (%d)", who, epoch, NCF_MAX_EPOCH);
    if (first < 0 || count < 0 || first > n || count > n - first)
        return ncf__fail(NCF_ERR_ARG, "%s: %lld examples from %lld: outside the epoch's %lld", who, (long long)count,
                         (long long)first, (long long)n);
    return NCF_OK;
}

/* ncf_train_epoch of an ALS model: its checks as ncf_train_examples', then the epoch. */
static int ncf__als_train(ncf_model *m, const ncf_sampler *s, int epoch, ncf_progress_fn progress, void *ctx,
                          double *mean_loss)
{
    int rc;
    double l = 0;
    if ((rc = ncf__writable(m, "ncf_train_epoch")) != NCF_OK) return rc;
    if (ncf__has_features(m))
        return ncf__fail(NCF_ERR_ARG,
                         "ncf_train_epoch: ALS takes no features (train a features model with Adam or SGD)");
    if (ncf__is_shard(s->data)) return ncf__fail(NCF_ERR_ARG, "ncf_train_epoch: ALS trains whole data, not a shard");
    if (s->data->num_users > m->cfg.num_users || s->data->num_items > m->cfg.num_items)
        return ncf__fail(NCF_ERR_ARG, "ncf_train_epoch: the data has %d users and %d items, the model %d and %d",
                         s->data->num_users, s->data->num_items, m->cfg.num_users, m->cfg.num_items);
    if ((rc = ncf__epoch_span("ncf_train_epoch", epoch, 0, 0, 0)) != NCF_OK) return rc;
    if ((rc = ncf__als_epoch(m, s->data, progress, ctx, s->num_examples, &l)) != NCF_OK) return rc;
    if (progress) progress(ctx, s->num_examples, s->num_examples, l);
    if (mean_loss) *mean_loss = l;
    return NCF_OK;
}

NCFDEF int ncf_train_examples(ncf_model *m, const ncf_sampler *s, int epoch, int64_t first, int64_t count,
                              ncf_progress_fn progress, void *ctx, double *mean_loss)
{
    int B, rc = NCF_OK;
    int32_t *u, *it;
    float *y;
    double *losses, sum = 0;
    int *bad;
    int64_t pos, end;
    ncf__report rep;
    if (!m || !s || !s->data) return ncf__fail(NCF_ERR_ARG, "ncf_train_examples: NULL model or sampler");
    if ((rc = ncf__writable(m, "ncf_train_examples")) != NCF_OK) return rc;
    if (m->cfg.optimizer == NCF_OPT_ALS)
        return ncf__fail(NCF_ERR_ARG, "ncf_train_examples: ALS trains whole epochs (ncf_train_epoch)");
    if (ncf__is_shard(s->data))
        return ncf__fail(NCF_ERR_ARG, "ncf_train_examples: the data is a shard: train it with ncf_mpi_train_epoch");
    if (s->data->num_users > m->cfg.num_users || s->data->num_items > m->cfg.num_items)
        return ncf__fail(NCF_ERR_ARG, "ncf_train_examples: the data has %d users and %d items, the model %d and %d",
                         s->data->num_users, s->data->num_items, m->cfg.num_users, m->cfg.num_items);
    if ((rc = ncf__epoch_span("ncf_train_examples", epoch, first, count, s->num_examples)) != NCF_OK) return rc;
    B = m->cfg.batch_size;
    end = first + count;
    if (ncf__features_train_on(m)) { /* (its own loop: the composed rows between the steps) */
        rc = ncf__features_train(m, s, epoch, first, end, progress, ctx, &sum);
        if (rc == NCF_OK && mean_loss) *mean_loss = count ? sum / (double)count : 0;
        return rc;
    }
    rep.progress = progress, rep.ctx = ctx, rep.done0 = 0, rep.total = count, rep.sum = &sum;
    if (ncf__per_example_sgd(&m->cfg) && !ncf__pending(m)) {
        rc = ncf__train_sgd_examples(m, s, epoch, first, end, &rep);
        if (rc == NCF_OK && mean_loss) *mean_loss = count ? sum / (double)count : 0;
        return rc;
    }
    if ((rc = ncf__reserve(m, B)) != NCF_OK) return rc;
    u = NCF__NEW(int32_t, B), it = NCF__NEW(int32_t, B), y = NCF__NEW(float, B);
    losses = NCF__NEW(double, NCF__BLOCK), bad = NCF__NEW(int, NCF__BLOCK);
    if (!u || !it || !y || !losses || !bad) rc = ncf__fail(NCF_ERR_NOMEM, "out of memory for a batch of %d", B);
    for (pos = first; rc == NCF_OK && pos < end;) {
        int64_t steps = NCF__CEIL_DIV(end - pos, B);
        int nsteps = (int)(steps < NCF__BLOCK ? steps : NCF__BLOCK), done;
        ncf__batch bt;
        if (ncf__pending(m)) { /* rows from an earlier ncf_forward_backward: one step with them */
            int n = (int)(end - pos < B ? end - pos : B);
            double l = 0;
            ncf_sampler_fill(s, epoch, pos, n, u, it, y);
            if ((rc = ncf_train_step(m, u, it, y, n, &l)) != NCF_OK) break;
            sum += l * n, pos += n;
            continue;
        }
        memset(&bt, 0, sizeof bt);
        bt.users = u, bt.items = it, bt.labels = y, bt.smp = s, bt.epoch = epoch, bt.start = pos;
        memset(bad, 0, sizeof(int) * NCF__BLOCK);
        rep.done0 = pos - first;
        done = ncf__train_block(m, &bt, end, nsteps, losses, bad, &rep);
        m->step += done;
        pos += (int64_t)done * B;
        if (done > 0 && bad[done - 1]) rc = ncf__step_failed(m, losses[done - 1], 1);
        else if (done < nsteps) rc = ncf__step_failed(m, losses[done], 0);
    }
    NCF_FREE(u);
    NCF_FREE(it);
    NCF_FREE(y);
    NCF_FREE(losses);
    NCF_FREE(bad);
    if (rc == NCF_OK && mean_loss) *mean_loss = count ? sum / (double)count : 0;
    return rc;
}

NCFDEF int ncf_train_epoch(ncf_model *m, const ncf_sampler *s, int epoch, ncf_progress_fn progress, void *ctx,
                           double *mean_loss)
{
    int rc;
    if (!m || !s || !s->data) return ncf__fail(NCF_ERR_ARG, "ncf_train_epoch: NULL model or sampler");
    rc = m->cfg.optimizer == NCF_OPT_ALS
        ? ncf__als_train(m, s, epoch, progress, ctx, mean_loss)
        : ncf_train_examples(m, s, epoch, 0, s->num_examples, progress, ctx, mean_loss);
    if (rc == NCF_OK) m->epoch = epoch;
    ncf__refresh_cache(m); /* ready to serve and evaluate */
    return rc;
}

/* Jobs k = 0..n-1 at once, one thread each, every OpenMP region within a job on its thread
   alone: independent work (each job reads and writes only its own model), so each job's bits
   are those it has alone, on any number of threads. The failure of the first job by k that
   failed is the call's: its code and its text, and *failed its k. */
typedef int (*ncf__job_fn)(void *ctx, int k);
static int ncf__side_by_side(ncf__job_fn job, void *ctx, int n, int *failed)
{
    int *rcs = NCF__ZNEW(int, n), k, rc = NCF_OK;
    char *why = NCF__NEW(char, (size_t)n *NCF__ERR_BYTES); /* each job's message */
#ifdef _OPENMP
    int T = omp_get_max_threads();
#endif
    if (!rcs || !why) {
        NCF_FREE(rcs), NCF_FREE(why);
        return ncf__fail(NCF_ERR_NOMEM, "out of memory for %d runs side by side", n);
    }
    NCF__OMP(parallel for schedule(dynamic, 1) num_threads(ncf__team_of(n > 1, n < T ? n : T)))
    for (k = 0; k < n; k++) {
#ifdef _OPENMP
        omp_set_num_threads(1); /* (this thread's regions, within the job) */
#endif
        if ((rcs[k] = job(ctx, k)) != NCF_OK) memcpy(why + (size_t)NCF__ERR_BYTES * k, ncf__errbuf, NCF__ERR_BYTES);
    }
#ifdef _OPENMP
    omp_set_num_threads(T);
#endif
    for (k = 0; k < n && rc == NCF_OK; k++)
        if ((rc = rcs[k]) != NCF_OK) memcpy(ncf__errbuf, why + (size_t)NCF__ERR_BYTES * k, NCF__ERR_BYTES), *failed = k;
    NCF_FREE(rcs), NCF_FREE(why);
    return rc;
}

/* An epoch of models[k] from samplers[k], k = 0..n-1 (ncf_train_epoch_each). */
typedef struct {
    ncf_model *const *models;
    const ncf_sampler *samplers;
    int epoch;
    ncf_progress_fn progress;
    void *ctx;
    double *loss;
} ncf__each;

static int ncf__each_epoch(void *ctx, int k)
{
    const ncf__each *j = (const ncf__each *)ctx;
    return ncf_train_epoch(j->models[k], &j->samplers[k], j->epoch, k ? NULL : j->progress, j->ctx, &j->loss[k]);
}

/* SGD one example a step runs on one thread, so such models train side by side; the others
   in turn, each on every thread. */
NCFDEF int ncf_train_epoch_each(ncf_model *const *models, const ncf_sampler *samplers, int n, int epoch,
                                ncf_progress_fn progress, void *ctx, double *mean_loss)
{
    ncf__each j;
    int k, a, rc = NCF_OK, failed = 0, apart = 1;
    if (!models || !samplers || n < 1)
        return ncf__fail(NCF_ERR_ARG, "ncf_train_epoch_each: need models, their samplers and n >= 1 (got %d)", n);
    for (k = 0; k < n; k++) {
        if (!models[k] || !samplers[k].data)
            return ncf__fail(NCF_ERR_ARG, "ncf_train_epoch_each: model %d or its sampler is NULL", k);
        for (a = 0; a < k; a++)
            if (models[a] == models[k])
                return ncf__fail(NCF_ERR_ARG, "ncf_train_epoch_each: models %d and %d are the same model", a, k);
        apart = apart && ncf__per_example_sgd(&models[k]->cfg);
    }
    j.models = models, j.samplers = samplers, j.epoch = epoch, j.progress = progress, j.ctx = ctx;
    if (!(j.loss = NCF__ZNEW(double, n))) return ncf__fail(NCF_ERR_NOMEM, "ncf_train_epoch_each: out of memory");
    if (apart && n > 1) rc = ncf__side_by_side(ncf__each_epoch, &j, n, &failed);
    else
        for (k = 0; k < n && rc == NCF_OK; k++) failed = k, rc = ncf__each_epoch(&j, k);
    if (rc != NCF_OK && n > 1) {
        char which[24];
        snprintf(which, sizeof which, "model %d", failed);
        rc = ncf__prefix_error(rc, which);
    }
    if (rc == NCF_OK && mean_loss) {
        for (*mean_loss = 0, k = 0; k < n; k++) *mean_loss += j.loss[k];
        *mean_loss /= n;
    }
    NCF_FREE(j.loss);
    return rc;
}

static NCF__MAYBE_UNUSED float ncf__decayed_lr(float lr, int j, int epochs)
{
    return epochs > 0 && j >= 0 && j < epochs ? (float)(lr * (1.0 - (double)j / epochs)) : lr;
}

NCFDEF ncf_fit_opts ncf_fit_opts_default(void)
{
    ncf_fit_opts o;
    memset(&o, 0, sizeof o);
    o.epochs = 20, o.eval = ncf_eval_opts_default(), o.eval.target = NCF_EVAL_VALIDATION;
    return o;
}

/* The model's training state: parameters, Adam moments, counters. */
typedef struct {
    float *params, *m, *v;
    float *feat; /* the features' state (ncf__features_state), or NULL */
    int64_t step, epoch;
} ncf__snapshot;

/* The features' state copied into (take) or out of the snapshot. */
static void ncf__snapshot_features(const ncf_model *m, float *keep, int take)
{
    float *b[12];
    size_t n[12], at = 0;
    int k;
    if (!keep) return;
    ncf__features_state(m, b, n);
    for (k = 0; k < 12; at += n[k++])
        if (n[k]) memcpy(take ? keep + at : b[k], take ? b[k] : keep + at, sizeof(float) * n[k]);
}

static void ncf__snapshot_take(const ncf_model *m, ncf__snapshot *s)
{
    size_t n = sizeof(float) * m->num_params;
    ncf__snapshot_features(m, s->feat, 1);
    memcpy(s->params, m->params, n);
    if (m->adam_m && s->m) memcpy(s->m, m->adam_m, n), memcpy(s->v, m->adam_v, n);
    s->step = m->step, s->epoch = m->epoch;
}

static void ncf__snapshot_put(ncf_model *m, const ncf__snapshot *s)
{
    size_t n = sizeof(float) * m->num_params;
    memcpy(m->params, s->params, n);
    ncf__snapshot_features(m, s->feat, 0);
    if (m->adam_m && s->m) memcpy(m->adam_m, s->m, n), memcpy(m->adam_v, s->v, n);
    m->step = s->step, m->epoch = s->epoch;
    ncf_model_params_changed(m);
}

NCFDEF int ncf_fit(ncf_model *m, const ncf_dataset *data, const ncf_fit_opts *opts, ncf_fit_report *rep)
{
    ncf_sampler smp;
    ncf__snapshot best;
    ncf_metrics now, top;
    ncf_eval_opts eo;
    ncf_fit_opts dflt = ncf_fit_opts_default();
    const ncf_fit_opts *o = opts ? opts : &dflt;
    int rc, e, first, since = 0;
    if (!m || !data || !o || o->epochs < 0 || o->patience < 0 || o->eval.target != NCF_EVAL_VALIDATION)
        return ncf__fail(NCF_ERR_ARG,
                         "ncf_fit: need a model, data, options with epochs and patience >= 0, and a "
                         "validation target (choosing on test would overstate the test figures)");
    if ((rc = ncf__writable(m, "ncf_fit")) != NCF_OK) return rc;
    if (!ncf__has_val(data))
        return ncf__fail(NCF_ERR_ARG, "ncf_fit: the data has no validation items (ncf_hold_out_validation)");
    if (m->epoch > NCF_MAX_EPOCH - o->epochs)
        return ncf__fail(NCF_ERR_ARG, "ncf_fit: %d more epochs pass NCF_MAX_EPOCH", o->epochs);
    eo = o->eval;
    if ((rc = ncf_sampler_init(&smp, data, m->cfg.num_neg, m->cfg.seed)) != NCF_OK) return rc;
    smp.by_positive = o->by_positive;
    if ((rc = ncf_evaluate(m, data, &eo, &top)) != NCF_OK) return rc;
    best.params = NCF__NEW(float, m->num_params);
    best.m = m->adam_m ? NCF__NEW(float, m->num_params) : NULL,
    best.v = m->adam_v ? NCF__NEW(float, m->num_params) : NULL;
    {
        float *b[12];
        size_t n[12], nf = ncf__features_state(m, b, n);
        best.feat = nf ? NCF__NEW(float, nf) : NULL;
        if (nf && !best.feat) NCF_FREE(best.params), best.params = NULL; /* (refused below) */
    }
    if (!best.params || (m->adam_m && (!best.m || !best.v))) {
        NCF_FREE(best.params), NCF_FREE(best.m), NCF_FREE(best.v), NCF_FREE(best.feat);
        return ncf__fail(NCF_ERR_NOMEM, "ncf_fit: out of memory for a copy of the model's %lu parameters",
                         (unsigned long)m->num_params);
    }
    ncf__snapshot_take(m, &best);
    first = (int)m->epoch + 1;
    for (e = first; e < first + o->epochs && rc == NCF_OK; e++) {
        float lr = m->cfg.lr;
        double loss = 0;
        if (o->decay) m->cfg.lr = ncf__decayed_lr(lr, e - first, o->epochs);
        rc = ncf_train_epoch(m, &smp, e, o->progress, o->ctx, &loss);
        m->cfg.lr = lr; /* (the model's own rate is never the decayed one outside an epoch) */
        if (rc != NCF_OK || (rc = ncf_evaluate(m, data, &eo, &now)) != NCF_OK) break;
        if (o->epoch_done) o->epoch_done(o->ctx, e, loss, &now);
        if (ncf_metric_value(&now, eo.metric) > ncf_metric_value(&top, eo.metric))
            top = now, since = 0, ncf__snapshot_take(m, &best);
        else if (o->patience && ++since >= o->patience) {
            e++;
            break;
        }
    }
    if (rep) rep->epochs_trained = e - first, rep->chosen_epoch = (int)best.epoch, rep->chosen = top;
    if (rc == NCF_OK) ncf__snapshot_put(m, &best);
    NCF_FREE(best.params), NCF_FREE(best.m), NCF_FREE(best.v), NCF_FREE(best.feat);
    return rc;
}
#endif /* NCF_INFERENCE_ONLY */
