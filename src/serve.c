/* ---- >>model-ids: the model's id tables and rated items ------------------------------------- */

NCFDEF void ncf_free(void *p) { NCF_FREE(p); }

NCFDEF void ncf_model_params_changed(ncf_model *m)
{
    if (m && m->scratch) ncf__refresh_cache(m);
}

/* Integer ids given out of order (by hand) are found through a sorted index, made once here;
   every loader gives them ascending, which needs none. A raw id given twice is refused. Text
   ids are always ascending (checked where they are read). */
typedef struct {
    int64_t raw;
    int32_t dense;
} ncf__idpair;

static int ncf__cmp_idpair(const void *a, const void *b)
{
    int64_t x = ((const ncf__idpair *)a)->raw, y = ((const ncf__idpair *)b)->raw;
    return (x > y) - (x < y);
}

static int ncf__id_order(const int64_t *raw, int n, int32_t **order, const char *what)
{
    ncf__idpair *p;
    int k;
    NCF__DROP(*order);
    if (!raw) return NCF_OK;
    for (k = 1; k < n && raw[k - 1] < raw[k]; k++) {}
    if (k >= n) return NCF_OK; /* ascending: the identity */
    if (!(p = NCF__NEW(ncf__idpair, n)) || !(*order = NCF__NEW(int32_t, n))) {
        NCF_FREE(p);
        return ncf__fail(NCF_ERR_NOMEM, "out of memory for the %s id index", what);
    }
    for (k = 0; k < n; k++) p[k].raw = raw[k], p[k].dense = k;
    ncf__sort(p, (size_t)n, sizeof *p, ncf__cmp_idpair);
    for (k = 0; k < n; k++) {
        if (k > 0 && p[k].raw == p[k - 1].raw) {
            int64_t dup = p[k].raw;
            NCF_FREE(p), NCF__DROP(*order);
            return ncf__fail(NCF_ERR_DATA, "raw %s id %s appears twice", what, ncf__i64s(dup, 0));
        }
        (*order)[k] = p[k].dense;
    }
    NCF_FREE(p);
    return NCF_OK;
}

static int ncf__build_id_maps(ncf_model *m)
{
    int rc = ncf__id_order(m->raw_user, m->cfg.num_users, &m->scratch->cache.user_order, "user");
    return rc != NCF_OK ? rc : ncf__id_order(m->raw_item, m->cfg.num_items, &m->scratch->cache.item_order, "item");
}

/* The model's user (items 0) or item (1) ids. */
static ncf__ids ncf__model_ids(const ncf_model *m, int items)
{
    ncf__ids t;
    t.n = items ? m->cfg.num_items : NCF__USERS(m);
    t.num = items ? m->raw_item : m->raw_user;
    t.order = items ? m->scratch->cache.item_order : m->scratch->cache.user_order;
    t.text = items ? m->item_text : m->user_text;
    t.at = items ? m->item_text_at : m->user_text_at;
    return t;
}

static int ncf__has_ids(const ncf_model *m) { return (m->raw_user || m->user_text) && (m->raw_item || m->item_text); }

static int ncf__side_ok(const ncf_model *m, int side, const char *what)
{
    if (!m) return ncf__fail(NCF_ERR_ARG, "%s: NULL model", what);
    if (side != NCF_USER && side != NCF_ITEM)
        return ncf__fail(NCF_ERR_ARG, "%s: side %d is not NCF_USER or NCF_ITEM", what, side);
    return NCF_OK;
}

NCFDEF int ncf_find(const ncf_model *m, int side, const char *id)
{
    int rc = ncf__side_ok(m, side, "ncf_find");
    return rc != NCF_OK ? rc : ncf__index_of(ncf__model_ids(m, side), id, ncf__side_name(side));
}
NCFDEF int ncf_id(const ncf_model *m, int side, int index, char *buf, size_t size)
{
    int rc = ncf__side_ok(m, side, "ncf_id");
    return rc != NCF_OK ? rc : ncf__name_of(ncf__model_ids(m, side), index, buf, size, ncf__side_name(side));
}

/* A user's rated items are a varint stream: each the gap from the one before, minus one.
   The cursor walks it: next is the next rated item, INT32_MAX past the last. */
typedef struct {
    const uint8_t *p, *end;
    int32_t next;
} ncf__rated_cursor;

/* One varint (at most 5 bytes, ending before end) into *v; 0 when malformed. */
static int ncf__get_varint(const uint8_t **p, const uint8_t *end, uint32_t *v)
{
    int shift;
    *v = 0;
    for (shift = 0; shift < 35 && *p < end; shift += 7) {
        uint8_t b = *(*p)++;
        *v |= (uint32_t)(b & 127) << shift;
        if (!(b & 128)) return shift < 28 || b < 16;
    }
    return 0;
}

static int ncf__put_varint(uint8_t *p, uint32_t v)
{
    int n = 0;
    for (; v >= 128; v >>= 7) p[n++] = (uint8_t)(v | 128);
    p[n++] = (uint8_t)v;
    return n;
}

static void ncf__rated_step(ncf__rated_cursor *c)
{
    uint32_t gap;
    if (c->p < c->end && ncf__get_varint(&c->p, c->end, &gap) && (int64_t)c->next + gap + 1 < INT32_MAX)
        c->next += (int32_t)gap + 1;
    else c->next = INT32_MAX, c->p = c->end;
}

/* A cursor at user u's first rated item >= from (none when the model keeps no lists). */
static void ncf__rated_from(ncf__rated_cursor *c, const ncf_model *m, int u, int from)
{
    c->p = c->end = NULL, c->next = -1;
    if (m->rated) c->p = m->rated + m->rated_ptr[u], c->end = m->rated + m->rated_ptr[u + 1];
    do ncf__rated_step(c);
    while (c->next < from);
}

#ifndef NCF_INFERENCE_ONLY
/* User u's rated items, training, test and validation, ascending, as a varint stream into p
   (when not NULL); returns its length in bytes. */
static size_t ncf__encode_rated(const ncf_dataset *d, int u, uint8_t *p)
{
    const int32_t *at[3], *end[3];
    int32_t prev = -1, cur;
    int64_t n0;
    uint8_t tmp[5];
    size_t n = 0;
    int l, lo;
    at[0] = d->items + d->user_ptr[u], end[0] = d->items + d->user_ptr[u + 1];
    at[1] = ncf__held_list(d, NCF_EVAL_TEST, u, &n0), end[1] = at[1] ? at[1] + n0 : NULL;
    at[2] = ncf__held_list(d, NCF_EVAL_VALIDATION, u, &n0), end[2] = at[2] ? at[2] + n0 : NULL;
    for (;;) { /* training, test and validation items: three ascending lists, merged */
        for (l = 0, lo = -1; l < 3; l++)
            if (at[l] < end[l] && (lo < 0 || *at[l] < *at[lo])) lo = l;
        if (lo < 0) return n;
        cur = *at[lo]++;
        n += (size_t)ncf__put_varint(p ? p + n : tmp, (uint32_t)(cur - prev - 1));
        prev = cur;
    }
}

/* A copy of n text ids (text, at), or NULL for none; on failure both NULL. */
static int ncf__copy_text_ids(const char *text, const int64_t *at, int n, char **out, int64_t **out_at)
{
    *out = NULL, *out_at = NULL;
    if (!text) return NCF_OK;
    *out = NCF__NEW(char, at[n] ? at[n] : 1), *out_at = NCF__NEW(int64_t, (size_t)n + 1);
    if (!*out || !*out_at) {
        NCF__DROP(*out), NCF__DROP(*out_at);
        return ncf__fail(NCF_ERR_NOMEM, "out of memory for %d text ids", n);
    }
    memcpy(*out, text, (size_t)at[n]), memcpy(*out_at, at, sizeof(int64_t) * ((size_t)n + 1));
    return NCF_OK;
}

/* The data's ids and rated items, copied into the model in place of its own. */
static int ncf__copy_ids(ncf_model *m, const ncf_dataset *d)
{
    int64_t *ru = NULL, *ri = NULL, *sp, *uat = NULL, *iat = NULL;
    char *ut = NULL, *it = NULL;
    uint8_t *sv;
    int u;
    if (d->raw_user) ru = NCF__NEW(int64_t, d->num_users);
    if (d->raw_item) ri = NCF__NEW(int64_t, d->num_items);
    sp = NCF__NEW(int64_t, (size_t)d->num_users + 1);
    if (sp)
        for (sp[0] = 0, u = 0; u < d->num_users; u++) sp[u + 1] = sp[u] + (int64_t)ncf__encode_rated(d, u, NULL);
    sv = sp ? NCF__NEW(uint8_t, sp[d->num_users]) : NULL;
    if ((d->raw_user && !ru) || (d->raw_item && !ri) || !sp || !sv ||
        ncf__copy_text_ids(d->user_text, d->user_text_at, d->num_users, &ut, &uat) != NCF_OK ||
        ncf__copy_text_ids(d->item_text, d->item_text_at, d->num_items, &it, &iat) != NCF_OK) {
        NCF_FREE(ru);
        NCF_FREE(ri);
        NCF_FREE(sp);
        NCF_FREE(sv);
        NCF_FREE(ut);
        NCF_FREE(uat);
        return ncf__fail(NCF_ERR_NOMEM, "out of memory for the id maps");
    }
    if (ru) memcpy(ru, d->raw_user, sizeof(int64_t) * (size_t)d->num_users);
    if (ri) memcpy(ri, d->raw_item, sizeof(int64_t) * (size_t)d->num_items);
    for (u = 0; u < d->num_users; u++) ncf__encode_rated(d, u, sv + sp[u]);
    NCF_FREE(m->raw_user), NCF_FREE(m->raw_item), NCF_FREE(m->rated_ptr), NCF_FREE(m->rated);
    NCF_FREE(m->user_text), NCF_FREE(m->item_text), NCF_FREE(m->user_text_at), NCF_FREE(m->item_text_at);
    m->raw_user = ru, m->raw_item = ri, m->rated_ptr = sp, m->rated = sv;
    m->user_text = ut, m->user_text_at = uat, m->item_text = it, m->item_text_at = iat;
    return NCF_OK;
}

NCFDEF int ncf_model_set_ids(ncf_model *m, const ncf_dataset *d)
{
    int rc;
    if (!m || !d || (!d->raw_user && !d->user_text) || (!d->raw_item && !d->item_text))
        return ncf__fail(NCF_ERR_ARG, "ncf_model_set_ids: NULL argument, or a dataset without ids");
    if ((rc = ncf__writable(m, "ncf_model_set_ids")) != NCF_OK) return rc;
    if (d->num_users != m->cfg.num_users || d->num_items != m->cfg.num_items)
        return ncf__fail(NCF_ERR_ARG, "ncf_model_set_ids: the data has %d users and %d items, the model %d and %d",
                         d->num_users, d->num_items, m->cfg.num_users, m->cfg.num_items);
    if ((rc = ncf__copy_ids(m, d)) != NCF_OK) return rc;
    ncf__refresh_cache(m); /* the model is about to serve */
    return ncf__build_id_maps(m);
}

#endif

/* ---- >>serving: top-k by heap, workspaces, predict and recommend by id ----------------------- */
/* The index of user id raw_user, into *u (checked: a model with ids, the id known). */
static int ncf__user_of(const ncf_model *m, int64_t raw_user, int *u)
{
    ncf__ids users = ncf__model_ids(m, 0);
    if (!ncf__has_ids(m)) return ncf__fail(NCF_ERR_ARG, "the model has no id maps (ncf_model_set_ids)");
    if (NCF__MPI_STALE(m)) return ncf__fail(NCF_ERR_ARG, "serving: " NCF__STALE_TEXT);
    if ((*u = ncf__ids_find_int(&users, raw_user)) < 0)
        return ncf__fail(NCF_ERR_ARG, "unknown user %s (a new user is folded in from its items: ncf_fold_in)",
                         ncf__i64s(raw_user, 0));
    return NCF_OK;
}

/* The same, and the index of item id raw_item into *i. */
static int ncf__indices_of(const ncf_model *m, int64_t raw_user, int64_t raw_item, int *u, int *i)
{
    ncf__ids items = ncf__model_ids(m, 1);
    int rc = ncf__user_of(m, raw_user, u);
    if (rc == NCF_OK && (*i = ncf__ids_find_int(&items, raw_item)) < 0)
        return ncf__fail(NCF_ERR_ARG, "unknown item %s", ncf__i64s(raw_item, 0));
    return rc;
}

/* Candidates as (score, item): the order of ncf_recommend, ties to the lower item, and a
   non-finite score last. */
typedef struct {
    float score;
    int32_t item;
} ncf__cand;

/* A score as it ranks: a non-finite one below every finite one, and equal to the others. */
static float ncf__rank(float score) { return NCF__NONFINITE(score) ? -INFINITY : score; }

static int ncf__better(ncf__cand a, ncf__cand b)
{
    float x = ncf__rank(a.score), y = ncf__rank(b.score);
    return x > y || (x == y && a.item < b.item);
}

/* A bounded heap of the k best candidates so far, the worst at the root. */
static void ncf__heap_down(ncf__cand *h, int n, int q)
{
    for (;;) {
        int w = q, c = 2 * q + 1;
        ncf__cand t;
        if (c < n && ncf__better(h[w], h[c])) w = c;
        if (c + 1 < n && ncf__better(h[w], h[c + 1])) w = c + 1;
        if (w == q) return;
        t = h[q], h[q] = h[w], h[w] = t;
        q = w;
    }
}

static void ncf__heap_offer(ncf__cand *h, int *n, int k, ncf__cand c)
{
    int q = (*n)++;
    if (q < k) {
        h[q] = c;
        while (q > 0 && ncf__better(h[(q - 1) / 2], h[q])) {
            ncf__cand t = h[q];
            h[q] = h[(q - 1) / 2], h[(q - 1) / 2] = t;
            q = (q - 1) / 2;
        }
    } else {
        *n = k;
        if (ncf__better(c, h[0])) h[0] = c, ncf__heap_down(h, k, 0);
    }
}

/* A recommendation's work: whom it scores, which candidates, which of them it skips. */
typedef struct {
    const ncf_model *m;
    const float *proj;    /* the cached item projection, or NULL */
    int u;                /* the user's index, or -1 for a user given by its rows */
    const float *urow;    /* the user's rows when given (ncf_fold_in), else the model's */
    const int32_t *allow; /* sorted, each once: the only candidates; NULL: every item */
    int ncand;            /* candidates: the allow-list's, or the catalogue's */
    const int32_t *deny;  /* sorted: never recommended */
    int ndeny;
    int exclude_rated; /* skip u's rated items */
    int k;
    int threads; /* 1: the library's threads may share the catalogue; 0: the calling thread */
} ncf__rec_job;

/* What a job skips, walked in ascending item order: u's rated items and the deny-list. */
typedef struct {
    ncf__rated_cursor rated;
    const int32_t *deny, *deny_end;
} ncf__skipper;

static void ncf__skipper_at(ncf__skipper *k, const ncf__rec_job *J, int32_t from)
{
    int lo;
    k->rated.p = k->rated.end = NULL, k->rated.next = INT32_MAX;
    if (J->exclude_rated && J->u >= 0) ncf__rated_from(&k->rated, J->m, J->u, from);
    NCF__FIRST_NOT(int, lo, J->ndeny, J->deny[mid] < from);
    k->deny = k->deny_end = J->deny; /* (NULL without a deny-list) */
    if (J->deny) k->deny += lo, k->deny_end += J->ndeny;
}

static int ncf__skips(ncf__skipper *k, int32_t item)
{
    while (k->rated.next < item) ncf__rated_step(&k->rated);
    while (k->deny < k->deny_end && *k->deny < item) k->deny++;
    return k->rated.next == item || (k->deny < k->deny_end && *k->deny == item);
}

/* The candidates at positions [p0, p1) of the job (items, or allow-list entries), less those
   it skips, scored into the heap of its k best: a chunk at a time, scored whole, the skipped
   ones dropped after (the skips walk up the chunk as the candidates do). */
static void ncf__rec_range(const ncf__rec_job *J, int p0, int p1, ncf__eval_buf *e, ncf__cand *heap, int *nh)
{
    ncf__skipper sk;
    ncf__cand x;
    int p, j, n, C = ncf__score_chunk(J->m);
    float worst; /* the heap's worst score when it is full and finite, else -inf */
    if (p0 >= p1 || J->k <= 0) return;
    worst = *nh == J->k && !NCF__NONFINITE(heap[0].score) ? heap[0].score : -INFINITY;
    ncf__skipper_at(&sk, J, J->allow ? J->allow[p0] : p0);
    for (p = p0; p < p1; p += n) {
        const int32_t *cand = J->allow ? J->allow + p : NULL;
        n = p1 - p > C ? C : p1 - p;
        ncf__score_user(J->m, J->proj, J->u, J->urow, cand, p, n, e, p > p0);
        for (j = 0; j < n; j++) { /* (most items score below the heap's worst: that test first) */
            x.score = e->sc[j], x.item = cand ? cand[j] : p + j;
            if (x.score < worst || !(*nh < J->k || ncf__better(x, heap[0])) || ncf__skips(&sk, x.item)) continue;
            ncf__heap_offer(heap, nh, J->k, x);
            worst = *nh == J->k && !NCF__NONFINITE(heap[0].score) ? heap[0].score : -INFINITY;
        }
    }
}

/* The heap's n best, best first, as item indices (items) or into the int64 slots of ids
   (which the caller then turns into ids), with their scores. Returns n. */
static int ncf__heap_out(ncf__cand *best, int n, int32_t *items, int64_t *ids, float *out_scores)
{
    int j;
    for (j = n - 1; j >= 0; j--) { /* worst first, into the tail */
        if (items) items[j] = best[0].item;
        else ids[j] = best[0].item;
        if (out_scores) out_scores[j] = best[0].score;
        best[0] = best[j];
        ncf__heap_down(best, j, 0);
    }
    return n;
}

/* Item indices in ids[0..n) to their integer ids. */
static void ncf__indices_to_ids(const ncf_model *m, int64_t *ids, int n)
{
    int j;
    for (j = 0; j < n; j++) ids[j] = m->raw_item[ids[j]];
}

/* A serving workspace: scoring buffers for a chunk of items, then a heap of k candidates,
   from a 64-byte boundary; its size is a multiple of 64 bytes. */
/* Bytes of scoring buffers and a heap of k: the workspace of one user's top k. */
static size_t ncf__score_workspace(const ncf_model *m, int k)
{
    ncf__eval_buf e;
    if (!m) return 0;
    k = k < 1 ? 1 : k > m->cfg.num_items ? m->cfg.num_items : k; /* (k candidates of 2 floats each) */
    return sizeof(float) *
        (ncf__eval_buf_carve(&e, m, ncf__score_chunk(m), NULL) + ncf__round_floats((size_t)k * 2) + NCF__ALIGN_FLOATS);
}

/* The scoring buffers and the heap carved from work (ncf__score_workspace bytes at least). */
static void ncf__carve_workspace(const ncf_model *m, void *work, ncf__eval_buf *e, ncf__cand **heap)
{
    work = (char *)work + (size_t)(-(intptr_t)work & 63);
    *heap = (ncf__cand *)((float *)work + ncf__eval_buf_carve(e, m, ncf__score_chunk(m), (float *)work));
}

static int ncf__workspace(const ncf_model *m, int k, void *work, size_t size, ncf__eval_buf *e, ncf__cand **heap)
{
    size_t need = ncf__score_workspace(m, k);
    if (!work || size < need)
        return ncf__fail(NCF_ERR_ARG, "workspace of %lu bytes; this model and k = %d need %lu (ncf_rec_workspace_size)",
                         (unsigned long)(work ? size : 0), k, (unsigned long)need);
    ncf__carve_workspace(m, work, e, heap);
    return NCF_OK;
}

/* The job of user u over the catalogue, no lists. */
static void ncf__plain_job(ncf__rec_job *J, const ncf_model *m, int u, int k, int exclude)
{
    memset(J, 0, sizeof *J);
    J->m = m, J->proj = ncf__cached_projection(m), J->u = u, J->ncand = m->cfg.num_items;
    J->exclude_rated = exclude, J->k = k < m->cfg.num_items ? k : m->cfg.num_items, J->threads = 0;
}

/* Pair by pair through the serving path: how ncf_predict_index scores an int8 model read
   in place, whose rows the training forward cannot gather. */
static int ncf__score_pairs(const ncf_model *m, const int32_t *users, const int32_t *items, int n, float *logits)
{
    size_t size = ncf__score_workspace(m, 1);
    void *work = NCF_MALLOC(size);
    ncf__eval_buf e;
    ncf__cand *heap = NULL;
    int j;
    if (!work) return ncf__fail(NCF_ERR_NOMEM, "out of memory for a %lu-byte workspace", (unsigned long)size);
    ncf__workspace(m, 1, work, size, &e, &heap);
    for (j = 0; j < n; j++) {
        ncf__score_user(m, NULL, users[j], NULL, items + j, 0, 1, &e, 0);
        logits[j] = e.sc[0];
    }
    NCF_FREE(work);
    return NCF_OK;
}

NCFDEF int ncf_predict(const ncf_model *m, int64_t raw_user, int64_t raw_item, float *logit)
{
    size_t size = m ? ncf__score_workspace(m, 1) : 0;
    void *work;
    ncf__eval_buf e;
    ncf__cand *heap = NULL;
    int u = 0, i = 0, rc;
    int32_t ii;
    if (!m || !logit) return ncf__fail(NCF_ERR_ARG, "ncf_predict: NULL argument");
    if ((rc = ncf__indices_of(m, raw_user, raw_item, &u, &i)) != NCF_OK) return rc;
    if (!(work = NCF_MALLOC(size)))
        return ncf__fail(NCF_ERR_NOMEM, "out of memory for a %lu-byte workspace", (unsigned long)size);
    ncf__workspace(m, 1, work, size, &e, &heap);
    ii = i;
    ncf__score_user(m, ncf__cached_projection(m), u, NULL, &ii, 0, 1, &e, 0);
    *logit = e.sc[0];
    NCF_FREE(work);
    return NCF_OK;
}

#if NCF__TEAMS
/* A job's best k, its candidates scored in chunks on all threads, each keeping the best k of
   the chunks it scored, merged at the end: into items (indices) or ids (indices, for the
   caller to turn into ids). The k best do not depend on who scored what: candidates order
   totally (score, then index), and each score is the same in any chunk. */
static int ncf__recommend_threads(const ncf__rec_job *J, int32_t *items, int64_t *ids, float *scores)
{
    const ncf_model *m = J->m;
    ncf__cand *best, **heaps;
    ncf__team team = NCF__TEAM_INIT;
    char *block;
    size_t size;
    int j, n = 0, k = J->k > 0 ? J->k : 1, T = ncf__threads(), *nh, par, C = ncf__score_chunk(m);
    int64_t chunks = NCF__CEIL_DIV(J->ncand, C);
    par = J->threads && T > 1 && chunks > 1 && (float)J->ncand * ncf__row_macs(m) > 16 * NCF__PAR_WORK;
    T = !par ? 1 : chunks < T ? (int)chunks : T; /* workspaces for the threads that can run only */
    size = ncf__score_workspace(m, k);
    /* T workspaces, then where each thread's heap is, the merged heap and the heaps' sizes */
    block = (char *)ncf__alloc((size_t)T, size + sizeof(ncf__cand *) + sizeof(int) + sizeof(ncf__cand) * (size_t)k);
    if (!block) return ncf__fail(NCF_ERR_NOMEM, "out of memory for the top %d of %d items", k, m->cfg.num_items);
    heaps = (ncf__cand **)(block + (size_t)T * size), best = (ncf__cand *)(heaps + T), nh = (int *)(best + k);
    for (j = 0; j < T; j++) nh[j] = 0;
    NCF__PARALLEL_N(par, T)
    {
        ncf__ctx x = ncf__join(&team);
        ncf__eval_buf e;
        int t = 0;
        int64_t lo, hi;
#if NCF__TEAMS
        t = omp_get_thread_num();
#endif
        if (t < T && ncf__workspace(m, k, block + (size_t)t * size, size, &e, &heaps[t]) == NCF_OK)
            while (ncf__claim(&x, chunks, 1, &lo, &hi))
                ncf__rec_range(J, (int)(lo * C), hi * C < J->ncand ? (int)(hi * C) : J->ncand, &e, heaps[t], &nh[t]);
    }
    for (j = 0; j < T; j++) {
        int q;
        for (q = 0; q < nh[j]; q++) ncf__heap_offer(best, &n, k, heaps[j][q]);
    }
    n = J->k > 0 ? ncf__heap_out(best, n, items, ids, scores) : 0;
    NCF_FREE(block);
    return n;
}
#endif

/* ---- >>serving-options: allow- and deny-lists, many users, a user given by its rows ---------- */

/* The defaults, field by field: the 10 best, the rated items skipped, no lists, logits, the
   heap, the calling thread. What NULL options mean in every call. */
static const ncf_rec_opts ncf__rec_defaults = {10, 1, NULL, 0, NULL, 0, NULL, 0, NULL, 0, 0};

NCFDEF ncf_rec_opts ncf_rec_opts_default(void) { return ncf__rec_defaults; }

/* list[0..n) of item indices checked, sorted into out, duplicates dropped; the count kept. */
static int ncf__sorted_items(const ncf_model *m, const int32_t *list, int n, int32_t *out, const char *what)
{
    int j, w = 0;
    for (j = 0; j < n; j++) {
        if (list[j] < 0 || list[j] >= m->cfg.num_items)
            return ncf__fail(NCF_ERR_ARG,
                             "ncf_recommend: %s[%d] = %d is not an item index in [0, %d) (ncf_find finds an id's)",
                             what, j, (int)list[j], m->cfg.num_items);
        out[j] = list[j];
    }
    ncf__heap_sort((char *)out, (size_t)n, sizeof *out, ncf__cmp_i32); /* (in place: serving allocates nothing) */
    for (j = 0; j < n; j++)
        if (w == 0 || out[j] != out[w - 1]) out[w++] = out[j];
    return w;
}

/* Bytes of the lists' sorted copies in a workspace. */
static size_t ncf__lists_bytes(const ncf_rec_opts *o)
{
    size_t na = o->allow && o->num_allow > 0 ? (size_t)o->num_allow : 0,
           nd = o->deny && o->num_deny > 0 ? (size_t)o->num_deny : 0;
    return sizeof(float) * ncf__round_floats(na + nd + 1);
}

static int ncf__item_vec_dim(const ncf_model *m); /* similar: an item's vector */

/* The workspace before the lists: ncf_recommend_index's, or ncf_similar's (the k best, and
   three vectors) where that is larger. */
static size_t ncf__rec_base(const ncf_model *m, int k)
{
    int D = ncf__item_vec_dim(m), H = m->scratch->H,
        most = m->cfg.num_items > m->cfg.num_users ? m->cfg.num_items : m->cfg.num_users;
    size_t best = (size_t)(k < 1 ? 1 : k < most ? k : most);
    size_t similar = sizeof(float) *
        (ncf__round_floats(best * sizeof(ncf__cand) / sizeof(float)) +
         ncf__round_floats((size_t)3 * (size_t)(D > H ? D : H)) + NCF__ALIGN_FLOATS);
    size_t rec = ncf__score_workspace(m, k);
    return rec > similar ? rec : similar;
}

NCFDEF size_t ncf_rec_workspace_size(const ncf_model *m, const ncf_rec_opts *o)
{
    if (!o) o = &ncf__rec_defaults;
    return m ? ncf__rec_base(m, o->k) + ncf__lists_bytes(o) : 0;
}

/* Checks the options for user index u (or o->user_row) and makes the job; the lists' sorted
   copies go to lists (room for num_allow + num_deny). */
/* The options' own values, checked before anything is sized from them. */
static int ncf__check_rec_opts(const ncf_rec_opts *o, const char *what)
{
    if (!o) return ncf__fail(NCF_ERR_ARG, "%s: NULL options", what);
    if (o->k <= 0) return ncf__fail(NCF_ERR_ARG, "%s: k %d: need k > 0", what, o->k);
    if (o->num_allow < 0 || o->num_deny < 0)
        return ncf__fail(NCF_ERR_ARG, "%s: num_allow %d, num_deny %d: need list sizes >= 0", what, o->num_allow,
                         o->num_deny);
    if (o->exclude_rated != 0 && o->exclude_rated != 1)
        return ncf__fail(NCF_ERR_ARG, "%s: exclude_rated %d is neither 0 nor 1", what, o->exclude_rated);
    if (o->probabilities != 0 && o->probabilities != 1)
        return ncf__fail(NCF_ERR_ARG, "%s: probabilities %d is neither 0 nor 1", what, o->probabilities);
    if (o->threads != 0 && o->threads != 1)
        return ncf__fail(NCF_ERR_ARG, "%s: threads %d is neither 0 nor 1", what, o->threads);
    return NCF_OK;
}

static int ncf__rec_job_of(const ncf_model *m, int u, const ncf_rec_opts *o, int32_t *lists, ncf__rec_job *J,
                           const char *what)
{
    int rc;
    if ((rc = ncf__check_rec_opts(o, what)) != NCF_OK) return rc;
    if (!o->user_row && (u < 0 || u >= m->cfg.num_users))
        return ncf__fail(NCF_ERR_ARG, "%s: user index %d is not in [0, %d) (an index, not an id: ncf_find)", what, u,
                         m->cfg.num_users);
    if (NCF__MPI_STALE(m)) return ncf__fail(NCF_ERR_ARG, "serving: " NCF__STALE_TEXT);
    ncf__plain_job(J, m, o->user_row ? -1 : u, o->k, o->exclude_rated);
    J->urow = o->user_row, J->threads = o->threads;
    if (o->allow) {
        if ((rc = ncf__sorted_items(m, o->allow, o->num_allow, lists, "allow")) < 0) return rc;
        J->allow = lists, J->ncand = rc, lists += rc;
    }
    if (o->deny) {
        if ((rc = ncf__sorted_items(m, o->deny, o->num_deny, lists, "deny")) < 0) return rc;
        J->deny = lists, J->ndeny = rc;
    }
    return NCF_OK;
}

/* Logits to probabilities, in place (ncf_rec_opts.probabilities). */
static void ncf__sigmoid_all(float *x, int n)
{
    int j;
    for (j = 0; x && j < n; j++) x[j] = 1.0f / (1.0f + expf(-x[j]));
}

/* User index u's best (or o->user_row's): as item indices (items) or as indices for the
   caller to turn into ids (ids). On this thread in the caller's workspace, or in one from the
   heap; or, asked to, shared by the library's threads. */
static int ncf__recommend(const ncf_model *m, int u, const ncf_rec_opts *o, int32_t *items, int64_t *ids, float *scores,
                          const char *what)
{
    size_t base = ncf__rec_base(m, o->k), need = base + ncf__lists_bytes(o); /* (ncf_rec_workspace_size) */
    void *work = o->work;
    ncf__eval_buf e;
    ncf__cand *heap = NULL;
    ncf__rec_job J;
    int n = 0, rc;
#if NCF__TEAMS
    if (!work && o->threads && ncf__threads() > 1) {
        int32_t *lists = (int32_t *)NCF_MALLOC(ncf__lists_bytes(o));
        if (!lists) return ncf__fail(NCF_ERR_NOMEM, "out of memory for the allow- and deny-lists");
        n = ncf__rec_job_of(m, u, o, lists, &J, what);
        if (n == NCF_OK) n = ncf__recommend_threads(&J, items, ids, scores);
        NCF_FREE(lists);
        if (n > 0 && o->probabilities) ncf__sigmoid_all(scores, n);
        return n;
    }
#endif
    if (work && o->work_size < need)
        return ncf__fail(NCF_ERR_ARG,
                         "%s: workspace of %lu bytes; this model and these options need %lu "
                         "(ncf_rec_workspace_size)",
                         what, (unsigned long)o->work_size, (unsigned long)need);
    if (!work && !(work = NCF_MALLOC(need)))
        return ncf__fail(NCF_ERR_NOMEM, "out of memory for a %lu-byte workspace", (unsigned long)need);
    ncf__carve_workspace(m, work, &e, &heap); /* (base holds it: need >= base) */
    rc = ncf__rec_job_of(m, u, o, (int32_t *)(((uintptr_t)work + base + 3) & ~(uintptr_t)3), &J, what);
    if (rc == NCF_OK) {
        ncf__rec_range(&J, 0, J.ncand, &e, heap, &n);
        n = ncf__heap_out(heap, n, items, ids, scores);
    }
    if (work != o->work) NCF_FREE(work);
    if (n > 0 && o->probabilities) ncf__sigmoid_all(scores, n);
    return rc != NCF_OK ? rc : n;
}

NCFDEF int ncf_recommend_index(const ncf_model *m, int u, const ncf_rec_opts *o, int32_t *items, float *scores)
{
    if (!m || !items) return ncf__fail(NCF_ERR_ARG, "ncf_recommend_index: NULL model or output");
    return ncf__recommend(m, u, o ? o : &ncf__rec_defaults, items, NULL, scores, "ncf_recommend_index");
}

NCFDEF int ncf_recommend(const ncf_model *m, int64_t user, const ncf_rec_opts *o, int64_t *items, float *scores)
{
    int u = -1, rc, n;
    if (!m || !items) return ncf__fail(NCF_ERR_ARG, "ncf_recommend: NULL model or output");
    if (m->item_text)
        return ncf__fail(NCF_ERR_ARG,
                         "ncf_recommend: this model's item ids are text, not integers: ncf_recommend_index gives "
                         "item indices, ncf_id their ids");
    if (!o) o = &ncf__rec_defaults;
    if (!o->user_row && (rc = ncf__user_of(m, user, &u)) != NCF_OK) return rc;
    n = ncf__recommend(m, u, o, NULL, items, scores, "ncf_recommend");
    if (n > 0) ncf__indices_to_ids(m, items, n);
    return n;
}

NCFDEF int ncf_recommend_users(const ncf_model *m, const int32_t *users, int n, const ncf_rec_opts *opts,
                               int32_t *items, float *scores, int *counts)
{
    const ncf_rec_opts *o = opts ? opts : &ncf__rec_defaults;
    ncf__rec_job J;
    ncf__team team = NCF__TEAM_INIT;
    size_t size;
    char *block;
    int32_t *lists;
    int rc, j, T = ncf__threads(), failed = 0;
    if (!m || !items || !counts || n < 0 || o->user_row || o->work)
        return ncf__fail(NCF_ERR_ARG,
                         "ncf_recommend_users: need a model, options (without user_row or work), outputs "
                         "and n >= 0");
    for (j = 0; users && j < n; j++)
        if (users[j] < 0 || users[j] >= m->cfg.num_users)
            return ncf__fail(NCF_ERR_ARG, "ncf_recommend_users: users[%d] = %d is not a user index in [0, %d)", j,
                             (int)users[j], m->cfg.num_users);
    if (!users && n > m->cfg.num_users)
        return ncf__fail(NCF_ERR_ARG, "ncf_recommend_users: %d users asked for; the model has %d", n, m->cfg.num_users);
    if ((rc = ncf__check_rec_opts(o, "ncf_recommend_users")) != NCF_OK) return rc;
    T = T > 1 && n > 1 ? (n < T ? n : T) : 1; /* workspaces for the threads that can run only */
    size = ncf__score_workspace(m, o->k);
    lists = (int32_t *)NCF_MALLOC(ncf__lists_bytes(o));
    block = (char *)ncf__alloc((size_t)T, size);
    if (!lists || !block) {
        NCF_FREE(lists), NCF_FREE(block);
        return ncf__fail(NCF_ERR_NOMEM, "out of memory for %d workspaces", T);
    }
    if ((rc = ncf__rec_job_of(m, users && n > 0 ? users[0] : 0, o, lists, &J, "ncf_recommend_users")) != NCF_OK ||
        n == 0) {
        NCF_FREE(lists), NCF_FREE(block);
        return rc;
    }
    NCF__PARALLEL_N(T > 1, T)
    { /* a user at a time, each on one thread, in the same order as alone: the same answers */
        ncf__ctx x = ncf__join(&team);
        ncf__eval_buf e;
        ncf__cand *heap = NULL;
        ncf__rec_job Ju = J;
        int t = 0, q, nh;
        int64_t lo, hi, i;
#if NCF__TEAMS
        t = omp_get_thread_num();
#endif
        if (t >= T || ncf__workspace(m, o->k, block + (size_t)t * size, size, &e, &heap) != NCF_OK) failed = 1;
        else
            while (ncf__claim(&x, n, 1, &lo, &hi))
                for (i = lo; i < hi; i++) {
                    Ju.u = users ? users[i] : (int)i, nh = 0;
                    ncf__rec_range(&Ju, 0, Ju.ncand, &e, heap, &nh);
                    counts[i] = ncf__heap_out(heap, nh, items + (size_t)i * (size_t)o->k, NULL,
                                              scores ? scores + (size_t)i * (size_t)o->k : NULL);
                    if (o->probabilities && scores) ncf__sigmoid_all(scores + (size_t)i * (size_t)o->k, counts[i]);
                    for (q = counts[i]; q < o->k; q++) items[(size_t)i * (size_t)o->k + q] = -1;
                }
    }
    NCF_FREE(lists), NCF_FREE(block);
    return failed ? ncf__fail(NCF_ERR_NOMEM, "ncf_recommend_users: a thread found no workspace") : NCF_OK;
}

/* The logits of n items for user index u, or for the user rows urow when given. */
static int ncf__predict_items(const ncf_model *m, int u, const float *urow, const int32_t *items, int n, float *logits)
{
    size_t size;
    void *work;
    ncf__eval_buf e;
    ncf__cand *heap = NULL;
    int j;
    if (!m || !items || !logits || n < 0) return ncf__fail(NCF_ERR_ARG, "ncf_predict_for: NULL argument or n < 0");
    if (!urow && (u < 0 || u >= m->cfg.num_users))
        return ncf__fail(NCF_ERR_ARG, "ncf_predict_for: user index %d is not in [0, %d)", u, m->cfg.num_users);
    for (j = 0; j < n; j++)
        if (items[j] < 0 || items[j] >= m->cfg.num_items)
            return ncf__fail(NCF_ERR_ARG, "ncf_predict_for: items[%d] = %d is not an item index", j, (int)items[j]);
    size = ncf__score_workspace(m, 1);
    if (!(work = NCF_MALLOC(size)))
        return ncf__fail(NCF_ERR_NOMEM, "out of memory for a %lu-byte workspace", (unsigned long)size);
    ncf__workspace(m, 1, work, size, &e, &heap);
    for (j = 0; j < n; j += ncf__score_chunk(m)) {
        int c = n - j < ncf__score_chunk(m) ? n - j : ncf__score_chunk(m);
        ncf__score_user(m, ncf__cached_projection(m), urow ? -1 : u, urow, items + j, 0, c, &e, j > 0);
        memcpy(logits + j, e.sc, sizeof(float) * (size_t)c);
    }
    NCF_FREE(work);
    return NCF_OK;
}

/* ---- >>similar: similar items and users by cosine ------------------------------------------- */
/* A user's or an item's vector for similarity, D floats: what a score is linear in. MF: its
   factors; GMF and NeuMF: its GMF factors weighted by the output layer's (the GMF half of NeuMF:
   the MLP half of a NeuMF score is not a product of a user's and an item's vectors, so it has
   no such similarity); MLP: its half of the first dense layer (W1 p_u or W1 q_i: what the
   tower sees of it). Side 0 users, 1 items. */
static int ncf__item_vec_dim(const ncf_model *m) { return m->scratch->F ? m->scratch->F : m->cfg.layers[1]; }

static void ncf__side_vec(const ncf_model *m, int side, int i, float *tmp, float *v)
{
    const struct ncf__scratch *s = m->scratch;
    int d, D = ncf__item_vec_dim(m);
    if (s->F) {
        const float *q = ncf__emb_row(&s->tables.tab[s->tables.gmf], side, i, tmp);
        for (d = 0; d < D; d++) v[d] = s->tables.gmf_weights[d] * q[d];
        return;
    }
    {
        const float *proj = side ? ncf__proj_row_major(m, ncf__cached_projection(m)) : NULL, *r;
        if (proj) {
            memcpy(v, proj + (size_t)i * D, sizeof(float) * (size_t)D);
            return;
        }
        r = ncf__emb_row(&s->tables.tab[s->tables.mlp], side, i, tmp);
        ncf__gemm_rows(v, D, r, 0, 1, m->w[1] + (size_t)side * s->H * D, D, NULL, 0, 1, D, s->H, 0);
    }
}

static float ncf__norm(const float *v, int n)
{
    float a = 0.0f;
    int d;
    for (d = 0; d < n; d++) a += v[d] * v[d];
    return sqrtf(a);
}

/* The k users (side 0) or items (1) most like index i, among the candidates of J (every one of
   the side without lists), into out; heap and v (3 vectors) are the caller's. */
static int ncf__similar(const ncf_model *m, int side, int i, const ncf__rec_job *J, ncf__cand *heap, float *v,
                        int32_t *out, float *scores)
{
    int D = ncf__item_vec_dim(m), n = 0, d;
    float *w = v + D, *tmp = w + D, nv;
    ncf__skipper sk;
    int64_t p;
    ncf__cand x;
    ncf__skipper_at(&sk, J, J->allow ? (J->ncand ? J->allow[0] : 0) : 0);
    ncf__side_vec(m, side, i, tmp, v);
    nv = ncf__norm(v, D);
    for (p = 0; p < J->ncand; p++) {
        int32_t j = J->allow ? J->allow[p] : (int32_t)p;
        float dot = 0.0f, nw;
        if (j == i || ncf__skips(&sk, j)) continue;
        ncf__side_vec(m, side, j, tmp, w);
        for (d = 0; d < D; d++) dot += v[d] * w[d];
        nw = ncf__norm(w, D);
        x.score = nv > 0.0f && nw > 0.0f ? dot / (nv * nw) : 0.0f, x.item = j;
        ncf__heap_offer(heap, &n, J->k, x);
    }
    return ncf__heap_out(heap, n, out, NULL, scores);
}

/* The buffers of a similarity call: in the caller's workspace (the k best, three vectors, then
   the lists where recommend has them), or from the heap (*own set). */
static int ncf__similar_buffers(const ncf_model *m, const ncf_rec_opts *o, int best, ncf__cand **heap, float **v,
                                int32_t **lists, int *own, const char *what)
{
    int D = ncf__item_vec_dim(m), H = m->scratch->H;
    *own = !o->work;
    if (o->work) {
        size_t need = ncf_rec_workspace_size(m, o), base = ncf__rec_base(m, o->k);
        char *at = (char *)o->work + (size_t)(-(intptr_t)o->work & 63);
        if (o->work_size < need)
            return ncf__fail(NCF_ERR_ARG,
                             "%s: workspace of %lu bytes; this model and these options need %lu "
                             "(ncf_rec_workspace_size)",
                             what, (unsigned long)o->work_size, (unsigned long)need);
        *heap = (ncf__cand *)(void *)at;
        *v =
            (float *)(void *)(at + sizeof(float) * ncf__round_floats((size_t)best * sizeof(ncf__cand) / sizeof(float)));
        *lists = (int32_t *)(((uintptr_t)o->work + base + 3) & ~(uintptr_t)3);
        return NCF_OK;
    }
    *lists = (int32_t *)NCF_MALLOC(ncf__lists_bytes(o));
    *heap = NCF__NEW(ncf__cand, best);
    *v = NCF__NEW(float, (size_t)3 * (D > H ? D : H));
    if (*lists && *heap && *v) return NCF_OK;
    NCF__DROP(*lists), NCF__DROP(*heap), NCF__DROP(*v);
    return ncf__fail(NCF_ERR_NOMEM, "%s: out of memory", what);
}

static int ncf__similar_items(const ncf_model *m, int item, const ncf_rec_opts *o, int32_t *items, float *scores)
{
    ncf__rec_job J;
    ncf__cand *heap;
    float *v;
    int32_t *lists;
    int rc, own;
    if (!m || !o || !items || o->user_row)
        return ncf__fail(NCF_ERR_ARG, "ncf_similar: need a model, options (no user_row) and an output");
    if ((rc = ncf__check_rec_opts(o, "ncf_similar")) != NCF_OK) return rc;
    if (item < 0 || item >= m->cfg.num_items)
        return ncf__fail(NCF_ERR_ARG, "ncf_similar: item index %d is not in [0, %d) (ncf_find finds an id's)", item,
                         m->cfg.num_items);
    rc = ncf__similar_buffers(m, o, o->k < m->cfg.num_items ? o->k : m->cfg.num_items, &heap, &v, &lists, &own,
                              "ncf_similar");
    if (rc != NCF_OK) return rc;
    if ((rc = ncf__rec_job_of(m, 0, o, lists, &J, "ncf_similar")) == NCF_OK)
        J.exclude_rated = 0, J.u = -1, rc = ncf__similar(m, 1, item, &J, heap, v, items, scores);
    if (own) NCF_FREE(lists), NCF_FREE(heap), NCF_FREE(v);
    return rc;
}

static int ncf__similar_users(const ncf_model *m, int user, const ncf_rec_opts *o, int32_t *users, float *scores)
{
    ncf__rec_job J;
    ncf__cand *heap;
    float *v;
    int32_t *lists;
    int rc, own;
    if (!m || !o || !users || o->user_row || o->allow || o->deny)
        return ncf__fail(NCF_ERR_ARG,
                         "ncf_similar: need a model, options (no user_row, allow or deny) and an "
                         "output");
    if ((rc = ncf__check_rec_opts(o, "ncf_similar")) != NCF_OK) return rc;
    if (user < 0 || user >= m->cfg.num_users)
        return ncf__fail(NCF_ERR_ARG, "ncf_similar: user index %d is not in [0, %d) (ncf_find finds an id's)", user,
                         m->cfg.num_users);
    rc = ncf__similar_buffers(m, o, o->k < m->cfg.num_users ? o->k : m->cfg.num_users, &heap, &v, &lists, &own,
                              "ncf_similar");
    if (rc != NCF_OK) return rc;
    memset(&J, 0, sizeof J);
    J.m = m, J.u = -1, J.ncand = m->cfg.num_users, J.k = o->k < m->cfg.num_users ? o->k : m->cfg.num_users;
    rc = ncf__similar(m, 0, user, &J, heap, v, users, scores);
    if (own) NCF_FREE(lists), NCF_FREE(heap), NCF_FREE(v);
    return rc;
}

NCFDEF int ncf_similar(const ncf_model *m, int side, int index, const ncf_rec_opts *o, int32_t *out, float *scores)
{
    int rc = ncf__side_ok(m, side, "ncf_similar");
    if (rc != NCF_OK) return rc;
    return side == NCF_ITEM ? ncf__similar_items(m, index, o ? o : &ncf__rec_defaults, out, scores)
                            : ncf__similar_users(m, index, o ? o : &ncf__rec_defaults, out, scores);
}

/* ---- >>by-id: serving calls that speak ids ------------------------------------------------ */

/* items[0..n) as ids, each NUL-terminated, one after another in ids: n, or NCF_ERR_ARG. */
static int ncf__ids_out(const ncf_model *m, const int32_t *items, int n, char *ids, size_t size, const char *what)
{
    size_t at = 0;
    int j, len;
    for (j = 0; j < n; j++, at += (size_t)len + 1)
        if ((len = ncf_id(m, NCF_ITEM, items[j], ids + at, size - at)) < 0)
            return ncf__fail(NCF_ERR_ARG, "%s: %lu bytes hold %d of the %d ids (k * (NCF_MAX_ID_BYTES + 1) suffice)",
                             what, (unsigned long)size, j, n);
    return n;
}

/* The k-item buffer of a by-id call: on the stack for small k. */
#define NCF__BY_ID_STACK 64

/* Index-form answer a (n items or an error) turned into ids, its buffer freed when heap. */
static int ncf__by_id_answer(const ncf_model *m, int n, int32_t *items, int32_t *stack, char *ids, size_t size,
                             const char *what)
{
    if (n > 0) n = ncf__ids_out(m, items, n, ids, size, what);
    if (items != stack) NCF_FREE(items);
    return n;
}

/* Room for a by-id answer: k items, or the catalogue when k is more (no list is longer). */
static int32_t *ncf__by_id_items(const ncf_model *m, int k, int32_t *stack)
{
    if (k > m->cfg.num_items) k = m->cfg.num_items;
    return k <= NCF__BY_ID_STACK ? stack : NCF__NEW(int32_t, (size_t)k);
}

static int ncf__by_id_args(const ncf_model *m, const void *id, const ncf_rec_opts **o, char *ids, size_t size,
                           const char *what)
{
    static const ncf_rec_opts defaults = {10, 1, NULL, 0, NULL, 0, NULL, 0, NULL, 0, 0};
    if (!m || !id || !ids || size == 0) return ncf__fail(NCF_ERR_ARG, "%s: need a model, an id and an output", what);
    if (!*o) *o = &defaults;
    return ncf__check_rec_opts(*o, what);
}

NCFDEF int ncf_recommend_for_id(const ncf_model *m, const char *user, const ncf_rec_opts *o, char *ids, size_t size,
                                float *scores)
{
    int32_t stack[NCF__BY_ID_STACK], *items;
    int rc, u;
    if ((rc = ncf__by_id_args(m, user, &o, ids, size, "ncf_recommend_for_id")) != NCF_OK) return rc;
    if ((u = ncf_find(m, NCF_USER, user)) < 0) return u;
    if (!(items = ncf__by_id_items(m, o->k, stack)))
        return ncf__fail(NCF_ERR_NOMEM, "ncf_recommend_for_id: out of memory");
    return ncf__by_id_answer(m, ncf_recommend_index(m, u, o, items, scores), items, stack, ids, size,
                             "ncf_recommend_for_id");
}

NCFDEF int ncf_similar_to_id(const ncf_model *m, const char *item, const ncf_rec_opts *o, char *ids, size_t size,
                             float *scores)
{
    int32_t stack[NCF__BY_ID_STACK], *items;
    int rc, i;
    if ((rc = ncf__by_id_args(m, item, &o, ids, size, "ncf_similar_to_id")) != NCF_OK) return rc;
    if ((i = ncf_find(m, NCF_ITEM, item)) < 0) return i;
    if (!(items = ncf__by_id_items(m, o->k, stack)))
        return ncf__fail(NCF_ERR_NOMEM, "ncf_similar_to_id: out of memory");
    return ncf__by_id_answer(m, ncf_similar(m, NCF_ITEM, i, o, items, scores), items, stack, ids, size,
                             "ncf_similar_to_id");
}

NCFDEF int ncf_recommend_for_items(const ncf_model *m, const char *const *given, int n, const ncf_rec_opts *o,
                                   const ncf_fold_opts *fold, char *ids, size_t size, float *scores)
{
    ncf_fold_opts fo = fold ? *fold : ncf_fold_opts_default();
    ncf_rec_opts ro;
    int32_t stack[NCF__BY_ID_STACK], *items = NULL, *deny;
    float *row;
    int rc, j;
    if ((rc = ncf__by_id_args(m, given, &o, ids, size, "ncf_recommend_for_items")) != NCF_OK) return rc;
    if (n <= 0 || o->user_row || (size_t)n > (size_t)INT32_MAX - (size_t)o->num_deny)
        return ncf__fail(NCF_ERR_ARG, "ncf_recommend_for_items: need n > 0 items and options without user_row");
    ro = *o;
    deny = NCF__NEW(int32_t, (size_t)n + (size_t)o->num_deny);
    row = NCF__NEW(float, (size_t)ncf_row_size(m));
    if (deny && row) items = ncf__by_id_items(m, o->k, stack);
    if (!deny || !row || !items) {
        NCF_FREE(deny), NCF_FREE(row);
        return ncf__fail(NCF_ERR_NOMEM, "ncf_recommend_for_items: out of memory for %d items", n);
    }
    for (j = 0, rc = NCF_OK; j < n && rc >= 0; j++) {
        if (!given[j]) rc = ncf__fail(NCF_ERR_ARG, "ncf_recommend_for_items: items[%d] is NULL", j);
        else rc = deny[j] = ncf_find(m, NCF_ITEM, given[j]);
    }
    if (rc >= 0) {
        if (o->num_deny) memcpy(deny + n, o->deny, sizeof(int32_t) * (size_t)o->num_deny);
        ro.deny = deny, ro.num_deny = n + o->num_deny, ro.user_row = row;
        rc = ncf_fold_in(m, NCF_USER, deny, n, &fo, row);
        if (rc == NCF_OK) rc = ncf_recommend_index(m, -1, &ro, items, scores);
    }
    NCF_FREE(deny), NCF_FREE(row);
    return ncf__by_id_answer(m, rc, items, stack, ids, size, "ncf_recommend_for_items");
}
