/* tests/harness.h - what the test suite (tests.c), the benchmarks (tests/bench.c), the MPI
   suite (tests/mpi.c) and the fixture check (tests/fixture.c) share: ncf.h's implementation
   behind allocator hooks that count every block and can fail the k-th allocation, the CHECK
   macros, a scratch folder, a clock. Included once, by the one file of each program. */
#ifndef NCF_TESTS_HARNESS_H
#define NCF_TESTS_HARNESS_H
/* (a helper one program does not use is no warning) */
#if defined(__GNUC__) || defined(__clang__)
#define SHARED static __attribute__((unused))
#else
#define SHARED static
#endif
#ifndef _WIN32
#define _POSIX_C_SOURCE 200809L
#endif
#include <stdlib.h>

/* Every allocation the library makes goes through these hooks; the allocation-failure sweep
   makes the k-th one after arming fail (g_alloc_fail_at = k), as SQLite tests itself. */
static long g_alloc_count, g_alloc_fail_at = -1, g_alloc_calls, g_alloc_bytes;
static long g_alloc_live;    /* blocks allocated and not yet freed (the MPI tests' leak check) */
static long g_realloc_bytes; /* asked of realloc, each call's new size */
static int alloc_fails(void) { return g_alloc_fail_at >= 0 && g_alloc_count++ == g_alloc_fail_at; }
/* (counted atomically: serving tests allocate from several threads at once) */
#if defined(__GNUC__) || defined(__clang__)
#define COUNT_ADD(x, v) __atomic_fetch_add(&(x), (v), __ATOMIC_RELAXED)
#else
#define COUNT_ADD(x, v) ((x) += (v))
#endif
static void *test_malloc(size_t n)
{
    if (alloc_fails()) return NULL;
    void *p;
    COUNT_ADD(g_alloc_calls, 1), COUNT_ADD(g_alloc_bytes, (long)n);
    if ((p = malloc(n)) != NULL) COUNT_ADD(g_alloc_live, 1);
    return p;
}
static void *test_realloc(void *p, size_t n)
{
    void *q = alloc_fails() ? NULL : realloc(p, n);
    COUNT_ADD(g_realloc_bytes, (long)n);
    if (q && !p) COUNT_ADD(g_alloc_live, 1);
    return q;
}
static void test_free(void *p)
{
    if (p) COUNT_ADD(g_alloc_live, -1);
    free(p);
}
#define NCF_MALLOC(n) test_malloc(n)
#define NCF_REALLOC(p, n) test_realloc(p, n)
#define NCF_FREE(p) test_free(p)
#define NCF_IMPLEMENTATION
#include "../ncf.h"

#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#ifdef _WIN32 /* the few POSIX calls the tests make, for MinGW (make windows) */
#include <direct.h>
#include <windows.h>
#define rmdir _rmdir
#else
#include <pthread.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <utime.h>
#include <fcntl.h>
#endif

#ifndef NCF_INFERENCE_ONLY
/* The figures at k (sampled, or ranked in full) on the test items: what many tests ask. */
SHARED int evaluate_k(const ncf_model *m, const ncf_dataset *d, int k, int full_ranking, ncf_metrics *out)
{
    ncf_eval_opts o = ncf_eval_opts_default();
    o.k = k, o.full_ranking = full_ranking;
    return ncf_evaluate(m, d, &o, out);
}
#endif

/* The k best items by integer ids, rated items skipped or not. */
SHARED int recommend_k(const ncf_model *m, int64_t user, int k, int exclude_rated, int64_t *items, float *scores)
{
    ncf_rec_opts o = ncf_rec_opts_default();
    o.k = k, o.exclude_rated = exclude_rated;
    return ncf_recommend(m, user, &o, items, scores);
}
/* The same in a caller's workspace. */
SHARED int recommend_with_k(const ncf_model *m, int64_t user, int k, int exclude_rated, int64_t *items, float *scores,
                            void *work, size_t size)
{
    ncf_rec_opts o = ncf_rec_opts_default();
    o.k = k, o.exclude_rated = exclude_rated, o.work = work, o.work_size = size;
    return ncf_recommend(m, user, &o, items, scores);
}
/* The workspace of a recommendation of k (no lists). */
SHARED size_t rec_size_k(const ncf_model *m, int k)
{
    ncf_rec_opts o = ncf_rec_opts_default();
    o.k = k;
    return ncf_rec_workspace_size(m, &o);
}

SHARED int g_failed_checks;
SHARED int g_skipped; /* the running test could not run here (SKIP): counted apart, never a pass */

#define SKIP(...) \
    do { \
        printf("    skipped: "); \
        printf(__VA_ARGS__); \
        printf("\n"); \
        g_skipped = 1; \
    } while (0)

#define CHECK(cond) \
    do { \
        if (!(cond)) { \
            printf("    check failed at %s:%d: %s\n", __FILE__, __LINE__, #cond); \
            g_failed_checks++; \
        } \
    } while (0)
#define CHECKF(cond, ...) \
    do { \
        if (!(cond)) { \
            printf("    check failed at %s:%d: %s: ", __FILE__, __LINE__, #cond); \
            printf(__VA_ARGS__); \
            printf("\n"); \
            g_failed_checks++; \
        } \
    } while (0)
/* An expected failure: the code, and a message containing `text`. */
#define CHECK_ERR(expr, code, text) \
    do { \
        int rc_ = (expr); \
        CHECKF(rc_ == (code) && strstr(ncf_error_text(), (text)) != NULL, "rc %d, message '%s', wanted %d and '%s'", \
               rc_, ncf_error_text(), code, text); \
    } while (0)

#ifndef NCF_INFERENCE_ONLY
static char g_dir[200]; /* scratch folder for the files the tests write */

/* A new folder for this run's files, under the system's temporary folder. */
SHARED int make_scratch_dir(void)
{
#ifdef _WIN32
    char tmp[MAX_PATH];
    int k;
    if (!GetTempPathA(sizeof tmp, tmp)) return 0;
    for (k = 0; k < 1000; k++) {
        if (snprintf(g_dir, sizeof g_dir, "%sncf_tests_%lu_%d", tmp, (unsigned long)GetCurrentProcessId(), k) >=
            (int)sizeof g_dir)
            return 0;
        if (_mkdir(g_dir) == 0) return 1;
    }
    return 0;
#else
    snprintf(g_dir, sizeof g_dir, "/tmp/ncf_tests_XXXXXX");
    return mkdtemp(g_dir) != NULL;
#endif
}

/* Files in dir whose names start with prefix ("" counts every file); with remove, deletes them. */
SHARED int files_in_dir(const char *dir, const char *prefix, int remove_them)
{
    DIR *dp = opendir(dir);
    struct dirent *e;
    int n = 0;
    char path[1024];
    while (dp && (e = readdir(dp)) != NULL) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..") || strncmp(e->d_name, prefix, strlen(prefix))) continue;
        n++;
        if (snprintf(path, sizeof path, "%s/%s", dir, e->d_name) >= (int)sizeof path) continue; /* (never a cut name) */
        if (remove_them) remove(path);
    }
    if (dp) closedir(dp);
    return n;
}

SHARED const char *path_in_dir(const char *name)
{
    static char buf[8][512];
    static int k;
    k = (k + 1) % 8;
    if (snprintf(buf[k], sizeof buf[k], "%s/%s", g_dir, name) >= (int)sizeof buf[k]) return "/nonexistent/too-long";
    return buf[k];
}

SHARED void write_file(const char *name, const char *text)
{
    FILE *f = fopen(path_in_dir(name), "wb");
    if (!f) {
        printf("cannot write %s\n", path_in_dir(name));
        exit(2);
    }
    fputs(text, f);
    fclose(f);
}

#endif

/* Seconds on a monotonic clock. */
SHARED double now_s(void)
{
#ifdef _WIN32
    LARGE_INTEGER f, c;
    QueryPerformanceFrequency(&f), QueryPerformanceCounter(&c);
    return (double)c.QuadPart / (double)f.QuadPart;
#else
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
#endif
}

/* NCF_DATA: a folder holding the downloaded data, ml-1m-ncf/ml-1m.* (the paper's split) and
   ml-100k/u.data (docs/data.md); "" when unset. */
SHARED const char *data_dir(void)
{
    const char *d = getenv("NCF_DATA");
    return d ? d : "";
}

#ifndef NCF_INFERENCE_ONLY
/* The model's parameters and Adam moments, hashed: training that must give the same model
   (another thread count, another build, MPI ranks) gives the same hash. */
SHARED uint64_t state_hash(const ncf_model *m)
{
    uint64_t h = 0;
    size_t i;
    for (i = 0; i < m->num_params; i++) {
        uint32_t a, b, v;
        memcpy(&a, &m->params[i], 4), memcpy(&b, &m->adam_m[i], 4), memcpy(&v, &m->adam_v[i], 4);
        h = ncf__mix64(h ^ a ^ ((uint64_t)b << 32)) ^ v;
    }
    return h;
}
#endif

/* One named test, in a program's list of them. */
typedef struct {
    const char *name;
    void (*fn)(void);
} test_case;

/* ---- what the suite's test files share (tests.c includes them into one program) ---- */
#ifndef NCF_INFERENCE_ONLY
SHARED ncf_config small_config(ncf_model_type type, int reg)
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

SHARED int in_training(const ncf_dataset *d, int u, int item)
{
    int64_t k;
    for (k = d->user_ptr[u]; k < d->user_ptr[u + 1]; k++)
        if (d->items[k] == item) return 1;
    return 0;
}

SHARED int is_rated(const ncf_dataset *d, int u, int item)
{
    return d->test_item[u] == item || (d->val_item && d->val_item[u] == item) || in_training(d, u, item);
}

/* GMF with one factor, user rows 1 and w_out 1: an item's score is its own value. */
SHARED ncf_model *scoring_model(const float *item_score, int users, int items)
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

/* ncf__build on ids that are already dense: users [0, U), items [0, I), the latest held out. */
SHARED int build_fixed(ncf_dataset *d, const int64_t *u, const int64_t *i, const int64_t *t, int64_t n, int U, int I)
{
    ncf__build_opts bo;
    memset(&bo, 0, sizeof bo);
    bo.holdout = NCF_HOLDOUT_LATEST, bo.fixed_users = U, bo.fixed_items = I;
    return ncf__build(d, u, i, t, n, &bo);
}

SHARED int rated_by(const ncf_dataset *d, int u, int i)
{
    int64_t k;
    for (k = d->user_ptr[u]; k < d->user_ptr[u + 1]; k++)
        if (d->items[k] == i) return 1;
    return d->test_item[u] == i;
}

SHARED ncf_model *trained_small(ncf_dataset *d, int epochs)
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

SHARED int same_model(const ncf_model *a, const ncf_model *b, int adam)
{
    return a->num_params == b->num_params && !memcmp(&a->cfg, &b->cfg, sizeof a->cfg) &&
        !memcmp(a->params, b->params, sizeof(float) * a->num_params) &&
        (!adam ||
         (!memcmp(a->adam_m, b->adam_m, sizeof(float) * a->num_params) &&
          !memcmp(a->adam_v, b->adam_v, sizeof(float) * a->num_params) && a->step == b->step));
}

/* GMF and MLP models trained briefly on the same data, and a NeuMF of matching shape. */
SHARED void pretrained_pair(const ncf_dataset *d, ncf_model **gmf, ncf_model **mlp, ncf_model **neumf)
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
#endif /* the shared helpers */

#endif
