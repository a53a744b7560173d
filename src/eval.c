#ifndef NCF_INFERENCE_ONLY /* the whole stage: a device only serves */
/* Evaluation: each held-out item ranked among its candidates (sampled, or every unrated item),
   HR, NDCG, MRR and RecBole's metrics at any cut-off, the popularity baseline beside them. */

/* Whether a candidate's score counts against the held-out item's: ties do (pessimistic); a
   non-finite candidate ranks below every finite score. (A non-finite held-out score is a miss
   whatever the candidates: a diverged model scores HR 0, not 1.) */
static int ncf__ranks_above(float cand, float test) { return !NCF__NONFINITE(cand) && cand >= test; }

NCFDEF ncf_eval_opts ncf_eval_opts_default(void)
{
    ncf_eval_opts o;
    memset(&o, 0, sizeof o);
    o.k = 10;
    return o;
}

/* The held-out item of u for the target, or -1 (one item per user). */
static int32_t ncf__held_item(const ncf_dataset *d, int target, int u)
{
    return target == NCF_EVAL_VALIDATION ? ncf__val_of(d, u) : d->test_item[u];
}

/* Whether u is evaluated for the target: it has held-out items, and (a split of many items a
   user) training ones. */
static int ncf__evaluated(const ncf_dataset *d, int target, int u)
{
    int64_t n;
    ncf__held_list(d, target, u, &n);
    return n > 0 && (!d->test_ptr || d->user_ptr[u + 1] > d->user_ptr[u]);
}

/* The same, and then the item full ranking skips besides the training ones (the test's skips
   the validation item, rated; the validation's skips nothing: whatever chooses on it never
   reads the test items, for which the test item is one more unrated item) and the sampled
   negatives. */
static int32_t ncf__held(const ncf_dataset *d, int target, int u, int32_t *other, const int32_t **neg)
{
    int val = target == NCF_EVAL_VALIDATION;
    int32_t t = ncf__held_item(d, target, u);
    const int32_t *rows = val ? d->val_neg : d->eval_neg; /* (NULL without sampled negatives) */
    if (t < 0) return t;
    *other = val ? -1 : ncf__val_of(d, u);
    *neg = rows ? rows + (size_t)(u - d->shard.user_lo) * (size_t)(val ? d->num_val_neg : d->num_eval_neg) : NULL;
    return t;
}

/* Whether a model with ids names the data's users and items as the data does (a model
   without ids, or data without, is taken as it is); else the message says where not. */
static int ncf__ids_match(const ncf_model *m, const ncf_dataset *d)
{
    char a[NCF_MAX_ID_BYTES + 1], b[NCF_MAX_ID_BYTES + 1];
    int side, k;
    if (!ncf__has_ids(m) || (!d->raw_user && !d->user_text)) return 1;
    for (side = 0; side < 2; side++) {
        ncf__ids mt = ncf__model_ids(m, side), dt = ncf__dataset_ids(d, side);
        if (mt.num && dt.num && !mt.order && !memcmp(mt.num, dt.num, sizeof(int64_t) * (size_t)dt.n)) continue;
        for (k = 0; k < dt.n; k++)
            if (ncf__ids_name(&mt, k, a, sizeof a) < 0 || ncf__ids_name(&dt, k, b, sizeof b) < 0 || strcmp(a, b) != 0) {
                ncf__say("ncf_evaluate: the model's %s %d is '%s', the data's '%s': other ids (a model "
                         "answers for the ids it was trained on)",
                         side ? "item" : "user", k, ncf__shown(a, a + strlen(a)), b);
                return 0;
            }
    }
    return 1;
}

static int ncf__eval_args(const ncf_model *m, const ncf_dataset *data, const ncf_eval_opts *o, const ncf_metrics *out)
{
    int nneg;
    if (!m || !data || !data->user_ptr || !out || !o || o->k <= 0)
        return ncf__fail(NCF_ERR_ARG, "ncf_evaluate: need a model, a loaded dataset, an output and k > 0");
    if (data->num_users != NCF__USERS(m) ||
        data->num_items != m->cfg.num_items) /* (full ranking ranks the data's catalogue) */
        return ncf__fail(NCF_ERR_ARG,
                         "ncf_evaluate: the data has %d users and %d items, the model %d and %d: not the "
                         "data it was trained on",
                         data->num_users, data->num_items, NCF__USERS(m), m->cfg.num_items);
    if ((o->target != NCF_EVAL_TEST && o->target != NCF_EVAL_VALIDATION) ||
        (o->full_ranking != 0 && o->full_ranking != 1) || o->max_users < 0 || o->metric < NCF_METRIC_HR ||
        o->metric > NCF_METRIC_MAP)
        return ncf__fail(NCF_ERR_ARG,
                         "ncf_evaluate: target %d, full_ranking %d, max_users %d or metric %d is not one of its values",
                         o->target, o->full_ranking, o->max_users, o->metric);
    if ((o->cold_only != 0 && o->cold_only != 1) || (o->cold_only && !o->full_ranking) || o->baseline)
        return ncf__fail(NCF_ERR_ARG,
                         "ncf_evaluate: cold_only %d is 0 or 1, and 1 ranks in full; a baseline's "
                         "scores are for model NULL",
                         o->cold_only);
    if (!ncf__ids_match(m, data)) return NCF_ERR_ARG;
    if (data->report.holdout == NCF_HOLDOUT_NONE)
        return ncf__fail(NCF_ERR_DATA,
                         "ncf_evaluate: nothing to evaluate: the dataset holds no item out (holdout none)");
    if (o->target == NCF_EVAL_VALIDATION && !ncf__has_val(data))
        return ncf__fail(NCF_ERR_ARG, "ncf_evaluate: the dataset has no validation set (ncf_hold_out_validation)");
    if (data->test_ptr && !o->full_ranking)
        return ncf__fail(NCF_ERR_ARG,
                         "ncf_evaluate: a split of many items per user is evaluated by full ranking "
                         "(ncf_eval_opts.full_ranking): it has no sampled negatives");
    nneg = o->target == NCF_EVAL_VALIDATION ? data->num_val_neg : data->num_eval_neg;
    if (!o->full_ranking && nneg <= 0)
        return ncf__fail(NCF_ERR_ARG,
                         "ncf_evaluate: the dataset has no eval negatives (sample some, or rank all items)");
    return NCF_OK;
}

/* Users [u0, u1) with an item held out for the target. */
static int64_t ncf__eval_held(const ncf_dataset *d, int target, int u0, int u1)
{
    int64_t held = 0;
    int u;
    for (u = u0; u < u1; u++) held += ncf__evaluated(d, target, u);
    return held;
}

/* The share of those users that full ranking scores: a fixed sample, the same users every time. */
static double ncf__eval_share(const ncf_eval_opts *o, int64_t held)
{
    return o->full_ranking && o->max_users > 0 && held > o->max_users ? (double)o->max_users / (double)held : 1.0;
}

#define NCF__UNSCORED (-1)        /* a user's rank: not evaluated */
#define NCF__NONFINITE_SCORE (-2) /* evaluated, and its item's score is not finite: a miss */

/* How many candidates outrank u's held-out item cand[0]: its sampled negatives cand[1..ncand),
   sc[] the scores of cand[]; or, with full ranking, every item u did not rate, sc[j] item j's. */
static int64_t ncf__count_above(const ncf_dataset *d, int u, int32_t other, const int32_t *cand, int ncand, int full,
                                const float *sc)
{
    int32_t t = cand[0];
    int64_t r = 0;
    int j;
    if (full) {
        const int32_t *p = d->items + d->user_ptr[u], *pe = d->items + d->user_ptr[u + 1];
        for (j = 0; j < ncand; j++) {
            while (p < pe && *p < j) p++;
            if (j != t && j != other && !(p < pe && *p == j) && ncf__ranks_above(sc[j], sc[t])) r++;
        }
    } else {
        for (j = 1; j < ncand; j++) r += cand[j] != t && ncf__ranks_above(sc[j], sc[0]);
    }
    return r;
}

/* Whether full ranking's fixed sample takes user u. */
static int ncf__sampled_user(const ncf_eval_opts *o, double share, int u)
{
    return share >= 1 || ncf__uniform(ncf__hash3(o->seed ^ NCF__TAG_FULL, (uint64_t)u, 0)) < share;
}

#ifdef NCF_MPI /* (ranks of one held-out item, gathered over the ranks) */
/* rank[u - u0] for users [u0, u1): how many candidates score at least as high as the held-out
   item, or one of the two marks above. */
static int ncf__eval_ranks(ncf_model *m, const ncf_dataset *data, const ncf_eval_opts *o, double share, int u0, int u1,
                           int64_t *rank)
{
    const float *proj;
    float *own;
    int u, rc, failed = 0, ncand;
    ncand = o->full_ranking ? data->num_items
                            : 1 + (o->target == NCF_EVAL_VALIDATION ? data->num_val_neg : data->num_eval_neg);
    proj = ncf__projection_for(m, &own, &rc);
    if (rc != NCF_OK) return rc;
    NCF__PARALLEL_N(u1 - u0 > 1, ncf__threads() < u1 - u0 ? ncf__threads() : u1 - u0)
    {
        ncf__eval_buf e;
        int C = ncf__eval_chunk(m, ncand), j0;
        int32_t *cand = NCF__NEW(int32_t, ncand);
        float *sc = NCF__NEW(float, ncand);
        int have_e = ncf__eval_buf_alloc(&e, m, C), ok = have_e && cand && sc;
        if (!ok) {
            NCF__OMP(atomic write)
            failed = 1;
        }
        NCF__OMP(for schedule(dynamic, 8))
        for (u = u0; u < u1; u++) {
            int32_t other = -1, t;
            const int32_t *neg = NULL;
            int64_t r;
            t = ncf__held(data, o->target, u, &other, &neg);
            rank[u - u0] = NCF__UNSCORED;
            if (!ok || t < 0 || !ncf__sampled_user(o, share, u)) continue;
            cand[0] = t;
            if (!o->full_ranking) memcpy(cand + 1, neg, sizeof(int32_t) * (size_t)(ncand - 1));
            for (j0 = 0; j0 < ncand; j0 += C) { /* (a score does not depend on its chunk) */
                e.sc = sc + j0;
                ncf__score_user(m, proj, u, NULL, o->full_ranking ? NULL : cand + j0, j0,
                                ncand - j0 < C ? ncand - j0 : C, &e, j0 > 0);
            }
            r = ncf__count_above(data, u, other, cand, ncand, o->full_ranking, sc);
            rank[u - u0] = NCF__NONFINITE(sc[o->full_ranking ? t : 0]) ? NCF__NONFINITE_SCORE : r;
        }
        if (have_e) ncf__eval_buf_free(&e);
        NCF_FREE(cand), NCF_FREE(sc);
    }
    NCF_FREE(own);
    return failed ? ncf__fail(NCF_ERR_NOMEM, "out of memory for evaluation buffers") : NCF_OK;
}

/* HR@k, NDCG@k and MRR from the users' ranks, summed in user order. */
static void ncf__metrics_of(const int64_t *rank, int n, int k, ncf_metrics *out)
{
    double hsum = 0, nsum = 0, rsum = 0, asum = 0;
    int u, users = 0;
    for (u = 0; u < n; u++) {
        if (rank[u] == NCF__UNSCORED) continue;
        users++;
        if (rank[u] < 0) continue;
        rsum += 1.0 / (double)(rank[u] + 1);
        if (rank[u] < k)
            hsum += 1.0, nsum += log(2.0) / log((double)rank[u] + 2.0), asum += 1.0 / (double)(rank[u] + 1);
    }
    memset(out, 0, sizeof *out);
    out->users = users, out->k = k;
    out->hr = users ? hsum / users : 0;
    out->ndcg = users ? nsum / users : 0;
    out->mrr = users ? rsum / users : 0;
    out->recall = out->hr, out->precision = out->hr / k, out->map = users ? asum / users : 0; /* (one item each) */
}
#endif

/* A candidate of a top list: a better score first, then a lower item. */
typedef struct {
    float score;
    int32_t item;
} ncf__scored;

/* Whether a ranks after b in a top list. */
static int ncf__after(const ncf__scored *a, const ncf__scored *b)
{
    return a->score < b->score || (a->score == b->score && a->item > b->item);
}

static int ncf__cmp_scored(const void *a, const void *b)
{
    const ncf__scored *x = (const ncf__scored *)a, *y = (const ncf__scored *)b;
    return ncf__after(x, y) - ncf__after(y, x);
}

/* Keeps the best kmax candidates seen in h (*n of them), a heap whose root ranks last. */
static void ncf__top_push(ncf__scored *h, int *n, int kmax, ncf__scored c)
{
    int i = *n, p, l, w;
    if (*n < kmax) {
        for ((*n)++; i > 0 && ncf__after(&c, &h[p = (i - 1) / 2]); i = p) h[i] = h[p];
        h[i] = c;
        return;
    }
    if (!ncf__after(&h[0], &c)) return;
    for (i = 0;; i = w) {
        const ncf__scored *last = &c;
        w = i, l = 2 * i + 1;
        if (l < *n && ncf__after(&h[l], last)) w = l, last = &h[l];
        if (l + 1 < *n && ncf__after(&h[l + 1], last)) w = l + 1;
        if (w == i) break;
        h[i] = h[w];
    }
    h[i] = c;
}

/* The top of one user's ranking: where its held-out items fall among the first kmax (pos[],
   ascending), the rank of its best one, and (full ranking) the first kmax items. */
typedef struct {
    int64_t held; /* its held-out items; -1: not evaluated */
    int64_t best; /* the rank of the best of them (from 0), or NCF__NONFINITE_SCORE */
    int hits, ntop;
    int32_t *pos, *top; /* [kmax] each */
} ncf__ranking;

/* How many of sc[0..n) are finite and at least s, a finite score: one pass that vectorizes. */
static int64_t ncf__count_at_least(const float *sc, int64_t n, float s)
{
    int64_t j, r = 0;
    for (j = 0; j < n; j++) r += (sc[j] >= s) & (sc[j] - sc[j] == 0.0f);
    return r;
}

/* The same over the distinct items of three sorted lists (a user's rated ones). */
static int64_t ncf__rated_at_least(const int32_t *a, const int32_t *ae, const int32_t *b, int64_t nb, const int32_t *c,
                                   int64_t nc, const float *sc, float s)
{
    const int32_t *be = b ? b + nb : b, *ce = c ? c + nc : c;
    int64_t r = 0;
    for (;;) {
        int32_t x = INT32_MAX;
        if (a < ae && *a < x) x = *a;
        if (b < be && *b < x) x = *b;
        if (c < ce && *c < x) x = *c;
        if (x == INT32_MAX) return r;
        r += (sc[x] >= s) & (sc[x] - sc[x] == 0.0f);
        while (a < ae && *a == x) a++;
        while (b < be && *b == x) b++;
        while (c < ce && *c == x) c++;
    }
}

/* Full ranking of u's held-out items held[0..nh) against every item it did not rate (the
   training items and other[0..no) are rated), sc[] every item's score. heap: kmax entries,
   hs: nh. A candidate that ties a held-out item ranks above it; non-finite scores rank last. */
static void ncf__rank_full(const ncf_dataset *d, int u, const int32_t *held, int64_t nh, const int32_t *other,
                           int64_t no, const float *sc, int kmax, ncf__scored *heap, ncf__scored *hs, ncf__ranking *g)
{
    const int32_t *p = d->items + d->user_ptr[u], *pe = d->items + d->user_ptr[u + 1];
    int64_t h = 0, o = 0, nf = 0, r = 0, j, j0;
    int n = 0, i = 0, q = 0;
    for (j = 0; j < nh; j++)
        if (!NCF__NONFINITE(sc[held[j]])) hs[nf].score = sc[held[j]], hs[nf++].item = held[j];
    ncf__heap_sort((char *)hs, (size_t)nf, sizeof *hs, ncf__cmp_scored);
    if (nf)
        r = ncf__count_at_least(sc, d->num_items, hs[0].score) -
            ncf__rated_at_least(p, pe, held, nh, other, no, sc, hs[0].score);
    for (j0 = 0; kmax && j0 < d->num_items; j0 += 64) { /* (most items do not enter the top: */
        int64_t j1 = d->num_items - j0 < 64 ? d->num_items : j0 + 64;
        int any = n < kmax;
        float worst = n ? heap[0].score : 0.0f;
        for (j = j0; j < j1; j++) any |= sc[j] >= worst; /* a run none of which can is one vector pass) */
        for (j = j0; any && j < j1; j++) {
            ncf__scored c;
            c.score = sc[j], c.item = (int32_t)j;
            if (NCF__NONFINITE(c.score) || (n == kmax && !ncf__after(&heap[0], &c))) continue;
            while (p < pe && *p < j) p++;
            while (h < nh && held[h] < j) h++;
            while (o < no && other[o] < j) o++;
            if ((p < pe && *p == j) || (h < nh && held[h] == j) || (o < no && other[o] == j)) continue;
            ncf__top_push(heap, &n, kmax, c);
        }
    }
    ncf__heap_sort((char *)heap, (size_t)n, sizeof *heap, ncf__cmp_scored);
    g->held = nh, g->best = nf ? r : NCF__NONFINITE_SCORE, g->hits = g->ntop = 0;
    while (g->ntop < kmax && (i < n || q < nf)) /* the two lists merged, a tie to the unrated item */
        if (i < n && (q == nf || heap[i].score >= hs[q].score)) g->top[g->ntop++] = heap[i++].item;
        else g->pos[g->hits++] = g->ntop, g->top[g->ntop++] = hs[q++].item;
}

/* The figures' sums over users, at each k, as ncf_metrics (divided by the users at the end). */
static void ncf__add_ranking(const ncf__ranking *g, const int *ks, int nk, const float *pop, const double *idcg,
                             ncf_metrics *sum)
{
    int j, q;
    for (j = 0; j < nk; j++) {
        ncf_metrics *m = &sum[j];
        int k = ks[j], h = 0, n = g->ntop < k ? g->ntop : k;
        double dcg = 0, ap = 0, ps = 0;
        m->users++;
        if (g->best < 0) continue;
        for (q = 0; q < g->hits && g->pos[q] < k; q++, h++) {
            dcg += log(2.0) / log((double)g->pos[q] + 2.0);
            ap += (double)(q + 1) / (double)(g->pos[q] + 1);
        }
        m->mrr += 1.0 / (double)(g->best + 1);
        for (q = 0; q < n; q++) ps += pop[g->top[q]];
        m->popularity += n ? ps / n : 0;
        if (!h) continue;
        m->hr += 1.0;
        m->ndcg += dcg / idcg[g->held < k ? g->held : k];
        m->recall += (double)h / (double)g->held;
        m->precision += (double)h / (double)k;
        m->map += ap / (double)(g->held < k ? g->held : k);
    }
}

/* Users a block of the ranking holds at once: its lists stay within a few megabytes. */
static int ncf__rank_block(int kmax)
{
    int b = (1 << 20) / kmax;
    return b < 16 ? 16 : b > 4096 ? 4096 : b;
}

/* Per thread: a model's scoring buffers, and the candidates' and lists' room. */
typedef struct {
    ncf__eval_buf e;
    int have_e;
    int32_t *cand;
    float *sc;
    ncf__scored *heap, *hs;
} ncf__rank_buf;

static int ncf__rank_buf_alloc(ncf__rank_buf *b, const ncf_model *m, int ncand, int kmax, int items)
{
    memset(b, 0, sizeof *b);
    if (m) b->have_e = ncf__eval_buf_alloc(&b->e, m, ncf__eval_chunk(m, ncand));
    b->cand = NCF__NEW(int32_t, ncand), b->sc = NCF__NEW(float, ncand);
    b->heap = NCF__NEW(ncf__scored, kmax), b->hs = NCF__NEW(ncf__scored, items ? items : 1);
    return (!m || b->have_e) && b->cand && b->sc && b->heap && b->hs;
}

static void ncf__rank_buf_free(ncf__rank_buf *b)
{
    if (b->have_e) ncf__eval_buf_free(&b->e);
    NCF_FREE(b->cand), NCF_FREE(b->sc), NCF_FREE(b->heap), NCF_FREE(b->hs);
}

/* User u's ranking g for the target: scored by the model (proj its projection), or by pop. */
static void ncf__rank_user(const ncf_model *m, const float *proj, const float *pop, const ncf_dataset *d,
                           const ncf_eval_opts *o, int ncand, int kmax, int u, ncf__rank_buf *b, ncf__ranking *g)
{
    int64_t nh, no = 0, j0;
    const int32_t *held = ncf__held_list(d, o->target, u, &nh), *other = NULL, *neg = NULL;
    int32_t t, one = -1;
    if (o->target == NCF_EVAL_TEST) other = ncf__held_list(d, NCF_EVAL_VALIDATION, u, &no);
    if (o->full_ranking) {
        if (m)
            for (j0 = 0; j0 < ncand; j0 += ncf__eval_chunk(m, ncand)) { /* (a score does not depend on its chunk) */
                int C = ncf__eval_chunk(m, ncand);
                b->e.sc = b->sc + j0;
                ncf__score_user(m, proj, u, NULL, NULL, (int)j0, ncand - j0 < C ? (int)(ncand - j0) : C, &b->e, j0 > 0);
            }
        else memcpy(b->sc, o->baseline ? o->baseline : pop, sizeof(float) * (size_t)ncand);
        for (j0 = 0; o->cold_only && j0 < ncand; j0++) /* (a non-finite score is no candidate) */
            if (pop[j0] > 0) b->sc[j0] = (float)NAN;
        ncf__rank_full(d, u, held, nh, other, no, b->sc, kmax, b->heap, b->hs, g);
        return;
    }
    t = ncf__held(d, o->target, u, &one, &neg); /* sampled: one item and its negatives */
    b->cand[0] = t;
    memcpy(b->cand + 1, neg, sizeof(int32_t) * (size_t)(ncand - 1));
    if (m)
        for (j0 = 0; j0 < ncand; j0 += ncf__eval_chunk(m, ncand)) {
            int C = ncf__eval_chunk(m, ncand);
            b->e.sc = b->sc + j0;
            ncf__score_user(m, proj, u, NULL, b->cand + j0, 0, ncand - j0 < C ? (int)(ncand - j0) : C, &b->e, j0 > 0);
        }
    else
        for (j0 = 0; j0 < ncand; j0++) b->sc[j0] = (o->baseline ? o->baseline : pop)[b->cand[j0]];
    g->held = 1, g->ntop = 0;
    g->best = NCF__NONFINITE(b->sc[0]) ? NCF__NONFINITE_SCORE : ncf__count_above(d, u, -1, b->cand, ncand, 0, b->sc);
    g->hits = g->best >= 0 && g->best < kmax;
    if (g->hits) g->pos[0] = (int32_t)g->best;
}

static int ncf__at_args(const ncf_model *m, const ncf_dataset *d, const ncf_eval_opts *o, const int *ks, int nk,
                        const ncf_metrics *out, int *kmax)
{
    ncf_eval_opts one;
    int j, rc;
    if (!d || !d->user_ptr || !ks || !out || nk < 1 || nk > NCF_MAX_KS)
        return ncf__fail(NCF_ERR_ARG, "ncf_evaluate_at: need a loaded dataset, 1 to %d cut-offs and outputs",
                         NCF_MAX_KS);
    for (j = 0, *kmax = 1; j < nk; j++) {
        if (ks[j] < 1 || ks[j] > NCF_MAX_K)
            return ncf__fail(NCF_ERR_ARG, "ncf_evaluate_at: cut-off %d: need 1 to %d", ks[j], NCF_MAX_K);
        if (ks[j] > *kmax) *kmax = ks[j];
    }
    one = *o, one.k = ks[0];
    if (m) return ncf__eval_args(m, d, &one, out);
    if (ncf__is_shard(d)) return ncf__fail(NCF_ERR_ARG, "ncf_evaluate (popularity): the dataset is a shard");
    if (d->report.holdout == NCF_HOLDOUT_NONE)
        return ncf__fail(
            NCF_ERR_DATA,
            "ncf_evaluate (popularity): nothing to evaluate: the dataset holds no item out (holdout none)");
    if ((o->target != NCF_EVAL_TEST && o->target != NCF_EVAL_VALIDATION) ||
        (o->full_ranking != 0 && o->full_ranking != 1) || o->max_users < 0)
        return ncf__fail(NCF_ERR_ARG,
                         "ncf_evaluate (popularity): target %d, full_ranking %d or max_users %d is not one "
                         "of its values",
                         o->target, o->full_ranking, o->max_users);
    if (o->target == NCF_EVAL_VALIDATION && !ncf__has_val(d))
        return ncf__fail(NCF_ERR_ARG, "ncf_evaluate (popularity): the dataset has no validation set");
    if ((o->cold_only != 0 && o->cold_only != 1) || (o->cold_only && !o->full_ranking))
        return ncf__fail(NCF_ERR_ARG, "ncf_evaluate (popularity): cold_only %d is 0 or 1, and 1 ranks in full",
                         o->cold_only);
    if (d->test_ptr && !o->full_ranking)
        return ncf__fail(NCF_ERR_ARG,
                         "ncf_evaluate (popularity): a split of many items per user is evaluated by full ranking");
    rc = (o->target == NCF_EVAL_VALIDATION ? d->num_val_neg : d->num_eval_neg) > 0 || o->full_ranking;
    return rc ? NCF_OK : ncf__fail(NCF_ERR_ARG, "ncf_evaluate (popularity): the dataset has no eval negatives");
}

/* The rankings of users [u0, u1) into g[] (g's lists in pos, top: kmax each). */
static int ncf__rank_users(const ncf_model *m, const float *proj, const float *pop, const ncf_dataset *d,
                           const ncf_eval_opts *o, double share, int kmax, int u0, int u1, ncf__ranking *g)
{
    int ncand =
        o->full_ranking ? d->num_items : 1 + (o->target == NCF_EVAL_VALIDATION ? d->num_val_neg : d->num_eval_neg);
    int u, failed = 0;
    NCF__PARALLEL_N(u1 - u0 > 1, ncf__threads() < u1 - u0 ? ncf__threads() : u1 - u0)
    {
        ncf__rank_buf b;
        int ok = ncf__rank_buf_alloc(&b, m, ncand, kmax, d->num_items);
        if (!ok) {
            NCF__OMP(atomic write)
            failed = 1;
        }
        NCF__OMP(for schedule(dynamic, 8))
        for (u = u0; u < u1; u++) {
            g[u - u0].held = -1;
            if (ok && ncf__evaluated(d, o->target, u) && ncf__sampled_user(o, share, u))
                ncf__rank_user(m, proj, pop, d, o, ncand, kmax, u, &b, &g[u - u0]);
        }
        ncf__rank_buf_free(&b);
    }
    return failed ? ncf__fail(NCF_ERR_NOMEM, "out of memory for evaluation buffers") : NCF_OK;
}

NCFDEF int ncf_evaluate_at(const ncf_model *m, const ncf_dataset *d, const ncf_eval_opts *o, const int *ks, int nk,
                           ncf_metrics *out)
{
    const float *proj = NULL;
    float *own = NULL, *pop = NULL;
    double *idcg = NULL, share;
    int32_t *lists = NULL, *first = NULL;
    ncf__ranking *g = NULL;
    int64_t k;
    int rc, kmax = 1, B, u0, u, j;
    ncf_eval_opts dflt = ncf_eval_opts_default();
    if (!o) o = &dflt;
    if ((rc = ncf__at_args(m, d, o, ks, nk, out, &kmax)) != NCF_OK) return rc;
    if (m && NCF__MPI_STALE(m)) return ncf__fail(NCF_ERR_ARG, "ncf_evaluate: " NCF__STALE_TEXT);
    B = ncf__rank_block(kmax);
    pop = NCF__ZNEW(float, d->num_items ? d->num_items : 1), idcg = NCF__NEW(double, (size_t)kmax + 1);
    g = NCF__NEW(ncf__ranking, B), lists = NCF__NEW(int32_t, (size_t)B * 2 * (size_t)kmax);
    first = NCF__NEW(int32_t, d->num_items ? d->num_items : 1);
    if (!pop || !idcg || !g || !lists || !first) {
        rc = ncf__fail(NCF_ERR_NOMEM, "out of memory for evaluation");
        goto done;
    }
    if (m && ((proj = ncf__projection_for(m, &own, &rc)), rc != NCF_OK)) goto done;
    for (k = 0; k < d->num_train; k++) pop[d->items[k]] += 1.0f; /* exact: counts below 2^24 */
    for (j = 0, idcg[0] = 1; j < kmax; j++) idcg[j + 1] = (j ? idcg[j] : 0) + log(2.0) / log((double)j + 2.0);
    for (j = 0; j < d->num_items; j++) first[j] = INT32_MAX;
    for (u = 0; u < B; u++) g[u].pos = lists + (size_t)u * 2 * kmax, g[u].top = g[u].pos + kmax;
    memset(out, 0, sizeof *out * (size_t)nk);
    share = ncf__eval_share(o, ncf__eval_held(d, o->target, 0, d->num_users));
    for (u0 = 0; u0 < d->num_users && rc == NCF_OK; u0 += B) {
        int u1 = d->num_users - u0 < B ? d->num_users : u0 + B;
        if ((rc = ncf__rank_users(m, proj, pop, d, o, share, kmax, u0, u1, g)) != NCF_OK) break;
        for (u = u0; u < u1; u++) { /* summed in user order: the same bits on any threads */
            const ncf__ranking *r = &g[u - u0];
            if (r->held < 0) continue;
            ncf__add_ranking(r, ks, nk, pop, idcg, out);
            for (j = 0; j < r->ntop; j++)
                if (j < first[r->top[j]]) first[r->top[j]] = j;
        }
    }
    for (j = 0; j < nk && rc == NCF_OK; j++) {
        ncf_metrics *x = &out[j];
        double n = x->users ? (double)x->users : 1.0, covered = 0;
        for (u = 0; u < d->num_items; u++) covered += first[u] < ks[j];
        x->k = ks[j];
        x->hr /= n, x->ndcg /= n, x->mrr /= n, x->recall /= n, x->precision /= n, x->map /= n;
        x->popularity = o->full_ranking ? x->popularity / n : 0;
        x->coverage = o->full_ranking && d->num_items ? covered / d->num_items : 0;
    }
done:
    if (rc != NCF_OK && out && nk > 0 && nk <= NCF_MAX_KS) memset(out, 0, sizeof *out * (size_t)nk);
    NCF_FREE(own), NCF_FREE(pop), NCF_FREE(idcg), NCF_FREE(g), NCF_FREE(lists), NCF_FREE(first);
    return rc;
}

NCFDEF int ncf_evaluate(const ncf_model *m, const ncf_dataset *data, const ncf_eval_opts *o, ncf_metrics *out)
{
    ncf_eval_opts d = ncf_eval_opts_default();
    if (!o) o = &d;
    return ncf_evaluate_at(m, data, o, &o->k, 1, out);
}

NCFDEF double ncf_metric_value(const ncf_metrics *m, int metric)
{
    if (!m) return 0;
    switch (metric) {
    case NCF_METRIC_NDCG: return m->ndcg;
    case NCF_METRIC_MRR: return m->mrr;
    case NCF_METRIC_RECALL: return m->recall;
    case NCF_METRIC_PRECISION: return m->precision;
    case NCF_METRIC_MAP: return m->map;
    default: return m->hr;
    }
}

#endif /* NCF_INFERENCE_ONLY */
