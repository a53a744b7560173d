/* tests.c - ncf.h test suite: gradients against finite differences of an
   independent double-precision reference, Adam against hand-computed steps, the
   metrics against hand-ranked cases, the sampler against its properties, the
   loaders against files written here. Prints "N passed, N failed" last.

     ./tests                     run everything
     ./tests NAME                the tests whose names contain NAME
     ./tests --list [NAME]       their names, one a line, without running them
     ./tests --print-hash        print the determinism hash (for the NO_OMP comparison)
     ./tests --expect-hash FILE  also check this build's hash equals the one in FILE
     ./tests --write-logs DIR    the example logs the demo's checks read (plays.tsv, books.csv)
     ./tests --write-seeds DIR   small model files of every kind, the model fuzzer's seeds

   CONTENTS (each section's banner holds its tag: grep -n '>>metrics' tests.c; the table at
   >>runner lists the tests in the order they are defined; make test checks both)
      >>reference  >>kernels  >>steps  >>determinism  >>errors  >>formats  >>sampler
      >>datasets  >>evaluation  >>logs  >>serving  >>hostile  >>adversarial  >>environment
      >>metrics  >>numerics  >>persistence  >>training  >>in-place  >>saving  >>examples
      >>allocation  >>serving-threads  >>runner

   The benchmarks are tests/bench.c, the MPI suite tests/mpi.c, the fixture other builds
   check tests/fixture.c; tests/harness.h is what they share. */
#include "tests/harness.h"
#include "tests/fixture.h"

static const char *g_expect_hash_file;

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

static ncf_config small_config(ncf_model_type type, int reg)
{
    ncf_config c = ncf_config_default();
    c.model = type;
    c.num_users = 5, c.num_items = 7;
    c.mf_dim = 3;
    c.num_layers = 4;
    c.layers[0] = 8, c.layers[1] = 6, c.layers[2] = 5, c.layers[3] = 4;
    if (reg) {
        c.mf_reg = 0.03f;
        c.mlp_reg[0] = 0.02f, c.mlp_reg[1] = 0.05f, c.mlp_reg[2] = 0.01f, c.mlp_reg[3] = 0.07f;
    }
    c.seed = 7;
    return c;
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

/* ---- >>kernels: every GEMM path against its definition --------------------------------------- */

/* Every GEMM path (full register tiles, narrow and half-width edges, the last rows of a range
   as a tile overlapping the one before, the scalar tail, k blocks past NCF__KC, each flag)
   against the definition, bit for bit: each output summed in ascending k from its start (C,
   the bias or 0) with NCF__MADD, NCF__ADD adding C once at the end, and the ReLU as x < 0 ? 0 :
   x, which keeps NaN and -0. Row 1 of A is all -0 (with a bias of -0 its outputs are -0) and
   row 2 holds a NaN. A range that starts a tile in leaves the rows before it as they were.
   Ranges of NCF__PACK_TILES tiles and more whose panels of B span more than NCF__PACK_SPAN
   floats read them copied (M 3 MR + 1 with N 64 or 70 and K 100, or K 300's first block). */
static void test_every_gemm_path_matches_its_definition(void)
{
    static const int Ms[] = {1, 3, 8, 13, 2 * NCF__MR + 1, 3 * NCF__MR + 1}, Ns[] = {3, 8, 16, 24, 40, 64, 70},
                     Ks[] = {1, 7, 100, 300};
    static const int flags[] = {0, NCF__ACC, NCF__RELU, NCF__ADD | NCF__RELU, NCF__ACC | NCF__RELU};
    enum { MMAX = 3 * NCF__MR + 1, NMAX = 70, KMAX = 300 };
    static float A[MMAX * KMAX], B[KMAX * NMAX], bias[NMAX], C0[MMAX * NMAX], C[MMAX * NMAX], R[MMAX * NMAX];
    int mi, ni, ki, f, i, j, k, bad = 0, cases = 0, nan_kept = 0, negzero_kept = 0;
    uint64_t x = 99;
    for (i = 0; i < MMAX * KMAX; i++)
        x = x * 6364136223846793005ull + 1, A[i] = (float)((x >> 40) % 2001) / 1000.0f - 1.0f;
    for (i = 0; i < KMAX * NMAX; i++)
        x = x * 6364136223846793005ull + 1, B[i] = (float)((x >> 40) % 2001) / 1000.0f - 1.0f;
    for (i = 0; i < MMAX * NMAX; i++)
        x = x * 6364136223846793005ull + 1, C0[i] = (float)((x >> 40) % 2001) / 1000.0f - 1.0f;
    for (j = 0; j < NMAX; j++) bias[j] = j % 3 ? 0.25f * (float)(j % 5) - 0.5f : -0.0f;
    for (k = 0; k < KMAX; k++) A[1 * KMAX + k] = -0.0f, A[2 * KMAX + k] = k == 3 ? NAN : A[2 * KMAX + k];
    for (mi = 0; mi < 6; mi++)
        for (ni = 0; ni < 7; ni++)
            for (ki = 0; ki < 4; ki++)
                for (f = 0; f < 5; f++) {
                    int M = Ms[mi], N = Ns[ni], K = Ks[ki], fl = flags[f];
                    for (i = 0; i < M; i++)
                        for (j = 0; j < N; j++) {
                            float acc = fl & NCF__ACC ? C0[i * N + j] : bias[j];
                            for (k = 0; k < K; k++) acc = NCF__MADD(A[i * KMAX + k], B[k * N + j], acc);
                            if (fl & NCF__ADD) acc = C0[i * N + j] + acc;
                            R[i * N + j] = (fl & NCF__RELU) && acc < 0.0f ? 0.0f : acc;
                        }
                    memcpy(C, C0, sizeof(float) * (size_t)M * N);
                    ncf__gemm_rows(C, N, A, KMAX, 1, B, N, fl & NCF__ACC ? NULL : bias, 0, M, N, K, fl);
                    cases++;
                    for (i = 0; i < M * N; i++) {
                        if (memcmp(&C[i], &R[i], sizeof(float))) {
                            if (bad++ < 3)
                                printf("    M %d N %d K %d flags %d: C[%d] %.9g, the definition %.9g\n", M, N, K, fl, i,
                                       C[i], R[i]);
                        }
                        if ((fl & NCF__RELU) && i / N == 2 && C[i] != C[i]) nan_kept++;
                        if ((fl & NCF__RELU) && !(fl & (NCF__ACC | NCF__ADD)) && i / N == 1 && bias[i % N] == 0.0f &&
                            signbit(bias[i % N]) && signbit(C[i]))
                            negzero_kept++;
                    }
                    if (M <= NCF__MR) continue;
                    memcpy(C, C0, sizeof(float) * (size_t)M * N); /* rows [NCF__MR, M) only */
                    ncf__gemm_rows(C, N, A, KMAX, 1, B, N, fl & NCF__ACC ? NULL : bias, NCF__MR, M, N, K, fl);
                    cases++;
                    for (i = 0; i < M * N; i++)
                        if (memcmp(&C[i], i / N < NCF__MR ? &C0[i] : &R[i], sizeof(float)) && bad++ < 3)
                            printf("    M %d N %d K %d flags %d, rows from %d: C[%d] %.9g\n", M, N, K, fl, NCF__MR, i,
                                   C[i]);
                }
    CHECKF(bad == 0, "%d outputs differ from the definition", bad);
    CHECK(nan_kept > 0 && negzero_kept > 0); /* the special values did reach the ReLU */
    printf("    %d cases, %d outputs unlike the definition; the ReLU passed %d NaN and %d -0\n", cases, bad, nan_kept,
           negzero_kept);
}

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

/* ---- >>errors: bad arguments refused, nothing applied ---------------------------------------- */

static void test_bad_arguments_refused_and_nothing_applied(void)
{
    ncf_config c = small_config(NCF_NEUMF, 0);
    ncf_model *m = NULL;
    ncf_dataset d;
    ncf_sampler s;
    ncf_metrics met;
    int32_t u[2] = {0, 5}, it[2] = {0, 1};
    float y[2] = {1, 0};
    double loss;
    CHECK_ERR(ncf_model_create(NULL, &c), NCF_ERR_ARG, "NULL");
    CHECK_ERR(ncf_model_create(&m, NULL), NCF_ERR_ARG, "NULL");
    c.num_users = 0;
    CHECK_ERR(ncf_model_create(&m, &c), NCF_ERR_ARG, "num_users");
    CHECK(m == NULL);
    c = small_config(NCF_NEUMF, 0), c.mf_dim = 0;
    CHECK_ERR(ncf_model_create(&m, &c), NCF_ERR_ARG, "mf_dim");
    c = small_config(NCF_NEUMF, 0), c.layers[0] = 7;
    CHECK_ERR(ncf_model_create(&m, &c), NCF_ERR_ARG, "even");
    c = small_config(NCF_NEUMF, 0), c.layers[2] = 0;
    CHECK_ERR(ncf_model_create(&m, &c), NCF_ERR_ARG, "layer 2");
    c = small_config(NCF_MLP, 0), c.num_layers = 1;
    CHECK_ERR(ncf_model_create(&m, &c), NCF_ERR_ARG, "layer sizes");
    c = small_config(NCF_NEUMF, 0), c.lr = 0;
    CHECK_ERR(ncf_model_create(&m, &c), NCF_ERR_ARG, "lr");
    c = small_config(NCF_NEUMF, 0), c.model = (ncf_model_type)9;
    CHECK_ERR(ncf_model_create(&m, &c), NCF_ERR_ARG, "model type");
    c = small_config(NCF_NEUMF, 0);
    CHECK(ncf_model_create(&m, &c) == NCF_OK);
    if (!m) return;
    CHECK_ERR(ncf_train_step(m, u, it, y, 2, &loss), NCF_ERR_ARG, "outside"); /* user 5 of 5 */
    u[1] = -1;
    CHECK_ERR(ncf_forward_backward(m, u, it, y, 2, &loss), NCF_ERR_ARG, "batch position 1");
    u[1] = 1;
    CHECK_ERR(ncf_train_step(m, NULL, it, y, 2, &loss), NCF_ERR_ARG, "NULL");
    CHECK_ERR(ncf_train_step(m, u, it, NULL, 2, &loss), NCF_ERR_ARG, "NULL");
    CHECK_ERR(ncf_train_step(m, u, it, y, 0, &loss), NCF_ERR_ARG, "size 0");
    CHECK_ERR(ncf_loss(NULL, u, it, y, 2, &loss), NCF_ERR_ARG, "NULL");
    CHECK_ERR(ncf_predict_index(m, u, it, 2, NULL), NCF_ERR_ARG, "NULL");
    CHECK(m->step == 0); /* nothing applied */
    CHECK_ERR(ncf_sampler_init(&s, NULL, 4, 1), NCF_ERR_ARG, "dataset");
    CHECK_ERR(evaluate_k(m, NULL, 10, NCF_SAMPLED, &met), NCF_ERR_ARG, "dataset");
    CHECK(ncf_synthetic(&d, 50, 40, 500, 4, 1) == NCF_OK);
    CHECK_ERR(evaluate_k(m, &d, 10, NCF_SAMPLED, &met), NCF_ERR_ARG, "the data has 50 users");
    CHECK_ERR(ncf_sample_eval_negatives(&d, 0, 1), NCF_ERR_ARG, "n > 0");
    ncf_dataset_free(&d);
    CHECK_ERR(ncf_synthetic(&d, 0, 40, 500, 4, 1), NCF_ERR_ARG, "ncf_synthetic");
    ncf_dataset_free(NULL);
    ncf_model_free(NULL);
    ncf_model_free(m);
}

/* ---- >>formats: the MovieLens formats and the paper's split, read and refused ---------------- */

static const char *RATINGS_ROWS[] = {
    /* user item rating time */
    "7 10 5 100", "7 20 3 200", "7 30 4 150", "3 10 5 50",
    "3 40 1 60",  "9 30 2 10",  "9 20 2 10", /* same time: the later line is the test item */
    "5 10 4 10",                             /* one rating only: dropped with min_ratings 2 */
    "3 10 2 70",                             /* duplicate (3,10): the later one counts, and it is now user 3's latest */
};

static void write_ratings(const char *name, const char *sep, const char *header, const char *rating_fmt)
{
    char text[2048] = "";
    size_t k;
    if (header) strcat(text, header), strcat(text, "\n");
    for (k = 0; k < sizeof RATINGS_ROWS / sizeof *RATINGS_ROWS; k++) {
        int u, i, r, t;
        char line[128], rs[16];
        sscanf(RATINGS_ROWS[k], "%d %d %d %d", &u, &i, &r, &t);
        snprintf(rs, sizeof rs, rating_fmt, (double)r);
        snprintf(line, sizeof line, "%d%s%d%s%s%s%d\n", u, sep, i, sep, rs, sep, t);
        strcat(text, line);
    }
    write_file(name, text);
}

/* Users 3,7,9 -> 0,1,2; items 10,20,30,40 -> 0,1,2,3 (user 5 and nothing else dropped). */
static void check_hand_dataset_quiet(const ncf_dataset *d)
{
    CHECK(d->num_users == 3 && d->num_items == 4);
    if (d->num_users != 3 || d->num_items != 4) return;
    CHECK(d->raw_user[0] == 3 && d->raw_user[1] == 7 && d->raw_user[2] == 9);
    CHECK(d->raw_item[0] == 10 && d->raw_item[1] == 20 && d->raw_item[2] == 30 && d->raw_item[3] == 40);
    /* user 3: 10@50, 40@60, 10@70 -> (3,10) collapses to time 70, the latest: test 10, train {40} */
    CHECK(d->test_item[0] == 0);
    CHECK(d->user_ptr[1] - d->user_ptr[0] == 1 && d->items[d->user_ptr[0]] == 3);
    /* user 7: 10@100, 20@200, 30@150 -> test 20, train {10, 30} */
    CHECK(d->test_item[1] == 1);
    CHECK(d->user_ptr[2] - d->user_ptr[1] == 2 && d->items[d->user_ptr[1]] == 0 && d->items[d->user_ptr[1] + 1] == 2);
    /* user 9: 30@10 then 20@10 -> tie, the later line wins: test 20, train {30} */
    CHECK(d->test_item[2] == 1);
    CHECK(d->user_ptr[3] - d->user_ptr[2] == 1 && d->items[d->user_ptr[2]] == 2);
    CHECK(d->num_train == 4);
    CHECK(d->train_user[0] == 0 && d->train_user[1] == 1 && d->train_user[2] == 1 && d->train_user[3] == 2);
}

static void check_hand_dataset(const ncf_dataset *d, const char *what)
{
    printf("    %s\n", what);
    check_hand_dataset_quiet(d);
}

static void test_every_movielens_format_loads_the_same_data(void)
{
    ncf_dataset d;
    ncf_dataset_opts o = ncf_dataset_opts_default();
    o.min_ratings = 2;
    o.eval_negatives = 1;
    write_ratings("ratings.dat", "::", NULL, "%.0f");
    write_ratings("ratings.csv", ",", "userId,movieId,rating,timestamp", "%.1f");
    write_ratings("u.data", "\t", NULL, "%.0f");
    write_ratings("ratings.txt", "\t", NULL, "%.0f");
    CHECK(ncf_load_dataset(&d, path_in_dir("ratings.dat"), &o) == NCF_OK);
    check_hand_dataset(&d, "ratings.dat (user::item::rating::time)");
    CHECK(d.num_eval_neg == 1);
    ncf_dataset_free(&d);
    CHECK(ncf_load_dataset(&d, path_in_dir("ratings.csv"), &o) == NCF_OK);
    check_hand_dataset(&d, "ratings.csv (header, decimal ratings)");
    ncf_dataset_free(&d);
    CHECK(ncf_load_dataset(&d, path_in_dir("u.data"), &o) == NCF_OK);
    check_hand_dataset(&d, "u.data (tab separated)");
    ncf_dataset_free(&d);
    CHECKF(ncf_load_dataset(&d, path_in_dir("ratings.txt"), &o) == NCF_OK, "%s", ncf_error_text());
    check_hand_dataset(&d, "ratings.txt, TAB found from its lines");
    ncf_dataset_free(&d);
    o.format = NCF_FORMAT_TAB; /* the override */
    CHECK(ncf_load_dataset(&d, path_in_dir("ratings.txt"), &o) == NCF_OK);
    check_hand_dataset(&d, "ratings.txt with the format given");
    ncf_dataset_free(&d);
    o.format = NCF_FORMAT_AUTO;
    o.min_ratings = 0; /* user 5 stays: 4 users, and its only rating stays in training (nothing held out) */
    CHECK(ncf_load_dataset(&d, path_in_dir("ratings.dat"), &o) == NCF_OK);
    CHECK(d.num_users == 4 && d.raw_user[1] == 5 && d.test_item[1] == -1 && d.user_ptr[2] == d.user_ptr[1] + 1 &&
          d.items[d.user_ptr[1]] == 0);
    ncf_dataset_free(&d);
    o.min_ratings = 3; /* users 3 and 7 (3 ratings each, counted before collapsing) */
    CHECK(ncf_load_dataset(&d, path_in_dir("ratings.dat"), &o) == NCF_OK);
    CHECK(d.num_users == 2 && d.num_items == 4 && d.raw_user[0] == 3 && d.raw_user[1] == 7);
    ncf_dataset_free(&d);
    o.min_ratings = 4; /* nobody */
    CHECK_ERR(ncf_load_dataset(&d, path_in_dir("ratings.dat"), &o), NCF_ERR_DATA, "no user has at least 4 ratings");
    ncf_dataset_free(&d);
}

/* Writes d as the paper's three files under PREFIX. */
static void write_ncf_split(const ncf_dataset *d, const char *prefix)
{
    char p[300];
    FILE *f;
    int u, j;
    int64_t k;
    snprintf(p, sizeof p, "%s.train.rating", prefix);
    f = fopen(p, "w");
    for (u = 0; u < d->num_users; u++)
        for (k = d->user_ptr[u]; k < d->user_ptr[u + 1]; k++) fprintf(f, "%d\t%d\t1\t0\n", u, d->items[k]);
    fclose(f);
    snprintf(p, sizeof p, "%s.test.rating", prefix);
    f = fopen(p, "w");
    for (u = 0; u < d->num_users; u++) fprintf(f, "%d\t%d\t5\t978824330\n", u, d->test_item[u]);
    fclose(f);
    snprintf(p, sizeof p, "%s.test.negative", prefix);
    f = fopen(p, "w");
    for (u = 0; u < d->num_users; u++) {
        fprintf(f, "(%d,%d)", u, d->test_item[u]);
        for (j = 0; j < d->num_eval_neg; j++) fprintf(f, "\t%d", d->eval_neg[(size_t)u * d->num_eval_neg + j]);
        fprintf(f, "\n");
    }
    fclose(f);
}

/* ratings.csv columns are read by name, in any order and with extra columns; a UTF-8 byte
   order mark is skipped in every format; a headerless file keeps its first rating whatever it
   starts with; an unknown header is refused with the columns expected. */
static void test_columns_read_by_header_name_and_bom_skipped(void)
{
    ncf_dataset d;
    ncf_dataset_opts o = ncf_dataset_opts_default();
    char text[2048], line[128];
    size_t k;
    o.min_ratings = 2, o.eval_negatives = 1;
    /* movieId first: users and items must not swap */
    strcpy(text, "movieId,genre,userId,timestamp,rating\n");
    for (k = 0; k < sizeof RATINGS_ROWS / sizeof *RATINGS_ROWS; k++) {
        int u, i, r, tm;
        sscanf(RATINGS_ROWS[k], "%d %d %d %d", &u, &i, &r, &tm);
        snprintf(line, sizeof line, "%d,Drama,%d,%d,%d.5\n", i, u, tm, r);
        strcat(text, line);
    }
    write_file("swapped.csv", text);
    CHECKF(ncf_load_dataset(&d, path_in_dir("swapped.csv"), &o) == NCF_OK, "%s", ncf_error_text());
    check_hand_dataset(&d, "movieId,genre,userId,timestamp,rating by name");
    ncf_dataset_free(&d);
    write_ratings("alias.csv", ",", "\xEF\xBB\xBF\"user_id\",\"item_id\",\"rating\",\"timestamp\"", "%.0f");
    CHECKF(ncf_load_dataset(&d, path_in_dir("alias.csv"), &o) == NCF_OK, "%s", ncf_error_text());
    check_hand_dataset(&d, "a BOM, then \"user_id\",\"item_id\",...");
    ncf_dataset_free(&d);
    write_ratings("bare.csv", ",", NULL, "%.0f"); /* no header: the first line is a rating */
    memcpy(text, "\xEF\xBB\xBF", 3);
    write_ratings("bom.dat", "::", NULL, "%.0f");
    {
        FILE *f = fopen(path_in_dir("bom.dat"), "rb");
        size_t n = f ? fread(text + 3, 1, sizeof text - 4, f) : 0;
        if (f) fclose(f);
        text[3 + n] = 0;
        write_file("bom.dat", text);
    }
    CHECKF(ncf_load_dataset(&d, path_in_dir("bom.dat"), &o) == NCF_OK, "%s", ncf_error_text());
    check_hand_dataset(&d, "ratings.dat with a BOM");
    ncf_dataset_free(&d);
    CHECKF(ncf_load_dataset(&d, path_in_dir("bare.csv"), &o) == NCF_OK, "%s", ncf_error_text());
    check_hand_dataset(&d, "ratings.csv without a header");
    ncf_dataset_free(&d);
    write_file("space.csv", " 9,20,2,10\n9,30,2,5\n3,10,5,50\n3,40,1,60\n");
    CHECKF(ncf_load_dataset(&d, path_in_dir("space.csv"), &o) == NCF_OK && d.num_users == 2 && d.num_train == 2,
           "the first rating was lost: %d users, %lld positives", d.num_users, (long long)d.num_train);
    ncf_dataset_free(&d);
    write_file("unknown.csv", "who,what,when\n1,2,3\n");
    CHECK_ERR(ncf_load_dataset(&d, path_in_dir("unknown.csv"), &o), NCF_ERR_PARSE,
              "unknown.csv:1: no user column in the header 'who,what,when' (names tried: user userid");
    o.columns[NCF_COL_USER] = "who", o.columns[NCF_COL_ITEM] = "2"; /* by name and by number: loads */
    CHECK_ERR(ncf_load_dataset(&d, path_in_dir("unknown.csv"), &o), NCF_ERR_DATA,
              "unknown.csv: no user has at least 2 ratings");
}

static void test_paper_split_files_read_back_the_same_dataset(void)
{
    ncf_dataset a, b;
    char prefix[256];
    snprintf(prefix, sizeof prefix, "%s/toy", g_dir);
    CHECK(ncf_synthetic(&a, 120, 80, 2400, 6, 5) == NCF_OK);
    CHECK(ncf_sample_eval_negatives(&a, 20, 5) == NCF_OK);
    write_ncf_split(&a, prefix);
    CHECK(ncf_load_dataset(&b, prefix, NULL) == NCF_OK);
    CHECK(a.num_users == b.num_users && a.num_items == b.num_items && a.num_train == b.num_train);
    CHECK(b.num_eval_neg == 20);
    if (a.num_users == b.num_users && a.num_train == b.num_train && b.num_eval_neg == 20) {
        CHECK(!memcmp(a.user_ptr, b.user_ptr, sizeof(int64_t) * (size_t)(a.num_users + 1)));
        CHECK(!memcmp(a.items, b.items, sizeof(int32_t) * (size_t)a.num_train));
        CHECK(!memcmp(a.test_item, b.test_item, sizeof(int32_t) * (size_t)a.num_users));
        CHECK(!memcmp(a.eval_neg, b.eval_neg, sizeof(int32_t) * (size_t)a.num_users * 20));
    }
    ncf_dataset_free(&b);
    /* any of the three names also works, and sampled negatives replace the file's */
    {
        char p[300];
        ncf_dataset_opts o = ncf_dataset_opts_default();
        o.eval_negatives = 30;
        snprintf(p, sizeof p, "%s.test.negative", prefix);
        CHECK(ncf_load_dataset(&b, p, &o) == NCF_OK);
        CHECK(b.num_eval_neg == 30 && b.num_train == a.num_train);
        ncf_dataset_free(&b);
    }
    ncf_dataset_free(&a);
}

static void test_bad_input_files_refused_with_file_and_line(void)
{
    ncf_dataset d;
    char prefix[256];
    static const struct {
        const char *name, *text;
        int code;
        const char *message;
    } bad[] = {
        {"trunc.dat", "1::10::5::100\n1::20::3\n", NCF_ERR_PARSE,
         "trunc.dat:2: expected 4 fields separated by '::', got 3"},
        {"rating.csv", "userId,movieId,rating,timestamp\n1,10,x,100\n", NCF_ERR_PARSE,
         "rating.csv:2: rating 'x' is not a number"},
        {"ragged.csv", "user,item,rating\n1,10,5\n1,20\n", NCF_ERR_PARSE,
         "ragged.csv:3: expected 3 fields separated by ',', got 2"},
        {"quote.csv", "user,item\n1,\"10\n2,20\n", NCF_ERR_PARSE, "quote.csv:2: a quote opened here is never closed"},
        {"emptyid.csv", "user,item\n1,10\n,20\n", NCF_ERR_PARSE, "emptyid.csv:3: empty user id"},
        {"emptyitem.csv", "user,item\nu1,10\nu1,\"\"\n", NCF_ERR_PARSE, "emptyitem.csv:3: empty item id"},
        {"nocol.tsv", "visitor\twhat\n1\t2\n", NCF_ERR_PARSE,
         "nocol.tsv:1: no item column in the header 'visitor\\x09what'"},
        {"onefield.txt", "1\n2\n", NCF_ERR_PARSE, "onefield.txt:1: one field a line"},
        {"ts.dat", "1::10::5::9223372036854775807\n1::20::5::9223372036854775808\n", NCF_ERR_PARSE,
         "ts.dat:2: timestamp '9223372036854775808' is too large"},
        {"empty.dat", "", NCF_ERR_PARSE, "empty.dat: no ratings"},
        {"header_only.csv", "userId,movieId,rating,timestamp\n", NCF_ERR_PARSE, "no ratings"},
    };
    size_t k;
    for (k = 0; k < sizeof bad / sizeof *bad; k++) {
        write_file(bad[k].name, bad[k].text);
        CHECK_ERR(ncf_load_dataset(&d, path_in_dir(bad[k].name), NULL), bad[k].code, bad[k].message);
    }
    CHECK_ERR(ncf_load_dataset(&d, path_in_dir("missing.dat"), NULL), NCF_ERR_IO, "missing.dat: cannot open");
    /* the paper split: a negative line whose (user,item) is not its test line */
    write_file("bad.train.rating", "0\t1\t1\t0\n1\t2\t1\t0\n");
    write_file("bad.test.rating", "0\t3\t1\t0\n1\t4\t1\t0\n");
    write_file("bad.test.negative", "(0,3)\t5\t6\n(1,5)\t6\t7\n");
    snprintf(prefix, sizeof prefix, "%s/bad", g_dir);
    CHECK_ERR(ncf_load_dataset(&d, prefix, NULL), NCF_ERR_DATA, "bad.test.negative:2: (1,5) does not match line 2");
    write_file("bad.test.negative", "(0,3)\t5\t6\n(1,4)\t6\n");
    CHECK_ERR(ncf_load_dataset(&d, prefix, NULL), NCF_ERR_PARSE,
              "bad.test.negative:2: 1 negatives, but the first line has 2");
    write_file("bad.test.rating", "0\t3\t1\t0\n");
    CHECK_ERR(ncf_load_dataset(&d, prefix, NULL), NCF_ERR_DATA, "user 1 has no line in");
    /* found by fuzz/fuzz.c: a malformed .test.rating was freed twice */
    write_file("bad.test.rating", "0\t3\t1\t0\n1\t4\n");
    CHECK_ERR(ncf_load_dataset(&d, prefix, NULL), NCF_ERR_PARSE, "bad.test.rating:2: expected 4 fields");
    /* the split's ids are dense: a huge id is refused before anything is sized by it */
    write_file("bad.test.rating", "0\t3\t1\t0\n1\t4\t1\t0\n");
    write_file("bad.train.rating", "0\t1\t1\t0\n4000000000\t2\t1\t0\n");
    CHECK_ERR(ncf_load_dataset(&d, prefix, NULL), NCF_ERR_DATA, "ids must be 0-based and dense");
    write_file("bad.test.negative", "(0,3)\t5\t6\n(1,4)\t6\t7\n");
    write_file("bad.train.rating", "0\t1\t1\t0\n1\t2000000000\t1\t0\n");
    CHECK_ERR(ncf_load_dataset(&d, prefix, NULL), NCF_ERR_DATA, "item id 2000000000 is beyond");
    /* every item rated: no eval negative exists, and none for the sampler */
    write_file("full.dat", "1::10::5::1\n1::20::5::2\n2::10::5::1\n2::30::5::2\n");
    CHECK_ERR(ncf_load_dataset(&d, path_in_dir("full.dat"), NULL), NCF_ERR_DATA, "full.dat: user 1 rated 2 of 3 items");
    {
        ncf_dataset_opts o = ncf_dataset_opts_default();
        ncf_sampler s;
        o.eval_negatives = 1;
        /* a user who rated every item is dropped, and the items only it rated; then no user left
           rated every item left */
        write_file("full.dat",
                   "1::10::5::1\n1::20::5::2\n1::30::5::3\n1::40::5::4\n2::10::5::1\n2::20::5::2\n"
                   "3::30::5::1\n3::10::5::2\n");
        CHECKF(ncf_load_dataset(&d, path_in_dir("full.dat"), &o) == NCF_OK, "%s", ncf_error_text());
        CHECK(d.num_users == 2 && d.num_items == 3 && d.report.users_every_item == 1 &&
              d.report.items_few_ratings == 1);
        CHECK(d.raw_user && d.raw_user[0] == 2 && d.raw_item && d.raw_item[2] == 30);
        CHECK(ncf_sampler_init(&s, &d, 4, 1) == NCF_OK);
        ncf_dataset_free(&d);
        /* each drop can leave another user with every item left: when none is left, the load says so */
        write_file("full.dat", "1::10::5::1\n1::20::5::2\n1::30::5::3\n2::10::5::1\n2::30::5::2\n");
        CHECK_ERR(ncf_load_dataset(&d, path_in_dir("full.dat"), &o), NCF_ERR_DATA,
                  "no user is left who did not rate every item");
        CHECK_ERR(ncf_dataset_from_triples(&d, (int64_t[]){1, 1, 1}, (int64_t[]){10, 20, 30}, NULL, 3, 0), NCF_ERR_DATA,
                  "(1 dropped so)");
        (void)s;
    }
    CHECK(d.user_ptr == NULL && d.num_users == 0); /* failures leave the dataset empty */
}

/* ---- >>sampler: training examples: each positive once, negatives uniform and unrated --------- */

static int in_training(const ncf_dataset *d, int u, int item)
{
    int64_t k;
    for (k = d->user_ptr[u]; k < d->user_ptr[u + 1]; k++)
        if (d->items[k] == item) return 1;
    return 0;
}

static int is_rated(const ncf_dataset *d, int u, int item)
{
    return d->test_item[u] == item || (d->val_item && d->val_item[u] == item) || in_training(d, u, item);
}

static void test_sampler_draws_each_positive_once_and_unrated_negatives(void)
{
    ncf_dataset d;
    ncf_sampler s;
    int32_t *u, *it;
    float *y;
    int64_t n, j, negs = 0;
    char *seen;
    int epoch, U, I, bad = 0, unreached = 0, x;
    CHECK(ncf_synthetic(&d, 60, 40, 900, 4, 9) == NCF_OK);
    CHECK(ncf_sampler_init(&s, &d, 4, 123) == NCF_OK);
    U = d.num_users, I = d.num_items;
    n = s.num_examples;
    CHECK(n == d.num_train * 5);
    u = (int32_t *)malloc(sizeof(int32_t) * (size_t)n), it = (int32_t *)malloc(sizeof(int32_t) * (size_t)n);
    y = (float *)malloc(sizeof(float) * (size_t)n);
    seen = (char *)calloc((size_t)U * I, 1);
    for (epoch = 0; epoch < 200; epoch++) {
        int64_t pos = 0;
        int64_t *count = (int64_t *)calloc((size_t)U * I, sizeof(int64_t));
        ncf_sampler_fill(&s, epoch, 0, (int)n, u, it, y);
        for (j = 0; j < n; j++) {
            if (y[j] == 1.0f) {
                pos++;
                count[(size_t)u[j] * I + it[j]]++;
                continue;
            }
            negs++;
            bad += in_training(&d, u[j], it[j]);
            seen[(size_t)u[j] * I + it[j]] = 1;
        }
        if (epoch < 3) { /* every positive exactly once */
            int uu;
            int64_t k;
            CHECK(pos == d.num_train);
            for (uu = 0; uu < U; uu++)
                for (k = d.user_ptr[uu]; k < d.user_ptr[uu + 1]; k++) CHECK(count[(size_t)uu * I + d.items[k]] == 1);
        }
        free(count);
    }
    CHECK(negs == 200 * 4 * d.num_train);
    CHECKF(bad == 0, "%d negatives were training items", bad);
    for (x = 0; x < U * I; x++) {
        int uu = x / I;
        if (d.user_ptr[uu + 1] > d.user_ptr[uu] && !in_training(&d, uu, x % I) && !seen[x]) unreached++;
    }
    CHECKF(unreached == 0, "%d (user, item) pairs not in training never drawn in 200 epochs", unreached);
    s.skip_held_out = 1; /* 0.6's rule: no held-out item either */
    for (epoch = 0, bad = 0; epoch < 20; epoch++) {
        ncf_sampler_fill(&s, epoch, 0, (int)n, u, it, y);
        for (j = 0; j < n; j++) bad += y[j] == 0.0f && is_rated(&d, u[j], it[j]);
    }
    CHECKF(bad == 0, "skip_held_out: %d negatives were rated items", bad);
    s.skip_held_out = 0;
    /* the shuffle mixes users: the first 20 examples or (by_positive, each followed by its 4
       negatives of the same user) positives are not one user's run */
    for (x = 0; x <= 1; x++) {
        int distinct = 0, k, l, step = x ? 5 : 1;
        s.by_positive = x;
        ncf_sampler_fill(&s, 0, 0, 20 * step, u, it, y);
        for (k = 0; k < 20 * step; k += step) {
            for (l = 0; l < k && u[l] != u[k]; l += step) {}
            distinct += l == k;
            CHECK(!x || (y[k] > 0 && u[k + 1] == u[k] && u[k + 4] == u[k] && y[k + 1] == 0.0f));
        }
        CHECKF(distinct >= 8, "by_positive %d: %d users", x, distinct);
    }
    free(u), free(it), free(y), free(seen);
    ncf_dataset_free(&d);
}

/* Negatives of one heavy user across many epochs: uniform over the items not in its training
   list (chi-square below the 99.9% point). */
static void test_sampler_negatives_uniform_by_chi_square(void)
{
    ncf_dataset d;
    ncf_sampler s;
    int64_t users[140], items[140], j;
    int32_t *u, *it;
    float *y;
    double chi2 = 0, expected, crit;
    int64_t counts[128] = {0}, total = 0;
    int epoch, k, free_items = 0, i, I;
    /* user 0 rated 40 of 100 items spread over the ids, user 1 all but one */
    for (j = 0; j < 40; j++) users[j] = 0, items[j] = (j * 37) % 100;
    for (j = 40; j < 139; j++) users[j] = 1, items[j] = j - 40;
    CHECK(ncf_dataset_from_triples(&d, users, items, NULL, 139, 0) == NCF_OK);
    I = d.num_items;
    CHECK(I > 40 && I <= 128);
    if (I <= 40 || I > 128) {
        ncf_dataset_free(&d);
        return;
    }
    CHECK(ncf_sampler_init(&s, &d, 8, 77) == NCF_OK);
    u = (int32_t *)malloc(sizeof(int32_t) * (size_t)s.num_examples);
    it = (int32_t *)malloc(sizeof(int32_t) * (size_t)s.num_examples);
    y = (float *)malloc(sizeof(float) * (size_t)s.num_examples);
    for (epoch = 0; epoch < 400; epoch++) {
        ncf_sampler_fill(&s, epoch, 0, (int)s.num_examples, u, it, y);
        for (j = 0; j < s.num_examples; j++)
            if (u[j] == 0 && y[j] == 0.0f) counts[it[j]]++, total++;
    }
    for (i = 0; i < I; i++) {
        if (in_training(&d, 0, i)) {
            CHECK(counts[i] == 0);
            continue;
        }
        free_items++;
    }
    expected = (double)total / free_items;
    for (i = 0; i < I; i++)
        if (!in_training(&d, 0, i)) chi2 += (counts[i] - expected) * (counts[i] - expected) / expected;
    k = free_items - 1;
    crit = k + 3.09 * sqrt(2.0 * k) + 2.0; /* ~99.9% point of chi-square(k) */
    printf("    %lld draws over %d items: chi-square %.1f (df %d, 99.9%% point ~%.1f)\n", (long long)total, free_items,
           chi2, k, crit);
    CHECK(total > 50000 && chi2 < crit);
    free(u), free(it), free(y);
    ncf_dataset_free(&d);
}

/* The epoch's order written from its definition, sharing nothing with ncf.h: splitmix64's
   finalizer; a 4-round Feistel network over [0, 2^bits), 2^bits the least power of two >= n,
   whose halves swap widths each round; each position walked until it lands in [0, n). */
static uint64_t ref_mix64(uint64_t z)
{
    z += 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static int64_t ref_permuted(int64_t pos, int64_t n, uint64_t key)
{
    int bits = 1, a, b, round, t;
    uint64_t x = (uint64_t)pos, l, r, f;
    while (bits < 62 && ((int64_t)1 << bits) < n) bits++;
    do {
        a = bits / 2, b = bits - a;
        l = x >> b, r = x & (((uint64_t)1 << b) - 1);
        for (round = 0; round < 4; round++) {
            f = (ref_mix64(r ^ key ^ ((uint64_t)round << 58)) & (((uint64_t)1 << a) - 1)) ^ l;
            l = r, r = f, t = a, a = b, b = t;
        }
        x = (l << b) | r;
    } while (x >= (uint64_t)n);
    return (int64_t)x;
}

/* The shuffle's key of an epoch: hash3(seed ^ 2, epoch, which), 2 being the shuffle's tag. */
static uint64_t ref_shuffle_key(uint64_t seed, int epoch, uint64_t which)
{
    return ref_mix64(ref_mix64(ref_mix64(seed ^ 2) ^ (uint64_t)epoch) ^ which);
}

/* Example j of the order: its user always, and its item and label when it is the positive. */
static int order_mismatches(const ncf_dataset *d, int64_t p, int positive, int32_t u, int32_t i, float y)
{
    if (u != d->train_user[p]) return 1;
    return positive ? i != d->items[p] || y != 1.0f : y != 0.0f;
}

/* Both orders of an epoch, the default's (examples shuffled) and by_positive's, which the
   per-example recipe shares (positives shuffled, each followed by its negatives), against the
   definition above: on logs whose epochs walk often (n just past a power of two) and seldom,
   with and without negatives, whole and from an odd start. */
static void test_sampler_order_is_the_keyed_feistel_permutation(void)
{
    static const int shapes[][3] = {{7, 20, 40}, {60, 40, 900}, {300, 200, 5000}};
    int z, neg, epoch, bad = 0, checked = 0;
    for (z = 0; z < 3; z++)
        for (neg = 0; neg <= 3; neg += 3) {
            ncf_dataset d;
            ncf_sampler s;
            int32_t *u, *it, *u2, *it2;
            float *y, *y2;
            int64_t n, j, per = 1 + neg;
            if (ncf_synthetic(&d, shapes[z][0], shapes[z][1], shapes[z][2], 2, 5) != NCF_OK) {
                CHECKF(0, "synthetic %d x %d: %s", shapes[z][0], shapes[z][1], ncf_error_text());
                continue;
            }
            CHECK(ncf_sampler_init(&s, &d, neg, 31 + z) == NCF_OK);
            n = s.num_examples;
            u = (int32_t *)malloc(sizeof(int32_t) * (size_t)n), it = (int32_t *)malloc(sizeof(int32_t) * (size_t)n);
            u2 = (int32_t *)malloc(sizeof(int32_t) * (size_t)n), it2 = (int32_t *)malloc(sizeof(int32_t) * (size_t)n);
            y = (float *)malloc(sizeof(float) * (size_t)n), y2 = (float *)malloc(sizeof(float) * (size_t)n);
            for (epoch = 1; epoch <= 2 && u && it && u2 && it2 && y && y2; epoch++) {
                uint64_t key = ref_shuffle_key(s.seed, epoch, 0), key1 = ref_shuffle_key(s.seed, epoch, 1);
                int64_t from = n > 37 ? 37 : 0;
                s.by_positive = 0;
                ncf_sampler_fill(&s, epoch, 0, (int)n, u, it, y);
                ncf_sampler_fill(&s, epoch, from, (int)(n - from), u2, it2, y2);
                for (j = 0; j < n; j++, checked++) {
                    int64_t e = ref_permuted(j, n, key);
                    bad += order_mismatches(&d, e / per, e % per == 0, u[j], it[j], y[j]);
                    bad += j >= from && (u2[j - from] != u[j] || it2[j - from] != it[j] || y2[j - from] != y[j]);
                }
                s.by_positive = 1;
                ncf_sampler_fill(&s, epoch, 0, (int)n, u, it, y);
                ncf__fill_by_positive(&s, epoch, from, (int)(n - from), u2, it2, y2, NULL);
                for (j = 0; j < n; j++, checked++) {
                    int64_t p = ref_permuted(j / per, n / per, key1);
                    bad += order_mismatches(&d, p, j % per == 0, u[j], it[j], y[j]);
                    bad += j >= from && (u2[j - from] != u[j] || it2[j - from] != it[j] || y2[j - from] != y[j]);
                }
            }
            free(u), free(it), free(u2), free(it2), free(y), free(y2);
            ncf_dataset_free(&d);
        }
    printf("    %d examples of both orders against the definition\n", checked);
    CHECKF(bad == 0, "%d examples out of their defined place", bad);
}

static void test_pipeline_hash_follows_seed_and_epoch_not_threads(void)
{
    ncf_dataset d;
    ncf_sampler s, s2;
    uint64_t f1, a1, f2, a2, f3, a3, f4, a4;
    CHECK(ncf_synthetic(&d, 500, 300, 20000, 8, 4) == NCF_OK);
    CHECK(ncf_sampler_init(&s, &d, 4, 42) == NCF_OK);
    CHECK(ncf_sampler_init(&s2, &d, 4, 43) == NCF_OK);
    ncf_set_threads(1);
    CHECK(ncf__sampler_hash(&s, 3, 256, &f1, &a1) == NCF_OK);
    ncf_set_threads(2);
    ncf__sampler_hash(&s, 3, 256, &f2, &a2);
    ncf__sampler_hash(&s2, 3, 256, &f3, &a3);
    ncf__sampler_hash(&s, 4, 256, &f4, &a4);
    CHECK(f1 == f2 && a1 == a2); /* threads do not change the epoch */
    CHECK(f1 != f3 && a1 != a3); /* another seed does */
    CHECK(a1 != a4);             /* and so does the next epoch */
    ncf_dataset_free(&d);
}

/* ---- >>datasets: eval negatives, synthetic data, the real MovieLens files -------------------- */

static void test_eval_negatives_unrated_and_distinct(void)
{
    ncf_dataset d;
    int u, j, k, bad = 0, dup = 0;
    CHECK(ncf_synthetic(&d, 200, 150, 6000, 5, 8) == NCF_OK);
    CHECK_ERR(ncf_sample_eval_negatives(&d, 99, 1), NCF_ERR_DATA, "fewer than 99 unrated items");
    CHECK(ncf_sample_eval_negatives(&d, 60, 1) == NCF_OK && d.num_eval_neg == 60);
    for (u = 0; d.eval_neg && u < d.num_users; u++) {
        const int32_t *n = d.eval_neg + (size_t)u * 60;
        for (j = 0; j < 60; j++) {
            bad += is_rated(&d, u, n[j]) || n[j] < 0 || n[j] >= d.num_items;
            for (k = 0; k < j; k++) dup += n[k] == n[j];
        }
    }
    CHECK(bad == 0 && dup == 0);
    ncf_dataset_free(&d);
}

static void test_synthetic_data_has_the_shape_asked_for(void)
{
    ncf_dataset d;
    int u, sorted = 1;
    int64_t k;
    CHECK(ncf_synthetic(&d, 1000, 500, 40000, 8, 2) == NCF_OK);
    CHECK(d.num_users == 1000 && d.num_items == 500);
    CHECKF(d.num_train + d.num_users > 38000 && d.num_train + d.num_users <= 40000, "%lld interactions",
           (long long)(d.num_train + d.num_users));
    for (u = 0; u < d.num_users; u++) {
        CHECK(d.test_item[u] >= 0);
        for (k = d.user_ptr[u] + 1; k < d.user_ptr[u + 1]; k++) sorted &= d.items[k - 1] < d.items[k];
    }
    CHECK(sorted);
    ncf_dataset_free(&d);
}

static void test_real_movielens_loads_to_its_known_sizes(void)
{
    char ml1m[1024], ml100k[1024], probe[1100];
    ncf_dataset d;
    FILE *f;
    if (!*data_dir()) {
        SKIP("NCF_DATA is not set (a folder with ml-1m-ncf/ and ml-100k/)");
        return;
    }
    snprintf(ml1m, sizeof ml1m, "%s/ml-1m-ncf/ml-1m", data_dir());
    snprintf(ml100k, sizeof ml100k, "%s/ml-100k/u.data", data_dir());
    snprintf(probe, sizeof probe, "%s.train.rating", ml1m);
    if (!(f = fopen(probe, "r"))) {
        SKIP("%s not found", probe);
        return;
    }
    fclose(f);
    CHECK(ncf_load_dataset(&d, ml1m, NULL) == NCF_OK);
    printf("    ml-1m split: %d users, %d items, %lld positives, %d negatives per user\n", d.num_users, d.num_items,
           (long long)d.num_train, d.num_eval_neg);
    CHECK(d.num_users == 6040 && d.num_items == 3706 && d.num_train == 994169 && d.num_eval_neg == 99);
    ncf_dataset_free(&d);
    {
        ncf_dataset_opts o = ncf_dataset_opts_default();
        int u, test = 0;
        CHECK(ncf_load_dataset(&d, ml100k, &o) == NCF_OK);
        for (u = 0; u < d.num_users; u++) test += d.test_item[u] >= 0;
        printf("    ml-100k: %d users, %d items, %lld ratings\n", d.num_users, d.num_items,
               (long long)(d.num_train + test));
        CHECK(d.num_users == 943 && d.num_items == 1682 && d.num_train + test == 100000);
        ncf_dataset_free(&d);
    }
}

/* ---- >>evaluation: the paper split's negatives checked --------------------------------------- */

/* GMF with one factor, user rows 1 and w_out 1: an item's score is its own value. */
static ncf_model *scoring_model(const float *item_score, int users, int items)
{
    ncf_config c = ncf_config_default();
    ncf_model *m = NULL;
    int k;
    c.model = NCF_GMF, c.mf_dim = 1, c.num_users = users, c.num_items = items;
    if (ncf_model_create(&m, &c) != NCF_OK) return NULL;
    for (k = 0; k < users; k++) m->gmf_user[k] = 1.0f;
    for (k = 0; k < items; k++) m->gmf_item[k] = item_score[k];
    m->w_out[0] = 1.0f, m->b_out[0] = 0.0f;
    return m;
}

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

/* ncf__build on ids that are already dense: users [0, U), items [0, I), the latest held out. */
static int build_fixed(ncf_dataset *d, const int64_t *u, const int64_t *i, const int64_t *t, int64_t n, int U, int I)
{
    ncf__build_opts bo;
    memset(&bo, 0, sizeof bo);
    bo.holdout = NCF_HOLDOUT_LATEST, bo.fixed_users = U, bo.fixed_items = I;
    return ncf__build(d, u, i, t, n, &bo);
}

/* ---- >>logs: any delimited log, ids as written, strengths, filters, hold-outs ---------------- */

/* RATINGS_ROWS as a log: sep between fields, eol after each line, an optional header, every
   field quoted when quote is set. Returns its length. */
static size_t ratings_log(char *out, const char *sep, const char *eol, int header, int quote)
{
    static const char *names[4] = {"user_id", "item_id", "rating", "timestamp"};
    const char *q = quote ? "\"" : "";
    size_t k, n = 0;
    int f;
    out[0] = 0;
    if (header) {
        for (f = 0; f < 4; f++) n += (size_t)sprintf(out + n, "%s%s%s%s", f ? sep : "", q, names[f], q);
        n += (size_t)sprintf(out + n, "%s", eol);
    }
    for (k = 0; k < sizeof RATINGS_ROWS / sizeof *RATINGS_ROWS; k++) {
        int v[4];
        sscanf(RATINGS_ROWS[k], "%d %d %d %d", &v[0], &v[1], &v[2], &v[3]);
        for (f = 0; f < 4; f++) n += (size_t)sprintf(out + n, "%s%s%d%s", f ? sep : "", q, v[f], q);
        n += (size_t)sprintf(out + n, "%s", eol);
    }
    return n;
}

static void test_logs_read_with_any_separator_quoting_line_end_and_header(void)
{
    static const char *seps[6] = {",", ";", "\t", "|", "::", " "}, *eols[3] = {"\n", "\r\n", "\r"};
    char text[2048];
    ncf_dataset d;
    ncf_dataset_opts o = ncf_dataset_opts_default();
    int s, e, h, q, loaded = 0, tried = 0;
    o.min_ratings = 2, o.eval_negatives = 1;
    for (s = 0; s < 6; s++)
        for (e = 0; e < 3; e++)
            for (h = 0; h < 2; h++)
                for (q = 0; q < 2; q++) {
                    size_t n = ratings_log(text, seps[s], eols[e], h, q);
                    int before = g_failed_checks;
                    tried++;
                    if (ncf_load_dataset_mem(&d, "log", text, n, &o) != NCF_OK) {
                        CHECKF(0, "sep '%s' eol %d header %d quotes %d: %s", seps[s], e, h, q, ncf_error_text());
                        continue;
                    }
                    CHECKF(!strcmp(d.report.sep, seps[s]) && d.report.header == h,
                           "sep '%s' header %d: read as '%s' %d", seps[s], h, d.report.sep, d.report.header);
                    CHECK(!strcmp(d.report.columns[NCF_COL_USER], h ? "user_id" : "column 1"));
                    CHECK(!strcmp(d.report.columns[NCF_COL_TIME], h ? "timestamp" : "column 4"));
                    if (g_failed_checks == before) check_hand_dataset_quiet(&d);
                    loaded += g_failed_checks == before;
                    ncf_dataset_free(&d);
                }
    printf("    %d of %d logs (6 separators x LF, CRLF, CR x header or not x quoted or not) read as written\n", loaded,
           tried);
    /* a BOM, blank lines and trailing blanks; a file named .tsv */
    memcpy(text, "\xEF\xBB\xBF", 3);
    ratings_log(text + 3, "\t", "\n\n", 1, 0);
    write_file("plays.tsv", text);
    CHECKF(ncf_load_dataset(&d, path_in_dir("plays.tsv"), &o) == NCF_OK, "%s", ncf_error_text());
    check_hand_dataset(&d, "a .tsv with a BOM and blank lines");
    ncf_dataset_free(&d);
    /* a quoted field may hold the separator, a doubled quote and a line end */
    strcpy(text, "user,item,rating\n\"a,1\",\"x\"\"y\",1\n\"a,1\",\"multi\nline\",2\nb,\"x\"\"y\",3\nb,z,4\n");
    CHECKF(ncf_load_dataset_mem(&d, "quoted.csv", text, strlen(text), &o) == NCF_OK, "%s", ncf_error_text());
    {
        char id[64];
        CHECK(d.num_users == 2 && d.num_items == 3);
        CHECK(ncf_dataset_id(&d, NCF_USER, 0, id, sizeof id) == 3 && !strcmp(id, "a,1"));
        CHECK(ncf_dataset_find(&d, NCF_ITEM, "x\"y") >= 0 && ncf_dataset_find(&d, NCF_ITEM, "multi\nline") >= 0);
    }
    ncf_dataset_free(&d);
    strcpy(text, "user,item\n1,2\n1,3\n\"2,4\n"); /* the line of the open quote is named */
    CHECK_ERR(ncf_load_dataset_mem(&d, "open.csv", text, strlen(text), &o), NCF_ERR_PARSE,
              "open.csv:4: a quote opened");
}

static void test_columns_found_by_name_alias_or_number(void)
{
    ncf_dataset d;
    ncf_dataset_opts o = ncf_dataset_opts_default();
    char id[64];
    const char *books = "\"User-ID\";\"ISBN\";\"Book-Rating\"\r\n\"276725\";\"034545104X\";\"0\"\r\n"
                        "\"276725\";\"0155061224\";\"5\"\r\n\"276726\";\"0446520802\";\"0\"\r\n"
                        "\"276726\";\"034545104X\";\"7\"\r\n";
    const char *plays = "userID\tartistID\tweight\n2\t51\t13883\n2\t52\t11690\n3\t51\t228\n3\t53\t1021\n4\t52\t5\n";
    o.eval_negatives = 1;
    CHECKF(ncf_load_dataset_mem(&d, "BX-Book-Ratings.csv", books, strlen(books), &o) == NCF_OK, "%s", ncf_error_text());
    CHECK(!strcmp(d.report.sep, ";") && d.report.header == 1 && !strcmp(d.report.columns[0], "User-ID") &&
          !strcmp(d.report.columns[1], "ISBN") && !strcmp(d.report.columns[2], "Book-Rating") &&
          !d.report.columns[3][0]);
    CHECK(d.report.text_ids[0] == 0 && d.report.text_ids[1] == 1 && d.raw_user && !d.raw_item);
    CHECK(d.num_items == 3 && ncf_dataset_id(&d, NCF_ITEM, 0, id, sizeof id) == 10 && !strcmp(id, "0155061224"));
    CHECK(d.report.holdout == NCF_HOLDOUT_RANDOM); /* no timestamps */
    ncf_dataset_free(&d);
    CHECKF(ncf_load_dataset_mem(&d, "user_artists.dat", plays, strlen(plays), &o) == NCF_OK, "%s", ncf_error_text());
    CHECK(!strcmp(d.report.sep, "\t") && !strcmp(d.report.columns[1], "artistID") &&
          !strcmp(d.report.columns[2], "weight"));
    ncf_dataset_free(&d);
    /* asked for by name (case and punctuation ignored) or by number */
    o.columns[NCF_COL_USER] = "ARTISTid", o.columns[NCF_COL_ITEM] = "1", o.columns[NCF_COL_RATING] = "";
    CHECKF(ncf_load_dataset_mem(&d, "swap.tsv", plays, strlen(plays), &o) == NCF_OK, "%s", ncf_error_text());
    CHECK(d.num_users == 3 && d.num_items == 3 && d.raw_user[0] == 51 && !d.report.columns[2][0]);
    ncf_dataset_free(&d);
    o.columns[NCF_COL_ITEM] = "2";
    CHECK_ERR(ncf_load_dataset_mem(&d, "twice.tsv", plays, strlen(plays), &o), NCF_ERR_ARG,
              "column 2 is both the user id and the item id");
    o.columns[NCF_COL_ITEM] = "9";
    CHECK_ERR(ncf_load_dataset_mem(&d, "nine.tsv", plays, strlen(plays), &o), NCF_ERR_ARG,
              "item id column 9: the file has 3 columns");
    o.columns[NCF_COL_ITEM] = "song";
    CHECK_ERR(ncf_load_dataset_mem(&d, "song.tsv", plays, strlen(plays), &o), NCF_ERR_ARG, "no column named 'song'");
    o = ncf_dataset_opts_default(), o.eval_negatives = 1, o.header = NCF_HEADER_NO, o.columns[NCF_COL_USER] = "userID";
    CHECK_ERR(ncf_load_dataset_mem(&d, "nohead.tsv", plays, strlen(plays), &o), NCF_ERR_ARG,
              "has no header; give its number");
    o = ncf_dataset_opts_default(), o.eval_negatives = 1, o.sep = ";"; /* a separator given: one field a line */
    CHECK_ERR(ncf_load_dataset_mem(&d, "semi.tsv", plays, strlen(plays), &o), NCF_ERR_PARSE, "one field a line");
}

/* A log whose ids are not all plain integers: leading zeros, letters, a 64-hex-digit hash,
   bytes that are not UTF-8, and "7" beside "007". */
static void write_text_id_log(const char *name, int users, int items)
{
    FILE *f = fopen(path_in_dir(name), "wb");
    int u, k;
    for (u = 0; u < users; u++)
        for (k = 0; k < 12; k++) {
            int i = (u * 7 + k * k * 3 + (u % 5) * k) % items;
            char uid[32], iid[80];
            if (u == 0) strcpy(uid, "007");
            else if (u == 1) strcpy(uid, "7");
            else if (u == 2) strcpy(uid, "\xff\xfe-user");
            else snprintf(uid, sizeof uid, "u%02d", u);
            if (i == 0) strcpy(iid, "0440213320");
            else if (i == 1) strcpy(iid, "440213320");
            else if (i == 2) strcpy(iid, "034545104X");
            else if (i == 3) strcpy(iid, "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08");
            else snprintf(iid, sizeof iid, "%d", 1000 + i);
            fprintf(f, "%s,%s,%d\n", uid, iid, 1 + (u + k) % 5);
        }
    fclose(f);
}

/* An id is its field's bytes: a comma or a quote inside quotes, blanks at either end of an
   unquoted field, a TAB inside, bytes that are not UTF-8; through the load, the lookups, a model
   file and its id output. trim_ids drops the blanks (two ids then merge), and says how many. */
static void test_ids_keep_blanks_quotes_and_bytes_unless_trimmed(void)
{
    static const char *ids[] = {"Papers, Please", "Fallout 4 ", "Fallout 4", " Tetris",
                                "Say \"Hi\"",     "a\tb",       "\xff\xfe x"};
    const char *log = "user,item\n"
                      "u1,\"Papers, Please\"\nu1,Fallout 4 \nu1,Fallout 4\nu1, Tetris\nu1,\"Say \"\"Hi\"\"\"\nu1,a\tb\n"
                      "u2,\"Papers, Please\"  \nu2,\xff\xfe x\nu2,Fallout 4\nu2,z\nu3,  \"z\"\nu3, Tetris\nu3,a\tb\n";
    ncf_dataset_opts o = ncf_dataset_opts_default();
    ncf_dataset d;
    ncf_config c = ncf_config_default();
    ncf_model *m = NULL, *back = NULL;
    void *buf = NULL;
    size_t len = 0;
    char id[NCF_MAX_ID_BYTES + 1];
    int k, i;
    o.holdout = NCF_HOLDOUT_NONE;
    CHECK(ncf_load_dataset_mem(&d, "ids", log, strlen(log), &o) == NCF_OK);
    CHECK(d.num_items == 8 && d.report.blank_edged_ids[1] == 3 && d.report.blank_edged_ids[0] == 0);
    c.num_users = d.num_users, c.num_items = d.num_items;
    CHECK(ncf_model_create(&m, &c) == NCF_OK && ncf_model_set_ids(m, &d) == NCF_OK &&
          ncf_save_mem(m, NCF_SAVE_MODEL, &buf, &len) == NCF_OK && ncf_load_mem(&back, buf, len) == NCF_OK);
    for (k = 0; k < (int)(sizeof ids / sizeof *ids); k++) {
        i = ncf_dataset_find(&d, NCF_ITEM, ids[k]);
        CHECKF(i >= 0 && ncf_find(m, NCF_ITEM, ids[k]) == i && ncf_find(back, NCF_ITEM, ids[k]) == i, "'%s'", ids[k]);
        CHECKF(ncf_id(back, NCF_ITEM, i, id, sizeof id) == (int)strlen(ids[k]) && strcmp(id, ids[k]) == 0, "'%s'",
               ids[k]);
    }
    CHECK(ncf_find(back, NCF_ITEM, "Tetris") < 0 && ncf_find(back, NCF_ITEM, "Papers") < 0);
    ncf_model_free(m), ncf_model_free(back), ncf_free(buf), ncf_dataset_free(&d);
    o.trim_ids = 1;
    CHECK(ncf_load_dataset_mem(&d, "ids", log, strlen(log), &o) == NCF_OK);
    CHECK(d.num_items == 7 && d.report.blank_edged_ids[1] == 3 && d.report.duplicates == 1);
    CHECK(ncf_dataset_find(&d, NCF_ITEM, "Tetris") >= 0 && ncf_dataset_find(&d, NCF_ITEM, " Tetris") < 0 &&
          ncf_dataset_find(&d, NCF_ITEM, "Fallout 4 ") < 0 && ncf_dataset_find(&d, NCF_ITEM, "Papers, Please") >= 0);
    ncf_dataset_free(&d);
    o.trim_ids = 2;
    CHECK_ERR(ncf_load_dataset_mem(&d, "ids", log, strlen(log), &o), NCF_ERR_ARG, "trim_ids 2");
}

static void test_ids_kept_as_written_through_training_saving_and_serving(void)
{
    ncf_dataset d;
    ncf_model *m = NULL, *loaded = NULL, *in_place = NULL;
    ncf_sampler s;
    ncf_config c = ncf_config_default();
    ncf_dataset_opts o = ncf_dataset_opts_default();
    ncf_rec_opts ro = ncf_rec_opts_default();
    char id[NCF_MAX_ID_BYTES + 1];
    static const char *kept[] = {"0440213320", "440213320", "034545104X",
                                 "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08", "1004"};
    void *buf = NULL, *aligned = NULL;
    size_t len = 0;
    int32_t top[3][5];
    float sc[3][5], z[3];
    int k, u, n[3];
    o.eval_negatives = 5, o.seed = 3;
    write_text_id_log("ids.csv", 40, 30);
    CHECKF(ncf_load_dataset(&d, path_in_dir("ids.csv"), &o) == NCF_OK, "%s", ncf_error_text());
    if (d.num_users != 40) {
        CHECKF(0, "%d users", d.num_users);
        ncf_dataset_free(&d);
        return;
    }
    CHECK(d.user_text && d.item_text && !d.raw_user && !d.raw_item && d.num_items == 30);
    CHECK(ncf_dataset_find(&d, NCF_USER, "007") != ncf_dataset_find(&d, NCF_USER, "7") &&
          ncf_dataset_find(&d, NCF_USER, "7") >= 0);
    CHECK(ncf_dataset_find(&d, NCF_USER, "\xff\xfe-user") >= 0);
    CHECK_ERR(ncf_dataset_find(&d, NCF_USER, "07"), NCF_ERR_ARG, "unknown user '07'");
    for (k = 0; k < 5; k++) { /* each id found, and named back byte for byte */
        int i = ncf_dataset_find(&d, NCF_ITEM, kept[k]);
        CHECKF(i >= 0 && ncf_dataset_id(&d, NCF_ITEM, i, id, sizeof id) == (int)strlen(kept[k]) && !strcmp(id, kept[k]),
               "%s", kept[k]);
    }
    for (k = 1; k < d.num_items; k++) { /* ascending by bytes */
        char prev[NCF_MAX_ID_BYTES + 1];
        ncf_dataset_id(&d, NCF_ITEM, k - 1, prev, sizeof prev), ncf_dataset_id(&d, NCF_ITEM, k, id, sizeof id);
        CHECK(strcmp(prev, id) < 0);
    }
    CHECK_ERR(ncf_dataset_id(&d, NCF_ITEM, 3, id, 4), NCF_ERR_ARG, "buffer is too short");
    c.num_users = d.num_users, c.num_items = d.num_items;
    CHECK(ncf_model_create(&m, &c) == NCF_OK && ncf_model_set_ids(m, &d) == NCF_OK &&
          ncf_sampler_init(&s, &d, 4, 1) == NCF_OK);
    CHECK(ncf_train_epoch(m, &s, 1, NULL, NULL, NULL) == NCF_OK);
    CHECK(ncf_save_mem(m, NCF_SAVE_MODEL, &buf, &len) == NCF_OK && ncf_load_mem(&loaded, buf, len) == NCF_OK);
    aligned = malloc(len);
    if (aligned) memcpy(aligned, buf, len);
    CHECKF(aligned && ncf_model_open(&in_place, aligned, len, 0) == NCF_OK, "%s", ncf_error_text());
    if (!loaded || !in_place) goto done;
    u = ncf_find(m, NCF_USER, "007");
    for (k = 0; k < 3; k++) {
        const ncf_model *x = k == 0 ? m : k == 1 ? loaded : in_place;
        int32_t pu = ncf_find(x, NCF_USER, "007"), pi = ncf_find(x, NCF_ITEM, "034545104X");
        CHECK(ncf_find(x, NCF_USER, "007") == u &&
              ncf_find(x, NCF_ITEM, kept[3]) == ncf_dataset_find(&d, NCF_ITEM, kept[3]));
        ro.k = 5, n[k] = ncf_recommend_index(x, u, &ro, top[k], sc[k]);
        CHECK(pu >= 0 && pi >= 0 && ncf_predict_index(x, &pu, &pi, 1, &z[k]) == NCF_OK);
        CHECK(ncf_id(x, NCF_ITEM, top[k][0], id, sizeof id) > 0 && ncf_dataset_find(&d, NCF_ITEM, id) == top[k][0]);
        CHECK_ERR(recommend_k((ncf_model *)(uintptr_t)x, 7, 5, 1, (int64_t *)top, NULL), NCF_ERR_ARG,
                  "item ids are text");
    }
    CHECK(n[0] == 5 && n[1] == 5 && n[2] == 5 && !memcmp(top[0], top[1], sizeof top[0]) &&
          !memcmp(top[0], top[2], sizeof top[0]));
    CHECK(!memcmp(sc[0], sc[1], sizeof sc[0]) && !memcmp(sc[0], sc[2], sizeof sc[0]) && z[0] == z[1] && z[0] == z[2]);
    { /* ncf_predict by integer ids finds text ids by their decimal form: "7", not "007"; 1004 */
        float a = 0, b = 0;
        int32_t pu = ncf_find(m, NCF_USER, "7"), pi = ncf_find(m, NCF_ITEM, "1004");
        CHECK(ncf_predict(m, 7, 1004, &a) == NCF_OK && ncf_predict_index(m, &pu, &pi, 1, &b) == NCF_OK && a == b);
        CHECK_ERR(ncf_predict(m, 7, 4, &a), NCF_ERR_ARG, "unknown item 4");
    }
    ro.k = 3, ro.probabilities = 1; /* probabilities are the logits' sigmoid */
    CHECK(ncf_recommend_index(m, u, &ro, top[0], sc[1]) == 3 && top[0][0] == top[2][0] &&
          fabsf(sc[1][0] - 1.0f / (1.0f + expf(-sc[2][0]))) < 1e-6f);
    CHECK_ERR(ncf_recommend_index(m, d.num_users, &ro, top[0], NULL), NCF_ERR_ARG, "an index, not an id");
done:
    ncf_model_free(m), ncf_model_free(loaded), ncf_model_free(in_place);
    free(aligned), ncf_free(buf);
    ncf_dataset_free(&d);
}

/* A column of plain integers keeps numbers (and today's speed); one id written otherwise turns
   the whole column to text, so "01" and "1" are two ids and nothing loses a zero. */
static void test_plain_integer_ids_stay_numbers(void)
{
    ncf_dataset d;
    ncf_dataset_opts o = ncf_dataset_opts_default();
    const char *a = "1,10\n1,20\n2,10\n2,30\n";
    const char *b = "1,10\n1,20\n2,10\n2,30\n01,30\n01,20\n";
    char id[16];
    o.eval_negatives = 1;
    CHECKF(ncf_load_dataset_mem(&d, "a", a, strlen(a), &o) == NCF_OK, "%s", ncf_error_text());
    CHECK(d.raw_user && d.raw_item && !d.user_text && !d.item_text && d.raw_item[2] == 30);
    CHECK(ncf_dataset_id(&d, NCF_USER, 1, id, sizeof id) == 1 && !strcmp(id, "2") &&
          ncf_dataset_find(&d, NCF_ITEM, "30") == 2);
    CHECK_ERR(ncf_dataset_find(&d, NCF_ITEM, "030"), NCF_ERR_ARG, "unknown item '030'");
    ncf_dataset_free(&d);
    CHECKF(ncf_load_dataset_mem(&d, "b", b, strlen(b), &o) == NCF_OK, "%s", ncf_error_text());
    CHECK(d.user_text && !d.raw_user && d.raw_item && d.num_users == 3);
    CHECK(ncf_dataset_find(&d, NCF_USER, "01") == 0 &&
          ncf_dataset_find(&d, NCF_USER, "1") == 1); /* "01" < "1" by bytes */
    ncf_dataset_free(&d);
}

static void test_long_and_nul_ids_refused_with_file_line(void)
{
    ncf_dataset d;
    char text[1024];
    const char *head = "user,item\nu1,i1\nu1,";
    size_t n = strlen(head);
    memset(text, 'x', sizeof text);
    memcpy(text, head, n);
    text[n + NCF_MAX_ID_BYTES + 1] = '\n';
    CHECK_ERR(ncf_load_dataset_mem(&d, "long.csv", text, n + NCF_MAX_ID_BYTES + 2, NULL), NCF_ERR_PARSE,
              "long.csv:3: item id 'xxxx");
    memcpy(text + n, "ok\nu2,a", 7), text[n + 7] = 0, memcpy(text + n + 8, "b\n", 2);
    n += 10;
    CHECK_ERR(ncf_load_dataset_mem(&d, "nul.csv", text, n, NULL), NCF_ERR_PARSE,
              "nul.csv:4: item id 'a\\x00b' holds a NUL byte");
    CHECK(d.user_ptr == NULL);
}

/* min_item_ratings drops items with fewer positives from the users kept, and kcore repeats both
   filters until every user and item meets its minimum; the report says what each dropped.
   A: a b c d, B: a b f, C: a c f, D: e, E: a e (min_ratings 2, min_item_ratings 2). */
/* The weight the log gives (user, item): 1 + alpha f(s), s the sum of the pair's strengths,
   read here with sscanf (not the library's reader). */
static float log_weight(const char *text, const char *user, const char *item, int weighting, double alpha)
{
    const char *p = strchr(text, '\n') + 1; /* (past the header) */
    char u[16], i[16];
    double v, sum = 0;
    int n;
    for (; *p && sscanf(p, "%15[^,],%15[^,],%lf%n", u, i, &v, &n) == 3; p += n + 1)
        if (!strcmp(u, user) && !strcmp(i, item)) sum += v;
    return (float)(1 + alpha * (weighting == NCF_WEIGHT_LOG ? log1p(sum) : sum));
}

/* Every training positive of d weighs what the log says; items ascending per user. */
static int weights_match_log(const ncf_dataset *d, const char *text, int weighting, double alpha)
{
    char u[16], i[16];
    int user, ok = d->weight != NULL;
    int64_t k;
    for (user = 0; ok && user < d->num_users; user++)
        for (k = d->user_ptr[user]; ok && k < d->user_ptr[user + 1]; k++) {
            ok &= ncf_dataset_id(d, NCF_USER, user, u, sizeof u) > 0 &&
                ncf_dataset_id(d, NCF_ITEM, d->items[k], i, sizeof i) > 0;
            ok &= d->weight[k] == log_weight(text, u, i, weighting, alpha);
            ok &= k == d->user_ptr[user] || d->items[k - 1] < d->items[k];
        }
    for (user = 0; ok && d->val_item && user < d->num_users; user++) /* the validation items keep theirs */
        if (d->val_item[user] >= 0) {
            ok &= d->val_weight && ncf_dataset_id(d, NCF_USER, user, u, sizeof u) > 0 &&
                ncf_dataset_id(d, NCF_ITEM, d->val_item[user], i, sizeof i) > 0;
            ok &= ok && d->val_weight[user] == log_weight(text, u, i, weighting, alpha);
        }
    return ok;
}

static int load_text(ncf_dataset *d, const char *name, const char *text, const ncf_dataset_opts *o)
{
    return ncf_load_dataset_mem(d, name, text, strlen(text), o);
}

/* A strength column weighs each positive 1 + alpha f(s), s summed over a pair's lines; the
   weights stay beside their positives through the hold-outs, ncf_dataset_add_ids (whose ids
   here reorder the items) and the sampler; bad strengths and settings name what is wrong. */
static void test_weights_follow_their_positives(void)
{
    const char *log = "user,item,plays\nu1,9,2\nu1,10,5\nu1,9,3\nu1,11,0\nu1,9,1\nu1,12,4\nu2,9,7\nu2,10,1\n"
                      "u2,11,2.5\nu2,12,6\nu2,13,1\nu3,10,8\nu3,13,2\nu3,12,1\nu3,9,1\nu3,14,3\nu3,15,0.5\nu3,14,1\n";
    const char *other = "user,item\nu1,9\nu4,x\nu2,10\nu4,9\n";
    ncf_dataset_opts o = ncf_dataset_opts_default();
    ncf_dataset d, e;
    ncf_model *m = NULL;
    ncf_config c = ncf_config_default();
    ncf_sampler s;
    int w, bad_label = 0, positives = 0;
    o.eval_negatives = 1, o.seed = 4, o.holdout = NCF_HOLDOUT_RANDOM;
    CHECK(ncf_load_dataset_mem(&d, "plays.csv", log, strlen(log), &o) == NCF_OK && d.weight == NULL);
    ncf_dataset_free(&d);
    for (w = NCF_WEIGHT_LINEAR; w <= NCF_WEIGHT_LOG; w++) {
        o.weighting = w, o.alpha = w == NCF_WEIGHT_LOG ? 2.5f : 0.5f, o.validation = 0;
        CHECKF(ncf_load_dataset_mem(&d, "plays.csv", log, strlen(log), &o) == NCF_OK, "%s", ncf_error_text());
        CHECK(weights_match_log(&d, log, w, o.alpha) && d.report.duplicates == 3 &&
              !strcmp(d.report.columns[4], "plays"));
        CHECK(d.report.weight_min == 1 && d.report.weight_max > 4);
        ncf_dataset_free(&d);
        o.validation = 1;
        CHECKF(ncf_load_dataset_mem(&d, "plays.csv", log, strlen(log), &o) == NCF_OK, "%s", ncf_error_text());
        CHECK(d.val_item && weights_match_log(&d, log, w, o.alpha));
        /* a model whose text ids put "10" before "9": the data's items change order */
        {
            ncf_dataset_opts q = ncf_dataset_opts_default();
            q.holdout = NCF_HOLDOUT_NONE;
            CHECKF(ncf_load_dataset_mem(&e, "other.csv", other, strlen(other), &q) == NCF_OK, "%s", ncf_error_text());
        }
        c.num_users = e.num_users, c.num_items = e.num_items;
        CHECK(ncf_model_create(&m, &c) == NCF_OK && ncf_model_set_ids(m, &e) == NCF_OK);
        CHECK(ncf_dataset_add_ids(&d, m) == NCF_OK && d.item_text && d.num_users == 4);
        CHECK(weights_match_log(&d, log, w, o.alpha));
        CHECK(ncf_sampler_init(&s, &d, 3, 9) == NCF_OK);
        { /* an epoch's positives carry their weights */
            int32_t us[512], is[512];
            float ys[512];
            int64_t j, k;
            CHECK(s.num_examples <= 512);
            ncf_sampler_fill(&s, 1, 0, (int)s.num_examples, us, is, ys);
            for (j = 0; j < s.num_examples; j++) {
                if (ys[j] == 0) continue;
                positives++;
                for (k = d.user_ptr[us[j]]; k < d.user_ptr[us[j] + 1] && d.items[k] != is[j]; k++) {}
                bad_label += k == d.user_ptr[us[j] + 1] || ys[j] != d.weight[k];
            }
        }
        ncf_model_free(m), m = NULL;
        ncf_dataset_free(&d), ncf_dataset_free(&e);
    }
    CHECKF(bad_label == 0 && positives >= 18, "%d of %d positives with the wrong weight", bad_label, positives);
    /* bad strengths name file:line; bad settings say what is wrong */
    o = ncf_dataset_opts_default(), o.eval_negatives = 1, o.weighting = NCF_WEIGHT_LINEAR;
    CHECK_ERR(load_text(&d, "neg.csv", "user,item,plays\n1,2,3\n1,3,-1\n", &o), NCF_ERR_PARSE,
              "neg.csv:3: strength '-1'");
    CHECK_ERR(load_text(&d, "inf.csv", "user,item,plays\n1,2,1e999\n", &o), NCF_ERR_PARSE,
              "inf.csv:2: strength '1e999'");
    o.columns[NCF_COL_RATING] = "", o.columns[NCF_COL_STRENGTH] = "plays";
    CHECK_ERR(load_text(&d, "nan.csv", "user,item,plays\n1,2,nan\n", &o), NCF_ERR_PARSE, "nan.csv:2: strength 'nan'");
    CHECK_ERR(load_text(&d, "txt.csv", "user,item,plays\n1,2,many\n", &o), NCF_ERR_PARSE, "txt.csv:2: strength 'many'");
    o.columns[NCF_COL_STRENGTH] = NULL;
    CHECK_ERR(load_text(&d, "none.csv", "user,item\n1,2\n", &o), NCF_ERR_ARG, "needs a strength column");
    o = ncf_dataset_opts_default(), o.eval_negatives = 1, o.weighting = NCF_WEIGHT_LOG, o.alpha = 0;
    CHECK_ERR(ncf_load_dataset_mem(&d, "a0.csv", log, strlen(log), &o), NCF_ERR_ARG, "alpha 0");
    o.alpha = NAN;
    CHECK_ERR(ncf_load_dataset_mem(&d, "anan.csv", log, strlen(log), &o), NCF_ERR_ARG, "0 < alpha");
    o.alpha = 1e6f, o.weighting = NCF_WEIGHT_LINEAR, o.holdout = NCF_HOLDOUT_NONE;
    CHECK_ERR(load_text(&d, "big.csv", "user,item,plays\n1,2,1e4\n1,3,1\n2,4,1\n2,2,1\n", &o), NCF_ERR_DATA,
              "past 1e+09");
    o.weighting = 7;
    CHECK_ERR(ncf_load_dataset_mem(&d, "w7.csv", log, strlen(log), &o), NCF_ERR_ARG, "weighting 7");
}

static void test_item_filter_and_kcore_report_what_they_drop(void)
{
    const char *text = "user,item\nA,a\nA,b\nA,c\nA,d\nB,a\nB,b\nB,f\nC,a\nC,c\nC,f\nD,e\nE,a\nE,e\n";
    ncf_dataset_opts o = ncf_dataset_opts_default();
    ncf_dataset d;
    const ncf_load_report *r = &d.report;
    char id[8];
    o.holdout = NCF_HOLDOUT_NONE, o.min_ratings = 2, o.min_item_ratings = 2;
    /* D (1 positive) goes first; then of A B C E's positives d and e have 1 each and go; E keeps a */
    CHECKF(ncf_load_dataset_mem(&d, "log", text, strlen(text), &o) == NCF_OK, "%s", ncf_error_text());
    CHECK(d.num_users == 4 && d.num_items == 4 && d.num_train == 10);
    CHECK(r->users_few_ratings == 1 && r->few_ratings == 1 && r->items_few_item_ratings == 2 &&
          r->few_item_ratings == 2);
    CHECK(r->users_filtered_out == 0 && r->users_every_item == 0 && r->filter_rounds == 2);
    ncf_dataset_free(&d);
    /* kcore: E, left with one positive, goes too, and nothing more */
    o.kcore = 1;
    CHECKF(ncf_load_dataset_mem(&d, "log", text, strlen(text), &o) == NCF_OK, "%s", ncf_error_text());
    CHECK(d.num_users == 3 && d.num_items == 4 && d.num_train == 9 && r->users_filtered_out == 1 &&
          r->filter_rounds == 2);
    CHECK(ncf_dataset_id(&d, NCF_USER, 2, id, sizeof id) > 0 && !strcmp(id, "C"));
    CHECK(ncf_dataset_id(&d, NCF_ITEM, 3, id, sizeof id) > 0 && !strcmp(id, "f"));
    ncf_dataset_free(&d);
    o.kcore = 2;
    CHECK_ERR(ncf_load_dataset_mem(&d, "log", text, strlen(text), &o), NCF_ERR_ARG, "kcore 2");
    o.kcore = 1, o.min_item_ratings = 5;
    CHECK_ERR(ncf_load_dataset_mem(&d, "log", text, strlen(text), &o), NCF_ERR_DATA, "no user is left by the filters");
}

static void test_min_rating_keeps_positives_and_reports_drops(void)
{
    /* a book export: 0 means seen, 1-10 a rating */
    const char *text = "user;item;rating\nA;b1;0\nA;b2;8\nA;b3;9\nB;b1;0\nB;b4;0.9\nC;b2;5\nC;b5;6\nC;b5;7\nD;b2;1.1\n";
    ncf_dataset d;
    ncf_dataset_opts o = ncf_dataset_opts_default();
    const ncf_load_report *r = &d.report;
    o.eval_negatives = 1, o.min_rating = 1.1f, o.min_ratings = 2; /* (1.1 rated is at least 1.1f) */
    CHECKF(ncf_load_dataset_mem(&d, "books.csv", text, strlen(text), &o) == NCF_OK, "%s", ncf_error_text());
    /* read: 9 lines, users A B C D, items b1..b5. Below 1: 3 lines; B and b1, b4 left with none.
       min_ratings 2: D (one positive) dropped; no item only D rated. (C, b5) twice: one merged. */
    CHECK(r->interactions == 9 && r->users_read == 4 && r->items_read == 5);
    CHECK(r->below_min_rating == 3 && r->users_below_min_rating == 1 && r->items_below_min_rating == 2);
    CHECK(r->few_ratings == 1 && r->users_few_ratings == 1 && r->items_few_ratings == 0 && r->duplicates == 1);
    CHECK(d.num_users == 2 && d.num_items == 3 && d.num_train == 2); /* A {b2,b3}, C {b2,b5}: one each held out */
    ncf_dataset_free(&d);
    o.min_ratings = 3; /* D, and then b2 only... no: A and C keep b2; D's drop costs no item */
    CHECKF(ncf_load_dataset_mem(&d, "books.csv", text, strlen(text), &o) == NCF_ERR_DATA, "%s", "loaded");
    o.min_ratings = 0, o.min_rating = 20.0f;
    CHECK_ERR(ncf_load_dataset_mem(&d, "books.csv", text, strlen(text), &o), NCF_ERR_DATA,
              "no interaction is rated at least");
    o.min_rating = 1.0f, o.columns[NCF_COL_RATING] = "";
    CHECK_ERR(ncf_load_dataset_mem(&d, "books.csv", text, strlen(text), &o), NCF_ERR_ARG,
              "min_rating needs a rating column");
}

/* Whether the test items of a and b are the same, user for user. */
static int same_tests(const ncf_dataset *a, const ncf_dataset *b)
{
    return a->num_users == b->num_users && !memcmp(a->test_item, b->test_item, sizeof(int32_t) * (size_t)a->num_users);
}

static void test_holdout_latest_random_or_none_as_asked(void)
{
    char text[8192];
    size_t n = 0;
    ncf_dataset lat, r1, r1b, r2, none;
    ncf_dataset_opts o = ncf_dataset_opts_default();
    ncf_metrics m;
    ncf_eval_opts eo = ncf_eval_opts_default();
    int u, i, differ = 0, ok;
    for (u = 0; u < 50; u++) /* user u rated items u..u+5, the latest by time the first */
        for (i = 0; i < 6; i++) n += (size_t)sprintf(text + n, "%d,%d,%d\n", u, u + i, 1000 - i);
    n += (size_t)sprintf(text + n, "99,7,5\n"); /* one interaction: it stays in training */
    o.eval_negatives = 3, o.columns[NCF_COL_RATING] = "", o.columns[NCF_COL_TIME] = "3";
    CHECK(ncf_load_dataset_mem(&lat, "t.csv", text, n, &o) == NCF_OK && lat.report.holdout == NCF_HOLDOUT_LATEST);
    for (u = 0, ok = 1; u < 50; u++) ok &= lat.test_item[u] >= 0 && lat.raw_item[lat.test_item[u]] == u;
    CHECK(ok && lat.test_item[50] == -1 && lat.user_ptr[51] - lat.user_ptr[50] == 1);
    o.holdout = NCF_HOLDOUT_RANDOM, o.seed = 1;
    CHECK(ncf_load_dataset_mem(&r1, "t.csv", text, n, &o) == NCF_OK &&
          ncf_load_dataset_mem(&r1b, "t.csv", text, n, &o) == NCF_OK);
    o.seed = 2;
    CHECK(ncf_load_dataset_mem(&r2, "t.csv", text, n, &o) == NCF_OK);
    CHECK(same_tests(&r1, &r1b) && !same_tests(&r1, &r2) && r1.report.holdout == NCF_HOLDOUT_RANDOM);
    for (u = 0, ok = 1; u < 50; u++) { /* one of the user's own, held out of training */
        int64_t t = r1.raw_item[r1.test_item[u]], k;
        ok &= t >= u && t < u + 6 && r1.user_ptr[u + 1] - r1.user_ptr[u] == 5;
        for (k = r1.user_ptr[u]; k < r1.user_ptr[u + 1]; k++) ok &= r1.items[k] != r1.test_item[u];
        differ += r1.test_item[u] != lat.test_item[u];
    }
    CHECK(ok && differ > 25 && r1.test_item[50] == -1);
    o.columns[NCF_COL_TIME] = NULL, o.holdout = NCF_HOLDOUT_AUTO, o.seed = 1; /* no time column: random */
    {
        ncf_dataset auto_;
        o.columns[NCF_COL_TIME] = "";
        CHECK(ncf_load_dataset_mem(&auto_, "t.csv", text, n, &o) == NCF_OK &&
              auto_.report.holdout == NCF_HOLDOUT_RANDOM);
        ncf_dataset_free(&auto_);
    }
    o.holdout = NCF_HOLDOUT_NONE, o.columns[NCF_COL_TIME] = "3";
    CHECK(ncf_load_dataset_mem(&none, "t.csv", text, n, &o) == NCF_OK);
    for (u = 0, ok = 1; u < none.num_users; u++) ok &= none.test_item[u] == -1;
    CHECK(ok && none.num_train == 301 && none.num_eval_neg == 0 && none.report.holdout == NCF_HOLDOUT_NONE);
    {
        ncf_model *md = NULL;
        ncf_sampler s;
        ncf_config c = ncf_config_default();
        int64_t top[3];
        c.num_users = none.num_users, c.num_items = none.num_items;
        CHECK(ncf_model_create(&md, &c) == NCF_OK && ncf_model_set_ids(md, &none) == NCF_OK &&
              ncf_sampler_init(&s, &none, 2, 1) == NCF_OK && ncf_train_epoch(md, &s, 1, NULL, NULL, NULL) == NCF_OK);
        CHECK_ERR(ncf_evaluate(md, &none, &eo, &m), NCF_ERR_DATA, "nothing to evaluate");
        CHECK_ERR(ncf_evaluate(NULL, &none, &eo, &m), NCF_ERR_DATA, "nothing to evaluate");
        CHECK(ncf_save(md, path_in_dir("none.ncf"), NCF_SAVE_MODEL) == NCF_OK);
        CHECK(recommend_k(md, 3, 3, 1, top, NULL) == 3 && top[0] != 3 && top[1] != 4);
        ncf_model_free(md);
        remove(path_in_dir("none.ncf"));
    }
    o.validation = 1;
    ncf_dataset_free(&r2);
    CHECK_ERR(ncf_load_dataset_mem(&r2, "t.csv", text, n, &o), NCF_ERR_ARG, "validation needs a hold-out");
    ncf_dataset_free(&lat), ncf_dataset_free(&r1), ncf_dataset_free(&r1b), ncf_dataset_free(&r2),
        ncf_dataset_free(&none);
}

/* HR@1 and the ranks of the popularity baseline, worked by hand on the metrics test's data. */
static void test_popularity_figures_match_hand_computation(void)
{
    /* users 0-3; training positives: item 0 by 3 users, item 1 by 2, item 2 by 1 */
    int64_t tu[10] = {0, 0, 1, 1, 2, 3, 0, 1, 2, 3}, ti[10] = {0, 1, 0, 1, 0, 2, 3, 2, 5, 4};
    int64_t tt[10] = {1, 1, 1, 1, 1, 1, 2, 2, 2, 2};
    int32_t negs[8] = {0, 4, /* user 0, test 3 (pop 0): 0 outranks it, 4 (pop 0) ties: rank 2 */
                       5, 3, /* user 1, test 2 (pop 1): rank 0 */
                       1, 2, /* user 2, test 5 (pop 0): rank 2 */
                       0, 5 /* user 3, test 4 (pop 0): 0 outranks, 5 ties: rank 2 */};
    ncf_dataset d;
    ncf_metrics m;
    ncf_eval_opts o = ncf_eval_opts_default();
    CHECK(build_fixed(&d, tu, ti, tt, 10, 4, 6) == NCF_OK);
    CHECK(d.test_item[0] == 3 && d.test_item[1] == 2 && d.test_item[2] == 5 && d.test_item[3] == 4);
    d.eval_neg = (int32_t *)NCF_MALLOC(sizeof negs);
    memcpy(d.eval_neg, negs, sizeof negs), d.num_eval_neg = 2;
    o.k = 1;
    CHECK(ncf_evaluate(NULL, &d, &o, &m) == NCF_OK && m.users == 4 && m.hr == 0.25 &&
          fabs(m.mrr - (1 + 3 / 3.0) / 4) < 1e-12);
    o.k = 3;
    CHECK(ncf_evaluate(NULL, &d, &o, &m) == NCF_OK && m.hr == 1.0);
    /* full ranking: user 1 (rated 0, 1; test 2): items 3, 4, 5 all score 0 < 1: rank 0. User 0
       (rated 0, 1, test 3): 2 outranks (1 > 0), 4 and 5 tie: rank 3. */
    o.full_ranking = 1, o.k = 1;
    CHECK(ncf_evaluate(NULL, &d, &o, &m) == NCF_OK && m.users == 4 && m.hr == 0.25);
    ncf_dataset_free(&d);
}

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

static int rated_by(const ncf_dataset *d, int u, int i)
{
    int64_t k;
    for (k = d->user_ptr[u]; k < d->user_ptr[u + 1]; k++)
        if (d->items[k] == i) return 1;
    return d->test_item[u] == i;
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

/* Item fold-in, the mirror of a user's: ncf_predict_users scores as training does (against
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
        CHECKF(!memcmp(by_index, by_row, sizeof by_row), "model %d: ncf_predict_users is not the forward's", t);
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
    CHECK(ncf_model_add(&m, 0, "newbie", urow) == NCF_OK && m->cfg.num_users == 9);
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
    CHECK(ncf_model_add(&m, 1, "b2", irow) == NCF_OK && m->cfg.num_items == 11);
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
    CHECK(ncf_model_add(&m, 0, "u3", urow) == NCF_OK && m->cfg.num_users == 9);
    o.k = 5, o.exclude_rated = 0;
    CHECK(ncf_recommend_index(m, ncf_find(m, NCF_USER, "u3"), &o, top, sc) == 5 &&
          !memcmp(sc, sc_row, sizeof(float) * 5));
    CHECK_ERR(ncf_model_add(&m, 2, "x", urow), NCF_ERR_ARG, "side 0");
    CHECK_ERR(ncf_model_add(&m, 0, "", urow), NCF_ERR_ARG, "1 to 256 bytes");
    urow[0] = 1e30f;
    CHECK_ERR(ncf_model_add(&m, 0, "nan", urow), NCF_ERR_ARG, "rows[0]");
    ncf_model_free(m), ncf_model_free(back), ncf_free(buf), ncf_dataset_free(&d);
    /* integer ids */
    CHECK(ncf_synthetic(&d, 30, 20, 300, 3, 4) == NCF_OK);
    c.num_users = d.num_users, c.num_items = d.num_items, m = NULL;
    CHECK(ncf_model_create(&m, &c) == NCF_OK && ncf_model_set_ids(m, &d) == NCF_OK);
    memset(urow, 0, sizeof urow);
    CHECK_ERR(ncf_model_add(&m, 1, "abc", urow), NCF_ERR_ARG, "item ids are integers");
    CHECK(ncf_model_add(&m, 1, "123456", urow) == NCF_OK && ncf_find(m, NCF_ITEM, "123456") == 20 &&
          m->cfg.num_items == 21);
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
        CHECK_ERR(ncf_evaluate(dm, &d, &(ncf_eval_opts){10, 0, 0, 0, 0, 0}, &mt), NCF_ERR_ARG, "other ids");
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
        CHECK_ERR(ncf_save(m, fifo, NCF_SAVE_MODEL), NCF_ERR_IO, "exists and is not a regular file: not replaced");
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

/* ---- >>environment: a hostile system: threads that cannot start, stale temporary files ------- */

/* Under an address space too small for the threads' stacks, or a limit on a user's threads,
   OpenMP's runtime exits the process as it starts a team; the library starts the threads
   first and runs each region with as many as could start. (--thread-limit-child runs the work
   in a fresh process so limited.) */
#if defined(_OPENMP) && !defined(_WIN32) && !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
#define THREAD_LIMIT_TEST 1
/* Trains an epoch, evaluates and serves every user under the limits given (address space MB
   past what the process has, or -1; threads the user may run, or 0), with `threads` asked
   for; prints a hash of every answer. */
static int thread_limit_child(long extra_mb, long nproc, int threads)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long kb = 0;
    struct rlimit r;
    ncf_dataset d;
    ncf_model *m = NULL;
    ncf_sampler smp;
    ncf_config c = ncf_config_default();
    ncf_rec_opts ro = ncf_rec_opts_default();
    ncf_metrics a, b;
    int32_t items[60 * 5];
    float scores[60 * 5];
    int counts[60], rc;
    uint64_t h = 0;
    double loss = 0;
    while (f && fgets(line, sizeof line, f))
        if (!strncmp(line, "VmSize:", 7)) kb = atol(line + 7);
    if (f) fclose(f);
    if (nproc > 0 && getuid() == 0 && (setgid(65534) != 0 || setuid(65534) != 0)) return 3; /* (root has no limit) */
    r.rlim_cur = r.rlim_max = (rlim_t)nproc;
    if (nproc > 0 && setrlimit(RLIMIT_NPROC, &r) != 0) return 3;
    r.rlim_cur = r.rlim_max = (rlim_t)(kb + extra_mb * 1024) * 1024;
    if (extra_mb >= 0 && (!kb || setrlimit(RLIMIT_AS, &r) != 0)) return 3;
    ncf_set_threads(threads);
    rc = ncf_synthetic(&d, 60, 40, 900, 4, 1);
    c.num_users = d.num_users, c.num_items = d.num_items, c.batch_size = 64;
    if (rc == NCF_OK) rc = ncf_sample_eval_negatives(&d, 10, 2);
    if (rc == NCF_OK) rc = ncf_model_create(&m, &c);
    if (rc == NCF_OK) rc = ncf_model_set_ids(m, &d);
    if (rc == NCF_OK) rc = ncf_sampler_init(&smp, &d, 4, 1);
    if (rc == NCF_OK) rc = ncf_train_epoch(m, &smp, 1, NULL, NULL, &loss);
    if (rc == NCF_OK) rc = evaluate_k(m, &d, 10, NCF_SAMPLED, &a);
    if (rc == NCF_OK) rc = evaluate_k(m, &d, 10, NCF_FULL_RANKING, &b);
    ro.k = 5;
    if (rc == NCF_OK) rc = ncf_recommend_users(m, NULL, d.num_users, &ro, items, scores, counts);
    if (rc == NCF_OK) {
        h = ncf__mix64(h ^ (uint64_t)(loss * 1e15)) ^ (uint64_t)(a.hr * 1e9) ^ ((uint64_t)(b.ndcg * 1e12) << 20);
        h = ncf__mix64(h ^ (uint64_t)ncf__crc32((const uint8_t *)items, sizeof items) ^
                       ((uint64_t)ncf__crc32((const uint8_t *)scores, sizeof scores) << 32));
        printf("trained %016llx\n", (unsigned long long)h);
    } else printf("%s\n", ncf_error_text());
    ncf_model_free(m);
    ncf_dataset_free(&d);
    return rc == NCF_OK || rc == NCF_ERR_NOMEM ? 0 : 1;
}

static int run_limited(long extra_mb, long nproc, int threads, char *out, size_t size)
{
    int fd[2], status = -1;
    pid_t pid;
    ssize_t got;
    if (pipe(fd) != 0) return -1;
    if ((pid = fork()) == 0) {
        char a[3][32], *args[6];
        dup2(fd[1], 1), close(fd[0]);
        snprintf(a[0], 32, "%ld", extra_mb), snprintf(a[1], 32, "%ld", nproc), snprintf(a[2], 32, "%d", threads);
        args[0] = (char *)"tests", args[1] = (char *)"--thread-limit-child", args[2] = a[0], args[3] = a[1],
        args[4] = a[2];
        args[5] = NULL;
        execv("/proc/self/exe", args);
        _exit(4);
    }
    close(fd[1]);
    got = read(fd[0], out, size - 1);
    out[got > 0 ? got : 0] = 0;
    close(fd[0]);
    waitpid(pid, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}

static void test_no_exit_when_threads_cannot_start(void)
{
    static const long levels[10][2] = {{2, 0},  {6, 0},  {12, 0}, {20, 0}, {40, 0},
                                       {-1, 1}, {-1, 2}, {-1, 3}, {-1, 5}, {-1, 9}};
    static const int asked[4] = {1, 2, 8, 64};
    char want[512], out[512];
    int l, t, trained = 0, nomem = 0;
    CHECK(run_limited(-1, 0, 2, want, sizeof want) == 0 && !strncmp(want, "trained ", 8));
    for (l = 0; l < 10; l++)
        for (t = 0; t < 4; t++) {
            int rc = run_limited(levels[l][0], levels[l][1], asked[t], out, sizeof out);
            CHECKF(rc == 0 && (!strcmp(out, want) || strstr(out, "out of memory")),
                   "address space +%ld MB, %ld threads allowed, %d asked: exit %d, said '%s' (alone: '%s')",
                   levels[l][0], levels[l][1], asked[t], rc, out, want);
            trained += !strcmp(out, want), nomem += strstr(out, "out of memory") != NULL;
        }
    printf("    10 limits x 1, 2, 8, 64 threads asked: %d trained, evaluated and served with the same answers bit "
           "for bit, %d said out of memory; no exit\n",
           trained, nomem);
}
#endif

#ifndef _WIN32
/* A killed save's temporary file is removed by the next save to that path; a fresh one, or
   one a live save holds locked, is not. */
static void test_orphaned_temporary_files_removed(void)
{
    ncf_model *m = NULL;
    ncf_config c = ncf_config_default();
    char path[400], dead[450], fresh[450], held[450];
    struct utimbuf old;
    int go[2], ready[2];
    pid_t pid;
    char byte = 0;
    c.num_users = 5, c.num_items = 5;
    CHECK(ncf_model_create(&m, &c) == NCF_OK);
    snprintf(path, sizeof path, "%s/orphans.ncf", g_dir);
    snprintf(dead, sizeof dead, "%s.tmp-00000000dead", path),
        snprintf(fresh, sizeof fresh, "%s.tmp-00000000f00d", path);
    snprintf(held, sizeof held, "%s.tmp-000000001eed", path);
    write_file("orphans.ncf.tmp-00000000dead", "half a model"),
        write_file("orphans.ncf.tmp-000000001eed", "a live save");
    old.actime = old.modtime = time(NULL) - 3600;
    CHECK(utime(dead, &old) == 0 && utime(held, &old) == 0);
    CHECK(pipe(go) == 0 && pipe(ready) == 0);
    if ((pid = fork()) == 0) { /* a live save: it holds its file's lock */
        struct flock lock;
        int fd = open(held, O_RDWR);
        memset(&lock, 0, sizeof lock);
        lock.l_type = F_WRLCK, lock.l_whence = SEEK_SET;
        if (fd < 0 || fcntl(fd, F_SETLK, &lock) != 0) _exit(1);
        if (write(ready[1], "r", 1) != 1 || read(go[0], &byte, 1) != 1) _exit(1);
        _exit(0);
    }
    CHECK(read(ready[0], &byte, 1) == 1);
    write_file("orphans.ncf.tmp-00000000f00d", "a save just begun");
    CHECK(ncf_save(m, path, NCF_SAVE_MODEL) == NCF_OK);
    CHECK(!ncf__file_exists(dead) && ncf__file_exists(fresh) && ncf__file_exists(held));
    CHECK(write(go[1], "g", 1) == 1);
    waitpid(pid, NULL, 0);
    remove(fresh), remove(held), remove(path);
    close(go[0]), close(go[1]), close(ready[0]), close(ready[1]);
    { /* only files named as the library names them: a user's old .tmp-backup stays */
        char backup[450];
        snprintf(backup, sizeof backup, "%s.tmp-backup", path);
        write_file("orphans.ncf.tmp-backup", "the user's own copy");
        write_file("orphans.ncf.tmp-00000000dead", "half a model");
        CHECK(utime(backup, &old) == 0 && utime(dead, &old) == 0);
        CHECK(ncf_save(m, path, NCF_SAVE_MODEL) == NCF_OK);
        CHECK(ncf__file_exists(backup) && !ncf__file_exists(dead));
        remove(backup), remove(path);
    }
    { /* a path that names a folder is refused before anything beside it is touched */
        char folder[450], inside[500];
        snprintf(folder, sizeof folder, "%s/", g_dir), snprintf(inside, sizeof inside, "%s/.tmp-00000000dead", g_dir);
        write_file(".tmp-00000000dead", "someone's file");
        CHECK(utime(inside, &old) == 0);
        CHECK_ERR(ncf_save(m, folder, NCF_SAVE_MODEL), NCF_ERR_IO, "names a folder, not a file");
        CHECK(ncf__file_exists(inside));
        remove(inside);
    }
    { /* another thread of this process saving to the same path: its file is live (its lock is
         per open file, which a lock per process, fcntl's, cannot show within one process) */
        ncf__outfile *live = NULL;
        struct utimbuf aged;
        CHECK(ncf__outfile_open(&live, path) == NCF_OK && ncf__outfile_printf(live, "the other save") == NCF_OK);
        aged.actime = aged.modtime = time(NULL) - 3600;
        CHECK(live && utime(live->name, &aged) == 0);
        CHECK(ncf_save(m, path, NCF_SAVE_MODEL) == NCF_OK);
        CHECK(live && ncf__file_exists(live->name));
        CHECKF(ncf__outfile_commit(live) == NCF_OK, "%s", ncf_error_text());
        {
            char got[64] = "";
            FILE *f = fopen(path, "rb");
            size_t n = f ? fread(got, 1, sizeof got - 1, f) : 0;
            if (f) fclose(f);
            got[n] = 0;
            CHECK(!strcmp(got, "the other save"));
        }
        remove(path);
    }
    ncf_model_free(m);
}
#endif

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
        size_t at = len - 4 - 4 * 3 * m->num_params; /* the first parameter */
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

/* ---- >>persistence: model files: round trips, resuming, corruption, older formats ------------ */

static ncf_model *trained_small(ncf_dataset *d, int epochs)
{
    ncf_config c = ncf_config_default();
    ncf_sampler s;
    ncf_model *m = NULL;
    int e;
    c.num_users = d->num_users, c.num_items = d->num_items, c.batch_size = 128, c.seed = 5;
    if (ncf_model_create(&m, &c) != NCF_OK || ncf_sampler_init(&s, d, 4, c.seed) != NCF_OK) return m;
    for (e = 1; e <= epochs; e++) ncf_train_epoch(m, &s, e, NULL, NULL, NULL);
    return m;
}

static int same_model(const ncf_model *a, const ncf_model *b, int adam)
{
    return a->num_params == b->num_params && !memcmp(&a->cfg, &b->cfg, sizeof a->cfg) &&
        !memcmp(a->params, b->params, sizeof(float) * a->num_params) &&
        (!adam ||
         (!memcmp(a->adam_m, b->adam_m, sizeof(float) * a->num_params) &&
          !memcmp(a->adam_v, b->adam_v, sizeof(float) * a->num_params) && a->step == b->step));
}

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
    CHECK(p[4] == 4 && p[5] == 0);
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
    p[4] = 5; /* a version from the future */
    {
        ncf_model *v5 = NULL;
        CHECK_ERR(ncf_load_mem(&v5, buf, len), NCF_ERR_PARSE, "reads versions 2 to 4");
        CHECK(v5 == NULL);
    }
    ncf_model_free(m), ncf_model_free(v3), ncf_model_free(v3p);
    ncf_free(buf);
    ncf_dataset_free(&d);
}

/* GMF and MLP models trained briefly on the same data, and a NeuMF of matching shape. */
static void pretrained_pair(const ncf_dataset *d, ncf_model **gmf, ncf_model **mlp, ncf_model **neumf)
{
    ncf_config c = ncf_config_default();
    ncf_sampler s;
    int e;
    c.num_users = d->num_users, c.num_items = d->num_items, c.batch_size = 128, c.seed = 11;
    c.layers[0] = 32, c.layers[1] = 16, c.layers[2] = 8, c.num_layers = 3;
    *gmf = *mlp = *neumf = NULL;
    CHECK(ncf_sampler_init(&s, d, 4, 11) == NCF_OK);
    c.model = NCF_GMF;
    CHECK(ncf_model_create(gmf, &c) == NCF_OK);
    c.model = NCF_MLP;
    CHECK(ncf_model_create(mlp, &c) == NCF_OK);
    c.model = NCF_NEUMF, c.seed = 12;
    CHECK(ncf_model_create(neumf, &c) == NCF_OK);
    for (e = 1; e <= 2 && *gmf && *mlp; e++) {
        CHECK(ncf_train_epoch(*gmf, &s, e, NULL, NULL, NULL) == NCF_OK);
        CHECK(ncf_train_epoch(*mlp, &s, e, NULL, NULL, NULL) == NCF_OK);
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
static void test_fit_chooses_on_validation_never_test(void)
{
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
    fo.epochs = 8;
    CHECKF(ncf_fit(a, &d, &fo, &ra) == NCF_OK && ncf_fit(b, &poisoned, &fo, &rb) == NCF_OK, "%s", ncf_error_text());
    CHECK(ra.chosen_epoch == rb.chosen_epoch && ra.epochs_trained == 8 && a->epoch == ra.chosen_epoch);
    CHECK(!memcmp(a->params, b->params, sizeof(float) * a->num_params));
    eo.target = NCF_EVAL_VALIDATION; /* by hand: the first epoch of the best validation HR */
    CHECK(ncf_sampler_init(&smp, &d, c.num_neg, c.seed) == NCF_OK);
    for (e = 1; e <= 8; e++) {
        CHECK(ncf_train_epoch(hand, &smp, e, NULL, NULL, NULL) == NCF_OK && ncf_evaluate(hand, &d, &eo, &mt) == NCF_OK);
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
   run on training alone of the winner's epochs and the final's of its chosen epochs. */
static int final_seeds_fit(const ncf_dataset *d, const ncf_tune_opts *o, const ncf_tune_report *r, int k)
{
    const ncf_trial *w = &r->runs[r->best];
    double rungs = r->planned_seconds - (r->seeds > 1 ? r->averaged.planned_seconds : 0);
    double left = o->budget - rungs > o->budget / 4 ? o->budget - rungs : o->budget / 4;
    double train = (double)ncf__all_train(d), all = train + ncf__val_users(d);
    return ncf__seeds_cost(d, w, k, train, ncf__val_users(d), w->epochs) +
        ncf__seeds_cost(d, w, k, all, 0, w->chosen_epoch > 0 ? w->chosen_epoch : 1) <=
        left;
}

/* The index of trial t's run in rung k of r; -1 when it has none. */
static int run_in_rung(const ncf_tune_report *r, int k, int t)
{
    int i;
    for (i = 0; i < r->num_runs; i++)
        if (r->runs[i].rung == k && r->runs[i].trial == t) return i;
    return -1;
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
        double cost = ncf__plan_cost(&left->cfg, d, ncf__val_users(d), r->rung_epochs[k]);
        if (left->rung != k - 1 || run_in_rung(r, k, left->trial) >= 0) continue;
        CHECKF(planned + cost > quarter, "rung %d: trial %d left out of a quarter that paid for it", k, left->trial);
        for (j = 0; j < r->num_runs; j++) { /* each run taken after it */
            const ncf_trial *t = &r->runs[j];
            int q = t->rung == k && !t->partner ? run_in_rung(r, k - 1, t->trial) : -1, before;
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
        int w, dk;
        ncf_config c = ncf__trial_config(d, seed, t, &w, &dk);
        if (!ncf__per_example_sgd(&c) || ncf__plan_cost(&c, d, ncf__val_users(d), r->rung_epochs[0]) > quarter / 8)
            continue;
        CHECKF(run_in_rung(r, 0, t) >= 0, "rung 0: %d SGD runs, and trial %d, SGD, fitted and was left out", sgd, t);
    }
}

/* Searches of several seeds and budgets, each later rung as planned (later_rung_as_planned);
   among them at least one rung filled past the families' thirds and one partner. */
static void test_tune_rungs_filled_and_paired(void)
{
    ncf_dataset d;
    ncf_tune_opts o = ncf_tune_opts_default();
    ncf_tune_report r;
    int seed, i, k, filled = 0, partners = 0;
    CHECK(tune_data(&d, 0));
    o.max_epochs = 9;
    for (seed = 1; seed <= 4; seed++) {
        o.seed = (uint64_t)seed, o.budget = 0.2 * seed;
        CHECKF(ncf_tune(&d, &o, &r) == NCF_OK, "%s", ncf_error_text());
        rung0_paired(&r, &d, o.seed, o.budget / 4);
        for (k = 1; k < 3; k++) later_rung_as_planned(&r, &d, k, o.budget / 4);
        for (i = 0; i < r.num_runs; i++) {
            int q =
                r.runs[i].rung > 0 && !r.runs[i].partner ? run_in_rung(&r, r.runs[i].rung - 1, r.runs[i].trial) : -1;
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
    rung0_paired(&r1, &d, o.seed, o.budget / 4);
    for (i = 1; i < 3; i++) later_rung_as_planned(&r1, &d, i, o.budget / 4);
    CHECK(r1.runs[0].trial == 0 && r1.runs[0].rung == 0 && r1.runs[r1.best].rung == 2 && !r1.too_small && !r1.stopped);
    CHECK(types[NCF_MF] + types[NCF_GMF] > 0 && types[NCF_NEUMF] > 0);
    for (i = r1.num_runs - rung2; i < r1.num_runs; i++)
        CHECK(i == r1.best || !ncf__run_better(&r1.runs[i], &r1.runs[r1.best], NCF_METRIC_HR));
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
    o.budget = 0.8; /* a larger budget: more settings; a trial number is the same settings in both */
    CHECK(ncf_tune(&d, &o, &r3) == NCF_OK && r3.num_trials > r1.num_trials);
    {
        int j, same = 0;
        for (i = 0; i < r3.num_runs; i++)
            for (j = 0; j < r1.num_runs; j++)
                if (r3.runs[i].trial == r1.runs[j].trial) {
                    CHECK(!memcmp(&r3.runs[i].cfg, &r1.runs[j].cfg, sizeof r1.runs[j].cfg));
                    same++;
                }
        CHECK(same >= r1.num_trials);
    }
    ncf_tune_report_free(&r3);
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

/* A lone run of SGD one example a step takes as partner the best-ranked such run left out, and
   nothing else changes: by hand over a ranked rung of Adam and SGD runs. */
/* A quarter of the MF trials are ALS, a family of their own, with L2 and the unobserved weight
   drawn in their ranges; an ALS run costs its rows x factors^2 and positives x factors. */
static void test_tune_draws_als_trials(void)
{
    ncf_dataset d;
    int t, w, dk, als = 0, sgd = 0, mf = 0;
    CHECK(ncf_synthetic(&d, 200, 150, 3000, 4, 2) == NCF_OK);
    for (t = 1; t <= 2000; t++) {
        ncf_config c = ncf__trial_config(&d, 5, t, &w, &dk);
        mf += c.model == NCF_MF, sgd += ncf__per_example_sgd(&c);
        if (c.optimizer != NCF_OPT_ALS) continue;
        als++;
        CHECKF(c.model == NCF_MF && !dk && ncf__family(&c) == 5 && ncf__check_config(&c) == NCF_OK &&
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
    CHECKF(als > mf / 6 && als < mf / 3 && sgd > mf / 3 && sgd < 2 * mf / 3, "%d MF trials: %d ALS, %d SGD", mf, als,
           sgd);
    ncf_dataset_free(&d);
}

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
        CHECKF(ncf__tune_run(&d, &o, &run) == NCF_OK, "%s", ncf_error_text()); /* (the run: its own epoch) */
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
                       r1.averaged.epochs_trained == r1.averaged.chosen_epoch + o.patience,
               "%d epochs trained, the best %d", r1.averaged.epochs_trained, r1.averaged.chosen_epoch);
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
    CHECKF(ncf_evaluate(NULL, &d, &(ncf_eval_opts){10, 0, 0, 0, 0, 0}, &pop) == NCF_OK, "%s", ncf_error_text());
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

/* ncf_model_open_verified skips the CRC and the value scan, and nothing else: it answers as
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
    CHECKF(diff == 0, "%d answers differ between ncf_model_open and ncf_model_open_verified", diff);
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
        ncf__rated_cursor c = ncf__rated_from(m, u, 0);
        for (; c.next != INT32_MAX; ncf__rated_step(&c)) nrated++;
    }
    for (i = 0; i < (size_t)m->cfg.num_users; i++) ncf__put_u64(&w, (uint64_t)m->raw_user[i]);
    for (i = 0; i < (size_t)m->cfg.num_items; i++) ncf__put_u64(&w, (uint64_t)m->raw_item[i]);
    ncf__put_u64(&w, nrated);
    for (u = 0; u < m->cfg.num_users; u++) {
        ncf__rated_cursor c = ncf__rated_from(m, u, 0);
        uint32_t n = 0;
        for (; c.next != INT32_MAX; ncf__rated_step(&c)) n++;
        ncf__put_u32(&w, n);
    }
    for (u = 0; u < m->cfg.num_users; u++) {
        ncf__rated_cursor c = ncf__rated_from(m, u, 0);
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
        ncf__rated_cursor c = ncf__rated_from(m, u, 0);
        int j, n = 0;
        for (j = 0; j < d.num_items; j++) {
            int is = c.next == j;
            if (is) ncf__rated_step(&c), n++;
            bad += is != is_rated(&d, u, j);
        }
        rated += n;
        bad += c.next != INT32_MAX;
        c = ncf__rated_from(m, u, d.num_items / 2); /* started midway */
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

/* ---- >>examples: the fixture, the fuzzers' seeds, top-k by raw id ---------------------------- */
/* Two interaction logs as people publish them, with the structure of ncf_synthetic (so a
   model has something to learn), for the demo's checks (--write-logs DIR):
   plays.tsv  a play-count log: userID<TAB>artistID<TAB>weight, a header, sorted by artist,
              no timestamps
   books.csv  a book-ratings export: "User-ID";"ISBN";"Book-Rating", every field quoted, CRLF,
              ISBNs as ids (leading zeros, an X check digit), 0 meaning "seen" */
static int write_logs(const char *dir)
{
    ncf_dataset d;
    char path[512];
    FILE *f;
    int u, i;
    int64_t k;
    if (ncf_synthetic(&d, 400, 300, 14000, 8, 5) != NCF_OK) return 0;
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
    ncf_dataset_free(&d);
    return 1;
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
    float row[64];
    int rc;
    if (sw_quiet_load(&d, 1, 0) != NCF_OK) return NCF_ERR_DATA;
    c.num_users = d.num_users, c.num_items = d.num_items, c.mf_dim = 4, c.num_layers = 2, c.layers[0] = 8,
    c.layers[1] = 4;
    memset(row, 0, sizeof row), row[0] = 0.5f;
    rc = ncf_model_create(&m, &c);
    if (rc == NCF_OK) rc = ncf_model_set_ids(m, &d);
    if (rc == NCF_OK) rc = ncf_model_add(&m, 0, "b2", row);
    if (rc == NCF_OK) rc = ncf_model_add(&m, 1, "y2", row);
    if (rc == NCF_OK) rc = ncf_model_add(&m, 0, "a", row);
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
             {"outputs written whole (the private ncf__outfile, which the demo writes with)", sw_outputs},
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
    "ncf_rec_workspace_size ncf_row_size ncf_find ncf_id ncf_metric_value ncf_free ncf_model_free";
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
   read in place, served by ncf_recommend_with from a workspace per thread (make test also
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

/* ---- >>runner: the table of tests, in file order, and main ----------------------------------- */

/* clang-format off */
static const test_case TESTS[] = {
    {"neumf_gradients_match_finite_differences", test_neumf_gradients_match_finite_differences},
    {"gmf_gradients_match_finite_differences", test_gmf_gradients_match_finite_differences},
    {"mlp_gradients_match_finite_differences", test_mlp_gradients_match_finite_differences},
    {"mf_gradients_match_finite_differences", test_mf_gradients_match_finite_differences},
    {"weighted_gradients_match_finite_differences", test_weighted_gradients_match_finite_differences},
    {"float_finite_differences_agree_on_the_librarys_loss", test_float_finite_differences_agree_on_the_librarys_loss},
    {"every_gemm_path_matches_its_definition", test_every_gemm_path_matches_its_definition},
    {"loss_and_sigmoid_match_hand_values", test_loss_and_sigmoid_match_hand_values},
    {"adam_steps_match_hand_computation", test_adam_steps_match_hand_computation},
    {"sgd_moves_only_batch_rows_by_lr_times_gradient", test_sgd_moves_only_batch_rows_by_lr_times_gradient},
    {"dense_and_lazy_adam_differ_only_on_idle_rows", test_dense_and_lazy_adam_differ_only_on_idle_rows},
    {"training_bit_identical_on_any_thread_count", test_training_bit_identical_on_any_thread_count},
    {"training_bit_identical_with_a_preempted_thread", test_training_bit_identical_with_a_preempted_thread},
    {"training_bit_identical_with_thread_0_alone", test_training_bit_identical_with_thread_0_alone},
    {"bad_arguments_refused_and_nothing_applied", test_bad_arguments_refused_and_nothing_applied},
    {"every_movielens_format_loads_the_same_data", test_every_movielens_format_loads_the_same_data},
    {"columns_read_by_header_name_and_bom_skipped", test_columns_read_by_header_name_and_bom_skipped},
    {"paper_split_files_read_back_the_same_dataset", test_paper_split_files_read_back_the_same_dataset},
    {"bad_input_files_refused_with_file_and_line", test_bad_input_files_refused_with_file_and_line},
    {"sampler_draws_each_positive_once_and_unrated_negatives", test_sampler_draws_each_positive_once_and_unrated_negatives},
    {"sampler_negatives_uniform_by_chi_square", test_sampler_negatives_uniform_by_chi_square},
    {"sampler_order_is_the_keyed_feistel_permutation", test_sampler_order_is_the_keyed_feistel_permutation},
    {"pipeline_hash_follows_seed_and_epoch_not_threads", test_pipeline_hash_follows_seed_and_epoch_not_threads},
    {"eval_negatives_unrated_and_distinct", test_eval_negatives_unrated_and_distinct},
    {"synthetic_data_has_the_shape_asked_for", test_synthetic_data_has_the_shape_asked_for},
    {"real_movielens_loads_to_its_known_sizes", test_real_movielens_loads_to_its_known_sizes},
    {"rated_split_negatives_refused_own_test_item_ignored", test_rated_split_negatives_refused_own_test_item_ignored},
    {"logs_read_with_any_separator_quoting_line_end_and_header", test_logs_read_with_any_separator_quoting_line_end_and_header},
    {"columns_found_by_name_alias_or_number", test_columns_found_by_name_alias_or_number},
    {"ids_keep_blanks_quotes_and_bytes_unless_trimmed", test_ids_keep_blanks_quotes_and_bytes_unless_trimmed},
    {"ids_kept_as_written_through_training_saving_and_serving", test_ids_kept_as_written_through_training_saving_and_serving},
    {"plain_integer_ids_stay_numbers", test_plain_integer_ids_stay_numbers},
    {"long_and_nul_ids_refused_with_file_line", test_long_and_nul_ids_refused_with_file_line},
    {"weights_follow_their_positives", test_weights_follow_their_positives},
    {"item_filter_and_kcore_report_what_they_drop", test_item_filter_and_kcore_report_what_they_drop},
    {"min_rating_keeps_positives_and_reports_drops", test_min_rating_keeps_positives_and_reports_drops},
    {"holdout_latest_random_or_none_as_asked", test_holdout_latest_random_or_none_as_asked},
    {"popularity_figures_match_hand_computation", test_popularity_figures_match_hand_computation},
    {"recommend_filters_exact_on_hand_cases", test_recommend_filters_exact_on_hand_cases},
    {"recommend_users_equal_one_user_calls", test_recommend_users_equal_one_user_calls},
    {"item_fold_in_mirrors_user_fold_in", test_item_fold_in_mirrors_user_fold_in},
    {"fold_in_deterministic_and_exact_from_known_rows", test_fold_in_deterministic_and_exact_from_known_rows},
    {"projection_readers_agree_without_it", test_projection_readers_agree_without_it},
    {"similar_items_match_the_cosine_by_hand", test_similar_items_match_the_cosine_by_hand},
    {"similar_users_match_the_cosine_by_hand", test_similar_users_match_the_cosine_by_hand},
    {"model_add_serves_folded_in_ids", test_model_add_serves_folded_in_ids},
    {"model_grows_with_new_data", test_model_grows_with_new_data},
    {"evaluation_and_serving_memory_bounded_by_the_model_and_threads", test_evaluation_and_serving_memory_bounded_by_the_model_and_threads},
    {"memory_bounded_by_the_model_file", test_memory_bounded_by_the_model_file},
    {"validation_item_is_rated", test_validation_item_is_rated},
    {"absurd_settings_and_values_refused", test_absurd_settings_and_values_refused},
    {"limits_said_as_they_are", test_limits_said_as_they_are},
    {"file_counters_at_their_bounds_leave_headroom", test_file_counters_at_their_bounds_leave_headroom},
    {"values_bounded_alike_in_place_and_copied", test_values_bounded_alike_in_place_and_copied},
    {"options_checked_before_anything_is_sized", test_options_checked_before_anything_is_sized},
    {"evaluation_refuses_data_that_is_not_the_models", test_evaluation_refuses_data_that_is_not_the_models},
    {"hostile_inputs_refused_or_read", test_hostile_inputs_refused_or_read},
    {"ids_chosen_against_the_hash_cost_what_random_ids_do", test_ids_chosen_against_the_hash_cost_what_random_ids_do},
    {"filters_settle_in_bounded_rounds", test_filters_settle_in_bounded_rounds},
    {"sorts_are_n_log_n_whatever_the_order", test_sorts_are_n_log_n_whatever_the_order},
    {"binary_search_finds_every_cut", test_binary_search_finds_every_cut},
#ifdef THREAD_LIMIT_TEST
    {"no_exit_when_threads_cannot_start", test_no_exit_when_threads_cannot_start},
#endif
#ifndef _WIN32
    {"orphaned_temporary_files_removed", test_orphaned_temporary_files_removed},
#endif
    {"many_item_metrics_match_hand_computation", test_many_item_metrics_match_hand_computation},
    {"many_item_metrics_match_a_sorted_ranking", test_many_item_metrics_match_a_sorted_ranking},
    {"many_item_splits_hold_each_positive_once", test_many_item_splits_hold_each_positive_once},
    {"saved_split_reads_back_the_same_lines", test_saved_split_reads_back_the_same_lines},
    {"metrics_match_hand_ranked_cases", test_metrics_match_hand_ranked_cases},
    {"validation_figures_match_hand_computation", test_validation_figures_match_hand_computation},
    {"validation_items_never_trained_on", test_validation_items_never_trained_on},
    {"sizes_at_the_edges_refused_or_bounded", test_sizes_at_the_edges_refused_or_bounded},
    {"nonfinite_scores_rank_last", test_nonfinite_scores_rank_last},
    {"divergence_stops_training_and_is_never_saved", test_divergence_stops_training_and_is_never_saved},
    {"output_sums_follow_their_definition", test_output_sums_follow_their_definition},
    {"eval_scores_match_forward", test_eval_scores_match_forward},
    {"scores_four_at_a_time_match_forward", test_scores_four_at_a_time_match_forward},
    {"scores_by_lanes_match_forward", test_scores_by_lanes_match_forward},
    {"scores_independent_of_batch_and_chunk", test_scores_independent_of_batch_and_chunk},
    {"training_end_to_end_lifts_hr", test_training_end_to_end_lifts_hr},
    {"saved_models_load_bit_identical", test_saved_models_load_bit_identical},
    {"resumed_training_equals_an_unbroken_run", test_resumed_training_equals_an_unbroken_run},
    {"corrupt_models_refused", test_corrupt_models_refused},
    {"format_3_files_still_read", test_format_3_files_still_read},
    {"pretrained_neumf_scores_as_its_parts", test_pretrained_neumf_scores_as_its_parts},
    {"mf_sgd_learns_and_survives_a_file", test_mf_sgd_learns_and_survives_a_file},
    {"fill_by_positive_is_the_epoch_reordered", test_fill_by_positive_is_the_epoch_reordered},
    {"per_example_sgd_is_train_step", test_per_example_sgd_is_train_step},
    {"fit_decay_is_a_hand_loop", test_fit_decay_is_a_hand_loop},
    {"fit_shuffle_is_the_samplers", test_fit_shuffle_is_the_samplers},
    {"training_blind_to_held_out_items", test_training_blind_to_held_out_items},
    {"fit_chooses_on_validation_never_test", test_fit_chooses_on_validation_never_test},
    {"fit_chooses_on_any_figure_of_many_items", test_fit_chooses_on_any_figure_of_many_items},
    {"tune_rungs_filled_and_paired", test_tune_rungs_filled_and_paired},
    {"tune_deterministic_and_blind_to_test", test_tune_deterministic_and_blind_to_test},
    {"tune_draws_als_trials", test_tune_draws_als_trials},
    {"tune_partners_lone_sgd_runs", test_tune_partners_lone_sgd_runs},
    {"model_average", test_model_average},
    {"train_epoch_each_is_each_alone", test_train_epoch_each_is_each_alone},
    {"tune_final_seeds_side_by_side", test_tune_final_seeds_side_by_side},
    {"tune_seeds_choose_their_epochs", test_tune_seeds_choose_their_epochs},
    {"als_epoch_solves_the_normal_equations", test_als_epoch_solves_the_normal_equations},
    {"als_fold_in_solves_the_least_squares", test_als_fold_in_solves_the_least_squares},
    {"als_epoch_reports_progress", test_als_epoch_reports_progress},
    {"als_bit_identical_on_any_thread_count", test_als_bit_identical_on_any_thread_count},
    {"als_settings_calls_and_files", test_als_settings_calls_and_files},
    {"verified_open_skips_only_whole_file_checks", test_verified_open_skips_only_whole_file_checks},
    {"in_place_answers_equal_the_copy", test_in_place_answers_equal_the_copy},
    {"opening_in_place_allocates_no_parameters", test_opening_in_place_allocates_no_parameters},
    {"workspace_forms_allocate_nothing", test_workspace_forms_allocate_nothing},
    {"model_read_file_opens_in_place", test_model_read_file_opens_in_place},
    {"in_place_models_only_serve_and_save_their_file", test_in_place_models_only_serve_and_save_their_file},
    {"unreadable_buffers_refused_in_place", test_unreadable_buffers_refused_in_place},
    {"int8_rows_match_hand_quantization", test_int8_rows_match_hand_quantization},
    {"rated_lists_hold_exactly_the_users_items", test_rated_lists_hold_exactly_the_users_items},
    {"saves_replace_the_file_whole", test_saves_replace_the_file_whole},
#ifndef _WIN32
    {"save_keeps_the_file_permissions", test_save_keeps_the_file_permissions},
    {"save_follows_no_planted_link", test_save_follows_no_planted_link},
    {"failed_save_leaves_the_old_model", test_failed_save_leaves_the_old_model},
#endif
    {"fixture_written_here_reads_back", test_fixture_written_here_reads_back},
    {"fuzz_seeds_are_valid_models", test_fuzz_seeds_are_valid_models},
    {"recommend_topk_matches_a_full_sort_by_raw_id", test_recommend_topk_matches_a_full_sort_by_raw_id},
    {"every_failed_allocation_returns_nomem", test_every_failed_allocation_returns_nomem},
    {"calls_said_to_allocate_nothing_allocate_nothing", test_calls_said_to_allocate_nothing_allocate_nothing},
    {"serving_by_id_answers_as_the_index_forms", test_serving_by_id_answers_as_the_index_forms},
    {"serving_calls_start_no_team_unless_asked", test_serving_calls_start_no_team_unless_asked},
#ifndef _WIN32
    {"serving_threads_answer_as_one_thread", test_serving_threads_answer_as_one_thread},
#endif
};
/* clang-format on */

int main(int argc, char **argv)
{
    int i, passed = 0, failed = 0, skipped = 0, list = 0;
    const char *only = NULL;
    for (i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--print-hash")) {
            printf("%016llx\n", (unsigned long long)training_hash(2, 0));
            return 0;
#ifdef THREAD_LIMIT_TEST
        } else if (!strcmp(argv[i], "--thread-limit-child") && i + 3 < argc) {
            return thread_limit_child(atol(argv[i + 1]), atol(argv[i + 2]), atoi(argv[i + 3]));
#endif
        } else if (!strcmp(argv[i], "--write-logs") && i + 1 < argc) {
            return write_logs(argv[i + 1]) ? 0 : 1;
        } else if (!strcmp(argv[i], "--set-epoch") && i + 2 < argc) {
            return set_file_epoch(argv[i + 1], argv[i + 2]) ? 0 : 1;
        } else if (!strcmp(argv[i], "--write-seeds") && i + 1 < argc) {
            return write_fuzz_seeds(argv[i + 1]) ? 0 : 1;
        } else if (!strcmp(argv[i], "--expect-hash") && i + 1 < argc) {
            g_expect_hash_file = argv[++i];
        } else if (!strcmp(argv[i], "--list")) {
            list = 1;
        } else {
            only = argv[i];
        }
    }
    if (list) { /* the tests' names (those containing the filter, if given), one a line, in the order run */
        for (i = 0; i < (int)(sizeof TESTS / sizeof *TESTS); i++)
            if (!only || strstr(TESTS[i].name, only)) printf("%s\n", TESTS[i].name);
        return 0;
    }
    if (!make_scratch_dir()) {
        printf("cannot make a scratch folder: %s\n", strerror(errno));
        return 2;
    }
    printf("ncf.h %s tests, %d threads%s\n", ncf_version(), ncf_set_threads(0),
#ifdef _OPENMP
           ""
#else
           " (no OpenMP)"
#endif
    );
    for (i = 0; i < (int)(sizeof TESTS / sizeof *TESTS); i++) {
        int before = g_failed_checks;
        double t0;
        if (only && !strstr(TESTS[i].name, only)) continue;
        printf("%s\n", TESTS[i].name);
        fflush(stdout);
        g_skipped = 0, t0 = now_s();
        TESTS[i].fn();
        if (g_failed_checks != before) failed++, printf("  FAILED");
        else if (g_skipped) skipped++, printf("  skipped");
        else passed++, printf("  ok");
        printf(" (%.1f s)\n", now_s() - t0);
        fflush(stdout);
    }
    files_in_dir(g_dir, "", 1);
    if (rmdir(g_dir) != 0) printf("could not remove %s\n", g_dir);
    if (skipped) printf("%d passed, %d failed, %d skipped\n", passed, failed, skipped);
    else printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
