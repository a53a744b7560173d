/* tests/test_features.c - side features: the reader, the gradients through them, a new item
   served from them, the cold-start split. Included by tests.c (one program). */
/* ---- >>features: files, gradients, new entities, cold items ------------------------------- */

/* The features of f's entity with id as one string "tok:w tok:w" (tokens ascending). */
static void features_of(const ncf_features *f, const char *id, char *out, size_t size)
{
    int k;
    int64_t j;
    out[0] = 0;
    for (k = 0; k < f->num_entities; k++) {
        size_t len = (size_t)(f->ids_at[k + 1] - f->ids_at[k]), at = 0;
        if (len != strlen(id) || memcmp(f->ids + f->ids_at[k], id, len)) continue;
        for (j = f->ptr[k]; j < f->ptr[k + 1]; j++) {
            int32_t t = f->feat[j];
            int n =
                snprintf(out + at, size - at, "%s%.*s:%g", j > f->ptr[k] ? " " : "",
                         (int)(f->vocab_at[t + 1] - f->vocab_at[t]), f->vocab + f->vocab_at[t], (double)f->weight[j]);
            if (n < 0 || (size_t)n >= size - at) return; /* (the tests' strings are short: a cut one fails its check) */
            at += (size_t)n;
        }
        return;
    }
    snprintf(out, size, "(absent)");
}

static int load_features_text(ncf_features *f, const char *text, const char *cols)
{
    ncf_features_opts o = ncf_features_opts_default();
    o.columns = cols;
    return ncf_load_features_mem(f, "feat.csv", text, strlen(text), &o);
}

static void test_features_files_read_in_every_shape(void)
{
    ncf_features f;
    char s[256];
    /* a token column (MovieLens movies.csv), quotes, CRLF, a BOM, an id only here */
    CHECK(load_features_text(&f,
                             "\xEF\xBB\xBFmovieId,title,genres\r\n1,\"Toy Story, (1995)\",Comedy|Animation\r\n"
                             "2,Heat,Action| Crime \r\n\"0042\",x,Drama\r\n",
                             NULL) == NCF_OK);
    CHECK(f.num_entities == 3 && f.num_features == 5 && f.records == 3);
    features_of(&f, "1", s, sizeof s);
    CHECKF(!strcmp(s, "Animation:1 Comedy:1"), "%s", s);
    features_of(&f, "2", s, sizeof s);
    CHECKF(!strcmp(s, "Action:1 Crime:1"), "%s", s);
    features_of(&f, "0042", s, sizeof s);
    CHECKF(!strcmp(s, "Drama:1"), "%s", s); /* (the id as written) */
    ncf_features_free(&f);
    /* long form with weights (tags): an entity's rows add up, a repeated tag sums */
    CHECK(load_features_text(&f, "item\ttag\tweight\na\tfunny\t0.5\nb\tdark\t2\na\tdark\t1\na\tfunny\t0.25\n", NULL) ==
          NCF_OK);
    features_of(&f, "a", s, sizeof s);
    CHECKF(!strcmp(s, "dark:1 funny:0.75"), "%s", s);
    features_of(&f, "b", s, sizeof s);
    CHECKF(!strcmp(s, "dark:2"), "%s", s);
    ncf_features_free(&f);
    /* flags (u.item's genres): each 1 is its column's feature */
    CHECK(load_features_text(&f, "7|T|0|1|1\n8|U|1|0|0\n", "1,3-5") == NCF_OK);
    features_of(&f, "7", s, sizeof s);
    CHECKF(!strcmp(s, "4:1 5:1"), "%s", s);
    features_of(&f, "8", s, sizeof s);
    CHECKF(!strcmp(s, "3:1"), "%s", s);
    ncf_features_free(&f);
    /* categories (u.user): name=value, by header names */
    CHECK(load_features_text(&f, "id;age;sex;job\nu1;24;M;technician\nu2;53;F;other\n", "id,age,sex,job") == NCF_OK);
    features_of(&f, "u1", s, sizeof s);
    CHECKF(!strcmp(s, "age=24:1 job=technician:1 sex=M:1"), "%s", s);
    ncf_features_free(&f);
    /* a CSR matrix, as LightFM takes features */
    {
        const char *ids[2] = {"x", "y"}, *names[3] = {"c", "a", "b"};
        int64_t ptr[3] = {0, 2, 3};
        int32_t idx[3] = {0, 2, 1};
        float w[3] = {1, 3, 2};
        CHECK(ncf_features_from_csr(&f, 2, ids, 3, names, ptr, idx, w) == NCF_OK);
        features_of(&f, "x", s, sizeof s);
        CHECKF(!strcmp(s, "b:3 c:1"), "%s", s);
        features_of(&f, "y", s, sizeof s);
        CHECKF(!strcmp(s, "a:2"), "%s", s);
        ncf_features_free(&f);
    }
}

static void test_bad_features_files_refused_with_file_and_line(void)
{
    static const struct {
        const char *text, *cols, *want;
    } bad[] = {
        {"id,genres\n1,A\n2\n", NULL, "feat.csv:3: 1 fields"},
        {"id,tag,weight\n1,A,0.5\n2,B,heavy\n", NULL, "feat.csv:3: weight 'heavy'"},
        {"id,tag,weight\n1,A,-1\n", NULL, "feat.csv:2: weight '-1'"},
        {"id,genres\n1,A\n\"2,B\n", NULL, "feat.csv:3: a quote opened"},
        {"id,genres\n,A\n", NULL, "feat.csv:2: no id"},
        {"id,genres\n1,A\n", "id,colour", "no column named 'colour'"},
        {"1,A\n", "1,0-3", "not a range"},
    };
    ncf_features f;
    char longid[400];
    int k;
    for (k = 0; k < (int)(sizeof bad / sizeof *bad); k++) {
        CHECK_ERR(load_features_text(&f, bad[k].text, bad[k].cols), k == 5 || k == 6 ? NCF_ERR_ARG : NCF_ERR_PARSE,
                  bad[k].want);
        CHECK(f.num_entities == 0 && !f.ids && !f.feat); /* (left empty) */
    }
    memset(longid, 'x', 300), memcpy(longid + 300, ",A\n", 4);
    CHECK_ERR(load_features_text(&f, longid, NULL), NCF_ERR_PARSE, "feat.csv:1: an id longer than 256 bytes");
}

/* A megabyte of features, each token distinct (the most a file can ask for), reads within a
   few times its size. */
static void test_features_file_memory_bounded_by_its_size(void)
{
    size_t n = 1 << 20, at = 0;
    char *text = (char *)malloc(n + 64);
    long before_b, before_r;
    ncf_features f;
    int k = 0;
    if (!text) return;
    at += (size_t)snprintf(text, 64, "id,tags\n");
    while (at < n) at += (size_t)snprintf(text + at, 64, "%d,%x|%xy|%xz\n", k / 7, k, k, k), k++;
    before_b = g_alloc_bytes, before_r = g_realloc_bytes;
    CHECK(ncf_load_features_mem(&f, "big.csv", text, at, NULL) == NCF_OK);
    printf("    %lu bytes, %d entities, %d features: %.1f MB allocated\n", (unsigned long)at, f.num_entities,
           f.num_features, (double)(g_alloc_bytes - before_b + g_realloc_bytes - before_r) / 1e6);
    CHECKF(g_alloc_bytes - before_b + g_realloc_bytes - before_r < 40L * (long)at, "%ld bytes for a %lu-byte file",
           g_alloc_bytes - before_b + g_realloc_bytes - before_r, (unsigned long)at);
    ncf_features_free(&f), free(text);
}

/* A log of 6 users and 8 items with text ids, and features of both sides (item "new" in the
   features only). */
static const char FEAT_LOG[] = "u1,i1\nu1,i2\nu1,i5\nu2,i2\nu2,i3\nu3,i1\nu3,i4\nu3,i6\nu4,i7\nu4,i8\nu4,i2\nu5,i3\n"
                               "u5,i5\nu6,i6\nu6,i8\nu6,i1\n";
static const char FEAT_ITEMS[] = "item,genres\ni1,a|b\ni2,b\ni3,c|a\ni4,d\ni5,a\ni6,b|d\ni7,c\ni8,e|a|b\nnew,a|c\n";
static const char FEAT_USERS[] = "user,tags\nu1,x\nu2,y|x\nu3,z\nu5,y\n";

static int feature_data(ncf_dataset *d, ncf_features *fi, ncf_features *fu)
{
    ncf_dataset_opts o = ncf_dataset_opts_default();
    o.holdout = NCF_HOLDOUT_NONE;
    return ncf_load_dataset_mem(d, "feat.log", FEAT_LOG, sizeof FEAT_LOG - 1, &o) == NCF_OK &&
        load_features_text(fi, FEAT_ITEMS, NULL) == NCF_OK && load_features_text(fu, FEAT_USERS, NULL) == NCF_OK;
}

/* Every gradient the features receive, against central differences of the loss, in each model:
   a batch composed, its gradients passed on to the id and feature embeddings (the library's
   step, stopped before the update), then each embedding value moved both ways. */
static void test_feature_gradients_match_finite_differences(void)
{
    static const ncf_model_type types[4] = {NCF_NEUMF, NCF_GMF, NCF_MLP, NCF_MF};
    static const char *const names[4] = {"NeuMF", "GMF", "MLP", "MF"};
    int32_t users[6] = {0, 1, 2, 3, 4, 5}, items[6] = {0, 2, 4, 6, 1, 7};
    float labels[6] = {1, 0, 1, 1, 0, 0};
    ncf_dataset d;
    ncf_features fi, fu;
    int t, checked = 0;
    if (!feature_data(&d, &fi, &fu)) {
        CHECK(0);
        return;
    }
    for (t = 0; t < 4; t++) {
        ncf_config c = ncf_config_default();
        ncf_model *m = NULL;
        float row[64];
        double worst = 0;
        int s, R;
        c.model = types[t], c.num_users = d.num_users, c.num_items = d.num_items, c.mf_dim = 4, c.num_layers = 3;
        c.layers[0] = 8, c.layers[1] = 4, c.layers[2] = 2, c.mf_reg = 0, c.init_sd = 0.5f;
        memset(c.mlp_reg, 0, sizeof c.mlp_reg);
        CHECK(ncf_model_create(&m, &c) == NCF_OK && ncf_model_set_ids(m, &d) == NCF_OK);
        CHECK(ncf_model_set_features(m, NCF_ITEM, &fi, &d, 0, 0.5f) == NCF_OK); /* (scales: their chain rule too) */
        CHECK(ncf_model_set_features(m, NCF_USER, &fu, &d, NCF_FEATURES_NO_ID, 2.0f) == NCF_OK);
        R = ncf_row_size(m);
        if (!m || R > 64) {
            ncf_model_free(m);
            continue;
        }
        ncf__compose_all(m, row);
        CHECK(ncf_forward_backward(m, users, items, labels, 6, NULL) == NCF_OK);
        ncf__pass_grads(m, row);
        for (s = 0; s < 2; s++) {
            ncf__fside *f = &m->scratch->feat->side[s];
            int which;
            for (which = 0; which < 2; which++) { /* the feature embeddings, then the id embeddings */
                float *p = which ? f->id : f->emb, *g = which ? f->g_id : f->g_emb;
                size_t n = (size_t)(which ? f->ents : f->n) * R, j;
                for (j = 0; j < n; j++) {
                    double lp, lm, fd, h = 1e-2;
                    float keep = p[j];
                    if (which && !f->has_id[j / R]) continue;
                    if (m->cfg.model != NCF_MF && (int)(j % R) == R - 1) continue; /* (no bias slot) */
                    p[j] = keep + (float)h, ncf__compose_all(m, row), ncf_loss(m, users, items, labels, 6, &lp);
                    p[j] = keep - (float)h, ncf__compose_all(m, row), ncf_loss(m, users, items, labels, 6, &lm);
                    p[j] = keep;
                    fd = (lp - lm) / (2 * h);
                    if (fabs(fd - g[j]) > worst) worst = fabs(fd - g[j]);
                    CHECKF(fabs(fd - g[j]) <= 2e-4 + 2e-2 * fabs(fd), "%s side %d %s[%lu]: %g by differences, %g",
                           names[t], s, which ? "id" : "features", (unsigned long)j, fd, (double)g[j]);
                    checked++;
                }
            }
        }
        printf("    %s: worst |difference - gradient| %.2g\n", names[t], worst);
        ncf_model_free(m);
    }
    CHECK(checked > 100);
    ncf_features_free(&fi), ncf_features_free(&fu), ncf_dataset_free(&d);
}

/* Progress's last report of an epoch: examples done of total. */
static void last_progress(void *ctx, int64_t done, int64_t total, double loss)
{
    int64_t *seen = (int64_t *)ctx;
    (void)loss;
    seen[0] = done, seen[1] = total, seen[2]++;
}

/* A features model trained, a brand-new item added from its features alone: it is scored,
   recommended and saved like any other, and the file gives it back with the same bits, copied
   or read in place. */
static void test_a_new_item_from_its_features_served_saved_and_loaded(void)
{
    ncf_dataset d;
    ncf_features fi, fu;
    ncf_config c = ncf_config_default();
    ncf_model *m = NULL, *back = NULL, *place = NULL;
    ncf_sampler smp;
    const char *toks[2] = {"a", "c"};
    float row[64], want[64], z[8], zb[8], zp[8];
    int32_t us[6] = {0, 1, 2, 3, 4, 5}, it[6], top[9], topb[9];
    void *buf = NULL, *aligned = NULL;
    size_t len = 0;
    int e, added = 0, k, n, nb, i;
    ncf_rec_opts ro = ncf_rec_opts_default();
    if (!feature_data(&d, &fi, &fu)) {
        CHECK(0);
        return;
    }
    c.num_users = d.num_users, c.num_items = d.num_items, c.mf_dim = 4, c.layers[0] = 8, c.layers[1] = 4,
    c.num_layers = 2, c.batch_size = 8, c.lr = 0.01f;
    CHECK(ncf_model_create(&m, &c) == NCF_OK && ncf_model_set_ids(m, &d) == NCF_OK &&
          ncf_model_set_features(m, NCF_ITEM, &fi, &d, 0, 1.5f) == NCF_OK &&
          ncf_sampler_init(&smp, &d, 4, 1) == NCF_OK);
    for (e = 1; m && e <= 3; e++) { /* every step taken, and progress told of every example */
        int64_t seen[3] = {0, 0, 0};
        CHECK(ncf_train_epoch(m, &smp, e, last_progress, seen, NULL) == NCF_OK);
        CHECKF(m->step == e * NCF__CEIL_DIV(smp.num_examples, c.batch_size) && seen[0] == smp.num_examples &&
                   seen[1] == smp.num_examples && seen[2] > 0,
               "epoch %d: step %lld, progress %lld of %lld", e, (long long)m->step, (long long)seen[0],
               (long long)seen[1]);
    }
    CHECK(ncf_model_add_features(&m, NCF_ITEM, &fi, &added) == NCF_OK && added == 1);
    CHECK(m && m->cfg.num_items == 9 && ncf_find(m, NCF_ITEM, "new") == 8);
    CHECK(ncf_feature_row(m, NCF_ITEM, toks, NULL, 2, want) == 0 && ncf_row(m, NCF_ITEM, 8, row) == NCF_OK);
    CHECK(!memcmp(row, want, sizeof(float) * (size_t)ncf_row_size(m)));
    {
        float bad[2] = {1.0f, -1.0f};
        CHECK_ERR(ncf_feature_row(m, NCF_ITEM, toks, bad, 2, row), NCF_ERR_ARG, "weights[1] = -1");
    }
    for (k = 0; k < 6; k++) it[k] = 8;
    CHECK(ncf_predict_index(m, us, it, 6, z) == NCF_OK);
    ro.k = 9, ro.exclude_rated = 0;
    n = ncf_recommend_index(m, 0, &ro, top, NULL);
    for (k = 0, i = 0; k < n; k++) i |= top[k] == 8;
    CHECKF(n == 9 && i, "the new item is one of the %d recommended", n);
    CHECK(ncf_save_mem(m, NCF_SAVE_MODEL, &buf, &len) == NCF_OK && ncf_load_mem(&back, buf, len) == NCF_OK);
    CHECK(back && ncf_find(back, NCF_ITEM, "new") == 8 && ncf_predict_index(back, us, it, 6, zb) == NCF_OK &&
          !memcmp(z, zb, sizeof z[0] * 6));
    nb = back ? ncf_recommend_index(back, 0, &ro, topb, NULL) : -1;
    CHECK(nb == n && !memcmp(top, topb, sizeof top[0] * (size_t)(n > 0 ? n : 0)));
    CHECK(back && ncf_feature_row(back, NCF_ITEM, toks, NULL, 2, row) == 0 && !memcmp(row, want, sizeof(float) * 5));
    if ((aligned = malloc(len + 8)) != NULL) { /* read in place, as a device reads it: serves the same */
        void *a8 = (char *)aligned + ((8 - ((uintptr_t)aligned & 7)) & 7);
        memcpy(a8, buf, len);
        CHECK(ncf_model_open(&place, a8, len, 0) == NCF_OK && ncf_predict_index(place, us, it, 6, zp) == NCF_OK &&
              !memcmp(z, zp, sizeof z[0] * 6));
        ncf_model_free(place);
        free(aligned);
    }
    ncf_free(buf), ncf_model_free(back), ncf_model_free(m);
    ncf_features_free(&fi), ncf_features_free(&fu), ncf_dataset_free(&d);
}

/* A log of 40 users and 30 items, each user 8 items; poisoned, every user takes every cold item. */
static char *cold_log(int poison, const uint8_t *cold)
{
    char *t = (char *)malloc(40 * (8 + 30) * 16 + 1);
    size_t at = 0;
    int u, j;
    if (!t) return NULL;
    for (u = 0; u < 40; u++) {
        for (j = 0; j < 8; j++) at += (size_t)snprintf(t + at, 16, "%d,%d\n", u + 1, (u * 7 + j * 3 + j * j) % 30 + 1);
        for (j = 0; poison && j < 30; j++)
            if (cold[j]) at += (size_t)snprintf(t + at, 16, "%d,%d\n", u + 1, j + 1);
    }
    t[at] = 0;
    return t;
}

/* The cold-start split holds whole items out: none of a test item's interactions is trained on
   or validated on, and changing them changes nothing that training makes. */
static void test_cold_split_holds_items_out_whole_and_poison_changes_nothing(void)
{
    ncf_dataset_opts o = ncf_dataset_opts_default();
    ncf_dataset d[2];
    ncf_features fi;
    uint8_t cold[30], val[30];
    char genres[2048];
    size_t at = 0;
    int r, u, i, ncold = 0, nval = 0;
    float *params[2] = {NULL, NULL};
    int64_t j;
    o.holdout = NCF_HOLDOUT_ITEMS, o.holdout_fraction = 0.2f, o.validation = 1, o.seed = 5;
    at += (size_t)snprintf(genres, sizeof genres, "item,genres\n");
    for (i = 1; i <= 30; i++) at += (size_t)snprintf(genres + at, sizeof genres - at, "%d,g%d|h%d\n", i, i % 4, i % 3);
    CHECK(load_features_text(&fi, genres, NULL) == NCF_OK);
    memset(cold, 0, sizeof cold), memset(val, 0, sizeof val);
    for (r = 0; r < 2; r++) {
        char *log = cold_log(r, cold);
        ncf_config c = ncf_config_default();
        ncf_model *m = NULL;
        ncf_sampler smp;
        CHECK(log && ncf_load_dataset_mem(&d[r], "cold.csv", log, strlen(log), &o) == NCF_OK);
        free(log);
        if (r == 0) {
            for (u = 0; u < d[0].num_users; u++)
                for (j = d[0].test_ptr[u]; j < d[0].test_ptr[u + 1]; j++) cold[d[0].test_items[j]] = 1;
            for (u = 0; u < d[0].num_users; u++)
                for (j = d[0].val_ptr[u]; j < d[0].val_ptr[u + 1]; j++) val[d[0].val_items[j]] = 1;
            for (i = 0; i < 30; i++) {
                ncold += cold[i], nval += val[i];
                CHECK(!(cold[i] && val[i]));
            }
            CHECKF(ncold == 6 && nval == 5, "%d test and %d validation items of 30", ncold, nval);
            for (j = 0; j < d[0].num_train; j++) { CHECK(!cold[d[0].items[j]] && !val[d[0].items[j]]); }
        }
        c.num_users = d[r].num_users, c.num_items = d[r].num_items, c.mf_dim = 4, c.layers[0] = 8, c.layers[1] = 4;
        c.num_layers = 2, c.batch_size = 16;
        CHECK(ncf_model_create(&m, &c) == NCF_OK && ncf_model_set_ids(m, &d[r]) == NCF_OK &&
              ncf_model_set_features(m, NCF_ITEM, &fi, &d[r], 0, 1.0f) == NCF_OK &&
              ncf_sampler_init(&smp, &d[r], 4, 1) == NCF_OK && ncf_train_epoch(m, &smp, 1, NULL, NULL, NULL) == NCF_OK);
        if (m && (params[r] = (float *)malloc(sizeof(float) * m->num_params)) != NULL)
            memcpy(params[r], m->params, sizeof(float) * m->num_params);
        if (m && r == 1) {
            size_t n = m->num_params;
            CHECK(params[0] && params[1] && !memcmp(params[0], params[1], sizeof(float) * n));
        }
        ncf_model_free(m);
    }
    CHECK(d[0].num_train == d[1].num_train &&
          !memcmp(d[0].items, d[1].items, sizeof(int32_t) * (size_t)d[0].num_train) &&
          d[0].val_ptr[d[0].num_users] == d[1].val_ptr[d[1].num_users] &&
          d[0].test_ptr[d[0].num_users] < d[1].test_ptr[d[1].num_users]); /* (the poison is in test) */
    { /* the cold figures: a baseline scoring the held items first finds them all at once, and
         popularity by feature is the mean of the trained items sharing a feature */
        ncf_eval_opts e = ncf_eval_opts_default();
        ncf_metrics mt;
        float sc[30], pop[30], byhand;
        double sum[2] = {0, 0}, cnt[2] = {0, 0};
        int k;
        for (i = 0; i < 30; i++) sc[i] = cold[i] ? 1.0f : 0.0f, pop[i] = 0;
        e.full_ranking = 1, e.cold_only = 1, e.baseline = sc, e.k = 30;
        CHECK(ncf_evaluate(NULL, &d[0], &e, &mt) == NCF_OK && mt.recall == 1.0 && mt.users > 0);
        for (i = 0; i < 30; i++) sc[i] = cold[i] ? 0.0f : 1.0f;
        e.k = 1;
        CHECK(ncf_evaluate(NULL, &d[0], &e, &mt) == NCF_OK && mt.hr < 1.0);
        CHECK(ncf_feature_popularity(&fi, &d[0], sc) == NCF_OK);
        for (j = 0; j < d[0].num_train; j++) pop[d[0].items[j]] += 1;
        for (k = 0; k < 30 && !cold[k]; k++) {}
        for (i = 0; i < 30; i++) /* item k's features: g(k+1)%4 and h(k+1)%3, weight 1 each */
            if (pop[i] > 0) {
                if ((i + 1) % 4 == (k + 1) % 4) sum[0] += pop[i], cnt[0]++;
                if ((i + 1) % 3 == (k + 1) % 3) sum[1] += pop[i], cnt[1]++;
            }
        byhand = (float)((sum[0] / cnt[0] + sum[1] / cnt[1]) / 2); /* the mean of its features' means */
        CHECKF(k < 30 && fabsf(sc[k] - byhand) <= 1e-5f * byhand, "item %d: %g, by hand %g", k, (double)sc[k],
               (double)byhand);
    }
    free(params[0]), free(params[1]);
    ncf_features_free(&fi), ncf_dataset_free(&d[0]), ncf_dataset_free(&d[1]);
}

/* Models of side features averaged (ncf_model_average, as --tune's seeds are): a new item's
   logit from the average's feature row is the mean of the models' own, in MF and GMF, each
   model at its own scale; models of different vocabularies are refused. */
static void test_averaged_features_models_score_as_their_mean(void)
{
    static const ncf_model_type types[2] = {NCF_MF, NCF_GMF};
    static const float scales[3] = {0.5f, 1.0f, 2.0f};
    const char *toks[2] = {"a", "c"};
    int32_t us[6] = {0, 1, 2, 3, 4, 5};
    ncf_dataset d;
    ncf_features fi, fu;
    int t, k, j;
    if (!feature_data(&d, &fi, &fu)) {
        CHECK(0);
        return;
    }
    for (t = 0; t < 2; t++) {
        ncf_model *m[3] = {NULL, NULL, NULL}, *avg = NULL, *plain = NULL;
        ncf_sampler smp;
        float row[600], z[3][6], za[6];
        double worst = 0;
        for (k = 0; k < 3; k++) {
            ncf_config c = ncf_config_default();
            int e;
            c.model = types[t], c.num_users = d.num_users, c.num_items = d.num_items, c.mf_dim = 4 + 2 * k;
            c.batch_size = 8, c.lr = 0.02f, c.seed = 11 + (uint64_t)k;
            CHECK(ncf_model_create(&m[k], &c) == NCF_OK && ncf_model_set_ids(m[k], &d) == NCF_OK &&
                  ncf_model_set_features(m[k], NCF_ITEM, &fi, &d, 0, scales[k]) == NCF_OK &&
                  ncf_sampler_init(&smp, &d, 4, c.seed) == NCF_OK);
            for (e = 1; m[k] && e <= 3; e++) CHECK(ncf_train_epoch(m[k], &smp, e, NULL, NULL, NULL) == NCF_OK);
            CHECK(m[k] && ncf_feature_row(m[k], NCF_ITEM, toks, NULL, 2, row) == 0 &&
                  ncf_predict_for(m[k], NCF_ITEM, 0, row, us, 6, z[k]) == NCF_OK);
        }
        if (!m[0] || !m[1] || !m[2]) {
            for (k = 0; k < 3; k++) ncf_model_free(m[k]);
            continue;
        }
        CHECKF(ncf_model_average(&avg, m, 3) == NCF_OK, "%s", ncf_error_text());
        CHECK(avg && ncf_row_size(avg) <= 600 && ncf_feature_row(avg, NCF_ITEM, toks, NULL, 2, row) == 0 &&
              ncf_predict_for(avg, NCF_ITEM, 0, row, us, 6, za) == NCF_OK);
        for (j = 0; avg && j < 6; j++) {
            double mean = ((double)z[0][j] + z[1][j] + z[2][j]) / 3;
            if (fabs(za[j] - mean) > worst) worst = fabs(za[j] - mean);
            CHECKF(fabs(za[j] - mean) <= 1e-5 * (1 + fabs(mean)), "%s user %d: %g, the models' mean %g",
                   t ? "GMF" : "MF", j, (double)za[j], mean);
        }
        printf("    %s: worst |average's logit - the models' mean| %.2g\n", t ? "GMF" : "MF", worst);
        { /* a model without the features beside them */
            ncf_config c = m[1]->cfg;
            ncf_model *two[2];
            CHECK(ncf_model_create(&plain, &c) == NCF_OK);
            two[0] = m[0], two[1] = plain;
            ncf_model_free(avg), avg = NULL;
            if (plain) CHECK_ERR(ncf_model_average(&avg, two, 2), NCF_ERR_ARG, "item features are not model 0's");
        }
        for (k = 0; k < 3; k++) ncf_model_free(m[k]);
        ncf_model_free(avg), ncf_model_free(plain);
    }
    ncf_features_free(&fi), ncf_features_free(&fu), ncf_dataset_free(&d);
}

/* A search given item features on a cold-start split: every trial's items take them, beside
   the id and alone (both drawn) at drawn scales, by gradients (no ALS, not the recipe's
   step); the same table on 1 and 2 threads; its final model serves a new item from its
   features. Bad feature flags are refused. */
static void test_tune_searches_side_features(void)
{
    ncf_dataset_opts o = ncf_dataset_opts_default();
    ncf_dataset d;
    ncf_features fi;
    ncf_tune_opts to = ncf_tune_opts_default();
    ncf_tune_report r1, r2, bad;
    ncf_model *f1 = NULL, *f2 = NULL;
    const char *toks[2] = {"g1", "h2"};
    uint8_t none[30];
    char genres[2048], *log;
    float *row;
    size_t at = 0;
    int i, modes[3] = {0, 0, 0}, scaled = 0;
    memset(none, 0, sizeof none);
    at += (size_t)snprintf(genres, sizeof genres, "item,genres\n");
    for (i = 1; i <= 30; i++) at += (size_t)snprintf(genres + at, sizeof genres - at, "%d,g%d|h%d\n", i, i % 4, i % 3);
    snprintf(genres + at, sizeof genres - at, "new,g1|h2\n");
    o.holdout = NCF_HOLDOUT_ITEMS, o.holdout_fraction = 0.2f, o.validation = 1, o.seed = 5;
    log = cold_log(0, none);
    CHECK(load_features_text(&fi, genres, NULL) == NCF_OK && log &&
          ncf_load_dataset_mem(&d, "cold.csv", log, strlen(log), &o) == NCF_OK);
    free(log);
    to.budget = 0.5, to.max_epochs = 9, to.seed = 2, to.features[NCF_ITEM] = &fi;
    to.eval.full_ranking = 1, to.eval.cold_only = 1, to.eval.k = 5, to.eval.metric = NCF_METRIC_NDCG;
    ncf_set_threads(1);
    CHECKF(ncf_tune(&d, &to, &r1) == NCF_OK && ncf_tune_final(&f1, &d, &r1, NULL, NULL) == NCF_OK, "%s",
           ncf_error_text());
    ncf_set_threads(2);
    CHECKF(ncf_tune(&d, &to, &r2) == NCF_OK && ncf_tune_final(&f2, &d, &r2, NULL, NULL) == NCF_OK, "%s",
           ncf_error_text());
    CHECK(tune_rows_equal(&r1, &r2) && f1 && f2 && state_hash(f1) == state_hash(f2));
    for (i = 0; i < r1.num_runs; i++) {
        const ncf_trial *t = &r1.runs[i];
        CHECKF(t->features[NCF_ITEM] >= 1 && t->features[NCF_ITEM] <= 2 && !t->features[NCF_USER] &&
                   t->cfg.optimizer != NCF_OPT_ALS && !ncf__per_example_sgd(&t->cfg) &&
                   t->feature_scale == r2.runs[i].feature_scale && t->features[1] == r2.runs[i].features[1],
               "run %d (trial %d): items' features %d, users' %d, optimizer %d", i, t->trial, t->features[NCF_ITEM],
               t->features[NCF_USER], (int)t->cfg.optimizer);
        modes[t->features[NCF_ITEM]]++, scaled += t->feature_scale != 1.0f;
        CHECK(t->feature_scale >= 0.25f && t->feature_scale <= 4.0f);
    }
    CHECKF(r1.num_runs > 5 && modes[1] > 0 && modes[2] > 0 && scaled > 0, "%d runs: %d with ids, %d alone, %d scaled",
           r1.num_runs, modes[1], modes[2], scaled);
    for (i = 0; i < r1.num_runs; i++) /* chosen by what it was asked to choose by: NDCG@5 among its last rung */
        CHECKF(r1.runs[i].rung != r1.runs[r1.best].rung || r1.runs[i].val.ndcg <= r1.runs[r1.best].val.ndcg,
               "run %d: NDCG@5 %g, the winner's %g", i, r1.runs[i].val.ndcg, r1.runs[r1.best].val.ndcg);
    row = f1 ? (float *)malloc(sizeof(float) * (size_t)ncf_row_size(f1)) : NULL; /* (4 seeds of 256 factors) */
    CHECK(row && ncf_feature_row(f1, NCF_ITEM, toks, NULL, 2, row) == 0);
    free(row);
    printf("    %d runs: %d with ids, %d features alone; the winner trial %d, from %d seeds\n", r1.num_runs, modes[1],
           modes[2], r1.runs[r1.best].trial, r1.seeds);
    to.feature_flags[NCF_ITEM] = 4;
    CHECK_ERR(ncf_tune(&d, &to, &bad), NCF_ERR_ARG, "feature_flags[1] 0x4");
    ncf_tune_report_free(&r1), ncf_tune_report_free(&r2);
    ncf_model_free(f1), ncf_model_free(f2);
    ncf_features_free(&fi), ncf_dataset_free(&d);
}
