/* tests/small.c - make bench-small's program: scoring a small model, the paper's NeuMF over
   an ml-1m-sized synthetic log (6,040 users, 3,706 items), on one thread: a known user's
   top 10 (median of 15 rounds of 400 calls) and a full-ranking evaluation of every user
   (median of 3), as the tail of a JSON line. Public calls only, so that it builds against
   this ncf.h and, with BASE=REV, against REV's (-I). */
#define _POSIX_C_SOURCE 200809L
#define NCF_IMPLEMENTATION
#include "ncf.h"
#include "compat.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static double median(double *v, int n)
{
    int i, j;
    for (i = 1; i < n; i++)
        for (j = i; j > 0 && v[j - 1] > v[j]; j--) {
            double t = v[j];
            v[j] = v[j - 1], v[j - 1] = t;
        }
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

int main(void)
{
    enum { ROUNDS = 15, CALLS = 400 };
    ncf_dataset d;
    ncf_model *m = NULL;
    ncf_config c = ncf_config_default();
    ncf_rec_opts o = ncf_rec_opts_default();
    ncf_eval_opts e = ncf_eval_opts_default();
    ncf_metrics x;
    double top[ROUNDS], full[3], macs = 0;
    int32_t items[10];
    int r, k, l;
    if (ncf_synthetic(&d, 6040, 3706, 1000209, 16, 1) != NCF_OK || ncf_sample_eval_negatives(&d, 99, 1) != NCF_OK)
        return fprintf(stderr, "%s\n", ncf_error_text()), 1;
    c.num_users = d.num_users, c.num_items = d.num_items;
    if (ncf_model_create(&m, &c) != NCF_OK || ncf_model_set_ids(m, &d) != NCF_OK)
        return fprintf(stderr, "%s\n", ncf_error_text()), 1;
    ncf_set_threads(1);
    for (r = 0; r < ROUNDS; r++) {
        double t0 = now_s();
        for (k = 0; k < CALLS; k++)
            if (ncf_recommend_index(m, (int)(((uint64_t)(r * CALLS + k) * 2654435761u) % (uint64_t)d.num_users), &o,
                                    items, NULL) != 10)
                return fprintf(stderr, "%s\n", ncf_error_text()), 1;
        top[r] = (now_s() - t0) / CALLS;
    }
    e.full_ranking = 1;
    for (r = 0; r < 3; r++) {
        double t0 = now_s();
        if (ncf_evaluate(m, &d, &e, &x) != NCF_OK) return fprintf(stderr, "%s\n", ncf_error_text()), 1;
        full[r] = now_s() - t0;
    }
    /* A score's multiply-adds with the first layer split: the layers above it, the GMF
       product and the output layer (the items' half of the first is computed once). */
    for (l = 2; l < c.num_layers; l++) macs += (double)c.layers[l - 1] * c.layers[l];
    macs += c.mf_dim + c.layers[c.num_layers - 1];
    printf("\"users\":%d,\"items\":%d,\"score_flop\":%.0f,\"top10_ms\":%.4f,\"full_rank_s\":%.3f}\n", d.num_users,
           d.num_items, 2 * macs, 1e3 * median(top, ROUNDS), median(full, 3));
    ncf_model_free(m), ncf_dataset_free(&d);
    return 0;
}
