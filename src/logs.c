#ifndef NCF_INFERENCE_ONLY /* the whole stage: a device only serves */
/* ---- >>data: datasets: held-out lists, what the parsers hand the build ----------------------- */

NCFDEF ncf_dataset_opts ncf_dataset_opts_default(void)
{
    ncf_dataset_opts o;
    memset(&o, 0, sizeof o);
    o.format = NCF_FORMAT_AUTO;
    o.min_rating = -HUGE_VALF;
    o.alpha = 1.0f;
    o.holdout_fraction = 0.2f;
    return o;
}

NCFDEF void ncf_dataset_free(ncf_dataset *ds)
{
    if (!ds) return;
    NCF_FREE(ds->user_ptr);
    NCF_FREE(ds->items);
    NCF_FREE(ds->train_user);
    NCF_FREE(ds->weight);
    NCF_FREE(ds->test_item);
    NCF_FREE(ds->test_ptr), NCF_FREE(ds->test_items), NCF_FREE(ds->val_ptr), NCF_FREE(ds->val_items);
    NCF_FREE(ds->eval_neg);
    NCF_FREE(ds->raw_user);
    NCF_FREE(ds->raw_item);
    NCF_FREE(ds->recent_item);
    NCF_FREE(ds->val_item);
    NCF_FREE(ds->val_weight);
    NCF_FREE(ds->val_neg);
    NCF_FREE(ds->shard.groups);
    NCF_FREE(ds->user_text);
    NCF_FREE(ds->item_text);
    NCF_FREE(ds->user_text_at);
    NCF_FREE(ds->item_text_at);
    memset(ds, 0, sizeof *ds);
}

/* User u's id for a message (one of two slots, as ncf__i64s). */
static const char *ncf__user_name(const ncf_dataset *ds, int u, int slot)
{
    static NCF__TLS char buf[2][NCF_MAX_ID_BYTES + 1];
    ncf__ids t = ncf__dataset_ids(ds, 0);
    if (ncf__ids_name(&t, u, buf[slot & 1], sizeof buf[0]) < 0) return ncf__i64s(u, slot);
    return buf[slot & 1];
}

/* Allocates the arrays of a dataset whose sizes are set; fills train_user later. */
static int ncf__dataset_alloc(ncf_dataset *ds)
{
    ds->user_ptr = NCF__ZNEW(int64_t, ds->num_users + 1);
    ds->items = NCF__NEW(int32_t, ds->num_train);
    ds->train_user = NCF__NEW(int32_t, ds->num_train);
    ds->test_item = NCF__NEW(int32_t, ds->num_users);
    ds->raw_user = NCF__NEW(int64_t, ds->num_users);
    ds->raw_item = NCF__NEW(int64_t, ds->num_items);
    if (!ds->user_ptr || !ds->items || !ds->train_user || !ds->test_item || !ds->raw_user || !ds->raw_item) {
        ncf_dataset_free(ds);
        return ncf__fail(NCF_ERR_NOMEM, "out of memory for a dataset of %lld positives", (long long)ds->num_train);
    }
    return NCF_OK;
}

static void ncf__fill_train_user(ncf_dataset *ds)
{
    int u;
    NCF__OMP(parallel for schedule(static) num_threads(ncf__team(1)))
    for (u = 0; u < ds->num_users; u++) {
        int64_t k;
        for (k = ds->user_ptr[u]; k < ds->user_ptr[u + 1]; k++) ds->train_user[k] = u;
    }
}

/* The validation item of u, or -1. */
static int32_t ncf__val_of(const ncf_dataset *ds, int u) { return ds->val_item ? ds->val_item[u] : -1; }

/* u's held-out items for the target, ascending, *n of them: either split's. */
static const int32_t *ncf__held_list(const ncf_dataset *d, int target, int u, int64_t *n)
{
    const int64_t *ptr = target == NCF_EVAL_VALIDATION ? d->val_ptr : d->test_ptr;
    const int32_t *one = target == NCF_EVAL_VALIDATION ? d->val_item : d->test_item;
    if (ptr) {
        *n = ptr[u + 1] - ptr[u];
        return (target == NCF_EVAL_VALIDATION ? d->val_items : d->test_items) + ptr[u];
    }
    *n = one && one[u] >= 0;
    return *n ? one + u : NULL;
}

/* Whether the data has validation items (either split's). */
static int ncf__has_val(const ncf_dataset *d) { return d->val_item || d->val_ptr; }

/* Whether the data is a shard of ncf_mpi_shard's (its rows those of some users only): the one
   question the core asks of a shard, besides the offsets of its rows (shard.train_lo, user_lo). */
static int ncf__is_shard(const ncf_dataset *ds) { return ds->shard.total_train != 0; }
/* The positives of the whole data, also for a shard. */
static int64_t ncf__all_train(const ncf_dataset *ds)
{
    return ncf__is_shard(ds) ? ds->shard.total_train : ds->num_train;
}

/* Items u never rated: neither a training positive nor its test or validation item (which
   are kept out of the training list). */
static int64_t ncf__num_unrated(const ncf_dataset *ds, int u)
{
    return ds->num_items - (ds->user_ptr[u + 1] - ds->user_ptr[u]) - (ds->test_item[u] >= 0) -
        (ncf__val_of(ds, u) >= 0);
}

/* Items not in u's training list: what a training negative is drawn from. */
static int64_t ncf__num_untrained(const ncf_dataset *ds, int u)
{
    return ds->num_items - (ds->user_ptr[u + 1] - ds->user_ptr[u]);
}

/* The r-th unrated item of user u, 0 <= r < ncf__num_unrated(ds, u). */
static int32_t ncf__nth_unrated(const ncf_dataset *ds, int u, int64_t r)
{
    const int32_t *p = ds->items + ds->user_ptr[u];
    int64_t d = ds->user_ptr[u + 1] - ds->user_ptr[u];
    int32_t t = ds->test_item[u], v = ncf__val_of(ds, u), lo = t < v ? t : v, hi = t < v ? v : t;
    int64_t x = ncf__nth_absent(p, d, r), skip = 0;
    /* skip over the held-out items (-1: none), the lower first; neither is in p */
    if (lo >= 0 && lo <= x) x = ncf__nth_absent(p, d, r + ++skip);
    if (hi >= 0 && hi <= x) x = ncf__nth_absent(p, d, r + ++skip);
    return (int32_t)x;
}

/* How ncf__build turns parsed interactions into a dataset. */
typedef struct {
    const uint8_t *positive;      /* [n] 0: rated below min_rating; NULL: every line is a positive */
    int min_ratings;              /* drop users with fewer positives */
    int min_item_ratings;         /* drop items with fewer positives from the users kept */
    int kcore;                    /* repeat both until neither drops anything */
    int holdout;                  /* NCF_HOLDOUT_*, or NCF__HOLDOUT_SPLIT */
    uint64_t seed;                /* the random hold-out */
    int fixed_users, fixed_items; /* > 0: ids already dense (the paper split) */
    const double *strength;       /* [n] each line's strength, or NULL: no weighting */
    int weighting;                /* NCF_WEIGHT_* of the strength */
    double alpha;
    ncf_load_report *report; /* filled when not NULL */
    int validation;          /* a split of many items: validation items too, by the same rule */
    double fraction;         /* its share held out (NCF_HOLDOUT_RATIO, _TIME; validation's for _CUTOFF) */
    int64_t cutoff;          /* NCF_HOLDOUT_CUTOFF's */
#ifdef NCF_MPI
    /* The distributed loader's: each rank builds from all the lines of some users, and the
       filters' counts are summed over the ranks (NULL: one process). */
    int (*reduce)(void *ctx, void *v, int64_t n, int op);
    void *ctx;
#endif
} ncf__build_opts;

/* What ncf__build_opts.reduce does to v[n] over the ranks. */
enum { NCF__SUM_I64, NCF__ALL_U8, NCF__ANY_U8, NCF__AGREE };
#ifdef NCF_MPI
#define NCF__REDUCE(bo, v, n, op) ((bo)->reduce ? (bo)->reduce((bo)->ctx, (v), (n), (op)) : NCF_OK)
#else
#define NCF__REDUCE(bo, v, n, op) ((void)(bo), (void)(v), NCF_OK)
#endif

/* The status every rank of a distributed build agrees on (this one's in one process). */
static int ncf__build_agree(const ncf__build_opts *bo, int rc)
{
#ifdef NCF_MPI
    if (bo->reduce) return bo->reduce(bo->ctx, &rc, 1, NCF__AGREE);
#else
    (void)bo;
#endif
    return rc;
}

/* The paper split's test lines: the latest, held out even when it is a user's only line. */
#define NCF__HOLDOUT_SPLIT 99
/* A split of many items per user (NCF_HOLDOUT_RATIO to _SAVED, and _ITEMS). */
#define NCF__MANY(h) (((h) >= NCF_HOLDOUT_RATIO && (h) <= NCF_HOLDOUT_SAVED) || (h) == NCF_HOLDOUT_ITEMS)

/* The dataset from parsed triples: >>split, after the parsers that feed it. */
static int ncf__build(ncf_dataset *ds, const int64_t *users, const int64_t *items, const int64_t *times, int64_t n,
                      const ncf__build_opts *bo);

/* Delimited logs: dialect, columns, records, text ids. */
/* The bytes of a UTF-8 byte order mark at p (3), or 0. */
static size_t ncf__bom_bytes(const char *p, size_t len) { return len >= 3 && !memcmp(p, "\xEF\xBB\xBF", 3) ? 3 : 0; }

/* A log is read from a buffer: its separator, header and columns are found from the first
   records (or given), then every record's ids, rating and timestamp are read. A column whose
   ids are all plain integers keeps them as numbers (the fast path MovieLens takes); the first
   other id turns the column to text and the reading starts over, every distinct text id then
   interned once. Nothing is written into the buffer. */

typedef struct {
    const char *p, *end;
    int64_t line, next;
} ncf__cursor; /* line: the record's */
typedef struct {
    const char *s, *e;
} ncf__span;

#define NCF__MAX_FIELDS 64 /* fields a record keeps; more are counted */

static int ncf__blank(char c) { return c == ' ' || c == '\t'; }

/* Past a line end (LF, CRLF or CR) at p. */
static const char *ncf__past_eol(const char *p, const char *end)
{
    if (p < end && *p == '\r') return p + 1 < end && p[1] == '\n' ? p + 2 : p + 1;
    return p < end && *p == '\n' ? p + 1 : p;
}

/* A quoted field from its opening quote: past its closing quote (separators and line ends
   inside are text), or NULL when the buffer ends first. */
static const char *ncf__past_quoted(ncf__cursor *C, const char *p)
{
    for (p++; p < C->end; p++) {
        if (*p == '"') {
            if (p + 1 < C->end && p[1] == '"') p++;
            else return p + 1;
        } else if (*p == '\n' || (*p == '\r' && !(p + 1 < C->end && p[1] == '\n'))) {
            C->next++;
        }
    }
    return NULL;
}

/* The next record's fields, split at sep outside quotes (which stay: ncf__value removes
   them), up to a line end or the end of the buffer, which it steps over. sep " " is a run of
   blanks. Fields past max are counted, not stored. Returns the count; 0 for a blank line; -1
   at the end; -2 when a quote is still open at the end of the buffer. */
static int ncf__record(ncf__cursor *C, const char *sep, ncf__span *f, int max)
{
    const char *p = C->p, *end = C->end;
    char c0 = sep[0], c1 = sep[1];
    int n = 0, blanks = c0 == ' ';
    if (p >= end) return -1;
    C->line = C->next;
    if (blanks)
        while (p < end && ncf__blank(*p)) p++;
    for (;;) {
        const char *s = p;
        if (p < end && *p == '"' && !(p = ncf__past_quoted(C, p))) {
            C->p = end;
            return -2;
        }
        for (; p < end; p++) {
            char c = *p;
            if (c == '\n' || c == '\r' || (c == c0 && (!c1 || (p + 1 < end && p[1] == c1))) || (blanks && c == '\t'))
                break;
        }
        if (n < max) f[n].s = s, f[n].e = p;
        n++;
        if (p >= end || *p == '\n' || *p == '\r') break;
        p += c1 ? 2 : 1;
        if (blanks) {
            while (p < end && ncf__blank(*p)) p++;
            if (p >= end || *p == '\n' || *p == '\r') break; /* trailing blanks */
        }
    }
    C->p = ncf__past_eol(p, end);
    C->next++;
    if (n == 1) { /* a line of blanks is a blank line */
        const char *q = f[0].s;
        while (q < f[0].e && ncf__blank(*q)) q++;
        if (q == f[0].e) return 0;
    }
    return n;
}

/* A field's value: blanks around it trimmed and, when quoted, the quotes off. *escaped says
   that "" stands inside for a quote (ncf__unescape reads it). */
static ncf__span ncf__value(ncf__span f, int *escaped)
{
    const char *q;
    *escaped = 0;
    while (f.s < f.e && ncf__blank(*f.s)) f.s++;
    while (f.e > f.s && ncf__blank(f.e[-1])) f.e--;
    if (f.e - f.s >= 2 && *f.s == '"' && f.e[-1] == '"') {
        f.s++, f.e--;
        for (q = f.s; q < f.e && !*escaped; q++) *escaped = *q == '"';
    }
    return f;
}

/* A quoted value's bytes with each "" read as one quote, into buf (NCF_MAX_ID_BYTES): the
   length, or -1 when longer. */
static int ncf__unescape(ncf__span v, char *buf)
{
    const char *p;
    int n = 0;
    for (p = v.s; p < v.e; p++) {
        if (*p == '"' && p + 1 < v.e && p[1] == '"') p++;
        if (n == NCF_MAX_ID_BYTES) return -1;
        buf[n++] = *p;
    }
    return n;
}

/* 1 and *v for an integer in (-2^63, 2^63), -1 for one of more digits (too large), else 0. */
static int ncf__int_field(const char *s, const char *e, int64_t *v)
{
    int neg = 0, big = 0;
    uint64_t x = 0;
    if (s < e && (*s == '-' || *s == '+')) neg = *s++ == '-';
    if (s == e) return 0;
    for (; s < e; s++) {
        if (*s < '0' || *s > '9') return 0;
        if (x > (UINT64_MAX - (uint64_t)(*s - '0')) / 10) big = 1; /* keep reading: "12x" is not an integer */
        else x = x * 10 + (uint64_t)(*s - '0');
    }
    if (big || x >= UINT64_C(1) << 63) return -1;
    *v = neg ? -(int64_t)x : (int64_t)x;
    return 1;
}

static int ncf__num_field(const char *s, const char *e)
{
    int digits = 0;
    if (s < e && (*s == '-' || *s == '+')) s++;
    while (s < e && *s >= '0' && *s <= '9') s++, digits++;
    if (s < e && *s == '.')
        for (s++; s < e && *s >= '0' && *s <= '9'; s++) digits++;
    if (digits && s < e && (*s == 'e' || *s == 'E')) {
        s++;
        if (s < e && (*s == '-' || *s == '+')) s++;
        if (s == e) return 0;
        while (s < e && *s >= '0' && *s <= '9') s++;
    }
    return digits > 0 && s == e;
}

/* A number ncf__num_field accepted, as a double (a longer one than 63 characters is 0). */
static double ncf__num_value(ncf__span v)
{
    char tmp[64];
    size_t n = (size_t)(v.e - v.s);
    if (n >= sizeof tmp) return 0;
    memcpy(tmp, v.s, n), tmp[n] = 0;
    return strtod(tmp, NULL);
}

static const char *ncf__sep_name(const char *sep) { return sep[0] == '\t' ? "TAB" : sep[0] == ' ' ? "blanks" : sep; }

/* Growable triples of one file, with whether each is a positive (pos, when min_rating is set)
   and its strength (str, with a weighting). */
typedef struct {
    int64_t *u, *i, *t;
    uint8_t *pos;
    double *str;
    int64_t n, cap;
} ncf__triples;

static void ncf__triples_free(ncf__triples *tr)
{
    NCF_FREE(tr->u);
    NCF_FREE(tr->i);
    NCF_FREE(tr->t);
    NCF_FREE(tr->pos);
    NCF_FREE(tr->str);
    memset(tr, 0, sizeof *tr); /* safe to free twice: a failed parse frees, then its caller */
}

static int ncf__triples_reserve(ncf__triples *tr, int64_t cap, int with_pos, int with_str)
{
    tr->u = NCF__NEW(int64_t, cap);
    tr->i = NCF__NEW(int64_t, cap);
    tr->t = NCF__NEW(int64_t, cap);
    tr->pos = with_pos ? NCF__NEW(uint8_t, cap) : NULL;
    tr->str = with_str ? NCF__NEW(double, cap) : NULL;
    tr->n = 0, tr->cap = cap;
    if (tr->u && tr->i && tr->t && (tr->pos || !with_pos) && (tr->str || !with_str)) return NCF_OK;
    ncf__triples_free(tr);
    return ncf__fail(NCF_ERR_NOMEM, "out of memory for %lld ratings", (long long)cap);
}

/* The distinct text ids of a column in the order first read: open addressing over their bytes.
   The hash is keyed by a secret each table draws (ncf__secret_key): with a fixed key, ids
   chosen so their hashes share low bits would put every insert on one chain, and a log of n
   such ids would take n^2 to read. The key decides only where ids sit in the slots, never
   their numbers, so results do not depend on it. */
typedef struct {
    int32_t *slot; /* [cap] 1 + the id's number; 0: empty */
    int64_t *at;   /* [n + 1] where each id's bytes start in bytes */
    char *bytes;
    int64_t n, at_cap, used, bytes_cap;
    size_t cap;      /* slots: a power of 2, at least twice n */
    uint64_t key;    /* the hash's secret key; 0: not drawn yet */
    uint64_t probes; /* slots looked at, over all lookups (the tests bound it) */
} ncf__intern;

static void ncf__intern_free(ncf__intern *t)
{
    NCF_FREE(t->slot), NCF_FREE(t->at), NCF_FREE(t->bytes);
    memset(t, 0, sizeof *t);
}

/* A key no file can know in advance: the addresses the OS placed this table, this stack and
   this code at (randomized where the OS randomizes them), and the time and CPU clock now. */
static uint64_t ncf__secret_key(const void *salt)
{
    uint64_t h = ncf__mix64((uint64_t)(uintptr_t)salt ^ 0x243F6A8885A308D3ull);
    h = ncf__mix64(h ^ (uint64_t)(uintptr_t)&h);
    h = ncf__mix64(h ^ (uint64_t)(uintptr_t)&ncf__secret_key);
    h = ncf__mix64(h ^ (uint64_t)time(NULL));
    h = ncf__mix64(h ^ (uint64_t)clock());
    return h | 1;
}

static uint64_t ncf__hash_bytes(uint64_t key, const char *p, size_t n)
{
    uint64_t h = key ^ (uint64_t)n, w;
    for (; n >= 8; p += 8, n -= 8) memcpy(&w, p, 8), h = ncf__mix64(h ^ w) + key;
    if (n) w = 0, memcpy(&w, p, n), h = ncf__mix64(h ^ w) + key;
    return ncf__mix64(h ^ (key >> 17));
}

/* Where [s, s+len) sits in the slots: its slot, or the empty one it would take. */
static size_t ncf__intern_slot(ncf__intern *t, const char *s, size_t len)
{
    size_t i = (size_t)ncf__hash_bytes(t->key, s, len) & (t->cap - 1);
    for (;; i = (i + 1) & (t->cap - 1)) {
        int32_t k = t->slot[i] - 1;
        t->probes++;
        if (k < 0 || ((size_t)(t->at[k + 1] - t->at[k]) == len && !memcmp(t->bytes + t->at[k], s, len))) return i;
    }
}

/* Room for one more id of len bytes: twice the slots, the offsets or the bytes when full. */
static int ncf__intern_room(ncf__intern *t, size_t len)
{
    if ((size_t)(t->n + 1) * 2 > t->cap) {
        size_t cap = t->cap ? 2 * t->cap : 1024;
        if (!t->key) t->key = ncf__secret_key(t);
        int32_t *old = t->slot, k;
        if (!(t->slot = NCF__ZNEW(int32_t, cap))) {
            t->slot = old;
            return 0;
        }
        t->cap = cap;
        for (k = 0; k < t->n; k++)
            t->slot[ncf__intern_slot(t, t->bytes + t->at[k], (size_t)(t->at[k + 1] - t->at[k]))] = k + 1;
        NCF_FREE(old);
    }
    if (t->n + 2 > t->at_cap) {
        int64_t cap = t->at_cap ? 2 * t->at_cap : 1024,
                *at = (int64_t *)NCF_REALLOC(t->at, sizeof(int64_t) * (size_t)cap);
        if (!at) return 0;
        if (!t->at_cap) at[0] = 0;
        t->at = at, t->at_cap = cap;
    }
    if (t->used + (int64_t)len > t->bytes_cap) {
        int64_t cap = t->bytes_cap ? 2 * t->bytes_cap : 16384;
        char *b;
        while (cap < t->used + (int64_t)len) cap *= 2;
        if (!(b = (char *)NCF_REALLOC(t->bytes, (size_t)cap))) return 0;
        t->bytes = b, t->bytes_cap = cap;
    }
    return 1;
}

/* The number of id [s, s+len), added when new; -1 out of memory. */
static int64_t ncf__intern_add(ncf__intern *t, const char *s, size_t len)
{
    size_t i;
    if (t->cap && t->slot[i = ncf__intern_slot(t, s, len)]) return t->slot[i] - 1;
    if (t->n >= INT32_MAX - 1 || !ncf__intern_room(t, len)) return -1;
    i = ncf__intern_slot(t, s, len);
    memcpy(t->bytes + t->used, s, len);
    t->used += (int64_t)len;
    t->at[t->n + 1] = t->used;
    t->slot[i] = (int32_t)(t->n + 1);
    return t->n++;
}

typedef struct {
    const char *p;
    int64_t len, num;
    int32_t src;
} ncf__idkey;

static int ncf__cmp_idkey_num(const void *a, const void *b)
{
    int64_t x = ((const ncf__idkey *)a)->num, y = ((const ncf__idkey *)b)->num;
    return (x > y) - (x < y);
}

static int ncf__cmp_idkey_text(const void *a, const void *b)
{
    const ncf__idkey *x = (const ncf__idkey *)a, *y = (const ncf__idkey *)b;
    return ncf__cmp_text(x->p, (size_t)x->len, y->p, (size_t)y->len);
}

/* The interned ids in byte order (text, at) and each one's place in it (rank[k]). */
static int ncf__intern_sort(const ncf__intern *t, char **text, int64_t **at, int64_t **rank)
{
    ncf__idkey *key = NCF__NEW(ncf__idkey, t->n ? t->n : 1);
    int64_t k;
    *text = NCF__NEW(char, t->used ? t->used : 1), *at = NCF__NEW(int64_t, t->n + 1),
    *rank = NCF__NEW(int64_t, t->n ? t->n : 1);
    if (!key || !*text || !*at || !*rank) {
        NCF_FREE(key), NCF__DROP(*text), NCF__DROP(*at), NCF__DROP(*rank);
        return ncf__fail(NCF_ERR_NOMEM, "out of memory sorting %lld ids", (long long)t->n);
    }
    for (k = 0; k < t->n; k++)
        key[k].p = t->bytes + t->at[k], key[k].len = t->at[k + 1] - t->at[k], key[k].src = (int32_t)k;
    ncf__sort(key, (size_t)t->n, sizeof *key, ncf__cmp_idkey_text);
    (*at)[0] = 0;
    for (k = 0; k < t->n; k++) {
        memcpy(*text + (*at)[k], key[k].p, (size_t)key[k].len);
        (*at)[k + 1] = (*at)[k] + key[k].len;
        (*rank)[key[k].src] = k;
    }
    NCF_FREE(key);
    return NCF_OK;
}

/* A column's kept ids from their ranks in (text, at) to their bytes: *raw (ranks) is freed. */
static int ncf__ids_to_text(int64_t **raw, int n, const char *text, const int64_t *at, char **out, int64_t **out_at)
{
    int64_t bytes = 0;
    int k;
    for (k = 0; k < n; k++) bytes += at[(*raw)[k] + 1] - at[(*raw)[k]];
    *out = NCF__NEW(char, bytes ? bytes : 1), *out_at = NCF__NEW(int64_t, (size_t)n + 1);
    if (!*out || !*out_at) {
        NCF__DROP(*out), NCF__DROP(*out_at);
        return ncf__fail(NCF_ERR_NOMEM, "out of memory for %d text ids", n);
    }
    for ((*out_at)[0] = 0, k = 0; k < n; k++) {
        int64_t r = (*raw)[k], len = at[r + 1] - at[r];
        memcpy(*out + (*out_at)[k], text + at[r], (size_t)len);
        (*out_at)[k + 1] = (*out_at)[k] + len;
    }
    NCF__DROP(*raw);
    return NCF_OK;
}

/* How a log is written: given, or found from its first records (ncf__sniff). */
typedef struct {
    char sep[4];      /* "::", "\t", ",", ";", "|", or " " for runs of blanks */
    int header;       /* the first record names the columns */
    int nf;           /* fields per record */
    int col[6];       /* user, item, rating, timestamp, strength, event: the 0-based field, -1 absent */
    int text[2];      /* user, item ids read as text */
    int need_int;     /* ids must be plain integers (the paper split) */
    int trim_ids;     /* blanks around an unquoted text id are not part of it (ncf_dataset_opts.trim_ids) */
    int64_t edged[2]; /* user, item id fields with a blank at either end, outside any quotes */
    /* ncf_dataset_opts.events: the kinds listed (nev, 0: none), the first nev of kind_name, and
       each one's strength */
    int nev;
    double ev_value[NCF_MAX_EVENT_KINDS];
    /* what the records held: lines rated 0 or below kept, event kinds as report.events (the
       listed ones first, then the others as first read) */
    int64_t nonpositive, events_dropped, other_events;
    int kinds;
    char kind_name[NCF_MAX_EVENT_KINDS][NCF_MAX_EVENT_NAME + 1];
    int64_t kind_lines[NCF_MAX_EVENT_KINDS];
} ncf__dialect;

/* Header names of each column (lower case, letters and digits only). A name that is none of
   these but ends in "rating" or "timestamp" is that column. (The strength has none: it is the
   rating column unless given.) */
static const char *const ncf__aliases[6] = {
    "user userid users uid visitorid visitor customerid customer clientid memberid accountid reviewerid profileid "
    "personid readerid listenerid viewerid playerid subscriberid buyerid",
    "item itemid items iid movieid movie isbn asin artistid artist productid product trackid track songid song bookid "
    "book businessid business sku articleid article animeid anime gameid game videoid video contentid courseid "
    "recipeid jokeid placeid poiid objectid docid newsid showid podcastid",
    "rating ratings score weight count plays playcount value stars preference feedback clicks views listens",
    "timestamp time ts unixtime epoch utime",
    "",
    "event events eventtype eventname action actiontype behavior behaviour behaviortype interaction interactiontype "
    "activity"};
static const char *const ncf__col_what[6] = {"user id", "item id", "rating", "timestamp", "strength", "event"};

/* A header name as the aliases are written: letters and digits, lower case. */
static void ncf__norm_name(ncf__span f, char *out, size_t size)
{
    size_t n = 0;
    for (; f.s < f.e && n + 1 < size; f.s++) {
        char c = *f.s;
        if (c >= 'A' && c <= 'Z') out[n++] = (char)(c - 'A' + 'a');
        else if ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9')) out[n++] = c;
    }
    out[n] = 0;
}

static int ncf__has_word(const char *list, const char *w)
{
    size_t n = strlen(w);
    const char *p = list;
    while (n && (p = strstr(p, w)) != NULL) {
        if ((p == list || p[-1] == ' ') && (p[n] == ' ' || p[n] == 0)) return 1;
        p += n;
    }
    return 0;
}

static int ncf__ends_with(const char *s, const char *suffix)
{
    size_t a = strlen(s), b = strlen(suffix);
    return a >= b && strcmp(s + a - b, suffix) == 0;
}

/* Which column a header name is, by the aliases: 0-5, or -1. */
static int ncf__alias_of(const char *norm)
{
    int c;
    for (c = 0; c < 6; c++)
        if (ncf__has_word(ncf__aliases[c], norm)) return c;
    return ncf__ends_with(norm, "rating") ? 2 : ncf__ends_with(norm, "timestamp") ? 3 : -1;
}

#define NCF__SNIFF 16 /* records the separator and header are judged on */

/* The first records: field counts, which fields are numbers, and the first one's fields. */
typedef struct {
    int n, nf[NCF__SNIFF];
    uint64_t num[NCF__SNIFF];
    ncf__span first[NCF__MAX_FIELDS];
} ncf__sample;

static void ncf__take_sample(const char *p, const char *end, const char *sep, ncf__sample *S)
{
    ncf__cursor C;
    ncf__span f[NCF__MAX_FIELDS];
    int nf, k;
    C.p = p, C.end = end, C.line = 0, C.next = 1;
    S->n = 0;
    while (S->n < NCF__SNIFF && (nf = ncf__record(&C, sep, f, NCF__MAX_FIELDS)) != -1) {
        if (nf == 0) continue;
        if (nf < 0) break;
        if (S->n == 0) memcpy(S->first, f, sizeof f);
        S->nf[S->n] = nf, S->num[S->n] = 0;
        for (k = 0; k < nf && k < 64; k++) {
            int esc;
            ncf__span v = ncf__value(f[k], &esc);
            if (ncf__num_field(v.s, v.e)) S->num[S->n] |= (uint64_t)1 << k;
        }
        S->n++;
    }
}

/* The separator that splits the first records into the same number of fields, two or more:
   the first of "::", TAB, ",", ";", "|" and blanks that does, else the one that splits most
   records. */
static const char *const ncf__seps[6] = {"::", "\t", ",", ";", "|", " "};
static void ncf__find_sep(const char *p, const char *end, char sep[4])
{
    const char *const *cand = ncf__seps;
    ncf__sample S;
    int c, k, best = 2, best_split = -1;
    for (c = 0; c < 6; c++) {
        int same = 1, split = 0;
        ncf__take_sample(p, end, cand[c], &S);
        for (k = 0; k < S.n; k++) same &= S.nf[k] == S.nf[0] && S.nf[0] >= 2, split += S.nf[k] >= 2;
        if (S.n && same) {
            best = c;
            break;
        }
        if (split > best_split) best_split = split, best = c;
    }
    strcpy(sep, cand[best]);
}

/* Whether the first record names columns: a known column name, a column asked for by name,
   or a field that is not a number where every later record has one. */
static int ncf__is_header(const ncf__sample *S, const ncf_dataset_opts *o)
{
    int k, c, r;
    char norm[64];
    int64_t v;
    for (k = 0; k < S->nf[0] && k < NCF__MAX_FIELDS; k++) {
        int esc;
        ncf__norm_name(ncf__value(S->first[k], &esc), norm, sizeof norm);
        if (norm[0] && ncf__alias_of(norm) >= 0) return 1;
    }
    for (c = 0; c < 6; c++)
        if (o->columns[c] && o->columns[c][0] &&
            ncf__int_field(o->columns[c], o->columns[c] + strlen(o->columns[c]), &v) != 1)
            return 1;
    for (k = 0; k < S->nf[0] && k < 64 && S->n > 1; k++) {
        int later = 1;
        for (r = 1; r < S->n; r++) later &= (S->num[r] >> k) & 1;
        if (later && !((S->num[0] >> k) & 1)) return 1;
    }
    return 0;
}

/* Whether some column is given as number k (it is then not another's by its place). */
static int ncf__column_given(const ncf_dataset_opts *o, int k)
{
    int c;
    int64_t v;
    for (c = 0; c < 6; c++)
        if (o->columns[c] && ncf__int_field(o->columns[c], o->columns[c] + strlen(o->columns[c]), &v) == 1 && v == k)
            return 1;
    return 0;
}

/* Column c as asked for (a 1-based number or a header name), by the aliases, or by position
   without a header, into *col: -1 when the file has none (rating and timestamp may be absent),
   -2 when a header has no name for the user or the item. The strength, read only with a
   weighting, is by default the rating column. */
static int ncf__find_column(const char *name, const ncf__sample *S, const ncf__dialect *D, const ncf_dataset_opts *o,
                            int c, int *col)
{
    const char *want = o->columns[c];
    char norm[64], w[64];
    int k;
    int64_t v;
    *col = -1;
    if (c == NCF_COL_STRENGTH && o->events) /* (the events' values are the strengths) */
        return want && want[0] ? ncf__fail(NCF_ERR_ARG,
                                           "%s: a strength column and an events list: the events' values "
                                           "are the strengths; give one",
                                           name)
                               : NCF_OK;
    if (c == NCF_COL_STRENGTH) {
        if (o->weighting == NCF_WEIGHT_NONE) return NCF_OK;
        if (!want) *col = D->col[NCF_COL_RATING];
        if (!want || !want[0])
            return *col >= 0 ? NCF_OK
                             : ncf__fail(NCF_ERR_ARG,
                                         "%s: a weighting needs a strength column (or a rating "
                                         "column), and the file has none",
                                         name);
    }
    if (want && !want[0])
        return c < 2 ? ncf__fail(NCF_ERR_ARG, "%s: the %s column cannot be none", name, ncf__col_what[c]) : NCF_OK;
    if (want && ncf__int_field(want, want + strlen(want), &v) == 1) {
        if (v < 1 || v > D->nf)
            return ncf__fail(NCF_ERR_ARG, "%s: %s column %s: the file has %d columns", name, ncf__col_what[c], want,
                             D->nf);
        *col = (int)v - 1;
        return NCF_OK;
    }
    if (!D->header) {
        if (want)
            return ncf__fail(NCF_ERR_ARG, "%s: %s column '%s': the file has no header; give its number", name,
                             ncf__col_what[c], want);
        *col = c < D->nf && c < NCF_COL_STRENGTH && !ncf__column_given(o, c + 1) ? c : -1; /* (never an event) */
        return NCF_OK;
    }
    if (want) {
        ncf__span ws;
        ws.s = want, ws.e = want + strlen(want);
        ncf__norm_name(ws, w, sizeof w);
    }
    for (k = 0; k < D->nf && k < NCF__MAX_FIELDS; k++) {
        int esc;
        ncf__norm_name(ncf__value(S->first[k], &esc), norm, sizeof norm);
        if (want ? !strcmp(norm, w) : norm[0] && ncf__alias_of(norm) == c) {
            *col = k;
            return NCF_OK;
        }
    }
    if (want) return ncf__fail(NCF_ERR_ARG, "%s:1: no column named '%s' in the header", name, want);
    if (c < 2) *col = -2;
    return NCF_OK;
}

/* The header as read, for a message. */
static const char *ncf__header_text(const ncf__sample *S)
{
    return ncf__shown(S->first[0].s, S->first[S->nf[0] < NCF__MAX_FIELDS ? S->nf[0] - 1 : NCF__MAX_FIELDS - 1].e);
}

/* Fills in what D leaves open from the first records: separator, header, fields, columns;
   and names them in rep. */
static int ncf__sniff(const char *name, const char *p, const char *end, const ncf_dataset_opts *o, ncf__dialect *D,
                      ncf_load_report *rep)
{
    ncf__sample S;
    int c, k;
    if (!D->sep[0]) ncf__find_sep(p, end, D->sep);
    ncf__take_sample(p, end, D->sep, &S);
    if (S.n == 0) return ncf__fail(NCF_ERR_PARSE, "%s: no ratings in the file", name);
    D->nf = S.nf[0];
    if (D->nf < 2)
        return ncf__fail(NCF_ERR_PARSE, "%s:1: one field a line: no separator ('%s' tried; give one)", name,
                         ncf__sep_name(D->sep));
    if (D->header < 0) D->header = ncf__is_header(&S, o);
    if (D->nf > NCF__MAX_FIELDS)
        return ncf__fail(NCF_ERR_PARSE, "%s:1: %d fields; at most %d are read", name, D->nf, NCF__MAX_FIELDS);
    for (c = 0; c < 6; c++) {
        int rc = ncf__find_column(name, &S, D, o, c, &D->col[c]);
        if (rc != NCF_OK) return rc;
        if (D->col[c] == -2)
            return ncf__fail(NCF_ERR_PARSE,
                             "%s:1: no %s column in the header '%s' (names tried: %s; or give the column)", name,
                             c ? "item" : "user", ncf__header_text(&S), ncf__aliases[c]);
        for (k = 0; k < c; k++)
            if (D->col[c] >= 0 && D->col[c] == D->col[k] && !(c == NCF_COL_STRENGTH && k == NCF_COL_RATING))
                return ncf__fail(NCF_ERR_ARG, "%s: column %d is both the %s and the %s", name, D->col[c] + 1,
                                 ncf__col_what[k], ncf__col_what[c]);
    }
    if (D->nev && D->col[NCF_COL_EVENT] < 0)
        return D->header
            ? ncf__fail(NCF_ERR_ARG,
                        "%s:1: an events list needs an event column, and the header '%s' has none "
                        "(names tried: %s; or give the column)",
                        name, ncf__header_text(&S), ncf__aliases[NCF_COL_EVENT])
            : ncf__fail(NCF_ERR_ARG, "%s: an events list needs the event column's number (no header)", name);
    memcpy(rep->sep, D->sep, sizeof rep->sep), rep->header = D->header;
    for (c = 0; c < 6; c++) {
        int esc;
        ncf__span v;
        rep->columns[c][0] = 0;
        if (D->col[c] < 0) continue;
        v = ncf__value(S.first[D->col[c]], &esc);
        if (D->header)
            snprintf(rep->columns[c], sizeof rep->columns[c], "%.*s", /* (fits: 39 bytes at most) */
                     (int)(v.e - v.s < 39 ? v.e - v.s : 39), v.s);
        else snprintf(rep->columns[c], sizeof rep->columns[c], "column %d", D->col[c] + 1);
    }
    return NCF_OK;
}

/* Records in the buffer at most: its line ends, plus one. */
static int64_t ncf__max_records(const char *p, const char *end)
{
    int64_t n = 1;
    for (; p < end; p++) n += *p == '\n' || (*p == '\r' && !(p + 1 < end && p[1] == '\n'));
    return n;
}

/* An id field into *v: a plain integer, or the number of its text among the column's ids.
   Returns 1; NCF__AS_TEXT when a numeric column meets text (to read it again as text: not 0,
   so that no answer can be taken for NCF_OK); or an error. */
#define NCF__AS_TEXT 2
static int ncf__read_id(const char *name, const ncf__cursor *C, ncf__dialect *D, int c, ncf__span f, ncf__intern *in,
                        int64_t *v)
{
    char buf[NCF_MAX_ID_BYTES];
    int esc, len;
    ncf__span s = ncf__value(f, &esc);
    int quoted = s.s > f.s && s.s[-1] == '"';
    if (!D->text[c]) {
        if (!esc && ncf__plain_int(s.s, s.e, v)) return 1;
        if (!D->need_int) return NCF__AS_TEXT;
        return ncf__fail(NCF_ERR_PARSE, "%s:%lld: %s '%s' is not an integer", name, (long long)C->line,
                         ncf__col_what[c], ncf__shown(s.s, s.e));
    }
    if (!quoted && (s.s != f.s || s.e != f.e)) { /* an id as written keeps its blanks: only quotes delimit */
        D->edged[c]++;
        if (!D->trim_ids) s = f;
    }
    len = esc ? ncf__unescape(s, buf) : s.e - s.s > NCF_MAX_ID_BYTES ? -1 : (int)(s.e - s.s);
    if (len < 0)
        return ncf__fail(NCF_ERR_PARSE, "%s:%lld: %s '%s...' is longer than %d bytes", name, (long long)C->line,
                         ncf__col_what[c], ncf__shown(s.s, s.s + 40), NCF_MAX_ID_BYTES);
    if (!esc) memcpy(buf, s.s, (size_t)len);
    if (len == 0) return ncf__fail(NCF_ERR_PARSE, "%s:%lld: empty %s", name, (long long)C->line, ncf__col_what[c]);
    if (memchr(buf, 0, (size_t)len))
        return ncf__fail(NCF_ERR_PARSE, "%s:%lld: %s '%s' holds a NUL byte", name, (long long)C->line, ncf__col_what[c],
                         ncf__shown(buf, buf + len));
    if ((*v = ncf__intern_add(in, buf, (size_t)len)) < 0)
        return ncf__fail(NCF_ERR_NOMEM, "%s:%lld: out of memory for the %ss", name, (long long)C->line,
                         ncf__col_what[c]);
    return 1;
}

#define NCF__MAX_STRENGTH 1e15 /* a line's strength at most: a sum of 2^31 of them stays exact to 1e-6 */

/* A record's event, counted by kind: its place in the events list (-1: not listed), or 0 with
   no list. */
static int ncf__event_of(ncf__dialect *D, ncf__span f)
{
    char buf[NCF_MAX_ID_BYTES];
    int esc, k, len, fits;
    ncf__span v = ncf__value(f, &esc);
    len = esc ? ncf__unescape(v, buf) : v.e - v.s > NCF_MAX_ID_BYTES ? -1 : (int)(v.e - v.s);
    if (len > 0 && !esc) memcpy(buf, v.s, (size_t)len);
    fits = len > 0 && len <= NCF_MAX_EVENT_NAME; /* (a longer or empty one is no kind a list can name) */
    for (k = 0; fits && k < D->kinds; k++)
        if (!memcmp(D->kind_name[k], buf, (size_t)len) && D->kind_name[k][len] == 0) break;
    if (fits && k < D->kinds) D->kind_lines[k]++;
    else if (fits && D->kinds < NCF_MAX_EVENT_KINDS)
        memcpy(D->kind_name[D->kinds], buf, (size_t)len), D->kind_name[D->kinds][len] = 0,
                                                          D->kind_lines[D->kinds++] = 1;
    else D->other_events++, k = NCF_MAX_EVENT_KINDS;
    return !D->nev ? 0 : k < D->nev ? k : -1; /* (the kinds begin with the list's, in its order) */
}

/* Rating, timestamp, event and strength fields of a record into tr's row n: a line min_rating
   or the events list drops is no positive, and its strength is not read. */
static int ncf__read_extras(const char *name, const ncf__cursor *C, ncf__dialect *D, const ncf__span *f,
                            float min_rating, ncf__triples *tr)
{
    int esc, ok, pos = 1, ev = 0;
    ncf__span v;
    int64_t n = tr->n;
    tr->t[n] = n;
    if (D->col[2] >= 0) {
        double r;
        v = ncf__value(f[D->col[2]], &esc);
        if (!ncf__num_field(v.s, v.e))
            return ncf__fail(NCF_ERR_PARSE, "%s:%lld: %s '%s' is not a number", name, (long long)C->line,
                             tr->str && D->col[NCF_COL_STRENGTH] == D->col[2] ? "strength" : "rating",
                             ncf__shown(v.s, v.e)); /* (the column named as the caller gave it) */
        r = ncf__num_value(v);
        if (min_rating > -HUGE_VALF) pos = (float)r >= min_rating; /* (as floats: 3.7 >= 3.7f) */
        else D->nonpositive += r <= 0;
    }
    if (D->col[NCF_COL_EVENT] >= 0 && (ev = ncf__event_of(D, f[D->col[NCF_COL_EVENT]])) < 0)
        D->events_dropped += pos, pos = 0;
    if (tr->pos) tr->pos[n] = (uint8_t)pos;
    if (tr->str && !pos) tr->str[n] = 0;
    else if (tr->str && D->nev) tr->str[n] = D->ev_value[ev];
    else if (tr->str) {
        v = ncf__value(f[D->col[NCF_COL_STRENGTH]], &esc);
        tr->str[n] = ncf__num_field(v.s, v.e) ? ncf__num_value(v) : -1;
        if (!(tr->str[n] >= 0 && tr->str[n] <= NCF__MAX_STRENGTH)) /* (NaN, inf and text fail) */
            return ncf__fail(NCF_ERR_PARSE, "%s:%lld: strength '%s' is not a number in [0, 1e15]%s", name,
                             (long long)C->line, ncf__shown(v.s, v.e),
                             tr->str[n] < 0 && D->col[NCF_COL_STRENGTH] == D->col[2] && min_rating == -HUGE_VALF
                                 ? " (a rating below 0 often means 'not rated': a min_rating drops such lines)"
                                 : "");
    }
    if (D->col[3] >= 0) {
        v = ncf__value(f[D->col[3]], &esc);
        if ((ok = ncf__int_field(v.s, v.e, &tr->t[n])) != 1)
            return ncf__fail(NCF_ERR_PARSE, "%s:%lld: timestamp '%s' is %s", name, (long long)C->line,
                             ncf__shown(v.s, v.e),
                             ok < 0 ? "out of range (timestamps lie strictly between -2^63 and 2^63)"
                                    : "not an integer (epoch seconds)");
    }
    return NCF_OK;
}

/* Every record of the buffer into tr: the ids (numbers, or their numbers in in[]), the
   timestamp (else the record's number), and whether it is a positive (tr->pos, with a
   min_rating). A numeric column that meets a text id turns to text, and the reading starts
   over. line0: the buffer's first line in the file (a header is skipped at line 1 only). */
static int ncf__read_records(const char *name, const char *p, const char *end, ncf__dialect *D, float min_rating,
                             ncf__triples *tr, ncf__intern in[2], int64_t line0)
{
    ncf__span f[NCF__MAX_FIELDS];
    ncf__cursor C;
    int nf, c, rc;
again:
    tr->n = 0, D->edged[0] = D->edged[1] = 0;
    D->nonpositive = D->events_dropped = D->other_events = 0, D->kinds = D->nev;
    memset(D->kind_lines, 0, sizeof D->kind_lines); /* (the kinds read past the list's are read again) */
    ncf__intern_free(&in[0]), ncf__intern_free(&in[1]);
    C.p = p, C.end = end, C.line = 0, C.next = line0;
    if (D->header && line0 == 1)
        while (ncf__record(&C, D->sep, f, NCF__MAX_FIELDS) == 0) {}
    while ((nf = ncf__record(&C, D->sep, f, NCF__MAX_FIELDS)) != -1) {
        int64_t v[2];
        if (nf == 0) continue;
        if (nf == -2)
            return ncf__fail(NCF_ERR_PARSE, "%s:%lld: a quote opened here is never closed", name, (long long)C.line);
        if (nf != D->nf)
            return ncf__fail(NCF_ERR_PARSE, "%s:%lld: expected %d fields separated by '%s', got %d", name,
                             (long long)C.line, D->nf, ncf__sep_name(D->sep), nf);
        for (c = 0; c < 2; c++) {
            if ((rc = ncf__read_id(name, &C, D, c, f[D->col[c]], &in[c], &v[c])) == NCF__AS_TEXT) {
                D->text[c] = 1;
                goto again;
            }
            if (rc < 0) return rc;
        }
        if ((rc = ncf__read_extras(name, &C, D, f, min_rating, tr)) != NCF_OK) return rc;
        tr->u[tr->n] = v[0], tr->i[tr->n] = v[1];
        tr->n++;
    }
    return NCF_OK;
}

/* Records read: none is an error naming the file. */
static int ncf__some_records(const char *name, const ncf__triples *tr)
{
    return tr->n ? NCF_OK : ncf__fail(NCF_ERR_PARSE, "%s: no ratings in the file", name);
}

/* ncf_dataset_opts.events, "view=1,addtocart=3,transaction", into D's list. */
static int ncf__events_list(const char *name, const char *list, ncf__dialect *D)
{
    const char *p = list;
    for (;;) {
        const char *e = p + strcspn(p, ",="), *end;
        char *num_end;
        double x = 1;
        int k, len = (int)(e - p < 1000 ? e - p : 1000);
        if (len == 0 || len > NCF_MAX_EVENT_NAME)
            return ncf__fail(NCF_ERR_ARG, "%s: events '%s': each kind is a name of 1 to %d bytes, =X its strength",
                             name, ncf__shown(list, list + strlen(list)), NCF_MAX_EVENT_NAME);
        if (D->nev == NCF_MAX_EVENT_KINDS)
            return ncf__fail(NCF_ERR_ARG, "%s: events '%s': at most %d kinds", name,
                             ncf__shown(list, list + strlen(list)), NCF_MAX_EVENT_KINDS);
        for (k = 0; k < D->nev; k++)
            if (!strncmp(D->kind_name[k], p, (size_t)len) && D->kind_name[k][len] == 0)
                return ncf__fail(NCF_ERR_ARG, "%s: events: '%.*s' is listed twice", name, len, p);
        end = e;
        if (*e == '=') { /* (strtod's overflow is past the bound; its underflow a strength of 0) */
            x = strtod(e + 1, &num_end), end = num_end;
            if (end == e + 1 || !(x >= 0 && x <= NCF__MAX_STRENGTH) || (*end && *end != ','))
                return ncf__fail(NCF_ERR_ARG, "%s: events: '%.*s' is not a strength in [0, 1e15]", name,
                                 (int)strcspn(e + 1, ","), e + 1);
        }
        memcpy(D->kind_name[D->nev], p, (size_t)len), D->kind_name[D->nev][len] = 0, D->ev_value[D->nev++] = x;
        if (!*end) return NCF_OK;
        p = end + 1;
    }
}

/* The dialect of a format: what it fixes, the rest from the options (or found). */
static int ncf__dialect_of(const char *name, const ncf_dataset_opts *o, ncf__dialect *D)
{
    memset(D, 0, sizeof *D);
    D->header = o->header == NCF_HEADER_YES ? 1 : o->header == NCF_HEADER_NO ? 0 : -1;
    D->trim_ids = o->trim_ids;
    if (o->format == NCF_FORMAT_DAT) strcpy(D->sep, "::");
    else if (o->format == NCF_FORMAT_TAB) strcpy(D->sep, "\t");
    else if (o->format == NCF_FORMAT_CSV) strcpy(D->sep, ",");
    if ((o->format == NCF_FORMAT_DAT || o->format == NCF_FORMAT_TAB) && D->header < 0) D->header = 0;
    if (o->sep) {
        size_t n = strlen(o->sep);
        if (n == 0 || n > 3 || strpbrk(o->sep, "\"\r\n"))
            return ncf__fail(NCF_ERR_ARG, "%s: separator '%s': need 1 to 3 characters, no quote or line end", name,
                             o->sep);
        strcpy(D->sep, o->sep);
        if (D->sep[0] == ' ') D->sep[1] = 0; /* blanks */
    }
    if (NCF__MANY(o->holdout) && (o->holdout != NCF_HOLDOUT_CUTOFF || o->validation) &&
        !(o->holdout_fraction > 0 && o->holdout_fraction < 1))
        return ncf__fail(NCF_ERR_ARG,
                         "%s: holdout_fraction %g: a ratio or time split (or a cut-off's validation) "
                         "needs a share in (0, 1)",
                         name, (double)o->holdout_fraction);
    if (o->holdout < NCF_HOLDOUT_AUTO || (o->holdout > NCF_HOLDOUT_SAVED && o->holdout != NCF_HOLDOUT_ITEMS) ||
        o->header < 0 || o->header > NCF_HEADER_NO || o->min_ratings < 0 || o->eval_negatives < 0 ||
        o->min_rating != o->min_rating || o->min_item_ratings < 0 || (o->kcore != 0 && o->kcore != 1) ||
        o->weighting < NCF_WEIGHT_NONE || o->weighting > NCF_WEIGHT_LOG || (o->trim_ids != 0 && o->trim_ids != 1))
        return ncf__fail(NCF_ERR_ARG,
                         "%s: a load option is out of range (holdout %d, header %d, min_ratings %d, "
                         "min_item_ratings %d, kcore %d, eval_negatives %d, weighting %d, trim_ids %d)",
                         name, o->holdout, o->header, o->min_ratings, o->min_item_ratings, o->kcore, o->eval_negatives,
                         o->weighting, o->trim_ids);
    if (o->weighting != NCF_WEIGHT_NONE && !(o->alpha > 0 && o->alpha <= 1e6f)) /* (NaN fails) */
        return ncf__fail(NCF_ERR_ARG, "%s: alpha %g: a weighting needs 0 < alpha <= 1e6", name, (double)o->alpha);
    return o->events ? ncf__events_list(name, o->events, D) : NCF_OK;
}

/* A log read, not yet built: its dialect, records and text ids. */
typedef struct {
    ncf__dialect D;
    ncf__triples tr;
    ncf__intern in[2];
    ncf_load_report rep;
} ncf__parsed;

static void ncf__parsed_free(ncf__parsed *P)
{
    ncf__triples_free(&P->tr);
    ncf__intern_free(&P->in[0]), ncf__intern_free(&P->in[1]);
}

/* Reads a delimited log in memory into P (freed on failure); nothing of buf is kept. */
static int ncf__parse_log(const char *name, const char *buf, size_t len, const ncf_dataset_opts *o, ncf__parsed *P)
{
    const char *p = buf, *end = buf + len;
    int rc, use_min = o->min_rating > -HUGE_VALF;
    memset(P, 0, sizeof *P);
    p += ncf__bom_bytes(p, len);
    if ((rc = ncf__dialect_of(name, o, &P->D)) != NCF_OK ||
        (rc = ncf__sniff(name, p, end, o, &P->D, &P->rep)) != NCF_OK)
        return rc;
    if (use_min && P->D.col[2] < 0)
        return ncf__fail(NCF_ERR_ARG, "%s: min_rating needs a rating column, and the file has none", name);
    if (o->weighting != NCF_WEIGHT_NONE && P->D.col[NCF_COL_STRENGTH] < 0 && !P->D.nev)
        return ncf__fail(NCF_ERR_ARG, "%s: a weighting needs a strength column, and the file has none", name);
    rc = ncf__triples_reserve(&P->tr, ncf__max_records(p, end), use_min || P->D.nev, o->weighting != NCF_WEIGHT_NONE);
    if (rc != NCF_OK) return rc;
    if ((rc = ncf__read_records(name, p, end, &P->D, o->min_rating, &P->tr, P->in, 1)) != NCF_OK ||
        (rc = ncf__some_records(name, &P->tr)) != NCF_OK)
        ncf__parsed_free(P);
    return rc;
}

/* What the records held beyond their positives, into the report. */
static void ncf__report_events(const ncf__dialect *D, ncf_load_report *rep)
{
    int k;
    rep->nonpositive_ratings = D->nonpositive;
    rep->event_kinds = D->kinds, rep->other_event_lines = D->other_events, rep->events_dropped = D->events_dropped;
    for (k = 0; k < D->kinds; k++) {
        memcpy(rep->events[k].name, D->kind_name[k], sizeof rep->events[k].name);
        rep->events[k].lines = D->kind_lines[k];
        rep->events[k].kept = !D->nev || k < D->nev;
        rep->events[k].strength = k < D->nev ? D->ev_value[k] : 0;
    }
}

/* The dataset of a parsed log; P is freed. */
static int ncf__build_log(ncf_dataset *ds, const char *name, const ncf_dataset_opts *o, ncf__parsed *P)
{
    ncf__build_opts bo;
    char *text[2] = {NULL, NULL};
    int64_t *at[2] = {NULL, NULL}, *rank[2] = {NULL, NULL}, j;
    int rc = NCF_OK, c;
    const ncf__dialect *D = &P->D;
    for (c = 0; c < 2; c++) { /* text ids: their numbers become their places in byte order */
        int64_t *v = c ? P->tr.i : P->tr.u;
        if (!D->text[c]) continue;
        if ((rc = ncf__intern_sort(&P->in[c], &text[c], &at[c], &rank[c])) != NCF_OK) goto done;
        for (j = 0; j < P->tr.n; j++) v[j] = rank[c][v[j]];
        ncf__intern_free(&P->in[c]);
    }
    memset(&bo, 0, sizeof bo);
    bo.positive = P->tr.pos, bo.min_ratings = o->min_ratings, bo.seed = o->seed, bo.report = &P->rep;
    bo.min_item_ratings = o->min_item_ratings, bo.kcore = o->kcore;
    bo.strength = P->tr.str, bo.weighting = o->weighting, bo.alpha = o->alpha;
    bo.holdout = o->holdout != NCF_HOLDOUT_AUTO ? o->holdout : D->col[3] >= 0 ? NCF_HOLDOUT_LATEST : NCF_HOLDOUT_RANDOM;
    bo.validation = o->validation, bo.fraction = o->holdout_fraction, bo.cutoff = o->holdout_cutoff;
    P->rep.text_ids[0] = D->text[0], P->rep.text_ids[1] = D->text[1];
    P->rep.blank_edged_ids[0] = D->edged[0], P->rep.blank_edged_ids[1] = D->edged[1];
    ncf__report_events(D, &P->rep);
    if ((rc = ncf__build(ds, P->tr.u, P->tr.i, D->col[3] >= 0 ? P->tr.t : NULL, P->tr.n, &bo)) != NCF_OK) {
        rc = ncf__prefix_error(rc, name);
        goto done;
    }
    if ((D->text[0] &&
         (rc = ncf__ids_to_text(&ds->raw_user, ds->num_users, text[0], at[0], &ds->user_text, &ds->user_text_at)) !=
             NCF_OK) ||
        (D->text[1] &&
         (rc = ncf__ids_to_text(&ds->raw_item, ds->num_items, text[1], at[1], &ds->item_text, &ds->item_text_at)) !=
             NCF_OK))
        ncf_dataset_free(ds);
done:
    ncf__parsed_free(P);
    for (c = 0; c < 2; c++) NCF_FREE(text[c]), NCF_FREE(at[c]), NCF_FREE(rank[c]);
    return rc;
}

/* Eval negatives for a loaded log (none to draw when nothing is held out). */
static int ncf__log_negatives(ncf_dataset *ds, const char *name, const ncf_dataset_opts *o)
{
    int rc;
    if (ds->report.holdout == NCF_HOLDOUT_NONE || ds->test_ptr) return NCF_OK; /* (many items: full ranking) */
    rc = ncf_sample_eval_negatives(ds, o->eval_negatives ? o->eval_negatives : 99, o->seed);
    if (rc != NCF_OK) {
        rc = ncf__prefix_error(rc, name);
        ncf_dataset_free(ds);
    }
    return rc;
}

/* The validation set an ncf_dataset_opts asks for, after the load. */
static int ncf__load_validation(ncf_dataset *ds, const char *name, const ncf_dataset_opts *o)
{
    int rc;
    if (!o->validation || ds->test_ptr) return NCF_OK; /* (a many-item split held it out as it built) */
    if (ds->report.holdout == NCF_HOLDOUT_NONE)
        rc = ncf__fail(NCF_ERR_ARG, "validation needs a hold-out (holdout none trains on everything)");
    else rc = ncf_hold_out_validation(ds, ds->num_eval_neg, o->seed);
    if (rc != NCF_OK) {
        rc = ncf__prefix_error(rc, name);
        ncf_dataset_free(ds);
    }
    return rc;
}

NCFDEF int ncf_load_dataset_mem(ncf_dataset *ds, const char *name, const void *buf, size_t len,
                                const ncf_dataset_opts *opts)
{
    ncf_dataset_opts o = opts ? *opts : ncf_dataset_opts_default();
    int rc;
    if (!ds || (!buf && len)) return ncf__fail(NCF_ERR_ARG, "ncf_load_dataset_mem: NULL dataset or buffer");
    memset(ds, 0, sizeof *ds);
    if (!name) name = "(memory)";
    if (o.format == NCF_FORMAT_NCF)
        return ncf__fail(NCF_ERR_ARG, "%s: the paper split is three files: ncf_load_dataset", name);
    {
        ncf__parsed P;
        if ((rc = ncf__parse_log(name, (const char *)buf, len, &o, &P)) != NCF_OK ||
            (rc = ncf__build_log(ds, name, &o, &P)) != NCF_OK)
            return rc;
    }
    if ((rc = ncf__log_negatives(ds, name, &o)) != NCF_OK) return rc;
    return ncf__load_validation(ds, name, &o);
}

#ifndef NCF_NO_STDIO
/* ---- >>files: reading files, the MovieLens formats and the paper split ----------------------- */

typedef struct {
    const char *p, *end;
    int64_t line;
} ncf__lines;

/* Next line without its "\r\n"; 0 at the end. */
static int ncf__next_line(ncf__lines *L, const char **s, const char **e)
{
    const char *nl;
    if (L->p >= L->end) return 0;
    nl = (const char *)memchr(L->p, '\n', (size_t)(L->end - L->p));
    *s = L->p;
    *e = nl ? nl : L->end;
    L->p = nl ? nl + 1 : L->end;
    if (*e > *s && (*e)[-1] == '\r') (*e)--;
    L->line++;
    return 1;
}

/* The paper split's three parts (.train.rating, .test.rating, .test.negative): each a file
   (buf[k] NULL: read, parsed, freed one at a time) or bytes in memory, named for messages. */
typedef struct {
    const char *name[3];
    const char *buf[3];
    size_t len[3];
} ncf__split_src;

/* Part k's bytes: the caller's, or the file's (into *owned, for the caller to free). */
static int ncf__split_part(const ncf__split_src *src, int k, char **owned, const char **buf, size_t *len)
{
    int rc;
    *owned = NULL;
    if (src->buf[k]) {
        *buf = src->buf[k], *len = src->len[k];
        return NCF_OK;
    }
    if ((rc = ncf__read_file(src->name[k], owned, len, NULL)) == NCF_OK) *buf = *owned;
    return rc;
}

/* A part of the paper split: user TAB item TAB rating TAB timestamp, integer ids, no header. */
static int ncf__parse_ratings(const ncf__split_src *src, int part, ncf__triples *tr)
{
    ncf__dialect D;
    ncf__intern in[2];
    const char *buf, *path = src->name[part];
    char *owned;
    size_t len;
    int rc = ncf__split_part(src, part, &owned, &buf, &len);
    if (rc != NCF_OK) return rc;
    memset(&D, 0, sizeof D), memset(in, 0, sizeof in);
    strcpy(D.sep, "\t"), D.nf = 4, D.need_int = 1;
    D.col[0] = 0, D.col[1] = 1, D.col[2] = 2, D.col[3] = 3, D.col[4] = D.col[5] = -1;
    if ((rc = ncf__triples_reserve(tr, ncf__max_records(buf, buf + len), 0, 0)) == NCF_OK)
        if ((rc = ncf__read_records(path, buf, buf + len, &D, 0.0f, tr, in, 1)) == NCF_OK)
            rc = ncf__some_records(path, tr);
    NCF_FREE(owned);
    if (rc != NCF_OK) ncf__triples_free(tr);
    return rc;
}

/* Negatives on a .test.negative line (after its "(user,item)"). */
static int64_t ncf__count_fields(const char *c, const char *e)
{
    int64_t n = 0;
    while (c < e) {
        while (c < e && (*c == '\t' || *c == ' ')) c++;
        if (c < e) n++;
        while (c < e && *c != '\t' && *c != ' ') c++;
    }
    return n;
}

/* A line's negatives are distinct: one counted twice would weigh twice in the test item's
   rank. (The paper's ml-1m file has none twice.) */
static int ncf__distinct_negatives(const int32_t *row, int n, const char *path, int64_t line)
{
    int32_t *s = NCF__NEW(int32_t, n);
    int j, dup = -1;
    if (!s) return ncf__fail(NCF_ERR_NOMEM, "%s: out of memory", path);
    memcpy(s, row, sizeof(int32_t) * (size_t)n);
    ncf__sort(s, (size_t)n, sizeof *s, ncf__cmp_i32);
    for (j = 1; j < n && dup < 0; j++)
        if (s[j] == s[j - 1]) dup = s[j];
    NCF_FREE(s);
    return dup < 0
        ? NCF_OK
        : ncf__fail(NCF_ERR_DATA, "%s:%lld: negative %d appears twice on the line", path, (long long)line, dup);
}

/* Every line after the current one has n negatives too, checked before any memory is
   sized by the first line (a first line of millions must name the line that differs). */
static int ncf__same_counts(const char *path, const ncf__lines *from, int64_t n)
{
    ncf__lines L = *from;
    const char *s, *e;
    while (ncf__next_line(&L, &s, &e)) {
        const char *close = (const char *)memchr(s, ')', (size_t)(e - s));
        int64_t cnt;
        if (s == e || !close) continue; /* blank, or malformed: the main pass says so */
        if ((cnt = ncf__count_fields(close + 1, e)) != n)
            return ncf__fail(NCF_ERR_PARSE, "%s:%lld: %lld negatives, but the first line has %lld", path,
                             (long long)L.line, (long long)cnt, (long long)n);
    }
    return NCF_OK;
}

/* PREFIX.test.negative: "(user,item)" then the negatives, TAB separated, one line per
   line of PREFIX.test.rating and for the same (user, item). */
static int ncf__parse_negatives(const ncf__split_src *src, const ncf__triples *test, int32_t **out, int *per_line,
                                int64_t *max_item, int64_t **line_of_row)
{
    const char *buf, *path = src->name[2], *s, *e;
    char *owned;
    size_t len;
    ncf__lines L;
    int64_t row = 0, n0 = -1, *lines;
    int32_t *neg = NULL;
    int rc = ncf__split_part(src, 2, &owned, &buf, &len);
    if (rc != NCF_OK) return rc;
    if (!(lines = NCF__NEW(int64_t, test->n))) {
        NCF_FREE(owned);
        return ncf__fail(NCF_ERR_NOMEM, "%s: out of memory", path);
    }
    L.p = buf, L.end = buf + len, L.line = 0;
    L.p += ncf__bom_bytes(buf, len);
    while (rc == NCF_OK && ncf__next_line(&L, &s, &e)) {
        int64_t u, it, cnt = 0, v;
        const char *c, *comma, *close;
        if (s == e) continue;
        comma = (const char *)memchr(s, ',', (size_t)(e - s));
        close = (const char *)memchr(s, ')', (size_t)(e - s));
        if (*s != '(' || !comma || !close || comma > close || ncf__int_field(s + 1, comma, &u) != 1 ||
            ncf__int_field(comma + 1, close, &it) != 1) {
            rc = ncf__fail(NCF_ERR_PARSE, "%s:%lld: expected '(user,item)' at the start of the line", path,
                           (long long)L.line);
            break;
        }
        if (row >= test->n || test->u[row] != u || test->i[row] != it) {
            rc = row >= test->n
                ? ncf__fail(NCF_ERR_DATA, "%s:%lld: more lines than the .test.rating file has", path, (long long)L.line)
                : ncf__fail(NCF_ERR_DATA,
                            "%s:%lld: (%lld,%lld) does not match line %lld of the .test.rating file, "
                            "which holds (%lld,%lld)",
                            path, (long long)L.line, (long long)u, (long long)it, (long long)row + 1,
                            (long long)test->u[row], (long long)test->i[row]);
            break;
        }
        cnt = ncf__count_fields(close + 1, e);
        if (n0 < 0) {
            n0 = cnt;
            if (n0 == 0) {
                rc = ncf__fail(NCF_ERR_PARSE, "%s:%lld: no negatives", path, (long long)L.line);
                break;
            }
            if ((rc = ncf__same_counts(path, &L, n0)) != NCF_OK) break; /* before allocating for n0 each */
            neg = NCF__NEW(int32_t, (size_t)test->n * (size_t)n0);
            if (!neg) {
                rc = ncf__fail(NCF_ERR_NOMEM, "%s: out of memory for %lld negatives per line", path, (long long)n0);
                break;
            }
        } else if (cnt != n0) {
            rc = ncf__fail(NCF_ERR_PARSE, "%s:%lld: %lld negatives, but the first line has %lld", path,
                           (long long)L.line, (long long)cnt, (long long)n0);
            break;
        }
        cnt = 0;
        for (c = close + 1; c < e && rc == NCF_OK;) {
            const char *fs = c, *fe;
            while (fs < e && (*fs == '\t' || *fs == ' ')) fs++;
            fe = fs;
            while (fe < e && *fe != '\t' && *fe != ' ') fe++;
            if (fe > fs) {
                if (ncf__int_field(fs, fe, &v) != 1 || v < 0 || v > INT32_MAX)
                    rc = ncf__fail(NCF_ERR_PARSE, "%s:%lld: negative item '%s' is not a valid id", path,
                                   (long long)L.line, ncf__shown(fs, fe));
                else {
                    neg[row * n0 + cnt++] = (int32_t)v;
                    if (v > *max_item) *max_item = v;
                }
            }
            c = fe;
        }
        if (rc == NCF_OK && (rc = ncf__distinct_negatives(neg + row * n0, (int)n0, path, L.line)) != NCF_OK) break;
        lines[row++] = L.line;
    }
    NCF_FREE(owned);
    if (rc == NCF_OK && row != test->n)
        rc = ncf__fail(NCF_ERR_DATA, "%s: %lld lines, but the .test.rating file has %lld", path, (long long)row,
                       (long long)test->n);
    if (rc != NCF_OK) {
        NCF_FREE(neg);
        NCF_FREE(lines);
        return rc;
    }
    *out = neg;
    *per_line = (int)n0;
    *line_of_row = lines;
    return NCF_OK;
}

/* A given negative must not be one of the user's training items (a trained model ranks those
   high, which would move HR). The test item itself may appear: the paper's ml-1m file lists it
   among the negatives of 156 users, and evaluation ignores it there, as the paper's code does
   (its candidate scores are keyed by item, so the duplicate merges). */
static int ncf__check_negatives(const ncf_dataset *ds, const ncf__triples *test, const int32_t *neg, int per_line,
                                const int64_t *line_of_row, const char *path)
{
    int64_t j;
    int k;
    for (j = 0; j < test->n; j++) {
        int u = (int)test->u[j];
        const int32_t *p = ds->items + ds->user_ptr[u];
        int64_t deg = ds->user_ptr[u + 1] - ds->user_ptr[u];
        for (k = 0; k < per_line; k++) {
            int32_t v = neg[j * per_line + k];
            int64_t lo;
            NCF__FIRST_NOT(int64_t, lo, deg, p[mid] < v);
            if (lo < deg && p[lo] == v)
                return ncf__fail(NCF_ERR_DATA, "%s:%lld: negative %d is an item user %d rated in training", path,
                                 (long long)line_of_row[j], (int)v, u);
        }
    }
    return NCF_OK;
}

static int ncf__file_exists(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (f) fclose(f);
    return f != NULL;
}

/* The paper's split's three files, PREFIX and each of these. */
static const char *const ncf__split_suffix[3] = {".train.rating", ".test.rating", ".test.negative"};
/* A split ncf_save_split wrote: PREFIX and each of these. */
static const char *const ncf__saved_suffix[3] = {".train.tsv", ".validation.tsv", ".test.tsv"};

/* The paper's split: ids already dense; the test file names each user's held-out
   item, the negative file its 99 candidates. */
static int ncf__load_split(ncf_dataset *ds, const char *prefix, const ncf__split_src *src, int sample_negs,
                           uint64_t seed, int holdout)
{
    ncf__build_opts bo;
    const char *const *path = src->name;
    ncf__triples train, test, all;
    int32_t *neg = NULL;
    int per_line = 0, rc, k;
    int64_t j, maxu = -1, maxi = -1, *neg_line = NULL;
    memset(&train, 0, sizeof train), memset(&test, 0, sizeof test), memset(&all, 0, sizeof all);
    if ((rc = ncf__parse_ratings(src, 0, &train)) != NCF_OK) return rc;
    if ((rc = ncf__parse_ratings(src, 1, &test)) != NCF_OK) goto done;
    for (j = 0; j < train.n; j++) {
        if (train.u[j] > maxu) maxu = train.u[j];
        if (train.i[j] > maxi) maxi = train.i[j];
    }
    {
        /* each user at most once in the test file, and every training user there */
        int64_t span, mu = maxu;
        char *in_test;
        for (j = 0; j < test.n; j++)
            if (test.u[j] > mu) mu = test.u[j];
        if (mu >= train.n + test.n) { /* the split's ids are dense: every user has a line */
            rc = ncf__fail(NCF_ERR_DATA,
                           "%s: user id %lld with only %lld lines: the split's ids must be 0-based and dense", prefix,
                           (long long)mu, (long long)(train.n + test.n));
            goto done;
        }
        span = mu + 1;
        in_test = NCF__ZNEW(char, span);
        if (!in_test) {
            rc = ncf__fail(NCF_ERR_NOMEM, "out of memory");
            goto done;
        }
        for (j = 0; j < test.n && rc == NCF_OK; j++) {
            if (in_test[test.u[j]])
                rc = ncf__fail(NCF_ERR_DATA, "%s:%lld: user %lld has a second test rating", path[1], (long long)j + 1,
                               (long long)test.u[j]);
            in_test[test.u[j]] = 1;
            if (test.i[j] > maxi) maxi = test.i[j];
        }
        for (j = 0; j < train.n && rc == NCF_OK; j++)
            if (!in_test[train.u[j]])
                rc = ncf__fail(NCF_ERR_DATA, "%s:%lld: user %lld has no line in %s", path[0], (long long)j + 1,
                               (long long)train.u[j], path[1]);
        NCF_FREE(in_test);
        maxu = mu;
        if (rc != NCF_OK) goto done;
    }
    if (!sample_negs && (rc = ncf__parse_negatives(src, &test, &neg, &per_line, &maxi, &neg_line)) != NCF_OK) goto done;
    if (maxu >= INT32_MAX || maxi >= INT32_MAX || maxi >= train.n + test.n + (int64_t)test.n * per_line) {
        rc = ncf__fail(NCF_ERR_DATA, "%s: item id %lld is beyond the split's dense ids", prefix, (long long)maxi);
        goto done;
    }
    /* test ratings come last in time, so the generic split holds them out */
    if ((rc = ncf__triples_reserve(&all, train.n + test.n, 0, 0)) != NCF_OK) goto done;
    for (j = 0; j < train.n; j++) all.u[j] = train.u[j], all.i[j] = train.i[j], all.t[j] = 0;
    for (j = 0; j < test.n; j++) all.u[train.n + j] = test.u[j], all.i[train.n + j] = test.i[j], all.t[train.n + j] = 1;
    /* (its training file's timestamps are not used: a validation item is drawn by the seed) */
    memset(&bo, 0, sizeof bo);
    bo.holdout = holdout == NCF_HOLDOUT_NONE ? NCF_HOLDOUT_NONE : NCF__HOLDOUT_SPLIT;
    bo.fixed_users = (int)maxu + 1, bo.fixed_items = (int)maxi + 1;
    if ((rc = ncf__build(ds, all.u, all.i, all.t, train.n + test.n, &bo)) != NCF_OK) goto done;
    strcpy(ds->report.sep, "\t");
    for (k = 0; k < 4; k++) snprintf(ds->report.columns[k], sizeof ds->report.columns[k], "column %d", k + 1);
    if (holdout == NCF_HOLDOUT_NONE) goto done; /* nothing held out: no candidates */
    if (sample_negs) {
        if ((rc = ncf_sample_eval_negatives(ds, sample_negs, seed)) != NCF_OK) ncf_dataset_free(ds);
    } else if ((rc = ncf__check_negatives(ds, &test, neg, per_line, neg_line, path[2])) != NCF_OK) {
        ncf_dataset_free(ds);
    } else {
        ds->eval_neg = NCF__NEW(int32_t, (size_t)ds->num_users * (size_t)per_line);
        if (!ds->eval_neg) {
            ncf_dataset_free(ds);
            rc = ncf__fail(NCF_ERR_NOMEM, "out of memory");
            goto done;
        }
        for (j = 0; j < test.n; j++)
            memcpy(ds->eval_neg + (size_t)test.u[j] * per_line, neg + (size_t)j * per_line,
                   sizeof(int32_t) * (size_t)per_line);
        ds->num_eval_neg = per_line;
    }
done:
    ncf__triples_free(&train);
    ncf__triples_free(&test);
    ncf__triples_free(&all);
    NCF_FREE(neg), NCF_FREE(neg_line);
    return rc;
}

/* The paper split from its three files, PREFIX.train.rating and the rest. */
static int ncf__load_ncf(ncf_dataset *ds, const char *prefix, int sample_negs, uint64_t seed, int holdout)
{
    char path[3][4200];
    ncf__split_src src;
    int k;
    memset(&src, 0, sizeof src);
    for (k = 0; k < 3; k++) {
        if (snprintf(path[k], sizeof path[k], "%s%s", prefix, ncf__split_suffix[k]) >= (int)sizeof path[k])
            return ncf__fail(NCF_ERR_ARG, "%s: path too long", prefix);
        src.name[k] = path[k];
    }
    return ncf__load_split(ds, prefix, &src, sample_negs, seed, holdout);
}

/* The prefix of a split whose files are PREFIX and suffix[0..3), when path names one (PREFIX,
   or one of its files; PREFIX alone when its first file is there), else NULL: the paper's
   split (ncf__split_suffix) or a saved one (ncf__saved_suffix). */
static const char *ncf__split_prefix(const char *path, const char *const *suffix, char *prefix, size_t size)
{
    char probe[4216];
    int k;
    if (strlen(path) >= size) return NULL;
    strcpy(prefix, path);
    for (k = 0; k < 3; k++)
        if (ncf__ends_with(prefix, suffix[k])) {
            prefix[strlen(prefix) - strlen(suffix[k])] = 0;
            return prefix;
        }
    if (snprintf(probe, sizeof probe, "%s%s", path, suffix[0]) >= (int)sizeof probe) return NULL;
    return ncf__file_exists(probe) ? prefix : NULL;
}

/* ---- a split saved for others, and read back ---- */

/* Id k of one side as a TSV field: quoted where it holds a tab, a quote or a blank at either
   end (a text id that would read back otherwise). */
static int ncf__write_id(ncf__outfile *out, const ncf_dataset *d, int side, int k)
{
    char id[NCF_MAX_ID_BYTES + 1];
    ncf__ids t = ncf__dataset_ids(d, side);
    int n, q;
    if ((n = ncf__ids_name(&t, k, id, sizeof id)) < 0) return ncf__fail(NCF_ERR_ARG, "ncf_save_split: no id for %d", k);
    if (strpbrk(id, "\r\n"))
        return ncf__fail(NCF_ERR_DATA, "ncf_save_split: the %s id '%s' holds a line end", side ? "item" : "user",
                         ncf__shown(id, id + n));
    if (!strpbrk(id, "\t\"") && id[0] != ' ' && id[n - 1] != ' ') return ncf__outfile_write(out, id, (size_t)n);
    if (ncf__outfile_write(out, "\"", 1) != NCF_OK) return NCF_ERR_IO;
    for (q = 0; q < n; q++)
        if (ncf__outfile_write(out, id + q, 1) != NCF_OK ||
            (id[q] == '"' && ncf__outfile_write(out, "\"", 1) != NCF_OK))
            return NCF_ERR_IO;
    return ncf__outfile_write(out, "\"", 1);
}

/* One of the split's files: each user's items of a part (0 training, 1 validation, 2 test). */
static int ncf__write_part(ncf__outfile *out, const ncf_dataset *d, int part)
{
    int u, rc = NCF_OK;
    for (u = 0; u < d->num_users && rc == NCF_OK; u++) {
        int64_t n, j;
        const int32_t *it = part == 0 ? d->items + d->user_ptr[u]
                                      : ncf__held_list(d, part == 1 ? NCF_EVAL_VALIDATION : NCF_EVAL_TEST, u, &n);
        if (part == 0) n = d->user_ptr[u + 1] - d->user_ptr[u];
        for (j = 0; j < n && rc == NCF_OK; j++)
            if ((rc = ncf__write_id(out, d, 0, u)) == NCF_OK && (rc = ncf__outfile_write(out, "\t", 1)) == NCF_OK &&
                (rc = ncf__write_id(out, d, 1, it[j])) == NCF_OK)
                rc = ncf__outfile_write(out, "\n", 1);
    }
    return rc;
}

NCFDEF int ncf_save_split(const ncf_dataset *d, const char *prefix)
{
    ncf__outfile *out[3] = {NULL, NULL, NULL};
    char path[4200];
    int part, rc = NCF_OK;
    if (!d || !d->user_ptr || !prefix)
        return ncf__fail(NCF_ERR_ARG, "ncf_save_split: need a loaded dataset and a prefix");
    if (ncf__is_shard(d)) return ncf__fail(NCF_ERR_ARG, "ncf_save_split: the dataset is a shard");
    if (strlen(prefix) + 16 > sizeof path) return ncf__fail(NCF_ERR_ARG, "%s: path too long", prefix);
    for (part = 0; part < 3 && rc == NCF_OK; part++) { /* every file written before any replaces its path */
        if (part == 1 && !ncf__has_val(d)) continue;
        snprintf(path, sizeof path, "%s%s", prefix, ncf__saved_suffix[part]); /* (fits: checked above) */
        if ((rc = ncf__outfile_open(&out[part], path)) == NCF_OK) rc = ncf__write_part(out[part], d, part);
    }
    if ((rc = ncf__outfiles_commit(out, 3, rc)) != NCF_OK || ncf__has_val(d)) return rc;
    /* a split without validation: an earlier split's validation file under this prefix would be
       read back as this one's */
    snprintf(path, sizeof path, "%s%s", prefix, ncf__saved_suffix[1]); /* (fits: checked above) */
    if (ncf__file_exists(path) && remove(path) != 0)
        return ncf__fail(NCF_ERR_IO, "%s: an earlier split's validation file cannot be removed (%s)", path,
                         ncf__os_reason());
    return NCF_OK;
}

/* A saved split read back: its files joined in memory, each line given its part as a third
   field (a timestamp the build takes as the part), then built as one log. */
/* A saved split from its parts in memory (training, validation or NULL, test): their lines joined,
   each given its part as a third field (a timestamp the build takes as the part), then built as
   one log (the fuzzers' way in, beside the files'). */
static int ncf__build_saved(ncf_dataset *ds, const char *prefix, const char *const *buf, const size_t *len,
                            const ncf_dataset_opts *given)
{
    ncf_dataset_opts o = *given;
    char *joined;
    size_t total = 0, j, at = 0;
    int part, rc;
    ncf__parsed P;
    for (part = 0; part < 3; part++) total += 4 * len[part] + 4;
    if (!(joined = NCF__NEW(char, total))) return ncf__fail(NCF_ERR_NOMEM, "%s: out of memory", prefix);
    for (part = 0; part < 3; part++) /* (3 bytes added a line of at least 1) */
        for (j = 0; j < len[part];) {
            size_t e = j;
            while (e < len[part] && buf[part][e] != '\n' && buf[part][e] != '\r') e++;
            if (e > j) {
                memcpy(joined + at, buf[part] + j, e - j), at += e - j;
                joined[at++] = '\t', joined[at++] = (char)('0' + part), joined[at++] = '\n';
            }
            for (j = e; j < len[part] && (buf[part][j] == '\n' || buf[part][j] == '\r'); j++) {}
        }
    o.sep = "\t", o.header = NCF_HEADER_NO, o.holdout = NCF_HOLDOUT_SAVED, o.min_rating = -HUGE_VALF;
    o.columns[NCF_COL_USER] = "1", o.columns[NCF_COL_ITEM] = "2", o.columns[NCF_COL_RATING] = "";
    o.columns[NCF_COL_TIME] = "3", o.columns[NCF_COL_STRENGTH] = NULL, o.weighting = NCF_WEIGHT_NONE;
    o.validation = buf[1] != NULL;
    rc = ncf__parse_log(prefix, joined, at, &o, &P);
    NCF_FREE(joined);
    return rc == NCF_OK ? ncf__build_log(ds, prefix, &o, &P) : rc;
}

/* A saved split read back from its files, PREFIX.train.tsv and the rest (the validation's if
   there). */
static int ncf__load_saved(ncf_dataset *ds, const char *prefix, const ncf_dataset_opts *given)
{
    char path[4216], *buf[3] = {NULL, NULL, NULL};
    size_t len[3] = {0, 0, 0};
    int part, rc = NCF_OK;
    for (part = 0; part < 3 && rc == NCF_OK; part++) {
        if (snprintf(path, sizeof path, "%s%s", prefix, ncf__saved_suffix[part]) >= (int)sizeof path) {
            rc = ncf__fail(NCF_ERR_ARG, "%s: path too long", prefix);
            break;
        }
        if (part == 1 && !ncf__file_exists(path)) continue;
        rc = ncf__read_file(path, &buf[part], &len[part], NULL);
    }
    if (rc == NCF_OK) rc = ncf__build_saved(ds, prefix, (const char *const *)buf, len, given);
    for (part = 0; part < 3; part++) NCF_FREE(buf[part]);
    return rc;
}

NCFDEF int ncf_load_dataset(ncf_dataset *ds, const char *path, const ncf_dataset_opts *opts)
{
    ncf_dataset_opts o = opts ? *opts : ncf_dataset_opts_default();
    char prefix[4200];
    char *buf;
    size_t len;
    int rc;
    if (!ds || !path) return ncf__fail(NCF_ERR_ARG, "ncf_load_dataset: NULL dataset or path");
    memset(ds, 0, sizeof *ds);
    if (strlen(path) >= sizeof prefix) return ncf__fail(NCF_ERR_ARG, "%s: path too long", path);
    if (o.format == NCF_FORMAT_AUTO && ncf__split_prefix(path, ncf__saved_suffix, prefix, sizeof prefix)) {
        if (NCF__MANY(o.holdout) || o.weighting != NCF_WEIGHT_NONE)
            return ncf__fail(NCF_ERR_ARG, "%s: a saved split holds out its own items, unweighted", prefix);
        return ncf__load_saved(ds, prefix, &o);
    }
    if (o.format == NCF_FORMAT_NCF ||
        (o.format == NCF_FORMAT_AUTO && ncf__split_prefix(path, ncf__split_suffix, prefix, sizeof prefix))) {
        if (!ncf__split_prefix(path, ncf__split_suffix, prefix, sizeof prefix)) strcpy(prefix, path);
        if (o.eval_negatives < 0) return ncf__fail(NCF_ERR_ARG, "ncf_load_dataset: negative eval_negatives");
        if (NCF__MANY(o.holdout))
            return ncf__fail(NCF_ERR_ARG, "%s: the paper split holds out its own test items (holdout %d)", prefix,
                             o.holdout);
        if (o.weighting != NCF_WEIGHT_NONE) /* (its positives are the paper's: every rating counts 1) */
            return ncf__fail(NCF_ERR_ARG, "%s: the paper split is read unweighted; weigh a delimited log", prefix);
        rc = ncf__load_ncf(ds, prefix, o.eval_negatives, o.seed, o.holdout);

    } else {
        if ((int)o.format < NCF_FORMAT_AUTO || (int)o.format > NCF_FORMAT_NCF)
            return ncf__fail(NCF_ERR_ARG, "ncf_load_dataset: unknown format %d", (int)o.format);
        ncf__parsed P;
        if ((rc = ncf__read_file(path, &buf, &len, NULL)) != NCF_OK) return rc;
        rc = ncf__parse_log(path, buf, len, &o, &P);
        NCF_FREE(buf); /* before the build: the file and the dataset are never both held */
        if (rc == NCF_OK && (rc = ncf__build_log(ds, path, &o, &P)) == NCF_OK) rc = ncf__log_negatives(ds, path, &o);
    }
    return rc == NCF_OK ? ncf__load_validation(ds, path, &o) : rc;
}
#endif /* NCF_NO_STDIO */

#endif /* NCF_INFERENCE_ONLY */
