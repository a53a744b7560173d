/* tests/peer_split.c - writes the split the demo searches on, in the NCF paper's layout, for
   other libraries to be tuned and scored on the same candidates (tests/peers.sh).

     peer_split DATA PREFIX [USER_COL ITEM_COL RATING_COL MIN_RATINGS HOLDOUT [SEED]]

   DATA is read as `./demo --data DATA --tune` reads it ("-" keeps a column's or option's
   default; HOLDOUT is auto, latest or random; SEED 1). Two splits in the paper's layout
   ("user<TAB>item<TAB>1<TAB>0" a positive; "(user,item)<TAB>n1<TAB>n2..." a user's
   negatives), ids being the dataset's indices:
     PREFIX.val.*  training without validation or test items; each user's validation item and
                   its candidates: what a search chooses on
     PREFIX.*      training with the validation items put back (what the search's winner
                   trains on); each user's test item and its candidates.
   (ncf_save_split writes a split's positives by id, to be ranked in full; the peers here are
   ranked among the same sampled candidates, so this writes those too.) */
#define NCF_IMPLEMENTATION
#include "ncf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *arg(int argc, char **argv, int i) { return i < argc && strcmp(argv[i], "-") != 0 ? argv[i] : NULL; }

static FILE *open_out(const char *prefix, const char *part, const char *ext)
{
    char path[4096];
    FILE *f;
    snprintf(path, sizeof path, "%s%s.%s", prefix, part, ext);
    f = fopen(path, "w");
    if (!f) fprintf(stderr, "peer_split: cannot write %s\n", path);
    return f;
}

/* One split: training (with the validation items when with_val), and each user's held-out item
   (val_item or test_item) with its row of negatives. */
static int write_split(const ncf_dataset *d, const char *prefix, const char *part, int held_is_val, int with_val)
{
    const int32_t *held = held_is_val ? d->val_item : d->test_item;
    const int32_t *neg = held_is_val ? d->val_neg : d->eval_neg;
    int nn = held_is_val ? d->num_val_neg : d->num_eval_neg, u, j, ok;
    FILE *tr = open_out(prefix, part, "train.rating"), *te = open_out(prefix, part, "test.rating"),
         *ng = open_out(prefix, part, "test.negative");
    ok = tr && te && ng;
    for (u = 0; ok && u < d->num_users; u++) {
        int64_t p;
        for (p = d->user_ptr[u]; p < d->user_ptr[u + 1]; p++) fprintf(tr, "%d\t%d\t1\t0\n", u, d->items[p]);
        if (with_val && d->val_item[u] >= 0) fprintf(tr, "%d\t%d\t1\t0\n", u, d->val_item[u]);
        if (held[u] < 0) continue;
        fprintf(te, "%d\t%d\t1\t0\n", u, held[u]);
        fprintf(ng, "(%d,%d)", u, held[u]);
        for (j = 0; j < nn; j++) fprintf(ng, "\t%d", neg[(int64_t)u * nn + j]);
        fputc('\n', ng);
    }
    if (tr && fclose(tr) != 0) ok = 0;
    if (te && fclose(te) != 0) ok = 0;
    if (ng && fclose(ng) != 0) ok = 0;
    if (!ok) fprintf(stderr, "peer_split: writing %s%s failed\n", prefix, part);
    return ok;
}

int main(int argc, char **argv)
{
    ncf_dataset d;
    ncf_dataset_opts o = ncf_dataset_opts_default();
    const char *h = arg(argc, argv, 7), *m = arg(argc, argv, 6), *s = arg(argc, argv, 8);
    int ok;
    if (argc < 3) {
        fprintf(stderr, "usage: peer_split DATA PREFIX [USER_COL ITEM_COL RATING_COL MIN_RATINGS HOLDOUT [SEED]]\n");
        return 2;
    }
    o.columns[NCF_COL_USER] = arg(argc, argv, 3);
    o.columns[NCF_COL_ITEM] = arg(argc, argv, 4);
    o.columns[NCF_COL_RATING] = arg(argc, argv, 5);
    o.min_ratings = m ? atoi(m) : 0;
    o.seed = s ? strtoull(s, NULL, 10) : 1; /* the demo's default seed */
    o.validation = 1;
    if (h && strcmp(h, "auto") != 0) {
        if (strcmp(h, "latest") != 0 && strcmp(h, "random") != 0) {
            fprintf(stderr, "peer_split: HOLDOUT is auto, latest or random, not '%s'\n", h);
            return 2;
        }
        o.holdout = h[0] == 'l' ? NCF_HOLDOUT_LATEST : NCF_HOLDOUT_RANDOM;
    }
    if (ncf_load_dataset(&d, argv[1], &o) != NCF_OK) {
        fprintf(stderr, "peer_split: %s\n", ncf_error_text());
        return 1;
    }
    if (!d.val_item || d.test_ptr) {
        fprintf(stderr, "peer_split: %s is not a split of one test and one validation item a user\n", argv[1]);
        ncf_dataset_free(&d);
        return 1;
    }
    ok = write_split(&d, argv[2], ".val", 1, 0) && write_split(&d, argv[2], "", 0, 1);
    printf("peer_split: %s: %d users, %d items, %lld training positives, %d + %d candidates\n", argv[1], d.num_users,
           d.num_items, (long long)d.num_train, 1, d.num_eval_neg);
    ncf_dataset_free(&d);
    return ok ? 0 : 1;
}
