/* fuzz/fuzz.c - libFuzzer targets for ncf.h's readers: `make fuzz` builds one
   binary per target and runs each on the seed corpus in fuzz/corpus/TARGET (the model
   readers': small model files of every kind that tests --write-seeds writes).

     clang -fsanitize=fuzzer,address -DFUZZ_TARGET=T -I. fuzz/fuzz.c

   T = 1 model     ncf_load_mem and ncf_model_open(in place, 0). Inputs whose last byte is
                   odd get a valid CRC32 first, so the checks behind the checksum are
                   reached; a model that loads must also predict and recommend, and one
                   that opens in place must answer as the copy.
       2 dat       ratings.dat  (ncf_load_dataset_mem: the ratings readers run in memory)
       3 csv       ratings.csv
       4 tab       u.data
       5 ncf       the paper split: the input cut at form feeds into .train.rating,
                   .test.rating and .test.negative, read from memory
       6 log       any delimited log: separator, header and columns found; the first byte
                   picks the hold-out, a min_rating, a weighting or an events list
       7 verified  ncf_model_open(no CRC, no value scan: the layout alone is
                   checked, NCF_OPEN_VERIFIED) on a block of exactly the input's size: opening and serving
                   must never read outside it; where the checked open succeeds too, both
                   answer the same
       8 roundtrip a log (as 6) trained for an epoch on a small NeuMF, saved and loaded
                   back in memory: the copy answers and names ids as the model does
       9 holdout   a log split by ratio, time share or cut-off (the first two bytes pick which,
                   the share or the cut-off, and validation): the held-out lists are each
                   user's, ascending, in range, and apart from its training items
      10 saved     a split as ncf_save_split writes it, the input cut at form feeds into its
                   training, validation and test parts (ncf__build_saved, the reader's core)
      11 byid      a log (up to a form feed) trained into a small MF, then each line after it
                   an id for the serving calls by id: they answer or refuse, and what they
                   answer is the index forms' answer
   A dataset that loads must be well formed, and its ids found again by what they are named
   (checked here, trapping if not). Every target runs in memory: no file is written. */
#define _POSIX_C_SOURCE 200809L
#define NCF_IMPLEMENTATION
#include "ncf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef FUZZ_TARGET
#error \
    "define FUZZ_TARGET (1 model, 2 dat, 3 csv, 4 tab, 5 ncf, 6 log, 7 verified, 8 roundtrip, 9 holdout, 10 saved, 11 byid)"
#endif

#define REQUIRE(x) \
    do { \
        if (!(x)) __builtin_trap(); \
    } while (0)

#if FUZZ_TARGET == 1 || FUZZ_TARGET == 7
/* A copy of the input in a block of its own size; half the inputs (by their last bit) get a
   valid CRC32 first, so the checks behind the checksum are reached. */
static uint8_t *sealed_copy(const uint8_t *data, size_t size)
{
    uint8_t *buf = size >= 8 ? (uint8_t *)malloc(size) : NULL;
    if (!buf) return NULL;
    memcpy(buf, data, size);
    if (buf[size - 1] & 1) {
        uint32_t c = ncf__crc32(buf, size - 4);
        buf[size - 4] = (uint8_t)c, buf[size - 3] = (uint8_t)(c >> 8);
        buf[size - 2] = (uint8_t)(c >> 16), buf[size - 1] = (uint8_t)(c >> 24);
    }
    return buf;
}
#endif

#if FUZZ_TARGET == 1
static void fuzz_model(const uint8_t *data, size_t size)
{
    ncf_model *m = NULL;
    uint8_t *buf = sealed_copy(data, size);
    if (!buf) return;
    if (ncf_load_mem(&m, buf, size) == NCF_OK) {
        ncf_model *in = NULL;
        int64_t items[4], items2[4];
        float scores[4], scores2[4], z, z2;
        int32_t u = 0, i = 0;
        ncf_rec_opts ro = ncf_rec_opts_default();
        ro.k = 4;
        REQUIRE(ncf_predict_index(m, &u, &i, 1, &z) == NCF_OK);
        if (m->raw_user) {
            int n = ncf_recommend(m, m->raw_user[0], &ro, items, scores);
            REQUIRE(n >= 0 && n <= 4);
            REQUIRE(ncf_predict(m, m->raw_user[0], m->raw_item[0], &z) == NCF_OK);
            if (ncf_model_open(&in, buf, size, 0) == NCF_OK) { /* (malloc's buffer is aligned) */
                REQUIRE(ncf_recommend(in, m->raw_user[0], &ro, items2, scores2) == n);
                REQUIRE(!memcmp(items, items2, sizeof(int64_t) * (size_t)n) && !memcmp(scores, scores2, 4 * (size_t)n));
                REQUIRE(ncf_predict(in, m->raw_user[0], m->raw_item[0], &z2) == NCF_OK && !memcmp(&z, &z2, 4));
                ncf_model_free(in);
            }
        }
        ncf_model_free(m);
    } else {
        REQUIRE(ncf_model_open(&m, buf, size, 0) != NCF_OK && m == NULL);
        REQUIRE(m == NULL && ncf_error_text()[0] != 0);
    }
    free(buf);
}
#elif FUZZ_TARGET == 7
/* Answers of a model open in place: the first and last users' top 4, a predict. */
typedef struct {
    int n, n_last;
    int32_t top[4];
    float sc[4], z;
} answers;

static answers serve_opened(const ncf_model *m)
{
    ncf_rec_opts o = ncf_rec_opts_default();
    int32_t u = m->cfg.num_users - 1, i = m->cfg.num_items - 1, top[4];
    float sc[4];
    answers a;
    memset(&a, 0, sizeof a);
    o.k = 4;
    a.n = ncf_recommend_index(m, 0, &o, a.top, a.sc);
    a.n_last = ncf_recommend_index(m, u, &o, top, sc);
    REQUIRE(a.n <= 4 && a.n_last <= 4);
    REQUIRE(ncf_predict_index(m, &u, &i, 1, &a.z) == NCF_OK);
    return a;
}

static void fuzz_verified(const uint8_t *data, size_t size)
{
    ncf_model *v = NULL, *c = NULL;
    uint8_t *buf = sealed_copy(data, size); /* (malloc's block is 16-aligned; ASan fences it at size) */
    if (!buf) return;
    if (ncf_model_open(&v, buf, size, NCF_OPEN_VERIFIED) == NCF_OK) {
        answers a = serve_opened(v), b;
        if (ncf_model_open(&c, buf, size, 0) == NCF_OK) {
            b = serve_opened(c);
            REQUIRE(a.n == b.n && a.n_last == b.n_last && !memcmp(&a.z, &b.z, sizeof a.z));
            REQUIRE(a.n <= 0 ||
                    (!memcmp(a.top, b.top, sizeof(int32_t) * (size_t)a.n) &&
                     !memcmp(a.sc, b.sc, sizeof(float) * (size_t)a.n)));
            ncf_model_free(c);
        }
        ncf_model_free(v);
    } else {
        REQUIRE(v == NULL && ncf_error_text()[0] != 0);
        REQUIRE(ncf_model_open(&c, buf, size, 0) != NCF_OK &&
                c == NULL); /* what the layout refuses, so does the full check */
    }
    free(buf);
}
#else
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
            REQUIRE(!d->weight || (d->weight[k] >= 1 && d->weight[k] <= 1e9f)); /* (NaN fails) */
        }
        REQUIRE(!d->val_weight || !d->val_item || d->val_item[u] < 0 ||
                (d->val_weight[u] >= 1 && d->val_weight[u] <= 1e9f));
        REQUIRE(d->test_item[u] >= -1 && d->test_item[u] < d->num_items);
        for (k = 0; d->test_item[u] >= 0 && k < d->num_eval_neg; k++) {
            int32_t it = d->eval_neg[(size_t)u * d->num_eval_neg + k];
            REQUIRE(it >= 0 && it < d->num_items);
        }
    }
    REQUIRE(d->user_ptr[d->num_users] == d->num_train);
    for (u = 0; d->test_ptr && u < d->num_users; u++) { /* many held out a user: ascending, apart from training */
        int part;
        for (part = 0; part < 2; part++) {
            const int64_t *at = part ? d->val_ptr : d->test_ptr;
            const int32_t *it = part ? d->val_items : d->test_items;
            if (!at) continue;
            REQUIRE(at[0] == 0 && at[u] <= at[u + 1]);
            for (k = at[u]; k < at[u + 1]; k++) {
                int64_t t;
                REQUIRE(it[k] >= 0 && it[k] < d->num_items && (k == at[u] || it[k - 1] < it[k]));
                for (t = d->user_ptr[u]; t < d->user_ptr[u + 1]; t++) REQUIRE(d->items[t] != it[k]);
            }
        }
    }
    for (u = 0; u < d->num_users + d->num_items; u++) { /* each id named, then found again */
        char id[NCF_MAX_ID_BYTES + 1];
        int k2 = u < d->num_users ? u : u - d->num_users;
        if (u < d->num_users)
            REQUIRE(ncf_dataset_id(d, NCF_USER, k2, id, sizeof id) > 0 && ncf_dataset_find(d, NCF_USER, id) == k2);
        else REQUIRE(ncf_dataset_id(d, NCF_ITEM, k2, id, sizeof id) > 0 && ncf_dataset_find(d, NCF_ITEM, id) == k2);
    }
}

#if FUZZ_TARGET == 8
/* An epoch of a small NeuMF on the data, saved and loaded back: the copy answers and names
   ids as the model does. */
static void round_trip(const ncf_dataset *d)
{
    ncf_config c = ncf_config_default();
    ncf_model *m = NULL, *back = NULL;
    ncf_sampler smp;
    void *buf = NULL;
    size_t len = 0;
    int u;
    c.num_users = d->num_users, c.num_items = d->num_items, c.mf_dim = 4, c.num_layers = 2;
    c.layers[0] = 8, c.layers[1] = 4, c.batch_size = 32;
    REQUIRE(ncf_model_create(&m, &c) == NCF_OK && ncf_model_set_ids(m, d) == NCF_OK);
    if (ncf_sampler_init(&smp, d, 1, 1) == NCF_OK) REQUIRE(ncf_train_epoch(m, &smp, 1, NULL, NULL, NULL) == NCF_OK);
    REQUIRE(ncf_save_mem(m, NCF_SAVE_ADAM, &buf, &len) == NCF_OK && ncf_load_mem(&back, buf, len) == NCF_OK);
    for (u = 0; u < d->num_users && u < 8; u++) {
        ncf_rec_opts o = ncf_rec_opts_default();
        int32_t a[3], b[3];
        float sa[3], sb[3];
        char ida[NCF_MAX_ID_BYTES + 1], idb[NCF_MAX_ID_BYTES + 1];
        int n;
        o.k = 3;
        n = ncf_recommend_index(m, u, &o, a, sa);
        REQUIRE(n == ncf_recommend_index(back, u, &o, b, sb));
        REQUIRE(n < 0 || (!memcmp(a, b, sizeof(int32_t) * (size_t)n) && !memcmp(sa, sb, sizeof(float) * (size_t)n)));
        REQUIRE(ncf_id(m, NCF_USER, u, ida, sizeof ida) > 0 && ncf_id(back, NCF_USER, u, idb, sizeof idb) > 0 &&
                !strcmp(ida, idb));
        REQUIRE(ncf_find(back, NCF_USER, ida) == u);
    }
    ncf_free(buf), ncf_model_free(m), ncf_model_free(back);
}
#endif

#if FUZZ_TARGET == 11
/* Each line of ids an id for the by-id calls; what they answer, the index forms answer too. */
static void serve_ids(const ncf_dataset *d, const uint8_t *ids, size_t size)
{
    ncf_config c = ncf_config_default();
    ncf_model *m = NULL;
    ncf_rec_opts o = ncf_rec_opts_default();
    char line[NCF_MAX_ID_BYTES + 2], out[4 * (NCF_MAX_ID_BYTES + 1)];
    const char *given[2];
    size_t at = 0;
    c.model = NCF_MF, c.num_users = d->num_users, c.num_items = d->num_items, c.mf_dim = 4;
    REQUIRE(ncf_model_create(&m, &c) == NCF_OK && ncf_model_set_ids(m, d) == NCF_OK);
    o.k = 4;
    while (at < size) {
        size_t n = 0;
        int u, i, r;
        int32_t top[4];
        float s1[4], s2[4];
        while (at < size && ids[at] != '\n' && n < sizeof line - 1) line[n++] = (char)ids[at++];
        at++, line[n] = 0;
        u = ncf_find(m, NCF_USER, line), i = ncf_find(m, NCF_ITEM, line);
        r = ncf_recommend_for_id(m, line, &o, out, sizeof out, s1);
        REQUIRE(u < 0 ? r < 0 : r == ncf_recommend_index(m, u, &o, top, s2) && !memcmp(s1, s2, 4 * (size_t)r));
        r = ncf_similar_to_id(m, line, &o, out, sizeof out, s1);
        REQUIRE(i < 0 ? r < 0 : r == ncf_similar(m, NCF_ITEM, i, &o, top, s2) && !memcmp(s1, s2, 4 * (size_t)r));
        given[0] = line, given[1] = line;
        r = ncf_recommend_for_items(m, given, 2, &o, NULL, out, sizeof out, s1);
        REQUIRE(i < 0 ? r < 0 : r >= 0 && r <= 4);
    }
    ncf_model_free(m);
}
#endif

#if FUZZ_TARGET == 10
/* A saved split from the input cut at form feeds: training, validation, test. */
static int load_saved(ncf_dataset *d, const uint8_t *data, size_t size)
{
    const char *buf[3];
    size_t len[3], at = 0;
    int k;
    for (k = 0; k < 3; k++) {
        const uint8_t *ff = at < size ? (const uint8_t *)memchr(data + at, '\f', size - at) : NULL;
        size_t end = k < 2 && ff ? (size_t)(ff - data) : size;
        buf[k] = at < size ? (const char *)data + at : "", len[k] = end > at ? end - at : 0;
        at = end < size ? end + 1 : size;
    }
    if (len[1] == 0) buf[1] = NULL; /* (no validation part) */
    memset(d, 0, sizeof *d);
    return ncf__build_saved(d, "saved", buf, len, &(ncf_dataset_opts){0});
}
#endif

#if FUZZ_TARGET == 5
/* The paper split: the input cut at form feeds into its three parts. */
static int load_split(ncf_dataset *d, const uint8_t *data, size_t size)
{
    static const char *names[3] = {"split.train.rating", "split.test.rating", "split.test.negative"};
    ncf__split_src src;
    size_t at = 0;
    int k;
    memset(&src, 0, sizeof src);
    for (k = 0; k < 3; k++) {
        const uint8_t *ff = at < size ? (const uint8_t *)memchr(data + at, '\f', size - at) : NULL;
        size_t end = k < 2 && ff ? (size_t)(ff - data) : size;
        src.name[k] = names[k];
        src.buf[k] = at < size ? (const char *)data + at : "", src.len[k] = end > at ? end - at : 0;
        at = end < size ? end + 1 : size;
    }
    memset(d, 0, sizeof *d);
    return ncf__load_split(d, "split", &src, 0, 1, NCF_HOLDOUT_LATEST);
}
#endif

static void fuzz_ratings(const uint8_t *data, size_t size)
{
    static const char *names[] = {"",    "", "ratings.dat", "ratings.csv", "u.data", "split",
                                  "log", "", "log",         "log",         "saved",  "log"};
    static const ncf_format formats[] = {0,
                                         0,
                                         NCF_FORMAT_DAT,
                                         NCF_FORMAT_CSV,
                                         NCF_FORMAT_TAB,
                                         NCF_FORMAT_NCF,
                                         NCF_FORMAT_AUTO,
                                         0,
                                         NCF_FORMAT_AUTO,
                                         NCF_FORMAT_AUTO,
                                         0,
                                         NCF_FORMAT_AUTO};
    ncf_dataset_opts o = ncf_dataset_opts_default();
    ncf_dataset d;
    size_t ids = size;
    int rc;
    o.format = formats[FUZZ_TARGET], o.min_ratings = 0, o.eval_negatives = 3;
    if (FUZZ_TARGET == 9 && size > 1) { /* ratio, time share or cut-off; the share or the cut-off */
        static const int kinds[4] = {NCF_HOLDOUT_RATIO, NCF_HOLDOUT_TIME, NCF_HOLDOUT_CUTOFF, NCF_HOLDOUT_RATIO};
        o.holdout = kinds[data[0] & 3], o.validation = (data[0] >> 2) & 1;
        o.holdout_fraction = (float)(data[1] % 100) / 100.0f; /* (0: refused, as the library refuses it) */
        o.holdout_cutoff = (int64_t)data[1] * 10 - 100;
        data += 2, size -= 2;
    }
    if ((FUZZ_TARGET == 6 || FUZZ_TARGET == 8) && size > 0) {
        o.holdout = data[0] & 3, o.validation = (data[0] >> 2) & 1;
        if (data[0] & 8) o.min_rating = 2.0f;
        o.weighting = (data[0] >> 4) & 3, o.alpha = data[0] & 64 ? 1e6f : 0.5f;
        if (o.weighting == 3) /* an event log's kinds weighed, the others dropped */
            o.weighting = NCF_WEIGHT_LOG, o.events = "view=1,addtocart=3,transaction=5,1,a=0";
        o.trim_ids = data[0] >> 7;
        data++, size--;
    }
    ids = size; /* (after every byte the options took) */
#if FUZZ_TARGET == 11
    {           /* the log up to a form feed; the ids after it */
        const uint8_t *ff = (const uint8_t *)memchr(data, '\f', size);
        ids = ff ? (size_t)(ff - data) : size;
    }
#endif
#if FUZZ_TARGET == 10
    (void)names, (void)ids;
    rc = load_saved(&d, data, size);
#else
#if FUZZ_TARGET == 5
    (void)names, (void)ids;
    rc = load_split(&d, data, size);
#else
    rc = ncf_load_dataset_mem(&d, names[FUZZ_TARGET], data, ids, &o);
#endif
#endif
    if (rc == NCF_OK) {
        check_dataset(&d);
#if FUZZ_TARGET == 8
        round_trip(&d);
#elif FUZZ_TARGET == 11
        if (ids < size) serve_ids(&d, data + ids + 1, size - ids - 1);
#endif
        ncf_dataset_free(&d);
    } else {
        REQUIRE(ncf_error_text()[0] != 0 && d.user_ptr == NULL);
    }
}
#endif

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    ncf_set_threads(1);
#if FUZZ_TARGET == 1
    fuzz_model(data, size);
#elif FUZZ_TARGET == 7
    fuzz_verified(data, size);
#else
    fuzz_ratings(data, size);
#endif
    return 0;
}
