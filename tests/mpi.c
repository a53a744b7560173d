/* tests/mpi.c - the MPI suite (make test-mpi) and its benchmark (make bench-mpi), built with
   mpicc -DNCF_MPI:  mpirun -np P tests_mpi --tests DIR  |  mpirun -np 2 tests_mpi --bench  |
   mpirun -np P tests_mpi --scale shards|replicated X Y [LOG [whole]]  |  tests_mpi --write-log X Y LOG */
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
    for (b = 0; b < 8 && ok; b++) { /* each order: the examples shuffled, then by positive */
        sw.by_positive = ss.by_positive = b >= 4;
        int64_t start = b % 4 < 3 ? b % 4 * 5003 : sw.num_examples - 300;
        int n = b % 4 < 3 ? 512 : 300;
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
   Adam and L2, an MLP with SGD, L2 on its embeddings and a batch that does not split evenly;
   and the first again on an epoch shuffled by positive (mpi_by_positive). */
static ncf_config mpi_config(int which, const ncf_dataset *d)
{
    ncf_config c = ncf_config_default();
    c.num_users = d->num_users, c.num_items = d->num_items, c.batch_size = 512, c.seed = 11;
    if (which == 0 || which == 3) c.mlp_reg[1] = 1e-4f, c.mf_reg = 1e-5f;
    if (which == 1) c.model = NCF_MF, c.mf_dim = 16, c.mf_reg = 0.003f, c.adam = NCF_ADAM_DENSE, c.batch_size = 256;
    if (which == 2) {
        c.model = NCF_MLP, c.optimizer = NCF_OPT_SGD, c.lr = 0.05f, c.mlp_reg[0] = 1e-4f, c.batch_size = 300;
        c.num_layers = 3, c.layers[0] = 32, c.layers[1] = 16, c.layers[2] = 8;
    }
    return c;
}

#define MPI_CONFIGS 4
static int mpi_by_positive(int which) { return which == 3; }

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
    for (which = 0; which < MPI_CONFIGS; which++) {
        ncf_config c = mpi_config(which, &w);
        ncf_model *m = NULL;
        char ref[600], ckpt[600];
        uint64_t h, hmin, hmax;
        double loss[2] = {0, 0};
        snprintf(ref, sizeof ref, "%s/ref%s%d.ncf", g_mpi_dir, g_weighted ? "w" : "", which);
        snprintf(ckpt, sizeof ckpt, "%s/ckpt%s%d_e1_p2.ncf", g_mpi_dir, g_weighted ? "w" : "", which);
        CHECK(mpi_model(&m, &c, &w) && ncf_sampler_init(&smp, &s, c.num_neg, c.seed) == NCF_OK);
        smp.by_positive = mpi_by_positive(which);
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
            CHECK(evaluate_k(a, &w, 10, NCF_SAMPLED, &ma) == NCF_OK &&
                  evaluate_k(b, &w, 10, NCF_SAMPLED, &mb) == NCF_OK);
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
            CHECK(ncf_evaluate(m, &w, &o, &one) == NCF_OK);
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

/* A failure on one rank is every rank's failure, with its message, and no rank left waiting. */
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
    /* the last rank alone passes a bad model, then bad options: every rank gets its message */
    CHECK_ERR(ncf_mpi_train_epoch(g_rank == g_size - 1 ? NULL : m, &ss, 1, MPI_COMM_WORLD, NULL, NULL, NULL),
              NCF_ERR_ARG, "NULL model");
    o.k = g_rank == g_size - 1 ? 0 : 10;
    CHECK_ERR(ncf_mpi_evaluate(m, &s, &o, MPI_COMM_WORLD, &met), NCF_ERR_ARG, "k > 0");
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
                b0 = ncf__mpi_bytes_sent(m);
                ok = ncf_mpi_train_examples(m, &s, 1, pos[0], n, MPI_COMM_WORLD, NULL, NULL, NULL) == NCF_OK;
                if (round >= 0) bytes += ncf__mpi_bytes_sent(m) - b0;
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
static int mpi_scale_data(ncf_dataset *d, int xu, int xi)
{
    return ncf_synthetic(d, 138493 * xu, 26744 * xi, (int64_t)20000263 * xu * (xi > 8 ? xi / 8 : 1), 16, 1) == NCF_OK;
}

/* tests_mpi --write-log X Y PATH: the scale's synthetic positives (training and test items) as
   a TAB-separated log, "user item" a line, in a scattered order (a log is not sorted by user). */
static int mpi_write_scale_log(int xu, int xi, const char *path)
{
    ncf_dataset d;
    FILE *f;
    int64_t n, j, k, stride = 1000003; /* (a prime: steps through every line once) */
    if (!mpi_scale_data(&d, xu, xi) || !(f = fopen(path, "w"))) return 1;
    n = d.num_train + d.num_users;
    while (n % stride == 0) stride += 2;
    for (j = 0, k = 0; j < n; j++, k = (k + stride) % n) {
        int u = k < d.num_train ? d.train_user[k] : (int)(k - d.num_train);
        int i = k < d.num_train ? d.items[k] : d.test_item[u];
        if (i >= 0) fprintf(f, "%d\t%d\n", u, i);
    }
    ncf_dataset_free(&d);
    return fclose(f) == 0 ? 0 : 1;
}

static int mpi_scale(int shards, int xu, int xi, const char *log, int whole)
{
    ncf_config c = ncf_config_mlperf();
    ncf_dataset d;
    ncf_sampler s;
    ncf_model *m = NULL;
    double t[7], now_mb, peak_mb, mem[2], load = MPI_Wtime();
    int64_t pos = 0, b0, bytes, steps = 20;
    int provided, w, ok;
    MPI_Init_thread(NULL, NULL, MPI_THREAD_FUNNELED, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &g_rank), MPI_Comm_size(MPI_COMM_WORLD, &g_size);
    ncf_set_threads(1);
    load = MPI_Wtime();
    if (log) { /* each rank reads its share of the log, or (whole) all of it */
        ncf_dataset_opts lo = ncf_dataset_opts_default();
        ok = whole ? ncf_load_dataset(&d, log, &lo) == NCF_OK
                   : ncf_mpi_load_dataset(&d, log, &lo, MPI_COMM_WORLD) == NCF_OK;
        if (whole) log = NULL; /* (sharded below, as synthetic data) */
    } else ok = mpi_scale_data(&d, xu, xi);
    load = MPI_Wtime() - load;
    c.num_users = d.num_users, c.num_items = d.num_items;
    ok = ok && (shards ? ncf_mpi_model_create(&m, &c, &d, MPI_COMM_WORLD) : ncf_model_create(&m, &c)) == NCF_OK &&
        (log || ncf_mpi_shard(&d, MPI_COMM_WORLD) == NCF_OK) && ncf_sampler_init(&s, &d, c.num_neg, c.seed) == NCF_OK &&
        ncf_mpi_train_examples(m, &s, 1, pos, 5 * (int64_t)c.batch_size, MPI_COMM_WORLD, NULL, NULL, NULL) == NCF_OK;
    mpi_memory(&now_mb, &peak_mb);
    if (!all_ranks_ok(ok)) {
        fprintf(stderr, "scale: %s\n", ncf_error_text());
        MPI_Finalize();
        return 1;
    }
    pos += 5 * (int64_t)c.batch_size, b0 = ncf__mpi_bytes_sent(m);
    for (w = 0; w < 7 && ok; w++) {
        double t0;
        MPI_Barrier(MPI_COMM_WORLD);
        t0 = MPI_Wtime();
        ok = ncf_mpi_train_examples(m, &s, 1, pos, steps * c.batch_size, MPI_COMM_WORLD, NULL, NULL, NULL) == NCF_OK;
        MPI_Barrier(MPI_COMM_WORLD);
        t[w] = (MPI_Wtime() - t0) / (double)steps, pos += steps * c.batch_size;
    }
    bytes = (ncf__mpi_bytes_sent(m) - b0) / (7 * steps);
    mem[0] = now_mb, mem[1] = peak_mb;
    MPI_Allreduce(MPI_IN_PLACE, &bytes, 1, MPI_INT64_T, MPI_MAX, MPI_COMM_WORLD);
    MPI_Allreduce(MPI_IN_PLACE, mem, 2, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    qsort(t, 7, sizeof(double), cmp_double);
    ok = all_ranks_ok(ok);
    if (g_rank == 0 && ok)
        printf("{\"case\":\"mpi_scale\",\"model\":\"%s\",\"users\":%d,\"items\":%d,\"positives\":%lld,"
               "\"ranks\":%d,\"threads_per_rank\":1,\"ms_per_step\":%.2f,\"ex_per_s\":%.0f,"
               "\"bytes_per_step\":%lld,\"rss_mb\":%.0f,\"peak_rss_mb\":%.0f,\"data\":\"%s\",\"data_s\":%.1f}\n",
               shards ? "shards" : "replicated", d.num_users, d.num_items, (long long)d.shard.total_train, g_size,
               t[3] * 1e3, c.batch_size / t[3], (long long)bytes, mem[0], mem[1],
               whole     ? "ncf_load_dataset"
                   : log ? "ncf_mpi_load_dataset"
                         : "ncf_synthetic",
               load);
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
    CHECK_ERR(evaluate_k(m, &w, 10, NCF_SAMPLED, &met), NCF_ERR_ARG, "ncf_mpi_sync");
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
    for (which = 0; which < MPI_CONFIGS; which++)
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
            smp.by_positive = mpi_by_positive(which);
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
            CHECK(ncf_load(&r, ref) == NCF_OK && ncf_evaluate(r, &w, &o, &a) == NCF_OK);
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
                CHECK_ERR(ncf_evaluate(m, &w, &o, &a), NCF_ERR_ARG, "ncf_mpi_save");
                CHECK_ERR(ncf_predict(m, w.raw_user[0], w.raw_item[0], &logit), NCF_ERR_ARG, "ncf_mpi_save");
                CHECK_ERR(ncf_recommend_index(m, 0, &ro, top, NULL), NCF_ERR_ARG, "ncf_mpi_save");
                CHECK_ERR(ncf_train_epoch(m, &smp, 3, NULL, NULL, NULL), NCF_ERR_ARG, "shard");
                CHECK_ERR(ncf_model_set_ids(m, &w), NCF_ERR_ARG, "shard");
                CHECK_ERR(ncf_mpi_evaluate(m, &w, &o, MPI_COMM_WORLD, &b), NCF_ERR_ARG, "");
                CHECK_ERR(ncf_mpi_save(m, mine, NCF_SAVE_INT8, MPI_COMM_WORLD), NCF_ERR_ARG, "NCF_SAVE_INT8");
                CHECK_ERR(ncf_mpi_shard_model(m, &s, MPI_COMM_WORLD), NCF_ERR_ARG, "a shard already");
                CHECK(ncf_mpi_model_create(&other, &c, &s, MPI_COMM_WORLD) == NCF_OK); /* (from a shard) */
                CHECK(other && other->rated_ptr && m->rated_ptr &&
                      !memcmp(other->rated_ptr, m->rated_ptr, sizeof(int64_t) * ((size_t)w.num_users + 1)) &&
                      !memcmp(other->rated, m->rated, (size_t)m->rated_ptr[w.num_users]));
                ncf_model_free(other);
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
    ncf_dataset_opts lo = ncf_dataset_opts_default();
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
    CHECK(ncf_load(&r, ref) == NCF_OK && ncf_evaluate(r, &w, &o, &a) == NCF_OK);
    CHECK(m && ncf_mpi_evaluate(m, &s, &o, MPI_COMM_WORLD, &b) == NCF_OK && a.hr == b.hr && a.ndcg == b.ndcg &&
          a.users == b.users);
    ncf_model_free(m), ncf_model_free(r);
    free(text);
    ncf_dataset_free(&w), ncf_dataset_free(&s);
}

/* ------------------------------------------------- the distributed loader */
/* Rank 0 writes a log of n lines by `users` users in one of four dialects; every rank then waits for it. kind 0:
   TAB, integer ids, ratings and timestamps (ties), repeated pairs; 1: CSV with a BOM, a header,
   CRLF, text ids (quoted, with commas and blanks), a play-count column; 2: ';' without
   timestamps; 3: CR line ends, one user who rated every item. */
static void mpi_write_log(const char *path, int kind, int n, int users)
{
    FILE *f;
    uint64_t x = 12345 + (uint64_t)kind;
    int j;
    if (g_rank == 0 && (f = fopen(path, "wb")) != NULL) {
        const char *eol = kind == 1 ? "\r\n" : kind == 3 ? "\r" : "\n";
        if (kind == 1) fprintf(f, "\xEF\xBB\xBFuser,item,rating,timestamp,plays%s", eol);
        for (j = 0; j < n; j++) {
            int u, i, r;
            x = x * 6364136223846793005ull + 1442695040888963407ull;
            u = (int)((x >> 33) % (uint64_t)users), i = (int)((x >> 17) % 97 * ((x >> 40) % 3 + 1) % 150),
            r = (int)(x % 5) + 1;
            if (kind == 3 && j < 150) u = 7, i = j; /* user 7 rates every item */
            if (kind == 0) fprintf(f, "%d\t%d\t%d\t%d%s", u * 3 + 1, i + 10, r, 1000 + j / 3, eol);
            else if (kind == 1)
                fprintf(f, "u%d,\"it,%d\",%d,%d,%d%s", u, i, r, 5000 - j % 977, (int)(x >> 50) % 40, eol);
            else if (kind == 2) fprintf(f, "%d;%d;%d%s", u, i, r, eol);
            else fprintf(f, "%d %d %d %d%s", u + 100000, i, r, j, eol);
        }
        if (kind == 1) fprintf(f, "\" u 5 \",\"it,1\",4,4000,3%s", eol);
        fclose(f);
    }
    MPI_Barrier(MPI_COMM_WORLD);
}

#define SAME(a, b, n) ((n) == 0 || ((a) && (b) && !memcmp((a), (b), (n))))

/* Whether two shards are the same, field for field: what ncf_mpi_shard and the loader give. */
static int mpi_same_shard(const ncf_dataset *a, const ncf_dataset *b, const char **what)
{
    int U = a->num_users, u, lo = a->shard.user_lo, hi = a->shard.user_hi;
    size_t t = sizeof(int32_t) * (size_t)a->num_train;
    *what = "sizes";
    if (U != b->num_users || a->num_items != b->num_items || a->num_train != b->num_train) return 0;
    *what = "shard";
    if (memcmp(&a->shard.user_lo, &b->shard.user_lo, 2 * sizeof(int)) || a->shard.train_lo != b->shard.train_lo ||
        a->shard.total_train != b->shard.total_train ||
        !SAME(a->shard.groups, b->shard.groups, sizeof(int) * (NCF_MPI_GROUPS + 1)))
        return 0;
    *what = "positives";
    if (!SAME(a->user_ptr, b->user_ptr, sizeof(int64_t) * (size_t)(U + 1)) || !SAME(a->items, b->items, t) ||
        !SAME(a->train_user, b->train_user, t) || !a->weight != !b->weight ||
        (a->weight && !SAME(a->weight, b->weight, t)))
        return 0;
    *what = "held-out items";
    if (!SAME(a->test_item, b->test_item, sizeof(int32_t) * (size_t)U) || !a->val_item != !b->val_item ||
        (a->val_item && !SAME(a->val_item, b->val_item, sizeof(int32_t) * (size_t)U)) ||
        !a->val_weight != !b->val_weight ||
        (a->val_weight && !SAME(a->val_weight, b->val_weight, sizeof(float) * (size_t)U)) ||
        !a->recent_item != !b->recent_item ||
        (a->recent_item && !SAME(a->recent_item, b->recent_item, sizeof(int32_t) * (size_t)U)))
        return 0;
    *what = "negatives";
    if (a->num_eval_neg != b->num_eval_neg || a->num_val_neg != b->num_val_neg) return 0;
    for (u = lo; u < hi; u++)
        if ((a->test_item[u] >= 0 &&
             !SAME(a->eval_neg + (size_t)(u - lo) * a->num_eval_neg, b->eval_neg + (size_t)(u - lo) * a->num_eval_neg,
                   sizeof(int32_t) * (size_t)a->num_eval_neg)) ||
            (a->val_item && a->val_item[u] >= 0 &&
             !SAME(a->val_neg + (size_t)(u - lo) * a->num_val_neg, b->val_neg + (size_t)(u - lo) * a->num_val_neg,
                   sizeof(int32_t) * (size_t)a->num_val_neg)))
            return 0;
    *what = "ids";
    if (!a->raw_user != !b->raw_user || !a->raw_item != !b->raw_item ||
        (a->raw_user && !SAME(a->raw_user, b->raw_user, sizeof(int64_t) * (size_t)U)) ||
        (a->raw_item && !SAME(a->raw_item, b->raw_item, sizeof(int64_t) * (size_t)a->num_items)) ||
        !a->user_text != !b->user_text || !a->item_text != !b->item_text)
        return 0;
    if (a->user_text &&
        (!SAME(a->user_text_at, b->user_text_at, sizeof(int64_t) * (size_t)(U + 1)) ||
         !SAME(a->user_text, b->user_text, (size_t)a->user_text_at[U])))
        return 0;
    if (a->item_text &&
        (!SAME(a->item_text_at, b->item_text_at, sizeof(int64_t) * (size_t)(a->num_items + 1)) ||
         !SAME(a->item_text, b->item_text, (size_t)a->item_text_at[a->num_items])))
        return 0;
    *what = "report";
    return !memcmp(&a->report, &b->report, sizeof a->report);
}

/* ncf_mpi_load_dataset gives, on any number of ranks, what ncf_load_dataset and ncf_mpi_shard
   give, field for field; the ranks' shards hold every positive once. */
static void test_mpi_load_dataset(void)
{
    static const int lines[4] = {9000, 7000, 5000, 6000};
    char path[600];
    int kind, v;
    for (kind = 0; kind < 4; kind++)
        for (v = 0; v < 2; v++) {
            ncf_dataset_opts o = ncf_dataset_opts_default();
            ncf_dataset w, s;
            const char *what = "";
            int64_t total = 0;
            snprintf(path, sizeof path, "%s/log%d.txt", g_mpi_dir, kind);
            if (v == 0) mpi_write_log(path, kind, lines[kind], 300);
            o.validation = v, o.eval_negatives = 20 + 7 * v, o.seed = 5 + (uint64_t)v;
            if (kind == 0) o.min_rating = 3, o.min_ratings = v ? 4 : 0;
            if (kind == 1) o.weighting = v ? NCF_WEIGHT_LOG : NCF_WEIGHT_LINEAR, o.alpha = 0.5f, o.columns[4] = "plays";
            if (kind == 1) o.min_item_ratings = 3, o.kcore = v, o.min_ratings = 2;
            if (kind == 2) o.holdout = v ? NCF_HOLDOUT_RANDOM : NCF_HOLDOUT_LATEST;
            if (kind == 3) o.min_item_ratings = v ? 5 : 0;
            CHECKF(ncf_load_dataset(&w, path, &o) == NCF_OK && ncf_mpi_shard(&w, MPI_COMM_WORLD) == NCF_OK,
                   "kind %d: %s", kind, ncf_error_text());
            CHECKF(ncf_mpi_load_dataset(&s, path, &o, MPI_COMM_WORLD) == NCF_OK, "kind %d: %s", kind, ncf_error_text());
            CHECKF(mpi_same_shard(&w, &s, &what), "log %d, validation %d: the %s differ", kind, v, what);
            MPI_Allreduce(&s.num_train, &total, 1, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
            CHECK(total == s.shard.total_train && total > lines[kind] / 3);
            CHECK(kind != 3 || s.report.users_every_item == 1);
            CHECK(kind != 1 || (s.user_text && s.item_text && s.report.blank_edged_ids[0] == 0));
            ncf_dataset_free(&w), ncf_dataset_free(&s);
        }
}

/* The loader's failures are every rank's, with one message: a bad line names the file and line
   one process names; a missing file, a split in files; a quoted field holding a line end where
   a rank's range begins; and each allocation failing on the last rank in turn, which leaks
   nothing and leaves the dataset empty. */
static void test_mpi_load_dataset_errors(void)
{
    ncf_dataset_opts o = ncf_dataset_opts_default();
    ncf_dataset w, s;
    char path[600], one[4608];
    const char *what = "";
    int k, n, failed = 0, rc;
    snprintf(path, sizeof path, "%s/bad.txt", g_mpi_dir);
    if (g_rank == 0) {
        FILE *f = fopen(path, "wb");
        for (k = 0; f && k < 4000; k++) fprintf(f, "%d\t%d\t%s\n", k % 97, k % 31, k == 2777 ? "x" : "4");
        if (f) fclose(f);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    CHECK(ncf_load_dataset(&w, path, &o) == NCF_ERR_PARSE);
    snprintf(one, sizeof one, "%s", ncf_error_text());
    CHECK(strstr(one, ":2778: rating 'x'") != NULL);
    rc = ncf_mpi_load_dataset(&s, path, &o, MPI_COMM_WORLD);
    CHECKF(rc == NCF_ERR_PARSE && !strcmp(ncf_error_text(), one), "'%s', one process: '%s'", ncf_error_text(), one);
    CHECK(s.num_users == 0 && s.user_ptr == NULL);
    snprintf(path, sizeof path, "%s/missing.txt", g_mpi_dir);
    CHECK_ERR(ncf_mpi_load_dataset(&s, path, &o, MPI_COMM_WORLD), NCF_ERR_IO, "cannot open");
    snprintf(path, sizeof path, "%s/x.train.rating", g_mpi_dir);
    CHECK_ERR(ncf_mpi_load_dataset(&s, path, &o, MPI_COMM_WORLD), NCF_ERR_ARG, "ncf_load_dataset");
    snprintf(path, sizeof path, "%s/log0.txt", g_mpi_dir);
    o.holdout = NCF_HOLDOUT_RATIO, o.holdout_fraction = 0.2f;
    CHECK_ERR(ncf_mpi_load_dataset(&s, path, &o, MPI_COMM_WORLD), NCF_ERR_ARG, "one process");
    /* every record spans two lines: on more ranks than one, a range may begin inside one */
    o = ncf_dataset_opts_default();
    snprintf(path, sizeof path, "%s/quoted.csv", g_mpi_dir);
    if (g_rank == 0) {
        FILE *f = fopen(path, "wb");
        for (k = 0; f && k < 3000; k++) fprintf(f, "%d,\"i\n%d\",5\n", k % 89, k % 211);
        if (f) fclose(f);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    CHECK(ncf_load_dataset(&w, path, &o) == NCF_OK && ncf_mpi_shard(&w, MPI_COMM_WORLD) == NCF_OK);
    rc = ncf_mpi_load_dataset(&s, path, &o, MPI_COMM_WORLD);
    CHECK(all_ranks_ok(rc == NCF_OK) || mpi_world_max(rc == NCF_OK) == 0);
    if (rc == NCF_OK) CHECKF(mpi_same_shard(&w, &s, &what), "the %s differ", what);
    else CHECKF(g_size > 1 && strstr(ncf_error_text(), "quote"), "%s", ncf_error_text());
    ncf_dataset_free(&w), ncf_dataset_free(&s);
    /* out of memory, at each allocation in turn */
    snprintf(path, sizeof path, "%s/oom.txt", g_mpi_dir);
    mpi_write_log(path, 1, 1500, 40);
    o.validation = 1, o.weighting = NCF_WEIGHT_LOG, o.columns[4] = "plays", o.min_item_ratings = 3, o.kcore = 1;
    o.eval_negatives = 20;
    CHECK(ncf_load_dataset(&w, path, &o) == NCF_OK && ncf_mpi_shard(&w, MPI_COMM_WORLD) == NCF_OK);
    g_alloc_count = 0, g_alloc_fail_at = 1L << 40; /* (counts, fails none) */
    CHECK(ncf_mpi_load_dataset(&s, path, &o, MPI_COMM_WORLD) == NCF_OK);
    n = (int)g_alloc_count, g_alloc_fail_at = -1;
    MPI_Bcast(&n, 1, MPI_INT, g_size - 1, MPI_COMM_WORLD); /* (the last rank's allocations are failed) */
    ncf_dataset_free(&s);
    for (k = 0; k < n; k++) { /* (a few allocations are optional: a sort's scratch, a shrink) */
        int bad;
        g_alloc_count = 0, g_alloc_fail_at = g_rank == g_size - 1 ? k : -1;
        rc = ncf_mpi_load_dataset(&s, path, &o, MPI_COMM_WORLD);
        g_alloc_fail_at = -1, bad = rc != NCF_OK;
        failed += mpi_world_max(bad);
        CHECKF(mpi_world_max(bad) + mpi_world_max(!bad) == 1, "allocation %d: the ranks' status differs", k);
        if (bad) CHECKF(s.user_ptr == NULL && s.items == NULL && s.raw_user == NULL, "allocation %d", k);
        else CHECKF(mpi_same_shard(&w, &s, &what), "allocation %d spared: the %s differ", k, what);
        ncf_dataset_free(&s);
    }
    CHECKF(failed > 60, "%d of %d allocations failed the load", failed, n);
    ncf_dataset_free(&w), ncf_dataset_free(&s);
}

/* A model trained on the loader's shards is the one trained on one process's load, bit for bit,
   on any number of ranks: the same file as 1 rank writes, and the same figures; 2 ranks'
   epoch-1 file, resumed on more, trains to it too. */
static void test_mpi_load_dataset_trains_same_model(void)
{
    ncf_dataset_opts lo = ncf_dataset_opts_default();
    ncf_dataset w, s1, s2;
    ncf_sampler a, b;
    ncf_model *m1 = NULL, *m2 = NULL, *r = NULL;
    ncf_eval_opts eo = ncf_eval_opts_default();
    ncf_metrics x, y;
    ncf_config c;
    char path[600], f1[600], f2[600], ref[600], ckpt[600];
    int e;
    snprintf(path, sizeof path, "%s/train.txt", g_mpi_dir);
    snprintf(f1, sizeof f1, "%s/loaded_whole_p%d.ncf", g_mpi_dir, g_size);
    snprintf(f2, sizeof f2, "%s/loaded_ranks_p%d.ncf", g_mpi_dir, g_size);
    snprintf(ref, sizeof ref, "%s/loaded_ranks_p1.ncf", g_mpi_dir);
    snprintf(ckpt, sizeof ckpt, "%s/loaded_e1_p2.ncf", g_mpi_dir);
    mpi_write_log(path, 1, 8000, 250);
    lo.validation = 1, lo.eval_negatives = 30, lo.weighting = NCF_WEIGHT_LOG, lo.columns[4] = "plays";
    CHECK(ncf_load_dataset(&w, path, &lo) == NCF_OK && ncf_load_dataset(&s1, path, &lo) == NCF_OK &&
          ncf_mpi_shard(&s1, MPI_COMM_WORLD) == NCF_OK);
    CHECKF(ncf_mpi_load_dataset(&s2, path, &lo, MPI_COMM_WORLD) == NCF_OK, "%s", ncf_error_text());
    c = mpi_config(0, &w);
    CHECK(ncf_mpi_model_create(&m1, &c, &w, MPI_COMM_WORLD) == NCF_OK &&
          ncf_mpi_model_create(&m2, &c, &s2, MPI_COMM_WORLD) == NCF_OK);
    CHECK(ncf_sampler_init(&a, &s1, c.num_neg, c.seed) == NCF_OK &&
          ncf_sampler_init(&b, &s2, c.num_neg, c.seed) == NCF_OK);
    for (e = 1; m1 && m2 && e <= 2; e++) {
        CHECK(ncf_mpi_train_epoch(m1, &a, e, MPI_COMM_WORLD, NULL, NULL, NULL) == NCF_OK &&
              ncf_mpi_train_epoch(m2, &b, e, MPI_COMM_WORLD, NULL, NULL, NULL) == NCF_OK);
        if (e == 1 && g_size == 2) CHECK(ncf_mpi_save(m2, ckpt, NCF_SAVE_ADAM, MPI_COMM_WORLD) == NCF_OK);
    }
    if (g_size > 2) { /* 2 ranks' epoch-1 file resumed here on the loader's shards */
        ncf_model *m3 = NULL;
        CHECKF(ncf_mpi_load(&m3, ckpt, &s2, MPI_COMM_WORLD) == NCF_OK, "%s", ncf_error_text());
        CHECK(m3 && m3->epoch == 1 && ncf_mpi_train_epoch(m3, &b, 2, MPI_COMM_WORLD, NULL, NULL, NULL) == NCF_OK &&
              ncf_mpi_save(m3, f1, NCF_SAVE_ADAM, MPI_COMM_WORLD) == NCF_OK);
        CHECKF(mpi_same_files(f1, ref), "2 ranks' checkpoint resumed on %d: %s is not %s", g_size, f1, ref);
        ncf_model_free(m3);
        CHECK(ncf_mpi_save(m1, f1, NCF_SAVE_ADAM, MPI_COMM_WORLD) == NCF_OK); /* (m1's, compared below) */
    }
    CHECK((g_size > 2 || ncf_mpi_save(m1, f1, NCF_SAVE_ADAM, MPI_COMM_WORLD) == NCF_OK) &&
          ncf_mpi_save(m2, f2, NCF_SAVE_ADAM, MPI_COMM_WORLD) == NCF_OK);
    CHECKF(mpi_same_files(f1, f2), "%s and %s differ", f1, f2);
    CHECKF(mpi_same_files(f2, ref), "%d ranks wrote %s, 1 rank %s", g_size, f2, ref);
    CHECK(ncf_load(&r, ref) == NCF_OK && ncf_evaluate(r, &w, &eo, &x) == NCF_OK);
    CHECK(m2 && ncf_mpi_evaluate(m2, &s2, &eo, MPI_COMM_WORLD, &y) == NCF_OK && x.hr == y.hr && x.ndcg == y.ndcg &&
          x.users == y.users && x.users > 100);
    ncf_model_free(m1), ncf_model_free(m2), ncf_model_free(r);
    ncf_dataset_free(&w), ncf_dataset_free(&s1), ncf_dataset_free(&s2);
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
    {"mpi_load_dataset", test_mpi_load_dataset},
    {"mpi_load_dataset_errors", test_mpi_load_dataset_errors},
    {"mpi_load_dataset_trains_same_model", test_mpi_load_dataset_trains_same_model},
};

static int mpi_tests(const char *dir, const char *only)
{
    int i, passed = 0, failed = 0, provided;
    MPI_Init_thread(NULL, NULL, MPI_THREAD_FUNNELED, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &g_rank), MPI_Comm_size(MPI_COMM_WORLD, &g_size);
    g_mpi_dir = dir;
    if (g_rank == 0)
        printf("ncf.h %s MPI tests, %d ranks, %d threads each\n", ncf_version(), g_size, ncf_set_threads(0));
    for (i = 0; i < (int)(sizeof MPI_TESTS / sizeof *MPI_TESTS); i++) {
        int before = g_failed_checks, bad;
        long live = g_alloc_live;
        if (only && !strstr(MPI_TESTS[i].name, only)) continue;
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
    if ((argc == 3 || argc == 4) && !strcmp(argv[1], "--tests")) return mpi_tests(argv[2], argc == 4 ? argv[3] : NULL);
    if (argc == 2 && !strcmp(argv[1], "--bench")) return mpi_bench();
    if ((argc == 5 || argc == 6 || (argc == 7 && !strcmp(argv[6], "whole"))) && !strcmp(argv[1], "--scale") &&
        (!strcmp(argv[2], "shards") || !strcmp(argv[2], "replicated")) && atoi(argv[3]) > 0 && atoi(argv[4]) > 0)
        return mpi_scale(!strcmp(argv[2], "shards"), atoi(argv[3]), atoi(argv[4]), argc >= 6 ? argv[5] : NULL,
                         argc == 7);
    if (argc == 5 && !strcmp(argv[1], "--write-log") && atoi(argv[2]) > 0 && atoi(argv[3]) > 0)
        return mpi_write_scale_log(atoi(argv[2]), atoi(argv[3]), argv[4]);
    fprintf(stderr,
            "usage: mpirun -np P %s --tests DIR [NAME] | --bench | --scale shards|replicated X Y [LOG [whole]]\n"
            "       %s --write-log X Y LOG\n",
            argv[0], argv[0]);
    return 2;
}
