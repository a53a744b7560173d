/* tests/test_serve.c - serving: filters, fold-in, similar, ids, threads, the fixture other builds read. Included by tests.c (one program). */
/* ---- >>serving: filters, fold-in, similar items and users, growth, by hand ------------------- */

/* A trained small model over synthetic data, for the serving tests. */
static ncf_model *small_trained_model(ncf_dataset *d, ncf_model_type type, int users, int items)
{
    ncf_model *m = NULL;
    ncf_sampler s;
    ncf_config c = ncf_config_default();
    int e;
    if (ncf_synthetic(d, users, items, (int64_t)users * items / 6, 4, 3) != NCF_OK ||
        ncf_sample_eval_negatives(d, 20, 3) != NCF_OK)
        return NULL;
    c.model = type, c.num_users = d->num_users, c.num_items = d->num_items, c.lr = 0.01f;
    if (ncf_model_create(&m, &c) != NCF_OK || ncf_model_set_ids(m, d) != NCF_OK ||
        ncf_sampler_init(&s, d, 4, 3) != NCF_OK) {
        ncf_model_free(m);
        return NULL;
    }
    for (e = 1; e <= 3; e++) ncf_train_epoch(m, &s, e, NULL, NULL, NULL);
    return m;
}

/* The k best of items 0..I-1 by the scores sc (ties: the lower index), skipping skip[i]: the
   definition, against which the filters are checked. Returns how many. */
static int top_by_hand(const float *sc, const uint8_t *skip, int I, int k, int32_t *out)
{
    int n = 0, i, j;
    for (i = 0; i < I; i++) {
        if (skip[i]) continue;
        for (j = n; j > 0 && (sc[i] > sc[out[j - 1]] || (sc[i] == sc[out[j - 1]] && i < out[j - 1])); j--)
            if (j < k) out[j] = out[j - 1];
        if (j < k) out[j] = i;
        if (n < k) n++;
    }
    return n;
}

static void test_recommend_filters_exact_on_hand_cases(void)
{
    ncf_dataset d;
    ncf_model *m = small_trained_model(&d, NCF_NEUMF, 60, 40);
    static const int32_t allow[] = {39, 3, 5, 3, 17, 21, 0, 38, 5, 11}, deny[] = {21, 7, 7, 0, 33};
    int32_t all[40], want[40], got[40];
    float sc[40], gs[40];
    uint8_t skip[40];
    ncf_rec_opts o = ncf_rec_opts_default();
    int u = 7, i, f, n, w, cases = 0;
    char work[64 * 1024];
    if (!m) {
        CHECKF(0, "%s", ncf_error_text());
        return;
    }
    for (i = 0; i < 40; i++) all[i] = i;
    CHECK(ncf_predict_for(m, NCF_USER, u, NULL, all, 40, sc) == NCF_OK);
    for (f = 0; f < 8; f++) { /* bit 1: exclude rated, 2: allow, 4: deny */
        int k;
        for (k = 1; k <= 41; k += 8) {
            o = ncf_rec_opts_default();
            o.k = k, o.exclude_rated = f & 1;
            if (f & 2) o.allow = allow, o.num_allow = 10;
            if (f & 4) o.deny = deny, o.num_deny = 5;
            for (i = 0; i < 40; i++) {
                int in_allow = 0, in_deny = 0, j;
                for (j = 0; j < 10; j++) in_allow |= allow[j] == i;
                for (j = 0; j < 5; j++) in_deny |= deny[j] == i;
                skip[i] = ((f & 1) && rated_by(&d, u, i)) || ((f & 2) && !in_allow) || ((f & 4) && in_deny);
            }
            w = top_by_hand(sc, skip, 40, k, want);
            n = ncf_recommend_index(m, u, &o, got, gs);
            CHECKF(n == w && !memcmp(got, want, sizeof(int32_t) * (size_t)w), "filters %d k %d: %d items, wanted %d", f,
                   k, n, w);
            for (i = 0; i < n && i < w; i++) CHECK(gs[i] == sc[got[i]]);
            o.work = work, o.work_size = ncf_rec_workspace_size(m, &o); /* the workspace form: the same */
            CHECK(o.work_size <= sizeof work && ncf_recommend_index(m, u, &o, got, gs) == w &&
                  !memcmp(got, want, sizeof(int32_t) * (size_t)w));
            cases++;
        }
    }
    printf("    %d cases (rated, allow-list, deny-list, k from 1 to 41) equal to the definition\n", cases);
    o = ncf_rec_opts_default(), o.k = 5, o.probabilities = 1;
    n = ncf_recommend_index(m, u, &o, got, gs);
    CHECK(n == 5 && fabsf(gs[0] - 1.0f / (1.0f + expf(-sc[got[0]]))) < 1e-6f);
    o.probabilities = 0, o.allow = allow, o.num_allow = 10, o.deny = allow, o.num_deny = 10; /* nothing left */
    CHECK(ncf_recommend_index(m, u, &o, got, gs) == 0);
    o.deny = deny, o.num_deny = 5, o.work = work, o.work_size = ncf_rec_workspace_size(m, &o) - 1;
    CHECK_ERR(ncf_recommend_index(m, u, &o, got, gs), NCF_ERR_ARG, "ncf_rec_workspace_size");
    o.work = NULL, o.allow = deny, o.num_allow = 5, all[0] = 40, o.deny = all, o.num_deny = 1;
    CHECK_ERR(ncf_recommend_index(m, u, &o, got, gs), NCF_ERR_ARG, "deny[0] = 40 is not an item index in [0, 40)");
    CHECK_ERR(ncf_recommend_index(m, 60, &o, got, gs), NCF_ERR_ARG, "user index 60 is not in [0, 60)");
    ncf_model_free(m);
    ncf_dataset_free(&d);
}

static void test_recommend_users_equal_one_user_calls(void)
{
    ncf_dataset d;
    ncf_model *m = small_trained_model(&d, NCF_NEUMF, 200, 150);
    ncf_rec_opts o = ncf_rec_opts_default();
    int32_t *many, *many1, one[12];
    float *sc, *sc1, os[12];
    int counts[200], counts1[200], u, ok = 1, T = ncf_set_threads(0);
    int32_t some[3] = {200, 3, 200};
    if (!m) {
        CHECKF(0, "%s", ncf_error_text());
        return;
    }
    o.k = 12;
    many = (int32_t *)malloc(sizeof(int32_t) * 200 * 12), many1 = (int32_t *)malloc(sizeof(int32_t) * 200 * 12);
    sc = (float *)malloc(sizeof(float) * 200 * 12), sc1 = (float *)malloc(sizeof(float) * 200 * 12);
    CHECK(ncf_recommend_users(m, NULL, 200, &o, many, sc, counts) == NCF_OK);
    ncf_set_threads(1);
    CHECK(ncf_recommend_users(m, NULL, 200, &o, many1, sc1, counts1) == NCF_OK);
    ncf_set_threads(T);
    for (u = 0; u < 200; u++) {
        int n = ncf_recommend_index(m, u, &o, one, os);
        ok &= n == counts[u] && n == counts1[u] && !memcmp(one, many + u * 12, sizeof(int32_t) * (size_t)n) &&
            !memcmp(os, sc + u * 12, sizeof(float) * (size_t)n) &&
            !memcmp(one, many1 + u * 12, sizeof(int32_t) * (size_t)n);
    }
    CHECKF(ok, "the lists of all users differ from one-user calls");
    printf("    200 users' top-12 on %d threads and on 1: equal to one-user calls bit for bit\n", T);
    CHECK(ncf_recommend_users(m, some + 1, 1, &o, many, sc, counts) == NCF_OK && counts[0] == counts1[3] &&
          !memcmp(many, many1 + 3 * 12, sizeof(int32_t) * 12));
    CHECK_ERR(ncf_recommend_users(m, some, 3, &o, many, sc, counts), NCF_ERR_ARG, "users[0] = 200 is not a user index");
    free(many), free(many1), free(sc), free(sc1);
    ncf_model_free(m);
    ncf_dataset_free(&d);
}

/* Item fold-in, the mirror of a user's: ncf_predict_for (NCF_ITEM) scores as training does (against
   ncf_predict_index, bit for bit), a known item's rows with no step score as it does, the fold
   is the same on 1 and 2 threads and in a workspace, and an item folded in from scratch from
   its users ranks them above the others about as well as its trained rows do. */
static void test_item_fold_in_mirrors_user_fold_in(void)
{
    ncf_dataset d;
    ncf_model_type types[4] = {NCF_NEUMF, NCF_GMF, NCF_MF, NCF_MLP};
    int t, T = ncf_set_threads(0);
    for (t = 0; t < 4; t++) {
        ncf_model *m = small_trained_model(&d, types[t], 120, 90);
        ncf_fold_opts fo = ncf_fold_opts_default();
        int32_t all[120], given[120], i = 7, n = 0, u, k;
        float by_index[120], by_row[120], folded[120], *a, *b, *known;
        int R, ok_rows;
        uint8_t has[120];
        double auc[2] = {0, 0}, pairs = 0;
        size_t ws;
        void *work;
        if (!m) {
            CHECKF(0, "%s", ncf_error_text());
            return;
        }
        R = ncf_row_size(m);
        a = (float *)malloc(sizeof(float) * (size_t)R * 3), b = a + R, known = b + R;
        memset(has, 0, sizeof has);
        for (u = 0; u < 120; u++) {
            int64_t q;
            all[u] = u;
            for (q = d.user_ptr[u]; q < d.user_ptr[u + 1]; q++)
                if (d.items[q] == i) has[u] = 1, given[n++] = u;
        }
        {
            int32_t items[120];
            for (u = 0; u < 120; u++) items[u] = i;
            CHECK(ncf_predict_index(m, all, items, 120, by_index) == NCF_OK);
        }
        CHECK(ncf_predict_for(m, NCF_ITEM, i, NULL, all, 120, by_row) == NCF_OK);
        CHECKF(!memcmp(by_index, by_row, sizeof by_row), "model %d: ncf_predict_for (NCF_ITEM) is not the forward's",
               t);
        /* no step from the known rows: the item itself */
        CHECK(ncf_row(m, NCF_ITEM, i, known) == NCF_OK);
        fo.steps = 0, fo.start = known;
        CHECK(n > 0 && ncf_fold_in(m, NCF_ITEM, given, n, &fo, a) == NCF_OK);
        CHECK(ncf_predict_for(m, NCF_ITEM, -1, a, all, 120, by_row) == NCF_OK);
        CHECKF(!memcmp(by_index, by_row, sizeof by_row), "model %d: 0 steps from the item's rows", t);
        /* from scratch: deterministic across threads and forms */
        fo = ncf_fold_opts_default();
        CHECK(ncf_fold_in(m, NCF_ITEM, given, n, &fo, a) == NCF_OK);
        ncf_set_threads(1);
        ws = ncf_fold_workspace_size(m, n), work = malloc(ws);
        fo.work = work, fo.work_size = ws;
        CHECK(ncf_fold_in(m, NCF_ITEM, given, n, &fo, b) == NCF_OK);
        ncf_set_threads(T);
        ok_rows = !memcmp(a, b, sizeof(float) * (size_t)R);
        CHECKF(ok_rows, "model %d: the item's fold-in differs across threads or forms", t);
        fo.work_size = ws - 1;
        CHECK_ERR(ncf_fold_in(m, NCF_ITEM, given, n, &fo, b), NCF_ERR_ARG, "ncf_fold_workspace_size");
        /* it learned: its users above the others, as the trained rows put them */
        CHECK(ncf_predict_for(m, NCF_ITEM, -1, a, all, 120, folded) == NCF_OK);
        for (u = 0; u < 120; u++)
            for (k = 0; k < 120; k++)
                if (has[u] && !has[k]) pairs++, auc[0] += by_index[u] > by_index[k], auc[1] += folded[u] > folded[k];
        CHECKF(pairs > 0 && auc[1] / pairs > 0.6 && auc[1] / pairs > auc[0] / pairs - 0.1,
               "model %d: AUC of the item's users, folded %.3f, trained %.3f", t, auc[1] / pairs, auc[0] / pairs);
        printf("    %s: item %d from its %d users: AUC %.3f folded in, %.3f trained\n",
               t == 0       ? "NeuMF"
                   : t == 1 ? "GMF"
                   : t == 2 ? "MF"
                            : "MLP",
               i, n, auc[1] / pairs, auc[0] / pairs);
        CHECK_ERR(ncf_fold_in(m, NCF_ITEM, all, 0, &fo, a), NCF_ERR_ARG, "users (n > 0)");
        given[0] = 120;
        fo.work = NULL;
        CHECK_ERR(ncf_fold_in(m, NCF_ITEM, given, n, &fo, a), NCF_ERR_ARG, "users[0] = 120 is not a user index");
        free(work), free(a), ncf_model_free(m), ncf_dataset_free(&d);
    }
}

static void test_fold_in_deterministic_and_exact_from_known_rows(void)
{
    ncf_dataset d;
    ncf_model_type types[3] = {NCF_NEUMF, NCF_GMF, NCF_MF};
    int t, T = ncf_set_threads(0);
    for (t = 0; t < 3; t++) {
        ncf_model *m = small_trained_model(&d, types[t], 120, 90);
        ncf_fold_opts fo = ncf_fold_opts_default();
        ncf_rec_opts o = ncf_rec_opts_default();
        int R, u = 11, n, hits = 0, users = 0, v, j;
        float *a, *b, *c, *known;
        int32_t top[10], top2[10];
        float s1[10], s2[10];
        void *work;
        if (!m) {
            CHECKF(0, "%s", ncf_error_text());
            return;
        }
        R = ncf_row_size(m);
        a = (float *)malloc(sizeof(float) * (size_t)R * 4), b = a + R, c = b + R, known = c + R;
        n = (int)(d.user_ptr[u + 1] - d.user_ptr[u]);
        CHECK(ncf_fold_in(m, NCF_USER, d.items + d.user_ptr[u], n, &fo, a) == NCF_OK);
        ncf_set_threads(1);
        CHECK(ncf_fold_in(m, NCF_USER, d.items + d.user_ptr[u], n, &fo, b) == NCF_OK);
        ncf_set_threads(T);
        work = malloc(ncf_fold_workspace_size(m, n));
        fo.work = work, fo.work_size = ncf_fold_workspace_size(m, n);
        CHECK(ncf_fold_in(m, NCF_USER, d.items + d.user_ptr[u], n, &fo, c) == NCF_OK);
        CHECK(!memcmp(a, b, sizeof(float) * (size_t)R) && !memcmp(a, c, sizeof(float) * (size_t)R));
        fo.work_size--;
        CHECK_ERR(ncf_fold_in(m, NCF_USER, d.items + d.user_ptr[u], n, &fo, c), NCF_ERR_ARG, "ncf_fold_workspace_size");
        fo = ncf_fold_opts_default();
        /* no steps from a known user's rows: its very scores */
        CHECK(ncf_row(m, NCF_USER, u, known) == NCF_OK);
        fo.start = known, fo.steps = 0;
        CHECK(ncf_fold_in(m, NCF_USER, d.items + d.user_ptr[u], n, &fo, a) == NCF_OK &&
              !memcmp(a, known, sizeof(float) * (size_t)R));
        o.exclude_rated = 0;
        CHECK(ncf_recommend_index(m, u, &o, top, s1) == 10);
        o.user_row = a;
        CHECK(ncf_recommend_index(m, -1, &o, top2, s2) == 10 && !memcmp(top, top2, sizeof top) &&
              !memcmp(s1, s2, sizeof s1));
        /* folded in from their training items, users find their held-out item as a trained model does */
        fo = ncf_fold_opts_default();
        for (v = 0; v < d.num_users; v += 2) {
            int32_t cand[21];
            float sc[21];
            int r = 0, nv = (int)(d.user_ptr[v + 1] - d.user_ptr[v]);
            if (nv < 1) continue;
            CHECK(ncf_fold_in(m, NCF_USER, d.items + d.user_ptr[v], nv, &fo, b) == NCF_OK);
            cand[0] = d.test_item[v];
            memcpy(cand + 1, d.eval_neg + (size_t)v * 20, sizeof(int32_t) * 20);
            CHECK(ncf_predict_for(m, NCF_USER, -1, b, cand, 21, sc) == NCF_OK);
            for (j = 1; j <= 20; j++) r += sc[j] >= sc[0];
            hits += r < 5, users++;
        }
        printf("    %s: fold-in deterministic (threads, workspace); no steps from user %d's rows scores as it does; "
               "folded-in HR@5 of 21 candidates %.3f over %d users\n",
               t == 0       ? "NeuMF"
                   : t == 1 ? "GMF"
                            : "MF",
               u, (double)hits / users, users);
        CHECK((double)hits / users > 0.4); /* chance is 5/21 = 0.24 */
        top[0] = 90, top[1] = 3;
        CHECK_ERR(ncf_fold_in(m, NCF_USER, top, 2, &fo, a), NCF_ERR_ARG, "items[0] = 90 is not an item index");
        CHECK_ERR(ncf_fold_in(m, NCF_USER, top, 0, &fo, a), NCF_ERR_ARG, "n > 0");
        free(a), free(work);
        ncf_model_free(m);
        ncf_dataset_free(&d);
    }
}

/* Every reader of the cached item projection (lists of candidates, runs of the catalogue, a
   user's fold-in, the similar items of an MLP model) gives what it gives without the cache,
   which computes the items' half of the first layer from their rows: bit for bit, whatever
   the cache's layout (blocks of lanes, rows beside them). */
static void test_projection_readers_agree_without_it(void)
{
    ncf_model_type types[2] = {NCF_NEUMF, NCF_MLP};
    int t, k;
    for (t = 0; t < 2; t++) {
        ncf_dataset d;
        ncf_model *m = small_trained_model(&d, types[t], 60, 70);
        ncf_fold_opts fo = ncf_fold_opts_default();
        ncf_rec_opts o = ncf_rec_opts_default();
        float row[2][128], sc[2][70], top_s[2][10];
        int32_t top[2][10], sim[2][5], cand[70];
        int n = m ? (int)(d.user_ptr[4] - d.user_ptr[3]) : 0;
        if (!m) {
            CHECKF(0, "%s", ncf_error_text());
            return;
        }
        CHECK(ncf_row_size(m) <= 128);
        for (k = 0; k < 70; k++) cand[k] = (k * 29) % 70;
        fo.steps = 20;
        for (k = 0; k < 2; k++) { /* k = 0: with the cache; 1: without */
            if (k) NCF_FREE(m->scratch->cache.proj), m->scratch->cache.proj = NULL;
            CHECK(k || ncf__cached_projection(m));
            CHECK(ncf_fold_in(m, NCF_USER, d.items + d.user_ptr[3], n, &fo, row[k]) == NCF_OK);
            CHECK(ncf_predict_for(m, NCF_USER, 5, NULL, cand, 70, sc[k]) == NCF_OK);
            CHECK(ncf_recommend_index(m, 7, &o, top[k], top_s[k]) == 10);
            o.k = 5;
            CHECK(ncf_similar(m, NCF_ITEM, 11, &o, sim[k], NULL) == 5);
            o.k = 10;
        }
        CHECKF(!memcmp(row[0], row[1], sizeof(float) * (size_t)ncf_row_size(m)), "type %d: fold-in differs",
               (int)types[t]);
        CHECKF(!memcmp(sc[0], sc[1], sizeof sc[0]), "type %d: candidate scores differ", (int)types[t]);
        CHECKF(!memcmp(top[0], top[1], sizeof top[0]) && !memcmp(top_s[0], top_s[1], sizeof top_s[0]),
               "type %d: top 10 differs", (int)types[t]);
        CHECKF(!memcmp(sim[0], sim[1], sizeof sim[0]), "type %d: similar items differ", (int)types[t]);
        ncf_model_free(m);
        ncf_dataset_free(&d);
    }
}

static void test_similar_items_match_the_cosine_by_hand(void)
{
    ncf_dataset d;
    ncf_model_type types[3] = {NCF_MF, NCF_GMF, NCF_NEUMF};
    int t;
    for (t = 0; t < 3; t++) {
        ncf_model *m = small_trained_model(&d, types[t], 80, 50);
        ncf_rec_opts o = ncf_rec_opts_default();
        float sim[50], vi[64], vj[64], got_s[8];
        uint8_t skip[50];
        int32_t want[8], got[8], deny[2] = {4, 9};
        int F = m ? m->cfg.mf_dim : 0, i = 6, j, dd, w;
        if (!m) {
            CHECKF(0, "%s", ncf_error_text());
            return;
        }
        for (j = 0; j < 50; j++) { /* the definition: cosine of w_out * q (MF: of q) */
            double dot = 0, ni = 0, nj = 0;
            for (dd = 0; dd < F; dd++) {
                vi[dd] = (m->w_out ? m->w_out[dd] : 1.0f) * m->gmf_item[(size_t)i * F + dd];
                vj[dd] = (m->w_out ? m->w_out[dd] : 1.0f) * m->gmf_item[(size_t)j * F + dd];
                dot += vi[dd] * vj[dd], ni += vi[dd] * vi[dd], nj += vj[dd] * vj[dd];
            }
            sim[j] = (float)(dot / sqrt(ni * nj));
            skip[j] = j == i || j == 4 || j == 9;
        }
        w = top_by_hand(sim, skip, 50, 8, want);
        o.k = 8, o.deny = deny, o.num_deny = 2;
        CHECK(ncf_similar(m, NCF_ITEM, i, &o, got, got_s) == w && w == 8);
        /* the same set and order up to float rounding of near ties */
        for (j = 0; j < 8; j++)
            CHECKF(got[j] == want[j] || fabsf(got_s[j] - sim[want[j]]) < 1e-5f, "rank %d: %d, want %d", j, got[j],
                   want[j]);
        CHECK(fabsf(got_s[0] - sim[want[0]]) < 1e-5f);
        CHECK_ERR(ncf_similar(m, NCF_ITEM, 50, &o, got, got_s), NCF_ERR_ARG, "item index 50 is not in [0, 50)");
        ncf_model_free(m);
        ncf_dataset_free(&d);
    }
    printf(
        "    MF, GMF and NeuMF (its GMF half): the cosine top-8, deny-list and the item itself skipped, as by hand\n");
}

/* Similar users by hand: the cosine of w_out * p_u (MF: of p_u; MLP: of W1 p_u) in double, for
   each model type, the user itself skipped; the workspace form the same bit for bit with no
   allocation; lists refused (they name items). */
static void test_similar_users_match_the_cosine_by_hand(void)
{
    ncf_dataset d;
    ncf_model_type types[4] = {NCF_MF, NCF_GMF, NCF_NEUMF, NCF_MLP};
    int t;
    for (t = 0; t < 4; t++) {
        ncf_model *m = small_trained_model(&d, types[t], 80, 50);
        ncf_rec_opts o = ncf_rec_opts_default();
        float sim[80], got_s[8], ws_s[8];
        uint8_t skip[80];
        int32_t want[8], got[8], ws_got[8], deny[1] = {3};
        int u = 11, j, w, dd, e;
        size_t size;
        void *work;
        long calls;
        if (!m) {
            CHECKF(0, "%s", ncf_error_text());
            return;
        }
        for (j = 0; j < 80; j++) {
            double dot = 0, nu = 0, nj = 0;
            if (m->cfg.model == NCF_MLP) { /* W1's user half times the user's MLP row */
                int H = m->cfg.layers[0] / 2, L1 = m->cfg.layers[1];
                for (dd = 0; dd < L1; dd++) {
                    double a = 0, b = 0;
                    for (e = 0; e < H; e++)
                        a += (double)m->mlp_user[(size_t)u * H + e] * m->w[1][(size_t)e * L1 + dd],
                            b += (double)m->mlp_user[(size_t)j * H + e] * m->w[1][(size_t)e * L1 + dd];
                    dot += a * b, nu += a * a, nj += b * b;
                }
            } else {
                int F = m->cfg.mf_dim;
                for (dd = 0; dd < F; dd++) {
                    double wd = m->w_out && m->cfg.model != NCF_MF ? m->w_out[dd] : 1.0;
                    double a = wd * m->gmf_user[(size_t)u * F + dd], b = wd * m->gmf_user[(size_t)j * F + dd];
                    dot += a * b, nu += a * a, nj += b * b;
                }
            }
            sim[j] = (float)(dot / sqrt(nu * nj));
            skip[j] = j == u;
        }
        w = top_by_hand(sim, skip, 80, 8, want);
        o.k = 8;
        CHECK(ncf_similar(m, NCF_USER, u, &o, got, got_s) == w && w == 8);
        for (j = 0; j < 8; j++)
            CHECKF(got[j] == want[j] || fabsf(got_s[j] - sim[want[j]]) < 1e-5f, "model %d rank %d: %d, want %d", t, j,
                   got[j], want[j]);
        CHECK(fabsf(got_s[0] - sim[want[0]]) < 1e-5f);
        size = ncf_rec_workspace_size(m, &o), work = malloc(size);
        o.work = work, o.work_size = size, calls = g_alloc_calls;
        CHECK(ncf_similar(m, NCF_USER, u, &o, ws_got, ws_s) == 8 && g_alloc_calls == calls);
        CHECK(!memcmp(ws_got, got, sizeof got) && !memcmp(ws_s, got_s, sizeof got_s));
        o.work = NULL, o.deny = deny, o.num_deny = 1;
        CHECK_ERR(ncf_similar(m, NCF_USER, u, &o, got, got_s), NCF_ERR_ARG, "no user_row, allow or deny");
        o.deny = NULL, o.num_deny = 0;
        CHECK_ERR(ncf_similar(m, NCF_USER, 80, &o, got, got_s), NCF_ERR_ARG, "user index 80 is not in [0, 80)");
        free(work), ncf_model_free(m), ncf_dataset_free(&d);
    }
    printf("    MF, GMF, NeuMF (its GMF half) and MLP: the cosine top-8 of users, as by hand and in a workspace\n");
}

/* Top-k ids of user id uid, as text joined, denying item index deny (or -1). */
static void top_ids(const ncf_model *m, const char *uid, int deny, char *out, size_t size)
{
    ncf_rec_opts o = ncf_rec_opts_default();
    int32_t top[10], d[1];
    char id[NCF_MAX_ID_BYTES + 1];
    int n, j;
    d[0] = deny, o.deny = deny >= 0 ? d : NULL, o.num_deny = deny >= 0;
    n = ncf_recommend_index(m, ncf_find(m, NCF_USER, uid), &o, top, NULL);
    out[0] = 0;
    for (j = 0; j < n && ncf_id(m, NCF_ITEM, top[j], id, sizeof id) > 0; j++)
        if (strlen(out) + strlen(id) + 2 < size) strcat(out, id), strcat(out, "|");
}

/* A folded-in user and item added to the model under their ids: served by id as the rows they
   were given (bit for bit), kept through a save and a load; the known users' lists and rated
   items unchanged; a known id's rows replaced; an integer-id model takes integer ids only. */
static void test_model_add_serves_folded_in_ids(void)
{
    static const char *log = "user,item\nu1,a\nu1,b\nu1,c\nu2,b\nu2,d\nu2,e\nu3,a\nu3,e\nu3,f\nu4,c\nu4,f\nu4,g\n"
                             "u5,a\nu5,g\nu5,h\nu6,b\nu6,h\nu6,i\nu7,d\nu7,i\nu7,j\nu8,e\nu8,j\nu8,a\n";
    ncf_dataset_opts lo = ncf_dataset_opts_default();
    ncf_dataset d;
    ncf_config c = ncf_config_default();
    ncf_model *m = NULL, *back = NULL;
    ncf_fold_opts fo = ncf_fold_opts_default();
    ncf_rec_opts o = ncf_rec_opts_default();
    int32_t given[2], fans[3], top[10], top_row[10], us[8] = {0, 1, 2, 3, 4, 5, 6, 7};
    float urow[64], irow[64], sc[10], sc_row[10], z[8], z_row[8];
    char before[512], after[512];
    void *buf = NULL;
    size_t len = 0;
    int n, k, u, i;
    lo.holdout = NCF_HOLDOUT_NONE;
    CHECK(ncf_load_dataset_mem(&d, "add", log, strlen(log), &lo) == NCF_OK);
    c.num_users = d.num_users, c.num_items = d.num_items, c.mf_dim = 4, c.num_layers = 2, c.layers[0] = 8,
    c.layers[1] = 4;
    CHECK(ncf_model_create(&m, &c) == NCF_OK && ncf_model_set_ids(m, &d) == NCF_OK && ncf_row_size(m) <= 64);
    top_ids(m, "u3", -1, before, sizeof before);
    /* a new user, folded in from items b and j */
    given[0] = ncf_find(m, NCF_ITEM, "b"), given[1] = ncf_find(m, NCF_ITEM, "j");
    CHECK(ncf_fold_in(m, NCF_USER, given, 2, &fo, urow) == NCF_OK);
    o.k = 5, o.user_row = urow, o.exclude_rated = 0;
    n = ncf_recommend_index(m, -1, &o, top_row, sc_row);
    CHECK(ncf_model_add(&m, 0, (const char *[]){"newbie"}, urow, 1) == NCF_OK && m->cfg.num_users == 9);
    o.user_row = NULL;
    CHECK((u = ncf_find(m, NCF_USER, "newbie")) >= 0 && ncf_recommend_index(m, u, &o, top, sc) == n && n == 5);
    CHECK(!memcmp(top, top_row, sizeof(int32_t) * 5) && !memcmp(sc, sc_row, sizeof(float) * 5));
    top_ids(m, "u3", -1, after, sizeof after);
    CHECKF(!strcmp(before, after), "u3: %s before, %s after", before, after);
    /* a new item, folded in from users u1, u4, u7 */
    fans[0] = ncf_find(m, NCF_USER, "u1"), fans[1] = ncf_find(m, NCF_USER, "u4"), fans[2] = ncf_find(m, NCF_USER, "u7");
    CHECK(ncf_fold_in(m, NCF_ITEM, fans, 3, &fo, irow) == NCF_OK);
    for (k = 0; k < 8; k++)
        us[k] = ncf_find(m, NCF_USER, (const char *[]){"u1", "u2", "u3", "u4", "u5", "u6", "u7", "u8"}[k]);
    CHECK(ncf_predict_for(m, NCF_ITEM, -1, irow, us, 8, z_row) == NCF_OK);
    CHECK(ncf_model_add(&m, 1, (const char *[]){"b2"}, irow, 1) == NCF_OK && m->cfg.num_items == 11);
    for (k = 0; k < 8; k++)
        us[k] = ncf_find(m, NCF_USER, (const char *[]){"u1", "u2", "u3", "u4", "u5", "u6", "u7", "u8"}[k]);
    CHECK((i = ncf_find(m, NCF_ITEM, "b2")) >= 0 && ncf_predict_for(m, NCF_ITEM, i, NULL, us, 8, z) == NCF_OK);
    CHECK(!memcmp(z, z_row, sizeof z));
    top_ids(m, "u3", i, after, sizeof after);
    CHECKF(!strcmp(before, after), "u3 after an item: %s before, %s after", before, after);
    /* through a file */
    CHECK(ncf_save_mem(m, NCF_SAVE_ADAM, &buf, &len) == NCF_OK && ncf_load_mem(&back, buf, len) == NCF_OK);
    CHECK(ncf_find(back, NCF_USER, "newbie") == u && ncf_find(back, NCF_ITEM, "b2") == i);
    CHECK(ncf_predict_for(back, NCF_ITEM, i, NULL, us, 8, z) == NCF_OK && !memcmp(z, z_row, sizeof z));
    /* a known id: its rows replaced */
    CHECK(ncf_model_add(&m, 0, (const char *[]){"u3"}, urow, 1) == NCF_OK && m->cfg.num_users == 9);
    o.k = 5, o.exclude_rated = 0;
    CHECK(ncf_recommend_index(m, ncf_find(m, NCF_USER, "u3"), &o, top, sc) == 5 &&
          !memcmp(sc, sc_row, sizeof(float) * 5));
    CHECK_ERR(ncf_model_add(&m, 2, (const char *[]){"x"}, urow, 1), NCF_ERR_ARG, "side 0");
    CHECK_ERR(ncf_model_add(&m, 0, (const char *[]){""}, urow, 1), NCF_ERR_ARG, "1 to 256 bytes");
    urow[0] = 1e30f;
    CHECK_ERR(ncf_model_add(&m, 0, (const char *[]){"nan"}, urow, 1), NCF_ERR_ARG, "rows[0]");
    ncf_model_free(m), ncf_model_free(back), ncf_free(buf), ncf_dataset_free(&d);
    /* integer ids */
    CHECK(ncf_synthetic(&d, 30, 20, 300, 3, 4) == NCF_OK);
    c.num_users = d.num_users, c.num_items = d.num_items, m = NULL;
    CHECK(ncf_model_create(&m, &c) == NCF_OK && ncf_model_set_ids(m, &d) == NCF_OK);
    memset(urow, 0, sizeof urow);
    CHECK_ERR(ncf_model_add(&m, 1, (const char *[]){"abc"}, urow, 1), NCF_ERR_ARG, "item ids are integers");
    CHECK(ncf_model_add(&m, 1, (const char *[]){"123456"}, urow, 1) == NCF_OK &&
          ncf_find(m, NCF_ITEM, "123456") == 20 && m->cfg.num_items == 21);
    { /* many at once, one grow: the same model as one at a time (ids given twice: the last rows) */
        static const char *const many[5] = {"99", "5000", "3", "77", "99"};
        ncf_model *one = NULL;
        void *a = NULL, *b = NULL;
        size_t la = 0, lb = 0;
        float rows[5 * 64];
        int r, R = ncf_row_size(m); /* (rows packed: [n][ncf_row_size]) */
        for (k = 0; k < 5; k++)
            for (r = 0; r < R; r++) rows[k * R + r] = 0.01f * (float)(k + 1) - 0.001f * (float)r;
        CHECK(ncf_save_mem(m, NCF_SAVE_ADAM, &a, &la) == NCF_OK && ncf_load_mem(&one, a, la) == NCF_OK);
        ncf_free(a), a = NULL;
        CHECK(ncf_model_add(&m, 1, many, rows, 5) == NCF_OK && m->cfg.num_items == 24);
        for (k = 0; one && k < 5; k++) CHECK(ncf_model_add(&one, 1, &many[k], rows + k * R, 1) == NCF_OK);
        CHECK(one && one->cfg.num_items == 24 && ncf_find(m, NCF_ITEM, "5000") == 22 &&
              ncf_find(m, NCF_ITEM, "77") == 20);
        CHECK(ncf_save_mem(m, NCF_SAVE_ADAM, &a, &la) == NCF_OK && ncf_save_mem(one, NCF_SAVE_ADAM, &b, &lb) == NCF_OK);
        CHECK(la == lb && a && b && !memcmp(a, b, la));
        CHECK_ERR(ncf_model_add(&m, 1, (const char *[]){"8", "x8"}, rows, 2), NCF_ERR_ARG, "'x8' is not one");
        CHECK(m->cfg.num_items == 24 && ncf_find(m, NCF_ITEM, "8") == 8); /* (nothing added: the whole call refused) */
        ncf_free(a), ncf_free(b), ncf_model_free(one);
    }
    ncf_model_free(m), ncf_dataset_free(&d);
}

static void test_model_grows_with_new_data(void)
{
    /* yesterday: users a..d, items 1..6; today: the same plus user e and items 7, 8 */
    const char *old_log = "a,1\na,2\na,3\nb,2\nb,4\nc,1\nc,5\nd,6\nd,3\nd,2\n";
    const char *new_log = "a,1\na,2\na,3\nb,2\nb,4\nc,1\nc,5\nd,6\nd,3\nd,2\ne,7\ne,8\ne,1\na,8\nb,7\n";
    const char *lost_log = "a,1\na,2\na,3\nb,2\nb,4\nc,1\nc,5\n";
    ncf_dataset d0, d1, d2;
    ncf_model *m = NULL, *g;
    ncf_sampler s;
    ncf_config c = ncf_config_default();
    ncf_dataset_opts o = ncf_dataset_opts_default();
    int k, t, ok = 1;
    char id[16];
    o.eval_negatives = 1, o.holdout = NCF_HOLDOUT_NONE;
    CHECK(ncf_load_dataset_mem(&d0, "old", old_log, strlen(old_log), &o) == NCF_OK);
    CHECK(ncf_load_dataset_mem(&d1, "new", new_log, strlen(new_log), &o) == NCF_OK);
    CHECK(ncf_load_dataset_mem(&d2, "lost", lost_log, strlen(lost_log), &o) == NCF_OK);
    c.num_users = d0.num_users, c.num_items = d0.num_items, c.layers[0] = 8, c.layers[1] = 4, c.num_layers = 2;
    CHECK(ncf_model_create(&m, &c) == NCF_OK && ncf_model_set_ids(m, &d0) == NCF_OK &&
          ncf_sampler_init(&s, &d0, 2, 1) == NCF_OK);
    CHECK(ncf_train_epoch(m, &s, 1, NULL, NULL, NULL) == NCF_OK);
    g = m;
    CHECK_ERR(ncf_model_grow(&g, &d2), NCF_ERR_DATA,
              "the data lacks 1 of the model's users and 1 of its items (user 'd'");
    CHECK(g == m);
    CHECK(ncf_model_grow(&g, &d1) == NCF_OK && g != m);
    m = NULL; /* (freed by the grow) */
    CHECK(g->cfg.num_users == 5 && g->cfg.num_items == 8 && g->step > 0 && g->epoch == 1);
    { /* each known id's rows and moments as they were: compare with the old model reloaded */
        ncf_model *old = NULL;
        ncf_config c0 = c;
        CHECK(ncf_model_create(&old, &c0) == NCF_OK && ncf_model_set_ids(old, &d0) == NCF_OK &&
              ncf_train_epoch(old, &s, 1, NULL, NULL, NULL) == NCF_OK);
        for (t = 0; t < g->num_tensors; t++) {
            const ncf_tensor *T = &g->tensors[t], *S = &old->tensors[t];
            int items = strstr(T->name, "item") != NULL, users = strstr(T->name, "user") != NULL;
            for (k = 0; k < (users || items ? S->rows : 1); k++) {
                int to = k;
                size_t n = (size_t)(users || items ? T->cols : T->rows * T->cols);
                if (users || items) {
                    if (items) ncf_id(old, NCF_ITEM, k, id, sizeof id), to = ncf_find(g, NCF_ITEM, id);
                    else ncf_id(old, NCF_USER, k, id, sizeof id), to = ncf_find(g, NCF_USER, id);
                }
                ok &= to >= 0 &&
                    !memcmp(g->params + T->offset + (size_t)to * T->cols, old->params + S->offset + (size_t)k * S->cols,
                            n * sizeof(float));
                ok &= !memcmp(g->adam_m + T->offset + (size_t)to * T->cols,
                              old->adam_m + S->offset + (size_t)k * S->cols, n * sizeof(float));
            }
        }
        CHECKF(ok, "a known row changed when the model grew");
        ncf_model_free(old);
    }
    CHECK(ncf_find(g, NCF_USER, "e") == 4 && ncf_find(g, NCF_ITEM, "8") == 7);
    { /* data that lacks ids: kept when asked (ncf_dataset_add_ids), their rows with them */
        ncf_model *h = NULL;
        float before[64], after[64];
        int du = ncf_find(g, NCF_USER, "d");
        CHECK(ncf_load_mem(&h, NULL, 0) != NCF_OK && ncf_row(g, NCF_USER, du, before) == NCF_OK);
        CHECK(ncf_dataset_add_ids(&d2, g) == NCF_OK && d2.num_users == 5 && d2.num_items == 8);
        du = ncf_dataset_find(&d2, NCF_USER, "d");
        CHECK(du >= 0 && d2.user_ptr[du + 1] == d2.user_ptr[du] && d2.test_item[du] == -1 &&
              ncf_dataset_find(&d2, NCF_ITEM, "6") >= 0);
        {
            void *buf = NULL;
            size_t len;
            CHECK(ncf_save_mem(g, NCF_SAVE_ADAM, &buf, &len) == NCF_OK && ncf_load_mem(&h, buf, len) == NCF_OK);
            ncf_free(buf);
        }
        CHECK(h && ncf_model_grow(&h, &d2) == NCF_OK &&
              ncf_row(h, NCF_USER, ncf_find(h, NCF_USER, "d"), after) == NCF_OK &&
              !memcmp(before, after, sizeof(float) * (size_t)ncf_row_size(h)));
        ncf_model_free(h);
    }
    CHECK(ncf_sampler_init(&s, &d1, 2, 1) == NCF_OK && ncf_train_epoch(g, &s, 2, NULL, NULL, NULL) == NCF_OK &&
          g->epoch == 2);
    ncf_model_free(g);
    ncf_dataset_free(&d0), ncf_dataset_free(&d1), ncf_dataset_free(&d2);
}

/* ---- >>serving-threads: serving by id, and on many threads at once --------------------------- */

/* The by-id calls answer what the index forms and the ids give, step by step by hand: a known
   user's list, a new user's from item ids (fold-in, its items denied), similar items; an
   unknown id is named, a buffer too small refused, the counts read. */
static void test_serving_by_id_answers_as_the_index_forms(void)
{
    static const char *given[3] = {"Papers, Please", "g7", "g12"};
    ncf_dataset d;
    ncf_model *m = NULL;
    ncf_config c = ncf_config_default();
    ncf_rec_opts o = ncf_rec_opts_default();
    ncf_fold_opts fo = ncf_fold_opts_default();
    ncf_dataset_opts lo = ncf_dataset_opts_default();
    char log[20000], ids[10 * (NCF_MAX_ID_BYTES + 1)], id[NCF_MAX_ID_BYTES + 1];
    int32_t top[10], own[3];
    float sc[10], by_id[10], row[256];
    int n, j, u, len = snprintf(log, sizeof log, "user,item\n");
    const char *p;
    for (u = 0; u < 80; u++)
        for (j = 0; j < 8; j++) {
            int g = (u * 7 + j * 5) % 40;
            len +=
                snprintf(log + len, sizeof log - (size_t)len, g == 0 ? "u%d,\"Papers, Please\"\n" : "u%d,g%d\n", u, g);
        }
    lo.eval_negatives = 5;
    CHECK(ncf_load_dataset_mem(&d, "by_id", log, (size_t)len, &lo) == NCF_OK);
    c.num_users = d.num_users, c.num_items = d.num_items, c.mf_dim = 4, c.num_layers = 2, c.layers[0] = 8,
    c.layers[1] = 4;
    CHECK(ncf_model_create(&m, &c) == NCF_OK && ncf_model_set_ids(m, &d) == NCF_OK);
    CHECK(m->cfg.num_users == 80 && m->cfg.num_items == 40);
    o.k = 5;
    /* a known user */
    u = ncf_find(m, NCF_USER, "u3");
    n = ncf_recommend_index(m, u, &o, top, sc);
    CHECK(n == 5 && ncf_recommend_for_id(m, "u3", &o, ids, sizeof ids, by_id) == 5 &&
          !memcmp(sc, by_id, sizeof(float) * 5));
    for (j = 0, p = ids; j < n; j++, p += strlen(p) + 1)
        CHECKF(ncf_id(m, NCF_ITEM, top[j], id, sizeof id) > 0 && !strcmp(p, id), "user u3, rank %d: '%s', not '%s'", j,
               p, id);
    CHECK(ncf_recommend_for_id(m, "u3", NULL, ids, sizeof ids, NULL) == 10);
    /* a new user from item ids */
    for (j = 0; j < 3; j++) own[j] = ncf_find(m, NCF_ITEM, given[j]);
    CHECK(own[0] >= 0 && own[1] >= 0 && own[2] >= 0 && ncf_fold_in(m, NCF_USER, own, 3, &fo, row) == NCF_OK);
    o.user_row = row, o.deny = own, o.num_deny = 3;
    n = ncf_recommend_index(m, -1, &o, top, sc);
    o.user_row = NULL, o.deny = NULL, o.num_deny = 0;
    CHECK(n == 5 && ncf_recommend_for_items(m, given, 3, &o, NULL, ids, sizeof ids, by_id) == 5 &&
          !memcmp(sc, by_id, sizeof(float) * 5));
    for (j = 0, p = ids; j < n; j++, p += strlen(p) + 1) {
        CHECK(ncf_id(m, NCF_ITEM, top[j], id, sizeof id) > 0 && !strcmp(p, id));
        CHECK(strcmp(p, given[0]) && strcmp(p, given[1]) && strcmp(p, given[2]));
    }
    /* similar items */
    n = ncf_similar(m, NCF_ITEM, own[0], &o, top, sc);
    CHECK(n == 5 && ncf_similar_to_id(m, "Papers, Please", &o, ids, sizeof ids, by_id) == 5 &&
          !memcmp(sc, by_id, sizeof(float) * 5));
    for (j = 0, p = ids; j < n; j++, p += strlen(p) + 1)
        CHECK(ncf_id(m, NCF_ITEM, top[j], id, sizeof id) > 0 && !strcmp(p, id));
    /* refused, with the reason */
    CHECK_ERR(ncf_recommend_for_id(m, "nobody", &o, ids, sizeof ids, NULL), NCF_ERR_ARG, "nobody");
    CHECK_ERR(ncf_similar_to_id(m, "Papers", &o, ids, sizeof ids, NULL), NCF_ERR_ARG, "Papers");
    CHECK_ERR(ncf_recommend_for_items(m, given, 0, &o, NULL, ids, sizeof ids, NULL), NCF_ERR_ARG, "n > 0");
    CHECK_ERR(ncf_recommend_for_id(m, "u3", &o, ids, 4, NULL), NCF_ERR_ARG, "4 bytes hold");
    { /* k past the catalogue sizes by the catalogue (2^31 - 1 was 8 GB, refused for memory) */
        static char all[40 * (NCF_MAX_ID_BYTES + 1)];
        long before = g_alloc_bytes;
        o.k = 2147483647;
        n = ncf_recommend_for_id(m, "u3", &o, all, sizeof all, NULL);
        CHECKF(n > 0 && n <= 40, "%d: %s", n, ncf_error_text());
        CHECK(ncf_similar_to_id(m, "Papers, Please", &o, all, sizeof all, NULL) == 39);
        CHECK(ncf_recommend_for_items(m, given, 3, &o, NULL, all, sizeof all, NULL) > 0);
        CHECK(g_alloc_bytes - before < (1 << 20));
    }
    ncf_model_free(m), ncf_dataset_free(&d);
}

/* A serving call runs on the calling thread: with two threads allowed and a catalogue large
   enough that sharing it would pay, no call asks for a team (the library counts every region
   that does), and the answers are those of the shared form. rec_opts.threads = 1 and
   ncf_recommend_users share the work, and do ask. */
static void test_serving_calls_start_no_team_unless_asked(void)
{
#ifdef _OPENMP
    ncf_dataset d;
    ncf_model *m = NULL;
    ncf_config c = ncf_config_default();
    ncf_rec_opts o = ncf_rec_opts_default();
    ncf_fold_opts fo = ncf_fold_opts_default();
    int32_t top[10], top_shared[10], many[30], users[3] = {0, 1, 2}, its[4] = {1, 2, 3, 4}, allow[300], j;
    int64_t raw[10];
    float sc[30], sc_shared[10], row[256], z[4];
    int counts[3], threads = ncf_set_threads(0);
    long before;
    CHECK(ncf_synthetic(&d, 300, 1500, 12000, 4, 3) == NCF_OK);
    c.num_users = d.num_users, c.num_items = d.num_items;
    CHECK(ncf_model_create(&m, &c) == NCF_OK && ncf_model_set_ids(m, &d) == NCF_OK);
    for (j = 0; j < 300; j++) allow[j] = j * 5;
    ncf_set_threads(2);
    fo.steps = 3;
    before = ncf__teams_asked;
    CHECK(ncf_recommend_index(m, 3, &o, top, sc) == 10);
    CHECK(recommend_k(m, d.raw_user[3], 10, 1, raw, NULL) == 10);
    o.allow = allow, o.num_allow = 300;
    CHECK(ncf_recommend_index(m, 4, &o, top, NULL) == 10);
    CHECK(ncf_similar(m, NCF_ITEM, 5, &o, top, NULL) == 10);
    o.allow = NULL, o.num_allow = 0;
    CHECK(ncf_fold_in(m, NCF_USER, its, 4, &fo, row) == NCF_OK &&
          ncf_predict_for(m, NCF_USER, -1, row, its, 4, z) == NCF_OK);
    CHECK(ncf_row(m, NCF_USER, 2, row) == NCF_OK && ncf_predict_index(m, users, its, 3, z) == NCF_OK);
    CHECK(ncf_predict(m, d.raw_user[1], d.raw_item[2], z) == NCF_OK);
    CHECKF(ncf__teams_asked == before, "the serving calls asked for %ld teams", ncf__teams_asked - before);
    o.threads = 1;
    CHECK(ncf_recommend_index(m, 3, &o, top_shared, sc_shared) == 10);
    CHECK(ncf__teams_asked > before);
    o.threads = 0;
    CHECK(ncf_recommend_index(m, 3, &o, top, sc) == 10);
    CHECK(!memcmp(top, top_shared, sizeof top) && !memcmp(sc, sc_shared, sizeof sc_shared));
    before = ncf__teams_asked;
    CHECK(ncf_recommend_users(m, users, 3, &o, many, sc, counts) == NCF_OK);
    CHECK(ncf__teams_asked > before);
    o.threads = 2;
    CHECK_ERR(ncf_recommend_index(m, 3, &o, top, sc), NCF_ERR_ARG, "threads 2 is neither 0 nor 1");
    ncf_set_threads(threads);
    ncf_model_free(m), ncf_dataset_free(&d);
#else
    SKIP("no OpenMP in this build: no call can start a team");
#endif
}

/* One loaded model served from 4 threads at once gives the serial answers bit for bit:
   ncf_predict, ncf_predict_index, ncf_recommend and ncf_fold_in only read the model; so does an int8 model
   read in place, served by ncf_recommend from a workspace per thread (make test also
   runs this under ThreadSanitizer). */
#ifndef _WIN32
enum { SERVE_PAIRS = 300, SERVE_USERS = 40, SERVE_K = 10, SERVE_THREADS = 4 };
typedef struct {
    ncf_model *m, *in;
    const ncf_dataset *d;
    const int32_t *u, *it;
    const float *pred, *batch;
    const int64_t *rec, *rec_in;
    const float *fold_row; /* the serial fold-in of user 5, and its top-k with lists */
    const int32_t *fold_top;
    int wrong, errors;
} serve_job;

static const int32_t SERVE_ALLOW[6] = {3, 50, 7, 90, 11, 64}, SERVE_DENY[2] = {7, 90};

/* User 5 folded in from its training items, then its top-k among SERVE_ALLOW less SERVE_DENY. */
static int serve_fold(const ncf_model *m, const ncf_dataset *d, float *row, int32_t *top)
{
    ncf_fold_opts fo = ncf_fold_opts_default();
    ncf_rec_opts o = ncf_rec_opts_default();
    fo.steps = 10;
    if (ncf_fold_in(m, NCF_USER, d->items + d->user_ptr[5], (int)(d->user_ptr[6] - d->user_ptr[5]), &fo, row) != NCF_OK)
        return -1;
    o.k = SERVE_K, o.user_row = row, o.allow = SERVE_ALLOW, o.num_allow = 6, o.deny = SERVE_DENY, o.num_deny = 2;
    return ncf_recommend_index(m, -1, &o, top, NULL);
}

static void *serve_worker(void *arg)
{
    serve_job *j = (serve_job *)arg;
    float p[SERVE_PAIRS], sc[SERVE_K];
    int64_t top[SERVE_K];
    size_t size = rec_size_k(j->in, SERVE_K);
    void *work = malloc(size);
    int k, q, round;
    for (round = 0; round < 3; round++) {
        for (q = 0; q < SERVE_USERS; q++) {
            if (recommend_with_k(j->in, j->d->raw_user[q], SERVE_K, 1, top, sc, work, size) != SERVE_K) j->errors++;
            else j->wrong += memcmp(top, j->rec_in + q * SERVE_K, sizeof top) != 0;
        }
        for (k = 0; k < SERVE_PAIRS; k++) {
            if (ncf_predict(j->m, j->d->raw_user[j->u[k]], j->d->raw_item[j->it[k]], &p[k]) != NCF_OK) j->errors++;
            else j->wrong += memcmp(&p[k], &j->pred[k], sizeof(float)) != 0;
        }
        if (ncf_predict_index(j->m, j->u, j->it, SERVE_PAIRS, p) != NCF_OK) j->errors++;
        else j->wrong += memcmp(p, j->batch, sizeof p) != 0;
        {
            float row[64];
            int32_t top2[SERVE_K];
            if (serve_fold(j->m, j->d, row, top2) != 4) j->errors++;
            else
                j->wrong += memcmp(row, j->fold_row, sizeof(float) * (size_t)ncf_row_size(j->m)) != 0 ||
                    memcmp(top2, j->fold_top, sizeof(int32_t) * 4) != 0;
        }
        for (q = 0; q < SERVE_USERS; q++) {
            if (recommend_k(j->m, j->d->raw_user[q], SERVE_K, 1, top, sc) != SERVE_K) j->errors++;
            else j->wrong += memcmp(top, j->rec + q * SERVE_K, sizeof top) != 0;
        }
    }
    free(work);
    return NULL;
}

static void test_serving_threads_answer_as_one_thread(void)
{
    ncf_dataset d;
    ncf_model *trained, *m = NULL, *in = NULL;
    static int32_t u[SERVE_PAIRS], it[SERVE_PAIRS];
    static float pred[SERVE_PAIRS], batch[SERVE_PAIRS];
    static int64_t rec[SERVE_USERS * SERVE_K], rec_in[SERVE_USERS * SERVE_K];
    static float fold_row[64];
    static int32_t fold_top[SERVE_K];
    serve_job jobs[SERVE_THREADS];
    pthread_t th[SERVE_THREADS];
    void *buf = NULL, *buf8 = NULL;
    size_t len = 0, len8 = 0;
    int k, wrong = 0, errors = 0;
    CHECK(ncf_synthetic(&d, 200, 120, 4000, 6, 4) == NCF_OK);
    trained = trained_small(&d, 1);
    CHECK(trained && ncf_model_set_ids(trained, &d) == NCF_OK &&
          ncf_save_mem(trained, NCF_SAVE_MODEL, &buf, &len) == NCF_OK);
    CHECK(trained && ncf_save_mem(trained, NCF_SAVE_INT8, &buf8, &len8) == NCF_OK);
    CHECK(ncf_load_mem(&m, buf, len) == NCF_OK && ncf_model_open(&in, buf8, len8, 0) == NCF_OK);
    ncf_model_free(trained), ncf_free(buf);
    if (!m || !in) {
        ncf_model_free(m), ncf_model_free(in), ncf_free(buf8), ncf_dataset_free(&d);
        return;
    }
    for (k = 0; k < SERVE_USERS; k++)
        CHECK(recommend_k(in, d.raw_user[k], SERVE_K, 1, rec_in + k * SERVE_K, NULL) == SERVE_K);
    for (k = 0; k < SERVE_PAIRS; k++) {
        u[k] = (k * 13) % d.num_users, it[k] = (k * 7 + k / 9) % d.num_items;
        CHECK(ncf_predict(m, d.raw_user[u[k]], d.raw_item[it[k]], &pred[k]) == NCF_OK);
    }
    CHECK(ncf_predict_index(m, u, it, SERVE_PAIRS, batch) == NCF_OK);
    for (k = 0; k < SERVE_USERS; k++)
        CHECK(recommend_k(m, d.raw_user[k], SERVE_K, 1, rec + k * SERVE_K, NULL) == SERVE_K);
    CHECK(ncf_row_size(m) <= 64 && serve_fold(m, &d, fold_row, fold_top) == 4);
    for (k = 0; k < SERVE_THREADS; k++) {
        jobs[k].m = m, jobs[k].d = &d, jobs[k].u = u, jobs[k].it = it, jobs[k].pred = pred, jobs[k].batch = batch;
        jobs[k].rec = rec, jobs[k].in = in, jobs[k].rec_in = rec_in, jobs[k].wrong = jobs[k].errors = 0;
        jobs[k].fold_row = fold_row, jobs[k].fold_top = fold_top;
        CHECK(pthread_create(&th[k], NULL, serve_worker, &jobs[k]) == 0);
    }
    for (k = 0; k < SERVE_THREADS; k++) {
        pthread_join(th[k], NULL);
        wrong += jobs[k].wrong, errors += jobs[k].errors;
    }
    CHECKF(wrong == 0 && errors == 0, "%d answers differed from the serial ones, %d calls failed", wrong, errors);
    printf("    %d threads x 3 rounds of %d predictions, a batch, %d top-%d lists and as many from an int8 model "
           "in place, a fold-in with allow- and deny-lists: all serial answers\n",
           SERVE_THREADS, SERVE_PAIRS, SERVE_USERS, SERVE_K);
    ncf_model_free(m), ncf_model_free(in), ncf_free(buf8);
    ncf_dataset_free(&d);
}
#endif

/* ---- >>examples: the fixture, the fuzzers' seeds, top-k by raw id ---------------------------- */
/* Two interaction logs as people publish them, with the structure of ncf_synthetic (so a
   model has something to learn), for the demo's checks (--write-logs DIR):
   plays.tsv  a play-count log: userID<TAB>artistID<TAB>weight, a header, sorted by artist,
              no timestamps
   books.csv  a book-ratings export: "User-ID";"ISBN";"Book-Rating", every field quoted, CRLF,
              ISBNs as ids (leading zeros, an X check digit), 0 meaning "seen"
   bytes.tsv  the plays' users and items under ids that are not UTF-8 ("\377u2", "a\303" and
              the artist: a stray lead byte before a digit)
   events.csv an e-commerce event log: timestamp,visitorid,event,itemid,transactionid, each
              pair viewed one to three times, some put in a cart, fewer bought
   anime.csv  a ratings log where -1 means "on my list, not rated": user_id,anime_id,rating
   anime_names.csv  its catalogue: anime_id,name,genre,type, names quoted where they hold a comma
   overflow.ncf  an MLP of 8 layers whose every parameter is 1e5, inside the files' bound, whose
              logits overflow to infinity */
static int write_overflow(const char *dir, const ncf_dataset *d)
{
    ncf_config c = ncf_config_default();
    ncf_model *m = NULL;
    char path[512];
    size_t j;
    int l, ok;
    c.model = NCF_MLP, c.num_users = d->num_users, c.num_items = d->num_items, c.num_layers = 8;
    for (l = 0; l < 8; l++) c.layers[l] = 16;
    if (ncf_model_create(&m, &c) != NCF_OK) return 0;
    for (j = 0; j < m->num_params; j++) m->params[j] = 1e5f;
    ncf_model_params_changed(m);
    snprintf(path, sizeof path, "%s/overflow.ncf", dir); /* (fits: dir is the build folder) */
    ok = ncf_model_set_ids(m, d) == NCF_OK && ncf_save(m, path, NCF_SAVE_MODEL) == NCF_OK;
    ncf_model_free(m);
    return ok;
}

/* events.csv, anime.csv and anime_names.csv of d's positives (write_logs). */
static int write_event_logs(const char *dir, const ncf_dataset *d)
{
    static const char *const genres[4] = {"Action", "Comedy, Drama", "Romance", "Mystery"};
    char path[512];
    FILE *f, *g;
    int u, i, v;
    int64_t k, t = 1433221332000LL;                    /* (milliseconds, as the published log) */
    snprintf(path, sizeof path, "%s/events.csv", dir); /* (fits: dir is the build folder) */
    if (!(f = fopen(path, "wb"))) return 0;
    snprintf(path, sizeof path, "%s/anime.csv", dir);
    if (!(g = fopen(path, "wb"))) return fclose(f), 0;
    fprintf(f, "timestamp,visitorid,event,itemid,transactionid\n"), fprintf(g, "user_id,anime_id,rating\n");
    for (u = 0; u < d->num_users; u++)
        for (k = d->user_ptr[u]; k < d->user_ptr[u + 1] + 1; k++) {
            int item = k < d->user_ptr[u + 1] ? d->items[k] : d->test_item[u], h = (u * 7919 + item * 104729) % 100;
            for (v = 0; v <= h % 3; v++) fprintf(f, "%lld,%d,view,%d,\n", (long long)(t += 1000), 257 + u, 461 + item);
            if (h < 20) fprintf(f, "%lld,%d,addtocart,%d,\n", (long long)(t += 1000), 257 + u, 461 + item);
            if (h < 6) fprintf(f, "%lld,%d,transaction,%d,%d\n", (long long)(t += 1000), 257 + u, 461 + item, 4000 + h);
            fprintf(g, "%d,%d,%d\n", 1 + u, 20 + item, h < 30 ? -1 : 1 + h % 10);
        }
    fclose(f), fclose(g);
    snprintf(path, sizeof path, "%s/anime_names.csv", dir);
    if (!(f = fopen(path, "wb"))) return 0;
    fprintf(f, "anime_id,name,genre,type\n");
    for (i = 0; i < d->num_items; i++)
        fprintf(f, "%d,%s%s %d%s,\"%s\",%s\n", 20 + i, i % 5 ? "" : "\"", i % 5 ? "Show" : "Show, the Movie", i,
                i % 5 ? "" : "\"", genres[i % 4], i % 5 ? "TV" : "Movie");
    return fclose(f) == 0;
}

static int write_logs(const char *dir)
{
    ncf_dataset d;
    char path[512];
    FILE *f;
    int u, i, ok;
    int64_t k;
    if (ncf_synthetic(&d, 400, 300, 14000, 8, 5) != NCF_OK) return 0;
    snprintf(path, sizeof path, "%s/bytes.tsv", dir); /* (fits: dir is the build folder) */
    if (!(f = fopen(path, "wb"))) return 0;
    for (u = 0; u < d.num_users; u++)
        for (k = d.user_ptr[u]; k < d.user_ptr[u + 1] + 1; k++)
            fprintf(f, "\377u%d\ta\303%d\n", 2 + u, 51 + (k < d.user_ptr[u + 1] ? d.items[k] : d.test_item[u]));
    fclose(f);
    if (!write_overflow(dir, &d)) return 0;
    snprintf(path, sizeof path, "%s/plays.tsv", dir);
    if (!(f = fopen(path, "wb"))) return 0;
    fprintf(f, "userID\tartistID\tweight\n");
    for (i = 0; i < d.num_items; i++) /* by artist, as the file is published */
        for (u = 0; u < d.num_users; u++)
            for (k = d.user_ptr[u]; k < d.user_ptr[u + 1] + 1; k++) {
                int item = k < d.user_ptr[u + 1] ? d.items[k] : d.test_item[u];
                if (item == i) fprintf(f, "%d\t%d\t%d\n", 2 + u, 51 + i, 1 + (int)((u * 7919 + i * 104729) % 9000));
            }
    fclose(f);
    snprintf(path, sizeof path, "%s/books.csv", dir);
    if (!(f = fopen(path, "wb"))) return 0;
    fprintf(f, "\"User-ID\";\"ISBN\";\"Book-Rating\"\r\n");
    for (u = 0; u < d.num_users; u++)
        for (k = d.user_ptr[u]; k < d.user_ptr[u + 1] + 1; k++) {
            int item = k < d.user_ptr[u + 1] ? d.items[k] : d.test_item[u], r = (int)((u * 31 + item * 17) % 13);
            char isbn[16];
            if (item % 3 == 0) snprintf(isbn, sizeof isbn, "0%08dX", 34545104 + item);
            else if (item % 3 == 1) snprintf(isbn, sizeof isbn, "0%09d", 440213320 + item);
            else snprintf(isbn, sizeof isbn, "%010d", 1550612240 + item);
            fprintf(f, "\"%d\";\"%s\";\"%d\"\r\n", 276725 + u, isbn, r > 10 ? 0 : r); /* about 1 in 6: seen, 0 */
        }
    fclose(f);
    ok = write_event_logs(dir, &d);
    ncf_dataset_free(&d);
    return ok;
}

/* Small model files of every kind, the model fuzzer's seeds (--write-seeds DIR; make fuzz
   writes them, so the repository holds no binary file): each model type, int8 rows, text ids,
   and the older format 3 (a format 4 file of integer ids relabelled, as 0.5 wrote it). */
static int write_fuzz_seeds(const char *dir)
{
    static const char *const names[] = {"neumf.ncf",      "gmf.ncf",      "mlp.ncf",           "mf.ncf",
                                        "neumf_int8.ncf", "neumf_v3.ncf", "neumf_v3_int8.ncf", "text_ids.ncf"};
    static const char log[] = "user,item\nu1,0440213320\nu1,034545104X\nu2,0440213320\nu2,x9\nu3,x9\n";
    ncf_dataset_opts o = ncf_dataset_opts_default();
    ncf_dataset d, t;
    int k, ok;
    memset(&d, 0, sizeof d), memset(&t, 0, sizeof t);
    o.eval_negatives = 1;
    ok = ncf_synthetic(&d, 12, 8, 40, 2, 3) == NCF_OK &&
        ncf_load_dataset_mem(&t, "seed.csv", log, strlen(log), &o) == NCF_OK;
    for (k = 0; ok && k < 8; k++) {
        ncf_dataset *data = k == 7 ? &t : &d;
        ncf_config c = small_config(k < 4 ? (ncf_model_type)k : NCF_NEUMF, 0);
        ncf_model *m = NULL;
        void *buf = NULL;
        size_t len = 0;
        char path[512];
        FILE *f;
        c.num_users = data->num_users, c.num_items = data->num_items;
        ok = ncf_model_create(&m, &c) == NCF_OK && ncf_model_set_ids(m, data) == NCF_OK &&
            ncf_save_mem(m, k == 4 || k == 6 ? NCF_SAVE_INT8 : NCF_SAVE_MODEL, &buf, &len) == NCF_OK;
        if (ok && (k == 5 || k == 6)) { /* version 3: the same bytes, relabelled, the CRC made good */
            uint8_t *p = (uint8_t *)buf;
            p[4] = 3;
            set_u32(p + len - 4, ncf__crc32(p, len - 4));
        }
        snprintf(path, sizeof path, "%s/%s", dir, names[k]);
        ok = ok && (f = fopen(path, "wb")) != NULL;
        ok = ok && fwrite(buf, 1, len, f) == len && fclose(f) == 0;
        ncf_free(buf), ncf_model_free(m);
    }
    if (!ok) printf("cannot write the seeds in %s: %s\n", dir, ncf_error_text());
    ncf_dataset_free(&d), ncf_dataset_free(&t);
    return ok;
}

static void test_fixture_written_here_reads_back(void)
{
    CHECK(write_fixture(g_dir));
    check_fixture(g_dir);
}

static const float *g_sort_scores;
static int cmp_best(const void *a, const void *b)
{
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    float sx = g_sort_scores[x], sy = g_sort_scores[y];
    if (sx != sy) return sx > sy ? -1 : 1;
    return (x > y) - (x < y);
}

/* The model fuzzer's seeds are models every reader takes: loaded by copy and read in place. */
static void test_fuzz_seeds_are_valid_models(void)
{
    static const char *const names[] = {"neumf.ncf",      "gmf.ncf",      "mlp.ncf",           "mf.ncf",
                                        "neumf_int8.ncf", "neumf_v3.ncf", "neumf_v3_int8.ncf", "text_ids.ncf"};
    int k;
    CHECK(write_fuzz_seeds(g_dir));
    for (k = 0; k < 8; k++) {
        ncf_model *m = NULL;
        CHECKF(ncf_load(&m, path_in_dir(names[k])) == NCF_OK, "%s: %s", names[k], ncf_error_text());
        ncf_model_free(m);
        remove(path_in_dir(names[k]));
    }
}

static void test_recommend_topk_matches_a_full_sort_by_raw_id(void)
{
    ncf_dataset d;
    ncf_model *m, *b = NULL;
    ncf__eval_buf e;
    float *sc, *proj, got_s[400], logit;
    int64_t got[400], got2[400];
    int32_t *order;
    int u, j, rc, n, bad_seen = 0, mismatch = 0;
    void *buf = NULL;
    size_t len;
    CHECK(ncf_synthetic(&d, 150, 90, 3000, 6, 8) == NCF_OK);
    for (u = 0; u < d.num_users; u++) d.raw_user[u] = 5000 + 3 * u; /* raw ids unlike dense ones */
    for (j = 0; j < d.num_items; j++) d.raw_item[j] = 100000 + 7 * j;
    m = trained_small(&d, 2);
    CHECK(m && ncf_model_set_ids(m, &d) == NCF_OK);
    if (!m) {
        ncf_dataset_free(&d);
        return;
    }
    sc = (float *)malloc(sizeof(float) * (size_t)d.num_items);
    order = (int32_t *)malloc(sizeof(int32_t) * (size_t)d.num_items);
    proj = ncf__item_projection(m, &rc);
    CHECK(ncf__eval_buf_alloc(&e, m, d.num_items));
    for (u = 0; u < d.num_users; u += 7) {
        int k = 1 + u % 25, cnt = 0;
        n = recommend_k(m, d.raw_user[u], k, 1, got, got_s);
        /* brute force over the same scores: sort every unrated item */
        ncf__score_user(m, proj, u, NULL, NULL, 0, d.num_items, &e, 0);
        memcpy(sc, e.sc, sizeof(float) * (size_t)d.num_items);
        for (j = 0; j < d.num_items; j++)
            if (!is_rated(&d, u, j)) order[cnt++] = j;
        g_sort_scores = sc;
        qsort(order, (size_t)cnt, sizeof *order, cmp_best);
        CHECK(n == (k < cnt ? k : cnt));
        for (j = 0; j < n; j++) {
            int dense = (int)((got[j] - 100000) / 7);
            mismatch += got[j] != d.raw_item[order[j]] || got_s[j] != sc[order[j]];
            bad_seen += is_rated(&d, u, dense);
        }
    }
    CHECKF(mismatch == 0 && bad_seen == 0, "%d differ from the brute-force sort, %d were rated", mismatch, bad_seen);
    /* scores agree with the training forward; k past the catalogue; seen items allowed */
    CHECK(ncf_predict(m, d.raw_user[3], d.raw_item[5], &logit) == NCF_OK);
    ncf__score_user(m, proj, 3, NULL, NULL, 0, d.num_items, &e, 0);
    CHECK(!memcmp(&logit, &e.sc[5], sizeof logit));
    n = recommend_k(m, d.raw_user[3], 400, 0, got, NULL);
    CHECK(n == d.num_items);
    n = recommend_k(m, d.raw_user[3], 400, 1, got, NULL);
    CHECK(n == d.num_items - (int)(d.user_ptr[4] - d.user_ptr[3]) - 1);
    CHECK_ERR(recommend_k(m, 4, 10, 1, got, NULL), NCF_ERR_ARG, "unknown user 4");
    CHECK_ERR(ncf_predict(m, d.raw_user[0], 7, &logit), NCF_ERR_ARG, "unknown item 7");
    CHECK_ERR(recommend_k(m, d.raw_user[0], 0, 1, got, NULL), NCF_ERR_ARG, "k > 0");
    /* a loaded model answers the same, in raw ids */
    n = recommend_k(m, d.raw_user[10], 20, 1, got, NULL);
    CHECK(ncf_save_mem(m, NCF_SAVE_MODEL, &buf, &len) == NCF_OK && ncf_load_mem(&b, buf, len) == NCF_OK);
    CHECK(b && recommend_k(b, d.raw_user[10], 20, 1, got2, NULL) == n &&
          !memcmp(got, got2, sizeof(int64_t) * (size_t)n));
    ncf_free(buf);
    ncf_model_free(b);
    ncf__eval_buf_free(&e);
    NCF_FREE(proj);
    free(sc), free(order);
    ncf_model_free(m);
    ncf_dataset_free(&d);
}
