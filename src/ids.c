/* Id tables as written: lookup by bisection, names, checks. */

#define NCF__MAX_RAW_ID ((int64_t)1 << 62) /* raw ids are in [0, 2^62) */

/* Ids as the user's file wrote them. A table is integers ascending (num, read through order
   when they were given out of order) or text ascending by bytes (at, text), so any id is
   found by bisection, with no hash map: lookups write nothing, and a table read in place from
   flash costs no memory. */
typedef struct {
    int n;
    const int64_t *num;   /* integer ids, or NULL */
    const int32_t *order; /* num's indices in ascending id order, or NULL: num ascends */
    const char *text;     /* text ids back to back, or NULL */
    const int64_t *at;    /* [n+1] where id k's bytes start in text */
} ncf__ids;

/* Where id sits in raw[] read in ascending order (raw[order[k]], or raw[k] when order is
   NULL): its index in raw[], or -1 when it is absent. */
static int ncf__find_id(const int64_t *raw, const int32_t *order, int n, int64_t id)
{
    int lo;
    NCF__FIRST_NOT(int, lo, n, raw[order ? order[mid] : mid] < id);
    return lo < n && raw[order ? order[lo] : lo] == id ? (order ? order[lo] : lo) : -1;
}

/* The byte order of text ids: memcmp's, a prefix first. */
static int ncf__cmp_text(const char *a, size_t na, const char *b, size_t nb)
{
    int c = memcmp(a, b, na < nb ? na : nb);
    return c ? c : (na > nb) - (na < nb);
}

/* 1 and *v when [s, e) is a plain integer: digits, no sign, no leading zero, below 2^62 (the
   ids kept as numbers: their decimal form gives back the bytes as written). */
static int ncf__plain_int(const char *s, const char *e, int64_t *v)
{
    uint64_t x = 0;
    if (s == e || e - s > 19 || (*s == '0' && e - s > 1)) return 0;
    for (; s < e; s++) {
        if (*s < '0' || *s > '9') return 0;
        x = x * 10 + (uint64_t)(*s - '0');
    }
    if (x >= (uint64_t)NCF__MAX_RAW_ID) return 0;
    *v = (int64_t)x;
    return 1;
}

/* Where the text id [s, s+len) is in t, or -1. */
static int ncf__find_text(const ncf__ids *t, const char *s, size_t len)
{
    int lo;
    NCF__FIRST_NOT(int, lo, t->n,
                   ncf__cmp_text(t->text + t->at[mid], (size_t)(t->at[mid + 1] - t->at[mid]), s, len) < 0);
    return lo < t->n && !ncf__cmp_text(t->text + t->at[lo], (size_t)(t->at[lo + 1] - t->at[lo]), s, len) ? lo : -1;
}

/* The index of id [s, s+len) as written, or -1 (also for a table that holds no ids). */
static int ncf__ids_find(const ncf__ids *t, const char *s, size_t len)
{
    int64_t v;
    if (t->text) return ncf__find_text(t, s, len);
    return t->num && ncf__plain_int(s, s + len, &v) ? ncf__find_id(t->num, t->order, t->n, v) : -1;
}

/* The index of an integer id: a text table is searched for its decimal form. */
static int ncf__ids_find_int(const ncf__ids *t, int64_t v)
{
    const char *d;
    if (!t->text) return t->num ? ncf__find_id(t->num, t->order, t->n, v) : -1;
    d = ncf__i64s(v, 1);
    return ncf__find_text(t, d, strlen(d));
}

/* Id k NUL-terminated into buf: its length, or -1 (k out of range, no ids, buf too short),
   buf then "" (a caller that skips the check prints nothing, never old bytes). */
static int ncf__ids_name(const ncf__ids *t, int k, char *buf, size_t size)
{
    const char *s;
    size_t n;
    if (buf && size) buf[0] = 0;
    if (k < 0 || k >= t->n || !buf || (!t->text && !t->num)) return -1;
    if (t->text) s = t->text + t->at[k], n = (size_t)(t->at[k + 1] - t->at[k]);
    else s = ncf__i64s(t->num[k], 1), n = strlen(s);
    if (n >= size) return -1;
    memcpy(buf, s, n), buf[n] = 0;
    return (int)n;
}

static int ncf__index_of(ncf__ids t, const char *id, const char *what)
{
    int k = id ? ncf__ids_find(&t, id, strlen(id)) : -1;
    return k >= 0 ? k
                  : ncf__fail(NCF_ERR_ARG, "unknown %s '%s'", what, id ? ncf__shown(id, id + strlen(id)) : "(null)");
}

static int ncf__name_of(ncf__ids t, int k, char *buf, size_t size, const char *what)
{
    int n = ncf__ids_name(&t, k, buf, size);
    if (n >= 0) return n;
    return ncf__fail(NCF_ERR_ARG,
                     k < 0 || k >= t.n ? "%s index %d is not in [0, %d)" : "%s %d: no ids, or the buffer is too short",
                     what, k, t.n);
}

/* Checks a text table read from a file: offsets from 0 to bytes, each id non-empty, at most
   NCF_MAX_ID_BYTES, without NUL, in strictly ascending order (so each is there once). */
static int ncf__check_text_ids(const ncf__ids *t, uint64_t bytes, const char *what)
{
    int k;
    if (t->at[0] != 0 || (uint64_t)t->at[t->n] != bytes)
        return ncf__fail(NCF_ERR_PARSE, "model's %s id offsets do not add up", what);
    for (k = 0; k < t->n; k++) {
        int64_t a = t->at[k], b = t->at[k + 1];
        if (b <= a || b - a > NCF_MAX_ID_BYTES || (uint64_t)b > bytes || memchr(t->text + a, 0, (size_t)(b - a)))
            return ncf__fail(NCF_ERR_PARSE, "model's %s id %d is empty, too long or malformed", what, k);
        if (k && ncf__cmp_text(t->text + t->at[k - 1], (size_t)(a - t->at[k - 1]), t->text + a, (size_t)(b - a)) >= 0)
            return ncf__fail(NCF_ERR_PARSE, "model's %s ids do not ascend (at %d)", what, k);
    }
    return NCF_OK;
}

/* "user" or "item", for messages. */
static const char *ncf__side_name(int side) { return side == NCF_ITEM ? "item" : "user"; }

#ifndef NCF_INFERENCE_ONLY
static ncf__ids ncf__dataset_ids(const ncf_dataset *ds, int items)
{
    ncf__ids t;
    t.n = items ? ds->num_items : ds->num_users;
    t.num = items ? ds->raw_item : ds->raw_user, t.order = NULL;
    t.text = items ? ds->item_text : ds->user_text;
    t.at = items ? ds->item_text_at : ds->user_text_at;
    return t;
}

NCFDEF int ncf_dataset_find(const ncf_dataset *ds, int side, const char *id)
{
    if (!ds || (side != NCF_USER && side != NCF_ITEM))
        return ncf__fail(NCF_ERR_ARG, "ncf_dataset_find: NULL dataset, or a side not NCF_USER or NCF_ITEM");
    return ncf__index_of(ncf__dataset_ids(ds, side), id, ncf__side_name(side));
}
NCFDEF int ncf_dataset_id(const ncf_dataset *ds, int side, int index, char *buf, size_t size)
{
    if (!ds || (side != NCF_USER && side != NCF_ITEM))
        return ncf__fail(NCF_ERR_ARG, "ncf_dataset_id: NULL dataset, or a side not NCF_USER or NCF_ITEM");
    return ncf__name_of(ncf__dataset_ids(ds, side), index, buf, size, ncf__side_name(side));
}
#endif
