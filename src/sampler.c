#ifndef NCF_INFERENCE_ONLY /* the whole stage: a device only serves */
/* Negatives by rank, the epoch as a keyed permutation. */

NCFDEF int ncf_sampler_init(ncf_sampler *s, const ncf_dataset *data, int num_neg, uint64_t seed)
{
    int u, h = 1;
    if (!s || !data || !data->user_ptr || num_neg < 0 || num_neg > 1000000)
        return ncf__fail(NCF_ERR_ARG, "ncf_sampler_init: need a sampler, a loaded dataset and 0 <= num_neg <= 1000000");
    if (ncf__all_train(data) > ((int64_t)1 << 62) / ((int64_t)num_neg + 1))
        return ncf__fail(NCF_ERR_ARG, "ncf_sampler_init: %lld positives x %d examples each is past 2^62 a epoch",
                         (long long)ncf__all_train(data), num_neg + 1);
    if (ncf__all_train(data) <= 0)
        return ncf__fail(NCF_ERR_DATA, "ncf_sampler_init: the dataset has no training positives");
    if (num_neg > 0)
        for (u = 0; u < data->num_users; u++)
            if (data->user_ptr[u + 1] > data->user_ptr[u] && ncf__num_untrained(data, u) == 0)
                return ncf__fail(NCF_ERR_DATA, "user %s has trained on all %d items: no negative can be drawn",
                                 ncf__user_name(data, u, 0), data->num_items);
    memset(s, 0, sizeof *s);
    s->data = data;
    s->num_neg = num_neg;
    s->seed = seed;
    s->num_examples = ncf__all_train(data) * (1 + num_neg);
    while (h < 62 && ((int64_t)1 << h) < s->num_examples) h++;
    s->bits = h;
    return NCF_OK;
}

/* A keyed permutation of [0, n): a bijection of [0, 2^bits), 2^bits < 2n, cycle-walked
   into [0, n) (under two tries on average). The bijection is a 4-round Feistel network whose
   halves may differ by a bit: they swap widths each round, the a-bit half taking mask[0] in
   rounds 0 and 2 and the b-bit half mask[1] in rounds 1 and 3. */
typedef struct {
    uint64_t key[4], mask[2], n;
    int b;
} ncf__perm;

static ncf__perm ncf__perm_make(int bits, uint64_t key, int64_t n)
{
    ncf__perm f;
    int a = bits / 2, round;
    f.b = bits - a;
    for (round = 0; round < 4; round++) f.key[round] = key ^ ((uint64_t)round << 58);
    f.mask[0] = ((uint64_t)1 << a) - 1, f.mask[1] = ((uint64_t)1 << f.b) - 1, f.n = (uint64_t)n;
    return f;
}

/* The bijection, its rounds written out: a loop that swapped the widths took twice as long. */
static uint64_t ncf__feistel(const ncf__perm *f, uint64_t x)
{
    uint64_t l = x >> f->b, r = x & f->mask[1], t; /* (l, r) -> (r, l ^ F(r)) */
    t = (ncf__mix64(r ^ f->key[0]) & f->mask[0]) ^ l, l = r, r = t;
    t = (ncf__mix64(r ^ f->key[1]) & f->mask[1]) ^ l, l = r, r = t;
    t = (ncf__mix64(r ^ f->key[2]) & f->mask[0]) ^ l, l = r, r = t;
    t = (ncf__mix64(r ^ f->key[3]) & f->mask[1]) ^ l, l = r, r = t;
    return (l << f->b) | r;
}

#define NCF__RUN 128 /* positions shuffled at a time */

/* e[q] = the permutation of start + q, q < n <= NCF__RUN. Every first try, then the values
   still outside [0, n) all together, round by round: each round's tries are independent,
   where a walk one position at a time waited on each try before the next and on a branch no
   predictor can guess (29 ns a position against 12 on an AMD EPYC). */
static void ncf__permute_run(const ncf__perm *f, int64_t start, int n, int64_t *e)
{
    uint64_t y[NCF__RUN];
    int at[NCF__RUN], q, j, left = 0, next;
    for (q = 0; q < n; q++) e[q] = (int64_t)ncf__feistel(f, (uint64_t)(start + q));
    for (q = 0; q < n; q++) at[left] = q, y[left] = (uint64_t)e[q], left += (uint64_t)e[q] >= f->n;
    while (left) {
        for (j = 0; j < left; j++) y[j] = ncf__feistel(f, y[j]);
        for (next = 0, j = 0; j < left; j++) {
            e[at[j]] = (int64_t)y[j], at[next] = at[j], y[next] = y[j];
            next += y[j] >= f->n;
        }
        left = next;
    }
}

/* One search of ncf__nth_absent_many: in, the list p[0..d) and the rank r; out, the item. */
typedef struct {
    const int32_t *p;
    int64_t d, r, item;
} ncf__absent;

/* The search that draws example e's negative among user u's untrained items. */
static ncf__absent ncf__untrained_draw(const ncf_sampler *s, int epoch, int64_t e, int32_t u, uint64_t again)
{
    const ncf_dataset *d = s->data;
    ncf__absent a;
    a.p = d->items + d->user_ptr[u], a.d = d->user_ptr[u + 1] - d->user_ptr[u];
    a.r = ncf__below(ncf__hash3(s->seed ^ NCF__TAG_NEG ^ (again << 32), (uint64_t)epoch, (uint64_t)e),
                     (uint32_t)ncf__num_untrained(d, u));
    a.item = 0;
    return a;
}

/* Example e of an epoch, given its positive's place in the shard p = e/(1+num_neg) - train_lo
   and k = e%(1+num_neg): the positive, or for k > 0 a fresh negative of that positive's user.
   A shard gives 0, 0, 0 for another rank's user, so that the ranks' batches summed are the
   whole batch. */
static void ncf__draw(const ncf_sampler *s, int epoch, int64_t e, int64_t p, int64_t k, int32_t *user, int32_t *item,
                      float *label)
{
    const ncf_dataset *d = s->data;
    int32_t u;
    if ((uint64_t)p >= (uint64_t)d->num_train) {
        *user = *item = 0, *label = 0.0f;
        return;
    }
    u = d->train_user[p];
    *user = u;
    if (k == 0) {
        *item = d->items[p];
        *label = d->weight ? d->weight[p] : 1.0f;
    } else {
        ncf__absent a;
        uint64_t t;
        for (t = 0; t < 64; t++) { /* (drawn again, a fresh draw each time, where draw_only refuses one) */
            if (s->skip_held_out) {
                uint64_t x = ncf__hash3(s->seed ^ NCF__TAG_NEG ^ (t << 32), (uint64_t)epoch, (uint64_t)e);
                *item = ncf__nth_unrated(d, u, ncf__below(x, (uint32_t)ncf__num_unrated(d, u)));
            } else a = ncf__untrained_draw(s, epoch, e, u, t), *item = (int32_t)ncf__nth_absent(a.p, a.d, a.r);
            if (!s->draw_only || s->draw_only[*item]) break;
        }
        *label = 0.0f;
    }
}

/* ncf__nth_absent of n <= 16 searches at once: the same halving as NCF__FIRST_NOT, one probe of
   each list a round, for as many rounds as the longest list takes. A probe misses the cache
   more often than not: the misses of one round overlap, where those of a search done alone
   wait one behind the other. A search already down to one place probes it again and keeps it
   (half 0), so the rounds need no branch on each search's state, which no predictor could
   guess; an empty list probes a zero instead. */
static void ncf__nth_absent_many(ncf__absent *a, int n)
{
    static const int32_t none = 0;
    const int32_t *p[16];
    int64_t lo[16], left[16], r[16], most = 0;
    int j;
    for (j = 0; j < n; j++) {
        p[j] = a[j].d ? a[j].p : &none, lo[j] = 0, left[j] = a[j].d, r[j] = a[j].r;
        most = a[j].d > most ? a[j].d : most;
    }
    for (; most > 1; most -= most / 2)
        for (j = 0; j < n; j++) {
            int64_t half = left[j] / 2, mid = lo[j] + half;
            lo[j] = p[j][mid] - mid <= r[j] ? mid : lo[j];
            left[j] -= half;
        }
    for (j = 0; j < n; j++) a[j].item = r[j] + lo[j] + (left[j] > 0 && p[j][lo[j]] - lo[j] <= r[j]);
}

/* ncf__draw of examples e[0..n) (n <= 16), whose positives p and k are known: the negatives drawn
   from a user's untrained items search their users' lists together (ncf__nth_absent_many). */
static void ncf__draw_chunk(const ncf_sampler *s, int epoch, const int64_t *e, const int64_t *p, const int64_t *k,
                            int n, int32_t *users, int32_t *items, float *labels)
{
    const ncf_dataset *d = s->data;
    ncf__absent a[16];
    int at[16], q, j = 0;
    for (q = 0; q < n; q++) {
        int32_t u;
        if (k[q] == 0 || s->skip_held_out || s->draw_only || (uint64_t)p[q] >= (uint64_t)d->num_train) {
            ncf__draw(s, epoch, e[q], p[q], k[q], &users[q], &items[q], &labels[q]);
            continue;
        }
        users[q] = u = d->train_user[p[q]], labels[q] = 0.0f;
        a[j] = ncf__untrained_draw(s, epoch, e[q], u, 0), at[j++] = q;
    }
    ncf__nth_absent_many(a, j);
    for (q = 0; q < j; q++) items[at[q]] = (int32_t)a[q].item;
}

/* Prefetches of the positive at place p of the shard (none for another rank's): its user,
   item and weight. A macro: GCC takes a function of prefetches alone for one without
   effects and drops its calls. */
#define NCF__PREFETCH_POSITIVE(d, p) \
    do { \
        if ((uint64_t)(p) < (uint64_t)(d)->num_train) { \
            NCF__PREFETCH((d)->train_user + (p)); \
            NCF__PREFETCH((d)->items + (p)); \
            if ((d)->weight) NCF__PREFETCH((d)->weight + (p)); \
        } \
    } while (0)

/* Examples e[0..n) (n <= 16): prefetches of what each will touch (positive, user, the
   user's item list) first, so the cache misses of 16 random examples overlap instead of
   queueing; and of the positives of e[n..n+ahead), the next chunk's, whose misses then
   overlap this one's work. With own (a shard), own[q] says whether example q is this
   shard's. */
static void ncf__fill_chunk(const ncf_sampler *s, int epoch, const int64_t *e, int n, int ahead, int32_t *users,
                            int32_t *items, float *labels, uint8_t *own)
{
    const ncf_dataset *d = s->data;
    int64_t p[16], k[16], per = 1 + s->num_neg;
    int q;
    for (q = 0; q < n; q++) {
        p[q] = e[q] / per, k[q] = e[q] - p[q] * per, p[q] -= d->shard.train_lo;
        if (own) own[q] = (uint64_t)p[q] < (uint64_t)d->num_train;
        NCF__PREFETCH_POSITIVE(d, p[q]);
    }
    for (q = n; q < n + ahead; q++) { /* the next chunk's positives */
        int64_t x = e[q] / per - d->shard.train_lo;
        NCF__PREFETCH_POSITIVE(d, x);
    }
    for (q = 0; q < n; q++) {
        int64_t lo, hi;
        int32_t u;
        if ((uint64_t)p[q] >= (uint64_t)d->num_train) continue;
        u = d->train_user[p[q]];
        lo = d->user_ptr[u], hi = d->user_ptr[u + 1];
        NCF__PREFETCH(d->items + lo + (hi - lo) / 2); /* the binary search's first probes */
        NCF__PREFETCH(d->items + lo + (hi - lo) / 4);
        NCF__PREFETCH(d->items + lo + 3 * (hi - lo) / 4);
    }
    ncf__draw_chunk(s, epoch, e, p, k, n, users, items, labels);
}

/* Examples [start, start + n) of the epoch shuffled by positive: the positives in a keyed
   order, each followed by its negatives (the examples of the epoch shuffled one by one, in
   another order). A batch then holds a fifth as many users (num_neg 4): a user's item list
   and rows, fetched for its positive, serve its negatives from the cache, and its rows take
   one Adam step for all of them. The paper config trains 1.2x as fast (docs/performance.md
   gives its quality over seeds); SGD one example a step always takes this order. The
   positives are placed NCF__RUN at a time and drawn in groups of 16: prefetches of what each
   will touch (its user, the user's item list), and of the next group's positives, so that the
   misses of 16 random positives overlap instead of queueing; their negatives' searches then
   run 16 at a time (ncf__draw_chunk). With own (a shard), own[j] says whether example j is
   this shard's. */
static void ncf__fill_by_positive(const ncf_sampler *s, int epoch, int64_t start, int n, int32_t *users, int32_t *items,
                                  float *labels, uint8_t *own)
{
    const ncf_dataset *d = s->data;
    uint64_t key = ncf__hash3(s->seed ^ NCF__TAG_SHUFFLE, (uint64_t)epoch, 1);
    int64_t per = 1 + s->num_neg, num_train = s->num_examples / per, a = start / per, end = start + n, q = start;
    int64_t x[NCF__RUN], p[NCF__RUN], ce[16], cp[16], ck[16];
    int bits = 1, g, g0, count = 0, run = 0, c;
    ncf__perm f;
    while (bits < 62 && ((int64_t)1 << bits) < num_train) bits++;
    f = ncf__perm_make(bits, key, num_train);
    while (q < end) {
        if (run == count) { /* the next run of positives, and where the first group's lie */
            int64_t left = NCF__CEIL_DIV(end - a * per, per);
            count = left < NCF__RUN ? (int)left : NCF__RUN, run = 0;
            ncf__permute_run(&f, a, count, x);
            for (g = 0; g < count; g++) {
                p[g] = x[g] - d->shard.train_lo;
                if (g < 16) NCF__PREFETCH_POSITIVE(d, p[g]);
            }
        }
        g0 = run, run = count - g0 < 16 ? count : g0 + 16; /* the group: positives [g0, run) of the run */
        for (g = run; g < count && g < run + 16; g++) NCF__PREFETCH_POSITIVE(d, p[g]); /* the next group's */
        for (g = g0; g < run; g++)
            if ((uint64_t)p[g] < (uint64_t)d->num_train) NCF__PREFETCH(d->user_ptr + d->train_user[p[g]]);
        for (g = g0; g < run && per > 1; g++)
            if ((uint64_t)p[g] < (uint64_t)d->num_train) {
                int32_t u = d->train_user[p[g]];
                int64_t lo = d->user_ptr[u], hi = d->user_ptr[u + 1];
                NCF__PREFETCH(d->items + lo + (hi - lo) / 2); /* the binary search's first probes */
                NCF__PREFETCH(d->items + lo + (hi - lo) / 4);
                NCF__PREFETCH(d->items + lo + 3 * (hi - lo) / 4);
            }
        for (c = 0, g = g0; g < run; g++, a++)
            for (; q < end && q < (a + 1) * per; q++) {
                ce[c] = x[g] * per + q - a * per, cp[c] = p[g], ck[c] = q - a * per;
                if (own) own[q - start] = (uint64_t)p[g] < (uint64_t)d->num_train;
                if (++c == 16 || q + 1 == end || (g + 1 == run && q + 1 == (a + 1) * per)) {
                    int64_t j = q + 1 - c - start;
                    ncf__draw_chunk(s, epoch, ce, cp, ck, c, users + j, items + j, labels + j);
                    c = 0;
                }
            }
    }
}

/* Examples [start, start + n) of the epoch in the sampler's order: each example shuffled on
   its own, in runs of NCF__RUN positions, each drawn 16 at a time (or by positive). With own
   (a shard), own[j] says whether example j is this shard's. */
static void ncf__fill_rows(const ncf_sampler *s, int epoch, int64_t start, int n, int32_t *users, int32_t *items,
                           float *labels, uint8_t *own)
{
    ncf__perm f;
    int64_t e[NCF__RUN];
    int j, c;
    if (s->by_positive) {
        ncf__fill_by_positive(s, epoch, start, n, users, items, labels, own);
        return;
    }
    f = ncf__perm_make(s->bits, ncf__hash3(s->seed ^ NCF__TAG_SHUFFLE, (uint64_t)epoch, 0), s->num_examples);
    for (j = 0; j < n; j += NCF__RUN) {
        int len = n - j < NCF__RUN ? n - j : NCF__RUN;
        ncf__permute_run(&f, start + j, len, e);
        for (c = 0; c < len; c += 16) {
            int here = len - c < 16 ? len - c : 16, next = len - c - here < 16 ? len - c - here : 16;
            ncf__fill_chunk(s, epoch, e + c, here, next, users + j + c, items + j + c, labels + j + c,
                            own ? own + j + c : NULL);
        }
    }
}

NCFDEF void ncf_sampler_fill(const ncf_sampler *s, int epoch, int64_t start, int n, int32_t *users, int32_t *items,
                             float *labels)
{
    int c, runs = (n + NCF__RUN - 1) / NCF__RUN;
    NCF__OMP(parallel for schedule(static) num_threads(ncf__team(n >= 2 * NCF__RUN)))
    for (c = 0; c < runs; c++) {
        int j = c * NCF__RUN;
        ncf__fill_rows(s, epoch, start + j, n - j < NCF__RUN ? n - j : NCF__RUN, users + j, items + j, labels + j,
                       NULL);
    }
}

static uint64_t ncf__hash_pairs(uint64_t h, const int32_t *a, const int32_t *b, int n)
{
    int j;
    for (j = 0; j < n; j++) h = ncf__mix64(h ^ ((uint64_t)(uint32_t)a[j] << 32 | (uint32_t)b[j]));
    return h;
}

static NCF__MAYBE_UNUSED int ncf__sampler_hash(const ncf_sampler *s, int epoch, int batch_size, uint64_t *first_batch,
                                               uint64_t *all_batches)
{
    int64_t nb, b;
    uint64_t all = 0, *hb;
    int short_of_memory = 0;
    if (!first_batch || !all_batches) return ncf__fail(NCF_ERR_ARG, "ncf__sampler_hash: NULL output");
    *first_batch = *all_batches = 0;
    if (!s || !s->data || batch_size <= 0 || ncf__is_shard(s->data))
        return ncf__fail(NCF_ERR_ARG, "ncf__sampler_hash: need a sampler of a whole dataset and batch_size > 0");
    nb = NCF__CEIL_DIV(s->num_examples, batch_size);
    if (!(hb = NCF__ZNEW(uint64_t, nb))) return ncf__fail(NCF_ERR_NOMEM, "ncf__sampler_hash: out of memory");
    NCF__OMP(parallel num_threads(ncf__team(1)))
    {
        int32_t *u = NCF__NEW(int32_t, batch_size), *it = NCF__NEW(int32_t, batch_size);
        float *y = NCF__NEW(float, batch_size);
        if (!u || !it || !y) {
            NCF__OMP(atomic write)
            short_of_memory = 1;
        }
        NCF__OMP(for schedule(static))
        for (b = 0; b < nb; b++) {
            int64_t start = b * batch_size;
            int n = (int)(s->num_examples - start < batch_size ? s->num_examples - start : batch_size);
            if (!u || !it || !y) continue;
            ncf__fill_rows(s, epoch, start, n, u, it, y, NULL);
            hb[b] = ncf__hash_pairs(0, u, it, n);
        }
        NCF_FREE(u);
        NCF_FREE(it);
        NCF_FREE(y);
    }
    for (b = 0; b < nb; b++) all = ncf__mix64(all ^ hb[b]);
    if (!short_of_memory) *first_batch = nb ? hb[0] : 0, *all_batches = all;
    NCF_FREE(hb);
    return short_of_memory ? ncf__fail(NCF_ERR_NOMEM, "ncf__sampler_hash: out of memory") : NCF_OK;
}

#endif /* NCF_INFERENCE_ONLY */
