#if defined(NCF_MPI) && !defined(NCF_INFERENCE_ONLY)
/* Shards, gradient folds over ranks, collective calls. */
/* Data parallel, users sharded: the users fall in NCF_MPI_GROUPS fixed groups (cut where the
   positives cross 1/G of them), and rank r holds groups [G*r/P, G*(r+1)/P): their users'
   positives, and the only up-to-date copy of their embedding rows. A step:
   1. each rank draws the batch's examples of its users and orders them by group (by position
      within one), and runs them forward and backward;
   2. the dense gradient of each group is summed from zero over its examples in order, and the
      groups are folded as a fixed binary tree, ((g_0 + g_1) + (g_2 + g_3)) + ..., a node's sum
      kept by the rank of its first group, a right child on another rank sent to it (log2 G
      levels, at most one message in and one out a level), and rank 0's root broadcast; the
      item rows the same, as lists of (item, sum) records of the items the batch touched; the
      loss by group, in group order. Since the groups and the tree do not move with P, neither
      does the model;
   3. every rank applies the same update to the dense layers and the items; each user's row,
      whose examples are all on its rank, is summed and updated there, and travels only when
      ncf_mpi_sync (or the end of ncf_mpi_train_epoch) copies every rank's users to all. A model
      shard holds its rank's users' rows only, indexed from its first user (scratch->mpi.user0): the
      batch's users become its rows in step 1, evaluation subtracts user0, and the rows never
      travel except to rank 0, in pieces, as ncf_mpi_save writes the file. */

/* A fold's messages are tagged by kind and tree level (the levels, log2 G, stay under 100). */
#define NCF__MPI_TAG_DENSE 7300
#define NCF__MPI_TAG_ROWS 7400

/* The status agreed over comm, every rank with the message of the first rank that failed it. */
static int ncf__mpi_agree(MPI_Comm comm, int rc)
{
    int all = rc, rank = 0, mine, who = 0;
    if (MPI_Comm_rank(comm, &rank) != MPI_SUCCESS || MPI_Allreduce(&rc, &all, 1, MPI_INT, MPI_MIN, comm) != MPI_SUCCESS)
        return ncf__fail(NCF_ERR_IO, "MPI_Allreduce failed while the ranks compared their status");
    if (all == NCF_OK) return NCF_OK;
    mine = rc == all ? rank : INT32_MAX;
    if (MPI_Allreduce(&mine, &who, 1, MPI_INT, MPI_MIN, comm) != MPI_SUCCESS ||
        MPI_Bcast(ncf__errbuf, (int)sizeof ncf__errbuf, MPI_CHAR, who, comm) != MPI_SUCCESS)
        return ncf__fail(NCF_ERR_IO, "MPI failed while the ranks shared an error");
    return all;
}

/* The first user of group g of G: where the whole data's positives cross g/G of them. */
static int ncf__group_first_user(const ncf_dataset *d, int g, int G)
{
    int64_t target = d->num_train / G * g + d->num_train % G * g / G; /* num_train*g/G, no overflow */
    int lo;
    if (g <= 0) return 0;
    if (g >= G) return d->num_users;
    NCF__FIRST_NOT(int, lo, d->num_users, d->user_ptr[mid] < target); /* the first u with user_ptr[u] >= target */
    return lo;
}

/* This rank's users [*lo, *hi) for comm's ranks: those ncf_mpi_shard keeps of whole data, or a
   shard's (which must be this rank's for comm). */
static int ncf__my_users(const ncf_dataset *d, MPI_Comm comm, int *lo, int *hi, const char *what)
{
    int rank = 0, P = 1, G = NCF_MPI_GROUPS, g0, g1;
    if (MPI_Comm_rank(comm, &rank) != MPI_SUCCESS || MPI_Comm_size(comm, &P) != MPI_SUCCESS)
        return ncf__fail(NCF_ERR_ARG, "%s: not a valid communicator", what);
    if (P > G)
        return ncf__fail(NCF_ERR_ARG,
                         "%s: %d ranks, but the users fall in %d groups (build with a larger NCF_MPI_GROUPS)", what, P,
                         G);
    g0 = (int)((int64_t)G * rank / P), g1 = (int)((int64_t)G * (rank + 1) / P);
    if (!ncf__is_shard(d)) {
        *lo = ncf__group_first_user(d, g0, G), *hi = ncf__group_first_user(d, g1, G);
        return NCF_OK;
    }
    *lo = d->shard.user_lo, *hi = d->shard.user_hi;
    if (!d->shard.groups || *lo != d->shard.groups[g0] || *hi != d->shard.groups[g1])
        return ncf__fail(NCF_ERR_ARG, "%s: the data is not this rank's shard for %d ranks", what, P);
    return NCF_OK;
}

/* A copy of rows [lo, hi) of a [users][n] table, or NULL (also for none to copy). */
static int32_t *ncf__rows_copy(const int32_t *t, int n, int lo, int hi, int *failed)
{
    int32_t *c;
    if (!t || n <= 0) return NULL;
    c = NCF__NEW(int32_t, (size_t)(hi - lo) * n + 1);
    if (c) memcpy(c, t + (size_t)lo * n, sizeof(int32_t) * (size_t)(hi - lo) * n);
    else *failed = 1;
    return c;
}

NCFDEF int ncf_mpi_shard(ncf_dataset *ds, MPI_Comm comm)
{
    int lo = 0, hi = 0, u, g, failed = 0, rc = NCF_OK, *groups = NULL;
    int64_t plo, phi, n;
    int32_t *items = NULL, *tu = NULL, *en = NULL, *vn = NULL;
    float *wt = NULL;
    if (!ds || !ds->user_ptr) rc = ncf__fail(NCF_ERR_ARG, "ncf_mpi_shard: need a loaded dataset");
    else if (ncf__is_shard(ds)) rc = ncf__fail(NCF_ERR_ARG, "ncf_mpi_shard: the dataset is a shard already");
    else if (ds->num_train <= 0) rc = ncf__fail(NCF_ERR_DATA, "ncf_mpi_shard: the dataset has no training positives");
    else if (ds->test_ptr)
        rc = ncf__fail(NCF_ERR_ARG, "ncf_mpi_shard: a split of many items per user is evaluated on one process");
    else rc = ncf__my_users(ds, comm, &lo, &hi, "ncf_mpi_shard");
    if ((rc = ncf__mpi_agree(comm, rc)) != NCF_OK) return rc;
    plo = ds->user_ptr[lo], phi = ds->user_ptr[hi], n = phi - plo;
    items = NCF__NEW(int32_t, n + 1), tu = NCF__NEW(int32_t, n + 1), groups = NCF__NEW(int, NCF_MPI_GROUPS + 1);
    if (ds->weight && !(wt = NCF__NEW(float, n + 1))) failed = 1;
    en = ncf__rows_copy(ds->eval_neg, ds->num_eval_neg, lo, hi, &failed);
    vn = ncf__rows_copy(ds->val_neg, ds->num_val_neg, lo, hi, &failed);
    if (!items || !tu || !groups || failed)
        rc = ncf__fail(NCF_ERR_NOMEM, "ncf_mpi_shard: out of memory for %lld positives", (long long)n);
    if ((rc = ncf__mpi_agree(comm, rc)) != NCF_OK) {
        NCF_FREE(items);
        NCF_FREE(tu);
        NCF_FREE(en);
        NCF_FREE(vn);
        NCF_FREE(groups);
        NCF_FREE(wt);
        return rc;
    }
    for (g = 0; g <= NCF_MPI_GROUPS; g++) groups[g] = ncf__group_first_user(ds, g, NCF_MPI_GROUPS);
    memcpy(items, ds->items + plo, sizeof(int32_t) * (size_t)n);
    memcpy(tu, ds->train_user + plo, sizeof(int32_t) * (size_t)n);
    if (wt) memcpy(wt, ds->weight + plo, sizeof(float) * (size_t)n);
    NCF_FREE(ds->items);
    NCF_FREE(ds->train_user);
    NCF_FREE(ds->eval_neg);
    NCF_FREE(ds->val_neg);
    NCF_FREE(ds->weight);
    ds->items = items, ds->train_user = tu, ds->eval_neg = en, ds->val_neg = vn, ds->shard.groups = groups,
    ds->weight = wt;
    for (u = 0; u <= ds->num_users; u++) /* the other users look empty */
        ds->user_ptr[u] = (ds->user_ptr[u] < plo ? plo : ds->user_ptr[u] > phi ? phi : ds->user_ptr[u]) - plo;
    for (u = 0; u < ds->num_users; u++)
        if (u < lo || u >= hi) {
            ds->test_item[u] = -1;
            if (ds->val_item) ds->val_item[u] = -1;
        }
    ds->shard.user_lo = lo, ds->shard.user_hi = hi;
    ds->shard.train_lo = plo, ds->shard.total_train = ds->num_train, ds->num_train = n;
    return NCF_OK;
}

/* ---- the distributed loader: each rank parses a byte range of the log ---- */
/* Every rank reads the lines between two line ends of the file; each line then goes to the
   rank that gathers all of its user's lines (contiguous users, about 1/P of the lines each),
   where the one-process build runs on them, the filters' counts summed over the ranks. The
   users then move to the ranks ncf_mpi_shard would give them. Ids are numbered in ascending
   order from the union of every rank's distinct ids, as one process numbers them. */

#define NCF__MPI_IO_MAX (1 << 30) /* bytes or elements in one MPI call */

/* ncf__build_opts.reduce over the communicator at ctx, in pieces MPI counts can hold. */
static int ncf__mpi_reduce(void *ctx, void *v, int64_t n, int op)
{
    MPI_Comm comm = *(MPI_Comm *)ctx;
    MPI_Datatype t = op == NCF__SUM_I64 ? MPI_INT64_T : MPI_UINT8_T;
    MPI_Op how = op == NCF__SUM_I64 ? MPI_SUM : op == NCF__ALL_U8 ? MPI_MIN : MPI_MAX;
    size_t size = op == NCF__SUM_I64 ? 8 : 1;
    int64_t at;
    if (op == NCF__AGREE) return ncf__mpi_agree(comm, *(int *)v);
    for (at = 0; at < n; at += NCF__MPI_IO_MAX) {
        int k = n - at < NCF__MPI_IO_MAX ? (int)(n - at) : NCF__MPI_IO_MAX;
        if (MPI_Allreduce(MPI_IN_PLACE, (char *)v + (size_t)at * size, k, t, how, comm) != MPI_SUCCESS)
            return ncf__fail(NCF_ERR_IO, "MPI_Allreduce failed summing the filters' counts");
    }
    return NCF_OK;
}

static int ncf__mpi_read_at(MPI_File f, int64_t at, char *buf, int64_t n)
{
    while (n > 0) {
        int k = n > NCF__MPI_IO_MAX ? NCF__MPI_IO_MAX : (int)n, got = 0;
        MPI_Status st;
        if (MPI_File_read_at(f, (MPI_Offset)at, buf, k, MPI_CHAR, &st) != MPI_SUCCESS ||
            MPI_Get_count(&st, MPI_CHAR, &got) != MPI_SUCCESS || got != k)
            return 0;
        at += k, buf += k, n -= k;
    }
    return 1;
}

/* The first line start at or after s > 0: past the line end (LF, CRLF, CR) at or after s - 1. */
static int ncf__mpi_line_start(MPI_File f, int64_t size, int64_t s, int64_t *start)
{
    char buf[4097];
    int64_t at = s - 1, n, i;
    for (; at < size; at += n) {
        n = size - at < 4096 ? size - at : 4096;
        if (!ncf__mpi_read_at(f, at, buf, n + (at + n < size))) return 0;
        for (i = 0; i < n; i++)
            if (buf[i] == '\n' || buf[i] == '\r') {
                *start = at + i + 1 + (buf[i] == '\r' && at + i + 1 < size && buf[i + 1] == '\n');
                return 1;
            }
    }
    *start = size;
    return 1;
}

/* Whether [p, end) holds the records the dialect is judged on, whatever the separator: each
   candidate's first NCF__SNIFF records end before end. */
static int ncf__sniff_enough(const char *p, const char *end, const char *given)
{
    ncf__span f[NCF__MAX_FIELDS];
    int c, k, nf;
    for (c = 0; c < 7; c++) {
        ncf__cursor C;
        const char *sep = c < 6 ? ncf__seps[c] : given;
        if (!sep[0]) continue;
        C.p = p, C.end = end, C.line = 0, C.next = 1;
        for (k = 0; k < NCF__SNIFF && (nf = ncf__record(&C, sep, f, NCF__MAX_FIELDS)) != -1;)
            if (nf < 0) return 0;
            else k += nf > 0;
        if (C.p >= end) return 0;
    }
    return 1;
}

/* The dialect, as ncf__parse_log finds it: rank 0 reads the file's first lines (doubling what it
   reads until they hold the records looked at) and tells the others. */
static int ncf__mpi_sniff(MPI_File f, int64_t size, const char *name, const ncf_dataset_opts *o, ncf__dialect *D,
                          ncf_load_report *rep, MPI_Comm comm)
{
    int rank, rc = ncf__dialect_of(name, o, D);
    MPI_Comm_rank(comm, &rank);
    if (rc == NCF_OK && o->events) /* (each rank would meet the kinds in its own order) */
        rc = ncf__fail(NCF_ERR_ARG, "%s: an events list is read by ncf_load_dataset, not ncf_mpi_load_dataset", name);
    if (rc == NCF_OK && rank == 0) {
        int64_t len = size < 65536 ? size : 65536;
        char *buf = NULL;
        for (;;) {
            const char *p;
            if (!(buf = NCF__NEW(char, len + 1))) rc = ncf__fail(NCF_ERR_NOMEM, "%s: out of memory", name);
            else if (!ncf__mpi_read_at(f, 0, buf, len)) rc = ncf__fail(NCF_ERR_IO, "%s: cannot read", name);
            if (rc != NCF_OK) break;
            p = buf + ncf__bom_bytes(buf, (size_t)len);
            if (len == size || ncf__sniff_enough(p, buf + len, D->sep)) {
                rc = ncf__sniff(name, p, buf + len, o, D, rep);
                break;
            }
            NCF_FREE(buf);
            len = 2 * len < size ? 2 * len : size;
        }
        NCF_FREE(buf);
        if (rc == NCF_OK && o->min_rating > -HUGE_VALF && D->col[2] < 0)
            rc = ncf__fail(NCF_ERR_ARG, "%s: min_rating needs a rating column, and the file has none", name);
        if (rc == NCF_OK && o->weighting != NCF_WEIGHT_NONE && D->col[NCF_COL_STRENGTH] < 0)
            rc = ncf__fail(NCF_ERR_ARG, "%s: a weighting needs a strength column, and the file has none", name);
    }
    if ((rc = ncf__mpi_agree(comm, rc)) != NCF_OK) return rc;
    if (MPI_Bcast(D, (int)sizeof *D, MPI_BYTE, 0, comm) != MPI_SUCCESS ||
        MPI_Bcast(rep, (int)sizeof *rep, MPI_BYTE, 0, comm) != MPI_SUCCESS)
        return ncf__fail(NCF_ERR_IO, "%s: MPI_Bcast of the dialect failed", name);
    return NCF_OK;
}

/* This rank's lines of the file: its byte range [*at, *at + *len) cut at line ends, read into
   *buf, and the number of the range's first line. */
static int ncf__mpi_read_range(MPI_File f, int64_t size, const char *name, MPI_Comm comm, char **buf, int64_t *len,
                               int64_t *line0)
{
    int rank, P, rc = NCF_OK;
    int64_t start = 0, *starts = NULL, ends = 0, before = 0;
    MPI_Comm_rank(comm, &rank), MPI_Comm_size(comm, &P);
    *buf = NULL;
    if (rank > 0) {
        int64_t s = (int64_t)((double)size * rank / P); /* (a cut is any byte: only its line end matters) */
        if (!ncf__mpi_line_start(f, size, s > 0 ? s : 1, &start)) rc = ncf__fail(NCF_ERR_IO, "%s: cannot read", name);
    }
    if (!(starts = NCF__NEW(int64_t, (size_t)P + 1))) rc = ncf__fail(NCF_ERR_NOMEM, "%s: out of memory", name);
    if ((rc = ncf__mpi_agree(comm, rc)) != NCF_OK) {
        NCF_FREE(starts);
        return rc;
    }
    if (MPI_Allgather(&start, 1, MPI_INT64_T, starts, 1, MPI_INT64_T, comm) != MPI_SUCCESS)
        rc = ncf__fail(NCF_ERR_IO, "%s: MPI_Allgather failed", name);
    starts[P] = size;
    *len = rc == NCF_OK ? starts[rank + 1] - start : 0;
    NCF_FREE(starts);
    if (rc == NCF_OK && !(*buf = NCF__NEW(char, *len + 1)))
        rc = ncf__fail(NCF_ERR_NOMEM, "%s: out of memory for %lld bytes of it", name, (long long)*len);
    if (rc == NCF_OK && !ncf__mpi_read_at(f, start, *buf, *len)) rc = ncf__fail(NCF_ERR_IO, "%s: cannot read", name);
    if (rc == NCF_OK) ends = ncf__max_records(*buf, *buf + *len) - 1;
    if (MPI_Exscan(&ends, &before, 1, MPI_INT64_T, MPI_SUM, comm) != MPI_SUCCESS)
        rc = ncf__fail(NCF_ERR_IO, "%s: MPI_Exscan failed", name);
    *line0 = 1 + (rank > 0 ? before : 0);
    if ((rc = ncf__mpi_agree(comm, rc)) != NCF_OK) NCF__DROP(*buf);
    return rc;
}

/* This rank's records: its lines parsed in the shared dialect (a column any rank reads as text
   is text on every rank), their record numbers the file's when it has no timestamps. */
static int ncf__mpi_parse(const char *name, const char *buf, int64_t len, int64_t line0, const ncf_dataset_opts *o,
                          ncf__parsed *R, MPI_Comm comm)
{
    const char *p = buf + (line0 == 1 ? ncf__bom_bytes(buf, (size_t)len) : 0), *end = buf + len;
    int text[2], rc, c;
    int64_t j, before = 0;
    rc = ncf__triples_reserve(&R->tr, ncf__max_records(p, end), o->min_rating > -HUGE_VALF,
                              o->weighting != NCF_WEIGHT_NONE);
    if (rc == NCF_OK) rc = ncf__read_records(name, p, end, &R->D, o->min_rating, &R->tr, R->in, line0);
    if ((rc = ncf__mpi_agree(comm, rc)) != NCF_OK) return rc;
    if (MPI_Allreduce(R->D.text, text, 2, MPI_INT, MPI_MAX, comm) != MPI_SUCCESS)
        rc = ncf__fail(NCF_ERR_IO, "%s: MPI_Allreduce failed", name);
    if (rc == NCF_OK && (text[0] != R->D.text[0] || text[1] != R->D.text[1])) {
        R->D.text[0] = text[0], R->D.text[1] = text[1];
        rc = ncf__read_records(name, p, end, &R->D, o->min_rating, &R->tr, R->in, line0);
    }
    if (MPI_Exscan(&R->tr.n, &before, 1, MPI_INT64_T, MPI_SUM, comm) != MPI_SUCCESS)
        rc = ncf__fail(NCF_ERR_IO, "%s: MPI_Exscan failed", name);
    if (line0 == 1) before = 0; /* (rank 0's is undefined) */
    if (R->D.col[3] < 0)
        for (j = 0; j < R->tr.n; j++) R->tr.t[j] += before;
    for (c = 0; c < 2; c++) R->rep.blank_edged_ids[c] = R->D.edged[c];
    R->rep.nonpositive_ratings = R->D.nonpositive;
    if (MPI_Allreduce(MPI_IN_PLACE, R->rep.blank_edged_ids, 2, MPI_INT64_T, MPI_SUM, comm) != MPI_SUCCESS ||
        MPI_Allreduce(MPI_IN_PLACE, &R->rep.nonpositive_ratings, 1, MPI_INT64_T, MPI_SUM, comm) != MPI_SUCCESS)
        rc = ncf__fail(NCF_ERR_IO, "%s: MPI_Allreduce failed", name);
    return ncf__mpi_agree(comm, rc);
}

/* Gathers every rank's n values of size bytes into *all (allocated; *total of them), when
   every rank's rc is NCF_OK. */
static int ncf__mpi_gather_all(MPI_Comm comm, int rc, const void *v, int64_t n, size_t size, void **all, int64_t *total)
{
    int P, q, mine = n > INT32_MAX / (int)size ? -1 : (int)(n * (int64_t)size), *cnt, *at;
    int64_t sum = 0;
    MPI_Comm_size(comm, &P);
    *all = NULL, *total = 0;
    cnt = NCF__NEW(int, P), at = NCF__NEW(int, P);
    if (rc == NCF_OK && (!cnt || !at)) rc = ncf__fail(NCF_ERR_NOMEM, "out of memory gathering ids");
    if ((rc = ncf__mpi_agree(comm, rc)) != NCF_OK || MPI_Allgather(&mine, 1, MPI_INT, cnt, 1, MPI_INT, comm)) {
        NCF_FREE(cnt), NCF_FREE(at);
        return rc != NCF_OK ? rc : ncf__fail(NCF_ERR_IO, "MPI_Allgather failed");
    }
    for (q = 0; q < P; q++) {
        if (cnt[q] < 0 || sum + cnt[q] > INT32_MAX) rc = ncf__fail(NCF_ERR_DATA, "more than 2 GB of ids to gather");
        at[q] = (int)sum, sum += cnt[q] < 0 ? 0 : cnt[q];
    }
    if (rc == NCF_OK && !(*all = NCF_MALLOC((size_t)sum + 1)))
        rc = ncf__fail(NCF_ERR_NOMEM, "out of memory gathering %lld bytes of ids", (long long)sum);
    if ((rc = ncf__mpi_agree(comm, rc)) == NCF_OK &&
        MPI_Allgatherv(v, mine, MPI_BYTE, *all, cnt, at, MPI_BYTE, comm) != MPI_SUCCESS)
        rc = ncf__fail(NCF_ERR_IO, "MPI_Allgatherv failed");
    NCF_FREE(cnt), NCF_FREE(at);
    if (rc != NCF_OK) NCF__DROP(*all);
    *total = rc == NCF_OK ? (int64_t)(sum / (int64_t)size) : 0;
    return rc;
}

/* An integer column's ids over the ranks: *raw the union of every rank's, ascending (*count of
   them), and v[n] each turned to its place in it. */
static int ncf__mpi_int_ids(MPI_Comm comm, int64_t *v, int64_t n, int64_t **raw, int *count)
{
    int64_t *mine = NCF__NEW(int64_t, n + 1), k = 0, j;
    void *all = NULL;
    int rc = mine ? NCF_OK : ncf__fail(NCF_ERR_NOMEM, "out of memory for %lld ids", (long long)n);
    if (mine && n > 0) memcpy(mine, v, sizeof *mine * (size_t)n), k = ncf__sort_unique_i64(mine, n);
    rc = ncf__mpi_gather_all(comm, rc, mine, k, sizeof *mine, &all, &k);
    NCF_FREE(mine);
    if (rc != NCF_OK) return rc;
    k = ncf__sort_unique_i64((int64_t *)all, k);
    if (k > INT32_MAX) rc = ncf__fail(NCF_ERR_DATA, "more than 2^31 distinct ids");
    for (j = 0; rc == NCF_OK && j < n; j++) v[j] = ncf__find_id((const int64_t *)all, NULL, (int)k, v[j]);
    *raw = (int64_t *)all, *count = (int)k;
    return ncf__mpi_agree(comm, rc);
}

/* A text column's ids over the ranks: the union of every rank's, in byte order (*text, *at,
   *count of them), and v[n] (numbers in in) each turned to its place in it. */
static int ncf__mpi_text_ids(MPI_Comm comm, int64_t *v, int64_t n, const ncf__intern *in, char **text, int64_t **at,
                             int *count)
{
    char *lt = NULL, *gt = NULL;
    int64_t *lat = NULL, *lrank = NULL, *len = NULL, *glen = NULL, nb = 0, ng = 0, k, j, K = 0;
    ncf__idkey *key = NULL;
    int rc = ncf__intern_sort(in, &lt, &lat, &lrank);
    *text = NULL, *at = NULL, *count = 0;
    if (rc == NCF_OK && !(len = NCF__NEW(int64_t, in->n + 1))) rc = ncf__fail(NCF_ERR_NOMEM, "out of memory");
    for (k = 0; rc == NCF_OK && k < in->n; k++) len[k] = lat[k + 1] - lat[k];
    if ((rc = ncf__mpi_gather_all(comm, rc, len, in->n, sizeof *len, (void **)&glen, &ng)) == NCF_OK)
        rc = ncf__mpi_gather_all(comm, rc, lt, lat[in->n], 1, (void **)&gt, &nb);
    if (rc == NCF_OK && !(key = NCF__NEW(ncf__idkey, ng + 1))) rc = ncf__fail(NCF_ERR_NOMEM, "out of memory");
    if (rc == NCF_OK) {
        int64_t off = 0;
        for (k = 0; k < ng; k++) key[k].p = gt + off, key[k].len = glen[k], off += glen[k];
        ncf__sort(key, (size_t)ng, sizeof *key, ncf__cmp_idkey_text);
        for (k = 0; k < ng; k++)
            if (K == 0 || ncf__cmp_text(key[K - 1].p, (size_t)key[K - 1].len, key[k].p, (size_t)key[k].len))
                key[K++] = key[k];
        if (K > INT32_MAX) rc = ncf__fail(NCF_ERR_DATA, "more than 2^31 distinct ids");
        else if (!(*text = NCF__NEW(char, nb + 1)) || !(*at = NCF__NEW(int64_t, K + 1)))
            rc = ncf__fail(NCF_ERR_NOMEM, "out of memory for %lld text ids", (long long)K);
    }
    if (rc == NCF_OK) {
        for ((*at)[0] = 0, k = 0; k < K; k++) {
            memcpy(*text + (*at)[k], key[k].p, (size_t)key[k].len);
            (*at)[k + 1] = (*at)[k] + key[k].len;
        }
        for (k = 0; k < in->n; k++) { /* each local id's place: lrank[k] is its local one */
            const char *s = lt + lat[k];
            size_t sl = (size_t)(lat[k + 1] - lat[k]);
            int64_t lo;
            NCF__FIRST_NOT(int64_t, lo, K,
                           ncf__cmp_text(*text + (*at)[mid], (size_t)((*at)[mid + 1] - (*at)[mid]), s, sl) < 0);
            len[k] = lo;
        }
        for (j = 0; j < n; j++) v[j] = len[lrank[v[j]]];
        *count = (int)K;
    }
    NCF_FREE(lt), NCF_FREE(lat), NCF_FREE(lrank), NCF_FREE(len), NCF_FREE(glen), NCF_FREE(gt), NCF_FREE(key);
    if (rc != NCF_OK) NCF__DROP(*text), NCF__DROP(*at);
    return ncf__mpi_agree(comm, rc);
}

/* This rank's lines once routed: each array's n values, in file order, for users [lo, hi). */
typedef struct {
    int64_t n, *t;
    int32_t *u, *i;
    double *s;    /* strengths (a weighting), else NULL */
    uint8_t *pos; /* whether each is a positive (min_rating), else NULL */
} ncf__mpi_lines;

static void ncf__mpi_lines_free(ncf__mpi_lines *L)
{
    NCF_FREE(L->t), NCF_FREE(L->u), NCF_FREE(L->i), NCF_FREE(L->s), NCF_FREE(L->pos);
    memset(L, 0, sizeof *L);
}

/* One column of the lines sent to their ranks (dest[j]), as sc/sa say, into *out (rcnt/ra, nr
   values); src is freed once packed, so a column is held at most twice at once. */
static int ncf__mpi_route_column(MPI_Comm comm, void **src, size_t size, int64_t n, const uint8_t *dest, const int *sc,
                                 const int *sa, const int *rcnt, const int *ra, int64_t nr, void **out)
{
    int P, q, rc = NCF_OK, *fill;
    char *send = NULL;
    int64_t j;
    MPI_Datatype T;
    MPI_Comm_size(comm, &P);
    fill = NCF__NEW(int, P), send = (char *)NCF_MALLOC(size * (size_t)(n + 1));
    *out = NCF_MALLOC(size * (size_t)(nr + 1));
    if (!fill || !send || !*out) rc = ncf__fail(NCF_ERR_NOMEM, "out of memory for %lld lines", (long long)(n + nr));
    for (q = 0; rc == NCF_OK && q < P; q++) fill[q] = sa[q];
    for (j = 0; rc == NCF_OK && j < n; j++)
        memcpy(send + size * (size_t)fill[dest[j]]++, (char *)*src + size * (size_t)j, size);
    NCF__DROP(*src);
    if ((rc = ncf__mpi_agree(comm, rc)) == NCF_OK) {
        MPI_Type_contiguous((int)size, MPI_BYTE, &T);
        MPI_Type_commit(&T);
        if (MPI_Alltoallv(send, sc, sa, T, *out, rcnt, ra, T, comm) != MPI_SUCCESS)
            rc = ncf__fail(NCF_ERR_IO, "MPI_Alltoallv of the lines failed");
        MPI_Type_free(&T);
    }
    NCF_FREE(fill), NCF_FREE(send);
    if (rc != NCF_OK) NCF__DROP(*out);
    return rc;
}

/* Sends each of R's lines to the rank of its user (users cut in P runs of about 1/P of the
   lines each, ranks in order), R's records freed as they go: *L gets this rank's users' lines
   in file order, users [*lo, *hi). */
static int ncf__mpi_route_lines(MPI_Comm comm, ncf__parsed *R, int U0, ncf__mpi_lines *L, int *lo, int *hi)
{
    int P, rank, q, rc = NCF_OK, *cut = NULL, *sc = NULL, *sa = NULL, *rcnt = NULL, *ra = NULL, u;
    int64_t *cnt = NCF__ZNEW(int64_t, (size_t)U0 + 1), j, total = 0, acc = 0, nr = 0, n = R->tr.n;
    uint8_t *dest = NULL;
    int32_t *v32[2] = {NULL, NULL};
    MPI_Comm_size(comm, &P), MPI_Comm_rank(comm, &rank);
    memset(L, 0, sizeof *L);
    cut = NCF__NEW(int, P + 1), sc = NCF__ZNEW(int, P), sa = NCF__NEW(int, P), rcnt = NCF__NEW(int, P);
    ra = NCF__NEW(int, P), dest = NCF__NEW(uint8_t, n + 1);
    v32[0] = NCF__NEW(int32_t, n + 1), v32[1] = NCF__NEW(int32_t, n + 1);
    if (!cnt || !cut || !sc || !sa || !rcnt || !ra || !dest || !v32[0] || !v32[1])
        rc = ncf__fail(NCF_ERR_NOMEM, "out of memory for %lld lines", (long long)n);
    for (j = 0; rc == NCF_OK && j < n; j++) cnt[R->tr.u[j]]++;
    if ((rc = ncf__mpi_agree(comm, rc)) == NCF_OK) rc = ncf__mpi_reduce(&comm, cnt, U0, NCF__SUM_I64);
    if (rc != NCF_OK) goto done;
    for (u = 0; u < U0; u++) total += cnt[u];
    for (q = 0, u = 0; q <= P; q++) { /* run q begins at the first user whose lines start past q/P */
        while (q > 0 && q < P && u < U0 && acc + cnt[u] <= (int64_t)((double)total * q / P)) acc += cnt[u++];
        cut[q] = q == 0 ? 0 : q == P ? U0 : u;
    }
    for (j = 0; j < n; j++) {
        int d = 0;
        while (R->tr.u[j] >= cut[d + 1]) d++;
        dest[j] = (uint8_t)d, sc[d]++;
        v32[0][j] = (int32_t)R->tr.u[j], v32[1][j] = (int32_t)R->tr.i[j];
    }
    NCF__DROP(R->tr.u), NCF__DROP(R->tr.i);
    for (q = 0, sa[0] = 0; q + 1 < P; q++) sa[q + 1] = sa[q] + sc[q];
    if (MPI_Alltoall(sc, 1, MPI_INT, rcnt, 1, MPI_INT, comm) != MPI_SUCCESS)
        rc = ncf__fail(NCF_ERR_IO, "MPI_Alltoall failed");
    for (q = 0; rc == NCF_OK && q < P; q++) ra[q] = (int)nr, nr += rcnt[q];
    if (nr > INT32_MAX) rc = ncf__fail(NCF_ERR_DATA, "more than 2^31 lines for one rank: use more ranks");
    *lo = cut[rank], *hi = cut[rank + 1];
    if ((rc = ncf__mpi_agree(comm, rc)) != NCF_OK) goto done;
    rc = ncf__mpi_route_column(comm, (void **)&v32[0], 4, n, dest, sc, sa, rcnt, ra, nr, (void **)&L->u);
    if (rc == NCF_OK)
        rc = ncf__mpi_route_column(comm, (void **)&v32[1], 4, n, dest, sc, sa, rcnt, ra, nr, (void **)&L->i);
    if (rc == NCF_OK)
        rc = ncf__mpi_route_column(comm, (void **)&R->tr.t, 8, n, dest, sc, sa, rcnt, ra, nr, (void **)&L->t);
    if (rc == NCF_OK && R->tr.str)
        rc = ncf__mpi_route_column(comm, (void **)&R->tr.str, 8, n, dest, sc, sa, rcnt, ra, nr, (void **)&L->s);
    if (rc == NCF_OK && R->tr.pos)
        rc = ncf__mpi_route_column(comm, (void **)&R->tr.pos, 1, n, dest, sc, sa, rcnt, ra, nr, (void **)&L->pos);
    L->n = nr;
done:
    NCF_FREE(cnt), NCF_FREE(cut), NCF_FREE(sc), NCF_FREE(sa), NCF_FREE(rcnt), NCF_FREE(ra), NCF_FREE(dest);
    NCF_FREE(v32[0]), NCF_FREE(v32[1]);
    if (rc != NCF_OK) ncf__mpi_lines_free(L);
    return rc;
}

/* This rank's users [*lo, *hi) once the filters renumbered the users kept: those of its lines
   kept (every user kept has one), counted across the ranks in order. */
static int ncf__mpi_kept_run(const ncf__building *b, int64_t n, int *lo, int *hi, MPI_Comm comm)
{
    int64_t j, least = INT32_MAX, most = -1, mine, before = 0;
    int rank;
    MPI_Comm_rank(comm, &rank);
    for (j = 0; j < n; j++)
        if (b->du[j] >= 0) least = b->du[j] < least ? b->du[j] : least, most = b->du[j] > most ? b->du[j] : most;
    mine = most >= 0 ? most - least + 1 : 0;
    if (MPI_Exscan(&mine, &before, 1, MPI_INT64_T, MPI_SUM, comm) != MPI_SUCCESS)
        return ncf__fail(NCF_ERR_IO, "MPI_Exscan failed");
    if (rank == 0) before = 0;
    *lo = (int)before, *hi = (int)(before + mine);
    return NCF_OK;
}

/* The one-process build on this rank's lines (in, of users [*plo, *phi) as read, then as kept):
   a dataset of every user, the others empty, with eval negatives and validation for its own
   (rows from *plo). */
static int ncf__mpi_build(ncf_dataset *ds, const char *name, const ncf_dataset_opts *o, ncf__parsed *R,
                          ncf__mpi_lines *L, int64_t *raw_u, int U0, int64_t *raw_i, int I0, int *plo, int *phi,
                          MPI_Comm comm)
{
    ncf__building b;
    ncf__build_opts bo;
    ncf_load_report rep;
    int64_t n = L->n, all = 0;
    double w[2];
    int rc;
    memset(&b, 0, sizeof b), memset(&bo, 0, sizeof bo), memset(ds, 0, sizeof *ds);
    b.du = L->u, b.di = L->i, b.raw_u = raw_u, b.raw_i = raw_i, L->u = L->i = NULL; /* (the build's now) */
    bo.positive = L->pos, bo.min_ratings = o->min_ratings, bo.seed = o->seed, bo.report = &R->rep;
    bo.min_item_ratings = o->min_item_ratings, bo.kcore = o->kcore;
    bo.strength = L->s, bo.weighting = o->weighting, bo.alpha = o->alpha;
    bo.holdout = o->holdout != NCF_HOLDOUT_AUTO ? o->holdout
        : R->D.col[3] >= 0                      ? NCF_HOLDOUT_LATEST
                                                : NCF_HOLDOUT_RANDOM;
    bo.reduce = ncf__mpi_reduce, bo.ctx = &comm;
    memset(&rep, 0, sizeof rep);
    R->rep.text_ids[0] = R->D.text[0], R->rep.text_ids[1] = R->D.text[1];
    if ((rc = ncf__build_filter(&b, n, U0, I0, &bo, &rep)) == NCF_OK &&
        (rc = ncf__mpi_kept_run(&b, n, plo, phi, comm)) == NCF_OK)
        rc = ncf__mpi_agree(comm, ncf__build_rest(ds, &b, R->D.col[3] >= 0 ? L->t : NULL, n, &bo, &rep));
    if (rc != NCF_OK) rc = ncf__prefix_error(rc, name);
    ncf__mpi_lines_free(L);
    ncf__building_free(&b);
    if (rc != NCF_OK) return rc;
    /* what each rank counted of its own lines: duplicates, and the confidences' range */
    w[0] = ds->num_train ? -ds->report.weight_min : -HUGE_VAL, w[1] = ds->num_train ? ds->report.weight_max : -HUGE_VAL;
    if (MPI_Allreduce(MPI_IN_PLACE, &ds->report.duplicates, 1, MPI_INT64_T, MPI_SUM, comm) != MPI_SUCCESS ||
        MPI_Allreduce(MPI_IN_PLACE, w, 2, MPI_DOUBLE, MPI_MAX, comm) != MPI_SUCCESS ||
        MPI_Allreduce(&ds->num_train, &all, 1, MPI_INT64_T, MPI_SUM, comm) != MPI_SUCCESS)
        rc = ncf__fail(NCF_ERR_IO, "%s: MPI_Allreduce failed", name);
    if (o->weighting != NCF_WEIGHT_NONE)
        ds->report.weight_min = all ? -w[0] : 0, ds->report.weight_max = all ? w[1] : 0;
    if (rc == NCF_OK && ds->report.holdout != NCF_HOLDOUT_NONE)
        rc = ncf__eval_negatives(ds, o->eval_negatives ? o->eval_negatives : 99, o->seed, *plo, *phi);
    if ((rc = ncf__mpi_agree(comm, rc)) == NCF_OK && o->validation) {
        if (ds->report.holdout == NCF_HOLDOUT_NONE)
            rc = ncf__fail(NCF_ERR_ARG, "validation needs a hold-out (holdout none trains on everything)");
        else rc = ncf__hold_out_val(ds, ds->num_eval_neg, o->seed, *plo, *phi);
        if ((rc = ncf__mpi_agree(comm, rc)) != NCF_OK) rc = ncf__prefix_error(rc, name);
    } else if (rc != NCF_OK) rc = ncf__prefix_error(rc, name);
    if (rc != NCF_OK) ncf_dataset_free(ds);
    return rc;
}

/* Words of user u's record as it moves to its final rank: u, its positives, test and validation
   items, then its items, their weights' bits, its eval and validation negatives. */
static int64_t ncf__mpi_user_words(const ncf_dataset *d, int u)
{
    int64_t c = d->user_ptr[u + 1] - d->user_ptr[u];
    return 4 + c * (d->weight ? 2 : 1) + (d->test_item[u] >= 0 ? d->num_eval_neg : 0) +
        (d->val_item && d->val_item[u] >= 0 ? d->num_val_neg : 0);
}

/* Moves the users of d (built on this rank for users [plo, phi)) to the ranks ncf_mpi_shard
   gives them, into out: that shard of the whole data, as ncf_mpi_shard leaves it. */
static int ncf__mpi_deal_users(ncf_dataset *d, int plo, int phi, ncf_dataset *out, MPI_Comm comm)
{
    int P, rank, q, u, rc = NCF_OK, U = d->num_users, G = NCF_MPI_GROUPS, lo, hi, *groups = NULL;
    int *sc = NULL, *sa = NULL, *rcnt = NULL, *ra = NULL, ne = d->num_eval_neg, nv = d->num_val_neg;
    int64_t *whole = NCF__ZNEW(int64_t, (size_t)U + 1), words = 0, nr = 0, k, at, n, i;
    int32_t *sbuf = NULL, *rbuf = NULL;
    ncf_dataset stub;
    MPI_Comm_size(comm, &P), MPI_Comm_rank(comm, &rank);
    memset(out, 0, sizeof *out);
    sc = NCF__ZNEW(int, P), sa = NCF__NEW(int, P), rcnt = NCF__NEW(int, P), ra = NCF__NEW(int, P);
    groups = NCF__NEW(int, G + 1);
    if (!whole || !sc || !sa || !rcnt || !ra || !groups) rc = ncf__fail(NCF_ERR_NOMEM, "out of memory");
    for (u = plo; rc == NCF_OK && u < phi; u++) whole[u + 1] = d->user_ptr[u + 1] - d->user_ptr[u];
    if ((rc = ncf__mpi_agree(comm, rc)) == NCF_OK) rc = ncf__mpi_reduce(&comm, whole + 1, U, NCF__SUM_I64);
    if (rc != NCF_OK) goto done;
    for (u = 0; u < U; u++) whole[u + 1] += whole[u];
    memset(&stub, 0, sizeof stub), stub.num_users = U, stub.user_ptr = whole, stub.num_train = whole[U];
    for (q = 0; q <= G; q++) groups[q] = ncf__group_first_user(&stub, q, G);
    lo = groups[(int64_t)G * rank / P], hi = groups[(int64_t)G * (rank + 1) / P];
    for (u = plo, q = 0; u < phi; u++) { /* ranks own ascending runs of users: q only grows */
        while (u >= groups[(int64_t)G * (q + 1) / P]) q++;
        words = ncf__mpi_user_words(d, u);
        if (sc[q] + words > INT32_MAX)
            rc = ncf__fail(NCF_ERR_DATA, "more than 8 GB of users for one rank: use more ranks");
        sc[q] += (int)words;
    }
    for (q = 0, words = 0; q < P; q++) sa[q] = (int)words, words += sc[q];
    if (rc == NCF_OK && words > INT32_MAX) rc = ncf__fail(NCF_ERR_DATA, "more than 8 GB of users on one rank");
    if (rc == NCF_OK && !(sbuf = NCF__NEW(int32_t, words + 1))) rc = ncf__fail(NCF_ERR_NOMEM, "out of memory");
    for (u = plo, at = 0; rc == NCF_OK && u < phi; u++) { /* pack */
        int64_t c = d->user_ptr[u + 1] - d->user_ptr[u];
        int32_t v = d->val_item ? d->val_item[u] : -1;
        sbuf[at++] = u, sbuf[at++] = (int32_t)c, sbuf[at++] = d->test_item[u], sbuf[at++] = v;
        memcpy(sbuf + at, d->items + d->user_ptr[u], sizeof(int32_t) * (size_t)c), at += c;
        if (d->weight) memcpy(sbuf + at, d->weight + d->user_ptr[u], sizeof(float) * (size_t)c), at += c;
        if (d->test_item[u] >= 0 && ne)
            memcpy(sbuf + at, d->eval_neg + (size_t)(u - plo) * ne, sizeof(int32_t) * (size_t)ne), at += ne;
        if (v >= 0 && nv)
            memcpy(sbuf + at, d->val_neg + (size_t)(u - plo) * nv, sizeof(int32_t) * (size_t)nv), at += nv;
    }
    if ((rc = ncf__mpi_agree(comm, rc)) == NCF_OK &&
        MPI_Alltoall(sc, 1, MPI_INT, rcnt, 1, MPI_INT, comm) != MPI_SUCCESS)
        rc = ncf__fail(NCF_ERR_IO, "MPI_Alltoall failed");
    for (q = 0; rc == NCF_OK && q < P; q++) ra[q] = (int)nr, nr += rcnt[q];
    if (rc == NCF_OK && nr > INT32_MAX) rc = ncf__fail(NCF_ERR_DATA, "more than 8 GB of users for one rank");
    n = whole[hi] - whole[lo];
    out->user_ptr = NCF__NEW(int64_t, (size_t)U + 1), out->items = NCF__NEW(int32_t, n + 1);
    out->train_user = NCF__NEW(int32_t, n + 1), out->test_item = NCF__NEW(int32_t, U ? U : 1);
    if (d->weight) out->weight = NCF__NEW(float, n + 1);
    if (ne) out->eval_neg = NCF__ZNEW(int32_t, (size_t)(hi - lo) * ne + 1);
    if (d->val_item) out->val_item = NCF__NEW(int32_t, U ? U : 1);
    if (nv) out->val_neg = NCF__ZNEW(int32_t, (size_t)(hi - lo) * nv + 1);
    if (rc == NCF_OK && !(rbuf = NCF__NEW(int32_t, nr + 1))) rc = ncf__fail(NCF_ERR_NOMEM, "out of memory");
    if (rc == NCF_OK &&
        (!out->user_ptr || !out->items || !out->train_user || !out->test_item || (d->weight && !out->weight) ||
         (ne && !out->eval_neg) || (d->val_item && !out->val_item) || (nv && !out->val_neg)))
        rc = ncf__fail(NCF_ERR_NOMEM, "out of memory for %lld positives", (long long)n);
    if ((rc = ncf__mpi_agree(comm, rc)) == NCF_OK &&
        MPI_Alltoallv(sbuf, sc, sa, MPI_INT32_T, rbuf, rcnt, ra, MPI_INT32_T, comm) != MPI_SUCCESS)
        rc = ncf__fail(NCF_ERR_IO, "MPI_Alltoallv of the users failed");
    if ((rc = ncf__mpi_agree(comm, rc)) != NCF_OK) goto done;
    for (u = 0; u < U; u++) out->test_item[u] = -1;
    if (out->val_item)
        for (u = 0; u < U; u++) out->val_item[u] = -1;
    for (at = 0, k = 0; at < nr;) { /* unpack: the users arrive in order */
        int32_t c;
        u = rbuf[at], c = rbuf[at + 1], out->test_item[u] = rbuf[at + 2];
        if (out->val_item) out->val_item[u] = rbuf[at + 3];
        at += 4;
        memcpy(out->items + k, rbuf + at, sizeof(int32_t) * (size_t)c), at += c;
        if (out->weight) memcpy(out->weight + k, rbuf + at, sizeof(float) * (size_t)c), at += c;
        for (i = 0; i < c; i++) out->train_user[k + i] = u;
        k += c;
        if (out->test_item[u] >= 0 && ne)
            memcpy(out->eval_neg + (size_t)(u - lo) * ne, rbuf + at, sizeof(int32_t) * (size_t)ne), at += ne;
        if (out->val_item && out->val_item[u] >= 0 && nv)
            memcpy(out->val_neg + (size_t)(u - lo) * nv, rbuf + at, sizeof(int32_t) * (size_t)nv), at += nv;
    }
    for (u = 0; u <= U; u++) /* the other users look empty, as ncf_mpi_shard leaves them */
        out->user_ptr[u] = (whole[u] < whole[lo] ? whole[lo] : whole[u] > whole[hi] ? whole[hi] : whole[u]) - whole[lo];
    out->num_users = U, out->num_items = d->num_items, out->num_train = whole[hi] - whole[lo];
    out->num_eval_neg = ne, out->num_val_neg = nv;
    out->shard.user_lo = lo, out->shard.user_hi = hi, out->shard.train_lo = whole[lo];
    out->shard.total_train = whole[U], out->shard.groups = groups, groups = NULL;
    /* what ncf_mpi_shard keeps whole: every user's latest item and validation weight */
    if (d->recent_item && MPI_Allreduce(MPI_IN_PLACE, d->recent_item, U, MPI_INT32_T, MPI_MAX, comm) != MPI_SUCCESS)
        rc = ncf__fail(NCF_ERR_IO, "MPI_Allreduce failed");
    if (d->val_weight && MPI_Allreduce(MPI_IN_PLACE, d->val_weight, U, MPI_FLOAT, MPI_SUM, comm) != MPI_SUCCESS)
        rc = ncf__fail(NCF_ERR_IO, "MPI_Allreduce failed");
    out->recent_item = d->recent_item, d->recent_item = NULL, out->val_weight = d->val_weight, d->val_weight = NULL;
    out->raw_user = d->raw_user, d->raw_user = NULL, out->raw_item = d->raw_item, d->raw_item = NULL;
    out->report = d->report;
done:
    NCF_FREE(whole), NCF_FREE(sc), NCF_FREE(sa), NCF_FREE(rcnt), NCF_FREE(ra), NCF_FREE(groups);
    NCF_FREE(sbuf), NCF_FREE(rbuf);
    if (rc != NCF_OK) ncf_dataset_free(out);
    return rc;
}

/* The ids a column's numbers stand for in the build: integers as read, or text's places. */
static int ncf__mpi_column_ids(MPI_Comm comm, ncf__parsed *R, int c, int64_t **raw, int *count, char **text,
                               int64_t **at)
{
    int64_t *v = c ? R->tr.i : R->tr.u, k;
    int rc;
    if (!R->D.text[c]) return ncf__mpi_int_ids(comm, v, R->tr.n, raw, count);
    if ((rc = ncf__mpi_text_ids(comm, v, R->tr.n, &R->in[c], text, at, count)) != NCF_OK) return rc;
    ncf__intern_free(&R->in[c]);
    rc = (*raw = NCF__NEW(int64_t, (size_t)*count + 1)) ? NCF_OK : ncf__fail(NCF_ERR_NOMEM, "out of memory");
    for (k = 0; rc == NCF_OK && k < *count; k++) (*raw)[k] = k;
    return ncf__mpi_agree(comm, rc);
}

NCFDEF int ncf_mpi_load_dataset(ncf_dataset *ds, const char *path, const ncf_dataset_opts *opts, MPI_Comm comm)
{
    ncf_dataset_opts o = opts ? *opts : ncf_dataset_opts_default();
    MPI_File f = MPI_FILE_NULL;
    MPI_Offset size = 0;
    ncf__parsed R;
    ncf_dataset d;
    ncf__mpi_lines L;
    char prefix[4200], *buf = NULL, *text[2] = {NULL, NULL};
    int64_t len = 0, line0 = 1, *raw[2] = {NULL, NULL}, *at[2] = {NULL, NULL};
    int count[2] = {0, 0}, plo = 0, phi = 0, rc = NCF_OK, c;
    if (ds) memset(ds, 0, sizeof *ds);
    memset(&R, 0, sizeof R), memset(&d, 0, sizeof d), memset(&L, 0, sizeof L);
    if (!ds || !path) rc = ncf__fail(NCF_ERR_ARG, "ncf_mpi_load_dataset: NULL dataset or path");
    else if (strlen(path) >= sizeof prefix) rc = ncf__fail(NCF_ERR_ARG, "%s: path too long", path);
    else if (o.format == NCF_FORMAT_NCF ||
             (o.format == NCF_FORMAT_AUTO &&
              (ncf__split_prefix(path, ncf__split_suffix, prefix, sizeof prefix) ||
               ncf__split_prefix(path, ncf__saved_suffix, prefix, sizeof prefix))))
        rc = ncf__fail(NCF_ERR_ARG,
                       "%s: a split in files is read whole (ncf_load_dataset, then ncf_mpi_shard); "
                       "ncf_mpi_load_dataset reads one log",
                       path);
    else if ((int)o.format < NCF_FORMAT_AUTO || (int)o.format > NCF_FORMAT_NCF)
        rc = ncf__fail(NCF_ERR_ARG, "ncf_mpi_load_dataset: unknown format %d", (int)o.format);
    else if (NCF__MANY(o.holdout))
        rc = ncf__fail(NCF_ERR_ARG, "%s: a split of many items per user is evaluated on one process (ncf_load_dataset)",
                       path);
    if ((rc = ncf__mpi_agree(comm, rc)) != NCF_OK) return rc;
    if (MPI_File_open(comm, path, MPI_MODE_RDONLY, MPI_INFO_NULL, &f) != MPI_SUCCESS)
        rc = ncf__fail(NCF_ERR_IO, "%s: cannot open", path), f = MPI_FILE_NULL;
    else if (MPI_File_get_size(f, &size) != MPI_SUCCESS) rc = ncf__fail(NCF_ERR_IO, "%s: cannot read its size", path);
    if ((rc = ncf__mpi_agree(comm, rc)) == NCF_OK &&
        (rc = ncf__mpi_sniff(f, (int64_t)size, path, &o, &R.D, &R.rep, comm)) == NCF_OK)
        rc = ncf__mpi_read_range(f, (int64_t)size, path, comm, &buf, &len, &line0);
    if (f != MPI_FILE_NULL) MPI_File_close(&f);
    if (rc == NCF_OK) rc = ncf__mpi_parse(path, buf, len, line0, &o, &R, comm);
    NCF_FREE(buf);      /* (the range and its records are never both held past here) */
    if (rc == NCF_OK) { /* a log of no records: the whole file's error, as one process gives it */
        int64_t all = 0;
        if (MPI_Allreduce(&R.tr.n, &all, 1, MPI_INT64_T, MPI_SUM, comm) != MPI_SUCCESS)
            rc = ncf__fail(NCF_ERR_IO, "%s: MPI_Allreduce failed", path);
        else if (all == 0) rc = ncf__fail(NCF_ERR_PARSE, "%s: no ratings in the file", path);
    }
    for (c = 0; c < 2 && rc == NCF_OK; c++) rc = ncf__mpi_column_ids(comm, &R, c, &raw[c], &count[c], &text[c], &at[c]);
    if (rc == NCF_OK) rc = ncf__mpi_route_lines(comm, &R, count[0], &L, &plo, &phi);
    ncf__triples_free(&R.tr), ncf__intern_free(&R.in[0]), ncf__intern_free(&R.in[1]);
    if (rc == NCF_OK) {
        rc = ncf__mpi_build(&d, path, &o, &R, &L, raw[0], count[0], raw[1], count[1], &plo, &phi, comm);
        raw[0] = raw[1] = NULL; /* (the build frees them) */
    }
    ncf__mpi_lines_free(&L);
    if (rc == NCF_OK) rc = ncf__mpi_deal_users(&d, plo, phi, ds, comm);
    ncf_dataset_free(&d);
    for (c = 0; c < 2 && rc == NCF_OK; c++)
        if (text[c])
            rc = c ? ncf__ids_to_text(&ds->raw_item, ds->num_items, text[c], at[c], &ds->item_text, &ds->item_text_at)
                   : ncf__ids_to_text(&ds->raw_user, ds->num_users, text[c], at[c], &ds->user_text, &ds->user_text_at);
    if ((rc = ncf__mpi_agree(comm, rc)) != NCF_OK && ds) ncf_dataset_free(ds);
    for (c = 0; c < 2; c++) NCF_FREE(raw[c]), NCF_FREE(text[c]), NCF_FREE(at[c]);
    return rc;
}

/* One rank's state for a training call. */
typedef struct {
    MPI_Comm comm;
    int rank, P, g0, g1; /* this rank's groups [g0, g1) */
    int B, D, Dn;        /* batch, floats of an item record, dense parameters */
    const int *groups;   /* [G + 1] each group's first user */
    int32_t *bu, *bi;    /* [16] a chunk of the batch as drawn */
    float *by;
    uint8_t *own;
    int u0;           /* the model's row 0 is user u0's (a model shard's first user, else 0) */
    int32_t *tu, *ti; /* [B] this rank's examples in position order */
    float *ty;
    int32_t *users, *items; /* [B] this rank's examples, by group, by position within one */
    float *labels;
    int *gstart;           /* [G + 1] where each group's examples begin among them */
    double *gloss;         /* [G] each group's summed example losses */
    float *part;           /* [g1 - g0][Dn]: each own group's dense gradient */
    float *pval;           /* [B][D]: each (item, group) partial sum of an item's gradients */
    int *pn, *pcount, *pg; /* [B]: partials of a distinct item; [B] examples and group of each partial */
    float *rbuf;           /* [Dn] a dense sum received */
    uint8_t *list[2];      /* [B] item records: each own tree node's list, sorted by item; the next level's */
    int loff[NCF_MPI_GROUPS], llen[NCF_MPI_GROUPS]; /* node a's list: list[0] + loff[a], llen[a] records */
    uint8_t *msg[2];                                /* item records: a list received; the root's */
    size_t msg_cap;
    int *counts, *displs; /* [P] */
    int64_t *bytes;
} ncf__mpi;

/* An item record: the item, its examples in the batch, then D floats. */
#define NCF__REC_HEAD 8
static size_t ncf__rec_size(const ncf__mpi *c) { return NCF__REC_HEAD + sizeof(float) * (size_t)c->D; }

static void ncf__mpi_free(ncf__mpi *c)
{
    NCF_FREE(c->bu);
    NCF_FREE(c->bi);
    NCF_FREE(c->by);
    NCF_FREE(c->own);
    NCF_FREE(c->tu);
    NCF_FREE(c->ti);
    NCF_FREE(c->ty);
    NCF_FREE(c->users);
    NCF_FREE(c->items);
    NCF_FREE(c->labels);
    NCF_FREE(c->gstart);
    NCF_FREE(c->gloss);
    NCF_FREE(c->part);
    NCF_FREE(c->pval);
    NCF_FREE(c->pn);
    NCF_FREE(c->pcount);
    NCF_FREE(c->pg);
    NCF_FREE(c->rbuf);
    NCF_FREE(c->list[0]);
    NCF_FREE(c->list[1]);
    NCF_FREE(c->msg[0]);
    NCF_FREE(c->msg[1]);
    NCF_FREE(c->counts);
    NCF_FREE(c->displs);
}

static int ncf__mpi_alloc(ncf__mpi *c, ncf_model *m, const ncf_dataset *d, MPI_Comm comm)
{
    const struct ncf__scratch *s = m->scratch;
    int t, B = m->cfg.batch_size, G = NCF_MPI_GROUPS;
    c->comm = comm, c->B = B, c->groups = d->shard.groups, c->u0 = s->mpi.user0;
    MPI_Comm_rank(comm, &c->rank), MPI_Comm_size(comm, &c->P);
    c->g0 = (int)((int64_t)G * c->rank / c->P), c->g1 = (int)((int64_t)G * (c->rank + 1) / c->P);
    for (c->D = 0, t = 0; t < s->tables.n; t++) c->D += s->tables.tab[t].D;
    c->Dn = (int)(m->num_params - s->emb_params);
    c->bu = NCF__NEW(int32_t, 16), c->bi = NCF__NEW(int32_t, 16), c->by = NCF__NEW(float, 16),
    c->own = NCF__NEW(uint8_t, 16);
    c->users = NCF__NEW(int32_t, B), c->items = NCF__NEW(int32_t, B), c->labels = NCF__NEW(float, B);
    c->tu = NCF__NEW(int32_t, B), c->ti = NCF__NEW(int32_t, B), c->ty = NCF__NEW(float, B);
    c->gstart = NCF__NEW(int, G + 1), c->gloss = NCF__NEW(double, G);
    c->part = NCF__NEW(float, (size_t)(c->g1 - c->g0) * c->Dn + 1);
    c->pval = NCF__NEW(float, (size_t)B * c->D), c->pn = NCF__NEW(int, B), c->pcount = NCF__NEW(int, B);
    c->pg = NCF__NEW(int, B), c->rbuf = NCF__NEW(float, (size_t)c->Dn + 1);
    c->msg_cap = (size_t)B * ncf__rec_size(c);
    c->msg[0] = NCF__NEW(uint8_t, c->msg_cap), c->msg[1] = NCF__NEW(uint8_t, c->msg_cap);
    c->list[0] = NCF__NEW(uint8_t, c->msg_cap), c->list[1] = NCF__NEW(uint8_t, c->msg_cap);
    c->counts = NCF__NEW(int, c->P), c->displs = NCF__NEW(int, c->P);
    c->bytes = &m->scratch->mpi.bytes;
    if (!c->bu || !c->bi || !c->by || !c->own || !c->tu || !c->ti || !c->ty || !c->users || !c->items || !c->labels ||
        !c->gstart || !c->gloss || !c->part || !c->pval || !c->pn || !c->pcount || !c->pg || !c->rbuf || !c->list[0] ||
        !c->list[1] || !c->msg[0] || !c->msg[1] || !c->counts || !c->displs)
        return ncf__fail(NCF_ERR_NOMEM, "ncf_mpi_train_epoch: out of memory for a batch of %d", B);
    return NCF_OK;
}

/* The group of user u, one of this rank's. */
static int ncf__group_of(const ncf__mpi *c, int32_t u)
{
    int g = c->g0;
    while (g + 1 < c->g1 && u >= c->groups[g + 1]) g++;
    return g;
}

/* 1. This rank's examples of the batch (examples start.. of the epoch), ordered by group and
   by position within one (a stable counting sort), users as the model's rows. Returns how many. */
static int ncf__mpi_batch(ncf__mpi *c, const ncf_sampler *smp, int epoch, int64_t start, int n)
{
    int j, q, g, G = NCF_MPI_GROUPS, k = 0, next[NCF_MPI_GROUPS];
    for (j = 0; j < n; j += 16) { /* this rank's, in position order */
        int len = n - j < 16 ? n - j : 16;
        ncf__fill_rows(smp, epoch, start + j, len, c->bu, c->bi, c->by, c->own);
        for (q = 0; q < len; q++)
            if (c->own[q]) c->tu[k] = c->bu[q], c->ti[k] = c->bi[q], c->ty[k++] = c->by[q];
    }
    for (g = 0; g <= G; g++) c->gstart[g] = 0;
    for (j = 0; j < k; j++) c->gstart[ncf__group_of(c, c->tu[j]) + 1]++;
    for (g = 0; g < G; g++) c->gstart[g + 1] += c->gstart[g], next[g] = c->gstart[g];
    for (j = 0; j < k; j++) {
        int at = next[ncf__group_of(c, c->tu[j])]++;
        c->users[at] = c->tu[j] - c->u0, c->items[at] = c->ti[j], c->labels[at] = c->ty[j];
    }
    return k;
}

/* The (item, group) partial sums of distinct item q of this rank's examples: partial j at
   [istart[q] + j], each summed from zero over the group's examples in order. */
static void ncf__item_partials(ncf__mpi *c, ncf_model *m, int n, int q)
{
    struct ncf__scratch *s = m->scratch;
    const float *src[3];
    float coef, *v = NULL;
    int ld[3], t, b, d, np = 0, g = -1, off;
    for (t = 0; t < s->tables.n; t++) src[t] = ncf__row_source(m, t, 1, &ld[t], &coef, n);
    for (b = s->batch.istart[q]; b < s->batch.istart[q + 1]; b++) {
        int row = (int)(s->batch.ikey[b] & 0xffffffffu);
        if (g < 0 || row >= c->gstart[g + 1]) { /* a new group: a new partial */
            if (g < 0) g = c->g0;
            while (row >= c->gstart[g + 1]) g++;
            v = c->pval + (size_t)(s->batch.istart[q] + np) * c->D;
            memset(v, 0, sizeof(float) * (size_t)c->D);
            c->pg[s->batch.istart[q] + np] = g;
            c->pcount[s->batch.istart[q] + np++] = 0;
        }
        c->pcount[s->batch.istart[q] + np - 1]++;
        for (off = 0, t = 0; t < s->tables.n; off += s->tables.tab[t++].D) {
            const float *x = src[t] + (size_t)row * ld[t];
            for (d = 0; d < s->tables.tab[t].D; d++) v[off + d] += x[d];
        }
    }
    c->pn[q] = np;
}

/* 1b. This rank's nl examples forward and backward, its groups' dense gradients, its examples
   grouped by user and by item, and the items' partial sums: phases of one parallel region. */
static void ncf__mpi_compute(ncf__mpi *c, ncf_model *m, const ncf__batch *bt, int nl)
{
    struct ncf__scratch *s = m->scratch;
    ncf__team team = NCF__TEAM_INIT;
    int64_t du = ncf__layer_grads_count(m);
    int g, b;
    memset(c->part, 0, sizeof(float) * (size_t)(c->g1 - c->g0) * c->Dn);
    NCF__PARALLEL(ncf__rows_parallel(m, nl))
    {
        ncf__ctx x = ncf__join(&team);
        int64_t lo, hi, u;
        ncf__rows_range(&x, m, bt, 0, nl, 1);
        while (ncf__claim(&x, 2 + (c->g1 - c->g0) * du, 1, &lo, &hi))
            for (u = lo; u < hi; u++) {
                if (u == 0)
                    s->batch.nuser =
                        ncf__sort_batch_by_row(s->batch.ukey, s->batch.sortbuf, s->batch.ustart, bt->users, nl);
                else if (u == 1)
                    s->batch.nitem =
                        ncf__sort_batch_by_row(s->batch.ikey, s->batch.sortbuf + bt->n, s->batch.istart, bt->items, nl);
                else {
                    int k = (int)((u - 2) / du);
                    ncf__layer_grads_of(m, c->gstart[c->g0 + k], c->gstart[c->g0 + k + 1], (u - 2) % du,
                                        c->part + (size_t)k * c->Dn, 0);
                }
            }
        while (ncf__claim(&x, s->batch.nitem, 8, &lo, &hi))
            for (u = lo; u < hi; u++) ncf__item_partials(c, m, bt->n, (int)u);
    }
    for (g = c->g0; g < c->g1; g++) /* each group's loss, summed in order */
        for (c->gloss[g] = 0, b = c->gstart[g]; b < c->gstart[g + 1]; b++) c->gloss[g] += s->batch.ex_loss[b];
}

/* The rank holding group g: the r with G*r/P <= g < G*(r+1)/P. */
static int ncf__group_rank(const ncf__mpi *c, int g)
{
    int r = 0;
    while ((int64_t)NCF_MPI_GROUPS * (r + 1) / c->P <= g) r++;
    return r;
}

/* Level l of the fold tree pairs node a (a multiple of 2^(l+1): groups [a, a + 2^l)) with node
   b = a + 2^l, the sum of a pair being left + right; a node's sum lives on the rank of its
   first group. The pair's ranks: *left, and *right (-1 when b is past the last group). */
static void ncf__fold_pair(const ncf__mpi *c, int a, int step, int *left, int *right)
{
    *left = ncf__group_rank(c, a);
    *right = a + step < NCF_MPI_GROUPS ? ncf__group_rank(c, a + step) : -1;
}

/* 2a. The dense gradient: the groups' sums folded as a fixed binary tree over the groups (pairs,
   then pairs of pairs, ...), a right child that lives on another rank sent to its left one's,
   so a rank waits on at most log2(G) messages in turn whatever P; rank 0's root to all. Into
   m->grads, with the layers' L2 terms. */
static int ncf__mpi_dense(ncf__mpi *c, ncf_model *m)
{
    float *g = m->grads + m->scratch->emb_params, *into;
    int a, l, step, left, right, nrq;
    size_t i, Dn = (size_t)c->Dn;
    MPI_Request rq[2];
    for (l = 0, step = 1; step < NCF_MPI_GROUPS; l++, step *= 2) {
        into = NULL, nrq = 0;
        for (a = 0; a < NCF_MPI_GROUPS; a += 2 * step) {
            ncf__fold_pair(c, a, step, &left, &right);
            if (left == c->rank && right == c->rank) {
                float *pa = c->part + (size_t)(a - c->g0) * Dn, *pb = pa + (size_t)step * Dn;
                for (i = 0; i < Dn; i++) pa[i] += pb[i];
            } else if (left == c->rank && right >= 0) {
                if (MPI_Irecv(c->rbuf, c->Dn, MPI_FLOAT, right, NCF__MPI_TAG_DENSE + l, c->comm, &rq[nrq++]) !=
                    MPI_SUCCESS)
                    return 0;
                into = c->part + (size_t)(a - c->g0) * Dn;
            } else if (right == c->rank) {
                if (MPI_Isend(c->part + (size_t)(a + step - c->g0) * Dn, c->Dn, MPI_FLOAT, left, NCF__MPI_TAG_DENSE + l,
                              c->comm, &rq[nrq++]) != MPI_SUCCESS)
                    return 0;
                *c->bytes += (int64_t)4 * c->Dn;
            }
        }
        if (nrq && MPI_Waitall(nrq, rq, MPI_STATUSES_IGNORE) != MPI_SUCCESS) return 0;
        if (into)
            for (i = 0; i < Dn; i++) into[i] += c->rbuf[i];
    }
    if (c->rank == 0) memcpy(g, c->part, sizeof(float) * Dn);
    if (MPI_Bcast(g, c->Dn, MPI_FLOAT, 0, c->comm) != MPI_SUCCESS) return 0;
    if (c->rank == 0 && c->P > 1) *c->bytes += (int64_t)4 * c->Dn;
    for (l = 1; l <= m->scratch->nd; l++)
        if (m->cfg.mlp_reg[l] > 0) {
            float two_r = 2.0f * m->cfg.mlp_reg[l], *gw = ncf__grad_of(m, m->w[l]);
            size_t j, nw = (size_t)m->cfg.layers[l - 1] * m->cfg.layers[l];
            for (j = 0; j < nw; j++) gw[j] += two_r * m->w[l][j];
        }
    return 1;
}

/* Each own group's item records, sorted by item, in list[0]: the (item, group) partials of
   this rank's examples. */
static void ncf__group_records(ncf__mpi *c, const ncf_model *m)
{
    const struct ncf__scratch *s = m->scratch;
    size_t R = ncf__rec_size(c);
    int q, j, g, at = 0, fill[NCF_MPI_GROUPS];
    for (g = c->g0; g < c->g1; g++) c->llen[g] = 0;
    for (q = 0; q < s->batch.nitem; q++)
        for (j = 0; j < c->pn[q]; j++) c->llen[c->pg[s->batch.istart[q] + j]]++;
    for (g = c->g0; g < c->g1; at += c->llen[g++]) c->loff[g] = at, fill[g] = at;
    for (q = 0; q < s->batch.nitem; q++)
        for (j = 0; j < c->pn[q]; j++) {
            int p = s->batch.istart[q] + j;
            uint8_t *rec = c->list[0] + (size_t)fill[c->pg[p]]++ * R;
            int32_t head[2];
            head[0] = (int32_t)(s->batch.ikey[s->batch.istart[q]] >> 32), head[1] = c->pcount[p];
            memcpy(rec, head, sizeof head);
            memcpy(rec + NCF__REC_HEAD, c->pval + (size_t)p * c->D, sizeof(float) * (size_t)c->D);
        }
}

/* out = the records of x and y (each sorted by item) merged, an item in both summed x + y;
   returns the count. */
static int ncf__merge_records(const ncf__mpi *c, uint8_t *out, const uint8_t *x, int nx, const uint8_t *y, int ny)
{
    size_t R = ncf__rec_size(c);
    int i = 0, j = 0, n = 0, d;
    for (; i < nx || j < ny; n++) {
        int32_t hx[2] = {INT32_MAX, 0}, hy[2] = {INT32_MAX, 0};
        if (i < nx) memcpy(hx, x + (size_t)i * R, sizeof hx);
        if (j < ny) memcpy(hy, y + (size_t)j * R, sizeof hy);
        if (hx[0] != hy[0]) {
            memcpy(out + (size_t)n * R, hx[0] < hy[0] ? x + (size_t)i++ * R : y + (size_t)j++ * R, R);
            continue;
        }
        { /* (both) */
            float *v = (float *)(void *)(out + (size_t)n * R + NCF__REC_HEAD);
            const float *w = (const float *)(const void *)(y + (size_t)j++ * R + NCF__REC_HEAD);
            memcpy(out + (size_t)n * R, x + (size_t)i++ * R, R);
            for (d = 0; d < c->D; d++) v[d] += w[d];
            hx[1] += hy[1];
            memcpy(out + (size_t)n * R, hx, sizeof hx);
        }
    }
    return n;
}

/* 2b. The items' gradients: each group's (item, sum) records folded by the dense gradient's
   tree, lists merged by item; rank 0's root to all, in msg[1]. A level's lists cover disjoint
   groups, so together they hold at most a batch of records. Returns the records' count, or -1
   when MPI failed. */
static int ncf__mpi_items(ncf__mpi *c, const ncf_model *m)
{
    size_t R = ncf__rec_size(c);
    int a, l, step, left, right, nrq, got = 0, w, nout;
    MPI_Request rq[2];
    MPI_Status st[2];
    ncf__group_records(c, m);
    for (l = 0, step = 1; step < NCF_MPI_GROUPS; l++, step *= 2) {
        uint8_t *t;
        int recv_at = -1;
        for (a = 0, nrq = 0; a < NCF_MPI_GROUPS; a += 2 * step) {
            ncf__fold_pair(c, a, step, &left, &right);
            if (left == c->rank && right >= 0 && right != c->rank) {
                if (MPI_Irecv(c->msg[0], (int)c->msg_cap, MPI_BYTE, right, NCF__MPI_TAG_ROWS + l, c->comm, &rq[nrq]) !=
                    MPI_SUCCESS)
                    return -1;
                recv_at = nrq++;
            } else if (left != c->rank && right == c->rank) {
                int n = c->llen[a + step];
                if (MPI_Isend(c->list[0] + (size_t)c->loff[a + step] * R, (int)(n * R), MPI_BYTE, left,
                              NCF__MPI_TAG_ROWS + l, c->comm, &rq[nrq++]) != MPI_SUCCESS)
                    return -1;
                *c->bytes += (int64_t)(n * R);
            }
        }
        if (nrq && MPI_Waitall(nrq, rq, st) != MPI_SUCCESS) return -1;
        if (recv_at >= 0 && MPI_Get_count(&st[recv_at], MPI_BYTE, &got) != MPI_SUCCESS) return -1;
        for (a = 0, w = 0; a < NCF_MPI_GROUPS; a += 2 * step) { /* this level's sums, into list[1] */
            const uint8_t *y = NULL;
            int ny = 0, at = w;
            ncf__fold_pair(c, a, step, &left, &right);
            if (left != c->rank) continue;
            if (right == c->rank) y = c->list[0] + (size_t)c->loff[a + step] * R, ny = c->llen[a + step];
            else if (right >= 0) y = c->msg[0], ny = (int)((size_t)got / R);
            w += ncf__merge_records(c, c->list[1] + (size_t)w * R, c->list[0] + (size_t)c->loff[a] * R, c->llen[a], y,
                                    ny);
            c->loff[a] = at, c->llen[a] = w - at;
        }
        t = c->list[0], c->list[0] = c->list[1], c->list[1] = t;
    }
    nout = c->rank == 0 ? c->llen[0] : 0;
    if (c->rank == 0) memcpy(c->msg[1], c->list[0] + (size_t)c->loff[0] * R, (size_t)nout * R);
    if (MPI_Bcast(&nout, 1, MPI_INT, 0, c->comm) != MPI_SUCCESS ||
        MPI_Bcast(c->msg[1], (int)(nout * R), MPI_BYTE, 0, c->comm) != MPI_SUCCESS)
        return -1;
    if (c->rank == 0 && c->P > 1) *c->bytes += (int64_t)(nout * R);
    return nout;
}

/* 2c. The loss: every rank gathers the groups' sums and folds them in group order. */
static int ncf__mpi_loss(ncf__mpi *c, ncf_model *m, int n, double *loss)
{
    int r, g;
    double sum = 0;
    for (r = 0; r < c->P; r++) {
        c->displs[r] = (int)((int64_t)NCF_MPI_GROUPS * r / c->P);
        c->counts[r] = (int)((int64_t)NCF_MPI_GROUPS * (r + 1) / c->P) - c->displs[r];
    }
    if (MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, c->gloss, c->counts, c->displs, MPI_DOUBLE, c->comm) !=
        MPI_SUCCESS)
        return 0;
    if (c->P > 1) *c->bytes += (int64_t)8 * c->counts[c->rank];
    for (g = 0; g < NCF_MPI_GROUPS; g++) sum += c->gloss[g];
    *loss = ncf__plus_dense_l2(m, sum / n);
    return 1;
}

/* The rows of item record i, prefetched: they are scattered over tables far larger than the
   caches. */
static void ncf__mpi_prefetch_record(const ncf__mpi *c, const ncf_model *m, int i)
{
    const struct ncf__scratch *s = m->scratch;
    int32_t item;
    int t, d;
    memcpy(&item, c->msg[1] + (size_t)i * ncf__rec_size(c), sizeof item);
    for (t = 0; t < s->tables.n; t++) {
        int D = s->tables.tab[t].D;
        const float *p = s->tables.tab[t].item + (size_t)item * D;
        size_t off = (size_t)(p - m->params);
        for (d = 0; d < D; d += 16) {
            NCF__PREFETCH(p + d);
            if (m->adam_m) NCF__PREFETCH(m->adam_m + off + d), NCF__PREFETCH(m->adam_v + off + d);
        }
    }
}

/* 3. Item record i's rows updated (lazy Adam, SGD), or their gradients placed for dense Adam. */
static int ncf__mpi_record_update(ncf__mpi *c, ncf_model *m, int i, int n, const ncf__adam_k *k)
{
    const struct ncf__scratch *s = m->scratch;
    const uint8_t *rec = c->msg[1] + (size_t)i * ncf__rec_size(c);
    float *v = (float *)(void *)(rec + NCF__REC_HEAD), coef, cc;
    int32_t head[2];
    int t, d, ld, bad = 0;
    memcpy(head, rec, sizeof head);
    for (t = 0; t < s->tables.n; v += s->tables.tab[t++].D) {
        int D = s->tables.tab[t].D;
        const float *p = s->tables.tab[t].item + (size_t)head[0] * D;
        ncf__row_source(m, t, 1, &ld, &coef, n);
        cc = coef * (float)head[1];
        if (cc != 0.0f)
            for (d = 0; d < D; d++) v[d] += cc * p[d];
        if (ncf__dense_adam(m)) memcpy(ncf__grad_of(m, p), v, sizeof(float) * (size_t)D);
        else bad |= ncf__update_with(m, (size_t)(p - m->params), (size_t)D, v, k);
    }
    return bad;
}

/* 3. The dense layers and the items (the same on every rank), and this rank's users (summed
   here, their examples being all here); dense Adam then moves every row. */
static int ncf__mpi_update(ncf__mpi *c, ncf_model *m, int nrec, int n, const ncf__adam_k *k)
{
    struct ncf__scratch *s = m->scratch;
    ncf__team team = NCF__TEAM_INIT;
    int64_t nd = ncf__layer_updates_count(m), ni = NCF__CEIL_DIV(nrec, NCF__ROWS_PER_UNIT);
    int64_t units = nd + ni + NCF__CEIL_DIV(s->batch.nuser, NCF__ROWS_PER_UNIT);
    const ncf__adam_k *rows_k = ncf__dense_adam(m) ? NULL : k;
    int bad = 0;
    NCF__PARALLEL(ncf__rows_parallel(m, n))
    {
        ncf__ctx x = ncf__join(&team);
        int64_t lo, hi, u;
        int i;
        while (ncf__claim(&x, units, 1, &lo, &hi))
            for (u = lo; u < hi; u++) {
                int b = 0, q0 = (int)(u - nd - ni) * NCF__ROWS_PER_UNIT;
                if (u < nd) b = ncf__layer_update(m, u, k);
                else if (u < nd + ni)
                    for (i = (int)(u - nd) * NCF__ROWS_PER_UNIT; i < nrec && i < (int)(u - nd + 1) * NCF__ROWS_PER_UNIT;
                         i++) {
                        if (i + 4 < nrec) ncf__mpi_prefetch_record(c, m, i + 4);
                        b |= ncf__mpi_record_update(c, m, i, n, k);
                    }
                else
                    b = ncf__update_batch_rows(m, 0, n, q0,
                                               q0 + NCF__ROWS_PER_UNIT < s->batch.nuser ? q0 + NCF__ROWS_PER_UNIT
                                                                                        : s->batch.nuser,
                                               s->batch.nuser, rows_k);
                if (b) ncf__flag(&bad, 1);
            }
        if (ncf__dense_adam(m)) ncf__emb_phase(&x, m, k, &bad);
    }
    return bad;
}

/* One step; 0 with *rc set when it failed (the same on every rank). */
static int ncf__mpi_step(ncf__mpi *c, ncf_model *m, const ncf_sampler *smp, int epoch, int64_t start, int n,
                         double *loss, int *rc)
{
    ncf__batch bt;
    ncf__adam_k k = ncf__adam_consts(m, m->step + 1);
    int nrec, nl = ncf__mpi_batch(c, smp, epoch, start, n);
    memset(&bt, 0, sizeof bt);
    bt.users = c->users, bt.items = c->items, bt.labels = c->labels, bt.n = n; /* (n: the mean is the batch's) */
    ncf__mpi_compute(c, m, &bt, nl);
    if (!ncf__mpi_dense(c, m) || (nrec = ncf__mpi_items(c, m)) < 0 || !ncf__mpi_loss(c, m, n, loss)) {
        *rc = ncf__fail(NCF_ERR_IO, "ncf_mpi_train_epoch: an MPI call failed at step %lld", (long long)m->step + 1);
        return 0;
    }
    if (!(*loss - *loss == 0.0)) return *rc = ncf__step_failed(m, *loss, 0), 0;
    m->step++;
    m->scratch->mpi.stale = 1;
    if (ncf__mpi_update(c, m, nrec, n, &k)) return *rc = ncf__step_failed(m, *loss, 1), 0;
    return 1;
}

/* A model shard must hold the users of the data's shard, of the same data. */
static int ncf__shard_matches(const ncf_model *m, const ncf_dataset *d, const char *what)
{
    const struct ncf__scratch *s = m->scratch;
    if (!s->mpi.users) return NCF_OK;
    if (!ncf__is_shard(d) || s->mpi.users != d->num_users || s->mpi.user0 != d->shard.user_lo ||
        s->mpi.user_end != d->shard.user_hi)
        return ncf__fail(NCF_ERR_ARG, "%s: the model shard holds users [%d, %d) of %d, the data%s [%d, %d) of %d", what,
                         s->mpi.user0, s->mpi.user_end, s->mpi.users, ncf__is_shard(d) ? "'s shard" : " (not a shard)",
                         ncf__is_shard(d) ? d->shard.user_lo : 0, ncf__is_shard(d) ? d->shard.user_hi : d->num_users,
                         d->num_users);
    return NCF_OK;
}

static int ncf__mpi_train_args(ncf_model *m, const ncf_sampler *s, MPI_Comm comm)
{
    int lo, hi, rc;
    if (!m || !s || !s->data) return ncf__fail(NCF_ERR_ARG, "ncf_mpi_train_epoch: NULL model or sampler");
    if (m->scratch->in_place) return ncf__writable(m, "ncf_mpi_train_epoch");
    if (m->cfg.optimizer == NCF_OPT_ALS)
        return ncf__fail(NCF_ERR_ARG, "ncf_mpi_train_epoch: ALS trains on one process");
    if (!ncf__is_shard(s->data))
        return ncf__fail(NCF_ERR_ARG, "ncf_mpi_train_epoch: the data is not a shard (ncf_mpi_shard)");
    if ((rc = ncf__my_users(s->data, comm, &lo, &hi, "ncf_mpi_train_epoch")) != NCF_OK) return rc;
    if ((rc = ncf__shard_matches(m, s->data, "ncf_mpi_train_epoch")) != NCF_OK) return rc;
    if (s->data->num_users > NCF__USERS(m) || s->data->num_items > m->cfg.num_items)
        return ncf__fail(NCF_ERR_ARG, "ncf_mpi_train_epoch: the data has %d users and %d items, the model %d and %d",
                         s->data->num_users, s->data->num_items, NCF__USERS(m), m->cfg.num_items);
    return ncf__reserve(m, m->cfg.batch_size);
}

NCFDEF int ncf_mpi_train_examples(ncf_model *m, const ncf_sampler *s, int epoch, int64_t first, int64_t count,
                                  MPI_Comm comm, ncf_progress_fn progress, void *ctx, double *mean_loss)
{
    ncf__mpi c;
    int rc, B;
    int64_t pos, end, steps = 0;
    double sum = 0;
    memset(&c, 0, sizeof c);
    rc = ncf__mpi_train_args(m, s, comm);
    if (rc == NCF_OK) rc = ncf__epoch_span("ncf_mpi_train_examples", epoch, first, count, s->num_examples);
    if (rc == NCF_OK) rc = ncf__mpi_alloc(&c, m, s->data, comm);
    if ((rc = ncf__mpi_agree(comm, rc)) != NCF_OK) {
        ncf__mpi_free(&c);
        return rc;
    }
    B = m->cfg.batch_size, end = first + count;
    { /* the transposed kernels, afresh: the caller may have changed the parameters */
        ncf__team team = NCF__TEAM_INIT;
        NCF__PARALLEL(1)
        {
            ncf__ctx x = ncf__join(&team);
            ncf__transpose_phase(&x, m);
        }
    }
    for (pos = first; pos < end; pos += B, steps++) {
        int n = (int)(end - pos < B ? end - pos : B);
        double loss = 0;
        if (!ncf__mpi_step(&c, m, s, epoch, pos, n, &loss, &rc)) break;
        sum += loss * n;
        if (progress && (steps % 16 == 15 || pos + n == end))
            progress(ctx, pos + n - first, count, sum / (double)(pos + n - first));
    }
    ncf__mpi_free(&c);
    if (rc == NCF_OK && mean_loss) *mean_loss = count ? sum / (double)count : 0;
    return rc;
}

NCFDEF int ncf_mpi_sync(ncf_model *m, const ncf_dataset *shard, MPI_Comm comm)
{
    struct ncf__scratch *s;
    float *arr[3];
    int P = 1, rc = NCF_OK, mine[2] = {0, 0}, *ranges = NULL, *counts = NULL, *displs = NULL, t, a, r;
    if (!m || !m->scratch || !shard || !ncf__is_shard(shard))
        rc = ncf__fail(NCF_ERR_ARG, "ncf_mpi_sync: need a model and a shard");
    else if (m->scratch->mpi.users) /* a model shard's users stay on their ranks */
        return ncf__mpi_agree(comm, ncf__shard_matches(m, shard, "ncf_mpi_sync"));
    else if (MPI_Comm_size(comm, &P) != MPI_SUCCESS)
        rc = ncf__fail(NCF_ERR_ARG, "ncf_mpi_sync: not a valid communicator");
    else {
        ranges = NCF__NEW(int, 2 * (size_t)P), counts = NCF__NEW(int, P), displs = NCF__NEW(int, P);
        if (!ranges || !counts || !displs) rc = ncf__fail(NCF_ERR_NOMEM, "ncf_mpi_sync: out of memory");
        mine[0] = shard->shard.user_lo, mine[1] = shard->shard.user_hi;
    }
    if ((rc = ncf__mpi_agree(comm, rc)) != NCF_OK) goto done;
    s = m->scratch;
    arr[0] = m->params, arr[1] = m->adam_m, arr[2] = m->adam_v;
    if (MPI_Allgather(mine, 2, MPI_INT, ranges, 2, MPI_INT, comm) != MPI_SUCCESS) rc = NCF_ERR_IO;
    for (t = 0; t < s->tables.n && rc == NCF_OK; t++)
        for (a = 0; a < 3 && rc == NCF_OK; a++) {
            int D = s->tables.tab[t].D;
            float *rows;
            if (!arr[a]) continue;
            rows = arr[a] + (s->tables.tab[t].user - m->params);
            for (r = 0; r < P; r++) displs[r] = ranges[2 * r] * D, counts[r] = (ranges[2 * r + 1] - ranges[2 * r]) * D;
            if (MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, rows, counts, displs, MPI_FLOAT, comm) !=
                MPI_SUCCESS)
                rc = NCF_ERR_IO;
        }
    if (rc != NCF_OK) rc = ncf__fail(NCF_ERR_IO, "ncf_mpi_sync: an MPI call failed");
    else s->mpi.stale = 0;
done:
    NCF_FREE(ranges);
    NCF_FREE(counts);
    NCF_FREE(displs);
    return rc;
}

NCFDEF int ncf_mpi_train_epoch(ncf_model *m, const ncf_sampler *s, int epoch, MPI_Comm comm, ncf_progress_fn progress,
                               void *ctx, double *mean_loss)
{
    int rc = ncf_mpi_train_examples(m, s, epoch, 0, s ? s->num_examples : 0, comm, progress, ctx, mean_loss);
    if (rc == NCF_OK && (rc = ncf_mpi_sync(m, s->data, comm)) == NCF_OK) m->epoch = epoch;
    if (m && m->scratch) ncf__refresh_cache(m); /* ready to serve and evaluate */
    return rc;
}

static NCF__MAYBE_UNUSED int64_t ncf__mpi_bytes_sent(const ncf_model *m)
{
    return m && m->scratch ? m->scratch->mpi.bytes : 0;
}

/* ---- model shards: each rank holds its users' rows only ---- */

/* A model shard of users [lo, hi): its scratch says so (an empty range keeps one idle row). */
static void ncf__mark_shard(ncf_model *m, int users, int lo, int hi)
{
    m->scratch->mpi.user0 = lo, m->scratch->mpi.user_end = hi, m->scratch->mpi.users = users;
    m->scratch->mpi.stale = 1; /* (what reads other users' rows refuses) */
}

/* Every user's rated items in m (copied from a shard, which has only users [lo, hi)'s): each
   rank's run of them, gathered in rank order. */
static int ncf__gather_rated(ncf_model *m, int lo, int hi, MPI_Comm comm)
{
    int U = NCF__USERS(m), P, q, u, rc = NCF_OK, *cnt = NULL, *at = NULL, mine;
    int64_t *sp = NCF__ZNEW(int64_t, (size_t)U + 1), bytes = m->rated_ptr[hi] - m->rated_ptr[lo];
    uint8_t *sv = NULL;
    MPI_Comm_size(comm, &P);
    cnt = NCF__NEW(int, P), at = NCF__NEW(int, P);
    if (!sp || !cnt || !at) rc = ncf__fail(NCF_ERR_NOMEM, "out of memory for the rated items");
    for (u = lo; rc == NCF_OK && u < hi; u++) sp[u + 1] = m->rated_ptr[u + 1] - m->rated_ptr[u];
    mine = bytes > INT32_MAX ? -1 : (int)bytes;
    if ((rc = ncf__mpi_agree(comm, rc)) == NCF_OK &&
        (MPI_Allreduce(MPI_IN_PLACE, sp + 1, U, MPI_INT64_T, MPI_SUM, comm) != MPI_SUCCESS ||
         MPI_Allgather(&mine, 1, MPI_INT, cnt, 1, MPI_INT, comm) != MPI_SUCCESS))
        rc = ncf__fail(NCF_ERR_IO, "MPI failed gathering the rated items");
    if (rc == NCF_OK) {
        for (u = 0; u < U; u++) sp[u + 1] += sp[u];
        for (q = 0, bytes = 0; q < P; q++) at[q] = (int)bytes, bytes += cnt[q] < 0 ? INT32_MAX : cnt[q];
        if (bytes > INT32_MAX) rc = ncf__fail(NCF_ERR_DATA, "more than 2 GB of rated items to gather");
        else if (!(sv = NCF__NEW(uint8_t, bytes + 1)))
            rc = ncf__fail(NCF_ERR_NOMEM, "out of memory for the rated items");
    }
    if ((rc = ncf__mpi_agree(comm, rc)) == NCF_OK &&
        MPI_Allgatherv(m->rated + m->rated_ptr[lo], mine, MPI_BYTE, sv, cnt, at, MPI_BYTE, comm) != MPI_SUCCESS)
        rc = ncf__fail(NCF_ERR_IO, "MPI failed gathering the rated items");
    if (rc == NCF_OK) {
        NCF_FREE(m->rated_ptr), NCF_FREE(m->rated);
        m->rated_ptr = sp, m->rated = sv, sp = NULL, sv = NULL;
    }
    NCF_FREE(sp), NCF_FREE(sv), NCF_FREE(cnt), NCF_FREE(at);
    return rc;
}

NCFDEF int ncf_mpi_model_create(ncf_model **out, const ncf_config *cfg, const ncf_dataset *data, MPI_Comm comm)
{
    ncf_model *m = NULL;
    ncf_config c;
    int lo = 0, hi = 0, rc = NCF_OK;
    if (out) *out = NULL;
    if (!out || !cfg || !data || !data->user_ptr)
        rc = ncf__fail(NCF_ERR_ARG, "ncf_mpi_model_create: NULL argument, or a dataset not loaded");
    else if (data->num_users != cfg->num_users || data->num_items != cfg->num_items)
        rc = ncf__fail(NCF_ERR_ARG, "ncf_mpi_model_create: the data has %d users and %d items, the config %d and %d",
                       data->num_users, data->num_items, cfg->num_users, cfg->num_items);
    else rc = ncf__my_users(data, comm, &lo, &hi, "ncf_mpi_model_create");
    if (rc == NCF_OK) {
        c = *cfg, c.num_users = hi > lo ? hi - lo : 1;
        if ((rc = ncf__model_shell(&m, &c)) == NCF_OK) {
            ncf__mark_shard(m, cfg->num_users, lo, hi);
            if ((rc = ncf__own_params(m)) == NCF_OK) ncf__init_params(m);
            if (rc == NCF_OK && (data->raw_user || data->user_text) && (data->raw_item || data->item_text))
                rc = ncf__copy_ids(m, data);
        }
    }
    if (data && ncf__is_shard(data) && (rc = ncf__mpi_agree(comm, rc)) == NCF_OK && m->rated_ptr)
        rc = ncf__gather_rated(m, lo, hi, comm);
    if ((rc = ncf__mpi_agree(comm, rc)) != NCF_OK) {
        ncf_model_free(m);
        return rc;
    }
    *out = m;
    return NCF_OK;
}

/* Rows [lo, lo + rows) of each user table of block src (laid out as m's tensors) into dst,
   laid out with `rows` user rows; the other tensors whole. */
static void ncf__copy_shard_rows(const ncf_model *m, const float *src, float *dst, int lo, int rows)
{
    size_t at = 0;
    int t;
    for (t = 0; t < m->num_tensors; t++) {
        const ncf_tensor *T = &m->tensors[t];
        size_t n = (size_t)(t < m->scratch->tables.n ? rows : T->rows) * (size_t)T->cols;
        memcpy(dst + at, src + T->offset + (t < m->scratch->tables.n ? (size_t)lo * T->cols : 0), sizeof(float) * n);
        at += n;
    }
}

/* A whole model's memory as the shard of users [lo, hi) (made before anything changes, so a
   failure elsewhere leaves the model whole). */
typedef struct {
    float *block[4]; /* parameters, gradients, moments */
    int32_t *tu, *ti;
    uint8_t *tf; /* the touched-row lists */
    int lo, hi, rows, from;
    size_t n;
} ncf__shard_plan;

static void ncf__shard_plan_free(ncf__shard_plan *p)
{
    int a;
    for (a = 0; a < 4; a++) NCF_FREE(p->block[a]);
    NCF_FREE(p->tu), NCF_FREE(p->ti), NCF_FREE(p->tf);
    memset(p, 0, sizeof *p);
}

static int ncf__shard_prepare(const ncf_model *m, int lo, int hi, ncf__shard_plan *p)
{
    const float *arr[4];
    size_t cut = 0;
    int a, t, failed = 0;
    memset(p, 0, sizeof *p);
    p->lo = lo, p->hi = hi, p->rows = hi > lo ? hi - lo : 1;
    p->from = lo < m->cfg.num_users ? lo : m->cfg.num_users - 1; /* (no users: any row stands idle) */
    for (t = 0; t < m->scratch->tables.n; t++) cut += (size_t)(m->cfg.num_users - p->rows) * m->tensors[t].cols;
    p->n = m->num_params - cut;
    arr[0] = m->params, arr[1] = m->grads, arr[2] = m->adam_m, arr[3] = m->adam_v;
    for (a = 0; a < 4; a++)
        if (arr[a] && !(p->block[a] = a == 1 ? NCF__ZNEW(float, p->n) : NCF__NEW(float, p->n))) failed = 1;
    p->tu = NCF__NEW(int32_t, p->rows), p->ti = NCF__NEW(int32_t, m->cfg.num_items);
    p->tf = NCF__ZNEW(uint8_t, (size_t)p->rows + (size_t)m->cfg.num_items);
    if (!failed && p->tu && p->ti && p->tf) return NCF_OK;
    ncf__shard_plan_free(p);
    return ncf__fail(NCF_ERR_NOMEM, "out of memory for a model shard of %lu parameters", (unsigned long)p->n);
}

static void ncf__shard_commit(ncf_model *m, ncf__shard_plan *p)
{
    struct ncf__scratch *s = m->scratch;
    float **arr[4];
    size_t off = 0;
    int a, t;
    arr[0] = &m->params, arr[1] = &m->grads, arr[2] = &m->adam_m, arr[3] = &m->adam_v;
    for (a = 0; a < 4; a++)
        if (p->block[a]) {
            if (a != 1) ncf__copy_shard_rows(m, *arr[a], p->block[a], p->from, p->rows);
            NCF_FREE(*arr[a]);
            *arr[a] = p->block[a], p->block[a] = NULL;
        }
    for (t = 0; t < m->num_tensors; t++) { /* the shard's layout */
        if (t < s->tables.n) m->tensors[t].rows = p->rows;
        m->tensors[t].offset = off;
        off += (size_t)m->tensors[t].rows * m->tensors[t].cols;
        if (t + 1 == s->tables.n * 2) s->emb_params = off;
    }
    NCF_FREE(s->touched.user), NCF_FREE(s->touched.item), NCF_FREE(s->touched.flag);
    s->touched.user = p->tu, s->touched.item = p->ti, s->touched.flag = p->tf;
    p->tu = p->ti = NULL, p->tf = NULL;
    NCF_FREE(s->cache.user_order); /* (serving's: a shard does not serve) */
    s->cache.user_order = NULL;
    ncf__mark_shard(m, m->cfg.num_users, p->lo, p->hi);
    m->cfg.num_users = p->rows, m->num_params = p->n;
    ncf__set_views(m, m->params, m->params + s->emb_params);
}

NCFDEF int ncf_mpi_shard_model(ncf_model *m, const ncf_dataset *data, MPI_Comm comm)
{
    ncf__shard_plan plan;
    int lo = 0, hi = 0, rc = NCF_OK;
    memset(&plan, 0, sizeof plan);
    if (!m || !m->scratch || !data || !data->user_ptr)
        rc = ncf__fail(NCF_ERR_ARG, "ncf_mpi_shard_model: NULL model, or a dataset not loaded");
    else if (m->scratch->mpi.users) rc = ncf__fail(NCF_ERR_ARG, "ncf_mpi_shard_model: the model is a shard already");
    else if (m->scratch->in_place || !m->params || !m->grads)
        rc = ncf__fail(NCF_ERR_ARG, "ncf_mpi_shard_model: the model does not train (read in place, or int8)");
    else if (ncf__pending(m))
        rc = ncf__fail(NCF_ERR_ARG, "ncf_mpi_shard_model: the model has gradients not yet applied (ncf_update)");
    else if (data->num_users != m->cfg.num_users || data->num_items != m->cfg.num_items)
        rc = ncf__fail(NCF_ERR_ARG, "ncf_mpi_shard_model: the data has %d users and %d items, the model %d and %d",
                       data->num_users, data->num_items, m->cfg.num_users, m->cfg.num_items);
    else if ((rc = ncf__my_users(data, comm, &lo, &hi, "ncf_mpi_shard_model")) == NCF_OK)
        rc = ncf__shard_prepare(m, lo, hi, &plan);
    if ((rc = ncf__mpi_agree(comm, rc)) != NCF_OK) {
        ncf__shard_plan_free(&plan);
        return rc;
    }
    ncf__shard_commit(m, &plan);
    return NCF_OK;
}

#ifndef NCF_NO_STDIO
/* The CRC of bytes that follow bytes whose CRC was crc (0 before any), as zlib's crc32 (a file
   checked or written as it streams past). */
static uint32_t ncf__crc32_more(uint32_t crc, const uint8_t *p, size_t n)
{
    uint32_t c = crc ^ 0xFFFFFFFFu;
    size_t i;
    for (i = 0; i < n; i++) c = ncf__crc_table[(c ^ p[i]) & 255] ^ (c >> 8);
    return c ^ 0xFFFFFFFFu;
}

/* Rows [lo, lo + rows) of user table t, or (other tables) tensor t whole, of a float block of
   the file at `at` (laid out as the whole model W), into block x laid out as the shard m. */
static void ncf__read_shard_block(const ncf_model *m, const ncf_model *W, ncf__reader *r, uint64_t at, float *x, int lo)
{
    int t;
    for (t = 0; t < m->num_tensors; t++) {
        const ncf_tensor *T = &m->tensors[t];
        size_t j, n = (size_t)T->rows * T->cols, skip = t < m->scratch->tables.n ? (size_t)lo * T->cols : 0;
        r->at = (size_t)(at + 4 * (W->tensors[t].offset + skip));
        for (j = 0; j < n; j++) ncf__get_f32(r, x + T->offset + j);
    }
}

/* The shard of users [lo, hi) of the file at p (len bytes, its CRC checked): W is its whole
   model's shell. */
static int ncf__shard_of_file(const uint8_t *p, size_t len, ncf_model *W, const ncf__layout *L, int lo, int hi,
                              ncf_model **out)
{
    ncf_model *m = NULL;
    ncf_config c = W->cfg;
    ncf__reader r;
    int rc;
    c.num_users = hi > lo ? hi - lo : 1;
    if ((rc = ncf__model_shell(&m, &c)) != NCF_OK) return rc;
    ncf__mark_shard(m, W->cfg.num_users, lo, hi);
    r.p = p, r.n = len - 4;
    if (hi <= lo) lo = lo < W->cfg.num_users ? lo : W->cfg.num_users - 1; /* (no users: any row stands idle) */
    rc = ncf__own_params(m);
    if (rc == NCF_OK && (L->flags & NCF__FILE_IDS)) {
        rc = ncf__read_id_table(m, L, &r, 0);
        if (rc == NCF_OK) rc = ncf__read_id_table(m, L, &r, 1);
    }
    if (rc == NCF_OK && (L->flags & NCF__FILE_RATED)) rc = ncf__read_rated(m, L, &r);
    if (rc == NCF_OK) {
        ncf__read_shard_block(m, W, &r, L->params, m->params, lo);
        if ((L->flags & NCF__FILE_ADAM) && m->adam_m) {
            ncf__read_shard_block(m, W, &r, L->adam, m->adam_m, lo);
            ncf__read_shard_block(m, W, &r, L->adam + 4 * (uint64_t)W->num_params, m->adam_v, lo);
        }
        rc = ncf__check_finite(m);
    }
    if (rc != NCF_OK) {
        ncf_model_free(m);
        return rc;
    }
    *out = m;
    return NCF_OK;
}

#if defined(NCF__POSIX_FILES)
/* Whether the file's CRC holds, read through fd in pieces (the page cache's, not this
   process's memory). */
static int ncf__file_crc_ok(int fd, size_t len)
{
    uint8_t buf[1 << 16], tail[4];
    size_t at = 0, k;
    uint32_t crc = 0, want = 0;
    ssize_t got;
    int i;
    if (lseek(fd, 0, SEEK_SET) != 0) return 0;
    for (at = 0; at < len - 4; at += (size_t)got) {
        k = len - 4 - at < sizeof buf ? len - 4 - at : sizeof buf;
        if ((got = read(fd, buf, k)) <= 0) return 0;
        crc = ncf__crc32_more(crc, buf, (size_t)got);
    }
    for (k = 0; k < 4; k += (size_t)got)
        if ((got = read(fd, tail + k, 4 - k)) <= 0) return 0;
    for (i = 0; i < 4; i++) want |= (uint32_t)tail[i] << (8 * i);
    return crc == want;
}
#endif

/* This rank's shard of the model file at path (POSIX: mapped, only its parts read). */
static int ncf__load_shard(const char *path, int lo, int hi, ncf_model **out)
{
#if defined(NCF__POSIX_FILES)
    struct stat st;
    ncf_model *W = NULL;
    ncf__layout L;
    uint64_t step = 0, epoch = 0;
    void *map = MAP_FAILED;
    int fd = open(path, O_RDONLY), rc;
    if (fd < 0) return ncf__fail(NCF_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size < 8)
        rc = ncf__fail(NCF_ERR_IO, "%s: not a model file (not a regular file, or too short)", path);
    else if ((uint64_t)st.st_size > (uint64_t)(size_t)-1)
        rc = ncf__fail(NCF_ERR_NOMEM, "%s: a file this size cannot be mapped here", path);
    else if ((map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0)) == MAP_FAILED)
        rc = ncf__fail(NCF_ERR_IO, "%s: cannot map: %s", path, strerror(errno));
    else if ((rc = ncf__open_file(map, (size_t)st.st_size, 0, &W, &L, &step, &epoch)) != NCF_OK) {
    } else if (!ncf__file_crc_ok(fd, (size_t)st.st_size))
        rc = ncf__fail(NCF_ERR_PARSE, "model CRC mismatch (the file is damaged)");
    else if (L.flags & NCF__FILE_INT8)
        rc = ncf__fail(NCF_ERR_ARG, "an int8 file only serves: a model shard trains from a float file");
    else if (hi > W->cfg.num_users)
        rc = ncf__fail(NCF_ERR_ARG, "the data has more users than the model's %d", W->cfg.num_users);
    else if ((rc = ncf__shard_of_file((const uint8_t *)map, (size_t)st.st_size, W, &L, lo, hi, out)) == NCF_OK)
        (*out)->step = (int64_t)step, (*out)->epoch = (int64_t)epoch;
    ncf_model_free(W);
    if (map != MAP_FAILED) munmap(map, (size_t)st.st_size);
    close(fd);
    return rc == NCF_OK ? NCF_OK : ncf__prefix_error(rc, path);
#else /* the whole file read, then this rank's rows kept */
    ncf__shard_plan plan;
    int rc = ncf_load(out, path);
    if (rc == NCF_OK && (hi > (*out)->cfg.num_users || ncf__pending(*out)))
        rc = ncf__fail(NCF_ERR_ARG, "%s: the data has more users than the model's %d", path, (*out)->cfg.num_users);
    if (rc == NCF_OK && (rc = ncf__shard_prepare(*out, lo, hi, &plan)) == NCF_OK) ncf__shard_commit(*out, &plan);
    if (rc != NCF_OK) ncf_model_free(*out), *out = NULL;
    return rc;
#endif
}

NCFDEF int ncf_mpi_load(ncf_model **out, const char *path, const ncf_dataset *data, MPI_Comm comm)
{
    ncf_model *m = NULL;
    int lo = 0, hi = 0, rc;
    if (out) *out = NULL;
    if (!out || !path || !data || !data->user_ptr)
        rc = ncf__fail(NCF_ERR_ARG, "ncf_mpi_load: NULL argument, or a dataset not loaded");
    else if ((rc = ncf__my_users(data, comm, &lo, &hi, "ncf_mpi_load")) == NCF_OK)
        rc = ncf__load_shard(path, lo, hi, &m);
    if (rc == NCF_OK && (NCF__USERS(m) != data->num_users || m->cfg.num_items != data->num_items))
        rc = ncf__fail(NCF_ERR_ARG, "ncf_mpi_load: %s has %d users and %d items, the data %d and %d", path,
                       NCF__USERS(m), m->cfg.num_items, data->num_users, data->num_items);
    if ((rc = ncf__mpi_agree(comm, rc)) != NCF_OK) {
        ncf_model_free(m);
        return rc;
    }
    *out = m;
    return NCF_OK;
}

#define NCF__MPI_PIECE 65536 /* floats of a shard's rows in one message to rank 0 as it saves */
#define NCF__MPI_TAG_SAVE 7500

/* A file written in order as it is made, its CRC kept as it goes. */
typedef struct {
    ncf__outfile *out;
    uint32_t crc;
    uint64_t at;
} ncf__stream;

static void ncf__stream_put(ncf__stream *f, const void *p, size_t n)
{
    f->crc = ncf__crc32_more(f->crc, (const uint8_t *)p, n);
    ncf__outfile_write(f->out, p, n);
    f->at += n;
}

static void ncf__stream_floats(ncf__stream *f, const float *x, size_t n)
{
    uint8_t buf[4096];
    ncf__writer w;
    size_t i, j, k;
    for (i = 0; i < n; i += k) {
        k = n - i < sizeof buf / 4 ? n - i : sizeof buf / 4;
        for (w.p = buf, w.at = 0, j = 0; j < k; j++) ncf__put_f32(&w, x[i + j]);
        ncf__stream_put(f, buf, w.at);
    }
}

static void ncf__stream_u64(ncf__stream *f, uint64_t v)
{
    uint8_t b[8];
    ncf__writer w;
    w.p = b, w.at = 0;
    ncf__put_u64(&w, v);
    ncf__stream_put(f, b, 8);
}

static void ncf__stream_zeros_to(ncf__stream *f, uint64_t at)
{
    static const uint8_t zero[8] = {0};
    while (f->at < at) ncf__stream_put(f, zero, at - f->at < 8 ? (size_t)(at - f->at) : 8);
}

/* User table t of block a (0 parameters, 1 and 2 the moments) across the ranks, in user order:
   rank 0 writes each rank's rows as their pieces arrive, the others send theirs. */
static int ncf__save_user_table(const ncf_model *m, int t, const float *block, const int *ranges, int P, int rank,
                                ncf__stream *f, float *piece, MPI_Comm comm)
{
    const float *mine = block + m->tensors[t].offset;
    int r, cols = m->tensors[t].cols, ok = 1;
    for (r = 0; r < P; r++) {
        size_t n = (size_t)(ranges[2 * r + 1] - ranges[2 * r]) * cols, at, k;
        if (r != rank && rank != 0) continue;
        for (at = 0; at < n; at += k) {
            k = n - at < NCF__MPI_PIECE ? n - at : NCF__MPI_PIECE;
            if (rank == 0 && r == 0) ncf__stream_floats(f, mine + at, k);
            else if (rank == 0) {
                ok &= MPI_Recv(piece, (int)k, MPI_FLOAT, r, NCF__MPI_TAG_SAVE + t, comm, MPI_STATUS_IGNORE) ==
                    MPI_SUCCESS;
                ncf__stream_floats(f, piece, k);
            } else ok &= MPI_Send(mine + at, (int)k, MPI_FLOAT, 0, NCF__MPI_TAG_SAVE + t, comm) == MPI_SUCCESS;
        }
    }
    return ok;
}

/* The whole model's file as far as its tensors (header, ids, rated items), on rank 0. W is a
   shell of the whole model's config with the shard's ids. */
static void ncf__save_head(ncf__stream *f, const ncf_model *W, const ncf__layout *L, uint8_t *head)
{
    ncf__writer w;
    uint64_t u;
    int t;
    w.p = head, w.at = 0;
    ncf__put_header(&w, W, L->flags);
    for (t = 0; (L->flags & NCF__FILE_IDS) && t < 2; t++) ncf__put_ids(&w, ncf__model_ids(W, t), L->id_at[t]);
    ncf__stream_put(f, head, (size_t)L->rated);
    if (L->flags & NCF__FILE_RATED) {
        ncf__stream_u64(f, L->nrated);
        for (u = 0; u <= (uint64_t)W->cfg.num_users; u++) ncf__stream_u64(f, (uint64_t)W->rated_ptr[u]);
        ncf__stream_put(f, W->rated, (size_t)L->nrated);
    }
    ncf__stream_zeros_to(f, L->params);
}

/* A shell of the whole model the shard m is part of, its ids and moments borrowed (for the
   file's layout and header: ncf__lend_back returns them). */
static int ncf__whole_shell(const ncf_model *m, ncf_model **W)
{
    ncf_config c = m->cfg;
    int rc;
    c.num_users = m->scratch->mpi.users;
    if ((rc = ncf__model_shell(W, &c)) != NCF_OK) return rc;
    (*W)->step = m->step, (*W)->epoch = m->epoch, (*W)->adam_m = m->adam_m;
    (*W)->raw_user = m->raw_user, (*W)->raw_item = m->raw_item, (*W)->user_text = m->user_text;
    (*W)->item_text = m->item_text, (*W)->user_text_at = m->user_text_at, (*W)->item_text_at = m->item_text_at;
    (*W)->rated_ptr = m->rated_ptr, (*W)->rated = m->rated;
    return NCF_OK;
}

static void ncf__lend_back(ncf_model *W)
{
    if (!W) return;
    W->adam_m = NULL, W->raw_user = W->raw_item = NULL, W->user_text = W->item_text = NULL;
    W->user_text_at = W->item_text_at = NULL, W->rated_ptr = NULL, W->rated = NULL;
    ncf_model_free(W);
}

NCFDEF int ncf_mpi_save(const ncf_model *m, const char *path, int flags, MPI_Comm comm)
{
    ncf_model *W = NULL;
    ncf__layout L;
    ncf__stream f;
    const float *blocks[3];
    float *piece = NULL;
    uint8_t *head = NULL, crc[4];
    int rank = 0, P = 1, rc = NCF_OK, mine[2], *ranges = NULL, adam = 0, a, t, ok = 1;
    memset(&f, 0, sizeof f);
    if (MPI_Comm_rank(comm, &rank) != MPI_SUCCESS || MPI_Comm_size(comm, &P) != MPI_SUCCESS)
        rc = ncf__fail(NCF_ERR_ARG, "ncf_mpi_save: not a valid communicator");
    else if (!m || !m->scratch || !path || !*path) rc = ncf__fail(NCF_ERR_ARG, "ncf_mpi_save: NULL model or path");
    else if (!m->scratch->mpi.users) /* a whole model: rank 0's copy */
        return ncf__mpi_agree(comm, rank == 0 ? ncf_save(m, path, flags) : NCF_OK);
    else if (flags & NCF_SAVE_INT8)
        rc = ncf__fail(NCF_ERR_ARG,
                       "ncf_mpi_save: a model shard is saved as floats (ncf_load the file and ncf_save "
                       "it with NCF_SAVE_INT8)");
    else if ((rc = ncf__savable(m, flags, "ncf_mpi_save")) == NCF_OK) {
        mine[0] = m->scratch->mpi.user0, mine[1] = m->scratch->mpi.user_end;
        if (!(ranges = NCF__NEW(int, 2 * (size_t)P))) rc = ncf__fail(NCF_ERR_NOMEM, "ncf_mpi_save: out of memory");
        else if (rank == 0 && (rc = ncf__whole_shell(m, &W)) == NCF_OK) {
            adam = ncf__save_layout(W, flags, &L);
            head = NCF__ZNEW(uint8_t, (size_t)L.rated), piece = NCF__NEW(float, NCF__MPI_PIECE);
            if (!head || !piece) rc = ncf__fail(NCF_ERR_NOMEM, "ncf_mpi_save: out of memory");
            else rc = ncf__outfile_open(&f.out, path);
        }
    }
    if ((rc = ncf__mpi_agree(comm, rc)) == NCF_OK &&
        MPI_Allgather(mine, 2, MPI_INT, ranges, 2, MPI_INT, comm) != MPI_SUCCESS)
        rc = ncf__fail(NCF_ERR_IO, "ncf_mpi_save: an MPI call failed");
    if ((rc = ncf__mpi_agree(comm, rc)) == NCF_OK) {
        adam = ncf__saves_moments(m, flags);
        blocks[0] = m->params, blocks[1] = m->adam_m, blocks[2] = m->adam_v;
        if (rank == 0) ncf__save_head(&f, W, &L, head);
        for (a = 0; a < (adam ? 3 : 1); a++)
            for (t = 0; t < m->num_tensors; t++) {
                if (t < m->scratch->tables.n)
                    ok &= ncf__save_user_table(m, t, blocks[a], ranges, P, rank, &f, piece, comm);
                else if (rank == 0)
                    ncf__stream_floats(&f, blocks[a] + m->tensors[t].offset,
                                       (size_t)m->tensors[t].rows * m->tensors[t].cols);
            }
        if (rank == 0) {
            ncf__writer w;
            w.p = crc, w.at = 0;
            ncf__put_u32(&w, f.crc);
            if (f.at == L.end) ncf__outfile_write(f.out, crc, 4);
            else
                rc = ncf__fail(NCF_ERR_IO, "ncf_mpi_save: %s: wrote %llu bytes, the layout says %llu", path,
                               (unsigned long long)f.at, (unsigned long long)L.end);
            rc = ok && rc == NCF_OK ? ncf__outfile_commit(f.out)
                                    : (ncf__outfile_discard(f.out), rc != NCF_OK ? rc : NCF_ERR_IO);
            f.out = NULL;
        }
        if (!ok && rc == NCF_OK) rc = NCF_ERR_IO;
        if (rc == NCF_ERR_IO && !ok) rc = ncf__fail(NCF_ERR_IO, "ncf_mpi_save: an MPI call failed");
        rc = ncf__mpi_agree(comm, rc);
    }
    if (f.out) ncf__outfile_discard(f.out);
    ncf__lend_back(W);
    NCF_FREE(head), NCF_FREE(piece), NCF_FREE(ranges);
    return rc;
}
#endif

NCFDEF int ncf_mpi_evaluate(ncf_model *m, const ncf_dataset *d, const ncf_eval_opts *opts, MPI_Comm comm,
                            ncf_metrics *out)
{
    ncf_eval_opts dflt = ncf_eval_opts_default();
    const ncf_eval_opts *o = opts ? opts : &dflt;
    int rank = 0, P = 1, r, rc, mine[2] = {0, 0}, *ranges = NULL, *counts = NULL, *displs = NULL;
    int64_t held = 0, *ranks = NULL;
    rc = MPI_Comm_rank(comm, &rank) == MPI_SUCCESS && MPI_Comm_size(comm, &P) == MPI_SUCCESS
        ? ncf__eval_args(m, d, o, out)
        : ncf__fail(NCF_ERR_ARG, "ncf_mpi_evaluate: not a valid communicator");
    if (rc == NCF_OK && !ncf__is_shard(d) && NCF__MPI_STALE(m)) /* (each rank would score others' users) */
        rc = ncf__fail(NCF_ERR_ARG, "ncf_mpi_evaluate: whole data on every rank: " NCF__STALE_TEXT);
    if (rc == NCF_OK) rc = ncf__shard_matches(m, d, "ncf_mpi_evaluate");
    if (rc == NCF_OK) { /* a shard's users, or (whole data on every rank) an even split */
        mine[0] = ncf__is_shard(d) ? d->shard.user_lo : (int)((int64_t)d->num_users * rank / P);
        mine[1] = ncf__is_shard(d) ? d->shard.user_hi : (int)((int64_t)d->num_users * (rank + 1) / P);
        ranks = NCF__NEW(int64_t, (size_t)d->num_users + 1), ranges = NCF__NEW(int, 2 * (size_t)P);
        counts = NCF__NEW(int, P), displs = NCF__NEW(int, P);
        if (!ranks || !ranges || !counts || !displs) rc = ncf__fail(NCF_ERR_NOMEM, "out of memory for evaluation");
        else held = ncf__eval_held(d, o->target, mine[0], mine[1]);
    }
    if ((rc = ncf__mpi_agree(comm, rc)) != NCF_OK) goto done;
    if (MPI_Allreduce(MPI_IN_PLACE, &held, 1, MPI_INT64_T, MPI_SUM, comm) != MPI_SUCCESS ||
        MPI_Allgather(mine, 2, MPI_INT, ranges, 2, MPI_INT, comm) != MPI_SUCCESS) {
        rc = ncf__fail(NCF_ERR_IO, "ncf_mpi_evaluate: an MPI call failed");
        goto done;
    }
    for (r = 0; r < P; r++) { /* the ranks' users must tile the data in rank order */
        displs[r] = ranges[2 * r], counts[r] = ranges[2 * r + 1] - ranges[2 * r];
        if (displs[r] != (r ? displs[r - 1] + counts[r - 1] : 0) || counts[r] < 0 ||
            (r == P - 1 && displs[r] + counts[r] != d->num_users))
            rc = ncf__fail(NCF_ERR_ARG,
                           "ncf_mpi_evaluate: the ranks' users do not cover the data once in rank "
                           "order (shards made with another communicator?)");
    }
    if (rc == NCF_OK) rc = ncf__eval_ranks(m, d, o, ncf__eval_share(o, held), mine[0], mine[1], ranks + mine[0]);
    if ((rc = ncf__mpi_agree(comm, rc)) != NCF_OK) goto done;
    if (MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, ranks, counts, displs, MPI_INT64_T, comm) != MPI_SUCCESS)
        rc = ncf__fail(NCF_ERR_IO, "ncf_mpi_evaluate: an MPI call failed");
    else ncf__metrics_of(ranks, d->num_users, o->k, out); /* in user order, as one process sums */
done:
    NCF_FREE(ranks);
    NCF_FREE(ranges);
    NCF_FREE(counts);
    NCF_FREE(displs);
    return rc;
}
#endif /* NCF_MPI */
