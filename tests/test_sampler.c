/* tests/test_sampler.c - the sampler: positives once, uniform unrated negatives, the keyed permutation. Included by tests.c (one program). */
/* ---- >>sampler: training examples: each positive once, negatives uniform and unrated --------- */

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
