/* demo.c - train and evaluate NeuMF with ncf.h, flags named as TF's ncf_main.

     make demo && ./demo                                  built-in synthetic data
     ./demo --data ml-1m/ratings.dat                      MovieLens as downloaded
     ./demo --data ml-1m-ncf/ml-1m                        the NCF paper's split
     ./demo --data plays.tsv --holdout none --save m.ncf  your own log, the model to ship
     ./demo --help                                        every flag
*/
#ifndef _WIN32
#define _POSIX_C_SOURCE 200809L /* NOLINT(bugprone-reserved-identifier): a feature-test macro */
#endif
#define NCF_IMPLEMENTATION
#include "ncf.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#ifndef S_ISBLK
#define S_ISBLK(m) 0 /* (no block devices: Windows) */
#endif
#ifdef _WIN32 /* MinGW (make windows) */
#include <io.h>
#include <windows.h>
#define isatty _isatty
#else
#include <sys/statvfs.h>
#include <unistd.h>
#endif

/* demo-mpi (make demo-mpi): the same program over MPI ranks; rank 0 prints and writes files. */
#ifdef NCF_MPI
static int g_rank, g_ranks = 1;
#define ON_ROOT (g_rank == 0)
#else
#define ON_ROOT 1
#endif

/* Whether ok holds on every rank (demo-mpi: every rank takes the same branch after). */
static int all_ok(int ok)
{
#ifdef NCF_MPI
    int all = ok;
    MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    return all;
#else
    return ok;
#endif
}

typedef struct {
    const char *dataset, *data_dir, *data, *log, *plot, *save, *save_best, *load, *pretrain_gmf, *pretrain_mlp;
    double alpha;
    ncf_config cfg;
    int train_epochs, epochs_between_evals, eval_negatives, full_ranking, threads, hash_pipeline, validation, int8;
    int full_users;
    int min_ratings, top_k, syn_users, syn_items, checkpoint_every, recommend_k;
    const char *recommend_user; /* ids as the data writes them, comma-separated */
    const char *recommend_all, *recommend_for, *similar, *allow, *deny, *export_c;
    const char *recommend_file, *recommend_for_file; /* one id a line */
    const char *similar_users, *item_for;            /* a user id; a new item's users, comma-separated */
    const char *export_embeddings;                   /* PREFIX of the vectors' .npy and .csv files */
    const char *item_names;                          /* FILE of an id and a name a line */
    const char *save_split;                          /* PREFIX of the split's .tsv files */
    const char *features[2], *feature_cols[2];       /* --user_features, --item_features and their columns */
    int features_only;                               /* bit 1 users, 2 items */
    int probabilities, data_given, keep_missing, patience, skip_held_out, by_positive, lr_decay, save_state;
    int file_alone; /* --load FILE without data or --train_epochs: served, exported or described */
    int shards;     /* --shards (demo-mpi): each rank holds its users' rows only */
    int output;     /* the answers' form: OUT_TEXT, OUT_CSV, OUT_JSON */
    long long syn_ratings;
    double hr_threshold;
    int tune;                    /* --tune: search the settings */
    int tune_all;                /* --tune --holdout none: its winner then trained on every interaction */
    double tune_seconds;         /* its budget; 0: from the data's size */
    int tune_seeds;              /* --tune_seeds: the seeds an MF or GMF winner is averaged over */
    int seeds;                   /* --seeds: MF or GMF models from seeds --seed.. trained and averaged */
    ncf_dataset_opts load_opts;  /* --format, --sep, --header, the columns, --min_rating, --holdout */
    int ks[NCF_MAX_KS], nks;     /* --top_k's cut-offs (top_k: the first) */
    int select_metric, select_k; /* --select: what chooses the epoch (NCF_METRIC_*, at K; 0: top_k) */
    int eval_mode;               /* --eval: EVAL_AUTO, EVAL_NONE, EVAL_SAMPLED */
    int many;                    /* the data holds many items a user out (set once loaded) */
} options;

enum { EVAL_AUTO = 0, EVAL_NONE, EVAL_SAMPLED, EVAL_FULL };

/* The place in --top_k of the cut-off that chooses (--select). */
static int select_at(const options *o)
{
    int j;
    for (j = 0; j < o->nks; j++)
        if (o->ks[j] == (o->select_k ? o->select_k : o->ks[0])) return j;
    return 0;
}

static double now(void)
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

static int bad_value(const char *flag, const char *v, const char *want)
{
    fprintf(stderr, "demo: %s: '%s' is not %s (see --help)\n", flag, v ? v : "", want);
    return 0;
}

static int parse_int(const char *flag, const char *v, long long lo, long long hi, long long *out)
{
    char *end;
    long long x;
    errno = 0;
    x = v ? strtoll(v, &end, 10) : 0;
    if (!v || !*v || *end || errno || x < lo || x > hi) {
        char want[96];
        snprintf(want, sizeof want, "an integer in [%lld, %lld]", lo, hi);
        return bad_value(flag, v, want);
    }
    *out = x;
    return 1;
}

static int parse_float(const char *flag, const char *v, double lo, double hi, double *out)
{
    char *end;
    double x;
    errno = 0;
    x = v ? strtod(v, &end) : 0;
    if (!v || !*v || *end || errno || !(x >= lo && x <= hi)) {
        char want[96];
        snprintf(want, sizeof want, "a number in [%g, %g]", lo, hi);
        return bad_value(flag, v, want);
    }
    *out = x;
    return 1;
}

/* "64,32,16,8" -> ints or floats; returns the count or 0. */
static int parse_list(const char *flag, const char *v, int max, int *ints, float *floats)
{
    int n = 0;
    const char *p = v;
    if (!v || !*v) return bad_value(flag, v, "a comma-separated list");
    while (*p) {
        char *end;
        errno = 0;
        if (n == max) return bad_value(flag, v, "a list that short");
        if (ints) {
            long x = strtol(p, &end, 10);
            if (end == p || x <= 0 || x > 65536) return bad_value(flag, v, "a list of positive sizes");
            ints[n++] = (int)x;
        } else {
            double x = strtod(p, &end);
            if (end == p || !(x >= 0 && x <= 1e6)) return bad_value(flag, v, "a list of numbers from 0 to 1e6");
            floats[n++] = (float)x;
        }
        if (*end == ',') end++;
        else if (*end) return bad_value(flag, v, "a comma-separated list");
        p = end;
    }
    return n;
}

/* ---- flags: one table gives their names, which take a value, and --help ---- */

/* clang-format off */
typedef enum {
    F_SECTION, F_HELP, F_VERSION,
    /* data */
    F_DATA, F_DATA_DIR, F_DATASET, F_SYN_USERS, F_SYN_ITEMS, F_SYN_RATINGS, F_FORMAT, F_SEP, F_HEADER, F_USER_COL,
    F_ITEM_COL, F_RATING_COL, F_TIME_COL, F_MIN_RATING, F_MIN_RATINGS, F_MIN_ITEM_RATINGS, F_KCORE, F_TRIM_IDS,
    F_WEIGHT_COL, F_WEIGHTING, F_WEIGHT_ALPHA, F_EVENT_COL, F_EVENTS, F_HOLDOUT, F_SAVE_SPLIT, F_EVAL_NEGATIVES,
    F_ITEM_FEATURES, F_USER_FEATURES, F_ITEM_FEATURE_COLS, F_USER_FEATURE_COLS, F_FEATURES_ONLY,
    /* the model */
    F_MODEL, F_NUM_FACTORS, F_LAYERS, F_MF_REG, F_MLP_REG, F_INIT_SD, F_PRETRAIN_GMF, F_PRETRAIN_MLP, F_ALPHA,
    /* training */
    F_BATCH_SIZE, F_EVAL_BATCH_SIZE, F_LEARNING_RATE, F_LR_DECAY, F_BETA1, F_BETA2, F_EPSILON, F_OPTIMIZER, F_UNOBSERVED,
    F_ADAM, F_NUM_NEG, F_TRAIN_EPOCHS, F_EPOCHS_BETWEEN_EVALS, F_HR_THRESHOLD, F_ML_PERF, F_SEED, F_SEEDS, F_THREADS,
    /* evaluation and choice */
    F_TOP_K, F_SELECT, F_EVAL, F_VALIDATION, F_NO_VALIDATION, F_PATIENCE, F_TUNE, F_TUNE_SEEDS, F_SKIP_HELD_OUT, F_SHUFFLE, F_FULL_RANKING,
    F_FULL_USERS, F_HASH_PIPELINE, F_LOG, F_PLOT,
    /* serving */
    F_RECOMMEND, F_RECOMMEND_K, F_TOPK, F_RECOMMEND_ALL, F_RECOMMEND_FOR, F_RECOMMEND_FILE, F_RECOMMEND_FOR_FILE,
    F_SIMILAR, F_SIMILAR_USERS, F_ITEM_FOR, F_ALLOW, F_DENY, F_ITEM_NAMES, F_PROBABILITIES, F_OUTPUT,
    /* model files */
    F_SAVE, F_SAVE_STATE, F_INT8, F_CHECKPOINT_EVERY, F_SAVE_BEST, F_EXPORT_C, F_EXPORT_EMBEDDINGS, F_LOAD, F_KEEP_MISSING,
    F_SHARDS
} flag_id;

typedef struct {
    flag_id id;
    const char *name;  /* "--data"; for F_SECTION the section's title */
    const char *value; /* what it takes ("PATH"); NULL: a switch */
    const char *help;  /* one or more lines */
} flag_def;

static const flag_def FLAGS[] = {
    {F_SECTION, "data:", NULL, NULL},
    {F_DATA, "--data", "PATH", "ratings.dat (ml-1m, ml-10m), ratings.csv (ml-20m), u.data (ml-100k), any delimited\n"
                               "log, or PREFIX of the NCF paper split (PREFIX.train.rating ...)"},
    {F_DATA_DIR, "--data_dir", "DIR", "with --dataset NAME: DIR/NAME/ratings.dat|ratings.csv|u.data, or DIR/NAME.train.rating"},
    {F_DATASET, "--dataset", "NAME", "synthetic (built-in data, the default) or a folder of --data_dir"},
    {F_SYN_USERS, "--synthetic_users", "N", "the built-in data's users (default %D)"},
    {F_SYN_ITEMS, "--synthetic_items", "N", "its items (default %D)"},
    {F_SYN_RATINGS, "--synthetic_ratings", "N", "its interactions (default %D)"},
    {F_FORMAT, "--format", "auto|dat|csv|tab|ncf", "how to read --data (default auto: the paper split by its names,\n"
                                                  "else any delimited log, its separator, header and columns found)"},
    {F_SEP, "--sep", "S", "the field separator: , ; tab | :: or space (runs of blanks)"},
    {F_HEADER, "--header", "yes|no|auto", "whether the first line names the columns (default: found)"},
    {F_USER_COL, "--user_col", "C", "the user column: a header name (case and punctuation ignored) or 1-based number"},
    {F_ITEM_COL, "--item_col", "C", "the item column"},
    {F_RATING_COL, "--rating_col", "C", "the rating column; '' for none"},
    {F_TIME_COL, "--time_col", "C", "the timestamp column; '' for none"},
    {F_MIN_RATING, "--min_rating", "X", "only interactions rated at least X are positives (default: all)"},
    {F_MIN_RATINGS, "--min_ratings", "N", "drop users with fewer positives (default %D: keep all)"},
    {F_MIN_ITEM_RATINGS, "--min_item_ratings", "N", "drop items with fewer positives from the users kept (default %D)"},
    {F_KCORE, "--kcore", NULL, "repeat both filters until every user and item has its minimum (a k-core)"},
    {F_TRIM_IDS, "--trim_ids", NULL, "drop blanks around unquoted ids in the data and in ids given to serve\n"
                                     "(default: an id is its bytes as written, blanks included)"},
    {F_WEIGHT_COL, "--weight_col", "C", "the strength column (play counts, hours, clicks; default: the rating column)"},
    {F_WEIGHTING, "--weighting", "none|linear|log", "each positive's loss term weighs 1 + alpha*s (linear) or\n"
                                                     "1 + alpha*log(1 + s) (log), s the sum of its lines' strengths\n"
                                                     "(default none: every positive weighs 1)"},
    {F_WEIGHT_ALPHA, "--weight_alpha", "X", "the alpha of --weighting (default %D)"},
    {F_EVENT_COL, "--event_col", "C", "the event column (default: a header named event, action, behavior, ...)"},
    {F_EVENTS, "--events", "KIND=X[,KIND=X]", "an event log's kinds and each one's strength: view=1,addtocart=3,\n"
                                             "transaction=5 (a kind without =X: 1). Only the kinds listed are\n"
                                             "positives; a pair's strengths sum; --weighting log unless given"},
    {F_HOLDOUT, "--holdout", "latest|random|none|ratio:F|time:F|time:@T|items:F",
     "each user's test item: the latest by timestamp, one drawn by the seed,\n"
     "or none (train on everything: the model to ship). Default: latest\n"
     "with a timestamp column, else random. Many items a user: ratio:0.2\n"
     "holds out a fifth of each user's positives (the latest, or drawn by\n"
     "the seed without timestamps); time:0.1 the last tenth of the log by\n"
     "timestamp; time:@T those at or after timestamp T. These are ranked in\n"
     "full, with Recall, Precision, NDCG and MAP at each --top_k. Cold\n"
     "start: items:0.2 holds a fifth of the items out whole (validation as\n"
     "much of the rest), ranked among all items and among the unseen ones"},
    {F_SAVE_SPLIT, "--save_split", "PREFIX", "write the split's lines, ids as written: PREFIX.train.tsv,\n"
                                             "PREFIX.validation.tsv and PREFIX.test.tsv (score another library on\n"
                                             "them; --data PREFIX reads them back, ranked in full)"},
    {F_EVAL_NEGATIVES, "--eval_negatives", "N", "sampled negatives per test user (default: the split's file, else 99;\n"
                                                "999 with --ml_perf)"},
    {F_ITEM_FEATURES, "--item_features", "FILE", "items' side features (genres, tags, authors): an id and a column of\n"
                                                 "tokens (Action|Comedy), or id, feature[, weight] rows; each item's\n"
                                                 "vector is its id's plus its features' mean; items only here are new\n"
                                                 "ones, added to the model from their features (docs/features.md)"},
    {F_USER_FEATURES, "--user_features", "FILE", "users' side features, the same way"},
    {F_ITEM_FEATURE_COLS, "--item_feature_cols", "ID,COL...", "the columns of --item_features: the id, then the feature\n"
                                                              "columns (numbers, ranges 6-24 or header names; several:\n"
                                                              "flags 0/1 or name=value), weight:W (default: by header)"},
    {F_USER_FEATURE_COLS, "--user_feature_cols", "ID,COL...", "the same for --user_features"},
    {F_FEATURES_ONLY, "--features_only", "items|users|both", "no id embedding on that side: its vectors are its features'"},
    {F_SECTION, "model:", NULL, NULL},
    {F_MODEL, "--model", "neumf|gmf|mlp|mf", "(default neumf; mf: biases + dot product, Rendle et al. 2020)"},
    {F_NUM_FACTORS, "--num_factors", "N", "GMF (MF) embedding size (default %D)"},
    {F_LAYERS, "--layers", "A,B,C,...", "MLP sizes; the first is the user+item embedding (default %D)"},
    {F_MF_REG, "--mf_regularization", "X", "L2 on GMF embeddings, MF embeddings and biases (default %D)"},
    {F_MLP_REG, "--mlp_regularization", "A,B,...", "L2 per MLP layer, the first on its embeddings (default %D)"},
    {F_INIT_SD, "--init_sd", "X", "embeddings start N(0, X) (default %D)"},
    {F_PRETRAIN_GMF, "--pretrain_gmf", "FILE", "with --pretrain_mlp FILE: start NeuMF from a GMF and an MLP saved\n"
                                              "with --model gmf|mlp --save FILE (their factors and layers win)"},
    {F_PRETRAIN_MLP, "--pretrain_mlp", "FILE", "the MLP of --pretrain_gmf"},
    {F_ALPHA, "--alpha", "X", "output layer alpha*GMF + (1-alpha)*MLP when pre-trained (default %D)"},
    {F_SECTION, "training:", NULL, NULL},
    {F_BATCH_SIZE, "--batch_size", "N", "(default %D)"},
    {F_EVAL_BATCH_SIZE, "--eval_batch_size", "N", "accepted, unused: evaluation goes by user"},
    {F_LEARNING_RATE, "--learning_rate", "X", "(default %D)"},
    {F_BETA1, "--beta1", "X", "Adam's beta1 (default %D)"},
    {F_BETA2, "--beta2", "X", "Adam's beta2 (default %D)"},
    {F_EPSILON, "--epsilon", "X", "Adam's epsilon (default %D)"},
    {F_OPTIMIZER, "--optimizer", "adam|sgd|als", "(default adam; the paper fine-tunes a pre-trained NeuMF with sgd;\n"
                                                 "sgd with --batch_size 1 and --model mf is Rendle et al.'s recipe;\n"
                                                 "als (--model mf): the whole matrix by alternating least squares,\n"
                                                 "no negatives or learning rate: a few epochs, each a few seconds)"},
    {F_UNOBSERVED, "--unobserved", "X", "als: the weight of a cell without a positive, a positive's being its\n"
                                        "confidence, 1 unweighted (default %D)"},
    {F_LR_DECAY, "--lr_decay", NULL, "the learning rate falls linearly over --train_epochs, to 1/N of it in\n"
                                    "the last (SGD's annealing: 20-40 epochs do what 256 do at a constant rate)"},
    {F_ADAM, "--adam", "lazy|dense", "embedding moments: touched rows only, or every row as TF (default lazy)"},
    {F_NUM_NEG, "--num_neg", "N", "negatives per positive (default %D)"},
    {F_TRAIN_EPOCHS, "--train_epochs", "N", "(default %D; 0 evaluates the initial model and stops)"},
    {F_EPOCHS_BETWEEN_EVALS, "--epochs_between_evals", "N", "(default %D)"},
    {F_HR_THRESHOLD, "--hr_threshold", "X", "stop once HR >= X (default: never)"},
    {F_ML_PERF, "--ml_perf", NULL, "MLPerf preset: factors 64, layers 256,256,128,64, batch 2048, lr 0.0005,\n"
                                   "999 eval negatives"},
    {F_SEED, "--seed", "N", "(default %D)"},
    {F_SEEDS, "--seeds", "N", "MF or GMF: train N models, from seeds --seed to --seed + N - 1, in step\n"
                             "(SGD one example a step: two at a time, a thread each), and evaluate,\n"
                             "choose and save their average, whose scores are their mean: better than\n"
                             "one model for N times the training (default %D; docs/tuning.md)"},
    {F_THREADS, "--threads", "N", "(default: all cores)"},
    {F_SECTION, "output:", NULL, NULL},
    {F_TOP_K, "--top_k", "K[,K...]", "the figures' cut-offs, up to 8 (default %D)"},
    {F_SELECT, "--select", "METRIC@K", "what chooses the epoch, --patience and --tune: hr, ndcg, mrr, recall,\n"
                                       "precision or map at K, one of --top_k (default: hr at the first --top_k\n"
                                       "for one item a user, ndcg for many)"},
    {F_EVAL, "--eval", "auto|full|sampled|none", "auto: at each epoch what chooses (validation: sampled, or full ranking\n"
                                                 "with --full_ranking or many items a user, over a fixed sample of\n"
                                                 "users its cost keeps near the epoch's training) and the sampled test\n"
                                                 "figures; the test's full ranking once, at the chosen epoch. full:\n"
                                                 "every figure at every epoch. sampled: no full ranking (one item a\n"
                                                 "user). none: no evaluation, the last epoch saved. Default auto"},
    {F_VALIDATION, "--validation", NULL, "(the default) hold out a validation item per user with two or more\n"
                                         "(the second latest rating, or one drawn by the seed where the file has\n"
                                         "no timestamps) with its own negatives: the epoch, --patience,\n"
                                         "--hr_threshold, --save and --save_best follow it, and the test figures\n"
                                         "reported at the end are those of the epoch it chose"},
    {F_NO_VALIDATION, "--no_validation", NULL, "no validation set: nothing is chosen, the last epoch is reported and saved"},
    {F_PATIENCE, "--patience", "N", "stop after N evaluations without a validation gain (default %D: never;\n"
                                    "3 within each run of --tune)"},
    {F_TUNE, "--tune", "[SECONDS]", "search model, factors, learning rate, L2, negatives, batch, weighting and\n"
                                    "Rendle et al.'s SGD recipe on the validation split (successive halving),\n"
                                    "then train the winner on training + validation and report its test\n"
                                    "figures once; --save writes it. With --holdout none the winner is then\n"
                                    "trained anew on every interaction (the model to ship) and saved.\n"
                                    "SECONDS: the planned budget (default: from the data's size, about 5\n"
                                    "minutes for ml-1m on 2 cores); see docs/tuning.md"},
    {F_TUNE_SEEDS, "--tune_seeds", "N", "an MF or GMF winner of --tune: the saved model averages it trained\n"
                                        "from up to N seeds, as many as what the search leaves of the budget\n"
                                        "pays for, for the epochs their average does best at on validation\n"
                                        "(default %D; 1: one seed)"},
    {F_SKIP_HELD_OUT, "--skip_held_out_negatives", NULL, "never draw a user's test or validation item as a training\n"
                                                         "negative, as 0.6 trained (it reads the held-out items; for\n"
                                                         "comparing with 0.6's figures)"},
    {F_SHUFFLE, "--shuffle", "ORDER", "an epoch's order: examples (each shuffled on its own, as the TF/MLPerf\n"
                                      "reference) or positives (the positives shuffled, each followed by its\n"
                                      "negatives: the paper config 1.2x as fast; a user's rows take one step\n"
                                      "for its 1 + num_neg examples; see docs/performance.md) (default\n"
                                      "examples)"},
    {F_FULL_RANKING, "--full_ranking", NULL, "choose the best epoch by full-ranking HR, not sampled HR (the\n"
                                             "validation is then ranked in full at every evaluation)"},
    {F_FULL_USERS, "--full_users", "N", "full ranking over a fixed sample of about N users (default: all users\n"
                                        "when users x items <= 1e8, else 1e8 / items of them)"},
    {F_HASH_PIPELINE, "--hash_pipeline", NULL, "print each epoch's input pipeline hash (first batch, all batches)"},
    {F_LOG, "--log", "FILE.csv", "one CSV row per epoch: loss and every figure"},
    {F_PLOT, "--plot", "FILE.svg", "loss and HR/NDCG per epoch as a picture, redrawn at each evaluation"},
    {F_SECTION, "serving (after training, or from --load FILE alone, without data):", NULL, NULL},
    {F_RECOMMEND, "--recommend", "USER[,USER]", "the --recommend_k best unrated items for each USER (ids as the data\n"
                                                "writes them; CSV quoting for an id with a comma: '\"a, b\",c'), with\n"
                                                "their names (--item_names)"},
    {F_RECOMMEND_FILE, "--recommend_file", "FILE", "--recommend for the users listed (one id a line, as written)"},
    {F_RECOMMEND_K, "--recommend_k", "K", "(default %D)"},
    {F_TOPK, "--topk", "K", "the old name of --recommend_k"},
    {F_RECOMMEND_ALL, "--recommend_all", "FILE.csv", "the top K of every user, on all threads, as --output csv writes them"},
    {F_RECOMMEND_FOR, "--recommend_for", "ITEM[,ITEM]", "a new user given by its items (CSV quoting as --recommend): folded\n"
                                                    "in, then its top K"},
    {F_RECOMMEND_FOR_FILE, "--recommend_for_file", "FILE", "--recommend_for with the items listed (one id a line)"},
    {F_SIMILAR, "--similar", "ITEM", "the K items most like ITEM (GMF/MF factors; see docs/serving.md)"},
    {F_SIMILAR_USERS, "--similar_users", "USER", "the K users most like USER (the users' side of the same factors)"},
    {F_ITEM_FOR, "--item_for", "USER[,USER]", "a new item given by the users who took it (CSV quoting as --recommend):\n"
                                             "folded in, then the K other users it suits best; features:A|B: a\n"
                                             "new item given by its features alone (a features model)"},
    {F_ALLOW, "--allow", "FILE", "only the items listed (one id a line)"},
    {F_DENY, "--deny", "FILE", "never the items listed (one id a line)"},
    {F_ITEM_NAMES, "--item_names", "FILE", "names beside the item ids in every answer: a file of an id and a name\n"
                                           "a line (titles, products, artists), read as a log is (separator,\n"
                                           "quotes, a header naming the columns: id, then title or name).\n"
                                           "Default: MovieLens's movies.dat, movies.csv or u.item beside the data"},
    {F_PROBABILITIES, "--probabilities", NULL, "scores as probabilities (default: logits)"},
    {F_OUTPUT, "--output", "text|csv|json", "the answers for people (default), or as CSV (kind,query,rank,id,score;\n"
                                           "ids quoted as CSV needs) or JSON lines, one object an answer (ids not\n"
                                           "UTF-8 as \\udcXX); standard output then holds the answers alone"},
    {F_SECTION, "model files:", NULL, NULL},
    {F_SAVE, "--save", "FILE", "save the model after training: what serving and --load need"},
    {F_SAVE_STATE, "--save_state", NULL, "--save keeps Adam's moments too, to resume training exactly (about\n"
                                         "3x the file; --checkpoint_every's files always keep them)"},
    {F_INT8, "--int8", NULL, "save (--save, --save_best, --export_c) with int8 embedding rows: about 3x\n"
                             "smaller, for serving (no Adam state to resume from)"},
    {F_CHECKPOINT_EVERY, "--checkpoint_every", "N", "also save it every N epochs"},
    {F_SAVE_BEST, "--save_best", "FILE", "save the model each time HR improves in this run (the paper's\n"
                                        "pre-training keeps its best epoch this way)"},
    {F_EXPORT_C, "--export_c", "FILE.h", "write the model (as --save would, without Adam state) as an 8-byte\n"
                                         "aligned C array for flash: ncf_model_open(&m, NAME, sizeof NAME, 0), NAME\n"
                                         "the file's name; also from --load FILE alone"},
    {F_EXPORT_EMBEDDINGS, "--export_embeddings", "PREFIX", "the users' and items' vectors for a vector index: PREFIX.users.npy,\n"
                                                           "PREFIX.items.npy (float32) and .csv (id, then the values); their inner\n"
                                                           "product ranks as MF and GMF score, exactly (docs/serving.md)"},
    {F_LOAD, "--load", "FILE", "start from a saved model (its config wins) and resume at its next epoch;\n"
                               "with --train_epochs 0 just evaluate it. Data with new users or items grows\n"
                               "the model (known ids keep their rows)"},
    {F_KEEP_MISSING, "--keep_missing", NULL, "with --load: keep the model's users and items the data lacks"},
    {F_SHARDS, "--shards", NULL, "demo-mpi: each rank holds only its users' rows of the model and their Adam\n"
                                 "moments (the same model and files; no serving or exports in the run)"},
    {F_SECTION, "this program:", NULL, NULL},
    {F_HELP, "--help", "[TOPIC]", "this list (also -h); TOPIC one group of it: data, model, training, output,\n"
                                 "serving or files"},
    {F_VERSION, "--version", NULL, "ncf.h's version, and how this demo was built"},
};
/* clang-format on */
#define NUM_FLAGS (int)(sizeof FLAGS / sizeof *FLAGS)

static void default_options(options *o);
static const char *model_name(ncf_model_type t);

/* x as %g writes it, less an exponent's leading zero (1e-8, not 1e-08). */
/* snprintf for a message: one cut short ends in "..." rather than passing for whole. */
static void message(char *buf, size_t size, const char *fmt, ...)
{
    va_list ap;
    int n;
    va_start(ap, fmt);
    n = vsnprintf(buf, size, fmt, ap);
    va_end(ap);
    if (n >= 0 && (size_t)n >= size && size > 3) memcpy(buf + size - 4, "...", 4);
}

static void format_number(char *b, size_t n, double x)
{
    char *e;
    snprintf(b, n, "%g", x);
    if ((e = strchr(b, 'e')) != NULL && (e[1] == '-' || e[1] == '+') && e[2] == '0' && e[3])
        memmove(e + 2, e + 3, strlen(e + 3) + 1);
}

/* The default of a flag whose help says "%D", from the options as parse_args starts them (the
   one place a default is set), or NULL. */
static const char *flag_default(const options *d, flag_id id, char *b, size_t n)
{
    int l;
    size_t at;
    switch (id) {
    case F_SYN_USERS: snprintf(b, n, "%d", d->syn_users); break;
    case F_SYN_ITEMS: snprintf(b, n, "%d", d->syn_items); break;
    case F_SYN_RATINGS: snprintf(b, n, "%lld", (long long)d->syn_ratings); break;
    case F_MIN_RATINGS: snprintf(b, n, "%d", d->min_ratings); break;
    case F_MIN_ITEM_RATINGS: snprintf(b, n, "%d", d->load_opts.min_item_ratings); break;
    case F_WEIGHT_ALPHA: format_number(b, n, d->load_opts.alpha); break;
    case F_NUM_FACTORS: snprintf(b, n, "%d", d->cfg.mf_dim); break;
    case F_LAYERS:
        for (l = 0, at = 0, *b = 0; l < d->cfg.num_layers && at < n; l++, at = strlen(b))
            snprintf(b + at, n - at, "%s%d", l ? "," : "", d->cfg.layers[l]); /* (fits: the loop stops at n) */
        break;
    case F_MF_REG: format_number(b, n, d->cfg.mf_reg); break;
    case F_MLP_REG: format_number(b, n, d->cfg.mlp_reg[0]); break;
    case F_INIT_SD: format_number(b, n, d->cfg.init_sd); break;
    case F_ALPHA: format_number(b, n, d->alpha); break;
    case F_BATCH_SIZE: snprintf(b, n, "%d", d->cfg.batch_size); break;
    case F_LEARNING_RATE: format_number(b, n, d->cfg.lr); break;
    case F_BETA1: format_number(b, n, d->cfg.beta1); break;
    case F_BETA2: format_number(b, n, d->cfg.beta2); break;
    case F_EPSILON: format_number(b, n, d->cfg.epsilon); break;
    case F_UNOBSERVED: format_number(b, n, d->cfg.unobserved); break;
    case F_NUM_NEG: snprintf(b, n, "%d", d->cfg.num_neg); break;
    case F_TRAIN_EPOCHS: snprintf(b, n, "%d", d->train_epochs); break;
    case F_EPOCHS_BETWEEN_EVALS: snprintf(b, n, "%d", d->epochs_between_evals); break;
    case F_SEED: snprintf(b, n, "%llu", (unsigned long long)d->cfg.seed); break;
    case F_SEEDS: snprintf(b, n, "%d", d->seeds); break;
    case F_TOP_K: snprintf(b, n, "%d", d->ks[0]); break;
    case F_PATIENCE: snprintf(b, n, "%d", d->patience); break;
    case F_TUNE_SEEDS: snprintf(b, n, "%d", d->tune_seeds); break;
    case F_RECOMMEND_K: snprintf(b, n, "%d", d->recommend_k); break;
    default: return NULL;
    }
    return b;
}

/* Whether a section's title has topic as one of its words ("files" in "model files:"). */
static int section_is(const char *title, const char *topic)
{
    size_t n = strlen(topic);
    const char *p;
    for (p = title; n && (p = strstr(p, topic)) != NULL; p++)
        if ((p == title || p[-1] == ' ') && (p[n] == ':' || p[n] == ' ' || p[n] == 0)) return 1;
    return 0;
}

/* --help [TOPIC]: every flag, or one section's (0 when no section is TOPIC). */
static int usage(FILE *f, const char *topic)
{
    options d;
    int k, shown = 1, any = 0;
    default_options(&d);
    if (!topic)
        fprintf(f,
                "usage: demo [flags]        (no flags: train NeuMF on built-in synthetic data)\n"
                "flags take --flag value or --flag=value; --help TOPIC shows one group\n");
    for (k = 0; k < NUM_FLAGS; k++) {
        const flag_def *g = &FLAGS[k];
        char left[64], def[64];
        const char *h, *v;
        if (g->id == F_SECTION) {
            shown = !topic || section_is(g->name, topic), any |= shown;
            if (shown) fprintf(f, "%s\n", g->name);
            continue;
        }
        if (!shown) continue;
        message(left, sizeof left, "%s%s%s", g->name, g->value ? " " : "", g->value ? g->value : "");
        fprintf(f, "  %-24s%s", left, strlen(left) > 23 ? "\n                           " : " ");
        for (h = g->help; *h; h++)
            if (h[0] == '%' && h[1] == 'D' && (v = flag_default(&d, g->id, def, sizeof def)) != NULL) fputs(v, f), h++;
            else fprintf(f, *h == '\n' ? "\n                           " : "%c", *h);
        fprintf(f, "\n");
    }
    return any;
}

/* The edits (insert, delete, change a byte, swap two) from a to b, stopping past most. */
static int edits(const char *a, const char *b, int most)
{
    int la = (int)strlen(a), lb = (int)strlen(b), i, j, row[3][64], *prev2 = row[0], *prev = row[1], *cur = row[2];
    if (la > 62 || lb > 62 || abs(la - lb) > most) return most + 1;
    for (j = 0; j <= lb; j++) prev[j] = j;
    for (i = 1; i <= la; i++) {
        int *t, low;
        cur[0] = low = i;
        for (j = 1; j <= lb; j++) {
            int c = prev[j - 1] + (a[i - 1] != b[j - 1]);
            if (prev[j] + 1 < c) c = prev[j] + 1;
            if (cur[j - 1] + 1 < c) c = cur[j - 1] + 1;
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] && prev2[j - 2] + 1 < c)
                c = prev2[j - 2] + 1;
            cur[j] = c, low = c < low ? c : low;
        }
        if (low > most) return most + 1;
        t = prev2, prev2 = prev, prev = cur, cur = t;
    }
    return prev[lb];
}

/* The flag a misspelt name most likely meant (a third of its letters wrong at most), else the
   first whose name holds it ("--epochs" in --train_epochs, "--factors" in --num_factors), or
   NULL. */
static const char *nearest_flag(const char *name)
{
    const char *best = NULL, *word = name + strspn(name, "-");
    int k, d, most = (int)strlen(name) / 3 < 3 ? (int)strlen(name) / 3 : 3, least = most + 1;
    for (k = 0; k < NUM_FLAGS; k++)
        if (FLAGS[k].id != F_SECTION && (d = edits(name, FLAGS[k].name, most)) < least) least = d, best = FLAGS[k].name;
    for (k = 0; !best && strlen(word) >= 4 && k < NUM_FLAGS; k++)
        if (FLAGS[k].id != F_SECTION && strstr(FLAGS[k].name, word)) best = FLAGS[k].name;
    return best;
}

static const flag_def *find_flag(const char *name)
{
    int k;
    if (!strcmp(name, "-h")) name = "--help";
    for (k = 0; k < NUM_FLAGS; k++)
        if (FLAGS[k].id != F_SECTION && !strcmp(FLAGS[k].name, name)) return &FLAGS[k];
    return NULL;
}

/* What the flags set that decides a default (--ml_perf fills only what they did not). */
typedef struct {
    int mlperf, factors, layers, batch, lr, eval_negatives, model, shuffle, weighting, epochs;
} flags_set;

static int parse_choice(const char *flag, const char *v, const char *const *names, int n, const char *want, int *out)
{
    int k;
    for (k = 0; k < n && strcmp(v, names[k]) != 0; k++) {}
    if (k == n) return bad_value(flag, v, want);
    *out = k;
    return 1;
}

static int parse_beta(const char *flag, const char *v, float *beta)
{
    double x;
    if (!parse_float(flag, v, 0, 0.999999999, &x)) return 0;
    if ((float)x >= 1.0f) { /* Adam divides by 1 - beta^t */
        fprintf(stderr, "demo: %s %s rounds to 1 in single precision; use at most 0.9999999\n", flag, v);
        return 0;
    }
    *beta = (float)x;
    return 1;
}

#define INT_FLAG(lo, hi, dst) \
    if (!parse_int(a, v, lo, hi, &n)) return 0; \
    (dst) = (int)n; \
    break
#define FLOAT_FLAG(lo, hi, dst) \
    if (!parse_float(a, v, lo, hi, &x)) return 0; \
    (dst) = (float)x; \
    break

/* One flag's effect on the options: 0 (said why) when its value is bad. */
static int apply_flag(options *o, flag_id id, const char *a, const char *v, flags_set *set)
{
    static const char *const formats[] = {"auto", "dat", "csv", "tab", "ncf"}, *const headers[] = {"auto", "yes", "no"};
    static const char *const holdouts[] = {"latest", "random", "none"}, *const models[] = {"neumf", "gmf", "mlp", "mf"};
    static const char *const weightings[] = {"none", "linear", "log"}, *const outputs[] = {"text", "csv", "json"};
    static const char *const optimizers[] = {"adam", "sgd", "als"}, *const adams[] = {"lazy", "dense"},
                             *const orders[] = {"examples", "positives"};
    long long n;
    double x;
    int k;
    switch (id) {
    case F_DATA: o->data = v, o->data_given = 1; break;
    case F_DATA_DIR: o->data_dir = v, o->data_given = 1; break;
    case F_DATASET: o->dataset = v, o->data_given = 1; break;
    case F_SYN_USERS:
        if (!parse_int(a, v, 1, 1 << 30, &n)) return 0;
        o->syn_users = (int)n, o->data_given = 1;
        break;
    case F_SYN_ITEMS:
        if (!parse_int(a, v, 8, 1 << 30, &n)) return 0;
        o->syn_items = (int)n, o->data_given = 1;
        break;
    case F_SYN_RATINGS:
        if (!parse_int(a, v, 1, 1LL << 40, &n)) return 0;
        o->syn_ratings = n, o->data_given = 1;
        break;
    case F_FORMAT:
        if (!parse_choice(a, v, formats, 5, "auto, dat, csv, tab or ncf", &k)) return 0;
        o->load_opts.format = (ncf_format)k;
        break;
    case F_SEP:
        if (!*v || strlen(v) > 3) return bad_value(a, v, "1 to 3 characters, tab or space");
        o->load_opts.sep = !strcmp(v, "tab") || !strcmp(v, "\\t") ? "\t" : !strcmp(v, "space") ? " " : v;
        break;
    case F_HEADER:
        if (!parse_choice(a, v, headers, 3, "yes, no or auto", &k)) return 0;
        o->load_opts.header = k == 1 ? NCF_HEADER_YES : k == 2 ? NCF_HEADER_NO : NCF_HEADER_AUTO;
        break;
    case F_USER_COL: o->load_opts.columns[NCF_COL_USER] = v; break;
    case F_ITEM_COL: o->load_opts.columns[NCF_COL_ITEM] = v; break;
    case F_RATING_COL: o->load_opts.columns[NCF_COL_RATING] = v; break;
    case F_TIME_COL: o->load_opts.columns[NCF_COL_TIME] = v; break;
    case F_MIN_RATING: FLOAT_FLAG(-1e30, 1e30, o->load_opts.min_rating);
    case F_MIN_RATINGS: INT_FLAG(0, 1 << 30, o->min_ratings);
    case F_MIN_ITEM_RATINGS: INT_FLAG(0, 1 << 30, o->load_opts.min_item_ratings);
    case F_KCORE: o->load_opts.kcore = 1; break;
    case F_TRIM_IDS: o->load_opts.trim_ids = 1; break;
    case F_WEIGHT_COL: o->load_opts.columns[NCF_COL_STRENGTH] = v; break;
    case F_EVENT_COL: o->load_opts.columns[NCF_COL_EVENT] = v; break;
    case F_EVENTS: o->load_opts.events = v; break;
    case F_WEIGHTING:
        set->weighting = 1;
        if (!parse_choice(a, v, weightings, 3, "none, linear or log", &k)) return 0;
        o->load_opts.weighting = k == 1 ? NCF_WEIGHT_LINEAR : k == 2 ? NCF_WEIGHT_LOG : NCF_WEIGHT_NONE;
        break;
    case F_WEIGHT_ALPHA: FLOAT_FLAG(1e-6, 1e6, o->load_opts.alpha);
    case F_HOLDOUT:
        if (!strncmp(v, "items:", 6)) {
            if (!parse_float(a, v + 6, 1e-6, 0.999999, &x)) return 0;
            o->load_opts.holdout = NCF_HOLDOUT_ITEMS, o->load_opts.holdout_fraction = (float)x;
            break;
        }
        if (!strncmp(v, "ratio:", 6) || !strncmp(v, "time:", 5)) {
            const char *f = strchr(v, ':') + 1;
            if (f[0] == '@' && v[0] == 't') {
                if (!parse_int(a, f + 1, -(1LL << 62), 1LL << 62, &n)) return 0;
                o->load_opts.holdout = NCF_HOLDOUT_CUTOFF, o->load_opts.holdout_cutoff = n;
            } else {
                if (!parse_float(a, f, 1e-6, 0.999999, &x)) return 0;
                o->load_opts.holdout = v[0] == 'r' ? NCF_HOLDOUT_RATIO : NCF_HOLDOUT_TIME;
                o->load_opts.holdout_fraction = (float)x;
            }
            break;
        }
        if (!parse_choice(a, v, holdouts, 3, "latest, random, none, ratio:F, time:F, time:@T or items:F", &k)) return 0;
        o->load_opts.holdout = k == 0 ? NCF_HOLDOUT_LATEST : k == 1 ? NCF_HOLDOUT_RANDOM : NCF_HOLDOUT_NONE;
        break;
    case F_EVAL_NEGATIVES: set->eval_negatives = 1; INT_FLAG(1, 1 << 20, o->eval_negatives);
    case F_MODEL:
        if (!parse_choice(a, v, models, 4, "neumf, gmf, mlp or mf", &k)) return 0;
        o->cfg.model = k == 0 ? NCF_NEUMF : k == 1 ? NCF_GMF : k == 2 ? NCF_MLP : NCF_MF, set->model = 1;
        break;
    case F_NUM_FACTORS: set->factors = 1; INT_FLAG(1, 65536, o->cfg.mf_dim);
    case F_LAYERS:
        if (!(k = parse_list(a, v, NCF_MAX_LAYERS, o->cfg.layers, NULL))) return 0;
        o->cfg.num_layers = k, set->layers = 1;
        break;
    case F_MF_REG: FLOAT_FLAG(0, 1e6, o->cfg.mf_reg);
    case F_MLP_REG: return parse_list(a, v, NCF_MAX_LAYERS, NULL, o->cfg.mlp_reg) != 0;
    case F_INIT_SD: FLOAT_FLAG(1e-12, 100, o->cfg.init_sd);
    case F_PRETRAIN_GMF: o->pretrain_gmf = v; break;
    case F_PRETRAIN_MLP: o->pretrain_mlp = v; break;
    case F_ALPHA: return parse_float(a, v, 0, 1, &o->alpha);
    case F_BATCH_SIZE: set->batch = 1; INT_FLAG(1, 1 << 24, o->cfg.batch_size);
    case F_EVAL_BATCH_SIZE: return parse_int(a, v, 1, 1LL << 40, &n);
    case F_LEARNING_RATE: set->lr = 1; FLOAT_FLAG(1e-12, 100, o->cfg.lr);
    case F_BETA1: return parse_beta(a, v, &o->cfg.beta1);
    case F_BETA2: return parse_beta(a, v, &o->cfg.beta2);
    case F_EPSILON: FLOAT_FLAG(1e-30, 1, o->cfg.epsilon);
    case F_OPTIMIZER:
        if (!parse_choice(a, v, optimizers, 3, "adam, sgd or als", &k)) return 0;
        o->cfg.optimizer = k == 2 ? NCF_OPT_ALS : k ? NCF_OPT_SGD : NCF_OPT_ADAM;
        break;
    case F_UNOBSERVED: FLOAT_FLAG(1e-12, 1e6, o->cfg.unobserved);
    case F_ADAM:
        if (!parse_choice(a, v, adams, 2, "lazy or dense", &k)) return 0;
        o->cfg.adam = k ? NCF_ADAM_DENSE : NCF_ADAM_LAZY;
        break;
    case F_NUM_NEG: INT_FLAG(0, 1000, o->cfg.num_neg);
    case F_TRAIN_EPOCHS: set->epochs = 1; INT_FLAG(0, 1000000, o->train_epochs);
    case F_EPOCHS_BETWEEN_EVALS: INT_FLAG(1, 1000000, o->epochs_between_evals);
    case F_HR_THRESHOLD: return parse_float(a, v, 0, 1, &o->hr_threshold);
    case F_ML_PERF: set->mlperf = 1; break;
    case F_SEED:
        if (!parse_int(a, v, 0, 1LL << 62, &n)) return 0;
        o->cfg.seed = (uint64_t)n;
        break;
    case F_SEEDS: INT_FLAG(1, 64, o->seeds);
    case F_THREADS: INT_FLAG(1, 1024, o->threads);
    case F_TOP_K:
        if (!(k = parse_list(a, v, NCF_MAX_KS, o->ks, NULL))) return 0;
        o->nks = k, o->top_k = o->ks[0];
        break;
    case F_SELECT: {
        static const char *const metrics[] = {"hr", "ndcg", "mrr", "recall", "precision", "map"};
        char name[16];
        const char *at = strchr(v, '@');
        if (!at || at - v >= (long)sizeof name)
            return bad_value(a, v, "METRIC@K: hr, ndcg, mrr, recall, precision or map");
        memcpy(name, v, (size_t)(at - v)), name[at - v] = 0;
        if (!parse_choice(a, name, metrics, 6, "hr, ndcg, mrr, recall, precision or map", &k)) return 0;
        if (!parse_int(a, at + 1, 1, NCF_MAX_K, &n)) return 0;
        o->select_metric = k, o->select_k = (int)n;
        break;
    }
    case F_SAVE_SPLIT: o->save_split = v; break;
    case F_ITEM_FEATURES: o->features[NCF_ITEM] = v; break;
    case F_USER_FEATURES: o->features[NCF_USER] = v; break;
    case F_ITEM_FEATURE_COLS: o->feature_cols[NCF_ITEM] = v; break;
    case F_USER_FEATURE_COLS: o->feature_cols[NCF_USER] = v; break;
    case F_FEATURES_ONLY: {
        static const char *const sides[] = {"users", "items", "both"};
        if (!parse_choice(a, v, sides, 3, "items, users or both", &k)) return 0;
        o->features_only = k + 1;
        break;
    }
    case F_EVAL: {
        static const char *const modes[] = {"auto", "none", "sampled", "full"};
        if (!parse_choice(a, v, modes, 4, "auto, full, sampled or none", &k)) return 0;
        o->eval_mode = k;
        break;
    }
    case F_VALIDATION: o->validation = 1; break;
    case F_NO_VALIDATION: o->validation = 0; break;
    case F_PATIENCE: INT_FLAG(0, 1000000, o->patience);
    case F_TUNE:
        o->tune = 1;
        if (v && !parse_float(a, v, 0.001, 1e7, &o->tune_seconds)) return 0;
        break;
    case F_TUNE_SEEDS: INT_FLAG(1, 64, o->tune_seeds);
    case F_SKIP_HELD_OUT: o->skip_held_out = 1; break;
    case F_SHUFFLE:
        if (!parse_choice(a, v, orders, 2, "positives or examples", &o->by_positive)) return 0;
        set->shuffle = 1;
        break;
    case F_FULL_RANKING: o->full_ranking = 1; break;
    case F_FULL_USERS: INT_FLAG(1, 1 << 30, o->full_users);
    case F_HASH_PIPELINE: o->hash_pipeline = 1; break;
    case F_LR_DECAY: o->lr_decay = 1; break;
    case F_LOG: o->log = v; break;
    case F_PLOT: o->plot = v; break;
    case F_RECOMMEND:
        if (o->recommend_user) {
            fprintf(stderr, "demo: --recommend given twice ('%s', '%s'): give the users as one list, U1,U2\n",
                    o->recommend_user, v);
            return 0;
        }
        o->recommend_user = v;
        break;
    case F_TOPK:
        fprintf(stderr, "demo: warning: --topk is now --recommend_k (--top_k is HR@K)\n");
        /* fall through */
    case F_RECOMMEND_K: INT_FLAG(1, 1 << 20, o->recommend_k);
    case F_RECOMMEND_ALL: o->recommend_all = v; break;
    case F_RECOMMEND_FOR: o->recommend_for = v; break;
    case F_RECOMMEND_FILE: o->recommend_file = v; break;
    case F_RECOMMEND_FOR_FILE: o->recommend_for_file = v; break;
    case F_SIMILAR: o->similar = v; break;
    case F_SIMILAR_USERS: o->similar_users = v; break;
    case F_ITEM_FOR: o->item_for = v; break;
    case F_ALLOW: o->allow = v; break;
    case F_DENY: o->deny = v; break;
    case F_ITEM_NAMES: o->item_names = v; break;
    case F_PROBABILITIES: o->probabilities = 1; break;
    case F_OUTPUT:
        if (!parse_choice(a, v, outputs, 3, "text, csv or json", &k)) return 0;
        o->output = k;
        break;
    case F_SAVE: o->save = v; break;
    case F_SAVE_STATE: o->save_state = 1; break;
    case F_INT8: o->int8 = 1; break;
    case F_CHECKPOINT_EVERY: INT_FLAG(1, 1000000, o->checkpoint_every);
    case F_SAVE_BEST: o->save_best = v; break;
    case F_EXPORT_C: o->export_c = v; break;
    case F_EXPORT_EMBEDDINGS: o->export_embeddings = v; break;
    case F_LOAD: o->load = v; break;
    case F_KEEP_MISSING: o->keep_missing = 1; break;
    case F_SHARDS: o->shards = 1; break;
    case F_SECTION:
    case F_HELP:
    case F_VERSION: break;
    }
    return 1;
}
#undef INT_FLAG
#undef FLOAT_FLAG

/* The options before any flag: every default the demo has, set here only (--help prints them
   from here). */
static void default_options(options *o)
{
    memset(o, 0, sizeof *o);
    o->cfg = ncf_config_default();
    o->dataset = "synthetic";
    o->train_epochs = 20, o->epochs_between_evals = 1, o->min_ratings = 0, o->top_k = 10;
    o->ks[0] = 10, o->nks = 1;
    o->load_opts = ncf_dataset_opts_default();
    o->syn_users = 3000, o->syn_items = 1500, o->syn_ratings = 150000;
    o->hr_threshold = 2.0, o->recommend_k = 10, o->alpha = 0.5, o->validation = 1, o->tune_seeds = 4, o->seeds = 1;
}

/* Returns 1 to go on, 0 on a bad flag, -1 after --help. */
static int parse_args(int argc, char **argv, options *o)
{
    flags_set set;
    int i;
    memset(&set, 0, sizeof set);
    default_options(o);
    for (i = 1; i < argc && argv[i]; i++) { /* (argv[i] is never NULL below argc; the analyzer is told) */
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL, *eq = strchr(a, '=');
        const flag_def *f;
        char name[64];
        int took = 1;
        if (!strncmp(a, "--", 2) && eq && eq - a < (ptrdiff_t)sizeof name) { /* --flag=value */
            snprintf(name, sizeof name, "%.*s", (int)(eq - a), a);           /* (fits: eq - a < sizeof name) */
            a = name, v = eq + 1, took = 0;
        }
        if (a[0] != '-') {
            fprintf(stderr, "demo: unexpected argument '%s' (see --help)\n", a);
            return 0;
        }
        if (!(f = find_flag(a))) {
            const char *meant = nearest_flag(a);
            if (meant) fprintf(stderr, "demo: unknown flag '%s'; did you mean %s? (see --help)\n", a, meant);
            else fprintf(stderr, "demo: unknown flag '%s' (see --help)\n", a);
            return 0;
        }
        if (!f->value) { /* a switch */
            if (eq && a == name) {
                fprintf(stderr, "demo: %s takes no value\n", a);
                return 0;
            }
            took = 0;
        } else if (f->id == F_HELP) { /* a topic that follows */
            if (took && (!v || v[0] == '-')) v = NULL, took = 0;
        } else if (f->value[0] == '[') { /* a value it may take: a number that follows */
            char *end;
            if (took && (!v || (strtod(v, &end), end == v || *end))) v = NULL, took = 0;
        } else if (!v || (took && !strncmp(v, "--", 2))) {
            fprintf(stderr, "demo: %s needs a value (see --help)\n", a);
            return 0;
        }
        if (f->id == F_HELP && !usage(stdout, v)) {
            fprintf(stderr, "demo: --help %s: no such group (data, model, training, output, serving, files)\n", v);
            return 0;
        }
        if (f->id == F_HELP) return -1;
        if (f->id == F_VERSION) {
            printf("demo of ncf.h %s (%s, %s, %s)\n", ncf_version(),
#ifdef NCF_MPI
                   "MPI",
#else
                   "one process",
#endif
#ifdef _OPENMP
                   "OpenMP",
#else
                   "no OpenMP",
#endif
                   sizeof(void *) == 8 ? "64-bit" : "32-bit");
            return -1;
        }
        if (!apply_flag(o, f->id, a, v, &set)) return 0;
        i += took;
    }
    if (set.mlperf) { /* the preset fills what the user did not set */
        ncf_config p = ncf_config_mlperf();
        if (!set.factors) o->cfg.mf_dim = p.mf_dim;
        if (!set.layers) memcpy(o->cfg.layers, p.layers, sizeof p.layers), o->cfg.num_layers = p.num_layers;
        if (!set.batch) o->cfg.batch_size = p.batch_size;
        if (!set.lr) o->cfg.lr = p.lr;
        if (!set.eval_negatives) o->eval_negatives = 999;
    }
    if (o->load_opts.events && !set.weighting) o->load_opts.weighting = NCF_WEIGHT_LOG; /* (the kinds' worth counts) */
    /* a model file alone, nothing asked of it but what it is: said, not trained on built-in data */
    o->file_alone = o->load && !o->data_given && !set.epochs;
    if (o->tune && o->load_opts.holdout == NCF_HOLDOUT_NONE) /* searched on the default split, shipped on all */
        o->tune_all = 1, o->load_opts.holdout = NCF_HOLDOUT_AUTO;
    if (o->data_dir && !o->data && !strcmp(o->dataset, "synthetic")) {
        fprintf(stderr, "demo: --data_dir needs --dataset NAME (ml-1m, ml-20m, ...)\n");
        return 0;
    }
    if (o->select_k && o->ks[select_at(o)] != o->select_k) {
        fprintf(stderr, "demo: --select %d: its cut-off must be one of --top_k's\n", o->select_k);
        return 0;
    }
    if (o->patience && !o->validation) {
        fprintf(stderr, "demo: --patience stops on validation figures: it does not go with --no_validation\n");
        return 0;
    }
    if (o->tune &&
        (o->load || !o->validation || o->pretrain_gmf || o->save_best || o->checkpoint_every || set.shuffle)) {
        fprintf(stderr,
                "demo: --tune trains its own models on a validation split: it does not go with --load, "
                "--no_validation, --pretrain_gmf, --save_best, --checkpoint_every or --shuffle\n");
        return 0;
    }
    if (o->seeds > 1 && o->cfg.model != NCF_MF && o->cfg.model != NCF_GMF) {
        fprintf(stderr,
                "demo: --seeds averages MF or GMF models (their scores are sums over factors); a %s cannot "
                "be averaged: drop --seeds or use --model mf|gmf\n",
                model_name(o->cfg.model));
        return 0;
    }
    if (o->seeds > 1 && (o->load || o->tune || o->shards || o->checkpoint_every)) {
        fprintf(stderr,
                "demo: --seeds trains new models and saves their average: it does not go with --load, "
                "--tune (see --tune_seeds), --shards or --checkpoint_every\n");
        return 0;
    }
    if (o->keep_missing && !o->load) {
        fprintf(stderr, "demo: --keep_missing keeps a loaded model's ids: it goes with --load\n");
        return 0;
    }
    if (o->checkpoint_every && !o->save)
        fprintf(stderr, "demo: warning: --checkpoint_every does nothing without --save\n");
    if (o->checkpoint_every && o->int8) {
        fprintf(stderr,
                "demo: --int8 checkpoints cannot resume a run exactly (no Adam state, rounded rows): "
                "drop --int8 or --checkpoint_every\n");
        return 0;
    }
    if (o->load && (set.model || set.factors || set.layers))
        fprintf(stderr,
                "demo: warning: --load uses the model file's config; --model, --num_factors and --layers "
                "are ignored\n");
    if (!o->pretrain_gmf != !o->pretrain_mlp) {
        fprintf(stderr, "demo: pre-training needs both --pretrain_gmf and --pretrain_mlp\n");
        return 0;
    }
    if (o->pretrain_gmf && (o->load || o->cfg.model != NCF_NEUMF)) {
        fprintf(stderr, "demo: --pretrain_gmf/--pretrain_mlp start a NeuMF; they do not go with --load or --model\n");
        return 0;
    }
    return 1;
}

/* The file for --data_dir/--dataset, or --data itself; NULL, and said, when the folder's path
   and the name do not fit in size bytes. */
static const char *data_path(const options *o, char *buf, size_t size)
{
    static const char *names[] = {"ratings.dat", "ratings.csv", "u.data"};
    int k, n;
    FILE *f;
    if (o->data) return o->data;
    if (!o->data_dir) return NULL;
    n = snprintf(buf, size, "%s/%s.train.rating", o->data_dir, o->dataset); /* (the longest of the names) */
    if (n < 0 || (size_t)n >= size) {
        fprintf(stderr, "demo: --data_dir %.100s... with --dataset %.100s: the path is too long (%d bytes)\n",
                o->data_dir, o->dataset, n);
        return NULL;
    }
    if ((f = fopen(buf, "rb")) != NULL) {
        fclose(f);
        snprintf(buf, size, "%s/%s", o->data_dir, o->dataset); /* (fits: shorter than the one above) */
        return buf;
    }
    for (k = 0; k < 3; k++) {
        snprintf(buf, size, "%s/%s/%s", o->data_dir, o->dataset, names[k]); /* (fits: as above) */
        if ((f = fopen(buf, "rb")) != NULL) {
            fclose(f);
            return buf;
        }
    }
    snprintf(buf, size, "%s/%s/ratings.dat", o->data_dir, o->dataset); /* (fits: as above) */
    return buf;                                                        /* the loader reports that it is missing */
}

/* Progress: a live line on a terminal; the warm-up point for examples/sec. */
typedef struct {
    int tty, epoch, epochs;
    int count_epochs; /* 1: epochs counted here, by their examples starting over (--tune's final) */
    double t0, last_print, warm_t;
    int64_t warm_done, last_done;
} progress_state;

static void on_progress(void *user, int64_t done, int64_t total, double loss)
{
    progress_state *p = (progress_state *)user;
    double t = now();
    if (p->count_epochs && (p->epoch == 0 || done < p->last_done)) p->epoch++, p->warm_done = 0;
    p->last_done = done;
    if (p->warm_done == 0) p->warm_done = done, p->warm_t = t; /* the first 16 batches warm up */
    if (p->tty && (t - p->last_print > 0.25 || done == total)) {
        double rate = done > p->warm_done ? (double)(done - p->warm_done) / (t - p->warm_t) : 0;
        double eta = rate > 0 ? (double)(total - done) / rate : 0;
        char shown[32] = "-"; /* (an ALS epoch's loss is known at its end) */
        if (loss == loss) snprintf(shown, sizeof shown, "%.4f", loss);
        fprintf(stderr, "\r  epoch %d/%d  %5.1f%%  %lld/%lld examples  %.0f ex/s  loss %s  ETA %.0fs   ", p->epoch,
                p->epochs, 100.0 * (double)done / (double)total, (long long)done, (long long)total, rate, shown, eta);
        if (done == total) fprintf(stderr, "\r%*s\r", 110, "");
        p->last_print = t;
    }
}

/* Index `index`'s id on `side`, in buf (NCF_MAX_ID_BYTES + 1 bytes): the model's, or "#index"
   should it have none (an answer never prints what a failed call left in buf). */
static const char *id_text(const ncf_model *m, int side, int index, char *buf)
{
    if (ncf_id(m, side, index, buf, NCF_MAX_ID_BYTES + 1) < 0) snprintf(buf, 16, "#%d", index); /* (fits: an int) */
    return buf;
}

/* ---- names beside ids: --item_names FILE, or MovieLens's titles beside its ratings ---- */

/* An item's name: its id and name as the file writes them (quotes off), NUL-terminated in the
   table's bytes. */
typedef struct {
    const char *id, *name;
} named;

/* The names read, sorted by id (as written: matched to the model's ids byte for byte). */
static struct {
    named *e;
    char *bytes;
    int n;
    const char *path;
} g_names;

static int same_id(const void *a, const void *b) { return strcmp(((const named *)a)->id, ((const named *)b)->id); }

/* By id, then by place in the file (the arena's order): the first of a repeated id first. */
static int by_id(const void *a, const void *b)
{
    const named *x = (const named *)a, *y = (const named *)b;
    int c = strcmp(x->id, y->id);
    return c ? c : x->id < y->id ? -1 : x->id > y->id;
}

/* The name of an item id, or NULL. */
static const char *item_name(const char *id)
{
    named key, *hit;
    if (!g_names.n) return NULL;
    key.id = id, key.name = NULL;
    hit = (named *)bsearch(&key, g_names.e, (size_t)g_names.n, sizeof *g_names.e, same_id);
    return hit ? hit->name : NULL;
}

/* Which header name is the id's (1) or the name's (2), else 0. */
static int names_column(ncf__span f)
{
    static const char *const names = "title name names itemname productname moviename artistname bookname booktitle "
                                     "trackname songname animename gamename displayname label description";
    char norm[64];
    ncf__norm_name(f, norm, sizeof norm);
    return !norm[0] ? 0 : ncf__has_word(names, norm) ? 2 : ncf__alias_of(norm) == NCF_COL_ITEM ? 1 : 0;
}

/* A field's value, quotes off (a doubled one read as one), copied to *at: its start. */
static char *copy_value(ncf__span f, char **at)
{
    int esc;
    char *start = *at;
    ncf__span v = ncf__value(f, &esc);
    for (; v.s < v.e; v.s++) {
        if (esc && *v.s == '"' && v.s + 1 < v.e && v.s[1] == '"') v.s++;
        *(*at)++ = *v.s;
    }
    *(*at)++ = 0;
    return start;
}

/* Reads a names file into g_names: its separator and quotes found as a log's are, a header
   when a field of the first line names the id or the name column (else the id is the first
   field and the name the second). An id named twice keeps its first name. */
static int read_names(const char *path)
{
    char *buf = NULL, sep[4], *at;
    size_t len = 0;
    ncf__cursor C;
    ncf__span f[NCF__MAX_FIELDS];
    int nf, k, id_col = 0, name_col = 1, header = 0, n = 0, j;
    const char *p;
    if (ncf__read_file(path, &buf, &len, NULL) != NCF_OK) {
        fprintf(stderr, "demo: --item_names: %s\n", ncf_error_text());
        return 0;
    }
    p = buf + ncf__bom_bytes(buf, len);
    ncf__find_sep(p, buf + len, sep);
    C.p = p, C.end = buf + len, C.line = 0, C.next = 1;
    while ((nf = ncf__record(&C, sep, f, NCF__MAX_FIELDS)) == 0) {}
    for (k = 0; k < nf && k < NCF__MAX_FIELDS; k++) {
        int c = names_column(f[k]);
        if (c == 1 && !(header & 1)) id_col = k, header |= 1;
        if (c == 2 && !(header & 2)) name_col = k, header |= 2;
    }
    if (header == 2 && name_col == 0) id_col = 1; /* (a name first, then the id) */
    g_names.e = (named *)malloc(sizeof(named) * (ncf__max_records(p, buf + len) + 1));
    g_names.bytes = at = (char *)malloc(len + 2 * (size_t)ncf__max_records(p, buf + len) + 1);
    if (!g_names.e || !at) {
        fprintf(stderr, "demo: --item_names %s: out of memory\n", path);
        free(buf);
        return 0;
    }
    C.p = p, C.line = 0, C.next = 1;
    if (header) ncf__record(&C, sep, f, NCF__MAX_FIELDS);
    while ((nf = ncf__record(&C, sep, f, NCF__MAX_FIELDS)) != -1) {
        if (nf == 0) continue;
        if (nf == -2 || nf <= (id_col > name_col ? id_col : name_col)) {
            fprintf(stderr, "demo: --item_names %s:%lld: %s\n", path, (long long)C.line,
                    nf == -2 ? "a quote opened here is never closed" : "no name on the line (an id and a name a line)");
            free(buf);
            return 0;
        }
        g_names.e[n].id = copy_value(f[id_col], &at);
        g_names.e[n++].name = copy_value(f[name_col], &at);
    }
    free(buf);
    qsort(g_names.e, (size_t)n, sizeof *g_names.e, by_id);
    for (j = k = 0; j < n; j++)
        if (!k || strcmp(g_names.e[k - 1].id, g_names.e[j].id) != 0) g_names.e[k++] = g_names.e[j];
    g_names.n = k, g_names.path = path;
    return 1;
}

/* The names: --item_names, else movies.dat, movies.csv or u.item in the ratings file's folder
   (MovieLens's titles; not for the paper's split, whose item ids are its own). */
static int load_names(const options *o, const char *ratings)
{
    static const char *const beside[3] = {"movies.dat", "movies.csv", "u.item"};
    static char path[2048];
    const char *slash;
    int dir, k;
    FILE *f;
    if (g_names.path) return 1;
    if (o->item_names) return read_names(o->item_names);
    if (!ratings) return 1;
    if (snprintf(path, sizeof path, "%s.train.rating", ratings) >= (int)sizeof path) return 1;
    if ((f = fopen(path, "rb")) != NULL) return fclose(f), 1;
    slash = strrchr(ratings, '/'), dir = slash ? (int)(slash - ratings) : 0;
    for (k = 0; k < 3; k++)
        if (snprintf(path, sizeof path, "%.*s%s%s", dir, ratings, slash ? "/" : "", beside[k]) < (int)sizeof path &&
            (f = fopen(path, "rb")) != NULL)
            return fclose(f), read_names(path);
    return 1;
}

static const char *model_name(ncf_model_type t)
{
    return t == NCF_GMF ? "GMF" : t == NCF_MLP ? "MLP" : t == NCF_MF ? "MF" : "NeuMF";
}

/* Whether a model answers about the data's users and items under the same ids, not merely as
   many (a model file without ids is matched by counts, with a warning); else why says where
   they differ. */
static int same_ids(const ncf_model *m, const ncf_dataset *d, const char *path, char *why, size_t size)
{
    char a[NCF_MAX_ID_BYTES + 1], b[NCF_MAX_ID_BYTES + 1];
    int k, t;
    if (m->cfg.num_users != d->num_users || m->cfg.num_items != d->num_items) {
        message(why, size, "%s has %d users and %d items, the data %d and %d", path, m->cfg.num_users, m->cfg.num_items,
                d->num_users, d->num_items);
        return 0;
    }
    if (ncf_id(m, NCF_USER, 0, a, sizeof a) < 0) {
        fprintf(stderr, "demo: warning: %s holds no ids; assuming the data's ids are its own\n", path);
        return 1;
    }
    for (t = 0; t < 2; t++)
        for (k = 0; k < (t ? d->num_items : d->num_users); k++) {
            if (t) ncf_id(m, NCF_ITEM, k, a, sizeof a), ncf_dataset_id(d, NCF_ITEM, k, b, sizeof b);
            else ncf_id(m, NCF_USER, k, a, sizeof a), ncf_dataset_id(d, NCF_USER, k, b, sizeof b);
            if (strcmp(a, b) != 0) {
                message(why, size, "%s was trained on other %s: its %s %d is id '%.100s', the data's is '%.100s'", path,
                        t ? "items" : "users", t ? "item" : "user", k, a, b);
                return 0;
            }
        }
    return 1;
}

/* Loads a --pretrain_* file and checks it is a `type` model of the data's ids. */
static ncf_model *load_pretrained(const char *path, ncf_model_type type, const ncf_dataset *d)
{
    ncf_model *m = NULL;
    if (ncf_load(&m, path) != NCF_OK) {
        fprintf(stderr, "demo: %s\n", ncf_error_text());
        return NULL;
    }
    if (m->cfg.model != type) {
        fprintf(stderr, "demo: %s is a %s model; wanted a %s\n", path, model_name(m->cfg.model), model_name(type));
        ncf_model_free(m);
        return NULL;
    }
    {
        char why[512];
        if (!same_ids(m, d, path, why, sizeof why)) fprintf(stderr, "demo: %s\n", why), ncf_model_free(m), m = NULL;
    }
    return m;
}

/* A NeuMF started from pre-trained GMF and MLP files (their sizes win). */
static int create_pretrained(const options *o, ncf_config *cfg, const ncf_dataset *d, ncf_model **out)
{
    ncf_model *gmf = load_pretrained(o->pretrain_gmf, NCF_GMF, d), *mlp = NULL;
    int ok = 0;
    if (gmf && (mlp = load_pretrained(o->pretrain_mlp, NCF_MLP, d)) != NULL) {
        cfg->mf_dim = gmf->cfg.mf_dim, cfg->num_layers = mlp->cfg.num_layers;
        memcpy(cfg->layers, mlp->cfg.layers, sizeof cfg->layers);
        ok = ncf_model_create(out, cfg) == NCF_OK && ncf_model_init_from(*out, gmf, mlp, (float)o->alpha) == NCF_OK &&
            ncf_model_set_ids(*out, d) == NCF_OK;
        if (!ok) fprintf(stderr, "demo: %s\n", ncf_error_text());
        else
            printf("pre-trained: GMF %s (epoch %lld), MLP %s (epoch %lld), alpha %g\n", o->pretrain_gmf,
                   (long long)gmf->epoch, o->pretrain_mlp, (long long)mlp->epoch, o->alpha);
    }
    ncf_model_free(gmf), ncf_model_free(mlp);
    return ok;
}

/* Before hours of training: will a save to PATH work? A non-empty path, not a directory or a
   device, in a folder that exists and takes new files, with room for about `bytes`. Nothing is
   written (a probe file is a name someone else could have planted). */
static int writable_beside(const char *path, const char *flag, double bytes)
{
    char dir[4096];
    const char *slash = path ? strrchr(path, '/') : NULL;
    struct stat st;
    if (!ON_ROOT) return all_ok(1);
    if (!path || !*path) {
        fprintf(stderr, "demo: %s: an empty path\n", flag);
        return all_ok(0);
    }
    if (!strcmp(path, "-")) return all_ok(1); /* (standard output: written in place) */
    if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
        fprintf(stderr, "demo: %s %s: is a folder, not a file\n", flag, path);
        return all_ok(0);
    }
    if (stat(path, &st) == 0 && !S_ISREG(st.st_mode)) return all_ok(1); /* a pipe, a terminal: written in place */
    if (snprintf(dir, sizeof dir, "%.*s", slash ? (int)(slash - path) + (slash == path) : 1, slash ? path : ".") >=
        (int)sizeof dir) {
        fprintf(stderr, "demo: %s %.100s...: the path is too long\n", flag, path);
        return all_ok(0);
    }
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
        fprintf(stderr, "demo: %s %s: cannot create a file there (no folder %s)\n", flag, path, dir);
        return all_ok(0);
    }
#ifndef _WIN32
    if (access(dir, W_OK) != 0) {
        fprintf(stderr, "demo: %s %s: cannot create a file there (%s: %s)\n", flag, path, dir, strerror(errno));
        return all_ok(0);
    }
    {
        struct statvfs fs;
        if (statvfs(dir, &fs) == 0 && (double)fs.f_bavail * (double)fs.f_frsize < bytes) {
            fprintf(stderr, "demo: %s %s: the model needs about %.1f MB, %s has %.1f MB free\n", flag, path,
                    bytes / 1e6, dir, (double)fs.f_bavail * (double)fs.f_frsize / 1e6);
            return all_ok(0);
        }
    }
#else
    (void)bytes;
#endif
    return all_ok(1);
}

/* Training diverged: the model as it was before the epoch that did, to --save. */
static void save_last_good(const void *buf, size_t len, const char *path, int flags, int epoch)
{
    ncf_model *m = NULL;
    if (ncf_load_mem(&m, buf, len) == NCF_OK && ncf_save(m, path, flags) == NCF_OK)
        fprintf(stderr, "demo: saved the last finite model (epoch %d) to %s\n", epoch, path);
    else fprintf(stderr, "demo: the last finite model could not be saved either: %s\n", ncf_error_text());
    ncf_model_free(m);
}

static int g_shards; /* --shards: the model is in shards, saved by every rank together */

/* What --save writes: what serving needs, or with --save_state (and the checkpoints that
   --checkpoint_every writes to resume from) Adam's moments too. */
static int save_flags(const options *o)
{
    return o->int8 ? NCF_SAVE_INT8 : o->save_state || o->checkpoint_every ? NCF_SAVE_ADAM : NCF_SAVE_MODEL;
}

/* (demo-mpi: rank 0 writes the file; every rank learns whether it did) */
static int save_model(const ncf_model *m, const char *path, int flags)
{
    int ok;
#ifdef NCF_MPI
    if (g_shards) { /* (collective: every rank gets the same status) */
        ok = ncf_mpi_save(m, path, flags, MPI_COMM_WORLD) == NCF_OK;
        if (!ok) fprintf(stderr, "demo: %s\n", ncf_error_text());
        return ok;
    }
#endif
    ok = !ON_ROOT || ncf_save(m, path, flags) == NCF_OK;
    if (!ok) fprintf(stderr, "demo: %s\n", ncf_error_text());
    return all_ok(ok);
}

/* The event column's kinds: what each became. */
static void print_events(const ncf_load_report *r, const options *o)
{
    int k;
    if (!r->event_kinds) return;
    printf("events (%s):", r->columns[NCF_COL_EVENT]);
    for (k = 0; k < r->event_kinds; k++) {
        printf("%s %s %lld lines", k ? "," : "", r->events[k].name, (long long)r->events[k].lines);
        if (o->load_opts.events && r->events[k].kept) printf(" (strength %g)", r->events[k].strength);
        else if (o->load_opts.events) printf(" (not listed: dropped)");
    }
    if (r->other_event_lines)
        printf(", %lld lines of other kinds%s", (long long)r->other_event_lines,
               o->load_opts.events ? " (dropped)" : "");
    printf("%s\n", o->load_opts.events ? "" : "; every line a positive (--events KIND=X,... weighs and filters them)");
}

/* What the loader read and dropped, a line each. */
static void print_read_as(const ncf_dataset *d, const options *o)
{
    static const char *const names[6] = {"user", "item", "rating", "time", "strength", "event"};
    const ncf_load_report *r = &d->report;
    int c;
    int64_t held;
    if (r->sep[0] == '\t') printf("read as: TAB-separated");
    else if (r->sep[0] == ' ') printf("read as: blank-separated");
    else printf("read as: '%s'-separated", r->sep);
    printf(", %s,", r->header ? "header" : "no header");
    for (c = 0; c < 6; c++)
        if (r->columns[c][0]) printf(" %s=%s", names[c], r->columns[c]);
    printf("%s", r->columns[NCF_COL_TIME][0] ? "" : ", no timestamps");
    if (r->text_ids[0] || r->text_ids[1])
        printf(", %s ids as text",
               r->text_ids[0] && r->text_ids[1] ? "user and item"
                   : r->text_ids[0]             ? "user"
                                                : "item");
    printf("\n");
    for (c = 0, held = 0; c < d->num_users; c++) held += (d->test_item[c] >= 0) + (d->val_item && d->val_item[c] >= 0);
    held += r->test_interactions + r->validation_interactions;
    printf("kept %lld positives of %lld interactions, %d of %d users, %d of %d items: ", (long long)d->num_train + held,
           (long long)r->interactions, d->num_users, r->users_read, d->num_items, r->items_read);
    if (o->load_opts.min_rating > -HUGE_VALF)
        printf("--min_rating %g dropped %lld interactions (%d users and %d items left with none); ",
               o->load_opts.min_rating, (long long)r->below_min_rating, r->users_below_min_rating,
               r->items_below_min_rating);
    printf("--min_ratings %d dropped %d users (%lld positives); %d items only dropped users had; %lld repeated pairs "
           "merged\n",
           o->min_ratings, r->users_few_ratings, (long long)r->few_ratings, r->items_few_ratings,
           (long long)r->duplicates);
    if (o->load_opts.min_item_ratings || o->load_opts.kcore)
        printf("--min_item_ratings %d dropped %d items (%lld positives); %d users were left with %s\n",
               o->load_opts.min_item_ratings, r->items_few_item_ratings, (long long)r->few_item_ratings,
               r->users_filtered_out,
               o->load_opts.kcore ? "too few positives and dropped (--kcore)" : "no positive and dropped");
    if (o->load_opts.kcore) printf("--kcore: the filters ran %d rounds\n", r->filter_rounds);
    print_events(r, o);
    if (r->nonpositive_ratings)
        printf("note: %lld interactions rated 0 or below were kept as positives; in many logs such a rating means "
               "'not liked' or 'not rated' (--min_rating X keeps only those rated X or more)\n",
               (long long)r->nonpositive_ratings);
    if (o->load_opts.weighting != NCF_WEIGHT_NONE)
        printf("weights: 1 + %g*%s: from %.4g to %.4g (--weighting)\n", o->load_opts.alpha,
               o->load_opts.weighting == NCF_WEIGHT_LOG ? "log(1 + strength)" : "strength", r->weight_min,
               r->weight_max);
    for (c = 0; c < 2; c++)
        if (r->blank_edged_ids[c])
            printf("%lld %s id fields begin or end with a blank: %s\n", (long long)r->blank_edged_ids[c],
                   c ? "item" : "user",
                   o->load_opts.trim_ids ? "dropped (--trim_ids)" : "kept as written (--trim_ids drops them)");
    if (r->users_every_item)
        printf("dropped %d users who rated every item left: no item would be left to rank or draw as a negative\n",
               r->users_every_item);
    if (r->holdout == NCF_HOLDOUT_PAPER)
        printf("held out: each user's item in the split's .test.rating file%s\n",
               d->val_item ? "; for validation one drawn by the seed" : "");
    else if (r->holdout == NCF_HOLDOUT_LATEST)
        printf("held out: each user's latest interaction%s (--holdout)\n",
               r->columns[NCF_COL_TIME][0] ? " by timestamp" : ", by line order");
    else if (r->holdout == NCF_HOLDOUT_RANDOM)
        printf("held out: one interaction per user, drawn by the seed%s (--holdout)\n",
               r->columns[NCF_COL_TIME][0] ? "" : ": the file has no timestamps");
    else if (r->holdout == NCF_HOLDOUT_NONE)
        printf("held out: nothing (--holdout none): trained on every interaction, "
               "no evaluation\n");
    else if (r->holdout == NCF_HOLDOUT_SAVED)
        printf("held out: the saved split's validation and test lines (%lld and %lld)\n",
               (long long)r->validation_interactions, (long long)r->test_interactions);
    else if (r->holdout == NCF_HOLDOUT_ITEMS)
        printf("held out: %.0f%% of the items whole, drawn by the seed (--holdout items), every interaction of theirs "
               "for test, and as large a share of the rest for validation: cold items, never trained on\n",
               100.0 * o->load_opts.holdout_fraction);
    else if (r->holdout == NCF_HOLDOUT_RATIO)
        printf("held out: %.0f%% of each user's positives, %s, for test, and as much of the rest for validation "
               "(--holdout ratio)\n",
               100.0 * o->load_opts.holdout_fraction,
               r->columns[NCF_COL_TIME][0] ? "its latest by timestamp" : "drawn by the seed (no timestamps)");
    else
        printf("held out: the positives at or after timestamp %lld for test%s, %lld for validation (--holdout time)\n",
               (long long)r->cutoff, r->holdout == NCF_HOLDOUT_TIME ? " (the log's last share)" : "",
               (long long)r->validation_cutoff);
    if (NCF_HOLDOUT_RATIO <= r->holdout && (r->users_only_held_out || r->items_only_held_out))
        printf("%d users had only held-out positives (%lld): not evaluated; %d items appear only held out: kept, "
               "untrained\n",
               r->users_only_held_out, (long long)r->only_held_out, r->items_only_held_out);
}

/* ---- side features: --item_features, --user_features, the cold-start figures ---- */

static void print_many(const char *what, const ncf_metrics *at, int n);

static ncf_features g_features[2]; /* (num_entities 0: none given) */
static const char *const g_side_name[2] = {"users", "items"};

/* The features files read, and what they hold beside the data. */
static int load_features(const options *o, const ncf_dataset *d)
{
    int s, k;
    for (s = 0; s < 2; s++) {
        ncf_features_opts fo = ncf_features_opts_default();
        int news = 0;
        if (!o->features[s]) continue;
        fo.columns = o->feature_cols[s], fo.trim_ids = o->load_opts.trim_ids;
        if (ncf_load_features(&g_features[s], o->features[s], &fo) != NCF_OK) {
            fprintf(stderr, "demo: %s\n", ncf_error_text());
            return 0;
        }
        for (k = 0; k < g_features[s].num_entities; k++) {
            char id[NCF_MAX_ID_BYTES + 1];
            size_t len = (size_t)(g_features[s].ids_at[k + 1] - g_features[s].ids_at[k]);
            memcpy(id, g_features[s].ids + g_features[s].ids_at[k], len), id[len] = 0;
            news += ncf_dataset_find(d, s, id) < 0;
        }
        printf("features: %s: %d %s with %d distinct features (%lld records); %d of them not in the log: new, "
               "served from their features\n",
               o->features[s], g_features[s].num_entities, g_side_name[s], g_features[s].num_features,
               (long long)g_features[s].records, news);
    }
    return 1;
}

static int have_features(void) { return g_features[0].num_entities || g_features[1].num_entities; }

/* Whether --features_only drops side s's id embedding (1 users, 2 items, 3 both). */
static int features_only(const options *o, int s) { return o->features_only == 3 || o->features_only == s + 1; }

static void free_features(void) { ncf_features_free(&g_features[0]), ncf_features_free(&g_features[1]); }

/* The model's sides given their features (trained through them from here on). */
static int attach_features(const options *o, ncf_model *m, const ncf_dataset *d)
{
    int s;
    for (s = 0; s < 2; s++) {
        int only = features_only(o, s);
        if (!g_features[s].num_entities) continue;
        if (ncf_model_set_features(m, s, &g_features[s], d, only ? NCF_FEATURES_NO_ID : 0, 1.0f) != NCF_OK) {
            fprintf(stderr, "demo: --%s_features: %s\n", s ? "item" : "user", ncf_error_text());
            return 0;
        }
        printf("features: each of the %s is %s the weighted mean of its features' embeddings%s\n", g_side_name[s],
               only ? "(--features_only)" : "its id's embedding plus", s ? " (a cold item: its features' alone)" : "");
    }
    return 1;
}

/* What a features run cannot do (yet), said before anything is trained. */
static int features_fit(const options *o)
{
    const char *no = o->seeds > 1 ? "--seeds" : o->shards ? "--shards" : NULL;
#ifdef NCF_MPI
    no = "demo-mpi";
#endif
    if (o->cfg.optimizer == NCF_OPT_ALS) no = "--optimizer als";
    if (!no) return 1;
    fprintf(stderr, "demo: side features train with Adam or SGD in one process; %s does not take them%s\n", no,
            o->tune ? " (--tune tries ALS without them)" : "");
    return 0;
}

/* The entities of the features files the model lacks added from their features alone. */
static int add_new_entities(ncf_model **m, int say)
{
    int s, added;
    for (s = 0; s < 2; s++) {
        if (!g_features[s].num_entities) continue;
        if (ncf_model_add_features(m, s, &g_features[s], &added) != NCF_OK) {
            fprintf(stderr, "demo: %s\n", ncf_error_text());
            return 0;
        }
        if (added && say) printf("added %d new %s from their features alone\n", added, g_side_name[s]);
    }
    return 1;
}

/* A cold-start split's figures over its unseen items: ranked among every item and among the
   unseen ones only, beside random, popularity and popularity by feature. */
static int report_cold(const options *o, const ncf_model *m, const ncf_dataset *d)
{
    ncf_eval_opts e = ncf_eval_opts_default();
    ncf_metrics at[NCF_MAX_KS];
    float *random = (float *)malloc(sizeof(float) * (size_t)(d->num_items ? d->num_items : 1)), *byfeat = NULL;
    int only, j, ok = random != NULL;
    uint64_t x = o->cfg.seed * 0x9E3779B97F4A7C15ull + 1;
    for (j = 0; ok && j < d->num_items; j++) /* (a fixed draw: the same baseline every run of a seed) */
        x ^= x << 13, x ^= x >> 7, x ^= x << 17, random[j] = (float)(x >> 40);
    if (ok && g_features[NCF_ITEM].num_entities) {
        byfeat = (float *)malloc(sizeof(float) * (size_t)(d->num_items ? d->num_items : 1));
        ok = byfeat && ncf_feature_popularity(&g_features[NCF_ITEM], d, byfeat) == NCF_OK;
    }
    e.seed = o->cfg.seed, e.full_ranking = 1, e.target = NCF_EVAL_TEST;
    for (only = 0; ok && only < 2; only++) {
        e.cold_only = only;
        printf("cold items, ranked among %s:\n", only ? "the unseen items only" : "every item the user has not rated");
        e.baseline = NULL;
        if ((ok = ncf_evaluate_at(m, d, &e, o->ks, o->nks, at) == NCF_OK)) print_many("model", at, o->nks);
        if (ok && (ok = ncf_evaluate_at(NULL, d, &e, o->ks, o->nks, at) == NCF_OK))
            print_many("popularity", at, o->nks);
        e.baseline = random;
        if (ok && (ok = ncf_evaluate_at(NULL, d, &e, o->ks, o->nks, at) == NCF_OK)) print_many("random", at, o->nks);
        e.baseline = byfeat;
        if (ok && byfeat && (ok = ncf_evaluate_at(NULL, d, &e, o->ks, o->nks, at) == NCF_OK))
            print_many("pop. by feature", at, o->nks);
    }
    if (!ok) fprintf(stderr, "demo: %s\n", random ? ncf_error_text() : "out of memory");
    free(random), free(byfeat);
    return ok;
}

/* ---- serving: --recommend, --recommend_for, --similar, --recommend_all ---- */

/* Blanks around an id dropped, in place (--trim_ids, as the data's ids were read). */
static void trim_id(char *id)
{
    size_t n = strlen(id), a = 0;
    while (n && (id[n - 1] == ' ' || id[n - 1] == '\t')) n--;
    while (a < n && (id[a] == ' ' || id[a] == '\t')) a++;
    memmove(id, id + a, n - a), id[n - a] = 0;
}

/* The next id of a comma-separated list *list into buf (NCF_MAX_ID_BYTES + 1 bytes), as a CSV
   field: "a, b" is one id (a quote inside doubled), anything else its bytes up to the comma,
   blanks kept unless trim. 1, 0 at the end, -1 after saying why the list is no list of ids (an
   id too long: it is never cut to another id; a quote left open). */
static int next_id(const char **list, char *buf, int trim)
{
    const char *p = *list, *q;
    size_t n = 0;
    if (!*p) return 0;
    for (q = p; *q == ' ' || *q == '\t'; q++) {}
    if (*q == '"') { /* quoted: up to the closing quote, then the comma or the end */
        for (q++; *q && !(*q == '"' && q[1] != '"'); q++) {
            if (*q == '"') q++;
            if (n == NCF_MAX_ID_BYTES) { /* (a 257th byte: too long; 256 and the quote are an id) */
                n++;
                break;
            }
            buf[n++] = *q;
        }
        if (*q != '"' || n > NCF_MAX_ID_BYTES) {
            fprintf(stderr, "demo: id list '%.60s': %s\n", p,
                    *q ? "an id longer than 256 bytes" : "a quote never closed");
            return -1;
        }
        for (q++; *q == ' ' || *q == '\t'; q++) {}
        if (*q && *q != ',') {
            fprintf(stderr, "demo: id list '%.60s': text after a closing quote\n", p);
            return -1;
        }
        buf[n] = 0;
        *list = *q ? q + 1 : q;
        return 1;
    }
    q = strchr(p, ',');
    n = q ? (size_t)(q - p) : strlen(p);
    if (n > NCF_MAX_ID_BYTES) {
        fprintf(stderr, "demo: id '%.40s...' is longer than %d bytes\n", p, NCF_MAX_ID_BYTES);
        return -1;
    }
    memcpy(buf, p, n), buf[n] = 0;
    if (trim) trim_id(buf);
    *list = q ? q + 1 : p + n;
    return 1;
}

/* The next line of f into buf (NCF_MAX_ID_BYTES + 1 bytes), its line end dropped: 1, or 0 at
   the end; -1 after saying why the line is no id (too long, or a NUL byte: /dev/zero is no
   list of ids). */
static int next_id_line(FILE *f, const char *file, int line, char *buf)
{
    size_t n = 0;
    int c;
    while ((c = getc(f)) != EOF && c != '\n') {
        if (c == 0) {
            fprintf(stderr, "demo: %s:%d: a NUL byte: not a list of ids\n", file, line);
            return -1;
        }
        if (n >= NCF_MAX_ID_BYTES && !(n == NCF_MAX_ID_BYTES && c == '\r')) { /* (256 bytes and CRLF: an id) */
            fprintf(stderr, "demo: %s:%d: an id longer than %d bytes\n", file, line, NCF_MAX_ID_BYTES);
            return -1;
        }
        buf[n++] = (char)c;
    }
    if (n && buf[n - 1] == '\r') n--;
    buf[n] = 0;
    return c != EOF || n > 0 || !feof(f) ? 1 : 0;
}

/* A file of ids to read: a regular file or a pipe, not a folder or a device. */
static FILE *open_id_file(const char *file)
{
    struct stat st;
    FILE *f;
    if (stat(file, &st) == 0 && (S_ISDIR(st.st_mode) || S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode))) {
        fprintf(stderr, "demo: %s: is a %s, not a file of ids\n", file, S_ISDIR(st.st_mode) ? "folder" : "device");
        return NULL;
    }
    if (!(f = fopen(file, "rb"))) fprintf(stderr, "demo: %s: cannot open (%s)\n", file, strerror(errno));
    return f;
}

/* The item indices of an id list (--recommend_for "ID,ID") or a file of one id a line (--allow,
   --deny, --recommend_for_file), blanks around each dropped with trim, each item once; 0 after
   naming an id the model does not know, or a list longer than any the catalogue needs (an
   endless pipe of ids: `--allow <(yes 1)` stops there). */
static int item_indices(const ncf_model *m, const char *list, const char *file, int trim, int32_t **out, int *n)
{
    char id[NCF_MAX_ID_BYTES + 1];
    FILE *f = NULL;
    int cap = 64, line = 0, ok = 1, got,
        most = m->cfg.num_items < (1 << 26) ? 16 * m->cfg.num_items + (1 << 20) : INT_MAX;
    unsigned char *seen = (unsigned char *)calloc((size_t)m->cfg.num_items, 1);
    *n = 0;
    if (file && !(f = open_id_file(file))) return free(seen), 0;
    if (!seen || !(*out = (int32_t *)malloc(sizeof(int32_t) * (size_t)cap)))
        ok = 0, *out = NULL, fprintf(stderr, "demo: out of memory\n");
    while (ok && (got = f ? next_id_line(f, file, line + 1, id) : next_id(&list, id, trim)) != 0) {
        int i;
        if (++line > most) {
            fprintf(stderr, "demo: %s: more than %d ids, more than a catalogue of %d items needs: not a list to use\n",
                    f ? file : "the id list", most, m->cfg.num_items);
            ok = 0;
            break;
        }
        if (got < 0) {
            ok = 0;
            break;
        }
        if (f && trim) trim_id(id);
        if (!id[0]) continue;
        if ((i = ncf_find(m, NCF_ITEM, id)) < 0) {
            if (f) fprintf(stderr, "demo: %s:%d: unknown item '%s'\n", file, line, id);
            else fprintf(stderr, "demo: unknown item '%s'\n", id);
            ok = 0;
        } else if (seen[i]) {
            continue; /* (an item given again: the list holds it once) */
        } else if (*n == cap) {
            int32_t *g = (int32_t *)realloc(*out, sizeof(int32_t) * (size_t)(cap *= 2));
            if (g) *out = g;
            else ok = 0, fprintf(stderr, "demo: out of memory\n");
        }
        if (ok) (*out)[(*n)++] = i, seen[i] = 1;
    }
    if (f) fclose(f);
    free(seen);
    if (!ok) free(*out), *out = NULL;
    return ok;
}

enum { OUT_TEXT = 0, OUT_CSV, OUT_JSON };

/* Whether an id needs quotes as a CSV field: a comma, a quote, a line end, or a blank at
   either end (which a reader may trim). */
static int csv_needs_quotes(const char *s)
{
    size_t n = strlen(s);
    return strpbrk(s, ",\"\r\n") || (n && (s[0] == ' ' || s[n - 1] == ' ' || s[0] == '\t' || s[n - 1] == '\t'));
}

/* Where --output csv and json write their answers: standard output, which then holds them alone
   (everything else the demo says goes to standard error: answers_apart). */
static FILE *g_answers;
static FILE *answers(void) { return g_answers ? g_answers : stdout; }

/* With --output csv or json, standard output carries the answers alone: they keep the stream,
   and what the demo says as it trains and serves goes to standard error. */
static void answers_apart(void)
{
    int fd;
    fflush(stdout);
#ifdef _WIN32
    if ((fd = _dup(_fileno(stdout))) < 0 || !(g_answers = _fdopen(fd, "w"))) return;
    _dup2(_fileno(stderr), _fileno(stdout));
#else
    if ((fd = dup(fileno(stdout))) < 0 || !(g_answers = fdopen(fd, "w"))) return;
    dup2(fileno(stderr), fileno(stdout));
#endif
}

/* The bytes of the UTF-8 character at s (1 to 4), or 0 when s starts no valid one (a stray
   continuation byte, an overlong form, a surrogate, past U+10FFFF, cut short). */
static int utf8_length(const unsigned char *s)
{
    int n = s[0] < 0x80               ? 1
        : s[0] >= 0xc2 && s[0] < 0xe0 ? 2
        : s[0] >= 0xe0 && s[0] < 0xf0 ? 3
        : s[0] >= 0xf0 && s[0] < 0xf5 ? 4
                                      : 0,
        k;
    for (k = 1; k < n; k++)
        if ((s[k] & 0xc0) != 0x80) return 0;
    if ((n == 3 && ((s[0] == 0xe0 && s[1] < 0xa0) || (s[0] == 0xed && s[1] >= 0xa0))) ||
        (n == 4 && ((s[0] == 0xf0 && s[1] < 0x90) || (s[0] == 0xf4 && s[1] >= 0x90))))
        return 0;
    return n;
}

/* s as a JSON string: quotes, backslashes and control bytes escaped, UTF-8 as it is, and each byte
   that is not UTF-8 as \udcXX (XX its value), as Python's surrogateescape reads it back: every
   line parses, and the id's bytes come back exactly (docs/serving.md). */
static void json_string(const char *s)
{
    const unsigned char *p = (const unsigned char *)s;
    FILE *f = answers();
    fputc('"', f);
    while (*p) {
        int n = utf8_length(p);
        if (*p == '"' || *p == '\\') fprintf(f, "\\%c", *p), p++;
        else if (*p < 0x20 || *p == 0x7f) fprintf(f, "\\u%04x", *p), p++;
        else if (!n) fprintf(f, "\\udc%02x", *p), p++;
        else fwrite(p, 1, (size_t)n, f), p += n;
    }
    fputc('"', f);
}

/* A score as JSON: a number, or null where the model scores no finite number (a layer stack
   that overflows: such items rank last). */
static void json_score(float x)
{
    if (x == x && x - x == 0) fprintf(answers(), "%.6g", x);
    else fputs("null", answers());
}

/* s as a CSV field on the answers' stream: quoted when it holds a comma, a quote, a line end or
   a blank at either end. */
static void csv_out(const char *s)
{
    FILE *f = answers();
    if (!csv_needs_quotes(s)) {
        fputs(s, f);
        return;
    }
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"') fputc('"', f);
        fputc(*s, f);
    }
    fputc('"', f);
}

/* An answer in --output csv or json: kind (user, new_user, similar, similar_users, item_for),
   the query (an id, or the ids given), and its items (or users: name says which) and scores. */
/* The columns of every CSV answer: --output csv's and --recommend_all's. */
#define CSV_HEADER "kind,query,rank,id,score,name"

static void print_answer(const ncf_model *m, int form, const char *kind, const char *query, const int32_t *items,
                         const float *scores, int n, int side)
{
    static int header;
    char id[NCF_MAX_ID_BYTES + 1];
    int l;
    FILE *f = answers();
    if (form == OUT_CSV && !header++) fprintf(f, "%s\n", CSV_HEADER);
    if (form == OUT_JSON)
        fprintf(f, "{\"kind\":\"%s\",\"query\":", kind), json_string(query), fprintf(f, ",\"items\":[");
    for (l = 0; l < n; l++) {
        const char *name;
        id_text(m, side, items[l], id);
        name = side == NCF_ITEM ? item_name(id) : NULL;
        if (form == OUT_CSV) {
            fprintf(f, "%s,", kind), csv_out(query), fprintf(f, ",%d,", l + 1), csv_out(id);
            fprintf(f, ",%.6g,", scores[l]), csv_out(name ? name : ""), fputc('\n', f);
        } else {
            fprintf(f, "%s{\"id\":", l ? "," : ""), json_string(id), fprintf(f, ",\"score\":"), json_score(scores[l]);
            if (name) fprintf(f, ",\"name\":"), json_string(name);
            fputc('}', f);
        }
    }
    if (form == OUT_JSON) fprintf(f, "]}\n");
    fflush(f);
}

/* A list of items with their scores, by the ids the model's data writes, with their names
   (load_names) where known. */
static void print_items(const ncf_model *m, const int32_t *items, const float *scores, int n)
{
    int l;
    for (l = 0; l < n; l++) {
        char id[NCF_MAX_ID_BYTES + 1];
        const char *name;
        id_text(m, NCF_ITEM, items[l], id);
        name = item_name(id);
        printf("%3d  %8s  %8.4f%s%.200s\n", l + 1, id, scores[l], name ? "  " : "", name ? name : "");
    }
}

/* An id as a CSV field, quoted where it needs to be. */
static void csv_field(ncf__outfile *f, const char *s)
{
    if (!csv_needs_quotes(s)) {
        ncf__outfile_write(f, s, strlen(s));
        return;
    }
    ncf__outfile_write(f, "\"", 1);
    for (; *s; s++) {
        if (*s == '"') ncf__outfile_write(f, "\"", 1);
        ncf__outfile_write(f, s, 1);
    }
    ncf__outfile_write(f, "\"", 1);
}

/* --recommend_all FILE: user,rank,item,score for every user, a block of users at a time on all
   threads, with a progress line. */
static int recommend_all(const ncf_model *m, const ncf_rec_opts *ro, const char *out)
{
    enum { MOST = 1024, SLOTS = 1 << 20 }; /* users a block, and (user, rank) slots a block */
    int block = ro->k >= SLOTS / MOST ? (SLOTS / ro->k > 0 ? SLOTS / ro->k : 1) : MOST;
    ncf__outfile *f = NULL;
    int32_t *users = (int32_t *)malloc(sizeof(int32_t) * MOST),
            *items = (int32_t *)malloc(sizeof(int32_t) * (size_t)block * (size_t)ro->k);
    float *scores = (float *)malloc(sizeof(float) * (size_t)block * (size_t)ro->k);
    int counts[MOST], u0, j, r, ok = users && items && scores, U = m->cfg.num_users, tty = isatty(2);
    double t0 = now();
    char uid[NCF_MAX_ID_BYTES + 1], iid[NCF_MAX_ID_BYTES + 1];
    if (!ok) fprintf(stderr, "demo: --recommend_all: out of memory for %d users' top %d\n", block, ro->k);
    else if (ncf__outfile_open(&f, out) != NCF_OK)
        fprintf(stderr, "demo: --recommend_all: %s\n", ncf_error_text()), ok = 0;
    if (ok) ncf__outfile_printf(f, "%s\n", CSV_HEADER);
    for (u0 = 0; ok && u0 < U; u0 += block) {
        int n = U - u0 < block ? U - u0 : block;
        for (j = 0; j < n; j++) users[j] = u0 + j;
        if (ncf_recommend_users(m, users, n, ro, items, scores, counts) != NCF_OK) {
            fprintf(stderr, "demo: %s\n", ncf_error_text());
            ok = 0;
            break;
        }
        for (j = 0; j < n; j++) {
            id_text(m, NCF_USER, u0 + j, uid);
            for (r = 0; r < counts[j]; r++) {
                const char *name;
                id_text(m, NCF_ITEM, items[(size_t)j * ro->k + r], iid);
                name = item_name(iid);
                ncf__outfile_printf(f, "recommend,"), csv_field(f, uid), ncf__outfile_printf(f, ",%d,", r + 1);
                csv_field(f, iid), ncf__outfile_printf(f, ",%.6g,", scores[(size_t)j * ro->k + r]);
                csv_field(f, name ? name : ""), ncf__outfile_printf(f, "\n");
            }
        }
        if (tty || u0 + n == U)
            fprintf(stderr, "%s  recommend_all: %d/%d users (%.0f users/s)%s", tty ? "\r" : "", u0 + n, U,
                    (u0 + n) / (now() - t0 + 1e-9), u0 + n == U ? "\n" : "   ");
    }
    if (f && !ok) ncf__outfile_discard(f);
    else if (f && ncf__outfile_commit(f) != NCF_OK)
        fprintf(stderr, "demo: --recommend_all: %s\n", ncf_error_text()), ok = 0;
    if (ok)
        printf("wrote %s: the top %d of each of %d users (%s; scores are %s)\n", out, ro->k, U, CSV_HEADER,
               ro->probabilities ? "probabilities" : "logits");
    free(users), free(items), free(scores);
    return ok;
}

/* --recommend for one user id: its top k printed in the form asked; 0 after saying why not. */
static int recommend_for_user(const ncf_model *m, const ncf_rec_opts *ro, int form, const char *id, int32_t *items,
                              float *scores)
{
    int u = ncf_find(m, NCF_USER, id), n = u < 0 ? u : ncf_recommend_index(m, u, ro, items, scores);
    if (n < 0) {
        fprintf(stderr, "demo: %s\n", ncf_error_text());
        return 0;
    }
    if (form != OUT_TEXT) {
        print_answer(m, form, "user", id, items, scores, n, NCF_ITEM);
        return 1;
    }
    printf("Top %d for user %s (items the user rated are skipped; scores are %s):\n", n, id,
           ro->probabilities ? "probabilities" : "logits");
    print_items(m, items, scores, n);
    return 1;
}

/* --recommend_file: --recommend for each id of the file (one a line; blank lines skipped). */
static int recommend_from_file(const ncf_model *m, const ncf_rec_opts *ro, int form, const char *file, int trim,
                               int32_t *items, float *scores)
{
    char id[NCF_MAX_ID_BYTES + 1];
    FILE *f = open_id_file(file);
    int ok = f != NULL, line = 0, got;
    while (ok && (got = next_id_line(f, file, ++line, id)) != 0) {
        if (got < 0) ok = 0;
        else if (trim) trim_id(id);
        if (ok && id[0]) ok = recommend_for_user(m, ro, form, id, items, scores);
    }
    if (f) fclose(f);
    return ok;
}

/* Users by index, printed as the model's ids with their scores (text), or as an answer. */
static void print_users(const ncf_model *m, int form, const char *kind, const char *query, const int32_t *users,
                        const float *scores, int n)
{
    char id[NCF_MAX_ID_BYTES + 1];
    int l;
    if (form != OUT_TEXT) {
        print_answer(m, form, kind, query, users, scores, n, NCF_USER);
        return;
    }
    for (l = 0; l < n; l++) id_text(m, NCF_USER, users[l], id), printf("%3d  %8s  %8.4f\n", l + 1, id, scores[l]);
}

/* --similar_users USER. */
#define PROFILE_SIZE 256 /* the others a NeuMF's or MLP's similarity compares scores over */

/* Whether a model's factors alone say what it scores: a NeuMF's MLP half and an MLP score a user
   and an item together, so their neighbours are found by scores (similar_by_scores). */
static int scores_say_like(const ncf_model *m) { return m->cfg.model == NCF_NEUMF || m->cfg.model == NCF_MLP; }

typedef struct {
    int32_t index;
    float like;
} neighbour;

static int by_like(const void *a, const void *b)
{
    const neighbour *x = (const neighbour *)a, *y = (const neighbour *)b;
    if (x->like != y->like) return x->like > y->like ? -1 : 1;
    return x->index < y->index ? -1 : x->index > y->index;
}

/* The k most like index on side (NCF_ITEM or NCF_USER) by the correlation of their scores over a
   fixed sample of up to PROFILE_SIZE of the other side (evenly spaced indices): two items are
   alike when the model scores them alike for the same users, whatever part of it does the
   scoring. ro's allow and deny narrow items. Returns how many, or -1 (said). */
static int similar_by_scores(const ncf_model *m, int side, int index, const ncf_rec_opts *ro, int32_t *out, float *like)
{
    int n = side == NCF_ITEM ? m->cfg.num_items : m->cfg.num_users;
    int others = side == NCF_ITEM ? m->cfg.num_users : m->cfg.num_items;
    int s_n = others < PROFILE_SIZE ? others : PROFILE_SIZE, s, j, got = 0;
    int32_t *all = (int32_t *)malloc(sizeof(int32_t) * (size_t)n);
    float *row = (float *)malloc(sizeof(float) * (size_t)n);
    double *sum = (double *)calloc((size_t)n * 3, sizeof(double)); /* per candidate: sum, squares, cross */
    neighbour *nb = (neighbour *)malloc(sizeof(neighbour) * (size_t)n);
    char *keep = (char *)malloc((size_t)n); /* the candidates allow and deny leave */
    int ok = all && row && sum && nb && keep;
    for (j = 0; ok && j < n; j++) all[j] = j, keep[j] = !(side == NCF_ITEM && ro->allow);
    for (j = 0; ok && side == NCF_ITEM && j < ro->num_allow; j++) keep[ro->allow[j]] = 1;
    for (j = 0; ok && side == NCF_ITEM && j < ro->num_deny; j++) keep[ro->deny[j]] = 0;
    for (s = 0; ok && s < s_n; s++) { /* one of the other side against every candidate */
        int other = (int)((int64_t)s * others / s_n);
        ok = ncf_predict_for(m, side == NCF_ITEM ? NCF_USER : NCF_ITEM, other, NULL, all, n, row) == NCF_OK;
        for (j = 0; ok && j < n; j++) {
            double *a = &sum[3 * (size_t)j];
            a[0] += row[j], a[1] += (double)row[j] * row[j], a[2] += (double)row[j] * row[index];
        }
    }
    for (j = 0; ok && j < n; j++) {
        const double *a = &sum[3 * (size_t)j], *q = &sum[3 * (size_t)index];
        double cov = a[2] - a[0] * q[0] / s_n, va = a[1] - a[0] * a[0] / s_n, vq = q[1] - q[0] * q[0] / s_n;
        if (j == index || !keep[j]) continue;
        nb[got].index = j, nb[got++].like = va > 0 && vq > 0 ? (float)(cov / sqrt(va * vq)) : 0.0f;
    }
    if (!ok)
        fprintf(stderr, "demo: %s\n",
                all && row && sum && nb && keep ? ncf_error_text() : "out of memory for a similarity");
    else {
        qsort(nb, (size_t)got, sizeof *nb, by_like);
        if (got > ro->k) got = ro->k;
        for (j = 0; j < got; j++) out[j] = nb[j].index, like[j] = nb[j].like;
    }
    free(all), free(row), free(sum), free(nb), free(keep);
    return ok ? got : -1;
}

static int similar_users(const ncf_model *m, const options *o, const ncf_rec_opts *ro, int32_t *out, float *scores)
{
    char id[NCF_MAX_ID_BYTES + 1];
    ncf_rec_opts so = *ro;
    int u, n;
    if (snprintf(id, sizeof id, "%s", o->similar_users) >= (int)sizeof id) {
        fprintf(stderr, "demo: --similar_users: the id is longer than %d bytes\n", NCF_MAX_ID_BYTES);
        return 0;
    }
    if (o->load_opts.trim_ids) trim_id(id);
    so.allow = so.deny = NULL, so.num_allow = so.num_deny = 0;
    u = ncf_find(m, NCF_USER, id);
    if (u >= 0 && scores_say_like(m)) {
        if ((n = similar_by_scores(m, NCF_USER, u, &so, out, scores)) < 0) return 0;
    } else if ((n = u < 0 ? u : ncf_similar(m, NCF_USER, u, &so, out, scores)) < 0) {
        fprintf(stderr, "demo: %s\n", ncf_error_text());
        return 0;
    }
    if (o->output == OUT_TEXT && scores_say_like(m))
        printf("The %d users most like %s (the correlation of their scores over %d items):\n", n, id,
               m->cfg.num_items < PROFILE_SIZE ? m->cfg.num_items : PROFILE_SIZE);
    else if (o->output == OUT_TEXT) printf("The %d users most like %s (cosine):\n", n, id);
    print_users(m, o->output, "similar_users", id, out, scores, n);
    return 1;
}

/* --item_for USER,USER: a new item folded in from its users, then the k other users it scores
   highest for, the users scored a block at a time. */
static int users_for_new_item(const ncf_model *m, const options *o, const ncf_rec_opts *ro, int32_t *out, float *scores)
{
    enum { BLOCK = 256 };
    const char *list = o->item_for;
    char id[NCF_MAX_ID_BYTES + 1];
    int U = m->cfg.num_users, k = ro->k < U ? ro->k : U, n = 0, got, ng = 0, j, r, u0, ok = 1;
    int32_t *given = (int32_t *)malloc(sizeof(int32_t) * (size_t)U), block[BLOCK];
    float *row = (float *)malloc(sizeof(float) * (size_t)ncf_row_size(m)), z[BLOCK];
    uint8_t *taken = (uint8_t *)calloc((size_t)U, 1);
    ncf_fold_opts fo = ncf_fold_opts_default();
    if (!given || !row || !taken) fprintf(stderr, "demo: out of memory for a new item\n"), ok = 0;
    if (ok && !strncmp(list, "features:", 9)) { /* a new item given by its features alone */
        const char *tok[256];
        char buf[4096], *p;
        int nt = 0, unknown;
        snprintf(buf, sizeof buf, "%s", list + 9); /* fits: or is cut at 4 KB, more features than anyone lists */
        for (p = buf; nt < 256 && p && *p; nt++) {
            tok[nt] = p;
            if ((p = strchr(p, '|')) != NULL) *p++ = 0;
        }
        if ((unknown = ncf_feature_row(m, NCF_ITEM, tok, NULL, nt, row)) < 0)
            fprintf(stderr, "demo: --item_for: %s\n", ncf_error_text()), ok = 0;
        else if (unknown == nt)
            fprintf(stderr, "demo: --item_for: none of the %d features is one the model knows\n", nt), ok = 0;
        else if (unknown && o->output == OUT_TEXT)
            printf("note: %d of the %d features are unknown to the model: skipped\n", unknown, nt);
        list = "", fo.steps = -1;
    }
    while (ok && fo.steps >= 0 && (got = next_id(&list, id, o->load_opts.trim_ids)) != 0) {
        int u = got < 0 ? -1 : ncf_find(m, NCF_USER, id);
        if (got < 0 || u < 0) {
            if (got > 0) fprintf(stderr, "demo: %s\n", ncf_error_text());
            ok = 0;
            break;
        }
        if (!taken[u]) taken[u] = 1, given[ng++] = u;
    }
    if (ok && !ng && fo.steps >= 0) fprintf(stderr, "demo: --item_for: no user given\n"), ok = 0;
    fo.l2 = 0.0f; /* an item's measured choice (docs/serving.md); the rest as a user's */
    if (ok && fo.steps >= 0 && ncf_fold_in(m, NCF_ITEM, given, ng, &fo, row) != NCF_OK)
        fprintf(stderr, "demo: %s\n", ncf_error_text()), ok = 0;
    for (u0 = 0; ok && u0 < U; u0 += BLOCK) { /* the k best of the users not given, by insertion (ties: the lower) */
        int c = U - u0 < BLOCK ? U - u0 : BLOCK;
        for (j = 0; j < c; j++) block[j] = u0 + j;
        if (ncf_predict_for(m, NCF_ITEM, -1, row, block, c, z) != NCF_OK) {
            fprintf(stderr, "demo: %s\n", ncf_error_text());
            ok = 0;
            break;
        }
        for (j = 0; j < c; j++) {
            if (taken[u0 + j] || (n == k && !(z[j] > scores[k - 1]))) continue;
            for (r = n < k ? n++ : k - 1; r > 0 && z[j] > scores[r - 1]; r--)
                scores[r] = scores[r - 1], out[r] = out[r - 1];
            scores[r] = z[j], out[r] = u0 + j;
        }
    }
    if (ok && ro->probabilities)
        for (j = 0; j < n; j++) scores[j] = 1.0f / (1.0f + expf(-scores[j]));
    if (ok && o->output == OUT_TEXT && fo.steps < 0)
        printf("The %d users a new item with features %s suits best (scores are %s):\n", n, o->item_for + 9,
               ro->probabilities ? "probabilities" : "logits");
    else if (ok && o->output == OUT_TEXT)
        printf("The %d users a new item taken by %d users suits best (folded in, %d steps; scores are %s):\n", n, ng,
               fo.steps, ro->probabilities ? "probabilities" : "logits");
    if (ok) print_users(m, o->output, "item_for", o->item_for, out, scores, n);
    free(given), free(row), free(taken);
    return ok;
}

/* Every serving flag on a trained or loaded model; 0 after saying why one failed. */
static int serve(const ncf_model *m, const options *o, const char *path)
{
    ncf_rec_opts ro = ncf_rec_opts_default();
    /* no list is longer than the catalogue: k past it would only size memory nobody fills */
    int k = o->recommend_k < m->cfg.num_items ? o->recommend_k : m->cfg.num_items > 0 ? m->cfg.num_items : 1;
    int32_t *allow = NULL, *deny = NULL, *given = NULL, *items = (int32_t *)calloc((size_t)k, sizeof(int32_t));
    float *scores = (float *)calloc((size_t)k, sizeof(float)), *row = NULL;
    const char *kind = o->probabilities ? "probabilities" : "logits", *list = o->recommend_user;
    char id[NCF_MAX_ID_BYTES + 1];
    int ok = items && scores && load_names(o, path), n, ng = 0, trim = o->load_opts.trim_ids;
    if (!items || !scores) fprintf(stderr, "demo: out of memory for a top %d\n", k);
    ro.k = k, ro.probabilities = o->probabilities, ro.threads = 1; /* (one request at a time: all threads on it) */
    if (ok && o->allow && (ok = item_indices(m, NULL, o->allow, trim, &allow, &ro.num_allow)) != 0) ro.allow = allow;
    if (ok && o->deny && (ok = item_indices(m, NULL, o->deny, trim, &deny, &ro.num_deny)) != 0) ro.deny = deny;
    while (ok && list && (n = next_id(&list, id, trim)) != 0)
        ok = n > 0 && recommend_for_user(m, &ro, o->output, id, items, scores);
    if (ok && o->recommend_file) ok = recommend_from_file(m, &ro, o->output, o->recommend_file, trim, items, scores);
    if (ok && (o->recommend_for || o->recommend_for_file)) { /* a new user, given by its items: folded in */
        ncf_fold_opts fo = ncf_fold_opts_default();
        int32_t *both = NULL;
        ok = item_indices(m, o->recommend_for_file ? NULL : o->recommend_for, o->recommend_for_file, trim, &given,
                          &ng) &&
            (row = (float *)malloc(sizeof(float) * (size_t)ncf_row_size(m)));
        if (ok && !ng) fprintf(stderr, "demo: --recommend_for: no item given\n"), ok = 0;
        if (ok && (both = (int32_t *)malloc(sizeof(int32_t) * (size_t)(ng + ro.num_deny))) != NULL) {
            memcpy(both, given, sizeof(int32_t) * (size_t)ng);
            if (deny) memcpy(both + ng, deny, sizeof(int32_t) * (size_t)ro.num_deny);
            ro.user_row = row, ro.deny = both, ro.num_deny += ng;
            n = ncf_fold_in(m, NCF_USER, given, ng, &fo, row) == NCF_OK ? ncf_recommend_index(m, -1, &ro, items, scores)
                                                                        : -1;
            if (n < 0) {
                fprintf(stderr, "demo: %s\n", ncf_error_text());
                ok = 0;
            } else if (o->output != OUT_TEXT) {
                print_answer(m, o->output, "new_user", o->recommend_for_file ? o->recommend_for_file : o->recommend_for,
                             items, scores, n, NCF_ITEM);
            } else {
                printf(
                    "Top %d for a new user with %d items (folded in, %d steps; the items given are skipped; scores are "
                    "%s):\n",
                    n, ng, fo.steps, kind);
                print_items(m, items, scores, n);
            }
            ro.user_row = NULL, ro.deny = deny, ro.num_deny -= ng;
        } else if (ok) ok = 0;
        free(both);
    }
    if (ok && o->similar) {
        int i;
        n = -1;
        if (snprintf(id, sizeof id, "%s", o->similar) >= (int)sizeof id) {
            fprintf(stderr, "demo: --similar: the id is longer than %d bytes\n", NCF_MAX_ID_BYTES);
            ok = 0;
        } else {
            if (trim) trim_id(id);
            i = ncf_find(m, NCF_ITEM, id);
            if (i >= 0 && scores_say_like(m)) ok = (n = similar_by_scores(m, NCF_ITEM, i, &ro, items, scores)) >= 0;
            else if ((n = i < 0 ? i : ncf_similar(m, NCF_ITEM, i, &ro, items, scores)) < 0)
                fprintf(stderr, "demo: %s\n", ncf_error_text()), ok = 0;
        }
        if (!ok) {
        } else if (o->output != OUT_TEXT) {
            print_answer(m, o->output, "similar", id, items, scores, n, NCF_ITEM);
        } else {
            if (scores_say_like(m))
                printf("The %d items most like %s (the correlation of their scores over %d users: a %s's factors "
                       "alone do not say what it scores):\n",
                       n, o->similar, m->cfg.num_users < PROFILE_SIZE ? m->cfg.num_users : PROFILE_SIZE,
                       model_name(m->cfg.model));
            else
                printf("The %d items most like %s (cosine of %s):\n", n, o->similar,
                       m->cfg.model == NCF_MF ? "the items' factors" : "the GMF factors");
            print_items(m, items, scores, n);
        }
    }
    if (ok && o->similar_users) ok = similar_users(m, o, &ro, items, scores);
    if (ok && o->item_for) ok = users_for_new_item(m, o, &ro, items, scores);
    if (ok && o->recommend_all) ok = recommend_all(m, &ro, o->recommend_all);
    free(allow), free(deny), free(given), free(items), free(scores), free(row);
    return ok;
}

/* Whether any serving flag was given. */
static int serving(const options *o)
{
    return o->recommend_user || o->recommend_all || o->recommend_for || o->recommend_for_file || o->recommend_file ||
        o->similar || o->similar_users || o->item_for;
}

/* The C name a header's file name gives its array: "models/model-f32.h" -> model_f32. */
static void array_name(const char *path, char *name, size_t size)
{
    static const char *words =
        " alignas alignof and and_eq asm auto bitand bitor bool break case catch char char16_t "
        "char32_t char8_t class compl concept const consteval constexpr constinit const_cast continue co_await "
        "co_return "
        "co_yield decltype default delete do double dynamic_cast else enum explicit export extern false float for "
        "friend "
        "goto if inline int long mutable namespace new noexcept not not_eq nullptr operator or or_eq private protected "
        "public register reinterpret_cast requires restrict return short signed sizeof static static_assert "
        "static_cast "
        "struct switch template this thread_local throw true try typedef typeid typename union unsigned using virtual "
        "void volatile wchar_t while xor xor_eq _Alignas _Alignof _Atomic _Bool _Complex _Generic _Imaginary _Noreturn "
        "_Static_assert _Thread_local "
        /* and what a program that serves the array also sees: main, the C library's common names */
        "main NULL EOF FILE size_t ptrdiff_t wchar_t errno assert stdin stdout stderr printf fprintf sprintf "
        "snprintf vprintf puts putchar getchar fputs fgets fopen fclose fread fwrite fflush remove rename malloc "
        "calloc realloc free exit abort atexit getenv system qsort bsearch abs labs div rand srand atoi atof strtol "
        "strtod memcpy memmove memset memcmp memchr strlen strcmp strncmp strcpy strncpy strcat strncat strchr "
        "strrchr strstr strtok time clock sqrt exp log pow sin cos tan floor ceil fabs round fmin fmax isnan isinf "
        "int8_t int16_t int32_t int64_t uint8_t uint16_t uint32_t uint64_t intptr_t uintptr_t INT_MAX SIZE_MAX ";
    const char *base = path, *p;
    char word[140];
    size_t n = 0;
    for (p = path; *p; p++)
        if (*p == '/' || *p == '\\') base = p + 1;
    if (isdigit((unsigned char)*base) && n + 1 < size) name[n++] = '_';
    for (p = base; *p && *p != '.' && n + 4 < size; p++) /* (a byte past ASCII as x and its hex: e.h, xc3xa9) */
        if ((unsigned char)*p >= 0x80) n += (size_t)snprintf(name + n, size - n, "x%02x", (unsigned char)*p);
        else name[n++] = isalnum((unsigned char)*p) ? *p : '_';
    if (!n) name[n++] = 'm';
    name[n] = 0;
    snprintf(word, sizeof word, " %s ", name); /* (fits: name and 2 blanks) a keyword is no name: int.h, int_model */
    if ((strstr(words, word) || !strncmp(name, "ncf_", 4) || !strncmp(name, "NCF_", 4)) && n + 7 < size)
        strcat(name, "_model"); /* (ncf.h's own names: ncf_model.h, ncf_model_model) */
}

/* --export_c: the model file's bytes as a C array, 8-byte aligned (ncf_model_open reads it in
   place), with its size and format in a comment. */
static int export_c(const ncf_model *m, const char *path, int int8)
{
    void *buf = NULL;
    size_t len = 0, i;
    char name[128];
    const unsigned char *b;
    ncf__outfile *f;
    if (ncf_save_mem(m, int8 ? NCF_SAVE_INT8 : NCF_SAVE_MODEL, &buf, &len) != NCF_OK) {
        fprintf(stderr, "demo: --export_c %s: %s\n", path, ncf_error_text());
        return 0;
    }
    array_name(path, name, sizeof name);
    if (ncf__outfile_open(&f, path) != NCF_OK) {
        fprintf(stderr, "demo: --export_c: %s\n", ncf_error_text());
        ncf_free(buf);
        return 0;
    }
    b = (const unsigned char *)buf;
    ncf__outfile_printf(f,
                        "/* %s: an ncf.h model (file format %d, %lu bytes) as a C array, written by demo --export_c.\n"
                        "   %s, %d users x %d items, %lu parameters%s, epoch %lld. Serve it in place (flash):\n"
                        "     ncf_model *m; if (ncf_model_open(&m, %s, sizeof %s, 0) != NCF_OK) ...\n"
                        "   (flags NCF_OPEN_VERIFIED where the firmware has checked the image itself). */\n",
                        name, NCF_FORMAT_VERSION, (unsigned long)len, model_name(m->cfg.model), m->cfg.num_users,
                        m->cfg.num_items, (unsigned long)m->num_params, int8 ? ", int8 embedding rows" : "",
                        (long long)m->epoch, name, name);
    ncf__outfile_printf(f,
                        "#if defined(_MSC_VER)\n__declspec(align(8))\n#endif\nstatic const unsigned char %s[%lu]\n"
                        "#if defined(__GNUC__) || defined(__clang__)\n    __attribute__((aligned(8)))\n#endif\n    = {",
                        name, (unsigned long)len);
    for (i = 0; i < len; i++) ncf__outfile_printf(f, "%s%u,", i % 20 ? "" : "\n", b[i]);
    ncf__outfile_printf(f, "\n};\n");
    ncf_free(buf);
    if (ncf__outfile_commit(f) != NCF_OK) {
        fprintf(stderr, "demo: --export_c: %s\n", ncf_error_text());
        return 0;
    }
    printf("exported %s: %s[%lu], model file format %d%s\n", path, name, (unsigned long)len, NCF_FORMAT_VERSION,
           int8 ? ", int8 rows" : "");
    return 1;
}

/* Side 0's (users') or 1's (items') vector k for an inner-product index, D + 1 floats: the
   users' GMF or MF factors and a 1; the items' factors weighted by the output layer (MF: by 1)
   and their MF bias (or 0). So user . item = the logit less the output bias and the user's own
   bias, which do not change a user's ranking: exact for MF and GMF, NeuMF's GMF half alone. An
   MLP has no factors: the first layer's halves instead (a rough guide). */
static void embedding(const ncf_model *m, int side, int k, float *row, float *v)
{
    int D = m->cfg.model == NCF_MLP ? m->cfg.layers[0] / 2 : m->cfg.mf_dim, d, F = m->cfg.model == NCF_MLP ? 0 : D;
    ncf_row(m, side, k, row);
    for (d = 0; d < D; d++) v[d] = row[d] * (side && F && m->cfg.model != NCF_MF && m->w_out ? m->w_out[d] : 1.0f);
    v[D] = side ? row[ncf_row_size(m) - 1] : 1.0f;
}

/* One side's vectors into its open .npy (a float32 matrix, NumPy's format 1.0) and .csv
   (id,v0,...) outputs; row and v: ncf_row_size and C floats. */
static void export_side(const ncf_model *m, int side, ncf__outfile *npy, ncf__outfile *csv, float *row, float *v)
{
    int n = side ? m->cfg.num_items : m->cfg.num_users,
        C = (m->cfg.model == NCF_MLP ? m->cfg.layers[0] / 2 : m->cfg.mf_dim) + 1;
    int k, d, hl;
    char head[128], id[NCF_MAX_ID_BYTES + 1];
    /* the header, padded with blanks to 64 bytes in all, and its line end (fits: two ints) */
    hl = snprintf(head, sizeof head, "{'descr': '<f4', 'fortran_order': False, 'shape': (%d, %d), }", n, C);
    while ((10 + hl + 1) % 64) head[hl++] = ' ';
    head[hl++] = '\n';
    ncf__outfile_write(npy, "\x93NUMPY\x01\x00", 8);
    ncf__outfile_printf(npy, "%c%c", hl & 255, hl >> 8), ncf__outfile_write(npy, head, (size_t)hl);
    ncf__outfile_printf(csv, "id");
    for (d = 0; d < C; d++) ncf__outfile_printf(csv, ",v%d", d);
    ncf__outfile_printf(csv, "\n");
    for (k = 0; k < n; k++) {
        embedding(m, side, k, row, v);
        for (d = 0; d < C; d++) { /* little-endian, whatever the host */
            uint32_t x;
            unsigned char b[4];
            memcpy(&x, &v[d], 4);
            b[0] = (unsigned char)x, b[1] = (unsigned char)(x >> 8), b[2] = (unsigned char)(x >> 16),
            b[3] = (unsigned char)(x >> 24);
            ncf__outfile_write(npy, b, 4);
        }
        csv_field(csv, id_text(m, side, k, id));
        for (d = 0; d < C; d++) ncf__outfile_printf(csv, ",%.9g", v[d]);
        ncf__outfile_printf(csv, "\n");
    }
}

/* PREFIX.users.npy, .users.csv, .items.npy and .items.csv as one output: all four replaced,
   or (a failure, a name too long) none touched. */
static int export_embeddings(const ncf_model *m, const char *prefix)
{
    static const char *const suffix[4] = {".users.npy", ".users.csv", ".items.npy", ".items.csv"};
    ncf__outfile *out[4] = {NULL, NULL, NULL, NULL};
    char path[4096];
    float *row = (float *)malloc(sizeof(float) * (size_t)ncf_row_size(m)),
          *v = (float *)malloc(sizeof(float) *
                               (size_t)((m->cfg.model == NCF_MLP ? m->cfg.layers[0] / 2 : m->cfg.mf_dim) + 1));
    int k, rc = row && v ? NCF_OK : NCF_ERR_NOMEM;
    for (k = 0; k < 4 && rc == NCF_OK; k++) {
        int n = snprintf(path, sizeof path, "%s%s", prefix, suffix[k]);
        if (n < 0 || (size_t)n >= sizeof path) {
            fprintf(stderr,
                    "demo: --export_embeddings %.80s...: the name is too long (%d bytes with its suffix; %d "
                    "at most)\n",
                    prefix, n, (int)sizeof path - 1);
            rc = NCF_ERR_ARG;
        } else if ((rc = ncf__outfile_open(&out[k], path)) != NCF_OK) {
            fprintf(stderr, "demo: --export_embeddings: %s\n", ncf_error_text());
        }
    }
    if (rc == NCF_OK) export_side(m, 0, out[0], out[1], row, v), export_side(m, 1, out[2], out[3], row, v);
    if (rc == NCF_ERR_NOMEM) fprintf(stderr, "demo: --export_embeddings: out of memory\n");
    if (rc == NCF_OK && (rc = ncf__outfiles_commit(out, 4, rc)) != NCF_OK)
        fprintf(stderr, "demo: --export_embeddings: %s\n", ncf_error_text());
    ncf__outfiles_commit(out, 4, NCF_ERR_ARG); /* (what a failure left open: discarded) */
    free(row), free(v);
    return rc == NCF_OK;
}

/* --export_c and --export_embeddings, where asked. */
static int write_exports(const ncf_model *m, const options *o)
{
    if (o->export_c && !export_c(m, o->export_c, o->int8)) return 0;
    if (o->export_embeddings && !export_embeddings(m, o->export_embeddings)) return 0;
    if (o->export_embeddings)
        printf("exported %s.users.npy, .items.npy and their .csv: %d users and %d items, %d values each\n",
               o->export_embeddings, m->cfg.num_users, m->cfg.num_items,
               (m->cfg.model == NCF_MLP ? m->cfg.layers[0] / 2 : m->cfg.mf_dim) + 1);
    return 1;
}

/* --load FILE with serving flags and no data: the model file alone. */
static int serve_file(const options *o)
{
    ncf_model *m = NULL;
    int ok;
    if (o->threads) ncf_set_threads(o->threads);
    if (ncf_load(&m, o->load) != NCF_OK) {
        fprintf(stderr, "demo: %s\n", ncf_error_text());
        return 1;
    }
    fprintf(o->output == OUT_TEXT ? stdout : stderr, "%s %s: %s, %d users, %d items, epoch %lld\n",
            serving(o) ? "serving" : "read", o->load, model_name(m->cfg.model), m->cfg.num_users, m->cfg.num_items,
            (long long)m->epoch);
    ok = write_exports(m, o) && (!serving(o) || serve(m, o, NULL));
    if (!serving(o) && !o->export_c && !o->export_embeddings)
        printf("(%s; --recommend USER, --similar ITEM and the other serving flags ask it; --data FILE evaluates "
               "it, or trains on with --train_epochs N)\n",
               m->cfg.optimizer == NCF_OPT_ALS       ? "an ALS model"
                   : m->cfg.optimizer == NCF_OPT_SGD ? "trained by SGD"
                                                     : "trained by Adam");
    ncf_model_free(m);
    return ok ? 0 : 1;
}

/* ---- evaluation, log and plot ---- */

/* One epoch's figures: sampled and full ranking, for the test and validation items. */
typedef struct {
    int epoch, trained, evaluated;
    double loss, train_s, rate, eval_s;
    ncf_metrics test, test_full, val, val_full;
    ncf_metrics test_at[NCF_MAX_KS], val_at[NCF_MAX_KS]; /* many items a user: full ranking at each --top_k */
} epoch_row;

/* The figure that chooses: --select's, else HR for one item a user and NDCG for many. */
static int select_metric(const options *o)
{
    return o->select_k ? o->select_metric : o->many ? NCF_METRIC_NDCG : NCF_METRIC_HR;
}

static const char *metric_name(int metric)
{
    static const char *const names[] = {"HR", "NDCG", "MRR", "Recall", "Precision", "MAP"};
    return metric >= 0 && metric < 6 ? names[metric] : "?";
}

/* The users an epoch's full ranking takes for validation under --eval auto: all while their
   scores cost at most about the epoch's training (a score about a third of a training
   example's work: a forward pass, no backward or update), else a fixed sample of that many,
   at least 1000; 0 means all. */
static int epoch_users(const options *o, const ncf_dataset *d, int num_neg)
{
    double examples = (double)d->num_train * (1 + num_neg), fit = 3 * examples / (d->num_items ? d->num_items : 1);
    if (o->eval_mode == EVAL_FULL || fit >= d->num_users) return 0;
    return fit < 1000 ? 1000 : (int)fit;
}

/* Many items a user: the figures at each cut-off, full ranking (popularity: m NULL). The
   validation's every epoch (over epoch_users), the test's when final (or --eval full). */
static int evaluate_many(ncf_model *m, const ncf_dataset *d, const options *o, epoch_row *r, int final)
{
    ncf_eval_opts e = ncf_eval_opts_default();
    int target;
    e.seed = o->cfg.seed, e.full_ranking = 1;
    e.cold_only = d->report.holdout == NCF_HOLDOUT_ITEMS; /* (cold start: chosen among the unseen items) */
    for (target = 0; target < (d->val_ptr ? 2 : 1); target++) {
        ncf_metrics *at = target ? r->val_at : r->test_at;
        if (!target && !final && o->eval_mode != EVAL_FULL && o->validation) continue;
        e.target = target ? NCF_EVAL_VALIDATION : NCF_EVAL_TEST;
        e.max_users = target && m ? epoch_users(o, d, m->cfg.num_neg) : 0;
        if (ncf_evaluate_at(m, d, &e, o->ks, o->nks, at) != NCF_OK) return 0;
        if (target) r->val = r->val_full = at[0];
        else r->test = r->test_full = at[0];
    }
    r->evaluated = 1;
    return 1;
}

/* Users for full ranking: all of them while users x items <= 1e8, else about 1e8 / items. */
static int full_users(const options *o, const ncf_dataset *d)
{
    if (o->full_users) return o->full_users;
    return (double)d->num_users * d->num_items <= 1e8 ? 0 : (int)(1e8 / d->num_items);
}

/* The popularity baseline's figures on the evaluation's candidates, as an epoch row (epoch -1,
   "popularity" in the log). */
static int popularity(const options *o, const ncf_dataset *d, epoch_row *r)
{
    ncf_eval_opts e = ncf_eval_opts_default();
    int target;
    e.k = o->top_k, e.seed = o->cfg.seed, e.max_users = full_users(o, d);
    memset(r, 0, sizeof *r);
    r->epoch = -1;
    if (o->many) return evaluate_many(NULL, d, o, r, 1);
    for (target = 0; target < (d->val_item ? 2 : 1); target++) {
        e.target = target ? NCF_EVAL_VALIDATION : NCF_EVAL_TEST;
        e.full_ranking = 0;
        if (ncf_evaluate(NULL, d, &e, target ? &r->val : &r->test) != NCF_OK) return 0;
        if (o->eval_mode == EVAL_SAMPLED) continue; /* (popularity is cheap: both, once) */
        e.full_ranking = 1;
        if (ncf_evaluate(NULL, d, &e, target ? &r->val_full : &r->test_full) != NCF_OK) return 0;
    }
    r->evaluated = 1;
    return 1;
}

static int evaluate(ncf_model *m, const ncf_dataset *d, const ncf_eval_opts *e, ncf_metrics *out)
{
#ifdef NCF_MPI
    return ncf_mpi_evaluate(m, d, e, MPI_COMM_WORLD, out);
#else
    return ncf_evaluate(m, d, e, out);
#endif
}

static int train_epoch(ncf_model *m, const ncf_sampler *s, int epoch, progress_state *ps, double *loss)
{
#ifdef NCF_MPI
    return ncf_mpi_train_epoch(m, s, epoch, MPI_COMM_WORLD, ON_ROOT ? on_progress : NULL, ps, loss);
#else
    return ncf_train_epoch(m, s, epoch, on_progress, ps, loss);
#endif
}

/* Whether an evaluation ranks the target in full: always under --eval full, never under
   sampled; under auto, what chooses at every epoch (--full_ranking) and the test once, final. */
static int rank_in_full(const options *o, int val, int final)
{
    if (o->eval_mode == EVAL_FULL) return 1;
    if (o->eval_mode == EVAL_SAMPLED) return 0;
    return val ? o->full_ranking : final || (o->full_ranking && !o->validation);
}

static int evaluate_epoch(ncf_model *m, const ncf_dataset *d, const options *o, epoch_row *r, int final)
{
    ncf_eval_opts e = ncf_eval_opts_default();
    int target;
    e.k = o->top_k, e.seed = m->cfg.seed, e.max_users = full_users(o, d);
    if (o->many) return evaluate_many(m, d, o, r, final);
    for (target = 0; target < (d->val_item ? 2 : 1); target++) {
        e.target = target ? NCF_EVAL_VALIDATION : NCF_EVAL_TEST;
        e.full_ranking = 0;
        if (evaluate(m, d, &e, target ? &r->val : &r->test) != NCF_OK) return 0;
        if (!rank_in_full(o, target, final)) continue;
        e.full_ranking = 1;
        if (evaluate(m, d, &e, target ? &r->val_full : &r->test_full) != NCF_OK) return 0;
    }
    r->evaluated = 1;
    return 1;
}

/* What the best epoch is chosen by: validation HR where there is a validation set; sampled,
   or full ranking with --full_ranking. */
static const ncf_metrics *chosen_by(const options *o, const epoch_row *r)
{
    if (o->many) return o->validation ? &r->val_at[select_at(o)] : &r->test_at[select_at(o)];
    return o->validation ? (o->full_ranking ? &r->val_full : &r->val) : (o->full_ranking ? &r->test_full : &r->test);
}

/* The chosen figure of a row. */
static double chosen(const options *o, const epoch_row *r)
{
    return ncf_metric_value(chosen_by(o, r), select_metric(o));
}

/* Many items a user: a line for each cut-off. */
static void print_many(const char *what, const ncf_metrics *at, int n)
{
    int j;
    for (j = 0; j < n; j++)
        printf("    %-11s @%-3d Recall %.4f  Precision %.4f  NDCG %.4f  MAP %.4f  HR %.4f  MRR %.4f  coverage %.4f  "
               "popularity %.1f\n",
               j ? "" : what, at[j].k, at[j].recall, at[j].precision, at[j].ndcg, at[j].map, at[j].hr, at[j].mrr,
               at[j].coverage, at[j].popularity);
}

static void print_metrics(const char *what, const ncf_metrics *s, const ncf_metrics *f, int k)
{
    if (f->users == 0 && s->users > 0) { /* (--eval sampled) */
        printf("    %-11s HR@%d %.4f  NDCG@%d %.4f  MRR %.4f\n", what, k, s->hr, k, s->ndcg, s->mrr);
        return;
    }
    printf("    %-11s HR@%d %.4f  NDCG@%d %.4f  MRR %.4f   full ranking: HR@%d %.4f  NDCG@%d %.4f  MRR %.4f\n", what, k,
           s->hr, k, s->ndcg, s->mrr, k, f->hr, k, f->ndcg, f->mrr);
}

/* A row's test or validation figures, as the split ranks them. */
static void print_row(const options *o, const char *what, const epoch_row *r, int val)
{
    if (o->many && (val ? r->val_at : r->test_at)[0].users) print_many(what, val ? r->val_at : r->test_at, o->nks);
    else if (o->many) return; /* (not ranked at this epoch) */
    else print_metrics(what, val ? &r->val : &r->test, val ? &r->val_full : &r->test_full, o->top_k);
}

static void log_row(ncf__outfile *f, const epoch_row *r, int validation)
{
    const ncf_metrics *m[4];
    int j;
    m[0] = &r->test, m[1] = &r->test_full, m[2] = &r->val, m[3] = &r->val_full;
    if (r->epoch < 0) ncf__outfile_printf(f, "popularity,"); /* the baseline's row, before the first evaluation's */
    else ncf__outfile_printf(f, "%d,", r->epoch);
    if (r->trained) ncf__outfile_printf(f, "%.6f", r->loss); /* the untrained model has no training loss */
    for (j = 0; j < 4; j++)
        if (r->evaluated && (j < 2 || validation))
            ncf__outfile_printf(f, ",%.6f,%.6f,%.6f", m[j]->hr, m[j]->ndcg, m[j]->mrr);
        else ncf__outfile_printf(f, ",,,");
    if (r->trained) ncf__outfile_printf(f, ",%.3f,%.0f", r->train_s, r->rate);
    else ncf__outfile_printf(f, ",,");
    if (r->evaluated) ncf__outfile_printf(f, ",%.3f\n", r->eval_s);
    else ncf__outfile_printf(f, ",\n");
}

/* --plot: the loss above, HR and NDCG below, per epoch, as SVG (no dependency). */
typedef struct {
    double x0, x1, y0, y1, ystep;
    int left, top, w, h;
} panel;

/* y from lo to hi in 4 to 10 round steps (1, 2 or 5 times a power of ten). */
static void nice_range(panel *p, double lo, double hi)
{
    double raw = (hi - lo) / 5, mag = pow(10, floor(log10(raw))), f = raw / mag;
    p->ystep = (f <= 1 ? 1 : f <= 2 ? 2 : f <= 5 ? 5 : 10) * mag;
    p->y0 = floor(lo / p->ystep) * p->ystep, p->y1 = ceil(hi / p->ystep) * p->ystep;
}

static double px(const panel *p, double x) { return p->left + (x - p->x0) / (p->x1 - p->x0) * p->w; }
static double py(const panel *p, double y) { return p->top + p->h - (y - p->y0) / (p->y1 - p->y0) * p->h; }

/* A series: 0 loss, 1 test HR, 2 test NDCG, 3 validation HR, 4 validation NDCG; 0 where absent. */
static int series_value(const epoch_row *r, int which, double *v)
{
    if (which == 0) return r->trained ? (*v = r->loss, 1) : 0;
    if (!r->evaluated) return 0;
    *v = which == 1 ? r->test.hr : which == 2 ? r->test.ndcg : which == 3 ? r->val.hr : r->val.ndcg;
    return 1;
}

static void svg_axes(ncf__outfile *f, const panel *p, const char *ylabel, int xstep)
{
    int j;
    ncf__outfile_printf(f, "<rect x='%d' y='%d' width='%d' height='%d' fill='none' stroke='#444'/>\n", p->left, p->top,
                        p->w, p->h);
    for (j = 0; p->y0 + j * p->ystep <= p->y1 + 1e-9 * p->ystep; j++) {
        double y = p->y0 + j * p->ystep;
        ncf__outfile_printf(f, "<line x1='%d' x2='%d' y1='%.1f' y2='%.1f' stroke='#ddd'/>", p->left, p->left + p->w,
                            py(p, y), py(p, y));
        ncf__outfile_printf(f, "<text x='%d' y='%.1f' text-anchor='end' font-size='12'>%g</text>\n", p->left - 6,
                            py(p, y) + 4, fabs(y) < 1e-9 * p->ystep ? 0.0 : y);
    }
    for (j = (int)p->x0; j <= (int)p->x1; j += xstep)
        ncf__outfile_printf(f, "<text x='%.1f' y='%d' text-anchor='middle' font-size='12'>%d</text>\n", px(p, j),
                            p->top + p->h + 16, j);
    ncf__outfile_printf(f, "<text x='%.1f' y='%d' text-anchor='middle' font-size='13'>epoch</text>\n",
                        p->left + p->w / 2.0, p->top + p->h + 34);
    ncf__outfile_printf(
        f, "<text transform='translate(%d,%.1f) rotate(-90)' text-anchor='middle' font-size='13'>%s</text>\n",
        p->left - 48, p->top + p->h / 2.0, ylabel);
}

static void svg_series(ncf__outfile *f, const panel *p, const epoch_row *rows, int n, int which, const char *color,
                       int dashed)
{
    int j, any = 0;
    double v;
    ncf__outfile_printf(f, "<polyline fill='none' stroke='%s' stroke-width='2'%s points='", color,
                        dashed ? " stroke-dasharray='6,4'" : "");
    for (j = 0; j < n; j++)
        if (series_value(&rows[j], which, &v))
            ncf__outfile_printf(f, "%s%.1f,%.1f", any++ ? " " : "", px(p, rows[j].epoch), py(p, v));
    ncf__outfile_printf(f, "'/>\n");
    for (j = 0; j < n; j++)
        if (series_value(&rows[j], which, &v))
            ncf__outfile_printf(f, "<circle cx='%.1f' cy='%.1f' r='2.5' fill='%s'/>", px(p, rows[j].epoch), py(p, v),
                                color);
    ncf__outfile_printf(f, "\n");
}

static int write_plot(const char *path, const char *title, const epoch_row *rows, int n, int best, int validation,
                      int k)
{
    static const char *names[5] = {"loss", "test HR@%d", "test NDCG@%d", "validation HR@%d", "validation NDCG@%d"};
    static const char *colors[5] = {"#333", "#1f77b4", "#ff7f0e", "#1f77b4", "#ff7f0e"};
    panel top, bot;
    double lo[2] = {1e300, 1e300}, hi[2] = {-1e300, -1e300}, v;
    int j, w, xstep, nseries = validation ? 5 : 3;
    ncf__outfile *f;
    if (ncf__outfile_open(&f, path) != NCF_OK) {
        fprintf(stderr, "demo: --plot: %s\n", ncf_error_text());
        return 0;
    }
    for (j = 0; j < n; j++)
        for (w = 0; w < nseries; w++)
            if (series_value(&rows[j], w, &v)) {
                int q = w > 0;
                if (v < lo[q]) lo[q] = v;
                if (v > hi[q]) hi[q] = v;
            }
    for (j = 0; j < 2; j++) {
        if (lo[j] > hi[j]) lo[j] = 0, hi[j] = 1;
        if (hi[j] - lo[j] < 1e-9) lo[j] -= 0.05, hi[j] += 0.05;
    }
    top.x0 = bot.x0 = rows[0].epoch,
    top.x1 = bot.x1 = rows[n - 1].epoch > rows[0].epoch ? rows[n - 1].epoch : rows[0].epoch + 1;
    top.left = bot.left = 80, top.w = bot.w = 600;
    top.top = 50, top.h = 170, bot.top = 290, bot.h = 250;
    nice_range(&top, lo[0], hi[0]);
    nice_range(&bot, lo[1], hi[1]);
    xstep = (int)ceil((top.x1 - top.x0) / 10.0);
    ncf__outfile_printf(f,
                        "<?xml version='1.0' encoding='UTF-8'?>\n<svg xmlns='http://www.w3.org/2000/svg' width='900' "
                        "height='600' font-family='sans-serif'>\n<rect width='900' height='600' fill='white'/>\n");
    ncf__outfile_printf(f, "<text x='450' y='26' text-anchor='middle' font-size='16'>");
    for (; *title; title++) ncf__outfile_printf(f, *title == '<' ? "&lt;" : *title == '&' ? "&amp;" : "%c", *title);
    ncf__outfile_printf(f, "</text>\n");
    svg_axes(f, &top, "training loss", xstep);
    svg_axes(f, &bot, "HR, NDCG", xstep);
    if (best >= 0) {
        for (j = 0; j < 2; j++) {
            const panel *p = j ? &bot : &top;
            ncf__outfile_printf(f,
                                "<line x1='%.1f' x2='%.1f' y1='%d' y2='%d' stroke='#2ca02c' stroke-dasharray='3,3'/>\n",
                                px(p, best), px(p, best), p->top, p->top + p->h);
        }
        ncf__outfile_printf(
            f,
            "<text x='%.1f' y='%d' text-anchor='middle' font-size='12' fill='#2ca02c'>best: epoch %d (by %s "
            "HR@%d)</text>\n",
            px(&bot, best), bot.top - 6, best, validation ? "validation" : "test", k);
    }
    svg_series(f, &top, rows, n, 0, colors[0], 0);
    for (w = 1; w < nseries; w++) svg_series(f, &bot, rows, n, w, colors[w], w >= 3);
    for (w = 0; w < nseries; w++) { /* legend, right of the panels */
        int y = (w ? bot.top + 10 : top.top + 10) + (w ? (w - 1) * 22 : 0);
        char label[64];
        snprintf(label, sizeof label, names[w], k);
        ncf__outfile_printf(f, "<line x1='700' x2='730' y1='%d' y2='%d' stroke='%s' stroke-width='2'%s/>", y, y,
                            colors[w], w >= 3 ? " stroke-dasharray='6,4'" : "");
        ncf__outfile_printf(f, "<text x='736' y='%d' font-size='12'>%s</text>\n", y + 4, label);
    }
    ncf__outfile_printf(f, "</svg>\n");
    if (ncf__outfile_commit(f) != NCF_OK) {
        fprintf(stderr, "demo: --plot: %s\n", ncf_error_text());
        return 0;
    }
    return 1;
}

/* ---- the run, in its stages ---- */

/* The data: --data (or --data_dir and --dataset) as read, or the built-in synthetic data, with
   eval negatives and the validation hold-out. */
static int load_data(const options *o, const ncf_config *cfg, const char *path, ncf_dataset *data)
{
    if (path) {
        ncf_dataset_opts lo = o->load_opts;
        lo.min_ratings = o->min_ratings;
        lo.eval_negatives = o->eval_negatives;
        lo.seed = cfg->seed;
        lo.validation = o->validation && lo.holdout != NCF_HOLDOUT_NONE;
        if (ncf_load_dataset(data, path, &lo) == NCF_OK) return 1;
        fprintf(stderr, "demo: %s%s\n", ncf_error_text(),
                strstr(ncf_error_text(), "eval negatives") ? " (--eval_negatives N)" : "");
        return 0;
    }
    if (strcmp(o->dataset, "synthetic") != 0) {
        fprintf(stderr, "demo: --dataset %s needs --data_dir DIR (or give --data PATH)\n", o->dataset);
        memset(data, 0, sizeof *data);
        return 0;
    }
    {
        int negs = o->eval_negatives ? o->eval_negatives : 99;
        if (ncf_synthetic(data, o->syn_users, o->syn_items, o->syn_ratings, 16, cfg->seed) == NCF_OK &&
            ncf_sample_eval_negatives(data, negs, cfg->seed) == NCF_OK &&
            (!o->validation || ncf_hold_out_validation(data, negs, cfg->seed) == NCF_OK))
            return 1;
        fprintf(stderr, "demo: %s\n", ncf_error_text());
        ncf_dataset_free(data);
        return 0;
    }
}

/* --tune --holdout none: the same log with nothing held out, for the winner to train on. */
static int load_everything(const options *o, const ncf_config *cfg, const char *path, ncf_dataset *all)
{
    options whole = *o;
    if (!path) {
        fprintf(stderr, "demo: --tune --holdout none trains the winner on a log's every interaction: give --data\n");
        return 0;
    }
    whole.load_opts.holdout = NCF_HOLDOUT_NONE;
    return load_data(&whole, cfg, path, all);
}

/* Whether some user holds a validation item out. */
static int has_validation(const ncf_dataset *d)
{
    int u;
    if (d->val_ptr) return d->val_ptr[d->num_users] > 0;
    for (u = 0; d->val_item && u < d->num_users; u++)
        if (d->val_item[u] >= 0) return 1;
    return 0;
}

/* What was read: users, items, positives, the held-out items and how they were chosen. */
static void print_data(const options *o, const ncf_dataset *data, const char *path, double seconds)
{
    int test_users = 0, val_users = 0, u, fu = full_users(o, data);
    if (data->test_ptr) {
        const ncf_load_report *r = &data->report;
        for (u = 0; u < data->num_users; u++) test_users += data->test_ptr[u + 1] > data->test_ptr[u];
        for (u = 0; u < data->num_users && data->val_ptr; u++) val_users += data->val_ptr[u + 1] > data->val_ptr[u];
        printf("data: %s: %d users, %d items, %lld training positives; test: %lld positives of %d users; validation: "
               "%lld of %d users (%.1f s)\n",
               path ? path : "synthetic", data->num_users, data->num_items, (long long)data->num_train,
               (long long)r->test_interactions, test_users, (long long)r->validation_interactions, val_users, seconds);
        if (path) print_read_as(data, o);
        return;
    }
    for (u = 0; u < data->num_users; u++) test_users += data->test_item[u] >= 0;
    for (u = 0; u < data->num_users && data->val_item; u++) val_users += data->val_item[u] >= 0;
    printf("data: %s: %d users, %d items, %lld training positives, %d test users", path ? path : "synthetic",
           data->num_users, data->num_items, (long long)data->num_train, test_users);
    if (test_users) printf(", %d eval candidates per user", data->num_eval_neg + 1);
    printf(" (%.1f s)\n", seconds);
    if (data->val_item)
        printf("validation: %d users, %s, %d candidates each; the best epoch is chosen on it\n", val_users,
               data->recent_item ? "each one's second latest rating" : "one training item each, drawn by the seed",
               data->num_val_neg + 1);
    if (fu && fu < test_users)
        printf("full ranking: a fixed sample of about %d of the %d users (--full_users)\n", fu, test_users);
    if (path) print_read_as(data, o);
}

/* A new model with the data's ids: whole (1), or (--shards) this rank's shard of it (2); 0 on
   failure. */
static int create_model(const options *o, const ncf_config *cfg, const ncf_dataset *data, ncf_model **model)
{
#ifdef NCF_MPI
    if (o->shards) return ncf_mpi_model_create(model, cfg, data, MPI_COMM_WORLD) == NCF_OK ? 2 : 0;
#else
    (void)o;
#endif
    return ncf_model_create(model, cfg) == NCF_OK && ncf_model_set_ids(*model, data) == NCF_OK;
}

/* The model: --load's (grown to new data), a pre-trained NeuMF, or a new one; then, under MPI,
   this rank's share of the data (and, --shards, of the model). */
/* Whether a trained Adam model has its moments (a file saved without them reads back zeros). */
static int has_moments(const ncf_model *m)
{
    size_t k;
    if (m->cfg.optimizer != NCF_OPT_ADAM || m->step == 0 || !m->adam_v) return 1;
    for (k = 0; k < m->num_params; k++)
        if (m->adam_v[k] != 0) return 1;
    return 0;
}

static int prepare_model(const options *o, ncf_config *cfg, ncf_dataset *data, ncf_model **model, int *first)
{
    int made_shard = 0; /* (2: made as this rank's shard) */
    cfg->num_users = data->num_users, cfg->num_items = data->num_items;
    if (*model) { /* --load read it */
        char why[512];
        if (o->keep_missing && ncf_dataset_add_ids(data, *model) != NCF_OK) {
            fprintf(stderr, "demo: %s\n", ncf_error_text());
            return 0;
        }
        if (!same_ids(*model, data, o->load, why, sizeof why)) { /* new data: the model grows to it */
            int u0 = (*model)->cfg.num_users, i0 = (*model)->cfg.num_items;
            if (ncf_model_grow(model, data) != NCF_OK) {
                fprintf(stderr, "demo: %s: %s%s\n", o->load, ncf_error_text(),
                        strstr(ncf_error_text(), "lacks") ? " (--keep_missing keeps them)" : "");
                return 0;
            }
            printf("grew %s to the data: %d users (%d new), %d items (%d new); known ids keep their rows\n", o->load,
                   (*model)->cfg.num_users, (*model)->cfg.num_users - u0, (*model)->cfg.num_items,
                   (*model)->cfg.num_items - i0);
        }
        *first = (int)(*model)->epoch;
        printf("loaded %s: %d epochs, %lld steps\n", o->load, *first, (long long)(*model)->step);
        if (o->train_epochs > *first && !has_moments(*model))
            printf("note: %s holds no Adam moments (saved without --save_state): training goes on from fresh "
                   "ones, close to but not the same as one unbroken run\n",
                   o->load);
    } else if (o->pretrain_gmf) {
        if (!create_pretrained(o, cfg, data, model)) return 0;
    } else if (!(made_shard = create_model(o, cfg, data, model))) {
        fprintf(stderr, "demo: %s\n", ncf_error_text());
        return 0;
    }
#ifdef NCF_MPI
    if (ncf_mpi_shard(data, MPI_COMM_WORLD) != NCF_OK ||
        (o->shards && made_shard != 2 && ncf_mpi_shard_model(*model, data, MPI_COMM_WORLD) != NCF_OK)) {
        fprintf(stderr, "demo: %s\n", ncf_error_text());
        return 0;
    }
    {
        long long most = data->num_train;
        MPI_Allreduce(MPI_IN_PLACE, &most, 1, MPI_LONG_LONG, MPI_MAX, MPI_COMM_WORLD);
        printf("MPI: %d ranks, each with its users' positives (at most %lld of %lld) and %s\n", g_ranks, most,
               (long long)data->shard.total_train,
               o->shards ? "their rows of the model (--shards)" : "the whole model");
    }
#else
    (void)made_shard;
#endif
    return !have_features() || attach_features(o, *model, data);
}

static void print_model(const ncf_config *cfg, const ncf_model *model)
{
    int l;
    printf("model: %s", model_name(cfg->model));
    if (cfg->model != NCF_MLP) printf(", factors %d", cfg->mf_dim);
    if (cfg->model == NCF_NEUMF || cfg->model == NCF_MLP) {
        printf(", layers ");
        for (l = 0; l < cfg->num_layers; l++) printf(l ? ",%d" : "%d", cfg->layers[l]);
    }
    if (cfg->optimizer == NCF_OPT_ALS) {
        printf(", %lu parameters; ALS, unobserved %g, L2 %g, seed %llu, %d threads\n", (unsigned long)model->num_params,
               cfg->unobserved, cfg->mf_reg, (unsigned long long)cfg->seed, ncf_set_threads(0));
        return;
    }
    printf(", %lu parameters; %s lr %g, batch %d, %d negatives, seed %llu, %d threads\n",
           (unsigned long)model->num_params,
           cfg->optimizer == NCF_OPT_SGD    ? "SGD"
               : cfg->adam == NCF_ADAM_LAZY ? "Adam (lazy)"
                                            : "Adam (dense)",
           cfg->lr, cfg->batch_size, cfg->num_neg, (unsigned long long)cfg->seed, ncf_set_threads(0));
}

/* What the epochs share: the model and data, the log, the rows so far, the best epoch. */
typedef struct {
    const options *o;
    const char *path;
    ncf_model *model;
    ncf_dataset *data;
    ncf_sampler sampler;
    epoch_row *rows, best, pop;
    int nrows, evaluable;
    int since_best;  /* evaluations since the chosen epoch (--patience) */
    int first;       /* the epoch the run starts from (evaluated, not trained) */
    void *last_good; /* the model before this epoch, saved if it diverges */
    size_t last_len;
    void *chosen; /* the model at the chosen epoch, for --save */
    size_t chosen_len;
    float *kept; /* --shards: this rank's part of it (parameters, then Adam's moments) */
    int64_t kept_step, kept_epoch;
    ncf_model **seeds;     /* --seeds: the models trained (model is their average), or NULL */
    ncf_sampler *samplers; /* theirs */
    char title[256];
} session;

/* --log: the popularity row (where there is an evaluation) and every epoch's so far, the file
   replaced whole each time, so a run stopped at any point leaves the log of what it did. */
static int write_log(const session *S)
{
    int j, validation = S->evaluable && S->o->validation;
    ncf__outfile *f;
    if (!S->o->log || !ON_ROOT) return 1;
    if (ncf__outfile_open(&f, S->o->log) != NCF_OK) {
        fprintf(stderr, "demo: --log: %s\n", ncf_error_text());
        return 0;
    }
    ncf__outfile_printf(f,
                        "iteration,loss,hr,ndcg,mrr,full_hr,full_ndcg,full_mrr,val_hr,val_ndcg,val_mrr,val_full_hr,"
                        "val_full_ndcg,val_full_mrr,train_s,train_ex_per_s,eval_s\n");
    if (S->evaluable) log_row(f, &S->pop, validation); /* (the baseline, before the first evaluation's row) */
    for (j = 0; j < S->nrows; j++) log_row(f, &S->rows[j], validation);
    if (ncf__outfile_commit(f) != NCF_OK) {
        fprintf(stderr, "demo: --log: %s\n", ncf_error_text());
        return 0;
    }
    return 1;
}

/* --seeds: the model evaluated, chosen and saved is the average of the seeds'. */
static int average_seeds(session *S)
{
    ncf_model *avg = NULL;
    if (ncf_model_average(&avg, S->seeds, S->o->seeds) != NCF_OK) {
        fprintf(stderr, "demo: %s\n", ncf_error_text());
        return 0;
    }
    ncf_model_free(S->model);
    S->model = avg;
    return 1;
}

/* --seeds: models from seeds --seed + 1 on beside the first, each with its own sampler. */
static int make_seeds(session *S, const ncf_config *cfg)
{
    int k, n = S->o->seeds;
    S->seeds = (ncf_model **)calloc((size_t)n, sizeof(ncf_model *));
    S->samplers = (ncf_sampler *)calloc((size_t)n, sizeof *S->samplers);
    if (!S->seeds || !S->samplers) {
        fprintf(stderr, "demo: out of memory for %d seeds\n", n);
        return 0;
    }
    S->seeds[0] = S->model, S->samplers[0] = S->sampler, S->model = NULL;
    for (k = 1; k < n; k++) {
        ncf_config c = *cfg;
        c.seed = cfg->seed + (uint64_t)k;
        if (ncf_model_create(&S->seeds[k], &c) != NCF_OK ||
            ncf_sampler_init(&S->samplers[k], S->data, c.num_neg, c.seed) != NCF_OK) {
            fprintf(stderr, "demo: seed %llu: %s\n", (unsigned long long)c.seed, ncf_error_text());
            return 0;
        }
        S->samplers[k].skip_held_out = S->sampler.skip_held_out;
        S->samplers[k].by_positive = S->sampler.by_positive;
    }
    printf("seeds: %d models, seeds %llu to %llu, trained in step; their average (%s, %d factors) is evaluated, "
           "chosen and saved\n",
           n, (unsigned long long)cfg->seed, (unsigned long long)(cfg->seed + (uint64_t)n - 1), model_name(cfg->model),
           n * cfg->mf_dim);
    return average_seeds(S);
}

static void free_seeds(session *S)
{
    int k;
    for (k = 0; S->seeds && k < S->o->seeds; k++) ncf_model_free(S->seeds[k]);
    free(S->seeds), free(S->samplers);
}

/* One epoch at its rate: --lr_decay's, falling from --learning_rate over the epochs this run
   trains (after S->first, to --train_epochs), or the model's own; with --seeds, of every seed,
   then their average. */
static int train_decayed(session *S, int epoch, progress_state *ps, double *loss)
{
    int k, n = S->seeds ? S->o->seeds : 1, rc;
    ncf_model **m = S->seeds ? S->seeds : &S->model;
    float lr = m[0]->cfg.lr;
    for (k = 0; k < n && S->o->lr_decay; k++)
        m[k]->cfg.lr = ncf__decayed_lr(lr, epoch - S->first - 1, S->o->train_epochs - S->first);
    rc = S->seeds ? ncf_train_epoch_each(m, S->samplers, n, epoch, on_progress, ps, loss)
                  : train_epoch(S->model, &S->sampler, epoch, ps, loss);
    for (k = 0; k < n; k++) m[k]->cfg.lr = lr; /* (saved and reported as given) */
    if (rc != NCF_OK) return 0;
    return !S->seeds || average_seeds(S) ? 1 : -1;
}

/* --shards: this rank's part of the model at the chosen epoch, kept in memory (each rank holds
   its users' rows: no rank can keep the whole model). */
static int keep_shard(session *S)
{
    const ncf_model *m = S->model;
    size_t n = m->num_params;
    if (!S->kept && !(S->kept = (float *)malloc(sizeof(float) * 3 * n))) {
        fprintf(stderr, "demo: out of memory to keep the chosen epoch's model\n");
        return 0;
    }
    memcpy(S->kept, m->params, sizeof(float) * n);
    if (m->adam_m)
        memcpy(S->kept + n, m->adam_m, sizeof(float) * n), memcpy(S->kept + 2 * n, m->adam_v, sizeof(float) * n);
    S->kept_step = m->step, S->kept_epoch = m->epoch;
    return 1;
}

/* What an epoch's rate counts: ALS draws no examples, it fits the positives. */
static const char *rate_unit(const ncf_model *m) { return m->cfg.optimizer == NCF_OPT_ALS ? "positives/s" : "ex/s"; }

/* One epoch's training, its checkpoint, and its line when it is not evaluated. Returns 0 on
   failure, 1 to go on to evaluation, 2 when this epoch has no evaluation. */
static int train_one(session *S, epoch_row *r, int epoch)
{
    const options *o = S->o;
    progress_state ps;
    double t, train_s;
    int rc;
    memset(&ps, 0, sizeof ps);
    ps.tty = isatty(2), ps.epoch = epoch, ps.epochs = o->train_epochs;
    if (o->hash_pipeline) {
        uint64_t first_batch, all_batches;
        if (ncf__sampler_hash(&S->sampler, epoch, S->model->cfg.batch_size, &first_batch, &all_batches) != NCF_OK) {
            fprintf(stderr, "demo: %s\n", ncf_error_text());
            return 0;
        }
        printf("Epoch %d pipeline hash: first batch %016llx, all batches %016llx\n", epoch,
               (unsigned long long)first_batch, (unsigned long long)all_batches);
    }
    t = now();
    if (o->save && !o->int8 && ON_ROOT && !o->shards) { /* the last finite model, in case this epoch diverges */
        ncf_free(S->last_good), S->last_good = NULL;
        if (ncf_save_mem(S->model, NCF_SAVE_ADAM, &S->last_good, &S->last_len) != NCF_OK) S->last_good = NULL;
    }
    if ((rc = train_decayed(S, epoch, &ps, &r->loss)) != 1) {
        if (rc < 0) return 0;
        fprintf(stderr, "demo: %s\n", ncf_error_text());
        if (S->last_good && strstr(ncf_error_text(), "not finite"))
            save_last_good(S->last_good, S->last_len, o->save, save_flags(o), epoch - 1);
        return 0;
    }
    train_s = now() - t;
    r->trained = 1, r->train_s = train_s;
    r->rate = S->model->cfg.optimizer == NCF_OPT_ALS /* (no examples: each seed fits the positives) */
        ? (double)(S->seeds ? S->o->seeds : 1) * (double)S->data->num_train / train_s
        : S->seeds ? (double)S->o->seeds * (double)S->sampler.num_examples / train_s
            : ps.warm_done < S->sampler.num_examples
            ? (double)(S->sampler.num_examples - ps.warm_done) / (now() - ps.warm_t)
            : (double)S->sampler.num_examples / train_s;
    if (o->save && o->checkpoint_every && epoch % o->checkpoint_every == 0 && epoch != o->train_epochs) {
        if (!save_model(S->model, o->save, save_flags(o))) return 0;
        printf("Epoch %d: checkpoint saved to %s\n", epoch, o->save);
    }
    if (S->evaluable && !(epoch % o->epochs_between_evals && epoch != o->train_epochs)) return 1;
    printf("Epoch %d: loss = %.4f, train %.1f s (%.0f %s)\n", epoch, r->loss, train_s, r->rate, rate_unit(S->model));
    if (!write_log(S)) return 0;
    return 2;
}

/* An epoch's evaluation: its lines, the log, the best so far (--save_best), the plot. Returns
   0 on failure, 1 to go on, 2 when --hr_threshold is reached. */
static int evaluate_one(session *S, epoch_row *r)
{
    const options *o = S->o;
    double t = now();
    int k = o->top_k;
    if (!evaluate_epoch(S->model, S->data, o, r, 0)) {
        fprintf(stderr, "demo: %s\n", ncf_error_text());
        return 0;
    }
    r->eval_s = now() - t;
    if (o->many && r->test.users)
        printf("Iteration %d: Recall@%d = %.4f, NDCG@%d = %.4f", r->epoch, k, r->test.recall, k, r->test.ndcg);
    else if (o->many)
        printf("Iteration %d: validation %s@%d = %.4f", r->epoch, metric_name(select_metric(o)), o->ks[select_at(o)],
               chosen(o, r));
    else printf("Iteration %d: HR = %.4f, NDCG = %.4f", r->epoch, r->test.hr, r->test.ndcg);
    if (r->trained) printf(", loss = %.4f, train %.1f s (%.0f %s)", r->loss, r->train_s, r->rate, rate_unit(S->model));
    printf(", eval %.2f s\n", r->eval_s);
    print_row(o, "test", r, 0);
    if (o->validation) print_row(o, "validation", r, 1);
    if (S->nrows == 1) { /* the first evaluation: is the model better than popular items? */
        print_row(o, "popularity", &S->pop, 0);
        if (o->validation) print_row(o, "(valid.)", &S->pop, 1);
    }
    fflush(stdout);
    if (!write_log(S)) return 0;
    if (!o->validation) { /* nothing is chosen: the last epoch is what is reported and saved */
        S->best = *r;
    } else if (chosen(o, r) > (S->best.epoch < 0 ? -1.0 : chosen(o, &S->best))) {
        S->best = *r, S->since_best = 0;
        if (o->save_best && !save_model(S->model, o->save_best, o->int8 ? NCF_SAVE_INT8 : NCF_SAVE_MODEL)) return 0;
        if (o->shards && !all_ok(keep_shard(S))) return 0;
        if (ON_ROOT && !o->shards) { /* kept in memory: --save writes it, and its test items are ranked, at the end */
            ncf_free(S->chosen), S->chosen = NULL;
            if (ncf_save_mem(S->model, o->save && save_flags(o) == NCF_SAVE_ADAM ? NCF_SAVE_ADAM : NCF_SAVE_MODEL,
                             &S->chosen, &S->chosen_len) != NCF_OK) {
                fprintf(stderr, "demo: %s\n", ncf_error_text());
                return 0;
            }
        }
    } else if (o->patience && ++S->since_best >= o->patience) {
        printf("Stopping: no validation gain in %d evaluations (--patience %d); epoch %d stays the chosen one\n",
               S->since_best, o->patience, S->best.epoch);
        return 2;
    }
    if (o->plot &&
        !all_ok(!ON_ROOT ||
                write_plot(o->plot, S->title, S->rows, S->nrows, o->validation ? S->best.epoch : -1, o->validation, k)))
        return 0;
    if (!o->many && chosen_by(o, r)->hr >= o->hr_threshold) {
        printf("Stopping: %s HR %.4f reached the threshold %.4f\n", o->validation ? "validation" : "test",
               chosen_by(o, r)->hr, o->hr_threshold);
        return 2;
    }
    return 1;
}

/* The epochs from first (evaluated before training) to --train_epochs. */
static int epochs(session *S, int first)
{
    int epoch, rc;
    S->first = first;
    for (epoch = first; epoch <= S->o->train_epochs || epoch == first; epoch++) {
        epoch_row *r = &S->rows[S->nrows++];
        r->epoch = epoch;
        if (epoch > first && (rc = train_one(S, r, epoch)) != 1) {
            if (!rc) return 0;
            continue;
        }
        if (!S->evaluable) continue; /* (the untrained model of --holdout none) */
        if (!(rc = evaluate_one(S, r))) return 0;
        if (rc == 2) break;
    }
    return 1;
}

/* --save: the model at the chosen epoch (kept in memory when it was chosen), or the last. */
static int save_final(session *S)
{
    const options *o = S->o;
    ncf_model *chosen = NULL;
    int ok;
    if (!o->save) return 1;
    if (S->kept) { /* --shards: the chosen epoch put back, then saved by every rank together */
        ncf_model *m = S->model;
        size_t n = m->num_params;
        memcpy(m->params, S->kept, sizeof(float) * n);
        if (m->adam_m)
            memcpy(m->adam_m, S->kept + n, sizeof(float) * n), memcpy(m->adam_v, S->kept + 2 * n, sizeof(float) * n);
        m->step = S->kept_step, m->epoch = S->kept_epoch;
        ncf_model_params_changed(m);
        if (!save_model(m, o->save, save_flags(o))) return 0;
        printf("saved %s: epoch %lld, the one chosen on validation\n", o->save, (long long)m->epoch);
        return 1;
    }
    if (!S->chosen) {
        if (!add_new_entities(&S->model, 1) || !save_model(S->model, o->save, save_flags(o))) return 0;
        printf("saved %s: epoch %lld, the last%s\n", o->save, (long long)S->model->epoch,
               S->evaluable ? " (no validation: nothing was chosen)" : "");
        return 1;
    }
    if (ncf_load_mem(&chosen, S->chosen, S->chosen_len) != NCF_OK) {
        fprintf(stderr, "demo: %s\n", ncf_error_text());
        return 0;
    }
    ok = add_new_entities(&chosen, 1) && save_model(chosen, o->save, save_flags(o));
    if (ok) printf("saved %s: epoch %lld, the one chosen on validation\n", o->save, (long long)chosen->epoch);
    ncf_model_free(chosen);
    return ok;
}

/* The chosen epoch's test figures beside popularity's on the same candidates (or, with no
   validation, the last epoch's: nothing chosen on test), and a warning when the model does
   not beat popularity where it was chosen. */
static void report_choice(const session *S)
{
    const options *o = S->o;
    const epoch_row *b = &S->best;
    int k = o->ks[select_at(o)];
    const char *name = metric_name(select_metric(o));
    if (!S->evaluable) {
        printf("No evaluation: %s\n",
               o->eval_mode == EVAL_NONE ? "--eval none" : "nothing was held out (--holdout none)");
        return;
    }
    if (!o->validation)
        printf("Last epoch, %d (no validation: no epoch is chosen, since choosing on test would overstate it):\n",
               b->epoch);
    else
        printf("Chosen on validation%s %s@%d: epoch %d (validation %s@%d %.4f; popularity %.4f); at that epoch:\n",
               o->full_ranking && !o->many ? " full-ranking" : "", name, k, b->epoch, name, k, chosen(o, b),
               chosen(o, &S->pop));
    print_row(o, "test", b, 0);
    print_row(o, "popularity", &S->pop, 0);
    if (o->validation && chosen(o, b) <= chosen(o, &S->pop))
        printf("warning: the model is no better than recommending the most popular items on validation (%s@%d %.4f "
               "against %.4f): try another model or its settings (--model mf --num_factors 64, a learning rate, more "
               "epochs)\n",
               name, k, chosen(o, b), chosen(o, &S->pop));
}

/* The chosen (or last) epoch's test items ranked in full, once, where the epochs did not: the
   model kept at that epoch, or the current one. */
static int final_test(session *S)
{
    const options *o = S->o;
    ncf_model *kept = NULL;
    epoch_row r = S->best;
    int ok;
    if (!S->evaluable || S->best.epoch < 0 || o->eval_mode == EVAL_FULL || (!o->many && o->eval_mode == EVAL_SAMPLED) ||
        (!o->many && S->best.test_full.users))
        return 1;
    if (S->chosen && S->best.epoch != (int)S->model->epoch && ncf_load_mem(&kept, S->chosen, S->chosen_len) != NCF_OK) {
        fprintf(stderr, "demo: %s\n", ncf_error_text());
        return 0;
    }
    ok = evaluate_epoch(kept ? kept : S->model, S->data, o, &r, 1);
    if (!ok) fprintf(stderr, "demo: %s\n", ncf_error_text());
    S->best.test = r.test, S->best.test_full = r.test_full;
    memcpy(S->best.test_at, r.test_at, sizeof r.test_at);
    ncf_model_free(kept);
    return ok;
}

/* The chosen epoch's figures, the saves and the serving asked for. */
static int finish(session *S)
{
    const options *o = S->o;
    if (!final_test(S)) return 0;
    report_choice(S);
    if (S->evaluable && S->data->report.holdout == NCF_HOLDOUT_ITEMS) {
        ncf_model *kept = NULL;
        int ok;
        if (S->chosen && S->best.epoch != (int)S->model->epoch &&
            ncf_load_mem(&kept, S->chosen, S->chosen_len) != NCF_OK) {
            fprintf(stderr, "demo: %s\n", ncf_error_text());
            return 0;
        }
        ok = report_cold(o, kept ? kept : S->model, S->data);
        ncf_model_free(kept);
        if (!ok) return 0;
    }
    if (o->save_best) printf("saved %s (epoch %d, the best)\n", o->save_best, S->best.epoch);
    if (!save_final(S)) return 0;
    if (ON_ROOT && !write_exports(S->model, o)) return 0;
    if (ON_ROOT && serving(o) && have_features() && !add_new_entities(&S->model, !o->save)) return 0;
    if (ON_ROOT && serving(o) && !serve(S->model, o, S->path)) return 0;
    return 1;
}

/* Everything before the first epoch: the log, the rows, the save paths checked. */
static int start_session(session *S, const ncf_config *cfg, int first)
{
    const options *o = S->o;
    double bytes = (double)S->model->num_params * (o->int8 ? 1.5 : 12.0) +
        8.0 * (S->model->cfg.num_users + S->model->cfg.num_items);
    if ((o->save && !writable_beside(o->save, "--save", bytes)) ||
        (o->save_best && !writable_beside(o->save_best, "--save_best", bytes)))
        return 0;
    if (o->log && !writable_beside(o->log, "--log", 4096)) return 0;
    S->rows = (epoch_row *)calloc((size_t)(o->train_epochs > first ? o->train_epochs - first : 0) + 1, sizeof *S->rows);
    if (!S->rows) {
        fprintf(stderr, "demo: out of memory\n");
        return 0;
    }
    S->best.epoch = -1;
    message(S->title, sizeof S->title, "%s on %.200s, seed %llu", model_name(cfg->model),
            S->path ? S->path : "synthetic data", (unsigned long long)cfg->seed);
    return 1;
}

/* ---- --tune: the search, its table, the winner trained on training + validation ---- */

/* A run's side features in a few words: " items: features alone x0.71" (under 60 bytes). */
static void trial_features(const ncf_trial *t, char *out, size_t size)
{
    static const char *const how[3] = {"", "id + features", "features alone"};
    int n = 0, s;
    out[0] = 0;
    for (s = 0; s < 2 && n >= 0 && (size_t)n < size; s++)
        if (t->features[s]) n += snprintf(out + n, size - (size_t)n, " %s: %s", g_side_name[s], how[t->features[s]]);
    if (n > 0 && (size_t)n < size) snprintf(out + n, size - (size_t)n, " x%.2f", t->feature_scale);
}

/* A run's settings in a few words: "MF f64 lr 0.0021 L2 0.0003 neg 4 batch 1024 weighted" (under
   160 bytes: the callers' 200 hold it). */
static void trial_settings(const ncf_trial *t, char *out, size_t size)
{
    const ncf_config *c = &t->cfg;
    char feats[64];
    int n = snprintf(out, size, "%-5s f%-3d", model_name(c->model), c->mf_dim);
    if (c->model == NCF_NEUMF && n > 0 && (size_t)n < size)
        n += snprintf(out + n, size - (size_t)n, " mlp%-3d", c->layers[0]);
    else if (n > 0 && (size_t)n < size) n += snprintf(out + n, size - (size_t)n, "       ");
    if (n > 0 && (size_t)n < size && c->optimizer == NCF_OPT_ALS)
        n += snprintf(out + n, size - (size_t)n, " ALS unobserved %-6.2g L2 %-9.2g%s", c->unobserved, c->mf_reg,
                      t->weighted ? " weighted" : "");
    else if (n > 0 && (size_t)n < size)
        n += snprintf(out + n, size - (size_t)n, " lr %.5f L2 %-9.2g neg %d batch %-4d%s%s", c->lr, c->mf_reg,
                      c->num_neg, c->batch_size, t->decay ? " decay" : "", t->weighted ? " weighted" : "");
    trial_features(t, feats, sizeof feats);
    if (n > 0 && (size_t)n < size) snprintf(out + n, size - (size_t)n, "%s", feats); /* fits: 100 + 64 < 200 */
}

/* The same, its padding squeezed out: "MF f64 lr 0.00220 L2 0.017 neg 2 batch 256". */
static void trial_words(const ncf_trial *t, char *out, size_t size)
{
    char wide[200];
    size_t i, n = 0;
    trial_settings(t, wide, sizeof wide);
    for (i = 0; wide[i] && n + 1 < size; i++)
        if (wide[i] != ' ' || (n > 0 && out[n - 1] != ' ')) out[n++] = wide[i];
    while (n > 0 && out[n - 1] == ' ') n--;
    out[n] = 0;
}

typedef struct {
    int printed, averaged, k, tty, metric, metric_k; /* metric@metric_k: what chooses */
    double t0, run_t0, last_line;                    /* last_line: when a plain progress line last went to a log */
    double budget;                                   /* the planned seconds, to say what is left of them */
} tune_state;

#define TUNE_LOG_EVERY 10.0 /* seconds between progress lines in a log (a terminal's line redraws) */

/* Within a run: a redrawn line on a terminal; in a log a plain line when a run has gone on
   TUNE_LOG_EVERY seconds since the last line. */
static void on_tune_epoch(void *user, const ncf_trial *run, int epoch, double loss, const ncf_metrics *val)
{
    tune_state *st = (tune_state *)user;
    double t = now(), ran = t - st->run_t0;
    char line[200], hr[48] = "", shown[24] = "-"; /* (ALS has no loss) */
    if (val)
        snprintf(hr, sizeof hr, ", validation %s@%d %.4f", metric_name(st->metric), st->metric_k, /* (fits: */
                 ncf_metric_value(val, st->metric)); /* a metric's name, K <= 10000 and a figure in [0, 1]) */
    if (loss == loss) snprintf(shown, sizeof shown, "%.4f", loss);
    message(line, sizeof line, "trial %d, rung %d: epoch %d of %d, loss %s%s (%.1f s, planned %.1f; %.0f s of %.0f)",
            run->trial, run->rung, epoch, run->epochs, shown, hr, ran, run->planned_seconds, t - st->t0, st->budget);
    if (st->tty) fprintf(stderr, "\r  %-100s", line);
    else if (t - st->last_line >= TUNE_LOG_EVERY && ran >= TUNE_LOG_EVERY) {
        fprintf(stderr, "  %s\n", line);
        st->last_line = t;
    }
}

/* A row of the table; seeds > 1: the winner's seeds, averaged (rung 3). */
static void print_run(const ncf_trial *t, int k, double seconds, int seeds)
{
    char what[200], seeds_note[40];
    trial_settings(t, what, sizeof what);
    snprintf(seeds_note, sizeof seeds_note, " %d seeds averaged", seeds);
    printf("  %5d %4d  %s  HR@%d %.4f NDCG@%d %.4f  epoch %2d of %2d  %5.1f s (planned %.1f)%s\n", t->trial, t->rung,
           what, k, t->val.hr, k, t->val.ndcg, t->chosen_epoch, t->epochs_trained, seconds, t->planned_seconds,
           seeds > 1        ? seeds_note
               : t->partner ? " 2 at once, partner"
               : t->beside  ? " 2 at once"
                            : "");
    fflush(stdout);
}

static void on_tune(void *user, const ncf_tune_report *so_far, const ncf_trial *next)
{
    tune_state *st = (tune_state *)user;
    double t = now();
    while (so_far->num_runs > st->printed) /* (two runs at once end together, and share their time) */
        print_run(&so_far->runs[st->printed++], st->k, t - st->run_t0, 1);
    if (!next && so_far->averaged.rung == 3 && !st->averaged++)
        print_run(&so_far->averaged, st->k, t - st->run_t0, so_far->seeds);
    st->run_t0 = st->last_line = t;
    if (next && next->rung == 3 && isatty(2))
        fprintf(stderr, "\r  trial %d from %d seeds, averaged: %d epochs at most (planned %.1f s; %.0f s so far)   ",
                next->trial, so_far->seeds, next->epochs, next->planned_seconds, t - st->t0);
    else if (next && isatty(2))
        fprintf(stderr, "\r  trial %d, rung %d: %d epochs at most (planned %.1f s; %.0f s so far)   ", next->trial,
                next->rung, next->epochs, next->planned_seconds, t - st->t0);
    else if (isatty(2)) fprintf(stderr, "\r%*s\r", 110, "");
}

/* --log with --tune: one CSV row a run. */
static int write_tune_log(const char *path, const ncf_tune_report *r)
{
    static const char *const feature_use[3] = {"none", "with_id", "alone"};
    ncf__outfile *f;
    int i;
    if (!path || !ON_ROOT) return 1;
    if (ncf__outfile_open(&f, path) != NCF_OK) {
        fprintf(stderr, "demo: --log: %s\n", ncf_error_text());
        return 0;
    }
    ncf__outfile_printf(
        f,
        "trial,rung,model,factors,mlp,lr,l2,num_neg,batch,weighted,decay,epochs,epochs_trained,chosen_epoch,"
        "val_hr,val_ndcg,val_mrr,planned_s,winner,beside,partner,seeds,optimizer,unobserved,user_features,"
        "item_features,feature_scale\n");
    for (i = 0; i <= r->num_runs; i++) { /* (the runs, then the winner's seeds averaged) */
        const ncf_trial *t = i < r->num_runs ? &r->runs[i] : &r->averaged;
        if (i == r->num_runs && t->rung != 3) break;
        ncf__outfile_printf(
            f, "%d,%d,%s,%d,%d,%.6g,%.6g,%d,%d,%d,%d,%d,%d,%d,%.6f,%.6f,%.6f,%.3f,%d,%d,%d,%d,%s,%.6g,%s,%s,%.6g\n",
            t->trial, t->rung, model_name(t->cfg.model), t->cfg.mf_dim,
            t->cfg.model == NCF_NEUMF ? t->cfg.layers[0] : 0, t->cfg.lr, t->cfg.mf_reg, t->cfg.num_neg,
            t->cfg.batch_size, t->weighted, t->decay, t->epochs, t->epochs_trained, t->chosen_epoch, t->val.hr,
            t->val.ndcg, t->val.mrr, t->planned_seconds, i == r->best, t->beside, t->partner,
            i < r->num_runs ? 1 : r->seeds,
            t->cfg.optimizer == NCF_OPT_ALS       ? "als"
                : t->cfg.optimizer == NCF_OPT_SGD ? "sgd"
                                                  : "adam",
            t->cfg.optimizer == NCF_OPT_ALS ? t->cfg.unobserved : 0.0, feature_use[t->features[0]],
            feature_use[t->features[1]], (double)t->feature_scale);
    }
    if (ncf__outfile_commit(f) != NCF_OK) {
        fprintf(stderr, "demo: --log: %s\n", ncf_error_text());
        return 0;
    }
    return 1;
}

/* --tune --holdout none: the winner trained anew on every interaction, in place of *m. */
static int tune_on_all(const ncf_dataset *all, const ncf_tune_report *rep, ncf_model **m)
{
    progress_state ps;
    ncf_model *shipped = NULL;
    memset(&ps, 0, sizeof ps);
    ps.tty = isatty(2), ps.count_epochs = 1, ps.epochs = rep->final_epochs;
    printf("training the same settings on every interaction (--holdout none): %lld positives, %d epochs\n",
           (long long)all->num_train, rep->final_epochs);
    if (ncf_tune_final(&shipped, all, rep, on_progress, &ps) != NCF_OK) {
        fprintf(stderr, "demo: %s\n", ncf_error_text());
        return 0;
    }
    ncf_model_free(*m), *m = shipped;
    return 1;
}

/* A search past its budget by more than a quarter says so, and why: a machine busy with other
   work (this process got less processor time than its threads could use), or slower than the
   plan's reference. */
static void say_if_past_budget(double budget, double wall, double cpu)
{
    int threads = ncf_set_threads(0);
    if (!(wall > 1.25 * budget)) return;
    if (cpu < 0.6 * wall * threads)
        printf("note: the search took %.0f s, %.1fx its budget of %.0f s: the machine was busy (it had %.0f%% of %d "
               "threads' time); the plan is the same on any machine, its seconds are an idle one's\n",
               wall, wall / budget, budget, 100.0 * cpu / (wall * threads), threads);
    else
        printf("note: the search took %.0f s, %.1fx its budget of %.0f s: this machine is slower than the plan's "
               "reference (an idle 2-core machine, docs/tuning.md) at these settings; the plan is the same on any "
               "machine\n",
               wall, wall / budget, budget);
}

/* The tuned model's test figures, read once, beside popularity's. */
static int report_tuned(const options *o, const ncf_dataset *d, const epoch_row *pop, ncf_model *m, double t0)
{
    ncf_eval_opts e = ncf_eval_opts_default();
    ncf_metrics test, test_full;
    int k = o->top_k;
    if (o->many) {
        epoch_row r;
        memset(&r, 0, sizeof r);
        if (!evaluate_many(m, d, o, &r, 1)) {
            fprintf(stderr, "demo: %s\n", ncf_error_text());
            return 0;
        }
        printf("Tuned, %.0f s in all; the test items, read once:\n", now() - t0);
        print_row(o, "test", &r, 0);
        print_row(o, "popularity", pop, 0);
        return 1;
    }
    e.k = k, e.seed = o->cfg.seed, e.max_users = full_users(o, d);
    if (ncf_evaluate(m, d, &e, &test) != NCF_OK || (e.full_ranking = 1, ncf_evaluate(m, d, &e, &test_full)) != NCF_OK) {
        fprintf(stderr, "demo: %s\n", ncf_error_text());
        return 0;
    }
    printf("Tuned, %.0f s in all; the test items, read once:\n", now() - t0);
    print_metrics("test", &test, &test_full, k);
    print_metrics("popularity", &pop->test, &pop->test_full, k);
    return 1;
}

/* The search, the winner trained on training + validation into *out, its test figures beside
   popularity's. Returns 0 on failure, 1 with *out set, 2 when the budget fits no run (the
   caller trains the defaults). */
static int tune(const options *o, const ncf_dataset *d, const ncf_dataset *all, const epoch_row *pop, ncf_model **out)
{
    ncf_tune_opts to = ncf_tune_opts_default();
    ncf_tune_report rep;
    ncf_config dc = ncf_config_default(); /* trial 0: what the too-small message costs */
    tune_state st;
    double t0 = now();
    clock_t c0 = clock(); /* (the process's processor time, to tell a busy machine from a slow one) */
    int k;
    progress_state ps;
    memset(&st, 0, sizeof st), memset(&ps, 0, sizeof ps);
    dc.num_users = d->num_users, dc.num_items = d->num_items;
    to.seed = o->cfg.seed, to.eval.k = o->ks[select_at(o)], to.progress = on_tune, to.ctx = &st;
    to.epoch_done = on_tune_epoch, st.tty = isatty(2), st.metric = to.eval.metric, st.metric_k = to.eval.k;
    to.eval.metric = select_metric(o), to.eval.full_ranking = o->many || o->full_ranking;
    if (o->patience) to.patience = o->patience;
    to.seeds = o->tune_seeds;
    to.eval.cold_only = d->report.holdout == NCF_HOLDOUT_ITEMS; /* (cold start: chosen among the unseen items) */
    for (k = 0; k < 2; k++) {
        to.features[k] = g_features[k].num_entities ? &g_features[k] : NULL;
        to.feature_flags[k] = features_only(o, k) ? NCF_FEATURES_NO_ID : 0;
    }
    k = o->top_k;
    to.budget = o->tune_seconds > 0 ? o->tune_seconds : ncf__tune_budget(d); /* (printed before the search) */
    st.budget = to.budget;
    st.k = k, st.t0 = st.run_t0 = t0;
    printf("tune: successive halving on the validation split, seed %llu, a planned budget of %.0f s (%s)\n",
           (unsigned long long)to.seed, to.budget, o->tune_seconds > 0 ? "--tune SECONDS" : "from the data's size");
    printf("  trial rung  settings                                                      validation          "
           "chosen          time\n");
    if (ncf_tune(d, &to, &rep) != NCF_OK) {
        fprintf(stderr, "demo: %s\n", ncf_error_text());
        return 0;
    }
    if (rep.too_small) {
        printf("tune: a budget of %.0f s is too small for one run (the defaults' first rung plans %.1f s, and the "
               "runs have three quarters of the budget): training the defaults\n",
               to.budget, ncf__tune_cost(&dc, d, to.max_epochs / 9));
        return 2;
    }
    {
        const ncf_trial *w = &rep.runs[rep.best];
        char what[200];
        trial_words(w, what, sizeof what);
        printf("tune: %d settings, %d runs (rungs of %d, %d and %d epochs), %.0f s (planned %.0f s)\n", rep.num_trials,
               rep.num_runs, rep.rung_epochs[0], rep.rung_epochs[1], rep.rung_epochs[2], now() - t0,
               rep.planned_seconds);
        const char *name = metric_name(to.eval.metric);
        double v = ncf_metric_value(&w->val, to.eval.metric);
        printf("chosen on validation: trial %d, %s, epoch %d (validation %s@%d %.4f; popularity %.4f)\n", w->trial,
               what, w->chosen_epoch, name, to.eval.k, v, chosen(o, pop));
        if (v <= chosen(o, pop))
            printf("warning: even the best settings found are no better than recommending the most popular items on "
                   "validation (%s@%d %.4f against %.4f)\n",
                   name, to.eval.k, v, chosen(o, pop));
        if (rep.seeds > 1) {
            printf("its %d seeds on training alone, their scores averaged: validation %s@%d %.4f at epoch %d of %d\n",
                   rep.seeds, name, to.eval.k, ncf_metric_value(&rep.averaged.val, to.eval.metric),
                   rep.averaged.chosen_epoch, rep.averaged.epochs_trained);
            printf("training them on training + validation for %d epochs, averaged (one %s of %d factors)\n",
                   rep.final_epochs, model_name(w->cfg.model), rep.seeds * w->cfg.mf_dim);
        } else printf("training it on training + validation for %d epochs\n", rep.final_epochs);
    }
    ps.tty = isatty(2), ps.count_epochs = 1, ps.epochs = rep.final_epochs;
    if (!write_tune_log(o->log, &rep) || ncf_tune_final(out, d, &rep, on_progress, &ps) != NCF_OK ||
        !report_tuned(o, d, pop, *out, t0) ||
        (have_features() && d->report.holdout == NCF_HOLDOUT_ITEMS && !report_cold(o, *out, d)) ||
        (all && !tune_on_all(all, &rep, out))) {
        if (!*out) fprintf(stderr, "demo: %s\n", ncf_error_text());
        ncf_tune_report_free(&rep);
        return 0;
    }
    say_if_past_budget(rep.budget, now() - t0, (double)(clock() - c0) / CLOCKS_PER_SEC);
    ncf_tune_report_free(&rep);
    return 1;
}

/* --tune's model: saved, exported and served as a trained one (a features model's new
   entities added first). */
static int finish_tuned(const options *o, ncf_model **mp, const char *path)
{
    const ncf_model *m;
    if (have_features() && (o->save || serving(o)) && !add_new_entities(mp, 1)) return 0;
    m = *mp;
    if (o->save) {
        if (!save_model(m, o->save, save_flags(o))) return 0;
        printf("saved %s: the tuned settings trained on %s (%lld epochs)\n", o->save,
               o->tune_all ? "every interaction; the test figures above are what they earned on the split"
                           : "training + validation",
               (long long)m->epoch);
    }
    if (!write_exports(m, o)) return 0;
    if (serving(o) && !serve(m, o, path)) return 0;
    return 1;
}

/* --shards: what a run can do with a model no rank holds whole. */
static int shards_ok(const options *o)
{
    if (!o->shards) return 1;
#ifndef NCF_MPI
    fprintf(stderr, "demo: --shards splits the model over MPI ranks: it is demo-mpi's (make demo-mpi)\n");
    return 0;
#else
    if (!o->int8 && !o->export_c && !o->export_embeddings && !serving(o) && !o->tune) return 1;
    fprintf(stderr,
            "demo: --shards: no rank holds the whole model, so it does not go with --int8, --export_c, "
            "--export_embeddings, --tune or serving (--save, then --load the file in the demo)\n");
    return 0;
#endif
}

static int run(const options *asked)
{
    ncf_dataset data, all;           /* all: --tune --holdout none's every interaction */
    options eff = *asked, *o = &eff; /* (validation as the data allows it) */
    ncf_config cfg = o->cfg;
    char buf[2048];
    session S;
    double t;
    int first = 0, rc = 1, ok;

    memset(&S, 0, sizeof S), memset(&all, 0, sizeof all);
    S.o = o, S.data = &data, S.path = data_path(o, buf, sizeof buf);
    if ((o->data_dir && !o->data && !S.path) || !shards_ok(o)) return 1;
    g_shards = o->shards;
    if (o->threads) ncf_set_threads(o->threads);
    if (o->load) { /* first: its seed (and config) win, so its figures come out the same */
        if (ncf_load(&S.model, o->load) != NCF_OK) {
            fprintf(stderr, "demo: %s\n", ncf_error_text());
            return 1;
        }
        cfg = S.model->cfg;
    }
    t = now();
    if (!load_data(o, &cfg, S.path, &data)) {
        ncf_model_free(S.model);
        return 1;
    }
    eff.many = data.test_ptr != NULL;
#ifdef NCF_MPI
    if (eff.eval_mode == EVAL_AUTO) eff.eval_mode = EVAL_FULL; /* (ranks rank together: every figure every epoch) */
#endif
    eff.validation = has_validation(&data);
    if (asked->validation && !eff.validation && data.report.holdout != NCF_HOLDOUT_NONE)
        printf("validation: none (no user has two training items to hold one out): nothing is chosen, the last epoch "
               "is reported\n");
    if (asked->patience && !eff.validation) eff.patience = 0;
    print_data(o, &data, S.path, now() - t);
    if (!load_features(o, &data) || (have_features() && !features_fit(o))) {
        free_features(), ncf_model_free(S.model), ncf_dataset_free(&data);
        return 1;
    }
    if (o->save_split && ON_ROOT) {
        if (ncf_save_split(&data, o->save_split) != NCF_OK) {
            fprintf(stderr, "demo: %s\n", ncf_error_text());
            ncf_model_free(S.model), ncf_dataset_free(&data);
            return 1;
        }
        printf("saved the split: %s.train.tsv%s and .test.tsv (--save_split)\n", o->save_split,
               has_validation(&data) ? ", .validation.tsv" : "");
    }
    S.evaluable = data.report.holdout != NCF_HOLDOUT_NONE && o->eval_mode != EVAL_NONE;
    ok = 1;
    if (!S.evaluable && (o->save_best || o->hr_threshold <= 1)) {
        fprintf(stderr, "demo: --save_best and --hr_threshold need a held-out item (--holdout latest or random)\n");
        ok = 0;
    }
    if (ok && S.evaluable &&
        !popularity(o, &data, &S.pop)) { /* before any sharding: the baseline needs the whole data */
        fprintf(stderr, "demo: %s\n", ncf_error_text());
        ok = 0;
    }
    if (ok && o->tune) {
        int r;
        if (!eff.validation) {
            fprintf(stderr,
                    "demo: --tune searches on a validation split, and the data has none (no user has two "
                    "training interactions to hold one out)\n");
            ok = 0;
        } else if ((o->save && !writable_beside(o->save, "--save", 0)) ||
                   (o->log && !writable_beside(o->log, "--log", 4096)) ||
                   (o->tune_all && !load_everything(o, &cfg, S.path, &all)))
            ok = 0;
        else if ((r = tune(o, &data, o->tune_all ? &all : NULL, &S.pop, &S.model)) != 2) {
            ok = r == 1 && finish_tuned(o, &S.model, S.path);
            ncf_model_free(S.model);
            ncf_dataset_free(&data), ncf_dataset_free(&all);
            return ok ? 0 : 1;
        }
    }
    ok = ok && prepare_model(o, &cfg, &data, &S.model, &first);
    if (ok && o->train_epochs > first && ncf_sampler_init(&S.sampler, &data, cfg.num_neg, cfg.seed) != NCF_OK) {
        fprintf(stderr, "demo: %s\n", ncf_error_text());
        ok = 0;
    }
    S.sampler.skip_held_out = o->skip_held_out;
    S.sampler.by_positive = o->by_positive;
    if (ok) print_model(&cfg, S.model);
    ok = ok && (o->seeds < 2 || make_seeds(&S, &cfg));
    ok = ok && start_session(&S, &cfg, first) && epochs(&S, first) && finish(&S);
    if (ok) rc = 0;
    free(S.rows);
    ncf_free(S.last_good), ncf_free(S.chosen), free(S.kept);
    free_seeds(&S);
    ncf_model_free(S.model);
    ncf_dataset_free(&data);
    free_features();
    return rc;
}

#ifdef NCF_MPI
/* Every rank runs the demo; rank 0 prints. A rank that fails stops the job: the others would
   wait for it in the next collective call. */
int main(int argc, char **argv)
{
    options o;
    int r, provided;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &g_rank), MPI_Comm_size(MPI_COMM_WORLD, &g_ranks);
    if (!ON_ROOT && !freopen("/dev/null", "w", stdout)) return 1;
    r = parse_args(argc, argv, &o);
    if (r > 0 && o.output != OUT_TEXT && ON_ROOT) answers_apart();
    if (r > 0 && o.hash_pipeline)
        fprintf(stderr,
                "demo: --hash_pipeline needs one process (the batches are summed "
                "from the ranks)\n"),
            r = 0;
    if (r > 0 && o.tune) fprintf(stderr, "demo: --tune runs in one process (use demo)\n"), r = 0;
    if (r > 0 && o.seeds > 1) fprintf(stderr, "demo: --seeds runs in one process (use demo)\n"), r = 0;
    if (r > 0 && o.load && (serving(&o) || o.export_c || o.export_embeddings || o.file_alone) && !o.data_given)
        r = ON_ROOT ? serve_file(&o) : 0; /* rank 0 serves */
    else r = r <= 0 ? (r < 0 ? 0 : 2) : run(&o);
    if (r != 0 && g_ranks > 1) MPI_Abort(MPI_COMM_WORLD, r);
    MPI_Finalize();
    return r;
}
#else
int main(int argc, char **argv)
{
    options o;
    int r = parse_args(argc, argv, &o);
    if (r <= 0) return r < 0 ? 0 : 2;
    if (o.output != OUT_TEXT) answers_apart();
    if (o.load && (serving(&o) || o.export_c || o.export_embeddings || o.file_alone) && !o.data_given)
        return serve_file(&o);
    return run(&o);
}
#endif
