/* tests/test_file.c - model files: bit-identical round trips, resuming, in place, saved whole. Included by tests.c (one program). */
/* ---- >>persistence: model files: round trips, resuming, corruption, older formats ------------ */

static void test_saved_models_load_bit_identical(void)
{
    ncf_dataset d;
    ncf_model *m, *b = NULL;
    void *buf = NULL;
    size_t len;
    int32_t u[50], it[50];
    float p1[50], p2[50];
    int j;
    const char *path = path_in_dir("model.ncf");
    FILE *f;
    CHECK(ncf_synthetic(&d, 200, 120, 4000, 6, 3) == NCF_OK);
    m = trained_small(&d, 1);
    CHECK(m && m->epoch == 1 && ncf_model_set_ids(m, &d) == NCF_OK);
    if (!m) {
        ncf_dataset_free(&d);
        return;
    }
    CHECK(ncf_save_mem(m, NCF_SAVE_ADAM, &buf, &len) == NCF_OK);
    CHECK(ncf_load_mem(&b, buf, len) == NCF_OK);
    CHECK(b && same_model(m, b, 1) && b->epoch == 1);
    CHECK(b && b->raw_user && !memcmp(b->raw_user, d.raw_user, sizeof(int64_t) * (size_t)d.num_users));
    for (j = 0; j < 50; j++) u[j] = (j * 7) % d.num_users, it[j] = (j * 13) % d.num_items;
    CHECK(ncf_predict_index(m, u, it, 50, p1) == NCF_OK && b && ncf_predict_index(b, u, it, 50, p2) == NCF_OK);
    CHECK(!memcmp(p1, p2, sizeof p1)); /* bit for bit */
    ncf_model_free(b), b = NULL;
    ncf_free(buf);
    /* through a file, without the Adam state: smaller, same parameters */
    CHECK(ncf_save(m, path, NCF_SAVE_MODEL) == NCF_OK);
    CHECK(ncf_load(&b, path) == NCF_OK && b && same_model(m, b, 0) && b->step == m->step);
    CHECK(!(f = fopen(path_in_dir("model.ncf.tmp"), "rb"))); /* no temporary left behind */
    if (f) fclose(f);
    ncf_model_free(b);
    ncf_model_free(m);
    ncf_dataset_free(&d);
}

/* Resuming after epoch 1 from a file gives the model of an unbroken 2-epoch run. */
static void test_resumed_training_equals_an_unbroken_run(void)
{
    ncf_dataset d;
    ncf_model *full, *half, *resumed = NULL;
    ncf_sampler s;
    const char *path = path_in_dir("resume.ncf");
    CHECK(ncf_synthetic(&d, 200, 120, 4000, 6, 4) == NCF_OK);
    full = trained_small(&d, 2);
    half = trained_small(&d, 1);
    CHECK(full && half && ncf_save(half, path, NCF_SAVE_ADAM) == NCF_OK && ncf_load(&resumed, path) == NCF_OK);
    CHECK(ncf_sampler_init(&s, &d, 4, 5) == NCF_OK);
    if (resumed) CHECK(ncf_train_epoch(resumed, &s, (int)resumed->epoch + 1, NULL, NULL, NULL) == NCF_OK);
    CHECK(resumed && full && same_model(full, resumed, 1) && resumed->epoch == 2);
    ncf_model_free(full), ncf_model_free(half), ncf_model_free(resumed);
    ncf_dataset_free(&d);
}

static void test_corrupt_models_refused(void)
{
    ncf_dataset d;
    ncf_model *m, *b = NULL;
    uint8_t *buf, *bad;
    void *vb;
    size_t len, k;
    int accepted = 0, tried = 0;
    CHECK(ncf_synthetic(&d, 60, 40, 900, 4, 3) == NCF_OK);
    m = trained_small(&d, 1);
    if (!m || ncf_model_set_ids(m, &d) != NCF_OK || ncf_save_mem(m, NCF_SAVE_ADAM, &vb, &len) != NCF_OK) {
        g_failed_checks++;
        ncf_model_free(m), ncf_dataset_free(&d);
        return;
    }
    buf = (uint8_t *)vb;
    bad = (uint8_t *)malloc(len);
    /* every truncation: the header's fields, the section boundaries and all between */
    for (k = 0; k < len; k += k < 300 ? 1 : 37) {
        tried++;
        if (ncf_load_mem(&b, buf, k) == NCF_OK) accepted++, ncf_model_free(b);
    }
    CHECKF(accepted == 0, "%d of %d truncations accepted", accepted, tried);
    /* one flipped byte anywhere */
    for (k = 0, accepted = 0; k < len; k += 3) {
        memcpy(bad, buf, len);
        bad[k] ^= 0x20;
        if (ncf_load_mem(&b, bad, len) == NCF_OK) accepted++, ncf_model_free(b);
    }
    CHECKF(accepted == 0, "%d flipped bytes accepted", accepted);
    memcpy(bad, buf, len), bad[0] = 'X';
    CHECK_ERR(ncf_load_mem(&b, bad, len), NCF_ERR_PARSE, "bad magic");
    memcpy(bad, buf, len), set_u32(bad + 4, NCF_FORMAT_VERSION + 1);
    CHECK_ERR(ncf_load_mem(&b, bad, len), NCF_ERR_PARSE, "format version");
    /* sizes that would overflow, with a valid checksum: refused by the size checks */
    memcpy(bad, buf, len), set_u32(bad + 16, 0xFFFFFFF0u);
    set_u32(bad + len - 4, ncf__crc32(bad, len - 4));
    CHECK_ERR(ncf_load_mem(&b, bad, len), NCF_ERR_PARSE, "out-of-range");
    memcpy(bad, buf, len), set_u32(bad + 16, 1u << 30); /* a billion users, in range */
    set_u32(bad + len - 4, ncf__crc32(bad, len - 4));
    CHECK_ERR(ncf_load_mem(&b, bad, len), NCF_ERR_PARSE, "config needs");
    memset(bad, 0, len);
    CHECK_ERR(ncf_load_mem(&b, bad, len), NCF_ERR_PARSE, "bad magic");
    CHECK_ERR(ncf_load(&b, path_in_dir("no_such.ncf")), NCF_ERR_IO, "cannot open");
    CHECK(b == NULL);
    free(bad);
    ncf_free(buf);
    ncf_model_free(m);
    ncf_dataset_free(&d);
}

/* Format 4 adds only the text id tables: a file of integer ids relabelled version 3 (as 0.5
   wrote it) reads and opens in place with the same answers. */
static void test_format_3_files_still_read(void)
{
    ncf_dataset d;
    ncf_model *m = NULL, *v3 = NULL, *v3p = NULL;
    ncf_config c = ncf_config_default();
    void *buf = NULL;
    size_t len = 0;
    uint8_t *p;
    uint32_t crc;
    int64_t a[5], b[5], e[5];
    CHECK(ncf_synthetic(&d, 80, 60, 1600, 4, 2) == NCF_OK);
    c.num_users = d.num_users, c.num_items = d.num_items;
    CHECK(ncf_model_create(&m, &c) == NCF_OK && ncf_model_set_ids(m, &d) == NCF_OK);
    CHECK(ncf_save_mem(m, NCF_SAVE_MODEL, &buf, &len) == NCF_OK);
    p = (uint8_t *)buf;
    CHECK(p[4] == NCF_FORMAT_VERSION && p[5] == 0);
    p[4] = 3;
    crc = ncf__crc32(p, len - 4);
    p[len - 4] = (uint8_t)crc, p[len - 3] = (uint8_t)(crc >> 8), p[len - 2] = (uint8_t)(crc >> 16),
            p[len - 1] = (uint8_t)(crc >> 24);
    CHECKF(ncf_load_mem(&v3, buf, len) == NCF_OK && ncf_model_open(&v3p, buf, len, 0) == NCF_OK, "%s",
           ncf_error_text());
    if (v3 && v3p) {
        CHECK(recommend_k(m, 5, 5, 1, a, NULL) == 5 && recommend_k(v3, 5, 5, 1, b, NULL) == 5 &&
              recommend_k(v3p, 5, 5, 1, e, NULL) == 5 && !memcmp(a, b, sizeof a) && !memcmp(a, e, sizeof a));
    }
    p[4] = NCF_FORMAT_VERSION + 1; /* a version from the future */
    {
        ncf_model *v5 = NULL;
        CHECK_ERR(ncf_load_mem(&v5, buf, len), NCF_ERR_PARSE, "reads versions 2 to 5");
        CHECK(v5 == NULL);
    }
    ncf_model_free(m), ncf_model_free(v3), ncf_model_free(v3p);
    ncf_free(buf);
    ncf_dataset_free(&d);
}

/* ---- >>in-place: models read in place, int8 rows, rated lists -------------------------------- */

/* A model of each type trained a little on synthetic data, with ids; factors > 0 sets mf_dim. */
static ncf_model *serving_model_f(ncf_dataset *d, ncf_model_type type, int factors)
{
    ncf_config c = small_config(type, 0);
    ncf_sampler s;
    ncf_model *m = NULL;
    c.num_users = d->num_users, c.num_items = d->num_items, c.batch_size = 64;
    if (factors > 0) c.mf_dim = factors;
    if (ncf_model_create(&m, &c) != NCF_OK) return NULL;
    if (ncf_sampler_init(&s, d, 4, 9) != NCF_OK || ncf_train_epoch(m, &s, 1, NULL, NULL, NULL) != NCF_OK ||
        ncf_model_set_ids(m, d) != NCF_OK) {
        ncf_model_free(m);
        return NULL;
    }
    return m;
}

static ncf_model *serving_model(ncf_dataset *d, ncf_model_type type) { return serving_model_f(d, type, 0); }

/* An 8-byte aligned copy of a file (malloc aligns to 16), or one shifted by `shift` bytes. */
static uint8_t *copy_at(const void *buf, size_t len, size_t shift, uint8_t **base)
{
    *base = (uint8_t *)malloc(len + 16);
    if (*base) memcpy(*base + shift, buf, len);
    return *base ? *base + shift : NULL;
}

/* Every serving answer of two models, bit for bit: predict, predict_index, recommend with and
   without rated items, the workspace forms (one item's score as an allow-list of one), and
   evaluation. Returns the differences. */
static int serving_differences(ncf_model *a, ncf_model *b, const ncf_dataset *d)
{
    int64_t ia[10], ib[10];
    float sa[10], sb[10], la, lb;
    int32_t us[64], is[64];
    float pa[64], pb[64];
    ncf_metrics ma, mb;
    ncf_rec_opts one = ncf_rec_opts_default();
    size_t wsize;
    void *work;
    int u, j, ex, diff = 0, na, nb;
    int32_t jj = 0;
    one.k = 1, one.exclude_rated = 0, one.allow = &jj, one.num_allow = 1;
    wsize = rec_size_k(b, 10) > ncf_rec_workspace_size(b, &one) ? rec_size_k(b, 10) : ncf_rec_workspace_size(b, &one);
    work = malloc(wsize);
    one.work = work, one.work_size = wsize;
    for (u = 0; u < d->num_users; u += 5) {
        for (ex = 0; ex < 2; ex++) {
            na = recommend_k(a, d->raw_user[u], 10, ex, ia, sa);
            nb = recommend_with_k(b, d->raw_user[u], 10, ex, ib, sb, work, wsize);
            diff += na != nb || memcmp(ia, ib, sizeof(int64_t) * (size_t)(na > 0 ? na : 0)) ||
                memcmp(sa, sb, sizeof(float) * (size_t)(na > 0 ? na : 0));
            nb = recommend_k(b, d->raw_user[u], 10, ex, ib, sb);
            diff += na != nb || memcmp(ia, ib, sizeof(int64_t) * (size_t)(na > 0 ? na : 0)) ||
                memcmp(sa, sb, sizeof(float) * (size_t)(na > 0 ? na : 0));
        }
        j = jj = (u * 13) % d->num_items;
        diff += ncf_predict(a, d->raw_user[u], d->raw_item[j], &la) != NCF_OK ||
            ncf_recommend(b, d->raw_user[u], &one, ia, &lb) != 1 || ia[0] != d->raw_item[j] || memcmp(&la, &lb, 4);
    }
    for (j = 0; j < 64; j++) us[j] = (j * 11) % d->num_users, is[j] = (j * 17) % d->num_items;
    diff += ncf_predict_index(a, us, is, 64, pa) != NCF_OK || ncf_predict_index(b, us, is, 64, pb) != NCF_OK ||
        memcmp(pa, pb, sizeof pa);
    for (ex = 0; ex < 2; ex++) { /* (a dataset may have no sampled negatives: then both refuse) */
        na = evaluate_k(a, d, 10, ex, &ma), nb = evaluate_k(b, d, 10, ex, &mb);
        diff += na != nb || (na == NCF_OK && (ma.hr != mb.hr || ma.ndcg != mb.ndcg || ma.mrr != mb.mrr));
    }
    free(work);
    return diff;
}

/* NCF_OPEN_VERIFIED skips the CRC and the value scan, and nothing else: it answers as
   ncf_model_open does, opens a buffer whose damage only those catch, and refuses every
   truncation and a header that does not match the body. */
static void test_verified_open_skips_only_whole_file_checks(void)
{
    ncf_dataset d;
    int int8, diff = 0, trunc_ok = 0;
    if (!ncf__little_endian()) return; /* (a big-endian host reads a copy, checked) */
    CHECK(ncf_synthetic(&d, 70, 50, 1400, 4, 8) == NCF_OK);
    for (int8 = 0; int8 < 2; int8++) {
        ncf_model *m = serving_model(&d, NCF_NEUMF), *in = NULL, *ver = NULL;
        void *vb = NULL;
        uint8_t *base, *at;
        size_t len = 0, k;
        uint32_t users;
        if (!m || ncf_save_mem(m, int8 ? NCF_SAVE_INT8 : NCF_SAVE_MODEL, &vb, &len) != NCF_OK) {
            g_failed_checks++, ncf_model_free(m);
            continue;
        }
        at = copy_at(vb, len, 0, &base);
        CHECK(ncf_model_open(&in, at, len, 0) == NCF_OK && ncf_model_open(&ver, at, len, NCF_OPEN_VERIFIED) == NCF_OK);
        if (in && ver) diff += serving_differences(in, ver, &d);
        ncf_model_free(in), ncf_model_free(ver), in = ver = NULL;
        set_u32(at + len - 8, 0x7fc00000u); /* b_out NaN, the CRC left stale */
        CHECK_ERR(ncf_model_open(&in, at, len, 0), NCF_ERR_PARSE, "checksum");
        CHECKF(ncf_model_open(&ver, at, len, NCF_OPEN_VERIFIED) == NCF_OK, "%s", ncf_error_text());
        ncf_model_free(ver), ver = NULL;
        for (k = 0; k < len; k += k < 320 ? 1 : 29)
            if (ncf_model_open(&ver, at, k, NCF_OPEN_VERIFIED) == NCF_OK) trunc_ok++, ncf_model_free(ver), ver = NULL;
        memcpy(&users, at + 16, 4), users += 1, memcpy(at + 16, &users, 4); /* one user more than the body holds */
        CHECK_ERR(ncf_model_open(&ver, at, len, NCF_OPEN_VERIFIED), NCF_ERR_PARSE, "its config needs");
        free(base), ncf_free(vb), ncf_model_free(m);
    }
    CHECKF(diff == 0, "%d answers differ between ncf_model_open with flags 0 and NCF_OPEN_VERIFIED", diff);
    CHECKF(trunc_ok == 0, "%d truncated buffers opened unchecked", trunc_ok);
    ncf_dataset_free(&d);
}

/* The in-place tests' cases: a model of every type, float32 and int8, its file, and the file
   copied to an 8-byte aligned buffer. (A big-endian host reads a copy: see the tests.) */
typedef struct {
    ncf_model *m;
    void *file;
    size_t len;
    uint8_t *base, *at;
} in_place_case;

#define IN_PLACE_CASES 8 /* 4 model types x float32, int8 */

static int in_place_case_make(in_place_case *c, ncf_dataset *d, int k)
{
    memset(c, 0, sizeof *c);
    if (!(c->m = serving_model(d, (ncf_model_type)(k / 2))) ||
        ncf_save_mem(c->m, k % 2 ? NCF_SAVE_INT8 : NCF_SAVE_MODEL, &c->file, &c->len) != NCF_OK) {
        g_failed_checks++;
        ncf_model_free(c->m), c->m = NULL;
        return 0;
    }
    c->at = copy_at(c->file, c->len, 0, &c->base);
    return 1;
}

static void in_place_case_free(in_place_case *c) { ncf_model_free(c->m), ncf_free(c->file), free(c->base); }

/* A model read in place answers as the same file copied (ncf_load_mem), bit for bit: predict,
   batches, recommend with and without rated items, the workspace forms, evaluation. */
static void test_in_place_answers_equal_the_copy(void)
{
    ncf_dataset d;
    int k, diff = 0;
    CHECK(ncf_synthetic(&d, 70, 50, 1400, 4, 8) == NCF_OK);
    for (k = 0; k < IN_PLACE_CASES; k++) {
        in_place_case c;
        ncf_model *copy = NULL, *in = NULL;
        if (!in_place_case_make(&c, &d, k)) continue;
        CHECK(ncf_load_mem(&copy, c.at, c.len) == NCF_OK);
        CHECKF(ncf_model_open(&in, c.at, c.len, 0) == NCF_OK, "%s", ncf_error_text());
        if (copy && in) diff += serving_differences(copy, in, &d);
        ncf_model_free(in), ncf_model_free(copy), in_place_case_free(&c);
    }
    CHECKF(diff == 0, "%d answers differ between the in-place and the copied models", diff);
    ncf_dataset_free(&d);
}

/* Opening in place allocates the model record only: no parameter memory. */
static void test_opening_in_place_allocates_no_parameters(void)
{
    ncf_dataset d;
    long most_calls = 0, most_bytes = 0;
    int k;
    if (!ncf__little_endian()) return; /* (a big-endian host copies the file) */
    CHECK(ncf_synthetic(&d, 70, 50, 1400, 4, 8) == NCF_OK);
    for (k = 0; k < IN_PLACE_CASES; k++) {
        in_place_case c;
        ncf_model *in = NULL;
        long calls, bytes;
        if (!in_place_case_make(&c, &d, k)) continue;
        calls = g_alloc_calls, bytes = g_alloc_bytes;
        CHECKF(ncf_model_open(&in, c.at, c.len, 0) == NCF_OK, "%s", ncf_error_text());
        calls = g_alloc_calls - calls, bytes = g_alloc_bytes - bytes;
        CHECKF(calls <= 3 && bytes < 4096, "case %d: opening took %ld allocations, %ld bytes", k, calls, bytes);
        most_calls = calls > most_calls ? calls : most_calls, most_bytes = bytes > most_bytes ? bytes : most_bytes;
        ncf_model_free(in), in_place_case_free(&c);
    }
    printf("    4 model types x float, int8: opening took %ld allocations (%ld bytes) at most\n", most_calls,
           most_bytes);
    ncf_dataset_free(&d);
}

/* The workspace forms serve an in-place model with no allocation, and refuse a workspace one
   byte short of ncf_rec_workspace_size. */
static void test_workspace_forms_allocate_nothing(void)
{
    ncf_dataset d;
    int k;
    CHECK(ncf_synthetic(&d, 70, 50, 1400, 4, 8) == NCF_OK);
    for (k = 0; k < IN_PLACE_CASES; k++) {
        in_place_case c;
        ncf_model *in = NULL;
        size_t ws;
        void *work;
        int64_t items[10];
        float score;
        long calls;
        if (!in_place_case_make(&c, &d, k)) continue;
        if (ncf_model_open(&in, c.at, c.len, 0) != NCF_OK) {
            g_failed_checks++, in_place_case_free(&c);
            continue;
        }
        ws = rec_size_k(in, 10), work = malloc(ws);
        calls = g_alloc_calls;
        CHECK(recommend_with_k(in, d.raw_user[3], 10, 1, items, NULL, work, ws) == 10);
        { /* one item's score: an allow-list of one */
            ncf_rec_opts one = ncf_rec_opts_default();
            int32_t i4 = 4;
            one.k = 1, one.exclude_rated = 0, one.allow = &i4, one.num_allow = 1, one.work = work, one.work_size = ws;
            CHECK(ncf_rec_workspace_size(in, &one) <= ws &&
                  ncf_recommend(in, d.raw_user[3], &one, items, &score) == 1 && items[0] == d.raw_item[4]);
        }
        CHECK_ERR(recommend_with_k(in, d.raw_user[3], 10, 1, items, NULL, work, ws - 1), NCF_ERR_ARG,
                  "ncf_rec_workspace_size");
        calls = g_alloc_calls - calls;
        CHECKF(calls == 0, "case %d: the workspace forms made %ld allocations", k, calls);
        { /* lists of 20 and 12 items, given unsorted, and a fold-in of 20: sorted in place */
            ncf_rec_opts ro = ncf_rec_opts_default();
            ncf_fold_opts fo = ncf_fold_opts_default();
            int32_t allow[20], deny[12], top[10], like[10], like_heap[10], j, n_like, n_heap;
            float sc[10], row[256], like_sc[10], heap_sc[10];
            size_t rs, fs;
            void *rw, *fw;
            for (j = 0; j < 20; j++) allow[j] = (int32_t)((j * 17 + 5) % in->cfg.num_items);
            for (j = 0; j < 12; j++) deny[j] = (int32_t)((j * 7 + 3) % in->cfg.num_items);
            ro.allow = allow, ro.num_allow = 20, ro.deny = deny, ro.num_deny = 12;
            rs = ncf_rec_workspace_size(in, &ro), fs = ncf_fold_workspace_size(in, 20);
            rw = malloc(rs), fw = malloc(fs);
            ro.work = rw, ro.work_size = rs, fo.work = fw, fo.work_size = fs, fo.steps = 2;
            calls = g_alloc_calls;
            CHECK(ncf_recommend_index(in, 3, &ro, top, sc) > 0);
            CHECK(ncf_row_size(in) <= 256 && ncf_fold_in(in, NCF_USER, allow, 20, &fo, row) == NCF_OK);
            n_like = ncf_similar(in, NCF_ITEM, 7, &ro, like, like_sc);
            calls = g_alloc_calls - calls;
            CHECKF(calls == 0, "case %d: lists, a fold-in and similar items in workspaces made %ld allocations", k,
                   calls);
            ro.work = NULL, n_heap = ncf_similar(in, NCF_ITEM, 7, &ro, like_heap, heap_sc);
            CHECKF(n_like > 0 && n_like == n_heap && !memcmp(like, like_heap, sizeof(int32_t) * (size_t)n_like) &&
                       !memcmp(like_sc, heap_sc, sizeof(float) * (size_t)n_like),
                   "case %d: similar items %d in a workspace, %d "
                   "from the heap",
                   k, n_like, n_heap);
            ro.work = rw, ro.work_size = rs - 1;
            CHECK_ERR(ncf_similar(in, NCF_ITEM, 7, &ro, like, like_sc), NCF_ERR_ARG, "ncf_rec_workspace_size");
            free(rw), free(fw);
        }
        free(work), ncf_model_free(in), in_place_case_free(&c);
    }
    ncf_dataset_free(&d);
}

/* A model read in place only serves (training and new ids refused; nothing of the buffer is
   freed, which ASan would see), and saving it gives the file it was read from. */
/* ncf_model_read_file gives ncf_model_open the block it wants: the model read in place answers
   as the file loaded by copy; a folder, a missing file and a file that is no model are refused
   with nothing to free. */
static void test_model_read_file_opens_in_place(void)
{
    ncf_dataset d;
    ncf_model *m = small_trained_model(&d, NCF_NEUMF, 60, 40), *copy = NULL, *in = NULL;
    void *buf = (void *)&d;
    size_t len = 1;
    int32_t a[10], b[10];
    float sa[10], sb[10];
    ncf_rec_opts o = ncf_rec_opts_default();
    const char *path = path_in_dir("read_file.ncf");
    FILE *f;
    CHECK(m && ncf_save(m, path, NCF_SAVE_MODEL) == NCF_OK && ncf_load(&copy, path) == NCF_OK);
    CHECK(ncf_model_read_file(path, &buf, &len) == NCF_OK && (uintptr_t)buf % 8 == 0 &&
          ncf_model_open(&in, buf, len, 0) == NCF_OK);
    CHECK(ncf_recommend_index(copy, 5, &o, a, sa) == 10 && ncf_recommend_index(in, 5, &o, b, sb) == 10);
    CHECK(!memcmp(a, b, sizeof a) && !memcmp(sa, sb, sizeof sa));
    ncf_model_free(in), ncf_free(buf);
#ifndef _WIN32 /* (Windows opens no folder as a file either, in its own words) */
    CHECK_ERR(ncf_model_read_file(g_dir, &buf, &len), NCF_ERR_IO, "is a directory");
    CHECK(buf == NULL && len == 0);
#endif
    CHECK_ERR(ncf_model_read_file(path_in_dir("no_such.ncf"), &buf, &len), NCF_ERR_IO, "no_such.ncf");
    CHECK((f = fopen(path_in_dir("not_a_model.ncf"), "wb")) != NULL && fputs("user,item\\n1,2\\n", f) >= 0 &&
          fclose(f) == 0);
    CHECK_ERR(ncf_model_read_file(path_in_dir("not_a_model.ncf"), &buf, &len), NCF_ERR_PARSE, "bad magic");
    CHECK(buf == NULL);
    ncf_model_free(m), ncf_model_free(copy), ncf_dataset_free(&d);
}

static void test_in_place_models_only_serve_and_save_their_file(void)
{
    ncf_dataset d;
    int k;
    if (!ncf__little_endian()) return; /* (a big-endian host copies the file: that one trains) */
    CHECK(ncf_synthetic(&d, 70, 50, 1400, 4, 8) == NCF_OK);
    for (k = 0; k < IN_PLACE_CASES; k++) {
        in_place_case c;
        ncf_model *in = NULL;
        int32_t u0 = 0, i0 = 0;
        float y = 1;
        double loss;
        void *again = NULL;
        size_t alen = 0;
        if (!in_place_case_make(&c, &d, k)) continue;
        if (ncf_model_open(&in, c.at, c.len, 0) != NCF_OK) {
            g_failed_checks++, in_place_case_free(&c);
            continue;
        }
        CHECK_ERR(ncf_train_step(in, &u0, &i0, &y, 1, &loss), NCF_ERR_ARG, "read in place");
        CHECK_ERR(ncf_model_set_ids(in, &d), NCF_ERR_ARG, "read in place");
        ncf_update(in), ncf__zero_grad(in);
        CHECK(ncf_save_mem(in, k % 2 ? NCF_SAVE_INT8 : NCF_SAVE_MODEL, &again, &alen) == NCF_OK && alen == c.len &&
              !memcmp(again, c.file, c.len));
        ncf_free(again), ncf_model_free(in), in_place_case_free(&c);
    }
    ncf_dataset_free(&d);
}

/* What cannot be read in place is refused: a misaligned buffer, every truncation, ids that do
   not ascend (which a copy reads). */
static void test_unreadable_buffers_refused_in_place(void)
{
    ncf_dataset d;
    int k, trunc_ok = 0, refused = 0, copies = !ncf__little_endian(); /* big-endian: a copy */
    CHECK(ncf_synthetic(&d, 70, 50, 1400, 4, 8) == NCF_OK);
    for (k = 0; k < IN_PLACE_CASES; k++) {
        in_place_case c;
        ncf_model *in = NULL;
        uint8_t *base, *at;
        size_t n;
        if (!in_place_case_make(&c, &d, k)) continue;
        at = copy_at(c.file, c.len, 4, &base);
        if (!copies) CHECK_ERR(ncf_model_open(&in, at, c.len, 0), NCF_ERR_ARG, "not 8-byte aligned");
        free(base);
        for (n = 0; n < c.len; n += n < 320 ? 1 : 29, refused++)
            if (ncf_model_open(&in, c.at, n, 0) == NCF_OK) trunc_ok++, ncf_model_free(in), in = NULL;
        in_place_case_free(&c);
    }
    CHECKF(trunc_ok == 0, "%d of %d truncated buffers opened", trunc_ok, refused);
    {
        ncf_model *m = serving_model(&d, NCF_NEUMF), *in = NULL, *copy = NULL;
        void *vb = NULL;
        uint8_t *base, *at;
        size_t len = 0;
        int64_t t;
        if (m) t = m->raw_item[0], m->raw_item[0] = m->raw_item[1], m->raw_item[1] = t;
        CHECK(m && ncf_save_mem(m, NCF_SAVE_MODEL, &vb, &len) == NCF_OK);
        at = copy_at(vb, len, 0, &base);
        CHECK(ncf_load_mem(&copy, at, len) == NCF_OK);
        if (!copies) CHECK_ERR(ncf_model_open(&in, at, len, 0), NCF_ERR_PARSE, "do not ascend");
        ncf_model_free(copy), ncf_model_free(in), free(base), ncf_free(vb), ncf_model_free(m);
    }
    printf("    %d truncations refused\n", refused);
    ncf_dataset_free(&d);
}

/* int8 rows by hand: scale = max |x| / 127, q rounded half away from zero, and serving uses
   scale * q. The file is about 4x smaller where embeddings dominate, and each dequantized value
   is within half a step of the float one. */
static void test_int8_rows_match_hand_quantization(void)
{
    static const float row[8] = {0.5f, -0.254f, 0.0f, 1.27f, -1.27f, 0.005f, -0.0049f, 0.3333f};
    float sc = ncf__row_scale(row, 8), worst = 0, want = 1.27f / 127.0f; /* (stored: s390x computes floats in
                                                                               double until they are) */
    ncf_dataset d;
    ncf_model *m, *q = NULL;
    void *f32 = NULL, *i8 = NULL;
    size_t l32 = 0, l8 = 0, i;
    int j;
    CHECK(sc == want);
    CHECK(ncf__quantize(row[0], sc) == 50 && ncf__quantize(row[1], sc) == -25 && ncf__quantize(row[2], sc) == 0);
    CHECK(ncf__quantize(row[3], sc) == 127 && ncf__quantize(row[4], sc) == -127);
    CHECK(ncf__quantize(row[5], sc) == 1 && ncf__quantize(row[6], sc) == 0); /* 0.5 -> 1, 0.49 -> 0 */
    CHECK(ncf__quantize(5.0f, 0.0f) == 0);
    CHECK(ncf_synthetic(&d, 400, 300, 6000, 4, 2) == NCF_OK);
    m = serving_model_f(&d, NCF_GMF, 32);
    CHECK(m && ncf_save_mem(m, NCF_SAVE_NO_RATED, &f32, &l32) == NCF_OK &&
          ncf_save_mem(m, NCF_SAVE_INT8 | NCF_SAVE_NO_RATED, &i8, &l8) == NCF_OK);
    CHECK(m && ncf_load_mem(&q, i8, l8) == NCF_OK);
    for (i = 0; m && q && i < (size_t)(d.num_users + d.num_items); i++) {
        const float *x = i < (size_t)d.num_users ? m->gmf_user + i * 32 : m->gmf_item + (i - d.num_users) * 32;
        const float *y = i < (size_t)d.num_users ? q->gmf_user + i * 32 : q->gmf_item + (i - d.num_users) * 32;
        float s = ncf__row_scale(x, 32);
        for (j = 0; j < 32; j++) {
            float e = fabsf(x[j] - y[j]);
            if (e > 0) worst = e / s > worst ? e / s : worst;
            want = s * (float)ncf__quantize(x[j], s);
            CHECK(y[j] == want);
        }
    }
    CHECKF(worst <= 0.5001f, "a dequantized value is %.4f steps from its float", worst);
    CHECKF(l8 * 3 < l32, "int8 file %lu bytes, float %lu", (unsigned long)l8, (unsigned long)l32);
    CHECK_ERR(ncf_save_mem(m, NCF_SAVE_INT8 | NCF_SAVE_ADAM, &i8, &l8), NCF_ERR_ARG, "no Adam");
    printf("    GMF factors 32, %d x %d, no rated items: float file %lu bytes, int8 %lu (%.2fx); worst error %.3f of a "
           "step\n",
           d.num_users, d.num_items, (unsigned long)l32, (unsigned long)l8, (double)l32 / l8, worst);
    ncf_free(f32), ncf_free(i8);
    ncf_model_free(m), ncf_model_free(q);
    ncf_dataset_free(&d);
}

/* A version 2 file (0.2.x: rated items as counts and 32-bit items, no padding), written here
   as 0.2 wrote it, loads by copy with the same answers. */
static size_t write_v2(const ncf_model *m, uint8_t *out)
{
    ncf__writer w;
    size_t i, nrated = 0;
    int u;
    w.p = out;
    ncf__put_header(&w, m, NCF__FILE_IDS | NCF__FILE_RATED);
    set_u32(out + 4, 2), w.at = NCF__HEADER_BYTES; /* (format 2: no padding, no unobserved weight) */
    for (u = 0; u < m->cfg.num_users; u++) {
        ncf__rated_cursor c;
        ncf__rated_from(&c, m, u, 0);
        for (; c.next != INT32_MAX; ncf__rated_step(&c)) nrated++;
    }
    for (i = 0; i < (size_t)m->cfg.num_users; i++) ncf__put_u64(&w, (uint64_t)m->raw_user[i]);
    for (i = 0; i < (size_t)m->cfg.num_items; i++) ncf__put_u64(&w, (uint64_t)m->raw_item[i]);
    ncf__put_u64(&w, nrated);
    for (u = 0; u < m->cfg.num_users; u++) {
        ncf__rated_cursor c;
        uint32_t n = 0;
        ncf__rated_from(&c, m, u, 0);
        for (; c.next != INT32_MAX; ncf__rated_step(&c)) n++;
        ncf__put_u32(&w, n);
    }
    for (u = 0; u < m->cfg.num_users; u++) {
        ncf__rated_cursor c;
        ncf__rated_from(&c, m, u, 0);
        for (; c.next != INT32_MAX; ncf__rated_step(&c)) ncf__put_u32(&w, (uint32_t)c.next);
    }
    for (i = 0; i < m->num_params; i++) ncf__put_f32(&w, m->params[i]);
    ncf__put_u32(&w, ncf__crc32(w.p, w.at));
    return w.at;
}

static void test_rated_lists_hold_exactly_the_users_items(void)
{
    ncf_dataset d;
    ncf_model *m, *v2 = NULL, *none = NULL;
    uint8_t *old;
    void *with = NULL, *without = NULL;
    size_t lold, lwith = 0, lwithout = 0;
    int u, bad = 0, rated = 0;
    int64_t items[400];
    CHECK(ncf_synthetic(&d, 90, 400, 5000, 4, 4) == NCF_OK);
    m = serving_model(&d, NCF_NEUMF);
    if (!m) {
        g_failed_checks++;
        ncf_dataset_free(&d);
        return;
    }
    for (u = 0; u < d.num_users; u++) { /* the stream holds exactly the user's training and test items */
        ncf__rated_cursor c;
        int j, n = 0;
        ncf__rated_from(&c, m, u, 0);
        for (j = 0; j < d.num_items; j++) {
            int is = c.next == j;
            if (is) ncf__rated_step(&c), n++;
            bad += is != is_rated(&d, u, j);
        }
        rated += n;
        bad += c.next != INT32_MAX;
        ncf__rated_from(&c, m, u, d.num_items / 2); /* started midway */
        for (j = d.num_items / 2; j < d.num_items && !is_rated(&d, u, j); j++) {}
        bad += c.next != (j < d.num_items ? j : INT32_MAX);
    }
    CHECKF(bad == 0, "%d rated-item differences", bad);
    old = (uint8_t *)malloc(400000);
    lold = write_v2(m, old);
    CHECKF(ncf_load_mem(&v2, old, lold) == NCF_OK, "%s", ncf_error_text());
    if (ncf__little_endian())
        CHECK_ERR(ncf_model_open(&none, old, lold, 0), NCF_ERR_PARSE, "not laid out to be read in place");
    CHECK(v2 && serving_differences(m, v2, &d) == 0);
    CHECK(v2 && v2->rated_ptr[d.num_users] == m->rated_ptr[d.num_users] &&
          !memcmp(v2->rated, m->rated, (size_t)m->rated_ptr[d.num_users]));
    CHECK(ncf_save_mem(m, NCF_SAVE_MODEL, &with, &lwith) == NCF_OK &&
          ncf_save_mem(m, NCF_SAVE_NO_RATED, &without, &lwithout) == NCF_OK);
    CHECK(ncf_load_mem(&none, without, lwithout) == NCF_OK && none && !none->rated);
    /* without the lists exclude_rated has nothing to skip: the whole catalogue comes back */
    CHECK(none && recommend_k(none, d.raw_user[0], 400, 1, items, NULL) == d.num_items);
    printf("    %d rated items: %lu bytes as varints (%.2f a item) against %d in version 2; the file %lu -> %lu "
           "bytes without them\n",
           rated, (unsigned long)m->rated_ptr[d.num_users], (double)m->rated_ptr[d.num_users] / rated,
           4 * rated + 4 * d.num_users, (unsigned long)lwith, (unsigned long)lwithout);
    free(old), ncf_free(with), ncf_free(without);
    ncf_model_free(m), ncf_model_free(v2), ncf_model_free(none);
    ncf_dataset_free(&d);
}

/* The model the save tests write: trained a little, with Adam's moments. */
static ncf_model *save_test_model(ncf_dataset *d)
{
    CHECK(ncf_synthetic(d, 80, 50, 1500, 4, 2) == NCF_OK);
    return trained_small(d, 1);
}

/* ---- >>saving: a save replaces the file whole, or leaves it as it was ------------------------ */

/* ncf_save replaces the file at its path whole (Windows' rename would not), also when two
   processes save to it at once, leaves no temporary file, and names a path it cannot write. */
static void test_saves_replace_the_file_whole(void)
{
    ncf_dataset d;
    ncf_model *m = save_test_model(&d), *back = NULL;
    const char *path = path_in_dir("safe.ncf");
    if (!m) {
        ncf_dataset_free(&d);
        return;
    }
    CHECK(ncf_save(m, path, NCF_SAVE_ADAM) == NCF_OK);
    m->params[0] += 1.0f;
    CHECKF(ncf_save(m, path, NCF_SAVE_ADAM) == NCF_OK, "%s", ncf_error_text());
    CHECK(ncf_load(&back, path) == NCF_OK && back && same_model(m, back, 1));
    ncf_model_free(back), back = NULL;
    CHECK(files_in_dir(g_dir, "safe.ncf.tmp", 0) == 0);
    CHECK_ERR(ncf_save(m, path_in_dir("no_such_dir/x.ncf"), NCF_SAVE_MODEL), NCF_ERR_IO, "no_such_dir/x.ncf");
#ifndef _WIN32
    CHECK_ERR(ncf_load(&back, "/dev/zero"), NCF_ERR_IO, "/dev/zero: is a device, not a file"); /* not read forever */
    { /* two processes saving 40 times each to one path: every save succeeds, the file stays whole */
        pid_t pid = fork();
        int k, failed = 0, status = 0;
        for (k = 0; k < 40; k++) failed += ncf_save(m, path, NCF_SAVE_ADAM) != NCF_OK;
        if (pid == 0) _exit(failed ? 1 : 0);
        CHECK(pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0);
        CHECKF(failed == 0, "%d of 40 saves failed", failed);
        CHECK(ncf_load(&back, path) == NCF_OK && back && same_model(m, back, 1));
        ncf_model_free(back), back = NULL;
        CHECK(files_in_dir(g_dir, "safe.ncf.tmp", 0) == 0);
    }
#endif
    remove(path);
    ncf_model_free(m);
    ncf_dataset_free(&d);
}

#ifndef _WIN32
/* A saved file keeps the permissions the file it replaces had. */
static void test_save_keeps_the_file_permissions(void)
{
    ncf_dataset d;
    ncf_model *m = save_test_model(&d);
    const char *path = path_in_dir("modes.ncf");
    struct stat st;
    int mode;
    if (!m) {
        ncf_dataset_free(&d);
        return;
    }
    CHECK(ncf_save(m, path, NCF_SAVE_MODEL) == NCF_OK);
    for (mode = 0600; mode <= 0640; mode += 040) {
        CHECK(chmod(path, (mode_t)mode) == 0 && ncf_save(m, path, NCF_SAVE_MODEL) == NCF_OK);
        CHECKF(stat(path, &st) == 0 && (st.st_mode & 0777) == (mode_t)mode, "mode %o became %o", mode,
               (unsigned)(st.st_mode & 0777));
    }
    remove(path);
    ncf_model_free(m);
    ncf_dataset_free(&d);
}

/* A link planted at the old fixed temporary name PATH.tmp is not followed. */
static void test_save_follows_no_planted_link(void)
{
    ncf_dataset d;
    ncf_model *m = save_test_model(&d);
    const char *path = path_in_dir("planted.ncf");
    char victim[300], text[16] = {0}, link_path[300];
    FILE *f;
    if (!m) {
        ncf_dataset_free(&d);
        return;
    }
    write_file("victim.txt", "keep me\n");
    snprintf(victim, sizeof victim, "%s", path_in_dir("victim.txt"));
    snprintf(link_path, sizeof link_path, "%s.tmp", path);
    CHECK(symlink(victim, link_path) == 0 && ncf_save(m, path, NCF_SAVE_MODEL) == NCF_OK);
    f = fopen(victim, "rb");
    CHECK(f && fread(text, 1, sizeof text - 1, f) == 8 && !strcmp(text, "keep me\n"));
    if (f) fclose(f);
    remove(link_path), remove(victim), remove(path);
    ncf_model_free(m);
    ncf_dataset_free(&d);
}

/* A save that fails mid-write (here the file size limit) leaves the old model, no temporary
   file, and says why with the path. */
static void test_failed_save_leaves_the_old_model(void)
{
    ncf_dataset d;
    ncf_model *m = save_test_model(&d), *back = NULL;
    const char *path = path_in_dir("safe.ncf");
    struct rlimit old = {0, 0}, small;
    float keep;
    int rc;
    if (!m) {
        ncf_dataset_free(&d);
        return;
    }
    CHECK(ncf_save(m, path, NCF_SAVE_ADAM) == NCF_OK && getrlimit(RLIMIT_FSIZE, &old) == 0);
    small = old, small.rlim_cur = 4096;
    signal(SIGXFSZ, SIG_IGN);
    keep = m->params[0], m->params[0] += 1.0f;
    CHECK(setrlimit(RLIMIT_FSIZE, &small) == 0);
    rc = ncf_save(m, path, NCF_SAVE_ADAM);
    CHECK(setrlimit(RLIMIT_FSIZE, &old) == 0);
    CHECKF(rc == NCF_ERR_IO && strstr(ncf_error_text(), "safe.ncf") && strstr(ncf_error_text(), strerror(EFBIG)),
           "rc %d: %s", rc, ncf_error_text());
    m->params[0] = keep;
    CHECK(ncf_load(&back, path) == NCF_OK && back && same_model(m, back, 1));
    ncf_model_free(back);
    CHECK(files_in_dir(g_dir, "safe.ncf.tmp", 0) == 0);
    remove(path);
    ncf_model_free(m);
    ncf_dataset_free(&d);
}
#endif
