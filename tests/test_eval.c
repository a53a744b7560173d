/* tests/test_eval.c - evaluation: metrics against hand-ranked cases, validation never trained on. Included by tests.c (one program). */
/* ---- >>evaluation: the paper split's negatives checked --------------------------------------- */

/* A paper-split negative that the user rated in training is refused with its file and line;
   the test item listed among its own negatives (as 156 users of the paper's ml-1m file have)
   is ignored by evaluation, as the paper's code does. */
static void test_rated_split_negatives_refused_own_test_item_ignored(void)
{
    ncf_dataset d, back;
    char prefix[300];
    ncf_metrics a, b;
    ncf_model *m;
    float score[40];
    int k, u;
    CHECK(ncf_synthetic(&d, 20, 40, 300, 3, 9) == NCF_OK && ncf_sample_eval_negatives(&d, 5, 2) == NCF_OK);
    for (k = 0; k < 40; k++) score[k] = (float)((k * 7) % 40) / 40.0f;
    m = scoring_model(score, 20, 40);
    CHECK(m && evaluate_k(m, &d, 3, NCF_SAMPLED, &a) == NCF_OK);
    for (u = 0; u < 20; u += 2) d.eval_neg[u * 5 + 1] = d.test_item[u]; /* the test item as a negative */
    CHECK(evaluate_k(m, &d, 3, NCF_SAMPLED, &b) == NCF_OK);
    /* removing a real negative can only help, and the duplicate must not count against */
    CHECKF(b.hr >= a.hr && b.ndcg >= a.ndcg, "hr %f -> %f", a.hr, b.hr);
    snprintf(prefix, sizeof prefix, "%s/dup", g_dir);
    write_ncf_split(&d, prefix);
    CHECKF(ncf_load_dataset(&back, prefix, NULL) == NCF_OK, "%s", ncf_error_text());
    ncf_dataset_free(&back);
    d.eval_neg[3 * 5 + 2] = d.items[d.user_ptr[3]]; /* user 3's first training item */
    snprintf(prefix, sizeof prefix, "%s/trainneg", g_dir);
    write_ncf_split(&d, prefix);
    CHECK_ERR(ncf_load_dataset(&back, prefix, NULL), NCF_ERR_DATA, "trainneg.test.negative:4: negative");
    ncf_model_free(m);
    ncf_dataset_free(&d);
}

/* ---- >>metrics: HR, NDCG, MRR and the rest against hand-ranked cases; validation ------------- */

/* A split of many items per user, ranked by popularity (training counts), against the figures
   worked by hand: two test users with one and two items, ties between a held-out item and an
   unrated one (the unrated ranks first), cut-offs 1, 3 and 5. */
static void test_many_item_metrics_match_hand_computation(void)
{
    static const char log[] = "1 1 1\n1 2 1\n1 3 1\n1 4 1\n2 1 1\n2 2 1\n2 3 1\n3 1 1\n3 2 1\n4 1 1\n4 3 1\n"
                              "5 1 1\n5 4 1\n6 5 1\n6 6 1\n7 1 1\n7 3 5\n7 6 5\n8 2 1\n8 4 1\n8 1 5\n";
    /* training counts: item 1: 6, 2: 4, 3: 3, 4: 3, 5: 1, 6: 1. User 7 (trained on 1) ranks
       2, 4, 3*, 5, 6* (3 ties 4, 6 ties 5: the held-out item second); user 8 (on 2, 4): 1*, 3, 5, 6 */
    const int ks[3] = {1, 3, 5};
    const double idcg2 = 1 + 1 / log2(3.0), ndcg7_3 = 0.5 / idcg2, ndcg7_5 = (0.5 + 1 / log2(6.0)) / idcg2;
    const double want[3][8] = {
        /* recall, precision, ndcg, map, hr, mrr, coverage, popularity */
        {0.5, 0.5, 0.5, 0.5, 0.5, (1 / 3.0 + 1) / 2, 2 / 6.0, 5},
        {0.75, 1 / 3.0, (ndcg7_3 + 1) / 2, (1 / 6.0 + 1) / 2, 1, (1 / 3.0 + 1) / 2, 5 / 6.0, 10 / 3.0},
        {1, 0.3, (ndcg7_5 + 1) / 2, ((1 / 3.0 + 2 / 5.0) / 2 + 1) / 2, 1, (1 / 3.0 + 1) / 2, 1, (2.4 + 2.75) / 2}};
    ncf_dataset_opts o = ncf_dataset_opts_default();
    ncf_eval_opts e = ncf_eval_opts_default();
    ncf_dataset d;
    ncf_metrics at[3];
    int j;
    o.holdout = NCF_HOLDOUT_CUTOFF, o.holdout_cutoff = 5, o.sep = " ", o.columns[NCF_COL_RATING] = "";
    o.columns[NCF_COL_TIME] = "3";
    CHECKF(ncf_load_dataset_mem(&d, "log", log, strlen(log), &o) == NCF_OK, "%s", ncf_error_text());
    CHECK(d.test_ptr && d.report.test_interactions == 3 && d.num_train == 18 && d.test_item[6] == -1);
    CHECK(d.test_ptr[7] - d.test_ptr[6] == 2 && d.test_items[d.test_ptr[6]] == 2 &&
          d.test_items[d.test_ptr[6] + 1] == 5);
    e.full_ranking = 1;
    CHECKF(ncf_evaluate_at(NULL, &d, &e, ks, 3, at) == NCF_OK, "%s", ncf_error_text());
    for (j = 0; j < 3; j++) {
        const double got[8] = {at[j].recall, at[j].precision, at[j].ndcg,     at[j].map,
                               at[j].hr,     at[j].mrr,       at[j].coverage, at[j].popularity};
        int q;
        CHECK(at[j].users == 2 && at[j].k == ks[j]);
        for (q = 0; q < 8; q++)
            CHECKF(fabs(got[q] - want[j][q]) < 1e-12, "@%d figure %d: %.15f, by hand %.15f", ks[j], q, got[q],
                   want[j][q]);
    }
    e.full_ranking = 0;
    CHECK_ERR(ncf_evaluate_at(NULL, &d, &e, ks, 3, at), NCF_ERR_ARG, "full ranking");
    ncf_dataset_free(&d);
}

/* Ranks every unrated item of each test user by the model's own scores, sorted here, and
   works out the figures from the list: ncf_evaluate_at must agree on a ratio split. */
static void test_many_item_metrics_match_a_sorted_ranking(void)
{
    char *log = (char *)malloc(200000);
    size_t n = 0;
    int u, i, j, ks[2] = {5, 20};
    ncf_dataset_opts o = ncf_dataset_opts_default();
    ncf_eval_opts e = ncf_eval_opts_default();
    ncf_config c = ncf_config_default();
    ncf_dataset d;
    ncf_model *m = NULL;
    ncf_metrics at[2];
    double sum[2][5];
    int users = 0;
    uint64_t x = 7;
    for (u = 0; u < 60; u++) /* users rate 6 to 25 of 80 items, each line its own time */
        for (i = 0; i < 80; i++) {
            x = x * 6364136223846793005ULL + 1442695040888963407ULL;
            if ((x >> 33) % 80 < (uint64_t)(6 + u % 20))
                n += (size_t)sprintf(log + n, "%d,%d,%d\n", u, i, (int)(x >> 40) % 1000);
        }
    o.holdout = NCF_HOLDOUT_RATIO, o.holdout_fraction = 0.3f, o.validation = 1, o.header = NCF_HEADER_NO;
    o.columns[NCF_COL_RATING] = "", o.columns[NCF_COL_TIME] = "3";
    CHECKF(ncf_load_dataset_mem(&d, "ratio.csv", log, n, &o) == NCF_OK, "%s", ncf_error_text());
    c.num_users = d.num_users, c.num_items = d.num_items, c.mf_dim = 4;
    CHECK(ncf_model_create(&m, &c) == NCF_OK);
    e.full_ranking = 1;
    CHECKF(ncf_evaluate_at(m, &d, &e, ks, 2, at) == NCF_OK, "%s", ncf_error_text());
    memset(sum, 0, sizeof sum);
    for (u = 0; u < d.num_users; u++) {
        int64_t nt = d.test_ptr[u + 1] - d.test_ptr[u];
        float sc[80];
        int order[80], len = 0, q;
        if (!nt) continue;
        users++;
        for (i = 0; i < d.num_items; i++) {
            int rated = 0;
            int64_t k;
            for (k = d.user_ptr[u]; k < d.user_ptr[u + 1]; k++) rated |= d.items[k] == i;
            for (k = d.val_ptr[u]; k < d.val_ptr[u + 1]; k++) rated |= d.val_items[k] == i;
            {
                int32_t uu = u, ii = i;
                CHECK(ncf_predict_index(m, &uu, &ii, 1, &sc[i]) == NCF_OK);
            }
            if (!rated) order[len++] = i;
        }
        for (i = 1; i < len; i++) /* by score, the held-out item after an unrated one it ties, else by index */
            for (q = i; q > 0; q--) {
                int a = order[q - 1], b = order[q], ha = 0, hb = 0;
                int64_t k;
                for (k = d.test_ptr[u]; k < d.test_ptr[u + 1]; k++)
                    ha |= d.test_items[k] == a, hb |= d.test_items[k] == b;
                if (sc[b] > sc[a] || (sc[b] == sc[a] && (ha > hb || (ha == hb && b < a))))
                    order[q - 1] = b, order[q] = a;
                else break;
            }
        for (j = 0; j < 2; j++) {
            int h = 0;
            double dcg = 0, idcg = 0, ap = 0;
            for (q = 0; q < ks[j] && q < len; q++) {
                int64_t k, hit = 0;
                for (k = d.test_ptr[u]; k < d.test_ptr[u + 1]; k++) hit |= d.test_items[k] == order[q];
                if (hit) h++, dcg += 1 / log2(q + 2.0), ap += (double)h / (q + 1);
            }
            for (q = 0; q < nt && q < ks[j]; q++) idcg += 1 / log2(q + 2.0);
            sum[j][0] += (double)h / nt, sum[j][1] += (double)h / ks[j], sum[j][2] += dcg / idcg;
            sum[j][3] += ap / (nt < ks[j] ? nt : ks[j]), sum[j][4] += h > 0;
        }
    }
    for (j = 0; j < 2; j++) {
        const double got[5] = {at[j].recall, at[j].precision, at[j].ndcg, at[j].map, at[j].hr};
        int q;
        CHECK(at[j].users == users && users > 40);
        for (q = 0; q < 5; q++)
            CHECKF(fabs(got[q] - sum[j][q] / users) < 1e-9, "@%d figure %d: %.12f, from the sorted list %.12f", ks[j],
                   q, got[q], sum[j][q] / users);
    }
    ncf_model_free(m), ncf_dataset_free(&d), free(log);
}

/* A ratio split and a time split put every positive in exactly one of training, validation
   and test; a ratio split holds round(f k) of each user's k, the latest by time; a time split
   holds exactly the positives at or after its cut-offs; users only held out are counted. */
static void test_many_item_splits_hold_each_positive_once(void)
{
    char *log = (char *)malloc(100000);
    size_t n = 0;
    int u, i, h;
    for (u = 0; u < 40; u++)
        for (i = 0; i < 3 + u % 9; i++) n += (size_t)sprintf(log + n, "%d\t%d\t%d\n", u, (i * 7 + u) % 50, u * 10 + i);
    for (h = 0; h < 2; h++) {
        ncf_dataset_opts o = ncf_dataset_opts_default();
        ncf_dataset d;
        int64_t seen = 0, k;
        o.holdout = h ? NCF_HOLDOUT_TIME : NCF_HOLDOUT_RATIO, o.holdout_fraction = 0.25f, o.validation = 1;
        o.header = NCF_HEADER_NO, o.columns[NCF_COL_RATING] = "", o.columns[NCF_COL_TIME] = "3";
        CHECKF(ncf_load_dataset_mem(&d, "log.tsv", log, n, &o) == NCF_OK, "%s", ncf_error_text());
        for (u = 0; u < d.num_users; u++) {
            int64_t c = 3 + u % 9, nt = d.test_ptr[u + 1] - d.test_ptr[u], nv = d.val_ptr[u + 1] - d.val_ptr[u];
            int64_t nr = d.user_ptr[u + 1] - d.user_ptr[u];
            char where[50];
            memset(where, 0, sizeof where);
            for (k = d.user_ptr[u]; k < d.user_ptr[u + 1]; k++) where[d.items[k]]++;
            for (k = d.test_ptr[u]; k < d.test_ptr[u + 1]; k++) where[d.test_items[k]]++;
            for (k = d.val_ptr[u]; k < d.val_ptr[u + 1]; k++) where[d.val_items[k]]++;
            for (i = 0; i < (int)c; i++) CHECKF(where[(i * 7 + u) % 50] == 1, "user %d item %d", u, i);
            seen += nr + nt + nv;
            if (!h) {
                int64_t m = (int64_t)floor(0.25 * c + 0.5), mv;
                m = m < 1 ? 1 : m > c - 1 ? c - 1 : m;
                mv = (int64_t)floor(0.25 * (c - m) + 0.5), mv = mv < 1 ? 1 : mv > c - m - 1 ? c - m - 1 : mv;
                CHECKF(nt == m && nv == mv, "user %d: %lld of %lld held out, %lld validation", u, (long long)nt,
                       (long long)c, (long long)nv);
                for (k = d.test_ptr[u]; k < d.test_ptr[u + 1]; k++) { /* the latest: lines i >= c - m */
                    int it = d.test_items[k], line = -1;
                    for (i = 0; i < (int)c; i++)
                        if ((i * 7 + u) % 50 == it) line = i;
                    CHECKF(line >= c - m, "user %d: test item %d from line %d of %lld", u, it, line, (long long)c);
                }
            } else {
                for (k = d.test_ptr[u]; k < d.test_ptr[u + 1]; k++) {
                    int it = d.test_items[k], line = -1;
                    for (i = 0; i < (int)c; i++)
                        if ((i * 7 + u) % 50 == it) line = i;
                    CHECK(u * 10 + line >= d.report.cutoff);
                }
                for (k = d.user_ptr[u]; k < d.user_ptr[u + 1]; k++) {
                    int it = d.items[k], line = -1;
                    for (i = 0; i < (int)c; i++)
                        if ((i * 7 + u) % 50 == it) line = i;
                    CHECK(u * 10 + line < d.report.cutoff);
                }
            }
        }
        {
            int64_t total = 0;
            for (u = 0; u < 40; u++) total += 3 + u % 9;
            CHECKF(seen == total, "%lld kept of %lld", (long long)seen, (long long)total);
            if (h)
                CHECK(d.report.users_only_held_out > 0 && d.report.only_held_out > 0 &&
                      d.report.test_interactions >= total / 4);
        }
        ncf_dataset_free(&d);
    }
    {
        ncf_dataset_opts o = ncf_dataset_opts_default();
        ncf_dataset d;
        o.holdout = NCF_HOLDOUT_TIME, o.columns[NCF_COL_TIME] = "", o.header = NCF_HEADER_NO;
        CHECK_ERR(ncf_load_dataset_mem(&d, "log.tsv", log, n, &o), NCF_ERR_ARG, "timestamp column");
        o.holdout = NCF_HOLDOUT_RATIO, o.holdout_fraction = 1.5f;
        CHECK_ERR(ncf_load_dataset_mem(&d, "log.tsv", log, n, &o), NCF_ERR_ARG, "holdout_fraction 1.5");
    }
    free(log);
}

/* A split written by ncf_save_split reads back as the same users, items and lists, text ids
   with a tab, a quote and blanks at their ends included, and every line once. */
static void test_saved_split_reads_back_the_same_lines(void)
{
    static const char log[] =
        "user;item;t\nann;\"a\tb\";1\nann;\" x \";2\nann;\"q\"\"t\";3\nann;p;4\nbob;p;1\nbob;\" x \";2\n"
        "bob;z;3\n\"c d\";z;1\n\"c d\";p;2\n\"c d\";\"a\tb\";3\n\"c d\";w;4\n";
    ncf_dataset_opts o = ncf_dataset_opts_default();
    ncf_dataset a, b;
    char prefix[1100], path[1200];
    int u, side;
    o.holdout = NCF_HOLDOUT_RATIO, o.holdout_fraction = 0.3f, o.validation = 1, o.columns[NCF_COL_TIME] = "t";
    o.columns[NCF_COL_RATING] = "";
    CHECKF(ncf_load_dataset_mem(&a, "log.csv", log, strlen(log), &o) == NCF_OK, "%s", ncf_error_text());
    snprintf(prefix, sizeof prefix, "%s/split", g_dir);
    CHECKF(ncf_save_split(&a, prefix) == NCF_OK, "%s", ncf_error_text());
    CHECKF(ncf_load_dataset(&b, prefix, NULL) == NCF_OK, "%s", ncf_error_text());
    CHECK(b.num_users == a.num_users && b.num_items == a.num_items && b.num_train == a.num_train);
    CHECK(b.report.holdout == NCF_HOLDOUT_SAVED && b.test_ptr && b.val_ptr);
    CHECK(!memcmp(a.user_ptr, b.user_ptr, sizeof(int64_t) * (size_t)(a.num_users + 1)));
    CHECK(!memcmp(a.items, b.items, sizeof(int32_t) * (size_t)a.num_train));
    CHECK(!memcmp(a.test_ptr, b.test_ptr, sizeof(int64_t) * (size_t)(a.num_users + 1)));
    CHECK(!memcmp(a.test_items, b.test_items, sizeof(int32_t) * (size_t)a.test_ptr[a.num_users]));
    CHECK(!memcmp(a.val_ptr, b.val_ptr, sizeof(int64_t) * (size_t)(a.num_users + 1)));
    CHECK(!memcmp(a.val_items, b.val_items, sizeof(int32_t) * (size_t)a.val_ptr[a.num_users]));
    CHECK(a.test_ptr[a.num_users] == 3 && a.val_ptr[a.num_users] == 3 &&
          a.num_train == 5); /* 1, 1, 2 of 4; 1, 1, 1 of 3 */
    for (side = 0; side < 2; side++)
        for (u = 0; u < (side ? a.num_items : a.num_users); u++) {
            char x[64], y[64];
            CHECK((side ? ncf_dataset_id(&a, NCF_ITEM, u, x, sizeof x)
                        : ncf_dataset_id(&a, NCF_USER, u, x, sizeof x)) >= 0);
            CHECK((side ? ncf_dataset_id(&b, NCF_ITEM, u, y, sizeof y)
                        : ncf_dataset_id(&b, NCF_USER, u, y, sizeof y)) >= 0);
            CHECKF(!strcmp(x, y), "%s %d: '%s' read back as '%s'", side ? "item" : "user", u, x, y);
        }
    snprintf(path, sizeof path, "%s.test.tsv", prefix);
    ncf_dataset_free(&a), ncf_dataset_free(&b);
    CHECKF(ncf_load_dataset(&a, path, NULL) == NCF_OK && a.report.holdout == NCF_HOLDOUT_SAVED, "%s",
           ncf_error_text()); /* (a file of it names it) */
    ncf_dataset_free(&a);
    o.validation = 0; /* a split without validation over one with it: no file of the old one stays */
    CHECKF(ncf_load_dataset_mem(&a, "log.csv", log, strlen(log), &o) == NCF_OK, "%s", ncf_error_text());
    CHECKF(ncf_save_split(&a, prefix) == NCF_OK, "%s", ncf_error_text());
    CHECKF(ncf_load_dataset(&b, prefix, NULL) == NCF_OK, "%s", ncf_error_text());
    CHECK(!b.val_ptr && b.num_train == a.num_train && b.test_ptr[b.num_users] == a.test_ptr[a.num_users]);
    snprintf(path, sizeof path, "%s.validation.tsv", prefix);
    {
        FILE *stale = fopen(path, "rb");
        CHECK(!stale);
        if (stale) fclose(stale);
    }
    ncf_dataset_free(&a), ncf_dataset_free(&b);
    snprintf(path, sizeof path, "%s.test.tsv", prefix);
    remove(path);
    snprintf(path, sizeof path, "%s.train.tsv", prefix), remove(path);
    snprintf(path, sizeof path, "%s.validation.tsv", prefix), remove(path);
}

static void test_metrics_match_hand_ranked_cases(void)
{
    /* 3 users, 12 items scored i/10, except item 4 ties item 3 */
    float score[12] = {0, .1f, .2f, .3f, .3f, .5f, .6f, .7f, .8f, .9f, 1.0f, 1.1f};
    int64_t tu[6] = {0, 0, 1, 1, 2, 2}, ti[6] = {0, 5, 6, 11, 1, 3}, tt[6] = {1, 2, 1, 2, 1, 2};
    int32_t negs[12] = {1, 2, 7, 9, /* user 0, test 5: 7 and 9 beat it -> rank 2 */
                        0, 1, 2, 3, /* user 1, test 11: rank 0 */
                        4, 8, 9, 10 /* user 2, test 3: the tie (4) counts against -> rank 4 */};
    ncf_dataset d;
    ncf_metrics m10, m3, full;
    ncf_model *m;
    CHECK(build_fixed(&d, tu, ti, tt, 6, 3, 12) == NCF_OK); /* ids kept as given */
    CHECK(d.num_items == 12 && d.test_item[0] == 5 && d.test_item[1] == 11 && d.test_item[2] == 3);
    d.eval_neg = (int32_t *)NCF_MALLOC(sizeof negs);
    memcpy(d.eval_neg, negs, sizeof negs);
    d.num_eval_neg = 4;
    m = scoring_model(score, 3, 12);
    CHECK(m != NULL);
    if (!m) {
        ncf_dataset_free(&d);
        return;
    }
    CHECK(evaluate_k(m, &d, 10, NCF_SAMPLED, &m10) == NCF_OK);
    CHECK(m10.users == 3 && fabs(m10.hr - 1.0) < 1e-12);
    CHECKF(fabs(m10.ndcg - (0.5 + 1.0 + 1.0 / log2(6.0)) / 3) < 1e-12, "ndcg %.15f", m10.ndcg);
    CHECK(evaluate_k(m, &d, 3, NCF_SAMPLED, &m3) == NCF_OK);
    CHECK(fabs(m3.hr - 2.0 / 3) < 1e-12 && fabs(m3.ndcg - 1.5 / 3) < 1e-12);
    /* full ranking, by hand: user 0 (train 0, test 5): unrated items above 0.5 are
       6..11 -> rank 6; user 1 (train 6, test 11): rank 0; user 2 (train 1, test 3):
       items 4..11 and the tie -> rank 8 */
    CHECK(evaluate_k(m, &d, 10, NCF_FULL_RANKING, &full) == NCF_OK);
    CHECKF(fabs(full.hr - 1.0) < 1e-12 && fabs(full.ndcg - (1 / log2(8.0) + 1 + 1 / log2(10.0)) / 3) < 1e-12,
           "hr %f ndcg %.15f", full.hr, full.ndcg);
    CHECK(evaluate_k(m, &d, 7, NCF_FULL_RANKING, &full) == NCF_OK);
    CHECK(fabs(full.hr - 2.0 / 3) < 1e-12);
    /* MRR: ranks 2, 0, 4 sampled; 6, 0, 8 full */
    CHECKF(fabs(m10.mrr - (1.0 / 3 + 1 + 1.0 / 5) / 3) < 1e-12, "mrr %.15f", m10.mrr);
    CHECKF(fabs(full.mrr - (1.0 / 7 + 1 + 1.0 / 9) / 3) < 1e-12, "full mrr %.15f", full.mrr);
    ncf_model_free(m);
    ncf_dataset_free(&d);
}

/* A validation set by hand: with timestamps it takes each user's second latest rating;
   its metrics rank it against its own negatives, or every item but the user's training
   items (the test item among them: what chooses on validation never reads it); and the
   test's full ranking no longer counts the validation item. */
static void test_validation_figures_match_hand_computation(void)
{
    float score[12] = {0, .1f, .2f, .3f, .3f, .5f, .6f, .7f, .8f, .9f, 1.0f, 1.1f};
    /* user 0: 0 (t1), 2 (t2), 5 (t3) -> test 5, validation 2; user 1: 6, 11, 10 -> test 10, validation 11 */
    int64_t tu[6] = {0, 0, 0, 1, 1, 1}, ti[6] = {0, 2, 5, 6, 11, 10}, tt[6] = {1, 2, 3, 1, 2, 3};
    int32_t negs[4] = {1, 7, 0, 3}, vnegs[4] = {1, 7, 0, 3};
    ncf_dataset d;
    ncf_metrics s, f;
    ncf_eval_opts o = ncf_eval_opts_default();
    ncf_model *m;
    CHECK(build_fixed(&d, tu, ti, tt, 6, 2, 12) == NCF_OK); /* ids kept as given */
    CHECK(d.recent_item && d.recent_item[0] == 2 && d.recent_item[1] == 11);
    d.eval_neg = (int32_t *)NCF_MALLOC(sizeof negs);
    memcpy(d.eval_neg, negs, sizeof negs);
    d.num_eval_neg = 2;
    CHECK(ncf_hold_out_validation(&d, 2, 1) == NCF_OK);
    CHECK(d.val_item[0] == 2 && d.val_item[1] == 11 && d.num_train == 2 && d.items[0] == 0 && d.items[1] == 6);
    memcpy(d.val_neg, vnegs, sizeof vnegs); /* negatives by hand */
    m = scoring_model(score, 2, 12);
    CHECK(m != NULL);
    if (!m) {
        ncf_dataset_free(&d);
        return;
    }
    o.target = NCF_EVAL_VALIDATION, o.k = 1;
    /* user 0: 0.2 against 0.1 and 0.7 -> rank 1; user 1: 1.1 against 0 and 0.3 -> rank 0 */
    CHECK(ncf_evaluate(m, &d, &o, &s) == NCF_OK);
    CHECKF(s.users == 2 && fabs(s.hr - 0.5) < 1e-12 && fabs(s.mrr - 0.75) < 1e-12, "hr %f mrr %f", s.hr, s.mrr);
    /* full: user 0, 0.2 below 3, 4, 5 (its test item, unknown here) and 6..11 -> rank 9; user 1 -> rank 0 */
    o.full_ranking = 1, o.k = 10;
    CHECK(ncf_evaluate(m, &d, &o, &f) == NCF_OK);
    CHECKF(fabs(f.hr - 1.0) < 1e-12 && fabs(f.mrr - (1.0 / 10 + 1) / 2) < 1e-12, "hr %f mrr %f", f.hr, f.mrr);
    /* the test's full ranking: user 0, 0.5 below 6..11 -> rank 6; user 1, 1.0 below only its
       validation item 11, which does not count -> rank 0 */
    o.target = NCF_EVAL_TEST;
    CHECK(ncf_evaluate(m, &d, &o, &f) == NCF_OK);
    CHECKF(fabs(f.mrr - (1.0 / 7 + 1) / 2) < 1e-12, "mrr %f", f.mrr);
    CHECK(ncf_hold_out_validation(&d, 2, 1) == NCF_ERR_ARG); /* once */
    ncf_model_free(m);
    ncf_dataset_free(&d);
}

/* No validation item is ever trained on (nor, with skip_held_out, drawn as a negative): over a
   whole epoch of the sampler, no (user, its validation item) positive appears; the lists lose exactly
   those items; the validation negatives are items the user never rated; a hold-out that
   cannot be done leaves the dataset as it was. */
static void test_validation_items_never_trained_on(void)
{
    ncf_dataset d;
    ncf_sampler s;
    int64_t before, e, n;
    int u, bad = 0, users = 0, rc;
    int32_t *u_, *i_;
    float *y;
    CHECK(ncf_synthetic(&d, 300, 200, 6000, 8, 7) == NCF_OK && ncf_sample_eval_negatives(&d, 20, 7) == NCF_OK);
    before = d.num_train;
    rc = ncf_hold_out_validation(&d, 190, 7); /* too many: someone rated more than 10 items */
    CHECK(rc == NCF_ERR_DATA && d.num_train == before && d.val_item == NULL);
    CHECK(ncf_hold_out_validation(&d, 20, 7) == NCF_OK);
    for (u = 0; u < d.num_users; u++) {
        int64_t k;
        int32_t v = d.val_item[u];
        if (v < 0) continue;
        users++;
        for (k = d.user_ptr[u]; k < d.user_ptr[u + 1]; k++) bad += d.items[k] == v;
        bad += v == d.test_item[u];
        for (k = 0; k < d.num_val_neg; k++) {
            int32_t x = d.val_neg[(size_t)u * d.num_val_neg + k];
            int64_t q;
            bad += x == v || x == d.test_item[u];
            for (q = d.user_ptr[u]; q < d.user_ptr[u + 1]; q++) bad += d.items[q] == x;
        }
    }
    CHECKF(bad == 0 && users > 250 && d.num_train == before - users, "bad %d, %d users, %lld -> %lld", bad, users,
           (long long)before, (long long)d.num_train);
    CHECK(ncf_sampler_init(&s, &d, 4, 7) == NCF_OK);
    n = s.num_examples;
    u_ = (int32_t *)malloc(sizeof(int32_t) * (size_t)n), i_ = (int32_t *)malloc(sizeof(int32_t) * (size_t)n);
    y = (float *)malloc(sizeof(float) * (size_t)n);
    if (u_ && i_ && y) { /* positives: never a held-out item; negatives: with skip_held_out, neither */
        ncf_sampler_fill(&s, 1, 0, (int)n, u_, i_, y);
        for (e = 0, bad = 0; e < n; e++)
            bad += y[e] == 1.0f && (i_[e] == d.val_item[u_[e]] || i_[e] == d.test_item[u_[e]]);
        CHECKF(bad == 0, "%d positives of %lld are a validation or test item", bad, (long long)n);
        s.skip_held_out = 1;
        ncf_sampler_fill(&s, 1, 0, (int)n, u_, i_, y);
        for (e = 0, bad = 0; e < n; e++) bad += i_[e] == d.val_item[u_[e]] || i_[e] == d.test_item[u_[e]];
        CHECKF(bad == 0, "skip_held_out: %d examples of %lld hold a validation or test item", bad, (long long)n);
    }
    free(u_), free(i_), free(y);
    ncf_dataset_free(&d);
}
