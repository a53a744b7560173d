/* tests/test_dataset.c - datasets: eval negatives, synthetic data, the real MovieLens sizes. Included by tests.c (one program). */
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
