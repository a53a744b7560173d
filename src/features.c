/* Side features: a file of them read as logs are; each entity's input vector the sum of its id
   embedding and the weighted mean of its features' embeddings, trained through the model's
   own gradients; the vocabulary and embeddings kept in the model file; new entities served
   from their features alone. */

#ifndef NCF_INFERENCE_ONLY

NCFDEF ncf_features_opts ncf_features_opts_default(void)
{
    ncf_features_opts o;
    memset(&o, 0, sizeof o);
    o.token_sep = "|";
    return o;
}

NCFDEF void ncf_features_free(ncf_features *f)
{
    if (!f) return;
    NCF_FREE(f->ids), NCF_FREE(f->ids_at), NCF_FREE(f->vocab), NCF_FREE(f->vocab_at);
    NCF_FREE(f->ptr), NCF_FREE(f->feat), NCF_FREE(f->weight);
    memset(f, 0, sizeof *f);
}

/* ---- >>features-read: the reader ---------------------------------------------------------------- */

#define NCF__FEATURE_COLS 64 /* feature columns a file names (u.item has 19) */

typedef struct {
    int id, weight;                                     /* 0-based fields; weight -1: none */
    int n, col[NCF__FEATURE_COLS];                      /* the feature columns */
    char name[NCF__FEATURE_COLS][NCF_MAX_ID_BYTES + 1]; /* each one's name (header, or number) */
} ncf__fcols;

/* Entries read: entity, token (intern numbers) and weight, growing by doubling. */
typedef struct {
    int32_t *ent, *tok;
    float *w;
    int64_t n, cap;
} ncf__entries;

static int ncf__entries_add(ncf__entries *E, int32_t e, int32_t t, float w)
{
    if (E->n == E->cap) {
        int64_t cap = E->cap ? 2 * E->cap : 4096;
        int32_t *a = (int32_t *)NCF_REALLOC(E->ent, sizeof(int32_t) * (size_t)cap), *b;
        float *c;
        if (!a) return 0;
        E->ent = a;
        if (!(b = (int32_t *)NCF_REALLOC(E->tok, sizeof(int32_t) * (size_t)cap))) return 0;
        E->tok = b;
        if (!(c = (float *)NCF_REALLOC(E->w, sizeof(float) * (size_t)cap))) return 0;
        E->w = c, E->cap = cap;
    }
    E->ent[E->n] = e, E->tok[E->n] = t, E->w[E->n++] = w;
    return 1;
}

static void ncf__entries_free(ncf__entries *E) { NCF_FREE(E->ent), NCF_FREE(E->tok), NCF_FREE(E->w); }

/* Header names a features file's columns go by (lower case, letters and digits only). */
static int ncf__feature_name(const char *norm)
{
    return ncf__has_word("genres genre tags tag features feature categories category attributes attribute", norm);
}
static int ncf__weight_name(const char *norm) { return ncf__has_word("weight weights relevance score value", norm); }

/* Field k of the first record's name, normalized, or "" past its fields. */
static void ncf__head_name(const ncf__sample *S, int k, char *norm, size_t size)
{
    int esc;
    norm[0] = 0;
    if (k < S->nf[0] && k < NCF__MAX_FIELDS) ncf__norm_name(ncf__value(S->first[k], &esc), norm, size);
}

/* The column named by one item of the columns spec (a number, or a header name). */
static int ncf__spec_column(const char *name, const char *s, const char *e, const ncf__sample *S, int header)
{
    int64_t v;
    int k;
    char want[64], norm[64];
    ncf__span w;
    if (ncf__int_field(s, e, &v) == 1) {
        if (v < 1 || v > NCF__MAX_FIELDS)
            return ncf__fail(NCF_ERR_ARG, "%s: column %lld: columns are numbered 1 to %d", name, (long long)v,
                             NCF__MAX_FIELDS);
        return (int)v - 1;
    }
    w.s = s, w.e = e;
    ncf__norm_name(w, want, sizeof want);
    for (k = 0; header && k < S->nf[0] && k < NCF__MAX_FIELDS; k++) {
        ncf__head_name(S, k, norm, sizeof norm);
        if (norm[0] && !strcmp(norm, want)) return k;
    }
    return ncf__fail(NCF_ERR_ARG, "%s: no column named '%s'%s", name, ncf__shown(s, e),
                     header ? "" : " (the file has no header: give column numbers)");
}

/* A column's name for its "name=value" features: the header's as written, or its number. */
static void ncf__col_name(const ncf__sample *S, int header, int k, char *out)
{
    int esc, n;
    ncf__span v;
    if (!header || k >= S->nf[0] || k >= NCF__MAX_FIELDS) {
        snprintf(out, NCF_MAX_ID_BYTES + 1, "%d", k + 1); /* (at most 2 digits: fits) */
        return;
    }
    v = ncf__value(S->first[k], &esc);
    n = esc ? ncf__unescape(v, out) : (int)(v.e - v.s > NCF_MAX_ID_BYTES ? NCF_MAX_ID_BYTES : v.e - v.s);
    if (n < 0) n = NCF_MAX_ID_BYTES;
    if (!esc) memcpy(out, v.s, (size_t)n);
    out[n] = 0;
}

static int ncf__add_col(const char *name, ncf__fcols *c, int k)
{
    if (c->n == NCF__FEATURE_COLS)
        return ncf__fail(NCF_ERR_ARG, "%s: more than %d feature columns", name, NCF__FEATURE_COLS);
    c->col[c->n++] = k;
    return NCF_OK;
}

/* The columns spec's item at p: [*s, *e) with its "weight:" (*weight) taken off; returns the
   next item's start (the spec's end after the last). */
static const char *ncf__spec_item(const char *p, const char **s, const char **e, int *weight)
{
    *weight = !strncmp(p, "weight:", 7);
    if (*weight) p += 7;
    for (*s = p, *e = p; **e && **e != ','; (*e)++) {}
    return **e ? *e + 1 : *e;
}

/* The columns from the spec "ID,FEATURE...[,weight:W]", or found by the header's names. */
static int ncf__feature_cols(const char *name, const char *spec, const ncf__sample *S, int header, ncf__fcols *c)
{
    int k, rc;
    char norm[64];
    memset(c, 0, sizeof *c);
    c->weight = -1;
    if (!spec || !*spec) {
        c->id = 0;
        for (k = 1; header && k < S->nf[0] && k < NCF__MAX_FIELDS; k++) {
            ncf__head_name(S, k, norm, sizeof norm);
            if (ncf__feature_name(norm) && !c->n) c->col[c->n++] = k;
            else if (ncf__weight_name(norm) && c->weight < 0) c->weight = k;
        }
        if (!c->n) c->col[c->n++] = 1;
    } else {
        const char *next = spec, *p, *e, *dash;
        int first = 1, weight;
        while (*next) {
            next = ncf__spec_item(next, &p, &e, &weight);
            dash = p;
            while (dash < e && *dash != '-') dash++;
            if (p == e) return ncf__fail(NCF_ERR_ARG, "%s: columns '%s': an empty item", name, spec);
            if (first || weight || dash == e || dash == p) {
                if ((rc = ncf__spec_column(name, p, e, S, header)) < 0) return rc;
                if (first) c->id = rc;
                else if (weight) c->weight = rc;
                else if ((rc = ncf__add_col(name, c, rc)) != NCF_OK) return rc;
            } else { /* a range "6-24" */
                int64_t a, b, j;
                if (ncf__int_field(p, dash, &a) != 1 || ncf__int_field(dash + 1, e, &b) != 1 || a < 1 || b < a ||
                    b > NCF__MAX_FIELDS)
                    return ncf__fail(NCF_ERR_ARG, "%s: columns '%s': '%s' is not a range of columns 1 to %d", name,
                                     spec, ncf__shown(p, e), NCF__MAX_FIELDS);
                for (j = a; j <= b; j++)
                    if ((rc = ncf__add_col(name, c, (int)j - 1)) != NCF_OK) return rc;
            }
            first = 0;
        }
        if (!c->n) return ncf__fail(NCF_ERR_ARG, "%s: columns '%s' name no feature column", name, spec);
    }
    for (k = 0; k < c->n; k++) ncf__col_name(S, header, c->col[k], c->name[k]);
    return NCF_OK;
}

/* Whether the first record names columns: one the spec asks for by name, or a known name. */
static int ncf__features_header(const ncf__sample *S, const ncf_features_opts *o)
{
    int k;
    char norm[64];
    if (o->header) return o->header == NCF_HEADER_YES;
    if (o->columns) {
        const char *next = o->columns, *p, *e;
        int weight;
        int64_t v;
        while (*next) {
            next = ncf__spec_item(next, &p, &e, &weight);
            if (e > p && ncf__int_field(p, e, &v) != 1 && !memchr(p, '-', (size_t)(e - p))) return 1;
        }
    }
    for (k = 0; k < S->nf[0] && k < NCF__MAX_FIELDS; k++) {
        ncf__head_name(S, k, norm, sizeof norm);
        if (norm[0] &&
            (ncf__alias_of(norm) >= 0 || ncf__feature_name(norm) || ncf__weight_name(norm) || !strcmp(norm, "id")))
            return 1;
    }
    return 0;
}

typedef struct {
    const char *name;
    ncf__cursor C;
    ncf__intern ids, toks;
    ncf__entries E;
    int trim;
} ncf__freader;

/* A field's text as the user wrote it into buf (quotes off, "" read as one): its length, or
   -1 past NCF_MAX_ID_BYTES. Blanks around an unquoted field stay unless trim. */
static int ncf__field_text(ncf__span f, int trim, char *buf)
{
    int esc;
    ncf__span v = ncf__value(f, &esc);
    int quoted = v.s > f.s && v.s[-1] == '"';
    if (!quoted && !trim) v = f;
    if (esc) return ncf__unescape(v, buf);
    if (v.e - v.s > NCF_MAX_ID_BYTES) return -1;
    memcpy(buf, v.s, (size_t)(v.e - v.s));
    return (int)(v.e - v.s);
}

static int ncf__token(ncf__freader *R, int32_t e, const char *s, size_t len, float w)
{
    int64_t t;
    while (len && ncf__blank(*s)) s++, len--;
    while (len && ncf__blank(s[len - 1])) len--;
    if (!len) return NCF_OK;
    if ((t = ncf__intern_add(&R->toks, s, len)) < 0 || !ncf__entries_add(&R->E, e, (int32_t)t, w))
        return ncf__fail(NCF_ERR_NOMEM, "%s:%lld: out of memory for the features", R->name, (long long)R->C.line);
    return NCF_OK;
}

/* One record's features into the entries. */
static int ncf__record_features(ncf__freader *R, const ncf__fcols *c, const ncf__span *f, int nf, const char *sep,
                                const char *tsep)
{
    char buf[NCF_MAX_ID_BYTES + 1], tok[2 * NCF_MAX_ID_BYTES + 2];
    int n, k, rc, need = c->id > c->weight ? c->id : c->weight;
    int64_t e;
    float w = 1.0f;
    for (k = 0; k < c->n; k++) need = c->col[k] > need ? c->col[k] : need;
    if (nf <= need)
        return ncf__fail(NCF_ERR_PARSE, "%s:%lld: %d fields (separator %s); the features need %d", R->name,
                         (long long)R->C.line, nf, ncf__sep_name(sep), need + 1);
    if ((n = ncf__field_text(f[c->id], R->trim, buf)) < 0)
        return ncf__fail(NCF_ERR_PARSE, "%s:%lld: an id longer than %d bytes", R->name, (long long)R->C.line,
                         NCF_MAX_ID_BYTES);
    if (n == 0 || memchr(buf, 0, (size_t)n))
        return ncf__fail(NCF_ERR_PARSE, "%s:%lld: %s id", R->name, (long long)R->C.line,
                         n ? "a NUL byte in the" : "no");
    {
        int64_t v;
        const char *s = buf, *t = buf + n; /* a plain integer, blanks around it, is the number */
        while (s < t && ncf__blank(*s)) s++;
        while (t > s && ncf__blank(t[-1])) t--;
        if (ncf__plain_int(s, t, &v) && (s > buf || t < buf + n)) memmove(buf, s, (size_t)(t - s)), n = (int)(t - s);
    }
    if ((e = ncf__intern_add(&R->ids, buf, (size_t)n)) < 0)
        return ncf__fail(NCF_ERR_NOMEM, "%s:%lld: out of memory for the ids", R->name, (long long)R->C.line);
    if (c->weight >= 0) {
        int esc;
        ncf__span v = ncf__value(f[c->weight], &esc);
        double x = ncf__num_field(v.s, v.e) ? ncf__num_value(v) : -1.0;
        if (!(x >= 0 && x <= 1e30))
            return ncf__fail(NCF_ERR_PARSE, "%s:%lld: weight '%s' is not a number from 0 to 1e30", R->name,
                             (long long)R->C.line, ncf__shown(v.s, v.e));
        w = (float)x;
    }
    for (k = 0; k < c->n; k++) {
        if ((n = ncf__field_text(f[c->col[k]], 1, buf)) < 0)
            return ncf__fail(NCF_ERR_PARSE, "%s:%lld: a feature field longer than %d bytes", R->name,
                             (long long)R->C.line, NCF_MAX_ID_BYTES);
        if (memchr(buf, 0, (size_t)n))
            return ncf__fail(NCF_ERR_PARSE, "%s:%lld: a NUL byte in a feature", R->name, (long long)R->C.line);
        if (c->n == 1) { /* tokens as written, split at token_sep */
            size_t tl = tsep ? strlen(tsep) : 0;
            int a = 0, b;
            for (b = 0; b <= n; b++)
                if (b == n || (tl && b + (int)tl <= n && !memcmp(buf + b, tsep, tl))) {
                    if ((rc = ncf__token(R, (int32_t)e, buf + a, (size_t)(b - a), w)) != NCF_OK) return rc;
                    a = b + (int)tl, b += tl ? (int)tl - 1 : 0;
                }
        } else if (n == 1 && buf[0] == '1') { /* a flag */
            if ((rc = ncf__token(R, (int32_t)e, c->name[k], strlen(c->name[k]), w)) != NCF_OK) return rc;
        } else if (n && !(n == 1 && buf[0] == '0')) { /* a category: name=value */
            size_t l = strlen(c->name[k]);
            memcpy(tok, c->name[k], l), tok[l] = '=', memcpy(tok + l + 1, buf, (size_t)n);
            if (l + 1 + (size_t)n > NCF_MAX_ID_BYTES)
                return ncf__fail(NCF_ERR_PARSE, "%s:%lld: feature '%s=...' is longer than %d bytes", R->name,
                                 (long long)R->C.line, c->name[k], NCF_MAX_ID_BYTES);
            if ((rc = ncf__token(R, (int32_t)e, tok, l + 1 + (size_t)n, w)) != NCF_OK) return rc;
        }
    }
    return NCF_OK;
}

typedef struct {
    int32_t tok;
    float w;
} ncf__fentry;

static int ncf__cmp_fentry(const void *a, const void *b)
{
    const ncf__fentry *x = (const ncf__fentry *)a, *y = (const ncf__fentry *)b;
    return (x->tok > y->tok) - (x->tok < y->tok);
}

/* The table from what was read: entities in reading order, the vocabulary sorted, each
   entity's features ascending and merged. */
static int ncf__features_build(ncf_features *f, ncf__freader *R)
{
    int64_t *rank = NULL, *fill = NULL, j, k;
    ncf__fentry *tmp = NULL;
    int e, rc;
    f->num_entities = (int)R->ids.n, f->num_features = (int)R->toks.n;
    if ((rc = ncf__intern_sort(&R->toks, &f->vocab, &f->vocab_at, &rank)) != NCF_OK) return rc;
    f->ids = NCF__NEW(char, R->ids.used ? R->ids.used : 1), f->ids_at = NCF__NEW(int64_t, R->ids.n + 1);
    f->ptr = NCF__ZNEW(int64_t, R->ids.n + 1), fill = NCF__NEW(int64_t, R->ids.n + 1);
    tmp = NCF__ZNEW(ncf__fentry, R->E.n ? R->E.n : 1); /* (zeroed: for the analyzer) */
    if (!f->ids || !f->ids_at || !f->ptr || !fill || !tmp) {
        rc = ncf__fail(NCF_ERR_NOMEM, "%s: out of memory for %lld features", R->name, (long long)R->E.n);
        goto done;
    }
    if (R->ids.used) memcpy(f->ids, R->ids.bytes, (size_t)R->ids.used);
    for (k = 0; k <= R->ids.n; k++) f->ids_at[k] = R->ids.n ? R->ids.at[k] : 0;
    for (j = 0; j < R->E.n; j++) f->ptr[R->E.ent[j] + 1]++;
    for (e = 0; e < f->num_entities; e++) f->ptr[e + 1] += f->ptr[e];
    memcpy(fill, f->ptr, sizeof(int64_t) * (size_t)(R->ids.n + 1));
    for (j = 0; j < R->E.n; j++) { /* (stable: a record's order kept) */
        ncf__fentry *x = &tmp[fill[R->E.ent[j]]++];
        x->tok = (int32_t)rank[R->E.tok[j]], x->w = R->E.w[j];
    }
    for (e = 0, k = 0; e < f->num_entities; e++) { /* sorted, repeats summed, compacted */
        int64_t a = f->ptr[e], b = f->ptr[e + 1], i;
        ncf__heap_sort((char *)(tmp + a), (size_t)(b - a), sizeof *tmp, ncf__cmp_fentry);
        f->ptr[e] = k;
        for (i = a; i < b; i++)
            if (k > f->ptr[e] && tmp[k - 1].tok == tmp[i].tok) tmp[k - 1].w += tmp[i].w;
            else tmp[k++] = tmp[i];
    }
    f->ptr[f->num_entities] = k;
    f->feat = NCF__NEW(int32_t, k ? k : 1), f->weight = NCF__NEW(float, k ? k : 1);
    if (!f->feat || !f->weight) {
        rc = ncf__fail(NCF_ERR_NOMEM, "%s: out of memory for %lld features", R->name, (long long)k);
        goto done;
    }
    for (j = 0; j < k; j++) f->feat[j] = tmp[j].tok, f->weight[j] = tmp[j].w;
done:
    NCF_FREE(rank), NCF_FREE(fill), NCF_FREE(tmp);
    return rc;
}

NCFDEF int ncf_load_features_mem(ncf_features *f, const char *name, const void *buf, size_t len,
                                 const ncf_features_opts *opts)
{
    ncf_features_opts dflt = ncf_features_opts_default();
    const ncf_features_opts *o = opts ? opts : &dflt;
    const char *p = (const char *)buf, *end;
    ncf__freader R;
    ncf__sample S;
    ncf__fcols cols;
    ncf__span fl[NCF__MAX_FIELDS];
    char sep[4];
    int header, nf, rc = NCF_OK;
    if (!f || (!buf && len)) return ncf__fail(NCF_ERR_ARG, "ncf_load_features: NULL features or buffer");
    memset(f, 0, sizeof *f);
    if (!name) name = "(features)";
    if (o->header < NCF_HEADER_AUTO || o->header > NCF_HEADER_NO || (o->trim_ids != 0 && o->trim_ids != 1))
        return ncf__fail(NCF_ERR_ARG, "%s: header %d or trim_ids %d is not one of its values", name, o->header,
                         o->trim_ids);
    if (o->sep && (!*o->sep || strlen(o->sep) > 2))
        return ncf__fail(NCF_ERR_ARG, "%s: a separator of 1 or 2 bytes, not '%s'", name, o->sep);
    end = p + len, p += ncf__bom_bytes(p, len);
    if (o->sep) strcpy(sep, o->sep); /* (1 or 2 bytes: fits) */
    else ncf__find_sep(p, end, sep);
    ncf__take_sample(p, end, sep, &S);
    if (!S.n) return ncf__fail(NCF_ERR_DATA, "%s: no records", name);
    header = ncf__features_header(&S, o);
    if ((rc = ncf__feature_cols(name, o->columns, &S, header, &cols)) != NCF_OK) return rc;
    memset(&R, 0, sizeof R);
    R.name = name, R.trim = o->trim_ids;
    R.C.p = p, R.C.end = end, R.C.line = 0, R.C.next = 1;
    while ((nf = ncf__record(&R.C, sep, fl, NCF__MAX_FIELDS)) != -1) {
        if (nf == 0) continue;
        if (nf == -2) {
            rc = ncf__fail(NCF_ERR_PARSE, "%s:%lld: a quote opened and never closed", name, (long long)R.C.line);
            break;
        }
        if (header && R.C.line == 1) {
            header = 0;
            continue;
        }
        f->records++;
        if ((rc = ncf__record_features(&R, &cols, fl, nf, sep, o->token_sep)) != NCF_OK) break;
    }
    if (rc == NCF_OK && !R.ids.n) rc = ncf__fail(NCF_ERR_DATA, "%s: no records", name);
    if (rc == NCF_OK) rc = ncf__features_build(f, &R);
    ncf__intern_free(&R.ids), ncf__intern_free(&R.toks), ncf__entries_free(&R.E);
    if (rc != NCF_OK) ncf_features_free(f);
    return rc;
}

#ifndef NCF_NO_STDIO
NCFDEF int ncf_load_features(ncf_features *f, const char *path, const ncf_features_opts *opts)
{
    char *buf = NULL;
    size_t len = 0;
    int rc;
    if (!f || !path) return ncf__fail(NCF_ERR_ARG, "ncf_load_features: NULL features or path");
    memset(f, 0, sizeof *f);
    if ((rc = ncf__read_file(path, &buf, &len, NULL)) != NCF_OK) return rc;
    rc = ncf_load_features_mem(f, path, buf, len, opts);
    NCF_FREE(buf);
    return rc;
}
#endif

NCFDEF int ncf_features_from_csr(ncf_features *f, int n, const char *const *ids, int num_features,
                                 const char *const *names, const int64_t *ptr, const int32_t *idx, const float *w)
{
    ncf__freader R;
    int64_t j;
    int k, rc = NCF_OK;
    if (!f) return ncf__fail(NCF_ERR_ARG, "ncf_features_from_csr: NULL features");
    memset(f, 0, sizeof *f);
    if (n < 1 || !ids || num_features < 0 || (num_features && !names) || !ptr || (ptr[n] && !idx) || ptr[0] != 0)
        return ncf__fail(NCF_ERR_ARG, "ncf_features_from_csr: need n >= 1 ids, names of the columns, ptr from 0");
    memset(&R, 0, sizeof R);
    R.name = "ncf_features_from_csr";
    for (k = 0; k < num_features && rc == NCF_OK; k++) { /* every name, in column order, each once */
        size_t l = names[k] ? strlen(names[k]) : 0;
        int64_t t = l && l <= NCF_MAX_ID_BYTES ? ncf__intern_add(&R.toks, names[k], l) : -2;
        if (t == -2)
            rc = ncf__fail(NCF_ERR_ARG, "ncf_features_from_csr: names[%d]: 1 to %d bytes", k, NCF_MAX_ID_BYTES);
        else if (t < 0) rc = ncf__fail(NCF_ERR_NOMEM, "ncf_features_from_csr: out of memory");
        else if (t != k) rc = ncf__fail(NCF_ERR_ARG, "ncf_features_from_csr: names[%d] '%s' given twice", k, names[k]);
    }
    for (k = 0; k < n && rc == NCF_OK; k++) {
        size_t l = ids[k] ? strlen(ids[k]) : 0;
        int64_t e;
        if (!l || l > NCF_MAX_ID_BYTES || ptr[k + 1] < ptr[k]) {
            rc = ncf__fail(NCF_ERR_ARG, "ncf_features_from_csr: row %d: an id of 1 to %d bytes, ptr not falling", k,
                           NCF_MAX_ID_BYTES);
            break;
        }
        if ((e = ncf__intern_add(&R.ids, ids[k], l)) < 0)
            rc = ncf__fail(NCF_ERR_NOMEM, "ncf_features_from_csr: out of memory");
        for (j = ptr[k]; rc == NCF_OK && j < ptr[k + 1]; j++) {
            float x = w ? w[j] : 1.0f;
            if (idx[j] < 0 || idx[j] >= num_features || !(x >= 0 && x <= 1e30f))
                rc = ncf__fail(NCF_ERR_ARG, "ncf_features_from_csr: entry %lld: column %d of %d, weight %g",
                               (long long)j, (int)idx[j], num_features, (double)x);
            else if (!ncf__entries_add(&R.E, (int32_t)e, idx[j], x))
                rc = ncf__fail(NCF_ERR_NOMEM, "ncf_features_from_csr: out of memory");
        }
    }
    f->records = n;
    if (rc == NCF_OK) rc = ncf__features_build(f, &R);
    ncf__intern_free(&R.ids), ncf__intern_free(&R.toks), ncf__entries_free(&R.E);
    if (rc != NCF_OK) ncf_features_free(f);
    return rc;
}

/* Whether f is a table ncf_load_features could have made (a caller may have filled one). */
static int ncf__features_valid(const ncf_features *f, const char *what)
{
    int64_t j;
    int k;
    if (!f || f->num_entities < 0 || f->num_features < 0 || !f->ids_at || !f->ptr || !f->vocab_at ||
        (f->num_features && !f->vocab) || (f->ptr[f->num_entities] && (!f->feat || !f->weight)))
        return ncf__fail(NCF_ERR_ARG, "%s: features not loaded (ncf_load_features)", what);
    for (k = 0; k < f->num_entities; k++)
        if (f->ptr[k + 1] < f->ptr[k] || f->ids_at[k + 1] <= f->ids_at[k] ||
            f->ids_at[k + 1] - f->ids_at[k] > NCF_MAX_ID_BYTES)
            return ncf__fail(NCF_ERR_ARG, "%s: features entity %d: its id or features are out of order", what, k);
    for (j = 0; j < f->ptr[f->num_entities]; j++)
        if (f->feat[j] < 0 || f->feat[j] >= f->num_features || !(f->weight[j] >= 0 && f->weight[j] <= 1e30f))
            return ncf__fail(NCF_ERR_ARG, "%s: features entry %lld: feature %d of %d, weight %g", what, (long long)j,
                             (int)f->feat[j], f->num_features, (double)f->weight[j]);
    return NCF_OK;
}

/* ---- >>features-model: composed rows, their gradients, the features' own optimizer ------------- */

#define NCF__MIN_FEATURE_SCALE (1.0 / 64) /* ncf_model_set_features' scale */
#define NCF__MAX_FEATURE_SCALE 64.0

/* One side's features in a model. The vocabulary and its embeddings serve (a loaded or grown
   model has them); the rest exists while the side trains (ncf_model_set_features). Rows are
   ncf_row_size floats, [GMF or MF][MLP][MF bias], as ncf_row's. */
typedef struct {
    int n, no_id; /* the vocabulary's size; a features-only side */
    float scale;  /* the features' part of a vector: their weighted mean times this */
    char *text;   /* tokens as written, ascending by bytes */
    int64_t *at;  /* [n + 1] */
    float *emb;   /* [n][R] */
    int ents;     /* the side's entities when set (0: serving only) */
    int64_t *ptr; /* [ents + 1]: entity e's features idx[ptr[e] .. ptr[e+1]) */
    int32_t *idx;
    float *w;                           /* weights normalized to sum 1 */
    uint8_t *has_id;                    /* [ents]: the entity's id embedding is part of its vector */
    float *id;                          /* [ents][R]: the id embeddings */
    float *g_emb, *g_id;                /* their gradients, summed over a step */
    float *m_emb, *v_emb, *m_id, *v_id; /* Adam's moments (NULL for SGD) */
    uint8_t *fflag;                     /* [n]: feature in flist */
    int32_t *flist, *elist;             /* a step's features, and its entities with an id embedding */
    int nf, ne;
} ncf__fside;

struct ncf__features {
    ncf__fside side[2];
};

static void ncf__fside_train_free(ncf__fside *f)
{
    NCF_FREE(f->ptr), NCF_FREE(f->idx), NCF_FREE(f->w), NCF_FREE(f->has_id), NCF_FREE(f->id);
    NCF_FREE(f->g_emb), NCF_FREE(f->g_id), NCF_FREE(f->m_emb), NCF_FREE(f->v_emb), NCF_FREE(f->m_id);
    NCF_FREE(f->v_id), NCF_FREE(f->fflag), NCF_FREE(f->flist), NCF_FREE(f->elist);
    f->ptr = NULL, f->idx = NULL, f->w = NULL, f->has_id = NULL, f->id = f->g_emb = f->g_id = NULL;
    f->m_emb = f->v_emb = f->m_id = f->v_id = NULL, f->fflag = NULL, f->flist = f->elist = NULL;
    f->ents = f->nf = f->ne = 0;
}

static void ncf__fside_free(ncf__fside *f)
{
    ncf__fside_train_free(f);
    NCF_FREE(f->text), NCF_FREE(f->at), NCF_FREE(f->emb);
    memset(f, 0, sizeof *f);
}

static void ncf__features_free(struct ncf__features *F)
{
    if (!F) return;
    ncf__fside_free(&F->side[0]), ncf__fside_free(&F->side[1]);
    NCF_FREE(F);
}

/* Side s of m's features, or NULL when it has none. */
static ncf__fside *ncf__fside_of(const ncf_model *m, int s)
{
    struct ncf__features *F = m && m->scratch ? m->scratch->feat : NULL;
    return F && F->side[s].at ? &F->side[s] : NULL;
}

static int ncf__has_features(const ncf_model *m) { return ncf__fside_of(m, 0) || ncf__fside_of(m, 1); }

/* Whether a side of m trains through its features. */
static int ncf__features_train_on(const ncf_model *m)
{
    int s;
    for (s = 0; s < 2; s++)
        if (ncf__fside_of(m, s) && ncf__fside_of(m, s)->ptr) return 1;
    return 0;
}

/* row[0..R) += w x[0..R) */
static void ncf__add_scaled(float *NCF__RESTRICT row, const float *NCF__RESTRICT x, float w, int R)
{
    int d;
    for (d = 0; d < R; d++) row[d] += w * x[d];
}

/* Entity e's composed row: its id embedding (if it has one) plus its features' weighted mean. */
static void ncf__compose_row(const ncf__fside *f, int R, int e, float *row)
{
    int64_t j;
    if (f->has_id[e]) memcpy(row, f->id + (size_t)e * R, sizeof(float) * (size_t)R);
    else memset(row, 0, sizeof(float) * (size_t)R);
    for (j = f->ptr[e]; j < f->ptr[e + 1]; j++) ncf__add_scaled(row, f->emb + (size_t)f->idx[j] * R, f->w[j], R);
}

/* Every entity of the training sides composed into the model's tables. */
static void ncf__compose_all(ncf_model *m, float *row)
{
    int s, e, R = ncf_row_size(m);
    for (s = 0; s < 2; s++) {
        const ncf__fside *f = ncf__fside_of(m, s);
        for (e = 0; f && f->ptr && e < f->ents; e++) ncf__compose_row(f, R, e, row), ncf__put_side_row(m, s, e, row);
    }
}

/* The gradient of row e of side s in the model's tables into g (cleared as it is read). */
static void ncf__take_row_grad(ncf_model *m, int s, int e, float *g)
{
    const struct ncf__scratch *sc = m->scratch;
    float *part[3], *x;
    int n[3], at = 0, k;
    ncf__row_parts(m, s, e, &part[0], &part[1], &part[2]);
    n[0] = sc->F, n[1] = sc->H, n[2] = 1, g[sc->F + sc->H] = 0;
    for (k = 0; k < 3; at += n[k++])
        if (part[k])
            x = ncf__grad_of(m, part[k]), memcpy(g + at, x, sizeof(float) * (size_t)n[k]),
            memset(x, 0, sizeof(float) * (size_t)n[k]);
}

/* The step's gradients of the composed rows (the batch's entities, listed by
   ncf_forward_backward) passed on to the id and feature embeddings, by the chain rule. */
static void ncf__pass_grads(ncf_model *m, float *g)
{
    const struct ncf__scratch *sc = m->scratch;
    int s, i, d, R = ncf_row_size(m);
    for (s = 0; s < 2; s++) {
        ncf__fside *f = ncf__fside_of(m, s);
        const int32_t *list = s ? sc->touched.item : sc->touched.user;
        int n = s ? sc->touched.nitem : sc->touched.nuser;
        if (!f || !f->ptr) continue;
        for (i = 0; i < n; i++) {
            int e = list[i];
            int64_t j;
            ncf__take_row_grad(m, s, e, g);
            if (f->has_id[e]) {
                float *gi = f->g_id + (size_t)e * R;
                for (d = 0; d < R; d++) gi[d] += g[d];
                f->elist[f->ne++] = e;
            }
            for (j = f->ptr[e]; j < f->ptr[e + 1]; j++) {
                int32_t k = f->idx[j];
                float *ge = f->g_emb + (size_t)k * R, w = f->w[j];
                for (d = 0; d < R; d++) ge[d] += w * g[d];
                if (!f->fflag[k]) f->fflag[k] = 1, f->flist[f->nf++] = k;
            }
        }
    }
}

/* Row p[0..R) by its gradient g (cleared): Adam with moments mm, vv, or SGD (mm NULL). */
static int ncf__fstep(float *p, float *g, float *mm, float *vv, int R, const ncf__adam_k *k)
{
    return mm ? ncf__adam_step(p, mm, vv, g, (size_t)R, k) : ncf__sgd_step(p, g, (size_t)R, k);
}

/* The listed id and feature rows stepped (step t's constants); nonzero when one went non-finite. */
static int ncf__features_update(ncf_model *m, int64_t t)
{
    ncf__adam_k k = ncf__adam_consts(m, t);
    int s, i, bad = 0, R = ncf_row_size(m);
    for (s = 0; s < 2; s++) {
        ncf__fside *f = ncf__fside_of(m, s);
        if (!f || !f->ptr) continue;
        for (i = 0; i < f->ne; i++) {
            size_t o = (size_t)f->elist[i] * R;
            bad |=
                ncf__fstep(f->id + o, f->g_id + o, f->m_id ? f->m_id + o : NULL, f->v_id ? f->v_id + o : NULL, R, &k);
        }
        for (i = 0; i < f->nf; i++) {
            size_t o = (size_t)f->flist[i] * R;
            f->fflag[f->flist[i]] = 0;
            bad |= ncf__fstep(f->emb + o, f->g_emb + o, f->m_emb ? f->m_emb + o : NULL, f->v_emb ? f->v_emb + o : NULL,
                              R, &k);
        }
        f->nf = f->ne = 0;
    }
    return bad;
}

static uint8_t *ncf__trained_entities(const ncf_dataset *d, int s);

/* ncf_update's units within a features step's region, each side's rows in groups counted from
   the batch's n, not from the rows listed, so that a thread arriving late counts them as the
   others did (ncf__rows_of_tables_phase). */
static void ncf__features_update_phase(ncf__ctx *x, ncf_model *m, int n, const ncf__adam_k *k, int *bad)
{
    int64_t g = NCF__CEIL_DIV(n, NCF__ROWS_PER_UNIT), lo, hi, u;
    while (ncf__claim(x, ncf__update_units(m, g), 1, &lo, &hi))
        for (u = lo; u < hi; u++)
            if (ncf__update_unit(m, u, g, k)) ncf__flag(bad, 1);
}

/* A features training's batch buffers and the examples it has trained. */
typedef struct {
    const ncf_sampler *smp;
    int epoch;
    int64_t first, end, pos;
    int32_t *u, *it;
    float *y, *row;
    ncf_progress_fn progress;
    void *ctx;
    double *sum;
} ncf__fbatch;

/* A features step's examples [at, at + n) drawn within the region, a run of the sampler's a
   unit (ncf_sampler_fill's own region would be a nested one, its threads made each call). */
static void ncf__features_draw(ncf__ctx *x, const ncf__fbatch *b, int64_t at, int n)
{
    int64_t lo, hi, c;
    while (ncf__claim(x, NCF__CEIL_DIV(n, NCF__RUN), 1, &lo, &hi))
        for (c = lo; c < hi; c++) {
            int j = (int)c * NCF__RUN;
            ncf__fill_rows(b->smp, b->epoch, at + j, n - j < NCF__RUN ? n - j : NCF__RUN, b->u + j, b->it + j, b->y + j,
                           NULL);
        }
}

/* The serial head of a features step: its entities composed into the model's tables. n: the
   batch's size. */
static void ncf__features_head(ncf_model *m, ncf__fbatch *b, int n)
{
    int s, i, R = ncf_row_size(m);
    for (s = 0; s < 2; s++) {
        const ncf__fside *f = ncf__fside_of(m, s);
        const int32_t *ids = s ? b->it : b->u;
        for (i = 0; f && f->ptr && i < n; i++)
            ncf__compose_row(f, R, ids[i], b->row), ncf__put_side_row(m, s, ids[i], b->row);
    }
}

/* Up to nsteps steps of a features training in one region, each: the head (serial), the model's
   forward and backward pass, the rows' gradients passed on to the id and feature embeddings
   (serial), the dense layers and the other side's rows stepped (ncf_update's units), then the
   id and feature rows (serial). The transposed kernels are made once: the dense updates keep
   them current. Returns the steps done; losses[i] and bad[i] say how step i went. */
static int ncf__features_block(ncf_model *m, ncf__fbatch *b, int nsteps, double *losses, int *bad)
{
    ncf__team team = NCF__TEAM_INIT;
    int B = m->cfg.batch_size, done = 0;
    int64_t t0 = m->step, pos0 = b->pos;
    team.pace = &m->scratch->pace, team.solo = team.pace->solo;
    NCF__PARALLEL(ncf__rows_parallel(m, B))
    {
        ncf__ctx x = ncf__join(&team);
        ncf__batch bt;
        int64_t lo, hi;
        double sum = *b->sum; /* (thread 0's, as progress is: another may be a step ahead) */
        int i, lead = 1;
#if NCF__TEAMS
        lead = omp_get_thread_num() == 0;
#endif
        memset(&bt, 0, sizeof bt);
        bt.users = b->u, bt.items = b->it, bt.labels = b->y;
        ncf__transpose_phase(&x, m);
        for (i = 0; i < nsteps;) {
            ncf__adam_k k = ncf__adam_consts(m, t0 + i + 1);
            int64_t at = pos0 + (int64_t)i * B;
            bt.n = (int)(b->end - at < B ? b->end - at : B);
            ncf__features_draw(&x, b, at, bt.n);
            while (ncf__claim(&x, 1, 1, &lo, &hi)) ncf__features_head(m, b, bt.n);
            ncf__rows_phase(&x, m, &bt, 1);
            ncf__sums_phase(&x, m, &bt, &losses[i]);
            ncf__rows_of_tables_phase(&x, m, bt.n, NULL, NULL); /* (listed: a failed step's are cleared) */
            if (!(losses[i] - losses[i] == 0.0)) break;
            while (ncf__claim(&x, 1, 1, &lo, &hi)) ncf__pass_grads(m, b->row);
            ncf__features_update_phase(&x, m, bt.n, &k, &bad[i]);
            while (ncf__claim(&x, 1, 1, &lo, &hi)) {
                struct ncf__scratch *s = m->scratch;
                s->touched.nuser = s->touched.nitem = 0, m->step++;
                if (ncf__features_update(m, m->step)) ncf__flag(&bad[i], 1);
            }
            if (lead) {
                int64_t seen = at + bt.n - b->first;
                sum += losses[i] * bt.n;
                if (b->progress && ((at - b->first) / B % 16 == 15 || at + bt.n == b->end))
                    b->progress(b->ctx, seen, b->end - b->first, sum / (double)seen);
            }
            if (ncf__flag_value(&bad[i++])) break;
        }
        if (lead) done = i, *b->sum = sum;
    }
    b->pos = pos0 + (int64_t)done * B < b->end ? pos0 + (int64_t)done * B : b->end;
    return done;
}

/* Examples [first, end) of the epoch with features, NCF__BLOCK steps a region
   (ncf__features_block): NeuMF with ml-100k's genres at 1.8x the steps a second of a region a
   step, MF and GMF at 0.93-1.05x (2 threads, AMD EPYC). The passing and the features' steps
   are serial: the same bits on any threads. */
static int ncf__features_train(ncf_model *m, const ncf_sampler *smp, int epoch, int64_t first, int64_t end,
                               ncf_progress_fn progress, void *ctx, double *sum)
{
    int B = m->cfg.batch_size, R = ncf_row_size(m), rc = NCF_OK;
    const ncf__fside *fi = ncf__fside_of(m, 1);
    uint8_t *warm = fi && fi->ptr && !smp->draw_only ? ncf__trained_entities(smp->data, 1) : NULL;
    ncf_sampler own = *smp; /* (negatives among the items training has: see ncf_sampler.draw_only) */
    double *losses = NCF__NEW(double, NCF__BLOCK);
    int *bad = NCF__NEW(int, NCF__BLOCK);
    ncf__fbatch b;
    memset(&b, 0, sizeof b);
    b.u = NCF__ZNEW(int32_t, B), b.it = NCF__ZNEW(int32_t, B),
    b.y = NCF__ZNEW(float, B); /* (zeroed: for the analyzer) */
    b.row = NCF__NEW(float, R);
    if (!b.u || !b.it || !b.y || !b.row || !losses || !bad || (fi && fi->ptr && !smp->draw_only && !warm))
        rc = ncf__fail(NCF_ERR_NOMEM, "out of memory for a batch of %d", B);
    else if (ncf__pending(m))
        rc = ncf__fail(NCF_ERR_ARG, "training a features model: rows from ncf_forward_backward wait for ncf_update");
    else rc = ncf__reserve(m, B);
    if (warm) own.draw_only = warm;
    b.smp = warm ? &own : smp, b.epoch = epoch, b.first = b.pos = first, b.end = end;
    b.progress = progress, b.ctx = ctx, b.sum = sum;
    while (rc == NCF_OK && b.pos < end) {
        int64_t steps = NCF__CEIL_DIV(end - b.pos, B);
        int nsteps = (int)(steps < NCF__BLOCK ? steps : NCF__BLOCK), done;
        memset(bad, 0, sizeof(int) * NCF__BLOCK);
        done = ncf__features_block(m, &b, nsteps, losses, bad);
        if (done > 0 && bad[done - 1]) rc = ncf__step_failed(m, losses[done - 1], 1);
        else if (done < nsteps) rc = ncf__step_failed(m, losses[done], 0);
    }
    if (b.row) ncf__compose_all(m, b.row), ncf_model_params_changed(m);
    NCF_FREE(b.u), NCF_FREE(b.it), NCF_FREE(b.y), NCF_FREE(b.row), NCF_FREE(warm), NCF_FREE(losses), NCF_FREE(bad);
    return rc;
}

/* Training entities of side s: with training positives in d. */
static uint8_t *ncf__trained_entities(const ncf_dataset *d, int s)
{
    int n = s ? d->num_items : d->num_users, k;
    int64_t j;
    uint8_t *t = NCF__ZNEW(uint8_t, n ? n : 1);
    if (!t) return NULL;
    if (s)
        for (j = 0; j < d->num_train; j++) t[d->items[j]] = 1;
    else
        for (k = 0; k < n; k++) t[k] = d->user_ptr[k + 1] > d->user_ptr[k];
    return t;
}

/* The model's entity of f's entity k, or -1 when it has none. */
static int ncf__entity_of(const ncf_model *m, const ncf_dataset *d, int s, const ncf_features *f, int k)
{
    ncf__ids t = ncf__has_ids(m) ? ncf__model_ids(m, s) : ncf__dataset_ids(d, s);
    return ncf__ids_find(&t, f->ids + f->ids_at[k], (size_t)(f->ids_at[k + 1] - f->ids_at[k]));
}

/* n zeroed floats (at least one: a zero-size block is no failure). */
static float *ncf__floats(size_t n) { return NCF__ZNEW(float, n ? n : 1); }

/* A side's vocabulary and embeddings (n tokens of R floats), room only. */
static int ncf__fside_alloc(ncf__fside *f, int n, int64_t text_bytes, int R)
{
    memset(f, 0, sizeof *f);
    f->n = n;
    f->text = NCF__NEW(char, text_bytes ? text_bytes : 1), f->at = NCF__NEW(int64_t, (size_t)n + 1);
    f->emb = ncf__floats((size_t)n * R);
    if (f->text && f->at && f->emb) return NCF_OK;
    ncf__fside_free(f);
    return ncf__fail(NCF_ERR_NOMEM, "out of memory for %d features", n);
}

/* The training state of side s from f's table: each entity's normalized features, which
   have an id embedding, the id embeddings (the model's rows less their features' part: the
   model scores as before), the gradients and moments. */
static int ncf__fside_train(ncf_model *m, int s, ncf__fside *x, const ncf_features *f, const ncf_dataset *d, int no_id)
{ /* (the weights held are normalized times the side's scale: composing and passing use them as they are) */
    int R = ncf_row_size(m), ents = s ? m->cfg.num_items : m->cfg.num_users, k, e, adam = m->adam_m != NULL;
    int32_t *of = NCF__NEW(int32_t, ents ? ents : 1);
    uint8_t *trained = ncf__trained_entities(d, s), *used = NCF__ZNEW(uint8_t, f->num_features ? f->num_features : 1);
    float *row = NCF__NEW(float, R);
    int64_t total = 0, j;
    int rc = NCF_OK;
    x->ents = ents, x->no_id = no_id;
    x->ptr = NCF__NEW(int64_t, (size_t)ents + 1), x->has_id = NCF__ZNEW(uint8_t, ents ? ents : 1);
    x->id = ncf__floats((size_t)ents * R), x->g_id = ncf__floats((size_t)ents * R);
    x->g_emb = ncf__floats((size_t)x->n * R);
    x->fflag = NCF__ZNEW(uint8_t, x->n ? x->n : 1), x->flist = NCF__NEW(int32_t, x->n ? x->n : 1);
    x->elist = NCF__NEW(int32_t, ents ? ents : 1);
    if (adam) {
        x->m_id = ncf__floats((size_t)ents * R), x->v_id = ncf__floats((size_t)ents * R);
        x->m_emb = ncf__floats((size_t)x->n * R), x->v_emb = ncf__floats((size_t)x->n * R);
    }
    if (!of || !trained || !used || !row || !x->ptr || !x->has_id || !x->id || !x->g_id || !x->g_emb || !x->fflag ||
        !x->flist || !x->elist || (adam && (!x->m_id || !x->v_id || !x->m_emb || !x->v_emb))) {
        rc = ncf__fail(NCF_ERR_NOMEM, "ncf_model_set_features: out of memory for %d entities' features", ents);
        goto done;
    }
    for (e = 0; e < ents; e++) of[e] = -1;
    for (k = 0; k < f->num_entities; k++)
        if ((e = ncf__entity_of(m, d, s, f, k)) >= 0) of[e] = k, total += f->ptr[k + 1] - f->ptr[k];
    x->idx = NCF__NEW(int32_t, total ? total : 1), x->w = NCF__NEW(float, total ? total : 1);
    if (!x->idx || !x->w) {
        rc = ncf__fail(NCF_ERR_NOMEM, "ncf_model_set_features: out of memory for %lld features", (long long)total);
        goto done;
    }
    for (e = 0, x->ptr[0] = 0; e < ents; e++) {
        double sw = 0;
        int64_t a = of[e] < 0 ? 0 : f->ptr[of[e]], b = of[e] < 0 ? 0 : f->ptr[of[e] + 1], q = x->ptr[e];
        for (j = a; j < b; j++) sw += f->weight[j];
        for (j = a; sw > 0 && j < b; j++)
            if (f->weight[j] > 0) {
                x->idx[q] = f->feat[j], x->w[q++] = (float)((double)x->scale * f->weight[j] / sw);
                if (trained[e]) used[f->feat[j]] = 1;
            }
        x->ptr[e + 1] = q;
        x->has_id[e] = !no_id && trained[e];
    }
    for (k = 0; k < x->n; k++) { /* features no trained entity has stay 0: nothing would move them */
        uint64_t key = ncf__hash3(m->cfg.seed ^ NCF__TAG_FEATURES, (uint64_t)s, (uint64_t)k);
        int r;
        for (r = 0; used[k] && r < (m->user_bias ? R : R - 1); r++) { /* (the bias slot is MF's only) */
            uint64_t a = ncf__hash3(key, (uint64_t)r, 0), b = ncf__mix64(a);
            double u1 = ncf__uniform(a) < 1e-300 ? 1e-300 : ncf__uniform(a), u2 = ncf__uniform(b);
            x->emb[(size_t)k * R + r] = (float)(m->cfg.init_sd * sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2));
        }
    }
    for (e = 0; e < ents; e++) { /* id = the model's row less the features' part */
        int r;
        if (!x->has_id[e]) continue;
        ncf_row(m, s, e, x->id + (size_t)e * R);
        x->has_id[e] = 0, ncf__compose_row(x, R, e, row), x->has_id[e] = 1;
        for (r = 0; r < R; r++) x->id[(size_t)e * R + r] -= row[r];
    }
done:
    NCF_FREE(of), NCF_FREE(trained), NCF_FREE(used), NCF_FREE(row);
    return rc;
}

/* The model's own moments of side s's rows cleared: their gradients are passed on now, and a
   moment left over would keep moving them. */
static void ncf__clear_side_moments(ncf_model *m, int s)
{
    const struct ncf__scratch *sc = m->scratch;
    int t, n = s ? m->cfg.num_items : m->cfg.num_users;
    for (t = 0; m->adam_m && t < sc->tables.n; t++) {
        const float *tab = s ? sc->tables.tab[t].item : sc->tables.tab[t].user;
        size_t o = (size_t)(tab - m->params), c = (size_t)n * sc->tables.tab[t].D;
        memset(m->adam_m + o, 0, sizeof(float) * c), memset(m->adam_v + o, 0, sizeof(float) * c);
    }
}

NCFDEF int ncf_model_set_features(ncf_model *m, int side, const ncf_features *f, const ncf_dataset *d, int flags,
                                  float scale)
{
    struct ncf__features *F;
    ncf__fside x;
    float *row;
    int rc, R, e;
    if (!m || (side != 0 && side != 1) || !d || !d->user_ptr)
        return ncf__fail(NCF_ERR_ARG, "ncf_model_set_features: need a model, side 0 (users) or 1 (items) and data");
    if ((rc = ncf__writable(m, "ncf_model_set_features")) != NCF_OK) return rc;
    if ((rc = ncf__features_valid(f, "ncf_model_set_features")) != NCF_OK) return rc;
    if (flags & ~NCF_FEATURES_NO_ID)
        return ncf__fail(NCF_ERR_ARG, "ncf_model_set_features: unknown flags 0x%x", (unsigned)flags);
    if (!(scale >= NCF__MIN_FEATURE_SCALE && scale <= NCF__MAX_FEATURE_SCALE))
        return ncf__fail(NCF_ERR_ARG, "ncf_model_set_features: scale %g: need %g to %g", (double)scale,
                         NCF__MIN_FEATURE_SCALE, NCF__MAX_FEATURE_SCALE);
    if (m->cfg.optimizer == NCF_OPT_ALS)
        return ncf__fail(NCF_ERR_ARG,
                         "ncf_model_set_features: ALS solves rows in closed form and takes no features "
                         "(train features with Adam or SGD)");
    if (ncf__is_shard(d) || d->num_users != m->cfg.num_users || d->num_items != m->cfg.num_items)
        return ncf__fail(NCF_ERR_ARG, "ncf_model_set_features: the data has %d users and %d items, the model %d and %d",
                         d->num_users, d->num_items, m->cfg.num_users, m->cfg.num_items);
    if (!m->scratch->feat && !(m->scratch->feat = NCF__ZNEW(struct ncf__features, 1)))
        return ncf__fail(NCF_ERR_NOMEM, "ncf_model_set_features: out of memory");
    F = m->scratch->feat, R = ncf_row_size(m);
    if ((rc = ncf__fside_alloc(&x, f->num_features, f->num_features ? f->vocab_at[f->num_features] : 0, R)) != NCF_OK)
        return rc;
    if (f->num_features) memcpy(x.text, f->vocab, (size_t)f->vocab_at[f->num_features]);
    memcpy(x.at, f->vocab_at, sizeof(int64_t) * ((size_t)f->num_features + 1));
    x.scale = scale;
    if (!(row = NCF__NEW(float, R))) rc = ncf__fail(NCF_ERR_NOMEM, "ncf_model_set_features: out of memory");
    if (rc == NCF_OK) rc = ncf__fside_train(m, side, &x, f, d, flags & NCF_FEATURES_NO_ID);
    if (rc != NCF_OK) {
        ncf__fside_free(&x), NCF_FREE(row);
        return rc;
    }
    ncf__fside_free(&F->side[side]);
    F->side[side] = x;
    ncf__clear_side_moments(m, side);
    for (e = 0; e < x.ents; e++) ncf__compose_row(&F->side[side], R, e, row), ncf__put_side_row(m, side, e, row);
    NCF_FREE(row);
    ncf_model_params_changed(m);
    return NCF_OK;
}

/* The row of features (idx, weights w, n of them; unknown ones -1) from the vocabulary alone,
   each weight as training's (ncf__fside_train): the same bits as a trained entity's part. */
static void ncf__feature_mean(const ncf__fside *f, int R, const int32_t *idx, const float *w, int n, float *row)
{
    double sw = 0;
    int j;
    memset(row, 0, sizeof(float) * (size_t)R);
    for (j = 0; j < n; j++) sw += idx[j] >= 0 && w[j] > 0 ? w[j] : 0;
    for (j = 0; sw > 0 && j < n; j++)
        if (idx[j] >= 0 && w[j] > 0)
            ncf__add_scaled(row, f->emb + (size_t)idx[j] * R, (float)((double)f->scale * w[j] / sw), R);
}

static int ncf__find_token(const ncf__fside *f, const char *s, size_t len)
{
    ncf__ids t;
    memset(&t, 0, sizeof t);
    t.n = f->n, t.text = f->text, t.at = f->at;
    return ncf__find_text(&t, s, len);
}

NCFDEF int ncf_feature_row(const ncf_model *m, int side, const char *const *tokens, const float *weights, int n,
                           float *row)
{
    const ncf__fside *f = m && (side == 0 || side == 1) ? ncf__fside_of(m, side) : NULL;
    int32_t *idx;
    float *w;
    int j, unknown = 0;
    if (!m || (side != 0 && side != 1) || n < 0 || (n && !tokens) || !row)
        return ncf__fail(NCF_ERR_ARG, "ncf_feature_row: need a model, side 0 or 1, n >= 0 tokens and a row");
    if (!f) return ncf__fail(NCF_ERR_ARG, "ncf_feature_row: the model has no %s features", side ? "item" : "user");
    idx = NCF__NEW(int32_t, n ? n : 1), w = NCF__NEW(float, n ? n : 1);
    if (!idx || !w) {
        NCF_FREE(idx), NCF_FREE(w);
        return ncf__fail(NCF_ERR_NOMEM, "ncf_feature_row: out of memory");
    }
    for (j = 0; j < n; j++) {
        w[j] = weights ? weights[j] : 1.0f;
        idx[j] = tokens[j] ? ncf__find_token(f, tokens[j], strlen(tokens[j])) : -1;
        unknown += idx[j] < 0;
        if (!(w[j] >= 0 && w[j] <= 1e30f)) {
            double bad = (double)w[j];
            NCF_FREE(idx), NCF_FREE(w);
            return ncf__fail(NCF_ERR_ARG, "ncf_feature_row: weights[%d] = %g: need 0 to 1e30", j, bad);
        }
    }
    ncf__feature_mean(f, ncf_row_size(m), idx, w, n, row);
    NCF_FREE(idx), NCF_FREE(w);
    return unknown;
}

NCFDEF int ncf_model_add_features(ncf_model **mp, int side, const ncf_features *f, int *added)
{
    const ncf__fside *x;
    char **ids = NULL, *text = NULL;
    float *rows = NULL;
    int32_t *idx = NULL;
    int k, c = 0, R, rc;
    int64_t j;
    if (added) *added = 0;
    if (!mp || !*mp || (side != 0 && side != 1))
        return ncf__fail(NCF_ERR_ARG, "ncf_model_add_features: need a model and side 0 (users) or 1 (items)");
    if ((rc = ncf__features_valid(f, "ncf_model_add_features")) != NCF_OK) return rc;
    if (!(x = ncf__fside_of(*mp, side)))
        return ncf__fail(NCF_ERR_ARG, "ncf_model_add_features: the model has no %s features", side ? "item" : "user");
    if (!ncf__has_ids(*mp)) return ncf__fail(NCF_ERR_ARG, "ncf_model_add_features: the model holds no ids");
    R = ncf_row_size(*mp);
    ids = NCF__NEW(char *, f->num_entities ? f->num_entities : 1);
    text = NCF__NEW(char, f->ids_at[f->num_entities] + f->num_entities + 1);
    rows = NCF__NEW(float, (size_t)(f->num_entities ? f->num_entities : 1) * R);
    idx = NCF__NEW(int32_t, f->ptr[f->num_entities] ? f->ptr[f->num_entities] : 1);
    if (!ids || !text || !rows || !idx) {
        rc = ncf__fail(NCF_ERR_NOMEM, "ncf_model_add_features: out of memory for %d entities", f->num_entities);
        goto done;
    }
    for (j = 0; j < f->ptr[f->num_entities]; j++) /* f's features in the model's vocabulary */
        idx[j] = ncf__find_token(x, f->vocab + f->vocab_at[f->feat[j]],
                                 (size_t)(f->vocab_at[f->feat[j] + 1] - f->vocab_at[f->feat[j]]));
    for (k = 0, j = 0; k < f->num_entities; k++) {
        ncf__ids t = ncf__model_ids(*mp, side);
        size_t len = (size_t)(f->ids_at[k + 1] - f->ids_at[k]);
        if (ncf__ids_find(&t, f->ids + f->ids_at[k], len) >= 0) continue; /* known: trained, or added before */
        ids[c] = text + j, memcpy(ids[c], f->ids + f->ids_at[k], len), ids[c][len] = 0, j += (int64_t)len + 1;
        ncf__feature_mean(x, R, idx + f->ptr[k], f->weight + f->ptr[k], (int)(f->ptr[k + 1] - f->ptr[k]),
                          rows + (size_t)c * R);
        c++;
    }
    rc = c ? ncf_model_add(mp, side, (const char *const *)ids, rows, c) : NCF_OK;
    if (rc == NCF_OK && added) *added = c;
done:
    NCF_FREE(ids), NCF_FREE(text), NCF_FREE(rows), NCF_FREE(idx);
    return rc;
}

NCFDEF int ncf_feature_popularity(const ncf_features *f, const ncf_dataset *d, float *scores)
{
    double *sum = NULL, *cnt = NULL, mean = 0;
    float *pop = NULL;
    int32_t *of = NULL;
    int i, k, trained = 0, rc;
    int64_t j;
    if (!d || !d->user_ptr || !scores) return ncf__fail(NCF_ERR_ARG, "ncf_feature_popularity: need data and scores");
    if ((rc = ncf__features_valid(f, "ncf_feature_popularity")) != NCF_OK) return rc;
    sum = NCF__ZNEW(double, f->num_features ? f->num_features : 1),
    cnt = NCF__ZNEW(double, f->num_features ? f->num_features : 1);
    pop = NCF__ZNEW(float, d->num_items ? d->num_items : 1), of = NCF__NEW(int32_t, d->num_items ? d->num_items : 1);
    if (!sum || !cnt || !pop || !of) {
        rc = ncf__fail(NCF_ERR_NOMEM, "ncf_feature_popularity: out of memory");
        goto done;
    }
    for (j = 0; j < d->num_train; j++) pop[d->items[j]] += 1.0f;
    for (i = 0; i < d->num_items; i++) of[i] = -1, mean += pop[i], trained += pop[i] > 0;
    mean = trained ? mean / trained : 0;
    for (k = 0; k < f->num_entities; k++) {
        ncf__ids t = ncf__dataset_ids(d, 1);
        int it = ncf__ids_find(&t, f->ids + f->ids_at[k], (size_t)(f->ids_at[k + 1] - f->ids_at[k]));
        if (it < 0) continue;
        of[it] = k;
        for (j = f->ptr[k]; pop[it] > 0 && j < f->ptr[k + 1]; j++)
            sum[f->feat[j]] += f->weight[j] * pop[it], cnt[f->feat[j]] += f->weight[j];
    }
    for (i = 0; i < d->num_items; i++) {
        double s = 0, w = 0;
        for (j = of[i] < 0 ? 0 : f->ptr[of[i]]; of[i] >= 0 && j < f->ptr[of[i] + 1]; j++)
            if (cnt[f->feat[j]] > 0) s += f->weight[j] * sum[f->feat[j]] / cnt[f->feat[j]], w += f->weight[j];
        scores[i] = pop[i] > 0 ? pop[i] : (float)(w > 0 ? s / w : mean);
    }
done:
    NCF_FREE(sum), NCF_FREE(cnt), NCF_FREE(pop), NCF_FREE(of);
    return rc;
}

/* A grown model (ncf_model_grow, ncf_model_add) keeps the vocabulary and embeddings of src:
   it serves new entities from them; training them again needs ncf_model_set_features. */
static int ncf__features_carry(ncf_model *dst, const ncf_model *src)
{
    int s, R = ncf_row_size(src), rc;
    if (!ncf__has_features(src)) return NCF_OK;
    if (!(dst->scratch->feat = NCF__ZNEW(struct ncf__features, 1))) return ncf__fail(NCF_ERR_NOMEM, "out of memory");
    for (s = 0; s < 2; s++) {
        const ncf__fside *a = ncf__fside_of(src, s);
        ncf__fside *b = &dst->scratch->feat->side[s];
        if (!a) continue;
        if ((rc = ncf__fside_alloc(b, a->n, a->at[a->n], R)) != NCF_OK) return rc;
        memcpy(b->text, a->text, (size_t)a->at[a->n]), memcpy(b->at, a->at, sizeof(int64_t) * ((size_t)a->n + 1));
        memcpy(b->emb, a->emb, sizeof(float) * (size_t)a->n * R);
        b->no_id = a->no_id, b->scale = a->scale;
    }
    return NCF_OK;
}

/* An average of models (ncf_model_average) serves new entities as its parts would, averaged:
   each feature's embedding is theirs side by side, times row_scale (the rows') and their own
   scales, and MF's bias slot their mean. All have model 0's vocabulary or none. */
static int ncf__features_average(ncf_model *m, ncf_model *const *models, int n, float row_scale)
{
    int s, k, j, d, R = ncf_row_size(m), rc;
    for (s = 0; s < 2; s++) {
        const ncf__fside *a = ncf__fside_of(models[0], s);
        ncf__fside *b;
        for (k = 1; k < n; k++) {
            const ncf__fside *x = ncf__fside_of(models[k], s);
            if (!a != !x ||
                (a &&
                 (x->n != a->n || x->at[x->n] != a->at[a->n] || memcmp(x->text, a->text, (size_t)a->at[a->n]) != 0)))
                return ncf__fail(NCF_ERR_ARG, "ncf_model_average: model %d's %s features are not model 0's", k,
                                 s ? "item" : "user");
        }
        if (!a) continue;
        if (!m->scratch->feat && !(m->scratch->feat = NCF__ZNEW(struct ncf__features, 1)))
            return ncf__fail(NCF_ERR_NOMEM, "out of memory");
        b = &m->scratch->feat->side[s];
        if ((rc = ncf__fside_alloc(b, a->n, a->at[a->n], R)) != NCF_OK) return rc;
        memcpy(b->text, a->text, (size_t)a->at[a->n]), memcpy(b->at, a->at, sizeof(int64_t) * ((size_t)a->n + 1));
        b->no_id = a->no_id, b->scale = 1.0f;
        for (j = 0; j < a->n; j++) {
            float *dst = b->emb + (size_t)j * R;
            for (k = 0; k < n; k++) {
                const ncf__fside *x = ncf__fside_of(models[k], s);
                int F = models[k]->cfg.mf_dim, Rk = ncf_row_size(models[k]);
                const float *src = x->emb + (size_t)j * Rk;
                for (d = 0; d < F; d++) *dst++ = src[d] * x->scale * row_scale;
                if (m->user_bias) b->emb[(size_t)j * R + R - 1] += src[Rk - 1] * x->scale / (float)n;
            }
        }
    }
    return NCF_OK;
}

/* What ncf_fit keeps of the best epoch besides the model's parameters: every side's feature
   and id embeddings and their moments, n floats in blocks (NULL: none). */
static size_t ncf__features_state(const ncf_model *m, float **blocks, size_t *sizes)
{
    size_t total = 0;
    int s, k, R = ncf_row_size(m);
    for (s = 0; s < 2; s++) {
        ncf__fside *f = ncf__fside_of(m, s);
        float *b[5];
        size_t n[5];
        b[0] = f ? f->emb : NULL, n[0] = f ? (size_t)f->n * R : 0;
        b[1] = f ? f->id : NULL, n[1] = f && f->id ? (size_t)f->ents * R : 0;
        b[2] = f ? f->m_emb : NULL, b[3] = f ? f->v_emb : NULL, n[2] = n[3] = f && f->m_emb ? n[0] : 0;
        b[4] = f ? f->m_id : NULL, n[4] = f && f->m_id ? n[1] : 0;
        for (k = 0; k < 5; k++) blocks[s * 6 + k] = b[k], sizes[s * 6 + k] = n[k], total += n[k];
        blocks[s * 6 + 5] = f ? f->v_id : NULL, sizes[s * 6 + 5] = n[4], total += n[4];
    }
    return total;
}

/* ---- >>features-save: the model file's features section ---------------------------------------- */
/* After the moments, in a version 5 file with the features flag: its bytes after this count (a
   u64), then for users and items: the vocabulary's size n and whether the side is features-only
   (u32 each), its text's bytes (u64), the features' scale (f32) and 4 zero bytes, and when n > 0 the n + 1 offsets (u64), the text, the
   n x ncf_row_size embeddings (f32), each part 8-aligned. */

static uint64_t ncf__pad8(uint64_t x) { return (x + 7) / 8 * 8; }

static uint64_t ncf__features_bytes(const ncf_model *m)
{
    uint64_t b = 8;
    int s, R = ncf_row_size(m);
    if (!ncf__has_features(m)) return 0;
    for (s = 0; s < 2; s++) {
        const ncf__fside *f = ncf__fside_of(m, s);
        b += 24;
        if (f && f->n)
            b += 8 * ((uint64_t)f->n + 1) + ncf__pad8((uint64_t)f->at[f->n]) + ncf__pad8(4 * (uint64_t)f->n * R);
    }
    return b;
}

/* The section into p (ncf__features_bytes of it, zeroed: the padding stays 0). */
static void ncf__features_write(const ncf_model *m, uint8_t *p)
{
    ncf__writer w;
    uint64_t k;
    int s, R = ncf_row_size(m);
    w.p = p, w.at = 0;
    ncf__put_u64(&w, ncf__features_bytes(m) - 8);
    for (s = 0; s < 2; s++) {
        const ncf__fside *f = ncf__fside_of(m, s);
        int n = f ? f->n : 0;
        ncf__put_u32(&w, (uint32_t)n), ncf__put_u32(&w, f ? (uint32_t)f->no_id : 0);
        ncf__put_u64(&w, n ? (uint64_t)f->at[n] : 0), ncf__put_f32(&w, n ? f->scale : 0.0f), w.at += 4;
        if (!n) continue;
        for (k = 0; k <= (uint64_t)n; k++) ncf__put_u64(&w, (uint64_t)f->at[k]);
        memcpy(p + w.at, f->text, (size_t)f->at[n]), w.at += (size_t)ncf__pad8((uint64_t)f->at[n]);
        for (k = 0; k < (uint64_t)n * R; k++) ncf__put_f32(&w, f->emb[k]);
        w.at = (size_t)ncf__pad8(w.at);
    }
}

/* The section at p (bytes long, its count included) read into m, every size and token checked:
   the vocabulary strictly ascending, tokens of 1 to NCF_MAX_ID_BYTES, embeddings finite. */
static int ncf__features_read(ncf_model *m, const uint8_t *p, uint64_t bytes)
{
    ncf__reader r;
    uint64_t k;
    int s, R = ncf_row_size(m), rc;
    r.p = p, r.at = 8, r.n = (size_t)bytes;
    if (!(m->scratch->feat = NCF__ZNEW(struct ncf__features, 1))) return ncf__fail(NCF_ERR_NOMEM, "out of memory");
    for (s = 0; s < 2; s++) {
        uint64_t text;
        uint32_t n, no_id, pad;
        float scale;
        ncf__fside *f = &m->scratch->feat->side[s];
        if (!ncf__get_u32(&r, &n) || !ncf__get_u32(&r, &no_id) || !ncf__get_u64(&r, &text) ||
            !ncf__get_f32(&r, &scale) || !ncf__get_u32(&r, &pad))
            return ncf__fail(NCF_ERR_PARSE, "model features section is truncated");
        if (no_id > 1 || n > bytes / 8 || text > bytes || pad ||
            (n && r.at + 8 * ((uint64_t)n + 1) + ncf__pad8(text) + ncf__pad8(4 * (uint64_t)n * R) > bytes) ||
            (!n && text) || (n && !(scale >= NCF__MIN_FEATURE_SCALE && scale <= NCF__MAX_FEATURE_SCALE)))
            return ncf__fail(NCF_ERR_PARSE, "model features section has out-of-range sizes or scale");
        if (!n) continue;
        if ((rc = ncf__fside_alloc(f, (int)n, (int64_t)text, R)) != NCF_OK) return rc;
        f->no_id = (int)no_id, f->scale = scale;
        for (k = 0; k <= n; k++) {
            uint64_t o;
            ncf__get_u64(&r, &o); /* (in the bounds checked above) */
            f->at[k] = (int64_t)o;
            if ((k == 0 && o) ||
                (k && (o <= (uint64_t)f->at[k - 1] || o - (uint64_t)f->at[k - 1] > NCF_MAX_ID_BYTES)) || o > text ||
                (k == n && o != text))
                return ncf__fail(NCF_ERR_PARSE, "model features section: token %d's offset is out of order", (int)k);
        }
        memcpy(f->text, p + r.at, (size_t)text), r.at += (size_t)ncf__pad8(text);
        for (k = 1; k < n; k++)
            if (ncf__cmp_text(f->text + f->at[k - 1], (size_t)(f->at[k] - f->at[k - 1]), f->text + f->at[k],
                              (size_t)(f->at[k + 1] - f->at[k])) >= 0)
                return ncf__fail(NCF_ERR_PARSE, "model features section: the tokens do not ascend at %d", (int)k);
        for (k = 0; k < (uint64_t)n * R; k++) {
            ncf__get_f32(&r, &f->emb[k]);
            if (!(f->emb[k] >= -NCF__MAX_PARAM && f->emb[k] <= NCF__MAX_PARAM))
                return ncf__fail(NCF_ERR_PARSE, "model features section: an embedding is not finite or is implausible");
        }
        r.at = (size_t)ncf__pad8(r.at);
    }
    if (r.at != bytes)
        return ncf__fail(NCF_ERR_PARSE, "model features section is %llu bytes, its sizes say %llu",
                         (unsigned long long)bytes, (unsigned long long)r.at);
    return NCF_OK;
}

#endif /* NCF_INFERENCE_ONLY */
