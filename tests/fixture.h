/* tests/fixture.h - model files and the answers they give, written by the full build on this
   machine and checked by any other: the NCF_INFERENCE_ONLY build, the aarch64, armhf and
   big-endian s390x builds under qemu (make cross), the Windows build under wine (make
   windows). Other CPUs round differently, so scores agree to 1e-5, not bit for bit. */
#ifndef NCF_TESTS_FIXTURE_H
#define NCF_TESTS_FIXTURE_H

static const char *FIXTURE_MODELS[2] = {"neumf.ncf", "mf.ncf"};
#define FIXTURE_USERS 12
#define FIXTURE_K 10

SHARED int close_enough(float a, float b) { return fabsf(a - b) <= 1e-5f * (1.0f + fabsf(b)); }

SHARED void check_fixture(const char *dir)
{
    char path[512], word[16];
    FILE *f;
    int k, loaded = 0, checked = 0;
    ncf_model *m[2] = {NULL, NULL};
    CHECKF(strlen(dir) < 400, "%s: the fixture's folder path is too long", dir);
    if (strlen(dir) >= 400) return;
    for (k = 0; k < 2; k++) {
        snprintf(path, sizeof path, "%s/%s", dir, FIXTURE_MODELS[k]); /* (fits: dir checked above) */
        CHECKF(ncf_load(&m[k], path) == NCF_OK, "%s", ncf_error_text());
        loaded += m[k] != NULL;
    }
    snprintf(path, sizeof path, "%s/expect.txt", dir); /* (fits: dir checked above) */
    f = fopen(path, "r");
    CHECKF(f != NULL, "cannot read %s", path);
    while (f && loaded == 2 && fscanf(f, "%15s", word) == 1) {
        long long user, item, items[FIXTURE_K];
        int which, n, j;
        float want, got = 0, scores[FIXTURE_K], wscore;
        if (!strcmp(word, "predict") && fscanf(f, "%d %lld %lld %a", &which, &user, &item, &want) == 4) {
            CHECK(ncf_predict(m[which], user, item, &got) == NCF_OK);
            CHECKF(close_enough(got, want), "model %d predict(%lld, %lld) = %.9g, expected %.9g", which, user, item,
                   got, want);
        } else if (!strcmp(word, "recommend") && fscanf(f, "%d %lld", &which, &user) == 2) {
            n = recommend_k(m[which], user, FIXTURE_K, 1, (int64_t *)items, scores);
            CHECK(n == FIXTURE_K && sizeof(int64_t) == sizeof(long long));
            for (j = 0; j < FIXTURE_K; j++) {
                CHECK(fscanf(f, "%lld %a", &item, &wscore) == 2);
                /* the same item, or a near tie that rounding may order either way */
                CHECKF(
                    n == FIXTURE_K &&
                        (items[j] == item ? close_enough(scores[j], wscore) : close_enough(scores[j], wscore) && j > 0),
                    "model %d user %lld rank %d: item %lld (%.9g), expected %lld (%.9g)", which, user, j,
                    (long long)items[j], scores[j], item, wscore);
            }
        } else {
            CHECKF(0, "%s: unreadable line starting '%s'", path, word);
            break;
        }
        checked++;
    }
    if (f) fclose(f);
    CHECKF(checked >= 4 * FIXTURE_USERS, "only %d answers checked", checked);
    printf("    %d answers of 2 models agree\n", checked);
    ncf_model_free(m[0]), ncf_model_free(m[1]);
}

#ifndef NCF_INFERENCE_ONLY
/* The items' side features of the MF fixture: two a synthetic item, and a new item, 900001,
   only here (added from its features: a format 5 file every build reads in place or copies). */
static int fixture_features(const ncf_dataset *d, ncf_features *f)
{
    size_t at = 0, size = (size_t)d->num_items * 32 + 64;
    char *text = (char *)malloc(size);
    int i, rc;
    if (!text) return NCF_ERR_NOMEM;
    at += (size_t)snprintf(text, size, "item,tags\n");
    for (i = 0; i < d->num_items; i++)
        at += (size_t)snprintf(text + at, size - at, "%lld,c%d|d%d\n", (long long)d->raw_item[i], i % 7, i % 3);
    at += (size_t)snprintf(text + at, size - at, "900001,c1|d2\n");
    rc = ncf_load_features_mem(f, "fixture items", text, at, NULL);
    free(text);
    return rc;
}

/* The fixture check_fixture reads: a NeuMF (saved with its Adam state) and an MF with item
   features and a new item added from them. */
SHARED int write_fixture(const char *dir)
{
    ncf_dataset d;
    ncf_sampler s;
    ncf_model *m[2] = {NULL, NULL};
    ncf_config c = ncf_config_default();
    ncf_features feats;
    char path[512];
    FILE *f;
    int k, u, j, e, ok = strlen(dir) < 400; /* (every path below fits) */
    if (ncf_synthetic(&d, 300, 200, 6000, 6, 17) != NCF_OK) return 0;
    if (fixture_features(&d, &feats) != NCF_OK) {
        ncf_dataset_free(&d);
        return 0;
    }
    c.num_users = d.num_users, c.num_items = d.num_items, c.batch_size = 128, c.seed = 17;
    for (k = 0; k < 2 && ok; k++) {
        c.model = k ? NCF_MF : NCF_NEUMF, c.mf_dim = k ? 12 : 8, c.init_sd = k ? 0.1f : 0.01f;
        ok = ncf_model_create(&m[k], &c) == NCF_OK && ncf_sampler_init(&s, &d, 4, 17) == NCF_OK &&
            ncf_model_set_ids(m[k], &d) == NCF_OK;
        ok = ok && (!k || ncf_model_set_features(m[k], NCF_ITEM, &feats, &d, 0, 1.0f) == NCF_OK);
        for (e = 1; e <= 2 && ok; e++) ok = ncf_train_epoch(m[k], &s, e, NULL, NULL, NULL) == NCF_OK;
        ok = ok && (!k || ncf_model_add_features(&m[k], NCF_ITEM, &feats, NULL) == NCF_OK);
        snprintf(path, sizeof path, "%s/%s", dir, FIXTURE_MODELS[k]); /* (fits: dir checked above) */
        ok = ok && ncf_save(m[k], path, k == 0) == NCF_OK;
    }
    snprintf(path, sizeof path, "%s/expect.txt", dir); /* (fits: dir checked above) */
    f = ok ? fopen(path, "w") : NULL;
    for (k = 0; k < 2 && f; k++)
        for (u = 0; u < FIXTURE_USERS; u++) {
            int64_t user = d.raw_user[(u * 37) % d.num_users], items[FIXTURE_K];
            float sc[FIXTURE_K], z = 0;
            for (j = 0; j < 4; j++) { /* (the MF's fourth: its new item) */
                int64_t item = j == 3 ? 900001 : d.raw_item[(u * 11 + j * 53) % d.num_items];
                if (j == 3 && !k) break;
                ok &= ncf_predict(m[k], user, item, &z) == NCF_OK;
                fprintf(f, "predict %d %lld %lld %a\n", k, (long long)user, (long long)item, z);
            }
            ok &= recommend_k(m[k], user, FIXTURE_K, 1, items, sc) == FIXTURE_K;
            fprintf(f, "recommend %d %lld", k, (long long)user);
            for (j = 0; j < FIXTURE_K; j++) fprintf(f, " %lld %a", (long long)items[j], sc[j]);
            fprintf(f, "\n");
        }
    ok = ok && f && fclose(f) == 0;
    if (!ok) printf("cannot write the fixture in %s: %s\n", dir, ncf_error_text());
    ncf_model_free(m[0]), ncf_model_free(m[1]);
    ncf_dataset_free(&d), ncf_features_free(&feats);
    return ok;
}
#endif

#endif
