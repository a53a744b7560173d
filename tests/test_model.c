/* tests/test_model.c - the model: gradients against an independent double-precision reference, scores. Included by tests.c (one program). */
/* ---- >>reference: an independent double-precision NeuMF, and gradients against it ------------ */
/* A plain double-precision NeuMF loss written from the paper's equations, sharing
   nothing with ncf.h but the parameter layout. */

static long tensor_off(const ncf_model *m, const char *name)
{
    int t;
    for (t = 0; t < m->num_tensors; t++)
        if (!strcmp(m->tensors[t].name, name)) return (long)m->tensors[t].offset;
    return -1;
}

static double ref_loss(const ncf_model *m, const double *p, const int32_t *users, const int32_t *items,
                       const float *labels, int n)
{
    const ncf_config *c = &m->cfg;
    int F = c->model != NCF_MLP ? c->mf_dim : 0;
    int H = c->model == NCF_NEUMF || c->model == NCF_MLP ? c->layers[0] / 2 : 0;
    int nd = H ? c->num_layers - 1 : 0, b, l, j, k;
    long gu = tensor_off(m, "gmf_user"), gi = tensor_off(m, "gmf_item");
    long mu = tensor_off(m, "mlp_user"), mi = tensor_off(m, "mlp_item");
    long wo = tensor_off(m, "w_out"), bo = tensor_off(m, "b_out");
    long ub = tensor_off(m, "user_bias"), ib = tensor_off(m, "item_bias");
    double total = 0;
    for (b = 0; b < n; b++) {
        double x[2][512], z = p[bo], reg = 0, y = labels[b];
        int w = 2 * H, cur = 0;
        for (k = 0; k < F; k++) { /* MF: a plain dot product */
            double a = p[gu + users[b] * F + k], e = p[gi + items[b] * F + k];
            z += (wo >= 0 ? p[wo + k] : 1.0) * a * e;
            reg += c->mf_reg * (a * a + e * e);
        }
        if (c->model == NCF_MF) {
            double bu = p[ub + users[b]], bi = p[ib + items[b]];
            z += bu + bi;
            reg += c->mf_reg * (bu * bu + bi * bi);
        }
        for (k = 0; k < H; k++) {
            x[0][k] = p[mu + users[b] * H + k];
            x[0][H + k] = p[mi + items[b] * H + k];
            reg += c->mlp_reg[0] * (x[0][k] * x[0][k] + x[0][H + k] * x[0][H + k]);
        }
        for (l = 1; l <= nd; l++) {
            char wn[16], bn[16];
            long W, B;
            snprintf(wn, sizeof wn, "w%d", l), snprintf(bn, sizeof bn, "b%d", l);
            W = tensor_off(m, wn), B = tensor_off(m, bn);
            for (j = 0; j < c->layers[l]; j++) {
                double s = p[B + j];
                for (k = 0; k < w; k++) s += x[cur][k] * p[W + (long)k * c->layers[l] + j];
                x[cur ^ 1][j] = s > 0 ? s : 0;
            }
            w = c->layers[l], cur ^= 1;
        }
        for (k = 0; nd && k < w; k++) z += p[wo + F + k] * x[cur][k];
        /* a positive weighing y: -y log(sigmoid z); a negative: -log(1 - sigmoid z) */
        total += (y > 0 ? -y * log(1 / (1 + exp(-z))) : -log(1 - 1 / (1 + exp(-z)))) + reg;
    }
    total /= n;
    for (l = 1; l <= nd; l++) {
        char wn[16];
        long W;
        snprintf(wn, sizeof wn, "w%d", l);
        W = tensor_off(m, wn);
        for (k = 0; k < c->layers[l - 1] * c->layers[l]; k++) total += c->mlp_reg[l] * p[W + k] * p[W + k];
    }
    return total;
}

static void randomize(ncf_model *m, uint64_t seed, float scale)
{
    size_t i;
    ncf__rng r;
    r.state = seed;
    for (i = 0; i < m->num_params; i++) m->params[i] = scale * (float)(2 * ncf__uniform(ncf__next(&r)) - 1);
}

/* Users 0..3 and items 0..5 with repeats; user 4 and item 6 never appear. */
static const int32_t GB_U[12] = {0, 1, 2, 0, 3, 1, 0, 2, 2, 3, 1, 0};
static const int32_t GB_I[12] = {5, 0, 1, 5, 2, 3, 4, 0, 5, 1, 1, 2};
static const float GB_Y[12] = {1, 0, 1, 0, 1, 1, 0, 0, 1, 0, 1, 1};
/* the same with positives of weights other than 1 (a weighting's confidences) */
static const float GB_YW[12] = {2.5f, 0, 1, 0, 7, 1.25f, 0, 0, 30, 0, 1, 0.5f};

static void gradient_check_labels(ncf_model_type type, int reg, const float *labels)
{
    ncf_config c = small_config(type, reg);
    ncf_model *m = NULL;
    double loss, *p, worst = 0;
    size_t i, sizable = 0, touched = 0;
    int t;
    CHECK(ncf_model_create(&m, &c) == NCF_OK);
    if (!m) return;
    randomize(m, 99 + type, 0.6f);
    CHECK(ncf_forward_backward(m, GB_U, GB_I, labels, 12, &loss) == NCF_OK);
    p = (double *)malloc(sizeof(double) * m->num_params);
    for (i = 0; i < m->num_params; i++) p[i] = m->params[i];
    {
        double ref = ref_loss(m, p, GB_U, GB_I, labels, 12);
        CHECKF(fabs(ref - loss) <= 1e-6 * (1 + fabs(ref)), "loss %.9f, reference %.9f", loss, ref);
    }
    for (t = 0; t < m->num_tensors; t++) {
        const ncf_tensor *T = &m->tensors[t];
        size_t k, n = (size_t)T->rows * T->cols;
        for (k = 0; k < n; k++) {
            size_t at = T->offset + k;
            double h = 1e-6, lp, lm, num, ana = m->grads[at], err;
            p[at] += h, lp = ref_loss(m, p, GB_U, GB_I, labels, 12);
            p[at] -= 2 * h, lm = ref_loss(m, p, GB_U, GB_I, labels, 12);
            p[at] += h;
            num = (lp - lm) / (2 * h);
            err = fabs(num - ana) / (1e-4 + fabs(num));
            if (err > worst) worst = err;
            CHECKF(fabs(num - ana) <= 2e-6 + 2e-4 * fabs(num), "%s[%zu]: analytic %.8g, numeric %.8g", T->name, k, ana,
                   num);
            touched += num != 0;
            sizable += fabs(num) > 1e-3;
        }
        /* rows of user 4 and item 6 are not in the batch: exactly zero unless L2 */
        if (!strcmp(T->name, "gmf_user") || !strcmp(T->name, "mlp_user") || !strcmp(T->name, "user_bias"))
            for (k = 0; k < (size_t)T->cols; k++) CHECK(m->grads[T->offset + 4 * T->cols + k] == 0.0f);
        if (!strcmp(T->name, "gmf_item") || !strcmp(T->name, "mlp_item") || !strcmp(T->name, "item_bias"))
            for (k = 0; k < (size_t)T->cols; k++) CHECK(m->grads[T->offset + 6 * T->cols + k] == 0.0f);
    }
    /* the check has teeth: most gradients are far from zero */
    CHECKF(3 * sizable > touched, "only %zu of %zu gradients exceed 1e-3", sizable, touched);
    printf("    %s%s: %zu parameters, worst relative error %.2e\n",
           type == NCF_NEUMF     ? "NeuMF"
               : type == NCF_GMF ? "GMF"
               : type == NCF_MLP ? "MLP"
                                 : "MF",
           reg ? " +L2" : "", m->num_params, worst);
    free(p);
    ncf_model_free(m);
}

static void gradient_check(ncf_model_type type, int reg) { gradient_check_labels(type, reg, GB_Y); }

static void test_neumf_gradients_match_finite_differences(void)
{
    gradient_check(NCF_NEUMF, 0);
    gradient_check(NCF_NEUMF, 1);
}
static void test_gmf_gradients_match_finite_differences(void)
{
    gradient_check(NCF_GMF, 0);
    gradient_check(NCF_GMF, 1);
}
static void test_mlp_gradients_match_finite_differences(void)
{
    gradient_check(NCF_MLP, 0);
    gradient_check(NCF_MLP, 1);
}
static void test_mf_gradients_match_finite_differences(void)
{
    gradient_check(NCF_MF, 0);
    gradient_check(NCF_MF, 1);
}

/* Weighted positives: the loss and gradients against the definition by finite differences,
   for every model type; and a positive weighing c is exactly c positives of weight 1 (its loss
   and gradient c times theirs), a label of 1 exactly the unweighted step. */
static void test_weighted_gradients_match_finite_differences(void)
{
    static const float one[1] = {1}, heavy[1] = {4}, bad[3] = {-1, NAN, 2e9f};
    static const int32_t u1[1] = {2}, i1[1] = {5};
    int32_t u4[4] = {2, 2, 2, 2}, i4[4] = {5, 5, 5, 5};
    float four[4] = {1, 1, 1, 1};
    ncf_config c = small_config(NCF_NEUMF, 0);
    ncf_model *a = NULL, *b = NULL;
    double la = 0, lb = 0;
    size_t k, differ = 0;
    int t, j;
    for (t = 0; t < 4; t++)
        gradient_check_labels(t == 0 ? NCF_NEUMF : t == 1 ? NCF_GMF : t == 2 ? NCF_MLP : NCF_MF, t & 1, GB_YW);
    CHECK(ncf_model_create(&a, &c) == NCF_OK && ncf_model_create(&b, &c) == NCF_OK);
    if (!a || !b) {
        ncf_model_free(a), ncf_model_free(b);
        return;
    }
    randomize(a, 3, 0.6f), randomize(b, 3, 0.6f);
    /* one positive weighing 4 against the same positive four times (the mean over 4 rows: x 1/4) */
    CHECK(ncf_forward_backward(a, u1, i1, heavy, 1, &la) == NCF_OK &&
          ncf_forward_backward(b, u4, i4, four, 4, &lb) == NCF_OK);
    CHECKF(fabs(la - 4 * lb) <= 1e-6 * la, "loss %.9g vs 4 x %.9g", la, lb);
    for (k = 0; k < a->num_params; k++) {
        CHECKF(fabsf(a->grads[k] - 4 * b->grads[k]) <= 1e-6f + 1e-5f * fabsf(a->grads[k]), "grad %zu: %g vs 4 x %g", k,
               a->grads[k], b->grads[k]);
        differ += a->grads[k] != 0;
    }
    CHECK(differ > 10);
    for (j = 0; j < 3; j++) CHECK(ncf_forward_backward(a, u1, i1, bad + j, 1, &la) == NCF_ERR_ARG);
    CHECK(ncf_forward_backward(a, u1, i1, one, 1, &la) == NCF_OK);
    ncf_model_free(a), ncf_model_free(b);
}

/* A float finite difference on the library's own loss agrees too (a second,
   independent path: no reference model involved). */
static void test_float_finite_differences_agree_on_the_librarys_loss(void)
{
    ncf_config c = small_config(NCF_NEUMF, 1);
    ncf_model *m = NULL;
    double loss, lp = 0, lm = 0;
    size_t at;
    int checked = 0;
    CHECK(ncf_model_create(&m, &c) == NCF_OK);
    if (!m) return;
    randomize(m, 5, 0.6f);
    CHECK(ncf_forward_backward(m, GB_U, GB_I, GB_Y, 12, &loss) == NCF_OK);
    for (at = 0; at < m->num_params; at += 7) {
        float save = m->params[at], h = 1e-2f;
        double num;
        m->params[at] = save + h, ncf_loss(m, GB_U, GB_I, GB_Y, 12, &lp);
        m->params[at] = save - h, ncf_loss(m, GB_U, GB_I, GB_Y, 12, &lm);
        m->params[at] = save;
        num = (lp - lm) / (2.0 * h);
        CHECKF(fabs(num - m->grads[at]) <= 2e-3 + 2e-2 * fabs(num), "param %zu: analytic %g, numeric %g", at,
               m->grads[at], num);
        checked++;
    }
    CHECK(checked > 20);
    ncf_model_free(m);
}

/* ---- >>numerics: limits, non-finite values, scores the same on every path, learning ---------- */

/* A little-endian u32 into a model file image. */
static void set_u32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)v, p[1] = (uint8_t)(v >> 8), p[2] = (uint8_t)(v >> 16), p[3] = (uint8_t)(v >> 24);
}

/* Sizes at the edges are refused or bounded, not crashes: a batch of 0 for the pipeline hash
   (was SIGFPE), mf_dim past its limit (was an int overflow), k far past the catalogue (was an
   allocation of k). */
static void test_sizes_at_the_edges_refused_or_bounded(void)
{
    ncf_dataset d;
    ncf_sampler s;
    ncf_config c = ncf_config_default();
    ncf_model *m = NULL;
    uint64_t first = 1, all = 1;
    static int64_t top[64];
    CHECK(ncf_synthetic(&d, 40, 30, 500, 4, 1) == NCF_OK && ncf_sampler_init(&s, &d, 4, 1) == NCF_OK);
    CHECK_ERR(ncf__sampler_hash(&s, 1, 0, &first, &all), NCF_ERR_ARG, "batch_size > 0");
    CHECK(first == 0 && all == 0);
    first = all = 1;
    CHECK_ERR(ncf__sampler_hash(NULL, 1, 256, &first, &all), NCF_ERR_ARG, "sampler");
    CHECK(first == 0 && all == 0);
    c.num_users = d.num_users, c.num_items = d.num_items, c.mf_dim = 1 << 30;
    CHECK_ERR(ncf_model_create(&m, &c), NCF_ERR_ARG, "mf_dim");
    c.mf_dim = 8;
    CHECK(ncf_model_create(&m, &c) == NCF_OK && ncf_model_set_ids(m, &d) == NCF_OK);
    CHECK(m && recommend_k(m, d.raw_user[0], 2147483647, 0, top, NULL) == d.num_items);
    ncf_model_free(m);
    ncf_dataset_free(&d);
}

/* A non-finite score ranks below every finite one: a diverged model cannot score HR 1. */
static void test_nonfinite_scores_rank_last(void)
{
    float score[12] = {0, .1f, .2f, .3f, .3f, .5f, .6f, .7f, .8f, .9f, 1.0f, 1.1f};
    int64_t tu[6] = {0, 0, 1, 1, 2, 2}, ti[6] = {0, 5, 6, 11, 1, 3}, tt[6] = {1, 2, 1, 2, 1, 2};
    int32_t negs[12] = {1, 2, 7, 9, 0, 1, 2, 3, 4, 8, 9, 10};
    ncf_dataset d;
    ncf_metrics s, f;
    ncf_model *m;
    int64_t top[12];
    float top_s[12];
    size_t i;
    CHECK(build_fixed(&d, tu, ti, tt, 6, 3, 12) == NCF_OK);
    d.eval_neg = (int32_t *)NCF_MALLOC(sizeof negs);
    memcpy(d.eval_neg, negs, sizeof negs);
    d.num_eval_neg = 4;
    score[7] = NAN;       /* user 0 (test 5): only 9 beats it now -> rank 1 */
    score[11] = INFINITY; /* user 1's test item: not a score -> a miss */
    m = scoring_model(score, 3, 12);
    if (!m) {
        ncf_dataset_free(&d);
        return;
    }
    CHECK(evaluate_k(m, &d, 10, NCF_SAMPLED, &s) == NCF_OK); /* user 1: a miss; user 2: rank 4 as before */
    CHECKF(fabs(s.hr - 2.0 / 3) < 1e-12 && fabs(s.ndcg - (1 / log2(3.0) + 1 / log2(6.0)) / 3) < 1e-12, "hr %f ndcg %f",
           s.hr, s.ndcg);
    CHECK(evaluate_k(m, &d, 10, NCF_FULL_RANKING, &f) == NCF_OK); /* full: user 1's infinite test item is a miss */
    CHECKF(fabs(f.hr - 2.0 / 3) < 1e-12, "full-ranking HR %f", f.hr);
    CHECK(ncf_model_set_ids(m, &d) == NCF_OK && recommend_k(m, 1, 12, 0, top, top_s) == 12); /* NaN, inf last */
    CHECKF(NCF__NONFINITE(top_s[10]) && NCF__NONFINITE(top_s[11]) && !NCF__NONFINITE(top_s[9]), "%g %g %g", top_s[9],
           top_s[10], top_s[11]);
    for (i = 0; i < m->num_params; i++) m->params[i] = NAN; /* everything NaN: HR 0, not 1 */
    ncf_model_params_changed(m);
    CHECK(evaluate_k(m, &d, 10, NCF_SAMPLED, &s) == NCF_OK && s.hr == 0.0 && s.ndcg == 0.0);
    CHECK(evaluate_k(m, &d, 10, NCF_FULL_RANKING, &s) == NCF_OK && s.hr == 0.0);
    ncf_model_free(m);
    ncf_dataset_free(&d);
}

/* Divergence stops training at the step that shows it, and a model with a non-finite
   parameter is neither saved nor loaded. */
static void test_divergence_stops_training_and_is_never_saved(void)
{
    ncf_dataset d;
    ncf_config c = ncf_config_default();
    ncf_model *m = NULL, *b = NULL;
    ncf_sampler smp;
    void *buf = NULL;
    size_t len;
    int rc;
    int32_t u[4] = {0, 1, 2, 3}, it[4] = {0, 1, 2, 3};
    float y[4] = {1, 0, 1, 0};
    CHECK(ncf_synthetic(&d, 100, 60, 2000, 4, 5) == NCF_OK);
    c.num_users = d.num_users, c.num_items = d.num_items, c.optimizer = NCF_OPT_SGD, c.lr = 1e30f;
    CHECK_ERR(ncf_model_create(&m, &c), NCF_ERR_ARG, "0 < lr <= 1000"); /* refused as a setting... */
    c.lr = 1.0f;
    CHECK(ncf_model_create(&m, &c) == NCF_OK && ncf_sampler_init(&smp, &d, 4, 1) == NCF_OK);
    if (!m) {
        ncf_dataset_free(&d);
        return;
    }
    CHECK(ncf_save_mem(m, NCF_SAVE_ADAM, &buf, &len) == NCF_OK);
    m->cfg.lr = 1e30f;                                  /* ...and set by hand, training diverges */
    rc = ncf_train_epoch(m, &smp, 1, NULL, NULL, NULL); /* the second step's loss overflows */
    CHECKF(rc == NCF_ERR_DATA && strstr(ncf_error_text(), "not finite"), "rc %d: %s", rc, ncf_error_text());
    CHECKF(m->step <= 2, "went on for %lld steps", (long long)m->step);
    /* an update that writes an infinity is caught where it happens */
    m->cfg.lr = 10.0f;
    CHECK(ncf_forward_backward(m, u, it, y, 4, NULL) == NCF_OK);
    m->grads[m->b_out - m->params] = 1e38f;
    ncf_update(m);
    CHECK(m->scratch->nonfinite && NCF__NONFINITE(m->b_out[0]));
    {
        void *none = NULL;
        CHECK_ERR(ncf_save_mem(m, NCF_SAVE_ADAM, &none, &len), NCF_ERR_DATA, "diverged");
        CHECK(none == NULL);
    }
    CHECK_ERR(ncf_save(m, path_in_dir("diverged.ncf"), NCF_SAVE_ADAM), NCF_ERR_DATA, "diverged");
    CHECK(files_in_dir(g_dir, "diverged.ncf", 0) == 0);
    { /* a file with a NaN inside (and a valid checksum) is refused */
        uint8_t *p = (uint8_t *)buf;
        size_t at = len - 4 - 4 * m->num_params; /* the first parameter (an SGD model's file keeps no moments) */
        uint32_t nan_bits = 0x7fc00000u;
        set_u32(p + at, nan_bits);
        set_u32(p + len - 4, ncf__crc32(p, len - 4));
        CHECK_ERR(ncf_load_mem(&b, buf, len), NCF_ERR_DATA, "not finite or implausibly large");
        CHECK(strstr(ncf_error_text(), "the model's gmf_user[0] is ") != NULL);
        CHECK(b == NULL);
    }
    ncf_free(buf);
    ncf_model_free(m);
    ncf_dataset_free(&d);
}

/* The evaluation's split first layer scores as the training forward does, bit for bit. */
/* The output layer's sums against their definition: term d of the GMF part, then term t of
   the MLP part, each into partial sum (d or t) % 8 in order, then the partial sums pairwise,
   for sizes with and without whole groups of 8 (the vector path and its scalar tails). */
static void test_output_sums_follow_their_definition(void)
{
    static const int Fs[] = {0, 3, 8, 13, 16, 24}, tops[] = {0, 5, 8, 16, 19};
    float gu[24], gi[24], gw[24], wh[19], h[19], p[8];
    int a, b, d, w, j;
    uint64_t x = 12345;
    for (d = 0; d < 24; d++) {
        gu[d] = (float)(ncf__uniform(x = ncf__hash3(x, 1, (uint64_t)d)) - 0.5),
        gi[d] = (float)(ncf__uniform(x = ncf__hash3(x, 2, 0)) - 0.5);
        gw[d] = (float)(2 * ncf__uniform(x = ncf__hash3(x, 3, 0)) - 1);
    }
    for (d = 0; d < 19; d++)
        wh[d] = (float)(ncf__uniform(x = ncf__hash3(x, 4, 0)) - 0.5),
        h[d] = (float)ncf__uniform(x = ncf__hash3(x, 5, 0));
    for (a = 0; a < 6; a++)
        for (b = 0; b < 5; b++) {
            float got = ncf__output_sum(gu, gi, gw, Fs[a], wh, h, tops[b]);
            memset(p, 0, sizeof p);
            for (d = 0; d < Fs[a]; d++) p[d % 8] = NCF__MADD(gw[d], gu[d] * gi[d], p[d % 8]);
            for (d = 0; d < tops[b]; d++) p[d % 8] = NCF__MADD(wh[d], h[d], p[d % 8]);
            for (w = 4; w >= 1; w /= 2)
                for (j = 0; j < w; j++) p[j] += p[j + w];
            CHECKF(!memcmp(&got, &p[0], 4), "F %d, top %d: %.9g, by definition %.9g", Fs[a], tops[b], got, p[0]);
        }
}

static void test_eval_scores_match_forward(void)
{
    ncf_config c = small_config(NCF_NEUMF, 0);
    ncf_model *m = NULL;
    ncf__eval_buf e;
    float *proj, sc[7], logit[7];
    int32_t users[7], items[7] = {0, 1, 2, 3, 4, 5, 6};
    int u, j, rc, type;
    for (type = 0; type < 4; type++) {
        c = small_config((ncf_model_type)type, 0);
        CHECK(ncf_model_create(&m, &c) == NCF_OK);
        if (!m) return;
        randomize(m, 31 + type, 0.5f);
        proj = ncf__item_projection(m, &rc);
        CHECK(rc == NCF_OK && ncf__eval_buf_alloc(&e, m, 7));
        for (u = 0; u < 5; u++) {
            for (j = 0; j < 7; j++) users[j] = u;
            ncf__score_user(m, proj, u, NULL, items, 0, 7, &e, 0);
            memcpy(sc, e.sc, sizeof sc);
            CHECK(ncf_predict_index(m, users, items, 7, logit) == NCF_OK);
            for (j = 0; j < 7; j++)
                CHECKF(!memcmp(&sc[j], &logit[j], 4), "type %d: %.9g vs %.9g", type, sc[j], logit[j]);
            ncf__score_user(m, proj, u, NULL, NULL, 0, 7, &e, 0); /* all items */
            CHECK(!memcmp(e.sc, logit, sizeof sc));
            ncf__score_user(m, NULL, u, NULL, items, 0, 7, &e, 0); /* the item half computed here, not cached */
            CHECK(!memcmp(e.sc, logit, sizeof sc));
        }
        ncf__eval_buf_free(&e);
        NCF_FREE(proj);
        ncf_model_free(m);
    }
}

/* Without a projection (MF, GMF, or none cached) the output layer scores four items at a time,
   as four interleaved chains: each score must still be the training forward's bit for bit,
   for factors in whole groups of 8 and not, an MLP's top layer or none, items in catalogue
   order and in any order, and counts that leave a tail of 1-3 items. */
static void test_scores_four_at_a_time_match_forward(void)
{
    static const int shapes[][3] = {/* model, mf_dim, top layer (0: none) */
                                    {NCF_MF, 8, 0},      {NCF_MF, 24, 0},    {NCF_MF, 12, 0},
                                    {NCF_GMF, 16, 0},    {NCF_GMF, 5, 0},    {NCF_NEUMF, 8, 8},
                                    {NCF_NEUMF, 16, 16}, {NCF_NEUMF, 8, 12}, {NCF_MLP, 0, 16}};
    enum { ITEMS = 15 };
    int32_t users[ITEMS], items[ITEMS];
    float logit[ITEMS], want[ITEMS];
    int q, u, j, n, bad;
    for (q = 0; q < (int)(sizeof shapes / sizeof *shapes); q++) {
        ncf_config c = small_config((ncf_model_type)shapes[q][0], 0);
        ncf_model *m = NULL;
        ncf__eval_buf e;
        c.num_items = ITEMS, c.mf_dim = shapes[q][1] ? shapes[q][1] : 8;
        if (shapes[q][2]) c.num_layers = 2, c.layers[0] = 2 * shapes[q][2], c.layers[1] = shapes[q][2];
        CHECK(ncf_model_create(&m, &c) == NCF_OK);
        if (!m) continue;
        randomize(m, 91 + q, 0.5f);
        bad = 0;
        CHECK(ncf__eval_buf_alloc(&e, m, ITEMS));
        for (u = 0; u < c.num_users; u++)
            for (n = 1; n <= ITEMS; n += 3) {
                for (j = 0; j < n; j++) users[j] = u, items[j] = (j * 7 + u) % ITEMS;
                CHECK(ncf_predict_index(m, users, items, n, want) == NCF_OK);
                ncf__score_user(m, NULL, u, NULL, items, 0, n, &e, 0);
                bad += memcmp(e.sc, want, sizeof(float) * (size_t)n) != 0;
                for (j = 0; j < n; j++) items[j] = 2 + j;
                CHECK(ncf_predict_index(m, users, items, n, logit) == NCF_OK);
                ncf__score_user(m, NULL, u, NULL, NULL, 2, n, &e, 0);
                bad += memcmp(e.sc, logit, sizeof(float) * (size_t)n) != 0;
            }
        CHECKF(bad == 0, "shape %d: %d score lists differ from the forward's", q, bad);
        ncf__eval_buf_free(&e);
        ncf_model_free(m);
    }
}

/* Scoring with the cached projection takes NCF__PB items a vector lane each (ncf__score_lanes;
   1 without vectors): every layer's sums for a block at once, read from blocks of the cache.
   Each score must be the training forward's bit for bit, wherever its item falls in a block:
   catalogue runs from aligned and unaligned starts, one item, candidate lists in any order
   and of any length, and widths that are not whole groups of 8 or 16 (the layer's output
   blocks and the output layer's tails) or a single dense layer. */
static void test_scores_by_lanes_match_forward(void)
{
    static const int shapes[][6] = {/* mf_dim, num_layers, layers... */
                                    {8, 4, 64, 32, 16, 8},
                                    {5, 3, 26, 13, 7, 0},
                                    {16, 3, 48, 40, 24, 0},
                                    {3, 2, 10, 6, 0, 0},
                                    {0, 3, 20, 17, 9, 0}};
    static const int runs[][2] = {{0, 45}, {1, 44}, {16, 29}, {7, 1}, {32, 13}, {3, 9}};
    enum { ITEMS = 45 };
    int32_t users[ITEMS], items[ITEMS], back[ITEMS];
    float logit[ITEMS];
    int q, u, j, r, rc, bad = 0, runs_done = 0;
    for (j = 0; j < ITEMS; j++) items[j] = j, back[j] = ITEMS - 1 - (j * 7) % ITEMS;
    for (q = 0; q < (int)(sizeof shapes / sizeof *shapes); q++) {
        ncf_config c = ncf_config_default();
        ncf_model *m = NULL;
        ncf__eval_buf e;
        float *proj;
        c.model = shapes[q][0] ? NCF_NEUMF : NCF_MLP;
        c.num_users = 3, c.num_items = ITEMS, c.seed = 5 + (uint64_t)q;
        c.mf_dim = shapes[q][0] ? shapes[q][0] : 8, c.num_layers = shapes[q][1];
        for (j = 0; j < c.num_layers; j++) c.layers[j] = shapes[q][2 + j];
        CHECKF(ncf_model_create(&m, &c) == NCF_OK, "shape %d: %s", q, ncf_error_text());
        if (!m) return;
        randomize(m, 77 + (uint64_t)q, 0.7f);
        memset(&e, 0, sizeof e);
        proj = ncf__item_projection(m, &rc);
        CHECK(rc == NCF_OK && proj && ncf__eval_buf_alloc(&e, m, 48));
        for (u = 0; u < 3 && proj; u++) {
            for (j = 0; j < ITEMS; j++) users[j] = u;
            CHECK(ncf_predict_index(m, users, items, ITEMS, logit) == NCF_OK);
            for (r = 0; r < (int)(sizeof runs / sizeof *runs); r++, runs_done++) { /* catalogue runs */
                ncf__score_user(m, proj, u, NULL, NULL, runs[r][0], runs[r][1], &e, r > 0);
                for (j = 0; j < runs[r][1]; j++) bad += memcmp(&e.sc[j], &logit[runs[r][0] + j], 4) != 0;
            }
            for (r = 1; r <= ITEMS; r += 11, runs_done++) { /* candidate lists of 1, 12, 23, 34, 45 */
                ncf__score_user(m, proj, u, NULL, back, 0, r, &e, 1);
                for (j = 0; j < r; j++) bad += memcmp(&e.sc[j], &logit[back[j]], 4) != 0;
#if NCF__PB > 1 /* lists read their lanes from the blocks where the rows beside them do not fit */
                for (j = 0; j < r; j += NCF__PB)
                    ncf__score_lanes(m, proj, m->gmf_user ? m->gmf_user + (size_t)u * c.mf_dim : NULL, back + j, 0,
                                     r - j < NCF__PB ? r - j : NCF__PB, &e, e.sc + j);
                for (j = 0; j < r; j++) bad += memcmp(&e.sc[j], &logit[back[j]], 4) != 0;
#endif
            }
        }
        CHECKF(bad == 0, "shape %d: %d scores differ from the training forward's", q, bad);
        ncf__eval_buf_free(&e);
        NCF_FREE(proj);
        ncf_model_free(m);
    }
    printf("    %d runs and lists over 5 shapes, %d items a block (1: rows): the training forward's bits\n", runs_done,
           NCF__PB);
}

/* Where a pair sits in a batch, how the batch is chunked (a trained model predicts in chunks
   of its batch size, a fresh one all at once) and how many threads run must not change its
   score: n rows at once equal n one-row calls bit for bit, and evaluation's split first layer,
   ncf_predict and ncf_recommend give the same bits. Widths reach every tile path. */
static void check_scores_batch_invariant(ncf_model *m, const ncf_dataset *d, const char *what)
{
    static const int NS[] = {1, 5, 6, 7, 8, 9, 127, 128, 400};
    enum { N = 400 };
    static int32_t u[N], it[N];
    static float batch[N], one[N], rec_s[1];
    ncf__eval_buf e;
    float *proj, sc;
    int64_t rec[1] = {-1};
    int j, q, rc, bad = 0, threads = ncf_set_threads(0);
    for (j = 0; j < N; j++) u[j] = (j * 7 + j / 5) % d->num_users, it[j] = (j * 31 + j / 3) % d->num_items;
    ncf_set_threads(1);
    for (j = 0; j < N; j++) CHECK(ncf_predict_index(m, &u[j], &it[j], 1, &one[j]) == NCF_OK);
    ncf_set_threads(threads > 1 ? threads : 2);
    for (q = 0; q < (int)(sizeof NS / sizeof *NS); q++) {
        CHECK(ncf_predict_index(m, u, it, NS[q], batch) == NCF_OK);
        for (j = 0; j < NS[q]; j++) bad += memcmp(&batch[j], &one[j], 4) != 0;
    }
    ncf_set_threads(threads);
    CHECKF(bad == 0, "%s: %d batch scores differ from one-row scores", what, bad);
    proj = ncf__item_projection(m, &rc);
    CHECK(rc == NCF_OK && ncf__eval_buf_alloc(&e, m, 1));
    CHECK(ncf_model_set_ids(m, d) == NCF_OK);
    for (j = 0, bad = 0; j < N; j += 3) {
        float p;
        ncf__score_user(m, proj, u[j], NULL, &it[j], 0, 1, &e, 0);
        sc = e.sc[0];
        bad += memcmp(&sc, &one[j], 4) != 0;
        CHECK(ncf_predict(m, d->raw_user[u[j]], d->raw_item[it[j]], &p) == NCF_OK);
        bad += memcmp(&p, &one[j], 4) != 0;
    }
    CHECKF(bad == 0, "%s: %d evaluation or ncf_predict scores differ from one-row scores", what, bad);
    for (j = 0, bad = 0; j < 40; j++) { /* the best item's score, as one row */
        int32_t item;
        float p;
        CHECK(recommend_k(m, d->raw_user[u[j]], 1, 0, rec, rec_s) == 1);
        for (item = 0; item < d->num_items && d->raw_item[item] != rec[0]; item++) {}
        CHECK(item < d->num_items && ncf_predict_index(m, &u[j], &item, 1, &p) == NCF_OK);
        bad += memcmp(&p, rec_s, 4) != 0;
    }
    CHECKF(bad == 0, "%s: %d recommend scores differ from one-row scores", what, bad);
    ncf__eval_buf_free(&e);
    NCF_FREE(proj);
}

static void test_scores_independent_of_batch_and_chunk(void)
{
    static const int WIDE[4] = {96, 40, 24, 5}; /* full, edge and scalar tiles on every ISA */
    ncf_dataset d;
    int type, wide, epoch;
    CHECK(ncf_synthetic(&d, 300, 200, 6000, 6, 3) == NCF_OK);
    for (wide = 0; wide < 2; wide++)
        for (type = 0; type < 4; type++) {
            ncf_config c = ncf_config_default();
            ncf_model *m = NULL;
            ncf_sampler s;
            char what[64];
            c.model = (ncf_model_type)type, c.num_users = d.num_users, c.num_items = d.num_items;
            c.batch_size = 128, c.seed = 11;
            if (wide) c.mf_dim = 12, memcpy(c.layers, WIDE, sizeof WIDE);
            CHECK(ncf_model_create(&m, &c) == NCF_OK && ncf_sampler_init(&s, &d, 4, 3) == NCF_OK);
            if (!m) break;
            for (epoch = 0; epoch <= 1; epoch++) {
                snprintf(what, sizeof what, "model %d, %s layers, %s", type, wide ? "odd" : "paper",
                         epoch ? "trained" : "fresh");
                if (epoch) CHECK(ncf_train_epoch(m, &s, epoch, NULL, NULL, NULL) == NCF_OK);
                check_scores_batch_invariant(m, &d, what);
            }
            ncf_model_free(m);
        }
    ncf_dataset_free(&d);
}

/* Popularity: score = training count; HR@10 by the same rank rule. */
static double popularity_hr(const ncf_dataset *d)
{
    int64_t *cnt = (int64_t *)calloc((size_t)d->num_items, sizeof(int64_t)), k;
    int u, j, hits = 0, users = 0;
    for (k = 0; k < d->num_train; k++) cnt[d->items[k]]++;
    for (u = 0; u < d->num_users; u++) {
        int rank = 0;
        if (d->test_item[u] < 0) continue;
        users++;
        for (j = 0; j < d->num_eval_neg; j++)
            rank += cnt[d->eval_neg[(size_t)u * d->num_eval_neg + j]] >= cnt[d->test_item[u]];
        hits += rank < 10;
    }
    free(cnt);
    return (double)hits / users;
}

static void test_training_end_to_end_lifts_hr(void)
{
    ncf_dataset d;
    ncf_sampler s;
    ncf_model *m = NULL;
    ncf_config c = ncf_config_default();
    ncf_metrics before, after;
    double pop, loss1 = 0, loss = 0, chance;
    int epoch;
    CHECK(ncf_synthetic(&d, 800, 400, 30000, 8, 21) == NCF_OK);
    CHECK(ncf_sample_eval_negatives(&d, 99, 21) == NCF_OK);
    c.num_users = d.num_users, c.num_items = d.num_items;
    CHECK(ncf_model_create(&m, &c) == NCF_OK);
    CHECK(ncf_sampler_init(&s, &d, c.num_neg, c.seed) == NCF_OK);
    if (!m) return;
    CHECK(evaluate_k(m, &d, 10, NCF_SAMPLED, &before) == NCF_OK);
    for (epoch = 1; epoch <= 6; epoch++) {
        CHECK(ncf_train_epoch(m, &s, epoch, NULL, NULL, &loss) == NCF_OK);
        if (epoch == 1) loss1 = loss;
    }
    CHECK(evaluate_k(m, &d, 10, NCF_SAMPLED, &after) == NCF_OK);
    pop = popularity_hr(&d);
    chance = 10.0 / 100;
    printf("    HR@10: chance %.3f, popularity %.3f, untrained %.3f, trained %.3f (NDCG %.3f); loss %.4f -> %.4f\n",
           chance, pop, before.hr, after.hr, after.ndcg, loss1, loss);
    CHECK(after.hr > 3 * chance);
    CHECK(after.hr > pop + 0.05);
    CHECK(loss < loss1);
    ncf_model_free(m);
    ncf_dataset_free(&d);
}
