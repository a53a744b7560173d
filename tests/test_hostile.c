/* tests/test_hostile.c - hostile input and failed allocations, across every stage. Included by tests.c (one program). */
/* ---- >>hostile: hostile files and arguments: memory bounded, values refused ------------------ */
static void set_u32(uint8_t *p, uint32_t v);

/* What evaluation and serving allocate is bounded by the model and the threads, not by the
   catalogue times the widest layer (0.6.1 held items x widest x 2 floats a thread, 98 MB a
   thread here): at most 16 bytes a parameter (the item projection's cap) and, a thread,
   1 MB and 32 items' activations and 8 bytes an item. Checked by the allocator's count of
   every byte asked for, for 1 and 2 threads, with the answers unchanged. */
static void test_evaluation_and_serving_memory_bounded_by_the_model_and_threads(void)
{
    ncf_dataset d;
    ncf_config c = ncf_config_default();
    ncf_model *m = NULL;
    ncf_metrics full[2], sampled[2];
    ncf_rec_opts ro = ncf_rec_opts_default();
    int32_t items[50 * 10];
    float scores[50 * 10];
    int64_t top[10];
    int counts[50], t, threads = ncf_set_threads(0);
    CHECK(ncf_synthetic(&d, 50, 3000, 1500, 4, 1) == NCF_OK && ncf_sample_eval_negatives(&d, 99, 1) == NCF_OK);
    c.num_users = d.num_users, c.num_items = d.num_items, c.num_layers = 3;
    c.layers[0] = 16, c.layers[1] = 4096, c.layers[2] = 8; /* a 4,096-wide layer over 3,000 items */
    CHECK(ncf_model_create(&m, &c) == NCF_OK && ncf_model_set_ids(m, &d) == NCF_OK);
    for (t = 1; m && t <= 2; t++) {
        double per_thread = 1048576.0 + 128.0 * (2 * 4096 + 8 + 1) + 8.0 * d.num_items + 65536;
        double bound = 16.0 * (double)m->num_params + t * per_thread;
        long before;
        ncf_set_threads(t);
        before = g_alloc_bytes;
        CHECK(evaluate_k(m, &d, 10, NCF_FULL_RANKING, &full[t - 1]) == NCF_OK);
        CHECK(evaluate_k(m, &d, 10, NCF_SAMPLED, &sampled[t - 1]) == NCF_OK);
        CHECKF(g_alloc_bytes - before <= bound, "%d threads: evaluation asked for %ld bytes, bound %.0f", t,
               g_alloc_bytes - before, bound);
        printf("    %d thread%s: evaluation asked for %.1f MB (bound %.1f MB)", t, t > 1 ? "s" : "",
               (g_alloc_bytes - before) / 1e6, bound / 1e6);
        before = g_alloc_bytes;
        ro.k = 10;
        CHECK(ncf_recommend_users(m, NULL, d.num_users, &ro, items, scores, counts) == NCF_OK);
        CHECK(recommend_k(m, d.raw_user[3], 10, 1, top, NULL) == 10);
        CHECKF(g_alloc_bytes - before <= t * per_thread, "%d threads: serving asked for %ld bytes", t,
               g_alloc_bytes - before);
        printf(", serving %.1f MB\n", (g_alloc_bytes - before) / 1e6);
    }
    CHECK(full[0].hr == full[1].hr && full[0].ndcg == full[1].ndcg && full[0].mrr == full[1].mrr &&
          full[0].users == full[1].users);
    CHECK(sampled[0].hr == sampled[1].hr && sampled[0].ndcg == sampled[1].ndcg && sampled[0].mrr == sampled[1].mrr);
    ncf_set_threads(threads);
    ncf_model_free(m), ncf_dataset_free(&d);
}

/* A small CRC-valid model file can no longer make loading allocate out of proportion: an MLP
   of 1-wide item embeddings under a 65,536-wide layer would have cached items x 65,536 floats. */
static void test_memory_bounded_by_the_model_file(void)
{
    ncf_config c = ncf_config_default();
    ncf_model *m = NULL, *back = NULL;
    void *buf = NULL;
    size_t len = 0;
    long before;
    int64_t top[3];
    c.model = NCF_MLP, c.num_users = 4, c.num_items = 3000, c.num_layers = 2, c.layers[0] = 2, c.layers[1] = 65536;
    CHECK(ncf_model_create(&m, &c) == NCF_OK && ncf_save_mem(m, NCF_SAVE_MODEL, &buf, &len) == NCF_OK);
    before = g_alloc_bytes;
    CHECKF(ncf_load_mem(&back, buf, len) == NCF_OK, "%s", ncf_error_text());
    printf("    a %lu-byte file: loading allocated %ld bytes (the projection cache would take %lu)\n",
           (unsigned long)len, g_alloc_bytes - before, (unsigned long)(3000ul * 65536 * 4));
    CHECK(g_alloc_bytes - before < 4 * (long)len + (8 << 20));
    CHECK(back &&
          ncf_recommend_index(back, 0, &(ncf_rec_opts){3, 0, NULL, 0, NULL, 0, NULL, 0, NULL, 0, 0}, (int32_t *)top,
                              NULL) == 3);
    ncf_model_free(m), ncf_model_free(back), ncf_free(buf);
}

/* x solving A x = b by Gaussian elimination with partial pivoting (A [K][K], destroyed): the
   ALS fold-in's least squares by hand. */
static void solve_by_hand(double *A, double *b, int K, double *x)
{
    int i, j, k;
    for (k = 0; k < K; k++) {
        int p = k;
        for (i = k + 1; i < K; i++)
            if (fabs(A[(size_t)i * K + k]) > fabs(A[(size_t)p * K + k])) p = i;
        for (j = 0; j < K; j++) {
            double t = A[(size_t)k * K + j];
            A[(size_t)k * K + j] = A[(size_t)p * K + j], A[(size_t)p * K + j] = t;
        }
        x[0] = b[k], b[k] = b[p], b[p] = x[0];
        for (i = k + 1; i < K; i++) {
            double f = A[(size_t)i * K + k] / A[(size_t)k * K + k];
            for (j = k; j < K; j++) A[(size_t)i * K + j] -= f * A[(size_t)k * K + j];
            b[i] -= f * b[k];
        }
    }
    for (i = K - 1; i >= 0; i--) {
        double v = b[i];
        for (j = i + 1; j < K; j++) v -= A[(size_t)i * K + j] * x[j];
        x[i] = v / A[(size_t)i * K + i];
    }
}

/* An ALS model's fold-in costs what the other side's table holds, never mf_dim^2 memory and
   mf_dim^3 time from a file of a few rows (4096 factors, one item: 128 MB and 17-27 s of CPU a
   fold-in in 0.7); with fewer rows than factors its row is still the least squares' (by hand). */
static void test_fold_in_cost_bounded_by_the_model_file(void)
{
    ncf_config c = ncf_config_default();
    ncf_model *m = NULL;
    int32_t given[2] = {1, 3}, one = 0;
    int K, a, b, j, worst_at = 0;
    double worst = 0;
    c.model = NCF_MF, c.optimizer = NCF_OPT_ALS, c.num_users = 3, c.num_items = 5, c.mf_dim = 64, c.mf_reg = 0.5f;
    c.unobserved = 0.1f, c.init_sd = 0.3f;
    CHECKF(ncf_model_create(&m, &c) == NCF_OK, "%s", ncf_error_text());
    if (!m) return;
    K = c.mf_dim;
    {
        double *A = (double *)calloc((size_t)K * K, sizeof(double)),
               *v = (double *)calloc(2 * (size_t)K, sizeof(double));
        float *row = (float *)malloc(sizeof(float) * (size_t)ncf_row_size(m));
        CHECK(A && v && row && ncf_fold_in(m, NCF_USER, given, 2, NULL, row) == NCF_OK);
        for (j = 0; A && v && row && j < c.num_items; j++) { /* w0 G + reg I + (1 - w0) sum y y^T; b = sum y */
            const float *y = m->gmf_item + (size_t)j * K;
            double w = j == 1 || j == 3 ? 1.0 : (double)c.unobserved;
            for (a = 0; a < K; a++) {
                for (b = 0; b < K; b++) A[(size_t)a * K + b] += w * y[a] * y[b];
                if (w == 1.0) v[a] += y[a];
            }
        }
        for (a = 0; A && v && row && a < K; a++) A[(size_t)a * K + a] += c.mf_reg;
        if (A && v && row) {
            solve_by_hand(A, v, K, v + K);
            for (a = 0; a < K; a++) {
                double e = fabs(row[a] - v[K + a]) / (fabs(v[K + a]) + 1e-3);
                if (e > worst) worst = e, worst_at = a;
            }
            CHECKF(worst < 1e-4, "factor %d: %g against %g by hand", worst_at, row[worst_at], v[K + worst_at]);
            CHECK(row[K] == 0.0f);
        }
        free(A), free(v), free(row);
    }
    ncf_model_free(m), m = NULL;
    c.num_users = 1, c.num_items = 1, c.mf_dim = 4096; /* (a file of 2 rows) */
    CHECKF(ncf_model_create(&m, &c) == NCF_OK, "%s", ncf_error_text());
    if (m) {
        float *row = (float *)malloc(sizeof(float) * (size_t)ncf_row_size(m));
        long before = g_alloc_bytes;
        size_t work = ncf_fold_workspace_size(m, 1);
        CHECK(row && ncf_fold_in(m, NCF_USER, &one, 1, NULL, row) == NCF_OK);
        CHECK(row && ncf_fold_in(m, NCF_ITEM, &one, 1, NULL, row) == NCF_OK);
        printf("    4096 factors, 1 user, 1 item: a fold-in's workspace %lu bytes (4096^2 doubles: %lu), "
               "%ld allocated\n",
               (unsigned long)work, 4096ul * 4096 * 8, g_alloc_bytes - before);
        CHECK(work < (1u << 20) && g_alloc_bytes - before < 2 * (1 << 20)); /* (two fold-ins) */
        free(row);
    }
    ncf_model_free(m);
}

/* Every call that takes an array with its length reads nothing of an empty one: each gets a
   zero-byte block (the ASan build reports any read of it) and returns OK or a refusal. */
static void test_empty_arrays_read_nothing(void)
{
    ncf_dataset d;
    ncf_config c = ncf_config_default();
    ncf_model *m = NULL;
    ncf_rec_opts o = ncf_rec_opts_default();
    ncf_eval_opts eo = ncf_eval_opts_default();
    int32_t *none = (int32_t *)calloc(0, sizeof(int32_t)), out[4];
    float *fnone = (float *)calloc(0, sizeof(float)), row[64], z[4];
    int64_t *lnone = (int64_t *)calloc(0, sizeof(int64_t)), ids[4];
    ncf_metrics mt;
    double loss;
    int counts[1] = {-7}, rc;
    CHECK(ncf_synthetic(&d, 30, 20, 300, 4, 3) == NCF_OK && ncf_sample_eval_negatives(&d, 5, 1) == NCF_OK);
    c.num_users = d.num_users, c.num_items = d.num_items;
    CHECK(ncf_model_create(&m, &c) == NCF_OK && m);
    if (!m || !none || !fnone || !lnone) {
        free(none), free(fnone), free(lnone), ncf_model_free(m), ncf_dataset_free(&d);
        return;
    }
    CHECK(ncf_recommend_users(m, none, 0, NULL, out, z, counts) == NCF_OK && counts[0] == -7);
    CHECK(ncf_predict_index(m, none, none, 0, fnone) >= NCF_ERR_ARG);
    CHECK(ncf_predict_for(m, NCF_USER, 0, NULL, none, 0, fnone) >= NCF_ERR_ARG);
    CHECK(ncf_loss(m, none, none, fnone, 0, &loss) >= NCF_ERR_ARG);
    CHECK(ncf_forward_backward(m, none, none, fnone, 0, &loss) >= NCF_ERR_ARG);
    CHECK(ncf_train_step(m, none, none, fnone, 0, &loss) >= NCF_ERR_ARG);
    CHECK(ncf_fold_in(m, NCF_USER, none, 0, NULL, row) == NCF_ERR_ARG);
    CHECK(ncf_fold_in(m, NCF_ITEM, none, 0, NULL, row) == NCF_ERR_ARG);
    o.allow = none, o.num_allow = 0, o.deny = none, o.num_deny = 0;
    rc = ncf_recommend_index(m, 0, &o, out, z);
    CHECK(rc == 0 || rc == NCF_ERR_ARG);
    o.allow = NULL, o.k = 4;
    CHECK(ncf_recommend_index(m, 0, &o, out, z) == 4);
    CHECK(ncf_recommend(m, 0, &o, ids, z) >= NCF_ERR_ARG);
    CHECK(ncf_recommend_for_items(m, (const char *const *)none, 0, NULL, NULL, (char *)row, sizeof row, z) ==
          NCF_ERR_ARG);
    CHECK(ncf_evaluate_at(m, &d, &eo, (const int *)none, 0, &mt) == NCF_ERR_ARG);
    {
        ncf_model *avg = NULL;
        CHECK(ncf_model_average(&avg, (ncf_model *const *)none, 0) == NCF_ERR_ARG && !avg);
    }
    ncf_dataset_free(&d);
    rc = ncf_dataset_from_triples(&d, lnone, lnone, lnone, 0, 0);
    if (rc == NCF_OK) ncf_dataset_free(&d);
    printf("    13 calls given empty arrays: none read them\n");
    free(none), free(fnone), free(lnone), ncf_model_free(m);
}

/* The validation item is a rated item: "exclude rated" never recommends it. */
static void test_validation_item_is_rated(void)
{
    ncf_dataset d;
    ncf_model *m = NULL;
    ncf_config c = ncf_config_default();
    int u, ok = 1;
    CHECK(ncf_synthetic(&d, 50, 40, 600, 4, 2) == NCF_OK && ncf_sample_eval_negatives(&d, 5, 1) == NCF_OK &&
          ncf_hold_out_validation(&d, 5, 1) == NCF_OK);
    c.num_users = d.num_users, c.num_items = d.num_items;
    CHECK(ncf_model_create(&m, &c) == NCF_OK && ncf_model_set_ids(m, &d) == NCF_OK);
    for (u = 0; m && u < d.num_users; u++) {
        int64_t top[40];
        int n = recommend_k(m, d.raw_user[u], 40, 1, top, NULL), j;
        for (j = 0; j < n; j++) ok &= d.val_item[u] < 0 || top[j] != d.raw_item[d.val_item[u]];
    }
    CHECKF(ok, "a validation item came back as unrated");
    ncf_model_free(m), ncf_dataset_free(&d);
}

/* Settings that are not finite or not plausible are refused where they are read, and the error
   names the true cause. */
static void test_absurd_settings_and_values_refused(void)
{
    ncf_config c = ncf_config_default();
    ncf_model *m = NULL, *b = NULL;
    ncf_dataset d;
    ncf_sampler s;
    void *buf = NULL;
    size_t len = 0;
    int32_t u[2] = {0, 1}, it[2] = {0, 1};
    float y[2] = {1, -0.5f};
    double loss;
    c.num_users = 10, c.num_items = 10;
    { /* a thread count no runtime can start is its limit; a tune with no metric of its own, refused */
        int before = ncf_set_threads(0), now = ncf_set_threads(1 << 30);
        ncf_tune_opts to = ncf_tune_opts_default();
        ncf_tune_report r;
        ncf_dataset v;
        CHECKF(now >= 1 && now <= NCF_MAX_THREADS, "ncf_set_threads(2^30) gives %d threads", now);
        ncf_set_threads(before);
        to.eval.metric = 99;
        CHECK(ncf_synthetic(&v, 30, 20, 300, 4, 3) == NCF_OK && ncf_hold_out_validation(&v, 5, 1) == NCF_OK);
        CHECK_ERR(ncf_tune(&v, &to, &r), NCF_ERR_ARG, "eval.metric 99 is not an NCF_METRIC_*");
        c.num_layers = 99; /* (the cost model reads no layer past a checked count) */
        CHECK(ncf__tune_cost(&c, &v, 2) == 0);
        c.num_layers = 4;
        CHECK(ncf__tune_cost(&c, &v, 2147483647) == 0 && ncf__tune_cost(&c, &v, 2) > 0);
        ncf_dataset_free(&v);
    }
    { /* a fold-in started from rows no model holds (3e38, NaN) is refused, not returned non-finite */
        ncf_fold_opts fo = ncf_fold_opts_default();
        float start[64], row[64];
        int32_t given[2] = {1, 2};
        int j;
        CHECK(ncf_model_create(&m, &c) == NCF_OK && m && ncf_row_size(m) <= 64);
        for (j = 0; m && j < ncf_row_size(m); j++) start[j] = j == 3 ? 3e38f : 0.5f;
        fo.start = start;
        CHECK_ERR(ncf_fold_in(m, NCF_ITEM, given, 2, &fo, row), NCF_ERR_ARG, "start[3] is not a number in [-1e6, 1e6]");
        start[3] = NAN;
        CHECK_ERR(ncf_fold_in(m, NCF_USER, given, 2, &fo, row), NCF_ERR_ARG, "start[3]");
        start[3] = 0.5f;
        CHECK(ncf_fold_in(m, NCF_ITEM, given, 2, &fo, row) == NCF_OK);
        ncf_model_free(m), m = NULL;
    }
    c.mlp_reg[1] = NAN;
    CHECK_ERR(ncf_model_create(&m, &c), NCF_ERR_ARG, "layer 1");
    c.mlp_reg[1] = 0, c.lr = INFINITY;
    CHECK_ERR(ncf_model_create(&m, &c), NCF_ERR_ARG, "0 < lr <= 1000");
    c.lr = 0.001f, c.epsilon = INFINITY;
    CHECK_ERR(ncf_model_create(&m, &c), NCF_ERR_ARG, "0 < epsilon <= 1");
    c.epsilon = 1e-8f, c.num_neg = 2147483647;
    CHECK_ERR(ncf_model_create(&m, &c), NCF_ERR_ARG, "num_neg <= 1000000");
    c.num_neg = 4;
    CHECK(ncf_model_create(&m, &c) == NCF_OK);
    CHECK_ERR(ncf_forward_backward(m, u, it, y, 2, &loss), NCF_ERR_ARG, "label -0.5 (0 a negative");
    CHECK(ncf_synthetic(&d, 30, 20, 200, 2, 1) == NCF_OK);
    CHECK_ERR(ncf_sampler_init(&s, &d, 2147483647, 1), NCF_ERR_ARG, "0 <= num_neg <= 1000000");
    { /* a parameter of 1e20 in a CRC-valid file: refused, with its name, not served as infinity */
        uint8_t *p;
        size_t at;
        m->params[m->tensors[1].offset + 2] = 1e20f; /* (saving writes what it is given) */
        CHECK(ncf_save_mem(m, NCF_SAVE_MODEL, &buf, &len) == NCF_OK);
        CHECK_ERR(ncf_load_mem(&b, buf, len), NCF_ERR_DATA, "implausibly large");
        CHECK(strstr(ncf_error_text(), m->tensors[1].name) != NULL);
        ncf_free(buf);
        m->params[m->tensors[1].offset + 2] = 0;
        /* a step counter of 2^63 - 1 in the header */
        CHECK(ncf_save_mem(m, NCF_SAVE_MODEL, &buf, &len) == NCF_OK);
        p = (uint8_t *)buf, at = NCF__HEADER_BYTES - 8 * 3; /* step, then epoch, then the parameter count */
        set_u32(p + at, 0xFFFFFFFFu), set_u32(p + at + 4, 0x7FFFFFFFu), set_u32(p + len - 4, ncf__crc32(p, len - 4));
        CHECK_ERR(ncf_load_mem(&b, buf, len), NCF_ERR_PARSE, "step 9223372036854775807");
        ncf_free(buf);
    }
    { /* unknown enum values */
        ncf_eval_opts eo = ncf_eval_opts_default();
        ncf_metrics mt;
        int64_t top[3];
        ncf_model *dm = NULL;
        ncf_config dc = ncf_config_default();
        dc.num_users = d.num_users, dc.num_items = d.num_items;
        CHECK(ncf_sample_eval_negatives(&d, 3, 1) == NCF_OK && ncf_model_create(&dm, &dc) == NCF_OK &&
              ncf_model_set_ids(dm, &d) == NCF_OK);
        eo.target = 7;
        CHECK_ERR(ncf_evaluate(dm, &d, &eo, &mt), NCF_ERR_ARG, "target 7");
        CHECK_ERR(recommend_k(dm, d.raw_user[0], 3, 2, top, NULL), NCF_ERR_ARG, "exclude_rated 2");
        d.raw_user[0] += 1000; /* data with another id than the model's: refused, not scored */
        CHECK_ERR(ncf_evaluate(dm, &d, &(ncf_eval_opts){10, 0, 0, 0, 0, 0, 0, NULL}, &mt), NCF_ERR_ARG, "other ids");
        ncf_model_free(dm);
    }
    ncf_model_free(m), ncf_dataset_free(&d);
}

/* Arguments and files at their limits: a range of examples past 2^63, an in-place model's Adam
   moment not finite, a user with fewer unrated items than the negatives asked, paths of 2,000
   characters. */
static void test_limits_said_as_they_are(void)
{
    ncf_dataset d;
    ncf_model *m = NULL, *in = NULL, *back = NULL;
    ncf_sampler smp;
    ncf_config c = ncf_config_default();
    void *buf = NULL;
    size_t len = 0;
    char *path = (char *)malloc(2200);
    CHECK(ncf_synthetic(&d, 30, 20, 200, 2, 1) == NCF_OK);
    c.num_users = d.num_users, c.num_items = d.num_items;
    CHECK(ncf_model_create(&m, &c) == NCF_OK && ncf_sampler_init(&smp, &d, 2, 1) == NCF_OK);
    CHECK_ERR(ncf_train_examples(m, &smp, 1, INT64_MAX - 5, 10, NULL, NULL, NULL), NCF_ERR_ARG, "outside the epoch");
    CHECK(ncf_save_mem(m, NCF_SAVE_ADAM, &buf, &len) == NCF_OK);
    { /* the last Adam moment NaN, the checksum made good: refused in place as in a copy */
        uint8_t *p = (uint8_t *)buf;
        set_u32(p + len - 8, 0x7fc00000u), set_u32(p + len - 4, ncf__crc32(p, len - 4));
        CHECK_ERR(ncf_model_open(&in, buf, len, 0), NCF_ERR_DATA, "Adam moment");
        CHECK_ERR(ncf_load_mem(&back, buf, len), NCF_ERR_DATA, "Adam's second moment");
    }
    ncf_free(buf), ncf_model_free(m), ncf_dataset_free(&d);
    {
        int64_t uu[5] = {1, 1, 2, 3, 3}, ii[5] = {10, 20, 10, 20, 30};
        CHECK(ncf_dataset_from_triples(&d, uu, ii, NULL, 5, 0) == NCF_OK);
        CHECK_ERR(ncf_sample_eval_negatives(&d, 2, 1), NCF_ERR_DATA, "user 1 rated 2 of 3 items: fewer than 2 unrated");
        ncf_dataset_free(&d);
    }
#ifndef _WIN32                          /* (Windows takes 260 characters) */
    snprintf(path, 2200, "%s/", g_dir); /* a long path the OS takes: saved, and a message keeps its reason */
    while (strlen(path) < 2000) strcat(path, "./");
    strcat(path, "long.ncf");
    c.num_users = 4, c.num_items = 4;
    CHECK(ncf_model_create(&m, &c) == NCF_OK);
    CHECKF(ncf_save(m, path, NCF_SAVE_MODEL) == NCF_OK, "%s", ncf_error_text());
    remove(path);
    strcat(path, ".missing");
    CHECK_ERR(ncf_load(&back, path), NCF_ERR_IO, "long.ncf.missing: cannot open for reading");
    ncf_model_free(m);
#endif
    free(path);
}

static uint32_t get_u32(const uint8_t *p)
{
    return p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
/* A header counter (NCF__HEADER_BYTES - 24: the step; - 16: the epoch) set, the checksum made good. */
static void set_header_u64(uint8_t *p, size_t len, size_t at, uint64_t v)
{
    set_u32(p + at, (uint32_t)v), set_u32(p + at + 4, (uint32_t)(v >> 32)),
        set_u32(p + len - 4, ncf__crc32(p, len - 4));
}

/* Every counter a model file holds is bounded so that what is done with it cannot overflow:
   the step at 2^62 and the epoch at NCF_MAX_EPOCH load (in a copy and in place), one more is
   refused, and training goes on from the bound without numbering an epoch past it. */
static void test_file_counters_at_their_bounds_leave_headroom(void)
{
    enum { STEP_AT = NCF__HEADER_BYTES - 24, EPOCH_AT = NCF__HEADER_BYTES - 16 };
    ncf_dataset d;
    ncf_model *m = NULL, *b = NULL, *in = NULL;
    ncf_sampler smp;
    ncf_config c = ncf_config_default();
    void *buf = NULL;
    size_t len = 0;
    uint8_t *p;
    CHECK(ncf_synthetic(&d, 30, 20, 200, 2, 1) == NCF_OK);
    c.num_users = d.num_users, c.num_items = d.num_items, c.batch_size = 32;
    CHECK(ncf_model_create(&m, &c) == NCF_OK && ncf_sampler_init(&smp, &d, 2, 1) == NCF_OK);
    m->step = 0x0102030405060708ll, m->epoch = 0x11223344;
    CHECK(ncf_save_mem(m, NCF_SAVE_ADAM, &buf, &len) == NCF_OK);
    p = (uint8_t *)buf;
    CHECK(get_u32(p + STEP_AT) == 0x05060708u && get_u32(p + EPOCH_AT) == 0x11223344u); /* where they are */
    set_header_u64(p, len, STEP_AT, (uint64_t)1 << 62), set_header_u64(p, len, EPOCH_AT, NCF_MAX_EPOCH);
    CHECKF(ncf_load_mem(&b, buf, len) == NCF_OK && ncf_model_open(&in, buf, len, 0) == NCF_OK, "%s", ncf_error_text());
    CHECK(b && b->epoch == NCF_MAX_EPOCH && b->step == (int64_t)1 << 62);
    if (b) {
        CHECK_ERR(ncf_train_epoch(b, &smp, (int)b->epoch + 1, NULL, NULL, NULL), NCF_ERR_ARG,
                  "outside 0 to NCF_MAX_EPOCH");
        CHECKF(ncf_train_epoch(b, &smp, (int)b->epoch, NULL, NULL, NULL) == NCF_OK, "%s", ncf_error_text());
        CHECK(b->step > (int64_t)1 << 62);
    }
    ncf_model_free(b), ncf_model_free(in), b = in = NULL;
    set_header_u64(p, len, EPOCH_AT, (uint64_t)NCF_MAX_EPOCH + 1);
    CHECK_ERR(ncf_load_mem(&b, buf, len), NCF_ERR_PARSE, "epoch 1073741825 is past what training reaches");
    CHECK_ERR(ncf_model_open(&in, buf, len, 0), NCF_ERR_PARSE, "epoch 1073741825");
    set_header_u64(p, len, EPOCH_AT, 0x7FFFFFFF); /* what 0.6.1 let through */
    CHECK_ERR(ncf_load_mem(&b, buf, len), NCF_ERR_PARSE, "epoch 2147483647");
    set_header_u64(p, len, EPOCH_AT, 1), set_header_u64(p, len, STEP_AT, ((uint64_t)1 << 62) + 1);
    CHECK_ERR(ncf_load_mem(&b, buf, len), NCF_ERR_PARSE, "step 4611686018427387905");
    ncf_free(buf), ncf_model_free(m), ncf_dataset_free(&d);
}

/* A header whose sizes are consistent but past what this machine addresses (2^31 - 1 users and
   items of 65,536 factors: 2.8e14 parameters) is refused, copied and in place, by the body's
   length on a 64-bit machine and before anything is laid out on a 32-bit one (where the count
   would wrap size_t); so is a config that large given to ncf_model_create there. */
static void test_header_sizes_past_the_address_space_refused(void)
{
    ncf_config c = ncf_config_default();
    ncf_model *m = NULL, *b = NULL, *in = NULL;
    void *buf = NULL;
    size_t len = 0;
    uint64_t n = (((uint64_t)1 << 32) - 2) * 65537 + 1; /* (U + I) x (F + 1 bias) + the output bias */
    uint8_t *p;
    int wide = sizeof(size_t) >= 8;
    c.model = NCF_MF, c.num_users = 30, c.num_items = 20, c.mf_dim = 8;
    CHECK(ncf_model_create(&m, &c) == NCF_OK && ncf_save_mem(m, 0, &buf, &len) == NCF_OK);
    if (!buf) {
        ncf_model_free(m);
        return;
    }
    p = (uint8_t *)buf;
    set_u32(p + 4 + 4 * NCF__W_USERS, 0x7FFFFFFFu), set_u32(p + 4 + 4 * NCF__W_ITEMS, 0x7FFFFFFFu);
    set_u32(p + 4 + 4 * NCF__W_MF_DIM, 65536);
    set_header_u64(p, len, 4 + 4 * NCF__W_PARAMS, n);
    CHECK_ERR(ncf_load_mem(&b, buf, len), wide ? NCF_ERR_PARSE : NCF_ERR_NOMEM,
              wide ? "its header promises 1125917086187516" : "more than this machine addresses"); /* (4n bytes) */
    CHECK_ERR(ncf_model_open(&in, buf, len, 0), wide ? NCF_ERR_PARSE : NCF_ERR_NOMEM,
              wide ? "its header promises" : "more than this machine addresses");
    CHECK(!b && !in);
    if (!wide) {
        ncf_model *x = NULL;
        c.num_users = c.num_items = 0x7FFFFFFF, c.mf_dim = 65536;
        CHECK_ERR(ncf_model_create(&x, &c), NCF_ERR_NOMEM, "more than this machine addresses");
    }
    ncf_free(buf), ncf_model_free(m);
}

/* One bound on every value a file holds, the same read in place and copied: a parameter of 9e5
   (or an int8 row that dequantizes to it) is read both ways; 2e6 is refused both ways, before
   it could score infinity. */
static void test_values_bounded_alike_in_place_and_copied(void)
{
    static const float big[2] = {9e5f, 2e6f};
    ncf_config c = ncf_config_default();
    ncf_model *m = NULL, *b = NULL, *in = NULL;
    int v, int8;
    c.num_users = 6, c.num_items = 5;
    CHECK(ncf_model_create(&m, &c) == NCF_OK);
    for (v = 0; m && v < 2; v++)
        for (int8 = 0; int8 < 2; int8++) {
            void *buf = NULL;
            size_t len = 0;
            int rl, ro;
            m->params[m->tensors[0].offset + 3] = big[v]; /* a row of the first embedding table */
            CHECK(ncf_save_mem(m, int8 ? NCF_SAVE_INT8 : NCF_SAVE_MODEL, &buf, &len) == NCF_OK);
            rl = ncf_load_mem(&b, buf, len), ro = ncf_model_open(&in, buf, len, 0);
            CHECKF(v ? rl == NCF_ERR_DATA && ro == NCF_ERR_DATA : rl == NCF_OK && ro == NCF_OK,
                   "%g in a%s file: load %d, open %d (%s)", (double)big[v], int8 ? "n int8" : " float", rl, ro,
                   ncf_error_text());
            if (!v && b && in) {
                float x, y;
                CHECK(ncf_predict_index(b, (const int32_t[]){0}, (const int32_t[]){1}, 1, &x) == NCF_OK &&
                      ncf_predict_index(in, (const int32_t[]){0}, (const int32_t[]){1}, 1, &y) == NCF_OK);
                CHECK(!NCF__NONFINITE(x) && !NCF__NONFINITE(y));
            }
            ncf_model_free(b), ncf_model_free(in), b = in = NULL;
            ncf_free(buf);
        }
    ncf_model_free(m);
}

/* Options are checked before anything is sized from them: a fold-in's steps and negatives a
   call could never finish (2^31 - 1) are refused, not overflowed or looped over; a negative
   list size is refused, not turned into a 16 EB allocation. */
static void test_options_checked_before_anything_is_sized(void)
{
    ncf_config c = ncf_config_default();
    ncf_model *m = NULL;
    ncf_fold_opts fo = ncf_fold_opts_default();
    int32_t items[2] = {1, 2};
    float row[64];
    c.num_users = 6, c.num_items = 5, c.mf_dim = 4, c.layers[0] = 8, c.layers[1] = 4, c.num_layers = 2;
    CHECK(ncf_model_create(&m, &c) == NCF_OK && ncf_row_size(m) <= 64);
    fo.num_neg = 2147483647;
    CHECK_ERR(ncf_fold_in(m, NCF_USER, items, 2, &fo, row), NCF_ERR_ARG, "0 <= num_neg <= 1000");
    fo = ncf_fold_opts_default(), fo.steps = 2147483647;
    CHECK_ERR(ncf_fold_in(m, NCF_USER, items, 2, &fo, row), NCF_ERR_ARG, "0 <= steps <= 100000");
    fo = ncf_fold_opts_default(), fo.num_neg = 1000, fo.steps = 3;
    CHECK(ncf_fold_in(m, NCF_USER, items, 2, &fo, row) == NCF_OK);
    {
        ncf_rec_opts ro = ncf_rec_opts_default();
        int32_t out[10], users[2] = {0, 1};
        float sc[10];
        int counts[2];
        long before = g_alloc_bytes;
        ro.k = 5, ro.allow = items, ro.num_allow = -5;
        CHECK_ERR(ncf_recommend_users(m, users, 2, &ro, out, sc, counts), NCF_ERR_ARG, "list sizes >= 0");
        CHECK_ERR(ncf_recommend_index(m, 0, &ro, out, sc), NCF_ERR_ARG, "list sizes >= 0");
        CHECK(g_alloc_bytes - before < 1 << 20);
    }
    ncf_model_free(m);
}

/* Evaluation ranks the data's catalogue with the model's rows: data of other counts (20 x 20 on
   a 60 x 50 model, whose ids would match the first 20 of each) is refused, not scored. */
static void test_evaluation_refuses_data_that_is_not_the_models(void)
{
    ncf_dataset small, big;
    ncf_config c = ncf_config_default();
    ncf_model *m = NULL;
    ncf_metrics mt;
    CHECK(ncf_synthetic(&small, 20, 20, 200, 2, 1) == NCF_OK && ncf_sample_eval_negatives(&small, 5, 1) == NCF_OK);
    CHECK(ncf_synthetic(&big, 60, 50, 900, 2, 1) == NCF_OK && ncf_sample_eval_negatives(&big, 5, 1) == NCF_OK);
    c.num_users = big.num_users, c.num_items = big.num_items;
    CHECK(ncf_model_create(&m, &c) == NCF_OK && ncf_model_set_ids(m, &big) == NCF_OK);
    CHECK_ERR(evaluate_k(m, &small, 10, NCF_SAMPLED, &mt), NCF_ERR_ARG, "not the data it was trained on");
    CHECK(evaluate_k(m, &big, 10, NCF_SAMPLED, &mt) == NCF_OK);
    ncf_model_free(m), ncf_dataset_free(&small), ncf_dataset_free(&big);
}

/* tests --set-epoch FILE N: the demo's check of a model at the bound (tests/demo_checks.sh). */
static int set_file_epoch(const char *path, const char *n)
{
    FILE *f = fopen(path, "rb");
    uint8_t *p = (uint8_t *)malloc(1 << 26);
    size_t len = f ? fread(p, 1, 1 << 26, f) : 0;
    int ok = f && len > NCF__HEADER_BYTES;
    if (f) fclose(f);
    if (ok) set_header_u64(p, len, NCF__HEADER_BYTES - 16, (uint64_t)strtoull(n, NULL, 10));
    ok = ok && (f = fopen(path, "wb")) != NULL && fwrite(p, 1, len, f) == len;
    if (f && fclose(f) != 0) ok = 0;
    free(p);
    return ok;
}

/* Files that are not what they seem: a directory, a device, a repeated negative, a FIFO as the
   target of a save; a pipe read as a model. */
static void test_hostile_inputs_refused_or_read(void)
{
    ncf_dataset d;
    char prefix[300];
    CHECK_ERR(ncf_load_dataset(&d, g_dir, NULL), NCF_ERR_IO, "is a directory, not a file");
    write_file("dup.train.rating", "0\t1\t1\t0\n0\t2\t1\t0\n1\t2\t1\t0\n");
    write_file("dup.test.rating", "0\t3\t1\t0\n1\t4\t1\t0\n");
    write_file("dup.test.negative", "(0,3)\t5\t6\n(1,4)\t6\t6\n");
    snprintf(prefix, sizeof prefix, "%s/dup", g_dir);
    CHECK_ERR(ncf_load_dataset(&d, prefix, NULL), NCF_ERR_DATA, "dup.test.negative:2: negative 6 appears twice");
#ifndef _WIN32
    CHECK_ERR(ncf_load_dataset(&d, "/dev/zero", NULL), NCF_ERR_IO, "/dev/zero: is a device, not a file");
    {
        ncf_model *m = NULL, *back = NULL;
        ncf_config c = ncf_config_default();
        char fifo[400];
        void *buf = NULL;
        size_t len;
        c.num_users = 5, c.num_items = 5;
        snprintf(fifo, sizeof fifo, "%s/fifo.ncf", g_dir);
        CHECK(mkfifo(fifo, 0600) == 0 && ncf_model_create(&m, &c) == NCF_OK);
        { /* a save to a pipe writes through it, in place: the pipe stays a pipe */
            struct stat st;
            int status = -1;
            pid_t pid = fork();
            if (pid == 0) _exit(ncf_save(m, fifo, NCF_SAVE_MODEL) == NCF_OK ? 0 : 1);
            CHECKF(ncf_load(&back, fifo) == NCF_OK, "%s", ncf_error_text());
            waitpid(pid, &status, 0);
            CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0 && back && back->cfg.num_items == 5);
            CHECK(lstat(fifo, &st) == 0 && S_ISFIFO(st.st_mode));
            ncf_model_free(back), back = NULL;
        }
        CHECK_ERR(ncf_save(m, g_dir, NCF_SAVE_MODEL), NCF_ERR_IO, "is a folder, not a file");
        { /* a model through a pipe: its magic not consumed by a check */
            pid_t pid;
            CHECK(ncf_save_mem(m, NCF_SAVE_MODEL, &buf, &len) == NCF_OK);
            if ((pid = fork()) == 0) {
                FILE *f = fopen(fifo, "wb");
                fwrite(buf, 1, len, f), fclose(f);
                _exit(0);
            }
            CHECKF(ncf_load(&back, fifo) == NCF_OK, "%s", ncf_error_text());
            waitpid(pid, NULL, 0);
            ncf_free(buf);
        }
        { /* a pipe that is no model (yes NCF | ...): refused at its first bytes, not read whole */
            pid_t pid;
            int status = 0;
            ncf_model *none = NULL;
            if ((pid = fork()) == 0) { /* writes "NCF\n" until the reader goes; exits with the MB written */
                FILE *f = fopen(fifo, "wb");
                char block[1 << 16];
                int mb = 0, k;
                signal(SIGPIPE, SIG_IGN);
                for (k = 0; k < (int)sizeof block; k += 4) memcpy(block + k, "NCF\n", 4);
                for (k = 0; f && k < 64 * 16 && fwrite(block, 1, sizeof block, f) == sizeof block && fflush(f) == 0;
                     k++)
                    mb = k / 16;
                _exit(mb);
            }
            CHECK_ERR(ncf_load(&none, fifo), NCF_ERR_PARSE, "not an ncf.h model file (bad magic)");
            waitpid(pid, &status, 0);
            CHECKF(WIFEXITED(status) && WEXITSTATUS(status) < 8,
                   "the pipe's writer wrote %d MB before the reader stopped",
                   WIFEXITED(status) ? WEXITSTATUS(status) : -1);
        }
        ncf_model_free(m), ncf_model_free(back);
        remove(fifo);
    }
#endif
}

/* ---- >>adversarial: input chosen against the library: hashes, sorts, filters ----------------- */
/* ncf__mix64 (splitmix64's step) undone: each xorshift and each odd multiplier has an inverse. */
static uint64_t unshift(uint64_t z, int s)
{
    uint64_t x = z;
    int k;
    for (k = 0; k < 64 / s + 1; k++) x = z ^ (x >> s);
    return x;
}
static uint64_t odd_inverse(uint64_t a)
{
    uint64_t x = a; /* Newton: each step doubles the bits that are right */
    int k;
    for (k = 0; k < 6; k++) x *= 2 - a * x;
    return x;
}
static uint64_t unmix64(uint64_t z)
{
    z = unshift(z, 31) * odd_inverse(0x94D049BB133111EBull);
    z = unshift(z, 27) * odd_inverse(0xBF58476D1CE4E5B9ull);
    return unshift(z, 30) - 0x9E3779B97F4A7C15ull;
}

/* n 8-byte ids whose hashes under key all fall in the lowest 1024 of 2^20 slots. */
static void ids_against_key(uint64_t key, int n, uint64_t *w)
{
    int k;
    for (k = 0; k < n; k++) {
        uint64_t h = ((uint64_t)(k + 1) * 0x9E3779B97F4A7C15ull) & ~(((uint64_t)1 << 20) - 1024); /* bits 10..19 zero */
        h = unmix64(h) ^ (key >> 17);
        w[k] = unmix64(h - key) ^ key ^ 8;
    }
}

/* Ids crafted against a known hash key crowd one chain of slots: inserting n of them looks at
   ~n^2/2 slots under that key. The tables draw a secret key of their own, so the same ids cost
   what random ones do. */
static void test_ids_chosen_against_the_hash_cost_what_random_ids_do(void)
{
    enum { N = 3000 };
    uint64_t *w = (uint64_t *)malloc(sizeof(uint64_t) * N), key = 0x243F6A8885A308D3ull | 1;
    ncf__intern forced, own, other;
    int k;
    memset(&forced, 0, sizeof forced), memset(&own, 0, sizeof own), memset(&other, 0, sizeof other);
    ids_against_key(key, N, w);
    CHECK(ncf__hash_bytes(key, (const char *)&w[0], 8) % 1024 ==
          ncf__hash_bytes(key, (const char *)&w[0], 8) % (1 << 20));
    forced.key = key;
    for (k = 0; k < N; k++) {
        CHECK(ncf__intern_add(&forced, (const char *)&w[k], 8) == k);
        CHECK(ncf__intern_add(&own, (const char *)&w[k], 8) == k);
    }
    CHECK(ncf__intern_add(&own, (const char *)&w[7], 8) == 7); /* found again */
    ncf__intern_add(&other, "x", 1);
    printf("    %d crafted ids: %.1f slots looked at per id under the key they were made for, %.2f under the "
           "table's own\n",
           N, (double)forced.probes / N, (double)own.probes / N);
    CHECKF(forced.probes > (uint64_t)N * N / 8, "the crafted ids do not collide under their key: %llu probes",
           (unsigned long long)forced.probes);
    CHECKF(own.probes < (uint64_t)N * 8, "%llu probes for %d ids", (unsigned long long)own.probes, N);
    CHECK(own.key != key && other.key != own.key);
    ncf__intern_free(&forced), ncf__intern_free(&own), ncf__intern_free(&other);
    free(w);
}

/* A log whose every drop leaves another user with every item (user k rated items 0..k, so
   dropping the last user leaves the next with all that is left, and so on): each round of the
   filters is O(n) and they stop after 64 rounds with a message, not after one round a user. */
static void test_filters_settle_in_bounded_rounds(void)
{
    enum { N = 1500 };
    int64_t *u = (int64_t *)malloc(sizeof(int64_t) * N * (N + 1) / 2),
            *it = (int64_t *)malloc(sizeof(int64_t) * N * (N + 1) / 2);
    int64_t n = 0;
    int k, j;
    ncf_dataset d;
    double t;
    for (k = 0; k < N; k++)
        for (j = 0; j <= k; j++) u[n] = k, it[n] = j, n++;
    t = now_s();
    CHECK_ERR(ncf_dataset_from_triples(&d, u, it, NULL, n, 0), NCF_ERR_DATA, "after 64 rounds");
    printf("    %lld interactions, a cascade of %d users: refused after 64 rounds in %.2f s\n", (long long)n, N,
           now_s() - t);
    free(u), free(it);
}

static long g_cmp_calls;
static int counting_cmp_i32(const void *a, const void *b)
{
    g_cmp_calls++;
    return ncf__cmp_i32(a, b);
}

/* Every sort gives qsort's order on random, sorted, reversed, organ-pipe, all-equal and
   few-valued arrays of any length, within n log2 n + 8n comparisons (a quicksort on chosen input
   takes n^2), with its scratch memory or, when that cannot be had, without. */
static void test_sorts_are_n_log_n_whatever_the_order(void)
{
    static const int sizes[] = {0, 1, 2, 7, 8, 9, 16, 17, 100, 1000, 4097, 100000};
    int32_t *a = (int32_t *)malloc(sizeof(int32_t) * 100000), *b = (int32_t *)malloc(sizeof(int32_t) * 100000);
    int si, pat, heap;
    for (heap = 0; heap < 2; heap++)
        for (si = 0; si < (int)(sizeof sizes / sizeof *sizes); si++)
            for (pat = 0; pat < 6; pat++) {
                int n = sizes[si], k, same;
                double bound = n * (log((double)n + 1) / log(2.0)) + 8.0 * n + 8;
                for (k = 0; k < n; k++)
                    a[k] = pat == 0 ? (int32_t)(ncf__mix64((uint64_t)k) >> 33)
                        : pat == 1  ? k
                        : pat == 2  ? n - k
                        : pat == 3  ? (k < n / 2 ? k : n - k)
                        : pat == 4  ? 5
                                    : k % 3;
                memcpy(b, a, sizeof(int32_t) * (size_t)n);
                qsort(b, (size_t)n, sizeof *b, ncf__cmp_i32);
                g_cmp_calls = 0;
                g_alloc_count = 0, g_alloc_fail_at = heap ? 0 : -1; /* heap: the scratch allocation fails */
                ncf__sort(a, (size_t)n, sizeof *a, counting_cmp_i32);
                g_alloc_fail_at = -1;
                same = !memcmp(a, b, sizeof(int32_t) * (size_t)n);
                CHECKF(same && g_cmp_calls <= (heap ? 2 : 1) * bound, "%s, n %d, pattern %d: %s, %ld comparisons",
                       heap ? "heapsort" : "merge sort", n, pat, same ? "sorted" : "NOT sorted", g_cmp_calls);
            }
    free(a), free(b);
}

/* The one binary search (NCF__FIRST_NOT) gives the first index where its predicate is false,
   n when none is, on every length from 0 to 70 and every cut; and ncf__nth_absent, the
   sampler's use of it, gives the r-th item absent from a sorted list, as counting does. */
static void test_binary_search_finds_every_cut(void)
{
    static int32_t lists[71][70];
    static int truth[71][150];
    ncf__rng rng = {7};
    int n, cut, r, round, bad = 0, absent = 0;
    for (n = 0; n <= 70; n++)
        for (cut = 0; cut <= n; cut++) {
            int lo;
            NCF__FIRST_NOT(int, lo, n, mid < cut);
            bad += lo != cut;
        }
    for (n = 0; n <= 70; n++) { /* a list of n items among 150: every k-th, shifted by the length */
        int32_t *items = lists[n];
        int k, nitems = 150, x;
        for (k = 0; k < n; k++) items[k] = (int32_t)(k * 2 + (k % 3 == 0) + n % 5);
        for (r = 0, x = 0; r < nitems - n; r++, x++) { /* x: the r-th absent item, by counting */
            int in = 1;
            while (in)
                for (in = 0, k = 0; k < n; k++)
                    if (items[k] == x) in = 1, x++;
            bad += ncf__nth_absent(items, n, r) != x, absent++;
            truth[n][r] = x;
        }
    }
    for (round = 0; round < 4000; round++) { /* up to 16 searches at once, of lists of any length */
        ncf__absent a[16];
        int many = (int)(ncf__next(&rng) % 17), j;
        for (j = 0; j < many; j++) {
            a[j].d = (int64_t)(ncf__next(&rng) % 71), a[j].p = lists[a[j].d];
            a[j].r = (int64_t)(ncf__next(&rng) % (uint64_t)(150 - a[j].d));
        }
        ncf__nth_absent_many(a, many);
        for (j = 0; j < many; j++) bad += a[j].item != truth[a[j].d][a[j].r], absent++;
    }
    CHECKF(bad == 0, "%d wrong answers", bad);
    printf("    every cut of lengths 0-70, and %d absent items by counting, one at a time and up to 16 at once\n",
           absent);
}

/* ---- >>allocation: every allocation failing in turn, and calls that allocate nothing --------- */
/* Each call below runs once for every k, with the k-th allocation failing, until it runs
   with none failing. Each run must return NCF_OK or NCF_ERR_NOMEM and leave everything
   freeable (the ASan build reports any leak); nothing may crash. */
static ncf_dataset g_sw_data;
static ncf_model *g_sw_model;
static char g_sw_file[512];
static uint64_t g_sw_digest; /* what a call did, where it returns NCF_OK: the same under any failure */

static uint64_t digest_text(uint64_t h, const char *s)
{
    while (*s) h = ncf__mix64(h ^ (uint8_t)*s++);
    return ncf__mix64(h);
}
/* Every id of a model (or a dataset) and its counts. */
static uint64_t digest_ids(const ncf_model *m, const ncf_dataset *d)
{
    char id[NCF_MAX_ID_BYTES + 1];
    int side, k, n[2];
    uint64_t h = 0;
    n[0] = m ? m->cfg.num_users : d->num_users, n[1] = m ? m->cfg.num_items : d->num_items;
    for (side = 0; side < 2; side++)
        for (k = 0, h = ncf__mix64(h ^ (uint64_t)n[side]); k < n[side]; k++) {
            int rc = m ? (side ? ncf_id(m, NCF_ITEM, k, id, sizeof id) : ncf_id(m, NCF_USER, k, id, sizeof id))
                       : (side ? ncf_dataset_id(d, NCF_ITEM, k, id, sizeof id)
                               : ncf_dataset_id(d, NCF_USER, k, id, sizeof id));
            h = digest_text(h, rc < 0 ? "(no id)" : id);
        }
    return h;
}
/* A log with text ids on both sides, or integer ones, in memory, read with no failure armed. */
static int sw_quiet_load(ncf_dataset *d, int text, int drop_last)
{
    static const char *logs[2] = {"user,item\n1,10\n1,20\n2,10\n2,30\n3,20\n3,30\n4,40\n4,10\n",
                                  "user,item\na,x\na,y\nb,x\nb,\"z, q\"\nc,y\nc,\"z, q\"\nd,w\nd,x\n"};
    ncf_dataset_opts o = ncf_dataset_opts_default();
    long armed = g_alloc_fail_at;
    size_t len = strlen(logs[text]);
    int rc;
    if (drop_last) len -= text ? 8 : 10; /* the last two lines: user 4 (d) goes, and item 40 (w) */
    o.holdout = NCF_HOLDOUT_NONE;
    g_alloc_fail_at = -1;
    rc = ncf_load_dataset_mem(d, "sweep", logs[text], len, &o);
    g_alloc_fail_at = armed;
    return rc;
}
/* A model on the whole log, ids set; then a dataset lacking a user and an item gets them
   (ncf_dataset_add_ids), and the model grown to it. */
static int sw_ids(int text)
{
    ncf_dataset all, part;
    ncf_config c = ncf_config_default();
    ncf_model *m = NULL;
    int rc;
    if (sw_quiet_load(&all, text, 0) != NCF_OK || sw_quiet_load(&part, text, 1) != NCF_OK) return NCF_ERR_DATA;
    c.num_users = all.num_users, c.num_items = all.num_items, c.mf_dim = 4, c.num_layers = 2, c.layers[0] = 8,
    c.layers[1] = 4;
    rc = ncf_model_create(&m, &c);
    if (rc == NCF_OK) rc = ncf_model_set_ids(m, &all);
    if (rc == NCF_OK) rc = ncf_dataset_add_ids(&part, m);
    if (rc == NCF_OK) rc = ncf_model_grow(&m, &part);
    if (rc == NCF_OK) g_sw_digest = digest_ids(m, NULL) ^ digest_ids(NULL, &part);
    ncf_model_free(m), ncf_dataset_free(&all), ncf_dataset_free(&part);
    return rc;
}
static int sw_ids_text(void) { return sw_ids(1); }
/* A weighted log read (repeated pairs summed), a validation item held out, ids added from a
   model whose text ids reorder the items, and an epoch trained on it. */
static int sw_weighted(void)
{
    static const char *log = "user,item,plays\n1,9,2\n1,10,5\n1,9,3\n1,11,1\n1,12,4\n2,9,7\n2,10,1\n2,11,2.5\n"
                             "3,10,8\n3,13,2\n3,12,1\n3,9,1\n4,13,1\n4,12,3\n4,11,6\n";
    ncf_dataset_opts o = ncf_dataset_opts_default();
    ncf_dataset d, other;
    ncf_config c = ncf_config_default();
    ncf_sampler s;
    ncf_model *m = NULL;
    int rc;
    int64_t k;
    o.weighting = NCF_WEIGHT_LOG, o.validation = 1, o.eval_negatives = 1, o.holdout = NCF_HOLDOUT_RANDOM;
    if ((rc = ncf_load_dataset_mem(&d, "sweep", log, strlen(log), &o)) != NCF_OK) return rc;
    if (sw_quiet_load(&other, 1, 0) != NCF_OK) {
        ncf_dataset_free(&d);
        return NCF_ERR_DATA;
    }
    c.num_users = other.num_users, c.num_items = other.num_items, c.mf_dim = 4, c.num_layers = 2, c.layers[0] = 8,
    c.layers[1] = 4;
    rc = ncf_model_create(&m, &c);
    if (rc == NCF_OK) rc = ncf_model_set_ids(m, &other);
    if (rc == NCF_OK) rc = ncf_dataset_add_ids(&d, m);
    if (rc == NCF_OK) rc = ncf_model_grow(&m, &d);
    if (rc == NCF_OK) rc = ncf_sampler_init(&s, &d, 2, 3);
    if (rc == NCF_OK) rc = ncf_train_epoch(m, &s, 1, NULL, NULL, NULL);
    if (rc == NCF_OK) {
        g_sw_digest = digest_ids(NULL, &d);
        for (k = 0; k < d.num_train; k++)
            g_sw_digest = ncf__mix64(g_sw_digest ^ (uint64_t)(d.weight[k] * 1e6) ^ (uint64_t)d.items[k] << 40);
    }
    ncf_model_free(m), ncf_dataset_free(&d), ncf_dataset_free(&other);
    return rc;
}
static int sw_ids_int(void) { return sw_ids(0); }

static int sw_load(const char *name)
{
    ncf_dataset d;
    ncf_dataset_opts o = ncf_dataset_opts_default();
    int rc;
    o.min_ratings = 1, o.eval_negatives = 1;
    rc = ncf_load_dataset(&d, path_in_dir(name), &o);
    if (rc == NCF_OK) ncf_dataset_free(&d);
    return rc;
}
static int sw_load_dat(void) { return sw_load("sweep.dat"); }
static int sw_load_csv(void) { return sw_load("sweep.csv"); }
static int sw_load_tab(void) { return sw_load("sweep.data"); }
static int sw_load_split(void) { return sw_load("sweep_split"); }
static int sw_synthetic(void)
{
    ncf_dataset d;
    int rc = ncf_synthetic(&d, 60, 40, 900, 4, 1);
    if (rc == NCF_OK) rc = ncf_sample_eval_negatives(&d, 10, 2);
    ncf_dataset_free(&d);
    return rc;
}
static int sw_model_create(void)
{
    ncf_config c = ncf_config_default();
    ncf_model *m = NULL;
    int rc;
    c.num_users = g_sw_data.num_users, c.num_items = g_sw_data.num_items;
    rc = ncf_model_create(&m, &c);
    if (rc == NCF_OK) rc = ncf_model_set_ids(m, &g_sw_data);
    if (rc == NCF_OK) g_sw_digest = digest_ids(m, NULL);
    ncf_model_free(m);
    return rc;
}
/* Two MF models with ids averaged into one. */
static int sw_average(void)
{
    ncf_config c = ncf_config_default();
    ncf_model *m[2] = {NULL, NULL}, *avg = NULL;
    ncf_sampler smp[2];
    int rc, k;
    c.model = NCF_MF, c.optimizer = NCF_OPT_SGD, c.batch_size = 1;
    c.num_users = g_sw_data.num_users, c.num_items = g_sw_data.num_items;
    rc = ncf_model_create(&m[0], &c);
    if (rc == NCF_OK) rc = ncf_model_set_ids(m[0], &g_sw_data);
    if (rc == NCF_OK) rc = ncf_sampler_init(&smp[0], &g_sw_data, 4, c.seed);
    if (rc == NCF_OK) c.seed++, rc = ncf_model_create(&m[1], &c);
    if (rc == NCF_OK) rc = ncf_sampler_init(&smp[1], &g_sw_data, 4, c.seed);
    if (rc == NCF_OK) rc = ncf_train_epoch_each(m, smp, 2, 1, NULL, NULL, NULL);
    if (rc == NCF_OK) rc = ncf_model_average(&avg, m, 2);
    if (rc == NCF_OK) g_sw_digest = state_hash(avg) ^ digest_ids(avg, NULL);
    for (k = 0; k < 2; k++) ncf_model_free(m[k]);
    ncf_model_free(avg);
    return rc;
}
static int sw_epoch(void)
{
    ncf_sampler s;
    int rc = ncf_sampler_init(&s, &g_sw_data, 4, 3);
    return rc == NCF_OK ? ncf_train_epoch(g_sw_model, &s, 1, NULL, NULL, NULL) : rc;
}
static int sw_als(void)
{
    ncf_config c = ncf_config_default();
    ncf_model *m = NULL;
    ncf_sampler s;
    int rc;
    c.num_users = g_sw_data.num_users, c.num_items = g_sw_data.num_items, c.model = NCF_MF, c.optimizer = NCF_OPT_ALS;
    c.mf_dim = 12;
    rc = ncf_model_create(&m, &c);
    if (rc == NCF_OK) rc = ncf_sampler_init(&s, &g_sw_data, 0, 3);
    if (rc == NCF_OK) rc = ncf_train_epoch(m, &s, 1, NULL, NULL, NULL);
    if (rc == NCF_OK) rc = ncf_train_epoch(m, &s, 2, NULL, NULL, NULL);
    if (rc == NCF_OK) { /* a fold-in: from the cached Gram matrix, or (none cached) its own */
        static const int32_t items[] = {1, 4, 6};
        ncf_fold_opts fo = ncf_fold_opts_default();
        float row[13];
        uint64_t h = state_hash(m);
        int k;
        rc = ncf_fold_in(m, NCF_USER, items, 3, &fo, row);
        for (k = 0; rc == NCF_OK && k < 13; k++) { /* (the row's bits: the same under any failure) */
            uint32_t bits;
            memcpy(&bits, &row[k], sizeof bits);
            h = ncf__mix64(h ^ bits);
        }
        g_sw_digest = h;
    }
    ncf_model_free(m);
    return rc;
}
static int sw_evaluate(void)
{
    ncf_metrics a, b;
    int rc = evaluate_k(g_sw_model, &g_sw_data, 10, NCF_SAMPLED, &a);
    return rc == NCF_OK ? evaluate_k(g_sw_model, &g_sw_data, 10, NCF_FULL_RANKING, &b) : rc;
}
static int sw_save_load_mem(void)
{
    void *buf = NULL;
    size_t len;
    ncf_model *b = NULL;
    int rc = ncf_save_mem(g_sw_model, NCF_SAVE_ADAM, &buf, &len);
    if (rc != NCF_OK) return rc;
    rc = ncf_load_mem(&b, buf, len);
    ncf_free(buf);
    ncf_model_free(b);
    return rc;
}
static int sw_save_load_file(void)
{
    ncf_model *b = NULL, *in = NULL;
    void *buf = NULL;
    size_t len = 0;
    int rc = ncf_save(g_sw_model, g_sw_file, NCF_SAVE_ADAM);
    if (rc == NCF_OK) rc = ncf_load(&b, g_sw_file);
    if (rc == NCF_OK && (rc = ncf_model_read_file(g_sw_file, &buf, &len)) == NCF_OK)
        rc = ncf_model_open(&in, buf, len, 0);
    ncf_model_free(b), ncf_model_free(in), ncf_free(buf);
    return rc;
}
static int sw_serve(void)
{
    int64_t top[10];
    float z[20];
    int32_t u[20], it[20];
    int k, rc = recommend_k(g_sw_model, g_sw_data.raw_user[1], 10, 1, top, NULL);
    if (rc < 0) return rc;
    for (k = 0; k < 20; k++) u[k] = k % g_sw_data.num_users, it[k] = (k * 3) % g_sw_data.num_items;
    rc = ncf_predict_index(g_sw_model, u, it, 20, z);
    return rc == NCF_OK ? ncf_predict(g_sw_model, g_sw_data.raw_user[2], g_sw_data.raw_item[3], z) : rc;
}

/* An int8 file written, opened in place, served from the heap forms and the predict batch. */
static int sw_int8_in_place(void)
{
    void *buf = NULL;
    size_t len = 0;
    ncf_model *m = NULL;
    int64_t top[10];
    float z[4];
    int32_t u[4] = {0, 1, 2, 3}, it[4] = {3, 2, 1, 0};
    int rc = ncf_save_mem(g_sw_model, NCF_SAVE_INT8, &buf, &len);
    if (rc == NCF_OK && (rc = ncf_model_open(&m, buf, len, 0)) == NCF_OK) {
        rc = recommend_k(m, g_sw_data.raw_user[1], 10, 1, top, NULL);
        rc = rc < 0 ? rc : ncf_predict_index(m, u, it, 4, z);
        rc = rc < 0 ? rc : ncf_predict(m, g_sw_data.raw_user[2], g_sw_data.raw_item[3], z);
    }
    ncf_model_free(m);
    ncf_free(buf);
    return rc;
}

/* A log with text ids and quotes, min_rating and a random hold-out, read in memory. */
static int sw_load_text_ids(void)
{
    const char *text =
        "user;item;rating\n\"u1\";\"0440213320\";3\nu1;034545104X;5\nu2;0440213320;0\nu2;x\"\"y;4\nu3;034545104X;1\n"
        "u3;0440213320;5\nu3;z;2\n";
    ncf_dataset_opts o = ncf_dataset_opts_default();
    ncf_dataset d;
    int rc;
    o.eval_negatives = 1, o.min_rating = 1.0f;
    rc = ncf_load_dataset_mem(&d, "sweep", text, strlen(text), &o);
    ncf_dataset_free(&d);
    return rc;
}
/* Lists, many users, a fold-in, similar items, growth. */
static int sw_serving_options(void)
{
    ncf_rec_opts o = ncf_rec_opts_default();
    ncf_fold_opts fo = ncf_fold_opts_default();
    int32_t items[10], allow[3] = {1, 5, 2}, users[2] = {0, 3};
    float sc[20], row[64];
    int counts[2], rc;
    ncf_model *g = NULL;
    void *buf = NULL;
    size_t len;
    o.allow = allow, o.num_allow = 3, o.deny = allow + 2, o.num_deny = 1, fo.steps = 2;
    if ((rc = ncf_recommend_index(g_sw_model, 1, &o, items, sc)) < 0) return rc;
    o.allow = NULL, o.k = 5;
    if ((rc = ncf_recommend_users(g_sw_model, users, 2, &o, items, sc, counts)) != NCF_OK) return rc;
    if ((rc = ncf_fold_in(g_sw_model, NCF_USER, allow, 3, &fo, row)) != NCF_OK) return rc;
    if ((rc = ncf_similar(g_sw_model, NCF_ITEM, 2, &o, items, sc)) < 0) return rc;
    if ((rc = ncf_save_mem(g_sw_model, NCF_SAVE_ADAM, &buf, &len)) != NCF_OK) return rc;
    if ((rc = ncf_load_mem(&g, buf, len)) == NCF_OK) rc = ncf_model_grow(&g, &g_sw_data);
    ncf_free(buf), ncf_model_free(g);
    return rc;
}

/* Data from triples, eval negatives, a validation hold-out, popularity and evaluation with options. */
static int sw_split_and_evaluate(void)
{
    int64_t u[60], it[60], ts[60];
    ncf_dataset d;
    ncf_eval_opts eo = ncf_eval_opts_default();
    ncf_metrics a, b;
    int k, rc;
    for (k = 0; k < 60; k++) u[k] = k % 10, it[k] = (k * 7) % 17, ts[k] = k;
    if ((rc = ncf_dataset_from_triples(&d, u, it, ts, 60, 1)) != NCF_OK) return rc;
    rc = ncf_sample_eval_negatives(&d, 4, 1);
    if (rc == NCF_OK) rc = ncf_hold_out_validation(&d, 4, 2);
    eo.target = NCF_EVAL_VALIDATION;
    if (rc == NCF_OK) rc = ncf_evaluate(NULL, &d, &eo, &a);
    eo.target = NCF_EVAL_TEST, eo.full_ranking = 1, eo.max_users = 30;
    if (rc == NCF_OK) rc = ncf_evaluate(g_sw_model, &g_sw_data, &eo, &b);
    if (rc == NCF_OK) rc = ncf_evaluate(g_sw_model, &g_sw_data, &eo, &a); /* the old name: the same */
    if (rc == NCF_OK && (a.hr != b.hr || a.ndcg != b.ndcg)) rc = NCF_ERR_DATA;
    if (rc == NCF_OK) rc = ncf_evaluate(NULL, &d, &eo, &a);
    if (rc == NCF_OK)
        g_sw_digest = ncf__mix64((uint64_t)(a.hr * 1e9) ^ (uint64_t)(b.ndcg * 1e9) << 20 ^ (uint64_t)d.num_train);
    ncf_dataset_free(&d);
    return rc;
}
/* A ratio split with validation from a log in memory, ranked by a model and by popularity at
   two cut-offs, and fitted (its validation lists chosen on). */
static int sw_many_item_split(void)
{
    char log[4000];
    size_t n = 0;
    int k, rc, ks[2] = {3, 10};
    ncf_dataset_opts o = ncf_dataset_opts_default();
    ncf_eval_opts eo = ncf_eval_opts_default();
    ncf_fit_opts fo = ncf_fit_opts_default();
    ncf_fit_report fr;
    ncf_config c = ncf_config_default();
    ncf_dataset d;
    ncf_model *m = NULL;
    ncf_metrics a[2], b[2];
    for (k = 0; k < 150; k++) n += (size_t)sprintf(log + n, "%d,%d,%d\n", k % 12, (k * 7) % 23, k);
    o.holdout = NCF_HOLDOUT_RATIO, o.validation = 1, o.header = NCF_HEADER_NO, o.columns[NCF_COL_RATING] = "";
    o.columns[NCF_COL_TIME] = "3";
    if ((rc = ncf_load_dataset_mem(&d, "ratio.csv", log, n, &o)) != NCF_OK) return rc;
    c.num_users = d.num_users, c.num_items = d.num_items;
    eo.full_ranking = 1;
    rc = ncf_model_create(&m, &c);
    if (rc == NCF_OK) rc = ncf_evaluate_at(NULL, &d, &eo, ks, 2, a);
    if (rc == NCF_OK) rc = ncf_evaluate_at(m, &d, &eo, ks, 2, b);
    fo.epochs = 2, fo.eval.full_ranking = 1, fo.eval.metric = NCF_METRIC_NDCG;
    if (rc == NCF_OK) rc = ncf_fit(m, &d, &fo, &fr);
    {
        char prefix[1100];
        ncf_dataset back;
        snprintf(prefix, sizeof prefix, "%s/sw_split", g_dir);
        if (rc == NCF_OK) rc = ncf_save_split(&d, prefix);
        if (rc == NCF_OK && (rc = ncf_load_dataset(&back, prefix, NULL)) == NCF_OK) {
            if (back.num_train != d.num_train) rc = NCF_ERR_DATA;
            ncf_dataset_free(&back);
        }
    }
    if (rc == NCF_OK)
        g_sw_digest = ncf__mix64((uint64_t)(a[1].ndcg * 1e9) ^ (uint64_t)(b[0].map * 1e9) << 20 ^
                                 (uint64_t)(a[0].coverage * 1e9) ^ (uint64_t)fr.chosen_epoch << 50);
    ncf_model_free(m), ncf_dataset_free(&d);
    return rc;
}
/* Training by hand: examples drawn, a step, its parts, a loss, part of an epoch; then a NeuMF
   started from a GMF and an MLP. */
static int sw_steps_and_pretraining(void)
{
    ncf_sampler s;
    int32_t us[32], its[32];
    float lab[32];
    double loss = 0;
    uint64_t h[2];
    ncf_config c = ncf_config_default();
    ncf_model *gmf = NULL, *mlp = NULL, *nm = NULL;
    int rc;
    c.num_users = g_sw_data.num_users, c.num_items = g_sw_data.num_items, c.mf_dim = 4, c.num_layers = 2;
    c.layers[0] = 8, c.layers[1] = 4, c.batch_size = 16;
    rc = ncf_model_create(&nm, &c);
    if (rc == NCF_OK) rc = ncf_sampler_init(&s, &g_sw_data, 2, 5);
    if (rc == NCF_OK) rc = ncf__sampler_hash(&s, 1, 64, &h[0], &h[1]);
    if (rc == NCF_OK) ncf_sampler_fill(&s, 1, 0, 32, us, its, lab), rc = ncf_train_step(nm, us, its, lab, 32, &loss);
    if (rc == NCF_OK) rc = ncf_loss(nm, us, its, lab, 32, &loss);
    if (rc == NCF_OK) ncf__zero_grad(nm), rc = ncf_forward_backward(nm, us, its, lab, 32, &loss);
    if (rc == NCF_OK) ncf_update(nm), rc = ncf_train_examples(nm, &s, 2, 10, 100, NULL, NULL, &loss);
    if (rc == NCF_OK) g_sw_digest = h[0] ^ h[1] ^ (uint64_t)(loss * 1e12);
    c.model = NCF_GMF;
    if (rc == NCF_OK) rc = ncf_model_create(&gmf, &c);
    c.model = NCF_MLP;
    if (rc == NCF_OK) rc = ncf_model_create(&mlp, &c);
    if (rc == NCF_OK) rc = ncf_model_init_from(nm, gmf, mlp, 0.5f);
    ncf_model_free(gmf), ncf_model_free(mlp), ncf_model_free(nm);
    return rc;
}
/* ncf_fit, then a search with its final training, on data with validation items. */
static int sw_fit_and_tune(void)
{
    ncf_dataset d;
    ncf_config c = ncf_config_default();
    ncf_fit_opts fo = ncf_fit_opts_default();
    ncf_tune_opts to = ncf_tune_opts_default();
    ncf_tune_report rep;
    ncf_model *m = NULL, *final = NULL;
    int rc;
    long armed = g_alloc_fail_at;
    memset(&rep, 0, sizeof rep);
    g_alloc_fail_at = -1; /* (the data is the setting, not the call swept) */
    rc = ncf_synthetic(&d, 40, 30, 500, 3, 7);
    if (rc == NCF_OK) rc = ncf_hold_out_validation(&d, 5, 1);
    g_alloc_fail_at = armed;
    if (rc != NCF_OK) {
        ncf_dataset_free(&d);
        return NCF_ERR_DATA;
    }
    c.num_users = d.num_users, c.num_items = d.num_items, c.mf_dim = 4, c.num_layers = 2, c.layers[0] = 8,
    c.layers[1] = 4;
    rc = ncf_model_create(&m, &c);
    if (rc == NCF_OK) rc = ncf_fit(m, &d, &fo, NULL);
    fo.epochs = 2, to.max_epochs = 3, to.patience = 1;
    to.budget = 12 * ncf__tune_cost(&c, &d, 1); /* a few small runs */
    if (rc == NCF_OK) rc = ncf_tune(&d, &to, &rep);
    if (rc == NCF_OK && rep.too_small) rc = NCF_ERR_DATA;
    if (rc == NCF_OK) rc = ncf_tune_final(&final, &d, &rep, NULL, NULL);
    if (rc == NCF_OK)
        g_sw_digest =
            ncf__mix64((uint64_t)rep.num_runs << 32 ^ (uint64_t)rep.best ^ (uint64_t)(rep.runs[rep.best].val.hr * 1e9));
    ncf_tune_report_free(&rep);
    ncf_model_free(m), ncf_model_free(final), ncf_dataset_free(&d);
    return rc;
}
/* An output file written whole and committed, another discarded. */
static int sw_outputs(void)
{
    ncf__outfile *o = NULL;
    int rc = ncf__outfile_open(&o, g_sw_file);
    if (rc == NCF_OK && (rc = ncf__outfile_write(o, "a,b\n", 4)) == NCF_OK)
        rc = ncf__outfile_printf(o, "%d,%s\n", 1, "x");
    if (rc == NCF_OK) rc = ncf__outfile_commit(o);
    else if (o) ncf__outfile_discard(o);
    if (rc == NCF_OK && (rc = ncf__outfile_open(&o, g_sw_file)) == NCF_OK) ncf__outfile_discard(o);
    return rc;
}
/* The by-id calls: a known user's list (k past the stack's 64), a new user's, similar items. */
static int sw_by_id(void)
{
    static char ids[100 * (NCF_MAX_ID_BYTES + 1)];
    char user[32], item[2][32];
    const char *given[2] = {item[0], item[1]};
    int32_t close_by[5];
    ncf_rec_opts o = ncf_rec_opts_default();
    int n, rc;
    o.k = 100;
    ncf_id(g_sw_model, NCF_USER, 4, user, sizeof user), ncf_id(g_sw_model, NCF_ITEM, 2, item[0], sizeof item[0]);
    ncf_id(g_sw_model, NCF_ITEM, 9, item[1], sizeof item[1]);
    if ((n = rc = ncf_recommend_for_id(g_sw_model, user, &o, ids, sizeof ids, NULL)) < 0) return rc;
    o.k = 5;
    if ((rc = ncf_recommend_for_items(g_sw_model, given, 2, &o, NULL, ids + 5000, sizeof ids - 5000, NULL)) < 0)
        return rc;
    if ((rc = ncf_similar_to_id(g_sw_model, item[0], &o, ids + 9000, sizeof ids - 9000, NULL)) < 0) return rc;
    if ((rc = ncf_similar(g_sw_model, NCF_USER, 3, &o, close_by, NULL)) < 0) return rc;
    n += close_by[0] << 8;
    { /* an item folded in from users 1..4, scored for them */
        ncf_fold_opts fo = ncf_fold_opts_default();
        float row[64], z[4];
        int32_t us[4] = {1, 2, 3, 4};
        fo.steps = 2;
        if (ncf_row_size(g_sw_model) > 64) return NCF_ERR_ARG;
        if ((rc = ncf_fold_in(g_sw_model, NCF_ITEM, us, 4, &fo, row)) != NCF_OK) return rc;
        if ((rc = ncf_predict_for(g_sw_model, NCF_ITEM, -1, row, us, 4, z)) != NCF_OK) return rc;
        if ((rc = ncf_predict_for(g_sw_model, NCF_ITEM, 5, NULL, us, 4, z)) != NCF_OK) return rc;
        n ^= (int)(z[2] * 1000);
    }
    g_sw_digest = digest_text(digest_text(digest_text((uint64_t)n, ids), ids + 5000), ids + 9000);
    return NCF_OK;
}
/* A user and an item added to a model with text ids, and a known user's rows replaced. */
static int sw_model_add(void)
{
    ncf_dataset d;
    ncf_config c = ncf_config_default();
    ncf_model *m = NULL;
    float row[64], two[128];
    int rc;
    if (sw_quiet_load(&d, 1, 0) != NCF_OK) return NCF_ERR_DATA;
    memset(two, 0, sizeof two), two[1] = 0.25f;
    c.num_users = d.num_users, c.num_items = d.num_items, c.mf_dim = 4, c.num_layers = 2, c.layers[0] = 8,
    c.layers[1] = 4;
    memset(row, 0, sizeof row), row[0] = 0.5f;
    rc = ncf_model_create(&m, &c);
    if (rc == NCF_OK) rc = ncf_model_set_ids(m, &d);
    if (rc == NCF_OK) rc = ncf_model_add(&m, 0, (const char *[]){"b2"}, row, 1);
    if (rc == NCF_OK) rc = ncf_model_add(&m, 1, (const char *[]){"y2", "y3"}, two, 2);
    if (rc == NCF_OK) rc = ncf_model_add(&m, 0, (const char *[]){"a"}, row, 1);
    if (rc == NCF_OK) g_sw_digest = digest_ids(m, NULL);
    ncf_model_free(m), ncf_dataset_free(&d);
    return rc;
}
/* Scores by index, a user's row scoring items, a verified open and the workspace forms. */
static int sw_indices_rows_and_workspaces(void)
{
    int32_t u[4] = {0, 1, 2, 3}, it[4] = {3, 2, 1, 0};
    float z[5], row[64];
    int64_t top[5];
    void *buf = NULL, *work = NULL;
    size_t len = 0, size;
    ncf_model *m = NULL;
    int32_t best[5];
    ncf_rec_opts o = ncf_rec_opts_default();
    int rc;
    o.k = 5;
    ncf_model_params_changed(g_sw_model); /* (out of memory: no cache, the same scores) */
    rc = ncf_predict_index(g_sw_model, u, it, 4, z);
    if (rc == NCF_OK && (rc = ncf_recommend_index(g_sw_model, 3, &o, best, NULL)) == 5)
        g_sw_digest =
            ncf__hash_pairs((uint64_t)(int64_t)(z[0] * 1e6) ^ (uint64_t)(int64_t)(z[3] * 1e6) << 32, best, best, 5),
        rc = NCF_OK;
    if (rc == NCF_OK && ncf_row_size(g_sw_model) <= 64 && (rc = ncf_row(g_sw_model, NCF_USER, 2, row)) == NCF_OK)
        rc = ncf_predict_for(g_sw_model, NCF_USER, -1, row, it, 4, z);
    if (rc == NCF_OK) rc = ncf_save_mem(g_sw_model, NCF_SAVE_MODEL, &buf, &len);
    if (rc == NCF_OK && (rc = ncf_model_open(&m, buf, len, NCF_OPEN_VERIFIED)) == NCF_OK) {
        size = rec_size_k(m, 5);
        work = malloc(size); /* (the caller's memory: not the library's to fail) */
        if (!work) rc = NCF_ERR_DATA;
        else if ((rc = recommend_with_k(m, g_sw_data.raw_user[1], 5, 1, top, z, work, size)) >= 0)
            rc = ncf_predict(m, g_sw_data.raw_user[1], g_sw_data.raw_item[2], z);
        free(work);
    }
    ncf_model_free(m), ncf_free(buf);
    return rc;
}

/* Side features read from a file and from a CSR matrix, a cold split, a features model trained,
   a new item added from its features, saved and read back, the baseline. */
static int sw_features(void)
{
    static const char log[] = "u1,i1\nu1,i2\nu2,i2\nu2,i3\nu3,i1\nu3,i3\nu4,i1\nu4,i2\nu5,i3\nu5,i1\n";
    static const char feats[] = "item,genres\ni1,a|b\ni2,b\ni3,c\nnew,a|c\n";
    const char *ids[2] = {"x", "y"}, *names[2] = {"a", "b"}, *toks[1] = {"b"};
    int64_t ptr[3] = {0, 1, 2};
    int32_t idx[2] = {1, 0};
    ncf_dataset d;
    ncf_features f, g;
    ncf_dataset_opts o = ncf_dataset_opts_default();
    ncf_config c = ncf_config_default();
    ncf_model *m = NULL, *back = NULL;
    ncf_sampler s;
    float row[64], sc[8];
    void *buf = NULL;
    size_t len = 0;
    int rc, added = 0;
    memset(&d, 0, sizeof d), memset(&f, 0, sizeof f), memset(&g, 0, sizeof g);
    o.holdout = NCF_HOLDOUT_ITEMS, o.holdout_fraction = 0.3f;
    write_file("sweep_features.csv", feats);
    rc = ncf_load_dataset_mem(&d, "sweep.log", log, sizeof log - 1, &o);
    if (rc == NCF_OK) rc = ncf_load_features(&f, path_in_dir("sweep_features.csv"), NULL);
    if (rc == NCF_OK) rc = ncf_features_from_csr(&g, 2, ids, 2, names, ptr, idx, NULL);
    c.num_users = d.num_users, c.num_items = d.num_items, c.mf_dim = 4, c.layers[0] = 8, c.layers[1] = 4;
    c.num_layers = 2, c.batch_size = 8;
    if (rc == NCF_OK) rc = ncf_model_create(&m, &c);
    if (rc == NCF_OK) rc = ncf_model_set_ids(m, &d);
    if (rc == NCF_OK) rc = ncf_model_set_features(m, NCF_ITEM, &f, &d, 0, 1.0f);
    if (rc == NCF_OK) rc = ncf_sampler_init(&s, &d, 2, 1);
    if (rc == NCF_OK) rc = ncf_train_epoch(m, &s, 1, NULL, NULL, NULL);
    if (rc == NCF_OK) rc = ncf_feature_popularity(&f, &d, sc);
    if (rc == NCF_OK) rc = ncf_model_add_features(&m, NCF_ITEM, &f, &added);
    if (rc == NCF_OK && (rc = ncf_feature_row(m, NCF_ITEM, toks, NULL, 1, row)) > 0) rc = NCF_ERR_DATA;
    if (rc == NCF_OK) rc = ncf_save_mem(m, NCF_SAVE_MODEL, &buf, &len);
    if (rc == NCF_OK) rc = ncf_load_mem(&back, buf, len);
    if (rc == NCF_OK)
        g_sw_digest = (uint64_t)added ^ (uint64_t)back->cfg.num_items << 8 ^ (uint64_t)g.num_features << 16;
    ncf_model_free(m), ncf_model_free(back), ncf_free(buf);
    ncf_features_free(&f), ncf_features_free(&g), ncf_dataset_free(&d);
    return rc;
}

/* Every public call that can allocate, swept (what each case calls, by name), and every one
   that allocates nothing, checked so: make test compares the two lists with ncf.h's API, so a
   new call is in one or the other. */
static const struct {
    const char *name;
    int (*fn)(void);
} SWEPT[] = {{"load ratings.dat: ncf_load_dataset", sw_load_dat},
             {"load ratings.csv", sw_load_csv},
             {"load u.data", sw_load_tab},
             {"load the paper split", sw_load_split},
             {"ncf_synthetic ncf_sample_eval_negatives", sw_synthetic},
             {"model create: ncf_model_create ncf_model_set_ids", sw_model_create},
             {"two models trained side by side and averaged: ncf_train_epoch_each ncf_model_average", sw_average},
             {"an epoch: ncf_sampler_init ncf_train_epoch", sw_epoch},
             {"ALS epochs", sw_als},
             {"evaluate (sampled, full): ncf_evaluate", sw_evaluate},
             {"save and load (memory): ncf_save_mem ncf_load_mem", sw_save_load_mem},
             {"save and load (file), read to open in place: ncf_save ncf_load ncf_model_read_file", sw_save_load_file},
             {"recommend, predict: ncf_recommend ncf_predict_index ncf_predict", sw_serve},
             {"int8 save, open in place, serve: ncf_model_open", sw_int8_in_place},
             {"a log with text ids: ncf_load_dataset_mem", sw_load_text_ids},
             {"lists, many users, fold-in, similar, growth: ncf_recommend_index ncf_recommend_users ncf_fold_in "
              "ncf_similar ncf_model_grow",
              sw_serving_options},
             {"text ids: set, added to a dataset, a model grown: ncf_dataset_add_ids", sw_ids_text},
             {"integer ids: set, added to a dataset, a model grown", sw_ids_int},
             {"weighted log, validation, ids added, an epoch", sw_weighted},
             {"triples, a hold-out, popularity, options: ncf_dataset_from_triples ncf_hold_out_validation",
              sw_split_and_evaluate},
             {"a split of many items a user, ranked at two cut-offs, fitted, saved and read back: ncf_evaluate_at "
              "ncf_save_split",
              sw_many_item_split},
             {"steps by hand, pre-training: ncf_sampler_fill ncf_train_step ncf_loss ncf_forward_backward "
              "ncf_update ncf_train_examples ncf_model_init_from",
              sw_steps_and_pretraining},
             {"a fit and a search: ncf_fit ncf_tune ncf_tune_final ncf_tune_report_free", sw_fit_and_tune},
             {"outputs written whole (the private file writer the demo uses)", sw_outputs},
             {"features: ncf_load_features ncf_load_features_mem ncf_features_from_csr ncf_model_set_features "
              "ncf_feature_popularity ncf_model_add_features ncf_feature_row",
              sw_features},
             {"indices, rows, a verified open, workspaces: ncf_model_params_changed ncf_predict_index ncf_row "
              "ncf_predict_for",
              sw_indices_rows_and_workspaces},
             {"by id, similar users, an item folded in: ncf_recommend_for_id ncf_recommend_for_items ncf_similar_to_id",
              sw_by_id},
             {"a user and an item added: ncf_model_add", sw_model_add}};

static void test_every_failed_allocation_returns_nomem(void)
{
    ncf_config c = ncf_config_default();
    char prefix[300];
    long cases = 0;
    int q, threads = ncf_set_threads(0);
    ncf_set_threads(1); /* the hooks count allocations in one thread */
    write_ratings("sweep.dat", "::", NULL, "%.0f");
    write_ratings("sweep.csv", ",", "userId,movieId,rating,timestamp", "%.1f");
    write_ratings("sweep.data", "\t", NULL, "%.0f");
    CHECK(ncf_synthetic(&g_sw_data, 50, 30, 700, 4, 6) == NCF_OK &&
          ncf_sample_eval_negatives(&g_sw_data, 5, 1) == NCF_OK);
    snprintf(prefix, sizeof prefix, "%s/sweep_split", g_dir);
    write_ncf_split(&g_sw_data, prefix);
    snprintf(g_sw_file, sizeof g_sw_file, "%s", path_in_dir("sweep.ncf"));
    c.num_users = g_sw_data.num_users, c.num_items = g_sw_data.num_items, c.batch_size = 64;
    CHECK(ncf_model_create(&g_sw_model, &c) == NCF_OK && ncf_model_set_ids(g_sw_model, &g_sw_data) == NCF_OK);
    for (q = 0; g_sw_model && q < (int)(sizeof SWEPT / sizeof *SWEPT); q++) {
        long k, nok = 0;
        uint64_t *ok_digest = (uint64_t *)malloc(sizeof(uint64_t) * 100000);
        long *ok_at = (long *)malloc(sizeof(long) * 100000);
        for (k = 0; k < 100000; k++) {
            int rc;
            g_sw_digest = 0;
            g_alloc_count = 0, g_alloc_fail_at = k;
            rc = SWEPT[q].fn();
            g_alloc_fail_at = -1;
            cases++;
            CHECKF(rc == NCF_OK || rc == NCF_ERR_NOMEM, "%s, allocation %ld failing: rc %d (%s)", SWEPT[q].name, k, rc,
                   ncf_error_text());
            if (g_alloc_count <= k) { /* ran to the end with no failure: what every NCF_OK must have done */
                long j;
                CHECKF(rc == NCF_OK, "%s: %s", SWEPT[q].name, ncf_error_text());
                for (j = 0; j < nok; j++)
                    CHECKF(ok_digest[j] == g_sw_digest,
                           "%s: NCF_OK with allocation %ld failing, but not the same result", SWEPT[q].name, ok_at[j]);
                break;
            }
            if (rc == NCF_OK) ok_digest[nok] = g_sw_digest, ok_at[nok++] = k;
        }
        free(ok_digest), free(ok_at);
    }
    ncf_set_threads(threads);
    printf("    %ld (call, k) cases over %d calls: each returned NCF_OK or NCF_ERR_NOMEM\n", cases,
           (int)(sizeof SWEPT / sizeof *SWEPT));
    ncf_model_free(g_sw_model), g_sw_model = NULL;
    ncf_dataset_free(&g_sw_data);
}

/* The public calls that never allocate (make test checks that these and the swept calls are
   every call ncf.h declares): each called here on a model, data, options and a workspace,
   and the allocator's count unchanged. The MPI calls (NCF_MPI builds) are tests/mpi.c's. */
static const char ALLOCATE_NOTHING[] =
    "ncf_config_default ncf_config_mlperf ncf_dataset_free ncf_dataset_find ncf_dataset_id ncf_error_text "
    "ncf_version ncf_set_threads ncf_dataset_opts_default ncf_eval_opts_default ncf_fit_opts_default "
    "ncf_fold_opts_default ncf_rec_opts_default ncf_tune_opts_default ncf_row ncf_fold_workspace_size "
    "ncf_rec_workspace_size ncf_row_size ncf_find ncf_id ncf_metric_value ncf_free ncf_model_free "
    "ncf_features_opts_default ncf_features_free";
static const char MPI_CALLS[] =
    "ncf_mpi_shard ncf_mpi_train_epoch ncf_mpi_train_examples ncf_mpi_sync ncf_mpi_evaluate "
    "ncf_mpi_model_create ncf_mpi_shard_model ncf_mpi_load ncf_mpi_save ncf_mpi_load_dataset";

static void test_calls_said_to_allocate_nothing_allocate_nothing(void)
{
    ncf_dataset d;
    ncf_model *m = NULL;
    ncf_config c = ncf_config_default();
    ncf_sampler s;
    ncf_rec_opts ro = ncf_rec_opts_default();
    char id[64], made[4096] = "", word[64];
    const char *p;
    float row[256];
    long before;
    int n;
    CHECK(ncf_synthetic(&d, 30, 20, 300, 3, 2) == NCF_OK);
    c.num_users = d.num_users, c.num_items = d.num_items;
    CHECK(ncf_model_create(&m, &c) == NCF_OK && ncf_model_set_ids(m, &d) == NCF_OK &&
          ncf_sampler_init(&s, &d, 4, 1) == NCF_OK);
    before = g_alloc_calls;
#define NOTHING(call) ((void)(call), strcat(made, #call " "))
    NOTHING(ncf_config_default()), NOTHING(ncf_config_mlperf()), NOTHING(ncf_error_text()), NOTHING(ncf_version());
    NOTHING(ncf_dataset_find(&d, NCF_USER, "3")), NOTHING(ncf_dataset_find(&d, NCF_ITEM, "4"));
    NOTHING(ncf_dataset_id(&d, NCF_USER, 3, id, sizeof id)), NOTHING(ncf_dataset_id(&d, NCF_ITEM, 4, id, sizeof id));
    NOTHING(ncf_set_threads(0)), NOTHING((ncf_set_threads(ncf_set_threads(0)), 0));
    NOTHING(ncf_dataset_opts_default()), NOTHING(ncf_eval_opts_default()), NOTHING(ncf_fit_opts_default());
    NOTHING(ncf_fold_opts_default()), NOTHING(ncf_rec_opts_default()), NOTHING(ncf_tune_opts_default());
    NOTHING(ncf_fold_workspace_size(m, 5)), NOTHING(ncf_rec_workspace_size(m, &ro)), NOTHING(rec_size_k(m, 10));
    NOTHING(ncf_row_size(m)), NOTHING(ncf_find(m, NCF_USER, "3")), NOTHING(ncf_find(m, NCF_ITEM, "4"));
    NOTHING(ncf_row(m, NCF_ITEM, 2, row)), NOTHING(ncf_row(m, NCF_USER, 2, row));
    NOTHING(ncf_id(m, NCF_USER, 3, id, sizeof id)), NOTHING(ncf_id(m, NCF_ITEM, 4, id, sizeof id));
    NOTHING(ncf__tune_cost(&c, &d, 2)), NOTHING((int)ncf_metric_value(NULL, 0)), NOTHING((ncf_free(NULL), 0)),
        NOTHING((ncf_model_free(NULL), 0));
    NOTHING((ncf_dataset_free(NULL), 0)), NOTHING(ncf__decayed_lr(0.1f, 1, 4));
    NOTHING(ncf_features_opts_default()), NOTHING((ncf_features_free(NULL), 0));
#undef NOTHING
    CHECKF(g_alloc_calls == before, "%ld allocations", g_alloc_calls - before);
    for (p = ALLOCATE_NOTHING, n = 0; sscanf(p, "%62s", word) == 1; n++) {
        p = strstr(p, word) + strlen(word);
        strcat(word, "(");
        CHECKF(strstr(made, word) != NULL, "%s listed as allocating nothing, but not called here", word);
    }
    ncf_model_free(m), ncf_dataset_free(&d);
    printf("    %d calls, 0 allocations (the MPI calls are not swept: %s)\n", n, MPI_CALLS);
}
