/* tests/ab.c - make bench-ab: this ncf.h against another commit's in one process, taking turns
   a fraction of a second long, so that both see the same machine. This VM's speed moves by
   up to half within seconds, which turns separate runs minutes apart into noise; in turns,
   each round's ratio compares two windows (a fifth of a second or more) run back to back,
   and the median over rounds is what one can quote.

   Built twice as a shared library (-DAB_LIB -fPIC -shared, -I the folder of the ncf.h to
   time: each copy's ncf.h is static to it, NCF_STATIC), and once as the driver, which loads
   both (dlopen) and runs

     ab OURS.so BASE.so CASE THREADS ROUNDS

   CASE: paper-train (the paper's NeuMF, factors 8, layers 64,32,16,8, batch 256, lazy Adam,
   on an ml-1m-sized synthetic log), paper-positive (the same, ours on an epoch shuffled by
   positive, ncf_sampler.by_positive, where OURS.so is built with -DAB_OURS; the base in its
   default order), mlperf-train (the MLPerf config, lazy Adam, on ml-20m's
   size), sgd-train (MF, factors 32, by SGD one example a step, 8 negatives: the recipe a
   search runs for half its MF trials; not in make bench-ab's list, since before 0.7.0 such a
   step took the batch path, 15-20x slower), top10 (a known user's top 10 over 3,706 items with
   the paper's model) and full (a full-ranking evaluation of the same model, a fixed sample of
   about 200 users a unit of work). Public calls only, so that each builds against any commit since 0.6.1. One JSON
   line: each side's median rate, the median and quartiles of the rounds' ratios, and the
   host's state before and after the rounds (the cores' round trip, a load's latency). */
#ifdef AB_LIB
#define NCF_STATIC
#define NCF_IMPLEMENTATION
#include "ncf.h"
#include "compat.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define AB_API __attribute__((visibility("default")))

typedef struct {
    int what, threads;
    ncf_dataset d;
    ncf_sampler s;
    ncf_model *m;
    int64_t pos;
    int user;
} ab_state;

enum { AB_PAPER, AB_MLPERF, AB_SGD, AB_TOP10, AB_FULL };

/* Ours on an epoch shuffled by positive: the base's ncf.h may predate the field. */
static void ab_by_positive(ab_state *a)
{
#ifdef AB_OURS
    a->s.by_positive = 1;
#else
    (void)a;
#endif
}

AB_API void ab_close(void *h)
{
    ab_state *a = (ab_state *)h;
    if (!a) return;
    ncf_model_free(a->m);
    ncf_dataset_free(&a->d);
    free(a);
}

/* The case's data and model, or NULL (the error on stderr). */
AB_API void *ab_open(const char *name, int threads)
{
    ab_state *a = (ab_state *)calloc(1, sizeof *a);
    ncf_config c;
    int mlperf = !strcmp(name, "mlperf-train"), by_positive = !strcmp(name, "paper-positive");
    if (!a) return NULL;
    a->what = mlperf                                  ? AB_MLPERF
        : !strcmp(name, "paper-train") || by_positive ? AB_PAPER
        : !strcmp(name, "sgd-train")                  ? AB_SGD
        : !strcmp(name, "top10")                      ? AB_TOP10
        : !strcmp(name, "full")                       ? AB_FULL
                                                      : -1;
    a->threads = threads;
    c = mlperf ? ncf_config_mlperf() : ncf_config_default();
    ncf_set_threads(threads);
    if (a->what < 0 ||
        (mlperf ? ncf_synthetic(&a->d, 138493, 26744, 20000263, 16, 1)
                : ncf_synthetic(&a->d, 6040, 3706, 1000209, 16, 1)) != NCF_OK ||
        ncf_sample_eval_negatives(&a->d, 99, 1) != NCF_OK) {
        fprintf(stderr, "ab: %s\n", a->what < 0 ? "unknown case" : ncf_error_text());
        free(a);
        return NULL;
    }
    c.num_users = a->d.num_users, c.num_items = a->d.num_items, c.adam = NCF_ADAM_LAZY;
    if (a->what == AB_SGD)
        c.model = NCF_MF, c.mf_dim = 32, c.optimizer = NCF_OPT_SGD, c.batch_size = 1, c.lr = 0.01f, c.mf_reg = 0.0025f,
        c.init_sd = 0.1f, c.num_neg = 8;
    if (ncf_model_create(&a->m, &c) != NCF_OK || ncf_sampler_init(&a->s, &a->d, c.num_neg, c.seed) != NCF_OK ||
        ncf_model_set_ids(a->m, &a->d) != NCF_OK) {
        fprintf(stderr, "ab: %s\n", ncf_error_text());
        ab_close(a);
        return NULL;
    }
    if (by_positive) ab_by_positive(a);
    return a;
}

static double ab_failed(void) { return fprintf(stderr, "ab: %s\n", ncf_error_text()), -1; }

/* units units of the case's work; the work done (examples, calls or users), or -1. */
AB_API double ab_work(void *h, int units)
{
    ab_state *a = (ab_state *)h;
    ncf_rec_opts o = ncf_rec_opts_default();
    ncf_eval_opts e = ncf_eval_opts_default();
    ncf_metrics x = {0};
    int32_t items[10];
    int k;
    ncf_set_threads(a->threads);
    if (a->what == AB_PAPER || a->what == AB_MLPERF || a->what == AB_SGD) {
        int64_t n =
            (int64_t)units * (a->what == AB_SGD ? 10000 : a->m->cfg.batch_size * (a->what == AB_PAPER ? 10 : 1));
        if (a->pos + n > a->s.num_examples) a->pos = 0;
        if (ncf_train_examples(a->m, &a->s, 1, a->pos, n, NULL, NULL, NULL) != NCF_OK) return ab_failed();
        a->pos += n;
        return (double)n;
    }
    if (a->what == AB_TOP10) {
        for (k = 0; k < 20 * units; k++, a->user = (a->user + 1) % a->d.num_users)
            if (ncf_recommend_index(a->m, (int)(((uint64_t)a->user * 2654435761u) % (uint64_t)a->d.num_users), &o,
                                    items, NULL) != 10)
                return ab_failed();
        return 20.0 * units;
    }
    e.full_ranking = 1, e.max_users = 200; /* (a fixed sample of about 200 users) */
    for (k = 0; k < units; k++)
        if (ncf_evaluate(a->m, &a->d, &e, &x) != NCF_OK) return ab_failed();
    return (double)units * x.users;
}

#else /* the driver; _GNU_SOURCE for thread affinity (the cores' round trip) */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

typedef struct {
    void *lib, *h;
    void *(*open)(const char *, int);
    double (*work)(void *, int);
    void (*close)(void *);
} ab_side;

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static void sort(double *v, int n)
{
    int i, j;
    for (i = 1; i < n; i++)
        for (j = i; j > 0 && v[j - 1] > v[j]; j--) {
            double t = v[j];
            v[j] = v[j - 1], v[j - 1] = t;
        }
}

/* The q-quantile of sorted v, interpolated. */
static double quantile(const double *v, int n, double q)
{
    double at = q * (n - 1);
    int i = (int)at;
    return i + 1 < n ? v[i] + (at - i) * (v[i + 1] - v[i]) : v[n - 1];
}

static int side_open(ab_side *s, const char *path, const char *name, int threads)
{
    if (!(s->lib = dlopen(path, RTLD_NOW | RTLD_LOCAL))) return fprintf(stderr, "ab: %s\n", dlerror()), 0;
    *(void **)&s->open = dlsym(s->lib, "ab_open");
    *(void **)&s->work = dlsym(s->lib, "ab_work");
    *(void **)&s->close = dlsym(s->lib, "ab_close");
    if (!s->open || !s->work || !s->close) return fprintf(stderr, "ab: %s lacks ab_open/ab_work/ab_close\n", path), 0;
    if (!(s->h = s->open(name, threads))) return fprintf(stderr, "ab: %s could not set up %s\n", path, name), 0;
    return 1;
}

/* The round trip of a cache line between the first two CPUs the process may use, in ns: a
   flag passed back and forth 20,000 times by two threads pinned one to each. A VM's host
   may place its two cores close (about 0.1 us on the project's AMD EPYC) or, for minutes at
   a time, far apart (about 0.4 us), and a team of 2 threads then trains slower than one
   thread (docs/performance.md): each case's line gives it before and after its rounds.
   -1 with fewer than 2 CPUs. At most half a second: two threads that share one CPU (a
   quota, a pin refused) hand the flag over once a time slice. */
#define AB_TRIPS 20000
static long ab_flag; /* (read and written with __atomic builtins only) */
static int ab_cpu[2];

static void ab_pin(int cpu)
{
    cpu_set_t s;
    CPU_ZERO(&s);
    CPU_SET(cpu, &s);
    pthread_setaffinity_np(pthread_self(), sizeof s, &s);
}

static void *ab_pong(void *arg)
{
    long i;
    ab_pin(ab_cpu[1]);
    for (i = 0; i < AB_TRIPS; i++) {
        long f;
        while ((f = __atomic_load_n(&ab_flag, __ATOMIC_ACQUIRE)) != 2 * i + 1)
            if (f < 0) return arg; /* time is up */
        __atomic_store_n(&ab_flag, 2 * i + 2, __ATOMIC_RELEASE);
    }
    return arg;
}

static double round_trip_ns(void)
{
    cpu_set_t all, mine;
    pthread_t t;
    double t0;
    long i;
    int c, k = 0;
    if (sched_getaffinity(0, sizeof all, &all) != 0) return -1;
    for (c = 0; c < CPU_SETSIZE && k < 2; c++)
        if (CPU_ISSET(c, &all)) ab_cpu[k++] = c;
    if (k < 2 || pthread_getaffinity_np(pthread_self(), sizeof mine, &mine) != 0) return -1;
    ab_pin(ab_cpu[0]), ab_flag = 0;
    if (pthread_create(&t, NULL, ab_pong, NULL) != 0) {
        pthread_setaffinity_np(pthread_self(), sizeof mine, &mine);
        return -1;
    }
    t0 = now_s();
    for (i = 0; i < AB_TRIPS && ((i & 15) || now_s() - t0 < 0.5); i++) {
        __atomic_store_n(&ab_flag, 2 * i + 1, __ATOMIC_RELEASE);
        while (__atomic_load_n(&ab_flag, __ATOMIC_ACQUIRE) != 2 * i + 2) continue;
    }
    t0 = now_s() - t0;
    __atomic_store_n(&ab_flag, -1, __ATOMIC_RELEASE);
    pthread_join(t, NULL);
    pthread_setaffinity_np(pthread_self(), sizeof mine, &mine); /* (the OpenMP team inherits it) */
    return i ? 1e9 * t0 / (double)i : -1;
}

/* The latency of a load from an 8 MB buffer, in ns: 1,000,000 loads, each the address of the
   next, around one random cycle of its cache lines. The paper config's step reaches about
   13 MB (the model's rows with their Adam moments, the training lists the sampler searches),
   and how much of that a host's caches keep moves between runs: on the project's VM such a
   chase took 16-22 ns a load over 1-3 MB, over 4 MB 143 ns at one time and 20 ns within the
   hour, and over 8 MB 54-157 ns. Each case's line gives it before and after its
   rounds. -1 when the buffer cannot be had. */
#define AB_CHASE_LINES ((8 << 20) / 64)
static uint32_t *ab_line; /* ab_line[16 * i]: the next line's index */

static double load_ns(void)
{
    uint32_t *line = ab_line, i, at = 0;
    uint64_t x = 0x9e3779b97f4a7c15u;
    double t0;
    long k;
    if (!line) {
        uint32_t *order = (uint32_t *)malloc(sizeof *order * AB_CHASE_LINES);
        if (!order || !(ab_line = line = (uint32_t *)malloc(64 * (size_t)AB_CHASE_LINES))) return free(order), -1;
        for (i = 0; i < AB_CHASE_LINES; i++) order[i] = i;
        for (i = AB_CHASE_LINES - 1; i > 0; i--) { /* Sattolo's shuffle: one cycle through all */
            uint32_t j, t;
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            j = (uint32_t)(x % i), t = order[i], order[i] = order[j], order[j] = t;
        }
        for (i = 0; i < AB_CHASE_LINES; i++) line[16 * (size_t)order[i]] = order[(i + 1) % AB_CHASE_LINES];
        free(order);
    }
    t0 = now_s();
    for (k = 0; k < 1000000; k++) at = line[16 * (size_t)at];
    t0 = now_s() - t0;
    return at < AB_CHASE_LINES ? 1e3 * t0 : -1; /* (at: the chase is not optimised away) */
}

/* Seconds for units of side s's work, its amount in *done; negative on failure. */
static double timed(ab_side *s, int units, double *done)
{
    double t = now_s();
    if ((*done = s->work(s->h, units)) < 0) return -1;
    return now_s() - t;
}

int main(int argc, char **argv)
{
    enum { MAX_ROUNDS = 1000 };
    ab_side side[2];
    static double ratio[MAX_ROUNDS], rate[2][MAX_ROUNDS];
    double done, t[2], trip[2], load[2];
    int threads, rounds, units = 1, r, k;
    if (argc != 6 || (threads = atoi(argv[4])) < 1 || (rounds = atoi(argv[5])) < 1 || rounds > MAX_ROUNDS) {
        fprintf(stderr, "usage: ab OURS.so BASE.so paper-train|mlperf-train|sgd-train|top10|full THREADS ROUNDS\n");
        return 2;
    }
    trip[0] = round_trip_ns(), load[0] = load_ns();
    if (!side_open(&side[0], argv[1], argv[3], threads) || !side_open(&side[1], argv[2], argv[3], threads)) return 1;
    /* a warm-up of each (first touches), then a window of about a fifth of a second of ours */
    if (timed(&side[0], 1, &done) < 0 || timed(&side[1], 1, &done) < 0)
        return fprintf(stderr, "ab: the case failed\n"), 1;
    while (units < (1 << 20) && (t[0] = timed(&side[0], units, &done)) >= 0 && t[0] < 0.2) units *= 2;
    if (t[0] < 0 || timed(&side[1], units, &done) < 0) return fprintf(stderr, "ab: the case failed\n"), 1;
    for (r = 0; r < rounds; r++) {
        for (k = 0; k < 2; k++) { /* (each side goes first in every other round) */
            int who = (r + k) % 2;
            if ((t[who] = timed(&side[who], units, &done)) < 0) return fprintf(stderr, "ab: the case failed\n"), 1;
            rate[who][r] = done / t[who];
        }
        ratio[r] = t[1] / t[0];
    }
    trip[1] = round_trip_ns(), load[1] = load_ns();
    sort(ratio, rounds), sort(rate[0], rounds), sort(rate[1], rounds);
    printf("{\"case\":\"ab\",\"what\":\"%s\",\"threads\":%d,\"rounds\":%d,\"window_units\":%d,\"ours_per_s\":%.1f,"
           "\"base_per_s\":%.1f,\"ratio\":%.3f,\"ratio_q1\":%.3f,\"ratio_q3\":%.3f,\"trip_ns_before\":%.0f,"
           "\"trip_ns_after\":%.0f,\"load_ns_before\":%.0f,\"load_ns_after\":%.0f}\n",
           argv[3], threads, rounds, units, quantile(rate[0], rounds, 0.5), quantile(rate[1], rounds, 0.5),
           quantile(ratio, rounds, 0.5), quantile(ratio, rounds, 0.25), quantile(ratio, rounds, 0.75), trip[0], trip[1],
           load[0], load[1]);
    /* (no dlclose: closing the last library would unload libgomp under its waiting threads) */
    for (k = 0; k < 2; k++) side[k].close(side[k].h);
    free(ab_line);
    return 0;
}
#endif
