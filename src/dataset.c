#ifndef NCF_INFERENCE_ONLY /* the whole stage: a device only serves */
/* ---- >>split: triples to a dataset: filters, hold-outs, validation, negatives, synthetic -- */

static int ncf__cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* Sorts key[0..n) stably by key >> shift0 with tmp[n]: an LSD radix sort, 8 bits a pass,
   only as many passes as the largest key needs. */
static void ncf__radix_sort(uint64_t *key, uint64_t *tmp, size_t n, int shift0)
{
    uint64_t top = 0, *src = key, *dst = tmp, *t;
    size_t b;
    int shift;
    for (b = 0; b < n; b++) top |= key[b] >> shift0;
    for (shift = shift0; shift < 64 && (top >> (shift - shift0)) != 0; shift += 8) {
        size_t count[257] = {0};
        int d;
        for (b = 0; b < n; b++) count[((src[b] >> shift) & 255) + 1]++;
        for (d = 0; d < 256; d++) count[d + 1] += count[d];
        for (b = 0; b < n; b++) dst[count[(src[b] >> shift) & 255]++] = src[b];
        t = src, src = dst, dst = t;
    }
    if (src != key) memcpy(key, src, sizeof *key * n);
}

/* Sorts and removes duplicates; returns the new length. */
static int64_t ncf__sort_unique_i64(int64_t *v, int64_t n)
{
    int64_t i, k = 0;
    ncf__sort(v, (size_t)n, sizeof *v, ncf__cmp_i64);
    for (i = 0; i < n; i++)
        if (k == 0 || v[i] != v[k - 1]) v[k++] = v[i];
    return k;
}

/* Whether every user holding out an item in held[] has n unrated items to draw from. */
static int ncf__negatives_possible(const ncf_dataset *ds, const int32_t *held, int n, const char *what)
{
    int u;
    for (u = 0; u < ds->num_users; u++)
        if (held[u] >= 0 && ncf__num_unrated(ds, u) == 0)
            return ncf__fail(NCF_ERR_DATA,
                             "user %s rated all %d items: none is left to rank the held-out one against "
                             "(drop the user, or hold nothing out)",
                             ncf__user_name(ds, u, 0), ds->num_items);
        else if (held[u] >= 0 && ncf__num_unrated(ds, u) < n)
            return ncf__fail(NCF_ERR_DATA,
                             "user %s rated %lld of %d items: fewer than %d unrated items to use as %s "
                             "negatives (ask for fewer)",
                             ncf__user_name(ds, u, 0), (long long)(ds->num_items - ncf__num_unrated(ds, u)),
                             ds->num_items, n, what);
    return NCF_OK;
}

/* n distinct negatives into neg[(u - lo)*n..] for each user u in [lo, hi) with an item in held[],
   drawn among the items it never rated; r is scratch of 2n per thread (ncf__threads()).
   Allocates nothing. */
static void ncf__draw_negatives(const ncf_dataset *ds, const int32_t *held, int n, uint64_t seed, int64_t *scratch,
                                int lo, int hi, int32_t *neg)
{
    int u, T = ncf__threads();
    (void)T; /* (without OpenMP) */
    NCF__OMP(parallel num_threads(ncf__team_of(1, T)))
    {
        /* ranks drawn with replacement, deduplicated, topped up until n distinct */
        int t = 0;
        int64_t *r;
#ifdef _OPENMP
        t = omp_get_thread_num();
#endif
        r = scratch + (size_t)t * 2 * n;
        NCF__OMP(for schedule(dynamic, 64))
        for (u = lo; u < hi; u++) {
            int64_t have = 0, j, draw = 0, avail = ncf__num_unrated(ds, u);
            if (held[u] < 0) continue;
            while (have < n) {
                while (have < 2 * (int64_t)n)
                    r[have++] = ncf__below(ncf__hash3(seed, (uint64_t)u, (uint64_t)draw++), (uint32_t)avail);
                have = ncf__sort_unique_i64(r, have);
                if (have > n) {
                    /* keep n of them, chosen by draw order rather than by value */
                    for (j = 0; j < have; j++) {
                        int64_t k = j + ncf__below(ncf__hash3(seed, ~(uint64_t)u, (uint64_t)j), (uint32_t)(have - j));
                        int64_t x = r[j];
                        r[j] = r[k];
                        r[k] = x;
                    }
                    have = n;
                }
            }
            for (j = 0; j < n; j++) neg[(size_t)(u - lo) * n + j] = ncf__nth_unrated(ds, u, r[j]);
        }
    }
}

/* ncf_sample_eval_negatives' draw for the users [lo, hi), rows from lo (the others own none). */
static int ncf__eval_negatives(ncf_dataset *ds, int n, uint64_t seed, int lo, int hi)
{
    int32_t *neg;
    int64_t *scratch;
    int rc;
    if ((rc = ncf__negatives_possible(ds, ds->test_item, n, "eval")) != NCF_OK) return rc;
    neg = NCF__NEW(int32_t, (size_t)(hi - lo) * (size_t)n + 1);
    scratch = NCF__NEW(int64_t, (size_t)ncf__threads() * 2 * (size_t)n);
    if (!neg || !scratch) {
        NCF_FREE(neg), NCF_FREE(scratch);
        return ncf__fail(NCF_ERR_NOMEM, "out of memory for %d eval negatives per user", n);
    }
    ncf__draw_negatives(ds, ds->test_item, n, seed ^ NCF__TAG_EVAL, scratch, lo, hi, neg);
    NCF_FREE(scratch);
    NCF_FREE(ds->eval_neg);
    ds->eval_neg = neg;
    ds->num_eval_neg = n;
    return NCF_OK;
}

NCFDEF int ncf_sample_eval_negatives(ncf_dataset *ds, int n, uint64_t seed)
{
    if (!ds || !ds->user_ptr || n <= 0)
        return ncf__fail(NCF_ERR_ARG, "ncf_sample_eval_negatives: need a loaded dataset and n > 0");
    if (ncf__is_shard(ds))
        return ncf__fail(NCF_ERR_ARG,
                         "ncf_sample_eval_negatives: the dataset is a shard; draw them before ncf_mpi_shard");
    if (ds->test_ptr)
        return ncf__fail(NCF_ERR_ARG, "ncf_sample_eval_negatives: a split of many items per user is ranked in full");
    return ncf__eval_negatives(ds, n, seed, 0, ds->num_users);
}

/* ncf_hold_out_validation's work, its negatives drawn for the users [lo, hi) (rows from lo). */
static int ncf__hold_out_val(ncf_dataset *ds, int n, uint64_t seed, int lo, int hi)
{
    int32_t *val, *neg;
    float *vw = NULL;
    int64_t *scratch, w = 0, start = 0;
    int u, rc;
    val = NCF__NEW(int32_t, ds->num_users ? ds->num_users : 1);
    neg = NCF__NEW(int32_t, (size_t)(hi - lo) * (size_t)n + 1);
    scratch = NCF__NEW(int64_t, (size_t)ncf__threads() * 2 * (size_t)n);
    if (ds->weight) vw = NCF__NEW(float, ds->num_users ? ds->num_users : 1);
    if (!val || !neg || !scratch || (ds->weight && !vw)) {
        NCF_FREE(val), NCF_FREE(neg), NCF_FREE(scratch), NCF_FREE(vw);
        return ncf__fail(NCF_ERR_NOMEM, "out of memory for a validation set");
    }
    for (u = 0; u < ds->num_users; u++) { /* a user keeps one training item at least */
        const int32_t *p = ds->items + ds->user_ptr[u];
        int64_t c = ds->user_ptr[u + 1] - ds->user_ptr[u];
        int32_t r = ds->recent_item ? ds->recent_item[u] : -1;
        val[u] = c < 2 ? -1 : r >= 0 ? r : p[ncf__below(ncf__hash3(seed ^ NCF__TAG_VAL, (uint64_t)u, 0), (uint32_t)c)];
    }
    /* moving an item from training to validation leaves the unrated items as they were */
    if ((rc = ncf__negatives_possible(ds, val, n, "validation")) != NCF_OK) {
        NCF_FREE(val), NCF_FREE(neg), NCF_FREE(scratch), NCF_FREE(vw);
        return rc;
    }
    for (u = 0; u < ds->num_users; u++) { /* the training lists without it, in place */
        int64_t k, end = ds->user_ptr[u + 1];
        if (vw) vw[u] = 0;
        for (k = start; k < end; k++)
            if (ds->items[k] != val[u]) {
                if (ds->weight) ds->weight[w] = ds->weight[k];
                ds->items[w++] = ds->items[k];
            } else if (vw) vw[u] = ds->weight[k];
        start = end, ds->user_ptr[u + 1] = w;
    }
    ds->num_train = w;
    ncf__fill_train_user(ds);
    ds->val_item = val, ds->val_weight = vw;
    ncf__draw_negatives(ds, val, n, seed ^ NCF__TAG_VALNEG, scratch, lo, hi, neg);
    NCF_FREE(scratch);
    ds->val_neg = neg;
    ds->num_val_neg = n;
    return NCF_OK;
}

NCFDEF int ncf_hold_out_validation(ncf_dataset *ds, int n, uint64_t seed)
{
    if (!ds || !ds->user_ptr || n <= 0)
        return ncf__fail(NCF_ERR_ARG, "ncf_hold_out_validation: need a loaded dataset and n > 0");
    if (ncf__is_shard(ds))
        return ncf__fail(NCF_ERR_ARG, "ncf_hold_out_validation: the dataset is a shard; hold out before ncf_mpi_shard");
    if (ds->val_item)
        return ncf__fail(NCF_ERR_ARG, "ncf_hold_out_validation: the dataset has a validation set already");
    if (ds->test_ptr)
        return ncf__fail(NCF_ERR_ARG,
                         "ncf_hold_out_validation: a split of many items per user holds its validation "
                         "items out as it loads (ncf_dataset_opts.validation)");
    return ncf__hold_out_val(ds, n, seed, 0, ds->num_users);
}

/* One rating of a user after remapping: sorted by item to collapse duplicates,
   and by (time, seq) to find the latest. seq is the line order within the user. */
typedef struct {
    int32_t item;
    uint32_t seq;
    int64_t time;
} ncf__interaction;

static int ncf__cmp_interaction(const void *a, const void *b)
{
    const ncf__interaction *x = (const ncf__interaction *)a, *y = (const ncf__interaction *)b;
    if (x->item != y->item) return (x->item > y->item) - (x->item < y->item);
    if (x->time != y->time) return (x->time > y->time) - (x->time < y->time);
    return (x->seq > y->seq) - (x->seq < y->seq);
}

static int ncf__later(const ncf__interaction *a, const ncf__interaction *b)
{
    return a->time > b->time || (a->time == b->time && a->seq > b->seq);
}

/* Dense ids in ascending raw order: dense[j] for raw[j], and *raw_out the distinct raw ids.
   Sorting (radix, on a copy) where a hash map would be: every allocation is checked, and
   nothing global is touched, so two threads may load datasets at once. */
static int ncf__indices_of_ids(const int64_t *raw, int64_t n, int32_t *dense, int64_t **raw_out, int *count_out)
{
    uint64_t *v = NCF__NEW(uint64_t, n ? n : 1), *tmp = NCF__NEW(uint64_t, n ? n : 1);
    int64_t j, k = 0;
    if (!v || !tmp) {
        NCF_FREE(v), NCF_FREE(tmp);
        return ncf__fail(NCF_ERR_NOMEM, "out of memory remapping %lld ids", (long long)n);
    }
    for (j = 0; j < n; j++) v[j] = (uint64_t)raw[j];
    ncf__radix_sort(v, tmp, (size_t)n, 0);
    NCF_FREE(tmp);
    for (j = 0; j < n; j++)
        if (k == 0 || v[j] != v[k - 1]) v[k++] = v[j];
    if (k > INT32_MAX) {
        NCF_FREE(v);
        return ncf__fail(NCF_ERR_DATA, "more than 2^31 distinct ids");
    }
    for (j = 0; j < n; j++) /* ids are below 2^62: as int64 they sort the same */
        dense[j] = ncf__find_id((const int64_t *)v, NULL, (int)k, raw[j]);
    if (k < n) { /* give back the room of the duplicates */
        uint64_t *shrunk = (uint64_t *)NCF_REALLOC(v, sizeof *v * (size_t)(k ? k : 1));
        if (shrunk) v = shrunk;
    }
    *raw_out = (int64_t *)v; /* the distinct ids, ascending */
    *count_out = (int)k;
    return NCF_OK;
}

/* Renumbers the ids marked in keep[0..n) densely, in the same order: map[k] is the new index
   or -1; raw[] is compacted alike. Returns how many are kept. */
static int ncf__keep_ids(const uint8_t *keep, int n, int32_t *map, int64_t *raw)
{
    int k, m = 0;
    for (k = 0; k < n; k++) {
        map[k] = keep[k] ? m : -1;
        if (keep[k]) raw[m++] = raw[k];
    }
    return m;
}

/* Which of u's k distinct items (sorted by item) is its test item, or -1. */
static int64_t ncf__pick_held(const ncf__interaction *r, int64_t k, int holdout, uint64_t seed, int u)
{
    int64_t i, last = 0;
    if (holdout == NCF_HOLDOUT_NONE || k < (holdout == NCF__HOLDOUT_SPLIT ? 1 : 2)) return -1;
    if (holdout == NCF_HOLDOUT_RANDOM)
        return ncf__below(ncf__hash3(seed ^ NCF__TAG_HOLDOUT, (uint64_t)u, 0), (uint32_t)k);
    for (i = 1; i < k; i++)
        if (ncf__later(&r[i], &r[last])) last = i;
    return last;
}

/* Positives per item from kept users (cnt_i), and per kept user on kept items (cnt_u), over
   the ranks when the build is distributed. */
static int ncf__count_kept(const int32_t *du, const int32_t *di, const uint8_t *pos, int64_t n, const uint8_t *keep_u,
                           const uint8_t *keep_i, int U, int I, int64_t *cnt_u, int64_t *cnt_i,
                           const ncf__build_opts *bo)
{
    int64_t j;
    int rc;
    memset(cnt_u, 0, sizeof(int64_t) * (size_t)U), memset(cnt_i, 0, sizeof(int64_t) * (size_t)I);
    for (j = 0; j < n; j++)
        if ((!pos || pos[j]) && keep_u[du[j]]) {
            cnt_i[di[j]]++;
            if (keep_i[di[j]]) cnt_u[du[j]]++;
        }
    if ((rc = NCF__REDUCE(bo, cnt_u, U, NCF__SUM_I64)) != NCF_OK) return rc;
    return NCF__REDUCE(bo, cnt_i, I, NCF__SUM_I64);
}

/* Kept users who rated every kept item: dropped, as no item is left to rank their held-out
   one against or to draw as a negative. Only users with as many positives as there are kept
   items can be; their records are gathered in one pass (at[], of n + U + 1) and their distinct
   items marked with the user's stamp (mark[], of I), so a round is O(n). Returns how many. */
static int ncf__drop_users_of_every_item(const int32_t *du, const int32_t *di, const uint8_t *pos, int64_t n, int U,
                                         int I, const int64_t *cnt_u, uint8_t *keep_u, const uint8_t *keep_i,
                                         int32_t *mark, int64_t *at)
{
    int64_t j, kept_items = 0, *start = at + n;
    int u, i, dropped = 0;
    for (i = 0; i < I; i++) kept_items += keep_i[i], mark[i] = -1;
    memset(start, 0, sizeof(int64_t) * ((size_t)U + 1));
    for (j = 0; j < n; j++) /* (a candidate: kept, with at least kept_items positives on kept items) */
        if ((!pos || pos[j]) && keep_i[di[j]] && keep_u[du[j]] && cnt_u[du[j]] >= kept_items) start[du[j] + 1]++;
    for (u = 0; u < U; u++) start[u + 1] += start[u];
    for (j = 0; j < n; j++)
        if ((!pos || pos[j]) && keep_i[di[j]] && keep_u[du[j]] && cnt_u[du[j]] >= kept_items) at[start[du[j]]++] = j;
    for (u = U; u > 0; u--) start[u] = start[u - 1]; /* (the fill moved each start to the next's) */
    start[0] = 0;
    for (u = 0; u < U; u++) {
        int64_t distinct = 0, k;
        for (k = start[u]; k < start[u + 1]; k++)
            if (mark[di[at[k]]] != u) mark[di[at[k]]] = u, distinct++;
        if (start[u + 1] > start[u] && distinct == kept_items) keep_u[u] = 0, dropped++;
    }
    return dropped;
}

#define NCF__FILTER_ROUNDS 64 /* more rounds of the filters than a real log needs (a k-core of ml-20m takes a few) */

/* Which users and items to keep, and the report's counts of what each filter dropped: users
   with positives, at least min_ratings of them; items with at least min_item_ratings from the
   users kept (a user left with none goes too); with kcore, both again until neither drops
   anything; and no user who rated every item kept. cnt: scratch of U, then I, int64. */
static int ncf__filter_ids(const int32_t *du, const int32_t *di, const uint8_t *pos, int64_t n, int U, int I,
                           const ncf__build_opts *bo, int64_t *cnt, uint8_t *keep_u, uint8_t *keep_i, uint8_t *any_i,
                           ncf_load_report *rep)
{
    int64_t j, *cnt_i = NCF__NEW(int64_t, I ? I : 1), *at = NCF__NEW(int64_t, (size_t)n + (size_t)U + 1);
    int32_t *mark = NCF__NEW(int32_t, I ? I : 1);
    int u, i, rc = NCF_OK;
    if (!cnt_i || !mark || !at) rc = ncf__fail(NCF_ERR_NOMEM, "out of memory for %d items' counts", I);
    if ((rc = ncf__build_agree(bo, rc)) != NCF_OK) goto done;
    for (j = 0; j < n; j++)
        if (!pos || pos[j]) cnt[du[j]]++, any_i[di[j]] = 1;
    rep->users_read = U, rep->items_read = I, rep->interactions = n;
    for (j = 0; j < n; j++) rep->below_min_rating += pos && !pos[j];
    if ((rc = NCF__REDUCE(bo, cnt, U, NCF__SUM_I64)) != NCF_OK || (rc = NCF__REDUCE(bo, any_i, I, NCF__ANY_U8)) ||
        (rc = NCF__REDUCE(bo, &rep->interactions, 1, NCF__SUM_I64)) ||
        (rc = NCF__REDUCE(bo, &rep->below_min_rating, 1, NCF__SUM_I64)))
        goto done;
    for (i = 0; i < I; i++) rep->items_below_min_rating += !any_i[i];
    for (u = 0; u < U; u++) {
        keep_u[u] = cnt[u] > 0 && cnt[u] >= bo->min_ratings;
        rep->users_below_min_rating += cnt[u] == 0;
        if (cnt[u] > 0 && !keep_u[u]) rep->users_few_ratings++, rep->few_ratings += cnt[u];
    }
    for (i = 0; i < I; i++) keep_i[i] = any_i[i];
    for (rep->filter_rounds = 1;; rep->filter_rounds++) {
        int64_t dropped = 0;
        if ((rc = ncf__count_kept(du, di, pos, n, keep_u, keep_i, U, I, cnt, cnt_i, bo)) != NCF_OK) break;
        for (i = 0; i < I; i++) /* items only dropped users rated go with them */
            if (keep_i[i] && cnt_i[i] == 0) keep_i[i] = 0, rep->items_few_ratings++;
        if (rep->filter_rounds == 1 || bo->kcore)
            for (i = 0; i < I; i++)
                if (keep_i[i] && cnt_i[i] < bo->min_item_ratings)
                    keep_i[i] = 0, dropped = 1, rep->items_few_item_ratings++, rep->few_item_ratings += cnt_i[i];
        if (dropped && (rc = ncf__count_kept(du, di, pos, n, keep_u, keep_i, U, I, cnt, cnt_i, bo)) != NCF_OK) break;
        for (u = 0; u < U; u++) /* users: a positive left, and (kcore) min_ratings of them */
            if (keep_u[u] && (cnt[u] == 0 || (bo->kcore && cnt[u] < bo->min_ratings)))
                keep_u[u] = 0, dropped = 1, rep->users_filtered_out++;
        if (!dropped) {
            dropped = ncf__drop_users_of_every_item(du, di, pos, n, U, I, cnt, keep_u, keep_i, mark, at);
            if ((rc = NCF__REDUCE(bo, &dropped, 1, NCF__SUM_I64)) != NCF_OK ||
                (rc = NCF__REDUCE(bo, keep_u, U, NCF__ALL_U8)) != NCF_OK)
                break;
            rep->users_every_item += (int)dropped;
        }
        if (!dropped) break;
        if (rep->filter_rounds == NCF__FILTER_ROUNDS) { /* (each round is O(n): a log cannot make them many) */
            rc = ncf__fail(NCF_ERR_DATA,
                           "the filters still drop users and items after %d rounds (each drop leaving "
                           "another user or item under its minimum, or with every item): loosen them",
                           NCF__FILTER_ROUNDS);
            break;
        }
    }
done:
    NCF_FREE(cnt_i), NCF_FREE(mark), NCF_FREE(at);
    return rc;
}

/* A positive's confidence from its strength s (the sum of its lines'). */
static double ncf__confidence(double s, int weighting, double alpha)
{
    return 1 + alpha * (weighting == NCF_WEIGHT_LOG ? log1p(s) : s);
}

/* ds->weight from the strengths of the records kept (gs, by each record's place in its user's
   group); fails, naming the pair, when a confidence passes NCF__MAX_CONFIDENCE. */
static int ncf__fill_weights(ncf_dataset *ds, const ncf__interaction *rec, const int64_t *start, const double *gs,
                             const ncf__build_opts *bo, ncf_load_report *rep)
{
    int u;
    if (!gs) return NCF_OK;
    if (!(ds->weight = NCF__NEW(float, ds->num_train ? ds->num_train : 1)))
        return ncf__fail(NCF_ERR_NOMEM, "out of memory for %lld weights", (long long)ds->num_train);
    rep->weight_min = HUGE_VAL, rep->weight_max = 0;
    for (u = 0; u < ds->num_users; u++) {
        int64_t i, n = ds->user_ptr[u + 1] - ds->user_ptr[u];
        for (i = 0; i < n; i++) {
            double c = ncf__confidence(gs[start[u] + rec[start[u] + i].seq], bo->weighting, bo->alpha);
            if (!(c <= NCF__MAX_CONFIDENCE))
                return ncf__fail(NCF_ERR_DATA,
                                 "a positive's confidence 1 + alpha f(strength) is %g, past %g: lower "
                                 "alpha, or weigh by log",
                                 c, NCF__MAX_CONFIDENCE);
            ds->weight[ds->user_ptr[u] + i] = (float)c;
            if (c < rep->weight_min) rep->weight_min = c;
            if (c > rep->weight_max) rep->weight_max = c;
        }
    }
    if (ds->num_train == 0) rep->weight_min = rep->weight_max = 0;
    return NCF_OK;
}

/* ---- a split of many items per user ---- */
enum { NCF__ROLE_TRAIN = 0, NCF__ROLE_VAL, NCF__ROLE_TEST }; /* a record's place, in this order */

/* A ratio split's order of a user's records: the last are held out. By time (then line) where
   the log has timestamps, else by a key the seed draws. */
typedef struct {
    uint64_t key;
    int64_t time;
    uint32_t seq;
    int32_t at;
} ncf__order;

static int ncf__cmp_order(const void *a, const void *b)
{
    const ncf__order *x = (const ncf__order *)a, *y = (const ncf__order *)b;
    if (x->key != y->key) return (x->key > y->key) - (x->key < y->key);
    if (x->time != y->time) return (x->time > y->time) - (x->time < y->time);
    return (x->seq > y->seq) - (x->seq < y->seq);
}

/* How many of k records a ratio holds out: round(f k), at least 1, leaving 1 (none of k < 2). */
static int64_t ncf__ratio_count(int64_t k, double f)
{
    int64_t m = (int64_t)floor(f * (double)k + 0.5);
    return k < 2 ? 0 : m < 1 ? 1 : m > k - 1 ? k - 1 : m;
}

/* The ratio split's roles of one user's k records (sorted by item), into role[]. */
static void ncf__ratio_roles(const ncf__interaction *r, int64_t k, int u, const ncf__build_opts *bo, int timed,
                             ncf__order *o, uint8_t *role)
{
    int64_t i, m = ncf__ratio_count(k, bo->fraction), v = bo->validation ? ncf__ratio_count(k - m, bo->fraction) : 0;
    for (i = 0; i < k; i++) {
        o[i].key = timed ? 0 : ncf__hash3(bo->seed ^ NCF__TAG_HOLDOUT, (uint64_t)u, (uint64_t)r[i].item);
        o[i].time = r[i].time, o[i].seq = r[i].seq, o[i].at = (int32_t)i;
        role[i] = NCF__ROLE_TRAIN;
    }
    ncf__sort(o, (size_t)k, sizeof *o, ncf__cmp_order);
    for (i = k - m; i < k; i++) role[o[i].at] = NCF__ROLE_TEST;
    for (i = k - m - v; i < k - m; i++) role[o[i].at] = NCF__ROLE_VAL;
}

/* The cold-start split's roles of the items (I of them): round(fraction I) drawn by the seed
   for test, then as large a share of the rest for validation; every record takes its item's. */
static int ncf__item_roles(int I, const ncf__build_opts *bo, uint8_t *role)
{
    ncf__order *o = NCF__NEW(ncf__order, I ? I : 1);
    int64_t i, m = (int64_t)floor(bo->fraction * (double)I + 0.5), v;
    if (!o) return ncf__fail(NCF_ERR_NOMEM, "out of memory for a split of %d items", I);
    v = bo->validation ? (int64_t)floor(bo->fraction * (double)(I - m) + 0.5) : 0;
    for (i = 0; i < I; i++) {
        o[i].key = ncf__hash3(bo->seed ^ NCF__TAG_COLD, (uint64_t)i, 0);
        o[i].time = 0, o[i].seq = (uint32_t)i, o[i].at = (int32_t)i;
        role[i] = NCF__ROLE_TRAIN;
    }
    ncf__sort(o, (size_t)I, sizeof *o, ncf__cmp_order);
    for (i = 0; i < m + v && i < I; i++) role[o[i].at] = i < m ? NCF__ROLE_TEST : NCF__ROLE_VAL;
    NCF_FREE(o);
    return NCF_OK;
}

/* A time split's first held-out timestamps: test's (the cut-off, or the one a fraction of the
   records from the end) and validation's (a fraction of the records before test's from their end;
   INT64_MAX: none). times: the records' times, scratch of n. */
static void ncf__time_cutoffs(uint64_t *times, uint64_t *tmp, int64_t n, const ncf__build_opts *bo, int64_t *test,
                              int64_t *val)
{
    int64_t before = 0, j;
    for (j = 0; j < n; j++) times[j] ^= (uint64_t)1 << 63; /* (signed order as unsigned) */
    ncf__radix_sort(times, tmp, (size_t)n, 0);
    for (j = 0; j < n; j++) times[j] ^= (uint64_t)1 << 63;
    if (bo->holdout == NCF_HOLDOUT_CUTOFF) *test = bo->cutoff;
    else {
        j = (int64_t)floor((1 - bo->fraction) * (double)n);
        *test = (int64_t)times[j < n ? j : n - 1];
    }
    while (before < n && (int64_t)times[before] < *test) before++;
    j = (int64_t)floor((1 - bo->fraction) * (double)before);
    *val = bo->validation && before > 0 ? (int64_t)times[j < before ? j : before - 1] : INT64_MAX;
}

/* Holds out many records per user (NCF_HOLDOUT_RATIO, _TIME, _CUTOFF; _SAVED: a record's time
   is its role): each user's k[u] records at rec + start[u] are put in the order training,
   validation, test (each ascending by item), k[u] becoming its training count and nv[u], nt[u]
   the others'. A user left with validation records but none to train on trains on them; one
   left with test records only keeps them, counted, and is not evaluated. */
static int ncf__hold_out_many(ncf__interaction *rec, const int64_t *start, int64_t *k, int64_t *nv, int64_t *nt, int U,
                              int I, int timed, const ncf__build_opts *bo, ncf_load_report *rep)
{
    int64_t most = 1, total = 0, j, tcut = 0, vcut = INT64_MAX;
    ncf__order *o = NULL;
    ncf__interaction *tmp = NULL;
    uint8_t *role = NULL, *trained = NULL, *held = NULL, *item_role = NULL;
    uint64_t *times = NULL, *scratch = NULL;
    int u, i, rc = NCF_OK, whole = bo->holdout == NCF_HOLDOUT_ITEMS;
    if (bo->holdout != NCF_HOLDOUT_RATIO && !whole && !timed)
        return ncf__fail(NCF_ERR_ARG, "a time split needs a timestamp column, and the log has none");
    if (bo->holdout == NCF_HOLDOUT_SAVED) tcut = NCF__ROLE_TEST, vcut = NCF__ROLE_VAL; /* (a line's time is its role) */
    for (u = 0; u < U; u++) total += k[u], most = k[u] > most ? k[u] : most;
    o = NCF__NEW(ncf__order, most), tmp = NCF__NEW(ncf__interaction, most), role = NCF__NEW(uint8_t, most);
    trained = NCF__ZNEW(uint8_t, I ? I : 1), held = NCF__ZNEW(uint8_t, I ? I : 1);
    if (bo->holdout == NCF_HOLDOUT_TIME || bo->holdout == NCF_HOLDOUT_CUTOFF)
        times = NCF__NEW(uint64_t, total ? total : 1), scratch = NCF__NEW(uint64_t, total ? total : 1);
    if (whole && (!(item_role = NCF__NEW(uint8_t, I ? I : 1)) || (rc = ncf__item_roles(I, bo, item_role)) != NCF_OK)) {
        if (!item_role) rc = ncf__fail(NCF_ERR_NOMEM, "out of memory for a split of %d items", I);
        goto done;
    }
    if (!o || !tmp || !role || !trained || !held ||
        ((bo->holdout == NCF_HOLDOUT_TIME || bo->holdout == NCF_HOLDOUT_CUTOFF) && (!times || !scratch))) {
        rc = ncf__fail(NCF_ERR_NOMEM, "out of memory for a split of %lld positives", (long long)total);
        goto done;
    }
    if (times) {
        for (u = 0, j = 0; u < U; u++)
            for (i = 0; i < k[u]; i++) times[j++] = (uint64_t)rec[start[u] + i].time;
        if (total) ncf__time_cutoffs(times, scratch, total, bo, &tcut, &vcut);
        rep->cutoff = tcut, rep->validation_cutoff = vcut == INT64_MAX ? 0 : vcut;
    }
    for (u = 0; u < U; u++) {
        ncf__interaction *r = rec + start[u];
        int64_t c[3] = {0, 0, 0}, at[3];
        int g;
        if (bo->holdout == NCF_HOLDOUT_RATIO) ncf__ratio_roles(r, k[u], u, bo, timed, o, role);
        else if (whole)
            for (i = 0; i < k[u]; i++) role[i] = item_role[r[i].item];
        else
            for (i = 0; i < k[u]; i++)
                role[i] = r[i].time >= tcut ? NCF__ROLE_TEST : r[i].time >= vcut ? NCF__ROLE_VAL : NCF__ROLE_TRAIN;
        for (i = 0; i < k[u]; i++) c[role[i]]++;
        if (!whole && !c[NCF__ROLE_TRAIN] && c[NCF__ROLE_VAL]) /* (a user to evaluate has something to train on;
                                                                  a cold item's records stay held out whole) */
            for (i = 0; i < k[u]; i++)
                if (role[i] == NCF__ROLE_VAL) role[i] = NCF__ROLE_TRAIN;
        if (!whole && !c[NCF__ROLE_TRAIN] && c[NCF__ROLE_VAL])
            c[NCF__ROLE_TRAIN] = c[NCF__ROLE_VAL], c[NCF__ROLE_VAL] = 0;
        if (!c[NCF__ROLE_TRAIN] && c[NCF__ROLE_TEST]) /* (kept in the split, not evaluated) */
            rep->users_only_held_out++, rep->only_held_out += c[NCF__ROLE_TEST];
        for (g = 0, j = 0; g < 3; g++) at[g] = j, j += c[g];
        for (i = 0; i < k[u]; i++) { /* a stable partition by role */
            tmp[at[role[i]]++] = r[i];
            if (role[i] == NCF__ROLE_TRAIN) trained[r[i].item] = 1;
            else held[r[i].item] = 1;
        }
        memcpy(r, tmp, sizeof *r * (size_t)k[u]);
        k[u] = c[NCF__ROLE_TRAIN], nv[u] = c[NCF__ROLE_VAL], nt[u] = c[NCF__ROLE_TEST];
        rep->validation_interactions += nv[u], rep->test_interactions += nt[u];
    }
    for (i = 0; i < I; i++) rep->items_only_held_out += held[i] && !trained[i];
    for (u = 0, j = 0; u < U; u++) j += k[u];
    if (total && !j) /* (said here, where the reason is known: not by the sampler, later) */
        rc = ncf__fail(NCF_ERR_DATA,
                       "the %s split holds every one of the %lld positives out: nothing is left to train on (hold "
                       "out a smaller share, or cut later)",
                       bo->holdout == NCF_HOLDOUT_RATIO       ? "ratio"
                           : whole                            ? "items"
                           : bo->holdout == NCF_HOLDOUT_SAVED ? "saved"
                                                              : "time",
                       (long long)total);
done:
    NCF_FREE(o), NCF_FREE(tmp), NCF_FREE(role), NCF_FREE(trained), NCF_FREE(held), NCF_FREE(times), NCF_FREE(scratch);
    NCF_FREE(item_role);
    return rc;
}

/* The held-out lists of a many-item split from the records ncf__hold_out_many ordered. */
static int ncf__fill_many(ncf_dataset *ds, const ncf__interaction *rec, const int64_t *start, const int64_t *nv,
                          const int64_t *nt, const double *gs, const ncf__build_opts *bo)
{
    int64_t tv = 0, tt = 0, i, tr;
    int u;
    for (u = 0; u < ds->num_users; u++) tv += nv[u], tt += nt[u], ds->test_item[u] = -1;
    ds->test_ptr = NCF__NEW(int64_t, (size_t)ds->num_users + 1), ds->test_items = NCF__NEW(int32_t, tt ? tt : 1);
    if (bo->validation) {
        ds->val_ptr = NCF__NEW(int64_t, (size_t)ds->num_users + 1), ds->val_items = NCF__NEW(int32_t, tv ? tv : 1);
        if (gs) ds->val_weight = NCF__NEW(float, tv ? tv : 1);
    }
    if (!ds->test_ptr || !ds->test_items ||
        (bo->validation && (!ds->val_ptr || !ds->val_items || (gs && !ds->val_weight))))
        return ncf__fail(NCF_ERR_NOMEM, "out of memory for %lld held-out positives", (long long)(tv + tt));
    ds->test_ptr[0] = 0;
    if (ds->val_ptr) ds->val_ptr[0] = 0;
    for (u = 0; u < ds->num_users; u++) {
        const ncf__interaction *r = rec + start[u];
        tr = ds->user_ptr[u + 1] - ds->user_ptr[u];
        for (i = 0; i < nt[u]; i++) ds->test_items[ds->test_ptr[u] + i] = r[tr + nv[u] + i].item;
        ds->test_ptr[u + 1] = ds->test_ptr[u] + nt[u];
        if (!ds->val_ptr) continue;
        for (i = 0; i < nv[u]; i++) {
            ds->val_items[ds->val_ptr[u] + i] = r[tr + i].item;
            if (gs)
                ds->val_weight[ds->val_ptr[u] + i] =
                    (float)ncf__confidence(gs[start[u] + r[tr + i].seq], bo->weighting, bo->alpha);
        }
        ds->val_ptr[u + 1] = ds->val_ptr[u] + nv[u];
    }
    return NCF_OK;
}

/* ncf__build's working arrays, freed together. */
typedef struct {
    int32_t *du, *di;       /* each line's user and item index, -1 once dropped */
    int64_t *raw_u, *raw_i; /* the indices' ids (NULL: the ids are the indices) */
    int U, I;               /* users and items kept */
    int64_t *start, *kept;  /* [U + 1] each user's first record; how many it keeps */
    ncf__interaction *rec;  /* the positives, grouped by user */
    double *gs;             /* each record's strength, with a weighting */
    int32_t *test, *recent; /* [U] the held-out item; the latest kept one (timestamps) */
    int64_t *nv, *nt;       /* many held out a user: its validation and test counts */
} ncf__building;

static void ncf__building_free(ncf__building *b)
{
    NCF_FREE(b->du);
    NCF_FREE(b->di);
    NCF_FREE(b->raw_u);
    NCF_FREE(b->raw_i);
    NCF_FREE(b->start);
    NCF_FREE(b->kept);
    NCF_FREE(b->rec);
    NCF_FREE(b->gs);
    NCF_FREE(b->test);
    NCF_FREE(b->recent);
    NCF_FREE(b->nv);
    NCF_FREE(b->nt);
}

/* Why the filters left no user. */
static int ncf__no_user_left(int64_t n, const ncf__build_opts *bo, const ncf_load_report *rep)
{
    if (rep->below_min_rating == n)
        return ncf__fail(NCF_ERR_DATA, "no interaction is a positive (rated at least min_rating, of an event listed)");
    if (rep->users_every_item)
        return ncf__fail(NCF_ERR_DATA,
                         "no user is left who did not rate every item left (%d dropped so): nothing to "
                         "rank or draw as a negative",
                         rep->users_every_item);
    if (rep->users_filtered_out || rep->items_few_item_ratings)
        return ncf__fail(NCF_ERR_DATA, "no user is left by the filters (min_ratings %d, min_item_ratings %d%s)",
                         bo->min_ratings, bo->min_item_ratings, bo->kcore ? ", kcore" : "");
    return ncf__fail(NCF_ERR_DATA, "no user has at least %d ratings", bo->min_ratings);
}

/* Stage 1: each line's user and item as indices (b->du, b->di), ids in ascending raw order,
   the filters applied: a dropped line's are -1. */
static int ncf__build_filter(ncf__building *b, int64_t n, int U0, int I0, const ncf__build_opts *bo,
                             ncf_load_report *rep);

static int ncf__build_ids(ncf__building *b, const int64_t *users, const int64_t *items, int64_t n,
                          const ncf__build_opts *bo, ncf_load_report *rep)
{
    int64_t j;
    int U0, I0, rc = NCF_OK;
    b->du = NCF__NEW(int32_t, n), b->di = NCF__NEW(int32_t, n);
    if (!b->du || !b->di) return ncf__fail(NCF_ERR_NOMEM, "out of memory for %lld ratings", (long long)n);
    for (j = 0; j < n; j++)
        if (users[j] < 0 || items[j] < 0 || users[j] >= NCF__MAX_RAW_ID || items[j] >= NCF__MAX_RAW_ID)
            return ncf__fail(NCF_ERR_DATA, "triple %lld (from 0): id outside [0, 2^62) (user %lld, item %lld)",
                             (long long)j, (long long)users[j], (long long)items[j]);
    if (bo->fixed_users > 0) {
        for (j = 0; j < n; j++) {
            if (users[j] >= bo->fixed_users || items[j] >= bo->fixed_items)
                return ncf__fail(NCF_ERR_DATA, "triple %lld (from 0): id out of range", (long long)j);
            b->du[j] = (int32_t)users[j], b->di[j] = (int32_t)items[j];
        }
        b->U = bo->fixed_users, b->I = bo->fixed_items;
        rep->users_read = b->U, rep->items_read = b->I, rep->interactions = n;
        return NCF_OK;
    }
    if ((rc = ncf__indices_of_ids(users, n, b->du, &b->raw_u, &U0)) != NCF_OK) return rc;
    if ((rc = ncf__indices_of_ids(items, n, b->di, &b->raw_i, &I0)) != NCF_OK) return rc;
    return ncf__build_filter(b, n, U0, I0, bo, rep);
}

/* Stage 1's filters on the lines' indices b->du, b->di into the U0 users and I0 items read
   (b->raw_u, b->raw_i their ids): the users and items kept renumbered in the same order, a
   dropped line's indices -1. */
static int ncf__build_filter(ncf__building *b, int64_t n, int U0, int I0, const ncf__build_opts *bo,
                             ncf_load_report *rep)
{
    int32_t *map_u = NULL, *map_i = NULL;
    int64_t *cnt = NULL, j;
    uint8_t *keep_u = NULL, *keep_i = NULL, *any_i = NULL;
    const uint8_t *pos = bo->positive;
    int rc = NCF_OK;
    cnt = NCF__ZNEW(int64_t, U0), keep_u = NCF__ZNEW(uint8_t, U0), map_u = NCF__NEW(int32_t, U0);
    keep_i = NCF__ZNEW(uint8_t, I0), any_i = NCF__ZNEW(uint8_t, I0), map_i = NCF__NEW(int32_t, I0);
    if (!cnt || !keep_u || !map_u || !keep_i || !any_i || !map_i) rc = ncf__fail(NCF_ERR_NOMEM, "out of memory");
    if ((rc = ncf__build_agree(bo, rc)) == NCF_OK)
        rc = ncf__filter_ids(b->du, b->di, pos, n, U0, I0, bo, cnt, keep_u, keep_i, any_i, rep);
    if (rc == NCF_OK) {
        b->U = ncf__keep_ids(keep_u, U0, map_u, b->raw_u);
        b->I = ncf__keep_ids(keep_i, I0, map_i, b->raw_i);
        if (b->U == 0) rc = ncf__no_user_left(rep->interactions, bo, rep);
    }
    for (j = 0; rc == NCF_OK && j < n; j++) {
        int ok = (!pos || pos[j]) && keep_u[b->du[j]] && keep_i[b->di[j]];
        b->du[j] = ok ? map_u[b->du[j]] : -1, b->di[j] = ok ? map_i[b->di[j]] : -1;
    }
    NCF_FREE(cnt);
    NCF_FREE(keep_u);
    NCF_FREE(keep_i);
    NCF_FREE(any_i);
    NCF_FREE(map_u);
    NCF_FREE(map_i);
    return rc;
}

/* Stage 2: the positives grouped by user in file order (a counting sort), with their
   strengths. */
static int ncf__build_group(ncf__building *b, const int64_t *times, int64_t n, const ncf__build_opts *bo)
{
    const uint8_t *pos = bo->positive;
    int64_t *fill, j;
    int u, U = b->U;
    b->start = NCF__ZNEW(int64_t, (size_t)U + 1), fill = NCF__NEW(int64_t, (size_t)U + 1);
    b->kept = NCF__ZNEW(int64_t, (size_t)U + 1), b->test = NCF__NEW(int32_t, U);
    if (bo->holdout == NCF_HOLDOUT_LATEST) b->recent = NCF__NEW(int32_t, U);
    if (!b->start || !fill || !b->kept || !b->test || (bo->holdout == NCF_HOLDOUT_LATEST && !b->recent)) {
        NCF_FREE(fill);
        return ncf__fail(NCF_ERR_NOMEM, "out of memory");
    }
    for (j = 0; j < n; j++)
        if (b->du[j] >= 0 && (!pos || pos[j])) b->start[b->du[j] + 1]++;
    for (u = 0; u < U; u++) b->start[u + 1] += b->start[u];
    b->rec = NCF__NEW(ncf__interaction, b->start[U] ? b->start[U] : 1);
    if (bo->strength) b->gs = NCF__NEW(double, b->start[U] ? b->start[U] : 1);
    if (!b->rec || (bo->strength && !b->gs)) {
        NCF_FREE(fill);
        return ncf__fail(NCF_ERR_NOMEM, "out of memory for %lld ratings", (long long)n);
    }
    memcpy(fill, b->start, sizeof(int64_t) * ((size_t)U + 1));
    for (j = 0; j < n; j++) {
        int32_t du = b->du[j];
        if (du < 0 || (pos && !pos[j])) continue;
        if (b->gs) b->gs[fill[du]] = bo->strength[j];
        b->rec[fill[du]].item = b->di[j];
        b->rec[fill[du]].seq = (uint32_t)(fill[du] - b->start[du]);
        b->rec[fill[du]].time = times ? times[j] : j;
        fill[du]++;
    }
    NCF_FREE(fill);
    return NCF_OK;
}

/* Stage 3, per user: duplicate items merged (the latest kept, the strengths summed), one held
   out; the latest of the rest is what a validation set takes. */
static void ncf__build_hold_out(ncf__building *b, const ncf__build_opts *bo, ncf_load_report *rep)
{
    int64_t dups = 0;
    int u, many = NCF__MANY(bo->holdout);
    NCF__OMP(parallel for schedule(dynamic, 256) reduction(+:dups) num_threads(ncf__team(1)))
    for (u = 0; u < b->U; u++) {
        ncf__interaction *r = b->rec + b->start[u];
        int64_t c = b->start[u + 1] - b->start[u], k = 0, i, held;
        b->test[u] = -1;
        if (b->recent) b->recent[u] = -1;
        if (c == 0) continue;
        ncf__sort(r, (size_t)c, sizeof *r, ncf__cmp_interaction);
        for (i = 0; i < c; i++) {
            if (k > 0 && r[k - 1].item == r[i].item) { /* later duplicate wins */
                if (b->gs) b->gs[b->start[u] + r[i].seq] += b->gs[b->start[u] + r[k - 1].seq];
                r[k - 1] = r[i];
            } else r[k++] = r[i];
        }
        dups += c - k;
        held = ncf__pick_held(r, k, many ? NCF_HOLDOUT_NONE : bo->holdout, bo->seed, u);
        if (held >= 0) {
            b->test[u] = r[held].item;
            memmove(r + held, r + held + 1, sizeof *r * (size_t)(k - held - 1));
            k--;
        }
        b->kept[u] = k;
        if (b->recent) {
            int64_t q = -1;
            for (i = 0; i < k; i++)
                if (q < 0 || ncf__later(&r[i], &r[q])) q = i;
            b->recent[u] = q < 0 ? -1 : r[q].item;
        }
    }
    rep->duplicates = dups;
    rep->holdout = bo->holdout == NCF__HOLDOUT_SPLIT ? NCF_HOLDOUT_PAPER : bo->holdout;
}

/* Stage 4: the dataset from the records kept (freed by the caller on failure). */
static int ncf__build_fill(ncf_dataset *ds, ncf__building *b, const ncf__build_opts *bo, ncf_load_report *rep)
{
    int64_t total = 0;
    int u, U = b->U, rc;
    ds->num_users = U;
    ds->num_items = b->I;
    for (u = 0; u < U; u++) total += b->kept[u];
    ds->num_train = total;
    if ((rc = ncf__dataset_alloc(ds)) != NCF_OK) return rc;
    for (u = 0; u < U; u++) ds->user_ptr[u + 1] = ds->user_ptr[u] + b->kept[u];
    NCF__OMP(parallel for schedule(static) num_threads(ncf__team(1)))
    for (u = 0; u < U; u++) {
        int64_t i;
        for (i = 0; i < b->kept[u]; i++) ds->items[ds->user_ptr[u] + i] = b->rec[b->start[u] + i].item;
    }
    memcpy(ds->test_item, b->test, sizeof(int32_t) * (size_t)U);
    ds->recent_item = b->recent, b->recent = NULL;
    for (u = 0; u < U; u++) ds->raw_user[u] = b->raw_u ? b->raw_u[u] : u;
    for (u = 0; u < b->I; u++) ds->raw_item[u] = b->raw_i ? b->raw_i[u] : u;
    ncf__fill_train_user(ds);
    if ((rc = ncf__fill_weights(ds, b->rec, b->start, b->gs, bo, rep)) != NCF_OK) return rc;
    if (NCF__MANY(bo->holdout) && (rc = ncf__fill_many(ds, b->rec, b->start, b->nv, b->nt, b->gs, bo)) != NCF_OK)
        return rc;
    if (bo->report) {
        memcpy(rep->sep, bo->report->sep, sizeof rep->sep), rep->header = bo->report->header;
        memcpy(rep->columns, bo->report->columns, sizeof rep->columns);
        memcpy(rep->text_ids, bo->report->text_ids, sizeof rep->text_ids);
        memcpy(rep->blank_edged_ids, bo->report->blank_edged_ids, sizeof rep->blank_edged_ids);
        rep->nonpositive_ratings = bo->report->nonpositive_ratings, rep->event_kinds = bo->report->event_kinds;
        memcpy(rep->events, bo->report->events, sizeof rep->events);
        rep->other_event_lines = bo->report->other_event_lines, rep->events_dropped = bo->report->events_dropped;
        rep->below_min_rating -= rep->events_dropped; /* (those two filters counted apart) */
    }
    ds->report = *rep;
    return NCF_OK;
}

/* Stages 2 to 4 after stage 1: the dataset (empty on failure). */
static int ncf__build_rest(ncf_dataset *ds, ncf__building *b, const int64_t *times, int64_t n,
                           const ncf__build_opts *bo, ncf_load_report *rep)
{
    int rc;
    if ((rc = ncf__build_group(b, times, n, bo)) != NCF_OK) return rc;
    ncf__build_hold_out(b, bo, rep);
    if (NCF__MANY(bo->holdout)) {
        b->nv = NCF__ZNEW(int64_t, (size_t)b->U + 1), b->nt = NCF__ZNEW(int64_t, (size_t)b->U + 1);
        rc = !b->nv || !b->nt
            ? ncf__fail(NCF_ERR_NOMEM, "out of memory")
            : ncf__hold_out_many(b->rec, b->start, b->kept, b->nv, b->nt, b->U, b->I, times != NULL, bo, rep);
    }
    if (rc == NCF_OK && (rc = ncf__build_fill(ds, b, bo, rep)) != NCF_OK) ncf_dataset_free(ds);
    return rc;
}

/* The whole preprocessing after parsing, in the four stages above: ids remapped in ascending
   raw order (as TF's NCF does), positives only, users under min_ratings dropped, duplicates
   merged (the later line wins; their strengths add), one item per user held out. */
static int ncf__build(ncf_dataset *ds, const int64_t *users, const int64_t *items, const int64_t *times, int64_t n,
                      const ncf__build_opts *bo)
{
    ncf__building b;
    ncf_load_report rep;
    int rc;
    memset(ds, 0, sizeof *ds);
    memset(&b, 0, sizeof b);
    memset(&rep, 0, sizeof rep);
    if (n <= 0) return ncf__fail(NCF_ERR_DATA, "no ratings");
    if ((rc = ncf__build_ids(&b, users, items, n, bo, &rep)) == NCF_OK)
        rc = ncf__build_rest(ds, &b, times, n, bo, &rep);
    ncf__building_free(&b);
    return rc;
}

NCFDEF int ncf_dataset_from_triples(ncf_dataset *ds, const int64_t *users, const int64_t *items,
                                    const int64_t *timestamps, int64_t n, int min_ratings)
{
    ncf__build_opts bo;
    if (!ds || !users || !items || n < 0 || min_ratings < 0)
        return ncf__fail(NCF_ERR_ARG, "ncf_dataset_from_triples: NULL array, negative count or negative min_ratings");
    memset(&bo, 0, sizeof bo);
    bo.min_ratings = min_ratings, bo.holdout = NCF_HOLDOUT_LATEST;
    return ncf__build(ds, users, items, timestamps, n, &bo);
}

/* ncf_synthetic's users: 2 interactions each, the rest handed out by Pareto(1.5) weights and
   capped at cap (what the cap turns away is spread again); each user's taste cluster. */
static void ncf__synth_users(ncf__rng *rng, int U, int64_t interactions, int rank, int cap, double *w, int32_t *ucl,
                             int64_t *cnt)
{
    int64_t rest = interactions - 2 * (int64_t)U;
    int u;
    for (u = 0; u < U; u++) {
        w[u] = pow(1.0 - ncf__uniform(ncf__next(rng)), -1.0 / 1.5);
        ucl[u] = (int32_t)ncf__below(ncf__next(rng), (uint32_t)rank);
        cnt[u] = 2;
    }
    while (rest > 0) {
        double live = 0;
        int64_t given = 0;
        for (u = 0; u < U; u++)
            if (cnt[u] < cap) live += w[u];
        for (u = 0; u < U && given < rest; u++) {
            int64_t add;
            if (cnt[u] >= cap) continue;
            add = (int64_t)((double)rest * w[u] / live);
            if (add < 1) add = ncf__uniform(ncf__next(rng)) < (double)rest * w[u] / live;
            if (add > cap - cnt[u]) add = cap - cnt[u];
            if (add > rest - given) add = rest - given;
            cnt[u] += add;
            given += add;
        }
        rest -= given;
    }
}

/* Its items: popularity ~ 1/(r+10)^0.8 over a random order r, a cluster each; order[] lists
   the items cluster by cluster (cluster c from cstart[c]); cdf and ccdf are the running
   popularity in item order and in that order. */
static int ncf__synth_items(ncf__rng *rng, int I, int rank, int32_t *perm, double *pop, int32_t *icl, int32_t *cstart,
                            int32_t *order, double *cdf, double *ccdf)
{
    int32_t *f = NCF__NEW(int32_t, rank);
    int i, c;
    if (!f) return ncf__fail(NCF_ERR_NOMEM, "ncf_synthetic: out of memory");
    for (i = 0; i < I; i++) perm[i] = i;
    for (i = I - 1; i > 0; i--) {
        int k = (int)ncf__below(ncf__next(rng), (uint32_t)(i + 1)), t = perm[i];
        perm[i] = perm[k], perm[k] = t;
    }
    for (i = 0; i < I; i++) {
        pop[i] = pow(perm[i] + 10.0, -0.8);
        icl[i] = (int32_t)ncf__below(ncf__next(rng), (uint32_t)rank);
        cstart[icl[i] + 1]++;
    }
    for (c = 0; c < rank; c++) cstart[c + 1] += cstart[c];
    memcpy(f, cstart, sizeof(int32_t) * (size_t)rank);
    for (i = 0; i < I; i++) order[f[icl[i]]++] = i;
    NCF_FREE(f);
    for (i = 0; i < I; i++) {
        cdf[i] = pop[i] + (i ? cdf[i - 1] : 0);
        ccdf[i] = pop[order[i]] + (i ? ccdf[i - 1] : 0); /* running over clusters in order */
    }
    return NCF_OK;
}

/* The first index in [a, b] whose running sum reaches t (b when none does). */
static int64_t ncf__cdf_find(const double *cdf, int64_t a, int64_t b, double t)
{
    while (a < b) {
        int64_t m = (a + b) / 2;
        if (cdf[m] < t) a = m + 1;
        else b = m;
    }
    return a;
}

/* User u's distinct items, ascending, into it[]: 7 in 10 draws from its own cluster, the rest
   by popularity, until it has want of them (or 64 want draws ran). Returns how many. */
static int64_t ncf__synth_user_items(uint64_t seed, int u, int64_t want, int cl, int num_items, const int32_t *cstart,
                                     const int32_t *order, const double *cdf, const double *ccdf, int32_t *it)
{
    int64_t have = 0, draw = 0, k;
    double lo = cstart[cl] ? ccdf[cstart[cl] - 1] : 0.0, hi = ccdf[cstart[cl + 1] - 1];
    int own_ok = cstart[cl + 1] > cstart[cl];
    while (have < want && draw < 64 * want) {
        int64_t q = 0;
        while (have < want) {
            uint64_t x = ncf__hash3(seed ^ NCF__TAG_SYNTH, (uint64_t)u, (uint64_t)draw++);
            double r = ncf__uniform(ncf__mix64(x));
            if (own_ok && ncf__below(x, 10) < 7) /* own cluster */
                it[have++] = order[ncf__cdf_find(ccdf, cstart[cl], cstart[cl + 1] - 1, lo + r * (hi - lo))];
            else it[have++] = (int32_t)ncf__cdf_find(cdf, 0, num_items - 1, r * cdf[num_items - 1]);
        }
        ncf__sort(it, (size_t)have, sizeof *it, ncf__cmp_i32); /* sort and dedupe */
        for (k = 0; k < have; k++)
            if (q == 0 || it[q - 1] != it[k]) it[q++] = it[k];
        have = q;
    }
    return have;
}

/* The dataset of each user's items buf + off[u] (got[u] of them): one at random is its test
   item, the rest train. */
static int ncf__synth_split(ncf_dataset *ds, uint64_t seed, int num_users, int num_items, const int32_t *buf,
                            const int64_t *off, const int64_t *got)
{
    int64_t total = 0;
    int u, i, rc;
    for (u = 0; u < num_users; u++) total += got[u] - 1;
    ds->num_users = num_users;
    ds->num_items = num_items;
    ds->num_train = total;
    if ((rc = ncf__dataset_alloc(ds)) != NCF_OK) return rc;
    for (u = 0; u < num_users; u++) ds->user_ptr[u + 1] = ds->user_ptr[u] + got[u] - 1;
    NCF__OMP(parallel for schedule(static) num_threads(ncf__team(1)))
    for (u = 0; u < num_users; u++) {
        const int32_t *it = buf + off[u];
        int64_t t = ncf__below(ncf__hash3(seed ^ NCF__TAG_SYNTH, ~(uint64_t)u, 0), (uint32_t)got[u]), k, q = 0;
        ds->test_item[u] = it[t];
        for (k = 0; k < got[u]; k++)
            if (k != t) ds->items[ds->user_ptr[u] + q++] = it[k];
        ds->raw_user[u] = u;
    }
    for (i = 0; i < num_items; i++) ds->raw_item[i] = i;
    ncf__fill_train_user(ds);
    return NCF_OK;
}

NCFDEF int ncf_synthetic(ncf_dataset *ds, int num_users, int num_items, int64_t interactions, int rank, uint64_t seed)
{
    double *w = NULL, *pop = NULL, *cdf = NULL, *ccdf = NULL;
    int32_t *ucl = NULL, *icl = NULL, *order = NULL, *cstart = NULL, *perm = NULL, *buf = NULL;
    int64_t *cnt = NULL, *off = NULL, *got = NULL;
    int u, rc = NCF_OK, cap = num_items / 2;
    ncf__rng rng;

    if (!ds) return ncf__fail(NCF_ERR_ARG, "ncf_synthetic: NULL dataset");
    memset(ds, 0, sizeof *ds);
    if (num_users <= 0 || num_items < 8 || rank <= 0 || rank > num_items || interactions < 2 * (int64_t)num_users ||
        interactions > (int64_t)num_users * cap)
        return ncf__fail(NCF_ERR_ARG,
                         "ncf_synthetic: need users > 0, items >= 8, 0 < rank <= items and "
                         "2*users <= interactions <= users*items/2 (got %d, %d, %d, %lld)",
                         num_users, num_items, rank, (long long)interactions);
    rng.state = ncf__hash3(seed, NCF__TAG_SYNTH, 0);
    w = NCF__NEW(double, num_users);
    pop = NCF__NEW(double, num_items);
    cdf = NCF__NEW(double, num_items);
    ccdf = NCF__NEW(double, num_items);
    ucl = NCF__NEW(int32_t, num_users);
    icl = NCF__NEW(int32_t, num_items);
    order = NCF__NEW(int32_t, num_items);
    cstart = NCF__ZNEW(int32_t, rank + 1);
    perm = NCF__NEW(int32_t, num_items);
    cnt = NCF__NEW(int64_t, num_users);
    off = NCF__NEW(int64_t, (size_t)num_users + 1);
    got = NCF__NEW(int64_t, num_users);
    if (!w || !pop || !cdf || !ccdf || !ucl || !icl || !order || !cstart || !perm || !cnt || !off || !got) {
        rc = ncf__fail(NCF_ERR_NOMEM, "ncf_synthetic: out of memory");
        goto done;
    }
    ncf__synth_users(&rng, num_users, interactions, rank, cap, w, ucl, cnt);
    if ((rc = ncf__synth_items(&rng, num_items, rank, perm, pop, icl, cstart, order, cdf, ccdf)) != NCF_OK) goto done;
    off[0] = 0;
    for (u = 0; u < num_users; u++) off[u + 1] = off[u] + cnt[u];
    buf = NCF__NEW(int32_t, off[num_users]);
    if (!buf) {
        rc = ncf__fail(NCF_ERR_NOMEM, "ncf_synthetic: out of memory");
        goto done;
    }
    NCF__OMP(parallel for schedule(dynamic, 64) num_threads(ncf__team(1)))
    for (u = 0; u < num_users; u++)
        got[u] = ncf__synth_user_items(seed, u, cnt[u], ucl[u], num_items, cstart, order, cdf, ccdf, buf + off[u]);
    for (u = 0; u < num_users; u++) /* (every user draws two at least: ncf__synth_split holds one out) */
        if (got[u] < 1) {
            rc = ncf__fail(NCF_ERR_DATA, "ncf_synthetic: user %d drew no item", u);
            goto done;
        }
    rc = ncf__synth_split(ds, seed, num_users, num_items, buf, off, got);
done:
    NCF_FREE(w);
    NCF_FREE(pop);
    NCF_FREE(cdf);
    NCF_FREE(ccdf);
    NCF_FREE(ucl);
    NCF_FREE(icl);
    NCF_FREE(order);
    NCF_FREE(cstart);
    NCF_FREE(perm);
    NCF_FREE(cnt);
    NCF_FREE(off);
    NCF_FREE(got);
    NCF_FREE(buf);
    return rc;
}

#endif /* NCF_INFERENCE_ONLY */
