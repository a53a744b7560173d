/* tests/test_train.c - training: hand-computed steps, determinism, fit, tune, ALS. Included by tests.c (one program). */
/* ---- >>steps: the loss, Adam and SGD against steps worked by hand ---------------------------- */

static void test_loss_and_sigmoid_match_hand_values(void)
{
    /* sigmoid cross-entropy by hand: log(1+e^-z) for y=1, z + log(1+e^-z) for y=0 */
    CHECK(fabs(ncf__bce(0.0f, 1.0f) - 0.6931471805599453) < 1e-12);
    CHECK(fabs(ncf__bce(2.0f, 1.0f) - 0.1269280110429725) < 1e-12);
    CHECK(fabs(ncf__bce(-3.0f, 1.0f) - 3.048587351573742) < 1e-12);
    CHECK(fabs(ncf__bce(2.0f, 0.0f) - 2.1269280110429727) < 1e-12);
    CHECK(ncf__bce(80.0f, 0.0f) == 80.0);
    CHECK(ncf__bce(-80.0f, 1.0f) == 80.0);
    CHECK(ncf__bce(80.0f, 1.0f) >= 0 && ncf__bce(80.0f, 1.0f) < 1e-34);
    CHECK(ncf__bce(-80.0f, 0.0f) >= 0 && ncf__bce(-80.0f, 0.0f) < 1e-34);
    CHECK(ncf__sigmoid(80.0f) == 1.0f && ncf__sigmoid(-80.0f) > 0 && ncf__sigmoid(-80.0f) < 1e-34f);
    CHECK(ncf__sigmoid(-1000.0f) == 0.0f && ncf__sigmoid(1000.0f) == 1.0f);
    { /* through the model: logits pinned at +-80 by the output bias */
        ncf_config c = small_config(NCF_GMF, 0);
        ncf_model *m = NULL;
        int32_t u[2] = {0, 1}, it[2] = {0, 1};
        float y[2] = {0, 1};
        double loss = 0;
        size_t i;
        CHECK(ncf_model_create(&m, &c) == NCF_OK);
        if (!m) return;
        memset(m->w_out, 0, sizeof(float) * (size_t)c.mf_dim);
        m->b_out[0] = 80.0f;
        CHECK(ncf_forward_backward(m, u, it, y, 2, &loss) == NCF_OK);
        CHECKF(fabs(loss - 40.0) < 1e-9, "loss %.17g", loss); /* (80 + ~0) / 2 */
        m->b_out[0] = -80.0f;
        CHECK(ncf_loss(m, u, it, y, 2, &loss) == NCF_OK);
        CHECKF(fabs(loss - 40.0) < 1e-9, "loss %.17g", loss);
        for (i = 0; i < m->num_params; i++) CHECK(isfinite(m->grads[i]));
        ncf_model_free(m);
    }
}

/* Hand-computed TF Adam (lr 0.01, b1 0.9, b2 0.999, eps 1e-8):
   step 1, g = 0.5:   m = 0.05, v = 0.00025, lr_t = 0.01 sqrt(0.001)/0.1,
                      update = lr_t m / (sqrt v + eps) = 0.009999993675448678
   step 2, g = -0.25: m = 0.02, v = 0.00031225, lr_t = 0.01 sqrt(1-0.999^2)/(1-0.9^2),
                      update = 0.0026633688893720306 */
static void test_adam_steps_match_hand_computation(void)
{
    ncf_config c = small_config(NCF_NEUMF, 0);
    ncf_model *m = NULL;
    float *p0;
    size_t i;
    int mode;
    for (mode = 0; mode < 2; mode++) {
        c.lr = 0.01f, c.adam = mode ? NCF_ADAM_DENSE : NCF_ADAM_LAZY;
        CHECK(ncf_model_create(&m, &c) == NCF_OK);
        if (!m) return;
        p0 = (float *)malloc(sizeof(float) * m->num_params);
        memcpy(p0, m->params, sizeof(float) * m->num_params);
        /* one batch touching every user and item, then the gradient set by hand */
        {
            int32_t u[7] = {0, 1, 2, 3, 4, 0, 1}, it[7] = {0, 1, 2, 3, 4, 5, 6};
            float y[7] = {1, 0, 1, 0, 1, 0, 1};
            CHECK(ncf_forward_backward(m, u, it, y, 7, NULL) == NCF_OK);
        }
        for (i = 0; i < m->num_params; i++) m->grads[i] = 0.5f;
        ncf_update(m);
        for (i = 0; i < m->num_params; i++)
            CHECKF(fabs((double)p0[i] - m->params[i] - 0.009999993675448678) < 2e-7, "param %zu moved %.9g", i,
                   (double)p0[i] - m->params[i]);
        for (i = 0; i < m->num_params; i++) CHECK(m->grads[i] == 0.0f); /* the step clears them */
        memcpy(p0, m->params, sizeof(float) * m->num_params);
        {
            int32_t u[7] = {0, 1, 2, 3, 4, 0, 1}, it[7] = {0, 1, 2, 3, 4, 5, 6};
            float y[7] = {1, 0, 1, 0, 1, 0, 1};
            CHECK(ncf_forward_backward(m, u, it, y, 7, NULL) == NCF_OK);
        }
        for (i = 0; i < m->num_params; i++) m->grads[i] = -0.25f;
        ncf_update(m);
        for (i = 0; i < m->num_params; i++)
            CHECKF(fabs((double)p0[i] - m->params[i] - 0.0026633688893720306) < 2e-7, "param %zu moved %.9g", i,
                   (double)p0[i] - m->params[i]);
        CHECK(m->step == 2);
        free(p0);
        ncf_model_free(m);
        m = NULL;
    }
}

/* SGD moves every parameter by exactly lr * gradient, and only rows in the batch. */
static void test_sgd_moves_only_batch_rows_by_lr_times_gradient(void)
{
    ncf_config c = small_config(NCF_MF, 1);
    ncf_model *m = NULL;
    float *p0, *g;
    int32_t u[3] = {0, 1, 1}, it[3] = {2, 3, 2};
    float y[3] = {1, 0, 1};
    size_t i, moved = 0;
    c.optimizer = NCF_OPT_SGD, c.lr = 0.5f;
    CHECK(ncf_model_create(&m, &c) == NCF_OK);
    if (!m) return;
    randomize(m, 5, 0.5f);
    p0 = (float *)malloc(sizeof(float) * m->num_params), g = (float *)malloc(sizeof(float) * m->num_params);
    memcpy(p0, m->params, sizeof(float) * m->num_params);
    CHECK(ncf_forward_backward(m, u, it, y, 3, NULL) == NCF_OK);
    memcpy(g, m->grads, sizeof(float) * m->num_params);
    ncf_update(m);
    for (i = 0; i < m->num_params; i++) {
        float want = p0[i] - 0.5f * g[i]; /* rounded to float where float math runs in double */
        CHECKF(m->params[i] == want, "param %zu: %.9g, expected %.9g", i, m->params[i], want);
        moved += m->params[i] != p0[i];
    }
    /* users 0,1 and items 2,3, each 3 factors + 1 bias, and the global bias: 4 * 4 + 1 */
    CHECKF(moved == 17, "%zu parameters moved", moved);
    CHECK(m->step == 1);
    free(p0), free(g);
    ncf_model_free(m);
}

/* Dense (TF) and lazy Adam agree everywhere except embedding rows that had a
   gradient before but not in this step: dense keeps moving them on momentum. */
static void test_dense_and_lazy_adam_differ_only_on_idle_rows(void)
{
    ncf_config c = small_config(NCF_NEUMF, 0);
    ncf_model *a = NULL, *b = NULL;
    int32_t u1[3] = {0, 1, 2}, i1[3] = {0, 1, 2}, u2[3] = {2, 3, 3}, i2[3] = {2, 3, 4};
    float y[3] = {1, 0, 1};
    int t, r, k;
    c.adam = NCF_ADAM_LAZY;
    CHECK(ncf_model_create(&a, &c) == NCF_OK);
    c.adam = NCF_ADAM_DENSE;
    CHECK(ncf_model_create(&b, &c) == NCF_OK);
    if (!a || !b) return;
    CHECK(ncf_train_step(a, u1, i1, y, 3, NULL) == NCF_OK && ncf_train_step(b, u1, i1, y, 3, NULL) == NCF_OK);
    CHECK(memcmp(a->params, b->params, sizeof(float) * a->num_params) == 0); /* first step: same */
    CHECK(ncf_train_step(a, u2, i2, y, 3, NULL) == NCF_OK && ncf_train_step(b, u2, i2, y, 3, NULL) == NCF_OK);
    for (t = 0; t < a->num_tensors; t++) {
        const ncf_tensor *T = &a->tensors[t];
        int is_user = strstr(T->name, "_user") != NULL, is_item = strstr(T->name, "_item") != NULL;
        for (r = 0; r < T->rows; r++) {
            /* rows of step 1 only: users 0,1 and items 0,1 */
            int stale = (is_user || is_item) && r <= 1;
            int differ = 0;
            for (k = 0; k < T->cols; k++)
                differ |=
                    a->params[T->offset + (size_t)r * T->cols + k] != b->params[T->offset + (size_t)r * T->cols + k];
            CHECKF(differ == stale, "%s row %d: differ %d, expected %d", T->name, r, differ, stale);
        }
    }
    ncf_model_free(a);
    ncf_model_free(b);
}

/* ---- >>determinism: the same bits on any thread count, preempted or not ---------------------- */

/* A hash of the parameters and Adam state after training on synthetic data and
   of the evaluation: equal for 1 and 2 threads and for the NO_OMP build. */
/* The model and its figures after an epoch: lazy Adam (kind 0), dense (1), ALS (2; MF 128), or
   lazy Adam on an epoch shuffled by positive (3). */
static uint64_t training_hash(int threads, int kind)
{
    ncf_dataset d;
    ncf_sampler s;
    ncf_model *m = NULL;
    ncf_config c = ncf_config_default();
    ncf_metrics met;
    uint64_t h = 0;
    ncf_set_threads(threads);
    if (ncf_synthetic(&d, 300, 200, 6000, 8, 3) != NCF_OK || ncf_sample_eval_negatives(&d, 50, 3) != NCF_OK) return 1;
    c.num_users = d.num_users, c.num_items = d.num_items, c.batch_size = 512, c.seed = 11;
    c.adam = kind == 1 ? NCF_ADAM_DENSE : NCF_ADAM_LAZY;
    c.mlp_reg[1] = 1e-4f, c.mf_reg = 1e-5f;
    if (kind == 2) c.model = NCF_MF, c.optimizer = NCF_OPT_ALS, c.mf_dim = 128, c.mf_reg = 0.1f;
    if (ncf_model_create(&m, &c) == NCF_OK && ncf_sampler_init(&s, &d, 4, c.seed) == NCF_OK &&
        (s.by_positive = kind == 3, ncf_train_epoch(m, &s, 1, NULL, NULL, NULL) == NCF_OK) &&
        evaluate_k(m, &d, 10, NCF_SAMPLED, &met) == NCF_OK) {
        h = state_hash(m);
        h = ncf__mix64(h ^ (uint64_t)(met.hr * 1e9)) ^ (uint64_t)(met.ndcg * 1e9);
    }
    ncf_model_free(m);
    ncf_dataset_free(&d);
    ncf_set_threads(2);
    return h;
}

static void test_training_bit_identical_on_any_thread_count(void)
{
    uint64_t h1 = training_hash(1, 0), h2 = training_hash(2, 0);
    uint64_t d1 = training_hash(1, 1), d2 = training_hash(2, 1);
    uint64_t p1 = training_hash(1, 3), p2 = training_hash(2, 3);
    CHECKF(h1 == h2 && h1 > 1, "lazy: %016llx vs %016llx", (unsigned long long)h1, (unsigned long long)h2);
    CHECKF(d1 == d2 && d1 > 1, "dense: %016llx vs %016llx", (unsigned long long)d1, (unsigned long long)d2);
    CHECKF(p1 == p2 && p1 > 1, "by positive: %016llx vs %016llx", (unsigned long long)p1, (unsigned long long)p2);
    CHECK(h1 != d1 && h1 != p1);
    if (g_expect_hash_file) { /* the NO_OMP build wrote its hash there */
        FILE *f = fopen(g_expect_hash_file, "r");
        unsigned long long other = 0;
        CHECKF(f && fscanf(f, "%llx", &other) == 1, "cannot read %s", g_expect_hash_file);
        if (f) fclose(f);
        CHECKF(other == h1, "this build %016llx, NO_OMP build %016llx", (unsigned long long)h1, other);
    }
}

/* The state hash of a model trained on `threads` threads through an epoch of more steps than
   one parallel region runs (the train loop keeps 1024 steps in a region), or through 300
   calls of ncf_train_step; lazy or dense Adam. With solo 0 or 1, pacing is off and its
   choice stands: the whole team, or thread 0 alone (-1: pacing as it comes). */
static uint64_t trained_hash(int threads, int dense, int by_step, int solo)
{
    ncf_dataset d;
    ncf_sampler s;
    ncf_model *m = NULL;
    ncf_config c = ncf_config_default();
    uint64_t h = 0;
    ncf_set_threads(threads);
    /* a batch of 320 holds about 64 distinct users: counts that cross multiples of 32 */
    if (ncf_synthetic(&d, 5000, 500, 80000, 8, 5) != NCF_OK) return 1;
    c.num_users = d.num_users, c.num_items = d.num_items, c.batch_size = 320, c.seed = 5;
    c.adam = dense ? NCF_ADAM_DENSE : NCF_ADAM_LAZY;
    if (ncf_model_create(&m, &c) == NCF_OK && ncf_sampler_init(&s, &d, 4, c.seed) == NCF_OK) {
        int ok = 1;
        if (solo >= 0) m->scratch->pace.solo = solo, m->scratch->pace.next = INT64_MAX; /* no probes */
        if (by_step) { /* 300 steps of ncf_train_step, batches from the sampler */
            int32_t u[320], it[320];
            float y[320];
            int k;
            for (k = 0; k < 300 && ok; k++) {
                ncf_sampler_fill(&s, 1, (int64_t)k * 320, 320, u, it, y);
                ok = ncf_train_step(m, u, it, y, 320, NULL) == NCF_OK;
            }
        } else ok = ncf_train_epoch(m, &s, 1, NULL, NULL, NULL) == NCF_OK;
        if (ok) h = state_hash(m);
    }
    ncf_model_free(m);
    ncf_dataset_free(&d);
    ncf_set_threads(2);
    return h;
}

/* Threads that the OS preempts (3 on this machine's 2 cores, and a busy loop beside them
   when the machine has 2) still give the 1-thread model bit for bit, for lazy and dense Adam
   and through ncf_train_step. Catches a phase whose unit count a late thread reads after a
   thread ahead has changed it. */
static void test_training_bit_identical_with_a_preempted_thread(void)
{
    int dense, by_step;
#ifndef _WIN32
    pid_t busy = fork();
    if (busy == 0) { /* a busy loop for at most 60 s */
        time_t t0 = time(NULL);
        volatile unsigned long spin = 0;
        while (time(NULL) - t0 < 60) spin++;
        _exit(0);
    }
#endif
    for (dense = 0; dense < 2; dense++)
        for (by_step = 0; by_step < 2; by_step++) {
            uint64_t h1 = trained_hash(1, dense, by_step, -1), h3 = trained_hash(3, dense, by_step, -1);
            CHECKF(h1 == h3 && h1 > 1, "%s Adam, %s: 1 thread %016llx, 3 threads %016llx", dense ? "dense" : "lazy",
                   by_step ? "ncf_train_step" : "ncf_train_epoch", (unsigned long long)h1, (unsigned long long)h3);
        }
#ifndef _WIN32
    if (busy > 0) kill(busy, SIGKILL), waitpid(busy, NULL, 0);
#endif
}

/* Thread 0 training alone while the others sit out (what pacing picks on a machine where
   more threads are slower), and the whole team with pacing off: both the 1-thread model bit
   for bit, through an epoch and through ncf_train_step. Catches a claim that hands out a
   unit twice, or none, when thread 0 takes a phase's units at once. */
static void test_training_bit_identical_with_thread_0_alone(void)
{
    int by_step, solo;
    for (by_step = 0; by_step < 2; by_step++) {
        uint64_t h1 = trained_hash(1, 0, by_step, -1);
        for (solo = 0; solo < 2; solo++) {
            uint64_t h2 = trained_hash(2, 0, by_step, solo);
            CHECKF(h1 == h2 && h1 > 1, "%s, %s: 1 thread %016llx, 2 threads %016llx",
                   by_step ? "ncf_train_step" : "ncf_train_epoch", solo ? "thread 0 alone" : "the whole team",
                   (unsigned long long)h1, (unsigned long long)h2);
        }
    }
}

/* ---- >>training: pre-training, SGD, decay, epochs and settings chosen on validation ---------- */

/* alpha 1 (0) makes the NeuMF score exactly as its GMF (MLP); 0.5 averages them. */
static void test_pretrained_neumf_scores_as_its_parts(void)
{
    ncf_dataset d;
    ncf_model *gmf, *mlp, *nm, *bad = NULL;
    ncf_metrics mg, mm, mn;
    ncf_config c;
    enum { N = 400 };
    static int32_t u[N], it[N];
    static float pg[N], pm[N], pn[N];
    int j, exact;
    CHECK(ncf_synthetic(&d, 300, 150, 6000, 6, 8) == NCF_OK);
    CHECK(ncf_sample_eval_negatives(&d, 49, 8) == NCF_OK);
    pretrained_pair(&d, &gmf, &mlp, &nm);
    if (!gmf || !mlp || !nm) {
        ncf_model_free(gmf), ncf_model_free(mlp), ncf_model_free(nm), ncf_dataset_free(&d);
        return;
    }
    for (j = 0; j < N; j++) u[j] = (j * 7) % d.num_users, it[j] = (j * 31 + j / 3) % d.num_items;
    CHECK(ncf_predict_index(gmf, u, it, N, pg) == NCF_OK && ncf_predict_index(mlp, u, it, N, pm) == NCF_OK);
    CHECK(evaluate_k(gmf, &d, 10, NCF_SAMPLED, &mg) == NCF_OK && evaluate_k(mlp, &d, 10, NCF_SAMPLED, &mm) == NCF_OK);

    CHECK(ncf_model_init_from(nm, gmf, mlp, 1.0f) == NCF_OK);
    CHECK(ncf_predict_index(nm, u, it, N, pn) == NCF_OK);
    CHECK(!memcmp(pn, pg, sizeof pn)); /* bit for bit */
    CHECK(evaluate_k(nm, &d, 10, NCF_SAMPLED, &mn) == NCF_OK && mn.hr == mg.hr && mn.ndcg == mg.ndcg);

    CHECK(ncf_model_init_from(nm, gmf, mlp, 0.0f) == NCF_OK);
    CHECK(ncf_predict_index(nm, u, it, N, pn) == NCF_OK);
    CHECK(!memcmp(pn, pm, sizeof pn));
    CHECK(evaluate_k(nm, &d, 10, NCF_SAMPLED, &mn) == NCF_OK && mn.hr == mm.hr && mn.ndcg == mm.ndcg);
    printf("    GMF HR %.4f, MLP HR %.4f: reproduced exactly at alpha 1 and 0\n", mg.hr, mm.hr);

    CHECK(ncf_model_init_from(nm, gmf, mlp, 0.5f) == NCF_OK);
    CHECK(ncf_predict_index(nm, u, it, N, pn) == NCF_OK);
    for (j = 0, exact = 1; j < N; j++) exact &= fabs(pn[j] - 0.5 * (pg[j] + pm[j])) < 1e-5 * (1 + fabs(pn[j]));
    CHECK(exact);
    CHECK(nm->step == 0 && nm->adam_m[0] == 0.0f);

    /* mismatches are refused */
    CHECK_ERR(ncf_model_init_from(nm, mlp, gmf, 0.5f), NCF_ERR_ARG, "needs a NeuMF, a GMF and an MLP");
    CHECK_ERR(ncf_model_init_from(nm, gmf, mlp, 1.5f), NCF_ERR_ARG, "alpha");
    c = nm->cfg, c.layers[1] = 12;
    CHECK(ncf_model_create(&bad, &c) == NCF_OK);
    CHECK_ERR(ncf_model_init_from(bad, gmf, mlp, 0.5f), NCF_ERR_ARG, "layers differ");
    ncf_model_free(bad);
    c = nm->cfg, c.mf_dim = 4;
    CHECK(ncf_model_create(&bad, &c) == NCF_OK);
    CHECK_ERR(ncf_model_init_from(bad, gmf, mlp, 0.5f), NCF_ERR_ARG, "factors");
    ncf_model_free(bad);
    ncf_model_free(gmf), ncf_model_free(mlp), ncf_model_free(nm);
    ncf_dataset_free(&d);
}

/* MF (biases + dot product) trained with SGD learns, and survives a file round trip. */
static void test_mf_sgd_learns_and_survives_a_file(void)
{
    ncf_dataset d;
    ncf_sampler s;
    ncf_model *m = NULL, *b = NULL;
    ncf_config c = ncf_config_default();
    ncf_metrics before, after;
    void *buf = NULL;
    size_t len;
    int e;
    CHECK(ncf_synthetic(&d, 800, 400, 30000, 8, 21) == NCF_OK);
    CHECK(ncf_sample_eval_negatives(&d, 99, 21) == NCF_OK);
    c.num_users = d.num_users, c.num_items = d.num_items, c.model = NCF_MF, c.mf_dim = 16;
    c.optimizer = NCF_OPT_SGD, c.lr = 8.0f, c.init_sd = 0.1f, c.mf_reg = 0.001f, c.batch_size = 128;
    CHECK(ncf_model_create(&m, &c) == NCF_OK);
    CHECK(ncf_sampler_init(&s, &d, 4, 3) == NCF_OK);
    if (!m) {
        ncf_dataset_free(&d);
        return;
    }
    CHECK(evaluate_k(m, &d, 10, NCF_SAMPLED, &before) == NCF_OK);
    for (e = 1; e <= 6; e++) CHECK(ncf_train_epoch(m, &s, e, NULL, NULL, NULL) == NCF_OK);
    CHECK(evaluate_k(m, &d, 10, NCF_SAMPLED, &after) == NCF_OK);
    printf("    MF+SGD HR@10: untrained %.3f, trained %.3f; popularity %.3f\n", before.hr, after.hr, popularity_hr(&d));
    CHECK(after.hr > popularity_hr(&d) + 0.05);
    CHECK(ncf_save_mem(m, NCF_SAVE_ADAM, &buf, &len) == NCF_OK);
    CHECK(ncf_load_mem(&b, buf, len) == NCF_OK && b && same_model(m, b, 1));
    ncf_free(buf);
    ncf_model_free(b);
    ncf_model_free(m);
    ncf_dataset_free(&d);
}

static int cmp_example(const void *a, const void *b)
{
    const int64_t *x = (const int64_t *)a, *y = (const int64_t *)b;
    return (*x > *y) - (*x < *y);
}

/* The order by positive is the epoch's examples reordered: filled in chunks of any size from
   any start, the same examples as ncf_sampler_fill's epoch (as a multiset of user, item and
   label), each positive followed by num_neg negatives of its user. */
static void test_fill_by_positive_is_the_epoch_reordered(void)
{
    static const int chunks[] = {1, 7, 16, 1024, 1 << 30};
    ncf_dataset d;
    ncf_sampler s;
    int neg, c;
    CHECK(ncf_synthetic(&d, 120, 80, 3000, 6, 8) == NCF_OK);
    for (neg = 0; neg <= 3; neg += 3) {
        int64_t n, q, per = 1 + neg, bad = 0;
        int32_t *u, *it, *u2, *it2;
        float *y, *y2;
        int64_t *ka, *kb;
        CHECK(ncf_sampler_init(&s, &d, neg, 9) == NCF_OK);
        n = s.num_examples;
        u = (int32_t *)malloc(sizeof(int32_t) * (size_t)n), it = (int32_t *)malloc(sizeof(int32_t) * (size_t)n);
        u2 = (int32_t *)malloc(sizeof(int32_t) * (size_t)n), it2 = (int32_t *)malloc(sizeof(int32_t) * (size_t)n);
        y = (float *)malloc(sizeof(float) * (size_t)n), y2 = (float *)malloc(sizeof(float) * (size_t)n);
        ka = (int64_t *)malloc(sizeof(int64_t) * (size_t)n), kb = (int64_t *)malloc(sizeof(int64_t) * (size_t)n);
        if (!u || !it || !u2 || !it2 || !y || !y2 || !ka || !kb) {
            CHECK(!"out of memory");
            break;
        }
        ncf_sampler_fill(&s, 2, 0, (int)n, u2, it2, y2);
        for (q = 0; q < n; q++) kb[q] = ((int64_t)u2[q] << 32) | ((int64_t)it2[q] << 1) | (y2[q] > 0);
        qsort(kb, (size_t)n, sizeof *kb, cmp_example);
        for (c = 0; c < (int)(sizeof chunks / sizeof *chunks); c++) {
            int64_t start = 0, j;
            memset(u, 0xff, sizeof(int32_t) * (size_t)n);
            for (start = 0; start < n; start += chunks[c])
                ncf__fill_by_positive(&s, 2, start, (int)(n - start < chunks[c] ? n - start : chunks[c]), u + start,
                                      it + start, y + start, NULL);
            for (q = 0; q < n; q++) {
                ka[q] = ((int64_t)u[q] << 32) | ((int64_t)it[q] << 1) | (y[q] > 0);
                bad += (q % per == 0) != (y[q] > 0) || (q % per && u[q] != u[q - q % per]);
            }
            qsort(ka, (size_t)n, sizeof *ka, cmp_example);
            for (j = 0; j < n && ka[j] == kb[j]; j++) continue;
            CHECKF(j == n && bad == 0, "%d negatives, chunks of %d: example %lld of %lld differs, %lld out of place",
                   neg, chunks[c], (long long)j, (long long)n, (long long)bad);
        }
        free(u), free(it), free(u2), free(it2), free(y), free(y2), free(ka), free(kb);
    }
    ncf_dataset_free(&d);
}

/* MF with SGD one example a step (Rendle et al.'s recipe) takes its own loop: the same steps as
   ncf_train_step given the sampler's examples one at a time, the same mean loss, the same
   step count; weights scale a positive's step as in a batch; divergence stops it. */
static void test_per_example_sgd_is_train_step(void)
{
    ncf_dataset d;
    ncf_sampler s;
    ncf_model *a = NULL, *b = NULL;
    ncf_config c = ncf_config_default();
    double la = 0, lb = 0, l;
    int64_t j, n, differ = 0;
    int32_t u, it;
    float y;
    int w;
    for (w = 0; w <= 1; w++) {
        CHECK(ncf_synthetic(&d, 120, 80, 3000, 6, 8) == NCF_OK);
        if (w) { /* weights 1..3 on the positives */
            d.weight = (float *)malloc(sizeof(float) * (size_t)d.num_train);
            for (j = 0; d.weight && j < d.num_train; j++) d.weight[j] = 1.0f + (float)(j % 3);
        }
        c.num_users = d.num_users, c.num_items = d.num_items, c.model = NCF_MF, c.mf_dim = 12;
        c.optimizer = NCF_OPT_SGD, c.lr = 0.05f, c.init_sd = 0.1f, c.mf_reg = 0.002f, c.batch_size = 1;
        CHECK(ncf_model_create(&a, &c) == NCF_OK && ncf_model_create(&b, &c) == NCF_OK);
        CHECK(ncf_sampler_init(&s, &d, 4, 5) == NCF_OK);
        if (!a || !b) break;
        CHECK(ncf_train_epoch(a, &s, 1, NULL, NULL, &la) == NCF_OK);
        n = s.num_examples, lb = 0;
        for (j = 0; j < n; j++) {
            ncf__fill_by_positive(&s, 1, j, 1, &u, &it, &y, NULL);
            CHECK(ncf_train_step(b, &u, &it, &y, 1, &l) == NCF_OK);
            lb += l;
        }
        lb /= (double)n;
        for (j = 0; j < (int64_t)a->num_params; j++) differ += a->params[j] != b->params[j];
        /* the two compute one expression; a compiler may fuse a multiply-add in one and not the other */
        for (j = 0; j < (int64_t)a->num_params; j++)
            CHECKF(fabs((double)a->params[j] - b->params[j]) <= 1e-5 * (1 + fabs((double)b->params[j])),
                   "weights %d: param %lld: %.9g against ncf_train_step's %.9g", w, (long long)j, a->params[j],
                   b->params[j]);
        CHECKF(fabs(la - lb) <= 1e-6 * lb, "weights %d: mean loss %.9g against %.9g", w, la, lb);
        CHECK(a->step == n && b->step == n && a->epoch == 1);
        printf(
            "    per-example SGD (weights %d): %lld steps, %lld of %zu parameters not bit-equal to ncf_train_step's\n",
            w, (long long)n, (long long)differ, a->num_params);
        ncf_model_free(a), ncf_model_free(b), a = b = NULL;
        ncf_dataset_free(&d);
        differ = 0;
    }
    ncf_model_free(a), ncf_model_free(b);
    if (w <= 1) return;
    CHECK(ncf_synthetic(&d, 120, 80, 3000, 6, 8) == NCF_OK);
    c.lr = 1.0f;
    CHECK(ncf_model_create(&a, &c) == NCF_OK && ncf_sampler_init(&s, &d, 4, 5) == NCF_OK);
    if (a) {
        int rc;
        a->cfg.lr = 1e30f; /* set by hand, past ncf_model_create's check */
        rc = ncf_train_epoch(a, &s, 1, NULL, NULL, NULL);
        CHECKF(rc == NCF_ERR_DATA && strstr(ncf_error_text(), "step"), "rc %d: %s", rc, ncf_error_text());
        CHECKF(a->step < 100, "went on for %lld steps", (long long)a->step);
    }
    ncf_model_free(a);
    ncf_dataset_free(&d);
}

/* ncf_train_step sums a row's gradient and steps it in registers (the vector widths, then
   the lanes left one at a time); ncf_forward_backward + ncf_update sums it in the gradient
   table and steps it by the plain loop. The same operations in the same order: the same bits,
   for rows as wide as a vector, half of one, more, and widths with lanes left over; with lazy
   Adam and SGD, with and without L2, and on a parameter that becomes infinite. */
static void test_train_step_is_forward_backward_and_update(void)
{
    static const int widths[][2] = {{8, 32}, {16, 16}, {13, 19}, {3, 5}, {40, 24}};
    int32_t u[24], it[24];
    float y[24];
    int w, opt, j, step;
    for (j = 0; j < 24; j++)
        u[j] = (j * 7) % 9, it[j] = (j * 5 + j / 6) % 11, y[j] = j % 3 == 0 ? 1.0f + (float)(j % 2) : 0.0f;
    for (w = 0; w < (int)(sizeof widths / sizeof widths[0]); w++)
        for (opt = 0; opt < 3; opt++) {
            ncf_config c = small_config(w == 3 ? NCF_MF : NCF_NEUMF, opt != 1);
            ncf_model *a = NULL, *b = NULL;
            size_t i, differ = 0;
            c.num_users = 9, c.num_items = 11, c.mf_dim = widths[w][0], c.layers[0] = 2 * widths[w][1];
            c.optimizer = opt == 2 ? NCF_OPT_SGD : NCF_OPT_ADAM, c.adam = NCF_ADAM_LAZY, c.lr = 0.05f;
            CHECK(ncf_model_create(&a, &c) == NCF_OK && ncf_model_create(&b, &c) == NCF_OK);
            if (!a || !b) {
                ncf_model_free(a), ncf_model_free(b);
                return;
            }
            for (step = 0; step < 4; step++) {
                CHECK(ncf_train_step(a, u + 6 * step, it + 6 * step, y + 6 * step, 18 - 4 * step, NULL) == NCF_OK);
                CHECK(ncf_forward_backward(b, u + 6 * step, it + 6 * step, y + 6 * step, 18 - 4 * step, NULL) ==
                      NCF_OK);
                ncf_update(b);
            }
            for (i = 0; i < a->num_params; i++)
                differ += memcmp(&a->params[i], &b->params[i], sizeof(float)) != 0 ||
                    memcmp(&a->adam_m[i], &b->adam_m[i], sizeof(float)) != 0 ||
                    memcmp(&a->adam_v[i], &b->adam_v[i], sizeof(float)) != 0;
            CHECKF(differ == 0, "widths %d, %d, optimizer %d: %zu of %zu parameters differ", widths[w][0], widths[w][1],
                   opt, differ, a->num_params);
            CHECK(a->step == 4 && b->step == 4);
            if (opt == 2) { /* a step that overflows rows alone (p - lr (g + c p), lr -100, c 0.01) is refused */
                a->gmf_user[(size_t)u[0] * (size_t)c.mf_dim] = 3.4e38f, a->cfg.lr = -100.0f;
                CHECK_ERR(ncf_train_step(a, u, it, y, 6, NULL), NCF_ERR_DATA, "infinite or NaN");
            }
            ncf_model_free(a), ncf_model_free(b);
        }
}

/* ncf_fit_opts.decay: epoch j of E trains at lr (1 - j/E), the model's own rate untouched
   outside; the chosen model is that of a hand loop at those rates. */
static void test_fit_decay_is_a_hand_loop(void)
{
    ncf_dataset d;
    ncf_config c = ncf_config_default();
    ncf_model *a = NULL, *b = NULL;
    ncf_fit_opts fo = ncf_fit_opts_default();
    ncf_fit_report fr;
    ncf_sampler s;
    int e;
    memset(&fr, 0, sizeof fr);
    CHECK(ncf__decayed_lr(0.04f, 0, 4) == 0.04f && ncf__decayed_lr(0.04f, 3, 4) == (float)(0.04f * 0.25) &&
          ncf__decayed_lr(0.04f, 2, 4) == (float)(0.04f * 0.5) && ncf__decayed_lr(0.04f, 4, 4) == 0.04f &&
          ncf__decayed_lr(0.04f, -1, 4) == 0.04f && ncf__decayed_lr(0.04f, 0, 0) == 0.04f);
    CHECK(ncf_synthetic(&d, 150, 90, 4000, 6, 12) == NCF_OK && ncf_sample_eval_negatives(&d, 30, 12) == NCF_OK &&
          ncf_hold_out_validation(&d, 30, 13) == NCF_OK);
    c.num_users = d.num_users, c.num_items = d.num_items, c.model = NCF_MF, c.mf_dim = 16, c.init_sd = 0.1f;
    c.optimizer = NCF_OPT_SGD, c.batch_size = 1, c.lr = 0.08f, c.mf_reg = 0.002f;
    CHECK(ncf_model_create(&a, &c) == NCF_OK && ncf_model_create(&b, &c) == NCF_OK);
    if (!a || !b) {
        ncf_model_free(a), ncf_model_free(b), ncf_dataset_free(&d);
        return;
    }
    fo.epochs = 5, fo.decay = 1;
    CHECK(ncf_fit(a, &d, &fo, &fr) == NCF_OK && a->cfg.lr == 0.08f && fr.chosen_epoch >= 1);
    CHECK(ncf_sampler_init(&s, &d, b->cfg.num_neg, b->cfg.seed) == NCF_OK);
    for (e = 1; e <= fr.chosen_epoch; e++) {
        b->cfg.lr = ncf__decayed_lr(0.08f, e - 1, 5);
        CHECK(ncf_train_epoch(b, &s, e, NULL, NULL, NULL) == NCF_OK);
    }
    b->cfg.lr = 0.08f;
    CHECKF(!memcmp(a->params, b->params, sizeof(float) * a->num_params) && a->step == b->step,
           "the chosen epoch %d differs from the hand loop's", fr.chosen_epoch);
    printf("    decayed over 5 epochs, chosen epoch %d: the hand loop's model bit for bit\n", fr.chosen_epoch);
    ncf_model_free(a), ncf_model_free(b);
    ncf_dataset_free(&d);
}

/* ncf_fit_opts.by_positive: the chosen model is that of a hand loop whose sampler has
   the same order, for either order; and the two orders train different models. */
static void test_fit_shuffle_is_the_samplers(void)
{
    ncf_dataset d;
    ncf_config c = ncf_config_default();
    ncf_model *a[2] = {NULL, NULL}, *b = NULL;
    ncf_fit_opts fo = ncf_fit_opts_default();
    ncf_fit_report fr;
    ncf_sampler s;
    int e, x;
    memset(&fr, 0, sizeof fr);
    CHECK(ncf_synthetic(&d, 150, 90, 4000, 6, 12) == NCF_OK && ncf_sample_eval_negatives(&d, 30, 12) == NCF_OK &&
          ncf_hold_out_validation(&d, 30, 13) == NCF_OK);
    c.num_users = d.num_users, c.num_items = d.num_items, c.mf_dim = 8, c.batch_size = 64, c.lr = 0.005f;
    for (x = 0; x <= 1; x++) {
        CHECK(ncf_model_create(&a[x], &c) == NCF_OK && ncf_model_create(&b, &c) == NCF_OK);
        if (!a[x] || !b) break;
        fo.epochs = 4, fo.by_positive = x;
        CHECK(ncf_fit(a[x], &d, &fo, &fr) == NCF_OK && fr.chosen_epoch >= 1);
        CHECK(ncf_sampler_init(&s, &d, b->cfg.num_neg, b->cfg.seed) == NCF_OK);
        s.by_positive = x;
        for (e = 1; e <= fr.chosen_epoch; e++) CHECK(ncf_train_epoch(b, &s, e, NULL, NULL, NULL) == NCF_OK);
        CHECKF(!memcmp(a[x]->params, b->params, sizeof(float) * b->num_params) && a[x]->step == b->step,
               "by_positive %d: the chosen epoch %d differs from the hand loop's", x, fr.chosen_epoch);
        printf("    by_positive %d, chosen epoch %d: the hand loop's model bit for bit\n", x, fr.chosen_epoch);
        ncf_model_free(b), b = NULL;
    }
    CHECK(a[0] && a[1] && memcmp(a[0]->params, a[1]->params, sizeof(float) * a[0]->num_params));
    ncf_model_free(a[0]), ncf_model_free(a[1]), ncf_model_free(b);
    ncf_dataset_free(&d);
}

/* Training never reads the held-out items: the same data with its test and validation items
   poisoned (other items, or none) draws the same examples every epoch and trains the same
   model bit for bit. (0.6's sampler, skip_held_out, read them: it differs.) */
static void test_training_blind_to_held_out_items(void)
{
    ncf_dataset d, poisoned;
    ncf_sampler a, b;
    ncf_config c = ncf_config_default();
    ncf_model *ma = NULL, *mb = NULL;
    int32_t *ua, *ia, *ub, *ib;
    float *ya, *yb;
    int u, epoch, same = 1;
    CHECK(ncf_synthetic(&d, 80, 50, 1500, 4, 3) == NCF_OK && ncf_hold_out_validation(&d, 5, 2) == NCF_OK);
    CHECK(ncf_synthetic(&poisoned, 80, 50, 1500, 4, 3) == NCF_OK && ncf_hold_out_validation(&poisoned, 5, 2) == NCF_OK);
    for (u = 0; u < poisoned.num_users; u++) { /* another item not in training, or none */
        int32_t other = -1, i;
        for (i = 0; i < poisoned.num_items && other < 0; i++)
            if (!in_training(&poisoned, u, (i + 7 * u) % poisoned.num_items)) other = (i + 7 * u) % poisoned.num_items;
        poisoned.test_item[u] = u % 3 ? other : -1, poisoned.val_item[u] = u % 2 ? -1 : other;
    }
    CHECK(ncf_sampler_init(&a, &d, 4, 5) == NCF_OK && ncf_sampler_init(&b, &poisoned, 4, 5) == NCF_OK);
    ua = (int32_t *)malloc(sizeof(int32_t) * (size_t)a.num_examples),
    ia = (int32_t *)malloc(sizeof(int32_t) * (size_t)a.num_examples);
    ub = (int32_t *)malloc(sizeof(int32_t) * (size_t)a.num_examples),
    ib = (int32_t *)malloc(sizeof(int32_t) * (size_t)a.num_examples);
    ya = (float *)malloc(sizeof(float) * (size_t)a.num_examples),
    yb = (float *)malloc(sizeof(float) * (size_t)a.num_examples);
    for (epoch = 1; epoch <= 5; epoch++) {
        ncf_sampler_fill(&a, epoch, 0, (int)a.num_examples, ua, ia, ya);
        ncf_sampler_fill(&b, epoch, 0, (int)b.num_examples, ub, ib, yb);
        same &= !memcmp(ia, ib, sizeof(int32_t) * (size_t)a.num_examples) &&
            !memcmp(ua, ub, sizeof(int32_t) * (size_t)a.num_examples);
    }
    CHECK(same);
    c.num_users = d.num_users, c.num_items = d.num_items, c.batch_size = 64;
    CHECK(ncf_model_create(&ma, &c) == NCF_OK && ncf_model_create(&mb, &c) == NCF_OK);
    for (epoch = 1; epoch <= 2; epoch++)
        CHECK(ncf_train_epoch(ma, &a, epoch, NULL, NULL, NULL) == NCF_OK &&
              ncf_train_epoch(mb, &b, epoch, NULL, NULL, NULL) == NCF_OK);
    CHECK(ma && mb && !memcmp(ma->params, mb->params, sizeof(float) * ma->num_params));
    a.skip_held_out = b.skip_held_out = 1; /* the old rule reads them */
    ncf_sampler_fill(&a, 1, 0, (int)a.num_examples, ua, ia, ya);
    ncf_sampler_fill(&b, 1, 0, (int)b.num_examples, ub, ib, yb);
    CHECK(memcmp(ia, ib, sizeof(int32_t) * (size_t)a.num_examples) != 0);
    free(ua), free(ia), free(ub), free(ib), free(ya), free(yb);
    ncf_model_free(ma), ncf_model_free(mb), ncf_dataset_free(&d), ncf_dataset_free(&poisoned);
}

/* ncf_fit leaves the model at the epoch of the best validation HR, which a loop of epochs
   and evaluations finds by hand; the same data with its test items poisoned (others, or none)
   gives the same choice and the same model bit for bit; patience stops that many epochs after
   the chosen one; a test target is refused. */
/* ncf_fit_opts.epoch_done's record: each epoch's count, loss and validation HR. */
typedef struct {
    int n, epoch[16];
    double loss[16], hr[16];
} heard_epochs;
static void hear_epoch(void *ctx, int epoch, double loss, const ncf_metrics *val)
{
    heard_epochs *h = (heard_epochs *)ctx;
    if (h->n < 16) h->epoch[h->n] = epoch, h->loss[h->n] = loss, h->hr[h->n] = val->hr;
    h->n++;
}

static void test_fit_chooses_on_validation_never_test(void)
{
    heard_epochs heard = {0, {0}, {0}, {0}};
    ncf_dataset d, poisoned;
    ncf_config c = ncf_config_default();
    ncf_model *a = NULL, *b = NULL, *hand = NULL;
    ncf_fit_opts fo = ncf_fit_opts_default();
    ncf_fit_report ra, rb;
    ncf_eval_opts eo = ncf_eval_opts_default();
    ncf_sampler smp;
    ncf_metrics mt;
    double top = -1;
    int u, e, at = 0;
    CHECK(ncf_synthetic(&d, 120, 60, 2400, 4, 8) == NCF_OK && ncf_sample_eval_negatives(&d, 20, 1) == NCF_OK &&
          ncf_hold_out_validation(&d, 20, 2) == NCF_OK);
    CHECK(ncf_synthetic(&poisoned, 120, 60, 2400, 4, 8) == NCF_OK &&
          ncf_sample_eval_negatives(&poisoned, 20, 1) == NCF_OK && ncf_hold_out_validation(&poisoned, 20, 2) == NCF_OK);
    for (u = 0; u < poisoned.num_users; u++)
        if (poisoned.test_item[u] >= 0)
            poisoned.test_item[u] = u % 2 ? -1 : poisoned.val_neg[(size_t)u * poisoned.num_val_neg];
    c.num_users = d.num_users, c.num_items = d.num_items, c.batch_size = 128, c.lr = 0.01f;
    CHECK(ncf_model_create(&a, &c) == NCF_OK && ncf_model_create(&b, &c) == NCF_OK &&
          ncf_model_create(&hand, &c) == NCF_OK);
    if (!a || !b || !hand) {
        ncf_model_free(a), ncf_model_free(b), ncf_model_free(hand);
        return;
    }
    fo.epochs = 8, fo.epoch_done = hear_epoch, fo.ctx = &heard;
    CHECKF(ncf_fit(a, &d, &fo, &ra) == NCF_OK, "%s", ncf_error_text());
    fo.epoch_done = NULL;
    CHECKF(ncf_fit(b, &poisoned, &fo, &rb) == NCF_OK, "%s", ncf_error_text());
    CHECK(ra.chosen_epoch == rb.chosen_epoch && ra.epochs_trained == 8 && a->epoch == ra.chosen_epoch);
    CHECK(!memcmp(a->params, b->params, sizeof(float) * a->num_params));
    eo.target = NCF_EVAL_VALIDATION; /* by hand: the first epoch of the best validation HR */
    CHECK(ncf_sampler_init(&smp, &d, c.num_neg, c.seed) == NCF_OK);
    CHECK(heard.n == 8);
    for (e = 1; e <= 8; e++) {
        double loss = -1;
        CHECK(ncf_train_epoch(hand, &smp, e, NULL, NULL, &loss) == NCF_OK &&
              ncf_evaluate(hand, &d, &eo, &mt) == NCF_OK);
        CHECKF(heard.epoch[e - 1] == e && heard.loss[e - 1] == loss && heard.hr[e - 1] == mt.hr,
               "epoch_done heard epoch %d loss %g HR %g; by hand %d %g %g", heard.epoch[e - 1], heard.loss[e - 1],
               heard.hr[e - 1], e, loss, mt.hr);
        if (mt.hr > top) top = mt.hr, at = e;
        if (e == ra.chosen_epoch) CHECK(!memcmp(hand->params, a->params, sizeof(float) * a->num_params));
    }
    CHECKF(at == ra.chosen_epoch && top == ra.chosen.hr, "by hand epoch %d (HR %f), ncf_fit %d (HR %f)", at, top,
           ra.chosen_epoch, ra.chosen.hr);
    printf("    chose epoch %d of 8 (validation HR@10 %.4f), the same with the test items poisoned\n", ra.chosen_epoch,
           ra.chosen.hr);
    fo.patience = 1, fo.epochs = 50; /* one epoch without a gain past the chosen one, and it stops */
    CHECK(ncf_fit(b, &poisoned, &fo, &rb) == NCF_OK && rb.epochs_trained <= rb.chosen_epoch - ra.chosen_epoch + 1);
    fo.eval.target = NCF_EVAL_TEST;
    CHECK_ERR(ncf_fit(a, &d, &fo, &ra), NCF_ERR_ARG, "validation target");
    ncf_model_free(a), ncf_model_free(b), ncf_model_free(hand);
    ncf_dataset_free(&d), ncf_dataset_free(&poisoned);
}

/* ncf_fit on a ratio split chooses the first epoch of the best validation MAP@5 (ranked in
   full), as training and ranking by hand find it, and the same with every test item changed. */
static void test_fit_chooses_on_any_figure_of_many_items(void)
{
    char *log = (char *)malloc(100000);
    size_t n = 0;
    int u, i, e, at = 0, k5 = 5;
    ncf_dataset_opts o = ncf_dataset_opts_default();
    ncf_dataset d;
    ncf_config c = ncf_config_default();
    ncf_model *a = NULL, *b = NULL, *hand = NULL;
    ncf_fit_opts fo = ncf_fit_opts_default();
    ncf_fit_report ra, rb;
    ncf_sampler smp;
    ncf_metrics mt;
    double top = -1;
    for (u = 0; u < 80; u++)
        for (i = 0; i < 8 + u % 12; i++)
            n += (size_t)sprintf(log + n, "%d,%d,%d\n", u, (u % 4) * 10 + (i * 3 + u) % 25, i);
    o.holdout = NCF_HOLDOUT_RATIO, o.validation = 1, o.header = NCF_HEADER_NO, o.columns[NCF_COL_RATING] = "";
    o.columns[NCF_COL_TIME] = "3";
    CHECKF(ncf_load_dataset_mem(&d, "ratio.csv", log, n, &o) == NCF_OK, "%s", ncf_error_text());
    c.num_users = d.num_users, c.num_items = d.num_items, c.lr = 0.05f, c.batch_size = 64;
    CHECK(ncf_model_create(&a, &c) == NCF_OK && ncf_model_create(&b, &c) == NCF_OK &&
          ncf_model_create(&hand, &c) == NCF_OK);
    if (!a || !b || !hand) {
        ncf_model_free(a), ncf_model_free(b), ncf_model_free(hand), free(log);
        return;
    }
    fo.epochs = 8, fo.eval.full_ranking = 1, fo.eval.metric = NCF_METRIC_MAP, fo.eval.k = 5;
    CHECKF(ncf_fit(a, &d, &fo, &ra) == NCF_OK, "%s", ncf_error_text());
    for (i = 0; i < d.test_ptr[d.num_users]; i++)
        d.test_items[i] = (d.test_items[i] + 7) % d.num_items; /* (poisoned) */
    CHECK(ncf_fit(b, &d, &fo, &rb) == NCF_OK && rb.chosen_epoch == ra.chosen_epoch);
    CHECK(!memcmp(a->params, b->params, sizeof(float) * a->num_params));
    fo.eval.target = NCF_EVAL_VALIDATION;
    CHECK(ncf_sampler_init(&smp, &d, c.num_neg, c.seed) == NCF_OK);
    for (e = 1; e <= 8; e++) {
        CHECK(ncf_train_epoch(hand, &smp, e, NULL, NULL, NULL) == NCF_OK &&
              ncf_evaluate_at(hand, &d, &fo.eval, &k5, 1, &mt) == NCF_OK);
        if (mt.map > top) top = mt.map, at = e;
    }
    CHECKF(at == ra.chosen_epoch && top == ra.chosen.map && ra.chosen.k == 5,
           "by hand epoch %d (MAP@5 %f), ncf_fit %d (%f)", at, top, ra.chosen_epoch, ra.chosen.map);
    printf("    chose epoch %d of 8 by validation MAP@5 %.4f, the same with the test items changed\n", ra.chosen_epoch,
           ra.chosen.map);
    ncf_model_free(a), ncf_model_free(b), ncf_model_free(hand), ncf_dataset_free(&d), free(log);
}

/* The data a search's tests share: synthetic, a validation item per user; poisoned, the same
   with every test item replaced or removed (a search never reads them). */
static int tune_data(ncf_dataset *d, int poison)
{
    int u;
    if (ncf_synthetic(d, 150, 80, 3000, 4, 5) != NCF_OK || ncf_sample_eval_negatives(d, 20, 1) != NCF_OK ||
        ncf_hold_out_validation(d, 20, 2) != NCF_OK)
        return 0;
    for (u = 0; poison && u < d->num_users; u++)
        if (d->test_item[u] >= 0) d->test_item[u] = u % 2 ? -1 : d->val_neg[(size_t)u * d->num_val_neg];
    return 1;
}

static int tune_rows_equal(const ncf_tune_report *a, const ncf_tune_report *b)
{
    int i, ok = a->num_runs == b->num_runs && a->best == b->best && a->num_trials == b->num_trials;
    for (i = 0; ok && i < a->num_runs; i++) {
        const ncf_trial *x = &a->runs[i], *y = &b->runs[i];
        ok &= x->trial == y->trial && x->rung == y->rung && x->chosen_epoch == y->chosen_epoch &&
            x->epochs_trained == y->epochs_trained && x->val.hr == y->val.hr && x->val.ndcg == y->val.ndcg &&
            x->weighted == y->weighted && !memcmp(&x->cfg, &y->cfg, sizeof x->cfg);
    }
    return ok && a->seeds == b->seeds && a->final_epochs == b->final_epochs &&
        a->averaged.chosen_epoch == b->averaged.chosen_epoch &&
        a->averaged.epochs_trained == b->averaged.epochs_trained && a->averaged.val.hr == b->averaged.val.hr &&
        a->averaged.val.ndcg == b->averaged.val.ndcg;
}

static int g_tune_calls;
static void count_tune_calls(void *user, const ncf_tune_report *so_far, const ncf_trial *next)
{
    (void)user, (void)so_far, (void)next;
    g_tune_calls++;
}

/* The winner w by hand from seeds w's + k, k < n, trained in step for `epochs` epochs (a decayed
   rate as it fell) on d's training positives, with its validation items when all: their average
   (n > 1). Trained on training alone, *best gets the epoch at which the average did best on
   validation HR@10 (the first of equals) and *best_hr that HR. NULL on a failure. */
static ncf_model *seeds_by_hand(const ncf_dataset *d, const ncf_trial *w, int n, int all, int epochs, int *best,
                                double *best_hr)
{
    static ncf_sampler smp[NCF__MAX_SEEDS];
    ncf_model *seeds[NCF__MAX_SEEDS] = {NULL}, *avg = NULL;
    ncf_dataset data = *d, with_val;
    int k, e, ok;
    memset(&with_val, 0, sizeof with_val);
    if (!w->weighted) data.weight = NULL;
    ok = n >= 1 && n <= NCF__MAX_SEEDS && (!all || ncf__train_with_validation(d, w->weighted, &with_val) == NCF_OK);
    for (k = 0; ok && k < n; k++) {
        ncf_config c = w->cfg;
        c.seed += (uint64_t)k;
        ok = ncf_model_create(&seeds[k], &c) == NCF_OK && (k || ncf_model_set_ids(seeds[k], d) == NCF_OK) &&
            ncf_sampler_init(&smp[k], all ? &with_val : &data, c.num_neg, c.seed) == NCF_OK;
    }
    if (best) *best = 0, *best_hr = -1;
    for (e = 1; ok && e <= epochs; e++) {
        for (k = 0; ok && k < n; k++) {
            float lr = seeds[k]->cfg.lr;
            seeds[k]->cfg.lr = w->decay ? ncf__decayed_lr(lr, e - 1, w->epochs) : lr;
            ok = ncf_train_epoch(seeds[k], &smp[k], e, NULL, NULL, NULL) == NCF_OK;
            seeds[k]->cfg.lr = lr;
        }
        if (ok && best && n > 1) {
            ncf_eval_opts eo = ncf_eval_opts_default();
            ncf_metrics v;
            eo.target = NCF_EVAL_VALIDATION;
            ok = ncf_model_average(&avg, seeds, n) == NCF_OK && ncf_evaluate(avg, &data, &eo, &v) == NCF_OK;
            if (ok && v.hr > *best_hr) *best = e, *best_hr = v.hr;
            ncf_model_free(avg), avg = NULL;
        }
    }
    if (ok && n == 1) avg = seeds[0], seeds[0] = NULL;
    else if (ok && ncf_model_average(&avg, seeds, n) != NCF_OK) avg = NULL;
    for (k = 0; k < n && k < NCF__MAX_SEEDS; k++) ncf_model_free(seeds[k]);
    ncf_dataset_free(&with_val);
    return avg;
}

/* Whether k seeds of r's winner fit what its rungs left of o's budget (a quarter at least): their
   run on training alone of the epochs the winner trained (where patience stopped it) and the
   final's of its chosen epochs. */
static int final_seeds_fit(const ncf_dataset *d, const ncf_tune_opts *o, const ncf_tune_report *r, int k)
{
    const ncf_trial *w = &r->runs[r->best];
    double rungs = r->planned_seconds - (r->seeds > 1 ? r->averaged.planned_seconds : 0);
    double left = o->budget - rungs > o->budget / 4 ? o->budget - rungs : o->budget / 4;
    double train = (double)ncf__all_train(d), all = train + ncf__val_users(d);
    return ncf__seeds_cost(d, o, w, k, train, ncf__val_users(d), ncf__seeds_epochs(w)) +
        ncf__seeds_cost(d, o, w, k, all, 0, w->chosen_epoch > 0 ? w->chosen_epoch : 1) <=
        left;
}

/* Whether two runs are the same: settings, rung and figures. */
static int same_run(const ncf_trial *a, const ncf_trial *b)
{
    return a->trial == b->trial && a->rung == b->rung && !memcmp(&a->cfg, &b->cfg, sizeof a->cfg) &&
        a->epochs_trained == b->epochs_trained && a->chosen_epoch == b->chosen_epoch && a->val.hr == b->val.hr &&
        a->val.ndcg == b->val.ndcg && a->planned_seconds == b->planned_seconds && a->beside == b->beside;
}

/* Whether runs[i] is in the best third of its family in its rung. */
static int in_family_third(const ncf_tune_report *r, int i)
{
    int q, from = 0, better = 0;
    for (q = 0; q < r->num_runs; q++) {
        int same = r->runs[q].rung == r->runs[i].rung && ncf__family(&r->runs[q].cfg) == ncf__family(&r->runs[i].cfg);
        from += same, better += same && ncf__run_better(&r->runs[q], &r->runs[i], NCF_METRIC_HR);
    }
    return better < (from + 2) / 3;
}

/* A run's planned seconds in a search without side features. */
static double plan_cost(const ncf_trial *t, const ncf_dataset *d, int epochs)
{
    ncf_tune_opts o = ncf_tune_opts_default();
    return ncf__plan_cost(t, &o, d, ncf__val_users(d), epochs);
}

/* Rung k of r, from the runs of rung k - 1: planned within the quarter, but for one partner that
   pairs a lone SGD run; no run left out that the quarter still paid for; a run left out for one
   taken after it (the families' best thirds first, then the rest by rank) only if it would not
   have fit in its place. */
static void later_rung_as_planned(const ncf_tune_report *r, const ncf_dataset *d, int k, double quarter)
{
    double planned = 0;
    int i, j, n = 0, sgd = 0, sgd_before = 0, partners = 0;
    for (i = 0; i < r->num_runs; i++) {
        const ncf_trial *t = &r->runs[i];
        sgd_before += t->rung == k - 1 && ncf__per_example_sgd(&t->cfg);
        if (t->rung != k) continue;
        n++, sgd += ncf__per_example_sgd(&t->cfg), partners += t->partner;
        if (!t->partner) planned += t->planned_seconds;
        CHECK(!t->partner || ncf__per_example_sgd(&t->cfg));
    }
    CHECKF(partners <= 1 && (partners == 0 || sgd % 2 == 0), "rung %d: %d partners, %d SGD runs", k, partners, sgd);
    CHECKF(sgd % 2 == 0 || sgd == sgd_before, "rung %d: a lone SGD run of %d, %d the rung before", k, sgd, sgd_before);
    CHECKF(planned <= quarter || n - partners == 1, "rung %d: %d runs planned %.3f s of %.3f", k, n, planned, quarter);
    for (i = 0; i < r->num_runs; i++) { /* each run left out */
        const ncf_trial *left = &r->runs[i];
        double cost = plan_cost(left, d, r->rung_epochs[k]);
        if (left->rung != k - 1 || ncf__ran(r, left->trial, k) >= 0) continue;
        CHECKF(planned + cost > quarter, "rung %d: trial %d left out of a quarter that paid for it", k, left->trial);
        for (j = 0; j < r->num_runs; j++) { /* each run taken after it */
            const ncf_trial *t = &r->runs[j];
            int q = t->rung == k && !t->partner ? ncf__ran(r, t->trial, k - 1) : -1, before;
            if (q < 0 || in_family_third(r, q)) continue;
            before = in_family_third(r, i) || ncf__run_better(left, &r->runs[q], NCF_METRIC_HR);
            CHECKF(!before || planned - t->planned_seconds + cost > quarter, "rung %d: trial %d taken before trial %d",
                   k, t->trial, left->trial);
        }
    }
}

/* Rung 0 of r (seed's draws): an odd count of SGD runs only when no other SGD setting drawn
   fitted an eighth of the quarter (the partner rung 0 takes), and at most one partner. */
static void rung0_paired(const ncf_tune_report *r, const ncf_dataset *d, uint64_t seed, double quarter)
{
    int i, t, sgd = 0, partners = 0;
    for (i = 0; i < r->num_runs; i++)
        if (r->runs[i].rung == 0) sgd += ncf__per_example_sgd(&r->runs[i].cfg), partners += r->runs[i].partner;
    CHECKF(partners <= 1 && (partners == 0 || sgd % 2 == 0), "rung 0: %d partners, %d SGD runs", partners, sgd);
    for (t = 0; sgd % 2 && r->num_trials < NCF__TUNE_MAX_TRIALS && t < NCF__TUNE_DRAWS; t++) {
        ncf_tune_opts o = ncf_tune_opts_default();
        ncf_trial tr;
        o.seed = seed;
        ncf__trial(d, &o, t, &tr);
        if (!ncf__per_example_sgd(&tr.cfg) || plan_cost(&tr, d, r->rung_epochs[0]) > quarter / 8) continue;
        CHECKF(ncf__ran(r, t, 0) >= 0, "rung 0: %d SGD runs, and trial %d, SGD, fitted and was left out", sgd, t);
    }
}

/* Searches of several seeds and budgets, each later rung as planned (later_rung_as_planned);
   among them at least one rung filled past the families' thirds and one partner. */
/* ncf_tune_opts.epoch_done's calls: each epoch of the runs that report, in order. */
typedef struct {
    int calls, out_of_order, last_trial, last_rung, last_epoch;
} run_epochs;

static void count_run_epochs(void *ctx, const ncf_trial *run, int epoch, double loss, const ncf_metrics *val)
{
    run_epochs *e = (run_epochs *)ctx;
    int same = run->trial == e->last_trial && run->rung == e->last_rung;
    e->out_of_order += epoch != (same ? e->last_epoch + 1 : 1) || !(loss == loss) || !val;
    e->calls++, e->last_trial = run->trial, e->last_rung = run->rung, e->last_epoch = epoch;
}

/* The epochs a search's runs report: every run's but the second of two side by side. */
static int reported_epochs(const ncf_tune_report *r)
{
    int i, n = 0, streak = 0;
    for (i = 0; i < r->num_runs; i++) {
        streak = r->runs[i].beside ? streak + 1 : 0;
        if (!(streak % 2 == 0 && streak > 0)) n += r->runs[i].epochs_trained;
    }
    return n;
}

static void test_tune_rungs_filled_and_paired(void)
{
    ncf_dataset d;
    ncf_tune_opts o = ncf_tune_opts_default();
    ncf_tune_report r;
    int seed, i, k, filled = 0, partners = 0;
    run_epochs e;
    CHECK(tune_data(&d, 0));
    o.max_epochs = 9, o.epoch_done = count_run_epochs, o.ctx = &e, o.budget = 100, o.seeds = 1;
    for (seed = 1; seed <= 4; seed++) { /* one bracket of 0.2 s to 0.8 s alone */
        double bracket = 0.2 * seed;
        o.seed = (uint64_t)seed;
        memset(&e, 0, sizeof e), e.last_trial = -1;
        CHECKF(ncf__tune_ladder(&d, &o, &r, bracket) == NCF_OK, "%s", ncf_error_text());
        CHECKF(e.calls == reported_epochs(&r) && e.out_of_order == 0, "%d epochs told, %d run, %d out of order",
               e.calls, reported_epochs(&r), e.out_of_order);
        rung0_paired(&r, &d, o.seed, bracket / 4);
        for (k = 1; k < 3; k++) later_rung_as_planned(&r, &d, k, bracket / 4);
        for (i = 0; i < r.num_runs; i++) {
            int q = r.runs[i].rung > 0 && !r.runs[i].partner ? ncf__ran(&r, r.runs[i].trial, r.runs[i].rung - 1) : -1;
            partners += r.runs[i].partner, filled += q >= 0 && !in_family_third(&r, q);
        }
        ncf_tune_report_free(&r);
    }
    printf("    %d runs past the families' thirds, %d partners\n", filled, partners);
    CHECK(filled > 0 && partners > 0);
    ncf_dataset_free(&d);
}

/* A search: the same table for a seed on 1 and 2 threads and with the test items poisoned;
   the rungs halve (a third goes on, three times the epochs), rung 0 is trial 0's defaults and
   draws; each run's figures are ncf_fit's for its settings; the final model is trained on the
   training and validation positives for the winner's chosen epochs; a budget too small for a
   run says so. */
static void test_tune_deterministic_and_blind_to_test(void)
{
    ncf_dataset d, poisoned;
    ncf_tune_opts o = ncf_tune_opts_default();
    ncf_tune_report r1, r2, r3;
    ncf_model *f1 = NULL, *f2 = NULL, *by_hand = NULL;
    int i, rung0 = 0, rung1 = 0, rung2 = 0, types[4] = {0, 0, 0, 0};
    CHECK(tune_data(&d, 0) && tune_data(&poisoned, 1));
    o.budget = 0.4, o.max_epochs = 9, o.seed = 3, o.progress = count_tune_calls;
    ncf_set_threads(1);
    CHECKF(ncf_tune(&d, &o, &r1) == NCF_OK, "%s", ncf_error_text());
    CHECK(ncf_tune_final(&f1, &d, &r1, NULL, NULL) == NCF_OK);
    ncf_set_threads(2);
    g_tune_calls = 0;
    CHECKF(ncf_tune(&poisoned, &o, &r2) == NCF_OK && g_tune_calls == r2.num_runs + 1 + (r2.seeds > 1),
           "%d calls, %d runs, %d seeds: %s", g_tune_calls, r2.num_runs, r2.seeds, ncf_error_text());
    CHECK(ncf_tune_final(&f2, &poisoned, &r2, NULL, NULL) == NCF_OK);
    CHECK(tune_rows_equal(&r1, &r2));
    CHECK(f1 && f2 && state_hash(f1) == state_hash(f2));
    for (i = 0; i < r1.num_runs; i++) {
        const ncf_trial *t = &r1.runs[i];
        rung0 += t->rung == 0, rung1 += t->rung == 1, rung2 += t->rung == 2, types[t->cfg.model]++;
        CHECK(t->epochs == r1.rung_epochs[t->rung] && t->chosen_epoch <= t->epochs_trained &&
              t->epochs_trained <= t->epochs);
    }
    CHECK(r1.rung_epochs[0] == 1 && r1.rung_epochs[1] == 3 && r1.rung_epochs[2] == 9);
    { /* SGD one example a step: after the rest of its rung, two at a time, each half its training in the
         plan (its evaluations whole: they run on one thread too) */
        int sgd0 = 0, pairs = 0;
        for (i = 0; i < r1.num_runs; i++) {
            const ncf_trial *t = &r1.runs[i];
            double alone = ncf__tune_cost(&t->cfg, &d, t->epochs),
                   fit = ncf__fit_cost(&t->cfg, (double)d.num_train, t->epochs);
            int sgd = ncf__per_example_sgd(&t->cfg);
            sgd0 += sgd && t->rung == 0;
            CHECK(fit > 0 && fit < alone && (!t->beside || sgd));
            CHECKF(fabs(t->planned_seconds - (sgd ? alone - fit / 2 : alone)) <= 1e-9 * alone,
                   "run %d: planned %g of %g", i, t->planned_seconds, alone);
            CHECK(i == 0 || r1.runs[i - 1].rung != t->rung || sgd || !ncf__per_example_sgd(&r1.runs[i - 1].cfg));
            if (t->beside) {
                CHECK(i + 1 < r1.num_runs && r1.runs[i + 1].beside && r1.runs[i + 1].rung == t->rung);
                pairs++, i++;
            }
        }
        CHECKF(sgd0 < 2 || pairs > 0, "%d runs of SGD one example a step in rung 0, %d pairs", sgd0, pairs);
        printf("    %d runs of SGD one example a step in rung 0; %d pairs in all\n", sgd0, pairs);
    }
    CHECKF(rung0 == r1.num_trials && rung0 >= 6 && rung1 >= 1 && rung1 <= rung0 && rung2 >= 1 && rung2 <= rung1,
           "rungs of %d, %d, %d runs", rung0, rung1, rung2);
    CHECK(r1.runs[0].trial == 0 && r1.runs[0].rung == 0 && !r1.too_small && !r1.stopped);
    CHECK(types[NCF_MF] + types[NCF_GMF] > 0 && types[NCF_NEUMF] > 0);
    /* the winner: the best run on validation; each run once, after its trial's run a rung below */
    for (i = 0; i < r1.num_runs; i++)
        CHECK((i == r1.best || !ncf__run_better(&r1.runs[i], &r1.runs[r1.best], NCF_METRIC_HR)) &&
              ncf__ran(&r1, r1.runs[i].trial, r1.runs[i].rung) == i &&
              (r1.runs[i].rung == 0 || ncf__ran(&r1, r1.runs[i].trial, r1.runs[i].rung - 1) < i));
    { /* the winner's last run, by hand: ncf_fit on a fresh model of its settings */
        const ncf_trial *w = &r1.runs[r1.best];
        ncf_fit_opts fo = ncf_fit_opts_default();
        ncf_fit_report fr;
        ncf_dataset view = d;
        if (!w->weighted) view.weight = NULL;
        fo.epochs = w->epochs, fo.patience = w->decay ? 0 : o.patience, fo.decay = w->decay;
        CHECK(ncf_model_create(&by_hand, &w->cfg) == NCF_OK && ncf_fit(by_hand, &view, &fo, &fr) == NCF_OK);
        CHECK(fr.chosen_epoch == w->chosen_epoch && fr.chosen.hr == w->val.hr);
        CHECK(f1 && f1->epoch == (w->chosen_epoch > 0 ? w->chosen_epoch : 1) && f1->cfg.model == w->cfg.model &&
              f1->cfg.mf_dim == w->cfg.mf_dim * r1.seeds && f1->cfg.lr == w->cfg.lr &&
              f1->cfg.num_neg == w->cfg.num_neg);
        ncf_model_free(by_hand);
    }
    { /* the seeds: as many as the budget left pays for, up to o.seeds, for MF and GMF; the final
         model is the average of the winner trained from each, by hand */
        const ncf_trial *w = &r1.runs[r1.best];
        int averaged = w->cfg.model == NCF_MF || w->cfg.model == NCF_GMF;
        ncf_model *avg = NULL;
        CHECKF(averaged ? r1.seeds >= 1 && r1.seeds <= o.seeds && final_seeds_fit(&d, &o, &r1, r1.seeds) &&
                       (r1.seeds == o.seeds || !final_seeds_fit(&d, &o, &r1, r1.seeds + 1))
                        : r1.seeds == 1,
               "%d seeds", r1.seeds);
        CHECK(r1.final_epochs == (r1.seeds > 1 ? r1.averaged.chosen_epoch : w->chosen_epoch > 0 ? w->chosen_epoch : 1));
        CHECK((avg = seeds_by_hand(&d, w, r1.seeds, 1, r1.final_epochs, NULL, NULL)) != NULL);
        CHECK(avg && f1 && state_hash(avg) == state_hash(f1));
        ncf_model_free(avg);
    }
    { /* the final data: every training positive and every validation item, ascending per user */
        ncf_dataset all;
        int u, ok = 1;
        int64_t k, vals = 0;
        CHECK(ncf__train_with_validation(&d, 0, &all) == NCF_OK);
        for (u = 0; u < d.num_users; u++) {
            int has = 0;
            vals += d.val_item[u] >= 0;
            for (k = all.user_ptr[u]; k < all.user_ptr[u + 1]; k++) {
                has += all.items[k] == d.val_item[u];
                ok &= all.train_user[k] == u && (k == all.user_ptr[u] || all.items[k - 1] < all.items[k]);
            }
            ok &= has == (d.val_item[u] >= 0) &&
                all.user_ptr[u + 1] - all.user_ptr[u] == d.user_ptr[u + 1] - d.user_ptr[u] + has;
        }
        CHECK(ok && all.num_train == d.num_train + vals && vals > 100);
        ncf_dataset_free(&all);
    }
    printf("    %d settings, %d runs, winner trial %d (%s, HR@10 %.4f on validation; %d seeds), the same on 1 and 2 "
           "threads\n",
           r1.num_trials, r1.num_runs, r1.runs[r1.best].trial,
           r1.runs[r1.best].cfg.model == NCF_MF        ? "MF"
               : r1.runs[r1.best].cfg.model == NCF_GMF ? "GMF"
                                                       : "NeuMF",
           r1.runs[r1.best].val.hr, r1.seeds);
    { /* larger budgets: the runs of a smaller one first, the same, then more; a winner as good on
         validation or better; the runs within three quarters of the budget */
        static const double budgets[] = {0.05, 0.17, 0.4, 0.55, 0.8, 1.3};
        ncf_tune_report before;
        int b, grew = 0;
        memset(&before, 0, sizeof before);
        for (b = 0; b < 6; b++) {
            double planned = 0;
            o.budget = budgets[b];
            CHECKF(ncf_tune(&d, &o, &r3) == NCF_OK, "%s", ncf_error_text());
            for (i = 0; i < r3.num_runs; i++) planned += r3.runs[i].planned_seconds;
            CHECKF(planned <= 0.75 * o.budget, "budget %g: runs planned %g s", o.budget, planned);
            if (b > 0 && !before.too_small) {
                CHECKF(r3.num_runs >= before.num_runs &&
                           !ncf__run_better(&before.runs[before.best], &r3.runs[r3.best], NCF_METRIC_HR),
                       "budget %g: %d runs, HR@10 %.4f; %g: %d, %.4f", budgets[b - 1], before.num_runs,
                       before.runs[before.best].val.hr, o.budget, r3.num_runs, r3.runs[r3.best].val.hr);
                for (i = 0; i < before.num_runs && i < r3.num_runs; i++)
                    CHECKF(same_run(&before.runs[i], &r3.runs[i]), "budget %g's run %d differs at %g", budgets[b - 1],
                           i, o.budget);
                grew += r3.num_runs > before.num_runs;
            }
            ncf_tune_report_free(&before);
            before = r3;
        }
        CHECK(grew >= 4 && !before.too_small && before.num_trials > r1.num_trials);
        ncf_tune_report_free(&before);
    }
    o.budget = 1e-6;
    CHECK(ncf_tune(&d, &o, &r3) == NCF_OK && r3.too_small && r3.num_runs == 0);
    CHECK_ERR(ncf_tune_final(&by_hand, &d, &r3, NULL, NULL), NCF_ERR_ARG, "its report");
    CHECK(by_hand == NULL);
    o.budget = NAN;
    CHECK_ERR(ncf_tune(&d, &o, &r3), NCF_ERR_ARG, "budget");
    ncf_tune_report_free(&r1), ncf_tune_report_free(&r2), ncf_tune_report_free(&r3);
    ncf_model_free(f1), ncf_model_free(f2);
    ncf_dataset_free(&d), ncf_dataset_free(&poisoned);
}

/* A model of type trained two epochs from seed, with the data's ids. */
static ncf_model *seeded_model(const ncf_dataset *d, ncf_model_type type, int factors, uint64_t seed)
{
    ncf_config c = small_config(type, 1);
    ncf_sampler s;
    ncf_model *m = NULL;
    c.num_users = d->num_users, c.num_items = d->num_items, c.batch_size = 32, c.mf_dim = factors, c.seed = seed;
    c.init_sd = 0.1f, c.lr = 0.01f;
    if (ncf_model_create(&m, &c) != NCF_OK || ncf_model_set_ids(m, d) != NCF_OK ||
        ncf_sampler_init(&s, d, 4, seed) != NCF_OK || ncf_train_epoch(m, &s, 1, NULL, NULL, NULL) != NCF_OK ||
        ncf_train_epoch(m, &s, 2, NULL, NULL, NULL) != NCF_OK) {
        ncf_model_free(m);
        return NULL;
    }
    return m;
}

/* Half the trials are MF, and a third of those ALS, a family of their own, with L2 and the
   unobserved weight drawn in their ranges (another third SGD one example a step); an ALS run
   costs its rows x factors^2 and positives x factors. */
static void test_tune_draws_als_trials(void)
{
    ncf_dataset d;
    int t, w, dk, als = 0, sgd = 0, mf = 0;
    CHECK(ncf_synthetic(&d, 200, 150, 3000, 4, 2) == NCF_OK);
    for (t = 1; t <= 2000; t++) {
        ncf_config c = ncf__trial_config(&d, 5, t, &w, &dk, 0);
        mf += c.model == NCF_MF, sgd += ncf__per_example_sgd(&c);
        if (c.optimizer != NCF_OPT_ALS) continue;
        als++;
        CHECKF(c.model == NCF_MF && !dk && ncf__family(&c) == 5 && ncf__check_config(&c, "config") == NCF_OK &&
                   (c.mf_dim == 16 || c.mf_dim == 32 || c.mf_dim == 64 || c.mf_dim == 128) && c.mf_reg >= 0.01f &&
                   c.mf_reg <= 10 && c.unobserved >= 0.01f && c.unobserved <= 1,
               "trial %d: model %d, factors %d, L2 %g, unobserved %g", t, (int)c.model, c.mf_dim, c.mf_reg,
               c.unobserved);
        if (als == 1) {
            double K = c.mf_dim,
                   want = 3 *
                (NCF__ALS_ROW_WORK * (c.num_users + c.num_items) * K * K + NCF__ALS_POSITIVE_WORK * 1000 * K +
                 NCF__ALS_FIXED_WORK * 1000) /
                NCF__TUNE_RATE;
            CHECKF(fabs(ncf__fit_cost(&c, 1000, 3) - want) <= 1e-12 * want, "cost %g, want %g",
                   ncf__fit_cost(&c, 1000, 3), want);
        }
    }
    CHECKF(mf > 900 && mf < 1100 && als > mf / 4 && als < 5 * mf / 12 && sgd > mf / 4 && sgd < 5 * mf / 12,
           "%d MF trials of 2000: %d ALS, %d SGD", mf, als, sgd);
    ncf_dataset_free(&d);
}

/* A lone run of SGD one example a step takes as partner the best-ranked such run left out, and
   nothing else changes: by hand over a ranked rung of Adam and SGD runs. */
static void test_tune_partners_lone_sgd_runs(void)
{
    ncf_trial runs[6];
    int order[6] = {3, 0, 5, 1, 4, 2}, alive[6], i; /* ranked: trials 13, 10, 15, 11, 14, 12 */
    static const int sgd[6] = {0, 1, 0, 1, 0, 1};   /* trials 11, 13 and 15 are SGD one example a step */
    memset(runs, 0, sizeof runs);
    for (i = 0; i < 6; i++) {
        runs[i].trial = 10 + i, runs[i].cfg = ncf_config_default(), runs[i].cfg.model = NCF_MF;
        if (sgd[i]) runs[i].cfg.optimizer = NCF_OPT_SGD, runs[i].cfg.batch_size = 1;
    }
    alive[0] = 10, alive[1] = 11; /* one SGD run: 13, the best-ranked SGD run left out, joins it */
    CHECK(ncf__partner(runs, order, 6, alive, 2) == 13);
    alive[0] = 13; /* the best one chosen: 15 is next */
    CHECK(ncf__partner(runs, order, 6, alive, 1) == 15);
    alive[0] = 11, alive[1] = 13; /* a pair already: nothing added */
    CHECK(ncf__partner(runs, order, 6, alive, 2) == -1);
    alive[0] = 10, alive[1] = 12; /* no SGD run: nothing added */
    CHECK(ncf__partner(runs, order, 6, alive, 2) == -1);
    alive[0] = 11, alive[1] = 13, alive[2] = 15; /* three, none left out: the third stays alone */
    CHECK(ncf__partner(runs, order, 6, alive, 3) == -1);
}

/* ncf_model_average: for MF and for GMF models of different factors and seeds, every logit
   is the mean of theirs (to float rounding); the ids, rated items and epoch are the first
   model's; one model averages to itself, bit for bit; it survives a file; other types,
   mixed types and other users are refused. */
static void test_model_average(void)
{
    ncf_dataset d;
    ncf_model_type types[2] = {NCF_MF, NCF_GMF};
    int t, k, j, u, n = 0;
    float worst = 0;
    CHECK(ncf_synthetic(&d, 60, 40, 900, 2, 3) == NCF_OK);
    for (t = 0; t < 2; t++) {
        ncf_model *ms[3], *avg = NULL, *one = NULL, *back = NULL;
        int32_t users[40], items[40];
        float z[4][40], za[40], zb[40];
        void *buf = NULL;
        size_t len = 0;
        for (k = 0; k < 3; k++) CHECK((ms[k] = seeded_model(&d, types[t], k == 1 ? 8 : 4, 11 + k)) != NULL);
        if (!ms[0] || !ms[1] || !ms[2]) continue;
        CHECKF(ncf_model_average(&avg, ms, 3) == NCF_OK, "%s", ncf_error_text());
        CHECK(avg && avg->cfg.model == types[t] && avg->cfg.mf_dim == 16 && avg->epoch == 2);
        for (u = 0; avg && u < d.num_users; u++) {
            for (j = 0; j < 40; j++) users[j] = u, items[j] = j;
            for (k = 0; k < 3; k++) CHECK(ncf_predict_index(ms[k], users, items, 40, z[k]) == NCF_OK);
            CHECK(ncf_predict_index(avg, users, items, 40, z[3]) == NCF_OK);
            for (j = 0; j < 40; j++) {
                float mean = (z[0][j] + z[1][j] + z[2][j]) / 3, err = fabsf(z[3][j] - mean) / (1 + fabsf(mean));
                worst = err > worst ? err : worst, n++;
            }
        }
        CHECKF(worst < 1e-5f, "the averaged logit is %g off the mean", worst);
        if (avg) {
            char a[32], b[32];
            CHECK(avg->rated_ptr && !memcmp(avg->rated_ptr, ms[0]->rated_ptr, sizeof(int64_t) * (d.num_users + 1)) &&
                  !memcmp(avg->rated, ms[0]->rated, (size_t)ms[0]->rated_ptr[d.num_users]));
            CHECK(ncf_id(avg, NCF_USER, 7, a, sizeof a) > 0 && ncf_id(ms[0], NCF_USER, 7, b, sizeof b) > 0 &&
                  !strcmp(a, b));
            CHECK(ncf_find(avg, NCF_ITEM, b) == ncf_find(ms[0], NCF_ITEM, b));
            CHECK(ncf_save_mem(avg, NCF_SAVE_MODEL, &buf, &len) == NCF_OK && ncf_load_mem(&back, buf, len) == NCF_OK);
            CHECK(back && ncf_predict_index(back, users, items, 40, za) == NCF_OK &&
                  ncf_predict_index(avg, users, items, 40, zb) == NCF_OK && !memcmp(za, zb, sizeof za));
        }
        CHECK(ncf_model_average(&one, ms + 1, 1) == NCF_OK && one && one->num_params == ms[1]->num_params &&
              !memcmp(one->params, ms[1]->params, sizeof(float) * one->num_params));
        ncf_free(buf), ncf_model_free(avg), ncf_model_free(one), ncf_model_free(back);
        for (k = 0; k < 3; k++) ncf_model_free(ms[k]);
    }
    { /* refused: a NeuMF, MF beside GMF, other users, none, no out */
        ncf_dataset e;
        ncf_model *ms[2], *out = (ncf_model *)&e;
        CHECK(ncf_synthetic(&e, 30, 40, 300, 2, 4) == NCF_OK);
        ms[0] = seeded_model(&d, NCF_MF, 4, 1), ms[1] = seeded_model(&d, NCF_NEUMF, 4, 2);
        CHECK_ERR(ncf_model_average(&out, ms, 2), NCF_ERR_ARG, "MF models or GMF models");
        CHECK(out == NULL);
        ncf_model_free(ms[1]), ms[1] = seeded_model(&d, NCF_GMF, 4, 2);
        CHECK_ERR(ncf_model_average(&out, ms, 2), NCF_ERR_ARG, "MF models or GMF models");
        ncf_model_free(ms[1]), ms[1] = seeded_model(&e, NCF_MF, 4, 2);
        CHECK_ERR(ncf_model_average(&out, ms, 2), NCF_ERR_ARG, "30 users");
        CHECK_ERR(ncf_model_average(&out, ms, 0), NCF_ERR_ARG, "1 or more");
        CHECK_ERR(ncf_model_average(NULL, ms, 2), NCF_ERR_ARG, "NULL out");
        ncf_model_free(ms[0]), ncf_model_free(ms[1]), ncf_dataset_free(&e);
    }
    printf("    %d logits of averaged MF and GMF models, each within %.1e of the mean of theirs\n", n, worst);
    ncf_dataset_free(&d);
}

/* Seeds trained an epoch at a time through ncf_train_epoch_each: MF runs of SGD one example a
   step side by side on 2 threads, GMF runs of Adam in turn, each model the same bits as its own
   ncf_train_epoch, the mean loss the mean of theirs; a diverging model fails the call with its
   index, and what no epoch can train is refused. */
static void test_train_epoch_each_is_each_alone(void)
{
    ncf_dataset d;
    ncf_model *each[3] = {NULL}, *alone[3] = {NULL}, *twice[2];
    ncf_sampler smp[3], none[2];
    int kind, k, e, ok = 1, threads = ncf_set_threads(0);
    CHECK(tune_data(&d, 0));
    for (kind = 0; kind < 2; kind++) {
        int n = kind ? 2 : 3;
        ncf_config c = ncf_config_default();
        c.num_users = d.num_users, c.num_items = d.num_items, c.mf_dim = 8;
        if (kind == 0) c.model = NCF_MF, c.optimizer = NCF_OPT_SGD, c.batch_size = 1, c.lr = 0.03f, c.init_sd = 0.1f;
        else c.model = NCF_GMF, c.batch_size = 64, c.lr = 0.01f;
        for (k = 0; k < n; k++) {
            c.seed = 5 + (uint64_t)k;
            ok = ok && ncf_model_create(&each[k], &c) == NCF_OK && ncf_model_create(&alone[k], &c) == NCF_OK &&
                ncf_sampler_init(&smp[k], &d, c.num_neg, c.seed) == NCF_OK;
        }
        CHECK(ok);
        for (e = 1; ok && e <= 2; e++) {
            double mean = -1, loss[3], sum = 0;
            ncf_set_threads(2);
            CHECKF(ncf_train_epoch_each(each, smp, n, e, NULL, NULL, &mean) == NCF_OK, "%s", ncf_error_text());
            ncf_set_threads(1);
            for (k = 0; k < n; k++) CHECK(ncf_train_epoch(alone[k], &smp[k], e, NULL, NULL, &loss[k]) == NCF_OK);
            for (k = 0; k < n; k++) sum += loss[k];
            CHECKF(mean == sum / n && mean > 0, "%s epoch %d: mean loss %.9g, theirs %.9g", kind ? "GMF" : "MF", e,
                   mean, sum / n);
        }
        for (k = 0; k < n; k++)
            CHECKF(each[k]->epoch == 2 && state_hash(each[k]) == state_hash(alone[k]), "%s model %d differs",
                   kind ? "GMF" : "MF", k);
        each[1]->cfg.lr = 1e30f; /* (this one diverges) */
        CHECK_ERR(ncf_train_epoch_each(each, smp, n, 3, NULL, NULL, NULL), NCF_ERR_DATA, "model 1: ");
        for (k = 0; k < 3; k++) ncf_model_free(each[k]), ncf_model_free(alone[k]), each[k] = alone[k] = NULL;
    }
    {
        ncf_config c = ncf_config_default();
        c.num_users = d.num_users, c.num_items = d.num_items, c.seed = 5;
        CHECK(ncf_model_create(&twice[0], &c) == NCF_OK && ncf_sampler_init(&smp[0], &d, 4, 5) == NCF_OK);
        twice[1] = twice[0], smp[1] = smp[0];
        CHECK_ERR(ncf_train_epoch_each(twice, smp, 2, 1, NULL, NULL, NULL), NCF_ERR_ARG, "models 0 and 1 are the same");
        CHECK_ERR(ncf_train_epoch_each(twice, smp, 0, 1, NULL, NULL, NULL), NCF_ERR_ARG, "n >= 1");
        memset(none, 0, sizeof none);
        CHECK_ERR(ncf_train_epoch_each(twice, none, 1, 1, NULL, NULL, NULL), NCF_ERR_ARG, "model 0 or its sampler");
        ncf_model_free(twice[0]);
    }
    ncf_set_threads(threads);
    ncf_dataset_free(&d);
}

/* The final training of a winner of SGD one example a step from 3 seeds: the seeds train side
   by side, one a thread, and the model is the same bits on 1 and 2 threads and the same as the
   average of the three trained in turn by hand; a failing seed fails the call with its message. */
static void test_tune_final_seeds_side_by_side(void)
{
    ncf_dataset d;
    ncf_tune_report rep;
    ncf_trial run;
    ncf_model *f1 = NULL, *f2 = NULL, *avg = NULL;
    CHECK(tune_data(&d, 0));
    memset(&rep, 0, sizeof rep), memset(&run, 0, sizeof run);
    run.cfg = ncf_config_default();
    run.cfg.model = NCF_MF, run.cfg.optimizer = NCF_OPT_SGD, run.cfg.batch_size = 1, run.cfg.mf_dim = 16;
    run.cfg.num_neg = 4, run.cfg.lr = 0.03f, run.cfg.mf_reg = 0.002f, run.cfg.init_sd = 0.1f, run.cfg.seed = 5;
    run.cfg.num_users = d.num_users, run.cfg.num_items = d.num_items;
    run.decay = 1, run.epochs = 6, run.chosen_epoch = 4;
    rep.runs = &run, rep.num_runs = 1, rep.best = 0, rep.seeds = 3;
    ncf_set_threads(1);
    CHECKF(ncf_tune_final(&f1, &d, &rep, NULL, NULL) == NCF_OK, "%s", ncf_error_text());
    ncf_set_threads(2);
    CHECKF(ncf_tune_final(&f2, &d, &rep, NULL, NULL) == NCF_OK, "%s", ncf_error_text());
    CHECK(f1 && f2 && f1->cfg.mf_dim == 48 && f1->epoch == 4 && state_hash(f1) == state_hash(f2));
    avg = seeds_by_hand(&d, &run, 3, 1, 4, NULL, NULL);
    CHECK(avg && f1 && state_hash(avg) == state_hash(f1));
    ncf_model_free(f2), f2 = NULL;
    { /* data without validation (a log loaded with nothing held out): trained on all its positives */
        ncf_dataset everything;
        CHECK(ncf__train_with_validation(&d, 0, &everything) == NCF_OK);
        everything.raw_user = d.raw_user, everything.raw_item = d.raw_item; /* (d's ids, lent) */
        CHECKF(ncf_tune_final(&f2, &everything, &rep, NULL, NULL) == NCF_OK, "%s", ncf_error_text());
        CHECK(f2 && f1 && f2->epoch == 4 && state_hash(f2) == state_hash(f1));
        everything.raw_user = everything.raw_item = NULL;
        ncf_model_free(f2), f2 = NULL, ncf_dataset_free(&everything);
    }
    run.cfg.lr = 1000; /* (every seed diverges) */
    CHECK_ERR(ncf_tune_final(&f2, &d, &rep, NULL, NULL), NCF_ERR_DATA, "model 0: ");
    CHECK(f2 == NULL);
    ncf_model_free(avg), ncf_model_free(f1), ncf_dataset_free(&d);
}

/* The final's seeds choose their epochs: trained on training alone, in step, their average
   evaluated on validation after each epoch, the epoch it did best at is the final's (patience
   stopping a run with a constant rate; a decayed one training its whole schedule), the same by
   hand, on 1 and 2 threads and with the test items poisoned; the final model is those seeds
   trained on training + validation for that many epochs. */
static void test_tune_seeds_choose_their_epochs(void)
{
    ncf_dataset d, poisoned;
    ncf_tune_opts o = ncf_tune_opts_default();
    ncf_trial run;
    int sgd, differ = 0; /* (runs where the average chose other epochs than the first seed alone) */
    CHECK(tune_data(&d, 0) && tune_data(&poisoned, 1));
    o.seeds = 3, o.patience = 2, o.budget = 1e6;
    for (sgd = 0; sgd < 2; sgd++) {
        ncf_tune_report r1, r2;
        ncf_model *final = NULL, *by_hand = NULL;
        int best = -1;
        double hr = -1;
        memset(&run, 0, sizeof run);
        run.cfg = ncf_config_default();
        run.cfg.model = NCF_MF, run.cfg.mf_dim = 16, run.cfg.num_users = d.num_users, run.cfg.num_items = d.num_items;
        run.cfg.seed = 7, run.epochs = 8, run.rung = 2;
        if (sgd)
            run.cfg.optimizer = NCF_OPT_SGD, run.cfg.batch_size = 1, run.cfg.num_neg = 4, run.cfg.lr = 0.03f,
            run.cfg.mf_reg = 0.002f, run.cfg.init_sd = 0.1f, run.decay = 1;
        else run.cfg.lr = 0.01f, run.cfg.num_neg = 2, run.cfg.batch_size = 256;
        CHECKF(ncf__tune_run(&d, &o, &run, 0) == NCF_OK, "%s", ncf_error_text()); /* (the run: its own epoch) */
        memset(&r1, 0, sizeof r1), memset(&r2, 0, sizeof r2);
        r1.runs = r2.runs = &run, r1.num_runs = r2.num_runs = 1;
        ncf_set_threads(1);
        CHECKF(ncf__plan_final(&d, &o, &r1, 0, time(NULL)) == NCF_OK, "%s", ncf_error_text());
        ncf_set_threads(2);
        CHECKF(ncf__plan_final(&poisoned, &o, &r2, 0, time(NULL)) == NCF_OK, "%s", ncf_error_text());
        CHECK(r1.seeds == 3 && r1.averaged.rung == 3 && r1.averaged.trial == run.trial &&
              r1.final_epochs == r1.averaged.chosen_epoch && r1.averaged.chosen_epoch >= 1 &&
              r1.planned_seconds == r1.averaged.planned_seconds && r1.planned_seconds > 0);
        CHECK(r1.final_epochs == r2.final_epochs && r1.averaged.val.hr == r2.averaged.val.hr &&
              r1.averaged.val.ndcg == r2.averaged.val.ndcg && r1.averaged.epochs_trained == r2.averaged.epochs_trained);
        CHECKF(sgd ? r1.averaged.epochs_trained == run.epochs
                   : r1.averaged.epochs_trained == run.epochs ||
                       (r1.averaged.epochs_trained >= r1.averaged.chosen_epoch + o.patience &&
                        r1.averaged.epochs_trained >= run.chosen_epoch),
               "%d epochs trained, the best %d", r1.averaged.epochs_trained, r1.averaged.chosen_epoch);
        if (!sgd) { /* patience waits for the winner's own epoch: its run was still improving there */
            ncf_trial late = run;
            ncf_tune_report r3;
            memset(&r3, 0, sizeof r3), late.chosen_epoch = run.epochs, r3.runs = &late, r3.num_runs = 1;
            CHECKF(ncf__plan_final(&d, &o, &r3, 0, time(NULL)) == NCF_OK, "%s", ncf_error_text());
            CHECKF(r3.averaged.epochs_trained == run.epochs && r3.averaged.chosen_epoch >= r1.averaged.chosen_epoch &&
                       r3.averaged.val.hr >= r1.averaged.val.hr,
                   "the winner best at epoch %d: its seeds trained %d epochs, best at %d (%d before)", run.epochs,
                   r3.averaged.epochs_trained, r3.averaged.chosen_epoch, r1.averaged.chosen_epoch);
            printf("    Adam, its run best at its last epoch %d: the seeds train all %d, best at %d\n", run.epochs,
                   r3.averaged.epochs_trained, r3.averaged.chosen_epoch);
        }
        by_hand = seeds_by_hand(&d, &run, 3, 0, r1.averaged.epochs_trained, &best, &hr);
        CHECKF(by_hand && best == r1.averaged.chosen_epoch && hr == r1.averaged.val.hr, "by hand epoch %d HR %.4f",
               best, hr);
        ncf_model_free(by_hand);
        differ += r1.final_epochs != run.chosen_epoch;
        CHECKF(ncf_tune_final(&final, &d, &r1, NULL, NULL) == NCF_OK, "%s", ncf_error_text());
        by_hand = seeds_by_hand(&d, &run, 3, 1, r1.final_epochs, NULL, NULL);
        CHECK(final && by_hand && final->epoch == r1.final_epochs && final->cfg.mf_dim == 48 &&
              state_hash(final) == state_hash(by_hand));
        printf("    %s: the average of 3 seeds best at epoch %d of %d (HR@10 %.4f); its first seed alone at %d "
               "(%.4f)\n",
               sgd ? "SGD one example a step, decayed" : "Adam", r1.averaged.chosen_epoch, r1.averaged.epochs_trained,
               r1.averaged.val.hr, run.chosen_epoch, run.val.hr);
        ncf_model_free(final), ncf_model_free(by_hand);
        o.max_seconds = 1e-9; /* (past it: the winner once, for its own epochs) */
        memset(&r2, 0, sizeof r2), r2.runs = &run, r2.num_runs = 1;
        CHECK(ncf__plan_final(&d, &o, &r2, 0, time(NULL) - 5) == NCF_OK && r2.seeds == 1 && r2.stopped &&
              r2.final_epochs == (run.chosen_epoch > 0 ? run.chosen_epoch : 1) && r2.averaged.rung == -1 &&
              r2.planned_seconds == 0);
        o.max_seconds = 0;
    }
    CHECK(differ > 0);
    ncf_dataset_free(&d), ncf_dataset_free(&poisoned);
}

/* ---- ALS: the whole matrix by alternating least squares ---- */

/* x = M^-1 b for a K x K system (K <= 8), by Gaussian elimination with partial pivoting. */
static void solve_small(double *M, double *b, int K, double *x)
{
    int c, r, k;
    for (c = 0; c < K; c++) {
        int p = c;
        for (r = c + 1; r < K; r++)
            if (fabs(M[r * K + c]) > fabs(M[p * K + c])) p = r;
        for (k = 0; k < K; k++) {
            double t = M[c * K + k];
            M[c * K + k] = M[p * K + k], M[p * K + k] = t;
        }
        {
            double t = b[c];
            b[c] = b[p], b[p] = t;
        }
        for (r = c + 1; r < K; r++) {
            double f = M[r * K + c] / M[c * K + c];
            for (k = c; k < K; k++) M[r * K + k] -= f * M[c * K + k];
            b[r] -= f * b[c];
        }
    }
    for (c = K - 1; c >= 0; c--) {
        double s = b[c];
        for (k = c + 1; k < K; k++) s -= M[c * K + k] * x[k];
        x[c] = s / M[c * K + c];
    }
}

/* The confidence of cell (u, i): its positive's weight (1 unweighted), or -1 for no positive. */
static double cell_weight(const ncf_dataset *d, int u, int i)
{
    int64_t j;
    for (j = d->user_ptr[u]; j < d->user_ptr[u + 1]; j++)
        if (d->items[j] == i) return d->weight ? d->weight[j] : 1.0;
    return -1;
}

/* Side rows X [n][K] solved exactly against Y [ny][K], by the normal equations written from the
   loss over every cell (side 0: X the users; 1: the items), each row rounded to float as the
   model keeps it. */
static void als_by_hand(const ncf_dataset *d, int side, float *X, const float *Y, int K, double w0, double lambda)
{
    int n = side ? d->num_items : d->num_users, ny = side ? d->num_users : d->num_items, r, o, a, b;
    for (r = 0; r < n; r++) {
        double M[64], v[8], x[8];
        memset(M, 0, sizeof M), memset(v, 0, sizeof v);
        for (o = 0; o < ny; o++) {
            double c = side ? cell_weight(d, o, r) : cell_weight(d, r, o), w = c < 0 ? w0 : c;
            const float *y = Y + (size_t)o * K;
            for (a = 0; a < K; a++) {
                for (b = 0; b < K; b++) M[a * K + b] += w * y[a] * y[b];
                if (c >= 0) v[a] += c * y[a];
            }
        }
        for (a = 0; a < K; a++) M[a * K + a] += lambda;
        solve_small(M, v, K, x);
        for (a = 0; a < K; a++) X[(size_t)r * K + a] = (float)x[a];
    }
}

/* The objective over every cell, by brute force, over the training positives. */
static double als_loss_by_hand(const ncf_model *m, const ncf_dataset *d)
{
    int u, i, k, K = m->cfg.mf_dim;
    double l = 0;
    for (u = 0; u < d->num_users; u++)
        for (i = 0; i < d->num_items; i++) {
            double c = cell_weight(d, u, i), s = 0;
            for (k = 0; k < K; k++) s += (double)m->gmf_user[u * K + k] * m->gmf_item[i * K + k];
            l += c < 0 ? m->cfg.unobserved * s * s : c * (1 - s) * (1 - s);
        }
    for (u = 0; u < d->num_users * K; u++) l += m->cfg.mf_reg * (double)m->gmf_user[u] * m->gmf_user[u];
    for (i = 0; i < d->num_items * K; i++) l += m->cfg.mf_reg * (double)m->gmf_item[i] * m->gmf_item[i];
    return l / (double)d->num_train;
}

/* An ALS epoch of 3 factors (conjugate gradients exact in 3 steps) is the users' then the items'
   rows solved from the normal equations by hand, with weights and without; its loss is the
   objective summed over every cell; the objective never rises; the biases are 0. */
static void test_als_epoch_solves_the_normal_equations(void)
{
    int weighted;
    for (weighted = 0; weighted < 2; weighted++) {
        ncf_dataset d;
        ncf_sampler s;
        ncf_model *m = NULL;
        ncf_config c = small_config(NCF_MF, 0);
        float *X, *Y;
        double loss = 0, before = 1e300, worst = 0;
        int64_t j;
        int e, k;
        CHECK(ncf_synthetic(&d, 30, 25, 300, 3, 4) == NCF_OK);
        if (weighted) {
            d.weight = (float *)malloc(sizeof(float) * (size_t)d.num_train);
            for (j = 0; j < d.num_train; j++) d.weight[j] = 1.0f + (float)(j % 5) * 1.75f;
        }
        c.num_users = d.num_users, c.num_items = d.num_items, c.optimizer = NCF_OPT_ALS;
        c.mf_reg = 0.05f, c.unobserved = 0.2f;
        CHECK(ncf_model_create(&m, &c) == NCF_OK && ncf_sampler_init(&s, &d, 4, 1) == NCF_OK);
        if (!m) return;
        randomize(m, 9, 0.5f);
        X = (float *)malloc(sizeof(float) * (size_t)d.num_users * 3);
        Y = (float *)malloc(sizeof(float) * (size_t)d.num_items * 3);
        memcpy(Y, m->gmf_item, sizeof(float) * (size_t)d.num_items * 3);
        als_by_hand(&d, 0, X, Y, 3, c.unobserved, c.mf_reg);
        als_by_hand(&d, 1, Y, X, 3, c.unobserved, c.mf_reg);
        CHECK(ncf_train_epoch(m, &s, 1, NULL, NULL, &loss) == NCF_OK);
        for (k = 0; k < d.num_users * 3; k++) {
            double err = fabs(m->gmf_user[k] - X[k]) / (1 + fabs(X[k]));
            if (err > worst) worst = err;
        }
        for (k = 0; k < d.num_items * 3; k++) {
            double err = fabs(m->gmf_item[k] - Y[k]) / (1 + fabs(Y[k]));
            if (err > worst) worst = err;
        }
        CHECKF(worst < 1e-5, "weighted %d: a row %g from the normal equations' solution", weighted, worst);
        CHECKF(m->user_bias[3] == 0 && m->item_bias[2] == 0 && m->b_out[0] == 0, "biases %g %g %g", m->user_bias[3],
               m->item_bias[2], m->b_out[0]);
        for (e = 1; e <= 5; e++) {
            double want;
            if (e > 1) CHECK(ncf_train_epoch(m, &s, e, NULL, NULL, &loss) == NCF_OK);
            want = als_loss_by_hand(m, &d);
            CHECKF(fabs(loss - want) <= 1e-6 * want, "epoch %d: loss %.9g, by hand %.9g", e, loss, want);
            CHECKF(loss <= before * (1 + 1e-9), "epoch %d: the objective rose from %.9g to %.9g", e, before, loss);
            before = loss;
        }
        CHECK(m->epoch == 5);
        free(X), free(Y);
        ncf_model_free(m), ncf_dataset_free(&d);
    }
}

/* The normal equations of a row fitted to the other side's rows Y [ny][K], the cells of
   given[0..n) (sorted) weighing 1 with target 1, every other w0 with target 0, solved by hand. */
static void als_fold_by_hand(const float *Y, int ny, int K, const int32_t *given, int n, double w0, double lambda,
                             double *x)
{
    double M[64], v[8];
    int o, a, b, j = 0;
    memset(M, 0, sizeof M), memset(v, 0, sizeof v);
    for (o = 0; o < ny; o++) {
        int in = j < n && given[j] == o;
        const float *y = Y + (size_t)o * K;
        for (a = 0; a < K; a++) {
            for (b = 0; b < K; b++) M[a * K + b] += (in ? 1 : w0) * y[a] * y[b];
            if (in) v[a] += y[a];
        }
        while (j < n && given[j] <= o) j++;
    }
    for (a = 0; a < K; a++) M[a * K + a] += lambda;
    solve_small(M, v, K, x);
}

/* An ALS model's fold-in, of a user and of an item, is the exact solution of its training's
   least squares; the workspace form, and a fold-in without the cached Gram matrix (stale),
   give the same bits; an int8 model folds in; a singular system is refused. */
static void test_als_fold_in_solves_the_least_squares(void)
{
    static const int32_t items[] = {2, 5, 5, 11, 17}, sorted[] = {2, 5, 11, 17}, users[] = {1, 4, 9};
    ncf_dataset d;
    ncf_sampler s;
    ncf_model *m = NULL, *q = NULL;
    ncf_config c = small_config(NCF_MF, 0);
    ncf_fold_opts fo = ncf_fold_opts_default();
    float row[4], again[4];
    double x[3], worst = 0;
    void *buf = NULL;
    size_t len = 0;
    int a, side;
    CHECK(ncf_synthetic(&d, 30, 25, 300, 3, 4) == NCF_OK);
    c.num_users = d.num_users, c.num_items = d.num_items, c.optimizer = NCF_OPT_ALS, c.mf_dim = 3;
    c.mf_reg = 0.05f, c.unobserved = 0.2f;
    CHECK(ncf_model_create(&m, &c) == NCF_OK && ncf_sampler_init(&s, &d, 4, 1) == NCF_OK);
    if (!m) return;
    CHECK(ncf_train_epoch(m, &s, 1, NULL, NULL, NULL) == NCF_OK &&
          ncf_train_epoch(m, &s, 2, NULL, NULL, NULL) == NCF_OK);
    for (side = 0; side < 2; side++) {
        int n = side ? 3 : 5;
        CHECKF((side ? ncf_fold_in(m, NCF_ITEM, users, n, &fo, row) : ncf_fold_in(m, NCF_USER, items, n, &fo, row)) ==
                   NCF_OK,
               "%s", ncf_error_text());
        if (side) als_fold_by_hand(m->gmf_user, d.num_users, 3, users, 3, c.unobserved, c.mf_reg, x);
        else als_fold_by_hand(m->gmf_item, d.num_items, 3, sorted, 4, c.unobserved, c.mf_reg, x);
        for (a = 0; a < 3; a++) {
            double err = fabs(row[a] - x[a]) / (1 + fabs(x[a]));
            if (err > worst) worst = err;
        }
        CHECKF(row[3] == 0, "side %d: bias %g", side, row[3]);
    }
    CHECKF(worst < 1e-5, "a folded-in row %g from the normal equations' solution", worst);
    { /* the workspace form; then without the cache */
        ncf_fold_opts w = fo;
        w.work_size = ncf_fold_workspace_size(m, 5), w.work = malloc(w.work_size);
        CHECK(ncf_fold_in(m, NCF_USER, items, 5, &fo, row) == NCF_OK &&
              ncf_fold_in(m, NCF_USER, items, 5, &w, again) == NCF_OK && !memcmp(row, again, sizeof row));
        free(w.work);
        m->step++; /* (the cache is of another step now) */
        CHECK(ncf_fold_in(m, NCF_USER, items, 5, &fo, again) == NCF_OK && !memcmp(row, again, sizeof row));
        m->step--;
    }
    CHECK(ncf_save_mem(m, NCF_SAVE_INT8, &buf, &len) == NCF_OK && ncf_load_mem(&q, buf, len) == NCF_OK);
    if (q) {
        CHECKF(ncf_fold_in(q, NCF_USER, items, 5, &fo, again) == NCF_OK, "%s", ncf_error_text());
        for (a = 0; a < 3; a++)
            CHECKF(fabs(again[a] - row[a]) < 0.05, "int8: factor %d %g, float %g", a, again[a], row[a]);
        ncf_model_free(q);
    }
    ncf_free(buf);
    memset(m->gmf_item, 0, sizeof(float) * (size_t)d.num_items * 3), m->cfg.mf_reg = 0;
    ncf_model_params_changed(m);
    CHECK_ERR(ncf_fold_in(m, NCF_USER, items, 5, &fo, row), NCF_ERR_DATA, "singular");
    ncf_model_free(m), ncf_dataset_free(&d);
}

typedef struct {
    int calls, nan_before_end;
    int64_t done[8], total;
    double last;
} als_heard;

static void hear_als(void *user, int64_t done, int64_t total, double loss)
{
    als_heard *h = (als_heard *)user;
    if (h->calls < 8) h->done[h->calls] = done;
    h->nan_before_end += done < total && loss != loss;
    h->calls++, h->total = total, h->last = loss;
}

/* An ALS epoch reports its progress every 4,096 rows, the loss NaN until the end, which it
   reports with the epoch's loss; with or without a listener the model is the same bits. */
static void test_als_epoch_reports_progress(void)
{
    ncf_dataset d;
    ncf_sampler s;
    ncf_model *a = NULL, *b = NULL;
    ncf_config c = small_config(NCF_MF, 0);
    als_heard h;
    double la = 0, lb = 0;
    CHECK(ncf_synthetic(&d, 6000, 300, 30000, 4, 5) == NCF_OK && ncf_sampler_init(&s, &d, 4, 1) == NCF_OK);
    c.num_users = d.num_users, c.num_items = d.num_items, c.optimizer = NCF_OPT_ALS, c.mf_dim = 8, c.mf_reg = 0.1f;
    CHECK(ncf_model_create(&a, &c) == NCF_OK && ncf_model_create(&b, &c) == NCF_OK);
    if (!a || !b) return;
    memset(&h, 0, sizeof h);
    CHECK(ncf_train_epoch(a, &s, 1, hear_als, &h, &la) == NCF_OK &&
          ncf_train_epoch(b, &s, 1, NULL, NULL, &lb) == NCF_OK);
    CHECKF(h.calls == 3 && h.nan_before_end == 2 && h.total == s.num_examples, "%d calls, %d NaN, total %lld", h.calls,
           h.nan_before_end, (long long)h.total);
    CHECKF(h.done[0] == s.num_examples * 4096 / 6300 && h.done[1] == s.num_examples * 6000 / 6300 &&
               h.done[2] == s.num_examples,
           "done %lld %lld %lld", (long long)h.done[0], (long long)h.done[1], (long long)h.done[2]);
    CHECKF(h.last == la && la == lb && !memcmp(a->params, b->params, sizeof(float) * a->num_params),
           "loss heard %.9g, returned %.9g, without a listener %.9g", h.last, la, lb);
    ncf_model_free(a), ncf_model_free(b), ncf_dataset_free(&d);
}

/* Every row and every entry of the Gram matrix has one owner that sums in a fixed order. */
static void test_als_bit_identical_on_any_thread_count(void)
{
    uint64_t h1 = training_hash(1, 2), h2 = training_hash(2, 2), h3 = training_hash(3, 2);
    CHECKF(h1 == h2 && h1 == h3 && h1 > 1, "%016llx, %016llx, %016llx", (unsigned long long)h1, (unsigned long long)h2,
           (unsigned long long)h3);
}

/* ALS is for MF, takes whole epochs and no gradient steps, is saved and read back as ALS with its
   weight (a file from before it, with 0 there, still reads), and ranks far above popularity. */
static void test_als_settings_calls_and_files(void)
{
    ncf_config c = ncf_config_default();
    ncf_model *m = NULL, *b = NULL;
    ncf_dataset d;
    ncf_sampler s;
    ncf_metrics mt = {0}, pop = {0};
    void *buf = NULL;
    size_t len = 0;
    int32_t u[1] = {0}, it[1] = {1};
    float y[1] = {1};
    double loss;
    int e;
    CHECK(ncf_synthetic(&d, 200, 150, 4000, 4, 2) == NCF_OK && ncf_sample_eval_negatives(&d, 50, 1) == NCF_OK);
    c.num_users = d.num_users, c.num_items = d.num_items, c.optimizer = NCF_OPT_ALS;
    CHECK_ERR(ncf_model_create(&m, &c), NCF_ERR_ARG, "ALS trains MF");
    c.model = NCF_MF, c.mf_dim = NCF__ALS_MOST_DIM + 1;
    CHECK_ERR(ncf_model_create(&m, &c), NCF_ERR_ARG, "mf_dim up to 4096");
    c.mf_dim = 16, c.unobserved = 0;
    CHECK_ERR(ncf_model_create(&m, &c), NCF_ERR_ARG, "0 < unobserved");
    c.unobserved = NAN;
    CHECK_ERR(ncf_model_create(&m, &c), NCF_ERR_ARG, "0 < unobserved");
    c.unobserved = 0.25f, c.mf_reg = 0.1f;
    CHECK(ncf_model_create(&m, &c) == NCF_OK && ncf_sampler_init(&s, &d, 4, 1) == NCF_OK);
    if (!m) return;
    CHECK_ERR(ncf_train_step(m, u, it, y, 1, &loss), NCF_ERR_ARG, "no gradient step");
    CHECK_ERR(ncf_forward_backward(m, u, it, y, 1, &loss), NCF_ERR_ARG, "no gradient step");
    CHECK_ERR(ncf_train_examples(m, &s, 1, 0, 10, NULL, NULL, &loss), NCF_ERR_ARG, "whole epochs");
    for (e = 1; e <= 8; e++) CHECK(ncf_train_epoch(m, &s, e, NULL, NULL, &loss) == NCF_OK);
    CHECK(evaluate_k(m, &d, 10, NCF_SAMPLED, &mt) == NCF_OK);
    CHECKF(ncf_evaluate(NULL, &d, &(ncf_eval_opts){10, 0, 0, 0, 0, 0, 0, NULL}, &pop) == NCF_OK, "%s",
           ncf_error_text());
    CHECKF(mt.hr > pop.hr + 0.15, "ALS HR@10 %.4f, popularity %.4f", mt.hr, pop.hr);
    { /* a fold-in of a user's items (the least squares against the frozen items) ranks them above the
         rest: the share of (given, other) pairs in that order */
        float row[17], z[150];
        int32_t all[150];
        ncf_fold_opts fo = ncf_fold_opts_default();
        int64_t j, k, n = d.user_ptr[4] - d.user_ptr[3], above = 0;
        for (e = 0; e < d.num_items; e++) all[e] = e;
        CHECKF(ncf_fold_in(m, NCF_USER, d.items + d.user_ptr[3], (int)n, &fo, row) == NCF_OK &&
                   ncf_predict_for(m, NCF_USER, -1, row, all, d.num_items, z) == NCF_OK,
               "%s", ncf_error_text());
        for (j = d.user_ptr[3]; j < d.user_ptr[4]; j++)
            for (k = 0; k < d.num_items; k++) above += !rated_by(&d, 3, (int)k) && z[d.items[j]] > z[k];
        CHECKF(above > 0.8 * n * (d.num_items - n), "%.3f of the pairs in order",
               (double)above / ((double)n * (d.num_items - n)));
    }
    CHECK(ncf_save_mem(m, NCF_SAVE_ADAM, &buf, &len) == NCF_OK && ncf_load_mem(&b, buf, len) == NCF_OK);
    if (b) {
        float z0, z1;
        CHECK(b->cfg.optimizer == NCF_OPT_ALS && b->cfg.unobserved == 0.25f && b->epoch == 8);
        CHECK(ncf_predict_index(m, u, it, 1, &z0) == NCF_OK && ncf_predict_index(b, u, it, 1, &z1) == NCF_OK &&
              z0 == z1);
        CHECK(ncf_train_epoch(b, &s, 9, NULL, NULL, &loss) == NCF_OK); /* it trains on from the file */
        ncf_model_free(b), b = NULL;
    }
    ncf_free(buf), ncf_model_free(m), m = NULL;
    c.optimizer = NCF_OPT_ADAM; /* a file of 0.6: 0 where the weight now is */
    CHECK(ncf_model_create(&m, &c) == NCF_OK && ncf_save_mem(m, NCF_SAVE_MODEL, &buf, &len) == NCF_OK);
    if (buf) {
        uint8_t *p = (uint8_t *)buf;
        set_u32(p + NCF__HEADER_BYTES, 0), set_u32(p + len - 4, ncf__crc32(p, len - 4));
        CHECK(ncf_load_mem(&b, buf, len) == NCF_OK && b && b->cfg.unobserved == 0 && b->cfg.optimizer == NCF_OPT_ADAM);
        ncf_model_free(b);
    }
    ncf_free(buf), ncf_model_free(m), ncf_dataset_free(&d);
}
