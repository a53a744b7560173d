/* tests/bench.c - the benchmarks (make bench, make bench-load): one JSON line per case, each
   rate the median of several timed windows, then a summary against a baseline build run
   beside it. Timing lives here, never in a pass/fail test.

     bench paper|mlperf THREADS lazy|dense   training and evaluation rates
     bench --busy paper|mlperf               1 and 2 threads in turn beside a busy core
     bench --summary FILE.jsonl PEAK.txt     the table of a run (PEAK.txt may be missing)
     bench peak                              the machine's fp32 FMA peak on 1 and 2 threads
     bench load | serve-ids | serving        loading, serving by id, serving options
     bench growth u.data                     a model grown to new data against scratch
     bench foldin DIR/ml-1m neumf|mf|als     fold-in quality on held-out users
     bench itemfold DIR/ml-1m neumf|mf       item fold-in quality on held-out items
     bench similarity DIR/ml-1m              which model's similar items agree with co-occurrence
     bench write-ratings FILE int|text       a 20M-line ratings file for make bench-load */
#include "harness.h"

static double median(double *v, int n)
{
    int i, j;
    for (i = 1; i < n; i++)
        for (j = i; j > 0 && v[j - 1] > v[j]; j--) {
            double t = v[j];
            v[j] = v[j - 1];
            v[j - 1] = t;
        }
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* A library call's result: the bench stops on a failure rather than time or print what the
   call did not do. rc: NCF_OK or an error code (a count, for calls that return one, >= 0). */
static void must(int rc)
{
    if (rc >= 0) return;
    fprintf(stderr, "bench: %s\n", ncf_error_text());
    exit(1);
}

static double peak_rss_mb(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    double kb = 0;
    while (f && fgets(line, sizeof line, f))
        if (!strncmp(line, "VmHWM:", 6)) kb = atof(line + 6);
    if (f) fclose(f);
    return kb / 1024.0;
}

/* The machine's fp32 FMA peak (make bench): PEAK_CHAINS independent chains of multiply-adds in
   the widest vectors the build targets, on each of 1 and 2 threads. The chains must stay in
   registers: with 16 of them, as PEERS/peak.c runs them, AVX2's 16 registers cannot hold the
   chains and both operands, the compiler keeps three chains on the stack, and what is timed
   is their store-to-load round trip (on a 2-core AMD EPYC with AVX2 only, 58.5 GFLOP/s a
   core against 102.6 with 12 chains). 12 chains in flight cover two pipes of 4-6 cycles. */
#if defined(__AVX512F__)
#define PEAK_FLOATS 16
#elif defined(__AVX__)
#define PEAK_FLOATS 8
#else
#define PEAK_FLOATS 4
#endif
#define PEAK_CHAINS 12
#define PEAK_ITERS 40000000L
typedef float peak_vf __attribute__((vector_size(4 * PEAK_FLOATS)));

static void *peak_worker(void *arg)
{
    peak_vf a[PEAK_CHAINS], x, y;
    float *sink = (float *)arg;
    long i;
    int k, j;
    for (j = 0; j < PEAK_FLOATS; j++) x[j] = 0.999999f, y[j] = 1e-7f;
    for (k = 0; k < PEAK_CHAINS; k++)
        for (j = 0; j < PEAK_FLOATS; j++) a[k][j] = (float)k;
    for (i = 0; i < PEAK_ITERS; i++)
        for (k = 0; k < PEAK_CHAINS; k++) a[k] = a[k] * x + y; /* (one FMA: -ffp-contract=fast) */
    for (k = 1; k < PEAK_CHAINS; k++) a[0] += a[k];
    for (j = 0, *sink = 0; j < PEAK_FLOATS; j++) *sink += a[0][j];
    return NULL;
}

/* Best of 5 runs of threads workers, in GFLOP/s. */
static double peak_gflops(int threads)
{
    double best = 0;
    float sink[2];
    int rep, j, made;
    for (rep = 0; rep < 5; rep++) {
        pthread_t t[2];
        double t0 = now_s(), g;
        for (made = 0; made < threads && pthread_create(&t[made], NULL, peak_worker, &sink[made]) == 0; made++)
            continue;
        for (j = 0; j < made; j++) pthread_join(t[j], NULL); /* (the ones made, also when one could not be) */
        if (made < threads) return 0;
        g = 2.0 * PEAK_FLOATS * PEAK_CHAINS * PEAK_ITERS * threads / (now_s() - t0) / 1e9;
        if (sink[0] == 42.0f) printf(" "); /* (keeps the sums live) */
        if (g > best) best = g;
    }
    return best;
}

/* Lines as the summary reads them: "threads=N ... X GFLOP/s". */
static int bench_peak(void)
{
    int t;
    for (t = 1; t <= 2; t++)
        printf("threads=%d  fp32 FMA peak: %.1f GFLOP/s (%d chains of %d-float multiply-adds in registers)\n", t,
               peak_gflops(t), PEAK_CHAINS, PEAK_FLOATS);
    return 0;
}

/* Multiply-adds x 2 of the dense layers, forward and both backward products, per example. */
static double dense_flop_per_example(const ncf_config *c)
{
    double f = 0;
    int l;
    for (l = 1; l < c->num_layers; l++) f += 3.0 * 2.0 * c->layers[l - 1] * c->layers[l];
    return f;
}

/* GFLOP/s of the model's forward and backward dense products at its batch size. */
static double bench_gemm(const ncf_config *c)
{
    int B = c->batch_size, l, rep, w = 0;
    double t, flops = 0, r[5];
    float *x, *y, *wt;
    for (l = 0; l < c->num_layers; l++)
        if (c->layers[l] > w) w = c->layers[l];
    x = (float *)calloc((size_t)B * w, 4), y = (float *)calloc((size_t)B * w, 4),
    wt = (float *)calloc((size_t)w * w, 4);
    for (l = 1; l < c->num_layers; l++) flops += 3.0 * 2.0 * B * c->layers[l - 1] * c->layers[l];
    for (rep = 0; rep < 5; rep++) {
        int it, iters = (int)(2e9 / flops) + 1;
        t = now_s();
        for (it = 0; it < iters; it++)
            for (l = 1; l < c->num_layers; l++) {
                int in = c->layers[l - 1], out = c->layers[l];
                ncf__gemm(y, out, x, in, 1, wt, out, NULL, B, out, in, NCF__RELU); /* forward */
                ncf__gemm(wt, out, x, 1, in, y, out, NULL, in, out, B, NCF__ACC);  /* dW */
                ncf__gemm(x, in, y, out, 1, wt, in, NULL, B, in, out, 0);          /* dx */
            }
        r[rep] = flops * iters / (now_s() - t) / 1e9;
    }
    free(x), free(y), free(wt);
    return median(r, 5);
}

/* GFLOP/s of a training step's dense products alone, blocked as the step blocks them: phase
   1's spans of rows through the layers forward and back, then the weight gradients in the
   step's units over the batch, each phase's work claimed as the step claims it; the data in
   cache, and no gathers, element-wise work, updates or sampling. Its own buffers, filled
   with values away from 0, make the rate the kernels' whatever a model's data hold. With
   the peak, the most a step can reach with these kernels. */
static double bench_step_products(const ncf_model *m)
{
    const ncf_config *c = &m->cfg;
    const struct ncf__scratch *sc = m->scratch;
    int B = c->batch_size, nd = sc->nd, H = sc->H, span = ncf__span_rows(m), l, rep, units = 0;
    float *x[NCF_MAX_LAYERS] = {0}, *dy[NCF_MAX_LAYERS] = {0}, *gw[NCF_MAX_LAYERS] = {0};
    double flops = B * dense_flop_per_example(c), r[5] = {0};
    size_t k;
    if (!H) return 0; /* (no dense layers) */
    for (l = 0; l <= nd; l++) {
        x[l] = (float *)malloc(sizeof(float) * (size_t)B * c->layers[l]);
        dy[l] = (float *)malloc(sizeof(float) * (size_t)B * c->layers[l]);
        gw[l] = l ? (float *)calloc((size_t)c->layers[l - 1] * c->layers[l], sizeof(float)) : NULL;
        if (!x[l] || !dy[l] || (l && !gw[l])) break;
        for (k = 0; k < (size_t)B * c->layers[l]; k++) /* (inputs away from 0: no subnormals) */
            x[l][k] = 0.25f + (float)(k % 7) * 0.0625f, dy[l][k] = (float)(k % 5) * 0.03125f - 0.0625f;
    }
    for (l = 1; l <= nd; l++) units += ncf__dw_units(c->layers[l - 1]);
    for (rep = 0; rep < 6 && x[nd] && dy[nd] && gw[nd]; rep++) {
        int it, iters = (int)(1e10 / flops) + 1;
        double t = now_s();
        for (it = 0; it < iters; it++) {
            ncf__team t1 = NCF__TEAM_INIT, t2 = NCF__TEAM_INIT;
            NCF__PARALLEL(1)
            {
                ncf__ctx cx = ncf__join(&t1);
                int64_t lo, hi;
                while (ncf__claim(&cx, NCF__CEIL_DIV(B, span), 1, &lo, &hi)) {
                    int r0 = (int)lo * span, r1 = hi * span < B ? (int)hi * span : B, j;
                    ncf__first_layer(m, x[1], x[0], r0, r1);
                    for (j = 2; j <= nd; j++)
                        ncf__gemm_rows(x[j], c->layers[j], x[j - 1], c->layers[j - 1], 1, m->w[j], c->layers[j],
                                       m->b[j], r0, r1, c->layers[j], c->layers[j - 1], NCF__RELU);
                    for (j = nd; j >= 1; j--)
                        ncf__gemm_rows(dy[j - 1], c->layers[j - 1], dy[j], c->layers[j], 1, sc->batch.wt[j],
                                       c->layers[j - 1], NULL, r0, r1, c->layers[j - 1], c->layers[j], 0);
                }
            }
            NCF__PARALLEL(1)
            {
                ncf__ctx cx = ncf__join(&t2);
                int64_t lo, hi, u;
                while (ncf__claim(&cx, units, 1, &lo, &hi))
                    for (u = lo; u < hi; u++) {
                        int j = 1, v = (int)u, rows, m0, m1;
                        while (v >= ncf__dw_units(c->layers[j - 1])) v -= ncf__dw_units(c->layers[j - 1]), j++;
                        rows = ncf__dw_tiles(c->layers[j - 1]) * NCF__MR, m0 = v * rows;
                        m1 = v + 1 < ncf__dw_units(c->layers[j - 1]) ? m0 + rows : c->layers[j - 1];
                        ncf__gemm_rows(gw[j], c->layers[j], x[j - 1], 1, c->layers[j - 1], dy[j], c->layers[j], NULL,
                                       m0, m1, c->layers[j], B, NCF__ACC);
                    }
            }
        }
        if (rep) r[rep - 1] = flops * iters / (now_s() - t) / 1e9; /* (the first warms the caches) */
    }
    for (l = 0; l <= nd; l++) free(x[l]), free(dy[l]), free(gw[l]);
    return rep == 6 ? median(r, 5) : -1; /* (-1: out of memory) */
}

static int bench_case(const char *name, int threads, const char *adam)
{
    int mlperf = !strcmp(name, "mlperf"), B, warm, windows = 5, steps, w, k;
    ncf_config c = mlperf ? ncf_config_mlperf() : ncf_config_default();
    ncf_dataset d, ev;
    ncf_sampler s;
    ncf_model *m = NULL;
    ncf_metrics met;
    int32_t *u, *it, *held = NULL;
    float *y;
    double t, train[5], evr[3], samp[3], gemm, products, setup, rec_ms = 0, rec_first_ms = 0;
    int64_t pos = 0;
    if (strcmp(name, "paper") && !mlperf) {
        fprintf(stderr, "bench: unknown case %s\n", name);
        return 2;
    }
    ncf_set_threads(threads);
    t = now_s();
    if (mlperf ? ncf_synthetic(&d, 138493, 26744, 20000263, 16, 1) : ncf_synthetic(&d, 6040, 3706, 1000209, 16, 1)) {
        fprintf(stderr, "bench: %s\n", ncf_error_text());
        return 1;
    }
    setup = now_s() - t;
    /* evaluation of the first users (MLPerf's 4,000 of 138,493): the others' test items left
       out of a copy (the model answers for every user of the data it is evaluated on) */
    ev = d;
    ev.eval_neg = NULL;
    if (mlperf) {
        if (!(held = (int32_t *)malloc(sizeof(int32_t) * (size_t)d.num_users))) return 1;
        for (k = 0; k < d.num_users; k++) held[k] = k < 4000 ? d.test_item[k] : -1;
        ev.test_item = held;
    }
    if (ncf_sample_eval_negatives(&ev, mlperf ? 999 : 99, 2) != NCF_OK) {
        fprintf(stderr, "bench: %s\n", ncf_error_text());
        return 1;
    }
    c.num_users = d.num_users, c.num_items = d.num_items;
    c.adam = !strcmp(adam, "dense") ? NCF_ADAM_DENSE : NCF_ADAM_LAZY;
    if (ncf_model_create(&m, &c) != NCF_OK || ncf_sampler_init(&s, &d, c.num_neg, c.seed) != NCF_OK) {
        fprintf(stderr, "bench: %s\n", ncf_error_text());
        return 1;
    }
    B = c.batch_size;
    u = (int32_t *)malloc(sizeof(int32_t) * 1048576), it = (int32_t *)malloc(sizeof(int32_t) * 1048576);
    y = (float *)malloc(sizeof(float) * 1048576);
    /* sampler alone: a million examples at a time */
    for (k = 0; k < 3; k++) {
        t = now_s();
        ncf_sampler_fill(&s, 1, (int64_t)k * 1048576, 1048576, u, it, y);
        samp[k] = 1048576.0 * c.num_neg / (1 + c.num_neg) / (now_s() - t);
    }
    /* training: warm up, then timed windows of steps (sampling included), as ncf_train_epoch
       runs them */
    warm = mlperf ? 10 : 200;
    steps = mlperf ? (c.adam == NCF_ADAM_DENSE ? 20 : 60) : 800;
    for (w = -1; w < windows; w++) {
        int64_t n = (int64_t)(w < 0 ? warm : steps) * B;
        t = now_s();
        if (ncf_train_examples(m, &s, 1, pos, n, NULL, NULL, NULL) != NCF_OK) {
            fprintf(stderr, "bench: %s\n", ncf_error_text());
            return 1;
        }
        pos += n;
        if (w >= 0) train[w] = (double)n / (now_s() - t);
    }
    for (k = 0; k < 3; k++) {
        t = now_s();
        must(evaluate_k(m, &ev, 10, NCF_SAMPLED, &met));
        evr[k] = met.users / (now_s() - t);
    }
    { /* recommend: top-10 over the whole catalogue for one user; the first call also
         computes the cached item projection */
        int64_t top[10];
        double cold, later[9];
        if (ncf_model_set_ids(m, &d) != NCF_OK) return 1;
        t = now_s();
        must(recommend_k(m, d.raw_user[0], 10, 1, top, NULL));
        cold = now_s() - t;
        for (k = 0; k < 9; k++) {
            t = now_s();
            must(recommend_k(m, d.raw_user[1 + k * 997 % d.num_users], 10, 1, top, NULL));
            later[k] = now_s() - t;
        }
        rec_first_ms = 1e3 * cold, rec_ms = 1e3 * median(later, 9);
    }
    gemm = bench_gemm(&c), products = bench_step_products(m);
    printf("{\"case\":\"%s\",\"threads\":%d,\"adam\":\"%s\",\"users\":%d,\"items\":%d,\"positives\":%lld,"
           "\"batch\":%d,\"train_ex_per_s\":%.0f,\"eval_users_per_s\":%.0f,\"eval_candidates\":%d,"
           "\"sampler_neg_per_s\":%.0f,\"gemm_gflops\":%.1f,\"step_products_gflops\":%.1f,\"recommend_ms\":%.2f,"
           "\"recommend_first_ms\":%.1f,"
           "\"peak_rss_mb\":%.0f,\"synthetic_s\":%.2f}\n",
           name, threads, adam, d.num_users, d.num_items, (long long)d.num_train, B, median(train, windows),
           median(evr, 3), ev.num_eval_neg + 1, median(samp, 3), gemm, products, rec_ms, rec_first_ms, peak_rss_mb(),
           setup);
    free(u), free(it), free(y), free(held);
    NCF_FREE(ev.eval_neg);
    ncf_model_free(m);
    ncf_dataset_free(&d);
    return 0;
}

/* ---- bench summary: the cases of one run side by side (make bench) ---- */

/* A busy machine, 1 thread against 2 in one process: the same model trains windows of steps
   at 1 and 2 threads in turn, so both see the same contention; the medians of each and of the
   per-round ratios. Separate runs of each count move with the machine by more than the
   difference sought. */
static int bench_busy(const char *name)
{
    enum { ROUNDS = 7 };
    int mlperf = !strcmp(name, "mlperf"), r, t, steps;
    ncf_config c = mlperf ? ncf_config_mlperf() : ncf_config_default();
    ncf_dataset d;
    ncf_sampler s;
    ncf_model *m = NULL;
    double rate[2][ROUNDS], ratio[ROUNDS], t0;
    int64_t pos = 0, n, epoch = 1;
    if (mlperf ? ncf_synthetic(&d, 138493, 26744, 20000263, 16, 1) : ncf_synthetic(&d, 6040, 3706, 1000209, 16, 1))
        return 1;
    c.num_users = d.num_users, c.num_items = d.num_items;
    if (ncf_model_create(&m, &c) != NCF_OK || ncf_sampler_init(&s, &d, c.num_neg, c.seed) != NCF_OK) return 1;
    steps = mlperf ? 40 : 1600;
    n = (int64_t)steps * c.batch_size;
    ncf_set_threads(2);
    if (ncf_train_examples(m, &s, 1, pos, n / 4, NULL, NULL, NULL) != NCF_OK) goto fail; /* warm up */
    pos += n / 4;
    for (r = 0; r < ROUNDS; r++) {
        for (t = 0; t < 2; t++) { /* 1 then 2 threads; the order flips each round */
            int threads = 1 + ((t + r) & 1);
            if (pos + n > s.num_examples) epoch++, pos = 0; /* (the paper's epoch holds ~12 windows) */
            ncf_set_threads(threads);
            t0 = now_s();
            if (ncf_train_examples(m, &s, (int)epoch, pos, n, NULL, NULL, NULL) != NCF_OK) goto fail;
            rate[threads - 1][r] = (double)n / (now_s() - t0);
            pos += n;
        }
        ratio[r] = rate[1][r] / rate[0][r];
    }
    printf("{\"build\":\"ours\",\"busy\":\"%s\",\"rounds\":%d,\"rate_1t\":%.0f,\"rate_2t\":%.0f,\"ratio\":%.3f}\n",
           name, ROUNDS, median(rate[0], ROUNDS), median(rate[1], ROUNDS), median(ratio, ROUNDS));
    ncf_model_free(m);
    ncf_dataset_free(&d);
    return 0;
fail:
    fprintf(stderr, "bench: %s\n", ncf_error_text());
    return 1;
}

static double json_num(const char *line, const char *key)
{
    char pat[64];
    const char *p;
    snprintf(pat, sizeof pat, "\"%s\":", key);
    p = strstr(line, pat);
    return p ? atof(p + strlen(pat)) : -1;
}

static int json_is(const char *line, const char *key, const char *value)
{
    char pat[96];
    snprintf(pat, sizeof pat, "\"%s\":\"%s\"", key, value);
    return strstr(line, pat) != NULL;
}

#define MAX_LINES 128
static char g_lines[MAX_LINES][1024];
static int g_nlines;

/* The line of a case, or NULL. */
static const char *bench_line(const char *build, int contended, const char *name, int threads, const char *adam)
{
    int i;
    for (i = 0; i < g_nlines; i++)
        if (json_is(g_lines[i], "build", build) && json_num(g_lines[i], "contended") == contended &&
            json_is(g_lines[i], "case", name) && json_num(g_lines[i], "threads") == threads &&
            json_is(g_lines[i], "adam", adam))
            return g_lines[i];
    return NULL;
}

static double bench_rate(const char *build, int contended, const char *name, int threads, const char *adam)
{
    const char *l = bench_line(build, contended, name, threads, adam);
    return l ? json_num(l, "train_ex_per_s") : -1;
}

/* The median load time and peak memory of one build and kind of id (make bench-load). */
static int load_medians(const char *build, const char *ids, double *s, double *mb)
{
    double t[16], m[16];
    int i, n = 0;
    for (i = 0; i < g_nlines && n < 16; i++)
        if (json_is(g_lines[i], "case", "load_file") && json_is(g_lines[i], "build", build) &&
            json_is(g_lines[i], "ids", ids))
            t[n] = json_num(g_lines[i], "load_s"), m[n++] = json_num(g_lines[i], "peak_rss_mb");
    if (n) *s = median(t, n), *mb = median(m, n);
    return n;
}

static void bench_load_summary(void)
{
    double si = 0, mi = 0, st = 0, mt = 0, sb = 0, mb = 0;
    int n = load_medians("ours", "int", &si, &mi);
    if (!n) return;
    printf("load 20M-line ratings.csv (min_ratings 20), medians of %d: integer ids %.2f s, %.0f MB peak", n, si, mi);
    if (load_medians("base", "int", &sb, &mb))
        printf("; base %.2f s, %.0f MB: %.2fx time, %.2fx memory (target <= 1.2)", sb, mb, si / sb, mi / mb);
    if (load_medians("ours", "text", &st, &mt))
        printf("\n  16-character string ids %.2f s, %.0f MB: %.2fx time, %.2fx memory of integer ids (target <= 2)", st,
               mt, st / si, mt / mi);
    printf("\n");
}

/* A build's median over its bench-small lines of a figure (0 without any). */
static double small_median(const char *build, const char *key)
{
    double v[8];
    int i, n = 0;
    for (i = 0; i < g_nlines && n < 8; i++)
        if (json_is(g_lines[i], "case", "small") && json_is(g_lines[i], "build", build))
            v[n++] = json_num(g_lines[i], key);
    return n ? median(v, n) : 0;
}

/* Scoring the paper's model on one thread: rates in GFLOP/s of its scores' FLOPs, against
   one core's FMA peak and against the base build. */
static void bench_small_summary(double peak1)
{
    static const char *what[2][2] = {{"top10_ms", "known-user top-10"}, {"full_rank_s", "full-ranking evaluation"}};
    int w;
    for (w = 0; w < 2; w++) {
        double t = small_median("ours", what[w][0]), b = small_median("base", what[w][0]), per, rate;
        const char *l;
        int i;
        if (t <= 0) return;
        for (i = 0, l = NULL; i < g_nlines && !l; i++)
            if (json_is(g_lines[i], "case", "small")) l = g_lines[i];
        per = json_num(l, "score_flop") * json_num(l, "items") * (w ? json_num(l, "users") : 1);
        rate = per / (w ? t : t / 1e3) / 1e9;
        printf("paper model, 1 thread, %s of %.0f items: %.4g %s, %.1f GFLOP/s", what[w][1], json_num(l, "items"), t,
               w ? "s" : "ms", rate);
        if (peak1 > 0) printf(" = %.0f%% of one core's peak (%.1f; target >= 40%%)", 100 * rate / peak1, peak1);
        if (b > 0) printf("; base %.4g: %.2fx (target >= 2)", b, b / t);
        printf("\n");
    }
}

/* make bench-ab's lines: ours against the base in turns in one process (tests/ab.c). */
static void bench_ab_summary(void)
{
    int i;
    for (i = 0; i < g_nlines; i++) {
        const char *l = g_lines[i], *what = strstr(l, "\"what\":\"");
        int train = what && !strncmp(what + 8, "paper-", 6);
        if (!json_is(l, "case", "ab") || !what) continue;
        printf("in turns, one process, %.0f rounds: %.*s, %.0f thread%s: ours %.0f/s, base %.0f/s, median ratio %.2f "
               "(quartiles %.2f-%.2f)%s; the cores' round trip %.0f ns before, %.0f after; a load from 8 MB %.0f ns "
               "before, %.0f after\n",
               json_num(l, "rounds"), (int)strcspn(what + 8, "\""), what + 8, json_num(l, "threads"),
               json_num(l, "threads") > 1 ? "s" : "", json_num(l, "ours_per_s"), json_num(l, "base_per_s"),
               json_num(l, "ratio"), json_num(l, "ratio_q1"), json_num(l, "ratio_q3"),
               train                                ? " (target >= 1.5)"
                   : strncmp(what + 8, "mlperf", 6) ? " (target >= 2)"
                                                    : "",
               json_num(l, "trip_ns_before"), json_num(l, "trip_ns_after"), json_num(l, "load_ns_before"),
               json_num(l, "load_ns_after"));
    }
}

static int bench_summary(const char *jsonl, const char *peakfile)
{
    static const char *names[] = {"paper", "mlperf"};
    FILE *f = fopen(jsonl, "r");
    char line[256];
    double peak2 = 0, peak1 = 0;
    int i, n, t, have_base;
    ncf_config mc = ncf_config_mlperf();
    if (!f) {
        fprintf(stderr, "bench: cannot read %s\n", jsonl);
        return 1;
    }
    while (g_nlines < MAX_LINES && fgets(g_lines[g_nlines], sizeof g_lines[0], f)) g_nlines++;
    fclose(f);
    if ((f = fopen(peakfile, "r")) != NULL) { /* "threads=2  fp32 FMA peak: AVX-512 X GFLOP/s, AVX2 Y GFLOP/s" */
        while (fgets(line, sizeof line, f))
            if (!strncmp(line, "threads=2", 9) || !strncmp(line, "threads=1", 9)) {
                const char *p = line;
                double *peak = line[8] == '2' ? &peak2 : &peak1;
                while ((p = strstr(p, " GFLOP/s")) != NULL) { /* the number just before it */
                    const char *q = p;
                    while (q > line && (q[-1] == '.' || (q[-1] >= '0' && q[-1] <= '9'))) q--;
                    if (atof(q) > *peak) *peak = atof(q);
                    p += 8;
                }
            }
        fclose(f);
    }
    have_base = bench_line("base", 0, "paper", 1, "lazy") != NULL;
    printf("\n== summary of this run%s\n", have_base ? " (base: the BASE commit, built and run the same way)" : "");
    printf("%-22s %12s %12s %8s\n", "training ex/s", "ours", have_base ? "base" : "", have_base ? "ours/base" : "");
    for (i = 0; i < g_nlines; i++) {
        char name[64], adam[16];
        double ours, base;
        if (!json_is(g_lines[i], "build", "ours") || json_num(g_lines[i], "threads") < 0) continue;
        t = (int)json_num(g_lines[i], "threads");
        n = json_is(g_lines[i], "case", "mlperf");
        snprintf(adam, sizeof adam, "%s", json_is(g_lines[i], "adam", "dense") ? "dense" : "lazy");
        snprintf(name, sizeof name, "%s%s %d %s", json_num(g_lines[i], "contended") == 1 ? "busy " : "", names[n], t,
                 adam);
        ours = json_num(g_lines[i], "train_ex_per_s");
        base = bench_rate("base", (int)json_num(g_lines[i], "contended"), names[n], t, adam);
        if (base > 0) printf("%-22s %12.0f %12.0f %8.2f\n", name, ours, base, ours / base);
        else printf("%-22s %12.0f\n", name, ours);
    }
    printf("busy machine, 2 threads / 1 thread (target >= 0.9):\n");
    for (n = 0; n < 2; n++) {
        double o1 = bench_rate("ours", 1, names[n], 1, "lazy"), o2 = bench_rate("ours", 1, names[n], 2, "lazy");
        double b1 = bench_rate("base", 1, names[n], 1, "lazy"), b2 = bench_rate("base", 1, names[n], 2, "lazy");
        if (o1 > 0 && o2 > 0) printf("  %-7s lazy  ours %.2f", names[n], o2 / o1);
        if (b1 > 0 && b2 > 0) printf("   base %.2f", b2 / b1);
        if (o1 > 0 && o2 > 0) printf("\n");
    }
    for (i = 0; i < g_nlines; i++)
        if (json_num(g_lines[i], "rounds") > 0 && !json_is(g_lines[i], "case", "ab"))
            printf("  %-7s lazy  ours, 1 and 2 threads in turn in one process, %.0f rounds: median %.0f and %.0f ex/s, "
                   "median ratio %.2f\n",
                   json_is(g_lines[i], "busy", "mlperf") ? "mlperf" : "paper", json_num(g_lines[i], "rounds"),
                   json_num(g_lines[i], "rate_1t"), json_num(g_lines[i], "rate_2t"), json_num(g_lines[i], "ratio"));
    for (i = 0; i < 2; i++) {
        const char *l = bench_line(i ? "base" : "ours", 0, "mlperf", 2, "lazy");
        double ms, first, items;
        if (!l) continue;
        ms = json_num(l, "recommend_ms"), first = json_num(l, "recommend_first_ms"), items = json_num(l, "items");
        printf("recommend top-10 of %.0f items, mlperf 2 threads, %s: %.1f ms (%.2fM pairs/s), first call %.1f ms "
               "(%.2fM pairs/s)\n",
               items, i ? "base" : "ours", ms, items / ms / 1e3, first, items / first / 1e3);
    }
    bench_load_summary();
    bench_small_summary(peak1);
    bench_ab_summary();
    for (i = 0; i < g_nlines; i++) {
        const char *l = g_lines[i];
        if (!json_is(l, "case", "fold_in")) continue;
        printf("fold-in of a user with 50 items, %s, %.0f steps, 1 thread: %.2f ms (target <= %s); of an item with 50 "
               "users: %.2f ms\n",
               json_is(l, "config", "mlperf") ? "mlperf" : "paper", json_num(l, "steps"), json_num(l, "ms"),
               json_is(l, "config", "mlperf") ? "50" : "5", json_num(l, "item_ms"));
        if (json_num(l, "request_ms_1") > 0)
            printf("known-user top-10, paper model, median latency: %.3f ms from 1 request thread, %.3f ms from 4 "
                   "(%.2fx; target <= 1.2x)\n",
                   json_num(l, "request_ms_1"), json_num(l, "request_ms_4"),
                   json_num(l, "request_ms_4") / json_num(l, "request_ms_1"));
        if (json_num(l, "users_per_s") > 0) {
            double ups = json_num(l, "users_per_s"), flop = ups * json_num(l, "items") * json_num(l, "score_flop");
            printf("top-10 of every user, mlperf (%.0f items), %.0f threads: %.1f users/s, %.1f GFLOP/s of scoring",
                   json_num(l, "items"), json_num(l, "threads"), ups, flop / 1e9);
            if (peak2 > 0)
                printf(" = %.1f%% of the FMA peak, %.1f GFLOP/s (target >= 50%%)", 100 * flop / 1e9 / peak2, peak2);
            printf(
                "\n  an allow-list of 1,000 candidates %.3f ms against the catalogue's %.3f ms (%.3f of it; 1,000 of "
                "%.0f items is %.3f)\n",
                json_num(l, "allow1000_ms"), json_num(l, "catalogue_ms"),
                json_num(l, "allow1000_ms") / json_num(l, "catalogue_ms"), json_num(l, "items"),
                1000 / json_num(l, "items"));
        }
    }
    for (i = 0; i < g_nlines; i++) /* (the loss over every cell: a play-count log's LIBMF comparison) */
        if (json_is(g_lines[i], "case", "als")) {
            const char *l = g_lines[i], *log = strstr(l, "\"log\":\"");
            printf("ALS epoch, %.*s log, %.0f factors, %.0f threads: %.4f s (%.0f positives/s)\n",
                   log ? (int)strcspn(log + 7, "\"") : 0, log ? log + 7 : "", json_num(l, "factors"),
                   json_num(l, "threads"), json_num(l, "epoch_s"), json_num(l, "positives_s"));
        }
    for (i = 0; i < g_nlines; i++) { /* (make bench NCF_DATA=DIR: tests/seconds.sh's lines) */
        const char *l = g_lines[i], *name = strstr(l, "\"model\":\"");
        if (!json_is(l, "case", "seconds") || !name) continue;
        name += 9;
        if (json_is(l, "model", "ease"))
            printf("seconds to a good model, ml-1m: EASE^R (lambda %g) fits in %.1f s, test HR@10 %.4f\n",
                   json_num(l, "lambda"), json_num(l, "fit_s"), json_num(l, "test_hr"));
        else if (!strstr(l, "\"reached_s\":null"))
            printf(
                "seconds to a good model, ml-1m: %.*s passes test HR@10 %.2f at epoch %.0f (%.4f), %.1f s from start\n",
                (int)strcspn(name, "\""), name, json_num(l, "threshold"), json_num(l, "reached_epoch"),
                json_num(l, "reached_test_hr"), json_num(l, "reached_s"));
        else
            printf(
                "seconds to a good model, ml-1m: %.*s never passes test HR@10 %.2f (validation's choice: epoch %.0f, "
                "%.4f)\n",
                (int)strcspn(name, "\""), name, json_num(l, "threshold"), json_num(l, "chosen_epoch"),
                json_num(l, "chosen_test_hr"));
    }
    for (i = 0; i < g_nlines; i++)
        if (json_is(g_lines[i], "case", "serve_ids"))
            printf("serving by string id / by integer id (top-10, mlperf, 138,493 x 26,744, 200 users, medians of 5 "
                   "rounds): %.2f ms / %.2f ms = %.2fx (target <= 1.2)\n",
                   json_num(g_lines[i], "text_ms"), json_num(g_lines[i], "int_ms"), json_num(g_lines[i], "ratio"));
    if (peak2 > 0) {
        double flop = dense_flop_per_example(&mc), ceiling = peak2 * 1e9 / flop;
        printf("MLPerf: %.3f MFLOP per example (dense layers: forward, dW, dx); FMA peak %.1f GFLOP/s on 2 threads "
               "-> ceiling %.0f ex/s\n",
               flop / 1e6, peak2, ceiling);
        for (i = 0; i < 2; i++) {
            double r = bench_rate(i ? "base" : "ours", 0, "mlperf", 2, "lazy");
            if (r > 0)
                printf("  mlperf 2 lazy, %s: %.0f ex/s = %.1f%% of the ceiling\n", i ? "base" : "ours", r,
                       100 * r / ceiling);
        }
        { /* (a base's bench may have no such key) */
            const char *l = bench_line("ours", 0, "mlperf", 2, "lazy");
            double g = l ? json_num(l, "step_products_gflops") : -1;
            if (g > 0)
                printf("  the step's dense products alone, as it blocks them, data in cache, 2 threads: %.1f GFLOP/s = "
                       "%.1f%% of the peak (the most a step reaches with these kernels)\n",
                       g, 100 * g / peak2);
        }
    }
    return 0;
}

/* 0.6.1's unkeyed hash of an 8-byte id: what ids chosen against it aim at. */
static uint64_t old_id_hash(const char *p)
{
    uint64_t w;
    memcpy(&w, p, 8);
    return ncf__mix64(0x243F6A8885A308D3ull ^ 8 ^ w);
}

/* A log of n users x 2 items, each user an 8-character id of [a-z0-9]: random, or chosen so
   0.6.1's hash puts them all in the first 1,024 slots of every table up to 2^20 slots (by trial:
   one id in 1,024 passes). */
static char *id_log(int n, int crafted, size_t *len)
{
    char *t = (char *)malloc((size_t)n * 32 + 32), *o = t;
    uint64_t x = crafted ? 1 : 2;
    int k, j;
    o += sprintf(o, "user,item\n");
    for (k = 0; k < n; k++) {
        char id[9];
        do {
            uint64_t r = ncf__mix64(x++);
            for (j = 0; j < 8; j++) id[j] = "abcdefghijklmnopqrstuvwxyz0123456789"[(r >> (6 * j)) % 36];
            id[8] = 0;
        } while (crafted && (old_id_hash(id) & (((uint64_t)1 << 20) - 1024)) != 0);
        o += sprintf(o, "%s,%d\n%s,%d\n", id, k % 97, id, k % 89 + 100);
    }
    *len = (size_t)(o - t);
    return t;
}

/* Text ids chosen against 0.6.1's hash against random ones of the same size: load time, 5
   rounds in turn, medians. (0.6.1 took 33 s for 80,000 such ids, 0.14 s for random ones.) */
static int bench_load_adversarial(void)
{
    enum { N = 80000, ROUNDS = 5 };
    double ts[2][ROUNDS], med[2];
    size_t len[2];
    char *log[2];
    int c, r;
    ncf_dataset_opts o = ncf_dataset_opts_default();
    o.holdout = NCF_HOLDOUT_NONE;
    for (c = 0; c < 2; c++) log[c] = id_log(N, c, &len[c]);
    for (r = 0; r < ROUNDS; r++)
        for (c = 0; c < 2; c++) {
            ncf_dataset d;
            double t = now_s();
            if (ncf_load_dataset_mem(&d, "ids", log[c], len[c], &o) != NCF_OK) {
                printf("%s\n", ncf_error_text());
                return 1;
            }
            ts[c][r] = now_s() - t;
            ncf_dataset_free(&d);
        }
    for (c = 0; c < 2; c++) med[c] = median(ts[c], ROUNDS);
    printf("{\"case\":\"load_adversarial_ids\",\"ids\":%d,\"bytes\":%lu,\"random_s\":%.4f,\"crafted_s\":%.4f,"
           "\"ratio\":%.2f}\n",
           N, (unsigned long)len[1], med[0], med[1], med[1] / med[0]);
    free(log[0]), free(log[1]);
    return 0;
}

/* Loader speed: the paper's ml-1m split, and a 20M-line ratings.csv written here. */
static int bench_load(void)
{
    ncf_dataset d;
    double t, t1m = -1;
    char ml1m[1024];
    snprintf(ml1m, sizeof ml1m, "%s/ml-1m-ncf/ml-1m", data_dir());
    t = now_s();
    if (*data_dir() && ncf_load_dataset(&d, ml1m, NULL) == NCF_OK) t1m = now_s() - t, ncf_dataset_free(&d);
    printf("{\"case\":\"load\",\"ml1m_split_s\":%.2f}\n", t1m);
    return 0;
}

/* An ml-20m-sized ratings.csv (138,493 users, 26,744 items, 20,000,263 lines) with integer ids,
   or with every id written as a 16-character string ("u000000000000017"). */
static int bench_write_ratings(const char *path, int text)
{
    ncf_dataset d;
    FILE *f;
    int u;
    int64_t k;
    if (ncf_synthetic(&d, 138493, 26744, 20000263, 16, 1) != NCF_OK || !(f = fopen(path, "w"))) return 1;
    fprintf(f, "userId,movieId,rating,timestamp\n");
    for (u = 0; u < d.num_users; u++)
        for (k = d.user_ptr[u]; k <= d.user_ptr[u + 1]; k++) {
            int item = k < d.user_ptr[u + 1] ? d.items[k] : d.test_item[u];
            long long ts = k < d.user_ptr[u + 1] ? 1100000000LL + k : 1500000000LL + u;
            if (text) fprintf(f, "u%015d,i%015d,%.1f,%lld\n", u + 1, item + 1, 0.5 * (1 + (k % 10)), ts);
            else fprintf(f, "%d,%d,%.1f,%lld\n", u + 1, item + 1, 0.5 * (1 + (k % 10)), ts);
        }
    ncf_dataset_free(&d);
    return fclose(f) != 0;
}

/* A copy of d's ids as text, "u%015d" / "i%015d" of the integer ids (ascending as they do). */
static int text_ids_of(const ncf_dataset *d, ncf_dataset *t)
{
    int k, c;
    *t = *d;
    t->raw_user = t->raw_item = NULL;
    for (c = 0; c < 2; c++) {
        int n = c ? d->num_items : d->num_users;
        char *text = (char *)malloc((size_t)n * 16 + 1);
        int64_t *at = (int64_t *)malloc(sizeof(int64_t) * ((size_t)n + 1));
        if (!text || !at) return 0;
        for (k = 0, at[0] = 0; k < n; k++) {
            sprintf(text + (size_t)k * 16, "%c%015lld", c ? 'i' : 'u',
                    (long long)(c ? d->raw_item[k] : d->raw_user[k]));
            at[k + 1] = at[k] + 16;
        }
        if (c) t->item_text = text, t->item_text_at = at;
        else t->user_text = text, t->user_text_at = at;
    }
    return 1;
}

/* Serving by string id against integer id: the MLPerf model (138,493 users x 26,744 items),
   top-10 for 200 users, 5 rounds in turn; by string includes finding the user and naming
   the 10 items. */
static int bench_serve_ids(void)
{
    ncf_dataset d, t;
    ncf_model *mi = NULL, *mt = NULL;
    ncf_config c = ncf_config_mlperf();
    ncf_rec_opts ro = ncf_rec_opts_default();
    double ti[5], tt[5], mid_i, mid_t;
    int r, j, q, same = 1;
    if (ncf_synthetic(&d, 138493, 26744, 3000000, 16, 1) != NCF_OK) return 1;
    c.num_users = d.num_users, c.num_items = d.num_items;
    if (ncf_model_create(&mi, &c) != NCF_OK || ncf_model_create(&mt, &c) != NCF_OK ||
        ncf_model_set_ids(mi, &d) != NCF_OK || !text_ids_of(&d, &t) || ncf_model_set_ids(mt, &t) != NCF_OK) {
        fprintf(stderr, "bench: %s\n", ncf_error_text());
        return 1;
    }
    free(t.user_text), free(t.item_text), free(t.user_text_at), free(t.item_text_at);
    for (r = 0; r < 5; r++)
        for (q = 0; q < 2; q++) {
            double t0 = now_s();
            for (j = 0; j < 200; j++) {
                int u = (int)((uint64_t)j * 7919 % (uint64_t)d.num_users), k, n;
                int64_t items[10];
                int32_t idx[10];
                float sc[10];
                char name[32], id[NCF_MAX_ID_BYTES + 1];
                if (q == 0) {
                    n = recommend_k(mi, d.raw_user[u], 10, 1, items, sc);
                } else {
                    snprintf(name, sizeof name, "u%015lld", (long long)d.raw_user[u]);
                    n = ncf_recommend_index(mt, ncf_find(mt, NCF_USER, name), &ro, idx, sc);
                    for (k = 0; k < n; k++) {
                        must(ncf_id(mt, NCF_ITEM, idx[k], id, sizeof id));
                        same &= atoll(id + 1) == d.raw_item[idx[k]];
                    }
                }
                same &= n == 10;
            }
            (q ? tt : ti)[r] = (now_s() - t0) / 200;
        }
    mid_i = median(ti, 5), mid_t = median(tt, 5);
    printf("{\"case\":\"serve_ids\",\"int_ms\":%.3f,\"text_ms\":%.3f,\"ratio\":%.3f,\"same\":%d}\n", 1e3 * mid_i,
           1e3 * mid_t, mid_t / mid_i, same);
    ncf_model_free(mi), ncf_model_free(mt), ncf_dataset_free(&d);
    return !same;
}

/* Known-user top-10 latency from request threads: each of T threads asks for CALLS lists one
   after another (users spread over the catalogue), every call timed; the median over all. */
enum { LAT_CALLS = 400, LAT_MOST = 8 };
typedef struct {
    const ncf_model *m;
    int first;
    double *ms;
} latency_job;

static void *latency_worker(void *arg)
{
    latency_job *j = (latency_job *)arg;
    ncf_rec_opts o = ncf_rec_opts_default();
    int32_t top[10];
    int k;
    for (k = 0; k < LAT_CALLS; k++) {
        double t0 = now_s();
        must(ncf_recommend_index(j->m, (int)(((uint64_t)(j->first + k) * 2654435761u) % (uint64_t)j->m->cfg.num_users),
                                 &o, top, NULL));
        j->ms[k] = 1e3 * (now_s() - t0);
    }
    return NULL;
}

static double request_latency(const ncf_model *m, int threads)
{
    static double ms[LAT_MOST * LAT_CALLS];
    latency_job job[LAT_MOST];
    pthread_t t[LAT_MOST];
    int j;
    for (j = 0; j < threads; j++) {
        job[j].m = m, job[j].first = j * LAT_CALLS, job[j].ms = ms + (size_t)j * LAT_CALLS;
        if (pthread_create(&t[j], NULL, latency_worker, &job[j]) != 0) return -1;
    }
    for (j = 0; j < threads; j++) pthread_join(t[j], NULL);
    return median(ms, threads * LAT_CALLS);
}

/* Serving speed (make bench): a fold-in of a user with 50 interactions (paper and MLPerf
   configs, one thread, every step included, median of 21); top-10 for many users at once on
   the MLPerf model (138,493 users x 26,744 items; a fixed sample of 512 users, on all
   threads): users per second and the scores' FLOPs against the machine's peak (the summary);
   an allow-list of 1,000 candidates against the catalogue. */
static int bench_serving(void)
{
    ncf_dataset d;
    ncf_model *m = NULL;
    int cfgs, k, j, T = ncf_set_threads(0);
    for (cfgs = 0; cfgs < 2; cfgs++) {
        ncf_config c = cfgs ? ncf_config_mlperf() : ncf_config_default();
        ncf_fold_opts fo = ncf_fold_opts_default();
        int users = cfgs ? 138493 : 6040, items = cfgs ? 26744 : 3706;
        double t[21], ti[21], macs = 0;
        int32_t given[50], fans[50];
        float *row;
        if (ncf_synthetic(&d, users, items, cfgs ? 3000000 : 600000, 16, 1) != NCF_OK) return 1;
        c.num_users = d.num_users, c.num_items = d.num_items;
        if (ncf_model_create(&m, &c) != NCF_OK || ncf_model_set_ids(m, &d) != NCF_OK) return 1;
        row = (float *)malloc(sizeof(float) * (size_t)ncf_row_size(m));
        for (j = 0; j < 50; j++) given[j] = (int32_t)((j * 7919 + 13) % items);
        ncf_set_threads(1);
        for (k = 0; k < 21; k++) {
            double t0 = now_s();
            fo.seed = (uint64_t)k + 1;
            if (ncf_fold_in(m, NCF_USER, given, 50, &fo, row) != NCF_OK) return 1;
            t[k] = now_s() - t0;
        }
        for (j = 0; j < 50; j++) fans[j] = (int32_t)((j * 7907 + 11) % users);
        for (k = 0; k < 21; k++) { /* an item from 50 users */
            double t0 = now_s();
            fo.seed = (uint64_t)k + 1;
            if (ncf_fold_in(m, NCF_ITEM, fans, 50, &fo, row) != NCF_OK) return 1;
            ti[k] = now_s() - t0;
        }
        ncf_set_threads(T);
        for (j = 2; j <= m->scratch->nd; j++) macs += (double)c.layers[j - 1] * c.layers[j];
        macs += m->scratch->F + m->scratch->top;
        printf("{\"case\":\"fold_in\",\"config\":\"%s\",\"items_given\":50,\"steps\":%d,\"ms\":%.3f,\"item_ms\":%.3f,"
               "\"score_flop\":%.0f",
               cfgs ? "mlperf" : "paper", fo.steps, 1e3 * median(t, 21), 1e3 * median(ti, 21), 2 * macs);
        if (!cfgs) { /* request threads: 1, then 4, on the paper model */
            double one = request_latency(m, 1), four = request_latency(m, 4);
            printf(",\"request_ms_1\":%.4f,\"request_ms_4\":%.4f", one, four);
        }
        if (cfgs) { /* many users at once; an allow-list */
            enum { N = 512, K = 10 };
            static int32_t ulist[N], top[N * K], allow[1000];
            static float sc[N * K];
            static int counts[N];
            ncf_rec_opts o = ncf_rec_opts_default();
            double ta[5], tc[5], tl[5];
            for (j = 0; j < N; j++) ulist[j] = (int32_t)((uint64_t)j * 104729 % (uint64_t)users);
            for (j = 0; j < 1000; j++) allow[j] = (int32_t)((j * 26737 + 5) % items);
            o.threads = 1; /* one list on all threads (the default is the calling thread's alone) */
            for (k = 0; k < 5; k++) {
                double t0 = now_s();
                if (ncf_recommend_users(m, ulist, N, &o, top, sc, counts) != NCF_OK) return 1;
                ta[k] = now_s() - t0;
                o.allow = NULL, t0 = now_s();
                for (j = 0; j < 20; j++) ncf_recommend_index(m, ulist[j], &o, top, sc);
                tc[k] = (now_s() - t0) / 20;
                o.allow = allow, o.num_allow = 1000, t0 = now_s();
                for (j = 0; j < 20; j++) ncf_recommend_index(m, ulist[j], &o, top, sc);
                tl[k] = (now_s() - t0) / 20;
                o.allow = NULL;
            }
            printf(",\"threads\":%d,\"users_per_s\":%.1f,\"items\":%d,\"catalogue_ms\":%.3f,\"allow1000_ms\":%.3f", T,
                   N / median(ta, 5), items, 1e3 * median(tc, 5), 1e3 * median(tl, 5));
        }
        printf("}\n");
        free(row);
        ncf_model_free(m), m = NULL;
        ncf_dataset_free(&d);
    }
    return 0;
}

/* Growth against training from scratch, on a MovieLens ratings file with timestamps
   (ml-100k's u.data; the ml-1m split here has none): each user's latest rating held out (the
   one before it for validation, 99 sampled negatives); a NeuMF trained 10 epochs on the
   earlier 90% of the ratings by time (less the held-out ones: yesterday's model has not seen
   today's test), then grown to all of them and trained on, against one trained on all of them
   from the start. Each side's epoch is the one its validation HR picks; its test HR and the
   seconds to get there (the first 10 epochs included) are reported. */
static int bench_growth(const char *path)
{
    FILE *f = fopen(path, "rb");
    char *text, *early_text;
    size_t len, n_early = 0;
    int64_t *ts, n = 0, cut, k;
    ncf_dataset full, early;
    ncf_dataset_opts lo = ncf_dataset_opts_default(), le = ncf_dataset_opts_default();
    ncf_config c = ncf_config_default();
    ncf_sampler s;
    ncf_eval_opts eo = ncf_eval_opts_default();
    int side, e;
    if (!f) {
        fprintf(stderr, "bench: %s: cannot open\n", path);
        return 1;
    }
    fseek(f, 0, SEEK_END), len = (size_t)ftell(f), fseek(f, 0, SEEK_SET);
    text = (char *)malloc(len + 1), early_text = (char *)malloc(len + 1),
    ts = (int64_t *)malloc(sizeof(int64_t) * (len / 8 + 1));
    if (!text || !early_text || !ts || fread(text, 1, len, f) != len) return 1;
    fclose(f);
    text[len] = 0;
    for (k = 0; k < (int64_t)len; k = strchr(text + k, '\n') ? strchr(text + k, '\n') - text + 1 : (int64_t)len) {
        const char *q = text + k;
        int tabs = 0;
        while (*q && *q != '\n' && tabs < 3) tabs += *q++ == '\t';
        ts[n++] = atoll(q);
    }
    lo.validation = 1, lo.seed = 1, le.holdout = NCF_HOLDOUT_NONE;
    if (ncf_load_dataset_mem(&full, "all", text, len, &lo) != NCF_OK) {
        fprintf(stderr, "bench: %s\n", ncf_error_text());
        return 1;
    }
    {
        int64_t *sorted = (int64_t *)malloc(sizeof(int64_t) * (size_t)n), j = 0;
        memcpy(sorted, ts, sizeof(int64_t) * (size_t)n);
        qsort(sorted, (size_t)n, sizeof *sorted, ncf__cmp_i64);
        cut = sorted[n * 9 / 10];
        free(sorted);
        for (k = 0; k < (int64_t)len; j++) { /* the lines up to the cut, in file order, less the held-out */
            const char *nl = strchr(text + k, '\n');
            size_t l = nl ? (size_t)(nl - text - k + 1) : len - (size_t)k;
            char uid[32], iid[32];
            int u, i;
            sscanf(text + k, "%31s %31s", uid, iid);
            u = ncf_dataset_find(&full, NCF_USER, uid), i = ncf_dataset_find(&full, NCF_ITEM, iid);
            if (ts[j] <= cut && u >= 0 && i != full.test_item[u] && i != full.val_item[u])
                memcpy(early_text + n_early, text + k, l), n_early += l;
            k += (int64_t)l;
        }
    }
    if (ncf_load_dataset_mem(&early, "earlier 90%", early_text, n_early, &le) != NCF_OK) {
        fprintf(stderr, "bench: %s\n", ncf_error_text());
        return 1;
    }
    for (side = 0; side < 2; side++) {
        double t0 = now_s(), bv = -1, bt = 0, btest = 0;
        int be = 0;
        ncf_model *m = NULL;
        ncf_metrics mv, mt;
        if (side) { /* yesterday's model: 10 epochs on the earlier ratings, then grown */
            c.num_users = early.num_users, c.num_items = early.num_items;
            if (ncf_model_create(&m, &c) != NCF_OK || ncf_model_set_ids(m, &early) != NCF_OK ||
                ncf_sampler_init(&s, &early, 4, 1) != NCF_OK)
                return 1;
            for (e = 1; e <= 10; e++) must(ncf_train_epoch(m, &s, e, NULL, NULL, NULL));
            printf("{\"case\":\"growth_early\",\"ratings\":%lld,\"users\":%d,\"items\":%d,\"s\":%.2f}\n",
                   (long long)early.report.interactions, early.num_users, early.num_items, now_s() - t0);
            if (ncf_model_grow(&m, &full) != NCF_OK) {
                fprintf(stderr, "bench: %s\n", ncf_error_text());
                return 1;
            }
        } else {
            c.num_users = full.num_users, c.num_items = full.num_items;
            if (ncf_model_create(&m, &c) != NCF_OK || ncf_model_set_ids(m, &full) != NCF_OK) return 1;
        }
        if (ncf_sampler_init(&s, &full, 4, 1) != NCF_OK) return 1;
        for (e = 1; e <= 20; e++) {
            double t;
            must(ncf_train_epoch(m, &s, (int)m->epoch + 1, NULL, NULL, NULL));
            t = now_s() - t0;
            eo.target = NCF_EVAL_VALIDATION, must(ncf_evaluate(m, &full, &eo, &mv));
            eo.target = NCF_EVAL_TEST, must(ncf_evaluate(m, &full, &eo, &mt));
            printf("{\"case\":\"growth_epoch\",\"side\":\"%s\",\"epoch\":%d,\"val_hr\":%.4f,\"test_hr\":%.4f,\"s\":%."
                   "2f}\n",
                   side ? "grown" : "scratch", e, mv.hr, mt.hr, t);
            if (mv.hr > bv) bv = mv.hr, be = e, bt = t, btest = mt.hr;
        }
        printf(
            "{\"case\":\"growth\",\"side\":\"%s\",\"ratings\":%lld,\"best_epoch\":%d,\"val_hr\":%.4f,\"test_hr\":%.4f,"
            "\"s_to_best\":%.2f}\n",
            side ? "grown" : "scratch", (long long)full.report.interactions, be, bv, btest, bt);
        ncf_model_free(m);
    }
    ncf_dataset_free(&full), ncf_dataset_free(&early);
    free(text), free(early_text), free(ts);
    return 0;
}

/* ------------------------------------------------ fold-in quality (bench) */
/* A copy of d without the training positives of the users marked in out[] (their held-out
   items stay). */
static int without_training_of(const ncf_dataset *d, const uint8_t *out, ncf_dataset *t)
{
    int u;
    int64_t k, w = 0;
    memset(t, 0, sizeof *t);
    *t = *d;
    t->user_ptr = (int64_t *)NCF_MALLOC(sizeof(int64_t) * ((size_t)d->num_users + 1));
    t->items = (int32_t *)NCF_MALLOC(sizeof(int32_t) * (size_t)(d->num_train ? d->num_train : 1));
    t->train_user = (int32_t *)NCF_MALLOC(sizeof(int32_t) * (size_t)(d->num_train ? d->num_train : 1));
    t->test_item = (int32_t *)NCF_MALLOC(sizeof(int32_t) * (size_t)d->num_users);
    t->eval_neg = (int32_t *)NCF_MALLOC(sizeof(int32_t) * (size_t)d->num_users * (size_t)d->num_eval_neg);
    t->raw_user = (int64_t *)NCF_MALLOC(sizeof(int64_t) * (size_t)d->num_users);
    t->raw_item = (int64_t *)NCF_MALLOC(sizeof(int64_t) * (size_t)d->num_items);
    t->val_item = d->val_item ? (int32_t *)NCF_MALLOC(sizeof(int32_t) * (size_t)d->num_users) : NULL;
    t->val_neg =
        d->val_item ? (int32_t *)NCF_MALLOC(sizeof(int32_t) * (size_t)d->num_users * (size_t)d->num_val_neg) : NULL;
    t->recent_item = NULL, t->user_text = t->item_text = NULL, t->user_text_at = t->item_text_at = NULL,
    t->shard.groups = NULL;
    if (!t->user_ptr || !t->items || !t->train_user || !t->test_item || !t->eval_neg || !t->raw_user || !t->raw_item)
        return 0;
    memcpy(t->test_item, d->test_item, sizeof(int32_t) * (size_t)d->num_users);
    memcpy(t->eval_neg, d->eval_neg, sizeof(int32_t) * (size_t)d->num_users * (size_t)d->num_eval_neg);
    memcpy(t->raw_user, d->raw_user, sizeof(int64_t) * (size_t)d->num_users);
    memcpy(t->raw_item, d->raw_item, sizeof(int64_t) * (size_t)d->num_items);
    if (d->val_item) {
        memcpy(t->val_item, d->val_item, sizeof(int32_t) * (size_t)d->num_users);
        memcpy(t->val_neg, d->val_neg, sizeof(int32_t) * (size_t)d->num_users * (size_t)d->num_val_neg);
    }
    for (u = 0, t->user_ptr[0] = 0; u < d->num_users; u++) {
        if (!out[u])
            for (k = d->user_ptr[u]; k < d->user_ptr[u + 1]; k++) t->items[w] = d->items[k], t->train_user[w++] = u;
        t->user_ptr[u + 1] = w;
    }
    t->num_train = w;
    return 1;
}

/* HR@10, NDCG@10 of the held-out users (out[]) on the target's candidates: model rows
   (urow NULL) or rows folded in from each user's training items with fo. */
static void heldout_metrics(const ncf_model *m, const ncf_dataset *d, const uint8_t *out, int target,
                            const ncf_fold_opts *fo, double *hr, double *ndcg, double *ms)
{
    int u, users = 0, nn = target ? d->num_val_neg : d->num_eval_neg;
    float *row = (float *)malloc(sizeof(float) * (size_t)ncf_row_size(m)),
          *sc = (float *)malloc(sizeof(float) * (size_t)(nn + 1));
    int32_t *cand = (int32_t *)malloc(sizeof(int32_t) * (size_t)(nn + 1));
    double h = 0, g = 0, t0 = now_s();
    for (u = 0; u < d->num_users; u++) {
        int32_t t = target ? d->val_item[u] : d->test_item[u];
        int j, r = 0, n = (int)(d->user_ptr[u + 1] - d->user_ptr[u]);
        if (!out[u] || t < 0 || n == 0) continue;
        if (fo) ncf_fold_in(m, NCF_USER, d->items + d->user_ptr[u], n, fo, row);
        cand[0] = t;
        memcpy(cand + 1, (target ? d->val_neg : d->eval_neg) + (size_t)u * nn, sizeof(int32_t) * (size_t)nn);
        must(ncf_predict_for(m, NCF_USER, u, fo ? row : NULL, cand, nn + 1, sc));
        for (j = 1; j <= nn; j++) r += cand[j] != t && sc[j] >= sc[0];
        users++;
        if (r < 10) h += 1, g += log(2.0) / log(r + 2.0);
    }
    *hr = h / users, *ndcg = g / users, *ms = 1e3 * (now_s() - t0) / users;
    free(row), free(sc), free(cand);
}

/* Popularity on the held-out users' test candidates (training counts of everyone else). */
static double heldout_popularity(const ncf_dataset *trained_on, const ncf_dataset *d, const uint8_t *out)
{
    double *pop = (double *)calloc((size_t)d->num_items, sizeof(double)), h = 0;
    int u, users = 0;
    int64_t k;
    for (k = 0; k < trained_on->num_train; k++) pop[trained_on->items[k]] += 1;
    for (u = 0; u < d->num_users; u++) {
        int j, r = 0;
        if (!out[u] || d->test_item[u] < 0) continue;
        for (j = 0; j < d->num_eval_neg; j++)
            r += pop[d->eval_neg[(size_t)u * d->num_eval_neg + j]] >= pop[d->test_item[u]];
        users++, h += r < 10;
    }
    free(pop);
    return h / users;
}

/* Trains epochs 1..E, keeping the epoch whose validation HR over the users not held out is
   best (a copy in *best). */
static int train_best(ncf_model *m, const ncf_dataset *t, const uint8_t *out, int E, ncf_model **best, int *best_epoch)
{
    ncf_sampler s;
    uint8_t *in = (uint8_t *)malloc((size_t)t->num_users);
    double bh = -1, hr, nd, ms;
    int e, u;
    void *buf;
    size_t len;
    for (u = 0; u < t->num_users; u++) in[u] = !out[u];
    if (ncf_sampler_init(&s, t, m->cfg.num_neg, m->cfg.seed) != NCF_OK) return 0;
    for (e = 1; e <= E; e++) {
        if (ncf_train_epoch(m, &s, e, NULL, NULL, NULL) != NCF_OK) return 0;
        heldout_metrics(m, t, in, 1, NULL, &hr, &nd, &ms);
        if (hr > bh && ncf_save_mem(m, NCF_SAVE_MODEL, &buf, &len) == NCF_OK) {
            ncf_model_free(*best), *best = NULL;
            must(ncf_load_mem(best, buf, len)), ncf_free(buf);
            bh = hr, *best_epoch = e;
        }
    }
    free(in);
    return *best != NULL;
}

/* Fold-in against training: 10% of the users of the paper's ml-1m split held out entirely
   (seeded), a model trained on the rest (neumf, mf, or als: MF by ALS, whose fold-in is
   exact and takes no options), each held-out user folded in from its training items;
   the fold-in's steps, learning rate and L2 chosen on those users' validation items, its test
   figures against the same users trained normally and against popularity. */
static int bench_foldin(const char *prefix, const char *which)
{
    ncf_dataset_opts lo = ncf_dataset_opts_default();
    ncf_dataset d, t;
    ncf_config c = ncf_config_default();
    ncf_model *m = NULL, *full = NULL, *best = NULL, *best_full = NULL;
    uint8_t *out;
    int u, E = 20, be = 0, bf = 0, held = 0, si, li, gi, grid = 3;
    static const int steps[] = {10, 20, 40};
    static const float lrs[] = {0.01f, 0.03f, 0.1f}, l2s[] = {0.0f, 0.01f, 0.1f};
    ncf_fold_opts fo = ncf_fold_opts_default(), chosen = fo;
    double hr, nd, ms, bv = -1, fh, fn;
    lo.validation = 1, lo.seed = 1;
    if (ncf_load_dataset(&d, prefix, &lo) != NCF_OK) {
        fprintf(stderr, "bench: %s\n", ncf_error_text());
        return 1;
    }
    out = (uint8_t *)calloc((size_t)d.num_users, 1);
    for (u = 0; u < d.num_users; u++) held += out[u] = (ncf__mix64(7 + (uint64_t)u) % 10) == 0;
    if (!strcmp(which, "mf")) c.model = NCF_MF, c.mf_dim = 256, c.lr = 0.002f, c.mf_reg = 0.003f, E = 15;
    if (!strcmp(which, "als")) /* (its fold-in takes no options: one point of the grid) */
        c.model = NCF_MF, c.optimizer = NCF_OPT_ALS, c.mf_dim = 64, c.mf_reg = 1.0f, E = 10, grid = 1;
    c.num_users = d.num_users, c.num_items = d.num_items;
    if (!without_training_of(&d, out, &t) || ncf_model_create(&m, &c) != NCF_OK || ncf_model_set_ids(m, &d) != NCF_OK ||
        ncf_model_create(&full, &c) != NCF_OK || ncf_model_set_ids(full, &d) != NCF_OK ||
        !train_best(m, &t, out, E, &best, &be) || !train_best(full, &d, out, E, &best_full, &bf)) {
        fprintf(stderr, "bench: %s\n", ncf_error_text());
        return 1;
    }
    for (si = 0; si < grid; si++)
        for (li = 0; li < grid; li++)
            for (gi = 0; gi < grid; gi++) {
                fo.steps = steps[si], fo.lr = lrs[li], fo.l2 = l2s[gi];
                heldout_metrics(best, &d, out, 1, &fo, &hr, &nd, &ms);
                printf("{\"case\":\"foldin_grid\",\"model\":\"%s\",\"steps\":%d,\"lr\":%g,\"l2\":%g,\"val_hr\":%.4f,"
                       "\"ms\":%.2f}\n",
                       which, fo.steps, fo.lr, fo.l2, hr, ms);
                if (hr > bv) bv = hr, chosen = fo;
            }
    heldout_metrics(best, &d, out, 0, &chosen, &hr, &nd, &ms);
    heldout_metrics(best_full, &d, out, 0, NULL, &fh, &fn, &ms);
    printf(
        "{\"case\":\"foldin\",\"model\":\"%s\",\"held_users\":%d,\"epoch\":%d,\"full_epoch\":%d,\"steps\":%d,\"lr\":%g,"
        "\"l2\":%g,\"val_hr\":%.4f,\"test_hr\":%.4f,\"test_ndcg\":%.4f,\"trained_hr\":%.4f,\"trained_ndcg\":%.4f,"
        "\"popularity_hr\":%.4f}\n",
        which, held, be, bf, chosen.steps, chosen.lr, chosen.l2, bv, hr, nd, fh, fn, heldout_popularity(&t, &d, out));
    ncf_model_free(m), ncf_model_free(full), ncf_model_free(best), ncf_model_free(best_full);
    ncf_dataset_free(&t), ncf_dataset_free(&d), free(out);
    return 0;
}

/* ------------------------------------------------ item fold-in quality (bench) */
/* A copy of d without the training positives of the items marked in out[]. */
static int without_items(const ncf_dataset *d, const uint8_t *out, ncf_dataset *t)
{
    uint8_t *none = (uint8_t *)calloc((size_t)d->num_users, 1);
    int u, ok = none && without_training_of(d, none, t);
    int64_t k, w = 0;
    for (u = 0, t->user_ptr[0] = 0; ok && u < d->num_users; u++) {
        for (k = d->user_ptr[u]; k < d->user_ptr[u + 1]; k++)
            if (!out[d->items[k]]) t->items[w] = d->items[k], t->train_user[w++] = u;
        t->user_ptr[u + 1] = w;
    }
    t->num_train = w;
    free(none);
    return ok;
}

/* Each held-out item's rows (rows[i * R]) folded in from its training users in d. */
static int fold_items(const ncf_model *m, const ncf_dataset *d, const uint8_t *out, const ncf_fold_opts *fo,
                      float *rows)
{
    int32_t *fans = (int32_t *)malloc(sizeof(int32_t) * (size_t)d->num_users);
    int i, u, R = ncf_row_size(m), ok = fans != NULL;
    int64_t k;
    for (i = 0; ok && i < d->num_items; i++) {
        int c = 0;
        if (!out[i]) continue;
        for (u = 0; u < d->num_users; u++)
            for (k = d->user_ptr[u]; k < d->user_ptr[u + 1]; k++)
                if (d->items[k] == i) {
                    fans[c++] = u;
                    break;
                }
        if (c == 0) memset(rows + (size_t)i * R, 0, sizeof(float) * (size_t)R);
        else ok = ncf_fold_in(m, NCF_ITEM, fans, c, fo, rows + (size_t)i * R) == NCF_OK;
    }
    free(fans);
    return ok;
}

/* HR@10, NDCG@10 of the users whose target item is held out (out[]), every held-out candidate
   scored by its folded rows (rows), or all by the model's own (rows NULL). */
static void held_item_metrics(const ncf_model *m, const ncf_dataset *d, const uint8_t *out, int target,
                              const float *rows, double *hr, double *ndcg, int *users)
{
    int u, nn = target ? d->num_val_neg : d->num_eval_neg, R = ncf_row_size(m);
    double h = 0, g = 0;
    *users = 0;
    for (u = 0; u < d->num_users; u++) {
        int32_t t = target ? d->val_item[u] : d->test_item[u], cand[1000];
        float sc[1000];
        int j, r = 0;
        if (t < 0 || !out[t] || nn + 1 > 1000) continue;
        cand[0] = t;
        memcpy(cand + 1, (target ? d->val_neg : d->eval_neg) + (size_t)u * nn, sizeof(int32_t) * (size_t)nn);
        must(ncf_predict_for(m, NCF_USER, u, NULL, cand, nn + 1, sc));
        for (j = 0; rows && j <= nn; j++)
            if (out[cand[j]]) ncf_predict_for(m, NCF_ITEM, -1, rows + (size_t)cand[j] * R, &u, 1, &sc[j]);
        for (j = 1; j <= nn; j++) r += cand[j] != t && sc[j] >= sc[0];
        (*users)++;
        if (r < 10) h += 1, g += log(2.0) / log(r + 2.0);
    }
    *hr = *users ? h / *users : 0, *ndcg = *users ? g / *users : 0;
}

/* Item fold-in against training: 10% of the items of the paper's ml-1m split held out of
   training entirely (seeded), a model trained on the rest (its epoch chosen on the validation
   items of the users whose validation item was kept), each held-out item folded in from its
   training users; the fold-in's steps, learning rate and L2 chosen on the users whose validation
   item is held out; test figures of the users whose test item is held out, against the same
   items trained normally. */
static int bench_itemfold(const char *prefix, const char *which)
{
    ncf_dataset_opts lo = ncf_dataset_opts_default();
    ncf_dataset d, t;
    ncf_config c = ncf_config_default();
    ncf_model *m = NULL, *full = NULL, *best = NULL, *best_full = NULL;
    uint8_t *out, *skip;
    int i, u, E = 20, be = 0, bf = 0, held = 0, si, li, gi, users, R;
    static const int steps[] = {40, 160};
    static const float lrs[] = {0.01f, 0.03f}, l2s[] = {0.0f, 0.01f};
    ncf_fold_opts fo = ncf_fold_opts_default(), chosen = fo;
    double hr, nd, bv = -1, fh, fn, t0;
    float *rows;
    lo.validation = 1, lo.seed = 1;
    if (ncf_load_dataset(&d, prefix, &lo) != NCF_OK) {
        fprintf(stderr, "bench: %s\n", ncf_error_text());
        return 1;
    }
    out = (uint8_t *)calloc((size_t)d.num_items, 1), skip = (uint8_t *)calloc((size_t)d.num_users, 1);
    for (i = 0; i < d.num_items; i++) held += out[i] = (ncf__mix64(11 + (uint64_t)i) % 10) == 0;
    for (u = 0; u < d.num_users; u++) skip[u] = d.val_item[u] >= 0 && out[d.val_item[u]];
    if (!strcmp(which, "mf"))
        c.model = NCF_MF, c.mf_dim = 256, c.lr = 0.002f, c.mf_reg = 0.003f, c.init_sd = 0.1f, E = 15;
    c.num_users = d.num_users, c.num_items = d.num_items;
    if (!without_items(&d, out, &t) || ncf_model_create(&m, &c) != NCF_OK || ncf_model_set_ids(m, &d) != NCF_OK ||
        ncf_model_create(&full, &c) != NCF_OK || ncf_model_set_ids(full, &d) != NCF_OK ||
        !train_best(m, &t, skip, E, &best, &be) || !train_best(full, &d, skip, E, &best_full, &bf)) {
        fprintf(stderr, "bench: %s\n", ncf_error_text());
        return 1;
    }
    R = ncf_row_size(best);
    rows = (float *)malloc(sizeof(float) * (size_t)R * (size_t)d.num_items);
    for (si = 0; si < 2; si++)
        for (li = 0; li < 2; li++)
            for (gi = 0; gi < 2; gi++) {
                fo.steps = steps[si], fo.lr = lrs[li], fo.l2 = l2s[gi], t0 = now_s();
                if (!fold_items(best, &d, out, &fo, rows)) return 1;
                held_item_metrics(best, &d, out, 1, rows, &hr, &nd, &users);
                printf("{\"case\":\"itemfold_grid\",\"model\":\"%s\",\"steps\":%d,\"lr\":%g,\"l2\":%g,\"val_hr\":%.4f,"
                       "\"val_users\":%d,\"fold_s\":%.2f}\n",
                       which, fo.steps, fo.lr, fo.l2, hr, users, now_s() - t0);
                if (hr > bv) bv = hr, chosen = fo;
            }
    if (!fold_items(best, &d, out, &chosen, rows)) return 1;
    held_item_metrics(best, &d, out, 0, rows, &hr, &nd, &users);
    held_item_metrics(best_full, &d, out, 0, NULL, &fh, &fn, &users);
    printf("{\"case\":\"itemfold\",\"model\":\"%s\",\"held_items\":%d,\"test_users\":%d,\"epoch\":%d,\"full_epoch\":%d,"
           "\"steps\":%d,\"lr\":%g,\"l2\":%g,\"val_hr\":%.4f,\"test_hr\":%.4f,\"test_ndcg\":%.4f,\"trained_hr\":%.4f,"
           "\"trained_ndcg\":%.4f}\n",
           which, held, users, be, bf, chosen.steps, chosen.lr, chosen.l2, bv, hr, nd, fh, fn);
    ncf_model_free(m), ncf_model_free(full), ncf_model_free(best), ncf_model_free(best_full);
    ncf_dataset_free(&t), ncf_dataset_free(&d), free(out), free(skip), free(rows);
    return 0;
}

/* ------------------------------------------------ which model's similar items (bench) */
/* Each model's 10 most similar items against co-occurrence's (the cosine of the items' sets of
   users, item-based collaborative filtering's neighbours), over 500 items with 20 users or
   more (every seventh such item): the share of the model's ten among co-occurrence's ten, and
   the mean co-occurrence cosine of the model's ten. Models trained on the paper's ml-1m split
   for the epochs their validation chose in docs/results.md. */
/* An epoch's evaluation against its training, as --eval full ranks (the test and validation
   items, sampled and in full, every epoch) and as --eval auto does (both sampled every epoch;
   the test in full once, at the end): NeuMF's paper config on a log of ml-1m's size and on a
   wide one (the shape of a 17,632-artist play-count log), and an MF of 64 factors on the wide
   one. Medians of 3. */
static int bench_evalcost(void)
{
    static const struct {
        const char *name;
        int users, items;
        int64_t n;
        ncf_model_type model;
        int factors;
    } logs[] = {{"ml-1m size", 6040, 3706, 1000209, NCF_NEUMF, 8},
                {"wide (17.6k items)", 1892, 17632, 92834, NCF_NEUMF, 8},
                {"wide (17.6k items), MF 64", 1892, 17632, 92834, NCF_MF, 64}};
    int l;
    for (l = 0; l < (int)(sizeof logs / sizeof *logs); l++) {
        ncf_dataset d;
        ncf_config c = ncf_config_default();
        ncf_model *m = NULL;
        ncf_sampler s;
        ncf_eval_opts e = ncf_eval_opts_default();
        ncf_metrics x;
        double tr[3], full[3], autom[3], once[3];
        int r, t, f;
        if (ncf_synthetic(&d, logs[l].users, logs[l].items, logs[l].n, 16, 1) != NCF_OK ||
            ncf_sample_eval_negatives(&d, 99, 1) != NCF_OK || ncf_hold_out_validation(&d, 99, 2) != NCF_OK)
            return fprintf(stderr, "bench: %s\n", ncf_error_text()), 1;
        c.num_users = d.num_users, c.num_items = d.num_items, c.model = logs[l].model, c.mf_dim = logs[l].factors;
        if (ncf_model_create(&m, &c) != NCF_OK || ncf_sampler_init(&s, &d, c.num_neg, c.seed) != NCF_OK) return 1;
        for (r = 0; r < 3; r++) {
            double t0 = now_s();
            if (ncf_train_epoch(m, &s, r + 1, NULL, NULL, NULL) != NCF_OK) return 1;
            tr[r] = now_s() - t0, full[r] = autom[r] = once[r] = 0;
            for (t = 0; t < 2; t++)
                for (f = 0; f < 2; f++) {
                    double t1 = now_s(), dt;
                    e.target = t ? NCF_EVAL_VALIDATION : NCF_EVAL_TEST, e.full_ranking = f;
                    if (ncf_evaluate(m, &d, &e, &x) != NCF_OK) return 1;
                    dt = now_s() - t1;
                    full[r] += dt;
                    if (!f) autom[r] += dt;
                    if (f && !t) once[r] = dt;
                }
        }
        printf("{\"case\":\"evalcost\",\"log\":\"%s\",\"users\":%d,\"items\":%d,\"threads\":%d,\"train_s\":%.3f,"
               "\"eval_full_s\":%.3f,\"eval_auto_s\":%.3f,\"final_test_s\":%.3f,\"full_over_train\":%.2f,"
               "\"auto_over_train\":%.3f}\n",
               logs[l].name, d.num_users, d.num_items, ncf_set_threads(0), median(tr, 3), median(full, 3),
               median(autom, 3), median(once, 3), median(full, 3) / median(tr, 3), median(autom, 3) / median(tr, 3));
        fflush(stdout);
        ncf_model_free(m), ncf_dataset_free(&d);
    }
    return 0;
}

/* SGD one example a step (MF, batch 1): its own loop against ncf_train_step given the same
   examples one at a time (the batch path, which batch 1 took before), on a log of ml-1m's size,
   8 negatives; examples a second, medians of 3 spans of 2 million steps each. */
static int bench_sgd1(void)
{
    static const int factors[] = {32, 128, 256};
    ncf_dataset d;
    int f;
    if (ncf_synthetic(&d, 6040, 3706, 1000209, 16, 1) != NCF_OK)
        return fprintf(stderr, "bench: %s\n", ncf_error_text()), 1;
    for (f = 0; f < 3; f++) {
        ncf_config c = ncf_config_default();
        ncf_model *a = NULL, *b = NULL;
        ncf_sampler s;
        double loop[3], step[3];
        const int64_t span = 2000000, slow = 200000; /* (the batch path, a tenth as many) */
        int r;
        c.num_users = d.num_users, c.num_items = d.num_items, c.model = NCF_MF, c.mf_dim = factors[f];
        c.optimizer = NCF_OPT_SGD, c.batch_size = 1, c.lr = 0.01f, c.mf_reg = 0.0025f, c.init_sd = 0.1f, c.num_neg = 8;
        if (ncf_model_create(&a, &c) != NCF_OK || ncf_model_create(&b, &c) != NCF_OK ||
            ncf_sampler_init(&s, &d, c.num_neg, c.seed) != NCF_OK)
            return fprintf(stderr, "bench: %s\n", ncf_error_text()), 1;
        for (r = 0; r < 3; r++) {
            double t0 = now_s();
            int64_t j;
            if (ncf_train_examples(a, &s, 1, r * span, span, NULL, NULL, NULL) != NCF_OK) return 1;
            loop[r] = span / (now_s() - t0);
            t0 = now_s();
            for (j = 0; j < slow; j++) {
                int32_t u, it;
                float y;
                ncf_sampler_fill(&s, 1, r * slow + j, 1, &u, &it, &y);
                if (ncf_train_step(b, &u, &it, &y, 1, NULL) != NCF_OK) return 1;
            }
            step[r] = slow / (now_s() - t0);
        }
        printf("{\"case\":\"sgd1\",\"factors\":%d,\"threads\":%d,\"loop_ex_s\":%.0f,\"train_step_ex_s\":%.0f,"
               "\"speedup\":%.2f}\n",
               factors[f], ncf_set_threads(0), median(loop, 3), median(step, 3), median(loop, 3) / median(step, 3));
        fflush(stdout);
        ncf_model_free(a), ncf_model_free(b);
    }
    ncf_dataset_free(&d);
    return 0;
}

/* ALS epochs (MF, the loss over every cell) on the play-count log's shape and on ml-1m's, at
   16, 64 and 128 factors: seconds an epoch, medians of 3 epochs after the first. */
static int bench_als(void)
{
    static const struct {
        const char *name;
        int users, items;
        int64_t n;
    } logs[] = {{"wide (17.6k items)", 1892, 17632, 92834}, {"ml-1m size", 6040, 3706, 1000209}};
    static const int factors[] = {16, 64, 128};
    int l, f;
    for (l = 0; l < 2; l++) {
        ncf_dataset d;
        if (ncf_synthetic(&d, logs[l].users, logs[l].items, logs[l].n, 16, 1) != NCF_OK)
            return fprintf(stderr, "bench: %s\n", ncf_error_text()), 1;
        for (f = 0; f < 3; f++) {
            ncf_config c = ncf_config_default();
            ncf_model *m = NULL;
            ncf_sampler s;
            double ep[3];
            int r;
            c.num_users = d.num_users, c.num_items = d.num_items, c.model = NCF_MF, c.mf_dim = factors[f];
            c.optimizer = NCF_OPT_ALS, c.mf_reg = 0.1f;
            if (ncf_model_create(&m, &c) != NCF_OK || ncf_sampler_init(&s, &d, 0, c.seed) != NCF_OK ||
                ncf_train_epoch(m, &s, 1, NULL, NULL, NULL) != NCF_OK)
                return fprintf(stderr, "bench: %s\n", ncf_error_text()), 1;
            for (r = 0; r < 3; r++) {
                double t0 = now_s();
                if (ncf_train_epoch(m, &s, r + 2, NULL, NULL, NULL) != NCF_OK) return 1;
                ep[r] = now_s() - t0;
            }
            printf("{\"case\":\"als\",\"log\":\"%s\",\"factors\":%d,\"threads\":%d,\"epoch_s\":%.4f,"
                   "\"positives_s\":%.0f}\n",
                   logs[l].name, factors[f], ncf_set_threads(0), median(ep, 3), (double)d.num_train / median(ep, 3));
            fflush(stdout);
            ncf_model_free(m);
        }
        ncf_dataset_free(&d);
    }
    return 0;
}

static int bench_similarity(const char *prefix)
{
    ncf_dataset_opts lo = ncf_dataset_opts_default();
    ncf_dataset d;
    int64_t *fans_at, k;
    int32_t *fans;
    int *n_users, i, u, t, picked[500], np = 0;
    double *co;
    static const struct {
        const char *name;
        ncf_model_type type;
        int f, epochs;
        float lr, reg, sd;
    } models[] = {{"NeuMF f8", NCF_NEUMF, 8, 11, 0.001f, 0, 0.01f},
                  {"GMF f8", NCF_GMF, 8, 15, 0.001f, 0, 0.01f},
                  {"MF f64", NCF_MF, 64, 6, 0.002f, 0.003f, 0.1f},
                  {"MF f256", NCF_MF, 256, 6, 0.002f, 0.003f, 0.1f}};
    if (ncf_load_dataset(&d, prefix, &lo) != NCF_OK) {
        fprintf(stderr, "bench: %s\n", ncf_error_text());
        return 1;
    }
    n_users = (int *)calloc((size_t)d.num_items, sizeof(int));
    fans_at = (int64_t *)calloc((size_t)d.num_items + 1, sizeof(int64_t));
    fans = (int32_t *)malloc(sizeof(int32_t) * (size_t)d.num_train);
    co = (double *)malloc(sizeof(double) * (size_t)d.num_items);
    for (k = 0; k < d.num_train; k++) n_users[d.items[k]]++;
    for (i = 0; i < d.num_items; i++) fans_at[i + 1] = fans_at[i] + n_users[i];
    for (u = 0; u < d.num_users; u++) /* each item's users */
        for (k = d.user_ptr[u]; k < d.user_ptr[u + 1]; k++) fans[fans_at[d.items[k]] + --n_users[d.items[k]]] = u;
    for (i = 0; i < d.num_items; i++) n_users[i] = (int)(fans_at[i + 1] - fans_at[i]);
    for (i = 0, k = 0; i < d.num_items && np < 500; i++)
        if (n_users[i] >= 20 && k++ % 7 == 0) picked[np++] = i;
    for (t = 0; t < 4; t++) {
        ncf_config c = ncf_config_default();
        ncf_model *m = NULL;
        ncf_sampler s;
        ncf_rec_opts o = ncf_rec_opts_default();
        double overlap = 0, mean_co = 0, t0 = now_s();
        int e, p;
        c.model = models[t].type, c.mf_dim = models[t].f, c.lr = models[t].lr, c.mf_reg = models[t].reg;
        c.init_sd = models[t].sd, c.num_users = d.num_users, c.num_items = d.num_items;
        if (ncf_model_create(&m, &c) != NCF_OK || ncf_model_set_ids(m, &d) != NCF_OK ||
            ncf_sampler_init(&s, &d, c.num_neg, c.seed) != NCF_OK)
            return 1;
        for (e = 1; e <= models[t].epochs; e++)
            if (ncf_train_epoch(m, &s, e, NULL, NULL, NULL) != NCF_OK) return 1;
        for (p = 0; p < np; p++) {
            int32_t mine[10], best[10];
            double bs[10];
            int j, q, r;
            i = picked[p];
            memset(co, 0, sizeof(double) * (size_t)d.num_items);
            for (k = fans_at[i]; k < fans_at[i + 1]; k++) /* users shared with every other item */
                for (q = (int)d.user_ptr[fans[k]]; q < d.user_ptr[fans[k] + 1]; q++) co[d.items[q]] += 1;
            for (j = 0; j < d.num_items; j++)
                co[j] = j == i || !n_users[j] ? -1 : co[j] / sqrt((double)n_users[i] * n_users[j]);
            for (r = 0; r < 10; r++) best[r] = -1, bs[r] = -2;
            for (j = 0; j < d.num_items; j++) /* co-occurrence's ten, by insertion */
                for (r = 0; r < 10; r++)
                    if (co[j] > bs[r]) {
                        memmove(bs + r + 1, bs + r, sizeof(double) * (size_t)(9 - r));
                        memmove(best + r + 1, best + r, sizeof(int32_t) * (size_t)(9 - r));
                        bs[r] = co[j], best[r] = j;
                        break;
                    }
            o.k = 10;
            if (ncf_similar(m, NCF_ITEM, i, &o, mine, NULL) != 10) return 1;
            for (r = 0; r < 10; r++) {
                mean_co += co[mine[r]] / (10.0 * np);
                for (q = 0; q < 10; q++) overlap += (mine[r] == best[q]) / (10.0 * np);
            }
        }
        printf("{\"case\":\"similarity\",\"model\":\"%s\",\"epochs\":%d,\"items\":%d,\"overlap_at_10\":%.4f,"
               "\"mean_cooccurrence_cosine\":%.4f,\"s\":%.1f}\n",
               models[t].name, models[t].epochs, np, overlap, mean_co, now_s() - t0);
        fflush(stdout);
        ncf_model_free(m);
    }
    { /* the scale: random neighbours' mean cosine */
        double r = 0;
        int p;
        for (p = 0; p < np; p++) {
            int j, cnt = 0;
            double sum = 0;
            i = picked[p];
            memset(co, 0, sizeof(double) * (size_t)d.num_items);
            for (k = fans_at[i]; k < fans_at[i + 1]; k++)
                for (j = (int)d.user_ptr[fans[k]]; j < d.user_ptr[fans[k] + 1]; j++) co[d.items[j]] += 1;
            for (j = 0; j < d.num_items; j++)
                if (j != i && n_users[j]) sum += co[j] / sqrt((double)n_users[i] * n_users[j]), cnt++;
            r += sum / cnt / np;
        }
        printf("{\"case\":\"similarity\",\"model\":\"random\",\"items\":%d,\"mean_cooccurrence_cosine\":%.4f}\n", np,
               r);
    }
    free(n_users), free(fans_at), free(fans), free(co), ncf_dataset_free(&d);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 4 && !strcmp(argv[1], "--summary")) return bench_summary(argv[2], argv[3]);
    if (argc == 3 && !strcmp(argv[1], "--busy")) return bench_busy(argv[2]);
    if (argc == 2 && !strcmp(argv[1], "peak")) return bench_peak();
    if (argc == 2 && !strcmp(argv[1], "load")) return bench_load();
    if (argc == 2 && !strcmp(argv[1], "load-adversarial")) return bench_load_adversarial();
    if (argc == 2 && !strcmp(argv[1], "serve-ids")) return bench_serve_ids();
    if (argc == 2 && !strcmp(argv[1], "serving")) return bench_serving();
    if (argc == 3 && !strcmp(argv[1], "growth")) return bench_growth(argv[2]);
    if (argc == 4 && !strcmp(argv[1], "foldin")) return bench_foldin(argv[2], argv[3]);
    if (argc == 4 && !strcmp(argv[1], "itemfold")) return bench_itemfold(argv[2], argv[3]);
    if (argc == 3 && !strcmp(argv[1], "similarity")) return bench_similarity(argv[2]);
    if (argc == 2 && !strcmp(argv[1], "evalcost")) return bench_evalcost();
    if (argc == 2 && !strcmp(argv[1], "sgd1")) return bench_sgd1();
    if (argc == 2 && !strcmp(argv[1], "als")) return bench_als();
    if (argc == 4 && !strcmp(argv[1], "write-ratings")) return bench_write_ratings(argv[2], !strcmp(argv[3], "text"));
    if (argc == 4) return bench_case(argv[1], atoi(argv[2]), argv[3]);
    fprintf(stderr, "usage: bench paper|mlperf THREADS lazy|dense (and the modes at the top of tests/bench.c)\n");
    return 2;
}
