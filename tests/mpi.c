/* tests/mpi.c - the MPI suite (make test-mpi) and its benchmark (make bench-mpi), built with
   mpicc -DNCF_MPI:  mpirun -np P tests_mpi --tests DIR  |  mpirun -np 2 tests_mpi --bench  |
   mpirun -np P tests_mpi --scale shards|replicated X Y */
#include "harness.h"

/* ------------------------------------------------------------- MPI tests */
/* Run by make test-mpi as mpirun -np P tests_mpi --tests DIR, for P = 1 first (it writes the
   reference models into DIR), then 2 (it also writes an epoch-1 checkpoint), 3 and 4. Every
   rank runs every check; a test passes when it passed on all ranks. */

static int g_rank, g_size;
static const char *g_mpi_dir;

static int mpi_world_max(int v)
{
    int all = v;
    MPI_Allreduce(&v, &all, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    return all;
}

static int all_ranks_ok(int ok) { return !mpi_world_max(!ok); }

static int g_weighted; /* mpi_data's positives weigh 1 to 4 (as a weighting's confidences) */

/* The same data on every rank: whole, and (when shard) this rank's shard of a copy. */
static int mpi_data(ncf_dataset *d, int shard)
{
    int64_t k;
    if (ncf_synthetic(d, 300, 200, 6000, 8, 3) != NCF_OK || ncf_sample_eval_negatives(d, 50, 3) != NCF_OK) return 0;
    if (g_weighted) {
        if (!(d->weight = (float *)NCF_MALLOC(sizeof(float) * (size_t)d->num_train))) return 0;
        for (k = 0; k < d->num_train; k++) d->weight[k] = 1 + 0.75f * (float)(k % 5);
    }
    if (ncf_hold_out_validation(d, 50, 3) != NCF_OK) return 0;
    return !shard || ncf_mpi_shard(d, MPI_COMM_WORLD) == NCF_OK;
}

static void test_mpi_shard_counts(void)
{
    ncf_dataset w, s;
    int64_t total = 0;
    int u, lo_hi[2], *all = (int *)malloc(sizeof(int) * 2 * (size_t)g_size), ok = 1;
    CHECK(mpi_data(&w, 0) && mpi_data(&s, 1));
    CHECK(s.shard.total_train == w.num_train && s.shard.user_lo <= s.shard.user_hi);
    MPI_Allreduce(&s.num_train, &total, 1, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
    CHECKF(total == w.num_train, "%lld positives over the ranks, %lld in the data", (long long)total,
           (long long)w.num_train);
    lo_hi[0] = s.shard.user_lo, lo_hi[1] = s.shard.user_hi;
    MPI_Allgather(lo_hi, 2, MPI_INT, all, 2, MPI_INT, MPI_COMM_WORLD);
    for (u = 0; u < g_size; u++) ok &= all[2 * u] == (u ? all[2 * u - 1] : 0);
    CHECKF(ok && all[2 * g_size - 1] == w.num_users, "the ranks' users do not tile [0, %d)", w.num_users);
    CHECK(s.shard.train_lo == w.user_ptr[s.shard.user_lo]);
    /* a rank's positives are about 1/P of them (split at groups of 1/16) */
    CHECKF(llabs(s.num_train - w.num_train / g_size) <= w.num_train / 16 + 100, "rank %d holds %lld of %lld", g_rank,
           (long long)s.num_train, (long long)w.num_train);
    for (u = 0; u < w.num_users; u++) {
        int mine = u >= s.shard.user_lo && u < s.shard.user_hi;
        int64_t deg = s.user_ptr[u + 1] - s.user_ptr[u];
        if (mine) {
            ok = deg == w.user_ptr[u + 1] - w.user_ptr[u] &&
                !memcmp(s.items + s.user_ptr[u], w.items + w.user_ptr[u], sizeof(int32_t) * (size_t)deg) &&
                s.test_item[u] == w.test_item[u] && s.val_item[u] == w.val_item[u] &&
                !memcmp(s.eval_neg + (size_t)(u - s.shard.user_lo) * 50, w.eval_neg + (size_t)u * 50,
                        50 * sizeof(int32_t)) &&
                !memcmp(s.val_neg + (size_t)(u - s.shard.user_lo) * 50, w.val_neg + (size_t)u * 50,
                        50 * sizeof(int32_t));
        } else ok = deg == 0 && s.test_item[u] == -1 && s.val_item[u] == -1;
        if (!ok) break;
    }
    CHECKF(ok, "user %d: its shard rows differ from the data's", u);
    CHECK_ERR(ncf_mpi_shard(&s, MPI_COMM_WORLD), NCF_ERR_ARG, "a shard already");
    CHECK_ERR(ncf_sample_eval_negatives(&s, 10, 1), NCF_ERR_ARG, "shard");
    free(all);
    ncf_dataset_free(&w), ncf_dataset_free(&s);
}

/* The ranks' batches, summed, are the single-process batch, for whole batches and a ragged
   one at the epoch's end. */
static void test_mpi_batches_sum(void)
{
    ncf_dataset w, s;
    ncf_sampler sw, ss;
    int32_t u1[512], i1[512], u2[512], i2[512], sum[3 * 512];
    float y1[512], y2[512];
    int b, j, ok = 1;
    CHECK(mpi_data(&w, 0) && mpi_data(&s, 1));
    CHECK(ncf_sampler_init(&sw, &w, 4, 9) == NCF_OK && ncf_sampler_init(&ss, &s, 4, 9) == NCF_OK);
    CHECK(sw.num_examples == ss.num_examples && sw.bits == ss.bits);
    for (b = 0; b < 4 && ok; b++) {
        int64_t start = b < 3 ? b * 5000 : sw.num_examples - 300;
        int n = b < 3 ? 512 : 300;
        ncf_sampler_fill(&sw, 2, start, n, u1, i1, y1);
        ncf_sampler_fill(&ss, 2, start, n, u2, i2, y2);
        for (j = 0; j < n; j++) sum[j] = u2[j], sum[n + j] = i2[j], sum[2 * n + j] = y2[j] != 0.0f;
        MPI_Allreduce(MPI_IN_PLACE, sum, 3 * n, MPI_INT32_T, MPI_SUM, MPI_COMM_WORLD);
        for (j = 0; j < n; j++) ok &= sum[j] == u1[j] && sum[n + j] == i1[j] && sum[2 * n + j] == (y1[j] != 0.0f);
    }
    CHECKF(ok, "batch %d: the ranks' examples do not sum to the single-process batch", b - 1);
    ncf_dataset_free(&w), ncf_dataset_free(&s);
}

/* Configurations trained over the ranks: NeuMF with lazy Adam and L2, MF (biases) with dense
   Adam and L2, an MLP with SGD, L2 on its embeddings and a batch that does not split evenly. */
static ncf_config mpi_config(int which, const ncf_dataset *d)
{
    ncf_config c = ncf_config_default();
    c.num_users = d->num_users, c.num_items = d->num_items, c.batch_size = 512, c.seed = 11;
    if (which == 0) c.mlp_reg[1] = 1e-4f, c.mf_reg = 1e-5f;
    if (which == 1) c.model = NCF_MF, c.mf_dim = 16, c.mf_reg = 0.003f, c.adam = NCF_ADAM_DENSE, c.batch_size = 256;
    if (which == 2) {
        c.model = NCF_MLP, c.optimizer = NCF_OPT_SGD, c.lr = 0.05f, c.mlp_reg[0] = 1e-4f, c.batch_size = 300;
        c.num_layers = 3, c.layers[0] = 32, c.layers[1] = 16, c.layers[2] = 8;
    }
    return c;
}

static int mpi_model(ncf_model **m, const ncf_config *c, const ncf_dataset *whole)
{
    return ncf_model_create(m, c) == NCF_OK && ncf_model_set_ids(*m, whole) == NCF_OK;
}

/* The model file (with Adam state) of *m equals the file at path, byte for byte. */
static int mpi_same_as_file(const ncf_model *m, const char *path)
{
    void *buf = NULL, *ref = NULL;
    size_t len = 0, rlen = 0;
    int same;
    ncf_model *r = NULL;
    if (ncf_save_mem(m, NCF_SAVE_ADAM, &buf, &len) != NCF_OK) return 0;
    same = ncf_load(&r, path) == NCF_OK && ncf_save_mem(r, NCF_SAVE_ADAM, &ref, &rlen) == NCF_OK && len == rlen &&
        !memcmp(buf, ref, len);
    ncf_free(buf), ncf_free(ref), ncf_model_free(r);
    return same;
}

/* Two epochs over P ranks give the model of one rank bit for bit, for each configuration;
   every rank's copy is the same; an epoch-1 checkpoint written with 2 ranks resumes with P. */
static void same_model_any_ranks(void)
{
    ncf_dataset w, s;
    ncf_sampler smp;
    int which, e;
    CHECK(mpi_data(&w, 0) && mpi_data(&s, 1));
    for (which = 0; which < 3; which++) {
        ncf_config c = mpi_config(which, &w);
        ncf_model *m = NULL;
        char ref[600], ckpt[600];
        uint64_t h, hmin, hmax;
        double loss[2] = {0, 0};
        snprintf(ref, sizeof ref, "%s/ref%s%d.ncf", g_mpi_dir, g_weighted ? "w" : "", which);
        snprintf(ckpt, sizeof ckpt, "%s/ckpt%s%d_e1_p2.ncf", g_mpi_dir, g_weighted ? "w" : "", which);
        CHECK(mpi_model(&m, &c, &w) && ncf_sampler_init(&smp, &s, c.num_neg, c.seed) == NCF_OK);
        for (e = 1; e <= 2 && m; e++) {
            CHECKF(ncf_mpi_train_epoch(m, &smp, e, MPI_COMM_WORLD, NULL, NULL, &loss[e - 1]) == NCF_OK, "%s",
                   ncf_error_text());
            if (e == 1 && g_size == 2 && g_rank == 0) CHECK(ncf_save(m, ckpt, NCF_SAVE_ADAM) == NCF_OK);
        }
        CHECKF(loss[1] < loss[0] && loss[1] > 0, "config %d: loss %g then %g", which, loss[0], loss[1]);
        h = m ? state_hash(m) : 0;
        MPI_Allreduce(&h, &hmin, 1, MPI_UINT64_T, MPI_MIN, MPI_COMM_WORLD);
        MPI_Allreduce(&h, &hmax, 1, MPI_UINT64_T, MPI_MAX, MPI_COMM_WORLD);
        CHECKF(hmin == hmax, "config %d: the ranks' models differ", which);
        if (g_size == 1) CHECK(ncf_save(m, ref, NCF_SAVE_ADAM) == NCF_OK);
        else
            CHECKF(mpi_same_as_file(m, ref), "config %d: %d ranks' model differs from 1 rank's (%s)", which, g_size,
                   ref);
        ncf_model_free(m), m = NULL;
        if (g_size > 2) { /* resume the 2-rank checkpoint with P ranks */
            CHECKF(ncf_load(&m, ckpt) == NCF_OK, "%s", ncf_error_text());
            CHECK(m && m->epoch == 1);
            CHECK(m && ncf_mpi_train_epoch(m, &smp, 2, MPI_COMM_WORLD, NULL, NULL, NULL) == NCF_OK);
            CHECKF(m && mpi_same_as_file(m, ref), "config %d: the 2-rank checkpoint resumed with %d ranks differs",
                   which, g_size);
            ncf_model_free(m);
        }
    }
    ncf_dataset_free(&w), ncf_dataset_free(&s);
}

static void test_mpi_same_model_any_ranks(void) { same_model_any_ranks(); }
/* Weighted positives: a shard keeps each positive's weight beside it */
static void test_mpi_same_weighted_model_any_ranks(void)
{
    g_weighted = 1;
    same_model_any_ranks();
    g_weighted = 0;
}

/* The MPI model is not ncf_train_epoch's (its sums are grouped by group of users) but close
   to it, for each configuration: the same first-epoch loss to 1e-5 (relative), the second's
   to 1e-3, and for NeuMF HR@10 within 0.02 after two epochs. */
static void test_mpi_close_to_one_process(void)
{
    ncf_dataset w, s;
    ncf_sampler sw, ss;
    int which, e;
    CHECK(mpi_data(&w, 0) && mpi_data(&s, 1));
    for (which = 0; which < 3; which++) {
        ncf_config c = mpi_config(which, &w);
        ncf_model *a = NULL, *b = NULL;
        ncf_metrics ma, mb;
        double la[2] = {0, 0}, lb[2] = {0, 0};
        CHECK(mpi_model(&a, &c, &w) && mpi_model(&b, &c, &w));
        CHECK(ncf_sampler_init(&sw, &w, 4, c.seed) == NCF_OK && ncf_sampler_init(&ss, &s, 4, c.seed) == NCF_OK);
        for (e = 1; e <= 2; e++) {
            CHECK(ncf_train_epoch(a, &sw, e, NULL, NULL, &la[e - 1]) == NCF_OK);
            CHECK(ncf_mpi_train_epoch(b, &ss, e, MPI_COMM_WORLD, NULL, NULL, &lb[e - 1]) == NCF_OK);
        }
        CHECKF(fabs(la[0] - lb[0]) < 1e-5 * la[0] && fabs(la[1] - lb[1]) < 1e-3 * la[1],
               "config %d: losses %.9f, %.9f in one process, %.9f, %.9f over ranks", which, la[0], la[1], lb[0], lb[1]);
        if (which == 0) {
            CHECK(ncf_evaluate(a, &w, 10, NCF_SAMPLED, &ma) == NCF_OK &&
                  ncf_evaluate(b, &w, 10, NCF_SAMPLED, &mb) == NCF_OK);
            CHECKF(fabs(ma.hr - mb.hr) <= 0.02 && ma.hr > 0.3, "HR@10 %.4f in one process, %.4f over ranks", ma.hr,
                   mb.hr);
        }
        ncf_model_free(a), ncf_model_free(b);
    }
    ncf_dataset_free(&w), ncf_dataset_free(&s);
}

/* Evaluation over the ranks equals one process's over the whole data, bit for bit: test and
   validation, sampled and full ranking, and full ranking on a sample of users. */
static void test_mpi_evaluation_exact(void)
{
    ncf_dataset w, s;
    ncf_sampler smp;
    ncf_config c;
    ncf_model *m = NULL;
    int target, full, ok = 1;
    CHECK(mpi_data(&w, 0) && mpi_data(&s, 1));
    c = mpi_config(0, &w);
    CHECK(mpi_model(&m, &c, &w) && ncf_sampler_init(&smp, &w, 4, c.seed) == NCF_OK &&
          ncf_train_epoch(m, &smp, 1, NULL, NULL, NULL) == NCF_OK);
    for (target = 0; target < 2; target++)
        for (full = 0; full < 3; full++) {
            ncf_eval_opts o = ncf_eval_opts_default();
            ncf_metrics one, many;
            o.target = target, o.full_ranking = full > 0, o.max_users = full == 2 ? 100 : 0, o.seed = 5;
            CHECK(ncf_evaluate_opts(m, &w, &o, &one) == NCF_OK);
            CHECKF(ncf_mpi_evaluate(m, &s, &o, MPI_COMM_WORLD, &many) == NCF_OK, "%s", ncf_error_text());
            ok = one.hr == many.hr && one.ndcg == many.ndcg && one.mrr == many.mrr && one.users == many.users;
            CHECKF(ok,
                   "target %d full %d: one process HR %.17g NDCG %.17g MRR %.17g users %d; ranks %.17g %.17g %.17g %d",
                   target, full, one.hr, one.ndcg, one.mrr, one.users, many.hr, many.ndcg, many.mrr, many.users);
            CHECK(full < 2 || (one.users > 50 && one.users < 200));
            /* whole data on every rank: the ranks split its users evenly, with the same figures */
            CHECK(ncf_mpi_evaluate(m, &w, &o, MPI_COMM_WORLD, &many) == NCF_OK && many.hr == one.hr &&
                  many.ndcg == one.ndcg && many.users == one.users);
        }
    ncf_model_free(m);
    ncf_dataset_free(&w), ncf_dataset_free(&s);
}

/* A failure on one rank is every rank's failure, with no rank left waiting. */
static void test_mpi_errors_agree(void)
{
    ncf_dataset w, s;
    ncf_sampler sw, ss;
    ncf_config c;
    ncf_model *m = NULL;
    ncf_eval_opts o = ncf_eval_opts_default();
    ncf_metrics met;
    CHECK(mpi_data(&w, 0) && mpi_data(&s, 1));
    c = mpi_config(0, &w);
    CHECK(mpi_model(&m, &c, &w) && ncf_sampler_init(&sw, &w, 4, c.seed) == NCF_OK &&
          ncf_sampler_init(&ss, &s, 4, c.seed) == NCF_OK);
    CHECK_ERR(ncf_mpi_train_epoch(m, &sw, 1, MPI_COMM_WORLD, NULL, NULL, NULL), NCF_ERR_ARG, "not a shard");
    CHECK_ERR(ncf_train_epoch(m, &ss, 1, NULL, NULL, NULL), NCF_ERR_ARG, "ncf_mpi_train_epoch");
    if (g_rank == g_size - 1) /* the last rank alone passes a bad model, then bad options */
        CHECK_ERR(ncf_mpi_train_epoch(NULL, &ss, 1, MPI_COMM_WORLD, NULL, NULL, NULL), NCF_ERR_ARG, "NULL model");
    else
        CHECK_ERR(ncf_mpi_train_epoch(m, &ss, 1, MPI_COMM_WORLD, NULL, NULL, NULL), NCF_ERR_ARG, "another rank failed");
    o.k = g_rank == g_size - 1 ? 0 : 10;
    if (g_rank == g_size - 1) CHECK_ERR(ncf_mpi_evaluate(m, &s, &o, MPI_COMM_WORLD, &met), NCF_ERR_ARG, "k > 0");
    else CHECK_ERR(ncf_mpi_evaluate(m, &s, &o, MPI_COMM_WORLD, &met), NCF_ERR_ARG, "another rank failed");
    CHECK(m && m->step == 0); /* nothing was trained */
    ncf_model_free(m);
    ncf_dataset_free(&w), ncf_dataset_free(&s);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* A rank with nothing to do this window waits for the others without spinning on its core
   (Open MPI's barrier polls): the 1-rank windows must see the machine a 1-rank run sees. */
static void mpi_wait_quietly(void)
{
    MPI_Request rq;
    int done = 0;
    MPI_Ibarrier(MPI_COMM_WORLD, &rq);
    while (MPI_Test(&rq, &done, MPI_STATUS_IGNORE), !done) {
        struct timespec ts = {0, 200000};
        nanosleep(&ts, NULL);
    }
}

/* make bench-mpi (mpirun -np P): the MLPerf config (lazy Adam) on ml-20m-sized synthetic data,
   one thread a rank. In each of 7 rounds, in turn (the order flipping each round): 60 steps
   over all P ranks; 60 steps over rank 0 alone (MPI_COMM_SELF, the whole data; the other ranks
   wait asleep); and, on rank 0 alone, 60 steps of ncf_train_examples, one process without
   MPI. Rank 0 prints the medians, the median of the rounds' P-rank/1-rank ratios, and the
   bytes a rank sends per step (the most of any rank). */
static int mpi_bench(void)
{
    ncf_config c = ncf_config_mlperf();
    ncf_dataset d, d1, dw;
    ncf_sampler s, s1, sw;
    ncf_model *m = NULL, *m1 = NULL, *w = NULL;
    double rate[3][7], ratio[7], t;
    int64_t pos[3] = {0, 0, 0}, bytes = 0, steps = 60;
    int provided, B, round, k, root, ok = 1;
    MPI_Init_thread(NULL, NULL, MPI_THREAD_FUNNELED, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &g_rank), MPI_Comm_size(MPI_COMM_WORLD, &g_size);
    root = g_rank == 0;
    ncf_set_threads(1);
    memset(&d1, 0, sizeof d1), memset(&dw, 0, sizeof dw);
    ok = ncf_synthetic(&d, 138493, 26744, 20000263, 16, 1) == NCF_OK;
    c.num_users = d.num_users, c.num_items = d.num_items, B = c.batch_size;
    ok = ok && ncf_model_create(&m, &c) == NCF_OK && ncf_mpi_shard(&d, MPI_COMM_WORLD) == NCF_OK &&
        ncf_sampler_init(&s, &d, c.num_neg, c.seed) == NCF_OK;
    if (root) /* the 1-rank run and the plain one: their own data and models */
        ok = ok && ncf_synthetic(&d1, 138493, 26744, 20000263, 16, 1) == NCF_OK &&
            ncf_synthetic(&dw, 138493, 26744, 20000263, 16, 1) == NCF_OK && ncf_model_create(&m1, &c) == NCF_OK &&
            ncf_model_create(&w, &c) == NCF_OK && ncf_mpi_shard(&d1, MPI_COMM_SELF) == NCF_OK &&
            ncf_sampler_init(&s1, &d1, c.num_neg, c.seed) == NCF_OK &&
            ncf_sampler_init(&sw, &dw, c.num_neg, c.seed) == NCF_OK;
    if (!all_ranks_ok(ok)) {
        fprintf(stderr, "bench: %s\n", ncf_error_text());
        MPI_Finalize();
        return 1;
    }
    for (round = -1; round < 7; round++) /* round -1 warms up */
        for (k = 0; k < 3; k++) {
            int which = round % 2 ? 2 - k : k; /* 0: P ranks, 1: rank 0 alone, 2: no MPI */
            int64_t n = (round < 0 ? 10 : steps) * B, b0 = 0;
            MPI_Barrier(MPI_COMM_WORLD);
            t = MPI_Wtime();
            if (which == 0) {
                b0 = ncf_mpi_bytes_sent(m);
                ok = ncf_mpi_train_examples(m, &s, 1, pos[0], n, MPI_COMM_WORLD, NULL, NULL, NULL) == NCF_OK;
                if (round >= 0) bytes += ncf_mpi_bytes_sent(m) - b0;
            } else if (!root) mpi_wait_quietly();
            else {
                ok = which == 1
                    ? ncf_mpi_train_examples(m1, &s1, 1, pos[1], n, MPI_COMM_SELF, NULL, NULL, NULL) == NCF_OK
                    : ncf_train_examples(w, &sw, 1, pos[2], n, NULL, NULL, NULL) == NCF_OK;
                mpi_wait_quietly();
            }
            if (round >= 0) rate[which][round] = (double)n / (MPI_Wtime() - t);
            pos[which] += n;
            if (!all_ranks_ok(ok)) {
                fprintf(stderr, "bench: %s\n", ncf_error_text());
                MPI_Finalize();
                return 1;
            }
        }
    for (round = 0; round < 7; round++) ratio[round] = rate[0][round] / rate[1][round];
    bytes /= 7 * steps;
    MPI_Allreduce(MPI_IN_PLACE, &bytes, 1, MPI_INT64_T, MPI_MAX, MPI_COMM_WORLD);
    for (k = 0; k < 3; k++) qsort(rate[k], 7, sizeof(double), cmp_double);
    qsort(ratio, 7, sizeof(double), cmp_double);
    if (root)
        printf("{\"case\":\"mpi\",\"ranks\":%d,\"threads_per_rank\":1,\"ex_per_s\":%.0f,\"one_rank_ex_per_s\":%.0f,"
               "\"ratio\":%.3f,\"one_process_no_mpi_ex_per_s\":%.0f,\"bytes_per_step\":%lld}\n",
               g_size, rate[0][3], rate[1][3], ratio[3], rate[2][3], (long long)bytes);
    ncf_model_free(m), ncf_model_free(m1), ncf_model_free(w);
    ncf_dataset_free(&d), ncf_dataset_free(&d1), ncf_dataset_free(&dw);
    MPI_Finalize();
    return 0;
}

/* This process's resident set now and at its peak, in MB (Linux; 0 where unknown). */
static void mpi_memory(double *now_mb, double *peak_mb)
{
    struct rusage ru;
    long size = 0, pages = 0;
    FILE *f = fopen("/proc/self/statm", "r");
    *now_mb = 0, *peak_mb = 0;
    if (f) {
        if (fscanf(f, "%ld %ld", &size, &pages) == 2) *now_mb = (double)pages * (double)sysconf(_SC_PAGESIZE) / 1e6;
        fclose(f);
    }
    if (getrusage(RUSAGE_SELF, &ru) == 0) *peak_mb = (double)ru.ru_maxrss / 1e3;
}

/* make bench-mpi (mpirun -np P tests_mpi --scale MODEL X Y, P = 1, 2, 4): the MLPerf config
   (lazy Adam) on synthetic data of ml-20m's shape with X times its users, Y times its items and
   max(1, Y/8) times its positives per user (16 x 32: MLPerf's expanded ml-20m, 2.2M users, 856k
   items, 1.28 billion positives), one thread a rank, the model
   replicated on every rank or in shards (each rank its users' rows): the median time of a step
   over 7 windows of 20 steps, the bytes a rank sends per step, and each rank's memory (the
   most of any rank): resident once the data is sharded and the model made, and at its peak
   (every rank makes the whole data before it keeps its shard). */
static int mpi_scale(int shards, int xu, int xi)
{
    ncf_config c = ncf_config_mlperf();
    ncf_dataset d;
    ncf_sampler s;
    ncf_model *m = NULL;
    double t[7], now_mb, peak_mb, mem[2];
    int64_t pos = 0, b0, bytes, steps = 20;
    int provided, w, ok;
    MPI_Init_thread(NULL, NULL, MPI_THREAD_FUNNELED, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &g_rank), MPI_Comm_size(MPI_COMM_WORLD, &g_size);
    ncf_set_threads(1);
    ok = ncf_synthetic(&d, 138493 * xu, 26744 * xi, (int64_t)20000263 * xu * (xi > 8 ? xi / 8 : 1), 16, 1) == NCF_OK;
    c.num_users = d.num_users, c.num_items = d.num_items;
    ok = ok && (shards ? ncf_mpi_model_create(&m, &c, &d, MPI_COMM_WORLD) : ncf_model_create(&m, &c)) == NCF_OK &&
        ncf_mpi_shard(&d, MPI_COMM_WORLD) == NCF_OK && ncf_sampler_init(&s, &d, c.num_neg, c.seed) == NCF_OK &&
        ncf_mpi_train_examples(m, &s, 1, pos, 5 * (int64_t)c.batch_size, MPI_COMM_WORLD, NULL, NULL, NULL) == NCF_OK;
    mpi_memory(&now_mb, &peak_mb);
    if (!all_ranks_ok(ok)) {
        fprintf(stderr, "scale: %s\n", ncf_error_text());
        MPI_Finalize();
        return 1;
    }
    pos += 5 * (int64_t)c.batch_size, b0 = ncf_mpi_bytes_sent(m);
    for (w = 0; w < 7 && ok; w++) {
        double t0;
        MPI_Barrier(MPI_COMM_WORLD);
        t0 = MPI_Wtime();
        ok = ncf_mpi_train_examples(m, &s, 1, pos, steps * c.batch_size, MPI_COMM_WORLD, NULL, NULL, NULL) == NCF_OK;
        MPI_Barrier(MPI_COMM_WORLD);
        t[w] = (MPI_Wtime() - t0) / (double)steps, pos += steps * c.batch_size;
    }
    bytes = (ncf_mpi_bytes_sent(m) - b0) / (7 * steps);
    mem[0] = now_mb, mem[1] = peak_mb;
    MPI_Allreduce(MPI_IN_PLACE, &bytes, 1, MPI_INT64_T, MPI_MAX, MPI_COMM_WORLD);
    MPI_Allreduce(MPI_IN_PLACE, mem, 2, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    qsort(t, 7, sizeof(double), cmp_double);
    ok = all_ranks_ok(ok);
    if (g_rank == 0 && ok)
        printf("{\"case\":\"mpi_scale\",\"model\":\"%s\",\"users\":%d,\"items\":%d,\"positives\":%lld,"
               "\"ranks\":%d,\"threads_per_rank\":1,\"ms_per_step\":%.2f,\"ex_per_s\":%.0f,"
               "\"bytes_per_step\":%lld,\"rss_mb\":%.0f,\"peak_rss_mb\":%.0f}\n",
               shards ? "shards" : "replicated", d.num_users, d.num_items, (long long)d.shard.total_train, g_size,
               t[3] * 1e3, c.batch_size / t[3], (long long)bytes, mem[0], mem[1]);
    ncf_model_free(m), ncf_dataset_free(&d);
    MPI_Finalize();
    return ok ? 0 : 1;
}

/* After ncf_mpi_train_examples each rank's copy is current for its own users only: saving,
   serving and one-process evaluation refuse it, the ranks' evaluation works, and ncf_mpi_sync
   makes every copy the same again. */
static void test_mpi_sync(void)
{
    ncf_dataset w, s;
    ncf_sampler ss;
    ncf_config c;
    ncf_model *m = NULL;
    ncf_metrics met;
    ncf_eval_opts o = ncf_eval_opts_default();
    void *buf = NULL;
    size_t len = 0;
    float logit;
    uint64_t h, hmin, hmax;
    CHECK(mpi_data(&w, 0) && mpi_data(&s, 1));
    c = mpi_config(0, &w);
    CHECK(mpi_model(&m, &c, &w) && ncf_sampler_init(&ss, &s, 4, c.seed) == NCF_OK);
    CHECK(ncf_mpi_train_examples(m, &ss, 1, 0, 3000, MPI_COMM_WORLD, NULL, NULL, NULL) == NCF_OK);
    CHECK_ERR(ncf_save_mem(m, NCF_SAVE_ADAM, &buf, &len), NCF_ERR_ARG, "ncf_mpi_sync");
    CHECK_ERR(ncf_predict(m, w.raw_user[0], w.raw_item[0], &logit), NCF_ERR_ARG, "ncf_mpi_sync");
    CHECK_ERR(ncf_evaluate(m, &w, 10, NCF_SAMPLED, &met), NCF_ERR_ARG, "ncf_mpi_sync");
    CHECK(ncf_mpi_evaluate(m, &s, &o, MPI_COMM_WORLD, &met) == NCF_OK && met.users > 0);
    CHECK_ERR(ncf_mpi_evaluate(m, &w, &o, MPI_COMM_WORLD, &met), NCF_ERR_ARG, "ncf_mpi_sync");
    CHECK(ncf_mpi_sync(m, &s, MPI_COMM_WORLD) == NCF_OK);
    h = state_hash(m);
    MPI_Allreduce(&h, &hmin, 1, MPI_UINT64_T, MPI_MIN, MPI_COMM_WORLD);
    MPI_Allreduce(&h, &hmax, 1, MPI_UINT64_T, MPI_MAX, MPI_COMM_WORLD);
    CHECKF(hmin == hmax, "the ranks' models differ after ncf_mpi_sync");
    CHECK(ncf_save_mem(m, NCF_SAVE_ADAM, &buf, &len) == NCF_OK &&
          ncf_predict(m, w.raw_user[0], w.raw_item[0], &logit) == NCF_OK);
    ncf_free(buf);
    ncf_model_free(m);
    ncf_dataset_free(&w), ncf_dataset_free(&s);
}

/* The bytes of a file, or NULL. */
static char *mpi_file_bytes(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    char *b = NULL;
    long n;
    *len = 0;
    if (!f) return NULL;
    if (fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) >= 0 && fseek(f, 0, SEEK_SET) == 0 &&
        (b = (char *)malloc((size_t)n + 1)) && fread(b, 1, (size_t)n, f) == (size_t)n)
        *len = (size_t)n;
    else free(b), b = NULL;
    fclose(f);
    return b;
}

/* Whether two files hold the same bytes (rank 0 reads them; every rank learns the answer). */
static int mpi_same_files(const char *a, const char *b)
{
    int same = 1;
    if (g_rank == 0) {
        size_t la, lb;
        char *x = mpi_file_bytes(a, &la), *y = mpi_file_bytes(b, &lb);
        same = x && y && la == lb && !memcmp(x, y, la);
        free(x), free(y);
    }
    MPI_Bcast(&same, 1, MPI_INT, 0, MPI_COMM_WORLD);
    return same;
}

/* A model shard (each rank holds its users' rows only) trains to one rank's model bit for
   bit, made new (ncf_mpi_model_create) or from a whole model (ncf_mpi_shard_model): the file
   ncf_mpi_save writes is one process's, byte for byte; the ranks' evaluation of the shards is
   the whole model's; a file saved from 2 ranks' shards resumes as shards on P ranks; and a
   shard refuses what would read other users' rows. */
static void test_mpi_model_shards(void)
{
    ncf_dataset w, s;
    ncf_sampler smp;
    ncf_eval_opts o = ncf_eval_opts_default();
    int which, e, how;
    CHECK(mpi_data(&w, 0) && mpi_data(&s, 1));
    for (which = 0; which < 3; which++)
        for (how = 0; how < 4; how++) { /* new; a whole model sharded; (P > 2) 2 ranks' checkpoint resumed,
                                           read as shards or whole and sharded */
            ncf_config c = mpi_config(which, &w);
            ncf_model *m = NULL, *r = NULL;
            ncf_metrics a, b;
            char ref[600], mine[600], ckpt[600];
            snprintf(ref, sizeof ref, "%s/ref%d.ncf", g_mpi_dir, which);
            snprintf(mine, sizeof mine, "%s/shards%d_%d_p%d.ncf", g_mpi_dir, which, how, g_size);
            snprintf(ckpt, sizeof ckpt, "%s/shards%d_e1_p2.ncf", g_mpi_dir, which);
            if (how >= 2 && g_size <= 2) continue;
            if (how == 0) CHECKF(ncf_mpi_model_create(&m, &c, &w, MPI_COMM_WORLD) == NCF_OK, "%s", ncf_error_text());
            else if (how == 1)
                CHECKF(mpi_model(&m, &c, &w) && ncf_mpi_shard_model(m, &s, MPI_COMM_WORLD) == NCF_OK, "%s",
                       ncf_error_text());
            else if (how == 2) CHECKF(ncf_mpi_load(&m, ckpt, &s, MPI_COMM_WORLD) == NCF_OK, "%s", ncf_error_text());
            else
                CHECKF(ncf_load(&m, ckpt) == NCF_OK && ncf_mpi_shard_model(m, &w, MPI_COMM_WORLD) == NCF_OK, "%s",
                       ncf_error_text());
            if (!m) continue;
            CHECKF(m->cfg.num_users == (s.shard.user_hi > s.shard.user_lo ? s.shard.user_hi - s.shard.user_lo : 1),
                   "rank %d's shard holds %d users' rows, its users are [%d, %d)", g_rank, m->cfg.num_users,
                   s.shard.user_lo, s.shard.user_hi);
            CHECK(ncf_sampler_init(&smp, &s, c.num_neg, c.seed) == NCF_OK);
            CHECK(m->epoch == (how >= 2 ? 1 : 0));
            for (e = how >= 2 ? 2 : 1; e <= 2; e++) {
                CHECKF(ncf_mpi_train_epoch(m, &smp, e, MPI_COMM_WORLD, NULL, NULL, NULL) == NCF_OK, "%s",
                       ncf_error_text());
                if (e == 1 && how == 0 && g_size == 2)
                    CHECK(ncf_mpi_save(m, ckpt, NCF_SAVE_ADAM, MPI_COMM_WORLD) == NCF_OK);
            }
            CHECKF(ncf_mpi_save(m, mine, NCF_SAVE_ADAM, MPI_COMM_WORLD) == NCF_OK, "%s", ncf_error_text());
            CHECKF(mpi_same_files(mine, ref), "config %d (way %d): %d ranks' shards saved %s, not one rank's %s", which,
                   how, g_size, mine, ref);
            CHECK(ncf_load(&r, ref) == NCF_OK && ncf_evaluate_opts(r, &w, &o, &a) == NCF_OK);
            CHECKF(ncf_mpi_evaluate(m, &s, &o, MPI_COMM_WORLD, &b) == NCF_OK && a.hr == b.hr && a.ndcg == b.ndcg &&
                       a.mrr == b.mrr && a.users == b.users,
                   "config %d: the shards' HR %.17g NDCG %.17g, the whole model's %.17g %.17g", which, b.hr, b.ndcg,
                   a.hr, a.ndcg);
            if (which == 0 && how == 0) { /* what would read other users' rows refuses */
                void *buf = NULL;
                size_t len = 0;
                int32_t top[10];
                float logit;
                ncf_rec_opts ro = ncf_rec_opts_default();
                ncf_model *other = NULL;
                CHECK_ERR(ncf_save_mem(m, NCF_SAVE_ADAM, &buf, &len), NCF_ERR_ARG, "ncf_mpi_save");
                CHECK_ERR(ncf_evaluate_opts(m, &w, &o, &a), NCF_ERR_ARG, "ncf_mpi_save");
                CHECK_ERR(ncf_predict(m, w.raw_user[0], w.raw_item[0], &logit), NCF_ERR_ARG, "ncf_mpi_save");
                CHECK_ERR(ncf_recommend_index(m, 0, &ro, top, NULL), NCF_ERR_ARG, "ncf_mpi_save");
                CHECK_ERR(ncf_train_epoch(m, &smp, 3, NULL, NULL, NULL), NCF_ERR_ARG, "shard");
                CHECK_ERR(ncf_model_set_ids(m, &w), NCF_ERR_ARG, "shard");
                CHECK_ERR(ncf_mpi_evaluate(m, &w, &o, MPI_COMM_WORLD, &b), NCF_ERR_ARG, "");
                CHECK_ERR(ncf_mpi_save(m, mine, NCF_SAVE_INT8, MPI_COMM_WORLD), NCF_ERR_ARG, "NCF_SAVE_INT8");
                CHECK_ERR(ncf_mpi_shard_model(m, &s, MPI_COMM_WORLD), NCF_ERR_ARG, "a shard already");
                CHECK_ERR(ncf_mpi_model_create(&other, &c, &s, MPI_COMM_WORLD), NCF_ERR_ARG, "whole data");
                CHECK(other == NULL);
                CHECK(ncf_mpi_sync(m, &s, MPI_COMM_WORLD) == NCF_OK); /* (nothing to copy) */
            }
            ncf_model_free(r), ncf_model_free(m);
        }
    ncf_dataset_free(&w), ncf_dataset_free(&s);
}

/* Out of memory on the last rank at each allocation of ncf_mpi_model_create,
   ncf_mpi_shard_model and ncf_mpi_save in turn: every rank gets the error, nothing leaks, the
   whole model stays whole and the file already at the path stays; then each call succeeds. */
static void test_mpi_shards_out_of_memory(void)
{
    ncf_dataset w, s;
    ncf_config c;
    ncf_model *shard = NULL;
    char path[600];
    int which, k, failed = 1;
    CHECK(mpi_data(&w, 0) && mpi_data(&s, 1));
    c = mpi_config(0, &w);
    snprintf(path, sizeof path, "%s/oom_p%d.ncf", g_mpi_dir, g_size);
    if (g_rank == 0) {
        FILE *f = fopen(path, "wb");
        CHECK(f && fputs("kept", f) >= 0 && fclose(f) == 0);
    }
    for (which = 0; which < 4; which++)
        for (k = 0, failed = 1; failed && k < 500; k++) {
            ncf_model *x = NULL;
            uint64_t h = 0;
            int rc, bad;
            if (which == 1) {
                CHECK(mpi_model(&x, &c, &w));
                h = x ? state_hash(x) : 0;
            }
            g_alloc_count = 0, g_alloc_fail_at = g_rank == g_size - 1 ? k : -1;
            rc = which == 0  ? ncf_mpi_model_create(&x, &c, &w, MPI_COMM_WORLD)
                : which == 1 ? ncf_mpi_shard_model(x, &s, MPI_COMM_WORLD)
                : which == 2 ? ncf_mpi_save(shard, path, NCF_SAVE_ADAM, MPI_COMM_WORLD)
                             : ncf_mpi_load(&x, path, &s, MPI_COMM_WORLD);
            g_alloc_fail_at = -1, bad = rc != NCF_OK;
            failed = mpi_world_max(bad);
            CHECKF(failed + mpi_world_max(!bad) == 1, "call %d, allocation %d: the ranks' status differs", which, k);
            if (failed && (which == 0 || which == 3)) CHECK(x == NULL);
            if (!failed && which == 3) CHECK(x && state_hash(x) == state_hash(shard));
            if (failed && which == 1) CHECK(x && x->cfg.num_users == w.num_users && state_hash(x) == h);
            if (failed && which == 2 && g_rank == 0) {
                size_t len;
                char *b = mpi_file_bytes(path, &len);
                CHECKF(b && len == 4 && !memcmp(b, "kept", 4), "a failed save changed %s", path);
                free(b);
            }
            if (which == 0 && !failed) shard = x, x = NULL;
            ncf_model_free(x);
        }
    CHECKF(!failed && k > 1, "the calls never succeeded, or never failed (%d tries)", k);
    { /* a file that is not there, is damaged, or is int8: every rank's error */
        ncf_model *x = NULL, *y = NULL;
        char bad[600];
        snprintf(bad, sizeof bad, "%s/oom_bad_p%d.ncf", g_mpi_dir, g_size);
        if (g_rank == 0) remove(bad); /* (a run before on as many ranks left one) */
        MPI_Barrier(MPI_COMM_WORLD);
        CHECK_ERR(ncf_mpi_load(&x, bad, &s, MPI_COMM_WORLD), NCF_ERR_IO, "cannot open");
        if (g_rank == 0) {
            size_t len;
            char *b = mpi_file_bytes(path, &len);
            FILE *f = fopen(bad, "wb");
            CHECK(b && f && len > 1000);
            if (b && f) {
                b[len / 2] ^= 1;
                CHECK(fwrite(b, 1, len, f) == len);
            }
            if (f) fclose(f);
            free(b);
        }
        MPI_Barrier(MPI_COMM_WORLD);
        CHECK_ERR(ncf_mpi_load(&x, bad, &s, MPI_COMM_WORLD), NCF_ERR_PARSE, "CRC");
        if (g_rank == 0) CHECK(ncf_load(&y, path) == NCF_OK && ncf_save(y, bad, NCF_SAVE_INT8) == NCF_OK);
        MPI_Barrier(MPI_COMM_WORLD);
        CHECK_ERR(ncf_mpi_load(&x, bad, &s, MPI_COMM_WORLD), NCF_ERR_ARG, "int8");
        CHECK(x == NULL);
        ncf_model_free(y);
    }
    ncf_model_free(shard);
    ncf_dataset_free(&w), ncf_dataset_free(&s);
}

/* A user with a third of the positives: the groups its positives span start at the next user,
   so some ranks have no users (on 16 ranks, five). Their shards keep one idle row, send
   nothing as the file is written, and the model is still one rank's bit for bit. */
static void test_mpi_shards_with_idle_ranks(void)
{
    ncf_dataset w, s;
    ncf_sampler smp;
    ncf_load_opts lo = ncf_load_opts_default();
    ncf_config c;
    ncf_model *m = NULL, *r = NULL;
    ncf_eval_opts o = ncf_eval_opts_default();
    ncf_metrics a, b;
    char *text = (char *)malloc(64 * 1024), path[600], ref[600];
    int u, i, n = 0, idle, k;
    for (i = 0; i < 150; i++) n += snprintf(text + n, 32, "1,%d,5,%d\n", i + 1, i);
    for (u = 2; u <= 60; u++)
        for (i = 0; i < 6; i++) n += snprintf(text + n, 32, "%d,%d,5,%d\n", u, (u * 7 + i * 13) % 200 + 1, i);
    lo.eval_negatives = 20, lo.validation = 1;
    for (k = 0; k < 2; k++)
        CHECKF(ncf_load_dataset_mem(k ? &s : &w, "heavy.csv", text, (size_t)n, &lo) == NCF_OK, "%s", ncf_error_text());
    CHECK(ncf_mpi_shard(&s, MPI_COMM_WORLD) == NCF_OK);
    idle = mpi_world_max(s.shard.user_hi == s.shard.user_lo);
    CHECK(g_size < 16 || idle); /* (the case this test is for) */
    c = mpi_config(0, &w);
    snprintf(ref, sizeof ref, "%s/heavy_ref.ncf", g_mpi_dir);
    snprintf(path, sizeof path, "%s/heavy_p%d.ncf", g_mpi_dir, g_size);
    CHECKF(ncf_mpi_model_create(&m, &c, &w, MPI_COMM_WORLD) == NCF_OK, "%s", ncf_error_text());
    CHECK(m && ncf_sampler_init(&smp, &s, c.num_neg, c.seed) == NCF_OK);
    for (k = 1; m && k <= 2; k++) CHECK(ncf_mpi_train_epoch(m, &smp, k, MPI_COMM_WORLD, NULL, NULL, NULL) == NCF_OK);
    CHECKF(ncf_mpi_save(m, g_size == 1 ? ref : path, NCF_SAVE_ADAM, MPI_COMM_WORLD) == NCF_OK, "%s", ncf_error_text());
    if (g_size > 1)
        CHECKF(mpi_same_files(path, ref), "%d ranks (some idle) saved %s, not one rank's %s", g_size, path, ref);
    ncf_model_free(m), m = NULL;
    CHECKF(ncf_mpi_load(&m, ref, &s, MPI_COMM_WORLD) == NCF_OK, "%s", ncf_error_text());
    CHECK(ncf_load(&r, ref) == NCF_OK && ncf_evaluate_opts(r, &w, &o, &a) == NCF_OK);
    CHECK(m && ncf_mpi_evaluate(m, &s, &o, MPI_COMM_WORLD, &b) == NCF_OK && a.hr == b.hr && a.ndcg == b.ndcg &&
          a.users == b.users);
    ncf_model_free(m), ncf_model_free(r);
    free(text);
    ncf_dataset_free(&w), ncf_dataset_free(&s);
}

static const test_case MPI_TESTS[] = {
    {"mpi_shard_counts", test_mpi_shard_counts},
    {"mpi_batches_sum", test_mpi_batches_sum},
    {"mpi_same_model_any_ranks", test_mpi_same_model_any_ranks},
    {"mpi_same_weighted_model_any_ranks", test_mpi_same_weighted_model_any_ranks},
    {"mpi_close_to_one_process", test_mpi_close_to_one_process},
    {"mpi_evaluation_exact", test_mpi_evaluation_exact},
    {"mpi_errors_agree", test_mpi_errors_agree},
    {"mpi_sync", test_mpi_sync},
    {"mpi_model_shards", test_mpi_model_shards},
    {"mpi_shards_out_of_memory", test_mpi_shards_out_of_memory},
    {"mpi_shards_with_idle_ranks", test_mpi_shards_with_idle_ranks},
};

static int mpi_tests(const char *dir)
{
    int i, passed = 0, failed = 0, provided;
    MPI_Init_thread(NULL, NULL, MPI_THREAD_FUNNELED, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &g_rank), MPI_Comm_size(MPI_COMM_WORLD, &g_size);
    g_mpi_dir = dir;
    if (g_rank == 0)
        printf("ncf.h %s MPI tests, %d ranks, %d threads each\n", ncf_version(), g_size, ncf_get_threads());
    for (i = 0; i < (int)(sizeof MPI_TESTS / sizeof *MPI_TESTS); i++) {
        int before = g_failed_checks, bad;
        long live = g_alloc_live;
        if (g_rank == 0) printf("%s\n", MPI_TESTS[i].name), fflush(stdout);
        MPI_TESTS[i].fn();
        CHECKF(g_alloc_live == live, "%ld blocks the library allocated were not freed", g_alloc_live - live);
        bad = mpi_world_max(g_failed_checks != before);
        if (g_rank == 0) printf(bad ? "  FAILED\n" : "  ok\n"), fflush(stdout);
        if (bad) failed++;
        else passed++;
    }
    if (g_rank == 0) printf("%d passed, %d failed\n", passed, failed);
    MPI_Finalize();
    return failed ? 1 : 0;
}

int main(int argc, char **argv)
{
    if (argc == 3 && !strcmp(argv[1], "--tests")) return mpi_tests(argv[2]);
    if (argc == 2 && !strcmp(argv[1], "--bench")) return mpi_bench();
    if (argc == 5 && !strcmp(argv[1], "--scale") && (!strcmp(argv[2], "shards") || !strcmp(argv[2], "replicated")) &&
        atoi(argv[3]) > 0 && atoi(argv[4]) > 0)
        return mpi_scale(!strcmp(argv[2], "shards"), atoi(argv[3]), atoi(argv[4]));
    fprintf(stderr, "usage: mpirun -np P %s --tests DIR | --bench | --scale shards|replicated X Y\n", argv[0]);
    return 2;
}
