/* fuzz/fuzz.c - libFuzzer targets for ncf.h's readers: `make fuzz` builds one
   binary per target and runs each on the seed corpus in fuzz/corpus/TARGET (the model
   reader's: small model files of every kind that tests --write-seeds writes).

     clang -fsanitize=fuzzer,address -DFUZZ_TARGET=T -I. fuzz/fuzz.c

   T = 1 model   ncf_load_mem and ncf_model_open (in place). Inputs whose last byte is
                 odd get a valid CRC32 first, so the checks behind the checksum are
                 reached; a model that loads must also predict and recommend, and one
                 that opens in place must answer as the copy.
       2 dat     ratings.dat  (ncf_load_dataset_mem: the ratings readers run in memory)
       3 csv     ratings.csv
       4 tab     u.data
       5 ncf     the paper split: the input cut at form feeds into .train.rating,
                 .test.rating and .test.negative (written to files)
       6 log     any delimited log: separator, header and columns found; the first byte
                 picks the hold-out and a min_rating
   A dataset that loads must be well formed, and its ids found again by what they are named
   (checked here, trapping if not). */
#define _POSIX_C_SOURCE 200809L
#define NCF_IMPLEMENTATION
#include "ncf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifndef FUZZ_TARGET
#error "define FUZZ_TARGET (1 model, 2 dat, 3 csv, 4 tab, 5 ncf, 6 log)"
#endif

#define REQUIRE(x) do { if (!(x)) __builtin_trap(); } while (0)

#if FUZZ_TARGET == 1
static void fuzz_model(const uint8_t *data, size_t size)
{
    ncf_model *m = NULL;
    uint8_t *buf;
    if (size < 8 || !(buf = (uint8_t *)malloc(size))) return;
    memcpy(buf, data, size);
    if (buf[size - 1] & 1) { /* half the inputs, by a checksum bit: re-seal the checksum */
        uint32_t c = ncf__crc32(buf, size - 4);
        buf[size - 4] = (uint8_t)c, buf[size - 3] = (uint8_t)(c >> 8);
        buf[size - 2] = (uint8_t)(c >> 16), buf[size - 1] = (uint8_t)(c >> 24);
    }
    if (ncf_load_mem(&m, buf, size) == NCF_OK) {
        ncf_model *in = NULL;
        int64_t items[4], items2[4];
        float scores[4], scores2[4], z, z2;
        int32_t u = 0, i = 0;
        REQUIRE(ncf_predict_batch(m, &u, &i, 1, &z) == NCF_OK);
        if (m->raw_user) {
            int n = ncf_recommend(m, m->raw_user[0], 4, NCF_EXCLUDE_RATED, items, scores);
            REQUIRE(n >= 0 && n <= 4);
            REQUIRE(ncf_predict(m, m->raw_user[0], m->raw_item[0], &z) == NCF_OK);
            if (ncf_model_open(&in, buf, size) == NCF_OK) { /* (malloc's buffer is aligned) */
                REQUIRE(ncf_recommend(in, m->raw_user[0], 4, NCF_EXCLUDE_RATED, items2, scores2) == n);
                REQUIRE(!memcmp(items, items2, sizeof(int64_t) * (size_t)n) && !memcmp(scores, scores2, 4 * (size_t)n));
                REQUIRE(ncf_predict(in, m->raw_user[0], m->raw_item[0], &z2) == NCF_OK && !memcmp(&z, &z2, 4));
                ncf_model_free(in);
            }
        }
        ncf_model_free(m);
    } else {
        REQUIRE(ncf_model_open(&m, buf, size) != NCF_OK && m == NULL);
        REQUIRE(m == NULL && ncf_error_text()[0] != 0);
    }
    free(buf);
}
#else
static char g_dir[64];

static int put(const char *name, const uint8_t *p, size_t n)
{
    char path[128];
    FILE *f;
    snprintf(path, sizeof path, "%s/%s", g_dir, name);
    if (!(f = fopen(path, "wb"))) return 0;
    fwrite(p, 1, n, f);
    return fclose(f) == 0;
}

/* The split's three files and their folder. */
static void remove_dir(void)
{
    static const char *names[3] = {"split.train.rating", "split.test.rating", "split.test.negative"};
    char path[160];
    int k;
    for (k = 0; k < 3; k++) snprintf(path, sizeof path, "%s/%s", g_dir, names[k]), remove(path);
    rmdir(g_dir);
}

/* Invariants of a loaded dataset. */
static void check_dataset(const ncf_dataset *d)
{
    int u;
    int64_t k;
    REQUIRE(d->num_users > 0 && d->num_items > 0 && d->user_ptr[0] == 0);
    for (u = 0; u < d->num_users; u++) {
        REQUIRE(d->user_ptr[u] <= d->user_ptr[u + 1]);
        for (k = d->user_ptr[u]; k < d->user_ptr[u + 1]; k++) {
            REQUIRE(d->items[k] >= 0 && d->items[k] < d->num_items && d->train_user[k] == u);
            REQUIRE(k == d->user_ptr[u] || d->items[k - 1] < d->items[k]);
        }
        REQUIRE(d->test_item[u] >= -1 && d->test_item[u] < d->num_items);
        for (k = 0; d->test_item[u] >= 0 && k < d->num_eval_neg; k++) {
            int32_t it = d->eval_neg[(size_t)u * d->num_eval_neg + k];
            REQUIRE(it >= 0 && it < d->num_items);
        }
    }
    REQUIRE(d->user_ptr[d->num_users] == d->num_train);
    for (u = 0; u < d->num_users + d->num_items; u++) { /* each id named, then found again */
        char id[NCF_MAX_ID_BYTES + 1];
        int k2 = u < d->num_users ? u : u - d->num_users;
        if (u < d->num_users) REQUIRE(ncf_dataset_user_id(d, k2, id, sizeof id) > 0 && ncf_dataset_user_index(d, id) == k2);
        else REQUIRE(ncf_dataset_item_id(d, k2, id, sizeof id) > 0 && ncf_dataset_item_index(d, id) == k2);
    }
}

static void fuzz_ratings(const uint8_t *data, size_t size)
{
    static const char *names[] = {"", "", "ratings.dat", "ratings.csv", "u.data", "split", "log"};
    static const ncf_format formats[] = {0, 0, NCF_FORMAT_DAT, NCF_FORMAT_CSV, NCF_FORMAT_TAB, NCF_FORMAT_NCF, NCF_FORMAT_AUTO};
    ncf_load_opts o = ncf_load_opts_default();
    ncf_dataset d;
    char path[128];
    o.format = formats[FUZZ_TARGET], o.min_ratings = 0, o.eval_negatives = 3;
    if (FUZZ_TARGET != 5) { /* in memory */
        if (FUZZ_TARGET == 6 && size > 0) {
            o.holdout = data[0] & 3, o.validation = (data[0] >> 2) & 1;
            if (data[0] & 8) o.min_rating = 2.0f;
            data++, size--;
        }
        if (ncf_load_dataset_mem(&d, names[FUZZ_TARGET], data, size, &o) == NCF_OK) {
            check_dataset(&d);
            ncf_dataset_free(&d);
        } else {
            REQUIRE(ncf_error_text()[0] != 0 && d.user_ptr == NULL);
        }
        return;
    }
    if (!g_dir[0]) {
        snprintf(g_dir, sizeof g_dir, "/tmp/ncf_fuzz_XXXXXX");
        if (!mkdtemp(g_dir)) abort();
        atexit(remove_dir); /* (libFuzzer ends with exit: nothing is left behind) */
    }
    { /* three files, cut at form feeds */
        static const char *suffix[3] = {"split.train.rating", "split.test.rating", "split.test.negative"};
        size_t at = 0;
        int k;
        for (k = 0; k < 3; k++) {
            const uint8_t *ff = at < size ? (const uint8_t *)memchr(data + at, '\f', size - at) : NULL;
            size_t end = k < 2 && ff ? (size_t)(ff - data) : size;
            if (!put(suffix[k], data + at, end > at ? end - at : 0)) return;
            at = end < size ? end + 1 : size;
        }
    }
    snprintf(path, sizeof path, "%s/%s", g_dir, names[FUZZ_TARGET]);
    o.eval_negatives = 0;
    if (ncf_load_dataset(&d, path, &o) == NCF_OK) {
        check_dataset(&d);
        ncf_dataset_free(&d);
    } else {
        REQUIRE(ncf_error_text()[0] != 0);
    }
}
#endif

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    ncf_set_threads(1);
#if FUZZ_TARGET == 1
    fuzz_model(data, size);
#else
    fuzz_ratings(data, size);
#endif
    return 0;
}
